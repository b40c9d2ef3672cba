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
**
** Validation (validation_split or validation_data, after the epochs validation_freq names) is
** Keras 2.12's exact evaluation, compile(pss_evaluation_shards=S) ("auto": 5 per worker, as
** tf_keras's _infer_exact_eval_shards): evaluate() schedules S closures, shard_test_function
** over shard i of the validation dataset (batched by validation_batch_size, in order, no
** shuffle; auto_shard_dataset's DATA sharding of its batches: batch b goes to shard b mod S),
** then joins. A shard's closure reads the dense variables once (cache_variable_reads; a
** table's lookups are sparse_read, not cached: each batch gathers its rows), runs the forward
** pass of each of its batches on the worker's CPU and updates its own
** copies of the loss tracker and metrics (with_metric_local_vars_scope), which it returns; the
** chief sums the S states (_aggregate_exact_metrics) into val_loss and val_<metric>. A shard cut
** short by a preemption runs again from its first batch with fresh state: every validation
** example is counted exactly once, whatever fails.
**
** BackupAndRestore (save_freq epoch) is ps_train.c's checkpoint at each epoch's join, after the
** evaluation; a restarted chief resumes at the epoch after it.
*/
#ifndef PODSIM_PS_FIT_H
#define PODSIM_PS_FIT_H

#include "models/metric.h"
#include "scenarios/programs/trainInt.h"

typedef struct psfit psfit;

/* The fit of in->s (its metrics resolved against model m's outputs), after train_load_data: the
** validation rows are taken (validation_split's from in->data). TR_EXIT_OK or TR_EXIT_INPUT
** with err (validation_data's CSV). */
int    psfit_new(train_input *in, const md_model *m, psfit **out, scn_error *err);
/* Its state for nworkers workers, before the first closure runs. */
void   psfit_start(psfit *f, int nworkers);
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
/* The chief's join at the end of epoch `epoch` (0-based), with `applied` updates applied so far:
** History's row is fetched. */
void   psfit_epoch_done(psfit *f, long epoch, long applied);
/* The shards evaluated after epoch `epoch` (0-based) ends: 0 when none is due. */
int    psfit_val_shards(const psfit *f, long epoch);
/* A shard's closure begins: its state is zeroed. */
void   psfit_val_begin(psfit *f, int shard);
/* Batch k of shard `shard` for worker `worker`: *batch its values (its size alone with numerics
** off), *rows its row indices in psfit_val_data. 0 when the shard has no batch k. */
int    psfit_val_batch(psfit *f, int worker, int shard, long k, md_batch *batch, const int64_t **rows);
/* The validation rows' dataset. */
const md_dataset *psfit_val_data(const psfit *f);
/* That batch's forward pass on model m (ws its workspace): its cost added to *cost, its loss and
** metric counts to the shard's state. */
void   psfit_val_forward(psfit *f, int shard, md_model *m, md_workspace *ws, const md_batch *batch, md_cost *cost);
/* The chief's join after the evaluation of epoch `epoch`: the shards' states summed, its val_
** logs. */
void   psfit_val_done(psfit *f, long epoch);
/* history.csv: a row per epoch the fit ended (epoch, loss, each metric, and with validation
** val_loss and each val_ metric, empty on epochs not evaluated), as keras.callbacks.History
** holds them. ctx: the psfit. 0 or -1 (errno). */
int    psfit_write_history(const void *ctx, const char *path);
/* The loss chart's val_loss points: each evaluated epoch's val_loss (y) at the updates applied
** when its join ended it (x, the chart's axis), at most max of them. */
size_t psfit_val_points(const psfit *f, double *x, double *y, size_t max);

#endif
