/*
** distribute.h: the cross-replica side of tf.distribute.Strategy and StrategyExtended
** (ds_reduce, ds_gather, ds_local_results, ds_extended_).
**
** Every function here is TF's cross-replica API: called from a replica function it raises
** RuntimeError (use the ReplicaContext calls of context.h there). Reductions of float32 values
** with one component per replica run through the strategy's simulated all-reduce, so their bits
** follow the algorithm's order and simulated time passes; they drive the engine themselves, so
** they are called from the main program or from a merge_fn, never from inside an actor.
*/
#ifndef PODSIM_DISTRIBUTE_H
#define PODSIM_DISTRIBUTE_H

#include <limits.h>

#include "strategies/core/context.h"

/* axis=None of Strategy.reduce. */
#define DS_AXIS_NONE INT_MIN

/* Strategy.reduce(op, value, axis). axis None: across replicas only (base MEAN = sum / number of
** components; MEAN of a Mirrored value = its first copy). An axis (negative counts from the end):
** each component summed over it, then SUM across replicas; MEAN divides by the true number of
** elements along the axis over all replicas (6 for a last batch split 4 + 2). A regular value:
** axis None gives zeros for all zeros, the value for MEAN or on one replica, else ValueError;
** with an axis every replica reduces the same tensor. TypeError for an op other than SUM/MEAN;
** ValueError for an axis out of range or components of different dtypes or shapes. An integer
** MEAN comes back as float32. Returns a new tensor (on ds_host_device), or NULL. */
md_tensor *ds_reduce(ds_strategy *s, ds_reduce_op op, const ds_value *value, int axis, ds_status *st);

/* Strategy.gather(value, axis): components concatenated along axis in replica order, on every
** strategy (TPUStrategy's too: a concat on its host). ValueError on a scalar component, an axis
** outside [0, rank), or shapes that differ off the axis. A regular value comes back as it is. */
md_tensor *ds_gather(ds_strategy *s, const ds_value *value, int axis, ds_status *st);

/* Strategy.experimental_local_results(value): its components in replica order (a regular value:
** itself). Writes what fits in out[0..max) (borrowed) and returns the full count. */
int ds_local_results(const ds_value *value, md_tensor **out, int max);

/* StrategyExtended.reduce_to(op, value, destinations): the reduction copied to every
** destination device, as a Mirrored value with one component per destination. op may also be
** ONLY_FIRST_REPLICA (component 0). ValueError for no destination; a regular value as
** ds_reduce with axis None. */
ds_value *ds_extended_reduce_to(ds_strategy *s, ds_reduce_op op, const ds_value *value, int ndest,
                                const char *const *destinations, ds_status *st);

/* One (value, destinations) pair of batch_reduce_to. */
typedef struct ds_reduce_pair {
  const ds_value *value;  /* what to reduce */
  int ndest;              /* destination devices */
  const char *const *destinations; /* their names */
} ds_reduce_pair;
/* StrategyExtended.batch_reduce_to(op, pairs): reduce_to on each pair in order; out[i] gets pair
** i's result. TF packs the pairs into fewer collectives; here each pair is its own collective.
** On error nothing is returned. */
int ds_extended_batch_reduce_to(ds_strategy *s, ds_reduce_op op, int n, const ds_reduce_pair *pairs,
                                ds_value **out, ds_status *st);

/* StrategyExtended.worker_devices / parameter_devices: the replica devices (a sync strategy keeps
** a variable copy on each). Writes what fits in out[0..max) and returns the full count; the
** default strategy raises RuntimeError (unsupported there), returning -1. */
int ds_extended_worker_devices(const ds_strategy *s, const char **out, int max, ds_status *st);
int ds_extended_parameter_devices(const ds_strategy *s, const char **out, int max, ds_status *st);

/* The parts of tf.compat.v1.ConfigProto a strategy's update_config_proto touches. */
typedef struct ds_config_proto {
  int scoped_allocator_optimization; /* RewriterConfig: 0 default, 1 ON */
  char scoped_allocator_enable_op[32]; /* scoped_allocator_opts.enable_op (one entry or "") */
  char collective_group_leader[96];  /* experimental.collective_group_leader */
  char device_filters[96];           /* device_filters (one entry or "") */
} ds_config_proto;
/* StrategyExtended.update_config_proto: a copy of in, unchanged for default, one_device and
** mirrored; multi_worker_mirrored turns the scoped allocator ON for "CollectiveReduce" and, with
** more than one worker, sets the group leader "/job:worker/replica:0/task:0" and the device
** filter "/job:worker/task:0" (this program is task 0). */
void ds_extended_update_config_proto(const ds_strategy *s, const ds_config_proto *in,
                                     ds_config_proto *out);

/* Strategy.cluster_resolver: multi_worker_mirrored has one (task type "worker", this program as
** task 0), and so has every TPUStrategy (its TPUClusterResolver: the worker job, one task per
** TPU host, its devices per host); the single-worker strategies have none (returns 0, out
** untouched). */
typedef struct ds_cluster_resolver {
  char task_type[16];     /* "worker" */
  int task_id;            /* 0 */
  int num_workers;        /* worker tasks in the cluster */
  int num_accelerators;   /* accelerators per worker */
} ds_cluster_resolver;
int ds_cluster_resolver_of(const ds_strategy *s, ds_cluster_resolver *out);

/* StrategyExtended.experimental_initialize / experimental_finalize (TF1): nothing to do for
** a sync strategy in TF2; return 0. */
int ds_extended_experimental_initialize(ds_strategy *s, ds_status *st);
int ds_extended_experimental_finalize(ds_strategy *s, ds_status *st);

/* An input iterator's get_next(): one element (a structure of nvalues distributed values, owned
** by the caller afterwards), 0; or -1 with st set (OutOfRangeError at the end). */
typedef int (*ds_next_fn)(void *iterator, int nvalues, ds_value **values, ds_status *st);
/* Strategy.experimental_run(fn, iterator) (TF1): run(fn) over the iterator's next element of
** nargs values. */
int ds_extended_experimental_run(ds_strategy *s, ds_replica_fn fn, void *user, ds_next_fn next,
                                 void *iterator, int nargs, int nresults, ds_value **results,
                                 ds_status *st);

#endif
