/*
** fusion.c: XLA's fusion over the op graph (cg__fuse). A fusion is one kernel: it reads its
** inputs and writes its outputs once, so a tensor passed from one of its ops to the next is
** neither written to device memory nor read back (XLA's instruction_fusion.cc and its GPU and TPU
** priority fusion merge producer-consumer pairs the same way).
**
** Walking the ops in trace order, a compute op joins the fusion of the op producing one of its
** inputs when:
**   1. that tensor has no other reader (else it must be written for them: XLA would duplicate
**      a cheap producer into each reader; podsim does not);
**   2. both are in the same layer's pass, or both in the forward (a layer's output fuses into the
**      next layer's first op: a bias or an activation written as a layer of its own); a
**      backward pass's fusions stay inside its layer, so the gradient packs' marks stay where
**      the layers end (program.c);
**   3. every other input of the consumer exists before the fusion's root runs (it is hoisted
**      to the root's place);
**   4. a rule of RULES says so, the first that does naming the fusion's kind.
** The kernel's FLOPs are its ops'; its bytes are theirs less twice each tensor fused away.
** Adding a rule: a fuse_NAME.c defining a cg_fusion_rule, its line in RULES, and its test.
*/
#include "compile/compileInt.h"

static const cg_fusion_rule *const RULES[] = {&cg_fuse_output, &cg_fuse_loop};

static int root_of(const cg_graph *g, int op) { return g->ops[op].fusion >= 0 ? g->ops[op].fusion : op; }

static int same_pass(const cg_op *p, const cg_op *c) {
  if (p->phase == MD_PHASE_FORWARD && c->phase == MD_PHASE_FORWARD) return 1;
  return p->phase == c->phase && p->layer == c->layer;
}

/* Condition 3: every input of c but `via` exists before `root`. */
static int hoistable(const cg_graph *g, const cg_op *c, int via, int root) {
  for (int k = 0; k < c->nin; k++) {
    if (c->in[k] == via) continue;
    int p = g->tensors[c->in[k]].producer;
    if (p >= 0 && root_of(g, p) >= root) return 0;
  }
  return 1;
}

void cg__fuse(cg_graph *g) {
  for (size_t i = 0; i < g->traced; i++) {
    cg_op *c = &g->ops[i];
    for (int k = 0; k < c->nin && c->fusion < 0; k++) {
      const cg_tensor *t = &g->tensors[c->in[k]];
      if (t->producer < 0 || t->nconsumers != 1 || !cg__is_compute(&g->ops[t->producer])) continue;
      const cg_op *p = &g->ops[t->producer];
      int root = root_of(g, t->producer);
      if (!same_pass(p, c) || !hoistable(g, c, c->in[k], root)) continue;
      for (size_t r = 0; r < sizeof RULES / sizeof *RULES; r++) {
        if (!RULES[r]->fuses(g, &g->ops[root], p, c)) continue;
        g->ops[root].fusion = root;
        c->fusion = root;
        c->fused_by = RULES[r]->name;
        /* the producer's write of t and the consumer's read of it, each within that op's bytes
        ** (a size the model did not state saves nothing) */
        c->saved_bytes = t->bytes <= c->bytes && t->bytes <= p->bytes ? 2.0 * t->bytes : 0.0;
        break;
      }
    }
  }
}
