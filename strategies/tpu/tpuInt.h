/*
** tpuInt.h: what the strategies/tpu/ sources share and nothing else (ds__ prefix).
*/
#ifndef PODSIM_TPUINT_H
#define PODSIM_TPUINT_H

#include <stddef.h>

#include "strategies/core/strategiesInt.h"
#include "strategies/tpu/tpu_strategy.h"
#include "strategies/tpu/tpu_topology.h"

/* tpu_topology.c: n ints as "[1, 1, 1, 2]" into buf, for messages about shapes and coordinates;
** returns buf. */
const char *ds__ints_str(const int *v, int n, char *buf, size_t len);

/* tpu_topology.c: the Topology of the slice a resolver names, as TF's TPU system metadata query
** reads it, without initializing the system (what initialize_tpu_system returns). */
struct ds_tpu_resolver;
struct ds_tpu_topology;
struct ds_tpu_topology *ds__tpu_system_topology(const struct ds_tpu_resolver *r);

/* tpu_strategy.c: a TPUStrategy of `kind` on the slice resolver r names, built in e with
** everything it stands on (the slice, its Topology, a device assignment, the layout), which the
** strategy owns. ndevices == 0: every TPU device, in TF2's task-then-ordinal order, one logical
** device each; otherwise replica i runs on device devices[i] of that list alone. The devices'
** job is "localhost" for tpu="local", else the resolver's. Never fails on a resolver that
** ds_tpu_resolver_new accepted and valid device indices. The devices are numbered as sim/tpu
** numbers them (task * devices per task + ordinal); overrides (NULL: none) set the slice's figures;
** *slice_out (when not NULL) gets the slice. */
struct ds_tpu_machine;
struct sim_tpu_slice;
struct sim_tpu_overrides;
ds_strategy *ds__tpu_strategy_on_resolver(sim_engine *e, ds_kind kind, const struct ds_tpu_resolver *r,
                                          int ndevices, const int *devices,
                                          const struct ds_tpu_machine *m, sim_algo algo,
                                          const struct sim_tpu_overrides *overrides,
                                          struct sim_tpu_slice **slice_out);

#endif
