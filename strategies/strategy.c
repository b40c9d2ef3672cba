/*
** strategy.c: replicas, their devices and the cross-replica sum (ds_).
**
** default and one_device run one replica on worker 0 ("/job:localhost/..." as a single-process
** TF program names it); multi_worker_mirrored runs one replica per CPU worker
** ("/job:worker/replica:0/task:T/device:CPU:0"), joined by the fabric.
*/
#include "strategies/strategy.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct ds_replica {
  char device[96];        /* TF device name */
  sim_cpu *cpu;           /* the worker VM's compute */
  sim_mempool *memory;    /* the worker VM's RAM */
} ds_replica;

struct ds_strategy {
  ds_kind kind;           /* which strategy */
  int nreplicas;          /* num_replicas_in_sync */
  ds_replica *replicas;   /* nreplicas entries, in replica order */
  sim_fabric *fabric;     /* NULL for a single replica */
  sim_collective *group;  /* the replicas' all-reduce group, NULL for a single replica */
  sim_algo algo;          /* the gradient all-reduce algorithm */
};

const char *ds_kind_name(ds_kind kind) {
  switch (kind) {
    case DS_DEFAULT: return "default";
    case DS_ONE_DEVICE: return "one_device";
    case DS_MULTI_WORKER_MIRRORED: return "multi_worker_mirrored";
  }
  return "?";
}

ds_strategy *ds_strategy_new(sim_engine *e, ds_kind kind, const ds_cluster *cluster, sim_algo algo) {
  ds_strategy *s = calloc(1, sizeof *s);
  if (s == NULL) return NULL;
  s->kind = kind;
  s->algo = algo;
  s->nreplicas = kind == DS_MULTI_WORKER_MIRRORED ? cluster->workers : 1;
  s->replicas = calloc((size_t)s->nreplicas, sizeof *s->replicas);
  sim_cpu **cpus = calloc((size_t)s->nreplicas, sizeof *cpus);
  double *nics = calloc((size_t)s->nreplicas, sizeof *nics);
  if (s->replicas == NULL || cpus == NULL || nics == NULL) {
    free(cpus);
    free(nics);
    ds_strategy_free(s);
    return NULL;
  }
  const char *job = kind == DS_MULTI_WORKER_MIRRORED ? "worker" : "localhost";
  for (int r = 0; r < s->nreplicas; r++) {
    ds_replica *rep = &s->replicas[r];
    char name[64];
    snprintf(rep->device, sizeof rep->device, "/job:%s/replica:0/task:%d/device:CPU:0", job, r);
    snprintf(name, sizeof name, "worker%d.cpu", r);
    rep->cpu = sim_cpu_new(e, name, cluster->machine.flops_per_s);
    snprintf(name, sizeof name, "worker%d.ram", r);
    rep->memory = sim_mempool_new(e, name, (uint64_t)cluster->machine.ram_bytes);
    cpus[r] = rep->cpu;
    nics[r] = cluster->machine.nic_bytes_per_s;
  }
  if (s->nreplicas > 1) {
    s->fabric = sim_fabric_new(e, cluster->fabric, s->nreplicas, "fabric.w", cluster->link_bytes_per_s,
                               nics, cluster->latency);
    s->group = sim_collective_new(e, "gradients", s->nreplicas, sim_fabric_route, s->fabric, cpus);
  }
  free(cpus);
  free(nics);
  return s;
}

void ds_strategy_free(ds_strategy *s) {
  if (s == NULL) return;
  if (s->group) sim_collective_free(s->group);
  if (s->fabric) sim_fabric_free(s->fabric);
  free(s->replicas);
  free(s);
}

int ds_num_replicas_in_sync(const ds_strategy *s) { return s->nreplicas; }

const char *ds_replica_device(const ds_strategy *s, int replica) {
  assert(replica >= 0 && replica < s->nreplicas);
  return s->replicas[replica].device;
}

sim_cpu *ds_replica_cpu(const ds_strategy *s, int replica) {
  assert(replica >= 0 && replica < s->nreplicas);
  return s->replicas[replica].cpu;
}

sim_mempool *ds_replica_memory(const ds_strategy *s, int replica) {
  assert(replica >= 0 && replica < s->nreplicas);
  return s->replicas[replica].memory;
}

sim_algo ds_all_reduce_algorithm(const ds_strategy *s) { return s->algo; }

size_t ds_links(const ds_strategy *s, sim_link **out, size_t max) {
  return s->fabric ? sim_fabric_links(s->fabric, out, max) : 0;
}

int ds_all_reduce_sum(ds_strategy *s, sim_actor *self, int replica, float *buf, size_t count) {
  if (s->group == NULL) return SIM_OK;
  return sim_allreduce(self, s->group, replica, buf, count, s->algo);
}

sim_time ds_last_all_reduce_time(const ds_strategy *s) {
  return s->group ? sim_collective_last_duration(s->group) : 0;
}

void ds_split_batch(int batch, int replicas, int *sizes, int *offsets) {
  assert(replicas > 0 && batch >= 0);
  int base = batch / replicas, extra = batch % replicas, at = 0;
  for (int r = 0; r < replicas; r++) {
    sizes[r] = base + (r < extra ? 1 : 0);
    offsets[r] = at;
    at += sizes[r];
  }
}
