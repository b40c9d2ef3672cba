/*
** cost.h: what an op costs, for sim/ to turn into time on a device. models/ knows nothing of
** time or devices: it only counts. A timing model that treats ops one at a time (the roofline:
** each op is bound by its FLOPs or by its memory traffic, whichever is slower) attaches an op log
** to the accumulator it passes in, and every op added to it is also recorded there.
*/
#ifndef PODSIM_COST_H
#define PODSIM_COST_H

#include <stddef.h>

#include "sim/roofline.h"

/* Where in a train step an op was issued: the compile layer (compile/) builds the step's op graph
** from these tags and the model's layer structure. */
typedef enum { MD_PHASE_FORWARD = 0, MD_PHASE_LOSS, MD_PHASE_REMAT, MD_PHASE_BACKWARD, MD_PHASE_OPTIMIZER,
               MD_PHASE_COUNT } md_phase;

/* The reduction an otherwise elementwise op does (a normalisation or a softmax), for XLA's fusion
** (compile/fusion.c): over each example's row (layer norm, RMSNorm, softmax: a row is held on chip,
** so the statistics and their use are one pass over it), or over the batch (batch norm's per-channel
** statistics: every element is read before any output can be written, so the apply reads its
** input again in a kernel of its own). */
typedef enum { MD_REDUCE_NONE = 0, MD_REDUCE_ROWS, MD_REDUCE_BATCH } md_reduce;

/* What an op is beyond its counts, for the passes that look at dataflow (fusion, liveness). */
typedef struct md_op_info {
  md_phase phase;         /* the part of the step that issued it */
  int layer;              /* the layer whose pass issued it; the loss's: the last layer */
  int var;                /* the optimizer's: the variable it updates; -1 otherwise */
  int elementwise;        /* 1: one output element from the same element of each input (fusible);
                          ** a reduction (md_cost_elementwise reading no array: a bias's gradient)
                          ** is not */
  double out_bytes;       /* bytes of the one tensor it writes; 0: not known (several, or none) */
  int custom_call;        /* 1: a hand-written fused kernel (flash attention), a custom-call in
                          ** XLA's HLO: its matmul shape times it, no epilogue fuses into it */
  md_reduce reduce;       /* the reduction an elementwise op also does (a norm, a softmax) */
  int row_passes;         /* a row reduction's dependent reductions over each row (md_cost_row_stats);
                          ** 0 for any other op */
  int convolution;        /* 1: a convolution's product (cuDNN's on a GPU, whose fused kernel takes
                          ** the bias and activation after it; a GEMM's does not: compile/fuse_output.c) */
  int in_place;           /* 1: it updates variables in place beside its layer's chain of ops
                          ** (batch norm's moving statistics): no activation passes through it */
} md_op_info;

typedef struct md_op_log {
  size_t n;               /* ops recorded */
  size_t cap;             /* entries allocated in every array */
  double *flops;          /* each op's FLOPs */
  double *bytes;          /* each op's bytes moved */
  sim_matmul *matmul;     /* each op's matmul shape (batch 0: no matmul), for the per-op model */
  md_op_info *info;       /* each op's phase, layer and output */
  md_op_info at;          /* the tags of the ops logged next (md_op_log_at); out_bytes unused */
} md_op_log;

typedef struct md_cost {
  double flops;           /* floating-point operations (an FMA counts 2) */
  double bytes_moved;     /* bytes read + written from memory by the op */
  double bytes_resident;  /* bytes the op keeps alive (activations saved for backward) */
  sim_matmul matmul;      /* a matrix product's shape; batch 0 (the default): not one */
  int elementwise;        /* 1: an elementwise op (md_op_info) */
  double out_bytes;       /* bytes of the one tensor the op writes; 0: not known */
  int custom_call;        /* 1: a fused kernel (md_op_info) */
  md_reduce reduce;       /* a normalisation's or softmax's reduction (md_op_info) */
  int row_passes;         /* a row reduction's dependent reductions over a row (md_op_info) */
  int convolution;        /* 1: a convolution's product (md_op_info) */
  int in_place;           /* 1: a variables' update beside the layer's chain (md_op_info) */
  md_op_log *ops;         /* when set, each op added to this total is also logged here */
} md_cost;

/* Adds c to into's totals and, when into has a log, records c as one op (ops that move no
** bytes and do no FLOPs, such as resident-memory notes, are not logged). NULL into discards. */
void md_cost_add(md_cost *into, const md_cost *c);
void md_op_log_clear(md_op_log *log);
/* Tags the ops cost's log records next as issued by `layer`'s `phase` (var: the optimizer's
** variable, else -1). No-op when cost or its log is NULL. */
void md_op_log_at(md_cost *cost, md_phase phase, int layer, int var);
void md_op_log_free(md_op_log *log);

#endif
