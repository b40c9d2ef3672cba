/*
** simInt.h: struct bodies and internal functions of the engine, shared by the sim/ sources only.
** Nothing outside sim/ includes this file; users hold the opaque handles of sim.h.
** Internal functions are named sim__<module>_<verb>.
*/
#ifndef PODSIM_SIMINT_H
#define PODSIM_SIMINT_H

#include "base/base.h"

#include <stdint.h>
#include <stddef.h>

#include "sim/coro.h"

/* coro.c's guarded stacks (for tests): how many may be live at once (default: a quarter of
** vm.max_map_count), and whether c got one. */
void sim__coro_set_guard_budget(long stacks);
int  sim__coro_guarded(const sim_coro *c);
/* The kernel's vm.max_map_count, -1 when /proc cannot say (coro.c's budget, engine.c's message). */
long sim__coro_max_map_count(void);
#include "sim/sim.h"

/* ---- event queue (eventq.c) ----------------------------------------------------------- */

/* One pending event as the queue stores it, 32 bytes: it carries its callback, so firing it
** reads only the bucket being popped, never the slot array at random. */
typedef struct sim_queued_event {
  sim_time time;             /* when the event fires */
  uint64_t order;            /* insertion sequence << SIM_SLOT_BITS | slot index: the sequence
                                gives FIFO order among equal times, the slot its handle */
  sim_event_fn fn;           /* callback */
  void *arg;                 /* its argument */
} sim_queued_event;

/* At most 2^24 events pending at once and 2^40 scheduled per engine; past either the engine
** stops with a message rather than misorder events. */
#define SIM_SLOT_BITS 24

typedef struct sim_event_bucket {
  sim_queued_event *items;   /* unordered, except the current time's (see eventq.c) */
  uint32_t n;                /* entries (never more than the 2^24 slots) */
  uint32_t cap;              /* allocated entries */
} sim_event_bucket;

/* The radix heap's digits: 4 bits, 16 levels for a 64-bit time. Wider digits move events fewer
** times but scatter each emptied bucket over more arrays: 8 bits ran the hold model slower. */
#define SIM_EVENT_RADIX_BITS 4
#define SIM_EVENT_RADIX (1 << SIM_EVENT_RADIX_BITS)
#define SIM_EVENT_LEVELS ((64 + SIM_EVENT_RADIX_BITS - 1) / SIM_EVENT_RADIX_BITS)

typedef struct sim_eventq {
  sim_event_bucket now;      /* events at `last`, sorted by seq; cancelled ones dropped at head */
  uint32_t head;             /* read cursor in now */
  sim_time last;             /* time of the latest pop: no pending event is earlier */
  sim_event_bucket (*levels)[SIM_EVENT_RADIX]; /* [level][digit], allocated at the first push;
                                cancelled entries stay until they reach now */
  uint64_t occupied[SIM_EVENT_LEVELS][(SIM_EVENT_RADIX + 63) / 64]; /* bit per non-empty bucket */
  uint32_t *slots;           /* per slot, what handles match: the tag of the event holding it,
                                0 once it fired or was cancelled */
  uint32_t n_slots;          /* slots ever handed out (high-water mark) */
  uint32_t cap_slots;        /* allocated slots */
  uint32_t *free;            /* free slots, a stack: the one freed last is taken first */
  uint32_t n_free;           /* entries in free */
  uint32_t cap_free;         /* allocated entries */
  uint64_t next_seq;         /* sequence number of the next scheduled event */
  size_t live;               /* pending events not cancelled */
  size_t cancelled;          /* cancelled entries not yet dropped: while 0, popping needs no
                                look at the slots */
} sim_eventq;

void sim__eventq_init(sim_eventq *q);
void sim__eventq_free(sim_eventq *q);
sim_event_handle sim__eventq_push(sim_eventq *q, sim_time at, sim_event_fn fn, void *arg);
int  sim__eventq_cancel(sim_eventq *q, sim_event_handle h);
/* Time of the earliest live event (cancelled ones at the top are dropped), or SIM_TIME_NEVER. */
sim_time sim__eventq_peek(sim_eventq *q);
/* Removes the earliest live event into at, fn and arg; returns 0 when none is left. */
int  sim__eventq_pop(sim_eventq *q, sim_time *at, sim_event_fn *fn, void **arg);

/* Copies the live events into *out (grown as needed; capacity *cap), in no particular order;
** returns their count (fast-forward's snapshots, snapshot.c). */
size_t sim__eventq_live_events(const sim_eventq *q, sim_queued_event **out, size_t *cap);
/* Moves every live event whose sequence is from_seq or later dt later, the others staying where
** they are, with `last` (no event is earlier) moved to `last`; cancelled entries are dropped.
** Sequences, and so handles and the order among equal times, are kept (snapshot.c). */
void sim__eventq_shift(sim_eventq *q, uint64_t from_seq, sim_time dt, sim_time last);

/* A handle that matches no slot (generation 0 is never issued). */
#define SIM_EVENT_NONE ((sim_event_handle){0, 0})

/* ---- max-min sharing (maxmin.c) ------------------------------------------------------- */

typedef struct sim_action sim_action;

/* Anything with a rate that concurrent actions share: a cpu (FLOP/s) or a link (B/s). The
** fields every action start and completion touch come first and fill 40 bytes, and a resource
** used by one action at a time (an ICI link in a torus step, an exec on its own cpu) keeps that
** action inline: a pod step touches thousands of links between two visits to one, and each
** visit then costs one cache line instead of up to three (the record straddling two lines, and
** a separately allocated use array). */
typedef struct sim_resource {
  double capacity;           /* units per second */
  double done;               /* units delivered up to the actions' last updates */
  sim_action **uses;         /* actions in progress here, sorted by action id (creation order);
                                &one until a second one is added */
  uint32_t n_uses;           /* entries in uses */
  uint32_t cap_uses;         /* entries uses can hold: 1 while it is &one */
  sim_action *one;           /* uses' storage while there is room in one entry */
  sim_activity *solo;        /* the solo transfer (engine.c) holding it, or NULL: then n_uses
                                is 0, and whatever touches the resource first turns that
                                transfer back into a shared flow (sim__solo_fall_back) */
  uint32_t id;               /* creation order across cpus and links: the solver's tie-break */
  int dirty;                 /* queued in sim_solver.dirty */
  double left;               /* solver scratch: capacity not yet given out */
  uint32_t unfixed;          /* solver scratch: uses whose rate is not fixed yet */
  int trace_track;           /* trace track index, -1 until the first span on it */
  uint64_t stamp;            /* solver pass that last visited it (component search) */
  sim_engine *engine;        /* owner: re-sharing after a capacity change happens there */
  char *name;                /* owned copy; names the trace track */
} sim_resource;

#define SIM_ACTION_INLINE_HOPS 4

/* Work (FLOPs or bytes) progressing over one or more resources at one shared rate. */
struct sim_action {
  uint64_t id;               /* creation order: deterministic iteration and tie-breaks */
  double remaining;          /* work left as of last_update */
  double rate;               /* units per second since last_update; -1 before the first solve */
  sim_time last_update;      /* when remaining was last brought up to date */
  sim_time finish_at;        /* scheduled completion, SIM_TIME_NEVER while the rate is 0 */
  sim_event_handle done_event; /* the completion event */
  sim_resource **res;        /* the resources crossed, in route order */
  size_t hops;               /* entries in res */
  sim_resource *inline_res[SIM_ACTION_INLINE_HOPS]; /* storage for short routes (no malloc) */
  uint64_t stamp;            /* solver pass that last visited it */
  int fixed;                 /* solver scratch: rate settled in this pass */
  double new_rate;           /* solver scratch: the share being computed */
  void *owner;               /* the activity it belongs to (sim__action_finished's argument) */
};

typedef struct sim_solver {
  uint64_t next_action_id;   /* id of the next action started */
  uint32_t next_resource_id; /* id of the next cpu or link created */
  uint64_t stamp;            /* current pass number */
  sim_resource **dirty;      /* resources whose set of actions or capacity changed */
  size_t n_dirty, cap_dirty; /* entries, allocated */
  sim_resource **comp_res;   /* scratch: resources of the component being solved */
  size_t cap_comp_res;       /* allocated entries */
  sim_action **comp_act;     /* scratch: actions of that component */
  size_t cap_comp_act;       /* allocated entries */
} sim_solver;

void sim__solver_free(sim_solver *s);
void sim__resource_init(sim_engine *e, sim_resource *r, const char *name, double capacity);
void sim__resource_fini(sim_resource *r);
/* Work delivered so far, including the part since the actions' last update. */
double sim__resource_done(const sim_engine *e, const sim_resource *r);
/* Prepares an action of `amount` units over `hops` resources; the caller fills a->res[0..hops). */
void sim__action_init(sim_action *a, size_t hops, double amount, void *owner);
void sim__action_fini(sim_action *a);
/* Starts sharing; completion calls sim__action_finished(e, a) from an event. */
void sim__action_start(sim_engine *e, sim_action *a);
/* Withdraws an action in progress (a killed actor's work); the others are re-shared. */
void sim__action_withdraw(sim_engine *e, sim_action *a);
void sim__resource_set_capacity(sim_engine *e, sim_resource *r, double capacity);
/* Implemented by the engine: the action's work is done (its resources are already re-shared). */
void sim__action_finished(sim_engine *e, sim_action *a);
/* Puts back an action that the event-by-event run would have on its resources now: last
** brought up to date at `since` (<= now), sharing at `rate`, its completion at a->finish_at (a
** solo transfer falling back, a closed-form collective's reductions in flight; engine.c). The
** caller resumes a resource's actions in the order they started, so their ids keep that order. */
void sim__action_resume(sim_engine *e, sim_action *a, sim_time since, double rate);
/* What an action at `rate` with `remaining` as of `since` has moved by `now` (never more than
** remaining): the one formula of every advance, so a closed form replaying maxmin.c gets its bits. */
double sim__action_moved(double rate, double remaining, sim_time since, sim_time now);
/* Picoseconds needed for `amount` at `rate`, rounded up; exact picoseconds stay exact. */
sim_time sim__duration_ps(double amount, double rate);

/* ---- resources, activities, actors (engine.c, resource.c) ----------------------------- */

struct sim_cpu {
  sim_resource res;          /* capacity = FLOP/s */
};

struct sim_link {
  sim_resource res;          /* capacity = bytes/s */
  sim_time latency;          /* added once per comm crossing it */
};

struct sim_mempool {
  char *name;                /* owned copy */
  uint64_t capacity;         /* bytes */
  uint64_t used;             /* bytes reserved now */
  uint64_t peak;             /* highest `used` so far */
};

typedef enum {
  SIM_ACT_EXEC,              /* FLOPs on a cpu */
  SIM_ACT_COMM,              /* bytes over a route, after its latency */
} sim_activity_kind;

typedef enum {
  SIM_ACT_LATENCY,           /* comm waiting out its route latency */
  SIM_ACT_FLOWING,           /* work being shared on its resources */
  SIM_ACT_SOLO,              /* a comm alone on its links, done at a precomputed time by its
                                batch's one event (engine.c, invariant 7) */
  SIM_ACT_HELD,              /* no work: a collective run in closed form holding resources
                                (res->solo); touching one calls its on_done (engine.c) */
  SIM_ACT_DONE,              /* complete, waiting to be collected by sim_wait_all */
} sim_activity_state;

/* A group of activities one actor waits on (lives on that actor's stack). */
typedef struct sim_wait {
  sim_actor *waiter;         /* the blocked actor */
  sim_activity **acts;       /* the caller's array */
  size_t n;                  /* its length */
  size_t left;               /* activities not done yet */
} sim_wait;

struct sim_activity {
  sim_engine *engine;        /* owner */
  sim_activity_kind kind;    /* exec or comm */
  sim_activity_state state;  /* progress */
  sim_time started;          /* when it was started (trace span start) */
  double amount;             /* FLOPs or bytes */
  sim_event_handle latency_event; /* end of a comm's latency phase */
  sim_action action;         /* the shared work; action.res doubles as the comm's route */
  sim_wait *wait;            /* the group waiting on it, or NULL */
  sim_activity_done_fn on_done; /* completion callback, or NULL */
  void *on_done_arg;         /* its argument */
  sim_activity *next_free;   /* free-list link while unused */
  struct sim_solo_batch *batch; /* SIM_ACT_SOLO: the batch that completes it */
  uint32_t batch_index;      /* SIM_ACT_SOLO: its entry there */
};

/* The solo transfers that complete at one picosecond, in the order the per-transfer events
** would have fired: by the time their bytes start to flow, then by start (engine.c). */
typedef struct sim_solo_batch {
  sim_time at;               /* their completion time */
  sim_activity **acts;       /* the transfers; NULL where one fell back */
  uint32_t n;                /* entries in acts */
  uint32_t live;             /* entries not NULL: at 0 before its time, the batch is withdrawn */
  size_t cap;                /* allocated entries */
  sim_event_handle event;    /* its completion event */
  int firing;                /* its event is running: it has left the open list */
  int is_open;               /* in the open list (a recycled batch is not) */
  struct sim_solo_batch *next_free; /* free-list link while unused */
} sim_solo_batch;

typedef enum {
  SIM_ACTOR_READY,           /* spawned, its start event pending */
  SIM_ACTOR_RUNNING,         /* the current actor */
  SIM_ACTOR_BLOCKED,         /* suspended in a blocking call */
  SIM_ACTOR_FINISHED,        /* its function returned */
  SIM_ACTOR_KILLED,          /* killed; its blocking call never returns */
} sim_actor_state;

/* Undoes what a blocked actor is waiting on when it is killed (sim__actor_block's argument). */
typedef void (*sim_withdraw_fn)(sim_actor *victim, void *ctx);

struct sim_actor {
  sim_engine *engine;        /* owner */
  char *name;                /* owned copy */
  sim_actor_fn fn;           /* body */
  void *arg;                 /* its argument */
  sim_coro *coro;            /* stack and registers; NULL once reaped */
  sim_actor_state state;     /* lifecycle */
  sim_event_handle wake_event; /* the pending event that will resume it (start, sleep, wake) */
  int wake_result;           /* what its blocking call returns when resumed */
  sim_withdraw_fn withdraw;  /* undoes its current wait on kill, or NULL */
  void *withdraw_ctx;        /* its argument */
  sim_actor_cleanup_fn on_kill; /* user release hook */
  void *on_kill_arg;         /* its argument */
};

/* Suspends the current actor until sim__actor_wake; `withdraw` runs instead if it is killed. */
int  sim__actor_block(sim_actor *self, sim_withdraw_fn withdraw, void *ctx);
/* Resumes a blocked actor at the current time (through an event, after those already due). */
void sim__actor_wake(sim_actor *a, int result);
/* Stops an activity that has not completed and frees it; no callback runs. */
void sim__activity_withdraw(sim_activity *act);
/* Starts a comm as sim_comm_start does, in closed form when its links are idle (a solo
** transfer: one event per completion time instead of two per transfer; engine.c). */
sim_activity *sim__comm_start_solo(sim_engine *e, sim_link *const *route, size_t hops, double bytes);
/* A comm that started at `started` (<= now) with its links idle since, still in flight (a
** collective's closed form handing its transfers back, engine.c invariant 11): solo if its
** links are free now, else the latency wait it is in (its bytes start flowing at or after now). */
sim_activity *sim__comm_resume(sim_engine *e, sim_link *const *route, size_t hops, double bytes,
                               sim_time started);
/* An exec of `flops` on cpu started at `started` (< now), still in flight with `remaining` as of
** `since` at `rate`, due at `finish_at` (a closed-form collective's reduction handed back,
** engine.c invariant 11); every other action on the cpu now is another such exec. */
sim_activity *sim__exec_resume(sim_engine *e, sim_cpu *cpu, double flops, sim_time started, double remaining,
                               sim_time since, double rate, sim_time finish_at);
/* A hold (invariant 11): counts as a transfer in flight; touching a resource it holds calls
** fall_back(e, hold, arg), which must release every resource and free it (sim__hold_free). */
sim_activity *sim__hold_new(sim_engine *e, sim_activity_done_fn fall_back, void *arg);
void sim__hold_free(sim_activity *hold);
/* Turns a solo transfer into the latency wait or shared flow it would be now (engine.c). */
void sim__solo_fall_back(sim_engine *e, sim_activity *act);

/* ---- trace (trace.c) ------------------------------------------------------------------ */

typedef struct sim_trace_event {
  int track;                 /* index into sim_trace.tracks */
  const char *name;          /* event name (owned when owns_strings) */
  const char *category;      /* cat */
  sim_time start;            /* ts */
  sim_time end;              /* ts + dur; equal to start for instants */
  double amount;             /* FLOPs (exec) or bytes (comm) of an engine span; 0 for user events */
  int instant;               /* 1: ph "i", 0: ph "X" */
  int owns_strings;          /* name and category are malloc'd copies */
} sim_trace_event;

typedef struct sim_trace_track {
  char *name;                /* thread name (owned) */
  char *group;               /* process it is drawn in (owned); NULL: derived from the name */
  sim_track_kind kind;       /* user, cpu or link */
  const sim_resource *res;   /* the cpu or link whose spans it holds; NULL for user tracks */
} sim_track;

typedef struct sim_trace {
  int enabled;               /* record engine spans */
  sim_track *tracks;         /* in creation order (track id = index) */
  size_t n_tracks, cap_tracks; /* entries, allocated */
  sim_trace_event *events;   /* in recording order, which is completion order */
  size_t n_events, cap_events; /* entries, allocated */
  size_t limit;              /* events kept at most (invariant 2 of trace.c) */
  size_t dropped;            /* events refused once limit was reached */
  sim_time first_dropped;    /* completion time of the first refused event */
} sim_trace;

void sim__trace_free(sim_trace *t);
void sim__trace_init(sim_trace *t);
/* Records an engine span of `amount` FLOPs or bytes on a resource's track (created on first
** use, of the given kind). */
void sim__trace_resource_span(sim_engine *e, sim_resource *r, sim_track_kind kind,
                              sim_time start, sim_time end, double amount);

/* ---- the engine ----------------------------------------------------------------------- */

typedef struct sim_activity_chunk sim_activity_chunk;

struct sim_engine {
  sim_time now;              /* simulated clock */
  sim_eventq queue;          /* pending events */
  uint64_t events_processed; /* events fired */
  uint64_t context_switches; /* switches into and out of actors */
  sim_actor *current;        /* the running actor, NULL on the engine's own stack */
  sim_actor **actors;        /* every actor in spawn order (kept after death for handles) */
  size_t n_actors, cap_actors; /* entries, allocated */
  sim_solver solver;         /* max-min sharing state */
  sim_resource **resources;  /* cpus and links in creation order (freed with the engine) */
  size_t n_resources, cap_resources; /* entries, allocated */
  sim_mempool **mempools;    /* memory pools in creation order */
  size_t n_mempools, cap_mempools; /* entries, allocated */
  sim_activity *free_activities; /* recycled activities */
  sim_activity_chunk *activity_chunks; /* every activity allocation, for the final free */
  sim_trace trace;           /* recorded spans */
  sim_predicate_fn stop;     /* sim_set_stop_check's test (NULL: none) */
  void *stop_arg;            /* its argument */
  int stopped;               /* the last run loop returned because stop held */
  int solo_off;              /* 1: comms never go solo (sim_engine_set_closed_form, for tests
                                and benches that compare both ways) */
  sim_solo_batch **open;     /* from open_first on: batches with a pending event, by
                                completion time (ascending) */
  size_t open_first;         /* index of the earliest */
  size_t n_open, cap_open;   /* entries from open_first, allocated */
  sim_solo_batch *free_batches; /* recycled batches */
  sim_solo_batch *recent[2]; /* the last two batches batch_at found, open or not (engine.c) */
  uint64_t transfers;        /* comms started and neither complete nor withdrawn */
  uint64_t *res_slot;        /* per resource id: (pass << 32) | slot, the slot in c->held a
                                collective's closed-form planning pass gave it; a held link's
                                entry stays until its run's restore reads it (collective.c) */
  size_t cap_res_slot;       /* its entries */
  uint32_t slot_pass;        /* the last planning pass's stamp */
  sim_event_fn quiet;        /* sim_engine_on_quiet's callback, NULL when not armed */
  void *quiet_arg;           /* its argument */
};

/* ---- fast-forward (snapshot.c) ------------------------------------------------------- */

/* An exec in flight at a snapshot by its action's address: the lookup behind ev_exec (the
** address orders the lookup only; the answer, an exec's index, does not depend on it). */
typedef struct sim__exec_key {
  uintptr_t addr;            /* the exec's action */
  uint32_t index;            /* 1 + its index in execs */
} sim__exec_key;

struct sim_snapshot {
  sim_time now;              /* when it was taken (a quiet point) */
  uint64_t next_seq;         /* the next event's sequence then: older events were pending */
  uint64_t events;           /* events fired so far */
  uint64_t switches;         /* context switches so far */
  size_t dropped;            /* trace events refused (a full trace) so far */
  sim_queued_event *ev;      /* the live events, by (time, sequence) */
  size_t n_ev, cap_ev;       /* entries, allocated */
  uint64_t *words;           /* the state besides the events: the engine's, then the program's */
  size_t n_words, cap_words; /* entries, allocated */
  double *done;              /* each resource's units delivered (a statistic: sim_link_bytes) */
  size_t cap_done;           /* entries allocated (n_resources used) */
  const void **execs;        /* the execs in flight (their actions), in the words' order */
  size_t n_execs, cap_execs; /* entries, allocated */
  uint32_t *ev_exec;         /* per event: 1 + the index in execs of the exec it completes, or 0 */
  size_t cap_ev_exec;        /* entries allocated */
  sim__exec_key *keys;       /* the execs by address, to find an event's exec in log time */
  size_t cap_keys;           /* entries allocated */
};

/* Grows *arr (of elements of `elem` bytes) to hold at least `need`; aborts when out of memory.
** Inline, as nearly every call (an append on a hot path) has room already. */
void sim__grow_to(void *arr, size_t *cap, size_t need, size_t elem);
static inline void sim__grow(void *arr, size_t *cap, size_t need, size_t elem) {
  if (need > *cap) sim__grow_to(arr, cap, need, elem);
}

#endif
