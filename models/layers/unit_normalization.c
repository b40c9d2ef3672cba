/*
** unit_normalization.c: Keras's UnitNormalization(axis=-1) (md_unit_normalization_ops), which is
** tf.math.l2_normalize(x, axis=-1): z = x / sqrt(max(sum x^2, 1e-12)) over the last axis. TF-GNN's
** GraphSAGENextState(l2_normalize=True) applies it to the new node states after the activation.
** Saves per row its inverse norm and whether the 1e-12 floor was taken (2 floats).
**
** Invariants:
**   1. sum x^2 is taken in double and the inverse norm rounded once to float; z = x * inv in float.
**   2. dx = inv (dz - z sum(dz z)) (the sum in double), or inv dz where the floor was taken (the
**      norm is then a constant).
*/
#include <math.h>

#include "models/modelsInt.h"

#define UNIT_NORM_EPSILON 1e-12

static int unit_shape(md_layer *l, md_error *err) {
  if (md_layer_check_last_axis(l, err) != 0) return -1;
  l->out_shape = l->in_shape;
  l->saved = 2 * (int)(md_shape_size(&l->in_shape) / l->in_shape.dim[l->in_shape.rank - 1]);
  return 0;
}

static void unit_forward(const md_layer *l, const md_layer_run *r) {
  int d = l->in_shape.dim[l->in_shape.rank - 1];
  size_t rows = (size_t)r->n * (size_t)(l->in / d);
  for (size_t i = 0; i < rows; i++) {
    const float *x = r->x + i * d;
    double s = 0;
    for (int k = 0; k < d; k++) s += (double)x[k] * x[k];
    float inv = (float)(1.0 / sqrt(s > UNIT_NORM_EPSILON ? s : UNIT_NORM_EPSILON));
    for (int k = 0; k < d; k++) r->z[i * d + k] = x[k] * inv;
    r->saved[2 * i] = inv;
    r->saved[2 * i + 1] = s > UNIT_NORM_EPSILON ? 0.0f : 1.0f;
  }
}

static void unit_backward(const md_layer *l, const md_layer_run *r) {
  if (!r->has_dx) return;
  int d = l->in_shape.dim[l->in_shape.rank - 1];
  size_t rows = (size_t)r->n * (size_t)(l->in / d);
  for (size_t i = 0; i < rows; i++) {
    const float *x = r->x + i * d, *dz = r->dz + i * d;
    float inv = r->saved[2 * i], floor_taken = r->saved[2 * i + 1];
    double dot = 0;
    for (int k = 0; floor_taken == 0.0f && k < d; k++) dot += (double)dz[k] * (x[k] * inv);
    for (int k = 0; k < d; k++) r->dx[i * d + k] = inv * (dz[k] - (float)dot * (x[k] * inv));
  }
}

/* Forward the squares' sum and the scaling (3 FLOPs an element); backward the dot and the update
** (4), reading x and dz. */
static void unit_cost(const md_layer *l, const md_layer_run *r, md_pass pass, md_cost *cost) {
  if (pass == MD_PASS_FORWARD) md_cost_normalize(cost, r->act_bytes, (double)r->n * l->in, 3, 1, MD_REDUCE_ROWS);
  else if (r->has_dx) md_cost_normalize(cost, r->act_bytes, (double)r->n * l->in, 4, 2, MD_REDUCE_ROWS);
}

const md_layer_ops md_unit_normalization_ops = {
  .keras_name = "unit_normalization", .reads_ids = 0, .has_activation = 0, .shape = unit_shape,
  .variables = md_no_variables, .init = md_no_init, .forward = unit_forward, .backward = unit_backward,
  .cost = unit_cost,
};
