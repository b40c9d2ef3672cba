/*
** test_graph.c: the compile layer (compile/): a traced step's ops against the model's own op log,
** its tensors, and each pass (sharding, fusion, liveness, lowering) on a model small enough to
** work out by hand, and the BERT-large zoo model's FLOPs against docs/layers.md.
*/
#include "tests/testutil.h"
#include "tests/compile/oplog.h"

#include <math.h>

#include "compile/compileInt.h"
#include "models/zoo.h"

/* 16 features -> dense 8 relu -> dense 4 (logits), sparse cross-entropy, plain SGD. */
static const md_layer_spec MLP[2] = {
  {.kind = MD_LAYER_DENSE, .units = 8, .activation = MD_ACT_RELU, .use_bias = 1},
  {.kind = MD_LAYER_DENSE, .units = 4, .activation = MD_ACT_NONE, .use_bias = 1}};

static md_model_spec mlp_spec(void) {
  return (md_model_spec){.input_features = 16, .nlayers = 2, .layers = MLP, .from_logits = 1, .shapes_only = 1};
}

static md_optimizer_spec sgd(void) {
  md_optimizer_spec o;
  md_optimizer_spec_defaults(&o, MD_OPT_SGD);
  return o;
}

static cg_program *compiled(cg_cache **c, int replicas, int fusion, int n) {
  md_model_spec spec = mlp_spec();
  md_optimizer_spec os = sgd();
  *c = cg_cache_new(&spec, &os, &(cg_options){.replicas = replicas, .fusion = fusion});
  return (cg_program *)cg_cache_get(*c, n);
}

/* Without fusion the program is the op log one for one (compile.h invariant 1), the marks too. */
static void test_program_is_the_op_log(void **state) {
  (void)state;
  md_op_log log = {0};
  size_t marks[3];
  md_model_spec spec = mlp_spec();
  md_optimizer_spec os = sgd();
  log_step(&spec, &os, 4, &log, marks);
  cg_cache *c;
  const cg_program *p = compiled(&c, 2, 0, 4);
  size_t ns, na;
  const cg_kernel *step = cg_program_step(p, &ns), *apply = cg_program_apply(p, &na);
  assert_int_equal(ns + na, log.n);
  for (size_t i = 0; i < log.n; i++) {
    const cg_kernel *k = i < ns ? &step[i] : &apply[i - ns];
    assert_true(k->flops == log.flops[i] && k->bytes == log.bytes[i]);
    assert_true(k->matmul.batch == log.matmul[i].batch && k->matmul.m == log.matmul[i].m &&
                k->matmul.n == log.matmul[i].n && k->matmul.k == log.matmul[i].k);
  }
  for (int l = 0; l <= 2; l++) assert_int_equal(cg_program_mark(p, l), marks[l]);
  /* forward by hand, batch 4: dot 2*4*16*8 = 1024, bias 32, relu 32; dot 2*4*8*4 = 256, bias 16 */
  double forward = 0;
  const cg_graph *g = cg_program_graph(p);
  for (size_t i = 0; i < g->nops; i++)
    if (g->ops[i].phase == MD_PHASE_FORWARD) forward += g->ops[i].flops;
  assert_true(forward == 1360.0);
  assert_true(step[0].matmul.m == 4 && step[0].matmul.n == 8 && step[0].matmul.k == 16);
  md_op_log_free(&log);
  cg_cache_free(c);
}

/* Tensors: layer 0's activation is read by layer 1's forward and by both backward passes
** (relu's derivative reads it, layer 1's weight gradient contracts it); each trainable variable
** gets one gradient, read by its update. */
static void test_tensors(void **state) {
  (void)state;
  cg_cache *c;
  const cg_graph *g = cg_program_graph(compiled(&c, 1, 0, 4));
  int acts = 0, grads = 0;
  for (size_t t = 0; t < g->ntensors; t++) {
    const cg_tensor *x = &g->tensors[t];
    if (x->kind == CG_TENSOR_WEIGHT_GRAD) {
      grads++;
      assert_int_equal(x->nconsumers, 1);
      assert_int_equal(g->ops[x->consumers[0]].phase, MD_PHASE_OPTIMIZER);
      assert_int_equal(g->ops[x->consumers[0]].var, x->var);
    }
    if (x->kind != CG_TENSOR_ACTIVATION || x->layer != 0) continue;
    acts++;
    assert_true(x->bytes == 4.0 * 4 * 8);  /* 4 examples x 8 units x float32 */
    int fwd = 0, bwd[2] = {0, 0};
    for (int k = 0; k < x->nconsumers; k++) {
      const cg_op *op = &g->ops[x->consumers[k]];
      fwd += op->phase == MD_PHASE_FORWARD && op->layer == 1;
      if (op->phase == MD_PHASE_BACKWARD) bwd[op->layer]++;
    }
    assert_int_equal(fwd, 1);
    assert_int_equal(bwd[0], 1);  /* relu's derivative */
    assert_true(bwd[1] >= 1);     /* the ops of layer 1's backward, which read its input side by side */
  }
  assert_int_equal(acts, 1);
  assert_int_equal(grads, 4);
  cg_cache_free(c);
}

/* Sharding: over 2 replicas every variable's gradient is a partial sum, all-reduced once before
** its update reads it; one replica has nothing to reduce. */
static void test_sharding_inserts_all_reduces(void **state) {
  (void)state;
  for (int replicas = 1; replicas <= 2; replicas++) {
    cg_cache *c;
    const cg_graph *g = cg_program_graph(compiled(&c, replicas, 0, 4));
    int reduces = 0;
    for (size_t i = 0; i < g->nops; i++) {
      const cg_op *op = &g->ops[i];
      if (op->code != CG_OP_ALL_REDUCE) continue;
      reduces++;
      assert_int_equal(g->tensors[op->in[0]].shard, CG_SHARD_PARTIAL);
      const cg_tensor *whole = &g->tensors[op->out[0]];
      assert_int_equal(whole->shard, CG_SHARD_REPLICATED);
      assert_int_equal(whole->nconsumers, 1);
      assert_int_equal(g->ops[whole->consumers[0]].phase, MD_PHASE_OPTIMIZER);
      /* scheduled right after the backward op that finished the gradient: only that op's other
      ** all-reduces stand between them */
      int producer = g->tensors[op->in[0]].producer;
      for (int k = g->ops[producer].order + 1; k < op->order; k++)
        assert_int_equal(g->ops[g->schedule[k]].code, CG_OP_ALL_REDUCE);
      assert_true(g->ops[producer].order < op->order);
    }
    assert_int_equal(reduces, replicas == 2 ? 4 : 0);
    assert_int_equal(cg_graph_num_traced(g) + (size_t)reduces, cg_graph_num_ops(g));
    cg_cache_free(c);
  }
}

/* Fusion: each dense layer's bias (and layer 0's relu) join the product's epilogue. Layer 0:
** dot 896 bytes (x 256, W 512, out 128), bias 256, relu 256; the two tensors passed inside the
** kernel (128 bytes each, written and read) save 512: the kernel moves 896 bytes, does 1088
** FLOPs. Three kernels fewer; the backward is untouched (its first op reads another layer's
** output). */
static void test_fusion(void **state) {
  (void)state;
  cg_cache *plain_c, *fused_c;
  const cg_program *plain = compiled(&plain_c, 1, 0, 4), *fused = compiled(&fused_c, 1, 1, 4);
  size_t np, nf;
  cg_program_step(plain, &np);
  const cg_kernel *k = cg_program_step(fused, &nf);
  assert_int_equal(nf, np - 3);
  assert_true(k[0].flops == 1088.0 && k[0].bytes == 896.0 && k[0].matmul.batch == 1);
  assert_true(k[1].flops == 256.0 + 16.0 && k[1].bytes == 320.0);  /* 320 + 128 - 2 x 64 */
  const cg_graph *g = cg_program_graph(fused);
  assert_true(cg_graph_flops(g) == cg_graph_flops(cg_program_graph(plain)));
  assert_true(cg_graph_bytes(g) == cg_graph_bytes(cg_program_graph(plain)) - 512.0 - 128.0);
  int by_output = 0;
  for (size_t i = 0; i < g->nops; i++) by_output += g->ops[i].fused_by != NULL && !strcmp(g->ops[i].fused_by, "output");
  assert_int_equal(by_output, 3);
  /* the marks still fall where each layer's backward ends */
  assert_int_equal(cg_program_mark(fused, 2) + 3, cg_program_mark(plain, 2));
  assert_int_equal(cg_program_mark(fused, 0), nf);
  cg_cache_free(plain_c);
  cg_cache_free(fused_c);
}

static const cg_graph *compiled_with(cg_cache **c, const cg_options *o) {
  md_model_spec spec = mlp_spec();
  md_optimizer_spec os = sgd();
  *c = cg_cache_new(&spec, &os, o);
  return cg_program_graph(cg_cache_get(*c, 4));
}

/* Memory policies: the variables (688 bytes: 16x8 + 8 + 8x4 + 4 floats; SGD keeps no slots) are
** held by every policy. Keeping every tensor to the step's end holds all of them at once (the
** MLP's, batch 4, float32: input 256; layer 0's chain dot 128, bias 128, its activation 128;
** layer 1's dot 64, its activation (the logits) 64; the loss's gradient 64, layer 0's output
** gradient 128, relu's derivative 128: 1088; the four variables' gradients 688 and their
** all-reduced copies 688): 688 + 2464 = 3152; liveness frees each after its last reader and
** holds less; fusion keeps the two 128-byte and the 64-byte tensors inside kernels out of
** memory altogether. */
static void test_memory_policies(void **state) {
  (void)state;
  cg_cache *c[4];
  const cg_graph *live = compiled_with(&c[0], &(cg_options){.replicas = 2});
  const cg_graph *all = compiled_with(&c[1], &(cg_options){.replicas = 2, .memory = "keep_all"});
  const cg_graph *all_fused = compiled_with(&c[2], &(cg_options){.replicas = 2, .fusion = 1, .memory = "keep_all"});
  const cg_graph *live_fused = compiled_with(&c[3], &(cg_options){.replicas = 2, .fusion = 1});
  assert_true(live->persistent == 688.0);
  assert_true(cg_graph_peak_bytes(all) == 3152.0);
  assert_true(cg_graph_peak_bytes(all_fused) == 3152.0 - 2 * 128.0 - 64.0);
  assert_true(cg_graph_peak_bytes(live) > live->persistent + 4.0 * 4 * 16);  /* the input at least */
  assert_true(cg_graph_peak_bytes(live) < cg_graph_peak_bytes(all));
  assert_true(cg_graph_peak_bytes(live_fused) <= cg_graph_peak_bytes(live));
  assert_string_equal(live->memory, "liveness");
  assert_string_equal(all->memory, "keep_all");
  for (int i = 0; i < 4; i++) cg_cache_free(c[i]);
}

/* The registries answer by name; the defaults are data_parallel and liveness. */
static void test_registries(void **state) {
  (void)state;
  assert_true(cg_sharding_known("data_parallel") && cg_sharding_known(NULL) && !cg_sharding_known("zero4"));
  assert_true(cg_memory_known("liveness") && cg_memory_known("keep_all") && cg_memory_known(NULL) &&
              !cg_memory_known("remat"));
}

/* One program per batch size, and the same one again for a size seen before. */
static void test_cache(void **state) {
  (void)state;
  cg_cache *c;
  const cg_program *a = compiled(&c, 2, 0, 4);
  assert_ptr_equal(cg_cache_get(c, 4), a);
  const cg_program *b = cg_cache_get(c, 3);
  assert_ptr_not_equal(a, b);
  assert_true(cg_graph_flops(cg_program_graph(b)) < cg_graph_flops(cg_program_graph(a)));
  cg_cache_free(c);
}

/* BERT-large (zoo) as plan_bert_large.yaml runs it on a v4-32: 16 replicas of 16 examples of 512
** tokens, mixed_bfloat16, LAMB. docs/layers.md: 2.58e14 training FLOPs a step. A replica's
** 16,141,098,639,664: 16,131,434,963,248 before the attention dropped its probabilities, plus
** that dropout's 4 FLOPs forward and 2 backward on each of 24 blocks x 16 examples x 16 heads x
** 512 x 512 probabilities (9,663,676,416). */
static void test_bert_large_flops(void **state) {
  (void)state;
  md_zoo_spec z;
  assert_int_equal(md_zoo_preset("bert_large", &z), 0);
  static md_layer_spec layers[256];
  md_model_spec spec;
  md_error err = {0};
  assert_true(md_zoo_build(&z, layers, 256, NULL, &spec, &err) > 0);
  spec.from_logits = 1;
  spec.dtype_policy = MD_POLICY_MIXED_BFLOAT16;
  md_optimizer_spec os;
  md_optimizer_spec_defaults(&os, MD_OPT_LAMB);
  cg_graph *g = cg_trace_train_step(&spec, &os, 16);
  cg_compile(g, &(cg_options){.replicas = 16, .fusion = 1});
  double step = 16 * cg_graph_flops(g);
  assert_true(fabs(step / 2.58e14 - 1) < 0.005);
  assert_true(step == 16 * (16131434963248.0 + 24.0 * 16 * 16 * 512 * 512 * (4 + 2)));
  FILE *devnull = fopen("/dev/null", "w");
  assert_int_equal(cg_dump_text(g, devnull), 0);
  fclose(devnull);
  cg_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_program_is_the_op_log),
    cmocka_unit_test(test_tensors),
    cmocka_unit_test(test_sharding_inserts_all_reduces),
    cmocka_unit_test(test_fusion),
    cmocka_unit_test(test_memory_policies),
    cmocka_unit_test(test_registries),
    cmocka_unit_test(test_cache),
    cmocka_unit_test(test_bert_large_flops),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
