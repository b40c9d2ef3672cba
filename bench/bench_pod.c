/*
** bench_pod.c: one data-parallel training step of a full TPU v4 pod (v4-8192: 4096 chips, a
** 16x16x16 torus), numerics off, with no actor at all: every chip runs its step's compute as an
** engine-side exec at its roofline, and when the last one is done the torus all-reduce of the
** gradients starts from the engine side. Prints the step's cost and its ratio to the goal (10 ms), the
** simulated step, and the memory the slice and the group cost per device (goal < 2 KB).
**
** The machine is shared, so wall time alone flatters nobody: the step runs RUNS times, each on a
** fresh engine and slice, and the bench prints the minimum of wall time, of CPU time (the
** thread's clock, CLOCK_THREAD_CPUTIME_ID: getrusage's user/system split is sampled by ticks,
** too coarse for a step of a few ms), of the part of it spent before the all-reduce starts (the
** 4096 execs) and of retired instructions (perf_event_open; "n/a" where the VM has no PMU).
** It does so event by event (sim_engine_set_closed_form off: every transfer a latency event and
** a flow, the engine before issue 16) and with uncontended transfers in closed form (the
** default), which must simulate the same step to the picosecond; the closed form's all-reduce
** of a uniform torus is planned once per (lane, round) (collective.c, fast_plan_uniform).
**
** The step is ResNet-50-like: 25.6e6 parameters (102.4 MB of float32 gradients; the goal row)
** and 3 x 4.1 GFLOP per image for a per-chip batch of 32 (393.6 GFLOP), at 50% of the v4's 275
** TFLOP/s. The same step with ResNet-50's real 25,557,032 parameters follows (its event-by-event
** check runs once): its chunks differ by a float, so one lane's second halves differ by 4 to 1024
** bytes between ranks; the first halves, the longer, do not, so every rank's round still ends at
** one time and the shortcut plans it, but charges those links' bytes rank by rank.
*/
#include <linux/perf_event.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sim/collective.h"
#include "sim/roofline.h"
#include "sim/tpu.h"

enum { PARAMS = 25600000, UNEVEN_PARAMS = 25557032, RUNS = 5 };
#define GOAL_S 0.01 /* issue 16: one pod step in under 10 ms */
#define STEP_FLOPS (3.0 * 4.1e9 * 32)
#define EFFICIENCY 0.5

typedef struct pod {
  sim_engine *engine;     /* this run's engine */
  sim_tpu_slice *slice;   /* the pod */
  sim_collective *group;  /* every device, in grid order */
  int *device;            /* device[rank] */
  int devices;            /* 4096 */
  int computing;          /* execs still running */
  sim_time computed;      /* when the last exec ended */
  size_t params;          /* floats all-reduced */
  double compute_cpu;     /* thread CPU seconds when the last exec ended */
} pod;

/* What one run measured; the report takes each figure's minimum over the runs. */
typedef struct cost {
  double wall;            /* seconds of wall time for the step */
  double cpu;             /* seconds of the thread's CPU time for the step */
  double compute;         /* ... of which before the all-reduce started (the execs) */
  double user;            /* seconds of user CPU time for the step (getrusage) */
  double sys;             /* seconds of system CPU time (page faults of fresh memory) */
  long long instructions; /* retired during the step, -1 without a counter */
} cost;

static size_t route(void *ctx, int from, int to, sim_link **out, size_t max) {
  const pod *p = ctx;
  return sim_tpu_route(p->slice, p->device[from], p->device[to], out, max);
}

static void reduced(sim_engine *e, sim_collective *c, void *arg) {
  (void)e, (void)c, (void)arg;
}

static double clock_s(clockid_t id) {
  struct timespec t;
  clock_gettime(id, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double wall(void) { return clock_s(CLOCK_MONOTONIC); }

static void computed(sim_engine *e, sim_activity *act, void *arg) {
  (void)act;
  pod *p = arg;
  if (--p->computing > 0) return;
  p->computed = sim_now(e);
  p->compute_cpu = clock_s(CLOCK_THREAD_CPUTIME_ID);
  sim_collective_start(p->group, SIM_COLL_ALL_REDUCE, SIM_ALGO_TORUS, 0, NULL, p->params, reduced, p);
}

static double seconds(struct timeval t) { return (double)t.tv_sec + 1e-6 * (double)t.tv_usec; }

/* User and system CPU time of the process so far. */
static void cpu_times(double *user, double *sys) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  *user = seconds(u.ru_utime);
  *sys = seconds(u.ru_stime);
}

/* A counter of this thread's user-mode instructions, or -1 (no PMU, or not permitted). */
static int instruction_counter(void) {
  struct perf_event_attr a;
  memset(&a, 0, sizeof a);
  a.type = PERF_TYPE_HARDWARE;
  a.size = sizeof a;
  a.config = PERF_COUNT_HW_INSTRUCTIONS;
  a.disabled = 1;
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  return (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
}

static long long instructions(int fd) {
  long long n;
  return fd >= 0 && read(fd, &n, sizeof n) == (ssize_t)sizeof n ? n : -1;
}

static size_t heap_bytes(void) {
  struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

/* Builds the pod on a fresh engine; returns the heap bytes that took. */
static size_t build(pod *p, const sim_tpu_generation *g, const int dims[3], int closed, size_t params) {
  size_t h0 = heap_bytes();
  *p = (pod){0};
  p->params = params;
  p->engine = sim_engine_new();
  sim_engine_set_closed_form(p->engine, closed);
  p->slice = sim_tpu_slice_new(p->engine, g, dims, NULL);
  p->devices = sim_tpu_slice_devices(p->slice);
  p->device = calloc((size_t)p->devices, sizeof *p->device);
  for (int d = 0; d < p->devices; d++) p->device[sim_tpu_device_grid_rank(p->slice, d)] = d;
  p->group = sim_collective_new(p->engine, "gradients", p->devices, route, p, NULL);
  sim_tpu_set_torus(p->group, p->slice);
  return heap_bytes() - h0;
}

static void teardown(pod *p) {
  sim_collective_free(p->group);
  sim_tpu_slice_free(p->slice);
  free(p->device);
  sim_engine_free(p->engine);
}

/* Runs the step: every chip's compute, then the all-reduce. */
static cost step(pod *p, const sim_tpu_generation *g, int counter) {
  const sim_tpu_figures *f = sim_tpu_generation_figures(g);
  sim_roofline roof = { f->peak_flops * EFFICIENCY, f->hbm_bytes_per_s, {0} };  /* the scalar roofline */
  if (counter >= 0) ioctl(counter, PERF_EVENT_IOC_RESET, 0);
  if (counter >= 0) ioctl(counter, PERF_EVENT_IOC_ENABLE, 0);
  double w0 = wall(), c0 = clock_s(CLOCK_THREAD_CPUTIME_ID), u0, s0;
  cpu_times(&u0, &s0);
  /* The slice's cpus run at peak: work at peak x efficiency is work / efficiency at peak. */
  double work = sim_roofline_work(&roof, STEP_FLOPS, 2.0 * 4.0 * (double)p->params, NULL) / EFFICIENCY;
  p->computing = p->devices;
  for (int r = 0; r < p->devices; r++) {
    sim_activity_on_done(sim_exec_start(p->engine, sim_tpu_device_cpu(p->slice, p->device[r]), work),
                         computed, p);
  }
  sim_run(p->engine);
  double u1, s1;
  cpu_times(&u1, &s1);
  cost c = {wall() - w0, clock_s(CLOCK_THREAD_CPUTIME_ID) - c0, p->compute_cpu - c0, u1 - u0, s1 - s0, -1};
  if (counter >= 0) ioctl(counter, PERF_EVENT_IOC_DISABLE, 0);
  c.instructions = instructions(counter);
  return c;
}

/* `runs` steps of `params` floats with the closed form on or off; prints the first's simulated
** figures and the best costs, and returns the simulated step in ps (both ways must agree). */
static sim_time measure(const sim_tpu_generation *g, int chips, const int dims[3], int closed, int counter,
                        size_t params, int runs) {
  const char *how = closed ? "closed form" : "event by event";
  cost best = {1e30, 1e30, 1e30, 1e30, 1e30, -1};
  size_t built = 0;
  double build_s = 0, events = 0;
  sim_time simulated = 0;
  for (int run = 0; run < runs; run++) {
    pod p;
    double t0 = wall();
    size_t bytes = build(&p, g, dims, closed, params);
    double t1 = wall();
    cost c = step(&p, g, counter);
    if (run == 0) {
      built = bytes;
      build_s = t1 - t0;
      simulated = sim_now(p.engine);
      printf("pod step (%s, %zu floats): v4-8192 (%d chips, %dx%dx%d torus, wraps %d%d%d), numerics off: compute %.6f s + "
             "torus all-reduce of %.1f MB %.9f s = %.9f s simulated; %llu events\n",
             how, params, p.devices, dims[0], dims[1], dims[2], sim_tpu_slice_wraps(p.slice, 0),
             sim_tpu_slice_wraps(p.slice, 1), sim_tpu_slice_wraps(p.slice, 2), sim_time_to_s(p.computed),
             4.0 * (double)params / 1e6, sim_time_to_s(sim_collective_last_duration(p.group)),
             sim_time_to_s(sim_now(p.engine)), (unsigned long long)sim_events_processed(p.engine));
    }
    events = (double)sim_events_processed(p.engine);
    teardown(&p);
    if (c.wall < best.wall) best.wall = c.wall;
    if (c.cpu < best.cpu) best.cpu = c.cpu;
    if (c.compute < best.compute) best.compute = c.compute;
    if (c.user < best.user) best.user = c.user;
    if (c.sys < best.sys) best.sys = c.sys;
    if (c.instructions >= 0 && (best.instructions < 0 || c.instructions < best.instructions))
      best.instructions = c.instructions;
  }
  char ins[64] = "n/a (no instruction counter)";
  if (best.instructions >= 0)
    snprintf(ins, sizeof ins, "%.3f G (%.0f per event)", 1e-9 * (double)best.instructions,
             (double)best.instructions / events);
  printf("pod step cost (%s, %zu floats), best of %d: wall %.4f s, CPU %.4f s (%.0f ns per event; the execs "
         "before the all-reduce %.4f s), getrusage (tick-sampled) user CPU %.4f s, system CPU %.3f s, instructions %s; building the slice %.3f s\n",
         how, params, runs, best.wall, best.cpu, 1e9 * best.cpu / events, best.compute, best.user, best.sys, ins,
         build_s);
  printf("pod step against its goal (%s, %zu floats): CPU / 0.01 s = %.2f, wall / 0.01 s = %.2f (goal <= 1, issue 16)\n",
         how, params, best.cpu / GOAL_S, best.wall / GOAL_S);
  printf("pod memory (%s): %.0f bytes per device for the slice, its links and the collective group "
         "(goal < 2048)\n", how, (double)built / chips);
  return simulated;
}

/* Both ways for `params` floats; 1 if they disagree. */
static int compare(const sim_tpu_generation *g, int chips, const int dims[3], int counter, size_t params,
                   int event_runs) {
  sim_time before = measure(g, chips, dims, 0, counter, params, event_runs);
  sim_time after = measure(g, chips, dims, 1, counter, params, RUNS);
  if (before == after) return 0;
  fprintf(stderr, "bench_pod: the closed form changed the simulated step of %zu floats (%lld != %lld ps)\n",
          params, (long long)after, (long long)before);
  return 1;
}

int main(void) {
  const sim_tpu_generation *g;
  int chips, dims[3];
  char why[256];
  if (sim_tpu_slice_parse("v4-8192", &g, &chips, dims, why, sizeof why)) {
    fprintf(stderr, "bench_pod: %s\n", why);
    return 1;
  }
  int counter = instruction_counter();
  int bad = compare(g, chips, dims, counter, PARAMS, RUNS) | compare(g, chips, dims, counter, UNEVEN_PARAMS, 1);
  if (counter >= 0) close(counter);
  return bad;
}
