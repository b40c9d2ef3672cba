/*
** test_ps_strategy.c: ParameterServerStrategy V2: the cluster spec from TF_CONFIG and its
** ValueErrors, the tasks and their routes, variable placement (the seed page's round robin and
** FixedShardsPartitioner examples, colocation, rank 0, the partition list's errors), the
** strategy methods, the ps components with optimizer slots; then whole-engine drivers of async
** training: a lookup moves only the rows asked for, pushes apply in arrival order with version
** counts, a killed worker's push applies nothing, a failed ps makes reads UnavailableError.
*/
#include "tests/strategies/dsutil.h"

#include "strategies/ps/coordinator.h"
#include "strategies/ps/ps_strategy.h"
#include "strategies/input/strategy_input.h"

/* The seed page's TF_CONFIG: 3 workers, 2 ps, a chief, and this program the chief. */
static const char *const SEED_TF_CONFIG =
  "{\"cluster\": {\"worker\": [\"host1:port\", \"host2:port\", \"host3:port\"], "
  "\"ps\": [\"host4:port\", \"host5:port\"], \"chief\": [\"host6:port\"]}, "
  "\"task\": {\"type\": \"chief\", \"index\": 0}}";

/* VMs of 1e11 FLOP/s, 2e10 B/s memory, 32 GB; a star of 1 GB/s links of 5 us; NICs 1 GB/s. */
static ds_ps_cluster machines(void) {
  ds_machine m = { .flops_per_s = 1e11, .mem_bytes_per_s = 2e10, .ram_bytes = 32e9, .nic_bytes_per_s = 1e9 };
  return (ds_ps_cluster){ .worker = m, .ps = m, .coordinator = m, .evaluator = m, .fabric = SIM_FABRIC_STAR,
                          .link_bytes_per_s = 1e9, .latency = 5000000 };
}

static ds_ps_cluster_spec counts(int workers, int ps) {
  return (ds_ps_cluster_spec){ .workers = workers, .ps = ps, .chief = 1, .task_type = "chief" };
}

static ds_strategy *make_ps(sim_engine *e, int workers, int ps, const ds_partitioner *p) {
  ds_ps_cluster_spec spec = counts(workers, ps);
  ds_ps_cluster m = machines();
  ds_status st;
  ds_strategy *s = ds_ps_strategy_new(e, &spec, &m, p, &st);
  assert_non_null(s);
  return s;
}

static ds_variable *var_in(ds_strategy *s, const md_tensor *init, const char *name) {
  ds_status st;
  ds_variable_options o = { .name = name, .trainable = -1 };
  if (s) assert_int_equal(ds_scope_enter(s, &st), 0);
  ds_variable *v = ds_variable_new(init, &o, &st);
  if (s) assert_int_equal(ds_scope_exit(s, &st), 0);
  assert_non_null(v);
  return v;
}

static ds_variable *scalar_in(ds_strategy *s, float value, const char *name) {
  md_tensor *t = md_tensor_scalar_f32(value);
  ds_variable *v = var_in(s, t, name);
  md_tensor_free(t);
  return v;
}

/* A rows x cols float32 tensor with element i = i. */
static md_tensor *iota(int64_t rows, int64_t cols) {
  int64_t shape[2] = { rows, cols };
  md_tensor *t = md_tensor_new(MD_FLOAT32, 2, shape);
  for (size_t i = 0; i < t->size; i++) md_tensor_f32(t)[i] = (float)i;
  return t;
}

/* One worker, 2 ps, a [rows, cols] iota variable split in 2 shards (FixedShardsPartitioner). */
static ds_strategy *two_shards(sim_engine *e, int64_t rows, int64_t cols, const char *name, md_tensor **init,
                               ds_variable **v) {
  ds_partitioner two = ds_fixed_shards_partitioner(2);
  ds_strategy *s = make_ps(e, 1, 2, &two);
  *init = iota(rows, cols);
  *v = var_in(s, *init, name);
  return s;
}

/* The seed TF_CONFIG gives 3 workers, 2 ps, 1 chief, task chief 0; the strategy's tasks are
** named as TF names them; the coordinator is the chief; on the star every route between two
** tasks is 2 hops (a host's up link, the other's down link) and a task to itself none. */
static void tf_config_and_tasks(void **state) {
  (void)state;
  ds_ps_cluster_spec spec;
  ds_status st;
  assert_int_equal(ds_ps_cluster_spec_from_tf_config(SEED_TF_CONFIG, &spec, &st), 0);
  assert_int_equal(spec.workers, 3);
  assert_int_equal(spec.ps, 2);
  assert_int_equal(spec.chief, 1);
  assert_int_equal(spec.evaluators, 0);
  assert_string_equal(spec.task_type, "chief");
  sim_engine *e = sim_engine_new();
  ds_ps_cluster m = machines();
  ds_strategy *s = ds_ps_strategy_new(e, &spec, &m, NULL, &st);
  assert_non_null(s);
  assert_int_equal(ds_strategy_kind(s), DS_PARAMETER_SERVER);
  assert_string_equal(ds_kind_name(DS_PARAMETER_SERVER), "parameter_server");
  assert_int_equal(ds_ps_num_tasks(s, DS_PS_WORKER), 3);
  assert_int_equal(ds_ps_num_tasks(s, DS_PS_PS), 2);
  assert_string_equal(ds_ps_task_device(s, DS_PS_PS, 1), "/job:ps/replica:0/task:1/device:CPU:0");
  assert_string_equal(ds_ps_task_device(s, DS_PS_WORKER, 0), "/job:worker/replica:0/task:0/device:CPU:0");
  assert_string_equal(ds_ps_task_device(s, DS_PS_COORDINATOR, 0), "/job:chief/replica:0/task:0/device:CPU:0");
  assert_non_null(ds_ps_task_cpu(s, DS_PS_PS, 1));
  assert_true(sim_mempool_capacity(ds_ps_task_memory(s, DS_PS_WORKER, 2)) == (uint64_t)32e9);
  sim_link *r[4];
  assert_int_equal(ds_ps_route(s, DS_PS_WORKER, 2, DS_PS_PS, 1, r, 4), 2);
  assert_string_equal(sim_link_name(r[0]), "fabric.t2.up");
  assert_string_equal(sim_link_name(r[1]), "fabric.t4.down");
  assert_int_equal(ds_ps_route(s, DS_PS_PS, 0, DS_PS_PS, 0, r, 4), 0);
  assert_int_equal(ds_num_replicas_in_sync(s), 1);
  assert_string_equal(ds_replica_device(s, 0), "/job:worker/replica:0/task:0/device:CPU:0");
  ds_strategy_free(s);
  sim_engine_free(e);
}

/* Every ValueError of TF_CONFIG and of the constructor, each on an otherwise valid cluster. */
static void cluster_value_errors(void **state) {
  (void)state;
  const char *const bad_json[] = {
    "{\"cluster\": ",                                          /* not JSON */
    "[1, 2]",                                                  /* not an object */
    "{\"task\": {\"type\": \"chief\"}}",                       /* no cluster */
    "{\"cluster\": {\"worker\": \"h:1\", \"ps\": [\"h:2\"]}}", /* a job that is not a list */
    "{\"cluster\": {\"worker\": [\"h:1\"], \"ps\": [\"h:2\"], \"master\": [\"h:3\"]}}", /* job */
    "{\"cluster\": {\"worker\": [\"h:1\"], \"ps\": [\"h:2\"]}, \"task\": {\"index\": \"0\"}}",
  };
  ds_ps_cluster_spec spec;
  ds_status st;
  for (size_t i = 0; i < sizeof bad_json / sizeof bad_json[0]; i++) {
    st.kind = DS_OK;
    assert_int_equal(ds_ps_cluster_spec_from_tf_config(bad_json[i], &spec, &st), -1);
    assert_int_equal(st.kind, DS_VALUE_ERROR);
  }
  ds_ps_cluster_spec bad[] = {
    { .task_type = "" },                                             /* empty */
    { .workers = 2, .ps = 1, .task_type = "master" },                /* unknown task type */
    { .workers = 2, .ps = 1, .task_type = "chief" },                 /* chief not in the spec */
    { .workers = 2, .ps = 1, .chief = 2, .task_type = "chief" },     /* two chiefs */
    { .workers = 2, .ps = 1, .evaluators = 2, .chief = 1, .task_type = "chief" }, /* two evaluators */
    { .workers = 2, .ps = 1, .chief = 1, .task_type = "chief", .task_index = 1 }, /* index past it */
    { .workers = 2, .ps = 0, .chief = 1, .task_type = "chief" },     /* no ps */
    { .workers = 0, .ps = 1, .chief = 1, .task_type = "chief" },     /* no worker */
    { .workers = 2, .ps = 1, .task_type = "worker" },                /* coordinator is a worker */
    { .workers = 2, .ps = 1, .task_type = "ps" },                    /* ... or a ps */
  };
  sim_engine *e = sim_engine_new();
  ds_ps_cluster m = machines();
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    st.kind = DS_OK;
    TU_EXPECT_REFUSED(ds_ps_strategy_new(e, &bad[i], &m, NULL, &st), &st, DS_VALUE_ERROR);
  }
  /* No task given: the coordinator is the chief; an evaluator task may be missing from the spec. */
  ds_ps_cluster_spec no_task = { .workers = 1, .ps = 1 }, eval = { .workers = 1, .ps = 1, .task_type = "evaluator" };
  ds_strategy *s = ds_ps_strategy_new(e, &no_task, &m, NULL, &st);
  assert_string_equal(ds_ps_task_device(s, DS_PS_COORDINATOR, 0), "/job:chief/replica:0/task:0/device:CPU:0");
  ds_strategy_free(s);
  s = ds_ps_strategy_new(e, &eval, &m, NULL, &st);
  assert_non_null(s);
  ds_strategy_free(s);
  sim_engine_free(e);
}

/* The seed page: v1 outside the scope is the coordinator's; v2..v5 inside go round-robin over 3
** ps: tasks 0, 1, 2, 0. colocate_vars_with(v3) puts a variable on task 1 without moving the
** counter, so the next one is on task 1 too (counter 4 % 3). */
static void round_robin_placement(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  ds_strategy *s = make_ps(e, 2, 3, NULL);
  ds_variable *v1 = scalar_in(NULL, 0, "v1"), *v[4];
  char name[16];
  for (int i = 0; i < 4; i++) {
    snprintf(name, sizeof name, "v%d", i + 2);
    v[i] = scalar_in(s, (float)i + 1, name);
  }
  const int want[4] = { 0, 1, 2, 0 };
  for (int i = 0; i < 4; i++) {
    char dev[64];
    snprintf(dev, sizeof dev, "/job:ps/replica:0/task:%d/device:CPU:0", want[i]);
    assert_string_equal(ds_variable_device(v[i], 0), dev);
    assert_int_equal(ds_ps_component_task(s, v[i], 0), want[i]);
    assert_int_equal(ds_variable_kind_of(v[i]), DS_VARIABLE_PLAIN);
  }
  /* parameter_server_strategy_v2_test.testVariablePlacement: "v1 was created outside scope so
  ** should be on client": the coordinator's device, where the strategy connected the process. */
  assert_string_equal(ds_variable_device(v1, 0), "/job:chief/replica:0/task:0/device:CPU:0");
  assert_int_equal(ds_ps_num_components(s, v1), -1);
  ds_status st;
  ds_scope_enter(s, &st);
  ds_variable_colocate_begin(v[1], &st);
  md_tensor *t = md_tensor_scalar_f32(9);
  ds_variable *with = ds_variable_new(t, NULL, &st);
  ds_variable_colocate_end(&st);
  ds_variable *next = ds_variable_new(t, NULL, &st);
  ds_scope_exit(s, &st);
  assert_int_equal(ds_ps_component_task(s, with, 0), 1);
  assert_int_equal(ds_ps_component_task(s, next, 0), 1);
  md_tensor_free(t);
  ds_variable_free(with);
  ds_variable_free(next);
  for (int i = 0; i < 4; i++) ds_variable_free(v[i]);
  ds_variable_free(v1);
  ds_strategy_free(s);
  sim_engine_free(e);
}

/* FixedShardsPartitioner(2) with 3 ps: w [3, 2] becomes a ShardedVariable of w/part_0 (rows 0-1,
** ps 0) and w/part_1 (row 2, ps 1); the next variable takes ps 2. A scalar is never
** partitioned (ps 0 again: counter 3); partitions [1, 1] from MinSize give a plain variable;
** FixedShards(0) and (-1) give a partition list TF refuses; no initial value is a ValueError.
** The ShardedVariable reads as the concatenation, writes split by rows, and is refused as a
** shard of another ShardedVariable (TypeError). */
static void fixed_shards_placement(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  ds_partitioner two = ds_fixed_shards_partitioner(2);
  ds_strategy *s = make_ps(e, 2, 3, &two);
  md_tensor *init = iota(3, 2);
  ds_variable *w = var_in(s, init, "w");
  assert_int_equal(ds_variable_kind_of(w), DS_VARIABLE_SHARDED);
  assert_string_equal(ds_variable_kind_name(DS_VARIABLE_SHARDED), "ShardedVariable");
  ds_sharded_variable *sv = ds_variable_sharded(w);
  assert_int_equal(ds_sharded_variable_num_shards(sv), 2);
  assert_string_equal(ds_variable_name(ds_sharded_variable_shard(sv, 0)), "w/part_0");
  assert_string_equal(ds_variable_name(ds_sharded_variable_shard(sv, 1)), "w/part_1");
  assert_string_equal(ds_variable_copy_name(w, 1), "w/part_1:0");
  assert_string_equal(ds_variable_device(w, 0), "/job:ps/replica:0/task:0/device:CPU:0");
  assert_string_equal(ds_variable_device(w, 1), "/job:ps/replica:0/task:1/device:CPU:0");
  assert_int_equal(ds_variable_copy(w, 0)->shape[0], 2);
  assert_int_equal(ds_variable_copy(w, 1)->shape[0], 1);
  ds_status st;
  md_tensor *back = ds_variable_read(w, NULL, &st);
  assert_true(md_tensor_equal(back, init));
  md_tensor_scale(back, 2);
  assert_int_equal(ds_variable_assign(w, NULL, back, &st), 0);
  assert_true(md_tensor_get(ds_variable_copy(w, 1), 1) == 10.0);  /* element 5 doubled */
  md_tensor_free(back);
  ds_variable *parts[1] = { w };
  TU_EXPECT_REFUSED(ds_sharded_variable_new(parts, 1, NULL, &st), &st, DS_TYPE_ERROR);
  ds_variable *x = var_in(s, init, "x"); /* 2 shards: ps 2 and ps 0 */
  assert_int_equal(ds_ps_component_task(s, x, 0), 2);
  assert_int_equal(ds_ps_component_task(s, x, 1), 0);
  ds_variable *c = scalar_in(s, 1, "c");  /* counter 4 */
  assert_int_equal(ds_ps_component_task(s, c, 0), 1);
  assert_int_equal(ds_variable_kind_of(c), DS_VARIABLE_PLAIN);
  ds_variable *y = var_in(s, init, "y");  /* 5, 6: ps 2, 0 */
  assert_int_equal(ds_ps_component_task(s, y, 1), 0);
  ds_variable *free_list[4] = { w, x, c, y };
  for (int i = 0; i < 4; i++) ds_variable_free(free_list[i]);
  ds_strategy_free(s);

  ds_partitioner bad[3] = { ds_fixed_shards_partitioner(0), ds_fixed_shards_partitioner(-1) };
  ds_min_size_partitioner(DS_MIN_SHARD_BYTES_DEFAULT, 3, 16, &bad[2], &st);
  for (int k = 0; k < 3; k++) {
    s = make_ps(e, 1, 3, &bad[k]);
    ds_scope_enter(s, &st);
    ds_variable *v = ds_variable_new(init, NULL, &st);
    if (k < 2) TU_EXPECT_REFUSED(v, &st, DS_VALUE_ERROR);
    else assert_int_equal(ds_variable_kind_of(v), DS_VARIABLE_PLAIN); /* 24 bytes: [1, 1] */
    TU_EXPECT_REFUSED(ds_variable_new(NULL, NULL, &st), &st, DS_VALUE_ERROR);
    ds_scope_exit(s, &st);
    ds_variable_free(v);
    ds_strategy_free(s);
  }
  md_tensor_free(init);
  sim_engine_free(e);
}

/* An evaluator in the spec gets a VM after the coordinator: 2 workers, 2 ps and the chief keep
** their devices and routes (worker 0 -> chief still 2 hops), the evaluator is one task named as
** TF names it, with the machine's RAM (32e9 B) and roofline (1e11 FLOP/s, 2e10 B/s), and reaches
** the chief over the star (2 hops). ds_ps_snapshot_value gives a checkpoint reader w = iota(3, 2)
** whole again from its two shards (rows {0, 1} on ps 0, row {2} on ps 1) as saved, 0..5, after
** the live value was doubled; a variable outside the scope is not in the snapshot: NULL. */
static void evaluator_task_and_snapshot_values(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  ds_ps_cluster_spec spec = counts(2, 2);
  spec.evaluators = 1;
  ds_ps_cluster m = machines();
  ds_partitioner two = ds_fixed_shards_partitioner(2);
  ds_status st;
  ds_strategy *s = ds_ps_strategy_new(e, &spec, &m, &two, &st);
  assert_non_null(s);
  assert_int_equal(ds_ps_num_tasks(s, DS_PS_EVALUATOR), 1);
  assert_string_equal(ds_ps_task_device(s, DS_PS_COORDINATOR, 0), "/job:chief/replica:0/task:0/device:CPU:0");
  assert_string_equal(ds_ps_task_device(s, DS_PS_PS, 1), "/job:ps/replica:0/task:1/device:CPU:0");
  assert_string_equal(ds_ps_task_device(s, DS_PS_EVALUATOR, 0), "/job:evaluator/replica:0/task:0/device:CPU:0");
  assert_true(sim_mempool_capacity(ds_ps_task_memory(s, DS_PS_EVALUATOR, 0)) == 32000000000u);
  sim_roofline r = ds_ps_task_roofline(s, DS_PS_EVALUATOR, 0);
  assert_true(r.rate == 1e11 && r.mem_bw == 2e10);
  sim_link *route[8];
  assert_int_equal(ds_ps_route(s, DS_PS_WORKER, 0, DS_PS_COORDINATOR, 0, route, 8), 2);
  assert_int_equal(ds_ps_route(s, DS_PS_EVALUATOR, 0, DS_PS_COORDINATOR, 0, route, 8), 2);
  md_tensor *init = iota(3, 2);
  ds_variable *w = var_in(s, init, "w"), *outside = var_in(NULL, init, "outside");
  ds_ps_snapshot *snap = ds_ps_snapshot_take(s);
  md_tensor *doubled = md_tensor_copy(init);
  md_tensor_scale(doubled, 2);
  assert_int_equal(ds_variable_assign(w, NULL, doubled, &st), 0);
  md_tensor *saved = ds_ps_snapshot_value(s, snap, w);
  assert_non_null(saved);
  assert_true(md_tensor_equal(saved, init));
  assert_null(ds_ps_snapshot_value(s, snap, outside));
  md_tensor_free(saved);
  md_tensor_free(doubled);
  ds_ps_snapshot_free(snap);
  ds_variable_free(w);
  ds_variable_free(outside);
  md_tensor_free(init);
  ds_strategy_free(s);
  sim_engine_free(e);
}

static ds_dataset *count_fn(const ds_input_context *ctx, void *user, ds_status *st) {
  *(ds_input_context *)user = *ctx;
  return ds_dataset_range(0, 4, 1, st);
}

/* Workers with 2 GPUs: num_replicas_in_sync 2, replicas on worker 0's GPUs; reduce SUM of
** PerReplica (1, 2) is 3 (one worker's replicas only); gather is NotImplementedError;
** distribute_datasets_from_function calls dataset_fn with InputContext(1, 0, 2). */
static void strategy_methods(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  ds_ps_cluster m = machines();
  m.worker.accel = du_cluster(1, 2).machine.accel;
  ds_ps_cluster_spec spec = counts(3, 1);
  ds_status st;
  ds_strategy *s = ds_ps_strategy_new(e, &spec, &m, NULL, &st);
  assert_int_equal(ds_num_replicas_in_sync(s), 2);
  assert_string_equal(ds_replica_device(s, 1), "/job:worker/replica:0/task:0/device:GPU:1");
  ds_value *v = du_per_replica_f32(s, (const float[]){ 1, 2 });
  md_tensor *sum = ds_reduce(s, DS_REDUCE_SUM, v, DS_AXIS_NONE, &st);
  assert_non_null(sum);
  assert_true(md_tensor_get(sum, 0) == 3.0);
  md_tensor_free(sum);
  TU_EXPECT_REFUSED(ds_gather(s, v, 0, &st), &st, DS_NOT_IMPLEMENTED_ERROR);
  ds_value_free(v);
  ds_input_context seen = { 0 };
  ds_input_dataset *dd = ds_distribute_datasets_from_function(s, count_fn, &seen, NULL, &st);
  assert_non_null(dd);
  assert_int_equal(seen.num_input_pipelines, 1);
  assert_int_equal(seen.input_pipeline_id, 0);
  assert_int_equal(seen.num_replicas_in_sync, 2);
  /* input_lib's DistributedDataset.__iter__: ParameterServerStrategy builds its workers'
  ** datasets only inside ClusterCoordinator.create_per_worker_dataset, so iterating what it
  ** returns here is a ValueError, from a function or from a dataset alike. */
  ds_dataset *range = ds_dataset_range(0, 4, 1, NULL), *batched = ds_dataset_batch(range, 2, 0, NULL);
  ds_input_dataset *direct = ds_experimental_distribute_dataset(s, batched, NULL, &st);
  assert_non_null(direct);
  ds_input_dataset *both[2] = { dd, direct };
  for (int i = 0; i < 2; i++) {
    ds_input_iterator *it = ds_input_iterator_new(both[i]);
    ds_value *x = NULL;
    ds_status_clear(&st);
    assert_int_equal(ds_input_get_next(it, &x, &st), -1);
    assert_int_equal(st.kind, DS_VALUE_ERROR);
    assert_non_null(strstr(st.message, "ClusterCoordinator.create_per_worker_dataset"));
    ds_input_iterator_free(it);
  }
  ds_input_dataset_free(direct);
  ds_dataset_free(batched);
  ds_dataset_free(range);
  ds_input_dataset_free(dd);
  ds_strategy_free(s);
  sim_engine_free(e);
}

/* ClusterCoordinator(strategy): a ValueError for any strategy but ParameterServerStrategy (a
** MirroredStrategy here); one coordinator per strategy, the second call returning the first; its
** workers are the strategy's 3 worker tasks. */
static void cluster_coordinator_wrapper(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  ds_status st;
  ds_cluster cl = du_cluster(1, 2);
  ds_strategy *mirrored = ds_strategy_new(e, DS_MIRRORED, &cl, SIM_ALGO_RING);
  TU_EXPECT_REFUSED(ds_cluster_coordinator_new(mirrored, &st), &st, DS_VALUE_ERROR);
  ds_strategy_free(mirrored);
  ds_strategy *s = make_ps(e, 3, 2, NULL);
  ds_coordinator *c = ds_cluster_coordinator_new(s, &st);
  assert_non_null(c);
  assert_ptr_equal(ds_cluster_coordinator_new(s, &st), c);
  assert_int_equal(ds_coordinator_num_workers(c), 3);
  ds_strategy_free(s);
  sim_engine_free(e);
}

/* Adam on 2 ps with FixedShards(2): w [4, 2] -> w/part_0, w/part_1 (ps 0, 1), b [2] -> b/part_0,
** b/part_1 (ps 0, 1), then iterations takes counter 4: ps 0. Listing, in creation order with
** each component's m and v slots after it: 13 rows. RAM: ps 0 holds w/part_0 (4 floats) and
** b/part_0 (1), each with 2 slots: 5 x 4 x 3 = 60 bytes, plus iterations (8): 68; ps 1: 60.
** Freeing w releases its 48 bytes on each. A second optimizer is a ValueError. */
static void components_and_slots(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  ds_partitioner two = ds_fixed_shards_partitioner(2);
  ds_strategy *s = make_ps(e, 1, 2, &two);
  md_tensor *init = iota(4, 2), *bias = md_tensor_new(MD_FLOAT32, 1, (const int64_t[]){ 2 });
  ds_variable *w = var_in(s, init, "w");
  ds_variable *b = var_in(s, bias, "b"); /* [2] with FixedShards(2) -> 2 shards of 1 */
  md_optimizer_spec adam;
  md_optimizer_spec_defaults(&adam, MD_OPT_ADAM);
  ds_status st;
  assert_int_equal(ds_ps_set_optimizer(s, &adam, &st), 0);
  assert_int_equal(ds_ps_set_optimizer(s, &adam, &st), -1);
  assert_int_equal(st.kind, DS_VALUE_ERROR);
  ds_ps_component rows[16];
  int n = ds_ps_components(s, rows, 16);
  assert_int_equal(n, 13);
  const char *const names[13] = { "w/part_0:0", "w/part_0/m", "w/part_0/v", "w/part_1:0", "w/part_1/m",
                                  "w/part_1/v", "b/part_0:0", "b/part_0/m", "b/part_0/v", "b/part_1:0",
                                  "b/part_1/m", "b/part_1/v", "iterations:0" };
  const int ps_of[13] = { 0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1, 0 };
  for (int i = 0; i < 13; i++) {
    assert_string_equal(rows[i].name, names[i]);
    assert_int_equal(rows[i].ps, ps_of[i]);
  }
  assert_string_equal(rows[0].kind, "shard");
  assert_string_equal(rows[1].kind, "slot");
  assert_string_equal(rows[12].kind, "iterations");
  assert_int_equal(rows[12].rank, 0);
  assert_int_equal(rows[3].shape[0], 2);
  /* ps 0: w/part_0 (4 floats) + b/part_0 (1), each x 3 with slots, + iterations 8: 68 bytes;
  ** ps 1: w/part_1 (4) + b/part_1 (1), x 3: 60 bytes. */
  assert_int_equal(sim_mempool_used(ds_ps_task_memory(s, DS_PS_PS, 0)), 68);
  assert_int_equal(sim_mempool_used(ds_ps_task_memory(s, DS_PS_PS, 1)), 60);
  ds_variable_free(w);
  assert_int_equal(sim_mempool_used(ds_ps_task_memory(s, DS_PS_PS, 0)), 20);
  assert_int_equal(ds_ps_components(s, rows, 16), 7);
  ds_variable_free(b);
  md_tensor_free(init);
  md_tensor_free(bias);
  ds_strategy_free(s);
  sim_engine_free(e);
}

/* ---- whole-engine drivers ---------------------------------------------------------------- */

typedef struct job {
  ds_strategy *s;         /* the strategy */
  int worker;             /* the actor's worker task */
  ds_variable *v;         /* what it reads or updates */
  const md_tensor *ids;   /* lookup ids, or NULL for a read */
  float grad;             /* push: every element of the gradient */
  sim_time delay;         /* push: sleep this long after reading */
  md_tensor *got;         /* what the read or lookup returned */
  md_tensor *g;           /* push: the gradient, freed by the on-kill path when killed */
  int64_t read_version[2];/* versions the read saw */
  int64_t applied_at[2];  /* versions the push arrived at */
  sim_time read_done, push_start, push_done; /* when */
  ds_status st;           /* its error */
} job;

static void reader(sim_actor *self, void *arg) {
  job *j = arg;
  j->got = j->ids ? ds_ps_embedding_lookup(j->s, self, j->worker, j->v, j->ids, j->read_version, &j->st)
                  : ds_ps_read(j->s, self, j->worker, j->v, j->read_version, &j->st);
  j->read_done = sim_now(sim_actor_engine(self));
}

/* Reads v (looks up ids), sleeps `delay`, pushes a gradient of `grad` everywhere (with ids: the
** IndexedSlices of those ids, one row of `grad` per id). */
static void trainer(sim_actor *self, void *arg) {
  job *j = arg;
  sim_engine *e = sim_actor_engine(self);
  reader(self, arg);
  md_tensor_free(j->got);
  j->got = NULL;
  sim_sleep(self, j->delay);
  j->push_start = sim_now(e);
  int64_t shape[2];
  md_tensor want = { .rank = 0 };
  ds_sharded_variable *sv = ds_variable_sharded(j->v);
  want.rank = sv ? ds_sharded_variable_shape(sv, shape) : ds_variable_copy(j->v, 0)->rank;
  memcpy(want.shape, sv ? shape : ds_variable_copy(j->v, 0)->shape, sizeof shape);
  if (j->ids) want.shape[0] = (int64_t)j->ids->size;  /* IndexedSlices: one row per id */
  j->g = md_tensor_new(MD_FLOAT32, want.rank, want.shape);
  for (size_t i = 0; i < j->g->size; i++) md_tensor_f32(j->g)[i] = j->grad;
  ds_ps_grad g = { .dense = j->ids ? NULL : j->g, .indices = j->ids, .values = j->ids ? j->g : NULL };
  ds_ps_apply_gradients(j->s, self, j->worker, 1, &j->v, &g, -1, j->applied_at, &j->st);
  md_tensor_free(j->g);
  j->g = NULL;
  j->push_done = sim_now(e);
}

/* A closure through ds_ps_read_many: its variables and iterations in one read, then (push) a
** sleep of `delay` and a push of `grad` everywhere with the t that read gave. */
typedef struct many_job {
  ds_strategy *s;         /* the strategy */
  int worker;             /* the actor's worker task */
  int n;                  /* variables */
  ds_variable **vars;     /* them */
  float grad;             /* push: every element of the gradient */
  int push;               /* push after reading */
  sim_time delay;         /* push: sleep this long first */
  md_tensor *got[4];      /* what the read returned */
  int64_t versions[4];    /* versions it saw (one component each) */
  int64_t step;           /* iterations + 1 as read */
  int64_t iterations_at_push; /* optimizer.iterations when the push started */
  sim_time read_done;     /* when */
  ds_status st;           /* its error */
} many_job;

static void many_reader(sim_actor *self, void *arg) {
  many_job *j = arg;
  if (ds_ps_read_many(j->s, self, j->worker, j->n, j->vars, NULL, j->got, j->versions, &j->step, &j->st) != 0) return;
  j->read_done = sim_now(sim_actor_engine(self));
  if (!j->push) return;
  sim_sleep(self, j->delay);
  j->iterations_at_push = ds_ps_optimizer_iterations(j->s);
  ds_ps_grad g[4];
  for (int i = 0; i < j->n; i++) {
    for (size_t k = 0; k < j->got[i]->size; k++) md_tensor_f32(j->got[i])[k] = j->grad;
    g[i] = (ds_ps_grad){ .dense = j->got[i] };
  }
  ds_ps_apply_gradients(j->s, self, j->worker, j->n, j->vars, g, j->step, NULL, &j->st);
  for (int i = 0; i < j->n; i++) md_tensor_free(j->got[i]);
}

static void release_on_kill(sim_actor *self, void *arg) {
  (void)self;
  job *j = arg;
  ds_ps_worker_release(j->s, j->worker);
  md_tensor_free(j->g);
  j->g = NULL;
}

/* emb [8, 4] float32 in 2 shards of 4 rows (ps 0, ps 1), read by worker 0 over the star (links
** 1 GB/s, 5 us). A lookup of ids [1, 6] (int64) is a request then a response per shard. The
** requests: shard 0 receives id 1, shard 1 id 6, 8 bytes each, after the route's 2 x 5 us, sharing
** the worker's up link (0.5 GB/s each): 16 ns, so they arrive at 10.016 us and the worker's up
** link has moved 16 bytes. The responses: row 1 of shard 0 and row 2 of shard 1, 1 row x 4 floats
** x 4 bytes = 16 bytes per shard, after 10 us sharing the worker's down link: 32 ns. Done at
** 10.016 + 10.032 = 20.048 us (10.032 us before the ids were charged), and ps 0's up link has
** moved 16 bytes. Converting emb to a tensor sends no ids and moves every shard: 64 bytes each,
** 128 ns: done 10.128 us after it starts, ps 0's link at 16 + 64 = 80 bytes. Both give the values
** the numerics give, and the trace has a comm span on ps 0's up link for each. */
static void lookup_moves_rows_only(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  sim_trace_enable(e, 1);
  md_tensor *init;
  ds_variable *emb;
  ds_strategy *s = two_shards(e, 8, 4, "emb", &init, &emb);
  int64_t idv[2] = { 1, 6 };
  md_tensor *ids = md_tensor_vector_i64(2, idv);
  job j = { .s = s, .worker = 0, .v = emb, .ids = ids };
  sim_actor_spawn(e, "worker0", reader, &j);
  assert_int_equal(sim_run(e), 0);
  assert_int_equal(j.read_done, 20048000);
  sim_link *route[2], *up[2];
  ds_ps_route(s, DS_PS_PS, 0, DS_PS_WORKER, 0, route, 2);
  ds_ps_route(s, DS_PS_WORKER, 0, DS_PS_PS, 0, up, 2);
  assert_true(sim_link_bytes(route[0]) == 16.0);
  assert_true(sim_link_bytes(up[0]) == 16.0);
  ds_status st;
  md_tensor *want = ds_sharded_variable_embedding_lookup(ds_variable_sharded(emb), ids, &st);
  assert_true(md_tensor_equal(j.got, want));
  assert_true(md_tensor_get(j.got, 4) == 24.0); /* row 6, column 0 */
  md_tensor_free(want);
  md_tensor_free(j.got);
  sim_time start = sim_now(e);
  j.ids = NULL;
  sim_actor_spawn(e, "worker0", reader, &j);
  assert_int_equal(sim_run(e), 0);
  assert_int_equal(j.read_done - start, 10128000);
  assert_true(sim_link_bytes(route[0]) == 80.0);
  assert_true(md_tensor_equal(j.got, init));
  assert_int_equal(j.read_version[0], 0);
  md_tensor_free(j.got);
  md_tensor_free(ids);
  md_tensor_free(init);
  ds_variable_free(emb);
  ds_strategy_free(s);
  sim_engine_free(e);
}

/* emb [8, 4] = iota in 2 shards of 4 rows (ps 0, ps 1; iterations on ps 0), SGD momentum 0.5,
** lr 0.5. Worker 0 looks up ids [1, 6, 1] and pushes their IndexedSlices (rows of 1.0): by the
** div rule shard 0 gets local rows [1, 1], 2 x (16 + 8) = 48 bytes, shard 1 local row [2], 24
** bytes; the dense push would move 64 bytes to each. The push phase: iterations read (8 bytes,
** 10 us + 8 ns), both slices after the route's 10 us sharing the worker's up link (0.5 GB/s each:
** 24 bytes in 48 ns, then the rest of shard 0's at 1 GB/s, 24 ns: 10.072 us), the ps updates
** (roofline, memory-bound at 5 FLOP per byte: ps 0 dedup 8 elements 96 bytes + momentum 4
** elements 80 bytes = 880 -> 8.8 ns; ps 1 6.4 ns, in parallel), the iterations push (10.008 us):
** 30.0968 us. The worker's up link moved the lookup's ids, 3 x 8 = 24 bytes, then 48 + 24 + 8 =
** 80 in the push: 104 (80 before the ids were charged); ps 0's down link the ids [1, 1], 16 bytes,
** then 48 + 8: 72 (was 56); ps 1's down link the id [6], 8, then 24: 32 (was 24).
** Numerics (the sparse momentum kernel): row 1 gets g = 1 + 1 = 2 once: a = -1, w = [3 4 5 6];
** row 6 (shard 1, row 2): a = -0.5, w = [23.5 .. 26.5]; every other row keeps its value. A second
** lookup and push of ids [2] reach shard 1 with no id and no rows (0 bytes, latency only: its
** down link stays at 32) and the push still counts an update there: versions 2 and 2. */
static void slices_push_moves_rows_only(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  md_tensor *init;
  ds_variable *emb;
  ds_strategy *s = two_shards(e, 8, 4, "emb", &init, &emb);
  md_optimizer_spec sgd;
  md_optimizer_spec_defaults(&sgd, MD_OPT_SGD);
  sgd.learning_rate = 0.5f;
  sgd.momentum = 0.5f;
  ds_status st;
  assert_int_equal(ds_ps_set_optimizer(s, &sgd, &st), 0);
  int64_t idv[3] = { 1, 6, 1 };
  md_tensor *ids = md_tensor_vector_i64(3, idv);
  job j = { .s = s, .worker = 0, .v = emb, .ids = ids, .grad = 1.0f };
  sim_actor_spawn(e, "worker0", trainer, &j);
  assert_int_equal(sim_run(e), 0);
  assert_int_equal(j.st.kind, DS_OK);
  assert_int_equal(j.push_done - j.push_start, 30096800);
  sim_link *up[2], *other[2];
  ds_ps_route(s, DS_PS_WORKER, 0, DS_PS_PS, 0, up, 2);
  ds_ps_route(s, DS_PS_WORKER, 0, DS_PS_PS, 1, other, 2);
  assert_true(sim_link_bytes(up[0]) == 104.0);
  assert_true(sim_link_bytes(up[1]) == 72.0);
  assert_true(sim_link_bytes(other[1]) == 32.0);
  const float *p0 = md_tensor_f32((md_tensor *)ds_variable_copy(emb, 0));
  const float *p1 = md_tensor_f32((md_tensor *)ds_variable_copy(emb, 1));
  for (int c = 0; c < 4; c++) {
    assert_true(p0[c] == (float)c);
    assert_true(p0[4 + c] == 4.0f + (float)c - 1.0f);
    assert_true(p1[8 + c] == 24.0f + (float)c - 0.5f);
    assert_true(p1[12 + c] == 28.0f + (float)c);
  }
  assert_int_equal(j.applied_at[0], 0);
  assert_int_equal(j.applied_at[1], 0);
  int64_t two_v[1] = { 2 };
  md_tensor *ids2 = md_tensor_vector_i64(1, two_v);
  j.ids = ids2;
  sim_actor_spawn(e, "worker0", trainer, &j);
  assert_int_equal(sim_run(e), 0);
  assert_true(sim_link_bytes(other[1]) == 32.0);
  assert_int_equal(ds_ps_component_version(s, emb, 0), 2);
  assert_int_equal(ds_ps_component_version(s, emb, 1), 2);
  assert_int_equal(ds_ps_optimizer_iterations(s), 2);
  md_tensor_free(ids2);
  md_tensor_free(ids);
  md_tensor_free(init);
  ds_variable_free(emb);
  ds_strategy_free(s);
  sim_engine_free(e);
}

/* Two workers, one ps, SGD with momentum 0.9 and lr 0.1 on w = [1]. Worker 1's up link is
** slowed to 1 MB/s; worker 0 sleeps 1 us after its read. Worker 1 starts its push first (its
** iterations read then a 4-byte push taking 10 us + 4 us), worker 0 1 us later (10 us + 4 ns), so
** worker 0's update arrives first: applied at version 0, worker 1's at version 1 (staleness 1:
** it read version 0). In that order v = -0.1, w = 0.9, then v = 0.9 x -0.1 - 0.1 x 10 = -1.09,
** w = -0.19 (the other order would give -1.0). Versions end at 2, iterations at 2. */
static void arrival_order_and_versions(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  ds_strategy *s = make_ps(e, 2, 1, NULL);
  float one = 1.0f;
  md_tensor *init = md_tensor_vector_f32(1, &one);
  ds_variable *w = var_in(s, init, "w");
  md_optimizer_spec sgd;
  md_optimizer_spec_defaults(&sgd, MD_OPT_SGD);
  sgd.learning_rate = 0.1f;
  sgd.momentum = 0.9f;
  ds_status st;
  assert_int_equal(ds_ps_set_optimizer(s, &sgd, &st), 0);
  sim_link *route[2];
  ds_ps_route(s, DS_PS_WORKER, 1, DS_PS_PS, 0, route, 2);
  sim_link_set_bandwidth(route[0], 1e6);
  job j0 = { .s = s, .worker = 0, .v = w, .grad = 1.0f, .delay = 1000000 };
  job j1 = { .s = s, .worker = 1, .v = w, .grad = 10.0f };
  sim_actor_spawn(e, "worker0", trainer, &j0);
  sim_actor_spawn(e, "worker1", trainer, &j1);
  assert_int_equal(sim_run(e), 0);
  assert_true(j1.push_start < j0.push_start);
  assert_true(j0.push_done < j1.push_done);
  assert_int_equal(j0.read_version[0], 0);
  assert_int_equal(j1.read_version[0], 0);
  assert_int_equal(j0.applied_at[0], 0);
  assert_int_equal(j1.applied_at[0], 1);
  assert_int_equal(ds_ps_component_version(s, w, 0), 2);
  assert_int_equal(ds_ps_optimizer_iterations(s), 2);
  float v = 0.9f * 0.0f - 0.1f * 1.0f, want = 1.0f + v;
  v = 0.9f * v - 0.1f * 10.0f;
  want += v;
  assert_true(md_tensor_f32(ds_variable_copy(w, 0))[0] == want);
  assert_true(want < -0.18f && want > -0.2f);
  md_tensor_free(init);
  ds_variable_free(w);
  ds_strategy_free(s);
  sim_engine_free(e);
}

/* A closure's reads in one operation. The r1 model's four variables on one ps (kernel [8, 16]
** 512 bytes, bias [16] 64, kernel_1 [16, 3] 192, bias_1 [3] 12) and optimizer.iterations (8),
** read by worker 0 over the star (1 GB/s, 5 us a link). All at once: one route latency (10 us),
** then 788 bytes sharing the ps's up and the worker's down link max-min (5 flows at 0.2 GB/s:
** iterations done at 40 ns, bias_1 at 56, bias at 212, kernel_1 at 468, kernel at 788 ns): the
** reads end at 10.788 us. One after the other they took 4 x 10 us + 780 ns, then iterations'
** 10.008 us: 50.788 us. Every value is its init, every version 0, step = iterations + 1 = 1. */
static void closure_reads_share_one_latency(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  ds_strategy *s = make_ps(e, 1, 1, NULL);
  static const int64_t shapes[4][2] = { { 8, 16 }, { 16, 0 }, { 16, 3 }, { 3, 0 } };
  static const char *const names[4] = { "kernel", "bias", "kernel_1", "bias_1" };
  md_tensor *init[4];
  ds_variable *vars[4];
  for (int i = 0; i < 4; i++) {
    init[i] = md_tensor_new(MD_FLOAT32, shapes[i][1] ? 2 : 1, shapes[i]);
    for (size_t k = 0; k < init[i]->size; k++) md_tensor_f32(init[i])[k] = (float)(i * 1000 + (int)k);
    vars[i] = var_in(s, init[i], names[i]);
  }
  md_optimizer_spec sgd;
  md_optimizer_spec_defaults(&sgd, MD_OPT_SGD);
  ds_status st;
  assert_int_equal(ds_ps_set_optimizer(s, &sgd, &st), 0);
  many_job j = { .s = s, .n = 4, .vars = vars };
  sim_actor_spawn(e, "worker0", many_reader, &j);
  assert_int_equal(sim_run(e), 0);
  assert_int_equal(j.st.kind, DS_OK);
  assert_int_equal(j.read_done, 10788000);
  assert_int_equal(j.step, 1);
  for (int i = 0; i < 4; i++) {
    assert_true(md_tensor_equal(j.got[i], init[i]));
    assert_int_equal(j.versions[i], 0);
    md_tensor_free(j.got[i]);
    ds_variable_free(vars[i]);
    md_tensor_free(init[i]);
  }
  ds_strategy_free(s);
  sim_engine_free(e);
}

/* Adam's t comes from the closure's read, as TF's local_step = iterations + 1 does. Two workers,
** one ps, w = [1], adam lr 0.1. Both read at 0 (w and iterations: step 1), their 4 x (4 + 8)
** bytes sharing the ps's up link: done at 10 us + 24 ns. Worker 0 pushes gradient 1 at once
** (10.004 us: applied at 20.028 us), then its iterations += 1 (10.008 us more, about 30.04 us).
** Worker 1 waits 40 us, then pushes gradient 10 at 50.024 us with the t it read, 1, although
** iterations is 1 by then: a stale t, exactly as in TF. w is then adam(t=1, g=1) followed by
** adam(t=1, g=10) on the slots the first left; reading t at the push would give t = 2 there,
** another w (checked to differ, so the test can fail). Iterations end at 2. */
static void adam_step_from_the_read(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  ds_strategy *s = make_ps(e, 2, 1, NULL);
  float one = 1.0f;
  md_tensor *init = md_tensor_vector_f32(1, &one);
  ds_variable *w = var_in(s, init, "w");
  md_optimizer_spec adam;
  md_optimizer_spec_defaults(&adam, MD_OPT_ADAM);
  adam.learning_rate = 0.1f;
  ds_status st;
  assert_int_equal(ds_ps_set_optimizer(s, &adam, &st), 0);
  many_job j0 = { .s = s, .worker = 0, .n = 1, .vars = &w, .grad = 1.0f, .push = 1 };
  many_job j1 = { .s = s, .worker = 1, .n = 1, .vars = &w, .grad = 10.0f, .push = 1, .delay = 40000000 };
  sim_actor_spawn(e, "worker0", many_reader, &j0);
  sim_actor_spawn(e, "worker1", many_reader, &j1);
  assert_int_equal(sim_run(e), 0);
  assert_int_equal(j0.read_done, 10024000);
  assert_int_equal(j0.step, 1);
  assert_int_equal(j1.step, 1);
  assert_int_equal(j1.iterations_at_push, 1);
  assert_int_equal(ds_ps_optimizer_iterations(s), 2);
  float stale = 1.0f, fresh = 1.0f, m[2] = { 0 }, v[2] = { 0 }, g0 = 1.0f, g1 = 10.0f;
  float *slots0[2] = { &m[0], &v[0] }, *slots1[2] = { &m[1], &v[1] };
  md_cost cost = { 0 };
  md_optimizer_update(&adam, 1, &stale, &g0, slots0, 1, &cost);
  md_optimizer_update(&adam, 1, &fresh, &g0, slots1, 1, &cost);
  md_optimizer_update(&adam, 1, &stale, &g1, slots0, 1, &cost);
  md_optimizer_update(&adam, 2, &fresh, &g1, slots1, 1, &cost);
  assert_true(stale != fresh);
  assert_true(md_tensor_f32(ds_variable_copy(w, 0))[0] == stale);
  md_tensor_free(init);
  ds_variable_free(w);
  ds_strategy_free(s);
  sim_engine_free(e);
}

static void kill_event(sim_engine *e, void *arg) {
  (void)e;
  sim_actor_kill(arg);
}

/* A push of 1000 floats over a 1 MB/s up link takes 4 ms; the worker is killed at 1 ms, its
** on-kill path releasing its push. Nothing is applied: w, its version and iterations are
** unchanged. A new actor of the same worker then pushes: version 1, iterations 1, w = 1 - 0.1. */
static void killed_push_applies_nothing(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  ds_strategy *s = make_ps(e, 1, 1, NULL);
  int64_t shape[1] = { 1000 };
  md_tensor *init = md_tensor_new(MD_FLOAT32, 1, shape);
  for (size_t i = 0; i < init->size; i++) md_tensor_f32(init)[i] = 1.0f;
  ds_variable *w = var_in(s, init, "w");
  md_optimizer_spec sgd;
  md_optimizer_spec_defaults(&sgd, MD_OPT_SGD);
  sgd.learning_rate = 0.1f;
  ds_status st;
  ds_ps_set_optimizer(s, &sgd, &st);
  sim_link *route[2];
  ds_ps_route(s, DS_PS_WORKER, 0, DS_PS_PS, 0, route, 2);
  sim_link_set_bandwidth(route[0], 1e6);
  job j = { .s = s, .worker = 0, .v = w, .grad = 1.0f };
  sim_actor *a = sim_actor_spawn(e, "worker0", trainer, &j);
  sim_actor_on_kill(a, release_on_kill, &j);
  sim_schedule(e, 1000000000, kill_event, a);
  assert_int_equal(sim_run(e), 0);
  assert_int_equal(j.push_done, 0);
  assert_int_equal(ds_ps_component_version(s, w, 0), 0);
  assert_int_equal(ds_ps_optimizer_iterations(s), 0);
  assert_true(md_tensor_equal(ds_variable_copy(w, 0), init));
  sim_actor_spawn(e, "worker0", trainer, &j);
  assert_int_equal(sim_run(e), 0);
  assert_int_equal(ds_ps_component_version(s, w, 0), 1);
  assert_int_equal(ds_ps_optimizer_iterations(s), 1);
  assert_true(md_tensor_f32(ds_variable_copy(w, 0))[999] == 1.0f - 0.1f * 1.0f);
  md_tensor_free(init);
  ds_variable_free(w);
  ds_strategy_free(s);
  sim_engine_free(e);
}

static void fail_ps1(sim_engine *e, void *arg) {
  (void)e;
  ds_ps_set_failed(arg, 1, 1);
}

/* w [4, 2] sharded over ps 0 and 1. With ps 1 failed a read is UnavailableError naming
** /job:ps/replica:0/task:1 at once. Back up, a push whose ps 1 fails at 5 us (bytes in flight)
** applies the shard on ps 0 (version 1) but not the one on ps 1, raises UnavailableError, and
** leaves iterations at 0. */
static void failed_ps_is_unavailable(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  md_tensor *init;
  ds_variable *w;
  ds_strategy *s = two_shards(e, 4, 2, "w", &init, &w);
  md_optimizer_spec sgd;
  md_optimizer_spec_defaults(&sgd, MD_OPT_SGD);
  ds_status st;
  ds_ps_set_optimizer(s, &sgd, &st); /* iterations on ps 0 (counter 2) */
  ds_ps_set_failed(s, 1, 1);
  assert_true(ds_ps_failed(s, 1));
  job j = { .s = s, .worker = 0, .v = w };
  sim_actor_spawn(e, "worker0", reader, &j);
  assert_int_equal(sim_run(e), 0);
  assert_null(j.got);
  assert_int_equal(j.st.kind, DS_UNAVAILABLE_ERROR);
  assert_non_null(strstr(j.st.message, "/job:ps/replica:0/task:1"));
  assert_int_equal(j.read_done, 0);
  ds_ps_set_failed(s, 1, 0);
  job p = { .s = s, .worker = 0, .v = w, .grad = 1.0f };
  sim_actor_spawn(e, "worker0", trainer, &p);
  sim_schedule(e, sim_now(e) + 25000000, fail_ps1, s); /* after its read (10 us) and iterations read */
  assert_int_equal(sim_run(e), 0);
  assert_int_equal(p.st.kind, DS_UNAVAILABLE_ERROR);
  assert_non_null(strstr(p.st.message, "/job:ps/replica:0/task:1"));
  assert_int_equal(ds_ps_component_version(s, w, 0), 1);
  assert_int_equal(ds_ps_component_version(s, w, 1), 0);
  assert_int_equal(ds_ps_optimizer_iterations(s), 0);
  md_tensor_free(init);
  ds_variable_free(w);
  ds_strategy_free(s);
  sim_engine_free(e);
}

/* A closure on a variable of shapes alone: one read of it, then its gradient (the read's shape)
** pushed with the step the read gave. */
typedef struct shape_job {
  ds_strategy *s;         /* the strategy */
  ds_variable *v;         /* the variable */
  md_tensor *got;         /* what the read returned */
  int64_t version;        /* the version it saw */
  int64_t step;           /* iterations + 1 as read */
  ds_status st;           /* its error */
} shape_job;

static void shape_closure(sim_actor *self, void *arg) {
  shape_job *j = arg;
  if (ds_ps_read_many(j->s, self, 0, 1, &j->v, NULL, &j->got, &j->version, &j->step, &j->st) != 0) return;
  ds_ps_grad g = { .dense = j->got };
  ds_ps_apply_gradients(j->s, self, 0, 1, &j->v, &g, j->step, NULL, &j->st);
}

/* numerics off: a [2e9, 64] float32 table (512 GB, twenty times this host's memory) in 2 shards on
** 2 ps tasks of 1 TB, trained by Adagrad, is its shape alone: no shard, slot, read or checkpoint
** holds a value (held, the first allocation would fail and the test with it), while the ps tasks
** reserve what TF's would hold, 2 x (256 GB + a 256 GB accumulator) + the 8 bytes of iterations,
** and a checkpoint counts those bytes. A closure reads it and pushes a dense gradient (step 1);
** restoring the checkpoint taken before gives iterations 0 back. */
static void shapes_alone_hold_no_values(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  ds_ps_cluster_spec spec = counts(1, 2);
  ds_ps_cluster m = machines();
  m.ps.ram_bytes = 1e12;
  ds_partitioner two = ds_fixed_shards_partitioner(2);
  ds_status st;
  ds_strategy *s = ds_ps_strategy_new(e, &spec, &m, &two, &st);
  assert_non_null(s);
  int64_t shape[2] = { 2000000000, 64 };
  md_tensor *init = md_tensor_shape(MD_FLOAT32, 2, shape);
  assert_false(md_tensor_has_values(init));
  shape_job j = { .s = s, .v = var_in(s, init, "table") };
  md_optimizer_spec adagrad;
  md_optimizer_spec_defaults(&adagrad, MD_OPT_ADAGRAD);
  assert_int_equal(ds_ps_set_optimizer(s, &adagrad, &st), 0);
  for (int k = 0; k < 2; k++) {
    assert_null(ds_variable_copy(j.v, k)->data);
    assert_true(ds_variable_copy(j.v, k)->size == 64000000000u);
  }
  uint64_t used = sim_mempool_used(ds_ps_task_memory(s, DS_PS_PS, 0)) + sim_mempool_used(ds_ps_task_memory(s, DS_PS_PS, 1));
  assert_true(used == 2 * 2 * 256000000000u + 8);
  ds_ps_snapshot *snap = ds_ps_snapshot_take(s);
  assert_true(ds_ps_snapshot_bytes(snap) == used);
  sim_actor_spawn(e, "worker0", shape_closure, &j);
  assert_int_equal(sim_run(e), 0);
  assert_int_equal(j.st.kind, DS_OK);
  assert_int_equal(j.step, 1);
  assert_null(j.got->data);
  assert_true(j.got->size == 128000000000u);
  assert_int_equal(ds_ps_optimizer_iterations(s), 1);
  assert_int_equal(ds_ps_snapshot_restore(s, snap, &st), 0);
  assert_int_equal(ds_ps_optimizer_iterations(s), 0);
  ds_ps_snapshot_free(snap);
  md_tensor_free(j.got);
  md_tensor_free(init);
  ds_variable_free(j.v);
  ds_strategy_free(s);
  sim_engine_free(e);
}

/* Fast-forward's counters (ps_skip.c): a variable in two shards and the optimizer's iterations
** are three registry components, plus iterations' value: four counters, all 0 at the start.
** Two periods of a period that moved them by 3, 5, 8 and 8 leave versions 6 and 10 on the
** shards, 16 on iterations' component and 16 as optimizer.iterations. */
static void skip_moves_versions_and_iterations(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  md_tensor *init;
  ds_variable *v;
  ds_strategy *s = two_shards(e, 4, 2, "emb", &init, &v);
  md_optimizer_spec sgd;
  md_optimizer_spec_defaults(&sgd, MD_OPT_SGD);
  ds_status st;
  assert_int_equal(ds_ps_set_optimizer(s, &sgd, &st), 0);
  int64_t c[4];
  assert_int_equal(ds_ps_counters(s, NULL), 4);
  assert_int_equal(ds_ps_counters(s, c), 4);
  for (int i = 0; i < 4; i++) assert_int_equal(c[i], 0);
  const int64_t delta[4] = { 3, 5, 8, 8 };
  ds_ps_skip_counters(s, delta, 2);
  assert_int_equal(ds_ps_component_version(s, v, 0), 6);
  assert_int_equal(ds_ps_component_version(s, v, 1), 10);
  assert_int_equal(ds_ps_optimizer_iterations(s), 16);
  ds_ps_counters(s, c);
  assert_int_equal(c[2], 16);
  md_tensor_free(init);
  ds_variable_free(v);
  ds_strategy_free(s);
  sim_engine_free(e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(tf_config_and_tasks), cmocka_unit_test(cluster_value_errors),
    cmocka_unit_test(round_robin_placement), cmocka_unit_test(fixed_shards_placement),
    cmocka_unit_test(evaluator_task_and_snapshot_values),
    cmocka_unit_test(strategy_methods),
    cmocka_unit_test(cluster_coordinator_wrapper), cmocka_unit_test(components_and_slots),
    cmocka_unit_test(lookup_moves_rows_only), cmocka_unit_test(slices_push_moves_rows_only),
    cmocka_unit_test(arrival_order_and_versions), cmocka_unit_test(closure_reads_share_one_latency),
    cmocka_unit_test(adam_step_from_the_read),
    cmocka_unit_test(skip_moves_versions_and_iterations),
    cmocka_unit_test(killed_push_applies_nothing), cmocka_unit_test(failed_ps_is_unavailable),
    cmocka_unit_test(shapes_alone_hold_no_values),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
