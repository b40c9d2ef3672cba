/*
** tpu_v1.c: TF1's contrib TPUStrategy (ds_tpu_v1_).
**
** The strategy object is a ds_strategy of kind DS_TPU_V1 over the sorted towers, built with the
** TPU system it stands on (tpu_strategy.c); this file adds TF1's tower API and the on-device
** loop. run_steps_on_dataset reads every element the loop will dequeue before it starts (TF's
** host enqueue loop runs ahead of the device the same way) and then runs one ds_run whose tower
** actors each pay the launch, the infeed of every step, the steps and the fetch.
*/
#include "strategies/tpu/tpu_v1.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strategies/tpu/tpuInt.h"

#define NAME_MAX_LEN 64  /* longest output name kept */

struct ds_tpu_v1 {
  ds_strategy *s;         /* the towers, owning the slice and TPU system tables */
  sim_tpu_slice *slice;   /* the strategy's slice (for each chip's PCIe links) */
  int towers;             /* num_towers */
  int *device;            /* slice device of each tower */
  int hosts;              /* num_hosts of the TPU system */
  int towers_per_host;    /* num_of_cores_per_host of the TPU system */
  int steps_per_run;      /* steps per loop Keras and Estimator ask for */
  int eager;              /* executing eagerly: initialize/finalize refuse */
  int initialized;        /* initialize() ran and finalize() did not since */
  int colocate_depth;     /* open colocate_vars_with scopes */
  sim_time loop_overhead; /* host cost of a loop launch */
  int local;              /* the master is "" or "local": host devices carry no job */
  char job[32];           /* the resolver's job, for host devices and the cluster spec */
  char host[DS_DEVICE_NAME_MAX]; /* host 0's CPU: non-slot variables and reduce results */
};

struct ds_tpu_v1_iterator {
  int hosts;              /* one pipeline per host */
  ds_dataset **dataset;   /* each host's dataset_fn result */
  ds_dataset_iterator **it; /* and its iterator */
};

typedef struct last_output {
  char name[NAME_MAX_LEN];/* the name set_last_step_output was given */
  double bytes;           /* the output's size: what each tower sends back to the host */
  md_tensor *value;       /* tower 0's reduction in the latest step that set it */
} last_output;

typedef struct non_tensor_output {
  char name[NAME_MAX_LEN];/* the name set_non_tensor_output was given */
  ds_value *value;        /* every tower's output, unwrapped */
} non_tensor_output;

struct ds_tpu_v1_step_context {
  int nlast;              /* last-step outputs set */
  last_output last[DS_TPU_V1_MAX_OUTPUTS]; /* in the order first set */
  int nnon;               /* non-tensor outputs set */
  non_tensor_output non[DS_TPU_V1_MAX_OUTPUTS]; /* in the order first set */
};

ds_tpu_v1_options ds_tpu_v1_options_default(void) {
  return (ds_tpu_v1_options){ .loop_overhead = DS_TPU_V1_LOOP_OVERHEAD };
}

/* ---- construction -------------------------------------------------------------------------- */

typedef struct sort_key {
  char name[48];          /* "task:T/device:TPU:K": what orders full device names of one job */
  int device;             /* its index in the system's device list */
} sort_key;

static int by_name(const void *a, const void *b) {
  return strcmp(((const sort_key *)a)->name, ((const sort_key *)b)->name);
}

ds_tpu_v1 *ds_tpu_v1_new(sim_engine *e, const ds_tpu_resolver *r, const ds_tpu_v1_options *o,
                         const ds_tpu_machine *m, sim_algo algo, ds_status *st) {
  ds_status_clear(st);
  if (r == NULL) {
    ds_status_set(st, DS_VALUE_ERROR, "TPUStrategy needs a TPUClusterResolver naming the TPU slice");
    return NULL;
  }
  const ds_tpu_v1_options defaults = ds_tpu_v1_options_default();
  if (o == NULL) o = &defaults;
  int tasks = ds_tpu_resolver_num_tasks(r), per_task = ds_tpu_resolver_num_accelerators(r);
  int total = tasks * per_task;
  if (o->steps_per_run < 0) {
    ds_status_set(st, DS_VALUE_ERROR, "steps_per_run must be at least 1, got %d", o->steps_per_run);
    return NULL;
  }
  if (o->num_cores < 0 || o->num_cores > total) {
    ds_status_set(st, DS_VALUE_ERROR, "num_cores=%d: the TPU system has %d TPU cores", o->num_cores, total);
    return NULL;
  }
  sort_key *keys = base_xcalloc((size_t)total, sizeof *keys);
  for (int d = 0; d < total; d++) {
    snprintf(keys[d].name, sizeof keys[d].name, "task:%d/device:TPU:%d", d / per_task, d % per_task);
    keys[d].device = d;
  }
  qsort(keys, (size_t)total, sizeof *keys, by_name);  /* names are distinct: the order is total */
  ds_tpu_v1 *v = base_xcalloc(1, sizeof *v);
  v->towers = o->num_cores ? o->num_cores : total;
  v->device = base_xcalloc((size_t)v->towers, sizeof *v->device);
  for (int t = 0; t < v->towers; t++) v->device[t] = keys[t].device;
  free(keys);
  v->s = ds__tpu_strategy_on_resolver(e, DS_TPU_V1, r, v->towers, v->device, m, algo, o->overrides,
                                      &v->slice);
  v->hosts = tasks;
  v->towers_per_host = per_task;
  v->steps_per_run = o->steps_per_run ? o->steps_per_run : 1;
  v->eager = o->executing_eagerly;
  v->loop_overhead = o->loop_overhead;
  const char *master = ds_tpu_resolver_master(r);
  v->local = !master[0] || !strcmp(master, "local");
  snprintf(v->job, sizeof v->job, "%s", ds_tpu_resolver_job_name(r));
  ds_tpu_v1_host_cpu_device(v, 0, v->host, sizeof v->host);
  return v;
}

void ds_tpu_v1_free(ds_tpu_v1 *v) {
  if (v == NULL) return;
  ds_strategy_free(v->s);
  free(v->device);
  free(v);
}

ds_strategy *ds_tpu_v1_strategy(const ds_tpu_v1 *v) { return v->s; }
const sim_tpu_slice *ds_tpu_v1_slice(const ds_tpu_v1 *v) { return v->slice; }

/* ---- properties ---------------------------------------------------------------------------- */

int ds_tpu_v1_num_towers(const ds_tpu_v1 *v) { return v->towers; }
int ds_tpu_v1_is_single_tower(const ds_tpu_v1 *v) { return v->towers == 1; }
int ds_tpu_v1_steps_per_run(const ds_tpu_v1 *v) { return v->steps_per_run; }
int ds_tpu_v1_num_hosts(const ds_tpu_v1 *v) { return v->hosts; }
int ds_tpu_v1_num_towers_per_host(const ds_tpu_v1 *v) { return v->towers_per_host; }
int ds_tpu_v1_between_graph(const ds_tpu_v1 *v) { (void)v; return 0; }
int ds_tpu_v1_should_init(const ds_tpu_v1 *v) { (void)v; return 1; }
int ds_tpu_v1_should_checkpoint(const ds_tpu_v1 *v) { (void)v; return 1; }
int ds_tpu_v1_should_save_summary(const ds_tpu_v1 *v) { (void)v; return 1; }

int ds_tpu_v1_worker_devices(const ds_tpu_v1 *v, const char **out, int max) {
  for (int t = 0; t < v->towers && t < max; t++) out[t] = ds_replica_device(v->s, t);
  return v->towers;
}

int ds_tpu_v1_parameter_devices(const ds_tpu_v1 *v, const char **out, int max) {
  return ds_tpu_v1_worker_devices(v, out, max);
}

const char *ds_tpu_v1_host_cpu_device(const ds_tpu_v1 *v, int host, char *buf, size_t len) {
  if (v->local) snprintf(buf, len, "/replica:0/task:0/device:CPU:0");
  else snprintf(buf, len, "/job:%s/task:%d/device:CPU:0", v->job, host);
  return buf;
}

const char *ds_tpu_v1_non_slot_devices(const ds_tpu_v1 *v) { return v->host; }

void ds_tpu_v1_configure(const ds_tpu_v1 *v, ds_tpu_v1_session_config *config) {
  config->isolate_session_state = 1;
  snprintf(config->cluster_job, sizeof config->cluster_job, "%s", v->local ? "" : v->job);
  config->cluster_tasks = v->local ? 0 : v->hosts;
}

static int refuse_eager(const ds_tpu_v1 *v, ds_status *st) {
  if (v->eager) return ds_status_set(st, DS_NOT_IMPLEMENTED_ERROR, "Eager mode not supported in TPUStrategy.");
  return 0;
}

int ds_tpu_v1_initialize(ds_tpu_v1 *v, ds_status *st) {
  ds_status_clear(st);
  if (refuse_eager(v, st) != 0) return -1;
  v->initialized = 1;
  return 0;
}

int ds_tpu_v1_finalize(ds_tpu_v1 *v, ds_status *st) {
  ds_status_clear(st);
  if (refuse_eager(v, st) != 0) return -1;
  v->initialized = 0;
  return 0;
}

int ds_tpu_v1_system_initialized(const ds_tpu_v1 *v) { return v->initialized; }

/* ---- towers -------------------------------------------------------------------------------- */

int ds_tpu_v1_call_for_each_tower(ds_tpu_v1 *v, ds_replica_fn fn, void *user, int nargs,
                                  ds_value *const *args, int nresults, ds_value **results,
                                  ds_status *st) {
  return ds_run(v->s, fn, user, nargs, args, nresults, results, st);
}

int ds_tpu_v1_unwrap(const ds_value *value, md_tensor **out, int max) {
  int n = ds_value_num_components(value);
  /* Insertion sort by device name: stable, and deterministic for repeated names. */
  int *order = base_xcalloc((size_t)n, sizeof *order);
  for (int i = 0; i < n; i++) {
    int j = i;
    for (; j > 0 && strcmp(ds_value_device(value, order[j - 1]), ds_value_device(value, i)) > 0; j--)
      order[j] = order[j - 1];
    order[j] = i;
  }
  for (int i = 0; i < n && i < max; i++) out[i] = ds_value_component(value, order[i]);
  free(order);
  return n;
}

const ds_value *ds_tpu_v1_value_container(const ds_value *value) { return value; }

ds_value *ds_tpu_v1_broadcast(const md_tensor *tensor) { return ds_value_regular(md_tensor_copy(tensor)); }

/* The fields of a TF device name, the defaults filled in as device_util.canonicalize does. */
static void canonical_device(const char *name, char *buf, size_t len) {
  char job[64] = "localhost", type[64] = "CPU";
  int replica = 0, task = 0, index = 0;
  const char *p = name;
  while (*p) {
    while (*p == '/') p++;
    const char *end = strchr(p, '/');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    char field[64];
    snprintf(field, sizeof field, "%.*s", (int)(n < sizeof field ? n : sizeof field - 1), p);
    char *colon = strchr(field, ':');
    if (!strncmp(field, "job:", 4)) snprintf(job, sizeof job, "%s", field + 4);
    else if (!strncmp(field, "replica:", 8)) replica = atoi(field + 8);
    else if (!strncmp(field, "task:", 5)) task = atoi(field + 5);
    else if (colon) {
      char *kind = !strncmp(field, "device:", 7) ? field + 7 : field;
      colon = strchr(kind, ':');
      if (colon) {
        *colon = 0;
        index = atoi(colon + 1);
      }
      snprintf(type, sizeof type, "%s", kind);
      for (char *c = type; *c; c++) *c = (char)toupper((unsigned char)*c);
    }
    p += n;
  }
  snprintf(buf, len, "/job:%s/replica:%d/task:%d/device:%s:%d", job, replica, task, type, index);
}

static int check_destination(const ds_tpu_v1 *v, int ndest, const char *const *destinations,
                             ds_status *st) {
  if (ndest < 1) return ds_status_set(st, DS_VALUE_ERROR, "reduce: destinations can not be empty");
  if (ndest > 1) return ds_status_set(st, DS_VALUE_ERROR, "Multiple devices are not supported for TPUStrategy");
  char want[192], got[192];  /* room for the two 64-byte fields and the rest */
  canonical_device(v->host, want, sizeof want);
  canonical_device(destinations[0], got, sizeof got);
  if (strcmp(want, got) != 0)
    return ds_status_set(st, DS_VALUE_ERROR, "TPUStrategy reduces onto host 0's CPU %s, not %s", want, got);
  return 0;
}

/* 1/n as TF's float32 `x * (1. / n)` multiplies; TypeError for integers, which TF cannot scale. */
static int scale_mean(md_tensor *t, int n, ds_status *st) {
  if (!md_dtype_is_floating(t->dtype))
    return ds_status_set(st, DS_TYPE_ERROR, "MEAN of %s values: TPUStrategy scales by 1/%d, a float",
                         md_dtype_name(t->dtype), n);
  md_tensor_scale(t, 1.0 / n);
  return 0;
}

md_tensor *ds_tpu_v1_reduce(ds_tpu_v1 *v, ds_reduce_op aggregation, const ds_value *value,
                            int ndest, const char *const *destinations, ds_status *st) {
  ds_status_clear(st);
  if (ds__in_replica_context()) {
    ds_status_set(st, DS_RUNTIME_ERROR, "reduce() in tower context: use ds_tpu_v1_tower_reduce there");
    return NULL;
  }
  if (check_destination(v, ndest, destinations, st) != 0) return NULL;
  int n = ds_value_num_components(value);
  md_tensor **parts = base_xcalloc((size_t)n, sizeof *parts);
  ds_tpu_v1_unwrap(value, parts, n);
  md_tensor *r = NULL;
  if (ds__check_alike(parts, n, "reduce", st) == 0) {
    r = aggregation == DS_REDUCE_ONLY_FIRST_REPLICA ? md_tensor_copy(parts[0]) : ds__sum_in_order(parts, n);
    if (aggregation == DS_REDUCE_MEAN && scale_mean(r, n, st) != 0) {
      md_tensor_free(r);
      r = NULL;
    }
  }
  free(parts);
  return r;
}

int ds_tpu_v1_batch_reduce(ds_tpu_v1 *v, ds_reduce_op aggregation, int n,
                           const ds_reduce_pair *pairs, md_tensor **out, ds_status *st) {
  int failed = 0;
  memset(out, 0, (size_t)n * sizeof *out);
  for (int i = 0; i < n && !failed; i++)
    failed = (out[i] = ds_tpu_v1_reduce(v, aggregation, pairs[i].value, pairs[i].ndest,
                                        pairs[i].destinations, st)) == NULL;
  for (int i = 0; i < n && failed; i++) {
    md_tensor_free(out[i]);
    out[i] = NULL;
  }
  return failed ? -1 : 0;
}

md_tensor *ds_tpu_v1_tower_reduce(ds_rctx *tower, ds_reduce_op aggregation, const md_tensor *value) {
  if (aggregation != DS_REDUCE_SUM && aggregation != DS_REDUCE_MEAN) {
    ds_rctx_fail(tower, DS_NOT_IMPLEMENTED_ERROR, "Currently only support sum & mean in TPUStrategy.");
    return NULL;
  }
  md_tensor *scaled = md_tensor_copy(value);
  md_tensor *r = NULL;
  if (aggregation != DS_REDUCE_MEAN ||
      scale_mean(scaled, ds_rctx_num_replicas_in_sync(tower), ds_rctx_status(tower)) == 0)
    r = ds_rctx_all_reduce(tower, DS_REDUCE_SUM, scaled);
  md_tensor_free(scaled);
  return r;
}

/* ---- variables ----------------------------------------------------------------------------- */

static int require_mirrored(const ds_variable *var, const char *method, ds_status *st) {
  if (ds_variable_kind_of(var) != DS_VARIABLE_MIRRORED)
    return ds_status_set(st, DS_TYPE_ERROR, "%s needs a TPUMirroredVariable, got a %s (%s)", method,
                         ds_variable_kind_name(ds_variable_kind_of(var)), ds_variable_name(var));
  return 0;
}

int ds_tpu_v1_update(ds_tpu_v1 *v, ds_variable *var, ds_update_fn fn, void *user, int nargs,
                     ds_value *const *args, ds_value **out, ds_status *st) {
  (void)v;
  ds_status_clear(st);
  if (require_mirrored(var, "update", st) != 0) return -1;
  return ds_variable_update(var, fn, user, nargs, args, out, st);
}

int ds_tpu_v1_update_non_slot(ds_tpu_v1 *v, ds_tpu_v1_host_fn fn, void *user, ds_status *st) {
  ds_status_clear(st);
  if (ds__in_replica_context())
    return ds_status_set(st, DS_RUNTIME_ERROR, "update_non_slot() requires cross-tower context");
  return fn(v, user, st);
}

md_tensor *ds_tpu_v1_read_var(ds_tpu_v1 *v, ds_variable *var, ds_status *st) {
  (void)v;
  ds_status_clear(st);
  if (require_mirrored(var, "read_var", st) != 0) return NULL;
  return ds_variable_read(var, NULL, st);
}

int ds_tpu_v1_colocate_vars_with_begin(ds_tpu_v1 *v, const ds_variable *var, ds_status *st) {
  (void)var;
  ds_status_clear(st);
  v->colocate_depth++;
  return 0;
}

int ds_tpu_v1_colocate_vars_with_end(ds_tpu_v1 *v, ds_status *st) {
  ds_status_clear(st);
  if (v->colocate_depth == 0)
    return ds_status_set(st, DS_RUNTIME_ERROR, "colocate_vars_with ended without a begin");
  v->colocate_depth--;
  return 0;
}

/* ---- input --------------------------------------------------------------------------------- */

void ds_tpu_v1_iterator_free(ds_tpu_v1_iterator *it) {
  if (it == NULL) return;
  for (int h = 0; h < it->hosts; h++) {
    ds_dataset_iterator_free(it->it[h]);
    ds_dataset_free(it->dataset[h]);
  }
  free(it->it);
  free(it->dataset);
  free(it);
}

ds_tpu_v1_iterator *ds_tpu_v1_distribute_dataset(ds_tpu_v1 *v, ds_input_dataset_fn dataset_fn,
                                                 void *user, ds_status *st) {
  ds_status_clear(st);
  ds_tpu_v1_iterator *it = base_xcalloc(1, sizeof *it);
  it->dataset = base_xcalloc((size_t)v->hosts, sizeof *it->dataset);
  it->it = base_xcalloc((size_t)v->hosts, sizeof *it->it);
  for (int h = 0; h < v->hosts; h++) {
    ds_input_context ctx = { v->hosts, h, v->towers };
    it->dataset[h] = dataset_fn(&ctx, user, st);
    if (it->dataset[h] == NULL) {
      if (ds_status_ok(st)) ds_status_set(st, DS_TYPE_ERROR, "dataset_fn returned no dataset for host %d", h);
      ds_tpu_v1_iterator_free(it);
      return NULL;
    }
    it->hosts = h + 1;
    it->it[h] = ds_dataset_make_iterator(it->dataset[h]);
  }
  return it;
}

/* ---- the on-device loop -------------------------------------------------------------------- */

typedef struct loop {
  ds_tpu_v1 *v;           /* whose towers */
  ds_tpu_v1_step_fn fn;   /* the step function */
  void *user;             /* its argument */
  ds_tpu_v1_step_context *ctx; /* the MultiStepContext the steps fill */
  int steps;              /* iterations */
  int ncomp;              /* components of an element */
  md_tensor **inputs;     /* [step][tower][component]: what each tower dequeues */
} loop;

static md_tensor **inputs_of(const loop *l, int step, int tower) {
  return l->inputs + ((size_t)step * (size_t)l->v->towers + (size_t)tower) * (size_t)l->ncomp;
}

static double tensor_bytes(const md_tensor *t) { return (double)(t->size * md_dtype_size(t->dtype)); }

static double element_bytes(md_tensor *const *t, int n) {
  double bytes = 0;
  for (int i = 0; i < n; i++) bytes += tensor_bytes(t[i]);
  return bytes;
}

/* Over the tower's PCIe link, host to chip (to_chip) or back. */
static int tower_pcie(const ds_tpu_v1 *v, sim_actor *self, int tower, int to_chip, double bytes) {
  sim_link *link = sim_tpu_chip_pcie(v->slice, sim_tpu_device_chip(v->slice, v->device[tower]), to_chip);
  return sim_comm(self, &link, 1, bytes);
}

static int pcie(ds_rctx *c, const ds_tpu_v1 *v, int to_chip, double bytes) {
  int tower = ds_rctx_replica_id(c);
  if (tower_pcie(v, ds_rctx_actor(c), tower, to_chip, bytes) != SIM_OK)
    return ds_rctx_fail(c, DS_RUNTIME_ERROR, "PCIe transfer of tower %d failed", tower);
  return 0;
}

int ds_tpu_v1_launch(const ds_tpu_v1 *v, sim_actor *self, int tower) {
  /* Every tower waits out the host's dispatch together, which is the host paying it once. */
  int rc = sim_sleep(self, v->loop_overhead);
  return rc != SIM_OK ? rc : tower_pcie(v, self, tower, 1, DS_TPU_V1_LAUNCH_BYTES);
}

int ds_tpu_v1_fetch(const ds_tpu_v1 *v, sim_actor *self, int tower, double bytes) {
  return tower_pcie(v, self, tower, 0, bytes);
}

static int loop_tower(ds_rctx *c, void *user, md_tensor *const *args, md_tensor **results) {
  (void)args;
  (void)results;
  loop *l = user;
  int tower = ds_rctx_replica_id(c);
  if (ds_tpu_v1_launch(l->v, ds_rctx_actor(c), tower) != SIM_OK)
    return ds_rctx_fail(c, DS_RUNTIME_ERROR, "launch of the loop on tower %d failed", tower);
  for (int k = 0; k < l->steps; k++) {
    md_tensor **in = inputs_of(l, k, tower);
    if (pcie(c, l->v, 1, element_bytes(in, l->ncomp)) != 0 || l->fn(l->ctx, c, l->user, in) != 0) return -1;
  }
  double out = 0;
  for (int i = 0; i < l->ctx->nlast; i++) out += l->ctx->last[i].bytes;
  if (ds_tpu_v1_fetch(l->v, ds_rctx_actor(c), tower, out) != SIM_OK)
    return ds_rctx_fail(c, DS_RUNTIME_ERROR, "PCIe transfer of tower %d failed", tower);
  return 0;
}

/* Dequeues what every step of every tower takes, host by host as the enqueue loops do. */
static int fill_inputs(loop *l, ds_tpu_v1_iterator *it, ds_status *st) {
  const ds_tpu_v1 *v = l->v;
  for (int k = 0; k < l->steps; k++)
    for (int h = 0; h < v->hosts; h++)
      for (int t = 0; t < v->towers; t++)
        if (sim_tpu_device_host(v->slice, v->device[t]) == h &&
            ds_dataset_get_next(it->it[h], inputs_of(l, k, t), st) != 0)
          return -1;
  return 0;
}

void ds_tpu_v1_step_context_free(ds_tpu_v1_step_context *ctx) {
  if (ctx == NULL) return;
  for (int i = 0; i < ctx->nlast; i++) md_tensor_free(ctx->last[i].value);
  for (int i = 0; i < ctx->nnon; i++) ds_value_free(ctx->non[i].value);
  free(ctx);
}

ds_tpu_v1_step_context *ds_tpu_v1_run_steps_on_dataset(ds_tpu_v1 *v, ds_tpu_v1_step_fn fn, void *user,
                                                       ds_tpu_v1_iterator *it, int iterations,
                                                       ds_status *st) {
  ds_status_clear(st);
  for (int h = 0; h < it->hosts; h++)
    if (!ds_dataset_is_statically_shaped(it->dataset[h])) {
      ds_status_set(st, DS_VALUE_ERROR, "TPU currently requires fully defined shapes. Either use "
                    "set_shape() on the input tensors or use dataset.batch(..., drop_remainder=True).");
      return NULL;
    }
  if (iterations < 1) {
    ds_status_set(st, DS_VALUE_ERROR, "run_steps_on_dataset: iterations must be at least 1, got %d",
                  iterations);
    return NULL;
  }
  loop l = { .v = v, .fn = fn, .user = user, .steps = iterations,
             .ncomp = ds_dataset_num_components(it->dataset[0]) };
  size_t ninputs = (size_t)iterations * (size_t)v->towers * (size_t)l.ncomp;
  l.inputs = base_xcalloc(ninputs, sizeof *l.inputs);
  l.ctx = base_xcalloc(1, sizeof *l.ctx);
  int rc = fill_inputs(&l, it, st);
  if (rc == 0) rc = ds_run(v->s, loop_tower, &l, 0, NULL, 0, NULL, st);
  for (size_t i = 0; i < ninputs; i++) md_tensor_free(l.inputs[i]);
  free(l.inputs);
  if (rc == 0) return l.ctx;
  ds_tpu_v1_step_context_free(l.ctx);
  return NULL;
}

int ds_tpu_v1_set_last_step_output(ds_tpu_v1_step_context *ctx, ds_rctx *tower, const char *name,
                                   const md_tensor *output, ds_aggregation aggregation) {
  static const ds_reduce_op as_op[] = { DS_REDUCE_SUM, DS_REDUCE_SUM, DS_REDUCE_MEAN,
                                        DS_REDUCE_ONLY_FIRST_REPLICA };
  if (aggregation == DS_AGG_NONE)
    return ds_rctx_fail(tower, DS_VALUE_ERROR, "set_last_step_output(\"%s\") in tower context needs an "
                        "aggregation", name);
  int i = 0;
  while (i < ctx->nlast && strcmp(ctx->last[i].name, name) != 0) i++;
  if (i == DS_TPU_V1_MAX_OUTPUTS)
    return ds_rctx_fail(tower, DS_VALUE_ERROR, "more than %d last-step outputs", DS_TPU_V1_MAX_OUTPUTS);
  /* The entry is made before the reduce blocks, so the towers that follow find it. */
  if (i == ctx->nlast) {
    snprintf(ctx->last[i].name, sizeof ctx->last[i].name, "%s", name);
    ctx->last[i].bytes = tensor_bytes(output);
    ctx->nlast++;
  }
  md_tensor *r = ds_tpu_v1_tower_reduce(tower, as_op[aggregation], output);
  if (r == NULL) return -1;
  if (ds_rctx_replica_id(tower) == 0) {
    md_tensor_free(ctx->last[i].value);
    ctx->last[i].value = r;
  } else {
    md_tensor_free(r);
  }
  return 0;
}

typedef struct non_tensor_call {
  ds_tpu_v1_step_context *ctx; /* where the output goes */
  const char *name;       /* under which name */
} non_tensor_call;

static int keep_non_tensor(ds_strategy *s, void *user, ds_value *const *args, ds_value **results,
                           ds_status *st) {
  (void)s;
  (void)results;
  non_tensor_call *call = user;
  ds_tpu_v1_step_context *ctx = call->ctx;
  int i = 0;
  while (i < ctx->nnon && strcmp(ctx->non[i].name, call->name) != 0) i++;
  if (i == DS_TPU_V1_MAX_OUTPUTS)
    return ds_status_set(st, DS_VALUE_ERROR, "more than %d non-tensor outputs", DS_TPU_V1_MAX_OUTPUTS);
  if (i == ctx->nnon) snprintf(ctx->non[ctx->nnon++].name, sizeof ctx->non[i].name, "%s", call->name);
  ds_value_free(ctx->non[i].value);
  ctx->non[i].value = ds_value_copy(args[0]);
  return 0;
}

int ds_tpu_v1_set_non_tensor_output(ds_tpu_v1_step_context *ctx, ds_rctx *tower, const char *name,
                                    const md_tensor *output) {
  non_tensor_call call = { ctx, name };
  md_tensor *arg = (md_tensor *)output;  /* merge_call only reads its arguments */
  return ds_rctx_merge_call(tower, keep_non_tensor, &call, 1, &arg, 0, NULL);
}

int ds_tpu_v1_num_last_step_outputs(const ds_tpu_v1_step_context *ctx) { return ctx->nlast; }
const char *ds_tpu_v1_last_step_output_name(const ds_tpu_v1_step_context *ctx, int i) {
  return ctx->last[i].name;
}

md_tensor *ds_tpu_v1_last_step_output(const ds_tpu_v1_step_context *ctx, const char *name) {
  for (int i = 0; i < ctx->nlast; i++)
    if (!strcmp(ctx->last[i].name, name)) return ctx->last[i].value;
  return NULL;
}

int ds_tpu_v1_num_non_tensor_outputs(const ds_tpu_v1_step_context *ctx) { return ctx->nnon; }
const char *ds_tpu_v1_non_tensor_output_name(const ds_tpu_v1_step_context *ctx, int i) {
  return ctx->non[i].name;
}

const ds_value *ds_tpu_v1_non_tensor_output(const ds_tpu_v1_step_context *ctx, const char *name) {
  for (int i = 0; i < ctx->nnon; i++)
    if (!strcmp(ctx->non[i].name, name)) return ctx->non[i].value;
  return NULL;
}
