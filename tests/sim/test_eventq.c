/* test_eventq.c: the event queue through sim_schedule/sim_cancel/sim_run. */
#include "tests/testutil.h"

#include <stdlib.h>

#include "sim/sim.h"

typedef struct {
  int order[4096];           /* ids in firing order */
  sim_time when[4096];       /* sim_now at each firing */
  int n;                     /* firings so far */
} log_t;

typedef struct {
  log_t *log;                /* where to record */
  int id;                    /* what to record */
} tag_t;

static void record(sim_engine *e, void *arg) {
  tag_t *t = arg;
  t->log->when[t->log->n] = sim_now(e);
  t->log->order[t->log->n++] = t->id;
}

static void test_time_order(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  log_t log = {0};
  /* Scheduled out of order: 30, 10, 20, 0 ps -> fire 3, 1, 2, 0 by id below. */
  sim_time at[4] = {30, 10, 20, 0};
  tag_t tags[4];
  for (int i = 0; i < 4; i++) {
    tags[i] = (tag_t){&log, i};
    sim_schedule(e, at[i], record, &tags[i]);
  }
  assert_int_equal(sim_pending_events(e), 4);
  assert_int_equal(sim_run(e), 0);
  int want[4] = {3, 1, 2, 0};
  for (int i = 0; i < 4; i++) assert_int_equal(log.order[i], want[i]);
  assert_int_equal(log.when[3], 30);
  assert_int_equal(sim_now(e), 30);
  assert_int_equal(sim_events_processed(e), 4);
  sim_engine_free(e);
}

static void test_fifo_ties(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  log_t *log = calloc(1, sizeof *log);
  tag_t *tags = calloc(1000, sizeof *tags);
  /* An earlier-time event scheduled last must still come first; the 1000 ties stay in order. */
  for (int i = 0; i < 1000; i++) {
    tags[i] = (tag_t){log, i};
    sim_schedule(e, 500, record, &tags[i]);
  }
  tag_t first = {log, -1};
  sim_schedule(e, 499, record, &first);
  sim_run(e);
  assert_int_equal(log->n, 1001);
  assert_int_equal(log->order[0], -1);
  for (int i = 0; i < 1000; i++) assert_int_equal(log->order[i + 1], i);
  free(tags);
  free(log);
  sim_engine_free(e);
}

static void test_cancel(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  log_t log = {0};
  tag_t a = {&log, 1}, b = {&log, 2}, c = {&log, 3};
  sim_event_handle ha = sim_schedule(e, 10, record, &a);
  sim_event_handle hb = sim_schedule(e, 20, record, &b);
  sim_schedule(e, 30, record, &c);
  assert_int_equal(sim_cancel(e, hb), 1);
  assert_int_equal(sim_cancel(e, hb), 0); /* already cancelled */
  assert_int_equal(sim_pending_events(e), 2);
  sim_run_until(e, 15);
  assert_int_equal(log.n, 1);
  assert_int_equal(sim_now(e), 15);
  /* ha fired; its slot may be reused by a new event, which the stale handle must not hit. */
  tag_t d = {&log, 4};
  sim_schedule(e, 25, record, &d);
  assert_int_equal(sim_cancel(e, ha), 0);
  sim_run(e);
  assert_int_equal(log.n, 3);
  assert_int_equal(log.order[1], 4);
  assert_int_equal(log.order[2], 3);
  sim_engine_free(e);
}

/* Interleaved: schedule 2000 events at pseudo-random times, cancel every third as we go, and
** check the survivors fire sorted by (time, schedule order). */
static void test_interleaved(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  log_t *log = calloc(1, sizeof *log);
  enum { N = 2000 };
  tag_t *tags = calloc(N, sizeof *tags);
  sim_time *at = calloc(N, sizeof *at);
  int *cancelled = calloc(N, sizeof *cancelled);
  sim_event_handle *h = calloc(N, sizeof *h);
  uint32_t x = 12345;
  for (int i = 0; i < N; i++) {
    x = x * 1664525u + 1013904223u;
    at[i] = (sim_time)(x >> 24); /* 0..255: many ties */
    tags[i] = (tag_t){log, i};
    h[i] = sim_schedule(e, at[i], record, &tags[i]);
    if (i % 3 == 2) {
      int victim = i - 1;
      assert_int_equal(sim_cancel(e, h[victim]), 1);
      cancelled[victim] = 1;
    }
  }
  sim_run(e);
  int expected = 0;
  for (int i = 0; i < N; i++) expected += !cancelled[i];
  assert_int_equal(log->n, expected);
  for (int k = 1; k < log->n; k++) {
    int p = log->order[k - 1], q = log->order[k];
    assert_true(at[p] < at[q] || (at[p] == at[q] && p < q));
  }
  for (int k = 0; k < log->n; k++) assert_false(cancelled[log->order[k]]);
  free(tags); free(at); free(cancelled); free(h); free(log);
  sim_engine_free(e);
}

/* An event scheduled from inside a callback for the current time runs after the events already
** pending at that time (tie-break by insertion sequence, not by "nesting"). */
typedef struct { log_t *log; tag_t *late; } chain_t;
static void schedule_late(sim_engine *e, void *arg) {
  chain_t *c = arg;
  c->log->order[c->log->n++] = 0;
  sim_schedule(e, sim_now(e), record, c->late);
}

static void test_tie_break_from_callback(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  log_t log = {0};
  tag_t late = {&log, 9}, b = {&log, 1}, c = {&log, 2};
  chain_t ch = {&log, &late};
  sim_schedule(e, 5, schedule_late, &ch);
  sim_schedule(e, 5, record, &b);
  sim_schedule(e, 5, record, &c);
  sim_run(e);
  int want[4] = {0, 1, 2, 9};
  for (int i = 0; i < 4; i++) assert_int_equal(log.order[i], want[i]);
  sim_engine_free(e);
}

/* Times far apart exercise the high radix buckets; events scheduled at the current time after
** sim_run_until stopped short of the next one still fire before it. */
static void test_far_times(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  log_t log = {0};
  tag_t t[5] = {{&log, 0}, {&log, 1}, {&log, 2}, {&log, 3}, {&log, 4}};
  sim_schedule(e, INT64_C(1) << 62, record, &t[0]);
  sim_schedule(e, INT64_C(1) << 40, record, &t[1]);
  sim_schedule(e, 3, record, &t[2]);
  sim_run_until(e, 1000);
  sim_schedule(e, 1000, record, &t[3]);
  sim_schedule(e, (INT64_C(1) << 40) - 1, record, &t[4]);
  sim_run(e);
  int want[5] = {2, 3, 4, 1, 0};
  for (int i = 0; i < 5; i++) assert_int_equal(log.order[i], want[i]);
  assert_int_equal(sim_now(e), INT64_C(1) << 62);
  sim_engine_free(e);
}

static void test_time_conversion(void **state) {
  (void)state;
  assert_int_equal(sim_time_from_s(1e-6), 1000000);
  assert_int_equal(sim_time_from_s(1.5), INT64_C(1500000000000));
  assert_true(sim_time_to_s(2000000) == 2e-6);
}

/* Past int64 picoseconds a time saturates, never wraps: 3000 h is 1.08e19 ps, past 2^63 - 1, and
** llround gave INT64_MIN (a 3000 h outage read as 60 s in the field). A sum of two times up to the
** horizon (2^62 + 2^62 = 2^63) saturates as well. */
static void test_time_saturates(void **state) {
  (void)state;
  assert_int_equal(sim_time_from_s(3000.0 * 3600), SIM_TIME_NEVER);
  assert_int_equal(sim_time_from_s(-3000.0 * 3600), -SIM_TIME_NEVER);
  assert_int_equal(sim_time_from_s(SIM_TIME_HORIZON_S), SIM_TIME_HORIZON);
  assert_int_equal(sim_time_add(SIM_TIME_HORIZON, SIM_TIME_HORIZON), SIM_TIME_NEVER);
  assert_int_equal(sim_time_add(SIM_TIME_HORIZON, 5), SIM_TIME_HORIZON + 5);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_time_order),     cmocka_unit_test(test_fifo_ties),
      cmocka_unit_test(test_cancel),         cmocka_unit_test(test_interleaved),
      cmocka_unit_test(test_tie_break_from_callback), cmocka_unit_test(test_time_conversion),
      cmocka_unit_test(test_time_saturates),
      cmocka_unit_test(test_far_times),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
