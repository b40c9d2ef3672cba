/*
** partitioner.c: the partitioners of sharded_variable.py (ds_partitioner_) and the div split
** (ds_div_). MinSize runs min_max_variable_partitioner and MaxSize
** variable_axis_size_partitioner, in exact int64 arithmetic where TF divides in floating point:
** the counts agree for every size below 2^53 bytes.
*/
#include "strategies/core/partitioner.h"

#include <assert.h>

ds_partitioner ds_fixed_shards_partitioner(int64_t num_shards) {
  return (ds_partitioner){ .kind = DS_PARTITIONER_FIXED_SHARDS, .num_shards = num_shards };
}

int ds_min_size_partitioner(int64_t min_shard_bytes, int64_t max_shards, int64_t bytes_per_string,
                            ds_partitioner *out, ds_status *st) {
  if (min_shard_bytes < 1 || max_shards < 1 || bytes_per_string < 1)
    return ds_status_set(st, DS_VALUE_ERROR, "MinSizePartitioner: min_shard_bytes (%lld), max_shards "
                         "(%lld) and bytes_per_string (%lld) must be positive",
                         (long long)min_shard_bytes, (long long)max_shards, (long long)bytes_per_string);
  *out = (ds_partitioner){ .kind = DS_PARTITIONER_MIN_SIZE, .shard_bytes = min_shard_bytes,
                           .max_shards = max_shards, .bytes_per_string = bytes_per_string };
  return 0;
}

int ds_max_size_partitioner(int64_t max_shard_bytes, int64_t max_shards, int64_t bytes_per_string,
                            ds_partitioner *out, ds_status *st) {
  if (max_shard_bytes < 1 || bytes_per_string < 1)
    return ds_status_set(st, DS_VALUE_ERROR, "MaxSizePartitioner: max_shard_bytes (%lld) and "
                         "bytes_per_string (%lld) must be positive", (long long)max_shard_bytes,
                         (long long)bytes_per_string);
  if (max_shards < 0)
    return ds_status_set(st, DS_VALUE_ERROR, "MaxSizePartitioner: max_shards must be positive when "
                         "set, got %lld", (long long)max_shards);
  *out = (ds_partitioner){ .kind = DS_PARTITIONER_MAX_SIZE, .shard_bytes = max_shard_bytes,
                           .max_shards = max_shards, .bytes_per_string = bytes_per_string };
  return 0;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Shards on the axis for the size partitioners; -1 with st set on an unknown or empty shape. */
static int64_t size_shards(const ds_partitioner *p, int rank, const int64_t *shape, int64_t elem_bytes,
                           int axis, ds_status *st) {
  int64_t elements = 1;
  for (int a = 0; a < rank; a++) {
    if (shape[a] < 0)
      return ds_status_set(st, DS_VALUE_ERROR, "%s needs a fully defined shape; dim %d is unknown",
                           p->kind == DS_PARTITIONER_MIN_SIZE ? "MinSizePartitioner" : "MaxSizePartitioner", a);
    elements *= shape[a];
  }
  if (shape[axis] == 0)
    return ds_status_set(st, DS_VALUE_ERROR, "cannot partition a shape with 0 on axis %d", axis);
  int64_t elem = elem_bytes == DS_DTYPE_STRING ? p->bytes_per_string : elem_bytes;
  if (p->kind == DS_PARTITIONER_MIN_SIZE) {
    int64_t shards = min64(min64(shape[axis], p->max_shards), ceil_div(elements * elem, p->shard_bytes));
    return shards < 1 ? 1 : shards;
  }
  int64_t per_slice = elements / shape[axis] * elem;
  int64_t slices = per_slice > 0 ? p->shard_bytes / per_slice : 1;
  int64_t shards = ceil_div(shape[axis], slices < 1 ? 1 : slices);
  return p->max_shards > 0 ? min64(p->max_shards, shards) : shards;
}

int ds_partitioner_call(const ds_partitioner *p, int rank, const int64_t *shape, int64_t elem_bytes,
                        int axis, int64_t *partitions, ds_status *st) {
  if (axis < 0 || axis >= rank)
    return ds_status_set(st, DS_VALUE_ERROR, "partition axis %d is out of range for a shape of rank %d",
                         axis, rank);
  int64_t shards;
  if (p->kind == DS_PARTITIONER_FIXED_SHARDS) {
    if (shape[axis] < 0)
      return ds_status_set(st, DS_VALUE_ERROR, "FixedShardsPartitioner: dim %d is unknown", axis);
    shards = min64(p->num_shards, shape[axis]);
  } else if ((shards = size_shards(p, rank, shape, elem_bytes, axis, st)) < 0) {
    return -1;
  }
  for (int a = 0; a < rank; a++) partitions[a] = a == axis ? shards : 1;
  return 0;
}

int64_t ds_div_shard_rows(int64_t rows, int64_t shards, int64_t i) {
  assert(shards >= 1 && shards <= rows && i >= 0 && i < shards);
  return rows / shards + (i < rows % shards);
}

int64_t ds_div_shard_offset(int64_t rows, int64_t shards, int64_t i) {
  assert(shards >= 1 && shards <= rows && i >= 0 && i <= shards);
  int64_t extra = rows % shards;
  return i * (rows / shards) + min64(i, extra);
}

void ds_div_index(int64_t rows, int64_t shards, int64_t index, int64_t *partition, int64_t *local) {
  assert(shards >= 1 && shards <= rows && index >= 0 && index < rows);
  int64_t base = rows / shards, extra = rows % shards;
  int64_t a = index / (base + 1), b = (index - extra) / base;
  *partition = a > b ? a : b;
  *local = *partition < extra ? index % (base + 1) : (index - extra) % base;
}
