/*
** tpu_strategy.h: tf.distribute.TPUStrategy on a simulated slice (ds_tpu_strategy_).
**
** TPUStrategy(resolver, experimental_device_assignment, experimental_spmd_xla_partitioning) is
** a strategy over the layout's [replica][logical device] table (sharding.h): each entry is the
** slice device TensorFlow names "/job:worker/replica:0/task:T/device:TPU:K", which sim/tpu.h
** numbers T * devices_per_host + K. The replicas' gradients are summed over the ICI between
** their logical device 0; when the replicas are every device of the slice, one per chip or core,
** that all-reduce runs on the slice's torus (every axis at once, wrapping where the slice wraps),
** otherwise on the replicas as a ring. Each device is fed by its host's CPU over its chip's PCIe
** link. Reduce and gather results go to the first TPU host (ds_sharding_host_device), and gather
** demands one shape of every component, as TPUStrategy does.
**
** The strategy object keeps its layout, so TPUStrategy's own methods take the strategy: run with
** the pure-eager check, the logical-device annotations, experimental_logical_device. Reductions
** follow TPUExtended._reduce_to (distribute.h, context.h): SUM and MEAN only (NotImplementedError
** otherwise), a MEAN multiplies by 1/num_replicas instead of dividing, and a cross-replica reduce
** adds the components on the host in replica order. Variables created in its scope are placed
** by ds_sharding_variable_copies (variable.h). These functions refuse a strategy that is not a
** TPUStrategy with TypeError (Python's AttributeError: the method does not exist there).
*/
#ifndef PODSIM_TPU_STRATEGY_H
#define PODSIM_TPU_STRATEGY_H

#include "sim/tpu.h"
#include "strategies/core/context.h"
#include "strategies/tpu/sharding.h"
#include "strategies/core/strategy.h"

/* What the slice does not say about its devices and hosts. */
typedef struct ds_tpu_machine {
  double hbm_bytes_per_s;  /* one device's HBM bandwidth (the roofline's memory roof) */
  double compute_flops;    /* one device's cpu rate: peak x efficiency, or its peak with op */
  double workspace_bytes;  /* HBM the TPU runtime keeps on each device */
  double host_flops_per_s; /* one TPU VM host's CPU, where its input pipeline runs */
  sim_opmodel op;          /* one device's per-op model (sim/roofline.h); units 0: scalar roofline */
} ds_tpu_machine;

/* A TPUStrategy of `kind` (DS_TPU or DS_GNN_RUNNER_TPU) over layout l on slice, built in e.
** The slice and layout must describe the same hardware (the resolver's slice spec); they are
** borrowed and must outlive the strategy. algo SIM_ALGO_TORUS asks for the torus, which a
** partial set of replicas cannot use: they fall back to a ring. */
ds_strategy *ds_tpu_strategy_new(sim_engine *e, ds_kind kind, sim_tpu_slice *slice,
                                 const ds_sharding_layout *l, const ds_tpu_machine *m, sim_algo algo);
/* TPUStrategy for data parallelism across the slices of ms (Cloud TPU Multislice): one replica per
** device of every slice, in TF's order (slice j's hosts are tasks j x hosts .. , each with its
** devices), and the gradient all-reduce XLA's hierarchical one (sim/multislice.h): ICI within
** each slice, DCN across. No device assignment or SPMD: a replica is one device. ms is borrowed
** and must outlive the strategy. */
ds_strategy *ds_tpu_strategy_new_multislice(sim_engine *e, sim_multislice *ms, const ds_tpu_machine *m);

/* extended._tpu_devices and the rest of the layout the strategy was built from; NULL for a
** strategy that is not a TPUStrategy over a layout. */
const ds_sharding_layout *ds_tpu_strategy_layout(const ds_strategy *s);

/* TPUStrategy.run(fn, args): validate_run_function, then ds_run. fn_is_compiled says fn is a
** tf.function (or a ConcreteFunction, or an object whose __call__ is one); executing_eagerly is
** false inside a tf.function. A pure-eager call is a NotImplementedError and runs nothing. */
int ds_tpu_strategy_run(ds_strategy *s, int fn_is_compiled, int executing_eagerly, ds_replica_fn fn,
                        void *user, int nargs, ds_value *const *args, int nresults, ds_value **results,
                        ds_status *st);

/* strategy.experimental_assign_to_logical_device(t, id), experimental_split_to_logical_devices(t,
** dims) and experimental_replicate_to_logical_devices(t) over the strategy's layout: the
** ds_sharding_ functions of sharding.h, with their ValueErrors. Return 0 or -1. */
int ds_tpu_strategy_assign_to_logical_device(const ds_strategy *s, const md_tensor *t, int logical_device,
                                             ds_sharding *out, ds_status *st);
int ds_tpu_strategy_split_to_logical_devices(const ds_strategy *s, const md_tensor *t, int ndims,
                                             const int *dims, ds_sharding *out, ds_status *st);
int ds_tpu_strategy_replicate_to_logical_devices(const ds_strategy *s, const md_tensor *t, ds_sharding *out,
                                                 ds_status *st);

/* `with strategy.extended.experimental_logical_device(id):` is begin ... end: variables created
** inside go on logical device id of every replica. ValueError unless 0 <= id < logical devices;
** ending without a begin on s: RuntimeError. Nests. */
int ds_tpu_strategy_logical_device_begin(ds_strategy *s, int logical_device, ds_status *st);
int ds_tpu_strategy_logical_device_end(ds_strategy *s, ds_status *st);
/* The innermost logical device entered on s, 0 outside any (TF's _logical_device_stack[-1]). */
int ds_tpu_strategy_logical_device(const ds_strategy *s);

#endif
