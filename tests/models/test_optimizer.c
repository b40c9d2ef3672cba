/*
** test_optimizer.c: two hand-worked updates of each Keras optimizer on w = [1, -2] with the
** gradient g = [0.5, -1] both times (lr 0.1), slot names and order, adam's bias correction; the
** sparse kernels (IndexedSlices) of each on a 4-row table.
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

/* Keras 3's AdamW, lr 0.1, weight_decay 0.1 (w loses w * 0.1 * 0.1 = 1% before each step). The
** betas are float32 in the bias correction (b1^t from 0.9f = 0.89999998, b2^t from 0.999f =
** 0.99900001) but 1 - b1 = 0.1 and 1 - b2 = 0.001 in the moments (Python floats):
** t=1: w = [0.99, -1.98]; m = (g - 0) 0.1 = [0.05, -0.1], v = (g^2 - 0) 0.001 = [0.00025, 0.001];
**      alpha = 0.1 sqrt(1 - 0.99900001)/(1 - 0.89999998) = 0.0316225655;
**      w[0] = 0.99 - 0.05 alpha/(0.0158113883 + 1e-7) = 0.8900013000,
**      w[1] = -1.98 + 0.1 alpha/(0.0316227766 + 1e-7) = -1.8800009838;
** t=2: w = 0.99 w; m = [0.095, -0.19], v = [0.00049975, 0.001999], alpha = 0.0235315158:
**      w = [0.7811024003, -1.7612018636]. Slots momentum then velocity (Keras 3's names). */
static void test_adamw(void **state) {
  (void)state;
  fixture f = make();
  md_optimizer_spec s;
  md_optimizer_spec_defaults(&s, MD_OPT_ADAMW);
  assert_true(s.learning_rate == 0.001f && s.weight_decay == 0.004f && s.beta_1 == 0.9f &&
              s.beta_2 == 0.999f && s.epsilon == 1e-7f);
  s.learning_rate = 0.1f;
  s.weight_decay = 0.1f;
  md_optimizer *o = run(&f, &s, (const double[2][2]){{0.8900013000, -1.8800009838},
                                                      {0.7811024003, -1.7612018636}});
  assert_int_equal(md_optimizer_num_slots(o), 4);
  assert_string_equal(md_optimizer_slot(o, 0)->name, "dense/kernel/momentum");
  assert_string_equal(md_optimizer_slot(o, 3)->name, "dense/bias/velocity");
  /* Keras's 1 - 0.9 is the double 0.1 rounded once, 0.1f: m = 0.05 + (0.5 - 0.05) 0.1f exactly
  ** as float32 computes it, not with float32's 1 - 0.9f = 0.100000024f. */
  assert_true(md_optimizer_slot(o, 0)->data[0] == 0.05f + (0.5f - 0.05f) * 0.1f);
  md_optimizer_free(o);
  drop(&f);
}

/* Keras 3's Lamb, lr 0.1, no weight decay: u = (m/(1 - b1^t)) / (sqrt(v/(1 - b2^t)) + eps).
** t=1: m/(1 - 0.89999998) = [0.49999988, -0.99999976], v/(1 - 0.99900001) = [0.25000322,
**      1.00001287]: u = [0.99999312, -0.99999322]; ||w|| = sqrt 5 = 2.2360680, ||u|| = 1.4142039,
**      ratio 1.5811496: w = [1 - 0.15811496 u0, -2 - 0.15811496 u1] = [0.8418861249, -1.8418861091]
**      (the ratio cancels |u|: each weight moves by lr ||w|| / sqrt 2 to 1e-8);
** t=2: ||w|| = 2.0251708, ratio 1.4320217: [0.6986849329, -1.6986849028].
** The bias (w 0, g 0) has u = 0: both norms 0, ratio 1, it stays 0. With weight_decay 0.1 each
** step first takes 1% of w: [0.8334672636, -1.8234672480], then [0.6847811028, -1.6648810732]. */
static void test_lamb(void **state) {
  (void)state;
  fixture f = make();
  md_optimizer_spec s;
  md_optimizer_spec_defaults(&s, MD_OPT_LAMB);
  assert_true(s.learning_rate == 0.001f && s.weight_decay == 0.0f && s.epsilon == 1e-7f);
  s.learning_rate = 0.1f;
  md_optimizer *o = run(&f, &s, (const double[2][2]){{0.8418861249, -1.8418861091},
                                                      {0.6986849329, -1.6986849028}});
  assert_string_equal(md_optimizer_slot(o, 2)->name, "dense/kernel/velocity");
  md_optimizer_free(o);
  drop(&f);
  f = make();
  s.weight_decay = 0.1f;
  md_optimizer_free(run(&f, &s, (const double[2][2]){{0.8334672636, -1.8234672480},
                                                      {0.6847811028, -1.6648810732}}));
  drop(&f);
}

/* Lamb's zero guard: a zero variable (the bias, 0) with gradient 0.5 has ||w|| = 0, so the ratio
** is 1, not 0: u = 0.49999988/(sqrt 0.25000322 + 1e-7) = 0.99999312, w = -0.1 u = -0.0999993124. */
static void test_lamb_zero_norm(void **state) {
  (void)state;
  fixture f = make();
  f.g->g[1][0] = 0.5f;
  md_optimizer_spec s;
  md_optimizer_spec_defaults(&s, MD_OPT_LAMB);
  s.learning_rate = 0.1f;
  md_optimizer *o = md_optimizer_new(&s, f.m);
  md_optimizer_apply(o, f.m, f.g, NULL);
  assert_true(fabs(md_model_var(f.m, 1)->data[0] - (-0.0999993124)) < 1e-8);
  md_optimizer_free(o);
  drop(&f);
}

/* LARS (tf.contrib.opt.LARSOptimizer), lr 0.1, momentum 0.9, weight_decay 0.01, eeta 0.001, eps 0.
** The kernel (2-D: adapted): ||w|| = sqrt 5 = 2 ||g|| (||g|| = sqrt 1.25), so
** t=1: r = 0.001 * 2 / (1 + 0.01 * 2) = 0.00196078431 (1/510), lr' = 1/5100, g' = g + 0.01 w =
**      [0.51, -1.02], m = g' lr' = [0.0001, -0.0002], w1 = [0.9999, -1.9998];
** t=2: w1 = 0.9999 w0, so r = 0.001 * 2 * 0.9999 / (1 + 0.02 * 0.9999) = 0.00196059208,
**      g' = [0.509999, -1.019998], g' lr' = [0.00009999, -0.00019998],
**      m = 0.9 m + g' lr' = [0.00018999, -0.00037998], w2 = [0.99971001, -1.99942002].
** The bias (1-D: skipped, neither decayed nor scaled), w 1 with g 0.5: m = 0.05, w = 0.95; m =
** 0.045 + 0.05 = 0.095, w = 0.855 (adapted, its step would be r = 0.001/0.51 of that). */
static void test_lars(void **state) {
  (void)state;
  fixture f = make();
  md_optimizer_spec s;
  md_optimizer_spec_defaults(&s, MD_OPT_LARS);
  assert_true(s.momentum == 0.9f && s.weight_decay == 0.0001f && s.eeta == 0.001f && s.epsilon == 0.0f);
  s.learning_rate = 0.1f;
  s.weight_decay = 0.01f;
  md_optimizer *o = run(&f, &s, (const double[2][2]){{0.9999, -1.9998}, {0.99971001, -1.99942002}});
  assert_int_equal(md_optimizer_num_slots(o), 2);
  assert_string_equal(md_optimizer_slot(o, 0)->name, "dense/kernel/momentum");
  assert_true(fabs(md_optimizer_slot(o, 0)->data[1] - (-0.00037998)) < 1e-9);
  /* its cost a variable adapted: the norms' pass reads w and g, the update reads w, g, m and
  ** writes w, m: 7 arrays of 4 bytes, 10 FLOPs an element (10 elements: 280 bytes, 100 FLOPs) */
  md_cost c = {0};
  float *none[1] = {NULL};
  md_optimizer_update(&s, 1, NULL, NULL, none, 10, &c);
  assert_true(c.bytes_moved == 280 && c.flops == 100);
  md_optimizer_free(o);
  drop(&f);
  f = make();
  md_model_var(f.m, 1)->data[0] = 1.0f;
  f.g->g[1][0] = 0.5f;
  o = md_optimizer_new(&s, f.m);
  md_optimizer_apply(o, f.m, f.g, NULL);
  assert_true(fabs(md_model_var(f.m, 1)->data[0] - 0.95) < 1e-7);
  md_optimizer_apply(o, f.m, f.g, NULL);
  assert_true(fabs(md_model_var(f.m, 1)->data[0] - 0.855) < 1e-7);
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

/* ---- sparse updates: a 4x2 table, IndexedSlices ids {2, 0, 2} ----
** w rows: r0 [1 1], r1 [2 2], r2 [3 3], r3 [4 4]; values: id 2 [1 2], id 0 [3 4], id 2 [0.5 0.25].
** Dedup (unique in order of first appearance, unsorted_segment_sum): rows [2, 0] with
** g2 = [1.5 2.25], g0 = [3 4]. lr 0.5 and momentum 0.5 keep every product exact. */
static const int64_t IDS[3] = {2, 0, 2};
static const float VALUES[6] = {1, 2, 3, 4, 0.5f, 0.25f};

typedef struct table {
  float w[8];             /* the variable */
  float s0[8], s1[8];     /* its slots */
} table;

static table make_table(float slot0, float slot1) {
  table t;
  for (int j = 0; j < 8; j++) {
    t.w[j] = (float)(j / 2 + 1);
    t.s0[j] = j % 2 ? -slot0 : slot0;
    t.s1[j] = slot1;
  }
  return t;
}

static void sparse(const md_optimizer_spec *s, table *t, const int64_t *ids, const float *values, size_t n,
                   md_cost *c) {
  float *slots[2] = {t->s0, t->s1};
  md_optimizer_update_sparse(s, 1, t->w, 4, 2, ids, values, n, slots, c);
}

/* The batch IDS/VALUES applied once under s to a table whose first slot starts at slot0 (its
** second at 0). */
static table sparse_batch(const md_optimizer_spec *s, float slot0) {
  table t = make_table(slot0, 0);
  md_cost c = {0};
  sparse(s, &t, IDS, VALUES, 3, &c);
  return t;
}

static void assert_row(const float *a, int r, double x, double y) {
  if (a[2 * r] != (float)x || a[2 * r + 1] != (float)y)
    fail_msg("row %d = [%.9g %.9g], expected [%.9g %.9g]", r, a[2 * r], a[2 * r + 1], x, y);
}

/* SGD, momentum 0: scatter-add of -g*lr per occurrence, no dedup. r2: 3 - 0.5 - 0.25 = 2.25,
** 3 - 1 - 0.125 = 1.875; r0: 1 - 1.5 = -0.5, 1 - 2 = -1; r1, r3 unchanged. Cost: 3 rows of 2,
** 2 flops each = 12 flops. Without dedup rounding differs from the dense sum: w = 2 with
** g = 2^-24 twice (lr 1): 2 - 2^-24 is a tie that rounds back to 2, twice; the summed 2^-23
** gives 2 - 2^-23 = 1.99999988. */
static void test_sparse_sgd_scatter_adds(void **state) {
  (void)state;
  md_optimizer_spec s;
  md_optimizer_spec_defaults(&s, MD_OPT_SGD);
  s.learning_rate = 0.5f;
  table t = make_table(0, 0);
  md_cost c = {0};
  sparse(&s, &t, IDS, VALUES, 3, &c);
  assert_row(t.w, 0, -0.5, -1);
  assert_row(t.w, 1, 2, 2);
  assert_row(t.w, 2, 2.25, 1.875);
  assert_row(t.w, 3, 4, 4);
  assert_true(c.flops == 12);
  s.learning_rate = 1.0f;
  float w[2] = {2, 2}, tiny[4] = {0x1p-24f, 0, 0x1p-24f, 0};
  int64_t twice[2] = {0, 0};
  float *none[2] = {NULL, NULL};
  md_optimizer_update_sparse(&s, 1, w, 1, 2, twice, tiny, 2, none, &c);
  assert_true(w[0] == 2.0f);
  float dense[1] = {2}, sum[1] = {0x1p-23f};
  md_optimizer_update(&s, 1, dense, sum, none, 1, &c);
  assert_true(dense[0] == 2.0f - 0x1p-23f);
}

/* SGD momentum 0.5 (ResourceSparseApplyKerasMomentum), momentum rows [1 -1]:
** r2: a = 1*0.5 - 1.5*0.5 = -0.25, -1*0.5 - 2.25*0.5 = -1.625; w = 2.75, 1.375;
** r0: a = 0.5 - 1.5 = -1, -0.5 - 2 = -2.5; w = 0, -1.5;
** r1, r3: w and momentum untouched (the dense update would give r1 a = [0.5 -0.5], w = [2.5 1.5]).
** Nesterov: w += a*0.5 - g*0.5: r2 3 - 0.125 - 0.75 = 2.125, 3 - 0.8125 - 1.125 = 1.0625. */
static void test_sparse_sgd_momentum_rows_only(void **state) {
  (void)state;
  md_optimizer_spec s;
  md_optimizer_spec_defaults(&s, MD_OPT_SGD);
  s.learning_rate = 0.5f;
  s.momentum = 0.5f;
  table t = make_table(1, 0);
  md_cost c = {0};
  sparse(&s, &t, IDS, VALUES, 3, &c);
  assert_row(t.w, 2, 2.75, 1.375);
  assert_row(t.s0, 2, -0.25, -1.625);
  assert_row(t.w, 0, 0, -1.5);
  assert_row(t.s0, 0, -1, -2.5);
  assert_row(t.w, 1, 2, 2);
  assert_row(t.s0, 1, 1, -1);
  assert_row(t.w, 3, 4, 4);
  assert_row(t.s0, 3, 1, -1);
  table d = make_table(1, 0);
  float g[8] = {3, 4, 0, 0, 1.5f, 2.25f, 0, 0}, *slots[2] = {d.s0, NULL};
  md_optimizer_update(&s, 1, d.w, g, slots, 8, &c);
  assert_row(d.w, 1, 2.5, 1.5);
  assert_row(d.w, 2, 2.75, 1.375);  /* the batch's rows agree with the dense kernel */
  s.nesterov = 1;
  table n = make_table(1, 0);
  sparse(&s, &n, IDS, VALUES, 3, &c);
  assert_row(n.w, 2, 2.125, 1.0625);
  assert_row(n.w, 1, 2, 2);
}

/* LARS's sparse fallback, ResourceSparseApplyMomentum (lr 0.5, momentum 0.5, momentum rows [1 -1]),
** unique rows only: r2: m = 0.5 + 1.5 = 2, -0.5 + 2.25 = 1.75; w = 3 - 1 = 2, 3 - 0.875 = 2.125;
** r0: m = 3.5, 3.5; w = 1 - 1.75 = -0.75, -0.75; r1, r3 untouched. */
static void test_sparse_lars_momentum(void **state) {
  (void)state;
  md_optimizer_spec s;
  md_optimizer_spec_defaults(&s, MD_OPT_LARS);
  s.learning_rate = 0.5f;
  s.momentum = 0.5f;
  table t = sparse_batch(&s, 1);
  static const double w[4][2] = {{-0.75, -0.75}, {2, 2}, {2, 2.125}, {4, 4}};
  static const double m[4][2] = {{3.5, 3.5}, {1, -1}, {2, 1.75}, {1, -1}};
  for (int r = 0; r < 4; r++) {
    assert_row(t.w, r, w[r][0], w[r][1]);
    assert_row(t.s0, r, m[r][0], m[r][1]);
  }
}

/* Adam b1 0.5, b2 0.75, lr 0.5, eps 0, t 1: lr_t = 0.5 * (sqrt(0.25) / 0.5) = 0.5. m starts
** [1 1] on r1 and 0 elsewhere, v 12 on r1 and r3 and 0 on r0 and r2.
** r2: m = 0 + 1.5*0.5 = 0.75, v = 0 + 2.25*0.25 = 0.5625, w = 3 - 0.5*0.75/0.75 = 2.5;
**     m = 1.125, v = 5.0625*0.25 = 1.265625, w = 3 - 0.5*1.125/1.125 = 2.5;
** r0: m = 1.5, v = 2.25, w = 0.5; m = 2, v = 4, w = 0.5;
** r1 (not in the batch): m = 0.5, v = 9, w = 2 - 0.25/3 = 1.91666663 (every row moves);
** r3: m = 0 leaves w = 4. Cost: 2 unique rows x 2 x 4 flops + 8 x 7 flops + 3 x 2 (dedup) = 78. */
static void test_sparse_adam_every_row(void **state) {
  (void)state;
  md_optimizer_spec s;
  md_optimizer_spec_defaults(&s, MD_OPT_ADAM);
  s.learning_rate = 0.5f;
  s.beta_1 = 0.5f;
  s.beta_2 = 0.75f;
  s.epsilon = 0;
  table t = make_table(0, 0);
  for (int j = 0; j < 8; j++) {
    t.s0[j] = j / 2 == 1 ? 1.0f : 0.0f;
    t.s1[j] = j / 2 % 2 ? 12.0f : 0.0f;
  }
  md_cost c = {0};
  sparse(&s, &t, IDS, VALUES, 3, &c);
  assert_row(t.w, 2, 2.5, 2.5);
  assert_row(t.s0, 2, 0.75, 1.125);
  assert_row(t.s1, 2, 0.5625, 1.265625);
  assert_row(t.w, 0, 0.5, 0.5);
  assert_row(t.s1, 0, 2.25, 4);
  assert_row(t.s0, 1, 0.5, 0.5);
  assert_row(t.s1, 1, 9, 9);
  float r1 = 2.0f - 0.5f * 0.5f / 3.0f;
  assert_row(t.w, 1, r1, r1);
  assert_row(t.w, 3, 4, 4);
  assert_true(c.flops == 78);
}

/* Adagrad lr 0.5, eps 0, accumulators 0: r2 a = 2.25, 5.0625, w = 3 - 0.5*1.5/1.5 = 2.5 (both);
** r0 a = 9, 16, w = 0.5 (both); r1, r3 and their accumulators untouched. */
static void test_sparse_adagrad_rows_only(void **state) {
  (void)state;
  md_optimizer_spec s;
  md_optimizer_spec_defaults(&s, MD_OPT_ADAGRAD);
  s.learning_rate = 0.5f;
  s.epsilon = 0;
  table t = sparse_batch(&s, 0);
  assert_row(t.w, 2, 2.5, 2.5);
  assert_row(t.s0, 2, 2.25, 5.0625);
  assert_row(t.w, 0, 0.5, 0.5);
  assert_row(t.s0, 0, 9, 16);
  assert_row(t.w, 1, 2, 2);
  assert_row(t.s0, 1, 0, 0);
  assert_row(t.w, 3, 4, 4);
}

/* AdamW and Lamb densify the slices as Keras 3 does: the sparse update is the dense update with
** g2 = [1.5 2.25], g0 = [3 4] and zero rows 1 and 3, to the bit (Lamb's norms span every row). */
static void test_sparse_keras3_densifies(void **state) {
  (void)state;
  const float dense_g[8] = {3, 4, 0, 0, 1.5f, 2.25f, 0, 0};
  for (int kind = MD_OPT_ADAMW; kind <= MD_OPT_LAMB; kind++) {
    md_optimizer_spec s;
    md_optimizer_spec_defaults(&s, (md_optimizer_kind)kind);
    s.learning_rate = 0.1f;
    s.weight_decay = 0.1f;
    table a = make_table(0, 0), b = make_table(0, 0);
    md_cost ca = {0}, cb = {0};
    sparse(&s, &a, IDS, VALUES, 3, &ca);
    float *slots[2] = {b.s0, b.s1};
    md_optimizer_update(&s, 1, b.w, dense_g, slots, 8, &cb);
    assert_memory_equal(a.w, b.w, sizeof a.w);
    assert_memory_equal(a.s1, b.s1, sizeof a.s1);
    assert_true(a.w[2] < 2.0f);  /* row 1, not in the batch, still decays */
    assert_true(ca.flops > cb.flops);  /* plus the dedup */
  }
}

/* Shapes only (w NULL): no math, the same cost as with values. */
static void test_sparse_shapes_only_costs(void **state) {
  (void)state;
  md_optimizer_spec s;
  md_optimizer_spec_defaults(&s, MD_OPT_ADAM);
  table t = make_table(0, 0);
  md_cost full = {0}, shapes = {0};
  sparse(&s, &t, IDS, VALUES, 3, &full);
  float *slots[2] = {NULL, NULL};
  md_optimizer_update_sparse(&s, 1, NULL, 4, 2, IDS, NULL, 3, slots, &shapes);
  assert_true(full.flops == shapes.flops && full.bytes_moved == shapes.bytes_moved);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sgd),
      cmocka_unit_test(test_sgd_momentum),
      cmocka_unit_test(test_sgd_nesterov),
      cmocka_unit_test(test_adam),
      cmocka_unit_test(test_adam_bias_correction),
      cmocka_unit_test(test_adagrad),
      cmocka_unit_test(test_adamw),
      cmocka_unit_test(test_lamb),
      cmocka_unit_test(test_lamb_zero_norm),
      cmocka_unit_test(test_lars),
      cmocka_unit_test(test_sparse_lars_momentum),
      cmocka_unit_test(test_copy_state_resumes),
      cmocka_unit_test(test_sparse_sgd_scatter_adds),
      cmocka_unit_test(test_sparse_sgd_momentum_rows_only),
      cmocka_unit_test(test_sparse_adam_every_row),
      cmocka_unit_test(test_sparse_adagrad_rows_only),
      cmocka_unit_test(test_sparse_keras3_densifies),
      cmocka_unit_test(test_sparse_shapes_only_costs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
