/*
** keys_faults.c: the faults section: each fault kind's keys, targets and triggers.
*/
#include "scenarios/config/configInt.h"

#include <string.h>

/* faults: a list of {kind, target, ...}. */
static int target_check(cfg_ctx *c, const yt_node *v, const char *path, int links) {
  static const char *const TASKS[] = {"worker", "ps", "chief", "evaluator", "tpu_host", "tpu", NULL};
  static const char *const LINKS[] = {"ici", "dcn", "fabric", NULL};
  const char *const *names = links ? LINKS : TASKS;
  const char *t;
  if (cfg_get_str(c, v, path, &t)) return -1;
  size_t nl = strcspn(t, ":");
  for (int i = 0; names[i]; i++) {
    if (strlen(names[i]) != nl || strncmp(names[i], t, nl)) continue;
    if (!t[nl] && (!strcmp(names[i], "tpu") || !strcmp(names[i], "chief") || !strcmp(names[i], "evaluator") || links))
      return 0;
    if (t[nl] == ':' && (!strcmp(t + nl + 1, "*") || (cfg_is_int_text(t + nl + 1) && t[nl + 1] != '-' && t[nl + 1] != '+')) &&
        strcmp(names[i], "tpu"))
      return 0;
    break;
  }
  if (links)
    return cfg_fail(c, v, path, "expected a link target such as ici:*, ici:3, dcn:* or fabric:*, found \"%s\"", t);
  return cfg_fail(c, v, path, "expected a task target such as worker:3, worker:*, ps:0, chief, tpu or tpu_host:1, found \"%s\"", t);
}

/* Keeps the target as written and where it is, for scenarios/programs/faults.c's checks against the run. */
static int store_target(cfg_ctx *c, const yt_node *v, const char *path, void *base, int links) {
  if (target_check(c, v, path, links)) return -1;
  scn_fault *f = base;
  if (strlen(v->text) >= sizeof f->target)
    return cfg_fail(c, v, path, "expected a target of at most %zu characters, found %zu", sizeof f->target - 1, strlen(v->text));
  base_format(f->target, sizeof f->target, "%s", v->text);
  base_format(f->src, sizeof f->src, "%s", v->file);
  f->line = v->line;
  f->col = v->col;
  return 0;
}
static int task_target_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  (void)k;
  return store_target(c, v, path, base, 0);
}
static int link_target_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  (void)k;
  return store_target(c, v, path, base, 1);
}

static const key_spec WEIBULL_KEYS[] = {
  {.key = "shape", .type = V_NUM, .st = S_DOUBLE, OFF(scn_fault, weibull_shape), .lo = 0.05, .hi = 100, .required = 1},
  END};
static const key_spec DISTRIBUTION_KEYS[] = {
  {.key = "exponential", .type = V_MAP, .sub = (const key_spec[]){END}},
  {.key = "weibull", .type = V_MAP, .sub = WEIBULL_KEYS},
  END};
static int distribution_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  char fb[80];
  (void)k;
  if (v->kind == YT_SCALAR && !strcmp(v->text, "exponential")) return 0;
  if (v->kind != YT_MAP || v->n != 1)
    return cfg_fail(c, v, path, "expected exponential or {weibull: {shape: K}}, found %s", cfg_found(v, fb, sizeof fb));
  return cfg_walk_map(c, v, path, DISTRIBUTION_KEYS, base);
}

/* Times and durations are at most the simulated clock's horizon (2^62 ps, 53.4 days): a run never
** gets past it, and beyond 2^63 ps a time does not fit the clock at all. An mtbf is a mean, not a
** time: up to a year, its draws saturate past the horizon (sim/fault.c). */
#define FAULT_KIND {.key = "kind", .type = V_STR}
#define FAULT_TASK {.key = "target", .type = V_FN, .fn = task_target_fn, .required = 1, \
  .schema = "{\"type\":\"string\",\"pattern\":\"^(worker|ps|tpu_host):([0-9]+|\\\\*)$|^(chief|evaluator|tpu)$\",\"description\":\"a task: worker:N, worker:*, ps:N, chief, evaluator, tpu (the slice), tpu_host:N, tpu_host:*\"}"}
#define FAULT_LINK {.key = "target", .type = V_FN, .fn = link_target_fn, .required = 1, \
  .schema = "{\"type\":\"string\",\"pattern\":\"^(ici|dcn|fabric)(:([0-9]+|\\\\*))?$\",\"description\":\"links: ici:*, ici:N, dcn:*, dcn:N, fabric:*, fabric:N\"}"}
#define FAULT_TIME(name, field, req) {.key = name, .type = V_UNIT, .unit = UNIT_DURATION, .st = S_DOUBLE, \
  OFF(scn_fault, field), .hi = SIM_TIME_HORIZON_S, .required = req}
#define FAULT_DURATION {.key = "duration", .type = V_UNIT, .unit = UNIT_DURATION, .st = S_DOUBLE, \
  OFF(scn_fault, duration_s), .lo_open = 1, .hi = SIM_TIME_HORIZON_S}
#define FAULT_TRIGGERS FAULT_TIME("at", at_s, 0),                                                        \
  {.key = "at_step", .type = V_INT, .st = S_LONG, OFF(scn_fault, at_step), .lo = 0, .hi = 1e7},         \
  {.key = "mtbf", .type = V_UNIT, .unit = UNIT_DURATION, .st = S_DOUBLE, OFF(scn_fault, mtbf_s), .lo = 1e-3, .hi = 31536000}, \
  {.key = "rate", .type = V_UNIT, .unit = UNIT_RATE, .st = S_DOUBLE, OFF(scn_fault, mtbf_s), .lo = 3.2e-8, .hi = 1000}, \
  {.key = "distribution", .type = V_FN, .fn = distribution_fn, .map = DISTRIBUTION_KEYS, \
   .schema = "{\"anyOf\":[{\"const\":\"exponential\"},{\"allOf\":[\"$map\"],\"minProperties\":1,\"maxProperties\":1}],\"description\":\"with mtbf or rate: exponential (default) or {weibull: {shape}}\"}"},                                          \
  FAULT_TIME("down_for", down_for_s, 0)
static const key_spec PREEMPT_KEYS[] = {FAULT_KIND, FAULT_TASK, FAULT_TRIGGERS, FAULT_TIME("notice", notice_s, 0), END};
static const key_spec FAIL_KEYS[] = {FAULT_KIND, FAULT_TASK, FAULT_TRIGGERS, END};
static const key_spec LINK_DEGRADE_KEYS[] = {
  FAULT_KIND, FAULT_LINK,
  {.key = "factor", .type = V_NUM, .st = S_DOUBLE, OFF(scn_fault, factor), .lo = 0, .lo_open = 1, .hi = 1, .required = 1},
  FAULT_TIME("at", at_s, 1), FAULT_DURATION, END};
static const key_spec LINK_DOWN_KEYS[] = {FAULT_KIND, FAULT_LINK, FAULT_TIME("at", at_s, 1), FAULT_DURATION, END};
static const key_spec STRAGGLER_KEYS[] = {
  FAULT_KIND, FAULT_TASK,
  {.key = "slowdown", .type = V_NUM, .st = S_DOUBLE, OFF(scn_fault, factor), .lo = 1, .hi = 1e6, .required = 1},
  FAULT_TIME("at", at_s, 1), FAULT_DURATION, END};
static const key_spec TRACE_KEYS[] = {
  FAULT_KIND, {.key = "file", .type = V_PATH, .st = S_CHARS, OFF(scn_fault, file), .len = SCN_PATH_MAX, .required = 1},
  END};

/* The kinds, named as sim/fault.h names them (SIM_KINDS[i] is CFG_FAULT_KINDS[i]'s; test_schema.c
** checks the names agree), in the order the format lists them; a trace file (kind: trace) comes last. */
static const sim_fault_kind SIM_KINDS[] = {SIM_FAULT_PREEMPT, SIM_FAULT_FAIL, SIM_FAULT_LINK_DEGRADE,
                                           SIM_FAULT_LINK_DOWN, SIM_FAULT_STRAGGLER};
enum { NKINDS = sizeof SIM_KINDS / sizeof SIM_KINDS[0] };
const variant CFG_FAULT_KINDS[] = {
  {"preempt", PREEMPT_KEYS}, {"fail", FAIL_KEYS}, {"link_degrade", LINK_DEGRADE_KEYS},
  {"link_down", LINK_DOWN_KEYS}, {"straggler", STRAGGLER_KEYS}, {"trace", TRACE_KEYS}, {NULL, NULL}};

int cfg_faults_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  static const char *const TRIGGERS[] = {"at", "at_step", "mtbf", "rate", NULL};
  char sub[256];
  (void)k; (void)base;
  /* [] is no faults: what `--set faults=[]` switches them off with. */
  if (!(v->kind == YT_SEQ && v->n == 0) &&
      cfg_get_seq(c, v, path, "a sequence of faults such as [{kind: preempt, target: worker:1, at: 10s}]"))
    return -1;
  if (v->n > SCN_MAX_FAULTS)
    return cfg_fail(c, v->items[SCN_MAX_FAULTS], path, "expected at most %d faults (a trace file holds more), found %d",
                SCN_MAX_FAULTS, v->n);
  c->s->nfaults = v->n;
  for (int i = 0; i < v->n; i++) {
    const yt_node *f = v->items[i];
    scn_fault *sf = &c->s->faults[i];
    int which, ntrig = 0;
    *sf = (scn_fault){.at_s = -1, .at_step = -1, .duration_s = -1};
    base_format(sub, sizeof sub, "%s[%d]", path, i);
    if (cfg_walk_variant(c, f, sub, CFG_FAULT_KINDS, sf, &which)) return -1;
    sf->trace = which == NKINDS;
    if (!sf->trace) sf->kind = SIM_KINDS[which];
    if (sf->trace) {
      const yt_node *file = yt_get(f, "file");
      base_format(sf->src, sizeof sf->src, "%s", file->file);
      sf->line = file->line;
      sf->col = file->col;
    }
    if (yt_get(f, "rate")) sf->mtbf_s = 1.0 / sf->mtbf_s;
    if (sf->trace || (sf->kind != SIM_FAULT_PREEMPT && sf->kind != SIM_FAULT_FAIL)) continue;
    for (int t = 0; TRIGGERS[t]; t++) ntrig += yt_get(f, TRIGGERS[t]) != NULL;
    if (ntrig != 1)
      return cfg_fail(c, f, sub, "expected exactly one of at, at_step, mtbf or rate, found %d", ntrig);
    if (yt_get(f, "distribution") && !yt_get(f, "mtbf") && !yt_get(f, "rate")) {
      char d[256];
      cfg_join(d, sizeof d, sub, "distribution");
      return cfg_fail(c, yt_get_key(f, "distribution"), d, "a distribution goes with mtbf or rate");
    }
  }
  return 0;
}
