/*
** coordinatorInt.h: struct bodies shared by closure.c, remote_value.c and coordinator.c (the
** ClusterCoordinator's three files) and nothing else. Internal functions are ds__ prefixed.
*/
#ifndef PODSIM_COORDINATORINT_H
#define PODSIM_COORDINATORINT_H

#include "strategies/ps/coordinator.h"

typedef enum {
  DS__CLOSURE_FUNCTION = 0,  /* a scheduled function, on the global FIFO */
  DS__CLOSURE_DATASET,       /* a worker's dataset resource, on its tagged queue */
  DS__CLOSURE_ITERATOR       /* a worker's iterator resource, on its tagged queue */
} ds__closure_kind;

struct ds_closure {
  ds__closure_kind kind;     /* function or resource */
  ds_coordinator *coord;     /* owner */
  ds_function fn;            /* a function closure's body */
  ds_dataset_fn dataset_fn;  /* a dataset closure's builder */
  void *dataset_user;        /* its argument */
  ds_remote_value *source;   /* an iterator closure's dataset value (same worker) */
  ds_closure_arg *args;      /* function arguments; values are owned copies */
  int nargs;                 /* entries in args */
  int64_t id;                /* schedule order (functions) */
  int attempts;              /* runs started */
  ds_remote_value *out;      /* where the output goes; NULL once its holder freed it */
  ds_closure *next;          /* queue link */
  int worker;                /* the worker running it (valid while it runs) */
  sim_actor *actor;          /* that worker's actor */
  sim_cpu *cpu;              /* that worker's cpu */
  const char *device;        /* that worker's device name */
  ds_status status;          /* the error it raised */
  int orphaned;              /* running when its coordinator was abandoned: not in flight, its
                                outcome dropped when it ends */
  ds_closure_cleanup_fn cleanup; /* on-kill release of this run, or NULL */
  void *cleanup_arg;         /* its argument */
};

struct ds_remote_value {
  ds_remote_value_state state; /* see remote_value.h */
  ds_value *value;           /* a function's output (owned), or NULL */
  void *resource;            /* a resource's dataset or iterator (owned), or NULL */
  ds__closure_kind kind;     /* what produced it: resources are rebuilt, functions re-run */
  ds_status error;           /* set when READY with an error */
  ds_coordinator *coord;     /* whose engine a fetch waits on */
  ds_closure *closure;       /* a pending function's closure (detached on free); a resource's
                                own closure (owned, queued again on recovery) */
};

/* remote_value.c */
ds_remote_value *ds__remote_value_new(ds_coordinator *c, ds__closure_kind kind);
/* READY with v (owned), or with an error; ABORTED (dropping any value or resource). */
void ds__remote_value_set_value(ds_remote_value *rv, ds_value *v);
void ds__remote_value_set_resource(ds_remote_value *rv, void *resource);
void ds__remote_value_set_error(ds_remote_value *rv, const ds_status *err);
void ds__remote_value_set_aborted(ds_remote_value *rv);
/* Frees a resource value and its closure (the coordinator's, at the end). */
void ds__remote_value_free_resource(ds_remote_value *rv);

/* closure.c */
/* A resource or function closure (the function's arguments copied); NULL never. */
ds_closure *ds__closure_new(ds_coordinator *c, ds__closure_kind kind);
void        ds__closure_free(ds_closure *cl);
/* Runs cl on a worker (the context fields set by the caller): 0, or -1 with cl->status set. */
int         ds__closure_run_function(ds_closure *cl, ds_value **result);
/* Builds a resource closure's dataset or iterator into its value (READY, or its error). */
void        ds__closure_run_resource(ds_closure *cl);

/* coordinator.c */
/* Blocks until going(arg) is false, as the calling actor or by driving the engine; `what` names
** the call in the RuntimeError when that can never happen or a closure calls it. */
int  ds__coordinator_wait(ds_coordinator *c, int (*going)(void *), void *arg, const char *what,
                          ds_status *st);
/* Wakes whoever waits on the coordinator's state (a value became ready). */
void ds__coordinator_changed(ds_coordinator *c);
/* Worker w's element of a per-worker value (its remote value's resource), or NULL. */
void *ds__per_worker_resource(const ds_per_worker *pw, int w, ds__closure_kind kind);
/* Worker w's remote value of pw. */
ds_remote_value *ds__per_worker_value(const ds_per_worker *pw, int w);

#endif
