/* test_roofline.c: op times under the roofline model, worked by hand. */
#include "tests/testutil.h"

#include <math.h>

#include "sim/roofline.h"
#include "sim/sim.h"

/* A device sustaining 100 GFLOP/s with 50 GB/s of memory (balance 2 FLOP per byte):
**   a GEMM of 1e9 FLOPs moving 1e8 bytes: compute 10 ms, memory 2 ms -> 1e9 FLOPs (10 ms);
**   an elementwise op of 1e6 FLOPs moving 1.2e7 bytes: compute 10 us, memory 240 us
**   -> charged 1.2e7 * 2 = 2.4e7 FLOPs (240 us at 100 GFLOP/s). */
static void compute_or_memory_bound(void **state) {
  (void)state;
  sim_roofline r = { 100e9, 50e9, {0} };
  assert_true(sim_roofline_work(&r, 1e9, 1e8, NULL) == 1e9);
  assert_true(sim_roofline_work(&r, 1e6, 1.2e7, NULL) == 2.4e7);
  sim_roofline no_memory = { 100e9, 0, {0} };
  assert_true(sim_roofline_work(&no_memory, 1e6, 1.2e7, NULL) == 1e6);
}

/* Per op, not on the totals: the two ops above take 10 ms + 240 us = 10.24 ms, while the totals
** (1.001e9 FLOPs, 1.12e8 bytes) would say max(10.01 ms, 2.24 ms) = 10.01 ms. */
static void each_op_is_bound_on_its_own(void **state) {
  (void)state;
  sim_roofline r = { 100e9, 50e9, {0} };
  const double flops[2] = { 1e9, 1e6 }, bytes[2] = { 1e8, 1.2e7 };
  assert_true(sim_roofline_work_ops(&r, flops, bytes, NULL, 2) == 1e9 + 2.4e7);
}

/* |got - want| <= tol. */
static void assert_near(double got, double want, double tol) {
  if (fabs(got - want) > tol) fail_msg("got %.17g, want %.17g (tolerance %g)", got, want, tol);
}

/* The per-op model with dgx-h100's constants (scenarios/config/machines.c; bench/fit_gemm.py). */
static sim_opmodel h100(void) {
  return (sim_opmodel){ 132, 256, 128, 4, 989e12, 0.84, 0.7, 5.5e-6, 0.5, 67e12 / 989e12 };
}

/* bf16 4096^3 (OpenXLA measured 783.3 TFLOP/s: 175.46 us). An SM sustains 989e12 x 0.84 / 132 =
** 6.2935e12 FLOP/s. Tiles 256x128: 16 x 32 = 512 tiles, ceil(512 / 132) = 4 waves of
** 2 x 256 x 128 x 4096 = 268,435,456 FLOPs: 170.61 us; 128x128 at 0.95: 8 waves of 134.2M:
** 179.6 us; 128x64 at 0.85: 16 waves, 200.7 us; 64x64 at 0.7: 32 waves, 243.7 us. Memory:
** 2 x 3 x 4096^2 = 100.7 MB at 0.7 x 3.35 TB/s = 42.9 us. 5.5 + 170.61 = 176.11 us (+0.4%). */
static void large_gemm_is_waves_of_the_big_tile(void **state) {
  (void)state;
  sim_opmodel m = h100();
  sim_matmul mm = { 1, 4096, 4096, 4096, 2 };
  double bytes = 2.0 * 3 * 4096.0 * 4096.0, flops = 2.0 * 4096 * 4096 * 4096;
  double want = 5.5e-6 + 4 * 268435456.0 / (989e12 * 0.84 / 132);
  assert_near(sim_opmodel_seconds(&m, 3350e9, flops, bytes, &mm), want, want * 1e-12);
  assert_true(want > 176.1e-6 && want < 176.2e-6);
}

/* bf16 256^3 (measured 6.45 TFLOP/s: 5.20 us): one wave whatever the tile; the 64x64 tile's
** 16 tiles of 2 x 64 x 64 x 256 = 2,097,152 FLOPs at 0.7 x 6.2935e12: 0.476 us; memory 393,216 B:
** 0.168 us. 5.5 + 0.476 = 5.976 us: the launch is 92% of it, as the measurement's 5.2 us says. */
static void small_gemm_is_launch_bound(void **state) {
  (void)state;
  sim_opmodel m = h100();
  sim_matmul mm = { 1, 256, 256, 256, 2 };
  double want = 5.5e-6 + 2097152.0 / (989e12 * 0.84 / 132 * 0.7);
  assert_near(sim_opmodel_seconds(&m, 3350e9, 2.0 * 256 * 256 * 256, 393216.0, &mm), want, want * 1e-12);
  assert_true(want > 5.97e-6 && want < 5.98e-6);
}

/* Float32 operands run at f32_rate (TF32: half), so the same 4096^3 takes 5.5 + 2 x 170.61 us;
** an op that is no matmul runs its FLOPs at the vector rate or its bytes at 0.7 of bandwidth:
** 1e9 FLOPs at 67 TFLOP/s = 14.93 us + 5.5; 1e9 bytes at 2.345 TB/s = 426.4 us + 5.5. */
static void dtype_and_vector_ops(void **state) {
  (void)state;
  sim_opmodel m = h100();
  sim_matmul f32 = { 1, 4096, 4096, 4096, 4 };
  double want = 5.5e-6 + 4 * 268435456.0 / (989e12 * 0.5 * 0.84 / 132);
  assert_near(sim_opmodel_seconds(&m, 3350e9, 0, 0, &f32), want, want * 1e-12);
  assert_near(sim_opmodel_seconds(&m, 3350e9, 1e9, 0, NULL), 5.5e-6 + 1e9 / 67e12, 1e-18);
  assert_near(sim_opmodel_seconds(&m, 3350e9, 1e3, 1e9, NULL), 5.5e-6 + 1e9 / (3350e9 * 0.7), 1e-18);
}

/* On a device's cpu the model's time is charged at the cpu's rate (the peak): 5.976 us of the
** 256^3 GEMM is 5.976e-6 x 989e12 FLOPs. Units 0 is the scalar roofline, shape or not: at
** 494.5 TFLOP/s (0.5 of peak) and 3350 GB/s the 393,216 bytes outweigh the 33.5 MFLOPs: charged
** 393,216 x 494.5e12 / 3350e9 = 58.04 MFLOPs (0.117 us, 51 x faster than the model's 5.976). */
static void roofline_charges_the_model_at_its_rate(void **state) {
  (void)state;
  sim_roofline r = { 989e12, 3350e9, h100() };
  sim_matmul mm = { 1, 256, 256, 256, 2 };
  double s = sim_opmodel_seconds(&r.op, r.mem_bw, 2.0 * 256 * 256 * 256, 393216.0, &mm);
  assert_true(sim_roofline_work(&r, 2.0 * 256 * 256 * 256, 393216.0, &mm) == s * 989e12);
  sim_roofline scalar = { 494.5e12, 3350e9, {0} };
  assert_true(sim_roofline_work(&scalar, 2.0 * 256 * 256 * 256, 393216.0, &mm) == 393216.0 * (494.5e12 / 3350e9));
}

/* Sanity: time never falls when m, n or k grows (each tile's waves and the memory bytes only
** grow, and the best of non-decreasing times is non-decreasing), and more peak or bandwidth is
** never slower. Shapes from 1 to 8192 in steps that cross tile and wave boundaries. */
static void time_rises_with_each_dimension_and_falls_with_peak(void **state) {
  (void)state;
  sim_opmodel m = h100(), fast = h100();
  fast.peak *= 1.5;
  for (int dim = 0; dim < 3; dim++)
    for (double other = 1; other <= 8192; other *= 8) {
      double last = 0;
      for (double x = 1; x <= 8192; x += x < 64 ? 7 : 61) {
        double d[3] = { other, other, other };
        d[dim] = x;
        sim_matmul mm = { 1, d[0], d[1], d[2], 2 };
        double flops = 2 * d[0] * d[1] * d[2], bytes = 2 * (d[0] * d[2] + d[2] * d[1] + d[0] * d[1]);
        double t = sim_opmodel_seconds(&m, 3350e9, flops, bytes, &mm);
        assert_true(t >= last);
        assert_true(sim_opmodel_seconds(&fast, 3350e9, flops, bytes, &mm) <= t);
        assert_true(sim_opmodel_seconds(&m, 2 * 3350e9, flops, bytes, &mm) <= t);
        last = t;
      }
    }
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
  sim_roofline r = { 100e9, 50e9, {0} };
  exec_case c = { sim_cpu_new(e, "dev", r.rate), sim_roofline_work(&r, 1e6, 1.2e7, NULL), 0 };
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
    cmocka_unit_test(large_gemm_is_waves_of_the_big_tile),
    cmocka_unit_test(small_gemm_is_launch_bound),
    cmocka_unit_test(dtype_and_vector_ops),
    cmocka_unit_test(roofline_charges_the_model_at_its_rate),
    cmocka_unit_test(time_rises_with_each_dimension_and_falls_with_peak),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
