/*
** depthwise_conv2d.c: Keras's DepthwiseConv2D, channels_last (md_depthwise_conv2d_ops): each
** input channel convolved with its own depth_multiplier (M) filters, no sum across channels.
** Input [h, w, c], LAYER/depthwise_kernel [kh, kw, c, M], output [oh, ow, c M] with output
** channel c M + m, LAYER/bias [c M]; geometry, bias and costs as Conv2D's (window.c).
**   z[o, p, c M + m] = b[c M + m] + sum over (i, j) of x[o s - pad + i d, p s - pad + j d, c] K[i, j, c, m]
**
** Invariants:
**   1. Sums run in float in the order of MD_WINDOW_TAPS (outputs, then taps), as conv2d's.
*/
#include <string.h>

#include "models/modelsInt.h"

static int multiplier(const md_layer *l) { return l->spec.depth_multiplier; }

static int depthwise_shape(md_layer *l, md_error *err) {
  if (l->spec.depth_multiplier == 0) l->spec.depth_multiplier = 1;
  if (l->spec.depth_multiplier < 0)
    return md_error_set(err, 0, 0, "depthwise_conv2d needs depth_multiplier > 0 (got %d)", l->spec.depth_multiplier);
  int channels = l->in_shape.rank == 3 ? l->in_shape.dim[2] : 0;
  return md_window_conv_shape(l, channels * l->spec.depth_multiplier, err);
}

static void depthwise_variables(md_layer *l, md_model *m) {
  const md_layer_spec *s = &l->spec;
  int64_t kernel[4] = {s->kernel_size[0], s->kernel_size[1], l->in_shape.dim[2], multiplier(l)};
  int64_t bias[1] = {l->out_shape.dim[2]};
  l->var[l->nvars++] = md_model_add_var(m, l->name, "depthwise_kernel", 4, kernel);
  if (s->use_bias) l->var[l->nvars++] = md_model_add_var(m, l->name, "bias", 1, bias);
}

/* glorot_uniform with Keras's fans of [kh, kw, c, M]: kh kw c in, kh kw M out. */
static void depthwise_init(const md_layer *l, md_var *vars, gsl_rng *rng) {
  double field = (double)l->spec.kernel_size[0] * l->spec.kernel_size[1];
  md_fill_glorot(&vars[MD_LAYER_KERNEL(l)], field * l->in_shape.dim[2], field * multiplier(l), rng);
}

static void depthwise_forward(const md_layer *l, const md_layer_run *r) {
  md_window w = md_window_conv(l);
  int c = l->in_shape.dim[2], m = multiplier(l);
  const float *k = r->vars[MD_LAYER_KERNEL(l)].data;
  md_window_conv_bias(l, r);
  for (int e = 0; e < r->n; e++)
    MD_WINDOW_TAPS(l, w, e, c * m, c * m, {
      for (int ch = 0; ch < c; ch++)
        for (int q = 0; q < m; q++) r->z[zoff + (size_t)ch * m + q] += r->x[xoff + ch] * k[koff + (size_t)ch * m + q];
    });
}

static void depthwise_backward(const md_layer *l, const md_layer_run *r) {
  md_window w = md_window_conv(l);
  int c = l->in_shape.dim[2], m = multiplier(l);
  const float *k = r->vars[MD_LAYER_KERNEL(l)].data;
  float *dk = r->grads->g[MD_LAYER_KERNEL(l)];
  memset(dk, 0, sizeof(float) * r->vars[MD_LAYER_KERNEL(l)].size);
  if (r->has_dx) memset(r->dx, 0, sizeof(float) * (size_t)r->n * l->in);
  for (int e = 0; e < r->n; e++)
    MD_WINDOW_TAPS(l, w, e, c * m, c * m, {
      for (int ch = 0; ch < c; ch++) {
        float s = 0.0f;
        for (int q = 0; q < m; q++) {
          float dz = r->dz[zoff + (size_t)ch * m + q];
          dk[koff + (size_t)ch * m + q] += r->x[xoff + ch] * dz;
          s += k[koff + (size_t)ch * m + q] * dz;
        }
        if (r->has_dx) r->dx[xoff + ch] += s;
      }
    });
  md_window_conv_bias_grad(l, r);
}

/* Each output reads kh kw kernel values (one channel's taps). */
static void depthwise_cost(const md_layer *l, const md_layer_run *r, md_pass pass, md_cost *cost) {
  md_window_conv_cost(l, r, pass, (double)l->spec.kernel_size[0] * l->spec.kernel_size[1], 0, cost);
}

const md_layer_ops md_depthwise_conv2d_ops = {
  .keras_name = "depthwise_conv2d", .reads_ids = 0, .has_activation = 1, .shape = depthwise_shape,
  .variables = depthwise_variables, .init = depthwise_init, .forward = depthwise_forward,
  .backward = depthwise_backward, .cost = depthwise_cost,
};
