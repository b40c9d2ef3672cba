/*
** callbacks.c: Keras 3's fit callbacks that change a run (cb_ in callbacks.h).
**
** Design notes
** ------------
** Each callback's state is what its Keras object holds (keras/src/callbacks/, 3.15.1), reset by
** cb_attempt as a new process would make it:
**   - BackupAndRestore: _current_epoch (0 in a new process, epoch + 1 at each epoch's end),
**     _last_batch_seen (0; back to 0 at each epoch's end) and _batches_seen_since_last_saving. A
**     backup records _current_epoch and a restart resumes at that epoch's first step: Keras 3
**     restores `epoch` alone (_load_model sets model._initial_epoch; the batch it writes is never
**     read). So save_freq: epoch resumes exactly where the backup was taken, and an integer
**     save_freq re-runs the epoch's first batches on the backed-up weights; a batch-level backup
**     taken before the new process's first epoch end records epoch 0.
**   - ModelCheckpoint: _last_batch_seen (None), the same batch count, best (None: the first
**     monitored value is an improvement) and monitor_op (MonitorCallback, min_delta 0).
**   - EarlyStopping: wait, best (None), best_epoch, stopped_epoch, whether best weights are kept;
**     _is_improvement is monitor_op(value - min_delta, best) with min_delta negated for `min`.
**   - TerminateOnNaN: the batch logs' loss (the epoch's running mean) not finite stops training,
**     or with raise_error raises RuntimeError: the job fails there, no epoch end, no on_train_end.
**   - TensorBoard: _global_train_batch, counted per execution; batch_* scalars when it is a
**     multiple of update_freq, epoch_* at each epoch's end with epoch_learning_rate; with an
**     evaluation, its validation writer's evaluation_*_vs_iterations (on_test_end) and epoch_*.
** Batch-level work runs in cb_batch_end, at the step's all-reduce; epoch-level work in
** cb_epoch_end, after the epoch's evaluation, whose val_* logs it adds to the epoch's, as Keras's
** fit calls on_epoch_end. Their saves are kept apart (cb_saves' epoch_end): a slower replica can
** still ask for the step's saves after a faster one ended the epoch.
** The loss of the logs is Keras's loss tracker: a float32 Mean over the epoch's examples (total
** += each step's summed loss, count += its examples), reset at each epoch's start as reset_metrics
** does; the metrics are the program's running values, reset likewise.
**
** Invariant: decisions (saves, keep, stop) are those of the last step handed to cb_batch_end,
** and queries for another step answer none.
*/
#include "scenarios/programs/callbacks.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "scenarios/report/outputs.h"
#include "scenarios/report/tfevents.h"

/* A batch-level save's count (_should_save_on_batch). */
typedef struct batch_count {
  long last;              /* _last_batch_seen; -1 for None */
  long since;             /* _batches_seen_since_last_saving */
} batch_count;

/* An event file entry of the TensorBoard callback: scalars tagged prefix + name + suffix. */
typedef struct tb_event {
  int validation;         /* in logs/validation/ (1) or logs/train/ (0) */
  const char *prefix;     /* "batch_", "epoch_" or "evaluation_" */
  const char *suffix;     /* "" or on_test_end's "_vs_iterations" */
  long step;              /* the epoch, _global_train_batch or optimizer.iterations */
  double wall_s;          /* simulated seconds */
  cb_logs logs;           /* the values, learning_rate last for a train epoch; names without val_ */
} tb_event;

/* A ModelCheckpoint save: a row of checkpoints.csv. */
typedef struct cb_save {
  long step, epoch, batch;/* the step that ended, its epoch and its batch in the epoch (0-based) */
  int epoch_level;        /* saved at the epoch's end (save_freq: epoch) */
  double value;           /* the monitored value (NaN when save_best_only is off) */
} cb_save;

struct cb_fit {
  const scenario *s;      /* the callbacks' arguments */
  const scn_callbacks *cb;/* s->cb */
  long steps, per_epoch;  /* the run's steps, an epoch's */
  /* the attempt's objects */
  long epoch;             /* the loss tracker's epoch (-1: none yet) */
  float loss_total;       /* its float32 total */
  float loss_count;       /* and count */
  long backup_epoch;      /* BackupAndRestore._current_epoch */
  batch_count backup_n;   /* its batch count */
  batch_count ckpt_n;     /* ModelCheckpoint's */
  int ckpt_has_best;      /* its best is not None */
  double ckpt_best;       /* its best */
  long wait;              /* EarlyStopping's wait */
  int es_has_best;        /* its best is not None */
  double es_best;         /* its best */
  long best_epoch;        /* its best_epoch */
  int has_best_weights;   /* its best_weights are not None */
  long global_batch;      /* TensorBoard's _global_train_batch */
  /* the last step's decisions */
  long step;              /* the step they are for (-1: none) */
  int saves;              /* CB_SAVE_* at the step's end */
  long resume;            /* with CB_SAVE_BACKUP: where a restart resumes */
  cb_logs logs;           /* the step's logs: the epoch's training logs at its end */
  double learning_rate;   /* the optimizer's after the step */
  int epoch_ended;        /* cb_epoch_end ran for the step */
  int epoch_saves;        /* CB_SAVE_* at its epoch's end */
  long epoch_resume;      /* with CB_SAVE_BACKUP there: where a restart resumes */
  int keep_best;          /* the step's weights become the best */
  int stop;               /* stop_training set */
  int raised;             /* TerminateOnNaN raised its RuntimeError */
  /* the run's record */
  long backups;           /* backups taken (double_checkpoint copies the previous one) */
  const char *stopped_by; /* the callback that stopped training, or NULL */
  long stopped_epoch;     /* the epoch it stopped in */
  cb_save *saves_at;      /* ModelCheckpoint's saves */
  long nsaves, cap_saves; /* their count, allocated */
  tb_event *events;       /* TensorBoard's events */
  long nevents, cap_events; /* their count, allocated */
};

int cb_logs_get(const cb_logs *l, const char *name, double *value) {
  for (int i = 0; i < l->n; i++)
    if (!strcmp(l->names[i], name)) return *value = l->values[i], 0;
  return -1;
}

cb_fit *cb_new(const scenario *s, long steps, long per_epoch) {
  const scn_callbacks *cb = &s->cb;
  if (!cb->backup && !cb->checkpoint && !cb->early && !cb->terminate_on_nan && !cb->tensorboard) return NULL;
  cb_fit *f = base_xcalloc(1, sizeof *f);
  *f = (cb_fit){ .s = s, .cb = cb, .steps = steps, .per_epoch = per_epoch > 0 ? per_epoch : steps };
  cb_attempt(f);
  return f;
}

void cb_free(cb_fit *f) {
  if (f == NULL) return;
  free(f->saves_at);
  free(f->events);
  free(f);
}

void cb_attempt(cb_fit *f) {
  if (f == NULL) return;
  f->epoch = -1;
  f->backup_epoch = 0;
  f->backup_n = (batch_count){ 0, 0 };
  f->ckpt_n = (batch_count){ -1, 0 };
  f->ckpt_has_best = f->es_has_best = f->has_best_weights = 0;
  f->wait = f->best_epoch = 0;
  f->global_batch = 0;
  f->step = -1;
}

/* _should_save_on_batch: batches since the last save, counted from the batch indices seen. */
static int batch_due(batch_count *c, long batch, long every) {
  c->since += c->last < 0 || batch <= c->last ? batch + 1 : batch - c->last;
  c->last = batch;
  if (c->since < every) return 0;
  c->since = 0;
  return 1;
}

/* MonitorCallback._is_improvement (reference None: always): monitor_op(value - min_delta, ref). */
static int improves(const scn_monitor *m, double min_delta, double value, int has_ref, double ref) {
  if (!has_ref) return 1;
  int less = m->mode == SCN_MODE_MIN || (m->mode == SCN_MODE_AUTO && m->metric < 0);
  return less ? value + fabs(min_delta) < ref : value - fabs(min_delta) > ref;
}

/* The logs of the step: the epoch's loss so far and the metrics' running values. */
static void make_logs(const cb_fit *f, const cb_batch *b, cb_logs *l) {
  l->n = 0;
  l->names[l->n] = "loss";
  l->values[l->n++] = f->loss_count > 0.0f ? (double)(f->loss_total / f->loss_count) : 0.0;
  for (int k = 0; k < f->s->nmetrics; k++) {
    l->names[l->n] = md_metric_name(f->s->metrics[k]);
    l->values[l->n++] = b->metrics ? (double)b->metrics[k] : NAN;
  }
}

static tb_event *add_event(cb_fit *f, int validation, const char *prefix, const char *suffix, long step,
                           sim_time now, const cb_logs *logs) {
  if (f->nevents == f->cap_events) {
    f->cap_events = f->cap_events ? 2 * f->cap_events : 16;
    f->events = base_xrealloc(f->events, (size_t)f->cap_events * sizeof *f->events);
  }
  tb_event *e = &f->events[f->nevents++];
  *e = (tb_event){ validation, prefix, suffix, step, sim_time_to_s(now), *logs };
  return e;
}

/* Validation's logs as the evaluation's writer tags them: val_ taken off. */
static cb_logs unprefixed(const cb_logs *val) {
  cb_logs l = *val;
  for (int i = 0; i < l.n; i++) l.names[i] += strlen("val_");
  return l;
}

/* ModelCheckpoint._save_model into *saves: with save_best_only, only a monitored value better than
** the best, or one the logs do not hold (Keras warns and saves). */
static void model_checkpoint(cb_fit *f, long step, const cb_logs *logs, int epoch_level, int *saves) {
  const scn_monitor *m = &f->cb->checkpoint_monitor;
  double value = NAN;
  if (f->cb->checkpoint_best_only) {
    if (cb_logs_get(logs, m->name, &value) == 0) {  /* the loader checked the name: always there */
      if (!improves(m, 0.0, value, f->ckpt_has_best, f->ckpt_best)) return;
      f->ckpt_best = value;
      f->ckpt_has_best = 1;
    }
  }
  *saves |= CB_SAVE_MODEL;
  if (f->nsaves == f->cap_saves) {
    f->cap_saves = f->cap_saves ? 2 * f->cap_saves : 16;
    f->saves_at = base_xrealloc(f->saves_at, (size_t)f->cap_saves * sizeof *f->saves_at);
  }
  f->saves_at[f->nsaves++] = (cb_save){ step, step / f->per_epoch, step % f->per_epoch, epoch_level, value };
}

/* A backup into *saves, a restart from it resuming at *resume. */
static void backup(cb_fit *f, int *saves, long *resume) {
  *saves |= CB_SAVE_BACKUP | (f->cb->backup_double && f->backups > 0 ? CB_SAVE_COPY : 0);
  *resume = f->backup_epoch * f->per_epoch;
  f->backups++;
}

/* stop_training = True; the first callback to set it is the one summary.json names (TerminateOnNaN's
** stop still runs the epoch's end, where EarlyStopping may set it again). */
static void stop(cb_fit *f, const char *by, long epoch) {
  f->stop = 1;
  if (f->stopped_by) return;
  f->stopped_by = by;
  f->stopped_epoch = epoch;
}

/* EarlyStopping.on_epoch_end. */
static void early_stopping(cb_fit *f, long epoch, const cb_logs *logs) {
  const scn_callbacks *cb = f->cb;
  double current;
  if (cb_logs_get(logs, cb->early_monitor.name, &current) != 0 || epoch < cb->early_start_from_epoch) return;
  if (cb->early_restore_best && !f->has_best_weights) {
    f->keep_best = f->has_best_weights = 1;
    f->best_epoch = epoch;
  }
  f->wait++;
  if (improves(&cb->early_monitor, cb->early_min_delta, current, f->es_has_best, f->es_best)) {
    f->es_best = current;
    f->es_has_best = 1;
    f->best_epoch = epoch;
    if (cb->early_restore_best) f->keep_best = 1;
    /* Only restart wait if we beat both the baseline and our previous best. */
    if (!cb->early_has_baseline || improves(&cb->early_monitor, cb->early_min_delta, current, 1, cb->early_baseline))
      f->wait = 0;
    return;
  }
  if (f->wait >= cb->early_patience && epoch > 0) stop(f, "early_stopping", epoch);
}

void cb_batch_end(cb_fit *f, const cb_batch *b) {
  const scn_callbacks *cb = f->cb;
  long epoch = b->step / f->per_epoch, batch = b->step % f->per_epoch;
  if (epoch != f->epoch) {  /* reset_metrics at the epoch's start */
    f->epoch = epoch;
    f->loss_total = f->loss_count = 0.0f;
  }
  f->loss_total += (float)b->loss_sum;
  f->loss_count += (float)b->examples;
  f->step = b->step;
  f->saves = f->epoch_saves = f->epoch_ended = f->keep_best = f->stop = f->raised = 0;
  f->learning_rate = b->learning_rate;
  cb_logs logs;
  make_logs(f, b, &logs);
  f->logs = logs;
  if (b->execution_end) {  /* on_train_batch_end, in the callbacks' order */
    if (cb->backup && cb->backup_every > 0 && batch_due(&f->backup_n, batch, cb->backup_every)) backup(f, &f->saves, &f->resume);
    if (cb->checkpoint && cb->checkpoint_every > 0 && batch_due(&f->ckpt_n, batch, cb->checkpoint_every))
      model_checkpoint(f, b->step, &logs, 0, &f->saves);
    f->global_batch++;
    if (cb->tensorboard && cb->tb_update_freq > 0 && f->global_batch % cb->tb_update_freq == 0)
      add_event(f, 0, "batch_", "", f->global_batch, b->now, &logs);
    if (cb->terminate_on_nan && !isfinite(logs.values[0])) {
      if (cb->nan_raise) f->raised = 1;
      else stop(f, "terminate_on_nan", epoch);
    }
  }
}

int cb_raised(const cb_fit *f, long step, char *msg, size_t len) {
  if (f == NULL || f->step != step || !f->raised) return 0;
  double loss = f->logs.values[0];  /* Python prints a float's NaN and infinities so */
  base_format(msg, len, "NaN or Inf loss encountered at batch %ld. Loss value: %s. Terminating training immediately.",
              step % f->per_epoch, isnan(loss) ? "nan" : loss > 0 ? "inf" : "-inf");
  return 1;
}

int cb_epoch_due(const cb_fit *f, long step) {
  /* The epoch's last step, or the step after which training stops (fit breaks out of the epoch's
  ** loop and still evaluates and ends the epoch). */
  return f != NULL && f->step == step &&
         (step % f->per_epoch == f->per_epoch - 1 || step == f->steps - 1 || f->stop);
}

void cb_epoch_end(cb_fit *f, long step, const cb_logs *val, long iterations, sim_time now) {
  if (f == NULL || f->step != step || f->epoch_ended) return;
  const scn_callbacks *cb = f->cb;
  long epoch = step / f->per_epoch;
  f->epoch_ended = 1;
  cb_logs logs = f->logs;  /* epoch_logs: the training logs, then validation's */
  for (int i = 0; val && i < val->n && logs.n < CB_MAX_LOGS; i++) {
    logs.names[logs.n] = val->names[i];
    logs.values[logs.n++] = val->values[i];
  }
  if (cb->tensorboard && val && val->n > 0) {  /* evaluate's on_test_end, before on_epoch_end */
    cb_logs plain = unprefixed(val);
    add_event(f, 1, "evaluation_", "_vs_iterations", iterations, now, &plain);
  }
  if (cb->backup) {
    f->backup_epoch = epoch + 1;
    f->backup_n.last = 0;
    if (cb->backup_every == 0) backup(f, &f->epoch_saves, &f->epoch_resume);
  }
  if (cb->checkpoint && cb->checkpoint_every == 0) model_checkpoint(f, step, &logs, 1, &f->epoch_saves);
  if (cb->early) early_stopping(f, epoch, &logs);
  if (cb->tensorboard) {  /* _log_epoch_metrics: train's with learning_rate, then validation's */
    tb_event *e = add_event(f, 0, "epoch_", "", epoch, now, &f->logs);
    e->logs.names[e->logs.n] = "learning_rate";
    e->logs.values[e->logs.n++] = f->learning_rate;
    if (val && val->n > 0) {
      cb_logs plain = unprefixed(val);
      add_event(f, 1, "epoch_", "", epoch, now, &plain);
    }
  }
}

int cb_saves(const cb_fit *f, long step, int epoch_end, long *resume) {
  if (f == NULL || f->step != step) return 0;
  int saves = epoch_end ? f->epoch_saves : f->saves;
  if (saves & CB_SAVE_BACKUP) *resume = epoch_end ? f->epoch_resume : f->resume;
  return saves;
}

int cb_keep_best(const cb_fit *f, long step) { return f != NULL && f->step == step && f->keep_best; }

int cb_stop(const cb_fit *f, long step) { return f != NULL && f->step == step && f->stop; }

const char *cb_stopped_by(const cb_fit *f, long *epoch) {
  if (f == NULL || f->stopped_by == NULL) return NULL;
  *epoch = f->stopped_epoch;
  return f->stopped_by;
}

int cb_restores_best(const cb_fit *f) { return f != NULL && f->cb->early_restore_best && f->has_best_weights; }

long cb_best_epoch(const cb_fit *f) { return f ? f->best_epoch : 0; }

int cb_write_checkpoints(const void *ctx, const char *path) {
  const cb_fit *f = ctx;
  FILE *out = fopen(path, "w");
  if (out == NULL) return -1;
  fprintf(out, "step,epoch,batch,save_freq,%s\n", f->cb->checkpoint_best_only ? f->cb->checkpoint_monitor.name : "monitor");
  for (long i = 0; i < f->nsaves; i++) {
    const cb_save *v = &f->saves_at[i];
    fprintf(out, "%ld,%ld,%ld,%s,", v->step, v->epoch, v->batch, v->epoch_level ? "epoch" : "batch");
    if (f->cb->checkpoint_best_only) fprintf(out, "%.9g", v->value);
    fputc('\n', out);
  }
  int bad = ferror(out);
  return fclose(out) != 0 || bad ? -1 : 0;
}

/* The events of one writer (validation or train) into logs/NAME. 0, or -1 with msg. */
static int write_events(const cb_fit *f, int validation, const char *logs, const char *name, char *msg, size_t len) {
  char path[4096 + 32];
  tfev_writer *w = tfev_open(outputs_path(path, sizeof path, logs, name), 0.0, "podsim", msg, len);
  if (w == NULL) return -1;
  char tags[CB_MAX_LOGS + 1][80];
  tfev_scalar v[CB_MAX_LOGS + 1];
  int bad = 0;
  for (long i = 0; !bad && i < f->nevents; i++) {
    const tb_event *e = &f->events[i];
    if (e->validation != validation) continue;
    for (int k = 0; k < e->logs.n; k++) {
      base_format(tags[k], sizeof tags[k], "%s%s%s", e->prefix, e->logs.names[k], e->suffix);
      v[k] = (tfev_scalar){ tags[k], e->logs.values[k] };
    }
    bad = tfev_write_scalars(w, e->step, e->wall_s, v, e->logs.n) != 0;
  }
  if (tfev_close(w) != 0) bad = 1;
  if (bad) base_format(msg, len, "%s: cannot write an event file: %s", path, strerror(errno));
  return bad ? -1 : 0;
}

int cb_write_tensorboard(const cb_fit *f, const char *dir, char *msg, size_t len) {
  char logs[4096 + 16];
  if (f == NULL || !f->cb->tensorboard) return 0;
  outputs_path(logs, sizeof logs, dir, "logs");
  int validates = 0;
  for (long i = 0; i < f->nevents; i++) validates |= f->events[i].validation;
  if (write_events(f, 0, logs, "train", msg, len) != 0) return -1;
  return validates ? write_events(f, 1, logs, "validation", msg, len) : 0;
}
