/*
** metric.c: Keras's accuracy metrics (metric.h has the formulas).
*/
#include "models/metric.h"

#include <assert.h>

static const char *const NAMES[MD_METRIC_KIND_COUNT] = {
  "accuracy", "sparse_categorical_accuracy", "categorical_accuracy", "binary_accuracy",
  "top_k_categorical_accuracy", "sparse_top_k_categorical_accuracy"};

/* Keras's top_k_categorical_accuracy default k. */
enum { TOP_K = 5 };

const char *md_metric_name(md_metric_kind kind) { return NAMES[kind]; }

md_metric_kind md_metric_resolve(md_metric_kind kind, int outputs, int sparse) {
  if (kind != MD_METRIC_ACCURACY) return kind;
  if (outputs == 1) return MD_METRIC_BINARY_ACCURACY;
  return sparse ? MD_METRIC_SPARSE_CATEGORICAL_ACCURACY : MD_METRIC_CATEGORICAL_ACCURACY;
}

int md_metric_sparse(md_metric_kind kind) {
  return kind == MD_METRIC_SPARSE_CATEGORICAL_ACCURACY || kind == MD_METRIC_SPARSE_TOP_K_CATEGORICAL_ACCURACY;
}

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

/* The example's value, in [0, 1]. */
static float value(md_metric_kind kind, const float *p, int outputs, int label, const float *t) {
  switch (kind) {
    case MD_METRIC_SPARSE_CATEGORICAL_ACCURACY: return argmax(p, outputs) == label ? 1.0f : 0.0f;
    case MD_METRIC_CATEGORICAL_ACCURACY: return argmax(p, outputs) == argmax(t, outputs) ? 1.0f : 0.0f;
    case MD_METRIC_TOP_K_CATEGORICAL_ACCURACY: return in_top_k(p, outputs, argmax(t, outputs)) ? 1.0f : 0.0f;
    case MD_METRIC_SPARSE_TOP_K_CATEGORICAL_ACCURACY: return in_top_k(p, outputs, label) ? 1.0f : 0.0f;
    case MD_METRIC_BINARY_ACCURACY: {
      float hits = 0.0f;
      for (int j = 0; j < outputs; j++) hits += (p[j] > 0.5f ? 1.0f : 0.0f) == t[j] ? 1.0f : 0.0f;
      return hits / (float)outputs;
    }
    case MD_METRIC_ACCURACY:
    case MD_METRIC_KIND_COUNT:
      break;
  }
  assert(0 && "accuracy is resolved first");
  return 0.0f;
}

void md_metric_update(md_metric_kind kind, const float *pred, int outputs, const md_batch *b,
                      float *total, float *count) {
  int sparse = md_metric_sparse(kind);
  float sum = 0.0f;
  for (int i = 0; i < b->n; i++) {
    const float *t = sparse ? NULL : b->targets + (size_t)i * (size_t)outputs;
    sum += value(kind, pred + (size_t)i * (size_t)outputs, outputs, sparse ? b->labels[i] : 0, t);
  }
  *total += sum;
  *count += (float)b->n;
}
