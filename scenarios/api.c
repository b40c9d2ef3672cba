/*
** api.c: run, check and plan (the command line's commands, scenarios/main.c) and the same as
** calls for a program that loads libpodsim.so (podsim_api_*, each in a forked child: api.h).
**
** Outputs are whole or absent: a run or plan writes into a staging directory beside DIR
** (outputs_stage) that is renamed onto DIR only once everything is written; a refusal, an I/O
** error or a stop removes it.
*/
#include "scenarios/api.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/base.h"
#include "scenarios/programs/plan.h"
#include "scenarios/programs/train.h"
#include "scenarios/programs/workload.h"
#include "scenarios/report/expect.h"
#include "scenarios/report/outputs.h"
#include "scenarios/report/report.h"

/* The signal that asked podsim to stop (0: none yet). */
static volatile sig_atomic_t stop_signal;
/* The stage a run writes into, and the process that opened it: a plan's point processes share
** the pointer but must never remove their parent's stage. */
static outputs_stage *live_stage;
static pid_t stage_owner;

/* One command under way: its request and where what it says goes. */
typedef struct command {
  const podsim_request *rq;  /* what was asked */
  FILE *out;                 /* stdout's share: summaries, run_hash */
  FILE *errs;                /* stderr's share: refusals, what was kept */
  podsim_outcome *oc;        /* filled as the command goes */
} command;

void podsim_stop(int sig) {
  stop_signal = sig;
  train_stop_request = 1;
}

/* SIGINT and SIGTERM ask the run to stop at its engine's next check (within a few hundred
** events), so the staging directory is removed and the exit says so; the handler is reset
** after the first, so a second Ctrl-C ends podsim at once (a crashed run's stage keeps its
** .partial name). No SA_RESTART: a plan waiting for its points wakes up to stop them. */
void podsim_catch_stop_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = podsim_stop;
  sa.sa_flags = SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}

/* Ends a run that wrote nothing it keeps: removes the stage and says what became of DIR. */
static void nothing_kept(FILE *errs, outputs_stage *st) {
  outputs_stage_discard(st);
  fprintf(errs, "podsim: nothing kept: %s was not written%s\n", st->dir,
          access(st->dir, F_OK) == 0 ? " (the earlier one is unchanged)" : "");
}

/* A stop request ended the run (steps < 0: not a training run). Exit 128 + the signal. */
static int stopped(const command *c, outputs_stage *st, long steps) {
  int sig = stop_signal ? stop_signal : SIGINT;
  const char *name = sig == SIGTERM ? "SIGTERM" : "SIGINT";
  if (steps >= 0) fprintf(c->errs, "podsim: stopped by %s after %ld simulated steps\n", name, steps);
  else fprintf(c->errs, "podsim: stopped by %s\n", name);
  nothing_kept(c->errs, st);
  return 128 + sig;
}

/* Puts the finished stage in DIR's place. TR_EXIT_OK, or TR_EXIT_INPUT when it could not be. */
static int commit(const command *c, outputs_stage *st) {
  char msg[8400];
  int rc = outputs_stage_commit(st, msg, sizeof msg);
  if (rc != 0) fprintf(c->errs, "%s\n", msg);
  if (rc < 0) {
    fprintf(c->errs, "podsim: nothing kept: %s was not written\n", st->dir);
    return TR_EXIT_INPUT;
  }
  snprintf(c->oc->out_dir, sizeof c->oc->out_dir, "%s", st->dir);
  return TR_EXIT_OK;
}

/* A refusal: its message on errs, its place in the outcome. TR_EXIT_INPUT. */
static int refused(const command *c, const scn_error *err) {
  fprintf(c->errs, "%s\n", err->msg);
  c->oc->error = *err;
  return TR_EXIT_INPUT;
}

/* A run's status when it did not finish: its error, or the stop. */
static int unfinished(const command *c, outputs_stage *st, int rc, const scn_error *err, long steps) {
  if (rc == TR_STOPPED || stop_signal) return stopped(c, st, steps);
  refused(c, err);
  if (strncmp(err->key, "outputs", 7) == 0) nothing_kept(c->errs, st);  /* an I/O error: say what is left */
  else outputs_stage_discard(st);
  return TR_EXIT_INPUT;
}

static int run_workload(const command *c, const scenario *s, outputs_stage *st) {
  static scn_error err;
  workload_summary w;
  const char *dir = st->dir;
  FILE *out = c->out;
  int rc = workload_run(s, st->path, &w, &err);
  if (rc != 0 || stop_signal) return unfinished(c, st, rc, &err, -1);
  if (commit(c, st) != TR_EXIT_OK) return TR_EXIT_INPUT;
  c->oc->run_hash = w.run_hash;
  if (!c->rq->quiet) {
    fprintf(out, "podsim: %s\n", s->name);
    if (s->workload_mm_m > 0) {
      fprintf(out, "  workload      matmul %d x %d x %d (m n k) %s on one %s device, %s model, %ld iterations\n",
              s->workload_mm_m, s->workload_mm_n, s->workload_mm_k, s->workload_mm_dtype ? "float32" : "bfloat16",
              w.group, w.algorithm, s->workload_iterations);
      fprintf(out, "  time          %.6g s per matmul (%.4g TFLOP/s)\n", w.mean_time_s, w.tflops);
    } else {
      fprintf(out, "  workload      %s by %s on %d %s ranks, %.0f bytes, %ld iterations\n", w.op, w.algorithm,
              w.ranks, w.group, s->workload_size_bytes, s->workload_iterations);
      fprintf(out, "  time          %.6g s per collective (bus bandwidth %.4g GB/s)\n", w.mean_time_s, w.busbw_GBps);
    }
    fprintf(out, "  outputs       %s/ (%s, summary.json%s)\n", dir, s->workload_mm_m > 0 ? "matmul.csv" : "collective.csv",
            s->trace ? ", trace.json" : "");
    fprintf(out, "  events        %llu in %.3f s wall\n", (unsigned long long)w.events, w.wall_s);
  }
  fprintf(out, "run_hash %016llx\n", (unsigned long long)w.run_hash);
  return TR_EXIT_OK;
}

/* The stage for DIR, before anything runs: a DIR that cannot be written is refused (exit 2),
** and so is a stop asked for while the scenario loaded. */
static int open_stage(const command *c, const char *dir, double need_bytes, outputs_stage *st) {
  char msg[8400];
  if (stop_signal) {
    memset(st, 0, sizeof *st);
    snprintf(st->dir, sizeof st->dir, "%s", dir);
    return stopped(c, st, -1);
  }
  if (outputs_stage_open(st, dir, need_bytes, msg, sizeof msg) == 0) {
    live_stage = st;
    stage_owner = getpid();
    return TR_EXIT_OK;
  }
  fprintf(c->errs, "%s\n", msg);
  return TR_EXIT_INPUT;
}

/* Every point validated before any runs; a point that fails is a row of the report, so the
** plan itself exits 0 once its files are written, unless no point ran at all (each crashed or
** failed before its run): then 3, the files written all the same. Each point that did not run is
** named on stderr with its exit status. */
static int plan_crashes(const command *c, const plan *p) {
  int ran = 0;
  for (int i = 0; i < plan_num_points(p); i++) {
    const plan_measure *m = &plan_point(p, i)->m;
    if (plan_point_ran(p, i)) ran++;
    else fprintf(c->errs, "podsim plan: point %d did not run (%s, exit status %d): %s\n", i, m->error,
                 plan_point_exit(p, i), m->message);
  }
  return ran > 0 ? TR_EXIT_OK : TR_EXIT_JOB_FAILED;
}

static int plan_command(const command *c) {
  static scn_error err;
  const podsim_request *rq = c->rq;
  plan *p = plan_load(rq->file, rq->sets, rq->nsets, &err);
  if (p == NULL) return refused(c, &err);
  static outputs_stage st;  /* static: live_stage points at it */
  const char *dir = rq->out_dir ? rq->out_dir : plan_scenario(p)->out_dir;
  int rc;
  if (plan_mpi_ranks() > 1) {
    /* Ranks of one sweep write its points side by side: into the directory itself. */
    rc = plan_run(p, dir, rq->jobs, &err);
    if (rc != 0) refused(c, &err);
    else {
      snprintf(c->oc->out_dir, sizeof c->oc->out_dir, "%s", dir);
      if (!rq->quiet && plan_is_root()) plan_print(p, dir, c->out);
    }
  } else if ((rc = open_stage(c, dir, 0, &st)) == TR_EXIT_OK) {
    rc = plan_run(p, st.path, rq->jobs, &err);
    if (rc != 0 || stop_signal) rc = unfinished(c, &st, rc, &err, -1);
    else if ((rc = commit(c, &st)) == TR_EXIT_OK && !rq->quiet) plan_print(p, st.dir, c->out);
  }
  if (rc == TR_EXIT_OK && plan_is_root()) rc = plan_crashes(c, p);
  plan_free(p);
  return rc;
}

static int run_command(const command *c) {
  static scenario s;
  static scn_error err;
  const podsim_request *rq = c->rq;
  if (strcmp(rq->command, "plan") == 0) return plan_command(c);
  if (scenario_load(rq->file, rq->sets, rq->nsets, &s, &err) != 0) return refused(c, &err);
  if (strcmp(rq->command, "check") == 0) {
    if ((s.has_workload ? workload_check(&s, &err) : train_check(&s, &err)) != TR_EXIT_OK) return refused(c, &err);
    fprintf(c->out, "%s: ok\n", rq->file);
    return TR_EXIT_OK;
  }
  static outputs_stage st;  /* static: live_stage points at it */
  int rc = open_stage(c, rq->out_dir ? rq->out_dir : s.out_dir, s.has_workload ? 0 : s.output_bytes, &st);
  if (rc != TR_EXIT_OK) return rc;
  if (s.has_workload) return run_workload(c, &s, &st);
  run_summary sum = {0};  /* steps_completed is read when a stop came before the run */
  int mode = rq->progress ? REPORT_PROGRESS_LINES : rq->quiet ? REPORT_PROGRESS_QUIET : REPORT_PROGRESS_BAR;
  rc = train_run_cli(&s, st.path, mode, &sum, &err);
  if (rc == TR_EXIT_INPUT || rc == TR_STOPPED || stop_signal) return unfinished(c, &st, rc, &err, sum.steps_completed);
  if (commit(c, &st) != TR_EXIT_OK) return TR_EXIT_INPUT;
  for (int i = 0; i < sum.nwarnings; i++) fprintf(c->errs, "podsim: warning: %s\n", sum.warnings[i]);
  c->oc->run_hash = sum.run_hash;
  if (!rq->quiet) report_print_summary(c->out, &s, st.dir, &sum);
  else fprintf(c->out, "run_hash %016llx\n", (unsigned long long)sum.run_hash);
  if (expect_check(&s, &sum, c->errs) > 0 && rc == TR_EXIT_OK) rc = TR_EXIT_EXPECT;
  return rc;
}

int podsim_command(const podsim_request *rq, FILE *out, FILE *errs, podsim_outcome *oc) {
  podsim_outcome none;
  command c = { rq, out, errs, oc ? oc : &none };
  memset(c.oc, 0, sizeof *c.oc);
  return run_command(&c);
}

/* The host ran out of memory for a run it could not hold: the run is refused like bad input,
** and what it had written goes with it. _exit, not exit: in an api call's child the atexit
** handlers are the host program's (a Python interpreter's libraries), not this process's. */
void podsim_out_of_memory(size_t bytes) {
  fprintf(stderr, "podsim: out of host memory (%zu bytes): the run is too large for this host\n", bytes);
  if (live_stage && stage_owner == getpid() && access(live_stage->path, F_OK) == 0) nothing_kept(stderr, live_stage);
  fflush(NULL);
  _exit(TR_EXIT_INPUT);
}

/* The child's side of an api call: the command with its streams on RES's buffers. Never returns. */
static void api_child(const podsim_request *rq, podsim_api_result *res) {
  base_set_oom_handler(podsim_out_of_memory);
  podsim_catch_stop_signals();
  /* The messages go to the buffer; an out-of-memory exit writes on stderr, which is the host's. */
  FILE *out = fmemopen(res->output, sizeof res->output - 1, "w");
  FILE *errs = fmemopen(res->messages, sizeof res->messages - 1, "w");
  if (out == NULL || errs == NULL) _exit(TR_EXIT_INPUT);
  podsim_outcome oc;
  int rc = podsim_command(rq, out, errs, &oc);
  fclose(out);
  fclose(errs);
  res->line = oc.error.line;
  res->col = oc.error.col;
  snprintf(res->file, sizeof res->file, "%s", oc.error.file);
  snprintf(res->key, sizeof res->key, "%s", oc.error.key);
  snprintf(res->out_dir, sizeof res->out_dir, "%s", oc.out_dir);
  if (oc.run_hash != 0) snprintf(res->run_hash, sizeof res->run_hash, "%016llx", oc.run_hash);
  _exit(rc);
}

/* Forks, runs RQ in the child with RES in memory both share, waits for it. The exit status:
** the child's, or 128 + the signal that ended it. */
static int api_call(const podsim_request *rq, podsim_api_result *res) {
  memset(res, 0, sizeof *res);
  podsim_api_result *shared = mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) {
    snprintf(res->messages, sizeof res->messages, "podsim: cannot map the result: %s\n", strerror(errno));
    return res->status = TR_EXIT_INPUT;
  }
  memset(shared, 0, sizeof *shared);
  fflush(NULL);  /* the child must not write the host's buffered output a second time */
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(res->messages, sizeof res->messages, "podsim: cannot fork: %s\n", strerror(errno));
    munmap(shared, sizeof *shared);
    return res->status = TR_EXIT_INPUT;
  }
  if (pid == 0) api_child(rq, shared);
  int ws;
  /* The host's own signal handlers interrupt the wait (EINTR); a Ctrl-C reaches the child through
  ** the terminal's process group, which it shares, and the child stops its run itself. */
  while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {}
  *res = *shared;
  munmap(shared, sizeof *shared);
  if (WIFSIGNALED(ws)) {
    res->status = 128 + WTERMSIG(ws);
    size_t used = strlen(res->messages);
    snprintf(res->messages + used, sizeof res->messages - used, "podsim: ended by signal %d\n", WTERMSIG(ws));
  } else {
    res->status = WEXITSTATUS(ws);
  }
  return res->status;
}

/* A NULL-terminated list's length. */
static int count_sets(const char *const *overrides) {
  int n = 0;
  while (overrides && overrides[n]) n++;
  return n;
}

int podsim_api_run(const char *scenario, const char *const *overrides, const char *out_dir,
                   podsim_api_result *res) {
  podsim_request rq = { "run", scenario, overrides, count_sets(overrides), out_dir, 1, 0, 0 };
  return api_call(&rq, res);
}

int podsim_api_check(const char *scenario, const char *const *overrides, podsim_api_result *res) {
  podsim_request rq = { "check", scenario, overrides, count_sets(overrides), NULL, 1, 0, 0 };
  return api_call(&rq, res);
}

int podsim_api_plan(const char *scenario, const char *const *overrides, const char *out_dir,
                    int jobs, podsim_api_result *res) {
  podsim_request rq = { "plan", scenario, overrides, count_sets(overrides), out_dir, 0, jobs, 0 };
  return api_call(&rq, res);
}
