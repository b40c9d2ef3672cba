/*
** bench_ps_fastforward.c: issue 27's hour of a recommender on spot VMs (tests/data/ps/ff/
** spot_hour.yaml: 20 workers, 4 ps tasks, tables of 1M and 200k rows, hourly worker
** preemptions, async checkpoints), numerics off and fast-forwarded (scenarios/programs/
** ps_train.c, "Fast-forward"): its CPU and wall time against the goal of 60 s, the closures it
** skipped, and its goodput against the analytic value of the plan's fault model (plan.h's
** plan_ps_goodput, as `podsim plan` computes it, from the run's own closure time) against the
** goal of 2%. Then the same scenario with numerics for a short span, on a CSV of ids written
** here (synthetic data has none): the closures a second it runs, real forward and backward
** passes on 8192 examples and sparse updates of both tables included (each of the 20 workers
** holds its copy of the model with values: some 5 GB of host memory).
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "scenarios/config/yamltree.h"
#include "scenarios/programs/plan.h"
#include "scenarios/programs/train.h"

#define FILE_ "tests/data/ps/ff/spot_hour.yaml"
#define WALL_GOAL_S 60.0
#define GOODPUT_GOAL 0.02
#define NUMERICS_STEPS 30

static double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Runs FILE_ with the overrides into dir; its wall and CPU seconds. The scenario stays in *s. */
static run_summary run(scenario *s, const char *const *sets, int nsets, const char *dir, double *wall,
                       double *cpu) {
  scn_error err;
  if (scenario_load(FILE_, sets, nsets, s, &err) != 0) {
    fprintf(stderr, "bench_ps_fastforward: %s\n", err.msg);
    exit(1);
  }
  run_summary sum;
  double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
  int rc = train_run(s, dir, &sum, &err);
  *wall = clock_s(CLOCK_MONOTONIC) - t0;
  *cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
  if (rc != 0) {
    fprintf(stderr, "bench_ps_fastforward: run failed (%d): %s\n", rc, err.msg);
    exit(1);
  }
  free(sum.devices);
  return sum;
}

/* The plan's expected goodput for the run (plan.c's derive, parameter_server): a fleet step is
** one closure over the workers, a checkpoint interval every_steps of them; an async write waits
** only for what outlasts the interval, a restart pays the delay and the write twice. */
static double analytic_goodput(const scenario *s, const run_summary *sum) {
  yt_error yerr;
  yt_doc *tree = yt_parse_file(FILE_, &yerr);
  if (tree == NULL) exit(1);
  plan_faults f;
  plan_faults_of(tree, s, &f);
  yt_doc_free(tree);
  double closure = sum->means.step_s, step = closure / f.workers;
  double work = (double)f.checkpoint_steps * step;
  double write = sum->checkpoints > 0 ? sum->checkpoint_time_s / (double)sum->checkpoints : 0.0;
  double wait = f.checkpoint_async ? fmax(0.0, write - work) : write;
  double restart = f.restart_delay_s + write + (f.checkpoint_async ? write : 0.0);
  return plan_ps_goodput(&f, work, wait, restart, closure);
}

/* Rows of 13 floats, a c0 id below 1M, a c1 id below 200k and a 0/1 label, from a fixed LCG. */
static void write_ids_csv(const char *path, int rows) {
  FILE *f = fopen(path, "w");
  if (f == NULL) exit(1);
  fprintf(f, "n0,n1,n2,n3,n4,n5,n6,n7,n8,n9,n10,n11,n12,c0,c1,label\n");
  unsigned long long x = 27;
  for (int r = 0; r < rows; r++) {
    for (int c = 0; c < 13; c++) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      fprintf(f, "%.3f,", (double)(x >> 40) / (double)(1ULL << 24));
    }
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    fprintf(f, "%llu,%llu,%d\n", (x >> 33) % 1000000ULL, (x >> 13) % 200000ULL, (int)((x >> 7) & 1));
  }
  fclose(f);
}

int main(void) {  /* make bench runs in the source tree */
  char dir[] = "/tmp/podsim-bench-psff-XXXXXX", out[96], csv[96], data[160], cmd[96];
  if (mkdtemp(dir) == NULL) return 1;
  static scenario s;
  double wall, cpu;
  snprintf(out, sizeof out, "%s/hour", dir);
  run_summary hour = run(&s, NULL, 0, out, &wall, &cpu);
  double expected = analytic_goodput(&s, &hour), err = hour.goodput / expected - 1.0;
  long closures = hour.steps_completed + hour.lost_updates;
  printf("== parameter-server fast-forward (issue 27): %s\n", FILE_);
  printf("  one hour, numerics off  %8.3f s CPU, %8.3f s wall (goal < %.0f s): %.1f s simulated, %ld closures, "
         "%ld skipped, %ld preemptions\n", cpu, wall, WALL_GOAL_S, hour.sim_time_s, closures, hour.fast_forwarded,
         hour.preemptions);
  printf("  goodput                 %.4f measured, %.4f analytic (plan_ps_goodput): %+.2f%% (goal within %.0f%%) %s\n",
         hour.goodput, expected, 100.0 * err, 100.0 * GOODPUT_GOAL, fabs(err) <= GOODPUT_GOAL ? "ok" : "OUTSIDE");
  snprintf(csv, sizeof csv, "%s/clicks.csv", dir);
  write_ids_csv(csv, 16384);
  snprintf(data, sizeof data, "dataset={csv: %s, global_batch: 8192}", csv);
  char steps[48];
  snprintf(steps, sizeof steps, "training.steps=%d", NUMERICS_STEPS);
  const char *sets[] = {"numerics=full", data, steps, "faults=[]"};
  snprintf(out, sizeof out, "%s/numerics", dir);
  run_summary full = run(&s, sets, 4, out, &wall, &cpu);
  printf("  numerics on, %d closures %8.3f s CPU, %8.3f s wall: %.2f closures/s of CPU (%.1f s simulated, "
         "final loss %.4f)\n", NUMERICS_STEPS, cpu, wall, (double)full.steps_completed / cpu, full.sim_time_s,
         full.final_loss);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd) != 0;
}
