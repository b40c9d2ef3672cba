/*
** test_sharded_variable.c: ShardedVariable(var_list) as sharded_variable.py defines it: its
** checks, shape, conversion to a tensor, writes through the variable API, and embedding_lookup
** one shard at a time by the div rule.
*/
#include "tests/testutil.h"

#include "strategies/core/sharded_variable.h"

/* A plain variable (no strategy in scope) of `rows` x `cols` float32 whose row r holds
** first + r in column 0 and 10 * (first + r) in column 1 (cols >= 2), 0 elsewhere. */
static ds_variable *rows_var(const char *name, int64_t rows, int64_t cols, int first) {
  int64_t shape[2] = { rows, cols };
  md_tensor *t = md_tensor_new(MD_FLOAT32, 2, shape);
  for (int64_t r = 0; r < rows; r++) {
    md_tensor_f32(t)[r * cols] = (float)(first + r);
    md_tensor_f32(t)[r * cols + 1] = 10.0f * (float)(first + r);
  }
  ds_variable_options o = { .name = name, .trainable = -1 };
  ds_status st;
  ds_variable *v = ds_variable_new(t, &o, &st);
  md_tensor_free(t);
  assert_non_null(v);
  return v;
}

/* The 13 x 2 table split by the div rule into 5 shards of 3, 3, 3, 2, 2 rows. */
static ds_sharded_variable *table13(void) {
  const int rows[5] = { 3, 3, 3, 2, 2 };
  ds_variable *parts[5];
  char name[32];
  for (int i = 0, at = 0; i < 5; at += rows[i], i++) {
    snprintf(name, sizeof name, "emb/part_%d", i);
    parts[i] = rows_var(name, rows[i], 2, at);
  }
  ds_status st;
  ds_sharded_variable *sv = ds_sharded_variable_new(parts, 5, "emb", &st);
  assert_non_null(sv);
  return sv;
}

/* Shards [2, 3], [2, 3], [1, 3] make shape [5, 3]; `variables` are the shards in order; the
** conversion is their concatenation (column 0 = 0, 1, 0, 1, 0: each shard counts its own rows);
** inside an "embedding_lookup" name scope the conversion is a TypeError. */
static void shape_and_conversion(void **state) {
  (void)state;
  ds_variable *parts[3] = { rows_var("a", 2, 3, 0), rows_var("b", 2, 3, 0), rows_var("c", 1, 3, 0) };
  ds_status st;
  ds_sharded_variable *sv = ds_sharded_variable_new(parts, 3, NULL, &st);
  assert_non_null(sv);
  assert_string_equal(ds_sharded_variable_name(sv), "ShardedVariable");
  int64_t shape[8];
  assert_int_equal(ds_sharded_variable_shape(sv, shape), 2);
  assert_int_equal(shape[0], 5);
  assert_int_equal(shape[1], 3);
  assert_int_equal(ds_sharded_variable_num_shards(sv), 3);
  assert_ptr_equal(ds_sharded_variable_shard(sv, 2), parts[2]);
  assert_int_equal(ds_sharded_variable_offset(sv, 2), 4);
  md_tensor *t = ds_sharded_variable_to_tensor(sv, "model/dense", &st);
  assert_non_null(t);
  assert_int_equal(t->shape[0], 5);
  const float col0[5] = { 0, 1, 0, 1, 0 };
  for (int r = 0; r < 5; r++) assert_true(md_tensor_f32(t)[r * 3] == col0[r]);
  md_tensor_free(t);
  TU_EXPECT_REFUSED(ds_sharded_variable_to_tensor(sv, "model/embedding_lookup/Read", &st), &st, DS_TYPE_ERROR);
  ds_sharded_variable_free(sv);
}

/* TypeError: no list, an empty one, a None entry (a ShardedVariable as an entry: test_ps_strategy.c,
** where ShardedVariables come from). ValueError:
** float32 beside int32, [2, 3] beside [2, 4], a scalar shard. A refused list stays the caller's. */
static void construction_errors(void **state) {
  (void)state;
  ds_status st;
  ds_variable *a = rows_var("a", 2, 3, 0), *b = rows_var("b", 2, 4, 0), *none[2] = { a, NULL };
  TU_EXPECT_REFUSED(ds_sharded_variable_new(NULL, 2, NULL, &st), &st, DS_TYPE_ERROR);
  TU_EXPECT_REFUSED(ds_sharded_variable_new(&a, 0, NULL, &st), &st, DS_TYPE_ERROR);
  TU_EXPECT_REFUSED(ds_sharded_variable_new(none, 2, NULL, &st), &st, DS_TYPE_ERROR);
  ds_variable *mixed_dims[2] = { a, b };
  TU_EXPECT_REFUSED(ds_sharded_variable_new(mixed_dims, 2, NULL, &st), &st, DS_VALUE_ERROR);
  int64_t shape[2] = { 2, 3 };
  md_tensor *ints = md_tensor_new(MD_INT32, 2, shape), *scalar = md_tensor_scalar_f32(1);
  ds_variable *i32 = ds_variable_new(ints, NULL, &st), *sc = ds_variable_new(scalar, NULL, &st);
  ds_variable *mixed_types[2] = { a, i32 }, *scalars[2] = { sc, sc };
  TU_EXPECT_REFUSED(ds_sharded_variable_new(mixed_types, 2, NULL, &st), &st, DS_VALUE_ERROR);
  TU_EXPECT_REFUSED(ds_sharded_variable_new(scalars, 2, NULL, &st), &st, DS_VALUE_ERROR);
  md_tensor_free(ints);
  md_tensor_free(scalar);
  ds_variable_free(a);
  ds_variable_free(b);
  ds_variable_free(i32);
  ds_variable_free(sc);
}

/* embedding_lookup(emb, [[12, 0], [9, 3]]) on the 13-row table (row r = (r, 10r)): shape
** [2, 2, 2]; ids 0 and 3 fall in shards 0 and 1, 9 in shard 3 (local 0), 12 in shard 4 (local
** 1), shard 2 gets none: rows per shard 1, 1, 0, 1, 1. Row values (12, 120), (0, 0), (9, 90),
** (3, 30). A write to shard 4 is seen by the next lookup. Errors: id 13 and id -1
** (InvalidArgumentError), float ids (TypeError). */
static void embedding_lookup(void **state) {
  (void)state;
  ds_sharded_variable *sv = table13();
  int64_t ids_shape[2] = { 2, 2 }, id_values[4] = { 12, 0, 9, 3 }, rows[5];
  md_tensor *ids = md_tensor_from(MD_INT64, 2, ids_shape, id_values);
  ds_status st;
  md_tensor *out = ds_sharded_variable_embedding_lookup(sv, ids, &st);
  assert_non_null(out);
  assert_int_equal(out->rank, 3);
  assert_int_equal(out->shape[2], 2);
  for (int j = 0; j < 4; j++) {
    assert_true(md_tensor_f32(out)[2 * j] == (float)id_values[j]);
    assert_true(md_tensor_f32(out)[2 * j + 1] == 10.0f * (float)id_values[j]);
  }
  md_tensor_free(out);
  md_tensor *empty = ds_sharded_variable_lookup_begin(sv, ids, rows, &st);
  const int64_t want_rows[5] = { 1, 1, 0, 1, 1 };
  for (int k = 0; k < 5; k++) assert_int_equal(rows[k], want_rows[k]);
  assert_true(md_tensor_f32(empty)[0] == 0.0f);
  md_tensor_free(empty);
  md_tensor_f32(ds_variable_copy(ds_sharded_variable_shard(sv, 4), 0))[2] = -1.0f;
  out = ds_sharded_variable_embedding_lookup(sv, ids, &st);
  assert_true(md_tensor_f32(out)[0] == -1.0f);
  md_tensor_free(out);
  int64_t bad[2] = { 13, -1 };
  for (int k = 0; k < 2; k++) {
    md_tensor *b = md_tensor_vector_i64(1, &bad[k]);
    TU_EXPECT_REFUSED(ds_sharded_variable_embedding_lookup(sv, b, &st), &st, DS_INVALID_ARGUMENT_ERROR);
    md_tensor_free(b);
  }
  md_tensor *f = md_tensor_scalar_f32(1);
  TU_EXPECT_REFUSED(ds_sharded_variable_embedding_lookup(sv, f, &st), &st, DS_TYPE_ERROR);
  md_tensor_free(f);
  md_tensor_free(ids);
  ds_sharded_variable_free(sv);
}

/* Shards that do not follow the div rule ([1, 3] rows of a 4-row variable, where div puts 2 and
** 2): id 1 maps to shard 0's local row 1, which it lacks: InvalidArgumentError, as TF's gather. */
static void non_div_shards(void **state) {
  (void)state;
  ds_variable *parts[2] = { rows_var("a", 1, 2, 0), rows_var("b", 3, 2, 1) };
  ds_status st;
  ds_sharded_variable *sv = ds_sharded_variable_new(parts, 2, "odd", &st);
  int64_t id = 1;
  md_tensor *ids = md_tensor_vector_i64(1, &id);
  TU_EXPECT_REFUSED(ds_sharded_variable_embedding_lookup(sv, ids, &st), &st, DS_INVALID_ARGUMENT_ERROR);
  md_tensor_free(ids);
  ds_sharded_variable_free(sv);
}

/* Shard i's values, row-major, equal want. */
static void expect_shard(const ds_sharded_variable *sv, int i, const float *want, size_t n) {
  md_tensor *t = ds_variable_read(ds_sharded_variable_shard(sv, i), NULL, NULL);
  assert_int_equal(t->size, n);
  for (size_t k = 0; k < n; k++) assert_true(md_tensor_f32(t)[k] == want[k]);
  md_tensor_free(t);
}

/* sharded_variable_test's test_assign, test_assign_add and test_assign_sub: shards of 1, 2 and 1
** rows of 2 zeros; assign([[4 4] [5 5] [6 6] [7 7]]) gives [[4 4]], [[5 5] [6 6]], [[7 7]];
** assign_add([[1 1] [1 1] [2 2] [2 2]]) on zeros gives [[1 1]], [[1 1] [2 2]], [[2 2]] and
** assign_sub the negatives. A value of another shape is a ValueError that writes nothing. */
static void assign_splits_rows_over_shards(void **state) {
  (void)state;
  const float rows4[8] = { 4, 4, 5, 5, 6, 6, 7, 7 }, ones_twos[8] = { 1, 1, 1, 1, 2, 2, 2, 2 };
  md_tensor *assign = md_tensor_from(MD_FLOAT32, 2, (int64_t[]){ 4, 2 }, rows4);
  md_tensor *delta = md_tensor_from(MD_FLOAT32, 2, (int64_t[]){ 4, 2 }, ones_twos);
  md_tensor *wrong = md_tensor_from(MD_FLOAT32, 2, (int64_t[]){ 2, 2 }, rows4);
  for (int op = 0; op < 3; op++) {
    ds_variable *v[3] = { rows_var("v0", 1, 2, 0), rows_var("v1", 2, 2, 0), rows_var("v2", 1, 2, 0) };
    ds_status st;
    ds_sharded_variable *sv = ds_sharded_variable_new(v, 3, "sv", &st);
    assert_non_null(sv);
    const md_tensor *zero = md_tensor_from(MD_FLOAT32, 2, (int64_t[]){ 4, 2 }, (float[8]){ 0 });
    assert_int_equal(ds_sharded_variable_assign(sv, NULL, zero, &st), 0);
    md_tensor_free((md_tensor *)zero);
    assert_int_equal(ds_sharded_variable_assign(sv, NULL, wrong, &st), -1);
    assert_int_equal(st.kind, DS_VALUE_ERROR);
    expect_shard(sv, 0, (float[]){ 0, 0 }, 2);
    float sign = op == 2 ? -1.0f : 1.0f;
    if (op == 0) {
      assert_int_equal(ds_sharded_variable_assign(sv, NULL, assign, &st), 0);
      expect_shard(sv, 0, (float[]){ 4, 4 }, 2);
      expect_shard(sv, 1, (float[]){ 5, 5, 6, 6 }, 4);
      expect_shard(sv, 2, (float[]){ 7, 7 }, 2);
    } else {
      int rc = op == 1 ? ds_sharded_variable_assign_add(sv, NULL, delta, &st)
                       : ds_sharded_variable_assign_sub(sv, NULL, delta, &st);
      assert_int_equal(rc, 0);
      expect_shard(sv, 0, (float[]){ sign, sign }, 2);
      expect_shard(sv, 1, (float[]){ sign, sign, 2 * sign, 2 * sign }, 4);
      expect_shard(sv, 2, (float[]){ 2 * sign, 2 * sign }, 2);
    }
    ds_sharded_variable_free(sv);
  }
  md_tensor_free(assign);
  md_tensor_free(delta);
  md_tensor_free(wrong);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(shape_and_conversion), cmocka_unit_test(construction_errors),
    cmocka_unit_test(embedding_lookup), cmocka_unit_test(non_div_shards),
    cmocka_unit_test(assign_splits_rows_over_shards),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
