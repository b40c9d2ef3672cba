/*
** sim.h: the engine's public interface (clock, events, actors, activities, resources).
**
** Everything here is deterministic: simulated time is an int64 count of picoseconds, events
** fire in (time, insertion sequence) order, and no behaviour depends on pointer values, hash
** order or the wall clock. Struct bodies live in simInt.h; users hold opaque handles.
**
** sim/ never includes models/, strategies/, plots/ or scenarios/.
*/
#ifndef PODSIM_SIM_H
#define PODSIM_SIM_H

#include <stddef.h>
#include <stdint.h>

typedef int64_t sim_time;                 /* picoseconds since the start of the run */
#define SIM_PS_PER_S  INT64_C(1000000000000)
#define SIM_TIME_NEVER INT64_MAX
/* Simulated time podsim runs to at most: 2^62 ps (53.4 days), half of what int64 holds, so that
** no sum of times in a step can overflow; nothing is scheduled past it. */
#define SIM_TIME_HORIZON (INT64_C(1) << 62)
/* The horizon in seconds (4611686.018... s, 53.4 days): the bound load checks times against. */
#define SIM_TIME_HORIZON_S ((double)SIM_TIME_HORIZON / (double)SIM_PS_PER_S)

/* Seconds <-> picoseconds; sim_time_from_s rounds to the nearest picosecond and saturates at
** SIM_TIME_NEVER (or -SIM_TIME_NEVER) where int64 picoseconds cannot hold the value, rather than
** wrapping: a time past the clock's range is one that never comes. */
sim_time sim_time_from_s(double seconds);
/* a + b for a, b >= 0, saturating at SIM_TIME_NEVER: the sum of two times each up to the
** horizon is up to 2^63 ps, one past what int64 holds. */
static inline sim_time sim_time_add(sim_time a, sim_time b) { return b > SIM_TIME_NEVER - a ? SIM_TIME_NEVER : a + b; }
double   sim_time_to_s(sim_time t);

typedef struct sim_engine sim_engine;
typedef struct sim_actor sim_actor;
typedef struct sim_cpu sim_cpu;           /* a compute unit with a rate (FLOP/s) */
typedef struct sim_link sim_link;         /* one direction of a link: bandwidth + latency */
typedef struct sim_mempool sim_mempool;   /* HBM or host RAM: a capacity */
typedef struct sim_barrier sim_barrier;   /* group synchronisation */

/* ---- engine and raw events ------------------------------------------------------------ */

sim_engine *sim_engine_new(void);
void        sim_engine_free(sim_engine *e);
sim_time    sim_now(const sim_engine *e);
uint64_t    sim_events_processed(const sim_engine *e);
/* On (the default), a collective's transfer whose links are idle is computed in closed form
** and completed with the others due at the same picosecond by one event; off, every transfer
** is a latency event and a flow. The simulated times are the same either way (engine.c
** invariants 7 to 9); tests and benches turn it off to compare. */
void        sim_engine_set_closed_form(sim_engine *e, int on);

/* A handle stays valid (and harmless to cancel) after its event fired or was cancelled:
** the slot's generation no longer matches. */
typedef struct { uint32_t slot; uint32_t generation; } sim_event_handle;
typedef void (*sim_event_fn)(sim_engine *e, void *arg);

/* Schedules fn(e, arg) at absolute time `at` (>= sim_now). Equal times fire in call order. */
sim_event_handle sim_schedule(sim_engine *e, sim_time at, sim_event_fn fn, void *arg);
/* Marks the event cancelled; returns 1 if it was pending, 0 if it had already fired/cancelled. */
int  sim_cancel(sim_engine *e, sim_event_handle h);
size_t sim_pending_events(const sim_engine *e);

/* Runs until no event is pending. Returns 0, or -1 if actors are still blocked with nothing
** left that could wake them (a deadlock: sim_deadlocked_actors names them), or 1 when
** stopped by sim_set_stop_check's test. */
int  sim_run(sim_engine *e);
/* Runs every event with time <= until. */
void sim_run_until(sim_engine *e, sim_time until);
/* For a main program that waits on the simulation (a coordinator's join): fires events while
** going(arg) holds, checking it before each event. Returns 0 once going is false, or -1 when it
** still holds and no event is left to change it (the wait would never end), or 1 when stopped
** by sim_set_stop_check's test. */
typedef int (*sim_predicate_fn)(void *arg);
int  sim_run_while(sim_engine *e, sim_predicate_fn going, void *arg);
/* Lets the host end a long run early (an interrupted user, a deadline): sim_run and
** sim_run_while test stop(arg) every SIM_STOP_CHECK_EVENTS events and, once it holds, return 1
** with the simulation left where it was (sim_engine_free still releases it). The engine knows
** nothing of why; sim_stopped says whether the last run loop ended this way. */
#define SIM_STOP_CHECK_EVENTS 256
void sim_set_stop_check(sim_engine *e, sim_predicate_fn stop, void *arg);
int  sim_stopped(const sim_engine *e);
/* Whether the stop test holds now, for set-up done outside the run loop: spawning 100,000
** actors takes seconds, and a host that asked to stop should not wait for them. */
int  sim_stop_asked(sim_engine *e);

/* ---- fast-forward of a periodic steady state (snapshot.c, issue 16) -------------------- */

/* Calls fn(e, arg) once, from the run loop, at the first quiet point from now on: no transfer
** in flight (execs may be) and every event of the current picosecond fired (engine.c invariant
** 10). fn runs on the engine's stack and may arm the next one; NULL disarms. */
void sim_engine_on_quiet(sim_engine *e, sim_event_fn fn, void *arg);
/* The state at a quiet point: pending events and state words (snapshot.c's design notes). */
typedef struct sim_snapshot sim_snapshot;
sim_snapshot *sim_snapshot_new(void);
void     sim_snapshot_free(sim_snapshot *s);
/* Records e's state now (in fn of sim_engine_on_quiet); the program then adds its own words. */
void     sim_snapshot_take(sim_engine *e, sim_snapshot *s);
void     sim_snapshot_word(sim_snapshot *s, uint64_t w);
sim_time sim_snapshot_time(const sim_snapshot *s);
/* With a taken before b: 0 unless b's state is provably a's shifted by their distance P;
** then how many periods of P (at most max) may be skipped from b before any event older than a
** fires. */
long     sim_snapshot_periods(const sim_snapshot *a, const sim_snapshot *b, long max);
/* At b's quiet point, nothing run since: moves the run k periods on, to the state the run would
** reach at b + kP (the period's events shifted, older ones kept; the event and context switch
** counts as if the k periods had run). The program moves its own state with it. */
void     sim_engine_skip(sim_engine *e, const sim_snapshot *a, const sim_snapshot *b, long k);

/* ---- actors ---------------------------------------------------------------------------- */

typedef void (*sim_actor_fn)(sim_actor *self, void *arg);
/* Called when the actor is killed, on the engine's stack, to release what it holds. */
typedef void (*sim_actor_cleanup_fn)(sim_actor *self, void *arg);

/* Creates an actor that starts running at the current time, after already-pending events. */
sim_actor  *sim_actor_spawn(sim_engine *e, const char *name, sim_actor_fn fn, void *arg);
void        sim_actor_on_kill(sim_actor *a, sim_actor_cleanup_fn fn, void *arg);
const char *sim_actor_name(const sim_actor *a);
sim_engine *sim_actor_engine(sim_actor *a);
int         sim_actor_is_alive(const sim_actor *a);
/* The actor running now, or NULL when the caller is the main program or an event callback. */
sim_actor  *sim_current_actor(const sim_engine *e);
/* Kills an actor from an event or another actor: its blocking call never returns; the
** on-kill callback runs; its pending activity is withdrawn from the resources it used. */
void        sim_actor_kill(sim_actor *a);
uint64_t    sim_context_switches(const sim_engine *e);
size_t      sim_deadlocked_actors(const sim_engine *e, const char **names, size_t max);

/* Blocking calls, only from inside an actor. Each returns SIM_OK when the activity completed. */
enum { SIM_OK = 0, SIM_FAILED = -1 };
int sim_sleep(sim_actor *self, sim_time duration);
/* Computes `flops` on cpu; concurrent execs on one cpu share its rate max-min fairly. */
int sim_exec(sim_actor *self, sim_cpu *cpu, double flops);
/* Moves `bytes` over the route (links in order): latency = sum of link latencies, then the
** bytes at the max-min fair rate over every link of the route. bytes == 0 costs the latency. */
int sim_comm(sim_actor *self, sim_link *const *route, size_t hops, double bytes);

/* Non-blocking activities, to start several and wait for all (a collective step). */
typedef struct sim_activity sim_activity;
sim_activity *sim_exec_start(sim_engine *e, sim_cpu *cpu, double flops);
sim_activity *sim_comm_start(sim_engine *e, sim_link *const *route, size_t hops, double bytes);
/* Waits for every activity in the array (NULL entries: slots for sim_wait_extend), then frees
** them. */
int  sim_wait_all(sim_actor *self, sim_activity **acts, size_t n);
/* Fired (from an event) when the activity completes; lets engine-side code chain transfers.
** The activity is freed after the callback returns, unless a sim_wait_all collects it: then the
** callback is a notification at the activity's own completion time (while the waiter still
** waits for the others), and a kill of the waiter withdraws the activity before it can run. */
typedef void (*sim_activity_done_fn)(sim_engine *e, sim_activity *act, void *arg);
void sim_activity_on_done(sim_activity *act, sim_activity_done_fn fn, void *arg);
/* A dataflow edge: from the notification of `from` (an activity a sim_wait_all collects), next
** (just started, its on_done already set) joins the same wait in the waiter's array at `slot`,
** which the waiter left NULL. The waiter resumes only once next completes too, a kill withdraws
** it with the others, and the wait frees it. Slots never filled stay NULL and are skipped. */
void sim_wait_extend(sim_activity *from, size_t slot, sim_activity *next);

/* Group synchronisation: `parties` actors call wait; all resume when the last arrives,
** in arrival order. Reusable (a generation count). */
sim_barrier *sim_barrier_new(sim_engine *e, int parties);
void         sim_barrier_free(sim_barrier *b);
int          sim_barrier_wait(sim_actor *self, sim_barrier *b);

/* ---- resources ------------------------------------------------------------------------- */

/* Resources belong to the engine and are freed with it. Names appear in the trace. */
sim_cpu  *sim_cpu_new(sim_engine *e, const char *name, double flops_per_s);
void      sim_cpu_set_rate(sim_cpu *c, double flops_per_s);
const char *sim_cpu_name(const sim_cpu *c);
sim_link *sim_link_new(sim_engine *e, const char *name, double bytes_per_s, sim_time latency);
/* Capacity may change during a run (faults); flows in progress are re-shared from now. */
void      sim_link_set_bandwidth(sim_link *l, double bytes_per_s);
double    sim_link_bandwidth(const sim_link *l);
sim_time  sim_link_latency(const sim_link *l);
const char *sim_link_name(const sim_link *l);
/* Bytes moved over the link so far (for utilisation figures). */
double    sim_link_bytes(const sim_link *l);

sim_mempool *sim_mempool_new(sim_engine *e, const char *name, uint64_t capacity_bytes);
/* Returns 0 and reserves, or -1 (nothing reserved) when used + bytes > capacity. */
int       sim_mempool_alloc(sim_mempool *m, uint64_t bytes);
void      sim_mempool_release(sim_mempool *m, uint64_t bytes);
uint64_t  sim_mempool_used(const sim_mempool *m);
uint64_t  sim_mempool_peak(const sim_mempool *m);
uint64_t  sim_mempool_capacity(const sim_mempool *m);
const char *sim_mempool_name(const sim_mempool *m);

/* ---- trace ----------------------------------------------------------------------------- */

/* When enabled, every exec is recorded on its cpu's track and every comm on each link of its
** route, as complete events; users add their own spans and instants. Tracks are numbered in
** creation order (deterministic). At most a limit of events is kept (default
** SIM_TRACE_DEFAULT_LIMIT): later ones are counted, not stored, so a long run's trace keeps
** its first part whole and memory stays bounded (about 56 bytes an event). */
#define SIM_TRACE_DEFAULT_LIMIT ((size_t)1000000)

typedef enum { SIM_TRACK_USER = 0, SIM_TRACK_CPU, SIM_TRACK_LINK } sim_track_kind;

void sim_trace_enable(sim_engine *e, int on);
void sim_trace_set_limit(sim_engine *e, size_t max_events);
int  sim_trace_track(sim_engine *e, const char *track_name);
/* The process (a host) a track is drawn in. By default: the task of a TF device name
** ("/job:worker/replica:0/task:1/device:TPU:0" -> "/job:worker/replica:0/task:1"), else the name
** up to its first '.' ("worker0.cpu" -> "worker0", "ici.3.x+" -> "ici"). */
void sim_trace_track_group(sim_engine *e, int track, const char *group);
/* Writes group_of(name) into buf (the default rule above); returns buf. */
const char *sim_trace_default_group(const char *name, char *buf, size_t len);
void sim_trace_span(sim_engine *e, int track, const char *name, const char *category,
                    sim_time start, sim_time end);
void sim_trace_instant(sim_engine *e, int track, const char *name, const char *category,
                       sim_time at);

/* Reading the trace back (for charts): tracks by id, events in recording (completion) order. */
typedef struct sim_trace_record {
  int track;               /* track id */
  const char *name;        /* "exec", "comm", or the user's name; valid while the engine lives */
  const char *category;    /* "compute", "communication", or the user's category */
  sim_time start;          /* when it began */
  sim_time end;            /* when it ended (start for an instant) */
  double amount;           /* FLOPs of an exec, bytes of a comm, 0 for user events */
  int instant;             /* 1: an instant */
} sim_trace_record;

size_t         sim_trace_num_tracks(const sim_engine *e);
const char    *sim_trace_track_name(const sim_engine *e, int track);
sim_track_kind sim_trace_track_kind(const sim_engine *e, int track);
/* The track's resource capacity now (FLOP/s or bytes/s); 0 for a user track. */
double         sim_trace_track_capacity(const sim_engine *e, int track);
size_t         sim_trace_num_events(const sim_engine *e);
sim_trace_record sim_trace_event_at(const sim_engine *e, size_t i);
/* Events refused by the limit, and the simulated time of the first (SIM_TIME_NEVER: none). */
size_t         sim_trace_dropped(const sim_engine *e, sim_time *first);

/* Writes Chrome trace event JSON (docs/reports.md): a process per group, a thread per track
** (more when its spans overlap), metadata naming and ordering both. Returns 0 or -1. */
int  sim_trace_write_json(const sim_engine *e, const char *path);

#endif
