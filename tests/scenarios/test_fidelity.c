/*
** test_fidelity.c: podsim against published measurements (docs/fidelity.md): each row runs its
** scenario under tests/data/fidelity/, reads the figure the publication reports and checks the
** relative error stays in the row's band. A band is the measured error with a margin, so a change
** that moves podsim away from the measurement fails here and has to say why in the table.
*/
#include "tests/testutil.h"

#include <math.h>

#include "scenarios/programs/train.h"
#include "scenarios/programs/workload.h"

typedef struct fidelity_row {
  const char *scenario;   /* tests/data/fidelity/NAME.yaml */
  const char *quantity;   /* what is compared */
  double published;       /* the publication's figure */
  double low, high;       /* the band of (podsim - published) / published */
} fidelity_row;

/* busbw per chip of the workload's collective (collective.csv's busbw_GBps, nccl-tests' count). */
static double collective_busbw(const char *rel) {
  static scenario s;
  scn_error err;
  if (scenario_load(tu_src(rel), NULL, 0, &s, &err) != 0) fail_msg("%s", err.msg);
  char *out = tu_temp_dir("podsim-fidelity"), path[512];
  workload_summary w;
  if (workload_run(&s, out, &w, &err) != TR_EXIT_OK) fail_msg("%s", err.msg);
  double busbw[4];
  snprintf(path, sizeof path, "%s/collective.csv", out);
  assert_true(tu_read_column(path, 6, busbw, 4, NULL) >= 1);
  tu_remove_dir(out);
  return busbw[0];
}

/* Examples per second of a training run's last step (compile excluded, as throughputs are
** published): global batch / that step's time. */
static double training_examples_per_s(const char *rel) {
  static scenario s;
  scn_error err;
  if (scenario_load(tu_src(rel), NULL, 0, &s, &err) != 0) fail_msg("%s", err.msg);
  char *out = tu_temp_dir("podsim-fidelity"), path[512];
  run_summary sum;
  if (train_run(&s, out, &sum, &err) != TR_EXIT_OK) fail_msg("%s", err.msg);
  double step[64];
  snprintf(path, sizeof path, "%s/metrics.csv", out);
  int n = tu_read_column(path, 2, step, 64, NULL);
  assert_true(n >= 2);
  tu_remove_dir(out);
  return (double)s.global_batch / step[n - 1];
}

/* The rows of docs/fidelity.md, published figures with their sources there:
**   Cloud TPU v4: 1.1 PB/s all-reduce per 4096-chip pod = 268.6 GB/s per chip (podsim 266.7)
**   Cloud TPU v5e: 51.2 TB/s per 256-chip pod = 200 GB/s per chip (198.8)
**   Cloud TPU v6e: the page's per-pod all-reduce bandwidth per chip, 400 GB/s (395.2)
**   Ying et al. 2018: ResNet-50 on 1024 TPU v3 chips, global batch 64K, 1.05M images/s (podsim
**   1.28M: +22%, outside the 15% goal; the 2018 software stack is slower than podsim's roofline
**   at 0.5 of peak, docs/fidelity.md) */
static void published_measurements_within_their_bands(void **state) {
  (void)state;
  static const fidelity_row ROWS[] = {
    {"allreduce_v4_8192", "busbw GB/s per chip", 268.6, -0.03, 0.01},
    {"allreduce_v5e_256", "busbw GB/s per chip", 200.0, -0.03, 0.01},
    {"allreduce_v6e_256", "busbw GB/s per chip", 400.0, -0.03, 0.01},
    {"resnet50_v3_2048", "images/s", 1.05e6, 0.15, 0.30},
  };
  for (size_t i = 0; i < sizeof ROWS / sizeof ROWS[0]; i++) {
    char rel[256];
    snprintf(rel, sizeof rel, "tests/data/fidelity/%s.yaml", ROWS[i].scenario);
    double got = strncmp(ROWS[i].scenario, "allreduce", 9) == 0 ? collective_busbw(rel) : training_examples_per_s(rel);
    double err = (got - ROWS[i].published) / ROWS[i].published;
    print_message("%-20s %-22s published %-10.4g podsim %-10.4g error %+.1f%%\n", ROWS[i].scenario,
                  ROWS[i].quantity, ROWS[i].published, got, 100 * err);
    if (err < ROWS[i].low || err > ROWS[i].high)
      fail_msg("%s: error %+.2f%% left its band [%+.0f%%, %+.0f%%]", ROWS[i].scenario, 100 * err,
               100 * ROWS[i].low, 100 * ROWS[i].high);
  }
}

/* Cloud TPU v5e page (https://cloud.google.com/tpu/docs/v5e): data-centre network bandwidth
** per pod 6.4 Tbps = 800 GB/s per 256-chip slice. Four v5litepod-256 slices all-reduce 1 GB
** hierarchically; in the DCN phase each device's chunk (1 GB / 256) goes round a ring of the 4
** slices, 2 (4 - 1) / 4 of it out of every device, so a slice sends 1.5 GB over DCN. podsim:
** 1.5e9 B / 2.007 ms = 747 GB/s, -6.6%: the DCN links run at the catalogue's 25 GB/s per host
** (32 hosts = the page's 800), and the 6 ring rounds each wait the route's 22 us of latency
** (PCIe, DCN out, DCN in, PCIe). */
static void multislice_dcn_within_its_band(void **state) {
  (void)state;
  static scenario s;
  scn_error err;
  if (scenario_load(tu_src("tests/data/fidelity/allreduce_v5e_256x4.yaml"), NULL, 0, &s, &err) != 0)
    fail_msg("%s", err.msg);
  char *out = tu_temp_dir("podsim-fidelity");
  workload_summary w;
  if (workload_run(&s, out, &w, &err) != TR_EXIT_OK) fail_msg("%s", err.msg);
  tu_remove_dir(out);
  assert_int_equal(w.slices, 4);
  double sent = 2.0 * (w.slices - 1) / w.slices * s.workload_size_bytes, got = sent / w.dcn_time_s / 1e9;
  double err_rel = (got - 800.0) / 800.0;
  print_message("%-20s %-22s published %-10.4g podsim %-10.4g error %+.1f%%\n", "allreduce_v5e_256x4",
                "DCN GB/s per slice", 800.0, got, 100 * err_rel);
  if (err_rel < -0.09 || err_rel > -0.04)
    fail_msg("allreduce_v5e_256x4: error %+.2f%% left its band [-9%%, -4%%]", 100 * err_rel);
}

/* How to Scale Your Model (Austin et al., https://jax-ml.github.io/scaling-book/sharding/, Pop
** Quiz 2): AllGather_Y([E_Y, F]) on a TPU v5e mesh {X: 8, Y: 4}, bfloat16, profiled at 680 us for
** E = 2048, F = 8192 (an 8.4 MB shard) and "closer to 8us" for E = F = 256 (32 kB). Y has no
** wraparound at 4, so the farthest shard crosses 3 hops: podsim runs 3 rounds of a whole shard at
** the 50 GB/s a v5e link carries one way plus 1 us a hop, 3 x (8,388,608 B / 50e9 + 1 us) =
** 506.316 us (-25.5%) and 3 x (32,768 B / 50e9 + 1 us) = 4.966 us (-37.9%). The book's own model
** says 560 us at 45 GB/s; the profile implies 74% of the links' spec and ~2 us a hop, which podsim
** does not charge (docs/fidelity.md). */
static void scaling_book_all_gather_along_one_axis(void **state) {
  (void)state;
  static const struct { const char *scenario; double published_s, low, high; } ROWS[] = {
    {"allgather_v5e_8x4_y", 680e-6, -0.29, -0.22},
    {"allgather_v5e_8x4_y_small", 8e-6, -0.42, -0.34},
  };
  for (size_t i = 0; i < sizeof ROWS / sizeof ROWS[0]; i++) {
    static scenario s;
    scn_error err;
    char rel[256], path[512];
    snprintf(rel, sizeof rel, "tests/data/fidelity/%s.yaml", ROWS[i].scenario);
    if (scenario_load(tu_src(rel), NULL, 0, &s, &err) != 0) fail_msg("%s", err.msg);
    char *out = tu_temp_dir("podsim-fidelity");
    workload_summary w;
    if (workload_run(&s, out, &w, &err) != TR_EXIT_OK) fail_msg("%s", err.msg);
    assert_int_equal(w.ranks, 4);  /* a line along y */
    assert_int_equal(w.lines, 8);
    double time_s[4];
    snprintf(path, sizeof path, "%s/collective.csv", out);
    assert_true(tu_read_column(path, 4, time_s, 4, NULL) >= 1);
    tu_remove_dir(out);
    double err_rel = (time_s[0] - ROWS[i].published_s) / ROWS[i].published_s;
    print_message("%-26s %-16s published %-10.4g podsim %-10.4g error %+.1f%%\n", ROWS[i].scenario, "time us",
                  ROWS[i].published_s * 1e6, time_s[0] * 1e6, 100 * err_rel);
    if (err_rel < ROWS[i].low || err_rel > ROWS[i].high)
      fail_msg("%s: error %+.2f%% left its band [%+.0f%%, %+.0f%%]", ROWS[i].scenario, 100 * err_rel,
               100 * ROWS[i].low, 100 * ROWS[i].high);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(published_measurements_within_their_bands),
    cmocka_unit_test(multislice_dcn_within_its_band),
    cmocka_unit_test(scaling_book_all_gather_along_one_axis),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
