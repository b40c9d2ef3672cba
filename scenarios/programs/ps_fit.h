/*
** ps_fit.h: Keras 2's Model.fit under ParameterServerStrategy, what ps_train.c's chief and
** closures add to the custom loop (psfit_).
**
** TF 2.x's tf_keras (keras/engine/training.py, data_adapter.py; the tutorial "Parameter server
** training with ParameterServerStrategy", section "Training with Model.fit"):
**
**   with strategy.scope(): model.compile(optimizer, loss, metrics, steps_per_execution=N)
**   model.fit(dataset, epochs=E, steps_per_epoch=S)
**     -> a ClusterCoordinator; the dataset made per worker (DatasetCreator) once per fit, its
**        iterators kept across epochs (DatasetCreatorAdapter.should_recreate_iterator: False)
**     -> for each epoch: reset_metrics(); for each execution (N steps, the last of an epoch the
**        steps left: DataHandler.steps): coordinator.schedule(train_function, (iterator,))
**        train_function runs N train_steps in one closure on one worker;
**        at the epoch's end data_handler.sync() is coordinator.join(), then the last closure's
**        logs are fetched (coordinator.fetch) for the callbacks and History.
**
** The metrics' variables (and the loss tracker, a Mean) are created under strategy.scope(): they
** live on the ps tasks, and every step's update_state adds its batch's counts to them whichever
** worker runs it, so the epoch's values are over every step applied in the epoch (SUM, in any
** order: a deterministic result). podsim adds a step's counts when its gradients are applied
** (the metrics' assign_add travels with them; a few floats, not charged), and reads the state at
** each step's row (metrics.csv) and at the epoch's join (history.csv). A closure a preemption
** cuts short runs again whole: its steps applied before are applied, and counted, twice, as in
** TF. A restarted chief is a new process: its metrics start from zero.
*/
#ifndef PODSIM_PS_FIT_H
#define PODSIM_PS_FIT_H

#include "models/metric.h"
#include "scenarios/report/report.h"

typedef struct psfit psfit;

/* The fit of scenario s (its metrics resolved against model m's outputs) for nworkers workers. */
psfit *psfit_new(const scenario *s, const md_model *m, int nworkers);
void   psfit_free(psfit *f);
/* The end (exclusive) of the execution that starts at `step` of a run of `steps`: N steps, fewer
** at an epoch's end or the run's. */
long   psfit_execution_end(const scenario *s, long step, long steps);
/* 1 when `end` (exclusive) closes an epoch of a fit (epochs with steps_per_epoch). */
int    psfit_epoch_ends(const scenario *s, long end);
/* A worker's update_state over its batch b: pred holds its n x outputs predictions. Kept on the
** worker until its push is applied (psfit_applied). */
void   psfit_update(psfit *f, int worker, const float *pred, int outputs, const md_batch *b);
/* Step `step` of chief attempt `attempt`, run by `worker`, has been applied: its loss (the
** batch's mean, weighted by its n examples) and metric counts join the epoch's, and rec->metrics
** get the state's results (NaN with numerics off). */
void   psfit_applied(psfit *f, int worker, long step, int attempt, step_record *rec);
/* The chief's join at the end of epoch `epoch` (0-based): History's row is fetched. */
void   psfit_epoch_done(psfit *f, long epoch);
/* history.csv: a row per epoch the fit ended (epoch, loss, each metric), as keras.callbacks.History
** holds them. ctx: the psfit. 0 or -1 (errno). */
int    psfit_write_history(const void *ctx, const char *path);

#endif
