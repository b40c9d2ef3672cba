/* dsutil.h: machines and strategies shared by the strategies/ tests. */
#ifndef PODSIM_DSUTIL_H
#define PODSIM_DSUTIL_H

#include "tests/testutil.h"

#include "strategies/core/context.h"
#include "strategies/core/distribute.h"
#include "strategies/input/strategy_input.h"

/* Workers with `gpus` accelerators each (0: CPU replicas), on a star fabric. */
static inline ds_cluster du_cluster(int workers, int gpus) {
  ds_cluster c = { .workers = workers, .machine = { .flops_per_s = 1e11, .mem_bytes_per_s = 2e10,
                   .ram_bytes = 32e9, .nic_bytes_per_s = 25e9 },
                   .fabric = SIM_FABRIC_STAR, .link_bytes_per_s = 100e9, .latency = 5000000 };
  if (gpus > 0)
    c.machine.accel = (ds_accelerators){ .count = gpus, .peak_flops = 312e12, .efficiency = 0.5,
                                         .hbm_bytes = 80e9, .hbm_bytes_per_s = 2e12,
                                         .link_bytes_per_s = 300e9, .link_latency = 1000000 };
  return c;
}

/* tf.distribute.MirroredStrategy(["GPU:0", ..., "GPU:n-1"]) on one VM with n GPUs. */
static inline ds_strategy *du_mirrored(sim_engine *e, int n) {
  static const char *const gpus[] = { "GPU:0", "GPU:1", "GPU:2", "GPU:3" };
  ds_cluster c = du_cluster(1, n);
  ds_status st;
  ds_strategy *s = ds_mirrored_new(e, &c, gpus, n, SIM_ALGO_RING, &st);
  assert_non_null(s);
  return s;
}

/* A PerReplica of float scalars, one per replica of s. */
static inline ds_value *du_per_replica_f32(const ds_strategy *s, const float *values) {
  md_tensor *parts[8];
  const char *devs[8];
  int n = ds_num_replicas_in_sync(s);
  for (int r = 0; r < n; r++) {
    parts[r] = md_tensor_scalar_f32(values[r]);
    devs[r] = ds_replica_device(s, r);
  }
  return ds_value_new(DS_VALUE_PER_REPLICA, n, parts, devs);
}

/* cmocka fixture: an engine and MirroredStrategy over 2 or 4 GPUs, in *state. */
typedef struct du_fixture {
  sim_engine *e;          /* the engine */
  ds_strategy *s;         /* the strategy */
} du_fixture;

static inline int du_setup(void **state, int gpus) {
  du_fixture *f = calloc(1, sizeof *f);
  f->e = sim_engine_new();
  f->s = du_mirrored(f->e, gpus);
  *state = f;
  return 0;
}
static inline int du_setup2(void **state) { return du_setup(state, 2); }
static inline int du_setup4(void **state) { return du_setup(state, 4); }
static inline int du_teardown(void **state) {
  du_fixture *f = *state;
  ds_strategy_free(f->s);
  sim_engine_free(f->e);
  free(f);
  return 0;
}
#define DU_TEST2(fn) cmocka_unit_test_setup_teardown(fn, du_setup2, du_teardown)
#define DU_TEST4(fn) cmocka_unit_test_setup_teardown(fn, du_setup4, du_teardown)

static inline double du_get(const ds_value *v, int component, size_t i) {
  return md_tensor_get(ds_value_component(v, component), i);
}

#endif
