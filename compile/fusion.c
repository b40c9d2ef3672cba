/*
** fusion.c: XLA's fusion over the op graph (cg__fuse). A fusion is one kernel: it reads its
** inputs and writes its outputs once, so a tensor passed from one of its ops to the next is not
** read back from device memory, and not written either when nothing outside the fusion reads it
** (XLA's instruction_fusion.cc, its GPU priority fusion and multi_output_fusion.cc merge
** producer-consumer pairs the same way).
**
** Walking the ops in trace order, a compute op joins the fusion of the op producing one of its
** inputs when:
**   1. both are in the same layer's pass, or both in the forward (a layer's output fuses into the
**      next layer's first op: a bias or an activation written as a layer of its own), or both in
**      the backward with the consumer's layer holding no trainable variable (a ReLU's or a
**      dropout's gradient into the product or norm gradient before it); otherwise a backward
**      pass's fusions stay inside its layer, so each gradient pack's mark stays where the layer
**      that completes its gradients ends (program.c);
**   2. every other input of the consumer exists before the fusion's root runs (it is hoisted
**      to the root's place);
**   3. a rule of RULES says so, the first that does naming the fusion's kind.
** The tensor may have other readers (an output the backward reads, a residual): the fusion then
** writes it as one of its outputs for them (multi-output fusion, XLA's producer-consumer case of
** multi_output_fusion.cc) and only the consumer's read of it is saved; when it has no other
** reader its write is saved too. So a tensor a fusion passes inside is written at most once and
** read from memory only by readers outside it. XLA would rather duplicate a cheap producer into
** each reader than write it; podsim keeps the one write, the same bytes for a single reader.
** The kernel's FLOPs are its ops'; its bytes are theirs less what each join saved. A rule sees
** the fusion's root (what kind of kernel it is) and the pair; the reductions (a norm's or a
** softmax's statistics, models/cost.h's md_reduce) decide where a fusion may grow: rows join like
** elementwise ops (a row is held on chip: XLA's kInput reduction fusion), the batch's statistics
** never join their producer (each element's apply needs the whole batch's statistics, so it reads
** its input again in a kernel of its own, which its elementwise consumers join).
** Adding a rule: a fuse_NAME.c defining a cg_fusion_rule, its line in RULES, and its test.
*/
#include "compile/compileInt.h"

static const cg_fusion_rule *const RULES[] = {&cg_fuse_output, &cg_fuse_input, &cg_fuse_loop, &cg_fuse_operand};

static int root_of(const cg_graph *g, int op) { return g->ops[op].fusion >= 0 ? g->ops[op].fusion : op; }

/* Whether layer l has a trainable variable (its backward completes gradients). */
static int has_gradients(const cg_graph *g, int l) {
  int end = l + 1 < g->nlayers ? g->first_var[l + 1] : g->nvars;
  for (int v = g->first_var[l]; v < end; v++)
    if (g->trainable[v]) return 1;
  return 0;
}

/* Condition 1. */
int cg__same_pass(const cg_graph *g, const cg_op *p, const cg_op *c) {
  if (p->phase == MD_PHASE_FORWARD && c->phase == MD_PHASE_FORWARD) return 1;
  if (p->phase == MD_PHASE_BACKWARD && c->phase == MD_PHASE_BACKWARD && c->layer >= 0 && !has_gradients(g, c->layer))
    return 1;
  return p->phase == c->phase && p->layer == c->layer;
}

/* Condition 2: every input of c but `via` exists before `root`. */
static int hoistable(const cg_graph *g, const cg_op *c, int via, int root) {
  for (int k = 0; k < c->nin; k++) {
    if (c->in[k] == via) continue;
    int p = g->tensors[c->in[k]].producer;
    if (p >= 0 && root_of(g, p) >= root) return 0;
  }
  return 1;
}

/* Whether a reader of t is outside the fusion rooted at `root`, once `joining` has joined it. */
static int read_outside(const cg_graph *g, const cg_tensor *t, int root, int joining) {
  for (int k = 0; k < t->nconsumers; k++)
    if (t->consumers[k] != joining && root_of(g, t->consumers[k]) != root) return 1;
  return 0;
}

void cg__fuse(cg_graph *g) {
  for (size_t i = 0; i < g->traced; i++) {
    cg_op *c = &g->ops[i];
    for (int k = 0; k < c->nin && c->fusion < 0; k++) {
      const cg_tensor *t = &g->tensors[c->in[k]];
      if (t->producer < 0 || !cg__is_compute(&g->ops[t->producer])) continue;
      cg_op *p = &g->ops[t->producer];
      int root = root_of(g, t->producer);
      if (!cg__same_pass(g, p, c) || !hoistable(g, c, c->in[k], root)) continue;
      for (size_t r = 0; r < sizeof RULES / sizeof *RULES; r++) {
        if (!RULES[r]->fuses(g, &g->ops[root], p, c)) continue;
        g->ops[root].fusion = root;
        c->fusion = root;
        c->fused_by = RULES[r]->name;
        c->multi_output = read_outside(g, t, root, (int)i);
        /* the consumer's read of t, and the producer's write of t unless a reader outside needs
        ** it, each taken from what is left of that op's bytes (a size the model did not state,
        ** larger than them, saves nothing) */
        if (t->bytes > c->bytes - c->saved_bytes || t->bytes > p->bytes - p->saved_bytes) break;
        c->saved_bytes += t->bytes;
        if (!c->multi_output) p->saved_bytes += t->bytes;
        break;
      }
    }
  }
}

int cg__fusion_has_product(const cg_graph *g, int root) {
  for (size_t i = (size_t)root; i < g->traced; i++)
    if ((i == (size_t)root || g->ops[i].fusion == root) && g->ops[i].code == CG_OP_MATMUL) return 1;
  return 0;
}
