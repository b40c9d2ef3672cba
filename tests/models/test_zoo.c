/*
** test_zoo.c: the named architectures (zoo.c) against their published sizes, built on shapes
** alone (no values: even gpt_175b builds in milliseconds).
*/
#include "tests/testutil.h"

#include <math.h>

#include "models/zoo.h"

enum { MAX_LAYERS = 2048 };

typedef struct built {
  int layers;             /* layer count */
  double params;          /* md_model_num_params */
  double forward;         /* FLOPs of one example's forward pass */
  double train;           /* FLOPs of one example's train step (forward, loss, backward) */
} built;

static built build(const char *preset) {
  static md_layer_spec layers[MAX_LAYERS];
  md_zoo_spec z;
  assert_int_equal(md_zoo_preset(preset, &z), 0);
  md_model_spec spec;
  md_error err;
  static md_model_input inputs[MD_MAX_MODEL_INPUTS];
  int n = md_zoo_build(&z, layers, MAX_LAYERS, inputs, &spec, &err);
  if (n < 0) fail_msg("%s: %s", preset, err.msg);
  spec.shapes_only = 1;
  spec.from_logits = 1;
  md_model *m = md_model_new(&spec, &err);
  if (m == NULL) fail_msg("%s: %s", preset, err.msg);
  md_workspace *w = md_workspace_new(m);
  md_grads *g = md_grads_new(m);
  md_cost forward = {0}, train = {0};
  md_batch b = {1, NULL, NULL, NULL, NULL};
  double loss;
  md_model_forward(m, w, &b, &forward);
  md_model_train_step(m, w, &b, 1.0f, g, &loss, &train);
  built r = {n, (double)md_model_num_params(m), forward.flops, train.flops};
  md_grads_free(g);
  md_workspace_free(w);
  md_model_free(m);
  return r;
}

/* Keras's ResNet50 (include_top, 1000 classes): model.count_params() is 25,636,712 (25,583,592
** trainable and the 53,120 moving means and variances of its 53 batch normalisations), every
** convolution with its bias. Forward at 224x224: He et al. give 3.8e9 multiply-adds, profilers
** of torchvision's (no conv biases) 4.1e9; podsim counts 2 FLOPs a multiply-add plus the
** elementwise ops: 7.76e9, 3.88e9 multiply-adds, inside [3.8e9, 4.1e9] widened by 2%. */
static void resnet50_matches_keras(void **state) {
  (void)state;
  built r = build("resnet50");
  assert_int_equal(r.layers, 174);
  assert_true(r.params == 25636712);
  double macs = r.forward / 2;
  print_message("resnet50: %.0f params, %.4g multiply-adds forward\n", r.params, macs);
  assert_true(macs >= 0.98 * 3.8e9 && macs <= 1.02 * 4.1e9);
}

/* ResNet-50 v1.5 (NVIDIA's DeepLearningExamples, MLPerf): Keras's 25,636,712 less the biases of
** its 53 convolutions, one per filter: conv1 64, conv2 256 + 3 x (64 + 64 + 256) = 1408, conv3
** 512 + 4 x 768 = 3584, conv4 1024 + 6 x 1536 = 10240, conv5 2048 + 3 x 3072 = 11264: 26,560, so
** 25,610,152; less the 53,120 moving statistics that is torchvision's resnet50 (v1.5, no conv
** biases), 25,557,032. The first block of stages 3..5 strides its 3x3 instead of its first 1x1, so
** that 1x1 runs at the block's input size: (56^2 - 28^2) 256 128 = (28^2 - 14^2) 512 256 =
** (14^2 - 7^2) 1024 512 = 77,070,336 more multiply-adds each, 462,422,016 FLOPs in all; the
** biases' adds (1 FLOP an output element) come off and the BN and ReLU after those 1x1s run on 4x
** the positions, each a few million FLOPs: the difference is within 3% of 462.4e6. */
static void resnet50_v1_5_matches_torchvision(void **state) {
  (void)state;
  built v1 = build("resnet50"), v15 = build("resnet50_v1_5");
  assert_int_equal(v15.layers, v1.layers);
  assert_true(v15.params == 25610152);
  double more = v15.forward - v1.forward;
  print_message("resnet50_v1_5: %.0f params, %.4g FLOPs forward (v1 + %.4g)\n", v15.params, v15.forward, more);
  assert_true(fabs(more / 462422016.0 - 1) < 0.03);
}

/* BERT as HF's bert-*-uncased counts it (335,141,888 large, 109,482,240 base: embeddings with the
** 2-row segment table, encoder, pooler), less the segment table podsim leaves out (2 d_model)
** plus the 2-class classifier (2 d_model + 2):
**   large: 335,141,888 - 2048 + 2050 = 335,141,890;  base: 109,482,240 - 1536 + 1538 = 109,482,242
** and the paper's rounded "340M" and "110M" within 2%. */
static void bert_matches_published_counts(void **state) {
  (void)state;
  built large = build("bert_large"), base = build("bert_base");
  assert_true(large.params == 335141890);
  assert_true(base.params == 109482242);
  assert_true(fabs(large.params / 340e6 - 1) < 0.02);
  assert_true(fabs(base.params / 110e6 - 1) < 0.02);
}

/* The GPT-3 family (paper table 2.1): parameters as published (they tie the language-model head
** to the token table; podsim's head is untied: vocab x d_model + vocab more), within 2%:
**   125M: 163,873,873 - 38,647,633 = 125.2M;   1.3B: 1,418,699,857 - 102,976,593 = 1.3157B
**   6.7B: 6,864,307,281 - 205,903,953 = 6.658B; 175B: 175,221,867,601 - 617,608,273 = 174.60B
** Training FLOPs per token as the scaling-law accounting has them: 6 N for the N
** non-embedding parameters (the head's matrix multiply included) plus 12 L S d for attention's
** two S x S products, forward and backward, within 2% (measured: 0.1%). GPT-3's "6N" alone
** leaves attention out: at S = 2048 it is 2.7% under podsim's count for 175B. */
static void gpt_matches_published_counts_and_6n(void **state) {
  (void)state;
  static const struct { const char *name; double published; double layers, d, vocab; } G[] = {
    {"gpt_125m", 125e6, 12, 768, 50257}, {"gpt_1_3b", 1.3e9, 24, 2048, 50257},
    {"gpt_6_7b", 6.7e9, 32, 4096, 50257}, {"gpt_175b", 175.0e9, 96, 12288, 50257},
  };
  const double seq = 2048;
  for (size_t i = 0; i < sizeof G / sizeof G[0]; i++) {
    built r = build(G[i].name);
    double head = G[i].vocab * G[i].d + G[i].vocab, embeddings = G[i].vocab * G[i].d + seq * G[i].d;
    double tied = r.params - head;
    print_message("%s: %.6g parameters as published (tied head), %.4g training FLOPs per token\n", G[i].name,
                  tied, r.train / seq);
    assert_true(fabs(tied / G[i].published - 1) < 0.02);
    double n = r.params - embeddings;
    double formula = 6 * n + 12 * G[i].layers * seq * G[i].d;
    assert_true(fabs(r.train / seq / formula - 1) < 0.02);
  }
}

/* MLPerf's DLRM (Criteo 1TB, the reference's --max-ind-range 40M tables): 26 tables of 128 columns
** holding 187,767,399 rows (the reference's ln_emb summed) = 24,034,227,072 parameters; the bottom
** MLP 13-512-256-128 has 13*512 + 512 + 512*256 + 256 + 256*128 + 128 = 171,392, the top MLP
** 479-1024-1024-512-256-1 (479 = 128 + 27*26/2) 2,197,505: 24,036,595,969 in all, 96.1 GB of
** float32, which Desai and Shrivastava (NeurIPS 2022) round to "100GB of embedding memory (25+
** billion parameters)": within 4%. Forward FLOPs per example: the MLPs' multiply-adds, bottom
** 170,496 and top 2,194,688, twice = 4,730,368, plus the interaction as one 27 x 128 x 27 batched
** matmul, 2*27*27*128 = 186,624: 4,916,992; podsim adds its elementwise ops, 26*128 = 3,328 looked
** up floats, 3,713 bias adds and 3,712 relus (896 bottom, 2,816 top): 4,927,745, 0.22% more.
** 35 layers: 3 bottom, 26 tables, the interaction, 5 top. */
static void dlrm_matches_mlperf_reference(void **state) {
  (void)state;
  built r = build("dlrm");
  assert_int_equal(r.layers, 35);
  assert_true(r.params == 24036595969.0);
  assert_true(fabs(r.params * 4 / 100e9 - 1) < 0.04);
  print_message("dlrm: %.0f params, %.7g FLOPs forward, %.7g a train step, an example\n", r.params, r.forward, r.train);
  assert_true(r.forward == 4916992 + 3328 + 3713 + 3712);
}

/* Presets and sizes: an unknown name, heads that do not divide d_model, too few layers to hold. */
/* GraphSAGE on Reddit as the paper's reference code trains it (K = 2, 128 units a transform,
** concat, 602 features, 41 classes), TF-GNN's layers: graph_sage_0's neighbor and self kernels
** 602 x 128 each and its bias 256 (concat: 2 x 128), 154,368; graph_sage_1's 256 x 128 twice and
** 256, 65,792; logits 256 x 41 + 41, 10,537: 230,697 (the reference code, without the two
** GraphSAGE biases, 230,185). Forward FLOPs are the transforms' GEMMs over every padded node (276
** = 1 + 25 + 250): 2 kernels x 2 x 276 x 128 x (602 + 256) = 121,233,408, plus the head and the
** pooling's adds and divisions (275 x 602 + 276 x 602 at layer 0, ...), under 1% more. */
static void graphsage_matches_its_count(void **state) {
  (void)state;
  built r = build("graphsage");
  assert_int_equal(r.layers, 7);
  assert_true(r.params == 230697);
  double gemm = 2.0 * 2 * 276 * 128 * (602 + 256);
  print_message("graphsage: %.0f params, %.4g FLOPs forward (transforms %.4g)\n", r.params, r.forward, gemm);
  assert_true(r.forward > gemm && r.forward < 1.01 * gemm);
}

static void zoo_refuses_what_it_cannot_build(void **state) {
  (void)state;
  md_zoo_spec z;
  assert_int_equal(md_zoo_preset("gpt_2", &z), -1);
  assert_string_equal(md_zoo_preset_name(0), "resnet50");
  assert_string_equal(md_zoo_preset_name(7), "dlrm");
  assert_string_equal(md_zoo_preset_name(8), "graphsage");
  assert_string_equal(md_zoo_preset_name(9), "llama2_7b");
  assert_string_equal(md_zoo_preset_name(16), "resnet50_v1_5");
  assert_null(md_zoo_preset_name(17));
  static md_layer_spec layers[MAX_LAYERS];
  md_model_spec spec;
  md_error err;
  assert_int_equal(md_zoo_preset("gpt_1_3b", &z), 0);
  z.heads = 15;
  assert_int_equal(md_zoo_build(&z, layers, MAX_LAYERS, NULL, &spec, &err), -1);
  assert_non_null(strstr(err.msg, "d_model 2048 is not a multiple of heads 15"));
  z.heads = 16;
  assert_int_equal(md_zoo_build(&z, layers, 100, NULL, &spec, &err), -1);
  assert_non_null(strstr(err.msg, "171 layers, more than the 100"));
  assert_int_equal(md_zoo_preset("graphsage", &z), 0);
  z.units = 0;
  assert_int_equal(md_zoo_build(&z, layers, MAX_LAYERS, NULL, &spec, &err), -1);
  assert_non_null(strstr(err.msg, "graphsage needs layers, units"));
}

/* Llama 2 (Touvron et al. 2023, its released config.json files) and Llama 3.1 405B (Meta's
** model card; config.json: 126 layers, 16384, 128 heads, 8 key-value heads, ffn 53248, vocab
** 128256): parameters as Hugging Face counts them, exactly. A block: q and o d x d, k and v
** d x G hd, three SwiGLU kernels d x ffn, two RMS scales d; plus the token table and the untied
** head V d each and the final scale d:
**   7B:  32 (4 4096^2 + 3 4096 11008 + 2 4096) + 4096 + 2 32000 4096          =   6,738,415,616
**   13B: 40 (4 5120^2 + 3 5120 13824 + 2 5120) + 5120 + 2 32000 5120          =  13,015,864,320
**   70B: 80 (2 8192^2 + 2 8192 1024 + 3 8192 28672 + 2 8192) + 8192 + 2 32000 8192 = 68,976,648,192
**   405B: 126 (2 16384^2 + 2 16384 1024 + 3 16384 53248 + 2 16384) + 16384 + 2 128256 16384
**                                                                              = 405,853,388,800
** (the papers' 6.74B, 13.02B, "70B" and "405B"). 9 layers a block: 2 norms, attention, 2 adds and
** the SwiGLU's gate, up, multiply and down. Training FLOPs per token as PaLM's appendix B counts
** them, 6 N (N without the token table) + 12 L S H hd, within 2%: rope's turns, the norms and
** the softmax are the rest. */
static void llama_matches_published_counts(void **state) {
  (void)state;
  static const struct { const char *name; double params, layers, d, vocab, seq; } L[] = {
    {"llama2_7b", 6738415616.0, 32, 4096, 32000, 4096}, {"llama2_13b", 13015864320.0, 40, 5120, 32000, 4096},
    {"llama2_70b", 68976648192.0, 80, 8192, 32000, 4096}, {"llama3_405b", 405853388800.0, 126, 16384, 128256, 8192},
  };
  for (size_t i = 0; i < sizeof L / sizeof L[0]; i++) {
    built r = build(L[i].name);
    print_message("%s: %.0f parameters, %d layers, %.5g training FLOPs per token\n", L[i].name, r.params, r.layers,
                  r.train / L[i].seq);
    assert_true(r.params == L[i].params);
    assert_int_equal(r.layers, 9 * (int)L[i].layers + 3);
    double formula = 6 * (r.params - L[i].vocab * L[i].d) + 12 * L[i].layers * L[i].seq * L[i].d;
    assert_true(fabs(r.train / L[i].seq / formula - 1) < 0.02);
  }
}

/* PaLM's table 1: 8B (32 layers, 4096, 16 heads), 62B (64, 8192, 32), 540B (118, 18432, 48),
** heads 256 wide, multi-query, ffn 4 d SwiGLU, vocab 256k, shared input and output embeddings:
** 8.63B, 62.50B, 540.35B. A block: q and o d x 256 H, k and v d x 256, three d x 4d kernels and a
** layer norm's 2 d; podsim's untied head adds V d to the published count:
**   540B: 118 (2 18432 12288 + 2 18432 256 + 3 18432 73728 + 2 18432) + 2 18432 + 256000 18432
**         = 540,358,668,288 (+ 4,718,592,000 head) = 545,077,260,288
**   62B: 62,496,194,560 + 2,097,152,000;  8B: 8,632,147,968 + 1,048,576,000
** within 0.03% of the published: its two decimals (8.63 for 8,632M) and the layer norms' beta
** podsim keeps (540B: 0.0016% over). 7 layers a block: the norm, attention, gate,
** up, multiply, down and the parallel block's 3-way add. */
static void palm_matches_published_counts(void **state) {
  (void)state;
  static const struct { const char *name; double published, exact, layers, d, heads; } P[] = {
    {"palm_8b", 8.63e9, 8632147968.0, 32, 4096, 16}, {"palm_62b", 62.50e9, 62496194560.0, 64, 8192, 32},
    {"palm_540b", 540.35e9, 540358668288.0, 118, 18432, 48},
  };
  for (size_t i = 0; i < sizeof P / sizeof P[0]; i++) {
    built r = build(P[i].name);
    double head = 256000 * P[i].d, tied = r.params - head;
    print_message("%s: %.0f parameters with a tied head, %.5g training FLOPs per token\n", P[i].name, tied,
                  r.train / 2048);
    assert_true(tied == P[i].exact);
    assert_true(fabs(tied / P[i].published - 1) < 3e-4);
    assert_int_equal(r.layers, 7 * (int)P[i].layers + 3);
    double formula = 6 * (r.params - head) + 12 * P[i].layers * 2048 * P[i].heads * 256;
    assert_true(fabs(r.train / 2048 / formula - 1) < 0.02);
  }
}

/* Sizes the llama and palm builders refuse: key-value heads that do not divide the heads. */
static void zoo_refuses_ungrouped_kv_heads(void **state) {
  (void)state;
  md_zoo_spec z;
  static md_layer_spec layers[MAX_LAYERS];
  md_model_spec spec;
  md_error err;
  assert_int_equal(md_zoo_preset("llama2_70b", &z), 0);
  z.kv_heads = 7;
  assert_int_equal(md_zoo_build(&z, layers, MAX_LAYERS, NULL, &spec, &err), -1);
  assert_non_null(strstr(err.msg, "kv_heads 7 must divide heads 64"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(resnet50_matches_keras),
    cmocka_unit_test(resnet50_v1_5_matches_torchvision),
    cmocka_unit_test(bert_matches_published_counts),
    cmocka_unit_test(gpt_matches_published_counts_and_6n),
    cmocka_unit_test(dlrm_matches_mlperf_reference),
    cmocka_unit_test(graphsage_matches_its_count),
    cmocka_unit_test(zoo_refuses_what_it_cannot_build),
    cmocka_unit_test(llama_matches_published_counts),
    cmocka_unit_test(palm_matches_published_counts),
    cmocka_unit_test(zoo_refuses_ungrouped_kv_heads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
