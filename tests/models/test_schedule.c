/*
** test_schedule.c: Keras 3's learning-rate schedules against TensorFlow 2.21 (Keras 3) bit for
** bit, and the optimizer taking the rate of the step before its update. The expected words come
** from (TF_CPP_MIN_LOG_LEVEL=3, tensorflow-cpu 2.21.0):
**   import numpy as np, keras; S = keras.optimizers.schedules
**   s = S.CosineDecay(0.0, 10, alpha=0.05, warmup_target=0.2, warmup_steps=5)  # and the others below
**   [np.float32(s(np.int64(k))).view(np.uint32) for k in STEPS]
*/
#include "tests/testutil.h"

#include <math.h>
#include <string.h>

#include "models/optimizer.h"

static const int64_t STEPS[14] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 13, 15, 20};

static float word(uint32_t bits) {
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/* Every step's rate is TF's float32, bit for bit. */
static void check(const md_schedule *s, const uint32_t want[14]) {
  for (int i = 0; i < 14; i++) {
    float got = md_schedule_rate(s, STEPS[i]);
    uint32_t bits;
    memcpy(&bits, &got, sizeof bits);
    if (bits != want[i]) fail_msg("step %lld: %.9g (%08x), TF %.9g (%08x)", (long long)STEPS[i], got, bits, word(want[i]), want[i]);
  }
}

/* ExponentialDecay(0.1, 7, 0.5): 0.1 * 0.5^(step/7); step 7 is 0.05 (3d4ccccd), step 14 would be
** 0.025. Staircase: 0.1 through step 6, 0.05 from 7 to 13, 0.025 from 14. */
static void test_exponential(void **state) {
  (void)state;
  md_schedule s;
  md_schedule_defaults(&s, MD_SCHEDULE_EXPONENTIAL);
  s.initial_learning_rate = 0.1, s.decay_steps = 7, s.decay_rate = 0.5;
  static const uint32_t smooth[14] = {0x3dcccccd, 0x3db97e01, 0x3da80133, 0x3d982a73, 0x3d89d1f7, 0x3d79a76d,
                                      0x3d621e17, 0x3d4ccccd, 0x3d397e01, 0x3d280133, 0x3d182a73, 0x3ce21e17,
                                      0x3cb97e02, 0x3c621e17};
  check(&s, smooth);
  s.staircase = 1;
  static const uint32_t stair[14] = {0x3dcccccd, 0x3dcccccd, 0x3dcccccd, 0x3dcccccd, 0x3dcccccd, 0x3dcccccd,
                                     0x3dcccccd, 0x3d4ccccd, 0x3d4ccccd, 0x3d4ccccd, 0x3d4ccccd, 0x3d4ccccd,
                                     0x3ccccccd, 0x3ccccccd};
  check(&s, stair);
}

/* InverseTimeDecay(0.1, 3, 0.7): 0.1 / (1 + 0.7 step/3); step 3 is 0.1/1.7 = 0.0588235 (3d70f0f1).
** Staircase: floor(step/3), so steps 3..5 share 0.0588235 and 9..11 0.1/3.1 = 0.0322581. */
static void test_inverse_time(void **state) {
  (void)state;
  md_schedule s;
  md_schedule_defaults(&s, MD_SCHEDULE_INVERSE_TIME);
  s.initial_learning_rate = 0.1, s.decay_steps = 3, s.decay_rate = 0.7;
  static const uint32_t smooth[14] = {0x3dcccccd, 0x3da60dd7, 0x3d8ba2e9, 0x3d70f0f1, 0x3d53dcb0, 0x3d3d0bd2,
                                      0x3d2aaaaa, 0x3d1b8b58, 0x3d0ee23b, 0x3d042109, 0x3cf5c290, 0x3ccb1b81,
                                      0x3cb60b61, 0x3c909091};
  check(&s, smooth);
  s.staircase = 1;
  static const uint32_t stair[14] = {0x3dcccccd, 0x3dcccccd, 0x3dcccccd, 0x3d70f0f1, 0x3d70f0f1, 0x3d70f0f1,
                                     0x3d2aaaaa, 0x3d2aaaaa, 0x3d2aaaaa, 0x3d042109, 0x3d042109, 0x3cd79436,
                                     0x3cb60b61, 0x3c9d89d9};
  check(&s, stair);
}

/* PolynomialDecay(0.1, 10, end 0.01, power 2): 0.09 (1 - step/10)^2 + 0.01; step 5 is
** 0.09/4 + 0.01 = 0.0325 (3d051eb8), 0.01 from step 10 on. With cycle (decay_steps 4, power 0.5)
** the horizon is 4 ceil(step/4): step 4 ends the first cycle at 0.01, step 5 is in the second,
** 0.09 sqrt(1 - 5/8) + 0.01 = 0.0651135 (3d855a3d). */
static void test_polynomial(void **state) {
  (void)state;
  md_schedule s;
  md_schedule_defaults(&s, MD_SCHEDULE_POLYNOMIAL);
  assert_true(s.end_learning_rate == 0.0001 && s.power == 1.0);  /* Keras's defaults */
  s.initial_learning_rate = 0.1, s.decay_steps = 10, s.end_learning_rate = 0.01, s.power = 2.0;
  static const uint32_t plain[14] = {0x3dcccccd, 0x3da9c779, 0x3d8a71df, 0x3d5d97f6, 0x3d2daba0, 0x3d051eb8,
                                     0x3cc7e282, 0x3c944674, 0x3c5ed288, 0x3c3295ea, 0x3c23d70a, 0x3c23d70a,
                                     0x3c23d70a, 0x3c23d70a};
  check(&s, plain);
  s.decay_steps = 4, s.power = 0.5, s.cycle = 1;
  static const uint32_t cycle[14] = {0x3dcccccd, 0x3db41b16, 0x3d96d05d, 0x3d6147ae, 0x3c23d70a, 0x3d855a3d,
                                     0x3d6147ae, 0x3d2b4b3e, 0x3c23d70a, 0x3d6147ae, 0x3d3f74e8, 0x3d4895f8,
                                     0x3d051eb8, 0x3c23d70a};
  check(&s, cycle);
}

/* PiecewiseConstantDecay([3, 7], [0.1, 0.05, 0.01]): 0.1 while step <= 3, 0.05 for 4..7, then 0.01. */
static void test_piecewise(void **state) {
  (void)state;
  md_schedule s;
  md_schedule_defaults(&s, MD_SCHEDULE_PIECEWISE);
  s.nboundaries = 2, s.boundaries[0] = 3, s.boundaries[1] = 7;
  s.values[0] = 0.1, s.values[1] = 0.05, s.values[2] = 0.01;
  static const uint32_t want[14] = {0x3dcccccd, 0x3dcccccd, 0x3dcccccd, 0x3dcccccd, 0x3d4ccccd, 0x3d4ccccd,
                                    0x3d4ccccd, 0x3d4ccccd, 0x3c23d70a, 0x3c23d70a, 0x3c23d70a, 0x3c23d70a,
                                    0x3c23d70a, 0x3c23d70a};
  check(&s, want);
}

/* CosineDecay(0.1, 10, alpha=0.1): 0.1 (0.9 * 0.5 (1 + cos(pi step/10)) + 0.1); step 5 is
** 0.1 (0.45 + 0.1) = 0.055 (3d6147ad, float32's rounding of it), 0.01 from step 10 on. With
** warmup (initial 0, warmup_target 0.2 over 5 steps, alpha 0.05, decay 10): 0.04 step each up
** to 0.2 at step 5, then step 10 (5 into the decay) is 0.2 (0.95 * 0.5 + 0.05) = 0.105, and the
** floor 0.2 * 0.05 = 0.01 from step 15 (decay_steps + warmup_steps) on. */
static void test_cosine(void **state) {
  (void)state;
  md_schedule s;
  md_schedule_defaults(&s, MD_SCHEDULE_COSINE);
  s.initial_learning_rate = 0.1, s.decay_steps = 10, s.alpha = 0.1;
  static const uint32_t plain[14] = {0x3dcccccd, 0x3dc84a14, 0x3dbb32f2, 0x3da6cf6f, 0x3d8d1e77, 0x3d6147ad,
                                     0x3d28526b, 0x3ce9e0fd, 0x3c9852ef, 0x3c47ecd2, 0x3c23d70b, 0x3c23d70b,
                                     0x3c23d70b, 0x3c23d70b};
  check(&s, plain);
  s.initial_learning_rate = 0.0, s.alpha = 0.05, s.warmup = 1, s.warmup_target = 0.2, s.warmup_steps = 5;
  static const uint32_t warm[14] = {0x00000000, 0x3d23d70b, 0x3da3d70b, 0x3df5c290, 0x3e23d70b, 0x3e4ccccd,
                                    0x3e4809ed, 0x3e3a389f, 0x3e24b323, 0x3e0994c7, 0x3dd70a3d, 0x3ce68cf2,
                                    0x3c23d70b, 0x3c23d70b};
  check(&s, warm);
}

/* sgd on w = 1 with g = 0.5 under PiecewiseConstantDecay([0], [0.1, 0.01]): update 1 (t 1, step
** 0) takes 0.1, w = 1 - 0.05 = 0.95; update 2 (step 1) takes 0.01, w = 0.95 - 0.005 = 0.945. A
** rate evaluated at t instead of t - 1 would give 0.995 first. */
static void test_optimizer_takes_previous_step(void **state) {
  (void)state;
  md_optimizer_spec spec;
  md_optimizer_spec_defaults(&spec, MD_OPT_SGD);
  md_schedule_defaults(&spec.schedule, MD_SCHEDULE_PIECEWISE);
  spec.schedule.nboundaries = 1, spec.schedule.boundaries[0] = 0;
  spec.schedule.values[0] = 0.1, spec.schedule.values[1] = 0.01;
  assert_true(md_optimizer_learning_rate(&spec, 1) == 0.1f && md_optimizer_learning_rate(&spec, 2) == 0.01f);
  float w = 1.0f, g = 0.5f;
  md_cost cost = {0};
  md_optimizer_update(&spec, 1, &w, &g, NULL, 1, &cost);
  assert_true(w == 1.0f - 0.1f * 0.5f);
  md_optimizer_update(&spec, 2, &w, &g, NULL, 1, &cost);
  assert_true(w == (1.0f - 0.1f * 0.5f) - 0.01f * 0.5f);
  /* The sparse kernel (ResourceScatterAdd of -g*lr) takes the same rate: row 0 of 1 at t 2. */
  float row = 1.0f;
  int64_t idx = 0;
  md_optimizer_update_sparse(&spec, 2, &row, 1, 1, &idx, &g, 1, NULL, &cost);
  assert_true(row == 1.0f - 0.01f * 0.5f);
}

/* Keras 3 with gradient_accumulation_steps 4 (base_optimizer.py): the schedule reads _iterations,
** which counts micro-steps, at the one that applies: apply 1 at micro-step 3, apply 2 at 7.
** PiecewiseConstantDecay([2, 5], [0.1, 0.01, 0.001]): apply 1 takes the rate at step 3, 0.01
** (step 3 > 2), apply 2 at step 7, 0.001; without accumulation they take steps 0 and 1: 0.1. */
static void test_accumulation_counts_micro_steps(void **state) {
  (void)state;
  md_optimizer_spec spec;
  md_optimizer_spec_defaults(&spec, MD_OPT_SGD);
  md_schedule_defaults(&spec.schedule, MD_SCHEDULE_PIECEWISE);
  spec.schedule.nboundaries = 2, spec.schedule.boundaries[0] = 2, spec.schedule.boundaries[1] = 5;
  spec.schedule.values[0] = 0.1, spec.schedule.values[1] = 0.01, spec.schedule.values[2] = 0.001;
  assert_true(md_optimizer_learning_rate(&spec, 1) == 0.1f && md_optimizer_learning_rate(&spec, 2) == 0.1f);
  spec.accumulation_steps = 4;
  assert_true(md_optimizer_learning_rate(&spec, 1) == 0.01f);
  assert_true(md_optimizer_learning_rate(&spec, 2) == 0.001f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_exponential),
      cmocka_unit_test(test_inverse_time),
      cmocka_unit_test(test_polynomial),
      cmocka_unit_test(test_piecewise),
      cmocka_unit_test(test_cosine),
      cmocka_unit_test(test_optimizer_takes_previous_step),
      cmocka_unit_test(test_accumulation_counts_micro_steps),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
