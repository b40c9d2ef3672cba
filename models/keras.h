/*
** keras.h: a Keras model config as `model.to_json()` writes it (TensorFlow.js's `model.toJSON()`
** writes the same), read into the layer specs of models/ (md_keras_). Sequential and Functional
** models of the kinds podsim has; the layers keep their Keras names, so the variables are named
** as Keras names them.
*/
#ifndef PODSIM_KERAS_H
#define PODSIM_KERAS_H

#include <stddef.h>

#include "models/error.h"
#include "models/model.h"

/* Layers a config may hold, InputLayers included: the scenario's own bound on model.layers
** (SCN_MAX_LAYERS), checked before any layer is read, so a 100000-layer file is refused at once. */
#define MD_KERAS_MAX_LAYERS 1024

typedef struct md_keras_model {
  md_shape input_shape;   /* one example's input: the InputLayer's (or first layer's) batch shape
                          ** without the batch */
  int input_ids;          /* 1: the input is one integer id per example (an Embedding first, vocab
                          ** its input_dim); 0: float input_shape */
  int ninputs;            /* InputLayers read; above 1, the model's several inputs below */
  md_model_input inputs[MD_MAX_MODEL_INPUTS]; /* several InputLayers: Keras's model.inputs in
                          ** config.input_layers' order, each ids (an Embedding reads it: one id,
                          ** vocab its input_dim) or features (a float vector) */
  int nlayers;            /* entries in layers, line and col */
  md_layer_spec *layers;  /* owned; each with its Keras name and, in a Functional model, inputs */
  int *line, *col;        /* owned: where each layer's object starts in the JSON text (1-based) */
  md_dtype_policy dtype_policy; /* the layers' dtype policy (Keras 3's DTypePolicy; float32 when
                          ** none gives one), one for every layer */
} md_keras_model;

/* Reads len bytes of JSON text; file names it in messages. On an error (bad JSON, an unknown
** class_name, an option podsim does not have, a layer that cannot follow its inputs, more than
** MD_KERAS_MAX_LAYERS layers) returns -1
** with err's line and column at the offending layer's object (or the JSON error) and a message
** naming the layer and its class_name; *out is then empty. */
int  md_keras_parse(const char *text, size_t len, md_keras_model *out, md_error *err);
/* The model spec k describes (its layers, its input or inputs, pointing into k), shapes only off;
** the caller sets the loss and the rest. */
md_model_spec md_keras_model_spec(const md_keras_model *k);
/* The same from a file. */
int  md_keras_read(const char *path, md_keras_model *out, md_error *err);
void md_keras_free(md_keras_model *k);

#endif
