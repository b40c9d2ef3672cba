/*
** sharded_variable.h: tf.distribute's ShardedVariable (ds_sharded_variable_): one variable held
** as several variables (its shards, `variables`) split along axis 0, as
** ParameterServerStrategy builds it with a variable_partitioner (ps_strategy.h) and as
** sharded_variable.py defines it.
**
** The full variable is the shards concatenated on axis 0: shape [sum of the shards' first dims,
** the shards' other dims]. Converting it to a tensor is that concatenation, so every shard
** travels; embedding_lookup instead looks each id up in its own shard by the "div" rule
** (partitioner.h: ds_div_index over the full row count and the shard count, as
** embedding_lookup's partition_strategy="div" computes it whatever the shards' sizes) and
** only the rows asked for travel.
*/
#ifndef PODSIM_SHARDED_VARIABLE_H
#define PODSIM_SHARDED_VARIABLE_H

#include <stdint.h>

#include "strategies/core/variable.h"

typedef struct ds_sharded_variable ds_sharded_variable;

/* ShardedVariable(variables, name) (name NULL: "ShardedVariable"). Takes ownership of the n
** variables on success: the container frees them. TypeError unless a non-empty list of
** variables (vars NULL, n < 1, a NULL entry, or an entry that is itself a ShardedVariable);
** ValueError when their dtypes differ, a shard is a scalar, or their shapes differ off axis 0. */
ds_sharded_variable *ds_sharded_variable_new(ds_variable *const *vars, int n, const char *name,
                                             ds_status *st);
void         ds_sharded_variable_free(ds_sharded_variable *sv);
const char  *ds_sharded_variable_name(const ds_sharded_variable *sv);
/* `variables`: the shards in order, borrowed. */
int          ds_sharded_variable_num_shards(const ds_sharded_variable *sv);
ds_variable *ds_sharded_variable_shard(const ds_sharded_variable *sv, int i);
md_dtype     ds_sharded_variable_dtype(const ds_sharded_variable *sv);
/* The full shape into shape[0..rank) (shape[0] the sum of the shards' first dims); returns rank. */
int          ds_sharded_variable_shape(const ds_sharded_variable *sv, int64_t *shape);
/* First row of shard i in the full variable (i == num_shards: the row count). */
int64_t      ds_sharded_variable_offset(const ds_sharded_variable *sv, int i);

/* ShardedVariable.assign / assign_add / assign_sub(value) (ShardedVariableMixin): shard i takes
** rows [offset i, offset i+1) of value, written as ds_variable_assign writes a variable (ctx NULL
** in cross-replica context). ValueError, nothing written, when value's dtype or shape is not the
** full variable's. */
int          ds_sharded_variable_assign(ds_sharded_variable *sv, ds_rctx *ctx, const md_tensor *value,
                                        ds_status *st);
int          ds_sharded_variable_assign_add(ds_sharded_variable *sv, ds_rctx *ctx,
                                            const md_tensor *value, ds_status *st);
int          ds_sharded_variable_assign_sub(ds_sharded_variable *sv, ds_rctx *ctx,
                                            const md_tensor *value, ds_status *st);

/* tf.convert_to_tensor(sv) inside the name scope given (NULL: none): the concatenation of every
** shard's value on axis 0, a new tensor. TypeError when the scope contains "embedding_lookup"
** (TF refuses the conversion inside an embedding lookup, where it would silently gather
** from a concatenation instead of per shard). */
md_tensor   *ds_sharded_variable_to_tensor(const ds_sharded_variable *sv, const char *name_scope,
                                           ds_status *st);

/* tf.nn.embedding_lookup(sv, ids): ids int32 or int64 of any shape; the result has shape
** ids.shape + the shards' shape[1:], row j being the full variable's row ids[j]. One lookup per
** shard. InvalidArgumentError for an id outside [0, rows), fewer rows than shards, or an id whose
** div position falls outside its shard (shards not sized by the div rule); TypeError for ids
** that are not integers. A new tensor, or NULL. */
md_tensor   *ds_sharded_variable_embedding_lookup(const ds_sharded_variable *sv, const md_tensor *ids,
                                                  ds_status *st);
/* The lookup in two halves, for a caller that gathers each shard at its own moment (a worker
** reading from parameter servers): begin checks ids as above, writes in rows[k] how many ids
** fall in shard k (num_shards entries) and returns the zero-filled result; lookup_shard then
** copies shard k's rows into it from the shard's current value. */
md_tensor   *ds_sharded_variable_lookup_begin(const ds_sharded_variable *sv, const md_tensor *ids,
                                              int64_t *rows, ds_status *st);
void         ds_sharded_variable_lookup_shard(const ds_sharded_variable *sv, const md_tensor *ids,
                                              int shard, md_tensor *out);

#endif
