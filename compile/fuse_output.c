/* fuse_output.c: XLA's output fusion (kOutput, the convolution and dot epilogue on TPUs and
** cuBLAS's epilogues on GPUs): elementwise ops after a matrix product (its bias, activation,
** scaling) run on the product's output tiles before they are written. */
#include "compile/compileInt.h"

static int output_fuses(const cg_graph *g, const cg_op *root, const cg_op *producer, const cg_op *consumer) {
  (void)g;
  (void)producer;
  return root->code == CG_OP_MATMUL && consumer->code == CG_OP_ELEMENTWISE;
}

const cg_fusion_rule cg_fuse_output = {"output", output_fuses};
