/* slice.c: the scenario's TPU slice and the TPU strategies on it (slice_). */
#include "scenarios/programs/slice.h"

#include <assert.h>
#include <stdio.h>

#include "scenarios/config/machines.h"
#include "scenarios/programs/train.h"
#include "strategies/tpu/device_assignment.h"
#include "strategies/tpu/sharding.h"
#include "strategies/tpu/tpu_strategy.h"
#include "strategies/tpu/tpu_v1.h"

struct slice_run {
  sim_tpu_slice *slice;       /* the hardware; NULL for tpu_v1, whose slice is v1's, and for several */
  sim_multislice *multi;      /* several slices (cluster.tpu.slices > 1): all of them; else NULL */
  ds_tpu_v1 *v1;              /* tpu_v1: TF1's TPUStrategy, owning its strategy and slice */
  ds_tpu_resolver *resolver;  /* TPUClusterResolver(tpu="") for it */
  ds_tpu_topology *topology;  /* what initialize_tpu_system returned */
  ds_device_assignment *da;   /* the device assignment, NULL for none */
  ds_sharding_layout *layout; /* TPUStrategy's [replica][logical device] table */
  ds_strategy *strategy;      /* the strategy on all of it */
};

static const sim_tpu_generation *generation(const scenario *s) {
  const sim_tpu_generation *g = NULL;
  int chips, dims[3];
  sim_tpu_slice_parse(s->tpu_type, &g, &chips, dims, NULL, 0);
  assert(g != NULL);  /* the loader parsed cluster.tpu.type */
  return g;
}

const char *slice_topology(const scenario *s, char *buf, size_t len) {
  if (sim_tpu_generation_figures(generation(s))->rank == 2)
    snprintf(buf, len, "%dx%d", s->tpu_dims[0], s->tpu_dims[1]);
  else
    snprintf(buf, len, "%dx%dx%d", s->tpu_dims[0], s->tpu_dims[1], s->tpu_dims[2]);
  return buf;
}

double slice_chip_peak_flops(const scenario *s) {
  return s->tpu_peak_flops > 0 ? s->tpu_peak_flops : sim_tpu_generation_figures(generation(s))->peak_flops;
}

/* cluster.tpu.overrides as the slice takes them, its devices at peak x efficiency. */
static sim_tpu_overrides overrides_of(const scenario *s, double efficiency) {
  return (sim_tpu_overrides){ (uint64_t)s->tpu_hbm_bytes, s->tpu_ici_bytes_per_s,
                              slice_chip_peak_flops(s) * efficiency };
}

sim_tpu_slice *slice_new(const scenario *s, sim_engine *e, double efficiency) {
  sim_tpu_overrides ov = overrides_of(s, efficiency);
  return sim_tpu_slice_new(e, generation(s), s->tpu_dims, &ov);
}

sim_multislice *slice_multi_new(const scenario *s, sim_engine *e, double efficiency) {
  sim_tpu_overrides ov = overrides_of(s, efficiency);
  return sim_multislice_new(e, generation(s), s->tpu_dims, s->tpu_slices, &ov);
}

/* The rate of a device's cpu over its peak: an efficiency given overrides the per-op model with
** the scalar roofline (sim/roofline.h); the per-op model runs the cpu at peak; a generation the
** per-op model does not know keeps the scalar roofline at the default efficiency. */
static double slice_cpu_efficiency(const scenario *s) {
  if (s->tpu_efficiency > 0) return s->tpu_efficiency;
  const char *gen = sim_tpu_generation_figures(generation(s))->name;
  return machines_tpu_opmodel(gen, 1, 1).units > 0 ? 1.0 : MACHINE_ACCEL_EFFICIENCY;
}

sim_roofline slice_device_roofline(const scenario *s) {
  const sim_tpu_figures *f = sim_tpu_generation_figures(generation(s));
  double per_chip = f->devices_per_chip;
  double peak = slice_chip_peak_flops(s);
  sim_opmodel op = s->tpu_efficiency > 0 ? (sim_opmodel){0}
                   : machines_tpu_opmodel(f->name, f->cores_per_chip / f->devices_per_chip, peak / per_chip);
  return (sim_roofline){ peak * slice_cpu_efficiency(s) / per_chip, f->hbm_bytes_per_s / per_chip, op };
}

static ds_kind kind_of(scn_strategy_kind k) {
  return k == SCN_STRATEGY_GNN_RUNNER_TPU ? DS_GNN_RUNNER_TPU : DS_TPU;
}

slice_run *slice_run_new(const scenario *s, sim_engine *e, sim_algo algo) {
  slice_run *r = base_xcalloc(1, sizeof *r);
  const sim_tpu_generation *g = generation(s);
  const sim_tpu_figures *f = sim_tpu_generation_figures(g);
  char topology[32];
  r->resolver = ds_tpu_resolver_new("", s->tpu_type, slice_topology(s, topology, sizeof topology), NULL);
  assert(r->resolver != NULL);  /* the loader resolved the same slice */
  sim_roofline device = slice_device_roofline(s);
  double efficiency = slice_cpu_efficiency(s);
  ds_tpu_machine m = { device.mem_bw, device.rate, MACHINE_ACCEL_WORKSPACE_BYTES,
                       machines_tpu_host_vcpus(f->name) * MACHINE_N2_FLOPS_PER_VCPU, device.op };
  if (s->strategy == SCN_STRATEGY_TPU_V1) {
    /* TF1's TPUStrategy(resolver, steps_per_run, num_cores): its towers, its loop's launch. */
    sim_tpu_overrides ov = overrides_of(s, efficiency);
    ds_tpu_v1_options o = ds_tpu_v1_options_default();
    o.steps_per_run = s->steps_per_run;
    o.num_cores = s->num_cores;
    o.loop_overhead = sim_time_from_s(s->host_round_trip_s);
    o.overrides = &ov;
    r->v1 = ds_tpu_v1_new(e, r->resolver, &o, &m, algo, NULL);
    assert(r->v1 != NULL);  /* the loader checked steps_per_run and num_cores */
    r->strategy = ds_tpu_v1_strategy(r->v1);
    return r;
  }
  if (s->tpu_slices > 1) {  /* the loader allows strategy tpu alone, without device assignment */
    r->multi = slice_multi_new(s, e, efficiency);
    r->strategy = ds_tpu_strategy_new_multislice(e, r->multi, &m);
    return r;
  }
  r->slice = slice_new(s, e, efficiency);
  r->topology = ds_tpu_initialize_system(r->resolver);
  static const int ONES[4] = { 1, 1, 1, 1 };
  if (s->has_device_assignment)
    r->da = ds_device_assignment_build(r->topology, 4, s->da_shape, 4, s->da_stride, s->da_num_replicas,
                                       DS_DEVICE_ORDER_AUTO, NULL);
  else if (s->num_cores > 0)
    r->da = ds_device_assignment_build(r->topology, 4, ONES, 0, NULL, s->num_cores, DS_DEVICE_ORDER_AUTO, NULL);
  assert(r->da != NULL || (!s->has_device_assignment && s->num_cores == 0));
  r->layout = ds_sharding_layout_new(r->topology, r->da, s->spmd, "worker");
  r->strategy = ds_tpu_strategy_new(e, kind_of(s->strategy), r->slice, r->layout, &m, algo);
  return r;
}

const sim_tpu_slice *slice_run_slice(const slice_run *r) {
  return r->v1 ? ds_tpu_v1_slice(r->v1) : r->multi ? sim_multislice_slice(r->multi, 0) : r->slice;
}

ds_tpu_v1 *slice_run_tpu_v1(const slice_run *r) { return r->v1; }

ds_strategy *slice_run_strategy(const slice_run *r) { return r->strategy; }

void slice_run_free(slice_run *r) {
  if (r == NULL) return;
  if (r->v1) ds_tpu_v1_free(r->v1);  /* its strategy and slice with it */
  else ds_strategy_free(r->strategy);
  ds_sharding_layout_free(r->layout);
  ds_device_assignment_free(r->da);
  ds_tpu_topology_free(r->topology);
  ds_tpu_resolver_free(r->resolver);
  sim_tpu_slice_free(r->slice);
  sim_multislice_free(r->multi);
  free(r);
}
