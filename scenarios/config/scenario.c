/*
** scenario.c: the top level of a scenario file, the checks across sections, and the entry points.
** It validates a scenario tree (yamltree.h) against the v1 contract and fills
** struct scenario. The format is described by tables of key_spec (one table per mapping:
** key, value type, where it is stored, range, enum names); walk_map checks a mapping's entries
** in file order against its table. Errors stop the walk at the first problem in file order.
** The loader is split by section: keyspec.c is the engine (cfg_walk_map and the scalar
** checks), keys_*.c hold each top-level section's tables and handlers, configInt.h what
** they share; this file holds ROOT_KEYS, the checks across sections and the entry points.
*/
#include "scenarios/config/configInt.h"
#include "scenarios/report/report.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scenarios/config/machines.h"
#include "scenarios/programs/slice.h"
#include "sim/compile.h"
#include "strategies/tpu/device_assignment.h"

static const char *const NUMERICS[] = {"off", "full", NULL};

static int name_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  const char *t;
  (void)k; (void)base;
  if (cfg_get_str(c, v, path, &t)) return -1;
  if (strlen(t) >= sizeof c->s->name || strspn(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != strlen(t) ||
      t[0] == '.')
    return cfg_fail(c, v, path, "expected a name of letters, digits, '.', '_' or '-' (at most %zu), found \"%s\"",
                sizeof c->s->name - 1, t);
  base_format(c->s->name, sizeof c->s->name, "%s", t);
  return 0;
}

const key_spec CFG_ROOT_KEYS[] = {
  {.key = "name", .type = V_FN, .fn = name_fn, .required = 1,
   .schema = "{\"type\":\"string\",\"pattern\":\"^[A-Za-z0-9_-][A-Za-z0-9._-]*$\",\"maxLength\":127,\"description\":\"the scenario's name: letters, digits, '.', '_' and '-'; outputs go to out/<name> by default\"}"},
  {.key = "seed", .doc = "every random draw derives from it", .type = V_INT, .st = S_U64, OFF(scenario, seed), .lo = 0, .hi = 9.2e18},
  {.key = "numerics", .doc = "full: real float32 math; off: shapes and costs only", .type = V_ENUM, .names = NUMERICS, .st = S_INT,
   OFF(scenario, numerics_full)},
  {.key = "mode", .type = V_ENUM, .names = CFG_MODES, .st = S_INT, OFF(scenario, mode),
   .doc = "fit trains (Model.fit); evaluate runs the loss and compiled metrics over the dataset from the initial weights (Model.evaluate); predict writes the model's outputs per example (Model.predict); the last two one pass or training.steps batches, through the strategy"},
  {.key = "cluster", .doc = "the machines: a TPU slice, or CPU/GPU worker VMs on a fabric, ps tasks, chief, evaluator", .type = V_MAP, .sub = CFG_CLUSTER_KEYS},
  {.key = "strategy", .doc = "the tf.distribute strategy and its options", .type = V_MAP, .sub = CFG_STRATEGY_KEYS},
  {.key = "model", .doc = "a Keras model: input and layers (or a Keras model config), loss, initial weights, dtype policy (a training run; then optimizer, dataset and training are required)", .type = V_MAP, .sub = CFG_MODEL_KEYS, .post = cfg_model_post},
  {.key = "optimizer", .type = V_FN, .fn = cfg_optimizer_fn, .variants = CFG_OPTIMIZERS,
   .schema = "{\"allOf\":[\"$variants\"],\"description\":\"the optimizer, by kind, with Keras's defaults\"}"},
  {.key = "dataset", .doc = "the input data: a CSV file, CSV files or a synthetic dataset, and how it is batched and distributed", .type = V_MAP, .sub = CFG_DATASET_KEYS, .post = cfg_dataset_post},
  {.key = "training", .doc = "steps or epochs, loss reduction, XLA compile, checkpoints, restarts", .type = V_MAP, .sub = CFG_TRAINING_KEYS, .post = cfg_training_post},
  {.key = "workload", .doc = "a collective or matmul microbenchmark instead of a training run", .type = V_MAP, .sub = CFG_WORKLOAD_KEYS},
  {.key = "faults", .type = V_FN, .fn = cfg_faults_fn, .variants = CFG_FAULT_KINDS,
   .schema = "{\"type\":\"array\",\"maxItems\":32,\"items\":\"$variants\",\"description\":\"preemptions, failures, stragglers, degraded and downed links (docs/faults.md); at most 32, a trace file holds any number; [] for none\"}"},
  {.key = "outputs", .doc = "where results go and which charts are drawn", .type = V_MAP, .sub = CFG_OUTPUTS_KEYS},
  {.key = "expect", .type = V_FN, .fn = cfg_expect_fn, .map = CFG_EXPECT_KEYS,
   .schema = "{\"type\":\"array\",\"minItems\":1,\"maxItems\":32,\"items\":{\"allOf\":[\"$map\"],\"minProperties\":2,\"maxProperties\":2},\"description\":\"checks of summary.json figures: {metric: M, CMP: number}, exactly one comparator; a failed one exits 1\"}"},
  {.key = "sweep", .type = V_FN, .fn = cfg_sweep_fn,
   .schema = "{\"type\":\"object\",\"maxProperties\":8,\"propertyNames\":{\"pattern\":\"^[a-z_0-9]+(\\\\.[a-z_0-9]+)*$\"},\"additionalProperties\":{\"type\":\"array\",\"minItems\":1},\"description\":\"podsim plan's grid: {key.path: [values]}, at most 8 keys and 1024 points\"}"},
  END};

static int is_tpu_kind(scn_strategy_kind k) {
  return k == SCN_STRATEGY_TPU || k == SCN_STRATEGY_TPU_V1 || k == SCN_STRATEGY_GNN_RUNNER_TPU;
}

/* A strategy key that only `kind` takes. */
static int only_with(cfg_ctx *c, const char *key, scn_strategy_kind kind, const char *kind_name) {
  const yt_node *st = yt_get(c->root, "strategy"), *k = st ? yt_get_key(st, key) : NULL;
  char path[64];
  if (k == NULL || c->s->strategy == kind) return 0;
  base_format(path, sizeof path, "strategy.%s", key);
  return cfg_fail(c, k, path, "goes with strategy kind %s, not %s", kind_name, CFG_STRATEGIES[c->s->strategy]);
}

/* The device assignment must build on the slice, as DeviceAssignment.build would (its
** ValueError text says why not). */
static int device_assignment_checks(cfg_ctx *c, const yt_node *da) {
  scenario *s = c->s;
  char topology[32];
  ds_status st = {0};
  ds_tpu_resolver *r = ds_tpu_resolver_new("", s->tpu_type, slice_topology(s, topology, sizeof topology), &st);
  ds_tpu_topology *t = r ? ds_tpu_initialize_system(r) : NULL;
  ds_device_assignment *built = NULL;
  if (t && da)
    built = ds_device_assignment_build(t, 4, s->da_shape, 4, s->da_stride, s->da_num_replicas,
                                       DS_DEVICE_ORDER_AUTO, &st);
  int devices = t ? ds_tpu_topology_num_tasks(t) * ds_tpu_topology_num_tpus_per_task(t) : 0;
  ds_device_assignment_free(built);
  ds_tpu_topology_free(t);
  ds_tpu_resolver_free(r);
  if (!ds_status_ok(&st))
    return cfg_fail(c, da ? da : yt_path(c->root, "cluster.tpu"), da ? "strategy.device_assignment" : "cluster.tpu",
                "%s: %s", ds_error_kind_name(st.kind), st.message);
  if (s->num_cores > devices)
    return cfg_fail(c, yt_path(c->root, "strategy.num_cores"), "strategy.num_cores",
                "expected at most the %d TPU cores (devices) of %s, found %d", devices, s->tpu_type, s->num_cores);
  return 0;
}

/* split_to_logical_devices megatron: XLA's SPMD partitioner splits the variables, over the
** logical devices a device assignment gives each replica. */
static int split_checks(cfg_ctx *c) {
  const scenario *s = c->s;
  const yt_node *split = yt_path(c->root, "strategy.split_to_logical_devices");
  if (!s->split_variables) return 0;
  if (!s->spmd)
    return cfg_fail(c, split, "strategy.split_to_logical_devices", "megatron splits variables with XLA's SPMD "
                    "partitioner: set strategy.spmd_xla_partitioning: true");
  int cores = s->has_device_assignment ? s->da_shape[0] * s->da_shape[1] * s->da_shape[2] * s->da_shape[3] : 1;
  if (cores < 2)
    return cfg_fail(c, split, "strategy.split_to_logical_devices", "megatron splits variables over a replica's "
                    "logical devices: give strategy.device_assignment a computation_shape of more than one "
                    "core, found %d", cores);
  return 0;
}

/* model.tpu_embedding: TPUEmbedding shards the tables over the chips of a TPUStrategy whose
** replicas are one chip each, and the step moves their rows by all-to-all (scenarios/programs/
** embed.h); the step's other ways of moving gradients all-reduce a flat buffer of every variable. */
static int tpu_embedding_checks(cfg_ctx *c) {
  scenario *s = c->s;
  const yt_node *key = yt_path(c->root, "model.tpu_embedding");
  const char *why = NULL;
  if (!s->tpu_embedding) return 0;
  if (s->strategy != SCN_STRATEGY_TPU) why = "goes with strategy kind tpu (TPUStrategy)";
  else if (s->has_device_assignment && s->da_shape[0] * s->da_shape[1] * s->da_shape[2] * s->da_shape[3] > 1)
    why = "shards the tables over replicas of one core each: give no device_assignment computation_shape of several cores";
  else if (s->tpu_slices > 1) why = "is modelled on one slice: expected cluster.tpu.slices 1";
  else if (s->grad_accum > 1) why = "is not modelled with training.gradient_accumulation_steps above 1";
  else if (s->xla_combine_bytes >= 0) why = "is not modelled with strategy.xla_combine_threshold (packs of a flat buffer)";
  else if (s->dist) why = "is not modelled with strategy.distribution";
  else if (s->dtype_policy == MD_POLICY_MIXED_FLOAT16) why = "is not modelled with mixed_float16 (its loss scale checks a flat buffer)";
  else if (s->nfaults > 0 && s->numerics_full)
    why = "is not modelled with faults under numerics full (its tables' optimizer slots are not checkpointed)";
  if (why) return cfg_fail(c, key, "model.tpu_embedding", "%s", why);
  if (!s->tpu_embedding_optimizer_given) s->tpu_embedding_optimizer = s->optimizer;
  /* The optimizer given, or the key `true` stands for the scenario's. */
  const yt_node *at = s->tpu_embedding_optimizer_given ? yt_path(c->root, "model.tpu_embedding.optimizer") : key;
  md_optimizer_kind kind = s->tpu_embedding_optimizer.kind;
  if (kind != MD_OPT_SGD && kind != MD_OPT_ADAGRAD)
    return cfg_fail(c, at, "model.tpu_embedding.optimizer", "TPUEmbedding's optimizers modelled are sgd and "
                    "adagrad (tf.tpu.experimental.embedding.SGD, Adagrad), found %s", CFG_OPTIMIZERS[kind].kind);
  if (s->tpu_embedding_optimizer.momentum != 0.0f)
    return cfg_fail(c, at, "model.tpu_embedding.optimizer", "tf.tpu.experimental.embedding.SGD has no momentum: "
                    "expected momentum 0, found %g", (double)s->tpu_embedding_optimizer.momentum);
  return 0;
}

/* logical_device < the device assignment's cores per replica (1 without one). */
static int logical_device_checks(cfg_ctx *c) {
  const scenario *s = c->s;
  int cores = 1;
  if (s->has_device_assignment) cores = s->da_shape[0] * s->da_shape[1] * s->da_shape[2] * s->da_shape[3];
  const yt_node *layers = yt_path(c->root, "model.layers");
  for (int i = 0; i < s->nlayers; i++) {
    if (s->logical_device[i] < cores) continue;
    const yt_node *kind = layers->items[i]->items[0];  /* {dense: {...}}: the layer's keys */
    char path[96];
    base_format(path, sizeof path, "model.layers[%d].%s.logical_device", i, layers->items[i]->keys[0]->text);
    if (!s->has_device_assignment)
      return cfg_fail(c, yt_get(kind, "logical_device"), path,
                  "logical devices need strategy kind tpu with a device_assignment whose "
                  "computation_shape gives each replica more than one core; found %d", s->logical_device[i]);
    return cfg_fail(c, yt_get(kind, "logical_device"), path,
                "expected a logical device below %d (the cores per replica of "
                "strategy.device_assignment.computation_shape), found %d", cores, s->logical_device[i]);
  }
  return 0;
}

/* The jobs of a ParameterServerStrategy cluster (ps, chief, evaluator) go with that strategy only,
** and it needs at least one ps task, as its constructor's ValueError says. TF_CONFIG gives the
** task counts, so cluster.workers.count or cluster.ps.count beside it would contradict it. */
static int ps_checks(cfg_ctx *c) {
  scenario *s = c->s;
  const yt_node *cluster = yt_get(c->root, "cluster");
  int ps_kind = s->strategy == SCN_STRATEGY_PARAMETER_SERVER;
  static const char *const ROLES[] = {"ps", "chief", "evaluator", NULL};
  if (yt_get(cluster, "evaluator")) s->has_evaluator = 1;
  for (int i = 0; ROLES[i] && !ps_kind; i++) {
    char path[64];
    base_format(path, sizeof path, "cluster.%s", ROLES[i]);
    if (yt_get(cluster, ROLES[i]))
      return cfg_fail(c, yt_get_key(cluster, ROLES[i]), path, "goes with strategy kind parameter_server, not %s",
                  CFG_STRATEGIES[s->strategy]);
  }
  const yt_node *dtype = yt_path(c->root, "model.dtype_policy");
  if (ps_kind && s->dtype_policy == MD_POLICY_MIXED_FLOAT16)
    return cfg_fail(c, dtype, "model.dtype_policy", "mixed_float16 trains through Keras's "
                    "LossScaleOptimizer, which podsim runs under the sync strategies only; with "
                    "parameter_server use mixed_bfloat16 (no loss scale needed) or float32");
  const yt_node *tfc = yt_get_key(cluster, "tf_config");
  if (tfc) {
    if (!ps_kind && s->strategy != SCN_STRATEGY_MULTI_WORKER_MIRRORED)
      return cfg_fail(c, tfc, "cluster.tf_config", "goes with strategy kind parameter_server or multi_worker_mirrored, not %s",
                  CFG_STRATEGIES[s->strategy]);
    const char *counted[] = {"cluster.workers.count", "cluster.ps.count"};
    for (int i = 0; i < 2; i++)
      if (yt_path(c->root, counted[i]))
        return cfg_fail(c, yt_path(c->root, counted[i]), counted[i],
                    "contradicts cluster.tf_config, which gives the number of tasks of each job");
    if (!ps_kind) {
      s->workers += s->has_chief;  /* MultiWorkerMirroredStrategy: the chief is worker 0 */
      s->has_chief = 0;
      s->ps = 0;
      s->has_evaluator = 0;
      if (s->workers == 0) return cfg_fail(c, tfc, "cluster.tf_config", "ValueError: the cluster has no chief or worker task");
    }
  }
  if (!ps_kind) return 0;
  if (tfc && (s->tf_config_task == 1 || s->tf_config_task == 2))
    return cfg_fail(c, tfc, "cluster.tf_config", "ValueError: TF_CONFIG's task is a %s, but ParameterServerStrategy is built "
                "by the coordinator (the chief); workers and ps tasks only serve", CFG_TF_JOBS[s->tf_config_task]);
  const char *where = tfc ? "cluster.tf_config" : "cluster.ps";
  const yt_node *at = tfc ? tfc : yt_path(c->root, "strategy.kind");
  if (s->ps == 0)
    return cfg_fail(c, at, where, "ValueError: ParameterServerStrategy needs at least one ps task%s",
                tfc ? "" : ": add cluster.ps {count: N}");
  if (s->workers == 0)
    return cfg_fail(c, at, tfc ? where : "cluster.workers", "ValueError: ParameterServerStrategy needs at least one worker task");
  const yt_node *policy = yt_path(c->root, "dataset.auto_shard_policy");
  if (policy && s->auto_shard != SCN_SHARD_AUTO)
    return cfg_fail(c, policy, "dataset.auto_shard_policy", "parameter-server workers each iterate "
                "their own copy of the dataset (create_per_worker_dataset: ParameterServerStrategy "
                "never auto-shards); remove auto_shard_policy");
  /* The side-car evaluator only evaluates checkpoints: without any it would wait forever. */
  if (s->has_evaluator && s->ckpt_every <= 0) {
    const yt_node *ev = yt_get_key(cluster, "evaluator");
    return cfg_fail(c, ev ? ev : tfc, ev ? "cluster.evaluator" : "cluster.tf_config", "the evaluator evaluates the "
                "checkpoints training writes, and training.checkpoint is not set: add training.checkpoint "
                "{every_steps: N} or remove the evaluator");
  }
  return 0;
}

/* Which strategy keys go with which kind, which kinds need a TPU slice, and the TPU layout. */
/* strategy.xla_combine_threshold: XLA's combiner on TPUStrategy's one slice (several slices run
** the hierarchical all-reduce, which has no engine-side start), a whole number of bytes, and no
** faults (as bytes_per_pack). */
static int xla_combine_checks(cfg_ctx *c) {
  scenario *s = c->s;
  const yt_node *v = yt_path(c->root, "strategy.xla_combine_threshold");
  if (v == NULL) return 0;
  if (only_with(c, "xla_combine_threshold", SCN_STRATEGY_TPU, "tpu")) return -1;
  if (fmod(s->xla_combine_bytes, 1.0) != 0.0)
    return cfg_fail(c, v, "strategy.xla_combine_threshold", "expected a whole number of bytes, found %s (%.17g bytes)",
                    v->text, s->xla_combine_bytes);
  if (s->tpu_slices > 1)
    return cfg_fail(c, v, "strategy.xla_combine_threshold", "overlapped all-reduces run on one slice: expected "
                    "cluster.tpu.slices 1, found %d", s->tpu_slices);
  if (s->nfaults > 0)
    return cfg_fail(c, v, "strategy.xla_combine_threshold", "all-reduces overlapped with the backward pass are not "
                    "modelled with faults: remove the threshold or the faults");
  return 0;
}

/* strategy.communication: the CommunicationOptions CollectiveAllReduce reads (mirrored and
** multi_worker_mirrored; TF's doc: every multi-replica strategy but TPUStrategy). Its
** implementation becomes the all-reduce's algorithm: NCCL runs on accelerators, and all-reduce on
** CPUs falls back to RING as TF's does. */
static int communication_checks(cfg_ctx *c) {
  scenario *s = c->s;
  const yt_node *st = yt_get(c->root, "strategy"), *key = st ? yt_get_key(st, "communication") : NULL;
  if (xla_combine_checks(c)) return -1;
  if (key == NULL) return 0;
  if (s->strategy != SCN_STRATEGY_MIRRORED && s->strategy != SCN_STRATEGY_MULTI_WORKER_MIRRORED)
    return cfg_fail(c, key, "strategy.communication", "goes with strategy kind mirrored or multi_worker_mirrored "
                    "(CollectiveAllReduce reads CommunicationOptions), not %s", CFG_STRATEGIES[s->strategy]);
  const yt_node *bpp = yt_path(c->root, "strategy.communication.bytes_per_pack");
  if (bpp && fmod(s->comm_bytes_per_pack, 1.0) != 0.0)
    return cfg_fail(c, bpp, "strategy.communication.bytes_per_pack", "expected a whole number of bytes, found %s "
                    "(%.17g bytes)", bpp->text, s->comm_bytes_per_pack);
  if (s->comm_bytes_per_pack > 0 && s->nfaults > 0)
    return cfg_fail(c, bpp, "strategy.communication.bytes_per_pack", "packs overlapped with the backward pass "
                    "are not modelled with faults: expected 0B with faults, found %s", bpp->text);
  if (s->comm_implementation == 0) return 0;
  const yt_node *impl = yt_path(c->root, "strategy.communication.implementation");
  if (yt_path(c->root, "strategy.all_reduce") && s->all_reduce != SCN_ALLREDUCE_AUTO)
    return cfg_fail(c, impl, "strategy.communication.implementation", "the algorithm is given twice: expected "
                    "strategy.all_reduce auto with implementation %s, found %s", CFG_IMPLEMENTATIONS[s->comm_implementation],
                    CFG_ALGORITHMS[s->all_reduce]);
  s->all_reduce = s->comm_implementation == 2 && s->worker_machine.accelerators > 0 ? SCN_ALLREDUCE_NCCL
                                                                                    : SCN_ALLREDUCE_RING;
  return 0;
}

static int strategy_checks(cfg_ctx *c, const yt_node *tpu) {
  scenario *s = c->s;
  const yt_node *kind = yt_path(c->root, "strategy.kind");
  if (tpu && !is_tpu_kind(s->strategy))
    return cfg_fail(c, yt_get_key(yt_get(c->root, "cluster"), "tpu"), "cluster.tpu",
                "training on a TPU slice needs strategy.kind tpu, tpu_v1 or gnn_runner_tpu, found %s",
                CFG_STRATEGIES[s->strategy]);
  if (!tpu && is_tpu_kind(s->strategy))
    return cfg_fail(c, kind, "strategy.kind", "%s runs on a TPU slice: add cluster.tpu", CFG_STRATEGIES[s->strategy]);
  if (only_with(c, "device_assignment", SCN_STRATEGY_TPU, "tpu") ||
      only_with(c, "spmd_xla_partitioning", SCN_STRATEGY_TPU, "tpu") ||
      only_with(c, "split_to_logical_devices", SCN_STRATEGY_TPU, "tpu") ||
      only_with(c, "steps_per_run", SCN_STRATEGY_TPU_V1, "tpu_v1") ||
      only_with(c, "num_cores", SCN_STRATEGY_TPU_V1, "tpu_v1") ||
      only_with(c, "devices", SCN_STRATEGY_MIRRORED, "mirrored"))
    return -1;
  /* TF1's TPUStrategy loops by its own steps_per_run (parameter_server schedules N steps a
  ** closure: ps_fit.h). */
  const yt_node *spe = yt_path(c->root, "training.steps_per_execution");
  if (spe && s->steps_per_execution > 1 && s->strategy == SCN_STRATEGY_TPU_V1)
    return cfg_fail(c, spe, "training.steps_per_execution",
                    "TF1's tpu_v1 loops by strategy.steps_per_run, not Keras's steps_per_execution");
  const yt_node *trip = yt_path(c->root, "strategy.host_round_trip");
  if (trip && !is_tpu_kind(s->strategy) && s->strategy != SCN_STRATEGY_PARAMETER_SERVER)
    return cfg_fail(c, yt_get_key(yt_get(c->root, "strategy"), "host_round_trip"), "strategy.host_round_trip",
                "goes with the TPU strategies (tpu, tpu_v1, gnn_runner_tpu) and parameter_server, not %s",
                CFG_STRATEGIES[s->strategy]);
  /* parameter_server: the coordinator's cost per scheduled closure, none unless given (the
  ** runs before it had none). */
  if (!trip && s->strategy == SCN_STRATEGY_PARAMETER_SERVER) s->host_round_trip_s = 0;
  if (only_with(c, "variable_partitioner", SCN_STRATEGY_PARAMETER_SERVER, "parameter_server") || ps_checks(c) ||
      communication_checks(c))
    return -1;
  const yt_node *da = yt_path(c->root, "strategy.device_assignment");
  s->has_device_assignment = da != NULL;
  if (tpu && device_assignment_checks(c, da)) return -1;
  if (split_checks(c) || tpu_embedding_checks(c)) return -1;
  if (logical_device_checks(c) || cfg_distribution_checks(c)) return -1;
  for (int i = 0; i < s->ndevices; i++) {
    const yt_node *d = yt_path(c->root, "strategy.devices")->items[i];
    char path[64];
    base_format(path, sizeof path, "strategy.devices[%d]", i);
    int index = atoi(s->devices[i] + 4);
    if (!strncmp(s->devices[i], "TPU:", 4))
      return cfg_fail(c, d, path, "mirrored runs on the first worker's GPUs or CPU:0; for TPUs use strategy.kind tpu");
    if (!strncmp(s->devices[i], "CPU:", 4) && index != 0)
      return cfg_fail(c, d, path, "a worker has one CPU device, CPU:0; found %s", s->devices[i]);
    if (!strncmp(s->devices[i], "GPU:", 4) && s->worker_machine.accelerators == 0)
      return cfg_fail(c, d, path, "the worker has no accelerators (cluster.workers.machine.accelerators); found %s",
                  s->devices[i]);
    if (!strncmp(s->devices[i], "GPU:", 4) && index >= s->worker_machine.accelerators)
      return cfg_fail(c, d, path, "the worker has %d accelerators, GPU:0 to GPU:%d; found %s",
                  s->worker_machine.accelerators, s->worker_machine.accelerators - 1, s->devices[i]);
    for (int j = 0; j < i; j++)
      if (!strcmp(s->devices[i], s->devices[j]))
        return cfg_fail(c, d, path, "%s is listed twice (MirroredStrategy allows no duplicates)", s->devices[i]);
  }
  return 0;
}

int scenario_layer_reads_ids(md_layer_kind kind) {
  return kind == MD_LAYER_EMBEDDING || kind == MD_LAYER_TOKEN_AND_POSITION_EMBEDDING;
}

/* training.metrics read the loss's labels: the sparse ones an integer class (sparse
** categorical cross-entropy's), the others float targets, one per output; `accuracy` either, as
** Keras picks. Sequence outputs (a label per position) have none yet (issue 28). */
static int check_metrics(cfg_ctx *c, int positions) {
  const scenario *s = c->s;
  const yt_node *list = yt_path(c->root, "training.metrics");
  int sparse = s->loss == MD_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
  if (list && positions > 1)
    return cfg_fail(c, list, "training.metrics", "compiled metrics read one label per example; this model's "
                    "output has %d positions", positions);
  for (int i = 0; i < s->nmetrics; i++) {
    char path[64];
    if (s->metrics[i] == MD_METRIC_ACCURACY || md_metric_sparse(s->metrics[i]) == sparse) continue;
    return cfg_fail(c, list->items[i], base_format(path, sizeof path, "training.metrics[%d]", i),
                    "%s reads %s, and this loss gives %s", md_metric_name(s->metrics[i]),
                    sparse ? "float targets" : "an integer class per example",
                    sparse ? "integer classes (sparse_categorical_crossentropy)" : "float targets");
  }
  return 0;
}

/* The labels a loss reads: sparse_categorical_crossentropy one integer class per row
** (dataset.label), every other loss one float per model output (dataset.labels, or dataset.label
** for a single output; neither: the last columns), as the y a Keras user passes to fit. */
static int check_labels(cfg_ctx *c, int classes, int positions) {
  const scenario *s = c->s;
  if (check_metrics(c, positions)) return -1;
  const yt_node *labels = yt_path(c->root, "dataset.labels"), *label = yt_path(c->root, "dataset.label");
  const yt_node *from_logits = yt_path(c->root, "model.loss.from_logits");
  if (s->loss == MD_LOSS_MEAN_SQUARED_ERROR && from_logits)
    return cfg_fail(c, from_logits, "model.loss.from_logits",
                    "mean_squared_error reads the outputs as they are; from_logits belongs to the cross-entropies");
  if (s->loss == MD_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY) {
    if (labels && positions == 1)
      return cfg_fail(c, labels, "dataset.labels", "sparse_categorical_crossentropy reads one integer class "
                      "per row: name its column as dataset.label (labels lists the float targets of the "
                      "other losses, or the classes of a sequence output's positions)");
    return 0;
  }
  if (labels && s->nlabels != classes)
    return cfg_fail(c, labels, "dataset.labels", "expected %d label columns, one per output of the last "
                    "layer, found %d", classes, s->nlabels);
  if (label && classes != 1)
    return cfg_fail(c, label, "dataset.label", "one label column gives one target but the last layer has %d "
                    "outputs: list %d columns as dataset.labels", classes, classes);
  return 0;
}

md_model_spec scenario_model_spec(const scenario *s, int shapes_only) {
  return (md_model_spec){ .ninputs = s->ninputs, .inputs = s->inputs,
                          .input_features = s->ninputs ? 0 : s->input_features, .input_shape = s->input_shape,
                          .input_ids = s->input_ids, .input_vocab = s->input_vocab,
                          .nlayers = s->nlayers, .layers = s->layers, .loss = s->loss,
                          .from_logits = s->from_logits, .shapes_only = shapes_only,
                          .dtype_policy = s->dtype_policy, .rematerialize = s->remat_blocks ? MD_REMAT_BLOCKS : s->rematerialize };
}

/* Builds the model on shapes alone, as the run will; when that fails, one layer more each time
** until it does, so a layer that cannot follow the one before it (a conv2d after a flatten, a
** pool larger than its input) is refused at its own line. *classes is the last layer's outputs
** and *positions the label positions sparse_categorical_crossentropy reads there: 1 for a vector
** of class scores; for a sequence [positions, classes] (a language model's next-token scores) a
** class per position, so with numerics the file lists one label column per position. `source` is
** where layers come from when the file does not list them (model.keras, model.zoo), named by
** `source_path`. */
static int check_model_shapes(cfg_ctx *c, const yt_node *layers, const yt_node *source, const char *source_path,
                              int *classes, int *positions) {
  scenario *s = c->s;
  md_model_spec spec = scenario_model_spec(s, 1);
  char path[64];
  md_error me = {0};
  md_model *m = md_model_new(&spec, &me);
  for (int n = 1; m == NULL && n <= s->nlayers; n++) {
    spec.nlayers = n;
    md_model *prefix = md_model_new(&spec, &me);
    if (prefix == NULL) {
      /* A Keras config's layers were checked by its reader, at their JSON positions. */
      if (layers) base_format(path, sizeof path, "model.layers[%d]", n - 1);
      return cfg_fail(c, layers ? layers->items[n - 1] : source, layers ? path : source_path, "%s", me.msg);
    }
    md_model_free(prefix);
  }
  assert(m != NULL);  /* had it failed, a prefix (at the latest the whole) returned above */
  md_shape out = md_model_layer_output_shape(m, s->nlayers - 1);
  *classes = md_model_num_classes(m);
  *positions = md_model_label_positions(m);
  md_model_free(m);
  const yt_node *at = layers ? layers->items[s->nlayers - 1] : source;
  if (layers) base_format(path, sizeof path, "model.layers[%d]", s->nlayers - 1);
  if (s->loss == MD_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY && *positions > 1 && s->numerics_full &&
      s->nlabels != *positions) {
    char shape[64];
    return cfg_fail(c, at, layers ? path : source_path,
                    "the last layer gives %s per example: sparse_categorical_crossentropy then reads a class "
                    "at each of its %d positions, %d label columns in dataset.labels (found %d); for one "
                    "class per example, add a flatten or global_average_pooling2d before the last dense "
                    "layer", md_shape_str(&out, shape, sizeof shape), *positions, *positions, s->nlabels);
  }
  return 0;
}

static int dataset_checks(cfg_ctx *c, int classes);


/* ---- host memory ---------------------------------------------------------------------------- */

/* A replica's actor, the stack pages it touches, its records and channels; a simulated device's
** resources, links and trace track (docs/architecture.md measures 1857 bytes on a v4 pod). */
#define HOST_BYTES_PER_REPLICA (64.0 * 1024)
#define HOST_BYTES_PER_DEVICE 2048.0

/* PODSIM_HOST_MEMORY's bytes (0: unset); -1 with WHY when it is set but not a size above zero. */
static double host_memory_env(char *why, size_t len) {
  const char *env = getenv("PODSIM_HOST_MEMORY");
  double bytes;
  if (env == NULL) return 0;
  if (units_parse(UNIT_SIZE, env, &bytes, why, len) == 0 && bytes > 0) return bytes;
  base_format(why, len, "PODSIM_HOST_MEMORY: expected a size above zero such as 8GiB or 512MB, found \"%s\"", env);
  return -1;
}

int scenario_host_memory_check(char *why, size_t len) { return host_memory_env(why, len) < 0 ? -1 : 0; }

double scenario_host_memory(void) {
  char why[512];
  double bytes = host_memory_env(why, sizeof why);
  if (bytes > 0) return bytes;
  return (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGE_SIZE);
}

/* Replicas the strategy makes, or an upper bound (a slice's every core), and the key that sets
** their number. */
static double replicas_of(const scenario *s, const char **key) {
  double accel = s->worker_machine.accelerators > 0 ? s->worker_machine.accelerators : 1;
  *key = "cluster.workers.count";
  switch (s->strategy) {
    case SCN_STRATEGY_DEFAULT:
    case SCN_STRATEGY_ONE_DEVICE: *key = "model.layers"; return 1;
    case SCN_STRATEGY_MIRRORED: *key = "strategy.devices"; return s->ndevices > 0 ? s->ndevices : accel;
    case SCN_STRATEGY_PARAMETER_SERVER: return (double)s->workers + s->ps;
    case SCN_STRATEGY_MULTI_WORKER_MIRRORED:
      if (accel > s->workers) *key = "cluster.workers.machine.accelerators.count";
      return (double)s->workers * accel;
    default: *key = "cluster.tpu.type"; return 2.0 * s->tpu_dims[0] * s->tpu_dims[1] * s->tpu_dims[2];
  }
}

/* What a training run keeps on the host, estimated before anything is built, so that a cluster,
** model or dataset the host cannot hold is refused at its key with the estimate and the limit,
** instead of the run being killed by the host part-way (or taking it down). Generous on
** purpose: per replica its bookkeeping and, with numerics, its float32 values (weights,
** gradients, the all-reduce buffer, up to two optimizer slots, three activations per unit of
** its share of the batch); per simulated device its state; with numerics the synthetic rows. */
/* What a run's files take at least, measured on the quickstart (300 steps, 5,508 parameters):
** 100 bytes a metrics.csv row of 12 columns and some 12 more for each compiled metric's; 20 bytes
** a tfevents scalar (one Event a step holds a scalar per column); 30 bytes a final_weights.csv
** value (name, flat index, 9 digits: 31.8 on the quickstart). trace.json, bounded by its event
** limit, is left out. */
#define OUTPUT_BYTES_PER_ROW 100.0
#define OUTPUT_BYTES_PER_METRIC 12.0
#define OUTPUT_BYTES_PER_SCALAR 20.0
#define OUTPUT_BYTES_PER_VALUE 30.0

static double least_output_bytes(const scenario *s, double params) {
  double steps = (double)s->steps;
  if (steps <= 0)  /* epochs: their batches when the loader knows the dataset's rows */
    steps = s->synthetic_rows > 0 && s->global_batch > 0
                ? (double)s->epochs * ceil((double)s->synthetic_rows / (double)s->global_batch) : 0;
  double row = OUTPUT_BYTES_PER_ROW + OUTPUT_BYTES_PER_METRIC * s->nmetrics;
  double scalars = s->tensorboard ? OUTPUT_BYTES_PER_SCALAR * (12.0 + s->nmetrics) : 0;
  return steps * (row + scalars) + (s->numerics_full ? OUTPUT_BYTES_PER_VALUE * params : 0);
}

static int host_memory_checks(cfg_ctx *c) {
  const scenario *s = c->s;
  /* The model's parameters and the floats one example's activations hold, read off the model
  ** built on shapes (a model that does not build is refused by the checks after this one). */
  double params = 0, units = 0;
  md_model_spec spec = scenario_model_spec(s, 1);
  md_error me = {0};
  md_model *m = s->nlayers > 0 ? md_model_new(&spec, &me) : NULL;
  if (m != NULL) {
    params = (double)md_model_num_params(m);
    units = md_model_activation_bytes(m, 1) / 4.0;
    md_model_free(m);
  }
  /* A checkpoint holds the parameters' float32 values at least: one whose write would outlast the
  ** simulated clock's horizon overflowed it (exit 134), and a parameter-server evaluator would
  ** poll all the way there. */
  const yt_node *bw = yt_path(c->root, "training.checkpoint.bandwidth");
  if (bw != NULL && s->ckpt_bytes_per_s > 0 && 4.0 * params / s->ckpt_bytes_per_s > SIM_TIME_HORIZON_S) {
    char a[32];
    return cfg_fail(c, bw, "training.checkpoint.bandwidth", "expected a bandwidth that writes a checkpoint (at least "
                    "the %s of the parameters) within the simulated clock's horizon (53.4 days), found %s",
                    outputs_bytes(a, sizeof a, 4.0 * params), bw->text);
  }
  const char *key;
  double replicas = replicas_of(s, &key);
  double batch = ceil(s->global_batch / replicas);
  double values = s->numerics_full ? 4.0 * (5.0 * params + 3.0 * units * batch) : 0;
  double rows = s->numerics_full ? 4.0 * (double)s->synthetic_rows * (s->synthetic_features + 1.0) : 0;
  double devices = (double)s->workers + s->ps + 2 + (s->tpu_type[0] ? replicas : 0);
  double need = replicas * (HOST_BYTES_PER_REPLICA + values) + devices * HOST_BYTES_PER_DEVICE + rows;
  double have = scenario_host_memory();
  c->s->host_bytes = need;
  c->s->output_bytes = least_output_bytes(s, params);
  if (need <= have) return 0;
  /* The key to change: the dataset when its rows are most of it, the model when one replica
  ** alone would not fit either, else what sets the number of replicas. */
  double alone = HOST_BYTES_PER_REPLICA + values + devices * HOST_BYTES_PER_DEVICE + rows;
  if (rows > need / 2) key = "dataset.synthetic.rows";
  else if (alone > have) key = s->has_zoo ? "model.zoo" : "model.layers";
  const yt_node *at = yt_path(c->root, key);
  char a[32], b[32], d[32], per[32];
  outputs_bytes(per, sizeof per, HOST_BYTES_PER_REPLICA + values);
  return cfg_fail(c, at ? at : c->root, key, "expected a run this host can hold (%s of memory%s), found one "
                  "needing about %s: %.6g replicas x %s, %.6g devices, %s of synthetic rows; use fewer "
                  "replicas, a smaller model or dataset, or numerics: off", outputs_bytes(b, sizeof b, have),
                  getenv("PODSIM_HOST_MEMORY") ? ", PODSIM_HOST_MEMORY" : "", outputs_bytes(a, sizeof a, need),
                  replicas, per, devices, outputs_bytes(d, sizeof d, rows));
}

/* Ring transfers the event-by-event planner takes about a second for (measured: a 10,000-worker
** ring all-reduce, 2.0e8 transfers, in 37 s on one core of the 2-core CI host: 5.4e6 a second),
** and the most one all-reduce may need before a run is refused as work this host cannot finish
** in reasonable time: 2e9, some 6 minutes. */
#define RING_TRANSFERS_PER_S 5.4e6
#define RING_TRANSFERS_MAX 2e9

/* A ring all-reduce over p workers' replicas is 2 (p - 1) steps of p transfers each (twice
** that bidirectional): 100,000 CPU workers (the key's maximum) are 2e10 transfers a step, hours
** of the host's time before the first step ends. Refused at the key with the estimate, as the
** memory check refuses what the host cannot hold; the tree algorithms' p log p go through. */
static int ring_work_checks(cfg_ctx *c) {
  const scenario *s = c->s;
  if (s->strategy != SCN_STRATEGY_MULTI_WORKER_MIRRORED) return 0;
  scn_allreduce a = s->all_reduce;
  int ring = a == SCN_ALLREDUCE_AUTO || a == SCN_ALLREDUCE_RING || a == SCN_ALLREDUCE_NCCL;
  if (!ring && a != SCN_ALLREDUCE_BIDIRECTIONAL_RING) return 0;
  const char *key;
  double p = replicas_of(s, &key);
  double transfers = 2.0 * (p - 1) * p * (ring ? 1 : 2);
  if (transfers <= RING_TRANSFERS_MAX) return 0;
  const yt_node *at = yt_path(c->root, key);
  return cfg_fail(c, at ? at : c->root, key, "expected a ring all-reduce this host can plan (at most %.3g "
                  "transfers, some %.0f minutes), found %.6g replicas: %.3g transfers an all-reduce, about "
                  "%.3g hours; use fewer workers or strategy.all_reduce: halving_doubling or "
                  "double_binary_tree (p log p transfers)", RING_TRANSFERS_MAX,
                  RING_TRANSFERS_MAX / RING_TRANSFERS_PER_S / 60, p, transfers,
                  transfers / RING_TRANSFERS_PER_S / 3600);
}

/* workload.collective.axis, .shift and cluster.tpu.slices: what each needs of the rest. */
static int workload_tpu_checks(cfg_ctx *c, const yt_node *tpu) {
  const yt_node *root = c->root;
  scenario *s = c->s;
  const yt_node *axis = yt_path(root, "workload.collective.axis"), *shift = yt_path(root, "workload.collective.shift");
  const yt_node *slices = yt_path(root, "cluster.tpu.slices");
  if (shift && s->workload_op != SIM_COLL_PPERMUTE)
    return cfg_fail(c, shift, "workload.collective.shift", "shift goes with op ppermute, not with %s",
                    sim_coll_op_name((sim_coll_op)s->workload_op));
  if (axis && s->workload_group != SCN_GROUP_TPU)
    return cfg_fail(c, axis, "workload.collective.axis", "an axis is a TPU slice's: axis needs group tpu");
  int dcn_axis = axis && s->workload_axis == SCN_AXIS_SLICE;
  if (dcn_axis && s->tpu_slices < 2)
    return cfg_fail(c, axis, "workload.collective.axis", "axis slice runs across the slices of cluster.tpu.slices: "
                    "expected 2 or more slices, found %d", s->tpu_slices);
  if (axis && tpu && !dcn_axis) {
    const sim_tpu_generation *g;
    int chips, dims[3];
    if (sim_tpu_slice_parse(s->tpu_type, &g, &chips, dims, NULL, 0) == 0) {
      int core = s->workload_axis == 3, length = core ? sim_tpu_generation_figures(g)->devices_per_chip
                                                      : s->tpu_dims[s->workload_axis];
      if (length < 2)
        return cfg_fail(c, axis, "workload.collective.axis", "expected an axis of %s longer than one device, "
                        "found %s of length %d", s->tpu_type, SCN_AXES[s->workload_axis], length);
    }
  }
  if (dcn_axis) return 0;  /* any op, by any algorithm the lines across the slices run */
  if (s->tpu_slices > 1 && (s->workload_group != SCN_GROUP_TPU || s->workload_op != SIM_COLL_ALL_REDUCE || axis))
    return cfg_fail(c, slices, "cluster.tpu.slices", "several slices run the hierarchical all_reduce of group tpu "
                    "over every device (no axis), or any op along axis slice; this workload is %s over %s%s",
                    sim_coll_op_name((sim_coll_op)s->workload_op),
                    s->workload_group == SCN_GROUP_TPU ? "tpu" : "workers", axis ? " along an axis" : "");
  if (s->tpu_slices > 1 && s->workload_algorithm != SCN_ALLREDUCE_AUTO && s->workload_algorithm != SCN_ALLREDUCE_TORUS)
    return cfg_fail(c, yt_path(root, "workload.collective.algorithm"), "workload.collective.algorithm",
                    "several slices all-reduce by torus within each slice and a ring across them: expected auto "
                    "or torus, found %s", CFG_ALGORITHMS[s->workload_algorithm]);
  return 0;
}

static int cross_checks(cfg_ctx *c) {
  const yt_node *root = c->root;
  scenario *s = c->s;
  const yt_node *model = yt_get(root, "model"), *workload = yt_get(root, "workload");
  if (model && workload)
    return cfg_fail(c, cfg_later_key(root, "model", "workload"), "workload",
                "give either a training run (model, optimizer, dataset, training) or a workload, not both");
  if (!model && !workload)
    return cfg_fail(c, root, "model", "missing required key \"model\" (or \"workload\")");
  const yt_node *tpu = yt_path(root, "cluster.tpu");
  int torus_fabric = s->fabric == SCN_FABRIC_TORUS2D || s->fabric == SCN_FABRIC_TORUS3D;
  if (model && s->all_reduce == SCN_ALLREDUCE_TORUS && !torus_fabric)
    return cfg_fail(c, yt_path(root, "strategy.all_reduce"), "strategy.all_reduce",
                "torus needs a torus to run on: cluster.fabric.topology torus2d or torus3d");
  if (workload && s->workload_algorithm == SCN_ALLREDUCE_TORUS && s->workload_group == SCN_GROUP_WORKERS &&
      !torus_fabric)
    return cfg_fail(c, yt_path(root, "workload.collective.algorithm"), "workload.collective.algorithm",
                "torus needs a torus to run on: group tpu, or cluster.fabric.topology torus2d or torus3d");
  if (model && (strategy_checks(c, tpu) != 0 || cfg_accumulation_checks(c) != 0 || cfg_callbacks_checks(c) != 0 ||
                cfg_validation_checks(c) != 0 || cfg_ps_fit_checks(c) != 0))
    return -1;
  if (workload) {
    s->has_workload = 1;
    const yt_node *coll = yt_get(workload, "collective"), *mm = yt_get(workload, "matmul");
    if ((coll != NULL) == (mm != NULL))
      return cfg_fail(c, coll && mm ? cfg_later_key(workload, "collective", "matmul") : workload, "workload",
                      "expected exactly one of collective and matmul, found %s", coll ? "both" : "neither");
    if (mm && s->workload_group == SCN_GROUP_TPU && !tpu)
      return cfg_fail(c, yt_path(root, "workload.matmul.group"), "workload.matmul.group", "group tpu needs cluster.tpu");
    if (mm && s->tpu_slices > 1)
      return cfg_fail(c, yt_path(root, "cluster.tpu.slices"), "cluster.tpu.slices",
                      "a matmul runs on one device of one slice: expected 1 slice, found %d", s->tpu_slices);
  }
  if (workload && yt_path(root, "workload.collective")) {
    const yt_node *group = yt_path(root, "workload.collective.group");
    if (s->workload_group == SCN_GROUP_TPU && !tpu)
      return cfg_fail(c, group, "workload.collective.group", "group tpu needs cluster.tpu");
    /* The op reduces real float32 buffers: a size between two counts of them would be rounded
    ** one way or the other behind the user's back. */
    const yt_node *size = yt_path(root, "workload.collective.size");
    if (fmod(s->workload_size_bytes, 4.0) != 0.0)
      return cfg_fail(c, size, "workload.collective.size", "expected a whole number of float32 elements (a "
                      "multiple of 4 bytes), found %s (%.17g bytes)", size->text, s->workload_size_bytes);
    if (workload_tpu_checks(c, tpu) != 0) return -1;
  }
  if (model && s->tpu_slices > 1) {
    const char *why = s->strategy != SCN_STRATEGY_TPU ? "strategy.kind tpu, found "
                      : yt_path(root, "strategy.device_assignment") ? "no strategy.device_assignment, found one"
                      : s->nfaults > 0 ? "no faults, found some" : NULL;
    if (why)
      return cfg_fail(c, yt_path(root, "cluster.tpu.slices"), "cluster.tpu.slices",
                      "training across %d slices (data parallel, one replica per device) needs %s%s", s->tpu_slices,
                      why, s->strategy != SCN_STRATEGY_TPU ? CFG_STRATEGIES[s->strategy] : "");
    if (s->all_reduce != SCN_ALLREDUCE_AUTO)
      return cfg_fail(c, yt_path(root, "strategy.all_reduce"), "strategy.all_reduce",
                      "several slices all-reduce gradients by torus within each slice and a ring across them: "
                      "expected auto, found %s", CFG_ALGORITHMS[s->all_reduce]);
  }
  if (!model) {
    static const char *const TRAIN[] = {"optimizer", "dataset", "training", "faults", "expect", NULL};
    for (int i = 0; TRAIN[i]; i++)
      if (yt_get(root, TRAIN[i]))
        return cfg_fail(c, yt_get_key(root, TRAIN[i]), TRAIN[i], "%s goes with model, not with workload", TRAIN[i]);
    return 0;
  }
  static const char *const NEEDED[] = {"optimizer", "dataset", "training", NULL};
  for (int i = 0; NEEDED[i]; i++)
    if (!yt_get(root, NEEDED[i]))
      return cfg_fail(c, root, NEEDED[i], "missing required key \"%s\" (a model needs %s)", NEEDED[i],
                  "optimizer, dataset and training");

  const yt_node *compile = yt_path(root, "training.compile");
  if (compile && !s->jit_compile && !tpu)
    return cfg_fail(c, yt_get_key(yt_get(root, "training"), "compile"), "training.compile",
                "nothing is compiled: XLA compiles the step only with training.jit_compile: true "
                "(or on a TPU, always)");
  /* XLA fuses whatever it compiles (no flag turns its fusion passes off): a TPU step always, a
  ** GPU's with jit_compile. compile.fusion: false is the unfused step, for comparison. */
  if (s->xla_fusion < 0) s->xla_fusion = s->jit_compile || tpu != NULL;

  const yt_node *layers = yt_get(model, "layers");
  const md_layer_spec *first = &s->layers[0];
  int classes = 0, positions = 1;
  if (!layers) {
    const yt_node *zoo = yt_get(model, "zoo");
    return check_model_shapes(c, NULL, zoo ? zoo : yt_get(model, "keras"), zoo ? "model.zoo" : "model.keras",
                              &classes, &positions) || check_labels(c, classes, positions) || dataset_checks(c, classes);
  }
  const char *kind = layers->items[0]->keys[0]->text;
  char vocab_key[64];
  if (s->input_ids && !scenario_layer_reads_ids(first->kind))
    return cfg_fail(c, layers->items[0], "model.layers[0]", "an id input (model.input.ids) needs an embedding "
                    "or token_and_position_embedding as the first layer");
  if (s->input_features && s->ninputs == 0 && scenario_layer_reads_ids(first->kind))
    return cfg_fail(c, layers->items[0], "model.layers[0]", "%s reads integer ids: use model.input {ids, vocab}, not features", kind);
  if (scenario_layer_reads_ids(first->kind) && first->vocab < s->input_vocab)
    return cfg_fail(c, layers->items[0], base_format(vocab_key, sizeof vocab_key, "model.layers[0].%s.vocab", kind),
                "expected vocab >= model.input.vocab (%d), found %d", s->input_vocab, first->vocab);
  if (check_model_shapes(c, layers, NULL, "model.layers", &classes, &positions) ||
      check_labels(c, classes, positions))
    return -1;
  return dataset_checks(c, classes);
}

/* The synthetic dataset against the model: its features, and classes the model can score. */
static int dataset_checks(cfg_ctx *c, int classes) {
  const yt_node *root = c->root;
  scenario *s = c->s;
  const yt_node *syn = yt_path(root, "dataset.synthetic"), *graph = yt_path(root, "dataset.graph");
  int id_inputs = 0;
  for (int k = 0; k < s->ninputs; k++) id_inputs += s->inputs[k].ids > 0;
  if (cfg_dataset_inputs_check(c)) return -1;
  if (graph && !s->graph_nodes)
    return cfg_fail(c, graph, "dataset.graph", "subgraphs feed a graph input: give model.input.graph (or model.zoo "
                    "graphsage)");
  /* Node numbers travel as floats in the packed row, which a mixed policy rounds (8 or 11 bits). */
  int exact = s->dtype_policy == MD_POLICY_MIXED_BFLOAT16 ? 256 : s->dtype_policy == MD_POLICY_MIXED_FLOAT16 ? 2048 : 0;
  if (exact && s->numerics_full && s->graph_nodes > exact)
    return cfg_fail(c, yt_path(root, "model.dtype_policy"), "model.dtype_policy", "%s rounds the graph input's node "
                    "numbers: at most %d nodes per subgraph with numerics, found %d", exact == 256 ? "mixed_bfloat16"
                    : "mixed_float16", exact, s->graph_nodes);
  if (s->graph_nodes && !graph && !(syn && !s->numerics_full))
    return cfg_fail(c, yt_path(root, "dataset"), "dataset.graph", "a graph input (model.input.graph) reads its "
                    "subgraphs from dataset.graph (or, with numerics: off, a synthetic row count)");
  if (syn) {
    /* With numerics off no row exists: synthetic data is only a row count and a width. */
    if ((s->input_ids || id_inputs) && s->numerics_full)
      return cfg_fail(c, syn, "dataset.synthetic", "synthetic data gives float features; an id input needs a csv "
                      "(or numerics: off, where rows are only counted)");
    const yt_node *shape = yt_get(syn, "shape");
    if (shape && yt_get(syn, "features"))
      return cfg_fail(c, cfg_later_key(syn, "features", "shape"), "dataset.synthetic",
                      "give features or shape, not both");
    if (!shape && !yt_get(syn, "features"))
      return cfg_fail(c, syn, "dataset.synthetic", "missing required key \"features\" (or \"shape\")");
    char want[96], got[96];
    if (shape && s->input_shape.rank &&
        strcmp(md_shape_str(&s->input_shape, want, sizeof want), md_shape_str(&s->synthetic_shape, got, sizeof got)))
      return cfg_fail(c, shape, "dataset.synthetic.shape", "expected model.input.shape %s, found %s", want, got);
    int width = s->input_ids ? s->input_ids : s->input_features;
    if (s->synthetic_features != width)
      return cfg_fail(c, shape ? shape : yt_get(syn, "features"), shape ? "dataset.synthetic.shape" : "dataset.synthetic.features",
                  "expected %s (%d), found %d", s->input_ids ? "the model's ids per example"
                  : s->ninputs ? "the columns of model.inputs" : s->input_shape.rank ? "the elements of model.input.shape"
                  : "model.input.features", width,
                  s->synthetic_features);
    /* One output takes two classes as its binary target (md_dataset_one_hot). */
    if (s->synthetic_classes > (classes == 1 ? 2 : classes))
      return cfg_fail(c, yt_get(syn, "classes"), "dataset.synthetic.classes",
                  "expected at most the model's %d classes (the last layer's outputs), found %d", classes,
                  s->synthetic_classes);
  }
  if (host_memory_checks(c) != 0) return -1;
  return ring_work_checks(c);
}

static void set_defaults(scenario *s) {
  memset(s, 0, sizeof *s);
  s->seed = 1;
  s->sweep_points = 1;
  s->numerics_full = 1;
  s->workers = 1;
  machines_lookup("n2-standard-8", &s->worker_machine);
  machines_lookup("n2-standard-8", &s->ps_machine);
  machines_lookup("n2-standard-8", &s->chief_machine);
  machines_lookup("n2-standard-8", &s->evaluator_machine);
  s->has_chief = 1;
  s->fabric = SCN_FABRIC_STAR;
  s->fabric_bytes_per_s = 100e9;
  s->fabric_latency_s = 5e-6;
  s->strategy = SCN_STRATEGY_DEFAULT;
  s->all_reduce = SCN_ALLREDUCE_AUTO;
  s->xla_combine_bytes = -1;
  s->workload_algorithm = SCN_ALLREDUCE_AUTO;
  s->workload_group = SCN_GROUP_WORKERS;
  s->workload_iterations = 5;
  s->workload_axis = -1;
  s->workload_shift = 1;
  s->tpu_slices = 1;
  s->repeat = 1;
  s->loss_reduction = SCN_LOSS_GLOBAL_BATCH;
  s->prefetch = 1;
  s->tpu_efficiency = 0;
  s->steps_per_run = 1;
  s->steps_per_execution = 1;
  s->validation_freq = 1;
  s->host_round_trip_s = MACHINE_TPU_HOST_ROUND_TRIP_S;
  s->da_num_replicas = 1;
  for (int a = 0; a < 4; a++) s->da_stride[a] = 1;
  s->pipeline_per_example_s = 1e-6;
  s->pipeline_per_batch_s = 20e-6;
  sim_compile_model xla = sim_compile_default();
  s->compile_time_s = -1;
  s->xla_fusion = -1;  /* resolved with the cluster: on wherever XLA compiles the step */
  s->compile_base_s = xla.base_s;
  s->compile_per_op_s = xla.per_op_s;
  s->plots = REPORT_CHART_BIT(report_chart_index("loss")) | REPORT_CHART_BIT(report_chart_index("step_time"));
  s->format = SCN_FORMAT_PNG;
  s->trace = 1;
  s->ckpt_max_to_keep = 1;
  s->eval_poll_s = 1.0;
  s->ckpt_bytes_per_s = 1e9;
  s->fast_forward = 1;
  s->restart_delay_s = 60;
  cfg_optimizer_defaults(&s->optimizer, MD_OPT_SGD);
}

static void from_yt_error(const yt_error *ye, scn_error *err) {
  base_format(err->file, sizeof err->file, "%s", ye->file ? ye->file : "");
  err->line = ye->line;
  err->col = ye->col;
  base_format(err->key, sizeof err->key, "%s", ye->key);
  if (ye->line > 0 && ye->key[0])
    base_format(err->msg, sizeof err->msg, "%s:%d:%d: %s: %s", err->file, ye->line, ye->col, ye->key, ye->msg);
  else if (ye->line > 0)
    base_format(err->msg, sizeof err->msg, "%s:%d:%d: %s", err->file, ye->line, ye->col, ye->msg);
  else
    base_format(err->msg, sizeof err->msg, "%s: %s", err->file, ye->msg);
}

int scenario_load_tree(const char *path, const char *const *overrides, int noverrides,
                       struct yt_doc **tree, scn_error *err) {
  yt_error ye;
  memset(err, 0, sizeof *err);
  *tree = NULL;
  yt_doc *d = yt_parse_file(path, &ye);
  if (!d) { from_yt_error(&ye, err); return -1; }
  for (int i = 0; i < noverrides; i++) {
    if (yt_apply_override(d, overrides[i], i + 1, &ye)) {
      from_yt_error(&ye, err);
      yt_doc_free(d);
      return -1;
    }
  }
  *tree = d;
  return 0;
}

int scenario_from_tree(const struct yt_doc *tree, const char *path, scenario *out, scn_error *err) {
  cfg_ctx c;
  memset(&c, 0, sizeof c);
  memset(err, 0, sizeof *err);
  set_defaults(out);
  c.s = out;
  c.err = err;
  c.root = tree->root;
  base_format(out->path, sizeof out->path, "%s", path);
  const char *slash = strrchr(path, '/');
  if (!slash) base_format(out->dir, sizeof out->dir, ".");
  else if (slash == path) base_format(out->dir, sizeof out->dir, "/");
  else base_format(out->dir, sizeof out->dir, "%.*s", (int)(slash - path), path);

  if (!tree->root || tree->root->kind != YT_MAP) {
    char fb[80];
    yt_node empty = {.kind = YT_SCALAR, .file = tree->file, .line = 1, .col = 1, .text = (char *)""};
    const yt_node *at = tree->root ? tree->root : &empty;
    return cfg_fail(&c, at, "(top level)", "expected a mapping with keys name, model, ..., found %s",
                tree->root ? cfg_found(tree->root, fb, sizeof fb) : "an empty document");
  }
  if (cfg_walk_map(&c, tree->root, "", CFG_ROOT_KEYS, out)) return -1;
  if (cross_checks(&c)) return -1;
  if (cfg_prices(&c)) return -1;

  if (out->epochs > 0) out->steps = -1;
  if (!yt_path(tree->root, "outputs.dir"))
    base_format(out->out_dir, sizeof out->out_dir, "out/%s", out->name);
  return 0;
}

int scenario_load(const char *path, const char *const *overrides, int noverrides,
                  scenario *out, scn_error *err) {
  yt_doc *d;
  if (scenario_load_tree(path, overrides, noverrides, &d, err)) {
    set_defaults(out);
    return -1;
  }
  int rc = scenario_from_tree(d, path, out, err);
  yt_doc_free(d);
  return rc;
}

int scenario_chips(const scenario *s) {
  if (s->tpu_type[0]) return s->tpu_dims[0] * s->tpu_dims[1] * s->tpu_dims[2] * s->tpu_slices;
  return s->workers * (s->worker_machine.accelerators > 0 ? s->worker_machine.accelerators : 1);
}

int scenario_key_path_known(const char *path) {
  const char *rest;
  return cfg_find_path(path, &rest) != NULL && *rest == '\0';
}
