/*
** coordinator.c: the ClusterCoordinator's queues, workers, errors and failures (ds_coordinator_
** in coordinator.h).
**
** Design notes
** ------------
** TF runs one thread per worker around a locked _CoordinatedClosureQueue; podsim runs one actor
** per worker, and the locks disappear: actors are coroutines and only one runs at a time, so every
** function here is atomic in simulated time. Two condition variables (sim/cond.h) replace TF's
** five: `work` wakes idle workers when a closure is queued, `changed` wakes a coordinator actor
** waiting in schedule, join or fetch after any change of state (a closure taken, finished,
** failed, cancelled; a value set). A main-program caller drives the engine instead and checks
** the same predicates between events.
**
** Cancelling an in-flight closure is a kill: the worker's actor is killed where it blocks (its
** activity withdrawn from the resources it used), the closure's cleanup runs, and a fresh actor
** takes the worker's place. TF's cancellation manager aborts the running function the same way.
**
** Invariants:
**  1. in_flight == the number of workers whose `current` is a function closure not orphaned
**     (ds_coordinator_abandon); a closure is
**     counted from the moment a worker takes it from the FIFO until it completes, fails, is put
**     back or cancelled (resource closures never count: TF's tagged queue does not).
**  2. A closure is in exactly one place: the FIFO, a tagged queue (resources), a worker's
**     `current`, or gone (freed once its outcome is final; resource closures belong to their value).
**  3. A worker's actor is alive iff its state is ALIVE (a dead worker has no actor pulling).
**  4. error is set only between a closure's failure and the next schedule/join/done, which raise
**     it after the FIFO and the in-flight closures were cancelled (so in_flight == 0 afterwards).
**  5. Bookkeeping for a killed actor happens before the kill, in the killer's code: a worker that
**     kills itself (a closure reporting its own host's failure) never returns from sim_actor_kill.
**  6. A killed closure's on-kill cleanup runs after the kill (kill_worker_actor): the kill
**     withdraws the actor's wait first, so the cleanup may free what that wait pointed to (a
**     parameter-server read's transfers). A self-kill is the exception: a running actor waits on
**     nothing, and the cleanup must run before the kill, which never returns.
*/
#include "strategies/ps/coordinator.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cond.h"
#include "strategies/ps/coordinatorInt.h"
#include "strategies/core/strategiesInt.h"

typedef struct fifo {
  ds_closure *head;          /* next out */
  ds_closure *tail;          /* last in */
  size_t n;                  /* entries */
} fifo;

typedef struct worker {
  ds_coordinator *c;         /* owner */
  int index;                 /* task index */
  char device[DS_DEVICE_NAME_MAX]; /* "/job:worker/replica:0/task:W"; names its actor too */
  sim_cpu *cpu;              /* where its closures compute (borrowed) */
  sim_actor *actor;          /* the closure loop now running, when ALIVE (invariant 3) */
  ds_worker_state state;     /* alive, dead, given up */
  fifo tagged;               /* its resource closures, served before the FIFO */
  ds_closure *current;       /* the function closure it runs now, or NULL */
  ds_remote_value **resources; /* its resource values in creation order */
  size_t n_resources, cap_resources; /* entries, allocated */
  uint64_t closures_run;     /* functions it completed */
  sim_event_handle give_up;  /* end of the 3600 s recovery wait while dead */
} worker;

struct ds_per_worker {
  ds__closure_kind kind;     /* DATASET or ITERATOR */
  ds_remote_value **values;  /* one per worker */
  ds_per_worker *next;       /* the coordinator's list of them */
};

struct ds_coordinator {
  sim_engine *e;             /* the simulation */
  int nworkers;              /* entries in workers */
  int nps;                   /* parameter servers (entries in ps_reports) */
  worker *workers;           /* in task order */
  fifo queue;                /* the global FIFO of function closures */
  size_t capacity;           /* its bound, 0 = none */
  int in_flight;             /* invariant 1 */
  int has_error;             /* error is pending (invariant 4) */
  ds_status error;           /* the first error since the last raise */
  sim_cond *work;            /* idle workers wait here */
  sim_cond *changed;         /* a coordinator actor waits here */
  int64_t next_id;           /* id of the next function scheduled */
  int *ps_reports;           /* possibly transient failures reported per parameter server */
  int timeouts;              /* DeadlineExceeded errors seen */
  ds_coordinator_stats stats; /* counters */
  ds_per_worker *per_worker; /* every per-worker value made, newest first */
};

static const char CANCELLED_TEXT[] =
  "The corresponding function is cancelled. Please reschedule the function.";

/* ---- queues ------------------------------------------------------------------------------ */

static void fifo_push(fifo *q, ds_closure *cl) {
  cl->next = NULL;
  if (q->tail) q->tail->next = cl;
  else q->head = cl;
  q->tail = cl;
  q->n++;
}

static ds_closure *fifo_pop(fifo *q) {
  ds_closure *cl = q->head;
  if (cl == NULL) return NULL;
  q->head = cl->next;
  if (q->head == NULL) q->tail = NULL;
  q->n--;
  return cl;
}

void ds__coordinator_changed(ds_coordinator *c) { sim_cond_notify_all(c->changed); }

static void queue_closure(ds_coordinator *c, fifo *q, ds_closure *cl) {
  fifo_push(q, cl);
  sim_cond_notify_all(c->work);
}

/* ---- outcomes of a function closure (each frees it: invariant 2) ---------------------------- */

/* The value stops pointing at the closure about to be freed (remote_value.c invariant 2). */
static ds_remote_value *detach(ds_closure *cl) {
  ds_remote_value *rv = cl->out;
  if (rv != NULL) rv->closure = NULL;
  ds__closure_free(cl);
  return rv;
}

static void cancel(ds_coordinator *c, ds_closure *cl) {
  c->stats.cancelled++;
  ds_status st;
  ds_status_set(&st, DS_CANCELLED_ERROR, "%s", CANCELLED_TEXT);
  ds_remote_value *rv = detach(cl);
  if (rv != NULL) ds__remote_value_set_error(rv, &st);
}

/* An orphaned closure ended (ds_coordinator_abandon): whatever it returned or raised, nobody is
** left to read it, so its value (a holder may still free it) reads CancelledError. */
static void drop_orphan(ds_coordinator *c, ds_closure *cl, ds_value *result) {
  ds_value_free(result);
  ds_status st;
  ds_status_set(&st, DS_CANCELLED_ERROR, "%s", CANCELLED_TEXT);
  ds_remote_value *rv = detach(cl);
  if (rv != NULL) ds__remote_value_set_error(rv, &st);
  ds__coordinator_changed(c);
}

/* TF's put_back: to the FIFO's tail (past its bound: the failing worker cannot wait for a slot),
** or cancelled when an error is pending. */
static void put_back(ds_coordinator *c, ds_closure *cl) {
  c->in_flight--;
  if (c->has_error) cancel(c, cl);
  else queue_closure(c, &c->queue, cl);
  ds__coordinator_changed(c);
}

static void complete(ds_coordinator *c, worker *w, ds_closure *cl, ds_value *result) {
  c->in_flight--;
  c->stats.completed++;
  w->closures_run++;
  ds_remote_value *rv = detach(cl);
  if (rv != NULL) ds__remote_value_set_value(rv, result);
  else ds_value_free(result);
  ds__coordinator_changed(c);
}

static void mark_failed(ds_coordinator *c, ds_closure *cl) {
  c->in_flight--;
  c->stats.failed++;
  if (!c->has_error) {
    c->has_error = 1;
    c->error = cl->status;
  }
  ds_status err = cl->status;
  ds_remote_value *rv = detach(cl);
  if (rv != NULL) ds__remote_value_set_error(rv, &err);
  ds__coordinator_changed(c);
}

/* ---- classification (TF's wait_on_failure and the Cluster's transient counters) ------------- */

static int is_ps_failure(const ds_status *e) {
  return strstr(e->message, DS_COORDINATOR_PS_RPC_ERROR) != NULL &&
         (e->kind == DS_UNAVAILABLE_ERROR || e->kind == DS_ABORTED_ERROR);
}

/* _record_and_ignore_transient_ps_failure: every parameter server the message names (TF's set,
** taken here in increasing task order) adds a report; the report reaching the threshold is not
** ignored. */
static int ignore_transient_ps(ds_coordinator *c, const ds_status *e) {
  if (!is_ps_failure(e)) return 0;
  static const char tag[] = "/job:ps/replica:0/task:";
  int named[64], n = 0;
  for (const char *p = strstr(e->message, tag); p != NULL; p = strstr(p + 1, tag)) {
    const char *d = p + sizeof tag - 1;
    if (*d < '0' || *d > '9') continue;
    int t = atoi(d), seen = 0;
    for (int i = 0; i < n; i++) seen |= named[i] == t;
    if (!seen && n < 64) named[n++] = t;
  }
  for (int i = 1; i < n; i++) /* insertion sort: a handful of tasks */
    for (int j = i; j > 0 && named[j - 1] > named[j]; j--) {
      int t = named[j];
      named[j] = named[j - 1];
      named[j - 1] = t;
    }
  for (int i = 0; i < n; i++) {
    if (named[i] >= c->nps) continue; /* a task the cluster does not have: nothing to count */
    if (++c->ps_reports[named[i]] >= DS_COORDINATOR_TRANSIENT_PS_FAILURES) return 0;
  }
  return 1;
}

/* _record_and_ignore_transient_timeouts, threshold num_workers // 10. */
static int ignore_transient_timeout(ds_coordinator *c, const ds_status *e) {
  int threshold = c->nworkers / 10;
  if (threshold <= 0 || e->kind != DS_DEADLINE_EXCEEDED_ERROR) return 0;
  return ++c->timeouts < threshold;
}

/* A CancelledError relayed from another task's failure. */
static int is_derived_cancel(const ds_status *e) {
  return e->kind == DS_CANCELLED_ERROR && strstr(e->message, "/job:") != NULL;
}

static int is_worker_failure(const ds_status *e) {
  return strstr(e->message, "/job:worker") != NULL &&
         strstr(e->message, DS_COORDINATOR_PS_RPC_ERROR) == NULL &&
         (e->kind == DS_UNAVAILABLE_ERROR || e->kind == DS_ABORTED_ERROR);
}

/* ---- workers ----------------------------------------------------------------------------- */

static void worker_main(sim_actor *self, void *arg);

static void spawn(worker *w) {
  w->actor = sim_actor_spawn(w->c->e, w->device, worker_main, w);
}

static void give_up(sim_engine *e, void *arg) {
  (void)e;
  worker *w = arg;
  w->give_up = (sim_event_handle){0, 0};
  if (w->state != DS_WORKER_DEAD) return;
  w->state = DS_WORKER_GIVEN_UP;
  w->c->stats.workers_given_up++;
  ds__coordinator_changed(w->c);
}

/* The worker is down: its resources are lost (newest first, so an iterator goes before the
** dataset it reads) and its tagged queue forgotten until recovery re-queues them all. */
static void worker_down(worker *w) {
  ds_coordinator *c = w->c;
  w->state = DS_WORKER_DEAD;
  c->stats.worker_failures++;
  w->tagged = (fifo){0};
  for (size_t i = w->n_resources; i-- > 0;) ds__remote_value_set_aborted(w->resources[i]);
  w->give_up = sim_schedule(c->e, sim_now(c->e) + sim_time_from_s(DS_COORDINATOR_RECOVERY_WAIT_S),
                            give_up, w);
  ds__coordinator_changed(c);
}

/* A worker's actor about to be killed and the on-kill cleanup of the closure it runs. */
typedef struct doomed {
  sim_actor *actor;          /* the victim */
  ds_closure_cleanup_fn cleanup; /* its closure's release, or NULL */
  void *arg;                 /* its argument */
} doomed;

/* Takes the closure a worker is running out of it before its actor is killed (invariant 5),
** keeping the closure's cleanup for kill_worker_actor: the closure may be freed meanwhile. */
static ds_closure *take_current(worker *w, doomed *d) {
  ds_closure *cl = w->current;
  w->current = NULL;
  *d = (doomed){ w->actor, cl ? cl->cleanup : NULL, cl ? cl->cleanup_arg : NULL };
  return cl;
}

/* Kills the actor, then runs the cleanup (invariant 6). An actor killing itself never returns
** from the kill; it is running, so no wait of it holds anything, and its cleanup goes first. */
static void kill_worker_actor(ds_coordinator *c, const doomed *d) {
  if (sim_current_actor(c->e) == d->actor && d->cleanup != NULL) d->cleanup(d->arg);
  sim_actor_kill(d->actor);
  if (d->cleanup != NULL) d->cleanup(d->arg);
}

/* The next closure for w: its tagged queue first, then the FIFO (counted in flight). */
static ds_closure *take(worker *w) {
  ds_coordinator *c = w->c;
  ds_closure *cl = fifo_pop(&w->tagged);
  if (cl != NULL) return cl;
  cl = fifo_pop(&c->queue);
  if (cl == NULL) return NULL;
  c->in_flight++;
  ds__coordinator_changed(c); /* a slot is free for a blocked schedule */
  return cl;
}

static void run_function(worker *w, ds_closure *cl) {
  ds_coordinator *c = w->c;
  cl->worker = w->index;
  cl->actor = w->actor;
  cl->cpu = w->cpu;
  cl->device = w->device;
  w->current = cl;
  ds_value *result = NULL;
  int rc = ds__closure_run_function(cl, &result);
  w->current = NULL;
  if (cl->orphaned) {
    w->closures_run += rc == 0;
    int lost = rc != 0 && is_worker_failure(&cl->status);
    drop_orphan(c, cl, result);
    if (lost) worker_down(w);
  } else if (rc == 0) {
    complete(c, w, cl, result);
  } else if (ignore_transient_ps(c, &cl->status) || ignore_transient_timeout(c, &cl->status) ||
             is_derived_cancel(&cl->status)) {
    c->stats.transient_retries++;
    put_back(c, cl);
  } else if (is_worker_failure(&cl->status)) {
    c->stats.retried++;
    put_back(c, cl);
    worker_down(w); /* the loop below ends: the worker waits for ds_coordinator_worker_recovered */
  } else {
    mark_failed(c, cl);
  }
}

static void worker_main(sim_actor *self, void *arg) {
  worker *w = arg;
  while (w->state == DS_WORKER_ALIVE) {
    ds_closure *cl = take(w);
    if (cl == NULL) sim_cond_wait(self, w->c->work);
    else if (cl->kind == DS__CLOSURE_FUNCTION) run_function(w, cl);
    else ds__closure_run_resource(cl);
  }
}

static int bad_index(const char *what, int i, int n, ds_status *st) {
  return ds_status_set(st, DS_VALUE_ERROR, "%s index %d is not in [0, %d)", what, i, n);
}

int ds_coordinator_worker_failed(ds_coordinator *c, int w, ds_status *st) {
  if (w < 0 || w >= c->nworkers) return bad_index("worker", w, c->nworkers, st);
  worker *wk = &c->workers[w];
  if (wk->state != DS_WORKER_ALIVE) return 0;
  doomed d;
  ds_closure *cl = take_current(wk, &d);
  if (cl != NULL && cl->orphaned) {
    drop_orphan(c, cl, NULL);
  } else if (cl != NULL) {
    c->stats.retried++;
    put_back(c, cl);
  }
  worker_down(wk);
  kill_worker_actor(c, &d); /* last: it may be the caller (invariant 5) */
  return 0;
}

int ds_coordinator_worker_recovered(ds_coordinator *c, int w, ds_status *st) {
  if (w < 0 || w >= c->nworkers) return bad_index("worker", w, c->nworkers, st);
  worker *wk = &c->workers[w];
  if (wk->state == DS_WORKER_ALIVE) return 0;
  sim_cancel(c->e, wk->give_up);
  wk->state = DS_WORKER_ALIVE;
  for (size_t i = 0; i < wk->n_resources; i++) fifo_push(&wk->tagged, wk->resources[i]->closure);
  spawn(wk);
  return 0;
}

int ds_coordinator_ps_failed(ds_coordinator *c, int ps, ds_status *st) {
  if (ps < 0 || ps >= c->nps) return bad_index("parameter server", ps, c->nps, st);
  c->ps_reports[ps] = DS_COORDINATOR_TRANSIENT_PS_FAILURES;
  if (!c->has_error) {
    c->has_error = 1;
    ds_status_set(&c->error, DS_UNAVAILABLE_ERROR, "Parameter server failure: Socket closed\n"
                  "Additional " DS_COORDINATOR_PS_RPC_ERROR "/replica:0/task:%d", ps);
  }
  ds__coordinator_changed(c);
  return 0;
}

/* ---- errors and waiting ------------------------------------------------------------------ */

/* TF's _raise_if_error: cancels what is in flight and queued, then raises the error once. */
static int raise_if_error(ds_coordinator *c, ds_status *st) {
  if (!c->has_error) return 0;
  for (int w = 0; w < c->nworkers; w++) {
    worker *wk = &c->workers[w];
    if (wk->current == NULL || wk->current->orphaned) continue;  /* not this process's */
    doomed d;
    ds_closure *cl = take_current(wk, &d);
    c->in_flight--;
    cancel(c, cl);
    kill_worker_actor(c, &d);
    spawn(wk);
  }
  assert(c->in_flight == 0); /* invariant 1: every in-flight closure was some worker's current */
  for (ds_closure *cl; (cl = fifo_pop(&c->queue)) != NULL;) cancel(c, cl);
  if (st != NULL) *st = c->error;
  c->has_error = 0;
  ds_status_clear(&c->error);
  ds__coordinator_changed(c);
  return -1;
}

void ds_coordinator_abandon(ds_coordinator *c) {
  for (int w = 0; w < c->nworkers; w++) {
    ds_closure *cl = c->workers[w].current;
    if (cl == NULL || cl->orphaned) continue;
    cl->orphaned = 1;
    c->in_flight--;
    c->stats.orphaned++;
  }
  assert(c->in_flight == 0); /* invariant 1 */
  for (ds_closure *cl; (cl = fifo_pop(&c->queue)) != NULL;) {
    c->stats.abandoned++;
    cancel(c, cl);
  }
  /* The per-worker values stay allocated (an orphan may still read its iterator) but are no
  ** worker's resources any more: a recovery rebuilds only what the next process creates. */
  for (int w = 0; w < c->nworkers; w++) {
    c->workers[w].tagged = (fifo){0};
    c->workers[w].n_resources = 0;
  }
  c->has_error = 0;
  ds_status_clear(&c->error);
  ds__coordinator_changed(c);
}

static int in_closure(const ds_coordinator *c) {
  sim_actor *self = sim_current_actor(c->e);
  for (int w = 0; self != NULL && w < c->nworkers; w++)
    if (c->workers[w].actor == self) return 1;
  return 0;
}

int ds__coordinator_wait(ds_coordinator *c, int (*going)(void *), void *arg, const char *what,
                         ds_status *st) {
  if (in_closure(c))
    return ds_status_set(st, DS_RUNTIME_ERROR, "%s was called from a scheduled function", what);
  sim_actor *self = sim_current_actor(c->e);
  if (self != NULL) {
    while (going(arg)) sim_cond_wait(self, c->changed);
    return 0;
  }
  if (sim_run_while(c->e, going, arg) == 0) return 0;
  int alive = 0;
  for (int w = 0; w < c->nworkers; w++) alive += c->workers[w].state == DS_WORKER_ALIVE;
  return ds_status_set(st, DS_RUNTIME_ERROR, "%s would wait forever: the simulation has no event "
                       "left (%zu closures queued, %d in flight, %d of %d workers alive)", what,
                       c->queue.n, c->in_flight, alive, c->nworkers);
}

static int queue_full(void *arg) {
  ds_coordinator *c = arg;
  return c->capacity > 0 && c->queue.n >= c->capacity;
}

static int busy(void *arg) {
  ds_coordinator *c = arg;
  return !c->has_error && (c->queue.n > 0 || c->in_flight > 0);
}

/* ---- the API ----------------------------------------------------------------------------- */

ds_coordinator *ds_coordinator_new(sim_engine *e, int nworkers, const char *const *worker_device_names,
                                   sim_cpu *const *worker_cpus, int nps, ds_status *st) {
  if (nworkers < 1 || nps < 0) {
    ds_status_set(st, DS_VALUE_ERROR, "a ClusterCoordinator needs at least one worker and no "
                  "negative parameter-server count; got %d workers, %d ps", nworkers, nps);
    return NULL;
  }
  for (int w = 0; w < nworkers; w++) {
    if (worker_device_names == NULL || worker_device_names[w] == NULL || worker_cpus == NULL ||
        worker_cpus[w] == NULL) {
      ds_status_set(st, DS_VALUE_ERROR, "worker %d has no device name or cpu", w);
      return NULL;
    }
  }
  ds_coordinator *c = base_xcalloc(1, sizeof *c);
  c->e = e;
  c->nworkers = nworkers;
  c->nps = nps;
  c->capacity = DS_COORDINATOR_QUEUE_MAX;
  c->work = sim_cond_new();
  c->changed = sim_cond_new();
  c->ps_reports = base_xcalloc((size_t)nps, sizeof *c->ps_reports);
  c->workers = base_xcalloc((size_t)nworkers, sizeof *c->workers);
  for (int w = 0; w < nworkers; w++) {
    worker *wk = &c->workers[w];
    wk->c = c;
    wk->index = w;
    snprintf(wk->device, sizeof wk->device, "%s", worker_device_names[w]);
    wk->cpu = worker_cpus[w];
    spawn(wk);
  }
  return c;
}

void ds_coordinator_free(ds_coordinator *c) {
  if (c == NULL) return;
  for (int w = 0; w < c->nworkers; w++) {
    worker *wk = &c->workers[w];
    sim_cancel(c->e, wk->give_up);
    if (wk->state != DS_WORKER_ALIVE) continue;
    doomed d;
    ds_closure *cl = take_current(wk, &d);
    if (cl != NULL) cancel(c, cl);
    kill_worker_actor(c, &d);
  }
  for (ds_closure *cl; (cl = fifo_pop(&c->queue)) != NULL;) cancel(c, cl);
  for (ds_per_worker *pw = c->per_worker, *next; pw != NULL; pw = next) {
    next = pw->next;
    for (int w = 0; w < c->nworkers; w++) ds__remote_value_free_resource(pw->values[w]);
    free(pw->values);
    free(pw);
  }
  for (int w = 0; w < c->nworkers; w++) free(c->workers[w].resources);
  free(c->workers);
  free(c->ps_reports);
  sim_cond_free(c->work);
  sim_cond_free(c->changed);
  free(c);
}

void ds_coordinator_set_queue_capacity(ds_coordinator *c, size_t capacity) {
  c->capacity = capacity;
  ds__coordinator_changed(c);
}

int ds_coordinator_schedule(ds_coordinator *c, const ds_function *f, int nargs,
                            const ds_closure_arg *args, ds_remote_value **out, ds_status *st) {
  if (out != NULL) *out = NULL;
  if (f == NULL || f->fn == NULL || !f->compiled)
    return ds_status_set(st, DS_TYPE_ERROR, "`tf.distribute.experimental.coordinator."
                         "ClusterCoordinator.schedule` only accepts a `tf.function` or a concrete "
                         "function.");
  for (int i = 0; i < nargs; i++) {
    if (args[i].kind == DS_CLOSURE_ARG_REMOTE)
      return ds_status_set(st, DS_VALUE_ERROR, "`tf.distribute.experimental.coordinator."
                           "RemoteValue` used as an input to scheduled function is not yet "
                           "supported.");
    if ((args[i].kind == DS_CLOSURE_ARG_VALUE && args[i].value == NULL) ||
        (args[i].kind == DS_CLOSURE_ARG_PER_WORKER && args[i].per_worker == NULL))
      return ds_status_set(st, DS_VALUE_ERROR, "argument %d of schedule is empty", i);
  }
  if (in_closure(c))
    return ds_status_set(st, DS_RUNTIME_ERROR, "schedule was called from a scheduled function");
  if (ds__coordinator_wait(c, queue_full, c, "schedule", st) != 0) return -1;
  ds_closure *cl = ds__closure_new(c, DS__CLOSURE_FUNCTION);
  cl->fn = *f;
  cl->id = c->next_id++;
  cl->nargs = nargs;
  cl->args = base_xcalloc((size_t)nargs, sizeof *cl->args);
  for (int i = 0; i < nargs; i++) {
    cl->args[i] = args[i];
    if (args[i].kind == DS_CLOSURE_ARG_VALUE) cl->args[i].value = ds_value_copy(args[i].value);
  }
  ds_remote_value *rv = out != NULL ? ds__remote_value_new(c, DS__CLOSURE_FUNCTION) : NULL;
  if (rv != NULL) rv->closure = cl;
  cl->out = rv;
  queue_closure(c, &c->queue, cl);
  c->stats.scheduled++;
  if (raise_if_error(c, st) != 0) {
    ds_remote_value_free(rv);
    return -1;
  }
  if (out != NULL) *out = rv;
  return 0;
}

int ds_coordinator_join(ds_coordinator *c, ds_status *st) {
  if (ds__coordinator_wait(c, busy, c, "join", st) != 0) return -1;
  return raise_if_error(c, st);
}

int ds_coordinator_done(ds_coordinator *c, ds_status *st) {
  if (in_closure(c))
    return ds_status_set(st, DS_RUNTIME_ERROR, "done was called from a scheduled function");
  if (raise_if_error(c, st) != 0) return -1;
  return c->queue.n == 0 && c->in_flight == 0;
}

int ds_coordinator_fetch(ds_coordinator *c, int n, const ds_closure_arg *items,
                         const ds_value **out, ds_status *st) {
  (void)c;
  for (int i = 0; i < n; i++) {
    out[i] = NULL;
    if (items[i].kind == DS_CLOSURE_ARG_VALUE) out[i] = items[i].value;
    else if (items[i].kind == DS_CLOSURE_ARG_PER_WORKER)
      return ds_status_set(st, DS_TYPE_ERROR, "fetch item %d is a per-worker value; fetch its "
                           "workers' remote values instead", i);
    else if (ds_remote_value_fetch(items[i].remote, &out[i], st) != 0) return -1;
  }
  return 0;
}

/* ---- per-worker resources ---------------------------------------------------------------- */

/* TF's Worker.create_resource: queued on the worker's tagged queue, or ABORTED at once when the
** worker is down (it is built when the worker recovers). */
static void add_resource(worker *w, ds_remote_value *rv) {
  if (w->n_resources == w->cap_resources) {
    w->cap_resources = w->cap_resources ? 2 * w->cap_resources : 4;
    w->resources = base_xrealloc(w->resources, w->cap_resources * sizeof *w->resources);
  }
  w->resources[w->n_resources++] = rv;
  if (w->state == DS_WORKER_ALIVE) queue_closure(w->c, &w->tagged, rv->closure);
  else ds__remote_value_set_aborted(rv);
}

/* One resource closure of `kind` per worker, each finished by fill(closure, worker, arg). */
static ds_per_worker *per_worker_new(ds_coordinator *c, ds__closure_kind kind,
                                     void (*fill)(ds_closure *, int, void *), void *arg) {
  ds_per_worker *pw = base_xcalloc(1, sizeof *pw);
  pw->kind = kind;
  pw->values = base_xcalloc((size_t)c->nworkers, sizeof *pw->values);
  pw->next = c->per_worker;
  c->per_worker = pw;
  for (int w = 0; w < c->nworkers; w++) {
    ds_remote_value *rv = ds__remote_value_new(c, kind);
    ds_closure *cl = ds__closure_new(c, kind);
    fill(cl, w, arg);
    cl->out = rv;
    rv->closure = cl;
    pw->values[w] = rv;
    add_resource(&c->workers[w], rv);
  }
  return pw;
}

typedef struct dataset_builder {
  ds_dataset_fn fn;          /* dataset_fn */
  void *user;                /* its argument */
} dataset_builder;

static void fill_dataset(ds_closure *cl, int w, void *arg) {
  (void)w;
  const dataset_builder *b = arg;
  cl->dataset_fn = b->fn;
  cl->dataset_user = b->user;
}

static void fill_iterator(ds_closure *cl, int w, void *arg) {
  cl->source = ((ds_per_worker *)arg)->values[w];
}

ds_per_worker *ds_coordinator_create_per_worker_dataset(ds_coordinator *c, ds_dataset_fn dataset_fn,
                                                        void *user, ds_status *st) {
  if (dataset_fn == NULL) {
    ds_status_set(st, DS_TYPE_ERROR, "create_per_worker_dataset needs a dataset_fn");
    return NULL;
  }
  ds_status traced_st;
  ds_status_clear(&traced_st);
  ds__variable_creation_refuse("Creating variables in `dataset_fn` is not allowed.");
  ds_dataset *traced = dataset_fn(user, &traced_st);
  ds__variable_creation_refuse(NULL);
  if (traced == NULL) {
    if (traced_st.kind == DS_OK) ds_status_set(&traced_st, DS_TYPE_ERROR, "dataset_fn returned no dataset");
    if (st != NULL) *st = traced_st;
    return NULL;
  }
  ds_dataset_free(traced);
  dataset_builder b = {dataset_fn, user};
  return per_worker_new(c, DS__CLOSURE_DATASET, fill_dataset, &b);
}

ds_per_worker *ds_coordinator_per_worker_iter(ds_coordinator *c, ds_per_worker *datasets, ds_status *st) {
  if (datasets == NULL || datasets->kind != DS__CLOSURE_DATASET) {
    ds_status_set(st, DS_TYPE_ERROR, "iter() needs a per-worker dataset from "
                  "create_per_worker_dataset");
    return NULL;
  }
  return per_worker_new(c, DS__CLOSURE_ITERATOR, fill_iterator, datasets);
}

ds_remote_value *ds__per_worker_value(const ds_per_worker *pw, int w) { return pw->values[w]; }

ds_remote_value *ds_coordinator_per_worker_value(const ds_per_worker *pw, int w) {
  ds_coordinator *c = pw->values[0]->coord;
  return w >= 0 && w < c->nworkers ? pw->values[w] : NULL;
}

void *ds__per_worker_resource(const ds_per_worker *pw, int w, ds__closure_kind kind) {
  const ds_remote_value *rv = pw->kind == kind ? ds_coordinator_per_worker_value(pw, w) : NULL;
  if (rv == NULL || rv->state != DS_REMOTE_READY || rv->error.kind != DS_OK) return NULL;
  return rv->resource;
}

/* ---- counters ---------------------------------------------------------------------------- */

ds_coordinator_stats ds_coordinator_get_stats(const ds_coordinator *c) { return c->stats; }
int      ds_coordinator_num_workers(const ds_coordinator *c) { return c->nworkers; }
size_t   ds_coordinator_queued(const ds_coordinator *c) { return c->queue.n; }
int      ds_coordinator_in_flight(const ds_coordinator *c) { return c->in_flight; }

uint64_t ds_coordinator_worker_closures_run(const ds_coordinator *c, int w) {
  return w >= 0 && w < c->nworkers ? c->workers[w].closures_run : 0;
}

ds_worker_state ds_coordinator_worker_state(const ds_coordinator *c, int w) {
  return w >= 0 && w < c->nworkers ? c->workers[w].state : DS_WORKER_DEAD;
}

size_t ds_coordinator_fresh_head(const ds_coordinator *c) {
  size_t n = 0;
  for (const ds_closure *cl = c->queue.head; cl != NULL && cl->attempts == 0; cl = cl->next) n++;
  return n;
}

void ds_coordinator_skip(ds_coordinator *c, size_t n, const uint64_t *done) {
  for (size_t i = 0; i < n; i++) {
    ds_closure *cl = fifo_pop(&c->queue);
    assert(cl != NULL && cl->attempts == 0 && cl->out == NULL);
    ds__closure_free(cl);
  }
  c->stats.completed += n;
  for (int w = 0; w < c->nworkers; w++) c->workers[w].closures_run += done[w];
}
