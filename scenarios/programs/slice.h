/*
** slice.h: the scenario's TPU slice and the TPU strategies on it (slice_).
**
** A TPU run builds, in order: the slice's resources (sim/tpu.h, with cluster.tpu.overrides;
** each device computes at peak x efficiency), then what TensorFlow's program does:
** TPUClusterResolver -> initialize_tpu_system (the Topology) -> DeviceAssignment.build when the
** scenario gives strategy.device_assignment (tpu_v1's num_cores is a device assignment of that
** many one-core replicas) -> TPUStrategy's layout -> the strategy on the slice
** (strategies/tpu/tpu_strategy.h). The objects live as long as the run.
*/
#ifndef PODSIM_SLICE_H
#define PODSIM_SLICE_H

#include "scenarios/config/scenario.h"
#include "sim/multislice.h"
#include "sim/tpu.h"
#include "strategies/core/strategy.h"

typedef struct slice_run slice_run;

/* cluster.tpu's chips per axis as TPUClusterResolver takes a topology: "AxB" on the 2D
** generations, "AxBxC" on v4 and v5p. Returns buf. */
const char    *slice_topology(const scenario *s, char *buf, size_t len);

/* A chip's peak FLOP/s: cluster.tpu.overrides.peak_bf16, else the catalogue's. */
double         slice_chip_peak_flops(const scenario *s);

/* The slice of cluster.tpu in e, its devices at peak x efficiency (1 for a collective workload,
** whose devices only reduce). Freed with sim_tpu_slice_free before the engine. */
sim_tpu_slice *slice_new(const scenario *s, sim_engine *e, double efficiency);

/* cluster.tpu.slices slices of cluster.tpu joined by DCN, as slice_new makes one. Freed with
** sim_multislice_free before the engine. */
sim_multislice *slice_multi_new(const scenario *s, sim_engine *e, double efficiency);

/* The scenario's TPU strategy (tpu, tpu_v1, gnn_runner_tpu) on its slice. The loader has checked
** the device assignment, so this does not fail. */
/* How one device of cluster.tpu turns ops into time: its cpu's rate, HBM bandwidth and per-op
** model (none when tpu.overrides.efficiency is given: the scalar roofline at that efficiency). */
sim_roofline  slice_device_roofline(const scenario *s);
slice_run    *slice_run_new(const scenario *s, sim_engine *e, sim_algo algo);
ds_strategy  *slice_run_strategy(const slice_run *r);
/* tpu_v1: TF1's TPUStrategy behind the strategy (its loop's launch and fetch); NULL otherwise. */
struct ds_tpu_v1;
struct ds_tpu_v1 *slice_run_tpu_v1(const slice_run *r);
/* The slice under the strategy: faults find its hosts, devices and links there (the first of
** several, whose faults the loader refuses). */
const sim_tpu_slice *slice_run_slice(const slice_run *r);
void          slice_run_free(slice_run *r);

#endif
