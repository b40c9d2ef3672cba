/*
** workload.c: the collective microbenchmark (workload_).
**
** The group is either the CPU workers' replicas (one per accelerator or per worker, joined as a
** training run would be) or every device of the TPU slice. The collectives run from the engine
** side, one after another, with no actor at all: a 4096-device slice costs what its resources
** do. On a slice, collective rank r is the device at grid position r (core fastest, then x, y,
** z), so the torus algorithm's axes are the slice's: a core axis without wraparound on v2/v3,
** then the chip axes, wrapping where the slice does.
**
** With `axis`, the op runs on every line of devices along that mesh axis at once (the sub-groups
** of sim_collective_axis_groups, as jax.lax collectives over one mesh axis do): p is a line's
** length, and an iteration lasts until the last line is through. With cluster.tpu.slices > 1 the
** group is every device of every slice and the all-reduce is XLA's hierarchical one
** (sim/multislice.h): ICI within each slice, DCN across.
**
** collective.csv follows nccl-tests: algbw = size / time; busbw = algbw x the op's bus factor
** (all_reduce 2(p-1)/p; reduce_scatter, all_gather and all_to_all (p-1)/p; broadcast and
** ppermute 1), the bandwidth a link would need if the algorithm were optimal.
*/
#include "scenarios/programs/workload.h"

#include <assert.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <time.h>

#include "scenarios/report/outputs.h"
#include "scenarios/programs/matmul_bench.h"
#include "scenarios/programs/slice.h"
#include "sim/collective.h"
#include "sim/multislice.h"
#include "sim/tpu.h"
#include "scenarios/programs/train.h"
#include "strategies/core/strategy.h"

/* Real buffers of every rank together may take this much host memory; more needs numerics off. */
#define WORKLOAD_HOST_BYTES (1024.0 * 1024 * 1024)

typedef struct slice_group {
  sim_tpu_slice *slice;   /* the TPU slice */
  int *device;            /* device[rank]: the device at grid position `rank` */
} slice_group;

typedef struct bench {
  const scenario *s;      /* the scenario */
  sim_engine *engine;     /* the simulation */
  sim_collective *group;  /* NULL for a single device: every collective takes no time */
  sim_collective **lines; /* with an axis: the groups along it, else NULL */
  int nlines;             /* their count */
  int running;            /* lines of the iteration under way not through */
  sim_time started;       /* when the iteration began */
  sim_multislice *multi;  /* several slices: their hierarchical all-reduce; else NULL */
  double dcn_total_s;     /* multislice: the DCN phases' time, summed over iterations */
  int ranks;              /* devices in the group (in a line, with an axis) */
  sim_coll_op op;         /* the op */
  sim_algo algo;          /* the algorithm */
  int root;               /* ppermute's shift, else 0 */
  size_t count;           /* floats per rank buffer */
  float **bufs;           /* ranks buffers, or NULL with numerics off */
  long done;              /* collectives completed */
  sim_time *times;        /* each one's duration */
} bench;

static size_t slice_route(void *ctx, int from, int to, sim_link **out, size_t max) {
  const slice_group *g = ctx;
  return sim_tpu_route(g->slice, g->device[from], g->device[to], out, max);
}

/* Every device of the slice, ranked in grid order, with the slice's torus as the shape. Its
** devices only reduce, so they run at peak (efficiency 1). */
static void build_slice_group(bench *b, slice_group *g) {
  g->slice = slice_new(b->s, b->engine, 1.0);
  b->ranks = sim_tpu_slice_devices(g->slice);
  g->device = base_xcalloc((size_t)b->ranks, sizeof *g->device);
  sim_cpu **cpus = base_xcalloc((size_t)b->ranks, sizeof *cpus);
  for (int d = 0; d < b->ranks; d++) g->device[sim_tpu_device_grid_rank(g->slice, d)] = d;
  for (int r = 0; r < b->ranks; r++) cpus[r] = sim_tpu_device_cpu(g->slice, g->device[r]);
  b->group = sim_collective_new(b->engine, "workload", b->ranks, slice_route, g, cpus);
  free(cpus);
  sim_tpu_set_torus(b->group, g->slice);
}

static void next(sim_engine *e, sim_collective *c, void *arg);
static void next_line(sim_engine *e, sim_collective *c, void *arg);
static void next_multi(sim_engine *e, sim_multislice *m, void *arg);

static void start(bench *b) {
  int rc = SIM_OK;
  b->started = sim_now(b->engine);
  b->running = b->nlines;
  if (b->multi && b->lines == NULL)
    rc = sim_multislice_all_reduce_start(b->multi, b->bufs, b->count, next_multi, b);
  else if (b->lines == NULL)
    rc = sim_collective_start(b->group, b->op, b->algo, b->root, b->bufs, b->count, next, b);
  /* Line i holds the buffers of its members, b->ranks of them from bufs[i * ranks]. */
  for (int i = 0; i < b->nlines && rc == SIM_OK; i++)
    rc = sim_collective_start(b->lines[i], b->op, b->algo, b->root, b->bufs ? b->bufs + (size_t)i * (size_t)b->ranks : NULL,
                              b->count, next_line, b);
  (void)rc;
  assert(rc == SIM_OK);  /* sim_collective_check passed before the first start */
}

static void iteration_done(bench *b, sim_time duration) {
  b->times[b->done++] = duration;
  if (b->done < b->s->workload_iterations) start(b);
}

static void next(sim_engine *e, sim_collective *c, void *arg) {
  (void)e;
  iteration_done(arg, sim_collective_last_duration(c));
}

static void next_line(sim_engine *e, sim_collective *c, void *arg) {
  (void)c;
  bench *b = arg;
  if (--b->running == 0) iteration_done(b, sim_now(e) - b->started);
}

static void next_multi(sim_engine *e, sim_multislice *m, void *arg) {
  (void)e;
  bench *b = arg;
  b->dcn_total_s += sim_time_to_s(sim_multislice_last_dcn_duration(m));
  iteration_done(b, sim_multislice_last_duration(m));
}

/* The torus axis of the slice's grid group (sim_tpu_set_torus: the core line first when a chip
** has two, then the chip axes longer than 1) that SCN_AXES[axis] names; the loader checked that
** it is longer than one device. */
static int grid_axis(const sim_tpu_slice *slice, int axis) {
  int cores = sim_tpu_generation_figures(sim_tpu_slice_generation(slice))->devices_per_chip > 1, dims[3];
  if (axis == 3) return 0;
  sim_tpu_slice_dims(slice, dims);
  int t = cores;
  for (int a = 0; a < axis; a++) t += dims[a] > 1;
  return t;
}

/* The lines along the scenario's axis: b->group stays their parent. */
static void build_lines(bench *b, const sim_tpu_slice *slice) {
  int axis = grid_axis(slice, b->s->workload_axis), n = sim_collective_axis_groups(b->group, axis, NULL, 0);
  b->lines = base_xcalloc((size_t)n, sizeof *b->lines);
  b->nlines = sim_collective_axis_groups(b->group, axis, b->lines, n);
  b->ranks /= b->nlines;
}

/* Axis slice: line k is the devices at grid position k of every slice, joined by DCN alone
** (sub-groups of the multislice's group); auto is the ring there, DCN being no torus. */
static void build_dcn_lines(bench *b) {
  int slices = sim_multislice_slices(b->multi), n = b->ranks / slices;
  int *members = base_xcalloc((size_t)slices, sizeof *members);
  b->lines = base_xcalloc((size_t)n, sizeof *b->lines);
  for (int k = 0; k < n; k++) {
    char name[32];
    for (int j = 0; j < slices; j++) members[j] = j * n + k;
    snprintf(name, sizeof name, "slice_axis%d", k);
    b->lines[k] = sim_collective_new_subgroup(sim_multislice_group(b->multi), name, slices, members);
  }
  free(members);
  b->nlines = n;
  b->ranks = slices;
  if (b->s->workload_algorithm == SCN_ALLREDUCE_AUTO) b->algo = SIM_ALGO_RING;
}

static double bus_factor(sim_coll_op op, int p) {
  switch (op) {
    case SIM_COLL_ALL_REDUCE: return 2.0 * (p - 1) / p;
    case SIM_COLL_BROADCAST:
    case SIM_COLL_PPERMUTE: return 1.0;
    default: return (double)(p - 1) / p;
  }
}

static int write_csv(const bench *b, const char *path, double size) {
  FILE *f = fopen(path, "w");
  if (f == NULL) return -1;
  fputs("op,algorithm,size_bytes,ranks,time_s,algbw_GBps,busbw_GBps,iteration\n", f);
  char t[32];
  for (long i = 0; i < b->done; i++) {
    double secs = sim_time_to_s(b->times[i]), algbw = secs > 0 ? size / secs / 1e9 : 0;
    fprintf(f, "%s,%s,%.0f,%d,%s,%.9g,%.9g,%ld\n", sim_coll_op_name(b->op), sim_algo_name(b->algo),
            size, b->ranks, outputs_seconds(t, sizeof t, b->times[i]), algbw,
            algbw * bus_factor(b->op, b->ranks), i);
  }
  return base_fclose(f);
}

json_t *workload_json_new(const scenario *s) {
  json_t *o = json_object();
  json_object_set_new(o, "scenario", json_string(s->name));
  json_object_set_new(o, "seed", json_integer((json_int_t)s->seed));
  json_object_set_new(o, "numerics", json_string(s->numerics_full ? "full" : "off"));
  return o;
}

int workload_json_write(json_t *o, const char *path, const workload_summary *w) {
  char hash[17];
  snprintf(hash, sizeof hash, "%016llx", (unsigned long long)w->run_hash);
  json_object_set_new(o, "run_hash", json_string(hash));
  json_object_set_new(o, "wall_s", json_real(w->wall_s));
  int rc = json_dump_file(o, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
  json_decref(o);
  return rc;
}

static int write_summary(const char *path, const scenario *s, const workload_summary *w) {
  json_t *o = workload_json_new(s);
  json_object_set_new(o, "workload", json_pack("{s:s, s:s, s:I, s:i, s:I}", "op", w->op, "group", w->group,
                                               "size_bytes", (json_int_t)s->workload_size_bytes,
                                               "ranks", w->ranks, "iterations", (json_int_t)s->workload_iterations));
  json_t *wl = json_object_get(o, "workload");
  if (s->workload_op == SIM_COLL_PPERMUTE) json_object_set_new(wl, "shift", json_integer(s->workload_shift));
  if (s->workload_axis >= 0) {
    json_object_set_new(wl, "axis", json_string(SCN_AXES[s->workload_axis]));
    json_object_set_new(wl, "lines", json_integer(w->lines));
  }
  if (w->slices > 1) json_object_set_new(wl, "slices", json_integer(w->slices));
  if (w->slices > 1 && s->workload_axis != SCN_AXIS_SLICE) json_object_set_new(wl, "dcn_time_s", json_real(w->dcn_time_s));
  json_object_set_new(o, "all_reduce", json_string(w->algorithm));
  json_object_set_new(o, "sim_time_s", json_real(w->sim_time_s));
  json_object_set_new(o, "mean_time_s", json_real(w->mean_time_s));
  json_object_set_new(o, "busbw_GBps", json_real(w->busbw_GBps));
  json_object_set_new(o, "events", json_integer((json_int_t)w->events));
  return workload_json_write(o, path, w);
}

static int write_outputs(bench *b, const char *dir, workload_summary *w, scn_error *err) {
  char path[SCN_PATH_MAX + 32];
  const scenario *s = b->s;
  run_hasher h;
  if (outputs_make_dir(dir) != 0 || run_hasher_init(&h) != 0)
    return train_error(err, dir, 0, 0, "outputs.dir", "cannot create the output directory");
  int bad = write_csv(b, outputs_path(path, sizeof path, dir, "collective.csv"), s->workload_size_bytes) != 0 ||
            run_hasher_add_file(&h, path) != 0;
  if (!bad && s->trace)
    bad = sim_trace_write_json(b->engine, outputs_path(path, sizeof path, dir, "trace.json")) != 0 ||
          run_hasher_add_file(&h, path) != 0;
  /* What was simulated, not how many events the engine needed for it (scenario-format.md). */
  char figures[128];
  int len = snprintf(figures, sizeof figures, "sim_time_ps=%lld", (long long)sim_now(b->engine));
  run_hasher_add(&h, "summary", figures, (size_t)len);
  w->run_hash = run_hasher_finish(&h);
  if (bad) return train_error(err, dir, 0, 0, "outputs.dir", "cannot write %s: %s", path, strerror(errno));
  return 0;
}

int workload_run(const scenario *s, const char *out_dir, workload_summary *w, scn_error *err) {
  if (s->workload_mm_m > 0) return matmul_bench_run(s, out_dir, w, err);
  struct timespec w0, w1;
  clock_gettime(CLOCK_MONOTONIC, &w0);
  memset(w, 0, sizeof *w);
  int tpu = s->workload_group == SCN_GROUP_TPU;
  bench b = { .s = s, .op = (sim_coll_op)s->workload_op,
              .algo = tpu ? train_algorithm(s->workload_algorithm, 1) : train_workers_algorithm(s, s->workload_algorithm),
              .root = s->workload_op == SIM_COLL_PPERMUTE ? s->workload_shift : 0 };
  b.count = (size_t)(s->workload_size_bytes / 4);
  b.engine = train_engine_new(s->trace);
  slice_group slice = {0};
  ds_strategy *workers = NULL;
  if (s->workload_group == SCN_GROUP_TPU && s->tpu_slices > 1) {
    b.multi = slice_multi_new(s, b.engine, 1.0);
    b.ranks = sim_multislice_ranks(b.multi);
    if (s->workload_axis == SCN_AXIS_SLICE) build_dcn_lines(&b);
  } else if (s->workload_group == SCN_GROUP_TPU) {
    build_slice_group(&b, &slice);
    if (s->workload_axis >= 0) build_lines(&b, slice.slice);
  } else {
    ds_cluster c = train_cluster(s);
    workers = ds_strategy_new(b.engine, DS_MULTI_WORKER_MIRRORED, &c, b.algo);
    b.group = ds_collective(workers);
    b.ranks = ds_num_replicas_in_sync(workers);
  }
  int rc = 0, devices = b.ranks * (b.nlines > 0 ? b.nlines : 1);
  sim_collective *checked = b.lines ? b.lines[0] : b.group;  /* the multislice checks nothing: its
                                                                 phases fit any count */
  int check = checked ? sim_collective_check(checked, b.op, b.algo, b.root, b.count) : SIM_OK;
  if (check != SIM_OK)
    rc = train_error(err, s->path, 0, 0, "workload.collective", "%s by %s on %d ranks: %s",
                     sim_coll_op_name(b.op), sim_algo_name(b.algo), b.ranks, sim_coll_strerror(check));
  double host = (double)devices * (double)b.count * 4.0;
  if (rc == 0 && s->numerics_full && host > WORKLOAD_HOST_BYTES)
    rc = train_error(err, s->path, 0, 0, "workload.collective",
                     "%d ranks x %.0f bytes of real buffers exceed the 1 GiB of host memory a workload "
                     "may use; set numerics: off to time it on sizes alone", devices, s->workload_size_bytes);
  if (rc == 0 && out_dir != NULL) {
    b.times = base_xcalloc((size_t)s->workload_iterations, sizeof *b.times);
    if (s->numerics_full && (b.group || b.multi)) {
      b.bufs = base_xcalloc((size_t)devices, sizeof *b.bufs);
      for (int r = 0; r < devices; r++) {
        b.bufs[r] = base_xcalloc(b.count, sizeof **b.bufs);
        for (size_t i = 0; i < b.count; i++) b.bufs[r][i] = (float)(r + 1);
      }
    }
    if (b.group || b.multi) {
      start(&b);
      if (sim_run(b.engine) == 1) rc = TR_STOPPED;  /* stopped on request: nothing is written */
    } else {
      b.done = s->workload_iterations;  /* one device: nothing to exchange */
    }
    w->op = sim_coll_op_name(b.op);
    w->algorithm = sim_algo_name(b.algo);
    w->group = s->workload_group == SCN_GROUP_TPU ? "tpu" : "workers";
    w->ranks = b.ranks;
    w->lines = b.nlines > 0 ? b.nlines : 1;
    w->slices = s->tpu_slices;
    w->dcn_time_s = b.done ? b.dcn_total_s / (double)b.done : 0;
    double total = 0;
    for (long i = 0; i < b.done; i++) total += sim_time_to_s(b.times[i]);
    w->mean_time_s = b.done ? total / (double)b.done : 0;
    w->busbw_GBps = w->mean_time_s > 0 ? s->workload_size_bytes / w->mean_time_s / 1e9 * bus_factor(b.op, b.ranks) : 0;
    w->sim_time_s = sim_time_to_s(sim_now(b.engine));
    w->events = sim_events_processed(b.engine);
    if (rc == 0) rc = write_outputs(&b, out_dir, w, err);
  }
  clock_gettime(CLOCK_MONOTONIC, &w1);
  w->wall_s = (double)(w1.tv_sec - w0.tv_sec) + 1e-9 * (double)(w1.tv_nsec - w0.tv_nsec);
  if (rc == 0 && out_dir != NULL) {
    char path[SCN_PATH_MAX + 32];
    if (write_summary(outputs_path(path, sizeof path, out_dir, "summary.json"), s, w) != 0)
      rc = train_error(err, out_dir, 0, 0, "outputs.dir", "cannot write %s: %s", path, strerror(errno));
  }
  for (int r = 0; b.bufs && r < devices; r++) free(b.bufs[r]);
  free(b.bufs);
  free(b.times);
  for (int i = 0; i < b.nlines; i++) sim_collective_free(b.lines[i]);
  free(b.lines);
  sim_multislice_free(b.multi);
  if (s->workload_group == SCN_GROUP_TPU && b.multi == NULL) {
    sim_collective_free(b.group);
    sim_tpu_slice_free(slice.slice);
    free(slice.device);
  }
  ds_strategy_free(workers);
  sim_engine_free(b.engine);
  return rc;
}

int workload_check(const scenario *s, scn_error *err) {
  workload_summary w;
  return workload_run(s, NULL, &w, err);
}
