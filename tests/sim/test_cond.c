/* test_cond.c: condition variables (wake order, no double wake, a killed waiter leaving), the
** main program's sim_run_while, and sim_current_actor. */
#include "tests/testutil.h"

#include "sim/cond.h"
#include "sim/sim.h"

#define MS(x) ((sim_time)(x) * 1000000000)  /* milliseconds -> picoseconds */

typedef struct {
  sim_cond *c;               /* the condition */
  int *flag;                 /* the state waited for: set to 1 by the notifier */
  char *log;                 /* letters in the order the waiters saw the flag set */
  int *n;                    /* entries in log */
  char letter;               /* this waiter's letter */
  sim_time delay;            /* sleep before waiting */
  sim_time *seen_at;         /* when it saw the flag */
  int *wakes;                /* times sim_cond_wait returned */
} waiter_t;

static void waiter(sim_actor *self, void *arg) {
  waiter_t *w = arg;
  sim_sleep(self, w->delay);
  while (!*w->flag) {
    sim_cond_wait(self, w->c);
    (*w->wakes)++;
  }
  w->log[(*w->n)++] = w->letter;
  *w->seen_at = sim_now(sim_actor_engine(self));
}

typedef struct {
  sim_cond *c;               /* the condition */
  int *flag;                 /* set before the second notify */
} notifier_t;

/* Notifies once at 10 ms without setting the flag (the waiters look, then wait again), then
** sets the flag and notifies at 20 ms. */
static void notifier(sim_actor *self, void *arg) {
  notifier_t *n = arg;
  sim_sleep(self, MS(10));
  sim_cond_notify_all(n->c);
  sim_sleep(self, MS(10));
  *n->flag = 1;
  sim_cond_notify_all(n->c);
}

/* Waiters B (waiting from 2 ms), A (1 ms) and C (3 ms) resume in wait order A, B, C at 20 ms; each
** wait returned exactly twice (10 ms: flag still 0, wait again; 20 ms: flag set): 6 wakes, so the
** re-wait after the first notify was not woken again by that same notify. */
static void test_notify_wakes_in_wait_order(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  sim_cond *c = sim_cond_new();
  int flag = 0, n = 0, wakes = 0;
  char log[4] = {0};
  sim_time at[3];
  waiter_t w[3] = {
    {c, &flag, log, &n, 'B', MS(2), &at[0], &wakes},
    {c, &flag, log, &n, 'A', MS(1), &at[1], &wakes},
    {c, &flag, log, &n, 'C', MS(3), &at[2], &wakes},
  };
  notifier_t nt = {c, &flag};
  for (int i = 0; i < 3; i++) sim_actor_spawn(e, "waiter", waiter, &w[i]);
  sim_actor_spawn(e, "notifier", notifier, &nt);
  assert_int_equal(sim_run(e), 0);
  assert_string_equal(log, "ABC");
  assert_int_equal(wakes, 6);
  for (int i = 0; i < 3; i++) assert_int_equal(at[i], MS(20));
  assert_int_equal(sim_cond_waiters(c), 0);
  sim_cond_free(c);
  sim_engine_free(e);
}

static void kill_at(sim_engine *e, void *arg) {
  (void)e;
  sim_actor_kill(arg);
}

/* A waiter killed at 5 ms leaves the list (2 waiters left); the notify at 10 ms wakes only A and C. */
static void test_killed_waiter_leaves(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  sim_cond *c = sim_cond_new();
  int flag = 1, n = 0, wakes = 0;
  char log[4] = {0};
  sim_time at[3];
  waiter_t w[3] = {
    {c, &flag, log, &n, 'A', 0, &at[0], &wakes},
    {c, &flag, log, &n, 'B', 0, &at[1], &wakes},
    {c, &flag, log, &n, 'C', 0, &at[2], &wakes},
  };
  flag = 0;
  sim_actor *b = NULL;
  for (int i = 0; i < 3; i++) {
    sim_actor *a = sim_actor_spawn(e, "waiter", waiter, &w[i]);
    if (i == 1) b = a;
  }
  sim_schedule(e, MS(5), kill_at, b);
  sim_run_until(e, MS(6));
  assert_int_equal(sim_cond_waiters(c), 2);
  flag = 1;
  sim_cond_notify_all(c); /* from the main program: no actor running */
  assert_int_equal(sim_run(e), 0);
  assert_string_equal(log, "AC");
  assert_int_equal(wakes, 2);
  sim_cond_free(c);
  sim_engine_free(e);
}

typedef struct {
  int ticks;                 /* events fired so far */
  int stop_at;               /* the predicate turns false at this many ticks */
} ticker_t;

static void tick(sim_engine *e, void *arg) {
  (void)e;
  ((ticker_t *)arg)->ticks++;
}

static int going(void *arg) {
  ticker_t *t = arg;
  return t->ticks < t->stop_at;
}

/* Five events at 1..5 ms. run_while(ticks < 3) stops right after the third (at 3 ms, two still
** pending) and returns 0; run_while(ticks < 9) runs the other two and returns -1 (nothing left). */
static void test_run_while(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  ticker_t t = {0, 3};
  for (int i = 1; i <= 5; i++) sim_schedule(e, MS(i), tick, &t);
  assert_int_equal(sim_run_while(e, going, &t), 0);
  assert_int_equal(t.ticks, 3);
  assert_int_equal(sim_now(e), MS(3));
  assert_int_equal(sim_pending_events(e), 2);
  t.stop_at = 9;
  assert_int_equal(sim_run_while(e, going, &t), -1);
  assert_int_equal(t.ticks, 5);
  sim_engine_free(e);
}

static void who_runs(sim_actor *self, void *arg) {
  *(sim_actor **)arg = sim_current_actor(sim_actor_engine(self));
}

/* Inside an actor sim_current_actor is that actor; from the main program it is NULL. */
static void test_current_actor(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  sim_actor *seen = NULL;
  sim_actor *a = sim_actor_spawn(e, "a", who_runs, &seen);
  assert_null(sim_current_actor(e));
  sim_run(e);
  assert_ptr_equal(seen, a);
  sim_engine_free(e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_notify_wakes_in_wait_order),
    cmocka_unit_test(test_killed_waiter_leaves),
    cmocka_unit_test(test_run_while),
    cmocka_unit_test(test_current_actor),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
