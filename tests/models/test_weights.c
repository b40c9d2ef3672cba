/*
** test_weights.c: the weights CSV round-trips float32 bit-exactly (denormals, -0, extremes) and
** the reader reports each kind of bad file at its line:col, leaving the model untouched.
*/
#include "tests/testutil.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "models/weights.h"

static char temp_path[64];

static FILE *open_temp(void) {
  snprintf(temp_path, sizeof temp_path, "/tmp/podsim_md_XXXXXX");
  int fd = mkstemp(temp_path);
  assert_true(fd >= 0);
  FILE *f = fdopen(fd, "w");
  assert_non_null(f);
  return f;
}

/* Dense(2) on 3 inputs: dense/kernel [3,2] (6 floats) and dense/bias [2]. */
static md_model *small_model(void) {
  static const md_layer_spec l = {.kind = MD_LAYER_DENSE, .units = 2, .use_bias = 1};
  md_model_spec spec = {.input_features = 3, .nlayers = 1, .layers = &l, .from_logits = 1};
  md_model *m = md_model_new(&spec, NULL);
  assert_non_null(m);
  return m;
}

static void test_round_trip(void **state) {
  (void)state;
  md_model *m = small_model();
  const float kernel[6] = {1e-45f /* smallest denormal */, -1.17549421e-38f /* largest denormal */,
                           -0.0f, FLT_MAX, -FLT_MIN, 3.14159274f};
  const float bias[2] = {0.1f, -123456792.0f};
  memcpy(md_model_var(m, 0)->data, kernel, sizeof kernel);
  memcpy(md_model_var(m, 1)->data, bias, sizeof bias);
  FILE *f = open_temp();
  assert_int_equal(md_weights_write(m, f), 0);
  fclose(f);

  md_model *back = small_model();
  md_error err = {0};
  if (md_weights_read(back, temp_path, &err) != 0) fail_msg("%d:%d %s", err.line, err.col, err.msg);
  unlink(temp_path);
  assert_memory_equal(md_model_var(back, 0)->data, kernel, sizeof kernel);
  assert_memory_equal(md_model_var(back, 1)->data, bias, sizeof bias);
  assert_true(signbit(md_model_var(back, 0)->data[2]));
  md_model_free(back);
  md_model_free(m);

  /* Every float of a sweep of bit patterns comes back as the same bits through the format. */
  for (uint32_t bits = 1; bits < 0x7f800000u; bits += 0x00012345u) {
    float v, r;
    memcpy(&v, &bits, sizeof v);
    char buf[32];
    md_format_float(buf, sizeof buf, v);
    r = strtof(buf, NULL);
    assert_memory_equal(&v, &r, sizeof v);
  }
}

/* The 9-line file of a full small model, with line `line` (1-based) replaced by `repl` (dropped
** when repl is empty). */
static const char *good[] = {"variable,flat_index,value", "dense/kernel,0,1", "dense/kernel,1,2",
                             "dense/kernel,2,3", "dense/kernel,3,4", "dense/kernel,4,5",
                             "dense/kernel,5,6", "dense/bias,0,7", "dense/bias,1,8"};

static void expect_error(int line, const char *repl, int eline, int ecol, const char *words) {
  FILE *f = open_temp();
  for (int i = 1; i <= 9; i++) {
    const char *text = i == line ? repl : good[i - 1];
    if (*text != '\0') fprintf(f, "%s\n", text);
  }
  fclose(f);
  md_model *m = small_model();
  md_model_var(m, 0)->data[0] = 42.0f;
  md_error err = {0};
  int rc = md_weights_read(m, temp_path, &err);
  unlink(temp_path);
  if (rc == 0) fail_msg("read, expected an error at %d:%d", eline, ecol);
  if (err.line != eline || err.col != ecol || strstr(err.msg, words) == NULL)
    fail_msg("got %d:%d \"%s\", expected %d:%d \"...%s...\"", err.line, err.col, err.msg, eline,
             ecol, words);
  /* A failed read changes nothing. */
  assert_true(md_model_var(m, 0)->data[0] == 42.0f);
  md_model_free(m);
}

static void test_read_errors(void **state) {
  (void)state;
  /* columns are where the offending field starts: "dense/kernel," is 13 characters */
  expect_error(1, "variable,index,value", 1, 10, "header");
  expect_error(3, "dense/kernal,1,2", 3, 1, "unknown variable \"dense/kernal\"");
  expect_error(3, "dense/kernel,6,2", 3, 14, "out of range");
  expect_error(3, "dense/kernel,-1,2", 3, 14, "out of range");
  expect_error(3, "dense/kernel,1.5,2", 3, 14, "not an integer");
  expect_error(3, "dense/kernel,0,2", 3, 14, "given twice");
  expect_error(4, "dense/kernel,2,abc", 4, 16, "not a number");
  expect_error(5, "dense/kernel,3", 5, 15, "expected 3 fields");
  expect_error(5, "dense/kernel,3,4,5", 5, 18, "expected 3 fields");
  /* The last line dropped: 8 lines read, the error points at line 9 and names the element. */
  expect_error(9, "", 9, 0, "dense/bias element 1 is missing");

  fclose(open_temp());
  md_model *m = small_model();
  md_error err = {0};
  assert_int_equal(md_weights_read(m, temp_path, &err), -1);
  unlink(temp_path);
  assert_int_equal(err.line, 1);
  assert_non_null(strstr(err.msg, "empty file"));
  md_model_free(m);
}

/* Keras 3 calls DepthwiseConv2D's kernel LAYER/kernel where Keras 2 and TF.js (and podsim) say
** LAYER/depthwise_kernel: a file of either reads. A 1x1 depthwise kernel on 2 channels (2 floats)
** and its bias; a Dense's "kernel" stays its own name. */
static void test_keras3_depthwise_name(void **state) {
  (void)state;
  static const md_layer_spec l = {.kind = MD_LAYER_DEPTHWISE_CONV2D, .kernel_size = {1, 1}, .use_bias = 1};
  md_model_spec spec = {.input_shape = {3, {2, 2, 2}}, .nlayers = 1, .layers = &l, .from_logits = 1};
  for (int keras3 = 0; keras3 < 2; keras3++) {
    md_model *m = md_model_new(&spec, NULL);
    assert_non_null(m);
    assert_string_equal(md_model_var(m, 0)->name, "depthwise_conv2d/depthwise_kernel");
    FILE *f = open_temp();
    fprintf(f, "variable,flat_index,value\n%s,0,0.5\n%s,1,-2\n"
            "depthwise_conv2d/bias,0,1\ndepthwise_conv2d/bias,1,3\n",
            keras3 ? "depthwise_conv2d/kernel" : "depthwise_conv2d/depthwise_kernel",
            keras3 ? "depthwise_conv2d/kernel" : "depthwise_conv2d/depthwise_kernel");
    fclose(f);
    md_error err = {0};
    if (md_weights_read(m, temp_path, &err) != 0) fail_msg("%d:%d %s", err.line, err.col, err.msg);
    unlink(temp_path);
    assert_true(md_model_var(m, 0)->data[0] == 0.5f && md_model_var(m, 0)->data[1] == -2.0f);
    md_model_free(m);
  }
  md_model *d = small_model();  /* dense/kernel exists: no alias is looked for; dense/kernal has none */
  FILE *f = open_temp();
  fprintf(f, "variable,flat_index,value\ndense/kernal,0,1\n");
  fclose(f);
  md_error err = {0};
  assert_int_equal(md_weights_read(d, temp_path, &err), -1);
  unlink(temp_path);
  assert_string_equal(err.msg, "unknown variable \"dense/kernal\"");
  md_model_free(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_read_errors),
      cmocka_unit_test(test_keras3_depthwise_name),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
