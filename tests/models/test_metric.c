/*
** test_metric.c: Keras's accuracy metrics (models/metric.h) on hand-worked batches: the value of
** each example, the float32 total and count they add, and what `accuracy` resolves to.
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
  float total = 1.0f, count = 1.0f;
  md_metric_update(MD_METRIC_BINARY_ACCURACY, pred, 2, &b, &total, &count);
  assert_true(total == 2.5f && count == 3.0f);
}

/* categorical_accuracy: argmax takes the first of equal maxima, so [0.1, 0.5, 0.5] predicts
** class 1: right against [0, 1, 0], wrong against [0, 0, 1]. */
static void test_categorical_first_maximum(void **state) {
  (void)state;
  static const float pred[6] = {0.1f, 0.5f, 0.5f, 0.1f, 0.5f, 0.5f}, targets[6] = {0, 1, 0, 0, 0, 1};
  md_batch b = {.n = 2, .targets = targets};
  float total = 0.0f, count = 0.0f;
  md_metric_update(MD_METRIC_CATEGORICAL_ACCURACY, pred, 3, &b, &total, &count);
  assert_true(total == 1.0f && count == 2.0f);
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
  float total = 0.0f, count = 0.0f;
  md_metric_update(MD_METRIC_SPARSE_TOP_K_CATEGORICAL_ACCURACY, pred, 6, &b, &total, &count);
  assert_true(total == 2.0f && count == 3.0f);
  total = count = 0.0f;
  md_metric_update(MD_METRIC_SPARSE_CATEGORICAL_ACCURACY, pred, 6, &b, &total, &count);
  assert_true(total == 0.0f && count == 3.0f);
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_binary),
      cmocka_unit_test(test_categorical_first_maximum),
      cmocka_unit_test(test_sparse_top_k),
      cmocka_unit_test(test_accuracy_resolves_as_keras),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
