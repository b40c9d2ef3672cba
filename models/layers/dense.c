/*
** dense.c: Keras's Dense (md_dense_ops). z = x W + b through md_gemm (gemm.h: gslcblas's
** bits, tiled and vectorised; the build's cblas on request). As Keras, a rank > 1 input is a stack
** of rows: the kernel [last dim, units] maps the last axis and keeps the others.
**
** Invariants:
**   1. The bias is copied into z first and md_gemm adds x W onto it (beta 1): one pass over z.
**   2. db is each column's sum in double, rounded once, as tfjs does.
*/
#include <string.h>

#include "models/gemm.h"
#include "models/modelsInt.h"

/* The width of the last axis: the kernel's rows. */
static int dense_width(const md_layer *l) { return l->in_shape.dim[l->in_shape.rank - 1]; }

/* Rows the kernel multiplies: n examples times the positions before the last axis. */
static int dense_rows(const md_layer *l, int n) { return n * (l->in / dense_width(l)); }

static int dense_shape(md_layer *l, md_error *err) {
  if (l->spec.units <= 0) return md_error_set(err, 0, 0, "dense needs units > 0 (got %d)", l->spec.units);
  l->out_shape = l->in_shape;
  l->out_shape.dim[l->out_shape.rank - 1] = l->spec.units;
  return 0;
}

static void dense_variables(md_layer *l, md_model *m) {
  int64_t kernel[2] = {dense_width(l), l->spec.units}, bias[1] = {l->spec.units};
  l->var[l->nvars++] = md_model_add_var(m, l->name, "kernel", 2, kernel);
  if (l->spec.use_bias) l->var[l->nvars++] = md_model_add_var(m, l->name, "bias", 1, bias);
}

static void dense_init(const md_layer *l, md_var *vars, gsl_rng *rng) {
  md_fill_glorot(&vars[MD_LAYER_KERNEL(l)], dense_width(l), l->spec.units, rng);
}

void md_affine_forward(int rows, int k, int units, const float *x, const float *w, const float *b,
                       float *z) {
  float beta = 0.0f;
  if (b != NULL) {
    for (int i = 0; i < rows; i++) memcpy(z + (size_t)i * units, b, sizeof(float) * units);
    beta = 1.0f;
  }
  md_gemm(0, 0, rows, units, k, 1.0f, x, k, w, units, beta, z, units);
}

void md_affine_backward(int rows, int k, int units, const float *x, const float *w, const float *dz,
                        float *dw, float *db, float *dx, float dx_beta) {
  /* dW = x^T dz, overwriting the gradient (beta 0). */
  md_gemm(1, 0, k, units, rows, 1.0f, x, k, dz, units, 0.0f, dw, units);
  for (int j = 0; db != NULL && j < units; j++) {
    double s = 0;
    for (int i = 0; i < rows; i++) s += dz[(size_t)i * units + j];
    db[j] = (float)s;
  }
  /* dx = dz W^T (+ dx_beta dx) */
  if (dx != NULL)
    md_gemm(0, 1, rows, k, units, 1.0f, dz, units, w, units, dx_beta, dx, k);
}

static void dense_forward(const md_layer *l, const md_layer_run *r) {
  const float *b = MD_LAYER_BIAS(l) >= 0 ? r->vars[MD_LAYER_BIAS(l)].data : NULL;
  md_affine_forward(dense_rows(l, r->n), dense_width(l), l->spec.units, r->x,
                    r->vars[MD_LAYER_KERNEL(l)].data, b, r->z);
}

static void dense_backward(const md_layer *l, const md_layer_run *r) {
  float *db = MD_LAYER_BIAS(l) >= 0 ? r->grads->g[MD_LAYER_BIAS(l)] : NULL;
  md_affine_backward(dense_rows(l, r->n), dense_width(l), l->spec.units, r->x,
                     r->vars[MD_LAYER_KERNEL(l)].data, r->dz, r->grads->g[MD_LAYER_KERNEL(l)], db,
                     r->has_dx ? r->dx : NULL, 0.0f);
}

/* Forward: x W, the kernel a float32 variable; backward: dW = x^T dz (its operands and result
** in the compute dtype: Keras casts the gradient to float32 after it) and dx = dz W^T. */
void md_affine_cost(md_cost *cost, double elem_bytes, md_pass pass, double rows, double k, double units,
                    int bias, int has_dx) {
  if (pass == MD_PASS_FORWARD) {
    md_cost_gemm(cost, elem_bytes, rows, k, units, 1);
    if (bias) md_cost_elementwise(cost, elem_bytes, rows * units, 1, 1);  /* into the product */
    return;
  }
  md_cost_gemm(cost, elem_bytes, k, rows, units, 0);
  if (bias) md_cost_elementwise(cost, elem_bytes, rows * units, 1, 0);
  if (has_dx) md_cost_gemm(cost, elem_bytes, rows, units, k, 1);
}

static void dense_cost(const md_layer *l, const md_layer_run *r, md_pass pass, md_cost *cost) {
  md_affine_cost(cost, r->act_bytes, pass, dense_rows(l, r->n), dense_width(l), l->spec.units,
                 MD_LAYER_BIAS(l) >= 0, r->has_dx);
}

/* Megatron's column-parallel layer splits the kernel [in, units] and the bias on units; its
** row-parallel layer the kernel on its inputs alone, the bias added once to the reduced sum. */
static unsigned dense_split(const md_layer *l, md_split_way way) {
  unsigned bias = l->spec.use_bias ? 2u : 0u;
  return way == MD_SPLIT_COLUMNS ? 1u | bias : way == MD_SPLIT_ROWS ? 1u : 0u;
}

const md_layer_ops md_dense_ops = {
  .keras_name = "dense", .reads_ids = 0, .has_activation = 1, .shape = dense_shape,
  .variables = dense_variables, .init = dense_init, .forward = dense_forward,
  .backward = dense_backward, .cost = dense_cost, .split = dense_split,
};
