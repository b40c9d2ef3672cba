/*
** sharding.c: sharding propagation and SPMD partitioning (cg__shard), what XLA's sharding
** propagation and SPMD partitioner do: a recipe (shard_*.c) lays the traced step's tensors out
** over the devices and inserts the collectives the layout needs. The trace is one replica's
** program already (its shapes are its slice of the batch), so sizes do not change here: a recipe
** adds layout and collectives. Adding a recipe: a shard_NAME.c defining a cg_sharding_recipe,
** its line in RECIPES, and its test.
*/
#include <string.h>

#include "base/base.h"
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

/* Replaces what op reads: from -> to, in its inputs and in the two tensors' consumer lists. */
static void reroute(cg_graph *g, int op, int from, int to) {
  cg_op *o = &g->ops[op];
  for (int i = 0; i < o->nin; i++)
    if (o->in[i] == from) o->in[i] = to;
  cg_tensor *t = &g->tensors[from];
  int k = 0;
  for (int i = 0; i < t->nconsumers; i++)
    if (t->consumers[i] != op) t->consumers[k++] = t->consumers[i];
  t->nconsumers = k;
  cg_tensor *u = &g->tensors[to];
  if (u->nconsumers == u->cap) {
    u->cap = u->cap ? 2 * u->cap : 4;
    u->consumers = base_xrealloc(u->consumers, (size_t)u->cap * sizeof *u->consumers);
  }
  u->consumers[u->nconsumers++] = op;
}

/* A ring all-reduce adds (p - 1) / p of the elements on each device. */
void cg__all_reduce(cg_graph *g, int t, int replicas) {
  const cg_tensor partial = g->tensors[t];
  cg_op proto = {.code = CG_OP_ALL_REDUCE, .phase = MD_PHASE_BACKWARD, .layer = partial.layer, .var = partial.var,
                 .flops = partial.bytes / 4.0 * (double)(replicas - 1) / (double)replicas, .bytes = partial.bytes};
  int ar = cg__op_new(g, &proto);
  int whole = cg__tensor_new(g, partial.kind, partial.bytes, partial.layer, partial.var);
  g->tensors[whole].shard = CG_SHARD_REPLICATED;
  int readers = g->tensors[t].nconsumers;
  int *was = base_xcalloc((size_t)readers + 1, sizeof *was);
  for (int k = 0; k < readers; k++) was[k] = g->tensors[t].consumers[k];
  for (int k = 0; k < readers; k++) reroute(g, was[k], t, whole);
  free(was);
  cg__op_read(g, ar, t);
  cg__op_write(g, ar, whole);
}
