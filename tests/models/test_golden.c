/*
** test_golden.c: models/ against the TensorFlow.js golden run mlp_momentum (tests/golden/, copied from ../shared/golden/).
** Dense(16, relu) -> Dense(3) logits, sparse CE from logits, SGD lr 0.05 momentum 0.9, global
** batch 32 over 384 rows in file order, 50 steps. R replicas each hold a model (a mirrored
** copy), compute grads on their G/R rows with the variant's loss scale, the grads are summed in
** replica order 0..R-1 and every replica applies the same update with its own optimizer.
** Each step's mean loss and every final weight must be within TU_GOLDEN_CLOSE.
*/
#include "tests/testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/dataset.h"
#include "models/model.h"
#include "models/optimizer.h"
#include "models/weights.h"

enum { G = 32, STEPS = 50, FEATURES = 8, MAX_REPLICAS = 8 };

/* tests/golden/mlp_momentum/ keeps data.csv and init.csv once (every variant shares them) and
** each variant's expected files in its own folder. */
static const char *golden(const char *variant, const char *file) {
  char rel[256];
  int shared = strcmp(file, "data.csv") == 0 || strcmp(file, "init.csv") == 0;
  if (shared) snprintf(rel, sizeof rel, "tests/golden/mlp_momentum/%s", file);
  else snprintf(rel, sizeof rel, "tests/golden/mlp_momentum/%s/%s", variant, file);
  return tu_src(rel);
}

static md_model *new_model(void) {
  static const md_layer_spec layers[2] = {
      {.kind = MD_LAYER_DENSE, .units = 16, .activation = MD_ACT_RELU, .use_bias = 1},
      {.kind = MD_LAYER_DENSE, .units = 3, .activation = MD_ACT_NONE, .use_bias = 1},
  };
  md_model_spec spec = {.input_features = FEATURES, .nlayers = 2, .layers = layers, .from_logits = 1};
  md_error err = {0};
  md_model *m = md_model_new(&spec, &err);
  assert_non_null(m);
  return m;
}

/* expected_loss.csv: `step,loss` rows for steps 0..STEPS-1. */
static void read_losses(const char *variant, double *loss) {
  FILE *f = fopen(golden(variant, "expected_loss.csv"), "r");
  assert_non_null(f);
  char head[64];
  assert_non_null(fgets(head, sizeof head, f));
  for (int s = 0; s < STEPS; s++) {
    int step;
    assert_int_equal(fscanf(f, "%d,%lf", &step, &loss[s]), 2);
    assert_int_equal(step, s);
  }
  fclose(f);
}

/* Runs one variant; returns the largest |got - expected| over losses and final weights. */
static double run_variant(const char *variant, int replicas, float scale) {
  md_error err = {0};
  md_dataset *d = md_dataset_load_csv(golden(variant, "data.csv"), "label", 0, 3, &err);
  if (d == NULL) fail_msg("%d:%d %s", err.line, err.col, err.msg);
  assert_int_equal(d->rows, 384);
  assert_int_equal(d->width, FEATURES);

  md_model *base = new_model();
  if (md_weights_read(base, golden(variant, "init.csv"), &err) != 0)
    fail_msg("%d:%d %s", err.line, err.col, err.msg);
  md_model *want = new_model();
  if (md_weights_read(want, golden(variant, "expected_final.csv"), &err) != 0)
    fail_msg("%d:%d %s", err.line, err.col, err.msg);
  double want_loss[STEPS];
  read_losses(variant, want_loss);

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
  float x[G * FEATURES];
  int32_t labels[G];
  double worst = 0;
  md_cost cost = {0};
  for (int s = 0; s < STEPS; s++) {
    md_dataset_gather(d, (size_t)s * G % d->rows, G, x, NULL, labels);
    double loss = 0;
    for (int r = 0; r < replicas; r++) {
      md_batch b = {per, x + r * per * FEATURES, NULL, labels + r * per};
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
  assert_int_equal(md_optimizer_iterations(opt[0]), STEPS);
  assert_true(cost.flops > 0);
  print_message("%s: max |got - expected| = %.3g\n", variant, worst);

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
  run_variant("r1", 1, 1.0f / G);
}

static void test_r4(void **state) {
  (void)state;
  run_variant("r4", 4, 1.0f / G);
}

/* per_replica_mean: each replica divides by its own G/R rows, so the gradient is R times larger. */
static void test_r4_mean(void **state) {
  (void)state;
  run_variant("r4_mean", 4, 1.0f / (G / 4));
}

static void test_r8(void **state) {
  (void)state;
  run_variant("r8", 8, 1.0f / G);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_r1),
      cmocka_unit_test(test_r4),
      cmocka_unit_test(test_r4_mean),
      cmocka_unit_test(test_r8),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
