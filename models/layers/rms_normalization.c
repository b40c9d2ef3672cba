/*
** rms_normalization.c: Keras 3's RMSNormalization over the last axis (md_rms_normalization_ops),
** the normalisation of Llama's decoder blocks (Zhang and Sennrich 2019; keras/src/ops/nn.py
** _rms_normalization): per row of the last axis (D values)
**   r = 1 / sqrt(sum x^2 / D + epsilon),  z = (x r) scale
** with Keras's epsilon 1e-6 unless the spec sets one; scale [D] starts at ones. No centring and
** no bias. The backward (row by row), with g = dz scale:
**   dscale = sum over rows dz x r,  dx = r (g - x r^2 mean(g x))
**
** Invariants:
**   1. sum x^2, r and the row's mean(g x) are computed in double from the float inputs, x r
**      rounded to float once; dscale is summed over rows in double and rounded once (as
**      layer_normalization's dgamma).
**   2. Nothing is saved: the backward recomputes each row's r from x.
*/
#include <math.h>
#include <stdlib.h>

#include "models/modelsInt.h"

static int width(const md_layer *l) { return l->in_shape.dim[l->in_shape.rank - 1]; }

static int rms_shape(md_layer *l, md_error *err) {
  if (l->spec.epsilon == 0.0f) l->spec.epsilon = 1e-6f;
  if (!(l->spec.epsilon > 0.0f))
    return md_error_set(err, 0, 0, "rms_normalization needs epsilon > 0 (got %g)", (double)l->spec.epsilon);
  if (md_layer_check_last_axis(l, err)) return -1;
  l->out_shape = l->in_shape;
  return 0;
}

static void rms_variables(md_layer *l, md_model *m) {
  int64_t shape[1] = {width(l)};
  l->var[l->nvars++] = md_model_add_var(m, l->name, "scale", 1, shape);
}

static void rms_init(const md_layer *l, md_var *vars, gsl_rng *rng) {
  (void)rng;
  md_var *scale = &vars[l->var[0]];
  for (size_t i = 0; i < scale->size; i++) scale->data[i] = 1.0f;
}

/* A row's 1 / rms (invariant 1). */
static double inverse_rms(const float *x, int d, double epsilon) {
  double s = 0;
  for (int k = 0; k < d; k++) s += (double)x[k] * x[k];
  return 1.0 / sqrt(s / d + epsilon);
}

static void rms_forward(const md_layer *l, const md_layer_run *r) {
  int d = width(l);
  size_t rows = (size_t)r->n * (l->in / d);
  const float *scale = r->vars[l->var[0]].data;
  for (size_t i = 0; i < rows; i++) {
    const float *x = r->x + i * d;
    double inv = inverse_rms(x, d, l->spec.epsilon);
    for (int k = 0; k < d; k++) r->z[i * d + k] = (float)(x[k] * inv) * scale[k];
  }
}

static void rms_backward(const md_layer *l, const md_layer_run *r) {
  int d = width(l);
  size_t rows = (size_t)r->n * (l->in / d);
  const float *scale = r->vars[l->var[0]].data;
  double *dscale = base_xrealloc(NULL, sizeof(double) * (size_t)d);
  for (int k = 0; k < d; k++) dscale[k] = 0;
  for (size_t i = 0; i < rows; i++) {
    const float *x = r->x + i * d, *dz = r->dz + i * d;
    double inv = inverse_rms(x, d, l->spec.epsilon), mean_gx = 0;
    for (int k = 0; k < d; k++) {
      dscale[k] += (double)dz[k] * (float)(x[k] * inv);
      mean_gx += (double)dz[k] * scale[k] * x[k];
    }
    mean_gx /= d;
    for (int k = 0; r->has_dx && k < d; k++)
      r->dx[i * d + k] = (float)(inv * ((double)dz[k] * scale[k] - x[k] * inv * inv * mean_gx));
  }
  float *g = r->grads->g[l->var[0]];
  for (int k = 0; k < d; k++) g[k] = (float)dscale[k];
  free(dscale);
}

/* Forward: the squares' sum and the scaling, 4 FLOPs an element, reading x and writing z.
** Backward: 8 FLOPs an element reading x and dz, writing dx (r recomputed, invariant 2). */
static void rms_cost(const md_layer *l, const md_layer_run *r, md_pass pass, md_cost *cost) {
  double count = (double)r->n * l->in;
  if (pass == MD_PASS_FORWARD) md_cost_normalize(cost, r->act_bytes, count, 4, 1, MD_REDUCE_ROWS);
  else md_cost_normalize(cost, r->act_bytes, count, 8, 2, MD_REDUCE_ROWS);
}

const md_layer_ops md_rms_normalization_ops = {
  .keras_name = "rms_normalization", .reads_ids = 0, .has_activation = 0, .float32_variables = 1,
  .shape = rms_shape,
  .variables = rms_variables, .init = rms_init, .forward = rms_forward,
  .backward = rms_backward, .cost = rms_cost,
};
