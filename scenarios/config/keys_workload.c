/*
** keys_workload.c: the workload section: a collective or matmul microbenchmark instead of a
** training run (scenario.c checks that exactly one is given).
*/
#include "scenarios/config/configInt.h"

static const char *const COLLECTIVES[] = {"all_reduce", "reduce_scatter", "all_gather", "broadcast",
                                          "all_to_all", "ppermute", NULL};
static const char *const GROUPS[] = {"workers", "tpu", NULL};
const char *const SCN_AXES[] = {"x", "y", "z", "core", "slice", NULL};

static const key_spec COLLECTIVE_KEYS[] = {
  {.key = "op", .type = V_ENUM, .names = COLLECTIVES, .required = 1, .st = S_INT, OFF(scenario, workload_op)},
  {.key = "size", .type = V_UNIT, .unit = UNIT_SIZE, .lo = 4, .hi = 1e13, .required = 1, .st = S_DOUBLE,
   OFF(scenario, workload_size_bytes)},
  {.key = "algorithm", .type = V_ENUM, .names = CFG_ALGORITHMS, .st = S_INT, OFF(scenario, workload_algorithm)},
  {.key = "group", .type = V_ENUM, .names = GROUPS, .st = S_INT, OFF(scenario, workload_group)},
  {.key = "iterations", .type = V_INT, .lo = 1, .hi = 100000, .st = S_LONG, OFF(scenario, workload_iterations)},
  {.key = "axis", .type = V_ENUM, .names = SCN_AXES, .st = S_INT, OFF(scenario, workload_axis),
   .doc = "run on every line of devices along this mesh axis at once (group tpu); slice: across the slices of cluster.tpu.slices, over DCN"},
  {.key = "shift", .type = V_INT, .lo = 0, .hi = 1000000, .st = S_INT, OFF(scenario, workload_shift),
   .doc = "ppermute: each rank sends to the rank this far ahead in its group, cyclically"},
  END};
static const char *const MATMUL_DTYPES[] = {"bfloat16", "float32", NULL};
static const key_spec MATMUL_KEYS[] = {
  {.key = "m", .type = V_INT, .lo = 1, .hi = 1000000, .required = 1, .st = S_INT, OFF(scenario, workload_mm_m),
   .doc = "rows of the output (and of the left operand)"},
  {.key = "n", .type = V_INT, .lo = 1, .hi = 1000000, .required = 1, .st = S_INT, OFF(scenario, workload_mm_n),
   .doc = "columns of the output (and of the right operand)"},
  {.key = "k", .type = V_INT, .lo = 1, .hi = 1000000, .required = 1, .st = S_INT, OFF(scenario, workload_mm_k),
   .doc = "the contracted dimension"},
  {.key = "dtype", .type = V_ENUM, .names = MATMUL_DTYPES, .st = S_INT, OFF(scenario, workload_mm_dtype),
   .doc = "operand and output dtype (default bfloat16); float32 runs at the device's float32 matmul rate"},
  {.key = "group", .type = V_ENUM, .names = GROUPS, .st = S_INT, OFF(scenario, workload_group),
   .doc = "workers: the first accelerator of cluster.workers' machine (its CPU without one); tpu: a device of cluster.tpu"},
  {.key = "iterations", .type = V_INT, .lo = 1, .hi = 100000, .st = S_LONG, OFF(scenario, workload_iterations)},
  END};
const key_spec CFG_WORKLOAD_KEYS[] = {
  {.key = "collective", .type = V_MAP, .sub = COLLECTIVE_KEYS},
  {.key = "matmul", .type = V_MAP, .sub = MATMUL_KEYS,
   .doc = "one matrix product [m x k] [k x n] on one device, timed by its per-op model (docs/machine.md, Compute)"},
  END};
