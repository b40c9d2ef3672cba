/*
** batch_normalization.c: Keras's BatchNormalization over the last axis
** (md_batch_normalization_ops), center and scale on. Variables gamma (ones), beta (zeros),
** moving_mean (zeros) and moving_variance (ones), the last two not trainable.
**   training (a train step): each channel is normalised by the mean and biased variance of its
**     values over the replica's batch (every example and position), as md_norm_forward, and the
**     moving statistics move toward them: moving -= (moving - batch) (1 - momentum);
**   evaluation: z = x inv + (beta - moving_mean inv), inv = gamma / sqrt(moving_variance + eps),
**     as tf.nn.batch_normalization computes it.
** Keras's defaults: momentum 0.99, epsilon 1e-3.
** synchronized (Keras's BatchNormalization(synchronized=True), tf.keras's SyncBatchNormalization),
** a train step as Keras 3's moments(synchronized=True) on TensorFlow (_compute_moments_sync)
** under a replica context: each channel's local sum, sum of squares (in double, rounded to
** float32) and count of values (examples x positions) all-reduced over the replicas, one after
** another (three all-reduces, not batched, for NCCL's ordering), then in float32 mean = sum / M,
** var = max(sum_sq / M - mean^2, 0) (M the global count), and tf.nn.batch_normalization:
** inv = rsqrt(var + eps) gamma, z = x inv + (beta - mean inv). tf.keras 2's
** _calculate_mean_and_var reduces the batch size (one float) and leaves out the max, which only
** matters where rounding makes sum_sq / M - mean^2 negative. The backward is TF's gradient of
** that graph: each replica's partial derivatives with respect to its local sum and sum of squares
** (d sum = (d mean + d var (-2 mean)) / M, d sum_sq = d var / M, d var = -1/2 gamma
** (var + eps)^-3/2 sum(g (x - mean)) where the max passes it (0 where it clamped), d mean = -inv
** sum g), all-reduced as the all-reduce's gradient is, then dx = g inv + d sum + 2 x d sum_sq;
** gamma's and beta's gradients stay the replica's own (the gradient all-reduce sums them).
** Reading the model's input (no dx), the backward all-reduces nothing: TF differentiates only
** toward the trainable variables.
**
** Invariants:
**   1. Not synchronized, the statistics are the replica's own (Keras's BatchNormalization under a
**      strategy): a model normalises the batch it is given. Synchronized without an all-reduce
**      (one replica, a parameter server's worker) the sums are the replica's own too.
**   2. The moving variance moves toward the biased batch variance, as Keras 3's layer and tfjs do
**      (tf.keras 2's fused kernel, used for 4-D inputs, moves it toward the unbiased one, n/(n-1)
**      times larger).
**   3. 1 - momentum is computed in double and rounded to float, as Keras converts Python's decay;
**      the update runs in float.
**   4. Synchronized, every replica issues the same all-reduces (model.c invariant 10): a replica
**      with no examples adds zeros and moves its moving statistics as the others do; a
**      shapes-only model issues them from the cost op, timed, with no values.
*/
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/modelsInt.h"

static int channels(const md_layer *l) { return l->in_shape.dim[l->in_shape.rank - 1]; }

static int bn_shape(md_layer *l, md_error *err) {
  if (l->spec.epsilon == 0.0f) l->spec.epsilon = 1e-3f;
  if (l->spec.momentum == 0.0f) l->spec.momentum = 0.99f;
  if (!(l->spec.epsilon > 0.0f) || !(l->spec.momentum > 0.0f && l->spec.momentum < 1.0f))
    return md_error_set(err, 0, 0, "batch_normalization needs epsilon > 0 and momentum in (0, 1) (got %g, %g)",
                        (double)l->spec.epsilon, (double)l->spec.momentum);
  if (md_layer_check_last_axis(l, err)) return -1;
  l->out_shape = l->in_shape;
  l->kept = l->spec.synchronized ? 5 * channels(l) : 0;  /* mean, variance, M; d sum, d sum_sq */
  l->cross_replica = l->spec.synchronized;
  return 0;
}

/* n floats summed over the replicas in place (none without an all-reduce); buf NULL: timed only. */
static void sum_replicas(const md_layer_run *r, float *buf, size_t n) {
  if (r->all_reduce) r->all_reduce(r->all_reduce_ctx, buf, n);
}

/* A synchronized train step's forward: the sums all-reduced in r->kept and turned there into
** the global statistics (mean, sum_sq / M - mean^2 before the max, M: what the backward reads),
** the moving statistics moved toward them, z normalised by them. Nothing is allocated across the
** all-reduces: a fault that stops the replica inside one leaves nothing behind. */
static void sync_forward(const md_layer *l, const md_layer_run *r, float decay) {
  int c = channels(l);
  size_t rows = (size_t)r->n * (l->in / c);
  float *mean = r->kept, *var = r->kept + c, *count = r->kept + 2 * c;
  for (int ch = 0; ch < c; ch++) {
    double s = 0, s2 = 0;
    for (size_t i = 0; i < rows; i++) {
      float x = r->x[i * c + ch];
      s += x;
      s2 += x * x;
    }
    mean[ch] = (float)s;
    var[ch] = (float)s2;
    count[ch] = (float)rows;
  }
  sum_replicas(r, mean, (size_t)c);
  sum_replicas(r, var, (size_t)c);
  sum_replicas(r, count, (size_t)c);
  const float *gamma = r->vars[l->var[0]].data, *beta = r->vars[l->var[1]].data;
  float *moving_mean = r->state[l->var[2]].data, *moving_var = r->state[l->var[3]].data;
  for (int ch = 0; ch < c; ch++) {
    assert(count[ch] > 0);  /* a step runs while some replica has examples */
    mean[ch] /= count[ch];
    var[ch] = var[ch] / count[ch] - mean[ch] * mean[ch];
    float v = fmaxf(var[ch], 0.0f);
    float inv = (float)(1.0 / sqrt((double)(v + l->spec.epsilon))) * gamma[ch];
    float shift = beta[ch] - mean[ch] * inv;
    for (size_t i = 0; i < rows; i++) r->z[i * c + ch] = r->x[i * c + ch] * inv + shift;
    moving_mean[ch] -= (moving_mean[ch] - mean[ch]) * decay;
    moving_var[ch] -= (moving_var[ch] - v) * decay;
  }
}

/* Its backward (the design notes' gradient of TF's graph): gamma's and beta's gradients and, with
** has_dx, the sums' gradients all-reduced in r->kept (after the statistics) and dx. */
static void sync_backward(const md_layer *l, const md_layer_run *r) {
  int c = channels(l);
  size_t rows = (size_t)r->n * (l->in / c);
  const float *gamma = r->vars[l->var[0]].data, *mean = r->kept, *var = r->kept + c, *count = r->kept + 2 * c;
  float *d_sum = r->kept + 3 * c, *d_sum_sq = d_sum + c;
  float *dgamma = r->grads->g[l->var[0]], *dbeta = r->grads->g[l->var[1]];
  for (int ch = 0; ch < c; ch++) {
    float ve = fmaxf(var[ch], 0.0f) + l->spec.epsilon, rstd = (float)(1.0 / sqrt((double)ve));
    double g_sum = 0, g_centred = 0;
    for (size_t i = 0; i < rows; i++) {
      float g = r->dz[i * c + ch];
      g_sum += g;
      g_centred += (double)g * (double)(r->x[i * c + ch] - mean[ch]);
    }
    dgamma[ch] = (float)(g_centred * rstd);
    dbeta[ch] = (float)g_sum;
    /* tf.maximum's gradient goes to its first input where it is >= the second. */
    float d_var = var[ch] >= 0.0f ? (float)g_centred * gamma[ch] * -0.5f * (rstd / ve) : 0.0f;
    float d_mean = -(rstd * gamma[ch]) * (float)g_sum + d_var * (-2.0f * mean[ch]);
    d_sum[ch] = d_mean / count[ch];
    d_sum_sq[ch] = d_var / count[ch];
  }
  if (!r->has_dx) return;
  sum_replicas(r, d_sum, (size_t)c);
  sum_replicas(r, d_sum_sq, (size_t)c);
  for (int ch = 0; ch < c; ch++) {
    float inv = (float)(1.0 / sqrt((double)(fmaxf(var[ch], 0.0f) + l->spec.epsilon))) * gamma[ch];
    for (size_t i = 0; i < rows; i++)
      r->dx[i * c + ch] = r->dz[i * c + ch] * inv + d_sum[ch] + d_sum_sq[ch] * (2.0f * r->x[i * c + ch]);
  }
}

static void bn_variables(md_layer *l, md_model *m) {
  static const char *const names[4] = {"gamma", "beta", "moving_mean", "moving_variance"};
  int64_t shape[1] = {channels(l)};
  for (int i = 0; i < 4; i++) {
    l->var[l->nvars++] = md_model_add_var(m, l->name, names[i], 1, shape);
    if (i >= 2) md_model_var(m, l->var[i])->trainable = 0;
  }
}

static void bn_init(const md_layer *l, md_var *vars, gsl_rng *rng) {
  (void)rng;
  for (int i = 0; i < 4; i += 3)
    for (size_t j = 0; j < vars[l->var[i]].size; j++) vars[l->var[i]].data[j] = 1.0f;
}

static void bn_forward(const md_layer *l, const md_layer_run *r) {
  int c = channels(l);
  size_t rows = (size_t)r->n * (l->in / c);
  const float *gamma = r->vars[l->var[0]].data, *beta = r->vars[l->var[1]].data;
  const float *mm = r->vars[l->var[2]].data, *mv = r->vars[l->var[3]].data;
  if (!r->training) {
    for (int ch = 0; ch < c; ch++) {
      float inv = (float)(1.0 / sqrt((double)mv[ch] + l->spec.epsilon)) * gamma[ch];
      float shift = beta[ch] - mm[ch] * inv;
      for (size_t i = 0; i < rows; i++) r->z[i * c + ch] = r->x[i * c + ch] * inv + shift;
    }
    return;
  }
  float decay = (float)(1.0 - (double)l->spec.momentum);
  if (l->spec.synchronized) {
    sync_forward(l, r, decay);
    return;
  }
  float *moving_mean = r->state[l->var[2]].data, *moving_var = r->state[l->var[3]].data;
  for (int ch = 0; ch < c; ch++) {
    double mean, var;
    md_norm_forward(r->x + ch, c, rows, l->spec.epsilon, gamma + ch, beta + ch, 0, r->z + ch, &mean, &var);
    moving_mean[ch] -= (moving_mean[ch] - (float)mean) * decay;
    moving_var[ch] -= (moving_var[ch] - (float)var) * decay;
  }
}

static void bn_backward(const md_layer *l, const md_layer_run *r) {
  int c = channels(l);
  size_t rows = (size_t)r->n * (l->in / c);
  for (int i = 2; i < 4; i++) memset(r->grads->g[l->var[i]], 0, sizeof(float) * (size_t)c);
  if (l->spec.synchronized) {
    sync_backward(l, r);
    return;
  }
  double *sums = base_xrealloc(NULL, sizeof(double) * 2 * (size_t)c);  /* dgamma, dbeta */
  for (int j = 0; j < 2 * c; j++) sums[j] = 0;
  for (int ch = 0; ch < c; ch++)
    md_norm_backward(r->x + ch, r->dz + ch, c, rows, l->spec.epsilon, r->vars[l->var[0]].data + ch, 0,
                     sums + ch, sums + c + ch, r->has_dx ? r->dx + ch : NULL);
  md_norm_gradients(l, r, sums, c);
  free(sums);
}

/* A shapes-only synchronized train step's all-reduces, which the math issues with numerics
** (invariant 4): the same collectives, timed alone. */
static void sync_timed(const md_layer *l, const md_layer_run *r, md_pass pass) {
  if (!l->spec.synchronized || !r->shapes_only || r->all_reduce == NULL) return;
  if (pass == MD_PASS_BACKWARD && !r->has_dx) return;
  size_t c = (size_t)channels(l);
  for (int k = 0; k < (pass == MD_PASS_FORWARD ? 3 : 2); k++) sum_replicas(r, NULL, c);
}

/* Training as layer normalisation's (8 FLOPs an element forward, 12 backward) plus the moving
** statistics' update (4 FLOPs a channel, reading and writing both); evaluation 2 FLOPs an
** element, reading x and writing z. */
static void bn_cost(const md_layer *l, const md_layer_run *r, md_pass pass, md_cost *cost) {
  double count = (double)r->n * l->in, c = channels(l);
  sync_timed(l, r, pass);
  if (pass == MD_PASS_BACKWARD) {
    md_cost_normalize(cost, r->act_bytes, count, 12, 2, MD_REDUCE_BATCH);
    return;
  }
  if (!r->training) {
    md_cost_elementwise(cost, r->act_bytes, count, 2, 1);
    return;
  }
  md_cost_normalize(cost, r->act_bytes, count, 8, 1, MD_REDUCE_BATCH);
  /* the moving statistics, float32 variables updated in place: 2 FLOPs an element, read and written */
  md_cost moving = {.flops = 2.0 * 2.0 * c, .bytes_moved = 4.0 * 2.0 * c * 2.0, .elementwise = 1,
                    .out_bytes = 4.0 * 2.0 * c, .in_place = 1};
  md_cost_add(cost, &moving);
}

const md_layer_ops md_batch_normalization_ops = {
  .keras_name = "batch_normalization", .reads_ids = 0, .has_activation = 0, .float32_variables = 1,
  .shape = bn_shape,
  .variables = bn_variables, .init = bn_init, .forward = bn_forward,
  .backward = bn_backward, .cost = bn_cost,
};
