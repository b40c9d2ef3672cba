/*
** variable.c: plain, mirrored and sync-on-read variables (ds_variable_), following values.py
** and values_util.py. A write in replica context to a MirroredVariable that aggregates goes
** through merge_call: the replicas' values are regrouped, reduced with reduce_to onto the
** variable's devices, and each copy takes its component, as MirroredVariable._update_replica.
*/
#include "strategies/core/variable.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strategies/core/distribute.h"
#include "strategies/core/sharded_variable.h"
#include "strategies/core/strategiesInt.h"

/* Deeper colocate_vars_with nesting than any program needs. */
#define COLOCATE_MAX 16

typedef enum { OP_ASSIGN, OP_ADD, OP_SUB } var_op;

struct ds_variable {
  ds_variable_kind kind;  /* plain, mirrored or sync-on-read */
  ds_strategy *strategy;  /* whose scope created it (NULL: none) */
  ds_synchronization sync;/* resolved: never AUTO */
  ds_aggregation agg;     /* how replica writes (mirrored) or cross-replica reads (on-read) combine */
  int trainable;          /* resolved: 0 or 1 */
  char name[64];          /* the name given, "Variable" by default */
  int n;                  /* copies */
  md_tensor **copies;     /* one per device, replica order */
  char (*names)[96];      /* TF name of each copy */
  char (*devices)[DS_DEVICE_NAME_MAX]; /* device of each copy */
  int per_copy;           /* devices each copy is replicated on: logical devices per replica under
                             TPU SPMD, else 1 */
  char (*placed)[DS_DEVICE_NAME_MAX]; /* n * per_copy devices, copy by copy (copy i's first is
                                         devices[i]) */
  ds_sharded_variable *sharded; /* a ShardedVariable's container (owned; n is then 0 and the
                             copies are its shards'), else NULL */
};

static _Thread_local const ds_variable *colocate_stack[COLOCATE_MAX]; /* colocate_vars_with */
static _Thread_local int colocate_depth;                               /* entries in it */
static _Thread_local const char *creation_refused; /* ValueError text while variables are refused */

void ds__variable_creation_refuse(const char *why) { creation_refused = why; }

static const char *const op_names[] = { "assign", "assign_add", "assign_sub" };

const char *ds_variable_kind_name(ds_variable_kind kind) {
  switch (kind) {
    case DS_VARIABLE_PLAIN: return "Variable";
    case DS_VARIABLE_MIRRORED: return "MirroredVariable";
    case DS_VARIABLE_SYNC_ON_READ: return "SyncOnReadVariable";
    case DS_VARIABLE_SHARDED: return "ShardedVariable";
  }
  return "?";
}

/* Allocates the variable's n copies of per_copy devices each. */
static void alloc_copies(ds_variable *v, int n, int per_copy) {
  v->n = n;
  v->per_copy = per_copy;
  v->copies = base_xcalloc((size_t)n, sizeof *v->copies);
  v->names = base_xcalloc((size_t)n, sizeof *v->names);
  v->devices = base_xcalloc((size_t)n, sizeof *v->devices);
  v->placed = base_xcalloc((size_t)n * (size_t)per_copy, sizeof *v->placed);
}

/* TPUExtended._create_variable: one copy per replica on the innermost experimental_logical_device,
** or under SPMD with several logical devices a TPUReplicatedVariable per replica ("name/r:R") with
** a copy on each of them. */
static int place_on_tpu(ds_variable *v, ds_status *st) {
  int n;
  const char **device;
  int total = ds__strategy_kind_ops(v->strategy)->variable_devices(v->strategy, &n, &device, st);
  if (total < 0) return -1;
  alloc_copies(v, n, total / n);
  for (int j = 0; j < total; j++) snprintf(v->placed[j], sizeof v->placed[j], "%s", device[j]);
  for (int i = 0; i < n; i++) {
    snprintf(v->devices[i], sizeof v->devices[i], "%s", v->placed[i * v->per_copy]);
    if (v->per_copy > 1) snprintf(v->names[i], sizeof v->names[i], "%s/r:%d", v->name, i);
  }
  free(device);
  return 0;
}

/* Fills the variable's devices: those of the colocation target, else a TPUStrategy's placement,
** else one per replica of a distributed variable, else the single device of the strategy (none
** without one). */
static int place(ds_variable *v, int distributed, ds_status *st) {
  const ds_variable *with = colocate_depth ? colocate_stack[colocate_depth - 1] : NULL;
  const ds__kind_ops *ops = v->strategy && !with ? ds__strategy_kind_ops(v->strategy) : NULL;
  int on_tpu = ops && ops->variable_devices;
  if (on_tpu && place_on_tpu(v, st) != 0) return -1;
  if (!on_tpu) {
    alloc_copies(v, with ? with->n : distributed ? ds_num_replicas_in_sync(v->strategy) : 1,
                 with ? with->per_copy : 1);
    for (int j = 0; j < v->n * v->per_copy; j++) {
      const char *dev = with ? with->placed[j] : v->strategy ? ds_replica_device(v->strategy, j)
                                                             : ds__process_device();
      snprintf(v->placed[j], sizeof v->placed[j], "%s", dev);
    }
    for (int i = 0; i < v->n; i++)
      snprintf(v->devices[i], sizeof v->devices[i], "%s", v->placed[i * v->per_copy]);
  }
  for (int i = 0; i < v->n && v->per_copy == 1; i++) {
    if (i == 0) snprintf(v->names[i], sizeof v->names[i], "%s:0", v->name);
    else snprintf(v->names[i], sizeof v->names[i], "%s/replica_%d:0", v->name, i);
  }
  return 0;
}

/* A variable of the options' kind and the strategy s, with no copies yet. */
static ds_variable *variable_alloc(const ds_variable_options *o, ds_strategy *s, ds_variable_kind kind) {
  ds_variable *v = base_xcalloc(1, sizeof *v);
  v->strategy = s;
  v->kind = kind;
  v->sync = o->synchronization == DS_SYNC_AUTO ? DS_SYNC_ON_WRITE : o->synchronization;
  v->agg = o->aggregation;
  v->trainable = o->trainable >= 0 ? o->trainable != 0 : v->sync != DS_SYNC_ON_READ;
  snprintf(v->name, sizeof v->name, "%s", o->name ? o->name : "Variable");
  return v;
}

ds_variable *ds__variable_placed(const md_tensor *initial, const ds_variable_options *o, ds_strategy *s,
                                 const char *device) {
  ds_variable *v = variable_alloc(o, s, DS_VARIABLE_PLAIN);
  alloc_copies(v, 1, 1);
  snprintf(v->names[0], sizeof v->names[0], "%s:0", v->name);
  snprintf(v->devices[0], sizeof v->devices[0], "%s", device);
  snprintf(v->placed[0], sizeof v->placed[0], "%s", device);
  v->copies[0] = md_tensor_copy(initial);
  return v;
}

ds_variable *ds__variable_sharded(ds_sharded_variable *sv, const ds_variable_options *o, ds_strategy *s) {
  ds_variable_options named = *o;
  named.name = ds_sharded_variable_name(sv);
  ds_variable *v = variable_alloc(&named, s, DS_VARIABLE_SHARDED);
  v->sharded = sv;
  v->per_copy = 1;
  return v;
}

ds_variable *ds_variable_new(const md_tensor *initial, const ds_variable_options *opts, ds_status *st) {
  ds_variable_options o = opts ? *opts : (ds_variable_options){ .trainable = -1 };
  ds_strategy *s = ds_get_strategy();
  if (creation_refused != NULL) {
    ds_status_set(st, DS_VALUE_ERROR, "%s", creation_refused);
    return NULL;
  }
  if (ds__in_replica_context()) {
    ds_status_set(st, DS_RUNTIME_ERROR, "podsim creates variables in cross-replica context only");
    return NULL;
  }
  if (initial == NULL) {
    ds_status_set(st, DS_VALUE_ERROR, "initial_value must be specified (variable %s)",
                  o.name ? o.name : "Variable");
    return NULL;
  }
  if ((unsigned)o.synchronization > DS_SYNC_ON_READ || (unsigned)o.aggregation > DS_AGG_ONLY_FIRST_REPLICA) {
    ds_status_set(st, DS_VALUE_ERROR, "invalid variable synchronization %d or aggregation %d",
                  (int)o.synchronization, (int)o.aggregation);
    return NULL;
  }
  int distributed = s && ds__traits(s)->mirrored_variables;
  if (distributed && o.synchronization == DS_SYNC_NONE) {
    ds_status_set(st, DS_VALUE_ERROR, "`NONE` variable synchronization mode is not supported with "
                  "tf.distribute strategy (variable %s)", o.name ? o.name : "Variable");
    return NULL;
  }
  if (s && ds__traits(s)->ps_variables)
    return ds__strategy_kind_ops(s)->create_variable(s, initial, &o,
                                                     colocate_depth ? colocate_stack[colocate_depth - 1] : NULL, st);
  ds_variable_kind kind = !distributed ? DS_VARIABLE_PLAIN
                        : o.synchronization == DS_SYNC_ON_READ ? DS_VARIABLE_SYNC_ON_READ
                                                               : DS_VARIABLE_MIRRORED;
  ds_variable *v = variable_alloc(&o, s, kind);
  if (place(v, distributed, st) != 0) {
    ds_variable_free(v);
    return NULL;
  }
  for (int i = 0; i < v->n; i++) v->copies[i] = md_tensor_copy(initial);
  return v;
}

void ds_variable_free(ds_variable *v) {
  if (v == NULL) return;
  for (int i = 0; i < v->n; i++) md_tensor_free(v->copies[i]);
  free(v->copies);
  free(v->names);
  free(v->devices);
  free(v->placed);
  ds_sharded_variable_free(v->sharded);
  if (v->strategy && ds__traits(v->strategy)->ps_variables)
    ds__strategy_kind_ops(v->strategy)->forget_variable(v->strategy, v);
  free(v);
}

ds_variable_kind ds_variable_kind_of(const ds_variable *v) { return v->kind; }
const char *ds_variable_name(const ds_variable *v) { return v->name; }
ds_aggregation ds_variable_aggregation(const ds_variable *v) { return v->agg; }
ds_synchronization ds_variable_synchronization(const ds_variable *v) { return v->sync; }
int ds_variable_trainable(const ds_variable *v) { return v->trainable; }
ds_sharded_variable *ds_variable_sharded(const ds_variable *v) { return v->sharded; }

/* Where copy i of v lives: v itself, or a ShardedVariable's shard i (whose only copy is 0). */
static const ds_variable *holder(const ds_variable *v, int *i) {
  if (v->sharded == NULL) return v;
  const ds_variable *shard = ds_sharded_variable_shard(v->sharded, *i);
  *i = 0;
  return shard;
}

int ds_variable_num_copies(const ds_variable *v) {
  return v->sharded ? ds_sharded_variable_num_shards(v->sharded) : v->n;
}
md_tensor *ds_variable_copy(const ds_variable *v, int i) { v = holder(v, &i); return v->copies[i]; }
const char *ds_variable_copy_name(const ds_variable *v, int i) { v = holder(v, &i); return v->names[i]; }
const char *ds_variable_device(const ds_variable *v, int i) { v = holder(v, &i); return v->devices[i]; }
int ds_variable_devices_per_copy(const ds_variable *v) { return v->per_copy; }
const char *ds_variable_copy_device(const ds_variable *v, int i, int k) {
  v = holder(v, &i);
  return v->placed[i * v->per_copy + k];
}

/* The variable's copies as a value of its kind (copied). */
static ds_value *as_value(const ds_variable *v, ds_value_kind kind) {
  md_tensor **parts = base_xcalloc((size_t)v->n, sizeof *parts);
  const char **devs = base_xcalloc((size_t)v->n, sizeof *devs);
  for (int i = 0; i < v->n; i++) {
    parts[i] = md_tensor_copy(v->copies[i]);
    devs[i] = v->devices[i];
  }
  ds_value *r = ds_value_new(kind, v->n, parts, devs);
  free(parts);
  free(devs);
  return r;
}

static ds_reduce_op reduce_op_of(ds_aggregation agg) {
  return agg == DS_AGG_SUM ? DS_REDUCE_SUM : agg == DS_AGG_MEAN ? DS_REDUCE_MEAN
                                                                : DS_REDUCE_ONLY_FIRST_REPLICA;
}

/* The copy a replica reads and writes: the one on its own device, as TF's replica-context read
** finds (a variable made under one strategy and read under another, whose device assignment
** orders the devices otherwise: tpu_strategy_test.test_computation_on_subset_cores); the
** replica's index when no copy sits on its device. */
static md_tensor *replica_copy(const ds_variable *v, const ds_rctx *ctx) {
  const char *device = ds_rctx_device(ctx);
  for (int i = 0; device && device[0] && i < v->n; i++)
    if (strcmp(v->devices[i], device) == 0) return v->copies[i];
  int r = ds_rctx_replica_id(ctx);
  return v->copies[r < v->n ? r : 0];
}

md_tensor *ds_variable_read(ds_variable *v, ds_rctx *ctx, ds_status *st) {
  ds_status_clear(st);
  if (v->sharded) return ds_sharded_variable_to_tensor(v->sharded, NULL, ctx ? ds_rctx_status(ctx) : st);
  if (v->kind == DS_VARIABLE_PLAIN) return md_tensor_copy(v->copies[0]);
  if (ctx) return md_tensor_copy(replica_copy(v, ctx));
  if (v->kind == DS_VARIABLE_MIRRORED || v->agg == DS_AGG_ONLY_FIRST_REPLICA)
    return md_tensor_copy(v->copies[0]);
  if (v->agg == DS_AGG_NONE) {
    ds_status_set(st, DS_VALUE_ERROR, "could not convert VariableAggregation NONE of %s to a "
                  "ReduceOp for its cross-replica read", v->name);
    return NULL;
  }
  ds_value *all = as_value(v, DS_VALUE_PER_REPLICA);
  md_tensor *r = ds_reduce(v->strategy, reduce_op_of(v->agg), all, DS_AXIS_NONE, st);
  ds_value_free(all);
  return r;
}

static void negate(md_tensor *t) {
  for (size_t i = 0; i < t->size; i++)
    switch (t->dtype) {
      case MD_FLOAT32: md_tensor_f32(t)[i] = -md_tensor_f32(t)[i]; break;
      case MD_INT32: md_tensor_i32(t)[i] = (int32_t)(0u - (uint32_t)md_tensor_i32(t)[i]); break;
      case MD_INT64: md_tensor_i64(t)[i] = (int64_t)(0u - (uint64_t)md_tensor_i64(t)[i]); break;
    }
}

static void apply(md_tensor *copy, var_op op, const md_tensor *value) {
  if (op == OP_ASSIGN) {
    if (copy->size) memcpy(copy->data, value->data, copy->size * md_dtype_size(copy->dtype));
  } else if (op == OP_ADD) {
    md_tensor_add_into(copy, value);
  } else {
    md_tensor *neg = md_tensor_copy(value);
    negate(neg);
    md_tensor_add_into(copy, neg);
    md_tensor_free(neg);
  }
}

static void apply_all(ds_variable *v, var_op op, const md_tensor *value) {
  for (int i = 0; i < v->n; i++) apply(v->copies[i], op, value);
}

typedef struct write_request {
  ds_variable *v;         /* the mirrored variable */
  var_op op;              /* what each copy does with the reduced value */
} write_request;

/* merge_fn of a replica-context write: reduce_to the variable's devices, then each copy. */
static int mirrored_merge(ds_strategy *s, void *user, ds_value *const *args, ds_value **results,
                          ds_status *st) {
  (void)results;
  write_request *w = user;
  const char **devs = base_xcalloc((size_t)w->v->n, sizeof *devs);
  for (int i = 0; i < w->v->n; i++) devs[i] = w->v->devices[i];
  ds_value *r = ds_extended_reduce_to(s, reduce_op_of(w->v->agg), args[0], w->v->n, devs, st);
  free(devs);
  if (r == NULL) return -1;
  for (int i = 0; i < w->v->n; i++) apply(w->v->copies[i], w->op, ds_value_component(r, i));
  ds_value_free(r);
  return 0;
}

static int write_replica(ds_variable *v, ds_rctx *ctx, var_op op, const md_tensor *value) {
  if (v->kind == DS_VARIABLE_SYNC_ON_READ || v->agg == DS_AGG_NONE) {
    apply(replica_copy(v, ctx), op, value);
    return 0;
  }
  if (v->agg == DS_AGG_MEAN && !md_dtype_is_floating(v->copies[0]->dtype))
    return ds_rctx_fail(ctx, DS_VALUE_ERROR, "%s of %s with aggregation MEAN: the variable is %s, "
                        "not floating point", op_names[op], v->name, md_dtype_name(v->copies[0]->dtype));
  write_request w = { v, op };
  md_tensor *arg = (md_tensor *)value;
  return ds_rctx_merge_call(ctx, mirrored_merge, &w, 1, &arg, 0, NULL);
}

static int write_cross(ds_variable *v, var_op op, const md_tensor *value, ds_status *st) {
  if (v->kind != DS_VARIABLE_SYNC_ON_READ || v->agg != DS_AGG_SUM) {
    apply_all(v, op, value);
    return 0;
  }
  if (op != OP_ASSIGN)
    return ds_status_set(st, DS_VALUE_ERROR, "SyncOnReadVariable %s does not support %s in "
                         "cross-replica context when aggregation is SUM", v->name, op_names[op]);
  md_tensor *share = md_tensor_copy(value);
  for (size_t i = 0; i < share->size; i++)
    switch (share->dtype) {
      case MD_FLOAT32: md_tensor_f32(share)[i] /= (float)v->n; break;
      case MD_INT32: md_tensor_i32(share)[i] /= v->n; break;
      case MD_INT64: md_tensor_i64(share)[i] /= v->n; break;
    }
  apply_all(v, OP_ASSIGN, share);
  md_tensor_free(share);
  return 0;
}

static int write(ds_variable *v, ds_rctx *ctx, var_op op, const md_tensor *value, ds_status *st) {
  ds_status *err = ctx ? ds_rctx_status(ctx) : st;
  ds_status_clear(st);
  if (v->sharded) {  /* ShardedVariableMixin's writes */
    if (op == OP_ASSIGN) return ds_sharded_variable_assign(v->sharded, ctx, value, st);
    if (op == OP_ADD) return ds_sharded_variable_assign_add(v->sharded, ctx, value, st);
    return ds_sharded_variable_assign_sub(v->sharded, ctx, value, st);
  }
  md_tensor shape = { .dtype = v->copies[0]->dtype, .rank = v->copies[0]->rank };
  memcpy(shape.shape, v->copies[0]->shape, sizeof shape.shape);
  if (value->dtype != shape.dtype || !md_tensor_same_shape(value, &shape)) {
    char a[64], b[64];
    return ds_status_set(err, DS_VALUE_ERROR, "%s to %s: value is %s %s, the variable %s %s",
                         op_names[op], v->name, md_dtype_name(value->dtype),
                         md_tensor_shape_str(value, a, sizeof a), md_dtype_name(shape.dtype),
                         md_tensor_shape_str(&shape, b, sizeof b));
  }
  if (v->kind == DS_VARIABLE_PLAIN) {
    apply(v->copies[0], op, value);
    return 0;
  }
  return ctx ? write_replica(v, ctx, op, value) : write_cross(v, op, value, st);
}

int ds_variable_assign(ds_variable *v, ds_rctx *ctx, const md_tensor *value, ds_status *st) {
  return write(v, ctx, OP_ASSIGN, value, st);
}
int ds_variable_assign_add(ds_variable *v, ds_rctx *ctx, const md_tensor *value, ds_status *st) {
  return write(v, ctx, OP_ADD, value, st);
}
int ds_variable_assign_sub(ds_variable *v, ds_rctx *ctx, const md_tensor *value, ds_status *st) {
  return write(v, ctx, OP_SUB, value, st);
}

int ds_variable_update(ds_variable *v, ds_update_fn fn, void *user, int nargs, ds_value *const *args,
                       ds_value **out, ds_status *st) {
  ds_status_clear(st);
  if (ds__in_replica_context())
    return ds_status_set(st, DS_RUNTIME_ERROR, "StrategyExtended.update requires cross-replica "
                         "context (use merge_call)");
  if (v->sharded)
    return ds_status_set(st, DS_NOT_IMPLEMENTED_ERROR, "StrategyExtended.update of ShardedVariable %s: "
                         "update each of its variables", v->name);
  for (int k = 0; k < nargs; k++)
    if (ds_value_is_distributed(args[k]) && ds_value_num_components(args[k]) != v->n)
      return ds_status_set(st, DS_VALUE_ERROR, "update of %s: argument %d has %d components for %d "
                           "copies", v->name, k, ds_value_num_components(args[k]), v->n);
  md_tensor **per = base_xcalloc((size_t)nargs + 1, sizeof *per);
  int rc = 0;
  for (int i = 0; i < v->n && rc == 0; i++) {
    for (int k = 0; k < nargs; k++)
      per[k] = ds_value_component(args[k], ds_value_is_distributed(args[k]) ? i : 0);
    rc = fn(v->copies[i], per, user, st);
  }
  free(per);
  if (rc != 0) return ds_status_ok(st) ? ds_status_set(st, DS_RUNTIME_ERROR, "update fn failed") : -1;
  if (out) *out = as_value(v, DS_VALUE_MIRRORED);
  return 0;
}

int ds_variable_colocate_begin(const ds_variable *v, ds_status *st) {
  if (colocate_depth == COLOCATE_MAX)
    return ds_status_set(st, DS_RUNTIME_ERROR, "colocate_vars_with nested deeper than %d", COLOCATE_MAX);
  colocate_stack[colocate_depth++] = v;
  return 0;
}

int ds_variable_colocate_end(ds_status *st) {
  if (colocate_depth == 0)
    return ds_status_set(st, DS_RUNTIME_ERROR, "colocate_vars_with ended without a begin");
  colocate_depth--;
  return 0;
}
