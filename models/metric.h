/*
** metric.h: Keras's compiled accuracy metrics (keras/src/metrics/accuracy_metrics.py), each a
** MeanMetricWrapper: per example a value in [0, 1], and the metric's state a float32 `total` (the
** values summed) and `count` (examples); its result total / count (0 when count is 0). Per example
** of C outputs p (the last layer's output as the model gives it: logits stay logits, as Keras
** compares them) and its label y (sparse) or targets t (the others):
**   sparse_categorical_accuracy:      argmax(p) == y (the first of equal maxima)
**   categorical_accuracy:             argmax(p) == argmax(t)
**   binary_accuracy:                  mean over the C outputs of ((p > 0.5) == t)
**   top_k_categorical_accuracy:       in_top_k(p, argmax(t), 5): fewer than 5 outputs above p[y]
**   sparse_top_k_categorical_accuracy: the same with y (TF's in_top_k: ties at the boundary count in)
** `accuracy` is what Keras 3's compile makes of it (compile_utils.get_metric): binary_accuracy
** for one output, sparse_categorical_accuracy for a sparse label, else categorical_accuracy.
*/
#ifndef PODSIM_METRIC_H
#define PODSIM_METRIC_H

#include "models/model.h"

typedef enum {
  MD_METRIC_ACCURACY = 0, MD_METRIC_SPARSE_CATEGORICAL_ACCURACY, MD_METRIC_CATEGORICAL_ACCURACY,
  MD_METRIC_BINARY_ACCURACY, MD_METRIC_TOP_K_CATEGORICAL_ACCURACY, MD_METRIC_SPARSE_TOP_K_CATEGORICAL_ACCURACY,
  MD_METRIC_KIND_COUNT
} md_metric_kind;

/* Keras's name of kind (the metrics.csv column). */
const char    *md_metric_name(md_metric_kind kind);
/* `accuracy` under a model of `outputs` outputs whose labels are sparse (or not); other kinds as given. */
md_metric_kind md_metric_resolve(md_metric_kind kind, int outputs, int sparse);
/* Whether kind reads sparse labels (1) or float targets (0); kind resolved. */
int            md_metric_sparse(md_metric_kind kind);
/* One update_state over b (n examples) with pred the n * outputs values: the values summed in
** float32 into *total, n into *count. kind resolved; b->labels or b->targets as it reads. */
void           md_metric_update(md_metric_kind kind, const float *pred, int outputs, const md_batch *b,
                                float *total, float *count);

#endif
