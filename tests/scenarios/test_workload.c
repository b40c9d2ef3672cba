/*
** test_workload.c: the collective workload program, from scenario to collective.csv.
*/
#include "tests/testutil.h"

#include <math.h>
#include <string.h>
#include <unistd.h>

#include "scenarios/programs/workload.h"

static int run(const char *file, const char *const *sets, int n, workload_summary *w, double *times,
               scn_error *err) {
  static scenario s;
  if (scenario_load(tu_src(file), sets, n, &s, err) != 0) fail_msg("%s", err->msg);
  char dir[] = "/tmp/podsim-workload-XXXXXX", path[96];
  assert_non_null(mkdtemp(dir));
  int rc = workload_run(&s, dir, w, err);
  if (rc == 0 && times != NULL) {
    snprintf(path, sizeof path, "%s/collective.csv", dir);
    tu_read_column(path, 4, times, 16, NULL);
  }
  snprintf(path, sizeof path, "rm -rf '%s'", dir);
  assert_int_equal(system(path), 0);
  return rc;
}

/* 8 workers on a ring of 100 GB/s, 1 us links; 8 MiB = 2097152 floats in 8 chunks of 1048576 B.
** Ring all-reduce: 2(p-1) = 14 steps of L + chunk/B = 1 us + 10.48576 us = 11.48576 us, plus the
** 7 reduce-scatter adds of 262144 floats at 1e15 FLOP/s, 262.144 ps rounded up to 263 ps each:
** 14 * 11485760 ps + 7 * 263 ps = 160802481 ps. Real buffers (numerics full). */
static void cpu_ring_all_reduce_is_its_closed_form(void **state) {
  (void)state;
  workload_summary w;
  scn_error err;
  double t[16];
  assert_int_equal(run("tests/data/workload/ring8.yaml", NULL, 0, &w, t, &err), 0);
  assert_int_equal(w.ranks, 8);
  assert_string_equal(w.algorithm, "ring");
  assert_true(t[0] == 160802481e-12 && t[1] == t[0]);
  /* busbw = 8388608 B / t * 2(p-1)/p */
  assert_true(fabs(w.busbw_GBps - 8388608 / 160802481e-12 / 1e9 * 1.75) < 1e-9);
}

/* On a v4-128 slice (4x4x4 chips, wraparound on every axis) auto picks the torus, and the
** torus, the ring, the tree and halving-doubling all take different times, the torus the least;
** a larger message takes longer (sanity that the model is alive). */
static void tpu_slice_algorithms_differ(void **state) {
  (void)state;
  workload_summary w;
  scn_error err;
  double t[16];
  const char *base[] = { "cluster.tpu.type=v4-128" };
  assert_int_equal(run("scenarios/examples/allreduce_v4.yaml", base, 1, &w, t, &err), 0);
  assert_int_equal(w.ranks, 64);
  assert_string_equal(w.algorithm, "torus");
  double torus = t[0];
  const char *algos[] = { "ring", "tree", "halving_doubling" };
  for (int a = 0; a < 3; a++) {
    char set[80];
    snprintf(set, sizeof set, "workload.collective.algorithm=%s", algos[a]);
    const char *o[] = { base[0], set };
    assert_int_equal(run("scenarios/examples/allreduce_v4.yaml", o, 2, &w, t, &err), 0);
    if (!(t[0] > torus)) fail_msg("%s %.9g s is not slower than the torus %.9g s", algos[a], t[0], torus);
  }
  const char *bigger[] = { base[0], "workload.collective.size=200MB" };
  assert_int_equal(run("scenarios/examples/allreduce_v4.yaml", bigger, 2, &w, t, &err), 0);
  assert_true(t[0] > torus);
}

/* What cannot run says so: halving-doubling reduce_scatter needs a power-of-two group, and real
** buffers past the host's 1 GiB need numerics off. */
static void impossible_workloads_are_input_errors(void **state) {
  (void)state;
  workload_summary w;
  scn_error err;
  const char *six[] = { "cluster.workers.count=6", "workload.collective.op=reduce_scatter",
                        "workload.collective.algorithm=halving_doubling" };
  assert_int_equal(run("tests/data/workload/ring8.yaml", six, 3, &w, NULL, &err), 2);
  assert_non_null(strstr(err.msg, "workload.collective: reduce_scatter by halving_doubling on 6 ranks"));
  const char *huge[] = { "workload.collective.size=1GB" };
  assert_int_equal(run("tests/data/workload/ring8.yaml", huge, 1, &w, NULL, &err), 2);
  assert_non_null(strstr(err.msg, "set numerics: off"));
  const char *off[] = { "workload.collective.size=1GB", "numerics=off" };
  assert_int_equal(run("tests/data/workload/ring8.yaml", off, 2, &w, NULL, &err), 0);
}

/* cluster.tpu.slices: 1 is the plain slice, bit for bit: the same run_hash and times. */
static void one_slice_is_the_plain_slice(void **state) {
  (void)state;
  workload_summary plain, one;
  scn_error err;
  double t[16], u[16];
  assert_int_equal(run("scenarios/examples/allreduce_v4.yaml", NULL, 0, &plain, t, &err), 0);
  const char *set[] = { "cluster.tpu.slices=1" };
  assert_int_equal(run("scenarios/examples/allreduce_v4.yaml", set, 1, &one, u, &err), 0);
  assert_true(plain.run_hash == one.run_hash && t[0] == u[0]);
  assert_int_equal(one.slices, 1);
}

/* Two v5litepod-16 slices (2 hosts of 8 chips each): 32 ranks; the all-reduce takes the one
** slice's ICI phases plus the DCN phase. 1 MB is 16 chunks of 15,625 floats, each a ring of the 2
** slices in halves of 7,813 and 7,812 floats; a host's 8 chips share its 25 GB/s DCN link, so
** the longer halves (31,252 B) take 10.00064 us after the route's 22 us: 2 rounds, 64.00128 us,
** and the reduction of 7,813 floats at 197 TFLOP/s (0.0397 ns): 64.001320 us. */
static void two_slices_add_the_dcn_phase(void **state) {
  (void)state;
  workload_summary one, two;
  scn_error err;
  double t[16], u[16];
  const char *base[] = { "cluster.tpu.type=v5litepod-16", "workload.collective.size=1MB" };
  assert_int_equal(run("scenarios/examples/allreduce_v4.yaml", base, 2, &one, t, &err), 0);
  const char *sets[] = { base[0], base[1], "cluster.tpu.slices=2" };
  assert_int_equal(run("scenarios/examples/allreduce_v4.yaml", sets, 3, &two, u, &err), 0);
  assert_int_equal(two.ranks, 32);
  assert_int_equal(two.slices, 2);
  double want = 64.00128e-6 + 7813 / 197e12;
  if (fabs(two.dcn_time_s - want) > 2e-12) fail_msg("DCN phase %.12g s, want %.12g", two.dcn_time_s, want);
  assert_true(u[0] > t[0] + two.dcn_time_s - 1e-9);
  /* numerics full: the same time on real buffers */
  const char *full[] = { base[0], base[1], "cluster.tpu.slices=2", "numerics=full" };
  assert_int_equal(run("scenarios/examples/allreduce_v4.yaml", full, 4, &two, t, &err), 0);
  assert_true(t[0] == u[0]);
}

/* axis: every line along it at once. A v4-128 is 4x4x4 with wraparound everywhere: 16 lines of 4
** whatever the axis, and the same time on each (relabelling changes nothing). ppermute by one
** along x crosses one link each: 45 MB at the 0.746 x 45 GB/s a link achieves (sim/tpu.c's ICI
** fit) after the 5.36 us every TPU collective costs = 1345.842574 us. And the core axis of a v3. */
static void axis_lines_and_ppermute(void **state) {
  (void)state;
  workload_summary w;
  scn_error err;
  double t[16], first = 0;
  static const char *const axes[] = { "x", "y", "z" };
  for (int a = 0; a < 3; a++) {
    char set[64];
    snprintf(set, sizeof set, "workload.collective.axis=%s", axes[a]);
    const char *o[] = { "cluster.tpu.type=v4-128", set };
    assert_int_equal(run("scenarios/examples/allreduce_v4.yaml", o, 2, &w, t, &err), 0);
    assert_int_equal(w.ranks, 4);
    assert_int_equal(w.lines, 16);
    if (a == 0) first = t[0];
    assert_true(t[0] == first);
  }
  const char *pp[] = { "cluster.tpu.type=v4-128", "workload.collective.axis=x", "workload.collective.op=ppermute",
                       "workload.collective.size=45MB" };
  assert_int_equal(run("scenarios/examples/allreduce_v4.yaml", pp, 4, &w, t, &err), 0);
  double want = 45e6 / (45e9 * 0.746) + 5.36e-6;
  if (fabs(t[0] - want) > 1e-12) fail_msg("ppermute %.12g s, want %.12g", t[0], want);
  assert_true(fabs(w.busbw_GBps - 45e6 / want / 1e9) < 1e-6);  /* bus factor 1 */
  /* core: each of a v3-8's 4 chips is a line of its 2 cores over the on-chip link (half the HBM's
  ** 900 GB/s, no latency, no ICI link): a ring of 2 moves two halves of 50 MB, 222.222 us, and
  ** adds 12.5M floats on a core's 61.5 TFLOP/s, 0.203 us, after the collective's 5.36 us:
  ** 227.7855 us (to the picosecond's rounding). */
  const char *core[] = { "cluster.tpu.type=v3-8", "workload.collective.axis=core" };
  assert_int_equal(run("scenarios/examples/allreduce_v4.yaml", core, 2, &w, t, &err), 0);
  assert_int_equal(w.ranks, 2);
  assert_int_equal(w.lines, 4);
  want = 5.36e-6 + 2 * 50e6 / 450e9 + 12.5e6 / 61.5e12;
  if (fabs(t[0] - want) > 1e-11) fail_msg("all_reduce along core %.12g s, want %.12g", t[0], want);
  /* Real buffers are every line's: 64 devices x 100 MB are over the 1 GiB a workload may hold. */
  static scenario s;
  const char *full[] = { "cluster.tpu.type=v4-128", "workload.collective.axis=x", "numerics=full" };
  assert_int_equal(scenario_load(tu_src("scenarios/examples/allreduce_v4.yaml"), full, 3, &s, &err), 0);
  assert_int_equal(workload_check(&s, &err), 2);
  assert_non_null(strstr(err.msg, "64 ranks x 100000000 bytes of real buffers exceed"));
}

/* axis slice: the devices at one grid position of every slice, over DCN alone (MaxText's DCN
** mesh axis). Two v5litepod-8 slices (one host of 8 chips each): 8 lines of 2. An all-reduce of 4
** MiB along it is exactly the DCN phase of the hierarchical all-reduce of 32 MiB (whose 8 chunks
** are 4 MiB), to the picosecond. ppermute by one across the slices: every device sends its 4 MiB
** to the other slice at once, the host's 8 chips sharing its 25 GB/s DCN link: 22 us of route
** latency + 8 x 4,194,304 B / 25e9 = 1364.17728 us, the buffers moved (numerics full). */
static void axis_slice_runs_over_dcn_alone(void **state) {
  (void)state;
  workload_summary all, line;
  scn_error err;
  double t[16];
  const char *whole[] = { "cluster.tpu.type=v5litepod-8", "cluster.tpu.slices=2", "workload.collective.size=32MiB" };
  assert_int_equal(run("scenarios/examples/allreduce_v4.yaml", whole, 3, &all, t, &err), 0);
  const char *across[] = { "cluster.tpu.type=v5litepod-8", "cluster.tpu.slices=2", "workload.collective.size=4MiB",
                           "workload.collective.axis=slice" };
  assert_int_equal(run("scenarios/examples/allreduce_v4.yaml", across, 4, &line, t, &err), 0);
  assert_int_equal(line.ranks, 2);
  assert_int_equal(line.lines, 8);
  assert_string_equal(line.algorithm, "ring");
  assert_true(all.dcn_time_s > 0 && line.mean_time_s == all.dcn_time_s);
  const char *pp[] = { "cluster.tpu.type=v5litepod-8", "cluster.tpu.slices=2", "workload.collective.size=4MiB",
                       "workload.collective.axis=slice", "workload.collective.op=ppermute", "numerics=full" };
  assert_int_equal(run("scenarios/examples/allreduce_v4.yaml", pp, 6, &line, t, &err), 0);
  if (fabs(t[0] - 1364.17728e-6) > 1e-12) fail_msg("ppermute across slices %.12g s, want 1364.17728 us", t[0]);
}

/* What does not fit says where: exit 2 at the key. */
static void multislice_axis_and_shift_errors(void **state) {
  (void)state;
  static const struct { const char *file; const char *set[3]; const char *msg; } BAD[] = {
    {"scenarios/examples/allreduce_v4.yaml", {"cluster.tpu.slices=2", "workload.collective.op=all_gather"},
     "cluster.tpu.slices: several slices run the hierarchical all_reduce"},
    {"scenarios/examples/allreduce_v4.yaml", {"cluster.tpu.slices=2", "workload.collective.algorithm=ring"},
     "workload.collective.algorithm: several slices all-reduce by torus within each slice and a ring across them: "
     "expected auto or torus, found ring"},
    {"scenarios/examples/allreduce_v4.yaml", {"workload.collective.shift=2"},
     "workload.collective.shift: shift goes with op ppermute, not with all_reduce"},
    {"scenarios/examples/allreduce_v4.yaml", {"cluster.tpu.type=v5litepod-16", "workload.collective.axis=z"},
     "workload.collective.axis: expected an axis of v5litepod-16 longer than one device, found z of length 1"},
    {"scenarios/examples/allreduce_v4.yaml", {"workload.collective.axis=core"},
     "found core of length 1"},
    {"scenarios/examples/allreduce_v4.yaml", {"workload.collective.axis=slice"},
     "workload.collective.axis: axis slice runs across the slices of cluster.tpu.slices: expected 2 or more "
     "slices, found 1"},
    {"tests/data/workload/ring8.yaml", {"workload.collective.axis=x"},
     "workload.collective.axis: an axis is a TPU slice's: axis needs group tpu"},
    {"scenarios/examples/tpu_v1_steps_per_run.yaml", {"cluster.tpu.slices=2"},
     "cluster.tpu.slices: training across 2 slices (data parallel, one replica per device) needs strategy.kind tpu, "
     "found tpu_v1"},
    {"scenarios/examples/tpu_preempted.yaml", {"cluster.tpu.slices=3"},
     "cluster.tpu.slices: training across 3 slices (data parallel, one replica per device) needs no faults, found "
     "some"},
    {"scenarios/examples/allreduce_v4.yaml", {"workload.matmul={m: 8, n: 8, k: 8}"},
     "workload: expected exactly one of collective and matmul, found both"},
    {"tests/data/fidelity/gemm_h100_256x256x256.yaml", {"workload.matmul.group=tpu"},
     "workload.matmul.group: group tpu needs cluster.tpu"},
    {"tests/data/fidelity/gemm_h100_256x256x256.yaml", {"workload.matmul.k=0"},
     "workload.matmul.k"},
    {"tests/data/fidelity/gemm_h100_256x256x256.yaml", {"cluster.workers.machine={type: dgx-h100, efficiency: 1.5}"},
     "cluster.workers.machine.efficiency: expected a number in (0, 1], found 1.5"},
    {"tests/data/fidelity/gemm_h100_256x256x256.yaml", {"cluster.workers.machine={type: n2-standard-8, efficiency: 0.5}"},
     "cluster.workers.machine.efficiency: n2-standard-8 has no GPUs; efficiency is for a GPU system"},
    {"scenarios/examples/tpu_v4.yaml", {"cluster.tpu.slices=2", "strategy.all_reduce=ring"},
     "strategy.all_reduce: several slices all-reduce gradients by torus within each slice and a ring across "
     "them: expected auto, found ring"},
  };
  for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
    static scenario s;
    scn_error err;
    int n = 0;
    while (n < 3 && BAD[i].set[n]) n++;
    assert_int_not_equal(scenario_load(tu_src(BAD[i].file), BAD[i].set, n, &s, &err), 0);
    if (!strstr(err.msg, BAD[i].msg)) fail_msg("got \"%s\", want \"%s\"", err.msg, BAD[i].msg);
  }
  /* A shift as long as the line is refused by the collective's check. */
  workload_summary w;
  scn_error err;
  const char *o[] = { "cluster.tpu.type=v4-128", "workload.collective.axis=x", "workload.collective.op=ppermute",
                      "workload.collective.shift=4" };
  static scenario s;
  assert_int_equal(scenario_load(tu_src("scenarios/examples/allreduce_v4.yaml"), o, 4, &s, &err), 0);
  assert_int_equal(workload_check(&s, &err), 2);
  assert_non_null(strstr(err.msg, "ppermute by torus on 4 ranks"));
  (void)w;
}

/* workload.matmul: one product on one device, charged as a training step charges a GEMM.
** dgx-h100, bf16 4096^3: 5.25 us + 4 waves of 256x128 tiles of 268,435,456 FLOPs at an SM's
** 989e12 x 0.91 / 132 and 0.55 of a tile's 65,536-byte write at 0.7 x 3350 GB/s / 132
** (test_roofline.c works it out): 170.85 us, 804.44 TFLOP/s. A v4 device (one chip,
** megacore: 8 MXUs of 128x128): tiles of 8 rows x 128 columns, 512 x 32 = 16384 of them, 2048
** waves of 2 x 8 x 128 x 4096 = 8,388,608 FLOPs at 275e12 x 0.89 / 8 (the TPU fit,
** bench/fit_tpu_gemm.py), plus the 1 us launch: 562.55 us (memory: 100.7 MB at 0.96 x 1200 GB/s =
** 87.4 us). With overrides.efficiency 0.5 the
** scalar roofline instead: 2 x 4096^3 / 137.5e12 = 999.55 us; a dgx-h100 with efficiency 0.5
** likewise: 2 x 4096^3 / 494.5e12 = 277.94 us (memory: 100.7 MB at 3350 GB/s, 30.0 us). */
static void matmul_workload_on_each_device_kind(void **state) {
  (void)state;
  static scenario s;
  workload_summary w;
  scn_error err;
  char dir[] = "/tmp/podsim-matmul-XXXXXX", cmd[96];
  assert_non_null(mkdtemp(dir));
  const char *file = "tests/data/fidelity/gemm_h100_4096x4096x4096.yaml";
  assert_int_equal(scenario_load(tu_src(file), NULL, 0, &s, &err), 0);
  assert_int_equal(workload_run(&s, dir, &w, &err), 0);
  assert_string_equal(w.algorithm, "per_op");
  double want = 5.25e-6 + 4 * (268435456.0 / (989e12 * 0.91 / 132) + 0.55 * 65536.0 / (3350e9 * 0.7 / 132));
  if (fabs(w.mean_time_s - want) > 1e-12) fail_msg("h100 %.12g s, want %.12g", w.mean_time_s, want);
  const char *tpu[] = { "cluster.tpu={type: v4-8}", "workload.matmul.group=tpu" };
  assert_int_equal(scenario_load(tu_src(file), tpu, 2, &s, &err), 0);
  assert_int_equal(workload_run(&s, dir, &w, &err), 0);
  want = 1e-6 + 2048 * 8388608.0 / (275e12 * 0.89 / 8);
  if (fabs(w.mean_time_s - want) > 1e-12) fail_msg("v4 %.12g s, want %.12g", w.mean_time_s, want);
  const char *scalar[] = { "cluster.tpu={type: v4-8, overrides: {efficiency: 0.5}}", "workload.matmul.group=tpu" };
  assert_int_equal(scenario_load(tu_src(file), scalar, 2, &s, &err), 0);
  assert_int_equal(workload_run(&s, dir, &w, &err), 0);
  assert_string_equal(w.algorithm, "roofline");
  want = 2.0 * 4096 * 4096 * 4096 / 137.5e12;
  if (fabs(w.mean_time_s - want) > 1e-12) fail_msg("v4 at 0.5 %.12g s, want %.12g", w.mean_time_s, want);
  const char *gpu[] = { "cluster.workers.machine={type: dgx-h100, gpus: 1, efficiency: 0.5}" };
  assert_int_equal(scenario_load(tu_src(file), gpu, 1, &s, &err), 0);
  assert_int_equal(workload_run(&s, dir, &w, &err), 0);
  assert_string_equal(w.algorithm, "roofline");
  want = 2.0 * 4096 * 4096 * 4096 / 494.5e12;
  if (fabs(w.mean_time_s - want) > 1e-12) fail_msg("h100 at 0.5 %.12g s, want %.12g", w.mean_time_s, want);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(one_slice_is_the_plain_slice),
    cmocka_unit_test(two_slices_add_the_dcn_phase),
    cmocka_unit_test(axis_lines_and_ppermute),
    cmocka_unit_test(multislice_axis_and_shift_errors),
    cmocka_unit_test(axis_slice_runs_over_dcn_alone),
    cmocka_unit_test(cpu_ring_all_reduce_is_its_closed_form),
    cmocka_unit_test(tpu_slice_algorithms_differ),
    cmocka_unit_test(impossible_workloads_are_input_errors),
    cmocka_unit_test(matmul_workload_on_each_device_kind),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
