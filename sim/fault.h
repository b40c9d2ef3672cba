/*
** fault.h: fault injection (sim_fault_). A plan is the list of fault occurrences of a run,
** fixed before it starts: scheduled ones (a time, or a training step the program reports),
** random ones (a renewal process per target, drawn from a named RNG stream) and rows of a
** trace. The plan fires each at its time and delivers it through a callback table, the way
** ROSS and SimGrid let the engine know entities only through callbacks: targets are small
** integers the program gives meaning to (a worker, a TPU host, a set of links).
**
** What the plan applies itself: a straggler scales its target's compute units (sim_cpu_set_rate)
** and a link fault its links' bandwidth (sim_link_set_bandwidth, 0 for link_down: flows stall
** and resume when the link is back), for the fault's duration or for good. Overlapping faults on
** one resource multiply; when the last ends the resource gets its nominal rate back, bit for bit.
** What the program does: task faults (preempt, fail) reach its `down` callback, which stops what
** ran there and decides on recovery; the plan only counts time.
*/
#ifndef PODSIM_FAULT_H
#define PODSIM_FAULT_H

#include <gsl/gsl_rng.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/sim.h"

typedef enum {
  SIM_FAULT_PREEMPT = 0,      /* the provider reclaims a task's machine, after a notice */
  SIM_FAULT_FAIL,             /* a task's machine fails, no notice */
  SIM_FAULT_STRAGGLER,        /* a task computes `factor` times slower (factor >= 1) */
  SIM_FAULT_LINK_DEGRADE,     /* links keep `factor` (0 < factor <= 1) of their bandwidth */
  SIM_FAULT_LINK_DOWN,        /* links carry nothing */
} sim_fault_kind;
#define SIM_FAULT_KIND_COUNT 5

/* One occurrence. Durations of SIM_TIME_NEVER last to the end of the run. */
typedef struct sim_fault {
  sim_fault_kind kind;        /* what happens */
  int target;                 /* the program's target index */
  sim_time at;                /* when it strikes (a preemption: when its notice is given);
                                 SIM_TIME_NEVER for one triggered by at_step */
  long at_step;               /* >= 0: strikes when the program reports this step; else -1 */
  sim_time notice;            /* preempt: the machine stops this long after `at` */
  sim_time duration;          /* task faults: how long the machine stays down (0: replaced at
                                 once); the others: how long the fault lasts */
  double factor;              /* straggler: slowdown; link_degrade: bandwidth kept */
} sim_fault;

/* "preempt", "fail", "straggler", "link_degrade", "link_down"; parse returns 0 or -1. */
const char *sim_fault_kind_name(sim_fault_kind k);
int sim_fault_kind_parse(const char *name, sim_fault_kind *out);

/* Times between occurrences of a random fault: exponential (a Poisson process) or Weibull with
** the given shape (shape < 1: failures cluster early, as infant mortality; shape 1 is the
** exponential), both with mean `mean_s` seconds. */
typedef struct sim_fault_dist {
  double mean_s;              /* mean time between failures */
  double weibull_shape;       /* 0: exponential; > 0: Weibull of that shape */
} sim_fault_dist;
/* One draw in seconds (GSL: gsl_ran_exponential, gsl_ran_weibull with scale
** mean / Gamma(1 + 1/shape)). */
double sim_fault_draw(const sim_fault_dist *d, gsl_rng *r);

/* What the program provides. Callbacks run on the engine's stack (from events), never inside an
** actor, so `down` may kill actors. Any may be NULL (then that part is skipped). */
typedef struct sim_fault_ops {
  /* The target's name for the trace ("tpu_host:1"). */
  const char *(*name)(void *ctx, int target);
  /* Its compute units (straggler) and links (link faults): fills out[0..max), returns the count. */
  size_t (*cpus)(void *ctx, int target, sim_cpu **out, size_t max);
  size_t (*links)(void *ctx, int target, sim_link **out, size_t max);
  /* A preemption's notice was given: the machine stops after f->notice. */
  void (*notice)(void *ctx, const sim_fault *f);
  /* A preempt or fail strikes: the machine stops now, for f->duration. */
  void (*down)(void *ctx, const sim_fault *f);
} sim_fault_ops;

typedef struct sim_fault_plan sim_fault_plan;

/* An empty plan for engine e; ops and ctx are borrowed for the plan's life. */
sim_fault_plan *sim_fault_plan_new(sim_engine *e, const sim_fault_ops *ops, void *ctx);
/* Stops the plan (below) and frees it: before the engine. */
void sim_fault_plan_free(sim_fault_plan *p);
/* Adds one occurrence (at or at_step). */
void sim_fault_plan_add(sim_fault_plan *p, const sim_fault *f);
/* Adds a renewal process on f->target: the first occurrence a draw after time 0, each next one
** a draw after the previous machine is back (at + notice + duration), drawn when the previous
** fires from a generator seeded from (seed, stream) (sim/rng.h). f->at is ignored. */
void sim_fault_plan_add_random(sim_fault_plan *p, const sim_fault *f, const sim_fault_dist *d,
                               uint64_t seed, const char *stream);
/* Schedules every timed occurrence; call once, before sim_run. */
void sim_fault_plan_start(sim_fault_plan *p);
/* The program is starting `step`: occurrences with that at_step strike, each once in the run
** (a step redone after a restart does not trigger it again), from an event at the current time
** (so a caller inside an actor is not the one its `down` kills). */
void sim_fault_plan_step(sim_fault_plan *p, long step);
/* The smallest at_step >= from of an occurrence that has not struck, LONG_MAX if none: the
** steps before it strike nothing when reported (fast-forward skips reporting them). */
long sim_fault_plan_next_step(const sim_fault_plan *p, long from);
/* Cancels every occurrence still to come and gives every faulted resource its nominal rate
** back: the program calls this when it is done, so that no fault keeps the clock running. */
void sim_fault_plan_stop(sim_fault_plan *p);
/* Occurrences that struck so far, by kind (a preemption counts when its machine stops). */
long sim_fault_plan_count(const sim_fault_plan *p, sim_fault_kind k);
/* Times occurrence i (the i-th added by sim_fault_plan_add or _add_random, from 0) struck so far:
** 0 for one whose time or step the run never reached. */
long sim_fault_plan_struck(const sim_fault_plan *p, size_t i);
/* The trace track "faults" (made on first use) where the plan marks each fault as an instant;
** the program marks its recovery there too. */
int  sim_fault_plan_track(sim_fault_plan *p);

#endif
