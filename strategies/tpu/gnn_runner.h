/*
** gnn_runner.h: TF-GNN's runner.TPUStrategy (ds_gnn_runner_), from
** tensorflow_gnn/runner/utils/strategies.py (tf-distribute-semantics.md section 8).
**
** TPUStrategy(tpu="") there is four steps: resolver = TPUClusterResolver(tpu); connect to the
** cluster; initialize the TPU system; tf.distribute.TPUStrategy(resolver) with no device
** assignment and no SPMD. So every TPU device of the slice is a replica of one logical device,
** in TF's task-then-ordinal order, and the strategy is the TF2 TPUStrategy of tpu_strategy.h in
** everything but its kind.
*/
#ifndef PODSIM_GNN_RUNNER_H
#define PODSIM_GNN_RUNNER_H

#include "strategies/tpu/tpu_strategy.h"
#include "strategies/tpu/tpu_topology.h"

/* runner.TPUStrategy(tpu) on the slice the scenario names (slice "v4-32", topology NULL for its
** default): a strategy of kind DS_GNN_RUNNER_TPU built in e, which owns the slice and the TPU
** system's tables (ds_strategy_free releases them). The resolver it connects is reported through
** resolver_out when that is not NULL (the caller frees it; it is initialized), else freed.
** tpu NULL is "". ValueError from TPUClusterResolver on a bad slice or topology; NULL then. */
ds_strategy *ds_gnn_runner_tpu_strategy_new(sim_engine *e, const char *tpu, const char *slice,
                                            const char *topology, const ds_tpu_machine *m,
                                            sim_algo algo, ds_tpu_resolver **resolver_out,
                                            ds_status *st);

#endif
