/*
** maxmin.c: max-min fair sharing of cpus and links between concurrent actions (sim__action_,
** sim__resource_).
**
** Progressive filling, as SimGrid's CM02 model: every resource splits what it has left evenly
** among the actions not yet fixed; the resource offering the smallest such share is the
** bottleneck, its actions get that share and use it up on every resource they cross; repeat.
** Ties go to the resource created first, and a bottleneck's actions are visited in creation
** order, so every floating-point operation happens in an order fixed by the scenario.
**
** Only the connected component (resources linked through shared actions) of what changed is
** re-solved: on a ring of 1024 links with one flow each, a flow ending touches one link. Actions
** are advanced lazily: `remaining` is brought up to date only when their component is re-solved,
** and an action whose rate did not change keeps its completion event.
*/
#include <assert.h>
#include <math.h>
#include <stdlib.h>

#include "sim/simInt.h"

void sim__resource_init(sim_engine *e, sim_resource *r, const char *name, double capacity) {
  assert(capacity >= 0);
  *r = (sim_resource){.engine = e, .name = base_strdup(name), .id = e->solver.next_resource_id++,
                      .capacity = capacity, .trace_track = -1, .cap_uses = 1};
  r->uses = &r->one;
}

void sim__resource_fini(sim_resource *r) {
  free(r->name);
  if (r->uses != &r->one) free(r->uses);
}

void sim__solver_free(sim_solver *s) {
  free(s->dirty);
  free(s->comp_res);
  free(s->comp_act);
}

/* What a's current rate has moved since its last update (nothing before last_update: a solo
** transfer's bytes start after its latency). */
static double moved_since_update(const sim_engine *e, const sim_action *a) {
  return sim__action_moved(a->rate, a->remaining, a->last_update, e->now);
}

double sim__action_moved(double rate, double remaining, sim_time since, sim_time now) {
  if (rate <= 0 || now <= since) return 0;
  double moved = rate * sim_time_to_s(now - since);
  return moved < remaining ? moved : remaining;
}

/* A collective holding r in closed form hands back its transfers and reductions in flight, and
** every resource it holds (engine.c invariant 11). */
static void hand_back_hold(const sim_resource *r) {
  if (r->solo != NULL && r->solo->state == SIM_ACT_HELD) r->solo->on_done(r->engine, r->solo, r->solo->on_done_arg);
}

double sim__resource_done(const sim_engine *e, const sim_resource *r) {
  hand_back_hold(r); /* its transfers so far are made real first */
  double done = r->done;
  for (size_t i = 0; i < r->n_uses; i++) done += moved_since_update(e, r->uses[i]);
  /* A solo transfer is the lone flow it stands for: the same formula (engine.c invariant 7). */
  if (r->solo != NULL) done += moved_since_update(e, &r->solo->action);
  return done;
}

sim_time sim__duration_ps(double amount, double rate) {
  assert(rate > 0 && amount >= 0);
  double ps = amount / rate * (double)SIM_PS_PER_S;
  if (ps >= (double)SIM_TIME_HORIZON) return SIM_TIME_NEVER;
  /* amount/rate of an exact picosecond count can come out a few ulps high; rounding that up
  ** would add a spurious picosecond to every step of a collective. Below 2^52, adding and
  ** taking away 2^52 rounds to the nearest integer, ties to even (nearbyint's answer in the
  ** default rounding mode, which nothing changes); from 2^52 on every double is an integer.
  ** Written out because without SSE4.1 nearbyint and ceil are library calls, and this runs
  ** once per flow. */
  double nearest = ps < 0x1p52 ? (ps + 0x1p52) - 0x1p52 : ps;
  if (fabs(ps - nearest) <= 1e-12 * nearest) return (sim_time)nearest;
  /* ps is not an integer here, so below 2^52: its ceiling is nearest or the next one up. */
  return (sim_time)nearest + (nearest < ps);
}

void sim__action_init(sim_action *a, size_t hops, double amount, void *owner) {
  /* Field by field: id and last_update are set when it starts, fixed and new_rate by every
  ** solve before they are read, and clearing the inline route that the caller then fills
  ** would only double the stores (a compound literal: 2% of a pod step's instructions). */
  a->remaining = amount;
  a->rate = -1;
  a->finish_at = SIM_TIME_NEVER;
  a->done_event = SIM_EVENT_NONE;
  a->hops = hops;
  a->stamp = 0;
  a->owner = owner;
  a->res = hops <= SIM_ACTION_INLINE_HOPS ? a->inline_res : base_xrealloc(NULL, hops * sizeof *a->res);
}

void sim__action_fini(sim_action *a) {
  if (a->res != a->inline_res) free(a->res);
  a->res = a->inline_res;
  a->hops = 0;
}

static void mark_dirty(sim_solver *s, sim_resource *r) {
  if (r->dirty) return;
  r->dirty = 1;
  sim__grow(&s->dirty, &s->cap_dirty, s->n_dirty + 1, sizeof *s->dirty);
  s->dirty[s->n_dirty++] = r;
}

/* Brings remaining (and the resources' delivered totals) up to now at the current rate. */
static void advance(sim_engine *e, sim_action *a) {
  if (a->rate > 0 && e->now > a->last_update) {
    double moved = moved_since_update(e, a);
    a->remaining -= moved;
    for (size_t h = 0; h < a->hops; h++) a->res[h]->done += moved;
  }
  a->last_update = e->now;
}

static int by_resource_id(const void *x, const void *y) {
  uint32_t a = (*(sim_resource *const *)x)->id, b = (*(sim_resource *const *)y)->id;
  return (a > b) - (a < b);
}

static int by_action_id(const void *x, const void *y) {
  uint64_t a = (*(sim_action *const *)x)->id, b = (*(sim_action *const *)y)->id;
  return (a > b) - (a < b);
}

static void complete_event(sim_engine *e, void *arg);

static void reschedule(sim_engine *e, sim_action *a) {
  /* An action due this very picosecond keeps its event: re-deriving the time from a remaining
  ** of a few ulps would only push it one picosecond late. */
  if (a->finish_at == e->now) return;
  sim__eventq_cancel(&e->queue, a->done_event);
  a->done_event = SIM_EVENT_NONE;
  a->finish_at = SIM_TIME_NEVER;
  if (a->rate <= 0) return;
  sim_time d = sim__duration_ps(a->remaining, a->rate);
  if (d == SIM_TIME_NEVER || d > SIM_TIME_NEVER - e->now) return;
  a->finish_at = e->now + d;
  a->done_event = sim__eventq_push(&e->queue, a->finish_at, complete_event, a);
}

/* Re-shares the components of every dirty resource. */
static void solve(sim_engine *e) {
  sim_solver *s = &e->solver;
  if (s->n_dirty == 0) return;
  uint64_t stamp = ++s->stamp;
  size_t n_res = 0, n_act = 0;
  for (size_t i = 0; i < s->n_dirty; i++) {
    sim_resource *r = s->dirty[i];
    r->dirty = 0;
    if (r->stamp == stamp) continue;
    r->stamp = stamp;
    sim__grow(&s->comp_res, &s->cap_comp_res, n_res + 1, sizeof *s->comp_res);
    s->comp_res[n_res++] = r;
  }
  s->n_dirty = 0;
  /* Breadth-first over resources -> their actions -> those actions' resources. */
  for (size_t i = 0; i < n_res; i++) {
    sim_resource *r = s->comp_res[i];
    for (size_t u = 0; u < r->n_uses; u++) {
      sim_action *a = r->uses[u];
      if (a->stamp == stamp) continue;
      a->stamp = stamp;
      sim__grow(&s->comp_act, &s->cap_comp_act, n_act + 1, sizeof *s->comp_act);
      s->comp_act[n_act++] = a;
      for (size_t h = 0; h < a->hops; h++) {
        sim_resource *o = a->res[h];
        if (o->stamp == stamp) continue;
        o->stamp = stamp;
        sim__grow(&s->comp_res, &s->cap_comp_res, n_res + 1, sizeof *s->comp_res);
        s->comp_res[n_res++] = o;
      }
    }
  }
  sim_resource **res = s->comp_res;
  sim_action **act = s->comp_act;
  /* A capacity change on an idle resource leaves both lists empty (and never allocated). */
  if (n_res > 1) qsort(res, n_res, sizeof *res, by_resource_id);
  if (n_act > 1) qsort(act, n_act, sizeof *act, by_action_id);

  for (size_t i = 0; i < n_act; i++) {
    advance(e, act[i]);
    act[i]->fixed = 0;
  }
  for (size_t i = 0; i < n_res; i++) {
    res[i]->left = res[i]->capacity;
    res[i]->unfixed = res[i]->n_uses;
  }
  /* Progressive filling; each pass fixes at least the bottleneck's actions. */
  for (;;) {
    sim_resource *bottleneck = NULL;
    double share = 0;
    for (size_t i = 0; i < n_res; i++) {
      sim_resource *r = res[i];
      if (r->unfixed == 0) continue;
      double sh = r->left > 0 ? r->left / (double)r->unfixed : 0;
      if (bottleneck == NULL || sh < share) {
        bottleneck = r;
        share = sh;
      }
    }
    if (bottleneck == NULL) break;
    for (size_t u = 0; u < bottleneck->n_uses; u++) {
      sim_action *a = bottleneck->uses[u];
      if (a->fixed) continue;
      a->fixed = 1;
      a->new_rate = share;
      for (size_t h = 0; h < a->hops; h++) {
        a->res[h]->left -= share;
        a->res[h]->unfixed--;
      }
    }
    assert(bottleneck->unfixed == 0);
  }
  for (size_t i = 0; i < n_act; i++) {
    sim_action *a = act[i];
    assert(a->fixed);
    if (a->new_rate == a->rate) continue;
    a->rate = a->new_rate;
    reschedule(e, a);
  }
}

static void add_use(sim_resource *r, sim_action *a) {
  if (r->n_uses == r->cap_uses) { /* full: from `one` to the heap, or a bigger array there */
    int inline_one = r->uses == &r->one;
    uint32_t cap = inline_one ? 8 : 2 * r->cap_uses;
    if (cap <= r->cap_uses) abort(); /* past 2^31 actions on one resource, as out of memory */
    sim_action **grown = base_xrealloc(inline_one ? NULL : r->uses, cap * sizeof *grown);
    if (inline_one) grown[0] = r->one;
    r->uses = grown;
    r->cap_uses = cap;
  }
  /* Ids grow with creation, so appending keeps the array sorted. */
  assert(r->n_uses == 0 || r->uses[r->n_uses - 1]->id < a->id);
  r->uses[r->n_uses++] = a;
}

static void remove_use(sim_resource *r, const sim_action *a) {
  if (r->n_uses == 1) { /* the lone flow's link, the lone exec's cpu */
    assert(r->uses[0] == a);
    r->n_uses = 0;
    return;
  }
  size_t lo = 0, hi = r->n_uses;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (r->uses[mid]->id < a->id) lo = mid + 1;
    else hi = mid;
  }
  assert(lo < r->n_uses && r->uses[lo] == a);
  for (size_t i = lo + 1; i < r->n_uses; i++) r->uses[i - 1] = r->uses[i];
  r->n_uses--;
}

/* Anything about to change r's sharing turns the solo transfer holding it back into the flow
** it stands for first (engine.c invariant 7). */
static void touch(sim_engine *e, sim_resource *r) {
  hand_back_hold(r);
  if (r->solo != NULL) sim__solo_fall_back(e, r->solo);
}

void sim__action_start(sim_engine *e, sim_action *a) {
  assert(a->hops > 0); /* the engine completes resource-free comms itself */
  assert(e->solver.n_dirty == 0); /* every change is solved at once */
  /* Before a takes its id: a transfer falling back takes one too, and uses stay in id order. */
  for (size_t h = 0; h < a->hops; h++) touch(e, a->res[h]);
  a->id = e->solver.next_action_id++;
  a->last_update = e->now;
  int alone = 1;
  for (size_t h = 0; h < a->hops; h++) {
    add_use(a->res[h], a);
    alone &= a->res[h]->n_uses == 1;
  }
  if (alone) {
    /* A component of this action alone (a ring step, an exec on an idle cpu): progressive
    ** filling would give it its slowest resource's capacity, the share left / 1 of a resource
    ** with capacity left, 0 of one without; the same number, without the search and sorts. */
    double rate = INFINITY;
    for (size_t h = 0; h < a->hops; h++) {
      double cap = a->res[h]->capacity > 0 ? a->res[h]->capacity : 0;
      if (cap < rate) rate = cap;
    }
    a->rate = rate;
    reschedule(e, a);
    return;
  }
  for (size_t h = 0; h < a->hops; h++) mark_dirty(&e->solver, a->res[h]);
  solve(e);
}

static void detach(sim_engine *e, sim_action *a) {
  for (size_t h = 0; h < a->hops; h++) {
    remove_use(a->res[h], a);
    /* A resource left idle has nothing to re-share. */
    if (a->res[h]->n_uses > 0) mark_dirty(&e->solver, a->res[h]);
  }
}

void sim__action_withdraw(sim_engine *e, sim_action *a) {
  advance(e, a);
  sim__eventq_cancel(&e->queue, a->done_event);
  a->done_event = SIM_EVENT_NONE;
  detach(e, a);
  solve(e);
}

static void complete_event(sim_engine *e, void *arg) {
  sim_action *a = arg;
  a->done_event = SIM_EVENT_NONE;
  /* Whatever rounding left over is delivered now: completion is exact by definition. */
  for (size_t h = 0; h < a->hops; h++) a->res[h]->done += a->remaining;
  a->remaining = 0;
  a->last_update = e->now;
  detach(e, a);
  solve(e);
  sim__action_finished(e, a);
}

void sim__action_resume(sim_engine *e, sim_action *a, sim_time since, double rate) {
  assert(since <= e->now && a->finish_at >= e->now);
  a->id = e->solver.next_action_id++;
  a->last_update = since;
  a->rate = rate;
  for (size_t h = 0; h < a->hops; h++) add_use(a->res[h], a);
  a->done_event = sim__eventq_push(&e->queue, a->finish_at, complete_event, a);
}

void sim__resource_set_capacity(sim_engine *e, sim_resource *r, double capacity) {
  assert(capacity >= 0);
  touch(e, r);
  r->capacity = capacity;
  mark_dirty(&e->solver, r);
  solve(e);
}
