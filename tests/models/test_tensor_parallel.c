/*
** test_tensor_parallel.c: md_model_tensor_parallel, Megatron-LM's tensor parallelism as XLA's SPMD
** partitioner runs it (model.c invariant 9), on shapes alone, against counts worked by hand.
*/
#include "tests/testutil.h"

#include "models/zoo.h"

enum { MAX_LAYERS = 64 };

static md_model *shapes_model(const md_layer_spec *layers, int n, int features) {
  md_model_spec spec = {.input_features = features, .nlayers = n, .layers = layers, .shapes_only = 1, .from_logits = 1};
  md_error err;
  md_model *m = md_model_new(&spec, &err);
  if (m == NULL) fail_msg("%s", err.msg);
  return m;
}

/* 8 -> dense 16 (relu) -> dense 8 -> dense 4, biases, over 2 devices. The first pair is Megatron's
** feed-forward: columns (kernel 8x16 and bias 16 split: 72 of 144 floats) then rows (kernel 16x8
** split, bias 8 whole: 64 + 8 = 72 of 136); the last dense splits by columns alone (kernel 8x4
** and bias 4: 18 of 36). A device holds 72 + 72 + 18 = 162 of 316 floats.
** Forward: the rows layer all-reduces its 8 outputs' partial sums; the output layer's 4 classes
** are split, so the loss's max, label logit and sum of exponentials are all-reduced one after
** another (Megatron-LM's vocab-parallel cross entropy): 4 all-reduces of 8 + 3 x 1 = 11 elements,
** 44 bytes in float32. Backward: the first layer reads the model's
** input (no gradient), the pair passes its split gradient between its layers, and the output
** layer's input gradient is a partial sum per device: 1 all-reduce of its 8 inputs, 32 bytes. */
static void feed_forward_pair_splits_as_megatron(void **state) {
  (void)state;
  const md_layer_spec layers[3] = {
    {.kind = MD_LAYER_DENSE, .units = 16, .activation = MD_ACT_RELU, .use_bias = 1},
    {.kind = MD_LAYER_DENSE, .units = 8, .use_bias = 1},
    {.kind = MD_LAYER_DENSE, .units = 4, .use_bias = 1},
  };
  md_model *m = shapes_model(layers, 3, 8);
  md_tensor_parallel tp;
  md_model_tensor_parallel(m, 2, &tp);
  assert_true(tp.floats_per_device == 162.0);
  assert_int_equal(tp.split_layers, 3);
  assert_int_equal(tp.all_reduces[0], 4);
  assert_true(tp.all_reduce_bytes[0] == 44.0);
  assert_int_equal(tp.all_reduces[1], 1);
  assert_true(tp.all_reduce_bytes[1] == 32.0);
  assert_int_equal(tp.all_gathers[0] + tp.all_gathers[1], 0);
  /* One device: nothing splits, nothing is added (spmd.c invariant 1). */
  md_model_tensor_parallel(m, 1, &tp);
  assert_true(tp.floats_per_device == (double)md_model_num_params(m));
  assert_int_equal(tp.split_layers + tp.all_reduces[0] + tp.all_reduces[1] + tp.all_gathers[0] + tp.all_gathers[1], 0);
  md_model_free(m);
}

/* A dense layer read by two layers (no pair): columns, its split output gathered for both readers
** (forward: 6 elements), the input gradient all-reduced (backward). 4 -> dense 6 (columns, kernel
** and bias: 15 of 30 on each of 2 devices) -> add(itself, itself) -> dense 2 (columns, last: 3 of
** 14; the loss all-reduces 3 elements, one at a time). */
static void an_unpaired_column_split_gathers_its_output(void **state) {
  (void)state;
  const md_layer_spec layers[3] = {
    {.kind = MD_LAYER_DENSE, .units = 6, .use_bias = 1},
    {.kind = MD_LAYER_ADD, .ninputs = 2, .inputs = {0, 0}},
    {.kind = MD_LAYER_DENSE, .units = 2, .use_bias = 1},
  };
  md_model *m = shapes_model(layers, 3, 4);
  md_tensor_parallel tp;
  md_model_tensor_parallel(m, 2, &tp);
  assert_true(tp.floats_per_device == 15.0 + 7.0);
  assert_int_equal(tp.all_gathers[0], 1);
  assert_true(tp.all_gather_bytes[0] == 24.0);
  assert_int_equal(tp.all_reduces[0], 3);
  assert_true(tp.all_reduce_bytes[0] == 12.0);
  assert_int_equal(tp.all_reduces[1], 1);
  assert_true(tp.all_reduce_bytes[1] == 24.0);
  md_model_free(m);
}

/* Megatron-LM (Shoeybi et al. 2019, section 3, figure 4): a transformer layer under tensor
** parallelism all-reduces twice in its forward pass and twice in its backward (attention's output
** and the feed-forward pair's output forward; their inputs' gradients backward). The zoo's GPT,
** 3 blocks of d_model 8 over 4 devices, 4 heads, ffn 32, 5 tokens, vocab 12: 2 x 3 + 4 forward
** (the vocabulary-parallel embedding's output, the head's 3 loss reductions, a float per token
** each) and 2 x 3 + 1 backward (the head's input gradient; the embedding reads ids). Forward bytes
** per example: 7 all-reduces of 5 x 8 floats and 3 of 5: (280 + 15) x 4 = 1180; backward 7 x 40 x 4 =
** 1120. A device holds a quarter of every kernel, of the token table and of the column biases
** (attention's q, k, v and the intermediate dense): the layer norms, position table, the
** output biases of attention and the feed-forward and nothing else whole. */
static void megatron_two_all_reduces_per_block_each_way(void **state) {
  (void)state;
  static md_layer_spec layers[MAX_LAYERS];
  md_zoo_spec z = {.family = MD_ZOO_GPT, .layers = 3, .d_model = 8, .heads = 4, .ffn = 32, .seq_len = 5, .vocab = 12};
  md_model_spec spec;
  md_error err;
  if (md_zoo_build(&z, layers, MAX_LAYERS, NULL, &spec, &err) < 0) fail_msg("%s", err.msg);
  spec.shapes_only = 1;
  spec.from_logits = 1;
  md_model *m = md_model_new(&spec, &err);
  if (m == NULL) fail_msg("%s", err.msg);
  md_tensor_parallel tp;
  md_model_tensor_parallel(m, 4, &tp);
  assert_int_equal(tp.all_reduces[0], 2 * 3 + 4);
  assert_int_equal(tp.all_reduces[1], 2 * 3 + 1);
  assert_int_equal(tp.all_gathers[0] + tp.all_gathers[1], 0);
  assert_true(tp.all_reduce_bytes[0] == 1180.0);
  assert_true(tp.all_reduce_bytes[1] == 1120.0);
  /* Whole on each device: per block 2 layer norms (2 x 16), the attention output bias (8), the
  ** feed-forward output bias (8); the final norm (16), the position table (5 x 8). Split: the rest. */
  double whole = 3 * (32 + 8 + 8) + 16 + 40, all = (double)md_model_num_params(m);
  assert_true(tp.floats_per_device == whole + (all - whole) / 4);
  md_model_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(feed_forward_pair_splits_as_megatron),
    cmocka_unit_test(an_unpaired_column_split_gathers_its_output),
    cmocka_unit_test(megatron_two_all_reduces_per_block_each_way),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
