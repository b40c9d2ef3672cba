/*
** tpu_v1.h: TF1's tf.contrib.distribute.TPUStrategy (TF 1.12-1.14), the tower API (ds_tpu_v1_).
**
** From tensorflow/contrib/distribute/python/tpu_strategy.py and python/training/distribute.py of
** that era; docs/strategies.md (TF1 contrib section) maps each method to its function. TF1 called a replica a
** tower: num_towers is num_replicas_in_sync, the tower context is a ds_rctx (context.h) and
** tower_id is ds_rctx_replica_id.
**
** Towers are the TPU devices of the resolver's slice sorted by name, as TF1 sorts its device map
** ("/job:worker/replica:0/task:10/..." sorts before ".../task:2/..."), the first num_towers of
** them; each is a replica of one logical device. A ds_tpu_v1 owns a ds_strategy of kind
** DS_TPU_V1 over those devices (ds_tpu_v1_strategy): `with strategy.scope()`, variables and the
** ReplicaContext calls work on it as on every strategy.
**
** steps_per_run is an on-device loop: run_steps_on_dataset launches `iterations` steps at once.
** Per launch the host pays a fixed overhead (the session.run dispatch, options.loop_overhead),
** sends the launch over each tower's PCIe link (DS_TPU_V1_LAUNCH_BYTES) and, after the last
** step, fetches the towers' outputs back over PCIe; in between each step dequeues its batch from
** the infeed (PCIe, host to chip) and runs the step function. So the round trip is paid once per
** loop, visibly in simulated time.
*/
#ifndef PODSIM_TPU_V1_H
#define PODSIM_TPU_V1_H

#include "strategies/core/distribute.h"
#include "strategies/input/input.h"
#include "strategies/tpu/tpu_strategy.h"
#include "strategies/tpu/tpu_topology.h"
#include "strategies/core/variable.h"

/* The host's cost of launching one loop: a TF1 session.run dispatch of the replicated program
** (graph lookup, feeds, the launch RPC), 100 us. A modelling figure, not a measurement. */
#define DS_TPU_V1_LOOP_OVERHEAD INT64_C(100000000)
/* The launch message each tower's chip receives over PCIe: program handle and loop count. */
#define DS_TPU_V1_LAUNCH_BYTES 256.0
/* Outputs a MultiStepContext holds (last-step and non-tensor, each). */
#define DS_TPU_V1_MAX_OUTPUTS 16

typedef struct ds_tpu_v1 ds_tpu_v1;

/* TPUStrategy(tpu_cluster_resolver, steps_per_run=None, num_cores=None), and the session state
** TF1 keeps outside the strategy. */
typedef struct ds_tpu_v1_options {
  int steps_per_run;      /* 0: None, which TF takes as 1 */
  int num_cores;          /* 0: None, auto-detect every TPU device of the system */
  int executing_eagerly;  /* tf.enable_eager_execution() was called: initialize/finalize refuse */
  sim_time loop_overhead; /* host cost per loop launch (DS_TPU_V1_LOOP_OVERHEAD by default) */
  const sim_tpu_overrides *overrides; /* the slice's figures where they are not the catalogue's
                          ** (NULL: the catalogue's), as a scenario's cluster.tpu.overrides */
} ds_tpu_v1_options;

ds_tpu_v1_options ds_tpu_v1_options_default(void);

/* TPUStrategy(resolver, steps_per_run, num_cores) on the slice the resolver names, built in e
** (o NULL: ds_tpu_v1_options_default())
** (the resolver is read, not kept; it need not be initialized: TF1 only queries the system's
** metadata). ValueError for no resolver, steps_per_run < 0, or num_cores < 0 or above the
** system's TPU devices. NULL on error. */
ds_tpu_v1 *ds_tpu_v1_new(sim_engine *e, const ds_tpu_resolver *r, const ds_tpu_v1_options *o,
                         const ds_tpu_machine *m, sim_algo algo, ds_status *st);
void ds_tpu_v1_free(ds_tpu_v1 *v);

/* The strategy the towers run on (kind DS_TPU_V1), for ds_scope_enter, variables and run. */
ds_strategy *ds_tpu_v1_strategy(const ds_tpu_v1 *v);
/* The simulated slice the towers are on (the strategy's, freed with it). */
const sim_tpu_slice *ds_tpu_v1_slice(const ds_tpu_v1 *v);

/* One loop of steps_per_run as a tower's actor pays it, the one model of that cost that
** run_steps_on_dataset and a training program share: ds_tpu_v1_launch before the loop's first
** step (the host's dispatch, loop_overhead, then the launch message over the tower's PCIe
** link), ds_tpu_v1_fetch after its last (the tower's outputs back over PCIe). SIM_OK, or what
** the interrupted wait returned. */
int ds_tpu_v1_launch(const ds_tpu_v1 *v, sim_actor *self, int tower);
int ds_tpu_v1_fetch(const ds_tpu_v1 *v, sim_actor *self, int tower, double bytes);

/* ---- properties ---------------------------------------------------------------------------- */

int ds_tpu_v1_num_towers(const ds_tpu_v1 *v);          /* num_towers: num_cores or every device */
int ds_tpu_v1_is_single_tower(const ds_tpu_v1 *v);
int ds_tpu_v1_steps_per_run(const ds_tpu_v1 *v);
int ds_tpu_v1_num_hosts(const ds_tpu_v1 *v);           /* the TPU system's hosts */
int ds_tpu_v1_num_towers_per_host(const ds_tpu_v1 *v); /* its cores per host */
int ds_tpu_v1_between_graph(const ds_tpu_v1 *v);       /* experimental_between_graph: 0 */
int ds_tpu_v1_should_init(const ds_tpu_v1 *v);         /* 1 */
int ds_tpu_v1_should_checkpoint(const ds_tpu_v1 *v);   /* 1 */
int ds_tpu_v1_should_save_summary(const ds_tpu_v1 *v); /* 1 */
/* worker_devices and parameter_devices: the towers' devices in tower order. Writes what fits in
** out[0..max) and returns the count. */
int ds_tpu_v1_worker_devices(const ds_tpu_v1 *v, const char **out, int max);
int ds_tpu_v1_parameter_devices(const ds_tpu_v1 *v, const char **out, int max);
/* get_host_cpu_device(host): "/replica:0/task:0/device:CPU:0" when the master is "" or "local",
** else "/job:<job>/task:<host>/device:CPU:0"; into buf. */
const char *ds_tpu_v1_host_cpu_device(const ds_tpu_v1 *v, int host, char *buf, size_t len);
/* non_slot_devices(var_list): host 0's CPU, whatever the variables. */
const char *ds_tpu_v1_non_slot_devices(const ds_tpu_v1 *v);

/* The parts of a tf.ConfigProto configure() sets. */
typedef struct ds_tpu_v1_session_config {
  int isolate_session_state; /* isolate_session_state */
  char cluster_job[32];      /* cluster_def's job ("" when the cluster spec is empty) */
  int cluster_tasks;         /* its tasks */
} ds_tpu_v1_session_config;
/* configure(session_config): isolate_session_state on, and the resolver's cluster spec copied in
** (tpu="local" has none). */
void ds_tpu_v1_configure(const ds_tpu_v1 *v, ds_tpu_v1_session_config *config);

/* initialize() / finalize(): in graph mode the TPU system's initialize_system / shutdown_system
** (ds_tpu_v1_system_initialized follows them); with eager execution NotImplementedError. */
int ds_tpu_v1_initialize(ds_tpu_v1 *v, ds_status *st);
int ds_tpu_v1_finalize(ds_tpu_v1 *v, ds_status *st);
int ds_tpu_v1_system_initialized(const ds_tpu_v1 *v);

/* ---- towers -------------------------------------------------------------------------------- */

/* call_for_each_tower(fn, *args): fn once per tower, in tower context (ds_run on the strategy:
** merge_call, all_reduce and tower_id through the ds_rctx). */
int ds_tpu_v1_call_for_each_tower(ds_tpu_v1 *v, ds_replica_fn fn, void *user, int nargs,
                                  ds_value *const *args, int nresults, ds_value **results,
                                  ds_status *st);

/* unwrap(value): the components in sorted device order (a regular value: itself). Writes what
** fits in out[0..max) (borrowed) and returns the count. */
int ds_tpu_v1_unwrap(const ds_value *value, md_tensor **out, int max);
/* value_container(value): the value itself on TPU. */
const ds_value *ds_tpu_v1_value_container(const ds_value *value);
/* broadcast(tensor, destinations): TPU leaves the tensor as it is (the replicated program reads
** it on every core); a regular value holding a copy. */
ds_value *ds_tpu_v1_broadcast(const md_tensor *tensor);

/* reduce(aggregation, value, destinations) in cross-tower context: the add_n of unwrap(value) on
** host 0's CPU; MEAN multiplies that sum by 1/len (float32, as TF's `output * (1. / n)`),
** ONLY_FIRST_TOWER (DS_REDUCE_ONLY_FIRST_REPLICA) takes the first. destinations must be one
** device naming host 0's CPU (compared canonically). Errors: RuntimeError in tower context (use
** ds_tpu_v1_tower_reduce); ValueError for no destination, several ("Multiple devices are not
** supported for TPUStrategy"), another device, or components of different dtypes or shapes;
** TypeError for MEAN of integers. A new tensor, or NULL. */
md_tensor *ds_tpu_v1_reduce(ds_tpu_v1 *v, ds_reduce_op aggregation, const ds_value *value,
                            int ndest, const char *const *destinations, ds_status *st);
/* batch_reduce(aggregation, value_destination_pairs): reduce on each pair; out[i] gets pair i's
** result. On error nothing is returned. */
int ds_tpu_v1_batch_reduce(ds_tpu_v1 *v, ds_reduce_op aggregation, int n,
                           const ds_reduce_pair *pairs, md_tensor **out, ds_status *st);
/* reduce inside the replicated program (tower context): tpu_ops.cross_replica_sum through the
** towers' all-reduce, MEAN first multiplying each tower's value by 1/num_towers. Every tower gets
** the result. NotImplementedError for another aggregation, TypeError for MEAN of integers, raised
** on the tower; NULL then. */
md_tensor *ds_tpu_v1_tower_reduce(ds_rctx *tower, ds_reduce_op aggregation, const md_tensor *value);

/* ---- variables ----------------------------------------------------------------------------- */

/* update(var, fn, *args): fn on every copy of the TPUMirroredVariable, in cross-tower context
** (ds_variable_update). TypeError unless var is a MirroredVariable. */
int ds_tpu_v1_update(ds_tpu_v1 *v, ds_variable *var, ds_update_fn fn, void *user, int nargs,
                     ds_value *const *args, ds_value **out, ds_status *st);
/* update_non_slot(colocate_with, fn): fn once, on host 0's CPU in cross-tower context (TF drops
** colocate_with). Returns fn's result; RuntimeError in tower context. */
typedef int (*ds_tpu_v1_host_fn)(ds_tpu_v1 *v, void *user, ds_status *st);
int ds_tpu_v1_update_non_slot(ds_tpu_v1 *v, ds_tpu_v1_host_fn fn, void *user, ds_status *st);
/* read_var(var): var.read_value() in cross-tower context (copy 0). TypeError unless var is a
** MirroredVariable. */
md_tensor *ds_tpu_v1_read_var(ds_tpu_v1 *v, ds_variable *var, ds_status *st);
/* colocate_vars_with(var) ... end: TF1's TPU strategy places every variable on the towers'
** devices whatever the colocation, so this only nests. Ending without a begin: RuntimeError. */
int ds_tpu_v1_colocate_vars_with_begin(ds_tpu_v1 *v, const ds_variable *var, ds_status *st);
int ds_tpu_v1_colocate_vars_with_end(ds_tpu_v1 *v, ds_status *st);

/* ---- input and the on-device loop ----------------------------------------------------------- */

typedef struct ds_tpu_v1_iterator ds_tpu_v1_iterator;

/* distribute_dataset(dataset_fn).make_one_shot_iterator(): dataset_fn runs once per host (its
** context says which: InputContext(num_hosts, host, num_towers); TF1's took no argument), and
** the towers of a host take its elements in turn, a whole element each: step k gives the j-th
** tower of a host element k * (its towers) + j. dataset_fn's error is returned as it is. */
ds_tpu_v1_iterator *ds_tpu_v1_distribute_dataset(ds_tpu_v1 *v, ds_input_dataset_fn dataset_fn,
                                                 void *user, ds_status *st);
void ds_tpu_v1_iterator_free(ds_tpu_v1_iterator *it);

/* values.MultiStepContext. */
typedef struct ds_tpu_v1_step_context ds_tpu_v1_step_context;

/* The step function: one step of one tower, in tower context, on its dequeued inputs (the
** element's components, borrowed). Returns 0, or -1 after ds_rctx_fail. */
typedef int (*ds_tpu_v1_step_fn)(ds_tpu_v1_step_context *ctx, ds_rctx *tower, void *user,
                                 md_tensor *const *inputs);

/* run_steps_on_dataset(fn, iterator, iterations) and running its run_op: one loop launch of
** `iterations` steps on every tower (the strategy's steps_per_run is what Keras and Estimator
** pass). Returns the MultiStepContext (the caller frees it), or NULL: ValueError when the input
** shapes are not fully defined or iterations < 1; OutOfRangeError when the iterator cannot feed
** every step; a tower's error as run raises it. */
ds_tpu_v1_step_context *ds_tpu_v1_run_steps_on_dataset(ds_tpu_v1 *v, ds_tpu_v1_step_fn fn, void *user,
                                                       ds_tpu_v1_iterator *it, int iterations,
                                                       ds_status *st);
void ds_tpu_v1_step_context_free(ds_tpu_v1_step_context *ctx);

/* set_last_step_output(name, output, aggregation) in tower context: every tower calls it; the
** value is reduced across towers (ds_tpu_v1_tower_reduce) and the last step's reduction is kept
** under name. ValueError for aggregation NONE (TF asserts one is given in tower context) or more
** than DS_TPU_V1_MAX_OUTPUTS names; the tower reduce's errors. Returns 0 or -1 (raised on the
** tower). */
int ds_tpu_v1_set_last_step_output(ds_tpu_v1_step_context *ctx, ds_rctx *tower, const char *name,
                                   const md_tensor *output, ds_aggregation aggregation);
/* set_non_tensor_output(name, output) in tower context: a merge_call that keeps every tower's
** output, unwrapped (a PerReplica in tower order; one tower: the value itself). */
int ds_tpu_v1_set_non_tensor_output(ds_tpu_v1_step_context *ctx, ds_rctx *tower, const char *name,
                                    const md_tensor *output);

/* last_step_outputs and non_tensor_outputs, in the order names were first set. */
int           ds_tpu_v1_num_last_step_outputs(const ds_tpu_v1_step_context *ctx);
const char   *ds_tpu_v1_last_step_output_name(const ds_tpu_v1_step_context *ctx, int i);
/* The output under name (borrowed), NULL when none. */
md_tensor    *ds_tpu_v1_last_step_output(const ds_tpu_v1_step_context *ctx, const char *name);
int           ds_tpu_v1_num_non_tensor_outputs(const ds_tpu_v1_step_context *ctx);
const char   *ds_tpu_v1_non_tensor_output_name(const ds_tpu_v1_step_context *ctx, int i);
const ds_value *ds_tpu_v1_non_tensor_output(const ds_tpu_v1_step_context *ctx, const char *name);

#endif
