/*
** gpu_rows.c: a row reduction's statistics on XLA's GPU backend (cg__gpu_row_passes), one kernel
** per dependent reduction, each reading the rows again.
**
** A row's statistics are a reduction kernel of their own on a GPU, and their use (the apply) a
** loop fusion after it (fuse_input.c: a reduction to contiguous dimensions is not fusible as a
** producer, openxla/xla xla/service/gpu/gpu_fusible.cc IsLoopFusibleAsProducer). A statistic
** that needs another is a reduction after that one's kernel, for the same reason: TensorFlow's
** softmax reduces the max and then the sum of exp(x - max) (tensorflow/compiler/tf2xla/kernels/
** softmax_op.cc, SoftmaxOp::Compile), its layer norm the mean and then the mean squared difference
** from it (tf.nn.moments, tensorflow/python/ops/nn_impl.py, which Keras 3's layer_normalization
** calls, as TF 2's Keras LayerNormalization does below epsilon 1.001e-5, where it cannot take
** fused_batch_norm: BERT's 1e-12); a backward's sums (of dz y for the softmax, of dz gamma and
** dz gamma x-hat for a norm) are one reduction (models/cost.h's row_passes).
**
** An op's bytes (models/) read its inputs once, for the apply. Each reduction kernel reads them
** again, except that the first takes in an elementwise producer of the same pass (XLA's kInput
** fusion of the producer's loop), reading the producer's inputs and writing its output for the
** apply (multi-output): the producer's loop writing that tensor and this op reading it are the
** same bytes, already counted. So the op reads `passes` times its inputs more, less the tensors
** such producers give it. The softmax after the attention's scores (a cuBLAS product) reads the
** scores three times; a layer norm after a residual add twice; a norm's gradient reads x and
** the incoming gradient twice (the gradient comes from another layer's kernel).
**
** Not counted: the launches of the extra kernels (an op stays one kernel of the program).
*/
#include "compile/compileInt.h"

/* Bytes of op c's inputs that an elementwise producer of the same pass writes: a reduction kernel
** takes that producer in. */
static double absorbed(const cg_graph *g, const cg_op *c) {
  double bytes = 0;
  for (int k = 0; k < c->nin; k++) {
    const cg_tensor *t = &g->tensors[c->in[k]];
    if (t->producer < 0) continue;
    const cg_op *p = &g->ops[t->producer];
    if (p->code == CG_OP_ELEMENTWISE && cg__same_pass(g, p, c)) bytes += t->bytes;
  }
  return bytes < c->row_reads ? bytes : c->row_reads;
}

void cg__gpu_row_passes(cg_graph *g) {
  for (size_t i = 0; i < g->traced; i++) {
    cg_op *c = &g->ops[i];
    if (c->row_passes > 0 && cg__is_compute(c)) c->bytes += c->row_passes * c->row_reads - absorbed(g, c);
  }
}
