/*
** bench_engine.c: engine throughput figures.
**   1. hold model: 1e5 pending events, each firing schedules one more at now + Exp(mean 1 us)
**      (fixed-seed GSL draws via sim/rng.h, drawn up front so the clock measures the queue);
**   2. actor context switches: two actors ping-ponging through sleep(0);
**   3. ring all-reduce of 100 MB over 1024 ranks on a ring fabric (B = 100e9 B/s, L = 1 us),
**      the SimGrid peer's ring_allreduce_CM02 N=1024 (SimGrid 3.32: 4.044041760e-03 s simulated,
**      7.19 s wall, ../shared/peers/simgrid/results-2026-11-21.csv), numerics off.
*/
#include <gsl/gsl_randist.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "sim/collective.h"
#include "sim/fabric.h"
#include "sim/rng.h"
#include "sim/sim.h"

static double wall(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- 1. hold model ------------------------------------------------------------------- */

enum { HOLD_PENDING = 100000, HOLD_DRAWS = 1 << 20 };
#define HOLD_EVENTS 20000000ULL

typedef struct {
  sim_time *incr;            /* pre-drawn increments, used round-robin */
  size_t next;               /* next draw */
  uint64_t left;             /* events still to schedule */
} hold_t;

static hold_t hold;

static void hold_fire(sim_engine *e, void *arg) {
  if (hold.left == 0) return;
  hold.left--;
  sim_time d = hold.incr[hold.next++ & (HOLD_DRAWS - 1)];
  sim_schedule(e, sim_now(e) + d, hold_fire, arg);
}

static void bench_hold(void) {
  gsl_rng *r = sim_rng_stream(42, "bench.hold");
  hold.incr = malloc(HOLD_DRAWS * sizeof *hold.incr);
  for (size_t i = 0; i < HOLD_DRAWS; i++)
    hold.incr[i] = sim_time_from_s(gsl_ran_exponential(r, 1e-6));
  gsl_rng_free(r);
  sim_engine *e = sim_engine_new();
  for (size_t i = 0; i < HOLD_PENDING; i++)
    sim_schedule(e, hold.incr[hold.next++ & (HOLD_DRAWS - 1)], hold_fire, NULL);
  hold.left = HOLD_EVENTS - HOLD_PENDING;
  double t0 = wall();
  sim_run(e);
  double dt = wall() - t0;
  printf("hold model: %llu events, %d pending: %.3f s wall, %.1f M events/s\n",
         (unsigned long long)sim_events_processed(e), HOLD_PENDING, dt,
         (double)sim_events_processed(e) / dt / 1e6);
  sim_engine_free(e);
  free(hold.incr);
}

/* ---- 2. context switches ------------------------------------------------------------- */

static void pinger(sim_actor *self, void *arg) {
  long n = *(long *)arg;
  for (long i = 0; i < n; i++) sim_sleep(self, 0);
}

static void bench_switches(void) {
  long n = 2000000;
  sim_engine *e = sim_engine_new();
  sim_actor_spawn(e, "ping", pinger, &n);
  sim_actor_spawn(e, "pong", pinger, &n);
  double t0 = wall();
  sim_run(e);
  double dt = wall() - t0;
  printf("context switches: %llu in %.3f s wall, %.1f M switches/s\n",
         (unsigned long long)sim_context_switches(e), dt,
         (double)sim_context_switches(e) / dt / 1e6);
  sim_engine_free(e);
}

/* ---- 3. ring all-reduce, the SimGrid peer scenario ----------------------------------- */

typedef struct { sim_collective *c; int rank; size_t count; } ring_arg;

static void ring_rank(sim_actor *self, void *arg) {
  ring_arg *a = arg;
  sim_allreduce(self, a->c, a->rank, NULL, a->count, SIM_ALGO_RING);
}

static void bench_ring(void) {
  const int n = 1024;
  const double S = 100e6, B = 100e9, L = 1e-6;
  sim_engine *e = sim_engine_new();
  sim_fabric *f = sim_fabric_new(e, SIM_FABRIC_RING, n, "h", B, NULL, sim_time_from_s(L));
  sim_collective *c = sim_collective_new(e, "ring", n, sim_fabric_route, f, NULL);
  ring_arg *args = malloc((size_t)n * sizeof *args);
  for (int r = 0; r < n; r++) {
    args[r] = (ring_arg){c, r, (size_t)(S / sizeof(float))};
    sim_actor_spawn(e, "rank", ring_rank, &args[r]);
  }
  double t0 = wall();
  sim_run(e);
  double dt = wall() - t0;
  double sim_s = sim_time_to_s(sim_collective_last_duration(c));
  double formula = 2.0 * (n - 1) * (L + S / (n * B));
  printf("ring all-reduce N=%d S=%.0f B: sim %.9e s, formula %.9e s (rel %+.2e), "
         "%llu events, wall %.3f s (SimGrid CM02: 4.044041760e-03 s, 7.19 s wall)\n",
         n, S, sim_s, formula, (sim_s - formula) / formula,
         (unsigned long long)sim_events_processed(e), dt);
  free(args);
  sim_collective_free(c);
  sim_fabric_free(f);
  sim_engine_free(e);
}

int main(void) {
  bench_hold();
  bench_switches();
  bench_ring();
  return 0;
}
