/*
** sharding.h: TPUStrategy's logical devices and the XLA sharding annotations on tensors
** (ds_sharding_), the parts of tpu_strategy.py that need no strategy object.
**
** A layout is TPUExtended._tpu_devices: the TPU device of each [replica][logical device].
** Without a device assignment every TPU core (TF device) is a replica of one logical device, in
** the order the devices are listed (task by task, ordinal by ordinal); with one, replica r's
** logical device c is device_assignment.tpu_device(r, c). num_replicas_in_sync is the number
** of TPU devices without a device assignment, else its num_replicas.
**
** An annotation (experimental_assign_to_logical_device, experimental_split_to_logical_devices,
** experimental_replicate_to_logical_devices) returns the tensor unchanged in TF, with an XLA
** sharding attached; here it is a ds_sharding that points at the tensor (no copy) and says
** which piece each logical device of a replica holds.
*/
#ifndef PODSIM_SHARDING_H
#define PODSIM_SHARDING_H

#include <stddef.h>
#include <stdint.h>

#include "models/tensor.h"
#include "strategies/tpu/device_assignment.h"
#include "strategies/core/status.h"
#include "strategies/tpu/tpu_topology.h"

typedef struct ds_sharding_layout ds_sharding_layout;

/* TPUStrategy(resolver, experimental_device_assignment=da, experimental_spmd_xla_partitioning=
** spmd)'s devices. da NULL: the topology's devices; else da's (t is then unused and may be
** NULL). job names the devices' job as the TPU system lists them: "worker" for a TPU reached
** through a cluster, "localhost" for tpu="local". Names are canonical:
** "/job:<job>/replica:0/task:<T>/device:TPU:<K>". TF-GNN's runner.TPUStrategy is da NULL,
** spmd 0. */
ds_sharding_layout *ds_sharding_layout_new(const ds_tpu_topology *t, const ds_device_assignment *da, int spmd,
                                           const char *job);
void ds_sharding_layout_free(ds_sharding_layout *l);

int ds_sharding_num_replicas_in_sync(const ds_sharding_layout *l);
/* Logical devices per replica: _tpu_devices.shape[1] (1 without a device assignment). */
int ds_sharding_num_logical_devices(const ds_sharding_layout *l);
int ds_sharding_spmd(const ds_sharding_layout *l);
/* The device of (replica, logical_device); NULL when out of range. */
const char *ds_sharding_device(const ds_sharding_layout *l, int replica, int logical_device);
/* The host of replica 0's logical device 0: where TF puts non-slot variables and reduce results. */
const char *ds_sharding_host_device(const ds_sharding_layout *l);
/* TPUExtended.num_hosts: the topology's tasks without a device assignment, else the distinct
** hosts of the replicas' logical device 0. */
int ds_sharding_num_hosts(const ds_sharding_layout *l);
/* TPUExtended.num_replicas_per_host: devices per task without a device assignment, else
** min(num_replicas, devices per task // cores per replica). */
int ds_sharding_num_replicas_per_host(const ds_sharding_layout *l);

/* experimental_logical_device(id)'s check: ValueError unless 0 <= id < logical devices. */
int ds_sharding_check_logical_device(const ds_sharding_layout *l, int logical_device, ds_status *st);

/* Where a variable created in the strategy's scope gets its copies (TPUExtended._create_variable):
** with SPMD and more than one logical device per replica, a TPUReplicatedVariable per replica
** holding a copy on every logical device, so num_replicas * logical devices copies, replica by
** replica; otherwise one copy per replica on `logical_device` (the innermost
** experimental_logical_device, 0 outside any). Writes min(count, max) (replica, logical device)
** pairs and returns the count; -1 with the ValueError of check_logical_device. */
int ds_sharding_variable_copies(const ds_sharding_layout *l, int logical_device, int *replica, int *core,
                                int max, ds_status *st);

/* TPUStrategy.run(fn)'s validate_run_function: fn must be a tf.function (or a ConcreteFunction,
** or an object whose __call__ is one) when the call executes eagerly: NotImplementedError
** otherwise ("pure eager"). Returns 0 or -1. */
int ds_sharding_validate_run(int fn_is_compiled, int executing_eagerly, ds_status *st);

/* ---- annotations ------------------------------------------------------------------------- */

typedef enum {
  DS_SHARDING_MAXIMAL = 0,  /* assign_to_logical_device: one logical device holds it all */
  DS_SHARDING_TILED,        /* split_to_logical_devices: each logical device holds one tile */
  DS_SHARDING_REPLICATED    /* replicate_to_logical_devices: every logical device holds it all */
} ds_sharding_kind;

typedef struct ds_sharding {
  const md_tensor *tensor;  /* the annotated tensor, borrowed: the annotation copies nothing */
  ds_sharding_kind kind;    /* how the logical devices share it */
  int logical_device;       /* MAXIMAL: the device that holds it; -1 otherwise */
  int rank;                 /* TILED: the tensor's rank, the length of dims; 0 otherwise */
  int dims[MD_TENSOR_MAX_RANK]; /* TILED: partition_dimensions; the tile assignment is
                                   arange(prod(dims)).reshape(dims): logical device i holds the
                                   tile at i's row-major index in dims */
} ds_sharding;

/* experimental_assign_to_logical_device(t, id): ValueError in SPMD mode, or unless
** 0 <= id < logical devices per replica. Returns 0 or -1. */
int ds_sharding_assign_to_logical_device(const ds_sharding_layout *l, const md_tensor *t, int logical_device,
                                         ds_sharding *out, ds_status *st);
/* experimental_split_to_logical_devices(t, dims): ValueError, in TF's order, if ndims != rank,
** a dimension is not divisible by its split, or prod(dims) != logical devices per replica (and,
** where TF would fail in numpy, on a split < 1). Returns 0 or -1. */
int ds_sharding_split_to_logical_devices(const ds_sharding_layout *l, const md_tensor *t, int ndims,
                                         const int *dims, ds_sharding *out, ds_status *st);
/* experimental_replicate_to_logical_devices(t): no checks. */
void ds_sharding_replicate_to_logical_devices(const md_tensor *t, ds_sharding *out);

/* The piece of the tensor logical device `logical_device` holds: fills offset[] and shape[]
** (rank entries each) and returns 1, or returns 0 when it holds nothing: a MAXIMAL sharding on
** another device, a negative device, or a TILED one past prod(dims). */
int ds_sharding_tile(const ds_sharding *s, int logical_device, int64_t *offset, int64_t *shape);
/* That piece as a new tensor (a copy of its elements), or NULL when the device holds nothing. */
md_tensor *ds_sharding_tile_copy(const ds_sharding *s, int logical_device);

#endif
