/*
** bench_podscale.c: the figures of issue 31, pod-scale runs sized by what differs. Each runs the
** built podsim as a user would (a child process, `podsim run FILE -o DIR --quiet`) and prints its
** wall time, its CPU time (user + system, the child's rusage) and its peak RSS beside the goal:
**   1. ResNet-50 on v4-8192 (4096 replicas), numerics off, 3 steps: < 1 s, < 200 MB, and
**      variables.csv < 1 MB (tests/data/podscale/resnet50_v4_8192.yaml);
**   2. quickstart's MLP on v4-8192 (4096 replicas), numerics on, 100 steps: < 8 GB
**      (tests/data/podscale/mlp_v4_8192.yaml; minutes: the value-carrying all-reduce);
**   3. 100,000 CPU workers (the key's maximum), halving-doubling, numerics off, 3 steps: set up and
**      run in seconds; and in a ring, refused at load with the estimate.
** The host is shared, so the load average is printed first: wall time on a loaded host says
** little, CPU time more. PODSIM_BASELINE=path/to/another/podsim runs each on it too and prints
** the ratios (today's main build, for the note).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench_clock.h"

#ifndef PODSIM_SOURCE_DIR
#define PODSIM_SOURCE_DIR "."
#endif

/* What one run cost. */
typedef struct cost {
  int status;             /* the exit status, -1 if it did not exit */
  double wall;            /* seconds of wall time */
  double cpu;             /* seconds of user + system CPU time */
  double rss_mb;          /* peak resident set, MB */
  double vars_kb;         /* variables.csv's size, KB (-1: none) */
} cost;

/* Runs `podsim run file -o dir --quiet`, with `--set set` unless set is NULL. */
static cost run(const char *podsim, const char *file, const char *set, const char *dir) {
  cost c = { .status = -1, .vars_kb = -1 };
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) return c;
  const char *argv[9] = { podsim, "run", file, "-o", dir, "--quiet", set ? "--set" : NULL, set };
  double t0 = bench_now_s();
  pid_t pid = fork();
  if (pid == 0) {
    if (freopen("/dev/null", "w", stdout) == NULL || freopen("/dev/null", "w", stderr) == NULL) _exit(127);
    execv(podsim, (char *const *)argv);
    _exit(127);
  }
  int st;
  struct rusage u;
  if (pid < 0 || wait4(pid, &st, 0, &u) != pid) return c;
  c.wall = bench_now_s() - t0;
  c.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  c.cpu = bench_tv_s(u.ru_utime) + bench_tv_s(u.ru_stime);
  c.rss_mb = (double)u.ru_maxrss / 1024.0;  /* Linux: kilobytes */
  char path[600];
  struct stat s;
  snprintf(path, sizeof path, "%s/variables.csv", dir);
  if (stat(path, &s) == 0) c.vars_kb = (double)s.st_size / 1024.0;
  return c;
}

static void report(const char *what, const char *goal, const cost *c, const cost *base) {
  printf("%s: exit %d, %.2f s wall, %.2f s CPU, %.0f MB RSS", what, c->status, c->wall, c->cpu, c->rss_mb);
  if (c->vars_kb >= 0) printf(", variables.csv %.1f KB", c->vars_kb);
  printf(" (goal: %s)\n", goal);
  if (base == NULL) return;
  printf("  baseline: exit %d, %.2f s wall, %.2f s CPU, %.0f MB RSS", base->status, base->wall, base->cpu,
         base->rss_mb);
  if (base->vars_kb >= 0) printf(", variables.csv %.1f KB", base->vars_kb);
  printf("; ratio to it: wall %.2f, CPU %.2f, RSS %.2f\n", c->wall / base->wall, c->cpu / base->cpu,
         c->rss_mb / base->rss_mb);
}

/* One figure: on this build and, with a baseline, on it too. */
static void figure(const char *podsim, const char *baseline, const char *what, const char *goal, const char *file,
                   const char *set, const char *dir) {
  cost c = run(podsim, file, set, dir), b;
  if (baseline) b = run(baseline, file, set, dir);
  report(what, goal, &c, baseline ? &b : NULL);
  fflush(stdout);
}

int main(void) {
  const char *podsim = PODSIM_SOURCE_DIR "/podsim", *baseline = getenv("PODSIM_BASELINE");
  char dir[] = "/tmp/podsim-bench-podscale-XXXXXX", out[64], cmd[96];
  if (mkdtemp(dir) == NULL) return 1;
  snprintf(out, sizeof out, "%s/out", dir);
  double load[3] = { 0 };
  if (getloadavg(load, 3) < 0) load[0] = -1;
  printf("load average %.2f %.2f %.2f on %ld cores\n", load[0], load[1], load[2], sysconf(_SC_NPROCESSORS_ONLN));
  figure(podsim, baseline, "ResNet-50, v4-8192, numerics off, 3 steps", "< 1 s, < 200 MB, variables.csv < 1 MB",
         PODSIM_SOURCE_DIR "/tests/data/podscale/resnet50_v4_8192.yaml", NULL, out);
  figure(podsim, NULL, "100,000 CPU workers, halving_doubling, numerics off, 3 steps", "seconds",
         PODSIM_SOURCE_DIR "/tests/data/podscale/workers_100k.yaml", NULL, out);
  figure(podsim, NULL, "100,000 CPU workers in a ring (refused at load, exit 2)", "exit 2 at once",
         PODSIM_SOURCE_DIR "/tests/data/podscale/workers_100k.yaml", "strategy.all_reduce=ring", out);
  figure(podsim, NULL, "quickstart's MLP, v4-8192, numerics on, 100 steps", "< 8192 MB",
         PODSIM_SOURCE_DIR "/tests/data/podscale/mlp_v4_8192.yaml", NULL, out);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd) == 0 ? 0 : 1;
}
