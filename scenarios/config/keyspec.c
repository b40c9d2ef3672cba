/*
** keyspec.c: the key_spec engine: walks a mapping against its table of keys (type, storage, range,
** enum names), checks scalars and reports the first problem in file order.
*/
#include "scenarios/config/configInt.h"

#include <math.h>
#include <string.h>
#include <sys/stat.h>

static int vfail(cfg_ctx *c, const yt_node *at, const char *path, const char *fmt, va_list ap) {
  scn_error *e = c->err;
  char body[768];
  base_vformat(body, sizeof body, fmt, ap);
  base_format(e->file, sizeof e->file, "%s", at->file);
  e->line = at->line;
  e->col = at->col;
  base_format(e->key, sizeof e->key, "%s", path);
  base_format(e->msg, sizeof e->msg, "%s:%d:%d: %s: %s", at->file, at->line, at->col, path, body);
  return -1;
}

int cfg_fail(cfg_ctx *c, const yt_node *at, const char *path, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfail(c, at, path, fmt, ap);
  va_end(ap);
  return -1;
}

/* How a node reads in "found ...". */
const char *cfg_found(const yt_node *n, char *buf, size_t len) {
  if (n->kind == YT_MAP) return n->n ? "a mapping" : "an empty mapping {}";
  if (n->kind == YT_SEQ) return n->n ? "a sequence" : "an empty sequence []";
  if (yt_is_null(n)) return "nothing (null)";
  const char *t = n->text;
  int plain_word = !n->quoted && strspn(t, "0123456789+-.eE") == strlen(t);
  if (!n->quoted && (!strcmp(t, "true") || !strcmp(t, "false"))) plain_word = 1;
  base_format(buf, len, plain_word ? "%.60s" : "\"%.60s\"", t);
  return buf;
}

void cfg_join(char *out, size_t len, const char *path, const char *key) {
  if (path[0]) base_format(out, len, "%s.%s", path, key);
  else base_format(out, len, "%s", key);
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

void cfg_list_names(const char *const *names, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = 0;
  for (int i = 0; names[i] && used < len; i++) {
    int w = snprintf(buf + used, len - used, "%s%s", i ? " | " : "", names[i]);
    if (w < 0) return;
    used += (size_t)w;
  }
}

/* The range a value failed: bounds of 1e6 and more are sanity limits, shown only when hit. */
static void range_text(const key_spec *k, double x, char *buf, size_t len) {
  int above = k->hi != 0 && (k->hi_open ? !(x < k->hi) : !(x <= k->hi));
  if (k->hi != 0 && k->hi < 1e6)
    base_format(buf, len, " in %s%.15g, %.15g%s", k->lo_open ? "(" : "[", k->lo, k->hi, k->hi_open ? ")" : "]");
  else if (above)
    base_format(buf, len, " %s %.15g", k->hi_open ? "<" : "<=", k->hi);
  else if (k->lo > -1e300)
    base_format(buf, len, " %s %.15g", k->lo_open ? ">" : ">=", k->lo);
  else
    buf[0] = 0;
}

static int in_range(const key_spec *k, double v) {
  if (k->lo_open ? !(v > k->lo) : !(v >= k->lo)) return 0;
  if (k->hi != 0 && (k->hi_open ? !(v < k->hi) : !(v <= k->hi))) return 0;
  return 1;
}

int cfg_is_int_text(const char *t) {
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

int cfg_get_int(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, long long *out) {
  char fb[80], rb[64];
  if (v->kind != YT_SCALAR || v->quoted || !cfg_is_int_text(v->text)) {
    range_text(k, k->lo, rb, sizeof rb);
    return cfg_fail(c, v, path, "expected an integer%s, found %s", rb, cfg_found(v, fb, sizeof fb));
  }
  errno = 0;
  long long x = strtoll(v->text, NULL, 10);
  range_text(k, errno ? 1e300 : (double)x, rb, sizeof rb);
  if (errno || !in_range(k, (double)x))
    return cfg_fail(c, v, path, "expected an integer%s, found %s", rb, v->text);
  *out = x;
  return 0;
}

static int get_num(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, double *out) {
  char fb[80], rb[64];
  if (v->kind != YT_SCALAR || v->quoted || !is_num_text(v->text)) {
    range_text(k, k->lo, rb, sizeof rb);
    return cfg_fail(c, v, path, "expected a number%s, found %s", rb, cfg_found(v, fb, sizeof fb));
  }
  double x = strtod(v->text, NULL);
  /* A float32 setting is checked as the float it becomes: 1e-50 would be stored as 0. */
  if (k->st == S_FLOAT) {
    float f = (float)x;
    if (!isfinite(f) || (x != 0 && f == 0))
      return cfg_fail(c, v, path, "expected a number representable as float32 (about 1e-38 to 3e38 in "
                  "magnitude), found %s", v->text);
    x = f;
  }
  range_text(k, x, rb, sizeof rb);
  if (!isfinite(x) || !in_range(k, x)) return cfg_fail(c, v, path, "expected a number%s, found %s", rb, v->text);
  *out = x;
  return 0;
}

static int get_bool(cfg_ctx *c, const yt_node *v, const char *path, int *out) {
  char fb[80];
  if (v->kind == YT_SCALAR && !v->quoted) {
    if (!strcmp(v->text, "true") || !strcmp(v->text, "True") || !strcmp(v->text, "TRUE")) { *out = 1; return 0; }
    if (!strcmp(v->text, "false") || !strcmp(v->text, "False") || !strcmp(v->text, "FALSE")) { *out = 0; return 0; }
  }
  return cfg_fail(c, v, path, "expected true or false, found %s", cfg_found(v, fb, sizeof fb));
}

int cfg_get_str(cfg_ctx *c, const yt_node *v, const char *path, const char **out) {
  char fb[80];
  if (v->kind != YT_SCALAR || yt_is_null(v) || !v->text[0])
    return cfg_fail(c, v, path, "expected a string, found %s", cfg_found(v, fb, sizeof fb));
  *out = v->text;
  return 0;
}

int cfg_get_map(cfg_ctx *c, const yt_node *v, const char *path, const char *expected) {
  char fb[80];
  if (v->kind != YT_MAP)
    return cfg_fail(c, v, path, "expected %s, found %s", expected, cfg_found(v, fb, sizeof fb));
  return 0;
}

int cfg_get_seq(cfg_ctx *c, const yt_node *v, const char *path, const char *expected) {
  char fb[80];
  if (v->kind != YT_SEQ || v->n == 0)
    return cfg_fail(c, v, path, "expected %s, found %s", expected, cfg_found(v, fb, sizeof fb));
  return 0;
}

/* Resolves REL against the scenario's directory and checks the file is there. */
int cfg_resolve_file(cfg_ctx *c, const yt_node *v, const char *path, const char *rel, char *out, size_t len) {
  int w = (rel[0] == '/' || !strcmp(c->s->dir, "."))
              ? snprintf(out, len, "%s", rel)
              : snprintf(out, len, "%s/%s", c->s->dir, rel);
  if (w < 0 || (size_t)w >= len) return cfg_fail(c, v, path, "expected a shorter path, found %.60s...", rel);
  struct stat st;
  if (stat(out, &st) != 0 || !S_ISREG(st.st_mode))
    return cfg_fail(c, v, path, "file not found: %s (paths are relative to the scenario's directory)", out);
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

/* Checks (and stores) one value against its key_spec. */
int cfg_handle_value(cfg_ctx *c, const key_spec *k, const yt_node *v,
                        const char *path, void *base) {
  char fb[80];
  switch (k->type) {
  case V_INT: {
    long long x = 0;
    if (cfg_get_int(c, k, v, path, &x)) return -1;
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
    if (cfg_get_str(c, v, path, &t)) return -1;
    if (k->st == S_CHARS && strlen(t) >= k->len)
      return cfg_fail(c, v, path, "expected a string of at most %zu characters, found %zu", k->len - 1, strlen(t));
    store(k, base, 0, 0, t);
    break;
  }
  case V_PATH: {
    const char *t;
    char resolved[SCN_PATH_MAX];
    if (cfg_get_str(c, v, path, &t)) return -1;
    if (cfg_resolve_file(c, v, path, t, resolved, sizeof resolved)) return -1;
    store(k, base, 0, 0, resolved);
    break;
  }
  case V_ENUM: {
    char lb[512];
    int i;
    cfg_list_names(k->names, lb, sizeof lb);
    if (v->kind != YT_SCALAR)
      return cfg_fail(c, v, path, "expected one of %s, found %s", lb, cfg_found(v, fb, sizeof fb));
    for (i = 0; k->names[i]; i++)
      if (!strcmp(k->names[i], v->text)) break;
    if (!k->names[i])
      return cfg_fail(c, v, path, "expected one of %s, found %s", lb, cfg_found(v, fb, sizeof fb));
    store(k, base, 0, i, NULL);
    break;
  }
  case V_UNIT: {
    double x = 0;
    char why[512];
    if (v->kind != YT_SCALAR)
      return cfg_fail(c, v, path, "expected %s, found %s", units_expected(k->unit), cfg_found(v, fb, sizeof fb));
    if (units_parse(k->unit, v->text, &x, why, sizeof why)) return cfg_fail(c, v, path, "%s", why);
    if (!in_range(k, x)) {
      const char *u = units_base(k->unit);
      if (k->lo == 0 && k->lo_open && !(x > 0))
        return cfg_fail(c, v, path, "expected %s greater than zero, found %s", units_expected(k->unit), v->text);
      if (x < k->lo || (k->lo_open && !(x > k->lo)))
        return cfg_fail(c, v, path, "expected at least %g %s, found %s", k->lo, u, v->text);
      if (k->unit == UNIT_DURATION && k->hi >= 2 * 86400)
        return cfg_fail(c, v, path, "expected at most %g %s (%.1f days), found %s", k->hi, u, k->hi / 86400, v->text);
      return cfg_fail(c, v, path, "expected at most %g %s, found %s", k->hi, u, v->text);
    }
    store(k, base, x, 0, NULL);
    break;
  }
  case V_MAP: {
    char ex[600], kl[500];
    list_keys(k->sub, kl, sizeof kl);
    base_format(ex, sizeof ex, "a mapping with keys %s", kl);
    if (cfg_get_map(c, v, path, ex)) return -1;
    if (cfg_walk_map(c, v, path, k->sub, base)) return -1;
    if (k->post && k->post(c, v, path, base)) return -1;
    break;
  }
  case V_FN:
    if (k->fn(c, k, v, path, base)) return -1;
    break;
  }
  return 0;
}

int cfg_walk_map(cfg_ctx *c, const yt_node *n, const char *path, const key_spec *keys, void *base) {
  char sub[256], kl[600];
  for (int i = 0; i < n->n; i++) {
    const yt_node *kn = n->keys[i];
    const key_spec *k;
    for (k = keys; k->key; k++)
      if (!strcmp(k->key, kn->text)) break;
    cfg_join(sub, sizeof sub, path, kn->text);
    if (!k->key) {
      list_keys(keys, kl, sizeof kl);
      return cfg_fail(c, kn, sub, "unknown key \"%s\" (valid keys%s%s: %s)", kn->text,
                  path[0] ? " in " : " at the top level", path, kl);
    }
    if (cfg_handle_value(c, k, n->items[i], sub, base)) return -1;
  }
  for (const key_spec *k = keys; k->key; k++) {
    if (!k->required || yt_get(n, k->key)) continue;
    cfg_join(sub, sizeof sub, path, k->key);
    return cfg_fail(c, n, sub, "missing required key \"%s\"", k->key);
  }
  return 0;
}

int cfg_walk_variant(cfg_ctx *c, const yt_node *v, const char *path, const variant *vs, void *base,
                        int *which) {
  char sub[256], names[400], fb[80];
  size_t used = 0;
  names[0] = 0;
  for (int i = 0; vs[i].kind; i++)
    used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", i ? " | " : "", vs[i].kind);
  char ex[500];
  base_format(ex, sizeof ex, "a mapping with kind: %s", names);
  if (cfg_get_map(c, v, path, ex)) return -1;
  const yt_node *kind = yt_get(v, "kind");
  cfg_join(sub, sizeof sub, path, "kind");
  if (!kind) return cfg_fail(c, v, sub, "missing required key \"kind\" (%s)", names);
  for (int i = 0; vs[i].kind; i++) {
    if (kind->kind != YT_SCALAR || strcmp(vs[i].kind, kind->text)) continue;
    *which = i;
    return cfg_walk_map(c, v, path, vs[i].keys, base);
  }
  return cfg_fail(c, kind, sub, "expected one of %s, found %s", names, cfg_found(kind, fb, sizeof fb));
}

const key_spec *cfg_find_path(const char *path, const char **rest) {
  const key_spec *table = CFG_ROOT_KEYS, *hit = NULL;
  const char *p = path;
  while (table && *p) {
    size_t len = strcspn(p, ".");
    const key_spec *e = table;
    while (e->key && !(strlen(e->key) == len && !strncmp(e->key, p, len))) e++;
    if (!e->key) break;
    hit = e;
    p += len;
    if (*p == '.') p++;
    table = hit->sub;  /* a mapping's keys, or the keys of each entry of a list (model.layers) */
  }
  *rest = p;
  return hit;
}

/* The later of two keys of MAP (for contradictions: report where the second one is). */
const yt_node *cfg_later_key(const yt_node *map, const char *a, const char *b) {
  const yt_node *x = yt_get_key(map, a), *y = yt_get_key(map, b);
  if (x->file != y->file) return y->file == map->file ? x : y; /* an override is "later" */
  return (y->line > x->line || (y->line == x->line && y->col > x->col)) ? y : x;
}
