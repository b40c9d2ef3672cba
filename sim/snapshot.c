/*
** snapshot.c: exact fast-forward of a periodic steady state (sim_snapshot_, issue 16).
**
** Design notes
** ------------
** A run is a pure function of its state (engine.c invariant 2), and the engine's behaviour
** depends on times only through their differences: completions are now + a duration, sharing
** uses now - last_update. So when the whole state at a moment b equals the state at an earlier
** moment a shifted by P = b - a, the run from b repeats the run from a shifted by P, and goes on
** repeating it for as long as nothing the period did not contain happens. A snapshot is taken at
** a quiet point (sim_engine_on_quiet: no transfer in flight, so no flow, latency wait or solo
** batch holds state the events do not show) and records the pending events and the state words:
** the engine's (each actor's state and what it waits on, each resource's capacity and the execs
** in flight on it, with their work left, rate, and last update and finish relative to now, each
** memory pool's use and peak) and the program's (sim_snapshot_word: what its objects hold, relative to
** its step). Events split by age: S = a's next sequence. Those scheduled since a (sequence >= S)
** are the period's own; the older ones are foreign (a fault, a restart, an async write), fixed
** in absolute time.
**
** Invariants (sim_snapshot_periods proves each before it returns k > 0):
**  1. Same words: actors, resources, execs in flight, pools and the program's state are equal
**     at a and b. An exec in flight at both with equal words made no progress (rate 0, no
**     completion event): every other exec in flight at b started in the period, its completion
**     event is the period's own and moves with it.
**  2. The period's own events at b, by (time, sequence), are a's events due by b shifted by P:
**     the same offsets, callbacks and arguments in the same order. An exec's completion is
**     compared by the exec's place among those in flight, not its address: which of the free
**     list's activities an exec gets changes nothing simulated (engine.c invariant 2).
**  3. The foreign events at b are exactly a's events due after b, untouched (time, sequence,
**     callback, argument), and each is due after b + P: the period neither made, moved nor
**     cancelled one, and none fires inside the period it would have to be shifted with.
**  4. k periods may be skipped when every foreign event is due after b + kP: then none fires
**     in the skipped time, and the state at b + kP is b's own events shifted by kP with the
**     foreign ones where they were. sim_engine_skip makes exactly that state, and adds k times
**     the period's events and context switches to the engine's counts, which by 2 and 1 are
**     the counts the k periods would have added; the execs in flight move with their events. Each resource's units delivered (a statistic
**     nothing simulated reads: sim_link_bytes) grow by k times the period's, equal to the
**     step-by-step sum but for the rounding of the additions.
*/
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "sim/simInt.h"

sim_snapshot *sim_snapshot_new(void) { return base_xcalloc(1, sizeof(sim_snapshot)); }

void sim_snapshot_free(sim_snapshot *s) {
  if (s == NULL) return;
  free(s->ev);
  free(s->words);
  free(s->done);
  free(s->execs);
  free(s->ev_exec);
  free(s->keys);
  free(s);
}

sim_time sim_snapshot_time(const sim_snapshot *s) { return s->now; }

void sim_snapshot_word(sim_snapshot *s, uint64_t w) {
  sim__grow(&s->words, &s->cap_words, s->n_words + 1, sizeof *s->words);
  s->words[s->n_words++] = w;
}

static uint64_t double_bits(double x) {
  uint64_t w;
  memcpy(&w, &x, sizeof w);
  return w;
}

static int by_addr(const void *x, const void *y) {
  uintptr_t a = ((const sim__exec_key *)x)->addr, b = ((const sim__exec_key *)y)->addr;
  return (a > b) - (a < b);
}

static int by_time_seq(const void *x, const void *y) {
  const sim_queued_event *a = x, *b = y;
  if (a->time != b->time) return a->time < b->time ? -1 : 1;
  return (a->order > b->order) - (a->order < b->order);
}

void sim_snapshot_take(sim_engine *e, sim_snapshot *s) {
  assert(e->current == NULL && e->transfers == 0);
  s->now = e->now;
  s->next_seq = e->queue.next_seq;
  s->events = e->events_processed;
  s->switches = e->context_switches;
  s->dropped = e->trace.dropped;
  s->n_ev = sim__eventq_live_events(&e->queue, &s->ev, &s->cap_ev);
  qsort(s->ev, s->n_ev, sizeof *s->ev, by_time_seq);
  s->n_words = 0;
  sim_snapshot_word(s, e->n_actors);
  for (size_t i = 0; i < e->n_actors; i++) {
    const sim_actor *a = e->actors[i];
    sim_snapshot_word(s, (uint64_t)a->state);
    sim_snapshot_word(s, (uint64_t)(uintptr_t)a->withdraw_ctx);
    sim_snapshot_word(s, a->withdraw != NULL);
    sim_snapshot_word(s, (uint64_t)a->wake_result);
  }
  sim_snapshot_word(s, e->n_resources);
  sim__grow(&s->done, &s->cap_done, e->n_resources + 1, sizeof *s->done);
  s->n_execs = 0;
  for (size_t i = 0; i < e->n_resources; i++) {
    const sim_resource *r = e->resources[i];
    assert(r->solo == NULL); /* no transfer in flight */
    sim_snapshot_word(s, double_bits(r->capacity));
    s->done[i] = r->done;
    sim_snapshot_word(s, r->n_uses);
    for (uint32_t u = 0; u < r->n_uses; u++) {
      const sim_action *a = r->uses[u];
      const sim_activity *act = a->owner;
      assert(act->kind == SIM_ACT_EXEC && a->hops == 1);
      sim__grow(&s->execs, &s->cap_execs, s->n_execs + 1, sizeof *s->execs);
      s->execs[s->n_execs++] = a;
      sim_snapshot_word(s, double_bits(act->amount));
      sim_snapshot_word(s, double_bits(a->remaining));
      sim_snapshot_word(s, double_bits(a->rate));
      sim_snapshot_word(s, (uint64_t)(a->last_update - e->now));
      sim_snapshot_word(s, a->finish_at == SIM_TIME_NEVER ? UINT64_MAX : (uint64_t)(a->finish_at - e->now));
      sim_snapshot_word(s, (uint64_t)(uintptr_t)act->wait);
      sim_snapshot_word(s, act->on_done != NULL);
      sim_snapshot_word(s, (uint64_t)(uintptr_t)act->on_done_arg);
    }
  }
  sim_snapshot_word(s, e->n_mempools);
  for (size_t i = 0; i < e->n_mempools; i++) {
    sim_snapshot_word(s, e->mempools[i]->used);
    sim_snapshot_word(s, e->mempools[i]->peak);
  }
  sim_snapshot_word(s, e->n_open);
  sim_snapshot_word(s, e->trace.n_events); /* equal: the period stored nothing, only counted */
  sim_snapshot_word(s, e->trace.n_tracks);
  /* Which exec each event completes: by a search of the execs sorted by address, as a scan of
  ** them per event was quadratic (100,000 CPU workers' execs took minutes a snapshot; issue 31). */
  sim__grow(&s->ev_exec, &s->cap_ev_exec, s->n_ev + 1, sizeof *s->ev_exec);
  sim__grow(&s->keys, &s->cap_keys, s->n_execs + 1, sizeof *s->keys);
  for (size_t x = 0; x < s->n_execs; x++) s->keys[x] = (sim__exec_key){ (uintptr_t)s->execs[x], (uint32_t)x + 1 };
  qsort(s->keys, s->n_execs, sizeof *s->keys, by_addr);
  for (size_t i = 0; i < s->n_ev; i++) {
    sim__exec_key want = { (uintptr_t)s->ev[i].arg, 0 };
    const sim__exec_key *k = s->n_execs ? bsearch(&want, s->keys, s->n_execs, sizeof *s->keys, by_addr) : NULL;
    s->ev_exec[i] = k ? k->index : 0;
  }
}

/* Event i of a and event j of b do the same: the same callback on the same argument, or the
** completion of the exec at the same place among those in flight (invariant 2). */
static int same_deed(const sim_snapshot *a, size_t i, const sim_snapshot *b, size_t j) {
  if (a->ev[i].fn != b->ev[j].fn || a->ev_exec[i] != b->ev_exec[j]) return 0;
  return a->ev_exec[i] != 0 || a->ev[i].arg == b->ev[j].arg;
}

static uint64_t seq_of(const sim_queued_event *ev) { return ev->order >> SIM_SLOT_BITS; }

long sim_snapshot_periods(const sim_snapshot *a, const sim_snapshot *b, long max) {
  sim_time p = b->now - a->now;
  if (p <= 0 || max <= 0 || a->n_words != b->n_words ||
      memcmp(a->words, b->words, a->n_words * sizeof *a->words) != 0)
    return 0; /* invariant 1 */
  size_t ia = 0, ib = 0;
  sim_time foreign = SIM_TIME_NEVER;
  /* a's events due by b against b's own (invariant 2); both lists are in (time, seq) order and
  ** b's foreign events are skipped over here and matched below. */
  for (; ia < a->n_ev && a->ev[ia].time <= b->now; ia++) {
    while (ib < b->n_ev && seq_of(&b->ev[ib]) < a->next_seq) ib++;
    if (ib == b->n_ev) return 0;
    const sim_queued_event *x = &a->ev[ia], *y = &b->ev[ib];
    if (y->time - b->now != x->time - a->now || !same_deed(a, ia, b, ib++)) return 0;
  }
  size_t own = ia, jb = 0;
  /* Invariant 3: a's later events are b's foreign ones, one for one, each after b + P. */
  for (size_t i = 0; i < b->n_ev; i++) {
    const sim_queued_event *y = &b->ev[i];
    if (seq_of(y) >= a->next_seq) {
      jb++;
      continue;
    }
    if (ia == a->n_ev || y->time <= b->now + p) return 0;
    const sim_queued_event *x = &a->ev[ia++];
    if (x->time != y->time || x->order != y->order || x->fn != y->fn || x->arg != y->arg) return 0;
    if (y->time < foreign) foreign = y->time;
  }
  if (ia != a->n_ev || jb != own) return 0;
  /* Invariant 4: the landing b + kP before every foreign event and within the horizon. */
  long k = max;
  if (foreign != SIM_TIME_NEVER && (foreign - 1 - b->now) / p < k) k = (long)((foreign - 1 - b->now) / p);
  if ((SIM_TIME_HORIZON - b->now) / p - 1 < k) k = (long)((SIM_TIME_HORIZON - b->now) / p - 1);
  return k > 0 ? k : 0;
}

void sim_engine_skip(sim_engine *e, const sim_snapshot *a, const sim_snapshot *b, long k) {
  assert(k > 0 && e->current == NULL && e->transfers == 0 && e->now == b->now &&
         e->queue.next_seq == b->next_seq && e->events_processed == b->events);
  sim_time dt = (b->now - a->now) * (sim_time)k;
  e->now += dt;
  sim__eventq_shift(&e->queue, a->next_seq, dt, e->now);
  e->events_processed += (uint64_t)k * (b->events - a->events);
  e->context_switches += (uint64_t)k * (b->switches - a->switches);
  e->trace.dropped += (size_t)k * (b->dropped - a->dropped);
  for (size_t i = 0; i < e->n_resources; i++) {
    sim_resource *r = e->resources[i];
    r->done += (double)k * (b->done[i] - a->done[i]);  /* the statistic, to its rounding */
    for (uint32_t u = 0; u < r->n_uses; u++) {  /* invariant 1: each moves with its event */
      sim_action *x = r->uses[u];
      x->last_update += dt;
      if (x->finish_at != SIM_TIME_NEVER) x->finish_at += dt;
      ((sim_activity *)x->owner)->started += dt;
    }
  }
  e->recent[0] = e->recent[1] = NULL; /* the batch cache holds absolute times */
}
