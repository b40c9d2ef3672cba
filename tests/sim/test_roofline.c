/* test_roofline.c: op times under the roofline model, worked by hand. */
#include "tests/testutil.h"

#include "sim/roofline.h"
#include "sim/sim.h"

/* A device sustaining 100 GFLOP/s with 50 GB/s of memory (balance 2 FLOP per byte):
**   a GEMM of 1e9 FLOPs moving 1e8 bytes: compute 10 ms, memory 2 ms -> 1e9 FLOPs (10 ms);
**   an elementwise op of 1e6 FLOPs moving 1.2e7 bytes: compute 10 us, memory 240 us
**   -> charged 1.2e7 * 2 = 2.4e7 FLOPs (240 us at 100 GFLOP/s). */
static void compute_or_memory_bound(void **state) {
  (void)state;
  sim_roofline r = { 100e9, 50e9 };
  assert_true(sim_roofline_work(&r, 1e9, 1e8) == 1e9);
  assert_true(sim_roofline_work(&r, 1e6, 1.2e7) == 2.4e7);
  sim_roofline no_memory = { 100e9, 0 };
  assert_true(sim_roofline_work(&no_memory, 1e6, 1.2e7) == 1e6);
}

/* Per op, not on the totals: the two ops above take 10 ms + 240 us = 10.24 ms, while the totals
** (1.001e9 FLOPs, 1.12e8 bytes) would say max(10.01 ms, 2.24 ms) = 10.01 ms. */
static void each_op_is_bound_on_its_own(void **state) {
  (void)state;
  sim_roofline r = { 100e9, 50e9 };
  const double flops[2] = { 1e9, 1e6 }, bytes[2] = { 1e8, 1.2e7 };
  assert_true(sim_roofline_work_ops(&r, flops, bytes, 2) == 1e9 + 2.4e7);
}

typedef struct { sim_cpu *cpu; double work; sim_time done; } exec_case;

static void run_op(sim_actor *self, void *arg) {
  exec_case *c = arg;
  sim_exec(self, c->cpu, c->work);
  c->done = sim_now(sim_actor_engine(self));
}

/* Charged on a cpu at the roofline's rate, the memory-bound op ends at exactly 240 us. */
static void charged_on_a_cpu(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  sim_roofline r = { 100e9, 50e9 };
  exec_case c = { sim_cpu_new(e, "dev", r.rate), sim_roofline_work(&r, 1e6, 1.2e7), 0 };
  sim_actor_spawn(e, "op", run_op, &c);
  assert_int_equal(sim_run(e), 0);
  assert_int_equal(c.done, 240 * INT64_C(1000000));
  sim_engine_free(e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(compute_or_memory_bound),
    cmocka_unit_test(each_op_is_bound_on_its_own),
    cmocka_unit_test(charged_on_a_cpu),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
