/*
** bench_plan.c: a capacity plan at scale (issue 31): bench/data/plan_bert_1000.yaml, BERT-large
** on 20 v4, v5e and v5p slice shapes x 5 global batches x 2 dtype policies x 5 learning rates,
** 1000 points of 3 steps with numerics off, run as `podsim plan -j 2` runs them (a child process
** per point, two at once). The goal is under 2 minutes of wall time on a 2-core host. Prints the
** wall time, points per second and how many points fit.
*/
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "scenarios/programs/plan.h"

#ifndef PODSIM_SOURCE_DIR
#define PODSIM_SOURCE_DIR "."
#endif

static double wall_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(void) {
  char dir[] = "/tmp/podsim-bench-plan-XXXXXX", cmd[96];
  if (mkdtemp(dir) == NULL) return 1;
  scn_error err;
  double start = wall_s();
  plan *p = plan_load(PODSIM_SOURCE_DIR "/bench/data/plan_bert_1000.yaml", NULL, 0, &err);
  if (p == NULL || plan_run(p, dir, 2, &err) != 0) {
    fprintf(stderr, "bench_plan: %s\n", err.msg);
    return 1;
  }
  double took = wall_s() - start;
  int n = plan_num_points(p), fits = 0;
  for (int i = 0; i < n; i++) fits += plan_point(p, i)->fits == 1;
  /* The host is shared: the load average beside the figure says how far it is the plan's. */
  double load[3] = { -1, -1, -1 };
  if (getloadavg(load, 3) < 3) load[1] = load[2] = -1;
  printf("plan of %d points (BERT-large on v4/v5e/v5p slices, numerics off, 3 steps, 2 jobs): %.1f s wall, "
         "%.1f points/s, %.3f s a point, %d fit (goal: under 120 s on 2 cores); load average %.2f %.2f %.2f\n",
         n, took, n / took, took / n, fits, load[0], load[1], load[2]);
  plan_free(p);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd) == 0 ? 0 : 1;
}
