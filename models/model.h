/*
** model.h: a Keras-like model with real float32 forward and backward passes: a Sequential stack,
** or a graph whose layers name the earlier layers they read (Add, Concatenate).
**
** Layers are named as Keras names them (dense, dense_1, embedding, conv2d, ...); variables are
** LAYER/kernel [inputs, units] row-major, LAYER/bias [units], LAYER/embeddings [vocab, dim],
** conv2d's LAYER/kernel [h, w, in, filters], layer_normalization's LAYER/gamma and LAYER/beta
** [channels], multi_head_attention's LAYER/query/kernel, ... (layers/multi_head_attention.c),
** batch_normalization's LAYER/gamma, LAYER/beta, LAYER/moving_mean, LAYER/moving_variance (the
** last two not trainable), in layer order (kernel before bias). Activations are NHWC: an example's [h, w, c]
** is row-major with the channels innermost, as Keras's channels_last.
*/
#ifndef PODSIM_MODEL_H
#define PODSIM_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <gsl/gsl_rng.h>
#include "models/cost.h"
#include "models/error.h"

/* gelu is Keras's exact 0.5 x (1 + erf(x / sqrt 2)); gelu_tanh its approximate=True form
** 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); swish (silu) x sigmoid(x). Softmax runs over
** the last axis. */
typedef enum { MD_ACT_NONE = 0, MD_ACT_RELU, MD_ACT_SIGMOID, MD_ACT_TANH, MD_ACT_SOFTMAX,
               MD_ACT_GELU, MD_ACT_GELU_TANH, MD_ACT_SWISH, MD_ACT_COUNT } md_activation;
/* One kind per file under models/layers/, listed in layers/registry.c. */
typedef enum { MD_LAYER_DENSE = 0, MD_LAYER_EMBEDDING, MD_LAYER_CONV2D, MD_LAYER_MAX_POOLING2D,
               MD_LAYER_AVERAGE_POOLING2D, MD_LAYER_GLOBAL_AVERAGE_POOLING2D, MD_LAYER_FLATTEN,
               MD_LAYER_RESHAPE, MD_LAYER_DROPOUT, MD_LAYER_LAYER_NORMALIZATION, MD_LAYER_ACTIVATION,
               MD_LAYER_MULTI_HEAD_ATTENTION, MD_LAYER_BATCH_NORMALIZATION, MD_LAYER_DEPTHWISE_CONV2D,
               MD_LAYER_SOFTMAX, MD_LAYER_TOKEN_AND_POSITION_EMBEDDING, MD_LAYER_ADD, MD_LAYER_CONCATENATE,
               MD_LAYER_DOT_INTERACTION, MD_LAYER_GRAPH_NODE_FEATURES, MD_LAYER_GRAPH_SAGE,
               MD_LAYER_UNIT_NORMALIZATION, MD_LAYER_READOUT_FIRST_NODE, MD_LAYER_RMS_NORMALIZATION,
               MD_LAYER_MULTIPLY, MD_LAYER_KIND_COUNT } md_layer_kind;
/* How graph_sage joins a node's own transformed state and its pooled neighbours' (TF-GNN's
** GraphSAGENextState combine_type): their sum, or the two side by side (own first). */
typedef enum { MD_COMBINE_SUM = 0, MD_COMBINE_CONCAT } md_combine_type;
/* mean and sum combine an example's ids into one row (tf.nn.embedding_lookup_sparse); none keeps
** a row per id, [ids, dim], as Keras's Embedding layer does on a sequence. */
typedef enum { MD_COMBINER_MEAN = 0, MD_COMBINER_SUM, MD_COMBINER_NONE } md_combiner;
/* Keras's losses (keras.losses), per example: sparse_categorical_crossentropy reads one class
** index per example (md_batch.labels); the others read as many float targets as the last layer
** has outputs (md_batch.targets): categorical_crossentropy one-hot or soft labels summed over the
** classes, binary_crossentropy and mean_squared_error averaged over them (Keras's mean over the
** last axis). */
typedef enum { MD_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY = 0, MD_LOSS_CATEGORICAL_CROSSENTROPY,
               MD_LOSS_BINARY_CROSSENTROPY, MD_LOSS_MEAN_SQUARED_ERROR, MD_LOSS_KIND_COUNT } md_loss_kind;
/* As Keras: valid keeps only whole windows; same pads (more after than before when odd) so the
** output is ceil(in / stride). */
typedef enum { MD_PADDING_VALID = 0, MD_PADDING_SAME } md_padding;

#define MD_MAX_SHAPE_RANK 4
/* Inputs one layer can read (add, concatenate, dot_interaction: DLRM's bottom MLP and its 26
** Criteo tables are 27); every other kind reads one. */
#define MD_LAYER_MAX_INPUTS 32
/* A layer's name with its terminating zero: Keras's names, and explicit ones, are shorter. */
#define MD_LAYER_NAME_MAX 48
/* md_layer_spec.inputs: the model's input rather than a layer's output; with several model inputs
** (md_model_spec.inputs), MD_MODEL_INPUT(k) is input k (MD_INPUT_MODEL is input 0). */
#define MD_INPUT_MODEL (-1)
#define MD_MODEL_INPUT(k) (-1 - (k))
/* Model inputs one model can have (Keras's functional API with several Input layers). */
#define MD_MAX_MODEL_INPUTS 64

/* One example's shape (the batch dimension left out). */
typedef struct md_shape {
  int rank;               /* 1..MD_MAX_SHAPE_RANK */
  int dim[MD_MAX_SHAPE_RANK]; /* dim[0..rank) > 0 */
} md_shape;

/* Zero (or an empty shape) in a field means Keras's default, noted per field. */
typedef struct md_layer_spec {
  md_layer_kind kind;     /* which layer */
  int units;              /* dense: output width */
  md_activation activation; /* dense, conv2d, activation: applied to the output */
  int use_bias;           /* dense, conv2d, multi_head_attention: 1 adds the biases */
  int vocab;              /* embedding, token_and_position_embedding: rows of the (token) table */
  int dim;                /* embedding, token_and_position_embedding: columns */
  int sequence_length;    /* token_and_position_embedding: rows of the position table (0: the
                          ** input's ids) */
  md_combiner combiner;   /* embedding: how the ids of one example combine; graph_sage: how the
                          ** neighbours' states pool at a node (mean or sum, TF-GNN's reduce_type) */
  int graph_nodes;        /* graph_node_features: nodes per example of the packed graph input
                          ** (layers/graph.c), padding included */
  int graph_edges;        /* graph_node_features, graph_sage: edges per example of the packed graph
                          ** input, padding included */
  md_combine_type combine_type; /* graph_sage: sum (0, TF-GNN's default) or concat */
  int filters;            /* conv2d: output channels */
  int depth_multiplier;   /* depthwise_conv2d: filters per input channel (0: 1) */
  int kernel_size[2];     /* conv2d, depthwise_conv2d: kernel height and width */
  int strides[2];         /* convolutions (0: 1), poolings (0: pool_size) */
  int dilation_rate[2];   /* convolutions (0: 1) */
  md_padding padding;     /* convolutions, poolings */
  int pool_size[2];       /* poolings (0: 2) */
  float rate;             /* dropout: the fraction dropped, in [0, 1); multi_head_attention: of its
                          ** probabilities in a train step (Keras's `dropout`) */
  int seeded;             /* dropout: 1 draws its masks as Keras 3's TensorFlow backend does from a
                          ** SeedGenerator of state [seed, seed_draws] (layers/dropout.c); 0 from
                          ** the workspace's stream (md_workspace_set_rng) */
  int64_t seed;           /* dropout, seeded: the SeedGenerator's seed (Dropout's `seed`) */
  int64_t seed_draws;     /* dropout, seeded: the draws it made before the run (its state[1]) */
  md_shape target_shape;  /* reshape: one example's output, one dim may be -1 (inferred) */
  float epsilon;          /* layer_normalization, batch_normalization (0: Keras's 1e-3) */
  float momentum;         /* batch_normalization: of the moving statistics (0: Keras's 0.99) */
  int synchronized;       /* batch_normalization: 1 normalises a train step by the statistics of
                          ** every replica's batch (Keras's synchronized=True, tf.keras's
                          ** SyncBatchNormalization), through md_workspace_set_all_reduce's sum */
  int num_heads;          /* multi_head_attention */
  int key_dim;            /* multi_head_attention: per head, query and key */
  int value_dim;          /* multi_head_attention: per head (0: key_dim) */
  int use_causal_mask;    /* multi_head_attention: position i attends to positions <= i only */
  int num_key_value_heads; /* multi_head_attention: key and value heads (0: num_heads), each shared
                          ** by num_heads / num_key_value_heads query heads (grouped-query
                          ** attention; 1: multi-query) */
  float rope_max_wavelength; /* multi_head_attention: rotary position embeddings of q and k with
                          ** this wavelength (Llama's 10000, Llama 3's 500000); 0: none */
  int flash_attention;    /* multi_head_attention: 1 runs scores, softmax and context as one fused
                          ** kernel that keeps no S x S scores (Keras 3's flash_attention) */
  int axis;               /* softmax, concatenate: as Keras counts it, batch 0 (0: -1, the last);
                          ** layer_ and batch_normalization: must name the last */
  int ninputs;            /* entries in inputs; 0: the previous layer's output (layer 0: the
                          ** model's input), as in a Sequential model */
  int inputs[MD_LAYER_MAX_INPUTS]; /* what the layer reads, in order: an earlier layer's index or
                          ** MD_INPUT_MODEL */
  char name[MD_LAYER_NAME_MAX]; /* an explicit name; "": Keras's (kind, kind_1, ...) */
} md_layer_spec;

/* The elements of one example of that shape. */
int64_t md_shape_size(const md_shape *s);
/* "[6, 6, 2]": s as errors print it; returns buf. */
const char *md_shape_str(const md_shape *s, char *buf, size_t len);

/* Keras's snake-case name of a kind ("dense", "conv2d", "max_pooling2d", ...), and back (-1 when
** no kind has that name). */
const char *md_layer_kind_name(md_layer_kind kind);
int         md_layer_kind_from_name(const char *name);
/* Every layer's name as the model gives it: an explicit spec name, else Keras's kind, kind_1, ...
** counted over the layers without an explicit name, in order. A loader resolves input names
** with it before the model is built; the model names its layers and variables the same way. */
void        md_layer_names(const md_layer_spec *layers, int nlayers, char (*names)[MD_LAYER_NAME_MAX]);

/* Keras's dtype policies: variables are float32 under all three; mixed_bfloat16 and mixed_float16
** compute in 16 bits, so activations and their gradients are 2 bytes an element (HBM held,
** bytes moved) while variables, their gradients' reduction and optimizer slots stay float32. */
typedef enum { MD_POLICY_FLOAT32 = 0, MD_POLICY_MIXED_BFLOAT16, MD_POLICY_MIXED_FLOAT16 } md_dtype_policy;

/* One of several model inputs (Keras's Input layer): float features, or integer ids an
** id-reading layer (embedding) looks up. */
typedef struct md_model_input {
  char name[MD_LAYER_NAME_MAX]; /* the Input's name: what layers' inputs and the dataset call it */
  int features;           /* float columns per example; 0 for an id input */
  int ids;                /* ids per example; 0 for a float input */
  int vocab;              /* an id input's ids are in [0, vocab) */
} md_model_input;

typedef struct md_model_spec {
  int ninputs;            /* entries in inputs; 0: one input, given by the four fields below */
  const md_model_input *inputs; /* several model inputs, in the batch's column order (models/inputs.c):
                          ** a batch's x holds every input's columns of an example side by side,
                          ** an id input's ids as float values, as Keras's Embedding casts a float
                          ** input to int32 (exact below 2^24) */
  int input_features;     /* width of a float input row; 0 when the input is ids or input_shape */
  md_shape input_shape;   /* one example's float input of any rank (images [h, w, c]); rank 0:
                          ** [input_features] */
  int input_ids;          /* ids per example for an id input (embedding first); 0 otherwise */
  int input_vocab;        /* ids are in [0, input_vocab) */
  int nlayers;            /* entries in layers */
  const md_layer_spec *layers; /* in order, first applied first; each reads only earlier ones */
  md_loss_kind loss;      /* the loss trained (0: sparse_categorical_crossentropy) */
  int from_logits;        /* the cross-entropies read logits (1) or probabilities (0) */
  int shapes_only;        /* 1: no values anywhere (numerics off): every op only counts its cost */
  md_dtype_policy dtype_policy; /* the compute dtype of activations (float32 by default) */
  int rematerialize;      /* 1: a train step keeps only each layer's output for the backward and
                          ** recomputes the rest layer by layer (tf.recompute_grad, XLA's remat):
                          ** its forward is charged twice, its activations held are the outputs and
                          ** one layer's intermediates. The values, and so the bits, are the same.
                          ** MD_REMAT_BLOCKS: only the outputs of the layers that cut the model
                          ** (md_model_layer_cuts: a transformer block's output) are kept, and a
                          ** block's layers are recomputed from its input before its backward */
} md_model_spec;

enum { MD_REMAT_BLOCKS = 2 };  /* md_model_spec.rematerialize: recompute whole blocks */

typedef struct md_var {
  char name[64];          /* e.g. "dense_1/kernel" */
  int rank;               /* 1 .. MD_MAX_SHAPE_RANK (conv kernels [h, w, in, out]) */
  int64_t shape[MD_MAX_SHAPE_RANK]; /* shape[0..rank) */
  size_t size;            /* number of elements */
  float *data;            /* size floats, row-major, owned by the model; NULL when shapes only */
  int trainable;          /* 1: the optimizer updates it from its gradient; 0: its layer updates it
                          ** in a train step (batch_normalization's moving statistics), its
                          ** gradient is zero and it has no optimizer slots, as in Keras */
} md_var;

/* "8" or "8x16" or "3x3x2x4": v's shape as variables.csv writes it; returns buf. */
const char *md_var_shape_str(const md_var *v, char *buf, size_t len);

typedef struct md_model md_model;

/* Several model inputs (models/inputs.c). The columns a batch row holds for them all. */
int md_inputs_width(const md_model_input *in, int n);
/* The index of the input named `name`, -1 when none is. */
int md_inputs_find(const md_model_input *in, int n, const char *name);
/* Where md_inputs_check_ids found a value that is no id of its input. */
typedef struct md_inputs_bad {
  size_t row;             /* the row, 0-based */
  int column;             /* the column of the row, 0-based */
  int input;              /* the input the column belongs to */
  double value;           /* what it holds */
} md_inputs_bad;
/* Every id column of rows x (md_inputs_width columns each) holds an integer in [0, vocab) below
** 2^24: 0, else -1 with *bad the first that does not. */
int md_inputs_check_ids(const md_model_input *in, int n, const float *x, size_t rows, md_inputs_bad *bad);

/* Validates the spec (NULL and err->msg when a layer cannot follow the previous one).
** A layer reads the outputs its spec's inputs name (earlier layers only, so the layer order is
** a topological order of the graph); the last layer's output is the model's. A layer's output
** that nothing after it reads (and is not the last) gets no gradient: its layer's gradients are
** zero, as Keras's are for a layer off the path to the output.
** A shapes-only model (numerics off) holds no values: its variables, workspaces, gradients and
** optimizer slots have NULL data, batches carry no x, ids or labels, and a train step counts
** exactly the costs a real one would (loss 0), so models too large for the host can be timed. */
md_model *md_model_new(const md_model_spec *spec, md_error *err);
/* An independent copy with the same variable values (a replica's mirrored copy). */
md_model *md_model_clone(const md_model *m);
/* A copy that shares m's trainable variables' storage (MirroredVariable values that every replica
** updates alike: issue 31's pod-scale numerics) and owns a copy of the rest (non-trainable ones,
** batch_normalization's statistics, are each replica's own). m must outlive it; nothing may write
** the shared values through it but what would write the same into m. */
md_model *md_model_clone_mirrored(const md_model *m);
void      md_model_free(md_model *m);
int       md_model_num_vars(const md_model *m);
md_var   *md_model_var(md_model *m, int i);
const md_var *md_model_var_const(const md_model *m, int i);
int       md_model_find_var(const md_model *m, const char *name);   /* index or -1 */
size_t    md_model_num_params(const md_model *m);
int       md_model_num_classes(const md_model *m);                  /* last layer's units */
/* The positions of the last layer's output that each take a class label under
** sparse_categorical_crossentropy: 1 for a vector, the leading axes' product for a sequence
** [positions, classes] (a language model's next-token scores). */
int       md_model_label_positions(const md_model *m);
int       md_model_num_layers(const md_model *m);
/* Layer l's name, its variables (count, and the index of the first: a layer's variables
** are consecutive) and one example's output shape. */
const char *md_model_layer_name(const md_model *m, int l);
int       md_model_layer_num_vars(const md_model *m, int l);
int       md_model_layer_first_var(const md_model *m, int l);
md_shape  md_model_layer_output_shape(const md_model *m, int l);
/* What layer l reads, in order, into inputs[MD_LAYER_MAX_INPUTS]: an earlier layer's index or
** MD_MODEL_INPUT(k); returns how many. And its kind's name (docs/layers.md). */
int       md_model_layer_inputs(const md_model *m, int l, int *inputs);
const char *md_model_layer_kind(const md_model *m, int l);
/* Bytes of one activation element under the model's dtype policy (4, or 2 when mixed). */
double    md_model_act_bytes(const md_model *m);
/* Keras defaults: kernels glorot_uniform (limit sqrt(6/(fan_in+fan_out)), row-major draws,
** one stream, variables in order), biases zeros, embeddings uniform(-0.05, 0.05). */
void      md_model_init_default(md_model *m, gsl_rng *rng);

/* A batch: n examples, x[n*input_features] or ids[n*input_ids], labels[n] or targets[n*classes]. */
typedef struct md_batch {
  int n;                  /* examples in the batch (may be 0) */
  const float *x;         /* float features, row-major, or NULL */
  const int32_t *ids;     /* integer ids, row-major, or NULL */
  const int32_t *labels;  /* class index per example (sparse_categorical_crossentropy), one per
                          ** position of a sequence output (md_model_label_positions) */
  const float *targets;   /* the other losses: md_model_num_classes floats per example, row-major */
} md_batch;

/* Scratch space for one replica (activations kept for backward), grown on demand. */
typedef struct md_workspace md_workspace;
md_workspace *md_workspace_new(const md_model *m);
void          md_workspace_free(md_workspace *w);
/* The stream a train step's dropout layers draw their masks from (one uniform per element, in
** layer order then row-major), owned by the caller; a model with dropout needs one to train. */
void          md_workspace_set_rng(md_workspace *w, gsl_rng *rng);
/* The SeedGenerator draw a seeded dropout layer's next train-step forward makes, beyond its
** seed_draws: Keras draws one a training call, the same on every replica (a MirroredStrategy's
** replicas read one seed state), so a program sets it to the number of training forwards before
** the step. Each md_model_train_step then moves it on by one. */
void          md_workspace_set_dropout_draw(md_workspace *w, int64_t draw);
/* The sum over the replicas a train step's synchronized batch normalisations reduce their
** statistics with (the strategy's all-reduce, from the replica's own actor): fn(ctx, buf, n) adds
** every replica's n floats into buf, in place; buf is NULL in a shapes-only model (the collective
** only takes its time). Without one (fn NULL, the default) a replica's statistics are its own. */
typedef void (*md_all_reduce_fn)(void *ctx, float *buf, size_t n);
void          md_workspace_set_all_reduce(md_workspace *w, md_all_reduce_fn fn, void *ctx);
/* Where a train step's gradients become final, for a program that overlaps their all-reduce
** with the backward pass: `marks` (nlayers + 1 entries, the caller's) receives, when the step's
** cost has an op log, at [nlayers] the log's length once the forward and the loss are logged, and
** at [l] its length once layer l's backward is (its variables' gradients final; layers run from
** the last to the first, so the marks fall as l rises). A step on no examples logs everything
** first: every mark is the log's final length. NULL (the default) records nothing. */
void          md_workspace_set_marks(md_workspace *w, size_t *marks);

/* Gradient buffers shaped like the model's variables. A table an id-reading layer looks up (an
** embedding's, a token embedding's; each of several model inputs' tables) also keeps its
** gradient as TF computes it, the gradient of a gather (tf.IndexedSlices): indices = the batch's
** ids in batch order, duplicates included, values = one row per id; g of that variable is the
** values' unsorted_segment_sum, added from zero in the same order (so the same bits).
** Slices only (md_grads_new_slices): a table's gradient is its IndexedSlices alone, as a
** parameter-server worker holds it: its dense g is never allocated, zeroed nor accumulated
** (g[v] is NULL) and the backward pass's cost counts only the n*ids rows, not the [vocab, dim]
** table. Sync strategies keep the dense form: they all-reduce dense tensors. */
typedef struct md_grads {
  int nvars;              /* same as the model's */
  float **g;              /* g[i] has md_model_var(m,i)->size floats; NULL: shapes only, or a
                          ** table's under slices_only */
  int ntables;            /* variables with table[i] */
  unsigned char *table;   /* per variable: 1 for a table looked up by the batch's ids */
  int slices_only;        /* 1: the tables' gradients are their slices alone (no dense g) */
  float **slices;         /* per variable: a table's IndexedSlices values of the last step, n*ids
                          ** rows of its width; NULL for the others (and with shapes only) */
  size_t *slices_cap;     /* per variable: floats allocated in slices[i] */
} md_grads;
md_grads *md_grads_new(const md_model *m);
md_grads *md_grads_new_slices(const md_model *m);
void      md_grads_free(md_grads *g);
/* Variable v's IndexedSlices values of the last step, NULL when v is no table (or shapes only). */
float    *md_grads_slices(const md_grads *g, int v);
/* 1 when variable v's gradient is its slices alone (a table under md_grads_new_slices). */
int       md_grads_sparse(const md_grads *g, int v);
/* The ids table variable v's layer looked up for batch b, n*ids of them in batch order, into out
** (as int64, the dtype tf.data gives them); how many (0 when v is no table). Zeros when the
** batch holds no values (numerics off): only their count is known. */
size_t    md_model_table_ids(const md_model *m, int v, const md_batch *b, int64_t *out);
/* The ids per example table variable v's layer looks up (0 when v is no table). */
int       md_model_table_ids_per_example(const md_model *m, int v);
/* 1 when, under a mixed policy, v's layer reads it as the compute dtype's cast (Keras's
** AutoCastVariable); 0 when Keras reads it in float32: a normalisation layer's variables
** (float32_variables) and an id table (Keras 3's Embedding sets `self.autocast = False` and casts
** the rows it takes: keras/src/layers/core/embedding.py). */
int       md_model_var_cast(const md_model *m, int v);

/* Forward and backward over the batch. The loss differentiated is scale * sum of the
** per-example losses of the model's md_loss_kind (scale = 1, 1/n or 1/G for the three loss
** reductions). Overwrites grads; *loss_sum gets the unscaled sum of per-example losses
** (accumulated in double). Adds the forward+backward cost to *cost. n == 0 gives zero grads. */
void md_model_train_step(md_model *m, md_workspace *w, const md_batch *b, float scale,
                         md_grads *grads, double *loss_sum, md_cost *cost);
/* Forward only: the last layer's output (n * num_classes floats, after its activation), owned by
** w and valid until w is next used; NULL when n == 0. Cost added to *cost. */
const float *md_model_forward(md_model *m, md_workspace *w, const md_batch *b, md_cost *cost);
/* The last layer's output of the latest forward or train step on w (what md_model_forward returns;
** a train step's predictions, before its update, for the compiled metrics). */
const float *md_model_last_output(const md_model *m, const md_workspace *w);
/* Forward only: per-example losses summed (for evaluation), cost added to *cost. */
double md_model_loss(md_model *m, md_workspace *w, const md_batch *b, md_cost *cost);
/* Bytes of activations a batch of n keeps alive for backward (for memory accounting). */
double md_model_activation_bytes(const md_model *m, int n);
/* 1 when a train step's layers reduce across the replicas (synchronized batch normalisation,
** through md_workspace_set_all_reduce): the step's pass then takes simulated time of its own. */
int    md_model_cross_replica(const md_model *m);
/* What layer l's forward keeps for its backward on a batch of n beyond its inputs and output:
** its z when an activation makes the output a second array, and its saved floats (dropout's
** mask), in the compute dtype. */
double md_model_layer_saved_bytes(const md_model *m, int l, int n);
/* 1 when layer l cuts the model: no later layer reads a layer (or a model input) before it, so
** its output alone carries everything before it forward (a transformer block's last add). */
int md_model_layer_cuts(const md_model *m, int l);
/* What layer l's gradient ops read of its forward, as TensorFlow's registered gradients do
** (ReluGrad reads the output, FusedBatchNormGrad the input, AddN's gradient nothing): a mask of
** MD_BACKWARD_READS_*. Buffer liveness keeps an activation until the last backward that reads it. */
enum { MD_BACKWARD_READS_INPUTS = 1, MD_BACKWARD_READS_OUTPUT = 2, MD_BACKWARD_READS_SAVED = 4 };
int md_model_layer_backward_reads(const md_model *m, int l);

/* Megatron-style tensor parallelism as XLA's SPMD partitioner runs it when every kernel that
** can be split is given to experimental_split_to_logical_devices over a replica's `devices`
** logical devices (model.c invariant 9): the variable floats one device holds (optimizer slots
** and gradients divide alike) and the activation collectives the partitioner inserts among the
** replica's devices, per example, by pass (0 forward, 1 backward). */
typedef struct md_tensor_parallel {
  double floats_per_device;  /* variable floats a device holds: a split one's 1/devices, the rest whole */
  int split_layers;          /* layers whose variables split */
  int all_reduces[2];        /* all-reduces of partial sums issued in a pass */
  double all_reduce_bytes[2];/* their bytes per example (each device's whole buffer) */
  int all_gathers[2];        /* all-gathers of split activations issued in a pass */
  double all_gather_bytes[2];/* their bytes per example (the gathered whole) */
} md_tensor_parallel;
void md_model_tensor_parallel(const md_model *m, int devices, md_tensor_parallel *tp);
/* The same choice layer by layer, for the compile layer's tensor-parallel recipes
** (compile/shard_tensor_parallel.c): which of a layer's variables split over two devices or more
** and the activation collectives it then issues, each with its elements per example. */
typedef struct md_tp_collective {
  int pass;                  /* 0 forward, 1 backward */
  int gather;                /* 1 an all-gather of a split activation, 0 an all-reduce of a partial sum */
  double elements;           /* per example: the gathered whole, or each device's whole buffer */
} md_tp_collective;
typedef struct md_tp_layer {
  unsigned split;            /* bit k: the layer's variable k splits */
  double in, out;            /* elements per example of its input and its output */
  int ncoll;                 /* collectives it issues */
  md_tp_collective coll[4];  /* in issue order */
} md_tp_layer;
/* Fills out[0..layers) as split over `devices` (1: nothing splits). */
void md_model_tensor_parallel_layers(const md_model *m, int devices, md_tp_layer *out);

#endif
