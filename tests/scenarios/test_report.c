/*
** test_report.c: what a run shows: the charts outputs.plots asks for in each outputs.format, the
** trace.json structure Perfetto needs, and that neither charts nor the progress bar change
** run_hash. Files and structure are checked, never pixels.
*/
#include "tests/testutil.h"
#include "tests/tracecheck.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scenarios/report/report.h"
#include "scenarios/programs/train.h"

static const char *const ALL = "outputs.plots=[loss, step_time, timeline, hbm, heatmap, faults]";

/* The quickstart for 3 steps with the given overrides, into out; returns run_hash. */
static uint64_t run(const char *out, const char *const *sets, int nsets) {
  static scenario s;
  scn_error err;
  const char *all[8] = {"training.steps=3"};
  for (int i = 0; i < nsets; i++) all[i + 1] = sets[i];
  if (scenario_load(tu_src("scenarios/examples/quickstart.yaml"), all, nsets + 1, &s, &err) != 0)
    fail_msg("%s", err.msg);
  run_summary sum;
  int rc = train_run(&s, out, &sum, &err);
  if (rc != TR_EXIT_OK) fail_msg("exit %d: %s", rc, err.msg);
  return sum.run_hash;
}

static int starts_with(const char *dir, const char *name, const char *magic, size_t len) {
  char path[512], buf[16] = {0};
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "rb");
  if (f == NULL) return 0;
  size_t got = fread(buf, 1, len, f);
  fclose(f);
  return got == len && memcmp(buf, magic, len) == 0;
}

/* Every chart name in every format: six files with the format's magic bytes, and run_hash the
** same as with the default two charts (charts are not simulated output). */
static void every_chart_in_every_format(void **state) {
  (void)state;
  static const char *const names[] = {"loss", "step_time", "timeline", "hbm", "heatmap", "faults"};
  static const struct { const char *set, *ext, *magic; size_t len; } fmts[] = {
      {"outputs.format=png", "png", "\x89PNG", 4}, {"outputs.format=svg", "svg", "<?xml", 5},
      {"outputs.format=pdf", "pdf", "%PDF-", 5}};
  char *base = tu_temp_dir("podsim-report");
  uint64_t plain = run(base, NULL, 0);
  for (int f = 0; f < 3; f++) {
    char *dir = tu_temp_dir("podsim-report");
    const char *sets[2] = {ALL, fmts[f].set};
    assert_true(run(dir, sets, 2) == plain);
    for (int k = 0; k < 6; k++) {
      char file[64];
      snprintf(file, sizeof file, "%s.%s", names[k], fmts[f].ext);
      if (!starts_with(dir, file, fmts[f].magic, fmts[f].len)) fail_msg("%s: missing or not %s", file, fmts[f].ext);
    }
    tu_remove_dir(dir);
  }
  /* Only what is asked for: the default writes loss and step_time, no timeline. */
  assert_true(starts_with(base, "loss.png", "\x89PNG", 4));
  char path[512];
  snprintf(path, sizeof path, "%s/timeline.png", base);
  assert_int_equal(access(path, F_OK), -1);
  tu_remove_dir(base);
}

/* The quickstart's trace (3 steps, 4 workers on a star): valid for Perfetto (tc_check_trace);
** a process per worker VM holding its replica's steps and its cpu, one for the fabric: 5; a
** thread per replica (4), per cpu and its second lane (the input pipeline overlaps the model:
** 8) and per fabric link (8): 20. */
static void trace_structure(void **state) {
  (void)state;
  char *dir = tu_temp_dir("podsim-report");
  run(dir, NULL, 0);
  char path[512];
  snprintf(path, sizeof path, "%s/trace.json", dir);
  tc_counts c = tc_check_trace(path);
  assert_int_equal(c.processes, 5);
  assert_int_equal(c.threads, 20);
  assert_int_equal(c.instants, 0);
  assert_true(c.complete > 100);
  json_error_t jerr;
  json_t *root = json_load_file(path, 0, &jerr);
  json_t *ev = json_object_get(root, "traceEvents");
  /* The replica's track sits in its VM's process: pid of worker0.cpu's thread == pid of
  ** task:0's. */
  json_int_t pid_replica = -1, pid_cpu = -2;
  for (size_t i = 0; i < json_array_size(ev); i++) {
    json_t *x = json_array_get(ev, i);
    if (strcmp(json_string_value(json_object_get(x, "name")), "thread_name") != 0) continue;
    const char *n = json_string_value(json_object_get(json_object_get(x, "args"), "name"));
    if (strcmp(n, "/job:worker/replica:0/task:0/device:CPU:0") == 0) pid_replica = json_integer_value(json_object_get(x, "pid"));
    if (strcmp(n, "worker0.cpu") == 0) pid_cpu = json_integer_value(json_object_get(x, "pid"));
  }
  assert_true(pid_replica == pid_cpu);
  json_decref(root);
  tu_remove_dir(dir);
}

/* The faults chart draws an array of events; an empty array is the "no faults" chart. Two
** preemptions on one target and a restart make two rows; a bad span is skipped, not an error. */
static void faults_from_events(void **state) {
  (void)state;
  static scenario s;
  scn_error err;
  const char *sets[1] = {"outputs.plots=[faults]"};
  if (scenario_load(tu_src("scenarios/examples/quickstart.yaml"), sets, 1, &s, &err) != 0) fail_msg("%s", err.msg);
  sim_engine *e = sim_engine_new();
  report_fault f[3] = {{"preempted", "worker:3", 0, 0}, {"down", "worker:3", 0, 60}, {"restarting", "training", 60, 50}};
  char *dir = tu_temp_dir("podsim-report"), msg[256] = "";
  report_run r = {&s, e, NULL, 0, NULL, 0, f, 3, 1.0, NULL, NULL, 0};
  assert_int_equal(report_write_plots(&r, dir, msg, sizeof msg), 0);
  assert_true(starts_with(dir, "faults.png", "\x89PNG", 4));
  r.nfaults = 0;
  assert_int_equal(report_write_plots(&r, dir, msg, sizeof msg), 0);
  /* An unwritable directory is an error with the path in the message. */
  assert_int_equal(report_write_plots(&r, "/nonexistent-podsim", msg, sizeof msg), -1);
  assert_non_null(strstr(msg, "/nonexistent-podsim"));
  sim_engine_free(e);
  tu_remove_dir(dir);
}

/* The text summary: one screen (under 15 lines) ending in run_hash, with the breakdown. */
static void summary_text(void **state) {
  (void)state;
  static scenario s;
  scn_error err;
  if (scenario_load(tu_src("scenarios/examples/quickstart.yaml"), NULL, 0, &s, &err) != 0) fail_msg("%s", err.msg);
  run_summary sum = {0};
  snprintf(sum.scenario, sizeof sum.scenario, "quickstart");
  sum.strategy = "multi_worker_mirrored";
  sum.all_reduce = "ring";
  sum.replicas = 4;
  sum.steps_completed = 300;
  sum.sim_time_s = 0.0572779;
  sum.means = (run_step_means){190.9e-6, 0.06e-6, 54.33e-6, 136.5e-6, 0, 0, 0};
  sum.memory_peak_bytes = 251472;
  sum.memory_capacity_bytes = UINT64_C(34359738368);
  sum.run_hash = 0xbee2f3b83e2f4bc5ULL;
  char buf[4096] = "";
  FILE *f = fmemopen(buf, sizeof buf, "w");
  report_print_summary(f, &s, "out/q", &sum);
  fclose(f);
  int lines = 0;
  for (const char *p = buf; *p; p++) lines += *p == '\n';
  assert_true(lines < 15);
  /* 190.9 us mean; 245.6 KiB of 32.0 GiB is 0.0007%, printed with one decimal. */
  assert_non_null(strstr(buf, "step time     190.9 us mean: input 0.06 us, compute 54.33 us, communication 136.5 us"));
  assert_non_null(strstr(buf, "57.28 ms simulated"));
  assert_non_null(strstr(buf, "245.6 KiB of 32.0 GiB on the fullest device (0.0%)"));
  assert_non_null(strstr(buf, "\nrun_hash bee2f3b83e2f4bc5\n"));
  /* No loss without numerics, and a diverged one said in words: never a bare nan. */
  for (int numerics = 0; numerics < 2; numerics++) {
    s.numerics_full = numerics;
    sum.final_loss = NAN;
    f = fmemopen(buf, sizeof buf, "w");
    report_print_summary(f, &s, "out/q", &sum);
    fclose(f);
    assert_non_null(strstr(buf, numerics ? "  final loss    nan (diverged)\n" : "  final loss    n/a (numerics: off)\n"));
  }
  /* No host round trip on workers: the step line ends at idle. A TPU run's 100 us launch is its
  ** own part after idle (issue 25, item 7), not in it. */
  f = fmemopen(buf, sizeof buf, "w");
  report_print_summary(f, &s, "out/q", &sum);
  fclose(f);
  assert_non_null(strstr(buf, "communication 136.5 us, idle 0 us\n"));
  sum.means.host_s = 100e-6;
  f = fmemopen(buf, sizeof buf, "w");
  report_print_summary(f, &s, "out/q", &sum);
  fclose(f);
  assert_non_null(strstr(buf, "communication 136.5 us, idle 0 us, host 100 us\n"));
}

/* The output directory is whole or absent (outputs_stage): a stage beside DIR in parents it
** creates, committed over an earlier DIR (whose files go), or discarded with those parents; a
** file named DIR and "." are refused before anything is made. */
static int exists(const char *fmt, const char *dir) {
  char path[600];
  snprintf(path, sizeof path, fmt, dir);
  return access(path, F_OK) == 0;
}

/* The least a run writes, from the loader: the quickstart's 300 metrics.csv rows of 100 bytes and
** its 5,508 parameters' final values at 30 bytes (numerics full): 30,000 + 165,240 = 195,240;
** with outputs.tensorboard 300 x 12 scalars x 20 bytes more (72,000); with numerics off the rows. */
static void least_output_bytes(void **state) {
  (void)state;
  static scenario s;
  scn_error err;
  const char *sets[2][2] = {{"numerics=full", "outputs.tensorboard=false"}, {"numerics=off", "outputs.tensorboard=true"}};
  const double want[2] = {195240, 30000 + 72000};
  for (int k = 0; k < 2; k++) {
    if (scenario_load(tu_src("scenarios/examples/quickstart.yaml"), sets[k], 2, &s, &err) != 0) fail_msg("%s", err.msg);
    assert_true(fabs(s.output_bytes - want[k]) < 0.5);
  }
}

static void stage_whole_or_absent(void **state) {
  (void)state;
  char root[] = "/tmp/podsim-stage-XXXXXX", dir[256], msg[8400];
  assert_non_null(mkdtemp(root));
  snprintf(dir, sizeof dir, "%s/a/b/out/", root);  /* trailing slash: the same DIR */
  outputs_stage st;
  assert_int_equal(outputs_stage_open(&st, dir, 0, msg, sizeof msg), 0);
  assert_true(exists("%s/a/b", root) && !exists("%s/a/b/out", root));
  assert_true(strstr(st.path, "/a/b/out.partial-") != NULL);
  outputs_stage_discard(&st);  /* the stage and the parents it made go: nothing is left */
  assert_false(exists("%s/a", root));

  for (int round = 0; round < 2; round++) {  /* the second replaces the first */
    assert_int_equal(outputs_stage_open(&st, dir, 0, msg, sizeof msg), 0);
    char file[8500];
    snprintf(file, sizeof file, "%s/%s", st.path, round ? "new" : "old");
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    assert_int_equal(base_fclose(f), 0);
    assert_int_equal(outputs_stage_commit(&st, msg, sizeof msg), 0);
  }
  assert_true(exists("%s/a/b/out/new", root) && !exists("%s/a/b/out/old", root));
  char cmd[400];
  snprintf(cmd, sizeof cmd, "test \"$(ls -A %s/a/b)\" = out", root);  /* no .partial, no .old */
  assert_int_equal(system(cmd), 0);

  snprintf(dir, sizeof dir, "%s/a/b/out/new", root);
  assert_int_equal(outputs_stage_open(&st, dir, 0, msg, sizeof msg), -1);
  assert_non_null(strstr(msg, "/a/b/out/new: outputs.dir: exists and is not a directory: Not a directory"));
  assert_int_equal(outputs_stage_open(&st, ".", 0, msg, sizeof msg), -1);
  assert_non_null(strstr(msg, ".: outputs.dir: cannot replace this directory (name one inside it)"));
  /* More to write than any disk has (2^60 bytes, 2^20 TiB): refused before the run, and the stage and the
  ** parents it made are gone. */
  snprintf(dir, sizeof dir, "%s/c/d/out", root);
  assert_int_equal(outputs_stage_open(&st, dir, 0x1p60, msg, sizeof msg), -1);
  assert_non_null(strstr(msg, "/c/d/out: outputs.dir: cannot hold the outputs (the run writes at least 1048576.0 TiB"));
  assert_non_null(strstr(msg, "use fewer steps or another directory): No space left on device"));
  assert_false(exists("%s/c", root));
  assert_int_equal(outputs_remove_tree(root), 0);
  assert_false(exists("%s", root));
}

/* Eight NVLink-like links at 300 GB/s carry 30 MB each, one NIC at 25 GB/s carries 10 MB: the
** NIC is the busiest by utilisation (10e6 / 25e9 = 4e-4 s of its bandwidth against 30e6 / 300e9 =
** 1e-4 s), though it moves the fewest bytes, so with room for 4 rows the heatmap keeps it. */
typedef struct { sim_link *links[9]; } fabric_t;
static void send_all(sim_actor *self, void *arg) {
  fabric_t *f = arg;
  sim_engine *e = sim_actor_engine(self);
  sim_activity *acts[9];
  for (int i = 0; i < 9; i++) acts[i] = sim_comm_start(e, &f->links[i], 1, i < 8 ? 30e6 : 10e6);
  assert_int_equal(sim_wait_all(self, acts, 9), SIM_OK);
}
static void heatmap_keeps_the_bottleneck_nic(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  sim_trace_enable(e, 1);
  fabric_t f;
  for (int i = 0; i < 8; i++) {
    char name[32];
    snprintf(name, sizeof name, "worker0.gpu%d.nvl.up", i);
    f.links[i] = sim_link_new(e, name, 300e9, 0);
  }
  f.links[8] = sim_link_new(e, "fabric.w0.gpu0.nic.out", 25e9, 0);
  sim_actor_spawn(e, "sender", send_all, &f);
  assert_int_equal(sim_run(e), 0);
  int tracks[4];
  size_t kept, all = report_link_rows(e, 0, sim_now(e) + 1, tracks, 4, &kept);
  assert_int_equal(all, 9);
  assert_int_equal(kept, 4);
  int nic = 0;
  for (size_t i = 0; i < kept; i++) nic += strcmp(sim_trace_track_name(e, tracks[i]), "fabric.w0.gpu0.nic.out") == 0;
  assert_int_equal(nic, 1);
  for (size_t i = 1; i < kept; i++) assert_true(tracks[i - 1] < tracks[i]);  /* track order */
  sim_engine_free(e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(least_output_bytes),
    cmocka_unit_test(heatmap_keeps_the_bottleneck_nic),
      cmocka_unit_test(every_chart_in_every_format),
      cmocka_unit_test(trace_structure),
      cmocka_unit_test(faults_from_events),
      cmocka_unit_test(summary_text),
      cmocka_unit_test(stage_whole_or_absent),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
