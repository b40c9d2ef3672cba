/*
** keys_workload.c: the workload section: a collective microbenchmark instead of a training run.
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
const key_spec CFG_WORKLOAD_KEYS[] = {
  {.key = "collective", .type = V_MAP, .sub = COLLECTIVE_KEYS, .required = 1},
  END};
