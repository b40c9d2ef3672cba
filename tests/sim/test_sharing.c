/* test_sharing.c: max-min sharing of links and cpus, latency, capacity changes, memory pools. */
#include "tests/testutil.h"

#include <math.h>

#include "sim/sim.h"
#include "sim/simInt.h" /* to read the solver's rates in the property test */

#define S(x) ((sim_time)(x) * SIM_PS_PER_S)

typedef struct {
  sim_time at[8];            /* completion time per activity tag */
  int order[8];              /* tags in completion order */
  int n;                     /* completions so far */
} done_t;

typedef struct { done_t *d; int tag; } tagged_t;

static void on_done(sim_engine *e, sim_activity *act, void *arg) {
  (void)act;
  tagged_t *t = arg;
  t->d->at[t->tag] = sim_now(e);
  t->d->order[t->d->n++] = t->tag;
}

static void watch(sim_activity *a, tagged_t *t) { sim_activity_on_done(a, on_done, t); }

static void test_two_flows_one_link(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  sim_link *l = sim_link_new(e, "l", 100, 0);
  done_t d = {0};
  tagged_t t[2] = {{&d, 0}, {&d, 1}};
  /* 1000 B each at 50 B/s: both at 20 s, in start order. */
  watch(sim_comm_start(e, &l, 1, 1000), &t[0]);
  watch(sim_comm_start(e, &l, 1, 1000), &t[1]);
  sim_run(e);
  assert_int_equal(d.at[0], S(20));
  assert_int_equal(d.at[1], S(20));
  assert_int_equal(d.order[0], 0);
  assert_true(sim_link_bytes(l) == 2000.0);
  sim_engine_free(e);
}

static void test_bottleneck_elsewhere(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  sim_link *a = sim_link_new(e, "A", 10, 0);
  sim_link *b = sim_link_new(e, "B", 2, 0);
  sim_link *ab[2] = {a, b};
  done_t d = {0};
  tagged_t t[3] = {{&d, 0}, {&d, 1}, {&d, 2}};
  /* f3 crosses A and B: B gives it 2, A's other 8 go to f1 and f2 (4 each).
  ** f3: 10 B / 2 = 5 s. By then f1, f2 have 40 - 20 = 20 B left, now at 5 B/s: 4 s more = 9 s. */
  watch(sim_comm_start(e, &a, 1, 40), &t[0]);
  watch(sim_comm_start(e, &a, 1, 40), &t[1]);
  watch(sim_comm_start(e, ab, 2, 10), &t[2]);
  sim_run(e);
  assert_int_equal(d.at[2], S(5));
  assert_int_equal(d.at[0], S(9));
  assert_int_equal(d.at[1], S(9));
  assert_true(sim_link_bytes(a) == 90.0);
  assert_true(sim_link_bytes(b) == 10.0);
  sim_engine_free(e);
}

/* Progress is visible mid-flow: two flows at 5 B/s each have moved 12.5 B apiece by 2.5 s. */
static void test_bytes_mid_flow(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  sim_link *a = sim_link_new(e, "A", 10, 0);
  sim_activity *f = sim_comm_start(e, &a, 1, 40);
  sim_activity *g = sim_comm_start(e, &a, 1, 40);
  sim_run_until(e, S(2) + S(1) / 2);
  assert_true(sim_link_bytes(a) == 25.0);
  sim_run(e);
  (void)f; (void)g; /* never waited: the engine frees them */
  sim_engine_free(e);
}

static void test_latency_then_bandwidth(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  sim_link *route[2] = {sim_link_new(e, "l1", 1e9, 1000000), sim_link_new(e, "l2", 2e9, 2000000)};
  done_t d = {0};
  tagged_t t[2] = {{&d, 0}, {&d, 1}};
  /* Latency 1 us + 2 us, then 1e6 B at min(1e9, 2e9) = 1 ms: 1.003 ms. A zero-byte comm costs
  ** the latency alone. */
  watch(sim_comm_start(e, route, 2, 1e6), &t[0]);
  watch(sim_comm_start(e, route, 2, 0), &t[1]);
  sim_run(e);
  assert_int_equal(d.at[0], INT64_C(1003000000));
  assert_int_equal(d.at[1], INT64_C(3000000));
  sim_engine_free(e);
}

/* A route longer than the inline hop storage: 6 links of 1 us, the slowest at 2e8 B/s.
** 6 us + 1e6 B / 2e8 B/s = 5 ms: 5006 us. */
static void test_long_route(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  sim_link *route[6];
  for (int i = 0; i < 6; i++) route[i] = sim_link_new(e, "l", i == 3 ? 2e8 : 1e9, 1000000);
  done_t d = {0};
  tagged_t t = {&d, 0};
  watch(sim_comm_start(e, route, 6, 1e6), &t);
  sim_run(e);
  assert_int_equal(d.at[0], INT64_C(5006000000));
  assert_true(sim_link_bytes(route[5]) == 1e6);
  sim_engine_free(e);
}

static void test_exec_sharing(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  sim_cpu *c = sim_cpu_new(e, "cpu", 1e9);
  done_t d = {0};
  tagged_t t[2] = {{&d, 0}, {&d, 1}};
  /* Both at 5e8 FLOP/s: the 5e8 one ends at 1 s, the other's 5e8 left run at 1e9: 1.5 s. */
  watch(sim_exec_start(e, c, 1e9), &t[0]);
  watch(sim_exec_start(e, c, 5e8), &t[1]);
  sim_run(e);
  assert_int_equal(d.at[1], S(1));
  assert_int_equal(d.at[0], S(3) / 2);
  assert_string_equal(sim_cpu_name(c), "cpu");
  sim_engine_free(e);
}

static void halve(sim_engine *e, void *arg) {
  (void)e;
  sim_link_set_bandwidth(arg, 250);
}

static void test_bandwidth_change(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  sim_link *l = sim_link_new(e, "l", 1000, 0);
  done_t d = {0};
  tagged_t t = {&d, 0};
  /* 500 B moved by 0.5 s; the other 500 B at 250 B/s take 2 s: done at 2.5 s. */
  watch(sim_comm_start(e, &l, 1, 1000), &t);
  sim_schedule(e, S(1) / 2, halve, l);
  sim_run(e);
  assert_int_equal(d.at[0], S(5) / 2);
  assert_true(sim_link_bandwidth(l) == 250);
  sim_engine_free(e);
}

/* A cpu set to 0 stalls its exec; restoring it resumes from where it was. */
static void stop_cpu(sim_engine *e, void *arg) { (void)e; sim_cpu_set_rate(arg, 0); }
static void start_cpu(sim_engine *e, void *arg) { (void)e; sim_cpu_set_rate(arg, 100); }

static void test_rate_zero_and_back(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  sim_cpu *c = sim_cpu_new(e, "c", 100);
  done_t d = {0};
  tagged_t t = {&d, 0};
  /* 100 FLOPs done by 1 s, stalled 1 s .. 3 s, 100 left from 3 s: done at 4 s. */
  watch(sim_exec_start(e, c, 200), &t);
  sim_schedule(e, S(1), stop_cpu, c);
  sim_schedule(e, S(3), start_cpu, c);
  sim_run(e);
  assert_int_equal(d.at[0], S(4));
  sim_engine_free(e);
}

/* Blocking calls and wait_all from an actor: an exec and a comm in parallel. */
typedef struct { sim_cpu *cpu; sim_link *link; sim_time end; } par_t;
static void parallel(sim_actor *self, void *arg) {
  par_t *p = arg;
  sim_engine *e = sim_actor_engine(self);
  sim_activity *acts[2] = {sim_exec_start(e, p->cpu, 300), sim_comm_start(e, &p->link, 1, 100)};
  assert_int_equal(sim_wait_all(self, acts, 2), SIM_OK);
  p->end = sim_now(e);
  assert_int_equal(sim_exec(self, p->cpu, 100), SIM_OK);
  assert_int_equal(sim_comm(self, &p->link, 1, 0), SIM_OK);
  p->end = sim_now(e) - p->end;
}

static void test_wait_all(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  /* exec 300 at 100/s = 3 s; comm 1 s latency + 100 B at 50 B/s = 3 s: both at 3 s.
  ** Then exec 100 (1 s) and an empty comm (1 s latency): 2 s more. */
  par_t p = {sim_cpu_new(e, "c", 100), sim_link_new(e, "l", 50, S(1)), 0};
  sim_actor_spawn(e, "a", parallel, &p);
  assert_int_equal(sim_run(e), 0);
  assert_int_equal(p.end, S(2));
  assert_int_equal(sim_now(e), S(5));
  sim_engine_free(e);
}

/* Checks max-min fairness of the flows in progress: no link is over capacity, and every flow
** has a bottleneck, a saturated link on its route where no other flow gets more. That
** characterises the max-min allocation uniquely. */
static void check_maxmin(sim_activity *const *flows, int n) {
  for (int f = 0; f < n; f++) {
    if (flows[f]->state != SIM_ACT_FLOWING) continue;
    const sim_action *a = &flows[f]->action;
    int has_bottleneck = 0;
    for (size_t h = 0; h < a->hops; h++) {
      const sim_resource *r = a->res[h];
      double sum = 0, max = 0;
      for (size_t u = 0; u < r->n_uses; u++) {
        sum += r->uses[u]->rate;
        if (r->uses[u]->rate > max) max = r->uses[u]->rate;
      }
      assert_true(sum <= r->capacity * (1 + 1e-12));
      if (sum >= r->capacity * (1 - 1e-12) && a->rate >= max * (1 - 1e-12)) has_bottleneck = 1;
    }
    assert_true(has_bottleneck);
  }
}

/* 50 random sets of 12 flows of random sizes over 6 random links, checked at the start and
** every 10 ms as flows finish and the survivors are re-shared (component by component). */
static void test_maxmin_property(void **state) {
  (void)state;
  uint32_t x = 7;
#define NEXT() (x = x * 1664525u + 1013904223u, x >> 8)
  for (int round = 0; round < 50; round++) {
    sim_engine *e = sim_engine_new();
    enum { LINKS = 6, FLOWS = 12 };
    sim_link *links[LINKS];
    for (int l = 0; l < LINKS; l++) links[l] = sim_link_new(e, "l", 1 + NEXT() % 100, 0);
    sim_activity *flows[FLOWS];
    for (int f = 0; f < FLOWS; f++) {
      sim_link *route[3];
      size_t hops = 1 + NEXT() % 3;
      int first = (int)(NEXT() % LINKS);
      for (size_t h = 0; h < hops; h++) route[h] = links[(first + (int)h * 2) % LINKS];
      flows[f] = sim_comm_start(e, route, hops, 1 + NEXT() % 10);
    }
    for (sim_time t = 0; sim_pending_events(e) > 0; t += S(1) / 100) {
      sim_run_until(e, t);
      check_maxmin(flows, FLOWS);
    }
    for (int f = 0; f < FLOWS; f++) assert_int_equal(flows[f]->state, SIM_ACT_DONE);
    sim_engine_free(e);
  }
#undef NEXT
}

/* Progressive filling over four levels, each bottleneck's share rising as the one before fixes
** its flows (so a resource's share must be taken as it is when its turn comes, not as it was at
** the start: a guard for any faster bottleneck search in maxmin.c), two links tying at first.
** Links L1 12 B/s, L2 30, L3 100, L4 100; flows f0 L1, f1 L1+L2, f2 L2, f3 L2+L3, f4 L3, f5 L3,
** f6 L4, f7 L4 (L3 and L4 tie at 100/3 before anything is fixed, 50 after).
**   pass 1: L1 12/2 = 6 < L2 30/3 = 10 < L3 = L4 = 33.3: f0 = f1 = 6; L2 left 24 over 2 = 12.
**   pass 2: L2 12: f2 = f3 = 12; L3 left 88 over 2 = 44.
**   pass 3: L3 44 < L4 50: f4 = f5 = 44.  pass 4: L4 50: f6 = f7 = 50.
** A search that took a resource's share from before the last fixing gives other rates: every link
** is full and each flow has a bottleneck (check_maxmin) only with these. */
static void test_filling_levels(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  sim_link *l1 = sim_link_new(e, "L1", 12, 0), *l2 = sim_link_new(e, "L2", 30, 0);
  sim_link *l3 = sim_link_new(e, "L3", 100, 0), *l4 = sim_link_new(e, "L4", 100, 0);
  sim_link *routes[8][2] = {{l1}, {l1, l2}, {l2}, {l2, l3}, {l3}, {l3}, {l4}, {l4}};
  const size_t hops[8] = {1, 2, 1, 2, 1, 1, 1, 1};
  const double want[8] = {6, 6, 12, 12, 44, 44, 50, 50};
  sim_activity *flows[8];
  for (int f = 0; f < 8; f++) flows[f] = sim_comm_start(e, routes[f], hops[f], 1000);
  sim_run_until(e, 1); /* started and shared, nothing through */
  for (int f = 0; f < 8; f++) assert_true(flows[f]->action.rate == want[f]);
  check_maxmin(flows, 8);
  sim_run(e);
  for (int f = 0; f < 8; f++) assert_int_equal(flows[f]->state, SIM_ACT_DONE);
  sim_engine_free(e);
}

static void test_mempool(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  sim_mempool *m = sim_mempool_new(e, "hbm", 100);
  assert_int_equal(sim_mempool_alloc(m, 60), 0);
  assert_int_equal(sim_mempool_alloc(m, 50), -1); /* 110 > 100: refused, nothing reserved */
  assert_int_equal(sim_mempool_used(m), 60);
  assert_int_equal(sim_mempool_alloc(m, 40), 0);  /* exactly full */
  assert_int_equal(sim_mempool_alloc(m, 1), -1);
  sim_mempool_release(m, 70);
  assert_int_equal(sim_mempool_used(m), 30);
  assert_int_equal(sim_mempool_peak(m), 100);
  assert_int_equal(sim_mempool_capacity(m), 100);
  assert_string_equal(sim_mempool_name(m), "hbm");
  assert_int_equal(sim_mempool_alloc(m, UINT64_MAX), -1); /* no overflow */
  sim_engine_free(e);
}

/* Picoseconds of amount / rate: a count within 1e-12 of an integer (an exact count that division
** left a few ulps off) is that integer, anything else is rounded up; from 2^52 ps on every double
** is an integer and passes as it is. */
static void test_duration_rounding(void **state) {
  (void)state;
  assert_int_equal(sim__duration_ps(1000, 100), S(10));            /* exact: 10 s */
  assert_int_equal(sim__duration_ps(3 * 0.1, 0.1), S(3));          /* 3000000000000.0005 ps */
  assert_int_equal(sim__duration_ps(43 * 0.1, 0.1), S(43));        /* 42999999999999.99 ps */
  assert_int_equal(sim__duration_ps(1, 3000), 333333334);          /* 333333333.33 ps: 0.33 off, up */
  assert_int_equal(sim__duration_ps(2.5, 1e12), 3);                /* 2.5 ps: up, not to even */
  assert_int_equal(sim__duration_ps(3.5, 1e12), 4);                /* 3.5 ps */
  assert_int_equal(sim__duration_ps(1, 4e12), 1);                  /* 0.25 ps */
  assert_int_equal(sim__duration_ps(0, 5), 0);
  assert_int_equal(sim__duration_ps(0x1p53, 1e12), INT64_C(1) << 53); /* 2^53 ps, integral */
  assert_int_equal(sim__duration_ps(0x1p62, 1e12), SIM_TIME_NEVER);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_two_flows_one_link), cmocka_unit_test(test_bottleneck_elsewhere),
      cmocka_unit_test(test_bytes_mid_flow),     cmocka_unit_test(test_latency_then_bandwidth),
      cmocka_unit_test(test_long_route),         cmocka_unit_test(test_exec_sharing),
      cmocka_unit_test(test_bandwidth_change),
      cmocka_unit_test(test_rate_zero_and_back), cmocka_unit_test(test_wait_all),
      cmocka_unit_test(test_maxmin_property),    cmocka_unit_test(test_filling_levels),
      cmocka_unit_test(test_mempool),
      cmocka_unit_test(test_duration_rounding),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
