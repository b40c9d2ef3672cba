/*
** schedule.c: the latency-hiding order (cg__schedule), as XLA's latency-hiding scheduler places
** asynchronous collectives: compute ops keep the trace's order (the dataflow order the model
** issued them in), and each all-reduce starts right after the op that finishes its gradient, so
** it runs while the rest of the backward computes; its reader (the optimizer's update) comes
** after every compute op of the pass. The order is what liveness.c frees buffers by, and what
** dumps number ops by; sim/ runs the collectives themselves (scenarios/programs/overlap.c's packs
** group them as XLA's all-reduce combiner does).
*/
#include "base/base.h"
#include "compile/compileInt.h"

void cg__schedule(cg_graph *g) {
  size_t at = 0;
  int *order = base_xcalloc(g->nops + 1, sizeof *order);
  /* a collective's place: after the producer of what it reads */
  int *after = base_xcalloc(g->nops + 1, sizeof *after);
  for (size_t i = 0; i < g->nops; i++) after[i] = -1;
  for (size_t i = g->traced; i < g->nops; i++) {
    const cg_op *c = &g->ops[i];
    after[i] = c->nin > 0 ? g->tensors[c->in[0]].producer : -1;
  }
  for (size_t i = 0; i < g->traced; i++) {
    order[at++] = (int)i;
    for (size_t j = g->traced; j < g->nops; j++)
      if (after[j] == (int)i) order[at++] = (int)j;
  }
  for (size_t j = g->traced; j < g->nops; j++)
    if (after[j] < 0) order[at++] = (int)j;
  for (size_t k = 0; k < at; k++) g->ops[order[k]].order = (int)k;
  free(g->schedule);
  g->schedule = order;
  free(after);
}
