/*
** test_llm_recipes.c: what large decoders are trained with, on models small enough to do by hand:
** rematerialisation by blocks (models/model.c's cutting layers, compile/graph.c's remat
** tensors), the fsdp_sp recipe (compile/shard_tensor_parallel.c) and a model group's trace batch
** (cg_options.group_examples).
*/
#include "tests/testutil.h"

#include "compile/compileInt.h"

/* A residual block and a head: x = dense(8)(input); h = dense(32, relu)(x); y = dense(8)(h);
** r = add(x, y); norm(r); dense(4). Layer 0 cuts (nothing after reads the input), 1 and 2 do
** not (the add reads 0), the add (3), the norm (4) and the head (5) do. */
static const md_layer_spec BLOCK[6] = {
  {.kind = MD_LAYER_DENSE, .units = 8, .use_bias = 1},
  {.kind = MD_LAYER_DENSE, .units = 32, .activation = MD_ACT_RELU, .use_bias = 1},
  {.kind = MD_LAYER_DENSE, .units = 8, .use_bias = 1},
  {.kind = MD_LAYER_ADD, .ninputs = 2, .inputs = {0, 2}},
  {.kind = MD_LAYER_LAYER_NORMALIZATION},
  {.kind = MD_LAYER_DENSE, .units = 4, .use_bias = 1}};

static md_model_spec block_spec(int remat) {
  return (md_model_spec){.input_features = 16, .nlayers = 6, .layers = BLOCK, .from_logits = 1, .shapes_only = 1,
                         .rematerialize = remat};
}

static cg_cache *cache(int remat, const cg_options *o) {
  md_model_spec spec = block_spec(remat);
  md_optimizer_spec os;
  md_optimizer_spec_defaults(&os, MD_OPT_ADAM);
  return cg_cache_new(&spec, &os, o);
}

static void cutting_layers(void **state) {
  (void)state;
  md_model_spec spec = block_spec(0);
  md_error err = {0};
  md_model *m = md_model_new(&spec, &err);
  assert_non_null(m);
  const int want[6] = {1, 0, 0, 1, 1, 1};
  for (int l = 0; l < 6; l++) assert_int_equal(md_model_layer_cuts(m, l), want[l]);
  md_model_free(m);
}

/* Both ways recompute every layer's forward once (the same FLOPs); by blocks the block's hidden
** 32-wide output is not held from the forward to the backward, only while the block is
** recomputed and differentiated, so the peak (at the backward's start, where by layers every
** output is held) is at least that output less: 8 examples x 32 x 4 = 1024 bytes (measured:
** exactly that, the peak of no rematerialisation). */
static void blocks_hold_less_for_the_same_work(void **state) {
  (void)state;
  cg_options o = {.replicas = 1};
  cg_cache *layers = cache(1, &o), *blocks = cache(MD_REMAT_BLOCKS, &o), *none = cache(0, &o);
  const cg_graph *gl = cg_program_graph(cg_cache_get(layers, 8)), *gb = cg_program_graph(cg_cache_get(blocks, 8));
  const cg_graph *gn = cg_program_graph(cg_cache_get(none, 8));
  assert_true(cg_graph_flops(gl) == cg_graph_flops(gb));
  assert_true(cg_graph_flops(gb) > cg_graph_flops(gn));
  print_message("peaks: none %.0f, by layers %.0f, by blocks %.0f bytes\n", cg_graph_peak_bytes(gn),
                cg_graph_peak_bytes(gl), cg_graph_peak_bytes(gb));
  assert_true(cg_graph_peak_bytes(gb) <= cg_graph_peak_bytes(gl) - 1024);
  cg_cache_free(layers);
  cg_cache_free(blocks);
  cg_cache_free(none);
}

/* fsdp_sp is fsdp_tp with sequence parallelism over the model axis (2 here, 4 devices): the
** same bytes over the data axis (the weights' gathers and the gradients' reduce-scatters), each
** activation all-reduce on the model axis a reduce-scatter and an all-gather of its bytes, and
** the layers between the split ones (the add, the norm) hold half their outputs. */
/* Layer l's output tensor's bytes on a device. */
static double activation_bytes(const cg_graph *g, int l) {
  for (size_t i = 0; i < g->ntensors; i++)
    if (g->tensors[i].kind == CG_TENSOR_ACTIVATION && g->tensors[i].layer == l) return g->tensors[i].bytes;
  return -1;
}

static void fsdp_sp_is_fsdp_tp_with_sequence_parallelism(void **state) {
  (void)state;
  cg_options tp = {.replicas = 4, .sharding = "fsdp_tp", .model_axis = 2}, sp = tp;
  sp.sharding = "fsdp_sp";
  cg_cache *ct = cache(0, &tp), *cs = cache(0, &sp);
  const cg_graph *gt = cg_program_graph(cg_cache_get(ct, 64)), *gs = cg_program_graph(cg_cache_get(cs, 64));

  for (cg_coll k = CG_COLL_ALL_REDUCE; k <= CG_COLL_REDUCE_SCATTER; k++)
    assert_true(cg_graph_collective_bytes(gt, k, 0, NULL) == cg_graph_collective_bytes(gs, k, 0, NULL));
  double reduced = cg_graph_collective_bytes(gt, CG_COLL_ALL_REDUCE, 1, NULL);
  assert_true(reduced > 0);
  assert_true(cg_graph_collective_bytes(gs, CG_COLL_ALL_REDUCE, 1, NULL) == 0);
  assert_true(cg_graph_collective_bytes(gs, CG_COLL_REDUCE_SCATTER, 1, NULL) == reduced);
  /* the add's and the norm's outputs (8 floats, bfloat16 or not: float32 here) of 128 examples */
  assert_true(activation_bytes(gt, 3) == 4.0 * 128 * 8 && activation_bytes(gt, 4) == 4.0 * 128 * 8);
  assert_true(activation_bytes(gs, 3) == 4.0 * 64 * 8 && activation_bytes(gs, 4) == 4.0 * 64 * 8);
  cg_cache_free(ct);
  cg_cache_free(cs);
}

/* The trace's batch: n x model_axis, or the group's examples when given, for any n (a global
** batch of 2 on 6 devices of model axis 3 gives replicas 1 or 0 examples; each group holds 1).
** The model input's tensor tells: 4 bytes x batch x 16 features. */
static double input_bytes(const cg_graph *g) {
  for (size_t i = 0; i < g->ntensors; i++)
    if (g->tensors[i].kind == CG_TENSOR_INPUT) return g->tensors[i].bytes;
  return -1;
}

static void group_examples_set_the_trace_batch(void **state) {
  (void)state;
  cg_options o = {.replicas = 6, .sharding = "fsdp_tp", .model_axis = 3}, grouped = o;
  grouped.group_examples = 1;
  cg_cache *c = cache(0, &o), *g = cache(0, &grouped);
  assert_true(input_bytes(cg_program_graph(cg_cache_get(c, 1))) == 4.0 * 3 * 16);
  assert_true(input_bytes(cg_program_graph(cg_cache_get(g, 1))) == 4.0 * 1 * 16);
  assert_true(input_bytes(cg_program_graph(cg_cache_get(g, 0))) == 4.0 * 1 * 16);
  cg_cache_free(c);
  cg_cache_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(cutting_layers),
    cmocka_unit_test(blocks_hold_less_for_the_same_work),
    cmocka_unit_test(fsdp_sp_is_fsdp_tp_with_sequence_parallelism),
    cmocka_unit_test(group_examples_set_the_trace_batch),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
