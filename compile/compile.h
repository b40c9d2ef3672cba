/*
** compile.h: the compile layer (cg_): a training step as XLA sees it, an op graph between the
** model and the machine. compile/ sits above models/ and strategies/ and below the programs
** (scenarios/programs/): it may include models/, strategies/, sim/ and base/, never plots/ or
** scenarios/.
**
** A step is traced once per batch size (as tf.function traces a step once per input shape): the
** model's forward, loss, backward and optimizer update run on shapes alone, each op tagged with
** the layer and phase that issued it (models/cost.h), and become ops of a graph whose tensors
** know their size, producer and consumers. Passes then rewrite the graph, each a file of its own:
**   sharding.c   sharding propagation and SPMD partitioning by a recipe (shard_*.c): data
**                parallel splits the batch and all-reduces every weight gradient that comes out
**                a partial sum (the partitioner's collective insertion); the mesh recipes
**                (ZeRO-1/2/3, Megatron's tensor and sequence parallelism, FSDP x TP) divide each
**                device's tensors and add all-gathers and reduce-scatters over a mesh axis;
**   fusion.c     XLA's fusion: rules (fuse_*.c: output, input, loop, operand) merge a producer and
**                its consumer into one kernel that reads its inputs and writes its outputs once,
**                a tensor others also read written once as one of its outputs (multi-output);
**   schedule.c   the latency-hiding order: each reduction issued as soon as its operand is
**                final, overlapping the rest of the pass, each weight gather a layer ahead;
**   liveness.c   the step's peak device memory under a memory policy (mem_*.c): XLA's buffer
**                liveness, or every buffer kept to the step's end.
** Adding a fusion rule, a sharding recipe or a memory policy is a file of its own (fuse_*.c,
** shard_*.c, mem_*.c) and its line in the registry of fusion.c, sharding.c or liveness.c.
** Lowering (program.c) turns the graph into the kernels sim/ executes (cg_program), and dump.c
** writes it for people (an HLO-like text) and for tools (ops.csv, and the kernels' names as XLA's
** profiles give them, for trace.json). pipeline.c reads a lowered
** step per layer for pipeline parallelism: each layer's work, variables and cut bytes, the
** stages balanced by them, and the GPipe and 1F1B orders of a stage's passes.
**
** Invariants:
**   1. Without passes that change work (fusion off), the program's kernels are the model's
**      logged ops one for one, in the order it logged them: a run's times are the op log's to the
**      bit (tests/compile/test_graph.c checks every example's FLOPs and bytes).
**   2. The graph describes cost, placement and memory only; the math stays in models/.
**   3. A trace depends on the batch size and the scenario's model and optimizer alone (with a
**      model axis, on the model group's batch: n x model_axis), so one program serves every
**      replica and step with that batch size.
*/
#ifndef PODSIM_COMPILE_COMPILE_H
#define PODSIM_COMPILE_COMPILE_H

#include <stddef.h>
#include <stdio.h>

#include "models/model.h"
#include "models/optimizer.h"
#include "sim/roofline.h"

typedef struct cg_graph cg_graph;        /* a traced step's ops and tensors (compileInt.h) */
typedef struct cg_program cg_program;    /* what sim/ executes: kernels in order */
typedef struct cg_cache cg_cache;        /* a scenario's programs, one per batch size */

/* A device mesh's axes: the batch's (data), the layers' split (model), and hybrid sharding's
** ZeRO-3 axis within a slice (fsdp: {data, fsdp, model}, MaxText's dcn_data x ici_fsdp x
** ici_tensor). cg_options gives their lengths. */
typedef enum { CG_AXIS_DATA = 0, CG_AXIS_MODEL, CG_AXIS_FSDP } cg_axis;
#define CG_AXES 3

/* What the passes are asked to do (the scenario's `compile` keys). */
typedef struct cg_options {
  int replicas;           /* data-parallel replicas the batch is split over (sharding.c) */
  int fusion;             /* 1: run fusion.c's rules */
  int operand_fusion;     /* 1: with fusion, elementwise producers also fuse into a product's
                          ** operands (XLA's TPU backend; on GPUs a product is a cuBLAS or cuDNN
                          ** call reading its operands from HBM) */
  int gpu_backend;        /* 1: a catalogue GPU: a batch norm reads its inputs twice, fused or not
                          ** (batch_stats.c); with fusion, XLA's GPU backend: products are library calls (cuBLAS
                          ** GEMMs, cuDNN convolutions) taking only what those libraries fuse
                          ** after them (fuse_output.c), and a row's statistics are a kernel apart
                          ** from their use (fuse_input.c); 0: XLA emits them (TPU, CPU) */
  const char *sharding;   /* the sharding recipe by name (sharding.c's registry); NULL: data_parallel */
  const char *memory;     /* the memory policy by name (liveness.c's registry); NULL: liveness */
  int model_axis;         /* devices along the mesh's model axis (tensor and sequence parallel
                          ** recipes); 0 or 1: none. The data axis is replicas / model_axis, and
                          ** a replica's batch is its data shard's over model_axis (the trace's
                          ** batch is n x model_axis: the examples a model group shares) */
  int sparse_tables;      /* 1: the tables' gradients are IndexedSlices the strategy moves apart
                          ** (scenarios/programs/embed.h): cg_trace_train_step_sparse */
  int group_examples;     /* the examples a model group holds (its data shard: the micro-batch
                          ** over the data axis, rounded up), the trace's batch for any n: every
                          ** device of the group runs the group's program, also where the
                          ** per-replica counts round (a global batch smaller than the devices
                          ** gives some replicas none); 0: n x model_axis */
  int fsdp_axis;          /* devices along the mesh's fsdp axis (hybrid_fsdp_sp: ZeRO-3 over it,
                          ** within a slice); 0 or 1: none. The data axis is then replicas /
                          ** (model_axis x fsdp_axis) */
} cg_options;

/* A kernel: one launch on the device, an op or a fusion of several. */
typedef struct cg_kernel {
  double flops;           /* its floating-point operations */
  double bytes;           /* the bytes it reads and writes in device memory */
  sim_matmul matmul;      /* its matmul's shape (a fusion's root), batch 0: none */
  int layer;              /* the layer whose pass issued it (a fusion's root's; the loss's: the
                          ** output layer); -1: none (pipeline.c splits the step by it) */
  md_phase phase;         /* the part of the step that issued it (its root's) */
  int op;                 /* the graph's op it was lowered from (a fusion's root): its name */
} cg_kernel;

/* ---- graph.c: tracing and the graph's totals ---- */

/* The train step of `model` (any model: its shapes are read, its values untouched) on batch n
** with optimizer `opt`, traced on a shapes-only copy. */
cg_graph *cg_trace_train_step(const md_model_spec *spec, const md_optimizer_spec *opt, int n);
/* The same with the tables' gradients as their IndexedSlices alone (md_grads_new_slices): their
** backward and update touch the step's rows, never a [vocab, dim] table (cg_options.sparse_tables). */
cg_graph *cg_trace_train_step_sparse(const md_model_spec *spec, const md_optimizer_spec *opt, int n);
void      cg_graph_free(cg_graph *g);
size_t    cg_graph_num_ops(const cg_graph *g);       /* ops, collectives included */
size_t    cg_graph_num_traced(const cg_graph *g);    /* ops the model logged (XLA's instructions) */
double    cg_graph_flops(const cg_graph *g);         /* the compute ops' FLOPs */
double    cg_graph_bytes(const cg_graph *g);         /* the kernels' bytes (after fusion: fewer) */

/* ---- the passes ---- */

/* Every pass the options ask for, in XLA's order: sharding, fusion, scheduling, liveness. */
void cg_compile(cg_graph *g, const cg_options *o);

/* liveness.c: bytes held at the step's peak under the options' memory policy (persistent weights
** and slots, plus the largest sum of the tensors it holds at one place of the schedule). Valid
** after cg_compile. */
double cg_graph_peak_bytes(const cg_graph *g);
/* Of that peak: the variables' gradients held at it (with their all-reduced copies: the
** all-reduce buffers), and the persistent bytes (variables and optimizer slots). The rest is
** activations, their gradients and the passes' intermediates. */
double cg_graph_peak_gradient_bytes(const cg_graph *g);
double cg_graph_persistent_bytes(const cg_graph *g);
/* The largest bytes held at one place of the schedule, persistent bytes apart, when a device holds
** grad_share of each variable's gradient and rest_share of every other tensor (a logical device's
** part of a model split over several: its peak need not be where the whole's is); *grads (when
** not NULL): the gradients' part of it. cg_graph_peak_bytes is the persistent bytes plus this at
** shares 1 and 1. */
double cg_graph_transient_peak(const cg_graph *g, double grad_share, double rest_share, double *grads);
/* Whether a sharding recipe and a memory policy of that name exist (for loaders' errors). */
int cg_sharding_known(const char *name);
/* The devices of a replicas x model_axis x fsdp_axis mesh (o's) among which a recipe splits the
** batch (cg_sharding_recipe.batch_axes): a model group of them shares its examples. */
int cg_sharding_batch_devices(const cg_options *o);
int cg_memory_known(const char *name);

/* The step's collectives of a kind over a mesh axis: how many, and the bytes of their whole
** buffers (an all-reduce's operand, an all-gather's result, a reduce-scatter's input), the
** quantities docs/strategies.md's formulas give. A device sends (group - 1) / group of an
** all-gather's or reduce-scatter's bytes and twice that of an all-reduce's in a ring. */
typedef enum { CG_COLL_ALL_REDUCE = 0, CG_COLL_ALL_GATHER, CG_COLL_REDUCE_SCATTER } cg_coll;
double cg_graph_collective_bytes(const cg_graph *g, cg_coll kind, cg_axis axis, int *count);
/* Bytes each device holds for the whole step: its weights' and optimizer slots' shards, and of
** those its weights'. */
double cg_graph_persistent_bytes(const cg_graph *g);
double cg_graph_weight_bytes(const cg_graph *g);

/* ---- program.c: lowering ---- */

/* A collective of the program, as the latency-hiding schedule places it (schedule.c): issued
** after `issue` kernels of its list (the step's or the update's) have run, running beside the
** kernels that follow, and awaited before kernel `need` of that list, the first to read its
** result (the list's length: nothing of the list reads it; the step's collectives end before the
** update runs). Collectives run one after another in the program's order (one stream). */
typedef struct cg_transfer {
  cg_coll kind;           /* what it does */
  cg_axis axis;           /* the mesh axis it runs over */
  int group;              /* the devices along that axis */
  double bytes;           /* its whole buffer, as cg_graph_collective_bytes counts it */
  int apply;              /* 1: among the update's kernels; 0: among the step's */
  size_t issue;           /* kernels of its list run before it is issued */
  size_t need;            /* the kernel of its list that first waits for it */
} cg_transfer;
const cg_transfer *cg_program_collectives(const cg_program *p, size_t *n);

/* The kernels of the step's compute (forward, loss, backward) and of the optimizer's update. */
const cg_kernel *cg_program_step(const cg_program *p, size_t *n);
const cg_kernel *cg_program_apply(const cg_program *p, size_t *n);
/* Gradient accumulation's: each trainable variable's gradient added into its float32 accumulator
** (compile/accumulate.c), after every micro-batch but a step's last. */
const cg_kernel *cg_program_accumulate(const cg_program *p, size_t *n);
/* The step kernels before which layer l's backward is done (l = layers: after the forward and
** loss), as md_workspace_set_marks's marks: the pass's gradient packs complete there. */
size_t cg_program_mark(const cg_program *p, int l);
/* The work (FLOPs at r->rate: roofline.h) of kernels [from, to) of k, each bound on its own,
** summed in order. */
double cg_kernels_work(const sim_roofline *r, const cg_kernel *k, size_t from, size_t to);

/* cg_kernels_work's last answers (work_memo.c): replicas of one roofline share them. The kernels
** must outlive the memo's use of them (a cg_cache's programs do); zero-initialise it. */
enum { CG_WORK_MEMO_SLOTS = 8 };
typedef struct cg_work_memo_slot {
  const cg_kernel *kernels; /* the kernel array asked about */
  size_t from, to;          /* the range summed */
  sim_roofline roofline;    /* the device's roofline, compared by value */
  double work;              /* cg_kernels_work's answer */
} cg_work_memo_slot;
typedef struct cg_work_memo {
  cg_work_memo_slot slot[CG_WORK_MEMO_SLOTS]; /* the answers kept */
  int used;                 /* slots filled */
  int next;                 /* the slot the next miss overwrites (round robin) */
} cg_work_memo;
double cg_work_memo_get(cg_work_memo *m, const sim_roofline *r, const cg_kernel *k, size_t from, size_t to);
const cg_graph *cg_program_graph(const cg_program *p);

/* Programs per batch size, compiled on first use. */
cg_cache *cg_cache_new(const md_model_spec *spec, const md_optimizer_spec *opt, const cg_options *o);
const cg_program *cg_cache_get(cg_cache *c, int n);
void cg_cache_free(cg_cache *c);

/* ---- pipeline.c: pipeline parallelism's stages and schedules ---- */

/* What one layer of a compiled step (traced on one microbatch) costs a pipeline stage. */
typedef struct cg_layer_cost {
  double forward;         /* work of its forward kernels at the roofline (the loss's on the output
                          ** layer), as cg_kernels_work counts it */
  double backward;        /* of its backward kernels (a rematerialised forward included) */
  double update;          /* of its variables' optimizer kernels */
  double weights;         /* bytes of its variables */
  double slots;           /* bytes of their optimizer slots */
  double grads;           /* bytes of its trainable variables' gradients */
  double cut;             /* bytes crossing a stage boundary right after it: the activations of it
                          ** and earlier layers that later layers' forward reads (the gradients
                          ** sent back have the same bytes); 0 after the last layer */
  int splits_block;       /* 1: an earlier layer's activation crosses that boundary too (a residual
                          ** skipping over it: the boundary falls inside a transformer block) */
} cg_layer_cost;
/* Fills out[0..layers) from p's kernels and graph; r NULL: works 0. */
void cg_pipeline_layer_costs(const cg_program *p, const sim_roofline *r, cg_layer_cost *out);
/* The bytes a stage of layers [first, end) keeps from a microbatch's forward for its backward:
** every tensor a forward wrote that a backward of those layers reads (once each, the input it
** received from the stage before among them), what buffer liveness holds across the two passes. */
double cg_pipeline_saved(const cg_program *p, int first, int end);
int  cg_program_layers(const cg_program *p);
/* Contiguous stages balanced by their layers' forward + backward work: first[0..stages] the
** first layer of each stage (first[stages] = layers), minimising the costliest stage (ties: the
** earliest cut). Stages start only after a layer that does not split a block, as Megatron and
** MaxText give each stage whole blocks, when the model has stages - 1 such places; else after
** any layer. layers >= stages >= 1. */
void cg_pipeline_balance(const cg_layer_cost *c, int layers, int stages, int *first);

/* A device's order of forward and backward microbatch passes. */
typedef enum { CG_PIPE_GPIPE = 0, CG_PIPE_1F1B, CG_PIPE_INTERLEAVED } cg_pipe_schedule;
typedef struct cg_pipe_op {
  int backward;           /* 1 a backward pass, 0 a forward */
  int micro;              /* its microbatch */
  int chunk;              /* the device's model chunk it runs (interleaved: chunk c of device k is
                          ** stage k + c x stages of the model's stages x chunks); 0 otherwise */
} cg_pipe_op;
/* Device `stage` of `stages` over `micro` microbatches and `chunks` model chunks a device (1
** unless interleaved): out[0 .. 2 x micro x chunks) in the order the schedule runs them. GPipe:
** every forward, then every backward in reverse (the last forward's first). 1F1B
** (PipeDream-flush, Megatron-LM's default): stages - stage - 1 forwards to warm up, then one
** forward and one backward in turn, then the backwards left. Interleaved (Megatron-LM's
** forward_backward_pipelining_with_interleaving; micro a multiple of stages): the forwards in
** groups of `stages` microbatches through chunk 0, 1, ..., the backwards likewise through the
** chunks in reverse, 2 (stages - stage - 1) + (chunks - 1) stages forwards to warm up, then in
** turn. Each microbatch's passes of a chunk come in microbatch order (GPipe's backwards in
** reverse), so a stage's sends arrive in the order its next stage runs them. */
void cg_pipeline_order(cg_pipe_schedule s, int stages, int stage, int micro, int chunks, cg_pipe_op *out);
/* The most bytes of activations a device holds at once running `order` (n passes): each chunk's
** forwards not yet matched by their backward, times saved[chunk], summed over its chunks. */
double cg_pipeline_peak_held(const cg_pipe_op *order, int n, int chunks, const double *saved);

/* A stage's pass as its devices run it when its layers are tensor parallel (a mesh of three axes,
** {data, pipeline, model}): the step's kernels of layers [first, end) of one direction (backward
** 0: forward and loss; 1: backward and recomputation) in program order, cut where one of the
** pass's collectives over the model axis (those issued after one of its kernels) is issued or
** awaited, as the latency-hiding schedule placed them. */
typedef struct cg_pipe_step {
  double work;            /* the pass's kernels' work before this step's collective, at the roofline */
  int transfer;           /* the collective, an index of cg_program_collectives; -1: none (the pass's end) */
  int await;              /* 1: wait for it here; 0: issue it here */
} cg_pipe_step;
/* The steps (the caller frees them), *n of them, the last with transfer -1; r NULL: works 0. */
cg_pipe_step *cg_pipeline_pass_steps(const cg_program *p, const sim_roofline *r, int first, int end, int backward,
                                     size_t *n);

/* ---- dump.c ---- */

/* The graph as text, one op a line as XLA's HLO dumps read (name = opcode(operands), shapes in
** bytes, fusion, phase), and as CSV (name, opcode, fusion, layer, phase, FLOPs, bytes, seconds
** on roofline r, bound). r NULL: no time columns. Returns 0, or -1 on a write error. */
int cg_dump_text(const cg_graph *g, FILE *out);
/* The names of kernels k[0..n) of a program of g as XLA's profiles show them, into names[i]: a
** fusion KIND_fusion.N (kind loop, input or output, N its root's place in the graph), an op alone
** its dump name (LAYER.PHASE.N). */
enum { CG_KERNEL_NAME_MAX = 96 };
void cg_dump_kernel_names(const cg_graph *g, const cg_kernel *k, size_t n, char (*names)[CG_KERNEL_NAME_MAX]);
int cg_dump_csv(const cg_graph *g, const sim_roofline *r, double time_scale, FILE *out);

#endif
