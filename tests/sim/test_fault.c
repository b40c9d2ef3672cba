/*
** test_fault.c: fault plans (sim/fault.h). Draws follow their distribution's mean and replay
** bit for bit; link and cpu faults change transfer and compute times by the worked amounts and
** give the nominal rate back; task faults reach the program's callbacks at their times, once.
*/
#include "tests/testutil.h"

#include <math.h>

#include "sim/fault.h"
#include "sim/rng.h"
#include "sim/sim.h"

/* ---- a program that records what reaches it ------------------------------------------------- */

typedef struct seen {
  sim_engine *e;          /* for the clock */
  sim_cpu *cpu;           /* target 0's compute */
  sim_link *link;         /* target 0's link */
  int downs, notices;     /* callbacks so far */
  sim_time down_at[64];   /* clock at each down */
  sim_time notice_at[8];  /* clock at each notice */
} seen;

static const char *name_of(void *ctx, int target) {
  (void)ctx;
  return target == 0 ? "worker:0" : "worker:1";
}
static size_t cpus_of(void *ctx, int target, sim_cpu **out, size_t max) {
  seen *s = ctx;
  if (target != 0 || max < 1) return 0;
  out[0] = s->cpu;
  return 1;
}
static size_t links_of(void *ctx, int target, sim_link **out, size_t max) {
  seen *s = ctx;
  if (target != 0 || max < 1) return 0;
  out[0] = s->link;
  return 1;
}
static void on_notice(void *ctx, const sim_fault *f) {
  seen *s = ctx;
  (void)f;
  if (s->notices < 8) s->notice_at[s->notices] = sim_now(s->e);
  s->notices++;
}
static void on_down(void *ctx, const sim_fault *f) {
  seen *s = ctx;
  (void)f;
  if (s->downs < 64) s->down_at[s->downs] = sim_now(s->e);
  s->downs++;
}
static const sim_fault_ops OPS = {name_of, cpus_of, links_of, on_notice, on_down};

static sim_fault fault(sim_fault_kind kind, double at_s, double duration_s, double factor) {
  return (sim_fault){.kind = kind, .target = 0, .at = sim_time_from_s(at_s), .at_step = -1,
                     .duration = duration_s < 0 ? SIM_TIME_NEVER : sim_time_from_s(duration_s),
                     .factor = factor};
}

/* A link of 1 GB/s and a cpu of 1 GFLOP/s, no latency; the plan holds the given faults. */
static sim_fault_plan *setup(seen *s, const sim_fault *faults, int n) {
  memset(s, 0, sizeof *s);
  s->e = sim_engine_new();
  s->cpu = sim_cpu_new(s->e, "cpu", 1e9);
  s->link = sim_link_new(s->e, "link", 1e9, 0);
  sim_fault_plan *p = sim_fault_plan_new(s->e, &OPS, s);
  for (int i = 0; i < n; i++) sim_fault_plan_add(p, &faults[i]);
  if (n > 0) sim_fault_plan_start(p);
  return p;
}

static void teardown(seen *s, sim_fault_plan *p) {
  sim_fault_plan_free(p);
  sim_engine_free(s->e);
}

static sim_time end_of_comm;
static void comm_done(sim_engine *e, sim_activity *a, void *arg) {
  (void)a; (void)arg;
  end_of_comm = sim_now(e);
}

/* Sends `bytes` over the link from time 0 and returns when the transfer ended. */
static sim_time transfer(seen *s, double bytes) {
  sim_activity *a = sim_comm_start(s->e, &s->link, 1, bytes);
  sim_activity_on_done(a, comm_done, NULL);
  sim_run(s->e);
  return end_of_comm;
}

/* ---- draws ---------------------------------------------------------------------------------- */

/* 200,000 draws of mean 2 h: the standard error of the sample mean is 7200 / sqrt(2e5) = 16 s
** for the exponential (0.22%); for Weibull shape 0.8 the coefficient of variation is
** sqrt(Gamma(3.5) / Gamma(2.25)^2 - 1) = sqrt(3.3234 / 1.2840 - 1) = 1.260, so 0.28%. Both
** must land within 1.5% (over 5 standard errors). */
static void draws_follow_the_mean(void **state) {
  (void)state;
  const sim_fault_dist dists[] = {{7200.0, 0.0}, {7200.0, 0.8}, {7200.0, 3.0}};
  for (size_t d = 0; d < sizeof dists / sizeof *dists; d++) {
    gsl_rng *r = sim_rng_stream(1, "test.fault.mean");
    double sum = 0;
    const int n = 200000;
    for (int i = 0; i < n; i++) {
      double x = sim_fault_draw(&dists[d], r);
      assert_true(x >= 0);
      sum += x;
    }
    gsl_rng_free(r);
    double mean = sum / n;
    if (fabs(mean - 7200.0) > 0.015 * 7200.0) fail_msg("dist %zu: mean %.1f s, expected 7200 s", d, mean);
  }
}

/* A random preemption process on one target, mtbf 1 h, down for 10 min: the strikes come from
** the named stream, so two plans of one (seed, stream) strike at the same picoseconds, another
** seed elsewhere; each strike comes at least the down time after the previous one. */
static int random_strikes(uint64_t seed, sim_time *at, int max) {
  seen s;
  sim_fault_plan *p = setup(&s, NULL, 0);
  sim_fault f = fault(SIM_FAULT_PREEMPT, 0, 600, 1);
  sim_fault_dist d = {3600.0, 0.0};
  sim_fault_plan_add_random(p, &f, &d, seed, "faults[0].worker:0");
  sim_fault_plan_start(p);
  sim_run_until(s.e, sim_time_from_s(20 * 3600.0));
  int n = s.downs < max ? s.downs : max;
  memcpy(at, s.down_at, (size_t)n * sizeof *at);
  assert_int_equal(sim_fault_plan_count(p, SIM_FAULT_PREEMPT), s.downs);
  teardown(&s, p);
  return n;
}

static void random_schedule_replays(void **state) {
  (void)state;
  sim_time a[64], b[64], c[64];
  int na = random_strikes(7, a, 64), nb = random_strikes(7, b, 64), nc = random_strikes(8, c, 64);
  /* 20 h at one failure per 70 min on average: about 17; at least a few. */
  assert_true(na >= 5);
  assert_int_equal(na, nb);
  assert_memory_equal(a, b, (size_t)na * sizeof *a);
  assert_true(na != nc || memcmp(a, c, (size_t)na * sizeof *a) != 0);
  for (int i = 1; i < na; i++) assert_true(a[i] - a[i - 1] >= sim_time_from_s(600));
}

/* ---- resource faults ------------------------------------------------------------------------ */

/* 1e9 B at 1 GB/s, the link at half bandwidth from 0.25 s for 0.5 s: 0.25e9 B by 0.25 s,
** 0.25e9 B in the next 0.5 s, the last 0.5e9 B at full rate in 0.5 s: done at 1.25 s. */
static void link_degrade_slows_by_its_factor(void **state) {
  (void)state;
  seen s;
  sim_fault f = fault(SIM_FAULT_LINK_DEGRADE, 0.25, 0.5, 0.5);
  sim_fault_plan *p = setup(&s, &f, 1);
  assert_int_equal(transfer(&s, 1e9), sim_time_from_s(1.25));
  assert_true(sim_link_bandwidth(s.link) == 1e9);
  teardown(&s, p);
}

/* Down at 0.5 s for 2 s: the flow stalls (0.5e9 B done), resumes at 2.5 s, ends at 3 s. */
static void link_down_stalls_until_back(void **state) {
  (void)state;
  seen s;
  sim_fault f = fault(SIM_FAULT_LINK_DOWN, 0.5, 2.0, 0);
  sim_fault_plan *p = setup(&s, &f, 1);
  assert_int_equal(transfer(&s, 1e9), sim_time_from_s(3.0));
  teardown(&s, p);
}

/* Two overlapping degrades, 0.3 from 0 for 1 s and 0.7 from 0.5 s for 1 s: the rate goes
** 0.3 -> 0.21 -> 0.7 -> 1 of nominal, and is exactly the nominal 1e9 again at the end (the
** product 1e9 * 0.3 / 0.3 would not be). Bytes: 0.15e9 + 0.105e9 + 0.35e9 = 0.605e9 by 1.5 s,
** the other 0.395e9 at 1 GB/s: 1.895 s. */
static void overlapping_faults_restore_nominal(void **state) {
  (void)state;
  seen s;
  sim_fault f[2] = {fault(SIM_FAULT_LINK_DEGRADE, 0, 1.0, 0.3), fault(SIM_FAULT_LINK_DEGRADE, 0.5, 1.0, 0.7)};
  sim_fault_plan *p = setup(&s, f, 2);
  sim_time end = transfer(&s, 1e9);
  assert_true(llabs(end - sim_time_from_s(1.895)) <= 2);
  assert_true(sim_link_bandwidth(s.link) == 1e9);
  teardown(&s, p);
}

static sim_time end_of_exec;
static void exec_done(sim_engine *e, sim_activity *a, void *arg) {
  (void)a; (void)arg;
  end_of_exec = sim_now(e);
}

/* 1e9 FLOPs at 1 GFLOP/s, 3x slower for the first 1.5 s: 0.5e9 done by then, the rest in
** 0.5 s: 2 s instead of 1. A second exec started after the fault takes exactly 1 s. */
static void straggler_divides_the_rate(void **state) {
  (void)state;
  seen s;
  sim_fault f = fault(SIM_FAULT_STRAGGLER, 0, 1.5, 3.0);
  sim_fault_plan *p = setup(&s, &f, 1);
  sim_activity *a = sim_exec_start(s.e, s.cpu, 1e9);
  sim_activity_on_done(a, exec_done, NULL);
  sim_run(s.e);
  assert_int_equal(end_of_exec, sim_time_from_s(2.0));
  a = sim_exec_start(s.e, s.cpu, 1e9);
  sim_activity_on_done(a, exec_done, NULL);
  sim_run(s.e);
  assert_int_equal(end_of_exec, sim_time_from_s(3.0));
  teardown(&s, p);
}

/* ---- task faults ---------------------------------------------------------------------------- */

/* A preemption at 10 s with a 30 s notice: notice at 10 s, down at 40 s; a fail at 5 s: down at
** 5 s. at_step 3 strikes when step 3 is reported, once, however often it is reported. */
static void task_faults_reach_the_program(void **state) {
  (void)state;
  seen s;
  sim_fault f[3] = {fault(SIM_FAULT_PREEMPT, 10, 0, 1), fault(SIM_FAULT_FAIL, 5, 0, 1),
                    fault(SIM_FAULT_FAIL, 0, 0, 1)};
  f[0].notice = sim_time_from_s(30);
  f[2].at = SIM_TIME_NEVER;
  f[2].at_step = 3;
  sim_fault_plan *p = setup(&s, f, 3);
  sim_run(s.e);
  assert_int_equal(s.notices, 1);
  assert_int_equal(s.notice_at[0], sim_time_from_s(10));
  assert_int_equal(s.downs, 2);
  assert_int_equal(s.down_at[0], sim_time_from_s(5));
  assert_int_equal(s.down_at[1], sim_time_from_s(40));
  sim_fault_plan_step(p, 2);
  sim_fault_plan_step(p, 3);
  sim_fault_plan_step(p, 3);
  sim_run(s.e);
  assert_int_equal(s.downs, 3);
  assert_int_equal(sim_fault_plan_count(p, SIM_FAULT_FAIL), 2);
  assert_int_equal(sim_fault_plan_count(p, SIM_FAULT_PREEMPT), 1);
  teardown(&s, p);
}

/* Stop cancels what is still to come and lifts a fault in progress: a transfer started at 0.5 s
** runs at the full rate again (done at 1.5 s) and the 100 s preemption never comes. */
static void stop_cancels_and_restores(void **state) {
  (void)state;
  seen s;
  sim_fault f[2] = {fault(SIM_FAULT_LINK_DOWN, 0, -1, 0), fault(SIM_FAULT_PREEMPT, 100, 0, 1)};
  sim_fault_plan *p = setup(&s, f, 2);
  sim_run_until(s.e, sim_time_from_s(0.5));
  sim_fault_plan_stop(p);
  assert_true(sim_link_bandwidth(s.link) == 1e9);
  assert_int_equal(transfer(&s, 1e9), sim_time_from_s(1.5));
  assert_int_equal(s.downs, 0);
  teardown(&s, p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(draws_follow_the_mean),
    cmocka_unit_test(random_schedule_replays),
    cmocka_unit_test(link_degrade_slows_by_its_factor),
    cmocka_unit_test(link_down_stalls_until_back),
    cmocka_unit_test(overlapping_faults_restore_nominal),
    cmocka_unit_test(straggler_divides_the_rate),
    cmocka_unit_test(task_faults_reach_the_program),
    cmocka_unit_test(stop_cancels_and_restores),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
