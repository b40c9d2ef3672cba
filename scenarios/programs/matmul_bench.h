/*
** matmul_bench.h: the matmul microbenchmark of a scenario's `workload.matmul`: one matrix
** product [m x k] [k x n], repeated, on one device (the first accelerator of cluster.workers'
** machine, its CPU without one, or a device of cluster.tpu), timed by the device's per-op model
** (sim/roofline.h) and written to matmul.csv: the GEMM counterpart of a collective workload, for
** the fidelity rows of published GEMM measurements (docs/fidelity.md).
*/
#ifndef PODSIM_MATMUL_BENCH_H
#define PODSIM_MATMUL_BENCH_H

#include "scenarios/config/scenario.h"
#include "scenarios/programs/workload.h"

/* Runs s's workload.matmul into out_dir (NULL: only the checks, none of which can fail). Fills
** sum's op ("matmul"), algorithm (the timing model: "per_op" or "roofline"), group, ranks (1),
** mean_time_s, tflops, sim_time_s, events and run_hash (over matmul.csv and the simulated end).
** Returns 0, or 2 with err filled when the outputs cannot be written. */
int matmul_bench_run(const scenario *s, const char *out_dir, workload_summary *sum, scn_error *err);

#endif
