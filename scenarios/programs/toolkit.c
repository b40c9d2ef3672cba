/*
** toolkit.c: what both training programs (train.c's sync, ps_train.c's parameter-server) do the
** same way (train_, trainInt.h): read the data and build the model, count the steps, scale the
** loss, keep metrics.csv's rows, describe the cluster to the strategies, record a failed job, write
** the output directory
** and finish the run.
*/
#include "scenarios/programs/trainInt.h"

#include <math.h>
#include <string.h>
#include <time.h>

#include "models/graphdata.h"
#include "scenarios/programs/accum.h"
#include "models/weights.h"
#include "scenarios/report/tboard.h"
#include "sim/rng.h"

int train_error(scn_error *err, const char *file, int line, int col, const char *key,
                const char *fmt, ...) {
  snprintf(err->file, sizeof err->file, "%s", file);
  err->line = line;
  err->col = line > 0 && col < 1 ? 1 : col;  /* a whole-line error points at its start */
  snprintf(err->key, sizeof err->key, "%s", key);
  char what[768];
  va_list ap;
  va_start(ap, fmt);
  base_vformat(what, sizeof what, fmt, ap);
  va_end(ap);
  if (line > 0) snprintf(err->msg, sizeof err->msg, "%s:%d:%d: %s: %s", file, line, err->col, key, what);
  else snprintf(err->msg, sizeof err->msg, "%s: %s: %s", file, key, what);
  return TR_EXIT_INPUT;
}

volatile sig_atomic_t train_stop_request;

/* The engine's stop check, every SIM_STOP_CHECK_EVENTS events: also the progress lines' tick,
** which must come while no step completes too. */
static int stop_requested(void *progress) {
  if (progress) report_progress_tick(progress);
  return train_stop_request != 0;
}

void train_engine_progress(sim_engine *e, report_progress *p) { sim_set_stop_check(e, stop_requested, p); }

sim_engine *train_engine_new(int trace) {
  sim_engine *e = sim_engine_new();
  sim_trace_enable(e, trace);
  sim_set_stop_check(e, stop_requested, NULL);
  return e;
}

float train_loss_scale(const scenario *s, int slice) {
  switch (s->loss_reduction) {
    case SCN_LOSS_SUM: return 1.0f;
    case SCN_LOSS_PER_REPLICA_MEAN: return slice > 0 ? 1.0f / (float)slice : 0.0f;
    case SCN_LOSS_GLOBAL_BATCH: return 1.0f / (float)s->global_batch;
  }
  return 1.0f;
}

/* One CSV file: integer labels that must be classes of the model's output, or (every loss but
** sparse_categorical_crossentropy) one float target column per output, named by dataset.labels
** or dataset.label, else the last ones; a sequence output's labels (`positions` > 1) are read as
** targets first, one column per position (dataset.labels), and become labels once every file is
** in (train_load_data). */
static md_dataset *load_csv(const scenario *s, const char *file, int classes, int positions, md_error *me) {
  int vocab = s->input_ids > 0 ? s->input_vocab : 0;
  int sparse = s->loss == MD_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
  if (sparse && positions == 1)
    return md_dataset_load_csv(file, s->label[0] ? s->label : NULL, vocab, classes, me);
  const char *names[SCN_MAX_LABELS];
  for (int i = 0; i < s->nlabels; i++) names[i] = s->labels[i];
  if (s->label[0]) names[0] = s->label;
  return md_dataset_load_csv_targets(file, s->nlabels || s->label[0] ? names : NULL, sparse ? positions : classes,
                                     vocab, me);
}

/* Labels must be classes of the model's output (the loader checks synthetic ones). */
int train_load_data(train_input *in, const md_model *m, scn_error *err) {
  const scenario *s = in->s;
  md_error me = {0};
  int classes = md_model_num_classes(m), targets = s->loss != MD_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
  int positions = targets ? 1 : md_model_label_positions(m);
  if (s->nfiles > 0) {
    in->nfiles = s->nfiles;
    in->file_rows = base_xcalloc((size_t)s->nfiles, sizeof *in->file_rows);
    const char *file = s->files;
    for (int f = 0; f < s->nfiles; f++, file += strlen(file) + 1) {
      md_dataset *d = load_csv(s, file, classes, positions, &me);
      if (d == NULL) return train_error(err, file, me.line, me.col, "dataset.files", "%s", me.msg);
      in->file_rows[f] = d->rows;
      int appended = f == 0 ? 0 : md_dataset_append(in->data, d, &me);
      if (f == 0) in->data = d;
      else md_dataset_free(d);
      if (appended != 0) return train_error(err, file, me.line, me.col, "dataset.files", "%s", me.msg);
    }
  } else if (s->graph_nodes_csv[0] != '\0') {
    int bad = 0;
    in->data = md_graph_dataset_load(s->graph_nodes_csv, s->graph_edges_csv, s->label[0] ? s->label : NULL,
                                     s->graph_nodes, s->graph_edges, s->graph_features, classes, &me, &bad);
    if (in->data == NULL)
      return train_error(err, bad ? s->graph_edges_csv : s->graph_nodes_csv, me.line, me.col,
                         bad ? "dataset.graph.edges" : "dataset.graph.nodes", "%s", me.msg);
  } else if (s->csv[0] != '\0') {
    in->data = load_csv(s, s->csv, classes, positions, &me);
    if (in->data == NULL)
      return train_error(err, s->csv, me.line, me.col, "dataset.csv", "%s", me.msg);
  } else if (!s->numerics_full) {
    /* Shapes only: the rows need not exist, which is what lets a planner use any size. Their
    ** ids are drawn when a batch is taken: a ps routes each to its shard. */
    int *vocab = base_xcalloc((size_t)s->synthetic_features + 1, sizeof *vocab);
    for (int k = 0, col = 0; k < s->ninputs; col += s->inputs[k].features + s->inputs[k].ids, k++)
      for (int j = 0; j < s->inputs[k].ids; j++) vocab[col + j] = s->inputs[k].vocab;
    for (int c = 0; s->input_ids > 0 && c < s->synthetic_features; c++) vocab[c] = s->input_vocab;
    in->data = md_dataset_shapes(s->synthetic_rows, s->synthetic_features, s->synthetic_classes,
                                 targets ? classes : 0, s->input_ids > 0, vocab,
                                 sim_rng_derive_seed(s->seed, "dataset.synthetic.ids"));
    free(vocab);
  } else {
    gsl_rng *rng = sim_rng_stream(s->seed, "dataset.synthetic");
    in->data = md_dataset_synthetic(s->synthetic_rows, s->synthetic_features, s->synthetic_classes, rng);
    gsl_rng_free(rng);
    /* A loss that reads targets trains on the classes one-hot. */
    if (targets) md_dataset_one_hot(in->data, classes);
  }
  /* A sequence output's labels, read as one target column per position, become class labels. */
  if (positions > 1 && in->data->targets != NULL &&
      md_dataset_targets_to_labels(in->data, classes / positions, &me) != 0)
    return train_error(err, s->csv[0] ? s->csv : s->path, me.line, me.col, "dataset.labels", "%s", me.msg);
  const char *where = s->csv[0] ? s->csv : s->nfiles ? s->files : s->path;
  if (s->ninput_columns > 0 && md_dataset_select_columns(in->data, s->input_columns, s->ninput_columns, &me) != 0)
    return train_error(err, where, me.line, me.col, "dataset.inputs", "%s", me.msg);
  md_inputs_bad bad;
  if (s->ninputs > 0 && in->data->x != NULL && in->data->width == s->input_features &&
      md_inputs_check_ids(s->inputs, s->ninputs, in->data->x, in->data->rows, &bad) != 0)
    return train_error(err, where, (int)bad.row + 2, 1, "dataset", "row %zu, column %s: expected an id of model "
                       "input %s, an integer in [0, %d), found %.9g", bad.row + 1,
                       in->data->columns ? in->data->columns[bad.column] : "?", s->inputs[bad.input].name,
                       s->inputs[bad.input].vocab, bad.value);
  int want = s->input_ids > 0 ? s->input_ids : s->input_features;
  if (in->data->width != want) {
    return train_error(err, s->csv[0] ? s->csv : s->path, 1, 1, "dataset",
                       "the data has %d %s per row but model.input asks for %d", in->data->width,
                       s->input_ids > 0 ? "id columns" : "feature columns", want);
  }
  return TR_EXIT_OK;
}

gsl_rng *train_dropout_rng(const scenario *s, md_workspace *ws) {
  int dropout = 0;
  for (int l = 0; l < s->nlayers; l++)  /* a Dropout, or an attention's dropout on its probabilities */
    dropout |= (s->layers[l].kind == MD_LAYER_DROPOUT || s->layers[l].kind == MD_LAYER_MULTI_HEAD_ATTENTION) &&
               s->layers[l].rate > 0.0f;
  if (!dropout || !s->numerics_full) return NULL;
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  if (rng == NULL) base_out_of_memory(sizeof(gsl_rng));
  md_workspace_set_rng(ws, rng);
  return rng;
}

void train_dropout_step(const scenario *s, md_workspace *ws, gsl_rng *rng, const char *owner, long step) {
  char name[96];
  if (rng == NULL) return;
  md_workspace_set_dropout_draw(ws, (int64_t)step * accum_steps(s));
  sim_rng_reseed(rng, s->seed, base_format(name, sizeof name, "dropout/%s/step %ld", owner, step));
}

int train_build_model(const scenario *s, md_model **out, scn_error *err) {
  md_model_spec spec = scenario_model_spec(s, !s->numerics_full);
  md_error me = {0};
  md_model *m = md_model_new(&spec, &me);
  if (m == NULL) return train_error(err, s->path, 1, 1, "model", "%s", me.msg);
  if (s->init_file[0] != '\0' && s->numerics_full) {  /* numerics off: no values to read */
    if (md_weights_read(m, s->init_file, &me) != 0) {
      md_model_free(m);
      return train_error(err, s->init_file, me.line, me.col, "model.init.file", "%s", me.msg);
    }
  } else {
    gsl_rng *rng = sim_rng_stream(s->seed, "model.init");
    md_model_init_default(m, rng);
    gsl_rng_free(rng);
  }
  *out = m;
  return TR_EXIT_OK;
}

/* Every step's metrics are kept for the plots and metrics.csv: a run has at most this many. */
#define MAX_STEPS 10000000L

int train_count_steps(train_input *in, scn_error *err) {
  const scenario *s = in->s;
  size_t rows = in->data->rows, g = (size_t)s->global_batch;
  /* a parameter_server fit's epoch is training.steps_per_epoch (its per-worker dataset repeats) */
  size_t per_epoch = s->steps_per_epoch > 0 ? (size_t)s->steps_per_epoch : (rows + g - 1) / g;
  in->steps = s->steps;
  if (s->epochs > 0) {
    if ((size_t)s->epochs > (size_t)MAX_STEPS / per_epoch)
      return train_error(err, s->path, 0, 0, "training.epochs",
                         "%ld epochs of %zu steps exceed the %ld steps a run may have", s->epochs,
                         per_epoch, MAX_STEPS);
    in->steps = s->epochs * (long)per_epoch;
  } else if (!s->repeat && (size_t)s->steps > per_epoch) {
    in->steps = (long)per_epoch;
  }
  return TR_EXIT_OK;
}

void train_out_of_memory(run_error *e, const char *device, const sim_mempool *pool, uint64_t needed,
                         const char *parts) {
  snprintf(e->kind, sizeof e->kind, "ResourceExhaustedError");
  snprintf(e->device, sizeof e->device, "%s", device);
  snprintf(e->message, sizeof e->message, "OOM allocating %llu bytes on %s (capacity %llu): %s",
           (unsigned long long)needed, device, (unsigned long long)sim_mempool_capacity(pool), parts);
  e->needed_bytes = needed;
  e->capacity_bytes = sim_mempool_capacity(pool);
}

void train_rows_init(train_rows *r, long steps, int keep) {
  r->cap = steps + 1;
  r->at = base_xcalloc((size_t)r->cap, sizeof *r->at);
  r->kept = keep ? base_xcalloc((size_t)r->cap, 1) : NULL;
}

void train_rows_free(train_rows *r) {
  free(r->at);
  free(r->kept);
}

step_record *train_rows_next(train_rows *r) {
  if (r->n == r->cap) {
    r->cap *= 2;
    step_record *grown = base_xcalloc((size_t)r->cap, sizeof *grown);
    memcpy(grown, r->at, (size_t)r->n * sizeof *grown);
    free(r->at);
    r->at = grown;
    if (r->kept) {
      unsigned char *kept = base_xcalloc((size_t)r->cap, 1);
      memcpy(kept, r->kept, (size_t)r->n);
      free(r->kept);
      r->kept = kept;
    }
  }
  report_progress_step(&r->progress, r->n + 1);
  return &r->at[r->n++];
}

step_record *train_rows_add(train_rows *r, const scenario *s, long step, sim_time start, sim_time now,
                            double loss_sum, int examples) {
  step_record *rec = train_rows_next(r);
  rec->step = step;
  rec->end_ps = now;
  rec->step_ps = now - start;
  rec->loss = !s->numerics_full ? NAN : examples > 0 ? loss_sum / examples : 0.0;
  rec->examples = examples;
  return rec;
}

void train_job_failed(run_summary *sum, const char *kind, const char *device, const char *msg) {
  sum->failed = 1;
  snprintf(sum->error.kind, sizeof sum->error.kind, "%s", kind);
  snprintf(sum->error.device, sizeof sum->error.device, "%s", device);
  snprintf(sum->error.message, sizeof sum->error.message, "%s", msg);
}

int train_write_weights(const md_model *m, const char *path) {
  FILE *f = fopen(path, "w");
  if (f == NULL) return -1;
  int rc = md_weights_write(m, f);
  return (base_fclose(f) == 0 && rc == 0) ? 0 : -1;
}

/* variables.csv's rows on their way into the file or into run_hash, 64 KiB at a time: a pod's
** per-copy listing is hundreds of megabytes that run_hash reads without a file. */
typedef struct var_sink {
  FILE *f;                /* the file, or NULL: into h */
  run_hasher *h;          /* the hash, when f is NULL */
  int counted;            /* the per_variable listing: a copy is a variable of count 1 */
  size_t used;            /* bytes of buf waiting */
  char buf[1 << 16];      /* rows not yet written or hashed */
} var_sink;

static void sink_flush(var_sink *k) {
  if (k->f) fwrite(k->buf, 1, k->used, k->f);  /* a failed write shows in base_fclose */
  else run_hasher_bytes(k->h, k->buf, k->used);
  k->used = 0;
}

static void sink_bytes(var_sink *k, const char *text, size_t n) {
  while (n > 0) {
    if (k->used == sizeof k->buf) sink_flush(k);
    size_t m = sizeof k->buf - k->used < n ? sizeof k->buf - k->used : n;
    memcpy(k->buf + k->used, text, m);
    k->used += m;
    text += m;
    n -= m;
  }
}

static void sink_put(var_sink *k, const char *text) { sink_bytes(k, text, strlen(text)); }

/* One row: the fields comma-separated, then tail. A pod's per-copy listing is millions of rows
** that run_hash reads (issue 31): a row that fits the buffer is copied field by field with no
** per-byte loop, which made the listing a fifth of a v4-8192 run. */
static void sink_row(var_sink *k, const char *const *field, int n, const char *tail) {
  size_t len[6], total = 0;
  for (int i = 0; i < n; i++) total += (len[i] = strlen(field[i])) + 1;
  len[n] = strlen(tail);
  total += len[n] - 1;
  if (total > sizeof k->buf - k->used) sink_flush(k);
  if (total > sizeof k->buf) {  /* a field longer than the buffer: piece by piece */
    for (int i = 0; i < n; i++) {
      if (i) sink_bytes(k, ",", 1);
      sink_bytes(k, field[i], len[i]);
    }
    sink_bytes(k, tail, len[n]);
    return;
  }
  char *at = k->buf + k->used;
  for (int i = 0; i < n; i++) {
    if (i) *at++ = ',';
    memcpy(at, field[i], len[i]);
    at += len[i];
  }
  memcpy(at, tail, len[n]);
  k->used += total;
}

static void copy_row(void *sink, const char *name, const char *kind, const char *shape, const char *device) {
  var_sink *k = sink;
  const char *field[4] = { name, kind, shape, device };
  sink_row(k, field, 4, k->counted ? ",1\n" : "\n");
}

static void variable_row(void *sink, const char *name, const char *kind, const char *shape,
                         const char *devices, long count) {
  var_sink *k = sink;
  char tail[32];
  const char *field[4] = { name, kind, shape, devices };
  sink_row(k, field, 4, base_format(tail, sizeof tail, ",%ld\n", count));
}

static const char COPY_HEADER[] = "name,kind,shape,device\n";

/* variables.csv as outputs.variables asks: a row per variable (name,kind,shape,devices,count)
** or per copy (name,kind,shape,device). 0 or -1 (errno). */
static int write_variables(const scenario *s, const train_outputs *o, const char *path) {
  FILE *f = fopen(path, "w");
  if (f == NULL) return -1;
  var_sink *k = base_xcalloc(1, sizeof *k);
  *k = (var_sink){ .f = f, .counted = !s->variables_per_replica };
  sink_put(k, s->variables_per_replica ? COPY_HEADER : "name,kind,shape,devices,count\n");
  if (s->variables_per_replica || o->each_variable == NULL) o->each_copy(o->prog, copy_row, k);
  else o->each_variable(o->prog, variable_row, k);
  sink_flush(k);
  free(k);
  return base_fclose(f);
}

/* run_hash's part for variables.csv: the per_replica listing's bytes, as run_hasher_add_file
** would read them from that file, whichever listing was written. */
static void hash_variables(const train_outputs *o, run_hasher *h) {
  var_sink *k = base_xcalloc(1, sizeof *k);
  k->h = h;
  run_hasher_begin_file(h, "variables.csv");
  sink_put(k, COPY_HEADER);
  o->each_copy(o->prog, copy_row, k);
  sink_flush(k);
  free(k);
}

int train_write_outputs(const scenario *s, const train_outputs *o, const char *dir, run_summary *sum,
                        scn_error *err) {
  char path[SCN_PATH_MAX + 32] = "";
  if (outputs_make_dir(dir) != 0)
    return train_error(err, dir, 0, 0, "outputs.dir", "cannot create the directory: %s", strerror(errno));
  run_hasher h;
  if (run_hasher_init(&h) != 0) return train_error(err, dir, 0, 0, "outputs.dir", "out of memory");
  int bad = 0;
  const char *files[] = { "metrics.csv", "final_weights.csv", "variables.csv", "trace.json" };
  /* learning_rate: the rates a schedule gave the updates, which only runs with values make. */
  outputs_columns cols = {.sync = o->sync_columns, .restart = s->nfaults > 0, .ps = o->ps_columns,
                          .learning_rate = o->sync_columns && s->numerics_full &&
                                           s->optimizer.schedule.kind != MD_SCHEDULE_CONSTANT,
                          .nmetrics = s->nmetrics};
  for (int k = 0; k < cols.nmetrics; k++) cols.metric_names[k] = md_metric_name(s->metrics[k]);
  for (size_t i = 0; !bad && i < sizeof files / sizeof *files; i++) {
    outputs_path(path, sizeof path, dir, files[i]);
    switch (i) {
      case 0: bad = outputs_write_metrics(path, o->records, o->nrecords, &cols) != 0; break;
      case 1: bad = o->write_weights(o->prog, path) != 0; break;
      case 2: bad = write_variables(s, o, path) != 0;
              if (!bad) hash_variables(o, &h);
              continue;
      case 3: if (!s->trace) continue;
              bad = sim_trace_write_json(o->engine, path) != 0; break;
    }
    if (!bad) bad = run_hasher_add_file(&h, path) != 0;
  }
  const struct { const char *file; int (*write)(const void *, const char *); const void *arg; } more[] = {
    {o->extra_file, o->write_extra, o->extra}, {o->more_file, o->write_more, o->more}};
  for (size_t i = 0; !bad && i < sizeof more / sizeof *more; i++) {
    if (more[i].file == NULL) continue;
    outputs_path(path, sizeof path, dir, more[i].file);
    bad = more[i].write(more[i].arg, path) != 0 || run_hasher_add_file(&h, path) != 0;
  }
  if (bad) {
    run_hasher_finish(&h);
    return train_error(err, dir, 0, 0, "outputs.dir", "cannot write %s: %s", path, strerror(errno));
  }
  /* What was simulated, not how many events the engine needed for it (scenario-format.md). */
  char figures[512];
  int len = snprintf(figures, sizeof figures, "sim_time_ps=%lld failed=%d%s%s",
                     (long long)sim_now(o->engine), sum->failed,
                     o->figures[0] ? " " : "", o->figures);
  run_hasher_add(&h, "summary", figures, (size_t)len);
  if (sum->failed) run_hasher_add(&h, "error", sum->error.message, strlen(sum->error.message));
  sum->run_hash = run_hasher_finish(&h);

  char msg[512] = "";
  report_run charts = { s, o->engine, o->records, o->nrecords, sum->devices, sum->ndevices, o->events,
                        o->nevents, sum->goodput, o->val_x, o->val_y, o->nval };
  if (report_write_plots(&charts, dir, msg, sizeof msg) != 0)
    return train_error(err, dir, 0, 0, "outputs.plots", "%s", msg);
  if (s->tensorboard && tboard_write_run(dir, o->records, o->nrecords, &cols, msg, sizeof msg) != 0)
    return train_error(err, dir, 0, 0, "outputs.tensorboard", "%s", msg);
  return TR_EXIT_OK;
}

sim_fabric_kind train_fabric_kind(scn_fabric_topology t) {
  switch (t) {
    case SCN_FABRIC_STAR: return SIM_FABRIC_STAR;
    case SCN_FABRIC_RING: return SIM_FABRIC_RING;
    case SCN_FABRIC_TORUS2D: return SIM_FABRIC_TORUS2D;
    case SCN_FABRIC_TORUS3D: return SIM_FABRIC_TORUS3D;
    case SCN_FABRIC_FAT_TREE: return SIM_FABRIC_FAT_TREE;
  }
  return SIM_FABRIC_STAR;
}

sim_algo train_algorithm(scn_allreduce a, int on_tpu) {
  switch (a) {
    case SCN_ALLREDUCE_AUTO: return on_tpu ? SIM_ALGO_TORUS : SIM_ALGO_RING;
    case SCN_ALLREDUCE_RING: return SIM_ALGO_RING;
    case SCN_ALLREDUCE_BIDIRECTIONAL_RING: return SIM_ALGO_BIDI_RING;
    case SCN_ALLREDUCE_TORUS: return SIM_ALGO_TORUS;
    case SCN_ALLREDUCE_TREE: return SIM_ALGO_TREE;
    case SCN_ALLREDUCE_HALVING_DOUBLING: return SIM_ALGO_HALVING_DOUBLING;
    case SCN_ALLREDUCE_DOUBLE_BINARY_TREE: return SIM_ALGO_DOUBLE_TREE;
    case SCN_ALLREDUCE_NCCL: return SIM_ALGO_NCCL;
  }
  return SIM_ALGO_RING;
}

sim_algo train_workers_algorithm(const scenario *s, scn_allreduce a) {
  int gpu_system = s->worker_machine.accel_nvlink_bytes_per_s > 0;
  return a == SCN_ALLREDUCE_AUTO && gpu_system ? SIM_ALGO_NCCL : train_algorithm(a, 0);
}

void train_compute_model(const scn_machine *m, char *buf, size_t len) {
  if (m->accelerators <= 0) base_format(buf, len, "%s", "");
  else if (m->accel_op.units > 0) base_format(buf, len, "per-op model (%s)", m->accel_gpu);
  else base_format(buf, len, "scalar roofline at %g of peak", m->accel_efficiency);
}

ds_machine train_machine(const scn_machine *m) {
  ds_machine d;
  d.flops_per_s = m->flops;
  d.mem_bytes_per_s = m->mem_bytes_per_s;
  d.accel = (ds_accelerators){ m->accelerators, m->accel_peak_flops, m->accel_efficiency,
                               m->accel_hbm_bytes, m->accel_hbm_bytes_per_s,
                               m->accel_link_bytes_per_s, sim_time_from_s(m->accel_link_latency_s),
                               m->accel_workspace_bytes, m->accel_nvlink_bytes_per_s,
                               m->accel_nccl_bytes_per_s, m->accel_nic_bytes_per_s,
                               m->accel_nccl_launch_s,
                               m->accel_gpus_per_nic > 0 ? m->accel_gpus_per_nic : 1,
                               m->accel_nvls_bytes_per_s, m->accel_op, m->accel_net_latency_s,
                               m->accel_pcie_only, m->accel_nccl_arch, m->accel_host_amd };
  d.ram_bytes = m->ram_bytes;
  d.nic_bytes_per_s = m->nic_bytes_per_s;
  return d;
}

ds_cluster train_cluster(const scenario *s) {
  ds_cluster c;
  c.workers = s->workers;
  c.machine = train_machine(&s->worker_machine);
  c.fabric = train_fabric_kind(s->fabric);
  c.link_bytes_per_s = s->fabric_bytes_per_s;
  c.latency = sim_time_from_s(s->fabric_latency_s);
  return c;
}

double train_wall_s(void) {
  struct timespec w;
  clock_gettime(CLOCK_MONOTONIC, &w);
  return (double)w.tv_sec + 1e-9 * (double)w.tv_nsec;
}

/* A mixed policy asked of CPU devices: TensorFlow runs it, but slowly where the CPU lacks the
** arithmetic (float16 on any CPU: Keras' mixed-precision check warns the same; bfloat16 without
** AVX512_BF16 or AMX, which oneDNN needs for speed), while podsim's roofline times it at the
** narrower activations, faster than float32. A warning, as TF gives one: the run is still valid. */
static void cpu_policy_warning(const scenario *s, run_summary *sum) {
  if (s->dtype_policy == MD_POLICY_FLOAT32 || s->tpu_type[0] || s->worker_machine.accelerators > 0 ||
      sum->nwarnings >= RUN_MAX_WARNINGS)
    return;
  int f16 = s->dtype_policy == MD_POLICY_MIXED_FLOAT16;
  base_format(sum->warnings[sum->nwarnings++], sizeof sum->warnings[0],
              "model.dtype_policy %s on CPU workers (%.32s): %s; podsim times it faster than float32 "
              "(narrower activations): use float32 on CPUs", f16 ? "mixed_float16" : "mixed_bfloat16",
              s->worker_machine.type,
              f16 ? "TensorFlow warns it \"may run slowly because this machine does not have a GPU\""
                  : "TensorFlow runs bfloat16 quickly only on CPUs with AVX512_BF16 or AMX");
}

int train_finish(const scenario *s, const char *out_dir, double w0, int rc, run_summary *sum, scn_error *err) {
  sum->wall_s = train_wall_s() - w0;
  cpu_policy_warning(s, sum);
  sum->chip_hours = scenario_chips(s) * sum->sim_time_s / 3600.0;
  sum->cost_usd = s->price_per_hour * sum->sim_time_s / 3600.0;
  sum->price_model = s->price_spot ? "spot" : "on_demand";
  sum->price_missing = s->price_missing;
  if (rc == TR_EXIT_OK) {
    char path[SCN_PATH_MAX + 32];
    if (outputs_write_summary(outputs_path(path, sizeof path, out_dir, "summary.json"), sum) != 0)
      rc = train_error(err, out_dir, 0, 0, "outputs.dir", "cannot write %s: %s", path, strerror(errno));
  }
  free(sum->devices);  /* summary.json has them; the caller prints only the totals */
  sum->devices = NULL;
  sum->ndevices = 0;
  if (rc != TR_EXIT_OK) return rc;
  return sum->failed ? TR_EXIT_JOB_FAILED : TR_EXIT_OK;
}
