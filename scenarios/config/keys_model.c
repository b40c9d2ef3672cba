/*
** keys_model.c: the model and optimizer sections: input, layers, loss, init; optimizer kinds.
*/
#include "scenarios/config/configInt.h"

#include <assert.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "models/keras.h"

/* Index = md_activation. */
static const char *const ACTIVATIONS[] = {"none", "relu", "sigmoid", "tanh", "softmax", "gelu", "gelu_tanh",
                                          "swish", NULL};
static const char *const PADDINGS[] = {"valid", "same", NULL};
/* Index = md_combiner. */
static const char *const COMBINERS[] = {"mean", "sum", "none", NULL};
/* Index = md_loss_kind. */
static const char *const LOSSES[] = {"sparse_categorical_crossentropy", "categorical_crossentropy",
                                     "binary_crossentropy", "mean_squared_error", NULL};
static const char *const INITS[] = {"glorot_uniform", NULL};
/* Index = md_dtype_policy. */
static const char *const POLICIES[] = {"float32", "mixed_bfloat16", "mixed_float16", NULL};

/* A list of 1..max positive ints into out[] (*n of them); k gives their range. */
int cfg_int_list(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, int max, int *out,
                 int *n, const char *expected) {
  char sub[256], fb[80];
  if (v->kind != YT_SEQ || v->n < 1 || v->n > max)
    return cfg_fail(c, v, path, "expected %s, found %s", expected,
                    v->kind == YT_SEQ ? (v->n ? "too many entries" : "an empty list") : cfg_found(v, fb, sizeof fb));
  for (int i = 0; i < v->n; i++) {
    long long x;
    base_format(sub, sizeof sub, "%s[%d]", path, i);
    if (cfg_get_int(c, k, v->items[i], sub, &x)) return -1;
    out[i] = (int)x;
  }
  *n = v->n;
  return 0;
}

/* The elements of one example of SHAPE (its -1, an inferred size, left out), at most k->hi. A
** double: four sizes up to 1e8 multiply to 1e32, past any integer type (the message said 0). */
static int elements_at_most(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, const md_shape *shape,
                            double *elements) {
  *elements = 1;
  for (int i = 0; i < shape->rank; i++)
    if (shape->dim[i] > 0) *elements *= shape->dim[i];
  if (*elements > k->hi)
    return cfg_fail(c, v, path, "expected at most %.0f elements per example, found %.15g", k->hi, *elements);
  return 0;
}

int cfg_example_shape(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, md_shape *shape,
                      int *elements) {
  double n;
  if (cfg_int_list(c, k, v, path, MD_MAX_SHAPE_RANK, shape->dim, &shape->rank,
               "one example's shape as a list of 1 to 4 sizes, such as [32, 32, 3]"))
    return -1;
  if (elements_at_most(c, k, v, path, shape, &n)) return -1;
  *elements = (int)n;
  return 0;
}

/* model.input.shape: one example's shape, [h, w, c] for images (channels last, as Keras). */
static int input_shape_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  return cfg_example_shape(c, k, v, path, &((scenario *)base)->input_shape, &((scenario *)base)->input_features);
}

/* model.input.graph: the padded sizes of one example's subgraph (models/layers/graph.c). */
static const key_spec GRAPH_INPUT_KEYS[] = {
  {.key = "nodes", .doc = "nodes per example, padding included (the seed node first)", .type = V_INT, .st = S_INT, OFF(scenario, graph_nodes), .lo = 1, .hi = 1e6, .required = 1},
  {.key = "edges", .doc = "edges per example, padding included", .type = V_INT, .st = S_INT, OFF(scenario, graph_edges), .lo = 0, .hi = 1e7, .required = 1},
  {.key = "features", .doc = "floats per node", .type = V_INT, .st = S_INT, OFF(scenario, graph_features), .lo = 1, .hi = 1e6, .required = 1},
  END};

/* model.input: {features: N}, {shape: [h, w, c]}, {ids: N, vocab: V} or {graph: {nodes, edges,
** features}}. */
static const key_spec INPUT_KEYS[] = {
  {.key = "graph", .type = V_MAP, .sub = GRAPH_INPUT_KEYS},
  {.key = "features", .type = V_INT, .st = S_INT, OFF(scenario, input_features), .lo = 1, .hi = 1e8},
  {.key = "shape", .type = V_FN, .fn = input_shape_fn, .lo = 1, .hi = 1e8,
   .schema = "{\"type\":\"array\",\"minItems\":1,\"maxItems\":4,\"items\":{\"type\":\"integer\",\"minimum\":1},\"description\":\"one example's shape, [h, w, c] for images (channels last), at most 1e8 elements\"}"},
  {.key = "ids", .type = V_INT, .st = S_INT, OFF(scenario, input_ids), .lo = 1, .hi = 1e6},
  {.key = "vocab", .type = V_INT, .st = S_INT, OFF(scenario, input_vocab), .lo = 1, .hi = 2e9},
  END};

static int input_post(cfg_ctx *c, const yt_node *map, const char *path, void *base) {
  const yt_node *f = yt_get_key(map, "features"), *ids = yt_get_key(map, "ids"), *vocab = yt_get_key(map, "vocab");
  const yt_node *shape = yt_get_key(map, "shape"), *graph = yt_get_key(map, "graph");
  char sub[256];
  scenario *s = base;
  if (graph && map->n > 1) {
    cfg_join(sub, sizeof sub, path, "graph");
    return cfg_fail(c, graph, sub, "a graph input is the only key of model.input (it packs node features and "
                    "edges into one row)");
  }
  if (graph) {
    long long width = (long long)s->graph_nodes * s->graph_features + 2LL * s->graph_edges;
    cfg_join(sub, sizeof sub, path, "graph");
    if (width > 1e8) return cfg_fail(c, graph, sub, "expected at most 1e8 floats per packed example, found %lld", width);
    s->input_features = (int)width;
    return 0;
  }
  if (shape && (f || ids)) {
    const yt_node *later = cfg_later_key(map, "shape", f ? "features" : "ids");
    cfg_join(sub, sizeof sub, path, later->text);
    return cfg_fail(c, later, sub, "give one of features (a row of floats), shape (a float tensor per "
                    "example) or ids with vocab (integer input)");
  }
  if (shape && vocab) {
    cfg_join(sub, sizeof sub, path, "vocab");
    return cfg_fail(c, vocab, sub, "vocab goes with ids, not with shape");
  }
  if (shape) return 0;
  if (f && ids) {
    const yt_node *later = (ids->line > f->line || (ids->line == f->line && ids->col > f->col)) ? ids : f;
    cfg_join(sub, sizeof sub, path, later->text);
    return cfg_fail(c, later, sub, "give either features (float input) or ids with vocab (integer input), not both");
  }
  if (!f && !ids) {
    cfg_join(sub, sizeof sub, path, "features");
    return cfg_fail(c, map, sub, "missing required key \"features\" (or \"shape\", or \"ids\" with \"vocab\")");
  }
  if (ids && !vocab) {
    cfg_join(sub, sizeof sub, path, "vocab");
    return cfg_fail(c, map, sub, "missing required key \"vocab\" (ids need their vocabulary size)");
  }
  if (f && vocab) {
    cfg_join(sub, sizeof sub, path, "vocab");
    return cfg_fail(c, vocab, sub, "vocab goes with ids, not with features");
  }
  return 0;
}

/* model.layers[i].*.logical_device: stored per layer in the scenario (a placement, not a layer
** property: models/ knows nothing of devices). base is the layer's md_layer_spec. */
static int logical_device_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  static const key_spec range = {.key = "", .type = V_INT, .lo = 0, .hi = 4096};
  long long x;
  (void)k;
  if (cfg_get_int(c, &range, v, path, &x)) return -1;
  c->s->logical_device[(md_layer_spec *)base - c->s->layers] = (int)x;
  return 0;
}

/* A window size (kernel_size, strides, dilation_rate, pool_size) as Keras takes it: one int for
** both dimensions, or [height, width]. Stored as int[2] at k->off of the layer. */
static int pair_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  int *pair = (int *)((char *)base + k->off), n = 0;
  if (v->kind == YT_SEQ) {
    if (cfg_int_list(c, k, v, path, 2, pair, &n, "an integer or [height, width]")) return -1;
    if (n == 2) return 0;
    return cfg_fail(c, v, path, "expected an integer or [height, width], found a list of 1");
  }
  long long x;
  if (cfg_get_int(c, k, v, path, &x)) return -1;
  pair[0] = pair[1] = (int)x;
  return 0;
}

/* reshape.target_shape: one example's output, -1 once for a size inferred from the input. */
static int target_shape_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  md_shape *shape = &((md_layer_spec *)base)->target_shape;
  if (cfg_int_list(c, k, v, path, MD_MAX_SHAPE_RANK, shape->dim, &shape->rank,
               "one example's output shape as a list of 1 to 4 sizes, one of them -1 at most"))
    return -1;
  for (int i = 0, inferred = 0; i < shape->rank; i++) {
    if (shape->dim[i] == 0)
      return cfg_fail(c, v->items[i], path, "expected a size >= 1 or -1 (inferred), found 0");
    if (shape->dim[i] == -1 && inferred++)
      return cfg_fail(c, v->items[i], path, "expected -1 (an inferred size) at most once");
  }
  double elements;
  return elements_at_most(c, k, v, path, shape, &elements);
}

/* softmax.axis: Keras's count, the batch being axis 0, so 1..4 or -1..-4 (the default -1). */
static int axis_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  long long x;
  if (cfg_get_int(c, k, v, path, &x)) return -1;
  if (x == 0) return cfg_fail(c, v, path, "expected an axis of one example (1..4 or -1..-4), found 0: axis 0 is the batch");
  ((md_layer_spec *)base)->axis = (int)x;
  return 0;
}

/* model.layers[i].*.inputs: the form only (a list of 1..MD_LAYER_MAX_INPUTS layer names or
** indices); layers_fn resolves the names once every layer's is known. */
static int inputs_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  char fb[80];
  (void)k;
  if (v->kind != YT_SEQ || v->n < 1 || v->n > MD_LAYER_MAX_INPUTS)
    return cfg_fail(c, v, path, "expected a list of 1 to %d earlier layers' names or indices (or input), found %s",
                    MD_LAYER_MAX_INPUTS, v->kind == YT_SEQ ? (v->n ? "too many entries" : "an empty list")
                    : cfg_found(v, fb, sizeof fb));
  for (int i = 0; i < v->n; i++)
    if (v->items[i]->kind != YT_SCALAR || !v->items[i]->text[0])
      return cfg_fail(c, v->items[i], path, "expected a layer's name or index, found %s",
                      cfg_found(v->items[i], fb, sizeof fb));
  ((md_layer_spec *)base)->ninputs = v->n;
  return 0;
}

#define LAYER_INT(name, field, low, high, ...) \
  {.key = name, .type = V_INT, .st = S_INT, OFF(md_layer_spec, field), .lo = low, .hi = high, __VA_ARGS__}
#define PAIR_SCHEMA "{\"anyOf\":[{\"type\":\"integer\",\"minimum\":1,\"maximum\":4096},{\"type\":\"array\",\"minItems\":2,\"maxItems\":2,\"items\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":4096}}],\"description\":\"an integer for both dimensions, or [height, width]\"}"
#define LAYER_PAIR(name, field, low) \
  {.key = name, .type = V_FN, .fn = pair_fn, OFF(md_layer_spec, field), .lo = low, .hi = 4096, .schema = PAIR_SCHEMA}
#define ACTIVATION {.key = "activation", .type = V_ENUM, .names = ACTIVATIONS, .st = S_INT, OFF(md_layer_spec, activation)}
#define USE_BIAS {.key = "use_bias", .type = V_BOOL, .st = S_INT, OFF(md_layer_spec, use_bias)}
#define PADDING {.key = "padding", .type = V_ENUM, .names = PADDINGS, .st = S_INT, OFF(md_layer_spec, padding)}
#define EPSILON {.key = "epsilon", .type = V_NUM, .st = S_FLOAT, OFF(md_layer_spec, epsilon), .lo = 0, .lo_open = 1}
/* The keys every layer takes: where it runs, its name and what it reads. */
#define LOGICAL_DEVICE {.key = "logical_device", .type = V_FN, .fn = logical_device_fn, \
  .schema = "{\"type\":\"integer\",\"minimum\":0,\"maximum\":4096,\"description\":\"tpu: the logical device the layer runs on (assign_to_logical_device)\"}"}, \
  {.key = "name", .doc = "the layer's name (default Keras's: kind, kind_1, ...), for other layers' inputs", .type = V_STR, .st = S_CHARS, OFF(md_layer_spec, name), .len = MD_LAYER_NAME_MAX}, \
  {.key = "inputs", .type = V_FN, .fn = inputs_fn, \
   .schema = "{\"type\":\"array\",\"minItems\":1,\"maxItems\":8,\"items\":{\"type\":[\"string\",\"integer\"]},\"description\":\"the earlier layers it reads, by name or index, or input (default: the layer before)\"}"}

static const key_spec DENSE_KEYS[] = {
  LAYER_INT("units", units, 1, 1e7, .required = 1), ACTIVATION, USE_BIAS, LOGICAL_DEVICE, END};
static const key_spec EMBEDDING_KEYS[] = {
  LAYER_INT("vocab", vocab, 1, 2e9, .required = 1),
  LAYER_INT("dim", dim, 1, 1e6, .required = 1),
  {.key = "combiner", .type = V_ENUM, .names = COMBINERS, .st = S_INT, OFF(md_layer_spec, combiner)},
  LOGICAL_DEVICE, END};
static const key_spec TOKEN_AND_POSITION_EMBEDDING_KEYS[] = {
  LAYER_INT("vocab", vocab, 1, 2e9, .required = 1),
  LAYER_INT("dim", dim, 1, 1e6, .required = 1),
  LAYER_INT("sequence_length", sequence_length, 1, 1e7),
  LOGICAL_DEVICE, END};
static const key_spec CONV2D_KEYS[] = {
  LAYER_INT("filters", filters, 1, 1e6, .required = 1),
  {.key = "kernel_size", .type = V_FN, .fn = pair_fn, .schema = PAIR_SCHEMA, OFF(md_layer_spec, kernel_size), .lo = 1, .hi = 4096, .required = 1},
  LAYER_PAIR("strides", strides, 1), LAYER_PAIR("dilation_rate", dilation_rate, 1), PADDING, ACTIVATION,
  USE_BIAS, LOGICAL_DEVICE, END};
static const key_spec DEPTHWISE_CONV2D_KEYS[] = {
  {.key = "kernel_size", .type = V_FN, .fn = pair_fn, .schema = PAIR_SCHEMA, OFF(md_layer_spec, kernel_size), .lo = 1, .hi = 4096, .required = 1},
  LAYER_INT("depth_multiplier", depth_multiplier, 1, 1e4),
  LAYER_PAIR("strides", strides, 1), LAYER_PAIR("dilation_rate", dilation_rate, 1), PADDING, ACTIVATION,
  USE_BIAS, LOGICAL_DEVICE, END};
static const key_spec POOLING2D_KEYS[] = {
  LAYER_PAIR("pool_size", pool_size, 1), LAYER_PAIR("strides", strides, 1), PADDING, LOGICAL_DEVICE, END};
static const key_spec SHAPE_ONLY_KEYS[] = {LOGICAL_DEVICE, END};
static const key_spec RESHAPE_KEYS[] = {
  {.key = "target_shape", .type = V_FN, .fn = target_shape_fn, .lo = -1, .hi = 1e8, .required = 1,
   .schema = "{\"type\":\"array\",\"minItems\":1,\"maxItems\":4,\"items\":{\"type\":\"integer\",\"minimum\":-1,\"not\":{\"const\":0}},\"description\":\"one example's output shape, -1 at most once for a size inferred from the input\"}"},
  LOGICAL_DEVICE, END};
static const key_spec DROPOUT_KEYS[] = {
  {.key = "rate", .type = V_NUM, .st = S_FLOAT, OFF(md_layer_spec, rate), .lo = 0, .hi = 1, .hi_open = 1, .required = 1},
  {.key = "seed", .type = V_INT, .st = S_LONG, OFF(md_layer_spec, seed), .lo = -9007199254740992.0,
   .hi = 9007199254740992.0,
   .doc = "draw the masks as Keras 3's TensorFlow backend does for Dropout(seed=...): its SeedGenerator's "
          "seed, one seed drawn a training call, Philox stateless uniforms (TF's masks bit for bit)"},
  {.key = "seed_draws", .type = V_INT, .st = S_LONG, OFF(md_layer_spec, seed_draws), .lo = 0,
   .hi = 9007199254740992.0,
   .doc = "with seed: the draws the layer's SeedGenerator made before the run (its state[1]; default 0)"},
  LOGICAL_DEVICE, END};

/* A seed selects Keras's draws (md_layer_spec.seeded); seed_draws counts them, so needs a seed. */
static int dropout_post(cfg_ctx *c, const yt_node *map, const char *path, void *base) {
  md_layer_spec *l = base;
  char sub[256];
  l->seeded = yt_get(map, "seed") != NULL;
  if (!l->seeded && yt_get(map, "seed_draws")) {
    cfg_join(sub, sizeof sub, path, "seed_draws");
    return cfg_fail(c, yt_get_key(map, "seed_draws"), sub, "seed_draws counts a seed's draws: give seed too");
  }
  return 0;
}
static const key_spec LAYER_NORMALIZATION_KEYS[] = {EPSILON, LOGICAL_DEVICE, END};
static const key_spec BATCH_NORMALIZATION_KEYS[] = {
  {.key = "momentum", .type = V_NUM, .st = S_FLOAT, OFF(md_layer_spec, momentum), .lo = 0, .hi = 1, .hi_open = 1},
  {.key = "synchronized", .type = V_BOOL, .st = S_INT, OFF(md_layer_spec, synchronized),
   .doc = "normalise a train step by the statistics of every replica's batch (Keras's synchronized=True, "
          "SyncBatchNormalization), all-reduced over the replicas"},
  EPSILON, LOGICAL_DEVICE, END};
static const key_spec ACTIVATION_KEYS[] = {
  {.key = "activation", .type = V_ENUM, .names = ACTIVATIONS, .st = S_INT, OFF(md_layer_spec, activation), .required = 1},
  LOGICAL_DEVICE, END};
#define AXIS {.key = "axis", .type = V_FN, .fn = axis_fn, .lo = -4, .hi = 4, \
  .schema = "{\"type\":\"integer\",\"minimum\":-4,\"maximum\":4,\"not\":{\"const\":0},\"description\":\"Keras's axis, the batch being 0: 1..4 or -1..-4\"}"}
static const key_spec SOFTMAX_KEYS[] = {AXIS, LOGICAL_DEVICE, END};
static const key_spec CONCATENATE_KEYS[] = {AXIS, LOGICAL_DEVICE, END};
/* Index = md_combiner (graph_sage pools by mean or sum only). */
static const char *const REDUCE_TYPES[] = {"mean", "sum", NULL};
/* Index = md_combine_type. */
static const char *const COMBINE_TYPES[] = {"sum", "concat", NULL};
static const key_spec GRAPH_SAGE_KEYS[] = {
  LAYER_INT("units", units, 1, 1e7, .required = 1),
  {.key = "reduce_type", .doc = "how neighbours' states pool at a node (TF-GNN's reduce_type; default mean)",
   .type = V_ENUM, .names = REDUCE_TYPES, .st = S_INT, OFF(md_layer_spec, combiner)},
  {.key = "combine_type", .doc = "own and pooled states summed (default) or concatenated (TF-GNN's combine_type)",
   .type = V_ENUM, .names = COMBINE_TYPES, .st = S_INT, OFF(md_layer_spec, combine_type)},
  ACTIVATION, USE_BIAS, LOGICAL_DEVICE, END};
static const key_spec MULTI_HEAD_ATTENTION_KEYS[] = {
  LAYER_INT("num_heads", num_heads, 1, 4096, .required = 1),
  LAYER_INT("key_dim", key_dim, 1, 1e5, .required = 1),
  LAYER_INT("value_dim", value_dim, 1, 1e5),
  {.key = "use_causal_mask", .type = V_BOOL, .st = S_INT, OFF(md_layer_spec, use_causal_mask)},
  LAYER_INT("num_key_value_heads", num_key_value_heads, 1, 4096,
            .doc = "key and value heads, dividing num_heads (grouped-query attention; 1: multi-query; default num_heads)"),
  {.key = "rope_max_wavelength", .doc = "rotary position embeddings of query and key with this wavelength (Llama's 10000); default none",
   .type = V_NUM, .st = S_FLOAT, OFF(md_layer_spec, rope_max_wavelength), .lo = 0, .lo_open = 1},
  {.key = "flash_attention", .doc = "one fused kernel for scores, softmax and context that keeps no S x S scores (Keras 3's flash_attention)",
   .type = V_BOOL, .st = S_INT, OFF(md_layer_spec, flash_attention)},
  {.key = "dropout", .doc = "the fraction of attention probabilities dropped in a train step (Keras's dropout; BERT's "
   "attention_probs_dropout_prob 0.1); not with flash_attention; default 0",
   .type = V_NUM, .st = S_FLOAT, OFF(md_layer_spec, rate), .lo = 0, .hi = 1, .hi_open = 1},
  USE_BIAS, LOGICAL_DEVICE, END};

/* Every layer kind, by Keras's snake-case name (md_layer_kind_name), and its keys. */
static const key_spec LAYER_KINDS[] = {
  {.key = "dense", .type = V_MAP, .sub = DENSE_KEYS},
  {.key = "embedding", .type = V_MAP, .sub = EMBEDDING_KEYS},
  {.key = "conv2d", .type = V_MAP, .sub = CONV2D_KEYS},
  {.key = "depthwise_conv2d", .type = V_MAP, .sub = DEPTHWISE_CONV2D_KEYS},
  {.key = "max_pooling2d", .type = V_MAP, .sub = POOLING2D_KEYS},
  {.key = "average_pooling2d", .type = V_MAP, .sub = POOLING2D_KEYS},
  {.key = "global_average_pooling2d", .type = V_MAP, .sub = SHAPE_ONLY_KEYS},
  {.key = "flatten", .type = V_MAP, .sub = SHAPE_ONLY_KEYS},
  {.key = "reshape", .type = V_MAP, .sub = RESHAPE_KEYS},
  {.key = "dropout", .type = V_MAP, .sub = DROPOUT_KEYS, .post = dropout_post},
  {.key = "layer_normalization", .type = V_MAP, .sub = LAYER_NORMALIZATION_KEYS},
  {.key = "rms_normalization", .type = V_MAP, .sub = LAYER_NORMALIZATION_KEYS},
  {.key = "batch_normalization", .type = V_MAP, .sub = BATCH_NORMALIZATION_KEYS},
  {.key = "activation", .type = V_MAP, .sub = ACTIVATION_KEYS},
  {.key = "softmax", .type = V_MAP, .sub = SOFTMAX_KEYS},
  {.key = "multi_head_attention", .type = V_MAP, .sub = MULTI_HEAD_ATTENTION_KEYS},
  {.key = "token_and_position_embedding", .type = V_MAP, .sub = TOKEN_AND_POSITION_EMBEDDING_KEYS},
  {.key = "add", .type = V_MAP, .sub = SHAPE_ONLY_KEYS},
  {.key = "multiply", .type = V_MAP, .sub = SHAPE_ONLY_KEYS},
  {.key = "concatenate", .type = V_MAP, .sub = CONCATENATE_KEYS},
  {.key = "dot_interaction", .type = V_MAP, .sub = SHAPE_ONLY_KEYS},
  {.key = "graph_node_features", .type = V_MAP, .sub = SHAPE_ONLY_KEYS},
  {.key = "graph_sage", .type = V_MAP, .sub = GRAPH_SAGE_KEYS},
  {.key = "unit_normalization", .type = V_MAP, .sub = SHAPE_ONLY_KEYS},
  {.key = "readout_first_node", .type = V_MAP, .sub = SHAPE_ONLY_KEYS},
  END};
_Static_assert(sizeof LAYER_KINDS / sizeof LAYER_KINDS[0] == MD_LAYER_KIND_COUNT + 1,
               "every md_layer_kind has its keys in LAYER_KINDS");

/* input_index's error: below every MD_MODEL_INPUT(k). */
#define INPUT_ERROR INT_MIN

/* The layer input `at` names among the n layers' names: an index (0-based), `input` (the model's
** input), a model input's name (MD_MODEL_INPUT(k)) or a layer's name; an earlier layer only.
** INPUT_ERROR after an error. */
static int input_index(cfg_ctx *c, const yt_node *at, const char *path, int i, char (*names)[MD_LAYER_NAME_MAX],
                       int n) {
  if (cfg_is_int_text(at->text)) {
    long long j = strtoll(at->text, NULL, 10);
    if (j >= 0 && j < i) return (int)j;
    cfg_fail(c, at, path, "expected the index of an earlier layer (0..%d), found %s%s", i - 1, at->text,
             j >= i && j < n ? ": a layer reads only the layers before it" : "");
    return INPUT_ERROR;
  }
  if (!strcmp(at->text, "input")) return MD_INPUT_MODEL;
  int model_input = cfg_model_input_index(c, at->text);
  if (model_input < 0) return model_input;
  for (int j = 0; j < n; j++) {
    if (strcmp(names[j], at->text)) continue;
    if (j < i) return j;
    cfg_fail(c, at, path, "%s is layer %d, %s: a layer reads only the layers before it (or input)", at->text, j,
             j == i ? "this one" : "after this one");
    return INPUT_ERROR;
  }
  cfg_fail(c, at, path, "no layer is named %s (layers are named as Keras names them, conv2d, conv2d_1, ..., "
           "or by their name key; input is the model's input)", at->text);
  return INPUT_ERROR;
}

/* Names every layer as the model will and resolves each inputs list into indices; two layers
** may not share a name. */
static int resolve_inputs(cfg_ctx *c, const yt_node *v, const char *path) {
  scenario *s = c->s;
  char sub[256], at[272], (*names)[MD_LAYER_NAME_MAX] = base_xcalloc((size_t)v->n, sizeof *names);
  int rc = 0;
  md_layer_names(s->layers, v->n, names);
  for (int i = 0; i < v->n && rc == 0; i++) {
    const yt_node *kind = v->items[i]->items[0];
    base_format(sub, sizeof sub, "%s[%d].%s", path, i, v->items[i]->keys[0]->text);
    for (int j = 0; j < i && rc == 0; j++)
      if (!strcmp(names[i], names[j])) {
        const yt_node *at = yt_get(kind, "name") ? yt_get(kind, "name") : v->items[i];
        rc = cfg_fail(c, at, sub, "two layers are named %s (layers %d and %d): give one a different name", names[i],
                      j, i);
      }
    if (rc == 0 && cfg_model_input_index(c, names[i]) < 0) {
      const yt_node *at = yt_get(kind, "name") ? yt_get(kind, "name") : v->items[i];
      rc = cfg_fail(c, at, sub, "layer %d is named %s, as a model input is: give it a different name", i, names[i]);
    }
    const yt_node *in = yt_get(kind, "inputs");
    cfg_join(at, sizeof at, sub, "inputs");
    for (int k = 0; in != NULL && k < in->n && rc == 0; k++) {
      s->layers[i].inputs[k] = input_index(c, in->items[k], at, i, names, v->n);
      if (s->layers[i].inputs[k] == INPUT_ERROR) rc = -1;
    }
  }
  free(names);
  return rc;
}

static int layers_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  scenario *s = c->s;
  char sub[256], fb[80];
  (void)k; (void)base;
  if (cfg_get_seq(c, v, path, "a sequence of layers such as [{dense: {units: 2}}]")) return -1;
  if (v->n > SCN_MAX_LAYERS)
    return cfg_fail(c, v->items[SCN_MAX_LAYERS], path, "expected at most %d layers, found %d", SCN_MAX_LAYERS, v->n);
  for (int i = 0; i < v->n; i++) {
    const yt_node *item = v->items[i];
    md_layer_spec *l = &s->layers[i];
    base_format(sub, sizeof sub, "%s[%d]", path, i);
    if (item->kind != YT_MAP || item->n != 1)
      return cfg_fail(c, item, sub, "expected one layer as {KIND: {...}} such as {dense: {units: 10}} or "
                      "{flatten: {}}, found %s",
                      item->kind == YT_MAP ? "a mapping with several keys" : cfg_found(item, fb, sizeof fb));
    memset(l, 0, sizeof *l);
    l->use_bias = 1;
    l->activation = MD_ACT_NONE;
    l->combiner = MD_COMBINER_MEAN;
    if (cfg_walk_map(c, item, sub, LAYER_KINDS, l)) return -1;
    /* LAYER_KINDS uses md_layer_kind_name's names (test_load checks every one): the walk
    ** accepted a kind the registry has. */
    int kind = md_layer_kind_from_name(item->keys[0]->text);
    assert(kind >= 0);
    l->kind = (md_layer_kind)kind;
    if (scenario_layer_reads_ids(l->kind) && i > 0 && !yt_path(c->root, "model.inputs"))
      return cfg_fail(c, item->keys[0], sub, "%s must be the first layer (it reads the integer ids of "
                      "model.input), found it as layer %d", item->keys[0]->text, i);
  }
  s->nlayers = v->n;
  return resolve_inputs(c, v, path);
}

/* model.keras: a Keras model config (model.to_json(), tfjs's model.toJSON()) in place of input and
** layers; its errors name the JSON file's line and column. */
static int keras_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  scenario *s = c->s;
  const char *rel;
  char file[SCN_PATH_MAX];
  (void)k; (void)base;
  if (cfg_get_str(c, v, path, &rel) || cfg_resolve_file(c, v, path, rel, file, sizeof file)) return -1;
  md_keras_model km;
  md_error me = {0};
  if (md_keras_read(file, &km, &me)) return cfg_fail(c, v, path, "%s:%d:%d: %s", rel, me.line, me.col, me.msg);
  int rc = 0;
  /* The layers' DTypePolicy is the model's dtype_policy; one given beside keras must agree. */
  const yt_node *policy = yt_path(c->root, "model.dtype_policy");
  if (km.nlayers > SCN_MAX_LAYERS) {
    rc = cfg_fail(c, v, path, "expected at most %d layers, found %d in %s", SCN_MAX_LAYERS, km.nlayers, rel);
  } else if (policy && policy->kind == YT_SCALAR && strcmp(policy->text, POLICIES[km.dtype_policy])) {
    rc = cfg_fail(c, policy, "model.dtype_policy", "%s: the layers of %s have the dtype policy %s: give the same, or "
                  "leave model.dtype_policy out", policy->text, rel, POLICIES[km.dtype_policy]);
  } else {
    s->dtype_policy = km.dtype_policy;
    memcpy(s->layers, km.layers, sizeof *km.layers * (size_t)km.nlayers);
    s->nlayers = km.nlayers;
    s->input_ids = km.input_ids;
    s->input_vocab = km.input_ids ? km.layers[0].vocab : 0;
    s->input_shape = km.input_ids ? (md_shape){0} : km.input_shape;
    s->input_features = km.input_ids ? 0 : (int)md_shape_size(&km.input_shape);
    /* Several InputLayers: the model's inputs, a batch row holding their columns in order. */
    s->ninputs = km.ninputs > 1 ? km.ninputs : 0;
    memcpy(s->inputs, km.inputs, sizeof km.inputs);
    if (s->ninputs > 0) {
      s->input_shape = (md_shape){0};
      s->input_features = md_inputs_width(s->inputs, s->ninputs);
    }
  }
  md_keras_free(&km);
  return rc;
}

/* model.zoo: a preset's name, or {preset: NAME, SIZE: N, ...} overriding its sizes. */
static const key_spec ZOO_KEYS[] = {
  {.key = "preset", .type = V_STR, .required = 1},
  {.key = "image_size", .doc = "resnet50: input height and width", .type = V_INT, .st = S_INT, OFF(md_zoo_spec, image_size), .lo = 32, .hi = 4096},
  {.key = "classes", .doc = "resnet50, bert: the classifier's outputs", .type = V_INT, .st = S_INT, OFF(md_zoo_spec, classes), .lo = 1, .hi = 1e6},
  {.key = "layers", .doc = "bert, gpt, llama, palm: transformer blocks", .type = V_INT, .st = S_INT, OFF(md_zoo_spec, layers), .lo = 1, .hi = 200},
  {.key = "d_model", .doc = "bert, gpt, llama, palm: the model's width", .type = V_INT, .st = S_INT, OFF(md_zoo_spec, d_model), .lo = 1, .hi = 1e6},
  {.key = "heads", .doc = "bert, gpt, llama, palm: attention heads (dividing d_model)", .type = V_INT, .st = S_INT, OFF(md_zoo_spec, heads), .lo = 1, .hi = 4096},
  {.key = "ffn", .doc = "bert, gpt, llama, palm: the feed-forward width", .type = V_INT, .st = S_INT, OFF(md_zoo_spec, ffn), .lo = 1, .hi = 1e7},
  {.key = "seq_len", .doc = "bert, gpt, llama, palm: tokens per example", .type = V_INT, .st = S_INT, OFF(md_zoo_spec, seq_len), .lo = 1, .hi = 1e6},
  {.key = "vocab", .doc = "bert, gpt, llama, palm: rows of the token table; dlrm: the most rows a table keeps (MLPerf's max-ind-range)", .type = V_INT, .st = S_INT, OFF(md_zoo_spec, vocab), .lo = 1, .hi = 2e9},
  {.key = "embedding_dim", .doc = "dlrm: every table's width and the bottom MLP's output", .type = V_INT, .st = S_INT, OFF(md_zoo_spec, embedding_dim), .lo = 1, .hi = 1e5},
  {.key = "units", .doc = "graphsage: each transform's outputs", .type = V_INT, .st = S_INT, OFF(md_zoo_spec, units), .lo = 1, .hi = 1e6},
  {.key = "node_features", .doc = "graphsage: floats per node", .type = V_INT, .st = S_INT, OFF(md_zoo_spec, node_features), .lo = 1, .hi = 1e6},
  {.key = "nodes", .doc = "graphsage: nodes per padded subgraph", .type = V_INT, .st = S_INT, OFF(md_zoo_spec, graph_nodes), .lo = 1, .hi = 1e6},
  {.key = "edges", .doc = "graphsage: edges per padded subgraph", .type = V_INT, .st = S_INT, OFF(md_zoo_spec, graph_edges), .lo = 0, .hi = 1e7},
  {.key = "kv_heads", .doc = "llama, palm: key-value heads dividing heads (grouped-query attention; 1: multi-query)", .type = V_INT, .st = S_INT, OFF(md_zoo_spec, kv_heads), .lo = 1, .hi = 4096},
  {.key = "head_dim", .doc = "llama, palm: each head's width (default d_model / heads)", .type = V_INT, .st = S_INT, OFF(md_zoo_spec, head_dim), .lo = 1, .hi = 1e5},
  {.key = "rope_wavelength", .doc = "llama, palm: the rotary embeddings' max wavelength", .type = V_NUM, .st = S_FLOAT, OFF(md_zoo_spec, rope_wavelength), .lo = 0, .lo_open = 1},
  {.key = "flash_attention", .doc = "bert, gpt, llama, palm: attention as one fused kernel keeping no S x S scores (Keras 3's flash_attention)", .type = V_BOOL, .st = S_INT, OFF(md_zoo_spec, flash_attention)},
  END};

static int zoo_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  scenario *s = c->s;
  char names[512] = "", sub[256];
  (void)k; (void)base;
  const yt_node *preset = v->kind == YT_MAP ? yt_get(v, "preset") : v;
  const char *name = NULL;
  if (v->kind == YT_MAP) cfg_join(sub, sizeof sub, path, "preset");
  else base_format(sub, sizeof sub, "%s", path);
  if (preset == NULL) return cfg_fail(c, v, sub, "missing required key \"preset\"");
  if (cfg_get_str(c, preset, sub, &name)) return -1;
  for (int i = 0; md_zoo_preset_name(i); i++)
    base_format(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? " | " : "", md_zoo_preset_name(i));
  if (md_zoo_preset(name, &s->zoo) != 0) return cfg_fail(c, preset, sub, "expected one of %s, found \"%s\"", names, name);
  s->has_zoo = 1;
  return v->kind == YT_MAP ? cfg_walk_map(c, v, path, ZOO_KEYS, &s->zoo) : 0;
}

/* The zoo's layers into the scenario, as if the file had listed them. */
static int build_zoo(cfg_ctx *c, const yt_node *zoo, const char *path) {
  scenario *s = c->s;
  md_model_spec spec;
  md_error me = {0};
  if (md_zoo_build(&s->zoo, s->layers, SCN_MAX_LAYERS, s->inputs, &spec, &me) < 0) return cfg_fail(c, zoo, path, "%s", me.msg);
  s->nlayers = spec.nlayers;
  s->ninputs = spec.ninputs;
  if (spec.ninputs > 0) s->input_features = md_inputs_width(spec.inputs, spec.ninputs);
  s->input_ids = spec.input_ids;
  s->input_vocab = spec.input_vocab;
  s->input_shape = spec.input_shape;
  if (spec.ninputs == 0) s->input_features = spec.input_ids ? 0 : (int)md_shape_size(&spec.input_shape);
  if (s->zoo.family == MD_ZOO_GRAPHSAGE) {  /* its input is a graph: dataset.graph reads these */
    s->graph_nodes = s->zoo.graph_nodes;
    s->graph_edges = s->zoo.graph_edges;
    s->graph_features = s->zoo.node_features;
  }
  return 0;
}

int cfg_model_post(cfg_ctx *c, const yt_node *map, const char *path, void *base) {
  char sub[256];
  (void)base;
  const yt_node *zoo = yt_get_key(map, "zoo");
  if (zoo) {
    static const char *const OTHERS[] = {"input", "inputs", "layers", "keras", NULL};
    for (int i = 0; OTHERS[i]; i++)
      if (yt_get(map, OTHERS[i])) {
        const yt_node *later = cfg_later_key(map, "zoo", OTHERS[i]);
        cfg_join(sub, sizeof sub, path, later->text);
        return cfg_fail(c, later, sub, "give either zoo (a named architecture) or %s, not both", OTHERS[i]);
      }
    cfg_join(sub, sizeof sub, path, "zoo");
    return build_zoo(c, yt_get(map, "zoo"), sub);
  }
  const yt_node *keras = yt_get_key(map, "keras");
  const char *given = yt_get(map, "input") ? "input" : yt_get(map, "inputs") ? "inputs" : "layers";
  if (keras && yt_get(map, given)) {
    const yt_node *later = cfg_later_key(map, "keras", given);
    cfg_join(sub, sizeof sub, path, later->text);
    return cfg_fail(c, later, sub, "give either keras (a Keras model config) or input and layers, not both");
  }
  for (int i = 0; !keras && i < 2; i++) {
    const char *need = i ? "layers" : "input";
    cfg_join(sub, sizeof sub, path, need);
    if (!i && yt_get(map, "input") && yt_get(map, "inputs")) {
      const yt_node *later = cfg_later_key(map, "input", "inputs");
      cfg_join(sub, sizeof sub, path, later->text);
      return cfg_fail(c, later, sub, "give either input (one model input) or inputs (several), not both");
    }
    if (!yt_get(map, need) && !(i == 0 && yt_get(map, "inputs")))
      return cfg_fail(c, map, sub, "missing required key \"%s\" (or \"keras\", a Keras model config, or \"zoo\", "
                      "a named architecture)", need);
  }
  /* The graph layers read the packed input's layout from their spec. */
  for (int i = 0; i < c->s->nlayers; i++) {
    c->s->layers[i].graph_nodes = c->s->graph_nodes;
    c->s->layers[i].graph_edges = c->s->graph_edges;
  }
  return 0;
}

static const key_spec LOSS_KEYS[] = {
  {.key = "kind", .type = V_ENUM, .st = S_INT, OFF(scenario, loss), .names = LOSSES},
  {.key = "from_logits", .type = V_BOOL, .st = S_INT, OFF(scenario, from_logits)},
  END};
static const key_spec INIT_KEYS[] = {
  {.key = "file", .type = V_PATH, .st = S_CHARS, OFF(scenario, init_file), .len = SCN_PATH_MAX},
  {.key = "kind", .type = V_ENUM, .names = INITS},
  END};

static int init_post(cfg_ctx *c, const yt_node *map, const char *path, void *base) {
  char sub[256];
  (void)base;
  if (yt_get(map, "file") && yt_get(map, "kind")) {
    cfg_join(sub, sizeof sub, path, "kind");
    return cfg_fail(c, yt_get_key(map, "kind"), sub, "give either file (weights from a CSV) or kind: glorot_uniform, not both");
  }
  if (!yt_get(map, "file") && !yt_get(map, "kind")) {
    cfg_join(sub, sizeof sub, path, "kind");
    return cfg_fail(c, map, sub, "missing required key \"kind\" (glorot_uniform) or \"file\"");
  }
  return 0;
}

/* An optimizer mapping into o: its kind's Keras defaults, then the keys given. */
static int optimizer_into(cfg_ctx *c, const yt_node *v, const char *path, md_optimizer_spec *o) {
  int which = 0;
  const yt_node *kind = yt_get(v, "kind");
  if (kind && kind->kind == YT_SCALAR)
    for (int i = 0; CFG_OPTIMIZERS[i].kind; i++)
      if (!strcmp(CFG_OPTIMIZERS[i].kind, kind->text)) cfg_optimizer_defaults(o, (md_optimizer_kind)i);
  if (cfg_walk_variant(c, v, path, CFG_OPTIMIZERS, o, &which)) return -1;
  o->kind = (md_optimizer_kind)which;
  return 0;
}

int cfg_optimizer_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  (void)k; (void)base;
  return optimizer_into(c, v, path, &c->s->optimizer);
}

static int tpu_embedding_optimizer_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  (void)k; (void)base;
  c->s->tpu_embedding_optimizer_given = 1;
  return optimizer_into(c, v, path, &c->s->tpu_embedding_optimizer);
}

static const key_spec TPU_EMBEDDING_KEYS[] = {
  {.key = "optimizer", .type = V_FN, .fn = tpu_embedding_optimizer_fn, .variants = CFG_OPTIMIZERS,
   .schema = "{\"allOf\":[\"$variants\"],\"description\":\"the tables' optimizer (TPUEmbedding's optimizer "
             "argument: tf.tpu.experimental.embedding.SGD or Adagrad), applied on each row's owner to the rows a "
             "step touched; the scenario's optimizer trains the other variables\"}"},
  {.key = "tables", .type = V_INT, .st = S_INT, OFF(scenario, tpu_embedding_tables), .lo = 1, .hi = 1e6,
   .doc = "how many tables TPUEmbedding takes, the largest by rows (ties in layer order); the others stay "
          "on every chip as TPUStrategy keeps a variable, their gradients all-reduced dense (Google's MLPerf "
          "DLRM: num_tables_in_ec; default all)"},
  END};

/* model.tpu_embedding: false, true (the tables take the scenario's optimizer) or {optimizer, tables}
** (without optimizer, the scenario's). */
static int tpu_embedding_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  static const key_spec flag = {.key = "tpu_embedding", .type = V_BOOL, .st = S_INT, OFF(scenario, tpu_embedding)};
  (void)k;
  if (v->kind != YT_MAP) return cfg_handle_value(c, &flag, v, path, base);
  c->s->tpu_embedding = 1;
  return cfg_walk_map(c, v, path, TPU_EMBEDDING_KEYS, base);
}

const key_spec CFG_MODEL_KEYS[] = {
  {.key = "input", .type = V_MAP, .sub = INPUT_KEYS, .post = input_post},
  {.key = "inputs", .type = V_FN, .fn = cfg_model_inputs_fn, .map = CFG_MODEL_INPUT_ENTRY_KEYS,
   .schema = "{\"type\":\"array\",\"minItems\":1,\"items\":\"$map\",\"description\":\"several model inputs, as Keras's Input layers, in the batch's column order: {name, features} or {name, ids, vocab}; layers read them by name (docs/layers.md)\"}"},
  /* .sub: the keys of each entry, for cfg_find_path (model.layers.conv2d.filters) */
  {.key = "layers", .type = V_FN, .fn = layers_fn, .sub = LAYER_KINDS,
   .schema = "{\"type\":\"array\",\"minItems\":1,\"items\":\"$one\",\"description\":\"the layers in order, each {KIND: {...}} with Keras's names (docs/layers.md)\"}"},
  {.key = "zoo", .type = V_FN, .fn = zoo_fn, .map = ZOO_KEYS,
   .schema = "{\"anyOf\":[{\"type\":\"string\",\"enum\":[\"resnet50\",\"bert_base\",\"bert_large\",\"gpt_125m\",\"gpt_1_3b\",\"gpt_6_7b\",\"gpt_175b\",\"dlrm\",\"graphsage\",\"resnet50_v1_5\"]},\"$map\"],\"description\":\"a named architecture (docs/layers.md, Zoo), or {preset: NAME, ...sizes}, in place of input and layers\"}"},
  {.key = "keras", .type = V_FN, .fn = keras_fn,
   .schema = "{\"type\":\"string\",\"description\":\"a Keras model config (model.to_json()), in place of input and layers\"}"},
  {.key = "loss", .type = V_MAP, .sub = LOSS_KEYS},
  {.key = "init", .type = V_MAP, .sub = INIT_KEYS, .post = init_post},
  {.key = "dtype_policy", .type = V_ENUM, .names = POLICIES, .st = S_INT, OFF(scenario, dtype_policy)},
  {.key = "tpu_embedding", .type = V_FN, .fn = tpu_embedding_fn, .map = TPU_EMBEDDING_KEYS,
   .schema = "{\"anyOf\":[{\"type\":\"boolean\"},\"$map\"],\"description\":\"strategy tpu: the embedding tables "
             "through TPUEmbedding (tf.tpu.experimental.embedding): rows sharded over the chips (row r on chip r mod "
             "N), ids and vectors exchanged by all-to-all, {optimizer} (true: the scenario's optimizer) applied on "
             "the owners to the rows a batch touched (default false)\"}"},
  END};

/* optimizer.learning_rate: a number, or a Keras LearningRateSchedule by kind (models/schedule.h). */
#define SCHED(f) OFF(md_optimizer_spec, schedule.f)
#define SCHED_LR0 {.key = "initial_learning_rate", .type = V_NUM, .st = S_DOUBLE, SCHED(initial_learning_rate), .lo = 0, .required = 1}
#define SCHED_STEPS {.key = "decay_steps", .type = V_NUM, .st = S_DOUBLE, SCHED(decay_steps), .lo = 0, .lo_open = 1, .required = 1}
#define SCHED_RATE {.key = "decay_rate", .type = V_NUM, .st = S_DOUBLE, SCHED(decay_rate), .lo = 0, .required = 1}
#define SCHED_STAIR {.key = "staircase", .type = V_BOOL, .st = S_INT, SCHED(staircase)}
static const key_spec DECAY_KEYS[] = {{.key = "kind", .type = V_STR}, SCHED_LR0, SCHED_STEPS, SCHED_RATE, SCHED_STAIR, END};
static const key_spec POLYNOMIAL_KEYS[] = {
  {.key = "kind", .type = V_STR}, SCHED_LR0, SCHED_STEPS,
  {.key = "end_learning_rate", .type = V_NUM, .st = S_DOUBLE, SCHED(end_learning_rate), .lo = 0},
  {.key = "power", .type = V_NUM, .st = S_DOUBLE, SCHED(power), .lo = 0},
  {.key = "cycle", .type = V_BOOL, .st = S_INT, SCHED(cycle)},
  END};
static const key_spec COSINE_KEYS[] = {
  {.key = "kind", .type = V_STR}, SCHED_LR0, SCHED_STEPS,
  {.key = "alpha", .type = V_NUM, .st = S_DOUBLE, SCHED(alpha), .lo = 0, .hi = 1},
  {.key = "warmup_target", .type = V_NUM, .st = S_DOUBLE, SCHED(warmup_target), .lo = 0},
  {.key = "warmup_steps", .type = V_INT, .st = S_DOUBLE, SCHED(warmup_steps), .lo = 0},
  END};
static int piecewise_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base);
static const key_spec PIECEWISE_KEYS[] = {
  {.key = "kind", .type = V_STR},
  {.key = "boundaries", .type = V_FN, .fn = piecewise_fn, .required = 1,
   .schema = "{\"type\":\"array\",\"minItems\":1,\"maxItems\":16,\"items\":{\"type\":\"integer\",\"minimum\":0},\"description\":\"increasing steps at which the rate changes\"}"},
  {.key = "values", .type = V_FN, .fn = piecewise_fn, .required = 1,
   .schema = "{\"type\":\"array\",\"minItems\":2,\"maxItems\":17,\"items\":{\"type\":\"number\",\"minimum\":0},\"description\":\"the rate up to each boundary and after the last: one more than boundaries\"}"},
  END};
/* Index = md_schedule_kind (CONSTANT, the plain number, has no mapping). */
static const variant SCHEDULES[] = {
  {"exponential_decay", DECAY_KEYS}, {"piecewise_constant_decay", PIECEWISE_KEYS},
  {"polynomial_decay", POLYNOMIAL_KEYS}, {"cosine_decay", COSINE_KEYS},
  {"inverse_time_decay", DECAY_KEYS}, {NULL, NULL}};

/* boundaries: increasing integer steps; values: one number more, each a float32. */
static int piecewise_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  md_schedule *s = &((md_optimizer_spec *)base)->schedule;
  int bounds = !strcmp(k->key, "boundaries"), max = MD_SCHEDULE_MAX_PIECES + !bounds;
  const key_spec num = {.key = k->key, .type = bounds ? V_INT : V_NUM, .st = bounds ? S_LONG : S_DOUBLE, .lo = 0};
  char sub[256];
  if (cfg_get_seq(c, v, path, bounds ? "a list of increasing steps such as [1000, 2000]"
                                     : "a list of learning rates such as [0.1, 0.01, 0.001]")) return -1;
  if (v->n < 1 + !bounds || v->n > max)
    return cfg_fail(c, v, path, "expected %d to %d entries, found %d", 1 + !bounds, max, v->n);
  for (int i = 0; i < v->n; i++) {
    base_format(sub, sizeof sub, "%s[%d]", path, i);
    long step = 0;
    if (cfg_handle_value(c, &num, v->items[i], sub, bounds ? (void *)&step : (void *)&s->values[i])) return -1;
    if (!bounds) continue;
    if (i > 0 && step <= s->boundaries[i - 1])
      return cfg_fail(c, v->items[i], sub, "expected a step above the one before (%lld), found %ld",
                      (long long)s->boundaries[i - 1], step);
    s->boundaries[i] = step;
    s->nboundaries = i + 1;
  }
  return 0;
}

static int learning_rate_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  static const key_spec number = {.key = "learning_rate", .type = V_NUM, .st = S_FLOAT,
                                  OFF(md_optimizer_spec, learning_rate), .lo = 0, .lo_open = 1};
  md_optimizer_spec *o = base;
  int which = 0;
  (void)k;
  if (v->kind != YT_MAP) return cfg_handle_value(c, &number, v, path, base);
  const yt_node *kind = yt_get(v, "kind");
  for (int i = 0; kind && kind->kind == YT_SCALAR && SCHEDULES[i].kind; i++)
    if (!strcmp(SCHEDULES[i].kind, kind->text)) md_schedule_defaults(&o->schedule, (md_schedule_kind)(i + 1));
  if (cfg_walk_variant(c, v, path, SCHEDULES, base, &which)) return -1;
  o->schedule.kind = (md_schedule_kind)(which + 1);
  const yt_node *values = yt_get(v, "values");
  if (o->schedule.kind == MD_SCHEDULE_PIECEWISE && (int)values->n != o->schedule.nboundaries + 1) {
    char sub[256];
    cfg_join(sub, sizeof sub, path, "values");
    return cfg_fail(c, values, sub, "expected one more value than boundaries (%d), found %d",
                    o->schedule.nboundaries + 1, values->n);
  }
  if (yt_get(v, "warmup_steps") && !yt_get(v, "warmup_target")) {
    char sub[256];
    cfg_join(sub, sizeof sub, path, "warmup_target");
    return cfg_fail(c, v, sub, "missing required key \"warmup_target\" (the rate warmup_steps reach)");
  }
  o->schedule.warmup = yt_get(v, "warmup_target") != NULL;
  return 0;
}

/* optimizer: the keys depend on the kind. */
#define LR {.key = "learning_rate", .type = V_FN, .fn = learning_rate_fn, .variants = SCHEDULES, \
  .schema = "{\"anyOf\":[{\"type\":\"number\",\"exclusiveMinimum\":0},\"$variants\"],\"description\":\"a number, or a Keras learning-rate schedule by kind (docs/scenario-format.md)\"}"}
#define EPS {.key = "epsilon", .type = V_NUM, .st = S_FLOAT, OFF(md_optimizer_spec, epsilon), .lo = 0}
static const key_spec SGD_KEYS[] = {
  {.key = "kind", .type = V_STR}, LR,
  {.key = "momentum", .type = V_NUM, .st = S_FLOAT, OFF(md_optimizer_spec, momentum), .lo = 0, .hi = 1},
  {.key = "nesterov", .type = V_BOOL, .st = S_INT, OFF(md_optimizer_spec, nesterov)},
  END};
#define BETAS \
  {.key = "beta_1", .type = V_NUM, .st = S_FLOAT, OFF(md_optimizer_spec, beta_1), .lo = 0, .hi = 1, .hi_open = 1}, \
  {.key = "beta_2", .type = V_NUM, .st = S_FLOAT, OFF(md_optimizer_spec, beta_2), .lo = 0, .hi = 1, .hi_open = 1}
#define WEIGHT_DECAY {.key = "weight_decay", .type = V_NUM, .st = S_FLOAT, OFF(md_optimizer_spec, weight_decay), .lo = 0}
static const key_spec ADAM_KEYS[] = {{.key = "kind", .type = V_STR}, LR, BETAS, EPS, END};
/* Keras 3's AdamW and Lamb: Adam's keys and the decoupled weight decay. */
static const key_spec ADAMW_KEYS[] = {{.key = "kind", .type = V_STR}, LR, BETAS, EPS, WEIGHT_DECAY, END};
/* TF 1's tf.contrib.opt.LARSOptimizer (MLPerf's TPU ResNet-50): momentum, decay, trust coefficient. */
static const key_spec LARS_KEYS[] = {
  {.key = "kind", .type = V_STR}, LR,
  {.key = "momentum", .type = V_NUM, .st = S_FLOAT, OFF(md_optimizer_spec, momentum), .lo = 0, .hi = 1},
  WEIGHT_DECAY,
  {.key = "eeta", .type = V_NUM, .st = S_FLOAT, OFF(md_optimizer_spec, eeta), .lo = 0, .lo_open = 1},
  EPS, END};
static const key_spec ADAGRAD_KEYS[] = {
  {.key = "kind", .type = V_STR}, LR,
  {.key = "initial_accumulator_value", .type = V_NUM, .st = S_FLOAT,
   OFF(md_optimizer_spec, initial_accumulator_value), .lo = 0},
  EPS, END};
/* Index = md_optimizer_kind. */
const variant CFG_OPTIMIZERS[] = {
  {"sgd", SGD_KEYS}, {"adam", ADAM_KEYS}, {"adagrad", ADAGRAD_KEYS}, {"adamw", ADAMW_KEYS},
  {"lamb", ADAMW_KEYS}, {"lars", LARS_KEYS}, {NULL, NULL}};

/* The Keras defaults (models/optimizer.c has md_optimizer_spec_defaults with the same figures;
** the loader keeps its own so it does not depend on the numerics layer being linked). */
void cfg_optimizer_defaults(md_optimizer_spec *o, md_optimizer_kind kind) {
  memset(o, 0, sizeof *o);
  o->kind = kind;
  o->learning_rate = kind == MD_OPT_SGD || kind == MD_OPT_LARS ? 0.01f : 0.001f;
  o->beta_1 = 0.9f;
  o->beta_2 = 0.999f;
  o->epsilon = 1e-7f;
  o->initial_accumulator_value = 0.1f;
  o->weight_decay = kind == MD_OPT_ADAMW ? 0.004f : 0.0f;
  if (kind != MD_OPT_LARS) return;
  o->momentum = 0.9f;  /* LARSOptimizer's defaults */
  o->weight_decay = 0.0001f;
  o->eeta = 0.001f;
  o->epsilon = 0.0f;
}

