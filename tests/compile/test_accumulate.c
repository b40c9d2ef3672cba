/*
** test_accumulate.c: gradient accumulation's sums (compile/accumulate.c): after a micro-batch each
** trainable variable's float32 gradient is added into its accumulator, reading both and writing
** the sum, a kernel a variable; a variable with no gradient (batch norm's moving statistics) has
** none.
**
** Input of 16 features -> BatchNormalization -> Dense(4, bias), float32, batch 4. Trainable:
** gamma and beta (16 floats each: a gradient of 64 bytes, its kernel 3 x 64 = 192 bytes and 16
** adds), the dense kernel (16 x 4 = 64 floats: 256 bytes, 768 and 64) and its bias (4 floats: 16
** bytes, 48 and 4): four kernels, 1200 bytes. The moving mean and variance are not trained.
*/
#include "tests/testutil.h"

#include "compile/compileInt.h"

static void test_sums_per_trainable_variable(void **state) {
  (void)state;
  static const md_layer_spec L[2] = {{.kind = MD_LAYER_BATCH_NORMALIZATION},
                                     {.kind = MD_LAYER_DENSE, .units = 4, .use_bias = 1}};
  md_model_spec spec = {.input_features = 16, .nlayers = 2, .layers = L, .from_logits = 1, .shapes_only = 1};
  md_optimizer_spec os;
  md_optimizer_spec_defaults(&os, MD_OPT_SGD);
  cg_cache *c = cg_cache_new(&spec, &os, &(cg_options){.replicas = 1});
  size_t n;
  const cg_kernel *k = cg_program_accumulate(cg_cache_get(c, 4), &n);
  assert_int_equal(n, 4);
  double bytes = 0, flops = 0;
  for (size_t i = 0; i < n; i++) {
    assert_true(k[i].bytes == 12.0 * k[i].flops);  /* read the gradient and the sum, write the sum */
    assert_int_equal(k[i].phase, MD_PHASE_OPTIMIZER);
    bytes += k[i].bytes;
    flops += k[i].flops;
  }
  assert_true(bytes == 192.0 + 192.0 + 768.0 + 48.0 && flops == 16.0 + 16.0 + 64.0 + 4.0);
  cg_cache_free(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_sums_per_trainable_variable),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
