/*
** zoo.h: named architectures as layer specs (md_zoo_), the models published training runs use,
** so a plan can name one: ResNet-50 (Keras applications), BERT (KerasHub's BertBackbone with a
** classifier), a GPT-style decoder (GPT-3's family), Llama 2 / 3.1 and PaLM decoders and
** GraphSAGE (TF-GNN's), each with its published sizes as presets and every size overridable.
*/
#ifndef PODSIM_ZOO_H
#define PODSIM_ZOO_H

#include "models/model.h"

typedef enum { MD_ZOO_RESNET50 = 0, MD_ZOO_BERT, MD_ZOO_GPT, MD_ZOO_DLRM, MD_ZOO_GRAPHSAGE, MD_ZOO_LLAMA,
               MD_ZOO_PALM } md_zoo_family;

typedef struct md_zoo_spec {
  md_zoo_family family;   /* which architecture */
  int image_size;         /* resnet50: input height = width (224) */
  int v1_5;               /* resnet50: 1 builds ResNet-50 v1.5 as NVIDIA's and MLPerf's references
                          ** do (a block's stride on its 3x3, no bias on a convolution a batch norm
                          ** follows); 0 Keras's v1 */
  int classes;            /* resnet50, bert: the classifier's outputs (1000, 2) */
  int layers;             /* bert, gpt: transformer blocks */
  int d_model;            /* bert, gpt: the residual stream's width */
  int heads;              /* bert, gpt: attention heads, each d_model / heads wide */
  int ffn;                /* bert, gpt: the feed-forward layer's width (4 d_model) */
  int seq_len;            /* bert, gpt: tokens per example */
  int vocab;              /* bert, gpt: rows of the token table; dlrm: the most rows a table keeps
                          ** (MLPerf's --max-ind-range, 40,000,000) */
  int embedding_dim;      /* dlrm: every table's width and the bottom MLP's last (128) */
  int units;              /* graphsage: each transform's outputs (a concat layer's state is 2 units) */
  int node_features;      /* graphsage: floats per input node */
  int graph_nodes;        /* graphsage: nodes per padded subgraph (1 + 25 + 25 * 10 for fan-outs 25, 10) */
  int graph_edges;        /* graphsage: edges per padded subgraph (25 + 25 * 10) */
  int kv_heads;           /* llama, palm: key-value heads (0: heads; fewer: grouped-query, 1:
                          ** multi-query attention) */
  int head_dim;           /* llama, palm: each head's width (0: d_model / heads; PaLM's 256) */
  float rope_wavelength;  /* llama, palm: the rotary embeddings' max wavelength (Llama 2's 10000,
                          ** Llama 3's 500000) */
  int flash_attention;    /* bert, gpt, llama, palm: 1 runs attention as one fused kernel */
} md_zoo_spec;

/* The preset called name ("resnet50", "bert_base", "bert_large", "gpt_125m", "gpt_1_3b",
** "gpt_6_7b", "gpt_175b", "dlrm", "graphsage", "llama2_7b", "llama2_13b", "llama2_70b",
** "llama3_405b", "palm_8b", "palm_62b", "palm_540b", "resnet50_v1_5") into *z: 0, or -1 when no
** preset has that name. */
int md_zoo_preset(const char *name, md_zoo_spec *z);
/* Preset i's name, in the order above; NULL past the last. */
const char *md_zoo_preset_name(int i);
/* The architecture's layers (Keras's names) into layers[0..max), its model inputs, when it has
** several (dlrm), into inputs[0..MD_MAX_MODEL_INPUTS) (NULL will do for the others), and its input into *spec (pointing at
** layers and inputs): the layer count, or -1 with err filled when a size is out of range or max
** is too small. */
int md_zoo_build(const md_zoo_spec *z, md_layer_spec *layers, int max, md_model_input *inputs, md_model_spec *spec,
                 md_error *err);

#endif
