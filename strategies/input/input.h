/*
** input.h: tf.distribute's input distribution (ds_input_).
**
** experimental_distribute_dataset, distribute_datasets_from_function,
** experimental_distribute_values_from_function and the TF1 make_dataset_iterator /
** make_input_fn_iterator, over a plain description of where the replicas are (ds_input_layout)
** so that any strategy can hand its layout over. podsim simulates every worker in one process,
** so a distributed dataset builds every worker's input pipeline; an iterator yields PerReplica
** values whose components are in global replica order (worker-major), each on its replica's
** device. The rules are tf-distribute-semantics.md section 5; docs/strategies.md (Input
** distribution) lists the choices made where TensorFlow is ambiguous. The Strategy methods of
** strategy_input.h build the layout from a strategy.
*/
#ifndef PODSIM_INPUT_H
#define PODSIM_INPUT_H

#include <stdint.h>
#include "strategies/input/dataset.h"
#include "strategies/core/status.h"
#include "strategies/core/values.h"

/* Where the replicas are, as a strategy knows it. */
typedef struct ds_input_layout {
  int num_workers;            /* input workers W (hosts that run an input pipeline) */
  int num_replicas_in_sync;   /* N; each worker has N / W replicas */
  int worker_index;           /* -1: iterators yield every replica; w: only worker w's, as
                              ** experimental_local_results does on that worker */
  const char *const *devices; /* N replica device names, worker-major; NULL for none */
  int tpu;                    /* a TPUStrategy: PER_REPLICA input is not implemented */
  int partial_batch_handling; /* the strategy handles a last partial batch (get_next as
                              ** optional): MirroredStrategy and MultiWorkerMirrored do,
                              ** TPUStrategy does not by default */
} ds_input_layout;

/* tf.distribute.InputReplicationMode */
typedef enum { DS_INPUT_PER_WORKER = 0, DS_INPUT_PER_REPLICA = 1 } ds_input_replication_mode;

/* tf.distribute.InputOptions */
typedef struct ds_input_options {
  int fetch_to_device;        /* experimental_fetch_to_device */
  ds_input_replication_mode replication_mode; /* experimental_replication_mode */
  int place_dataset_on_device;/* experimental_place_dataset_on_device */
  int per_replica_buffer_size;/* experimental_per_replica_buffer_size */
} ds_input_options;

/* TF's defaults: fetch_to_device on, PER_WORKER, not placed on device, buffer 1. */
ds_input_options ds_input_options_default(void);

/* tf.distribute.InputContext */
typedef struct ds_input_context {
  int num_input_pipelines;    /* pipelines in the cluster */
  int input_pipeline_id;      /* this pipeline, in [0, num_input_pipelines) */
  int num_replicas_in_sync;   /* replicas the global batch is split over */
} ds_input_context;

/* InputContext() with TF's defaults (1, 0, 1). */
ds_input_context ds_input_context_default(void);
/* get_per_replica_batch_size(global_batch_size): ValueError (returns -1) unless
** num_replicas_in_sync divides it. */
int64_t ds_input_context_per_replica_batch_size(const ds_input_context *ctx,
                                                int64_t global_batch_size, ds_status *st);

/* tf.distribute.experimental.ValueContext */
typedef struct ds_input_value_context {
  int replica_id_in_sync_group; /* the replica a value is for */
  int num_replicas_in_sync;     /* replicas in the strategy */
} ds_input_value_context;

/* distribute.batch_sizes_for_worker: sizes[0..N) for worker w of W with R replicas each.
** With f = G / N, worker 0 has f + 1 for its first G - N*f sub-batches and f after; worker w
** rotates that left by w*R. The single source of the rebatch rule. */
void    ds_input_batch_sizes_for_worker(int64_t global_batch_size, int num_workers,
                                        int replicas_per_worker, int worker, int64_t *sizes);
/* Entry i of that list. */
int64_t ds_input_subbatch_size(int64_t global_batch_size, int num_workers,
                               int replicas_per_worker, int worker, int i);

typedef struct ds_input_dataset ds_input_dataset;   /* tf.distribute.DistributedDataset */
typedef struct ds_input_iterator ds_input_iterator; /* tf.distribute.DistributedIterator */

/* strategy.experimental_distribute_dataset(dataset, options). options may be NULL. The dataset
** stays the caller's. ValueError for a bad layout, N % W != 0, scalar elements to rebatch, or
** contradictory options; NotImplementedError for PER_REPLICA or the HINT policy;
** NotFoundError / InvalidArgumentError from FILE sharding. */
ds_input_dataset *ds_input_distribute_dataset(const ds_input_layout *layout, ds_dataset *dataset,
                                              const ds_input_options *options, ds_status *st);

/* dataset_fn for distribute_datasets_from_function and make_input_fn_iterator: returns a new
** dataset (the caller of dataset_fn frees it), or NULL with st set. */
typedef ds_dataset *(*ds_input_dataset_fn)(const ds_input_context *ctx, void *user,
                                           ds_status *st);

/* strategy.distribute_datasets_from_function(dataset_fn, options): dataset_fn runs once per
** worker (PER_WORKER: InputContext(W, w, N)) or once per replica (PER_REPLICA:
** InputContext(N, r, N)); its datasets are neither rebatched nor sharded. */
ds_input_dataset *ds_input_distribute_datasets_from_function(const ds_input_layout *layout,
                                                             ds_input_dataset_fn fn, void *user,
                                                             const ds_input_options *options,
                                                             ds_status *st);
void ds_input_dataset_free(ds_input_dataset *dd);

/* Pipelines: one per worker, or one per replica with PER_REPLICA. */
int               ds_input_dataset_num_pipelines(const ds_input_dataset *dd);
const ds_dataset *ds_input_dataset_pipeline(const ds_input_dataset *dd, int pipeline);
/* Whether iterators hand data-less replicas empty batches while any replica has data. */
int               ds_input_dataset_get_next_as_optional(const ds_input_dataset *dd);
int               ds_input_dataset_num_components(const ds_input_dataset *dd);

/* iter(dist_dataset). The dataset must outlive the iterator. */
ds_input_iterator *ds_input_iterator_new(ds_input_dataset *dd);
/* next(iterator): out[0..num_components) get one PerReplica each (the caller frees them).
** With get_next_as_optional, replicas without data get empty batches while any replica has
** data; without it, any replica without data ends the input. At the end: -1 with
** OutOfRangeError. */
int  ds_input_get_next(ds_input_iterator *it, ds_value **out, ds_status *st);
/* iterator.get_next_as_optional(): *has_value 0 at the end (out untouched), else as get_next. */
int  ds_input_get_next_as_optional(ds_input_iterator *it, ds_value **out, int *has_value,
                                   ds_status *st);
/* TF1 iterator.initialize(): back to the first element. */
void ds_input_iterator_initialize(ds_input_iterator *it);
void ds_input_iterator_free(ds_input_iterator *it);

/* TF1 strategy.make_dataset_iterator(dataset): experimental_distribute_dataset and an iterator
** over it, which owns the distributed dataset. */
ds_input_iterator *ds_input_make_dataset_iterator(const ds_input_layout *layout,
                                                  ds_dataset *dataset, ds_status *st);
/* TF1 strategy.make_input_fn_iterator(input_fn, replication_mode): input_fn runs once per
** worker with InputContext(W, w, N) and that worker's replicas dequeue from it. ValueError for
** any mode but PER_WORKER. */
ds_input_iterator *ds_input_make_input_fn_iterator(const ds_input_layout *layout,
                                                   ds_input_dataset_fn input_fn, void *user,
                                                   ds_input_replication_mode mode,
                                                   ds_status *st);

/* value_fn for experimental_distribute_values_from_function: a new tensor, or NULL with st. */
typedef md_tensor *(*ds_input_value_fn)(const ds_input_value_context *ctx, void *user,
                                        ds_status *st);
/* strategy.experimental_distribute_values_from_function(value_fn): a PerReplica of value_fn's
** results, one per replica of the layout (worker_index selects one worker's). */
ds_value *ds_input_distribute_values_from_function(const ds_input_layout *layout,
                                                   ds_input_value_fn fn, void *user,
                                                   ds_status *st);

#endif
