/*
** shard_data_parallel.c: data parallelism (MirroredStrategy, TPUStrategy, MultiWorkerMirrored's
** replicas). The model inputs are split along the batch over the replicas, the variables
** replicated. Walking the ops in trace order, an op's outputs are split along the batch when any
** input is; a variable's gradient computed from batch-split tensors is a partial sum on each
** replica (its product contracts over the batch), so it is all-reduced, and its update reads the
** whole one. One replica: nothing is partial, nothing is inserted.
*/
#include "compile/compileInt.h"

static void data_parallel(cg_graph *g, const cg_options *o) {
  if (o->replicas < 2) return;
  cg__batch_layout(g);
  size_t ntensors = g->ntensors;  /* the all-reduces add tensors: visit the traced ones */
  for (size_t i = 0; i < ntensors; i++)
    if (g->tensors[i].kind == CG_TENSOR_WEIGHT_GRAD && g->tensors[i].shard == CG_SHARD_PARTIAL)
      cg__all_reduce(g, (int)i, o->replicas);
}

const cg_sharding_recipe cg_shard_data_parallel = {"data_parallel", data_parallel, 1u << CG_AXIS_DATA};
