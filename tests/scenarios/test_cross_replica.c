/*
** test_cross_replica.c: what a replica shares with its devices and with the other replicas.
** strategy.split_to_logical_devices (scenarios/programs/spmd.c): variables split over a replica's
** logical devices fit models replication cannot, charge the collectives XLA's SPMD partitioner
** adds, and leave the numerics bit for bit as they were. Sync-on-read variables (batch
** normalisation's moving statistics): a checkpoint saves their mean over the replicas.
*/
#include "tests/testutil.h"

#include <math.h>
#include <string.h>

#include "scenarios/programs/train.h"

enum { MAX_ROWS = 512 };

typedef struct outcome {
  int rc;                 /* train_run's exit status */
  run_summary sum;        /* what it reported */
  int nsteps;             /* rows of metrics.csv */
  double loss[MAX_ROWS];  /* its loss column */
  double comm[MAX_ROWS];  /* its comm_s column */
  int nweights;           /* rows of final_weights.csv */
  double weight[MAX_ROWS];/* their values */
} outcome;

static void run_with(outcome *o, const char *file, const char *const *overrides, int n) {
  static scenario s;
  scn_error err;
  if (scenario_load(tu_src(file), overrides, n, &s, &err) != 0) fail_msg("%s", err.msg);
  char *dir = tu_temp_dir("podsim-spmd"), path[512];
  memset(o, 0, sizeof *o);
  o->rc = train_run(&s, dir, &o->sum, &err);
  if (o->rc != TR_EXIT_OK && o->rc != TR_EXIT_JOB_FAILED) fail_msg("exit %d: %s", o->rc, err.msg);
  snprintf(path, sizeof path, "%s/metrics.csv", dir);
  o->nsteps = tu_read_column(path, 3, o->loss, MAX_ROWS, NULL);
  tu_read_column(path, 6, o->comm, MAX_ROWS, NULL);
  snprintf(path, sizeof path, "%s/final_weights.csv", dir);
  if (o->rc == TR_EXIT_OK) o->nweights = tu_read_column(path, 2, o->weight, MAX_ROWS, NULL);
  tu_remove_dir(dir);
}

static void run_file(outcome *o, const char *file, const char *split) {
  char set[64];
  const char *overrides[1] = {set};
  snprintf(set, sizeof set, "strategy.split_to_logical_devices=%s", split);
  run_with(o, file, overrides, 1);
}

/* The golden mlp_momentum case on a v3-8, 4 replicas of 2 cores under SPMD (tests/data/train/
** strategies/tpu_spmd.yaml), split or not: the replica computes its values once, unsplit, so
** every loss and final weight is the same float. What changes, worked by hand (model.c
** invariant 9, spmd.c): dense 8 -> 16 splits by columns (kernel and bias: 72 of 144 floats per
** core), dense 16 -> 3 by rows (kernel 24 of 48, bias 3 whole): 99 of 195 floats. Each core then
** holds 96 floats less of variables and of momentum slots (2 x 96 x 4 = 768 bytes less), and a
** share of the gradients and activations at its liveness peak (compile/liveness.c): less than the
** 2 x 96 x 4 = 768 bytes of the split gradients with their all-reduced copies, which are not all
** live at once (1061 bytes less in all). The rows layer
** all-reduces its 3 outputs' partial sums forward (the pair passes its split gradient backward
** and the first layer reads the model's input): 8 examples x 12 bytes = 96 bytes over 2 cores,
** 2 x 1/2 x 96 B at the 0.746 x 100 GB/s a v3 ICI link achieves = 1287 ps (rounded to the
** picosecond), plus the one collective's 5.36 us (sim/tpu.c's ICI fit; its 2 hops cost nothing
** beyond their bytes): 5.361287 us more communication in every step. */
static void splitting_keeps_the_numerics_and_charges_its_all_reduce(void **state) {
  (void)state;
  static outcome whole, split;
  run_file(&whole, "tests/data/train/strategies/tpu_spmd.yaml", "none");
  run_file(&split, "tests/data/train/strategies/tpu_spmd.yaml", "megatron");
  assert_int_equal(whole.rc, TR_EXIT_OK);
  assert_int_equal(split.rc, TR_EXIT_OK);
  assert_int_equal(whole.nsteps, 50);
  assert_int_equal(split.nsteps, whole.nsteps);
  assert_int_equal(split.nweights, whole.nweights);
  assert_memory_equal(split.loss, whole.loss, sizeof whole.loss[0] * (size_t)whole.nsteps);
  assert_memory_equal(split.weight, whole.weight, sizeof whole.weight[0] * (size_t)whole.nweights);
  assert_true(split.sum.final_loss == whole.sum.final_loss);
  for (int i = 0; i < whole.nsteps; i++) assert_true(fabs(split.comm[i] - whole.comm[i] - 5.361287e-6) < 1e-11);
  long less = (long)whole.sum.memory_peak_bytes - (long)split.sum.memory_peak_bytes;
  print_message("split: %ld bytes less per core, %.9g s more communication per step\n", less,
                split.comm[0] - whole.comm[0]);
  assert_true(less > 768 && less < 1536);
}

/* An 8B-parameter decoder (tests/data/spmd/gpt_8b_v5p.yaml: 38 blocks of d_model 4096, 8.07e9
** parameters) with AdamW on a v5p-16 as such models are trained: 4-way tensor parallelism inside
** each replica, 2 replicas of data parallelism. Replicated, a core needs at the end of the
** backward (the liveness peak: the activations are freed, each partial gradient once all-reduced)
** 4 bytes x 8.07e9 x (variables 1 + slots 2 + all-reduced gradients 1) = 129 GB, more than v5p's
** 95 GiB:
** ResourceExhaustedError. Split 4 ways it needs about a quarter of that plus the activations of
** 4 sequences of 2048 tokens and trains. */
static void an_8b_decoder_fits_a_v5p_slice_split_four_ways(void **state) {
  (void)state;
  static outcome whole, split;
  run_file(&whole, "tests/data/spmd/gpt_8b_v5p.yaml", "none");
  assert_int_equal(whole.rc, TR_EXIT_JOB_FAILED);
  assert_string_equal(whole.sum.error.kind, "ResourceExhaustedError");
  assert_true(whole.sum.error.needed_bytes > 4.0 * 8.07e9 * 4);
  run_file(&split, "tests/data/spmd/gpt_8b_v5p.yaml", "megatron");
  assert_int_equal(split.rc, TR_EXIT_OK);
  assert_int_equal(split.nsteps, 2);
  print_message("gpt 8b on v5p-16, split 4 ways: %.4g GB of %.4g GB per core, step %.4g s\n",
                split.sum.memory_peak_bytes / 1e9, split.sum.memory_capacity_bytes / 1e9, split.sum.means.step_s);
  assert_true(split.sum.memory_peak_bytes < split.sum.memory_capacity_bytes);
  assert_true(split.sum.memory_peak_bytes > 4.0 * 8.07e9 * 5 / 4);
}

/* GPT-1.3B (1.42e9 parameters with its untied head) with AdamW on a v4-32, 4 chips per replica,
** 8 sequences of 2048 tokens per replica in float32: replicated a chip needs 45.6 GB of its
** 32 GiB at the liveness peak (17.0 GB of variables and slots, 28.3 GB live at the start of the
** backward, a quarter of the activations on each of the 4 chips under SPMD); split over the
** replica's 4 chips, 32.9 GB. (At 4 sequences replicated fits: 31.5 GB.) */
static void gpt_1_3b_fits_a_v4_slice_split_over_four_chips(void **state) {
  (void)state;
  static outcome whole, split;
  const char *replicated[2] = {"strategy.split_to_logical_devices=none", "dataset.global_batch=32"};
  const char *megatron[2] = {"strategy.split_to_logical_devices=megatron", "dataset.global_batch=32"};
  run_with(&whole, "tests/data/spmd/gpt_1_3b_v4.yaml", replicated, 2);
  assert_int_equal(whole.rc, TR_EXIT_JOB_FAILED);
  assert_string_equal(whole.sum.error.kind, "ResourceExhaustedError");
  run_with(&split, "tests/data/spmd/gpt_1_3b_v4.yaml", megatron, 2);
  assert_int_equal(split.rc, TR_EXIT_OK);
  print_message("gpt 1.3b on v4-32, split over 4 chips: %.4g GB of %.4g GB per chip\n",
                split.sum.memory_peak_bytes / 1e9, split.sum.memory_capacity_bytes / 1e9);
  assert_true(split.sum.memory_peak_bytes < split.sum.memory_capacity_bytes);
}

/* The loader: megatron needs XLA's SPMD partitioner and more than one core per replica. */
static void split_needs_spmd_and_several_cores(void **state) {
  (void)state;
  static scenario s;
  scn_error err;
  const char *no_spmd[2] = {"strategy.split_to_logical_devices=megatron", "strategy.spmd_xla_partitioning=false"};
  assert_int_not_equal(scenario_load(tu_src("tests/data/train/strategies/tpu_spmd.yaml"), no_spmd, 2, &s, &err), 0);
  assert_non_null(strstr(err.msg, "set strategy.spmd_xla_partitioning: true"));
  const char *one_core[2] = {"strategy.split_to_logical_devices=megatron",
                             "strategy.device_assignment.computation_shape=[1, 1, 1, 1]"};
  assert_int_not_equal(scenario_load(tu_src("tests/data/train/strategies/tpu_spmd.yaml"), one_core, 2, &s, &err), 0);
  assert_non_null(strstr(err.msg, "more than one core, found 1"));
}

/* TF saves a sync-on-read variable (tf.VariableSynchronization.ON_READ, aggregation MEAN: Keras's
** BatchNormalization moving statistics under a strategy) as its value read in cross-replica
** context, the mean over the replicas, and a restore assigns that to every replica
** (values_util.py's on-read saveable). tests/data/spmd/bn_restart.yaml: 8 replicas, a checkpoint
** after step 19, the slice preempted as step 20 starts, a restart from the checkpoint. Trainable
** variables never read the moving statistics in a train step: bit for bit the uninterrupted
** run's. Each replica's moving statistic moves as m' = m - (m - b_r) 0.5 (its own batch's b_r),
** an affine map of slope 0.5 for every replica, so after k steps the mean over replicas of
** f_r(mean of m) is the mean of f_r(m_r): restarting every replica at the mean leaves the final
** mean (what final_weights.csv holds) the uninterrupted run's up to rounding (measured 6e-8).
** Restoring replica 0's statistics instead would leave 0.5^4 of replica 0's distance from the
** mean in it: up to 8e-3 here. */
static void checkpoint_saves_the_on_read_mean_as_tf(void **state) {
  (void)state;
  static outcome once, restarted;
  run_with(&once, "tests/data/spmd/bn_restart.yaml", NULL, 0);
  const char *sets[] = {"training.restart.delay=60s", "faults=[{kind: preempt, target: tpu, at_step: 20}]"};
  run_with(&restarted, "tests/data/spmd/bn_restart.yaml", sets, 2);
  assert_int_equal(restarted.rc, TR_EXIT_OK);
  assert_int_equal(restarted.sum.restarts, 1);
  assert_int_equal(restarted.nweights, once.nweights);
  /* dense 8x16 + 16, gamma, beta, moving mean, moving variance (16 each), dense 16x3 + 3. */
  assert_int_equal(once.nweights, 128 + 16 + 4 * 16 + 48 + 3);
  double worst = 0;
  for (int i = 0; i < once.nweights; i++) {
    int moving = i >= 144 + 32 && i < 144 + 64;
    if (!moving) {
      assert_true(restarted.weight[i] == once.weight[i]);
      continue;
    }
    double err = fabs(restarted.weight[i] - once.weight[i]);
    worst = fmax(worst, err);
    assert_true(err <= 1e-6 + 1e-6 * fabs(once.weight[i]));
  }
  print_message("moving statistics after the restart: max |error| %.3g\n", worst);
}

/* Keras's SyncBatchNormalization (BatchNormalization(synchronized=True)) normalises a train step
** by the global batch's statistics, all-reduced over the replicas (TF's _calculate_mean_and_var),
** and differentiates through that all-reduce: a MirroredStrategy run over two GPUs is the
** one-device run on the concatenated batch, every step's loss and every final weight up to
** rounding (measured 5e-7), while plain BatchNormalization, each replica normalising its own 16
** examples, is a different run (0.24 apart). The five all-reduces of a step (forward: sum, sum of
** squares, batch size; backward: the sums' gradients), latency-bound at 16 floats, are charged
** as communication in every step, as much with numerics off. */
static void sync_batch_normalization_is_the_one_device_run(void **state) {
  (void)state;
  static outcome two, one, plain, timed;
  const char *one_device[1] = {"strategy={kind: one_device}"};
  const char *unsynchronized[1] = {"model.layers=[{dense: {units: 16}}, {batch_normalization: {momentum: 0.5}}, "
                                   "{activation: {activation: relu}}, {dense: {units: 3}}]"};
  const char *numerics_off[1] = {"numerics=off"};
  run_with(&two, "tests/data/spmd/sync_bn.yaml", NULL, 0);
  run_with(&one, "tests/data/spmd/sync_bn.yaml", one_device, 1);
  run_with(&plain, "tests/data/spmd/sync_bn.yaml", unsynchronized, 1);
  run_with(&timed, "tests/data/spmd/sync_bn.yaml", numerics_off, 1);
  assert_int_equal(two.rc, TR_EXIT_OK);
  assert_int_equal(two.nsteps, 30);
  assert_int_equal(one.nsteps, 30);
  assert_int_equal(two.nweights, 128 + 16 + 4 * 16 + 48 + 3);
  assert_int_equal(one.nweights, two.nweights);
  double worst = 0, apart = 0;
  for (int i = 0; i < two.nsteps; i++) {
    assert_true(fabs(two.loss[i] - one.loss[i]) <= 1e-6 + 1e-6 * fabs(one.loss[i]));
    worst = fmax(worst, fabs(two.loss[i] - one.loss[i]));
  }
  for (int i = 0; i < two.nweights; i++) {
    assert_true(fabs(two.weight[i] - one.weight[i]) <= 1e-6 + 1e-6 * fabs(one.weight[i]));
    worst = fmax(worst, fabs(two.weight[i] - one.weight[i]));
    apart = fmax(apart, fabs(plain.weight[i] - one.weight[i]));
  }
  assert_true(apart > 1e-2);
  double extra = two.comm[1] - plain.comm[1];
  for (int i = 0; i < two.nsteps; i++) {
    assert_true(two.comm[i] - plain.comm[i] > 4 * plain.comm[i]);
    assert_true(timed.comm[i] == two.comm[i]);
  }
  print_message("sync batch norm, 2 replicas vs 1: max |error| %.3g (plain batch norm: %.3g); "
                "its all-reduces %.9g s a step\n", worst, apart, extra);
}

/* With get_next_as_optional a Mirrored replica past the data gets an empty batch while the other
** has some (33 rows in batches of 32 over 2 epochs, each epoch a pass of its own: 32, 1, 32, 1,
** and each 1-row batch goes to replica 0, ceil(1 / 2) a slice): the empty replica still takes part in every SyncBatchNormalization all-reduce, adding
** zeros, or replica 0 would wait for it forever (SimulationStalled). */
static void sync_batch_normalization_with_an_empty_replica(void **state) {
  (void)state;
  static outcome run, timed;
  const char *sets[3] = {"dataset.synthetic.rows=33", "training={epochs: 2, loss_reduction: global_batch}",
                         "numerics=off"};
  run_with(&run, "tests/data/spmd/sync_bn.yaml", sets, 2);
  run_with(&timed, "tests/data/spmd/sync_bn.yaml", sets, 3);
  assert_int_equal(run.rc, TR_EXIT_OK);
  assert_int_equal(timed.rc, TR_EXIT_OK);
  assert_int_equal(run.nsteps, 4);
  assert_int_equal(timed.nsteps, 4);
  for (int i = 0; i < run.nsteps; i++) {
    assert_true(isfinite(run.loss[i]));
    assert_true(timed.comm[i] == run.comm[i]);
  }
  for (int i = 0; i < run.nweights; i++) assert_true(isfinite(run.weight[i]));
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(splitting_keeps_the_numerics_and_charges_its_all_reduce),
    cmocka_unit_test(an_8b_decoder_fits_a_v5p_slice_split_four_ways),
    cmocka_unit_test(gpt_1_3b_fits_a_v4_slice_split_over_four_chips),
    cmocka_unit_test(split_needs_spmd_and_several_cores),
    cmocka_unit_test(checkpoint_saves_the_on_read_mean_as_tf),
    cmocka_unit_test(sync_batch_normalization_is_the_one_device_run),
    cmocka_unit_test(sync_batch_normalization_with_an_empty_replica),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
