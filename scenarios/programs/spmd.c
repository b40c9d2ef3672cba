/*
** spmd.c: variables split over a replica's logical devices (strategy.split_to_logical_devices:
** megatron, with spmd_xla_partitioning): what each device holds and the activation collectives
** XLA's SPMD partitioner adds to a replica's step (train__split_).
**
** Design notes
** ------------
** Which variables split and which collectives follow is the model's (models/model.h,
** md_model_tensor_parallel, Megatron-LM's tensor parallelism). The values are computed once per
** replica, unsplit (model.c invariant 9): splitting changes memory and time, never a bit of the
** losses or weights. The collectives run among the replica's own devices, which a device
** assignment places next to each other, so they are charged in closed form as a ring over them:
** an all-reduce of B bytes 2 (N - 1) / N B at one ICI link's bandwidth (one direction) plus
** 2 (N - 1) hops and the generation's cost per collective (sim/tpu.c), an all-gather of a
** B-byte whole half of that and one collective's cost; each after the other, not
** overlapped with compute (XLA's asynchronous collectives hide part of it: an upper bound).
**
** Invariants:
**  1. Without split_to_logical_devices (or with one logical device) a device holds every variable
**     whole and no collective is added: the run is the one before splitting existed.
*/
#include "scenarios/programs/trainSync.h"

#include "sim/tpu.h"

void train__split_plan(trainer *t, const md_model *m) {
  int devices = t->spmd && t->in.s->split_variables ? t->cores : 1;
  md_model_tensor_parallel(m, devices, &t->split);
  t->split_devices = devices;
}

sim_time train__split_comm_ps(const trainer *t, int examples) {
  const md_tensor_parallel *tp = &t->split;
  int n = t->split_devices;
  if (n == 1 || examples == 0) return 0;
  const scenario *s = t->in.s;
  const sim_tpu_figures *f = sim_tpu_generation_figures(sim_tpu_slice_generation(slice_run_slice(t->tpu)));
  double bw = sim_tpu_ici_rate(f, s->tpu_ici_bytes_per_s);
  double share = (double)(n - 1) / n, bytes = 0;
  long hops = 0, collectives = 0;
  for (int pass = 0; pass < 2; pass++) {
    bytes += 2.0 * share * tp->all_reduce_bytes[pass] + share * tp->all_gather_bytes[pass];
    hops += (long)(n - 1) * (2L * tp->all_reduces[pass] + tp->all_gathers[pass]);
    collectives += tp->all_reduces[pass] + tp->all_gathers[pass];
  }
  return sim_time_from_s(bytes * examples / bw) + hops * f->ici_latency + collectives * f->collective_cost;
}
