/*
** mesh_symmetric.c: one timeline for a symmetric device mesh (msym_, mesh_symmetric.h).
**
** A pod-scale mesh run (Llama 3 405B over 256 x 16 chips of a v5p-8192) spends its host time on
** 4096 replica actors that each walk every kernel of the compiled step and issue every collective
** to their lines, though with numerics off they all do the same thing at the same picosecond.
** Like fast-forward (train.c, invariants 4 to 7), which skips steps that provably repeat, this
** skips replicas that provably repeat replica 0: an exact shortcut behind an admission test that
** declines, and leaves the full run, whenever the symmetry is not proven.
**
** Invariants:
**   1. What replica r does in a step is a function of its program (numerics off: no values; the
**      step compiled for its batch's count, cg_cache_get), its cpu's rate and roofline (the
**      kernels' work: train__kernel_work), when its batch is on its device (its VM's producer and
**      infeed), and the times its lines' collectives end. A line's collective starts when its
**      last member issues it, and runs in a time that is a function of the line's group, its plan
**      and its links alone when nothing else uses them and it charges no cpu
**      (sim/collective_congruent.c, invariant 1). So if every replica runs replica 0's program
**      at every step on a cpu of its own with replica 0's rate and roofline, every VM's batches
**      are ready when the first VM's are, and every line of an axis runs every collective of the
**      program over that axis in the time replica 0's line of the axis takes, on links no other
**      line (nor the input) uses, then by induction over the engine's events every replica
**      issues, waits and ends each step at replica 0's picoseconds.
**   2. The admission (msym_admit) proves each premise of 1 or declines: it needs a mesh without
**      pipeline stages (they run different layers: declined); numerics off; fit; no trace (each replica's
**      own track and spans); no faults (a fault strikes one replica or link); no checkpoints,
**      callbacks or validation (their writes and evaluations are the replicas' own), no embedding
**      exchange, packs, split variables or synchronized batch normalisation; every step with step
**      0's counts (inp_plan_same_counts), which are even or, where a model group's devices compile
**      their group's shard of the batch (a count of 0 or 1 of 1024 examples over 4096 chips), give
**      every replica the same program; every replica's cpu its own (sim_claims), at replica 0's
**      rate, with replica 0's roofline; every VM holding as many replicas, examples and largest
**      batch as the first, its producer's cpu its own at the first's rate, each replica's
**      host-to-device link its own with the first's bandwidth and latency; and every line
**      congruent to replica 0's line of its axis for every collective of every program the run
**      compiles (mesh_congruent: free reductions, the same set-up, plans and routes link for link,
**      each line's links its own). PODSIM_MESH_FULL (any value but "0") declines too.
**   3. The collapsed run spawns replica 0 alone. Its lines start a collective when it has issued
**      it (mesh_solo), the step's end barrier waits for it alone, and the input runs its VM's
**      producer alone, replica 0 asking for and taking its VM mates' batches with its own
**      (ds_pipeline_next_vm), so the VM's producer and infeed see what they see in the full run.
**      The other lines, producers and replicas are not run; by 1 their events would repeat
**      replica 0's at the same picoseconds.
**   4. What run_hash covers comes out the full run's: metrics.csv's rows are replica 0's in both;
**      memory is reserved for every replica at set-up, before either run; variables.csv and the
**      weights are the model's (shapes); the clock stops at the last event, replica 0's or its
**      VM's, which every replica and VM would share. summary.json's `events` counts the events the
**      engine processed (it is not hashed, as for fast-forward's skipped work), and the text
**      summary says how many replicas ran (run_summary.simulated_replicas).
*/
#include "scenarios/programs/mesh_symmetric.h"

#include <stdlib.h>
#include <string.h>

#include "scenarios/programs/accum.h"

/* Invariant 2's run-wide premises: what makes replicas differ besides the mesh. */
static int plain_run(const trainer *t) {
  const scenario *s = t->in.s;
  const char *full = getenv(MSYM_FULL_ENV);
  return t->mesh != NULL && t->pipe == NULL && (full == NULL || !strcmp(full, "0")) && s->mode == SCN_RUN_FIT &&
         !s->numerics_full && !t->traced && t->faults == NULL && s->nfaults == 0 && s->ckpt_every == 0 &&
         t->cb == NULL && t->val == NULL && t->emb == NULL && t->ovl == NULL && t->v1 == NULL && !t->cross_replica &&
         t->nreplicas >= 2 && t->in.steps > 0;
}

/* Every step gives every replica step 0's count (a run whose counts change from step to step, a
** last partial batch, declines: proving each step would cost iterating the input), and the
** counts' differences change no replica's program: they are even, or a model group's devices
** compile its shard of the batch whatever their own count (mesh_compile_options'
** group_examples; cg_cache_get). Their differences between VMs are same_devices'. */
static int same_programs(trainer *t) {
  if (inp_plan_same_counts(t->plan, 0, t->in.steps - 1) != t->in.steps - 1 || t->split_devices != 1) return 0;
  if (mesh_compile_options(t->in.s, t->nreplicas).group_examples > 0) return 1;
  for (int r = 1; r < t->nreplicas; r++)
    if (inp_plan_count(t->plan, 0, r) != inp_plan_count(t->plan, 0, 0)) return 0;
  return 1;
}

/* A VM's input at a step, as its producer and infeed see it: its replicas, the examples it makes
** (the producer's work) and its largest batch (the longest copy, which its replicas' batches wait
** for: pipeline.c's infeed_main); the same on every VM makes every VM's batches ready when the
** first's are. */
typedef struct vm_input {
  int replicas;           /* on the VM */
  long examples;          /* their examples at step 0 */
  int largest;            /* the largest of their batches */
} vm_input;

static int same_input(const vm_input *a, const vm_input *b) {
  return a->replicas == b->replicas && a->examples == b->examples && a->largest == b->largest;
}

/* The two rooflines time every kernel alike: the same fields (doubles and ints in fours: no
** padding, so their bytes are their values). */
static int same_roofline(const sim_roofline *a, const sim_roofline *b) { return !memcmp(a, b, sizeof *a); }

/* Each replica on a cpu of its own like replica 0's, each VM's input like the first's with a
** producer cpu and host-to-device links of its own (owners from `owner` on: the lines are 0..). */
static int same_devices(trainer *t, sim_claims *claims, int owner) {
  const ds_strategy *st = t->strategy;
  sim_cpu *cpu0 = ds_replica_cpu(st, 0), *vm0 = ds_worker_cpu(st, ds_replica_worker(st, 0));
  const sim_link *in0 = ds_replica_infeed(st, 0);
  vm_input first = {0, 0, 0}, vm = {0, 0, 0};
  for (int r = 0; r < t->nreplicas; r++) {
    sim_cpu *cpu = ds_replica_cpu(st, r);
    const sim_link *in = ds_replica_infeed(st, r);
    if (sim_cpu_rate(cpu) != sim_cpu_rate(cpu0) || !same_roofline(ds_replica_roofline(st, r), ds_replica_roofline(st, 0)) ||
        sim_claims_cpu(claims, cpu, owner + r) != 0 || (in == NULL) != (in0 == NULL))
      return 0;
    if (in != NULL && (sim_link_bandwidth(in) != sim_link_bandwidth(in0) || sim_link_latency(in) != sim_link_latency(in0) ||
                       sim_claims_link(claims, in, owner + r) != 0))
      return 0;
    int w = ds_replica_worker(st, r);
    if (r > 0 && w != ds_replica_worker(st, r - 1)) {  /* a VM's replicas are consecutive (pipeline.c) */
      if (first.replicas == 0) first = vm;
      if (!same_input(&vm, &first)) return 0;
      vm = (vm_input){0, 0, 0};
    }
    int n = inp_plan_count(t->plan, 0, r);
    vm.replicas++;
    vm.examples += n;
    if (n > vm.largest) vm.largest = n;
    sim_cpu *host = ds_worker_cpu(st, w);
    if (sim_cpu_rate(host) != sim_cpu_rate(vm0) || sim_claims_cpu(claims, host, owner + t->nreplicas + w) != 0) return 0;
  }
  return first.replicas == 0 || same_input(&vm, &first);
}

/* Every line congruent to replica 0's for every program the run's steps compile: the count's
** pass, and with gradient accumulation each micro-batch's. */
static int congruent_lines(trainer *t, sim_claims *claims) {
  int n = inp_plan_count(t->plan, 0, 0), micro = accum_steps(t->in.s);
  for (int k = 0; k < micro; k++) {
    if (k > 0 && accum_count(n, k, micro) == accum_count(n, k - 1, micro)) continue;
    if (!mesh_congruent(t->mesh, cg_cache_get(t->programs, accum_count(n, k, micro)), claims)) return 0;
  }
  return 1;
}

int msym_admit(trainer *t) {
  if (!plain_run(t) || !same_programs(t)) return 0;
  sim_claims *claims = sim_claims_new();
  int lines = mesh_lines(t->mesh);
  int ok = same_devices(t, claims, lines) && congruent_lines(t, claims);
  sim_claims_free(claims);
  if (!ok) return 0;
  mesh_solo(t->mesh);
  t->symmetric = 1;
  return 1;
}
