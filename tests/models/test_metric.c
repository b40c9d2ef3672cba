/*
** test_metric.c: Keras's compiled metrics (models/metric.h) on hand-worked batches: the value of
** each example, the float32 total and count they add, what `accuracy` resolves to, and AUC's
** confusion counts and area. Cases marked "Keras:" port the keras/src/metrics test files (Keras 3.x,
** as installed in the venv) with the expected value they assert.
*/
#include "tests/testutil.h"

#include "models/metric.h"

/* binary_accuracy, threshold 0.5 on the outputs as given, averaged over an example's outputs:
** [0.7, 0.2] against [1, 1]: 1 and 0, 0.5; [0.5, 0.9] against [0, 1]: 0.5 is not above 0.5, so
** 0 == 0 and 1 == 1, 1.0. Total 1.5 over 2 examples, added to what was there (1, 1). */
static void test_binary(void **state) {
  (void)state;
  static const float pred[4] = {0.7f, 0.2f, 0.5f, 0.9f}, targets[4] = {1, 1, 0, 1};
  md_batch b = {.n = 2, .targets = targets};
  float st[2] = {1.0f, 1.0f};
  md_metric_update(MD_METRIC_BINARY_ACCURACY, pred, 2, &b, st);
  assert_true(st[0] == 2.5f && st[1] == 3.0f);
  assert_float_equal(md_metric_result(MD_METRIC_BINARY_ACCURACY, st), 2.5 / 3.0, 1e-7);
}

/* categorical_accuracy: argmax takes the first of equal maxima, so [0.1, 0.5, 0.5] predicts
** class 1: right against [0, 1, 0], wrong against [0, 0, 1]. */
static void test_categorical_first_maximum(void **state) {
  (void)state;
  static const float pred[6] = {0.1f, 0.5f, 0.5f, 0.1f, 0.5f, 0.5f}, targets[6] = {0, 1, 0, 0, 0, 1};
  md_batch b = {.n = 2, .targets = targets};
  float st[2] = {0.0f, 0.0f};
  md_metric_update(MD_METRIC_CATEGORICAL_ACCURACY, pred, 3, &b, st);
  assert_true(st[0] == 1.0f && st[1] == 2.0f);
}

/* sparse_top_k_categorical_accuracy (k 5) on 6 classes scored 6..1: class 5 (score 1) has 5
** above it, out; class 4 has 4, in. All scores equal: nothing is above class 5, in (TF's
** in_top_k counts ties at the boundary in). The sparse accuracy of the same rows: argmax 0, so
** only a label 0 would count: none here. */
static void test_sparse_top_k(void **state) {
  (void)state;
  static const float pred[18] = {6, 5, 4, 3, 2, 1, 6, 5, 4, 3, 2, 1, 1, 1, 1, 1, 1, 1};
  static const int32_t labels[3] = {5, 4, 5};
  md_batch b = {.n = 3, .labels = labels};
  float st[2] = {0.0f, 0.0f};
  md_metric_update(MD_METRIC_SPARSE_TOP_K_CATEGORICAL_ACCURACY, pred, 6, &b, st);
  assert_true(st[0] == 2.0f && st[1] == 3.0f);
  st[0] = st[1] = 0.0f;
  md_metric_update(MD_METRIC_SPARSE_CATEGORICAL_ACCURACY, pred, 6, &b, st);
  assert_true(st[0] == 0.0f && st[1] == 3.0f);
}

/* Keras 3's compile_utils.get_metric("accuracy"): one output is binary, a sparse label sparse
** categorical, else categorical; the named metrics stay what they are. */
static void test_accuracy_resolves_as_keras(void **state) {
  (void)state;
  assert_int_equal(md_metric_resolve(MD_METRIC_ACCURACY, 1, 0), MD_METRIC_BINARY_ACCURACY);
  assert_int_equal(md_metric_resolve(MD_METRIC_ACCURACY, 4, 1), MD_METRIC_SPARSE_CATEGORICAL_ACCURACY);
  assert_int_equal(md_metric_resolve(MD_METRIC_ACCURACY, 4, 0), MD_METRIC_CATEGORICAL_ACCURACY);
  assert_int_equal(md_metric_resolve(MD_METRIC_BINARY_ACCURACY, 4, 1), MD_METRIC_BINARY_ACCURACY);
  assert_string_equal(md_metric_name(MD_METRIC_TOP_K_CATEGORICAL_ACCURACY), "top_k_categorical_accuracy");
}

/* Keras: regression_metrics_test.py MeanSquaredErrorTest.test_unweighted and
** MeanAbsoluteErrorTest.test_unweighted (0.5 each). 0/1 values, so squared and absolute errors
** agree: the rows differ from their targets in 2, 2, 2 and 4 of 5 places, 0.4, 0.4, 0.4, 0.8,
** whose mean is 0.5; with no examples the result is 0 (divide_no_nan), not NaN. */
static void test_mean_errors(void **state) {
  (void)state;
  static const float targets[20] = {0, 1, 0, 1, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1};
  static const float pred[20] = {0, 0, 1, 1, 0, 1, 1, 1, 1, 1, 0, 1, 0, 1, 0, 1, 1, 1, 1, 1};
  md_batch b = {.n = 4, .targets = targets};
  md_metric_kind kinds[2] = {MD_METRIC_MEAN_SQUARED_ERROR, MD_METRIC_MEAN_ABSOLUTE_ERROR};
  for (int k = 0; k < 2; k++) {
    float st[2] = {0.0f, 0.0f};
    assert_int_equal(md_metric_result(kinds[k], st), 0);
    md_metric_update(kinds[k], pred, 5, &b, st);
    assert_float_equal(st[0], 2.0, 1e-6);
    assert_true(st[1] == 4.0f);
    assert_float_equal(md_metric_result(kinds[k], st), 0.5, 1e-6);
  }
  /* Errors of other sizes part the two: p - t of 0.5 and -2 over one example's 2 outputs is
  ** (0.25 + 4) / 2 = 2.125 squared, (0.5 + 2) / 2 = 1.25 absolute. */
  static const float p2[2] = {1.5f, -1.0f}, t2[2] = {1.0f, 1.0f};
  md_batch one = {.n = 1, .targets = t2};
  float sq[2] = {0}, ab[2] = {0};
  md_metric_update(MD_METRIC_MEAN_SQUARED_ERROR, p2, 2, &one, sq);
  md_metric_update(MD_METRIC_MEAN_ABSOLUTE_ERROR, p2, 2, &one, ab);
  assert_true(sq[0] == 2.125f && ab[0] == 1.25f);
}

/* Keras: probabilistic_metrics_test.py BinaryCrossentropyTest.test_unweighted (3.9855, atol
** 1e-3): the wrong output, t 0 at p 1, clipped to 1 - 1e-7 in float32 (0.99999988), costs
** -log(1.19e-7) = 15.94, over the row's 2 outputs 7.97, over the 2 rows 3.985; and
** SparseCategoricalCrossentropyTest.test_unweighted (1.176): -log 0.95 and -log 0.1, mean 1.1769. */
static void test_crossentropies(void **state) {
  (void)state;
  static const float t[4] = {1, 0, 1, 0}, p[4] = {1, 1, 1, 0};
  md_batch b = {.n = 2, .targets = t};
  float st[2] = {0};
  md_metric_update(MD_METRIC_BINARY_CROSSENTROPY, p, 2, &b, st);
  assert_float_equal(md_metric_result(MD_METRIC_BINARY_CROSSENTROPY, st), 3.9855, 1e-3);
  static const float probs[6] = {0.05f, 0.95f, 0.0f, 0.1f, 0.8f, 0.1f};
  static const int32_t labels[2] = {1, 2};
  md_batch sb = {.n = 2, .labels = labels};
  float ss[2] = {0};
  md_metric_update(MD_METRIC_SPARSE_CATEGORICAL_CROSSENTROPY, probs, 3, &sb, ss);
  assert_float_equal(md_metric_result(MD_METRIC_SPARSE_CATEGORICAL_CROSSENTROPY, ss), 1.176, 1e-3);
  /* categorical_crossentropy on the same rows one-hot: the same 1.1769 (the rows sum to 1). */
  static const float onehot[6] = {0, 1, 0, 0, 0, 1};
  md_batch cb = {.n = 2, .targets = onehot};
  float cs[2] = {0};
  md_metric_update(MD_METRIC_CATEGORICAL_CROSSENTROPY, probs, 3, &cb, cs);
  assert_float_equal(md_metric_result(MD_METRIC_CATEGORICAL_CROSSENTROPY, cs), 1.176, 1e-3);
}

enum { T = MD_METRIC_AUC_THRESHOLDS };

/* Keras: confusion_metrics_test.py AUCTest's data (y_pred [0, 0.5, 0.3, 0.9], y_true
** [0, 0, 1, 1]) under AUC()'s default 200 thresholds (the test's own use 3). Buckets
** max(ceil(199 p) - 1, 0): 0, 99, 59, 179. Threshold 0 (-1e-7): every prediction above, tp 2 fp 2.
** Threshold 60 (0.3015): 0.5 and 0.9 above, tp 1 fp 1, tn 1 fn 1. Threshold 100 (0.5025): 0.9
** alone, tp 1 fp 0, tn 2, fn 1. Threshold 199 (1 + 1e-7): none. The ROC curve through the
** distinct points (1, 1), (0.5, 1), (0.5, 0.5), (0, 0.5), (0, 0) has area 0.75, the pairs a
** positive wins (3 of 4), exact in float32. */
static void test_auc_counts_and_area(void **state) {
  (void)state;
  static const float pred[4] = {0.0f, 0.5f, 0.3f, 0.9f}, t[4] = {0, 0, 1, 1};
  md_batch b = {.n = 4, .targets = t};
  float st[4 * T] = {0};
  assert_int_equal(md_metric_state_size(MD_METRIC_AUC), 4 * T);
  md_metric_update(MD_METRIC_AUC, pred, 1, &b, st);
  const float *tp = st, *fp = st + T, *tn = st + 2 * T, *fn = st + 3 * T;
  assert_true(tp[0] == 2 && fp[0] == 2 && tn[0] == 0 && fn[0] == 0);
  assert_true(tp[59] == 2 && fp[59] == 1);  /* 0.3 > 59/199 = 0.2965 */
  assert_true(tp[60] == 1 && fp[60] == 1 && tn[60] == 1 && fn[60] == 1);
  assert_true(tp[99] == 1 && fp[99] == 1);  /* 0.5 > 99/199 = 0.4975 */
  assert_true(tp[100] == 1 && fp[100] == 0 && tn[100] == 2 && fn[100] == 1);
  assert_true(tp[199] == 0 && fp[199] == 0 && tn[199] == 2 && fn[199] == 2);
  assert_true(md_metric_result(MD_METRIC_AUC, st) == 0.75f);
}

/* Every prediction the same (0.5): the curve is the diagonal, area 0.5; a perfect ranking gives 1;
** no positive label gives recall 0 everywhere, area 0 (divide_no_nan). Several outputs are
** flattened into one list of predictions (not multi_label). */
static void test_auc_edges(void **state) {
  (void)state;
  static const float same[2] = {0.5f, 0.5f}, t[2] = {0, 1};
  md_batch b = {.n = 2, .targets = t};
  float st[4 * T] = {0};
  md_metric_update(MD_METRIC_AUC, same, 1, &b, st);
  assert_true(md_metric_result(MD_METRIC_AUC, st) == 0.5f);
  static const float ranked[4] = {0.1f, 0.8f, 0.2f, 0.9f}, t2[4] = {0, 1, 0, 1};
  md_batch one = {.n = 1, .targets = t2};
  memset(st, 0, sizeof st);
  md_metric_update(MD_METRIC_AUC, ranked, 4, &one, st);
  assert_true(md_metric_result(MD_METRIC_AUC, st) == 1.0f);
  static const float none[2] = {0, 0};
  md_batch neg = {.n = 2, .targets = none};
  memset(st, 0, sizeof st);
  md_metric_update(MD_METRIC_AUC, same, 1, &neg, st);
  assert_true(md_metric_result(MD_METRIC_AUC, st) == 0.0f);
}

/* SyncOnRead SUM: two replicas' states of halves of a batch, summed, are the whole batch's state,
** so their AUC is the single replica's (the counts are small integers: exact in float32). */
static void test_auc_replicas_sum(void **state) {
  (void)state;
  static const float pred[6] = {0.05f, 0.7f, 0.4f, 0.65f, 0.2f, 0.99f}, t[6] = {0, 1, 1, 0, 0, 1};
  md_batch all = {.n = 6, .targets = t}, a = {.n = 3, .targets = t}, b = {.n = 3, .targets = t + 3};
  static float whole[4 * T], r0[4 * T], r1[4 * T];
  md_metric_update(MD_METRIC_AUC, pred, 1, &all, whole);
  md_metric_update(MD_METRIC_AUC, pred, 1, &a, r0);
  md_metric_update(MD_METRIC_AUC, pred + 3, 1, &b, r1);
  for (int i = 0; i < 4 * T; i++) r0[i] += r1[i];
  assert_memory_equal(whole, r0, sizeof whole);
  /* 9 positive-negative pairs, the positive above in 8 (0.4 < 0.65): 8/9. */
  assert_float_equal(md_metric_result(MD_METRIC_AUC, whole), 8.0 / 9.0, 1e-6);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_binary),
      cmocka_unit_test(test_categorical_first_maximum),
      cmocka_unit_test(test_sparse_top_k),
      cmocka_unit_test(test_accuracy_resolves_as_keras),
      cmocka_unit_test(test_mean_errors),
      cmocka_unit_test(test_crossentropies),
      cmocka_unit_test(test_auc_counts_and_area),
      cmocka_unit_test(test_auc_edges),
      cmocka_unit_test(test_auc_replicas_sum),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
