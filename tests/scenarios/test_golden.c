/*
** test_golden.c: whole runs of the golden scenarios (tests/golden/CASE/VARIANT/scenario.yaml,
** computed with TensorFlow.js) through the scenario loader, the engine, the strategy and the numerics.
** Every step's loss and every final weight must satisfy
**   |got - expected| <= 1e-5 + 1e-5*|expected|      (tests/golden/README.md)
** r4 and r8 reduce their gradients through the simulated ring all-reduce, so their sums come in
** ring order, not replica order: the tolerance covers the few-ulp difference.
*/
#include "tests/testutil.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scenarios/programs/train.h"

/* Runs the scenario at scenario_rel into out and checks every step's loss and every final weight
** against the golden `golden` ("mlp_momentum/r4": tests/golden/mlp_momentum/r4/expected_*.csv);
** the step and weight counts are the expected files' own. */
static uint64_t run_scenario(const char *scenario_rel, const char *golden, const char *out,
                             double *max_loss_err, double *max_weight_err, run_summary *sum_out) {
  enum { MAX_ROWS = 1024 };
  char rel[256], path[512];
  static scenario s;
  scn_error err;
  if (scenario_load(tu_src(scenario_rel), NULL, 0, &s, &err) != 0) fail_msg("%s", err.msg);
  run_summary sum;
  int rc = train_run(&s, out, &sum, &err);
  if (rc != TR_EXIT_OK) fail_msg("exit %d: %s", rc, err.msg);
  if (sum_out) *sum_out = sum;

  static double got[MAX_ROWS], want[MAX_ROWS];
  static char names_got[MAX_ROWS][64], names_want[MAX_ROWS][64];
  snprintf(path, sizeof path, "%s/metrics.csv", out);
  int n = tu_read_column(path, 3, got, MAX_ROWS, NULL);
  snprintf(rel, sizeof rel, "tests/golden/%s/expected_loss.csv", golden);
  int m = tu_read_column(tu_src(rel), 1, want, MAX_ROWS, NULL);
  assert_true(m > 0);
  assert_int_equal(n, m);
  assert_int_equal(sum.steps_completed, m);
  *max_loss_err = 0;
  for (int i = 0; i < n; i++) {
    if (!TU_GOLDEN_CLOSE(got[i], want[i])) fail_msg("%s step %d loss %.9g, expected %.9g", golden, i, got[i], want[i]);
    *max_loss_err = fmax(*max_loss_err, fabs(got[i] - want[i]));
  }

  snprintf(path, sizeof path, "%s/final_weights.csv", out);
  n = tu_read_column(path, 2, got, MAX_ROWS, names_got);
  snprintf(rel, sizeof rel, "tests/golden/%s/expected_final.csv", golden);
  m = tu_read_column(tu_src(rel), 2, want, MAX_ROWS, names_want);
  assert_true(m > 0 && m < MAX_ROWS);
  assert_int_equal(n, m);
  *max_weight_err = 0;
  for (int i = 0; i < n; i++) {
    assert_string_equal(names_got[i], names_want[i]);
    if (!TU_GOLDEN_CLOSE(got[i], want[i])) fail_msg("%s weight %d (%s) %.9g, expected %.9g", golden, i, names_got[i], got[i], want[i]);
    *max_weight_err = fmax(*max_weight_err, fabs(got[i] - want[i]));
  }
  return sum.run_hash;
}

/* The golden case's own scenario, tests/golden/CASE/VARIANT/scenario.yaml (golden "CASE/VARIANT"). */
static uint64_t run_golden(const char *golden, const char *out, double *max_loss_err,
                           double *max_weight_err) {
  char rel[256];
  snprintf(rel, sizeof rel, "tests/golden/%s/scenario.yaml", golden);
  return run_scenario(rel, golden, out, max_loss_err, max_weight_err, NULL);
}

/* The golden case under another strategy (tests/data/train/strategies/NAME.yaml) against the
** golden `variant`; its summary goes to *sum when given. */
static void check_strategy(const char *name, const char *variant, run_summary *sum) {
  char rel[256], golden[64];
  char *out = tu_temp_dir("podsim-golden");
  double loss_err, weight_err;
  snprintf(rel, sizeof rel, "tests/data/train/strategies/%s.yaml", name);
  snprintf(golden, sizeof golden, "mlp_momentum/%s", variant);
  run_scenario(rel, golden, out, &loss_err, &weight_err, sum);
  print_message("%s vs golden %s: max |loss error| %.3g, max |weight error| %.3g\n", name, variant,
                loss_err, weight_err);
  tu_remove_dir(out);
}

/* The golden transformer block under tests/data/train/strategies/NAME.yaml against its r1. */
static void check_attention(const char *name) {
  char rel[256];
  char *out = tu_temp_dir("podsim-golden");
  double loss_err, weight_err;
  snprintf(rel, sizeof rel, "tests/data/train/strategies/%s.yaml", name);
  run_scenario(rel, "attention_block/r1", out, &loss_err, &weight_err, NULL);
  print_message("%s vs golden attention_block/r1: max |loss error| %.3g, max |weight error| %.3g\n", name, loss_err,
                weight_err);
  tu_remove_dir(out);
}

/* With loss_reduction global_batch every sync strategy reproduces the single-device run r1:
** TPUStrategy on a whole v3-8 (8 replicas, torus), on 4 replicas of a v4-32 picked by a device
** assignment (ring), with 2 logical devices per replica in SPMD and MPMD, TF-GNN's runner on a
** v4-8, the TF1 contrib strategy, and MirroredStrategy over two GPUs. */
static void sync_strategies_reproduce_r1(void **state) {
  (void)state;
  static const char *const NAMES[] = {"tpu_v3_8", "tpu_v4_32_assigned", "tpu_spmd", "tpu_mpmd",
                                      "gnn_runner_v4_8", "tpu_v1_steps_10", "mirrored_two_gpus"};
  for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0]; i++) check_strategy(NAMES[i], "r1", NULL);
}

/* Every keras.distribution sharding recipe reproduces the single-device run r1: ZeRO-1, ZeRO-2
** and FSDP over 4 workers, Megatron tensor parallelism (from a layout map) and sequence
** parallelism on a 2 x 2 mesh of 4 GPUs, FSDP x tensor parallelism on a v4-8's 2 x 2 chips,
** tensor parallelism on two v5e slices joined by DCN (scenarios/programs/mesh.h: the recipes
** move the math, the gradients' sum is the strategy's). */
static void mesh_recipes_reproduce_r1(void **state) {
  (void)state;
  static const char *const NAMES[] = {"mesh_zero1", "mesh_zero2", "mesh_fsdp", "mesh_tp_gpus", "mesh_sp_gpus",
                                      "mesh_fsdp_tp_v4", "mesh_tp_2_slices"};
  for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0]; i++) check_strategy(NAMES[i], "r1", NULL);
}

/* Pipeline parallelism reproduces the single-device run r1 under both schedules: the golden MLP's
** two layers as two stages on {data: 2, pipeline: 2} over 4 GPUs, each pipeline's 16 examples in
** 4 microbatches (scenarios/programs/pipeline.h: the stages move where the math runs; the
** gradients' sum is the strategy's over every replica, in a fixed order). */
static void pipeline_schedules_reproduce_r1(void **state) {
  (void)state;
  check_strategy("pipe_gpipe_gpus", "r1", NULL);
  check_strategy("pipe_1f1b_gpus", "r1", NULL);
}

/* The golden transformer block under sequence parallelism on {data: 1, model: 2}
** (tests/data/train/strategies/mesh_attention_sp.yaml: attention split by its heads, the MLP a
** column/row pair, the layer norm on half the sequence) is its single-device run r1. */
static void mesh_attention_reproduces_r1(void **state) {
  (void)state;
  check_attention("mesh_attention_sp");
}

/* Megatron-LM's three axes reproduce the single-device runs: mlp_momentum on {data: 2, pipeline:
** 2, model: 2} over 8 GPUs (each stage's dense layer tensor parallel, 1f1b over 4 microbatches)
** is r1, and the transformer block on {data: 1, pipeline: 2, model: 2} over 4 workers (each stage
** sequence parallel, 2 microbatches) is attention_block's r1: run_scenario fails past the goldens'
** tolerance. The stages and their model axis move where the math runs; each replica still
** computes its examples whole and the gradients are summed over every replica at the step's end. */
static void pipeline_tensor_parallel_reproduces_r1(void **state) {
  (void)state;
  check_strategy("pipe_tp_3d_gpus", "r1", NULL);
  check_attention("pipe_sp_3d_attention");
}

/* Hybrid sharding (hybrid_fsdp on {data: 2, fsdp: 2} over 4 GPUs: ZeRO-3 within each pair, the
** pairs' gradient shards all-reduced) reproduces r1: run_scenario fails past the goldens'
** tolerance. */
static void hybrid_fsdp_reproduces_r1(void **state) {
  (void)state;
  check_strategy("mesh_hybrid_fsdp_gpus", "r1", NULL);
}

/* hybrid_fsdp_sp on {data: 2, fsdp: 4, model: 2} over two v4-16 slices (Megatron's split with
** sequence parallelism over the model axis, ZeRO-3 over the fsdp axis within each slice, the
** gradient shards all-reduced across the slices) reproduces the single-device runs: the MLP is
** r1, the transformer block attention_block's r1 (run_scenario fails past the goldens' tolerance). */
static void hybrid_fsdp_sp_reproduces_r1(void **state) {
  (void)state;
  check_strategy("mesh_hybrid_fsdp_sp_v4", "r1", NULL);
  check_attention("mesh_hybrid_fsdp_sp_attention");
}

/* per_replica_mean on 4 TPU replicas scales the gradient as TensorFlow does: golden r4_mean.
** sum makes the gradient G = 32 times the global_batch one (the loss seed's 1/32 is exact), so
** SGD with momentum at a learning rate 32 times smaller (0.0015625) walks r1's path again:
** lr' x g' = lr x g up to the rounding of 0.0015625 against fl(0.05) / 32 (about 3e-8). */
static void tpu_loss_reductions_scale_as_tf(void **state) {
  (void)state;
  check_strategy("tpu_v4_8_mean", "r4_mean", NULL);
  check_strategy("tpu_v3_8_sum", "r1", NULL);
}

/* tpu_v1's steps_per_run: the host launches the on-device loop once per 10 steps instead of
** every step, so 50 steps pay 5 loops instead of 50, each as the tpu_v1 strategy models it: the
** host's dispatch (100 us by default), the 256-byte launch message down each tower's PCIe link
** and the loss (4 bytes) back up after the loop's last step. On a v3-8 the two towers of a chip
** share its 16 GB/s, 1 us links: 1 us + 256 B / 8 GB/s = 1.032 us down, 1 us + 4 B / 8 GB/s =
** 1.0005 us up. 45 loops fewer: 45 x 102.0325 us = 4.5914625 ms less simulated time, with the same
** weights (run_scenario checked both against r1). */
static void steps_per_run_saves_host_round_trips(void **state) {
  (void)state;
  run_summary one, ten;
  check_strategy("tpu_v1_steps_1", "r1", &one);
  check_strategy("tpu_v1_steps_10", "r1", &ten);
  assert_true(ten.sim_time_s < one.sim_time_s);
  assert_true(fabs((one.sim_time_s - ten.sim_time_s) - 4.5914625e-3) < 1e-12);
  /* The launch is its own column (host_s), not idle: the dispatch and the message down, 101.032
  ** us, every step of the first run and every tenth of the second (a mean of 10.1032 us); the
  ** loss fetched up after a loop's last step (1.0005 us) is still waited in idle. */
  assert_true(fabs(one.means.host_s - 101.032e-6) < 1e-12);
  assert_true(fabs(ten.means.host_s - 10.1032e-6) < 1e-12);
  assert_true(fabs(one.means.idle_s - 1.0005e-6) < 1e-12);
}

static void check_golden(const char *golden) {
  char *out = tu_temp_dir("podsim-golden");
  double loss_err, weight_err;
  run_golden(golden, out, &loss_err, &weight_err);
  print_message("golden %s: max |loss error| %.3g, max |weight error| %.3g\n", golden, loss_err, weight_err);
  tu_remove_dir(out);
}

static void golden_r1(void **state) { (void)state; check_golden("mlp_momentum/r1"); }
static void golden_r4(void **state) { (void)state; check_golden("mlp_momentum/r4"); }
static void golden_r8(void **state) { (void)state; check_golden("mlp_momentum/r8"); }
static void golden_r4_mean(void **state) { (void)state; check_golden("mlp_momentum/r4_mean"); }

/* The layer goldens (tests/golden/README.md) from their scenario files (model.input.shape and the
** layer keys): a conv net (Conv2D same, MaxPooling2D, strided Conv2D with TF's asymmetric same
** padding, Flatten, Dense) on one device and on two MultiWorkerMirrored workers; a transformer
** block (causal MultiHeadAttention, LayerNormalization, Flatten, Dense gelu, Dense), likewise;
** a conv net with BatchNormalization trained by tfjs-layers itself, moving statistics included. */
static void layer_goldens_from_scenarios(void **state) {
  (void)state;
  static const char *const CASES[] = {"conv_pool/r1", "conv_pool/r2", "attention_block/r1",
                                      "attention_block/r2", "conv_bn/r1"};
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) check_golden(CASES[i]);
}

/* How far a run under a mixed dtype_policy lands from its float32 golden: the relative error of
** step 0's loss, the largest relative loss error of any step, and the largest weight error
** relative to the golden's largest weight. */
typedef struct precision_error { double first_loss, loss, weight; } precision_error;

/* Runs scenario `rel` (from the source tree) with model.dtype_policy set to `policy` (and, when
** not NULL, strategy.distribution.preset to `preset`): its losses (metrics.csv) into loss[], its
** final weights into w[] (at most MAX_ROWS each), their counts. */
enum { MAX_ROWS = 1024 };
static void run_with_policy(const char *rel, const char *policy, const char *preset, double *loss, int *nloss,
                            double *w, int *nw) {
  char path[512], set[64], layout[64];
  static scenario s;
  scn_error err;
  snprintf(set, sizeof set, "model.dtype_policy=%s", policy);
  snprintf(layout, sizeof layout, "strategy.distribution.preset=%s", preset ? preset : "");
  const char *sets[] = {set, layout};
  if (scenario_load(tu_src(rel), sets, preset ? 2 : 1, &s, &err) != 0) fail_msg("%s", err.msg);
  char *out = tu_temp_dir("podsim-golden");
  run_summary sum;
  if (train_run(&s, out, &sum, &err) != TR_EXIT_OK) fail_msg("%s", err.msg);
  snprintf(path, sizeof path, "%s/metrics.csv", out);
  *nloss = tu_read_column(path, 3, loss, MAX_ROWS, NULL);
  snprintf(path, sizeof path, "%s/final_weights.csv", out);
  *nw = tu_read_column(path, 2, w, MAX_ROWS, NULL);
  tu_remove_dir(out);
}

static precision_error run_under_policy(const char *golden, const char *policy) {
  char rel[256];
  static double got[MAX_ROWS], want[MAX_ROWS], weights[MAX_ROWS];
  precision_error e = {0, 0, 0};
  int n, nw;
  snprintf(rel, sizeof rel, "tests/golden/%s/scenario.yaml", golden);
  run_with_policy(rel, policy, NULL, got, &n, weights, &nw);
  snprintf(rel, sizeof rel, "tests/golden/%s/expected_loss.csv", golden);
  assert_int_equal(tu_read_column(tu_src(rel), 1, want, MAX_ROWS, NULL), n);
  e.first_loss = fabs(got[0] - want[0]) / fabs(want[0]);
  for (int i = 0; i < n; i++) e.loss = fmax(e.loss, fabs(got[i] - want[i]) / fabs(want[i]));
  snprintf(rel, sizeof rel, "tests/golden/%s/expected_final.csv", golden);
  assert_int_equal(tu_read_column(tu_src(rel), 2, want, MAX_ROWS, NULL), nw);
  double largest = 0;
  for (int i = 0; i < nw; i++) largest = fmax(largest, fabs(want[i]));
  for (int i = 0; i < nw; i++) e.weight = fmax(e.weight, fabs(weights[i] - want[i]) / largest);
  print_message("%s under %s: step 0 loss %.3g, any loss %.3g, weights %.3g (relative)\n", golden, policy,
                e.first_loss, e.loss, e.weight);
  return e;
}

/* The recipes that gather weights or reduce-scatter gradients move 16-bit bytes under a mixed
** policy (compile/shard_zero.c), which is about time and memory only: the float32 master
** weights are sharded, updated and summed as before. So ZeRO-1, ZeRO-2 and FSDP over 4 workers
** under mixed_bfloat16 give the data-parallel run of the same replicas under it, and FSDP x TP on
** 2 x 2 the tensor-parallel one (the same split products, rounded alike), to the bit; and the
** final weights are float32 values (some are not bfloat16's: the update did not round them).
** Against one device they differ by bfloat16's rounding of each replica's partial products
** (mesh_zero1: 3.7e-4 relative at step 2), as TensorFlow's replicas would. */
static void mesh_recipes_keep_mixed_precision_numerics(void **state) {
  (void)state;
  static const char *const NAMES[][2] = {{"mesh_zero1", "data_parallel"}, {"mesh_zero2", "data_parallel"},
                                         {"mesh_fsdp", "data_parallel"}, {"mesh_fsdp_tp_v4", "tensor_parallel"}};
  static double loss0[MAX_ROWS], w0[MAX_ROWS], loss[MAX_ROWS], w[MAX_ROWS];
  for (size_t k = 0; k < sizeof NAMES / sizeof NAMES[0]; k++) {
    char rel[256];
    int n0, nw0, n, nw;
    snprintf(rel, sizeof rel, "tests/data/train/strategies/%s.yaml", NAMES[k][0]);
    run_with_policy(rel, "mixed_bfloat16", NAMES[k][1], loss0, &n0, w0, &nw0);
    run_with_policy(rel, "mixed_bfloat16", NULL, loss, &n, w, &nw);
    assert_true(n0 > 0 && nw0 > 0);
    assert_int_equal(n, n0);
    assert_int_equal(nw, nw0);
    for (int i = 0; i < n; i++)
      if (loss[i] != loss0[i]) fail_msg("%s step %d loss %.9g, %s %.9g", NAMES[k][0], i, loss[i], NAMES[k][1], loss0[i]);
    int float32_only = 0;
    for (int i = 0; i < nw; i++) {
      if (w[i] != w0[i]) fail_msg("%s weight %d %.9g, %s %.9g", NAMES[k][0], i, w[i], NAMES[k][1], w0[i]);
      float f = (float)w[i];
      uint32_t bits;
      memcpy(&bits, &f, sizeof bits);
      float32_only += (bits & 0xffffu) != 0;  /* bfloat16 is float32's upper 16 bits */
    }
    assert_true(float32_only > 0);
  }
}

/* mixed_bfloat16 and mixed_float16 against the float32 goldens, within tolerances derived from
** the unit roundoff u of the compute dtype (bfloat16 2^-9, float16 2^-11: round to nearest) and
** the L = 5 layer boundaries values cross (docs/layers.md, "Precision"):
**   step 0, before any update: every logit is a float32 function of rounded inputs, weights and
**   activations, about 3 roundings per boundary of at most u each, and at first order the
**   loss's relative error is below L u (the roundings' errors are independent and partly cancel;
**   the bound leaves them none), and above 0: the rounding happened.
**   every step and the final weights: 24 (20) steps of momentum SGD carry the perturbation;
**   first order again, 4 L u for the loss and for the weights relative to the largest weight.
** float16 keeps 2 more bits than bfloat16, so its errors must come out smaller. Measured:
** conv_pool bf16 step 0 9.4e-5, any 3.5e-3, weights 1.7e-2; f16 1.2e-5, 4.0e-4, 2.7e-3. */
static void mixed_precision_within_derived_tolerance(void **state) {
  (void)state;
  static const char *const CASES[] = {"conv_pool/r1", "conv_pool/r2", "attention_block/r1"};
  const double layers = 5, u_bf16 = ldexp(1, -9), u_f16 = ldexp(1, -11);
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
    precision_error bf = run_under_policy(CASES[i], "mixed_bfloat16");
    precision_error hf = run_under_policy(CASES[i], "mixed_float16");
    assert_true(bf.first_loss > 0 && bf.first_loss <= layers * u_bf16);
    assert_true(hf.first_loss > 0 && hf.first_loss <= layers * u_f16);
    assert_true(bf.loss <= 4 * layers * u_bf16 && bf.weight <= 4 * layers * u_bf16);
    assert_true(hf.loss <= 4 * layers * u_f16 && hf.weight <= 4 * layers * u_f16);
    assert_true(hf.loss < bf.loss && hf.weight < bf.weight);
  }
}

/* A model that is a graph (tests/golden/residual): a residual Add read through layer names, an
** average pooling reading an earlier layer than the one before it and a Concatenate of two
** branches, on one device and on two MultiWorkerMirrored workers. */
static void graph_golden_from_scenarios(void **state) {
  (void)state;
  check_golden("residual/r1");
  check_golden("residual/r2");
}

/* The DLRM-like golden (tests/golden/dlrm): four model inputs (dense features, three id columns),
** an embedding table each, the dot interaction, binary cross-entropy; on one device with the
** inputs in the CSV's column order, on two MultiWorkerMirrored workers with the inputs listed in
** another order and dataset.inputs mapping the columns to them, and Mirrored over 4 GPUs (the
** ring all-reduce's order, within the tolerance). */
static void dlrm_golden_from_scenarios(void **state) {
  (void)state;
  check_golden("dlrm/r1");
  check_golden("dlrm/r2");
  check_golden("dlrm/r4");
}

/* A GraphSAGE model on sampled subgraphs (tests/golden/graphsage): the subgraphs read from
** dataset.graph's nodes and edges CSVs, padded to 5 nodes and 7 edges, mean and sum pooling,
** concat and sum combines, l2 normalisation and the seed's readout, on one device and through
** TF-GNN's runner on 8 TPU replicas (2 subgraphs each, their gradients all-reduced). */
static void graphsage_golden_one_device_and_runner_tpu(void **state) {
  (void)state;
  check_golden("graphsage/r1");
  check_golden("graphsage/r8");
}

/* The same graph read from tfjs-layers' model.toJSON() (model: {keras: ../model.json}): the
** same model (names, order, inputs), so the same run as the scenario's layers, run_hash included. */
static void graph_golden_from_keras_config(void **state) {
  (void)state;
  char *a = tu_temp_dir("podsim-golden"), *b = tu_temp_dir("podsim-golden");
  double le, we;
  uint64_t layers = run_golden("residual/r2", a, &le, &we);
  uint64_t keras = run_scenario("tests/golden/residual/r2/keras.yaml", "residual/r2", b, &le, &we, NULL);
  print_message("golden residual/r2 from model.json: max |loss error| %.3g, max |weight error| %.3g\n", le, we);
  assert_true(layers == keras);
  tu_remove_dir(a);
  tu_remove_dir(b);
}

/* The same scenario run twice, into different directories, gives the same run_hash. */
/* The loss goldens (tests/golden/mlp_losses): categorical cross-entropy with soft labels on a
** softmax output (Keras reads its logits), multi-label binary cross-entropy from logits, mean
** squared error on the default target columns; each on one device and on two workers. */
static void loss_goldens_from_scenarios(void **state) {
  (void)state;
  static const char *const CASES[] = {"mlp_losses/cce/r1", "mlp_losses/cce/r2", "mlp_losses/bce/r1",
                                      "mlp_losses/bce/r2", "mlp_losses/mse/r1", "mlp_losses/mse/r2"};
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) check_golden(CASES[i]);
}

/* The optimizer goldens (tests/golden/mlp_optimizers): Keras 3's AdamW and Lamb (its zero-norm
** guard at the first step of a bias starting at 0), each on one device and on two workers. */
static void optimizer_goldens_from_scenarios(void **state) {
  (void)state;
  static const char *const CASES[] = {"mlp_optimizers/adamw/r1", "mlp_optimizers/adamw/r2",
                                      "mlp_optimizers/lamb/r1", "mlp_optimizers/lamb/r2"};
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) check_golden(CASES[i]);
}

/* The learning-rate schedule goldens (tests/golden/lr_schedules, TensorFlow 2.21 / Keras 3): SGD
** with momentum under each schedule, 20 steps. Measured: losses within 1e-7 and weights within
** 2.7e-7 of TF's; a rate taken one step late (at iterations after the update) misses by far more
** (cosine_warmup's first update would move the weights at 0.06 where TF's rate is 0). */
static void schedule_goldens_from_scenarios(void **state) {
  (void)state;
  static const char *const CASES[] = {"lr_schedules/exponential/r1", "lr_schedules/inverse_time/r1",
                                      "lr_schedules/polynomial/r1", "lr_schedules/piecewise/r1",
                                      "lr_schedules/cosine_warmup/r1"};
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) check_golden(CASES[i]);
}

/* training.metrics on the adamw golden (tests/golden/mlp_optimizers/adamw): Keras's running
** SparseCategoricalAccuracy over 20 steps of 16 examples, from TensorFlow 2.21 / Keras 3 with the
** same model, data, initial values and AdamW(0.01, weight_decay 0.1) in a GradientTape loop:
**   acc = keras.metrics.SparseCategoricalAccuracy(); per step: logits = model(xb);
**   acc.update_state(yb, logits); (the AdamW update); print("%.9g" % acc.result())
** Step 0: 6 of 16 right, 0.375; step 1: 14 of 32, 0.4375. Under one_device (r1) and over two
** workers (r2: each replica's totals and counts summed, SyncOnRead SUM) the columns are TF's
** exactly: the totals are whole counts. `accuracy` resolves to the sparse metric (Keras 3's
** compile_utils for sparse labels); the top-5 of 3 classes is always 1 (tf.math.in_top_k). */
static void compiled_metrics_equal_tf_on_one_and_two_replicas(void **state) {
  (void)state;
  static const double TF[20] = {0.375, 0.4375, 0.458333343, 0.484375, 0.537500024, 0.552083313, 0.571428597,
                                0.5859375, 0.604166687, 0.618749976, 0.630681813, 0.630208313, 0.644230783,
                                0.651785731, 0.658333361, 0.65625, 0.665441155, 0.673611104, 0.677631557,
                                0.678125024};
  static const char *const VARIANTS[] = {"r1", "r2"};
  const char *sets[] = {"training.metrics=[accuracy, sparse_top_k_categorical_accuracy, sparse_categorical_accuracy]"};
  for (int v = 0; v < 2; v++) {
    char rel[256], path[512];
    static scenario s;
    scn_error err;
    snprintf(rel, sizeof rel, "tests/golden/mlp_optimizers/adamw/%s/scenario.yaml", VARIANTS[v]);
    if (scenario_load(tu_src(rel), sets, 1, &s, &err) != 0) fail_msg("%s", err.msg);
    char *out = tu_temp_dir("podsim-metrics");
    run_summary sum;
    if (train_run(&s, out, &sum, &err) != TR_EXIT_OK) fail_msg("%s", err.msg);
    snprintf(path, sizeof path, "%s/metrics.csv", out);
    double got[3][32];
    for (int c = 0; c < 3; c++) assert_int_equal(tu_read_column(path, 12 + c, got[c], 32, NULL), 20);
    for (int i = 0; i < 20; i++) {
      if ((float)got[0][i] != (float)TF[i] || got[2][i] != got[0][i] || got[1][i] != 1.0)
        fail_msg("%s step %d: accuracy %.9g, top-5 %.9g, sparse %.9g; TF %.9g", VARIANTS[v], i, got[0][i],
                 got[1][i], got[2][i], TF[i]);
    }
    tu_remove_dir(out);
  }
}

static void run_hash_is_stable(void **state) {
  (void)state;
  char *a = tu_temp_dir("podsim-golden"), *b = tu_temp_dir("podsim-golden");
  double le, we;
  uint64_t h1 = run_golden("mlp_momentum/r4", a, &le, &we);
  uint64_t h2 = run_golden("mlp_momentum/r4", b, &le, &we);
  assert_true(h1 == h2);
  tu_remove_dir(a);
  tu_remove_dir(b);
}

/* Different replica counts reduce in different orders and time differently: the hash sees it. */
static void run_hash_tells_runs_apart(void **state) {
  (void)state;
  char *a = tu_temp_dir("podsim-golden"), *b = tu_temp_dir("podsim-golden");
  double le, we;
  uint64_t h4 = run_golden("mlp_momentum/r4", a, &le, &we);
  uint64_t h8 = run_golden("mlp_momentum/r8", b, &le, &we);
  assert_true(h4 != h8);
  tu_remove_dir(a);
  tu_remove_dir(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(sync_strategies_reproduce_r1),
    cmocka_unit_test(tpu_loss_reductions_scale_as_tf),
    cmocka_unit_test(steps_per_run_saves_host_round_trips),
    cmocka_unit_test(golden_r1),
    cmocka_unit_test(golden_r4),
    cmocka_unit_test(golden_r8),
    cmocka_unit_test(golden_r4_mean),
    cmocka_unit_test(layer_goldens_from_scenarios),
    cmocka_unit_test(mixed_precision_within_derived_tolerance),
    cmocka_unit_test(mesh_recipes_reproduce_r1),
    cmocka_unit_test(mesh_recipes_keep_mixed_precision_numerics),
    cmocka_unit_test(pipeline_schedules_reproduce_r1),
    cmocka_unit_test(mesh_attention_reproduces_r1),
    cmocka_unit_test(pipeline_tensor_parallel_reproduces_r1),
    cmocka_unit_test(hybrid_fsdp_reproduces_r1),
    cmocka_unit_test(hybrid_fsdp_sp_reproduces_r1),
    cmocka_unit_test(graph_golden_from_scenarios),
    cmocka_unit_test(dlrm_golden_from_scenarios),
    cmocka_unit_test(graph_golden_from_keras_config),
    cmocka_unit_test(graphsage_golden_one_device_and_runner_tpu),
    cmocka_unit_test(loss_goldens_from_scenarios),
    cmocka_unit_test(optimizer_goldens_from_scenarios),
      cmocka_unit_test(schedule_goldens_from_scenarios),
      cmocka_unit_test(compiled_metrics_equal_tf_on_one_and_two_replicas),
    cmocka_unit_test(run_hash_is_stable),
    cmocka_unit_test(run_hash_tells_runs_apart),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
