/*
** recovery.c: checkpoints, faults and restarts of a sync training job (rec_ in recovery.h).
**
** Design notes
** ------------
** When the job stops, restarts or fails is lifecycle.h's (UP, RESTORING while a new attempt's
** replicas read the checkpoint, DOWN, FAILED), shared with the parameter-server program; a task
** fault on a task of the job is a lost task there, back after its down time. This file is the
** sync job's part: the checkpoint is two copies of replica 0's state (its sync-on-read variables
** the replicas' mean, rec_program's read_on_read): `pending`, written as the
** step ends (the snapshot being written), and `saved`, the last one whose write completed; only
** `saved` is ever restored, so a write cut short by a fault is lost as on real storage.
**
** Invariants:
**  1. saved_step <= last_done + 1 while UP: the checkpoint is never ahead of the job.
**  2. At most one async write is in flight (write_event); a due checkpoint waits for it.
*/
#include "scenarios/programs/recovery.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scenarios/programs/callbacks.h"
#include "scenarios/programs/faultlog.h"
#include "scenarios/programs/lifecycle.h"
#include "scenarios/programs/train.h"

/* A copy of the training state: variables and optimizer state. */
typedef struct state_copy {
  md_model *model;        /* variables */
  md_optimizer *opt;      /* slots and iteration count */
  ls_state loss_scale;    /* the LossScaleOptimizer's scale and growth count (mixed_float16) */
  long step;              /* the step to resume at */
} state_copy;

struct rec_job {
  const scenario *s;      /* checkpoint and restart settings */
  sim_engine *engine;     /* the clock */
  const rec_program *prog;/* the training program's stop and start */
  void *ctx;              /* their argument */
  faults *faults;         /* the scenario's faults, or NULL */
  sim_fault_plan *plan;   /* their plan, or NULL */
  lc_job *life;           /* when the job stops, restarts or fails (lifecycle.h) */
  state_copy saved;       /* the checkpoint restores read (the initial state at first) */
  state_copy pending;     /* the snapshot being written */
  double bytes;           /* one checkpoint's bytes: variables, slots, the iterator's state */
  sim_time write_ps;      /* one checkpoint's write (and a restore's read) */
  sim_event_handle write_event; /* an async write's completion (invariant 2) */
  sim_time write_done;    /* when it completes */
  long last_done;         /* the last step completed by the running attempt */
  long first_step;        /* the step the running attempt started at */
  long lost_steps;        /* steps completed, then rolled back by a restart */
  long checkpoints;       /* writes completed */
  sim_time checkpoint_ps; /* time steps waited for checkpoint writes */
};

static void copy_state(state_copy *dst, const md_model *m, const md_optimizer *o, const ls_state *ls,
                       long step) {
  for (int i = 0; i < md_model_num_vars(m); i++) {
    const md_var *from = md_model_var_const(m, i);
    md_var *to = md_model_var(dst->model, i);
    if (from->data != NULL) memcpy(to->data, from->data, from->size * sizeof(float));
  }
  md_optimizer_copy_state(dst->opt, o);
  if (ls) dst->loss_scale = *ls;
  dst->step = step;
}

/* The pending checkpoint: replica 0's state at the end of `step`, its sync-on-read variables the
** replicas' mean. */
static void snapshot(rec_job *j, const md_model *m, const md_optimizer *o, const ls_state *ls, long step,
                     long resume) {
  copy_state(&j->pending, m, o, ls, resume);
  if (j->prog->read_on_read) j->prog->read_on_read(j->ctx, step, j->pending.model);
}

static void make_copy(state_copy *c, const scenario *s, const md_model *m) {
  c->model = md_model_clone(m);
  c->opt = md_optimizer_new(&s->optimizer, c->model);
}

static void free_copy(state_copy *c) {
  md_optimizer_free(c->opt);
  md_model_free(c->model);
}

static void mark(rec_job *j, const char *what) {
  if (j->plan) sim_trace_instant(j->engine, sim_fault_plan_track(j->plan), what, "recovery", sim_now(j->engine));
}

/* ---- restarts ------------------------------------------------------------------------------ */

/* lifecycle.h's start: a new attempt from the checkpoint. */
static void start_attempt(void *ctx) {
  rec_job *j = ctx;
  char what[64];
  j->first_step = j->saved.step;
  j->last_done = j->saved.step - 1;
  snprintf(what, sizeof what, "restart from step %ld", j->saved.step);
  mark(j, what);
  /* The initial state is in memory (the program made it); a checkpoint is read from storage. */
  j->prog->start(j->ctx, j->saved.step, j->saved.step > 0 ? j->write_ps : 0);
}

static void stop_attempt(void *ctx) {
  rec_job *j = ctx;
  j->prog->stop(j->ctx);
}

static const lc_program ATTEMPTS = { stop_attempt, start_attempt, 1 };

static void task_name_device(const rec_job *j, const sim_fault *f, char *buf, size_t len) {
  const char *name = faults_target_name(j->faults, f->target);
  const char *colon = strchr(name, ':');
  if (colon) snprintf(buf, len, "/job:worker/replica:0/task:%s", colon + 1);
  else snprintf(buf, len, "/job:worker");
}

/* A preempt or fail struck a task; see the design notes. */
static void on_down(void *ctx, const sim_fault *f, int in_job) {
  rec_job *j = ctx;
  if (!in_job || lc_state_of(j->life) == LC_FAILED) return;
  sim_time now = sim_now(j->engine);
  flog_fault(lc_log(j->life), f, faults_target_name(j->faults, f->target));
  sim_time back = f->duration > SIM_TIME_HORIZON - now ? SIM_TIME_HORIZON : now + f->duration;
  lc_state was = lc_task_lost(j->life, back);
  if (was != LC_DOWN) {
    if (sim_cancel(j->engine, j->write_event)) mark(j, "checkpoint write lost");
    if (was == LC_UP) j->lost_steps += j->last_done + 1 - j->saved.step;
    mark(j, "job stopped");
  }
  if (lc_state_of(j->life) == LC_FAILED && lc_stalled(j->life)) {
    sim_fault_plan_stop(j->plan);
  } else if (lc_state_of(j->life) == LC_FAILED) {
    char device[96];
    task_name_device(j, f, device, sizeof device);
    lc_fail(j->life, "UnavailableError", device, "%s of %s at %.12g s stopped the job after step %ld; "
            "training.restart is not set, so nothing restarts it", sim_fault_kind_name(f->kind),
            faults_target_name(j->faults, f->target), sim_time_to_s(now), j->last_done);
    sim_fault_plan_stop(j->plan);
  }
}

/* ---- checkpoints --------------------------------------------------------------------------- */

static void commit(rec_job *j) {
  state_copy t = j->saved;
  j->saved = j->pending;
  j->pending = t;
  j->checkpoints++;
  char what[48];
  snprintf(what, sizeof what, "checkpoint step %ld", j->saved.step);
  mark(j, what);
  flog_checkpoint(lc_log(j->life));
}

static void write_done(sim_engine *e, void *arg) {
  (void)e;
  rec_job *j = arg;
  j->write_event = (sim_event_handle){0, 0};
  commit(j);
}

/* The saves `saves` (CB_SAVE_*) at the end of `step`; a backup resumes at `resume`. */
static int save(rec_job *j, sim_actor *self, int replica, long step, int saves, long resume,
                const md_model *m, const md_optimizer *o, const ls_state *ls) {
  sim_time other = (saves & CB_SAVE_MODEL ? j->write_ps : 0) + (saves & CB_SAVE_COPY ? 2 * j->write_ps : 0);
  if (other > 0) {
    int rc = sim_sleep(self, other);
    if (rc != SIM_OK) return rc;
    if (replica == 0) j->checkpoint_ps += other;
  }
  if (!(saves & CB_SAVE_BACKUP)) return SIM_OK;
  sim_time now = sim_now(j->engine);
  if (!j->s->ckpt_async) {
    if (replica == 0) snapshot(j, m, o, ls, step, resume);
    int rc = sim_sleep(self, j->write_ps);
    if (rc == SIM_OK && replica == 0) {
      j->checkpoint_ps += j->write_ps;
      commit(j);
    }
    return rc;
  }
  if (replica != 0) return SIM_OK;
  if (j->write_event.generation != 0 && sim_cancel(j->engine, j->write_event)) {
    /* Invariant 2: the previous write must finish before this snapshot replaces it. */
    int rc = sim_sleep(self, j->write_done - now);
    if (rc != SIM_OK) return rc;
    j->checkpoint_ps += j->write_done - now;
    commit(j);
    now = sim_now(j->engine);
  }
  snapshot(j, m, o, ls, step, resume);
  j->write_done = sim_time_add(now, j->write_ps);
  j->write_event = sim_schedule(j->engine, j->write_done, write_done, j);
  return SIM_OK;
}

int rec_step_end(rec_job *j, sim_actor *self, int replica, long step, const md_model *m,
                 const md_optimizer *o, const ls_state *ls) {
  if (replica == 0) {
    j->last_done = step;
    lc_progress(j->life);
  }
  long resume = step + 1;
  int saves = j->prog->saves ? j->prog->saves(j->ctx, step, 0, &resume)
              : j->s->ckpt_every > 0 && (step + 1) % j->s->ckpt_every == 0 ? CB_SAVE_BACKUP : 0;
  return save(j, self, replica, step, saves, resume, m, o, ls);
}

int rec_epoch_end(rec_job *j, sim_actor *self, int replica, long step, const md_model *m,
                  const md_optimizer *o, const ls_state *ls) {
  long resume = step + 1;
  int saves = j->prog->saves ? j->prog->saves(j->ctx, step, 1, &resume) : 0;
  return save(j, self, replica, step, saves, resume, m, o, ls);
}

/* ---- the rest ------------------------------------------------------------------------------ */

/* One checkpoint's write: at most the clock's horizon. A tiny training.checkpoint.bandwidth can
** make it longer than int64 picoseconds hold (1e-9 B/s: exit 134 in the event queue); any write
** that long takes the run past the horizon, where it stops (trainSync.h's horizon_hit). */
static sim_time write_time(const rec_job *j) {
  sim_time t = sim_time_from_s(j->bytes / j->s->ckpt_bytes_per_s);
  return t < SIM_TIME_HORIZON ? t : SIM_TIME_HORIZON;
}

rec_job *rec_new(const scenario *s, sim_engine *e, const md_model *model, const md_optimizer *opt,
                 faults *f, const ds_strategy *st, const sim_tpu_slice *slice,
                 const rec_program *prog, void *ctx) {
  rec_job *j = base_xcalloc(1, sizeof *j);
  *j = (rec_job){.s = s, .engine = e, .prog = prog, .ctx = ctx, .faults = f, .last_done = -1};
  j->life = lc_new(s, e, s->has_restart, &ATTEMPTS, j);
  make_copy(&j->saved, s, model);
  make_copy(&j->pending, s, model);
  ls_state initial;
  ls_init(&initial);
  copy_state(&j->saved, model, opt, &initial, 0);
  for (int i = 0; i < md_model_num_vars(model); i++) j->bytes += 4.0 * (double)md_model_var_const(model, i)->size;
  for (int i = 0; i < md_optimizer_num_slots(opt); i++) j->bytes += 4.0 * (double)md_optimizer_slot(opt, i)->size;
  j->write_ps = write_time(j);
  if (f) j->plan = faults_plan(f, e, st, slice, on_down, j);
  return j;
}

void rec_add_checkpoint_bytes(rec_job *j, double bytes) {
  j->bytes += bytes;
  j->write_ps = write_time(j);
}

void rec_free(rec_job *j) {
  if (j == NULL) return;
  sim_fault_plan_free(j->plan);
  free_copy(&j->saved);
  free_copy(&j->pending);
  lc_free(j->life);
  free(j);
}

void rec_step_begin(rec_job *j, long step) {
  lc_up(j->life);
  if (j->plan) sim_fault_plan_step(j->plan, step);
}

long rec_steady_until(const rec_job *j, long from, long to) {
  if (lc_state_of(j->life) != LC_UP) return from - 1;
  if (j->plan) {
    long strike = sim_fault_plan_next_step(j->plan, from);
    if (strike <= to) to = strike - 1;
  }
  long every = j->s->ckpt_every;
  if (every > 0) {
    long due = (from + 1 + every - 1) / every * every - 1; /* the first step >= from ending in one */
    if (due <= to) to = due - 1;
  }
  return to;
}

void rec_skip(rec_job *j, long steps) { j->last_done += steps; }

void rec_finished(rec_job *j) {
  if (j->plan) sim_fault_plan_stop(j->plan);
}

void rec_restore(const rec_job *j, md_model *m, md_optimizer *o, ls_state *ls) {
  for (int i = 0; i < md_model_num_vars(m); i++) {
    const md_var *from = md_model_var_const(j->saved.model, i);
    if (from->data != NULL) memcpy(md_model_var(m, i)->data, from->data, from->size * sizeof(float));
  }
  md_optimizer_copy_state(o, j->saved.opt);
  if (ls) *ls = j->saved.loss_scale;
}

const report_fault *rec_events(rec_job *j, sim_time end, size_t *n) {
  return flog_events(lc_log(j->life), end, n);
}

int rec_restarts(const rec_job *j) { return lc_restarts(j->life); }

int rec_failed(const rec_job *j, run_error *e) { return lc_failed(j->life, e); }

void rec_fail(rec_job *j, const char *kind, const char *device, const char *message) {
  lc_fail(j->life, kind, device, "%s", message);
}

void rec_kept_rows(const step_record *rows, long n, unsigned char *kept) {
  long next = -1;  /* the smallest step of the rows after i (-1: none yet) */
  for (long i = n - 1; i >= 0; i--) {
    kept[i] = next < 0 || rows[i].step < next;
    if (next < 0 || rows[i].step < next) next = rows[i].step;
  }
}

void rec_summarise(const rec_job *j, const step_record *rows, long n, sim_time end, run_summary *sum) {
  sum->preemptions = j->plan ? sim_fault_plan_count(j->plan, SIM_FAULT_PREEMPT) : 0;
  sum->failures = j->plan ? sim_fault_plan_count(j->plan, SIM_FAULT_FAIL) : 0;
  if (j->plan) faults_unstruck(j->faults, j->plan, end, sum);
  sum->restarts = lc_restarts(j->life);
  sum->lost_steps = j->lost_steps;
  sum->checkpoints = j->checkpoints;
  sum->checkpoint_time_s = sim_time_to_s(j->checkpoint_ps);
  /* A job still down at the end (failed for good) was down until then. */
  sum->downtime_s = sim_time_to_s(lc_downtime(j->life, end));
  unsigned char *kept = base_xcalloc((size_t)n + 1, 1);
  rec_kept_rows(rows, n, kept);
  sim_time useful = 0;
  for (long i = 0; i < n; i++)
    if (kept[i]) useful += rows[i].step_ps - rows[i].compile_ps;
  free(kept);
  sum->goodput = end > 0 ? (double)useful / (double)end : 0.0;
}
