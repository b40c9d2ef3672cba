/*
** test_shard_mesh.c: the sharding recipes over a device mesh (compile/shard_zero.c,
** shard_tensor_parallel.c): each recipe's collectives' bytes against docs/strategies.md's
** formulas, each device's persistent bytes, the liveness peaks they lead to, and where the
** lowered program issues and awaits its collectives, on a model small enough to do by hand.
*/
#include "tests/testutil.h"

#include "compile/compileInt.h"

/* 16 features -> dense 8 relu -> dense 4 (logits), Adam: 136 + 36 = 172 floats, W = 688 bytes. */
static const md_layer_spec MLP[2] = {
  {.kind = MD_LAYER_DENSE, .units = 8, .activation = MD_ACT_RELU, .use_bias = 1},
  {.kind = MD_LAYER_DENSE, .units = 4, .activation = MD_ACT_NONE, .use_bias = 1}};
static const double W = 4.0 * 172;

static md_model_spec mlp_spec(void) {
  return (md_model_spec){.input_features = 16, .nlayers = 2, .layers = MLP, .from_logits = 1, .shapes_only = 1};
}

static cg_cache *cache_policy(const char *recipe, int replicas, int model_axis, md_dtype_policy policy) {
  md_model_spec spec = mlp_spec();
  spec.dtype_policy = policy;
  md_optimizer_spec os;
  md_optimizer_spec_defaults(&os, MD_OPT_ADAM);
  return cg_cache_new(&spec, &os, &(cg_options){.replicas = replicas, .sharding = recipe, .model_axis = model_axis});
}

static cg_cache *cache(const char *recipe, int replicas, int model_axis) {
  return cache_policy(recipe, replicas, model_axis, MD_POLICY_FLOAT32);
}

static double bytes(const cg_graph *g, cg_coll kind, int model, int *count) {
  return cg_graph_collective_bytes(g, kind, model, count);
}

/* Adam keeps 2 slots a variable: a replica holds W + 2 W = 2064 bytes for the step. */
static void test_data_parallel_is_unchanged(void **state) {
  (void)state;
  cg_cache *c = cache("data_parallel", 4, 0);
  const cg_graph *g = cg_program_graph(cg_cache_get(c, 4));
  int n;
  assert_true(bytes(g, CG_COLL_ALL_REDUCE, 0, &n) == W);  /* every gradient once, 4 variables */
  assert_int_equal(n, 4);
  assert_true(bytes(g, CG_COLL_ALL_GATHER, 0, NULL) == 0 && bytes(g, CG_COLL_REDUCE_SCATTER, 0, NULL) == 0);
  assert_true(cg_graph_persistent_bytes(g) == 3 * W);
  cg_cache_free(c);
}

/* ZeRO-3 on 4 devices: every weight gathered twice (forward, backward): 2 W = 1376; every
** gradient reduce-scattered: W = 688; weights and slots a quarter each: 3 W / 4 = 516. A ring
** sends 3 x 3/4 x 688 = 1548 bytes a device, 1.5 x data parallelism's 2 x 3/4 x 688. */
static void test_fsdp_bytes_and_memory(void **state) {
  (void)state;
  cg_cache *c = cache("fsdp", 4, 0), *dp = cache("data_parallel", 4, 0);
  const cg_graph *g = cg_program_graph(cg_cache_get(c, 4)), *d = cg_program_graph(cg_cache_get(dp, 4));
  int ag, rs;
  assert_true(bytes(g, CG_COLL_ALL_GATHER, 0, &ag) == 2 * W);
  assert_true(bytes(g, CG_COLL_REDUCE_SCATTER, 0, &rs) == W);
  assert_int_equal(ag, 8);
  assert_int_equal(rs, 4);
  assert_true(bytes(g, CG_COLL_ALL_REDUCE, 0, NULL) == 0);
  assert_true(cg_graph_persistent_bytes(g) == 3 * W / 4);
  /* the step's peak: less than data parallelism's by at least the persistent bytes saved, less
  ** the gathered weights of two layers held at once (at most W) */
  assert_true(cg_graph_peak_bytes(g) < cg_graph_peak_bytes(d));
  assert_true(cg_graph_peak_bytes(g) >= cg_graph_persistent_bytes(g) + 4.0 * 4 * 16);  /* + the input */
  cg_cache_free(c);
  cg_cache_free(dp);
}

/* ZeRO-1 and ZeRO-2 on 4 devices: reduce-scatter W, all-gather the updated shards W (data
** parallelism's bytes); whole weights, a quarter of the slots: W + 2 W / 4 = 1032. ZeRO-1 holds
** every whole gradient to the backward's end, ZeRO-2 frees each once scattered. */
static void test_zero1_zero2(void **state) {
  (void)state;
  cg_cache *c1 = cache("zero1", 4, 0), *c2 = cache("zero2", 4, 0);
  const cg_graph *g1 = cg_program_graph(cg_cache_get(c1, 4)), *g2 = cg_program_graph(cg_cache_get(c2, 4));
  for (int k = 0; k < 2; k++) {
    const cg_graph *g = k ? g2 : g1;
    assert_true(bytes(g, CG_COLL_REDUCE_SCATTER, 0, NULL) == W);
    assert_true(bytes(g, CG_COLL_ALL_GATHER, 0, NULL) == W);
    assert_true(cg_graph_persistent_bytes(g) == W + 2 * W / 4);
  }
  /* ZeRO-1: the gradients of dense_1 (36 floats) are still whole when dense's (136) are made */
  assert_true(cg_graph_peak_bytes(g1) > cg_graph_peak_bytes(g2));
  /* ZeRO-1's reduce-scatters wait for the backward's end: issued after every step kernel */
  size_t n, ns;
  const cg_transfer *x = cg_program_collectives(cg_cache_get(c1, 4), &n);
  cg_program_step(cg_cache_get(c1, 4), &ns);
  for (size_t i = 0; i < n; i++)
    if (x[i].kind == CG_COLL_REDUCE_SCATTER) assert_true(x[i].apply && x[i].issue == 0);
  cg_cache_free(c1);
  cg_cache_free(c2);
}

/* Megatron on a 2 x 2 mesh (data 2, model 2), batch 4 a device: the model group shares 8
** examples. dense splits on its columns (kernel 128 and bias 8: 68 a device), dense_1 on its
** rows (kernel 32: 16; bias 4 whole): 88 floats a device (models/'s own count). The pair issues
** one all-reduce over the model axis, dense_1's partial logits: 8 x 4 x 4 = 128 bytes; the
** gradients' all-reduce over the data axis is each device's part: 4 x 88 = 352 bytes. */
static void test_tensor_parallel(void **state) {
  (void)state;
  cg_cache *c = cache("tensor_parallel", 4, 2);
  const cg_graph *g = cg_program_graph(cg_cache_get(c, 4));
  md_model_spec spec = mlp_spec();
  md_error err = {0};
  md_model *m = md_model_new(&spec, &err);
  md_tensor_parallel tp;
  md_model_tensor_parallel(m, 2, &tp);
  assert_true(tp.floats_per_device == 88);
  int n;
  assert_true(bytes(g, CG_COLL_ALL_REDUCE, 1, &n) == 8 * tp.all_reduce_bytes[0] && n == 1);
  assert_true(bytes(g, CG_COLL_ALL_REDUCE, 1, NULL) == 128);
  assert_true(bytes(g, CG_COLL_ALL_REDUCE, 0, NULL) == 4 * 88);
  assert_true(cg_graph_persistent_bytes(g) == 3 * 4 * 88);
  /* the split layers' matmuls: dense's forward 2 x 8 x 16 x 8 = 2048 FLOPs over 2 devices */
  assert_true(g->ops[0].flops == 1024 && g->ops[0].matmul.n == 4 && g->ops[0].matmul.m == 8);
  /* sequence parallelism: the all-reduce becomes a reduce-scatter and an all-gather of it */
  cg_cache *s = cache("sequence_parallel", 4, 2);
  const cg_graph *gs = cg_program_graph(cg_cache_get(s, 4));
  assert_true(bytes(gs, CG_COLL_ALL_REDUCE, 1, NULL) == 0);
  assert_true(bytes(gs, CG_COLL_REDUCE_SCATTER, 1, NULL) == 128 && bytes(gs, CG_COLL_ALL_GATHER, 1, NULL) == 128);
  assert_true(bytes(gs, CG_COLL_ALL_REDUCE, 0, NULL) == 4 * 88);
  md_model_free(m);
  cg_cache_free(c);
  cg_cache_free(s);
}

/* FSDP x TP on 2 x 2: the model shards (88 floats) are ZeRO-3'd over the data axis: gathered
** twice (2 x 352), scattered once (352), and each device keeps 3 x 352 / 2 = 528 bytes. */
static void test_fsdp_tp(void **state) {
  (void)state;
  cg_cache *c = cache("fsdp_tp", 4, 2);
  const cg_graph *g = cg_program_graph(cg_cache_get(c, 4));
  assert_true(bytes(g, CG_COLL_ALL_GATHER, 0, NULL) == 2 * 352);
  assert_true(bytes(g, CG_COLL_REDUCE_SCATTER, 0, NULL) == 352);
  assert_true(bytes(g, CG_COLL_ALL_REDUCE, 0, NULL) == 0);
  assert_true(bytes(g, CG_COLL_ALL_REDUCE, 1, NULL) == 128);
  assert_true(cg_graph_persistent_bytes(g) == 3 * 352 / 2.0);
  cg_cache_free(c);
}

/* The lowered FSDP program: each forward gather is awaited by the first kernel of its layer's
** forward and issued one layer ahead (dense_1's while dense computes: issued at kernel 0); the
** gradient scatters are awaited at the step's end; collectives are issued in schedule order. */
static void test_fsdp_program_order(void **state) {
  (void)state;
  cg_cache *c = cache("fsdp", 4, 0);
  const cg_program *p = cg_cache_get(c, 4);
  size_t n, ns;
  const cg_transfer *x = cg_program_collectives(p, &n);
  cg_program_step(p, &ns);
  assert_int_equal(n, 12);
  int forward_gathers = 0;
  for (size_t i = 0; i < n; i++) {
    assert_true(x[i].issue <= x[i].need);
    assert_int_equal(x[i].group, 4);
    assert_false(x[i].apply);
    if (i > 0) assert_true(x[i].issue >= x[i - 1].issue);
    if (x[i].kind == CG_COLL_REDUCE_SCATTER) assert_true(x[i].need == ns);
    if (x[i].kind == CG_COLL_ALL_GATHER && x[i].issue == 0) forward_gathers++;
  }
  assert_int_equal(forward_gathers, 4);  /* both layers' kernels and biases, before any compute */
  assert_true(x[0].need == 0);           /* dense's kernel: the first kernel reads it */
  cg_cache_free(c);
}

/* The golden transformer block (4 positions x 6 features -> causal attention, 2 heads of 3 ->
** layer norm -> flatten -> dense 8 gelu -> dense 3) under sequence parallelism on 2 x 2, 8
** examples a device (the model group's 16 traced): attention splits by its heads and reduce-
** scatters then gathers its partial output, 16 x 24 x 4 = 1536 bytes each; dense and dense_1 are
** a column/row pair: dense_1's partial logits 16 x 3 x 4 = 192, and dense's input gradient (the
** flattened 24) 1536 in the backward; tensor parallelism all-reduces the same three buffers. The
** layer norm, not split, does half its work on each device. */
static void test_sequence_parallel_attention(void **state) {
  (void)state;
  static const md_layer_spec BLOCK[5] = {
    {.kind = MD_LAYER_MULTI_HEAD_ATTENTION, .num_heads = 2, .key_dim = 3, .use_causal_mask = 1},
    {.kind = MD_LAYER_LAYER_NORMALIZATION},
    {.kind = MD_LAYER_FLATTEN},
    {.kind = MD_LAYER_DENSE, .units = 8, .activation = MD_ACT_GELU, .use_bias = 1},
    {.kind = MD_LAYER_DENSE, .units = 3, .use_bias = 1}};
  md_model_spec spec = {.input_shape = {2, {4, 6}}, .nlayers = 5, .layers = BLOCK, .from_logits = 1,
                        .shapes_only = 1};
  md_optimizer_spec os;
  md_optimizer_spec_defaults(&os, MD_OPT_SGD);
  cg_cache *sp = cg_cache_new(&spec, &os, &(cg_options){.replicas = 4, .sharding = "sequence_parallel", .model_axis = 2});
  cg_cache *tp = cg_cache_new(&spec, &os, &(cg_options){.replicas = 4, .sharding = "tensor_parallel", .model_axis = 2});
  cg_cache *dp = cg_cache_new(&spec, &os, &(cg_options){.replicas = 4});
  const cg_graph *gs = cg_program_graph(cg_cache_get(sp, 8)), *gt = cg_program_graph(cg_cache_get(tp, 8));
  const cg_graph *gd = cg_program_graph(cg_cache_get(dp, 8));
  int n;
  assert_true(bytes(gs, CG_COLL_REDUCE_SCATTER, 1, &n) == 1536 + 192 + 1536 && n == 3);
  assert_true(bytes(gs, CG_COLL_ALL_GATHER, 1, &n) == 1536 + 192 + 1536 && n == 3);
  assert_true(bytes(gt, CG_COLL_ALL_REDUCE, 1, &n) == 1536 + 192 + 1536 && n == 3);
  /* the layer norm's forward: the data-parallel replica's 8 examples' work, on 16 over 2 */
  double norm_sp = 0, norm_dp = 0;
  for (size_t i = 0; i < gs->traced; i++)
    if (gs->ops[i].layer == 1 && gs->ops[i].phase == MD_PHASE_FORWARD) norm_sp += gs->ops[i].flops;
  for (size_t i = 0; i < gd->traced; i++)
    if (gd->ops[i].layer == 1 && gd->ops[i].phase == MD_PHASE_FORWARD) norm_dp += gd->ops[i].flops;
  assert_true(norm_sp > 0 && norm_sp == norm_dp);
  cg_cache_free(sp);
  cg_cache_free(tp);
  cg_cache_free(dp);
}

/* Under a mixed policy the weights' gathers and the gradients' reduce-scatters move 16-bit
** elements (shard_zero.c: XLA gathers the cast and reduces the 16-bit weight gradient), the
** float32 master shards and slots stay as they were, and ZeRO-1/2's gather of the updated
** float32 shards is float32 still. On 4 devices, W = 688 float32 bytes (344 16-bit):
**   fsdp   all-gathers 2 x 344 = 688 (8 of them), reduce-scatters 344 (4); keeps 516;
**   zero1, zero2  reduce-scatter 344, all-gather 688; keep 688 + 2 x 688 / 4 = 1032;
**   data_parallel  all-reduces the float32 gradients Keras casts back: 688, as before;
**   fsdp_tp on 2 x 2  gathers 2 x 352 / 2 = 352, scatters 176 over the data axis; the
**          model axis's partial logits are activations, 16-bit already: 8 x 4 x 2 = 64; keeps 528.
** mixed_float16 moves the same bytes as mixed_bfloat16 (both 2 bytes an element). The gathered
** weights held at the peak are half as big, so fsdp's peak is lower than under float32. */
static void test_mixed_precision_moves_16_bit(void **state) {
  (void)state;
  for (int p = 0; p < 2; p++) {
    md_dtype_policy policy = p ? MD_POLICY_MIXED_FLOAT16 : MD_POLICY_MIXED_BFLOAT16;
    cg_cache *f = cache_policy("fsdp", 4, 0, policy), *f32 = cache("fsdp", 4, 0);
    const cg_graph *g = cg_program_graph(cg_cache_get(f, 4)), *g32 = cg_program_graph(cg_cache_get(f32, 4));
    int ag, rs;
    assert_true(bytes(g, CG_COLL_ALL_GATHER, 0, &ag) == 2 * W / 2);
    assert_true(bytes(g, CG_COLL_REDUCE_SCATTER, 0, &rs) == W / 2);
    assert_int_equal(ag, 8);
    assert_int_equal(rs, 4);
    assert_true(cg_graph_persistent_bytes(g) == 3 * W / 4);
    assert_true(cg_graph_peak_bytes(g) < cg_graph_peak_bytes(g32));
    cg_cache_free(f);
    cg_cache_free(f32);
    const char *zero[] = {"zero1", "zero2"};
    for (int k = 0; k < 2; k++) {
      cg_cache *z = cache_policy(zero[k], 4, 0, policy);
      g = cg_program_graph(cg_cache_get(z, 4));
      assert_true(bytes(g, CG_COLL_REDUCE_SCATTER, 0, NULL) == W / 2);
      assert_true(bytes(g, CG_COLL_ALL_GATHER, 0, NULL) == W);
      assert_true(cg_graph_persistent_bytes(g) == W + 2 * W / 4);
      cg_cache_free(z);
    }
    cg_cache *d = cache_policy("data_parallel", 4, 0, policy);
    assert_true(bytes(cg_program_graph(cg_cache_get(d, 4)), CG_COLL_ALL_REDUCE, 0, NULL) == W);
    cg_cache_free(d);
    cg_cache *t = cache_policy("fsdp_tp", 4, 2, policy);
    g = cg_program_graph(cg_cache_get(t, 4));
    assert_true(bytes(g, CG_COLL_ALL_GATHER, 0, NULL) == 2 * 352 / 2);
    assert_true(bytes(g, CG_COLL_REDUCE_SCATTER, 0, NULL) == 352 / 2);
    assert_true(bytes(g, CG_COLL_ALL_REDUCE, 1, NULL) == 64);
    assert_true(cg_graph_persistent_bytes(g) == 3 * 352 / 2.0);
    cg_cache_free(t);
  }
}

/* What Keras reads in float32 moves float32 under a mixed policy too: ids (4 an example) ->
** embedding 10 x 6 averaged over the ids (Keras 3's Embedding does not autocast its table: 60
** floats) -> layer norm (gamma and beta, 12 floats: a normalisation layer computes in float32)
** -> dense 3 (kernel 18 + bias 3 = 21 floats, read as its bfloat16 cast). FSDP on 4 devices
** gathers each variable for both passes and scatters each gradient once: float32-read bytes
** F = 4 x 72 = 288, cast bytes C = 4 x 21 = 84 moving as 42: all-gathers 2 x (288 + 42) = 660
** and reduce-scatters 330 (float32: 2 x 372 = 744 and 372). */
static void test_float32_reads_move_float32(void **state) {
  (void)state;
  static const md_layer_spec LAYERS[3] = {{.kind = MD_LAYER_EMBEDDING, .vocab = 10, .dim = 6, .combiner = MD_COMBINER_MEAN},
                                          {.kind = MD_LAYER_LAYER_NORMALIZATION},
                                          {.kind = MD_LAYER_DENSE, .units = 3, .use_bias = 1}};
  md_optimizer_spec os;
  md_optimizer_spec_defaults(&os, MD_OPT_ADAM);
  for (int p = 0; p < 2; p++) {
    md_model_spec spec = {.input_ids = 4, .input_vocab = 10, .nlayers = 3, .layers = LAYERS, .from_logits = 1, .shapes_only = 1,
                          .dtype_policy = p ? MD_POLICY_MIXED_BFLOAT16 : MD_POLICY_FLOAT32};
    md_error err = {0};
    md_model *m = md_model_new(&spec, &err);
    assert_non_null(m);
    const int cast[5] = {0, 0, 0, 1, 1};  /* table, gamma, beta, kernel, bias */
    assert_int_equal(md_model_num_vars(m), 5);
    for (int v = 0; v < 5; v++) assert_int_equal(md_model_var_cast(m, v), cast[v]);
    md_model_free(m);
    cg_cache *c = cg_cache_new(&spec, &os, &(cg_options){.replicas = 4, .sharding = "fsdp"});
    const cg_graph *g = cg_program_graph(cg_cache_get(c, 4));
    assert_true(bytes(g, CG_COLL_ALL_GATHER, 0, NULL) == (p ? 660 : 744));
    assert_true(bytes(g, CG_COLL_REDUCE_SCATTER, 0, NULL) == (p ? 330 : 372));
    cg_cache_free(c);
  }
}

/* A layer that logs no op (a Flatten is a reshape: a view of its input) hands its readers its
** input's tensor and its gradient to its input's producer: ids (4 an example) -> embedding 10 x 6
** (60 floats, a row an id) -> flatten 24 -> dense 3 (kernel 72 + bias 3). Data parallelism
** all-reduces every gradient once: 4 x (60 + 75) = 540 bytes in 3 all-reduces (was 240, the
** table's alone: the dense read no input, so its batch split stopped and its gradients were
** not all-reduced). */
static void test_flatten_passes_its_input_through(void **state) {
  (void)state;
  static const md_layer_spec LAYERS[3] = {{.kind = MD_LAYER_EMBEDDING, .vocab = 10, .dim = 6, .combiner = MD_COMBINER_NONE},
                                          {.kind = MD_LAYER_FLATTEN},
                                          {.kind = MD_LAYER_DENSE, .units = 3, .use_bias = 1}};
  md_optimizer_spec os;
  md_optimizer_spec_defaults(&os, MD_OPT_SGD);
  md_model_spec spec = {.input_ids = 4, .input_vocab = 10, .nlayers = 3, .layers = LAYERS, .from_logits = 1, .shapes_only = 1};
  cg_cache *c = cg_cache_new(&spec, &os, &(cg_options){.replicas = 4, .sharding = "data_parallel"});
  const cg_graph *g = cg_program_graph(cg_cache_get(c, 4));
  int n;
  assert_true(bytes(g, CG_COLL_ALL_REDUCE, 0, &n) == 540);
  assert_int_equal(n, 3);
  cg_cache_free(c);
}

/* The registry knows every recipe by name. */
static void test_recipes_known(void **state) {
  (void)state;
  const char *names[] = {"data_parallel", "zero1", "zero2", "fsdp", "tensor_parallel", "sequence_parallel", "fsdp_tp"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) assert_true(cg_sharding_known(names[i]));
  assert_false(cg_sharding_known("zero4"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_data_parallel_is_unchanged), cmocka_unit_test(test_fsdp_bytes_and_memory),
    cmocka_unit_test(test_flatten_passes_its_input_through),
    cmocka_unit_test(test_zero1_zero2),                cmocka_unit_test(test_tensor_parallel),
    cmocka_unit_test(test_fsdp_tp),                    cmocka_unit_test(test_fsdp_program_order),
    cmocka_unit_test(test_sequence_parallel_attention), cmocka_unit_test(test_recipes_known),
    cmocka_unit_test(test_mixed_precision_moves_16_bit), cmocka_unit_test(test_float32_reads_move_float32),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
