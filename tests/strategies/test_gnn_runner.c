/*
** test_gnn_runner.c: TF-GNN's runner.TPUStrategy(tpu) as a constructor: resolver, connect,
** initialize, then a TPUStrategy with no device assignment and no SPMD (section 8).
*/
#include "tests/strategies/dsutil.h"

#include "strategies/tpu/gnn_runner.h"

static const ds_tpu_machine MACHINE = { 1200e9, 275e12, 0, 1e12, {0} };

/* Replica r contributes r + 1 to a SUM all-reduce. */
static int contribute(ds_rctx *c, void *user, md_tensor *const *args, md_tensor **results) {
  (void)user;
  (void)args;
  md_tensor *v = md_tensor_scalar_f32((float)(ds_rctx_replica_id(c) + 1));
  results[0] = ds_rctx_all_reduce(c, DS_REDUCE_SUM, v);
  md_tensor_free(v);
  return results[0] ? 0 : -1;
}

/* runner.TPUStrategy("") on a v4-32: 4 hosts of 4 chips, one TF device per chip, so 16 replicas
** of one logical device in task-then-ordinal order (replica 4 is task 1's TPU:0); the resolver
** is connected and initialized, the master is worker 0's endpoint; the gradient all-reduce runs
** on the slice's torus and every replica gets 1 + 2 + ... + 16 = 136. */
static void runner_builds_tf2_tpu_strategy(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  ds_tpu_resolver *r = NULL;
  ds_status st;
  ds_strategy *s = ds_gnn_runner_tpu_strategy_new(e, "", "v4-32", NULL, &MACHINE, SIM_ALGO_TORUS, &r, &st);
  assert_non_null(s);
  assert_int_equal(ds_strategy_kind(s), DS_GNN_RUNNER_TPU);
  assert_string_equal(ds_kind_name(ds_strategy_kind(s)), "gnn_runner_tpu");
  assert_int_equal(ds_num_replicas_in_sync(s), 16);
  assert_int_equal(ds_cores_per_replica(s), 1);
  assert_string_equal(ds_replica_device(s, 4), "/job:worker/replica:0/task:1/device:TPU:0");
  assert_int_equal(ds_all_reduce_algorithm(s), SIM_ALGO_TORUS);
  assert_true(ds_tpu_resolver_initialized(r));
  assert_string_equal(ds_tpu_resolver_master(r), "grpc://10.0.0.2:8470");
  ds_value *out = NULL;
  assert_int_equal(ds_run(s, contribute, NULL, 0, NULL, 1, &out, &st), 0);
  for (int i = 0; i < 16; i++) assert_true(md_tensor_get(ds_value_component(out, i), 0) == 136.0);
  ds_value_free(out);
  ds_tpu_resolver_free(r);
  ds_strategy_free(s);  /* also the slice and the TPU system tables: ASan's leak check sees it */
  sim_engine_free(e);
}

/* tpu="local" names the devices of this VM: job localhost; a v3-8 gives 8 replicas, TPU:0..7. */
static void local_tpu_uses_localhost(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  ds_status st;
  ds_strategy *s = ds_gnn_runner_tpu_strategy_new(e, "local", "v3-8", NULL, &MACHINE, SIM_ALGO_RING, NULL, &st);
  assert_non_null(s);
  assert_int_equal(ds_num_replicas_in_sync(s), 8);
  assert_string_equal(ds_replica_device(s, 7), "/job:localhost/replica:0/task:0/device:TPU:7");
  ds_strategy_free(s);
  sim_engine_free(e);
}

/* TPUClusterResolver's ValueErrors come through: an unknown size, a missing slice type. */
static void bad_slice_is_a_value_error(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  ds_status st;
  TU_EXPECT_REFUSED(ds_gnn_runner_tpu_strategy_new(e, "", "v4-31", NULL, &MACHINE, SIM_ALGO_RING, NULL, &st),
                    &st, DS_VALUE_ERROR);
  TU_EXPECT_REFUSED(ds_gnn_runner_tpu_strategy_new(e, NULL, NULL, NULL, &MACHINE, SIM_ALGO_RING, NULL, &st),
                    &st, DS_VALUE_ERROR);
  sim_engine_free(e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(runner_builds_tf2_tpu_strategy),
    cmocka_unit_test(local_tpu_uses_localhost),
    cmocka_unit_test(bad_slice_is_a_value_error),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
