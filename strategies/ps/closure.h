/*
** closure.h: a function scheduled by the ClusterCoordinator, and the context it runs in
** (ds_closure_).
**
** TF schedules a tf.function with arguments; podsim schedules a C function with a context. The
** function runs on a worker's actor, so it may block on sim_ calls (sim_exec on the worker's cpu,
** sim_comm to a parameter server, sim_sleep) and simulated time passes as on that worker. It
** returns 0 with its output in *result (or NULL for none), or fails with ds_closure_fail: the
** coordinator classifies the error as TF does (coordinator.h) and retries, propagates or treats
** it as a worker failure.
**
** Arguments (TF's args) are ds_closure_arg: a value (copied at schedule time), a per-worker value
** (replaced by the executing worker's element: its dataset or iterator), or a remote value (refused
** by schedule with ValueError, as TF does not support it yet).
*/
#ifndef PODSIM_CLOSURE_H
#define PODSIM_CLOSURE_H

#include <stdint.h>

#include "sim/sim.h"
#include "strategies/input/dataset.h"
#include "strategies/ps/remote_value.h"
#include "strategies/core/status.h"
#include "strategies/core/values.h"

typedef struct ds_closure ds_closure;         /* TF's Closure; while running, its context */
typedef struct ds_per_worker ds_per_worker;   /* TF's PerWorkerValues (coordinator.h) */
typedef struct ds_coordinator ds_coordinator;

/* The scheduled function: returns 0 with a new value in *result (owned by the remote value from
** then on; NULL for none), or -1 after ds_closure_fail. */
typedef int (*ds_closure_fn)(ds_closure *ctx, void *user, ds_value **result);

/* tf.function(fn) (compiled = 1) or a plain Python function (compiled = 0, refused by schedule). */
typedef struct ds_function {
  ds_closure_fn fn;        /* the body */
  void *user;              /* its argument, shared by every run */
  int compiled;            /* 1 for a tf.function or concrete function */
} ds_function;

typedef enum {
  DS_CLOSURE_ARG_VALUE = 0, /* a value passed as is */
  DS_CLOSURE_ARG_PER_WORKER,/* a PerWorkerValues: each worker gets its own element */
  DS_CLOSURE_ARG_REMOTE     /* a RemoteValue (ValueError in schedule) */
} ds_closure_arg_kind;

typedef struct ds_closure_arg {
  ds_closure_arg_kind kind;   /* which of the fields below is set */
  const ds_value *value;      /* DS_CLOSURE_ARG_VALUE: copied by schedule */
  ds_per_worker *per_worker;  /* DS_CLOSURE_ARG_PER_WORKER: borrowed, owned by the coordinator */
  ds_remote_value *remote;    /* DS_CLOSURE_ARG_REMOTE */
} ds_closure_arg;

static inline ds_closure_arg ds_closure_arg_value(const ds_value *v) {
  return (ds_closure_arg){ .kind = DS_CLOSURE_ARG_VALUE, .value = v };
}
static inline ds_closure_arg ds_closure_arg_per_worker(ds_per_worker *pw) {
  return (ds_closure_arg){ .kind = DS_CLOSURE_ARG_PER_WORKER, .per_worker = pw };
}
static inline ds_closure_arg ds_closure_arg_remote(ds_remote_value *rv) {
  return (ds_closure_arg){ .kind = DS_CLOSURE_ARG_REMOTE, .remote = rv };
}

/* ---- the context, valid while the function runs ---- */
int             ds_closure_worker(const ds_closure *ctx);     /* worker index */
const char     *ds_closure_device(const ds_closure *ctx);     /* "/job:worker/replica:0/task:W" */
sim_actor      *ds_closure_actor(const ds_closure *ctx);      /* for blocking sim_ calls */
sim_cpu        *ds_closure_cpu(const ds_closure *ctx);        /* the worker's compute */
ds_coordinator *ds_closure_coordinator(const ds_closure *ctx);
/* Schedule order, 0 for the first function scheduled on this coordinator. */
int64_t         ds_closure_id(const ds_closure *ctx);
/* 1 on the first run, one more each time it runs again after a failure. */
int             ds_closure_attempt(const ds_closure *ctx);
int             ds_closure_num_args(const ds_closure *ctx);
/* Argument i as a value (NULL unless it was passed as a value). */
const ds_value *ds_closure_value(const ds_closure *ctx, int i);
/* Argument i as this worker's dataset or iterator (NULL unless it is a per-worker dataset or
** iterator respectively). */
ds_dataset          *ds_closure_dataset(const ds_closure *ctx, int i);
ds_dataset_iterator *ds_closure_iterator(const ds_closure *ctx, int i);
/* next(iterator) on argument i: this worker's next element into out[] (new tensors), 0; or -1
** with the error recorded as the closure's (OutOfRangeError at the end, TypeError when argument i
** is not a per-worker iterator), for `return -1`. */
int ds_closure_get_next(ds_closure *ctx, int i, md_tensor **out);
/* Raises from the function: records the error and returns -1. Errors are classified by kind and
** message as TF does (coordinator.h): name "/job:worker/replica:0/task:W" for a worker failure,
** DS_COORDINATOR_PS_RPC_ERROR with "/job:ps/replica:0/task:P" for a parameter server's. */
int ds_closure_fail(ds_closure *ctx, ds_error_kind kind, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
/* UnavailableError as a worker reports a parameter server it cannot reach (TF's RPC text). */
int ds_closure_fail_ps(ds_closure *ctx, int ps);
const ds_status *ds_closure_status(const ds_closure *ctx);
/* What the function holds that a kill must release (a reservation, a buffer): fn(arg) runs when
** the worker's actor is killed mid-run (worker failure, or cancellation after an error). One per
** run; NULL clears it. */
typedef void (*ds_closure_cleanup_fn)(void *arg);
void ds_closure_on_kill(ds_closure *ctx, ds_closure_cleanup_fn fn, void *arg);

/* The text TF's RPC layer puts in an error a parameter server caused (cluster_coordinator.py's
** _RPC_ERROR_FROM_PS). */
#define DS_COORDINATOR_PS_RPC_ERROR "GRPC error information from remote target /job:ps"

#endif
