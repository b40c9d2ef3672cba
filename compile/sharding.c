/*
** sharding.c: data-parallel sharding propagation and collective insertion (cg__shard), what
** XLA's sharding propagation and SPMD partitioner do for a batch split over replicas.
**
** The model inputs are split along the batch over the replicas, the variables replicated. Walking
** the ops in trace order, an op's outputs are split along the batch when any input is; a
** variable's gradient computed from batch-split tensors is a partial sum on each replica
** (its product contracts over the batch), so an all-reduce is inserted that reads the partial
** gradient and writes the whole one, which the optimizer's update of that variable then reads
** in place of the partial one. One replica: nothing is partial, nothing is inserted.
** The trace is one replica's program already (its shapes are its slice of the batch), so the
** sizes do not change: the pass adds layout and the collectives.
*/
#include "base/base.h"
#include "compile/compileInt.h"

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

void cg__shard(cg_graph *g, int replicas) {
  if (replicas < 2) return;
  for (size_t i = 0; i < g->ntensors; i++)
    g->tensors[i].shard = g->tensors[i].kind == CG_TENSOR_INPUT ? CG_SHARD_BATCH : CG_SHARD_REPLICATED;
  size_t traced = g->nops;
  for (size_t i = 0; i < traced; i++) {
    cg_op *op = &g->ops[i];
    int split = 0;
    for (int k = 0; k < op->nin; k++) split |= g->tensors[op->in[k]].shard != CG_SHARD_REPLICATED;
    for (int k = 0; k < op->nout && split; k++) {
      cg_tensor *t = &g->tensors[op->out[k]];
      t->shard = t->kind == CG_TENSOR_WEIGHT_GRAD ? CG_SHARD_PARTIAL : CG_SHARD_BATCH;
    }
  }
  size_t ntensors = g->ntensors;
  for (size_t i = 0; i < ntensors; i++) {
    if (g->tensors[i].kind != CG_TENSOR_WEIGHT_GRAD || g->tensors[i].shard != CG_SHARD_PARTIAL) continue;
    const cg_tensor partial = g->tensors[i];
    double elements = partial.bytes / 4.0;
    cg_op proto = {.code = CG_OP_ALL_REDUCE, .phase = MD_PHASE_BACKWARD, .layer = partial.layer, .var = partial.var,
                   .flops = elements * (double)(replicas - 1) / (double)replicas, .bytes = partial.bytes};
    int ar = cg__op_new(g, &proto);
    int whole = cg__tensor_new(g, CG_TENSOR_WEIGHT_GRAD, partial.bytes, partial.layer, partial.var);
    g->tensors[whole].shard = CG_SHARD_REPLICATED;
    int readers = g->tensors[i].nconsumers;
    int *was = base_xcalloc((size_t)readers + 1, sizeof *was);
    for (int k = 0; k < readers; k++) was[k] = g->tensors[i].consumers[k];
    for (int k = 0; k < readers; k++) reroute(g, was[k], (int)i, whole);
    free(was);
    cg__op_read(g, ar, (int)i);
    cg__op_write(g, ar, whole);
  }
}
