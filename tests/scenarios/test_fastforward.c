/*
** test_fastforward.c: exact fast-forward of the sync program's steady state (issue 16;
** train.c, "Fast-forward"; sim/snapshot.c). Every run here is made twice, as shipped
** (training.fast_forward defaults to true) and with training.fast_forward=false, the
** step-by-step run; the two must write the same bytes (metrics.csv, summary.json but its wall_s,
** final_weights.csv, variables.csv, trace.json) and print the same run_hash. Runs where steps
** repeat must skip most of them (else the comparison proves nothing); runs where something
** pending is not periodic (a checkpoint every step, counts that change from step to step, a
** trace that grows, real values, a TF1 loop) must skip none.
*/
#include "tests/testutil.h"

#include <stdlib.h>
#include <string.h>

#include "scenarios/programs/train.h"

static const char *const FILES[] = {"metrics.csv", "summary.json", "final_weights.csv", "variables.csv",
                                    "trace.json", "evaluations.csv"};
enum { NFILES = sizeof FILES / sizeof *FILES, MAX_SETS = 8 };

typedef struct ffrun {
  int rc;                 /* train_run's exit status */
  run_summary sum;        /* what it reported */
  char *text[NFILES];     /* each output file (NULL: not written); summary.json without wall_s */
} ffrun;

/* summary.json's host time: the one line two runs of a scenario need not share. */
static const char *const HOST_LINES[] = {"\"wall_s\"", NULL};

static void run_once(ffrun *r, const char *file, const char *const *sets, int nsets, int ff) {
  static scenario s;
  scn_error err;
  const char *all[MAX_SETS + 1];
  assert_true(nsets <= MAX_SETS);
  for (int i = 0; i < nsets; i++) all[i] = sets[i];
  all[nsets] = ff ? "training.fast_forward=true" : "training.fast_forward=false";
  memset(r, 0, sizeof *r);
  if (scenario_load(tu_src(file), all, nsets + 1, &s, &err) != 0) fail_msg("%s", err.msg);
  char *dir = tu_temp_dir("podsim-ff");
  r->rc = train_run(&s, dir, &r->sum, &err);
  for (int i = 0; i < NFILES; i++) r->text[i] = tu_slurp(dir, FILES[i], HOST_LINES);
  tu_remove_dir(dir);
}

static void free_run(ffrun *r) {
  for (int i = 0; i < NFILES; i++) free(r->text[i]);
  free(r->sum.devices);
}

/* Runs the scenario both ways and asserts the same outputs; returns the steps the fast run
** skipped, and its summary in *sum when given. */
static long same_both_ways(const char *file, const char *const *sets, int nsets, run_summary *sum) {
  ffrun fast, full;
  run_once(&fast, file, sets, nsets, 1);
  run_once(&full, file, sets, nsets, 0);
  assert_int_equal(fast.rc, full.rc);
  assert_int_equal(full.sum.fast_forwarded, 0);
  assert_int_equal(fast.sum.run_hash, full.sum.run_hash);
  assert_int_equal(fast.sum.events, full.sum.events);
  assert_true(full.text[0] != NULL);  /* metrics.csv, at least */
  tu_same_files(fast.text, full.text, NFILES, FILES, file, "with fast-forward");
  long skipped = fast.sum.fast_forwarded;
  if (sum != NULL) {
    *sum = fast.sum;
    sum->devices = NULL;  /* freed with the run */
  }
  free_run(&fast);
  free_run(&full);
  return skipped;
}

/* Every shipped sync example, numerics off (fast-forward's domain), no trace or charts, 200
** steps: the same outputs, and most steps skipped but in the TF1 loop (tpu_v1_steps_per_run:
** its period is a loop of 20 steps, not one). */
static void every_example_matches_step_by_step(void **state) {
  (void)state;
  static const struct { const char *name; int skips; } EXAMPLES[] = {
    {"cnn_tpu", 1}, {"default_strategy", 1}, {"gnn_runner_tpu", 1}, {"mirrored_gpus", 1},
    {"one_device", 1}, {"plan_bert_large", 1}, {"plan_tpu_v4", 1}, {"quickstart", 1},
    {"tpu_model_parallel", 1}, {"tpu_preempted", 1}, {"tpu_v1_steps_per_run", 0}, {"tpu_v4", 1},
  };
  const char *sets[] = {"numerics=off", "outputs.trace=false", "outputs.plots=[]", "training.steps=200"};
  for (size_t i = 0; i < sizeof EXAMPLES / sizeof *EXAMPLES; i++) {
    char file[128];
    snprintf(file, sizeof file, "scenarios/examples/%s.yaml", EXAMPLES[i].name);
    long skipped = same_both_ways(file, sets, 4, NULL);
    if (EXAMPLES[i].skips) assert_true(skipped > 100);
    else assert_int_equal(skipped, 0);
  }
}

/* Steps with collectives inside the model's pass: SPMD split variables (tests/data/spmd/
** gpt_1_3b_v4.yaml) and SyncBatchNormalization's all-reduces (sync_bn.yaml), numerics off. */
static void collectives_inside_the_step_match(void **state) {
  (void)state;
  const char *sets[] = {"numerics=off", "outputs.trace=false", "outputs.plots=[]", "training.steps=100"};
  assert_true(same_both_ways("tests/data/spmd/gpt_1_3b_v4.yaml", sets, 4, NULL) > 50);
  assert_true(same_both_ways("tests/data/spmd/sync_bn.yaml", sets, 4, NULL) > 50);
}

/* The gradient all-reduce in packs overlapped with the backward (tests/data/train/overlap.yaml,
** scenarios/programs/overlap.h): two workers, then three, and cnn_tpu's XLA combiner cutting
** every variable's all-reduce apart; snapshots fall inside the packed pass (a pack done, the
** backward running), so the packs' counters must be in them. */
static void packed_all_reduce_matches(void **state) {
  (void)state;
  const char *two[] = {"numerics=off", "training.steps=300", "strategy.communication.bytes_per_pack=100B"};
  assert_true(same_both_ways("tests/data/train/overlap.yaml", two, 3, NULL) > 200);
  const char *three[] = {"numerics=off", "training.steps=300", "strategy.communication.bytes_per_pack=100B",
                         "cluster.workers.count=3"};
  assert_true(same_both_ways("tests/data/train/overlap.yaml", three, 4, NULL) > 200);
  const char *tpu[] = {"numerics=off", "outputs.trace=false", "outputs.plots=[]", "training.steps=200",
                       "strategy.xla_combine_threshold=0B"};
  assert_true(same_both_ways("scenarios/examples/cnn_tpu.yaml", tpu, 5, NULL) > 100);
}

/* tests/data/fastforward/workers_faults.yaml: CPU workers whose input pipeline computes through
** the snapshots (execs in flight), randomly preempted, a straggler, a degraded fabric, synchronous
** checkpoints: the same bytes, most steps skipped. */
static void workers_with_faults_match(void **state) {
  (void)state;
  run_summary sum;
  long skipped = same_both_ways("tests/data/fastforward/workers_faults.yaml", NULL, 0, &sum);
  assert_true(sum.preemptions > 5);
  assert_true(sum.restarts > 5);
  assert_true(sum.checkpoints > 3);
  assert_true(skipped > 20000);
}

/* tests/data/fastforward/pod_faults.yaml: random preemptions of every host, a straggler, an ICI
** degradation, async checkpoints and a fail at_step 17000, over 20000 steps. Every fault and
** checkpoint is where the step-by-step run has it (the outputs are the same bytes), and most
** steps between them are skipped. */
static void pod_with_faults_and_checkpoints_matches(void **state) {
  (void)state;
  run_summary sum;
  long skipped = same_both_ways("tests/data/fastforward/pod_faults.yaml", NULL, 0, &sum);
  assert_true(sum.preemptions > 5);
  assert_int_equal(sum.failures, 1);
  assert_true(sum.restarts > 5);
  assert_true(sum.checkpoints > 3);
  assert_true(sum.lost_steps > 0);
  assert_true(skipped > 20000);  /* redone steps are skipped too */
}

/* tests/data/faults/tpu.yaml, numerics off, 400 steps with a synchronous checkpoint every 50:
** each checkpoint's wait is in its step, the steps between are skipped. */
static void sync_checkpoints_match(void **state) {
  (void)state;
  const char *sets[] = {"numerics=off", "outputs.trace=false", "training.steps=400",
                        "training.checkpoint.every_steps=50"};
  run_summary sum;
  long skipped = same_both_ways("tests/data/faults/tpu.yaml", sets, 4, &sum);
  assert_int_equal(sum.checkpoints, 8);
  assert_true(skipped > 200);
}

/* Inputs whose counts repeat: a shuffle (numerics off counts rows, and a shuffle of an endless
** stream keeps every batch whole) and a finite input of whole batches (tests/data/fastforward/
** epochs.yaml: 60 epochs of 4 steps, each count checked step by step). */
static void repeating_inputs_match(void **state) {
  (void)state;
  const char *shuffled[] = {"numerics=off", "outputs.trace=false", "training.steps=200",
                            "dataset.shuffle={buffer: 100}"};
  assert_true(same_both_ways("tests/data/faults/tpu.yaml", shuffled, 4, NULL) > 100);
  assert_true(same_both_ways("tests/data/fastforward/epochs.yaml", NULL, 0, NULL) > 200);
}

/* What must refuse: a checkpoint at every step's end, an epoch whose last batch is partial (the
** counts repeat every 4 steps, not every step), a trace (each step adds spans), real values. */
static void non_periodic_runs_skip_nothing(void **state) {
  (void)state;
  const char *base[] = {"numerics=off", "outputs.trace=false", "training.steps=200"};
  const char *every_step[] = {"numerics=off", "outputs.trace=false", "training.steps=200",
                              "training.checkpoint.every_steps=1"};
  const char *partial[] = {"dataset.synthetic.rows=250"};
  const char *traced[] = {"numerics=off", "outputs.trace=true", "training.steps=200"};
  const char *values[] = {"outputs.trace=false", "training.steps=200"};
  assert_true(same_both_ways("tests/data/faults/tpu.yaml", base, 3, NULL) > 100);
  assert_int_equal(same_both_ways("tests/data/faults/tpu.yaml", every_step, 4, NULL), 0);
  assert_int_equal(same_both_ways("tests/data/fastforward/epochs.yaml", partial, 1, NULL), 0);
  assert_int_equal(same_both_ways("tests/data/faults/tpu.yaml", traced, 3, NULL), 0);
  assert_int_equal(same_both_ways("tests/data/faults/tpu.yaml", values, 2, NULL), 0);
}

/* Parameter-server runs (ps_train.c, "Fast-forward"): four workers in lockstep skip all but a
** few rounds of closures (400 steps: two rounds to find the period of four closures, the rest
** skipped up to the last round the queue still holds); with one worker the period is one closure. */
static void ps_steady_closures_skip(void **state) {
  (void)state;
  assert_true(same_both_ways("tests/data/ps/ff/steady.yaml", NULL, 0, NULL) > 350);
  const char *one[] = {"cluster.workers.count=1"};
  assert_true(same_both_ways("tests/data/ps/ff/steady.yaml", one, 1, NULL) > 350);
}

/* tests/data/ps/ff/faults.yaml: two sharded tables, random and fixed worker preemptions (a
** re-queued closure applied twice, staleness columns that vary), a lost ps with a restart from
** the last async checkpoint, an at_step fault and an evaluator polling the checkpoints: the same
** bytes (evaluations.csv among them), and still most of the 3000 closures (and the 575 a restore
** rolls back) skipped between them; with a trace and its chart nothing is skipped (every
** closure stores a span) and the bytes are the same. */
static void ps_faults_checkpoints_evaluator_match(void **state) {
  (void)state;
  run_summary sum;
  assert_true(same_both_ways("tests/data/ps/ff/faults.yaml", NULL, 0, &sum) > 2000);
  assert_int_equal(sum.restarts, 1);
  assert_true(sum.lost_updates > 0 && sum.duplicated_updates > 0 && sum.evaluations >= 3);
  const char *traced[] = {"outputs.trace=true", "outputs.plots=[faults]", "training.steps=600"};
  assert_int_equal(same_both_ways("tests/data/ps/ff/faults.yaml", traced, 3, NULL), 0);
}

/* The shipped parameter-server examples with numerics off: ps_spot_vms (workers preempted every
** 20 ms on average, a 2 ms evaluator poll, checkpoints every 500 steps) skips between them;
** ps_embedding reads a CSV of ids, whose rows route each lookup to its shards, so nothing repeats
** and nothing is skipped; a dataset that ends a batch short at each epoch (no repeat) neither. */
static void ps_examples_match(void **state) {
  (void)state;
  const char *sets[] = {"numerics=off", "outputs.trace=false", "outputs.plots=[]"};
  assert_true(same_both_ways("scenarios/examples/ps_spot_vms.yaml", sets, 3, NULL) > 0);
  assert_int_equal(same_both_ways("scenarios/examples/ps_embedding.yaml", sets, 3, NULL), 0);
  const char *partial[] = {"dataset.synthetic.rows=4000", "dataset.repeat=false"};
  assert_int_equal(same_both_ways("tests/data/ps/ff/steady.yaml", partial, 2, NULL), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(every_example_matches_step_by_step),
    cmocka_unit_test(pod_with_faults_and_checkpoints_matches),
    cmocka_unit_test(workers_with_faults_match),
    cmocka_unit_test(collectives_inside_the_step_match),
    cmocka_unit_test(packed_all_reduce_matches),
    cmocka_unit_test(sync_checkpoints_match),
    cmocka_unit_test(repeating_inputs_match),
    cmocka_unit_test(non_periodic_runs_skip_nothing),
    cmocka_unit_test(ps_steady_closures_skip),
    cmocka_unit_test(ps_faults_checkpoints_evaluator_match),
    cmocka_unit_test(ps_examples_match),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
