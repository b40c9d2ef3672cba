/* test_mfu.c: tokens/s and model FLOPs utilisation as PaLM defines them (scenarios/programs/mfu.h). */
#include "tests/testutil.h"

#include <math.h>

#include "scenarios/config/scenario.h"
#include "scenarios/programs/mfu.h"

static scenario s;

static md_model *load(const char *rel) {
  scn_error err;
  if (scenario_load(tu_src(rel), NULL, 0, &s, &err) != 0) fail_msg("%s: %s", rel, err.msg);
  md_model_spec spec = scenario_model_spec(&s, 1);
  md_error me = {0};
  md_model *m = md_model_new(&spec, &me);
  if (m == NULL) fail_msg("%s: %s", rel, me.msg);
  return m;
}

/* The tiny decoder, counted by hand. Parameters N: token and position tables 16 x 8 + 8 x 8 =
** 192; a block: layer norm 16, attention (query, key, value kernels 8 x 2 x 4 with biases 2 x 4:
** 3 x 72; output 2 x 4 x 8 + 8 = 72) 288, layer norm 16, dense 8 x 16 + 16 = 144, dense 16 x 8 + 8
** = 136: 600, two blocks 1200; final layer norm 16; lm head 8 x 16 + 16 = 144. N = 1552.
** FLOPs per token 6N + 12 L H Q T = 9312 + 12 x 2 x 2 x 4 x 8 = 9312 + 1536 = 10848. Peak: 4 v4
** chips x 275e12 = 1.1e15. */
static void test_tiny_decoder(void **state) {
  (void)state;
  md_model *m = load("tests/data/mfu/tiny_decoder.yaml");
  assert_int_equal(md_model_num_params(m), 1552);
  mfu_model f = mfu_of(&s, m);
  assert_true(f.tokens_per_example == 8);
  assert_true(f.flops_per_token == 10848);
  assert_true(f.peak_flops == 4 * 275e12);
  /* 100 examples/s are 800 tokens/s, 800 x 10848 FLOP/s over 1.1e15. */
  assert_true(mfu_tokens_per_s(&f, 100) == 800);
  assert_true(fabs(mfu_utilisation(&f, 100) - 800 * 10848 / 1.1e15) < 1e-20);
  /* The summary's rate is the steady one: 32 examples per 0.25 s mean step (compile excluded) =
  ** 128 examples/s = 1024 tokens/s, whatever examples_per_s over the whole run says. */
  run_summary sum = { .examples_per_s = 3, .means = { .step_s = 0.25 } };
  mfu_summarise(&s, m, &sum);
  assert_true(sum.has_tokens);
  assert_true(sum.tokens_per_s == 1024);
  assert_true(fabs(sum.mfu - 1024 * 10848 / 1.1e15) < 1e-20);
  md_model_free(m);
}

/* A model of features reads no tokens: neither figure (summary.json leaves them out). */
static void test_features_model_has_no_tokens(void **state) {
  (void)state;
  md_model *m = load("scenarios/examples/tpu_v4.yaml");
  mfu_model f = mfu_of(&s, m);
  assert_true(f.tokens_per_example == 0);
  assert_true(f.peak_flops == 16 * 275e12);  /* v4-32: 16 chips */
  run_summary sum = { .means = { .step_s = 0.1 } };
  mfu_summarise(&s, m, &sum);
  assert_false(sum.has_tokens);
  md_model_free(m);
}

/* PaLM's own figure (Appendix B, Table 3): 540B (N = 540.35e9, L = 118, H = 48, Q = 256,
** T = 2048) at 238.3k tokens/s on 6144 v4 chips of 275e12 is 46.2% MFU. */
static void test_palm_540b_figure(void **state) {
  (void)state;
  mfu_model f = { 2048, 6 * 540.35e9 + 12.0 * 118 * 48 * 256 * 2048, 6144 * 275e12 };
  double mfu = mfu_utilisation(&f, 238.3e3 / 2048);
  assert_true(fabs(mfu - 0.462) < 0.0005);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_tiny_decoder),
    cmocka_unit_test(test_features_model_has_no_tokens),
    cmocka_unit_test(test_palm_540b_figure),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
