/*
** modelsInt.h: struct bodies and module-internal functions of models/. Only the models/ sources and the
** models tests include this; every other layer holds opaque handles.
*/
#ifndef PODSIM_MODELSINT_H
#define PODSIM_MODELSINT_H

#include "base/base.h"

#include <stddef.h>
#include <stdint.h>
#include "models/cost.h"
#include "models/csvfile.h"
#include "models/error.h"
#include "models/model.h"

/* ---- layers/ (md_layer_): one file per layer kind, each exporting an md_layer_ops table that
** layers/registry.c lists by md_layer_kind. model.c runs every kind through its table alone. ---- */

#define MD_LAYER_MAX_VARS 8

typedef struct md_layer_ops md_layer_ops;

typedef struct md_layer {
  md_layer_spec spec;     /* the caller's spec, copied so the model owns it (defaults filled) */
  const md_layer_ops *ops; /* its kind's table */
  char name[MD_LAYER_NAME_MAX]; /* Keras name: dense, dense_1, conv2d, ... or the spec's */
  int ninputs;            /* entries in input: 1, or 2.. for a multi_input kind */
  int input[MD_LAYER_MAX_INPUTS]; /* what it reads: an earlier layer or MD_INPUT_MODEL */
  md_shape in_shapes[MD_LAYER_MAX_INPUTS]; /* one example of each input */
  md_shape in_shape;      /* in_shapes[0], the one input of a one-input kind: [features], [ids]
                          ** (embedding) or [h, w, c] */
  md_shape out_shape;     /* one example's output */
  int in;                 /* elements of in_shape */
  int out;                /* elements of out_shape */
  int nvars;              /* entries of var */
  int var[MD_LAYER_MAX_VARS]; /* model variable indices, in the layer's order (kernel, bias; ...) */
  int64_t saved;          /* floats per example the forward keeps for the backward (dropout mask;
                          ** attention's probabilities exceed an int at Llama 3's 8192 x 8192) */
  int kept;               /* floats a train step's forward keeps for the backward whatever the
                          ** batch (synchronized batch normalisation's statistics: a few floats a
                          ** channel, left out of the activation bytes) */
  int cross_replica;      /* 1: its train step's forward and backward all-reduce over the replicas
                          ** (md_workspace_set_all_reduce; synchronized batch normalisation), so a
                          ** replica with no examples still runs them, on its 0 examples */
  int live;               /* 1: its output reaches the model's, so its backward runs */
  int cuts;               /* md_model_layer_cuts: no later layer reads one before it */
  int readers;            /* live layers' inputs reading its output: above 1, its gradient is a
                          ** sum the backward holds from the last reader to the first */
  int dx_adds[MD_LAYER_MAX_INPUTS]; /* 1: input k's gradient goes to a scratch buffer and is added
                          ** to what later readers wrote; 0: the first written, straight into it */
} md_layer;

/* The kernel (or embeddings, or gamma) is a layer's first variable, its bias (beta) the second. */
#define MD_LAYER_KERNEL(l) ((l)->var[0])
#define MD_LAYER_BIAS(l) ((l)->nvars > 1 ? (l)->var[1] : -1)

typedef enum { MD_PASS_FORWARD = 0, MD_PASS_BACKWARD } md_pass;

/* How a layer's variables split over a replica's logical devices (md_model_tensor_parallel):
** columns on the output features (the output comes out split), rows on the input features (each
** device adds a partial sum of the whole output), heads a whole attention block split by its heads
** (whole input, whole output). */
typedef enum { MD_SPLIT_COLUMNS = 0, MD_SPLIT_ROWS, MD_SPLIT_HEADS, MD_SPLIT_WAYS } md_split_way;

/* One pass of one layer over n examples. Arrays are NULL in a shapes-only model, where only the
** cost op runs. */
typedef struct md_layer_run {
  int n;                  /* examples */
  const md_var *vars;     /* the model's variables */
  md_var *state;          /* the same, writable, in a train step's forward only (NULL otherwise):
                          ** for the non-trainable variables a layer updates itself */
  const float *x;         /* the input, n*in floats (NULL for an id input); xs[0] */
  const float *xs[MD_LAYER_MAX_INPUTS]; /* every input in order, n*in_shapes[k] floats each */
  const int32_t *ids;     /* the id input, n*in ids (embedding) */
  float *z;               /* forward: the output, n*out floats */
  float *saved;           /* n*saved floats written by forward, read by backward */
  int training;           /* 1 in a train step (dropout drops), 0 in evaluation */
  gsl_rng *rng;           /* the workspace's stream for dropout; NULL when none was set */
  int64_t draw;           /* seeded dropout: the workspace's SeedGenerator draw (md_workspace_set_dropout_draw) */
  const float *dz;        /* backward: dL/dz, n*out floats */
  int has_dx;             /* backward: 1 when the input needs its gradient (not the model's) */
  float *dx;              /* backward: dL/dx, n*in floats, written when has_dx; dxs[0] */
  float *dxs[MD_LAYER_MAX_INPUTS]; /* backward: each input's gradient (overwritten), NULL for the
                          ** model's input and in a shapes-only model */
  const md_grads *grads;  /* backward: the layer's variables' gradients are overwritten here */
  double act_bytes;       /* bytes of an activation element in the policy's compute dtype (4 for
                          ** float32, 2 under mixed_bfloat16 and mixed_float16): the costs' */
  float *kept;            /* l->kept floats, written by a train step's forward, read by backward */
  int shapes_only;        /* 1: a shapes-only model's pass (arrays NULL, only the cost op runs) */
  md_all_reduce_fn all_reduce; /* a train step's sum over the replicas (md_workspace_set_all_reduce),
                          ** NULL: one replica's own; also NULL in a rematerialised re-forward */
  void *all_reduce_ctx;   /* its argument */
} md_layer_run;

struct md_layer_ops {
  const char *keras_name; /* the class's snake-case name Keras names its layers by */
  int reads_ids;          /* 1: reads the integer id input, so it can only be the first layer */
  int has_activation;     /* 1: spec.activation applies to its output; else it is forced none */
  int float32_variables;  /* 1: under a mixed policy it reads its variables in float32 (Keras's
                          ** normalisation layers compute in float32); 0: rounded to the compute
                          ** dtype, as an AutoCastVariable reads */
  int multi_input;        /* 1: reads 2..MD_LAYER_MAX_INPUTS inputs (in_shapes, xs, dxs); 0: one */
  /* Fills the spec's defaults (Keras's), checks it against l->in_shape and sets l->out_shape and
  ** l->saved; fills err and returns -1 when the layer cannot follow its input. */
  int (*shape)(md_layer *l, md_error *err);
  /* Declares the layer's variables in Keras's order with md_model_add_var. */
  void (*variables)(md_layer *l, md_model *m);
  /* Keras's default initial values, drawn from rng in variable order, row-major. */
  void (*init)(const md_layer *l, md_var *vars, gsl_rng *rng);
  /* r->z from r->x (or r->ids): the math only, never called in a shapes-only model. */
  void (*forward)(const md_layer *l, const md_layer_run *r);
  /* The gradients of r->vars into r->grads (overwritten) and, with r->has_dx, r->dx. */
  void (*backward)(const md_layer *l, const md_layer_run *r);
  /* The ops one pass issues, each added to cost as one op in issue order (FMA 2 FLOPs, 4 bytes a
  ** float read or written): the one place a layer's cost is written, for both modes. */
  void (*cost)(const md_layer *l, const md_layer_run *r, md_pass pass, md_cost *cost);
  /* The layer's variables split when it is split `way`, a bit each (bit k: var[k]); 0 when its
  ** kind does not split that way. NULL: every variable stays whole on every device. */
  unsigned (*split)(const md_layer *l, md_split_way way);
};

/* The table of a kind (asserted in range). */
const md_layer_ops *md_layer_ops_of(md_layer_kind kind);

/* Every kind's table, one per file under layers/. */
extern const md_layer_ops md_dense_ops, md_embedding_ops, md_conv2d_ops, md_max_pooling2d_ops,
    md_average_pooling2d_ops, md_global_average_pooling2d_ops, md_flatten_ops, md_reshape_ops,
    md_dropout_ops, md_layer_normalization_ops, md_activation_layer_ops, md_multi_head_attention_ops,
    md_batch_normalization_ops, md_depthwise_conv2d_ops, md_softmax_ops,
    md_token_and_position_embedding_ops, md_add_ops, md_concatenate_ops, md_dot_interaction_ops;
/* The graph kinds (layers/graph.c, graph_sage.c, unit_normalization.c, readout_first_node.c). */
extern const md_layer_ops md_graph_node_features_ops, md_graph_sage_ops, md_unit_normalization_ops,
    md_readout_first_node_ops;
/* Llama's normalisation (layers/rms_normalization.c) and its SwiGLU's product (layers/multiply.c). */
extern const md_layer_ops md_rms_normalization_ops, md_multiply_ops;
/* A merge layer's output shape: its inputs' one shape, else an error "<what> inputs of one
** shape: ..." (layers/add.c; add and multiply). */
int md_merge_shape(md_layer *l, md_error *err, const char *what);

/* ---- layers/graph.c (md_graph_): the packed graph input. One example is a sampled subgraph
** padded to graph_nodes nodes and graph_edges edges: its node features [nodes, F] row-major, then
** the edges' source nodes, then their target nodes (graph_edges floats each, node indices local to
** the example, -1 for a padding edge), nodes * F + 2 graph_edges floats in all. ---- */

/* Edge j of example row p (a packed example of `width` floats, `edges` edges): 1 with its source
** and target when it is a real edge, 0 for a padding one. */
int md_graph_edge(const float *p, int width, int edges, int j, int *source, int *target);

/* ---- layers/embedding.c: id lookups the id-reading kinds share ---- */

/* out[i] = table row ids[i], count rows of the table's width. */
void md_embedding_gather(const md_var *table, const int32_t *ids, size_t count, float *out);
/* The gradient of md_embedding_gather of r->ids[0..count) into variable var: its dense
** gradient (zeroed, then each id's row of dz added in order) and, when var is the slices
** variable, a row per id (tf.IndexedSlices). */
void md_embedding_rows_grad(const md_layer_run *r, int var, const float *dz, size_t count);
/* Megatron's vocabulary-parallel embedding: the (token) table, var[0], split on its rows, each
** device looking up the ids in its range (zeros for the others), so every device holds a partial
** sum of the output: rows, the only way an id-reading kind splits. */
unsigned md_embedding_table_split(const md_layer *l, md_split_way way);

/* The 0-based axis of an example of the given rank that a Keras axis names (the batch is Keras's
** axis 0; 0 or -1 mean the last), or -1 when it names none: softmax's and concatenate's. */
int md_layer_example_axis(int keras_axis, int rank);
/* The normalisations' check that spec.axis (0: -1) names the last axis of the input, the one they
** normalise: 0, or -1 with err filled. */
int md_layer_check_last_axis(const md_layer *l, md_error *err);

/* layers/dense.c: z[rows x units] = x[rows x k] W + b (b NULL: none), the bias copied first and
** sgemm adding onto it; its backward overwrites dw (and db: column sums in double, rounded once)
** and, dx not NULL, sets dx = dz W^T + dx_beta dx. The cost: forward the bias copy then the GEMM;
** backward dW's GEMM, db's sums, dx's GEMM. Dense and the attention projections share them. */
void md_affine_forward(int rows, int k, int units, const float *x, const float *w, const float *b,
                       float *z);
void md_affine_backward(int rows, int k, int units, const float *x, const float *w, const float *dz,
                        float *dw, float *db, float *dx, float dx_beta);
void md_affine_cost(md_cost *cost, double elem_bytes, md_pass pass, double rows, double k, double units,
                    int bias, int has_dx);

/* layers/layer_normalization.c (md_norm_): one group of count floats x[t stride] normalised by
** its own mean and biased variance (in double): z = (float)((x - mean) rstd) gamma + beta with
** rstd = 1 / sqrt(var + epsilon), gamma and beta read at t gstride (1: per element; 0: one value
** for the group). The backward adds the group's dgamma and dbeta terms (in double, at t gstride)
** and, dx not NULL, writes dx = rstd (g - mean(g) - xhat mean(g xhat)), g = dz gamma.
** md_norm_gradients rounds the d sums of dgamma then dbeta into the layer's first two gradients.
** Layer and batch normalisation share them. */
void md_norm_forward(const float *x, size_t stride, size_t count, double epsilon, const float *gamma,
                     const float *beta, size_t gstride, float *z, double *mean, double *var);
void md_norm_backward(const float *x, const float *dz, size_t stride, size_t count, double epsilon,
                      const float *gamma, size_t gstride, double *dgamma, double *dbeta, float *dx);
void md_norm_gradients(const md_layer *l, const md_layer_run *r, const double *sums, int d);

/* layers/flatten.c: forward and backward of the layers that only relabel the shape (flatten,
** reshape, activation): the data pass through unchanged and cost nothing. */
void md_pass_through_forward(const md_layer *l, const md_layer_run *r);
void md_pass_through_backward(const md_layer *l, const md_layer_run *r);
void md_pass_through_cost(const md_layer *l, const md_layer_run *r, md_pass pass, md_cost *cost);
/* The variables and init ops of a layer without variables. */
void md_no_variables(md_layer *l, md_model *m);
void md_no_init(const md_layer *l, md_var *vars, gsl_rng *rng);

/* layers/window.c (md_window_): the sliding windows of Conv2D and the 2-D poolings, as TF's
** GetWindowedOutputSize computes them. */
typedef struct md_window {
  int size[2];            /* effective extent: (k - 1) * dilation + 1 */
  int kernel[2];          /* taps along h and w */
  int stride[2];          /* strides along h and w */
  int dilation[2];        /* dilation along h and w */
  int pad[2];             /* padding before (top, left); valid: 0 */
  int in[2];              /* input h, w */
  int out[2];             /* output h, w */
} md_window;
/* Fills w for an input of in[2] (returns -1 with err when valid padding leaves no output). */
int md_window_init(md_window *w, const char *layer, const int in[2], const int kernel[2],
                   const int stride[2], const int dilation[2], md_padding padding, md_error *err);
/* A pooling layer's shape op (defaults, checks, out_shape), its window and its cost op: the
** window's reads per output, the input and output moved (backward: the input again). */
int  md_window_pool_shape(md_layer *l, md_error *err);
int  md_window_pool(md_window *w, const md_layer *l, md_error *err);
void md_window_pool_cost(const md_layer *l, const md_layer_run *r, md_pass pass, md_cost *cost);
/* The convolutions' shape op part (strides and dilation 0 mean 1, as Keras; not both above 1;
** out_shape [oh, ow, out_channels]), their window, their bias (z filled with it, or zeros) and its
** gradient (each channel's sum over examples and positions in double, rounded once), and their
** cost: as a GEMM of the outputs by taps_per_output kernel values (forward the bias broadcast
** then the product; backward dW's product, db's sums, dx's product). With matmul the product is
** logged as the GEMM [positions x taps] [taps x filters] for the per-op timing model. */
int  md_window_conv_shape(md_layer *l, int out_channels, md_error *err);
md_window md_window_conv(const md_layer *l);
void md_window_conv_bias(const md_layer *l, const md_layer_run *r);
void md_window_conv_bias_grad(const md_layer *l, const md_layer_run *r);
void md_window_conv_cost(const md_layer *l, const md_layer_run *r, md_pass pass, double taps_per_output,
                         int matmul, md_cost *cost);
/* Runs body for every tap of every output (f channels) of example e of a convolution layer l
** that lands inside the input, outputs in row-major order then taps (i, j), with zoff (the
** output's channels in z), xoff (the input's channels in x) and koff (the tap's kernel block of
** `block` floats) set. A macro so the convolutions' inner loops stay plain float loops over one
** geometry. */
#define MD_WINDOW_TAPS(l, w, e, f, block, body)                                                                  \
  do {                                                                                            \
    int c_ = (l)->in_shape.dim[2], f_ = (f);                                                      \
    for (int o_ = 0; o_ < (w).out[0]; o_++)                                                       \
      for (int p_ = 0; p_ < (w).out[1]; p_++) {                                                   \
        size_t zoff = (((size_t)(e) * (w).out[0] + o_) * (w).out[1] + p_) * f_;                   \
        for (int i_ = 0; i_ < (w).kernel[0]; i_++) {                                              \
          int ih_ = o_ * (w).stride[0] - (w).pad[0] + i_ * (w).dilation[0];                      \
          if (ih_ < 0 || ih_ >= (w).in[0]) continue;                                              \
          for (int j_ = 0; j_ < (w).kernel[1]; j_++) {                                            \
            int iw_ = p_ * (w).stride[1] - (w).pad[1] + j_ * (w).dilation[1];                    \
            if (iw_ < 0 || iw_ >= (w).in[1]) continue;                                            \
            size_t xoff = (((size_t)(e) * (w).in[0] + ih_) * (w).in[1] + iw_) * c_;               \
            size_t koff = ((size_t)i_ * (w).kernel[1] + j_) * (size_t)(block);                     \
            body                                                                                  \
          }                                                                                       \
        }                                                                                         \
      }                                                                                           \
  } while (0)

/* The taps of pooling output (o, p) inside the input: rows [*i0, *i1), columns [*j0, *j1). */
void md_window_taps(const md_window *w, int o, int p, int *i0, int *i1, int *j0, int *j1);

/* ---- activations.c (md_activation_): applied after a layer that has one ---- */

/* a = act(z) over rows of width floats (softmax per row: the last axis); a may equal z only for
** MD_ACT_NONE. a NULL: the cost alone. */
void md_activation_forward(md_activation act, int rows, int width, const float *z, float *a,
                           double elem_bytes, md_cost *cost);
/* Softmax of width values z[j stride] into a[j stride], and its backward in place (d holds dL/da
** on entry, dL/dz on return, given a): the activation's, attention's and the softmax layer's. */
void md_softmax_forward(const float *z, float *a, int width, size_t stride);
void md_softmax_backward(const float *a, float *d, int width, size_t stride);
/* In place: d holds dL/da on entry and dL/dz on return, given the saved z and a = act(z). */
void md_activation_backward(md_activation act, int rows, int width, const float *z,
                            const float *a, float *d, double elem_bytes, md_cost *cost);

/* ---- cost.c: the two op shapes most layers issue ---- */

/* C[n x m] = A[n x k] B[k x m], A and C of elem_bytes per element (the policy's compute dtype), B
** too unless it is a float32 variable (b_is_variable). */
void md_cost_gemm(md_cost *cost, double elem_bytes, double n, double k, double m, int b_is_variable);
/* An elementwise op over count elements of elem_bytes each doing flops per element, reading
** `reads` arrays. */
void md_cost_elementwise(md_cost *cost, double elem_bytes, double count, double flops, int reads);
/* The same for a normalisation or a softmax, whose reduction `reduce` tells XLA's fusion how it
** fuses (md_reduce); its counts are an elementwise op's. */
void md_cost_normalize(md_cost *cost, double elem_bytes, double count, double flops, int reads, md_reduce reduce);
/* A row reduction (MD_REDUCE_ROWS, as md_cost_normalize) whose statistics take `passes` dependent
** reductions over each row: TensorFlow's softmax (tf2xla's softmax_op.cc: the max, then the sum of
** exp(x - max)) and layer norm (tf.nn.moments: the mean, then the variance about it) take 2, and
** md_cost_normalize's row reductions 1. One kernel per reduction rereads the row for each
** (compile/gpu_rows.c: XLA's GPU backend); a backend holding the row on chip does not. */
void md_cost_row_stats(md_cost *cost, double elem_bytes, double count, double flops, int reads, int passes);
/* Inverted dropout over count elements (Dropout, MultiHeadAttention's dropout on its probabilities).
** Forward: a draw, a compare and two multiplies an element, reading x and writing z and the mask
** (XLA fuses it as a loop with two outputs, the mask kept for the backward), its output z.
** Backward: two multiplies reading dz and the mask. */
void md_cost_dropout(md_cost *cost, double elem_bytes, double count, md_pass pass);

/* ---- precision.c (md_round_): the mixed policies' 16-bit compute dtypes ---- */

float md_round_bfloat16(float x);
float md_round_float16(float x);
/* Rounds x[0..n) in place to the policy's compute dtype; float32 leaves it. */
void  md_round_to_policy(md_dtype_policy policy, float *x, size_t n);

/* ---- loss.c (md_loss_): the losses of one example ---- */

/* From logits z[c]: returns logsumexp(z) - z[y]; writes dz = scale * d(loss)/dz when dz != NULL. */
double md_loss_logits(const float *z, int c, int y, float scale, float *dz);
/* From probabilities (Keras from_logits=False): clip to [1e-7, 1-1e-7], renormalise, -log p[y];
** dp = scale * d(loss)/dp (zero where the clip is active) when dp != NULL. */
double md_loss_probs(const float *p, int c, int y, float scale, float *dp);
/* The other kinds against targets t[c] (not sparse): the loss of output out[c], read as logits
** when `logits` (the cross-entropies; mean squared error ignores it), and d = scale *
** d(loss)/d(out) when d != NULL. categorical_crossentropy from probabilities divides p by its sum
** then clips to [1e-7, 1-1e-7]; binary_crossentropy from probabilities clips (Keras 3: no epsilon
** added inside the logs); both pass no gradient where the clip is active. */
double md_loss_dense(md_loss_kind kind, int logits, const float *out, const float *t, int c, float scale,
                     float *d);
/* The output activation whose logits Keras reads when from_logits is false (softmax for the
** categorical losses, sigmoid for binary_crossentropy; none for mean squared error). */
md_activation md_loss_logits_activation(md_loss_kind kind);
/* The loss op over n examples of c outputs (grad: with its gradient), added to cost. */
void md_loss_cost(md_loss_kind kind, double n, double c, int grad, md_cost *cost);

/* ---- inputs.c (md_inputs_): several model inputs ---- */

/* Fills err and returns -1 unless spec's inputs (when it has several) are well formed. */
int md_inputs_check(const md_model_spec *spec, md_error *err);
/* One example of input in: [features] or [ids]. */
md_shape md_inputs_shape(const md_model_input *in);
/* Grows w's per-input buffers to n examples. */
void md_inputs_reserve(const md_model *m, md_workspace *w, int n);
/* Splits batch b's rows into w's per-input buffers (ids converted, float inputs rounded under a
** mixed policy). */
void md_inputs_split(const md_model *m, md_workspace *w, const md_batch *b);

/* ---- model.c ---- */

/* Appends variable LAYER/WHAT of the given shape (zeros; no data when shapes only) to m and
** returns its index. */
int md_model_add_var(md_model *m, const char *layer, const char *what, int rank, const int64_t *shape);
/* uniform(-limit, limit) draws in row-major order, rounded to float after the double formula. */
void md_fill_uniform(md_var *v, double limit, gsl_rng *rng);
/* Keras's glorot_uniform for a kernel of fan_in inputs and fan_out outputs. */
void md_fill_glorot(md_var *v, double fan_in, double fan_out, gsl_rng *rng);

struct md_model {
  int ninputs;            /* as md_model_spec: 0, one input (the fields below) */
  md_model_input inputs[MD_MAX_MODEL_INPUTS]; /* as md_model_spec's, copied */
  int input_features;     /* as md_model_spec; with several inputs, the batch's columns */
  int input_ids;          /* as md_model_spec */
  int input_vocab;        /* as md_model_spec */
  md_loss_kind loss;      /* as md_model_spec */
  int from_logits;        /* as md_model_spec */
  md_shape input_shape;   /* one example's float input ([input_features] when given so) */
  int nlayers;            /* entries in layers */
  md_layer *layers;       /* owned copies, first applied first */
  int nvars;              /* entries in vars */
  int vars_cap;           /* entries allocated in vars */
  md_var *vars;           /* in layer order, kernel before bias */
  int widest;             /* largest width a backward buffer holds (any layer's input or out) */
  int nscratch;           /* most dx_adds one layer has: the workspace's scratch buffers */
  int act_logits;         /* from_logits 0 on the output activation its loss has logits for (softmax,
                          ** sigmoid: md_loss_logits_activation): Keras reads the logits under it */
  int shapes_only;        /* as md_model_spec: no data is allocated or computed */
  double act_bytes;       /* bytes of an activation element under the spec's dtype_policy */
  md_dtype_policy policy; /* as md_model_spec's dtype_policy */
  int rematerialize;      /* as md_model_spec */
  const md_model *mirrors; /* md_model_clone_mirrored: its trainable variables' data are this
                          ** model's, which it does not free (NULL: it owns all of them) */
};

struct md_workspace {
  int cap;                /* examples the buffers below hold */
  int nlayers;            /* entries in z and a */
  float **z;              /* z[l]: layer l's pre-activation, cap*out floats */
  float **a;              /* a[l]: layer l's output; == z[l] when its activation is none */
  float **saved;          /* saved[l]: cap*layers[l].saved floats, NULL when it saves none */
  float **kept;           /* kept[l]: layers[l].kept floats, NULL when it keeps none */
  gsl_rng *rng;           /* dropout's stream (md_workspace_set_rng), not owned; NULL: none */
  int64_t draw;           /* seeded dropout's next SeedGenerator draw (md_workspace_set_dropout_draw) */
  md_all_reduce_fn all_reduce; /* the replicas' sum (md_workspace_set_all_reduce), NULL: none */
  void *all_reduce_ctx;   /* its argument */
  size_t *marks;          /* where a train step's op log stood after each backward layer
                          ** (md_workspace_set_marks), NULL: not asked */
  float **g;              /* g[l]: dL/d(layer l's output), cap*out floats: what its readers
                          ** wrote (the last reader first, the earlier ones added) */
  float *scratch[MD_LAYER_MAX_INPUTS]; /* [0, model's nscratch): a reader's dx before it is added
                          ** into g, cap*widest floats each */
  float *x16;             /* mixed policies: the input batch in the compute dtype, cap*features */
  float *in_x[MD_MAX_MODEL_INPUTS]; /* several inputs: float input k, cap*features (md_inputs_split) */
  int32_t *in_ids[MD_MAX_MODEL_INPUTS]; /* several inputs: id input k, cap*ids */
  md_var *vars16;         /* mixed policies: every variable as a layer reads it (rounded to the
                          ** compute dtype), refreshed at each pass; NULL under float32 */
  int nvars16;            /* entries in vars16 */
};


#endif
