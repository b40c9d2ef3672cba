/*
** accumulate.c: gradient accumulation's sums (cg__accumulate_kernels), run after each micro-batch
** but the last (training.gradient_accumulation_steps).
**
** Keras 3's optimizer with gradient_accumulation_steps (keras/src/optimizers/base_optimizer.py,
** apply: off the update step, _backend_increment_gradient_accumulators) adds each micro-batch's
** gradient into a float32 accumulator per trainable variable, as DeepLearningExamples' TF2 BERT
** does with its GradientAccumulator (official/modeling/model_training_utils.py, forward:
** accum_gradients.add_gradients(grads) each micro-batch). Each is an elementwise kernel over the
** variable: it reads the gradient and the accumulator and writes the sum (3 x 4 bytes and one add
** an element), beside the variable's update as the optimizer's kernels are. The last
** micro-batch's gradient goes to the update with the sum (the update's own kernels).
*/
#include "compile/compileInt.h"

size_t cg__accumulate_kernels(const cg_graph *g, cg_kernel *out) {
  size_t n = 0;
  for (size_t i = 0; i < g->ntensors; i++) {
    const cg_tensor *t = &g->tensors[i];
    if (t->kind != CG_TENSOR_WEIGHT_GRAD || t->producer < 0 || !g->trainable[t->var]) continue;
    out[n++] = (cg_kernel){.flops = t->bytes / 4.0, .bytes = 3.0 * t->bytes, .layer = t->layer,
                           .phase = MD_PHASE_OPTIMIZER, .op = t->producer};
  }
  return n;
}
