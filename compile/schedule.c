/*
** schedule.c: the latency-hiding order (cg__schedule), as XLA's latency-hiding scheduler places
** asynchronous collectives: compute ops keep the trace's order (the dataflow order the model
** issued them in), and each collective is issued where its operand is ready:
**   - a reduction (all-reduce, reduce-scatter) of a gradient or an activation right after the op
**     that finished it, so it runs while the rest of the pass computes;
**   - one issued with the update (ZeRO-1's reduce-scatter of the whole gradient buffer, phase
**     optimizer, of an operand the backward wrote) right before the first update;
**   - an all-gather of a weight shard (FSDP) one layer ahead of its first reader: before the
**     chain of ops (a layer's pass) that precedes its reader's, as XLA prefetches the next
**     layer's parameters while this one computes;
**   - one whose operand another collective wrote right after that one.
** Collectives at one place keep the order the sharding pass made them in. The order is what
** liveness.c frees buffers by, what lowering (program.c) issues and waits on collectives by, and
** what dumps number ops by.
*/
#include "base/base.h"
#include "compile/compileInt.h"

/* The first traced op of the chain (a run of ops of one phase and layer) holding op i. */
static int chain_start(const cg_graph *g, int i) {
  while (i > 0 && g->ops[i - 1].phase == g->ops[i].phase && g->ops[i - 1].layer == g->ops[i].layer) i--;
  return i;
}

/* The traced op a weight gather is issued before: the start of the chain before its first
** reader's. */
static int prefetch_at(const cg_graph *g, int gathered) {
  const cg_tensor *t = &g->tensors[gathered];
  int first = -1;
  for (int k = 0; k < t->nconsumers; k++)
    if (t->consumers[k] < (int)g->traced && (first < 0 || t->consumers[k] < first)) first = t->consumers[k];
  if (first < 0) return -1;
  int s = chain_start(g, first);
  return s > 0 ? chain_start(g, s - 1) : 0;
}

void cg__schedule(cg_graph *g) {
  size_t at = 0, n = g->nops;
  int *order = base_xcalloc(n + 1, sizeof *order);
  /* per collective: the traced op it goes after (after[j] >= 0) or before (before[j] >= 0) */
  int *after = base_xcalloc(n + 1, sizeof *after), *before = base_xcalloc(n + 1, sizeof *before);
  int first_update = (int)g->traced;
  for (size_t i = 0; i < g->traced; i++)
    if (g->ops[i].phase == MD_PHASE_OPTIMIZER) {
      first_update = (int)i;
      break;
    }
  for (size_t i = 0; i < n; i++) after[i] = before[i] = -1;
  for (size_t j = g->traced; j < n; j++) {
    const cg_op *c = &g->ops[j];
    int src = c->nin > 0 ? c->in[0] : -1, p = src >= 0 ? g->tensors[src].producer : -1;
    if (p >= (int)g->traced) {  /* made in creation order: p's place is known */
      after[j] = after[p];
      before[j] = before[p];
    } else if (c->phase == MD_PHASE_OPTIMIZER && p >= 0 && g->ops[p].phase != MD_PHASE_OPTIMIZER) {
      before[j] = first_update;
    } else if (p >= 0) {
      after[j] = p;
    } else if (c->code == CG_OP_ALL_GATHER && c->nout > 0) {
      before[j] = prefetch_at(g, c->out[0]);
    }
  }
  for (size_t i = 0; i < g->traced; i++) {
    for (size_t j = g->traced; j < n; j++)
      if (before[j] == (int)i) order[at++] = (int)j;
    order[at++] = (int)i;
    for (size_t j = g->traced; j < n; j++)
      if (after[j] == (int)i) order[at++] = (int)j;
  }
  for (size_t j = g->traced; j < n; j++)
    if (after[j] < 0 && (before[j] < 0 || before[j] >= (int)g->traced)) order[at++] = (int)j;
  for (size_t k = 0; k < at; k++) g->ops[order[k]].order = (int)k;
  free(g->schedule);
  g->schedule = order;
  free(after);
  free(before);
}
