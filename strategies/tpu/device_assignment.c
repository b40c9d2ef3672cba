/*
** device_assignment.c: tf.tpu.experimental.DeviceAssignment (ds_device_assignment_), a port
** of TensorFlow's python/tpu/device_assignment.py; device_assignment.h states the algorithm.
*/
#include "strategies/tpu/device_assignment.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strategies/tpu/tpuInt.h"

#define RANK DS_TPU_MESH_RANK

struct ds_device_assignment {
  const ds_tpu_topology *topology; /* borrowed: the caller keeps it alive */
  int replicas;                    /* num_replicas */
  int cores;                       /* num_cores_per_replica */
  int *core;                       /* core_assignment: replicas * cores * 4, row-major */
};

/* Takes ownership of core, whose coordinates lie in t's mesh. */
static ds_device_assignment *wrap(const ds_tpu_topology *t, int replicas, int cores, int *core) {
  ds_device_assignment *da = base_xcalloc(1, sizeof *da);
  da->topology = t;
  da->replicas = replicas;
  da->cores = cores;
  da->core = core;
  return da;
}

/* Room for n assignments of 4 ints; one spare so that an empty assignment still allocates. */
static int *core_array(size_t n) { return base_xcalloc(n * RANK + 1, sizeof(int)); }

/* Fills shape and stride (defaults all ones) and footprint, and returns max_replicas, or -1
** with a ValueError. */
static int check_computation(const ds_tpu_topology *t, int shape_len, const int *shape_in, int stride_len,
                             const int *stride_in, int shape[RANK], int stride[RANK], int footprint[RANK],
                             ds_status *st) {
  char a[64];
  const int *mesh = ds_tpu_topology_mesh_shape(t);
  if (shape_in && shape_len != RANK)
    return ds_status_set(st, DS_VALUE_ERROR, "computation_shape must have shape [%d]; got [%d]", RANK, shape_len);
  if (stride_in && stride_len != RANK)
    return ds_status_set(st, DS_VALUE_ERROR, "computation_stride must have shape [%d]; got [%d]", RANK, stride_len);
  for (int i = 0; i < RANK; i++) {
    shape[i] = shape_in ? shape_in[i] : 1;
    stride[i] = stride_in ? stride_in[i] : 1;
  }
  for (int i = 0; i < RANK; i++)
    if (shape[i] < 1)
      return ds_status_set(st, DS_VALUE_ERROR, "computation_shape must be positive; got computation_shape=%s",
                           ds__ints_str(shape, RANK, a, sizeof a));
  for (int i = 0; i < RANK; i++)
    if (stride[i] < 1)
      return ds_status_set(st, DS_VALUE_ERROR, "computation_stride must be positive; got computation_stride=%s",
                           ds__ints_str(stride, RANK, a, sizeof a));
  long long fp[RANK];
  for (int i = 0; i < RANK; i++) fp[i] = (long long)shape[i] * stride[i];
  for (int i = 0; i < RANK; i++)
    if (fp[i] > mesh[i])
      return ds_status_set(st, DS_VALUE_ERROR,
                           "computation footprint [%lld, %lld, %lld, %lld] does not fit in TPU topology shape %s",
                           fp[0], fp[1], fp[2], fp[3], ds__ints_str(mesh, RANK, a, sizeof a));
  int max = 1;
  for (int i = 0; i < RANK; i++) {
    footprint[i] = (int)fp[i];
    max *= mesh[i] / footprint[i] * stride[i];
  }
  return max;
}

int ds_device_assignment_max_replicas(const ds_tpu_topology *t, int shape_len, const int *computation_shape,
                                      int stride_len, const int *computation_stride, ds_status *st) {
  int shape[RANK], stride[RANK], footprint[RANK];
  return check_computation(t, shape_len, computation_shape, stride_len, computation_stride, shape, stride,
                           footprint, st);
}

/* The replica grid: axes sorted by (count, (i + 1) % 4), each as close to the remaining cube
** root as its count allows. */
static void replica_shape(const int counts[RANK], int num_replicas, int out[RANK]) {
  int order[RANK] = {3, 0, 1, 2};   /* (i + 1) % 4 ascending: core axis, x, y, z */
  for (int i = 1; i < RANK; i++)    /* stable insertion sort on count keeps that tie order */
    for (int k = i; k > 0 && counts[order[k]] < counts[order[k - 1]]; k--) {
      int s = order[k];
      order[k] = order[k - 1];
      order[k - 1] = s;
    }
  int remaining = num_replicas;
  for (int k = 0; k < RANK; k++) {
    int i = order[k];
    int target = (int)ceil(pow((double)remaining, 1.0 / (RANK - k)));
    out[i] = target < counts[i] ? target : counts[i];
    remaining = (remaining + out[i] - 1) / out[i];
  }
  /* Axes go in increasing count, so an axis clipped to its count leaves a remainder the larger
  ** axes after it can hold; TF asserts the same. */
  assert(remaining == 1);
}

/* Appends (x, y, z) to ring[*n]. */
static void put(int (*ring)[3], int *n, int x, int y, int z) {
  ring[*n][0] = x;
  ring[*n][1] = y;
  ring[*n][2] = z;
  (*n)++;
}

/* _open_ring_2d(xs, ys): a ring over an xs by ys grid without its corner (0, 0), as (a, b)
** pairs placed on axes (ax, bx) of a chip at `fixed` on the third axis. */
static void open_ring_2d(int xs, int ys, int ax, int bx, int fixed, int (*ring)[3], int *n) {
  int cx = 3 - ax - bx, c[3];
  c[cx] = fixed;
  for (int i = 0; i < ys / 2; i++) {
    for (int j = 1; j < xs; j++) {
      c[ax] = j, c[bx] = 2 * i;
      put(ring, n, c[0], c[1], c[2]);
    }
    for (int j = xs - 1; j > 0; j--) {
      c[ax] = j, c[bx] = 2 * i + 1;
      put(ring, n, c[0], c[1], c[2]);
    }
  }
  for (int i = ys - 1; i > 0; i--) {
    c[ax] = 0, c[bx] = i;
    put(ring, n, c[0], c[1], c[2]);
  }
}

/* _ring_3d(x, y, z): x * y * z chips in ring order, into ring. */
static void ring_3d(int x, int y, int z, int (*ring)[3]) {
  int n = 0;
  int ones = (x == 1) + (y == 1) + (z == 1);
  if (ones >= 2) {                          /* a line along the one long axis */
    for (int i = 0; i < x * y * z; i++) put(ring, &n, x > 1 ? i : 0, y > 1 ? i : 0, z > 1 ? i : 0);
    return;
  }
  if ((x > 1 && x % 2) || (y > 1 && y % 2) || (z > 1 && z % 2)) {  /* odd: raster, x fastest */
    for (int k = 0; k < z; k++)
      for (int j = 0; j < y; j++)
        for (int i = 0; i < x; i++) put(ring, &n, i, j, k);
    return;
  }
  put(ring, &n, 0, 0, 0);
  if (z == 1) open_ring_2d(x, y, 0, 1, 0, ring, &n);
  else if (y == 1) open_ring_2d(x, z, 0, 2, 0, ring, &n);
  else if (x == 1) open_ring_2d(y, z, 1, 2, 0, ring, &n);
  else {
    /* One open 2-D ring per z plane, every other one reversed, closed down the (0, 0) column. */
    for (int k = 0; k < z; k++) {
      int start = n;
      open_ring_2d(x, y, 0, 1, k, ring, &n);
      for (int lo = start, hi = n - 1; k % 2 && lo < hi; lo++, hi--)
        for (int a = 0; a < 3; a++) {
          int s = ring[lo][a];
          ring[lo][a] = ring[hi][a];
          ring[hi][a] = s;
        }
    }
    for (int k = z - 1; k > 0; k--) put(ring, &n, 0, 0, k);
  }
  assert(n == x * y * z);
}

/* Replica r at the r-th chip of a ring over rshape[:3]; its cores along a ring over
** shape[:3], the core index fastest. */
static int *tile_3d(const int shape[RANK], const int rshape[RANK], const int mesh[RANK], int replicas) {
  int cores = shape[0] * shape[1] * shape[2] * shape[3];
  int (*inner)[3] = base_xcalloc((size_t)(shape[0] * shape[1] * shape[2]), sizeof *inner);
  int (*outer)[3] = base_xcalloc((size_t)(rshape[0] * rshape[1] * rshape[2]), sizeof *outer);
  ring_3d(shape[0], shape[1], shape[2], inner);
  ring_3d(rshape[0], rshape[1], rshape[2], outer);
  int *core = core_array((size_t)replicas * (size_t)cores);
  for (int r = 0; r < replicas; r++)
    for (int k = 0; k < cores; k++) {
      int *c = core + ((size_t)r * (size_t)cores + (size_t)k) * RANK;
      for (int a = 0; a < 3; a++) c[a] = outer[r][a] * shape[a] + inner[k / mesh[3]][a];
      c[3] = k % mesh[3];
    }
  free(inner);
  free(outer);
  return core;
}

/* Replica r as a mixed-radix number over rshape (core axis fastest), offset by whole
** footprints and stride phases; logical cores over the strided grid, last axis fastest. */
static int *tile_mesh(const int shape[RANK], const int stride[RANK], const int footprint[RANK],
                      const int rshape[RANK], int replicas) {
  int cores = shape[0] * shape[1] * shape[2] * shape[3];
  int *core = core_array((size_t)replicas * (size_t)cores);
  for (int r = 0; r < replicas; r++) {
    int pos[RANK], offset[RANK], t = r;
    pos[3] = t % rshape[3];
    t /= rshape[3];
    for (int a = 0; a < 3; a++) {
      pos[a] = t % rshape[a];
      t /= rshape[a];
    }
    for (int a = 0; a < RANK; a++) offset[a] = pos[a] / stride[a] * footprint[a] + pos[a] % stride[a];
    for (int k = 0; k < cores; k++) {
      int *c = core + ((size_t)r * (size_t)cores + (size_t)k) * RANK;
      for (int a = RANK - 1, rest = k; a >= 0; a--) {
        c[a] = rest % shape[a] * stride[a] + offset[a];
        rest /= shape[a];
      }
    }
  }
  return core;
}

/* The degraded-slice path: replicas take the topology's devices in task order. */
static int *tile_degraded(const ds_tpu_topology *t, const int shape[RANK], const int stride[RANK], int replicas,
                          ds_status *st) {
  int cores = shape[0] * shape[1] * shape[2] * shape[3];
  int tasks = ds_tpu_topology_num_tasks(t), per_task = ds_tpu_topology_num_tpus_per_task(t);
  char a[64];
  if (stride[0] * stride[1] * stride[2] * stride[3] != 1) {
    ds_status_set(st, DS_VALUE_ERROR, "the TPU topology has %d missing devices: computation_stride must be all "
                  "ones; got %s", ds_tpu_topology_missing_devices(t), ds__ints_str(stride, RANK, a, sizeof a));
    return NULL;
  }
  if ((long long)replicas * cores > (long long)tasks * per_task) {
    ds_status_set(st, DS_VALUE_ERROR, "%d replicas of %d cores need %lld TPU devices; the topology has %d "
                  "(%d missing)", replicas, cores, (long long)replicas * cores, tasks * per_task,
                  ds_tpu_topology_missing_devices(t));
    return NULL;
  }
  int *core = core_array((size_t)replicas * (size_t)cores);
  for (int id = 0; id < replicas * cores; id++)
    memcpy(core + (size_t)id * RANK, ds_tpu_topology_device_coordinates(t, id / per_task, id % per_task),
           RANK * sizeof *core);
  return core;
}

ds_device_assignment *ds_device_assignment_build(const ds_tpu_topology *t, int shape_len,
                                                 const int *computation_shape, int stride_len,
                                                 const int *computation_stride, int num_replicas,
                                                 ds_device_order_mode mode, ds_status *st) {
  int shape[RANK], stride[RANK], footprint[RANK];
  int max = check_computation(t, shape_len, computation_shape, stride_len, computation_stride, shape, stride,
                              footprint, st);
  if (max < 0) return NULL;
  char a[64], b[64], c[64];
  const int *mesh = ds_tpu_topology_mesh_shape(t);
  if (num_replicas < 1 || num_replicas > max) {
    ds_status_set(st, DS_VALUE_ERROR, "requested %d replicas but only %d replicas with shape %s and "
                  "computation_stride %s fit in a TPU mesh of shape %s%s", num_replicas, max,
                  ds__ints_str(shape, RANK, a, sizeof a), ds__ints_str(stride, RANK, b, sizeof b),
                  ds__ints_str(mesh, RANK, c, sizeof c), num_replicas < 1 ? " (num_replicas must be >= 1)" : "");
    return NULL;
  }
  int cores = shape[0] * shape[1] * shape[2] * shape[3], *core;
  if (ds_tpu_topology_missing_devices(t) > 0) {
    core = tile_degraded(t, shape, stride, num_replicas, st);
    return core ? wrap(t, num_replicas, cores, core) : NULL;
  }
  int counts[RANK], rshape[RANK];
  for (int i = 0; i < RANK; i++) counts[i] = mesh[i] / footprint[i] * stride[i];
  replica_shape(counts, num_replicas, rshape);
  int tiling_3d = shape[3] == mesh[3] && stride[0] * stride[1] * stride[2] * stride[3] == 1 && num_replicas == max;
  if (mode == DS_DEVICE_ORDER_RING && !tiling_3d) {
    ds_status_set(st, DS_VALUE_ERROR, "device_order_mode=DeviceOrderMode.RING is not compatible with the 3D "
                  "tiling current topology.  Try setting device_order_mode=DeviceOrderMode.AUTO");
    return NULL;
  }
  if (mode == DS_DEVICE_ORDER_MESH) tiling_3d = 0;
  core = tiling_3d ? tile_3d(shape, rshape, mesh, num_replicas)
                   : tile_mesh(shape, stride, footprint, rshape, num_replicas);
  return wrap(t, num_replicas, cores, core);
}

ds_device_assignment *ds_device_assignment_new(const ds_tpu_topology *t, int num_replicas, int cores_per_replica,
                                               int minor, const int *core_assignment, ds_status *st) {
  if (minor != RANK || num_replicas < 0 || cores_per_replica < 0) {
    ds_status_set(st, DS_VALUE_ERROR, "minor dimension of core_assignment must have size equal to topology rank "
                  "(%d), got shape [%d, %d, %d]", RANK, num_replicas, cores_per_replica, minor);
    return NULL;
  }
  size_t n = (size_t)num_replicas * (size_t)cores_per_replica;
  for (size_t i = 0; i < n; i++) {
    ds_status probe;
    ds_status_clear(&probe);
    ds_tpu_topology_task_ordinal_at_coordinates(t, core_assignment + i * RANK, &probe);
    if (!ds_status_ok(&probe)) {
      ds_status_set(st, DS_VALUE_ERROR, "core_assignment[%d][%d]: %s", (int)(i / (size_t)cores_per_replica),
                    (int)(i % (size_t)cores_per_replica), probe.message);
      return NULL;
    }
  }
  int *core = core_array(n);
  memcpy(core, core_assignment, n * RANK * sizeof *core);
  return wrap(t, num_replicas, cores_per_replica, core);
}

void ds_device_assignment_free(ds_device_assignment *da) {
  if (da == NULL) return;
  free(da->core);
  free(da);
}

const ds_tpu_topology *ds_device_assignment_topology(const ds_device_assignment *da) { return da->topology; }
int ds_device_assignment_num_replicas(const ds_device_assignment *da) { return da->replicas; }
int ds_device_assignment_num_cores_per_replica(const ds_device_assignment *da) { return da->cores; }
const int *ds_device_assignment_core_assignment(const ds_device_assignment *da) { return da->core; }

const int *ds_device_assignment_coordinates(const ds_device_assignment *da, int replica, int logical_core,
                                            ds_status *st) {
  if (replica < 0 || replica >= da->replicas || logical_core < 0 || logical_core >= da->cores) {
    ds_status_set(st, DS_VALUE_ERROR, "replica %d, logical core %d: the device assignment has %d replicas of %d "
                  "logical cores", replica, logical_core, da->replicas, da->cores);
    return NULL;
  }
  return da->core + ((size_t)replica * (size_t)da->cores + (size_t)logical_core) * RANK;
}

int ds_device_assignment_lookup_replicas(const ds_device_assignment *da, int task_id, int logical_core,
                                         int *out, int max, ds_status *st) {
  int n = 0;
  for (int r = 0; logical_core >= 0 && logical_core < da->cores && r < da->replicas; r++) {
    const int *c = da->core + ((size_t)r * (size_t)da->cores + (size_t)logical_core) * RANK;
    if (ds_tpu_topology_task_ordinal_at_coordinates(da->topology, c, NULL) != task_id) continue;
    if (n < max) out[n] = r;
    n++;
  }
  if (n == 0)
    return ds_status_set(st, DS_VALUE_ERROR, "Can not find any replica in task: %d contains logical_core: %d",
                         task_id, logical_core);
  return n;
}

int ds_device_assignment_tpu_ordinal(const ds_device_assignment *da, int replica, int logical_core,
                                     ds_status *st) {
  const int *c = ds_device_assignment_coordinates(da, replica, logical_core, st);
  return c ? ds_tpu_topology_tpu_device_ordinal_at_coordinates(da->topology, c, st) : -1;
}

const char *ds_device_assignment_host_device(const ds_device_assignment *da, int replica, int logical_core,
                                             const char *job, char *buf, size_t len, ds_status *st) {
  const int *c = ds_device_assignment_coordinates(da, replica, logical_core, st);
  return c ? ds_tpu_topology_cpu_device_name_at_coordinates(da->topology, c, job, buf, len, st) : NULL;
}

const char *ds_device_assignment_tpu_device(const ds_device_assignment *da, int replica, int logical_core,
                                            const char *job, char *buf, size_t len, ds_status *st) {
  const int *c = ds_device_assignment_coordinates(da, replica, logical_core, st);
  return c ? ds_tpu_topology_tpu_device_name_at_coordinates(da->topology, c, job, buf, len, st) : NULL;
}
