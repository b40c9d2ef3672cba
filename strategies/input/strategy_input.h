/*
** strategy_input.h: tf.distribute.Strategy's input methods (experimental_distribute_dataset,
** distribute_datasets_from_function, experimental_distribute_values_from_function and TF1's
** make_*_iterator; ds_ as the Strategy methods they are): the strategy's replicas laid out for
** input.h, which does the distributing.
**
** The input methods hand input.h the strategy's layout: its input workers (the distinct hosts of
** the replicas, in the order replicas first name them: TF's InputWorkers), each worker's replica
** devices (or with fetch_to_device off, the worker's CPU for each of them), TPUStrategy's rules
** (PER_REPLICA is NotImplementedError) and the last-partial-batch handling, which MirroredStrategy
** and MultiWorkerMirroredStrategy have and the others (TPUStrategy by default) do not.
*/
#ifndef PODSIM_STRATEGY_INPUT_H
#define PODSIM_STRATEGY_INPUT_H

#include "strategies/core/strategy.h"
#include "strategies/input/input.h"

/* s's input layout (free() frees it): input workers in the order the replicas first name their
** hosts, each worker's replicas in replica order; replica_of[j] (N entries; may be NULL) gets the
** replica whose element is component j of a PerReplica input. NULL with NotImplementedError
** when the workers hold different numbers of replicas. */
ds_input_layout *ds_strategy_input_layout(const ds_strategy *s, const ds_input_options *options,
                                          int *replica_of, ds_status *st);
/* Strategy.experimental_distribute_dataset(dataset, options) (options may be NULL): the dataset
** rebatched and sharded over the strategy's input workers (input.h). The dataset stays the
** caller's. input.h's errors, and NotImplementedError when the replicas are spread unevenly over
** their hosts (a device assignment can do that; podsim's input splits a worker's share evenly). */
ds_input_dataset *ds_experimental_distribute_dataset(const ds_strategy *s, ds_dataset *dataset,
                                                     const ds_input_options *options, ds_status *st);
/* Strategy.distribute_datasets_from_function(dataset_fn, options): dataset_fn once per input
** worker with InputContext(W, w, N), or per replica with PER_REPLICA (NotImplementedError on
** TPUStrategy). */
ds_input_dataset *ds_distribute_datasets_from_function(const ds_strategy *s, ds_input_dataset_fn fn,
                                                       void *user, const ds_input_options *options,
                                                       ds_status *st);
/* Strategy.experimental_distribute_values_from_function(value_fn): value_fn once per replica
** with ValueContext(r, N), regrouped as a PerReplica on the replica devices; the default and
** one_device strategies return value_fn's tensor itself, as a regular value. */
ds_value *ds_experimental_distribute_values_from_function(const ds_strategy *s, ds_input_value_fn fn,
                                                          void *user, ds_status *st);
/* TF1 StrategyV1.make_dataset_iterator(dataset) and make_input_fn_iterator(input_fn,
** replication_mode): iterators that own their distributed dataset (input.h). */
ds_input_iterator *ds_make_dataset_iterator(const ds_strategy *s, ds_dataset *dataset, ds_status *st);
ds_input_iterator *ds_make_input_fn_iterator(const ds_strategy *s, ds_input_dataset_fn input_fn,
                                             void *user, ds_input_replication_mode mode,
                                             ds_status *st);

#endif
