/*
** test_gpu_rows.c: a row reduction's statistics on XLA's GPU backend (compile/gpu_rows.c): each
** dependent reduction is a kernel reading the rows again, except what the first takes in from an
** elementwise producer of its pass; on a TPU (the row held on chip) and unfused nothing changes.
**
** Batch 4, float32 (4 bytes), 16 features. Dense(8) (no bias) reads x (4 x 16 x 4 = 256 bytes)
** and its kernel (16 x 8 x 4 = 512) and writes 4 x 8 x 4 = 128: 896 bytes. A softmax over its 8
** outputs reads 128 and writes 128 (256). Dense(4) reads 128 and its kernel (8 x 4 x 4 = 128)
** and writes 64: 320.
*/
#include "tests/testutil.h"

#include "compile/compileInt.h"
#include "tests/compile/fusionkit.h"

static const cg_program *compiled(cg_cache **c, const md_model_spec *spec, int fusion, int gpu) {
  md_optimizer_spec os;
  md_optimizer_spec_defaults(&os, MD_OPT_SGD);
  *c = cg_cache_new(spec, &os,
                    &(cg_options){.replicas = 1, .fusion = fusion, .operand_fusion = !gpu, .gpu_backend = gpu});
  return cg_cache_get(*c, 4);
}

/* The bytes of the step's kernel of `layer` in `phase` (the first one). */
static double kernel_bytes(const cg_program *p, int layer, md_phase phase) {
  size_t n;
  const cg_kernel *k = cg_program_step(p, &n);
  for (size_t i = 0; i < n; i++)
    if (k[i].layer == layer && k[i].phase == phase) return k[i].bytes;
  fail_msg("no kernel of layer %d in phase %d", layer, (int)phase);
  return 0;
}

/* Input -> Dense(8) -> Softmax -> Dense(4). The softmax's producer is a cuBLAS GEMM, which no
** reduction takes in: its max and its sum of exp are two kernels reading the 128 bytes each, and
** the apply a third: 256 + 2 x 128 = 512 on a GPU, where unfused (the model's op) it is 256. Its
** backward reads dy (from Dense(4)'s dx GEMM) and y and writes dx (3 x 128 = 384), and its one
** sum (of dy y) is a kernel reading both before the apply reads them again: 384 + 256 = 640.
** On a TPU the softmax is the GEMM's epilogue, its input neither written nor read back (896 + 256
** - 2 x 128 = 896 in two forward kernels): no reduction rereads a row there. */
static void test_softmax_after_gemm(void **state) {
  (void)state;
  static const md_layer_spec L[3] = {{.kind = MD_LAYER_DENSE, .units = 8},
                                     {.kind = MD_LAYER_SOFTMAX},
                                     {.kind = MD_LAYER_DENSE, .units = 4}};
  md_model_spec spec = {.input_features = 16, .nlayers = 3, .layers = L, .from_logits = 1, .shapes_only = 1};
  cg_cache *c[3];
  const cg_program *unfused = compiled(&c[0], &spec, 0, 1), *gpu = compiled(&c[1], &spec, 1, 1),
                   *tpu = compiled(&c[2], &spec, 1, 0);
  assert_true(kernel_bytes(unfused, 0, MD_PHASE_FORWARD) == 896.0);
  assert_true(kernel_bytes(unfused, 1, MD_PHASE_FORWARD) == 256.0);
  assert_true(kernel_bytes(unfused, 1, MD_PHASE_BACKWARD) == 384.0);
  assert_true(kernel_bytes(gpu, 0, MD_PHASE_FORWARD) == 896.0);
  assert_true(kernel_bytes(gpu, 1, MD_PHASE_FORWARD) == 512.0);
  assert_true(kernel_bytes(gpu, 1, MD_PHASE_BACKWARD) == 640.0);
  size_t n;
  const cg_kernel *k = forward(tpu, &n);
  assert_int_equal(n, 2);
  assert_true(k[0].bytes == 896.0 && k[1].bytes == 320.0);
  for (int i = 0; i < 3; i++) cg_cache_free(c[i]);
}

/* Input -> ReLU -> Softmax -> Dense(4) on 16 features: the ReLU reads and writes 4 x 16 x 4 = 256
** (512); the softmax 512 unfused. On a GPU the max's kernel takes the ReLU's loop in (reading the
** ReLU's input, writing its output for the apply: the ReLU's 512 and the softmax's read, as
** counted), so of the two reductions only the sum's reread is added: 512 + 256 = 768. */
static void test_softmax_after_loop(void **state) {
  (void)state;
  static const md_layer_spec L[3] = {{.kind = MD_LAYER_ACTIVATION, .activation = MD_ACT_RELU},
                                     {.kind = MD_LAYER_SOFTMAX},
                                     {.kind = MD_LAYER_DENSE, .units = 4}};
  md_model_spec spec = {.input_features = 16, .nlayers = 3, .layers = L, .from_logits = 1, .shapes_only = 1};
  cg_cache *c[2];
  const cg_program *unfused = compiled(&c[0], &spec, 0, 1), *gpu = compiled(&c[1], &spec, 1, 1);
  assert_true(kernel_bytes(unfused, 0, MD_PHASE_FORWARD) == 512.0);
  assert_true(kernel_bytes(unfused, 1, MD_PHASE_FORWARD) == 512.0);
  assert_true(kernel_bytes(gpu, 0, MD_PHASE_FORWARD) == 512.0);
  assert_true(kernel_bytes(gpu, 1, MD_PHASE_FORWARD) == 768.0);
  for (int i = 0; i < 2; i++) cg_cache_free(c[i]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_softmax_after_gemm),
    cmocka_unit_test(test_softmax_after_loop),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
