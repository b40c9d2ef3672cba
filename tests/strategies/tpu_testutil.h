/* tpu_testutil.h: the topologies and device assignments the TPU tests share. */
#ifndef PODSIM_TPU_TESTUTIL_H
#define PODSIM_TPU_TESTUTIL_H

#include "tests/testutil.h"

#include "strategies/tpu/device_assignment.h"

/* initialize_tpu_system on a simulated slice such as "v3-8". */
static inline ds_tpu_topology *tu_tpu_init(const char *slice) {
  ds_tpu_resolver *r = ds_tpu_resolver_new("", slice, NULL, NULL);
  assert_non_null(r);
  ds_tpu_topology *t = ds_tpu_initialize_system(r);
  ds_tpu_resolver_free(r);
  return t;
}

/* A v4-16 in 2-core mode, which no simulated slice is: mesh [2, 2, 2, 2], 2 tasks of 8
** devices in chip order x + 2y + 4z, core fastest. The API page's computation_shape
** [1, 2, 2, 2] needs a core axis of 2 and z >= 2. */
static inline ds_tpu_topology *tu_tpu_two_core_mesh(void) {
  int mesh[4] = {2, 2, 2, 2}, coords[16][4];
  for (int d = 0; d < 16; d++) {
    int chip = d / 2;
    coords[d][0] = chip % 2, coords[d][1] = chip / 2 % 2, coords[d][2] = chip / 4, coords[d][3] = d % 2;
  }
  ds_tpu_topology *t = ds_tpu_topology_new(4, mesh, 2, 8, 4, &coords[0][0], NULL);
  assert_non_null(t);
  return t;
}

/* DeviceAssignment.build(t, computation_shape=shape (NULL: None), num_replicas=n), which must
** succeed. */
static inline ds_device_assignment *tu_tpu_build(const ds_tpu_topology *t, const int *shape, int n) {
  ds_device_assignment *da = ds_device_assignment_build(t, shape ? 4 : 0, shape, 0, NULL, n,
                                                        DS_DEVICE_ORDER_AUTO, NULL);
  assert_non_null(da);
  return da;
}

/* Asserts that a call failed (failed != 0) with a ValueError saying `want` (NULL: any text). */
static inline void tu_tpu_value_error(int failed, const ds_status *st, const char *want) {
  assert_true(failed);
  assert_int_equal(st->kind, DS_VALUE_ERROR);
  if (want) assert_string_equal(st->message, want);
}

#endif
