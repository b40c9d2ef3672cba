/*
** keys_strategy.c: the strategy section: kind, device assignment, devices, partitioner, all-reduce.
*/
#include "scenarios/config/configInt.h"

#include <string.h>

const char *const CFG_STRATEGIES[] = {"default", "one_device", "mirrored", "multi_worker_mirrored",
                                         "tpu", "tpu_v1", "parameter_server", "gnn_runner_tpu", NULL};

/* Indexed by scenario.split_variables. */
static const char *const CFG_SPLITS[] = {"none", "megatron", NULL};

/* Indexed by scn_allreduce. tree is binary; double_binary_tree is NCCL's pair of trees; nccl is
** NCCL's own choice of ring or tree and protocol (sim/nccl.h), auto's on a GPU system. */
const char *const CFG_ALGORITHMS[] = {"auto", "ring", "bidirectional_ring", "torus", "tree",
                                         "halving_doubling", "double_binary_tree", "nccl", NULL};

/* A sequence of exactly 4 integers >= 1 (device_assignment shapes), stored as int[4] at k->off. */
static int int4_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  static const key_spec one = {.key = "", .type = V_INT, .lo = 1, .hi = 4096};
  char fb[80], sub[256];
  long long x;
  if (v->kind != YT_SEQ || v->n != 4)
    return cfg_fail(c, v, path, "expected a sequence of 4 integers such as [1, 1, 1, 2], found %s", cfg_found(v, fb, sizeof fb));
  for (int i = 0; i < v->n; i++) {
    base_format(sub, sizeof sub, "%s[%d]", path, i);
    if (cfg_get_int(c, &one, v->items[i], sub, &x)) return -1;
    ((int *)((char *)base + k->off))[i] = (int)x;
  }
  return 0;
}

/* strategy.devices: [GPU:0, CPU:0, ...] */
static int devices_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  char sub[256];
  scenario *s = base;
  (void)k;
  if (cfg_get_seq(c, v, path, "a sequence of devices such as [GPU:0, GPU:1]")) return -1;
  if (v->n > SCN_MAX_DEVICES)
    return cfg_fail(c, v, path, "expected at most %d devices, found %d", SCN_MAX_DEVICES, v->n);
  for (int i = 0; i < v->n; i++) {
    const yt_node *d = v->items[i];
    const char *t;
    base_format(sub, sizeof sub, "%s[%d]", path, i);
    if (cfg_get_str(c, d, sub, &t)) return -1;
    if ((strncmp(t, "GPU:", 4) && strncmp(t, "CPU:", 4) && strncmp(t, "TPU:", 4)) || !cfg_is_int_text(t + 4) ||
        t[4] == '-' || t[4] == '+')
      return cfg_fail(c, d, sub, "expected a device such as GPU:0, CPU:0 or TPU:3, found \"%s\"", t);
    if (strlen(t) >= sizeof s->devices[0]) return cfg_fail(c, d, sub, "device index too large: \"%s\"", t);
    base_format(s->devices[s->ndevices++], sizeof s->devices[0], "%s", t);
  }
  return 0;
}

#define PART_SHARDS(name, req) {.key = name, .type = V_INT, .lo = 1, .hi = 100000, .st = S_INT, \
                                     OFF(scenario, partitioner_shards), .required = req}
#define PART_BYTES(name, req) {.key = name, .type = V_UNIT, .unit = UNIT_SIZE, .lo = 1, .st = S_DOUBLE, \
                                    OFF(scenario, partitioner_bytes), .required = req}
static const key_spec PART_FIXED[] = {{.key = "kind", .type = V_STR}, PART_SHARDS("num_shards", 1), END};
static const key_spec PART_MIN[] = {
  {.key = "kind", .type = V_STR}, PART_BYTES("min_shard_bytes", 0), PART_SHARDS("max_shards", 0), END};
static const key_spec PART_MAX[] = {
  {.key = "kind", .type = V_STR}, PART_BYTES("max_shard_bytes", 1), PART_SHARDS("max_shards", 0), END};
static const variant PARTITIONERS[] = {
  {"fixed_shards", PART_FIXED}, {"min_size", PART_MIN}, {"max_size", PART_MAX}, {NULL, NULL}};

/* MinSizePartitioner's defaults are TF's: min_shard_bytes 256 KiB, max_shards 1. */
static int partitioner_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  int which;
  scenario *s = base;
  (void)k;
  s->partitioner_shards = 0;
  s->partitioner_bytes = 256 * 1024;
  if (cfg_walk_variant(c, v, path, PARTITIONERS, s, &which)) return -1;
  s->partitioner = (scn_partitioner_kind)(which + 1);
  if (s->partitioner == SCN_PARTITIONER_MIN_SIZE && s->partitioner_shards == 0) s->partitioner_shards = 1;
  return 0;
}

/* Indexed by scenario.comm_implementation: tf.distribute.experimental.CommunicationImplementation. */
const char *const CFG_IMPLEMENTATIONS[] = {"auto", "ring", "nccl", NULL};

/* tf.distribute.experimental.CommunicationOptions (timeout_seconds is not modelled). */
static const key_spec COMMUNICATION_KEYS[] = {
  {.key = "bytes_per_pack", .type = V_UNIT, .unit = UNIT_SIZE, .st = S_DOUBLE, OFF(scenario, comm_bytes_per_pack),
   .doc = "gradients all-reduced in packs of about this size in reverse variable order, each as soon as the "
          "backward pass has produced it, overlapped with the rest (CollectiveAllReduce's group_by_size); "
          "0B (TF's default): one pack once the backward pass is done"},
  {.key = "implementation", .type = V_ENUM, .names = CFG_IMPLEMENTATIONS, .st = S_INT,
   OFF(scenario, comm_implementation),
   .doc = "ring: strategy.all_reduce ring; nccl: NCCL on a GPU system, else ring (TF's fallback); auto: "
          "strategy.all_reduce's choice"},
  END};

#define INT4_SCHEMA "{\"type\":\"array\",\"minItems\":4,\"maxItems\":4,\"items\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":4096}}"
static const key_spec DEVICE_ASSIGNMENT_KEYS[] = {
  {.key = "computation_shape", .type = V_FN, .fn = int4_fn, .schema = INT4_SCHEMA, OFF(scenario, da_shape), .required = 1},
  {.key = "computation_stride", .type = V_FN, .fn = int4_fn, .schema = INT4_SCHEMA, OFF(scenario, da_stride)},
  {.key = "num_replicas", .type = V_INT, .lo = 1, .hi = 100000, .st = S_INT, OFF(scenario, da_num_replicas)},
  END};
const key_spec CFG_STRATEGY_KEYS[] = {
  {.key = "kind", .type = V_ENUM, .names = CFG_STRATEGIES, .st = S_INT,
   OFF(scenario, strategy)},
  {.key = "device_assignment", .type = V_MAP, .sub = DEVICE_ASSIGNMENT_KEYS},
  {.key = "spmd_xla_partitioning", .type = V_BOOL, .st = S_INT, OFF(scenario, spmd)},
  {.key = "split_to_logical_devices", .type = V_ENUM, .names = CFG_SPLITS, .st = S_INT, OFF(scenario, split_variables),
   .doc = "tpu with spmd_xla_partitioning: megatron splits kernels over a replica's logical devices "
          "(experimental_split_to_logical_devices), none keeps every variable whole on each"},
  {.key = "steps_per_run", .type = V_INT, .lo = 1, .hi = 1e9, .st = S_INT, OFF(scenario, steps_per_run)},
  {.key = "num_cores", .type = V_INT, .lo = 1, .hi = 100000, .st = S_INT, OFF(scenario, num_cores)},
  {.key = "host_round_trip", .type = V_UNIT, .unit = UNIT_DURATION, .hi = 3600, .st = S_DOUBLE,
   OFF(scenario, host_round_trip_s)},
  {.key = "variable_partitioner", .type = V_FN, .fn = partitioner_fn, .variants = PARTITIONERS,
   .schema = "{\"allOf\":[\"$variants\"],\"description\":\"parameter_server: TF's partitioner of variables over the ps tasks\"}"},
  {.key = "devices", .type = V_FN, .fn = devices_fn,
   .schema = "{\"type\":\"array\",\"minItems\":1,\"uniqueItems\":true,\"items\":{\"type\":\"string\",\"pattern\":\"^(CPU|GPU|TPU):[0-9]+$\"},\"description\":\"mirrored: local devices of the first worker such as [GPU:0, GPU:1]\"}"},
  {.key = "all_reduce", .type = V_ENUM, .names = CFG_ALGORITHMS, .st = S_INT,
   OFF(scenario, all_reduce)},
  {.key = "xla_combine_threshold", .type = V_UNIT, .unit = UNIT_SIZE, .st = S_DOUBLE, OFF(scenario, xla_combine_bytes),
   .doc = "tpu: XLA's all-reduce combiner threshold; the gradients' all-reduces are combined in the backward's "
          "order while within it, and each runs asynchronously beside the rest of the backward pass (absent: one "
          "all-reduce once the backward pass is done)"},
  {.key = "communication", .type = V_MAP, .sub = COMMUNICATION_KEYS,
   .doc = "mirrored, multi_worker_mirrored: tf.distribute.experimental.CommunicationOptions"},
  {.key = "distribution", .type = V_MAP, .sub = CFG_DISTRIBUTION_KEYS,
   .doc = "mirrored, multi_worker_mirrored, tpu: keras.distribution's device mesh and layout map over the "
          "replicas, and the sharding recipe (data parallel, ZeRO, FSDP, Megatron tensor and sequence "
          "parallelism) the step is compiled with"},
  END};

const char *scenario_strategy_name(scn_strategy_kind kind) { return CFG_STRATEGIES[kind]; }
