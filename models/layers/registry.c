/*
** registry.c: the table of layer kinds (md_layer_ops_of) and the shape helpers every kind uses.
** Adding a kind is its file under layers/, its md_layer_kind and its line here.
**
** Invariants:
**   1. registry[k] is the table of kind k, for every k < MD_LAYER_KIND_COUNT (the static assert
**      below keeps the two lists the same length).
*/
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "models/modelsInt.h"

static const md_layer_ops *const registry[] = {
  [MD_LAYER_DENSE] = &md_dense_ops,
  [MD_LAYER_EMBEDDING] = &md_embedding_ops,
  [MD_LAYER_CONV2D] = &md_conv2d_ops,
  [MD_LAYER_MAX_POOLING2D] = &md_max_pooling2d_ops,
  [MD_LAYER_AVERAGE_POOLING2D] = &md_average_pooling2d_ops,
  [MD_LAYER_GLOBAL_AVERAGE_POOLING2D] = &md_global_average_pooling2d_ops,
  [MD_LAYER_FLATTEN] = &md_flatten_ops,
  [MD_LAYER_RESHAPE] = &md_reshape_ops,
  [MD_LAYER_DROPOUT] = &md_dropout_ops,
  [MD_LAYER_LAYER_NORMALIZATION] = &md_layer_normalization_ops,
  [MD_LAYER_ACTIVATION] = &md_activation_layer_ops,
  [MD_LAYER_MULTI_HEAD_ATTENTION] = &md_multi_head_attention_ops,
  [MD_LAYER_BATCH_NORMALIZATION] = &md_batch_normalization_ops,
  [MD_LAYER_DEPTHWISE_CONV2D] = &md_depthwise_conv2d_ops,
  [MD_LAYER_SOFTMAX] = &md_softmax_ops,
  [MD_LAYER_TOKEN_AND_POSITION_EMBEDDING] = &md_token_and_position_embedding_ops,
  [MD_LAYER_ADD] = &md_add_ops,
  [MD_LAYER_CONCATENATE] = &md_concatenate_ops,
  [MD_LAYER_DOT_INTERACTION] = &md_dot_interaction_ops,
  [MD_LAYER_GRAPH_NODE_FEATURES] = &md_graph_node_features_ops,
  [MD_LAYER_GRAPH_SAGE] = &md_graph_sage_ops,
  [MD_LAYER_UNIT_NORMALIZATION] = &md_unit_normalization_ops,
  [MD_LAYER_READOUT_FIRST_NODE] = &md_readout_first_node_ops,
  [MD_LAYER_RMS_NORMALIZATION] = &md_rms_normalization_ops,
  [MD_LAYER_MULTIPLY] = &md_multiply_ops,
};
_Static_assert(sizeof registry / sizeof registry[0] == MD_LAYER_KIND_COUNT,
               "every md_layer_kind has its table");

const md_layer_ops *md_layer_ops_of(md_layer_kind kind) {
  assert(kind >= 0 && kind < MD_LAYER_KIND_COUNT);
  return registry[kind];
}

const char *md_layer_kind_name(md_layer_kind kind) {
  return kind >= 0 && kind < MD_LAYER_KIND_COUNT ? registry[kind]->keras_name : "?";
}

int md_layer_kind_from_name(const char *name) {
  for (int k = 0; k < MD_LAYER_KIND_COUNT; k++)
    if (strcmp(registry[k]->keras_name, name) == 0) return k;
  return -1;
}

int64_t md_shape_size(const md_shape *s) {
  int64_t n = 1;
  for (int i = 0; i < s->rank; i++) n *= s->dim[i];
  return n;
}

const char *md_shape_str(const md_shape *s, char *buf, size_t len) {
  size_t n = (size_t)snprintf(buf, len, "[");
  for (int i = 0; i < s->rank && n < len; i++) n += (size_t)snprintf(buf + n, len - n, i ? ", %d" : "%d", s->dim[i]);
  if (n < len) snprintf(buf + n, len - n, "]");
  return buf;
}

int md_layer_example_axis(int keras_axis, int rank) {
  int axis = keras_axis == 0 ? -1 : keras_axis;
  int a = axis < 0 ? rank + axis : axis - 1;
  return a >= 0 && a < rank ? a : -1;
}

int md_layer_check_last_axis(const md_layer *l, md_error *err) {
  int rank = l->in_shape.rank;
  if (md_layer_example_axis(l->spec.axis, rank) == rank - 1) return 0;
  return md_error_set(err, 0, 0, "%s normalises over the last axis of its input (%d, or -1), found axis %d",
                      l->ops->keras_name, rank, l->spec.axis);
}

void md_layer_names(const md_layer_spec *layers, int nlayers, char (*names)[MD_LAYER_NAME_MAX]) {
  int kind_count[MD_LAYER_KIND_COUNT] = {0};
  for (int i = 0; i < nlayers; i++) {
    if (layers[i].name[0]) {
      snprintf(names[i], MD_LAYER_NAME_MAX, "%s", layers[i].name);
      continue;
    }
    /* Keras names the first layer of a kind plainly and the next ones with _1, _2, ... */
    int k = kind_count[layers[i].kind]++;
    if (k == 0) snprintf(names[i], MD_LAYER_NAME_MAX, "%s", md_layer_kind_name(layers[i].kind));
    else snprintf(names[i], MD_LAYER_NAME_MAX, "%s_%d", md_layer_kind_name(layers[i].kind), k);
  }
}
