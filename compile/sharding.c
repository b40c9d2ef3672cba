/*
** sharding.c: sharding propagation and SPMD partitioning (cg__shard), what XLA's sharding
** propagation and SPMD partitioner do: a recipe (shard_*.c) lays the traced step's tensors out
** over the devices and inserts the collectives the layout needs. The trace is one replica's
** program already (its shapes are its slice of the batch), so sizes do not change here: a recipe
** adds layout and collectives. Adding a recipe: a shard_NAME.c defining a cg_sharding_recipe,
** its line in RECIPES, and its test.
*/
#include <string.h>

#include "compile/compileInt.h"

static const cg_sharding_recipe *const RECIPES[] = {&cg_shard_data_parallel};

static const cg_sharding_recipe *recipe(const char *name) {
  for (size_t i = 0; i < sizeof RECIPES / sizeof *RECIPES; i++)
    if (strcmp(RECIPES[i]->name, name ? name : "data_parallel") == 0) return RECIPES[i];
  return NULL;
}

int cg_sharding_known(const char *name) { return recipe(name) != NULL; }

void cg__shard(cg_graph *g, const cg_options *o) {
  const cg_sharding_recipe *r = recipe(o->sharding);
  if (r != NULL) r->partition(g, o);
}

/* A ring all-reduce adds (p - 1) / p of the elements on each device. */
void cg__all_reduce(cg_graph *g, int t, int replicas) {
  const cg_tensor partial = g->tensors[t];
  cg_op proto = {.code = CG_OP_ALL_REDUCE, .phase = MD_PHASE_BACKWARD, .layer = partial.layer, .var = partial.var,
                 .flops = partial.bytes / 4.0 * (double)(replicas - 1) / (double)replicas, .bytes = partial.bytes};
  int ar = cg__op_new(g, &proto);
  int whole = cg__tensor_new(g, partial.kind, partial.bytes, partial.layer, partial.var);
  g->tensors[whole].shard = CG_SHARD_REPLICATED;
  /* every reader of the partial tensor reads the whole one instead: the consumer list moves */
  cg_tensor *from = &g->tensors[t], *to = &g->tensors[whole];
  for (int k = 0; k < from->nconsumers; k++) {
    cg_op *reader = &g->ops[from->consumers[k]];
    for (int i = 0; i < reader->nin; i++)
      if (reader->in[i] == t) reader->in[i] = whole;
  }
  to->consumers = from->consumers;
  to->nconsumers = from->nconsumers;
  to->cap = from->cap;
  from->consumers = NULL;
  from->nconsumers = from->cap = 0;
  cg__op_read(g, ar, t);
  cg__op_write(g, ar, whole);
}
