/*
** loss.c: sparse categorical cross-entropy of one example (md_loss_), with Keras' two input
** conventions. Sums run in double and round once, as tfjs (the golden reference) does.
*/
#include <math.h>

#include "models/modelsInt.h"

double md_loss_logits(const float *z, int c, int y, float scale, float *dz) {
  /* Stable log-softmax: shift by the maximum so no exp overflows. */
  double mx = z[0];
  for (int j = 1; j < c; j++) mx = z[j] > mx ? z[j] : mx;
  double s = 0;
  for (int j = 0; j < c; j++) s += exp(z[j] - mx);
  double lse = mx + log(s);
  if (dz != NULL)
    for (int j = 0; j < c; j++) dz[j] = (float)(scale * (exp(z[j] - lse) - (j == y)));
  return lse - z[y];
}

double md_loss_probs(const float *p, int c, int y, float scale, float *dp) {
  /* Keras' epsilon is the Python float 1e-7; both bounds are rounded to float32 as TF does
  ** when it converts them to the output's dtype. */
  const float lo = 1e-7f, hi = (float)(1.0 - 1e-7);
  double s = 0;
  for (int j = 0; j < c; j++) s += fminf(fmaxf(p[j], lo), hi);
  double py = fminf(fmaxf(p[y], lo), hi);
  /* loss = log(sum_j pc_j) - log(pc_y): dloss/dpc_j = 1/s - [j == y]/pc_y, and the clip passes
  ** the gradient only where it left p unchanged (TF's ClipByValue gradient: lo <= p <= hi). */
  if (dp != NULL)
    for (int j = 0; j < c; j++) {
      int clipped = p[j] < lo || p[j] > hi;
      dp[j] = clipped ? 0.0f : (float)(scale * (1.0 / s - (j == y ? 1.0 / py : 0.0)));
    }
  return log(s) - log(py);
}
