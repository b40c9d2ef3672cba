/* fuse_output.c: XLA's output fusion (kOutput, the product's epilogue): elementwise ops after a
** matrix product run on the product's output tiles before they are written.
**
** Where XLA emits the product itself (TPU; CPU) the epilogue takes any elementwise op (its bias,
** activation, scaling, a row's softmax or layer norm, which XLA tiles the product's output by
** whole rows for). Batch statistics do not: every tile must be done before any element is
** normalised.
**
** On a GPU (cg_options.gpu_backend) a product is a library call and its kernel takes only
** what the library fuses, each pattern a rewrite of openxla/xla's xla/service/gpu:
**   - a convolution is cuDNN's: cudnn_fused_conv_rewriter.cc turns conv + bias + side input +
**     activation (ReLU, and on newer cuDNN ELU, leaky ReLU, ReLU6) into one __cudnn$convBiasActivationForward,
**     a forward op only, and only while the convolution's output has that one user (its patterns
**     match WithOneUser: a pre-activation the backward reads again keeps the pair apart). Keras's
**     Conv2D(activation=...) is that: the activation in the convolution's layer;
**   - a GEMM is cuBLAS's: gemm_rewriter.cc folds a scalar scale (alpha) and the add of a whole
**     matrix (beta x C); a vector bias and a ReLU or GELU epilogue are folded only into cuBLASLt
**     calls (HandleAdd's FuseVectorBiasAdd matches CublasLtMatmul), which XLA uses only with
**     --xla_gpu_enable_cublaslt, false by default (xla/debug_options_flags.cc:
**     opts.set_xla_gpu_enable_cublaslt(false)). So a dense layer's bias, activation, dropout and
**     residual add after its GEMM are a loop fusion of their own that reads the GEMM's output
**     once (fuse_loop.c), and no softmax or norm joins a GEMM (the attention's scores are written
**     by cuBLAS and read by the softmax's reduction fusion). */
#include "compile/compileInt.h"

/* Whether every tensor op writes has at most one reader (cuDNN's fused patterns' WithOneUser). */
static int one_user(const cg_graph *g, const cg_op *op) {
  for (int k = 0; k < op->nout; k++)
    if (g->tensors[op->out[k]].nconsumers > 1) return 0;
  return 1;
}

/* cuDNN's fused convolution: its own layer's forward elementwise ops (the bias, the activation). */
static int library_epilogue(const cg_graph *g, const cg_op *root, const cg_op *producer, const cg_op *consumer) {
  return root->convolution && consumer->phase == MD_PHASE_FORWARD && root->phase == MD_PHASE_FORWARD &&
         consumer->layer == root->layer && consumer->reduce == MD_REDUCE_NONE && one_user(g, producer);
}

static int output_fuses(const cg_graph *g, const cg_op *root, const cg_op *producer, const cg_op *consumer) {
  if (root->code != CG_OP_MATMUL || consumer->code != CG_OP_ELEMENTWISE) return 0;
  if (g->gpu_backend) return library_epilogue(g, root, producer, consumer);
  return consumer->reduce != MD_REDUCE_BATCH;
}

const cg_fusion_rule cg_fuse_output = {"output", output_fuses};
