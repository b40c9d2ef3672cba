/*
** train.h: the training program: runs a validated scenario's model on its strategy and cluster,
** and writes the output directory of the contract (docs/scenario-format.md).
*/
#ifndef PODSIM_TRAIN_H
#define PODSIM_TRAIN_H

#include <signal.h>

#include "base/base.h"

#include "scenarios/config/scenario.h"
#include "scenarios/report/outputs.h"
#include "scenarios/report/report.h"
#include "strategies/core/strategy.h"

/* Exit statuses of the contract, and TR_STOPPED: the run stopped because train_stop_request
** was set and wrote nothing (the CLI exits 128 + the signal that set it). */
enum { TR_EXIT_OK = 0, TR_EXIT_EXPECT = 1, TR_EXIT_INPUT = 2, TR_EXIT_JOB_FAILED = 3, TR_STOPPED = 4 };

/* Set (nonzero) by the host, from a signal handler if it likes (SIGINT, SIGTERM in the CLI), to
** ask the running program to stop: its engine tests it every SIM_STOP_CHECK_EVENTS events and
** the run returns TR_STOPPED without writing anything. The library never clears it. */
extern volatile sig_atomic_t train_stop_request;
/* A program's engine: spans recorded when `trace`, stopping once train_stop_request is set. */
sim_engine *train_engine_new(int trace);
/* Ticks progress p (report.h) from e's stop check; p outlives the run loops. */
void train_engine_progress(sim_engine *e, report_progress *p);

/* Fills *err as a run-time input error: "file:line:col: key: what" (line 0: "file: key: what").
** Returns TR_EXIT_INPUT. */
int train_error(scn_error *err, const char *file, int line, int col, const char *key,
                const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* The algorithm a scenario's all_reduce names; auto is what XLA / TF's collective ops pick:
** the torus on a TPU slice, the ring on CPU workers (with or without accelerators). */
sim_algo train_algorithm(scn_allreduce a, int on_tpu);
/* The algorithm of the workers' replicas: auto is nccl on a GPU system (dgx-*: TF's
** MirroredStrategy reduces with NcclAllReduce there), ring elsewhere; the rest as named. */
sim_algo train_workers_algorithm(const scenario *s, scn_allreduce a);
/* The CPU workers of the scenario as the strategies see them. */
ds_cluster train_cluster(const scenario *s);

/* Reads and checks every input file (CSV, init weights) without running: `podsim check`. */
int train_check(const scenario *s, scn_error *err);
/* Runs the scenario into out_dir: the sync program (train.c), or ps_train.c's for
** parameter_server. Returns TR_EXIT_OK, TR_EXIT_JOB_FAILED (outputs written, summary->error set),
** TR_EXIT_INPUT (err filled, nothing written) or TR_STOPPED (nothing written; summary's
** steps_completed says how far the run got). */
int train_run(const scenario *s, const char *out_dir, run_summary *summary, scn_error *err);
/* train_run as `podsim run` does it: progress on stderr in report.h's mode `progress`
** (REPORT_PROGRESS_BAR: a bar when stderr is a terminal; _QUIET: none; _LINES: `--progress`'s
** lines, docs/reports.md). Outputs and run_hash are the same either way. */
int train_run_cli(const scenario *s, const char *out_dir, int progress, run_summary *summary,
                  scn_error *err);

/* The memory model of a run without running it, for `podsim plan`'s batch search: what each
** replica reserves on each of its devices before the first step (docs/scenario-format.md,
** "Memory"), on shapes alone whatever the scenario's numerics. */
typedef struct train_memory train_memory;
/* NULL with *err filled when the model cannot be built. */
train_memory *train_memory_new(const scenario *s, scn_error *err);
int           train_memory_replicas(const train_memory *m);
/* 1 when a per-replica batch of `batch` examples fits every device of every replica, else 0;
** the probe's devices are left empty either way. */
int           train_memory_fits(train_memory *m, int batch);
/* Bytes of one copy of the variables and optimizer slots (float32): what a checkpoint holds. */
double        train_memory_checkpoint_bytes(const train_memory *m);
void          train_memory_free(train_memory *m);

#endif
