/*
** shard_mesh.c: what the sharding recipes over a device mesh share (cg__): the data-parallel
** layout, a variable's tensors found and divided over an axis, the mesh's axes. A mesh here is
** Keras's DeviceMesh of two axes as keras.distribution names them in ModelParallel's examples:
** `data` (the batch, and with FSDP the weights' shards) and `model` (tensor parallelism), of
** lengths replicas / model_axis and model_axis (compile.h's cg_options); hybrid_fsdp_sp's has a
** third between them, `fsdp` (ZeRO-3 within a slice, the data axis then across slices), of
** fsdp_axis devices, the data axis replicas / (fsdp_axis x model_axis).
*/
#include "compile/compileInt.h"

void cg__batch_layout(cg_graph *g) {
  for (size_t i = 0; i < g->ntensors; i++)
    g->tensors[i].shard = g->tensors[i].kind == CG_TENSOR_INPUT ? CG_SHARD_BATCH : CG_SHARD_REPLICATED;
  for (size_t i = 0; i < g->nops; i++) {
    const cg_op *op = &g->ops[i];
    int split = 0;
    for (int k = 0; k < op->nin; k++) split |= g->tensors[op->in[k]].shard != CG_SHARD_REPLICATED;
    for (int k = 0; k < op->nout && split; k++) {
      cg_tensor *t = &g->tensors[op->out[k]];
      t->shard = t->kind == CG_TENSOR_WEIGHT_GRAD ? CG_SHARD_PARTIAL : CG_SHARD_BATCH;
    }
  }
}

static int find(const cg_graph *g, cg_tensor_kind kind, int v) {
  for (size_t i = 0; i < g->ntensors; i++)
    if (g->tensors[i].kind == kind && g->tensors[i].var == v && (kind != CG_TENSOR_WEIGHT_GRAD || g->tensors[i].producer >= 0))
      return (int)i;
  return -1;
}

int cg__weight_of(const cg_graph *g, int v) { return find(g, CG_TENSOR_WEIGHT, v); }
int cg__grad_of(const cg_graph *g, int v) { return find(g, CG_TENSOR_WEIGHT_GRAD, v); }

int cg__model_axis(const cg_options *o) { return o->model_axis > 1 ? o->model_axis : 1; }
int cg__fsdp_axis(const cg_options *o) { return o->fsdp_axis > 1 ? o->fsdp_axis : 1; }
int cg__data_axis(const cg_options *o) {
  int d = o->replicas / (cg__model_axis(o) * cg__fsdp_axis(o));
  return d > 1 ? d : 1;
}

/* The slots have their variable's shape and follow its layout: their bytes are the weight
** tensor's as it stands, times the optimizer's slots. The update then runs on the shard alone. */
void cg__shard_slots(cg_graph *g, int v, int by) {
  int w = cg__weight_of(g, v);
  if (w < 0 || by < 2 || !g->trainable[v]) return;
  g->persistent -= g->slots * g->tensors[w].bytes * (1.0 - 1.0 / by);
  for (size_t i = 0; i < g->traced; i++) {
    cg_op *op = &g->ops[i];
    if (op->phase != MD_PHASE_OPTIMIZER || op->var != v) continue;
    op->flops /= by;
    op->bytes /= by;
  }
}

void cg__shard_weight(cg_graph *g, int v, int by) {
  int w = cg__weight_of(g, v);
  if (w < 0 || by < 2) return;
  g->persistent -= g->tensors[w].bytes * (1.0 - 1.0 / by);
  g->tensors[w].bytes /= by;
}
