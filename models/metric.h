/*
** metric.h: Keras's compiled metrics, each with its state variables as Keras holds them (float32;
** under a strategy each replica's own SyncOnRead SUM variables, summed before a result is read).
**
** The accuracy family (keras/src/metrics/accuracy_metrics.py) and the mean metrics
** (keras/src/metrics/regression_metrics.py, probabilistic_metrics.py) are MeanMetricWrappers:
** per example a value, and the state a `total` (the values summed) and a `count` (examples); the
** result total / count (0 when count is 0). Per example of C outputs p (the last layer's output
** as the model gives it: logits stay logits, as Keras compares them) and its label y (sparse) or
** targets t (the others):
**   sparse_categorical_accuracy:      argmax(p) == y (the first of equal maxima)
**   categorical_accuracy:             argmax(p) == argmax(t)
**   binary_accuracy:                  mean over the C outputs of ((p > 0.5) == t)
**   top_k_categorical_accuracy:       in_top_k(p, argmax(t), 5): fewer than 5 outputs above p[y]
**   sparse_top_k_categorical_accuracy: the same with y (TF's in_top_k: ties at the boundary count in)
**   mean_squared_error:               mean over the C outputs of (p - t)^2
**   mean_absolute_error:              mean over the C outputs of |p - t|
**   binary_crossentropy:              the loss's formula on probabilities (from_logits false, the
**                                     metric's default): mean of -(t log q + (1-t) log(1-q)), q = clip(p)
**   categorical_crossentropy:         -sum t log clip(p / sum p)
**   sparse_categorical_crossentropy:  -log clip(p[y] / sum p)
** `accuracy` is what Keras 3's compile makes of it (compile_utils.get_metric): binary_accuracy
** for one output, sparse_categorical_accuracy for a sparse label, else categorical_accuracy.
**
** `auc` is keras.metrics.AUC() with its defaults (confusion_metrics.py): num_thresholds 200, curve
** ROC, summation_method interpolation, from_logits false. Thresholds i / 199 for i in 1..198,
** with -1e-7 and 1 + 1e-7 at the ends; every output of every example is one prediction (not
** multi_label), clipped to [0, 1], its target cast to bool. The state is 4 x 200 floats:
** true_positives, false_positives, true_negatives, false_negatives per threshold i (a prediction
** is positive at i when it is above threshold i), updated as Keras's evenly distributed path
** does: bucket max(ceil(199 p) - 1, 0) in float32, counts summed from the top bucket down. The
** result: recall = tp / (tp + fn) and fp_rate = fp / (fp + tn) (0 where the denominator is 0),
** sum over i < 199 of (fp_rate[i] - fp_rate[i+1]) (recall[i] + recall[i+1]) / 2.
*/
#ifndef PODSIM_METRIC_H
#define PODSIM_METRIC_H

#include <stddef.h>

#include "models/model.h"

typedef enum {
  MD_METRIC_ACCURACY = 0, MD_METRIC_SPARSE_CATEGORICAL_ACCURACY, MD_METRIC_CATEGORICAL_ACCURACY,
  MD_METRIC_BINARY_ACCURACY, MD_METRIC_TOP_K_CATEGORICAL_ACCURACY, MD_METRIC_SPARSE_TOP_K_CATEGORICAL_ACCURACY,
  MD_METRIC_MEAN_SQUARED_ERROR, MD_METRIC_MEAN_ABSOLUTE_ERROR, MD_METRIC_BINARY_CROSSENTROPY,
  MD_METRIC_CATEGORICAL_CROSSENTROPY, MD_METRIC_SPARSE_CATEGORICAL_CROSSENTROPY, MD_METRIC_AUC,
  MD_METRIC_KIND_COUNT
} md_metric_kind;

/* keras.metrics.AUC's default num_thresholds. */
enum { MD_METRIC_AUC_THRESHOLDS = 200 };
/* The most state floats one metric holds (AUC's four confusion counts per threshold). */
enum { MD_METRIC_STATE_MAX = 4 * MD_METRIC_AUC_THRESHOLDS };

/* Keras's name of kind (the metrics.csv column; `auc` as Keras names AUC()'s logs). */
const char    *md_metric_name(md_metric_kind kind);
/* `accuracy` under a model of `outputs` outputs whose labels are sparse (or not); other kinds as given. */
md_metric_kind md_metric_resolve(md_metric_kind kind, int outputs, int sparse);
/* Whether kind reads sparse labels (1) or float targets (0); kind resolved. */
int            md_metric_sparse(md_metric_kind kind);
/* The floats of kind's state: 2 (total, count) for the mean metrics, 4 x 200 for auc. */
size_t         md_metric_state_size(md_metric_kind kind);
/* One update_state over b (n examples) with pred the n * outputs values, added into state (its
** md_metric_state_size floats; zeros are Keras's reset_state). kind resolved; b->labels or
** b->targets as it reads. */
void           md_metric_update(md_metric_kind kind, const float *pred, int outputs, const md_batch *b,
                                float *state);
/* The metric's result from its state (every replica's summed). */
float          md_metric_result(md_metric_kind kind, const float *state);

#endif
