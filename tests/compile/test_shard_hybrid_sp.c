/*
** test_shard_hybrid_sp.c: hybrid_fsdp_sp (compile/shard_tensor_parallel.c: fsdp_sp within a slice,
** ZeRO-3 over the fsdp axis of {data, fsdp, model}, each gradient shard all-reduced over the data
** axis, across slices) against docs/strategies.md's formula on a {data: 2, fsdp: 4, model: 2} mesh
** of 16 devices (two v4-16 slices), and the batch's devices (cg_sharding_batch_devices).
*/
#include "tests/testutil.h"

#include "compile/compileInt.h"

/* 16 features -> dense 8 relu -> dense 4 (logits), Adam: 136 + 36 = 172 floats. Over a model
** axis of 2 the first dense splits on its columns (kernel 16x8 and bias 8 halved: 68 floats) and
** the second, its sole reader, on its rows (kernel 8x4 halved: 16; its bias 4 whole), so a model
** shard is 68 + 16 + 4 = 88 floats, W_m = 352 bytes a device before the fsdp axis. */
static const md_layer_spec MLP[2] = {
  {.kind = MD_LAYER_DENSE, .units = 8, .activation = MD_ACT_RELU, .use_bias = 1},
  {.kind = MD_LAYER_DENSE, .units = 4, .activation = MD_ACT_NONE, .use_bias = 1}};
static const double W_M = 4.0 * 88;

static cg_cache *cache(const cg_options *o) {
  md_model_spec spec = {.input_features = 16, .nlayers = 2, .layers = MLP, .from_logits = 1, .shapes_only = 1};
  md_optimizer_spec os;
  md_optimizer_spec_defaults(&os, MD_OPT_ADAM);
  return cg_cache_new(&spec, &os, o);
}

/* Over the fsdp axis (F = 4) each model shard's 4 variables gathered for the forward and again
** for the backward, 2 W_m = 704 bytes in 8 all-gathers, and reduce-scattered, W_m = 352 in 4;
** over the data axis (D = 2) each scattered shard all-reduced, W_m / F = 88 bytes in 4: the only
** collectives that cross DCN. The model axis moves what fsdp_sp's does on the same model group's
** batch ({data: 8, model: 2}: the same trace), and there nothing of the weights. A device holds
** its weights and Adam's two slots at 1/(M F): 3 x 352 / 4 = 264 bytes. A ring then sends, a
** device: 3 x 3/4 x 352 = 792 bytes over the fsdp axis and 2 x 1/2 x 88 = 88 over DCN, against
** fsdp_sp's 3 x 7/8 x 352 = 924 over its data axis of 8, every slice's gathers crossing DCN. */
static void bytes_and_memory(void **state) {
  (void)state;
  cg_options o = {.replicas = 16, .sharding = "hybrid_fsdp_sp", .model_axis = 2, .fsdp_axis = 4};
  cg_options flat = {.replicas = 16, .sharding = "fsdp_sp", .model_axis = 2};
  cg_cache *c = cache(&o), *f = cache(&flat);
  const cg_graph *g = cg_program_graph(cg_cache_get(c, 4)), *gf = cg_program_graph(cg_cache_get(f, 4));
  int ag, rs, ar;
  assert_true(cg_graph_collective_bytes(g, CG_COLL_ALL_GATHER, CG_AXIS_FSDP, &ag) == 2 * W_M);
  assert_true(cg_graph_collective_bytes(g, CG_COLL_REDUCE_SCATTER, CG_AXIS_FSDP, &rs) == W_M);
  assert_true(cg_graph_collective_bytes(g, CG_COLL_ALL_REDUCE, CG_AXIS_DATA, &ar) == W_M / 4);
  assert_int_equal(ag, 8);
  assert_int_equal(rs, 4);
  assert_int_equal(ar, 4);
  assert_true(cg_graph_collective_bytes(g, CG_COLL_ALL_REDUCE, CG_AXIS_FSDP, NULL) == 0);
  assert_true(cg_graph_collective_bytes(g, CG_COLL_ALL_GATHER, CG_AXIS_DATA, NULL) == 0);
  assert_true(cg_graph_collective_bytes(g, CG_COLL_REDUCE_SCATTER, CG_AXIS_DATA, NULL) == 0);
  /* fsdp_sp's data axis carries what the fsdp axis does here, and the model axes agree */
  assert_true(cg_graph_collective_bytes(gf, CG_COLL_ALL_GATHER, CG_AXIS_DATA, NULL) == 2 * W_M);
  for (cg_coll k = CG_COLL_ALL_REDUCE; k <= CG_COLL_REDUCE_SCATTER; k++) {
    int n, nf;
    double b = cg_graph_collective_bytes(g, k, CG_AXIS_MODEL, &n);
    assert_true(b == cg_graph_collective_bytes(gf, k, CG_AXIS_MODEL, &nf));
    assert_int_equal(n, nf);
  }
  assert_true(cg_graph_collective_bytes(g, CG_COLL_REDUCE_SCATTER, CG_AXIS_MODEL, NULL) > 0);
  assert_true(cg_graph_persistent_bytes(g) == 3 * W_M / 4);
  /* each shard's all-reduce over DCN follows its reduce-scatter over the fsdp axis */
  size_t nx;
  const cg_transfer *x = cg_program_collectives(cg_cache_get(c, 4), &nx);
  for (size_t i = 0; i < nx; i++) {
    if (x[i].axis != CG_AXIS_DATA) continue;
    assert_true(i > 0 && x[i - 1].kind == CG_COLL_REDUCE_SCATTER && x[i - 1].axis == CG_AXIS_FSDP);
    assert_true(x[i].kind == CG_COLL_ALL_REDUCE && x[i].group == 2 && x[i - 1].group == 4);
  }
  cg_cache_free(c);
  cg_cache_free(f);
}

/* The batch splits over the axes a recipe's devices hold different examples on: 16 devices of
** {data: 2, fsdp: 4, model: 2} give hybrid_fsdp_sp 2 x 4 = 8 data shards (a model pair shares
** one), fsdp_sp on {data: 8, model: 2} the same 8, hybrid_fsdp on {data: 2, fsdp: 8} (its fsdp
** axis the model_axis) all 16, data parallelism 16. */
static void batch_devices(void **state) {
  (void)state;
  assert_int_equal(cg_sharding_batch_devices(&(cg_options){.replicas = 16, .sharding = "hybrid_fsdp_sp",
                                                           .model_axis = 2, .fsdp_axis = 4}), 8);
  assert_int_equal(cg_sharding_batch_devices(&(cg_options){.replicas = 16, .sharding = "fsdp_sp", .model_axis = 2}), 8);
  assert_int_equal(cg_sharding_batch_devices(&(cg_options){.replicas = 16, .sharding = "hybrid_fsdp", .model_axis = 8}),
                   16);
  assert_int_equal(cg_sharding_batch_devices(&(cg_options){.replicas = 16}), 16);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(bytes_and_memory),
    cmocka_unit_test(batch_devices),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
