/*
** sharded_variable.c: ShardedVariable (ds_sharded_variable_), after sharded_variable.py.
** The container owns its shards; their values are the shards' own (copy 0 of each ds_variable),
** so a write to a shard is seen by the next conversion or lookup.
*/
#include "strategies/core/sharded_variable.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strategies/core/partitioner.h"
#include "strategies/core/strategiesInt.h"

struct ds_sharded_variable {
  char name[64];          /* "ShardedVariable" unless given */
  int n;                  /* shards */
  ds_variable **shards;   /* owned, in order */
  int64_t *offsets;       /* n + 1 entries: first row of each shard, then the row count */
};

/* The value of shard i (its first copy). */
static const md_tensor *shard_value(const ds_sharded_variable *sv, int i) {
  return ds_variable_copy(sv->shards[i], 0);
}

ds_sharded_variable *ds_sharded_variable_new(ds_variable *const *vars, int n, const char *name,
                                             ds_status *st) {
  if (vars == NULL || n < 1) {
    ds_status_set(st, DS_TYPE_ERROR, "ShardedVariable: variables must be a non-empty list of "
                  "variables, got %d", vars ? n : 0);
    return NULL;
  }
  for (int i = 0; i < n; i++)
    if (vars[i] == NULL || ds_variable_kind_of(vars[i]) == DS_VARIABLE_SHARDED) {
      ds_status_set(st, DS_TYPE_ERROR, "ShardedVariable: element %d of variables is %s, not a "
                    "variable", i, vars[i] ? "a ShardedVariable" : "None");
      return NULL;
    }
  const md_tensor *first = ds_variable_copy(vars[0], 0);
  for (int i = 0; i < n; i++) {
    const md_tensor *t = ds_variable_copy(vars[i], 0);
    char a[64], b[64];
    if (t->dtype != first->dtype) {
      ds_status_set(st, DS_VALUE_ERROR, "ShardedVariable: variables must have the same dtype: %s is "
                    "%s, %s is %s", ds_variable_name(vars[0]), md_dtype_name(first->dtype),
                    ds_variable_name(vars[i]), md_dtype_name(t->dtype));
      return NULL;
    }
    int same = t->rank == first->rank && t->rank > 0;
    for (int a = 1; same && a < t->rank; a++) same = t->shape[a] == first->shape[a];
    if (!same) {
      ds_status_set(st, DS_VALUE_ERROR, "ShardedVariable: variables must have the same shape except "
                    "the first dimension: %s is %s, %s is %s", ds_variable_name(vars[0]),
                    md_tensor_shape_str(first, a, sizeof a), ds_variable_name(vars[i]),
                    md_tensor_shape_str(t, b, sizeof b));
      return NULL;
    }
  }
  ds_sharded_variable *sv = base_xcalloc(1, sizeof *sv);
  snprintf(sv->name, sizeof sv->name, "%s", name ? name : "ShardedVariable");
  sv->n = n;
  sv->shards = base_xcalloc((size_t)n, sizeof *sv->shards);
  sv->offsets = base_xcalloc((size_t)n + 1, sizeof *sv->offsets);
  for (int i = 0; i < n; i++) {
    sv->shards[i] = vars[i];
    sv->offsets[i + 1] = sv->offsets[i] + ds_variable_copy(vars[i], 0)->shape[0];
  }
  return sv;
}

void ds_sharded_variable_free(ds_sharded_variable *sv) {
  if (sv == NULL) return;
  for (int i = 0; i < sv->n; i++) ds_variable_free(sv->shards[i]);
  free(sv->shards);
  free(sv->offsets);
  free(sv);
}

const char *ds_sharded_variable_name(const ds_sharded_variable *sv) { return sv->name; }
int ds_sharded_variable_num_shards(const ds_sharded_variable *sv) { return sv->n; }
ds_variable *ds_sharded_variable_shard(const ds_sharded_variable *sv, int i) { return sv->shards[i]; }
md_dtype ds_sharded_variable_dtype(const ds_sharded_variable *sv) { return shard_value(sv, 0)->dtype; }
int64_t ds_sharded_variable_offset(const ds_sharded_variable *sv, int i) { return sv->offsets[i]; }

int ds_sharded_variable_shape(const ds_sharded_variable *sv, int64_t *shape) {
  const md_tensor *t = shard_value(sv, 0);
  memcpy(shape, t->shape, (size_t)t->rank * sizeof *shape);
  shape[0] = sv->offsets[sv->n];
  return t->rank;
}

md_tensor *ds_sharded_variable_to_tensor(const ds_sharded_variable *sv, const char *name_scope,
                                         ds_status *st) {
  if (name_scope && strstr(name_scope, "embedding_lookup")) {
    ds_status_set(st, DS_TYPE_ERROR, "converting ShardedVariable %s to a tensor in embedding lookup "
                  "ops is disallowed", sv->name);
    return NULL;
  }
  md_tensor **parts = base_xcalloc((size_t)sv->n, sizeof *parts);
  for (int i = 0; i < sv->n; i++) parts[i] = (md_tensor *)shard_value(sv, i);
  md_tensor *t = md_tensor_concat(parts, sv->n, 0);
  free(parts);
  return t;
}

static int64_t id_at(const md_tensor *ids, size_t j) {
  return ids->dtype == MD_INT32 ? ((const int32_t *)ids->data)[j] : ((const int64_t *)ids->data)[j];
}

md_tensor *ds_sharded_variable_lookup_begin(const ds_sharded_variable *sv, const md_tensor *ids,
                                            int64_t *rows, ds_status *st) {
  int64_t total = sv->offsets[sv->n];
  if (ids->dtype != MD_INT32 && ids->dtype != MD_INT64) {
    ds_status_set(st, DS_TYPE_ERROR, "embedding_lookup: ids must be int32 or int64, not %s",
                  md_dtype_name(ids->dtype));
    return NULL;
  }
  const md_tensor *first = shard_value(sv, 0);
  if (ids->rank + first->rank - 1 > MD_TENSOR_MAX_RANK) {
    ds_status_set(st, DS_INVALID_ARGUMENT_ERROR, "embedding_lookup: ids of rank %d on %s give a result "
                  "of rank above %d", ids->rank, sv->name, MD_TENSOR_MAX_RANK);
    return NULL;
  }
  if (total < sv->n) {
    ds_status_set(st, DS_INVALID_ARGUMENT_ERROR, "embedding_lookup: %s has %lld rows for %d shards",
                  sv->name, (long long)total, sv->n);
    return NULL;
  }
  memset(rows, 0, (size_t)sv->n * sizeof *rows);
  for (size_t j = 0; j < ids->size; j++) {
    int64_t id = id_at(ids, j), p, local;
    if (id < 0 || id >= total) {
      ds_status_set(st, DS_INVALID_ARGUMENT_ERROR, "embedding_lookup: id %lld is not in [0, %lld) of %s",
                    (long long)id, (long long)total, sv->name);
      return NULL;
    }
    ds_div_index(total, sv->n, id, &p, &local);
    if (local >= shard_value(sv, (int)p)->shape[0]) {
      ds_status_set(st, DS_INVALID_ARGUMENT_ERROR, "embedding_lookup: id %lld maps to row %lld of shard "
                    "%lld, which has %lld rows (shards not split by the div rule)", (long long)id,
                    (long long)local, (long long)p, (long long)shard_value(sv, (int)p)->shape[0]);
      return NULL;
    }
    rows[p]++;
  }
  int64_t shape[MD_TENSOR_MAX_RANK];
  memcpy(shape, ids->shape, (size_t)ids->rank * sizeof *shape);
  memcpy(shape + ids->rank, first->shape + 1, (size_t)(first->rank - 1) * sizeof *shape);
  return md_tensor_new(first->dtype, ids->rank + first->rank - 1, shape);
}

void ds_sharded_variable_lookup_shard(const ds_sharded_variable *sv, const md_tensor *ids,
                                      int shard, md_tensor *out) {
  const md_tensor *v = shard_value(sv, shard);
  size_t row = v->shape[0] ? v->size / (size_t)v->shape[0] * md_dtype_size(v->dtype) : 0;
  for (size_t j = 0; j < ids->size; j++) {
    int64_t p, local;
    ds_div_index(sv->offsets[sv->n], sv->n, id_at(ids, j), &p, &local);
    if (p == shard && row > 0 && md_tensor_has_values(v))  /* shapes only: the rows stay zeros */
      memcpy((char *)out->data + j * row, (const char *)v->data + (size_t)local * row, row);
  }
}

md_tensor *ds_sharded_variable_embedding_lookup(const ds_sharded_variable *sv, const md_tensor *ids,
                                                ds_status *st) {
  int64_t *rows = base_xcalloc((size_t)sv->n, sizeof *rows);
  md_tensor *out = ds_sharded_variable_lookup_begin(sv, ids, rows, st);
  for (int k = 0; out && k < sv->n; k++) ds_sharded_variable_lookup_shard(sv, ids, k, out);
  free(rows);
  return out;
}

typedef int (*shard_write_fn)(ds_variable *v, ds_rctx *ctx, const md_tensor *value, ds_status *st);

static int write_rows(ds_sharded_variable *sv, ds_rctx *ctx, const md_tensor *value, const char *what,
                      shard_write_fn write, ds_status *st) {
  ds_status *err = ctx ? ds_rctx_status(ctx) : st;
  md_tensor shape = { .dtype = ds_sharded_variable_dtype(sv) };
  shape.rank = ds_sharded_variable_shape(sv, shape.shape);
  if (value->dtype != shape.dtype || !md_tensor_same_shape(value, &shape)) {
    char a[64], b[64];
    return ds_status_set(err, DS_VALUE_ERROR, "%s to %s: value is %s %s, the variable %s %s", what,
                         ds_sharded_variable_name(sv), md_dtype_name(value->dtype),
                         md_tensor_shape_str(value, a, sizeof a), md_dtype_name(shape.dtype),
                         md_tensor_shape_str(&shape, b, sizeof b));
  }
  int rc = 0;
  for (int i = 0; i < ds_sharded_variable_num_shards(sv) && rc == 0; i++) {
    md_tensor *rows = md_tensor_slice0(value, ds_sharded_variable_offset(sv, i),
                                       ds_sharded_variable_offset(sv, i + 1));
    rc = write(ds_sharded_variable_shard(sv, i), ctx, rows, st);
    md_tensor_free(rows);
  }
  return rc;
}

int ds_sharded_variable_assign(ds_sharded_variable *sv, ds_rctx *ctx, const md_tensor *value,
                               ds_status *st) {
  return write_rows(sv, ctx, value, "assign", ds_variable_assign, st);
}

int ds_sharded_variable_assign_add(ds_sharded_variable *sv, ds_rctx *ctx, const md_tensor *value,
                                   ds_status *st) {
  return write_rows(sv, ctx, value, "assign_add", ds_variable_assign_add, st);
}

int ds_sharded_variable_assign_sub(ds_sharded_variable *sv, ds_rctx *ctx, const md_tensor *value,
                                   ds_status *st) {
  return write_rows(sv, ctx, value, "assign_sub", ds_variable_assign_sub, st);
}
