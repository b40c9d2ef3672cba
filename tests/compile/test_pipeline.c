/*
** test_pipeline.c: compile/pipeline.c: the schedules' orders and microbatches in flight, the
** balanced split, and a traced MLP's per-layer costs (cut bytes, saved activations, variables).
*/
#include "tests/testutil.h"

#include "compile/compile.h"
#include "models/zoo.h"

/* GPipe on stage 1 of 4, m = 3: F0 F1 F2, then B2 B1 B0; every microbatch in flight. */
static void test_gpipe_order(void **state) {
  (void)state;
  cg_pipe_op op[6];
  cg_pipeline_order(CG_PIPE_GPIPE, 4, 1, 3, 1, op);
  static const int BACK[6] = {0, 0, 0, 1, 1, 1}, MICRO[6] = {0, 1, 2, 2, 1, 0};
  for (int i = 0; i < 6; i++) {
    assert_int_equal(op[i].backward, BACK[i]);
    assert_int_equal(op[i].micro, MICRO[i]);
  }
  double saved = 10;  /* bytes a microbatch keeps: all three held before the first backward */
  assert_true(cg_pipeline_peak_held(op, 6, 1, &saved) == 30);
}

/* 1F1B, p = 4, m = 6 (Megatron-LM's forward_backward_pipelining_without_interleaving): stage k
** warms up with p - k - 1 forwards, then alternates F and B, then drains its backwards.
**   stage 0: F0 F1 F2 | F3 B0 F4 B1 F5 B2 | B3 B4 B5   (in flight 4 = p - 0)
**   stage 3: | F0 B0 F1 B1 ... F5 B5                     (in flight 1)
** and with m < p the warm-up stops at m: stage 0 of 4 with m = 2 holds 2. */
static void test_1f1b_order(void **state) {
  (void)state;
  cg_pipe_op op[12];
  cg_pipeline_order(CG_PIPE_1F1B, 4, 0, 6, 1, op);
  static const int BACK0[12] = {0, 0, 0, 0, 1, 0, 1, 0, 1, 1, 1, 1}, MICRO0[12] = {0, 1, 2, 3, 0, 4, 1, 5, 2, 3, 4, 5};
  for (int i = 0; i < 12; i++) {
    assert_int_equal(op[i].backward, BACK0[i]);
    assert_int_equal(op[i].micro, MICRO0[i]);
  }
  double saved = 10;
  assert_true(cg_pipeline_peak_held(op, 12, 1, &saved) == 40);  /* p - 0 = 4 in flight */
  cg_pipeline_order(CG_PIPE_1F1B, 4, 3, 6, 1, op);
  for (int i = 0; i < 12; i++) {
    assert_int_equal(op[i].backward, i % 2);
    assert_int_equal(op[i].micro, i / 2);
  }
  assert_true(cg_pipeline_peak_held(op, 12, 1, &saved) == 10);
  cg_pipeline_order(CG_PIPE_1F1B, 4, 0, 2, 1, op);
  assert_true(cg_pipeline_peak_held(op, 4, 1, &saved) == 20);  /* the warm-up stops at m = 2 */
}

/* Interleaved, p = 2 devices, 2 chunks each (model stages 0 and 2 on device 0, 1 and 3 on device
** 1), m = 4: the forwards go in groups of p microbatches through chunk 0 then chunk 1 (F0.0 F1.0
** F0.1 F1.1 F2.0 F3.0 F2.1 F3.1), the backwards through chunk 1 then 0. Device 0 warms up with
** 2 (p - 0 - 1) + (2 - 1) p = 4 forwards, device 1 with 2:
**   device 0: F0.0 F1.0 F0.1 F1.1 | F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 | B2.1 B3.1 B2.0 B3.0
** Held at its fullest (chunk 0's microbatches keep 10 bytes, chunk 1's 1): after F3.0 (and again
** after F2.1), four of chunk 0 and one of chunk 1, 41 bytes; after F2.0 it was 3 x 10 + 2 = 32. */
static void test_interleaved_order(void **state) {
  (void)state;
  cg_pipe_op op[16];
  cg_pipeline_order(CG_PIPE_INTERLEAVED, 2, 0, 4, 2, op);
  static const int BACK[16] = {0, 0, 0, 0, 0, 1, 0, 1, 0, 1, 0, 1, 1, 1, 1, 1};
  static const int MICRO[16] = {0, 1, 0, 1, 2, 0, 3, 1, 2, 0, 3, 1, 2, 3, 2, 3};
  static const int CHUNK[16] = {0, 0, 1, 1, 0, 1, 0, 1, 1, 0, 1, 0, 1, 1, 0, 0};
  for (int i = 0; i < 16; i++) {
    assert_int_equal(op[i].backward, BACK[i]);
    assert_int_equal(op[i].micro, MICRO[i]);
    assert_int_equal(op[i].chunk, CHUNK[i]);
  }
  double saved[2] = {10, 1};
  assert_true(cg_pipeline_peak_held(op, 16, 2, saved) == 41);
  cg_pipeline_order(CG_PIPE_INTERLEAVED, 2, 1, 4, 2, op);
  assert_true(op[0].backward == 0 && op[1].backward == 0 && op[2].backward == 0 && op[3].backward == 1);
}

/* Balance minimises the costliest stage: [1, 1, 1, 1, 4] in 2 stages is [0..3] (4) and [4] (4),
** not [0..2] (3) and [3..4] (5); [3, 1, 1, 1, 1, 1] in 3 has a best max of 3, reached by
** [0] [1..3] [4..5] (3, 3, 2) and [0] [1..2] [3..5] (3, 2, 3): among equals the last stage
** starts at the earliest layer (3; at 2 it would cost 4), then the stages before it likewise. */
static void test_balance(void **state) {
  (void)state;
  cg_layer_cost c[6] = {{0}};
  static const double A[5] = {1, 1, 1, 1, 4};
  for (int i = 0; i < 5; i++) c[i].forward = A[i] / 2, c[i].backward = A[i] / 2;
  int first[7];
  cg_pipeline_balance(c, 5, 2, first);
  assert_int_equal(first[0], 0);
  assert_int_equal(first[1], 4);
  assert_int_equal(first[2], 5);
  static const double B[6] = {3, 1, 1, 1, 1, 1};
  for (int i = 0; i < 6; i++) c[i].forward = 0, c[i].backward = B[i];
  cg_pipeline_balance(c, 6, 3, first);
  assert_int_equal(first[1], 1);
  assert_int_equal(first[2], 3);
  assert_int_equal(first[3], 6);
  /* as many stages as layers: one each */
  cg_pipeline_balance(c, 6, 6, first);
  for (int k = 0; k <= 6; k++) assert_int_equal(first[k], k);
}

/* Stages start only where no block is split: [2, 1, 1, 2] in 2 stages is best cut before layer
** 2 (3, 3), but layer 1 splits a block (a residual crosses after it), so the cut goes before
** layer 1 or 3 (4 either way: the earliest, 1). Asking 4 stages of the 4 layers leaves too few
** whole places (2 of the 3 needed): any layer then ends a stage, one each. */
static void test_balance_keeps_blocks_whole(void **state) {
  (void)state;
  cg_layer_cost c[4] = {{0}};
  static const double A[4] = {2, 1, 1, 2};
  for (int i = 0; i < 4; i++) c[i].backward = A[i];
  c[1].splits_block = 1;
  int first[5];
  cg_pipeline_balance(c, 4, 2, first);
  assert_int_equal(first[1], 1);
  c[1].splits_block = 0;
  cg_pipeline_balance(c, 4, 2, first);
  assert_int_equal(first[1], 2);
  c[1].splits_block = 1;
  cg_pipeline_balance(c, 4, 4, first);
  for (int k = 0; k <= 4; k++) assert_int_equal(first[k], k);
}

/* The llama zoo at 4 small blocks: token_embedding (layer 0), then each block's 9 layers (norm,
** attention, add, norm, gate, up, multiply, output dense, add: 1 + 9 i .. 9 + 9 i), the output
** norm (37) and lm_head (38). Inside a block the residual stream (the embedding's or the first
** add's output) crosses each boundary beside the layer's own output, so layers 1, 2 and 4..8 split
** the block; after an add (3: attention's residual, 9: the block's last) the residual stream
** alone crosses (8192 B, against 16384-40960 B inside). Balanced over 2 stages, the second starts
** right after such an add. */
static void test_zoo_stages_hold_whole_blocks(void **state) {
  (void)state;
  md_zoo_spec z;
  assert_int_equal(md_zoo_preset("llama2_7b", &z), 0);
  z.layers = 4, z.d_model = 64, z.heads = 4, z.ffn = 128, z.seq_len = 16, z.vocab = 100;
  static md_layer_spec layers[64];
  md_model_spec spec;
  md_error err = {0};
  assert_int_equal(md_zoo_build(&z, layers, 64, NULL, &spec, &err), 39);
  spec.from_logits = 1;
  spec.shapes_only = 1;
  md_optimizer_spec os;
  md_optimizer_spec_defaults(&os, MD_OPT_ADAM);
  cg_cache *c = cg_cache_new(&spec, &os, &(cg_options){.replicas = 1});
  const cg_program *p = cg_cache_get(c, 2);
  assert_int_equal(cg_program_layers(p), 39);
  static cg_layer_cost l[39];
  sim_roofline r = {.rate = 1e12, .mem_bw = 0};
  cg_pipeline_layer_costs(p, &r, l);
  assert_int_equal(l[0].splits_block, 0);
  for (int k = 0; k <= 9; k++) assert_int_equal(l[k].splits_block, k != 0 && k != 3 && k != 9);
  assert_true(l[3].cut == 8192 && l[9].cut == 8192 && l[6].cut == 40960);
  int first[3];
  cg_pipeline_balance(l, 39, 2, first);
  print_message("llama, 4 blocks in 2 stages: the second starts at layer %d\n", first[1]);
  assert_int_equal(l[first[1] - 1].splits_block, 0);
  assert_true((first[1] - 1) % 9 == 0 || (first[1] - 1) % 9 == 3);
  cg_cache_free(c);
}

/* 16 features -> dense 8 relu -> dense 4, SGD with momentum (1 slot), traced on 5 examples:
**   layer 0: kernel 16 x 8 + bias 8 = 136 floats = 544 B, slots 544, gradients 544; its output
**            (5 x 8 floats = 160 B) crosses the cut after it; its forward saves nothing beyond
**            its output, which its own backward (relu) and layer 1's (its input) read back;
**   layer 1: 8 x 4 + 4 = 36 floats = 144 B (and 144, 144); nothing crosses after the last layer.
** A stage of layer 1 alone keeps its input, layer 0's output: 160 B; of both, the same tensor
** once (the model input is no forward's), 160 B. */
static void test_layer_costs(void **state) {
  (void)state;
  static const md_layer_spec MLP[2] = {
    {.kind = MD_LAYER_DENSE, .units = 8, .activation = MD_ACT_RELU, .use_bias = 1},
    {.kind = MD_LAYER_DENSE, .units = 4, .activation = MD_ACT_NONE, .use_bias = 1}};
  md_model_spec spec = {.input_features = 16, .nlayers = 2, .layers = MLP, .from_logits = 1, .shapes_only = 1};
  md_optimizer_spec os;
  md_optimizer_spec_defaults(&os, MD_OPT_SGD);
  os.momentum = 0.9f;
  cg_cache *c = cg_cache_new(&spec, &os, &(cg_options){.replicas = 1});
  const cg_program *p = cg_cache_get(c, 5);
  assert_int_equal(cg_program_layers(p), 2);
  cg_layer_cost l[2];
  sim_roofline r = {.rate = 1e12, .mem_bw = 0};  /* work = FLOPs */
  cg_pipeline_layer_costs(p, &r, l);
  assert_true(l[0].weights == 544 && l[0].slots == 544 && l[0].grads == 544);
  assert_true(l[1].weights == 144 && l[1].slots == 144 && l[1].grads == 144);
  assert_true(l[0].cut == 160 && l[1].cut == 0);
  assert_true(l[0].forward > 0 && l[0].backward > 0 && l[0].update > 0);
  /* layer 1's backward multiplies twice (dW and dx), its forward once: twice the FLOPs */
  assert_true(l[1].backward > l[1].forward);
  assert_true(cg_pipeline_saved(p, 1, 2) == 160);
  assert_true(cg_pipeline_saved(p, 0, 2) == 160);
  cg_cache_free(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_gpipe_order),
    cmocka_unit_test(test_1f1b_order),
    cmocka_unit_test(test_interleaved_order),
    cmocka_unit_test(test_balance),
    cmocka_unit_test(test_layer_costs),
    cmocka_unit_test(test_balance_keeps_blocks_whole),
    cmocka_unit_test(test_zoo_stages_hold_whole_blocks),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
