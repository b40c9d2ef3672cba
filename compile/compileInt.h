/* compileInt.h: the compile layer's structures (compile.h is the interface). */
#ifndef PODSIM_COMPILE_INT_H
#define PODSIM_COMPILE_INT_H

#include "compile/compile.h"
#include "models/cost.h"

typedef enum {
  CG_TENSOR_INPUT = 0,    /* a model input: the replica's batch */
  CG_TENSOR_WEIGHT,       /* a variable: persistent */
  CG_TENSOR_ACTIVATION,   /* a layer's output */
  CG_TENSOR_TEMP,         /* an intermediate inside one layer's pass */
  CG_TENSOR_GRADIENT,     /* the loss's gradient with respect to an activation */
  CG_TENSOR_WEIGHT_GRAD   /* a variable's gradient */
} cg_tensor_kind;

/* How a tensor is laid out over the data-parallel replicas (sharding.c). */
typedef enum {
  CG_SHARD_REPLICATED = 0,/* every replica holds all of it */
  CG_SHARD_BATCH,         /* split along the batch: each replica its examples' part */
  CG_SHARD_PARTIAL        /* each replica holds a partial sum of it: an all-reduce makes it whole */
} cg_shard;

typedef enum {
  CG_OP_OTHER = 0,        /* anything else the model logged: reductions, gathers, losses, fused
                          ** kernels written by hand (flash attention: a custom-call) */
  CG_OP_MATMUL,           /* a matrix product (convolutions as their im2col GEMMs too) */
  CG_OP_ELEMENTWISE,      /* one output element from the same element of each input */
  CG_OP_ALL_REDUCE,       /* the sharding pass's collective: sums a partial tensor over replicas */
  CG_OP_ALL_GATHER,       /* a recipe's collective: each device's shard in, the whole out */
  CG_OP_REDUCE_SCATTER    /* a recipe's collective: a partial whole in, each device's summed shard out */
} cg_opcode;

typedef struct cg_tensor {
  cg_tensor_kind kind;    /* what it holds */
  double bytes;           /* its size on one replica (after the batch split) */
  int producer;           /* the op writing it; -1: exists before the step (inputs, weights) */
  int *consumers;         /* the ops reading it, in op order */
  int nconsumers;         /* how many */
  int cap;                /* consumers allocated */
  cg_shard shard;         /* its layout over replicas */
  int layer;              /* the layer it belongs to; -1: none */
  int var;                /* a weight or weight gradient's variable; -1 otherwise */
} cg_tensor;

typedef struct cg_op {
  cg_opcode code;         /* what it does */
  md_phase phase;         /* the part of the step that issued it */
  int layer;              /* the layer whose pass issued it; -1: none */
  int var;                /* optimizer updates and all-reduces: their variable; -1 otherwise */
  double flops;           /* its FLOPs */
  double bytes;           /* bytes it reads and writes; a fusion root: the whole fusion's */
  sim_matmul matmul;      /* its matmul shape (batch 0: none) */
  int *in;                /* tensors read */
  int nin;                /* how many */
  int *out;               /* tensors written */
  int nout;               /* how many */
  int fusion;             /* the root op of the fusion it belongs to (itself if root); -1: unfused */
  double saved_bytes;     /* of its bytes, those its fusion saved: its read of the tensor it joined
                          ** through, and its writes of tensors only its fusion reads */
  const char *fused_by;   /* the rule that fused it into its root; NULL for a root or unfused */
  int multi_output;       /* 1: it joined through a tensor others read too, which its fusion writes
                          ** as one of its outputs (XLA's multi-output fusion) */
  md_reduce reduce;       /* a normalisation's or softmax's reduction (models/cost.h) */
  int row_passes;         /* a row reduction's dependent reductions over each row (models/cost.h) */
  double row_reads;       /* its bytes read by each of them: its inputs' (its bytes less its output's) */
  int convolution;        /* 1: a convolution's product (models/cost.h) */
  int order;              /* its place in the schedule (schedule.c); the trace's order before */
  cg_axis axis;           /* a collective's mesh axis */
  int group;              /* a collective's devices (the axis's length); 0 for compute */
} cg_op;

struct cg_graph {
  cg_op *ops;             /* in trace order; collectives appended by the sharding pass */
  size_t nops;            /* ops held */
  size_t cap_ops;         /* ops allocated */
  size_t traced;          /* ops the model logged (the first `traced` of ops) */
  cg_tensor *tensors;     /* every tensor */
  size_t ntensors;        /* tensors held */
  size_t cap_tensors;     /* tensors allocated */
  int *schedule;          /* op indices in execution order (schedule.c; trace order until then) */
  size_t *marks;          /* per layer, and at [nlayers] the loss: the ops traced before that
                          ** layer's backward was done (md_workspace_set_marks) */
  int nlayers;            /* the model's layers */
  char (*layer_names)[MD_LAYER_NAME_MAX]; /* their names, for dumps */
  char (*var_names)[64];  /* the variables' names, for dumps */
  int nvars;              /* how many */
  double persistent;      /* bytes held the whole step: weights and optimizer slots */
  int slots;              /* optimizer slots per trainable variable (each its variable's size) */
  unsigned char *trainable; /* per variable: 1 trainable (it has a gradient and slots) */
  md_tp_layer *tp;        /* per layer: how tensor parallelism splits it (md_model_tensor_parallel_layers) */
  int *first_var;         /* per layer: its first variable (its k-th is first_var + k) */
  double peak;            /* liveness.c's peak under the memory policy, persistent included */
  double peak_grads;      /* of it, the variables' gradients (and all-reduced copies) held there */
  double *live;           /* per schedule position (and one past): the bytes held there, persistent
                          ** bytes apart */
  double *live_grads;     /* of them, the variables' gradients */
  size_t nlive;           /* positions in live and live_grads */
  const char *memory;     /* that policy's name */
  int operand_fusion;     /* 1: the fusion pass may fuse producers into a product's operands
                          ** (cg_options.operand_fusion) */
  double compute_bytes;   /* bytes of an element in the layers' compute dtype: 4 under float32,
                          ** 2 under a mixed policy (the 16-bit casts a recipe gathers and the
                          ** 16-bit gradients it reduce-scatters: shard_zero.c) */
  unsigned char *cast;    /* per variable: 1 its layer reads its compute-dtype cast, 0 float32
                          ** (md_model_var_cast: norms' variables, id tables) */
  int gpu_backend;        /* 1: XLA's GPU backend's fusion rules (cg_options.gpu_backend) */
};

/* ---- graph.c: building ---- */
int  cg__tensor_new(cg_graph *g, cg_tensor_kind kind, double bytes, int layer, int var);
int  cg__op_new(cg_graph *g, const cg_op *proto);
void cg__op_read(cg_graph *g, int op, int tensor);
void cg__op_write(cg_graph *g, int op, int tensor);
/* Whether an op runs on the device's compute (not a collective). */
int  cg__is_compute(const cg_op *op);

/* ---- the passes, each in its file ---- */
void cg__shard(cg_graph *g, const cg_options *o);      /* sharding.c */
void cg__fuse(cg_graph *g);                            /* fusion.c */
void cg__gpu_row_passes(cg_graph *g);                  /* gpu_rows.c */
/* Gradient accumulation's kernels into out (room for one a tensor), their count returned. */
size_t cg__accumulate_kernels(const cg_graph *g, cg_kernel *out);  /* accumulate.c */
/* Whether producer p and consumer c may share a kernel by their passes (fusion.c's condition 1). */
int  cg__same_pass(const cg_graph *g, const cg_op *p, const cg_op *c);
void cg__batch_stats(cg_graph *g);                     /* batch_stats.c: a GPU's batch norms read twice */
void cg__schedule(cg_graph *g);                        /* schedule.c */
void cg__liveness(cg_graph *g, const cg_options *o);   /* liveness.c */

/* A sharding recipe (sharding.c's registry; one file each: shard_*.c): lays the graph's tensors
** out over the devices and inserts the collectives that layout needs. */
typedef struct cg_sharding_recipe {
  const char *name;       /* as options and dumps name it */
  void (*partition)(cg_graph *g, const cg_options *o);
  unsigned batch_axes;    /* the mesh axes whose devices hold different examples (1u << cg_axis):
                          ** the data axis's always; the model axis's where it shards weights
                          ** alone (hybrid_fsdp), the fsdp axis's (hybrid_fsdp_sp); a model axis
                          ** that splits layers shares its group's examples */
} cg_sharding_recipe;

extern const cg_sharding_recipe cg_shard_data_parallel;  /* shard_data_parallel.c */
extern const cg_sharding_recipe cg_shard_zero1;          /* shard_zero.c */
extern const cg_sharding_recipe cg_shard_zero2;          /* shard_zero.c */
extern const cg_sharding_recipe cg_shard_fsdp;           /* shard_zero.c */
extern const cg_sharding_recipe cg_shard_tensor_parallel;   /* shard_tensor_parallel.c */
extern const cg_sharding_recipe cg_shard_sequence_parallel; /* shard_tensor_parallel.c */
extern const cg_sharding_recipe cg_shard_fsdp_tp;        /* shard_tensor_parallel.c */
extern const cg_sharding_recipe cg_shard_fsdp_sp;        /* shard_tensor_parallel.c */
extern const cg_sharding_recipe cg_shard_hybrid_fsdp;    /* shard_zero.c */
extern const cg_sharding_recipe cg_shard_hybrid_fsdp_sp; /* shard_tensor_parallel.c */

/* For recipes: an all-reduce over `replicas` of tensor t (a partial sum), whose whole result its
** readers read instead (sharding.c). */
void cg__all_reduce(cg_graph *g, int t, int replicas);

/* ---- shard_mesh.c: what the mesh recipes share ---- */
/* The data-parallel layout: model inputs split along the batch, what they reach split too, a
** variable's gradient from split tensors a partial sum. */
void cg__batch_layout(cg_graph *g);
/* A collective `code` over `group` devices of `axis` on tensor t: it reads t and writes a new
** tensor (an all-gather's group times t, a reduce-scatter's 1/group, an all-reduce's as big)
** that t's readers for which `moves(reader)` holds (NULL: all) read instead; returns the new
** tensor. Phase and layer are t's producer's (or the first mover's when t has none). */
int  cg__collective(cg_graph *g, cg_opcode code, int t, cg_axis axis, int group, md_phase phase,
                    int (*moves)(const cg_op *reader));
/* Variable v's optimizer slots split `by` ways (their share of the persistent bytes, and its
** update's work, which runs on the shard): call before cg__shard_weight when both split. */
void cg__shard_slots(cg_graph *g, int v, int by);
/* Variable v's weight split `by` ways: its tensor and its share of the persistent bytes. */
void cg__shard_weight(cg_graph *g, int v, int by);
/* The weight tensor and the gradient tensor (traced; -1: none) of variable v. */
int  cg__weight_of(const cg_graph *g, int v);
int  cg__grad_of(const cg_graph *g, int v);
/* ZeRO stage 1, 2 or 3 over `axis` of d devices, on a graph whose batch layout is set
** (shard_zero.c); outer > 1: each reduce-scattered gradient shard then all-reduced over the data
** axis of outer devices (hybrid sharding). */
void cg__zero(cg_graph *g, int stage, cg_axis axis, int d, int outer);
/* The data axis's length: replicas over the model and fsdp axes'. */
int  cg__data_axis(const cg_options *o);
int  cg__model_axis(const cg_options *o);
int  cg__fsdp_axis(const cg_options *o);

/* A memory policy (liveness.c's registry; one file each: mem_*.c): whether tensor t is held
** from its first writer to its last reader (1), or to the step's end (0). Persistent variables
** and slots are held by every policy. */
typedef struct cg_memory_policy {
  const char *name;       /* as options and dumps name it */
  int (*frees_after_last_use)(const cg_graph *g, const cg_tensor *t);
} cg_memory_policy;

extern const cg_memory_policy cg_memory_liveness;   /* mem_liveness.c */
extern const cg_memory_policy cg_memory_keep_all;   /* mem_keep_all.c */

/* A fusion rule (fusion.c's registry; one file each: fuse_*.c): whether `consumer` joins the
** fusion rooted at `root` through the tensor producer -> consumer (with g->operand_fusion the
** target fuses producers into a product's operands). */
typedef struct cg_fusion_rule {
  const char *name;       /* as dumps show it: XLA's fusion kind */
  int (*fuses)(const cg_graph *g, const cg_op *root, const cg_op *producer, const cg_op *consumer);
} cg_fusion_rule;

extern const cg_fusion_rule cg_fuse_loop;      /* fuse_loop.c */
extern const cg_fusion_rule cg_fuse_output;    /* fuse_output.c */
extern const cg_fusion_rule cg_fuse_input;     /* fuse_input.c */
extern const cg_fusion_rule cg_fuse_operand;   /* fuse_operand.c */
/* Whether the fusion rooted at `root` holds a matrix product (fusion.c). */
int cg__fusion_has_product(const cg_graph *g, int root);

#endif
