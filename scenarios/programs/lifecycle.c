/*
** lifecycle.c: the job lifecycle (lc_); the state table is in lifecycle.h.
*/
#include "scenarios/programs/lifecycle.h"

#include <stdarg.h>

#include "base/base.h"

struct lc_job {
  const scenario *s;      /* training.restart.delay */
  sim_engine *engine;     /* the clock */
  int can_restart;        /* a lost task restarts the job rather than failing it */
  const lc_program *prog; /* the program's stop and start */
  void *ctx;              /* their argument */
  lc_state state;         /* see lifecycle.h */
  sim_event_handle restart_event; /* the pending restart while DOWN (invariant 2) */
  sim_time restart_at;    /* its time */
  sim_time down_since;    /* invariant 1; -1 when running */
  sim_time downtime;      /* invariant 1 */
  int restarts;           /* restarts so far */
  long idle_losses;       /* invariant 4: losses since the last completed step (or the start) */
  sim_time idle_since;    /* when that step completed (0: the start) */
  int stalled;            /* invariant 4 failed the job */
  run_error error;        /* why it failed, once FAILED */
  flog *log;              /* the faults chart's spans and marks (invariant 3) */
};

lc_job *lc_new(const scenario *s, sim_engine *e, int can_restart, const lc_program *p, void *ctx) {
  lc_job *j = base_xcalloc(1, sizeof *j);
  *j = (lc_job){ .s = s, .engine = e, .can_restart = can_restart, .prog = p, .ctx = ctx,
                 .state = LC_UP, .down_since = -1, .log = flog_new(e) };
  return j;
}

void lc_free(lc_job *j) {
  if (j == NULL) return;
  sim_cancel(j->engine, j->restart_event);
  flog_free(j->log);
  free(j);
}

flog *lc_log(lc_job *j) { return j->log; }

static void restart(sim_engine *e, void *arg) {
  (void)e;
  lc_job *j = arg;
  j->restart_event = (sim_event_handle){0, 0};
  j->restarts++;
  j->state = LC_RESTORING;
  if (j->prog->restores) flog_job_span(j->log, "restoring");
  j->prog->start(j->ctx);
  if (!j->prog->restores) lc_up(j);
}

lc_state lc_task_lost(lc_job *j, sim_time back_at) {
  lc_state was = j->state;
  if (was == LC_FAILED) return was;
  sim_time now = sim_now(j->engine);
  if (was != LC_DOWN) {
    flog_job_span(j->log, "job down");
    j->prog->stop(j->ctx);
    if (was == LC_UP) j->down_since = now;
    j->state = LC_DOWN;
  }
  if (!j->can_restart) {
    sim_cancel(j->engine, j->restart_event);
    j->state = LC_FAILED;
    return was;
  }
  if (++j->idle_losses >= LC_MAX_IDLE_LOSSES) {
    j->stalled = 1;
    lc_fail(j, "UnavailableError", "/job:worker", "no progress: %d task losses and no step completed from %.12g s to "
            "%.12g s (%d restarts so far); faults strike faster than the job restarts (training.restart.delay, the "
            "faults' mtbf and down_for), so podsim stopped the run", LC_MAX_IDLE_LOSSES, sim_time_to_s(j->idle_since),
            sim_time_to_s(now), j->restarts);
    return was;
  }
  sim_time at = now + sim_time_from_s(j->s->restart_delay_s);
  if (back_at > at) at = back_at;
  if (j->restart_event.generation != 0 && j->restart_at >= at) return was;
  sim_cancel(j->engine, j->restart_event);
  j->restart_at = at;
  j->restart_event = sim_schedule(j->engine, at, restart, j);
  return was;
}

void lc_fail_error(lc_job *j, const run_error *e) {
  sim_cancel(j->engine, j->restart_event);
  j->state = LC_FAILED;
  j->error = *e;
}

void lc_fail(lc_job *j, const char *kind, const char *device, const char *fmt, ...) {
  run_error e = {0};
  base_format(e.kind, sizeof e.kind, "%s", kind);
  base_format(e.device, sizeof e.device, "%s", device);
  va_list ap;
  va_start(ap, fmt);
  base_vformat(e.message, sizeof e.message, fmt, ap);
  va_end(ap);
  lc_fail_error(j, &e);
}

void lc_up(lc_job *j) {
  if (j->state != LC_RESTORING) return;
  flog_job_span(j->log, NULL);  /* "restoring", or "job down" when the program does not restore */
  j->state = LC_UP;
  j->downtime += sim_now(j->engine) - j->down_since;
  j->down_since = -1;
}

void lc_progress(lc_job *j) {
  j->idle_losses = 0;
  j->idle_since = sim_now(j->engine);
}

int lc_stalled(const lc_job *j) { return j->stalled; }

lc_state lc_state_of(const lc_job *j) { return j->state; }
int      lc_restarts(const lc_job *j) { return j->restarts; }

sim_time lc_downtime(const lc_job *j, sim_time end) {
  return j->downtime + (j->down_since >= 0 ? end - j->down_since : 0);
}

int lc_failed(const lc_job *j, run_error *e) {
  if (j->state == LC_FAILED && e) *e = j->error;
  return j->state == LC_FAILED;
}

void lc_snapshot(const lc_job *j, sim_snapshot *snap) {
  sim_time now = sim_now(j->engine);
  uint64_t words[] = { j->state, (uint64_t)j->restarts, (uint64_t)j->idle_losses, (uint64_t)(j->idle_since - now),
                       (uint64_t)j->down_since, (uint64_t)j->downtime, (uint64_t)j->stalled };
  for (size_t i = 0; i < sizeof words / sizeof *words; i++) sim_snapshot_word(snap, words[i]);
}

void lc_skip(lc_job *j, sim_time dt) { j->idle_since += dt; }
