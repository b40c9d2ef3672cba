/*
** test_strategy.c: the batch split and the replica layout of the issue-2 strategies.
*/
#include "tests/testutil.h"

#include "strategies/strategy.h"

/* G = 7 over 4 replicas: f = 7/4 = 1, 7 - 4*1 = 3 replicas get f+1 = 2 (the rebatch rule of
** tf-distribute-semantics.md section 5): sizes 2,2,2,1 at offsets 0,2,4,6. */
static void split_uneven_batch(void **state) {
  (void)state;
  int sizes[4], offsets[4];
  ds_split_batch(7, 4, sizes, offsets);
  int want_sizes[4] = { 2, 2, 2, 1 }, want_offsets[4] = { 0, 2, 4, 6 };
  assert_memory_equal(sizes, want_sizes, sizeof sizes);
  assert_memory_equal(offsets, want_offsets, sizeof offsets);
}

/* G = 32 over 4: replica r gets rows [8r, 8r+8), the golden cases' rule. */
static void split_even_batch(void **state) {
  (void)state;
  int sizes[4], offsets[4];
  ds_split_batch(32, 4, sizes, offsets);
  for (int r = 0; r < 4; r++) {
    assert_int_equal(sizes[r], 8);
    assert_int_equal(offsets[r], 8 * r);
  }
}

/* A short final batch of 3 over 4 replicas fills the early replicas; the last gets nothing. */
static void split_leaves_late_replicas_empty(void **state) {
  (void)state;
  int sizes[4], offsets[4];
  ds_split_batch(3, 4, sizes, offsets);
  int want_sizes[4] = { 1, 1, 1, 0 };
  assert_memory_equal(sizes, want_sizes, sizeof sizes);
  assert_int_equal(offsets[3], 3);
}

static ds_cluster four_workers(void) {
  ds_cluster c = { 4, { 1e11, 32e9, 2e9 }, SIM_FABRIC_STAR, 1e10, 5000000 };
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

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(split_uneven_batch),
    cmocka_unit_test(split_even_batch),
    cmocka_unit_test(split_leaves_late_replicas_empty),
    cmocka_unit_test(mirrored_replicas_are_workers),
    cmocka_unit_test(one_device_has_one_replica),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
