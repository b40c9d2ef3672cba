/*
** validate.c: fit's validation and history.csv (validate.h has the model of an evaluation).
**
** Invariants:
**   (1) the evaluation's batches are the distributed validation dataset's, computed once by the
**       input plan (input_plan.h) before the run: every evaluation reads the same rows in the same
**       order (Keras's validation data is neither shuffled nor repeated across evaluations);
**   (2) each replica's state lives in its own slot until the all-reduce, after which every slot
**       holds the same sum and replica 0 alone records it;
**   (3) history.csv reads only rows a later row did not roll back (rec_kept_rows), so a restarted
**       job's redone steps count once, as the uninterrupted job's epoch logs have them.
*/
#include "scenarios/programs/validate.h"

#include <math.h>
#include <string.h>

#include "base/base.h"

struct val_run {
  md_dataset *own;        /* validation_data's rows (NULL: validation_split's, in the training data) */
  const md_dataset *data; /* the rows the evaluation reads */
  size_t offset;          /* the first validation row of data (validation_split: the split point) */
  size_t rows;            /* validation rows */
  long steps;             /* batches per evaluation */
  int nreplicas;          /* replicas the batches were distributed over */
  int max_count;          /* the largest per-replica batch */
  int *count;             /* [batch * nreplicas + replica]: its examples */
  size_t *first;          /* the same index: its first row in row */
  int64_t *row;           /* every batch's rows back to back, offset included (numerics full) */
  size_t state_floats;    /* loss total and count, then every compiled metric's state */
  float *state;           /* [replica][state_floats]: each replica's (invariant 2) */
  float *x;               /* [replica][max_count * width]: a batch's gathered features */
  int32_t *ids;           /* likewise its ids */
  int32_t *labels;        /* likewise its labels */
  float *targets;         /* likewise its targets */
  long epochs;            /* training.epochs */
  unsigned char *done;    /* [epoch]: evaluated after it */
  double *loss;           /* [epoch]: val_loss */
  float *metric;          /* [epoch * nmetrics + k]: val_<metric k> */
  long examples;          /* examples one evaluation reads */
  int outputs;            /* the model's outputs per example */
  float *pred;            /* mode predict: [row - offset][outputs], each replica's forward */
  unsigned char *seen;    /* mode predict: [row - offset], predicted (steps may stop short) */
  char (*names)[48];      /* [k]: val_<metric k>, the callbacks' log names */
};

/* train_error for validation_data's CSV, under its own key rather than dataset.csv's. */
static int rekey(scn_error *err) {
  const char *what = strstr(err->msg, ": dataset.csv: ");
  char msg[sizeof err->msg], file[sizeof err->file];  /* train_error rewrites err: copies first */
  snprintf(msg, sizeof msg, "%s", what ? what + strlen(": dataset.csv: ") : err->msg);
  snprintf(file, sizeof file, "%s", err->file);
  return train_error(err, file, err->line, err->col, "training.validation_data.csv", "%s", msg);
}

/* validation_data: the CSV read as the dataset's, by a copy of the scenario that names it. */
static int load_csv(train_input *in, const md_model *m, val_run *v, scn_error *err) {
  scenario *copy = base_xcalloc(1, sizeof *copy);
  *copy = *in->s;
  snprintf(copy->csv, sizeof copy->csv, "%s", in->s->validation_csv);
  copy->nfiles = 0;
  copy->graph_nodes_csv[0] = '\0';
  train_input vin = { .s = copy };
  int rc = train_load_data(&vin, m, err);
  free(copy);
  free(vin.file_rows);
  if (rc != TR_EXIT_OK) {
    if (vin.data) md_dataset_free(vin.data);
    return rekey(err);
  }
  v->own = vin.data;
  v->data = v->own;
  v->rows = v->own->rows;
  return TR_EXIT_OK;
}

int val_load(train_input *in, const md_model *m, val_run **out, scn_error *err) {
  const scenario *s = in->s;
  *out = NULL;
  if (s->mode == SCN_RUN_FIT && s->validation_split <= 0 && s->validation_csv[0] == '\0') return TR_EXIT_OK;
  val_run *v = base_xcalloc(1, sizeof *v);
  v->outputs = md_model_num_classes(m);
  if (s->mode != SCN_RUN_FIT) {  /* evaluate or predict: the dataset's rows */
    v->data = in->data;
    v->rows = in->data->rows;
  } else if (s->validation_csv[0] != '\0') {
    if (load_csv(in, m, v, err) != TR_EXIT_OK) {
      free(v);
      return TR_EXIT_INPUT;
    }
  } else {
    /* Keras's train_validation_split: floor(rows (1 - split)) rows train, the rest validate. */
    size_t rows = in->data->rows, split = (size_t)floor((double)rows * (1.0 - s->validation_split));
    if (split == 0 || split == rows) {
      free(v);
      return train_error(err, s->path, 0, 0, "training.validation_split", "%zu rows split at %g leave %s "
                         "no rows (Keras raises the same)", rows, s->validation_split,
                         split == 0 ? "training" : "validation");
    }
    in->data->rows = split;
    v->data = in->data;
    v->offset = split;
    v->rows = rows - split;
  }
  v->epochs = s->mode == SCN_RUN_FIT ? s->epochs : 1;  /* a mode's one evaluation is "epoch 0" */
  if (s->mode == SCN_RUN_PREDICT && s->numerics_full) {
    v->pred = base_xcalloc(v->rows * (size_t)v->outputs + 1, sizeof *v->pred);
    v->seen = base_xcalloc(v->rows + 1, 1);
  }
  v->done = base_xcalloc((size_t)v->epochs, 1);
  v->loss = base_xcalloc((size_t)v->epochs, sizeof *v->loss);
  v->metric = base_xcalloc((size_t)v->epochs * (size_t)(s->nmetrics + 1), sizeof *v->metric);
  v->names = base_xcalloc((size_t)s->nmetrics + 1, sizeof *v->names);
  for (int k = 0; k < s->nmetrics; k++) base_format(v->names[k], sizeof v->names[k], "val_%s", md_metric_name(s->metrics[k]));
  *out = v;
  return TR_EXIT_OK;
}

/* The validation dataset as an input program: the validation rows, batched by
** validation_batch_size, one pass (or validation_steps batches) without shuffle, distributed by
** the strategy as the training dataset is. Its batches are kept (invariant 1). Mode evaluate or
** predict: the dataset by its global_batch, one pass or training.steps batches. */
int val_plan(val_run *v, trainer *t, scn_error *err) {
  const scenario *s = t->in.s;
  scenario *copy = base_xcalloc(1, sizeof *copy);
  *copy = *s;
  long steps = s->mode != SCN_RUN_FIT ? s->steps : s->validation_steps;
  copy->global_batch = s->validation_batch_size > 0 ? s->validation_batch_size : s->global_batch;
  copy->epochs = 0;
  copy->steps = steps > 0 ? steps : 10000000L;
  copy->repeat = 0;
  copy->shuffle_buffer = 0;
  copy->nfiles = 0;
  md_dataset view = *v->data;
  view.rows = v->rows;
  train_input vin = { .s = copy, .data = &view };
  int rc = train_count_steps(&vin, err);
  inp_plan *p = rc == TR_EXIT_OK ? inp_plan_new(&vin, t->strategy, s->numerics_full, err) : NULL;
  if (p == NULL) {
    free(copy);
    return TR_EXIT_INPUT;
  }
  v->steps = vin.steps;
  v->nreplicas = t->nreplicas;
  size_t slots = (size_t)v->steps * (size_t)v->nreplicas;
  v->count = base_xcalloc(slots + 1, sizeof *v->count);
  v->first = base_xcalloc(slots + 1, sizeof *v->first);
  size_t at = 0, cap = 0;  /* rows kept, room for them (auto-shard OFF reads more than G a batch) */
  for (long b = 0; b < v->steps; b++)
    for (int r = 0; r < v->nreplicas; r++) {
      size_t i = (size_t)b * (size_t)v->nreplicas + (size_t)r;
      int n;
      const int64_t *rows = inp_plan_rows(p, b, r, &n);
      if (rows == NULL) n = inp_plan_count(p, b, r);
      v->count[i] = n;
      v->first[i] = at;
      while (rows && at + (size_t)n > cap) {
        cap = cap ? 2 * cap : (size_t)copy->global_batch + 1;
        v->row = base_xrealloc(v->row, cap * sizeof *v->row);
      }
      for (int k = 0; rows && k < n; k++) v->row[at + (size_t)k] = rows[k] + (int64_t)v->offset;
      if (rows) at += (size_t)n;
      if (n > v->max_count) v->max_count = n;
      v->examples += n;
    }
  inp_plan_free(p);
  free(copy);
  v->state_floats = 2 + t->metric_floats;
  v->state = base_xcalloc((size_t)v->nreplicas * v->state_floats, sizeof *v->state);
  if (s->numerics_full) {
    size_t per = (size_t)v->max_count + 1, width = (size_t)v->data->width;
    v->x = base_xcalloc((size_t)v->nreplicas * per * width, sizeof *v->x);
    v->ids = base_xcalloc((size_t)v->nreplicas * per * width, sizeof *v->ids);
    v->labels = base_xcalloc((size_t)v->nreplicas * per * md_dataset_labels_per_row(v->data), sizeof *v->labels);
    v->targets = base_xcalloc((size_t)v->nreplicas * per * ((size_t)v->data->targets_width + 1), sizeof *v->targets);
  }
  return TR_EXIT_OK;
}

void val_free(val_run *v) {
  if (v == NULL) return;
  free(v->names);
  if (v->own) md_dataset_free(v->own);
  free(v->count);
  free(v->first);
  free(v->row);
  free(v->state);
  free(v->x);
  free(v->ids);
  free(v->labels);
  free(v->targets);
  free(v->done);
  free(v->loss);
  free(v->metric);
  free(v->pred);
  free(v->seen);
  free(v);
}

/* Steps per epoch of the run (train__epoch_of's). */
static long per_epoch(const trainer *t) { return t->in.s->epochs > 0 ? t->in.steps / t->in.s->epochs : 0; }

int val_due(const val_run *v, const trainer *t, long step) {
  const scenario *s = t->in.s;
  long per = per_epoch(t);
  /* The epoch's last step, or the one after which a callback stopped training mid-epoch. */
  if (v == NULL || per == 0 || ((step + 1) % per != 0 && !cb_stop(t->cb, step))) return 0;
  return val_should_eval(s, (step + 1) / per);  /* 1-based, as _should_eval counts it */
}

int val_should_eval(const scenario *s, long epoch) {
  if (s->nvalidation_at == 0) return epoch % s->validation_freq == 0;
  for (int i = 0; i < s->nvalidation_at; i++)
    if (s->validation_at[i] == epoch) return 1;
  return 0;
}

void val_state_logs(const md_metric_kind *kinds, int nmetrics, int values, const float *state, double *out) {
  out[0] = !values ? NAN : state[1] > 0.0f ? (double)(state[0] / state[1]) : 0.0;
  const float *at = state + 2;
  for (int k = 0; k < nmetrics; at += md_metric_state_size(kinds[k]), k++)
    out[1 + k] = values ? md_metric_result(kinds[k], at) : NAN;
}

/* One batch's update of replica r's state: the loss tracker, then each metric (numerics full). */
static void update_state(val_run *v, trainer *t, replica *rep, size_t i, float *state) {
  const scenario *s = t->in.s;
  size_t r = (size_t)rep->index, per = (size_t)v->max_count + 1, width = (size_t)v->data->width;
  int n = v->count[i];
  float *x = v->x + r * per * width, *targets = v->targets + r * per * ((size_t)v->data->targets_width + 1);
  int32_t *ids = v->ids + r * per * width, *labels = v->labels + r * per * md_dataset_labels_per_row(v->data);
  md_dataset_gather_rows(v->data, v->row + v->first[i], n, x, ids, labels, targets);
  md_batch b = { n, v->data->is_ids ? NULL : x, v->data->is_ids ? ids : NULL, labels, targets };
  if (v->pred) {  /* predict: the outputs, by row, as predict() concatenates its batches */
    const float *out = md_model_forward(rep->model, rep->ws, &b, NULL);
    for (int k = 0; k < n; k++) {
      size_t at = (size_t)(v->row[v->first[i] + (size_t)k] - (int64_t)v->offset);
      memcpy(v->pred + at * (size_t)v->outputs, out + (size_t)k * (size_t)v->outputs, (size_t)v->outputs * sizeof *out);
      v->seen[at] = 1;
    }
    return;
  }
  state[0] += (float)md_model_loss(rep->model, rep->ws, &b, NULL);
  state[1] += (float)n;
  int outputs = md_model_num_classes(rep->model);
  float *at = state + 2;
  for (int k = 0; k < s->nmetrics; at += md_metric_state_size(t->metric_kinds[k]), k++)
    md_metric_update(t->metric_kinds[k], md_model_last_output(rep->model, rep->ws), outputs, &b, at);
}

int val_evaluate(val_run *v, trainer *t, replica *rep, sim_actor *self, long step) {
  const scenario *s = t->in.s;
  int r = rep->index, layers = md_model_num_layers(rep->model);
  float *state = v->state + (size_t)r * v->state_floats;
  sim_cpu *cpu = ds_replica_cpu(t->strategy, r);
  sim_time begin = sim_now(t->engine);
  memset(state, 0, v->state_floats * sizeof *state);  /* evaluate() resets the metrics first */
  for (long b = 0; b < v->steps; b++) {
    /* A TF2 TPU launches the test function once per steps_per_execution batches. */
    if (t->round_trip_ps > 0 && b % t->launch_every == 0 && sim_sleep(self, t->round_trip_ps) != SIM_OK)
      return SIM_FAILED;
    size_t i = (size_t)b * (size_t)v->nreplicas + (size_t)r;
    if (v->count[i] == 0) continue;
    if (s->numerics_full) update_state(v, t, rep, i, state);
    size_t n;
    const cg_program *p = cg_cache_get(t->programs, v->count[i]);
    const cg_kernel *k = cg_program_step(p, &n);
    if (sim_exec(self, cpu, train__kernel_work(t, rep, k, 0, cg_program_mark(p, layers))) != SIM_OK)
      return SIM_FAILED;
  }
  /* Reading the SyncOnRead state: its sum over the replicas (invariant 2). */
  if (ds_all_reduce_sum(t->strategy, self, r, s->numerics_full ? state : NULL, v->state_floats) != SIM_OK)
    return SIM_FAILED;
  long epoch = train__epoch_of(t, step);
  if (t->traced) {
    char span[48];
    sim_trace_span(t->engine, t->track[r], base_format(span, sizeof span, "evaluate epoch %ld", epoch),
                   "evaluate", begin, sim_now(t->engine));
  }
  /* Every replica records what the all-reduce gave them all (invariant 2): the first past it
  ** hands the logs to the epoch's callbacks. */
  double logs[MD_METRIC_KIND_COUNT + 1];
  val_state_logs(t->metric_kinds, s->nmetrics, s->numerics_full && s->mode != SCN_RUN_PREDICT, state, logs);
  v->done[epoch] = 1;
  v->loss[epoch] = logs[0];
  for (int k = 0; k < s->nmetrics; k++) v->metric[epoch * s->nmetrics + k] = (float)logs[1 + k];
  return SIM_OK;
}

void val_logs(const val_run *v, const trainer *t, long step, cb_logs *out) {
  const scenario *s = t->in.s;
  long epoch = train__epoch_of(t, step);
  out->n = 0;
  out->names[out->n] = "val_loss";
  out->values[out->n++] = v->loss[epoch];
  for (int k = 0; k < s->nmetrics; k++) {
    out->names[out->n] = v->names[k];
    out->values[out->n++] = v->metric[epoch * s->nmetrics + k];
  }
}

size_t val_points(const val_run *v, const trainer *t, double *x, double *y, size_t max) {
  size_t n = 0;
  long per = per_epoch(t);
  for (long e = 0; v && t->in.s->mode == SCN_RUN_FIT && e < v->epochs && n < max; e++)
    if (v->done[e] && isfinite(v->loss[e])) {
      x[n] = (double)((e + 1) * per - 1);
      y[n++] = v->loss[e];
    }
  return n;
}

/* A value as history.csv prints it: to read back as the same double, "nan" for no value. */
static void put(FILE *f, double x) {
  if (isnan(x)) fputs(",nan", f);
  else fprintf(f, ",%.17g", x);
}

void val_history_header(FILE *f, const scenario *s, int validates) {
  fputs("epoch,loss", f);
  for (int k = 0; k < s->nmetrics; k++) fprintf(f, ",%s", md_metric_name(s->metrics[k]));
  if (validates) fputs(",val_loss", f);
  for (int k = 0; validates && k < s->nmetrics; k++) fprintf(f, ",val_%s", md_metric_name(s->metrics[k]));
  fputc('\n', f);
}

void val_history_row(FILE *f, long epoch, int nmetrics, const double *train, int validates, const double *val) {
  fprintf(f, "%ld", epoch);
  for (int k = 0; k <= nmetrics; k++) put(f, train[k]);
  for (int k = 0; validates && k <= nmetrics; k++) {
    if (val) put(f, val[k]);
    else fputc(',', f);
  }
  fputc('\n', f);
}

int val_write_history(const val_run *v, const trainer *t, const char *path) {
  const scenario *s = t->in.s;
  FILE *f = fopen(path, "w");
  if (f == NULL) return -1;
  val_history_header(f, s, v != NULL);
  unsigned char *kept = base_xcalloc((size_t)t->rows.n + 1, 1);
  rec_kept_rows(t->rows.at, t->rows.n, kept);
  long per = per_epoch(t);
  for (long e = 0; per > 0 && e < s->epochs; e++) {
    /* The loss tracker's epoch mean: each step's mean loss weighted by its examples. */
    double sum = 0.0, examples = 0.0;
    const step_record *last = NULL;
    for (long i = 0; i < t->rows.n; i++) {
      const step_record *r = &t->rows.at[i];
      if (!kept[i] || r->step / per != e) continue;
      sum += r->loss * r->examples;
      examples += r->examples;
      last = r;
    }
    if (last == NULL || last->step != (e + 1) * per - 1) break;  /* the epoch did not end */
    double train[MD_METRIC_KIND_COUNT + 1], val[MD_METRIC_KIND_COUNT + 1];
    train[0] = examples > 0 ? sum / examples : last->loss;
    for (int k = 0; k < s->nmetrics; k++) train[1 + k] = last->metrics[k];
    if (v && v->done[e]) {
      val[0] = v->loss[e];
      for (int k = 0; k < s->nmetrics; k++) val[1 + k] = v->metric[e * s->nmetrics + k];
    }
    val_history_row(f, e, s->nmetrics, train, v != NULL, v && v->done[e] ? val : NULL);
  }
  free(kept);
  return base_fclose(f);
}

void val_summarise(const val_run *v, const trainer *t, run_summary *sum, char *figures, size_t len) {
  const scenario *s = t->in.s;
  figures[0] = '\0';
  if (v == NULL || s->mode != SCN_RUN_EVALUATE) return;
  sum->nevaluate = 1 + s->nmetrics;
  sum->evaluate_examples = v->examples;
  snprintf(sum->evaluate_names[0], sizeof sum->evaluate_names[0], "loss");
  sum->evaluate_values[0] = v->done[0] ? v->loss[0] : NAN;
  for (int k = 0; k < s->nmetrics; k++) {
    snprintf(sum->evaluate_names[1 + k], sizeof sum->evaluate_names[0], "%s", md_metric_name(s->metrics[k]));
    sum->evaluate_values[1 + k] = v->done[0] ? v->metric[k] : NAN;
  }
  /* run_hash covers the results as printed to read back as the same double. */
  size_t at = 0;
  for (int k = 0; k < sum->nevaluate && at < len; k++)
    at += (size_t)snprintf(figures + at, len - at, "%seval_%s=%.17g", k ? " " : "", sum->evaluate_names[k],
                           sum->evaluate_values[k]);
}

int val_write_predictions(const val_run *v, const char *path) {
  FILE *f = fopen(path, "w");
  if (f == NULL) return -1;
  fputs("row", f);
  for (int j = 0; j < v->outputs; j++) fprintf(f, ",output_%d", j);
  fputc('\n', f);
  for (size_t r = 0; v->pred && r < v->rows; r++) {
    if (!v->seen[r]) continue;
    fprintf(f, "%zu", r);
    for (int j = 0; j < v->outputs; j++) fprintf(f, ",%.9g", (double)v->pred[r * (size_t)v->outputs + (size_t)j]);
    fputc('\n', f);
  }
  return base_fclose(f);
}

void val_rows(const val_run *v, const md_dataset **data, size_t *first, size_t *rows) {
  *data = v->data;
  *first = v->offset;
  *rows = v->rows;
}
