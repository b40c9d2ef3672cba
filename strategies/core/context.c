/*
** context.c: the scope stack, Strategy.run and ReplicaContext (ds_scope_, ds_run, ds_rctx_).
**
** run() spawns one actor per replica and calls sim_run. The engine stops when every replica has
** returned or is blocked; run then looks at why they are blocked:
**   - all in merge_call: a merge round. merge_fn runs here, on the main stack, in cross-replica
**     context (so it can itself drive the engine for cross-replica collectives), then a releaser
**     actor meets each replica at its own two-party barrier, in replica order, and run loops.
**   - anything else (some returned while others wait, or a collective some never joined): the
**     waiting replicas can never resume; run kills them and raises RuntimeError.
** The scope stack and the replica/cross-replica flag are per thread; replica actors are
** coroutines on run's thread, and whatever executes during sim_run is replica code.
**
** Exchange: all_reduce and all_gather first deposit a copy of the replica's value in a slot and
** meet at a barrier, so every replica sees every value: shape checks give the same verdict on
** every replica (no replica is left waiting in the collective) and integer sums and gathers are
** computed exactly in replica order. Replica r deposits its k-th value in slots[k % 2]: it
** cannot deposit its (k+2)-th before every replica has passed barrier k+1, which each does only
** after it has finished reading generation k.
*/
#include "strategies/core/context.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "strategies/core/strategiesInt.h"

/* Deeper nesting of scopes than any program needs; beyond it scope entry is refused. */
#define SCOPE_MAX 64

static _Thread_local ds_strategy *scope_stack[SCOPE_MAX]; /* entered strategies, top last */
static _Thread_local int scope_depth;                    /* entries in scope_stack */
static _Thread_local int replica_mode;                   /* inside a replica function */

const char *ds_reduce_op_name(ds_reduce_op op) {
  switch (op) {
    case DS_REDUCE_SUM: return "SUM";
    case DS_REDUCE_MEAN: return "MEAN";
    case DS_REDUCE_ONLY_FIRST_REPLICA: return "ONLY_FIRST_REPLICA";
  }
  return "?";
}

int ds_scope_enter(ds_strategy *s, ds_status *st) {
  if (scope_depth > 0 && scope_stack[scope_depth - 1] != s)
    return ds_status_set(st, DS_RUNTIME_ERROR, "Mixing different tf.distribute.Strategy objects: "
                         "%s entered inside the scope of %s", ds_kind_name(ds_strategy_kind(s)),
                         ds_kind_name(ds_strategy_kind(scope_stack[scope_depth - 1])));
  if (scope_depth == SCOPE_MAX)
    return ds_status_set(st, DS_RUNTIME_ERROR, "strategy scopes nested deeper than %d", SCOPE_MAX);
  scope_stack[scope_depth++] = s;
  return 0;
}

int ds_scope_exit(ds_strategy *s, ds_status *st) {
  if (scope_depth == 0 || scope_stack[scope_depth - 1] != s)
    return ds_status_set(st, DS_RUNTIME_ERROR, "exiting the scope of a strategy that is not the "
                         "innermost one entered");
  scope_depth--;
  return 0;
}

int ds_has_strategy(void) { return scope_depth > 0; }
/* The process's default device once a strategy connected it to a cluster, as
** ParameterServerStrategy's coordinator does (experimental_connect_to_cluster): a variable made
** outside every scope lives there. Like the scope stack, this is the process's TF state. */
static char process_device[DS_DEVICE_NAME_MAX];
static const void *process_owner;

void ds__connect_process(const void *owner, const char *device) {
  process_owner = owner;
  snprintf(process_device, sizeof process_device, "%s", device);
}

void ds__disconnect_process(const void *owner) {
  if (process_owner != owner) return;
  process_owner = NULL;
  process_device[0] = 0;
}

const char *ds__process_device(void) { return process_device; }

ds_strategy *ds_get_strategy(void) { return scope_depth > 0 ? scope_stack[scope_depth - 1] : NULL; }
int ds_in_cross_replica_context(void) { return scope_depth > 0 && !replica_mode; }
int ds__in_replica_context(void) { return replica_mode; }

/* ---- run state ----------------------------------------------------------------------------- */

typedef enum { RCTX_RUNNING, RCTX_MERGING, RCTX_DONE } rctx_state;

typedef struct run_state run_state;

struct ds_rctx {
  run_state *run;         /* the run() this replica belongs to */
  int id;                 /* replica_id_in_sync_group */
  sim_actor *actor;       /* its actor */
  rctx_state state;       /* running, paused in merge_call, or returned */
  int rc;                 /* what the replica function returned */
  ds_status status;       /* the exception it raised */
  md_tensor **args;       /* its components of run's arguments (borrowed) */
  md_tensor **results;    /* what it returned, until regrouped */
  sim_barrier *release;   /* merge_call: this replica and the releaser */
  unsigned exchanges;     /* exchanges so far: the slot generation is its parity */
  ds_merge_fn merge_fn;   /* pending merge_call: the function */
  void *merge_user;       /* its argument */
  int merge_nargs;        /* its argument count */
  md_tensor *const *merge_args; /* this replica's arguments (borrowed) */
  int merge_nresults;     /* results wanted */
  md_tensor **merge_results; /* where this replica's elements go */
};

struct run_state {
  ds_strategy *s;         /* whose replicas */
  int n;                  /* replicas */
  ds_rctx *ctx;           /* n contexts */
  const char **devices;   /* n replica device names (for regrouped values) */
  ds_replica_fn fn;       /* the replica function */
  void *user;             /* its argument */
  sim_barrier *all;       /* n parties: every replica has deposited its value */
  md_tensor **slots[2];   /* n deposited values per generation */
  sim_collective **groups; /* cross_replica_sum: the sub-groups of its latest assignment, or NULL */
  int ngroups;            /* their count */
  unsigned groups_for;    /* the exchange generation they were made for */
};

int ds_rctx_replica_id(const ds_rctx *c) { return c->id; }
int ds_rctx_num_replicas_in_sync(const ds_rctx *c) { return c->run->n; }
ds_strategy *ds_rctx_strategy(const ds_rctx *c) { return c->run->s; }
sim_actor *ds_rctx_actor(ds_rctx *c) { return c->actor; }
const char *ds_rctx_device(const ds_rctx *c) { return c->run->devices[c->id]; }
ds_status *ds_rctx_status(ds_rctx *c) { return &c->status; }

int ds_rctx_exec(ds_rctx *c, double flops) {
  return sim_exec(c->actor, ds_replica_cpu(c->run->s, c->id), flops);
}

int ds_rctx_fail(ds_rctx *c, ds_error_kind kind, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ds_status_vset(&c->status, kind, fmt, ap);
  va_end(ap);
  return -1;
}

/* Deposits a copy of t and waits until every replica has; returns the n values. */
static md_tensor *const *exchange(ds_rctx *c, const md_tensor *t) {
  run_state *run = c->run;
  md_tensor **gen = run->slots[c->exchanges++ & 1u];
  md_tensor_free(gen[c->id]);
  gen[c->id] = md_tensor_copy(t);
  if (run->n > 1) sim_barrier_wait(c->actor, run->all);
  return gen;
}

/* Times a collective of `count` floats on this replica's rank, numerics off. */
static int timed_collective(ds_rctx *c, sim_coll_op op, size_t count) {
  sim_collective *g = ds_collective(c->run->s);
  if (g == NULL || count == 0) return 0;
  int rank = ds_replica_rank(c->run->s, c->id);
  int rc = sim_collective_run(c->actor, g, rank, op, ds__algo_for(c->run->s, op, count), 0, NULL, count);
  if (rc != SIM_OK)
    return ds_rctx_fail(c, DS_RUNTIME_ERROR, "%s: %s", sim_coll_op_name(op), sim_coll_strerror(rc));
  return 0;
}

md_tensor *ds_rctx_all_reduce(ds_rctx *c, ds_reduce_op op, const md_tensor *value) {
  int tpu = ds__traits(c->run->s)->tpu;
  if (op != DS_REDUCE_SUM && op != DS_REDUCE_MEAN) {
    ds_rctx_fail(c, tpu ? DS_NOT_IMPLEMENTED_ERROR : DS_VALUE_ERROR, "all_reduce takes ReduceOp "
                 "SUM or MEAN, not %s", ds_reduce_op_name(op));
    return NULL;
  }
  int n = c->run->n;
  md_tensor *const *all = exchange(c, value);
  if (ds__check_alike(all, n, "all_reduce", &c->status) != 0) return NULL;
  /* Inside a TPU computation a MEAN scales every replica's value by 1/n, then sums them. */
  int scale_first = tpu && op == DS_REDUCE_MEAN;
  md_tensor *scaled = scale_first ? ds__times_reciprocal(md_tensor_copy(value), n) : NULL;
  const md_tensor *x = scaled ? scaled : value;
  md_tensor *r;
  int rc;
  if (x->dtype == MD_FLOAT32) {
    r = md_tensor_copy(x);
    rc = r->size ? ds_all_reduce_sum(c->run->s, c->actor, c->id, r->data, r->size) : SIM_OK;
    if (rc != SIM_OK) rc = ds_rctx_fail(c, DS_RUNTIME_ERROR, "all_reduce: %s", sim_coll_strerror(rc));
  } else {
    r = ds__sum_in_order(all, n);
    rc = timed_collective(c, SIM_COLL_ALL_REDUCE, ds__float_words(value));
  }
  md_tensor_free(scaled);
  if (rc != 0) {
    md_tensor_free(r);
    return NULL;
  }
  return op == DS_REDUCE_MEAN && !scale_first ? ds__mean(r, n) : r;
}

md_tensor *ds_rctx_all_gather(ds_rctx *c, const md_tensor *value, int axis) {
  int n = c->run->n;
  md_tensor *const *all = exchange(c, value);
  if (ds__check_gather(all, n, axis, ds_strategy_exact_gather_shapes(c->run->s), &c->status) != 0)
    return NULL;
  md_tensor *r = md_tensor_concat(all, n, axis);
  size_t widest = 0;
  for (int i = 0; i < n; i++)
    if (ds__float_words(all[i]) > widest) widest = ds__float_words(all[i]);
  if (timed_collective(c, SIM_COLL_ALL_GATHER, widest * (size_t)n) != 0) {
    md_tensor_free(r);
    return NULL;
  }
  return r;
}

static void free_groups(run_state *run) {
  for (int g = 0; g < run->ngroups; g++) sim_collective_free(run->groups[g]);
  free(run->groups);
  run->groups = NULL;
  run->ngroups = 0;
}

/* Replica r's group: its row of the assignment, and its place in it (*index). */
static int group_of(const int *assignment, int num_groups, int group_size, int r, int *index) {
  for (int g = 0; g < num_groups; g++)
    for (int i = 0; i < group_size; i++)
      if (assignment[g * group_size + i] == r) {
        *index = i;
        return g;
      }
  return -1;
}

/* The assignment's rows as sub-groups of the replicas' group, made by the first replica through
** this call's exchange: every replica has then finished the calls before, so the previous
** call's sub-groups are idle and can go. */
static void make_groups(ds_rctx *c, int num_groups, int group_size, const int *assignment) {
  run_state *run = c->run;
  if (run->groups != NULL && run->groups_for == c->exchanges) return;
  free_groups(run);
  run->groups_for = c->exchanges;
  sim_collective *all = ds_collective(run->s);
  if (all == NULL) return;  /* one replica: nothing moves */
  run->groups = base_xcalloc((size_t)num_groups, sizeof *run->groups);
  run->ngroups = num_groups;
  int *members = base_xcalloc((size_t)group_size, sizeof *members);
  for (int g = 0; g < num_groups; g++) {
    char name[48];
    for (int i = 0; i < group_size; i++) members[i] = ds_replica_rank(run->s, assignment[g * group_size + i]);
    snprintf(name, sizeof name, "cross_replica_sum%d", g);
    run->groups[g] = sim_collective_new_subgroup(all, name, group_size, members);
  }
  free(members);
}

md_tensor *ds_rctx_cross_replica_sum(ds_rctx *c, const md_tensor *x, int num_groups, int group_size,
                                     const int *group_assignment) {
  int n = c->run->n;
  if (!ds__traits(c->run->s)->tpu) {
    ds_rctx_fail(c, DS_TYPE_ERROR, "cross_replica_sum is a TPU op; this strategy is %s",
                 ds_kind_name(ds_strategy_kind(c->run->s)));
    return NULL;
  }
  int *whole = NULL;
  if (group_assignment == NULL) {
    whole = base_xcalloc((size_t)n, sizeof *whole);
    for (int r = 0; r < n; r++) whole[r] = r;
    group_assignment = whole, num_groups = 1, group_size = n;
  }
  md_tensor *const *all = exchange(c, x);
  md_tensor *r = NULL;
  int index = 0, g = -1, bad = num_groups < 1 || group_size < 1 || num_groups * group_size != n;
  for (int k = 0; !bad && k < n; k++) {  /* n entries holding each of 0..n-1 once: a permutation */
    int count = 0;
    for (int q = 0; q < n; q++) count += group_assignment[q] == k;
    bad = count != 1;
  }
  if (bad) {
    ds_rctx_fail(c, DS_INVALID_ARGUMENT_ERROR, "group_assignment of %d groups of %d must hold each of the %d "
                 "replicas exactly once", num_groups, group_size, n);
  } else if (ds__check_alike(all, n, "cross_replica_sum", &c->status) == 0) {
    g = group_of(group_assignment, num_groups, group_size, c->id, &index);
    md_tensor **row = base_xcalloc((size_t)group_size, sizeof *row);
    for (int i = 0; i < group_size; i++) row[i] = all[group_assignment[g * group_size + i]];
    r = ds__sum_in_order(row, group_size);
    free(row);
    make_groups(c, num_groups, group_size, group_assignment);
    size_t words = ds__float_words(x);
    int rc = c->run->groups && words > 0
                 ? sim_collective_run(c->actor, c->run->groups[g], index, SIM_COLL_ALL_REDUCE, SIM_ALGO_RING, 0,
                                      NULL, words)
                 : SIM_OK;
    if (rc != SIM_OK) {
      ds_rctx_fail(c, DS_RUNTIME_ERROR, "cross_replica_sum: %s", sim_coll_strerror(rc));
      md_tensor_free(r);
      r = NULL;
    }
  }
  free(whole);
  return r;
}

int ds_rctx_merge_call(ds_rctx *c, ds_merge_fn fn, void *user, int nargs, md_tensor *const *args,
                       int nresults, md_tensor **results) {
  c->merge_fn = fn;
  c->merge_user = user;
  c->merge_nargs = nargs;
  c->merge_args = args;
  c->merge_nresults = nresults;
  c->merge_results = results;
  c->state = RCTX_MERGING;
  sim_barrier_wait(c->actor, c->release);
  c->state = RCTX_RUNNING;
  return 0;
}

/* ---- run ----------------------------------------------------------------------------------- */

static void replica_main(sim_actor *self, void *arg) {
  ds_rctx *c = arg;
  c->actor = self;
  c->rc = c->run->fn(c, c->run->user, c->args, c->results);
  c->state = RCTX_DONE;
}

/* Meets every replica paused in merge_call, in replica order. */
static void releaser_main(sim_actor *self, void *arg) {
  run_state *run = arg;
  for (int r = 0; r < run->n; r++) sim_barrier_wait(self, run->ctx[r].release);
}

/* Values of one component per replica: a PerReplica over the replica devices, or on a single
** replica the tensor itself. Takes ownership of parts[0..n). */
static ds_value *regroup(const run_state *run, md_tensor **parts) {
  if (run->n == 1) return ds_value_regular(parts[0]);
  return ds_value_new(DS_VALUE_PER_REPLICA, run->n, parts, run->devices);
}

/* Hands result j of merge_fn to every replica: a regular value to all, a distributed one by
** component. */
static int scatter_merge_results(run_state *run, ds_value **res, ds_status *st) {
  const ds_rctx *first = &run->ctx[0];
  for (int j = 0; j < first->merge_nresults; j++) {
    if (res[j] == NULL)
      return ds_status_set(st, DS_VALUE_ERROR, "merge_fn left result %d unset", j);
    if (ds_value_is_distributed(res[j]) && ds_value_num_components(res[j]) != run->n)
      return ds_status_set(st, DS_VALUE_ERROR, "merge_fn result %d has %d components for %d "
                           "replicas", j, ds_value_num_components(res[j]), run->n);
  }
  for (int r = 0; r < run->n; r++)
    for (int j = 0; j < first->merge_nresults; j++) {
      int k = ds_value_is_distributed(res[j]) ? r : 0;
      run->ctx[r].merge_results[j] = md_tensor_copy(ds_value_component(res[j], k));
    }
  return 0;
}

static int merge_round(run_state *run, ds_status *st) {
  const ds_rctx *first = &run->ctx[0];
  for (int r = 1; r < run->n; r++)
    if (run->ctx[r].merge_nargs != first->merge_nargs ||
        run->ctx[r].merge_nresults != first->merge_nresults)
      return ds_status_set(st, DS_RUNTIME_ERROR, "replica %d called merge_call with %d arguments "
                           "and %d results, replica 0 with %d and %d", r, run->ctx[r].merge_nargs,
                           run->ctx[r].merge_nresults, first->merge_nargs, first->merge_nresults);
  int nargs = first->merge_nargs, nres = first->merge_nresults;
  ds_value **args = base_xcalloc((size_t)nargs + 1, sizeof *args);
  ds_value **res = base_xcalloc((size_t)nres + 1, sizeof *res);
  md_tensor **parts = base_xcalloc((size_t)run->n, sizeof *parts);
  for (int i = 0; i < nargs; i++) {
    for (int r = 0; r < run->n; r++) parts[r] = md_tensor_copy(run->ctx[r].merge_args[i]);
    args[i] = regroup(run, parts);
  }
  replica_mode = 0;
  int rc = first->merge_fn(run->s, first->merge_user, args, res, st);
  replica_mode = 1;
  if (rc == 0) rc = scatter_merge_results(run, res, st);
  else if (ds_status_ok(st)) rc = ds_status_set(st, DS_RUNTIME_ERROR, "merge_fn failed");
  for (int i = 0; i < nargs; i++) ds_value_free(args[i]);
  for (int j = 0; j < nres; j++) ds_value_free(res[j]);
  free(args);
  free(res);
  free(parts);
  if (rc == 0) sim_actor_spawn(ds_strategy_engine(run->s), "merge_call", releaser_main, run);
  return rc;
}

/* Drives the replicas until all returned; 0, or -1 with st set (a stuck round). */
static int drive(run_state *run, ds_status *st) {
  sim_engine *e = ds_strategy_engine(run->s);
  for (;;) {
    sim_run(e);
    int done = 0, merging = 0;
    for (int r = 0; r < run->n; r++) {
      done += run->ctx[r].state == RCTX_DONE;
      merging += run->ctx[r].state == RCTX_MERGING;
    }
    if (done == run->n) return 0;
    if (merging == run->n) {
      if (merge_round(run, st) != 0) return -1;
      continue;
    }
    if (merging > 0 && done > 0)
      return ds_status_set(st, DS_RUNTIME_ERROR, "some replicas made a different number of "
                           "replica_context().merge_call() calls: %d returned while %d wait in "
                           "merge_call", done, merging);
    return ds_status_set(st, DS_RUNTIME_ERROR, "%d of %d replicas are blocked in a collective or "
                         "merge_call that not every replica joined", run->n - done, run->n);
  }
}

/* The components of argument i that replica r receives. */
static int unwrap_args(run_state *run, int nargs, ds_value *const *args, ds_status *st) {
  for (int i = 0; i < nargs; i++) {
    int k = ds_value_num_components(args[i]);
    if (ds_value_is_distributed(args[i]) && k != run->n)
      return ds_status_set(st, DS_VALUE_ERROR, "run: argument %d is a %s of %d components for %d "
                           "replicas", i, ds_value_kind_name(ds_value_kind_of(args[i])), k, run->n);
    for (int r = 0; r < run->n; r++)
      run->ctx[r].args[i] = ds_value_component(args[i], ds_value_is_distributed(args[i]) ? r : 0);
  }
  return 0;
}

static void run_free(run_state *run, int nresults) {
  for (int r = 0; r < run->n; r++) {
    ds_rctx *c = &run->ctx[r];
    for (int j = 0; j < nresults; j++) md_tensor_free(c->results[j]);
    free(c->args);
    free(c->results);
    sim_barrier_free(c->release);
    md_tensor_free(run->slots[0][r]);
    md_tensor_free(run->slots[1][r]);
  }
  free_groups(run);
  sim_barrier_free(run->all);
  free(run->slots[0]);
  free(run->slots[1]);
  free(run->devices);
  free(run->ctx);
}

/* Regroups the replicas' results; 0, or ValueError when one left a result unset. */
static int collect(run_state *run, int nresults, ds_value **results, ds_status *st) {
  for (int j = 0; j < nresults; j++)
    for (int r = 0; r < run->n; r++)
      if (run->ctx[r].results[j] == NULL)
        return ds_status_set(st, DS_VALUE_ERROR, "replica %d returned without result %d", r, j);
  md_tensor **parts = base_xcalloc((size_t)run->n, sizeof *parts);
  for (int j = 0; j < nresults; j++) {
    for (int r = 0; r < run->n; r++) {
      parts[r] = run->ctx[r].results[j];
      run->ctx[r].results[j] = NULL;
    }
    results[j] = regroup(run, parts);
  }
  free(parts);
  return 0;
}

int ds_run(ds_strategy *s, ds_replica_fn fn, void *user, int nargs, ds_value *const *args,
           int nresults, ds_value **results, ds_status *st) {
  ds_status_clear(st);
  if (replica_mode)
    return ds_status_set(st, DS_RUNTIME_ERROR, "run() called from inside a replica function");
  if (ds_scope_enter(s, st) != 0) return -1;
  sim_engine *e = ds_strategy_engine(s);
  run_state run = { .s = s, .n = ds_num_replicas_in_sync(s), .fn = fn, .user = user };
  run.ctx = base_xcalloc((size_t)run.n, sizeof *run.ctx);
  run.devices = base_xcalloc((size_t)run.n, sizeof *run.devices);
  run.slots[0] = base_xcalloc((size_t)run.n, sizeof *run.slots[0]);
  run.slots[1] = base_xcalloc((size_t)run.n, sizeof *run.slots[1]);
  run.all = sim_barrier_new(e, run.n);
  for (int r = 0; r < run.n; r++) {
    ds_rctx *c = &run.ctx[r];
    *c = (ds_rctx){ .run = &run, .id = r, .release = sim_barrier_new(e, 2) };
    c->args = base_xcalloc((size_t)nargs + 1, sizeof *c->args);
    c->results = base_xcalloc((size_t)nresults + 1, sizeof *c->results);
    run.devices[r] = ds_replica_device(s, r);
  }
  int rc = unwrap_args(&run, nargs, args, st);
  if (rc == 0) {
    for (int r = 0; r < run.n; r++) sim_actor_spawn(e, run.devices[r], replica_main, &run.ctx[r]);
    replica_mode = 1;
    rc = drive(&run, st);
    replica_mode = 0;
    for (int r = 0; r < run.n; r++)
      if (run.ctx[r].state != RCTX_DONE) sim_actor_kill(run.ctx[r].actor);
    for (int r = 0; r < run.n; r++)
      if (run.ctx[r].state == RCTX_DONE && run.ctx[r].rc != 0) {
        if (st) *st = run.ctx[r].status;
        if (ds_status_ok(st)) ds_status_set(st, DS_RUNTIME_ERROR, "replica %d failed", r);
        rc = -1;
        break;
      }
  }
  if (rc == 0) rc = collect(&run, nresults, results, st);
  run_free(&run, nresults);
  ds_scope_exit(s, NULL);
  return rc;
}
