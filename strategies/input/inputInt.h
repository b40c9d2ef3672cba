/*
** inputInt.h: what the strategies/input/ sources share and nothing else (ds__ prefix): dataset.c's
** auto-shard rewrites for input.c, and input.c's mark on the distributed datasets
** strategy_input.c makes for ParameterServerStrategy.
*/
#ifndef PODSIM_INPUTINT_H
#define PODSIM_INPUTINT_H

#include <stdint.h>

#include "strategies/input/input.h"

/* dataset.c: the graph rewrites of tf.data's auto-shard, for input.c. */
struct ds_dataset;
struct ds_status;
struct ds_tensor_spec;
struct md_tensor;
/* FILE sharding: the same pipeline reading only files index, index + num_shards, ...
** NotFoundError when no reader (ds_dataset_from_files) feeds it. With fewer files than shards,
** as TF's require_non_empty: a shard with a file fails on its first element with
** InvalidArgumentError, a shard without one is empty. */
struct ds_dataset *ds__dataset_shard_files(struct ds_dataset *ds, int64_t num_shards,
                                           int64_t index, struct ds_status *st);
/* DATA sharding: shard(num_shards, index) at the end of the pipeline, under a final prefetch
** so that the prefetch still buffers whole shard elements. The shard is require_non_empty as
** TF's rewrite makes it: with fewer elements than shards, a shard's first element is an
** InvalidArgumentError (a shard past the end is empty). */
struct ds_dataset *ds__dataset_shard_data(struct ds_dataset *ds, int64_t num_shards,
                                          int64_t index);
/* Whether every iterator of ds yields the same elements: no shuffle (each new iterator of a
** shuffle draws the next seed stream) and no map (a user function may keep state). */
int ds__dataset_replays(const struct ds_dataset *ds);
/* Another reference to ds, for a pipeline that needs no transformation. */
struct ds_dataset *ds__dataset_ref(struct ds_dataset *ds);
/* An empty batch of a component: 0 rows, and 0 wherever the spec does not know a dim. */
struct md_tensor *ds__dataset_empty_batch(const struct ds_tensor_spec *spec);

/* input.c: marks a distributed dataset ParameterServerStrategy made: iterating it is TF's ValueError. */
void ds__input_dataset_set_unbuilt(struct ds_input_dataset *dd);

#endif
