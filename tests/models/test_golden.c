/*
** test_golden.c: models/ against the TensorFlow.js golden runs (tests/golden/):
**   mlp_momentum (copied from ../shared/golden/): Dense(16, relu) -> Dense(3) logits on 8
**     features, global batch 32 over 384 rows, 50 steps;
**   conv_pool (tests/golden/conv_pool/gen.js): Conv2D(4, 3, same, relu) -> MaxPooling2D(2) ->
**     Conv2D(3, 2, strides 2, same, relu) -> Flatten -> Dense(3) logits on [6, 6, 2] images,
**     global batch 16 over 64 rows, 24 steps;
**   attention_block (tests/golden/attention_block/gen.js): MultiHeadAttention(2 heads, key_dim 3,
**     causal) -> LayerNormalization -> Flatten -> Dense(8, gelu) -> Dense(3) logits on [4, 6]
**     sequences, global batch 16 over 64 rows, 20 steps;
**   conv_bn (tests/golden/conv_bn/gen.js, trained by tfjs-layers itself): Conv2D(4, 3, same) ->
**     BatchNormalization -> Activation(relu) -> MaxPooling2D(2) -> Flatten -> Dense(3) on
**     conv_pool's data, 16 steps, one replica; the final moving mean and variance included.
**   residual (tests/golden/residual/gen.js): a graph, Conv2D(4, 3, same, relu) -> Conv2D(4, 3,
**     same) -> Add with the first conv's output -> Activation(relu) -> MaxPooling2D(2) and
**     AveragePooling2D(2) of it -> Concatenate -> Flatten -> Dense(3) logits on conv_pool's data,
**     20 steps;
**   dlrm (tests/golden/dlrm/gen.js): four model inputs (dense [4], ids c0, c1, c2), Dense(8,
**     relu) -> Dense(8, relu) as the bottom MLP, an Embedding of dim 8 per id input, their
**     dot_interaction, Dense(8, relu) -> Dense(1) logits, binary cross-entropy from logits on the
**     click column y0, 20 steps;
** All but dlrm: sparse CE from logits, SGD lr 0.05 momentum 0.9, rows in file order. R replicas each hold
** a model (a mirrored copy), compute grads on their G/R rows with the variant's loss scale, the
** grads are summed in replica order 0..R-1 and every replica applies the same update with its
** own optimizer. Each step's mean loss and every final weight must be within TU_GOLDEN_CLOSE.
*/
#include "tests/testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/dataset.h"
#include "models/model.h"
#include "models/optimizer.h"
#include "models/weights.h"

enum { MAX_REPLICAS = 8, MAX_G = 32, MAX_STEPS = 50, MAX_FEATURES = 72 };

typedef struct golden_case {
  const char *dir;        /* under tests/golden/ */
  int g;                  /* global batch */
  int steps;              /* steps run */
  int rows;               /* rows of data.csv */
  md_shape input;         /* one example */
  int nlayers;            /* entries in layers */
  const md_layer_spec *layers; /* the model, logits out */
  int ninputs;            /* several model inputs (input unused), 0: one */
  const md_model_input *inputs; /* them, in data.csv's column order */
  int targets;            /* float target columns (binary cross-entropy); 0: a sparse `label` */
} golden_case;

static const md_layer_spec mlp_layers[2] = {
    {.kind = MD_LAYER_DENSE, .units = 16, .activation = MD_ACT_RELU, .use_bias = 1},
    {.kind = MD_LAYER_DENSE, .units = 3, .activation = MD_ACT_NONE, .use_bias = 1},
};
static const golden_case mlp = {"mlp_momentum", 32, 50, 384, {.rank = 1, .dim = {8}}, 2, mlp_layers, 0, NULL, 0};

static const md_layer_spec conv_layers[5] = {
    {.kind = MD_LAYER_CONV2D, .filters = 4, .kernel_size = {3, 3}, .padding = MD_PADDING_SAME,
     .activation = MD_ACT_RELU, .use_bias = 1},
    {.kind = MD_LAYER_MAX_POOLING2D},
    {.kind = MD_LAYER_CONV2D, .filters = 3, .kernel_size = {2, 2}, .strides = {2, 2},
     .padding = MD_PADDING_SAME, .activation = MD_ACT_RELU, .use_bias = 1},
    {.kind = MD_LAYER_FLATTEN},
    {.kind = MD_LAYER_DENSE, .units = 3, .activation = MD_ACT_NONE, .use_bias = 1},
};
static const golden_case conv_pool = {"conv_pool", 16, 24, 64, {.rank = 3, .dim = {6, 6, 2}}, 5, conv_layers, 0, NULL, 0};

static const md_layer_spec attention_layers[5] = {
    {.kind = MD_LAYER_MULTI_HEAD_ATTENTION, .num_heads = 2, .key_dim = 3, .use_causal_mask = 1, .use_bias = 1},
    {.kind = MD_LAYER_LAYER_NORMALIZATION},
    {.kind = MD_LAYER_FLATTEN},
    {.kind = MD_LAYER_DENSE, .units = 8, .activation = MD_ACT_GELU, .use_bias = 1},
    {.kind = MD_LAYER_DENSE, .units = 3, .activation = MD_ACT_NONE, .use_bias = 1},
};
static const md_layer_spec conv_bn_layers[6] = {
    {.kind = MD_LAYER_CONV2D, .filters = 4, .kernel_size = {3, 3}, .padding = MD_PADDING_SAME, .use_bias = 1},
    {.kind = MD_LAYER_BATCH_NORMALIZATION},
    {.kind = MD_LAYER_ACTIVATION, .activation = MD_ACT_RELU},
    {.kind = MD_LAYER_MAX_POOLING2D},
    {.kind = MD_LAYER_FLATTEN},
    {.kind = MD_LAYER_DENSE, .units = 3, .activation = MD_ACT_NONE, .use_bias = 1},
};
static const golden_case conv_bn = {"conv_bn", 16, 16, 64, {.rank = 3, .dim = {6, 6, 2}}, 6, conv_bn_layers, 0, NULL, 0};

/* Layer indices: the add reads conv2d_1 then conv2d, the average pooling the activation (layer
** 3), the concatenation both poolings. */
static const md_layer_spec residual_layers[9] = {
    {.kind = MD_LAYER_CONV2D, .filters = 4, .kernel_size = {3, 3}, .padding = MD_PADDING_SAME,
     .activation = MD_ACT_RELU, .use_bias = 1},
    {.kind = MD_LAYER_CONV2D, .filters = 4, .kernel_size = {3, 3}, .padding = MD_PADDING_SAME, .use_bias = 1},
    {.kind = MD_LAYER_ADD, .ninputs = 2, .inputs = {1, 0}},
    {.kind = MD_LAYER_ACTIVATION, .activation = MD_ACT_RELU},
    {.kind = MD_LAYER_MAX_POOLING2D},
    {.kind = MD_LAYER_AVERAGE_POOLING2D, .ninputs = 1, .inputs = {3}},
    {.kind = MD_LAYER_CONCATENATE, .ninputs = 2, .inputs = {4, 5}},
    {.kind = MD_LAYER_FLATTEN},
    {.kind = MD_LAYER_DENSE, .units = 3, .activation = MD_ACT_NONE, .use_bias = 1},
};
static const golden_case residual = {"residual", 16, 20, 64, {.rank = 3, .dim = {6, 6, 2}}, 9, residual_layers, 0, NULL, 0};

static const golden_case attention_block = {"attention_block", 16, 20, 64, {.rank = 2, .dim = {4, 6}}, 5,
                                            attention_layers, 0, NULL, 0};

static const md_model_input dlrm_inputs[4] = {{"dense", 4, 0, 0}, {"c0", 0, 1, 6}, {"c1", 0, 1, 5}, {"c2", 0, 1, 4}};
static const md_layer_spec dlrm_layers[8] = {
    {.kind = MD_LAYER_DENSE, .units = 8, .activation = MD_ACT_RELU, .use_bias = 1, .ninputs = 1,
     .inputs = {MD_MODEL_INPUT(0)}},
    {.kind = MD_LAYER_DENSE, .units = 8, .activation = MD_ACT_RELU, .use_bias = 1},
    {.kind = MD_LAYER_EMBEDDING, .vocab = 6, .dim = 8, .combiner = MD_COMBINER_SUM, .ninputs = 1, .inputs = {MD_MODEL_INPUT(1)}},
    {.kind = MD_LAYER_EMBEDDING, .vocab = 5, .dim = 8, .combiner = MD_COMBINER_SUM, .ninputs = 1, .inputs = {MD_MODEL_INPUT(2)}},
    {.kind = MD_LAYER_EMBEDDING, .vocab = 4, .dim = 8, .combiner = MD_COMBINER_SUM, .ninputs = 1, .inputs = {MD_MODEL_INPUT(3)}},
    {.kind = MD_LAYER_DOT_INTERACTION, .ninputs = 4, .inputs = {1, 2, 3, 4}},
    {.kind = MD_LAYER_DENSE, .units = 8, .activation = MD_ACT_RELU, .use_bias = 1},
    {.kind = MD_LAYER_DENSE, .units = 1, .use_bias = 1},
};
static const golden_case dlrm = {"dlrm", 16, 20, 64, {0}, 8, dlrm_layers, 4, dlrm_inputs, 1};

/* Each case keeps data.csv and init.csv once (every variant shares them) and each variant's
** expected files in its own folder. */
static const char *golden(const golden_case *gc, const char *variant, const char *file) {
  char rel[256];
  int shared = strcmp(file, "data.csv") == 0 || strcmp(file, "init.csv") == 0;
  if (shared) snprintf(rel, sizeof rel, "tests/golden/%s/%s", gc->dir, file);
  else snprintf(rel, sizeof rel, "tests/golden/%s/%s/%s", gc->dir, variant, file);
  return tu_src(rel);
}

static md_model *new_model(const golden_case *gc) {
  md_model_spec spec = {.input_shape = gc->input, .nlayers = gc->nlayers, .layers = gc->layers, .from_logits = 1,
                        .ninputs = gc->ninputs, .inputs = gc->inputs,
                        .loss = gc->targets ? MD_LOSS_BINARY_CROSSENTROPY : MD_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY};
  md_error err = {0};
  md_model *m = md_model_new(&spec, &err);
  if (m == NULL) fail_msg("%s", err.msg);
  return m;
}

/* expected_loss.csv: `step,loss` rows for steps 0..steps-1. */
static void read_losses(const golden_case *gc, const char *variant, double *loss) {
  FILE *f = fopen(golden(gc, variant, "expected_loss.csv"), "r");
  assert_non_null(f);
  char head[64];
  assert_non_null(fgets(head, sizeof head, f));
  for (int s = 0; s < gc->steps; s++) {
    int step;
    assert_int_equal(fscanf(f, "%d,%lf", &step, &loss[s]), 2);
    assert_int_equal(step, s);
  }
  fclose(f);
}

/* Runs one variant; returns the largest |got - expected| over losses and final weights. */
static double run_variant(const golden_case *gc, const char *variant, int replicas, float scale) {
  md_error err = {0};
  md_dataset *d = gc->targets ? md_dataset_load_csv_targets(golden(gc, variant, "data.csv"), NULL, gc->targets, 0, &err)
                               : md_dataset_load_csv(golden(gc, variant, "data.csv"), "label", 0, 3, &err);
  if (d == NULL) fail_msg("%d:%d %s", err.line, err.col, err.msg);
  int features = 1, G = gc->g;
  for (int i = 0; i < gc->input.rank; i++) features *= gc->input.dim[i];
  if (gc->ninputs > 0) features = md_inputs_width(gc->inputs, gc->ninputs);
  assert_int_equal(d->rows, gc->rows);
  assert_int_equal(d->width, features);
  assert_true(features <= MAX_FEATURES && G <= MAX_G && gc->steps <= MAX_STEPS);

  md_model *base = new_model(gc);
  if (md_weights_read(base, golden(gc, variant, "init.csv"), &err) != 0)
    fail_msg("%d:%d %s", err.line, err.col, err.msg);
  md_model *want = new_model(gc);
  if (md_weights_read(want, golden(gc, variant, "expected_final.csv"), &err) != 0)
    fail_msg("%d:%d %s", err.line, err.col, err.msg);
  double want_loss[MAX_STEPS];
  read_losses(gc, variant, want_loss);

  md_optimizer_spec os;
  md_optimizer_spec_defaults(&os, MD_OPT_SGD);
  os.learning_rate = 0.05f;
  os.momentum = 0.9f;
  md_model *rep[MAX_REPLICAS];
  md_workspace *ws[MAX_REPLICAS];
  md_grads *gr[MAX_REPLICAS];
  md_optimizer *opt[MAX_REPLICAS];
  for (int r = 0; r < replicas; r++) {
    rep[r] = md_model_clone(base);
    ws[r] = md_workspace_new(rep[r]);
    gr[r] = md_grads_new(rep[r]);
    opt[r] = md_optimizer_new(&os, rep[r]);
  }
  md_grads *sum = md_grads_new(base);
  int per = G / replicas, nvars = md_model_num_vars(base);
  float x[MAX_G * MAX_FEATURES];
  int32_t labels[MAX_G];
  float targets[MAX_G];
  double worst = 0;
  md_cost cost = {0};
  for (int s = 0; s < gc->steps; s++) {
    md_dataset_gather(d, (size_t)s * G % d->rows, G, x, NULL, labels, targets);
    double loss = 0;
    for (int r = 0; r < replicas; r++) {
      md_batch b = {per, x + r * per * features, NULL, labels + r * per, gc->targets ? targets + r * per : NULL};
      double ls;
      md_model_train_step(rep[r], ws[r], &b, scale, gr[r], &ls, &cost);
      loss += ls;
    }
    for (int i = 0; i < nvars; i++) {
      size_t n = md_model_var(base, i)->size;
      memcpy(sum->g[i], gr[0]->g[i], sizeof(float) * n);
      for (int r = 1; r < replicas; r++)
        for (size_t j = 0; j < n; j++) sum->g[i][j] += gr[r]->g[i][j];
    }
    for (int r = 0; r < replicas; r++) md_optimizer_apply(opt[r], rep[r], sum, &cost);
    loss /= G;
    if (!TU_GOLDEN_CLOSE(loss, want_loss[s]))
      fail_msg("%s step %d: loss %.9g, expected %.9g", variant, s, loss, want_loss[s]);
    worst = fmax(worst, fabs(loss - want_loss[s]));
  }
  for (int i = 0; i < nvars; i++) {
    const md_var *got = md_model_var_const(rep[0], i), *exp = md_model_var_const(want, i);
    for (size_t j = 0; j < got->size; j++) {
      if (!TU_GOLDEN_CLOSE(got->data[j], exp->data[j]))
        fail_msg("%s %s[%zu]: %.9g, expected %.9g", variant, got->name, j, got->data[j], exp->data[j]);
      worst = fmax(worst, fabs(got->data[j] - exp->data[j]));
    }
    /* Mirrored copies that applied the same summed grads stay bit-identical. */
    for (int r = 1; r < replicas; r++)
      assert_memory_equal(md_model_var_const(rep[r], i)->data, got->data, sizeof(float) * got->size);
  }
  assert_int_equal(md_optimizer_iterations(opt[0]), gc->steps);
  assert_true(cost.flops > 0);
  print_message("%s/%s: max |got - expected| = %.3g\n", gc->dir, variant, worst);

  for (int r = 0; r < replicas; r++) {
    md_optimizer_free(opt[r]);
    md_grads_free(gr[r]);
    md_workspace_free(ws[r]);
    md_model_free(rep[r]);
  }
  md_grads_free(sum);
  md_model_free(want);
  md_model_free(base);
  md_dataset_free(d);
  return worst;
}

static void test_r1(void **state) {
  (void)state;
  run_variant(&mlp, "r1", 1, 1.0f / 32);
}

static void test_r4(void **state) {
  (void)state;
  run_variant(&mlp, "r4", 4, 1.0f / 32);
}

/* per_replica_mean: each replica divides by its own G/R rows, so the gradient is R times larger. */
static void test_r4_mean(void **state) {
  (void)state;
  run_variant(&mlp, "r4_mean", 4, 1.0f / (32 / 4));
}

static void test_r8(void **state) {
  (void)state;
  run_variant(&mlp, "r8", 8, 1.0f / 32);
}

/* The conv net on one replica and on two (their gradients summed as a sync strategy does). */
static void test_conv_pool_r1(void **state) {
  (void)state;
  run_variant(&conv_pool, "r1", 1, 1.0f / 16);
}

static void test_conv_pool_r2(void **state) {
  (void)state;
  run_variant(&conv_pool, "r2", 2, 1.0f / 16);
}

static void test_conv_bn_r1(void **state) {
  (void)state;
  run_variant(&conv_bn, "r1", 1, 1.0f / 16);
}

static void test_attention_block_r1(void **state) {
  (void)state;
  run_variant(&attention_block, "r1", 1, 1.0f / 16);
}

static void test_attention_block_r2(void **state) {
  (void)state;
  run_variant(&attention_block, "r2", 2, 1.0f / 16);
}

/* The graph on one replica and on two. */
/* The DLRM-like model through one replica, two and four (mirrored copies, gradients summed). */
static void test_dlrm(void **state) {
  (void)state;
  run_variant(&dlrm, "r1", 1, 1.0f / 16);
  run_variant(&dlrm, "r2", 2, 1.0f / 16);
  run_variant(&dlrm, "r4", 4, 1.0f / 16);
}

static void test_residual(void **state) {
  (void)state;
  run_variant(&residual, "r1", 1, 1.0f / 16);
  run_variant(&residual, "r2", 2, 1.0f / 16);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_r1),
      cmocka_unit_test(test_r4),
      cmocka_unit_test(test_r4_mean),
      cmocka_unit_test(test_r8),
      cmocka_unit_test(test_conv_pool_r1),
      cmocka_unit_test(test_conv_pool_r2),
      cmocka_unit_test(test_conv_bn_r1),
      cmocka_unit_test(test_attention_block_r1),
      cmocka_unit_test(test_attention_block_r2),
      cmocka_unit_test(test_residual),
      cmocka_unit_test(test_dlrm),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
