/*
** test_tpu_strategy.c: TPUStrategy assembled on a simulated slice: device table, replica order,
** the gradient all-reduce on the slice's torus or, for a partial set of replicas, a ring.
*/
#include "tests/strategies/tpu_testutil.h"

#include "sim/tpu.h"
#include "strategies/core/distribute.h"
#include "strategies/input/strategy_input.h"
#include "strategies/tpu/gnn_runner.h"
#include "strategies/tpu/sharding.h"
#include "strategies/tpu/tpu_strategy.h"
#include "strategies/core/variable.h"

typedef struct fixture {
  sim_engine *e;
  sim_tpu_slice *slice;
  ds_tpu_topology *t;
  ds_device_assignment *da;
  ds_sharding_layout *l;
  ds_strategy *s;
  float sums[16];         /* each replica's all-reduce result */
} fixture;

static const ds_tpu_machine MACHINE = { 900e9, 61.5e12, 0, 1e12, {0} };

static void build_spmd(fixture *f, const char *type, const int *shape, int replicas, sim_algo algo,
                       int spmd) {
  const sim_tpu_generation *g;
  int chips, dims[3];
  assert_int_equal(sim_tpu_slice_parse(type, &g, &chips, dims, NULL, 0), 0);
  f->e = sim_engine_new();
  f->slice = sim_tpu_slice_new(f->e, g, dims, NULL);
  f->t = tu_tpu_init(type);
  f->da = shape ? tu_tpu_build(f->t, shape, replicas) : NULL;
  f->l = ds_sharding_layout_new(f->t, f->da, spmd, "worker");
  f->s = ds_tpu_strategy_new(f->e, DS_TPU, f->slice, f->l, &MACHINE, algo);
}

static void build(fixture *f, const char *type, const int *shape, int replicas, sim_algo algo) {
  build_spmd(f, type, shape, replicas, algo, 0);
}

static void destroy(fixture *f) {
  ds_strategy_free(f->s);
  ds_sharding_layout_free(f->l);
  ds_device_assignment_free(f->da);
  ds_tpu_topology_free(f->t);
  sim_tpu_slice_free(f->slice);
  sim_engine_free(f->e);
}

typedef struct arg { fixture *f; int replica; } arg;

/* Replica r contributes r + 1; every replica must end with 1 + 2 + ... + n. */
static void contribute(sim_actor *self, void *p) {
  arg *a = p;
  float v = (float)(a->replica + 1);
  assert_int_equal(ds_all_reduce_sum(a->f->s, self, a->replica, &v, 1), SIM_OK);
  a->f->sums[a->replica] = v;
}

static void all_reduce(fixture *f) {
  int n = ds_num_replicas_in_sync(f->s);
  arg args[16];
  for (int r = 0; r < n; r++) {
    args[r] = (arg){ f, r };
    sim_actor_spawn(f->e, "replica", contribute, &args[r]);
  }
  assert_int_equal(sim_run(f->e), 0);
  for (int r = 0; r < n; r++) assert_true(f->sums[r] == (float)(n * (n + 1) / 2));
}

/* v3-8: one host, 4 chips of 2 cores; TPUStrategy without a device assignment has 8 replicas,
** TPU:0..7 in order, on the torus; the sum 1 + ... + 8 = 36 reaches every replica. */
static void whole_slice_on_the_torus(void **state) {
  (void)state;
  fixture f = {0};
  build(&f, "v3-8", NULL, 0, SIM_ALGO_TORUS);
  assert_int_equal(ds_num_replicas_in_sync(f.s), 8);
  assert_string_equal(ds_replica_device(f.s, 5), "/job:worker/replica:0/task:0/device:TPU:5");
  assert_int_equal(ds_all_reduce_algorithm(f.s), SIM_ALGO_TORUS);
  assert_true(ds_strategy_exact_gather_shapes(f.s));
  assert_non_null(ds_replica_infeed(f.s, 0));
  all_reduce(&f);
  destroy(&f);
}

/* v4-32: 4 hosts of 4 chips (2x2x4), one device per chip. TF lists devices host by host, so
** replica order is not grid order: replica 4 is task 1's TPU:0, the chip at (0, 0, 1), grid rank
** 0 + 2*(0 + 2*1) = 4 as it happens, while replica 2 (task 0, TPU:2: chip (0, 1, 0)) has grid
** rank 2; every replica still gets 1 + ... + 16 = 136, and replicas sit on 4 hosts. */
static void replicas_keep_tf_order_on_a_multi_host_slice(void **state) {
  (void)state;
  fixture f = {0};
  build(&f, "v4-32", NULL, 0, SIM_ALGO_TORUS);
  assert_int_equal(ds_num_replicas_in_sync(f.s), 16);
  assert_int_equal(ds_strategy_num_workers(f.s), 4);
  assert_string_equal(ds_replica_device(f.s, 4), "/job:worker/replica:0/task:1/device:TPU:0");
  assert_int_equal(ds_replica_worker(f.s, 4), 1);
  all_reduce(&f);
  destroy(&f);
}

/* A device assignment of 4 replicas of computation shape [1,1,1,2] on a v3-8 (the 3-D ring:
** replica cores TPU 0,1 / 2,3 / 6,7 / 4,5): 2 logical devices per replica, core 1 of replica 2
** is TPU:7; the four replicas are not the whole slice, so the torus falls back to a ring. */
static void device_assignment_gives_logical_cores(void **state) {
  (void)state;
  fixture f = {0};
  int shape[4] = { 1, 1, 1, 2 };
  build(&f, "v3-8", shape, 4, SIM_ALGO_TORUS);
  assert_int_equal(ds_num_replicas_in_sync(f.s), 4);
  assert_int_equal(ds_cores_per_replica(f.s), 2);
  assert_string_equal(ds_replica_core_device(f.s, 2, 0), "/job:worker/replica:0/task:0/device:TPU:6");
  assert_string_equal(ds_replica_core_device(f.s, 2, 1), "/job:worker/replica:0/task:0/device:TPU:7");
  assert_int_equal(ds_all_reduce_algorithm(f.s), SIM_ALGO_RING);
  all_reduce(&f);
  destroy(&f);
}

/* ---- TPUStrategy's methods on the strategy object ---- */

static const int ONE_CORE[4] = { 1, 1, 1, 1 }, TWO_CORES[4] = { 1, 1, 1, 2 };

/* num_replicas_in_sync: every core without a device assignment (v3-8: 8), the assignment's
** num_replicas with one ([1, 1, 1, 2] x 4: 4). The strategy keeps its layout, and reduce results
** go to the first TPU host, task 0's CPU. A MirroredStrategy has no layout. */
static void replicas_layout_and_host(void **state) {
  (void)state;
  fixture f = {0};
  build(&f, "v3-8", NULL, 0, SIM_ALGO_RING);
  assert_int_equal(ds_num_replicas_in_sync(f.s), 8);
  assert_ptr_equal(ds_tpu_strategy_layout(f.s), f.l);
  assert_string_equal(ds_host_device(f.s), "/job:worker/replica:0/task:0/device:CPU:0");
  destroy(&f);
  build(&f, "v3-8", TWO_CORES, 4, SIM_ALGO_RING);
  assert_int_equal(ds_num_replicas_in_sync(f.s), 4);
  assert_int_equal(ds_sharding_num_logical_devices(ds_tpu_strategy_layout(f.s)), 2);
  destroy(&f);
  sim_engine *e = sim_engine_new();
  ds_cluster c = { .workers = 1, .machine = { .flops_per_s = 1e11, .ram_bytes = 1e9 } };
  ds_strategy *m = ds_strategy_new(e, DS_MIRRORED, &c, SIM_ALGO_RING);
  assert_null(ds_tpu_strategy_layout(m));
  ds_status st;
  ds_sharding out;
  assert_int_equal(ds_tpu_strategy_replicate_to_logical_devices(m, NULL, &out, &st), -1);
  assert_int_equal(st.kind, DS_TYPE_ERROR);
  ds_strategy_free(m);
  sim_engine_free(e);
}

/* Replica r returns float r + 1 - (r == 2), so three replicas hold 1, 2, 2, and all_reduces
** them with MEAN inside the TPU computation; *user is the reduce op. */
static int one_two_two(ds_rctx *ctx, void *user, md_tensor *const *args, md_tensor **results) {
  (void)args;
  int r = ds_rctx_replica_id(ctx);
  md_tensor *v = md_tensor_scalar_f32((float)(r + 1 - (r == 2)));
  results[0] = ds_rctx_all_reduce(ctx, *(ds_reduce_op *)user, v);
  md_tensor_free(v);
  return results[0] ? 0 : -1;
}

/* Three replicas of one core on a v3-8 ([1, 1, 1, 1] x 3) holding 1, 2, 2:
**   SUM = 5 (exact in any order).
**   MEAN as TPUStrategy takes it: 5 * float32(1/3) = 5 * 0.333333343 = 1.66666675f (0x3FD55556),
**   where MirroredStrategy's 5 / 3 gives 1.66666663f (0x3FD55555). Inside the TPU computation
**   each replica scales first: 1/3 + 2/3 + 2/3 in float32 = 1.66666675f on every replica, in any
**   summation order. ONLY_FIRST_REPLICA: NotImplementedError, from reduce_to and from all_reduce. */
static void reduce_multiplies_by_the_reciprocal(void **state) {
  (void)state;
  fixture f = {0};
  build(&f, "v3-8", ONE_CORE, 3, SIM_ALGO_RING);
  assert_int_equal(ds_num_replicas_in_sync(f.s), 3);
  md_tensor *parts[3] = { md_tensor_scalar_f32(1), md_tensor_scalar_f32(2), md_tensor_scalar_f32(2) };
  ds_value *v = ds_value_new(DS_VALUE_PER_REPLICA, 3, parts, NULL);
  ds_status st;
  md_tensor *sum = ds_reduce(f.s, DS_REDUCE_SUM, v, DS_AXIS_NONE, &st);
  md_tensor *mean = ds_reduce(f.s, DS_REDUCE_MEAN, v, DS_AXIS_NONE, &st);
  assert_true(md_tensor_f32(sum)[0] == 5.0f);
  assert_true(md_tensor_f32(mean)[0] == 1.66666675f);
  assert_true(1.66666675f != 5.0f / 3.0f);
  const char *host = ds_host_device(f.s);
  TU_EXPECT_REFUSED(ds_extended_reduce_to(f.s, DS_REDUCE_ONLY_FIRST_REPLICA, v, 1, &host, &st), &st,
                    DS_NOT_IMPLEMENTED_ERROR);
  ds_reduce_op op = DS_REDUCE_MEAN;
  ds_value *out;
  assert_int_equal(ds_tpu_strategy_run(f.s, 1, 1, one_two_two, &op, 0, NULL, 1, &out, &st), 0);
  for (int r = 0; r < 3; r++) assert_true(md_tensor_f32(ds_value_component(out, r))[0] == 1.66666675f);
  ds_value_free(out);
  op = DS_REDUCE_ONLY_FIRST_REPLICA;
  assert_int_equal(ds_tpu_strategy_run(f.s, 1, 1, one_two_two, &op, 0, NULL, 1, &out, &st), -1);
  assert_int_equal(st.kind, DS_NOT_IMPLEMENTED_ERROR);
  md_tensor_free(sum);
  md_tensor_free(mean);
  ds_value_free(v);
  destroy(&f);
}

static int replica_id(ds_rctx *ctx, void *user, md_tensor *const *args, md_tensor **results) {
  (void)args;
  (*(int *)user)++;
  results[0] = md_tensor_scalar_f32((float)ds_rctx_replica_id(ctx));
  return 0;
}

/* Strategy.reduce's page example on a v3-8: step_fn returns the replica id, reduce("SUM") of
** the 8 replicas = 0 + 1 + ... + 7 = 28. TPUStrategy.run of a plain Python function while
** executing eagerly is NotImplementedError and runs no replica (0 calls); a tf.function (or a
** call inside one) runs all 8. */
static void run_is_never_pure_eager(void **state) {
  (void)state;
  fixture f = {0};
  build(&f, "v3-8", NULL, 0, SIM_ALGO_TORUS);
  int calls = 0;
  ds_value *ids;
  ds_status st;
  assert_int_equal(ds_tpu_strategy_run(f.s, 0, 1, replica_id, &calls, 0, NULL, 1, &ids, &st), -1);
  assert_int_equal(st.kind, DS_NOT_IMPLEMENTED_ERROR);
  assert_int_equal(calls, 0);
  assert_int_equal(ds_tpu_strategy_run(f.s, 0, 0, replica_id, &calls, 0, NULL, 1, &ids, &st), 0);
  assert_int_equal(calls, 8);
  md_tensor *total = ds_reduce(f.s, DS_REDUCE_SUM, ids, DS_AXIS_NONE, &st);
  assert_true(md_tensor_f32(total)[0] == 28.0f);
  md_tensor_free(total);
  ds_value_free(ids);
  destroy(&f);
}

/* The TPUStrategy page's logical-device examples through the strategy:
**   4 replicas of 2 logical devices ([1, 1, 1, 2] x 4 on a v3-8): assign_to_logical_device(
**   output, 0) puts it on logical device 0; device 2 does not exist (ValueError); replicate
**   gives every logical device the whole tensor.
**   8 logical devices and 1 replica ([2, 2, 1, 2] x 1 on a v3-32, whose mesh is [4, 4, 1, 2]):
**   split [1, 2, 4, 1] of a [2, 4, 8, 3] tensor: tiles [2, 2, 2, 3], logical device 5 at row-major
**   (0, 1, 1, 0) of the dims, offset (0, 2, 2, 0); split [1, 2, 2, 1] (4 != 8): ValueError.
**   In SPMD mode assign_to_logical_device is a ValueError. */
static void logical_device_annotations(void **state) {
  (void)state;
  fixture f = {0};
  int64_t shape[4] = { 2, 4, 8, 3 };
  md_tensor *t = md_tensor_new(MD_FLOAT32, 4, shape);
  ds_sharding sh;
  ds_status st;
  build(&f, "v3-8", TWO_CORES, 4, SIM_ALGO_RING);
  assert_int_equal(ds_tpu_strategy_assign_to_logical_device(f.s, t, 0, &sh, &st), 0);
  assert_int_equal(sh.kind, DS_SHARDING_MAXIMAL);
  assert_int_equal(sh.logical_device, 0);
  assert_int_equal(ds_tpu_strategy_assign_to_logical_device(f.s, t, 2, &sh, &st), -1);
  assert_int_equal(st.kind, DS_VALUE_ERROR);
  assert_int_equal(ds_tpu_strategy_replicate_to_logical_devices(f.s, t, &sh, &st), 0);
  assert_int_equal(sh.kind, DS_SHARDING_REPLICATED);
  destroy(&f);
  static const int eight[4] = { 2, 2, 1, 2 };
  build_spmd(&f, "v3-32", eight, 1, SIM_ALGO_RING, 1);
  assert_int_equal(ds_tpu_strategy_split_to_logical_devices(f.s, t, 4, (int[]){ 1, 2, 4, 1 }, &sh, &st), 0);
  int64_t off[4], tile[4];
  assert_true(ds_sharding_tile(&sh, 5, off, tile));
  assert_memory_equal(off, ((int64_t[]){ 0, 2, 2, 0 }), sizeof off);
  assert_memory_equal(tile, ((int64_t[]){ 2, 2, 2, 3 }), sizeof tile);
  assert_int_equal(ds_tpu_strategy_split_to_logical_devices(f.s, t, 4, (int[]){ 1, 2, 2, 1 }, &sh, &st), -1);
  assert_int_equal(st.kind, DS_VALUE_ERROR);
  assert_int_equal(ds_tpu_strategy_assign_to_logical_device(f.s, t, 0, &sh, &st), -1);
  assert_int_equal(st.kind, DS_VALUE_ERROR);
  destroy(&f);
  md_tensor_free(t);
}

/* Variables in the scope of [1, 1, 1, 2] x 4 on a v3-8 (replica cores TPU 0,1 / 2,3 / 6,7 /
** 4,5): one copy per replica on logical device 0: TPU:0, 2, 6, 4; inside
** experimental_logical_device(1): TPU:1, 3, 7, 5; logical device 2: ValueError. With SPMD every
** replica's TPUReplicatedVariable "v/r:R" holds a copy on both its cores: copy 2 on TPU:6 and
** TPU:7, 4 x 2 = 8 copies in all. */
static void variables_follow_the_logical_devices(void **state) {
  (void)state;
  static const char *const core0[4] = { "TPU:0", "TPU:2", "TPU:6", "TPU:4" };
  static const char *const core1[4] = { "TPU:1", "TPU:3", "TPU:7", "TPU:5" };
  const char *prefix = "/job:worker/replica:0/task:0/device:";
  char want[96];
  md_tensor *init = md_tensor_scalar_f32(1);
  ds_variable_options o = { .name = "v", .trainable = -1 };
  ds_status st;
  for (int spmd = 0; spmd <= 1; spmd++) {
    fixture f = {0};
    build_spmd(&f, "v3-8", TWO_CORES, 4, SIM_ALGO_RING, spmd);
    assert_int_equal(ds_scope_enter(f.s, &st), 0);
    ds_variable *v = ds_variable_new(init, &o, &st);
    assert_int_equal(ds_variable_num_copies(v), 4);
    assert_int_equal(ds_variable_devices_per_copy(v), spmd ? 2 : 1);
    for (int r = 0; r < 4; r++) {
      snprintf(want, sizeof want, "%s%s", prefix, core0[r]);
      assert_string_equal(ds_variable_device(v, r), want);
    }
    if (spmd) {
      snprintf(want, sizeof want, "%s%s", prefix, core1[2]);
      assert_string_equal(ds_variable_copy_device(v, 2, 1), want);
      assert_string_equal(ds_variable_copy_name(v, 2), "v/r:2");
    }
    ds_variable_free(v);
    assert_int_equal(ds_tpu_strategy_logical_device_begin(f.s, 1, &st), 0);
    v = ds_variable_new(init, &o, &st);
    snprintf(want, sizeof want, "%s%s", prefix, spmd ? core0[3] : core1[3]);
    assert_string_equal(ds_variable_device(v, 3), want);
    ds_variable_free(v);
    assert_int_equal(ds_tpu_strategy_logical_device_end(f.s, &st), 0);
    assert_int_equal(ds_tpu_strategy_logical_device(f.s), 0);
    assert_int_equal(ds_tpu_strategy_logical_device_begin(f.s, 2, &st), -1);
    assert_int_equal(st.kind, DS_VALUE_ERROR);
    assert_int_equal(ds_tpu_strategy_logical_device_end(f.s, &st), -1);
    assert_int_equal(st.kind, DS_RUNTIME_ERROR);
    assert_int_equal(ds_scope_exit(f.s, &st), 0);
    destroy(&f);
  }
  md_tensor_free(init);
}

static ds_dataset *range_batch(int64_t n, int64_t batch) {
  ds_dataset *r = ds_dataset_range(0, n, 1, NULL), *b = ds_dataset_batch(r, batch, 0, NULL);
  ds_dataset_free(r);
  return b;
}

/* experimental_distribute_dataset on a v3-8 (8 replicas, one host): range(16).batch(8) splits
** each batch of 8 into 8 ones, so step 1 gives replica r [r] on TPU:r and step 2 [8 + r].
** range(12).batch(8): the second batch has 4 rows, which the legacy rebatch (TF's auto-shard
** rewrite of a range, on one host too) cuts into 8 slices of ceil(4 / 8) = 1: replicas 4..7 get
** empty slices, which are elements, so step 2 runs and step 3 is the end (OutOfRangeError). PER_REPLICA is NotImplementedError from both dataset methods. */
static void input_on_one_host(void **state) {
  (void)state;
  fixture f = {0};
  build(&f, "v3-8", NULL, 0, SIM_ALGO_RING);
  ds_status st;
  ds_dataset *d = range_batch(16, 8);
  ds_input_dataset *dd = ds_experimental_distribute_dataset(f.s, d, NULL, &st);
  ds_dataset_free(d);
  ds_input_iterator *it = ds_input_iterator_new(dd);
  ds_value *x;
  for (int step = 0; step < 2; step++) {
    assert_int_equal(ds_input_get_next(it, &x, &st), 0);
    for (int r = 0; r < 8; r++) assert_true(md_tensor_get(ds_value_component(x, r), 0) == 8 * step + r);
    assert_string_equal(ds_value_device(x, 3), "/job:worker/replica:0/task:0/device:TPU:3");
    ds_value_free(x);
  }
  ds_input_iterator_free(it);
  ds_input_dataset_free(dd);
  d = range_batch(12, 8);
  it = ds_make_dataset_iterator(f.s, d, &st);
  ds_dataset_free(d);
  for (int step = 0; step < 2; step++) {
    assert_int_equal(ds_input_get_next(it, &x, &st), 0);
    for (int r = 0; r < 8; r++) assert_int_equal(ds_value_component(x, r)->size, step == 0 || r < 4);
    ds_value_free(x);
  }
  assert_int_equal(ds_input_get_next(it, &x, &st), -1);
  assert_int_equal(st.kind, DS_OUT_OF_RANGE_ERROR);
  ds_input_iterator_free(it);
  ds_input_options o = ds_input_options_default();
  o.replication_mode = DS_INPUT_PER_REPLICA;
  o.fetch_to_device = 0;
  d = range_batch(16, 8);
  TU_EXPECT_REFUSED(ds_experimental_distribute_dataset(f.s, d, &o, &st), &st, DS_NOT_IMPLEMENTED_ERROR);
  ds_dataset_free(d);
  destroy(&f);
}

static int dataset_fn_calls;  /* how often count_fn ran */

/* A dataset_fn that checks its InputContext against the v4-32's 4 hosts and 16 replicas. */
static ds_dataset *count_fn(const ds_input_context *ctx, void *user, ds_status *st) {
  (void)user;
  assert_int_equal(ctx->num_input_pipelines, 4);
  assert_int_equal(ctx->input_pipeline_id, dataset_fn_calls++);
  assert_int_equal(ctx->num_replicas_in_sync, 16);
  return ds_dataset_range(0, 8, 1, st);
}

static md_tensor *replica_value(const ds_input_value_context *ctx, void *user, ds_status *st) {
  (void)user;
  (void)st;
  return md_tensor_scalar_f32((float)ctx->replica_id_in_sync_group);
}

/* On a v4-32 (4 hosts of 4 chips, 16 replicas) the input workers are the 4 hosts:
** distribute_datasets_from_function calls dataset_fn 4 times, InputContext(4, w, 16);
** values_from_function gives 16 components, replica 5 on task 1's TPU:1 with value 5. */
static void input_on_four_hosts(void **state) {
  (void)state;
  fixture f = {0};
  build(&f, "v4-32", NULL, 0, SIM_ALGO_RING);
  ds_status st;
  dataset_fn_calls = 0;
  ds_input_dataset *dd = ds_distribute_datasets_from_function(f.s, count_fn, NULL, NULL, &st);
  assert_non_null(dd);
  assert_int_equal(dataset_fn_calls, 4);
  ds_input_dataset_free(dd);
  ds_input_options o = ds_input_options_default();
  o.replication_mode = DS_INPUT_PER_REPLICA;
  o.fetch_to_device = 0;
  TU_EXPECT_REFUSED(ds_distribute_datasets_from_function(f.s, count_fn, NULL, &o, &st), &st,
                    DS_NOT_IMPLEMENTED_ERROR);
  ds_value *v = ds_experimental_distribute_values_from_function(f.s, replica_value, NULL, &st);
  assert_int_equal(ds_value_num_components(v), 16);
  assert_true(md_tensor_get(ds_value_component(v, 5), 0) == 5);
  assert_string_equal(ds_value_device(v, 5), "/job:worker/replica:0/task:1/device:TPU:1");
  ds_value_free(v);
  destroy(&f);
}

static int write_replica_id(ds_rctx *ctx, void *user, md_tensor *const *args, md_tensor **results) {
  (void)args;
  md_tensor *id = md_tensor_scalar_f32((float)ds_rctx_replica_id(ctx));
  int rc = ds_variable_assign(user, ctx, id, ds_rctx_status(ctx));
  md_tensor_free(id);
  results[0] = md_tensor_scalar_f32(0);
  return rc;
}

static int read_variable(ds_rctx *ctx, void *user, md_tensor *const *args, md_tensor **results) {
  (void)args;
  results[0] = ds_variable_read(user, ctx, ds_rctx_status(ctx));
  return results[0] ? 0 : -1;
}

/* tpu_strategy_test.test_computation_on_subset_cores: a variable made under the all-core
** strategy is read, under another strategy, from the copy on each replica's device. On a v4-8
** (4 devices) an ON_READ variable's copies hold 0, 1, 2, 3 (each replica wrote its id on its
** device); a strategy whose device assignment reverses the devices (replica r on device 3 - r)
** reads 3, 2, 1, 0, not the copy of its own replica index. */
static void variable_read_follows_the_device(void **state) {
  (void)state;
  fixture f;
  build(&f, "v4-8", NULL, 0, SIM_ALGO_RING);
  ds_status st;
  ds_variable_options on_read = { .synchronization = DS_SYNC_ON_READ, .aggregation = DS_AGG_SUM, .trainable = -1 };
  md_tensor *zero = md_tensor_scalar_f32(0);
  assert_int_equal(ds_scope_enter(f.s, &st), 0);
  ds_variable *v = ds_variable_new(zero, &on_read, &st);
  assert_int_equal(ds_scope_exit(f.s, &st), 0);
  ds_value *ignored;
  assert_int_equal(ds_run(f.s, write_replica_id, v, 0, NULL, 1, &ignored, &st), 0);
  ds_value_free(ignored);
  int coords[4][4];
  for (int r = 0; r < 4; r++)
    memcpy(coords[r], ds_tpu_topology_device_coordinates(f.t, 0, 3 - r), sizeof coords[r]);
  ds_device_assignment *reversed = ds_device_assignment_new(f.t, 4, 1, 4, &coords[0][0], &st);
  assert_non_null(reversed);
  ds_sharding_layout *l = ds_sharding_layout_new(f.t, reversed, 0, "worker");
  ds_strategy *other = ds_tpu_strategy_new(f.e, DS_TPU, f.slice, l, &MACHINE, SIM_ALGO_RING);
  assert_string_equal(ds_replica_device(other, 0), ds_variable_device(v, 3));
  /* The hosts are the slice's: the second strategy feeds from the first one's host CPU. */
  assert_ptr_equal(ds_worker_cpu(other, 0), ds_worker_cpu(f.s, 0));
  assert_string_equal(sim_cpu_name(ds_worker_cpu(other, 0)), "tpu_host0.cpu");
  ds_value *read;
  assert_int_equal(ds_run(other, read_variable, v, 0, NULL, 1, &read, &st), 0);
  for (int r = 0; r < 4; r++) assert_true(md_tensor_get(ds_value_component(read, r), 0) == 3.0 - r);
  ds_value_free(read);
  ds_strategy_free(other);
  ds_sharding_layout_free(l);
  ds_device_assignment_free(reversed);
  ds_variable_free(v);
  md_tensor_free(zero);
  destroy(&f);
}

/* strategy_gather_test.testGatherDiffShapeAtAxis0 on TPUStrategy (v4-8: 4 replicas): replica r
** holds ones of shape [r + 1, 1]; gather along axis 0 concatenates them into ones of [10, 1]
** (1 + 2 + 3 + 4 rows), as TPUStrategy's concat on the host does. Off the axis they must agree. */
static void gather_concatenates_different_shapes(void **state) {
  (void)state;
  fixture f;
  build(&f, "v4-8", NULL, 0, SIM_ALGO_RING);
  int n = ds_num_replicas_in_sync(f.s);
  assert_int_equal(n, 4);
  md_tensor *parts[4];
  const char *devs[4];
  for (int r = 0; r < n; r++) {
    parts[r] = md_tensor_new(MD_FLOAT32, 2, (int64_t[]){ r + 1, 1 });
    for (int i = 0; i <= r; i++) md_tensor_f32(parts[r])[i] = 1;
    devs[r] = ds_replica_device(f.s, r);
  }
  ds_value *v = ds_value_new(DS_VALUE_PER_REPLICA, n, parts, devs);
  ds_status st;
  md_tensor *g = ds_gather(f.s, v, 0, &st);
  assert_non_null(g);
  assert_true(g->shape[0] == 10 && g->shape[1] == 1);
  for (int i = 0; i < 10; i++) assert_true(md_tensor_get(g, (size_t)i) == 1.0);
  md_tensor_free(g);
  ds_status_clear(&st);
  assert_null(ds_gather(f.s, v, 1, &st));  /* along axis 1 the rows differ: off the axis */
  assert_int_equal(st.kind, DS_VALUE_ERROR);
  ds_value_free(v);
  destroy(&f);
}

/* strategy_common_test.testClusterResolverProperty: a TPUStrategy has a cluster resolver (the
** same one inside its scope) with task_type and task_id; TPUStrategy() on a v4-32 slice makes
** the default TPUClusterResolver of its TPU: the worker job, 4 hosts of 4 devices. TF-GNN's
** runner.TPUStrategy(tpu) reports the resolver it connected. */
static void cluster_resolver_is_the_resolver(void **state) {
  (void)state;
  fixture f;
  build(&f, "v4-32", NULL, 0, SIM_ALGO_RING);
  ds_cluster_resolver cr, inside;
  assert_int_equal(ds_cluster_resolver_of(f.s, &cr), 1);
  assert_string_equal(cr.task_type, "worker");
  assert_int_equal(cr.task_id, 0);
  assert_int_equal(cr.num_workers, 4);
  assert_int_equal(cr.num_accelerators, 4);
  assert_int_equal(ds_scope_enter(f.s, NULL), 0);
  assert_int_equal(ds_cluster_resolver_of(f.s, &inside), 1);
  assert_memory_equal(&inside, &cr, sizeof cr);
  assert_int_equal(ds_scope_exit(f.s, NULL), 0);
  destroy(&f);
  sim_engine *e = sim_engine_new();
  ds_tpu_resolver *r = NULL;
  ds_strategy *gnn = ds_gnn_runner_tpu_strategy_new(e, "", "v4-16", NULL, &MACHINE, SIM_ALGO_RING, &r, NULL);
  assert_non_null(gnn);
  assert_int_equal(ds_cluster_resolver_of(gnn, &cr), 1);
  assert_string_equal(cr.task_type, ds_tpu_resolver_job_name(r));
  assert_int_equal(cr.num_workers, ds_tpu_resolver_num_tasks(r));
  assert_int_equal(cr.num_accelerators, ds_tpu_resolver_num_accelerators(r));
  ds_strategy_free(gnn);
  ds_tpu_resolver_free(r);
  sim_engine_free(e);
}

typedef struct assignment { int groups, size; const int *ids; } assignment;

/* Replica r sums a vector of 1000 copies of r + 1 over its group. */
static int sum_in_groups(ds_rctx *ctx, void *user, md_tensor *const *args, md_tensor **results) {
  (void)args;
  const assignment *a = user;
  int64_t shape[1] = {1000};
  md_tensor *x = md_tensor_new(MD_FLOAT32, 1, shape);
  for (int i = 0; i < 1000; i++) md_tensor_f32(x)[i] = (float)(ds_rctx_replica_id(ctx) + 1);
  results[0] = ds_rctx_cross_replica_sum(ctx, x, a->groups, a->size, a->ids);
  md_tensor_free(x);
  return results[0] ? 0 : -1;
}

/* Bytes the slice's links whose names start with `prefix` carried. */
static double bytes_on(const sim_tpu_slice *slice, const char *prefix) {
  sim_link *links[256];
  size_t n = sim_tpu_slice_links(slice, links, 256);
  double b = 0;
  for (size_t i = 0; i < n; i++)
    if (strncmp(sim_link_name(links[i]), prefix, strlen(prefix)) == 0) b += sim_link_bytes(links[i]);
  return b;
}

/* tf.compat.v1.tpu.cross_replica_sum's documented group_assignment ("group_assignment[i] represents
** the replica ids in the ith subgroup"; the sum runs over each subgroup) on a v3-8 (replica r =
** TPU:r, core r % 2 of chip r / 2): [[0, 2, 4, 6], [1, 3, 5, 7]] sums 1 + 3 + 5 + 7 = 16 on the
** even replicas and 20 on the odd ones; each group holds one core of every chip, so only ICI moves bytes, never a chip's
** on-chip link. No assignment: one group, 36 everywhere. A replica twice is InvalidArgumentError. */
static void cross_replica_sum_group_assignment(void **state) {
  (void)state;
  fixture f = {0};
  build(&f, "v3-8", NULL, 8, SIM_ALGO_RING);
  static const int BY_CORE[] = {0, 2, 4, 6, 1, 3, 5, 7}, TWICE[] = {0, 1, 2, 3, 3, 4, 5, 6};
  assignment a = {2, 4, BY_CORE};
  ds_value *out;
  ds_status st;
  assert_int_equal(ds_tpu_strategy_run(f.s, 1, 1, sum_in_groups, &a, 0, NULL, 1, &out, &st), 0);
  for (int r = 0; r < 8; r++) {
    md_tensor *t = ds_value_component(out, r);
    assert_true(md_tensor_f32(t)[0] == (r % 2 ? 20.0f : 16.0f) && md_tensor_f32(t)[999] == md_tensor_f32(t)[0]);
  }
  ds_value_free(out);
  assert_true(bytes_on(f.slice, "ici.") > 0);
  assert_true(bytes_on(f.slice, "chip.") == 0);
  a = (assignment){1, 8, NULL};
  assert_int_equal(ds_tpu_strategy_run(f.s, 1, 1, sum_in_groups, &a, 0, NULL, 1, &out, &st), 0);
  for (int r = 0; r < 8; r++) assert_true(md_tensor_f32(ds_value_component(out, r))[0] == 36.0f);
  ds_value_free(out);
  a = (assignment){2, 4, TWICE};
  assert_int_equal(ds_tpu_strategy_run(f.s, 1, 1, sum_in_groups, &a, 0, NULL, 1, &out, &st), -1);
  assert_int_equal(st.kind, DS_INVALID_ARGUMENT_ERROR);
  destroy(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(cross_replica_sum_group_assignment),
    cmocka_unit_test(cluster_resolver_is_the_resolver),
    cmocka_unit_test(gather_concatenates_different_shapes),
    cmocka_unit_test(variable_read_follows_the_device),
    cmocka_unit_test(whole_slice_on_the_torus),
    cmocka_unit_test(replicas_keep_tf_order_on_a_multi_host_slice),
    cmocka_unit_test(device_assignment_gives_logical_cores),
    cmocka_unit_test(replicas_layout_and_host),
    cmocka_unit_test(reduce_multiplies_by_the_reciprocal),
    cmocka_unit_test(run_is_never_pure_eager),
    cmocka_unit_test(logical_device_annotations),
    cmocka_unit_test(variables_follow_the_logical_devices),
    cmocka_unit_test(input_on_one_host),
    cmocka_unit_test(input_on_four_hosts),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
