/*
** test_training.c: tiny whole-engine drivers, each proving one invariant of the training
** program (scenario -> strategy -> engine -> numerics -> outputs). All start from
** tests/data/train/base.yaml (the golden mlp_momentum model and data, plain SGD) and change
** what they study through overrides, as `podsim run --set` does.
*/
#include "tests/testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scenarios/programs/overlap.h"
#include "scenarios/programs/train.h"

enum { MAX_ROWS = 512 };

typedef struct run {
  run_summary sum;        /* what train_run reported */
  int nsteps;             /* rows of metrics.csv */
  double loss[MAX_ROWS];  /* metrics.csv loss column */
  double comm[MAX_ROWS];  /* metrics.csv comm_s column */
  double step[MAX_ROWS];  /* step_time_s */
  double compute[MAX_ROWS]; /* compute_s */
  double input[MAX_ROWS]; /* input_s */
  double compile[MAX_ROWS]; /* compile_s */
  int nweights;           /* rows of final_weights.csv */
  double weight[MAX_ROWS];/* final_weights.csv value column */
  int pack_spans;         /* trace.json's all-reduce pack spans (0 without a trace) */
} run;

/* Spans of the packed gradient all-reduce in a trace.json (none when there is no file). */
static int count_pack_spans(const char *path) {
  FILE *f = fopen(path, "r");
  if (f == NULL) return 0;
  static char text[1 << 20];
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  int count = 0;
  for (const char *at = text; (at = strstr(at, "\"all-reduce pack ")) != NULL; at++) count++;
  return count;
}

static void train_file(run *r, const char *file, const char *const *overrides, int n) {
  static scenario s;
  scn_error err;
  if (scenario_load(tu_src(file), overrides, n, &s, &err) != 0)
    fail_msg("%s", err.msg);
  char dir[] = "/tmp/podsim-train-XXXXXX", path[128];
  assert_non_null(mkdtemp(dir));
  int rc = train_run(&s, dir, &r->sum, &err);
  if (rc != TR_EXIT_OK) fail_msg("exit %d: %s", rc, err.msg);
  snprintf(path, sizeof path, "%s/metrics.csv", dir);
  r->nsteps = tu_read_column(path, 3, r->loss, MAX_ROWS, NULL);
  tu_read_column(path, 6, r->comm, MAX_ROWS, NULL);
  tu_read_column(path, 2, r->step, MAX_ROWS, NULL);
  tu_read_column(path, 5, r->compute, MAX_ROWS, NULL);
  tu_read_column(path, 9, r->input, MAX_ROWS, NULL);
  tu_read_column(path, 10, r->compile, MAX_ROWS, NULL);
  snprintf(path, sizeof path, "%s/final_weights.csv", dir);
  r->nweights = tu_read_column(path, 2, r->weight, MAX_ROWS, NULL);
  snprintf(path, sizeof path, "%s/trace.json", dir);
  r->pack_spans = count_pack_spans(path);
  snprintf(path, sizeof path, "rm -rf '%s'", dir);
  assert_int_equal(system(path), 0);
}

static void train(run *r, const char *const *overrides, int n) {
  train_file(r, "tests/data/train/base.yaml", overrides, n);
}

static void assert_same_training(const run *a, const run *b) {
  assert_int_equal(a->nsteps, b->nsteps);
  assert_int_equal(a->nweights, b->nweights);
  for (int i = 0; i < a->nsteps; i++)
    if (!TU_GOLDEN_CLOSE(a->loss[i], b->loss[i])) fail_msg("step %d loss %.9g vs %.9g", i, a->loss[i], b->loss[i]);
  for (int i = 0; i < a->nweights; i++)
    if (!TU_GOLDEN_CLOSE(a->weight[i], b->weight[i])) fail_msg("weight %d %.9g vs %.9g", i, a->weight[i], b->weight[i]);
}

/* G = 30 over 4 workers splits 8,8,7,7 (the rebatch rule). With loss_reduction global_batch each
** replica's gradient is of (its loss sum)/30, and their SUM is the gradient of the whole batch's
** mean: the same training as one device, up to the ring's summation order. */
static void uneven_split_trains_like_one_device(void **state) {
  (void)state;
  static run one, four;
  train(&one, NULL, 0);
  const char *mwm[] = { "strategy.kind=multi_worker_mirrored", "cluster.workers.count=4" };
  train(&four, mwm, 2);
  assert_int_equal(four.sum.replicas, 4);
  assert_int_equal(four.nsteps, 20);
  assert_same_training(&one, &four);
}

/* loss_reduction sum differentiates the loss SUM, G times the global_batch gradient: plain SGD
** with learning_rate 0.05/30 must then train exactly as global_batch with 0.05 (up to rounding). */
static void sum_reduction_is_global_batch_times_g(void **state) {
  (void)state;
  static run mean, sum;
  train(&mean, NULL, 0);
  const char *s[] = { "training.loss_reduction=sum", "optimizer.learning_rate=0.0016666666666666668" };
  train(&sum, s, 2);
  assert_same_training(&mean, &sum);
}

/* per_replica_mean with 2 equal slices of 15 gives each replica the gradient of its mean, and
** their sum is 2x the global-batch gradient: the same as global_batch with twice the rate. */
static void per_replica_mean_is_replicas_times_global_batch(void **state) {
  (void)state;
  static run mean, twice;
  const char *pm[] = { "strategy.kind=multi_worker_mirrored", "cluster.workers.count=2",
                       "training.loss_reduction=per_replica_mean" };
  train(&mean, pm, 3);
  const char *gb[] = { "strategy.kind=multi_worker_mirrored", "cluster.workers.count=2",
                       "optimizer.learning_rate=0.1" };
  train(&twice, gb, 3);
  assert_same_training(&mean, &twice);
}

/* Gradient accumulation (accum.h). With loss_reduction global_batch every micro-batch's loss is
** (1/G) x the sum of its examples' losses, and a gradient is linear in its examples' losses, so
** the N micro-batches' gradients sum to (1/G) x the sum over all G examples: the gradient of one
** step of the whole batch, whatever the loss. Only the order of float32 sums differs, so every
** loss and weight agrees within the goldens' 1e-5: 2 replicas of 15 rows each as 3
** micro-batches of 5, 20 steps. The all-reduce runs once a step, of the same gradient bytes,
** so each step's communication is the same; the compute is three passes of 5 rows, more than one
** of 15 (each kernel's fixed cost thrice) and less than three of 15; and the device keeps one
** micro-batch's activations: a lower peak. A run without accumulation differs after step 0 when
** the three micro-batches are applied as steps of their own (5-row global batches). */
static void accumulation_is_one_step_of_the_whole_batch(void **state) {
  (void)state;
  static run whole, micro, steps;
  const char *two[] = { "strategy.kind=multi_worker_mirrored", "cluster.workers.count=2" };
  train(&whole, two, 2);
  const char *accum[] = { "strategy.kind=multi_worker_mirrored", "cluster.workers.count=2",
                          "training.gradient_accumulation_steps=3" };
  train(&micro, accum, 3);
  assert_same_training(&whole, &micro);
  for (int i = 0; i < whole.nsteps; i++) {
    assert_true(micro.comm[i] == whole.comm[i]);
    assert_true(micro.compute[i] > whole.compute[i] && micro.compute[i] < 3 * whole.compute[i]);
  }
  assert_true(micro.sum.memory_peak_bytes < whole.sum.memory_peak_bytes);
  const char *small[] = { "strategy.kind=multi_worker_mirrored", "cluster.workers.count=2",
                          "dataset.global_batch=10" };
  train(&steps, small, 3);
  int differs = 0;
  for (int i = 0; i < whole.nweights; i++) differs |= !TU_GOLDEN_CLOSE(steps.weight[i], micro.weight[i]);
  assert_true(differs);
}

/* 384 rows, G = 100: an epoch is 4 steps (100, 100, 100, 84); 2 epochs are 8 steps, and
** repeat: false stops a 20-step run after the one pass. */
static void epochs_and_no_repeat_count_passes(void **state) {
  (void)state;
  static run r;
  train_file(&r, "tests/data/train/epochs.yaml", NULL, 0);
  assert_int_equal(r.nsteps, 8);
  assert_int_equal(r.sum.steps_completed, 8);
  /* Step 4 starts the second pass at row 0: the same 100 rows as step 0, after one pass of
  ** training on them, so its loss is lower. */
  assert_true(r.loss[4] < r.loss[0]);
  const char *once[] = { "dataset.global_batch=100", "dataset.repeat=false" };
  train(&r, once, 2);
  assert_int_equal(r.nsteps, 4);
}

/* The gradient all-reduce over 3 workers on a star fabric: 195 floats split 65 per rank
** (260 bytes); each of the 2(p-1) = 4 ring steps crosses 2 links of latency 5 us at
** min(100 GB/s, NIC 16 Gbps = 2e9 B/s):  4 * (10 us + 260 B / 2e9 B/s) = 4 * 10.13 us.
** The 2 reduce-scatter steps also add 65 floats on the receiver's 400 GFLOP/s cpu:
** ceil(65 / 400e9 s) = 163 ps each.  comm_s = 40.52 us + 326 ps = 4.0520326e-5 s. */
static void all_reduce_time_is_the_ring_closed_form(void **state) {
  (void)state;
  static run r;
  const char *three[] = { "strategy.kind=multi_worker_mirrored", "cluster.workers.count=3" };
  train(&r, three, 2);
  for (int i = 0; i < r.nsteps; i++)
    if (fabs(r.comm[i] - 4.0520326e-5) > 1e-15) fail_msg("step %d comm_s %.12g", i, r.comm[i]);
}

/* CollectiveAllReduce's group_by_size over the reversed variables of tests/data/train/
** overlap.yaml (kernel 0: 128 floats, bias 0: 16, kernel 1: 64, bias 1: 4): a pack closes once its
** bytes EXCEED bytes_per_pack, the variable that crosses it included; 0 is one pack. XLA's
** combiner (the TPU's packs) instead keeps every pack within its threshold. */
static void packs_follow_group_by_size(void **state) {
  (void)state;
  static const size_t floats[] = {128, 16, 64, 4};
  ovl_pack p[4];
  /* 100 B: bias 1 (16 B) leaves the pack open, kernel 1 takes it to 272 > 100: closed; bias 0
  ** (64 B) opens the next, kernel 0 takes it to 576. Reduce order: layer 1's first. */
  assert_int_equal(ovl_group(floats, 4, 100, OVL_GROUP_BY_SIZE, p), 2);
  assert_true(p[0].first_var == 2 && p[0].last_var == 3 && p[0].off == 144 && p[0].count == 68);
  assert_true(p[1].first_var == 0 && p[1].last_var == 1 && p[1].off == 0 && p[1].count == 144);
  /* 16 B: bias 1 is exactly 16, not more, so kernel 1 joins it; bias 0 (64) and kernel 0 alone. */
  assert_int_equal(ovl_group(floats, 4, 16, OVL_GROUP_BY_SIZE, p), 3);
  assert_true(p[0].first_var == 2 && p[0].count == 68 && p[1].first_var == 1 && p[1].last_var == 1 &&
              p[1].off == 128 && p[2].first_var == 0 && p[2].last_var == 0 && p[2].count == 128);
  /* 15 B: every variable passes it alone. */
  assert_int_equal(ovl_group(floats, 4, 15, OVL_GROUP_BY_SIZE, p), 4);
  for (int j = 0; j < 4; j++) assert_true(p[j].first_var == 3 - j && p[j].last_var == 3 - j);
  /* 0 (TF's default) and a size beyond the model: one pack of all 212 floats. */
  for (int k = 0; k < 2; k++) {
    assert_int_equal(ovl_group(floats, 4, k ? 1e9 : 0, OVL_GROUP_BY_SIZE, p), 1);
    assert_true(p[0].first_var == 0 && p[0].last_var == 3 && p[0].off == 0 && p[0].count == 212);
  }
  /* XLA's combiner never passes its threshold. 300 B: bias 1 + kernel 1 = 272 fit; bias 0 would
  ** make 336, so it opens the next, and kernel 0 (512 > 300) stays alone. */
  assert_int_equal(ovl_group(floats, 4, 300, OVL_XLA_COMBINER, p), 3);
  assert_true(p[0].first_var == 2 && p[0].last_var == 3 && p[0].count == 68 && p[1].first_var == 1 &&
              p[1].last_var == 1 && p[2].first_var == 0 && p[2].last_var == 0);
  /* 100 B: kernel 1 (256 B) cannot join bias 1 (16 B): every all-reduce alone; 0 likewise. */
  for (int k = 0; k < 2; k++) {
    assert_int_equal(ovl_group(floats, 4, k ? 100 : 0, OVL_XLA_COMBINER, p), 4);
    for (int j = 0; j < 4; j++) assert_true(p[j].first_var == 3 - j && p[j].last_var == 3 - j);
  }
  /* Exactly the model's 848 B: one combined all-reduce. */
  assert_int_equal(ovl_group(floats, 4, 848, OVL_XLA_COMBINER, p), 1);
}

/* tests/data/train/overlap.yaml, two workers of 100 MFLOP/s on a star (links 5 us, NICs 16 Gbps =
** 2e9 B/s), ring all-reduce of n floats: 2 rounds (reduce-scatter, all-gather) of one chunk of
** n/2 floats over 2 links, plus the reduce-scatter's n/2 additions on the receiver's CPU:
**   A(n) = 2 (10 us + 2n B / 2e9 B/s) + (n/2) / 1e8 s.
** Without packs a step is C + A(212) + U (C forward and backward, U the optimizer), comm_s
** A(212) = 20 us + 0.424 us + 1.06 us = 21.484 us.
** With bytes_per_pack 100B, layer 1's 68 floats are pack 1 and layer 0's 144 pack 2. Pack 1
** starts as the backward passes layer 1 and ends before it is done: layer 0's kernel gradient
** alone is 2 x 15 x 8 x 16 = 3840 FLOPs = 38.4 us, pack 1 takes 20.136 us of links plus its 34
** additions, which share the CPU with that backward and so delay it by exactly their 0.34 us
** (the CPU does the same work either way). Pack 2 starts when the backward ends and runs alone:
** what the step still waits for, comm_s, is A(144) = 20 us + 0.288 us + 0.72 us = 21.008 us, and
**   step(packs) = step(none) - A(212) + A(144) + 0.34 us = step(none) - 0.136 us,
**   compute_s(packs) = compute_s(none) + 0.34 us.
** Each exec ends on a whole picosecond, and the packed backward is two execs, not one: 2 ps of
** slack. Both runs compute values, and the weights are the same bits (the packs' sums are the
** whole buffer's, overlap.h); on 3 workers too, where a ring's sum order depends on the chunk. */
static void packs_overlap_the_backward_pass(void **state) {
  (void)state;
  static run none, packs;
  const char *zero[] = {"strategy.communication.bytes_per_pack=0B", "outputs.trace=true"};
  const char *hundred[] = {"strategy.communication.bytes_per_pack=100B", "outputs.trace=true"};
  train_file(&none, "tests/data/train/overlap.yaml", zero, 2);
  train_file(&packs, "tests/data/train/overlap.yaml", hundred, 2);
  assert_int_equal(none.nsteps, 6);
  assert_int_equal(packs.nsteps, 6);
  for (int i = 1; i < 6; i++) {  /* step 0 also waits for its first batch, the same in both */
    if (fabs(none.comm[i] - 21.484e-6) > 2e-12) fail_msg("step %d comm_s %.12g without packs", i, none.comm[i]);
    if (fabs(packs.comm[i] - 21.008e-6) > 2e-12) fail_msg("step %d comm_s %.12g with packs", i, packs.comm[i]);
    if (fabs(packs.step[i] - (none.step[i] - 0.136e-6)) > 2e-12)
      fail_msg("step %d: %.12g s with packs, %.12g without", i, packs.step[i], none.step[i]);
    if (fabs(packs.compute[i] - (none.compute[i] + 0.34e-6)) > 2e-12)
      fail_msg("step %d compute_s %.12g with packs, %.12g without", i, packs.compute[i], none.compute[i]);
    assert_true(packs.step[i] < none.step[i]);
  }
  /* summary.json's hidden part: all of pack 1, 2 (10 us + 136 B / 2e9 B/s) plus its 34 additions
  ** at half the CPU (the backward has the other half): 20.136 us + 0.68 us = 20.816 us, every step. */
  assert_int_equal(packs.sum.all_reduce_packs, 2);
  assert_int_equal(none.sum.all_reduce_packs, 0);
  if (fabs(packs.sum.means.comm_hidden_s - 20.816e-6) > 1e-12) fail_msg("hidden %.12g s", packs.sum.means.comm_hidden_s);
  /* Two packs a step on each replica's track; none without packs. */
  assert_int_equal(packs.pack_spans, 6 * 2 * 2);
  assert_int_equal(none.pack_spans, 0);
  assert_int_equal(packs.nweights, none.nweights);
  for (int i = 0; i < none.nweights; i++) assert_true(packs.weight[i] == none.weight[i]);
  for (int i = 0; i < none.nsteps; i++) assert_true(packs.loss[i] == none.loss[i]);
  const char *three[] = {"cluster.workers.count=3", "strategy.communication.bytes_per_pack=100B"};
  const char *three_none[] = {"cluster.workers.count=3"};
  train_file(&packs, "tests/data/train/overlap.yaml", three, 2);
  train_file(&none, "tests/data/train/overlap.yaml", three_none, 1);
  assert_int_equal(packs.nweights, none.nweights);
  for (int i = 0; i < none.nweights; i++) assert_true(packs.weight[i] == none.weight[i]);
}

/* Embedding (mean over 3 ids), tanh, softmax read with from_logits false, Adagrad: across three
** workers it learns (mean loss from 1.10 down below 0.75 in 100 steps) and trains exactly as one
** device does, so the embedding's scattered row gradients sum correctly through the ring. */
static void embedding_model_trains_like_one_device(void **state) {
  (void)state;
  static run three, one;
  train_file(&three, "tests/data/train/embedding.yaml", NULL, 0);
  assert_int_equal(three.sum.replicas, 3);
  assert_true(three.loss[0] > 1.0 && three.loss[99] < 0.75);
  const char *single[] = { "strategy.kind=one_device" };
  train_file(&one, "tests/data/train/embedding.yaml", single, 1);
  assert_same_training(&one, &three);
}

/* A language model (tests/data/train/lm.yaml): a causal transformer block scores the next token
** at each of 4 positions, a label per position (dataset.labels), the loss the mean over tokens.
** It learns (2.80 at step 0, ln 13 = 2.56 plus the initial weights' noise, to below 0.7 in 60
** steps), and on 4 multi_worker_mirrored workers (13 examples each, their 52 label rows split
** with them) it trains as on one device: the per-position labels travel with their examples. */
static void language_model_trains_like_one_device(void **state) {
  (void)state;
  static run one, four;
  train_file(&one, "tests/data/train/lm.yaml", NULL, 0);
  assert_int_equal(one.nsteps, 60);
  assert_true(one.loss[0] > 2.5 && one.loss[59] < 0.7);
  const char *mwm[] = {"strategy.kind=multi_worker_mirrored", "cluster.workers.count=4"};
  train_file(&four, "tests/data/train/lm.yaml", mwm, 2);
  assert_int_equal(four.sum.replicas, 4);
  assert_same_training(&one, &four);
}

/* On four GPUs (two per VM) the golden r4 case trains to the TensorFlow numbers, as on four CPU
** workers: the devices change the time, never the math. */
static void accelerators_train_the_golden_case(void **state) {
  (void)state;
  static run r;
  train_file(&r, "tests/data/train/gpus.yaml", NULL, 0);
  assert_int_equal(r.sum.replicas, 4);
  static double want[MAX_ROWS];
  int n = tu_read_column(tu_src("tests/golden/mlp_momentum/r4/expected_final.csv"), 2, want, MAX_ROWS, NULL);
  assert_int_equal(n, r.nweights);
  for (int i = 0; i < n; i++)
    if (!TU_GOLDEN_CLOSE(r.weight[i], want[i])) fail_msg("weight %d %.9g vs %.9g", i, r.weight[i], want[i]);
}

/* 250 MB of HBM cannot hold the 256 MiB (268435456 B) runtime workspace on top of the model:
** the job fails as ResourceExhaustedError on the first GPU, exit 3, saying what filled it. */
static void hbm_too_small_fails_the_job(void **state) {
  (void)state;
  static scenario s;
  scn_error err;
  const char *small[] = { "cluster.workers.machine.accelerators.hbm=250MB" };
  if (scenario_load(tu_src("tests/data/train/gpus.yaml"), small, 1, &s, &err) != 0) fail_msg("%s", err.msg);
  char dir[] = "/tmp/podsim-hbm-XXXXXX", cmd[64];
  assert_non_null(mkdtemp(dir));
  run_summary sum;
  assert_int_equal(train_run(&s, dir, &sum, &err), TR_EXIT_JOB_FAILED);
  assert_string_equal(sum.error.kind, "ResourceExhaustedError");
  assert_string_equal(sum.error.device, "/job:worker/replica:0/task:0/device:GPU:0");
  assert_true(sum.error.capacity_bytes == 250000000u);
  assert_non_null(strstr(sum.error.message, "runtime workspace 268435456"));
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

/* numerics: off runs the same program on shapes and costs alone: every op charges the same
** FLOPs and bytes and the all-reduce moves the same bytes, so the timing is identical to the
** bit, while the loss is not a number and no weight has a value. On shapes alone an all-reduce
** may go in closed form (collective.c; since its reductions on rank cpus may too, issue 16), so
** it may take fewer events, never more. */
static void numerics_off_times_exactly_like_full(void **state) {
  (void)state;
  static run full, off;
  const char *four[] = { "strategy.kind=multi_worker_mirrored", "cluster.workers.count=4" };
  train(&full, four, 2);
  const char *four_off[] = { "strategy.kind=multi_worker_mirrored", "cluster.workers.count=4",
                             "numerics=off" };
  train(&off, four_off, 3);
  assert_true(full.sum.sim_time_s == off.sum.sim_time_s);
  assert_true(off.sum.events <= full.sum.events);
  assert_int_equal(off.nsteps, 20);
  for (int i = 0; i < off.nsteps; i++) assert_true(isnan(off.loss[i]) && full.comm[i] == off.comm[i]);
  assert_int_equal(off.nweights, 0);
}

/* A model the host could never hold: 8 x (32768 x 32768) dense layers, 8.6e9 parameters
** (34 GB of variables alone, 103 GB with SGD-momentum slots and gradients) on 16 GiB of RAM
** per worker. With numerics off podsim still plans it: the job fails as ResourceExhaustedError
** before any step, without the host allocating a byte of it. */
static void numerics_off_plans_what_the_host_cannot_hold(void **state) {
  (void)state;
  static scenario s;
  scn_error err;
  if (scenario_load(tu_src("tests/data/train/huge.yaml"), NULL, 0, &s, &err) != 0) fail_msg("%s", err.msg);
  char dir[] = "/tmp/podsim-huge-XXXXXX", cmd[64];
  assert_non_null(mkdtemp(dir));
  run_summary sum;
  assert_int_equal(train_run(&s, dir, &sum, &err), TR_EXIT_JOB_FAILED);
  assert_string_equal(sum.error.kind, "ResourceExhaustedError");
  assert_true(sum.error.needed_bytes > 100e9);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

/* Every all-reduce algorithm sums the same gradients in its own order: over 6 workers they all
** train to the ring's weights within the golden tolerance, and they take different times. */
static void every_all_reduce_algorithm_trains_the_same(void **state) {
  (void)state;
  static run ring, other;
  const char *algos[] = { "bidirectional_ring", "tree", "halving_doubling", "double_binary_tree", "torus" };
  const char *base[] = { "strategy.kind=multi_worker_mirrored", "cluster.workers.count=6",
                         "cluster.fabric.topology=torus2d", "strategy.all_reduce=ring" };
  train(&ring, base, 4);
  for (size_t a = 0; a < sizeof algos / sizeof *algos; a++) {
    char set[64];
    snprintf(set, sizeof set, "strategy.all_reduce=%s", algos[a]);
    const char *o[] = { base[0], base[1], base[2], set };
    train(&other, o, 4);
    assert_same_training(&ring, &other);
    if (other.comm[0] == ring.comm[0]) fail_msg("%s takes the ring's time", algos[a]);
  }
}

/* A NIC caps its VM's total egress, whatever the fabric: 4 workers on a ring fabric (a link to
** each neighbour), links of 100 GB/s, NICs of 8 Mbit/s = 1 MB/s, no latency. The ring all-reduce
** of the 780 B of gradients (chunks of 49, 49, 49, 48 floats) sends one chunk per step to one
** neighbour: 6 steps of 196 B at 1 MB/s = 1.176 ms, plus the reductions' few hundred ps. The
** bidirectional ring sends half a chunk each way at once over two links, but both halves leave
** through the one NIC at 0.5 MB/s each: the same 1.176 ms. With the NIC capping each link (the
** bug), it took 0.6 ms: the VM sent at twice its NIC rate. */
static void a_nic_caps_the_vm_not_each_link(void **state) {
  (void)state;
  static run ring, bidi;
  const char *base[] = { "strategy.kind=multi_worker_mirrored", "cluster.workers.count=4",
                         "cluster.fabric.topology=ring", "cluster.fabric.latency=0s",
                         "cluster.workers.machine.nic=8Mbps", "strategy.all_reduce=ring" };
  train(&ring, base, 6);
  base[5] = "strategy.all_reduce=bidirectional_ring";
  train(&bidi, base, 6);
  for (int i = 1; i < ring.nsteps; i++) {
    assert_true(fabs(ring.comm[i] - 1.176e-3) < 1e-9);
    assert_true(fabs(bidi.comm[i] - 1.176e-3) < 1e-9);
  }
}

/* Times in metrics.csv are exact decimal picoseconds: compare to the picosecond. */
static void assert_seconds(double got, double want, const char *what, int step) {
  if (fabs(got - want) > 0.5e-12) fail_msg("step %d %s %.12g, expected %.12g", step, what, got, want);
}

/* tests/data/train/input.yaml: a batch of 10 examples is 10 x (8 floats + an int32 label) = 360 B
** over the 1 GB/s link: copy T = 1 us + 0.36 us = 1.36 us. Making it costs per_batch 100 us of
** one vCPU = 1e5 FLOPs of work on the 2 GFLOP/s VM CPU, which nothing else uses (the model runs
** on the accelerator): P = 50 us. With no prefetch every step asks, then waits P + T = 51.36 us.
** With prefetch 2 the first step still waits 51.36 us; the next batches are made while it
** computes (the model's step, ~500 us on 20 MFLOP/s, is longer than P + T), so from step 1 on
** nothing is waited and every step is shorter by exactly 51.36 us; the math is unchanged. */
static void prefetch_hides_a_cheap_pipeline(void **state) {
  (void)state;
  static run none, two;
  const char *p0[] = { "dataset.prefetch=0" }, *p2[] = { "dataset.prefetch=2" };
  train_file(&none, "tests/data/train/input.yaml", p0, 1);
  train_file(&two, "tests/data/train/input.yaml", p2, 1);
  assert_int_equal(none.nsteps, 6);
  assert_true(none.compute[0] > 51.36e-6);
  for (int i = 0; i < none.nsteps; i++) {
    assert_seconds(none.input[i], 51.36e-6, "input_s without prefetch", i);
    assert_seconds(none.step[i], none.input[i] + none.compute[i], "step_time_s", i);
    assert_seconds(two.input[i], i == 0 ? 51.36e-6 : 0, "input_s with prefetch 2", i);
    assert_seconds(none.step[i] - two.step[i], i == 0 ? 0 : 51.36e-6, "the saving", i);
    assert_true(none.compute[i] == two.compute[i] && none.compile[i] == 0);
  }
  assert_same_training(&none, &two);
}

/* The same VM with a 10 ms-per-batch pipeline: P = 1e7 FLOPs / 2 GFLOP/s = 5 ms, ten times the
** model's step. With the default prefetch of 1 the producer never idles (a step asks for the
** next batch as it starts, long before the current one is made), so batch k is on the device at
** 5 ms x (k + 1) + T and, from step 1 on, every step lasts exactly the pipeline's 5 ms: the
** steps are input-bound, and input_s is the 5 ms less the step's own compute. */
static void an_expensive_pipeline_sets_the_pace(void **state) {
  (void)state;
  static run r;
  const char *slow[] = { "dataset.pipeline.per_batch=10ms" };
  train_file(&r, "tests/data/train/input.yaml", slow, 1);
  assert_seconds(r.input[0], 5e-3 + 1.36e-6, "first input_s", 0);
  for (int i = 1; i < r.nsteps; i++) {
    assert_seconds(r.step[i], 5e-3, "step_time_s", i);
    assert_seconds(r.input[i], 5e-3 - r.compute[i], "input_s", i);
  }
}

/* A CPU replica has no device of its own: the pipeline runs on the CPU the model computes on.
** base.yaml's step alone takes C = 1.053125 us on the 400 GFLOP/s VM; a 10 ms-per-batch pipeline
** is 10 ms x 50 GFLOP/s per vCPU = 5e8 FLOPs: P = 1.25 ms alone. Step 0 waits P, then computes
** while batch 1 is made beside it, each at half the rate: compute_s = 2C. Batch 1 is done
** P - C later; from then on the CPU never idles and every step lasts P + C = 1.251053125 ms,
** of which input_s is P - C and compute_s 2C (the last step P: nothing is made beside it). */
static void a_cpu_replica_shares_its_cpu_with_the_pipeline(void **state) {
  (void)state;
  static run r;
  const char *slow[] = { "dataset.pipeline={per_example: 0us, per_batch: 10ms}" };
  train(&r, slow, 1);
  const double C = 1.053125e-6, P = 1.25e-3;
  assert_seconds(r.input[0], P, "input_s", 0);
  int last = r.nsteps - 1;  /* no batch is made beside the last step: it computes alone */
  for (int i = 0; i < r.nsteps; i++) {
    assert_seconds(r.compute[i], i == last ? C : 2 * C, "compute_s", i);
    if (i == 0) continue;
    assert_seconds(r.step[i], i == last ? P : P + C, "step_time_s", i);
    assert_seconds(r.input[i], P - C, "input_s", i);
  }
}

/* XLA (training.jit_compile) compiles the step once, before the first: the traced program of
** input.yaml's model has 16 ops (dense 8->16 relu: forward bias, GEMM, relu; backward relu,
** kernel and bias gradients (the first layer needs no input gradient); 2 updates = 8. Dense
** 16->3: forward bias, GEMM; backward kernel, bias and input gradients; 2 updates = 7. The
** loss = 1), so the default model gives 1 s + 16 x 50 ms = 1.8 s, in step 0's compile_s and
** step time only. The pipeline fills its buffer meanwhile: step 0 waits for no input. A given
** `time` replaces the model. */
static void compile_time_is_charged_once(void **state) {
  (void)state;
  static run xla, plain, fixed;
  const char *jit[] = { "training.jit_compile=true" };
  train_file(&xla, "tests/data/train/input.yaml", jit, 1);
  train_file(&plain, "tests/data/train/input.yaml", NULL, 0);
  assert_true(xla.sum.compile_s == 1.8 && plain.sum.compile_s == 0);
  for (int i = 0; i < xla.nsteps; i++) {
    assert_seconds(xla.compile[i], i == 0 ? 1.8 : 0, "compile_s", i);
    assert_seconds(xla.step[i], xla.compile[i] + xla.input[i] + xla.compute[i], "step_time_s", i);
    if (i > 0) assert_seconds(xla.step[i], plain.step[i], "step_time_s after the first", i);
  }
  assert_seconds(xla.input[0], 0, "input_s behind the compile", 0);
  const char *given[] = { "training.jit_compile=true", "training.compile={time: 30s}" };
  train_file(&fixed, "tests/data/train/input.yaml", given, 2);
  assert_true(fixed.sum.compile_s == 30.0);
  assert_same_training(&plain, &fixed);
}

/* Numerics on, the replicas' mirrored variables share one storage and one optimizer, updated once a
** step by the first replica past the all-reduce (issue 31). On 8 workers with momentum slots,
** mixed_float16's dynamic loss scale and a batch_normalization whose moving statistics stay each
** replica's own, the run is the one with 8 separate copies to the bit: b1a4072fe2fec0cf is what
** main's build (0e457a3, a model and an optimizer per replica) gave for this scenario. */
static void shared_mirrored_storage_gives_separate_copies_bits(void **state) {
  (void)state;
  static run r;
  const char *o[] = { "cluster.workers.count=8", "training.steps=20", "outputs.trace=false",
                      "model.layers=[{dense: {units: 32}}, {batch_normalization: {}}, {activation: {activation: relu}}, "
                      "{dense: {units: 4}}]",
                      "optimizer={kind: sgd, learning_rate: 0.05, momentum: 0.9}", "model.dtype_policy=mixed_float16" };
  train_file(&r, "scenarios/examples/quickstart.yaml", o, 6);
  assert_int_equal(r.sum.replicas, 8);
  assert_int_equal(r.nsteps, 20);
  if (r.sum.run_hash != 0xb1a4072fe2fec0cfull) fail_msg("run_hash %016llx, want b1a4072fe2fec0cf", (unsigned long long)r.sum.run_hash);
}

/* TPUStrategy across slices (cluster.tpu.slices): tpu_v4's v4-32 (16 chips, 4 hosts of 4) twice
** is 32 replicas, data parallel, the same global batch; slices: 1 is the plain slice to the bit.
** The gradient all-reduce adds the DCN phase: the model's 26,896 floats are 16 chunks of 1,681,
** each a ring of the 2 slices in halves of 841 and 840 floats; a host's 4 chips share its 25 GB/s
** DCN link, so a round is 22 us of route latency + 4 x 3,364 B / 25e9 = 0.53824 us: 45.07648 us
** for the two rounds, on top of the ICI phases, which are the one slice's all-reduce split in its
** reduce-scatter and all-gather (within a microsecond of it), each a collective of its own that
** pays the TPU's 5.36 us (sim/tpu.c) where the one slice's all-reduce pays it once: 50.43648 us
** more. The loss is the one-slice run's up to
** float rounding: the same examples, summed over 32 replicas instead of 16. */
static void tpu_slices_train_data_parallel_across_dcn(void **state) {
  (void)state;
  static run plain, one, two;
  const char *steps[] = { "training.steps=3", "cluster.tpu.slices=1" };
  train_file(&plain, "scenarios/examples/tpu_v4.yaml", steps, 1);
  train_file(&one, "scenarios/examples/tpu_v4.yaml", steps, 2);
  assert_true(plain.sum.run_hash == one.sum.run_hash);
  const char *sliced[] = { "training.steps=3", "cluster.tpu.slices=2" };
  train_file(&two, "scenarios/examples/tpu_v4.yaml", sliced, 2);
  assert_int_equal(two.sum.replicas, 32);
  assert_int_equal(two.sum.slices, 2);
  /* Every slice's chips are billed: twice the price per simulated hour. */
  double rate = plain.sum.cost_usd / plain.sum.sim_time_s, rate2 = two.sum.cost_usd / two.sum.sim_time_s;
  if (!(fabs(rate2 - 2 * rate) <= 1e-9 * rate)) fail_msg("%.9g USD per simulated second, want %.9g", rate2, 2 * rate);
  assert_true(fabs(two.sum.chip_hours / two.sum.sim_time_s - 32 / 3600.0) <= 1e-12);
  double extra = two.comm[2] - plain.comm[2], dcn = 2 * (22e-6 + 4 * 3364 / 25e9) + 5.36e-6;
  if (fabs(extra - dcn) > 1e-6) fail_msg("the DCN phase added %.9g s, want %.9g s within 1 us", extra, dcn);
  for (int i = 0; i < 3; i++) assert_true(fabs(two.loss[i] - plain.loss[i]) <= 1e-6 * fabs(plain.loss[i]));
}

/* Keras compile(steps_per_execution=N) wraps N steps in one tf.function, so a TF2 TPU pays its host
** round trip (strategy.host_round_trip, 100 us by default) once per N steps: at steps 0, 4 and 8 of
** 10 with N = 4 (the last execution is the 2 steps left), against every step with N = 1. Steps 1-3,
** 5-7 and 9 are 100 us shorter, steps 0, 4, 8 the same, 7 x 100 us = 0.7 ms in all; the numerics are
** untouched (the same losses and weights to the bit), and N = 1 is the default run to the bit. */
static void steps_per_execution_pays_one_round_trip_per_execution(void **state) {
  (void)state;
  static run plain, one, four;
  const char *base[] = { "training.steps=10" };
  const char *n1[] = { "training.steps=10", "training.steps_per_execution=1" };
  const char *n4[] = { "training.steps=10", "training.steps_per_execution=4" };
  train_file(&plain, "scenarios/examples/tpu_v4.yaml", base, 1);
  train_file(&one, "scenarios/examples/tpu_v4.yaml", n1, 2);
  train_file(&four, "scenarios/examples/tpu_v4.yaml", n4, 2);
  assert_true(plain.sum.run_hash == one.sum.run_hash);
  assert_int_equal(four.nsteps, 10);
  for (int i = 0; i < 10; i++) {
    assert_true(four.loss[i] == one.loss[i]);
    double want = i % 4 == 0 ? 0 : 100e-6, got = one.step[i] - four.step[i];  /* 12 printed decimals each */
    if (fabs(got - want) > 1e-12) fail_msg("step %d saved %.12g s, want %.12g s", i, got, want);
  }
  for (int i = 0; i < four.nweights; i++) assert_true(four.weight[i] == one.weight[i]);
  double saved = one.sum.sim_time_s - four.sum.sim_time_s;
  if (fabs(saved - 7 * 100e-6) > 1e-9) fail_msg("saved %.9g s, want 0.0007 s", saved);
}

/* Keras 3's EpochIterator starts a new steps_per_execution chunk at each epoch (its
** _enumerate_iterator: for step in range(0, steps_per_epoch, steps_per_execution))
** (keras/src/trainers/epoch_iterator.py): 2 epochs of 6 steps with N = 4 launch at steps 0, 4, 6
** and 10 (a continuous count would launch at 8 instead of 6), so steps 1-3, 5, 7-9 and 11 save
** their 100 us round trip: 8 x 100 us = 0.8 ms against N = 1. */
static void steps_per_execution_starts_each_epoch_afresh(void **state) {
  (void)state;
  static run one, four;
  const char *n4[] = { "training.steps_per_execution=4" };
  train_file(&one, "tests/data/train/tpu_epochs.yaml", NULL, 0);
  train_file(&four, "tests/data/train/tpu_epochs.yaml", n4, 1);
  assert_int_equal(four.nsteps, 12);
  for (int i = 0; i < 12; i++) {
    int launch = i == 0 || i == 4 || i == 6 || i == 10;
    double want = launch ? 0 : 100e-6, got = one.step[i] - four.step[i];
    if (fabs(got - want) > 1e-12) fail_msg("step %d saved %.12g s, want %.12g s", i, got, want);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(tpu_slices_train_data_parallel_across_dcn),
    cmocka_unit_test(steps_per_execution_pays_one_round_trip_per_execution),
    cmocka_unit_test(steps_per_execution_starts_each_epoch_afresh),
    cmocka_unit_test(uneven_split_trains_like_one_device),
    cmocka_unit_test(sum_reduction_is_global_batch_times_g),
    cmocka_unit_test(per_replica_mean_is_replicas_times_global_batch),
    cmocka_unit_test(epochs_and_no_repeat_count_passes),
    cmocka_unit_test(all_reduce_time_is_the_ring_closed_form),
    cmocka_unit_test(embedding_model_trains_like_one_device),
    cmocka_unit_test(language_model_trains_like_one_device),
    cmocka_unit_test(accelerators_train_the_golden_case),
    cmocka_unit_test(hbm_too_small_fails_the_job),
    cmocka_unit_test(numerics_off_times_exactly_like_full),
    cmocka_unit_test(every_all_reduce_algorithm_trains_the_same),
    cmocka_unit_test(a_nic_caps_the_vm_not_each_link),
    cmocka_unit_test(numerics_off_plans_what_the_host_cannot_hold),
    cmocka_unit_test(prefetch_hides_a_cheap_pipeline),
    cmocka_unit_test(an_expensive_pipeline_sets_the_pace),
    cmocka_unit_test(a_cpu_replica_shares_its_cpu_with_the_pipeline),
    cmocka_unit_test(compile_time_is_charged_once),
    cmocka_unit_test(packs_follow_group_by_size),
    cmocka_unit_test(packs_overlap_the_backward_pass),
    cmocka_unit_test(accumulation_is_one_step_of_the_whole_batch),
    cmocka_unit_test(shared_mirrored_storage_gives_separate_copies_bits),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
