/*
** ps_fit.c: Keras 2's Model.fit under ParameterServerStrategy (psfit_; ps_fit.h says what TF
** does). The state here is the metrics' and the loss tracker's variables as the ps tasks hold
** them: one SUM state for the epoch, plus each worker's counts of the step it runs, added when
** that step's push is applied.
*/
#include "scenarios/programs/ps_fit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "scenarios/programs/validate.h"

struct psfit {
  int numerics;              /* numerics full: the metrics have values (else NaN) */
  int nmetrics;              /* compiled metrics */
  md_metric_kind kinds[MD_METRIC_KIND_COUNT]; /* each resolved (accuracy as Keras compiles it) */
  size_t floats;             /* the metrics' state floats, end to end */
  float *state;              /* the epoch's metric state on the ps tasks (SUM of every applied step;
                             ** float32 variables, as Keras's) */
  double loss_total, loss_count; /* the loss tracker's Mean: sum of batch mean x examples, examples
                             ** (double, as the sync program's History) */
  long epoch;                /* the epoch the state counts (-1 before the first step) */
  int attempt;               /* the chief attempt it belongs to */
  int nworkers;              /* worker tasks */
  float *pending;            /* per worker, the counts of its running step (floats each) */
  long epochs;               /* training.epochs (0: a custom loop's steps, no History) */
  long per_epoch;            /* training.steps_per_epoch */
  int *ended;                /* per epoch, whether its join fetched a row */
  long *joined_at;           /* per epoch, the updates applied at its join (the loss chart's x) */
  double *history;           /* per epoch, loss then each metric: History's values */
  const scenario *s;         /* validation_freq and the metrics as listed (history.csv) */
  val_run *val;              /* the validation rows (validate.h), NULL without validation */
  const md_dataset *vdata;   /* their dataset */
  size_t vfirst, vrows;      /* its first validation row, their count */
  int vbatch;                /* validation_batch_size (default dataset.global_batch) */
  long vbatches;             /* batches of one pass, the last one partial */
  int shards;                /* pss_evaluation_shards, resolved */
  size_t vfloats;            /* a shard's state: loss sum, count, then the metrics' floats */
  float *vstate;             /* per shard, its state (float32, as Keras's local metric variables) */
  float *x, *targets;        /* per worker, a validation batch's features, targets */
  int32_t *ids, *labels;     /* per worker, its ids, labels */
  int64_t *rows;             /* per worker, its batch's row indices (validation_split's are past
                             ** in->data->rows, which md_dataset_gather would wrap) */
  int *evaluated;            /* per epoch, whether it was evaluated */
  double *vlogs;             /* per epoch, val_loss then each val_ metric */
};

static long epoch_of(const psfit *f, long step) { return f->per_epoch > 0 ? step / f->per_epoch : 0; }

int psfit_new(train_input *in, const md_model *m, psfit **out, scn_error *err) {
  const scenario *s = in->s;
  psfit *f = base_xcalloc(1, sizeof *f);
  *out = f;
  f->s = s;
  int sparse = s->loss == MD_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
  f->numerics = s->numerics_full;
  f->nmetrics = s->nmetrics;
  for (int k = 0; k < s->nmetrics; k++) {
    f->kinds[k] = md_metric_resolve(s->metrics[k], md_model_num_classes(m), sparse);
    f->floats += md_metric_state_size(f->kinds[k]);
  }
  f->state = base_xcalloc(f->floats + 1, sizeof *f->state);
  f->epoch = -1;
  f->epochs = s->epochs;
  f->per_epoch = s->steps_per_epoch;
  f->ended = base_xcalloc((size_t)f->epochs + 1, sizeof *f->ended);
  f->joined_at = base_xcalloc((size_t)f->epochs + 1, sizeof *f->joined_at);
  f->history = base_xcalloc(((size_t)f->epochs + 1) * (size_t)(f->nmetrics + 1), sizeof *f->history);
  f->evaluated = base_xcalloc((size_t)f->epochs + 1, sizeof *f->evaluated);
  f->vlogs = base_xcalloc(((size_t)f->epochs + 1) * (size_t)(f->nmetrics + 1), sizeof *f->vlogs);
  if (s->mode != SCN_RUN_FIT || s->epochs == 0) return TR_EXIT_OK;
  int rc = val_load(in, m, &f->val, err);
  if (rc != TR_EXIT_OK || f->val == NULL) return rc;
  val_rows(f->val, &f->vdata, &f->vfirst, &f->vrows);
  f->vbatch = s->validation_batch_size > 0 ? s->validation_batch_size : s->global_batch;
  f->vbatches = (long)((f->vrows + (size_t)f->vbatch - 1) / (size_t)f->vbatch);
  f->vfloats = 2 + f->floats;
  return TR_EXIT_OK;
}

void psfit_start(psfit *f, int nworkers) {
  size_t n = (size_t)nworkers, g = (size_t)f->vbatch, width = f->vdata ? (size_t)f->vdata->width : 0;
  f->nworkers = nworkers;
  f->pending = base_xcalloc(n * f->floats + 1, sizeof *f->pending);
  if (f->val == NULL) return;
  f->shards = f->s->pss_shards < 0 ? 5 * nworkers : f->s->pss_shards;
  f->vstate = base_xcalloc((size_t)f->shards * f->vfloats, sizeof *f->vstate);
  f->rows = base_xcalloc(n * g, sizeof *f->rows);
  if (!f->numerics) return;  /* numerics off: a batch is its size and its rows' ids alone */
  f->x = base_xcalloc(n * g * width + 1, sizeof *f->x);
  f->ids = base_xcalloc(n * g * width + 1, sizeof *f->ids);
  f->labels = base_xcalloc(n * g * md_dataset_labels_per_row(f->vdata) + 1, sizeof *f->labels);
  f->targets = base_xcalloc(n * g * (size_t)f->vdata->targets_width + 1, sizeof *f->targets);
}

void psfit_free(psfit *f) {
  if (f == NULL) return;
  free(f->state);
  free(f->pending);
  free(f->ended);
  free(f->history);
  val_free(f->val);
  free(f->vstate);
  free(f->x);
  free(f->ids);
  free(f->labels);
  free(f->targets);
  free(f->rows);
  free(f->evaluated);
  free(f->vlogs);
  free(f->joined_at);
  free(f);
}

long psfit_execution_end(const scenario *s, long step, long steps) {
  long end = step + (s->steps_per_execution > 1 ? s->steps_per_execution : 1);
  if (s->steps_per_epoch > 0) {
    long epoch_end = (step / s->steps_per_epoch + 1) * s->steps_per_epoch;
    if (end > epoch_end) end = epoch_end;
  }
  return end < steps ? end : steps;
}

int psfit_epoch_ends(const scenario *s, long end) {
  return s->epochs > 0 && s->steps_per_epoch > 0 && end % s->steps_per_epoch == 0;
}

void psfit_update(psfit *f, int worker, const float *pred, int outputs, const md_batch *b) {
  float *mine = f->pending + (size_t)worker * f->floats;
  memset(mine, 0, f->floats * sizeof *mine);
  for (int k = 0, at = 0; k < f->nmetrics; at += (int)md_metric_state_size(f->kinds[k]), k++)
    if (b->n > 0) md_metric_update(f->kinds[k], pred, outputs, b, mine + at);
}

/* Each metric's result of the epoch's state (NaN with numerics off). */
static void results(const psfit *f, float *out) {
  for (int k = 0, at = 0; k < f->nmetrics; at += (int)md_metric_state_size(f->kinds[k]), k++)
    out[k] = f->numerics ? md_metric_result(f->kinds[k], f->state + at) : NAN;
}

void psfit_applied(psfit *f, int worker, long step, int attempt, step_record *rec) {
  /* reset_metrics at an epoch's first step, and in a new chief process */
  if (epoch_of(f, step) != f->epoch || attempt != f->attempt) {
    memset(f->state, 0, f->floats * sizeof *f->state);
    f->loss_total = f->loss_count = 0;
    f->epoch = epoch_of(f, step);
    f->attempt = attempt;
  }
  const float *mine = f->pending + (size_t)worker * f->floats;
  for (size_t i = 0; f->numerics && i < f->floats; i++) f->state[i] += mine[i];
  f->loss_total += rec->loss * rec->examples;
  f->loss_count += rec->examples;
  results(f, rec->metrics);
}

void psfit_epoch_done(psfit *f, long epoch, long applied) {
  if (epoch < 0 || epoch >= f->epochs) return;
  double *row = f->history + (size_t)epoch * (size_t)(f->nmetrics + 1);
  float m[MD_METRIC_KIND_COUNT];
  results(f, m);
  row[0] = f->loss_count > 0 ? f->loss_total / f->loss_count : NAN;
  for (int k = 0; k < f->nmetrics; k++) row[k + 1] = m[k];
  f->ended[epoch] = 1;
  f->joined_at[epoch] = applied;
}

int psfit_val_shards(const psfit *f, long epoch) {
  if (f->val == NULL || epoch < 0 || epoch >= f->epochs) return 0;
  return val_should_eval(f->s, epoch + 1) ? f->shards : 0;
}

void psfit_val_begin(psfit *f, int shard) {
  memset(f->vstate + (size_t)shard * f->vfloats, 0, f->vfloats * sizeof *f->vstate);
}

int psfit_val_batch(psfit *f, int worker, int shard, long k, md_batch *batch, const int64_t **rows) {
  long b = shard + k * f->shards;
  if (b >= f->vbatches) return 0;
  size_t g = (size_t)f->vbatch, first = f->vfirst + (size_t)b * g, width = (size_t)f->vdata->width;
  int n = (int)(f->vrows - (size_t)b * g < g ? f->vrows - (size_t)b * g : g);
  int64_t *at = f->rows + (size_t)worker * g;
  for (int i = 0; i < n; i++) at[i] = (int64_t)(first + (size_t)i);
  *rows = at;
  *batch = (md_batch){ n, NULL, NULL, NULL, NULL };
  if (!f->numerics) return 1;
  float *x = f->x + (size_t)worker * g * width, *targets = f->targets + (size_t)worker * g * (size_t)f->vdata->targets_width;
  int32_t *ids = f->ids + (size_t)worker * g * width, *labels = f->labels + (size_t)worker * g * md_dataset_labels_per_row(f->vdata);
  md_dataset_gather_rows(f->vdata, at, n, x, ids, labels, targets);
  *batch = (md_batch){ n, f->vdata->is_ids ? NULL : x, f->vdata->is_ids ? ids : NULL, labels, targets };
  return 1;
}

const md_dataset *psfit_val_data(const psfit *f) { return f->vdata; }

void psfit_val_forward(psfit *f, int shard, md_model *m, md_workspace *ws, const md_batch *batch, md_cost *cost) {
  float *state = f->vstate + (size_t)shard * f->vfloats;
  state[0] += (float)md_model_loss(m, ws, batch, cost);
  state[1] += (float)batch->n;
  float *at = state + 2;
  for (int j = 0; f->numerics && j < f->nmetrics; at += md_metric_state_size(f->kinds[j]), j++)
    md_metric_update(f->kinds[j], md_model_last_output(m, ws), md_model_num_classes(m), batch, at);
}

void psfit_val_done(psfit *f, long epoch) {
  float *sum = base_xcalloc(f->vfloats, sizeof *sum);
  for (int i = 0; i < f->shards; i++)
    for (size_t j = 0; j < f->vfloats; j++) sum[j] += f->vstate[(size_t)i * f->vfloats + j];
  val_state_logs(f->kinds, f->nmetrics, f->numerics, sum, f->vlogs + (size_t)epoch * (size_t)(f->nmetrics + 1));
  f->evaluated[epoch] = 1;
  free(sum);
}

size_t psfit_val_points(const psfit *f, double *x, double *y, size_t max) {
  size_t n = 0;
  for (long e = 0; f != NULL && f->val != NULL && e < f->epochs && n < max; e++) {
    double loss = f->vlogs[(size_t)e * (size_t)(f->nmetrics + 1)];
    if (!f->evaluated[e] || !isfinite(loss)) continue;
    x[n] = (double)f->joined_at[e];
    y[n++] = loss;
  }
  return n;
}

int psfit_write_history(const void *ctx, const char *path) {
  const psfit *f = ctx;
  FILE *out = fopen(path, "w");
  if (out == NULL) return -1;
  val_history_header(out, f->s, f->val != NULL);
  for (long e = 0; e < f->epochs && f->ended[e]; e++)
    val_history_row(out, e, f->nmetrics, f->history + (size_t)e * (size_t)(f->nmetrics + 1), f->val != NULL,
                    f->evaluated[e] ? f->vlogs + (size_t)e * (size_t)(f->nmetrics + 1) : NULL);
  return base_fclose(out);
}
