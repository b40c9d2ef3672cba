/*
** test_tpu_v1.c: tf.contrib.distribute.TPUStrategy (TF 1.12-1.14): towers, the seed page's
** merge_call example, reduce with destinations, variables, run_steps_on_dataset with
** MultiStepContext, steps_per_run as an on-device loop in simulated time, and every error.
*/
#include "tests/strategies/dsutil.h"

#include "strategies/tpu/tpu_v1.h"

/* The simulated device cores run at the catalogue's peak (v4: 275e12 FLOP/s per chip device). */
static const ds_tpu_machine MACHINE = { 1200e9, 275e12, 0, 1e12, {0} };

typedef struct fixture {
  sim_engine *e;          /* the engine */
  ds_tpu_resolver *r;     /* TPUClusterResolver(tpu) */
  ds_tpu_v1 *v;           /* the strategy */
} fixture;

static ds_tpu_v1 *build_with(fixture *f, const char *tpu, const char *slice, ds_tpu_v1_options o,
                             ds_status *st) {
  f->e = sim_engine_new();
  f->r = ds_tpu_resolver_new(tpu, slice, NULL, NULL);
  assert_non_null(f->r);
  f->v = ds_tpu_v1_new(f->e, f->r, &o, &MACHINE, SIM_ALGO_TORUS, st);
  return f->v;
}

static void build(fixture *f, const char *slice, int steps_per_run) {
  ds_tpu_v1_options o = ds_tpu_v1_options_default();
  o.steps_per_run = steps_per_run;
  ds_status st;
  assert_non_null(build_with(f, "", slice, o, &st));
}

static void destroy(fixture *f) {
  ds_tpu_v1_free(f->v);
  ds_tpu_resolver_free(f->r);
  sim_engine_free(f->e);
}

/* cmocka fixtures: the strategy on a slice, with steps_per_run None or 3. */
static int setup(void **state, const char *slice, int steps_per_run) {
  fixture *f = calloc(1, sizeof *f);
  build(f, slice, steps_per_run);
  *state = f;
  return 0;
}
static int setup_v2_8(void **state) { return setup(state, "v2-8", 0); }
static int setup_v3_8(void **state) { return setup(state, "v3-8", 0); }
static int setup_v4_8(void **state) { return setup(state, "v4-8", 0); }
static int setup_v4_8_three_steps(void **state) { return setup(state, "v4-8", 3); }
/* TPUStrategy(resolver, num_cores=3) on a v3-8. */
static int setup_three_cores(void **state) {
  fixture *f = calloc(1, sizeof *f);
  ds_tpu_v1_options o = ds_tpu_v1_options_default();
  o.num_cores = 3;
  assert_non_null(build_with(f, "", "v3-8", o, NULL));
  *state = f;
  return 0;
}
static int teardown(void **state) {
  destroy(*state);
  free(*state);
  return 0;
}

/* A PerReplica of float scalars over the towers. */
static ds_value *per_tower(const ds_tpu_v1 *v, const float *values) {
  return du_per_replica_f32(ds_tpu_v1_strategy(v), values);
}

/* ---- towers and properties ------------------------------------------------------------------ */

/* TPUStrategy(TPUClusterResolver(""), steps_per_run=None) on a v3-8: one host with 8 TensorCores,
** so num_towers 8 (auto-detected), steps_per_run 1; TF1's fixed properties; host 0's CPU is
** "/job:worker/task:0/device:CPU:0" (the master is a grpc address, the job "worker"); the
** resolver was only queried, not initialized. */
static void towers_and_properties(void **state) {
  fixture *f = *state;
  ds_strategy *s = ds_tpu_v1_strategy(f->v);
  assert_int_equal(ds_strategy_kind(s), DS_TPU_V1);
  assert_string_equal(ds_kind_name(DS_TPU_V1), "tpu_v1");
  assert_int_equal(ds_tpu_v1_num_towers(f->v), 8);
  assert_int_equal(ds_num_replicas_in_sync(s), 8);
  assert_false(ds_tpu_v1_is_single_tower(f->v));
  assert_int_equal(ds_tpu_v1_steps_per_run(f->v), 1);
  assert_int_equal(ds_tpu_v1_num_hosts(f->v), 1);
  assert_int_equal(ds_tpu_v1_num_towers_per_host(f->v), 8);
  assert_int_equal(ds_tpu_v1_between_graph(f->v), 0);
  assert_int_equal(ds_tpu_v1_should_init(f->v), 1);
  assert_int_equal(ds_tpu_v1_should_checkpoint(f->v), 1);
  assert_int_equal(ds_tpu_v1_should_save_summary(f->v), 1);
  const char *dev[8], *par[8];
  assert_int_equal(ds_tpu_v1_worker_devices(f->v, dev, 8), 8);
  assert_int_equal(ds_tpu_v1_parameter_devices(f->v, par, 8), 8);
  assert_string_equal(dev[3], "/job:worker/replica:0/task:0/device:TPU:3");
  assert_string_equal(par[3], dev[3]);
  assert_string_equal(ds_tpu_v1_non_slot_devices(f->v), "/job:worker/task:0/device:CPU:0");
  ds_tpu_v1_session_config cfg = {0};
  ds_tpu_v1_configure(f->v, &cfg);
  assert_int_equal(cfg.isolate_session_state, 1);
  assert_string_equal(cfg.cluster_job, "worker");
  assert_int_equal(cfg.cluster_tasks, 1);
  assert_false(ds_tpu_resolver_initialized(f->r));
}

/* tpu="local": the master is "", so get_host_cpu_device drops the job
** ("/replica:0/task:0/device:CPU:0") and configure copies no cluster spec. */
static void local_master_has_no_job(void **state) {
  (void)state;
  fixture f;
  ds_status st;
  assert_non_null(build_with(&f, "local", "v2-8", ds_tpu_v1_options_default(), &st));
  char buf[96];
  assert_string_equal(ds_tpu_v1_host_cpu_device(f.v, 0, buf, sizeof buf), "/replica:0/task:0/device:CPU:0");
  ds_tpu_v1_session_config cfg = {0};
  ds_tpu_v1_configure(f.v, &cfg);
  assert_string_equal(cfg.cluster_job, "");
  assert_int_equal(cfg.cluster_tasks, 0);
  destroy(&f);
}

/* TF1 sorts its TPU device names: on a v3-128 (16 hosts of 8 cores) tower 16 is task 10's TPU:0,
** since "task:10" sorts before "task:2"; host 3's CPU is "/job:worker/task:3/device:CPU:0". */
static void towers_follow_sorted_device_names(void **state) {
  (void)state;
  fixture f;
  build(&f, "v3-128", 0);
  assert_int_equal(ds_tpu_v1_num_towers(f.v), 128);
  assert_int_equal(ds_tpu_v1_num_hosts(f.v), 16);
  const char *dev[128];
  ds_tpu_v1_worker_devices(f.v, dev, 128);
  assert_string_equal(dev[15], "/job:worker/replica:0/task:1/device:TPU:7");
  assert_string_equal(dev[16], "/job:worker/replica:0/task:10/device:TPU:0");
  assert_string_equal(dev[127], "/job:worker/replica:0/task:9/device:TPU:7");
  char buf[96];
  assert_string_equal(ds_tpu_v1_host_cpu_device(f.v, 3, buf, sizeof buf), "/job:worker/task:3/device:CPU:0");
  destroy(&f);
}

/* num_cores=2 keeps the first two sorted devices; a single tower is single-tower. The errors:
** more cores than the system's 8, a negative count, steps_per_run < 0, no resolver. No options at
** all auto-detect the 8 cores. */
static void num_cores_override_and_its_checks(void **state) {
  (void)state;
  fixture f;
  ds_status st;
  ds_tpu_v1_options o = ds_tpu_v1_options_default();
  o.num_cores = 2;
  assert_non_null(build_with(&f, "", "v3-8", o, &st));
  assert_int_equal(ds_tpu_v1_num_towers(f.v), 2);
  assert_string_equal(ds_replica_device(ds_tpu_v1_strategy(f.v), 1), "/job:worker/replica:0/task:0/device:TPU:1");
  ds_tpu_v1_free(f.v);
  o.num_cores = 1;
  f.v = ds_tpu_v1_new(f.e, f.r, &o, &MACHINE, SIM_ALGO_RING, &st);
  assert_true(ds_tpu_v1_is_single_tower(f.v));
  ds_tpu_v1_free(f.v);
  f.v = NULL;
  o.num_cores = 9;
  TU_EXPECT_REFUSED(ds_tpu_v1_new(f.e, f.r, &o, &MACHINE, SIM_ALGO_RING, &st), &st, DS_VALUE_ERROR);
  o.num_cores = -1;
  TU_EXPECT_REFUSED(ds_tpu_v1_new(f.e, f.r, &o, &MACHINE, SIM_ALGO_RING, &st), &st, DS_VALUE_ERROR);
  o.num_cores = 0;
  o.steps_per_run = -1;
  TU_EXPECT_REFUSED(ds_tpu_v1_new(f.e, f.r, &o, &MACHINE, SIM_ALGO_RING, &st), &st, DS_VALUE_ERROR);
  o.steps_per_run = 0;
  TU_EXPECT_REFUSED(ds_tpu_v1_new(f.e, NULL, &o, &MACHINE, SIM_ALGO_RING, &st), &st, DS_VALUE_ERROR);
  f.v = ds_tpu_v1_new(f.e, f.r, NULL, &MACHINE, SIM_ALGO_RING, &st);  /* no options: TF's defaults */
  assert_int_equal(ds_tpu_v1_num_towers(f.v), 8);
  destroy(&f);
}

/* initialize/finalize: initialize_system and shutdown_system in graph mode; with eager
** execution both raise NotImplementedError("Eager mode not supported in TPUStrategy."). */
static void initialize_and_finalize(void **state) {
  (void)state;
  fixture f;
  ds_status st;
  build(&f, "v2-8", 0);
  assert_int_equal(ds_tpu_v1_initialize(f.v, &st), 0);
  assert_true(ds_tpu_v1_system_initialized(f.v));
  assert_int_equal(ds_tpu_v1_finalize(f.v, &st), 0);
  assert_false(ds_tpu_v1_system_initialized(f.v));
  destroy(&f);
  ds_tpu_v1_options o = ds_tpu_v1_options_default();
  o.executing_eagerly = 1;
  assert_non_null(build_with(&f, "", "v2-8", o, &st));
  assert_int_equal(ds_tpu_v1_initialize(f.v, &st), -1);
  assert_int_equal(st.kind, DS_NOT_IMPLEMENTED_ERROR);
  assert_string_equal(st.message, "Eager mode not supported in TPUStrategy.");
  assert_int_equal(ds_tpu_v1_finalize(f.v, &st), -1);
  assert_int_equal(st.kind, DS_NOT_IMPLEMENTED_ERROR);
  destroy(&f);
}

/* ---- the seed page's merge_call example ----------------------------------------------------- */

/* merge_fn(distribution, three_plus_tower_id): sum(distribution.unwrap(three_plus_tower_id)). */
static int sum_of_towers(ds_strategy *s, void *user, ds_value *const *args, ds_value **results,
                         ds_status *st) {
  (void)s;
  (void)user;
  (void)st;
  md_tensor *parts[8];
  int n = ds_tpu_v1_unwrap(args[0], parts, 8);
  md_tensor *sum = md_tensor_copy(parts[0]);
  for (int i = 1; i < n; i++) md_tensor_add_into(sum, parts[i]);
  results[0] = ds_value_regular(sum);
  return 0;
}

/* fn(three): v = three + tower_id; s = merge_call(merge_fn, v); return s + v. */
static int three_plus_tower_id(ds_rctx *c, void *user, md_tensor *const *args, md_tensor **results) {
  (void)user;
  md_tensor *v = md_tensor_copy(args[0]);
  md_tensor_f32(v)[0] += (float)ds_rctx_replica_id(c);
  md_tensor *s = NULL;
  ds_rctx_merge_call(c, sum_of_towers, NULL, 1, &v, 1, &s);
  md_tensor_add_into(s, v);
  md_tensor_free(v);
  results[0] = s;
  return 0;
}

/* call_for_each_tower(fn, 3) on 8 towers: v = 3, 4, ..., 10, merge_fn's sum is
** 3 * 8 + (0 + 1 + ... + 7) = 24 + 28 = 52, and unwrap(merged_results) "prints a list":
** [52 + 3, 52 + 4, ..., 52 + 10] = [55, 56, 57, 58, 59, 60, 61, 62]. */
static void merge_call_tower_example(void **state) {
  fixture *f = *state;
  ds_status st;
  ds_value *three = ds_value_regular(md_tensor_scalar_f32(3.0f)), *merged = NULL;
  assert_int_equal(ds_tpu_v1_call_for_each_tower(f->v, three_plus_tower_id, NULL, 1, &three, 1, &merged, &st), 0);
  md_tensor *list[8];
  assert_int_equal(ds_tpu_v1_unwrap(merged, list, 8), 8);
  for (int i = 0; i < 8; i++) assert_true(md_tensor_get(list[i], 0) == 55.0 + i);
  ds_value_free(merged);
  ds_value_free(three);
}

/* ---- reduce, broadcast, unwrap ------------------------------------------------------------- */

/* Towers hold 1..8. reduce to host 0's CPU (named canonically or not): SUM 36; MEAN is
** 36 * float32(1/8) = 4.5; ONLY_FIRST_TOWER 1. batch_reduce of (value, host) twice: [36, 36].
** unwrap of a PerReplica listed out of device order comes back sorted; of a regular value, itself;
** broadcast leaves the tensor as it is; value_container is the value. */
static void reduce_to_the_host(void **state) {
  fixture *f = *state;
  ds_status st;
  const float ones[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
  ds_value *v = per_tower(f->v, ones);
  const char *host[] = { "/job:worker/task:0/device:CPU:0" }, *spelled[] = { "/job:worker/replica:0/task:0/cpu:0" };
  md_tensor *r = ds_tpu_v1_reduce(f->v, DS_REDUCE_SUM, v, 1, host, &st);
  assert_true(md_tensor_get(r, 0) == 36.0);
  md_tensor_free(r);
  r = ds_tpu_v1_reduce(f->v, DS_REDUCE_MEAN, v, 1, spelled, &st);
  assert_true(md_tensor_get(r, 0) == 4.5);
  md_tensor_free(r);
  r = ds_tpu_v1_reduce(f->v, DS_REDUCE_ONLY_FIRST_REPLICA, v, 1, host, &st);
  assert_true(md_tensor_get(r, 0) == 1.0);
  md_tensor_free(r);
  ds_reduce_pair pairs[2] = { { v, 1, host }, { v, 1, spelled } };
  md_tensor *out[2];
  assert_int_equal(ds_tpu_v1_batch_reduce(f->v, DS_REDUCE_SUM, 2, pairs, out, &st), 0);
  assert_true(md_tensor_get(out[0], 0) == 36.0 && md_tensor_get(out[1], 0) == 36.0);
  md_tensor_free(out[0]);
  md_tensor_free(out[1]);
  md_tensor *parts[2] = { md_tensor_scalar_f32(2), md_tensor_scalar_f32(1) };
  const char *devs[2] = { "/job:worker/replica:0/task:0/device:TPU:1", "/job:worker/replica:0/task:0/device:TPU:0" };
  ds_value *swapped = ds_value_new(DS_VALUE_PER_REPLICA, 2, parts, devs);
  md_tensor *list[2];
  ds_tpu_v1_unwrap(swapped, list, 2);
  assert_true(md_tensor_get(list[0], 0) == 1.0 && md_tensor_get(list[1], 0) == 2.0);
  md_tensor *seven = md_tensor_scalar_f32(7);
  ds_value *b = ds_tpu_v1_broadcast(seven);
  assert_int_equal(ds_value_kind_of(b), DS_VALUE_REGULAR);
  assert_int_equal(ds_tpu_v1_unwrap(b, list, 2), 1);
  assert_true(md_tensor_equal(list[0], seven));
  assert_ptr_equal(ds_tpu_v1_value_container(b), b);
  md_tensor_free(seven);
  ds_value_free(b);
  ds_value_free(swapped);
  ds_value_free(v);
}

/* num_cores=3 towers holding 1, 2, 2: TF1's MEAN is 5 * float32(1/3) = 1.66666675f, one ulp
** above the divide 5 / 3 = 1.66666663f that tf.distribute's reduce (ds_reduce) computes. */
static void mean_multiplies_by_the_reciprocal(void **state) {
  fixture *f = *state;
  ds_status st;
  ds_value *v = per_tower(f->v, (const float[]){ 1, 2, 2 });
  const char *host = ds_tpu_v1_non_slot_devices(f->v);
  md_tensor *tf1 = ds_tpu_v1_reduce(f->v, DS_REDUCE_MEAN, v, 1, &host, &st);
  md_tensor *tf2 = ds_reduce(ds_tpu_v1_strategy(f->v), DS_REDUCE_MEAN, v, DS_AXIS_NONE, &st);
  assert_true(md_tensor_f32(tf1)[0] == 5.0f * (float)(1.0 / 3));
  assert_true(md_tensor_f32(tf2)[0] == 5.0f / 3.0f);
  assert_true(md_tensor_f32(tf1)[0] != md_tensor_f32(tf2)[0]);
  md_tensor_free(tf1);
  md_tensor_free(tf2);
  ds_value_free(v);
}

/* The reduce errors: several destinations ("Multiple devices are not supported for
** TPUStrategy"), none, another host's CPU, components of two shapes (ValueError); MEAN of int32
** (TypeError: TF scales by a float); a batch_reduce whose second pair fails returns nothing. */
static void reduce_errors(void **state) {
  fixture *f = *state;
  ds_status st;
  const float x[8] = {0};
  ds_value *v = per_tower(f->v, x);
  const char *two[] = { "/job:worker/task:0/device:CPU:0", "/job:worker/task:1/device:CPU:0" };
  TU_EXPECT_REFUSED(ds_tpu_v1_reduce(f->v, DS_REDUCE_SUM, v, 2, two, &st), &st, DS_VALUE_ERROR);
  assert_string_equal(st.message, "Multiple devices are not supported for TPUStrategy");
  TU_EXPECT_REFUSED(ds_tpu_v1_reduce(f->v, DS_REDUCE_SUM, v, 0, NULL, &st), &st, DS_VALUE_ERROR);
  TU_EXPECT_REFUSED(ds_tpu_v1_reduce(f->v, DS_REDUCE_SUM, v, 1, two + 1, &st), &st, DS_VALUE_ERROR);
  md_tensor *mixed[2] = { md_tensor_scalar_f32(1), md_tensor_vector_f32(2, (float[]){ 1, 2 }) };
  ds_value *bad = ds_value_new(DS_VALUE_PER_REPLICA, 2, mixed, NULL);
  TU_EXPECT_REFUSED(ds_tpu_v1_reduce(f->v, DS_REDUCE_SUM, bad, 1, two, &st), &st, DS_VALUE_ERROR);
  ds_value *ints = ds_value_regular(md_tensor_vector_i64(1, (int64_t[]){ 3 }));
  TU_EXPECT_REFUSED(ds_tpu_v1_reduce(f->v, DS_REDUCE_MEAN, ints, 1, two, &st), &st, DS_TYPE_ERROR);
  ds_reduce_pair pairs[2] = { { v, 1, two }, { v, 1, two + 1 } };
  md_tensor *out[2] = { NULL, NULL };
  assert_int_equal(ds_tpu_v1_batch_reduce(f->v, DS_REDUCE_SUM, 2, pairs, out, &st), -1);
  assert_int_equal(st.kind, DS_VALUE_ERROR);
  ds_value_free(ints);
  ds_value_free(bad);
  ds_value_free(v);
}

typedef struct tower_reduce_case {
  ds_reduce_op op;        /* the aggregation asked for */
  ds_tpu_v1 *cross_tower; /* not NULL: call its cross-tower reduce instead (RuntimeError) */
} tower_reduce_case;

/* Tower i contributes i + 1 to the reduce inside the replicated program. */
static int reduce_in_tower(ds_rctx *c, void *user, md_tensor *const *args, md_tensor **results) {
  (void)args;
  const tower_reduce_case *k = user;
  md_tensor *x = md_tensor_scalar_f32((float)(ds_rctx_replica_id(c) + 1));
  if (k->cross_tower) {
    ds_value *v = ds_value_regular(x);
    const char *host = ds_tpu_v1_non_slot_devices(k->cross_tower);
    results[0] = ds_tpu_v1_reduce(k->cross_tower, k->op, v, 1, &host, ds_rctx_status(c));
    ds_value_free(v);
    return results[0] ? 0 : -1;
  }
  results[0] = ds_tpu_v1_tower_reduce(c, k->op, x);
  md_tensor_free(x);
  return results[0] ? 0 : -1;
}

/* In tower context reduce is cross_replica_sum on the torus: SUM of 1..8 is 36 on every tower;
** MEAN scales first, 0.125 + 0.25 + ... + 1 = 4.5; ONLY_FIRST_TOWER is NotImplementedError
** ("Currently only support sum & mean in TPUStrategy."); the cross-tower reduce from a tower is
** a RuntimeError. */
static void reduce_in_tower_context(void **state) {
  fixture *f = *state;
  ds_status st;
  const struct { tower_reduce_case k; double want; ds_error_kind err; } cases[] = {
    { { DS_REDUCE_SUM, NULL }, 36.0, DS_OK },
    { { DS_REDUCE_MEAN, NULL }, 4.5, DS_OK },
    { { DS_REDUCE_ONLY_FIRST_REPLICA, NULL }, 0, DS_NOT_IMPLEMENTED_ERROR },
    { { DS_REDUCE_SUM, f->v }, 0, DS_RUNTIME_ERROR },
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ds_value *out = NULL;
    int rc = ds_tpu_v1_call_for_each_tower(f->v, reduce_in_tower, (void *)&cases[i].k, 0, NULL, 1, &out, &st);
    assert_int_equal(st.kind, cases[i].err);
    if (cases[i].err != DS_OK) {
      assert_int_equal(rc, -1);
      continue;
    }
    for (int t = 0; t < 8; t++) assert_true(md_tensor_get(ds_value_component(out, t), 0) == cases[i].want);
    ds_value_free(out);
  }
}

/* ---- variables ----------------------------------------------------------------------------- */

static int add_one(md_tensor *copy, md_tensor *const *args, void *user, ds_status *st) {
  (void)args;
  (void)user;
  (void)st;
  md_tensor_f32(copy)[0] += 1.0f;
  return 0;
}

/* Adam's beta1_power, a non-slot variable: beta *= 0.5 on the host, written to every copy. */
static int decay_beta(ds_tpu_v1 *v, void *user, ds_status *st) {
  (void)v;
  ds_variable *beta = user;
  md_tensor *b = ds_variable_read(beta, NULL, st);
  md_tensor_scale(b, 0.5);
  int rc = ds_variable_assign(beta, NULL, b, st);
  md_tensor_free(b);
  return rc;
}

/* In scope a variable is a TPUMirroredVariable with a copy per tower (8 on a v3-8), also inside
** colocate_vars_with (TF1 TPU places every variable on the towers). read_var gives 2; update adds
** 1 to every copy (3); update_non_slot halves beta = 0.9 on every copy (0.45). A plain variable
** made outside the scope: read_var and update raise TypeError; colocate end without a begin is a
** RuntimeError. */
static void variables_on_the_towers(void **state) {
  fixture *f = *state;
  ds_status st;
  ds_strategy *s = ds_tpu_v1_strategy(f->v);
  md_tensor *two = md_tensor_scalar_f32(2), *nine = md_tensor_scalar_f32(0.9f);
  ds_variable *plain = ds_variable_new(two, NULL, &st);
  assert_int_equal(ds_scope_enter(s, &st), 0);
  ds_variable *w = ds_variable_new(two, NULL, &st);
  assert_int_equal(ds_tpu_v1_colocate_vars_with_begin(f->v, w, &st), 0);
  ds_variable *beta = ds_variable_new(nine, NULL, &st);
  assert_int_equal(ds_tpu_v1_colocate_vars_with_end(f->v, &st), 0);
  assert_int_equal(ds_scope_exit(s, &st), 0);
  assert_int_equal(ds_variable_kind_of(w), DS_VARIABLE_MIRRORED);
  assert_int_equal(ds_variable_num_copies(w), 8);
  assert_int_equal(ds_variable_num_copies(beta), 8);
  assert_string_equal(ds_variable_device(beta, 7), "/job:worker/replica:0/task:0/device:TPU:7");
  md_tensor *r = ds_tpu_v1_read_var(f->v, w, &st);
  assert_true(md_tensor_get(r, 0) == 2.0);
  md_tensor_free(r);
  assert_int_equal(ds_tpu_v1_update(f->v, w, add_one, NULL, 0, NULL, NULL, &st), 0);
  for (int i = 0; i < 8; i++) assert_true(md_tensor_get(ds_variable_copy(w, i), 0) == 3.0);
  assert_int_equal(ds_tpu_v1_update_non_slot(f->v, decay_beta, beta, &st), 0);
  for (int i = 0; i < 8; i++) assert_true(md_tensor_get(ds_variable_copy(beta, i), 0) == (double)(0.9f * 0.5f));
  TU_EXPECT_REFUSED(ds_tpu_v1_read_var(f->v, plain, &st), &st, DS_TYPE_ERROR);
  assert_int_equal(ds_tpu_v1_update(f->v, plain, add_one, NULL, 0, NULL, NULL, &st), -1);
  assert_int_equal(st.kind, DS_TYPE_ERROR);
  assert_int_equal(ds_tpu_v1_colocate_vars_with_end(f->v, &st), -1);
  assert_int_equal(st.kind, DS_RUNTIME_ERROR);
  ds_variable_free(beta);
  ds_variable_free(w);
  ds_variable_free(plain);
  md_tensor_free(two);
  md_tensor_free(nine);
}

/* ---- run_steps_on_dataset ------------------------------------------------------------------- */

typedef struct input_spec {
  int64_t elements;       /* scalars 0, 1, ..., elements - 1 */
  int drop_remainder;     /* batch(1, drop_remainder): 0 leaves the batch dimension unknown */
} input_spec;

/* dataset_fn: from_tensor_slices(0..n-1).batch(1): elements of shape [1] holding 0, 1, 2, ... */
static ds_dataset *counting(const ds_input_context *ctx, void *user, ds_status *st) {
  (void)ctx;
  const input_spec *in = user;
  float x[64];
  for (int64_t i = 0; i < in->elements; i++) x[i] = (float)i;
  md_tensor *t = md_tensor_vector_f32((size_t)in->elements, x);
  ds_dataset *slices = ds_dataset_from_tensor_slices(1, &t, st);
  ds_dataset *batched = ds_dataset_batch(slices, 1, in->drop_remainder, st);
  ds_dataset_free(slices);
  md_tensor_free(t);
  return batched;
}

typedef struct step_case {
  ds_aggregation agg;     /* the aggregation of the "extra" output; NONE: no extra output */
  double flops;           /* each step's compute on the tower */
} step_case;

/* One step: the loss is the dequeued value; its SUM and MEAN over towers are last-step
** outputs, the tower id a non-tensor output. */
static int step(ds_tpu_v1_step_context *ctx, ds_rctx *tower, void *user, md_tensor *const *inputs) {
  const step_case *k = user;
  if (k && k->flops > 0 && ds_rctx_exec(tower, k->flops) != SIM_OK) return -1;
  if (ds_tpu_v1_set_last_step_output(ctx, tower, "loss_sum", inputs[0], DS_AGG_SUM) != 0 ||
      ds_tpu_v1_set_last_step_output(ctx, tower, "loss_mean", inputs[0], DS_AGG_MEAN) != 0)
    return -1;
  if (k && k->agg != DS_AGG_SUM) return ds_tpu_v1_set_last_step_output(ctx, tower, "extra", inputs[0], k->agg);
  md_tensor *id = md_tensor_scalar_f32((float)ds_rctx_replica_id(tower));
  int rc = ds_tpu_v1_set_non_tensor_output(ctx, tower, "tower", id);
  md_tensor_free(id);
  return rc;
}

/* v4-8: one host, 4 chips, one tower each. Step k gives tower j element 4k + j. After 3 steps
** the last step's values are 8, 9, 10, 11: loss_sum = 38; loss_mean = 8/4 + 9/4 + 10/4 + 11/4 =
** 2 + 2.25 + 2.5 + 2.75 = 9.5 (each tower scales by 0.25 first); non-tensor "tower" is the
** list [0, 1, 2, 3]; names in the order first set. */
static void last_step_outputs_sum_and_mean(void **state) {
  fixture *f = *state;
  ds_status st;
  input_spec in = { 40, 1 };
  ds_tpu_v1_iterator *it = ds_tpu_v1_distribute_dataset(f->v, counting, &in, &st);
  assert_non_null(it);
  ds_tpu_v1_step_context *ctx = ds_tpu_v1_run_steps_on_dataset(f->v, step, NULL, it,
                                                               ds_tpu_v1_steps_per_run(f->v), &st);
  assert_non_null(ctx);
  assert_int_equal(ds_tpu_v1_num_last_step_outputs(ctx), 2);
  assert_string_equal(ds_tpu_v1_last_step_output_name(ctx, 0), "loss_sum");
  assert_string_equal(ds_tpu_v1_last_step_output_name(ctx, 1), "loss_mean");
  assert_true(md_tensor_get(ds_tpu_v1_last_step_output(ctx, "loss_sum"), 0) == 38.0);
  assert_true(md_tensor_get(ds_tpu_v1_last_step_output(ctx, "loss_mean"), 0) == 9.5);
  assert_null(ds_tpu_v1_last_step_output(ctx, "nothing"));
  assert_int_equal(ds_tpu_v1_num_non_tensor_outputs(ctx), 1);
  assert_string_equal(ds_tpu_v1_non_tensor_output_name(ctx, 0), "tower");
  const ds_value *towers = ds_tpu_v1_non_tensor_output(ctx, "tower");
  assert_int_equal(ds_value_num_components(towers), 4);
  for (int j = 0; j < 4; j++) assert_true(du_get(towers, j, 0) == j);
  assert_null(ds_tpu_v1_non_tensor_output(ctx, "nothing"));
  ds_tpu_v1_step_context_free(ctx);
  ds_tpu_v1_iterator_free(it);
}

/* The loop's errors: batch(1) without drop_remainder leaves the shape [None] (ValueError "TPU
** currently requires fully defined shapes"); iterations 0 (ValueError); 4 towers x 11 steps need
** 44 elements of 40 (OutOfRangeError); aggregation NONE in tower context (ValueError);
** ONLY_FIRST_TOWER (NotImplementedError from the TPU reduce). */
static void run_steps_errors(void **state) {
  fixture *f = *state;
  ds_status st;
  input_spec unshaped = { 40, 0 }, shaped = { 40, 1 };
  ds_tpu_v1_iterator *it = ds_tpu_v1_distribute_dataset(f->v, counting, &unshaped, &st);
  TU_EXPECT_REFUSED(ds_tpu_v1_run_steps_on_dataset(f->v, step, NULL, it, 1, &st), &st, DS_VALUE_ERROR);
  ds_tpu_v1_iterator_free(it);
  it = ds_tpu_v1_distribute_dataset(f->v, counting, &shaped, &st);
  TU_EXPECT_REFUSED(ds_tpu_v1_run_steps_on_dataset(f->v, step, NULL, it, 0, &st), &st, DS_VALUE_ERROR);
  TU_EXPECT_REFUSED(ds_tpu_v1_run_steps_on_dataset(f->v, step, NULL, it, 11, &st), &st, DS_OUT_OF_RANGE_ERROR);
  ds_tpu_v1_iterator_free(it);
  const struct { step_case k; ds_error_kind err; } cases[] = {
    { { DS_AGG_NONE, 0 }, DS_VALUE_ERROR },
    { { DS_AGG_ONLY_FIRST_REPLICA, 0 }, DS_NOT_IMPLEMENTED_ERROR },
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    it = ds_tpu_v1_distribute_dataset(f->v, counting, &shaped, &st);
    TU_EXPECT_REFUSED(ds_tpu_v1_run_steps_on_dataset(f->v, step, (void *)&cases[i].k, it, 1, &st), &st,
                      cases[i].err);
    ds_tpu_v1_iterator_free(it);
  }
}

/* Runs `launches` loops of `steps` steps each of step() with 275e6 FLOPs per step; returns the
** simulated end time, the last loop's loss_sum and, in *all_reduce, one all-reduce's time. */
static sim_time run_loops(int steps_per_run, int launches, float *loss_sum, sim_time *all_reduce) {
  fixture f;
  ds_status st;
  build(&f, "v4-8", steps_per_run);
  input_spec in = { 40, 1 };
  step_case k = { DS_AGG_SUM, 275e6 };
  ds_tpu_v1_iterator *it = ds_tpu_v1_distribute_dataset(f.v, counting, &in, &st);
  for (int i = 0; i < launches; i++) {
    ds_tpu_v1_step_context *ctx = ds_tpu_v1_run_steps_on_dataset(f.v, step, &k, it, steps_per_run, &st);
    assert_non_null(ctx);
    *loss_sum = (float)md_tensor_get(ds_tpu_v1_last_step_output(ctx, "loss_sum"), 0);
    ds_tpu_v1_step_context_free(ctx);
  }
  sim_time end = sim_now(f.e);
  *all_reduce = ds_last_all_reduce_time(ds_tpu_v1_strategy(f.v));
  ds_tpu_v1_iterator_free(it);
  destroy(&f);
  return end;
}

/* steps_per_run=10 in one launch against steps_per_run=1 launched 10 times, over the same 40
** elements on a v4-8 (4 towers, each chip its own PCIe link: 16e9 B/s, 1 us latency):
** the values are identical (the 10th step sees 36..39: loss_sum = 150), and per launch the model
** charges host overhead 100 us + launch (1 us + 256 B / 16e9 B/s = 1.016 us) + fetch of the two
** 4-byte outputs (1 us + 8 B / 16e9 B/s = 1.0005 us) = 102016500 ps, so ten launches cost
** 9 x 102016500 = 918148500 ps more than one. Each step costs the same either way: infeed
** (1 us + 4 B / 16e9 B/s = 1000250 ps), compute (275e6 FLOP / 275e12 FLOP/s = 1e6 ps) and the two
** all-reduces of the outputs (C each, read from the strategy), so one launch of 10 steps takes
** 102016500 + 10 x (2000250 + 2C). */
static void steps_per_run_is_an_on_device_loop(void **state) {
  (void)state;
  float once_loss, tenfold_loss;
  sim_time c_once, c_tenfold;
  sim_time once = run_loops(10, 1, &once_loss, &c_once);
  sim_time tenfold = run_loops(1, 10, &tenfold_loss, &c_tenfold);
  assert_true(once_loss == 150.0f);
  assert_true(tenfold_loss == once_loss);
  assert_int_equal(c_once, c_tenfold);
  assert_true(c_once > 0);
  assert_int_equal(once, INT64_C(102016500) + 10 * (INT64_C(2000250) + 2 * c_once));
  assert_int_equal(tenfold - once, INT64_C(918148500));
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(towers_and_properties, setup_v3_8, teardown),
    cmocka_unit_test(local_master_has_no_job),
    cmocka_unit_test(towers_follow_sorted_device_names),
    cmocka_unit_test(num_cores_override_and_its_checks),
    cmocka_unit_test(initialize_and_finalize),
    cmocka_unit_test_setup_teardown(merge_call_tower_example, setup_v3_8, teardown),
    cmocka_unit_test_setup_teardown(reduce_to_the_host, setup_v3_8, teardown),
    cmocka_unit_test_setup_teardown(mean_multiplies_by_the_reciprocal, setup_three_cores, teardown),
    cmocka_unit_test_setup_teardown(reduce_errors, setup_v2_8, teardown),
    cmocka_unit_test_setup_teardown(reduce_in_tower_context, setup_v3_8, teardown),
    cmocka_unit_test_setup_teardown(variables_on_the_towers, setup_v3_8, teardown),
    cmocka_unit_test_setup_teardown(last_step_outputs_sum_and_mean, setup_v4_8_three_steps, teardown),
    cmocka_unit_test_setup_teardown(run_steps_errors, setup_v4_8, teardown),
    cmocka_unit_test(steps_per_run_is_an_on_device_loop),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
