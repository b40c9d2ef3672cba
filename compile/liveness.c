/*
** liveness.c: buffer liveness over the schedule (cg__liveness), as XLA's buffer assignment
** frees a buffer after its last use: the step's peak device memory is the persistent bytes
** (variables and optimizer slots) plus the largest sum, over the schedule's positions, of the
** tensors live there. A tensor is live from its first writer to its last reader (a model input
** from the step's start); one read only inside its fusion never reaches memory. `held` is the
** same sum if nothing were freed before the step's end: what keeping every activation costs.
*/
#include "base/base.h"
#include "compile/compileInt.h"

/* Whether every op touching tensor t is in one fusion: then it is never materialised. */
static int fused_away(const cg_graph *g, const cg_tensor *t) {
  if (t->producer < 0 || g->ops[t->producer].fusion < 0) return 0;
  for (int k = 0; k < t->nconsumers; k++)
    if (g->ops[t->consumers[k]].fusion != g->ops[t->producer].fusion) return 0;
  return t->nconsumers > 0;
}

void cg__liveness(cg_graph *g) {
  size_t n = g->nops;
  double *delta = base_xcalloc(n + 2, sizeof *delta);
  int *first = base_xcalloc(g->ntensors + 1, sizeof *first);
  for (size_t t = 0; t < g->ntensors; t++) first[t] = -1;
  for (size_t i = 0; i < n; i++) {
    const cg_op *op = &g->ops[g->schedule[i]];
    for (int k = 0; k < op->nout; k++)
      if (first[op->out[k]] < 0) first[op->out[k]] = (int)i;
  }
  double all = 0;
  for (size_t t = 0; t < g->ntensors; t++) {
    const cg_tensor *x = &g->tensors[t];
    if (x->kind == CG_TENSOR_WEIGHT || fused_away(g, x)) continue;
    int from = x->kind == CG_TENSOR_INPUT ? 0 : first[t];
    if (from < 0) continue;  /* never written in this step */
    int to = from;
    for (int k = 0; k < x->nconsumers; k++)
      if (g->ops[x->consumers[k]].order > to) to = g->ops[x->consumers[k]].order;
    delta[from] += x->bytes;
    delta[to + 1] -= x->bytes;
    all += x->bytes;
  }
  double live = 0, peak = 0;
  for (size_t i = 0; i <= n; i++) {
    live += delta[i];
    if (live > peak) peak = live;
  }
  g->peak = g->persistent + peak;
  g->held = g->persistent + all;
  free(delta);
  free(first);
}
