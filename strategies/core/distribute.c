/*
** distribute.c: the cross-replica API of Strategy and StrategyExtended (ds_reduce, ds_gather,
** ds_extended_), and the reduction arithmetic the replica context shares (ds__).
**
** Reductions follow cross_device_ops.py: SUM adds the components, MEAN divides that sum by the
** number of components (TF's divide, not a multiply by 1/n: the bits differ); a value that is not
** distributed follows reduce_non_distributed_value. The result lands on the host device; that
** copy is not timed.
*/
#include "strategies/core/distribute.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strategies/core/strategiesInt.h"

/* ---- shared arithmetic (strategiesInt.h) --------------------------------------------------- */

int ds__check_alike(md_tensor *const *parts, int n, const char *what, ds_status *st) {
  char a[64], b[64];
  for (int i = 1; i < n; i++)
    if (parts[i]->dtype != parts[0]->dtype || !md_tensor_same_shape(parts[i], parts[0]))
      return ds_status_set(st, DS_VALUE_ERROR, "%s: replica %d has %s %s, replica 0 %s %s", what, i,
                           md_dtype_name(parts[i]->dtype), md_tensor_shape_str(parts[i], a, sizeof a),
                           md_dtype_name(parts[0]->dtype), md_tensor_shape_str(parts[0], b, sizeof b));
  return 0;
}

int ds__check_gather(md_tensor *const *parts, int n, int axis, int exact, ds_status *st) {
  if (parts[0]->rank == 0)
    return ds_status_set(st, DS_VALUE_ERROR, "gather: components must have a non-zero rank "
                         "(expand_dims first)");
  if (axis < 0 || axis >= parts[0]->rank)
    return ds_status_set(st, DS_VALUE_ERROR, "gather: axis %d outside [0, %d)", axis, parts[0]->rank);
  char a[64], b[64];
  for (int i = 1; i < n; i++) {
    int bad = parts[i]->dtype != parts[0]->dtype || parts[i]->rank != parts[0]->rank;
    for (int d = 0; !bad && d < parts[0]->rank; d++)
      bad = (d != axis || exact) && parts[i]->shape[d] != parts[0]->shape[d];
    if (bad)
      return ds_status_set(st, DS_VALUE_ERROR, "gather along axis %d: replica %d has %s %s, "
                           "replica 0 %s %s%s", axis, i, md_dtype_name(parts[i]->dtype),
                           md_tensor_shape_str(parts[i], a, sizeof a), md_dtype_name(parts[0]->dtype),
                           md_tensor_shape_str(parts[0], b, sizeof b),
                           exact ? " (this strategy gathers equal shapes only)" : "");
  }
  return 0;
}

md_tensor *ds__sum_in_order(md_tensor *const *parts, int n) {
  md_tensor *r = md_tensor_copy(parts[0]);
  for (int i = 1; i < n; i++) md_tensor_add_into(r, parts[i]);
  return r;
}

/* t as float32, consuming t: an integer tensor converted element by element. */
static md_tensor *as_float32(md_tensor *t) {
  if (t->dtype == MD_FLOAT32) return t;
  md_tensor *r = md_tensor_new(MD_FLOAT32, t->rank, t->shape);
  for (size_t i = 0; i < t->size; i++) md_tensor_f32(r)[i] = (float)md_tensor_get(t, i);
  md_tensor_free(t);
  return r;
}

md_tensor *ds__mean(md_tensor *sum, double count) {
  md_tensor *r = as_float32(sum);
  float d = (float)count;
  for (size_t i = 0; i < r->size; i++) md_tensor_f32(r)[i] /= d;
  return r;
}

md_tensor *ds__times_reciprocal(md_tensor *t, double count) {
  md_tensor *r = as_float32(t);
  md_tensor_scale(r, (float)(1.0 / count));
  return r;
}

size_t ds__float_words(const md_tensor *t) {
  return (t->size * md_dtype_size(t->dtype) + 3) / 4;
}

sim_algo ds__algo_for(const ds_strategy *s, sim_coll_op op, size_t count) {
  sim_algo a = ds_all_reduce_algorithm(s);
  return sim_collective_check(ds_collective(s), op, a, 0, count) == SIM_OK ? a : SIM_ALGO_RING;
}

static void collective_done(sim_engine *e, sim_collective *c, void *arg) {
  (void)e;
  (void)c;
  *(int *)arg = 1;
}

/* Runs op on the replicas' group from outside the actors and drives the engine until it is done.
** bufs NULL: timing only. */
static int collective_from_outside(ds_strategy *s, sim_coll_op op, float *const *bufs, size_t count,
                                   ds_status *st) {
  sim_collective *g = ds_collective(s);
  if (g == NULL || count == 0) return 0;
  int done = 0;
  int rc = sim_collective_start(g, op, ds__algo_for(s, op, count), 0, bufs, count, collective_done,
                                &done);
  if (rc != SIM_OK)
    return ds_status_set(st, DS_RUNTIME_ERROR, "%s: %s", sim_coll_op_name(op), sim_coll_strerror(rc));
  sim_run(ds_strategy_engine(s));
  if (!done) return ds_status_set(st, DS_RUNTIME_ERROR, "%s never completed", sim_coll_op_name(op));
  return 0;
}

/* The parts added in order (TF's add_n), with an all-reduce of their bytes timed on the group. */
static md_tensor *sum_in_order_timed(ds_strategy *s, md_tensor *const *parts, int n, ds_status *st) {
  md_tensor *r = ds__sum_in_order(parts, n);
  if (collective_from_outside(s, SIM_COLL_ALL_REDUCE, NULL, ds__float_words(r), st) == 0) return r;
  md_tensor_free(r);
  return NULL;
}

md_tensor *ds__cross_replica_sum(ds_strategy *s, md_tensor *const *parts, int n, ds_status *st) {
  int through_group = n == ds_num_replicas_in_sync(s) && parts[0]->dtype == MD_FLOAT32;
  if (!through_group) return sum_in_order_timed(s, parts, n, st);
  md_tensor **copies = base_xcalloc((size_t)n, sizeof *copies);
  float **bufs = base_xcalloc((size_t)n, sizeof *bufs);
  for (int i = 0; i < n; i++) {
    copies[i] = md_tensor_copy(parts[i]);
    bufs[ds_replica_rank(s, i)] = md_tensor_f32(copies[i]);  /* the group's buffers go by rank */
  }
  int rc = collective_from_outside(s, SIM_COLL_ALL_REDUCE, bufs, copies[0]->size, st);
  md_tensor *r = rc == 0 ? copies[0] : NULL;
  for (int i = rc == 0; i < n; i++) md_tensor_free(copies[i]);
  free(copies);
  free(bufs);
  return r;
}

/* ---- Strategy ------------------------------------------------------------------------------ */

static int require_cross_replica(const char *method, ds_status *st) {
  if (ds__in_replica_context())
    return ds_status_set(st, DS_RUNTIME_ERROR, "%s requires cross-replica context; in a replica "
                         "function use the ReplicaContext (all_reduce, all_gather, merge_call)",
                         method);
  return 0;
}

static int all_zero(const md_tensor *t) {
  for (size_t i = 0; i < t->size; i++)
    if (md_tensor_get(t, i) != 0) return 0;
  return 1;
}

/* reduce_non_distributed_value of cross_device_ops.py. */
static md_tensor *reduce_regular(ds_strategy *s, ds_reduce_op op, const md_tensor *t, ds_status *st) {
  /* CollectiveAllReduceStrategy._reduce_to: over several workers a host tensor goes through the
  ** cross-worker collective like any value, each worker's program contributing its own copy
  ** (they run the same program, so the copies are equal): SUM adds them in worker order, MEAN
  ** divides that by the workers. */
  int workers = ds_strategy_num_workers(s);
  if (ds__traits(s)->multi_worker && workers > 1 && (op == DS_REDUCE_SUM || op == DS_REDUCE_MEAN)) {
    md_tensor *copies[workers];
    for (int w = 0; w < workers; w++) copies[w] = (md_tensor *)t;
    md_tensor *sum = ds__sum_in_order(copies, workers);
    return op == DS_REDUCE_MEAN ? ds__mean(sum, workers) : sum;
  }
  if (all_zero(t) || op != DS_REDUCE_SUM || ds_num_replicas_in_sync(s) == 1) return md_tensor_copy(t);
  ds_status_set(st, DS_VALUE_ERROR, "a non-DistributedValues value cannot be reduced with %s over "
                "%d replicas", ds_reduce_op_name(op), ds_num_replicas_in_sync(s));
  return NULL;
}

/* The cross-replica SUM of a reduction outside the replicas: TPUStrategy adds the components
** on its host (add_n, in replica order), the others all-reduce them over the group. */
static md_tensor *strategy_sum(ds_strategy *s, md_tensor *const *parts, int n, ds_status *st) {
  return ds__traits(s)->tpu ? sum_in_order_timed(s, parts, n, st) : ds__cross_replica_sum(s, parts, n, st);
}

/* Reduction of a value across replicas only (axis None, reduce_to). TPUStrategy's _reduce_to
** knows SUM and MEAN only, has no Mirrored shortcut, and takes a MEAN as the sum times 1/n. */
static md_tensor *reduce_across(ds_strategy *s, ds_reduce_op op, const ds_value *v, ds_status *st) {
  md_tensor *const first = ds_value_component(v, 0);
  int tpu = ds__traits(s)->tpu;
  if (tpu && op != DS_REDUCE_SUM && op != DS_REDUCE_MEAN) {
    ds_status_set(st, DS_NOT_IMPLEMENTED_ERROR, "`reduce_op`=%s is not supported: TPUStrategy "
                  "reduces with ReduceOp.SUM and ReduceOp.MEAN only", ds_reduce_op_name(op));
    return NULL;
  }
  if (!ds_value_is_distributed(v)) return reduce_regular(s, op, first, st);
  int n = ds_value_num_components(v);
  if (!tpu && (op == DS_REDUCE_ONLY_FIRST_REPLICA ||
               (op == DS_REDUCE_MEAN && ds_value_kind_of(v) == DS_VALUE_MIRRORED)))
    return md_tensor_copy(first);
  md_tensor **parts = base_xcalloc((size_t)n, sizeof *parts);
  ds_local_results(v, parts, n);
  md_tensor *r = ds__check_alike(parts, n, "reduce", st) == 0 ? strategy_sum(s, parts, n, st) : NULL;
  free(parts);
  if (r == NULL || op != DS_REDUCE_MEAN) return r;
  return tpu ? ds__times_reciprocal(r, n) : ds__mean(r, n);
}

/* Reduction along an axis too: per component (sum over axis, count along axis), both summed. */
static md_tensor *reduce_along(ds_strategy *s, ds_reduce_op op, const ds_value *v, int axis,
                               ds_status *st) {
  int n = ds_value_is_distributed(v) ? ds_value_num_components(v) : ds_num_replicas_in_sync(s);
  md_tensor **sums = base_xcalloc((size_t)n, sizeof *sums);
  md_tensor *r = NULL;
  double count = 0;
  for (int i = 0; i < n; i++) {
    const md_tensor *c = ds_value_component(v, ds_value_is_distributed(v) ? i : 0);
    int a = axis < 0 ? axis + c->rank : axis;
    if (a < 0 || a >= c->rank) {
      ds_status_set(st, DS_VALUE_ERROR, "`axis` = %d out of range for `value` with rank %d", axis,
                    c->rank);
      goto out;
    }
    sums[i] = md_tensor_sum_axis(c, a);
    count += (double)c->shape[a];
  }
  if (ds__check_alike(sums, n, "reduce", st) != 0) goto out;
  r = strategy_sum(s, sums, n, st);
  if (r && op == DS_REDUCE_MEAN) r = ds__mean(r, count);
out:
  for (int i = 0; i < n; i++) md_tensor_free(sums[i]);
  free(sums);
  return r;
}

md_tensor *ds_reduce(ds_strategy *s, ds_reduce_op op, const ds_value *value, int axis, ds_status *st) {
  ds_status_clear(st);
  if (require_cross_replica("Strategy.reduce", st) != 0) return NULL;
  if (op != DS_REDUCE_SUM && op != DS_REDUCE_MEAN) {
    ds_status_set(st, DS_TYPE_ERROR, "Expected `reduce_op` to be a `tf.distribute.ReduceOp`, not %s",
                  ds_reduce_op_name(op));
    return NULL;
  }
  return axis == DS_AXIS_NONE ? reduce_across(s, op, value, st) : reduce_along(s, op, value, axis, st);
}

md_tensor *ds_gather(ds_strategy *s, const ds_value *value, int axis, ds_status *st) {
  if (!ds__traits(s)->gather) {
    ds_status_set(st, DS_NOT_IMPLEMENTED_ERROR, "gather is not implemented for ParameterServerStrategy");
    return NULL;
  }
  ds_status_clear(st);
  if (require_cross_replica("Strategy.gather", st) != 0) return NULL;
  if (!ds_value_is_distributed(value)) return md_tensor_copy(ds_value_component(value, 0));
  int n = ds_value_num_components(value);
  md_tensor **parts = base_xcalloc((size_t)n, sizeof *parts);
  ds_local_results(value, parts, n);
  md_tensor *r = NULL;
  /* Every strategy's Strategy.gather concatenates (TPUStrategy's _gather_to_implementation is an
  ** array_ops.concat on the host): shapes may differ along the axis. */
  if (ds__check_gather(parts, n, axis, 0, st) == 0) {
    size_t widest = 0;
    for (int i = 0; i < n; i++)
      if (ds__float_words(parts[i]) > widest) widest = ds__float_words(parts[i]);
    size_t words = n == ds_num_replicas_in_sync(s) ? widest * (size_t)n : 0;
    if (collective_from_outside(s, SIM_COLL_ALL_GATHER, NULL, words, st) == 0)
      r = md_tensor_concat(parts, n, axis);
  }
  free(parts);
  return r;
}

int ds_local_results(const ds_value *value, md_tensor **out, int max) {
  int n = ds_value_num_components(value);
  for (int i = 0; i < n && i < max; i++) out[i] = ds_value_component(value, i);
  return n;
}

/* ---- StrategyExtended ---------------------------------------------------------------------- */

ds_value *ds_extended_reduce_to(ds_strategy *s, ds_reduce_op op, const ds_value *value, int ndest,
                                const char *const *destinations, ds_status *st) {
  ds_status_clear(st);
  if (require_cross_replica("StrategyExtended.reduce_to", st) != 0) return NULL;
  if (ndest < 1) {
    ds_status_set(st, DS_VALUE_ERROR, "reduce_to: destinations can not be empty");
    return NULL;
  }
  md_tensor *r = reduce_across(s, op, value, st);
  if (r == NULL) return NULL;
  md_tensor **copies = base_xcalloc((size_t)ndest, sizeof *copies);
  copies[0] = r;
  for (int i = 1; i < ndest; i++) copies[i] = md_tensor_copy(r);
  ds_value *out = ds_value_new(DS_VALUE_MIRRORED, ndest, copies, destinations);
  free(copies);
  return out;
}

int ds_extended_batch_reduce_to(ds_strategy *s, ds_reduce_op op, int n, const ds_reduce_pair *pairs,
                                ds_value **out, ds_status *st) {
  for (int i = 0; i < n; i++) {
    out[i] = ds_extended_reduce_to(s, op, pairs[i].value, pairs[i].ndest, pairs[i].destinations, st);
    if (out[i] == NULL) {
      for (int j = 0; j < i; j++) ds_value_free(out[j]);
      return -1;
    }
  }
  return 0;
}

int ds_extended_worker_devices(const ds_strategy *s, const char **out, int max, ds_status *st) {
  if (!ds__traits(s)->extended_devices)
    return ds_status_set(st, DS_RUNTIME_ERROR, "worker_devices() method unsupported by default "
                         "tf.distribute.Strategy");
  int n = ds_num_replicas_in_sync(s);
  for (int r = 0; r < n && r < max; r++) out[r] = ds_replica_device(s, r);
  return n;
}

int ds_extended_parameter_devices(const ds_strategy *s, const char **out, int max, ds_status *st) {
  if (!ds__traits(s)->extended_devices)
    return ds_status_set(st, DS_RUNTIME_ERROR, "parameter_devices() method unsupported by default "
                         "tf.distribute.Strategy");
  return ds_extended_worker_devices(s, out, max, st);
}

int ds_cluster_resolver_of(const ds_strategy *s, ds_cluster_resolver *out) {
  if (ds__strategy_resolver(s, out)) return 1;
  if (ds_strategy_kind(s) != DS_MULTI_WORKER_MIRRORED) return 0;
  int n = ds_num_replicas_in_sync(s), workers = ds_strategy_num_workers(s);
  int gpus = strstr(ds_replica_device(s, 0), "device:GPU:") != NULL;
  *out = (ds_cluster_resolver){ .task_type = "worker", .task_id = 0, .num_workers = workers,
                                .num_accelerators = gpus ? n / workers : 0 };
  return 1;
}

void ds_extended_update_config_proto(const ds_strategy *s, const ds_config_proto *in,
                                     ds_config_proto *out) {
  *out = *in;
  if (ds_strategy_kind(s) != DS_MULTI_WORKER_MIRRORED) return;
  out->scoped_allocator_optimization = 1;
  snprintf(out->scoped_allocator_enable_op, sizeof out->scoped_allocator_enable_op, "CollectiveReduce");
  ds_cluster_resolver cr;
  if (ds_cluster_resolver_of(s, &cr) && cr.num_workers > 1) {
    snprintf(out->collective_group_leader, sizeof out->collective_group_leader,
             "/job:worker/replica:0/task:0");
    snprintf(out->device_filters, sizeof out->device_filters, "/job:worker/task:0");
  }
}

int ds_extended_experimental_initialize(ds_strategy *s, ds_status *st) {
  (void)s;
  ds_status_clear(st);
  return 0;
}

int ds_extended_experimental_finalize(ds_strategy *s, ds_status *st) {
  (void)s;
  ds_status_clear(st);
  return 0;
}

int ds_extended_experimental_run(ds_strategy *s, ds_replica_fn fn, void *user, ds_next_fn next,
                                 void *iterator, int nargs, int nresults, ds_value **results,
                                 ds_status *st) {
  ds_status_clear(st);
  ds_value **args = base_xcalloc((size_t)nargs + 1, sizeof *args);
  int rc = next(iterator, nargs, args, st);
  if (rc == 0) rc = ds_run(s, fn, user, nargs, args, nresults, results, st);
  for (int i = 0; i < nargs; i++) ds_value_free(args[i]);
  free(args);
  return rc;
}
