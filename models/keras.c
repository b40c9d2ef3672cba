/*
** keras.c: a Keras model config (model.to_json(); tfjs's model.toJSON()) into layer specs
** (md_keras_). jansson parses the text; a small scanner over the same text finds where each
** layer's object starts, so errors point at it (jansson keeps no positions).
**
** Each class podsim has is a row of CLASSES: its md_layer_kind and its config keys, each read
** into the spec or checked to hold the value podsim computes with (an initializer is ignored:
** the scenario's init gives the values). A key no row or common rule knows, or a value podsim
** cannot honour, is an unsupported option: an error naming the layer, not a silent difference.
**
** Invariants:
**   1. Errors are deterministic: a layer's unknown keys are reported lexicographically first
**      (jansson's iteration order is its hash's), layers in file order.
**   2. The specs built here pass md_model_new on shapes, checked layer by layer, so a layer that
**      cannot follow its inputs is refused at its own position in the JSON file.
*/
#include "models/keras.h"

#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/modelsInt.h"

typedef enum {
  KJ_INT,           /* an integer >= 1 into an int */
  KJ_PAIR,          /* an integer or [h, w] into int[2] */
  KJ_POOL_STRIDES,  /* null (the pool size) or a pair */
  KJ_ACTIVATION,    /* an activation's name into md_activation */
  KJ_BOOL,          /* true or false into an int */
  KJ_PADDING,       /* valid or same into md_padding */
  KJ_FLOAT,         /* a number into a float */
  KJ_AXIS,          /* an axis (or a list of one), Keras's count (not 0, the batch) into an int */
  KJ_SHAPE,         /* a list of 1..4 sizes (-1: inferred) into md_shape */
  KJ_VALUE_DIM,     /* null (key_dim) or an integer >= 1 */
  KJ_INPUT_LENGTH,  /* null or 1: one id per example */
  KJ_NULL,          /* must be null */
  KJ_TRUE,          /* must be true */
  KJ_FALSE,         /* must be false (or null) */
  KJ_ZERO,          /* must be the number 0 */
  KJ_ONE,           /* must be the integer 1 */
  KJ_CHANNELS_LAST, /* null or channels_last */
  KJ_SEQUENCE_AXES, /* null or [1]: attention over the positions of a [positions, features] example */
  KJ_SEED,          /* Dropout's seed: an integer makes the layer seeded (Keras's masks), null not
                    ** (Keras drew a seed the config does not hold: podsim's own stream) */
  KJ_IGNORED        /* anything: no bearing on what podsim computes */
} kj_type;

typedef struct kj_option {
  const char *key;        /* the config key */
  kj_type type;           /* how its value is read or checked */
  size_t off;             /* where in md_layer_spec, for the types that store */
} kj_option;

typedef struct kj_class {
  const char *class_name; /* Keras's */
  int kind;               /* the md_layer_kind; -1 for InputLayer */
  const kj_option *options; /* its own config keys, ending with a NULL key */
} kj_class;

#define OPT(k, t, field) {k, t, offsetof(md_layer_spec, field)}
#define CHECK(k, t) {k, t, 0}
#define ENDOPT {NULL, KJ_IGNORED, 0}
#define WINDOW OPT("strides", KJ_PAIR, strides), OPT("padding", KJ_PADDING, padding), \
  OPT("dilation_rate", KJ_PAIR, dilation_rate), OPT("activation", KJ_ACTIVATION, activation), \
  OPT("use_bias", KJ_BOOL, use_bias), CHECK("data_format", KJ_CHANNELS_LAST)
#define NORM OPT("epsilon", KJ_FLOAT, epsilon), OPT("axis", KJ_AXIS, axis), CHECK("center", KJ_TRUE), \
  CHECK("scale", KJ_TRUE)
#define POOL OPT("pool_size", KJ_PAIR, pool_size), OPT("strides", KJ_POOL_STRIDES, strides), \
  OPT("padding", KJ_PADDING, padding), CHECK("data_format", KJ_CHANNELS_LAST)

/* Keys later Keras releases added are written at their defaults, which podsim computes with
** (InputLayer optional, Keras 3.9; MultiHeadAttention use_gate and sliding_window, 3.13-3.15); at
** another value they stay unsupported options. */
static const kj_option INPUT_OPTS[] = {
  CHECK("sparse", KJ_FALSE), CHECK("ragged", KJ_FALSE), CHECK("optional", KJ_FALSE), ENDOPT};
static const kj_option DENSE_OPTS[] = {
  OPT("units", KJ_INT, units), OPT("activation", KJ_ACTIVATION, activation), OPT("use_bias", KJ_BOOL, use_bias),
  CHECK("lora_rank", KJ_NULL), ENDOPT};
static const kj_option EMBEDDING_OPTS[] = {
  OPT("input_dim", KJ_INT, vocab), OPT("output_dim", KJ_INT, dim), CHECK("input_length", KJ_INPUT_LENGTH),
  CHECK("mask_zero", KJ_FALSE), CHECK("lora_rank", KJ_NULL), ENDOPT};
static const kj_option CONV2D_OPTS[] = {
  OPT("filters", KJ_INT, filters), OPT("kernel_size", KJ_PAIR, kernel_size), WINDOW, CHECK("groups", KJ_ONE),
  ENDOPT};
static const kj_option DEPTHWISE_OPTS[] = {
  OPT("kernel_size", KJ_PAIR, kernel_size), OPT("depth_multiplier", KJ_INT, depth_multiplier), WINDOW, ENDOPT};
static const kj_option POOL_OPTS[] = {POOL, ENDOPT};
static const kj_option GLOBAL_POOL_OPTS[] = {
  CHECK("data_format", KJ_CHANNELS_LAST), CHECK("keepdims", KJ_FALSE), ENDOPT};
static const kj_option FLATTEN_OPTS[] = {CHECK("data_format", KJ_CHANNELS_LAST), ENDOPT};
static const kj_option RESHAPE_OPTS[] = {OPT("target_shape", KJ_SHAPE, target_shape), ENDOPT};
static const kj_option DROPOUT_OPTS[] = {
  OPT("rate", KJ_FLOAT, rate), CHECK("noise_shape", KJ_NULL), OPT("seed", KJ_SEED, seed), ENDOPT};
static const kj_option LAYER_NORM_OPTS[] = {NORM, CHECK("rms_scaling", KJ_FALSE), ENDOPT};
static const kj_option RMS_NORM_OPTS[] = {OPT("epsilon", KJ_FLOAT, epsilon), OPT("axis", KJ_AXIS, axis), ENDOPT};
/* renorm_clipping and renorm_momentum are read by Keras only under renorm, which must be false:
** whatever they hold, the layer computes as podsim does. */
static const kj_option BATCH_NORM_OPTS[] = {
  NORM, OPT("momentum", KJ_FLOAT, momentum), OPT("synchronized", KJ_BOOL, synchronized), CHECK("renorm", KJ_FALSE),
  CHECK("renorm_clipping", KJ_IGNORED), CHECK("renorm_momentum", KJ_IGNORED), ENDOPT};
static const kj_option ACTIVATION_OPTS[] = {OPT("activation", KJ_ACTIVATION, activation), ENDOPT};
static const kj_option AXIS_OPTS[] = {OPT("axis", KJ_AXIS, axis), ENDOPT};
static const kj_option NO_OPTS[] = {ENDOPT};
static const kj_option ATTENTION_OPTS[] = {
  OPT("num_heads", KJ_INT, num_heads), OPT("key_dim", KJ_INT, key_dim), OPT("value_dim", KJ_VALUE_DIM, value_dim),
  OPT("use_bias", KJ_BOOL, use_bias), CHECK("dropout", KJ_ZERO), CHECK("output_shape", KJ_NULL),
  CHECK("attention_axes", KJ_SEQUENCE_AXES), CHECK("use_gate", KJ_FALSE), CHECK("sliding_window", KJ_NULL),
  CHECK("query_shape", KJ_IGNORED), CHECK("key_shape", KJ_IGNORED),
  CHECK("value_shape", KJ_IGNORED), CHECK("seed", KJ_IGNORED), CHECK("flash_attention", KJ_IGNORED), ENDOPT};

static const kj_class CLASSES[] = {
  {"InputLayer", -1, INPUT_OPTS},
  {"Dense", MD_LAYER_DENSE, DENSE_OPTS},
  {"Embedding", MD_LAYER_EMBEDDING, EMBEDDING_OPTS},
  {"Conv2D", MD_LAYER_CONV2D, CONV2D_OPTS},
  {"DepthwiseConv2D", MD_LAYER_DEPTHWISE_CONV2D, DEPTHWISE_OPTS},
  {"MaxPooling2D", MD_LAYER_MAX_POOLING2D, POOL_OPTS},
  {"AveragePooling2D", MD_LAYER_AVERAGE_POOLING2D, POOL_OPTS},
  {"GlobalAveragePooling2D", MD_LAYER_GLOBAL_AVERAGE_POOLING2D, GLOBAL_POOL_OPTS},
  {"Flatten", MD_LAYER_FLATTEN, FLATTEN_OPTS},
  {"Reshape", MD_LAYER_RESHAPE, RESHAPE_OPTS},
  {"Dropout", MD_LAYER_DROPOUT, DROPOUT_OPTS},
  {"LayerNormalization", MD_LAYER_LAYER_NORMALIZATION, LAYER_NORM_OPTS},
  {"RMSNormalization", MD_LAYER_RMS_NORMALIZATION, RMS_NORM_OPTS},
  {"UnitNormalization", MD_LAYER_UNIT_NORMALIZATION, AXIS_OPTS},
  {"BatchNormalization", MD_LAYER_BATCH_NORMALIZATION, BATCH_NORM_OPTS},
  {"Activation", MD_LAYER_ACTIVATION, ACTIVATION_OPTS},
  {"Softmax", MD_LAYER_SOFTMAX, AXIS_OPTS},
  {"MultiHeadAttention", MD_LAYER_MULTI_HEAD_ATTENTION, ATTENTION_OPTS},
  {"Add", MD_LAYER_ADD, NO_OPTS},
  {"Multiply", MD_LAYER_MULTIPLY, NO_OPTS},
  {"Concatenate", MD_LAYER_CONCATENATE, AXIS_OPTS},
};
#define NCLASSES (sizeof CLASSES / sizeof CLASSES[0])

/* Keras's activation names; index = md_activation ("silu" is swish's other name). */
static const char *const ACTIVATIONS[] = {"linear", "relu", "sigmoid", "tanh", "softmax", "gelu", NULL, "swish"};

/* ---- where things are in the text: jansson has validated it, so the scanner is plain ---- */

static const char *skip_ws(const char *p, const char *end) {
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) p++;
  return p;
}

/* Past the string at p (its opening quote). */
static const char *skip_string(const char *p, const char *end) {
  for (p++; p < end && *p != '"'; p++)
    if (*p == '\\') p++;
  return p < end ? p + 1 : end;
}

/* Past the value at p: at least one character on, so every loop over values ends (the fuzzer
** found a loop that did not before md_keras_parse refused NUL bytes). */
static const char *skip_value(const char *p, const char *end) {
  if (p >= end) return end;
  if (*p == '"') return skip_string(p, end);
  if (*p != '{' && *p != '[') {
    const char *start = p;
    while (p < end && *p && !strchr(",]} \t\r\n", *p)) p++;
    return p == start ? p + 1 : p;
  }
  char close = *p == '{' ? '}' : ']';
  for (p = skip_ws(p + 1, end); p < end && *p != close;) {
    if (close == '}') p = skip_ws(skip_string(p, end), end) + 1;  /* the key and its colon */
    p = skip_ws(skip_value(skip_ws(p, end), end), end);
    if (p < end && *p == ',') p = skip_ws(p + 1, end);
  }
  return p < end ? p + 1 : end;
}

/* The value of key in the object at p (NULL when absent; keys here need no unescaping). */
static const char *member(const char *p, const char *end, const char *key) {
  size_t n = strlen(key);
  for (p = skip_ws(p + 1, end); p < end && *p == '"';) {
    const char *k = p + 1, *after = skip_string(p, end);
    const char *v = skip_ws(skip_ws(after, end) + 1, end);
    if ((size_t)(after - 1 - k) == n && !strncmp(k, key, n)) return v;
    p = skip_ws(skip_value(v, end), end);
    if (p < end && *p == ',') p = skip_ws(p + 1, end);
  }
  return NULL;
}

/* The element after the one at p in an array (or its end). */
static const char *next_element(const char *p, const char *end) {
  p = skip_ws(skip_value(p, end), end);
  return p < end && *p == ',' ? skip_ws(p + 1, end) : p;
}

/* Moves *line, *col (the position of from) on to `at`: each layer's position is found from the
** last one's, so finding them all reads the text once (from the start each time, 2000 layers
** took seconds). */
static void position_from(const char *from, const char *at, int *line, int *col) {
  for (const char *p = from; p < at; p++) {
    if (*p == '\n') (*line)++, *col = 1;
    else (*col)++;
  }
}

static void position(const char *text, const char *at, int *line, int *col) {
  *line = 1, *col = 1;
  position_from(text, at, line, col);
}

/* ---- reading one layer ---- */

typedef struct kj_ctx {
  md_keras_model *k;      /* what is built */
  md_error *err;          /* the first error */
  int at;                 /* JSON index of the layer being read */
  const char *name;       /* its name */
  const char *class_name; /* its class_name */
  int line, col;          /* its object's position */
  int have_input;         /* 1 once an input shape was given */
  int functional;         /* 1: a Functional model, whose inputs are its InputLayers */
  int policy_seen;        /* 1 once a layer gave its dtype policy (k->dtype_policy) */
} kj_ctx;

/* An error about the current layer: returns -1. */
static int fail(kj_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(kj_ctx *c, const char *fmt, ...) {
  char what[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return md_error_set(c->err, c->line, c->col, "layer %d %s (class_name %s): %s", c->at, c->name, c->class_name,
                      what);
}

static int unsupported(kj_ctx *c, const char *key, const json_t *v) {
  char *shown = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
  char value[64];
  snprintf(value, sizeof value, "%s", shown ? shown : "?");
  free(shown);
  return fail(c, "unsupported option %s: %s (podsim computes without it)", key, value);
}

static int int_value(const json_t *v, int lo, int *out) {
  if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > 100000000) return -1;
  *out = (int)json_integer_value(v);
  return 0;
}

/* [null, d1, ..., dr] (r 1..4, each >= 1) into the model's input shape. */
static int batch_shape(kj_ctx *c, const char *key, const json_t *v) {
  /* A Functional model's layer called on a tensor keeps the shape it was made with, unused (tfjs
  ** writes an Embedding's [null, null]): its input is the tensor's. */
  if (c->functional && strcmp(c->class_name, "InputLayer")) return 0;
  size_t n = json_array_size(v);
  md_shape s = {.rank = (int)n - 1};
  if (!json_is_array(v) || n < 2 || n > MD_MAX_SHAPE_RANK + 1 || !json_is_null(json_array_get(v, 0)))
    return unsupported(c, key, v);
  for (size_t i = 1; i < n; i++)
    if (int_value(json_array_get(v, i), 1, &s.dim[i - 1])) return unsupported(c, key, v);
  if (c->have_input) return fail(c, "a second input shape (%s): podsim models have one input", key);
  c->k->input_shape = s;
  c->have_input = 1;
  return 0;
}

/* One config key of a class's table into spec l (or checked). */
static int read_option(kj_ctx *c, const kj_option *o, const json_t *v, md_layer_spec *l) {
  void *field = (char *)l + o->off;
  int *ints = field;
  switch (o->type) {
  case KJ_INT: return int_value(v, 1, ints) ? unsupported(c, o->key, v) : 0;
  case KJ_POOL_STRIDES:
    if (json_is_null(v)) return 0;
    /* fall through */
  case KJ_PAIR:
    if (json_is_integer(v) && !int_value(v, 1, &ints[0])) return ints[1] = ints[0], 0;
    if (json_array_size(v) == 2 && !int_value(json_array_get(v, 0), 1, &ints[0]) &&
        !int_value(json_array_get(v, 1), 1, &ints[1]))
      return 0;
    return unsupported(c, o->key, v);
  case KJ_ACTIVATION: {
    const char *name = json_string_value(v);
    for (int a = 0; name != NULL && a < MD_ACT_COUNT; a++)
      if (ACTIVATIONS[a] != NULL && !strcmp(name, ACTIVATIONS[a])) return *(md_activation *)field = (md_activation)a, 0;
    if (name != NULL && !strcmp(name, "silu")) return *(md_activation *)field = MD_ACT_SWISH, 0;
    return unsupported(c, o->key, v);
  }
  case KJ_BOOL:
    if (!json_is_boolean(v)) return unsupported(c, o->key, v);
    *ints = json_is_true(v);
    return 0;
  case KJ_PADDING: {
    const char *p = json_string_value(v);
    if (p == NULL || (strcmp(p, "valid") && strcmp(p, "same"))) return unsupported(c, o->key, v);
    *(md_padding *)field = !strcmp(p, "same") ? MD_PADDING_SAME : MD_PADDING_VALID;
    return 0;
  }
  case KJ_FLOAT:
    if (!json_is_number(v)) return unsupported(c, o->key, v);
    *(float *)field = (float)json_number_value(v);
    return 0;
  case KJ_AXIS: {
    const json_t *a = json_array_size(v) == 1 ? json_array_get(v, 0) : v;
    return int_value(a, -MD_MAX_SHAPE_RANK, ints) || *ints == 0 || *ints > MD_MAX_SHAPE_RANK ? unsupported(c, o->key, v) : 0;
  }
  case KJ_SHAPE: {
    md_shape *s = field;
    size_t n = json_array_size(v);
    if (n < 1 || n > MD_MAX_SHAPE_RANK) return unsupported(c, o->key, v);
    s->rank = (int)n;
    for (size_t i = 0; i < n; i++)
      if (int_value(json_array_get(v, i), -1, &s->dim[i]) || s->dim[i] == 0) return unsupported(c, o->key, v);
    return 0;
  }
  case KJ_VALUE_DIM: return json_is_null(v) || !int_value(v, 1, ints) ? 0 : unsupported(c, o->key, v);
  case KJ_INPUT_LENGTH: return json_is_null(v) || json_integer_value(v) == 1 ? 0 : unsupported(c, o->key, v);
  case KJ_NULL: return json_is_null(v) ? 0 : unsupported(c, o->key, v);
  case KJ_SEED:
    if (json_is_null(v)) return 0;
    if (!json_is_integer(v)) return unsupported(c, o->key, v);
    *(int64_t *)field = json_integer_value(v);
    l->seeded = 1;
    return 0;
  case KJ_TRUE: return json_is_true(v) ? 0 : unsupported(c, o->key, v);
  case KJ_FALSE: return json_is_false(v) || json_is_null(v) ? 0 : unsupported(c, o->key, v);
  case KJ_ZERO: return json_is_number(v) && json_number_value(v) == 0 ? 0 : unsupported(c, o->key, v);
  case KJ_ONE: return json_is_integer(v) && json_integer_value(v) == 1 ? 0 : unsupported(c, o->key, v);
  case KJ_CHANNELS_LAST: {
    const char *f = json_string_value(v);
    return json_is_null(v) || (f && !strcmp(f, "channels_last")) ? 0 : unsupported(c, o->key, v);
  }
  case KJ_SEQUENCE_AXES: {
    /* Keras 3 writes the axes it built with: [1] for the [batch, positions, features] query. */
    const json_t *a = json_array_get(v, 0);
    return json_is_null(v) || (json_array_size(v) == 1 && json_is_integer(a) && json_integer_value(a) == 1)
               ? 0 : unsupported(c, o->key, v);
  }
  case KJ_IGNORED: return 0;
  }
  return unsupported(c, o->key, v);
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && !strcmp(s + n - m, suffix);
}

/* Keras's dtype policy names; index = md_dtype_policy. */
static const char *const POLICIES[] = {"float32", "mixed_bfloat16", "mixed_float16"};

/* A layer's dtype: a name (Keras 2, tfjs) or Keras 3's DTypePolicy object, {"config": {"name":
** ...}}. An InputLayer's is its input's: float32, or int32 (an Embedding's ids). Another layer's
** is its policy, float32 or a mixed one, the same for every layer: podsim runs one policy over
** the model (model.dtype_policy), and the layers give it. */
static int layer_dtype(kj_ctx *c, const char *key, const json_t *v) {
  const char *d = json_is_string(v) ? json_string_value(v)
                                    : json_string_value(json_object_get(json_object_get(v, "config"), "name"));
  if (json_is_null(v)) return 0;
  if (d == NULL) return unsupported(c, key, v);
  if (!strcmp(c->class_name, "InputLayer")) return !strcmp(d, "float32") || !strcmp(d, "int32") ? 0 : unsupported(c, key, v);
  for (int p = 0; p < (int)(sizeof POLICIES / sizeof POLICIES[0]); p++) {
    if (strcmp(d, POLICIES[p])) continue;
    if (c->policy_seen && (int)c->k->dtype_policy != p)
      return fail(c, "dtype policy %s where the layers before have %s: podsim runs one policy over the whole model "
                  "(model.dtype_policy)", d, POLICIES[c->k->dtype_policy]);
    c->k->dtype_policy = (md_dtype_policy)p;
    c->policy_seen = 1;
    return 0;
  }
  return unsupported(c, key, v);
}

/* The keys every class has: its name, trainable (true: podsim trains every layer), its dtype
** (layer_dtype), initializers (the scenario's init gives the values), no regularizers,
** constraints or quantization (Keras 3.13's quantization_config), and the input shape a
** Sequential model's first layer may carry. 1: handled; 0: not such a key. */
static int common_option(kj_ctx *c, const char *key, const json_t *v, int *rc) {
  *rc = 0;
  if (!strcmp(key, "name") || ends_with(key, "_initializer")) return 1;
  if (!strcmp(key, "trainable")) *rc = json_is_true(v) ? 0 : unsupported(c, key, v);
  else if (!strcmp(key, "dtype")) *rc = layer_dtype(c, key, v);
  else if (!strcmp(key, "quantization_config")) *rc = json_is_null(v) ? 0 : unsupported(c, key, v);
  else if (ends_with(key, "_regularizer") || ends_with(key, "_constraint"))
    *rc = json_is_null(v) ? 0 : unsupported(c, key, v);
  else if (!strcmp(key, "batch_input_shape") || !strcmp(key, "batch_shape"))
    *rc = batch_shape(c, key, v);
  else return 0;
  return 1;
}

/* The config's keys against the class's table and the common ones; an unknown key is
** unsupported, the lexicographically first reported (invariant 1). */
static int read_config(kj_ctx *c, const kj_class *cls, const json_t *config, md_layer_spec *l) {
  const char *key, *unknown = NULL;
  const json_t *v;
  json_object_foreach((json_t *)config, key, v) {
    int rc, handled = common_option(c, key, v, &rc);
    for (const kj_option *o = cls->options; !handled && o->key; o++)
      if (!strcmp(o->key, key)) handled = 1, rc = read_option(c, o, v, l);
    if (handled && rc) return -1;
    if (!handled && (unknown == NULL || strcmp(key, unknown) < 0)) unknown = key;
  }
  if (unknown) return unsupported(c, unknown, json_object_get(config, unknown));
  return 0;
}

/* ---- the graph: inbound nodes into inputs ---- */

/* The layer index a tensor reference names: [name, node, tensor(, kwargs)] (Keras 2, tfjs) or
** Keras 3's {"config": {"keras_history": [name, node, tensor]}}. -2 with an error otherwise. */
/* tensor_source's error: below every MD_MODEL_INPUT(k). */
#define KJ_NO_SOURCE INT_MIN

static int tensor_source(kj_ctx *c, const json_t *ref, char (*names)[MD_LAYER_NAME_MAX], int n) {
  const json_t *h = json_is_object(ref) ? json_object_get(json_object_get(ref, "config"), "keras_history") : ref;
  const char *name = json_string_value(json_array_get(h, 0));
  if (name == NULL || json_integer_value(json_array_get(h, 1)) != 0 || json_integer_value(json_array_get(h, 2)) != 0)
    return fail(c, "an inbound tensor podsim cannot follow (a shared layer's second call, a layer with several "
                   "outputs, or no name)"), KJ_NO_SOURCE;
  for (int j = 0; j < MD_MAX_MODEL_INPUTS; j++)
    if (!strcmp(name, c->k->inputs[j].name)) return MD_MODEL_INPUT(j);
  for (int i = n - 1; i >= 0; i--)
    if (!strcmp(names[i], name)) return i;
  return fail(c, "reads %s, no earlier layer of the model", name), KJ_NO_SOURCE;
}

/* Appends the sources of every tensor in v (Keras 3's args: a tensor or a list of them). */
static int collect(kj_ctx *c, const json_t *v, char (*names)[MD_LAYER_NAME_MAX], int n, md_layer_spec *l) {
  if (json_is_array(v) && (json_array_size(v) == 0 || !json_is_string(json_array_get(v, 0)))) {
    size_t i;
    const json_t *e;
    json_array_foreach(v, i, e) if (collect(c, e, names, n, l)) return -1;
    return 0;
  }
  if (l->ninputs == MD_LAYER_MAX_INPUTS) return fail(c, "more than %d inputs", MD_LAYER_MAX_INPUTS);
  int src = tensor_source(c, v, names, n);
  if (src == KJ_NO_SOURCE) return -1;
  l->inputs[l->ninputs++] = src;
  return 0;
}

/* The call's keyword arguments: multi-head attention's value and key (its self-attention: the
** query's tensor again) and use_causal_mask; any other must be null. */
static int call_kwargs(kj_ctx *c, const json_t *kwargs, char (*names)[MD_LAYER_NAME_MAX], int n,
                       md_layer_spec *l) {
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)kwargs, key, v) {
    int attention = l->kind == MD_LAYER_MULTI_HEAD_ATTENTION;
    if (attention && (!strcmp(key, "value") || !strcmp(key, "key"))) {
      if (collect(c, v, names, n, l)) return -1;
    } else if (attention && !strcmp(key, "use_causal_mask") && json_is_boolean(v)) {
      l->use_causal_mask = json_is_true(v);
    } else if (!json_is_null(v) && !(json_is_false(v) && !strcmp(key, "training"))) {
      return unsupported(c, key, v);
    }
  }
  return 0;
}

/* A Functional layer's one inbound node into l's inputs. */
static int inbound(kj_ctx *c, const json_t *nodes, char (*names)[MD_LAYER_NAME_MAX], int n, md_layer_spec *l) {
  if (json_array_size(nodes) != 1)
    return fail(c, "expected one inbound node (podsim does not share a layer between calls), found %s",
                json_array_size(nodes) ? "several" : "none");
  const json_t *node = json_array_get(nodes, 0);
  if (json_is_object(node)) {  /* Keras 3: {"args": [...], "kwargs": {...}} */
    if (collect(c, json_object_get(node, "args"), names, n, l)) return -1;
    if (call_kwargs(c, json_object_get(node, "kwargs"), names, n, l)) return -1;
  } else {
    size_t i;
    const json_t *ref;
    json_array_foreach(node, i, ref) {
      if (collect(c, ref, names, n, l)) return -1;
      if (call_kwargs(c, json_array_get(ref, 3), names, n, l)) return -1;
    }
  }
  if (l->kind == MD_LAYER_MULTI_HEAD_ATTENTION) {  /* query, value (and key): one tensor */
    for (int k = 1; k < l->ninputs; k++)
      if (l->inputs[k] != l->inputs[0]) return fail(c, "query, key and value differ: podsim's attention is self-attention");
    l->ninputs = 1;
  }
  if (l->ninputs == 0) return fail(c, "an inbound node with no tensor");
  return 0;
}

/* ---- the model ---- */

static const kj_class *class_of(const char *name) {
  for (size_t i = 0; name != NULL && i < NCLASSES; i++)
    if (!strcmp(CLASSES[i].class_name, name)) return &CLASSES[i];
  return NULL;
}

md_model_spec md_keras_model_spec(const md_keras_model *k) {
  if (k->ninputs > 1) return (md_model_spec){.ninputs = k->ninputs, .inputs = k->inputs, .nlayers = k->nlayers,
                                             .layers = k->layers};
  return (md_model_spec){.input_shape = k->input_ids ? (md_shape){0} : k->input_shape, .input_ids = k->input_ids,
                         .input_vocab = k->input_ids ? k->layers[0].vocab : 0, .nlayers = k->nlayers,
                         .layers = k->layers};
}

/* Whether the model of the first n layers builds on shapes; me gets its error. */
static int builds(md_model_spec spec, int n, md_error *me) {
  spec.nlayers = n;
  *me = (md_error){0};
  md_model *m = md_model_new(&spec, me);
  md_model_free(m);
  return m != NULL;
}

/* Builds the model on shapes (invariant 2). md_model_new builds a layer at a time, so a model
** fails exactly when one of its first n layers cannot follow its inputs, and then so does every
** longer one: the whole model builds once, and only when it fails does a bisection find the
** first layer that does not (a build of every prefix was quadratic: 2000 layers took 9.5 s). */
static int check_shapes(const md_keras_model *k, md_error *err) {
  md_model_spec spec = md_keras_model_spec(k);
  spec.shapes_only = 1;
  md_error me;
  if (builds(spec, k->nlayers, &me)) return 0;
  int lo = 0, hi = k->nlayers;  /* the first lo layers build, the first hi do not */
  while (hi - lo > 1) {
    int mid = lo + (hi - lo) / 2;
    if (builds(spec, mid, &me)) lo = mid;
    else hi = mid;
  }
  builds(spec, hi, &me);
  return md_error_set(err, k->line[hi - 1], k->col[hi - 1], "layer %s (the model's layer %d without its "
                      "InputLayer): %s", k->layers[hi - 1].name, hi - 1, me.msg);
}

/* config.input_layers and output_layers: a list of [name, node, tensor] references, or (Keras 3
** from 3.0 on a model of one input or output) that one reference itself. */
static size_t ref_count(const json_t *refs) {
  return json_is_string(json_array_get(refs, 0)) ? 1 : json_array_size(refs);
}

/* The layer name of the i-th reference (NULL: none). */
static const char *ref_name(const json_t *refs, size_t i) {
  const json_t *ref = json_is_string(json_array_get(refs, 0)) ? (i == 0 ? refs : NULL) : json_array_get(refs, i);
  return json_string_value(json_array_get(ref, 0));
}

/* Where the InputLayer `name` stands in config.input_layers (Keras's model.inputs): its index, or
** `next` when the config lists none (a Sequential model's one input); -1 when it is not listed. */
static int input_slot(const json_t *input_layers, const char *name, int next) {
  if (!json_is_array(input_layers)) return next;
  for (size_t i = 0; i < ref_count(input_layers) && i < MD_MAX_MODEL_INPUTS; i++) {
    const char *listed = ref_name(input_layers, i);
    if (listed != NULL && !strcmp(name, listed)) return (int)i;
  }
  return -1;
}

/* Several InputLayers: each a vector, ids when an Embedding reads it (one id: podsim's embedding
** gives the [1, output_dim] row Keras's does, flattened; vocab its input_dim), else features. */
static int type_inputs(md_keras_model *k, const md_shape *shapes, md_error *err) {
  for (int j = 0; j < k->ninputs; j++) {
    md_model_input *in = &k->inputs[j];
    if (in->name[0] == '\0') return md_error_set(err, 1, 1, "config.input_layers lists an input no InputLayer has");
    int reader = -1;
    for (int l = 0; l < k->nlayers && reader < 0; l++)
      if (k->layers[l].kind == MD_LAYER_EMBEDDING && k->layers[l].inputs[0] == MD_MODEL_INPUT(j)) reader = l;
    if (shapes[j].rank != 1 || (reader >= 0 && shapes[j].dim[0] != 1))
      return md_error_set(err, 1, 1, "input %s: with several inputs each is a vector, one id for an Embedding", in->name);
    in->ids = reader >= 0 ? 1 : 0;
    in->vocab = reader >= 0 ? k->layers[reader].vocab : 0;
    in->features = reader >= 0 ? 0 : shapes[j].dim[0];
  }
  return 0;
}

static int read_layers(const char *text, const char *end, const json_t *root, md_keras_model *k, md_error *err) {
  const char *cls = json_string_value(json_object_get(root, "class_name"));
  int functional = cls && (!strcmp(cls, "Model") || !strcmp(cls, "Functional"));
  if (cls == NULL || (!functional && strcmp(cls, "Sequential")))
    return md_error_set(err, 1, 1, "expected a model config whose class_name is Sequential, Model or Functional "
                        "(as model.to_json() writes it), found %s", cls ? cls : "none");
  const json_t *config = json_object_get(root, "config");
  const json_t *layers = json_is_array(config) ? config : json_object_get(config, "layers");
  const char *at = member(skip_ws(text, end), end, "config");
  if (!json_is_array(config)) at = at ? member(at, end, "layers") : NULL;
  size_t total = json_array_size(layers);
  if (!json_is_array(layers) || total == 0 || at == NULL)
    return md_error_set(err, 1, 1, "expected config.layers, a list of layers");
  const char *layer_at = skip_ws(at + 1, end);  /* the first layer's object; each next one's below */
  int line = 1, col = 1;
  position_from(text, layer_at, &line, &col);
  if (total > MD_KERAS_MAX_LAYERS)
    return md_error_set(err, line, col, "expected at most %d layers (InputLayers included), found %zu",
                        MD_KERAS_MAX_LAYERS, total);
  k->layers = base_xcalloc(total, sizeof *k->layers);
  k->line = base_xcalloc(total, sizeof *k->line);
  k->col = base_xcalloc(total, sizeof *k->col);
  char (*names)[MD_LAYER_NAME_MAX] = base_xcalloc(total, sizeof *names);
  const json_t *input_layers = functional ? json_object_get(config, "input_layers") : NULL;
  md_shape shapes[MD_MAX_MODEL_INPUTS], first = {0};
  kj_ctx c = {.k = k, .err = err, .functional = functional};
  size_t i;
  const json_t *layer;
  int rc = 0;
  json_array_foreach(layers, i, layer) {
    const json_t *lc = json_object_get(layer, "config");
    c.at = (int)i;
    if (i > 0) {
      const char *next = next_element(layer_at, end);
      position_from(layer_at, next, &line, &col);
      layer_at = next;
    }
    c.line = line;
    c.col = col;
    c.class_name = json_string_value(json_object_get(layer, "class_name"));
    c.name = json_string_value(json_object_get(layer, "name"));
    if (c.name == NULL) c.name = json_string_value(json_object_get(lc, "name"));
    if (c.name == NULL) c.name = "(unnamed)";
    if (c.class_name == NULL) c.class_name = "(none)";
    const kj_class *kc = class_of(c.class_name);
    if (kc == NULL) {
      rc = fail(&c, "unknown layer kind: podsim has InputLayer, Dense, Embedding, Conv2D, DepthwiseConv2D, "
                "MaxPooling2D, AveragePooling2D, GlobalAveragePooling2D, Flatten, Reshape, Dropout, "
                "LayerNormalization, RMSNormalization, UnitNormalization, BatchNormalization, Activation, Softmax, MultiHeadAttention, Add, "
                "Multiply and Concatenate");
      break;
    }
    if (!json_is_object(lc) || strlen(c.name) >= MD_LAYER_NAME_MAX) {
      rc = fail(&c, "expected a config mapping and a name of at most 47 characters");
      break;
    }
    md_layer_spec *l = &k->layers[k->nlayers];
    memset(l, 0, sizeof *l);
    /* An InputLayer reads its options into this slot too, then gives it back to the next layer. */
    l->kind = kc->kind < 0 ? MD_LAYER_DENSE : (md_layer_kind)kc->kind;
    l->use_bias = 1;  /* Keras's default when a config leaves use_bias out */
    if (kc->kind < 0 && k->ninputs > 0) c.have_input = 0;  /* another InputLayer: its own shape */
    if ((rc = read_config(&c, kc, lc, l)) != 0) break;
    if (kc->kind < 0) {  /* an InputLayer: the input's name and shape, no layer */
      int slot = input_slot(input_layers, c.name, k->ninputs);
      if (!c.have_input || slot < 0 || k->inputs[slot].name[0]) {
        rc = fail(&c, "%s", !c.have_input ? "an input without batch_input_shape"
                            : "an input config.input_layers does not list once (podsim reads Keras's model.inputs)");
        break;
      }
      snprintf(k->inputs[slot].name, sizeof k->inputs[slot].name, "%s", c.name);
      shapes[slot] = k->input_shape;
      if (k->ninputs++ == 0) first = k->input_shape;
      k->input_shape = first;
      continue;
    }
    snprintf(l->name, sizeof l->name, "%s", c.name);
    snprintf(names[k->nlayers], MD_LAYER_NAME_MAX, "%s", c.name);
    if (functional && (rc = inbound(&c, json_object_get(layer, "inbound_nodes"), names, k->nlayers, l)) != 0)
      break;
    k->line[k->nlayers] = c.line;
    k->col[k->nlayers] = c.col;
    k->nlayers++;
  }
  free(names);
  if (rc == 0 && json_is_array(input_layers) && ref_count(input_layers) != (size_t)k->ninputs)
    rc = md_error_set(err, 1, 1, "config.input_layers lists %zu inputs, the config has %d InputLayers",
                      ref_count(input_layers), k->ninputs);
  if (rc == 0 && k->ninputs > 1) rc = type_inputs(k, shapes, err);
  k->input_ids = k->ninputs <= 1 && k->nlayers > 0 && k->layers[0].kind == MD_LAYER_EMBEDDING;
  /* Keras's Embedding keeps [input_length, output_dim]; podsim's combines an example's ids into
  ** one row, the same values only for one id per example. */
  if (rc == 0 && k->input_ids && c.have_input && (k->input_shape.rank != 1 || k->input_shape.dim[0] != 1))
    rc = md_error_set(err, k->line[0], k->col[0], "layer %s (class_name Embedding): expected one id per example "
                      "(input shape [1]): podsim's embedding gives one row per example", k->layers[0].name);
  if (rc == 0 && (k->nlayers == 0 || (!c.have_input && !k->input_ids)))
    rc = md_error_set(err, 1, 1, "expected an InputLayer or a first layer with batch_input_shape, and a layer after it");
  if (rc == 0 && functional) {
    const json_t *outputs = json_object_get(config, "output_layers");
    const char *last = ref_name(outputs, 0);
    if (ref_count(outputs) != 1 || last == NULL ||
        strcmp(last, k->layers[k->nlayers - 1].name))
      rc = md_error_set(err, k->line[k->nlayers - 1], k->col[k->nlayers - 1],
                        "expected one output, the last layer's (%s): podsim's model output is its last layer",
                        k->layers[k->nlayers - 1].name);
  }
  return rc ? rc : check_shapes(k, err);
}

int md_keras_parse(const char *text, size_t len, md_keras_model *out, md_error *err) {
  memset(out, 0, sizeof *out);
  /* jansson reads a NUL byte as the end of the text, where the scanner would read on. */
  const char *nul = memchr(text, 0, len);
  if (nul != NULL) {
    int line, col;
    position(text, nul, &line, &col);
    return md_error_set(err, line, col, "a NUL byte: a model config is JSON text");
  }
  json_error_t je;
  json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
  if (root == NULL) return md_error_set(err, je.line, je.column, "%s", je.text);
  int rc = json_is_object(root) ? read_layers(text, text + len, root, out, err)
                                : md_error_set(err, 1, 1, "expected a model config (a JSON object)");
  json_decref(root);
  if (rc) md_keras_free(out);
  return rc;
}

int md_keras_read(const char *path, md_keras_model *out, md_error *err) {
  memset(out, 0, sizeof *out);
  FILE *f = base_fopen_regular(path);
  if (f == NULL) return md_error_set(err, 0, 0, "cannot open %s: %s", path, base_open_error(errno));
  size_t cap = 1 << 16, n = 0, got;
  char *text = base_xrealloc(NULL, cap);
  while ((got = fread(text + n, 1, cap - n, f)) > 0)
    if ((n += got) == cap) text = base_xrealloc(text, cap *= 2);
  fclose(f);
  int rc = md_keras_parse(text, n, out, err);
  free(text);
  return rc;
}

void md_keras_free(md_keras_model *k) {
  free(k->layers);
  free(k->line);
  free(k->col);
  memset(k, 0, sizeof *k);
}
