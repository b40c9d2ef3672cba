/*
** test_liveness.c: liveness.c's peak on a graph small enough to follow by hand, and what each
** layer's backward keeps live (md_model_layer_backward_reads through the trace).
*/
#include "tests/testutil.h"

#include "compile/compileInt.h"

/* 16 features -> dense 8 relu -> dense 4 (logits), sparse cross-entropy, plain SGD. */
static const md_layer_spec MLP[2] = {
  {.kind = MD_LAYER_DENSE, .units = 8, .activation = MD_ACT_RELU, .use_bias = 1},
  {.kind = MD_LAYER_DENSE, .units = 4, .activation = MD_ACT_NONE, .use_bias = 1}};

static const cg_graph *compiled(cg_cache **c, const md_layer_spec *layers, int nlayers, const char *memory, int n) {
  md_model_spec spec = {.input_features = 16, .nlayers = nlayers, .layers = layers, .from_logits = 1, .shapes_only = 1};
  md_optimizer_spec os;
  md_optimizer_spec_defaults(&os, MD_OPT_SGD);
  *c = cg_cache_new(&spec, &os, &(cg_options){.replicas = 1, .memory = memory});
  return cg_program_graph(cg_cache_get(*c, n));
}

/* The MLP on one replica, batch 4, float32. Persistent: the variables, 16x8 + 8 + 8x4 + 4 = 172
** floats = 688 B (SGD keeps no slot). The schedule is the trace's 16 ops (0-5 forward and loss,
** 6-11 backward, 12-15 the updates); each tensor lives from its writer to its last reader:
**   input 256 [0,9]; dense's dot 128 [0,1], bias-add 128 [1,2], relu (its activation) 128 [2,9]
**   (dense_1's backward reads it for its kernel's gradient, relu's derivative reads it at 9);
**   dense_1's dot 64 [3,4], its logits 64 [4,5]; the loss's gradient 64 [5,8];
**   dense_1's backward: dense's output gradient 128 [8,9], its kernel's gradient 128 [8,14] and
**   bias's 16 [8,15]; relu's derivative 128 [9,11]; dense's kernel gradient 512 [11,12], bias's 32
**   [11,13].
** At 9: input 256 + relu 128 + output gradient 128 + relu derivative 128 + dense_1's gradients 144
** = 784. At 11: relu derivative 128 + every variable's gradient 688 = 816, the peak; at 12 the
** derivative is gone (688). So the peak is 688 + 816 = 1504, 688 of it gradients. Keeping every
** tensor to the end holds all 13 at once: 256 + 128*3 + 64*3 + 128 + 128 + 16 + 128 + 512 + 32
** = 1776, so 688 + 1776 = 2464. */
static void test_peak_by_hand(void **state) {
  (void)state;
  cg_cache *c[2];
  const cg_graph *live = compiled(&c[0], MLP, 2, NULL, 4);
  const cg_graph *all = compiled(&c[1], MLP, 2, "keep_all", 4);
  assert_true(cg_graph_persistent_bytes(live) == 688.0);
  assert_true(cg_graph_peak_bytes(live) == 1504.0);
  assert_true(cg_graph_peak_gradient_bytes(live) == 688.0);
  assert_true(cg_graph_peak_bytes(all) == 2464.0);
  for (int i = 0; i < 2; i++) cg_cache_free(c[i]);
}

/* What a backward reads decides what stays live. dense 8 (no activation) -> batch norm ->
** relu (an Activation layer) -> dense 4, batch 4: ReluGrad reads relu's output and
** FusedBatchNormGrad its input (dense's output), so batch norm's own output (128 B) is freed when
** relu has read it in the forward; had every backward read its output, it would live to relu's
** backward. */
static void test_backward_reads(void **state) {
  (void)state;
  static const md_layer_spec NET[4] = {
    {.kind = MD_LAYER_DENSE, .units = 8, .use_bias = 1},
    {.kind = MD_LAYER_BATCH_NORMALIZATION, .epsilon = 1e-3f},
    {.kind = MD_LAYER_ACTIVATION, .activation = MD_ACT_RELU},
    {.kind = MD_LAYER_DENSE, .units = 4, .use_bias = 1}};
  cg_cache *c;
  const cg_graph *g = compiled(&c, NET, 4, NULL, 4);
  int bn_out = -1, relu_out = -1;
  for (size_t t = 0; t < g->ntensors; t++) {
    if (g->tensors[t].kind != CG_TENSOR_ACTIVATION) continue;
    if (g->tensors[t].layer == 1) bn_out = (int)t;
    if (g->tensors[t].layer == 2) relu_out = (int)t;
  }
  assert_true(bn_out >= 0 && relu_out >= 0);
  /* batch norm's output: read by relu's forward alone */
  assert_int_equal(g->tensors[bn_out].nconsumers, 1);
  assert_int_equal(g->ops[g->tensors[bn_out].consumers[0]].phase, MD_PHASE_FORWARD);
  /* relu's output: by dense_1's forward, dense_1's backward (its kernel's gradient) and relu's own */
  int relu_backward = 0;
  for (int k = 0; k < g->tensors[relu_out].nconsumers; k++) {
    const cg_op *op = &g->ops[g->tensors[relu_out].consumers[k]];
    relu_backward += op->phase == MD_PHASE_BACKWARD && op->layer == 2;
  }
  assert_int_equal(relu_backward, 1);
  cg_cache_free(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_peak_by_hand),
    cmocka_unit_test(test_backward_reads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
