/*
** activations.c: the activation a layer applies to its output (md_activation_), forward and
** backward, elementwise or, for softmax, per row of the last axis. Costs count what the op
** touches (see cost.h); a NULL output array (a shapes-only model) skips the math and keeps the
** cost. The FLOPs per element are a fixed count of the formula's operations: relu 1; sigmoid,
** tanh 4; softmax 5; swish 5; gelu (erf) 6; gelu_tanh 9; backward as written below.
**
** Invariants:
**   1. MD_ACT_NONE issues no op: its a is its z.
**   2. gelu, gelu_tanh and swish are computed in float with the C library's erff, tanhf and expf,
**      as TF's CPU kernels compute them in the tensor's dtype, in tf.nn.gelu's order of operations
**      (x / sqrt(2), a division; 0.5 x first).
*/
#include <math.h>
#include <string.h>

#include "models/modelsInt.h"

/* Shifted by the maximum so exp never overflows; the sum in double, each value divided once. */
void md_softmax_forward(const float *z, float *a, int width, size_t stride) {
  float mx = z[0];
  for (int j = 1; j < width; j++) mx = z[j * stride] > mx ? z[j * stride] : mx;
  double s = 0;
  for (int j = 0; j < width; j++) {
    a[j * stride] = expf(z[j * stride] - mx);
    s += a[j * stride];
  }
  for (int j = 0; j < width; j++) a[j * stride] = (float)(a[j * stride] / s);
}

/* dz_j = a_j (da_j - sum_k da_k a_k): the softmax Jacobian applied without forming it. */
void md_softmax_backward(const float *a, float *d, int width, size_t stride) {
  double dot = 0;
  for (int j = 0; j < width; j++) dot += (double)d[j * stride] * a[j * stride];
  for (int j = 0; j < width; j++) d[j * stride] = a[j * stride] * (d[j * stride] - (float)dot);
}

/* sqrt(2/pi) and Keras's 0.044715, for gelu's tanh form. */
static const float gelu_c = 0.7978845608028654f, gelu_k = 0.044715f;

static float gelu_tanh_inner(float x) { return gelu_c * (x + gelu_k * x * x * x); }

void md_activation_forward(md_activation act, int rows, int width, const float *z, float *a,
                           double elem_bytes, md_cost *cost) {
  size_t count = a != NULL ? (size_t)rows * width : 0;  /* no array, no math: the cost below */
  double cost_count = (double)rows * width;
  switch (act) {
    case MD_ACT_NONE:
    case MD_ACT_COUNT:
      if (a != z) memcpy(a, z, sizeof(float) * count);
      return;
    case MD_ACT_RELU:
      for (size_t i = 0; i < count; i++) a[i] = z[i] > 0.0f ? z[i] : 0.0f;
      md_cost_elementwise(cost, elem_bytes, cost_count, 1, 1);
      return;
    case MD_ACT_SIGMOID:
      for (size_t i = 0; i < count; i++) a[i] = 1.0f / (1.0f + expf(-z[i]));
      md_cost_elementwise(cost, elem_bytes, cost_count, 4, 1);
      return;
    case MD_ACT_TANH:
      for (size_t i = 0; i < count; i++) a[i] = tanhf(z[i]);
      md_cost_elementwise(cost, elem_bytes, cost_count, 4, 1);
      return;
    case MD_ACT_SOFTMAX:
      for (int i = 0; count > 0 && i < rows; i++) md_softmax_forward(z + (size_t)i * width, a + (size_t)i * width, width, 1);
      md_cost_row_stats(cost, elem_bytes, cost_count, 5, 1, 2);  /* the max, then the sum of exp */
      return;
    case MD_ACT_GELU:
      for (size_t i = 0; i < count; i++) a[i] = 0.5f * z[i] * (1.0f + erff(z[i] / (float)M_SQRT2));
      md_cost_elementwise(cost, elem_bytes, cost_count, 6, 1);
      return;
    case MD_ACT_GELU_TANH:
      for (size_t i = 0; i < count; i++) a[i] = 0.5f * z[i] * (1.0f + tanhf(gelu_tanh_inner(z[i])));
      md_cost_elementwise(cost, elem_bytes, cost_count, 9, 1);
      return;
    case MD_ACT_SWISH:
      for (size_t i = 0; i < count; i++) a[i] = z[i] / (1.0f + expf(-z[i]));
      md_cost_elementwise(cost, elem_bytes, cost_count, 5, 1);
      return;
  }
}

void md_activation_backward(md_activation act, int rows, int width, const float *z,
                            const float *a, float *d, double elem_bytes, md_cost *cost) {
  size_t count = d != NULL ? (size_t)rows * width : 0;  /* no array, no math: the cost below */
  double cost_count = (double)rows * width;
  switch (act) {
    case MD_ACT_NONE:
    case MD_ACT_COUNT:
      return;
    case MD_ACT_RELU:
      /* As TF's ReluGrad: the gradient passes only where z > 0 (none at exactly 0). */
      for (size_t i = 0; i < count; i++) d[i] = z[i] > 0.0f ? d[i] : 0.0f;
      md_cost_elementwise(cost, elem_bytes, cost_count, 1, 2);
      return;
    case MD_ACT_SIGMOID:
      for (size_t i = 0; i < count; i++) d[i] = d[i] * a[i] * (1.0f - a[i]);
      md_cost_elementwise(cost, elem_bytes, cost_count, 3, 2);
      return;
    case MD_ACT_TANH:
      for (size_t i = 0; i < count; i++) d[i] = d[i] * (1.0f - a[i] * a[i]);
      md_cost_elementwise(cost, elem_bytes, cost_count, 3, 2);
      return;
    case MD_ACT_SOFTMAX:
      for (int i = 0; count > 0 && i < rows; i++) md_softmax_backward(a + (size_t)i * width, d + (size_t)i * width, width, 1);
      md_cost_normalize(cost, elem_bytes, cost_count, 4, 2, MD_REDUCE_ROWS);
      return;
    case MD_ACT_GELU:
      /* d/dz = Phi(z) + z phi(z): the normal CDF and density. */
      for (size_t i = 0; i < count; i++) {
        float cdf = 0.5f * (1.0f + erff(z[i] / (float)M_SQRT2));
        float pdf = expf(-0.5f * z[i] * z[i]) * (float)(0.5 * M_2_SQRTPI * M_SQRT1_2);
        d[i] = d[i] * (cdf + z[i] * pdf);
      }
      md_cost_elementwise(cost, elem_bytes, cost_count, 10, 2);
      return;
    case MD_ACT_GELU_TANH:
      /* t = tanh(u): d/dz = 0.5 (1 + t) + 0.5 z (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 z^2). */
      for (size_t i = 0; i < count; i++) {
        float t = tanhf(gelu_tanh_inner(z[i]));
        float du = gelu_c * (1.0f + 3.0f * gelu_k * z[i] * z[i]);
        d[i] = d[i] * (0.5f * (1.0f + t) + 0.5f * z[i] * (1.0f - t * t) * du);
      }
      md_cost_elementwise(cost, elem_bytes, cost_count, 14, 2);
      return;
    case MD_ACT_SWISH:
      /* s = sigmoid(z): d/dz = s (1 + z (1 - s)). */
      for (size_t i = 0; i < count; i++) {
        float s = 1.0f / (1.0f + expf(-z[i]));
        d[i] = d[i] * (s * (1.0f + z[i] * (1.0f - s)));
      }
      md_cost_elementwise(cost, elem_bytes, cost_count, 8, 2);
      return;
  }
}
