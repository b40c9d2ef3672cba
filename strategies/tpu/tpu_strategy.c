/* tpu_strategy.c: TPUStrategy on a simulated slice (ds_tpu_strategy_). */
#include "strategies/tpu/tpu_strategy.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strategies/core/distribute.h"
#include "strategies/tpu/tpuInt.h"

/* Deeper experimental_logical_device nesting than any program needs. */
#define LOGICAL_MAX 16

/* experimental_logical_device scopes entered, innermost last: TF keeps one stack per strategy;
** entries name their strategy so that each sees only its own. */
static _Thread_local struct {
  const ds_strategy *s;   /* the strategy entered */
  int logical_device;     /* the id entered */
} logical_stack[LOGICAL_MAX];
static _Thread_local int logical_depth;  /* entries in logical_stack */

/* The group's routes: rank k is slice device device[k]. */
typedef struct rank_route {
  sim_tpu_slice *slice;   /* the slice the devices are on */
  int device[];           /* device of each rank */
} rank_route;

static size_t route_ranks(void *ctx, int from, int to, sim_link **out, size_t max) {
  const rank_route *rr = ctx;
  return sim_tpu_route(rr->slice, rr->device[from], rr->device[to], out, max);
}

static int variable_devices(const ds_strategy *s, int *replicas, const char ***device, ds_status *st);

/* What a TPUStrategy does where the Strategy base's rules are not its rules. */
static const ds__kind_ops TPU_OPS = { .variable_devices = variable_devices };

/* The layout of s when it is a TPUStrategy, else NULL. */
static const ds_sharding_layout *layout_of(const ds_strategy *s) {
  return ds__strategy_kind_ops(s) == &TPU_OPS ? ds__strategy_kind_table(s) : NULL;
}

/* sim/tpu's index of a device TF names "/job:J/replica:0/task:T/device:TPU:K". */
static int slice_device(const sim_tpu_slice *slice, const char *name) {
  int task = -1, ordinal = -1;
  const char *t = name;
  for (const char *p = name; *p; p++)
    if (p[0] == '/' && p[1] == 't') t = p;
  if (sscanf(t, "/task:%d/device:TPU:%d", &task, &ordinal) != 2) return -1;
  int per_host = sim_tpu_slice_devices(slice) / sim_tpu_slice_hosts(slice);
  if (task < 0 || ordinal < 0 || ordinal >= per_host || task >= sim_tpu_slice_hosts(slice)) return -1;
  return task * per_host + ordinal;
}

ds_strategy *ds_tpu_strategy_new(sim_engine *e, ds_kind kind, sim_tpu_slice *slice,
                                 const ds_sharding_layout *l, const ds_tpu_machine *m, sim_algo algo) {
  assert(kind == DS_TPU || kind == DS_GNN_RUNNER_TPU || kind == DS_TPU_V1);
  int replicas = ds_sharding_num_replicas_in_sync(l), cores = ds_sharding_num_logical_devices(l);
  int n = replicas * cores, hosts = sim_tpu_slice_hosts(slice);
  int whole = cores == 1 && replicas == sim_tpu_slice_devices(slice);
  sim_cpu **host = base_xcalloc((size_t)hosts, sizeof *host);
  for (int h = 0; h < hosts; h++) host[h] = sim_tpu_host_cpu(slice, h, m->host_flops_per_s);  /* the slice's */
  ds_device *table = base_xcalloc((size_t)n, sizeof *table);
  rank_route *rr = base_xcalloc(1, sizeof *rr + (size_t)replicas * sizeof rr->device[0]);
  int *replica_at_rank = base_xcalloc((size_t)replicas, sizeof *replica_at_rank);
  rr->slice = slice;
  for (int r = 0; r < replicas; r++)
    for (int c = 0; c < cores; c++) {
      const char *name = ds_sharding_device(l, r, c);
      int d = slice_device(slice, name);
      assert(d >= 0);  /* the layout was built from this slice's topology */
      table[r * cores + c] = (ds_device){
        .name = name, .worker = sim_tpu_device_host(slice, d), .cpu = sim_tpu_device_cpu(slice, d),
        .memory = sim_tpu_device_hbm(slice, d), .roofline = { m->compute_flops, m->hbm_bytes_per_s, m->op },
        .workspace = m->workspace_bytes, .host = host[sim_tpu_device_host(slice, d)],
        .infeed = sim_tpu_chip_pcie(slice, sim_tpu_device_chip(slice, d), 1) };
      if (c != 0) continue;
      int k = whole ? sim_tpu_device_grid_rank(slice, d) : r;
      rr->device[k] = d;
      replica_at_rank[k] = r;
    }
  sim_algo use = algo == SIM_ALGO_TORUS && !whole ? SIM_ALGO_RING : algo;
  ds_strategy *s = ds_strategy_new_table(e, kind, replicas, cores, table, route_ranks, rr, use);
  ds_strategy_set_exact_gather_shapes(s, 1);
  ds__strategy_set_kind(s, &TPU_OPS, l);
  ds__strategy_set_host(s, ds_sharding_host_device(l));
  /* TPUStrategy() without a resolver makes the default TPUClusterResolver of its TPU: one worker
  ** task per host, each with its devices. */
  ds_cluster_resolver cr = { .task_type = "worker", .task_id = 0, .num_workers = hosts,
                             .num_accelerators = sim_tpu_slice_devices(slice) / hosts };
  ds__strategy_set_resolver(s, &cr);
  if (replicas > 1) {
    ds_strategy_order_group(s, replica_at_rank, route_ranks, rr);
    if (use == SIM_ALGO_TORUS) sim_tpu_set_torus(ds_collective(s), slice);
    else sim_tpu_set_collective_cost(ds_collective(s), slice);
  } else {
    free(rr);
  }
  free(replica_at_rank);
  free(table);
  free(host);
  return s;
}

/* The group's routes over a multislice's ranks. */
typedef struct multi_route {
  sim_multislice *m;      /* the slices */
} multi_route;

static size_t route_multi(void *ctx, int from, int to, sim_link **out, size_t max) {
  return sim_multislice_route(((multi_route *)ctx)->m, from, to, out, max);
}

ds_strategy *ds_tpu_strategy_new_multislice(sim_engine *e, sim_multislice *ms, const ds_tpu_machine *m) {
  int slices = sim_multislice_slices(ms), replicas = sim_multislice_ranks(ms), n = replicas / slices;
  int hosts = sim_tpu_slice_hosts(sim_multislice_slice(ms, 0)), per_host = n / hosts;
  sim_cpu **host = base_xcalloc((size_t)(slices * hosts), sizeof *host);
  for (int h = 0; h < slices * hosts; h++)
    host[h] = sim_tpu_host_cpu(sim_multislice_slice(ms, h / hosts), h % hosts, m->host_flops_per_s);
  ds_device *table = base_xcalloc((size_t)replicas, sizeof *table);
  int *replica_at_rank = base_xcalloc((size_t)replicas, sizeof *replica_at_rank);
  for (int j = 0; j < slices; j++) {
    const sim_tpu_slice *slice = sim_multislice_slice(ms, j);
    for (int d = 0; d < n; d++) {
      int r = j * n + d, task = j * hosts + d / per_host;  /* TF's order: task, then ordinal */
      table[r] = (ds_device){
        .name = sim_tpu_device_name(slice, d), .worker = task, .cpu = sim_tpu_device_cpu(slice, d),
        .memory = sim_tpu_device_hbm(slice, d), .roofline = { m->compute_flops, m->hbm_bytes_per_s, m->op },
        .workspace = m->workspace_bytes, .host = host[task],
        .infeed = sim_tpu_chip_pcie(slice, sim_tpu_device_chip(slice, d), 1) };
      replica_at_rank[j * n + sim_tpu_device_grid_rank(slice, d)] = r;
    }
  }
  multi_route *mr = base_xcalloc(1, sizeof *mr);
  mr->m = ms;
  ds_strategy *s = ds_strategy_new_table(e, DS_TPU, replicas, 1, table, route_multi, mr, SIM_ALGO_TORUS);
  ds_strategy_set_exact_gather_shapes(s, 1);
  ds_cluster_resolver cr = { .task_type = "worker", .task_id = 0, .num_workers = slices * hosts,
                             .num_accelerators = per_host };
  ds__strategy_set_resolver(s, &cr);
  ds_strategy_order_group(s, replica_at_rank, route_multi, mr);
  ds_strategy_set_multislice(s, ms);
  free(replica_at_rank);
  free(table);
  free(host);
  return s;
}

const ds_sharding_layout *ds_tpu_strategy_layout(const ds_strategy *s) { return layout_of(s); }

/* The layout of a TPUStrategy; NULL with TypeError for any other strategy. */
static const ds_sharding_layout *tpu_layout(const ds_strategy *s, const char *method, ds_status *st) {
  const ds_sharding_layout *l = layout_of(s);
  if (l == NULL)
    ds_status_set(st, DS_TYPE_ERROR, "%s is a TPUStrategy method; this strategy is %s", method,
                  ds_kind_name(ds_strategy_kind(s)));
  return l;
}

int ds_tpu_strategy_run(ds_strategy *s, int fn_is_compiled, int executing_eagerly, ds_replica_fn fn,
                        void *user, int nargs, ds_value *const *args, int nresults, ds_value **results,
                        ds_status *st) {
  ds_status_clear(st);
  if (tpu_layout(s, "run", st) == NULL || ds_sharding_validate_run(fn_is_compiled, executing_eagerly, st))
    return -1;
  return ds_run(s, fn, user, nargs, args, nresults, results, st);
}

int ds_tpu_strategy_assign_to_logical_device(const ds_strategy *s, const md_tensor *t, int logical_device,
                                             ds_sharding *out, ds_status *st) {
  const ds_sharding_layout *l = tpu_layout(s, "experimental_assign_to_logical_device", st);
  return l ? ds_sharding_assign_to_logical_device(l, t, logical_device, out, st) : -1;
}

int ds_tpu_strategy_split_to_logical_devices(const ds_strategy *s, const md_tensor *t, int ndims,
                                             const int *dims, ds_sharding *out, ds_status *st) {
  const ds_sharding_layout *l = tpu_layout(s, "experimental_split_to_logical_devices", st);
  return l ? ds_sharding_split_to_logical_devices(l, t, ndims, dims, out, st) : -1;
}

int ds_tpu_strategy_replicate_to_logical_devices(const ds_strategy *s, const md_tensor *t, ds_sharding *out,
                                                 ds_status *st) {
  if (tpu_layout(s, "experimental_replicate_to_logical_devices", st) == NULL) return -1;
  ds_sharding_replicate_to_logical_devices(t, out);
  return 0;
}

int ds_tpu_strategy_logical_device_begin(ds_strategy *s, int logical_device, ds_status *st) {
  const ds_sharding_layout *l = tpu_layout(s, "extended.experimental_logical_device", st);
  if (l == NULL || ds_sharding_check_logical_device(l, logical_device, st) < 0) return -1;
  if (logical_depth == LOGICAL_MAX)
    return ds_status_set(st, DS_RUNTIME_ERROR, "experimental_logical_device nested deeper than %d",
                         LOGICAL_MAX);
  logical_stack[logical_depth].s = s;
  logical_stack[logical_depth++].logical_device = logical_device;
  return 0;
}

/* Index of the innermost entry of s in logical_stack, or -1. */
static int innermost(const ds_strategy *s) {
  for (int i = logical_depth - 1; i >= 0; i--)
    if (logical_stack[i].s == s) return i;
  return -1;
}

int ds_tpu_strategy_logical_device_end(ds_strategy *s, ds_status *st) {
  int i = innermost(s);
  if (i < 0 || i != logical_depth - 1)
    return ds_status_set(st, DS_RUNTIME_ERROR, "experimental_logical_device: no scope of this "
                         "strategy is the innermost one entered");
  logical_depth--;
  return 0;
}

int ds_tpu_strategy_logical_device(const ds_strategy *s) {
  int i = innermost(s);
  return i < 0 ? 0 : logical_stack[i].logical_device;
}

/* TPUExtended._create_variable's devices (ds__kind_ops.variable_devices): a copy per replica on
** the innermost experimental_logical_device, or under SPMD with several logical devices one on
** each of them. */
static int variable_devices(const ds_strategy *s, int *replicas, const char ***device, ds_status *st) {
  const ds_sharding_layout *l = layout_of(s);
  int logical = ds_tpu_strategy_logical_device(s);
  int total = ds_sharding_variable_copies(l, logical, NULL, NULL, 0, st);
  if (total < 0) return -1;
  *replicas = ds_sharding_num_replicas_in_sync(l);
  int *replica = base_xcalloc((size_t)total, sizeof *replica), *core = base_xcalloc((size_t)total, sizeof *core);
  ds_sharding_variable_copies(l, logical, replica, core, total, st);
  *device = base_xcalloc((size_t)total, sizeof **device);
  for (int j = 0; j < total; j++) (*device)[j] = ds_sharding_device(l, replica[j], core[j]);
  free(replica);
  free(core);
  return total;
}

/* What a strategy built from a resolver stands on; it owns all of it. */
typedef struct tpu_system {
  sim_tpu_slice *slice;     /* the slice's resources (which live in the engine) */
  ds_tpu_topology *topology;/* its Topology */
  ds_device_assignment *da; /* the replicas' devices when not every device is one; else NULL */
  ds_sharding_layout *layout; /* the strategy's [replica][logical device] table */
} tpu_system;

static void tpu_system_free(void *p) {
  tpu_system *sys = p;
  ds_sharding_layout_free(sys->layout);
  ds_device_assignment_free(sys->da);
  ds_tpu_topology_free(sys->topology);
  sim_tpu_slice_free(sys->slice);
  free(sys);
}

ds_strategy *ds__tpu_strategy_on_resolver(sim_engine *e, ds_kind kind, const ds_tpu_resolver *r,
                                          int ndevices, const int *devices, const ds_tpu_machine *m,
                                          sim_algo algo, const sim_tpu_overrides *overrides,
                                          sim_tpu_slice **slice_out) {
  int dims[3];
  ds_tpu_resolver_dims(r, dims);
  tpu_system *sys = base_xcalloc(1, sizeof *sys);
  sys->slice = sim_tpu_slice_new(e, ds_tpu_resolver_generation(r), dims, overrides);
  sys->topology = ds__tpu_system_topology(r);
  if (ndevices > 0) {
    int per_task = ds_tpu_topology_num_tpus_per_task(sys->topology);
    int *coords = base_xcalloc((size_t)ndevices * DS_TPU_MESH_RANK, sizeof *coords);
    for (int i = 0; i < ndevices; i++)
      memcpy(coords + (size_t)i * DS_TPU_MESH_RANK,
             ds_tpu_topology_device_coordinates(sys->topology, devices[i] / per_task, devices[i] % per_task),
             DS_TPU_MESH_RANK * sizeof *coords);
    sys->da = ds_device_assignment_new(sys->topology, ndevices, 1, DS_TPU_MESH_RANK, coords, NULL);
    assert(sys->da != NULL);  /* the coordinates were read from the topology itself */
    free(coords);
  }
  const char *job = strcmp(ds_tpu_resolver_tpu(r), "local") ? ds_tpu_resolver_job_name(r) : "localhost";
  sys->layout = ds_sharding_layout_new(sys->topology, sys->da, 0, job);
  ds_strategy *s = ds_tpu_strategy_new(e, kind, sys->slice, sys->layout, m, algo);
  ds__strategy_own(s, tpu_system_free, sys);
  ds_cluster_resolver cr = { .task_id = 0, .num_workers = ds_tpu_resolver_num_tasks(r),
                             .num_accelerators = ds_tpu_resolver_num_accelerators(r) };
  snprintf(cr.task_type, sizeof cr.task_type, "%s", ds_tpu_resolver_job_name(r));
  ds__strategy_set_resolver(s, &cr);
  if (slice_out) *slice_out = sys->slice;
  return s;
}
