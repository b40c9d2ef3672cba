/*
** engine.c: the clock, the run loop, actors, activities and barriers (sim_ in sim.h).
**
** Design notes
** ------------
** The engine is a discrete-event loop over sim__eventq (eventq.c). Actors are coroutines
** (coro.h) resumed from event callbacks on the engine's own stack; an actor runs until it
** blocks, then control returns to the callback that resumed it. Work with a rate (exec, the
** byte phase of a comm) is a sim_action shared max-min fairly by maxmin.c, which schedules each
** action's completion event and calls back sim__action_finished.
**
** Invariants:
**  1. Time never goes back: every event is scheduled at or after `now`, and `now` only moves to
**     the time of the event being fired (or forward in sim_run_until).
**  2. Events fire in (time, insertion sequence) order; nothing depends on addresses, hashes or
**     the wall clock, so a run is a pure function of its inputs.
**  3. At most one actor runs at a time (`current`), and only the engine's stack resumes actors:
**     an actor never switches straight into another. A wake-up is always an event at `now`,
**     so an actor woken by another actor runs after the waker blocks, in wake order.
**  4. A blocked actor is resumed by exactly one thing, its `wake_event`; while it is blocked on
**     activities or a barrier, `withdraw` knows how to undo that wait. Killing it cancels the
**     event and runs withdraw, so a killed actor is never resumed and holds nothing.
**  5. An activity is owned by exactly one of: the sim_wait_all collecting it (freed there), its
**     on_done callback (freed after the callback), or nobody yet (freed by the engine at the
**     end). A waited activity's on_done is only a notification: it runs at completion, before
**     the waiter is counted down, and a kill that withdraws the wait never runs it. A
**     notification may add a follow-up activity to its own wait (sim_wait_extend): the wait
**     then owns it like the others.
**  6. Activities come from a free list in chunks; steady-state operation allocates no events
**     and no activities.
**  7. Solo transfers (sim__comm_start_solo, the collectives' comms; issue 16): a comm started
**     when every link of its route is idle (no flow, no other solo transfer, capacity > 0) and
**     left alone would start flowing at F = start + route latency, alone, at its slowest link's
**     capacity c (maxmin.c's lone-flow rate), and complete at T = F + sim__duration_ps(bytes, c):
**     the very numbers of the event-by-event path. A solo transfer holds its links (res->solo)
**     and is completed at T by its batch's event, with no event of its own.
**  8. Whatever would change the sharing of a held link (an action starting on it, a capacity
**     change: a fault, a degradation) first turns the solo transfer back into what it would be
**     now: a latency wait ending at F while now < F, else the lone flow started at F at rate c
**     with remaining = bytes, last_update = F and its completion event at T (maxmin.c's
**     sim__action_resume). From there the shared solve sees the state it would have seen, so
**     every time stays the event-by-event one. Reading a link's bytes counts a solo transfer as
**     that lone flow. A withdrawn solo transfer releases its links.
**  9. Completion order: a batch holds the solo transfers due at one picosecond, sorted by F and
**     then by start, the order their per-transfer completion events would have had (each was
**     pushed when its latency ended; latency ends fire by time, then by start). The batch fires
**     as one event, pushed when its first transfer started: against other events at the same
**     picosecond it comes in that event's place, which can differ from where the per-transfer
**     events would have been. Collectives tolerate this (a round waits for all its transfers;
**     reductions that can meet in one round are applied in plan order, collective.c), and
**     tests/sim/test_collective_ops.c checks times and buffers both ways, ties included.
** 10. Quiet points (sim_engine_on_quiet, fast-forward's snapshots, snapshot.c): after the last
**     event of a picosecond, with no transfer in flight (no latency wait, flow or solo batch:
**     state the events do not show). Execs may be: each is one action on one cpu, whose
**     remaining work, rate, last update and finish time say all there is to it.
** 11. Holds (sim__hold_new; a collective run in closed form, collective.c): an activity of no
**     work that sits in res->solo of every link and cpu the run will use, counted as a transfer
**     in flight. Touching such a resource (an action starting on it, a capacity change, reading
**     its bytes) first calls the hold's on_done, which turns the run back into the solo
**     transfers and execs in flight at `now` (sim__comm_resume, sim__exec_resume) and
**     releases every held resource; invariant 8 then applies to them. A held cpu's execs are
**     the collective's reductions, shared as maxmin.c shares a lone cpu's actions.
*/
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/simInt.h"

#define ACTOR_STACK_BYTES ((size_t)256 * 1024)
#define ACTIVITY_CHUNK 256

struct sim_activity_chunk {
  sim_activity_chunk *next;  /* previous allocation */
  sim_activity acts[ACTIVITY_CHUNK]; /* the activities */
};

void sim__grow_to(void *arr, size_t *cap, size_t need, size_t elem) {
  size_t n = *cap ? *cap : 8;
  while (n < need) n *= 2;
  void **p = arr;
  *p = base_xrealloc(*p, n * elem);
  *cap = n;
}

sim_time sim_time_from_s(double seconds) {
  double ps = seconds * (double)SIM_PS_PER_S;
  /* 2^63 as a double: llround of anything at or past it is undefined (it wrapped to INT64_MIN). */
  if (ps >= 9223372036854775808.0) return SIM_TIME_NEVER;
  if (ps <= -9223372036854775808.0) return -SIM_TIME_NEVER;
  return (sim_time)llround(ps);
}
double   sim_time_to_s(sim_time t) { return (double)t / (double)SIM_PS_PER_S; }

/* ---- engine and raw events ------------------------------------------------------------ */

static void batch_free(sim_solo_batch *b) {
  free(b->acts);
  free(b);
}

sim_engine *sim_engine_new(void) {
  sim_engine *e = calloc(1, sizeof *e);
  if (e == NULL) return NULL;
  sim__eventq_init(&e->queue);
  sim__trace_init(&e->trace);
  return e;
}

void sim_engine_free(sim_engine *e) {
  if (e == NULL) return;
  assert(e->current == NULL);
  for (size_t i = 0; i < e->n_actors; i++) {
    sim_coro_free(e->actors[i]->coro);
    free(e->actors[i]->name);
    free(e->actors[i]);
  }
  free(e->actors);
  for (sim_activity_chunk *c = e->activity_chunks, *next; c != NULL; c = next) {
    next = c->next;
    for (size_t i = 0; i < ACTIVITY_CHUNK; i++) sim__action_fini(&c->acts[i].action);
    free(c);
  }
  for (size_t i = 0; i < e->n_resources; i++) {
    sim__resource_fini(e->resources[i]);
    free(e->resources[i]);
  }
  free(e->resources);
  for (size_t i = 0; i < e->n_mempools; i++) {
    free(e->mempools[i]->name);
    free(e->mempools[i]);
  }
  free(e->mempools);
  for (size_t i = 0; i < e->n_open; i++) batch_free(e->open[e->open_first + i]);
  free(e->open);
  for (sim_solo_batch *b = e->free_batches, *next; b != NULL; b = next) {
    next = b->next_free;
    batch_free(b);
  }
  sim__solver_free(&e->solver);
  free(e->res_slot);
  sim__trace_free(&e->trace);
  sim__eventq_free(&e->queue);
  free(e);
}

sim_time sim_now(const sim_engine *e) { return e->now; }
uint64_t sim_events_processed(const sim_engine *e) { return e->events_processed; }
size_t   sim_pending_events(const sim_engine *e) { return e->queue.live; }

sim_event_handle sim_schedule(sim_engine *e, sim_time at, sim_event_fn fn, void *arg) {
  assert(at >= e->now); /* invariant 1 */
  return sim__eventq_push(&e->queue, at, fn, arg);
}

int sim_cancel(sim_engine *e, sim_event_handle h) { return sim__eventq_cancel(&e->queue, h); }

static void fire_next(sim_engine *e) {
  sim_time at;
  sim_event_fn fn;
  void *arg;
  int got = sim__eventq_pop(&e->queue, &at, &fn, &arg);
  assert(got && at >= e->now);
  (void)got;
  e->now = at;
  e->events_processed++;
  fn(e, arg);
  /* Invariant 10: quiet once no transfer is in flight and this picosecond's last event has fired. */
  if (e->quiet != NULL && e->transfers == 0 && e->queue.head == e->queue.now.n) {
    sim_event_fn quiet = e->quiet;
    e->quiet = NULL;
    quiet(e, e->quiet_arg);
  }
}

void sim_engine_on_quiet(sim_engine *e, sim_event_fn fn, void *arg) {
  e->quiet = fn;
  e->quiet_arg = arg;
}

void sim_set_stop_check(sim_engine *e, sim_predicate_fn stop, void *arg) {
  e->stop = stop;
  e->stop_arg = arg;
}

int sim_stopped(const sim_engine *e) { return e->stopped; }

int sim_stop_asked(sim_engine *e) { return e->stop != NULL && e->stop(e->stop_arg) != 0; }

/* Whether the host asked the run loop to return now; tested once per SIM_STOP_CHECK_EVENTS
** events, so a run without a test pays one branch per event. */
static int stop_now(sim_engine *e) {
  if (e->stop == NULL || e->events_processed % SIM_STOP_CHECK_EVENTS != 0) return 0;
  return e->stopped = e->stop(e->stop_arg) != 0;
}

int sim_run(sim_engine *e) {
  assert(e->current == NULL);
  while (e->queue.live > 0) {
    if (stop_now(e)) return 1;
    fire_next(e);
  }
  for (size_t i = 0; i < e->n_actors; i++)
    if (e->actors[i]->state == SIM_ACTOR_BLOCKED) return -1;
  return 0;
}

void sim_run_until(sim_engine *e, sim_time until) {
  assert(e->current == NULL);
  while (sim__eventq_peek(&e->queue) <= until) fire_next(e);
  if (until != SIM_TIME_NEVER && until > e->now) e->now = until;
}

int sim_run_while(sim_engine *e, sim_predicate_fn going, void *arg) {
  assert(e->current == NULL);
  while (going(arg)) {
    if (e->queue.live == 0) return -1;
    if (stop_now(e)) return 1;
    fire_next(e);
  }
  return 0;
}

/* ---- actors ---------------------------------------------------------------------------- */

static void actor_body(void *arg) {
  sim_actor *a = arg;
  a->fn(a, a->arg);
  a->state = SIM_ACTOR_FINISHED;
}

/* Runs `a` until it blocks, finishes or kills itself; reaps its stack if it is over. */
static void actor_resume(sim_engine *e, sim_actor *a) {
  assert(e->current == NULL); /* invariant 3 */
  a->state = SIM_ACTOR_RUNNING;
  e->current = a;
  e->context_switches++;
  sim_coro_resume(a->coro);
  e->context_switches++;
  e->current = NULL;
  if (a->state == SIM_ACTOR_KILLED && a->on_kill != NULL) a->on_kill(a, a->on_kill_arg);
  if (a->state == SIM_ACTOR_FINISHED || a->state == SIM_ACTOR_KILLED) {
    sim_coro_free(a->coro);
    a->coro = NULL;
  }
}

static void wake_event(sim_engine *e, void *arg) {
  sim_actor *a = arg;
  a->wake_event = SIM_EVENT_NONE;
  actor_resume(e, a);
}


/* An actor's stack could not be mapped. Guarded stacks are two of the kernel's vm.max_map_count
** mappings each, which a run of some 32000 actors (a 6-slice v4-8192 pod, numerics off) used to
** reach (abort(), exit 134); coro.c now guards only as many as a quarter of the limit holds, so
** this is the host's memory (or a limit lowered below what the libraries need). It goes where
** running out of host memory goes (base.h: the CLI refuses the run, exit 2), with the count. */
static _Noreturn void no_stack(const sim_engine *e) {
  long limit = sim__coro_max_map_count();
  fprintf(stderr, "podsim: cannot map the stack of actor %zu (%zu KiB): the host's memory or its "
          "vm.max_map_count (%ld) is exhausted; use fewer replicas or workers\n",
          e->n_actors + 1, ACTOR_STACK_BYTES / 1024, limit);
  base_out_of_memory((e->n_actors + 1) * ACTOR_STACK_BYTES);
  abort();  /* a handler that returned: base.h says it must not */
}
sim_actor *sim_actor_spawn(sim_engine *e, const char *name, sim_actor_fn fn, void *arg) {
  sim_actor *a = base_xcalloc(1, sizeof *a);
  a->engine = e;
  a->name = base_strdup(name);
  a->fn = fn;
  a->arg = arg;
  a->coro = sim_coro_new(ACTOR_STACK_BYTES, actor_body, a);
  if (a->coro == NULL) no_stack(e);
  a->state = SIM_ACTOR_READY;
  a->wake_event = sim__eventq_push(&e->queue, e->now, wake_event, a);
  sim__grow(&e->actors, &e->cap_actors, e->n_actors + 1, sizeof *e->actors);
  e->actors[e->n_actors++] = a;
  return a;
}

void sim_actor_on_kill(sim_actor *a, sim_actor_cleanup_fn fn, void *arg) {
  a->on_kill = fn;
  a->on_kill_arg = arg;
}

const char *sim_actor_name(const sim_actor *a) { return a->name; }
sim_engine *sim_actor_engine(sim_actor *a) { return a->engine; }
int sim_actor_is_alive(const sim_actor *a) {
  return a->state != SIM_ACTOR_FINISHED && a->state != SIM_ACTOR_KILLED;
}
uint64_t sim_context_switches(const sim_engine *e) { return e->context_switches; }
sim_actor *sim_current_actor(const sim_engine *e) { return e->current; }

int sim__actor_block(sim_actor *self, sim_withdraw_fn withdraw, void *ctx) {
  assert(self->engine->current == self && self->state == SIM_ACTOR_RUNNING);
  self->state = SIM_ACTOR_BLOCKED;
  self->withdraw = withdraw;
  self->withdraw_ctx = ctx;
  sim_coro_yield(self->coro);
  assert(self->state == SIM_ACTOR_RUNNING); /* invariant 4: a killed actor never gets here */
  self->withdraw = NULL;
  self->withdraw_ctx = NULL;
  return self->wake_result;
}

static void schedule_wake(sim_actor *a, int result) {
  assert(a->wake_event.generation == 0); /* invariant 4 */
  a->wake_result = result;
  a->wake_event = sim__eventq_push(&a->engine->queue, a->engine->now, wake_event, a);
}

void sim__actor_wake(sim_actor *a, int result) {
  assert(a->state == SIM_ACTOR_BLOCKED);
  schedule_wake(a, result);
}

static void run_on_kill(sim_engine *e, void *arg) {
  (void)e;
  sim_actor *a = arg;
  a->on_kill(a, a->on_kill_arg);
}

void sim_actor_kill(sim_actor *a) {
  if (!sim_actor_is_alive(a)) return;
  sim_engine *e = a->engine;
  if (e->current == a) { /* suicide: the stack in use is freed once control is back home */
    a->state = SIM_ACTOR_KILLED;
    e->context_switches++;
    sim_coro_yield(a->coro);
    assert(0 && "a killed actor was resumed");
  }
  sim__eventq_cancel(&e->queue, a->wake_event);
  a->wake_event = SIM_EVENT_NONE;
  sim_withdraw_fn withdraw = a->state == SIM_ACTOR_BLOCKED ? a->withdraw : NULL;
  a->state = SIM_ACTOR_KILLED;
  if (withdraw != NULL) withdraw(a, a->withdraw_ctx);
  sim_coro_free(a->coro);
  a->coro = NULL;
  if (a->on_kill == NULL) return;
  /* The hook runs on the engine's stack, as sim.h promises: at once when killed from an event,
  ** else from an event at the current time once the killing actor has blocked. */
  if (e->current == NULL) a->on_kill(a, a->on_kill_arg);
  else sim__eventq_push(&e->queue, e->now, run_on_kill, a);
}

size_t sim_deadlocked_actors(const sim_engine *e, const char **names, size_t max) {
  if (e->queue.live > 0) return 0; /* something may still wake them */
  size_t n = 0;
  for (size_t i = 0; i < e->n_actors; i++) {
    if (e->actors[i]->state != SIM_ACTOR_BLOCKED) continue;
    if (n < max) names[n] = e->actors[i]->name;
    n++;
  }
  return n;
}

int sim_sleep(sim_actor *self, sim_time duration) {
  sim_engine *e = self->engine;
  assert(duration >= 0 && e->current == self);
  self->wake_result = SIM_OK;
  self->wake_event = sim__eventq_push(&e->queue, sim_time_add(e->now, duration), wake_event, self);
  return sim__actor_block(self, NULL, NULL);
}

/* ---- activities ------------------------------------------------------------------------ */

/* A fresh activity of `amount` over `hops` resources (the caller fills action.res). */
static sim_activity *activity_new(sim_engine *e, sim_activity_kind kind, double amount,
                                  size_t hops) {
  assert(amount >= 0);
  if (e->free_activities == NULL) {
    sim_activity_chunk *c = base_xcalloc(1, sizeof *c);
    c->next = e->activity_chunks;
    e->activity_chunks = c;
    for (size_t i = ACTIVITY_CHUNK; i-- > 0;) {
      c->acts[i].action.res = c->acts[i].action.inline_res;
      c->acts[i].next_free = e->free_activities;
      e->free_activities = &c->acts[i];
    }
  }
  sim_activity *act = e->free_activities;
  e->free_activities = act->next_free;
  /* Field by field: a compound literal would clear the action that sim__action_init then
  ** writes again (2% of the pod step's instructions). */
  act->engine = e;
  act->kind = kind;
  act->state = SIM_ACT_LATENCY;
  act->started = e->now;
  act->amount = amount;
  act->latency_event = SIM_EVENT_NONE;
  sim__action_init(&act->action, hops, amount, act);
  act->wait = NULL;
  act->on_done = NULL;
  act->on_done_arg = NULL;
  act->next_free = NULL;
  if (kind == SIM_ACT_COMM) e->transfers++;
  return act;
}

static void activity_free(sim_activity *act) {
  sim_engine *e = act->engine;
  if (act->kind == SIM_ACT_COMM && act->state != SIM_ACT_DONE) e->transfers--; /* withdrawn */
  sim__action_fini(&act->action);
  act->next_free = e->free_activities;
  e->free_activities = act;
}

static void activity_complete(sim_engine *e, sim_activity *act) {
  act->state = SIM_ACT_DONE;
  if (act->kind == SIM_ACT_COMM) e->transfers--;
  if (e->trace.enabled) {
    sim_track_kind kind = act->kind == SIM_ACT_EXEC ? SIM_TRACK_CPU : SIM_TRACK_LINK;
    for (size_t h = 0; h < act->action.hops; h++)
      sim__trace_resource_span(e, act->action.res[h], kind, act->started, e->now, act->amount);
  }
  if (act->on_done != NULL) act->on_done(e, act, act->on_done_arg);
  if (act->wait != NULL) { /* invariant 5 */
    if (--act->wait->left == 0) sim__actor_wake(act->wait->waiter, SIM_OK);
  } else if (act->on_done != NULL) {
    activity_free(act);
  }
}

void sim__action_finished(sim_engine *e, sim_action *a) { activity_complete(e, a->owner); }

sim_activity *sim_exec_start(sim_engine *e, sim_cpu *cpu, double flops) {
  sim_activity *act = activity_new(e, SIM_ACT_EXEC, flops, 1);
  act->action.res[0] = &cpu->res;
  act->state = SIM_ACT_FLOWING;
  sim__action_start(e, &act->action);
  return act;
}

static void latency_done(sim_engine *e, void *arg) {
  sim_activity *act = arg;
  act->latency_event = SIM_EVENT_NONE;
  if (act->amount == 0 || act->action.hops == 0) {
    activity_complete(e, act);
    return;
  }
  act->state = SIM_ACT_FLOWING;
  sim__action_start(e, &act->action);
}

/* A comm started at `started` (<= now) in its latency wait, which ends at or after now. */
static sim_activity *comm_latency(sim_engine *e, sim_link *const *route, size_t hops, double bytes,
                                  sim_time started) {
  sim_activity *act = activity_new(e, SIM_ACT_COMM, bytes, hops);
  sim_time latency = 0;
  for (size_t h = 0; h < hops; h++) {
    act->action.res[h] = &route[h]->res;
    latency += route[h]->latency;
  }
  assert(started + latency >= e->now);
  act->state = SIM_ACT_LATENCY;
  act->started = started;
  act->latency_event = sim__eventq_push(&e->queue, started + latency, latency_done, act);
  return act;
}

sim_activity *sim_comm_start(sim_engine *e, sim_link *const *route, size_t hops, double bytes) {
  return comm_latency(e, route, hops, bytes, e->now);
}

void sim_activity_on_done(sim_activity *act, sim_activity_done_fn fn, void *arg) {
  assert(act->state != SIM_ACT_DONE && act->wait == NULL);
  act->on_done = fn;
  act->on_done_arg = arg;
}

/* ---- solo transfers (invariants 7 to 9) ------------------------------------------------ */

void sim_engine_set_closed_form(sim_engine *e, int on) { e->solo_off = !on; }

/* Where a batch completing at `at` is or goes in the open list (its entries from open_first on).
** Batches are kept by time: a new one is nearly always the latest, found at the end. */
static size_t open_index(const sim_engine *e, sim_time at) {
  sim_solo_batch *const *open = e->open + e->open_first;
  size_t lo = 0, hi = e->n_open;
  if (hi > 0 && open[hi - 1]->at < at) return hi;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (open[mid]->at < at) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static void solo_fire(sim_engine *e, void *arg);
static sim_solo_batch *batch_open(sim_engine *e, sim_time at, size_t i);

/* The open batch completing at `at`, made (and its event pushed) if there is none. */
static sim_solo_batch *batch_at(sim_engine *e, sim_time at) {
  /* The transfers a batch's callbacks start end at a few times only (a ring step's chunks are
  ** of two lengths): the last two batches found answer nearly every call without a search. */
  for (int k = 0; k < 2; k++)
    if (e->recent[k] != NULL && e->recent[k]->at == at && e->recent[k]->is_open) return e->recent[k];
  size_t i = open_index(e, at);
  sim_solo_batch *b = i < e->n_open ? e->open[e->open_first + i] : NULL;
  if (b == NULL || b->at != at) b = batch_open(e, at, i);
  e->recent[1] = e->recent[0];
  e->recent[0] = b;
  return b;
}

/* A new batch completing at `at`, entry i of the open list, its event pushed. */
static sim_solo_batch *batch_open(sim_engine *e, sim_time at, size_t i) {
  sim_solo_batch *b = e->free_batches;
  if (b != NULL) e->free_batches = b->next_free;
  else b = base_xcalloc(1, sizeof *b);
  b->at = at;
  b->n = b->live = 0;
  b->firing = 0;
  b->is_open = 1;
  if (e->open_first + e->n_open == e->cap_open && e->open_first > 0) { /* slide down first */
    memmove(e->open, e->open + e->open_first, e->n_open * sizeof *e->open);
    e->open_first = 0;
  }
  sim__grow(&e->open, &e->cap_open, e->open_first + e->n_open + 1, sizeof *e->open);
  sim_solo_batch **open = e->open + e->open_first;
  memmove(open + i + 1, open + i, (e->n_open - i) * sizeof *open);
  open[i] = b;
  e->n_open++;
  b->event = sim__eventq_push(&e->queue, at, solo_fire, b);
  return b;
}

/* Takes b out of the open list (its event fires, or it was withdrawn). The earliest, the one
** firing, leaves by moving open_first: the list can hold hundreds of batches (a ring whose
** chunks differ by a float drifts apart round by round), too many to shift at every event. */
static void batch_close(sim_engine *e, sim_solo_batch *b) {
  size_t i = open_index(e, b->at);
  sim_solo_batch **open = e->open + e->open_first;
  assert(i < e->n_open && open[i] == b);
  if (i == 0) e->open_first++;
  else memmove(open + i, open + i + 1, (e->n_open - i - 1) * sizeof *open);
  if (--e->n_open == 0) e->open_first = 0;
  b->is_open = 0;
}

/* Files act in its batch, after the entries whose bytes start no later (invariant 9). */
static void batch_add(sim_engine *e, sim_activity *act) {
  sim_solo_batch *b = batch_at(e, act->action.finish_at);
  sim__grow(&b->acts, &b->cap, (size_t)b->n + 1, sizeof *b->acts);
  uint32_t i = b->n++;
  sim_time flows = act->action.last_update;
  for (; i > 0 && (b->acts[i - 1] == NULL || b->acts[i - 1]->action.last_update > flows); i--) {
    b->acts[i] = b->acts[i - 1];
    if (b->acts[i] != NULL) b->acts[i]->batch_index = i;
  }
  b->acts[i] = act;
  b->live++;
  act->batch = b;
  act->batch_index = i;
}

static void batch_recycle(sim_engine *e, sim_solo_batch *b) {
  b->next_free = e->free_batches;
  e->free_batches = b;
}

/* Lets go of act's links and of its batch entry; a batch left empty before its time is
** withdrawn with its event, which the event-by-event run would not have had either. */
static void solo_release(sim_engine *e, sim_activity *act) {
  sim_solo_batch *b = act->batch;
  for (size_t h = 0; h < act->action.hops; h++) act->action.res[h]->solo = NULL;
  b->acts[act->batch_index] = NULL;
  act->batch = NULL;
  if (--b->live > 0 || b->firing) return;
  sim__eventq_cancel(&e->queue, b->event);
  batch_close(e, b);
  batch_recycle(e, b);
}

/* A solo transfer started at `started` (<= now), or NULL when its links are not free. */
static sim_activity *comm_solo(sim_engine *e, sim_link *const *route, size_t hops, double bytes,
                               sim_time started) {
  if (e->solo_off || bytes == 0 || hops == 0) return NULL;
  sim_time latency = 0;
  double rate = INFINITY;
  for (size_t h = 0; h < hops; h++) {
    const sim_resource *r = &route[h]->res;
    /* Shared or stalled from the start: the event-by-event path. */
    if (r->n_uses > 0 || r->solo != NULL || !(r->capacity > 0)) return NULL;
    latency += route[h]->latency;
    if (r->capacity < rate) rate = r->capacity;
  }
  sim_time d = sim__duration_ps(bytes, rate);
  if (d == SIM_TIME_NEVER || d > SIM_TIME_NEVER - started - latency || started + latency + d < e->now) return NULL;
  sim_activity *act = activity_new(e, SIM_ACT_COMM, bytes, hops);
  for (size_t h = 0; h < hops; h++) {
    if (route[h]->res.solo != NULL) { /* the route crosses a link twice: it shares it */
      while (h-- > 0) route[h]->res.solo = NULL;
      activity_free(act);
      return NULL;
    }
    route[h]->res.solo = act;
    act->action.res[h] = &route[h]->res;
  }
  act->state = SIM_ACT_SOLO;
  act->started = started;
  act->action.rate = rate;
  act->action.last_update = started + latency; /* F: the bytes start to flow */
  act->action.finish_at = started + latency + d; /* T */
  batch_add(e, act);
  return act;
}

sim_activity *sim__comm_start_solo(sim_engine *e, sim_link *const *route, size_t hops, double bytes) {
  sim_activity *act = comm_solo(e, route, hops, bytes, e->now);
  return act != NULL ? act : sim_comm_start(e, route, hops, bytes);
}

sim_activity *sim__comm_resume(sim_engine *e, sim_link *const *route, size_t hops, double bytes,
                               sim_time started) {
  sim_activity *act = comm_solo(e, route, hops, bytes, started);
  return act != NULL ? act : comm_latency(e, route, hops, bytes, started);
}

sim_activity *sim__exec_resume(sim_engine *e, sim_cpu *cpu, double flops, sim_time started, double remaining,
                               sim_time since, double rate, sim_time finish_at) {
  sim_activity *act = activity_new(e, SIM_ACT_EXEC, flops, 1);
  act->action.res[0] = &cpu->res;
  act->state = SIM_ACT_FLOWING;
  act->started = started;
  act->action.remaining = remaining;
  act->action.finish_at = finish_at;
  sim__action_resume(e, &act->action, since, rate);
  return act;
}

sim_activity *sim__hold_new(sim_engine *e, sim_activity_done_fn fall_back, void *arg) {
  sim_activity *hold = activity_new(e, SIM_ACT_COMM, 0, 0);
  hold->state = SIM_ACT_HELD;
  hold->on_done = fall_back;
  hold->on_done_arg = arg;
  return hold;
}

void sim__hold_free(sim_activity *hold) {
  assert(hold->state == SIM_ACT_HELD);
  activity_free(hold);
}

void sim__solo_fall_back(sim_engine *e, sim_activity *act) {
  assert(act->state == SIM_ACT_SOLO);
  solo_release(e, act);
  sim_time flows = act->action.last_update;
  if (e->now < flows) { /* still in its latency: the wait it stands for */
    act->state = SIM_ACT_LATENCY;
    act->action.rate = -1;
    act->action.finish_at = SIM_TIME_NEVER;
    act->latency_event = sim__eventq_push(&e->queue, flows, latency_done, act);
    return;
  }
  act->state = SIM_ACT_FLOWING;
  for (size_t h = 0; h < act->action.hops; h++)
    assert(act->action.res[h]->n_uses == 0); /* a solo transfer's links carry nothing else */
  sim__action_resume(e, &act->action, flows, act->action.rate);
}

/* A batch's time has come: its transfers complete in order, as their own events would have.
** Done before any callback runs, the batch leaves the open list: what the callbacks start
** completes later. */
static void solo_fire(sim_engine *e, void *arg) {
  sim_solo_batch *b = arg;
  assert(e->n_open > 0 && e->open[e->open_first] == b); /* the earliest open batch */
  batch_close(e, b);
  b->firing = 1;
  for (uint32_t i = 0; i < b->n; i++) { /* a callback may make a later entry fall back: reread */
    sim_activity *act = b->acts[i];
    if (act == NULL) continue;
    solo_release(e, act);
    /* What complete_event does for the lone flow: its bytes delivered in one addition. */
    for (size_t h = 0; h < act->action.hops; h++) act->action.res[h]->done += act->action.remaining;
    act->action.remaining = 0;
    act->action.last_update = e->now;
    activity_complete(e, act);
  }
  batch_recycle(e, b);
}

void sim__activity_withdraw(sim_activity *act) {
  sim_engine *e = act->engine;
  /* As the flow or wait it stands for: a flow's bytes so far count on its links. */
  if (act->state == SIM_ACT_SOLO) sim__solo_fall_back(e, act);
  if (act->state == SIM_ACT_LATENCY) sim__eventq_cancel(&e->queue, act->latency_event);
  else if (act->state == SIM_ACT_FLOWING) sim__action_withdraw(e, &act->action);
  activity_free(act);
}

static void wait_withdraw(sim_actor *victim, void *ctx) {
  (void)victim;
  sim_wait *w = ctx;
  for (size_t i = 0; i < w->n; i++)
    if (w->acts[i]) sim__activity_withdraw(w->acts[i]);
}

int sim_wait_all(sim_actor *self, sim_activity **acts, size_t n) {
  sim_wait w = {.waiter = self, .acts = acts, .n = n};
  for (size_t i = 0; i < n; i++) {
    if (acts[i] == NULL) continue;
    assert(acts[i]->wait == NULL);
    if (acts[i]->state == SIM_ACT_DONE) continue;
    acts[i]->wait = &w;
    w.left++;
  }
  int rc = w.left > 0 ? sim__actor_block(self, wait_withdraw, &w) : SIM_OK;
  for (size_t i = 0; i < n; i++)
    if (acts[i]) activity_free(acts[i]);
  return rc;
}

/* Called from from's notification, before activity_complete counts from down: the wait it
** belongs to cannot reach zero in between (invariant 5). */
void sim_wait_extend(sim_activity *from, size_t slot, sim_activity *next) {
  sim_wait *w = from->wait;
  assert(w != NULL && slot < w->n && w->acts[slot] == NULL && next->wait == NULL && next->state != SIM_ACT_DONE);
  w->acts[slot] = next;
  next->wait = w;
  w->left++;
}

int sim_exec(sim_actor *self, sim_cpu *cpu, double flops) {
  sim_activity *act = sim_exec_start(self->engine, cpu, flops);
  return sim_wait_all(self, &act, 1);
}

int sim_comm(sim_actor *self, sim_link *const *route, size_t hops, double bytes) {
  sim_activity *act = sim_comm_start(self->engine, route, hops, bytes);
  return sim_wait_all(self, &act, 1);
}

/* ---- barriers -------------------------------------------------------------------------- */

struct sim_barrier {
  sim_engine *engine;        /* owner */
  int parties;               /* arrivals that release the group */
  sim_actor **waiting;       /* arrivals of the current generation, in arrival order */
  int n_waiting;             /* entries in waiting */
  uint64_t generation;       /* releases so far */
};

sim_barrier *sim_barrier_new(sim_engine *e, int parties) {
  assert(parties > 0);
  sim_barrier *b = base_xcalloc(1, sizeof *b);
  b->engine = e;
  b->parties = parties;
  b->waiting = base_xcalloc((size_t)parties, sizeof *b->waiting);
  return b;
}

void sim_barrier_free(sim_barrier *b) {
  if (b == NULL) return;
  free(b->waiting);
  free(b);
}

static void barrier_withdraw(sim_actor *victim, void *ctx) {
  sim_barrier *b = ctx;
  int j = 0;
  for (int i = 0; i < b->n_waiting; i++)
    if (b->waiting[i] != victim) b->waiting[j++] = b->waiting[i];
  b->n_waiting = j;
}

int sim_barrier_wait(sim_actor *self, sim_barrier *b) {
  assert(b->n_waiting < b->parties);
  b->waiting[b->n_waiting++] = self;
  if (b->n_waiting == b->parties) {
    /* The last arrival blocks too and is woken last: everyone resumes in arrival order. The
    ** waking is done before blocking, so no withdraw is needed for the releaser. */
    b->generation++;
    b->n_waiting = 0;
    for (int i = 0; i < b->parties - 1; i++) sim__actor_wake(b->waiting[i], SIM_OK);
    schedule_wake(self, SIM_OK);
    return sim__actor_block(self, NULL, NULL);
  }
  return sim__actor_block(self, barrier_withdraw, b);
}
