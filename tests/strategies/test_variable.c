/*
** test_variable.c: tf.Variable under a strategy: placement, names, aggregation of writes in
** replica context, SyncOnRead reads, StrategyExtended.update and colocate_vars_with; with the
** OneDeviceStrategy and ReplicaContext examples of TF's API pages.
*/
#include "tests/strategies/dsutil.h"

#include "strategies/core/variable.h"

static ds_variable *make_var(ds_strategy *s, float init, ds_synchronization sync, ds_aggregation agg) {
  ds_status st;
  ds_variable_options o = { .synchronization = sync, .aggregation = agg, .trainable = -1 };
  md_tensor *t = md_tensor_scalar_f32(init);
  assert_int_equal(ds_scope_enter(s, &st), 0);
  ds_variable *v = ds_variable_new(t, &o, &st);
  assert_int_equal(ds_scope_exit(s, &st), 0);
  md_tensor_free(t);
  assert_non_null(v);
  return v;
}

static double copy_value(const ds_variable *v, int i) { return md_tensor_get(ds_variable_copy(v, i), 0); }

/* step_fn(x) = x * 2 */
static int step_fn(ds_rctx *ctx, void *user, md_tensor *const *args, md_tensor **results) {
  (void)ctx;
  (void)user;
  results[0] = md_tensor_copy(args[0]);
  md_tensor_scale(results[0], 2);
  return 0;
}

/* OneDeviceStrategy example: with OneDeviceStrategy("/gpu:0") a variable is placed on
** /job:localhost/replica:0/task:0/device:GPU:0; summing run(step_fn, i) for i in 0..9 gives
** 2 * 45 = 90, each run a plain tensor (one replica). */
static void one_device_example(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  ds_cluster c = du_cluster(1, 1);
  ds_strategy *s = ds_strategy_new(e, DS_ONE_DEVICE, &c, SIM_ALGO_RING);
  ds_variable *v = make_var(s, 1.0f, DS_SYNC_AUTO, DS_AGG_NONE);
  assert_int_equal(ds_variable_kind_of(v), DS_VARIABLE_PLAIN);
  assert_string_equal(ds_variable_device(v, 0), "/job:localhost/replica:0/task:0/device:GPU:0");
  float result = 0;
  for (int i = 0; i < 10; i++) {
    ds_value *in = ds_value_regular(md_tensor_scalar_f32((float)i)), *out = NULL;
    ds_status st;
    assert_int_equal(ds_run(s, step_fn, NULL, 1, &in, 1, &out, &st), 0);
    assert_false(ds_value_is_distributed(out));
    result += (float)du_get(out, 0, 0);
    ds_value_free(in);
    ds_value_free(out);
  }
  assert_true(result == 90.0f);
  ds_variable_free(v);
  ds_strategy_free(s);
  sim_engine_free(e);
}

typedef struct { ds_variable *v; int op; float base; float step; } writer;

/* Replica r writes base + step * r with op 0 assign, 1 assign_add, 2 assign_sub. */
static int write_fn(ds_rctx *ctx, void *user, md_tensor *const *args, md_tensor **results) {
  (void)args;
  (void)results;
  writer *w = user;
  md_tensor *t = md_tensor_scalar_f32(w->base + w->step * (float)ds_rctx_replica_id(ctx));
  int rc = w->op == 0 ? ds_variable_assign(w->v, ctx, t, NULL)
         : w->op == 1 ? ds_variable_assign_add(w->v, ctx, t, NULL)
                      : ds_variable_assign_sub(w->v, ctx, t, NULL);
  md_tensor_free(t);
  return rc;
}

static void run_writes(ds_strategy *s, writer *w) {
  ds_status st;
  assert_int_equal(ds_run(s, write_fn, w, 0, NULL, 0, NULL, &st), 0);
}

/* ReplicaContext._update example: tf.Variable(5.0) under MirroredStrategy(['GPU:0', 'GPU:1']) is
** MirroredVariable {0: 'Variable:0' 5.0, 1: 'Variable/replica_1:0' 5.0}; every replica assigning
** 1.0 leaves both copies at 1.0. With aggregation NONE each replica writes its own copy only:
** replica r assigning 1 + r leaves copies 1 and 2. */
static void mirrored_variable_names_and_local_writes(void **state) {
  du_fixture *f = *state;
  ds_strategy *s = f->s;
  ds_variable *v = make_var(s, 5.0f, DS_SYNC_AUTO, DS_AGG_NONE);
  assert_string_equal(ds_variable_kind_name(ds_variable_kind_of(v)), "MirroredVariable");
  assert_int_equal(ds_variable_num_copies(v), 2);
  assert_string_equal(ds_variable_copy_name(v, 0), "Variable:0");
  assert_string_equal(ds_variable_copy_name(v, 1), "Variable/replica_1:0");
  assert_string_equal(ds_variable_device(v, 1), "/job:localhost/replica:0/task:0/device:GPU:1");
  assert_true(copy_value(v, 0) == 5.0 && copy_value(v, 1) == 5.0);
  writer w = { v, 0, 1.0f, 0.0f };
  run_writes(s, &w);
  assert_true(copy_value(v, 0) == 1.0 && copy_value(v, 1) == 1.0);
  w.step = 1.0f;
  run_writes(s, &w);
  assert_true(copy_value(v, 0) == 1.0 && copy_value(v, 1) == 2.0);
  ds_variable_free(v);
}

/* Aggregated writes in replica context, replica r writing 1 + r (1 and 2): SUM assigns 3 to every
** copy, MEAN 1.5, ONLY_FIRST_REPLICA replica 0's 1; assign_add with SUM to 5 gives 5 + 3 = 8,
** assign_sub with MEAN from 5 gives 5 - 1.5 = 3.5. */
static void mirrored_aggregated_writes(void **state) {
  du_fixture *f = *state;
  ds_strategy *s = f->s;
  const struct { ds_aggregation agg; int op; double want; } cases[] = {
    { DS_AGG_SUM, 0, 3.0 }, { DS_AGG_MEAN, 0, 1.5 }, { DS_AGG_ONLY_FIRST_REPLICA, 0, 1.0 },
    { DS_AGG_SUM, 1, 8.0 }, { DS_AGG_MEAN, 2, 3.5 },
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ds_variable *v = make_var(s, 5.0f, DS_SYNC_ON_WRITE, cases[i].agg);
    writer w = { v, cases[i].op, 1.0f, 1.0f };
    run_writes(s, &w);
    assert_true(copy_value(v, 0) == cases[i].want && copy_value(v, 1) == cases[i].want);
    ds_variable_free(v);
  }
}

static int assign_int(ds_rctx *ctx, void *user, md_tensor *const *args, md_tensor **results) {
  (void)args;
  (void)results;
  int32_t one = 1;
  md_tensor *t = md_tensor_from(MD_INT32, 0, NULL, &one);
  int rc = ds_variable_assign(user, ctx, t, NULL);
  md_tensor_free(t);
  return rc;
}

/* MEAN aggregation of an int32 mirrored variable written in replica context: ValueError. */
static void mirrored_mean_of_integers_fails(void **state) {
  du_fixture *f = *state;
  ds_strategy *s = f->s;
  ds_status st;
  int32_t zero = 0;
  md_tensor *t = md_tensor_from(MD_INT32, 0, NULL, &zero);
  ds_variable_options o = { .aggregation = DS_AGG_MEAN, .trainable = -1 };
  ds_scope_enter(s, &st);
  ds_variable *v = ds_variable_new(t, &o, &st);
  ds_scope_exit(s, &st);
  assert_int_equal(ds_run(s, assign_int, v, 0, NULL, 0, NULL, &st), -1);
  assert_int_equal(st.kind, DS_VALUE_ERROR);
  md_tensor_free(t);
  ds_variable_free(v);
}

/* SyncOnRead: replica r adds 1 + r to its own copy (0 + 1 and 0 + 2). Cross-replica reads
** aggregate: SUM 3, MEAN 1.5, ONLY_FIRST_REPLICA 1, NONE ValueError; in replica context a read is
** the local copy. Cross-replica assign of 10 with SUM puts 10 / 2 = 5 in each copy (so the SUM read
** is 10 again); assign_add with SUM is ValueError; with MEAN it adds to every copy. */
static void sync_on_read_variables(void **state) {
  du_fixture *f = *state;
  ds_strategy *s = f->s;
  const struct { ds_aggregation agg; double want; } reads[] = {
    { DS_AGG_SUM, 3.0 }, { DS_AGG_MEAN, 1.5 }, { DS_AGG_ONLY_FIRST_REPLICA, 1.0 },
  };
  ds_status st;
  for (size_t i = 0; i < 3; i++) {
    ds_variable *v = make_var(s, 0.0f, DS_SYNC_ON_READ, reads[i].agg);
    assert_string_equal(ds_variable_kind_name(ds_variable_kind_of(v)), "SyncOnReadVariable");
    assert_false(ds_variable_trainable(v));
    writer w = { v, 1, 1.0f, 1.0f };
    run_writes(s, &w);
    assert_true(copy_value(v, 0) == 1.0 && copy_value(v, 1) == 2.0);
    md_tensor *r = ds_variable_read(v, NULL, &st);
    assert_true(md_tensor_get(r, 0) == reads[i].want);
    md_tensor_free(r);
    ds_variable_free(v);
  }
  ds_variable *none = make_var(s, 0.0f, DS_SYNC_ON_READ, DS_AGG_NONE);
  assert_null(ds_variable_read(none, NULL, &st));
  assert_int_equal(st.kind, DS_VALUE_ERROR);
  ds_variable *sum = make_var(s, 0.0f, DS_SYNC_ON_READ, DS_AGG_SUM);
  md_tensor *ten = md_tensor_scalar_f32(10);
  assert_int_equal(ds_variable_assign(sum, NULL, ten, &st), 0);
  assert_true(copy_value(sum, 0) == 5.0 && copy_value(sum, 1) == 5.0);
  md_tensor *back = ds_variable_read(sum, NULL, &st);
  assert_true(md_tensor_get(back, 0) == 10.0);
  assert_int_equal(ds_variable_assign_add(sum, NULL, ten, &st), -1);
  assert_int_equal(st.kind, DS_VALUE_ERROR);
  ds_variable *mean = make_var(s, 1.0f, DS_SYNC_ON_READ, DS_AGG_MEAN);
  assert_int_equal(ds_variable_assign_add(mean, NULL, ten, &st), 0);
  assert_true(copy_value(mean, 0) == 11.0 && copy_value(mean, 1) == 11.0);
  md_tensor_free(back);
  md_tensor_free(ten);
  ds_variable_free(none);
  ds_variable_free(sum);
  ds_variable_free(mean);
}

static int read_local(ds_rctx *ctx, void *user, md_tensor *const *args, md_tensor **results) {
  (void)args;
  results[0] = ds_variable_read(user, ctx, NULL);
  return 0;
}

/* A NONE-aggregated mirrored variable whose copies diverged (7 and 9): each replica reads its own
** copy; the cross-replica read is copy 0; a cross-replica assign writes both copies. */
static void mirrored_reads_and_cross_replica_assign(void **state) {
  du_fixture *f = *state;
  ds_strategy *s = f->s;
  ds_variable *v = make_var(s, 0.0f, DS_SYNC_AUTO, DS_AGG_NONE);
  md_tensor_f32(ds_variable_copy(v, 0))[0] = 7;
  md_tensor_f32(ds_variable_copy(v, 1))[0] = 9;
  ds_value *out = NULL;
  ds_status st;
  assert_int_equal(ds_run(s, read_local, v, 0, NULL, 1, &out, &st), 0);
  assert_true(du_get(out, 0, 0) == 7 && du_get(out, 1, 0) == 9);
  md_tensor *r = ds_variable_read(v, NULL, &st);
  assert_true(md_tensor_get(r, 0) == 7);
  md_tensor *four = md_tensor_scalar_f32(4);
  assert_int_equal(ds_variable_assign(v, NULL, four, &st), 0);
  assert_true(copy_value(v, 0) == 4 && copy_value(v, 1) == 4);
  float vec[2] = { 1, 2 };
  md_tensor *wrong = md_tensor_vector_f32(2, vec);
  assert_int_equal(ds_variable_assign(v, NULL, wrong, &st), -1);
  assert_int_equal(st.kind, DS_VALUE_ERROR);
  md_tensor_free(wrong);
  md_tensor_free(four);
  md_tensor_free(r);
  ds_value_free(out);
  ds_variable_free(v);
}

/* Creation: outside any scope a plain variable; synchronization NONE under a mirrored strategy
** is a ValueError. strategy_test_lib._test_trainable_variable: in scope, a variable is trainable
** by default, an ON_READ one not, unless trainable=True is given (TF2 accepts it), and
** trainable=False holds. */
static void creation_rules(void **state) {
  du_fixture *f = *state;
  ds_strategy *s = f->s;
  md_tensor *t = md_tensor_scalar_f32(0);
  ds_status st;
  ds_variable *plain = ds_variable_new(t, NULL, &st);
  assert_int_equal(ds_variable_kind_of(plain), DS_VARIABLE_PLAIN);
  assert_int_equal(ds_variable_num_copies(plain), 1);
  assert_true(ds_variable_trainable(plain));
  ds_scope_enter(s, &st);
  ds_variable_options none = { .synchronization = DS_SYNC_NONE, .trainable = -1 };
  assert_null(ds_variable_new(t, &none, &st));
  assert_int_equal(st.kind, DS_VALUE_ERROR);
  ds_variable_options opts[4] = { { .trainable = -1 },
                                  { .synchronization = DS_SYNC_ON_READ, .trainable = -1 },
                                  { .synchronization = DS_SYNC_ON_READ, .trainable = 1 },
                                  { .synchronization = DS_SYNC_ON_READ, .trainable = 0 } };
  const int trainable[4] = { 1, 0, 1, 0 };
  for (int i = 0; i < 4; i++) {
    ds_variable *v = ds_variable_new(t, &opts[i], &st);
    assert_non_null(v);
    assert_int_equal(ds_variable_trainable(v), trainable[i]);
    ds_variable_free(v);
  }
  ds_scope_exit(s, &st);
  md_tensor_free(t);
  ds_variable_free(plain);
}

static int add_arg(md_tensor *copy, md_tensor *const *args, void *user, ds_status *st) {
  (void)user;
  (void)st;
  md_tensor_add_into(copy, args[0]);
  return 0;
}

/* StrategyExtended.update(v, fn, args): fn on every copy with that copy's component: 5 + 1 and
** 5 + 2; group=False returns a Mirrored of the updated copies. colocate_vars_with(v): a new
** variable takes v's devices. */
static void extended_update_and_colocation(void **state) {
  du_fixture *f = *state;
  ds_strategy *s = f->s;
  ds_variable *v = make_var(s, 5.0f, DS_SYNC_AUTO, DS_AGG_NONE);
  float d[2] = { 1, 2 };
  ds_value *delta = du_per_replica_f32(s, d), *out = NULL;
  ds_status st;
  assert_int_equal(ds_variable_update(v, add_arg, NULL, 1, &delta, &out, &st), 0);
  assert_true(copy_value(v, 0) == 6 && copy_value(v, 1) == 7);
  assert_int_equal(ds_value_kind_of(out), DS_VALUE_MIRRORED);
  assert_true(du_get(out, 1, 0) == 7);
  assert_int_equal(ds_variable_colocate_begin(v, &st), 0);
  ds_variable *w = make_var(s, 0.0f, DS_SYNC_AUTO, DS_AGG_NONE);
  assert_int_equal(ds_variable_colocate_end(&st), 0);
  assert_int_equal(ds_variable_colocate_end(&st), -1);
  assert_string_equal(ds_variable_device(w, 1), ds_variable_device(v, 1));
  ds_value_free(out);
  ds_value_free(delta);
  ds_variable_free(w);
  ds_variable_free(v);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(one_device_example),
    DU_TEST2(mirrored_variable_names_and_local_writes),
    DU_TEST2(mirrored_aggregated_writes),
    DU_TEST2(mirrored_mean_of_integers_fails),
    DU_TEST2(sync_on_read_variables),
    DU_TEST2(mirrored_reads_and_cross_replica_assign),
    DU_TEST2(creation_rules),
    DU_TEST2(extended_update_and_colocation),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
