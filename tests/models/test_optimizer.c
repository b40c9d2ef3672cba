/*
** test_optimizer.c: two hand-worked updates of each Keras optimizer on w = [1, -2] with the
** gradient g = [0.5, -1] both times (lr 0.1), slot names and order, adam's bias correction.
*/
#include "tests/testutil.h"

#include <math.h>
#include <string.h>

#include "models/optimizer.h"

/* Dense(1) on 2 inputs: kernel [2,1] = w, plus a bias [1] (kept at 0 with a zero gradient). */
typedef struct fixture {
  md_model *m;
  md_grads *g;
} fixture;

static fixture make(void) {
  static const md_layer_spec l = {.kind = MD_LAYER_DENSE, .units = 1, .use_bias = 1};
  md_model_spec spec = {.input_features = 2, .nlayers = 1, .layers = &l, .from_logits = 1};
  fixture f = {md_model_new(&spec, NULL), NULL};
  assert_non_null(f.m);
  f.g = md_grads_new(f.m);
  md_model_var(f.m, 0)->data[0] = 1.0f;
  md_model_var(f.m, 0)->data[1] = -2.0f;
  f.g->g[0][0] = 0.5f;
  f.g->g[0][1] = -1.0f;
  return f;
}

static void drop(fixture *f) {
  md_grads_free(f->g);
  md_model_free(f->m);
}

/* Applies two steps and checks w after each against want[step][element]. */
static md_optimizer *run(fixture *f, const md_optimizer_spec *s, const double want[2][2]) {
  md_optimizer *o = md_optimizer_new(s, f->m);
  md_cost c = {0};
  for (int step = 0; step < 2; step++) {
    md_optimizer_apply(o, f->m, f->g, &c);
    const float *w = md_model_var(f->m, 0)->data;
    for (int j = 0; j < 2; j++)
      if (fabs(w[j] - want[step][j]) > 1e-6)
        fail_msg("step %d w[%d] = %.9g, want %.9g", step + 1, j, w[j], want[step][j]);
    assert_true(md_model_var(f->m, 1)->data[0] == 0.0f);
  }
  assert_int_equal(md_optimizer_iterations(o), 2);
  assert_true(c.flops > 0 && c.bytes_moved > 0);
  return o;
}

/* w -= lr g: [1 - 0.05, -2 + 0.1] = [0.95, -1.9], then [0.9, -1.8]. No slots. */
static void test_sgd(void **state) {
  (void)state;
  fixture f = make();
  md_optimizer_spec s;
  md_optimizer_spec_defaults(&s, MD_OPT_SGD);
  assert_true(s.learning_rate == 0.01f && s.momentum == 0.0f);
  s.learning_rate = 0.1f;
  md_optimizer *o = run(&f, &s, (const double[2][2]){{0.95, -1.9}, {0.9, -1.8}});
  assert_int_equal(md_optimizer_num_slots(o), 0);
  md_optimizer_free(o);
  drop(&f);
}

/* Momentum 0.9: v1 = -lr g = [-0.05, 0.1], w1 = [0.95, -1.9];
** v2 = 0.9 v1 - lr g = [-0.045 - 0.05, 0.09 + 0.1] = [-0.095, 0.19], w2 = [0.855, -1.71]. */
static void test_sgd_momentum(void **state) {
  (void)state;
  fixture f = make();
  md_optimizer_spec s;
  md_optimizer_spec_defaults(&s, MD_OPT_SGD);
  s.learning_rate = 0.1f;
  s.momentum = 0.9f;
  md_optimizer *o = run(&f, &s, (const double[2][2]){{0.95, -1.9}, {0.855, -1.71}});
  assert_int_equal(md_optimizer_num_slots(o), 2);
  const md_var *v = md_optimizer_slot(o, 0);
  assert_string_equal(v->name, "dense/kernel/momentum");
  assert_string_equal(md_optimizer_slot(o, 1)->name, "dense/bias/momentum");
  assert_true(fabsf(v->data[0] + 0.095f) < 1e-7f && fabsf(v->data[1] - 0.19f) < 1e-7f);
  md_optimizer_free(o);
  drop(&f);
}

/* Nesterov: v1 = [-0.05, 0.1]; w1 = w0 + 0.9 v1 - lr g = [1 - 0.045 - 0.05, -2 + 0.09 + 0.1]
** = [0.905, -1.81]; v2 = [-0.095, 0.19]; w2 = w1 + 0.9 v2 - lr g
** = [0.905 - 0.0855 - 0.05, -1.81 + 0.171 + 0.1] = [0.7695, -1.539]. */
static void test_sgd_nesterov(void **state) {
  (void)state;
  fixture f = make();
  md_optimizer_spec s;
  md_optimizer_spec_defaults(&s, MD_OPT_SGD);
  s.learning_rate = 0.1f;
  s.momentum = 0.9f;
  s.nesterov = 1;
  md_optimizer_free(run(&f, &s, (const double[2][2]){{0.905, -1.81}, {0.7695, -1.539}}));
  drop(&f);
}

/* Adam lr 0.1, b1 0.9, b2 0.999, eps 1e-7. With the same g twice, m_hat = g and v_hat = g^2, so
** each step moves by lr * g/(|g| + eps/sqrt((1-b2^t))...) ~= 0.1 toward -sign(g). Exactly:
** t=1: m = 0.1 g = [0.05, -0.1], v = 0.001 g^2 = [0.00025, 0.001],
**      lr_1 = 0.1 sqrt(0.001)/0.1 = 0.0316227766, step = lr_1 m/(sqrt v + 1e-7)
**      = 0.0316227766 * 0.05/(0.0158113883 + 1e-7) = 0.0999993675 -> w1[0] = 0.9000006325;
**      w1[1] = -2 + 0.0316227766 * 0.1/(0.0316227766 + 1e-7) = -1.9000003162.
** t=2: m = [0.095, -0.19], v = 0.999 v + 0.001 g^2 = [0.00049975, 0.001999],
**      lr_2 = 0.1 sqrt(1 - 0.998001)/(1 - 0.81) = 0.0235316725,
**      w2[0] = w1[0] - 0.0235316725 * 0.095/(0.0223550890 + 1e-7) = 0.8000010798,
**      w2[1] = w1[1] + 0.0235316725 * 0.19/(0.0447101778 + 1e-7) = -1.8000005399. */
static void test_adam(void **state) {
  (void)state;
  fixture f = make();
  md_optimizer_spec s;
  md_optimizer_spec_defaults(&s, MD_OPT_ADAM);
  assert_true(s.learning_rate == 0.001f && s.beta_1 == 0.9f && s.beta_2 == 0.999f && s.epsilon == 1e-7f);
  s.learning_rate = 0.1f;
  md_optimizer *o = run(&f, &s, (const double[2][2]){{0.9000006325, -1.9000003162},
                                                      {0.8000010798, -1.8000005399}});
  /* Keras' order: every variable's m, then every variable's v. */
  assert_int_equal(md_optimizer_num_slots(o), 4);
  assert_string_equal(md_optimizer_slot(o, 0)->name, "dense/kernel/m");
  assert_string_equal(md_optimizer_slot(o, 1)->name, "dense/bias/m");
  assert_string_equal(md_optimizer_slot(o, 2)->name, "dense/kernel/v");
  assert_string_equal(md_optimizer_slot(o, 3)->name, "dense/bias/v");
  assert_true(fabsf(md_optimizer_slot(o, 0)->data[0] - 0.095f) < 1e-7f);
  /* 1 - 0.999f is 0.00099998713 in float32, hence the loose bound. */
  assert_true(fabsf(md_optimizer_slot(o, 2)->data[1] - 0.001999f) < 1e-7f);
  md_optimizer_free(o);
  drop(&f);
}

/* The bias correction makes adam's first step lr * g/|g| whatever |g| is: with g = [1e-3, 100]
** both weights move by 0.1, less the epsilon's share for the small one: sqrt(v) = sqrt(0.001) 1e-3
** = 3.16228e-5, so its step is 0.1 * 3.16228e-5/(3.16228e-5 + 1e-7) = 0.0996848 -> 0.900315231.
** Without the correction the steps would be 0.1 * 0.1 g/sqrt(0.001 g^2) = 0.316. */
static void test_adam_bias_correction(void **state) {
  (void)state;
  fixture f = make();
  f.g->g[0][0] = 1e-3f;
  f.g->g[0][1] = 100.0f;
  md_optimizer_spec s;
  md_optimizer_spec_defaults(&s, MD_OPT_ADAM);
  s.learning_rate = 0.1f;
  md_optimizer *o = md_optimizer_new(&s, f.m);
  assert_int_equal(md_optimizer_iterations(o), 0);
  md_optimizer_apply(o, f.m, f.g, NULL);
  assert_int_equal(md_optimizer_iterations(o), 1);
  const float *w = md_model_var(f.m, 0)->data;
  assert_true(fabs(w[0] - (1.0 - 0.1 * 1e-3 / (1e-3 + 1e-7 / sqrt(1e-3)))) < 1e-6);
  assert_true(fabs(w[0] - 0.900315231) < 1e-6);
  assert_true(fabs(w[1] - (-2.1)) < 1e-6);
  md_optimizer_free(o);
  drop(&f);
}

/* Adagrad lr 0.1, accumulator from 0.1, eps 1e-7:
** t=1: a = 0.1 + [0.25, 1] = [0.35, 1.1]; w -= 0.1 g/(sqrt(a) + 1e-7):
**      [1 - 0.05/0.5916080783, -2 + 0.1/1.0488089484] = [0.915484589, -1.904653750]
** t=2: a = [0.6, 2.1]; [w - 0.05/0.7745967692, w + 0.1/1.4491377751] = [0.850934875, -1.835647199] */
static void test_adagrad(void **state) {
  (void)state;
  fixture f = make();
  md_optimizer_spec s;
  md_optimizer_spec_defaults(&s, MD_OPT_ADAGRAD);
  assert_true(s.initial_accumulator_value == 0.1f && s.epsilon == 1e-7f);
  s.learning_rate = 0.1f;
  md_optimizer *o = md_optimizer_new(&s, f.m);
  assert_int_equal(md_optimizer_num_slots(o), 2);
  assert_string_equal(md_optimizer_slot(o, 0)->name, "dense/kernel/accumulator");
  assert_true(md_optimizer_slot(o, 1)->data[0] == 0.1f);
  md_optimizer_free(o);
  o = run(&f, &s, (const double[2][2]){{0.915484589, -1.904653750}, {0.850934875, -1.835647199}});
  assert_true(fabsf(md_optimizer_slot(o, 0)->data[1] - 2.1f) < 1e-6f);
  md_optimizer_free(o);
  drop(&f);
}

/* A checkpoint of adam after its first step (the test_adam figures: t = 1, m = 0.1 g) restored
** into a fresh optimizer: the second step from the restored state is test_adam's second step to
** the bit, which needs t = 1 back too (with t = 0 the step size would be lr_1 again and w2[0]
** 0.8000006325 instead of 0.8000010798). */
static void test_copy_state_resumes(void **state) {
  (void)state;
  fixture f = make();
  md_optimizer_spec s;
  md_optimizer_spec_defaults(&s, MD_OPT_ADAM);
  s.learning_rate = 0.1f;
  md_optimizer *o = md_optimizer_new(&s, f.m), *saved = md_optimizer_new(&s, f.m);
  md_optimizer_apply(o, f.m, f.g, NULL);
  md_optimizer_copy_state(saved, o);
  float w1[2];
  memcpy(w1, md_model_var(f.m, 0)->data, sizeof w1);
  md_optimizer_apply(o, f.m, f.g, NULL);
  float w2[2];
  memcpy(w2, md_model_var(f.m, 0)->data, sizeof w2);
  assert_true(fabs(w2[0] - 0.8000010798) < 1e-6);

  md_optimizer *restored = md_optimizer_new(&s, f.m);
  md_optimizer_copy_state(restored, saved);
  assert_int_equal(md_optimizer_iterations(restored), 1);
  memcpy(md_model_var(f.m, 0)->data, w1, sizeof w1);
  md_optimizer_apply(restored, f.m, f.g, NULL);
  assert_memory_equal(md_model_var(f.m, 0)->data, w2, sizeof w2);
  md_optimizer_free(o);
  md_optimizer_free(saved);
  md_optimizer_free(restored);
  drop(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sgd),
      cmocka_unit_test(test_sgd_momentum),
      cmocka_unit_test(test_sgd_nesterov),
      cmocka_unit_test(test_adam),
      cmocka_unit_test(test_adam_bias_correction),
      cmocka_unit_test(test_adagrad),
      cmocka_unit_test(test_copy_state_resumes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
