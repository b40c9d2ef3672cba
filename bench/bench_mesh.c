/*
** bench_mesh.c: the figures of issue 26, one plan point of a large model on a pod-scale device
** mesh (strategy.distribution), with numerics off:
**   1. Llama 3 405B on a v5p-8192 slice (4096 chips), fsdp_sp over 256 x 16, 2 steps: under 5 s
**      (bench/data/mesh_llama405b_v5p.yaml);
**   2. PaLM 540B on two v4-6144 pods (6144 chips), fsdp_sp over 512 x 12, 2 steps
**      (bench/data/mesh_palm540b_v4.yaml);
**   3. for comparison, data-parallel points that run without a mesh: ResNet-50 on v4-8192
**      (tests/data/podscale/resnet50_v4_8192.yaml) and BERT-large's plan base point
**      (scenarios/examples/plan_bert_large.yaml).
** Each runs in a child process through podsim_api_run (as `podsim run FILE -o DIR --quiet`), under
** a limit of LIMIT_S seconds of wall (past it the child is killed and the figure says so: a
** mesh run took hours before issue 26). Printed: exit status, wall and CPU time, peak RSS. The
** host is shared, so the load average is printed first: CPU time says more than wall there.
*/
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench_clock.h"

#include "scenarios/api.h"

#ifndef PODSIM_SOURCE_DIR
#define PODSIM_SOURCE_DIR "."
#endif

enum { LIMIT_S = 600 };

/* Runs one scenario in a child and prints what it cost beside the goal. */
static void figure(const char *what, const char *goal, const char *file, const char *out) {
  double t0 = bench_now_s();
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    alarm(LIMIT_S);  /* SIGALRM's default action ends the child */
    static podsim_api_result res;  /* 40 KB: off the stack */
    _exit(podsim_api_run(file, NULL, out, &res));
  }
  int st;
  struct rusage u;
  if (pid < 0 || wait4(pid, &st, 0, &u) != pid) {
    printf("%s: could not run\n", what);
    return;
  }
  double wall = bench_now_s() - t0, cpu = bench_tv_s(u.ru_utime) + bench_tv_s(u.ru_stime), rss = (double)u.ru_maxrss / 1024.0;
  if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM)
    printf("%s: did not finish in %d s of wall (%.1f s CPU, %.0f MB RSS) (goal: %s)\n", what, LIMIT_S, cpu, rss, goal);
  else
    printf("%s: exit %d, %.2f s wall, %.2f s CPU, %.0f MB RSS (goal: %s)\n", what,
           WIFEXITED(st) ? WEXITSTATUS(st) : -1, wall, cpu, rss, goal);
}

int main(void) {
  char dir[] = "/tmp/podsim-bench-mesh-XXXXXX", out[64], cmd[96];
  if (mkdtemp(dir) == NULL) return 1;
  snprintf(out, sizeof out, "%s/out", dir);
  double load[3] = {-1, -1, -1};
  if (getloadavg(load, 3) < 3) load[1] = load[2] = -1;
  printf("load average %.2f %.2f %.2f on %ld cores\n", load[0], load[1], load[2], sysconf(_SC_NPROCESSORS_ONLN));
  figure("Llama 3 405B, v5p-8192 (4096 chips), fsdp_sp 256 x 16, numerics off, 2 steps", "< 5 s",
         PODSIM_SOURCE_DIR "/bench/data/mesh_llama405b_v5p.yaml", out);
  figure("PaLM 540B, 2 x v4-6144 (6144 chips), fsdp_sp 512 x 12, numerics off, 2 steps", "seconds",
         PODSIM_SOURCE_DIR "/bench/data/mesh_palm540b_v4.yaml", out);
  figure("ResNet-50, v4-8192 (4096 chips), data parallel, numerics off, 3 steps", "< 1 s",
         PODSIM_SOURCE_DIR "/tests/data/podscale/resnet50_v4_8192.yaml", out);
  figure("BERT-large plan base point (plan_bert_large.yaml), data parallel", "< 1 s",
         PODSIM_SOURCE_DIR "/scenarios/examples/plan_bert_large.yaml", out);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd) == 0 ? 0 : 1;
}
