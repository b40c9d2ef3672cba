/*
** multislice.h: several TPU slices of one type joined by the data-centre network (sim_multislice_),
** as Cloud TPU Multislice runs them, and the gradient all-reduce over all of their devices the
** way XLA/MegaScale runs it: hierarchically.
**
** Ranks: rank j * n + k is the device at grid position k (sim_tpu_device_grid_rank) of slice j,
** n devices a slice. Within a slice data moves over ICI as in sim/tpu.h; between slices a
** transfer goes from the chip to its host (PCIe up), out of that host's DCN link, into the
** receiving host's DCN link and down to the chip: the 8 (v5e, v6e) or 4 chips of a host share
** its DCN link, each direction at the catalogue's per-host figure.
**
** The all-reduce of `count` floats:
**   1. reduce-scatter within each slice over ICI (torus algorithm): device k holds the slice's
**      sum of chunk k of n (chunks as collective.h cuts them);
**   2. all-reduce across slices over DCN of each chunk: the n groups {j * n + k : j} at once,
**      each a ring over the S slices;
**   3. all-gather within each slice over ICI.
** Every device ends with the same bits: a chunk's sum is the slice sums in the torus order,
** then added across slices in the ring's order.
*/
#ifndef PODSIM_MULTISLICE_H
#define PODSIM_MULTISLICE_H

#include "sim/collective.h"
#include "sim/tpu.h"

typedef struct sim_multislice sim_multislice;

/* `slices` (>= 1) slices of these dims (checked as sim_tpu_slice_new wants them) in e: slice 0
** is named as a lone slice, slice j > 0 as sim_tpu_slice_new_indexed. Each device reduces on
** its own cpu. Freed with sim_multislice_free before the engine. */
sim_multislice *sim_multislice_new(sim_engine *e, const sim_tpu_generation *g, const int dims[3], int slices,
                                   const sim_tpu_overrides *ov);
void sim_multislice_free(sim_multislice *m);

int sim_multislice_slices(const sim_multislice *m);
/* Devices in every slice together (slices x devices of one). */
int sim_multislice_ranks(const sim_multislice *m);
sim_tpu_slice *sim_multislice_slice(const sim_multislice *m, int j);

/* The group over every rank, routed as below, reducing on each device's cpu: what sub-groups of
** ranks across or within slices are cut from (sim_collective_new_subgroup). */
sim_collective *sim_multislice_group(const sim_multislice *m);

/* A sim_route_fn over the ranks above (ctx = the multislice). */
size_t sim_multislice_route(void *multislice, int from, int to, sim_link **out, size_t max);

/* The hierarchical all-reduce started engine-side: bufs holds a buffer of `count` floats per
** rank or is NULL (numerics off); done(arg) fires once every device has the sum. SIM_OK, or
** SIM_COLL_EBUSY while one is under way. */
typedef void (*sim_multislice_done_fn)(sim_engine *e, sim_multislice *m, void *arg);
int sim_multislice_all_reduce_start(sim_multislice *m, float *const *bufs, size_t count,
                                    sim_multislice_done_fn done, void *arg);
/* The same from each rank's actor, blocking until its device has the sum: SIM_OK, or SIM_FAILED
** when a device of a group it waits on was killed. */
int sim_multislice_all_reduce(sim_actor *self, sim_multislice *m, int rank, float *buf, size_t count);
/* The last all-reduce, start to end, and its DCN phase (2.) alone: engine-side, from the start to
** the last device; blocking, from the last rank's call to rank 0's end (as a collective counts
** from its last arrival), the DCN phase from rank 0's call of it (waits for its group count). */
sim_time sim_multislice_last_duration(const sim_multislice *m);
sim_time sim_multislice_last_dcn_duration(const sim_multislice *m);

#endif
