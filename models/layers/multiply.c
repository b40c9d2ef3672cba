/*
** multiply.c: Keras's Multiply (md_multiply_ops): the elementwise product of 2..MD_LAYER_MAX_INPUTS
** inputs of one shape; with a silu Dense and a linear one it is Llama's SwiGLU feed-forward
** (down(silu(gate(x)) * up(x)), KerasHub's LlamaDecoder).
**
** Invariants:
**   1. z = ((x0 x1) x2) ... in float, input order, as Keras's Multiply folds them.
**   2. Input k's gradient is dz times the product of the other inputs, folded in input order
**      (dz first), in float.
*/
#include <string.h>

#include "models/modelsInt.h"

static int multiply_shape(md_layer *l, md_error *err) { return md_merge_shape(l, err, "multiply multiplies"); }

static void multiply_forward(const md_layer *l, const md_layer_run *r) {
  size_t count = (size_t)r->n * l->out;
  memcpy(r->z, r->xs[0], sizeof(float) * count);
  for (int k = 1; k < l->ninputs; k++)
    for (size_t i = 0; i < count; i++) r->z[i] *= r->xs[k][i];
}

static void multiply_backward(const md_layer *l, const md_layer_run *r) {
  size_t count = (size_t)r->n * l->out;
  for (int k = 0; k < l->ninputs; k++) {
    if (r->dxs[k] == NULL) continue;
    memcpy(r->dxs[k], r->dz, sizeof(float) * count);
    for (int j = 0; j < l->ninputs; j++)
      for (size_t i = 0; j != k && i < count; i++) r->dxs[k][i] *= r->xs[j][i];
  }
}

/* Forward ninputs - 1 products an element reading every input; backward, per input, ninputs - 1
** products reading dz and the other inputs. */
static void multiply_cost(const md_layer *l, const md_layer_run *r, md_pass pass, md_cost *cost) {
  double count = (double)r->n * l->out, k = l->ninputs;
  if (pass == MD_PASS_FORWARD) md_cost_elementwise(cost, r->act_bytes, count, k - 1, l->ninputs);
  else md_cost_elementwise(cost, r->act_bytes, count, k * (k - 1), l->ninputs + 1);
}

const md_layer_ops md_multiply_ops = {
  .keras_name = "multiply", .reads_ids = 0, .has_activation = 0, .multi_input = 1, .shape = multiply_shape,
  .variables = md_no_variables, .init = md_no_init, .forward = multiply_forward, .backward = multiply_backward,
  .cost = multiply_cost,
};
