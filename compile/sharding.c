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

static const cg_sharding_recipe *const RECIPES[] = {&cg_shard_data_parallel, &cg_shard_zero1, &cg_shard_zero2,
                                                    &cg_shard_fsdp, &cg_shard_tensor_parallel,
                                                    &cg_shard_sequence_parallel, &cg_shard_fsdp_tp,
                                                    &cg_shard_fsdp_sp, &cg_shard_hybrid_fsdp,
                                                    &cg_shard_hybrid_fsdp_sp};

static const cg_sharding_recipe *recipe(const char *name) {
  for (size_t i = 0; i < sizeof RECIPES / sizeof *RECIPES; i++)
    if (strcmp(RECIPES[i]->name, name ? name : "data_parallel") == 0) return RECIPES[i];
  return NULL;
}

int cg_sharding_known(const char *name) { return recipe(name) != NULL; }

int cg_sharding_batch_devices(const cg_options *o) {
  const cg_sharding_recipe *r = recipe(o->sharding);
  unsigned axes = r != NULL ? r->batch_axes : 1u << CG_AXIS_DATA;
  int n = cg__data_axis(o);
  if (axes >> CG_AXIS_MODEL & 1u) n *= cg__model_axis(o);
  if (axes >> CG_AXIS_FSDP & 1u) n *= cg__fsdp_axis(o);
  return n;
}

void cg__shard(cg_graph *g, const cg_options *o) {
  const cg_sharding_recipe *r = recipe(o->sharding);
  if (r != NULL) r->partition(g, o);
}

/* A ring all-reduce adds (p - 1) / p of the elements on each device. */
void cg__all_reduce(cg_graph *g, int t, int replicas) {
  cg__collective(g, CG_OP_ALL_REDUCE, t, CG_AXIS_DATA, replicas, MD_PHASE_BACKWARD, NULL);
}

int cg__collective(cg_graph *g, cg_opcode code, int t, cg_axis axis, int group, md_phase phase,
                   int (*moves)(const cg_op *reader)) {
  const cg_tensor in = g->tensors[t];
  double whole = code == CG_OP_ALL_GATHER ? in.bytes * group : in.bytes;  /* the unsplit buffer */
  double out = code == CG_OP_ALL_GATHER ? whole : code == CG_OP_REDUCE_SCATTER ? in.bytes / group : in.bytes;
  /* a reduction adds (p - 1) / p of the buffer's elements on each device; a gather adds none */
  double adds = code == CG_OP_ALL_GATHER ? 0 : whole / 4.0 * (double)(group - 1) / (double)group;
  cg_op proto = {.code = code, .phase = phase, .layer = in.layer, .var = in.var, .flops = adds, .bytes = whole,
                 .axis = axis, .group = group};
  int c = cg__op_new(g, &proto);
  int res = cg__tensor_new(g, code == CG_OP_ALL_GATHER && in.kind == CG_TENSOR_WEIGHT ? CG_TENSOR_TEMP : in.kind, out,
                           in.layer, in.var);
  g->tensors[res].shard = CG_SHARD_REPLICATED;
  cg_tensor *from = &g->tensors[t], *to = &g->tensors[res];
  if (moves == NULL) {  /* every reader moves: the consumer list moves at once */
    for (int k = 0; k < from->nconsumers; k++) {
      cg_op *reader = &g->ops[from->consumers[k]];
      for (int i = 0; i < reader->nin; i++)
        if (reader->in[i] == t) reader->in[i] = res;
    }
    to->consumers = from->consumers;
    to->nconsumers = from->nconsumers;
    to->cap = from->cap;
    from->consumers = NULL;
    from->nconsumers = from->cap = 0;
  } else {  /* the readers that move leave t's list, in order, and read the result */
    int kept = 0;
    for (int k = 0; k < from->nconsumers; k++) {
      int r = g->tensors[t].consumers[k];
      cg_op *reader = &g->ops[r];
      if (!moves(reader)) {
        g->tensors[t].consumers[kept++] = r;
        continue;
      }
      int j = 0;
      for (int i = 0; i < reader->nin; i++)
        if (reader->in[i] != t) reader->in[j++] = reader->in[i];
      reader->nin = j;
      cg__op_read(g, r, res);
    }
    g->tensors[t].nconsumers = kept;
  }
  cg__op_read(g, c, t);
  cg__op_write(g, c, res);
  return res;
}
