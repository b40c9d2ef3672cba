/* test_plan.c: `podsim plan` (scenarios/programs/plan.h): the goodput formula, the largest-batch search
** against closed forms, the fault model read from a tree, and the 2x2 grid of
** tests/data/plan/tiny.yaml run whole: its sweep.csv values worked out by hand, an out-of-memory
** point as a row, the same bytes with 1 and 2 parallel jobs, the PDF's pages, bad sweep values. */
#include "tests/testutil.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "scenarios/programs/plan.h"
#include "scenarios/programs/train.h"
#include "scenarios/config/yamltree.h"

static scn_error E;

static void close_to(double got, double want, double rel) {
  if (!(fabs(got - want) <= rel * fabs(want))) fail_msg("got %.17g, want %.17g", got, want);
}

static void test_goodput(void **state) {
  (void)state;
  /* No failures, no checkpoint: every second is useful. */
  assert_true(plan_goodput(0, 100, 0, 10) == 1.0);
  /* No failures: 90 s of work per 10 s checkpoint, 90 / 100. */
  assert_true(plan_goodput(0, 90, 10, 60) == 0.9);
  /* One failure per 1000 s, 100 s segments, free checkpoints and restarts: lambda W / expm1(lambda W)
  ** = 0.1 / (e^0.1 - 1) = 0.950833194477505, next to the first-order 1 - W / 2M = 0.95. */
  close_to(plan_goodput(1e-3, 100, 0, 0), 0.950833194477505, 1e-14);
  /* A 50 s restart divides it by e^(lambda R) = e^0.05: 0.9044605123790125. */
  close_to(plan_goodput(1e-3, 100, 0, 50), 0.9044605123790125, 1e-14);
  /* Failures far more often than the work between checkpoints: nothing gets done. */
  assert_true(plan_goodput(1.0, 1e4, 0, 0) == 0.0);
}

/* fits(b) <=> b <= *limit, counting the probes. */
typedef struct probe { long fits_up_to; int calls; } probe;
static int fits_up_to(void *ctx, long b) {
  probe *p = ctx;
  p->calls++;
  return b <= p->fits_up_to;
}

static void test_largest(void **state) {
  (void)state;
  /* 37: doubling probes 1 2 4 8 16 32 64 (7), bisection between 32 and 64 probes 48 40 36 38 37
  ** (5): 12 probes. */
  probe p = { 37, 0 };
  assert_int_equal(plan_largest(fits_up_to, &p, 1000), 37);
  assert_int_equal(p.calls, 12);
  p = (probe){ 1000000, 0 };
  assert_int_equal(plan_largest(fits_up_to, &p, 100), 100);   /* the limit, not beyond */
  p = (probe){ 0, 0 };
  assert_int_equal(plan_largest(fits_up_to, &p, 100), 0);     /* not even one example */
  p = (probe){ 64, 0 };
  assert_int_equal(plan_largest(fits_up_to, &p, 1L << 40), 64);  /* a power of two exactly */
}

/* The memory model's closed form for tiny.yaml's model beside another replica: 268 B of
** variables + the step's liveness peak <= the HBM. The schedule (ops 0-5 forward and loss, op 8
** dense_1's last backward op writing its gradients, their all-reduces right after it, op 9
** relu's derivative, op 11 dense's gradients and their all-reduces, then the updates) holds at
** most, for a batch of b >= 2: at op 9 the input 16 b, relu's output 32 b, dense's output
** gradient 32 b, the derivative 32 b and dense_1's all-reduced gradients 96 + 12 = 112 b + 108;
** at dense_1's kernel all-reduce 80 b + 204 (its partial and whole copies); at op 11 32 b + 268;
** after it 396. So 268 + 112 b + 108 <= 100000: the largest batch is floor(99624 / 112) = 889. */
static void test_largest_batch_closed_form(void **state) {
  (void)state;
  static scenario s;
  const char *sets[] = { "cluster.workers.count=2", "cluster.workers.machine.accelerators.hbm=100000B" };
  if (scenario_load(tu_src("tests/data/plan/tiny.yaml"), sets, 2, &s, &E) != 0) fail_msg("%s", E.msg);
  train_memory *m = train_memory_new(&s, &E);
  assert_non_null(m);
  assert_int_equal(train_memory_replicas(m), 2);
  assert_int_equal(train_memory_fits(m, 889), 1);
  assert_int_equal(train_memory_fits(m, 890), 0);
  assert_int_equal(train_memory_fits(m, 889), 1);  /* a probe leaves the devices empty */
  assert_true(train_memory_checkpoint_bytes(m) == 268.0);  /* 67 floats, SGD keeps no slot */
  train_memory_free(m);
}

static void test_faults_of(void **state) {
  (void)state;
  static scenario s;
  s.workers = 4;
  s.ckpt_every = 50;          /* the loader's figures for the checkpoint and restart keys */
  s.ckpt_bytes_per_s = 1e9;
  s.restart_delay_s = 60;
  yt_error ye;
  yt_doc *d = yt_parse_text("faults:\n"
                            "  - {kind: preempt, target: \"worker:*\", mtbf: 2h}\n"
                            "  - {kind: fail, target: chief, rate: 0.5/h}\n"
                            "  - {kind: preempt, target: worker:1, at: 10s}\n"
                            "  - {kind: straggler, target: worker:1, slowdown: 3, at: 0s}\n",
                            "faults.yaml", 0, 0, &ye);
  assert_non_null(d);
  plan_faults f;
  plan_faults_of(d, &s, &f);
  /* 4 workers at 1/2h each and the chief at 0.5/h; the scheduled preemption and the straggler are
  ** no rate: 4/7200 + 0.5/3600 = 6.944e-4 per second. */
  close_to(f.rate_per_s, 4.0 / 7200 + 0.5 / 3600, 1e-15);
  assert_int_equal(f.checkpoint_steps, 50);
  assert_true(f.checkpoint_bytes_per_s == 1e9);
  assert_true(f.restart_delay_s == 60);
  yt_doc_free(d);
}

/* A parameter-server job's expected goodput: worker:* preempted every 20 ms for 5 ms and a chief
** failing at 0.5/h; each worker keeps (1 - lambda t / 2) / (1 + lambda d) of its time, lambda =
** 50/s, t = 100 us a closure, d = 5 ms: (1 - 0.0025) / 1.25 = 0.798; the chief's failures stop
** the job as a sync job's would: plan_goodput(0.5/3600, 10, 0, 60) = 0.9986... by Daly. */
static void test_ps_goodput(void **state) {
  (void)state;
  static scenario s;
  s.workers = 8;
  s.strategy = SCN_STRATEGY_PARAMETER_SERVER;
  s.restart_delay_s = 60;
  yt_error ye;
  yt_doc *d = yt_parse_text("faults:\n"
                            "  - {kind: preempt, target: \"worker:*\", mtbf: 20ms, down_for: 5ms}\n"
                            "  - {kind: fail, target: chief, rate: 0.5/h}\n",
                            "faults.yaml", 0, 0, &ye);
  assert_non_null(d);
  plan_faults f;
  plan_faults_of(d, &s, &f);
  assert_true(f.parameter_server);
  close_to(f.worker_rate_per_s, 50.0, 1e-12);   /* one worker's, not the fleet's 400/s */
  close_to(f.worker_down_s, 0.005, 1e-15);
  close_to(f.rate_per_s, 0.5 / 3600, 1e-18);    /* the chief's alone stops the job */
  double job = plan_goodput(0.5 / 3600, 10, 0, 60);
  close_to(plan_ps_goodput(&f, 10, 0, 60, 100e-6), job * (1 - 50 * 100e-6 / 2) / 1.25, 1e-15);
  close_to(plan_ps_goodput(&f, 10, 0, 60, 100e-6) / job, 0.798, 1e-12);
  yt_doc_free(d);
}

/* tests/data/plan/ps_workers.yaml: a parameter-server plan's examples/s is the fleet's, workers x
** global_batch / the median closure, not one closure's: it grows with the workers and is what
** each point's run measured (summary.json, examples over simulated time; no faults there). Was
** global_batch / one closure, the same for 10 and 40 workers up to the ps tasks' load. */
static void test_ps_plan_throughput(void **state) {
  (void)state;
  char dir[] = "/tmp/podsim-plan-XXXXXX", path[256], cmd[128];
  assert_non_null(mkdtemp(dir));
  plan *p = plan_load(tu_src("tests/data/plan/ps_workers.yaml"), NULL, 0, &E);
  if (p == NULL) fail_msg("%s", E.msg);
  assert_int_equal(plan_num_points(p), 3);
  if (plan_run(p, dir, 2, &E) != 0) fail_msg("%s", E.msg);
  static const double workers[] = { 10, 20, 40 };
  for (int i = 0; i < 3; i++) {
    const plan_row *r = plan_point(p, i);
    close_to(r->examples_per_s, workers[i] * 64 / r->m.step_s, 1e-6 * r->examples_per_s);
    if (i > 0) assert_true(r->examples_per_s > plan_point(p, i - 1)->examples_per_s);
    snprintf(path, sizeof path, "%s/points/%03d/summary.json", dir, i);
    json_t *sum = json_load_file(path, 0, NULL);
    assert_non_null(sum);
    double run = json_real_value(json_object_get(sum, "examples_per_s"));
    close_to(r->examples_per_s, run, 1e-6 * run);
    assert_true(r->goodput == 1.0);  /* no faults, no checkpoints */
    json_decref(sum);
  }
  plan_free(p);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

/* Column `name` of sweep.csv's row `row` (1-based after the header), as text. */
static void csv_cell(const char *path, int row, const char *name, char *out, size_t len) {
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  char line[4096], header[4096];
  assert_non_null(fgets(header, sizeof header, f));
  for (int r = 0; r < row; r++) assert_non_null(fgets(line, sizeof line, f));
  fclose(f);
  int col = -1, c = 0;
  char *save = NULL;
  for (char *h = strtok_r(header, ",\n", &save); h; h = strtok_r(NULL, ",\n", &save), c++)
    if (!strcmp(h, name)) col = c;
  assert_true(col >= 0);
  const char *at = line;
  for (c = 0; c < col; c++) at = strchr(at, ',') + 1;
  snprintf(out, len, "%.*s", (int)strcspn(at, ",\n"), at);
}

static void run_tiny(const char *dir, int jobs) {
  plan *p = plan_load(tu_src("tests/data/plan/tiny.yaml"), NULL, 0, &E);
  if (p == NULL) fail_msg("%s", E.msg);
  if (plan_run(p, dir, jobs, &E) != 0) fail_msg("%s", E.msg);
  plan_free(p);
}

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  *len = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc(*len + 1);
  assert_int_equal(fread(b, 1, *len, f), *len);
  b[*len] = 0;
  fclose(f);
  return b;
}

/* The chips charts draw a line per generation: a TPU type's name without its size (v4-16 ->
** v4, v5litepod-8 -> v5litepod), the workers' machine type off TPUs. Known at load. */
static void test_generations(void **state) {
  (void)state;
  const char *mix[] = {"sweep={cluster.tpu.type: [v4-8, v4-16, v5litepod-4, v5litepod-8], dataset.global_batch: [32768]}"};
  plan *p = plan_load(tu_src("scenarios/examples/plan_tpu_v4.yaml"), mix, 1, &E);
  if (p == NULL) fail_msg("%s", E.msg);
  static const char *const want[] = {"v4", "v4", "v5litepod", "v5litepod"};
  static const int chips[] = {4, 8, 4, 8};
  for (int i = 0; i < 4; i++) {
    assert_string_equal(plan_point(p, i)->generation, want[i]);
    assert_int_equal(plan_point(p, i)->chips, chips[i]);
  }
  plan_free(p);
  p = plan_load(tu_src("tests/data/plan/tiny.yaml"), NULL, 0, &E);
  if (p == NULL) fail_msg("%s", E.msg);
  assert_string_equal(plan_point(p, 0)->generation, "custom");  /* a machine given by its figures */
  plan_free(p);
}

static void test_tiny_grid(void **state) {
  (void)state;
  char dir[] = "/tmp/podsim-plan-XXXXXX", path[128], cell[64];
  assert_non_null(mkdtemp(dir));
  const char *keep[] = {"outputs.keep_points=true"};  /* the points' metrics.csv are read below */
  plan *p = plan_load(tu_src("tests/data/plan/tiny.yaml"), keep, 1, &E);
  if (p == NULL) fail_msg("%s", E.msg);
  assert_int_equal(plan_num_points(p), 4);
  if (plan_run(p, dir, 2, &E) != 0) fail_msg("%s", E.msg);
  /* Points in file order, the first key slowest: (1 worker, 8) (1, 16) (2, 8) (2, 16). */
  static const int chips[] = { 1, 1, 2, 2 }, fits[] = { 1, 0, 1, 1 }, batch[] = { 8, 16, 8, 16 };
  /* Closed form (tiny.yaml, test_largest_batch_closed_form): 268 + 112 b + 108 <= 2000, one
  ** worker or two: floor(1624 / 112) = 14. */
  static const long max_batch[] = { 14, 14, 14, 14 };
  for (int i = 0; i < 4; i++) {
    const plan_row *r = plan_point(p, i);
    assert_int_equal(r->chips, chips[i]);
    assert_int_equal(r->fits, fits[i]);
    assert_int_equal(r->global_batch, batch[i]);
    assert_int_equal(r->m.max_batch, max_batch[i]);
    if (!fits[i]) continue;
    /* examples/s is the global batch over the median step; efficiency per chip against point 0. */
    assert_true(r->examples_per_s == batch[i] / r->m.step_s);
    const plan_row *ref = plan_point(p, 0);
    close_to(r->efficiency, (r->examples_per_s / r->chips) / (ref->examples_per_s / ref->chips), 1e-15);
    assert_true(r->goodput == 1.0);  /* no faults, no checkpoints */
    assert_true(r->time_s == r->m.compile_s + 5 * r->m.step_s);
  }
  /* Point 0 is input-bound: a batch of 8 takes 20 us + 8 x 1 us of one 25 GFLOP/s vCPU, 700 kFLOP,
  ** on the VM's 100 GFLOP/s while the GPU's 5.7 ns of compute waits: 7 us a step, 1142857 ex/s. */
  assert_true(plan_point(p, 0)->m.step_s == 7e-6);
  assert_true(plan_point(p, 0)->efficiency == 1.0);
  /* Point 1 needs 268 + 112 x 16 + 108 = 2168 B of its 2000: ResourceExhaustedError, a row. */
  assert_string_equal(plan_point(p, 1)->m.error, "ResourceExhaustedError");
  assert_true(plan_point(p, 1)->m.hbm_needed == 2168);
  assert_true(isnan(plan_point(p, 1)->examples_per_s));
  /* Two workers spend ~24 us in the all-reduce: the fewest chip-hours is point 0's one GPU. */
  assert_int_equal(plan_reference(p), 0);
  assert_int_equal(plan_recommended(p), 0);
  plan_free(p);

  static const struct { int row; const char *column, *want; } cells[] = {
    { 2, "fits", "false" }, { 2, "error", "ResourceExhaustedError" }, { 2, "step_time_s", "" },
    { 1, "examples_per_s", "1142857.14" }, { 4, "dataset.global_batch", "16" },
    { 4, "max_batch_per_replica", "14" }, { 1, "recommended", "true" }, { 3, "recommended", "false" },
    { 1, "host_s", "0" }, { 2, "host_s", "" },  /* workers have no host round trip; point 1 did not run */
  };
  snprintf(path, sizeof path, "%s/sweep.csv", dir);
  for (size_t i = 0; i < sizeof cells / sizeof cells[0]; i++) {
    csv_cell(path, cells[i].row, cells[i].column, cell, sizeof cell);
    if (strcmp(cell, cells[i].want)) fail_msg("row %d %s: got \"%s\", want \"%s\"", cells[i].row, cells[i].column, cell, cells[i].want);
  }
  /* The median step is the point's own metrics.csv's: point 0's steps 1..4 each take 7 us. */
  double steps[8];
  snprintf(path, sizeof path, "%s/points/000/metrics.csv", dir);
  assert_int_equal(tu_read_column(path, 2, steps, 8, NULL), 5);
  assert_true(steps[2] == 7e-6);

  /* report.pdf: the title page, one table page, four charts. */
  size_t len;
  snprintf(path, sizeof path, "%s/report.pdf", dir);
  char *pdf = slurp(path, &len);
  int pages = 0;
  for (size_t at = 0; at + 12 <= len; at++)  /* "/Type /Pages" is the page tree, not a page */
    if (!memcmp(pdf + at, "/Type /Page", 11) && pdf[at + 11] != 's') pages++;
  assert_int_equal(pages, 6);
  free(pdf);
  snprintf(path, sizeof path, "rm -rf '%s'", dir);
  assert_int_equal(system(path), 0);
}

/* The same grid with 1 and 2 processes: byte-identical sweep.csv, report.md and report.pdf. */
static void test_jobs_deterministic(void **state) {
  (void)state;
  char one[] = "/tmp/podsim-plan1-XXXXXX", two[] = "/tmp/podsim-plan2-XXXXXX", a[128], b[128];
  assert_non_null(mkdtemp(one));
  assert_non_null(mkdtemp(two));
  run_tiny(one, 1);
  run_tiny(two, 2);
  static const char *const files[] = { "sweep.csv", "report.md", "report.pdf" };
  for (int i = 0; i < 3; i++) {
    size_t la, lb;
    snprintf(a, sizeof a, "%s/%s", one, files[i]);
    snprintf(b, sizeof b, "%s/%s", two, files[i]);
    char *x = slurp(a, &la), *y = slurp(b, &lb);
    if (la != lb || memcmp(x, y, la) != 0) fail_msg("%s differs between -j 1 and -j 2", files[i]);
    free(x);
    free(y);
  }
  snprintf(a, sizeof a, "rm -rf '%s' '%s'", one, two);
  assert_int_equal(system(a), 0);
}

/* Points that did not run: point 1's process is killed (PODSIM_PLAN_KILL_POINTS, as the host's OOM
** killer would), point 2 cannot make its directory (points/002 is a file: an OutputError, exit 2).
** Neither is "does not fit": no memory verdict (fits -1, an empty cell), their exit statuses
** 128 + 9 = 137 and 2, no figures; points 0 and 3 ran as in test_tiny_grid, point 0 recommended. */
static void test_points_that_did_not_run(void **state) {
  (void)state;
  char dir[] = "/tmp/podsim-plan-crash-XXXXXX", path[128], cell[64];
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/points", dir);
  assert_int_equal(mkdir(path, 0755), 0);
  snprintf(path, sizeof path, "%s/points/002", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fclose(f);
  setenv("PODSIM_PLAN_KILL_POINTS", "1", 1);
  plan *p = plan_load(tu_src("tests/data/plan/tiny.yaml"), NULL, 0, &E);
  if (p == NULL) fail_msg("%s", E.msg);
  int rc = plan_run(p, dir, 2, &E);
  unsetenv("PODSIM_PLAN_KILL_POINTS");
  if (rc != 0) fail_msg("%s", E.msg);
  static const int fits[] = { 1, -1, -1, 1 }, ran[] = { 1, 0, 0, 1 }, exits[] = { 0, 137, 2, 0 };
  for (int i = 0; i < 4; i++) {
    assert_int_equal(plan_point(p, i)->fits, fits[i]);
    assert_int_equal(plan_point_ran(p, i), ran[i]);
    assert_int_equal(plan_point_exit(p, i), exits[i]);
  }
  assert_string_equal(plan_point(p, 1)->m.error, "PointCrashed");
  assert_string_equal(plan_point(p, 2)->m.error, "OutputError");
  assert_int_equal(plan_recommended(p), 0);
  plan_free(p);
  static const struct { int row; const char *column, *want; } cells[] = {
    { 2, "fits", "" }, { 2, "error", "PointCrashed" }, { 2, "exit_status", "137" }, { 2, "hbm_capacity_bytes", "" },
    { 2, "max_batch_per_replica", "" }, { 3, "fits", "" }, { 3, "error", "OutputError" }, { 3, "exit_status", "2" },
    { 3, "compile_s", "" }, { 1, "fits", "true" }, { 1, "exit_status", "0" }, { 4, "max_batch_per_replica", "14" },
  };
  snprintf(path, sizeof path, "%s/sweep.csv", dir);
  for (size_t i = 0; i < sizeof cells / sizeof cells[0]; i++) {
    csv_cell(path, cells[i].row, cells[i].column, cell, sizeof cell);
    if (strcmp(cell, cells[i].want)) fail_msg("row %d %s: got \"%s\", want \"%s\"", cells[i].row, cells[i].column, cell, cells[i].want);
  }
  snprintf(path, sizeof path, "rm -rf '%s'", dir);
  assert_int_equal(system(path), 0);
}

/* A bad value is reported at its place in the sweep, as that value's error. */
static void test_bad_values(void **state) {
  (void)state;
  static const struct { const char *file; int line, col; const char *key, *phrase; } bad[] = {
    { "tests/data/plan/bad_value.yaml", 23, 29, "sweep.dataset.global_batch[1]", "expected an integer >= 1, found 0" },
    { "tests/data/plan/bad_combination.yaml", 22, 42, "sweep.strategy.kind[1]", "tpu runs on a TPU slice" },
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_null(plan_load(tu_src(bad[i].file), NULL, 0, &E));
    assert_int_equal(E.line, bad[i].line);
    assert_int_equal(E.col, bad[i].col);
    assert_string_equal(E.key, bad[i].key);
    if (!strstr(E.msg, bad[i].phrase)) fail_msg("%s: %s", bad[i].file, E.msg);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_goodput),
    cmocka_unit_test(test_largest),
    cmocka_unit_test(test_largest_batch_closed_form),
    cmocka_unit_test(test_faults_of),
    cmocka_unit_test(test_ps_goodput),
    cmocka_unit_test(test_ps_plan_throughput),
    cmocka_unit_test(test_tiny_grid),
    cmocka_unit_test(test_generations),
    cmocka_unit_test(test_jobs_deterministic),
    cmocka_unit_test(test_points_that_did_not_run),
    cmocka_unit_test(test_bad_values),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
