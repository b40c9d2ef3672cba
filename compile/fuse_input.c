/* fuse_input.c: XLA's reduction fusion (kInput: a reduction is the fusion's root on GPUs, its
** elementwise producers fused into its input): a layer norm, an RMSNorm or a softmax joins the
** loop of elementwise ops that produces its input (a residual add, a dropout), reading each row
** from the loop's registers, and computes its statistics and their use in the same pass over the
** row. Its own elementwise consumers join it through the loop rule. Batch statistics are not a
** row's: they never join (fusion.c). */
#include "compile/compileInt.h"

static int input_fuses(const cg_graph *g, const cg_op *root, const cg_op *producer, const cg_op *consumer) {
  (void)g;
  (void)producer;
  return root->code == CG_OP_ELEMENTWISE && consumer->code == CG_OP_ELEMENTWISE && consumer->reduce == MD_REDUCE_ROWS;
}

const cg_fusion_rule cg_fuse_input = {"input", input_fuses};
