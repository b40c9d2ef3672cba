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
  return (sim_opmodel){ 132, 256, 128, 4, 989e12, 0.91, 0.7, 5.25e-6, 0.5, 67e12 / 989e12, 0.55 };
}

/* An SM sustains 989e12 x 0.91 / 132 = 6.8181e12 FLOP/s and writes at 0.7 x 3350e9 / 132 =
** 17.765 GB/s when all 132 write at once: a 256x128 bf16 tile's 65,536 bytes take 3.689 us, of
** which 0.55 (2.029 us) a wave does not hide.
** bf16 4096^3 (OpenXLA measured 783.3 TFLOP/s: 175.46 us): 256x128 tiles, 16 x 32 = 512 of them,
** ceil(512 / 132) = 4 waves of 2 x 256 x 128 x 4096 = 268,435,456 FLOPs (39.371 us) + 2.029 us:
** 165.60 us; 128x128 at 0.95: 8 waves, 173.89 us; smaller tiles take longer still. Memory:
** 2 x 3 x 4096^2 = 100.7 MB at 0.7 x 3.35 TB/s = 42.9 us. 5.25 + 165.60 = 170.85 us (804.4
** TFLOP/s, +2.7%). */
static void large_gemm_is_waves_of_the_big_tile(void **state) {
  (void)state;
  sim_opmodel m = h100();
  sim_matmul mm = { 1, 4096, 4096, 4096, 2 };
  double bytes = 2.0 * 3 * 4096.0 * 4096.0, flops = 2.0 * 4096 * 4096 * 4096;
  double write = 0.55 * 65536.0 / (3350e9 * 0.7 / 132);
  double want = 5.25e-6 + 4 * (268435456.0 / (989e12 * 0.91 / 132) + write);
  assert_near(sim_opmodel_seconds(&m, 3350e9, flops, bytes, &mm), want, want * 1e-12);
  assert_true(want > 170.8e-6 && want < 170.9e-6);
}

/* bf16 4096 x 4096 x 512 (measured 543.1 TFLOP/s: 31.63 us): the same 4 waves, each 33,554,432
** FLOPs (4.921 us) + the 2.029 us write: 27.80 us, + 5.25 = 33.05 us (519.8 TFLOP/s, -4.3%).
** Without the write (writeback 0) it would be 24.94 us, 689 TFLOP/s (+27%): a short K leaves the
** write as large a share of each wave as it is. */
static void short_k_pays_each_waves_write(void **state) {
  (void)state;
  sim_opmodel m = h100(), hidden = h100();
  hidden.writeback = 0;
  sim_matmul mm = { 1, 4096, 4096, 512, 2 };
  double write = 0.55 * 65536.0 / (3350e9 * 0.7 / 132), product = 33554432.0 / (989e12 * 0.91 / 132);
  double want = 5.25e-6 + 4 * (product + write);
  assert_near(sim_opmodel_seconds(&m, 3350e9, 0, 0, &mm), want, want * 1e-12);
  assert_true(want > 33.0e-6 && want < 33.1e-6);
  assert_near(sim_opmodel_seconds(&hidden, 3350e9, 0, 0, &mm), 5.25e-6 + 4 * product, 1e-18);
  assert_near(sim_opmodel_seconds(&m, 0, 0, 0, &mm), 5.25e-6 + 4 * product, 1e-18);  /* no memory: no write */
}

/* bf16 256^3 (measured 6.45 TFLOP/s: 5.20 us): one wave whatever the tile; the 64x64 tile's 16
** tiles of 2 x 64 x 64 x 256 = 2,097,152 FLOPs at 0.7 x 6.8181e12 (0.4394 us) + 0.55 x 8192 B
** at 17.765 GB/s (0.2536 us): 0.693 us (128x64: 1.231 us; 256x128: 4.490 us); memory 393,216 B:
** 0.168 us. 5.25 + 0.693 = 5.943 us: the launch is 88% of it, as the measurement's 5.2 us says. */
static void small_gemm_is_launch_bound(void **state) {
  (void)state;
  sim_opmodel m = h100();
  sim_matmul mm = { 1, 256, 256, 256, 2 };
  double want = 5.25e-6 + 2097152.0 / (989e12 * 0.91 / 132 * 0.7) + 0.55 * 8192.0 / (3350e9 * 0.7 / 132);
  assert_near(sim_opmodel_seconds(&m, 3350e9, 2.0 * 256 * 256 * 256, 393216.0, &mm), want, want * 1e-12);
  assert_true(want > 5.94e-6 && want < 5.95e-6);
}

/* Float32 operands run at f32_rate (TF32: half) and write 4-byte outputs, so the same 4096^3
** takes 5.25 + 4 x (78.742 + 4.058) = 336.45 us; an op that is no matmul runs its FLOPs at the
** vector rate or its bytes at 0.7 of bandwidth: 1e9 FLOPs at 67 TFLOP/s = 14.93 us + 5.25; 1e9
** bytes at 2.345 TB/s = 426.4 us + 5.25. */
static void dtype_and_vector_ops(void **state) {
  (void)state;
  sim_opmodel m = h100();
  sim_matmul f32 = { 1, 4096, 4096, 4096, 4 };
  double want = 5.25e-6 + 4 * (268435456.0 / (989e12 * 0.5 * 0.91 / 132) + 0.55 * 131072.0 / (3350e9 * 0.7 / 132));
  assert_near(sim_opmodel_seconds(&m, 3350e9, 0, 0, &f32), want, want * 1e-12);
  assert_true(want > 336.4e-6 && want < 336.5e-6);
  assert_near(sim_opmodel_seconds(&m, 3350e9, 1e9, 0, NULL), 5.25e-6 + 1e9 / 67e12, 1e-18);
  assert_near(sim_opmodel_seconds(&m, 3350e9, 1e3, 1e9, NULL), 5.25e-6 + 1e9 / (3350e9 * 0.7), 1e-18);
}

/* On a device's cpu the model's time is charged at the cpu's rate (the peak): 5.943 us of the
** 256^3 GEMM is 5.943e-6 x 989e12 FLOPs. Units 0 is the scalar roofline, shape or not: at
** 494.5 TFLOP/s (0.5 of peak) and 3350 GB/s the 393,216 bytes outweigh the 33.5 MFLOPs: charged
** 393,216 x 494.5e12 / 3350e9 = 58.04 MFLOPs (0.117 us, 51 x faster than the model's 5.943). */
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
    cmocka_unit_test(short_k_pays_each_waves_write),
    cmocka_unit_test(small_gemm_is_launch_bound),
    cmocka_unit_test(dtype_and_vector_ops),
    cmocka_unit_test(roofline_charges_the_model_at_its_rate),
    cmocka_unit_test(time_rises_with_each_dimension_and_falls_with_peak),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
