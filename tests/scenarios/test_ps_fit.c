/*
** test_ps_fit.c: Keras 2's Model.fit under ParameterServerStrategy (scenarios/programs/ps_fit.h)
** run end to end on tests/data/ps/fit_one_worker.yaml: the fit is the custom loop it stands for
** and, with one worker, the sync program's fit; steps_per_execution makes executions closures
** (one dispatch each); the metrics count every worker's steps; a preempted execution runs again
** whole; the exact evaluation of fit's validation visits every validation batch once, preempted or
** not; BackupAndRestore resumes at an epoch; TensorFlow's own fit agrees (tests/golden/ps_fit).
** Ported from tf_keras's tf_keras/distribute/dataset_creator_model_fit_test.py (testModelFit,
** testModelFitWithStepsPerExecution: fit(steps_per_epoch) under ParameterServerStrategy applies
** every step, 100 iterations; testModelFitWithNoStepsPerEpoch's ValueError is the bad catalogue's
** ps_fit_no_steps_per_epoch) and parameter_server_exact_evaluation_test.py (exact evaluation's
** logs equal the single-worker evaluation's, with workers preempted), and the TF tutorial
** "Parameter server training with ParameterServerStrategy" (Model.fit with BackupAndRestore).
*/
#include "tests/testutil.h"

#include <math.h>
#include <string.h>

#include "scenarios/programs/train.h"

enum { MAX_ROWS = 256 };

static int run_with(const char *file, const char *const *sets, int nsets, const char *out, run_summary *sum) {
  static scenario s;
  scn_error err;
  if (scenario_load(tu_src(file), sets, nsets, &s, &err) != 0) fail_msg("%s", err.msg);
  int rc = train_run(&s, out, sum, &err);
  if (rc == TR_EXIT_INPUT) fail_msg("%s", err.msg);
  return rc;
}

static char *slurp(const char *dir, const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  static char buf[1 << 22];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = 0;
  fclose(f);
  return strdup(buf);
}

static int read_col(const char *dir, const char *name, int col, double *out) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return tu_read_column(path, col, out, MAX_ROWS, NULL);
}

/* The 195 final weights of the runs in dirs a and b are the same floats. */
static void same_weights(const char *a, const char *b) {
  static double wa[MAX_ROWS], wb[MAX_ROWS];
  assert_int_equal(read_col(a, "final_weights.csv", 2, wa), 195);
  assert_int_equal(read_col(b, "final_weights.csv", 2, wb), 195);
  for (int i = 0; i < 195; i++) assert_true(wa[i] == wb[i]);
}

/* One worker reads what it pushed, so the parameter-server fit of 4 epochs of steps_per_epoch
** 12 (384 rows at 32: one pass) with steps_per_execution 4 is the one_device fit of 4 epochs
** (fit_one_device.yaml): history.csv the same bytes (loss, accuracy and
** sparse_categorical_crossentropy of each epoch: 0,1.1028490701201286,0.4635416567325592,... to
** 3,0.15261456948545718,0.96354168653488159,...) and the final weights bit for bit. */
static void one_worker_fit_is_the_sync_fit(void **state) {
  (void)state;
  static const char *const SETS[] = {"training.steps_per_epoch=12", "training.epochs=4"};
  char *ps = tu_temp_dir("podsim-psfit"), *one = tu_temp_dir("podsim-psfit");
  run_summary a, b;
  assert_int_equal(run_with("tests/data/ps/fit_one_worker.yaml", SETS, 2, ps, &a), TR_EXIT_OK);
  assert_int_equal(run_with("tests/data/ps/fit_one_device.yaml", NULL, 0, one, &b), TR_EXIT_OK);
  assert_int_equal(a.steps_completed, 48);
  char *ha = slurp(ps, "history.csv"), *hb = slurp(one, "history.csv");
  assert_string_equal(ha, hb);
  assert_non_null(strstr(ha, "\n3,0.15261456948545718,0.96354168653488159,"));
  same_weights(ps, one);
  free(ha);
  free(hb);
  tu_remove_dir(ps);
  tu_remove_dir(one);
}

/* fit(epochs=5, steps_per_epoch=10) with steps_per_execution 4 runs the 50 steps of the custom
** loop r1_one_worker.yaml (coordinator.schedule per step, one join): each step's loss is the
** golden r1's within the golden tolerance and the same as the loop's bit for bit, and so are the
** final weights; the executions change when updates are grouped, never what they compute. */
static void fit_is_the_custom_loop(void **state) {
  (void)state;
  char *fit = tu_temp_dir("podsim-psfit"), *loop = tu_temp_dir("podsim-psfit");
  run_summary a, b;
  assert_int_equal(run_with("tests/data/ps/fit_one_worker.yaml", NULL, 0, fit, &a), TR_EXIT_OK);
  assert_int_equal(run_with("tests/data/ps/r1_one_worker.yaml", NULL, 0, loop, &b), TR_EXIT_OK);
  static double la[MAX_ROWS], lb[MAX_ROWS], want[MAX_ROWS];
  assert_int_equal(read_col(fit, "metrics.csv", 3, la), 50);
  assert_int_equal(read_col(loop, "metrics.csv", 3, lb), 50);
  assert_int_equal(tu_read_column(tu_src("tests/golden/mlp_momentum/r1/expected_loss.csv"), 1, want, MAX_ROWS, NULL), 50);
  for (int i = 0; i < 50; i++) {
    assert_true(la[i] == lb[i]);
    if (!TU_GOLDEN_CLOSE(la[i], want[i])) fail_msg("step %d loss %.9g, expected %.9g", i, la[i], want[i]);
  }
  same_weights(fit, loop);
  assert_true(a.final_loss == b.final_loss);
  tu_remove_dir(fit);
  tu_remove_dir(loop);
}

/* An execution is one closure, dispatched once (strategy.host_round_trip, here 1 ms): 5 epochs of
** 10 steps at 4 a closure are 15 closures (4 + 4 + 2 an epoch: DataHandler's last partial
** execution), so one worker's fit takes 15 ms more than without the dispatch cost; at 1 step a
** closure, 50 ms more. One worker runs everything in order: the steps' own time (50 x
** 31.951875 us = 1.59759375 ms) is the same in each run. */
static void executions_are_closures(void **state) {
  (void)state;
  static const char *const TRIP[] = {"strategy.host_round_trip=1ms"};
  static const char *const TRIP1[] = {"strategy.host_round_trip=1ms", "training.steps_per_execution=1"};
  char *out = tu_temp_dir("podsim-psfit");
  run_summary none, four, one;
  assert_int_equal(run_with("tests/data/ps/fit_one_worker.yaml", NULL, 0, out, &none), TR_EXIT_OK);
  assert_int_equal(run_with("tests/data/ps/fit_one_worker.yaml", TRIP, 1, out, &four), TR_EXIT_OK);
  assert_int_equal(run_with("tests/data/ps/fit_one_worker.yaml", TRIP1, 2, out, &one), TR_EXIT_OK);
  assert_int_equal(llround(none.sim_time_s * 1e12), 1597593750);
  assert_int_equal(llround(four.sim_time_s * 1e12), 1597593750 + 15 * 1000000000LL);
  assert_int_equal(llround(one.sim_time_s * 1e12), 1597593750 + 50 * 1000000000LL);
  assert_true(four.final_loss == none.final_loss && one.final_loss == none.final_loss);
  tu_remove_dir(out);
}

/* Four workers: the metrics' variables are on the ps tasks, so every worker's steps count
** (SUM) and the value fit fetches at the epoch's join is the state after the epoch's last applied
** step: for each epoch, history.csv's accuracy and crossentropy equal metrics.csv's on the last
** row of that epoch in completion order, and its loss is the example-weighted mean of the
** epoch's rows' losses (Keras's loss tracker, a Mean). Each worker's iterator starts at batch 0
** (InputContext(1, 0, 1)), so the first two rows (steps 0 and 4) read the same batch: 6 of 32
** right, the running accuracy 0.1875 after each. */
static void metrics_count_every_worker(void **state) {
  (void)state;
  static const char *const SETS[] = {"cluster.workers.count=4"};
  char *out = tu_temp_dir("podsim-psfit");
  run_summary sum;
  assert_int_equal(run_with("tests/data/ps/fit_one_worker.yaml", SETS, 1, out, &sum), TR_EXIT_OK);
  static double step[MAX_ROWS], loss[MAX_ROWS], acc[MAX_ROWS], xent[MAX_ROWS];
  static double hloss[8], hacc[8], hxent[8];
  int n = read_col(out, "metrics.csv", 0, step);
  assert_int_equal(n, 50);
  read_col(out, "metrics.csv", 3, loss);
  read_col(out, "metrics.csv", 7, acc);
  read_col(out, "metrics.csv", 8, xent);
  assert_int_equal(read_col(out, "history.csv", 1, hloss), 5);
  read_col(out, "history.csv", 2, hacc);
  read_col(out, "history.csv", 3, hxent);
  assert_true(acc[0] == 0.1875 && acc[1] == 0.1875);
  for (int e = 0; e < 5; e++) {
    int last = -1;
    double sum_loss = 0;
    for (int i = 0; i < n; i++)
      if ((long)step[i] / 10 == e) {
        last = i;
        sum_loss += loss[i] * 32;
      }
    assert_true(last >= 0);
    assert_true((float)hacc[e] == (float)acc[last]);  /* float32 state: 9 digits are the float */
    assert_true((float)hxent[e] == (float)xent[last]);
    assert_true(fabs(hloss[e] - sum_loss / 320) < 1e-8);  /* metrics.csv's losses have 9 digits */
  }
  tu_remove_dir(out);
}

/* A preemption as step 6 starts (at_step 6, down 1 ms) cuts the execution of steps 4-7 short
** after 4 and 5 were applied: the closure goes back to the queue's tail and runs whole again
** (retried 1), so 4 and 5 are applied twice (duplicated_updates 2, 52 rows), as a retried
** train_function of TF's applies its steps again. Time: 6 steps, 1 ms down, then 46 steps:
** 52 x 31.951875 us + 1 ms = 2.6614975 ms. The epoch's History counts the doubled steps (its
** loss tracker's 12 updates). */
static void preempted_execution_runs_again(void **state) {
  (void)state;
  static const char *const SETS[] = {"faults=[{kind: preempt, target: worker:0, at_step: 6, down_for: 1ms}]"};
  char *out = tu_temp_dir("podsim-psfit");
  run_summary sum;
  assert_int_equal(run_with("tests/data/ps/fit_one_worker.yaml", SETS, 1, out, &sum), TR_EXIT_OK);
  assert_int_equal(sum.preemptions, 1);
  assert_int_equal(sum.retried_closures, 1);
  assert_int_equal(sum.duplicated_updates, 2);
  assert_int_equal(sum.steps_completed, 52);
  assert_int_equal(llround(sum.sim_time_s * 1e12), 2661497500LL);
  static double step[MAX_ROWS], hloss[8];
  assert_int_equal(read_col(out, "metrics.csv", 0, step), 52);
  int fours = 0;
  for (int i = 0; i < 52; i++) fours += step[i] == 4;
  assert_int_equal(fours, 2);
  assert_int_equal(read_col(out, "history.csv", 1, hloss), 5);
  tu_remove_dir(out);
}

/* validation_data: the 384 training rows again, in 20 batches of validation_batch_size 20 (the
** last of 4); parameter_server refuses validation_split, as TF's fit does for a dataset. */
#define VALIDATION_DATA "training.validation_data={csv: ../../golden/mlp_momentum/data.csv}"

/* Validation by exact evaluation with one worker and one shard is the sync fit's validation:
** fit_one_device.yaml and the parameter-server fit of steps_per_epoch 12 write the same
** history.csv, val_ columns included (val_loss 0.75445222854614258 after epoch 0). */
static void exact_evaluation_is_the_sync_validation(void **state) {
  (void)state;
  static const char *const PS[] = {"training.steps_per_epoch=12", "training.epochs=4", VALIDATION_DATA,
                                   "training.pss_evaluation_shards=1", "training.validation_batch_size=20"};
  static const char *const ONE[] = {VALIDATION_DATA, "training.validation_batch_size=20"};
  char *ps = tu_temp_dir("podsim-psfit"), *one = tu_temp_dir("podsim-psfit");
  run_summary a, b;
  assert_int_equal(run_with("tests/data/ps/fit_one_worker.yaml", PS, 5, ps, &a), TR_EXIT_OK);
  assert_int_equal(run_with("tests/data/ps/fit_one_device.yaml", ONE, 2, one, &b), TR_EXIT_OK);
  char *ha = slurp(ps, "history.csv"), *hb = slurp(one, "history.csv");
  assert_string_equal(ha, hb);
  assert_non_null(strstr(ha, ",val_loss,val_accuracy,val_sparse_categorical_crossentropy\n"));
  assert_non_null(strstr(ha, ",0.75445222854614258,"));
  free(ha);
  free(hb);
  tu_remove_dir(ps);
  tu_remove_dir(one);
}

/* Line `line` (0-based) of text from its column `col` on (to the end of the text). */
static const char *field(const char *text, int line, int col) {
  for (int i = 0; i < line && text; i++) text = strchr(text, '\n') ? strchr(text, '\n') + 1 : NULL;
  for (int c = 0; c < col && text; c++) text = strchr(text, ',') ? strchr(text, ',') + 1 : NULL;
  assert_non_null(text);
  return text;
}

/* TensorFlow's own: tf_keras 2.21's fit under ParameterServerStrategy on an in-process cluster
** of one worker and one ps (tests/golden/ps_fit, gen.py) gives History's loss, metrics and exact
** evaluation's val_ logs; podsim's parameter-server fit of the same compile and fit writes them
** within the golden tolerance (|got - want| <= 1e-5 + 1e-5 |want|; they agree to ~4e-7), each of
** the 4 epochs x 6 columns. */
static void fit_matches_tensorflow(void **state) {
  (void)state;
  static const char *const PS[] = {"training.steps_per_epoch=12", "training.epochs=4", VALIDATION_DATA,
                                   "training.pss_evaluation_shards=1", "training.validation_batch_size=20"};
  char *out = tu_temp_dir("podsim-psfit");
  run_summary sum;
  assert_int_equal(run_with("tests/data/ps/fit_one_worker.yaml", PS, 5, out, &sum), TR_EXIT_OK);
  char path[512];
  snprintf(path, sizeof path, "%s/history.csv", out);
  for (int col = 1; col <= 6; col++) {
    static double got[8], want[8];
    assert_int_equal(tu_read_column(path, col, got, 8, NULL), 4);
    assert_int_equal(tu_read_column(tu_src("tests/golden/ps_fit/expected_history.csv"), col, want, 8, NULL), 4);
    for (int e = 0; e < 4; e++)
      if (!TU_GOLDEN_CLOSE(got[e], want[e])) fail_msg("epoch %d column %d: %.9g, TensorFlow %.9g", e, col, got[e], want[e]);
  }
  tu_remove_dir(out);
}

/* Two workers, four shards of the 20 validation batches, the last evaluation (1111.058 to
** 1135.738 us) cut by a preemption of either worker at 1115 us (down 50 us): the shard it was
** running goes back to the queue's tail and is evaluated again from its first batch with fresh
** state (retried 1), so the val_ logs are the undisturbed run's bit for bit (the shards' states
** are summed in shard order); only the end moves, to 1158.626 us. auto is 5 shards per worker:
** 10 closures an evaluation, 40 in 4 epochs. */
static void exact_evaluation_visits_each_batch_once(void **state) {
  (void)state;
  const char *sets[] = {"training.steps_per_epoch=12", "training.epochs=4", VALIDATION_DATA,
                        "training.pss_evaluation_shards=4", "training.validation_batch_size=20",
                        "cluster.workers.count=2", NULL};
  char *out = tu_temp_dir("podsim-psfit");
  run_summary sum;
  assert_int_equal(run_with("tests/data/ps/fit_one_worker.yaml", sets, 6, out, &sum), TR_EXIT_OK);
  assert_int_equal(llround(sum.sim_time_s * 1e12), 1135738000LL);
  char *undisturbed = slurp(out, "history.csv");
  static const char *const FAULTS[] = {"faults=[{kind: preempt, target: worker:0, at: 1115us, down_for: 50us}]",
                                       "faults=[{kind: preempt, target: worker:1, at: 1115us, down_for: 50us}]"};
  for (int w = 0; w < 2; w++) {
    sets[6] = FAULTS[w];
    assert_int_equal(run_with("tests/data/ps/fit_one_worker.yaml", sets, 7, out, &sum), TR_EXIT_OK);
    assert_int_equal(sum.retried_closures, 1);
    assert_int_equal(sum.duplicated_updates, 0);
    assert_int_equal(llround(sum.sim_time_s * 1e12), 1158626000LL);
    char *h = slurp(out, "history.csv");
    assert_string_equal(field(h, 4, 4), field(undisturbed, 4, 4));  /* epoch 3's val_ columns */
    free(h);
  }
  free(undisturbed);
  sets[3] = "training.pss_evaluation_shards=auto";
  sets[6] = "outputs.trace=true";
  assert_int_equal(run_with("tests/data/ps/fit_one_worker.yaml", sets, 7, out, &sum), TR_EXIT_OK);
  char *trace = slurp(out, "trace.json");
  int spans = 0;
  for (const char *p = trace; (p = strstr(p, "\"evaluate shard ")) != NULL; p++) spans++;
  assert_int_equal(spans, 40);
  free(trace);
  tu_remove_dir(out);
}

/* BackupAndRestore (save_freq epoch) under ParameterServerStrategy, the tutorial's fault
** tolerance: ps 0 fails as step 30 starts (epoch 2, its 7th step; down 2 ms, restart.delay 1 ms):
** the chief restarts from the backup of epoch 1's end (step 24), the 6 steps applied since are
** lost and redone (lost_steps 6, restarts 1, 4 backups: one an epoch, the redone epoch's once).
** An epoch is one pass here (steps_per_epoch 12), so the new process's iterator, at batch 0,
** reads what the uninterrupted one read at step 24: the final weights are the uninterrupted
** fit's bit for bit, and so is history.csv. */
static void backup_and_restore_resumes_at_the_epoch(void **state) {
  (void)state;
  const char *sets[] = {"training.steps_per_epoch=12", "training.epochs=4", "training.callbacks=[backup_and_restore]",
                        "training.restart={delay: 1ms}", "faults=[{kind: fail, target: ps:0, at_step: 30, down_for: 2ms}]"};
  char *plain = tu_temp_dir("podsim-psfit"), *backed = tu_temp_dir("podsim-psfit");
  run_summary a, b;
  assert_int_equal(run_with("tests/data/ps/fit_one_worker.yaml", sets, 2, plain, &a), TR_EXIT_OK);
  assert_int_equal(run_with("tests/data/ps/fit_one_worker.yaml", sets, 5, backed, &b), TR_EXIT_OK);
  assert_int_equal(b.restarts, 1);
  assert_int_equal(b.lost_steps, 6);
  assert_int_equal(b.checkpoints, 4);
  assert_int_equal(b.steps_completed, 48);
  same_weights(plain, backed);
  char *ha = slurp(plain, "history.csv"), *hb = slurp(backed, "history.csv");
  assert_string_equal(ha, hb);
  free(ha);
  free(hb);
  assert_true(b.sim_time_s > a.sim_time_s + 0.002);  /* the ps's 2 ms down, the redone steps */
  tu_remove_dir(plain);
  tu_remove_dir(backed);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(one_worker_fit_is_the_sync_fit),
    cmocka_unit_test(fit_is_the_custom_loop),
    cmocka_unit_test(executions_are_closures),
    cmocka_unit_test(metrics_count_every_worker),
    cmocka_unit_test(preempted_execution_runs_again),
    cmocka_unit_test(exact_evaluation_is_the_sync_validation),
    cmocka_unit_test(fit_matches_tensorflow),
    cmocka_unit_test(exact_evaluation_visits_each_batch_once),
    cmocka_unit_test(backup_and_restore_resumes_at_the_epoch),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
