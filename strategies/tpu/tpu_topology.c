/*
** tpu_topology.c: TPUClusterResolver, initialize_tpu_system and Topology (ds_tpu_).
**
** TF's topology.py keeps two inverse tables over the mesh (task and device ordinal at each
** [x, y, z, core]); so does this, filled from the coordinate table in task-major order so that
** a repeated coordinate keeps the last device, as numpy's assignment does.
*/
#include "strategies/tpu/tpu_topology.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strategies/tpu/tpuInt.h"

#define GRPC_PREFIX "grpc://"
#define TPU_PORT 8470             /* the port Cloud TPU workers serve gRPC on */
/* The inverse tables cost two ints per mesh position: 2^24 is 4096 times a full v5p pod. */
#define MAX_MESH_POSITIONS (1 << 24)

struct ds_tpu_resolver {
  char tpu[DS_DEVICE_NAME_MAX];   /* "local", or the name or address given ("" on a TPU VM) */
  char master[DS_DEVICE_NAME_MAX];/* master(): "" for local */
  const sim_tpu_generation *gen;  /* the slice's generation */
  int dims[3];                    /* its chips per axis */
  int initialized;                /* initialize_tpu_system has run */
};

struct ds_tpu_topology {
  int mesh[DS_TPU_MESH_RANK];     /* mesh_shape */
  int tasks;                      /* num_tasks */
  int per_task;                   /* num_tpus_per_task */
  int *coords;                    /* device_coordinates: tasks * per_task * 4 */
  int *task_at;                   /* per mesh position (row-major over mesh): task, or -1 */
  int *device_at;                 /* per mesh position: device ordinal, or -1 */
  int missing;                    /* mesh positions holding no device */
};

/* ---- resolver ------------------------------------------------------------------------------ */

ds_tpu_resolver *ds_tpu_resolver_new(const char *tpu, const char *slice, const char *topology,
                                     ds_status *st) {
  char err[256];
  const sim_tpu_generation *g;
  int chips, dims[3];
  if (tpu == NULL) tpu = "";
  if (slice == NULL || !slice[0]) {
    ds_status_set(st, DS_VALUE_ERROR, "TPUClusterResolver(tpu=\"%s\"): no TPU slice type (such as v4-32) for it",
                  tpu);
    return NULL;
  }
  if (sim_tpu_slice_parse(slice, &g, &chips, dims, err, sizeof err) != 0 ||
      (topology && topology[0] && sim_tpu_topology_parse(g, chips, topology, dims, err, sizeof err) != 0)) {
    ds_status_set(st, DS_VALUE_ERROR, "TPUClusterResolver(tpu=\"%s\"): %s", tpu, err);
    return NULL;
  }
  ds_tpu_resolver *r = base_xcalloc(1, sizeof *r);
  snprintf(r->tpu, sizeof r->tpu, "%s", tpu);
  r->gen = g;
  memcpy(r->dims, dims, sizeof r->dims);
  if (!strncmp(tpu, GRPC_PREFIX, strlen(GRPC_PREFIX)))
    snprintf(r->master, sizeof r->master, "%s", tpu);
  else if (strcmp(tpu, "local") != 0) {
    char addr[64];
    snprintf(r->master, sizeof r->master, GRPC_PREFIX "%s", ds_tpu_resolver_task_address(r, 0, addr, sizeof addr));
  }
  return r;
}

ds_tpu_resolver *ds_tpu_resolver_connect(const char *tpu, const char *slice, const char *topology,
                                         ds_status *st) {
  ds_tpu_resolver *r = ds_tpu_resolver_new(tpu, slice, topology, st);
  if (r != NULL) ds_tpu_topology_free(ds_tpu_initialize_system(r));
  return r;
}

void ds_tpu_resolver_free(ds_tpu_resolver *r) { free(r); }

const char *ds_tpu_resolver_tpu(const ds_tpu_resolver *r) { return r->tpu; }
const char *ds_tpu_resolver_job_name(const ds_tpu_resolver *r) { (void)r; return "worker"; }
const char *ds_tpu_resolver_master(const ds_tpu_resolver *r) { return r->master; }

const char *ds_tpu_resolver_task_address(const ds_tpu_resolver *r, int task, char *buf, size_t len) {
  if (!strcmp(r->tpu, "local") || task < 0 || task >= ds_tpu_resolver_num_tasks(r)) return NULL;
  if (task == 0 && !strncmp(r->tpu, GRPC_PREFIX, strlen(GRPC_PREFIX)))
    snprintf(buf, len, "%s", r->tpu + strlen(GRPC_PREFIX));
  else
    snprintf(buf, len, "10.0.%d.%d:%d", task / 250, task % 250 + 2, TPU_PORT);
  return buf;
}

int ds_tpu_resolver_num_tasks(const ds_tpu_resolver *r) { return sim_tpu_layout_hosts(r->gen, r->dims); }
int ds_tpu_resolver_num_accelerators(const ds_tpu_resolver *r) {
  return sim_tpu_layout_devices_per_host(r->gen, r->dims);
}
const sim_tpu_generation *ds_tpu_resolver_generation(const ds_tpu_resolver *r) { return r->gen; }
void ds_tpu_resolver_dims(const ds_tpu_resolver *r, int dims[3]) { memcpy(dims, r->dims, sizeof r->dims); }
int ds_tpu_resolver_initialized(const ds_tpu_resolver *r) { return r->initialized; }

/* ---- topology ------------------------------------------------------------------------------ */

/* Row-major index of coords in the mesh, or -1 outside it. */
static int mesh_index(const ds_tpu_topology *t, const int *coords) {
  int index = 0;
  for (int a = 0; a < DS_TPU_MESH_RANK; a++) {
    if (coords[a] < 0 || coords[a] >= t->mesh[a]) return -1;
    index = index * t->mesh[a] + coords[a];
  }
  return index;
}

static int mesh_volume(const int *mesh) {
  int v = 1;
  for (int a = 0; a < DS_TPU_MESH_RANK; a++) v *= mesh[a];
  return v;
}

/* Takes ownership of coords, which the caller has checked lie in the mesh. */
static ds_tpu_topology *topology_build(const int *mesh, int tasks, int per_task, int *coords) {
  ds_tpu_topology *t = base_xcalloc(1, sizeof *t);
  memcpy(t->mesh, mesh, sizeof t->mesh);
  t->tasks = tasks;
  t->per_task = per_task;
  t->coords = coords;
  int volume = mesh_volume(mesh);
  t->task_at = base_xcalloc((size_t)volume, sizeof *t->task_at);
  t->device_at = base_xcalloc((size_t)volume, sizeof *t->device_at);
  for (int i = 0; i < volume; i++) t->task_at[i] = t->device_at[i] = -1;
  for (int task = 0; task < tasks; task++)
    for (int d = 0; d < per_task; d++) {
      int i = mesh_index(t, coords + ((size_t)task * (size_t)per_task + (size_t)d) * DS_TPU_MESH_RANK);
      t->task_at[i] = task;
      t->device_at[i] = d;
    }
  for (int i = 0; i < volume; i++) t->missing += t->task_at[i] < 0;
  return t;
}

ds_tpu_topology *ds__tpu_system_topology(const ds_tpu_resolver *r) {
  const sim_tpu_figures *f = sim_tpu_generation_figures(r->gen);
  int mesh[DS_TPU_MESH_RANK] = {r->dims[0], r->dims[1], r->dims[2], f->devices_per_chip};
  int tasks = sim_tpu_layout_hosts(r->gen, r->dims), per_task = sim_tpu_layout_devices_per_host(r->gen, r->dims);
  int *coords = base_xcalloc((size_t)tasks * (size_t)per_task * DS_TPU_MESH_RANK, sizeof *coords);
  for (int d = 0; d < tasks * per_task; d++) {
    int *c = coords + (size_t)d * DS_TPU_MESH_RANK;
    sim_tpu_layout_device_coords(r->gen, r->dims, d, c);
    c[3] = d % f->devices_per_chip;
  }
  return topology_build(mesh, tasks, per_task, coords);
}

ds_tpu_topology *ds_tpu_initialize_system(ds_tpu_resolver *r) {
  r->initialized = 1;
  return ds__tpu_system_topology(r);
}

const char *ds__ints_str(const int *v, int n, char *buf, size_t len) {
  size_t used = 0;
  snprintf(buf, len, "[]");
  for (int i = 0; i < n && used < len; i++) {
    int w = snprintf(buf + used, len - used, "%s%d%s", i ? ", " : "[", v[i], i == n - 1 ? "]" : "");
    if (w < 0) break;
    used += (size_t)w;
  }
  return buf;
}

ds_tpu_topology *ds_tpu_topology_new(int mesh_rank, const int *mesh_shape, int tasks,
                                     int devices_per_task, int coord_rank, const int *coords,
                                     ds_status *st) {
  char s[128];
  int positive = mesh_rank == DS_TPU_MESH_RANK;
  for (int a = 0; positive && a < mesh_rank; a++) positive = mesh_shape[a] >= 1;
  if (!positive) {
    ds_status_set(st, DS_VALUE_ERROR, "`mesh_shape` must be a sequence of 4 positive entries; got %s",
                  ds__ints_str(mesh_shape, mesh_rank > 0 ? mesh_rank : 0, s, sizeof s));
    return NULL;
  }
  long long volume = 1;
  for (int a = 0; a < DS_TPU_MESH_RANK; a++) volume *= mesh_shape[a];
  if (volume > MAX_MESH_POSITIONS) {
    ds_status_set(st, DS_VALUE_ERROR, "`mesh_shape` %s has %lld positions; the simulator maps at most %d",
                  ds__ints_str(mesh_shape, DS_TPU_MESH_RANK, s, sizeof s), volume, MAX_MESH_POSITIONS);
    return NULL;
  }
  if (coord_rank != mesh_rank || tasks < 0 || devices_per_task < 0) {
    ds_status_set(st, DS_VALUE_ERROR,
                  "`device_coordinates` must be a rank 3 int32 array with minor dimension equal to the mesh "
                  "shape rank (4); got shape [%d, %d, %d]", tasks, devices_per_task, coord_rank);
    return NULL;
  }
  size_t n = (size_t)tasks * (size_t)devices_per_task;
  for (size_t d = 0; d < n; d++) {
    const int *c = coords + d * DS_TPU_MESH_RANK;
    for (int a = 0; a < DS_TPU_MESH_RANK; a++)
      if (c[a] < 0 || c[a] >= mesh_shape[a]) {
        ds_status_set(st, DS_VALUE_ERROR, "`device_coordinates` of task %d device %d are %s, outside the mesh %s",
                      (int)(d / (size_t)devices_per_task), (int)(d % (size_t)devices_per_task),
                      ds__ints_str(c, DS_TPU_MESH_RANK, s, sizeof s / 2),
                      ds__ints_str(mesh_shape, DS_TPU_MESH_RANK, s + sizeof s / 2, sizeof s / 2));
        return NULL;
      }
  }
  /* One spare int so that a topology of no devices still gets a distinct allocation. */
  int *copy = base_xcalloc(n * DS_TPU_MESH_RANK + 1, sizeof *copy);
  memcpy(copy, coords, n * DS_TPU_MESH_RANK * sizeof *copy);
  return topology_build(mesh_shape, tasks, devices_per_task, copy);
}

void ds_tpu_topology_free(ds_tpu_topology *t) {
  if (t == NULL) return;
  free(t->coords);
  free(t->task_at);
  free(t->device_at);
  free(t);
}

const int *ds_tpu_topology_mesh_shape(const ds_tpu_topology *t) { return t->mesh; }
int ds_tpu_topology_mesh_rank(const ds_tpu_topology *t) { (void)t; return DS_TPU_MESH_RANK; }
int ds_tpu_topology_num_tasks(const ds_tpu_topology *t) { return t->tasks; }
int ds_tpu_topology_num_tpus_per_task(const ds_tpu_topology *t) { return t->per_task; }
int ds_tpu_topology_missing_devices(const ds_tpu_topology *t) { return t->missing; }

const int *ds_tpu_topology_device_coordinates(const ds_tpu_topology *t, int task, int device) {
  if (task < 0 || task >= t->tasks || device < 0 || device >= t->per_task) return NULL;
  return t->coords + ((size_t)task * (size_t)t->per_task + (size_t)device) * DS_TPU_MESH_RANK;
}

/* The mesh index of coords, or -1 with a ValueError outside the mesh. */
static int checked_index(const ds_tpu_topology *t, const int *coords, ds_status *st) {
  int i = mesh_index(t, coords);
  if (i < 0) {
    char c[64], m[64];
    ds_status_set(st, DS_VALUE_ERROR, "coordinates %s lie outside the TPU mesh %s",
                  ds__ints_str(coords, DS_TPU_MESH_RANK, c, sizeof c),
                  ds__ints_str(t->mesh, DS_TPU_MESH_RANK, m, sizeof m));
  }
  return i;
}

int ds_tpu_topology_task_ordinal_at_coordinates(const ds_tpu_topology *t, const int *coords,
                                                ds_status *st) {
  int i = checked_index(t, coords, st);
  return i < 0 ? -1 : t->task_at[i];
}

int ds_tpu_topology_tpu_device_ordinal_at_coordinates(const ds_tpu_topology *t, const int *coords,
                                                      ds_status *st) {
  int i = checked_index(t, coords, st);
  return i < 0 ? -1 : t->device_at[i];
}

/* Formats "<job part>/task:T/device:<kind>:<K>" for the device at coords; NULL with a
** ValueError outside the mesh or where no device is. */
static const char *device_name(const ds_tpu_topology *t, const int *coords, const char *job, int tpu,
                               char *buf, size_t len, ds_status *st) {
  int i = checked_index(t, coords, st);
  if (i < 0) return NULL;
  if (t->task_at[i] < 0) {
    char c[64];
    ds_status_set(st, DS_VALUE_ERROR, "no TPU device at coordinates %s (a missing device)",
                  ds__ints_str(coords, DS_TPU_MESH_RANK, c, sizeof c));
    return NULL;
  }
  snprintf(buf, len, "%s%s/task:%d/device:%s:%d", job ? "/job:" : "", job ? job : "", t->task_at[i],
           tpu ? "TPU" : "CPU", tpu ? t->device_at[i] : 0);
  return buf;
}

const char *ds_tpu_topology_cpu_device_name_at_coordinates(const ds_tpu_topology *t,
                                                           const int *coords, const char *job,
                                                           char *buf, size_t len, ds_status *st) {
  return device_name(t, coords, job, 0, buf, len, st);
}

const char *ds_tpu_topology_tpu_device_name_at_coordinates(const ds_tpu_topology *t,
                                                           const int *coords, const char *job,
                                                           char *buf, size_t len, ds_status *st) {
  return device_name(t, coords, job, 1, buf, len, st);
}
