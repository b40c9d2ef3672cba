/*
** test_callbacks.c: training.callbacks (scenarios/programs/callbacks.h), with Keras's own tests
** ported: keras/src/callbacks/early_stopping_test.py, backup_and_restore_test.py and
** terminate_on_nan_test.py (Keras 3.15.1). EarlyStopping's cases drive the callbacks with an
** epoch's loss per step as Keras's tests drive on_epoch_end; the rest run whole fits of
** tests/data/callbacks/mwms.yaml (10 examples, batch 4: steps of 4, 4 and 2 examples, 3 per
** epoch, two MultiWorkerMirrored workers) with faults, as Keras's tests interrupt fit.
*/
#include "tests/testutil.h"

#include <math.h>

#include "scenarios/programs/callbacks.h"
#include "scenarios/programs/train.h"

/* ---- EarlyStopping on_epoch_end, one epoch a step ----------------------------------------- */

/* The epochs an EarlyStopping on `loss` runs through the losses (one step an epoch), its
** stopped_epoch (-1: never stopped) and the epochs whose weights it kept as the best. */
typedef struct es_run { long epochs, stopped, kept[16]; int nkept; } es_run;

static es_run early_stop_from(long start, long patience, double min_delta, int has_baseline, double baseline,
                              int restore, const double *losses, int n) {
  static scenario s;
  memset(&s, 0, sizeof s);
  s.cb.early = 1;
  snprintf(s.cb.early_monitor.name, sizeof s.cb.early_monitor.name, "loss");
  s.cb.early_monitor.metric = -1;
  s.cb.early_patience = patience;
  s.cb.early_min_delta = min_delta;
  s.cb.early_start_from_epoch = start;
  s.cb.early_has_baseline = has_baseline;
  s.cb.early_baseline = baseline;
  s.cb.early_restore_best = restore;
  cb_fit *f = cb_new(&s, n, 1);
  es_run r = { 0, -1, {0}, 0 };
  for (long e = 0; e < n; e++) {
    /* An example of loss losses[e]: the epoch's tracker reads it back as float32. */
    cb_batch b = { e, losses[e], 1, NULL, 0.01, 1, 0 };
    cb_batch_end(f, &b);
    assert_true(cb_epoch_due(f, e));
    cb_epoch_end(f, e, NULL, e + 1, 0);
    r.epochs++;
    if (cb_keep_best(f, e)) r.kept[r.nkept++] = e;
    if (cb_stop(f, e)) {
      long epoch;
      assert_string_equal(cb_stopped_by(f, &epoch), "early_stopping");
      r.stopped = epoch;
      break;
    }
  }
  cb_free(f);
  return r;
}

static es_run early_stop_delta(long patience, double min_delta, int has_baseline, double baseline, int restore,
                               const double *losses, int n) {
  return early_stop_from(0, patience, min_delta, has_baseline, baseline, restore, losses, n);
}

static es_run early_stop(long patience, int has_baseline, double baseline, int restore, const double *losses, int n) {
  return early_stop_delta(patience, 0.0, has_baseline, baseline, restore, losses, n);
}

/* monitor_op is strict (ops.less): an equal loss is no improvement, so with patience 1 epoch 1
** (1.0 again) stops; and `min_delta` 0.1 asks for more than 0.05 less: 0.95 after 1.0 is none
** either (0.95 + 0.1 < 1.0 is false); -0.1 counts as 0.1 (Keras keeps abs(min_delta)). */
static void early_stopping_needs_a_strict_improvement(void **state) {
  (void)state;
  const double flat[] = {1.0, 1.0, 1.0}, slow[] = {1.0, 0.95, 0.9, 0.85};
  assert_int_equal(early_stop(1, 0, 0, 0, flat, 3).stopped, 1);
  assert_int_equal(early_stop_delta(1, 0.1, 0, 0, 0, slow, 4).stopped, 1);
  assert_int_equal(early_stop_delta(1, -0.1, 0, 0, 0, slow, 4).stopped, 1);
  assert_int_equal(early_stop_delta(1, 0.01, 0, 0, 0, slow, 4).stopped, -1);
}

/* test_early_stopping_with_start_from_epoch: at least patience + start_from_epoch epochs. On a flat
** loss, epochs 0 and 1 are not monitored, epoch 2 is the first value (an improvement on None), and
** patience 3 stops at epoch 5 (6 epochs), patience 0 at epoch 3 (4 epochs >= 2). */
static void early_stopping_start_from_epoch(void **state) {
  (void)state;
  const double flat[] = {1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0};
  assert_int_equal(early_stop_from(2, 3, 0.0, 0, 0, 0, flat, 8).stopped, 5);
  assert_int_equal(early_stop_from(2, 0, 0.0, 0, 0, 0, flat, 8).stopped, 3);
}

/* test_early_stopping_patience: losses 10, 9, 8, 9, 8.9, ... stop at max(patience, 1) + 2. With
** patience 0 epoch 3 (9 > 8) is the first without improvement and wait 1 >= 0 stops it; with 1
** the same; with 2, epochs 3 and 4 (8.9 > 8) wait 2; with 3, epoch 5 (8.8) the third. */
static void early_stopping_patience(void **state) {
  (void)state;
  const double losses[] = {10.0, 9.0, 8.0, 9.0, 8.9, 8.8, 8.7, 8.6, 8.5};
  for (long patience = 0; patience <= 3; patience++) {
    es_run r = early_stop(patience, 0, 0, 0, losses, 9);
    assert_int_equal(r.stopped, (patience > 1 ? patience : 1) + 2);
    assert_int_equal(r.epochs, r.stopped + 1);
  }
}

/* test_early_stopping_final_weights_when_restoring_model_weights, case 1: losses 0.2, 0.15, 0.1,
** 0.11, 0.12 with patience 2: epochs 3 and 4 do not improve on 0.1, epoch 4 stops, and the weights
** kept last are epoch 2's (kept at 0, 1, 2: each an improvement). */
static void early_stopping_restores_best(void **state) {
  (void)state;
  const double losses[] = {0.2, 0.15, 0.1, 0.11, 0.12};
  es_run r = early_stop(2, 0, 0, 1, losses, 5);
  assert_int_equal(r.stopped, 4);
  assert_int_equal(r.nkept, 3);
  assert_int_equal(r.kept[2], 2);
}

/* Case 2: baseline 0.5, patience 5, losses 0.9, 0.8, 0.7, 0.71, 0.72, 0.73: no epoch beats the
** baseline, so wait is never reset: 5 epochs trained (stopped at epoch 4), the best epoch 2's. */
static void early_stopping_baseline(void **state) {
  (void)state;
  const double losses[] = {0.9, 0.8, 0.7, 0.71, 0.72, 0.73};
  es_run r = early_stop(5, 1, 0.5, 1, losses, 6);
  assert_int_equal(r.epochs, 5);
  assert_int_equal(r.stopped, 4);
  assert_int_equal(r.kept[r.nkept - 1], 2);
}

/* ---- whole fits ---------------------------------------------------------------------------- */

enum { MAX_ROWS = 256 };

typedef struct fit {
  int rc;                 /* train_run's exit status */
  run_summary sum;        /* what it reported */
  int n;                  /* rows of metrics.csv */
  double step[MAX_ROWS];  /* their steps */
  char weights[1 << 14];  /* final_weights.csv */
  char checkpoints[4096]; /* checkpoints.csv ("" without) */
} fit;

static void slurp(const char *path, char *buf, size_t len) {
  FILE *f = fopen(path, "r");
  buf[0] = 0;
  if (f == NULL) return;
  size_t n = fread(buf, 1, len - 1, f);
  buf[n] = 0;
  fclose(f);
}

/* The fit of mwms.yaml with `sets`, which ends with exit status `rc`. */
static void run_fit_ending(fit *r, const char *const *sets, int nsets, int rc) {
  static scenario s;
  scn_error err;
  memset(r, 0, sizeof *r);
  if (scenario_load(tu_src("tests/data/callbacks/mwms.yaml"), sets, nsets, &s, &err) != 0) fail_msg("%s", err.msg);
  char *dir = tu_temp_dir("podsim-callbacks"), path[256];
  r->rc = train_run(&s, dir, &r->sum, &err);
  assert_int_equal(r->rc, rc);
  snprintf(path, sizeof path, "%s/metrics.csv", dir);
  r->n = tu_read_column(path, 0, r->step, MAX_ROWS, NULL);
  snprintf(path, sizeof path, "%s/final_weights.csv", dir);
  slurp(path, r->weights, sizeof r->weights);
  snprintf(path, sizeof path, "%s/checkpoints.csv", dir);
  slurp(path, r->checkpoints, sizeof r->checkpoints);
  tu_remove_dir(dir);
}

static void run_fit(fit *r, const char *const *sets, int nsets) { run_fit_ending(r, sets, nsets, TR_EXIT_OK); }

/* test_best_case_step: BackupAndRestore(save_freq=1), fit interrupted after 2 batches of epoch 0
** (here: worker 1 preempted as step 2 starts), then fit again for 5 epochs: Keras restores epoch 0
** alone (_current_epoch was 0 at both backups) and runs all 5 epochs on the backed-up weights: the
** canary layer counts 2 + 5 x 3 = 17 forward passes, here 17 rows, the 2 first redone
** (lost_steps 2), and 2 + 15 backups. */
static void backup_every_batch_resumes_at_the_epoch(void **state) {
  (void)state;
  const char *sets[] = {"training.callbacks=[{backup_and_restore: {save_freq: 1}}]",
                        "faults=[{kind: preempt, target: \"worker:1\", at_step: 2}]"};
  fit r;
  run_fit(&r, sets, 2);
  assert_int_equal(r.n, 17);
  assert_int_equal(r.sum.restarts, 1);
  assert_int_equal(r.sum.lost_steps, 2);
  assert_int_equal(r.sum.checkpoints, 17);
  assert_int_equal((long)r.step[2], 0);  /* the restart's first step: epoch 0's first */
  assert_int_equal(r.sum.steps_completed, 15);
}

/* test_best_case_epoch: BackupAndRestore(save_freq="epoch"), interrupted at the end of epoch 1
** (step 6 starts epoch 2): _current_epoch 2, 6 passes; the new fit runs epochs 2..4: 6 + 9 = 15
** rows, nothing redone, 5 backups; and the weights are the uninterrupted fit's to the bit. */
static void backup_every_epoch_resumes_exactly(void **state) {
  (void)state;
  const char *sets[] = {"training.callbacks=[backup_and_restore]",
                        "faults=[{kind: preempt, target: \"worker:1\", at_step: 6}]"};
  static fit r, base;
  run_fit(&r, sets, 2);
  run_fit(&base, sets, 1);
  assert_int_equal(r.n, 15);
  assert_int_equal(r.sum.restarts, 1);
  assert_int_equal(r.sum.lost_steps, 0);
  assert_int_equal(r.sum.checkpoints, 5);
  assert_int_equal(base.sum.restarts, 0);
  assert_string_equal(r.weights, base.weights);
}

/* The case: preempted mid-epoch (step 7 starts, epoch 2's second batch): the job resumes
** at epoch 2's backup, step 6, redoes it (lost_steps 1, 16 rows) and ends with the uninterrupted
** fit's weights bit for bit; the restart, the backup's read and the recompile cost time. */
static void preempted_fit_is_bit_identical(void **state) {
  (void)state;
  const char *sets[] = {"training.callbacks=[backup_and_restore]",
                        "faults=[{kind: preempt, target: \"worker:0\", at_step: 7}]"};
  static fit r, base;
  run_fit(&r, sets, 2);
  run_fit(&base, sets, 1);
  assert_int_equal(r.n, 16);
  assert_int_equal(r.sum.lost_steps, 1);
  assert_int_equal((long)r.step[7], 6);
  assert_string_equal(r.weights, base.weights);
  assert_true(r.sum.sim_time_s > base.sum.sim_time_s + 1.0);  /* restart.delay 1 s */
  assert_true(r.sum.checkpoint_time_s > 0);
}

/* double_checkpoint copies the previous backup (a read and a write of its bytes) before each
** backup but the first: 5 backups at one write each plus 4 copies at two: 13 writes' time. */
static void double_checkpoint_costs_copies(void **state) {
  (void)state;
  const char *one[] = {"training.callbacks=[backup_and_restore]"};
  const char *two[] = {"training.callbacks=[{backup_and_restore: {double_checkpoint: true}}]"};
  static fit a, b;
  run_fit(&a, one, 1);
  run_fit(&b, two, 1);
  assert_int_equal(a.sum.checkpoints, 5);
  assert_true(fabs(b.sum.checkpoint_time_s - a.sum.checkpoint_time_s * 13.0 / 5.0) < 1e-12);
  assert_string_equal(a.weights, b.weights);
}

/* test_TerminateOnNaN: a fit whose MSE loss diverges stops in its first epoch (history.loss has
** one entry, not finite). SGD at 1e10 on one-hot targets: step 0's loss is ~1.4, step 1's ~1e20,
** step 2's past float32 (the epoch tracker's total becomes inf): stop after step 2. */
static void terminate_on_nan_stops_the_first_epoch(void **state) {
  (void)state;
  const char *sets[] = {"training.callbacks=[terminate_on_nan]", "model.loss={kind: mean_squared_error}",
                        "optimizer.learning_rate=1e10", "training.epochs=20"};
  static fit r;
  run_fit(&r, sets, 4);
  assert_string_equal(r.sum.stopped_by, "terminate_on_nan");
  assert_int_equal(r.sum.stopped_epoch, 0);
  assert_int_equal(r.sum.steps_completed, 3);
  assert_int_equal(r.n, 3);
}

/* TerminateOnNaN(raise_error=True) (keras/src/callbacks/terminate_on_nan.py, 3.15.1): the
** same divergence raises RuntimeError at step 2's batch end: the job fails (exit 3) with Keras's
** message, its three steps done, and no epoch end runs (no stopped_by). */
static void terminate_on_nan_raises(void **state) {
  (void)state;
  const char *sets[] = {"training.callbacks=[{terminate_on_nan: {raise_error: true}}]",
                        "model.loss={kind: mean_squared_error}", "optimizer.learning_rate=1e10", "training.epochs=20"};
  static fit r;
  run_fit_ending(&r, sets, 4, TR_EXIT_JOB_FAILED);
  assert_true(r.sum.failed);
  assert_string_equal(r.sum.error.kind, "RuntimeError");
  assert_string_equal(r.sum.error.message, "NaN or Inf loss encountered at batch 2. Loss value: inf. "
                                           "Terminating training immediately.");
  assert_null(r.sum.stopped_by);
  assert_int_equal(r.sum.steps_completed, 3);
}

/* EarlyStopping on a fit: accuracy (auto: max) is 1 from epoch 0 on, never beaten after it
** (greater, not equal), so with patience 2 epoch 2 stops training: 9 steps; restore_best_weights
** puts epoch 0's weights back: those of a 1-epoch fit. */
static void early_stopping_ends_the_fit(void **state) {
  (void)state;
  const char *sets[] = {"training.epochs=40",
                        "training.callbacks=[{early_stopping: {monitor: accuracy, patience: 2, restore_best_weights: true}}]"};
  const char *one[] = {"training.epochs=1"};
  static fit r, first;
  run_fit(&r, sets, 2);
  run_fit(&first, one, 1);
  assert_string_equal(r.sum.stopped_by, "early_stopping");
  assert_int_equal(r.sum.stopped_epoch, 2);
  assert_int_equal(r.sum.steps_completed, 9);
  assert_int_equal(r.sum.restored_best, 1);
  assert_int_equal(r.sum.best_epoch, 0);
  assert_string_equal(r.weights, first.weights);
}

/* ModelCheckpoint(save_best_only, monitor loss): the epoch losses fall each epoch of this fit, so
** every epoch saves (5 rows, steps 2, 5, 8, 11, 14); save_freq 4 counts batches across epochs
** (_last_batch_seen is never reset): saves after steps 3, 7, 11 of 15. */
static void model_checkpoint_lists_its_saves(void **state) {
  (void)state;
  const char *best[] = {"training.callbacks=[{model_checkpoint: {save_best_only: true, monitor: loss}}]"};
  const char *every[] = {"training.callbacks=[{model_checkpoint: {save_freq: 4}}]"};
  static fit a, b;
  run_fit(&a, best, 1);
  run_fit(&b, every, 1);
  assert_non_null(strstr(a.checkpoints, "step,epoch,batch,save_freq,loss\n2,0,2,epoch,"));
  assert_non_null(strstr(a.checkpoints, "\n14,4,2,epoch,"));
  int rows = 0;
  for (const char *p = a.checkpoints; *p; p++) rows += *p == '\n';
  assert_int_equal(rows, 6);
  assert_string_equal(b.checkpoints, "step,epoch,batch,save_freq,monitor\n3,1,0,batch,\n7,2,1,batch,\n11,3,2,batch,\n");
  assert_true(b.sum.checkpoint_time_s > 0);
  assert_int_equal(b.sum.checkpoints, 0);  /* nothing a restart reads */
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(early_stopping_patience),
    cmocka_unit_test(early_stopping_needs_a_strict_improvement),
    cmocka_unit_test(early_stopping_start_from_epoch),
    cmocka_unit_test(early_stopping_restores_best),
    cmocka_unit_test(early_stopping_baseline),
    cmocka_unit_test(backup_every_batch_resumes_at_the_epoch),
    cmocka_unit_test(backup_every_epoch_resumes_exactly),
    cmocka_unit_test(preempted_fit_is_bit_identical),
    cmocka_unit_test(double_checkpoint_costs_copies),
    cmocka_unit_test(terminate_on_nan_stops_the_first_epoch),
    cmocka_unit_test(terminate_on_nan_raises),
    cmocka_unit_test(early_stopping_ends_the_fit),
    cmocka_unit_test(model_checkpoint_lists_its_saves),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
