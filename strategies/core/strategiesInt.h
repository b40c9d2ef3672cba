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
struct ds_cluster_resolver;
/* Strategy.cluster_resolver of a TPUStrategy: set when it is built (from its resolver, or the
** default TPUClusterResolver of its slice); ds__strategy_resolver copies it into out, 0 if none. */
void ds__strategy_set_resolver(ds_strategy *s, const struct ds_cluster_resolver *r);
int  ds__strategy_resolver(const ds_strategy *s, struct ds_cluster_resolver *out);
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
/* What a kind's own folder does where the Strategy base's rules are not its rules (tpu/, ps/),
** set by the kind's builder so the base calls up through it without naming that folder. */
typedef struct ds__kind_ops {
  /* Where a variable made in the strategy's scope lives (TPUExtended._create_variable):
  ** *replicas copies of total / *replicas devices each, the devices' names (the strategy's,
  ** borrowed) in *device (free() it), copy-major. The total, or -1 with st set. NULL: one copy
  ** per replica on its device, or one on the strategy's. */
  int (*variable_devices)(const ds_strategy *s, int *replicas, const char ***device, ds_status *st);
  /* ds_variable_new in the strategy's scope when its kind places variables itself
  ** (ds_kind_traits.ps_variables; colocate_with: the innermost colocate_vars_with target, or
  ** NULL), and ds_variable_free of one of them. */
  ds_variable *(*create_variable)(ds_strategy *s, const md_tensor *initial, const ds_variable_options *o,
                                  const ds_variable *colocate_with, ds_status *st);
  void (*forget_variable)(ds_strategy *s, const ds_variable *v);
} ds__kind_ops;
/* Sets s's kind ops (static, never freed) and the table they read (borrowed, may be NULL:
** TPUStrategy's [replica][logical device] layout). */
void ds__strategy_set_kind(ds_strategy *s, const ds__kind_ops *ops, const void *table);
/* Those ops (NULL: the base's rules throughout) and that table. */
const ds__kind_ops *ds__strategy_kind_ops(const ds_strategy *s);
const void *ds__strategy_kind_table(const ds_strategy *s);

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
