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

struct psfit {
  int numerics;              /* numerics full: the metrics have values (else NaN) */
  int nmetrics;              /* compiled metrics */
  md_metric_kind kinds[MD_METRIC_KIND_COUNT]; /* each resolved (accuracy as Keras compiles it) */
  const char *names[MD_METRIC_KIND_COUNT];     /* their history.csv columns, as written */
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
  double *history;           /* per epoch, loss then each metric: History's values */
};

static long epoch_of(const psfit *f, long step) { return f->per_epoch > 0 ? step / f->per_epoch : 0; }

psfit *psfit_new(const scenario *s, const md_model *m, int nworkers) {
  psfit *f = base_xcalloc(1, sizeof *f);
  int sparse = s->loss == MD_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
  f->numerics = s->numerics_full;
  f->nmetrics = s->nmetrics;
  for (int k = 0; k < s->nmetrics; k++) {
    f->kinds[k] = md_metric_resolve(s->metrics[k], md_model_num_classes(m), sparse);
    f->names[k] = md_metric_name(s->metrics[k]);
    f->floats += md_metric_state_size(f->kinds[k]);
  }
  f->state = base_xcalloc(f->floats + 1, sizeof *f->state);
  f->nworkers = nworkers;
  f->pending = base_xcalloc((size_t)nworkers * f->floats + 1, sizeof *f->pending);
  f->epoch = -1;
  f->epochs = s->epochs;
  f->per_epoch = s->steps_per_epoch;
  f->ended = base_xcalloc((size_t)f->epochs + 1, sizeof *f->ended);
  f->history = base_xcalloc(((size_t)f->epochs + 1) * (size_t)(f->nmetrics + 1), sizeof *f->history);
  return f;
}

void psfit_free(psfit *f) {
  if (f == NULL) return;
  free(f->state);
  free(f->pending);
  free(f->ended);
  free(f->history);
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

void psfit_epoch_done(psfit *f, long epoch) {
  if (epoch < 0 || epoch >= f->epochs) return;
  double *row = f->history + (size_t)epoch * (size_t)(f->nmetrics + 1);
  float m[MD_METRIC_KIND_COUNT];
  results(f, m);
  row[0] = f->loss_count > 0 ? f->loss_total / f->loss_count : NAN;
  for (int k = 0; k < f->nmetrics; k++) row[k + 1] = m[k];
  f->ended[epoch] = 1;
}

int psfit_write_history(const void *ctx, const char *path) {
  const psfit *f = ctx;
  FILE *out = fopen(path, "w");
  if (out == NULL) return -1;
  fputs("epoch,loss", out);
  for (int k = 0; k < f->nmetrics; k++) fprintf(out, ",%s", f->names[k]);
  fputc('\n', out);
  for (long e = 0; e < f->epochs && f->ended[e]; e++) {
    const double *row = f->history + (size_t)e * (size_t)(f->nmetrics + 1);
    fprintf(out, "%ld", e);
    for (int k = 0; k <= f->nmetrics; k++) {
      if (isnan(row[k])) fputs(",nan", out);
      else fprintf(out, ",%.17g", row[k]);
    }
    fputc('\n', out);
  }
  return base_fclose(out);
}
