/*
** metric.c: Keras's compiled metrics (metric.h has the formulas).
*/
#include "models/metric.h"

#include <assert.h>
#include <math.h>

#include "models/modelsInt.h"

static const char *const NAMES[MD_METRIC_KIND_COUNT] = {
  "accuracy", "sparse_categorical_accuracy", "categorical_accuracy", "binary_accuracy",
  "top_k_categorical_accuracy", "sparse_top_k_categorical_accuracy", "mean_squared_error",
  "mean_absolute_error", "binary_crossentropy", "categorical_crossentropy",
  "sparse_categorical_crossentropy", "auc"};

/* Keras's top_k_categorical_accuracy default k. */
enum { TOP_K = 5 };

const char *md_metric_name(md_metric_kind kind) { return NAMES[kind]; }

md_metric_kind md_metric_resolve(md_metric_kind kind, int outputs, int sparse) {
  if (kind != MD_METRIC_ACCURACY) return kind;
  if (outputs == 1) return MD_METRIC_BINARY_ACCURACY;
  return sparse ? MD_METRIC_SPARSE_CATEGORICAL_ACCURACY : MD_METRIC_CATEGORICAL_ACCURACY;
}

int md_metric_sparse(md_metric_kind kind) {
  return kind == MD_METRIC_SPARSE_CATEGORICAL_ACCURACY || kind == MD_METRIC_SPARSE_TOP_K_CATEGORICAL_ACCURACY ||
         kind == MD_METRIC_SPARSE_CATEGORICAL_CROSSENTROPY;
}

size_t md_metric_state_size(md_metric_kind kind) { return kind == MD_METRIC_AUC ? MD_METRIC_STATE_MAX : 2; }

/* ops.argmax: the first of equal maxima. */
static int argmax(const float *v, int n) {
  int best = 0;
  for (int j = 1; j < n; j++)
    if (v[j] > v[best]) best = j;
  return best;
}

/* tf.math.in_top_k: class y is in the top k unless k or more outputs are strictly above it. */
static int in_top_k(const float *p, int outputs, int y) {
  int above = 0;
  for (int j = 0; j < outputs; j++) above += p[j] > p[y];
  return above < TOP_K;
}

/* The example's value of a MeanMetricWrapper. */
static float value(md_metric_kind kind, const float *p, int outputs, int label, const float *t) {
  float sum = 0.0f;
  switch (kind) {
    case MD_METRIC_SPARSE_CATEGORICAL_ACCURACY: return argmax(p, outputs) == label ? 1.0f : 0.0f;
    case MD_METRIC_CATEGORICAL_ACCURACY: return argmax(p, outputs) == argmax(t, outputs) ? 1.0f : 0.0f;
    case MD_METRIC_TOP_K_CATEGORICAL_ACCURACY: return in_top_k(p, outputs, argmax(t, outputs)) ? 1.0f : 0.0f;
    case MD_METRIC_SPARSE_TOP_K_CATEGORICAL_ACCURACY: return in_top_k(p, outputs, label) ? 1.0f : 0.0f;
    case MD_METRIC_BINARY_ACCURACY:
      for (int j = 0; j < outputs; j++) sum += (p[j] > 0.5f ? 1.0f : 0.0f) == t[j] ? 1.0f : 0.0f;
      return sum / (float)outputs;
    case MD_METRIC_MEAN_SQUARED_ERROR:
      for (int j = 0; j < outputs; j++) sum += (p[j] - t[j]) * (p[j] - t[j]);
      return sum / (float)outputs;
    case MD_METRIC_MEAN_ABSOLUTE_ERROR:
      for (int j = 0; j < outputs; j++) sum += fabsf(p[j] - t[j]);
      return sum / (float)outputs;
    /* The metrics' cross-entropies read probabilities (from_logits false), as the losses do. */
    case MD_METRIC_BINARY_CROSSENTROPY:
      return (float)md_loss_dense(MD_LOSS_BINARY_CROSSENTROPY, 0, p, t, outputs, 0.0f, NULL);
    case MD_METRIC_CATEGORICAL_CROSSENTROPY:
      return (float)md_loss_dense(MD_LOSS_CATEGORICAL_CROSSENTROPY, 0, p, t, outputs, 0.0f, NULL);
    case MD_METRIC_SPARSE_CATEGORICAL_CROSSENTROPY: return (float)md_loss_probs(p, outputs, label, 0.0f, NULL);
    case MD_METRIC_ACCURACY:
    case MD_METRIC_AUC:
    case MD_METRIC_KIND_COUNT:
      break;
  }
  assert(0 && "accuracy is resolved first; auc is no mean");
  return 0.0f;
}

/* AUC's update: the example's outputs are predictions of their targets (metric.h). Each falls in
** bucket max(ceil(199 p) - 1, 0) (p clipped to [0, 1]), i.e. above thresholds 0..bucket; the
** buckets' true and false labels summed from the top down are tp and fp at each threshold, and
** tn, fn what the labels' totals leave of them. */
static void auc_update(const float *pred, int outputs, const md_batch *b, float *state) {
  enum { T = MD_METRIC_AUC_THRESHOLDS };
  float tp_bucket[T] = {0}, fp_bucket[T] = {0}, trues = 0.0f, falses = 0.0f;
  size_t n = (size_t)b->n * (size_t)outputs;
  for (size_t i = 0; i < n; i++) {
    float p = fminf(fmaxf(pred[i], 0.0f), 1.0f);
    float at = ceilf(p * (float)(T - 1)) - 1.0f;
    int bucket = at > 0.0f ? (int)at : 0;
    int positive = b->targets[i] != 0.0f;
    (positive ? tp_bucket : fp_bucket)[bucket] += 1.0f;
    *(positive ? &trues : &falses) += 1.0f;
  }
  float *tp = state, *fp = state + T, *tn = state + 2 * T, *fn = state + 3 * T;
  float tp_above = 0.0f, fp_above = 0.0f;
  for (int i = T - 1; i >= 0; i--) {
    tp_above += tp_bucket[i];
    fp_above += fp_bucket[i];
    tp[i] += tp_above;
    fp[i] += fp_above;
    tn[i] += falses - fp_above;
    fn[i] += trues - tp_above;
  }
}

void md_metric_update(md_metric_kind kind, const float *pred, int outputs, const md_batch *b, float *state) {
  if (kind == MD_METRIC_AUC) {
    auc_update(pred, outputs, b, state);
    return;
  }
  int sparse = md_metric_sparse(kind);
  float sum = 0.0f;
  for (int i = 0; i < b->n; i++) {
    const float *t = sparse ? NULL : b->targets + (size_t)i * (size_t)outputs;
    sum += value(kind, pred + (size_t)i * (size_t)outputs, outputs, sparse ? b->labels[i] : 0, t);
  }
  state[0] += sum;
  state[1] += (float)b->n;
}

/* ops.divide_no_nan. */
static float divide_no_nan(float a, float b) { return b != 0.0f ? a / b : 0.0f; }

/* ROC AUC by interpolation (metric.h). */
static float auc_result(const float *state) {
  enum { T = MD_METRIC_AUC_THRESHOLDS };
  const float *tp = state, *fp = state + T, *tn = state + 2 * T, *fn = state + 3 * T;
  float auc = 0.0f;
  for (int i = 0; i + 1 < T; i++) {
    float x0 = divide_no_nan(fp[i], fp[i] + tn[i]), x1 = divide_no_nan(fp[i + 1], fp[i + 1] + tn[i + 1]);
    float y0 = divide_no_nan(tp[i], tp[i] + fn[i]), y1 = divide_no_nan(tp[i + 1], tp[i + 1] + fn[i + 1]);
    auc += (x0 - x1) * ((y0 + y1) / 2.0f);
  }
  return auc;
}

float md_metric_result(md_metric_kind kind, const float *state) {
  return kind == MD_METRIC_AUC ? auc_result(state) : divide_no_nan(state[0], state[1]);
}
