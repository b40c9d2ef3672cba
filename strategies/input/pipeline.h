/*
** pipeline.h: the input pipeline of a distributed dataset, as time (ds_pipeline_).
**
** Each VM holding replicas runs a producer actor that makes its replicas' batches, step after
** step, on the VM's CPU (ds_worker_cpu: a CPU replica's own compute unit, so the two contend),
** costing per_batch for each replica's batch plus per_example for each example, in seconds of
** one vCPU. A VM whose replicas sit behind a host-to-device link (ds_replica_infeed) also runs an
** infeed actor that copies each batch over it, every replica's at once, while the producer makes
** the next. A batch then waits in its replica's buffer until the replica's step takes it.
**
** Prefetch, as tf.data's prefetch(P) and TF's per-replica device buffers count it: the pipeline
** starts batch k once the replicas have asked for batch k - P (their step k - P began), so at
** most P batches are made or buffered ahead of the one a step is waiting for. P = 0 is no
** prefetch: a step asks, then the batch is made and copied while the step waits. The numerics
** do not pass through here: replicas still read their rows themselves; this is only when.
*/
#ifndef PODSIM_PIPELINE_H
#define PODSIM_PIPELINE_H

#include "sim/sim.h"
#include "strategies/core/strategy.h"

typedef struct ds_pipeline_spec {
  int prefetch;           /* P above: batches made ahead of the one a step waits for */
  double per_example_s;   /* host time per example, on one vCPU */
  double per_batch_s;     /* host time per per-replica batch, on one vCPU */
  double vcpu_flops;      /* work one vCPU does per second: the host times above become work */
  double example_bytes;   /* bytes of one example's tensors crossing a host-to-device link */
  long steps;             /* batches each replica takes in the whole run */
  long first_step;        /* the step of the first batch: a job restarted from a checkpoint
                             resumes its input at the checkpoint's step (default 0) */
  int first_vm_only;      /* 1: only the first VM's producer (and infeed) runs, for a run that
                             simulates one replica for its symmetric peers (scenarios/programs/
                             mesh_symmetric.c), which asks through ds_pipeline_next_vm */
} ds_pipeline_spec;

/* The examples of one replica's batch at a step (fewer at the end of an epoch, 0 for a replica
** the input has no more data for). */
typedef int (*ds_batch_size_fn)(void *ctx, long step, int replica);

typedef struct ds_pipeline ds_pipeline;

/* Spawns the producers (and infeed actors) of every VM of the strategy; they start now. */
ds_pipeline *ds_pipeline_new(sim_engine *e, const ds_strategy *s, const ds_pipeline_spec *spec,
                          ds_batch_size_fn batch_size, void *ctx);
/* Called by replica `replica`'s actor at each step: asks for its next batch and blocks until
** the batch is on its device. Returns SIM_OK. */
int  ds_pipeline_next(ds_pipeline *in, sim_actor *self, int replica);
/* ds_pipeline_next for every replica of `replica`'s VM at once: asks for each one's next batch,
** then blocks until all are on their devices, as the VM's replicas asking at the same picosecond
** would each get theirs (the producer makes and copies them together). */
int  ds_pipeline_next_vm(ds_pipeline *in, sim_actor *self, int replica);
/* Fast-forward (sim/sim.h): adds to snap what the pipeline holds, its counters relative to
** `step` (the step the replicas are at); the step the furthest of its actors is at, less
** `step`; and moves every counter `steps` on, as that many steps would (the caller proves
** that they would repeat the last one: the channels' contents are in the snapshot). */
void ds_pipeline_snapshot(const ds_pipeline *in, long step, sim_snapshot *snap);
long ds_pipeline_ahead(const ds_pipeline *in, long step);
void ds_pipeline_skip(ds_pipeline *in, long steps);
/* Kills the pipeline's actors (a run that ends before its last step, so nothing stays blocked). */
void ds_pipeline_stop(ds_pipeline *in);
/* Stops the pipeline if needed and frees it. */
void ds_pipeline_free(ds_pipeline *in);

#endif
