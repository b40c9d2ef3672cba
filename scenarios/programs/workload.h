/*
** workload.h: the collective microbenchmark of a scenario's `workload` (instead of a training
** run): one collective op, repeated, on the CPU workers' replicas or on a TPU slice, written to
** collective.csv with nccl-tests' algorithm and bus bandwidths; or workload.matmul, which
** matmul_bench.h runs.
*/
#ifndef PODSIM_WORKLOAD_H
#define PODSIM_WORKLOAD_H

#include <jansson.h>

#include "scenarios/config/scenario.h"

typedef struct workload_summary {
  const char *op;         /* the op's name */
  const char *algorithm;  /* the algorithm run (auto resolved) */
  const char *group;      /* "workers" or "tpu" */
  int ranks;              /* devices in the group (in one line, with an axis) */
  int lines;              /* groups run at once: the lines along the axis, else 1 */
  int slices;             /* TPU slices joined by DCN (1 but for a multislice) */
  double dcn_time_s;      /* multislice: the mean of the all-reduce's DCN phase, else 0 */
  double mean_time_s;     /* mean simulated time of one collective */
  double busbw_GBps;      /* bus bandwidth of that mean (0 for a matmul) */
  double tflops;          /* a matmul's 2 m n k / mean time, in TFLOP/s (0 for a collective) */
  double sim_time_s;      /* simulated end time */
  uint64_t events;        /* engine events */
  uint64_t run_hash;      /* over collective.csv, trace.json and the simulated totals */
  double wall_s;          /* host time, not hashed */
} workload_summary;

/* Runs the workload into out_dir (NULL: only the checks a run makes before it starts). Returns
** 0, 2 with err filled, or TR_STOPPED (train.h: train_stop_request was set); nothing is written
** but on 0. */
int workload_run(const scenario *s, const char *out_dir, workload_summary *sum, scn_error *err);
/* summary.json of a workload, shared by the collective and matmul benchmarks: a new object with
** the scenario's name, seed and numerics; then, after the caller's fields, run_hash and wall_s
** added, the file written and o freed (0, or -1 when it cannot be written). */
json_t *workload_json_new(const scenario *s);
int     workload_json_write(json_t *o, const char *path, const workload_summary *sum);
/* The checks of a run (the collective fits its group and algorithm, buffers fit the host), for
** `podsim check`. Returns 0, or 2 with err filled. */
int workload_check(const scenario *s, scn_error *err);

#endif
