/*
** test_strategy.c: the batch split and the replica layout of the issue-2 strategies.
*/
#include "tests/testutil.h"

#include "strategies/input/input.h"
#include "strategies/core/strategy.h"

/* The rebatch rule on one worker (ds_input_batch_sizes_for_worker with W = 1), which the input
** plan's rebatch follows. G = 7 over 4 replicas: f = 7/4 = 1, 7 - 4*1 = 3 replicas get f+1 = 2
** (tf-distribute-semantics.md section 5): 2,2,2,1. */
static void split_uneven_batch(void **state) {
  (void)state;
  int64_t sizes[4], want[4] = { 2, 2, 2, 1 };
  ds_input_batch_sizes_for_worker(7, 1, 4, 0, sizes);
  assert_memory_equal(sizes, want, sizeof sizes);
}

/* G = 32 over 4: 8 each, the golden cases' rule. */
static void split_even_batch(void **state) {
  (void)state;
  int64_t sizes[4];
  ds_input_batch_sizes_for_worker(32, 1, 4, 0, sizes);
  for (int r = 0; r < 4; r++) assert_int_equal(sizes[r], 8);
}

/* A global batch of 3 over 4 replicas: the first three get one, the last nothing. */
static void split_leaves_late_replicas_empty(void **state) {
  (void)state;
  int64_t sizes[4], want[4] = { 1, 1, 1, 0 };
  ds_input_batch_sizes_for_worker(3, 1, 4, 0, sizes);
  assert_memory_equal(sizes, want, sizeof sizes);
}

static ds_cluster four_workers(void) {
  ds_cluster c = { .workers = 4, .machine = { .flops_per_s = 1e11, .mem_bytes_per_s = 2e10,
                   .ram_bytes = 32e9, .nic_bytes_per_s = 2e9 },
                   .fabric = SIM_FABRIC_STAR, .link_bytes_per_s = 1e10, .latency = 5000000 };
  return c;
}

/* multi_worker_mirrored: one replica per worker, named as TF names a worker's CPU. */
static void mirrored_replicas_are_workers(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  ds_cluster c = four_workers();
  ds_strategy *s = ds_strategy_new(e, DS_MULTI_WORKER_MIRRORED, &c, SIM_ALGO_RING);
  assert_int_equal(ds_num_replicas_in_sync(s), 4);
  assert_string_equal(ds_replica_device(s, 2), "/job:worker/replica:0/task:2/device:CPU:0");
  sim_link *links[16];
  assert_int_equal(ds_links(s, links, 16), 8);  /* star: an up and a down link per worker */
  ds_strategy_free(s);
  sim_engine_free(e);
}

/* one_device uses only the first worker, whatever the cluster size. */
static void one_device_has_one_replica(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  ds_cluster c = four_workers();
  ds_strategy *s = ds_strategy_new(e, DS_ONE_DEVICE, &c, SIM_ALGO_RING);
  assert_int_equal(ds_num_replicas_in_sync(s), 1);
  assert_string_equal(ds_replica_device(s, 0), "/job:localhost/replica:0/task:0/device:CPU:0");
  sim_link *links[4];
  assert_int_equal(ds_links(s, links, 4), 0);
  ds_strategy_free(s);
  sim_engine_free(e);
}

/* Two workers with two accelerators each: four replicas GPU:0, GPU:1 per task, each on its own
** compute (312 TFLOP/s x 0.5) with its own 80 GB of HBM. The gradient all-reduce of 4 MB over
** the ring 0-1-2-3 crosses: 0->1 and 2->3 within a VM (GPU up and down at 300 GB/s, 1 us each),
** 1->2 and 3->0 between VMs (up, the star's two links at min(100 GB/s, NIC 25 GB/s), down). Each of
** the 6 ring steps moves a quarter of 2^20 floats, 1048576 B; the slowest transfer (between VMs,
** NIC-bound at 25 GB/s) sets every rank's step: 2*1 us + 2*5 us + 1048576 B / 25e9 B/s
** = 12 us + 41.94304 us = 53.94304 us, so 6 steps take 323.65824 us, plus the 3 reduce-scatter
** steps' adds of 262144 floats at 156 TFLOP/s (1681 ps each, rounded up). */
static ds_cluster gpu_workers(void) {
  ds_cluster c = four_workers();
  c.workers = 2;
  c.machine.nic_bytes_per_s = 25e9;
  c.link_bytes_per_s = 100e9;
  c.machine.accel = (ds_accelerators){ .count = 2, .peak_flops = 312e12, .efficiency = 0.5,
                                       .hbm_bytes = 80e9, .hbm_bytes_per_s = 2e12,
                                       .link_bytes_per_s = 300e9, .link_latency = 1000000,
                                       .workspace_bytes = 256.0 * 1024 * 1024 };
  return c;
}

typedef struct { ds_strategy *s; int r; float *buf; } reducer;

static void reduce_gradients(sim_actor *self, void *arg) {
  reducer *x = arg;
  ds_all_reduce_sum(x->s, self, x->r, x->buf, 1 << 20);
}

static void accelerators_are_replicas(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  ds_cluster c = gpu_workers();
  ds_strategy *s = ds_strategy_new(e, DS_MULTI_WORKER_MIRRORED, &c, SIM_ALGO_RING);
  assert_int_equal(ds_num_replicas_in_sync(s), 4);
  assert_string_equal(ds_replica_device(s, 3), "/job:worker/replica:0/task:1/device:GPU:1");
  assert_true(sim_mempool_capacity(ds_replica_memory(s, 2)) == 80000000000ULL);
  assert_true(ds_replica_roofline(s, 1)->rate == 156e12);
  assert_true(ds_replica_roofline(s, 1)->mem_bw == 2e12);
  assert_true(ds_replica_workspace(s, 0) == 256.0 * 1024 * 1024);
  sim_link *links[32];
  assert_int_equal(ds_links(s, links, 32), 4 + 8);  /* star of 2 VMs, 4 GPUs up and down */
  static float bufs[4][1 << 20];
  reducer x[4];
  for (int r = 0; r < 4; r++) {
    for (int i = 0; i < 1 << 20; i++) bufs[r][i] = (float)(r + 1);
    x[r] = (reducer){ s, r, bufs[r] };
    sim_actor_spawn(e, "replica", reduce_gradients, &x[r]);
  }
  assert_int_equal(sim_run(e), 0);
  assert_true(bufs[2][12345] == 10.0f);
  assert_int_equal(ds_last_all_reduce_time(s), 6 * INT64_C(53943040) + 3 * 1681);
  ds_strategy_free(s);
  sim_engine_free(e);
}

/* one_device on a machine with accelerators uses worker 0's first one. */
static void one_device_takes_the_first_accelerator(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  ds_cluster c = gpu_workers();
  ds_strategy *s = ds_strategy_new(e, DS_ONE_DEVICE, &c, SIM_ALGO_RING);
  assert_int_equal(ds_num_replicas_in_sync(s), 1);
  assert_string_equal(ds_replica_device(s, 0), "/job:localhost/replica:0/task:0/device:GPU:0");
  ds_strategy_free(s);
  sim_engine_free(e);
}

/* Every kind has its row in the kinds table, under the name the scenario format uses, each
** name once. */
static void every_kind_has_a_row(void **state) {
  (void)state;
  static const char *const NAMES[] = {"default", "one_device", "multi_worker_mirrored", "mirrored",
                                      "tpu", "gnn_runner_tpu", "tpu_v1", "parameter_server"};
  for (int k = DS_DEFAULT; k <= DS_PARAMETER_SERVER; k++) assert_string_equal(ds_kind_name((ds_kind)k), NAMES[k]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(every_kind_has_a_row),
    cmocka_unit_test(split_uneven_batch),
    cmocka_unit_test(split_even_batch),
    cmocka_unit_test(split_leaves_late_replicas_empty),
    cmocka_unit_test(mirrored_replicas_are_workers),
    cmocka_unit_test(one_device_has_one_replica),
    cmocka_unit_test(accelerators_are_replicas),
    cmocka_unit_test(one_device_takes_the_first_accelerator),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
