/*
** test_dataset.c: the tf.data subset, with the results TensorFlow documents for it.
*/
#include "tests/testutil.h"

#include "strategies/input/dataset.h"
#include "strategies/input/inputInt.h"

/* t holds exactly the n values want (any dtype), with n rows. */
static void expect_values(const md_tensor *t, size_t n, const double *want) {
  assert_int_equal(t->size, n);
  for (size_t i = 0; i < n; i++) assert_true(md_tensor_get(t, i) == want[i]);
}

/* Reads the next single-component element and checks it. */
static void expect_next(ds_dataset_iterator *it, size_t n, const double *want) {
  md_tensor *t[1];
  ds_status st;
  ds_status_clear(&st);
  assert_int_equal(ds_dataset_get_next(it, t, &st), 0);
  expect_values(t[0], n, want);
  if (n == 0) assert_int_equal(t[0]->shape[0], 0);
  md_tensor_free(t[0]);
}

static void expect_end(ds_dataset_iterator *it) {
  md_tensor *t[DS_DATASET_MAX_COMPONENTS];
  ds_status st;
  ds_status_clear(&st);
  assert_int_equal(ds_dataset_get_next(it, t, &st), -1);
  assert_int_equal(st.kind, DS_OUT_OF_RANGE_ERROR);
}

/* range(7).batch(3): [0 1 2] [3 4 5] [6], cardinality ceil(7/3) = 3, batch dim unknown (None)
** since the last batch is short; with drop_remainder: two batches, statically shaped [3]. */
static void batch_keeps_or_drops_the_short_batch(void **state) {
  (void)state;
  ds_dataset *r = ds_dataset_range(0, 7, 1, NULL);
  ds_dataset *b = ds_dataset_batch(r, 3, 0, NULL);
  assert_int_equal(ds_dataset_cardinality(b), 3);
  assert_int_equal(ds_dataset_element_spec(b, 0)->dims[0], -1);
  assert_false(ds_dataset_is_statically_shaped(b));
  ds_dataset_iterator *it = ds_dataset_make_iterator(b);
  expect_next(it, 3, (double[]){ 0, 1, 2 });
  expect_next(it, 3, (double[]){ 3, 4, 5 });
  expect_next(it, 1, (double[]){ 6 });
  expect_end(it);
  expect_end(it);  /* the end stays the end */
  ds_dataset_iterator_free(it);
  ds_dataset *d = ds_dataset_batch(r, 3, 1, NULL);
  assert_int_equal(ds_dataset_cardinality(d), 2);
  assert_true(ds_dataset_is_statically_shaped(d));
  it = ds_dataset_make_iterator(d);
  expect_next(it, 3, (double[]){ 0, 1, 2 });
  expect_next(it, 3, (double[]){ 3, 4, 5 });
  expect_end(it);
  ds_dataset_iterator_free(it);
  ds_dataset_free(r);  /* the batches still hold the range */
  ds_dataset_free(b);
  ds_dataset_free(d);
}

/* range(10, 0, -3): 10 7 4 1, cardinality ceil(10/3) = 4. */
static void range_counts_down(void **state) {
  (void)state;
  ds_dataset *r = ds_dataset_range(10, 0, -3, NULL);
  assert_int_equal(ds_dataset_cardinality(r), 4);
  ds_dataset_iterator *it = ds_dataset_make_iterator(r);
  for (int v = 10; v > 0; v -= 3) expect_next(it, 1, (double[]){ v });
  expect_end(it);
  ds_dataset_iterator_free(it);
  ds_dataset_free(r);
}

/* from_tensor_slices((x, y)) with x = [[1 2] [3 4] [5 6]], y = [7 8 9]: element i is (x[i], y[i]);
** shard(2, 1) keeps element 1; take(2).repeat(2) gives elements 0 1 0 1 (cardinality 4). */
static void slices_shard_take_repeat(void **state) {
  (void)state;
  md_tensor *x = md_tensor_from(MD_FLOAT32, 2, (int64_t[]){ 3, 2 }, (float[]){ 1, 2, 3, 4, 5, 6 });
  md_tensor *y = md_tensor_vector_i64(3, (int64_t[]){ 7, 8, 9 });
  ds_dataset *s = ds_dataset_from_tensor_slices(2, (md_tensor *[]){ x, y }, NULL);
  md_tensor_free(x);
  md_tensor_free(y);
  assert_int_equal(ds_dataset_element_spec(s, 0)->rank, 1);
  assert_int_equal(ds_dataset_element_spec(s, 0)->dims[0], 2);
  ds_dataset *sh = ds_dataset_shard(s, 2, 1, NULL);
  assert_int_equal(ds_dataset_cardinality(sh), 1);  /* 3 / 2 + (1 < 3 % 2) */
  ds_dataset_iterator *it = ds_dataset_make_iterator(sh);
  md_tensor *e[2];
  assert_int_equal(ds_dataset_get_next(it, e, NULL), 0);
  expect_values(e[0], 2, (double[]){ 3, 4 });
  expect_values(e[1], 1, (double[]){ 8 });
  md_tensor_free(e[0]);
  md_tensor_free(e[1]);
  expect_end(it);
  ds_dataset_iterator_free(it);
  ds_dataset *t = ds_dataset_take(s, 2), *rep = ds_dataset_repeat(t, 2);
  assert_int_equal(ds_dataset_cardinality(rep), 4);
  it = ds_dataset_make_iterator(rep);
  for (int k = 0; k < 4; k++) {
    assert_int_equal(ds_dataset_get_next(it, e, NULL), 0);
    expect_values(e[1], 1, (double[]){ 7 + k % 2 });
    md_tensor_free(e[0]);
    md_tensor_free(e[1]);
  }
  expect_end(it);
  ds_dataset_iterator_free(it);
  ds_dataset_free(s);
  ds_dataset_free(sh);
  ds_dataset_free(t);
  ds_dataset_free(rep);
}

/* An empty dataset repeated forever ends at once (cardinality 0); a non-empty one is infinite. */
static void repeat_of_nothing_ends(void **state) {
  (void)state;
  ds_dataset *e = ds_dataset_range(0, 0, 1, NULL), *re = ds_dataset_repeat(e, -1);
  assert_int_equal(ds_dataset_cardinality(re), 0);
  ds_dataset_iterator *it = ds_dataset_make_iterator(re);
  expect_end(it);
  ds_dataset_iterator_free(it);
  ds_dataset *r = ds_dataset_range(0, 2, 1, NULL), *rr = ds_dataset_repeat(r, -1);
  assert_int_equal(ds_dataset_cardinality(rr), DS_DATASET_INFINITE);
  it = ds_dataset_make_iterator(rr);
  for (int k = 0; k < 5; k++) expect_next(it, 1, (double[]){ k % 2 });
  ds_dataset_iterator_free(it);
  ds_dataset_free(e);
  ds_dataset_free(re);
  ds_dataset_free(r);
  ds_dataset_free(rr);
}

/* tf.data.Dataset.rebatch's documented examples: range(8).batch(4).rebatch([2, 1, 1]) gives
** [0 1] [2] [3] [4 5] [6] [7]; range(16).batch(4).rebatch([6]) gives [0..5] [6..11] [12..15]
** (a batch made of several input batches, and a short last one). */
static void rebatch_documented_examples(void **state) {
  (void)state;
  ds_dataset *r = ds_dataset_range(0, 8, 1, NULL), *b = ds_dataset_batch(r, 4, 0, NULL);
  ds_dataset *rb = ds_dataset_rebatch(b, 3, (int64_t[]){ 2, 1, 1 }, 0, NULL);
  ds_dataset_iterator *it = ds_dataset_make_iterator(rb);
  expect_next(it, 2, (double[]){ 0, 1 });
  expect_next(it, 1, (double[]){ 2 });
  expect_next(it, 1, (double[]){ 3 });
  expect_next(it, 2, (double[]){ 4, 5 });
  expect_next(it, 1, (double[]){ 6 });
  expect_next(it, 1, (double[]){ 7 });
  expect_end(it);
  ds_dataset_iterator_free(it);
  ds_dataset *r16 = ds_dataset_range(0, 16, 1, NULL), *b16 = ds_dataset_batch(r16, 4, 0, NULL);
  ds_dataset *six = ds_dataset_rebatch(b16, 1, (int64_t[]){ 6 }, 0, NULL);
  it = ds_dataset_make_iterator(six);
  expect_next(it, 6, (double[]){ 0, 1, 2, 3, 4, 5 });
  expect_next(it, 6, (double[]){ 6, 7, 8, 9, 10, 11 });
  expect_next(it, 4, (double[]){ 12, 13, 14, 15 });
  expect_end(it);
  ds_dataset_iterator_free(it);
  ds_dataset_free(r);
  ds_dataset_free(b);
  ds_dataset_free(rb);
  ds_dataset_free(r16);
  ds_dataset_free(b16);
  ds_dataset_free(six);
}

/* Sizes 1 1 1 0 over range(6).batch(3): [0] [1] [2] [] [3] [4] [5] [], then the end. A size-0
** entry asks nothing of the input, so it is an empty batch even after the last row; the end
** comes from the next size-1 entry, which finds the input exhausted. */
static void rebatch_zero_size_is_an_empty_batch(void **state) {
  (void)state;
  ds_dataset *r = ds_dataset_range(0, 6, 1, NULL), *b = ds_dataset_batch(r, 3, 0, NULL);
  ds_dataset *rb = ds_dataset_rebatch(b, 4, (int64_t[]){ 1, 1, 1, 0 }, 0, NULL);
  ds_dataset_iterator *it = ds_dataset_make_iterator(rb);
  for (int v = 0; v < 3; v++) expect_next(it, 1, (double[]){ v });
  expect_next(it, 0, NULL);
  for (int v = 3; v < 6; v++) expect_next(it, 1, (double[]){ v });
  expect_next(it, 0, NULL);
  expect_end(it);
  ds_dataset_iterator_free(it);
  ds_dataset_free(r);
  ds_dataset_free(b);
  ds_dataset_free(rb);
}

/* _LegacyRebatchDataset's documented example: range(8).batch(4) over 3 replicas, ceil(4/3) = 2
** rows a slice: [0 1] [2 3] [] [4 5] [6 7] []. */
static void legacy_rebatch_documented_example(void **state) {
  (void)state;
  ds_dataset *r = ds_dataset_range(0, 8, 1, NULL), *b = ds_dataset_batch(r, 4, 0, NULL);
  ds_dataset *lr = ds_dataset_legacy_rebatch(b, 3, NULL);
  assert_int_equal(ds_dataset_cardinality(lr), 6);
  ds_dataset_iterator *it = ds_dataset_make_iterator(lr);
  expect_next(it, 2, (double[]){ 0, 1 });
  expect_next(it, 2, (double[]){ 2, 3 });
  expect_next(it, 0, NULL);
  expect_next(it, 2, (double[]){ 4, 5 });
  expect_next(it, 2, (double[]){ 6, 7 });
  expect_next(it, 0, NULL);
  expect_end(it);
  ds_dataset_iterator_free(it);
  ds_dataset_free(r);
  ds_dataset_free(b);
  ds_dataset_free(lr);
}

/* unbatch undoes batch: range(5).batch(2).unbatch() gives 0 1 2 3 4. */
static void unbatch_restores_elements(void **state) {
  (void)state;
  ds_dataset *r = ds_dataset_range(0, 5, 1, NULL), *b = ds_dataset_batch(r, 2, 0, NULL);
  ds_dataset *u = ds_dataset_unbatch(b, NULL);
  assert_int_equal(ds_dataset_element_spec(u, 0)->rank, 0);
  ds_dataset_iterator *it = ds_dataset_make_iterator(u);
  for (int v = 0; v < 5; v++) expect_next(it, 1, (double[]){ v });
  expect_end(it);
  ds_dataset_iterator_free(it);
  ds_dataset_free(r);
  ds_dataset_free(b);
  ds_dataset_free(u);
}

static int double_it(md_tensor *const *in, int n_in, md_tensor **out, int n_out, void *user,
                     ds_status *st) {
  (void)n_in; (void)n_out; (void)user; (void)st;
  out[0] = md_tensor_copy(in[0]);
  for (size_t i = 0; i < out[0]->size; i++) md_tensor_i64(out[0])[i] *= 2;
  return 0;
}

static int to_float(md_tensor *const *in, int n_in, md_tensor **out, int n_out, void *user,
                    ds_status *st) {
  (void)n_in; (void)n_out; (void)user; (void)st;
  out[0] = md_tensor_scalar_f32((float)md_tensor_get(in[0], 0));
  return 0;
}

/* map(x * 2) over range(3): 0 2 4. A function whose output is not its declared spec (float
** where int64 is declared) is an InvalidArgumentError when the element is made. */
static void map_applies_and_checks_its_spec(void **state) {
  (void)state;
  ds_dataset *r = ds_dataset_range(0, 3, 1, NULL), *m = ds_dataset_map(r, double_it, NULL, 1,
                                                                         NULL, NULL);
  ds_dataset_iterator *it = ds_dataset_make_iterator(m);
  for (int v = 0; v < 3; v++) expect_next(it, 1, (double[]){ 2 * v });
  expect_end(it);
  ds_dataset_iterator_free(it);
  ds_dataset *bad = ds_dataset_map(r, to_float, NULL, 1, NULL, NULL);
  it = ds_dataset_make_iterator(bad);
  md_tensor *e[1];
  ds_status st;
  ds_status_clear(&st);
  assert_int_equal(ds_dataset_get_next(it, e, &st), -1);
  assert_int_equal(st.kind, DS_INVALID_ARGUMENT_ERROR);
  ds_dataset_iterator_free(it);
  ds_dataset_free(r);
  ds_dataset_free(m);
  ds_dataset_free(bad);
}

/* A reader of files a (rows 0 1 2) and b (rows 10 11) yields 0 1 2 10 11, cardinality unknown. */
static void files_are_read_in_order(void **state) {
  (void)state;
  md_tensor *a = md_tensor_vector_i64(3, (int64_t[]){ 0, 1, 2 });
  md_tensor *b = md_tensor_vector_i64(2, (int64_t[]){ 10, 11 });
  ds_dataset *f = ds_dataset_from_files(2, (const char *[]){ "a", "b" }, 1,
                                        (md_tensor *[]){ a, b }, NULL);
  assert_int_equal(ds_dataset_cardinality(f), DS_DATASET_UNKNOWN);
  ds_dataset_iterator *it = ds_dataset_make_iterator(f);
  for (int i = 0; i < 5; i++) expect_next(it, 1, (double[]){ i < 3 ? i : 7 + i });
  expect_end(it);
  ds_dataset_iterator_free(it);
  char buf[128];
  assert_string_equal(ds_dataset_describe(f, buf, sizeof buf), "files(a, b)");
  md_tensor_free(a);
  md_tensor_free(b);
  ds_dataset_free(f);
}

/* compute_batch_size: 4 through prefetch after batch(4); -1 after a map (it may change the
** batch), and -1 for unbatched scalars. */
static void batch_size_inference(void **state) {
  (void)state;
  ds_dataset *r = ds_dataset_range(0, 10, 1, NULL), *b = ds_dataset_batch(r, 4, 0, NULL);
  ds_dataset *p = ds_dataset_prefetch(b, 2, NULL);
  ds_dataset *m = ds_dataset_map(b, double_it, NULL, 1, (ds_tensor_spec[]){
                                   { .dtype = MD_INT64, .rank = 1, .dims = { -1 } } }, NULL);
  assert_int_equal(ds_dataset_compute_batch_size(p), 4);
  assert_int_equal(ds_dataset_compute_batch_size(m), -1);
  assert_int_equal(ds_dataset_compute_batch_size(r), -1);
  char buf[128];
  assert_string_equal(ds_dataset_describe(p, buf, sizeof buf),
                      "range(0, 10, 1) -> batch(4) -> prefetch(2)");
  ds_dataset_free(r);
  ds_dataset_free(b);
  ds_dataset_free(p);
  ds_dataset_free(m);
}

/* Reads n int64 scalars (or the end, -1) of it into v. */
static void take_scalars(ds_dataset_iterator *it, int n, int64_t *v) {
  for (int i = 0; i < n; i++) {
    md_tensor *t[1];
    ds_status st;
    ds_status_clear(&st);
    v[i] = ds_dataset_get_next(it, t, &st) == 0 ? (int64_t)md_tensor_get(t[0], 0) : -1;
    if (v[i] >= 0) md_tensor_free(t[0]);
  }
}

/* range(8).shuffle(1) is range(8): a one-slot buffer always hands out the element it was just
** given. */
static void shuffle_with_one_slot_keeps_the_order(void **state) {
  (void)state;
  ds_dataset *r = ds_dataset_range(0, 8, 1, NULL), *s = ds_dataset_shuffle(r, 1, 7, 1, NULL);
  assert_int_equal(ds_dataset_cardinality(s), 8);
  ds_dataset_iterator *it = ds_dataset_make_iterator(s);
  for (int v = 0; v < 8; v++) expect_next(it, 1, (double[]){ v });
  expect_end(it);
  ds_dataset_iterator_free(it);
  ds_dataset_free(r);
  ds_dataset_free(s);
}

/* range(20).shuffle(4): a permutation in which output i is one of inputs 0..i+3 (the buffer
** holds the next 4), the same for the same seed; with repeat(2) and reshuffle_each_iteration
** the second epoch has an order of its own, without it the same one. */
static void shuffle_is_a_bounded_seeded_permutation(void **state) {
  (void)state;
  ds_dataset *r = ds_dataset_range(0, 20, 1, NULL);
  int64_t a[41], b[41];
  for (int reshuffle = 0; reshuffle < 2; reshuffle++) {
    ds_dataset *s = ds_dataset_shuffle(r, 4, 7, reshuffle, NULL), *rep = ds_dataset_repeat(s, 2);
    ds_dataset *again = ds_dataset_shuffle(r, 4, 7, reshuffle, NULL);
    ds_dataset_iterator *it = ds_dataset_make_iterator(rep), *it2 = ds_dataset_make_iterator(again);
    take_scalars(it, 41, a);
    take_scalars(it2, 20, b);
    assert_int_equal(a[40], -1);  /* two epochs of 20, then the end */
    assert_memory_equal(a, b, 20 * sizeof *a);  /* a fresh dataset with the same seed */
    for (int e = 0; e < 2; e++) {
      int seen[20] = {0};
      for (int i = 0; i < 20; i++) {
        int64_t v = a[e * 20 + i];
        assert_true(v >= 0 && v < 20 && v <= i + 3);
        seen[v]++;
      }
      for (int v = 0; v < 20; v++) assert_int_equal(seen[v], 1);
    }
    int same = memcmp(a, a + 20, 20 * sizeof *a) == 0;
    assert_int_equal(same, !reshuffle);
    ds_dataset_iterator_free(it);
    ds_dataset_iterator_free(it2);
    ds_dataset_free(s);
    ds_dataset_free(rep);
    ds_dataset_free(again);
  }
  ds_dataset_free(r);
}

/* A full buffer makes every order equally likely: over 4000 seeds the first element of
** range(4).shuffle(4) is each value about 1000 times; chi-square with 3 degrees of freedom stays
** under 16.27 (p = 0.001) for a uniform draw. */
static void shuffle_draws_uniformly(void **state) {
  (void)state;
  ds_dataset *r = ds_dataset_range(0, 4, 1, NULL);
  int count[4] = {0};
  for (uint64_t seed = 0; seed < 4000; seed++) {
    ds_dataset *s = ds_dataset_shuffle(r, 4, seed, 1, NULL);
    ds_dataset_iterator *it = ds_dataset_make_iterator(s);
    int64_t first;
    take_scalars(it, 1, &first);
    count[first]++;
    ds_dataset_iterator_free(it);
    ds_dataset_free(s);
  }
  double chi2 = 0;
  for (int v = 0; v < 4; v++) chi2 += (count[v] - 1000.0) * (count[v] - 1000.0) / 1000.0;
  assert_true(chi2 < 16.27);
  ds_dataset_free(r);
}

/* Each argument TF refuses, with its exception kind. */
static void bad_arguments_are_tf_errors(void **state) {
  (void)state;
  ds_status st;
  ds_status_clear(&st);
  TU_EXPECT_REFUSED(ds_dataset_range(0, 5, 0, &st), &st, DS_INVALID_ARGUMENT_ERROR);
  ds_dataset *r = ds_dataset_range(0, 5, 1, NULL);
  ds_status_clear(&st);
  TU_EXPECT_REFUSED(ds_dataset_batch(r, 0, 0, &st), &st, DS_INVALID_ARGUMENT_ERROR);
  ds_status_clear(&st);
  TU_EXPECT_REFUSED(ds_dataset_shard(r, 2, 2, &st), &st, DS_INVALID_ARGUMENT_ERROR);
  ds_status_clear(&st);
  TU_EXPECT_REFUSED(ds_dataset_prefetch(r, -2, &st), &st, DS_INVALID_ARGUMENT_ERROR);
  ds_status_clear(&st);
  TU_EXPECT_REFUSED(ds_dataset_shuffle(r, 0, 1, 1, &st), &st, DS_INVALID_ARGUMENT_ERROR);
  ds_status_clear(&st);
  TU_EXPECT_REFUSED(ds_dataset_unbatch(r, &st), &st, DS_VALUE_ERROR);
  ds_status_clear(&st);
  TU_EXPECT_REFUSED(ds_dataset_legacy_rebatch(r, 2, &st), &st, DS_VALUE_ERROR);
  md_tensor *x = md_tensor_vector_i64(3, (int64_t[]){ 1, 2, 3 });
  md_tensor *y = md_tensor_vector_i64(2, (int64_t[]){ 1, 2 });
  md_tensor *s = md_tensor_scalar_f32(1);
  ds_status_clear(&st);
  TU_EXPECT_REFUSED(ds_dataset_from_tensor_slices(2, (md_tensor *[]){ x, y }, &st), &st, DS_VALUE_ERROR);
  ds_status_clear(&st);
  TU_EXPECT_REFUSED(ds_dataset_from_tensor_slices(1, &s, &st), &st, DS_VALUE_ERROR);
  md_tensor_free(x);
  md_tensor_free(y);
  md_tensor_free(s);
  ds_dataset_free(r);
}

/* The first element of shard index of range(n) split num_shards ways by the auto-shard rewrite:
** 0 and its value, or -1 with st set. */
static int first_auto_shard_element(int64_t n, int64_t num_shards, int64_t index, double *value,
                                    ds_status *st) {
  ds_dataset *r = ds_dataset_range(0, n, 1, NULL);
  ds_dataset *sh = ds__dataset_shard_data(r, num_shards, index);
  ds_dataset_iterator *it = ds_dataset_make_iterator(sh);
  md_tensor *t[1];
  ds_status_clear(st);
  int rc = ds_dataset_get_next(it, t, st);
  if (rc == 0) {
    *value = md_tensor_get(t[0], 0);
    md_tensor_free(t[0]);
  }
  ds_dataset_iterator_free(it);
  ds_dataset_free(sh);
  ds_dataset_free(r);
  return rc;
}

/* TF's testShardOutOfRange (auto_shard_dataset_test.py): _AutoShardDataset(range(5), 10, 0)
** raises InvalidArgumentError. A range has no reader, so the rewrite shards its data, with
** require_non_empty: shard 0 takes element 0, then skips the 9 others of its first round and
** runs out after 4 of them. Shard 4 takes element 4 and runs out at once; shard 7 skips past the
** end before it has an element, so it is merely empty. testShardOutOfRangeEmptyDataset:
** range(0) is OutOfRangeError. With 10 elements every shard gets one: shard 3 gives 3. A shard the
** user writes (ds_dataset_shard) has no such check: range(5).shard(10, 0) gives 0. */
static void auto_shard_out_of_range(void **state) {
  (void)state;
  ds_status st;
  double v = -1;
  assert_int_equal(first_auto_shard_element(5, 10, 0, &v, &st), -1);
  assert_int_equal(st.kind, DS_INVALID_ARGUMENT_ERROR);
  assert_non_null(strstr(st.message, "only has 5 file(s), which is not enough for the required 10"));
  assert_int_equal(first_auto_shard_element(5, 10, 4, &v, &st), -1);
  assert_int_equal(st.kind, DS_INVALID_ARGUMENT_ERROR);
  assert_int_equal(first_auto_shard_element(5, 10, 7, &v, &st), -1);
  assert_int_equal(st.kind, DS_OUT_OF_RANGE_ERROR);
  assert_int_equal(first_auto_shard_element(0, 10, 0, &v, &st), -1);
  assert_int_equal(st.kind, DS_OUT_OF_RANGE_ERROR);
  assert_int_equal(first_auto_shard_element(10, 10, 3, &v, &st), 0);
  assert_true(v == 3);
  ds_dataset *r = ds_dataset_range(0, 5, 1, NULL), *sh = ds_dataset_shard(r, 10, 0, NULL);
  ds_dataset_iterator *it = ds_dataset_make_iterator(sh);
  expect_next(it, 1, (double[]){ 0 });
  expect_end(it);
  ds_dataset_iterator_free(it);
  ds_dataset_free(sh);
  ds_dataset_free(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(batch_keeps_or_drops_the_short_batch),
    cmocka_unit_test(range_counts_down),
    cmocka_unit_test(slices_shard_take_repeat),
    cmocka_unit_test(auto_shard_out_of_range),
    cmocka_unit_test(repeat_of_nothing_ends),
    cmocka_unit_test(rebatch_documented_examples),
    cmocka_unit_test(rebatch_zero_size_is_an_empty_batch),
    cmocka_unit_test(legacy_rebatch_documented_example),
    cmocka_unit_test(unbatch_restores_elements),
    cmocka_unit_test(map_applies_and_checks_its_spec),
    cmocka_unit_test(files_are_read_in_order),
    cmocka_unit_test(batch_size_inference),
    cmocka_unit_test(shuffle_with_one_slot_keeps_the_order),
    cmocka_unit_test(shuffle_is_a_bounded_seeded_permutation),
    cmocka_unit_test(shuffle_draws_uniformly),
    cmocka_unit_test(bad_arguments_are_tf_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
