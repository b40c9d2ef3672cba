/*
** plan.h: capacity planning, `podsim plan FILE [-o DIR] [-j N]` (plan_): runs every point of
** the scenario's `sweep` grid as `podsim run` would run it, measures each (steady step time,
** throughput, device memory and the largest per-replica batch that fits, the expected goodput
** under the scenario's fault model, the time and chip-hours to reach the training steps) and
** writes sweep.csv, report.md, report.pdf and its charts (docs/reports.md).
*/
#ifndef PODSIM_PLAN_H
#define PODSIM_PLAN_H

#include <stdint.h>
#include <stdio.h>

#include "scenarios/config/scenario.h"
#include "scenarios/programs/mfu.h"

struct yt_doc;
typedef struct plan plan;

/* What a point's run measured (sent back by the process that ran it). Times are seconds of
** simulated time; NAN where the run gave no step. */
typedef struct plan_measure {
  int    exit;            /* train_run's exit status; -N: its process died of signal N */
  int    failed;          /* the point's job failed (or its run could not be done) */
  char   error[64];       /* the failure's kind: TF's exception name, "" when none */
  char   message[512];    /* the failure in words */
  int    replicas;        /* num_replicas_in_sync */
  long   steps_completed; /* training steps applied */
  double step_s;          /* the median step (below) */
  double compute_s;       /* that step's compute, communication, idle, input and host times */
  double comm_s;          /* ... */
  double idle_s;          /* ... */
  double input_s;         /* ... */
  double host_s;          /* ... (the TPU host round trip, metrics.csv host_s) */
  double compile_s;       /* XLA compile before the first step */
  uint64_t hbm_peak;      /* peak device memory of the fullest replica device */
  uint64_t hbm_capacity;  /* that device's capacity */
  uint64_t hbm_needed;    /* out of memory: the allocation that did not fit; else hbm_peak */
  long   max_batch;       /* largest per-replica batch that fits (plan_largest_batch) */
  double checkpoint_bytes;/* variables + optimizer slots, one copy */
  uint64_t run_hash;      /* the point's run_hash */
  mfu_model mfu;          /* its model's tokens per example and FLOPs per token, and the peak */
  double bubble;          /* a pipeline's measured bubble (summary.json pipeline_bubble_fraction);
                          ** NaN: no pipeline */
} plan_measure;

/* The fault model of a point, as the goodput formula reads it. */
typedef struct plan_faults {
  double rate_per_s;          /* job-stopping failures per second: each random preempt/fail
                                 fault's rate (1/mtbf) times the targets it matches (under
                                 parameter_server, the ps tasks' and the chief's only) */
  long   checkpoint_steps;    /* training.checkpoint.every_steps (0: no checkpoints) */
  double checkpoint_bytes_per_s; /* training.checkpoint.bandwidth (default 2 GB/s) */
  int    checkpoint_async;    /* training.checkpoint.async: the write goes on behind the steps */
  double restart_delay_s;     /* training.restart.delay (default 0) */
  int    parameter_server;    /* the workers run closures on their own: a worker's loss costs its
                                 share of the fleet, not a restart */
  double workers;             /* parameter_server: the workers */
  double worker_rate_per_s;   /* parameter_server: one worker's preemptions and failures a second */
  double worker_down_s;       /* parameter_server: a worker's mean time down after one (down_for,
                                 weighted by the faults' rates) */
} plan_faults;

/* Expected goodput of a parameter-server job (docs/reports.md, "Expected goodput"): the ps tasks'
** and chief's failures by plan_goodput, times each worker's share of the fleet it keeps, up
** 1 / (1 + lambda_w d) of the time and losing half a closure of closure_s to each loss. */
double plan_ps_goodput(const plan_faults *f, double work_s, double checkpoint_s, double restart_s,
                       double closure_s);

/* One row of sweep.csv. */
typedef struct plan_row {
  char   values[SCN_MAX_SWEEP][96]; /* each swept key's value, as written in the sweep */
  int    chips;           /* billed devices: TPU chips, accelerators of the workers, or VMs */
  char   generation[48];  /* what its chips are: the TPU type's generation (v4, v5litepod) or the
                          ** workers' machine type; the charts draw a line per generation */
  int    global_batch;    /* dataset.global_batch */
  long   steps;           /* training steps to reach (training.steps; with epochs, the run's) */
  plan_faults faults;     /* the point's fault model */
  plan_measure m;         /* what its run measured */
  int    fits;            /* 1 its memory reservation fit, 0 it did not (ResourceExhaustedError), -1 no
                          ** verdict: the point did not run (crashed, or failed before its run) */
  double examples_per_s;  /* global_batch / step_s */
  double efficiency;      /* per-chip throughput over the reference point's (docs/reports.md) */
  double tokens_per_s;    /* examples_per_s x tokens per example (NaN: the model reads no tokens) */
  double mfu;             /* model FLOPs utilisation at that rate, PaLM's (mfu.h; NaN as above) */
  double goodput;         /* expected useful fraction of the job's time (plan_goodput) */
  double time_s;          /* expected time to reach `steps`: compile + steps x step_s / goodput */
  double chip_hours;      /* chips x time_s / 3600 */
  double price_per_hour;  /* the point's cluster in USD per hour (scenario.price_per_hour; NaN: unknown) */
  double cost_usd;        /* price_per_hour x time_s / 3600 */
} plan_row;

/* Loads FILE with the overrides and validates the base scenario and every point of its grid
** (nothing runs). NULL with *err filled: a bad scenario, or a bad sweep value reported at its
** position in the sweep. */
plan *plan_load(const char *path, const char *const *overrides, int noverrides, scn_error *err);
/* Runs every point, at most `jobs` at once (0: the online CPU count), into DIR/points/NNN/, and
** writes the plan's files into DIR. Returns 0, -1 with *err (an output could not be written),
** or TR_STOPPED (train.h) when train_stop_request was set while the points ran (the running
** ones are sent SIGTERM and waited for; the plan's files are not written). */
int   plan_run(plan *p, const char *dir, int jobs, scn_error *err);
/* Whether this process writes and prints the plan: always, but under `mpirun -n N` (a build with
** OpenMPI) only rank 0, which gathers every rank's points (docs/reports.md, "At scale"). */
int   plan_is_root(void);
/* The ranks mpirun launched this sweep over (1 without MPI or outside mpirun), known before
** plan_run starts MPI: several ranks write one directory together, so it cannot be staged. */
int   plan_mpi_ranks(void);
int   plan_num_points(const plan *p);
/* The exit status of point i's run as a shell sees `podsim run`'s: train_run's, or 128 + N when its
** process died of signal N. */
int   plan_point_exit(const plan *p, int i);
/* Whether point i ran to a verdict (done, an expect failed, or its simulated job failed); not when
** its process crashed or it failed before running (an output it could not write). */
int   plan_point_ran(const plan *p, int i);
const plan_row *plan_point(const plan *p, int i);
/* The recommended point (docs/reports.md: the fewest chip-hours, or with outputs.recommend: cost
** the lowest cost, among the points that fit and reach the steps, ties to fewer chips, then to the
** earlier point), -1 when none qualifies. */
int   plan_recommended(const plan *p);
/* The reference of the efficiency column: the first point with the fewest chips that ran. */
int   plan_reference(const plan *p);
/* The base scenario (the file without its sweep values applied). */
const scenario *plan_scenario(const plan *p);
/* The one-screen table and the recommendation. */
void  plan_print(const plan *p, const char *dir, FILE *out);
void  plan_free(plan *p);

/* The building blocks, exposed for their tests. */
/* Expected goodput with exponentially distributed failures at rate_per_s (Daly's exact model):
** work_s of useful work between checkpoints, checkpoint_s to write one, restart_s from a failure
** to work resuming. 1 with no failures and no checkpoint cost. */
double plan_goodput(double rate_per_s, double work_s, double checkpoint_s, double restart_s);
/* The largest b in [1, limit] with fits(ctx, b), fits being monotone (true up to some b, false
** after): doubling from 1 while it fits, then bisection between the last fit and the first
** miss. 0 when fits(ctx, 1) is false. */
long   plan_largest(int (*fits)(void *ctx, long b), void *ctx, long limit);
/* The fault model of scenario s (validated from tree). */
void   plan_faults_of(const struct yt_doc *tree, const scenario *s, plan_faults *out);

#endif
