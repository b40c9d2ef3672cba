/*
** strategiesInt.h: helpers shared by the strategies/ sources only (ds__ prefix). Other layers
** and the public headers never include it.
*/
#ifndef PODSIM_STRATEGIESINT_H
#define PODSIM_STRATEGIESINT_H

#include "base/base.h"

#include <stddef.h>
#include <stdint.h>

#include "models/tensor.h"
#include "sim/collective.h"
#include "strategies/core/status.h"
#include "strategies/core/strategy.h"
#include "strategies/core/variable.h"

typedef struct ds_strategy ds_strategy;

/* Longest TF device name kept, "/job:worker/replica:0/task:123/device:TPU:7" and the like. */
#define DS_DEVICE_NAME_MAX 96

/* strategy.c: what a strategy's builder leaves to it (a slice and the TPU system's tables the
** strategy borrows), released by owned_free(owned) in ds_strategy_free after the strategy's own
** resources. One owner per strategy. */
void ds__strategy_own(ds_strategy *s, void (*owned_free)(void *), void *owned);
/* What ds__strategy_own left to s (NULL if nothing). */
void *ds__strategy_owned(const ds_strategy *s);

/* strategy.c: the device reduce and gather put their results on (ds_host_device). */
void ds__strategy_set_host(ds_strategy *s, const char *device);


/* n ints as "[1, 1, 1, 2]" into buf, for messages about shapes and coordinates; returns buf. */
const char *ds__ints_str(const int *v, int n, char *buf, size_t len);

/* ---- dataset.c: the graph rewrites of tf.data's auto-shard, for input.c ---- */
struct ds_dataset;
struct ds_status;
struct ds_tensor_spec;
struct md_tensor;
/* FILE sharding: the same pipeline reading only files index, index + num_shards, ...
** NotFoundError when no reader (ds_dataset_from_files) feeds it. With fewer files than shards,
** as TF's require_non_empty: a shard with a file fails on its first element with
** InvalidArgumentError, a shard without one is empty. */
struct ds_dataset *ds__dataset_shard_files(struct ds_dataset *ds, int64_t num_shards,
                                           int64_t index, struct ds_status *st);
/* DATA sharding: shard(num_shards, index) at the end of the pipeline, under a final prefetch
** so that the prefetch still buffers whole shard elements. The shard is require_non_empty as
** TF's rewrite makes it: with fewer elements than shards, a shard's first element is an
** InvalidArgumentError (a shard past the end is empty). */
struct ds_dataset *ds__dataset_shard_data(struct ds_dataset *ds, int64_t num_shards,
                                          int64_t index);
/* Another reference to ds, for a pipeline that needs no transformation. */
struct ds_dataset *ds__dataset_ref(struct ds_dataset *ds);
/* An empty batch of a component: 0 rows, and 0 wherever the spec does not know a dim. */
struct md_tensor *ds__dataset_empty_batch(const struct ds_tensor_spec *spec);

/* strategy.c: TPUStrategy's parts of the strategy object. */
struct ds_sharding_layout;
/* What a kind of strategy is: one row per kind in strategy.c's KINDS, so adding a strategy is
** its builder and its row, not a test of its kind in every file. */
typedef struct ds_kind_traits {
  const char *name;       /* ds_kind_name: the scenario's strategy.kind */
  int tpu;                /* TPUStrategy's rules (TPU, the TF-GNN runner's): reductions add in
                          ** replica order on the host and know SUM and MEAN only; no PER_REPLICA
                          ** input */
  int partial_batches;    /* its input hands data-less replicas empty batches (Mirrored kinds) */
  int multi_worker;       /* built over every worker of the cluster */
  int per_accelerator;    /* one replica per accelerator of each of its workers */
  int extended_devices;   /* extended.worker_devices / parameter_devices exist (not the default) */
  int mirrored_variables; /* variables made in its scope are distributed (Mirrored, SyncOnRead) */
  int ps_variables;       /* variables live on ps tasks (ParameterServerStrategy) */
  int gather;             /* Strategy.gather is implemented */
  int coordinator_input;  /* its workers' datasets are built by create_per_worker_dataset only */
} ds_kind_traits;
const ds_kind_traits *ds__kind_traits(ds_kind kind);
const ds_kind_traits *ds__traits(const ds_strategy *s);
/* The process's cluster connection (context.c): owner's device becomes where variables made
** outside every scope live, until that owner disconnects. "" when not connected. */
void ds__connect_process(const void *owner, const char *device);
void ds__disconnect_process(const void *owner);
const char *ds__process_device(void);
struct ds_input_dataset;
/* Marks a distributed dataset ParameterServerStrategy made: iterating it is TF's ValueError. */
void ds__input_dataset_set_unbuilt(struct ds_input_dataset *dd);
struct ds_cluster_resolver;
/* Strategy.cluster_resolver of a TPUStrategy: set when it is built (from its resolver, or the
** default TPUClusterResolver of its slice); ds__strategy_resolver copies it into out, 0 if none. */
void ds__strategy_set_resolver(ds_strategy *s, const struct ds_cluster_resolver *r);
int  ds__strategy_resolver(const ds_strategy *s, struct ds_cluster_resolver *out);
/* Keeps l (borrowed) as the strategy's layout (its builder puts reduce and gather results on the
** layout's host device with ds__strategy_set_host). */
void ds__strategy_set_layout(ds_strategy *s, const struct ds_sharding_layout *l);
/* That layout, or NULL for a strategy that was not built from one. */
const struct ds_sharding_layout *ds__strategy_layout(const ds_strategy *s);
/* tpu_topology.c: the Topology of the slice a resolver names, as TF's TPU system metadata query
** reads it, without initializing the system (what initialize_tpu_system returns). */
struct ds_tpu_resolver;
struct ds_tpu_topology;
struct ds_tpu_topology *ds__tpu_system_topology(const struct ds_tpu_resolver *r);

/* tpu_strategy.c: a TPUStrategy of `kind` on the slice resolver r names, built in e with
** everything it stands on (the slice, its Topology, a device assignment, the layout), which the
** strategy owns. ndevices == 0: every TPU device, in TF2's task-then-ordinal order, one logical
** device each; otherwise replica i runs on device devices[i] of that list alone. The devices'
** job is "localhost" for tpu="local", else the resolver's. Never fails on a resolver that
** ds_tpu_resolver_new accepted and valid device indices. The devices are numbered as sim/tpu
** numbers them (task * devices per task + ordinal); overrides (NULL: none) set the slice's figures;
** *slice_out (when not NULL) gets the slice. */
struct ds_tpu_machine;
struct sim_tpu_slice;
struct sim_tpu_overrides;
ds_strategy *ds__tpu_strategy_on_resolver(sim_engine *e, ds_kind kind, const struct ds_tpu_resolver *r,
                                          int ndevices, const int *devices,
                                          const struct ds_tpu_machine *m, sim_algo algo,
                                          const struct sim_tpu_overrides *overrides,
                                          struct sim_tpu_slice **slice_out);

/* variable.c: TF's variable_creator_scope with a creator that raises: while `why` is set,
** ds_variable_new fails with ValueError(why) (create_per_worker_dataset traces dataset_fn so).
** NULL lifts it. */
void ds__variable_creation_refuse(const char *why);
/* variable.c: the variables ps_strategy.c places. A plain variable of initial's value with one
** copy ("name:0") on device, made by strategy s (the options' name, synchronization, aggregation
** and trainable resolved as ds_variable_new does). */
ds_variable *ds__variable_placed(const md_tensor *initial, const ds_variable_options *o, ds_strategy *s,
                                 const char *device);
/* The variable a program holds for ShardedVariable sv (owned from now on; named after it). */
struct ds_sharded_variable;
ds_variable *ds__variable_sharded(struct ds_sharded_variable *sv, const ds_variable_options *o,
                                  ds_strategy *s);
/* tpu_strategy.c: where a variable made in a TPUStrategy's scope (one with a layout) lives, as
** TPUExtended._create_variable places it: *replicas copies of total / *replicas devices each, the
** devices' names (owned by the layout) in *device (free() it), copy-major. The total, or -1 with
** st set. */
int ds__tpu_variable_devices(const ds_strategy *s, int *replicas, const char ***device, ds_status *st);
/* ps_strategy.c: ds_variable_new inside a ParameterServerStrategy's scope (colocate_with: the
** innermost colocate_vars_with target, or NULL), and ds_variable_free of one of its variables. */
ds_variable *ds__ps_create_variable(ds_strategy *s, const md_tensor *initial, const ds_variable_options *o,
                                    const ds_variable *colocate_with, ds_status *st);
void         ds__ps_forget_variable(ds_strategy *s, const ds_variable *v);

/* context.c: whether the running code is a replica function (run() is driving the engine and
** no merge_fn is running). */
int ds__in_replica_context(void);

/* distribute.c: the arithmetic and checks shared by the replica and cross-replica operations. */
/* ValueError unless the n parts have one dtype and one shape. */
int        ds__check_alike(md_tensor *const *parts, int n, const char *what, ds_status *st);
/* ValueError unless the n parts can be concatenated along axis (rank >= 1, 0 <= axis < rank, equal
** dims off the axis; with exact, equal shapes). */
int        ds__check_gather(md_tensor *const *parts, int n, int axis, int exact, ds_status *st);
/* parts[0] + parts[1] + ... in that order, a new tensor (the parts are alike). */
md_tensor *ds__sum_in_order(md_tensor *const *parts, int n);
/* sum / count, consuming sum: float32 divided element by element, an integer sum converted to
** float32 first. */
md_tensor *ds__mean(md_tensor *sum, double count);
/* t * (1 / count), consuming t, as TPUStrategy takes a MEAN (scalar_mul(1. / n, value)): 1 / count
** rounded to float32, then multiplied element by element (bits differ from ds__mean's divide);
** an integer t is converted to float32 first. */
md_tensor *ds__times_reciprocal(md_tensor *t, double count);
/* The tensor's bytes in 4-byte words: what a collective moves for it. */
size_t     ds__float_words(const md_tensor *t);
/* The strategy's algorithm when it can run op on count floats, else ring. */
sim_algo   ds__algo_for(const ds_strategy *s, sim_coll_op op, size_t count);
/* The cross-replica SUM of one value per replica or of any other number of parts: float32 with
** one part per replica goes through the replicas' collective (driving the engine from outside),
** anything else is summed in order while the collective is timed on its bytes. */
md_tensor *ds__cross_replica_sum(ds_strategy *s, md_tensor *const *parts, int n, ds_status *st);

#endif
