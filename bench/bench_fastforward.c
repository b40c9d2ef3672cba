/*
** bench_fastforward.c: what exact fast-forward (issue 16; scenarios/programs/train.c,
** "Fast-forward") saves on long faulted runs, each made 100000 steps long and run step by step
** (training.fast_forward=false) and fast-forwarded, in one process: tests/data/fastforward/
** pod_faults.yaml (TPUStrategy on a v4-32 slice, numerics off, random preemptions of every host,
** a straggler, an ICI degradation, async checkpoints, a fail at_step) and workers_faults.yaml
** (four CPU workers, multi_worker_mirrored, random preemptions, a straggler, a degraded fabric,
** synchronous checkpoints). Prints each run's CPU and wall time, the steps skipped, the ratio,
** and whether the two runs' run_hash and figures agree (they must: tests/scenarios/
** test_fastforward.c checks their files byte for byte). Then issue 16's pod figure: tests/data/
** fastforward/pod8192_faults.yaml, a v4-8192 pod (4096 chips) for 100000 steps with async
** checkpoints and a failure, fast-forwarded only (step by step it is about 110,000 simulated steps
** of a 4096-chip all-reduce: hours), against the goal of 10 s.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "scenarios/programs/train.h"


static double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One run into a fresh directory; its wall and CPU time in seconds (the machine is shared: CPU
** time is the figure to compare). */
static run_summary run(const char *file, int ff, double *seconds, double *cpu) {
  static scenario s;
  scn_error err;
  const char *sets[] = {"training.steps=100000",
                        ff ? "training.fast_forward=true" : "training.fast_forward=false"};
  if (scenario_load(file, sets, 2, &s, &err) != 0) {
    fprintf(stderr, "bench_fastforward: %s\n", err.msg);
    exit(1);
  }
  char dir[] = "/tmp/podsim-bench-ff-XXXXXX", cmd[64];
  if (mkdtemp(dir) == NULL) exit(1);
  run_summary sum;
  double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
  int rc = train_run(&s, dir, &sum, &err);
  *seconds = clock_s(CLOCK_MONOTONIC) - t0;
  *cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (rc != 0 || system(cmd) != 0) {
    fprintf(stderr, "bench_fastforward: run failed (%d)\n", rc);
    exit(1);
  }
  free(sum.devices);
  return sum;
}

/* Both ways; returns 0 when they agree. */
static int compare(const char *name, const char *file) {
  double full_s, ff_s, full_cpu, ff_cpu;
  run_summary full = run(file, 0, &full_s, &full_cpu), ff = run(file, 1, &ff_s, &ff_cpu);
  int same = full.run_hash == ff.run_hash && full.events == ff.events && full.sim_time_s == ff.sim_time_s &&
             full.preemptions == ff.preemptions && full.checkpoints == ff.checkpoints;
  printf("%s, 100000 steps, %ld preemptions, %ld failures, %d restarts, %ld checkpoints, %.4g s simulated\n",
         name, ff.preemptions, ff.failures, ff.restarts, ff.checkpoints, ff.sim_time_s);
  printf("  step by step     %8.3f s CPU, %8.3f s wall, %" PRIu64 " events\n", full_cpu, full_s, full.events);
  printf("  fast-forwarded   %8.3f s CPU, %8.3f s wall, %ld steps skipped of %ld run (redone included)\n",
         ff_cpu, ff_s, ff.fast_forwarded, ff.steps_completed + ff.lost_steps);
  printf("  ratio            %8.1fx CPU, run_hash %016" PRIx64 " %s\n", full_cpu / ff_cpu, ff.run_hash,
         same ? "same" : "DIFFERENT");
  return same ? 0 : 1;
}

#define POD_GOAL_S 10.0 /* issue 16: a 100k-step pod run with faults in under 10 s */

/* The pod, fast-forwarded: its CPU time against the goal, and the simulated steps it still ran. */
static void pod(const char *file) {
  double s, cpu;
  run_summary ff = run(file, 1, &s, &cpu);
  long run_steps = ff.steps_completed + ff.lost_steps, simulated = run_steps - ff.fast_forwarded;
  printf("v4-8192 pod (4096 chips), 100000 steps, %ld failures, %d restarts, %ld checkpoints, %.4g s simulated\n",
         ff.failures, ff.restarts, ff.checkpoints, ff.sim_time_s);
  printf("  fast-forwarded   %8.3f s CPU, %8.3f s wall, %ld steps skipped of %ld run, %ld simulated "
         "(%.3f s CPU each)\n", cpu, s, ff.fast_forwarded, run_steps, simulated, cpu / (double)simulated);
  printf("  against its goal %8.2f (CPU / %.0f s; goal <= 1, issue 16), run_hash %016" PRIx64 "\n",
         cpu / POD_GOAL_S, POD_GOAL_S, ff.run_hash);
}

int main(void) {  /* make bench runs in the source tree */
  int bad = compare("v4-32 TPU slice", "tests/data/fastforward/pod_faults.yaml");
  bad |= compare("4 CPU workers", "tests/data/fastforward/workers_faults.yaml");
  pod("tests/data/fastforward/pod8192_faults.yaml");
  return bad;
}
