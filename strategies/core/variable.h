/*
** variable.h: tf.Variable under a strategy (ds_variable_): plain variables, MirroredVariable
** (synchronised on write) and SyncOnReadVariable, with TF's aggregation rules.
**
** ds_variable_new is tf.Variable(...): inside a sync strategy's scope (context.h) it makes one
** copy per replica device ("name:0" on replica 0, "name/replica_K:0" on replica K); a
** TPUStrategy places them by ds_sharding_variable_copies (tpu_strategy.h); under default or
** one_device, or with no strategy in scope, a plain variable with one copy.
**
** Reads and writes take the caller's context: a ds_rctx inside a replica function, NULL in
** cross-replica context (the main program or a merge_fn).
**   MirroredVariable, replica context: read = the replica's copy; a write aggregates by the
**     variable's aggregation: NONE writes the local copy only; SUM / MEAN reduce the replicas'
**     values (merge_call + reduce_to) and apply the result to every copy (MEAN of a non-float
**     variable: ValueError); ONLY_FIRST_REPLICA applies replica 0's value to every copy. Every
**     replica must make the same writes, as in TF.
**   MirroredVariable, cross-replica context: read = copy 0; a write applies to every copy.
**   SyncOnReadVariable, replica context: reads and writes touch the local copy only.
**   SyncOnReadVariable, cross-replica context: read = reduce by aggregation (SUM, MEAN; replica
**     0 for ONLY_FIRST_REPLICA; ValueError for NONE); assign writes every copy, dividing by the
**     number of replicas first for SUM; assign_add / assign_sub with SUM: ValueError.
*/
#ifndef PODSIM_VARIABLE_H
#define PODSIM_VARIABLE_H

#include "strategies/core/context.h"

typedef enum {
  DS_SYNC_AUTO = 0,       /* VariableSynchronization.AUTO: ON_WRITE under a sync strategy */
  DS_SYNC_NONE,           /* NONE: refused by the distributed strategies (ValueError) */
  DS_SYNC_ON_WRITE,       /* ON_WRITE: MirroredVariable */
  DS_SYNC_ON_READ         /* ON_READ: SyncOnReadVariable */
} ds_synchronization;

typedef enum {
  DS_AGG_NONE = 0,        /* VariableAggregation.NONE */
  DS_AGG_SUM,             /* SUM */
  DS_AGG_MEAN,            /* MEAN */
  DS_AGG_ONLY_FIRST_REPLICA /* ONLY_FIRST_REPLICA */
} ds_aggregation;

typedef enum {
  DS_VARIABLE_PLAIN = 0,  /* tf.Variable */
  DS_VARIABLE_MIRRORED,   /* MirroredVariable */
  DS_VARIABLE_SYNC_ON_READ,/* SyncOnReadVariable */
  DS_VARIABLE_SHARDED     /* ShardedVariable (sharded_variable.h): a partitioned variable */
} ds_variable_kind;

typedef struct ds_variable_options {
  const char *name;       /* NULL: "Variable" */
  ds_synchronization synchronization; /* AUTO by default */
  ds_aggregation aggregation;         /* NONE by default */
  int trainable;          /* 1, 0, or -1: TF's default (not trainable when ON_READ) */
} ds_variable_options;

typedef struct ds_variable ds_variable;

/* tf.Variable(initial, ...) in the current scope; opts may be NULL (all defaults). ValueError for
** synchronization NONE under a distributed strategy or an unknown enum (TF2 lets an ON_READ
** variable be trainable: it only defaults to non-trainable); RuntimeError inside a replica function (podsim creates variables in cross-replica
** context only). */
ds_variable *ds_variable_new(const md_tensor *initial, const ds_variable_options *opts, ds_status *st);
void         ds_variable_free(ds_variable *v);

ds_variable_kind  ds_variable_kind_of(const ds_variable *v);
/* "Variable", "MirroredVariable", "SyncOnReadVariable", "ShardedVariable". */
const char       *ds_variable_kind_name(ds_variable_kind kind);
const char       *ds_variable_name(const ds_variable *v);
ds_aggregation    ds_variable_aggregation(const ds_variable *v);
ds_synchronization ds_variable_synchronization(const ds_variable *v); /* AUTO resolved */
int               ds_variable_trainable(const ds_variable *v);
/* Copies (experimental_local_results of the variable), one per device; each copy's TF name
** ("Variable:0", "Variable/replica_1:0") and device. The copy is borrowed. A ShardedVariable's
** copies are its shards' values ("w/part_0:0" on its parameter server, ...). */
int               ds_variable_num_copies(const ds_variable *v);
md_tensor        *ds_variable_copy(const ds_variable *v, int i);
const char       *ds_variable_copy_name(const ds_variable *v, int i);
const char       *ds_variable_device(const ds_variable *v, int i);
/* Devices each copy is held on: 1, or under a TPUStrategy with experimental_spmd_xla_partitioning
** and several logical devices per replica, those logical devices (the copy is then the replica's
** TPUReplicatedVariable, named "name/r:R"). Device k of copy i; k = 0 is ds_variable_device. */
int               ds_variable_devices_per_copy(const ds_variable *v);
const char       *ds_variable_copy_device(const ds_variable *v, int i, int k);

/* The ShardedVariable a DS_VARIABLE_SHARDED variable is (borrowed), else NULL. */
struct ds_sharded_variable *ds_variable_sharded(const ds_variable *v);

/* read_value(): a new tensor, or NULL with the error in st (cross-replica) or ctx (replica). */
md_tensor *ds_variable_read(ds_variable *v, ds_rctx *ctx, ds_status *st);
/* assign, assign_add, assign_sub: 0 or -1. value must have the variable's dtype and shape
** (ValueError). In replica context errors go to the replica's status and st may be NULL. A
** ShardedVariable reads as the concatenation of its shards and writes each shard its rows of
** value (ShardedVariableMixin.assign). */
int ds_variable_assign(ds_variable *v, ds_rctx *ctx, const md_tensor *value, ds_status *st);
int ds_variable_assign_add(ds_variable *v, ds_rctx *ctx, const md_tensor *value, ds_status *st);
int ds_variable_assign_sub(ds_variable *v, ds_rctx *ctx, const md_tensor *value, ds_status *st);

/* StrategyExtended.update(var, fn, args, group): fn(copy, args_i, user, st) on every copy i in
** order, cross-replica context only (RuntimeError otherwise), where args_i[k] is component i of
** a distributed args[k] (which must have one per copy, else ValueError) or a regular args[k]
** itself. fn updates the copy in place. With out != NULL (group=False) *out gets a Mirrored
** value of the updated copies. */
typedef int (*ds_update_fn)(md_tensor *copy, md_tensor *const *args, void *user, ds_status *st);
int ds_variable_update(ds_variable *v, ds_update_fn fn, void *user, int nargs, ds_value *const *args,
                       ds_value **out, ds_status *st);

/* StrategyExtended.colocate_vars_with(v): variables created until the matching end go on v's
** devices. Nests; ending without a begin is a RuntimeError. */
int ds_variable_colocate_begin(const ds_variable *v, ds_status *st);
int ds_variable_colocate_end(ds_status *st);

#endif
