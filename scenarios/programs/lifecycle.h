/*
** lifecycle.h: the job lifecycle both training programs share (lc_): when a job stops, when it
** restarts, when it has failed for good, and the downtime and restarts that follow. The program
** plugs in through a table of callbacks (stop the running attempt, start a new one from the last
** checkpoint); what a checkpoint holds and what a lost task means stay the program's
** (recovery.c for sync jobs, ps_train.c for parameter-server jobs).
**
** States and transitions (lifecycle.c):
**
**   state      event                          next       what happens
**   UP         a task the job needs is lost   DOWN       stop; "job down" opens; down_since = now;
**                                                        restart at max(now + delay, back)
**   RESTORING  a task the job needs is lost   DOWN       stop; "job down" opens (down_since kept);
**                                                        restart as above
**   DOWN       a task the job needs is lost   DOWN       the restart moves later if this loss
**                                                        needs it later, never earlier
**   UP, RESTORING, DOWN  the job cannot restart  FAILED  stop (if running); the error is recorded
**   UP, RESTORING, DOWN  the LC_MAX_IDLE_LOSSES-th FAILED  stop; the stall is recorded (lc_stalled)
**              loss with no step done since
**   DOWN       the restart event              RESTORING  restarts++; "restoring" opens; start
**                                             (UP        when the program does not restore: start,
**                                                        and the downtime span closes at once)
**   RESTORING  the attempt runs (lc_up)       UP         the span closes; downtime += now - down_since
**   FAILED     anything                       FAILED     nothing
**
** Invariants:
**   (1) down_since >= 0 exactly from the loss that stopped a running job to the moment its next
**       attempt runs; downtime sums those spans (a job failed for good counts to the end);
**   (2) at most one restart is pending, only while DOWN;
**   (3) the faults chart's job span (faultlog.h) is "job down" while DOWN, "restoring" while
**       RESTORING, none while UP;
**   (4) a job whose tasks are lost LC_MAX_IDLE_LOSSES times with no step completed in between (or
**       since the start) fails: faults that strike faster than it restarts would otherwise walk
**       simulated time to the horizon a loss at a time (hours of wall time, nothing to show), and
**       no count of simulated losses depends on the wall clock.
*/
#ifndef PODSIM_LIFECYCLE_H
#define PODSIM_LIFECYCLE_H

#include "scenarios/config/scenario.h"
#include "scenarios/programs/faultlog.h"
#include "scenarios/report/outputs.h"

typedef enum { LC_UP, LC_RESTORING, LC_DOWN, LC_FAILED } lc_state;

/* Invariant 4's bound: a storm of 4 workers preempted every 4 ms with a 100 ms restart delay trips
** it after 10000 losses, 10 simulated seconds; a real job (thousands of tasks, MTBFs of hours)
** completes a step between far fewer losses than that, or could never restart either. */
#define LC_MAX_IDLE_LOSSES 10000

typedef struct lc_program {
  void (*stop)(void *ctx);  /* kills the running attempt's actors and what they use */
  void (*start)(void *ctx); /* starts a new attempt from the last checkpoint */
  int restores;             /* a new attempt reads its checkpoint before it runs (RESTORING until
                            ** lc_up); 0: it runs at once (the parameter-server chief, whose ps
                            ** tasks take the checkpoint back as it starts) */
} lc_program;

typedef struct lc_job lc_job;

/* The lifecycle of a job on engine e: restarts follow training.restart when can_restart, else a
** lost task fails the job for good. The job starts UP. */
lc_job   *lc_new(const scenario *s, sim_engine *e, int can_restart, const lc_program *p, void *ctx);
void      lc_free(lc_job *j);
/* The faults chart's log, which the program fills with the faults and checkpoints it sees. */
flog     *lc_log(lc_job *j);

/* A task the job needs is lost now and back at back_at (see the table). Returns the state it
** was in; the job's state after is lc_state_of. A loss that fails the job for want of a restart
** leaves its error to lc_fail; one that trips invariant 4 records its own (lc_stalled). */
lc_state  lc_task_lost(lc_job *j, sim_time back_at);
/* A step completed: the count of invariant 4 starts again. */
void      lc_progress(lc_job *j);
/* 1 when invariant 4 failed the job (its error is recorded). */
int       lc_stalled(const lc_job *j);
/* The job failed for good with TF exception `kind` on `device` (the message printf-style). */
void      lc_fail(lc_job *j, const char *kind, const char *device, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));
/* The same with the whole error (an out-of-memory's figures too). */
void      lc_fail_error(lc_job *j, const run_error *e);
/* The attempt the last restart started runs (its first step, or at once when a restart has
** nothing to read): RESTORING -> UP. */
void      lc_up(lc_job *j);

lc_state  lc_state_of(const lc_job *j);
int       lc_restarts(const lc_job *j);
/* Downtime so far: the closed spans, and an open one up to `end`. */
sim_time  lc_downtime(const lc_job *j, sim_time end);
/* 1 with e filled when the job failed for good. */
int       lc_failed(const lc_job *j, run_error *e);

/* Fast-forward (ps_train.c): the job's state as snapshot words (its state, restarts and
** losses; its idle mark relative to now), and that mark moved dt on with a skip. */
void      lc_snapshot(const lc_job *j, sim_snapshot *snap);
void      lc_skip(lc_job *j, sim_time dt);

#endif
