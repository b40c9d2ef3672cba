/*
** dataset.h: the subset of tf.data that input distribution works on (ds_dataset_).
**
** A dataset is an immutable pipeline node: a source (range, from_tensor_slices, from_tensors,
** a list of files) or a transformation of another dataset (batch, unbatch, rebatch, repeat,
** take, shard, shuffle, prefetch, map, options). Elements are tuples of 1..DS_DATASET_MAX_COMPONENTS
** md_tensor (features and labels, say). Building a transformation takes a reference to its
** input, so the caller frees every handle it made, in any order, exactly as Python drops
** references. Each node knows its element spec (dtype, rank, dims with -1 unknown) and its
** cardinality, because tf.distribute decides how to rebatch and whether to handle a last
** partial batch from them before any element exists.
**
** Pure data: no simulated time. prefetch only records its buffer (timing comes later).
** Errors are TensorFlow's: InvalidArgumentError where TF's kernel checks an argument,
** ValueError where its Python wrapper does, OutOfRangeError at the end of input.
*/
#ifndef PODSIM_DS_DATASET_H
#define PODSIM_DS_DATASET_H

#include <stddef.h>
#include <stdint.h>
#include "models/tensor.h"
#include "strategies/core/status.h"

#define DS_DATASET_MAX_COMPONENTS 8
#define DS_DATASET_INFINITE (-1)   /* tf.data.INFINITE_CARDINALITY */
#define DS_DATASET_UNKNOWN  (-2)   /* tf.data.UNKNOWN_CARDINALITY */
#define DS_DATASET_AUTOTUNE (-1)   /* tf.data.AUTOTUNE, a prefetch buffer size */

/* tf.data.experimental.AutoShardPolicy, with TensorFlow's values. */
typedef enum {
  DS_AUTO_SHARD_OFF = -1,
  DS_AUTO_SHARD_AUTO = 0,
  DS_AUTO_SHARD_FILE = 1,
  DS_AUTO_SHARD_DATA = 2,
  DS_AUTO_SHARD_HINT = 3
} ds_auto_shard_policy;

/* tf.TensorSpec of one component of an element. */
typedef struct ds_tensor_spec {
  md_dtype dtype;         /* element type */
  int rank;               /* always known here */
  int64_t dims[MD_TENSOR_MAX_RANK]; /* dims[0..rank), -1 where TF's static shape has None */
} ds_tensor_spec;

typedef struct ds_dataset ds_dataset;
typedef struct ds_dataset_iterator ds_dataset_iterator;

/* map's function: reads the n_in tensors of one element (borrowed) and stores n_out new
** tensors in out[] (the iterator owns them). Returns 0, or -1 with st set. */
typedef int (*ds_dataset_map_fn)(md_tensor *const *in, int n_in, md_tensor **out, int n_out,
                                 void *user, ds_status *st);

/* ---- sources ---- */
/* Dataset.range(start, stop, step): int64 scalars. InvalidArgumentError if step is 0. */
ds_dataset *ds_dataset_range(int64_t start, int64_t stop, int64_t step, ds_status *st);
/* Dataset.from_tensor_slices((t0, t1, ...)): row i of every tensor is element i; the tensors
** are copied. ValueError for a scalar or when the first dimensions differ. */
ds_dataset *ds_dataset_from_tensor_slices(int n, md_tensor *const *tensors, ds_status *st);
/* Dataset.from_tensors((t0, t1, ...)): one element, the tensors themselves (copied). */
ds_dataset *ds_dataset_from_tensors(int n, md_tensor *const *tensors, ds_status *st);
/* A reader dataset (what TFRecordDataset(filenames) is to FILE auto-sharding): file f yields the
** rows of rows[f*ncomp .. f*ncomp+ncomp) in order, the files one after another. Every file's
** tensors must agree in dtype and in all dims but the first: ValueError otherwise. */
ds_dataset *ds_dataset_from_files(int nfiles, const char *const *names, int ncomp,
                                  md_tensor *const *rows, ds_status *st);

/* ---- transformations (each takes a reference to `in`) ---- */
/* batch(batch_size, drop_remainder). InvalidArgumentError if batch_size < 1. */
ds_dataset *ds_dataset_batch(ds_dataset *in, int64_t batch_size, int drop_remainder,
                             ds_status *st);
/* unbatch(). ValueError when a component is a scalar. */
ds_dataset *ds_dataset_unbatch(ds_dataset *in, ds_status *st);
/* rebatch(batch_sizes, drop_remainder): unbatch, then batch cycling through the sizes (a size
** may be 0: an empty batch). InvalidArgumentError if no sizes or one is negative; ValueError
** on scalar elements. */
ds_dataset *ds_dataset_rebatch(ds_dataset *in, int n, const int64_t *sizes, int drop_remainder,
                               ds_status *st);
/* TF's private _LegacyRebatchDataset: each input batch of b rows becomes num_replicas
** sub-batches of ceil(b / num_replicas) rows, the last ones short or empty. ValueError on
** scalar elements, InvalidArgumentError if num_replicas < 1. */
ds_dataset *ds_dataset_legacy_rebatch(ds_dataset *in, int64_t num_replicas, ds_status *st);
/* repeat(count); count < 0 repeats forever. */
ds_dataset *ds_dataset_repeat(ds_dataset *in, int64_t count);
/* take(count); count < 0 takes everything. */
ds_dataset *ds_dataset_take(ds_dataset *in, int64_t count);
/* shard(num_shards, index): elements index, index + num_shards, ...
** InvalidArgumentError unless num_shards >= 1 and 0 <= index < num_shards. */
ds_dataset *ds_dataset_shard(ds_dataset *in, int64_t num_shards, int64_t index, ds_status *st);
/* prefetch(buffer_size): recorded for timing, no effect on the elements. buffer_size may be
** DS_DATASET_AUTOTUNE; InvalidArgumentError below that. */
ds_dataset *ds_dataset_prefetch(ds_dataset *in, int64_t buffer_size, ds_status *st);
/* map(fn): fn builds n_out tensors per element. out_spec (n_out entries) is what TF would infer
** by tracing fn; NULL means fn keeps the input's spec. An output that does not match its spec
** is an InvalidArgumentError at get_next. */
ds_dataset *ds_dataset_map(ds_dataset *in, ds_dataset_map_fn fn, void *user, int n_out,
                           const ds_tensor_spec *out_spec, ds_status *st);
/* shuffle(buffer_size, seed, reshuffle_each_iteration): elements drawn uniformly from a buffer
** of the next buffer_size ones. InvalidArgumentError if buffer_size < 1. */
ds_dataset *ds_dataset_shuffle(ds_dataset *in, int64_t buffer_size, uint64_t seed,
                               int reshuffle_each_iteration, ds_status *st);
/* with_options(options) with options.experimental_distribute.auto_shard_policy = policy. */
ds_dataset *ds_dataset_with_auto_shard_policy(ds_dataset *in, ds_auto_shard_policy policy);

void ds_dataset_free(ds_dataset *ds);  /* drops the caller's reference */

/* ---- what TF knows before iterating ---- */
int                   ds_dataset_num_components(const ds_dataset *ds);
const ds_tensor_spec *ds_dataset_element_spec(const ds_dataset *ds, int component);
/* All dims of every component known (TF's "statically shaped"). */
int                   ds_dataset_is_statically_shaped(const ds_dataset *ds);
/* dataset.cardinality(): a count, DS_DATASET_INFINITE or DS_DATASET_UNKNOWN. */
int64_t               ds_dataset_cardinality(const ds_dataset *ds);
/* The policy of the last with_options on the way to the source (AUTO when none). */
ds_auto_shard_policy  ds_dataset_auto_shard_policy(const ds_dataset *ds);
/* distribute.compute_batch_size: the batch size of full batches, or -1 when it cannot be
** inferred (no batch, a map or unbatch after it, components that disagree). */
int64_t               ds_dataset_compute_batch_size(const ds_dataset *ds);
/* The pipeline, source first: "range(0, 8, 1) -> batch(4) -> prefetch(2)". Returns buf. */
const char           *ds_dataset_describe(const ds_dataset *ds, char *buf, size_t len);

/* ---- iteration ---- */
ds_dataset_iterator *ds_dataset_make_iterator(ds_dataset *ds);
/* Stores the next element's tensors in out[0..num_components) (the caller owns them) and
** returns 0; at the end returns -1 with OutOfRangeError, and keeps doing so. */
int  ds_dataset_get_next(ds_dataset_iterator *it, md_tensor **out, ds_status *st);
void ds_dataset_iterator_free(ds_dataset_iterator *it);

#endif
