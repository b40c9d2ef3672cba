/*
** zoo.c: named architectures (md_zoo_), written layer by layer as their reference code builds
** them, with Keras's layer names so variables read as the originals':
**   resnet50: keras.applications.ResNet50 (v1 bottlenecks, a 1x1 projection on the first block
**     of each stage, biases on every convolution, batch normalisation epsilon 1.001e-5).
**     ZeroPadding2D(3) + Conv2D 7x7 valid is written as same padding, and ZeroPadding2D(1) +
**     MaxPooling2D(3, 2) likewise: the same output sizes, variables and costs.
**   bert: KerasHub's BertBackbone (post-layer-norm encoder blocks, epsilon 1e-12, gelu, dropout
**     0.1) with a classifier on the pooled output. Two departures: no segment embedding (2 x
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
** Presets are the published sizes (GPT-3 paper table 2.1; BERT paper; Keras's ResNet50; MLPerf's
** DLRM reference, its table rows after the 40M cap).
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

static md_layer_spec conv(int filters, int k, int stride) {
  return (md_layer_spec){.kind = MD_LAYER_CONV2D, .filters = filters, .kernel_size = {k, k},
                         .strides = {stride, stride}, .padding = MD_PADDING_SAME, .use_bias = 1};
}
static const md_layer_spec BN = {.kind = MD_LAYER_BATCH_NORMALIZATION, .epsilon = 1.001e-5f};
static const md_layer_spec RELU = {.kind = MD_LAYER_ACTIVATION, .activation = MD_ACT_RELU};

/* Keras's block1: the bottleneck of 1x1 filters, 3x3 filters, 1x1 4 filters, added to the
** input or (conv_shortcut) to its 1x1 projection; returns the block's output. */
static int bottleneck(builder *b, int x, int filters, int stride, int conv_shortcut, const char *name) {
  char n[MD_LAYER_NAME_MAX];
  int shortcut = x;
  if (conv_shortcut) {
    shortcut = layer_on(b, conv(4 * filters, 1, stride), base_format(n, sizeof n, "%s_0_conv", name), x);
    shortcut = layer(b, BN, base_format(n, sizeof n, "%s_0_bn", name));
  }
  layer_on(b, conv(filters, 1, stride), base_format(n, sizeof n, "%s_1_conv", name), x);
  layer(b, BN, base_format(n, sizeof n, "%s_1_bn", name));
  layer(b, RELU, base_format(n, sizeof n, "%s_1_relu", name));
  layer(b, conv(filters, 3, 1), base_format(n, sizeof n, "%s_2_conv", name));
  layer(b, BN, base_format(n, sizeof n, "%s_2_bn", name));
  layer(b, RELU, base_format(n, sizeof n, "%s_2_relu", name));
  layer(b, conv(4 * filters, 1, 1), base_format(n, sizeof n, "%s_3_conv", name));
  int main_path = layer(b, BN, base_format(n, sizeof n, "%s_3_bn", name));
  add2(b, base_format(n, sizeof n, "%s_add", name), shortcut, main_path);
  return layer(b, RELU, base_format(n, sizeof n, "%s_out", name));
}

static void resnet50(builder *b, const md_zoo_spec *z, md_model_spec *spec) {
  static const struct { int filters, blocks, stride; } STAGES[4] = {{64, 3, 1}, {128, 4, 2}, {256, 6, 2}, {512, 3, 2}};
  spec->input_shape = (md_shape){.rank = 3, .dim = {z->image_size, z->image_size, 3}};
  layer(b, conv(64, 7, 2), "conv1_conv");
  layer(b, BN, "conv1_bn");
  layer(b, RELU, "conv1_relu");
  int x = layer(b, (md_layer_spec){.kind = MD_LAYER_MAX_POOLING2D, .pool_size = {3, 3}, .strides = {2, 2},
                                   .padding = MD_PADDING_SAME}, "pool1_pool");
  char name[MD_LAYER_NAME_MAX];
  for (int s = 0; s < 4; s++)
    for (int k = 0; k < STAGES[s].blocks; k++)
      x = bottleneck(b, x, STAGES[s].filters, k == 0 ? STAGES[s].stride : 1, k == 0,
                     base_format(name, sizeof name, "conv%d_block%d", s + 2, k + 1));
  layer(b, (md_layer_spec){.kind = MD_LAYER_GLOBAL_AVERAGE_POOLING2D}, "avg_pool");
  layer(b, (md_layer_spec){.kind = MD_LAYER_DENSE, .units = z->classes, .activation = MD_ACT_SOFTMAX, .use_bias = 1},
        "predictions");
}

static md_layer_spec attention(const md_zoo_spec *z, int causal) {
  return (md_layer_spec){.kind = MD_LAYER_MULTI_HEAD_ATTENTION, .num_heads = z->heads,
                         .key_dim = z->d_model / z->heads, .use_bias = 1, .use_causal_mask = causal};
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
  for (int i = 0; i < z->layers; i++) {
    layer(b, attention(z, 0), base_format(n, sizeof n, "transformer_layer_%d_self_attention", i));
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

int md_zoo_build(const md_zoo_spec *z, md_layer_spec *layers, int max, md_model_input *inputs, md_model_spec *spec,
                 md_error *err) {
  if (z->family == MD_ZOO_RESNET50 && (z->image_size < 32 || z->classes < 1))
    return md_error_set(err, 0, 0, "resnet50 needs image_size >= 32 (five stride-2 stages) and classes >= 1");
  if (z->family == MD_ZOO_DLRM && (z->vocab < 1 || z->embedding_dim < 1))
    return md_error_set(err, 0, 0, "dlrm needs vocab (the most rows a table keeps) and embedding_dim >= 1");
  if (z->family != MD_ZOO_RESNET50 && z->family != MD_ZOO_DLRM) {
    if (z->layers < 1 || z->d_model < 1 || z->heads < 1 || z->ffn < 1 || z->seq_len < 1 || z->vocab < 1)
      return md_error_set(err, 0, 0, "a transformer needs layers, d_model, heads, ffn, seq_len and vocab >= 1");
    if (z->d_model % z->heads != 0)
      return md_error_set(err, 0, 0, "d_model %d is not a multiple of heads %d (each head is d_model / heads wide)",
                          z->d_model, z->heads);
    if (z->family == MD_ZOO_BERT && z->classes < 1) return md_error_set(err, 0, 0, "bert needs classes >= 1");
  }
  builder b = {layers, max, 0};
  memset(spec, 0, sizeof *spec);
  if (z->family == MD_ZOO_RESNET50) resnet50(&b, z, spec);
  else if (z->family == MD_ZOO_BERT) bert(&b, z, spec);
  else if (z->family == MD_ZOO_DLRM) dlrm(&b, z, inputs, spec);
  else gpt(&b, z, spec);
  if (b.n > max) return md_error_set(err, 0, 0, "the model has %d layers, more than the %d a model may have", b.n, max);
  spec->nlayers = b.n;
  spec->layers = layers;
  return b.n;
}
