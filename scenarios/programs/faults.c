/*
** faults.c: a scenario's faults resolved against its run (faults_ in faults.h).
**
** Loading turns every entry into targets (each a task or a set of links, named once) and
** occurrences: one per target of a scheduled entry or trace row, one random process per target of
** an mtbf or rate entry, its stream named "faults[I].TARGET" so that adding an entry or a worker
** never shifts another target's draws. The plan is built when the run's strategy exists; the
** targets then find their devices and links by the names sim/ gave them.
**
** Invariants: (1) targets are unique by name, numbered in the order first named, so the plan
** and the trace see the same numbers on every run; (2) every occurrence's target exists in the
** run (checked at load, so a run never meets a target it cannot resolve).
*/
#include "scenarios/programs/faults.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/csvfile.h"
#include "scenarios/programs/train.h"
#include "scenarios/config/units.h"
#include "strategies/ps/ps_strategy.h"

typedef enum { T_WORKER, T_TPU, T_TPU_HOST, T_LINKS, T_PS, T_CHIEF, T_EVALUATOR } target_kind;

typedef struct target {
  char name[32];          /* as messages and the trace show it: "worker:3", "ici:*" */
  target_kind kind;       /* what it stands for */
  int index;              /* worker or host number (T_WORKER, T_TPU_HOST) */
  char prefix[32];        /* T_LINKS: the links whose names start with it */
} target;

typedef struct timed_fault {
  sim_fault f;            /* the occurrence */
  int entry;              /* the faults entry it came from */
} timed_fault;

typedef struct random_fault {
  sim_fault f;            /* the template: kind, target, notice, down time */
  sim_fault_dist dist;    /* time between occurrences */
  char stream[64];        /* RNG stream name */
  int entry;              /* the faults entry it came from */
} random_fault;

struct faults {
  const scenario *s;      /* the scenario */
  int tpu;                /* a TPU run: the targets are the slice's */
  int workers, hosts, chips; /* what the run has */
  int ps, evaluators;     /* parameter_server: its ps tasks and evaluators (0 in a sync run) */
  int ps_run;             /* a parameter_server run: ps, chief and evaluator are targets */
  target *targets;        /* invariant 1 */
  int n_targets, cap_targets; /* entries, allocated */
  timed_fault *timed;     /* scheduled and traced occurrences, in file order: the plan's first */
  int n_timed, cap_timed; /* entries, allocated */
  random_fault *random;   /* random processes, in file order: the plan's occurrences after timed */
  int entry;              /* the entry being loaded */
  int n_random, cap_random; /* entries, allocated */
  int *hits;              /* scratch: the targets one name stands for */
  int n_hits, cap_hits;   /* entries, allocated */
  /* set by faults_plan */
  const ds_strategy *st;  /* replicas and their devices */
  const sim_tpu_slice *slice; /* the TPU slice, or NULL */
  sim_link **links;       /* every link a link target may match */
  size_t n_links;         /* entries */
  faults_down_fn down;    /* the program's reaction to a task fault */
  void *ctx;              /* its argument */
  sim_fault_ops ops;      /* the table the plan calls */
};

static void grow(void *arr, int *cap, int need, size_t elem) {
  if (need <= *cap) return;
  int n = *cap ? 2 * *cap : 8;
  while (n < need) n *= 2;
  void **p = arr;
  *p = base_xrealloc(*p, (size_t)n * elem);
  *cap = n;
}

/* Adds (or finds) the target of that name; its index goes to hits. */
static void hit(faults *f, const char *name, target_kind kind, int index, const char *prefix) {
  int t;
  for (t = 0; t < f->n_targets; t++)
    if (!strcmp(f->targets[t].name, name)) break;
  if (t == f->n_targets) {
    grow(&f->targets, &f->cap_targets, t + 1, sizeof *f->targets);
    target *g = &f->targets[f->n_targets++];
    *g = (target){.kind = kind, .index = index};
    snprintf(g->name, sizeof g->name, "%s", name);
    snprintf(g->prefix, sizeof g->prefix, "%s", prefix ? prefix : "");
  }
  grow(&f->hits, &f->cap_hits, f->n_hits + 1, sizeof *f->hits);
  f->hits[f->n_hits++] = t;
}

/* The tasks or links `text` (syntax checked by the loader, or unchecked from a trace) names in
** this run, into f->hits. Returns 0, or -1 with why. */
static int resolve(faults *f, const char *text, int links, char *why, size_t len) {
  static const char *const tasks[] = {"worker", "tpu_host", "tpu", "ps", "chief", "evaluator", NULL};
  static const char *const nets[] = {"ici", "dcn", "fabric", NULL};
  const char *const *names = links ? nets : tasks;
  size_t nl = strcspn(text, ":");
  const char *arg = text[nl] == ':' ? text + nl + 1 : NULL;
  int k, all = arg && !strcmp(arg, "*"), n = -1;
  for (k = 0; names[k]; k++)
    if (strlen(names[k]) == nl && !strncmp(names[k], text, nl)) break;
  if (arg && !all) {
    char *end;
    long v = strtol(arg, &end, 10);
    if (*arg >= '0' && *arg <= '9' && *end == '\0' && v < 1000000) n = (int)v;
  }
  /* tpu, chief and evaluator are single tasks; a link kind alone means all its links. */
  int single = names[k] && (!strcmp(names[k], "tpu") || !strcmp(names[k], "chief") || !strcmp(names[k], "evaluator"));
  int whole = arg == NULL;
  if (!names[k] || (arg ? single || (!all && n < 0) : !single && !links)) {
    snprintf(why, len, links ? "expected a link target such as ici:*, ici:3, dcn:* or fabric:*, found \"%s\""
                             : "expected a task target such as worker:3, worker:*, tpu or tpu_host:1, found \"%s\"", text);
    return -1;
  }
  const char *kind = names[k];
  int on_tpu = !strcmp(kind, "tpu") || !strcmp(kind, "tpu_host") || !strcmp(kind, "ici") || !strcmp(kind, "dcn");
  int ps_job = !strcmp(kind, "ps") || !strcmp(kind, "chief") || !strcmp(kind, "evaluator");
  if (ps_job && f->ps_run && !strcmp(kind, "evaluator") && f->evaluators == 0) {
    snprintf(why, len, "evaluator: this run has no evaluator task (cluster.evaluator)");
    return -1;
  }
  if (ps_job && !f->ps_run) {
    snprintf(why, len, "this run has no %s task (those are parameter-server training's); its tasks are %s", kind,
             f->tpu ? "tpu and tpu_host:N" : "worker:N");
    return -1;
  }
  if (on_tpu && !f->tpu) {
    snprintf(why, len, "%s: this run has no TPU slice (cluster.tpu); its targets are worker:N and fabric links", text);
    return -1;
  }
  if (!on_tpu && f->tpu) {
    snprintf(why, len, "%s: a TPU run has no CPU workers or fabric; its targets are tpu, tpu_host:0..%d, ici and dcn links",
             text, f->hosts - 1);
    return -1;
  }
  if (ps_job && single) {
    hit(f, kind, !strcmp(kind, "chief") ? T_CHIEF : T_EVALUATOR, 0, NULL);
    return 0;
  }
  int count = !strcmp(kind, "ps") ? f->ps : !strcmp(kind, "ici") ? f->chips : !strcmp(kind, "worker") || !strcmp(kind, "fabric") ? f->workers : f->hosts;
  if (n >= count) {
    snprintf(why, len, "%s: the run has %d %s, numbered 0 to %d", text, count,
             !strcmp(kind, "ici") ? "chips" : !strcmp(kind, "dcn") || !strcmp(kind, "tpu_host") ? "TPU hosts" : ps_job ? "ps tasks" : "workers",
             count - 1);
    return -1;
  }
  char name[32], prefix[32];
  if (links) {  /* one target for the whole set: ici.*, ici.3.*, dcn.1.*, fabric.w2.* */
    const char *stem = !strcmp(kind, "fabric") ? "fabric.w" : kind;
    if (n >= 0) snprintf(prefix, sizeof prefix, !strcmp(kind, "fabric") ? "%s%d." : "%s.%d.", stem, n);
    else snprintf(prefix, sizeof prefix, "%s.", kind);
    hit(f, text, T_LINKS, n, prefix);
    return 0;
  }
  if (whole && !ps_job) {
    hit(f, "tpu", T_TPU, -1, NULL);
    return 0;
  }
  target_kind tk = !strcmp(kind, "worker") ? T_WORKER : ps_job ? T_PS : T_TPU_HOST;
  for (int i = all ? 0 : n; i < (all ? count : n + 1); i++) {
    snprintf(name, sizeof name, "%s:%d", kind, i);
    hit(f, name, tk, i, NULL);
  }
  return 0;
}

static void add_timed(faults *f, const sim_fault *tmpl) {
  for (int i = 0; i < f->n_hits; i++) {
    grow(&f->timed, &f->cap_timed, f->n_timed + 1, sizeof *f->timed);
    f->timed[f->n_timed] = (timed_fault){ .f = *tmpl, .entry = f->entry };
    f->timed[f->n_timed++].f.target = f->hits[i];
  }
}

static int is_task_kind(sim_fault_kind k) { return k == SIM_FAULT_PREEMPT || k == SIM_FAULT_FAIL; }

/* ---- trace files ----------------------------------------------------------------------------- */


/* One record of a trace file (md_csvfile_fn, ctx the faults). */
/* A trace's times and durations are bounded as the scenario's own fault keys are: by the clock's
** horizon, past which a run never gets (and past 2^63 ps a time no longer fits the clock). */
static int past_horizon(md_error *err, int line, int col, const char *what, const char *text) {
  return md_error_set(err, line, col, "%s: expected at most %g s (%.1f days, the simulated clock's horizon), found %s", what,
                      SIM_TIME_HORIZON_S, SIM_TIME_HORIZON_S / 86400, text);
}

static int trace_row(void *ctx, int line, int nfields, char **fields, md_error *err) {
  faults *f = ctx;
  static const char *const header[] = {"time", "kind", "target", "duration", "factor"};
  if (line == 1) {
    for (int i = 0; i < nfields && i < 5; i++)
      if (strcmp(fields[i], header[i]))
        return md_error_set(err, line, i + 1, "expected the header time,kind,target,duration[,factor]: column %s, found \"%s\"",
                         header[i], fields[i]);
    if (nfields < 4 || nfields > 5)
      return md_error_set(err, line, 1, "expected the header time,kind,target,duration[,factor]");
    return 0;
  }
  if (nfields < 4 || nfields > 5)
    return md_error_set(err, line, 1, "expected 4 or 5 fields (time,kind,target,duration[,factor]), found %d", nfields);
  char why[400];
  double at, duration = -1, factor = 1;
  if (units_parse(UNIT_DURATION, fields[0], &at, why, sizeof why))
    return md_error_set(err, line, 1, "time: %s", why);
  if (at > SIM_TIME_HORIZON_S) return past_horizon(err, line, 1, "time", fields[0]);
  sim_fault_kind kind;
  if (sim_fault_kind_parse(fields[1], &kind))
    return md_error_set(err, line, 2, "expected a kind of preempt | fail | straggler | link_degrade | link_down, found \"%s\"",
                     fields[1]);
  int links = kind == SIM_FAULT_LINK_DEGRADE || kind == SIM_FAULT_LINK_DOWN;
  f->n_hits = 0;
  if (resolve(f, fields[2], links, why, sizeof why)) return md_error_set(err, line, 3, "%s", why);
  if (fields[3][0] && units_parse(UNIT_DURATION, fields[3], &duration, why, sizeof why))
    return md_error_set(err, line, 4, "duration: %s", why);
  if (duration > SIM_TIME_HORIZON_S) return past_horizon(err, line, 4, "duration", fields[3]);
  const char *fac = nfields == 5 ? fields[4] : "";
  int wants = kind == SIM_FAULT_STRAGGLER || kind == SIM_FAULT_LINK_DEGRADE;
  if (!wants && fac[0])
    return md_error_set(err, line, 5, "a %s takes no factor, found \"%s\"", fields[1], fac);
  if (wants) {
    char *end;
    factor = strtod(fac, &end);
    int ok = fac[0] && *end == '\0' && (kind == SIM_FAULT_STRAGGLER ? factor >= 1 && factor <= 1e6 : factor > 0 && factor <= 1);
    if (!ok)
      return md_error_set(err, line, 5, "expected %s, found \"%s\"",
                       kind == SIM_FAULT_STRAGGLER ? "a slowdown >= 1" : "a factor in (0, 1]", fac);
  }
  sim_fault tmpl = {.kind = kind, .at = sim_time_from_s(at), .at_step = -1, .factor = factor,
                    .duration = duration >= 0 ? sim_time_from_s(duration) : is_task_kind(kind) ? 0 : SIM_TIME_NEVER};
  add_timed(f, &tmpl);
  return 0;
}

/* ---- loading ------------------------------------------------------------------------------- */

static int load_entry(faults *f, int i, scn_error *err) {
  const scn_fault *sf = &f->s->faults[i];
  char key[64], why[512];
  if (sf->trace) {
    md_error me = {0};
    snprintf(key, sizeof key, "faults[%d].file", i);
    if (md_csvfile_each(sf->file, trace_row, f, NULL, &me) != 0)
      return train_error(err, sf->file, me.line, me.col, key, "%s", me.msg);
    return TR_EXIT_OK;
  }
  sim_fault_kind kind = sf->kind;
  f->n_hits = 0;
  snprintf(key, sizeof key, "faults[%d].target", i);
  if (resolve(f, sf->target, !is_task_kind(kind) && kind != SIM_FAULT_STRAGGLER, why, sizeof why))
    return train_error(err, sf->src, sf->line, sf->col, key, "%s", why);
  sim_fault tmpl = {.kind = kind, .at = sf->at_s >= 0 ? sim_time_from_s(sf->at_s) : SIM_TIME_NEVER,
                    .at_step = sf->at_step, .notice = sim_time_from_s(sf->notice_s), .factor = sf->factor};
  tmpl.duration = is_task_kind(kind) ? sim_time_from_s(sf->down_for_s)
                  : sf->duration_s >= 0 ? sim_time_from_s(sf->duration_s) : SIM_TIME_NEVER;
  if (sf->mtbf_s <= 0) {
    add_timed(f, &tmpl);
    return TR_EXIT_OK;
  }
  for (int h = 0; h < f->n_hits; h++) {
    grow(&f->random, &f->cap_random, f->n_random + 1, sizeof *f->random);
    random_fault *rf = &f->random[f->n_random++];
    *rf = (random_fault){.f = tmpl, .dist = {sf->mtbf_s, sf->weibull_shape}, .entry = i};
    rf->f.target = f->hits[h];
    snprintf(rf->stream, sizeof rf->stream, "faults[%d].%s", i, f->targets[f->hits[h]].name);
  }
  return TR_EXIT_OK;
}

int faults_load(const scenario *s, faults **out, scn_error *err) {
  *out = NULL;
  if (s->nfaults == 0) return TR_EXIT_OK;
  faults *f = base_xcalloc(1, sizeof *f);
  f->s = s;
  f->workers = s->workers;
  f->ps_run = s->strategy == SCN_STRATEGY_PARAMETER_SERVER;
  f->ps = s->ps;
  f->evaluators = s->has_evaluator;
  if (s->tpu_type[0]) {
    const sim_tpu_generation *g = NULL;
    int chips, dims[3];
    sim_tpu_slice_parse(s->tpu_type, &g, &chips, dims, NULL, 0);
    f->tpu = 1;
    f->chips = s->tpu_dims[0] * s->tpu_dims[1] * s->tpu_dims[2];
    f->hosts = sim_tpu_layout_hosts(g, s->tpu_dims);
  }
  for (int i = 0; i < s->nfaults; i++) {
    f->entry = i;
    int rc = load_entry(f, i, err);
    if (rc != TR_EXIT_OK) {
      faults_free(f);
      return rc;
    }
  }
  *out = f;
  return TR_EXIT_OK;
}

void faults_free(faults *f) {
  if (f == NULL) return;
  free(f->targets);
  free(f->timed);
  free(f->random);
  free(f->hits);
  free(f->links);
  free(f);
}

const char *faults_target_name(const faults *f, int which) { return f->targets[which].name; }

faults_task faults_target_task(const faults *f, int which, int *index) {
  const target *t = &f->targets[which];
  *index = t->index < 0 ? 0 : t->index;
  switch (t->kind) {
    case T_WORKER: return FAULTS_WORKER;
    case T_PS: return FAULTS_PS;
    case T_CHIEF: return FAULTS_CHIEF;
    case T_EVALUATOR: return FAULTS_EVALUATOR;
    default: return FAULTS_OTHER;
  }
}

/* ---- the plan's callbacks ---------------------------------------------------------------- */

static const char *op_name(void *ctx, int which) { return faults_target_name(ctx, which); }

static size_t add_cpu(sim_cpu **out, size_t n, size_t max, sim_cpu *c) {
  for (size_t i = 0; i < n && i < max; i++)
    if (out[i] == c) return n;
  if (n < max) out[n] = c;
  return n + 1;
}

/* Every compute unit of the machine: a worker's CPU and its accelerators; a TPU host's (or the
** slice's) devices. */
static size_t op_cpus(void *ctx, int which, sim_cpu **out, size_t max) {
  faults *f = ctx;
  const target *t = &f->targets[which];
  size_t n = 0;
  if (f->ps_run) {  /* every task is one VM's CPU */
    if (t->kind == T_WORKER) n = add_cpu(out, n, max, ds_ps_task_cpu(f->st, DS_PS_WORKER, t->index));
    if (t->kind == T_PS) n = add_cpu(out, n, max, ds_ps_task_cpu(f->st, DS_PS_PS, t->index));
    if (t->kind == T_CHIEF) n = add_cpu(out, n, max, ds_ps_task_cpu(f->st, DS_PS_COORDINATOR, 0));
    return n;
  }
  if (t->kind == T_WORKER) {
    if (t->index < ds_strategy_num_workers(f->st)) n = add_cpu(out, n, max, ds_worker_cpu(f->st, t->index));
    for (int r = 0; r < ds_num_replicas_in_sync(f->st); r++)
      if (ds_replica_worker(f->st, r) == t->index) n = add_cpu(out, n, max, ds_replica_cpu(f->st, r));
    return n;
  }
  for (int d = 0; f->slice && d < sim_tpu_slice_devices(f->slice); d++)
    if (t->kind == T_TPU || sim_tpu_device_host(f->slice, d) == t->index)
      n = add_cpu(out, n, max, sim_tpu_device_cpu(f->slice, d));
  return n;
}

static size_t op_links(void *ctx, int which, sim_link **out, size_t max) {
  faults *f = ctx;
  const char *prefix = f->targets[which].prefix;
  size_t n = 0, len = strlen(prefix);
  for (size_t i = 0; i < f->n_links; i++) {
    if (strncmp(sim_link_name(f->links[i]), prefix, len)) continue;
    if (n < max) out[n] = f->links[i];
    n++;
  }
  return n;
}

static void op_down(void *ctx, const sim_fault *fault) {
  faults *f = ctx;
  const target *t = &f->targets[fault->target];
  int in_job = f->ps_run || t->kind != T_WORKER || t->index < ds_strategy_num_workers(f->st);
  f->down(f->ctx, fault, in_job);
}

sim_fault_plan *faults_plan(faults *f, sim_engine *e, const ds_strategy *st,
                            const sim_tpu_slice *slice, faults_down_fn down, void *ctx) {
  f->st = st;
  f->slice = slice;
  f->down = down;
  f->ctx = ctx;
  f->n_links = slice ? sim_tpu_slice_links(slice, NULL, 0) : ds_links(st, NULL, 0);
  f->links = base_xcalloc(f->n_links, sizeof *f->links);
  if (slice) sim_tpu_slice_links(slice, f->links, f->n_links);
  else ds_links(st, f->links, f->n_links);
  f->ops = (sim_fault_ops){.name = op_name, .cpus = op_cpus, .links = op_links, .down = op_down};
  sim_fault_plan *p = sim_fault_plan_new(e, &f->ops, f);
  for (int i = 0; i < f->n_timed; i++) sim_fault_plan_add(p, &f->timed[i].f);
  for (int i = 0; i < f->n_random; i++)
    sim_fault_plan_add_random(p, &f->random[i].f, &f->random[i].dist, f->s->seed, f->random[i].stream);
  sim_fault_plan_start(p);
  return p;
}

/* ---- faults that never struck ---------------------------------------------------------------- */

/* Entry i's trigger as written: "at 10 s", "at_step 5", "mtbf 0.02 s" (and a preemption's notice). */
static void trigger_text(const scn_fault *sf, char *buf, size_t len) {
  int at = 0;
  if (sf->at_s >= 0) at = snprintf(buf, len, ", at %.9g s", sf->at_s);
  else if (sf->at_step >= 0) at = snprintf(buf, len, ", at_step %ld", sf->at_step);
  else if (sf->mtbf_s > 0) at = snprintf(buf, len, ", mtbf %.9g s", sf->mtbf_s);
  if (sf->notice_s > 0 && at >= 0 && (size_t)at < len) snprintf(buf + at, len - (size_t)at, ", notice %.9g s", sf->notice_s);
}

void faults_unstruck(const faults *f, const sim_fault_plan *p, sim_time end, run_summary *sum) {
  for (int e = 0; e < f->s->nfaults && sum->nwarnings < RUN_MAX_WARNINGS; e++) {
    long configured = 0, struck = 0;
    size_t occ = 0;
    for (int i = 0; i < f->n_timed; i++, occ++) {
      if (f->timed[i].entry != e) continue;
      configured++;
      struck += sim_fault_plan_struck(p, occ) > 0;
    }
    /* A random entry strikes when any of its targets' processes drew a time within the run. */
    int random = 0;
    for (int i = 0; i < f->n_random; i++, occ++) {
      if (f->random[i].entry != e) continue;
      random = 1;
      struck += sim_fault_plan_struck(p, occ);
    }
    if (random ? struck > 0 : struck == configured) continue;
    const scn_fault *sf = &f->s->faults[e];
    char what[SCN_PATH_MAX + 96], when[96] = "", ended[48], part[64] = "";
    if (sf->trace) snprintf(what, sizeof what, "trace %s", sf->file);
    else {
      trigger_text(sf, when, sizeof when);
      snprintf(what, sizeof what, "%s %s%s", sim_fault_kind_name(sf->kind), sf->target, when);
    }
    if (!random && struck > 0) snprintf(part, sizeof part, "%ld of its %ld faults ", configured - struck, configured);
    snprintf(sum->warnings[sum->nwarnings++], sizeof sum->warnings[0], "faults[%d] (%.160s): %snever struck: "
             "the run ended at %s s", e, what, part, outputs_seconds(ended, sizeof ended, end));
  }
}
