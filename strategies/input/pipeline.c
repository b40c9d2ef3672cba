/*
** pipeline.c: producers, infeed and prefetch buffers of the input pipeline (ds_pipeline_).
**
** Per replica two channels (sim/channel.h): `requests` gets a token when the replica's step asks
** for a batch, `ready` holds the batches on its device. A VM's producer takes, before making
** batch k >= P, one request from each of its replicas (that of step k - P), which is the
** prefetch bound of pipeline.h without preloading any token. Channel capacities are P + 1, the
** most a channel can ever hold under that bound, so no put blocks.
**
** Invariants: every replica of a VM takes the same number of batches (steps), so the producer
** and infeed actors finish by themselves after the last one; a run that stops early kills them.
*/
#include "strategies/input/pipeline.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

#include "sim/channel.h"
#include "strategies/core/strategiesInt.h"

typedef struct host_pipe {
  ds_pipeline *in;           /* the pipeline it belongs to */
  int worker;             /* its VM */
  int first;              /* its replicas: [first, first + count) */
  int count;              /* (the strategy numbers a VM's replicas contiguously) */
  int infeed;             /* its replicas sit behind host-to-device links */
  sim_channel *made;      /* steps made on the CPU, waiting for the infeed actor */
  sim_activity **copies;  /* the infeed actor's transfers of one step (count entries) */
  sim_actor *producer;    /* makes the batches (NULL: the set-up was stopped before it) */
  sim_actor *copier;      /* the infeed actor, or NULL */
  long making;            /* the step whose batches the producer is at (its loop's counter, kept
                             here so that a fast-forward can move it: ds_pipeline_skip) */
  long copying;           /* the step whose batches the infeed actor is at */
} host_pipe;

struct ds_pipeline {
  const ds_strategy *s;   /* replicas, VMs and links */
  ds_pipeline_spec spec;     /* costs, prefetch, steps */
  ds_batch_size_fn batch_size; /* a replica's batch at a step */
  void *ctx;              /* its argument */
  int nreplicas;          /* num_replicas_in_sync */
  sim_channel **requests; /* per replica: a token per step that asked */
  sim_channel **ready;    /* per replica: batches on its device */
  host_pipe *hosts;       /* one per VM holding replicas */
  int nhosts;             /* entries in hosts */
};

static int slice(const ds_pipeline *in, long step, int replica) {
  return in->batch_size(in->ctx, step, replica);
}

static void producer_main(sim_actor *self, void *arg) {
  host_pipe *h = arg;
  ds_pipeline *in = h->in;
  sim_cpu *cpu = ds_worker_cpu(in->s, h->worker);
  void *token;
  for (h->making = in->spec.first_step; h->making < in->spec.steps; h->making++) {
    if (h->making - in->spec.first_step >= in->spec.prefetch)
      for (int r = h->first; r < h->first + h->count; r++) sim_channel_get(self, in->requests[r], &token);
    double examples = 0;
    for (int r = h->first; r < h->first + h->count; r++) examples += slice(in, h->making, r);
    double seconds = in->spec.per_batch_s * h->count + in->spec.per_example_s * examples;
    if (seconds > 0) sim_exec(self, cpu, seconds * in->spec.vcpu_flops);
    if (h->infeed) {
      sim_channel_put(self, h->made, NULL);
      continue;
    }
    for (int r = h->first; r < h->first + h->count; r++) sim_channel_put(self, in->ready[r], NULL);
  }
}

/* Copies each step's batches to the VM's devices, all links at once, while the next is made. */
static void infeed_main(sim_actor *self, void *arg) {
  host_pipe *h = arg;
  ds_pipeline *in = h->in;
  sim_activity **copies = h->copies;
  void *token;
  for (h->copying = in->spec.first_step; h->copying < in->spec.steps; h->copying++) {
    sim_channel_get(self, h->made, &token);
    for (int i = 0; i < h->count; i++) {
      sim_link *link = ds_replica_infeed(in->s, h->first + i);
      copies[i] = sim_comm_start(sim_actor_engine(self), &link, 1,
                                 in->spec.example_bytes * slice(in, h->copying, h->first + i));
    }
    sim_wait_all(self, copies, (size_t)h->count);
    for (int r = h->first; r < h->first + h->count; r++) sim_channel_put(self, in->ready[r], NULL);
  }
}

ds_pipeline *ds_pipeline_new(sim_engine *e, const ds_strategy *s, const ds_pipeline_spec *spec,
                          ds_batch_size_fn batch_size, void *ctx) {
  assert(spec->prefetch >= 0 && spec->first_step >= 0 && spec->first_step <= spec->steps);
  ds_pipeline *in = base_xcalloc(1, sizeof *in);
  *in = (ds_pipeline){ .s = s, .spec = *spec, .batch_size = batch_size, .ctx = ctx,
                    .nreplicas = ds_num_replicas_in_sync(s) };
  size_t depth = (size_t)spec->prefetch + 1;
  in->requests = base_xcalloc((size_t)in->nreplicas, sizeof *in->requests);
  in->ready = base_xcalloc((size_t)in->nreplicas, sizeof *in->ready);
  in->hosts = base_xcalloc((size_t)ds_strategy_num_workers(s), sizeof *in->hosts);
  for (int r = 0; r < in->nreplicas; r++) {
    in->requests[r] = sim_channel_new(depth);
    in->ready[r] = sim_channel_new(depth);
    int worker = ds_replica_worker(s, r);
    if (in->nhosts == 0 || in->hosts[in->nhosts - 1].worker != worker)
      in->hosts[in->nhosts++] = (host_pipe){ .in = in, .worker = worker, .first = r,
                                             .infeed = ds_replica_infeed(s, r) != NULL };
    in->hosts[in->nhosts - 1].count++;
  }
  char name[48];
  /* A stop asked meanwhile leaves the hosts after it without actors: the run it was for ends at
  ** the engine's first stop test, before any event could need them. */
  for (int i = 0; i < (spec->first_vm_only ? 1 : in->nhosts) && !sim_stop_asked(e); i++) {
    host_pipe *h = &in->hosts[i];
    snprintf(name, sizeof name, "input%d", h->worker);
    h->producer = sim_actor_spawn(e, name, producer_main, h);
    if (!h->infeed) continue;
    h->made = sim_channel_new(depth);
    h->copies = base_xcalloc((size_t)h->count, sizeof *h->copies);
    snprintf(name, sizeof name, "infeed%d", h->worker);
    h->copier = sim_actor_spawn(e, name, infeed_main, h);
  }
  return in;
}

int ds_pipeline_next(ds_pipeline *in, sim_actor *self, int replica) {
  assert(replica >= 0 && replica < in->nreplicas);
  void *batch;
  int rc = sim_channel_put(self, in->requests[replica], NULL);
  if (rc == SIM_OK) rc = sim_channel_get(self, in->ready[replica], &batch);
  return rc;
}

int ds_pipeline_next_vm(ds_pipeline *in, sim_actor *self, int replica) {
  const host_pipe *h = in->hosts;
  while (replica >= h->first + h->count) h++;
  void *batch;
  int rc = SIM_OK;
  for (int r = h->first; r < h->first + h->count && rc == SIM_OK; r++) rc = sim_channel_put(self, in->requests[r], NULL);
  for (int r = h->first; r < h->first + h->count && rc == SIM_OK; r++) rc = sim_channel_get(self, in->ready[r], &batch);
  return rc;
}

void ds_pipeline_snapshot(const ds_pipeline *in, long step, sim_snapshot *snap) {
  for (int r = 0; r < in->nreplicas; r++) {
    sim_snapshot_word(snap, sim_channel_count(in->requests[r]));
    sim_snapshot_word(snap, sim_channel_count(in->ready[r]));
  }
  for (int i = 0; i < in->nhosts; i++) {
    const host_pipe *h = &in->hosts[i];
    sim_snapshot_word(snap, (uint64_t)(h->making - step));
    sim_snapshot_word(snap, h->infeed ? (uint64_t)(h->copying - step) : 0);  /* no copier: unused */
    sim_snapshot_word(snap, h->made ? sim_channel_count(h->made) : 0);
  }
}

long ds_pipeline_ahead(const ds_pipeline *in, long step) {
  long ahead = 0;
  for (int i = 0; i < in->nhosts; i++) {
    if (in->hosts[i].making - step > ahead) ahead = in->hosts[i].making - step;
    if (in->hosts[i].infeed && in->hosts[i].copying - step > ahead) ahead = in->hosts[i].copying - step;
  }
  return ahead;
}

void ds_pipeline_skip(ds_pipeline *in, long steps) {
  for (int i = 0; i < in->nhosts; i++) {
    in->hosts[i].making += steps;
    in->hosts[i].copying += steps;
  }
}

void ds_pipeline_stop(ds_pipeline *in) {
  for (int i = 0; i < in->nhosts; i++) {
    if (in->hosts[i].producer) sim_actor_kill(in->hosts[i].producer);
    if (in->hosts[i].copier) sim_actor_kill(in->hosts[i].copier);
  }
}

void ds_pipeline_free(ds_pipeline *in) {
  if (in == NULL) return;
  ds_pipeline_stop(in);
  for (int r = 0; r < in->nreplicas; r++) {
    sim_channel_free(in->requests[r]);
    sim_channel_free(in->ready[r]);
  }
  for (int i = 0; i < in->nhosts; i++) {
    sim_channel_free(in->hosts[i].made);
    free(in->hosts[i].copies);
  }
  free(in->requests);
  free(in->ready);
  free(in->hosts);
  free(in);
}
