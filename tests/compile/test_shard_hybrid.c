/*
** test_shard_hybrid.c: hybrid sharding (compile/shard_zero.c's hybrid_fsdp: ZeRO-3 over the mesh's
** model axis, its replicas over the data axis, PyTorch FSDP's HYBRID_SHARD and MaxText's
** ici_fsdp x dcn_data) against docs/strategies.md's formula, on test_shard_mesh.c's model.
*/
#include "tests/testutil.h"

#include "compile/compileInt.h"

/* 16 features -> dense 8 relu -> dense 4 (logits), Adam: 136 + 36 = 172 floats, W = 688 bytes. */
static const md_layer_spec MLP[2] = {
  {.kind = MD_LAYER_DENSE, .units = 8, .activation = MD_ACT_RELU, .use_bias = 1},
  {.kind = MD_LAYER_DENSE, .units = 4, .activation = MD_ACT_NONE, .use_bias = 1}};
static const double W = 4.0 * 172;

/* On {data: 2, fsdp: 2}: over the model (fsdp) axis every weight gathered twice, 2 W = 1376 in 8
** all-gathers, every gradient reduce-scattered, W = 688 in 4; over the data axis each scattered
** shard all-reduced, W / 2 = 344 in 4 (only these cross DCN when the data axis spans slices);
** weights and slots halved, 3 W / 2 = 1032 bytes a device. A ring sends 3 x 1/2 x 688 within a
** pair and 2 x 1/2 x 344 across: 1376 bytes a device, against FSDP over all 4 devices' 3 x 3/4 x
** 688 = 1548, all of it over the data axis. */
static void test_hybrid_bytes_and_memory(void **state) {
  (void)state;
  md_model_spec spec = {.input_features = 16, .nlayers = 2, .layers = MLP, .from_logits = 1, .shapes_only = 1};
  md_optimizer_spec os;
  md_optimizer_spec_defaults(&os, MD_OPT_ADAM);
  cg_cache *c = cg_cache_new(&spec, &os, &(cg_options){.replicas = 4, .sharding = "hybrid_fsdp", .model_axis = 2});
  const cg_graph *g = cg_program_graph(cg_cache_get(c, 4));
  int ag, rs, ar;
  assert_true(cg_graph_collective_bytes(g, CG_COLL_ALL_GATHER, 1, &ag) == 2 * W);
  assert_true(cg_graph_collective_bytes(g, CG_COLL_REDUCE_SCATTER, 1, &rs) == W);
  assert_true(cg_graph_collective_bytes(g, CG_COLL_ALL_REDUCE, 0, &ar) == W / 2);
  assert_int_equal(ag, 8);
  assert_int_equal(rs, 4);
  assert_int_equal(ar, 4);
  assert_true(cg_graph_collective_bytes(g, CG_COLL_ALL_REDUCE, 1, NULL) == 0);
  assert_true(cg_graph_collective_bytes(g, CG_COLL_ALL_GATHER, 0, NULL) == 0);
  assert_true(cg_graph_collective_bytes(g, CG_COLL_REDUCE_SCATTER, 0, NULL) == 0);
  assert_true(cg_graph_persistent_bytes(g) == 3 * W / 2);
  /* each shard's all-reduce is issued after its reduce-scatter and awaited before the update */
  size_t nx;
  const cg_transfer *x = cg_program_collectives(cg_cache_get(c, 4), &nx);
  for (size_t i = 0; i < nx; i++) {
    if (x[i].kind != CG_COLL_ALL_REDUCE) continue;
    assert_true(i > 0 && x[i - 1].kind == CG_COLL_REDUCE_SCATTER && x[i - 1].axis == CG_AXIS_MODEL && x[i].axis == CG_AXIS_DATA);
    assert_true(x[i].issue >= x[i - 1].issue);
  }
  cg_cache_free(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_hybrid_bytes_and_memory),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
