/*
** batch_stats.c: a batch norm's two passes over its inputs on a GPU (cg__batch_stats).
**
** A training batch norm needs each channel's statistics over the whole batch before it can
** normalise any element, so on a GPU it reads its inputs twice: once to reduce them, once to
** apply. XLA's GPU backend expands the HLO batch-norm ops (batchnorm_expander.cc; the cuDNN
** batch norm calls are off by default, xla_gpu_use_cudnn_batchnorm) into a reduction fusion
** (sum x and sum x^2 in one multi-output pass) and a loop fusion that reads x again to write y;
** the gradient reduces sum dy and sum dy (x - mean) reading dy and x, then reads both again for
** dx. Without XLA, TensorFlow's FusedBatchNormV3 and its gradient are cuDNN's batch norm kernels,
** the same two passes (a statistics kernel, then the apply). The model's op (models/layers/
** batch_normalization.c) counts its inputs read once: this pass adds the reduction's read of
** every activation-sized tensor the op reads, its input and in the backward its output's
** gradient (not its gamma, beta or moving statistics, nor a synchronized norm's saved
** statistics: a channel's floats each). On a TPU XLA's fusions make the same two passes; the TPU rows' and
** examples' costs are left as they were by this change (its scope is the GPU rows), so there
** the op still reads its inputs once (docs/machine.md, "The compile layer").
*/
#include "compile/compileInt.h"

void cg__batch_stats(cg_graph *g) {
  for (size_t i = 0; i < g->traced; i++) {
    cg_op *op = &g->ops[i];
    if (op->reduce != MD_REDUCE_BATCH) continue;
    for (int k = 0; k < op->nin; k++) {
      const cg_tensor *t = &g->tensors[op->in[k]];
      if (t->kind == CG_TENSOR_INPUT || t->kind == CG_TENSOR_ACTIVATION || t->kind == CG_TENSOR_GRADIENT)
        op->bytes += t->bytes;
    }
  }
}
