/*
** context.h: where tf.distribute code runs: the strategy scope, Strategy.run and the
** ReplicaContext a replica function receives (ds_scope_, ds_run, ds_rctx_).
**
** Scope: a per-thread stack of entered strategies. Variables created while a strategy is on top
** are its distributed variables (variable.h); with none, they are plain variables. Entering a
** strategy while a different one is on top is TF's RuntimeError ("mixing different
** tf.distribute.Strategy objects"); entering the same one again nests.
**
** Contexts: outside run() the code is in cross-replica context when a strategy is in scope (the
** default replica context otherwise); inside a replica function it is in replica context;
** merge_fn runs in cross-replica context again. Replica functions run as simulated actors (one
** per replica, coroutines on the engine's thread), so the replica context is passed to them as
** an argument instead of being looked up: a ds_rctx is TF's tf.distribute.get_replica_context().
*/
#ifndef PODSIM_CONTEXT_H
#define PODSIM_CONTEXT_H

#include "strategies/core/status.h"
#include "strategies/core/strategy.h"
#include "strategies/core/values.h"

/* tf.distribute.ReduceOp, and the VariableAggregation that reduce_to also accepts. */
typedef enum {
  DS_REDUCE_SUM = 0,          /* "SUM" */
  DS_REDUCE_MEAN,             /* "MEAN" */
  DS_REDUCE_ONLY_FIRST_REPLICA /* VariableAggregation.ONLY_FIRST_REPLICA (reduce_to only) */
} ds_reduce_op;
const char *ds_reduce_op_name(ds_reduce_op op);

/* ---- scope ------------------------------------------------------------------------------- */

/* `with strategy.scope():` is ds_scope_enter ... ds_scope_exit. Exiting a strategy that is not
** on top is a RuntimeError. */
int          ds_scope_enter(ds_strategy *s, ds_status *st);
int          ds_scope_exit(ds_strategy *s, ds_status *st);
/* tf.distribute.has_strategy / get_strategy (NULL: the default strategy, no scope entered). */
int          ds_has_strategy(void);
ds_strategy *ds_get_strategy(void);
/* tf.distribute.in_cross_replica_context: a strategy in scope and not inside a replica function
** (merge_fn counts as cross-replica). */
int          ds_in_cross_replica_context(void);

/* ---- run --------------------------------------------------------------------------------- */

typedef struct ds_rctx ds_rctx;

/* A replica function: args are its own components of run()'s arguments (borrowed, read-only);
** it stores nresults new tensors in results[] (ownership passes to run) and returns 0, or
** returns -1 after ds_rctx_fail, which run() then raises. */
typedef int (*ds_replica_fn)(ds_rctx *ctx, void *user, md_tensor *const *args, md_tensor **results);

/* Strategy.run(fn, args): one actor per replica, each receiving component r of every PerReplica
** or Mirrored argument (a regular argument as it is; a distributed argument must have one
** component per replica, else ValueError). Drives the engine until every replica has returned,
** holding merge_call rounds on the way, and regroups result i into results[i]: a PerReplica over
** the replica devices, or the replica's tensor itself on a single replica (TF's regroup of one
** value). RuntimeError when some replicas return while others wait in merge_call, or when
** replicas stay blocked in a collective not every replica joined; a replica's own error (the
** lowest replica id first) is raised as it is. On error no result is returned. */
int ds_run(ds_strategy *s, ds_replica_fn fn, void *user, int nargs, ds_value *const *args,
           int nresults, ds_value **results, ds_status *st);

/* ---- ReplicaContext ---------------------------------------------------------------------- */

int          ds_rctx_replica_id(const ds_rctx *c);          /* replica_id_in_sync_group */
int          ds_rctx_num_replicas_in_sync(const ds_rctx *c);
ds_strategy *ds_rctx_strategy(const ds_rctx *c);
sim_actor   *ds_rctx_actor(ds_rctx *c);                      /* for blocking sim_ calls */
const char  *ds_rctx_device(const ds_rctx *c);               /* the replica's device */
/* Charges `flops` of compute on the replica's device (simulated time passes). */
int          ds_rctx_exec(ds_rctx *c, double flops);
/* Records the exception this replica raises; returns -1 for `return ds_rctx_fail(...)`. */
int          ds_rctx_fail(ds_rctx *c, ds_error_kind kind, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
ds_status   *ds_rctx_status(ds_rctx *c);

/* ReplicaContext.all_reduce(op, value): every replica gets the reduction of every replica's
** value, in a new tensor. float32 travels through the strategy's simulated all-reduce (the
** algorithm's summation order, on every replica the same bits); integers are summed exactly in
** replica order while the collective is timed on their bytes. MEAN divides the sum by
** num_replicas_in_sync (an integer mean comes back as float32). ValueError when the replicas'
** dtypes or shapes differ (every replica raises it), or for ONLY_FIRST_REPLICA. */
md_tensor *ds_rctx_all_reduce(ds_rctx *c, ds_reduce_op op, const md_tensor *value);
/* ReplicaContext.all_gather(value, axis): the concatenation of every replica's value along axis,
** in replica order, on every replica. ValueError on a scalar, an axis outside [0, rank), or
** shapes that differ off the axis (any difference on a strategy with exact gather shapes). */
md_tensor *ds_rctx_all_gather(ds_rctx *c, const md_tensor *value, int axis);

/* tf.tpu.cross_replica_sum(x, group_assignment) in a TPU replica function: the sum of x over the
** replicas of this replica's group. group_assignment holds num_groups rows of group_size replica
** ids (row-major; NULL: one group of every replica, the plain cross-replica sum). The sum runs in
** the row's order, exactly as written for every dtype; it is timed as a ring all-reduce of x's
** bytes on the group's devices alone (a sub-group of the replicas' group, sim/collective.h), so
** disjoint groups reduce at once. InvalidArgumentError unless the rows cover every replica once
** (XLA's replica_groups rule); ValueError when the replicas' dtypes or shapes differ; TypeError
** outside a TPU strategy. */
md_tensor *ds_rctx_cross_replica_sum(ds_rctx *c, const md_tensor *x, int num_groups, int group_size,
                                     const int *group_assignment);

/* merge_fn of merge_call: runs once, in cross-replica context, on the main stack (it may call
** ds_reduce, ds_reduce_to, variable updates...). args[i] regroups argument i of every replica (a
** PerReplica; on a single replica the tensor itself). It stores nresults values in results[]
** (owned by run): a regular value goes to every replica, a PerReplica or Mirrored gives
** replica r its component r. Returns 0, or -1 with st set. */
typedef int (*ds_merge_fn)(ds_strategy *s, void *user, ds_value *const *args, ds_value **results,
                           ds_status *st);
/* ReplicaContext.merge_call(merge_fn, args): every replica pauses until all have called it
** (replica 0's merge_fn, user, nargs and nresults are the ones used; the others must pass the
** same counts, else RuntimeError from run). Replica r gets its element of each result in
** results[] (new tensors). Returns 0; when merge_fn fails, run() raises its error. */
int ds_rctx_merge_call(ds_rctx *c, ds_merge_fn fn, void *user, int nargs, md_tensor *const *args,
                       int nresults, md_tensor **results);

#endif
