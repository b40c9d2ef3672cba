/*
** test_embed.c: embedding tables under sync strategies (scenarios/programs/embed.h). TPUEmbedding
** trains to the one-device run's weights; the step's time does not grow with the vocabulary where
** TF moves IndexedSlices (MirroredStrategy, MultiWorkerMirroredStrategy, TPUEmbedding) and does
** where TPUStrategy's XLA program all-reduces the table dense; the loader keeps TPUEmbedding to
** what is modelled.
*/
#include "tests/testutil.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "scenarios/programs/train.h"

enum { MAX_WEIGHTS = 2048 };

static const char *const FILE_ = "tests/data/embed/tables.yaml";

typedef struct outcome {
  run_summary sum;        /* what the run reported */
  double step_time;       /* its last step's step_time_s (the first one's holds the compile) */
  int nweights;           /* rows of final_weights.csv */
  double weight[MAX_WEIGHTS]; /* their values */
  char name[MAX_WEIGHTS][64]; /* their variables */
} outcome;

static void run_with(outcome *o, const char *const *overrides, int n) {
  static scenario s;
  scn_error err;
  if (scenario_load(tu_src(FILE_), overrides, n, &s, &err) != 0) fail_msg("%s", err.msg);
  char *dir = tu_temp_dir("podsim-embed"), path[512];
  memset(o, 0, sizeof *o);
  int rc = train_run(&s, dir, &o->sum, &err);
  if (rc != TR_EXIT_OK) fail_msg("exit %d: %s", rc, err.msg);
  double times[64];
  snprintf(path, sizeof path, "%s/metrics.csv", dir);
  int steps = tu_read_column(path, 2, times, 64, NULL);
  o->step_time = steps > 0 ? times[steps - 1] : 0.0;
  snprintf(path, sizeof path, "%s/final_weights.csv", dir);
  if (s.numerics_full) o->nweights = tu_read_column(path, 2, o->weight, MAX_WEIGHTS, o->name);
  tu_remove_dir(dir);
}

/* The golden cases' tolerance (/work/shared/golden/README.md): 1e-5 + 1e-5 |expected|. */
static void assert_weights_close(const outcome *got, const outcome *want) {
  assert_int_equal(got->nweights, want->nweights);
  assert_true(want->nweights > 1000);  /* 4x2+4 + 200x4 + 50x4 + (3x3 pairs: 3)x1+1 = 1020 floats */
  for (int i = 0; i < want->nweights; i++)
    if (fabs(got->weight[i] - want->weight[i]) > 1e-5 + 1e-5 * fabs(want->weight[i]))
      fail_msg("weight %d: %.9g, one device %.9g", i, got->weight[i], want->weight[i]);
}

/* 8 steps of 16 examples over 4 chips (4 a chip), tables sharded mod 4: each chip's slices go to
** the rows' owners, which sum them in chip order and apply SGD or Adagrad to the touched rows;
** the one-device run sums the same 16 slices in batch order (the chips' slices back to back).
** Both give the weights to the golden tolerance, for each optimizer. A run that dropped a
** chip's slices (or applied them twice) moves the rows by a whole gradient: far outside. */
static void tpu_embedding_trains_to_the_one_device_weights(void **state) {
  (void)state;
  const char *opts[] = {"optimizer={kind: sgd, learning_rate: 0.1}", "optimizer={kind: adagrad, learning_rate: 0.1}"};
  for (int k = 0; k < 2; k++) {
    static outcome one, tpu;
    const char *one_device[] = {"cluster={workers: {count: 1, machine: n2-standard-8}}", "strategy={kind: one_device}",
                                "model.tpu_embedding=false", opts[k]};
    const char *embedded[] = {opts[k], "model.tpu_embedding=true"};
    run_with(&one, one_device, 4);
    run_with(&tpu, embedded, 2);
    assert_int_equal(tpu.sum.steps_completed, 8);
    assert_weights_close(&tpu, &one);
  }
}

/* TPUEmbedding's own optimizer trains the tables, the scenario's the rest: with SGD at rate 1e-30
** for the tables (adagrad 0.1 for the rest) every table row ends at its initial value (a step moves a
** weight of 0.01 or more by under half a float ulp; a run at 1e-30 everywhere gives those) while
** the dense layers move; and the tables' optimizer given
** as the scenario's (adagrad 0.1) is `true`'s run to the bit. A model optimizer that still
** trained the tables moves their 1000 rows. */
static void tables_take_their_own_optimizer(void **state) {
  (void)state;
  static outcome frozen, still, own, same;
  const char *freeze[] = {"model.tpu_embedding={optimizer: {kind: sgd, learning_rate: 1e-30}}"};
  const char *nothing[] = {"model.tpu_embedding={optimizer: {kind: sgd, learning_rate: 1e-30}}",
                           "optimizer={kind: sgd, learning_rate: 1e-30}"};
  const char *given[] = {"model.tpu_embedding={optimizer: {kind: adagrad, learning_rate: 0.1}}"};
  const char *flag[] = {"model.tpu_embedding=true"};
  run_with(&frozen, freeze, 1);
  run_with(&still, nothing, 2);
  run_with(&own, given, 1);
  run_with(&same, flag, 1);
  assert_int_equal(frozen.nweights, 1020);
  int tables = 0, moved = 0;
  for (int i = 0; i < frozen.nweights; i++) {
    int table = frozen.name[i][0] == 't';
    tables += table;
    if (table) assert_true(frozen.weight[i] == still.weight[i]);
    else moved += frozen.weight[i] != still.weight[i];
  }
  assert_int_equal(tables, 1000);  /* t0 200 x 4, t1 50 x 4 */
  assert_true(moved >= 15);        /* of the 20 dense floats */
  assert_int_equal(own.nweights, same.nweights);
  assert_memory_equal(own.weight, same.weight, sizeof own.weight[0] * (size_t)own.nweights);
}

/* The last of 8 steps' simulated time, numerics off, with tables of `vocab` and 50 rows, under `strategy`
** on `cluster`, TPUEmbedding or not. */
static double run_time(int vocab, const char *cluster, const char *strategy, int tpu_embedding) {
  char inputs[160], layers[400];
  snprintf(inputs, sizeof inputs, "model.inputs=[{name: numeric, features: 2}, {name: c0, ids: 1, vocab: %d}, "
           "{name: c1, ids: 1, vocab: 50}]", vocab);
  snprintf(layers, sizeof layers, "model.layers=[{dense: {units: 4, inputs: [numeric], name: bottom}}, "
           "{embedding: {vocab: %d, dim: 4, combiner: sum, inputs: [c0], name: t0}}, "
           "{embedding: {vocab: 50, dim: 4, combiner: sum, inputs: [c1], name: t1}}, "
           "{dot_interaction: {inputs: [bottom, t0, t1]}}, {dense: {units: 1}}]", vocab);
  const char *overrides[] = {"numerics=off", cluster, strategy, tpu_embedding ? "model.tpu_embedding=true"
                             : "model.tpu_embedding=false", inputs, layers};
  static outcome o;
  run_with(&o, overrides, 6);
  assert_int_equal(o.sum.steps_completed, 8);
  return o.step_time;
}

/* 200 against 100,000 rows (x500): the same time within 1% where the step moves the batch's
** rows (every such run here is the same to the picosecond: nothing of the table's size is
** charged), and at least 10% more for TPUStrategy without TPUEmbedding, whose all-reduce
** carries the 1.6 MB table (and whose update runs on all of it). The first step, whose compile
** time counts the program's ops, is left out. */
static void step_time_does_not_grow_with_the_vocabulary(void **state) {
  (void)state;
  const char *gpus = "cluster={workers: {machine: {cpus: 16, flops: 800GFLOP/s, ram: 64GiB, accelerators: "
                     "{count: 4, peak: 312TFLOP/s, hbm: 40GiB, hbm_bandwidth: 1.5TB/s, link: 32GB/s}}}}";
  const char *cases[][3] = {
    {gpus, "strategy={kind: mirrored, devices: [GPU:0, GPU:1, GPU:2, GPU:3], all_reduce: ring}", "0"},
    {"cluster={workers: {count: 2, machine: n2-standard-8}}", "strategy={kind: multi_worker_mirrored, all_reduce: ring}", "0"},
    {"cluster={tpu: {type: v4-8}}", "strategy={kind: tpu}", "1"},
  };
  for (int k = 0; k < 3; k++) {
    double small = run_time(200, cases[k][0], cases[k][1], cases[k][2][0] == '1');
    double large = run_time(100000, cases[k][0], cases[k][1], cases[k][2][0] == '1');
    print_message("%s: %.9g s at 200 rows, %.9g s at 100,000\n", cases[k][1], small, large);
    assert_true(fabs(large / small - 1.0) <= 0.01);
  }
  double small = run_time(200, "cluster={tpu: {type: v4-8}}", "strategy={kind: tpu}", 0);
  double large = run_time(100000, "cluster={tpu: {type: v4-8}}", "strategy={kind: tpu}", 0);
  print_message("tpu, dense: %.9g s at 200 rows, %.9g s at 100,000\n", small, large);
  assert_true(large > 1.1 * small);
}

/* TPUEmbedding is TPUStrategy's, on replicas of one chip: refused elsewhere, at its key. */
static void tpu_embedding_is_refused_where_not_modelled(void **state) {
  (void)state;
  static scenario s;
  scn_error err;
  const char *mirrored[] = {"cluster={workers: {count: 2, machine: n2-standard-8}}",
                            "strategy={kind: multi_worker_mirrored}"};
  assert_int_not_equal(scenario_load(tu_src(FILE_), mirrored, 2, &s, &err), 0);
  assert_non_null(strstr(err.msg, "model.tpu_embedding: goes with strategy kind tpu"));
  const char *accum[] = {"training.gradient_accumulation_steps=2"};
  assert_int_not_equal(scenario_load(tu_src(FILE_), accum, 1, &s, &err), 0);
  assert_non_null(strstr(err.msg, "model.tpu_embedding: is not modelled with training.gradient_accumulation_steps"));
  const char *adam[] = {"model.tpu_embedding={optimizer: {kind: adam}}"};
  assert_int_not_equal(scenario_load(tu_src(FILE_), adam, 1, &s, &err), 0);
  assert_non_null(strstr(err.msg, "model.tpu_embedding.optimizer: TPUEmbedding's optimizers modelled are sgd and adagrad"));
}

/* model.tpu_embedding.tables: 1 puts the larger table (t0, 200 rows) through TPUEmbedding and keeps
** t1 (50 rows) on every chip, its gradient all-reduced dense and applied by the scenario's
** optimizer, as Google's MLPerf DLRM keeps its small tables (num_tables_in_ec). With the tables'
** SGD at 1e-30, t0's 800 floats end where the all-frozen run leaves them while t1's touched rows move (a
** run that kept t1 in TPUEmbedding freezes it too; one that took the smaller table freezes t1 and
** moves t0); and with adagrad 0.1 for both the run trains to the one-device weights (a replicated
** table whose gradient missed the all-reduce, or was applied twice, moves by whole gradients). */
static void tables_limits_tpu_embedding_to_the_largest(void **state) {
  (void)state;
  static outcome one, split, frozen, still;
  const char *one_device[] = {"cluster={workers: {count: 1, machine: n2-standard-8}}", "strategy={kind: one_device}",
                              "model.tpu_embedding=false"};
  const char *largest[] = {"model.tpu_embedding={tables: 1}"};
  const char *freeze[] = {"model.tpu_embedding={optimizer: {kind: sgd, learning_rate: 1e-30}, tables: 1}"};
  const char *nothing[] = {"model.tpu_embedding={optimizer: {kind: sgd, learning_rate: 1e-30}}",
                           "optimizer={kind: sgd, learning_rate: 1e-30}"};
  run_with(&one, one_device, 3);
  run_with(&split, largest, 1);
  assert_weights_close(&split, &one);
  run_with(&frozen, freeze, 1);
  run_with(&still, nothing, 2);
  int t0 = 0, t1 = 0, t1_moved = 0;
  for (int i = 0; i < frozen.nweights; i++) {
    if (!strncmp(frozen.name[i], "t0", 2)) {
      t0++;
      assert_true(frozen.weight[i] == still.weight[i]);
    } else if (!strncmp(frozen.name[i], "t1", 2)) {
      t1++;
      t1_moved += frozen.weight[i] != still.weight[i];
    }
  }
  assert_int_equal(t0, 800);
  assert_int_equal(t1, 200);
  assert_int_equal(t1_moved, 37 * 4); /* the 37 ids of c1 in the 64 rows the 8 batches read */
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(tpu_embedding_trains_to_the_one_device_weights),
    cmocka_unit_test(tables_take_their_own_optimizer),
    cmocka_unit_test(step_time_does_not_grow_with_the_vocabulary),
    cmocka_unit_test(tpu_embedding_is_refused_where_not_modelled),
    cmocka_unit_test(tables_limits_tpu_embedding_to_the_largest),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
