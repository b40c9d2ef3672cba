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

typedef struct md_op_log {
  size_t n;               /* ops recorded */
  size_t cap;             /* entries allocated in flops and bytes */
  double *flops;          /* each op's FLOPs */
  double *bytes;          /* each op's bytes moved */
  sim_matmul *matmul;     /* each op's matmul shape (batch 0: no matmul), for the per-op model */
} md_op_log;

typedef struct md_cost {
  double flops;           /* floating-point operations (an FMA counts 2) */
  double bytes_moved;     /* bytes read + written from memory by the op */
  double bytes_resident;  /* bytes the op keeps alive (activations saved for backward) */
  sim_matmul matmul;      /* a matrix product's shape; batch 0 (the default): not one */
  md_op_log *ops;         /* when set, each op added to this total is also logged here */
} md_cost;

/* Adds c to into's totals and, when into has a log, records c as one op (ops that move no
** bytes and do no FLOPs, such as resident-memory notes, are not logged). NULL into discards. */
void md_cost_add(md_cost *into, const md_cost *c);
void md_op_log_clear(md_op_log *log);
void md_op_log_free(md_op_log *log);

#endif
