/*
** roofline.h: how long an op takes on a device. An op of F FLOPs that moves M bytes takes
**     time = max(F / (peak x efficiency), M / memory_bandwidth)
** (the roofline model: compute-bound or memory-bound, whichever is slower). sim_exec runs work
** at a cpu's rate, so a device's cpu is created at peak x efficiency and an op is charged as
** the FLOPs that take that long: max(F, M x rate / memory_bandwidth).
*/
#ifndef PODSIM_ROOFLINE_H
#define PODSIM_ROOFLINE_H

#include <stddef.h>

typedef struct sim_roofline {
  double rate;            /* FLOP/s the device sustains: peak x efficiency */
  double mem_bw;          /* bytes/s its memory moves; 0: never memory-bound */
} sim_roofline;

/* The FLOPs to charge at r->rate for one op (see above). */
double sim_roofline_work(const sim_roofline *r, double flops, double bytes);
/* The same summed over n ops, each bound on its own. */
double sim_roofline_work_ops(const sim_roofline *r, const double *flops, const double *bytes, size_t n);

#endif
