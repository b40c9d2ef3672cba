/*
** conv2d.c: Keras's Conv2D, channels_last (md_conv2d_ops). Input [h, w, c], kernel
** [kh, kw, c, filters], output [oh, ow, filters] by window.c's geometry (strides, valid or same
** padding, dilation), bias [filters].
**   z[o, p, f] = b[f] + sum over (i, j, c) of x[o s - pad + i d, p s - pad + j d, c] W[i, j, c, f]
** Taps in the padding read zero and are skipped.
**
** The products run through md_gemm on im2col patches (a chunk of examples at a time), which
** keeps the direct loop's order per element: gslcblas's order adds the taps of an output in
** (i, j, c) order, skipping zero inputs (padding, and a zero input, whose product could only
** change the sign of a zero sum).
**
** Invariants:
**   1. Each output row of filters is accumulated in float in the order (i, j, c), the bias first;
**      dW and dx accumulate in the order (example, o, p) of the outputs: fixed orders, so the
**      bits depend on nothing else (not on the chunking: a chunk continues the sums).
**   2. db is each filter's sum over examples and positions in double, rounded once (as dense).
**   3. Costs are the direct convolution's: 2 FLOPs per multiply-add of every tap, those in the
**      padding counted as if they were not (XLA's count: oh ow kh kw c f per example).
*/
#include <stdlib.h>
#include <string.h>

#include "models/gemm.h"
#include "models/modelsInt.h"

static int conv_shape(md_layer *l, md_error *err) {
  if (l->spec.filters <= 0) return md_error_set(err, 0, 0, "conv2d needs filters > 0 (got %d)", l->spec.filters);
  return md_window_conv_shape(l, l->spec.filters, err);
}

static void conv_variables(md_layer *l, md_model *m) {
  const md_layer_spec *s = &l->spec;
  int64_t kernel[4] = {s->kernel_size[0], s->kernel_size[1], l->in_shape.dim[2], s->filters};
  int64_t bias[1] = {s->filters};
  l->var[l->nvars++] = md_model_add_var(m, l->name, "kernel", 4, kernel);
  if (s->use_bias) l->var[l->nvars++] = md_model_add_var(m, l->name, "bias", 1, bias);
}

/* glorot_uniform with Keras's fans for a conv kernel: receptive field times channels. */
static void conv_init(const md_layer *l, md_var *vars, gsl_rng *rng) {
  double field = (double)l->spec.kernel_size[0] * l->spec.kernel_size[1];
  md_fill_glorot(&vars[MD_LAYER_KERNEL(l)], field * l->in_shape.dim[2], field * l->spec.filters, rng);
}

/* Examples per product: their patch matrix stays within this many floats (8 MiB), whatever the
** batch. */
enum { PATCH_FLOATS = 1 << 21 };

/* A batch's chunk of examples [e0, e0 + ne) as a GEMM operand: row (e, o, p) holds the input
** under the kernel's taps at output (o, p), column (i kw + j) c + ch, zero in the padding. */
static void im2col(const md_layer *l, const md_window *w, const float *x, int e0, int ne, float *patches) {
  int c = l->in_shape.dim[2], taps = w->kernel[0] * w->kernel[1] * c;
  float *row = patches;
  for (int e = e0; e < e0 + ne; e++)
    for (int o = 0; o < w->out[0]; o++)
      for (int p = 0; p < w->out[1]; p++, row += taps)
        for (int i = 0; i < w->kernel[0]; i++) {
          int ih = o * w->stride[0] - w->pad[0] + i * w->dilation[0];
          for (int j = 0; j < w->kernel[1]; j++) {
            int iw = p * w->stride[1] - w->pad[1] + j * w->dilation[1];
            float *tap = row + ((size_t)i * w->kernel[1] + j) * c;
            if (ih < 0 || ih >= w->in[0] || iw < 0 || iw >= w->in[1]) memset(tap, 0, sizeof(float) * c);
            else memcpy(tap, x + (((size_t)e * w->in[0] + ih) * w->in[1] + iw) * c, sizeof(float) * c);
          }
        }
}

/* im2col's adjoint: dx at each input position gets the gradient of every patch entry read from
** it, in the order (example, o, p, i, j, ch); padding taps read nothing and give nothing. */
static void col2im_add(const md_layer *l, const md_window *w, const float *dpatches, int e0, int ne, float *dx) {
  int c = l->in_shape.dim[2], taps = w->kernel[0] * w->kernel[1] * c;
  const float *row = dpatches;
  for (int e = e0; e < e0 + ne; e++)
    for (int o = 0; o < w->out[0]; o++)
      for (int p = 0; p < w->out[1]; p++, row += taps)
        for (int i = 0; i < w->kernel[0]; i++) {
          int ih = o * w->stride[0] - w->pad[0] + i * w->dilation[0];
          if (ih < 0 || ih >= w->in[0]) continue;
          for (int j = 0; j < w->kernel[1]; j++) {
            int iw = p * w->stride[1] - w->pad[1] + j * w->dilation[1];
            if (iw < 0 || iw >= w->in[1]) continue;
            const float *tap = row + ((size_t)i * w->kernel[1] + j) * c;
            float *to = dx + (((size_t)e * w->in[0] + ih) * w->in[1] + iw) * c;
            for (int ch = 0; ch < c; ch++) to[ch] += tap[ch];
          }
        }
}

/* How many examples one product takes, and the patch buffer they need. */
static int chunk_examples(const md_window *w, int taps, int n) {
  size_t per = (size_t)w->out[0] * w->out[1] * (size_t)taps;
  int chunk = per >= PATCH_FLOATS ? 1 : (int)(PATCH_FLOATS / per);
  return chunk < n ? chunk : n;
}

static void conv_forward(const md_layer *l, const md_layer_run *r) {
  md_window w = md_window_conv(l);
  int c = l->in_shape.dim[2], f = l->spec.filters, taps = w.kernel[0] * w.kernel[1] * c;
  int rows_per = w.out[0] * w.out[1], chunk = chunk_examples(&w, taps, r->n);
  const float *k = r->vars[MD_LAYER_KERNEL(l)].data;
  md_window_conv_bias(l, r);
  float *patches = base_xrealloc(NULL, sizeof(float) * (size_t)chunk * rows_per * taps);
  for (int e0 = 0; e0 < r->n; e0 += chunk) {
    int ne = r->n - e0 < chunk ? r->n - e0 : chunk;
    im2col(l, &w, r->x, e0, ne, patches);
    md_gemm(MD_NO_TRANS, MD_NO_TRANS, ne * rows_per, f, taps, 1.0f, patches, taps, k, f, 1.0f,
            r->z + (size_t)e0 * rows_per * f, f);
  }
  free(patches);
}

static void conv_backward(const md_layer *l, const md_layer_run *r) {
  md_window w = md_window_conv(l);
  int c = l->in_shape.dim[2], f = l->spec.filters, taps = w.kernel[0] * w.kernel[1] * c;
  int rows_per = w.out[0] * w.out[1], chunk = chunk_examples(&w, taps, r->n);
  const float *k = r->vars[MD_LAYER_KERNEL(l)].data;
  float *dk = r->grads->g[MD_LAYER_KERNEL(l)];
  size_t chunk_floats = (size_t)chunk * rows_per * taps;
  float *patches = base_xrealloc(NULL, sizeof(float) * chunk_floats);
  float *dpatches = r->has_dx ? base_xrealloc(NULL, sizeof(float) * chunk_floats) : NULL;
  if (r->has_dx) memset(r->dx, 0, sizeof(float) * (size_t)r->n * l->in);
  for (int e0 = 0; e0 < r->n; e0 += chunk) {
    int ne = r->n - e0 < chunk ? r->n - e0 : chunk, rows = ne * rows_per;
    const float *dz = r->dz + (size_t)e0 * rows_per * f;
    im2col(l, &w, r->x, e0, ne, patches);
    /* dW = patches^T dz, summed over the chunks in example order (the first overwrites). */
    md_gemm(MD_TRANS, MD_NO_TRANS, taps, f, rows, 1.0f, patches, taps, dz, f, e0 == 0 ? 0.0f : 1.0f, dk, f);
    if (!r->has_dx) continue;
    md_gemm(MD_NO_TRANS, MD_TRANS, rows, taps, f, 1.0f, dz, f, k, f, 0.0f, dpatches, taps);
    col2im_add(l, &w, dpatches, e0, ne, r->dx);
  }
  if (r->n == 0) memset(dk, 0, sizeof(float) * r->vars[MD_LAYER_KERNEL(l)].size);
  free(patches);
  free(dpatches);
  md_window_conv_bias_grad(l, r);
}

/* As a GEMM of the outputs [n oh ow, filters] by the taps [kh kw c, filters]. */
static void conv_cost(const md_layer *l, const md_layer_run *r, md_pass pass, md_cost *cost) {
  md_window_conv_cost(l, r, pass, (double)l->spec.kernel_size[0] * l->spec.kernel_size[1] * l->in_shape.dim[2], 1, cost);
}

const md_layer_ops md_conv2d_ops = {
  .keras_name = "conv2d", .reads_ids = 0, .has_activation = 1, .shape = conv_shape,
  .variables = conv_variables, .init = conv_init, .forward = conv_forward,
  .backward = conv_backward, .cost = conv_cost,
};
