/*
** test_validation.c: fit's validation (scenarios/programs/validate.h) on
** tests/data/train/validation.yaml: the golden MLP, 288 rows trained and 96 validated after each
** of 3 epochs over two replicas. The evaluation's numbers are checked against the training
** step's own forward (tests/data/train/validation_check.yaml: one step over the 96 validation
** rows from the run's final weights, whose metrics.csv row 0 is their mean loss and accuracy
** before its update), and its simulated time against the step timeline; mode evaluate against
** Keras's own batch-size invariance.
*/
#include "tests/testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scenarios/programs/train.h"

enum { MAX_ROWS = 64 };

/* A finished run's directory (removed by run_free) and its summary. */
typedef struct run {
  char dir[64];           /* its outputs */
  run_summary sum;        /* what train_run reported */
} run;

static void run_file(run *r, const char *file, const char *const *overrides, int n) {
  static scenario s;
  scn_error err;
  if (scenario_load(tu_src(file), overrides, n, &s, &err) != 0) fail_msg("%s", err.msg);
  snprintf(r->dir, sizeof r->dir, "/tmp/podsim-val-XXXXXX");
  assert_non_null(mkdtemp(r->dir));
  int rc = train_run(&s, r->dir, &r->sum, &err);
  if (rc != TR_EXIT_OK) fail_msg("exit %d: %s", rc, err.msg);
}

static void run_free(run *r) {
  char cmd[96];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", r->dir);
  assert_int_equal(system(cmd), 0);
}

/* Column col of DIR/file. */
static int column(const run *r, const char *file, int col, double *values) {
  char path[128];
  snprintf(path, sizeof path, "%s/%s", r->dir, file);
  return tu_read_column(path, col, values, MAX_ROWS, NULL);
}

/* history.csv's val_loss (column 3) and val_accuracy (4) after the last epoch are the mean loss
** and the accuracy of the 96 validation rows (the data's last, rows 288..383) under the final
** weights: what one step of validation_check.yaml over exactly those rows from those weights
** records before its update. Float32 sums in another order: 1e-6 relative; the accuracy is a
** count over 96, equal. The epochs' losses fall, so the check is not of a constant. */
static void test_val_loss_is_the_final_weights_loss(void **state) {
  (void)state;
  run fit, check;
  run_file(&fit, "tests/data/train/validation.yaml", NULL, 0);
  double epoch[MAX_ROWS], loss[MAX_ROWS], val_loss[MAX_ROWS], val_acc[MAX_ROWS];
  int n = column(&fit, "history.csv", 0, epoch);
  assert_int_equal(n, 3);
  column(&fit, "history.csv", 1, loss);
  column(&fit, "history.csv", 3, val_loss);
  column(&fit, "history.csv", 4, val_acc);
  assert_true(epoch[0] == 0 && epoch[2] == 2);
  assert_true(loss[2] < loss[1] && loss[1] < loss[0]);
  assert_true(val_loss[2] < val_loss[0]);
  /* The validation rows as a CSV of their own: the header and the data's last 96 lines. */
  char rows[96], weights[128], cmd[512];
  snprintf(rows, sizeof rows, "%s/val_rows.csv", fit.dir);
  snprintf(cmd, sizeof cmd, "(head -1 '%s'; tail -96 '%s') > '%s'", tu_src("tests/golden/mlp_momentum/data.csv"),
           tu_src("tests/golden/mlp_momentum/data.csv"), rows);
  assert_int_equal(system(cmd), 0);
  char set_csv[160], set_init[160];
  snprintf(set_csv, sizeof set_csv, "dataset.csv=%s", rows);
  snprintf(weights, sizeof weights, "%s/final_weights.csv", fit.dir);
  snprintf(set_init, sizeof set_init, "model.init.file=%s", weights);
  const char *sets[] = {set_csv, set_init};
  run_file(&check, "tests/data/train/validation_check.yaml", sets, 2);
  double want_loss[MAX_ROWS], want_acc[MAX_ROWS];
  assert_int_equal(column(&check, "metrics.csv", 3, want_loss), 1);
  column(&check, "metrics.csv", 12, want_acc);
  assert_float_equal(val_loss[2], want_loss[0], 1e-6 * want_loss[0]);
  assert_float_equal(val_acc[2], want_acc[0], 1e-7);
  run_free(&check);
  run_free(&fit);
}

/* One replica evaluates what two do: each replica's state summed (SyncOnRead SUM) is the whole
** validation set's, so val_loss agrees to float32 reordering and val_accuracy exactly. */
static void test_replicas_sum_their_state(void **state) {
  (void)state;
  run two, one;
  const char *sets[] = {"strategy.kind=one_device"};
  run_file(&two, "tests/data/train/validation.yaml", NULL, 0);
  run_file(&one, "tests/data/train/validation.yaml", sets, 1);
  assert_int_equal(two.sum.replicas, 2);
  assert_int_equal(one.sum.replicas, 1);
  double a[MAX_ROWS], b[MAX_ROWS];
  for (int col = 3; col <= 4; col++) {
    assert_int_equal(column(&two, "history.csv", col, a), column(&one, "history.csv", col, b));
    for (int e = 0; e < 3; e++) assert_float_equal(a[e], b[e], 1e-6 * fabs(b[e]));
  }
  run_free(&one);
  run_free(&two);
}

/* The evaluation takes simulated time between an epoch's last step and the next one's first:
** every epoch evaluated, step 3 (epoch 1's first) ends more than its own step time after step 2;
** with validation_freq [3] only the last epoch is evaluated, so the gap is the step time, and the
** run ends earlier by two evaluations. The val_ cells of epochs 0 and 1 are then empty. */
static void test_evaluation_takes_time(void **state) {
  (void)state;
  run every, last;
  const char *sets[] = {"training.validation_freq=[3]"};
  run_file(&every, "tests/data/train/validation.yaml", NULL, 0);
  run_file(&last, "tests/data/train/validation.yaml", sets, 1);
  double end[MAX_ROWS], step[MAX_ROWS];
  column(&every, "metrics.csv", 1, end);
  column(&every, "metrics.csv", 2, step);
  assert_true(end[3] - end[2] > step[3] * 1.01);
  column(&last, "metrics.csv", 1, end);
  column(&last, "metrics.csv", 2, step);
  assert_float_equal(end[3] - end[2], step[3], 1e-12);
  assert_true(last.sum.sim_time_s < every.sum.sim_time_s);
  char path[128], text[512] = "";
  snprintf(path, sizeof path, "%s/history.csv", last.dir);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  size_t got = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[got] = '\0';
  assert_non_null(strstr(text, "\n0,"));
  assert_non_null(strstr(text, ",,\n1,"));  /* epoch 0's val_loss and val_accuracy empty */
  run_free(&last);
  run_free(&every);
}

/* Ports keras/src/trainers/trainer_test.py's test_evaluate_with_different_batch_size_same_loss:
** mode evaluate over the 384 rows in batches of 80 (4 and a last of 64) and of 96 (4 whole) gives
** the same loss, the mean per-example loss whatever the batching (Keras's loss tracker weights each
** batch's mean by its size); float32 sums in another order, 1e-6 relative. No step runs. */
static void test_evaluate_batch_size_same_loss(void **state) {
  (void)state;
  run a, b;
  /* 5 batches: the whole pass of 80s; of 96s a pass is 4, where the evaluation stops */
  const char *by80[] = {"mode=evaluate", "training.steps=5", "dataset.global_batch=80"},
             *by96[] = {"mode=evaluate", "training.steps=5"};
  run_file(&a, "tests/data/train/validation_check.yaml", by80, 3);
  run_file(&b, "tests/data/train/validation_check.yaml", by96, 2);
  assert_int_equal(a.sum.evaluate_examples, 384);
  assert_int_equal(b.sum.evaluate_examples, 384);
  assert_int_equal(a.sum.steps_completed, 0);
  assert_string_equal(a.sum.evaluate_names[0], "loss");
  assert_string_equal(a.sum.evaluate_names[1], "accuracy");
  assert_true(a.sum.evaluate_values[0] > 0.5);  /* an untrained 3-class model: near ln 3 */
  assert_float_equal(a.sum.evaluate_values[0], b.sum.evaluate_values[0], 1e-6 * b.sum.evaluate_values[0]);
  assert_float_equal(a.sum.evaluate_values[1], b.sum.evaluate_values[1], 1e-7);
  run_free(&b);
  run_free(&a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_val_loss_is_the_final_weights_loss),
      cmocka_unit_test(test_replicas_sum_their_state),
      cmocka_unit_test(test_evaluation_takes_time),
      cmocka_unit_test(test_evaluate_batch_size_same_loss),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
