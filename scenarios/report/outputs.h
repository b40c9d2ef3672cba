/*
** outputs.h: the files of a run's output directory and the run_hash that covers what was
** simulated (metrics, weights, variables, trace, simulated summary figures), never the host.
*/
#ifndef PODSIM_OUTPUTS_H
#define PODSIM_OUTPUTS_H

#include <stdint.h>
#include <stdio.h>
#include <xxhash.h>

#include "models/metric.h"

/* Times are integer picoseconds, printed as exact decimal seconds. */
typedef struct step_record {
  long    step;           /* 0-based training step */
  int64_t end_ps;         /* simulated time at the end of the step */
  int64_t step_ps;        /* simulated duration of the step */
  double  loss;           /* mean per-example loss over the global batch, before the update */
  int     examples;       /* examples in the global batch of this step */
  int64_t compute_ps;     /* replica 0: forward, backward and optimizer */
  int64_t comm_ps;        /* the gradient all-reduce, from the last replica's arrival to its end */
  int64_t idle_ps;        /* replica 0 waiting for slower replicas */
  int64_t host_ps;        /* replica 0 waiting for its program's launch: the TPU host round trip
                             (TF2: every step; tpu_v1: every steps_per_run loop), 0 elsewhere */
  int64_t input_ps;       /* replica 0 waiting for its batch to be on its device */
  int64_t compile_ps;     /* XLA compiling the step before it ran (the first step only) */
  int64_t hidden_ps;      /* with packs: the gradient all-reduce's time under replica 0's backward
                             (scenarios/programs/overlap.h), not in comm_ps */
  uint64_t memory_bytes;  /* replica 0's device memory in use during the step */
  int     restarts;       /* restarts of the job before this step ran (its attempt) */
  int     worker;         /* parameter_server: the worker task that ran the step */
  long    staleness;      /* parameter_server: updates a component of the step received
                             between the step's read of it and its own update, at most */
  float   learning_rate;  /* the rate the step's update used: the schedule at the optimizer's
                             iterations before it (models/optimizer.h) */
  float   metrics[MD_METRIC_KIND_COUNT]; /* training.metrics' results after the step, in order */
} step_record;

typedef struct run_device {
  char name[96];          /* TF device name */
  uint64_t peak_bytes;    /* the most of its memory in use at any time */
  uint64_t capacity_bytes;/* its memory */
} run_device;

typedef struct run_error {
  char kind[64];          /* TensorFlow's exception name, e.g. "ResourceExhaustedError" */
  char device[128];       /* TF device name where it happened */
  char message[512];      /* what happened, in words */
  uint64_t needed_bytes;  /* out of memory: bytes the failed allocation needed in total */
  uint64_t capacity_bytes;/* out of memory: the device's capacity */
} run_error;

/* Means over the completed steps, XLA compile left out (it is compile_s). */
typedef struct run_step_means {
  double step_s;          /* a step's simulated time */
  double input_s;         /* replica 0 waiting for its batch */
  double compute_s;       /* forward, backward and optimizer */
  double comm_s;          /* the gradient all-reduce */
  double idle_s;          /* waiting for slower replicas */
  double host_s;          /* waiting for the host's launch of the step (TPU round trip) */
  double comm_hidden_s;   /* with packs: the all-reduce time the backward hid (not in comm_s) */
} run_step_means;

#define RUN_MAX_WARNINGS 32 /* a run's warnings: one per faults entry at most */

typedef struct run_summary {
  char   scenario[128];   /* scenario name */
  uint64_t seed;          /* scenario seed */
  const char *numerics;   /* "full" or "off" */
  const char *strategy;   /* strategy kind */
  int    replicas;        /* num_replicas_in_sync */
  const char *all_reduce; /* algorithm used for gradients ("none" with one replica) */
  int    slices;          /* TPU slices joined by DCN: 0 or 1 for one (then not written) */
  int    all_reduce_packs;/* packs of the gradient all-reduce overlapped with the backward (0: one
                             all-reduce after it; then not written) */
  const char *sharding;   /* strategy.distribution's recipe ("fsdp_tp"); NULL without (then not written) */
  char   mesh[80];        /* its mesh, "data=2,model=8" (the replicas along one axis without a mesh) */
  char   compute_model[64]; /* how the workers' accelerators time ops (train_compute_model); "": none */
  double sim_time_s;      /* simulated end time */
  long   steps_completed; /* training steps applied */
  double final_loss;      /* loss of the last step */
  double examples_per_s;  /* all examples / sim_time_s */
  double compile_s;       /* XLA compile time charged before the first step (0: none) */
  double steady_examples_per_s; /* the steps' examples over their time without compile: the rate
                             once compiled (examples_per_s when nothing compiled) */
  run_step_means means;   /* the step time breakdown, for the text summary */
  uint64_t memory_peak_bytes;     /* peak over replica devices */
  uint64_t memory_capacity_bytes; /* capacity of that device */
  uint64_t events;        /* engine events processed */
  long   fast_forwarded;  /* steps fast-forward skipped (host work saved: neither hashed nor written) */
  int    simulated_replicas; /* replicas the engine ran, when fewer than replicas (a symmetric mesh:
                             scenarios/programs/mesh_symmetric.h; neither hashed nor written), else 0 */
  long   preemptions;     /* preempt faults that struck (scenarios/programs/recovery.h) */
  long   failures;        /* fail faults that struck */
  int    restarts;        /* times the job restarted */
  long   lost_steps;      /* steps completed, then rolled back to a checkpoint */
  long   checkpoints;     /* checkpoint writes completed */
  double checkpoint_time_s; /* time steps waited for checkpoint writes */
  double downtime_s;      /* from each stop to the next attempt's first step */
  double goodput;         /* useful step time over sim_time_s (docs/faults.md) */
  long   retried_closures;/* parameter_server: closures re-queued after a worker failure */
  long   lost_updates;    /* parameter_server: applied updates a checkpoint restore rolled back */
  long   duplicated_updates; /* parameter_server: steps part of whose update was applied twice */
  int    nevaluate;       /* mode evaluate: the figures below (0: another mode) */
  char   evaluate_names[1 + MD_METRIC_KIND_COUNT][48]; /* `loss`, then each compiled metric's name */
  double evaluate_values[1 + MD_METRIC_KIND_COUNT]; /* their values over the evaluated examples */
  long   evaluate_examples; /* the examples evaluated */
  int    has_evaluator;   /* parameter_server: a side-car evaluator ran (the three below) */
  long   evaluations;     /* its evaluations completed (rows of evaluations.csv) */
  long   failed_restores; /* its restores of a checkpoint deleted while it read it */
  double final_eval_loss; /* the loss of its last evaluation (NaN: none) */
  int    eval_failed;     /* the evaluator's process died of an error of its own (training goes on) */
  run_error eval_error;   /* that error */
  double worker_utilization; /* parameter_server: kept closure time over the workers' up time */
  run_device *devices;    /* each replica device's memory, in replica order; freed by
                             train_run once summary.json is written */
  int ndevices;           /* entries in devices */
  double chip_hours;      /* scenario_chips x simulated hours */
  double cost_usd;        /* the cluster's price per hour x simulated hours; NaN: a price is missing */
  const char *price_model;/* "on_demand" or "spot" */
  const char *price_missing; /* with no cost: the machine without a price */
  double wall_s;          /* host time, not hashed */
  uint64_t run_hash;      /* over everything simulated */
  int    failed;          /* the simulated job failed */
  run_error error;        /* when failed */
  char   warnings[RUN_MAX_WARNINGS][320]; /* what the run was asked for but never happened (a fault
                             that never struck), one line each: stderr and summary.json */
  int    nwarnings;       /* entries in warnings */
  int    has_tokens;      /* the model reads token ids: tokens_per_s and mfu are written */
  double tokens_per_s;    /* examples_per_s x tokens per example */
  double mfu;             /* model FLOPs utilisation, PaLM's (scenarios/programs/mfu.h) */
  const char *stopped_by; /* the callback that stopped training (early_stopping, terminate_on_nan);
                             NULL: it ran its steps (then not written) */
  long   stopped_epoch;   /* with stopped_by: the epoch (0-based) it stopped in */
  int    restored_best;   /* early_stopping's restore_best_weights set the final weights */
  long   best_epoch;      /* then the epoch (0-based) whose weights final_weights.csv holds */
  int    pipeline_stages; /* strategy.distribution's pipeline: its stages (0: no pipeline; the
                             four below are written only with one) */
  int    pipeline_microbatches; /* its microbatches a step */
  const char *pipeline_schedule; /* gpipe or 1f1b */
  double pipeline_bubble_fraction; /* measured: the stages' idle share of each pipeline's span */
  double pipeline_p2p_bytes; /* a pipeline's point-to-point bytes a step (activations and gradients) */
} run_summary;

/* Accumulates the run hash over file contents in a fixed order. */
typedef struct run_hasher { XXH3_state_t *state; } run_hasher;
int      run_hasher_init(run_hasher *h);
void     run_hasher_add(run_hasher *h, const char *label, const void *data, size_t len);
int      run_hasher_add_file(run_hasher *h, const char *path);
/* A file's part without the file (what run_hasher_add_file hashes of it): its base name, then
** its bytes through any number of run_hasher_bytes calls. */
void     run_hasher_begin_file(run_hasher *h, const char *name);
void     run_hasher_bytes(run_hasher *h, const void *data, size_t len);
uint64_t run_hasher_finish(run_hasher *h);

/* Writers. Each returns 0 or -1 (errno set). */
/* The optional columns of metrics.csv, each group after the ones before so that they keep their
** places: sync adds compute_s .. compile_s (sync runs), restart `restarts` (runs with faults), ps
** `worker,staleness` (parameter_server runs), learning_rate (a schedule's runs), then one column
** per compiled metric. */
typedef struct outputs_columns {
  int sync;           /* compute_s, comm_s, idle_s, hbm_bytes, input_s, compile_s, host_s */
  int restart;        /* restarts */
  int ps;             /* worker, staleness */
  int learning_rate;  /* learning_rate */
  int nmetrics;       /* compiled metrics: rows' metrics[0..nmetrics) */
  const char *metric_names[MD_METRIC_KIND_COUNT]; /* their columns' names */
} outputs_columns;
/* metrics.csv's examples_per_s of a step: its examples over its simulated time (0: no time). */
double outputs_examples_per_s(const step_record *r);
int outputs_write_metrics(const char *path, const step_record *rows, long n, const outputs_columns *cols);
int outputs_write_summary(const char *path, const run_summary *s);
/* Reads back the columns NAMES[0..ncols) of a CSV file with a header row and numbers below it
** (metrics.csv): *rows gets ncols values per record (free it), NaN for a column the header lacks.
** Returns the records read (header left out), or -1 when the file cannot be opened (errno; EINVAL:
** not a regular file, such as a symlink to /dev/zero, which would be read without end). */
long outputs_read_columns(const char *path, const char *const *names, int ncols, double **rows);
/* A set of n TF device names in few bytes (malloc'd; free it): when they share one template
** (the same text around their numbers) and are every combination of the numbers each field
** takes, the template with each varying field as [ranges], e.g. 4096 chips
** "/job:worker/replica:0/task:[0-1023]/device:TPU:[0-3]" ("[1;3;8-11]": several ranges);
** otherwise the names joined by spaces, in the order given. */
char *outputs_device_set(const char *const *devices, size_t n);
/* Exact decimal seconds of a picosecond count, trailing zeros trimmed: 261832217 -> "0.000261832217". */
const char *outputs_seconds(char *buf, size_t len, int64_t ps);
/* Joins dir and name into buf. */
const char *outputs_path(char *buf, size_t len, const char *dir, const char *name);
/* 251472 -> "245.6 KiB": binary units, as memory is sized. Returns buf. */
const char *outputs_bytes(char *buf, size_t len, double bytes);
/* mkdir -p. */
int outputs_make_dir(const char *dir);
/* rm -rf: the directory tree at path (a file alone too), not following links. 0, or -1. */
int outputs_remove_tree(const char *path);

/* A run's output directory, whole or absent: the run writes into a staging directory beside
** DIR (DIR.partial-PID, in the same parent so the last step is a rename on one file system)
** and outputs_stage_commit renames it onto DIR, an earlier DIR replaced only once the new one
** is complete. An interrupted or failed run discards the stage, and a crashed one leaves a
** directory whose name says it is partial. */
typedef struct outputs_stage {
  char dir[4096];         /* DIR as given, trailing slashes dropped */
  char path[4096 + 32];   /* the stage the run writes into */
  char made[4096];        /* the outermost parent of DIR that opening created ("": none) */
} outputs_stage;
/* Creates DIR's parents and the stage. Refuses (-1, msg "DIR: outputs.dir: why: strerror")
** a DIR that exists and is not a directory, a DIR of "." or "..", a parent where it cannot
** create a directory and a file system with no free space, or less than need_bytes (what the
** run will write at least; 0: unknown): all before a run starts. */
int  outputs_stage_open(outputs_stage *st, const char *dir, double need_bytes, char *msg, size_t len);
/* Moves an earlier DIR aside, renames the stage onto DIR, then removes the earlier one. 0; 1
** with msg when the earlier one could not be removed (the new DIR is in place); or -1 with msg:
** the stage is then discarded and an earlier DIR put back. */
int  outputs_stage_commit(outputs_stage *st, char *msg, size_t len);
/* Removes the stage and the parents opening created: as if the run had written nothing. */
void outputs_stage_discard(outputs_stage *st);

#endif
