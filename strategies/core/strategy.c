/*
** strategy.c: replicas, their devices and the cross-replica sum (ds_).
**
** default and one_device run one replica on worker 0 ("/job:localhost/..." as a single-process
** TF program names it); multi_worker_mirrored runs one replica per accelerator of every worker
** ("/job:worker/replica:0/task:T/device:GPU:K"), or per worker CPU ("...device:CPU:0"). Workers
** are joined by the fabric; an accelerator reaches everything through its link to its VM, so a
** transfer between replicas crosses [accelerator up] [fabric route between VMs] [accelerator down].
**
** GPU systems (ds_accelerators.nvlink_bytes_per_s > 0, the dgx-* catalogue entries) are wired
** as NVIDIA builds them: the GPUs of a VM share its NVSwitches, and GPU k of every VM has a NIC
** on rail k (one non-blocking switch per GPU index, the DGX SuperPOD's rail-optimised network).
** Routes between their replicas, none of them through `link` or the fabric:
**   same VM:                     [copy_i, nvl.up_i, nvl.down_j]
**   other VM, same GPU index:    [nic.out_i, nic.in_j]
**   other VM, other index k:     [copy_i, nvl.up_i, nvl.down_k, nic.out_k, nic.in_j] (NCCL's PXN:
**                                through the VM's GPU on the receiver's rail)
** copy is the rate a GPU's kernels push through NVLink (NCCL's Simple ceiling, below line rate);
** NVLink, copy and NICs have no latency of their own: NCCL's model charges the steps'.
*/
#include "strategies/core/strategy.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sim/nccl.h"
#include "strategies/core/distribute.h"
#include "strategies/core/strategiesInt.h"

typedef struct ds_replica {
  char device[DS_DEVICE_NAME_MAX];        /* TF device name */
  int worker;             /* index of its VM */
  sim_cpu *cpu;           /* its compute: the accelerator, or the VM's CPU */
  sim_mempool *memory;    /* the accelerator's HBM, or the VM's RAM */
  sim_roofline roofline;  /* compute and memory roofs of that device */
  double workspace;       /* runtime scratch reserved on the device */
  sim_link *up;           /* accelerator -> VM, NULL for a CPU replica */
  sim_link *down;         /* VM -> accelerator, NULL for a CPU replica */
  int gpu;                /* GPU system: its index in the VM (its rail); -1 for another
                             accelerator, unused on a CPU */
  sim_link *copy;         /* GPU system: its kernels' NVLink rate (NULL otherwise) */
  sim_link *nvl_up;       /* ... its NVLink to the switches */
  sim_link *nvl_down;     /* ... and from them */
  sim_link *nic_out;      /* ... its NIC's egress */
  sim_link *nic_in;       /* ... and ingress */
} ds_replica;

struct ds_strategy {
  ds_kind kind;           /* which strategy */
  sim_engine *engine;     /* where run() drives the replicas */
  int nreplicas;          /* num_replicas_in_sync */
  int cores;              /* logical cores per replica (1 but for TPU tables) */
  ds_replica *replicas;   /* nreplicas * cores entries, [replica][core] */
  int nworkers;           /* host tasks (VMs) that feed replicas */
  sim_cpu **hosts;        /* each host's CPU, where its input pipeline runs */
  char host[DS_DEVICE_NAME_MAX]; /* where reduce and gather put their result */
  int exact_gather;       /* gather demands one shape for every component (TPU) */
  sim_fabric *fabric;     /* between the workers that hold replicas; NULL with one worker */
  sim_collective *group;  /* the replicas' all-reduce group, NULL for a single replica */
  int *rank_of;           /* replica -> its rank in group; NULL: the replica index */
  void *group_ctx;        /* route context of an ordered group, owned */
  sim_algo algo;          /* the gradient all-reduce algorithm */
  sim_multislice *multi;  /* several TPU slices: the gradient all-reduce is their hierarchical
                             one (borrowed); NULL otherwise */
  const ds__kind_ops *kind_ops; /* what its kind's own folder does (strategiesInt.h), or NULL */
  const void *kind_table; /* the table they read (TPUStrategy's layout), borrowed, or NULL */
  void (*owned_free)(void *); /* releases what the strategy's builder left to it, or NULL */
  void *owned;            /* its argument */
  int has_resolver;       /* a TPUStrategy: Strategy.cluster_resolver is `resolver` */
  ds_cluster_resolver resolver; /* what its TPUClusterResolver says of the cluster */
};

/* In ds_kind order. tpu_v1 follows its own rules (tpu_v1.c), not TPUStrategy's. */
static const ds_kind_traits KINDS[] = {
  /*                              name                   tpu partial multi accel devices mirrored ps gather coord */
  [DS_DEFAULT] =               { "default",               0, 0, 0, 0, 0, 0, 0, 1, 0 },
  [DS_ONE_DEVICE] =            { "one_device",            0, 0, 0, 0, 1, 0, 0, 1, 0 },
  [DS_MULTI_WORKER_MIRRORED] = { "multi_worker_mirrored", 0, 1, 1, 1, 1, 1, 0, 1, 0 },
  [DS_MIRRORED] =              { "mirrored",              0, 1, 0, 1, 1, 1, 0, 1, 0 },
  [DS_TPU] =                   { "tpu",                   1, 0, 0, 0, 1, 1, 0, 1, 0 },
  [DS_GNN_RUNNER_TPU] =        { "gnn_runner_tpu",        1, 0, 0, 0, 1, 1, 0, 1, 0 },
  [DS_TPU_V1] =                { "tpu_v1",                0, 0, 0, 0, 1, 1, 0, 1, 0 },
  [DS_PARAMETER_SERVER] =      { "parameter_server",      0, 0, 0, 0, 1, 1, 1, 0, 1 },
};

const ds_kind_traits *ds__kind_traits(ds_kind kind) {
  assert(kind >= 0 && (size_t)kind < sizeof KINDS / sizeof KINDS[0]);
  return &KINDS[kind];
}

const ds_kind_traits *ds__traits(const ds_strategy *s) { return ds__kind_traits(s->kind); }

const char *ds_kind_name(ds_kind kind) { return ds__kind_traits(kind)->name; }

/* Puts link l at out[n] when it fits; returns n + 1 either way (the snprintf convention of
** sim_fabric_route and sim_fabric_links: the full length is returned, what fits is written). */
static size_t put_link(sim_link **out, size_t max, size_t n, sim_link *l) {
  if (n < max) out[n] = l;
  return n + 1;
}

/* Replica r's VM's GPU k (the replicas of a VM are its GPUs in order, see gpu_route). */
static const ds_replica *gpu_of(const ds_strategy *s, const ds_replica *r, int k) {
  const ds_replica *g = r + (k - r->gpu);
  assert(g >= s->replicas && g < s->replicas + s->nreplicas && g->worker == r->worker && g->gpu == k);
  return g;
}

/* Between GPUs of a GPU system (strategy.c's top). */
static size_t gpu_route(const ds_strategy *s, const ds_replica *a, const ds_replica *b, sim_link **out,
                        size_t max) {
  size_t n = 0;
  const ds_replica *rail = b->worker == a->worker ? b : gpu_of(s, a, b->gpu);
  if (rail != a) {
    n = put_link(out, max, n, a->copy);
    n = put_link(out, max, n, a->nvl_up);
    n = put_link(out, max, n, rail->nvl_down);
  }
  if (b->worker != a->worker) {
    n = put_link(out, max, n, rail->nic_out);
    n = put_link(out, max, n, b->nic_in);
  }
  return n;
}

/* A route between replicas, as sim/collective.h asks for one. */
static size_t replica_route(void *ctx, int from, int to, sim_link **out, size_t max) {
  const ds_strategy *s = ctx;
  const ds_replica *a = &s->replicas[from], *b = &s->replicas[to];
  if (a->copy != NULL && b->copy != NULL) return gpu_route(s, a, b, out, max);
  size_t n = 0;
  if (a->up) n = put_link(out, max, n, a->up);
  if (a->worker != b->worker) {
    size_t at = n < max ? n : max;
    n += sim_fabric_route(s->fabric, a->worker, b->worker, out + at, max - at);
  }
  if (b->down) n = put_link(out, max, n, b->down);
  return n;
}

static ds_strategy *strategy_alloc(sim_engine *e, ds_kind kind, int nreplicas, int cores,
                                   int nworkers, sim_algo algo, const char *job) {
  ds_strategy *s = base_xcalloc(1, sizeof *s);
  s->kind = kind;
  s->engine = e;
  s->algo = algo;
  s->nreplicas = nreplicas;
  s->cores = cores;
  s->replicas = base_xcalloc((size_t)nreplicas * (size_t)cores, sizeof *s->replicas);
  s->nworkers = nworkers;
  s->hosts = base_xcalloc((size_t)nworkers, sizeof *s->hosts);
  snprintf(s->host, sizeof s->host, "/job:%s/replica:0/task:0/device:CPU:0", job);
  return s;
}

/* The replicas' collective group, between each replica's core 0. */
static void make_group(ds_strategy *s, sim_route_fn route, void *ctx) {
  if (s->nreplicas < 2) return;
  sim_cpu **cpus = base_xcalloc((size_t)s->nreplicas, sizeof *cpus);
  for (int r = 0; r < s->nreplicas; r++) cpus[r] = s->replicas[r * s->cores].cpu;
  s->group = sim_collective_new(s->engine, "gradients", s->nreplicas, route, ctx, cpus);
  free(cpus);
}

static void make_cpu_replica(sim_engine *e, ds_replica *rep, const char *job, int worker,
                             const ds_machine *m) {
  char name[64];
  snprintf(rep->device, sizeof rep->device, "/job:%s/replica:0/task:%d/device:CPU:0", job, worker);
  snprintf(name, sizeof name, "worker%d.cpu", worker);
  rep->cpu = sim_cpu_new(e, name, m->flops_per_s);
  snprintf(name, sizeof name, "worker%d.ram", worker);
  rep->memory = sim_mempool_new(e, name, (uint64_t)m->ram_bytes);
  rep->roofline = (sim_roofline){ m->flops_per_s, m->mem_bytes_per_s, {0} };
}

/* What one GPU NIC carries, one way: its line rate, or its PCIe x16 link's rate where that is
** less. A GPU system's NICs sit on its GPUs' PCIe generation (the GPU's `link`: DGX A100 Gen4,
** DGX H100 Gen5, DGX-1 Gen3; docs/machine.md, "NICs on PCIe"), and NCCL's topology rates such a
** link at 3/4 of its raw rate (src/graph/topo.cc at 5067397c: kvDictPciGen gives a Gen4 lane
** "120" hundred Mb/s of its 16 GT/s, bw = width x speed / 80: Gen4 x16 24 GB/s, Gen5 x16 48):
** NVIDIA's DGX A100 measures 192 GB/s of busbw over its 8 x 200 Gb/s NICs, 8 x 24 (NCCL issue
** 812), and H100 systems about 380 over 8 x 400 Gb/s (GTC 2024, quoted in NCCL issue 1649), 8 x
** 48 = 384. */
#define NIC_PCIE_SHARE 0.75
static double nic_rate(const ds_accelerators *a) {
  double pcie = NIC_PCIE_SHARE * a->link_bytes_per_s;
  return pcie > 0 && pcie < a->nic_bytes_per_s ? pcie : a->nic_bytes_per_s;
}

static void make_accel_replica(sim_engine *e, ds_replica *rep, const char *job, int worker, int k,
                               const ds_accelerators *a, const ds_replica *nic_owner) {
  char name[64];
  snprintf(rep->device, sizeof rep->device, "/job:%s/replica:0/task:%d/device:GPU:%d", job, worker, k);
  double rate = ds_accelerator_rate(a);
  snprintf(name, sizeof name, "worker%d.gpu%d", worker, k);
  rep->cpu = sim_cpu_new(e, name, rate);
  snprintf(name, sizeof name, "worker%d.gpu%d.hbm", worker, k);
  rep->memory = sim_mempool_new(e, name, (uint64_t)a->hbm_bytes);
  rep->roofline = ds_accelerator_roofline(a);
  rep->workspace = a->workspace_bytes;
  snprintf(name, sizeof name, "worker%d.gpu%d.up", worker, k);
  rep->up = sim_link_new(e, name, a->link_bytes_per_s, a->link_latency);
  snprintf(name, sizeof name, "worker%d.gpu%d.down", worker, k);
  rep->down = sim_link_new(e, name, a->link_bytes_per_s, a->link_latency);
  rep->gpu = -1;
  if (!(a->nvlink_bytes_per_s > 0)) return;
  static const char *const GPU_LINKS[] = {"copy", "nvl.up", "nvl.down", "nic.out", "nic.in"};
  sim_link **links[] = {&rep->copy, &rep->nvl_up, &rep->nvl_down, &rep->nic_out, &rep->nic_in};
  double rates[] = {a->copy_bytes_per_s, a->nvlink_bytes_per_s, a->nvlink_bytes_per_s,
                    nic_rate(a), nic_rate(a)};
  rep->gpu = k;
  for (int i = 0; i < (nic_owner != NULL ? 3 : 5); i++) { /* NICs: fabric:N faults hit them */
    snprintf(name, sizeof name, i < 3 ? "worker%d.gpu%d.%s" : "fabric.w%d.gpu%d.%s", worker, k, GPU_LINKS[i]);
    *links[i] = sim_link_new(e, name, rates[i], 0);
  }
  if (nic_owner != NULL) { /* the NIC it shares with the VM's GPU before it (nics: M) */
    rep->nic_out = nic_owner->nic_out;
    rep->nic_in = nic_owner->nic_in;
  }
}

/* Consecutive GPUs of a VM on one NIC (0, as a machine without GPU figures leaves it: 1). */
static int gpus_per_nic(const ds_accelerators *a) { return a->gpus_per_nic > 1 ? a->gpus_per_nic : 1; }

/* NCCL's view of a GPU system's group (sim/nccl.h): `per_worker` ranks a VM, its figures; between
** VMs its channels share the NICs of the VM's GPUs in the group, each NVLS tree's head a NIC's
** GPU. The transport's own latency is
** the catalogue's (scenarios/config/machines.c: 0 for NCCL's IB transport on InfiniBand and
** RoCE, 75 us for AWS's EFA plugin); LL128 only where the GPUs have NVLink, as NCCL enables it. */
static void set_nccl(ds_strategy *s, const ds_accelerators *a, int per_worker) {
  if (s->group == NULL || !(a->nvlink_bytes_per_s > 0)) return;
  int nics = (per_worker + gpus_per_nic(a) - 1) / gpus_per_nic(a);
  sim_nccl_system sys = {per_worker, a->copy_bytes_per_s, nic_rate(a) * nics, !a->pcie_only,
                         a->nccl_launch_s, a->nvls_bytes_per_s, a->net_latency_s, nics,
                         (sim_nccl_arch)a->nccl_arch, a->host_amd};
  sim_collective_set_nccl(s->group, &sys);
}

/* The CPU of worker w, whose replicas are replicas[first, first + n): where its input pipeline
** runs. A CPU replica's own compute unit (the two contend, as on the VM), or beside
** accelerators a unit of its own. */
static sim_cpu *host_cpu(sim_engine *e, const ds_strategy *s, int first, int n, int w,
                         const ds_machine *m) {
  for (int i = first; i < first + n; i++)
    if (s->replicas[i].up == NULL) return s->replicas[i].cpu;
  char name[64];
  snprintf(name, sizeof name, "worker%d.cpu", w);
  return sim_cpu_new(e, name, m->flops_per_s);
}

/* The torus the torus all-reduce runs on: replica r = worker * per_worker + k, so the VM's
** accelerators are the fastest axis (a line through the VM: no wraparound), then the fabric's
** torus axes (they wrap). Axes of length 1 are left out. */
static void set_torus(ds_strategy *s, int per_worker) {
  int dims[4], wraps[4], n = 0, grid[3] = { 1, 1, 1 };
  if (per_worker > 1) dims[n] = per_worker, wraps[n++] = 0;
  if (s->fabric) sim_fabric_dims(s->fabric, grid);
  for (int a = 0; a < 3; a++)
    if (grid[a] > 1) dims[n] = grid[a], wraps[n++] = 1;
  if (n == 0) dims[n] = 1, wraps[n++] = 0;
  sim_collective_set_torus(s->group, n, dims, wraps);
}

ds_strategy *ds_strategy_new(sim_engine *e, ds_kind kind, const ds_cluster *cluster, sim_algo algo) {
  const ds_machine *m = &cluster->machine;
  const ds_kind_traits *traits = ds__kind_traits(kind);
  int multi = traits->multi_worker;
  int workers = multi ? cluster->workers : 1;
  int per_worker = traits->per_accelerator && m->accel.count > 0 ? m->accel.count : 1;
  const char *job = multi ? "worker" : "localhost";
  ds_strategy *s = strategy_alloc(e, kind, workers * per_worker, 1, workers, algo, job);
  for (int w = 0; w < workers; w++) {
    for (int k = 0; k < per_worker; k++) {
      ds_replica *rep = &s->replicas[w * per_worker + k];
      rep->worker = w;
      int shared = k % gpus_per_nic(&m->accel);
      const ds_replica *nic_owner = shared ? rep - shared : NULL;
      if (m->accel.count > 0) make_accel_replica(e, rep, job, w, k, &m->accel, nic_owner);
      else make_cpu_replica(e, rep, job, w, m);
    }
    s->hosts[w] = host_cpu(e, s, w * per_worker, per_worker, w, m);
  }
  if (workers > 1) {
    double *nics = base_xcalloc((size_t)workers, sizeof *nics);
    for (int w = 0; w < workers; w++) nics[w] = m->nic_bytes_per_s;
    s->fabric = sim_fabric_new(e, cluster->fabric, workers, "fabric.w", cluster->link_bytes_per_s,
                               nics, cluster->latency);
    free(nics);
  }
  make_group(s, replica_route, s);
  if (s->group && algo == SIM_ALGO_TORUS) set_torus(s, per_worker);
  if (m->accel.count > 0) set_nccl(s, &m->accel, per_worker);
  return s;
}

/* "GPU:1", "/gpu:1", "/device:GPU:1", "/job:localhost/replica:0/task:0/device:GPU:1": the part
** after the last "device:" (or the leading '/'), as a kind and an index; -1 when malformed. */
static int parse_device(const char *name, int *gpu, int *index) {
  const char *p = name, *d;
  for (const char *q = name; (d = strstr(q, "device:")) != NULL; q = d + 1) p = d + 7;
  if (p == name && *p == '/') p++;
  if (strncasecmp(p, "GPU:", 4) == 0) *gpu = 1;
  else if (strncasecmp(p, "CPU:", 4) == 0) *gpu = 0;
  else return -1;
  char *end;
  long k = strtol(p + 4, &end, 10);
  if (end == p + 4 || *end != 0 || k < 0 || k > 1 << 20) return -1;
  *index = (int)k;
  return 0;
}

ds_strategy *ds_mirrored_new(sim_engine *e, const ds_cluster *cluster, const char *const *devices,
                             int ndevices, sim_algo algo, ds_status *st) {
  const ds_machine *m = &cluster->machine;
  if (devices == NULL || ndevices < 1) {
    ds_status_set(st, DS_VALUE_ERROR, "MirroredStrategy: `devices` must name at least one device");
    return NULL;
  }
  int *gpu = base_xcalloc((size_t)ndevices, sizeof *gpu), *index = base_xcalloc((size_t)ndevices, sizeof *index);
  for (int i = 0; i < ndevices; i++) {
    if (parse_device(devices[i], &gpu[i], &index[i]) != 0 ||
        index[i] >= (gpu[i] ? m->accel.count : 1)) {
      ds_status_set(st, DS_VALUE_ERROR, "MirroredStrategy: worker 0 has no device %s (%d GPUs, CPU:0)",
                    devices[i], m->accel.count);
      goto fail;
    }
    for (int j = 0; j < i; j++)
      if (gpu[j] == gpu[i] && index[j] == index[i]) {
        ds_status_set(st, DS_VALUE_ERROR, "MirroredStrategy: no duplicates allowed in `devices`: %s",
                      devices[i]);
        goto fail;
      }
  }
  ds_strategy *s = strategy_alloc(e, DS_MIRRORED, ndevices, 1, 1, algo, "localhost");
  for (int i = 0; i < ndevices; i++) {
    if (gpu[i]) make_accel_replica(e, &s->replicas[i], "localhost", 0, index[i], &m->accel, NULL);
    else make_cpu_replica(e, &s->replicas[i], "localhost", 0, m);
  }
  s->hosts[0] = host_cpu(e, s, 0, ndevices, 0, m);
  make_group(s, replica_route, s);
  if (s->group && algo == SIM_ALGO_TORUS) set_torus(s, ndevices);
  int gpus = 0;
  for (int i = 0; i < ndevices; i++) gpus += gpu[i];
  if (gpus == ndevices) set_nccl(s, &m->accel, ndevices);
  free(gpu);
  free(index);
  return s;
fail:
  free(gpu);
  free(index);
  return NULL;
}

ds_strategy *ds_strategy_new_table(sim_engine *e, ds_kind kind, int nreplicas, int cores_per_replica,
                                   const ds_device *devices, sim_route_fn route, void *route_ctx,
                                   sim_algo algo) {
  assert(nreplicas >= 1 && cores_per_replica >= 1 && (nreplicas == 1 || route != NULL));
  int n = nreplicas * cores_per_replica, workers = 0;
  for (int i = 0; i < n; i++)
    if (devices[i].worker >= workers) workers = devices[i].worker + 1;
  ds_strategy *s = strategy_alloc(e, kind, nreplicas, cores_per_replica, workers, algo, "localhost");
  for (int i = 0; i < n; i++) {
    ds_replica *rep = &s->replicas[i];
    snprintf(rep->device, sizeof rep->device, "%s", devices[i].name);
    rep->worker = devices[i].worker;
    rep->cpu = devices[i].cpu;
    rep->memory = devices[i].memory;
    rep->roofline = devices[i].roofline;
    rep->workspace = devices[i].workspace;
    rep->down = devices[i].infeed;
    s->hosts[rep->worker] = devices[i].host;
  }
  make_group(s, route, route_ctx);
  return s;
}

void ds_strategy_free(ds_strategy *s) {
  if (s == NULL) return;
  if (s->group) sim_collective_free(s->group);
  free(s->rank_of);
  free(s->group_ctx);
  if (s->fabric) sim_fabric_free(s->fabric);
  free(s->replicas);
  free(s->hosts);
  if (s->owned_free) s->owned_free(s->owned);
  free(s);
}

void ds__strategy_own(ds_strategy *s, void (*owned_free)(void *), void *owned) {
  s->owned_free = owned_free;
  s->owned = owned;
}

void *ds__strategy_owned(const ds_strategy *s) { return s->owned; }

int ds_num_replicas_in_sync(const ds_strategy *s) { return s->nreplicas; }
int ds_cores_per_replica(const ds_strategy *s) { return s->cores; }
sim_engine *ds_strategy_engine(const ds_strategy *s) { return s->engine; }
ds_kind ds_strategy_kind(const ds_strategy *s) { return s->kind; }

int ds_strategy_num_workers(const ds_strategy *s) { return s->nworkers; }

sim_cpu *ds_worker_cpu(const ds_strategy *s, int worker) {
  assert(worker >= 0 && worker < s->nworkers);
  return s->hosts[worker];
}
const char *ds_host_device(const ds_strategy *s) { return s->host; }

void ds__strategy_set_resolver(ds_strategy *s, const ds_cluster_resolver *r) {
  s->has_resolver = 1;
  s->resolver = *r;
}

int ds__strategy_resolver(const ds_strategy *s, ds_cluster_resolver *out) {
  if (s->has_resolver) *out = s->resolver;
  return s->has_resolver;
}


void ds__strategy_set_host(ds_strategy *s, const char *device) {
  snprintf(s->host, sizeof s->host, "%s", device);
}

void ds__strategy_set_kind(ds_strategy *s, const ds__kind_ops *ops, const void *table) {
  s->kind_ops = ops;
  s->kind_table = table;
}

const ds__kind_ops *ds__strategy_kind_ops(const ds_strategy *s) { return s->kind_ops; }
const void *ds__strategy_kind_table(const ds_strategy *s) { return s->kind_table; }
void ds_strategy_set_exact_gather_shapes(ds_strategy *s, int on) { s->exact_gather = on != 0; }
int ds_strategy_exact_gather_shapes(const ds_strategy *s) { return s->exact_gather; }

/* Core 0 of a replica: where its step runs and its variables live. */
static const ds_replica *replica_at(const ds_strategy *s, int replica) {
  assert(replica >= 0 && replica < s->nreplicas);
  return &s->replicas[replica * s->cores];
}

const char *ds_replica_core_device(const ds_strategy *s, int replica, int core) {
  assert(core >= 0 && core < s->cores);
  return replica_at(s, replica)[core].device;
}

sim_mempool *ds_replica_core_memory(const ds_strategy *s, int replica, int core) {
  assert(core >= 0 && core < s->cores);
  return replica_at(s, replica)[core].memory;
}

const char *ds_replica_device(const ds_strategy *s, int replica) { return replica_at(s, replica)->device; }
sim_cpu *ds_replica_cpu(const ds_strategy *s, int replica) { return replica_at(s, replica)->cpu; }
sim_mempool *ds_replica_memory(const ds_strategy *s, int replica) { return replica_at(s, replica)->memory; }
double ds_replica_workspace(const ds_strategy *s, int replica) { return replica_at(s, replica)->workspace; }
double ds_accelerator_rate(const ds_accelerators *a) {
  return a->op.units > 0 ? a->peak_flops : a->peak_flops * a->efficiency;
}

sim_roofline ds_accelerator_roofline(const ds_accelerators *a) {
  return (sim_roofline){ ds_accelerator_rate(a), a->hbm_bytes_per_s, a->op };
}

const sim_roofline *ds_replica_roofline(const ds_strategy *s, int replica) {
  return &replica_at(s, replica)->roofline;
}
int ds_replica_worker(const ds_strategy *s, int replica) { return replica_at(s, replica)->worker; }
sim_link *ds_replica_infeed(const ds_strategy *s, int replica) { return replica_at(s, replica)->down; }

sim_algo ds_all_reduce_algorithm(const ds_strategy *s) { return s->algo; }

size_t ds_links(const ds_strategy *s, sim_link **out, size_t max) {
  size_t n = s->fabric ? sim_fabric_links(s->fabric, out, max) : 0;
  for (int r = 0; r < s->nreplicas * s->cores; r++) {
    const ds_replica *rep = &s->replicas[r];
    if (rep->up) {
      n = put_link(out, max, n, rep->up);
      n = put_link(out, max, n, rep->down);
    }
    if (rep->copy == NULL) continue;
    n = put_link(out, max, n, rep->copy);
    n = put_link(out, max, n, rep->nvl_up);
    n = put_link(out, max, n, rep->nvl_down);
    if (r > 0 && rep[-1].nic_out == rep->nic_out) continue; /* a NIC shared with the GPU before */
    n = put_link(out, max, n, rep->nic_out);
    n = put_link(out, max, n, rep->nic_in);
  }
  return n;
}

sim_collective *ds_collective(const ds_strategy *s) { return s->group; }

void ds_strategy_order_group(ds_strategy *s, const int *replica_at_rank, sim_route_fn route,
                             void *owned_ctx) {
  assert(s->group && s->rank_of == NULL);
  sim_collective_free(s->group);
  s->rank_of = base_xcalloc((size_t)s->nreplicas, sizeof *s->rank_of);
  sim_cpu **cpus = base_xcalloc((size_t)s->nreplicas, sizeof *cpus);
  for (int k = 0; k < s->nreplicas; k++) {
    s->rank_of[replica_at_rank[k]] = k;
    cpus[k] = s->replicas[replica_at_rank[k] * s->cores].cpu;
  }
  s->group = sim_collective_new(s->engine, "gradients", s->nreplicas, route, owned_ctx, cpus);
  s->group_ctx = owned_ctx;
  free(cpus);
}

int ds_replica_rank(const ds_strategy *s, int replica) {
  assert(replica >= 0 && replica < s->nreplicas);
  return s->rank_of ? s->rank_of[replica] : replica;
}

int ds_all_reduce_sum(ds_strategy *s, sim_actor *self, int replica, float *buf, size_t count) {
  if (s->multi) return sim_multislice_all_reduce(self, s->multi, ds_replica_rank(s, replica), buf, count);
  if (s->group == NULL) return SIM_OK;
  return sim_allreduce(self, s->group, ds_replica_rank(s, replica), buf, count, s->algo);
}

int ds_all_reduce_pack(ds_strategy *s, size_t count, sim_collective_done_fn done, void *arg) {
  assert(s->multi == NULL && s->group != NULL);
  return sim_collective_start(s->group, SIM_COLL_ALL_REDUCE, s->algo, 0, NULL, count, done, arg);
}

int ds_all_reduce_values(ds_strategy *s, float *const *bufs, size_t count) {
  if (s->group == NULL) return SIM_OK;
  float **by_rank = base_xcalloc((size_t)s->nreplicas, sizeof *by_rank);
  for (int r = 0; r < s->nreplicas; r++) by_rank[ds_replica_rank(s, r)] = bufs[r];
  /* several slices: the whole group's ring (the hierarchical all-reduce's sums reassociated) */
  int rc = sim_collective_compute(s->group, SIM_COLL_ALL_REDUCE, s->multi ? SIM_ALGO_RING : s->algo, 0, by_rank, count);
  free(by_rank);
  return rc;
}

sim_time ds_last_all_reduce_time(const ds_strategy *s) {
  if (s->multi) return sim_multislice_last_duration(s->multi);
  return s->group ? sim_collective_last_duration(s->group) : 0;
}

void ds_strategy_set_multislice(ds_strategy *s, sim_multislice *m) {
  assert(s->rank_of != NULL && sim_multislice_ranks(m) == s->nreplicas);
  s->multi = m;
}

sim_multislice *ds_strategy_multislice(const ds_strategy *s) { return s->multi; }

