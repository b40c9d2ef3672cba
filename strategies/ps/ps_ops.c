/*
** ps_ops.c: timed reads and pushes between workers and ps tasks (ds_ps_read_many,
** ds_ps_apply_gradients; invariants 3 and 6 of ps_strategy.c).
*/
#include "strategies/ps/psInt.h"

#include <string.h>

/* ---- timed operations -------------------------------------------------------------------- */

void ds_ps_worker_release(ds_strategy *s, int worker) {
  ps_state *ps = state_of(s);
  ds__ps_op_free(ps->ops[worker + 1]);
  ps->ops[worker + 1] = NULL;
}

/* A fresh operation of n transfers for the worker, reclaiming its last one (invariant 3). */
static ps_op *op_begin(ds_strategy *s, int worker, int n) {
  ps_state *ps = state_of(s);
  ds_ps_worker_release(s, worker);
  ps_op *op = base_xcalloc(1, sizeof *op);
  op->ps = ps;
  op->host = worker == DS_PS_FROM_COORDINATOR ? task(ps, DS_PS_COORDINATOR, 0)->host
                                              : task(ps, DS_PS_WORKER, worker)->host;
  op->n = op->nacts = n;
  op->xfers = base_xcalloc((size_t)n, sizeof *op->xfers);
  op->acts = base_xcalloc(2 * (size_t)n, sizeof *op->acts);
  op->failed_ps = -1;
  ps->ops[worker + 1] = op;
  return op;
}

/* The host a transfer's component lives on: its ps, or the coordinator. */
static int comp_host(ps_state *ps, int comp) {
  return comp < 0 ? task(ps, DS_PS_COORDINATOR, 0)->host : task(ps, DS_PS_PS, ps->comps[comp].ps)->host;
}

/* Starts x's transfer between two hosts, its notification `done`. */
static sim_activity *xfer_start(ps_op *op, ps_xfer *x, int from, int to, double bytes, sim_activity_done_fn done) {
  sim_link *route[ROUTE_MAX];
  size_t hops = ds__ps_host_route(op->ps, from, to, route, ROUTE_MAX);
  sim_link **r = route;
  if (hops > ROUTE_MAX) {
    r = base_xcalloc(hops, sizeof *r);
    ds__ps_host_route(op->ps, from, to, r, hops);
  }
  x->op = op;
  sim_activity *act = sim_comm_start(op->ps->engine, r, hops, bytes);
  sim_activity_on_done(act, done, x);
  if (r != route) free(r);
  return act;
}

/* The first failed ps an operation meets, and the transfer that met it. */
static void note_failed(ps_op *op, int k) {
  if (op->failed_ps >= 0) return;
  op->failed_ps = op->ps->comps[op->xfers[k].comp].ps;
  op->failed_at = k;
}

static int failed_at_start(ps_op *op, ds_status *st) {
  for (int k = 0; k < op->n && op->failed_ps < 0; k++) {
    int c = op->xfers[k].comp;
    if (c >= 0 && task(op->ps, DS_PS_PS, op->ps->comps[c].ps)->failed) note_failed(op, k);
  }
  if (op->failed_ps < 0) return 0;
  return ds_status_set(st, DS_UNAVAILABLE_ERROR, "%s is unavailable: the parameter server task failed "
                       "and ParameterServerStrategy cannot recover it",
                       task(op->ps, DS_PS_PS, op->failed_ps)->device);
}

/* At a transfer's arrival: whether its ps is down (then the op remembers it and nothing happens). */
static int arrived_dead(ps_xfer *x) {
  ps_op *op = x->op;
  if (x->comp < 0 || !task(op->ps, DS_PS_PS, op->ps->comps[x->comp].ps)->failed) return 0;
  note_failed(op, (int)(x - op->xfers));
  return 1;
}

static int64_t id_at(const md_tensor *ids, size_t j) {
  return ids->dtype == MD_INT32 ? ((const int32_t *)ids->data)[j] : ((const int64_t *)ids->data)[j];
}

/* Rows of a plain value picked by ids into out (the checks done). */
static void gather_rows(const md_tensor *value, const md_tensor *ids, md_tensor *out) {
  size_t row = value->shape[0] ? value->size / (size_t)value->shape[0] * md_dtype_size(value->dtype) : 0;
  for (size_t j = 0; md_tensor_has_values(value) && j < ids->size; j++) {
    memcpy((char *)out->data + j * row, (const char *)value->data + (size_t)id_at(ids, j) * row, row);
  }
}

/* A read's or lookup's arrival: the ps's value copied now. */
static void read_done(sim_engine *e, sim_activity *act, void *arg) {
  (void)e;
  (void)act;
  ps_xfer *x = arg;
  ps_op *op = x->op;
  if (arrived_dead(x)) return;
  ps_read *r = &op->reads[x->read];
  ds_sharded_variable *sv = ds_variable_sharded(r->v);
  const md_tensor *value = ds_variable_copy(r->v, x->shard);
  if (r->ids && sv) ds_sharded_variable_lookup_shard(sv, r->ids, x->shard, r->out);
  else if (r->ids) gather_rows(value, r->ids, r->out);
  else if (ds__ps_value_bytes(value) > 0 && md_tensor_has_values(value))
    memcpy((char *)r->out->data + (sv ? (size_t)ds_sharded_variable_offset(sv, x->shard) * ds__ps_value_bytes(value)
                                          / (size_t)value->shape[0] : 0),
           value->data, ds__ps_value_bytes(value));
  if (op->versions && x->index >= 0 && x->comp >= 0) op->versions[x->index] = op->ps->comps[x->comp].version;
}

/* The result a read or lookup fills: the variable's (full) shape, or ids' rows of a plain
** variable (ids checked). rows[k] gets the rows shard k sends. */
static md_tensor *read_result(ds_variable *v, const md_tensor *ids, int64_t *rows, ds_status *st) {
  ds_sharded_variable *sv = ds_variable_sharded(v);
  const md_tensor *first = ds_variable_copy(v, 0);
  if (ids && sv) return ds_sharded_variable_lookup_begin(sv, ids, rows, st);
  int64_t shape[MD_TENSOR_MAX_RANK];
  if (ids == NULL) {
    int rank = sv ? ds_sharded_variable_shape(sv, shape) : first->rank;
    if (!sv) memcpy(shape, first->shape, sizeof shape);
    for (int k = 0; k < ds_variable_num_copies(v); k++) {
      const md_tensor *c = ds_variable_copy(v, k);
      rows[k] = c->rank ? c->shape[0] : 1;
    }
    /* A variable of shapes alone (numerics off) reads as one: its bytes travel, none is held. */
    return md_tensor_has_values(first) ? md_tensor_new(first->dtype, rank, shape) : md_tensor_shape(first->dtype, rank, shape);
  }
  if ((ids->dtype != MD_INT32 && ids->dtype != MD_INT64) || first->rank < 1 ||
      ids->rank + first->rank - 1 > MD_TENSOR_MAX_RANK) {
    ds_status_set(st, DS_TYPE_ERROR, "embedding_lookup: ids must be int32 or int64 and %s of rank >= 1",
                  ds_variable_name(v));
    return NULL;
  }
  for (size_t j = 0; j < ids->size; j++) {
    int64_t id = id_at(ids, j);
    if (id < 0 || id >= first->shape[0]) {
      ds_status_set(st, DS_INVALID_ARGUMENT_ERROR, "embedding_lookup: id %lld is not in [0, %lld) of %s",
                    (long long)id, (long long)first->shape[0], ds_variable_name(v));
      return NULL;
    }
  }
  memcpy(shape, ids->shape, (size_t)ids->rank * sizeof *shape);
  memcpy(shape + ids->rank, first->shape + 1, (size_t)(first->rank - 1) * sizeof *shape);
  rows[0] = (int64_t)ids->size;
  return md_tensor_new(first->dtype, ids->rank + first->rank - 1, shape);
}

/* A lookup's request's arrival at its ps. TF's ResourceGather answers once its ids are there;
** the lookup's rows leave every shard when the last of its requests has arrived (one round trip,
** not pipelined per shard: the requests share the worker's up link and end close together), as
** responses joining the operation's wait, while its other reads go on (invariant 6). */
static void request_done(sim_engine *e, sim_activity *act, void *arg) {
  (void)e;
  ps_xfer *x = arg;
  ps_op *op = x->op;
  ps_read *r = &op->reads[x->read];
  arrived_dead(x);
  if (--r->asking > 0 || op->failed_ps >= 0) return;
  for (int k = r->first; k < r->first + ds_variable_num_copies(r->v); k++) {
    ps_xfer *y = &op->xfers[k];
    sim_wait_extend(act, (size_t)y->answer, xfer_start(op, y, comp_host(op->ps, y->comp), op->host, y->wire, read_done));
  }
}

/* Lays out read i's transfers from *k on: one per component, its versions index (or -1), the
** bytes its response moves, and for a lookup the ids its shard receives (dynamic_partition's
** part: rows[k] ids at the ids' dtype size, 8 bytes for int64; none: latency only) and a slot
** for its response. */
static void plan_read(ps_op *op, int i, const int64_t *rows, int versioned, int *k) {
  ps_read *r = &op->reads[i];
  int first = ds__ps_first_comp(op->ps, r->v);
  r->first = *k;
  r->asking = r->ids ? ds_variable_num_copies(r->v) : 0;
  for (int j = 0; j < ds_variable_num_copies(r->v); j++, (*k)++) {
    ps_xfer *x = &op->xfers[*k];
    const md_tensor *c = ds_variable_copy(r->v, j);
    double row_bytes = c->rank && c->shape[0] ? (double)ds__ps_value_bytes(c) / (double)c->shape[0] : (double)ds__ps_value_bytes(c);
    x->comp = first < 0 ? -1 : first + j;
    x->index = versioned ? *k : -1;
    x->read = i;
    x->shard = j;
    x->wire = (double)rows[*k] * row_bytes;
    if (r->ids == NULL) continue;
    x->ask = (double)rows[*k] * (double)md_dtype_size(r->ids->dtype);
    x->answer = op->nacts++;
  }
}

int ds_ps_read_many(ds_strategy *s, sim_actor *self, int worker, int n, ds_variable *const *vars,
                    const md_tensor *const *ids, md_tensor **out, int64_t *versions, int64_t *step,
                    ds_status *st) {
  ps_state *ps = state_of(s);
  ds_status_clear(st);
  for (int i = 0; i < n; i++) out[i] = NULL;
  if (step && ps->iterations == NULL)
    return ds_status_set(st, DS_VALUE_ERROR, "reading optimizer.iterations: the strategy has no optimizer "
                         "(ds_ps_set_optimizer)");
  int nreads = n + (step != NULL), total = 0;
  ps_read *reads = base_xcalloc((size_t)nreads, sizeof *reads);
  for (int i = 0; i < nreads; i++) {
    reads[i].v = i < n ? vars[i] : ps->iterations;
    reads[i].ids = i < n && ids ? ids[i] : NULL;
    total += ds_variable_num_copies(reads[i].v);
  }
  int64_t *rows = base_xcalloc((size_t)total, sizeof *rows);
  for (int i = 0, k = 0; i < nreads; k += ds_variable_num_copies(reads[i++].v)) {
    reads[i].out = read_result(reads[i].v, reads[i].ids, rows + k, st);
    if (reads[i].out != NULL) continue;
    for (int j = 0; j < i; j++) md_tensor_free(reads[j].out);
    free(reads);
    free(rows);
    return -1;
  }
  ps_op *op = op_begin(s, worker, total);
  op->reads = reads;
  op->nreads = nreads;
  op->versions = versions;
  for (int i = 0, k = 0; i < nreads; i++) plan_read(op, i, rows, i < n, &k);
  free(rows);
  if (failed_at_start(op, st) != 0) return -1;
  for (int k = 0; k < total; k++) {
    ps_xfer *x = &op->xfers[k];
    op->acts[k] = reads[x->read].ids ? xfer_start(op, x, op->host, comp_host(ps, x->comp), x->ask, request_done)
                                     : xfer_start(op, x, comp_host(ps, x->comp), op->host, x->wire, read_done);
  }
  sim_wait_all(self, op->acts, (size_t)op->nacts);
  if (op->failed_ps >= 0)
    return ds_status_set(st, DS_UNAVAILABLE_ERROR, "%s is unavailable: the read of %s was cut off by the "
                         "failure of the parameter server task", task(ps, DS_PS_PS, op->failed_ps)->device,
                         ds_variable_name(reads[op->xfers[op->failed_at].read].v));
  for (int i = 0; i < n; i++) {
    out[i] = reads[i].out;
    reads[i].out = NULL; /* the caller's now */
  }
  if (step) *step = md_tensor_i64(reads[n].out)[0] + 1;
  return 0;
}

/* One variable read whole (ids NULL) or looked up: a read operation of one. */
static md_tensor *read_one(ds_strategy *s, sim_actor *self, int worker, ds_variable *v, const md_tensor *ids,
                           int64_t *versions, ds_status *st) {
  md_tensor *out;
  return ds_ps_read_many(s, self, worker, 1, &v, &ids, &out, versions, NULL, st) == 0 ? out : NULL;
}

md_tensor *ds_ps_read(ds_strategy *s, sim_actor *self, int worker, ds_variable *v, int64_t *versions,
                      ds_status *st) {
  return read_one(s, self, worker, v, NULL, versions, st);
}

md_tensor *ds_ps_embedding_lookup(ds_strategy *s, sim_actor *self, int worker, ds_variable *v,
                                  const md_tensor *ids, int64_t *versions, ds_status *st) {
  return read_one(s, self, worker, v, ids, versions, st);
}

/* A push's arrival at its ps: the update applied now, in arrival order (invariant 2). */
static void push_done(sim_engine *e, sim_activity *act, void *arg) {
  (void)e;
  (void)act;
  ps_xfer *x = arg;
  ps_op *op = x->op;
  if (arrived_dead(x)) return;
  ps_component *c = &op->ps->comps[x->comp];
  md_tensor *value = ds_variable_copy(c->holder, c->shard);
  if (op->versions) op->versions[x->index] = c->version;
  c->version++;
  x->applied = 1;
  if (x->grad == NULL) {
    md_tensor_i64(value)[0]++;
    return;
  }
  md_cost cost = { 0 };
  float *g = md_tensor_f32((md_tensor *)x->grad);
  if (x->indices) {
    size_t rows = value->rank ? (size_t)value->shape[0] : 1, row = rows ? value->size / rows : 0;
    md_optimizer_update_sparse(&op->ps->opt, op->t, md_tensor_f32(value), rows, row,
                               md_tensor_i64((md_tensor *)x->indices), g, x->indices->size, c->slots, &cost);
  } else {
    md_optimizer_update(&op->ps->opt, op->t, md_tensor_f32(value), g, c->slots, value->size, &cost);
  }
  x->flops = cost.flops;
  x->bytes = cost.bytes_moved;
}

/* Starts op's pushes from the worker and waits for them all to arrive. */
static void push_all(ps_op *op, sim_actor *self) {
  for (int k = 0; k < op->n; k++)
    op->acts[k] = xfer_start(op, &op->xfers[k], op->host, comp_host(op->ps, op->xfers[k].comp), op->xfers[k].wire,
                             push_done);
  sim_wait_all(self, op->acts, (size_t)op->n);
}

/* The ps CPUs run the updates that were applied, while the worker waits. */
static void charge_updates(ps_op *op, sim_actor *self) {
  int n = 0;
  for (int k = 0; k < op->n; k++) {
    ps_xfer *x = &op->xfers[k];
    if (!x->applied) continue;
    ps_task *p = task(op->ps, DS_PS_PS, op->ps->comps[x->comp].ps);
    op->acts[n++] = sim_exec_start(op->ps->engine, p->cpu, sim_roofline_work(&p->roofline, x->flops, x->bytes, NULL));
  }
  sim_wait_all(self, op->acts, (size_t)n);
}

/* IndexedSlices for a variable of shape want: indices int32 or int64 [n] in [0, rows), values
** float32 [n, want's other dims]. */
static int check_slices(const ds_variable *v, const md_tensor *want, const ds_ps_grad *g, ds_status *st) {
  const md_tensor *ix = g->indices, *val = g->values;
  char a[64], b[64], c[64];
  int ok = val != NULL && (ix->dtype == MD_INT32 || ix->dtype == MD_INT64) && ix->rank == 1 &&
           val->dtype == MD_FLOAT32 && val->rank == want->rank && val->shape[0] == ix->shape[0];
  for (int d = 1; ok && d < want->rank; d++) ok = val->shape[d] == want->shape[d];
  if (!ok)
    return ds_status_set(st, DS_VALUE_ERROR, "apply_gradients: the IndexedSlices of %s must be 1-D int32 or "
                         "int64 indices and float32 values of [len(indices)] + the variable's %s[1:]; got "
                         "%s indices, values %s", ds_variable_name(v), md_tensor_shape_str(want, b, sizeof b),
                         md_tensor_shape_str(ix, a, sizeof a), val ? md_tensor_shape_str(val, c, sizeof c) : "missing");
  for (size_t j = 0; j < ix->size; j++) {
    int64_t id = id_at(ix, j);
    if (id < 0 || id >= want->shape[0])
      return ds_status_set(st, DS_INVALID_ARGUMENT_ERROR, "apply_gradients: index %lld is not in [0, %lld) "
                           "of %s", (long long)id, (long long)want->shape[0], ds_variable_name(v));
  }
  return 0;
}

static int check_grads(ps_state *ps, int n, ds_variable *const *vars, const ds_ps_grad *grads, ds_status *st) {
  if (ps->iterations == NULL)
    return ds_status_set(st, DS_VALUE_ERROR, "apply_gradients: the strategy has no optimizer "
                         "(ds_ps_set_optimizer)");
  for (int i = 0; i < n; i++) {
    int64_t shape[MD_TENSOR_MAX_RANK];
    ds_sharded_variable *sv = ds_variable_sharded(vars[i]);
    const md_tensor *first = ds_variable_copy(vars[i], 0), *g = grads[i].dense;
    md_tensor want = { .dtype = MD_FLOAT32, .rank = sv ? ds_sharded_variable_shape(sv, shape) : first->rank };
    memcpy(want.shape, sv ? shape : first->shape, (size_t)want.rank * sizeof *shape);
    if (ds__ps_first_comp(ps, vars[i]) < 0)
      return ds_status_set(st, DS_VALUE_ERROR, "apply_gradients: %s was not created in this "
                           "ParameterServerStrategy's scope", ds_variable_name(vars[i]));
    if (grads[i].indices != NULL && first->dtype == MD_FLOAT32 && want.rank >= 1) {
      if (check_slices(vars[i], &want, &grads[i], st) != 0) return -1;
    } else if (g == NULL || g->dtype != MD_FLOAT32 || first->dtype != MD_FLOAT32 || !md_tensor_same_shape(g, &want)) {
      char a[64], b[64];
      return ds_status_set(st, DS_VALUE_ERROR, "apply_gradients: the gradient of %s is %s %s, the variable "
                           "float32 %s", ds_variable_name(vars[i]), g ? md_dtype_name(g->dtype) : "IndexedSlices",
                           g ? md_tensor_shape_str(g, a, sizeof a) : "", md_tensor_shape_str(&want, b, sizeof b));
    }
  }
  return 0;
}

/* Shard j's part of an IndexedSlices by the div rule, as embedding_ops' sharded gradient gives
** it (dynamic_partition keeps the order of appearance): its ids as local int64 rows and their
** value rows, both owned by op. The whole of it for a plain variable (j = -1). */
static void cut_slices(ps_op *op, ps_xfer *x, const ds_variable *v, int j, const ds_ps_grad *g) {
  ds_sharded_variable *sv = ds_variable_sharded(v);
  int64_t total = sv ? ds_sharded_variable_offset(sv, ds_sharded_variable_num_shards(sv)) : 0;
  int nshards = sv ? ds_sharded_variable_num_shards(sv) : 1;
  const md_tensor *val = g->values;
  size_t row = val->shape[0] ? ds__ps_value_bytes(val) / (size_t)val->shape[0] : 0, n = 0;
  int64_t *local = base_xcalloc(g->indices->size + 1, sizeof *local);
  size_t *from = base_xcalloc(g->indices->size + 1, sizeof *from);
  for (size_t k = 0; k < g->indices->size; k++) {
    int64_t p = 0, l = id_at(g->indices, k);
    if (sv) ds_div_index(total, nshards, id_at(g->indices, k), &p, &l);
    if (p != (sv ? j : 0)) continue;
    local[n] = l;
    from[n++] = k;
  }
  int64_t shape[MD_TENSOR_MAX_RANK] = { (int64_t)n };
  memcpy(shape + 1, val->shape + 1, (size_t)(val->rank - 1) * sizeof *shape);
  md_tensor *ix = md_tensor_from(MD_INT64, 1, shape, local), *rows = md_tensor_new(MD_FLOAT32, val->rank, shape);
  for (size_t k = 0; k < n; k++) memcpy((char *)rows->data + k * row, (const char *)val->data + from[k] * row, row);
  free(local);
  free(from);
  op->pieces[op->npieces++] = ix;
  op->pieces[op->npieces++] = rows;
  x->indices = ix;
  x->grad = rows;
  x->wire = (double)ds__ps_value_bytes(rows) + (double)n * (double)md_dtype_size(g->indices->dtype);
}

int ds_ps_apply_gradients(ds_strategy *s, sim_actor *self, int worker, int n, ds_variable *const *vars,
                          const ds_ps_grad *grads, int64_t step, int64_t *applied_at, ds_status *st) {
  ps_state *ps = state_of(s);
  ds_status_clear(st);
  if (check_grads(ps, n, vars, grads, st) != 0) return -1;
  if (step < 0 && ds_ps_read_many(s, self, worker, 0, NULL, NULL, NULL, NULL, &step, st) != 0) return -1;
  int total = 0;
  for (int i = 0; i < n; i++) total += ds_variable_num_copies(vars[i]);
  ps_op *op = op_begin(s, worker, total);
  op->t = step;
  op->versions = applied_at;
  op->pieces = base_xcalloc((size_t)total * 2, sizeof *op->pieces);
  for (int i = 0, k = 0; i < n; i++) {
    ds_sharded_variable *sv = ds_variable_sharded(vars[i]);
    for (int j = 0; j < ds_variable_num_copies(vars[i]); j++, k++) {
      ps_xfer *x = &op->xfers[k];
      x->comp = ds__ps_first_comp(ps, vars[i]) + j;
      x->index = k;
      if (grads[i].indices) {
        cut_slices(op, x, vars[i], sv ? j : -1, &grads[i]);
        continue;
      }
      x->grad = grads[i].dense;
      if (sv)
        x->grad = op->pieces[op->npieces++] = md_tensor_slice0(grads[i].dense, ds_sharded_variable_offset(sv, j),
                                                               ds_sharded_variable_offset(sv, j + 1));
      x->wire = (double)ds__ps_value_bytes(x->grad);
    }
  }
  if (failed_at_start(op, st) != 0) return -1;
  push_all(op, self);
  charge_updates(op, self);
  int failed = op->failed_ps;
  if (failed < 0) {
    op = op_begin(s, worker, 1);
    op->xfers[0].comp = ds__ps_first_comp(ps, ps->iterations);
    op->xfers[0].wire = (double)md_dtype_size(MD_INT64);
    if (failed_at_start(op, st) != 0) return -1;
    push_all(op, self);
    failed = op->failed_ps;
  }
  if (failed < 0) return 0;
  return ds_status_set(st, DS_UNAVAILABLE_ERROR, "%s is unavailable: apply_gradients was cut off by the "
                       "failure of the parameter server task", task(ps, DS_PS_PS, failed)->device);
}
