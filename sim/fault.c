/*
** fault.c: fault plans (sim_fault_ in fault.h).
**
** Design notes
** ------------
** Occurrences are kept in the order they were added; each becomes events when the plan starts
** (timed ones) or when its step is reported (at_step ones). An event's argument is a `firing`
** record (which occurrence, which phase: notice, strike, end) that the plan owns until it is
** freed, so stop can cancel whatever is pending. A random process draws its next occurrence when
** the previous one strikes, from its own stream: the draws of one target never depend on
** another's, nor on what the program did in between.
**
** A resource under faults remembers its nominal rate and the faults active on it in the order
** they began; its rate is always the nominal one scaled by each in that order (a straggler
** divides by its slowdown, a link fault multiplies by its factor, 0 when down), so the rate
** after the last fault ends is the nominal one exactly.
**
** Invariants:
**  1. Every pending event of the plan is in `firings` with a live handle; stop cancels them all
**     and nothing is scheduled after stop.
**  2. A resource's rate differs from its nominal one only while `active` holds faults on it.
**  3. An at_step occurrence strikes at most once per run.
*/
#include "sim/fault.h"

#include <assert.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_sf_gamma.h>

#include "sim/rng.h"
#include "sim/simInt.h"

typedef enum { PHASE_NOTICE, PHASE_STRIKE, PHASE_END } phase;

typedef struct process {
  sim_fault_dist dist;       /* time between occurrences */
  gsl_rng *rng;              /* its own stream */
} process;

typedef struct occurrence {
  sim_fault f;               /* what and when (at of a random one: its current draw) */
  int process;               /* index in processes for a random one, else -1 */
  int fired;                 /* an at_step one has struck (invariant 3) */
  long struck;               /* times it struck (a random one strikes again and again) */
} occurrence;

typedef struct firing firing;
struct firing {
  sim_fault_plan *plan;      /* owner */
  size_t occ;                /* index in occs */
  phase ph;                  /* what the event does */
  const firing *strike;     /* PHASE_END: the strike whose fault it ends */
  sim_event_handle ev;       /* the pending event */
  int pending;               /* not fired nor cancelled yet */
};

typedef struct faulted {
  sim_resource *res;         /* a cpu's or a link's resource */
  int is_link;               /* how its rate is set */
  double nominal;            /* its rate without faults */
} faulted;

typedef struct active {
  size_t res;                /* index in faulted */
  const firing *by;          /* the strike that began it (matched by its end) */
  double scale;              /* multiplier, or divisor when divide */
  int divide;                /* straggler: rate / slowdown */
} active;

struct sim_fault_plan {
  sim_engine *engine;        /* owner of the events */
  const sim_fault_ops *ops;  /* the program's callbacks */
  void *ctx;                 /* their argument */
  occurrence *occs;          /* in the order added */
  size_t n_occs, cap_occs;   /* entries, allocated */
  process *processes;        /* random processes */
  size_t n_processes, cap_processes; /* entries, allocated */
  firing **firings;          /* every event record made (invariant 1) */
  size_t n_firings, cap_firings; /* entries, allocated */
  faulted *faulted;          /* resources touched so far, in first-touch order */
  size_t n_faulted, cap_faulted; /* entries, allocated */
  active *active;            /* faults in effect, in the order they began */
  size_t n_active, cap_active; /* entries, allocated */
  long count[SIM_FAULT_KIND_COUNT]; /* strikes per kind */
  int track;                 /* "faults" trace track, -1 until used */
  int stopped;               /* sim_fault_plan_stop ran */
};

static const char *const KIND_NAMES[SIM_FAULT_KIND_COUNT] = {"preempt", "fail", "straggler",
                                                             "link_degrade", "link_down"};

const char *sim_fault_kind_name(sim_fault_kind k) {
  return (unsigned)k < SIM_FAULT_KIND_COUNT ? KIND_NAMES[k] : "unknown";
}

int sim_fault_kind_parse(const char *name, sim_fault_kind *out) {
  for (int k = 0; k < SIM_FAULT_KIND_COUNT; k++)
    if (!strcmp(KIND_NAMES[k], name)) {
      *out = (sim_fault_kind)k;
      return 0;
    }
  return -1;
}

double sim_fault_draw(const sim_fault_dist *d, gsl_rng *r) {
  if (d->weibull_shape <= 0) return gsl_ran_exponential(r, d->mean_s);
  double scale = d->mean_s / gsl_sf_gamma(1.0 + 1.0 / d->weibull_shape);
  return gsl_ran_weibull(r, scale, d->weibull_shape);
}

sim_fault_plan *sim_fault_plan_new(sim_engine *e, const sim_fault_ops *ops, void *ctx) {
  sim_fault_plan *p = base_xcalloc(1, sizeof *p);
  p->engine = e;
  p->ops = ops;
  p->ctx = ctx;
  p->track = -1;
  return p;
}

void sim_fault_plan_free(sim_fault_plan *p) {
  if (p == NULL) return;
  sim_fault_plan_stop(p);
  for (size_t i = 0; i < p->n_processes; i++) gsl_rng_free(p->processes[i].rng);
  for (size_t i = 0; i < p->n_firings; i++) free(p->firings[i]);
  free(p->occs);
  free(p->processes);
  free(p->firings);
  free(p->faulted);
  free(p->active);
  free(p);
}

static void add_occurrence(sim_fault_plan *p, const sim_fault *f, int proc) {
  sim__grow(&p->occs, &p->cap_occs, p->n_occs + 1, sizeof *p->occs);
  p->occs[p->n_occs++] = (occurrence){.f = *f, .process = proc};
}

void sim_fault_plan_add(sim_fault_plan *p, const sim_fault *f) {
  assert(f->at_step >= 0 || f->at >= 0);
  add_occurrence(p, f, -1);
}

void sim_fault_plan_add_random(sim_fault_plan *p, const sim_fault *f, const sim_fault_dist *d,
                               uint64_t seed, const char *stream) {
  assert(d->mean_s > 0);
  sim__grow(&p->processes, &p->cap_processes, p->n_processes + 1, sizeof *p->processes);
  p->processes[p->n_processes] = (process){.dist = *d, .rng = sim_rng_stream(seed, stream)};
  if (p->processes[p->n_processes].rng == NULL) abort();
  sim_fault g = *f;
  g.at_step = -1;
  add_occurrence(p, &g, (int)p->n_processes++);
}

int sim_fault_plan_track(sim_fault_plan *p) {
  if (p->track < 0) p->track = sim_trace_track(p->engine, "faults");
  return p->track;
}

long sim_fault_plan_count(const sim_fault_plan *p, sim_fault_kind k) { return p->count[k]; }

long sim_fault_plan_struck(const sim_fault_plan *p, size_t i) { return p->occs[i].struck; }

static const char *target_name(const sim_fault_plan *p, int target) {
  return p->ops->name ? p->ops->name(p->ctx, target) : "target";
}

static void mark(sim_fault_plan *p, const char *what, const sim_fault *f) {
  char name[160];
  snprintf(name, sizeof name, "%s %s", what, target_name(p, f->target));
  sim_trace_instant(p->engine, sim_fault_plan_track(p), name, "fault", p->engine->now);
}

static void fire(sim_engine *e, void *arg);

static void schedule(sim_fault_plan *p, size_t occ, phase ph, sim_time at, const firing *strike) {
  if (p->stopped || at < p->engine->now || at > SIM_TIME_HORIZON) return;
  firing *fr = base_xcalloc(1, sizeof *fr);
  *fr = (firing){.plan = p, .occ = occ, .ph = ph, .strike = strike, .pending = 1};
  sim__grow(&p->firings, &p->cap_firings, p->n_firings + 1, sizeof *p->firings);
  p->firings[p->n_firings++] = fr;
  fr->ev = sim_schedule(p->engine, at, fire, fr);
}

/* The first phase of an occurrence due at `at`: its notice, or the strike itself. */
static void schedule_first(sim_fault_plan *p, size_t occ, sim_time at) {
  const sim_fault *f = &p->occs[occ].f;
  if (f->kind == SIM_FAULT_PREEMPT && f->notice > 0) schedule(p, occ, PHASE_NOTICE, at, NULL);
  else schedule(p, occ, PHASE_STRIKE, at, NULL);
}

/* Seconds to picoseconds, saturating past the horizon (a draw may be huge). */
static sim_time draw_ps(process *pr) {
  double s = sim_fault_draw(&pr->dist, pr->rng);
  return s * (double)SIM_PS_PER_S >= (double)SIM_TIME_HORIZON ? SIM_TIME_HORIZON + 1 : sim_time_from_s(s);
}

void sim_fault_plan_start(sim_fault_plan *p) {
  for (size_t i = 0; i < p->n_occs; i++) {
    occurrence *o = &p->occs[i];
    if (o->process >= 0) o->f.at = draw_ps(&p->processes[o->process]);
    if (o->f.at_step < 0) schedule_first(p, i, o->f.at);
  }
}

void sim_fault_plan_step(sim_fault_plan *p, long step) {
  for (size_t i = 0; i < p->n_occs; i++) {
    occurrence *o = &p->occs[i];
    if (o->f.at_step != step || o->fired) continue;
    o->fired = 1;
    schedule_first(p, i, p->engine->now);
  }
}

long sim_fault_plan_next_step(const sim_fault_plan *p, long from) {
  long next = LONG_MAX;
  for (size_t i = 0; i < p->n_occs; i++) {
    const occurrence *o = &p->occs[i];
    if (!o->fired && o->f.at_step >= from && o->f.at_step < next) next = o->f.at_step;
  }
  return next;
}

/* ---- resources -------------------------------------------------------------------------- */

static void set_rate(const faulted *fr, double rate) {
  if (fr->is_link) sim_link_set_bandwidth((sim_link *)fr->res, rate);
  else sim_cpu_set_rate((sim_cpu *)fr->res, rate);
}

/* Invariant 2: the nominal rate scaled by the active faults in the order they began. */
static void recompute(sim_fault_plan *p, size_t res) {
  double rate = p->faulted[res].nominal;
  for (size_t i = 0; i < p->n_active; i++) {
    const active *a = &p->active[i];
    if (a->res != res) continue;
    rate = a->divide ? rate / a->scale : rate * a->scale;
  }
  set_rate(&p->faulted[res], rate);
}

static size_t faulted_index(sim_fault_plan *p, sim_resource *r, int is_link) {
  for (size_t i = 0; i < p->n_faulted; i++)
    if (p->faulted[i].res == r) return i;
  sim__grow(&p->faulted, &p->cap_faulted, p->n_faulted + 1, sizeof *p->faulted);
  p->faulted[p->n_faulted] = (faulted){.res = r, .is_link = is_link, .nominal = r->capacity};
  return p->n_faulted++;
}

static void begin_on(sim_fault_plan *p, sim_resource *r, int is_link, const firing *by) {
  const sim_fault *f = &p->occs[by->occ].f;
  size_t res = faulted_index(p, r, is_link);
  sim__grow(&p->active, &p->cap_active, p->n_active + 1, sizeof *p->active);
  active a = {.res = res, .by = by, .scale = f->factor, .divide = f->kind == SIM_FAULT_STRAGGLER};
  if (f->kind == SIM_FAULT_LINK_DOWN) a.scale = 0.0;
  p->active[p->n_active++] = a;
  recompute(p, res);
}

enum { MAX_TARGET_RESOURCES = 4096 };

/* Starts a straggler or link fault on each resource of its target. */
static void begin_resource_fault(sim_fault_plan *p, const firing *by) {
  const sim_fault *f = &p->occs[by->occ].f;
  if (f->kind == SIM_FAULT_STRAGGLER) {
    sim_cpu *cpus[MAX_TARGET_RESOURCES];
    size_t n = p->ops->cpus ? p->ops->cpus(p->ctx, f->target, cpus, MAX_TARGET_RESOURCES) : 0;
    for (size_t i = 0; i < n && i < MAX_TARGET_RESOURCES; i++) begin_on(p, &cpus[i]->res, 0, by);
    return;
  }
  sim_link *links[MAX_TARGET_RESOURCES];
  size_t n = p->ops->links ? p->ops->links(p->ctx, f->target, links, MAX_TARGET_RESOURCES) : 0;
  for (size_t i = 0; i < n && i < MAX_TARGET_RESOURCES; i++) begin_on(p, &links[i]->res, 1, by);
}

/* Ends what the strike `by` began, keeping the order of the others; only the resources it was
** on get their rate set again (setting a rate re-shares the flows on it). */
static void end_resource_fault(sim_fault_plan *p, const firing *by) {
  char *touched = base_xcalloc(p->n_faulted, 1);
  size_t kept = 0;
  for (size_t i = 0; i < p->n_active; i++) {
    if (p->active[i].by == by) touched[p->active[i].res] = 1;
    else p->active[kept++] = p->active[i];
  }
  p->n_active = kept;
  for (size_t r = 0; r < p->n_faulted; r++)
    if (touched[r]) recompute(p, r);
  free(touched);
}

/* ---- firing ----------------------------------------------------------------------------- */

static void strike(sim_fault_plan *p, firing *fr) {
  occurrence *o = &p->occs[fr->occ];
  sim_fault f = o->f;
  p->count[f.kind]++;
  o->struck++;
  mark(p, sim_fault_kind_name(f.kind), &f);
  switch (f.kind) {
    case SIM_FAULT_PREEMPT:
    case SIM_FAULT_FAIL:
      if (o->process >= 0) {  /* the next one, a draw after the machine is back */
        sim_time back = sim_time_add(p->engine->now, f.duration), gap = draw_ps(&p->processes[o->process]);
        o->f.at = gap > SIM_TIME_HORIZON - back ? SIM_TIME_HORIZON + 1 : back + gap;
        schedule_first(p, fr->occ, o->f.at);
      }
      if (p->ops->down) p->ops->down(p->ctx, &f);
      break;
    case SIM_FAULT_STRAGGLER:
    case SIM_FAULT_LINK_DEGRADE:
    case SIM_FAULT_LINK_DOWN:
      begin_resource_fault(p, fr);
      if (f.duration != SIM_TIME_NEVER && f.duration <= SIM_TIME_HORIZON - p->engine->now)
        schedule(p, fr->occ, PHASE_END, p->engine->now + f.duration, fr);
      break;
  }
}

static void fire(sim_engine *e, void *arg) {
  firing *fr = arg;
  sim_fault_plan *p = fr->plan;
  fr->pending = 0;
  const sim_fault *f = &p->occs[fr->occ].f;
  switch (fr->ph) {
    case PHASE_NOTICE:
      mark(p, "preempt notice", f);
      if (p->ops->notice) p->ops->notice(p->ctx, f);
      schedule(p, fr->occ, PHASE_STRIKE, sim_time_add(e->now, f->notice), NULL);
      break;
    case PHASE_STRIKE:
      strike(p, fr);
      break;
    case PHASE_END: {
      char what[48];
      snprintf(what, sizeof what, "end %s", sim_fault_kind_name(f->kind));
      mark(p, what, f);
      end_resource_fault(p, fr->strike);
      break;
    }
  }
}

void sim_fault_plan_stop(sim_fault_plan *p) {
  for (size_t i = 0; i < p->n_firings; i++) {
    firing *fr = p->firings[i];
    if (fr->pending) sim_cancel(p->engine, fr->ev);
    fr->pending = 0;
  }
  p->stopped = 1;
  while (p->n_active > 0) end_resource_fault(p, p->active[0].by);
}
