/*
** sharding.c: TPUStrategy's logical devices and XLA sharding annotations (ds_sharding_), from
** TensorFlow's python/distribute/tpu_strategy.py.
*/
#include "strategies/tpu/sharding.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strategies/tpu/tpuInt.h"

struct ds_sharding_layout {
  int replicas;                      /* num_replicas_in_sync */
  int cores;                         /* logical devices per replica */
  int spmd;                          /* experimental_spmd_xla_partitioning */
  int hosts;                         /* num_hosts */
  int replicas_per_host;             /* num_replicas_per_host */
  char (*device)[DS_DEVICE_NAME_MAX];/* [replica][logical device] TPU device names */
  char host[DS_DEVICE_NAME_MAX];     /* the host of device [0][0] */
};

/* Replica r's logical device c as (task, ordinal). */
static void device_at(const ds_tpu_topology *t, const ds_device_assignment *da, int r, int c, int *task,
                      int *ordinal) {
  if (da == NULL) {
    int per_task = ds_tpu_topology_num_tpus_per_task(t);
    *task = r / per_task;
    *ordinal = r % per_task;
    return;
  }
  const int *coords = ds_device_assignment_coordinates(da, r, c, NULL);
  *task = ds_tpu_topology_task_ordinal_at_coordinates(ds_device_assignment_topology(da), coords, NULL);
  *ordinal = ds_tpu_topology_tpu_device_ordinal_at_coordinates(ds_device_assignment_topology(da), coords, NULL);
}

ds_sharding_layout *ds_sharding_layout_new(const ds_tpu_topology *t, const ds_device_assignment *da, int spmd,
                                           const char *job) {
  if (da) t = ds_device_assignment_topology(da);
  int per_task = ds_tpu_topology_num_tpus_per_task(t);
  ds_sharding_layout *l = base_xcalloc(1, sizeof *l);
  l->spmd = spmd;
  l->replicas = da ? ds_device_assignment_num_replicas(da) : ds_tpu_topology_num_tasks(t) * per_task;
  l->cores = da ? ds_device_assignment_num_cores_per_replica(da) : 1;
  l->device = base_xcalloc((size_t)l->replicas * (size_t)l->cores + 1, sizeof *l->device);
  /* Hosts of the replicas' logical device 0, marked per task to count the distinct ones. */
  char *seen = base_xcalloc((size_t)ds_tpu_topology_num_tasks(t) + 1, 1);
  for (int r = 0; r < l->replicas; r++)
    for (int c = 0; c < l->cores; c++) {
      int task, ordinal;
      device_at(t, da, r, c, &task, &ordinal);
      snprintf(l->device[r * l->cores + c], DS_DEVICE_NAME_MAX, "/job:%s/replica:0/task:%d/device:TPU:%d", job, task,
               ordinal);
      /* An explicit core_assignment may name a missing device (task -1), as TF allows. */
      if (c == 0 && task >= 0 && !seen[task]) {
        seen[task] = 1;
        l->hosts++;
      }
      if (r == 0 && c == 0) snprintf(l->host, sizeof l->host, "/job:%s/replica:0/task:%d/device:CPU:0", job, task);
    }
  free(seen);
  if (da == NULL) {
    l->hosts = ds_tpu_topology_num_tasks(t);
    l->replicas_per_host = per_task;
  } else {
    int fit = per_task / l->cores;
    l->replicas_per_host = l->replicas < fit ? l->replicas : fit;
  }
  return l;
}

void ds_sharding_layout_free(ds_sharding_layout *l) {
  if (l == NULL) return;
  free(l->device);
  free(l);
}

int ds_sharding_num_replicas_in_sync(const ds_sharding_layout *l) { return l->replicas; }
int ds_sharding_num_logical_devices(const ds_sharding_layout *l) { return l->cores; }
int ds_sharding_spmd(const ds_sharding_layout *l) { return l->spmd; }
const char *ds_sharding_host_device(const ds_sharding_layout *l) { return l->host; }
int ds_sharding_num_hosts(const ds_sharding_layout *l) { return l->hosts; }
int ds_sharding_num_replicas_per_host(const ds_sharding_layout *l) { return l->replicas_per_host; }

const char *ds_sharding_device(const ds_sharding_layout *l, int replica, int logical_device) {
  if (replica < 0 || replica >= l->replicas || logical_device < 0 || logical_device >= l->cores) return NULL;
  return l->device[replica * l->cores + logical_device];
}

int ds_sharding_check_logical_device(const ds_sharding_layout *l, int logical_device, ds_status *st) {
  if (logical_device >= 0 && logical_device < l->cores) return 0;
  return ds_status_set(st, DS_VALUE_ERROR,
                       "`logical_device_id` not in range (was %d, but there are only %d logical devices per replica).",
                       logical_device, l->cores);
}

int ds_sharding_variable_copies(const ds_sharding_layout *l, int logical_device, int *replica, int *core,
                                int max, ds_status *st) {
  if (ds_sharding_check_logical_device(l, logical_device, st) < 0) return -1;
  int every_core = l->spmd && l->cores > 1, n = 0;
  for (int r = 0; r < l->replicas; r++)
    for (int c = every_core ? 0 : logical_device; c < (every_core ? l->cores : logical_device + 1); c++) {
      if (n < max) {
        replica[n] = r;
        core[n] = c;
      }
      n++;
    }
  return n;
}

int ds_sharding_validate_run(int fn_is_compiled, int executing_eagerly, ds_status *st) {
  if (!executing_eagerly || fn_is_compiled) return 0;
  return ds_status_set(st, DS_NOT_IMPLEMENTED_ERROR,
                       "TPUStrategy.run(fn, ...) does not support pure eager execution. please make sure the "
                       "function passed into `strategy.run` is a `tf.function` or `strategy.run` is called inside "
                       "a `tf.function` if eager behavior is enabled.");
}

/* ---- annotations ------------------------------------------------------------------------- */

int ds_sharding_assign_to_logical_device(const ds_sharding_layout *l, const md_tensor *t, int logical_device,
                                         ds_sharding *out, ds_status *st) {
  if (l->spmd)
    return ds_status_set(st, DS_VALUE_ERROR,
                         "Cannot assign a tensor to a logical device in SPMD mode. To disable SPMD, Please construct "
                         "the TPUStrategy with `experimental_spmd_xla_partitioning=False`");
  if (logical_device < 0 || logical_device >= l->cores)
    return ds_status_set(st, DS_VALUE_ERROR,
                         "`logical_core_id` to assign must be lower then total number of logical devices per "
                         "replica. Received logical device id %d but there are only total of %d logical devices in "
                         "replica.", logical_device, l->cores);
  memset(out, 0, sizeof *out);
  out->tensor = t;
  out->kind = DS_SHARDING_MAXIMAL;
  out->logical_device = logical_device;
  return 0;
}

int ds_sharding_split_to_logical_devices(const ds_sharding_layout *l, const md_tensor *t, int ndims,
                                         const int *dims, ds_sharding *out, ds_status *st) {
  char s[128];
  if (ndims != t->rank)
    return ds_status_set(st, DS_VALUE_ERROR, "Length of `partition_dimensions` must equal to the rank of "
                         "`tensor.shape` (%d). Received len(partition_dimensions)=%d.", t->rank, ndims);
  long long product = 1;
  for (int i = 0; i < ndims; i++) {
    if (dims[i] < 1)
      return ds_status_set(st, DS_VALUE_ERROR, "`partition_dimensions[%d]` must be positive; got %d", i, dims[i]);
    if (t->shape[i] % dims[i] != 0)
      return ds_status_set(st, DS_VALUE_ERROR, "Tensor shape at `partition_dimensions[%d]` must be divisible by "
                           "corresponding value specified by `partition_dimensions` (%d). Received: %lld.", i,
                           dims[i], (long long)t->shape[i]);
    product *= dims[i];
  }
  if (product != l->cores)
    return ds_status_set(st, DS_VALUE_ERROR, "The product of `partition_dimensions` should be the same as the number "
                         "of logical devices (=%d). Received `partition_dimensions`=%s,and their product is %lld.",
                         l->cores, ds__ints_str(dims, ndims, s, sizeof s), product);
  memset(out, 0, sizeof *out);
  out->tensor = t;
  out->kind = DS_SHARDING_TILED;
  out->logical_device = -1;
  out->rank = ndims;
  memcpy(out->dims, dims, (size_t)ndims * sizeof *dims);
  return 0;
}

void ds_sharding_replicate_to_logical_devices(const md_tensor *t, ds_sharding *out) {
  memset(out, 0, sizeof *out);
  out->tensor = t;
  out->kind = DS_SHARDING_REPLICATED;
  out->logical_device = -1;
}

int ds_sharding_tile(const ds_sharding *s, int logical_device, int64_t *offset, int64_t *shape) {
  const md_tensor *t = s->tensor;
  int tiles = 1;
  for (int a = 0; s->kind == DS_SHARDING_TILED && a < s->rank; a++) tiles *= s->dims[a];
  if (logical_device < 0 || (s->kind == DS_SHARDING_MAXIMAL && logical_device != s->logical_device) ||
      (s->kind == DS_SHARDING_TILED && logical_device >= tiles))
    return 0;
  /* Row-major position of logical_device in dims: the last axis varies fastest. */
  for (int a = t->rank - 1, rest = logical_device; a >= 0; a--) {
    int split = s->kind == DS_SHARDING_TILED ? s->dims[a] : 1;
    shape[a] = t->shape[a] / split;
    offset[a] = rest % split * shape[a];
    rest /= split;
  }
  return 1;
}

md_tensor *ds_sharding_tile_copy(const ds_sharding *s, int logical_device) {
  const md_tensor *t = s->tensor;
  int64_t offset[MD_TENSOR_MAX_RANK], shape[MD_TENSOR_MAX_RANK], idx[MD_TENSOR_MAX_RANK] = {0};
  if (!ds_sharding_tile(s, logical_device, offset, shape)) return NULL;
  md_tensor *tile = md_tensor_new(t->dtype, t->rank, shape);
  size_t esize = md_dtype_size(t->dtype);
  /* Walk the tile's elements in row-major order, each copied from its place in the tensor. */
  for (size_t k = 0; k < tile->size; k++) {
    size_t src = 0;
    for (int a = 0; a < t->rank; a++) src = src * (size_t)t->shape[a] + (size_t)(offset[a] + idx[a]);
    memcpy((char *)tile->data + k * esize, (const char *)t->data + src * esize, esize);
    for (int a = t->rank - 1; a >= 0 && ++idx[a] == shape[a]; a--) idx[a] = 0;
  }
  return tile;
}
