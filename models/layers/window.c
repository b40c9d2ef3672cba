/*
** window.c: the sliding-window geometry of Conv2D and the 2-D poolings (md_window_), as TF's
** GetWindowedOutputSizeVerbose computes it for each spatial axis:
**   effective size  k' = (k - 1) d + 1
**   valid:          out = (in - k') / s + 1 (in >= k'), pad 0
**   same:           out = ceil(in / s), pad_total = max((out - 1) s + k' - in, 0),
**                   pad before = pad_total / 2 (the odd one goes after)
** Input row ih of output oh and tap i: oh s - pad + i d, outside [0, in) when it falls in padding.
*/
#include <string.h>

#include "models/modelsInt.h"

int md_window_init(md_window *w, const char *layer, const int in[2], const int kernel[2],
                   const int stride[2], const int dilation[2], md_padding padding, md_error *err) {
  for (int a = 0; a < 2; a++) {
    if (kernel[a] <= 0 || stride[a] <= 0 || dilation[a] <= 0)
      return md_error_set(err, 0, 0, "%s needs window, strides and dilation > 0 (got %d, %d, %d)",
                          layer, kernel[a], stride[a], dilation[a]);
    if (padding != MD_PADDING_VALID && padding != MD_PADDING_SAME)
      return md_error_set(err, 0, 0, "%s: unknown padding %d", layer, (int)padding);
    w->kernel[a] = kernel[a];
    w->stride[a] = stride[a];
    w->dilation[a] = dilation[a];
    w->in[a] = in[a];
    w->size[a] = (kernel[a] - 1) * dilation[a] + 1;
    if (padding == MD_PADDING_VALID) {
      if (in[a] < w->size[a])
        return md_error_set(err, 0, 0, "%s: valid padding needs an input of at least %d along axis "
                            "%d (got %d)", layer, w->size[a], a + 1, in[a]);
      w->out[a] = (in[a] - w->size[a]) / stride[a] + 1;
      w->pad[a] = 0;
    } else {
      w->out[a] = (in[a] + stride[a] - 1) / stride[a];
      int total = (w->out[a] - 1) * stride[a] + w->size[a] - in[a];
      w->pad[a] = total > 0 ? total / 2 : 0;
    }
  }
  return 0;
}

/* The poolings' shape: pool_size 0 means 2 and strides 0 mean pool_size, as Keras's defaults. */
int md_window_pool_shape(md_layer *l, md_error *err) {
  md_layer_spec *s = &l->spec;
  const char *name = l->ops->keras_name;
  if (l->in_shape.rank != 3)
    return md_error_set(err, 0, 0, "%s reads [height, width, channels] (got rank %d)", name, l->in_shape.rank);
  for (int a = 0; a < 2; a++) {
    if (s->pool_size[a] == 0) s->pool_size[a] = 2;
    if (s->strides[a] == 0) s->strides[a] = s->pool_size[a];
  }
  md_window w;
  if (md_window_pool(&w, l, err)) return -1;
  l->out_shape = (md_shape){.rank = 3, .dim = {w.out[0], w.out[1], l->in_shape.dim[2]}};
  return 0;
}

int md_window_pool(md_window *w, const md_layer *l, md_error *err) {
  static const int one[2] = {1, 1};
  int in[2] = {l->in_shape.dim[0], l->in_shape.dim[1]};
  return md_window_init(w, l->ops->keras_name, in, l->spec.pool_size, l->spec.strides, one,
                        l->spec.padding, err);
}

/* An elementwise pass over the larger side, the window's reads counted once per output. */
void md_window_pool_cost(const md_layer *l, const md_layer_run *r, md_pass pass, md_cost *cost) {
  double outputs = (double)r->n * l->out, window = (double)l->spec.pool_size[0] * l->spec.pool_size[1];
  md_cost c = {.flops = outputs * window, .bytes_moved = r->act_bytes * ((double)r->n * l->in + outputs)};
  if (pass == MD_PASS_BACKWARD) {
    if (!r->has_dx) return;
    c.bytes_moved += r->act_bytes * (double)r->n * l->in;  /* the input re-read to find each maximum */
  }
  md_cost_add(cost, &c);
}

/* The taps of output (o, p) inside the input: rows [*i0, *i1) and columns [*j0, *j1). */
void md_window_taps(const md_window *w, int o, int p, int *i0, int *i1, int *j0, int *j1) {
  int top = o * w->stride[0] - w->pad[0], left = p * w->stride[1] - w->pad[1];
  *i0 = top < 0 ? 0 : top;
  *i1 = top + w->kernel[0] > w->in[0] ? w->in[0] : top + w->kernel[0];
  *j0 = left < 0 ? 0 : left;
  *j1 = left + w->kernel[1] > w->in[1] ? w->in[1] : left + w->kernel[1];
}

int md_window_conv_shape(md_layer *l, int out_channels, md_error *err) {
  md_layer_spec *s = &l->spec;
  const char *name = l->ops->keras_name;
  if (l->in_shape.rank != 3)
    return md_error_set(err, 0, 0, "%s reads [height, width, channels] (got rank %d)", name, l->in_shape.rank);
  for (int a = 0; a < 2; a++) {
    if (s->strides[a] == 0) s->strides[a] = 1;
    if (s->dilation_rate[a] == 0) s->dilation_rate[a] = 1;
  }
  if ((s->strides[0] > 1 || s->strides[1] > 1) && (s->dilation_rate[0] > 1 || s->dilation_rate[1] > 1))
    return md_error_set(err, 0, 0, "%s: strides > 1 not supported with dilation_rate > 1", name);
  md_window w;
  int in[2] = {l->in_shape.dim[0], l->in_shape.dim[1]};
  if (md_window_init(&w, name, in, s->kernel_size, s->strides, s->dilation_rate, s->padding, err)) return -1;
  l->out_shape = (md_shape){.rank = 3, .dim = {w.out[0], w.out[1], out_channels}};
  return 0;
}

md_window md_window_conv(const md_layer *l) {
  md_window w;
  const md_layer_spec *s = &l->spec;
  int in[2] = {l->in_shape.dim[0], l->in_shape.dim[1]};
  md_window_init(&w, l->ops->keras_name, in, s->kernel_size, s->strides, s->dilation_rate, s->padding, NULL);
  return w;
}

void md_window_conv_bias(const md_layer *l, const md_layer_run *r) {
  int f = l->out_shape.dim[2];
  const float *b = MD_LAYER_BIAS(l) >= 0 ? r->vars[MD_LAYER_BIAS(l)].data : NULL;
  for (size_t i = 0; i < (size_t)r->n * l->out; i += f) {
    if (b) memcpy(r->z + i, b, sizeof(float) * f);
    else memset(r->z + i, 0, sizeof(float) * f);
  }
}

void md_window_conv_bias_grad(const md_layer *l, const md_layer_run *r) {
  if (MD_LAYER_BIAS(l) < 0) return;
  int f = l->out_shape.dim[2];
  float *db = r->grads->g[MD_LAYER_BIAS(l)];
  size_t positions = (size_t)r->n * l->out_shape.dim[0] * l->out_shape.dim[1];
  for (int q = 0; q < f; q++) {
    double s = 0;
    for (size_t i = 0; i < positions; i++) s += r->dz[i * f + q];
    db[q] = (float)s;
  }
}

void md_window_conv_cost(const md_layer *l, const md_layer_run *r, md_pass pass, double taps_per_output,
                         int matmul, md_cost *cost) {
  double in = (double)r->n * l->in, out = (double)r->n * l->out;
  double kernel = (double)r->vars[MD_LAYER_KERNEL(l)].size;
  int bias = MD_LAYER_BIAS(l) >= 0;
  md_cost mm = {.flops = 2.0 * out * taps_per_output, .bytes_moved = r->act_bytes * (in + out) + 4.0 * kernel};
  /* A convolution is the implicit GEMM [positions x taps] [taps x filters]; a depthwise one
  ** convolves each channel alone, on the vector units (no matmul shape). */
  double filters = l->out_shape.dim[2];
  if (matmul) mm.matmul = (sim_matmul){1, out / filters, filters, taps_per_output, r->act_bytes};
  mm.convolution = 1;
  if (pass == MD_PASS_FORWARD) {
    if (bias) md_cost_elementwise(cost, r->act_bytes, out, 1, 1);
    md_cost_add(cost, &mm);
    return;
  }
  md_cost_add(cost, &mm);
  if (bias) md_cost_elementwise(cost, r->act_bytes, out, 1, 0);
  if (r->has_dx) md_cost_add(cost, &mm);
}
