/*
** zoo.c: named architectures (md_zoo_), written layer by layer as their reference code builds
** them, with Keras's layer names so variables read as the originals':
**   resnet50: keras.applications.ResNet50 (v1 bottlenecks, a 1x1 projection on the first block
**     of each stage, biases on every convolution, batch normalisation epsilon 1.001e-5).
**     ZeroPadding2D(3) + Conv2D 7x7 valid is written as same padding, and ZeroPadding2D(1) +
**     MaxPooling2D(3, 2) likewise: the same output sizes, variables and costs.
**   resnet50_v1_5: ResNet-50 v1.5 as NVIDIA's DeepLearningExamples (TensorFlow/Classification/
**     ConvNets, model/blocks/resnet_bottleneck_block.py and conv2d_block.py) and MLPerf's reference
**     build it: a downsampling block strides its 3x3 convolution, not its first 1x1 (about 6%
**     more FLOPs: the 3x3 runs at the block's input size), and a convolution followed by batch
**     normalisation has no bias (conv2d_block's `use_bias=not use_batch_norm`: beta shifts
**     instead), so no bias is added in the forward or reduced in the backward.
**   bert: KerasHub's BertBackbone (post-layer-norm encoder blocks, epsilon 1e-12, gelu, dropout
**     0.1, also on the attention probabilities: TransformerEncoder passes its dropout to the
**     attention layer, BERT's attention_probs_dropout_prob; none with flash_attention, which
**     Keras refuses with dropout) with a classifier on the pooled output. Two departures: no segment embedding (2 x
**     d_model variables, 0.0006% of BERT-large) and the pooler reads the mean of the sequence
**     (reshape + global average pooling) where BERT reads the first token: the same variables
**     and, but for that mean, the same costs.
**   gpt: GPT-2/3's pre-layer-norm decoder: token and position embeddings, causal attention, a
**     4 d_model gelu feed-forward layer, a final layer norm and an untied language-model head
**     (GPT ties it to the token table: vocab x d_model more variables here).
**   dlrm: MLPerf's reference DLRM for Criteo 1TB (facebookresearch/dlrm, --max-ind-range
**     40000000): 13 dense features through the bottom MLP 512-256-128 (relu), 26 categorical
**     features each an Embedding of its table (one id, 128 wide), the dot interaction of the 27
**     vectors with the bottom MLP's output in front (128 + 351 = 479), the top MLP
**     1024-1024-512-256 (relu) and a logit; trained with binary cross-entropy. Keras's
**     functional form: an Input per feature (dense_features, cat_0 .. cat_25).
**   graphsage: TF-GNN's node classification of a sampled subgraph's seed node with
**     graph_sage.GraphSAGEGraphUpdate (GraphSAGEAggregatorConv, mean pooling, concat combine,
**     relu, l2_normalize) `layers` times, ReadoutFirstNode and a dense head. The preset is the
**     GraphSAGE paper's supervised Reddit run as its reference code trains it (Hamilton et al.
**     2017; williamleif/GraphSAGE supervised_train.py: K = 2, fan-outs 25 then 10, 128 units a
**     transform, concat, 602 features, 41 classes), its subgraph padded to the fan-outs' most
**     nodes and edges, the sizes TF-GNN's runner pads a TPU's batches to.
**   llama: KerasHub's LlamaBackbone (Llama 2 / 3): a token Embedding, pre-normalised blocks of
**     RMSNormalization (epsilon 1e-5), causal attention without biases with rotary embeddings
**     and grouped-query key-value heads, a residual add, RMSNormalization and the SwiGLU MLP
**     down(silu(gate(x)) * up(x)) without biases, a residual add; a final RMSNormalization and
**     an untied language-model head, as Llama's.
**   palm: PaLM (Chowdhery et al. 2022, section 2): parallel blocks x + attention(norm(x)) +
**     mlp(norm(x)) over one layer norm, multi-query attention with heads 256 wide and rotary
**     embeddings, a SwiGLU MLP, no biases. Two departures: the layer norms keep Keras's beta (2
**     d_model variables a block, 0.0008% of 540B) and the language-model head is its own
**     variable where PaLM shares the input embedding (vocab x d_model more variables: 4.7B on
**     540B's 540.35B; the head's matmul is the same).
** Presets are the published sizes (GPT-3 paper table 2.1; BERT paper; Keras's ResNet50; MLPerf's
** DLRM reference, its table rows after the 40M cap; the Llama 2 paper's table and its released
** config.json files (Llama 2 7B/13B/70B; Llama 3.1 405B: 126 layers, 16384 wide, 128 heads, 8
** key-value heads, ffn 53248, vocab 128256, rope theta 500000); PaLM's table 1).
*/
#include <string.h>

#include "models/zoo.h"
#include "base/base.h"

static const struct preset {
  const char *name;
  md_zoo_spec spec;
} PRESETS[] = {
  {"resnet50", {.family = MD_ZOO_RESNET50, .image_size = 224, .classes = 1000}},
  {"bert_base", {.family = MD_ZOO_BERT, .layers = 12, .d_model = 768, .heads = 12, .ffn = 3072, .seq_len = 512,
                 .vocab = 30522, .classes = 2}},
  {"bert_large", {.family = MD_ZOO_BERT, .layers = 24, .d_model = 1024, .heads = 16, .ffn = 4096, .seq_len = 512,
                  .vocab = 30522, .classes = 2}},
  {"gpt_125m", {.family = MD_ZOO_GPT, .layers = 12, .d_model = 768, .heads = 12, .ffn = 3072, .seq_len = 2048,
                .vocab = 50257}},
  {"gpt_1_3b", {.family = MD_ZOO_GPT, .layers = 24, .d_model = 2048, .heads = 16, .ffn = 8192, .seq_len = 2048,
                .vocab = 50257}},
  {"gpt_6_7b", {.family = MD_ZOO_GPT, .layers = 32, .d_model = 4096, .heads = 32, .ffn = 16384, .seq_len = 2048,
                .vocab = 50257}},
  {"gpt_175b", {.family = MD_ZOO_GPT, .layers = 96, .d_model = 12288, .heads = 96, .ffn = 49152, .seq_len = 2048,
                .vocab = 50257}},
  {"dlrm", {.family = MD_ZOO_DLRM, .vocab = 40000000, .embedding_dim = 128}},
  {"graphsage", {.family = MD_ZOO_GRAPHSAGE, .layers = 2, .units = 128, .node_features = 602, .classes = 41,
                 .graph_nodes = 1 + 25 + 25 * 10, .graph_edges = 25 + 25 * 10}},
  {"llama2_7b", {.family = MD_ZOO_LLAMA, .layers = 32, .d_model = 4096, .heads = 32, .ffn = 11008, .seq_len = 4096,
                 .vocab = 32000, .rope_wavelength = 10000}},
  {"llama2_13b", {.family = MD_ZOO_LLAMA, .layers = 40, .d_model = 5120, .heads = 40, .ffn = 13824, .seq_len = 4096,
                  .vocab = 32000, .rope_wavelength = 10000}},
  {"llama2_70b", {.family = MD_ZOO_LLAMA, .layers = 80, .d_model = 8192, .heads = 64, .kv_heads = 8, .ffn = 28672,
                  .seq_len = 4096, .vocab = 32000, .rope_wavelength = 10000}},
  {"llama3_405b", {.family = MD_ZOO_LLAMA, .layers = 126, .d_model = 16384, .heads = 128, .kv_heads = 8, .ffn = 53248,
                   .seq_len = 8192, .vocab = 128256, .rope_wavelength = 500000}},
  {"palm_8b", {.family = MD_ZOO_PALM, .layers = 32, .d_model = 4096, .heads = 16, .kv_heads = 1, .head_dim = 256,
               .ffn = 16384, .seq_len = 2048, .vocab = 256000, .rope_wavelength = 10000}},
  {"palm_62b", {.family = MD_ZOO_PALM, .layers = 64, .d_model = 8192, .heads = 32, .kv_heads = 1, .head_dim = 256,
                .ffn = 32768, .seq_len = 2048, .vocab = 256000, .rope_wavelength = 10000}},
  {"palm_540b", {.family = MD_ZOO_PALM, .layers = 118, .d_model = 18432, .heads = 48, .kv_heads = 1, .head_dim = 256,
                 .ffn = 73728, .seq_len = 2048, .vocab = 256000, .rope_wavelength = 10000}},
  {"resnet50_v1_5", {.family = MD_ZOO_RESNET50, .image_size = 224, .classes = 1000, .v1_5 = 1}},
};
enum { NPRESETS = (int)(sizeof PRESETS / sizeof PRESETS[0]) };

int md_zoo_preset(const char *name, md_zoo_spec *z) {
  for (int i = 0; i < NPRESETS; i++)
    if (strcmp(PRESETS[i].name, name) == 0) {
      *z = PRESETS[i].spec;
      return 0;
    }
  return -1;
}

const char *md_zoo_preset_name(int i) { return i >= 0 && i < NPRESETS ? PRESETS[i].name : NULL; }

/* The layers being written: each append returns the new layer's index. */
typedef struct builder {
  md_layer_spec *layers;  /* the caller's array */
  int max;                /* its entries */
  int n;                  /* written so far (may pass max: the count is still right) */
} builder;

/* Appends l named `name` reading `inputs` (ninputs 0: the layer before). */
static int append(builder *b, md_layer_spec l, const char *name, int ninputs, const int *inputs) {
  if (b->n < b->max) {
    l.ninputs = ninputs;
    for (int i = 0; i < ninputs; i++) l.inputs[i] = inputs[i];
    base_format(l.name, sizeof l.name, "%s", name);
    b->layers[b->n] = l;
  }
  return b->n++;
}

static int layer(builder *b, md_layer_spec l, const char *name) { return append(b, l, name, 0, NULL); }
static int layer_on(builder *b, md_layer_spec l, const char *name, int input) { return append(b, l, name, 1, &input); }
static int add2(builder *b, const char *name, int x, int y) {
  const int in[2] = {x, y};
  return append(b, (md_layer_spec){.kind = MD_LAYER_ADD}, name, 2, in);
}

/* Every convolution of the zoo's ResNet-50 is followed by a batch norm: v1 (Keras) gives it a
** bias anyway, v1.5 (use_bias false) none. */
static md_layer_spec conv(int filters, int k, int stride, int v1_5) {
  return (md_layer_spec){.kind = MD_LAYER_CONV2D, .filters = filters, .kernel_size = {k, k},
                         .strides = {stride, stride}, .padding = MD_PADDING_SAME, .use_bias = !v1_5};
}
static const md_layer_spec BN = {.kind = MD_LAYER_BATCH_NORMALIZATION, .epsilon = 1.001e-5f};
static const md_layer_spec RELU = {.kind = MD_LAYER_ACTIVATION, .activation = MD_ACT_RELU};

/* Keras's block1: the bottleneck of 1x1 filters, 3x3 filters, 1x1 4 filters, added to the
** input or (conv_shortcut) to its 1x1 projection; returns the block's output. v1 strides the
** first 1x1, v1.5 the 3x3. */
static int bottleneck(builder *b, int x, int filters, int stride, int conv_shortcut, int v1_5, const char *name) {
  char n[MD_LAYER_NAME_MAX];
  int shortcut = x;
  if (conv_shortcut) {
    shortcut = layer_on(b, conv(4 * filters, 1, stride, v1_5), base_format(n, sizeof n, "%s_0_conv", name), x);
    shortcut = layer(b, BN, base_format(n, sizeof n, "%s_0_bn", name));
  }
  layer_on(b, conv(filters, 1, v1_5 ? 1 : stride, v1_5), base_format(n, sizeof n, "%s_1_conv", name), x);
  layer(b, BN, base_format(n, sizeof n, "%s_1_bn", name));
  layer(b, RELU, base_format(n, sizeof n, "%s_1_relu", name));
  layer(b, conv(filters, 3, v1_5 ? stride : 1, v1_5), base_format(n, sizeof n, "%s_2_conv", name));
  layer(b, BN, base_format(n, sizeof n, "%s_2_bn", name));
  layer(b, RELU, base_format(n, sizeof n, "%s_2_relu", name));
  layer(b, conv(4 * filters, 1, 1, v1_5), base_format(n, sizeof n, "%s_3_conv", name));
  int main_path = layer(b, BN, base_format(n, sizeof n, "%s_3_bn", name));
  add2(b, base_format(n, sizeof n, "%s_add", name), shortcut, main_path);
  return layer(b, RELU, base_format(n, sizeof n, "%s_out", name));
}

static void resnet50(builder *b, const md_zoo_spec *z, md_model_spec *spec) {
  static const struct { int filters, blocks, stride; } STAGES[4] = {{64, 3, 1}, {128, 4, 2}, {256, 6, 2}, {512, 3, 2}};
  spec->input_shape = (md_shape){.rank = 3, .dim = {z->image_size, z->image_size, 3}};
  layer(b, conv(64, 7, 2, z->v1_5), "conv1_conv");
  layer(b, BN, "conv1_bn");
  layer(b, RELU, "conv1_relu");
  int x = layer(b, (md_layer_spec){.kind = MD_LAYER_MAX_POOLING2D, .pool_size = {3, 3}, .strides = {2, 2},
                                   .padding = MD_PADDING_SAME}, "pool1_pool");
  char name[MD_LAYER_NAME_MAX];
  for (int s = 0; s < 4; s++)
    for (int k = 0; k < STAGES[s].blocks; k++)
      x = bottleneck(b, x, STAGES[s].filters, k == 0 ? STAGES[s].stride : 1, k == 0, z->v1_5,
                     base_format(name, sizeof name, "conv%d_block%d", s + 2, k + 1));
  layer(b, (md_layer_spec){.kind = MD_LAYER_GLOBAL_AVERAGE_POOLING2D}, "avg_pool");
  layer(b, (md_layer_spec){.kind = MD_LAYER_DENSE, .units = z->classes, .activation = MD_ACT_SOFTMAX, .use_bias = 1},
        "predictions");
}

static md_layer_spec attention(const md_zoo_spec *z, int causal) {
  return (md_layer_spec){.kind = MD_LAYER_MULTI_HEAD_ATTENTION, .num_heads = z->heads,
                         .key_dim = z->head_dim > 0 ? z->head_dim : z->d_model / z->heads, .use_bias = 1,
                         .use_causal_mask = causal, .num_key_value_heads = z->kv_heads,
                         .rope_max_wavelength = z->rope_wavelength, .flash_attention = z->flash_attention};
}
static md_layer_spec dense(int units, md_activation act) {
  return (md_layer_spec){.kind = MD_LAYER_DENSE, .units = units, .activation = act, .use_bias = 1};
}
static md_layer_spec norm(float epsilon) {
  return (md_layer_spec){.kind = MD_LAYER_LAYER_NORMALIZATION, .epsilon = epsilon};
}
static const md_layer_spec DROPOUT = {.kind = MD_LAYER_DROPOUT, .rate = 0.1f};

static void bert(builder *b, const md_zoo_spec *z, md_model_spec *spec) {
  char n[MD_LAYER_NAME_MAX];
  spec->input_ids = z->seq_len;
  spec->input_vocab = z->vocab;
  layer(b, (md_layer_spec){.kind = MD_LAYER_TOKEN_AND_POSITION_EMBEDDING, .vocab = z->vocab, .dim = z->d_model,
                           .sequence_length = z->seq_len}, "embeddings");
  layer(b, norm(1e-12f), "embeddings_layer_norm");
  int x = layer(b, DROPOUT, "embeddings_dropout");
  md_layer_spec att = attention(z, 0);
  att.rate = z->flash_attention ? 0.0f : DROPOUT.rate;  /* Keras refuses dropout with flash attention */
  for (int i = 0; i < z->layers; i++) {
    layer(b, att, base_format(n, sizeof n, "transformer_layer_%d_self_attention", i));
    int a = layer(b, DROPOUT, base_format(n, sizeof n, "transformer_layer_%d_self_attention_dropout", i));
    add2(b, base_format(n, sizeof n, "transformer_layer_%d_self_attention_add", i), x, a);
    int x1 = layer(b, norm(1e-12f), base_format(n, sizeof n, "transformer_layer_%d_self_attention_layer_norm", i));
    layer(b, dense(z->ffn, MD_ACT_GELU), base_format(n, sizeof n, "transformer_layer_%d_feedforward_intermediate_dense", i));
    layer(b, dense(z->d_model, MD_ACT_NONE), base_format(n, sizeof n, "transformer_layer_%d_feedforward_output_dense", i));
    int f = layer(b, DROPOUT, base_format(n, sizeof n, "transformer_layer_%d_feedforward_dropout", i));
    add2(b, base_format(n, sizeof n, "transformer_layer_%d_feedforward_add", i), x1, f);
    x = layer(b, norm(1e-12f), base_format(n, sizeof n, "transformer_layer_%d_feedforward_layer_norm", i));
  }
  layer(b, (md_layer_spec){.kind = MD_LAYER_RESHAPE, .target_shape = {.rank = 3, .dim = {z->seq_len, 1, z->d_model}}},
        "pooled_sequence");
  layer(b, (md_layer_spec){.kind = MD_LAYER_GLOBAL_AVERAGE_POOLING2D}, "pooled_mean");
  layer(b, dense(z->d_model, MD_ACT_TANH), "pooled_dense");
  layer(b, DROPOUT, "output_dropout");
  layer(b, dense(z->classes, MD_ACT_NONE), "logits");
}

static void gpt(builder *b, const md_zoo_spec *z, md_model_spec *spec) {
  char n[MD_LAYER_NAME_MAX];
  spec->input_ids = z->seq_len;
  spec->input_vocab = z->vocab;
  int x = layer(b, (md_layer_spec){.kind = MD_LAYER_TOKEN_AND_POSITION_EMBEDDING, .vocab = z->vocab,
                                   .dim = z->d_model, .sequence_length = z->seq_len}, "embeddings");
  for (int i = 0; i < z->layers; i++) {
    layer(b, norm(1e-5f), base_format(n, sizeof n, "transformer_layer_%d_self_attention_layer_norm", i));
    int a = layer(b, attention(z, 1), base_format(n, sizeof n, "transformer_layer_%d_self_attention", i));
    int x1 = add2(b, base_format(n, sizeof n, "transformer_layer_%d_self_attention_add", i), x, a);
    layer(b, norm(1e-5f), base_format(n, sizeof n, "transformer_layer_%d_feedforward_layer_norm", i));
    layer(b, dense(z->ffn, MD_ACT_GELU), base_format(n, sizeof n, "transformer_layer_%d_feedforward_intermediate_dense", i));
    int f = layer(b, dense(z->d_model, MD_ACT_NONE), base_format(n, sizeof n, "transformer_layer_%d_feedforward_output_dense", i));
    x = add2(b, base_format(n, sizeof n, "transformer_layer_%d_feedforward_add", i), x1, f);
  }
  layer(b, norm(1e-5f), "layer_norm");
  layer(b, dense(z->vocab, MD_ACT_NONE), "lm_head");
}

static md_layer_spec unbiased(md_layer_spec l) {
  l.use_bias = 0;
  return l;
}

/* The SwiGLU MLP reading x, named PREFIX_gate_dense, .._up_dense, .._multiply, .._down_dense
** (KerasHub's feedforward_gate_dense, _intermediate_dense, _output_dense): its output. */
static int swiglu(builder *b, const md_zoo_spec *z, int x, const char *prefix) {
  char n[MD_LAYER_NAME_MAX];
  int gate = layer_on(b, unbiased(dense(z->ffn, MD_ACT_SWISH)), base_format(n, sizeof n, "%s_gate_dense", prefix), x);
  int up = layer_on(b, unbiased(dense(z->ffn, MD_ACT_NONE)), base_format(n, sizeof n, "%s_intermediate_dense", prefix), x);
  const int in[2] = {gate, up};
  append(b, (md_layer_spec){.kind = MD_LAYER_MULTIPLY}, base_format(n, sizeof n, "%s_multiply", prefix), 2, in);
  return layer(b, unbiased(dense(z->d_model, MD_ACT_NONE)), base_format(n, sizeof n, "%s_output_dense", prefix));
}

/* The token table as a sequence, [seq_len, d_model]: the input of llama and palm. */
static int token_embedding(builder *b, const md_zoo_spec *z, md_model_spec *spec) {
  spec->input_ids = z->seq_len;
  spec->input_vocab = z->vocab;
  return layer(b, (md_layer_spec){.kind = MD_LAYER_EMBEDDING, .vocab = z->vocab, .dim = z->d_model,
                                  .combiner = MD_COMBINER_NONE}, "token_embedding");
}

static void llama(builder *b, const md_zoo_spec *z, md_model_spec *spec) {
  static const md_layer_spec RMS = {.kind = MD_LAYER_RMS_NORMALIZATION, .epsilon = 1e-5f};
  char n[MD_LAYER_NAME_MAX], p[MD_LAYER_NAME_MAX];
  int x = token_embedding(b, z, spec);
  for (int i = 0; i < z->layers; i++) {
    layer(b, RMS, base_format(n, sizeof n, "transformer_layer_%d_self_attention_layernorm", i));
    int a = layer(b, unbiased(attention(z, 1)), base_format(n, sizeof n, "transformer_layer_%d_self_attention", i));
    int x1 = add2(b, base_format(n, sizeof n, "transformer_layer_%d_self_attention_add", i), x, a);
    layer(b, RMS, base_format(n, sizeof n, "transformer_layer_%d_feedforward_layernorm", i));
    int f = swiglu(b, z, b->n - 1, base_format(p, sizeof p, "transformer_layer_%d_feedforward", i));
    x = add2(b, base_format(n, sizeof n, "transformer_layer_%d_feedforward_add", i), x1, f);
  }
  layer(b, RMS, "sequence_output_layernorm");
  layer(b, unbiased(dense(z->vocab, MD_ACT_NONE)), "lm_head");
}

static void palm(builder *b, const md_zoo_spec *z, md_model_spec *spec) {
  char n[MD_LAYER_NAME_MAX], p[MD_LAYER_NAME_MAX];
  int x = token_embedding(b, z, spec);
  for (int i = 0; i < z->layers; i++) {
    int h = layer(b, norm(1e-6f), base_format(n, sizeof n, "transformer_layer_%d_layernorm", i));
    int a = layer(b, unbiased(attention(z, 1)), base_format(n, sizeof n, "transformer_layer_%d_self_attention", i));
    int f = swiglu(b, z, h, base_format(p, sizeof p, "transformer_layer_%d_feedforward", i));
    const int in[3] = {x, a, f};
    x = append(b, (md_layer_spec){.kind = MD_LAYER_ADD}, base_format(n, sizeof n, "transformer_layer_%d_add", i), 3, in);
  }
  layer(b, norm(1e-6f), "sequence_output_layernorm");
  layer(b, unbiased(dense(z->vocab, MD_ACT_NONE)), "lm_head");
}

/* MLPerf's Criteo 1TB tables: rows of each of the 26 categorical features after the reference's
** --max-ind-range=40000000 (dlrm_s_pytorch.py, ln_emb for the terabyte set). */
static const int DLRM_ROWS[26] = {39884406, 39043, 17289, 7420, 20263, 3, 7120, 1543, 63, 38532951, 2953546, 403346, 10,
                                  2208, 11938, 155, 4, 976, 14, 39979771, 25641295, 39664984, 585935, 12972, 108, 36};
enum { DLRM_DENSE = 13, DLRM_TABLES = 26 };

static void dlrm(builder *b, const md_zoo_spec *z, md_model_input *inputs, md_model_spec *spec) {
  static const int BOTTOM[2] = {512, 256}, TOP[4] = {1024, 1024, 512, 256};
  char n[MD_LAYER_NAME_MAX];
  inputs[0] = (md_model_input){.name = "dense_features", .features = DLRM_DENSE};
  for (int t = 0; t < DLRM_TABLES; t++) {
    inputs[1 + t] = (md_model_input){.ids = 1, .vocab = DLRM_ROWS[t] < z->vocab ? DLRM_ROWS[t] : z->vocab};
    base_format(inputs[1 + t].name, sizeof inputs[1 + t].name, "cat_%d", t);
  }
  spec->ninputs = 1 + DLRM_TABLES;
  spec->inputs = inputs;
  int features[1 + DLRM_TABLES];
  layer_on(b, dense(BOTTOM[0], MD_ACT_RELU), "bottom_mlp_0", MD_MODEL_INPUT(0));
  layer(b, dense(BOTTOM[1], MD_ACT_RELU), "bottom_mlp_1");
  features[0] = layer(b, dense(z->embedding_dim, MD_ACT_RELU), "bottom_mlp_2");
  for (int t = 0; t < DLRM_TABLES; t++)
    features[1 + t] = layer_on(b, (md_layer_spec){.kind = MD_LAYER_EMBEDDING, .vocab = inputs[1 + t].vocab,
                                                  .dim = z->embedding_dim, .combiner = MD_COMBINER_SUM},
                               base_format(n, sizeof n, "embedding_%d", t), MD_MODEL_INPUT(1 + t));
  append(b, (md_layer_spec){.kind = MD_LAYER_DOT_INTERACTION}, "interaction", 1 + DLRM_TABLES, features);
  for (int i = 0; i < 4; i++) layer(b, dense(TOP[i], MD_ACT_RELU), base_format(n, sizeof n, "top_mlp_%d", i));
  layer(b, dense(1, MD_ACT_NONE), "logit");
}

static void graphsage(builder *b, const md_zoo_spec *z, md_model_spec *spec) {
  char n[MD_LAYER_NAME_MAX];
  spec->input_shape = (md_shape){.rank = 1, .dim = {z->graph_nodes * z->node_features + 2 * z->graph_edges}};
  int x = layer(b, (md_layer_spec){.kind = MD_LAYER_GRAPH_NODE_FEATURES, .graph_nodes = z->graph_nodes,
                                   .graph_edges = z->graph_edges}, "node_features");
  for (int i = 0; i < z->layers; i++) {
    const int in[2] = {x, MD_INPUT_MODEL};
    append(b, (md_layer_spec){.kind = MD_LAYER_GRAPH_SAGE, .units = z->units, .combiner = MD_COMBINER_MEAN,
                              .combine_type = MD_COMBINE_CONCAT, .activation = MD_ACT_RELU, .use_bias = 1,
                              .graph_edges = z->graph_edges}, base_format(n, sizeof n, "graph_sage_%d", i), 2, in);
    x = layer(b, (md_layer_spec){.kind = MD_LAYER_UNIT_NORMALIZATION}, base_format(n, sizeof n, "l2_normalize_%d", i));
  }
  layer(b, (md_layer_spec){.kind = MD_LAYER_READOUT_FIRST_NODE}, "readout_first_node");
  layer(b, dense(z->classes, MD_ACT_NONE), "logits");
}

int md_zoo_build(const md_zoo_spec *z, md_layer_spec *layers, int max, md_model_input *inputs, md_model_spec *spec,
                 md_error *err) {
  if (z->family == MD_ZOO_GRAPHSAGE &&
      (z->layers < 1 || z->units < 1 || z->node_features < 1 || z->classes < 1 || z->graph_nodes < 1 ||
       z->graph_edges < 0 || (double)z->graph_nodes * z->node_features + 2.0 * z->graph_edges > 1e8))
    return md_error_set(err, 0, 0, "graphsage needs layers, units, node_features, classes and nodes >= 1, edges "
                        ">= 0, and at most 1e8 floats per packed subgraph");
  if (z->family == MD_ZOO_RESNET50 && (z->image_size < 32 || z->classes < 1))
    return md_error_set(err, 0, 0, "resnet50 needs image_size >= 32 (five stride-2 stages) and classes >= 1");
  if (z->family == MD_ZOO_DLRM && (z->vocab < 1 || z->embedding_dim < 1))
    return md_error_set(err, 0, 0, "dlrm needs vocab (the most rows a table keeps) and embedding_dim >= 1");
  if (z->family == MD_ZOO_BERT || z->family == MD_ZOO_GPT || z->family == MD_ZOO_LLAMA || z->family == MD_ZOO_PALM) {
    if (z->layers < 1 || z->d_model < 1 || z->heads < 1 || z->ffn < 1 || z->seq_len < 1 || z->vocab < 1)
      return md_error_set(err, 0, 0, "a transformer needs layers, d_model, heads, ffn, seq_len and vocab >= 1");
    if (z->kv_heads < 0 || (z->kv_heads > 0 && z->heads % z->kv_heads != 0))
      return md_error_set(err, 0, 0, "kv_heads %d must divide heads %d (each key-value head serves a group of query "
                          "heads)", z->kv_heads, z->heads);
    if (z->head_dim == 0 && z->d_model % z->heads != 0)
      return md_error_set(err, 0, 0, "d_model %d is not a multiple of heads %d (each head is d_model / heads wide)",
                          z->d_model, z->heads);
    if (z->family == MD_ZOO_BERT && z->classes < 1) return md_error_set(err, 0, 0, "bert needs classes >= 1");
  }
  builder b = {layers, max, 0};
  memset(spec, 0, sizeof *spec);
  if (z->family == MD_ZOO_RESNET50) resnet50(&b, z, spec);
  else if (z->family == MD_ZOO_BERT) bert(&b, z, spec);
  else if (z->family == MD_ZOO_DLRM) dlrm(&b, z, inputs, spec);
  else if (z->family == MD_ZOO_GPT) gpt(&b, z, spec);
  else if (z->family == MD_ZOO_LLAMA) llama(&b, z, spec);
  else if (z->family == MD_ZOO_PALM) palm(&b, z, spec);
  else graphsage(&b, z, spec);
  if (b.n > max) return md_error_set(err, 0, 0, "the model has %d layers, more than the %d a model may have", b.n, max);
  spec->nlayers = b.n;
  spec->layers = layers;
  return b.n;
}
