/*
** test_fusion_gpu.c: XLA's fusion on a GPU (cg_options.gpu_backend, compile/fuse_output.c),
** where a product is a library call: a cuBLAS GEMM takes no epilogue (its vector bias and
** activation fold into cuBLASLt only, off by default), a cuDNN convolution its own layer's
** forward bias and activation; and a row's statistics are a reduction kernel apart from their
** apply (compile/fuse_input.c); against the same graphs on a TPU (XLA's own fusions).
**
** Batch 4, float32 (4 bytes). Dense(16, relu, bias) on 16 features: its product reads x (4 x 16
** = 256 bytes) and its kernel (16 x 16 x 4 = 1024) and writes 256 (1536 bytes, 2048 FLOPs); its
** bias add and ReLU each read 256 and write 256 (512 bytes); Dense(4) (no bias) reads 256 + its
** kernel 256 and writes 64 (576 bytes).
*/
#include "tests/testutil.h"

#include "compile/compileInt.h"
#include "tests/compile/fusionkit.h"

/* The model's step compiled on batch 4 with fusion, for a GPU (library products) or a TPU. */
static const cg_program *compiled(cg_cache **c, const md_model_spec *spec, int fusion, int gpu) {
  md_optimizer_spec os;
  md_optimizer_spec_defaults(&os, MD_OPT_SGD);
  *c = cg_cache_new(spec, &os,
                    &(cg_options){.replicas = 1, .fusion = fusion, .operand_fusion = !gpu, .gpu_backend = gpu});
  return cg_cache_get(*c, 4);
}

/* The forward's kernels' bytes into b (at most 8), their count returned. */
static size_t forward_bytes(const cg_program *p, double *b) {
  size_t n;
  const cg_kernel *k = forward(p, &n);
  for (size_t i = 0; i < n && i < 8; i++) b[i] = k[i].bytes;
  return n;
}

/* A forward's kernels as a test expects them. */
typedef struct kernels {
  size_t n;               /* how many */
  double bytes[4];        /* each one's bytes, in order */
} kernels;

/* The model compiled unfused, fused for a TPU and fused for a GPU (p[0..2], their caches in c),
** each forward's kernels checked against want[0..2]. */
static void check_three(const md_model_spec *spec, const kernels want[3], cg_cache *c[3], const cg_program *p[3]) {
  static const int fusion[3] = {0, 1, 1}, gpu[3] = {1, 0, 1};
  for (int v = 0; v < 3; v++) {
    double b[8];
    p[v] = compiled(&c[v], spec, fusion[v], gpu[v]);
    assert_int_equal(forward_bytes(p[v], b), want[v].n);
    for (size_t i = 0; i < want[v].n; i++) assert_true(b[i] == want[v].bytes[i]);
  }
}

/* Input -> Dense(16, relu, bias) -> Dense(4). Unfused forward: 1536, 512, 512, 576.
** TPU: the bias and the ReLU are the product's epilogue (its output and the bias's read by
** nothing else: 2 x 256 saved each): 1536 + 512 + 512 - 1024 = 1536; Dense(4) stays a kernel of
** its own (one product a kernel, fuse_operand.c): two kernels.
** GPU: cuBLAS writes the product (1536), the bias and the ReLU are a loop of their own reading it
** once: 512 + 512 - 2 x 256 = 512, and Dense(4) is a GEMM of its own (576): three kernels.
** In the backward the ReLU's gradient does not join the GEMM giving Dense(4)'s dx on a GPU
** either: no output rule fires there. */
static void test_dense_gemm(void **state) {
  (void)state;
  static const md_layer_spec L[2] = {{.kind = MD_LAYER_DENSE, .units = 16, .activation = MD_ACT_RELU, .use_bias = 1},
                                     {.kind = MD_LAYER_DENSE, .units = 4}};
  md_model_spec spec = {.input_features = 16, .nlayers = 2, .layers = L, .from_logits = 1, .shapes_only = 1};
  static const kernels want[3] = {{4, {1536.0, 512.0, 512.0, 576.0}}, {2, {1536.0, 576.0}}, {3, {1536.0, 512.0, 576.0}}};
  cg_cache *c[3];
  const cg_program *p[3];
  check_three(&spec, want, c, p);
  assert_int_equal(fused_by(p[2], "output"), 0);
  assert_true(fused_by(p[2], "loop") >= 1 && fused_by(p[1], "output") >= 2);
  for (int i = 0; i < 3; i++) cg_cache_free(c[i]);
}

/* Input [4, 4, 1] -> Conv2D(4, 1x1, relu) -> Flatten -> Dense(4). The convolution reads 4 x 16
** floats (256 bytes) and its kernel (4 floats, 16) and writes 4 x 64 (1024): 1296 bytes; its ReLU
** reads and writes 1024 (2048); Dense(4) reads 1024 + its kernel 64 x 4 x 4 = 1024 and writes 64
** (2112). On a GPU the ReLU is cuDNN's fused activation, one kernel with the convolution, the
** dense layer after it a GEMM of its own. Unfused: three kernels. The pre-activation is read by
** nothing else, so the kernel should be 1296 + 2048 - 2048 = 1296; but the convolution's logged
** op states no output size (models/layers/window.c sets no out_bytes), so the tensor between them
** is 0 bytes in the graph and the join saves nothing (1296 + 2048): the saving waits on the model
** stating it, which would also move TPU runs (their liveness reads the same sizes). */
static void test_conv_activation(void **state) {
  (void)state;
  static const md_layer_spec L[3] = {
      {.kind = MD_LAYER_CONV2D, .filters = 4, .kernel_size = {1, 1}, .activation = MD_ACT_RELU},
      {.kind = MD_LAYER_FLATTEN},
      {.kind = MD_LAYER_DENSE, .units = 4}};
  md_model_spec spec = {.input_shape = {.rank = 3, .dim = {4, 4, 1}}, .nlayers = 3, .layers = L, .from_logits = 1,
                        .shapes_only = 1};
  cg_cache *c[2];
  double b[8];
  assert_int_equal(forward_bytes(compiled(&c[0], &spec, 0, 1), b), 3);
  assert_true(b[0] == 1296.0 && b[1] == 2048.0 && b[2] == 2112.0);
  const cg_program *gpu = compiled(&c[1], &spec, 1, 1);
  assert_int_equal(forward_bytes(gpu, b), 2);
  assert_true(b[0] == 1296.0 + 2048.0 && b[1] == 2112.0);
  assert_int_equal(fused_by(gpu, "output"), 1);
  for (int i = 0; i < 2; i++) cg_cache_free(c[i]);
}

/* Input -> ReLU -> LayerNormalization -> Dropout(0.5) -> Dense(4). Unfused: the ReLU 512, the
** norm 512 (reads x, writes y), the dropout 3 x 256 = 768 (reads y, writes its output and its mask),
** Dense(4) 576. TPU: the norm joins the ReLU (kInput: it reads the ReLU's output from the fusion,
** which still writes it for the norm's backward) and the dropout joins the norm (its read of y
** saved, and y's write, read by nothing else): 512 + 512 + 768 - 256 - 2 x 256 = 1024; Dense(4)
** takes the dropout's output as its operand (written: its backward reads it): 1024 + 576 - 256 =
** 1344, one kernel. GPU: the norm's statistics are a reduction kernel and their apply another,
** which reads x again, so the norm joins no producer: the ReLU 512, the norm and its dropout 512 +
** 768 - 512 = 768, Dense(4) 576; and its variance is a second reduction after the mean's, reading
** x once more (compile/gpu_rows.c: 2 passes x 256 less the 256 the first takes in from the ReLU's
** loop): 768 + 256 = 1024. Three kernels, 2112 bytes. */
static void test_layer_norm(void **state) {
  (void)state;
  static const md_layer_spec L[4] = {{.kind = MD_LAYER_ACTIVATION, .activation = MD_ACT_RELU},
                                     {.kind = MD_LAYER_LAYER_NORMALIZATION},
                                     {.kind = MD_LAYER_DROPOUT, .rate = 0.5f},
                                     {.kind = MD_LAYER_DENSE, .units = 4}};
  md_model_spec spec = {.input_features = 16, .nlayers = 4, .layers = L, .from_logits = 1, .shapes_only = 1};
  static const kernels want[3] = {{4, {512.0, 512.0, 768.0, 576.0}}, {1, {1344.0}}, {3, {512.0, 1024.0, 576.0}}};
  cg_cache *c[3];
  const cg_program *p[3];
  check_three(&spec, want, c, p);
  assert_int_equal(fused_by(p[1], "input"), 1);
  assert_int_equal(fused_by(p[2], "input"), 0);
  for (int i = 0; i < 3; i++) cg_cache_free(c[i]);
}

/* The GPU epilogue's conditions one by one: a convolution's own layer's forward elementwise op
** whose input nothing else reads; a GEMM, another layer's op, a backward op, a row reduction or
** a second reader each refuse it. Without library products (a TPU) the GEMM takes it. */
static void test_gpu_rule(void **state) {
  (void)state;
  int readers[2] = {1, 2}, out = 0;
  cg_tensor t = {.consumers = readers, .nconsumers = 1};
  cg_graph g = {.tensors = &t, .ntensors = 1, .gpu_backend = 1};
  cg_op conv = {.code = CG_OP_MATMUL, .convolution = 1, .layer = 0, .out = &out, .nout = 1};
  cg_op gemm = conv, ew = {.code = CG_OP_ELEMENTWISE, .layer = 0};
  gemm.convolution = 0;
  cg_op other_layer = ew, backward = ew, rows = ew;
  other_layer.layer = 1;
  backward.phase = MD_PHASE_BACKWARD;
  rows.reduce = MD_REDUCE_ROWS;
  assert_true(cg_fuse_output.fuses(&g, &conv, &conv, &ew));
  assert_false(cg_fuse_output.fuses(&g, &gemm, &gemm, &ew) || cg_fuse_output.fuses(&g, &conv, &conv, &other_layer) ||
               cg_fuse_output.fuses(&g, &conv, &conv, &backward) || cg_fuse_output.fuses(&g, &conv, &conv, &rows));
  t.nconsumers = 2;
  assert_false(cg_fuse_output.fuses(&g, &conv, &conv, &ew));
  g.gpu_backend = 0;
  assert_true(cg_fuse_output.fuses(&g, &gemm, &gemm, &ew) && cg_fuse_output.fuses(&g, &gemm, &gemm, &rows));
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_dense_gemm),
    cmocka_unit_test(test_conv_activation),
    cmocka_unit_test(test_layer_norm),
    cmocka_unit_test(test_gpu_rule),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
