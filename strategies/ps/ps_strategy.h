/*
** ps_strategy.h: tf.distribute.experimental.ParameterServerStrategy (TF 2.4's V2) on simulated
** CPU VMs, and the parameter-server side of its async training (ds_ps_).
**
** The cluster: `workers` worker tasks, `ps` parameter-server tasks and the coordinator (the chief,
** or whatever task type TF_CONFIG names for this program), each a VM with a CPU, a RAM pool and
** a NIC, all joined by one fabric (hosts: workers 0..W-1, then ps 0..P-1, then the coordinator,
** then the evaluator when the spec has one: last, so a cluster without one keeps its hosts and
** links). The evaluator is a VM of its own beside training (the side-car evaluator runs on it,
** scenarios/programs/ps_eval.h); the strategy never places anything there. Device names are TF's:
** /job:worker/replica:0/task:T/device:CPU:0, /job:ps/replica:0/task:K/device:CPU:0,
** /job:chief/replica:0/task:0/device:CPU:0, /job:evaluator/replica:0/task:0/device:CPU:0.
**
** The strategy is a ds_strategy of kind DS_PARAMETER_SERVER: scope, ds_variable_new, reduce and
** the input methods work on it. Its replicas are one worker's devices (num_replicas_in_sync =
** the worker machine's accelerators, or 1; worker 0's stand for any worker's), so reduce and
** reduce_to run across one worker's replicas only; gather is NotImplementedError;
** distribute_datasets_from_function calls dataset_fn with InputContext(1, 0, N).
**
** Variables created in its scope (ds_variable_new) go round-robin over the ps tasks: a counter,
** task counter % num_ps, incremented after each variable, each shard of a partitioned variable
** taking its own slot; under colocate_vars_with(v) a variable goes where v's (first) component
** is, is never partitioned and does not move the counter. With a variable_partitioner a variable
** of rank >= 1 is split by it: partitions [1, 1, ...] is a plain variable, [n, 1, ...] gives
** min(n, rows) shards "{name}/part_{i}" by the div rule in a ShardedVariable; ValueError for an
** empty list, a first element 0 or another element != 1. Rank-0 variables are never partitioned.
** Variables created outside the scope are plain variables of the coordinator.
**
** Async training: each ps task holds its components' values (a plain variable, or one shard) and
** their optimizer slots; every component counts the updates applied to it (its version). A
** worker actor reads (ds_ps_read_many: a closure's reads and lookups in one operation, as TF's
** function issues them; ds_ps_read, ds_ps_embedding_lookup: one of them) and pushes gradients
** (ds_ps_apply_gradients); the bytes cross the fabric as simulated transfers, and the numerics
** happen when each transfer completes: a read copies the ps's value at the moment its bytes
** arrive, a push is applied at the moment it arrives at its ps, in arrival order. Design notes
** and invariants are at the top of ps_strategy.c.
*/
#ifndef PODSIM_PS_STRATEGY_H
#define PODSIM_PS_STRATEGY_H

#include <stdint.h>

#include "models/optimizer.h"
#include "strategies/core/partitioner.h"
#include "strategies/core/sharded_variable.h"

/* The cluster spec and task of TF_CONFIG: task counts per job, and this program's task. */
typedef struct ds_ps_cluster_spec {
  int chief;              /* tasks of job "chief" (0 or 1) */
  int workers;            /* tasks of job "worker" */
  int ps;                 /* tasks of job "ps" */
  int evaluators;         /* tasks of job "evaluator" (0 or 1: a VM beside training) */
  char task_type[16];     /* TF_CONFIG task.type: this program's job ("" when not given: chief) */
  int task_index;         /* TF_CONFIG task.index */
} ds_ps_cluster_spec;

/* TF_CONFIG's JSON text ({"cluster": {"chief": [...], "worker": [...], "ps": [...], "evaluator":
** [...]}, "task": {"type": ..., "index": ...}}) into *out. ValueError when the text is not JSON
** (json.loads raises a ValueError), "cluster" is missing or not an object of address lists, a job
** is not one of the four, or "task" is malformed. The spec's own rules are checked by
** ds_ps_strategy_new. */
int ds_ps_cluster_spec_from_tf_config(const char *json, ds_ps_cluster_spec *out, ds_status *st);

/* The VMs of each job and the network between them. */
typedef struct ds_ps_cluster {
  ds_machine worker;      /* every worker task (its accelerators give num_replicas_in_sync) */
  ds_machine ps;          /* every parameter-server task */
  ds_machine coordinator; /* the chief (coordinator) task */
  ds_machine evaluator;   /* the evaluator task, when the spec has one */
  sim_fabric_kind fabric; /* how the tasks are joined */
  double link_bytes_per_s;/* fabric link bandwidth (a host's links are capped by its NIC) */
  sim_time latency;       /* fabric link latency */
} ds_ps_cluster;

/* ParameterServerStrategy(cluster_resolver, variable_partitioner) (partitioner NULL: None).
** ValueError, in TF's order: an empty cluster spec; a job the spec does not allow or a task type
** that is not chief, worker, ps or evaluator; a task type missing from the spec; more than one
** chief or evaluator; a task index past its job; no ps; no worker; a coordinator whose job is
** worker or ps. Returns NULL on error. Free with ds_strategy_free after its variables. */
ds_strategy *ds_ps_strategy_new(sim_engine *e, const ds_ps_cluster_spec *spec, const ds_ps_cluster *m,
                                const ds_partitioner *variable_partitioner, ds_status *st);

/* ---- tasks ----------------------------------------------------------------------------- */

typedef enum { DS_PS_WORKER = 0, DS_PS_PS, DS_PS_COORDINATOR, DS_PS_EVALUATOR } ds_ps_job;
/* The coordinator as the `worker` argument of the reads below. */
#define DS_PS_FROM_COORDINATOR (-1)

int          ds_ps_num_tasks(const ds_strategy *s, ds_ps_job job);  /* the coordinator: 1; evaluator: 0 or 1 */
const char  *ds_ps_task_device(const ds_strategy *s, ds_ps_job job, int index);
sim_cpu     *ds_ps_task_cpu(const ds_strategy *s, ds_ps_job job, int index);
sim_mempool *ds_ps_task_memory(const ds_strategy *s, ds_ps_job job, int index);
/* How an op turns into time on the task's CPU (its flops and memory bandwidth). */
sim_roofline ds_ps_task_roofline(const ds_strategy *s, ds_ps_job job, int index);
/* The fabric route from one task to another (empty between a task and itself), snprintf-style:
** writes what fits in out[0..max) and returns its length. */
size_t       ds_ps_route(const ds_strategy *s, ds_ps_job from_job, int from, ds_ps_job to_job, int to,
                         sim_link **out, size_t max);

/* ---- variables ------------------------------------------------------------------------- */

/* Keras's optimizer created in the strategy's scope: its `iterations` (an int64 scalar, never
** partitioned) takes the next round-robin slot now, and every trainable float32 component, now
** or created later, gets the spec's slots on its own ps (colocated, as Keras creates them).
** ValueError when the strategy already has one. */
int ds_ps_set_optimizer(ds_strategy *s, const md_optimizer_spec *spec, ds_status *st);
/* optimizer.iterations: apply_gradients calls completed, over every worker. */
int64_t ds_ps_optimizer_iterations(const ds_strategy *s);

/* Every component the ps tasks hold, in creation order: plain variables ("variable"), shards of
** ShardedVariables ("shard"), optimizer slots ("slot": "<component>/<suffix>") and the
** optimizer's iterations ("iterations"), for variables.csv. */
typedef struct ds_ps_component {
  const char *name;       /* "w:0", "emb/part_1:0", "emb/part_1/m", "iterations" */
  const char *kind;       /* "variable", "shard", "slot", "iterations" */
  int rank;               /* of shape */
  const int64_t *shape;   /* its dims */
  const char *device;     /* the ps task's device */
  int ps;                 /* that task */
} ds_ps_component;
/* Writes what fits in out[0..max) (names and shapes borrowed until the next variable is created
** or freed) and returns the full count. */
int ds_ps_components(const ds_strategy *s, ds_ps_component *out, int max);

/* Components of v on the ps tasks (1, or its shards), and component k's ps task and version (the
** updates applied to it). -1 for a variable this strategy did not place (created outside the
** scope: the coordinator's). */
int     ds_ps_num_components(const ds_strategy *s, const ds_variable *v);
int     ds_ps_component_task(const ds_strategy *s, const ds_variable *v, int k);
int64_t ds_ps_component_version(const ds_strategy *s, const ds_variable *v, int k);

/* ---- async training, from a worker's actor --------------------------------------------- */

/* A closure's reads, as TF's function runs them: every ReadVariableOp and ResourceGather on the
** ps tasks has no input from the others, so the runtime issues them all when the function
** starts (one latency, the bytes sharing the links max-min), each copied when its own bytes
** arrive. Variable i is read whole when ids is NULL or ids[i] is NULL (as ds_ps_read), else
** looked up (as ds_ps_embedding_lookup: its requests first, its rows once they have all arrived,
** while the other reads go on). out[i] gets variable i's new tensor; versions (may be NULL) each
** component's version at its copy, the components of vars in order. step (may be NULL) asks for
** optimizer.iterations in the same operation (8 bytes from its ps) and gets it + 1: Keras'
** local_step (adam's t), which has no input from the closure's compute either, for
** ds_ps_apply_gradients. Errors as ds_ps_read and ds_ps_embedding_lookup (the first met), and
** ValueError for step without an optimizer; then every out[i] is NULL. Returns 0 or -1. */
int ds_ps_read_many(ds_strategy *s, sim_actor *self, int worker, int n, ds_variable *const *vars,
                    const md_tensor *const *ids, md_tensor **out, int64_t *versions, int64_t *step,
                    ds_status *st);
/* v.read_value() on worker `worker` (or DS_PS_FROM_COORDINATOR), from its actor self: each
** component's bytes move ps -> worker (a variable outside the scope: coordinator -> worker), all
** at once; each is copied when its own transfer completes. A ShardedVariable comes back
** converted: every shard travels and is concatenated. versions (may be NULL) gets each
** component's version at its copy. UnavailableError naming the ps task when it is failed at
** the start or when the bytes arrive. A new tensor, or NULL. */
md_tensor *ds_ps_read(ds_strategy *s, sim_actor *self, int worker, ds_variable *v, int64_t *versions,
                      ds_status *st);
/* tf.nn.embedding_lookup(v, ids) on a worker: TF's ResourceGather runs on the ps holding the
** rows, so the lookup is a request then a response. First the ids go worker -> ps: a
** ShardedVariable's shard k receives only the ids it holds (dynamic_partition: ids_k x the ids'
** dtype size, 8 bytes for int64), a plain variable all of them; then, once every request has
** arrived, shard k moves only the rows of its ids back (ids_k x row bytes; a shard with none still
** receives and answers, latency only both ways), a plain variable the rows asked for. Errors as
** ds_sharded_variable_embedding_lookup and ds_ps_read (UnavailableError also when a ps is down as
** its request arrives). */
md_tensor *ds_ps_embedding_lookup(ds_strategy *s, sim_actor *self, int worker, ds_variable *v,
                                  const md_tensor *ids, int64_t *versions, ds_status *st);
/* One gradient of apply_gradients: a dense tensor shaped like the variable, or a
** tf.IndexedSlices, what the gradient of an embedding lookup (a gather) is. */
typedef struct ds_ps_grad {
  const md_tensor *dense;   /* the gradient; NULL for IndexedSlices */
  const md_tensor *indices; /* IndexedSlices: int32 or int64 [n], rows of the full variable, in the
                            ** order the lookup saw them, duplicates included; NULL when dense */
  const md_tensor *values;  /* IndexedSlices: float32 [n, the variable's shape[1:]], row j for indices[j] */
} ds_ps_grad;

/* optimizer.apply_gradients(zip(grads, vars)) in a closure on worker `worker`: the updates use
** t = step, optimizer.iterations + 1 as the closure read it (ds_ps_read_many) for adam's bias
** correction, or when step < 0 as read now (iterations' round trip first); pushes every gradient
** worker -> ps at once; each
** ps applies its update when the push arrives, in arrival order, and bumps the component's
** version; then the worker waits for the ps CPUs to run the updates (max-min shared with other
** updates there) and adds 1 to iterations on its ps.
**   dense: a ShardedVariable's gradient is split into its shards' rows; each moves its bytes and
**          is applied with md_optimizer_update.
**   IndexedSlices: each component gets the slices of its own rows (a ShardedVariable's by the
**          div rule, ids -> (shard, row in shard), order kept; a shard with none still gets an
**          empty push, latency only, and still applies: adam decays its slots); it moves
**          values bytes + len(indices) * the indices' dtype size (8 for int64), and is applied
**          with the optimizer's sparse kernel (md_optimizer_update_sparse: Keras' dedup, then
**          only the rows indexed, but every row for adam). The ps CPU is charged for the rows the
**          kernel touches.
** applied_at (may be NULL) gets, per component of the vars in order, the version the component
** had when this update arrived (the worker's staleness is applied_at minus the version its read
** saw). ValueError without an optimizer, for a variable this strategy did not place, or a
** gradient of another shape or dtype than float32 (slices: indices not 1-D integers, values not
** [len(indices)] + shape[1:]); InvalidArgumentError for an index outside the variable's rows;
** UnavailableError as ds_ps_read (the updates that did arrive at live ps tasks stay applied). */
int ds_ps_apply_gradients(ds_strategy *s, sim_actor *self, int worker, int n, ds_variable *const *vars,
                          const ds_ps_grad *grads, int64_t step, int64_t *applied_at, ds_status *st);

/* A worker's on-kill path: releases what its read or push cut short held (its transfers were
** already withdrawn by the kill, so nothing of it is applied). The next read or push of that
** worker does this too, so calling it is only needed to free the memory at once. */
void ds_ps_worker_release(ds_strategy *s, int worker);

/* ---- the coordinator ------------------------------------------------------------------- */

/* ClusterCoordinator(strategy) (strategies/ps/coordinator.h) over this strategy's workers
** ("/job:worker/replica:0/task:W", their CPUs) and ps tasks. ValueError (TF's text) unless s is
** a ParameterServerStrategy; one per strategy: a second call returns the first. The strategy
** owns it and frees it first (ds_strategy_free). */
struct ds_coordinator *ds_cluster_coordinator_new(ds_strategy *s, ds_status *st);

/* ---- checkpoints ----------------------------------------------------------------------- */

/* What tf.train.Checkpoint(model, optimizer) saves from the ps tasks: every component's value,
** its optimizer slots and the optimizer's iterations. Restoring puts them back (versions keep
** counting: a restore is not an update); InvalidArgumentError when the components changed. */
typedef struct ds_ps_snapshot ds_ps_snapshot;
ds_ps_snapshot *ds_ps_snapshot_take(ds_strategy *s);
uint64_t        ds_ps_snapshot_bytes(const ds_ps_snapshot *snap);
int             ds_ps_snapshot_restore(ds_strategy *s, const ds_ps_snapshot *snap, ds_status *st);
void            ds_ps_snapshot_free(ds_ps_snapshot *snap);
/* v's value as snap saved it (a ShardedVariable's shards concatenated), as a reader of the
** checkpoint file restores it: a new tensor, or NULL for a variable this strategy did not place
** or when the components changed since snap was taken. */
md_tensor      *ds_ps_snapshot_value(const ds_strategy *s, const ds_ps_snapshot *snap, const ds_variable *v);

/* Fault injection: ps task k fails (failed = 1; TF cannot recover it) or comes back. */
void ds_ps_set_failed(ds_strategy *s, int ps, int failed);
int  ds_ps_failed(const ds_strategy *s, int ps);

/* ---- fast-forward (ps_skip.c) ----------------------------------------------------------- */

/* The update counters a fast-forward moves (scenarios/programs/ps_train.c): out[i] (i below the
** return value, and out large enough when NULL is not passed) gets registry component i's version,
** the last entry optimizer.iterations. Returns the count (components + 1). */
int  ds_ps_counters(const ds_strategy *s, int64_t *out);
/* Adds k * delta[i] to each counter of ds_ps_counters: what k repeats of a period whose updates
** moved them by delta would leave (the values, with numerics off, are shapes alone). */
void ds_ps_skip_counters(ds_strategy *s, const int64_t *delta, int64_t k);

#endif
