/*
** tboard.h: a run's per-step scalars for TensorBoard (tboard_), outputs.tensorboard. The tags
** are metrics.csv's column names, so a chart and a column read alike: loss, step_time_s,
** examples_per_s, then as the run has them compute_s, comm_s, idle_s, input_s, compile_s,
** hbm_bytes, restarts, staleness, learning_rate and the compiled metrics; and goodput, the
** useful step time so far over the simulated time so far (not for parameter_server runs,
** whose goodput is over the workers' time). Not part of run_hash: metrics.csv holds the same.
*/
#ifndef PODSIM_TBOARD_H
#define PODSIM_TBOARD_H

#include <stddef.h>

#include "scenarios/report/outputs.h"

/* DIR/train/events.out.tfevents.0000000000.podsim: an event per row, at the row's step and at
** wall time its simulated end in seconds (the run starting at the Unix epoch, so that a
** scenario's file is the same bytes on any host on any day). 0, or -1 with msg. */
int tboard_write_run(const char *dir, const step_record *rows, long n, const outputs_columns *cols,
                     char *msg, size_t len);

#endif
