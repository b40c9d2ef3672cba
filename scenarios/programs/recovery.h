/*
** recovery.h: checkpoints, faults and restarts of a sync training job (rec_).
**
** A sync job (every strategy but parameter_server) needs all its replicas: when a task holding
** one is preempted or fails, every replica stops, as TensorFlow's collectives fail the step
** with UnavailableError. With training.restart the job comes back after the restart delay (and
** not before the lost machine is back, down_for), restores the last checkpoint (its bytes read
** at the checkpoint bandwidth), recompiles and goes on from the checkpoint's step: variables,
** optimizer slots and iteration count, and the input position (the step) are the checkpoint, so
** the weights at the end are bit-identical to an uninterrupted run. Without training.restart the
** job fails (exit 3). docs/faults.md has the whole model.
**
** The training program provides stop and start; the recovery module decides when.
*/
#ifndef PODSIM_RECOVERY_H
#define PODSIM_RECOVERY_H

#include "models/model.h"
#include "models/optimizer.h"
#include "scenarios/programs/faults.h"
#include "scenarios/programs/lossscale.h"
#include "scenarios/report/outputs.h"
#include "scenarios/report/report.h"
#include "scenarios/config/scenario.h"

typedef struct rec_job rec_job;

typedef struct rec_program {
  /* Kills the running attempt's actors and what they use (the input pipeline). */
  void (*stop)(void *ctx);
  /* Starts an attempt at `step` whose replicas first wait `restore` (reading the checkpoint);
  ** each restores its variables and slots with rec_restore. */
  void (*start)(void *ctx, long step, sim_time restore);
  /* Overwrites a checkpoint's copy of the non-trainable variables (Keras's ON_READ ones with
  ** aggregation MEAN: batch normalisation's moving statistics) with what TF saves of them, their
  ** mean over the replicas as they were at the end of `step`; NULL: replica 0's stay. */
  void (*read_on_read)(void *ctx, long step, md_model *snapshot);
  /* The saves at the end of `step` (epoch_end 0), or at the end of the epoch it ends, after the
  ** epoch's evaluation (1), as callbacks.h's CB_SAVE_* bits (a backup sets *resume, the step a
  ** restart from it starts at); NULL: training.checkpoint's, every every_steps steps, resuming
  ** after the step. */
  int (*saves)(void *ctx, long step, int epoch_end, long *resume);
} rec_program;

/* The job of scenario s on engine e; `model` and `opt` are replica 0's at the start (the state
** a restart without checkpoint goes back to). faults may be NULL (no faults): then only
** checkpoints are taken. The plan starts now. */
rec_job *rec_new(const scenario *s, sim_engine *e, const md_model *model, const md_optimizer *opt,
                 faults *f, const ds_strategy *st, const sim_tpu_slice *slice,
                 const rec_program *prog, void *ctx);
void     rec_free(rec_job *j);
/* State besides the variables that every checkpoint writes and a restore reads: the input
** iterator's shuffle buffer, which tf.train.Checkpoint(iterator=...) saves. */
void     rec_add_checkpoint_bytes(rec_job *j, double bytes);

/* Called by replica 0 as it starts `step`: at_step faults strike, and a restart's downtime
** ends. */
void rec_step_begin(rec_job *j, long step);
/* Called by every replica when `step` is done (replica 0 after recording it), with its model,
** optimizer and loss scale (mixed_float16's LossScaleOptimizer state, saved with the optimizer's
** variables as Keras does; NULL without one): takes the checkpoint when one is due (blocking: every replica waits for the write;
** async: replica 0 snapshots and the write goes on behind the next steps, a next checkpoint
** waiting for it). The program's saves (callbacks) block: a ModelCheckpoint save and a
** double_checkpoint copy (a read and a write of the bytes) take their time before the backup's.
** Returns SIM_OK, or what the interrupted wait returned. */
int      rec_step_end(rec_job *j, sim_actor *self, int replica, long step, const md_model *m,
                      const md_optimizer *o, const ls_state *ls);
/* Called by every replica at the end of the epoch `step` ends, after its evaluation and its
** callbacks (fit's on_epoch_end): the program's epoch-end saves, blocking as rec_step_end's.
** SIM_OK, or what the interrupted wait returned. */
int      rec_epoch_end(rec_job *j, sim_actor *self, int replica, long step, const md_model *m,
                       const md_optimizer *o, const ls_state *ls);
/* Fast-forward (train.c): the last step s <= to such that steps from..s neither begin nor end
** anything here (the job is UP; no checkpoint is due at their end, no at_step fault strikes at
** their start), from - 1 when there is none; and the bookkeeping of `steps` such steps done. */
long     rec_steady_until(const rec_job *j, long from, long to);
void     rec_skip(rec_job *j, long steps);
/* The last step is done: faults still to come are cancelled (the clock stops with the job). */
void     rec_finished(rec_job *j);
/* Puts the last checkpoint (or the initial state) into a replica's model, optimizer and loss
** scale (NULL: none). */
void     rec_restore(const rec_job *j, md_model *m, md_optimizer *o, ls_state *ls);
/* Restarts so far (the metrics.csv column of the rows being recorded). */
int      rec_restarts(const rec_job *j);
/* The job failed for good (a fault and no training.restart): fills kind, device and message. */
int      rec_failed(const rec_job *j, run_error *e);
/* The program failed the job for good (an exception the training loop raised). */
void     rec_fail(rec_job *j, const char *kind, const char *device, const char *message);

/* What the faults chart draws, in order of start: each fault as an instant ("preempted",
** "failed") on its target's row and the machine's time down ("machine down"); on the row
** "training", the job stopped ("job down": from the fault to its restart), restoring ("restoring":
** from the restart to its first step) and each checkpoint written (an instant). A span still open
** ends at `end`. Valid until rec_free. */
const report_fault *rec_events(rec_job *j, sim_time end, size_t *n);

/* Row i is kept when no later row redoes its step (a restart rolled it back); kept[0..n). */
void     rec_kept_rows(const step_record *rows, long n, unsigned char *kept);
/* The fault figures of summary.json: preemptions, failures, restarts, lost_steps, checkpoints,
** checkpoint_time_s, downtime_s and goodput (useful step time over the run's time). */
void     rec_summarise(const rec_job *j, const step_record *rows, long n, sim_time end,
                       run_summary *sum);

#endif
