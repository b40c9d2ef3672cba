/*
** test_lifecycle.c: the job lifecycle's transition table (scenarios/programs/lifecycle.h) on a
** bare engine: a program that counts its stops and starts, losses injected as events. Times in
** us; the restart delay is 10 us.
*/
#include "tests/testutil.h"

#include "scenarios/programs/lifecycle.h"

#define US INT64_C(1000000)

typedef struct prog {
  sim_engine *e;          /* the clock */
  lc_job *job;            /* the lifecycle under test */
  int stops, starts;      /* callbacks seen */
  sim_time started_at;    /* the last start's time */
  sim_time back;          /* what the next injected loss says: the task is back then */
} prog;

static void stop(void *ctx) { ((prog *)ctx)->stops++; }
static void start(void *ctx) {
  prog *p = ctx;
  p->starts++;
  p->started_at = sim_now(p->e);
}

static void lose(sim_engine *e, void *arg) {
  (void)e;
  prog *p = arg;
  lc_task_lost(p->job, p->back);
}

static void run(sim_engine *e, void *arg) {
  (void)e;
  lc_up(((prog *)arg)->job);
}

static scenario with_delay(void) {
  scenario s;
  memset(&s, 0, sizeof s);
  s.restart_delay_s = 10e-6;
  return s;
}

/* UP, lost at 5 us (back at 8): DOWN, stopped once, restart at max(5 + 10, 8) = 15 us. A second
** loss at 7 us back at 30 moves it to 30 (7 + 10 = 17 is earlier); one at 9 back at 12 does not
** move it. At 30 the restart starts the attempt (RESTORING: the program restores); it runs at
** 34: UP, downtime 34 - 5 = 29 us, one restart, one stop. */
static void losses_restart_once_at_the_latest_return(void **state) {
  (void)state;
  scenario s = with_delay();
  prog p = { .e = sim_engine_new() };
  lc_program table = { stop, start, 1 };
  p.job = lc_new(&s, p.e, 1, &table, &p);
  sim_time at[3] = { 5 * US, 7 * US, 9 * US }, back[3] = { 8 * US, 30 * US, 12 * US };
  for (int i = 0; i < 3; i++) {
    p.back = back[i];
    sim_schedule(p.e, at[i], lose, &p);
    sim_run_until(p.e, at[i]);
    assert_int_equal(lc_state_of(p.job), LC_DOWN);
  }
  sim_schedule(p.e, 34 * US, run, &p);
  sim_run_until(p.e, 33 * US);
  assert_int_equal(lc_state_of(p.job), LC_RESTORING);
  assert_true(p.started_at == 30 * US);
  sim_run(p.e);
  assert_int_equal(lc_state_of(p.job), LC_UP);
  assert_int_equal(p.stops, 1);
  assert_int_equal(p.starts, 1);
  assert_int_equal(lc_restarts(p.job), 1);
  assert_true(lc_downtime(p.job, 50 * US) == 29 * US);
  size_t n;
  const report_fault *ev = flog_events(lc_log(p.job), 50 * US, &n);
  assert_int_equal(n, 2);
  assert_string_equal(ev[0].kind, "job down");
  assert_true(ev[0].start_ps == 5 * US && ev[0].end_ps == 30 * US);
  assert_string_equal(ev[1].kind, "restoring");
  assert_true(ev[1].start_ps == 30 * US && ev[1].end_ps == 34 * US);
  lc_free(p.job);
  sim_engine_free(p.e);
}

/* Without restart the first loss fails the job for good: stopped once, never started, the error
** as lc_fail gives it; a later loss changes nothing. A program that does not restore runs at
** its restart: UP at once, the downtime closing there, no "restoring" span. */
static void failure_and_immediate_restart(void **state) {
  (void)state;
  scenario s = with_delay();
  prog p = { .e = sim_engine_new() };
  lc_program table = { stop, start, 1 };
  p.job = lc_new(&s, p.e, 0, &table, &p);
  p.back = 8 * US;
  sim_schedule(p.e, 5 * US, lose, &p);
  sim_schedule(p.e, 6 * US, lose, &p);
  sim_run(p.e);
  assert_int_equal(lc_state_of(p.job), LC_FAILED);
  lc_fail(p.job, "UnavailableError", "/job:worker/replica:0/task:1", "lost at %d us", 5);
  run_error e;
  assert_int_equal(lc_failed(p.job, &e), 1);
  assert_string_equal(e.message, "lost at 5 us");
  assert_int_equal(p.stops, 1);
  assert_int_equal(p.starts, 0);
  lc_free(p.job);
  sim_engine_free(p.e);

  prog q = { .e = sim_engine_new() };
  lc_program at_once = { stop, start, 0 };
  q.job = lc_new(&s, q.e, 1, &at_once, &q);
  q.back = 8 * US;
  sim_schedule(q.e, 5 * US, lose, &q);
  sim_run(q.e);
  assert_int_equal(lc_state_of(q.job), LC_UP);
  assert_true(q.started_at == 15 * US && lc_downtime(q.job, 40 * US) == 10 * US);
  size_t n;
  const report_fault *ev = flog_events(lc_log(q.job), 40 * US, &n);
  assert_int_equal(n, 1);
  assert_string_equal(ev[0].kind, "job down");
  lc_free(q.job);
  sim_engine_free(q.e);
}

/* Invariant 4, the fault storm of issue 29: a loss every us while DOWN postpones the restart
** (delay 10 us) for ever. The (LC_MAX_IDLE_LOSSES - 1)-th loss leaves the job DOWN; the next
** fails it, stalled, with the span in its message: no step since 0 s, the last loss at
** LC_MAX_IDLE_LOSSES us = 0.01 s. A completed step (lc_progress) in between starts the count
** again: the same losses after one at the halfway mark leave the job DOWN. */
static void losses_without_a_step_stop_the_job(void **state) {
  (void)state;
  scenario s = with_delay();
  for (int progress = 0; progress <= 1; progress++) {
    prog p = { .e = sim_engine_new() };
    lc_program table = { stop, start, 1 };
    p.job = lc_new(&s, p.e, 1, &table, &p);
    for (int i = 1; i <= LC_MAX_IDLE_LOSSES; i++) {
      sim_run_until(p.e, i * US);
      if (progress && i == LC_MAX_IDLE_LOSSES / 2) lc_progress(p.job);
      p.back = i * US;
      lc_task_lost(p.job, p.back);
      if (i == LC_MAX_IDLE_LOSSES - 1) assert_int_equal(lc_state_of(p.job), LC_DOWN);
    }
    run_error e;
    assert_int_equal(lc_failed(p.job, &e), !progress);
    assert_int_equal(lc_stalled(p.job), !progress);
    if (!progress)
      assert_non_null(strstr(e.message, "no progress: 10000 task losses and no step completed from 0 s to 0.01 s (0 restarts"));
    assert_int_equal(p.starts, 0);
    lc_free(p.job);
    sim_engine_free(p.e);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(losses_restart_once_at_the_latest_return),
    cmocka_unit_test(failure_and_immediate_restart),
    cmocka_unit_test(losses_without_a_step_stop_the_job),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
