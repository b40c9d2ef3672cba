/*
** test_fusion.c: XLA's fusion (compile/fusion.c and its rules) on models small enough to work out
** by hand: a layer norm, a batch norm and its ReLU, a softmax and a residual block, each a
** kernel count and the bytes of its forward's kernels; each rule's answer on the pairs that tell
** the rules apart (break a condition of a rule and that test fails); and the numbers the passes
** must leave alone (FLOPs).
**
** Every model reads 16 float32 features, batch 4: a [4, 16] activation is 256 bytes, a dense
** layer of 4 units (no bias) reads 256 + its kernel 16 x 4 x 4 = 256 and writes 64 (576 bytes,
** 512 FLOPs), one of 16 units reads 256 + 1024 and writes 256 (1536 bytes, 2048 FLOPs). An
** elementwise op reading r arrays of 256 bytes moves (r + 1) x 256.
*/
#include "tests/testutil.h"

#include "compile/compileInt.h"
#include "tests/compile/fusionkit.h"

static md_optimizer_spec sgd(void) {
  md_optimizer_spec o;
  md_optimizer_spec_defaults(&o, MD_OPT_SGD);
  return o;
}

/* The model's step compiled on batch 4 with fusion (operand: products take their operand's ops). */
static const cg_program *compiled(cg_cache **c, const md_layer_spec *layers, int nlayers, int fusion, int operand) {
  md_model_spec spec = {.input_features = 16, .nlayers = nlayers, .layers = layers, .from_logits = 1, .shapes_only = 1};
  md_optimizer_spec os = sgd();
  *c = cg_cache_new(&spec, &os, &(cg_options){.replicas = 1, .fusion = fusion, .operand_fusion = operand});
  return cg_cache_get(*c, 4);
}

/* Input -> ReLU -> LayerNormalization -> Dense(4). Unfused: ReLU 512 bytes, the norm 512 (reads
** x, writes y: its statistics and their use one pass over a row), the product 576. Fused, the
** norm joins the ReLU (kInput): the ReLU's output is still written, the norm's backward reads it
** (a multi-output fusion), but the norm reads it from the fusion: 512 + 512 - 256 = 768 (x in, the
** ReLU's output and the norm's out). With operand fusion the product joins too and reads the norm's
** output from it (its backward still reads it: written): 768 + 576 - 256 = 1088, one kernel. */
static void test_layer_norm(void **state) {
  (void)state;
  static const md_layer_spec L[3] = {{.kind = MD_LAYER_ACTIVATION, .activation = MD_ACT_RELU},
                                     {.kind = MD_LAYER_LAYER_NORMALIZATION},
                                     {.kind = MD_LAYER_DENSE, .units = 4}};
  cg_cache *c[3];
  size_t n;
  const cg_kernel *k = forward(compiled(&c[0], L, 3, 0, 0), &n);
  assert_int_equal(n, 3);
  assert_true(k[0].bytes == 512.0 && k[1].bytes == 512.0 && k[2].bytes == 576.0);
  const cg_program *p = compiled(&c[1], L, 3, 1, 0);
  k = forward(p, &n);
  assert_int_equal(n, 2);
  assert_true(k[0].bytes == 768.0 && k[0].flops == 64.0 + 8.0 * 64 && k[0].matmul.batch == 0);
  assert_true(k[1].bytes == 576.0);
  assert_int_equal(fused_by(p, "input"), 1);
  k = forward(compiled(&c[2], L, 3, 1, 1), &n);
  assert_int_equal(n, 1);
  assert_true(k[0].bytes == 1088.0 && k[0].matmul.batch == 1 && k[0].matmul.k == 16 && k[0].matmul.n == 4);
  for (int i = 0; i < 3; i++) cg_cache_free(c[i]);
}

/* Input -> BatchNormalization -> ReLU -> Dense(4). The norm's statistics are the batch's, so it
** joins no producer; its ReLU joins it (the apply and the ReLU one loop): the norm's output has no
** other reader (its backward reads its input, the ReLU's backward the ReLU's output), so neither
** written nor read: 512 + 512 - 512 = 512 (x in, the ReLU's output out). The moving statistics'
** update (2 x 16 float32 read and written: 256 bytes) stays a kernel of its own. */
static void test_batch_norm_relu(void **state) {
  (void)state;
  static const md_layer_spec L[3] = {{.kind = MD_LAYER_BATCH_NORMALIZATION},
                                     {.kind = MD_LAYER_ACTIVATION, .activation = MD_ACT_RELU},
                                     {.kind = MD_LAYER_DENSE, .units = 4}};
  cg_cache *c[2];
  size_t n;
  const cg_kernel *k = forward(compiled(&c[0], L, 3, 0, 0), &n);
  assert_int_equal(n, 4);
  assert_true(k[0].bytes == 512.0 && k[1].bytes == 256.0 && k[2].bytes == 512.0 && k[3].bytes == 576.0);
  const cg_program *p = compiled(&c[1], L, 3, 1, 0);
  k = forward(p, &n);
  assert_int_equal(n, 3);
  assert_true(k[0].bytes == 512.0 && k[0].flops == 8.0 * 64 + 64.0);
  assert_true(k[1].bytes == 256.0 && k[2].bytes == 576.0);
  assert_int_equal(fused_by(p, "loop"), 1);
  for (int i = 0; i < 2; i++) cg_cache_free(c[i]);
}

/* Dense(16) -> Softmax -> Dense(4). The softmax (a row's max, sum and scaling) joins the
** product's epilogue: the product's output has no other reader (the softmax's backward reads the
** softmax's output), so 1536 + 512 - 512 = 1536, the product's own bytes. In the backward the
** softmax's gradient joins the epilogue of the product giving its input (Dense(4)'s dx): the
** softmax layer has no variables, so no gradient pack waits on its mark; 2 by the output rule. */
static void test_softmax(void **state) {
  (void)state;
  static const md_layer_spec L[3] = {{.kind = MD_LAYER_DENSE, .units = 16},
                                     {.kind = MD_LAYER_SOFTMAX},
                                     {.kind = MD_LAYER_DENSE, .units = 4}};
  cg_cache *c;
  size_t n;
  const cg_program *p = compiled(&c, L, 3, 1, 0);
  const cg_kernel *k = forward(p, &n);
  assert_int_equal(n, 2);
  assert_true(k[0].bytes == 1536.0 && k[0].flops == 2048.0 + 5.0 * 64 && k[0].matmul.batch == 1);
  assert_int_equal(fused_by(p, "output"), 2);
  cg_cache_free(c);
}

/* A residual block: Dense(16) -> BatchNormalization -> Add(norm, input) -> ReLU -> Dense(4).
** Unfused forward: 1536, 512 (norm), 256 (moving statistics), 768 (the add reads two), 512 (ReLU),
** 576: 6 kernels, 4160 bytes. Fused: the norm joins no producer (the product's output is also
** read by the norm's backward, and the statistics need the whole batch), the add and the ReLU
** join the norm: 512 + 768 + 512 - 2 x 256 (the norm's output) - 2 x 256 (the add's) = 768 (x and
** the shortcut in, the ReLU's output out): 4 kernels (the product, the fusion, the statistics, the
** product), 3136 bytes. With operand fusion the last product also joins (its backward reads the
** ReLU's output: written) for 768 + 576 - 256 = 1088: 3 kernels, 2880 bytes. */
static void test_residual_block(void **state) {
  (void)state;
  static const md_layer_spec L[5] = {{.kind = MD_LAYER_DENSE, .units = 16},
                                     {.kind = MD_LAYER_BATCH_NORMALIZATION},
                                     {.kind = MD_LAYER_ADD, .ninputs = 2, .inputs = {1, MD_INPUT_MODEL}},
                                     {.kind = MD_LAYER_ACTIVATION, .activation = MD_ACT_RELU},
                                     {.kind = MD_LAYER_DENSE, .units = 4}};
  static const size_t kernels[3] = {6, 4, 3};
  static const double bytes[3] = {4160.0, 3136.0, 2880.0};
  for (int v = 0; v < 3; v++) {
    cg_cache *c;
    size_t n;
    const cg_kernel *k = forward(compiled(&c, L, 5, v > 0, v > 1), &n);
    assert_int_equal(n, kernels[v]);
    double b = 0;
    for (size_t i = 0; i < n; i++) b += k[i].bytes;
    assert_true(b == bytes[v]);
    if (v == 1) assert_true(k[1].bytes == 768.0);
    if (v == 2) assert_true(k[1].bytes == 1088.0 && k[1].matmul.batch == 1 && k[2].bytes == 256.0);
    cg_cache_free(c);
  }
}

/* Dense(16) -> ReLU -> Dense(4): across layers in the backward. The ReLU layer has no variables,
** so its gradient (reading Dense(4)'s dx and its own output, 768 bytes) joins the epilogue of the
** product giving that dx: dx has no other reader, neither written nor read (2 x 256). With the
** forward's ReLU in Dense(16)'s epilogue (its product's output read by nothing else: 2 x 256),
** two kernels and 1024 bytes fewer; the mark of Dense(4), whose gradients complete in the fused
** kernel, one kernel earlier (the forward's fusion), Dense(16)'s two (both fusions). */
static void test_backward_across_layers(void **state) {
  (void)state;
  static const md_layer_spec L[3] = {{.kind = MD_LAYER_DENSE, .units = 16},
                                     {.kind = MD_LAYER_ACTIVATION, .activation = MD_ACT_RELU},
                                     {.kind = MD_LAYER_DENSE, .units = 4}};
  cg_cache *c[2];
  const cg_program *p[2];
  size_t n[2];
  double b[2] = {0, 0};
  for (int v = 0; v < 2; v++) {
    p[v] = compiled(&c[v], L, 3, v, 0);
    const cg_kernel *k = cg_program_step(p[v], &n[v]);
    for (size_t i = 0; i < n[v]; i++) b[v] += k[i].bytes;
  }
  assert_int_equal(n[1], n[0] - 2);
  assert_true(b[1] == b[0] - 1024.0);
  assert_int_equal(cg_program_mark(p[1], 2), cg_program_mark(p[0], 2) - 1);
  assert_int_equal(cg_program_mark(p[1], 0), cg_program_mark(p[0], 0) - 2);
  for (int v = 0; v < 2; v++) cg_cache_free(c[v]);
}

/* Fusion moves bytes, never work: every model's FLOPs are the same fused or not. */
static void test_flops_unchanged(void **state) {
  (void)state;
  static const md_layer_spec L[5] = {{.kind = MD_LAYER_DENSE, .units = 16},
                                     {.kind = MD_LAYER_LAYER_NORMALIZATION},
                                     {.kind = MD_LAYER_DROPOUT, .rate = 0.5f},
                                     {.kind = MD_LAYER_BATCH_NORMALIZATION},
                                     {.kind = MD_LAYER_DENSE, .units = 4, .activation = MD_ACT_RELU}};
  cg_cache *c[2];
  double f[2];
  for (int v = 0; v < 2; v++) f[v] = cg_graph_flops(cg_program_graph(compiled(&c[v], L, 5, v, v)));
  assert_true(f[0] == f[1] && f[0] > 0);
  for (int v = 0; v < 2; v++) cg_cache_free(c[v]);
}

/* Each rule on the pairs that tell them apart: (root, consumer) by opcode and reduction. */
static void test_rules(void **state) {
  (void)state;
  cg_graph g = {0};
  cg_op dot = {.code = CG_OP_MATMUL}, ew = {.code = CG_OP_ELEMENTWISE}, other = {.code = CG_OP_OTHER};
  cg_op rows = {.code = CG_OP_ELEMENTWISE, .reduce = MD_REDUCE_ROWS};
  cg_op batch = {.code = CG_OP_ELEMENTWISE, .reduce = MD_REDUCE_BATCH};
  cg_op ops[2] = {ew, dot};  /* operand's root and its candidate, in one graph, unfused */
  ops[0].fusion = ops[1].fusion = -1;
  g.ops = ops;
  g.traced = g.nops = 2;
  /* output: a product's epilogue takes elementwise ops and rows, not the batch's statistics */
  assert_true(cg_fuse_output.fuses(&g, &dot, &dot, &ew) && cg_fuse_output.fuses(&g, &dot, &dot, &rows));
  assert_false(cg_fuse_output.fuses(&g, &dot, &dot, &batch) || cg_fuse_output.fuses(&g, &ew, &ew, &ew) ||
               cg_fuse_output.fuses(&g, &dot, &dot, &other));
  /* input: a row reduction onto elementwise producers, nothing else */
  assert_true(cg_fuse_input.fuses(&g, &ew, &ew, &rows) && cg_fuse_input.fuses(&g, &batch, &batch, &rows));
  assert_false(cg_fuse_input.fuses(&g, &ew, &ew, &batch) || cg_fuse_input.fuses(&g, &ew, &ew, &ew) ||
               cg_fuse_input.fuses(&g, &dot, &dot, &rows));
  /* loop: a plain elementwise op onto an elementwise root (a norm's apply is one) */
  assert_true(cg_fuse_loop.fuses(&g, &ew, &ew, &ew) && cg_fuse_loop.fuses(&g, &batch, &batch, &ew));
  assert_false(cg_fuse_loop.fuses(&g, &ew, &ew, &rows) || cg_fuse_loop.fuses(&g, &ew, &ew, &batch) ||
               cg_fuse_loop.fuses(&g, &dot, &dot, &ew) || cg_fuse_loop.fuses(&g, &ew, &ew, &other));
  /* operand: a product onto an elementwise root, only where the target does it, one a kernel */
  assert_false(cg_fuse_operand.fuses(&g, &ops[0], &ops[0], &ops[1]));
  g.operand_fusion = 1;
  assert_true(cg_fuse_operand.fuses(&g, &ops[0], &ops[0], &ops[1]));
  assert_false(cg_fuse_operand.fuses(&g, &ops[0], &ops[0], &ew));
  ops[1].fusion = 0;  /* the product already in the root's fusion: no second one */
  assert_false(cg_fuse_operand.fuses(&g, &ops[0], &ops[0], &dot));
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_layer_norm),
    cmocka_unit_test(test_batch_norm_relu),
    cmocka_unit_test(test_softmax),
    cmocka_unit_test(test_residual_block),
    cmocka_unit_test(test_backward_across_layers),
    cmocka_unit_test(test_flops_unchanged),
    cmocka_unit_test(test_rules),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
