/*
** scenario.c: validates a scenario tree (yamltree.h) against the v1 contract and fills
** struct scenario. The format is described by tables of key_spec (one table per mapping:
** key, value type, where it is stored, range, enum names, the issue that will support it);
** walk_map checks a mapping's entries in file order against its table. Errors stop the walk at
** the first problem in file order; "not supported yet" answers are only recorded (the first in
** file order) and reported when the whole file validated, so a typo anywhere wins over them.
*/
#include "scenarios/scenario.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "scenarios/machines.h"
#include "scenarios/slice.h"
#include "scenarios/units.h"
#include "scenarios/yamltree.h"
#include "sim/compile.h"
#include "sim/tpu.h"
#include "strategies/device_assignment.h"

typedef struct ctx {
  scenario *s;
  scn_error *err;
  const yt_node *root;
  int have_ns;            /* a "not supported yet" answer is pending */
  scn_error ns;
} ctx;

typedef enum { V_INT, V_NUM, V_BOOL, V_STR, V_PATH, V_ENUM, V_UNIT, V_MAP, V_FN } vtype;
typedef enum { S_NONE = 0, S_INT, S_LONG, S_SIZE, S_U64, S_DOUBLE, S_FLOAT, S_CHARS } stype;

typedef struct key_spec key_spec;
typedef int (*key_fn)(ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base);
typedef int (*post_fn)(ctx *c, const yt_node *map, const char *path, void *base);

struct key_spec {
  const char *key;
  vtype type;
  stype st;               /* how the value is stored at base + off */
  long off;               /* offset into the base struct (st != S_NONE) */
  size_t len;             /* S_CHARS: buffer size */
  double lo, hi;          /* numeric range; hi == 0 means no upper bound */
  int lo_open, hi_open;   /* exclusive bounds */
  const char *const *names; /* V_ENUM names, NULL-terminated, index = stored value */
  const int *name_issue;  /* V_ENUM: issue that supports each name (0: supported now) */
  unit_kind unit;         /* V_UNIT */
  const key_spec *sub;    /* V_MAP: the table of the nested mapping */
  post_fn post;           /* V_MAP: checks across the nested mapping's keys, after it */
  key_fn fn;              /* V_FN: custom value handler */
  int required;
  int issue;              /* the key itself is planned in this issue (0: supported now) */
  const char *what;       /* noun for not-supported answers */
};

#define OFF(T, f) .off = (long)offsetof(T, f)
#define END {.key = NULL}

/* ------------------------------------------------------------------ errors */

/* snprintf that truncates silently (messages are bounded on purpose). */
static void sfmt(char *buf, size_t len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, len, fmt, ap);
  va_end(ap);
}

static int vfail(ctx *c, const yt_node *at, const char *path, const char *fmt, va_list ap) {
  scn_error *e = c->err;
  char body[768];
  vsnprintf(body, sizeof body, fmt, ap);
  sfmt(e->file, sizeof e->file, "%s", at->file);
  e->line = at->line;
  e->col = at->col;
  sfmt(e->key, sizeof e->key, "%s", path);
  sfmt(e->msg, sizeof e->msg, "%s:%d:%d: %s: %s", at->file, at->line, at->col, path, body);
  return -1;
}

static int fail(ctx *c, const yt_node *at, const char *path, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfail(c, at, path, fmt, ap);
  va_end(ap);
  return -1;
}

/* Records a "not supported yet" answer if it is the first; validation goes on. */
static void not_supported(ctx *c, const yt_node *at, const char *path, int issue, const char *fmt, ...) {
  if (c->have_ns) return;
  scn_error *saved = c->err;
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  c->err = &c->ns;
  fail(c, at, path, "not supported yet: %s (planned in issue %d)", what, issue);
  c->err = saved;
  c->have_ns = 1;
}

/* How a node reads in "found ...". */
static const char *found(const yt_node *n, char *buf, size_t len) {
  if (n->kind == YT_MAP) return n->n ? "a mapping" : "an empty mapping {}";
  if (n->kind == YT_SEQ) return n->n ? "a sequence" : "an empty sequence []";
  if (yt_is_null(n)) return "nothing (null)";
  const char *t = n->text;
  int plain_word = !n->quoted && strspn(t, "0123456789+-.eE") == strlen(t);
  if (!n->quoted && (!strcmp(t, "true") || !strcmp(t, "false"))) plain_word = 1;
  sfmt(buf, len, plain_word ? "%.60s" : "\"%.60s\"", t);
  return buf;
}

static void join(char *out, size_t len, const char *path, const char *key) {
  if (path[0]) sfmt(out, len, "%s.%s", path, key);
  else sfmt(out, len, "%s", key);
}

static void list_keys(const key_spec *keys, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = 0;
  for (const key_spec *k = keys; k->key && used < len; k++) {
    int w = snprintf(buf + used, len - used, "%s%s", k == keys ? "" : ", ", k->key);
    if (w < 0) return;
    used += (size_t)w;
  }
}

static void list_names(const char *const *names, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = 0;
  for (int i = 0; names[i] && used < len; i++) {
    int w = snprintf(buf + used, len - used, "%s%s", i ? " | " : "", names[i]);
    if (w < 0) return;
    used += (size_t)w;
  }
}

/* ------------------------------------------------------------------ scalars */

/* The range a value failed: bounds of 1e6 and more are sanity limits, shown only when hit. */
static void range_text(const key_spec *k, double x, char *buf, size_t len) {
  int above = k->hi != 0 && (k->hi_open ? !(x < k->hi) : !(x <= k->hi));
  if (k->hi != 0 && k->hi < 1e6)
    sfmt(buf, len, " in %s%.15g, %.15g%s", k->lo_open ? "(" : "[", k->lo, k->hi, k->hi_open ? ")" : "]");
  else if (above)
    sfmt(buf, len, " %s %.15g", k->hi_open ? "<" : "<=", k->hi);
  else if (k->lo > -1e300)
    sfmt(buf, len, " %s %.15g", k->lo_open ? ">" : ">=", k->lo);
  else
    buf[0] = 0;
}

static int in_range(const key_spec *k, double v) {
  if (k->lo_open ? !(v > k->lo) : !(v >= k->lo)) return 0;
  if (k->hi != 0 && (k->hi_open ? !(v < k->hi) : !(v <= k->hi))) return 0;
  return 1;
}

static int is_int_text(const char *t) {
  size_t i = (t[0] == '+' || t[0] == '-') ? 1 : 0;
  return t[i] && strspn(t + i, "0123456789") == strlen(t + i);
}

static int is_num_text(const char *t) {
  size_t i = (t[0] == '+' || t[0] == '-') ? 1 : 0, d = 0;
  while (t[i] >= '0' && t[i] <= '9') { i++; d++; }
  if (t[i] == '.') { i++; while (t[i] >= '0' && t[i] <= '9') { i++; d++; } }
  if (!d) return 0;
  if (t[i] == 'e' || t[i] == 'E') {
    i++;
    if (t[i] == '+' || t[i] == '-') i++;
    if (!(t[i] >= '0' && t[i] <= '9')) return 0;
    while (t[i] >= '0' && t[i] <= '9') i++;
  }
  return t[i] == 0;
}

static int get_int(ctx *c, const key_spec *k, const yt_node *v, const char *path, long long *out) {
  char fb[80], rb[64];
  if (v->kind != YT_SCALAR || v->quoted || !is_int_text(v->text)) {
    range_text(k, k->lo, rb, sizeof rb);
    return fail(c, v, path, "expected an integer%s, found %s", rb, found(v, fb, sizeof fb));
  }
  errno = 0;
  long long x = strtoll(v->text, NULL, 10);
  range_text(k, errno ? 1e300 : (double)x, rb, sizeof rb);
  if (errno || !in_range(k, (double)x))
    return fail(c, v, path, "expected an integer%s, found %s", rb, v->text);
  *out = x;
  return 0;
}

static int get_num(ctx *c, const key_spec *k, const yt_node *v, const char *path, double *out) {
  char fb[80], rb[64];
  if (v->kind != YT_SCALAR || v->quoted || !is_num_text(v->text)) {
    range_text(k, k->lo, rb, sizeof rb);
    return fail(c, v, path, "expected a number%s, found %s", rb, found(v, fb, sizeof fb));
  }
  double x = strtod(v->text, NULL);
  /* A float32 setting is checked as the float it becomes: 1e-50 would be stored as 0. */
  if (k->st == S_FLOAT) {
    float f = (float)x;
    if (!isfinite(f) || (x != 0 && f == 0))
      return fail(c, v, path, "expected a number representable as float32 (about 1e-38 to 3e38 in "
                  "magnitude), found %s", v->text);
    x = f;
  }
  range_text(k, x, rb, sizeof rb);
  if (!isfinite(x) || !in_range(k, x)) return fail(c, v, path, "expected a number%s, found %s", rb, v->text);
  *out = x;
  return 0;
}

static int get_bool(ctx *c, const yt_node *v, const char *path, int *out) {
  char fb[80];
  if (v->kind == YT_SCALAR && !v->quoted) {
    if (!strcmp(v->text, "true") || !strcmp(v->text, "True") || !strcmp(v->text, "TRUE")) { *out = 1; return 0; }
    if (!strcmp(v->text, "false") || !strcmp(v->text, "False") || !strcmp(v->text, "FALSE")) { *out = 0; return 0; }
  }
  return fail(c, v, path, "expected true or false, found %s", found(v, fb, sizeof fb));
}

static int get_str(ctx *c, const yt_node *v, const char *path, const char **out) {
  char fb[80];
  if (v->kind != YT_SCALAR || yt_is_null(v) || !v->text[0])
    return fail(c, v, path, "expected a string, found %s", found(v, fb, sizeof fb));
  *out = v->text;
  return 0;
}

static int get_map(ctx *c, const yt_node *v, const char *path, const char *expected) {
  char fb[80];
  if (v->kind != YT_MAP)
    return fail(c, v, path, "expected %s, found %s", expected, found(v, fb, sizeof fb));
  return 0;
}

static int get_seq(ctx *c, const yt_node *v, const char *path, const char *expected) {
  char fb[80];
  if (v->kind != YT_SEQ || v->n == 0)
    return fail(c, v, path, "expected %s, found %s", expected, found(v, fb, sizeof fb));
  return 0;
}

/* Resolves REL against the scenario's directory and checks the file is there. */
static int resolve_file(ctx *c, const yt_node *v, const char *path, const char *rel, char *out, size_t len) {
  int w = (rel[0] == '/' || !strcmp(c->s->dir, "."))
              ? snprintf(out, len, "%s", rel)
              : snprintf(out, len, "%s/%s", c->s->dir, rel);
  if (w < 0 || (size_t)w >= len) return fail(c, v, path, "expected a shorter path, found %.60s...", rel);
  struct stat st;
  if (stat(out, &st) != 0 || !S_ISREG(st.st_mode))
    return fail(c, v, path, "file not found: %s (paths are relative to the scenario's directory)", out);
  return 0;
}

static void store(const key_spec *k, void *base, double d, long long i, const char *str) {
  if (k->st == S_NONE || !base) return;
  char *p = (char *)base + k->off;
  switch (k->st) {
  case S_INT: *(int *)p = (int)i; break;
  case S_LONG: *(long *)p = (long)i; break;
  case S_SIZE: *(size_t *)p = (size_t)i; break;
  case S_U64: *(uint64_t *)p = (uint64_t)i; break;
  case S_DOUBLE: *(double *)p = d; break;
  case S_FLOAT: *(float *)p = (float)d; break;
  case S_CHARS: snprintf(p, k->len, "%s", str); break;
  case S_NONE: break;
  }
}

static int walk_map(ctx *c, const yt_node *n, const char *path, const key_spec *keys, void *base);

/* Checks (and stores) one value against its key_spec. */
static int handle_value(ctx *c, const key_spec *k, const yt_node *kn, const yt_node *v,
                        const char *path, void *base) {
  char fb[80];
  switch (k->type) {
  case V_INT: {
    long long x = 0;
    if (get_int(c, k, v, path, &x)) return -1;
    store(k, base, (double)x, x, NULL);
    break;
  }
  case V_NUM: {
    double x = 0;
    if (get_num(c, k, v, path, &x)) return -1;
    store(k, base, x, 0, NULL);
    break;
  }
  case V_BOOL: {
    int b = 0;
    if (get_bool(c, v, path, &b)) return -1;
    store(k, base, 0, b, NULL);
    break;
  }
  case V_STR: {
    const char *t;
    if (get_str(c, v, path, &t)) return -1;
    if (k->st == S_CHARS && strlen(t) >= k->len)
      return fail(c, v, path, "expected a string of at most %zu characters, found %zu", k->len - 1, strlen(t));
    store(k, base, 0, 0, t);
    break;
  }
  case V_PATH: {
    const char *t;
    char resolved[SCN_PATH_MAX];
    if (get_str(c, v, path, &t)) return -1;
    if (resolve_file(c, v, path, t, resolved, sizeof resolved)) return -1;
    store(k, base, 0, 0, resolved);
    break;
  }
  case V_ENUM: {
    char lb[512];
    int i;
    list_names(k->names, lb, sizeof lb);
    if (v->kind != YT_SCALAR)
      return fail(c, v, path, "expected one of %s, found %s", lb, found(v, fb, sizeof fb));
    for (i = 0; k->names[i]; i++)
      if (!strcmp(k->names[i], v->text)) break;
    if (!k->names[i])
      return fail(c, v, path, "expected one of %s, found %s", lb, found(v, fb, sizeof fb));
    store(k, base, 0, i, NULL);
    if (k->name_issue && k->name_issue[i])
      not_supported(c, v, path, k->name_issue[i], "%s \"%s\"", k->what ? k->what : k->key, v->text);
    break;
  }
  case V_UNIT: {
    double x = 0;
    char why[512];
    if (v->kind != YT_SCALAR)
      return fail(c, v, path, "expected %s, found %s", units_expected(k->unit), found(v, fb, sizeof fb));
    if (units_parse(k->unit, v->text, &x, why, sizeof why)) return fail(c, v, path, "%s", why);
    if (!in_range(k, x)) {
      const char *u = units_base(k->unit);
      if (k->lo == 0 && k->lo_open && !(x > 0))
        return fail(c, v, path, "expected %s greater than zero, found %s", units_expected(k->unit), v->text);
      if (x < k->lo || (k->lo_open && !(x > k->lo)))
        return fail(c, v, path, "expected at least %g %s, found %s", k->lo, u, v->text);
      return fail(c, v, path, "expected at most %g %s, found %s", k->hi, u, v->text);
    }
    store(k, base, x, 0, NULL);
    break;
  }
  case V_MAP: {
    char ex[600], kl[500];
    list_keys(k->sub, kl, sizeof kl);
    sfmt(ex, sizeof ex, "a mapping with keys %s", kl);
    if (get_map(c, v, path, ex)) return -1;
    if (walk_map(c, v, path, k->sub, base)) return -1;
    if (k->post && k->post(c, v, path, base)) return -1;
    break;
  }
  case V_FN:
    if (k->fn(c, k, v, path, base)) return -1;
    break;
  }
  if (k->issue) not_supported(c, kn, path, k->issue, "%s", k->what ? k->what : path);
  return 0;
}

static int walk_map(ctx *c, const yt_node *n, const char *path, const key_spec *keys, void *base) {
  char sub[256], kl[600];
  for (int i = 0; i < n->n; i++) {
    const yt_node *kn = n->keys[i];
    const key_spec *k;
    for (k = keys; k->key; k++)
      if (!strcmp(k->key, kn->text)) break;
    join(sub, sizeof sub, path, kn->text);
    if (!k->key) {
      list_keys(keys, kl, sizeof kl);
      return fail(c, kn, sub, "unknown key \"%s\" (valid keys%s%s: %s)", kn->text,
                  path[0] ? " in " : " at the top level", path, kl);
    }
    if (handle_value(c, k, kn, n->items[i], sub, base)) return -1;
  }
  for (const key_spec *k = keys; k->key; k++) {
    if (!k->required || yt_get(n, k->key)) continue;
    join(sub, sizeof sub, path, k->key);
    return fail(c, n, sub, "missing required key \"%s\"", k->key);
  }
  return 0;
}

/* A mapping whose "kind" selects its table. */
typedef struct variant {
  const char *kind;
  const key_spec *keys;
} variant;

static int walk_variant(ctx *c, const yt_node *v, const char *path, const variant *vs, void *base,
                        int *which) {
  char sub[256], names[400], fb[80];
  size_t used = 0;
  names[0] = 0;
  for (int i = 0; vs[i].kind; i++)
    used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", i ? " | " : "", vs[i].kind);
  char ex[500];
  sfmt(ex, sizeof ex, "a mapping with kind: %s", names);
  if (get_map(c, v, path, ex)) return -1;
  const yt_node *kind = yt_get(v, "kind");
  join(sub, sizeof sub, path, "kind");
  if (!kind) return fail(c, v, sub, "missing required key \"kind\" (%s)", names);
  for (int i = 0; vs[i].kind; i++) {
    if (kind->kind != YT_SCALAR || strcmp(vs[i].kind, kind->text)) continue;
    *which = i;
    return walk_map(c, v, path, vs[i].keys, base);
  }
  return fail(c, kind, sub, "expected one of %s, found %s", names, found(kind, fb, sizeof fb));
}

/* ------------------------------------------------------------------ enums */

static const char *const NUMERICS[] = {"off", "full", NULL};
static const int NUMERICS_ISSUE[] = {0, 0};
static const char *const STRATEGIES[] = {"default", "one_device", "mirrored", "multi_worker_mirrored",
                                         "tpu", "tpu_v1", "parameter_server", "gnn_runner_tpu", NULL};
static const int STRATEGIES_ISSUE[] = {0, 0, 0, 0, 0, 0, 0, 0};
static const char *const TOPOLOGIES[] = {"star", "ring", "torus2d", "torus3d", "fat_tree", NULL};
static const int TOPOLOGIES_ISSUE[] = {0, 0, 0, 0, 0};
/* Indexed by scn_allreduce. tree is binary; double_binary_tree is NCCL's pair of trees. */
static const char *const ALGORITHMS[] = {"auto", "ring", "bidirectional_ring", "torus", "tree",
                                         "halving_doubling", "double_binary_tree", NULL};
static const int ALGORITHMS_ISSUE[] = {0, 0, 0, 0, 0, 0, 0};
static const char *const ACTIVATIONS[] = {"none", "relu", "sigmoid", "tanh", "softmax", NULL};
static const char *const COMBINERS[] = {"mean", "sum", NULL};
static const char *const LOSSES[] = {"sparse_categorical_crossentropy", NULL};
static const char *const INITS[] = {"glorot_uniform", NULL};
static const char *const REDUCTIONS[] = {"sum", "per_replica_mean", "global_batch", NULL};
static const char *const DISTRIBUTE[] = {"dataset", "function", NULL};
static const int DISTRIBUTE_ISSUE[] = {0, 4};
static const char *const SHARD[] = {"auto", "file", "data", "off", NULL};
static const int SHARD_ISSUE[] = {0, 4, 4, 4};
static const char *const FORMATS[] = {"png", "svg", "pdf", NULL};
static const char *const PLOTS[] = {"loss", "step_time", "timeline", "hbm", "heatmap", "faults", NULL};
static const char *const COLLECTIVES[] = {"all_reduce", "reduce_scatter", "all_gather", "broadcast",
                                          "all_to_all", NULL};
static const char *const GROUPS[] = {"workers", "tpu", NULL};
static const char *const COMPARATORS[] = {"lt", "le", "gt", "ge", "eq", "ne", NULL};
/* summary.json fields an expect can test (host-independent ones). */
static const char *const METRICS[] = {"final_loss", "sim_time_s", "steps_completed", "examples_per_s",
                                      "hbm_peak_bytes", "hbm_capacity_bytes", "preemptions", "restarts",
                                      "lost_steps", "retried_closures", "lost_updates", "events", "failures",
                                      "checkpoint_time_s", "downtime_s", "goodput", "duplicated_updates",
                                      "evaluations", "final_eval_loss", "worker_utilization", NULL};

/* ------------------------------------------------------------------ custom handlers */

static const key_spec ACCEL_KEYS[] = {
  {.key = "count", .type = V_INT, .st = S_INT, OFF(scn_machine, accelerators), .lo = 1, .required = 1},
  {.key = "peak", .type = V_UNIT, .unit = UNIT_FLOPS, .st = S_DOUBLE, OFF(scn_machine, accel_peak_flops), .lo_open = 1, .required = 1},
  {.key = "hbm", .type = V_UNIT, .unit = UNIT_SIZE, .st = S_DOUBLE, OFF(scn_machine, accel_hbm_bytes), .lo_open = 1, .required = 1},
  {.key = "hbm_bandwidth", .type = V_UNIT, .unit = UNIT_BANDWIDTH, .st = S_DOUBLE, OFF(scn_machine, accel_hbm_bytes_per_s), .lo_open = 1, .required = 1},
  {.key = "link", .type = V_UNIT, .unit = UNIT_BANDWIDTH, .st = S_DOUBLE, OFF(scn_machine, accel_link_bytes_per_s), .lo_open = 1, .required = 1},
  {.key = "link_latency", .type = V_UNIT, .unit = UNIT_DURATION, .st = S_DOUBLE, OFF(scn_machine, accel_link_latency_s), .hi = 1},
  {.key = "efficiency", .type = V_NUM, .st = S_DOUBLE, OFF(scn_machine, accel_efficiency), .lo = 0, .lo_open = 1, .hi = 1},
  {.key = "workspace", .type = V_UNIT, .unit = UNIT_SIZE, .st = S_DOUBLE, OFF(scn_machine, accel_workspace_bytes)},
  END};
static const key_spec MACHINE_KEYS[] = {
  {.key = "cpus", .type = V_INT, .st = S_INT, OFF(scn_machine, cpus), .lo = 1, .hi = 4096, .required = 1},
  {.key = "flops", .type = V_UNIT, .unit = UNIT_FLOPS, .st = S_DOUBLE, OFF(scn_machine, flops), .lo = 1e6, .required = 1},
  {.key = "ram", .type = V_UNIT, .unit = UNIT_SIZE, .st = S_DOUBLE, OFF(scn_machine, ram_bytes), .lo_open = 1},
  {.key = "nic", .type = V_UNIT, .unit = UNIT_BANDWIDTH, .st = S_DOUBLE, OFF(scn_machine, nic_bytes_per_s), .lo_open = 1},
  {.key = "memory_bandwidth", .type = V_UNIT, .unit = UNIT_BANDWIDTH, .st = S_DOUBLE, OFF(scn_machine, mem_bytes_per_s), .lo_open = 1},
  {.key = "accelerators", .type = V_MAP, .sub = ACCEL_KEYS},
  END};

/* machine: a catalogue name or {cpus, flops, ram, nic, accelerators}. */
static int machine_fn(ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  scn_machine m;
  char fb[80];
  memset(&m, 0, sizeof m);
  if (v->kind == YT_MAP) {
    m.ram_bytes = m.nic_bytes_per_s = m.mem_bytes_per_s = -1;
    m.accel_efficiency = m.accel_link_latency_s = m.accel_workspace_bytes = -1;
    if (walk_map(c, v, path, MACHINE_KEYS, &m)) return -1;
    sfmt(m.type, sizeof m.type, "custom");
    machines_fill_defaults(&m);
  } else if (v->kind == YT_SCALAR && !yt_is_null(v)) {
    if (machines_lookup(v->text, &m)) {
      char list[400];
      machines_list(list, sizeof list);
      return fail(c, v, path, "unknown machine type \"%s\" (known: %s; or a mapping {cpus, flops, ram, nic, accelerators})",
                  v->text, list);
    }
  } else {
    return fail(c, v, path, "expected a machine type such as n2-standard-8 or a mapping {cpus, flops, ...}, found %s",
                found(v, fb, sizeof fb));
  }
  if (k->st != S_NONE) memcpy((char *)base + k->off, &m, sizeof m);
  return 0;
}

/* cluster.tpu.type: a slice name of the sim/tpu.h catalogue (its message lists valid sizes). */
static int tpu_type_fn(ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  const sim_tpu_generation *g;
  const char *t;
  int chips, dims[3];
  char why[512];
  (void)k;
  if (get_str(c, v, path, &t)) return -1;
  if (sim_tpu_slice_parse(t, &g, &chips, dims, why, sizeof why)) return fail(c, v, path, "%s", why);
  scenario *s = base;
  sfmt(s->tpu_type, sizeof s->tpu_type, "%s", t);
  memcpy(s->tpu_dims, dims, sizeof s->tpu_dims);
  return 0;
}

static const key_spec TPU_OVERRIDE_KEYS[] = {
  {.key = "hbm", .type = V_UNIT, .unit = UNIT_SIZE, .lo_open = 1, .st = S_DOUBLE, OFF(scenario, tpu_hbm_bytes)},
  {.key = "ici_bandwidth", .type = V_UNIT, .unit = UNIT_BANDWIDTH, .lo_open = 1, .st = S_DOUBLE,
   OFF(scenario, tpu_ici_bytes_per_s)},
  {.key = "peak_bf16", .type = V_UNIT, .unit = UNIT_FLOPS, .lo = 1e6, .st = S_DOUBLE, OFF(scenario, tpu_peak_flops)},
  {.key = "efficiency", .type = V_NUM, .lo = 0, .lo_open = 1, .hi = 1, .st = S_DOUBLE, OFF(scenario, tpu_efficiency)},
  END};
static const key_spec TPU_KEYS[] = {
  {.key = "type", .type = V_FN, .fn = tpu_type_fn, .required = 1},
  {.key = "topology", .type = V_STR},
  {.key = "overrides", .type = V_MAP, .sub = TPU_OVERRIDE_KEYS},
  END};

/* The topology AxB or AxBxC must fit the type (sim_tpu_topology_parse says how). */
static int tpu_post(ctx *c, const yt_node *map, const char *path, void *base) {
  const yt_node *topo = yt_get(map, "topology"), *type = yt_get(map, "type");
  const sim_tpu_generation *g;
  int chips, dims[3];
  char sub[256], why[512];
  if (!topo || sim_tpu_slice_parse(type->text, &g, &chips, dims, NULL, 0)) return 0;
  join(sub, sizeof sub, path, "topology");
  if (sim_tpu_topology_parse(g, chips, topo->text, dims, why, sizeof why)) return fail(c, topo, sub, "%s", why);
  memcpy(((scenario *)base)->tpu_dims, dims, sizeof dims);
  return 0;
}

/* tf_config: TF_CONFIG as TensorFlow reads it from the environment: {"cluster": {"chief": [...],
** "worker": [...], "ps": [...], "evaluator": [...]}, "task": {"type": ..., "index": ...}}, as a file
** name, inline JSON text or an inline mapping (JSON is YAML, so positions inside a JSON file are
** reported as that file's line:col). Only the number of tasks of each job matters to the
** simulation; the addresses are checked to be strings. */
static const char *const TF_JOBS[] = {"chief", "worker", "ps", "evaluator", NULL};

static int tf_config_cluster(ctx *c, const yt_node *cl, const char *path, int counts[4]) {
  char sub[256], item[280];
  if (get_map(c, cl, path, "a mapping of jobs (chief, worker, ps, evaluator) to lists of addresses")) return -1;
  if (cl->n == 0) return fail(c, cl, path, "ValueError: the cluster spec is empty");
  for (int i = 0; i < cl->n; i++) {
    int job = -1;
    for (int j = 0; TF_JOBS[j]; j++)
      if (!strcmp(TF_JOBS[j], cl->keys[i]->text)) job = j;
    join(sub, sizeof sub, path, cl->keys[i]->text);
    if (job < 0) return fail(c, cl->keys[i], sub, "unknown job \"%s\" (jobs: chief, worker, ps, evaluator)", cl->keys[i]->text);
    const yt_node *tasks = cl->items[i];
    if (get_seq(c, tasks, sub, "a non-empty list of task addresses such as [\"host:2222\"]")) return -1;
    if ((job == 0 || job == 3) && tasks->n > 1)
      return fail(c, tasks, sub, "expected one %s task, found %d", TF_JOBS[job], tasks->n);
    for (int t = 0; t < tasks->n; t++) {
      const char *addr;
      sfmt(item, sizeof item, "%s[%d]", sub, t);
      if (get_str(c, tasks->items[t], item, &addr)) return -1;
    }
    counts[job] = tasks->n;
  }
  return 0;
}

/* Records the task's job (scenario.tf_config_task); ps_checks refuses a worker or ps coordinator. */
static int tf_config_task(ctx *c, const yt_node *task, const char *path, const int counts[4]) {
  static const key_spec one = {.key = "index", .type = V_INT, .lo = 0, .hi = 100000};
  char sub[256];
  const char *type = "chief";
  long long index = 0;
  if (get_map(c, task, path, "a mapping {type: chief, index: 0}")) return -1;
  for (int i = 0; i < task->n; i++) {
    const char *k = task->keys[i]->text;
    join(sub, sizeof sub, path, k);
    if (!strcmp(k, "type")) { if (get_str(c, task->items[i], sub, &type)) return -1; }
    else if (!strcmp(k, "index")) { if (get_int(c, &one, task->items[i], sub, &index)) return -1; }
    else return fail(c, task->keys[i], sub, "unknown key \"%s\" (task keys: type, index)", k);
  }
  int job = -1;
  for (int j = 0; TF_JOBS[j]; j++)
    if (!strcmp(TF_JOBS[j], type)) job = j;
  join(sub, sizeof sub, path, "type");
  const yt_node *at = yt_get(task, "type") ? yt_get(task, "type") : task;
  if (job < 0) return fail(c, at, sub, "unknown job \"%s\" (jobs: chief, worker, ps, evaluator)", type);
  c->s->tf_config_task = job;
  join(sub, sizeof sub, path, "index");
  if (index >= counts[job])
    return fail(c, yt_get(task, "index") ? yt_get(task, "index") : task, sub,
                "expected a task index below the %d %s task(s) of the cluster, found %lld", counts[job], type, index);
  return 0;
}

static int tf_config_walk(ctx *c, const yt_node *v, const char *path) {
  char sub[256];
  int counts[4] = {0, 0, 0, 0};
  const yt_node *cl = yt_get(v, "cluster");
  if (get_map(c, v, path, "TF_CONFIG: a mapping {cluster: {...}, task: {type, index}}")) return -1;
  for (int i = 0; i < v->n; i++) {
    const char *k = v->keys[i]->text;
    if (!strcmp(k, "cluster") || !strcmp(k, "task") || !strcmp(k, "environment") || !strcmp(k, "rpc_layer")) continue;
    join(sub, sizeof sub, path, k);
    return fail(c, v->keys[i], sub, "unknown key \"%s\" (TF_CONFIG keys: cluster, task, environment, rpc_layer)", k);
  }
  join(sub, sizeof sub, path, "cluster");
  if (!cl) return fail(c, v, sub, "missing required key \"cluster\"");
  if (tf_config_cluster(c, cl, sub, counts)) return -1;
  join(sub, sizeof sub, path, "task");
  if (yt_get(v, "task") && tf_config_task(c, yt_get(v, "task"), sub, counts)) return -1;
  scenario *s = c->s;
  s->tf_config = 1;
  s->has_chief = counts[0];
  s->workers = counts[1];
  s->ps = counts[2];
  s->has_evaluator = counts[3];
  return 0;
}

static int tf_config_fn(ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  char resolved[SCN_PATH_MAX];
  const char *t;
  yt_error ye;
  (void)k; (void)base;
  if (v->kind == YT_MAP) return tf_config_walk(c, v, path);
  if (get_str(c, v, path, &t)) return -1;
  yt_doc *d;
  if (t[0] == '{') {
    d = yt_parse_text(t, v->file, v->line - 1, v->col - 1, &ye);
  } else {
    if (resolve_file(c, v, path, t, resolved, sizeof resolved)) return -1;
    d = yt_parse_file(resolved, &ye);
  }
  if (!d) return fail(c, v, path, "cannot read TF_CONFIG: %s:%d:%d: %s", ye.file, ye.line, ye.col, ye.msg);
  int rc = d->root ? tf_config_walk(c, d->root, path) : fail(c, v, path, "TF_CONFIG is empty");
  yt_doc_free(d);
  return rc;
}

static const key_spec WORKER_KEYS[] = {
  {.key = "count", .type = V_INT, .st = S_INT, OFF(scenario, workers), .lo = 1, .hi = 100000},
  {.key = "machine", .type = V_FN, .fn = machine_fn, .st = S_CHARS, OFF(scenario, worker_machine)},
  END};
static const key_spec PS_KEYS[] = {
  {.key = "count", .type = V_INT, .st = S_INT, OFF(scenario, ps), .lo = 1, .hi = 100000},
  {.key = "machine", .type = V_FN, .fn = machine_fn, .st = S_CHARS, OFF(scenario, ps_machine)},
  END};
static const key_spec CHIEF_KEYS[] = {
  {.key = "machine", .type = V_FN, .fn = machine_fn, .st = S_CHARS, OFF(scenario, chief_machine)},
  END};
static const key_spec EVALUATOR_KEYS[] = {
  {.key = "machine", .type = V_FN, .fn = machine_fn, .st = S_CHARS, OFF(scenario, evaluator_machine)},
  {.key = "steps", .type = V_INT, .st = S_LONG, OFF(scenario, eval_steps), .lo = 1, .hi = 1e7},
  {.key = "poll_interval", .type = V_UNIT, .unit = UNIT_DURATION, .lo_open = 1, .st = S_DOUBLE,
   OFF(scenario, eval_poll_s), .hi = 86400},
  END};
static const key_spec FABRIC_KEYS[] = {
  {.key = "topology", .type = V_ENUM, .names = TOPOLOGIES, .name_issue = TOPOLOGIES_ISSUE, .st = S_INT,
   OFF(scenario, fabric), .what = "fabric topology"},
  {.key = "link_bandwidth", .type = V_UNIT, .unit = UNIT_BANDWIDTH, .lo_open = 1, .st = S_DOUBLE,
   OFF(scenario, fabric_bytes_per_s)},
  {.key = "latency", .type = V_UNIT, .unit = UNIT_DURATION, .st = S_DOUBLE, OFF(scenario, fabric_latency_s), .hi = 1},
  END};
static const key_spec CLUSTER_KEYS[] = {
  {.key = "tpu", .type = V_MAP, .sub = TPU_KEYS, .post = tpu_post},
  {.key = "workers", .type = V_MAP, .sub = WORKER_KEYS},
  {.key = "ps", .type = V_MAP, .sub = PS_KEYS},
  {.key = "chief", .type = V_MAP, .sub = CHIEF_KEYS},
  {.key = "evaluator", .type = V_MAP, .sub = EVALUATOR_KEYS},
  {.key = "fabric", .type = V_MAP, .sub = FABRIC_KEYS},
  {.key = "tf_config", .type = V_FN, .fn = tf_config_fn},
  END};

/* A sequence of exactly 4 integers >= 1 (device_assignment shapes), stored as int[4] at k->off. */
static int int4_fn(ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  static const key_spec one = {.key = "", .type = V_INT, .lo = 1, .hi = 4096};
  char fb[80], sub[256];
  long long x;
  if (v->kind != YT_SEQ || v->n != 4)
    return fail(c, v, path, "expected a sequence of 4 integers such as [1, 1, 1, 2], found %s", found(v, fb, sizeof fb));
  for (int i = 0; i < v->n; i++) {
    sfmt(sub, sizeof sub, "%s[%d]", path, i);
    if (get_int(c, &one, v->items[i], sub, &x)) return -1;
    ((int *)((char *)base + k->off))[i] = (int)x;
  }
  return 0;
}

/* strategy.devices: [GPU:0, CPU:0, ...] */
static int devices_fn(ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  char sub[256];
  scenario *s = base;
  (void)k;
  if (get_seq(c, v, path, "a sequence of devices such as [GPU:0, GPU:1]")) return -1;
  if (v->n > SCN_MAX_DEVICES)
    return fail(c, v, path, "expected at most %d devices, found %d", SCN_MAX_DEVICES, v->n);
  for (int i = 0; i < v->n; i++) {
    const yt_node *d = v->items[i];
    const char *t;
    sfmt(sub, sizeof sub, "%s[%d]", path, i);
    if (get_str(c, d, sub, &t)) return -1;
    if ((strncmp(t, "GPU:", 4) && strncmp(t, "CPU:", 4) && strncmp(t, "TPU:", 4)) || !is_int_text(t + 4) ||
        t[4] == '-' || t[4] == '+')
      return fail(c, d, sub, "expected a device such as GPU:0, CPU:0 or TPU:3, found \"%s\"", t);
    if (strlen(t) >= sizeof s->devices[0]) return fail(c, d, sub, "device index too large: \"%s\"", t);
    sfmt(s->devices[s->ndevices++], sizeof s->devices[0], "%s", t);
  }
  return 0;
}

#define PART_SHARDS(name, req) {.key = name, .type = V_INT, .lo = 1, .hi = 100000, .st = S_INT, \
                                     OFF(scenario, partitioner_shards), .required = req}
#define PART_BYTES(name, req) {.key = name, .type = V_UNIT, .unit = UNIT_SIZE, .lo = 1, .st = S_DOUBLE, \
                                    OFF(scenario, partitioner_bytes), .required = req}
static const key_spec PART_FIXED[] = {{.key = "kind", .type = V_STR}, PART_SHARDS("num_shards", 1), END};
static const key_spec PART_MIN[] = {
  {.key = "kind", .type = V_STR}, PART_BYTES("min_shard_bytes", 0), PART_SHARDS("max_shards", 0), END};
static const key_spec PART_MAX[] = {
  {.key = "kind", .type = V_STR}, PART_BYTES("max_shard_bytes", 1), PART_SHARDS("max_shards", 0), END};
static const variant PARTITIONERS[] = {
  {"fixed_shards", PART_FIXED}, {"min_size", PART_MIN}, {"max_size", PART_MAX}, {NULL, NULL}};

/* MinSizePartitioner's defaults are TF's: min_shard_bytes 256 KiB, max_shards 1. */
static int partitioner_fn(ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  int which;
  scenario *s = base;
  (void)k;
  s->partitioner_shards = 0;
  s->partitioner_bytes = 256 * 1024;
  if (walk_variant(c, v, path, PARTITIONERS, s, &which)) return -1;
  s->partitioner = (scn_partitioner_kind)(which + 1);
  if (s->partitioner == SCN_PARTITIONER_MIN_SIZE && s->partitioner_shards == 0) s->partitioner_shards = 1;
  return 0;
}

static const key_spec DEVICE_ASSIGNMENT_KEYS[] = {
  {.key = "computation_shape", .type = V_FN, .fn = int4_fn, OFF(scenario, da_shape), .required = 1},
  {.key = "computation_stride", .type = V_FN, .fn = int4_fn, OFF(scenario, da_stride)},
  {.key = "num_replicas", .type = V_INT, .lo = 1, .hi = 100000, .st = S_INT, OFF(scenario, da_num_replicas)},
  END};
static const key_spec STRATEGY_KEYS[] = {
  {.key = "kind", .type = V_ENUM, .names = STRATEGIES, .name_issue = STRATEGIES_ISSUE, .st = S_INT,
   OFF(scenario, strategy), .what = "strategy kind"},
  {.key = "device_assignment", .type = V_MAP, .sub = DEVICE_ASSIGNMENT_KEYS},
  {.key = "spmd_xla_partitioning", .type = V_BOOL, .st = S_INT, OFF(scenario, spmd)},
  {.key = "steps_per_run", .type = V_INT, .lo = 1, .hi = 1e9, .st = S_INT, OFF(scenario, steps_per_run)},
  {.key = "num_cores", .type = V_INT, .lo = 1, .hi = 100000, .st = S_INT, OFF(scenario, num_cores)},
  {.key = "host_round_trip", .type = V_UNIT, .unit = UNIT_DURATION, .hi = 3600, .st = S_DOUBLE,
   OFF(scenario, host_round_trip_s)},
  {.key = "variable_partitioner", .type = V_FN, .fn = partitioner_fn},
  {.key = "devices", .type = V_FN, .fn = devices_fn},
  {.key = "all_reduce", .type = V_ENUM, .names = ALGORITHMS, .name_issue = ALGORITHMS_ISSUE, .st = S_INT,
   OFF(scenario, all_reduce), .what = "all-reduce algorithm"},
  END};

/* model.input: {features: N} or {ids: N, vocab: V}. */
static const key_spec INPUT_KEYS[] = {
  {.key = "features", .type = V_INT, .st = S_INT, OFF(scenario, input_features), .lo = 1, .hi = 1e8},
  {.key = "ids", .type = V_INT, .st = S_INT, OFF(scenario, input_ids), .lo = 1, .hi = 1e6},
  {.key = "vocab", .type = V_INT, .st = S_INT, OFF(scenario, input_vocab), .lo = 1, .hi = 2e9},
  END};

static int input_post(ctx *c, const yt_node *map, const char *path, void *base) {
  const yt_node *f = yt_get_key(map, "features"), *ids = yt_get_key(map, "ids"), *vocab = yt_get_key(map, "vocab");
  char sub[256];
  (void)base;
  if (f && ids) {
    const yt_node *later = (ids->line > f->line || (ids->line == f->line && ids->col > f->col)) ? ids : f;
    join(sub, sizeof sub, path, later->text);
    return fail(c, later, sub, "give either features (float input) or ids with vocab (integer input), not both");
  }
  if (!f && !ids) {
    join(sub, sizeof sub, path, "features");
    return fail(c, map, sub, "missing required key \"features\" (or \"ids\" with \"vocab\")");
  }
  if (ids && !vocab) {
    join(sub, sizeof sub, path, "vocab");
    return fail(c, map, sub, "missing required key \"vocab\" (ids need their vocabulary size)");
  }
  if (f && vocab) {
    join(sub, sizeof sub, path, "vocab");
    return fail(c, vocab, sub, "vocab goes with ids, not with features");
  }
  return 0;
}

/* model.layers[i].*.logical_device: stored per layer in the scenario (a placement, not a layer
** property: models/ knows nothing of devices). base is the layer's md_layer_spec. */
static int logical_device_fn(ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  static const key_spec range = {.key = "", .type = V_INT, .lo = 0, .hi = 4096};
  long long x;
  (void)k;
  if (get_int(c, &range, v, path, &x)) return -1;
  c->s->logical_device[(md_layer_spec *)base - c->s->layers] = (int)x;
  return 0;
}

static const key_spec DENSE_KEYS[] = {
  {.key = "units", .type = V_INT, .st = S_INT, OFF(md_layer_spec, units), .lo = 1, .hi = 1e7, .required = 1},
  {.key = "activation", .type = V_ENUM, .names = ACTIVATIONS, .st = S_INT, OFF(md_layer_spec, activation)},
  {.key = "use_bias", .type = V_BOOL, .st = S_INT, OFF(md_layer_spec, use_bias)},
  {.key = "logical_device", .type = V_FN, .fn = logical_device_fn},
  END};
static const key_spec EMBEDDING_KEYS[] = {
  {.key = "vocab", .type = V_INT, .st = S_INT, OFF(md_layer_spec, vocab), .lo = 1, .hi = 2e9, .required = 1},
  {.key = "dim", .type = V_INT, .st = S_INT, OFF(md_layer_spec, dim), .lo = 1, .hi = 1e6, .required = 1},
  {.key = "combiner", .type = V_ENUM, .names = COMBINERS, .st = S_INT, OFF(md_layer_spec, combiner)},
  {.key = "logical_device", .type = V_FN, .fn = logical_device_fn},
  END};
static const key_spec LAYER_KINDS[] = {
  {.key = "dense", .type = V_MAP, .sub = DENSE_KEYS},
  {.key = "embedding", .type = V_MAP, .sub = EMBEDDING_KEYS},
  END};

static int layers_fn(ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  scenario *s = c->s;
  char sub[256], fb[80];
  (void)k; (void)base;
  if (get_seq(c, v, path, "a sequence of layers such as [{dense: {units: 2}}]")) return -1;
  if (v->n > SCN_MAX_LAYERS)
    return fail(c, v->items[SCN_MAX_LAYERS], path, "expected at most %d layers, found %d", SCN_MAX_LAYERS, v->n);
  for (int i = 0; i < v->n; i++) {
    const yt_node *item = v->items[i];
    md_layer_spec *l = &s->layers[i];
    sfmt(sub, sizeof sub, "%s[%d]", path, i);
    if (item->kind != YT_MAP || item->n != 1)
      return fail(c, item, sub, "expected one layer as {dense: {...}} or {embedding: {...}}, found %s",
                  item->kind == YT_MAP ? "a mapping with several keys" : found(item, fb, sizeof fb));
    memset(l, 0, sizeof *l);
    l->use_bias = 1;
    l->activation = MD_ACT_NONE;
    l->combiner = MD_COMBINER_MEAN;
    if (walk_map(c, item, sub, LAYER_KINDS, l)) return -1;
    l->kind = strcmp(item->keys[0]->text, "dense") ? MD_LAYER_EMBEDDING : MD_LAYER_DENSE;
    if (l->kind == MD_LAYER_EMBEDDING && i > 0)
      return fail(c, item->keys[0], sub, "an embedding must be the first layer (it reads the integer ids of model.input), found it as layer %d", i);
  }
  s->nlayers = v->n;
  return 0;
}

static const key_spec LOSS_KEYS[] = {
  {.key = "kind", .type = V_ENUM, .names = LOSSES},
  {.key = "from_logits", .type = V_BOOL, .st = S_INT, OFF(scenario, from_logits)},
  END};
static const key_spec INIT_KEYS[] = {
  {.key = "file", .type = V_PATH, .st = S_CHARS, OFF(scenario, init_file), .len = SCN_PATH_MAX},
  {.key = "kind", .type = V_ENUM, .names = INITS},
  END};

static int init_post(ctx *c, const yt_node *map, const char *path, void *base) {
  char sub[256];
  (void)base;
  if (yt_get(map, "file") && yt_get(map, "kind")) {
    join(sub, sizeof sub, path, "kind");
    return fail(c, yt_get_key(map, "kind"), sub, "give either file (weights from a CSV) or kind: glorot_uniform, not both");
  }
  if (!yt_get(map, "file") && !yt_get(map, "kind")) {
    join(sub, sizeof sub, path, "kind");
    return fail(c, map, sub, "missing required key \"kind\" (glorot_uniform) or \"file\"");
  }
  return 0;
}

static const key_spec MODEL_KEYS[] = {
  {.key = "input", .type = V_MAP, .sub = INPUT_KEYS, .post = input_post, .required = 1},
  {.key = "layers", .type = V_FN, .fn = layers_fn, .required = 1},
  {.key = "loss", .type = V_MAP, .sub = LOSS_KEYS},
  {.key = "init", .type = V_MAP, .sub = INIT_KEYS, .post = init_post},
  END};

/* optimizer: the keys depend on the kind. */
#define LR {.key = "learning_rate", .type = V_NUM, .st = S_FLOAT, OFF(md_optimizer_spec, learning_rate), .lo = 0, .lo_open = 1}
#define EPS {.key = "epsilon", .type = V_NUM, .st = S_FLOAT, OFF(md_optimizer_spec, epsilon), .lo = 0}
static const key_spec SGD_KEYS[] = {
  {.key = "kind", .type = V_STR}, LR,
  {.key = "momentum", .type = V_NUM, .st = S_FLOAT, OFF(md_optimizer_spec, momentum), .lo = 0, .hi = 1},
  {.key = "nesterov", .type = V_BOOL, .st = S_INT, OFF(md_optimizer_spec, nesterov)},
  END};
static const key_spec ADAM_KEYS[] = {
  {.key = "kind", .type = V_STR}, LR,
  {.key = "beta_1", .type = V_NUM, .st = S_FLOAT, OFF(md_optimizer_spec, beta_1), .lo = 0, .hi = 1, .hi_open = 1},
  {.key = "beta_2", .type = V_NUM, .st = S_FLOAT, OFF(md_optimizer_spec, beta_2), .lo = 0, .hi = 1, .hi_open = 1},
  EPS, END};
static const key_spec ADAGRAD_KEYS[] = {
  {.key = "kind", .type = V_STR}, LR,
  {.key = "initial_accumulator_value", .type = V_NUM, .st = S_FLOAT,
   OFF(md_optimizer_spec, initial_accumulator_value), .lo = 0},
  EPS, END};
static const variant OPTIMIZERS[] = {
  {"sgd", SGD_KEYS}, {"adam", ADAM_KEYS}, {"adagrad", ADAGRAD_KEYS}, {NULL, NULL}};

/* The Keras defaults (models/optimizer.c has md_optimizer_spec_defaults with the same figures;
** the loader keeps its own so it does not depend on the numerics layer being linked). */
static void optimizer_defaults(md_optimizer_spec *o, md_optimizer_kind kind) {
  memset(o, 0, sizeof *o);
  o->kind = kind;
  o->learning_rate = kind == MD_OPT_SGD ? 0.01f : 0.001f;
  o->beta_1 = 0.9f;
  o->beta_2 = 0.999f;
  o->epsilon = 1e-7f;
  o->initial_accumulator_value = 0.1f;
}

static int optimizer_fn(ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  int which = 0;
  (void)k; (void)base;
  const yt_node *kind = yt_get(v, "kind");
  if (kind && kind->kind == YT_SCALAR)
    for (int i = 0; OPTIMIZERS[i].kind; i++)
      if (!strcmp(OPTIMIZERS[i].kind, kind->text)) optimizer_defaults(&c->s->optimizer, (md_optimizer_kind)i);
  if (walk_variant(c, v, path, OPTIMIZERS, &c->s->optimizer, &which)) return -1;
  c->s->optimizer.kind = (md_optimizer_kind)which;
  return 0;
}

/* dataset.shuffle: false, or {buffer: N} (issue 4). */
static const key_spec SHUFFLE_KEYS[] = {
  {.key = "buffer", .type = V_INT, .lo = 1, .hi = 1e12, .required = 1},
  END};
static int shuffle_fn(ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  char fb[80];
  (void)k; (void)base;
  if (v->kind == YT_MAP) {
    if (walk_map(c, v, path, SHUFFLE_KEYS, NULL)) return -1;
    not_supported(c, v, path, 4, "shuffling with a buffer");
    return 0;
  }
  if (v->kind == YT_SCALAR && !v->quoted && !strcmp(v->text, "false")) return 0;
  return fail(c, v, path, "expected false or {buffer: N}, found %s", found(v, fb, sizeof fb));
}

static const key_spec SYNTHETIC_KEYS[] = {
  {.key = "rows", .type = V_INT, .st = S_SIZE, OFF(scenario, synthetic_rows), .lo = 1, .hi = 1e8, .required = 1},
  {.key = "features", .type = V_INT, .st = S_INT, OFF(scenario, synthetic_features), .lo = 1, .hi = 1e8, .required = 1},
  {.key = "classes", .type = V_INT, .st = S_INT, OFF(scenario, synthetic_classes), .lo = 2, .hi = 1e8, .required = 1},
  END};
/* An hour of host time per example or batch, or of compilation, is far past any real figure. */
static const key_spec PIPELINE_KEYS[] = {
  {.key = "per_example", .type = V_UNIT, .unit = UNIT_DURATION, .hi = 3600, .st = S_DOUBLE,
   OFF(scenario, pipeline_per_example_s)},
  {.key = "per_batch", .type = V_UNIT, .unit = UNIT_DURATION, .hi = 3600, .st = S_DOUBLE,
   OFF(scenario, pipeline_per_batch_s)},
  END};
static const key_spec DATASET_KEYS[] = {
  {.key = "csv", .type = V_PATH, .st = S_CHARS, OFF(scenario, csv), .len = SCN_PATH_MAX},
  {.key = "label", .type = V_STR, .st = S_CHARS, OFF(scenario, label), .len = 128},
  {.key = "synthetic", .type = V_MAP, .sub = SYNTHETIC_KEYS},
  {.key = "global_batch", .type = V_INT, .st = S_INT, OFF(scenario, global_batch), .lo = 1, .hi = 1e7, .required = 1},
  {.key = "shuffle", .type = V_FN, .fn = shuffle_fn},
  {.key = "repeat", .type = V_BOOL, .st = S_INT, OFF(scenario, repeat)},
  {.key = "distribute", .type = V_ENUM, .names = DISTRIBUTE, .name_issue = DISTRIBUTE_ISSUE, .what = "dataset distribution"},
  {.key = "auto_shard_policy", .type = V_ENUM, .names = SHARD, .name_issue = SHARD_ISSUE, .what = "auto-shard policy"},
  {.key = "prefetch", .type = V_INT, .st = S_INT, OFF(scenario, prefetch), .lo = 0, .hi = 1e6},
  {.key = "pipeline", .type = V_MAP, .sub = PIPELINE_KEYS},
  END};

/* The later of two keys of MAP (for contradictions: report where the second one is). */
static const yt_node *later_key(const yt_node *map, const char *a, const char *b) {
  const yt_node *x = yt_get_key(map, a), *y = yt_get_key(map, b);
  if (x->file != y->file) return y->file == map->file ? x : y; /* an override is "later" */
  return (y->line > x->line || (y->line == x->line && y->col > x->col)) ? y : x;
}

static int dataset_post(ctx *c, const yt_node *map, const char *path, void *base) {
  char sub[256];
  (void)base;
  if (yt_get(map, "csv") && yt_get(map, "synthetic")) {
    const yt_node *k = later_key(map, "csv", "synthetic");
    join(sub, sizeof sub, path, k->text);
    return fail(c, k, sub, "give either csv or synthetic, not both");
  }
  if (!yt_get(map, "csv") && !yt_get(map, "synthetic")) {
    join(sub, sizeof sub, path, "csv");
    return fail(c, map, sub, "missing required key \"csv\" (or \"synthetic\")");
  }
  if (yt_get(map, "label") && yt_get(map, "synthetic")) {
    join(sub, sizeof sub, path, "label");
    return fail(c, yt_get_key(map, "label"), sub, "label names a csv column; synthetic data has none");
  }
  return 0;
}

static const key_spec CHECKPOINT_KEYS[] = {
  {.key = "every_steps", .type = V_INT, .st = S_LONG, OFF(scenario, ckpt_every), .lo = 1, .hi = 1e12, .required = 1},
  {.key = "max_to_keep", .type = V_INT, .st = S_LONG, OFF(scenario, ckpt_max_to_keep), .lo = 1, .hi = 1e6},
  {.key = "bandwidth", .type = V_UNIT, .unit = UNIT_BANDWIDTH, .st = S_DOUBLE, OFF(scenario, ckpt_bytes_per_s), .lo_open = 1},
  {.key = "async", .type = V_BOOL, .st = S_INT, OFF(scenario, ckpt_async)},
  END};
static const key_spec RESTART_KEYS[] = {
  {.key = "delay", .type = V_UNIT, .unit = UNIT_DURATION, .st = S_DOUBLE, OFF(scenario, restart_delay_s), .hi = 86400},
  END};
static const key_spec COMPILE_KEYS[] = {
  {.key = "time", .type = V_UNIT, .unit = UNIT_DURATION, .hi = 86400, .st = S_DOUBLE, OFF(scenario, compile_time_s)},
  {.key = "base", .type = V_UNIT, .unit = UNIT_DURATION, .hi = 3600, .st = S_DOUBLE, OFF(scenario, compile_base_s)},
  {.key = "per_op", .type = V_UNIT, .unit = UNIT_DURATION, .hi = 3600, .st = S_DOUBLE, OFF(scenario, compile_per_op_s)},
  END};
static int compile_post(ctx *c, const yt_node *map, const char *path, void *base) {
  char sub[256];
  (void)base;
  const char *model = yt_get(map, "base") ? "base" : "per_op";
  if (!yt_get(map, "time") || !yt_get(map, model)) return 0;
  const yt_node *k = later_key(map, "time", model);
  join(sub, sizeof sub, path, k->text);
  return fail(c, k, sub, "give either time (the whole compile) or base and per_op (the model), not both");
}
static const key_spec TRAINING_KEYS[] = {
  {.key = "steps", .type = V_INT, .st = S_LONG, OFF(scenario, steps), .lo = 1, .hi = 1e7},
  {.key = "epochs", .type = V_INT, .st = S_LONG, OFF(scenario, epochs), .lo = 1, .hi = 1e6},
  {.key = "loss_reduction", .type = V_ENUM, .names = REDUCTIONS, .st = S_INT, OFF(scenario, loss_reduction)},
  {.key = "jit_compile", .type = V_BOOL, .st = S_INT, OFF(scenario, jit_compile)},
  {.key = "compile", .type = V_MAP, .sub = COMPILE_KEYS, .post = compile_post},
  {.key = "checkpoint", .type = V_MAP, .sub = CHECKPOINT_KEYS},
  {.key = "restart", .type = V_MAP, .sub = RESTART_KEYS},
  END};

static int training_post(ctx *c, const yt_node *map, const char *path, void *base) {
  char sub[256];
  (void)base;
  c->s->has_restart = yt_get(map, "restart") != NULL;
  if (yt_get(map, "steps") && yt_get(map, "epochs")) {
    const yt_node *k = later_key(map, "steps", "epochs");
    join(sub, sizeof sub, path, k->text);
    return fail(c, k, sub, "give either steps or epochs, not both");
  }
  if (!yt_get(map, "steps") && !yt_get(map, "epochs")) {
    join(sub, sizeof sub, path, "steps");
    return fail(c, map, sub, "missing required key \"steps\" (or \"epochs\")");
  }
  return 0;
}

static const key_spec COLLECTIVE_KEYS[] = {
  {.key = "op", .type = V_ENUM, .names = COLLECTIVES, .required = 1, .st = S_INT, OFF(scenario, workload_op)},
  {.key = "size", .type = V_UNIT, .unit = UNIT_SIZE, .lo = 4, .hi = 1e13, .required = 1, .st = S_DOUBLE,
   OFF(scenario, workload_size_bytes)},
  {.key = "algorithm", .type = V_ENUM, .names = ALGORITHMS, .st = S_INT, OFF(scenario, workload_algorithm)},
  {.key = "group", .type = V_ENUM, .names = GROUPS, .st = S_INT, OFF(scenario, workload_group)},
  {.key = "iterations", .type = V_INT, .lo = 1, .hi = 100000, .st = S_LONG, OFF(scenario, workload_iterations)},
  END};
static const key_spec WORKLOAD_KEYS[] = {
  {.key = "collective", .type = V_MAP, .sub = COLLECTIVE_KEYS, .required = 1},
  END};

/* outputs.plots: a list of plot names, each once. */
static int plots_fn(ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  static const key_spec one = {.key = "plots", .type = V_ENUM, .names = PLOTS, .what = "plot"};
  char sub[256];
  int seen[sizeof PLOTS / sizeof PLOTS[0] - 1] = {0};
  (void)k; (void)base;
  if (v->kind != YT_SEQ) {
    char fb[80];
    return fail(c, v, path, "expected a sequence of plots such as [loss, step_time], found %s", found(v, fb, sizeof fb));
  }
  for (int i = 0; i < v->n; i++) {
    int which = 0;
    sfmt(sub, sizeof sub, "%s[%d]", path, i);
    key_spec st = one;
    st.st = S_INT;
    st.off = 0;
    if (handle_value(c, &st, v->items[i], v->items[i], sub, &which)) return -1;
    if (seen[which]) return fail(c, v->items[i], sub, "plot \"%s\" listed twice", PLOTS[which]);
    seen[which] = 1;
  }
  c->s->plots.loss = seen[0];
  c->s->plots.step_time = seen[1];
  c->s->plots.timeline = seen[2];
  c->s->plots.hbm = seen[3];
  c->s->plots.heatmap = seen[4];
  c->s->plots.faults = seen[5];
  return 0;
}

static const key_spec OUTPUTS_KEYS[] = {
  {.key = "dir", .type = V_STR, .st = S_CHARS, OFF(scenario, out_dir), .len = SCN_PATH_MAX},
  {.key = "plots", .type = V_FN, .fn = plots_fn},
  {.key = "format", .type = V_ENUM, .names = FORMATS, .st = S_INT,
   OFF(scenario, format), .what = "plot format"},
  {.key = "trace", .type = V_BOOL, .st = S_INT, OFF(scenario, trace)},
  END};

/* faults: a list of {kind, target, ...}. */
static int target_check(ctx *c, const yt_node *v, const char *path, int links) {
  static const char *const TASKS[] = {"worker", "ps", "chief", "evaluator", "tpu_host", "tpu", NULL};
  static const char *const LINKS[] = {"ici", "dcn", "fabric", NULL};
  const char *const *names = links ? LINKS : TASKS;
  const char *t;
  if (get_str(c, v, path, &t)) return -1;
  size_t nl = strcspn(t, ":");
  for (int i = 0; names[i]; i++) {
    if (strlen(names[i]) != nl || strncmp(names[i], t, nl)) continue;
    if (!t[nl] && (!strcmp(names[i], "tpu") || !strcmp(names[i], "chief") || !strcmp(names[i], "evaluator") || links))
      return 0;
    if (t[nl] == ':' && (!strcmp(t + nl + 1, "*") || (is_int_text(t + nl + 1) && t[nl + 1] != '-' && t[nl + 1] != '+')) &&
        strcmp(names[i], "tpu"))
      return 0;
    break;
  }
  if (links)
    return fail(c, v, path, "expected a link target such as ici:*, ici:3, dcn:* or fabric:*, found \"%s\"", t);
  return fail(c, v, path, "expected a task target such as worker:3, worker:*, ps:0, chief, tpu or tpu_host:1, found \"%s\"", t);
}
/* Keeps the target as written and where it is, for scenarios/faults.c's checks against the run. */
static int store_target(ctx *c, const yt_node *v, const char *path, void *base, int links) {
  if (target_check(c, v, path, links)) return -1;
  scn_fault *f = base;
  if (strlen(v->text) >= sizeof f->target)
    return fail(c, v, path, "expected a target of at most %zu characters, found %zu", sizeof f->target - 1, strlen(v->text));
  sfmt(f->target, sizeof f->target, "%s", v->text);
  sfmt(f->src, sizeof f->src, "%s", v->file);
  f->line = v->line;
  f->col = v->col;
  return 0;
}
static int task_target_fn(ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  (void)k;
  return store_target(c, v, path, base, 0);
}
static int link_target_fn(ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
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
static int distribution_fn(ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  char fb[80];
  (void)k;
  if (v->kind == YT_SCALAR && !strcmp(v->text, "exponential")) return 0;
  if (v->kind != YT_MAP || v->n != 1)
    return fail(c, v, path, "expected exponential or {weibull: {shape: K}}, found %s", found(v, fb, sizeof fb));
  return walk_map(c, v, path, DISTRIBUTION_KEYS, base);
}

/* Times are at most a year of simulated time (the run's horizon is 53 days). */
#define FAULT_KIND {.key = "kind", .type = V_STR}
#define FAULT_TASK {.key = "target", .type = V_FN, .fn = task_target_fn, .required = 1}
#define FAULT_LINK {.key = "target", .type = V_FN, .fn = link_target_fn, .required = 1}
#define FAULT_TIME(name, field, req) {.key = name, .type = V_UNIT, .unit = UNIT_DURATION, .st = S_DOUBLE, \
  OFF(scn_fault, field), .hi = 31536000, .required = req}
#define FAULT_DURATION {.key = "duration", .type = V_UNIT, .unit = UNIT_DURATION, .st = S_DOUBLE, \
  OFF(scn_fault, duration_s), .lo_open = 1, .hi = 31536000}
#define FAULT_TRIGGERS FAULT_TIME("at", at_s, 0),                                                        \
  {.key = "at_step", .type = V_INT, .st = S_LONG, OFF(scn_fault, at_step), .lo = 0, .hi = 1e7},         \
  {.key = "mtbf", .type = V_UNIT, .unit = UNIT_DURATION, .st = S_DOUBLE, OFF(scn_fault, mtbf_s), .lo = 1e-3, .hi = 31536000}, \
  {.key = "rate", .type = V_UNIT, .unit = UNIT_RATE, .st = S_DOUBLE, OFF(scn_fault, mtbf_s), .lo = 3.2e-8, .hi = 1000}, \
  {.key = "distribution", .type = V_FN, .fn = distribution_fn},                                          \
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
/* In scn_fault_kind order. */
static const variant FAULT_KINDS[] = {
  {"preempt", PREEMPT_KEYS}, {"fail", FAIL_KEYS}, {"link_degrade", LINK_DEGRADE_KEYS},
  {"link_down", LINK_DOWN_KEYS}, {"straggler", STRAGGLER_KEYS}, {"trace", TRACE_KEYS}, {NULL, NULL}};

static int faults_fn(ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  static const char *const TRIGGERS[] = {"at", "at_step", "mtbf", "rate", NULL};
  char sub[256];
  (void)k; (void)base;
  if (get_seq(c, v, path, "a sequence of faults such as [{kind: preempt, target: worker:1, at: 10s}]")) return -1;
  if (v->n > SCN_MAX_FAULTS)
    return fail(c, v->items[SCN_MAX_FAULTS], path, "expected at most %d faults (a trace file holds more), found %d",
                SCN_MAX_FAULTS, v->n);
  c->s->nfaults = v->n;
  for (int i = 0; i < v->n; i++) {
    const yt_node *f = v->items[i];
    scn_fault *sf = &c->s->faults[i];
    int which, ntrig = 0;
    *sf = (scn_fault){.at_s = -1, .at_step = -1, .duration_s = -1};
    sfmt(sub, sizeof sub, "%s[%d]", path, i);
    if (walk_variant(c, f, sub, FAULT_KINDS, sf, &which)) return -1;
    sf->kind = (scn_fault_kind)which;
    if (sf->kind == SCN_FAULT_TRACE) {
      const yt_node *file = yt_get(f, "file");
      sfmt(sf->src, sizeof sf->src, "%s", file->file);
      sf->line = file->line;
      sf->col = file->col;
    }
    if (yt_get(f, "rate")) sf->mtbf_s = 1.0 / sf->mtbf_s;
    if (sf->kind != SCN_FAULT_PREEMPT && sf->kind != SCN_FAULT_FAIL) continue;
    for (int t = 0; TRIGGERS[t]; t++) ntrig += yt_get(f, TRIGGERS[t]) != NULL;
    if (ntrig != 1)
      return fail(c, f, sub, "expected exactly one of at, at_step, mtbf or rate, found %d", ntrig);
    if (yt_get(f, "distribution") && !yt_get(f, "mtbf") && !yt_get(f, "rate")) {
      char d[256];
      join(d, sizeof d, sub, "distribution");
      return fail(c, yt_get_key(f, "distribution"), d, "a distribution goes with mtbf or rate");
    }
  }
  return 0;
}

/* expect: a list of {metric: NAME, <comparator>: NUMBER}. */
#define EXPECT_CMP(name) {.key = name, .type = V_NUM, .st = S_DOUBLE, OFF(scn_expect, value), .lo = -1e308}
static const key_spec EXPECT_KEYS[] = {
  {.key = "metric", .type = V_ENUM, .names = METRICS, .st = S_INT, OFF(scn_expect, metric), .required = 1},
  EXPECT_CMP("lt"), EXPECT_CMP("le"), EXPECT_CMP("gt"), EXPECT_CMP("ge"), EXPECT_CMP("eq"), EXPECT_CMP("ne"),
  END};
static int expect_fn(ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  char sub[256], sub2[256], cl[100];
  (void)k; (void)base;
  list_names(COMPARATORS, cl, sizeof cl);
  if (get_seq(c, v, path, "a sequence such as [{metric: final_loss, lt: 0.3}]")) return -1;
  if (v->n > SCN_MAX_EXPECTS)
    return fail(c, v->items[SCN_MAX_EXPECTS], path, "expected at most %d checks, found %d", SCN_MAX_EXPECTS, v->n);
  c->s->nexpects = v->n;
  for (int i = 0; i < v->n; i++) {
    const yt_node *e = v->items[i];
    scn_expect *se = &c->s->expects[i];
    int ncmp = 0;
    sfmt(sub, sizeof sub, "%s[%d]", path, i);
    if (get_map(c, e, sub, "a mapping such as {metric: final_loss, lt: 0.3}")) return -1;
    for (int j = 0; j < e->n; j++) {
      int known = !strcmp(e->keys[j]->text, "metric");
      for (int m = 0; COMPARATORS[m]; m++)
        if (!strcmp(COMPARATORS[m], e->keys[j]->text)) { known = 1; ncmp++; se->cmp = (scn_cmp)m; }
      if (!known) {
        join(sub2, sizeof sub2, sub, e->keys[j]->text);
        return fail(c, e->keys[j], sub2, "unknown comparator \"%s\" (comparators: %s)", e->keys[j]->text, cl);
      }
    }
    if (walk_map(c, e, sub, EXPECT_KEYS, se)) return -1;
    if (ncmp != 1)
      return fail(c, e, sub, "expected exactly one comparator (%s), found %d", cl, ncmp);
  }
  return 0;
}

static const key_spec ROOT_KEYS[];

/* sweep: {key.path: [values]}; every path must name a key of the format (paths under a list
** such as model.layers.0.dense.units are checked when each point validates), no path may hold
** another, and the grid is bounded. The values stay in the tree: `podsim plan` sets each
** point's values there, so their errors name their own line and column. */
static int sweep_fn(ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  char sub[256];
  scenario *s = c->s;
  (void)k; (void)base;
  if (get_map(c, v, path, "a mapping of key paths to lists of values")) return -1;
  if (v->n > SCN_MAX_SWEEP)
    return fail(c, v, path, "expected at most %d swept keys, found %d", SCN_MAX_SWEEP, v->n);
  s->sweep_points = 1;
  for (int i = 0; i < v->n; i++) {
    const yt_node *kn = v->keys[i];
    const key_spec *table = ROOT_KEYS, *hit = NULL;
    const char *p = kn->text;
    join(sub, sizeof sub, path, kn->text);
    while (table && *p) {
      size_t len = strcspn(p, ".");
      hit = NULL;
      for (const key_spec *e = table; e->key; e++)
        if (strlen(e->key) == len && !strncmp(e->key, p, len)) hit = e;
      if (!hit) break;
      p += len;
      if (*p == '.') p++;
      table = hit->type == V_MAP ? hit->sub : NULL;
    }
    if (!hit || (table && !*p && hit->type == V_MAP) || !strcmp(hit->key, "sweep") ||
        strlen(kn->text) >= sizeof s->sweep_paths[0])
      return fail(c, kn, sub, "expected the path of a key such as dataset.global_batch, found \"%s\"", kn->text);
    for (int j = 0; j < i; j++) {
      const char *a = v->keys[j]->text, *b = kn->text;
      size_t la = strlen(a), lb = strlen(b), l = la < lb ? la : lb;
      if (!strncmp(a, b, l) && (a[l] == '.' || b[l] == '.'))
        return fail(c, kn, sub, "sweeps a key inside another swept key (%s): sweep one or the other", a);
    }
    if (get_seq(c, v->items[i], sub, "a non-empty sequence of values")) return -1;
    if (s->sweep_points * v->items[i]->n > SCN_MAX_SWEEP_POINTS)
      return fail(c, v->items[i], sub, "expected a grid of at most %d points, found %ld x %d", SCN_MAX_SWEEP_POINTS,
                  s->sweep_points, v->items[i]->n);
    sfmt(s->sweep_paths[i], sizeof s->sweep_paths[i], "%s", kn->text);
    s->sweep_values[i] = v->items[i]->n;
    s->sweep_points *= v->items[i]->n;
    s->nsweep = i + 1;
  }
  return 0;
}

static int name_fn(ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  const char *t;
  (void)k; (void)base;
  if (get_str(c, v, path, &t)) return -1;
  if (strlen(t) >= sizeof c->s->name || strspn(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != strlen(t) ||
      t[0] == '.')
    return fail(c, v, path, "expected a name of letters, digits, '.', '_' or '-' (at most %zu), found \"%s\"",
                sizeof c->s->name - 1, t);
  sfmt(c->s->name, sizeof c->s->name, "%s", t);
  return 0;
}

static const key_spec ROOT_KEYS[] = {
  {.key = "name", .type = V_FN, .fn = name_fn, .required = 1},
  {.key = "seed", .type = V_INT, .st = S_U64, OFF(scenario, seed), .lo = 0, .hi = 9.2e18},
  {.key = "numerics", .type = V_ENUM, .names = NUMERICS, .name_issue = NUMERICS_ISSUE, .st = S_INT,
   OFF(scenario, numerics_full), .what = "numerics (cost-only path)"},
  {.key = "cluster", .type = V_MAP, .sub = CLUSTER_KEYS},
  {.key = "strategy", .type = V_MAP, .sub = STRATEGY_KEYS},
  {.key = "model", .type = V_MAP, .sub = MODEL_KEYS},
  {.key = "optimizer", .type = V_FN, .fn = optimizer_fn},
  {.key = "dataset", .type = V_MAP, .sub = DATASET_KEYS, .post = dataset_post},
  {.key = "training", .type = V_MAP, .sub = TRAINING_KEYS, .post = training_post},
  {.key = "workload", .type = V_MAP, .sub = WORKLOAD_KEYS},
  {.key = "faults", .type = V_FN, .fn = faults_fn},
  {.key = "outputs", .type = V_MAP, .sub = OUTPUTS_KEYS},
  {.key = "expect", .type = V_FN, .fn = expect_fn},
  {.key = "sweep", .type = V_FN, .fn = sweep_fn},
  END};

/* ------------------------------------------------------------------ across sections */

const char *scenario_strategy_name(scn_strategy_kind kind) { return STRATEGIES[kind]; }
const char *scenario_metric_name(int metric) {
  return metric >= 0 && metric < (int)(sizeof METRICS / sizeof *METRICS) ? METRICS[metric] : NULL;
}
const char *scenario_cmp_name(scn_cmp cmp) { return COMPARATORS[cmp]; }

static int is_tpu_kind(scn_strategy_kind k) {
  return k == SCN_STRATEGY_TPU || k == SCN_STRATEGY_TPU_V1 || k == SCN_STRATEGY_GNN_RUNNER_TPU;
}

/* A strategy key that only `kind` takes. */
static int only_with(ctx *c, const char *key, scn_strategy_kind kind, const char *kind_name) {
  const yt_node *st = yt_get(c->root, "strategy"), *k = st ? yt_get_key(st, key) : NULL;
  char path[64];
  if (k == NULL || c->s->strategy == kind) return 0;
  sfmt(path, sizeof path, "strategy.%s", key);
  return fail(c, k, path, "goes with strategy kind %s, not %s", kind_name, STRATEGIES[c->s->strategy]);
}

/* The device assignment must build on the slice, as DeviceAssignment.build would (its
** ValueError text says why not). */
static int device_assignment_checks(ctx *c, const yt_node *da) {
  scenario *s = c->s;
  char topology[32];
  ds_status st = {0};
  ds_tpu_resolver *r = ds_tpu_resolver_new("", s->tpu_type, slice_topology(s, topology, sizeof topology), &st);
  ds_tpu_topology *t = r ? ds_tpu_initialize_system(r) : NULL;
  ds_device_assignment *built = NULL;
  if (t && da)
    built = ds_device_assignment_build(t, 4, s->da_shape, 4, s->da_stride, s->da_num_replicas,
                                       DS_DEVICE_ORDER_AUTO, &st);
  int devices = t ? ds_tpu_topology_num_tasks(t) * ds_tpu_topology_num_tpus_per_task(t) : 0;
  ds_device_assignment_free(built);
  ds_tpu_topology_free(t);
  ds_tpu_resolver_free(r);
  if (!ds_status_ok(&st))
    return fail(c, da ? da : yt_path(c->root, "cluster.tpu"), da ? "strategy.device_assignment" : "cluster.tpu",
                "%s: %s", ds_error_kind_name(st.kind), st.message);
  if (s->num_cores > devices)
    return fail(c, yt_path(c->root, "strategy.num_cores"), "strategy.num_cores",
                "expected at most the %d TPU cores (devices) of %s, found %d", devices, s->tpu_type, s->num_cores);
  return 0;
}

/* logical_device < the device assignment's cores per replica (1 without one). */
static int logical_device_checks(ctx *c) {
  const scenario *s = c->s;
  int cores = 1;
  if (s->has_device_assignment) cores = s->da_shape[0] * s->da_shape[1] * s->da_shape[2] * s->da_shape[3];
  const yt_node *layers = yt_path(c->root, "model.layers");
  for (int i = 0; i < s->nlayers; i++) {
    if (s->logical_device[i] < cores) continue;
    const yt_node *kind = layers->items[i]->items[0];  /* {dense: {...}}: the layer's keys */
    char path[96];
    sfmt(path, sizeof path, "model.layers[%d].%s.logical_device", i, layers->items[i]->keys[0]->text);
    if (!s->has_device_assignment)
      return fail(c, yt_get(kind, "logical_device"), path,
                  "logical devices need strategy kind tpu with a device_assignment whose "
                  "computation_shape gives each replica more than one core; found %d", s->logical_device[i]);
    return fail(c, yt_get(kind, "logical_device"), path,
                "expected a logical device below %d (the cores per replica of "
                "strategy.device_assignment.computation_shape), found %d", cores, s->logical_device[i]);
  }
  return 0;
}

/* The jobs of a ParameterServerStrategy cluster (ps, chief, evaluator) go with that strategy only,
** and it needs at least one ps task, as its constructor's ValueError says. TF_CONFIG gives the
** task counts, so cluster.workers.count or cluster.ps.count beside it would contradict it. */
static int ps_checks(ctx *c) {
  scenario *s = c->s;
  const yt_node *cluster = yt_get(c->root, "cluster");
  int ps_kind = s->strategy == SCN_STRATEGY_PARAMETER_SERVER;
  static const char *const ROLES[] = {"ps", "chief", "evaluator", NULL};
  if (yt_get(cluster, "evaluator")) s->has_evaluator = 1;
  for (int i = 0; ROLES[i] && !ps_kind; i++) {
    char path[64];
    sfmt(path, sizeof path, "cluster.%s", ROLES[i]);
    if (yt_get(cluster, ROLES[i]))
      return fail(c, yt_get_key(cluster, ROLES[i]), path, "goes with strategy kind parameter_server, not %s",
                  STRATEGIES[s->strategy]);
  }
  const yt_node *tfc = yt_get_key(cluster, "tf_config");
  if (tfc) {
    if (!ps_kind && s->strategy != SCN_STRATEGY_MULTI_WORKER_MIRRORED)
      return fail(c, tfc, "cluster.tf_config", "goes with strategy kind parameter_server or multi_worker_mirrored, not %s",
                  STRATEGIES[s->strategy]);
    const char *counted[] = {"cluster.workers.count", "cluster.ps.count"};
    for (int i = 0; i < 2; i++)
      if (yt_path(c->root, counted[i]))
        return fail(c, yt_path(c->root, counted[i]), counted[i],
                    "contradicts cluster.tf_config, which gives the number of tasks of each job");
    if (!ps_kind) {
      s->workers += s->has_chief;  /* MultiWorkerMirroredStrategy: the chief is worker 0 */
      s->has_chief = 0;
      s->ps = 0;
      s->has_evaluator = 0;
      if (s->workers == 0) return fail(c, tfc, "cluster.tf_config", "ValueError: the cluster has no chief or worker task");
    }
  }
  if (!ps_kind) return 0;
  if (tfc && (s->tf_config_task == 1 || s->tf_config_task == 2))
    return fail(c, tfc, "cluster.tf_config", "ValueError: TF_CONFIG's task is a %s, but ParameterServerStrategy is built "
                "by the coordinator (the chief); workers and ps tasks only serve", TF_JOBS[s->tf_config_task]);
  const char *where = tfc ? "cluster.tf_config" : "cluster.ps";
  const yt_node *at = tfc ? tfc : yt_path(c->root, "strategy.kind");
  if (s->ps == 0)
    return fail(c, at, where, "ValueError: ParameterServerStrategy needs at least one ps task%s",
                tfc ? "" : ": add cluster.ps {count: N}");
  if (s->workers == 0)
    return fail(c, at, tfc ? where : "cluster.workers", "ValueError: ParameterServerStrategy needs at least one worker task");
  /* The side-car evaluator only evaluates checkpoints: without any it would wait forever. */
  if (s->has_evaluator && s->ckpt_every <= 0) {
    const yt_node *ev = yt_get_key(cluster, "evaluator");
    return fail(c, ev ? ev : tfc, ev ? "cluster.evaluator" : "cluster.tf_config", "the evaluator evaluates the "
                "checkpoints training writes, and training.checkpoint is not set: add training.checkpoint "
                "{every_steps: N} or remove the evaluator");
  }
  return 0;
}

/* Which strategy keys go with which kind, which kinds need a TPU slice, and the TPU layout. */
static int strategy_checks(ctx *c, const yt_node *tpu) {
  scenario *s = c->s;
  const yt_node *kind = yt_path(c->root, "strategy.kind");
  if (tpu && !is_tpu_kind(s->strategy))
    return fail(c, yt_get_key(yt_get(c->root, "cluster"), "tpu"), "cluster.tpu",
                "training on a TPU slice needs strategy.kind tpu, tpu_v1 or gnn_runner_tpu, found %s",
                STRATEGIES[s->strategy]);
  if (!tpu && is_tpu_kind(s->strategy))
    return fail(c, kind, "strategy.kind", "%s runs on a TPU slice: add cluster.tpu", STRATEGIES[s->strategy]);
  if (only_with(c, "device_assignment", SCN_STRATEGY_TPU, "tpu") ||
      only_with(c, "spmd_xla_partitioning", SCN_STRATEGY_TPU, "tpu") ||
      only_with(c, "steps_per_run", SCN_STRATEGY_TPU_V1, "tpu_v1") ||
      only_with(c, "num_cores", SCN_STRATEGY_TPU_V1, "tpu_v1") ||
      only_with(c, "devices", SCN_STRATEGY_MIRRORED, "mirrored"))
    return -1;
  const yt_node *trip = yt_path(c->root, "strategy.host_round_trip");
  if (trip && !is_tpu_kind(s->strategy))
    return fail(c, yt_get_key(yt_get(c->root, "strategy"), "host_round_trip"), "strategy.host_round_trip",
                "goes with the TPU strategies (tpu, tpu_v1, gnn_runner_tpu), not %s", STRATEGIES[s->strategy]);
  if (only_with(c, "variable_partitioner", SCN_STRATEGY_PARAMETER_SERVER, "parameter_server") || ps_checks(c))
    return -1;
  const yt_node *da = yt_path(c->root, "strategy.device_assignment");
  s->has_device_assignment = da != NULL;
  if (tpu && device_assignment_checks(c, da)) return -1;
  if (logical_device_checks(c)) return -1;
  for (int i = 0; i < s->ndevices; i++) {
    const yt_node *d = yt_path(c->root, "strategy.devices")->items[i];
    char path[64];
    sfmt(path, sizeof path, "strategy.devices[%d]", i);
    int index = atoi(s->devices[i] + 4);
    if (!strncmp(s->devices[i], "TPU:", 4))
      return fail(c, d, path, "mirrored runs on the first worker's GPUs or CPU:0; for TPUs use strategy.kind tpu");
    if (!strncmp(s->devices[i], "CPU:", 4) && index != 0)
      return fail(c, d, path, "a worker has one CPU device, CPU:0; found %s", s->devices[i]);
    if (!strncmp(s->devices[i], "GPU:", 4) && s->worker_machine.accelerators == 0)
      return fail(c, d, path, "the worker has no accelerators (cluster.workers.machine.accelerators); found %s",
                  s->devices[i]);
    if (!strncmp(s->devices[i], "GPU:", 4) && index >= s->worker_machine.accelerators)
      return fail(c, d, path, "the worker has %d accelerators, GPU:0 to GPU:%d; found %s",
                  s->worker_machine.accelerators, s->worker_machine.accelerators - 1, s->devices[i]);
    for (int j = 0; j < i; j++)
      if (!strcmp(s->devices[i], s->devices[j]))
        return fail(c, d, path, "%s is listed twice (MirroredStrategy allows no duplicates)", s->devices[i]);
  }
  return 0;
}

static int cross_checks(ctx *c) {
  const yt_node *root = c->root;
  scenario *s = c->s;
  const yt_node *model = yt_get(root, "model"), *workload = yt_get(root, "workload");
  if (model && workload)
    return fail(c, later_key(root, "model", "workload"), "workload",
                "give either a training run (model, optimizer, dataset, training) or a workload, not both");
  if (!model && !workload)
    return fail(c, root, "model", "missing required key \"model\" (or \"workload\")");
  const yt_node *tpu = yt_path(root, "cluster.tpu");
  int torus_fabric = s->fabric == SCN_FABRIC_TORUS2D || s->fabric == SCN_FABRIC_TORUS3D;
  if (model && s->all_reduce == SCN_ALLREDUCE_TORUS && !torus_fabric)
    return fail(c, yt_path(root, "strategy.all_reduce"), "strategy.all_reduce",
                "torus needs a torus to run on: cluster.fabric.topology torus2d or torus3d");
  if (workload && s->workload_algorithm == SCN_ALLREDUCE_TORUS && s->workload_group == SCN_GROUP_WORKERS &&
      !torus_fabric)
    return fail(c, yt_path(root, "workload.collective.algorithm"), "workload.collective.algorithm",
                "torus needs a torus to run on: group tpu, or cluster.fabric.topology torus2d or torus3d");
  if (model && strategy_checks(c, tpu) != 0) return -1;
  if (workload) {
    s->has_workload = 1;
    const yt_node *group = yt_path(root, "workload.collective.group");
    if (s->workload_group == SCN_GROUP_TPU && !tpu)
      return fail(c, group, "workload.collective.group", "group tpu needs cluster.tpu");
  }
  if (!model) {
    static const char *const TRAIN[] = {"optimizer", "dataset", "training", "faults", "expect", NULL};
    for (int i = 0; TRAIN[i]; i++)
      if (yt_get(root, TRAIN[i]))
        return fail(c, yt_get_key(root, TRAIN[i]), TRAIN[i], "%s goes with model, not with workload", TRAIN[i]);
    return 0;
  }
  static const char *const NEEDED[] = {"optimizer", "dataset", "training", NULL};
  for (int i = 0; NEEDED[i]; i++)
    if (!yt_get(root, NEEDED[i]))
      return fail(c, root, NEEDED[i], "missing required key \"%s\" (a model needs %s)", NEEDED[i],
                  "optimizer, dataset and training");

  const yt_node *compile = yt_path(root, "training.compile");
  if (compile && !s->jit_compile && !tpu)
    return fail(c, yt_get_key(yt_get(root, "training"), "compile"), "training.compile",
                "nothing is compiled: XLA compiles the step only with training.jit_compile: true "
                "(or on a TPU, always)");

  const yt_node *layers = yt_get(model, "layers");
  const md_layer_spec *first = &s->layers[0], *last = &s->layers[s->nlayers - 1];
  if (s->input_ids && first->kind != MD_LAYER_EMBEDDING)
    return fail(c, layers->items[0], "model.layers[0]", "an id input (model.input.ids) needs an embedding as the first layer");
  if (s->input_features && first->kind == MD_LAYER_EMBEDDING)
    return fail(c, layers->items[0], "model.layers[0]", "an embedding reads integer ids: use model.input {ids, vocab}, not features");
  if (first->kind == MD_LAYER_EMBEDDING && first->vocab < s->input_vocab)
    return fail(c, layers->items[0], "model.layers[0].embedding.vocab",
                "expected vocab >= model.input.vocab (%d), found %d", s->input_vocab, first->vocab);
  if (last->kind != MD_LAYER_DENSE)
    return fail(c, layers->items[s->nlayers - 1], "model.layers",
                "the last layer must be dense (its units are the classes)");

  const yt_node *syn = yt_path(root, "dataset.synthetic");
  if (syn) {
    if (s->input_ids)
      return fail(c, syn, "dataset.synthetic", "synthetic data gives float features; an id input needs a csv");
    if (s->synthetic_features != s->input_features)
      return fail(c, yt_get(syn, "features"), "dataset.synthetic.features",
                  "expected model.input.features (%d), found %d", s->input_features, s->synthetic_features);
    if (s->synthetic_classes > last->units)
      return fail(c, yt_get(syn, "classes"), "dataset.synthetic.classes",
                  "expected at most the last layer's units (%d), found %d", last->units, s->synthetic_classes);
  }
  return 0;
}

/* ------------------------------------------------------------------ entry points */

static void set_defaults(scenario *s) {
  memset(s, 0, sizeof *s);
  s->seed = 1;
  s->sweep_points = 1;
  s->numerics_full = 1;
  s->workers = 1;
  machines_lookup("n2-standard-8", &s->worker_machine);
  machines_lookup("n2-standard-8", &s->ps_machine);
  machines_lookup("n2-standard-8", &s->chief_machine);
  machines_lookup("n2-standard-8", &s->evaluator_machine);
  s->has_chief = 1;
  s->fabric = SCN_FABRIC_STAR;
  s->fabric_bytes_per_s = 100e9;
  s->fabric_latency_s = 5e-6;
  s->strategy = SCN_STRATEGY_DEFAULT;
  s->all_reduce = SCN_ALLREDUCE_AUTO;
  s->workload_algorithm = SCN_ALLREDUCE_AUTO;
  s->workload_group = SCN_GROUP_WORKERS;
  s->workload_iterations = 5;
  s->repeat = 1;
  s->loss_reduction = SCN_LOSS_GLOBAL_BATCH;
  s->prefetch = 1;
  s->tpu_efficiency = MACHINE_ACCEL_EFFICIENCY;
  s->steps_per_run = 1;
  s->host_round_trip_s = MACHINE_TPU_HOST_ROUND_TRIP_S;
  s->da_num_replicas = 1;
  for (int a = 0; a < 4; a++) s->da_stride[a] = 1;
  s->pipeline_per_example_s = 1e-6;
  s->pipeline_per_batch_s = 20e-6;
  sim_compile_model xla = sim_compile_default();
  s->compile_time_s = -1;
  s->compile_base_s = xla.base_s;
  s->compile_per_op_s = xla.per_op_s;
  s->plots.loss = 1;
  s->plots.step_time = 1;
  s->format = SCN_FORMAT_PNG;
  s->trace = 1;
  s->ckpt_max_to_keep = 1;
  s->eval_poll_s = 1.0;
  s->ckpt_bytes_per_s = 1e9;
  s->restart_delay_s = 60;
  optimizer_defaults(&s->optimizer, MD_OPT_SGD);
}

static void from_yt_error(const yt_error *ye, scn_error *err) {
  sfmt(err->file, sizeof err->file, "%s", ye->file ? ye->file : "");
  err->line = ye->line;
  err->col = ye->col;
  sfmt(err->key, sizeof err->key, "%s", ye->key);
  if (ye->line > 0 && ye->key[0])
    sfmt(err->msg, sizeof err->msg, "%s:%d:%d: %s: %s", err->file, ye->line, ye->col, ye->key, ye->msg);
  else if (ye->line > 0)
    sfmt(err->msg, sizeof err->msg, "%s:%d:%d: %s", err->file, ye->line, ye->col, ye->msg);
  else
    sfmt(err->msg, sizeof err->msg, "%s: %s", err->file, ye->msg);
}

int scenario_load_tree(const char *path, const char *const *overrides, int noverrides,
                       struct yt_doc **tree, scn_error *err) {
  yt_error ye;
  memset(err, 0, sizeof *err);
  *tree = NULL;
  yt_doc *d = yt_parse_file(path, &ye);
  if (!d) { from_yt_error(&ye, err); return -1; }
  for (int i = 0; i < noverrides; i++) {
    if (yt_apply_override(d, overrides[i], i + 1, &ye)) {
      from_yt_error(&ye, err);
      yt_doc_free(d);
      return -1;
    }
  }
  *tree = d;
  return 0;
}

int scenario_from_tree(const struct yt_doc *tree, const char *path, scenario *out, scn_error *err) {
  ctx c;
  memset(&c, 0, sizeof c);
  memset(err, 0, sizeof *err);
  set_defaults(out);
  c.s = out;
  c.err = err;
  c.root = tree->root;
  sfmt(out->path, sizeof out->path, "%s", path);
  const char *slash = strrchr(path, '/');
  if (!slash) sfmt(out->dir, sizeof out->dir, ".");
  else if (slash == path) sfmt(out->dir, sizeof out->dir, "/");
  else sfmt(out->dir, sizeof out->dir, "%.*s", (int)(slash - path), path);

  if (!tree->root || tree->root->kind != YT_MAP) {
    char fb[80];
    yt_node empty = {.kind = YT_SCALAR, .file = tree->file, .line = 1, .col = 1, .text = (char *)""};
    const yt_node *at = tree->root ? tree->root : &empty;
    return fail(&c, at, "(top level)", "expected a mapping with keys name, model, ..., found %s",
                tree->root ? found(tree->root, fb, sizeof fb) : "an empty document");
  }
  if (walk_map(&c, tree->root, "", ROOT_KEYS, out)) return -1;
  if (cross_checks(&c)) return -1;
  if (c.have_ns) { *err = c.ns; return -1; }

  if (out->epochs > 0) out->steps = -1;
  if (!yt_path(tree->root, "outputs.dir"))
    sfmt(out->out_dir, sizeof out->out_dir, "out/%s", out->name);
  return 0;
}

int scenario_load(const char *path, const char *const *overrides, int noverrides,
                  scenario *out, scn_error *err) {
  yt_doc *d;
  if (scenario_load_tree(path, overrides, noverrides, &d, err)) {
    set_defaults(out);
    return -1;
  }
  int rc = scenario_from_tree(d, path, out, err);
  yt_doc_free(d);
  return rc;
}
