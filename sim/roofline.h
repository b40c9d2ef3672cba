/*
** roofline.h: how long an op takes on a device. sim_exec runs work at a cpu's rate, so an op is
** charged as the FLOPs that take its time at that rate: work = time x rate.
**
** Two models:
** - the scalar roofline (sim_roofline.op.units == 0: CPUs, generic accelerators, and any device
**   whose scenario gives an efficiency): an op of F FLOPs that moves M bytes takes
**       time = max(F / rate, M / memory_bandwidth),     rate = peak x efficiency;
** - the per-op model (op.units > 0; docs/machine.md, "Compute"), calibrated on measured GEMMs
**   (docs/data/gemm_h100_xla.csv, bench/fit_gemm.py): the device's cpu runs at its peak and
**       matmul:  time = launch + max(waves(M, N, K), M / (bw x mem_eff))
**       other:   time = launch + max(F / (peak x vector_rate), M / (bw x mem_eff))
**   where waves() is the time of whole output tiles in whole waves: the M x N output is cut
**   into tiles of one of a few sizes, the tiles run `units` at a time, and a wave that is partly
**   full takes as long as a full one (tile and wave quantisation); the best tile size is taken,
**   as cuBLAS's heuristics pick a kernel. A wave ends with every unit writing its tile's
**   outputs at once, at its share of the memory bandwidth; `writeback` of that write is not
**   hidden behind the next tile, which a short K does not amortise.
** Everything is IEEE arithmetic and ceil (exact): the same bits at any optimisation level.
*/
#ifndef PODSIM_ROOFLINE_H
#define PODSIM_ROOFLINE_H

#include <stddef.h>

/* A matrix product's shape: batch problems of [m x k] [k x n]. */
typedef struct sim_matmul {
  double batch;           /* independent products; 0: the op is no matmul */
  double m, n, k;         /* rows and columns of the output, the contracted dimension */
  double elem_bytes;      /* bytes of an operand element: 4 (float32) runs at op.f32_rate */
} sim_matmul;

/* A device's per-op model. */
typedef struct sim_opmodel {
  int units;              /* matrix units working on output tiles at once (SMs, MXUs); 0: none */
  int tile_m, tile_n;     /* the largest output tile one unit computes */
  int tile_sizes;         /* how many of the smaller tiles (roofline.c's table) it may also pick */
  double peak;            /* FLOP/s of all units at full speed, 16-bit operands */
  double efficiency;      /* fraction of a unit's peak the largest tile's inner loop sustains */
  double mem_efficiency;  /* fraction of the memory bandwidth an op's traffic achieves */
  double launch_s;        /* fixed time of every op: launch, pipeline fill, completion */
  double f32_rate;        /* matmul rate with float32 operands over the peak (TF32 on GPUs) */
  double vector_rate;     /* rate of other ops' FLOPs over the peak (CUDA cores, the VPU) */
  double writeback;       /* share of a tile's output write that its unit's next tile does not hide */
} sim_opmodel;

typedef struct sim_roofline {
  double rate;            /* FLOP/s the device's cpu runs at: peak x efficiency, or peak */
  double mem_bw;          /* bytes/s its memory moves; 0: never memory-bound */
  sim_opmodel op;         /* its per-op model; op.units == 0: the scalar roofline */
} sim_roofline;

/* Seconds one op takes under the per-op model m with memory bandwidth mem_bw (mm NULL or
** mm->batch 0: not a matmul). m->units must be > 0. */
double sim_opmodel_seconds(const sim_opmodel *m, double mem_bw, double flops, double bytes, const sim_matmul *mm);
/* The FLOPs to charge at r->rate for one op (see above). */
double sim_roofline_work(const sim_roofline *r, double flops, double bytes, const sim_matmul *mm);
/* The same summed over n ops, each bound on its own (mm may be NULL: no op is a matmul). */
double sim_roofline_work_ops(const sim_roofline *r, const double *flops, const double *bytes, const sim_matmul *mm,
                             size_t n);

#endif
