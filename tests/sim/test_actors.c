/* test_actors.c: actors, sleeping, spawning, killing, barriers, deadlock detection. */
#include "tests/testutil.h"

#include <string.h>

#include "sim/sim.h"
#include "sim/simInt.h" /* the actors' coroutines, for the guarded-stack test */

#define MS(x) ((sim_time)(x) * 1000000000)  /* milliseconds -> picoseconds */

typedef struct {
  char order[64];            /* one letter per event, in simulation order */
  sim_time when[64];         /* sim time of each letter */
  int n;                     /* letters so far */
} trail_t;

static void mark(trail_t *t, sim_engine *e, char c) {
  t->when[t->n] = sim_now(e);
  t->order[t->n++] = c;
  t->order[t->n] = 0;
}

typedef struct {
  trail_t *trail;            /* shared log */
  char letter;               /* this actor's letter */
  sim_time nap;              /* how long it sleeps */
} sleeper_t;

static void sleeper(sim_actor *self, void *arg) {
  sleeper_t *s = arg;
  assert_int_equal(sim_sleep(self, s->nap), SIM_OK);
  mark(s->trail, sim_actor_engine(self), s->letter);
}

static void test_sleep_order(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  trail_t t = {0};
  /* A sleeps 30 ms, B 10, C 20, D 10 (same as B, spawned later): B D C A. */
  sleeper_t s[4] = {{&t, 'A', MS(30)}, {&t, 'B', MS(10)}, {&t, 'C', MS(20)}, {&t, 'D', MS(10)}};
  sim_actor *a[4];
  for (int i = 0; i < 4; i++) a[i] = sim_actor_spawn(e, "s", sleeper, &s[i]);
  assert_int_equal(sim_run(e), 0);
  assert_string_equal(t.order, "BDCA");
  assert_int_equal(t.when[0], MS(10));
  assert_int_equal(t.when[3], MS(30));
  for (int i = 0; i < 4; i++) assert_false(sim_actor_is_alive(a[i]));
  /* Each actor: switch in at start, out at sleep, in at wake, out at the end = 4. */
  assert_int_equal(sim_context_switches(e), 16);
  sim_engine_free(e);
}

/* Spawn order: actors spawned at one time start in spawn order, after events already pending
** at that time; a child spawned by a running actor starts after its parent blocks. */
typedef struct { trail_t *trail; char letter; } named_t;
static void say(sim_actor *self, void *arg) {
  named_t *n = arg;
  mark(n->trail, sim_actor_engine(self), n->letter);
}
static void event_mark(sim_engine *e, void *arg) { mark(arg, e, 'E'); }
static void parent(sim_actor *self, void *arg) {
  named_t *n = arg;
  static named_t child;
  child = (named_t){n->trail, 'c'};
  mark(n->trail, sim_actor_engine(self), 'P');
  sim_actor_spawn(sim_actor_engine(self), "child", say, &child);
  mark(n->trail, sim_actor_engine(self), 'p');
  sim_sleep(self, 0);
  mark(n->trail, sim_actor_engine(self), 'z');
}

static void test_spawn_order(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  trail_t t = {0};
  sim_schedule(e, 0, event_mark, &t);
  named_t x = {&t, 'X'}, p = {&t, 'P'}, y = {&t, 'Y'};
  sim_actor_spawn(e, "x", say, &x);
  sim_actor_spawn(e, "p", parent, &p);
  sim_actor_spawn(e, "y", say, &y);
  sim_run(e);
  /* E (pending first), X, P starts and spawns c, p, then Y (spawned before c), c, then P's
  ** sleep(0) wake, scheduled after c's start. */
  assert_string_equal(t.order, "EXPpYcz");
  sim_engine_free(e);
}

/* Kill: the victim holds memory and a flow sharing a link; the killer frees both. */
typedef struct {
  sim_link *link;            /* shared link */
  sim_mempool *pool;         /* victim's memory */
  int returned;              /* the victim's comm returned (must not happen) */
  int released;              /* on_kill ran */
  sim_time survivor_done;    /* when the other flow finished */
  sim_actor *victim;         /* for the killer event */
} killctx_t;

static void release(sim_actor *self, void *arg) {
  killctx_t *k = arg;
  (void)self;
  sim_mempool_release(k->pool, 100);
  k->released = 1;
}

static void victim(sim_actor *self, void *arg) {
  killctx_t *k = arg;
  assert_int_equal(sim_mempool_alloc(k->pool, 100), 0);
  sim_actor_on_kill(self, release, k);
  sim_comm(self, &k->link, 1, 1e6);
  k->returned = 1;
}

static void survivor(sim_actor *self, void *arg) {
  killctx_t *k = arg;
  assert_int_equal(sim_comm(self, &k->link, 1, 1e6), SIM_OK);
  k->survivor_done = sim_now(sim_actor_engine(self));
}

static void kill_event(sim_engine *e, void *arg) {
  (void)e;
  killctx_t *k = arg;
  sim_actor_kill(k->victim);
}

static void test_kill_releases_and_reshares(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  killctx_t k = {0};
  k.link = sim_link_new(e, "l", 1e6, 0);
  k.pool = sim_mempool_new(e, "hbm", 1000);
  k.victim = sim_actor_spawn(e, "victim", victim, &k);
  sim_actor_spawn(e, "survivor", survivor, &k);
  /* Both flows get 5e5 B/s. At 0.5 s each has moved 250000 B; the victim dies, the survivor
  ** gets the whole 1e6 B/s for its remaining 750000 B: done at 0.5 + 0.75 = 1.25 s. */
  sim_schedule(e, MS(500), kill_event, &k);
  assert_int_equal(sim_run(e), 0);
  assert_false(k.returned);
  assert_true(k.released);
  assert_false(sim_actor_is_alive(k.victim));
  assert_int_equal(sim_mempool_used(k.pool), 0);
  assert_int_equal(sim_mempool_peak(k.pool), 100);
  assert_int_equal(k.survivor_done, MS(1250));
  /* 250000 from the victim + 1e6 from the survivor. */
  assert_true(sim_link_bytes(k.link) == 1250000.0);
  sim_engine_free(e);
}

/* Killing a sleeper, an actor not started yet, and an actor killing itself. */
static int self_cleanups;
static void count_cleanup(sim_actor *self, void *arg) {
  (void)self; (void)arg;
  self_cleanups++;
}
static void suicide(sim_actor *self, void *arg) {
  int *after = arg;
  sim_actor_on_kill(self, count_cleanup, NULL);
  sim_sleep(self, 10);
  sim_actor_kill(self);
  *after = 1;
}
static void long_sleeper(sim_actor *self, void *arg) {
  int *after = arg;
  sim_actor_on_kill(self, count_cleanup, NULL);
  sim_sleep(self, MS(1000));
  *after = 1;
}
static void kill_actor_event(sim_engine *e, void *arg) {
  (void)e;
  sim_actor_kill(arg);
}

static void test_kill_variants(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  self_cleanups = 0;
  int after_suicide = 0, after_sleep = 0, after_unstarted = 0;
  sim_actor_spawn(e, "suicide", suicide, &after_suicide);
  sim_actor *s = sim_actor_spawn(e, "sleeper", long_sleeper, &after_sleep);
  sim_schedule(e, 20, kill_actor_event, s);
  sim_run_until(e, 30);
  sim_actor *u = sim_actor_spawn(e, "unstarted", long_sleeper, &after_unstarted);
  sim_actor_kill(u); /* from the engine, before its start event */
  assert_int_equal(sim_run(e), 0);
  assert_false(after_suicide);
  assert_false(after_sleep);
  assert_false(after_unstarted);
  assert_int_equal(self_cleanups, 2); /* the unstarted one never set its hook */
  assert_int_equal(sim_now(e), 30);   /* the sleeper's 1 s wake-up was withdrawn */
  sim_engine_free(e);
}

/* Killed by another actor: the victim's hook runs from the engine once the killer blocks. */
typedef struct { sim_actor *victim; int killer_went_on; int hook_saw_killer_went_on; } actor_kill_t;
static actor_kill_t akt;
static void note_hook(sim_actor *self, void *arg) {
  (void)self; (void)arg;
  akt.hook_saw_killer_went_on = akt.killer_went_on;
}
static void hooked_sleeper(sim_actor *self, void *arg) {
  (void)arg;
  sim_actor_on_kill(self, note_hook, NULL);
  sim_sleep(self, MS(1000));
}
static void killer(sim_actor *self, void *arg) {
  (void)arg;
  sim_sleep(self, 5);
  sim_actor_kill(akt.victim);
  assert_false(sim_actor_is_alive(akt.victim));
  akt.killer_went_on = 1;
  sim_sleep(self, 5);
}

static void test_kill_from_actor(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  akt = (actor_kill_t){0};
  akt.victim = sim_actor_spawn(e, "victim", hooked_sleeper, NULL);
  sim_actor_spawn(e, "killer", killer, NULL);
  assert_int_equal(sim_run(e), 0);
  assert_true(akt.hook_saw_killer_went_on);
  assert_int_equal(sim_now(e), 10);
  sim_engine_free(e);
}

/* Deadlock: two actors each wait on a 3-party barrier; nothing can release them. */
static void waiter(sim_actor *self, void *arg) { sim_barrier_wait(self, arg); }

static void test_deadlock(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  sim_barrier *b = sim_barrier_new(e, 3);
  sim_actor_spawn(e, "w0", waiter, b);
  sim_actor_spawn(e, "w1", waiter, b);
  assert_int_equal(sim_run(e), -1);
  const char *names[4];
  assert_int_equal(sim_deadlocked_actors(e, names, 4), 2);
  assert_string_equal(names[0], "w0");
  assert_string_equal(names[1], "w1");
  sim_barrier_free(b);
  sim_engine_free(e);
}

/* Barrier reuse: three actors with different work per round meet twice. */
typedef struct {
  sim_barrier *b;            /* shared barrier */
  trail_t *trail;            /* log */
  char letter;               /* this actor */
  sim_time work[2];          /* sleep before each round */
} rounder_t;

static void rounder(sim_actor *self, void *arg) {
  rounder_t *r = arg;
  for (int round = 0; round < 2; round++) {
    sim_sleep(self, r->work[round]);
    assert_int_equal(sim_barrier_wait(self, r->b), SIM_OK);
    mark(r->trail, sim_actor_engine(self), r->letter);
  }
}

static void test_barrier_reuse(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  sim_barrier *b = sim_barrier_new(e, 3);
  trail_t t = {0};
  /* Round 1 arrivals: C at 1, A at 2, B at 3 -> all released at 3 in arrival order C A B.
  ** Round 2 (from 3): A at 3+5=8, B at 3+1=4, C at 3+2=5 -> released at 8, order B C A. */
  rounder_t r[3] = {{b, &t, 'A', {MS(2), MS(5)}}, {b, &t, 'B', {MS(3), MS(1)}},
                    {b, &t, 'C', {MS(1), MS(2)}}};
  for (int i = 0; i < 3; i++) sim_actor_spawn(e, "r", rounder, &r[i]);
  assert_int_equal(sim_run(e), 0);
  assert_string_equal(t.order, "CABBCA");
  for (int i = 0; i < 3; i++) assert_int_equal(t.when[i], MS(3));
  for (int i = 3; i < 6; i++) assert_int_equal(t.when[i], MS(8));
  sim_barrier_free(b);
  sim_engine_free(e);
}

/* A killed barrier waiter is withdrawn: the barrier then needs a fresh third party. */
static void test_barrier_kill(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  sim_barrier *b = sim_barrier_new(e, 2);
  sim_actor *w0 = sim_actor_spawn(e, "w0", waiter, b);
  sim_run_until(e, 0);
  sim_actor_kill(w0);
  sim_actor_spawn(e, "w1", waiter, b);
  sim_actor_spawn(e, "w2", waiter, b);
  assert_int_equal(sim_run(e), 0);
  sim_barrier_free(b);
  sim_engine_free(e);
}

/* A waited activity's on_done is a notification at its own completion: two transfers of 1 MB
** and 3 MB started together on separate 1 GB/s links (1 us latency each) complete at 1001 us and
** 3001 us; the callbacks see those times while the waiter wakes at 3001 us. A waiter killed at
** 2 ms has its wait withdrawn: the 3 MB transfer never notifies, the 1 MB one already had. */
typedef struct { sim_time at[2]; int calls; sim_link *links[2]; sim_time woke; } notified_t;
static void note_done(sim_engine *e, sim_activity *act, void *arg) {
  (void)act;
  notified_t *n = arg;
  n->at[n->calls++] = sim_now(e);
}
static void notified_waiter(sim_actor *self, void *arg) {
  notified_t *n = arg;
  sim_engine *e = sim_actor_engine(self);
  sim_activity *acts[2] = { sim_comm_start(e, &n->links[0], 1, 3e6), sim_comm_start(e, &n->links[1], 1, 1e6) };
  sim_activity_on_done(acts[0], note_done, n);
  sim_activity_on_done(acts[1], note_done, n);
  assert_int_equal(sim_wait_all(self, acts, 2), SIM_OK);
  n->woke = sim_now(e);
}
static void test_waited_notification(void **state) {
  (void)state;
  for (int kill = 0; kill < 2; kill++) {
    sim_engine *e = sim_engine_new();
    notified_t n = { .calls = 0 };
    n.links[0] = sim_link_new(e, "a", 1e9, 1000000);
    n.links[1] = sim_link_new(e, "b", 1e9, 1000000);
    sim_actor *a = sim_actor_spawn(e, "w", notified_waiter, &n);
    if (kill) {
      sim_run_until(e, 2000000000);
      sim_actor_kill(a);
    }
    assert_int_equal(sim_run(e), 0);
    assert_int_equal(n.calls, kill ? 1 : 2);
    assert_int_equal(n.at[0], 1001000000);
    if (!kill) assert_int_equal(n.at[1], 3001000000);
    assert_int_equal(n.woke, kill ? 0 : 3001000000);
    sim_engine_free(e);
  }
}

/* A dataflow edge (sim_wait_extend): a 1 MB request over link a (1 GB/s, 1 us) arrives at
** 1001 us; its notification starts a 2 MB answer over link b into the wait's NULL slot: 1 us +
** 2000 us, done at 3002 us. A 1 MB transfer started with the request on b (1 us, then 1000 us
** alone) is done at 1001 us too, so the answer has b to itself. The waiter wakes at 3002 us, not
** at 1001 us when the two it started were done. Killed at 2 ms, the answer is withdrawn: it never
** notifies, and the engine has nothing left to run. */
typedef struct { sim_link *a, *b; int answered; sim_time woke; } chained_t;
static void answered(sim_engine *e, sim_activity *act, void *arg) {
  (void)e;
  (void)act;
  ((chained_t *)arg)->answered = 1;
}
static void request_arrived(sim_engine *e, sim_activity *act, void *arg) {
  chained_t *c = arg;
  sim_activity *answer = sim_comm_start(e, &c->b, 1, 2e6);
  sim_activity_on_done(answer, answered, c);
  sim_wait_extend(act, 2, answer);
}
static void chained_waiter(sim_actor *self, void *arg) {
  chained_t *c = arg;
  sim_engine *e = sim_actor_engine(self);
  sim_activity *acts[3] = { sim_comm_start(e, &c->a, 1, 1e6), sim_comm_start(e, &c->b, 1, 1e6), NULL };
  sim_activity_on_done(acts[0], request_arrived, c);
  assert_int_equal(sim_wait_all(self, acts, 3), SIM_OK);
  c->woke = sim_now(e);
}
static void test_wait_extend(void **state) {
  (void)state;
  for (int kill = 0; kill < 2; kill++) {
    sim_engine *e = sim_engine_new();
    chained_t c = { .answered = 0 };
    c.a = sim_link_new(e, "a", 1e9, 1000000);
    c.b = sim_link_new(e, "b", 1e9, 1000000);
    sim_actor *w = sim_actor_spawn(e, "w", chained_waiter, &c);
    if (kill) {
      sim_run_until(e, MS(2));
      sim_actor_kill(w);
    }
    assert_int_equal(sim_run(e), 0);
    assert_int_equal(c.answered, !kill);
    assert_int_equal(c.woke, kill ? 0 : 3002000000);
    assert_int_equal(sim_pending_events(e), 0);
    sim_engine_free(e);
  }
}

/* A host's stop test ends sim_run and sim_run_while within SIM_STOP_CHECK_EVENTS events of
** holding, with the sleeper still blocked; freeing the engine then releases it. sim_stop_asked
** is the same test for set-up outside the run loop: 0 without a test, else what it says now. */
static int stop_after(void *arg) { return *(const int *)arg; }
typedef struct { int *flag; long naps; } napper_t;
static void napper(sim_actor *self, void *arg) {
  napper_t *n = arg;
  for (long i = 0; i < 100000; i++) {
    if (i == 1000) *n->flag = 1;  /* the host asks to stop from here on */
    assert_int_equal(sim_sleep(self, MS(1)), SIM_OK);
    n->naps++;
  }
}
static int forever(void *arg) { (void)arg; return 1; }
static void test_stop_check(void **state) {
  (void)state;
  for (int use_while = 0; use_while < 2; use_while++) {
    sim_engine *e = sim_engine_new();
    int flag = 0;
    napper_t n = { &flag, 0 };
    assert_false(sim_stop_asked(e));
    sim_set_stop_check(e, stop_after, &flag);
    assert_false(sim_stop_asked(e));
    sim_actor *a = sim_actor_spawn(e, "napper", napper, &n);
    assert_int_equal(use_while ? sim_run_while(e, forever, NULL) : sim_run(e), 1);
    assert_true(sim_stopped(e));
    assert_true(n.naps >= 1000 && n.naps < 1000 + SIM_STOP_CHECK_EVENTS);
    assert_true(sim_actor_is_alive(a));
    assert_true(sim_stop_asked(e));
    sim_engine_free(e);
  }
}

/* Stacks past the guarded budget (coro.c: a quarter of vm.max_map_count, here 3) are unguarded
** mappings with a canary: they run actors as the guarded ones do, deep frames and interleaved
** switches included, and the budget is given back when their actors end (a second engine gets 3
** guarded stacks again). Before, each stack was two mappings and some 32,000 actors hit the
** kernel's limit (exit 134, later exit 2). */
static int deep(int depth, volatile char *seen) {
  volatile char frame[2048];                  /* 16 frames: 32 KiB of a 256 KiB stack touched */
  frame[0] = (char)depth;
  frame[sizeof frame - 1] = (char)depth;
  if (depth == 0) return frame[0] + *seen;
  return deep(depth - 1, seen) + frame[sizeof frame - 1];
}
typedef struct { trail_t *trail; char letter; sim_time nap; int sum; } diver_t;
static void diver(sim_actor *self, void *arg) {
  diver_t *d = arg;
  char seen = 1;
  assert_int_equal(sim_sleep(self, d->nap), SIM_OK);
  d->sum = deep(16, &seen);
  assert_int_equal(sim_sleep(self, d->nap), SIM_OK);
  mark(d->trail, sim_actor_engine(self), d->letter);
}
static void test_unguarded_stacks(void **state) {
  (void)state;
  sim__coro_set_guard_budget(3);
  for (int round = 0; round < 2; round++) {
    sim_engine *e = sim_engine_new();
    trail_t t = {0};
    diver_t d[8];
    sim_actor *a[8];
    /* Naps 8, 7, ..., 1 ms: they finish in reverse spawn order, each after two naps. */
    for (int i = 0; i < 8; i++) {
      d[i] = (diver_t){ &t, (char)('A' + i), MS(8 - i), 0 };
      a[i] = sim_actor_spawn(e, "d", diver, &d[i]);
      assert_int_equal(sim__coro_guarded(a[i]->coro), i < 3);
    }
    assert_int_equal(sim_run(e), 0);
    assert_string_equal(t.order, "HGFEDCBA");
    /* deep(16): the bottom returns frame[0] + seen = 0 + 1, each level above adds its depth: 1 + (1 + ... + 16) = 137. */
    for (int i = 0; i < 8; i++) assert_int_equal(d[i].sum, 137);
    sim_engine_free(e);
  }
  sim__coro_set_guard_budget(-1);  /* read vm.max_map_count again */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sleep_order),   cmocka_unit_test(test_spawn_order),
      cmocka_unit_test(test_kill_releases_and_reshares), cmocka_unit_test(test_kill_variants),
      cmocka_unit_test(test_kill_from_actor), cmocka_unit_test(test_deadlock),      cmocka_unit_test(test_barrier_reuse),
      cmocka_unit_test(test_barrier_kill), cmocka_unit_test(test_waited_notification),
      cmocka_unit_test(test_wait_extend), cmocka_unit_test(test_stop_check),
      cmocka_unit_test(test_unguarded_stacks),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
