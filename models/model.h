/*
** model.h: a sequential Keras-like model with real float32 forward and backward passes.
**
** Layers are named as Keras names them (dense, dense_1, embedding, ...); variables are
** LAYER/kernel [inputs, units] row-major, LAYER/bias [units], LAYER/embeddings [vocab, dim],
** in layer order (kernel before bias).
*/
#ifndef PODSIM_MODEL_H
#define PODSIM_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <gsl/gsl_rng.h>
#include "models/cost.h"
#include "models/error.h"

typedef enum { MD_ACT_NONE = 0, MD_ACT_RELU, MD_ACT_SIGMOID, MD_ACT_TANH, MD_ACT_SOFTMAX } md_activation;
typedef enum { MD_LAYER_DENSE = 0, MD_LAYER_EMBEDDING } md_layer_kind;
typedef enum { MD_COMBINER_MEAN = 0, MD_COMBINER_SUM } md_combiner;

typedef struct md_layer_spec {
  md_layer_kind kind;     /* dense or embedding */
  int units;              /* dense: output width */
  md_activation activation; /* dense: applied after the affine map */
  int use_bias;           /* dense: 1 adds LAYER/bias */
  int vocab;              /* embedding: rows of LAYER/embeddings */
  int dim;                /* embedding: columns */
  md_combiner combiner;   /* embedding: how the ids of one example combine */
} md_layer_spec;

typedef struct md_model_spec {
  int input_features;     /* width of a float input row; 0 when the input is ids */
  int input_ids;          /* ids per example for an id input (embedding first); 0 otherwise */
  int input_vocab;        /* ids are in [0, input_vocab) */
  int nlayers;            /* entries in layers */
  const md_layer_spec *layers; /* in order, first applied first */
  int from_logits;        /* sparse_categorical_crossentropy reads logits (1) or probabilities (0) */
  int shapes_only;        /* 1: no values anywhere (numerics off): every op only counts its cost */
} md_model_spec;

typedef struct md_var {
  char name[64];          /* e.g. "dense_1/kernel" */
  int rank;               /* 1 or 2 */
  int64_t shape[2];       /* shape[0] (and shape[1] when rank 2) */
  size_t size;            /* number of elements */
  float *data;            /* size floats, row-major, owned by the model; NULL when shapes only */
} md_var;

typedef struct md_model md_model;

/* Validates the spec (NULL and err->msg when a layer cannot follow the previous one).
** A shapes-only model (numerics off) holds no values: its variables, workspaces, gradients and
** optimizer slots have NULL data, batches carry no x, ids or labels, and a train step counts
** exactly the costs a real one would (loss 0), so models too large for the host can be timed. */
md_model *md_model_new(const md_model_spec *spec, md_error *err);
/* An independent copy with the same variable values (a replica's mirrored copy). */
md_model *md_model_clone(const md_model *m);
void      md_model_free(md_model *m);
int       md_model_num_vars(const md_model *m);
md_var   *md_model_var(md_model *m, int i);
const md_var *md_model_var_const(const md_model *m, int i);
int       md_model_find_var(const md_model *m, const char *name);   /* index or -1 */
size_t    md_model_num_params(const md_model *m);
int       md_model_num_classes(const md_model *m);                  /* last layer's units */
/* Keras defaults: kernels glorot_uniform (limit sqrt(6/(fan_in+fan_out)), row-major draws,
** one stream, variables in order), biases zeros, embeddings uniform(-0.05, 0.05). */
void      md_model_init_default(md_model *m, gsl_rng *rng);

/* A batch: n examples, x[n*input_features] or ids[n*input_ids], labels[n]. */
typedef struct md_batch {
  int n;                  /* examples in the batch (may be 0) */
  const float *x;         /* float features, row-major, or NULL */
  const int32_t *ids;     /* integer ids, row-major, or NULL */
  const int32_t *labels;  /* class index per example */
} md_batch;

/* Scratch space for one replica (activations kept for backward), grown on demand. */
typedef struct md_workspace md_workspace;
md_workspace *md_workspace_new(const md_model *m);
void          md_workspace_free(md_workspace *w);

/* Gradient buffers shaped like the model's variables. An embedding's gradient is also kept as
** TF computes it, the gradient of a gather (tf.IndexedSlices): indices = the batch's ids in batch
** order, duplicates included, values = one row per id; g of that variable is the values'
** unsorted_segment_sum, added from zero in the same order (so the same bits).
** Slices only (md_grads_new_slices): the embedding's gradient is its IndexedSlices alone, as a
** parameter-server worker holds it: its dense g is never allocated, zeroed nor accumulated
** (g[slices_var] is NULL) and the backward pass's cost counts only the n*ids rows, not the
** [vocab, dim] table. Sync strategies keep the dense form: they all-reduce dense tensors. */
typedef struct md_grads {
  int nvars;              /* same as the model's */
  float **g;              /* g[i] has md_model_var(m,i)->size floats; NULL: shapes only, or the
                          ** embedding's under slices_only */
  int slices_var;         /* the embedding's variable, -1 without one (it can only be layer 0) */
  int slices_only;        /* 1: that variable's gradient is its slices alone (no dense g) */
  float *slices;          /* its IndexedSlices values of the last step: n*ids rows of dim floats */
  size_t slices_cap;      /* floats allocated in slices */
} md_grads;
md_grads *md_grads_new(const md_model *m);
md_grads *md_grads_new_slices(const md_model *m);
void      md_grads_free(md_grads *g);

/* Forward and backward over the batch. The loss differentiated is scale * sum of the
** per-example sparse categorical cross-entropies (scale = 1, 1/n or 1/G for the three loss
** reductions). Overwrites grads; *loss_sum gets the unscaled sum of per-example losses
** (accumulated in double). Adds the forward+backward cost to *cost. n == 0 gives zero grads. */
void md_model_train_step(md_model *m, md_workspace *w, const md_batch *b, float scale,
                         md_grads *grads, double *loss_sum, md_cost *cost);
/* Forward only: the last layer's output (n * num_classes floats, after its activation), owned by
** w and valid until w is next used; NULL when n == 0. Cost added to *cost. */
const float *md_model_forward(md_model *m, md_workspace *w, const md_batch *b, md_cost *cost);
/* Forward only: per-example losses summed (for evaluation), cost added to *cost. */
double md_model_loss(md_model *m, md_workspace *w, const md_batch *b, md_cost *cost);
/* Bytes of activations a batch of n keeps alive for backward (for memory accounting). */
double md_model_activation_bytes(const md_model *m, int n);

#endif
