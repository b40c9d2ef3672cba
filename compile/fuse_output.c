/* fuse_output.c: XLA's output fusion (kOutput, the convolution and dot epilogue on TPUs and
** cuBLAS's epilogues on GPUs): elementwise ops after a matrix product (its bias, activation,
** scaling, a row's softmax or layer norm, which XLA tiles the product's output by whole rows
** for) run on the product's output tiles before they are written. Batch statistics do not: every
** tile must be done before any element is normalised. */
#include "compile/compileInt.h"

static int output_fuses(const cg_graph *g, const cg_op *root, const cg_op *producer, const cg_op *consumer) {
  (void)g;
  (void)producer;
  return root->code == CG_OP_MATMUL && consumer->code == CG_OP_ELEMENTWISE && consumer->reduce != MD_REDUCE_BATCH;
}

const cg_fusion_rule cg_fuse_output = {"output", output_fuses};
