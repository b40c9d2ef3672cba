/* fuse_loop.c: XLA's loop fusion (kLoop): an elementwise op joins a fusion of elementwise ops
** (a bias add, an activation, a dropout mask, a residual add, one after another; after a norm,
** the norm's apply and its consumers are one loop). A reduction joins through fuse_input.c. */
#include "compile/compileInt.h"

static int loop_fuses(const cg_graph *g, const cg_op *root, const cg_op *producer, const cg_op *consumer) {
  (void)g;
  (void)producer;
  return root->code == CG_OP_ELEMENTWISE && consumer->code == CG_OP_ELEMENTWISE && consumer->reduce == MD_REDUCE_NONE;
}

const cg_fusion_rule cg_fuse_loop = {"loop", loop_fuses};
