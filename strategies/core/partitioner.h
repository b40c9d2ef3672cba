/*
** partitioner.h: tf.distribute.experimental.partitioners (ds_partitioner_) and the "div" split
** of a partitioned variable's rows (ds_div_), as sharded_variable.py defines them.
**
** A partitioner maps a variable's shape and dtype to a partition list shaped like the tensor: 1
** on every axis but `axis`, which gets the number of shards.
**   FixedShardsPartitioner(num_shards): min(num_shards, shape[axis]); num_shards is not checked
**     (0 gives [0, ...], which ParameterServerStrategy then refuses).
**   MinSizePartitioner(min_shard_bytes = 256 KiB, max_shards = 1, bytes_per_string = 16):
**     max(1, min(shape[axis], max_shards, ceil(num_elements * elem / min_shard_bytes))).
**   MaxSizePartitioner(max_shard_bytes, max_shards = None, bytes_per_string = 16):
**     bytes_per_slice = num_elements / shape[axis] * elem;
**     slices_per_shard = max(1, floor(max_shard_bytes / bytes_per_slice));
**     ceil(shape[axis] / slices_per_shard), then min(max_shards, .) when max_shards is set.
** elem is the dtype's size, or bytes_per_string for tf.string (DS_DTYPE_STRING here).
**
** The div split of `rows` into n = min(partitions[0], rows) shards: base = rows / n, extra =
** rows % n; the first `extra` shards get base + 1 rows, the rest base, contiguous (13 rows into
** 5: 3, 3, 3, 2, 2). A global row i lives in partition max(i / (base + 1), (i - extra) / base)
** at local index i % (base + 1) when that partition is below extra, else (i - extra) % base.
*/
#ifndef PODSIM_PARTITIONER_H
#define PODSIM_PARTITIONER_H

#include <stdint.h>

#include "strategies/core/status.h"

/* The element size that stands for tf.string (bytes_per_string per element). */
#define DS_DTYPE_STRING 0
#define DS_MIN_SHARD_BYTES_DEFAULT (INT64_C(256) << 10)
#define DS_BYTES_PER_STRING_DEFAULT 16

typedef enum {
  DS_PARTITIONER_FIXED_SHARDS = 0, /* FixedShardsPartitioner */
  DS_PARTITIONER_MIN_SIZE,         /* MinSizePartitioner */
  DS_PARTITIONER_MAX_SIZE          /* MaxSizePartitioner */
} ds_partitioner_kind;

/* A partitioner is a small value: build it with one of the constructors below. */
typedef struct ds_partitioner {
  ds_partitioner_kind kind; /* which class */
  int64_t num_shards;     /* FixedShards: the shards asked for */
  int64_t shard_bytes;    /* MinSize: min_shard_bytes; MaxSize: max_shard_bytes */
  int64_t max_shards;     /* MinSize: max_shards; MaxSize: max_shards, 0 for None */
  int64_t bytes_per_string; /* MinSize, MaxSize: bytes of one tf.string element */
} ds_partitioner;

ds_partitioner ds_fixed_shards_partitioner(int64_t num_shards);
/* ValueError if any argument is < 1. */
int ds_min_size_partitioner(int64_t min_shard_bytes, int64_t max_shards, int64_t bytes_per_string,
                            ds_partitioner *out, ds_status *st);
/* max_shards 0 is None. ValueError if max_shard_bytes < 1, max_shards < 0 (a set max_shards
** below 1) or bytes_per_string < 1. */
int ds_max_size_partitioner(int64_t max_shard_bytes, int64_t max_shards, int64_t bytes_per_string,
                            ds_partitioner *out, ds_status *st);

/* partitioner(shape, dtype, axis): writes rank entries into partitions and returns 0, or -1 with
** ValueError when axis is outside [0, rank) or, for the size partitioners, a dim is unknown (< 0)
** or shape[axis] is 0 (TF divides by it). elem_bytes is the dtype's size or DS_DTYPE_STRING. */
int ds_partitioner_call(const ds_partitioner *p, int rank, const int64_t *shape, int64_t elem_bytes,
                        int axis, int64_t *partitions, ds_status *st);

/* The div split (the header's rule), for 1 <= shards <= rows: rows of shard i and its first row. */
int64_t ds_div_shard_rows(int64_t rows, int64_t shards, int64_t i);
int64_t ds_div_shard_offset(int64_t rows, int64_t shards, int64_t i);
/* Global row index (0 <= index < rows) as its partition and its index inside that partition. */
void    ds_div_index(int64_t rows, int64_t shards, int64_t index, int64_t *partition, int64_t *local);

#endif
