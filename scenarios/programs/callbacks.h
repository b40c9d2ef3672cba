/*
** callbacks.h: training.callbacks as Keras 3 runs them in Model.fit (cb_): BackupAndRestore,
** ModelCheckpoint, EarlyStopping, TerminateOnNaN and TensorBoard, each with the rules of its
** keras/src/callbacks/ (Keras 3.15, the version tests/python's oracle has).
**
** The program hands every step's results over once, at the step's all-reduce, when every
** replica's loss and metric counts are known (cb_batch_end), and at an epoch's end, after the
** epoch's evaluation, its validation logs (cb_epoch_end), as Keras's fit calls on_epoch_end with
** epoch_logs that hold val_*; it asks what follows: the saves it writes at the step's end and at
** the epoch's (cb_saves), whether it keeps the weights as the best so far (cb_keep_best) and
** whether training stops (cb_stop). Decisions are made once per step and read
** by every replica alike, so the replicas stop at the same step.
**
** As in Keras, batch-level callbacks run at each execution's end (steps_per_execution steps, or
** fewer at an epoch's end), epoch-level ones at each epoch's end. A restarted job is a new process:
** its callbacks are new objects (cb_attempt): counters, EarlyStopping's wait and best, the loss
** tracker and TensorBoard's batch count start again, which is what Keras does.
*/
#ifndef PODSIM_CALLBACKS_H
#define PODSIM_CALLBACKS_H

#include <stddef.h>

#include "scenarios/config/scenario.h"
#include "sim/sim.h"

/* cb_saves' bits: the backup restarts read, the copy double_checkpoint makes of the previous
** one, and a ModelCheckpoint save (nothing reads it back). */
enum { CB_SAVE_BACKUP = 1, CB_SAVE_COPY = 2, CB_SAVE_MODEL = 4 };

/* The logs Keras hands a callback: names and values (the loss, each compiled metric, and at an
** evaluated epoch's end validation's val_loss and val_<metric>). */
#define CB_MAX_LOGS (2 + 2 * MD_METRIC_KIND_COUNT)
typedef struct cb_logs {
  int n;                            /* entries */
  const char *names[CB_MAX_LOGS];   /* "loss", then the metrics in training.metrics' order */
  double values[CB_MAX_LOGS];       /* float32 values as Python floats */
} cb_logs;
/* logs.get(name): 0 with *value, or -1 when the logs hold none. */
int cb_logs_get(const cb_logs *l, const char *name, double *value);

/* What a step's all-reduce knows of it. */
typedef struct cb_batch {
  long step;               /* the step (0-based over the run) */
  double loss_sum;         /* the replicas' summed example losses */
  int examples;            /* the step's examples */
  const float *metrics;    /* the compiled metrics' running values (training.metrics' order) */
  double learning_rate;    /* the optimizer's learning_rate after the step's update */
  int execution_end;       /* the step ends an execution (on_train_batch_end runs) */
  sim_time now;            /* when: the events' wall time */
} cb_batch;

typedef struct cb_fit cb_fit;

/* NULL when the scenario has no callbacks. per_epoch: steps per epoch (the run's steps with
** training.steps, one epoch as Keras's fit(steps_per_epoch=) has). */
cb_fit     *cb_new(const scenario *s, long steps, long per_epoch);
void        cb_free(cb_fit *f);
/* A new attempt (the first, or a restart) starts: new callback objects, which know nothing of
** where the job resumes. NULL: nothing. */
void        cb_attempt(cb_fit *f);
/* The step's results, once per step and attempt: the batch-level callbacks (on_train_batch_end at
** an execution's end). */
void        cb_batch_end(cb_fit *f, const cb_batch *b);
/* TerminateOnNaN(raise_error=True) raised at `step`: 1 with Keras's RuntimeError message. */
int         cb_raised(const cb_fit *f, long step, char *msg, size_t len);
/* Whether `step`, the last handed to cb_batch_end, ends an epoch: its last step, the run's, or
** one after which a callback stopped training (fit still evaluates and ends that epoch). */
int         cb_epoch_due(const cb_fit *f, long step);
/* on_epoch_end for the epoch `step` ends (cb_epoch_due), once, after the epoch's evaluation:
** val holds validation's val_* logs (NULL or none when the epoch is not evaluated); iterations
** is optimizer.iterations, the step of evaluate's on_test_end scalars; now the events' time. */
void        cb_epoch_end(cb_fit *f, long step, const cb_logs *val, long iterations, sim_time now);
/* The saves at the end of `step` (epoch_end 0) or of its epoch (1, after cb_epoch_end), CB_SAVE_*
** bits; with CB_SAVE_BACKUP, *resume is the step a restart from it starts at. */
int         cb_saves(const cb_fit *f, long step, int epoch_end, long *resume);
/* EarlyStopping(restore_best_weights): the weights at the end of `step` become the best. */
int         cb_keep_best(const cb_fit *f, long step);
/* Training stops once `step` ends (a callback set stop_training). */
int         cb_stop(const cb_fit *f, long step);
/* The callback that stopped training ("early_stopping", "terminate_on_nan") or NULL, and the epoch
** (0-based) EarlyStopping's stopped_epoch or TerminateOnNaN's step's epoch holds. */
const char *cb_stopped_by(const cb_fit *f, long *epoch);
/* Whether the best weights were kept and are what training ends with (on_train_end). */
int         cb_restores_best(const cb_fit *f);
/* The last attempt's best epoch (EarlyStopping's best_epoch). */
long        cb_best_epoch(const cb_fit *f);

/* checkpoints.csv: a row per ModelCheckpoint save (epoch, batch, step, monitor, value). 0 or -1. */
int         cb_write_checkpoints(const void *f, const char *path);
/* The TensorBoard callback's events under DIR/logs: train/, and validation/ when epochs were
** evaluated. 0, or -1 with msg. */
int         cb_write_tensorboard(const cb_fit *f, const char *dir, char *msg, size_t len);

#endif
