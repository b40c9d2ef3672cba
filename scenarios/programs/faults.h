/*
** faults.h: a scenario's `faults` against its run (faults_).
**
** Targets name what the run has: on CPU workers `worker:N` and the fabric's links (`fabric:*`,
** `fabric:N` = worker N's own links, its NIC); on a TPU slice `tpu` (the whole slice),
** `tpu_host:N`, the ICI links (`ici:*`, `ici:N` = chip N's ports) and the hosts' DCN links
** (`dcn:*`, `dcn:N`). `worker:*`, `tpu_host:*`, `ps:*` stand for each task in turn (each with
** its own random stream). `ps:N`, `chief` and `evaluator` are parameter-server runs' tasks; a
** sync run has none, so naming them there is a scenario error, as is a worker, ps, host or chip
** beyond the cluster.
**
** Trace files are CSV with the header `time,kind,target,duration` and an optional fifth column
** `factor` (a straggler's slowdown, a link_degrade's factor); times carry units as in the
** scenario (`12.5s`); an empty duration means down_for 0 for preempt and fail and "to the end"
** for the others. A bad row is a scenario error at its file:line:col.
*/
#ifndef PODSIM_FAULTS_H
#define PODSIM_FAULTS_H

#include "scenarios/config/scenario.h"
#include "sim/fault.h"
#include "sim/tpu.h"
#include "scenarios/report/outputs.h"
#include "strategies/core/strategy.h"

typedef struct faults faults;

/* Resolves every faults entry against the scenario's cluster and reads its trace files into
** occurrences. Returns 0 (TR_EXIT_OK) with *out, NULL when the scenario has no faults, or
** TR_EXIT_INPUT with err naming the file, line and column. */
int  faults_load(const scenario *s, faults **out, scn_error *err);
void faults_free(faults *f);

/* A preempt or fail struck target f->target; in_job says whether replicas of the job were on it
** (a stopped task holding none, such as an idle worker of a one-device run, stops nothing). */
typedef void (*faults_down_fn)(void *ctx, const sim_fault *f, int in_job);

/* The run's plan (started, see sim/fault.h): stragglers and link faults act on the strategy's
** devices and links, or the slice's for a TPU run (slice non-NULL); task faults go to down.
** Free it with sim_fault_plan_free before faults_free. */
sim_fault_plan *faults_plan(faults *f, sim_engine *e, const ds_strategy *st,
                            const sim_tpu_slice *slice, faults_down_fn down, void *ctx);
/* One warning in sum (sum->warnings) for each entry that never struck in plan p by the run's end:
** a timed entry (at, at_step, a trace's rows) some of whose faults never struck, a random one none
** of whose targets' draws fell within the run. */
void faults_unstruck(const faults *f, const sim_fault_plan *p, sim_time end, run_summary *sum);
/* The task a task fault's target is (parameter-server runs route each kind to its own
** handling), and its index in its job (0 for the chief and the evaluator). */
typedef enum { FAULTS_WORKER = 0, FAULTS_PS, FAULTS_CHIEF, FAULTS_EVALUATOR, FAULTS_OTHER } faults_task;
faults_task faults_target_task(const faults *f, int target, int *index);
/* The target as the trace and messages name it ("tpu_host:1"). */
const char *faults_target_name(const faults *f, int target);

#endif
