/* fuse_operand.c: a product fused with the elementwise ops that make its operand, on a target
** that does it (cg_options.operand_fusion: XLA's TPU backend fuses a convolution's or dot's
** producers, a batch norm's apply and its ReLU, into the product's fusion, which applies them as
** it loads each operand tile; GPU products are cuBLAS or cuDNN calls reading their operands from
** HBM). One product a kernel: a fusion that holds one already takes no second. */
#include "compile/compileInt.h"

static int operand_fuses(const cg_graph *g, const cg_op *root, const cg_op *producer, const cg_op *consumer) {
  (void)producer;
  return g->operand_fusion && root->code == CG_OP_ELEMENTWISE && consumer->code == CG_OP_MATMUL &&
         !cg__fusion_has_product(g, (int)(root - g->ops));
}

const cg_fusion_rule cg_fuse_operand = {"operand", operand_fuses};
