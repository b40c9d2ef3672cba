/*
** ps_registry.c: what the ps tasks hold: one component per plain variable or shard and the
** optimizer's iterations, round-robin over the ps tasks (ds_ps_; invariants 1, 2, 4, 5 of
** ps_strategy.c).
*/
#include "strategies/ps/psInt.h"

#include <string.h>

/* ---- the registry ------------------------------------------------------------------------ */

const md_tensor *ds__ps_comp_value(const ps_component *c) { return ds_variable_copy(c->holder, c->shard); }

size_t ds__ps_value_bytes(const md_tensor *t) { return t->size * md_dtype_size(t->dtype); }

/* The first component of v, or -1. */
int ds__ps_first_comp(const ps_state *ps, const ds_variable *v) {
  for (int i = 0; i < ps->ncomps; i++)
    if (ps->comps[i].holder == v) return i;
  return -1;
}

int ds__ps_num_comps(const ps_state *ps, const ds_variable *v) {
  int first = ds__ps_first_comp(ps, v), n = 0;
  while (first >= 0 && first + n < ps->ncomps && ps->comps[first + n].holder == v) n++;
  return first >= 0 ? n : -1;
}

/* Gives c the optimizer's slots when it is trainable float32, reserving them on its ps; -1 when
** they do not fit. */
static int add_slots(ps_state *ps, ps_component *c, ds_status *st) {
  const md_tensor *t = ds__ps_comp_value(c);
  if (!ps->has_optimizer || !ds_variable_trainable(c->holder) || t->dtype != MD_FLOAT32 ||
      strcmp(c->kind, "iterations") == 0)
    return 0;
  int n = md_optimizer_slots_per_var(&ps->opt);
  uint64_t bytes = (uint64_t)n * ds__ps_value_bytes(t);
  ps_task *p = task(ps, DS_PS_PS, c->ps);
  if (sim_mempool_alloc(p->ram, bytes) != 0)
    return ds_status_set(st, DS_RESOURCE_EXHAUSTED_ERROR, "OOM on %s: %llu bytes of optimizer slots for "
                         "%s do not fit (%llu of %llu bytes in use)", p->device, (unsigned long long)bytes,
                         ds_variable_copy_name(c->holder, c->shard),
                         (unsigned long long)sim_mempool_used(p->ram),
                         (unsigned long long)sim_mempool_capacity(p->ram));
  c->bytes += bytes;
  c->nslots = n;
  const char *name = ds_variable_copy_name(c->holder, c->shard);
  int base = (int)(strchr(name, ':') ? strchr(name, ':') - name : (long)strlen(name));
  for (int k = 0; k < n; k++) {
    /* A variable of shapes alone (numerics off) has slots of shapes alone: reserved, not held. */
    c->slots[k] = md_tensor_has_values(t) ? base_xcalloc(t->size, sizeof(float)) : NULL;
    for (size_t j = 0; c->slots[k] && j < t->size; j++) c->slots[k][j] = md_optimizer_slot_initial(&ps->opt);
    snprintf(c->slot_names[k], sizeof c->slot_names[k], "%.*s/%s", base, name,
             md_optimizer_slot_suffix(&ps->opt, k));
  }
  return 0;
}

/* Registers copy `shard` of holder on ps task p (its bytes already reserved there). */
static void add_comp(ps_state *ps, ds_variable *holder, int shard, int p, const char *kind) {
  if (ps->ncomps == ps->cap) {
    ps->cap = ps->cap ? 2 * ps->cap : 16;
    ps->comps = base_xrealloc(ps->comps, (size_t)ps->cap * sizeof *ps->comps);
  }
  ps->comps[ps->ncomps++] = (ps_component){ .holder = holder, .shard = shard, .ps = p, .kind = kind,
                                            .bytes = ds__ps_value_bytes(ds_variable_copy(holder, shard)) };
}

void ds__ps_forget_variable(ds_strategy *s, const ds_variable *v) {
  ps_state *ps = state_of(s);
  int first = ds__ps_first_comp(ps, v), n = ds__ps_num_comps(ps, v);
  if (first < 0) return;
  for (int i = first; i < first + n; i++) {
    sim_mempool_release(task(ps, DS_PS_PS, ps->comps[i].ps)->ram, ps->comps[i].bytes);
    for (int k = 0; k < ps->comps[i].nslots; k++) free(ps->comps[i].slots[k]);
  }
  memmove(ps->comps + first, ps->comps + first + n, (size_t)(ps->ncomps - first - n) * sizeof *ps->comps);
  ps->ncomps -= n;
}

/* Reserves bytes[k] on every ps task k at once, or nothing (ResourceExhaustedError). */
static int reserve(ps_state *ps, const uint64_t *bytes, const char *name, ds_status *st) {
  for (int k = 0; k < ps->nps; k++) {
    sim_mempool *ram = task(ps, DS_PS_PS, k)->ram;
    if (bytes[k] > sim_mempool_capacity(ram) - sim_mempool_used(ram))
      return ds_status_set(st, DS_RESOURCE_EXHAUSTED_ERROR, "OOM on %s: %s needs %llu bytes, %llu of %llu "
                           "are in use", task(ps, DS_PS_PS, k)->device, name, (unsigned long long)bytes[k],
                           (unsigned long long)sim_mempool_used(ram),
                           (unsigned long long)sim_mempool_capacity(ram));
  }
  for (int k = 0; k < ps->nps; k++) sim_mempool_alloc(task(ps, DS_PS_PS, k)->ram, bytes[k]);
  return 0;
}

/* Places the n pieces[i] (named names[i]) on ps tasks place[i] as plain variables; NULL when
** they do not fit. */
static int place_pieces(ds_strategy *s, int n, const md_tensor *const *pieces, const int *place,
                        const ds_variable_options *o, const char *const *names, ds_variable **out,
                        ds_status *st) {
  ps_state *ps = state_of(s);
  uint64_t *bytes = base_xcalloc((size_t)ps->nps, sizeof *bytes);
  for (int i = 0; i < n; i++) bytes[place[i]] += ds__ps_value_bytes(pieces[i]);
  int rc = reserve(ps, bytes, o->name ? o->name : "Variable", st);
  free(bytes);
  for (int i = 0; rc == 0 && i < n; i++) {
    ds_variable_options named = *o;
    named.name = names[i];
    out[i] = ds__variable_placed(pieces[i], &named, s, task(ps, DS_PS_PS, place[i])->device);
  }
  return rc;
}

/* Registers v's n components on place[] and gives them slots; on a failure v is freed. */
static ds_variable *register_all(ps_state *ps, ds_variable *v, int n, const int *place, const char *kind,
                                 ds_status *st) {
  int first = ps->ncomps;
  for (int i = 0; i < n; i++) add_comp(ps, v, i, place[i], kind);
  for (int i = 0; i < n; i++)
    if (add_slots(ps, &ps->comps[first + i], st) != 0) {
      ds_variable_free(v);
      return NULL;
    }
  return v;
}

/* _create_variable_round_robin: the next ps task by the counter. */
static ds_variable *round_robin(ds_strategy *s, const md_tensor *initial, const ds_variable_options *o,
                                const char *kind, ds_status *st) {
  ps_state *ps = state_of(s);
  int p = (int)(ps->counter % ps->nps);
  const char *name = o->name ? o->name : "Variable";
  ds_variable *v;
  if (place_pieces(s, 1, &initial, &p, o, &name, &v, st) != 0) return NULL;
  ps->counter++;
  return register_all(ps, v, 1, &p, kind, st);
}

/* colocate_vars_with(with): where with's first component is, or with's own device when this
** strategy did not place it; never partitioned, the counter untouched. */
static ds_variable *colocated(ds_strategy *s, const md_tensor *initial, const ds_variable_options *o,
                              const ds_variable *with, ds_status *st) {
  ps_state *ps = state_of(s);
  int c = ds__ps_first_comp(ps, with);
  if (c < 0) return ds__variable_placed(initial, o, s, ds_variable_device(with, 0));
  int p = ps->comps[c].ps;
  const char *name = o->name ? o->name : "Variable";
  ds_variable *v;
  if (place_pieces(s, 1, &initial, &p, o, &name, &v, st) != 0) return NULL;
  return register_all(ps, v, 1, &p, "variable", st);
}

/* The partition list's checks (_create_variable): 1 on every axis but a non-zero first one. */
static int check_partitions(const int64_t *parts, int rank, ds_status *st) {
  int ok = parts[0] > 0; /* TF lets a negative count through to an empty ShardedVariable */
  for (int a = 1; a < rank; a++) ok &= parts[a] == 1;
  if (ok) return 0;
  char buf[96];
  int at = snprintf(buf, sizeof buf, "[");
  for (int a = 0; a < rank && at < (int)sizeof buf; a++)
    at += snprintf(buf + at, sizeof buf - (size_t)at, "%s%lld", a ? ", " : "", (long long)parts[a]);
  snprintf(buf + (at < (int)sizeof buf ? at : (int)sizeof buf - 2), 2, "]");
  return ds_status_set(st, DS_VALUE_ERROR, "variable_partitioner for ParameterServerStrategy must return a "
                       "list/tuple whose elements are 1 besides the first element (non-zero), got: %s", buf);
}

static ds_variable *partitioned(ds_strategy *s, const md_tensor *initial, const ds_variable_options *o,
                                int64_t nparts, ds_status *st) {
  ps_state *ps = state_of(s);
  int64_t rows = initial->shape[0];
  int n = (int)(nparts < rows ? nparts : rows);
  const char *name = o->name ? o->name : "Variable";
  md_tensor **pieces = base_xcalloc((size_t)n, sizeof *pieces);
  int *place = base_xcalloc((size_t)n, sizeof *place);
  char (*names)[64] = base_xcalloc((size_t)n, sizeof *names);
  const char **name_of = base_xcalloc((size_t)n, sizeof *name_of);
  ds_variable **shards = base_xcalloc((size_t)n, sizeof *shards);
  for (int i = 0; i < n; i++) {
    int64_t at = ds_div_shard_offset(rows, n, i);
    pieces[i] = md_tensor_slice0(initial, at, at + ds_div_shard_rows(rows, n, i));
    place[i] = (int)((ps->counter + i) % ps->nps);
    snprintf(names[i], sizeof names[i], "%.40s/part_%d", name, i);
    name_of[i] = names[i];
  }
  ds_variable *v = NULL;
  if (place_pieces(s, n, (const md_tensor *const *)pieces, place, o, name_of, shards, st) == 0) {
    ps->counter += n;
    ds_variable_options whole = *o;
    whole.name = name;
    v = ds__variable_sharded(ds_sharded_variable_new(shards, n, name, st), &whole, s);
    v = register_all(ps, v, n, place, "shard", st);
  }
  for (int i = 0; i < n; i++) md_tensor_free(pieces[i]);
  free(pieces);
  free(place);
  free(names);
  free(name_of);
  free(shards);
  return v;
}

ds_variable *ds__ps_create_variable(ds_strategy *s, const md_tensor *initial, const ds_variable_options *o,
                                    const ds_variable *colocate_with, ds_status *st) {
  ps_state *ps = state_of(s);
  if (colocate_with) return colocated(s, initial, o, colocate_with, st);
  if (!ps->has_partitioner || initial->rank == 0) return round_robin(s, initial, o, "variable", st);
  int64_t parts[MD_TENSOR_MAX_RANK];
  if (ds_partitioner_call(&ps->partitioner, initial->rank, initial->shape, (int64_t)md_dtype_size(initial->dtype),
                          0, parts, st) != 0 ||
      check_partitions(parts, initial->rank, st) != 0)
    return NULL;
  if (parts[0] == 1) return round_robin(s, initial, o, "variable", st);
  return partitioned(s, initial, o, parts[0], st);
}

int ds_ps_set_optimizer(ds_strategy *s, const md_optimizer_spec *spec, ds_status *st) {
  ps_state *ps = state_of(s);
  if (ps->has_optimizer)
    return ds_status_set(st, DS_VALUE_ERROR, "this ParameterServerStrategy already has an optimizer");
  ps->has_optimizer = 1;
  ps->opt = *spec;
  for (int i = 0; i < ps->ncomps; i++)
    if (add_slots(ps, &ps->comps[i], st) != 0) return -1;
  md_tensor *zero = md_tensor_new(MD_INT64, 0, NULL);
  ds_variable_options o = { .name = "iterations", .aggregation = DS_AGG_ONLY_FIRST_REPLICA, .trainable = 0 };
  ps->iterations = round_robin(s, zero, &o, "iterations", st);
  md_tensor_free(zero);
  return ps->iterations ? 0 : -1;
}

int64_t ds_ps_optimizer_iterations(const ds_strategy *s) {
  ps_state *ps = state_of(s);
  return ps->iterations ? md_tensor_i64(ds_variable_copy(ps->iterations, 0))[0] : 0;
}

int ds_ps_components(const ds_strategy *s, ds_ps_component *out, int max) {
  ps_state *ps = state_of(s);
  int n = 0;
  for (int i = 0; i < ps->ncomps; i++) {
    const ps_component *c = &ps->comps[i];
    const md_tensor *t = ds__ps_comp_value(c);
    ds_ps_component row = { .name = ds_variable_copy_name(c->holder, c->shard), .kind = c->kind,
                            .rank = t->rank, .shape = t->shape, .device = task(ps, DS_PS_PS, c->ps)->device,
                            .ps = c->ps };
    if (n < max) out[n] = row;
    n++;
    for (int k = 0; k < c->nslots; k++, n++) {
      if (n >= max) continue;
      out[n] = row;
      out[n].name = c->slot_names[k];
      out[n].kind = "slot";
    }
  }
  return n;
}

int ds_ps_num_components(const ds_strategy *s, const ds_variable *v) { return ds__ps_num_comps(state_of(s), v); }

int ds_ps_component_task(const ds_strategy *s, const ds_variable *v, int k) {
  ps_state *ps = state_of(s);
  int first = ds__ps_first_comp(ps, v);
  return first < 0 ? -1 : ps->comps[first + k].ps;
}

int64_t ds_ps_component_version(const ds_strategy *s, const ds_variable *v, int k) {
  ps_state *ps = state_of(s);
  int first = ds__ps_first_comp(ps, v);
  return first < 0 ? -1 : ps->comps[first + k].version;
}
