/*
** softmax.c: Keras's Softmax layer on any axis (md_softmax_ops). axis counts as Keras does, the
** batch being axis 0: -1 (the default, also for 0) is the last, 1 the first of an example's.
** Each line of values along the axis is softmaxed on its own (md_softmax_forward, strided).
**
** Invariants:
**   1. The output is saved for the backward (n * in floats), as TF's SoftmaxGrad reads it.
*/
#include <string.h>

#include "models/modelsInt.h"

static int example_axis(const md_layer *l) { return md_layer_example_axis(l->spec.axis, l->in_shape.rank); }

/* An example as [outer, len, inner] around the axis. */
static void split(const md_layer *l, size_t *outer, int *len, size_t *inner) {
  int a = example_axis(l);
  *outer = 1;
  *inner = 1;
  for (int i = 0; i < a; i++) *outer *= (size_t)l->in_shape.dim[i];
  for (int i = a + 1; i < l->in_shape.rank; i++) *inner *= (size_t)l->in_shape.dim[i];
  *len = l->in_shape.dim[a];
}

static int softmax_shape(md_layer *l, md_error *err) {
  if (example_axis(l) < 0)
    return md_error_set(err, 0, 0, "softmax axis %d is not an axis of an example of rank %d (1..%d or -1..-%d)",
                        l->spec.axis, l->in_shape.rank, l->in_shape.rank, l->in_shape.rank);
  l->out_shape = l->in_shape;
  l->saved = (int)md_shape_size(&l->in_shape);
  return 0;
}

static void softmax_forward(const md_layer *l, const md_layer_run *r) {
  size_t outer, inner;
  int len;
  split(l, &outer, &len, &inner);
  for (size_t g = 0; g < (size_t)r->n * outer; g++)
    for (size_t i = 0; i < inner; i++) {
      size_t base = g * len * inner + i;
      md_softmax_forward(r->x + base, r->z + base, len, inner);
    }
  memcpy(r->saved, r->z, sizeof(float) * (size_t)r->n * l->out);
}

static void softmax_backward(const md_layer *l, const md_layer_run *r) {
  if (!r->has_dx) return;
  size_t outer, inner;
  int len;
  split(l, &outer, &len, &inner);
  memcpy(r->dx, r->dz, sizeof(float) * (size_t)r->n * l->in);
  for (size_t g = 0; g < (size_t)r->n * outer; g++)
    for (size_t i = 0; i < inner; i++) {
      size_t base = g * len * inner + i;
      md_softmax_backward(r->saved + base, r->dx + base, len, inner);
    }
}

/* As the softmax activation: 5 FLOPs an element forward (two dependent reductions: the max, then
** the sum of exp), 4 backward. */
static void softmax_cost(const md_layer *l, const md_layer_run *r, md_pass pass, md_cost *cost) {
  double count = (double)r->n * l->in;
  if (pass == MD_PASS_FORWARD) md_cost_row_stats(cost, r->act_bytes, count, 5, 1, 2);
  else if (r->has_dx) md_cost_normalize(cost, r->act_bytes, count, 4, 2, MD_REDUCE_ROWS);
}

const md_layer_ops md_softmax_ops = {
  .keras_name = "softmax", .reads_ids = 0, .has_activation = 0, .shape = softmax_shape,
  .variables = md_no_variables, .init = md_no_init, .forward = softmax_forward,
  .backward = softmax_backward, .cost = softmax_cost,
};
