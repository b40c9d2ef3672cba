/*
** test_snapshot.c: exact fast-forward of a periodic steady state (sim/snapshot.c), on a tiny
** program: one actor loops ITERATIONS times over "exec 1000 and 500 flops at once on a 1e12
** flop/s cpu (sharing it, 0.5e12 each: the 500 end at 1 ns, the 1000's last 500 alone by 1.5
** ns, a re-share that reads each exec's last update), send 1000 bytes over a 1e12 B/s link
** (1 ns), then sleep NAP", so one iteration is a period of 2.5 ns + NAP. Its quiet point is the
** iteration's start (no transfer in flight; the two execs are, and the snapshot records them);
** the program adds its own state, what the engine cannot see: the sleep the iteration will
** take (the cpu rate it set is the cpu's capacity, an engine word). A foreign event (a fault,
** an async write) is scheduled before the run at FOREIGN_AT. The run that fast-forwards must end
** at the same picosecond, with the same event count, and see the foreign event fire at the same
** time and in the same iteration as the run that does not; each invariant of snapshot.c that a
** skip would break makes sim_snapshot_periods refuse.
*/
#include "tests/testutil.h"

#include <string.h>

#include "sim/sim.h"

enum { ITERATIONS = 1000 };
#define NAP ((sim_time)2500)           /* 2.5 ns: a period is 1.5 + 1 + 2.5 ns = 5000 ps */
#define FOREIGN_AT ((sim_time)2502500) /* mid-iteration 500 (it starts at 500 * 5000 ps) */

typedef struct loop {
  sim_engine *e;             /* the engine */
  sim_cpu *cpu;              /* what the exec runs on */
  sim_link *link;            /* what the send crosses */
  int ff;                    /* fast-forward at quiet points */
  sim_time grow;             /* each iteration sleeps this much longer than the last (0: periodic) */
  double rate_step;          /* each iteration sets the cpu's rate this much higher (0: never) */
  long it;                   /* the iteration the actor is at */
  long it_snap[2];           /* its iteration at the last two snapshots (-1: none) */
  sim_snapshot *snap[2];     /* the last two snapshots, [1] the latest */
  long skipped;              /* iterations skipped */
  long proofs;               /* snapshot pairs compared */
  sim_time foreign_fired;    /* when the foreign event fired */
  long foreign_it;           /* the iteration it fired in */
} loop;

static void quiet(sim_engine *e, void *arg) {
  loop *l = arg;
  sim_snapshot *t = l->snap[0];
  l->snap[0] = l->snap[1];
  l->snap[1] = t;
  l->it_snap[0] = l->it_snap[1];
  l->it_snap[1] = l->it;
  sim_snapshot_take(e, l->snap[1]);
  sim_snapshot_word(l->snap[1], (uint64_t)(NAP + l->grow * l->it));
  if (l->it_snap[0] < 0 || l->it_snap[0] != l->it - 1) return;
  l->proofs++;
  /* The last iteration runs: the actor's loop ends there (not a period). */
  long k = sim_snapshot_periods(l->snap[0], l->snap[1], ITERATIONS - 2 - l->it);
  if (k <= 0) return;
  sim_engine_skip(e, l->snap[0], l->snap[1], k);
  l->it += k;
  l->skipped += k;
  l->it_snap[0] = l->it_snap[1] = -1;
}

static void body(sim_actor *self, void *arg) {
  loop *l = arg;
  for (l->it = 0; l->it < ITERATIONS; l->it++) {
    if (l->ff) sim_engine_on_quiet(l->e, quiet, l);
    if (l->rate_step > 0) sim_cpu_set_rate(l->cpu, 1e12 + l->rate_step * (double)l->it);
    sim_activity *execs[2] = {sim_exec_start(l->e, l->cpu, 1000), sim_exec_start(l->e, l->cpu, 500)};
    assert_int_equal(sim_wait_all(self, execs, 2), SIM_OK);
    assert_int_equal(sim_comm(self, &l->link, 1, 1000), SIM_OK);
    assert_int_equal(sim_sleep(self, NAP + l->grow * l->it), SIM_OK);
  }
}

static void foreign(sim_engine *e, void *arg) {
  loop *l = arg;
  l->foreign_fired = sim_now(e);
  l->foreign_it = l->it;
}

typedef struct outcome {
  sim_time end;              /* the run's end */
  uint64_t events;           /* events fired (counted as if every iteration had run) */
  double bytes;              /* the link's bytes (likewise) */
  sim_time foreign_fired;    /* when the foreign event fired */
  long foreign_it;           /* in which iteration */
  long skipped;              /* iterations skipped */
  long proofs;               /* snapshot pairs compared */
} outcome;

static outcome run(int ff, sim_time grow, double rate_step) {
  loop l = {.ff = ff, .grow = grow, .rate_step = rate_step, .it_snap = {-1, -1}};
  l.e = sim_engine_new();
  l.cpu = sim_cpu_new(l.e, "cpu", 1e12);
  l.link = sim_link_new(l.e, "link", 1e12, 0);
  l.snap[0] = sim_snapshot_new();
  l.snap[1] = sim_snapshot_new();
  sim_schedule(l.e, FOREIGN_AT, foreign, &l);
  sim_actor_spawn(l.e, "loop", body, &l);
  assert_int_equal(sim_run(l.e), 0);
  outcome o = {sim_now(l.e), sim_events_processed(l.e), sim_link_bytes(l.link), l.foreign_fired, l.foreign_it,
               l.skipped, l.proofs};
  sim_snapshot_free(l.snap[0]);
  sim_snapshot_free(l.snap[1]);
  sim_engine_free(l.e);
  return o;
}

static void assert_same_run(const outcome *a, const outcome *b) {
  assert_int_equal(a->end, b->end);
  assert_int_equal(a->events, b->events);
  assert_true(a->bytes == b->bytes);  /* whole numbers of bytes: every sum is exact */
  assert_int_equal(a->foreign_fired, b->foreign_fired);
  assert_int_equal(a->foreign_it, b->foreign_it);
}

/* 1000 iterations of 5000 ps end at 5,000,000 ps. The foreign event at 2,502,500 ps fires in
** iteration 500 (2,500,000 to 2,505,000) whether or not the run skips: invariant 4 stops every
** skip short of it, so the run skips twice (before and after it), each time from the second
** iteration it has seen since its last skip. Most iterations are skipped. */
static void periodic_loop_skips_to_the_foreign_event(void **state) {
  (void)state;
  outcome full = run(0, 0, 0), ff = run(1, 0, 0);
  assert_int_equal(full.end, (sim_time)ITERATIONS * 5000);
  assert_int_equal(full.foreign_fired, FOREIGN_AT);
  assert_int_equal(full.foreign_it, 500);
  assert_true(full.bytes == 1000.0 * ITERATIONS);
  assert_int_equal(full.skipped, 0);
  assert_same_run(&full, &ff);
  assert_true(ff.skipped > ITERATIONS - 20);
}

/* Invariant 2: an iteration that sleeps 1 ps longer than the last makes no two quiet points'
** events the same offsets apart: every pair is compared, none is proven, nothing is skipped. */
static void growing_period_is_never_skipped(void **state) {
  (void)state;
  outcome full = run(0, 1, 0), ff = run(1, 1, 0);
  assert_same_run(&full, &ff);
  assert_int_equal(ff.skipped, 0);
  assert_int_equal(ff.proofs, ITERATIONS - 1);
}

/* Invariant 1: a cpu whose rate is set higher every iteration (the words differ: its capacity)
** is not a steady state, even though each exec still completes within the picosecond grid. */
static void changing_resource_is_never_skipped(void **state) {
  (void)state;
  outcome full = run(0, 0, 1e6), ff = run(1, 0, 1e6);
  assert_same_run(&full, &ff);
  assert_int_equal(ff.skipped, 0);
  assert_true(ff.proofs > 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(periodic_loop_skips_to_the_foreign_event),
    cmocka_unit_test(growing_period_is_never_skipped),
    cmocka_unit_test(changing_resource_is_never_skipped),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
