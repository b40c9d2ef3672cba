/*
** coordinator.h: tf.distribute.experimental.coordinator.ClusterCoordinator (ds_coordinator_).
**
** The coordinator of ParameterServerStrategy V2 training: schedule() puts a closure on a global
** FIFO and returns a RemoteValue at once; each worker is a simulated actor that, whenever idle,
** pulls the next closure (its own tagged queue of resource closures first, then the global FIFO:
** no assignment to a particular worker, no priority) and runs it on its cpu. join() waits for
** the queue to drain; fetch() for one value. Rules from TF's cluster_coordinator.py, values.py and
** remote_value.py (reference sheet section 3); docs/strategies.md maps them one by one.
**
** It is built over its own description of the workers (index, TF device name, cpu), so it does
** not depend on ParameterServerStrategy. The strategy's wrapper is
**   ds_cluster_coordinator_new(ds_strategy *s, ds_status *st): ValueError unless s is a
**   ParameterServerStrategy V2; one coordinator per strategy (a second call returns the first);
**   it passes the strategy's workers ("/job:worker/replica:0/task:W", their CPUs) and num_ps.
**
** Who waits, and how simulated time passes. schedule (only while the FIFO is full), join, fetch
** and ds_coordinator_fetch block. Called from an actor (a chief task's, so a scenario can charge
** the coordinator's own time or kill it), they block that actor until the condition holds. Called
** from the main program, they drive the engine (sim_run_while) until it holds, and fail with
** RuntimeError if the engine runs out of events first (every worker dead: TF would wait forever).
** From inside a scheduled closure they are a RuntimeError. done() never blocks.
**
** Errors (TF's _CoordinatedClosureQueue): the first error a closure raises is stored, later ones
** dropped. The next schedule, join or done then cancels the closures in flight (their workers'
** actors are killed, then the closure's on-kill cleanup runs, the actor is replaced), marks every
** queued closure cancelled (its value: CancelledError), raises the error once and clears it;
** scheduling works again afterwards. The schedule call that raises has already queued its own
** closure, which is cancelled with the rest.
**
** How a closure's error is classified (TF's WorkerPreemptionHandler.wait_on_failure, in order):
**   1. DS_COORDINATOR_PS_RPC_ERROR with UnavailableError or AbortedError: a possibly transient
**      parameter-server failure. Each /job:ps/replica:0/task:P named adds 1 to P's counter (never
**      reset); while every counter named stays < 3 the closure goes back to the FIFO's tail; the
**      report that brings one to 3 propagates as the closure's error.
**   2. DeadlineExceededError: the global count goes up by 1; ignored (closure back to the tail)
**      while count < num_workers / 10 (integer division: never with fewer than 20 workers).
**   3. CancelledError naming "/job:": derived from another task's failure, back to the tail.
**   4. UnavailableError or AbortedError naming "/job:worker" (and not the PS text):
**      a worker failure, handled as ds_coordinator_worker_failed below but without a kill.
**   5. anything else: the closure's error (first one stored, see above).
**
** Worker failure: the closure in flight goes back to the TAIL of the global FIFO (no retry limit:
** a function may run more than once; ds_closure_attempt counts the runs), the worker is dead, its
** tagged queue is emptied and its resource values (datasets, iterators) become ABORTED; the other
** workers keep draining the FIFO. On recovery its resource closures are queued again on its
** tagged queue in creation order (state restarts: a rebuilt iterator starts from the first
** element), run before anything else, and the worker pulls again. TF's worker thread waits 3600 s
** for the recovery; podsim marks a worker still down then as given up (DS_WORKER_GIVEN_UP,
** counted) and still accepts its recovery later: TF at that point proceeds as if recovered,
** its rebuild or next closure fails against the dead host and it waits another 3600 s, so a
** returning host is picked up whenever it comes back. That one doomed attempt per hour is not
** modelled.
**
** A parameter-server failure (ds_coordinator_ps_failed) is not recoverable: UnavailableError
** with TF's RPC text is stored as the error, so the next schedule/join/done cancels what is
** pending and raises it; training is not stopped (the program restarts from a checkpoint).
**
** Left out: TF's watchdog (off by default; it only logs when no closure completes for a while,
** never raises); the coordination-service failure handler (TF_PSS_ENABLE_COORDINATION_SERVICE).
*/
#ifndef PODSIM_COORDINATOR_H
#define PODSIM_COORDINATOR_H

#include <stddef.h>
#include <stdint.h>

#include "sim/sim.h"
#include "strategies/ps/closure.h"
#include "strategies/input/dataset.h"
#include "strategies/ps/remote_value.h"
#include "strategies/core/status.h"

/* _CLOSURE_QUEUE_MAX_SIZE: the global FIFO's bound; schedule blocks while it is full. */
#define DS_COORDINATOR_QUEUE_MAX ((size_t)256 * 1024)
/* _WORKER_MAXIMUM_RECOVERY_SEC. */
#define DS_COORDINATOR_RECOVERY_WAIT_S 3600.0
/* TF_COORDINATOR_IGNORE_TRANSIENT_PS_FAILURES' default. */
#define DS_COORDINATOR_TRANSIENT_PS_FAILURES 3

typedef enum {
  DS_WORKER_ALIVE = 0,     /* pulling closures */
  DS_WORKER_DEAD,          /* failed, waiting for recovery */
  DS_WORKER_GIVEN_UP       /* dead for longer than the 3600 s recovery wait */
} ds_worker_state;

/* A coordinator over nworkers workers (device names such as "/job:worker/replica:0/task:0", and
** the cpu each runs closures on; both copied/borrowed for the coordinator's life) and nps
** parameter servers (for the transient-failure counters). Spawns one actor per worker at the
** current time. ValueError when nworkers < 1, nps < 0, or a name or cpu is missing. */
ds_coordinator *ds_coordinator_new(sim_engine *e, int nworkers, const char *const *worker_device_names,
                                   sim_cpu *const *worker_cpus, int nps, ds_status *st);
/* Kills the worker actors and cancels whatever is pending (remote values still held read
** CancelledError). Free before the engine. */
void ds_coordinator_free(ds_coordinator *c);
/* The FIFO's bound (default DS_COORDINATOR_QUEUE_MAX; 0 means unbounded, as TF's 0). */
void ds_coordinator_set_queue_capacity(ds_coordinator *c, size_t capacity);

/* ClusterCoordinator.schedule(fn, args): 0 and, when out is not NULL, a new remote value in *out
** (the caller frees it). TypeError unless f->compiled; ValueError for a remote-value argument;
** otherwise the pending error, if any (then *out is NULL and the closure is cancelled). */
int ds_coordinator_schedule(ds_coordinator *c, const ds_function *f, int nargs,
                            const ds_closure_arg *args, ds_remote_value **out, ds_status *st);
/* ClusterCoordinator.join(): 0 once the FIFO is empty and nothing is in flight; or the pending
** error (-1). Resource closures on tagged queues are not waited for (TF's neither). */
int ds_coordinator_join(ds_coordinator *c, ds_status *st);
/* ClusterCoordinator.done(): 1 when the FIFO is empty and nothing is in flight, 0 if not, -1
** with the pending error. */
int ds_coordinator_done(ds_coordinator *c, ds_status *st);
/* ClusterCoordinator.fetch(structure): out[i] is items[i]'s value (a remote value fetched, a
** value passed through). A per-worker item: TypeError (podsim's fetch returns values; TF would
** pass it through unchanged). The first failing fetch's error, -1. */
int ds_coordinator_fetch(ds_coordinator *c, int n, const ds_closure_arg *items,
                         const ds_value **out, ds_status *st);

/* ---- per-worker datasets (TF's PerWorkerValues of RemoteValues) ---- */
/* dataset_fn builds one worker's dataset (a new reference), or NULL with st set. */
typedef ds_dataset *(*ds_dataset_fn)(void *user, ds_status *st);
/* create_per_worker_dataset(dataset_fn): dataset_fn is traced once here, with variable creation
** refused (a ds_variable_new inside: ValueError "Creating variables in `dataset_fn` is not
** allowed."; its own error is raised as it is), then one resource closure per worker builds that
** worker's dataset (a dead worker's is ABORTED until it recovers). Owned by the coordinator. */
ds_per_worker *ds_coordinator_create_per_worker_dataset(ds_coordinator *c, ds_dataset_fn dataset_fn,
                                                        void *user, ds_status *st);
/* iter(per_worker_dataset): one resource closure per worker making an iterator over that
** worker's dataset. TypeError unless datasets came from create_per_worker_dataset. */
ds_per_worker *ds_coordinator_per_worker_iter(ds_coordinator *c, ds_per_worker *datasets, ds_status *st);
/* Worker w's remote value (w in range; NULL otherwise). */
ds_remote_value *ds_coordinator_per_worker_value(const ds_per_worker *pw, int w);

/* ---- failures (fault injection: from an event callback or an actor) ---- */
/* Worker w fails: its actor is killed mid-closure (then the closure's on-kill cleanup runs, its
** wait already withdrawn, so it may free what the wait held), the
** closure goes to the FIFO's tail, resource values become ABORTED. No-op if already down.
** ValueError for a bad index. */
int ds_coordinator_worker_failed(ds_coordinator *c, int w, ds_status *st);
/* Worker w is back: its resource closures are queued again and a new actor starts pulling.
** No-op if alive. ValueError for a bad index. */
int ds_coordinator_worker_recovered(ds_coordinator *c, int w, ds_status *st);
/* Parameter server ps is gone for good: UnavailableError (TF's RPC text naming
** /job:ps/replica:0/task:ps) becomes the pending error unless one is pending already, and later
** reports naming it propagate at once. ValueError for a bad index. */
int ds_coordinator_ps_failed(ds_coordinator *c, int ps, ds_status *st);

/* The coordinator process is gone (a lost chief; TF's queue dies with it) and the next one will
** use this object. The closures still queued are cancelled (never run; counted abandoned); those
** running on workers go on to their end (what they pushed stays pushed) but are no longer in
** flight: join and done do not wait for them, an error cancels them not, and their outcome is
** dropped (their values read CancelledError; a worker failure cancels them rather than putting them
** back). A pending error is forgotten. The per-worker datasets and iterators stay readable by
** those closures but belong to no worker any more: the next process makes its own with
** create_per_worker_dataset and iter, which start at element 0 as a new TF coordinator's do.
** Scheduling works at once. */
void ds_coordinator_abandon(ds_coordinator *c);

/* ---- counters, for the scenario program ---- */
typedef struct ds_coordinator_stats {
  uint64_t scheduled;        /* schedule calls that queued a closure */
  uint64_t completed;        /* closures that returned a value */
  uint64_t failed;           /* closures whose own error was kept or dropped (rule 5, rule 1's 3rd) */
  uint64_t retried;          /* re-queued after a worker failure (killed or reported) */
  uint64_t transient_retries;/* re-queued after an ignored PS, deadline or derived-cancel error */
  uint64_t cancelled;        /* cancelled after an error was raised (queued or in flight) */
  uint64_t worker_failures;  /* times a worker went down */
  uint64_t workers_given_up; /* times a worker stayed down past the 3600 s wait */
  uint64_t abandoned;        /* queued closures ds_coordinator_abandon cancelled (also cancelled) */
  uint64_t orphaned;         /* running closures it left to finish, their outcome dropped */
} ds_coordinator_stats;
ds_coordinator_stats ds_coordinator_get_stats(const ds_coordinator *c);
int             ds_coordinator_num_workers(const ds_coordinator *c);
/* Closures worker w completed (returned a value). */
uint64_t        ds_coordinator_worker_closures_run(const ds_coordinator *c, int w);
ds_worker_state ds_coordinator_worker_state(const ds_coordinator *c, int w);
/* Closures on the global FIFO now, and in flight. */
size_t          ds_coordinator_queued(const ds_coordinator *c);
int             ds_coordinator_in_flight(const ds_coordinator *c);

/* Fast-forward (scenarios/programs/ps_train.c): the length of the run of never-attempted
** function closures at the FIFO's head, and their completion without running them: the first n
** leave the FIFO as completed closures (their values, if held, get none: a fast-forwarded
** program schedules with out = NULL), done[w] of them counted as worker w's. */
size_t ds_coordinator_fresh_head(const ds_coordinator *c);
void   ds_coordinator_skip(ds_coordinator *c, size_t n, const uint64_t *done);

#endif
