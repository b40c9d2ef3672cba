/*
** test_partitioner.c: the partitioners of tf.distribute.experimental.partitioners with the API
** pages' examples and counts worked out from sharded_variable.py, every ValueError, and the
** "div" split with its index decomposition.
*/
#include "tests/testutil.h"

#include "strategies/core/partitioner.h"

/* Calls p on a rank-2 shape along axis 0 and returns shards, checking axis 1 got 1. */
static int64_t shards2(const ds_partitioner *p, int64_t rows, int64_t cols, int64_t elem) {
  int64_t shape[2] = { rows, cols }, parts[2] = { -7, -7 };
  ds_status st;
  assert_int_equal(ds_partitioner_call(p, 2, shape, elem, 0, parts, &st), 0);
  assert_int_equal(parts[1], 1);
  return parts[0];
}

/* FixedShardsPartitioner(num_shards=2)(TensorShape([10, 3]), float32) = [2, 1] (API page);
** with 2 rows and 5 shards min(5, 2) = 2; num_shards 0 is not checked and gives 0. On axis 1
** of [10, 3] with 5 shards: [1, 3]. */
static void fixed_shards(void **state) {
  (void)state;
  ds_partitioner p = ds_fixed_shards_partitioner(2);
  assert_int_equal(shards2(&p, 10, 3, 4), 2);
  p = ds_fixed_shards_partitioner(5);
  assert_int_equal(shards2(&p, 2, 3, 4), 2);
  int64_t shape[2] = { 10, 3 }, parts[2];
  assert_int_equal(ds_partitioner_call(&p, 2, shape, 4, 1, parts, NULL), 0);
  assert_int_equal(parts[0], 1);
  assert_int_equal(parts[1], 3);
  p = ds_fixed_shards_partitioner(0);
  assert_int_equal(shards2(&p, 10, 3, 4), 0);
}

/* MinSizePartitioner, max(1, min(rows, max_shards, ceil(bytes / min_shard_bytes))):
**   API page: min_shard_bytes=4, max_shards=2 on [6, 1] float32: 24 / 4 = 6 -> min(6, 2, 6) = 2.
**   The TF-GNN companion MinSizePartitioner(256 KiB, max_shards=num_ps) with 3 ps, float32:
**     [100000, 64]: 25,600,000 / 262,144 = 97.7 -> 98 -> min(100000, 3, 98) = 3
**     [4096, 64]:    1,048,576 / 262,144 = 4         -> 3
**     [2048, 64]:      524,288 / 262,144 = 2         -> 2
**     [1000, 16]:       64,000 / 262,144 = 0.24 -> 1 -> 1
**     [0, 16]: 0 bytes -> max(1, 0) = 1... but 0 rows on the axis is refused (TF divides by it
**     in MaxSize; podsim refuses it in both).
**   Defaults (256 KiB, max_shards 1): always 1.
**   Strings at 16 bytes: [1000, 20] is 320,000 bytes -> ceil(1.22) = 2 with max_shards 4; with
**   bytes_per_string 4, 80,000 bytes -> 1. */
static void min_size(void **state) {
  (void)state;
  ds_partitioner p;
  ds_status st;
  assert_int_equal(ds_min_size_partitioner(4, 2, 16, &p, &st), 0);
  assert_int_equal(shards2(&p, 6, 1, 4), 2);
  assert_int_equal(ds_min_size_partitioner(DS_MIN_SHARD_BYTES_DEFAULT, 3, 16, &p, &st), 0);
  assert_int_equal(shards2(&p, 100000, 64, 4), 3);
  assert_int_equal(shards2(&p, 4096, 64, 4), 3);
  assert_int_equal(shards2(&p, 2048, 64, 4), 2);
  assert_int_equal(shards2(&p, 1000, 16, 4), 1);
  assert_int_equal(ds_min_size_partitioner(DS_MIN_SHARD_BYTES_DEFAULT, 1, DS_BYTES_PER_STRING_DEFAULT,
                                           &p, &st), 0);
  assert_int_equal(shards2(&p, 100000, 64, 4), 1);
  assert_int_equal(ds_min_size_partitioner(DS_MIN_SHARD_BYTES_DEFAULT, 4, 16, &p, &st), 0);
  assert_int_equal(shards2(&p, 1000, 20, DS_DTYPE_STRING), 2);
  assert_int_equal(ds_min_size_partitioner(DS_MIN_SHARD_BYTES_DEFAULT, 4, 4, &p, &st), 0);
  assert_int_equal(shards2(&p, 1000, 20, DS_DTYPE_STRING), 1);
}

/* MaxSizePartitioner, ceil(rows / max(1, floor(max_shard_bytes / bytes_per_row))):
**   API page: max_shard_bytes=4, max_shards=2 on [6, 1] float32: 4 / 4 = 1 row per shard, 6
**     shards, min(2, 6) = 2; without max_shards, 6.
**   [13, 8] float32 under 100 bytes: 32 bytes a row, 3 rows a shard, ceil(13 / 3) = 5 (the
**     13-rows-into-5 split below).
**   [10, 100] float32 under 100 bytes: a row is 400 bytes, max(1, 0) = 1 row a shard: 10.
**   int64 [1000, 4] under 1 MiB: 32 bytes a row, 32768 rows a shard: 1. */
static void max_size(void **state) {
  (void)state;
  ds_partitioner p;
  ds_status st;
  assert_int_equal(ds_max_size_partitioner(4, 2, 16, &p, &st), 0);
  assert_int_equal(shards2(&p, 6, 1, 4), 2);
  assert_int_equal(ds_max_size_partitioner(4, 0, 16, &p, &st), 0);
  assert_int_equal(shards2(&p, 6, 1, 4), 6);
  assert_int_equal(ds_max_size_partitioner(100, 0, 16, &p, &st), 0);
  assert_int_equal(shards2(&p, 13, 8, 4), 5);
  assert_int_equal(shards2(&p, 10, 100, 4), 10);
  assert_int_equal(ds_max_size_partitioner(1 << 20, 0, 16, &p, &st), 0);
  assert_int_equal(shards2(&p, 1000, 4, 8), 1);
}

/* Every ValueError of the constructors and of __call__. */
static void value_errors(void **state) {
  (void)state;
  ds_partitioner p;
  ds_status st;
  const int64_t bad_min[][3] = { { 0, 1, 16 }, { 1, 0, 16 }, { 1, 1, 0 }, { -5, 1, 16 } };
  for (int i = 0; i < 4; i++) {
    assert_int_equal(ds_min_size_partitioner(bad_min[i][0], bad_min[i][1], bad_min[i][2], &p, &st), -1);
    assert_int_equal(st.kind, DS_VALUE_ERROR);
  }
  const int64_t bad_max[][3] = { { 0, 0, 16 }, { 4, -1, 16 }, { 4, 0, 0 } };
  for (int i = 0; i < 3; i++) {
    assert_int_equal(ds_max_size_partitioner(bad_max[i][0], bad_max[i][1], bad_max[i][2], &p, &st), -1);
    assert_int_equal(st.kind, DS_VALUE_ERROR);
  }
  int64_t shape[2] = { 6, 1 }, unknown[2] = { 6, -1 }, empty[2] = { 0, 4 }, parts[2];
  ds_partitioner all[3] = { ds_fixed_shards_partitioner(2) };
  ds_min_size_partitioner(4, 2, 16, &all[1], &st);
  ds_max_size_partitioner(4, 2, 16, &all[2], &st);
  for (int k = 0; k < 3; k++) {
    st.kind = DS_OK;
    assert_int_equal(ds_partitioner_call(&all[k], 2, shape, 4, 2, parts, &st), -1); /* axis >= rank */
    assert_int_equal(st.kind, DS_VALUE_ERROR);
    assert_int_equal(ds_partitioner_call(&all[k], 2, shape, 4, -1, parts, &st), -1);
    assert_int_equal(st.kind, DS_VALUE_ERROR);
  }
  for (int k = 1; k < 3; k++) { /* the size partitioners need a fully defined, non-empty shape */
    st.kind = DS_OK;
    assert_int_equal(ds_partitioner_call(&all[k], 2, unknown, 4, 0, parts, &st), -1);
    assert_int_equal(st.kind, DS_VALUE_ERROR);
    st.kind = DS_OK;
    assert_int_equal(ds_partitioner_call(&all[k], 2, empty, 4, 0, parts, &st), -1);
    assert_int_equal(st.kind, DS_VALUE_ERROR);
  }
  /* FixedShards only needs the axis' dim. */
  assert_int_equal(ds_partitioner_call(&all[0], 2, unknown, 4, 0, parts, &st), 0);
  assert_int_equal(parts[0], 2);
}

/* 13 rows into 5 shards: base 2, extra 3: 3, 3, 3, 2, 2 rows at offsets 0, 3, 6, 9, 11. Index
** decomposition: partition max(i / 3, (i - 3) / 2), local i % 3 below partition 3, else
** (i - 3) % 2: 0 -> (0, 0), 2 -> (0, 2), 3 -> (1, 0), 8 -> (2, 2), 9 -> (3, 0), 10 -> (3, 1),
** 11 -> (4, 0), 12 -> (4, 1). Every row maps to offset[p] + local == i. */
static void div_split(void **state) {
  (void)state;
  const int64_t rows[5] = { 3, 3, 3, 2, 2 }, offsets[6] = { 0, 3, 6, 9, 11, 13 };
  for (int i = 0; i < 5; i++) {
    assert_int_equal(ds_div_shard_rows(13, 5, i), rows[i]);
    assert_int_equal(ds_div_shard_offset(13, 5, i), offsets[i]);
  }
  assert_int_equal(ds_div_shard_offset(13, 5, 5), 13);
  const int64_t want[][3] = { { 0, 0, 0 }, { 2, 0, 2 }, { 3, 1, 0 }, { 8, 2, 2 }, { 9, 3, 0 },
                              { 10, 3, 1 }, { 11, 4, 0 }, { 12, 4, 1 } };
  for (int k = 0; k < 8; k++) {
    int64_t p, l;
    ds_div_index(13, 5, want[k][0], &p, &l);
    assert_int_equal(p, want[k][1]);
    assert_int_equal(l, want[k][2]);
  }
  for (int64_t i = 0; i < 13; i++) {
    int64_t p, l;
    ds_div_index(13, 5, i, &p, &l);
    assert_int_equal(offsets[p] + l, i);
    assert_true(l < rows[p]);
  }
  /* An even split has no extra: 12 rows into 4 -> 3 each; 7 -> (2, 1). */
  int64_t p, l;
  ds_div_index(12, 4, 7, &p, &l);
  assert_int_equal(p, 2);
  assert_int_equal(l, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(fixed_shards), cmocka_unit_test(min_size), cmocka_unit_test(max_size),
    cmocka_unit_test(value_errors), cmocka_unit_test(div_split),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
