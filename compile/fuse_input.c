/* fuse_input.c: XLA's reduction fusion (kInput: a reduction is the fusion's root on GPUs, its
** elementwise producers fused into its input): a layer norm, an RMSNorm or a softmax joins the
** loop of elementwise ops that produces its input (a residual add, a dropout), reading each row
** from the loop's registers, and computes its statistics and their use in the same pass over the
** row. Its own elementwise consumers join it through the loop rule. Batch statistics are not a
** row's: they never join (fusion.c).
**
** Not on XLA's GPU backend (cg_options.gpu_backend): there a row's statistics are a reduction
** kernel and their use another, since a reduction to contiguous dimensions is not fusible as a
** producer into the loop that applies it (openxla/xla xla/service/gpu/gpu_fusible.cc,
** IsLoopFusibleAsProducer: a kReduce only when !IsReductionFromOrToContiguousDimensions). The
** statistics kernel takes the producers in (reading their inputs) and writes their output for
** the apply (multi-output), which reads it again: the same bytes as the producer's loop writing
** its output and the norm's op reading it, so on a GPU the norm joins no producer. (Triton's
** softmax and normalisation fusions of newer XLA on Ampere and later are one kernel: not
** modelled, docs/machine.md.) */
#include "compile/compileInt.h"

static int input_fuses(const cg_graph *g, const cg_op *root, const cg_op *producer, const cg_op *consumer) {
  (void)producer;
  return !g->gpu_backend && root->code == CG_OP_ELEMENTWISE && consumer->code == CG_OP_ELEMENTWISE &&
         consumer->reduce == MD_REDUCE_ROWS;
}

const cg_fusion_rule cg_fuse_input = {"input", input_fuses};
