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

/* Seconds <-> picoseconds; sim_time_from_s rounds to the nearest picosecond. */
sim_time sim_time_from_s(double seconds);
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
** left that could wake them (a deadlock: sim_deadlocked_actors names them). */
int  sim_run(sim_engine *e);
/* Runs every event with time <= until. */
void sim_run_until(sim_engine *e, sim_time until);

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
/* Waits for every activity in the array, then frees them. */
int  sim_wait_all(sim_actor *self, sim_activity **acts, size_t n);
/* Fired (from an event) when the activity completes; lets engine-side code chain transfers.
** The activity is freed after the callback returns, unless a sim_wait_all collects it: then the
** callback is a notification at the activity's own completion time (while the waiter still
** waits for the others), and a kill of the waiter withdraws the activity before it can run. */
typedef void (*sim_activity_done_fn)(sim_engine *e, sim_activity *act, void *arg);
void sim_activity_on_done(sim_activity *act, sim_activity_done_fn fn, void *arg);

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
** creation order (deterministic). */
void sim_trace_enable(sim_engine *e, int on);
int  sim_trace_track(sim_engine *e, const char *track_name);
void sim_trace_span(sim_engine *e, int track, const char *name, const char *category,
                    sim_time start, sim_time end);
void sim_trace_instant(sim_engine *e, int track, const char *name, const char *category,
                       sim_time at);
/* Writes Chrome trace event JSON (one tid per track, ts/dur in microseconds). Returns 0 or -1. */
int  sim_trace_write_json(const sim_engine *e, const char *path);

#endif
