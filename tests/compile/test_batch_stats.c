/*
** test_batch_stats.c: a batch norm's statistics pass on a GPU (compile/batch_stats.c): the op
** reads every activation-sized input a second time, never a variable; elsewhere (a TPU, a CPU)
** the op is the model's as logged.
**
** Batch 4, float32. Input (16 features) -> Dense(16, no bias) -> BatchNormalization -> Dense(4).
** The batch norm's forward reads the dense output (4 x 16 x 4 = 256 bytes) and writes 256: 512;
** its moving statistics' update (2 x 16 floats read and written, 256) is an op beside it. Its
** backward reads x and dy (256 each) and writes dx: 768. On a GPU the forward's reduction reads x
** again (+256: 768) and the backward's reads x and dy again (+512: 1280); gamma, beta and the
** moving statistics (16 floats each) are not re-read: were they, the forward would gain 4 x 64 =
** 256 more and the backward 2 x 64 (its trainable variables) at least.
*/
#include "tests/testutil.h"

#include "compile/compileInt.h"

/* The bytes of layer l's kernels in one phase, in the step compiled unfused on batch 4. */
static double layer_bytes(const md_model_spec *spec, int gpu, int l, md_phase phase) {
  md_optimizer_spec os;
  md_optimizer_spec_defaults(&os, MD_OPT_SGD);
  cg_cache *c = cg_cache_new(spec, &os, &(cg_options){.replicas = 1, .gpu_backend = gpu});
  size_t n;
  const cg_kernel *k = cg_program_step(cg_cache_get(c, 4), &n);
  double bytes = 0;
  for (size_t i = 0; i < n; i++)
    if (k[i].layer == l && k[i].phase == phase) bytes += k[i].bytes;
  cg_cache_free(c);
  return bytes;
}

static void test_batch_norm_reads_twice_on_gpu(void **state) {
  (void)state;
  static const md_layer_spec L[3] = {{.kind = MD_LAYER_DENSE, .units = 16},
                                     {.kind = MD_LAYER_BATCH_NORMALIZATION},
                                     {.kind = MD_LAYER_DENSE, .units = 4}};
  md_model_spec spec = {.input_features = 16, .nlayers = 3, .layers = L, .from_logits = 1, .shapes_only = 1};
  assert_true(layer_bytes(&spec, 0, 1, MD_PHASE_FORWARD) == 512.0 + 256.0);
  assert_true(layer_bytes(&spec, 1, 1, MD_PHASE_FORWARD) == 768.0 + 256.0);
  assert_true(layer_bytes(&spec, 0, 1, MD_PHASE_BACKWARD) == 768.0);
  assert_true(layer_bytes(&spec, 1, 1, MD_PHASE_BACKWARD) == 1280.0);
  /* the dense layers around it are the same on both */
  assert_true(layer_bytes(&spec, 1, 0, MD_PHASE_FORWARD) == layer_bytes(&spec, 0, 0, MD_PHASE_FORWARD));
  assert_true(layer_bytes(&spec, 1, 2, MD_PHASE_BACKWARD) == layer_bytes(&spec, 0, 2, MD_PHASE_BACKWARD));
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_batch_norm_reads_twice_on_gpu),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
