/*
** device_assignment.h: tf.tpu.experimental.DeviceAssignment (ds_device_assignment_).
**
** A device assignment maps each (replica, logical core) of a computation to the coordinates
** [x, y, z, core] of a TPU device in a Topology (tpu_topology.h). build() is TensorFlow's
** device_assignment() from python/tpu/device_assignment.py, ported step for step:
** - computation_shape and computation_stride default to all ones; the footprint is their
**   product; block_counts = mesh // footprint; replica_counts = block_counts * stride;
**   max_replicas = prod(replica_counts).
** - replica_shape: the axes are visited sorted by (replica_counts[i], (i + 1) % 4), so ties go
**   core axis, x, y, z; each takes min(ceil(remaining ** (1 / remaining_dims)), count) with
**   the floating-point power (27 ** (1/3) is 3.0000000000000004, whose ceiling is 4), and
**   remaining becomes ceil(remaining / shape).
** - 3-D ring tiling when computation_shape[3] == mesh[3], the stride is all ones and every
**   replica that fits is asked for: replica r sits at the r-th chip of a ring over
**   replica_shape[:3] (_ring_3d), its cores along a ring over computation_shape[:3], the core
**   index fastest.
** - Otherwise replica r is a mixed-radix number over replica_shape (core axis fastest, then x,
**   y, z); its offset is (pos // stride) * footprint + pos % stride, and its logical cores
**   enumerate the grid arange(0, shape * stride, stride) with the last axis fastest.
** - A topology with missing devices takes TF's degraded-slice path: the stride must be all ones
**   and replicas take devices in task order.
** The assignment keeps a pointer to its topology, which must outlive it.
*/
#ifndef PODSIM_DEVICE_ASSIGNMENT_H
#define PODSIM_DEVICE_ASSIGNMENT_H

#include <stddef.h>

#include "strategies/core/status.h"
#include "strategies/tpu/tpu_topology.h"

/* device_assignment.DeviceOrderMode. */
typedef enum {
  DS_DEVICE_ORDER_AUTO = 0,   /* rings when 3-D tiling applies, else the mixed-radix mesh */
  DS_DEVICE_ORDER_RING,       /* rings; ValueError where 3-D tiling does not apply */
  DS_DEVICE_ORDER_MESH        /* the mixed-radix mesh always */
} ds_device_order_mode;

typedef struct ds_device_assignment ds_device_assignment;

/* The replicas of this computation that fit in the topology: prod((mesh // (shape * stride)) *
** stride). computation_shape / computation_stride NULL mean None (all ones); otherwise they
** hold shape_len / stride_len entries. -1 with a ValueError when the shape or stride has the
** wrong length or an entry < 1, or the footprint exceeds the mesh on some axis. */
int ds_device_assignment_max_replicas(const ds_tpu_topology *t, int shape_len, const int *computation_shape,
                                      int stride_len, const int *computation_stride, ds_status *st);

/* DeviceAssignment.build(topology, computation_shape, computation_stride, num_replicas) with
** device_order_mode: the ValueErrors of max_replicas, then num_replicas < 1 or > max_replicas,
** RING where 3-D tiling does not apply, and on a degraded topology a stride other than all ones
** or more cores asked for than it has. NULL on error. */
ds_device_assignment *ds_device_assignment_build(const ds_tpu_topology *t, int shape_len,
                                                 const int *computation_shape, int stride_len,
                                                 const int *computation_stride, int num_replicas,
                                                 ds_device_order_mode mode, ds_status *st);

/* DeviceAssignment(topology, core_assignment): core_assignment holds num_replicas x
** cores_per_replica x minor ints. ValueError unless minor == the topology's rank (4), the counts
** are >= 0 and every coordinate lies in the mesh. */
ds_device_assignment *ds_device_assignment_new(const ds_tpu_topology *t, int num_replicas, int cores_per_replica,
                                               int minor, const int *core_assignment, ds_status *st);
void ds_device_assignment_free(ds_device_assignment *da);

const ds_tpu_topology *ds_device_assignment_topology(const ds_device_assignment *da);
int ds_device_assignment_num_replicas(const ds_device_assignment *da);
int ds_device_assignment_num_cores_per_replica(const ds_device_assignment *da);
/* core_assignment: [num_replicas][num_cores_per_replica][4], row-major. */
const int *ds_device_assignment_core_assignment(const ds_device_assignment *da);

/* The accessors below take replica and logical_core explicitly (TF's defaults are 0 and 0) and
** fail with a ValueError when either is out of range (TF's numpy IndexError). */

/* coordinates(replica, logical_core): 4 ints, or NULL. */
const int *ds_device_assignment_coordinates(const ds_device_assignment *da, int replica, int logical_core,
                                            ds_status *st);
/* lookup_replicas(task_id, logical_core): the replicas, ascending, whose logical_core lives on
** that task; writes min(count, max) of them to out and returns the count. -1 with a ValueError
** when there is none. */
int ds_device_assignment_lookup_replicas(const ds_device_assignment *da, int task_id, int logical_core,
                                         int *out, int max, ds_status *st);
/* tpu_ordinal(replica, logical_core): K of the device's "device:TPU:K", or -1. */
int ds_device_assignment_tpu_ordinal(const ds_device_assignment *da, int replica, int logical_core,
                                     ds_status *st);
/* host_device / tpu_device(replica, logical_core, job): "/job:<job>/task:T/device:CPU:0" and
** "/job:<job>/task:T/device:TPU:K" (no "/job:" part when job is NULL) into buf, or NULL. */
const char *ds_device_assignment_host_device(const ds_device_assignment *da, int replica, int logical_core,
                                             const char *job, char *buf, size_t len, ds_status *st);
const char *ds_device_assignment_tpu_device(const ds_device_assignment *da, int replica, int logical_core,
                                            const char *job, char *buf, size_t len, ds_status *st);

#endif
