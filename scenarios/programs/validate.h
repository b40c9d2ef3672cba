/*
** validate.h: Keras fit's validation in the sync program (val_): the held-out rows
** (training.validation_split or validation_data), the evaluation after each due epoch as
** test_step runs it under the strategy, and history.csv, keras.callbacks.History's epoch logs.
**
** An evaluation, as Keras 3's fit runs evaluate() at the end of an epoch: every replica runs the
** forward pass (inference: dropout off, batch normalisation on its moving statistics) on its
** shard of each validation batch, distributed as the training batches are (the same input plan,
** without shuffle, one pass or validation_steps batches of validation_batch_size), and updates
** its own state: the loss tracker (the sum of the per-example losses and their count: Keras's
** Mean over batch losses weighted by batch size) and each compiled metric's state variables,
** all reset at the evaluation's start. Simulated time: each batch's forward kernels of the
** compiled step (compile/) on the replica's device, a host round trip per steps_per_execution
** batches on a TF2 TPU, then one all-reduce of the state (TF reads SyncOnRead SUM variables as
** their sum over the replicas). The validation input pipeline is not charged: its batches are
** taken as ready. val_loss = total / count, val_<metric> the metric's result of the summed state.
**
** Modes evaluate and predict (scenario `mode`) are the same evaluation once, before any step,
** over the whole dataset from the initial weights: Model.evaluate's loss and metrics, or
** Model.predict's outputs, each replica writing its shard's rows.
*/
#ifndef PODSIM_VALIDATE_H
#define PODSIM_VALIDATE_H

#include <stdio.h>

#include "scenarios/programs/callbacks.h"
#include "scenarios/programs/trainSync.h"

typedef struct val_run val_run;

/* The validation rows of in->s after train_load_data: validation_split's last rows (in->data
** keeps the first ones), or validation_data's CSV read with the dataset's columns. *out NULL
** without validation. TR_EXIT_OK, or TR_EXIT_INPUT with err. */
int  val_load(train_input *in, const md_model *m, val_run **out, scn_error *err);
/* The evaluation's batches under t's strategy, once t has its replicas and programs.
** TR_EXIT_OK, or TR_EXIT_INPUT with err (the strategy refused the input). */
int  val_plan(val_run *v, trainer *t, scn_error *err);
void val_free(val_run *v);
/* Whether the epoch `step` ends is one validation_freq evaluates after. */
int  val_due(const val_run *v, const trainer *t, long step);
/* Replica rep's part of the evaluation after `step` (val_due): its forward passes, the
** all-reduce of the state, and on replica 0 the epoch's val_ logs. SIM_OK or the actor's stop. */
int  val_evaluate(val_run *v, trainer *t, replica *rep, sim_actor *self, long step);
/* The val_ logs of the evaluation after `step` (val_due, val_evaluate): val_loss, then
** val_<metric> in training.metrics' order, as fit adds them to the epoch's logs. */
void val_logs(const val_run *v, const trainer *t, long step, cb_logs *out);
/* Keras's _should_eval: whether fit evaluates after the 1-based `epoch` (validation_freq: every
** N epochs, or the listed ones). */
int  val_should_eval(const scenario *s, long epoch);
/* An evaluation's logs from its summed state (loss total, example count, then each metric's
** state, kinds[k]'s): out[0] val_loss (0 over no example), out[1 + k] metric k; NaN without
** values. */
void val_state_logs(const md_metric_kind *kinds, int nmetrics, int values, const float *state, double *out);
/* history.csv's header: epoch, loss and the metrics, then with validation their val_ columns. */
void val_history_header(FILE *f, const scenario *s, int validates);
/* A history.csv row: the epoch, train's loss and metrics (1 + nmetrics values), then with
** validation val's (empty cells when val is NULL: an epoch not evaluated). */
void val_history_row(FILE *f, long epoch, int nmetrics, const double *train, int validates, const double *val);
/* history.csv into dir from the run's rows (t->rows) and the evaluations: a row per epoch that
** ended. 0, or -1 with errno. */
int  val_write_history(const val_run *v, const trainer *t, const char *path);
/* The loss chart's val_loss line: at most max points (x the step that ended each evaluated
** epoch, y its val_loss), none with numerics off or without validation. */
size_t val_points(const val_run *v, const trainer *t, double *x, double *y, size_t max);
/* Mode evaluate: summary.json's `evaluate` figures into sum, and the text run_hash covers into
** figures (len bytes; "" in other modes). */
void val_summarise(const val_run *v, const trainer *t, run_summary *sum, char *figures, size_t len);
/* Mode predict: predictions.csv, `row,output_0,...`, a row per example predicted, in the dataset's
** row order, each output to read back as the same float32 (header only with numerics off). 0, or
** -1 with errno. */
int  val_write_predictions(const val_run *v, const char *path);
/* The validation rows val_load found, for a program that evaluates them its own way (the
** parameter-server fit's exact evaluation): their dataset, the first row and how many. */
void val_rows(const val_run *v, const md_dataset **data, size_t *first, size_t *rows);

#endif
