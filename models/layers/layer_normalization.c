/*
** layer_normalization.c: Keras's LayerNormalization over the last axis
** (md_layer_normalization_ops), center and scale on: per row of the last axis (D values)
**   mean = sum x / D,  var = sum (x - mean)^2 / D,  rstd = 1 / sqrt(var + epsilon)
**   xhat = (x - mean) rstd,  z = xhat gamma + beta
** with Keras's epsilon 1e-3 unless the spec sets one; gamma [D] starts at ones, beta [D] at
** zeros. The backward (row by row):
**   dgamma = sum over rows dz xhat,  dbeta = sum over rows dz,  g = dz gamma
**   dx = rstd (g - mean(g) - xhat mean(g xhat))
**
** Invariants:
**   1. mean, var, rstd and the row sums of the backward are computed in double from the float
**      inputs and xhat rounded to float once; dgamma and dbeta are summed over rows in double
**      and rounded once (as dense's db).
**   2. Nothing is saved: the backward recomputes each row's mean and rstd from x.
*/
#include <math.h>
#include <stdlib.h>

#include "models/modelsInt.h"

static int width(const md_layer *l) { return l->in_shape.dim[l->in_shape.rank - 1]; }

static int ln_shape(md_layer *l, md_error *err) {
  if (l->spec.epsilon == 0.0f) l->spec.epsilon = 1e-3f;
  if (!(l->spec.epsilon > 0.0f))
    return md_error_set(err, 0, 0, "layer_normalization needs epsilon > 0 (got %g)", (double)l->spec.epsilon);
  if (md_layer_check_last_axis(l, err)) return -1;
  l->out_shape = l->in_shape;
  return 0;
}

static void ln_variables(md_layer *l, md_model *m) {
  int64_t shape[1] = {width(l)};
  l->var[l->nvars++] = md_model_add_var(m, l->name, "gamma", 1, shape);
  l->var[l->nvars++] = md_model_add_var(m, l->name, "beta", 1, shape);
}

static void ln_init(const md_layer *l, md_var *vars, gsl_rng *rng) {
  (void)rng;
  md_var *gamma = &vars[l->var[0]];
  for (size_t i = 0; i < gamma->size; i++) gamma->data[i] = 1.0f;
}

/* The mean and variance of a group (invariant 1). */
static void group_stats(const float *x, size_t stride, size_t count, double *mean, double *var) {
  double s = 0, v = 0;
  for (size_t t = 0; t < count; t++) s += x[t * stride];
  *mean = s / count;
  for (size_t t = 0; t < count; t++) v += (x[t * stride] - *mean) * (x[t * stride] - *mean);
  *var = v / count;
}

void md_norm_forward(const float *x, size_t stride, size_t count, double epsilon, const float *gamma,
                     const float *beta, size_t gstride, float *z, double *mean, double *var) {
  group_stats(x, stride, count, mean, var);
  double rstd = 1.0 / sqrt(*var + epsilon);
  for (size_t t = 0; t < count; t++)
    z[t * stride] = (float)((x[t * stride] - *mean) * rstd) * gamma[t * gstride] + beta[t * gstride];
}

void md_norm_backward(const float *x, const float *dz, size_t stride, size_t count, double epsilon,
                      const float *gamma, size_t gstride, double *dgamma, double *dbeta, float *dx) {
  double mean, var, mean_g = 0, mean_gx = 0;
  group_stats(x, stride, count, &mean, &var);
  double rstd = 1.0 / sqrt(var + epsilon);
  for (size_t t = 0; t < count; t++) {
    float xhat = (float)((x[t * stride] - mean) * rstd);
    dgamma[t * gstride] += (double)dz[t * stride] * xhat;
    dbeta[t * gstride] += dz[t * stride];
    double g = (double)dz[t * stride] * gamma[t * gstride];
    mean_g += g;
    mean_gx += g * xhat;
  }
  mean_g /= count;
  mean_gx /= count;
  for (size_t t = 0; dx != NULL && t < count; t++) {
    float xhat = (float)((x[t * stride] - mean) * rstd);
    dx[t * stride] = (float)(rstd * ((double)dz[t * stride] * gamma[t * gstride] - mean_g - xhat * mean_gx));
  }
}

void md_norm_gradients(const md_layer *l, const md_layer_run *r, const double *sums, int d) {
  float *dgamma = r->grads->g[l->var[0]], *dbeta = r->grads->g[l->var[1]];
  for (int j = 0; j < d; j++) {
    dgamma[j] = (float)sums[j];
    dbeta[j] = (float)sums[d + j];
  }
}

static void ln_forward(const md_layer *l, const md_layer_run *r) {
  int d = width(l);
  size_t rows = (size_t)r->n * (l->in / d);
  const float *gamma = r->vars[l->var[0]].data, *beta = r->vars[l->var[1]].data;
  double mean, var;
  for (size_t i = 0; i < rows; i++)
    md_norm_forward(r->x + i * d, 1, d, l->spec.epsilon, gamma, beta, 1, r->z + i * d, &mean, &var);
}

static void ln_backward(const md_layer *l, const md_layer_run *r) {
  int d = width(l);
  size_t rows = (size_t)r->n * (l->in / d);
  double *sums = base_xrealloc(NULL, sizeof(double) * 2 * (size_t)d);  /* dgamma, dbeta */
  for (int j = 0; j < 2 * d; j++) sums[j] = 0;
  for (size_t i = 0; i < rows; i++)
    md_norm_backward(r->x + i * d, r->dz + i * d, 1, d, l->spec.epsilon, r->vars[l->var[0]].data, 1,
                     sums, sums + d, r->has_dx ? r->dx + i * d : NULL);
  md_norm_gradients(l, r, sums, d);
  free(sums);
}

/* Forward: two passes for the statistics and one for z, 8 FLOPs an element, reading x and
** writing z; the two are dependent reductions (tf.nn.moments, which Keras's layer norm calls, and
** TF 2's below epsilon 1.001e-5, where it cannot take fused_batch_norm: the mean, then the mean
** squared difference from it). Backward: 12 FLOPs an element reading x and dz, writing dx (the
** statistics recomputed, invariant 2), its two sums (of dz gamma and of dz gamma x-hat) one
** reduction. */
static void ln_cost(const md_layer *l, const md_layer_run *r, md_pass pass, md_cost *cost) {
  double count = (double)r->n * l->in;
  if (pass == MD_PASS_FORWARD) md_cost_row_stats(cost, r->act_bytes, count, 8, 1, 2);
  else md_cost_normalize(cost, r->act_bytes, count, 12, 2, MD_REDUCE_ROWS);
}

const md_layer_ops md_layer_normalization_ops = {
  .keras_name = "layer_normalization", .reads_ids = 0, .has_activation = 0, .float32_variables = 1,
  .shape = ln_shape,
  .variables = ln_variables, .init = ln_init, .forward = ln_forward,
  .backward = ln_backward, .cost = ln_cost,
};
