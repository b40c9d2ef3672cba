/*
** plan.c: capacity planning, `podsim plan` (plan_).
**
** The grid: point i sets, for each swept key k in file order, value number
** (i / stride_k) mod n_k of its list, stride_k being the product of the later keys' list
** lengths (the first key varies slowest, as nested loops written in file order would).
** plan_load builds each point's tree (the file, --set applied, then the point's values put in
** with yt_set, keeping their positions in the sweep) and validates it as `podsim run` would, so
** a bad value is reported at its own line and column before anything runs.
** plan_run forks a child per point, at most `jobs` at a time. A child runs the point with
** train_run into DIR/points/NNN/ (the same program and outputs as `podsim run -o`), measures it
** (median step, largest batch, checkpoint size), removes DIR/points/NNN/ unless
** outputs.keep_points (points/ itself goes once empty) and sends a plan_measure back through a pipe
** in one write (smaller than PIPE_BUF, so it is whole or absent). The engine's coroutines and
** _Thread_local scope stack make processes simpler than threads, and a crash stays in its child.
**
** Invariants:
**   (1) nothing the parent writes depends on the order children finish or on the host: each
**       measure is stored at its point's index, and efficiency, goodput and the recommendation
**       are computed once every point is in; no wall time reaches sweep.csv or the report;
**   (2) nothing is written before every point validated;
**   (3) a point that fails (out of memory, a failed job, a child that died) is a row that says
**       so, never the plan's failure.
*/
#include "scenarios/programs/plan.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <unistd.h>
#include <csv.h>
#include <gsl/gsl_math.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_sys.h>

#include "plots/plot.h"
#include "scenarios/programs/train.h"
#include "scenarios/config/units.h"
#include "scenarios/config/yamltree.h"
#include "sim/tpu.h"


struct plan {
  char path[SCN_PATH_MAX];     /* the scenario file as given */
  scenario base;               /* the file with --set, before any sweep value */
  struct yt_doc *tree;         /* its tree, which holds the sweep's values and positions */
  const yt_node *sweep;        /* the tree's sweep mapping (NULL: a single point) */
  int nkeys;                   /* swept keys */
  int npoints;                 /* points of the grid */
  struct yt_doc **docs;        /* each point's tree */
  plan_row *rows;              /* each point's row */
  int reference;               /* plan_reference, once run */
  int recommended;             /* plan_recommended, once run */
  double host_bytes;           /* the largest point's host memory estimate (scenario.host_bytes) */
};

/* ---- the grid --------------------------------------------------------------------------- */

/* Points between two values of key k: the product of the later keys' list lengths. */
static long stride_of(const plan *p, int k) {
  long stride = 1;
  for (int j = k + 1; j < p->nkeys; j++) stride *= p->sweep->items[j]->n;
  return stride;
}

/* Which value of key k point i takes. */
static int value_index(const plan *p, int i, int k) {
  return (int)(i / stride_of(p, k) % p->sweep->items[k]->n);
}

static const yt_node *value_node(const plan *p, int i, int k) {
  return p->sweep->items[k]->items[value_index(p, i, k)];
}

/* A value as the sweep wrote it, in YAML flow syntax. */
static size_t flow_text(const yt_node *n, char *buf, size_t len) {
  size_t at = 0;
#define PUT(...) do { int w_ = snprintf(buf + at, at < len ? len - at : 0, __VA_ARGS__); \
                      if (w_ > 0) at += (size_t)w_; } while (0)
  if (n->kind == YT_SCALAR) {
    PUT(n->quoted ? "\"%s\"" : "%s", n->text);
    return at;
  }
  PUT("%s", n->kind == YT_MAP ? "{" : "[");
  for (int i = 0; i < n->n; i++) {
    if (i) PUT(", ");
    if (n->kind == YT_MAP) PUT("%s: ", n->keys[i]->text);
    at += flow_text(n->items[i], at < len ? buf + at : buf + len - 1, at < len ? len - at : 1);
  }
  PUT("%s", n->kind == YT_MAP ? "}" : "]");
#undef PUT
  return at;
}

/* "key=value, key=value" of point i for the keys selected by `which` (NULL: all). */
static void describe(const plan *p, int i, const int *which, char *buf, size_t len) {
  size_t at = 0;
  buf[0] = '\0';
  for (int k = 0; k < p->nkeys && at < len; k++) {
    if (which && !which[k]) continue;
    int w = snprintf(buf + at, len - at, "%s%s=%s", at ? ", " : "", p->base.sweep_paths[k],
                     p->rows[i].values[k]);
    if (w > 0) at += (size_t)w;
  }
}

/* Chips billed for a point: a slice's chips; else each worker's accelerators, or the VMs. */
/* Makes a point's error say which sweep value is at fault: an error at a value's own position
** is that value's (key sweep.PATH[j]); any other names the point's values. */
static void point_error(const plan *p, int i, scn_error *err) {
  char prefix[SCN_PATH_MAX + 300], body[sizeof err->msg], what[512];
  snprintf(prefix, sizeof prefix, "%s:%d:%d: %s: ", err->file, err->line, err->col, err->key);
  size_t pl = strlen(prefix);
  snprintf(body, sizeof body, "%s", strncmp(err->msg, prefix, pl) ? err->msg : err->msg + pl);
  for (int k = 0; k < p->nkeys; k++) {
    const yt_node *v = value_node(p, i, k);
    if (v->line != err->line || v->col != err->col || strcmp(v->file, err->file)) continue;
    snprintf(err->key, sizeof err->key, "sweep.%s[%d]", p->base.sweep_paths[k], value_index(p, i, k));
    snprintf(err->msg, sizeof err->msg, "%.300s:%d:%d: %.100s: %.560s", err->file, err->line, err->col, err->key, body);
    return;
  }
  describe(p, i, NULL, what, sizeof what);
  size_t n = strlen(err->msg);
  snprintf(err->msg + n, sizeof err->msg - n, " (sweep point %d: %s)", i, what);
}

static int set_error(scn_error *err, const yt_error *ye) {
  snprintf(err->file, sizeof err->file, "%s", ye->file);
  err->line = ye->line;
  err->col = ye->col;
  snprintf(err->key, sizeof err->key, "%s", ye->key);
  snprintf(err->msg, sizeof err->msg, "%.200s:%d:%d: %.200s: %.560s", ye->file, ye->line, ye->col, ye->key, ye->msg);
  return -1;
}

/* Builds and validates point i's tree into p->docs[i] and its row's set-up. */
static int load_point(plan *p, int i, scenario *s, scn_error *err) {
  yt_doc *d = yt_doc_copy(p->tree);
  p->docs[i] = d;
  plan_row *row = &p->rows[i];
  for (int k = 0; k < p->nkeys; k++) {
    const yt_node *v = value_node(p, i, k);
    yt_error ye;
    flow_text(v, row->values[k], sizeof row->values[k]);
    if (yt_set(d, p->base.sweep_paths[k], v, p->sweep->keys[k], &ye) != 0) return set_error(err, &ye);
  }
  if (scenario_from_tree(d, p->path, s, err) != 0 || train_check(s, err) != TR_EXIT_OK) {
    point_error(p, i, err);
    return -1;
  }
  if (s->host_bytes > p->host_bytes) p->host_bytes = s->host_bytes;
  row->chips = scenario_chips(s);
  /* v4-32 -> v4: the size after the last '-' is the chips, the rest the generation */
  const char *type = s->tpu_type[0] ? s->tpu_type : s->worker_machine.type, *dash = strrchr(type, '-');
  snprintf(row->generation, sizeof row->generation, "%.*s", s->tpu_type[0] && dash ? (int)(dash - type) : 47, type);
  row->price_per_hour = s->price_per_hour;
  row->global_batch = s->global_batch;
  row->steps = s->steps;
  plan_faults_of(d, s, &row->faults);
  return 0;
}

plan *plan_load(const char *path, const char *const *overrides, int noverrides, scn_error *err) {
  plan *p = base_xcalloc(1, sizeof *p);
  snprintf(p->path, sizeof p->path, "%s", path);
  if (scenario_load_tree(path, overrides, noverrides, &p->tree, err) != 0 ||
      scenario_from_tree(p->tree, path, &p->base, err) != 0) {
    plan_free(p);
    return NULL;
  }
  if (p->base.has_workload) {
    train_error(err, path, 1, 1, "workload", "podsim plan sweeps training runs; a workload runs with podsim run");
    plan_free(p);
    return NULL;
  }
  p->sweep = yt_get(p->tree->root, "sweep");
  p->nkeys = p->base.nsweep;
  p->npoints = (int)p->base.sweep_points;
  p->docs = base_xcalloc((size_t)p->npoints, sizeof *p->docs);
  p->rows = base_xcalloc((size_t)p->npoints, sizeof *p->rows);
  p->reference = p->recommended = -1;
  scenario *s = base_xcalloc(1, sizeof *s);  /* large: off the stack */
  for (int i = 0; i < p->npoints; i++) {
    if (load_point(p, i, s, err) == 0) continue;
    free(s);
    plan_free(p);
    return NULL;
  }
  free(s);
  return p;
}

void plan_free(plan *p) {
  if (p == NULL) return;
  for (int i = 0; p->docs && i < p->npoints; i++) yt_doc_free(p->docs[i]);
  free(p->docs);
  free(p->rows);
  yt_doc_free(p->tree);
  free(p);
}

int plan_num_points(const plan *p) { return p->npoints; }
const plan_row *plan_point(const plan *p, int i) { return &p->rows[i]; }
int plan_recommended(const plan *p) { return p->recommended; }
int plan_reference(const plan *p) { return p->reference; }
const scenario *plan_scenario(const plan *p) { return &p->base; }

/* ---- the fault model and goodput ------------------------------------------------------------ */

double plan_goodput(double rate_per_s, double work_s, double checkpoint_s, double restart_s) {
  if (!(work_s > 0)) return 1.0;
  if (rate_per_s <= 0) return work_s / (work_s + checkpoint_s);
  /* Daly (2006): a segment of work_s + checkpoint_s takes e^(lambda R) (e^(lambda (W + C)) - 1)
  ** / lambda in expectation, failures striking during restarts too. */
  double lost = exp(rate_per_s * restart_s) * gsl_expm1(rate_per_s * (work_s + checkpoint_s));
  return isfinite(lost) ? rate_per_s * work_s / lost : 0.0;
}

double plan_ps_goodput(const plan_faults *f, double work_s, double checkpoint_s, double restart_s,
                       double closure_s) {
  double job = plan_goodput(f->rate_per_s, work_s, checkpoint_s, restart_s);
  double lambda = f->worker_rate_per_s, kept = 1.0 - lambda * closure_s / 2.0;
  return job * (kept > 0 ? kept : 0.0) / (1.0 + lambda * f->worker_down_s);
}

/* How many of the run's tasks a fault target names: a wildcard matches each of its kind. */
static double targets_of(const char *target, const yt_node *root, const scenario *s) {
  if (!strcmp(target, "worker:*")) return s->workers;
  if (!strcmp(target, "ps:*")) {
    const yt_node *n = yt_path(root, "cluster.ps.count");
    return n && n->kind == YT_SCALAR ? strtod(n->text, NULL) : 1;
  }
  if (!strcmp(target, "tpu_host:*") && s->tpu_type[0]) {
    const sim_tpu_generation *g;
    int chips, dims[3];
    char why[256];
    if (sim_tpu_slice_parse(s->tpu_type, &g, &chips, dims, why, sizeof why) == 0)
      return sim_tpu_layout_hosts(g, s->tpu_dims);
  }
  return 1;
}

/* A value the loader validated, converted again (it keeps no copy of these keys). */
static double unit_value(const yt_node *n, unit_kind k, double otherwise) {
  double v;
  char why[256];
  return n && n->kind == YT_SCALAR && units_parse(k, n->text, &v, why, sizeof why) == 0 ? v : otherwise;
}

void plan_faults_of(const struct yt_doc *tree, const scenario *s, plan_faults *out) {
  const yt_node *root = tree->root, *faults = yt_get(root, "faults");
  memset(out, 0, sizeof *out);
  out->parameter_server = s->strategy == SCN_STRATEGY_PARAMETER_SERVER;
  out->workers = s->workers;
  double down = 0;  /* the workers' rate-weighted down_for, summed */
  for (int i = 0; faults && faults->kind == YT_SEQ && i < faults->n; i++) {
    const yt_node *f = faults->items[i], *kind = yt_get(f, "kind"), *target = yt_get(f, "target");
    if (!kind || !target || (strcmp(kind->text, "preempt") && strcmp(kind->text, "fail"))) continue;
    double mtbf = unit_value(yt_get(f, "mtbf"), UNIT_DURATION, 0);
    double rate = mtbf > 0 ? 1.0 / mtbf : unit_value(yt_get(f, "rate"), UNIT_RATE, 0);
    double targets = targets_of(target->text, root, s);
    if (out->parameter_server && !strncmp(target->text, "worker:", 7)) {
      /* One worker's rate: worker:* strikes each at the rate, worker:N one of them. */
      double each = rate * targets / (s->workers > 0 ? s->workers : 1);
      out->worker_rate_per_s += each;
      down += each * unit_value(yt_get(f, "down_for"), UNIT_DURATION, 0);
      continue;
    }
    out->rate_per_s += rate * targets;
  }
  if (out->worker_rate_per_s > 0) out->worker_down_s = down / out->worker_rate_per_s;
  /* The loader's figures, defaults included, so the model and the run agree (docs/faults.md). */
  out->checkpoint_steps = s->ckpt_every;
  out->checkpoint_bytes_per_s = s->ckpt_bytes_per_s;
  out->checkpoint_async = s->ckpt_async;
  out->restart_delay_s = s->restart_delay_s;
}

/* ---- the largest batch ------------------------------------------------------------------- */

long plan_largest(int (*fits)(void *ctx, long b), void *ctx, long limit) {
  if (limit < 1 || !fits(ctx, 1)) return 0;
  long lo = 1;                   /* fits */
  while (lo <= limit / 2 && fits(ctx, 2 * lo)) lo *= 2;
  long hi = lo <= limit / 2 ? 2 * lo : limit + 1;   /* does not fit, or past the limit */
  while (hi - lo > 1) {
    long mid = lo + (hi - lo) / 2;
    if (fits(ctx, mid)) lo = mid;
    else hi = mid;
  }
  return lo;
}

static int memory_fits(void *m, long b) { return train_memory_fits(m, (int)b); }

/* ---- measuring a point (in its child) ---------------------------------------------------- */

/* The columns of metrics.csv a point's median step reads. */
enum { M_STEP, M_COMPUTE, M_COMM, M_IDLE, M_INPUT, M_HOST, M_COLUMNS };
static const char *const METRIC_COLUMNS[M_COLUMNS] = { "step_time_s", "compute_s", "comm_s", "idle_s", "input_s",
                                                       "host_s" };

/* The median step of the run (the lower one of an even count), leaving out step 0 when there
** are others: it carries the compile and the first batch. A median, unlike a mean, is not moved
** by the rare slow steps (a checkpoint, a restart) the goodput accounts for on its own. */
static void median_step(const char *metrics, plan_measure *m) {
  double *rows = NULL;
  long nrows = outputs_read_columns(metrics, METRIC_COLUMNS, M_COLUMNS, &rows);
  long first = nrows > 1 ? 1 : 0, n = nrows - first;
  if (n > 0 && !isnan(rows[M_STEP])) {
    double *times = base_xcalloc((size_t)n, sizeof *times);
    size_t *order = base_xcalloc((size_t)n, sizeof *order);
    for (long i = 0; i < n; i++) times[i] = rows[(first + i) * M_COLUMNS + M_STEP];
    gsl_sort_index(order, times, 1, (size_t)n);
    const double *row = rows + (first + (long)order[(n - 1) / 2]) * M_COLUMNS;
    m->step_s = row[M_STEP];
    m->compute_s = row[M_COMPUTE];
    m->comm_s = row[M_COMM];
    m->idle_s = row[M_IDLE];
    m->input_s = row[M_INPUT];
    m->host_s = row[M_HOST];
    free(times);
    free(order);
  }
  free(rows);
}

static void point_dir(const plan *p, const char *dir, int i, char *buf, size_t len) {
  snprintf(buf, len, "%s/points/%0*d", dir, p->npoints > 1000 ? 4 : 3, i);
}

/* A measure before its point ran: none of its figures (NAN: an empty cell). */
static void no_figures(plan_measure *m) {
  m->step_s = m->compute_s = m->comm_s = m->idle_s = m->input_s = m->host_s = m->compile_s = m->checkpoint_bytes = NAN;
  m->bubble = NAN;
}

/* Runs point i as `podsim run -o DIR/points/NNN` would and measures it. */
static void measure(const plan *p, int i, const char *dir, plan_measure *m) {
  static scenario s;
  static scn_error err;
  char out[SCN_PATH_MAX + 64];
  no_figures(m);
  if (scenario_from_tree(p->docs[i], p->path, &s, &err) != 0) {  /* plan_load validated it */
    m->failed = 1;
    snprintf(m->error, sizeof m->error, "InvalidScenario");
    snprintf(m->message, sizeof m->message, "%.511s", err.msg);
    return;
  }
  point_dir(p, dir, i, out, sizeof out);
  run_summary sum;
  m->exit = train_run(&s, out, &sum, &err);
  if (m->exit == TR_EXIT_INPUT) {
    m->failed = 1;
    snprintf(m->error, sizeof m->error, "OutputError");
    snprintf(m->message, sizeof m->message, "%.511s", err.msg);
    return;
  }
  m->failed = sum.failed;
  snprintf(m->error, sizeof m->error, "%s", sum.failed ? sum.error.kind : "");
  snprintf(m->message, sizeof m->message, "%s", sum.failed ? sum.error.message : "");
  m->replicas = sum.replicas;
  m->steps_completed = sum.steps_completed;
  m->compile_s = sum.compile_s;
  m->hbm_peak = sum.memory_peak_bytes;
  m->hbm_capacity = sum.memory_capacity_bytes;
  m->hbm_needed = sum.failed && sum.error.needed_bytes ? sum.error.needed_bytes : sum.memory_peak_bytes;
  if (sum.failed && sum.error.capacity_bytes) m->hbm_capacity = sum.error.capacity_bytes;
  m->run_hash = sum.run_hash;
  m->mfu = mfu_of_scenario(&s);
  if (sum.pipeline_stages > 1) m->bubble = sum.pipeline_bubble_fraction;
  char metrics[SCN_PATH_MAX + 80];
  median_step(outputs_path(metrics, sizeof metrics, out, "metrics.csv"), m);
  /* The plan has read all it needs of the point (its run_hash was over the files as written). */
  if (!s.keep_points) outputs_remove_tree(out);
  train_memory *mem = train_memory_new(&s, &err);
  if (mem == NULL) return;
  m->max_batch = plan_largest(memory_fits, mem, INT_MAX / train_memory_replicas(mem));
  m->checkpoint_bytes = train_memory_checkpoint_bytes(mem);
  train_memory_free(mem);
}

/* ---- running the grid -------------------------------------------------------------------- */

typedef struct child {
  pid_t pid;              /* the child running the point (0: slot free) */
  int fd;                 /* read end of its pipe */
  int point;              /* the point it runs */
} child;

/* The parent's signal state while points run: SIGCHLD, SIGINT and SIGTERM blocked except
** inside sigsuspend, so a finished point or a stop request always ends the wait (none can slip
** in between the test and the wait); a child gets the state before back. */
typedef struct wait_state {
  sigset_t mask;              /* the signal mask before */
  struct sigaction chld;      /* the SIGCHLD action before */
} wait_state;

static void child_finished(int sig) { (void)sig; }  /* only to end sigsuspend */

static void wait_state_enter(wait_state *w) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = child_finished;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGCHLD, &sa, &w->chld);
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, SIGCHLD);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGTERM);
  sigprocmask(SIG_BLOCK, &block, &w->mask);
}

static void wait_state_leave(const wait_state *w) {
  sigaction(SIGCHLD, &w->chld, NULL);
  sigprocmask(SIG_SETMASK, &w->mask, NULL);
}

/* Whether PODSIM_PLAN_KILL_POINTS (a test hook: point numbers separated by commas) names point i,
** whose process then dies of SIGKILL before it runs, as the host's OOM killer would end it. */
static int killed_by_test(int i) {
  const char *at = getenv("PODSIM_PLAN_KILL_POINTS");
  for (char *end; at != NULL && *at != '\0'; at = *end == ',' ? end + 1 : end) {
    long n = strtol(at, &end, 10);
    if (end == at) return 0;
    if (n == i) return 1;
  }
  return 0;
}

static int start_child(const plan *p, const char *dir, int i, const wait_state *w, child *c) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  fflush(NULL);  /* a child must not write out the parent's buffered output again */
  pid_t parent = getpid(), pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  if (pid == 0) {
    close(fds[0]);
    wait_state_leave(w);  /* the point's run must see SIGINT and SIGTERM to stop */
#ifdef __linux__
    /* A plan killed outright (SIGKILL: no handler runs to stop its points) takes its points with
    ** it: each gets SIGTERM, and stops as on Ctrl-C. A parent already gone before the prctl is
    ** seen by getppid. */
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent) _exit(1);
#else
    (void)parent;
#endif
    if (killed_by_test(i)) raise(SIGKILL);
    plan_measure m;
    memset(&m, 0, sizeof m);
    measure(p, i, dir, &m);
    _exit(write(fds[1], &m, sizeof m) == (ssize_t)sizeof m ? 0 : 1);
  }
  close(fds[1]);
  *c = (child){ pid, fds[0], i };
  return 0;
}

/* Collects a finished child's measure into its point's row (invariant 1). */
static void finish_child(plan *p, child *c, int status) {
  plan_measure *m = &p->rows[c->point].m;
  ssize_t got = read(c->fd, m, sizeof *m);
  close(c->fd);
  if (got != (ssize_t)sizeof *m) {
    memset(m, 0, sizeof *m);
    no_figures(m);
    m->failed = 1;
    m->exit = WIFSIGNALED(status) ? -WTERMSIG(status) : WEXITSTATUS(status);
    snprintf(m->error, sizeof m->error, "PointCrashed");
    snprintf(m->message, sizeof m->message, "the process running the point %s %d", WIFSIGNALED(status) ?
             "died of signal" : "exited with status", WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
  }
  c->pid = 0;
}

/* Runs the points, `jobs` at a time. Returns 0, -1 (a process could not be started) or
** TR_STOPPED: train_stop_request was set, so no point was started after it and the running
** ones were asked to stop (SIGTERM) and waited for. */
static int run_points(plan *p, const char *dir, int jobs) {
  child *slots = base_xcalloc((size_t)jobs, sizeof *slots);
  int next = 0, running = 0, rc = 0, told = 0, start_errno = 0;
  wait_state w;
  wait_state_enter(&w);
  while (next < p->npoints || running > 0) {
    for (int j = 0; j < jobs && next < p->npoints && rc == 0 && !train_stop_request; j++) {
      if (slots[j].pid != 0) continue;
      if (start_child(p, dir, next, &w, &slots[j]) != 0) rc = -1, start_errno = errno;
      else { next++; running++; }
    }
    if (running == 0) break;
    if (train_stop_request && !told) {
      for (int j = 0; j < jobs; j++)
        if (slots[j].pid != 0) kill(slots[j].pid, SIGTERM);
      told = 1;
    }
    int status;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid == 0) sigsuspend(&w.mask);  /* until a point ends or a stop is asked for */
    if (pid <= 0 && (pid == 0 || errno == EINTR)) continue;
    if (pid < 0) { rc = -1; break; }
    for (int j = 0; j < jobs; j++) {
      if (slots[j].pid != pid) continue;
      finish_child(p, &slots[j], status);
      running--;
    }
  }
  wait_state_leave(&w);
  free(slots);
  if (start_errno != 0) errno = start_errno;  /* the waits since would have left EINTR */
  return train_stop_request ? TR_STOPPED : rc;
}

/* File descriptors the plan keeps for itself (its streams, its files, a pipe being made); each
** running point holds one more, the read end of its result pipe. */
#define PLAN_RESERVED_FDS 12

/* Points at once as file descriptors allow: the soft RLIMIT_NOFILE raised to the hard one first
** (as a shell's ulimit -n would), one point at least, whose start then says what failed. */
static int jobs_within_fds(int jobs) {
  struct rlimit nofile;
  if (getrlimit(RLIMIT_NOFILE, &nofile) != 0) return jobs;
  if (nofile.rlim_cur < nofile.rlim_max) {
    nofile.rlim_cur = nofile.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &nofile) != 0) getrlimit(RLIMIT_NOFILE, &nofile);
  }
  if (nofile.rlim_cur == RLIM_INFINITY || nofile.rlim_cur >= (rlim_t)jobs + PLAN_RESERVED_FDS) return jobs;
  long room = (long)nofile.rlim_cur - PLAN_RESERVED_FDS;
  return room > 1 ? (int)room : 1;
}

/* ---- over MPI ranks (a build with OpenMPI: PODSIM_MPI) ---------------------------------------
** Under `mpirun -n N` (N > 1) rank 0 hands out points one at a time, as ranks ask (dynamic load
** balancing: points differ in cost by orders of magnitude), and runs points of its own between
** requests; every rank runs each point in a forked child as run_points does, so a crashed point is
** a PointCrashed row, never a lost rank. Results come back as plan_measure bytes into rank 0's
** rows, which then writes the same files as a one-host run; the other ranks write only their
** points' directories. */
#ifdef PODSIM_MPI
#include <mpi.h>

enum { TAG_RESULT = 1, TAG_POINT = 2 };
typedef struct mpi_result {
  int point;              /* the point measured; -1 on a rank's first request */
  plan_measure m;         /* its measure */
} mpi_result;

static int mpi_rank, mpi_size = 1;

/* Starts MPI when mpirun launched this process (OpenMPI's environment says so); else one rank. */
static void mpi_start(void) {
  if (getenv("OMPI_COMM_WORLD_SIZE") == NULL) return;
  MPI_Init(NULL, NULL);
  MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &mpi_size);
}

static void mpi_stop(void) {
  if (getenv("OMPI_COMM_WORLD_SIZE") != NULL) MPI_Finalize();
}

/* Runs point i in a child and waits for it: its measure in p->rows[i].m. */
static int run_one(plan *p, const char *dir, int i) {
  child c;
  int status, rc = 0;
  wait_state w;
  wait_state_enter(&w);
  if (start_child(p, dir, i, &w, &c) != 0) rc = -1;
  while (rc == 0 && waitpid(c.pid, &status, 0) < 0)
    if (errno != EINTR) rc = -1;
  if (rc == 0) finish_child(p, &c, status);
  wait_state_leave(&w);
  return rc;
}

/* A rank other than 0: asks for a point, runs it, sends its measure with the next request. */
static int mpi_worker(plan *p, const char *dir) {
  mpi_result r = { .point = -1 };
  for (;;) {
    MPI_Send(&r, (int)sizeof r, MPI_BYTE, 0, TAG_RESULT, MPI_COMM_WORLD);
    MPI_Recv(&r.point, 1, MPI_INT, 0, TAG_POINT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (r.point < 0) return 0;
    if (run_one(p, dir, r.point) != 0) return -1;
    r.m = p->rows[r.point].m;
  }
}

/* Rank 0: answers requests until every point is out and every other rank told to stop, running a
** point of its own in a child whenever it has none (checking for requests between waits). */
static int mpi_master(plan *p, const char *dir) {
  int next = 0, stopped = 0, rc = 0;
  child own = { 0 };
  wait_state w;  /* its children start with the signals a point's run must see */
  wait_state_enter(&w);
  while (stopped < mpi_size - 1 || own.pid != 0 || (next < p->npoints && rc == 0)) {
    int flag = 0;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, TAG_RESULT, MPI_COMM_WORLD, &flag, &st);
    if (flag) {
      mpi_result r;
      MPI_Recv(&r, (int)sizeof r, MPI_BYTE, st.MPI_SOURCE, TAG_RESULT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (r.point >= 0) p->rows[r.point].m = r.m;
      int give = next < p->npoints && rc == 0 ? next++ : -1;
      MPI_Send(&give, 1, MPI_INT, st.MPI_SOURCE, TAG_POINT, MPI_COMM_WORLD);
      stopped += give < 0;
      continue;
    }
    if (own.pid == 0 && next < p->npoints && rc == 0) {
      if (start_child(p, dir, next, &w, &own) != 0) rc = -1;
      else next++;
      continue;
    }
    int status;
    pid_t pid = own.pid ? waitpid(own.pid, &status, WNOHANG) : 0;
    if (pid == own.pid && pid > 0) finish_child(p, &own, status);
    else usleep(1000);
  }
  wait_state_leave(&w);
  return rc;
}
#endif

/* ---- what the measures give ---------------------------------------------------------------- */

static int ran(const plan_row *r) { return !r->m.failed && isfinite(r->m.step_s) && r->m.step_s > 0; }

int plan_point_exit(const plan *p, int i) {
  int exit = p->rows[i].m.exit;
  return exit < 0 ? 128 - exit : exit;
}

int plan_point_ran(const plan *p, int i) {
  int exit = p->rows[i].m.exit;
  return exit == TR_EXIT_OK || exit == TR_EXIT_EXPECT || exit == TR_EXIT_JOB_FAILED;
}

static void derive(plan *p) {
  for (int i = 0; i < p->npoints; i++) {
    plan_row *r = &p->rows[i];
    /* A point that did not run has no memory verdict: it is never "does not fit". */
    r->fits = !plan_point_ran(p, i) ? -1 : strcmp(r->m.error, "ResourceExhaustedError") != 0;
    if (r->steps < 0) r->steps = r->m.steps_completed;  /* epochs: the run counted them */
    r->examples_per_s = r->efficiency = r->goodput = r->time_s = r->chip_hours = r->cost_usd = NAN;
    r->tokens_per_s = r->mfu = NAN;
    if (!ran(r)) continue;
    const plan_faults *f = &r->faults;
    /* A step of a parameter-server run is one worker's closure (its reads and pushes under the
    ** ps tasks' load included): the fleet runs `workers` of them at once. */
    double step_s = f->parameter_server && f->workers > 1 ? r->m.step_s / f->workers : r->m.step_s;
    r->examples_per_s = r->global_batch / step_s;
    if (r->m.mfu.tokens_per_example > 0) {
      r->tokens_per_s = mfu_tokens_per_s(&r->m.mfu, r->examples_per_s);
      r->mfu = mfu_utilisation(&r->m.mfu, r->examples_per_s);
    }
    int checkpoints = f->checkpoint_steps > 0;
    double work = (checkpoints ? (double)f->checkpoint_steps : (double)r->steps) * step_s;
    double write = checkpoints ? r->m.checkpoint_bytes / f->checkpoint_bytes_per_s : 0.0;
    /* An async write goes on behind the next steps: they wait only for what outlasts the
    ** interval, and a failure loses the segment since the last complete write, C more. */
    double wait = f->checkpoint_async ? fmax(0.0, write - work) : write;
    double restart = f->restart_delay_s + r->m.compile_s + write + (f->checkpoint_async ? write : 0.0);
    r->goodput = f->parameter_server ? plan_ps_goodput(f, work, wait, restart, r->m.step_s)
                                     : plan_goodput(f->rate_per_s, work, wait, restart);
    r->time_s = r->m.compile_s + (double)r->steps * step_s / r->goodput;
    r->chip_hours = r->chips * r->time_s / 3600.0;
    r->cost_usd = r->price_per_hour * r->time_s / 3600.0;
    if (p->reference < 0 || r->chips < p->rows[p->reference].chips) p->reference = i;
  }
  for (int i = 0; i < p->npoints && p->reference >= 0; i++) {
    plan_row *r = &p->rows[i], *ref = &p->rows[p->reference];
    if (ran(r)) r->efficiency = (r->examples_per_s / r->chips) / (ref->examples_per_s / ref->chips);
  }
  int by_cost = p->base.recommend_cost;
  for (int i = 0; i < p->npoints; i++) {
    const plan_row *r = &p->rows[i];
    double mine = by_cost ? r->cost_usd : r->chip_hours;
    if (!ran(r) || r->m.steps_completed < r->steps || !isfinite(mine)) continue;
    const plan_row *best = p->recommended >= 0 ? &p->rows[p->recommended] : NULL;
    double theirs = best ? (by_cost ? best->cost_usd : best->chip_hours) : 0;
    if (!best || mine < theirs || (mine == theirs && r->chips < best->chips)) p->recommended = i;
  }
}

/* ---- outputs ------------------------------------------------------------------------------- */

/* A real for sweep.csv: 9 significant digits, empty when there is none. */
static void put_real(FILE *f, double v) {
  if (isfinite(v)) fprintf(f, ",%.9g", v);
  else fputc(',', f);
}

static int write_csv(const plan *p, const char *path) {
  FILE *f = fopen(path, "w");
  if (f == NULL) return -1;
  fputs("point", f);
  for (int k = 0; k < p->nkeys; k++) fprintf(f, ",%s", p->base.sweep_paths[k]);
  fputs(",chips,replicas,global_batch,step_time_s,compute_s,comm_s,idle_s,input_s,host_s,compile_s,examples_per_s,"
        "examples_per_s_per_chip,scaling_efficiency,tokens_per_s,mfu,hbm_peak_bytes,hbm_needed_bytes,hbm_capacity_bytes,fits,"
        "error,exit_status,max_batch_per_replica,checkpoint_bytes,failure_rate_per_h,expected_goodput,steps,time_to_steps_s,"
        "chip_hours,cost_usd,recommended,run_hash\n", f);
  for (int i = 0; i < p->npoints; i++) {
    const plan_row *r = &p->rows[i];
    fprintf(f, "%d", i);
    for (int k = 0; k < p->nkeys; k++) {
      fputc(',', f);
      if (strpbrk(r->values[k], ",\"\r\n")) csv_fwrite(f, r->values[k], strlen(r->values[k]));
      else fputs(r->values[k], f);
    }
    /* A point that did not run has only the figures its scenario gives (chips, batch, steps). */
    fprintf(f, r->fits < 0 ? ",%d,,%d" : ",%d,%d,%d", r->chips, r->fits < 0 ? r->global_batch : r->m.replicas,
            r->global_batch);
    const double reals[] = { r->m.step_s, r->m.compute_s, r->m.comm_s, r->m.idle_s, r->m.input_s, r->m.host_s,
                             r->m.compile_s, r->examples_per_s, r->examples_per_s / r->chips, r->efficiency,
                             r->tokens_per_s, r->mfu };
    for (size_t j = 0; j < sizeof reals / sizeof *reals; j++) put_real(f, reals[j]);
    if (r->fits < 0) fprintf(f, ",,,,,%s,%d,", r->m.error, plan_point_exit(p, i));
    else fprintf(f, ",%llu,%llu,%llu,%s,%s,%d,%ld", (unsigned long long)r->m.hbm_peak,
                 (unsigned long long)r->m.hbm_needed, (unsigned long long)r->m.hbm_capacity,
                 r->fits ? "true" : "false", r->m.error, plan_point_exit(p, i), r->m.max_batch);
    put_real(f, r->m.checkpoint_bytes);
    put_real(f, r->faults.rate_per_s * 3600.0);
    put_real(f, r->goodput);
    fprintf(f, ",%ld", r->steps);
    put_real(f, r->time_s);
    put_real(f, r->chip_hours);
    put_real(f, r->cost_usd);
    fprintf(f, ",%s,%016llx\n", i == p->recommended ? "true" : "false", (unsigned long long)r->m.run_hash);
  }
  return base_fclose(f);
}

/* The table every view shows (the screen, report.md, the PDF): a header and a row per point. */
#define PLAN_FIXED_COLUMNS 13
typedef struct plan_table {
  int ncols;              /* key columns + PLAN_FIXED_COLUMNS */
  const char **header;    /* ncols texts */
  char (*text)[48];       /* npoints x ncols cells */
  const char **cells;     /* pointers into text, row-major */
} plan_table;

static const char *real_text(char *buf, size_t len, const char *fmt, double v) {
  if (isfinite(v)) snprintf(buf, len, fmt, v);
  else snprintf(buf, len, "-");
  return buf;
}

static void table_build(const plan *p, plan_table *t) {
  static const char *const fixed[PLAN_FIXED_COLUMNS] = {
    "chips", "step (ms)", "examples/s", "efficiency", "MFU", "memory / capacity", "fits", "max batch/replica",
    "expected goodput", "hours", "chip-hours", "cost (USD)", "note" };
  t->ncols = 1 + p->nkeys + PLAN_FIXED_COLUMNS;
  t->header = base_xcalloc((size_t)t->ncols, sizeof *t->header);
  t->text = base_xcalloc((size_t)(p->npoints * t->ncols), sizeof *t->text);
  t->cells = base_xcalloc((size_t)(p->npoints * t->ncols), sizeof *t->cells);
  t->header[0] = "point";
  for (int k = 0; k < p->nkeys; k++) t->header[1 + k] = p->base.sweep_paths[k];
  for (int c = 0; c < PLAN_FIXED_COLUMNS; c++) t->header[1 + p->nkeys + c] = fixed[c];
  for (int i = 0; i < p->npoints; i++) {
    const plan_row *r = &p->rows[i];
    char (*cell)[48] = t->text + i * t->ncols;
    int c = 0;
    snprintf(cell[c++], 48, "%d", i);
    for (int k = 0; k < p->nkeys; k++) snprintf(cell[c++], 48, "%.47s", r->values[k]);
    snprintf(cell[c++], 48, "%d", r->chips);
    real_text(cell[c++], 48, "%.4g", 1e3 * r->m.step_s);
    real_text(cell[c++], 48, "%.4g", r->examples_per_s);
    real_text(cell[c++], 48, "%.3f", r->efficiency);
    real_text(cell[c++], 48, "%.1f%%", 100 * r->mfu);
    char need[20], cap[20];
    if (r->fits < 0) snprintf(cell[c++], 48, "-");
    else snprintf(cell[c++], 48, "%s / %s", outputs_bytes(need, sizeof need, (double)r->m.hbm_needed),
                  outputs_bytes(cap, sizeof cap, (double)r->m.hbm_capacity));
    int exit = plan_point_exit(p, i);
    if (r->fits >= 0) snprintf(cell[c++], 48, "%s", r->fits ? "yes" : "no");
    else if (r->m.exit < 0) snprintf(cell[c++], 48, "crashed (signal %d, exit %d)", -r->m.exit, exit);
    else snprintf(cell[c++], 48, "failed (exit %d)", exit);
    if (r->fits < 0) snprintf(cell[c++], 48, "-");
    else snprintf(cell[c++], 48, "%ld", r->m.max_batch);
    real_text(cell[c++], 48, "%.4f", r->goodput);
    real_text(cell[c++], 48, "%.4g", r->time_s / 3600.0);
    real_text(cell[c++], 48, "%.4g", r->chip_hours);
    real_text(cell[c++], 48, "%.4g", r->cost_usd);
    char bubble[32] = "";
    int tenths = isfinite(r->m.bubble) ? (int)lround(1000 * r->m.bubble) : -1;  /* of a percent, 0..1000 */
    if (tenths >= 0) snprintf(bubble, sizeof bubble, "bubble %d.%d%%", tenths / 10, tenths % 10);
    base_format(cell[c++], 48, "%.24s%s%s%s%.13s", r->m.error, i == p->recommended ? "recommended" : "",
             i == p->reference ? (i == p->recommended ? ", reference" : "reference") : "",
             bubble[0] && (i == p->recommended || i == p->reference) ? ", " : "", bubble);
    for (int j = 0; j < t->ncols; j++) t->cells[i * t->ncols + j] = cell[j];
  }
}

static void table_free(plan_table *t) {
  free(t->header);
  free(t->text);
  free(t->cells);
}

/* The rule behind the recommendation (outputs.recommend), and the recommendation in one sentence. */
static const char *plan_rule(const plan *p) {
  return p->base.recommend_cost
             ? "Rule: the lowest cost (outputs.prices, outputs.price_model) among the points that fit in device "
               "memory and reach the training steps; ties go to fewer chips, then to the earlier point."
             : "Rule: the fewest chip-hours among the points that fit in device memory and "
               "reach the training steps; ties go to fewer chips, then to the earlier point.";
}

static void recommendation(const plan *p, char *buf, size_t len) {
  int ran_any = 0;
  for (int i = 0; i < p->npoints; i++) ran_any |= plan_point_ran(p, i);
  if (!ran_any) {
    snprintf(buf, len, "No point ran: each crashed or failed before its run (the fits column says how).");
    return;
  }
  if (p->recommended < 0) {
    snprintf(buf, len, p->base.recommend_cost ? "No point that fits in device memory and reaches the training steps has "
             "a price for all its machines (outputs.prices, outputs.price_model)." : "No point fits in device memory and "
             "reaches the training steps.");
    return;
  }
  const plan_row *r = &p->rows[p->recommended];
  char what[512];
  describe(p, p->recommended, NULL, what, sizeof what);
  char cost[48] = "";
  if (isfinite(r->cost_usd)) snprintf(cost, sizeof cost, " ($%.4g %s)", r->cost_usd, p->base.price_spot ? "spot" : "on demand");
  snprintf(buf, len, "Point %d%s%s%s: %d chip%s, %.4g h and %.4g chip-hours%s to reach %ld steps "
           "(%.4g ms per step, %.4g examples/s, expected goodput %.4f).", p->recommended, what[0] ? " (" : "", what,
           what[0] ? ")" : "", r->chips, r->chips == 1 ? "" : "s", r->time_s / 3600.0, r->chip_hours, cost, r->steps,
           1e3 * r->m.step_s, r->examples_per_s, r->goodput);
}

void plan_print(const plan *p, const char *dir, FILE *out) {
  plan_table t;
  table_build(p, &t);
  int *width = base_xcalloc((size_t)t.ncols, sizeof *width);
  for (int c = 0; c < t.ncols; c++) {
    width[c] = (int)strlen(t.header[c]);
    for (int i = 0; i < p->npoints; i++) {
      int w = (int)strlen(t.cells[i * t.ncols + c]);
      if (w > width[c]) width[c] = w;
    }
  }
  fprintf(out, "podsim plan: %s, %d point%s\n", p->base.name, p->npoints, p->npoints == 1 ? "" : "s");
  for (int i = -1; i < p->npoints; i++) {
    for (int c = 0; c < t.ncols; c++)
      fprintf(out, "%s%-*s", c ? "  " : "  ", c == t.ncols - 1 ? 0 : width[c], i < 0 ? t.header[c] : t.cells[i * t.ncols + c]);
    fputc('\n', out);
  }
  char rec[1024];
  recommendation(p, rec, sizeof rec);
  fprintf(out, "%s\n%s\n", rec, plan_rule(p));
  fprintf(out, "outputs: %s/ (sweep.csv, report.md, report.pdf%s)\n", dir, p->base.keep_points ? ", points/" : "");
  free(width);
  table_free(&t);
}

/* ---- charts and the reports ------------------------------------------------------------- */

/* Whether key k changes the chip count: some point differs in chips from the point that takes
** k's first value and the same other values. */
static int changes_chips(const plan *p, int k) {
  for (int i = 0; i < p->npoints; i++)
    if (p->rows[i].chips != p->rows[i - value_index(p, i, k) * stride_of(p, k)].chips) return 1;
  return 0;
}

/* The first point of i's series: its values with every chip-changing key at its first value. */
static int series_of(const plan *p, int i, const int *chip_key) {
  for (int k = 0; k < p->nkeys; k++)
    if (chip_key[k]) i -= (int)(value_index(p, i, k) * stride_of(p, k));
  return i;
}

/* Whether the points are of more than one generation (then each gets its own line). */
static int mixes_generations(const plan *p) {
  for (int i = 1; i < p->npoints; i++)
    if (strcmp(p->rows[i].generation, p->rows[0].generation)) return 1;
  return 0;
}

/* The order of points a and b on the chips charts: by series, then generation (a chip of
** another generation is another line, not the same line's next size), then chips. */
static int chart_before(const plan *p, int a, int b, const int *chip_key) {
  int sa = series_of(p, a, chip_key), sb = series_of(p, b, chip_key);
  if (sa != sb) return sa < sb;
  int g = strcmp(p->rows[a].generation, p->rows[b].generation);
  return g != 0 ? g < 0 : p->rows[a].chips <= p->rows[b].chips;
}

/* Throughput and efficiency against chips, a line per series (the points sharing the values of
** the keys that do not change the chip count) and generation, each ordered by chips; with more
** than one generation each line's legend names its own. */
static int chips_charts(const plan *p, const char *dir, char *msg, size_t len) {
  int chip_key[SCN_MAX_SWEEP], non_chip[SCN_MAX_SWEEP], n = p->npoints, ns = 0;
  int mixed = mixes_generations(p);
  for (int k = 0; k < p->nkeys; k++) non_chip[k] = !(chip_key[k] = changes_chips(p, k));
  int *order = base_xcalloc((size_t)n, sizeof *order);
  for (int i = 0; i < n; i++) {  /* insertion sort by (series, chips, point): stable and small */
    int j = i;
    for (; j > 0 && !chart_before(p, order[j - 1], i, chip_key); j--) order[j] = order[j - 1];
    order[j] = i;
  }
  double *x = base_xcalloc((size_t)n, sizeof *x), *tput = base_xcalloc((size_t)n, sizeof *tput);
  double *eff = base_xcalloc((size_t)n, sizeof *eff);
  pl_series *st = base_xcalloc((size_t)n + 2, sizeof *st), *se = base_xcalloc((size_t)n + 2, sizeof *se);
  char (*label)[256] = base_xcalloc((size_t)n, sizeof *label);
  for (int j = 0; j < n; j++) {
    int i = order[j];
    x[j] = p->rows[i].chips;
    tput[j] = p->rows[i].examples_per_s;
    eff[j] = p->rows[i].efficiency;
    if (j == 0 || series_of(p, i, chip_key) != series_of(p, order[j - 1], chip_key) ||
        strcmp(p->rows[i].generation, p->rows[order[j - 1]].generation)) {
      describe(p, i, non_chip, label[ns], sizeof label[ns]);
      if (mixed) {  /* the generation names the line, after the other keys' values */
        size_t at = strlen(label[ns]);
        snprintf(label[ns] + at, sizeof label[ns] - at, "%s%s", at ? ", " : "", p->rows[i].generation);
      }
      st[ns] = (pl_series){ label[ns], x + j, tput + j, 0, PL_MARK_DOTS };
      se[ns] = (pl_series){ label[ns], x + j, eff + j, 0, PL_MARK_DOTS };
      ns++;
    }
    st[ns - 1].n++;
    se[ns - 1].n++;
  }
  /* Points without a throughput are crosses on the chart's floor, at their chip count, so a
  ** configuration that does not fit is seen where it would have been, not missing. */
  double *unrun_x = base_xcalloc(2 * (size_t)n, sizeof *unrun_x), *zero = base_xcalloc((size_t)n, sizeof *zero);
  static const char *const UNRUN[2] = { "does not fit in device memory", "did not run (sweep.csv says why)" };
  for (int verdict = 0; verdict < 2; verdict++) {
    double *ux = unrun_x + verdict * n;
    size_t m = 0;
    for (int i = 0; i < n; i++)
      if (p->rows[i].fits == (verdict == 0 ? 0 : -1)) ux[m++] = p->rows[i].chips;
    if (m == 0) continue;
    st[ns] = se[ns] = (pl_series){ UNRUN[verdict], ux, zero, m, PL_MARK_CROSSES };
    ns++;
  }
  char path[SCN_PATH_MAX + 32], title[256];
  snprintf(title, sizeof title, "Throughput against chips \xe2\x80\x94 %s", p->base.name);
  int rc = pl_line_chart(outputs_path(path, sizeof path, dir, "throughput.png"), PL_PNG, title, "chips",
                         "examples/s (median step)", st, (size_t)ns, msg, len);
  snprintf(title, sizeof title, "Scaling efficiency \xe2\x80\x94 %s", p->base.name);
  if (rc == 0)
    rc = pl_line_chart(outputs_path(path, sizeof path, dir, "efficiency.png"), PL_PNG, title, "chips",
                       "per-chip throughput / the reference point's", se, (size_t)ns, msg, len);
  free(order);
  free(unrun_x);
  free(zero);
  free(x);
  free(tput);
  free(eff);
  free(st);
  free(se);
  free(label);
  return rc;
}

/* Up to this many points each bar is named by its values; beyond, by its row of sweep.csv. */
#define PLAN_LABELLED_BARS 24

/* Bars of the points: named by their sweep values (the keys in the x label) with notes above
** them when there are few, else at their row numbers. */
static int point_bars(const plan *p, const char *path, const char *title, const char *ylabel,
                      char (*labels)[256], const char *const *notes, const pl_stack *stacks, size_t nstacks,
                      char *msg, size_t len) {
  int n = p->npoints;
  if (n > PLAN_LABELLED_BARS) {
    double *x = base_xcalloc((size_t)n, sizeof *x);
    for (int i = 0; i < n; i++) x[i] = i;
    int rc = pl_stacked_bars(path, PL_PNG, title, "sweep point (row of sweep.csv)", ylabel, x, (size_t)n, stacks,
                             nstacks, msg, len);
    free(x);
    return rc;
  }
  char xlabel[1024] = "";
  const char **names = base_xcalloc((size_t)n, sizeof *names);
  for (int k = 0, at = 0; k < p->nkeys && at < (int)sizeof xlabel; k++)
    at += snprintf(xlabel + at, sizeof xlabel - (size_t)at, "%s%s", k ? ", " : "", p->base.sweep_paths[k]);
  for (int i = 0; i < n; i++) names[i] = labels[i];
  int rc = pl_labelled_bars(path, PL_PNG, title, xlabel, ylabel, names, notes, (size_t)n, stacks, nstacks, msg, len);
  free(names);
  return rc;
}

/* The median step of each point stacked by part, and its device memory against capacity. */
static int point_charts(const plan *p, const char *dir, char *msg, size_t len) {
  int n = p->npoints;
  double *v = base_xcalloc((size_t)n * 9, sizeof *v);
  double *input = v, *compute = v + n, *comm = v + 2 * n, *idle = v + 3 * n, *host = v + 8 * n;
  double *used = v + 4 * n, *spare = v + 5 * n, *wanted = v + 6 * n, *over = v + 7 * n;
  char (*labels)[256] = base_xcalloc((size_t)n, sizeof *labels), (*need)[64] = base_xcalloc((size_t)n, sizeof *need);
  const char **step_notes = base_xcalloc((size_t)n, sizeof *step_notes);
  const char **hbm_notes = base_xcalloc((size_t)n, sizeof *hbm_notes);
  for (int i = 0; i < n; i++) {
    const plan_measure *m = &p->rows[i].m;
    double cap = (double)m->hbm_capacity, want = (double)m->hbm_needed;
    for (int k = 0, at = 0; k < p->nkeys && at < (int)sizeof labels[i]; k++)
      at += snprintf(labels[i] + at, sizeof labels[i] - (size_t)at, "%s%s", k ? ", " : "", p->rows[i].values[k]);
    input[i] = 1e3 * m->input_s;
    compute[i] = 1e3 * m->compute_s;
    comm[i] = 1e3 * m->comm_s;
    idle[i] = 1e3 * m->idle_s;
    host[i] = 1e3 * m->host_s;
    int fits = cap > 0 && want <= cap;
    used[i] = fits ? 100.0 * want / cap : 0.0;
    spare[i] = fits ? 100.0 - used[i] : 0.0;
    wanted[i] = cap > 0 && !fits ? 100.0 : 0.0;
    over[i] = cap > 0 && !fits ? 100.0 * (want - cap) / cap : 0.0;
    if (p->rows[i].fits == 0) {
      snprintf(need[i], sizeof need[i], "needs %.1f of %.1f GiB", want / 1073741824.0, cap / 1073741824.0);
      step_notes[i] = "does not fit";
      hbm_notes[i] = need[i];
    } else if (p->rows[i].fits < 0) {
      step_notes[i] = hbm_notes[i] = "did not run";
    }
  }
  char path[SCN_PATH_MAX + 32], title[256];
  pl_stack parts[5] = { { "input", input }, { "compute", compute }, { "communication", comm }, { "idle", idle },
                        { "host", host } };
  snprintf(title, sizeof title, "Median step by part \xe2\x80\x94 %s", p->base.name);
  int rc = point_bars(p, outputs_path(path, sizeof path, dir, "step_breakdown.png"), title, "simulated time (ms)",
                      labels, step_notes, parts, 5, msg, len);
  pl_stack memory[4] = { { "in use", used }, { "free", spare }, { "does not fit: up to capacity", wanted },
                         { "does not fit: beyond capacity", over } };
  snprintf(title, sizeof title, "Device memory against capacity \xe2\x80\x94 %s", p->base.name);
  if (rc == 0)
    rc = point_bars(p, outputs_path(path, sizeof path, dir, "hbm.png"), title, "% of the fullest device's memory",
                    labels, hbm_notes, memory, 4, msg, len);
  free(v);
  free(labels);
  free(need);
  free(step_notes);
  free(hbm_notes);
  return rc;
}

static const char *const CHARTS[][2] = {
  { "throughput.png", "Throughput against chips" }, { "efficiency.png", "Scaling efficiency" },
  { "step_breakdown.png", "Median step by part" }, { "hbm.png", "Device memory against capacity" } };
#define PLAN_NCHARTS (sizeof CHARTS / sizeof CHARTS[0])

/* The notes every report carries under its table, one paragraph each. */
static int notes(const plan *p, char out[][512]) {
  char ref[512] = "no point ran";
  if (p->reference >= 0) {
    char what[400];
    describe(p, p->reference, NULL, what, sizeof what);
    snprintf(ref, sizeof ref, "point %d (%s)", p->reference, what);
  }
  int n = 0;
  snprintf(out[n++], 512, "Step: the median step time of the point's run, step 0 (compile, first batch) left out.");
  snprintf(out[n++], 512, "Efficiency: examples/s per chip over that of the reference, %.420s.", ref);
  snprintf(out[n++], 512, "Memory: the fullest device's peak (or, when it does not fit, the allocation that "
           "failed) over its capacity.");
  snprintf(out[n++], 512, "Max batch/replica: the largest per-replica batch the memory model fits, found by "
           "doubling then bisection.");
  snprintf(out[n++], 512, "Expected goodput: the useful share of the job's time the fault model predicts "
           "(Daly; 1 without faults or checkpoints), not a run's measured goodput (summary.json). "
           "Hours: compile + steps x step / expected goodput.");
  return n;
}

static int write_markdown(const plan *p, const char *path) {
  FILE *f = fopen(path, "w");
  if (f == NULL) return -1;
  char rec[1024], note[8][512];
  recommendation(p, rec, sizeof rec);
  fprintf(f, "# Capacity plan: %s\n\n%d points of the sweep over", p->base.name, p->npoints);
  for (int k = 0; k < p->nkeys; k++) fprintf(f, "%s `%s`", k ? "," : "", p->base.sweep_paths[k]);
  fprintf(f, "%s; each ran as `podsim run` with the point's values, into `points/NNN/`%s.\n\n"
          "## Recommendation\n\n%s\n\n%s\n\n## Points\n\n", p->nkeys ? "" : " no key",
          p->base.keep_points ? "" : " (removed once measured: outputs.keep_points keeps them)", rec, plan_rule(p));
  plan_table t;
  table_build(p, &t);
  for (int i = -2; i < p->npoints; i++) {
    for (int c = 0; c < t.ncols; c++)
      fprintf(f, "| %s ", i == -2 ? t.header[c] : i == -1 ? "---" : t.cells[i * t.ncols + c]);
    fputs("|\n", f);
  }
  table_free(&t);
  int nn = notes(p, note);
  fputc('\n', f);
  for (int i = 0; i < nn; i++) fprintf(f, "%s\n\n", note[i]);
  fputs("## Charts\n\n", f);
  for (size_t c = 0; c < PLAN_NCHARTS; c++) fprintf(f, "![%s](%s)\n\n", CHARTS[c][1], CHARTS[c][0]);
  return base_fclose(f);
}

/* report.pdf: the title page (recommendation, rule, notes), the table, then each chart. */
static int write_pdf(const plan *p, const char *dir, char *msg, size_t len) {
  char path[SCN_PATH_MAX + 32], title[256], rec[1024], sweep[1024] = "", note[8][512];
  pl_doc *d = pl_doc_open(outputs_path(path, sizeof path, dir, "report.pdf"), msg, len);
  if (d == NULL) return -1;
  recommendation(p, rec, sizeof rec);
  size_t at = 0;
  for (int k = 0; k < p->nkeys && at < sizeof sweep; k++) {
    int w = snprintf(sweep + at, sizeof sweep - at, "%s%s", k ? ", " : "", p->base.sweep_paths[k]);
    if (w > 0) at += (size_t)w;
  }
  char head[SCN_PATH_MAX + 64], points[1200];
  snprintf(head, sizeof head, "Scenario %.127s (%.3000s)", p->base.name, p->path);
  snprintf(points, sizeof points, "%d points over %s", p->npoints, p->nkeys ? sweep : "no key");
  const char *lines[16] = { head, points, "# Recommendation", rec, plan_rule(p), "# How to read it" };
  int nl = 6, nn = notes(p, note);
  for (int i = 0; i < nn; i++) lines[nl++] = note[i];
  snprintf(title, sizeof title, "Capacity plan \xe2\x80\x94 %s", p->base.name);
  pl_doc_text(d, title, lines, (size_t)nl);
  plan_table t;
  table_build(p, &t);
  int rc = pl_doc_table(d, "Sweep points", t.header, (size_t)t.ncols, t.cells, (size_t)p->npoints);
  table_free(&t);
  for (size_t c = 0; c < PLAN_NCHARTS && rc == 0; c++)
    rc = pl_doc_image(d, outputs_path(path, sizeof path, dir, CHARTS[c][0]));
  if (pl_doc_close(d) != 0) rc = -1;
  return rc;
}

int plan_mpi_ranks(void) {
#ifdef PODSIM_MPI
  const char *size = getenv("OMPI_COMM_WORLD_SIZE");  /* what mpi_start reads too */
  return size != NULL && atoi(size) > 1 ? atoi(size) : 1;
#else
  return 1;
#endif
}

int plan_is_root(void) {
#ifdef PODSIM_MPI
  return mpi_rank == 0;
#else
  return 1;
#endif
}

int plan_run(plan *p, const char *dir, int jobs, scn_error *err) {
  char path[SCN_PATH_MAX + 32], msg[512] = "";
  if (outputs_make_dir(outputs_path(path, sizeof path, dir, "points")) != 0) {
    train_error(err, dir, 0, 0, "outputs.dir", "cannot create %s: %s", path, strerror(errno));
    return -1;
  }
  if (jobs <= 0) jobs = (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (jobs < 1) jobs = 1;
  if (jobs > p->npoints) jobs = p->npoints;
  /* Points running at once share the host: as many as its memory holds of the largest, one at
  ** least (each fits alone: the loader refused any that does not). */
  double fit = p->host_bytes > 0 ? floor(scenario_host_memory() / p->host_bytes) : jobs;
  if (fit < jobs) jobs = fit > 1 ? (int)fit : 1;
  jobs = jobs_within_fds(jobs);
#ifdef PODSIM_MPI
  mpi_start();
  int ran = mpi_size == 1 ? run_points(p, dir, jobs) : mpi_rank == 0 ? mpi_master(p, dir) : mpi_worker(p, dir);
  mpi_stop();
#else
  int ran = run_points(p, dir, jobs);
#endif
  rmdir(outputs_path(path, sizeof path, dir, "points"));  /* empty unless outputs.keep_points */
  if (ran == TR_STOPPED) return TR_STOPPED;
  if (ran != 0) {
    train_error(err, dir, 0, 0, "outputs.dir", "cannot start a process for a sweep point: %s", strerror(errno));
    return -1;
  }
  if (!plan_is_root()) return 0;  /* rank 0 writes the plan's files */
  derive(p);
  const char *failed = NULL;
  if (write_csv(p, outputs_path(path, sizeof path, dir, "sweep.csv")) != 0) failed = "sweep.csv";
  else if (write_markdown(p, outputs_path(path, sizeof path, dir, "report.md")) != 0) failed = "report.md";
  else if (chips_charts(p, dir, msg, sizeof msg) != 0 || point_charts(p, dir, msg, sizeof msg) != 0 ||
           write_pdf(p, dir, msg, sizeof msg) != 0)
    failed = "report.pdf";
  if (failed == NULL) return 0;
  train_error(err, dir, 0, 0, "outputs.dir", "cannot write %s: %s", failed, msg[0] ? msg : strerror(errno));
  return -1;
}
