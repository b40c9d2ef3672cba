/*
** tpu_topology.h: TensorFlow's TPUClusterResolver, initialize_tpu_system and
** tf.tpu.experimental.Topology over the simulated TPU slices of sim/tpu.h (ds_tpu_).
**
** A resolver names a TPU as TensorFlow does ("" on a Cloud TPU VM, "local" for a directly
** attached TPU, a TPU name, or a "grpc://host:port" address); in the simulator the slice
** behind it is given by the scenario's slice spec ("v4-32", "v5litepod-16", "v3-8") and an
** optional topology ("2x2x4"). initialize_tpu_system returns the Topology TensorFlow reports
** for that slice:
**   mesh_shape = [x, y, z, cores_per_chip]: chips per axis (z = 1 on v2, v3, v5e, v6e), and
**   the TF devices of one chip: 2 on v2/v3 (one per TensorCore), 1 on v4/v5p (megacore: the
**   chip's two cores are one device) and on v5e/v6e (one core);
**   device_coordinates[task][device] = [x, y, z, core] of TF device
**   "/job:worker/replica:0/task:<task>/device:TPU:<device>", hosts in sim/tpu.h's order.
** A Topology can also be built from an explicit mesh and coordinate table, as TF's
** Topology(mesh_shape=..., device_coordinates=...) is; coordinates no device occupies are its
** missing devices (a degraded slice).
*/
#ifndef PODSIM_TPU_TOPOLOGY_H
#define PODSIM_TPU_TOPOLOGY_H

#include <stddef.h>

#include "sim/tpu.h"
#include "strategies/core/status.h"

#define DS_TPU_MESH_RANK 4   /* x, y, z, core: the only rank TF's Topology accepts */

typedef struct ds_tpu_resolver ds_tpu_resolver;
typedef struct ds_tpu_topology ds_tpu_topology;

/* ---- TPUClusterResolver ----------------------------------------------------------------- */

/* TPUClusterResolver(tpu=tpu) for a slice of type `slice` (required: "v4-32") and `topology`
** (NULL or "" for the slice's default, else "AxB" / "AxBxC"). tpu NULL is taken as "".
** ValueError with sim/tpu's message (the valid names or sizes) on a bad slice or topology. */
ds_tpu_resolver *ds_tpu_resolver_new(const char *tpu, const char *slice, const char *topology,
                                     ds_status *st);
/* TPUClusterResolver.connect(tpu): the resolver, connected, with the TPU system initialized
** (what TF-GNN's runner.TPUStrategy(tpu) does before it builds the strategy). */
ds_tpu_resolver *ds_tpu_resolver_connect(const char *tpu, const char *slice, const char *topology,
                                         ds_status *st);
void ds_tpu_resolver_free(ds_tpu_resolver *r);

const char *ds_tpu_resolver_tpu(const ds_tpu_resolver *r);      /* "local", or the name given */
const char *ds_tpu_resolver_job_name(const ds_tpu_resolver *r); /* task_type: "worker" */
/* master(): "" for "local"; the address itself when tpu is a grpc:// address; otherwise
** worker 0's simulated endpoint, "grpc://10.0.0.2:8470" (see ds_tpu_resolver_task_address). */
const char *ds_tpu_resolver_master(const ds_tpu_resolver *r);
/* The simulated cluster_spec: the worker job has one task per host, task t at
** "10.0.<t / 250>.<t % 250 + 2>:8470" (written into buf). "local" has an empty cluster spec:
** NULL. A tpu given as a grpc:// address is task 0's address. */
const char *ds_tpu_resolver_task_address(const ds_tpu_resolver *r, int task, char *buf, size_t len);
int ds_tpu_resolver_num_tasks(const ds_tpu_resolver *r);
/* num_accelerators()["TPU"]: TPU devices per host. */
int ds_tpu_resolver_num_accelerators(const ds_tpu_resolver *r);
/* The simulated slice behind the resolver: generation and chips per axis. */
const sim_tpu_generation *ds_tpu_resolver_generation(const ds_tpu_resolver *r);
void ds_tpu_resolver_dims(const ds_tpu_resolver *r, int dims[3]);
/* Whether initialize_tpu_system has run on this resolver (connect runs it). */
int ds_tpu_resolver_initialized(const ds_tpu_resolver *r);

/* ---- initialize_tpu_system and Topology -------------------------------------------------- */

/* tf.tpu.experimental.initialize_tpu_system(resolver): initializes (again, if it was: TF then
** clears its caches) and returns the slice's Topology, which the caller frees. Never fails on a
** resolver ds_tpu_resolver_new accepted. */
ds_tpu_topology *ds_tpu_initialize_system(ds_tpu_resolver *r);

/* Topology(mesh_shape, device_coordinates): mesh_rank entries of mesh_shape, and coords holding
** tasks x devices_per_task x coord_rank ints. ValueError unless mesh_rank == 4 with positive
** entries, coord_rank == mesh_rank, tasks >= 0, devices_per_task >= 0, and every coordinate lies
** in the mesh (and the mesh has at most 2^24 positions). Two devices at the same coordinates:
** the later one wins, as in TF. */
ds_tpu_topology *ds_tpu_topology_new(int mesh_rank, const int *mesh_shape, int tasks,
                                     int devices_per_task, int coord_rank, const int *coords,
                                     ds_status *st);
void ds_tpu_topology_free(ds_tpu_topology *t);

const int *ds_tpu_topology_mesh_shape(const ds_tpu_topology *t);       /* 4 entries */
int        ds_tpu_topology_mesh_rank(const ds_tpu_topology *t);        /* 4 */
int        ds_tpu_topology_num_tasks(const ds_tpu_topology *t);
int        ds_tpu_topology_num_tpus_per_task(const ds_tpu_topology *t);
/* device_coordinates[task][device]: 4 ints; NULL when task or device is out of range. */
const int *ds_tpu_topology_device_coordinates(const ds_tpu_topology *t, int task, int device);
/* Mesh positions no device occupies. */
int        ds_tpu_topology_missing_devices(const ds_tpu_topology *t);

/* The lookups by coordinates (4 ints). ValueError when the coordinates lie outside the mesh;
** -1 without an error when they are in the mesh but no device is there (TF's -1 entries). */
int ds_tpu_topology_task_ordinal_at_coordinates(const ds_tpu_topology *t, const int *coords,
                                                ds_status *st);
int ds_tpu_topology_tpu_device_ordinal_at_coordinates(const ds_tpu_topology *t, const int *coords,
                                                      ds_status *st);
/* "/job:<job>/task:<T>/device:CPU:0" ("/task:<T>/device:CPU:0" when job is NULL), and
** ".../device:TPU:<K>", into buf; NULL with ValueError outside the mesh or on a missing device. */
const char *ds_tpu_topology_cpu_device_name_at_coordinates(const ds_tpu_topology *t,
                                                           const int *coords, const char *job,
                                                           char *buf, size_t len, ds_status *st);
const char *ds_tpu_topology_tpu_device_name_at_coordinates(const ds_tpu_topology *t,
                                                           const int *coords, const char *job,
                                                           char *buf, size_t len, ds_status *st);

#endif
