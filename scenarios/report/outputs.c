/*
** outputs.c: metrics.csv, summary.json and the run hash (outputs_, run_hasher_).
**
** Simulated times are integer picoseconds and print as exact decimal seconds; losses print
** with %.9g, enough for any float32-valued figure. The files, and so run_hash, change exactly
** when a simulated value does. summary.json rounds its reals to 15 significant digits (it is
** read by people; the hash does not depend on it).
*/
#define _XOPEN_SOURCE 700  /* nftw */
#include "scenarios/report/outputs.h"
#include "base/base.h"

#include <csv.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <ftw.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "base/base.h"

int run_hasher_init(run_hasher *h) {
  h->state = XXH3_createState();
  if (h->state == NULL) return -1;
  XXH3_64bits_reset(h->state);
  return 0;
}

void run_hasher_add(run_hasher *h, const char *label, const void *data, size_t len) {
  /* The label and length frame each part so that moving bytes between parts changes the hash. */
  uint64_t n = len;
  XXH3_64bits_update(h->state, label, strlen(label) + 1);
  XXH3_64bits_update(h->state, &n, sizeof n);
  XXH3_64bits_update(h->state, data, len);
}

void run_hasher_begin_file(run_hasher *h, const char *name) {
  XXH3_64bits_update(h->state, name, strlen(name) + 1);
}

void run_hasher_bytes(run_hasher *h, const void *data, size_t len) {
  XXH3_64bits_update(h->state, data, len);
}

int run_hasher_add_file(run_hasher *h, const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return -1;
  const char *base = strrchr(path, '/');
  char buf[1 << 16];
  size_t got;
  run_hasher_begin_file(h, base ? base + 1 : path);
  while ((got = fread(buf, 1, sizeof buf, f)) > 0) run_hasher_bytes(h, buf, got);
  int bad = ferror(f);
  fclose(f);
  return bad ? -1 : 0;
}

uint64_t run_hasher_finish(run_hasher *h) {
  uint64_t v = XXH3_64bits_digest(h->state);
  XXH3_freeState(h->state);
  h->state = NULL;
  return v;
}

const char *outputs_path(char *buf, size_t len, const char *dir, const char *name) {
  snprintf(buf, len, "%s/%s", dir, name);
  return buf;
}

const char *outputs_bytes(char *buf, size_t len, double bytes) {
  static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
  int u = 0;
  while (bytes >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    u++;
  }
  snprintf(buf, len, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

int outputs_make_dir(const char *dir) {
  char tmp[4096];
  size_t n = strlen(dir);
  if (n == 0 || n >= sizeof tmp) { errno = ENAMETOOLONG; return -1; }
  memcpy(tmp, dir, n + 1);
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(tmp, 0777) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  if (mkdir(tmp, 0777) != 0 && errno != EEXIST) return -1;
  return 0;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(path);
}

int outputs_remove_tree(const char *path) {
  struct stat sb;
  if (lstat(path, &sb) != 0) return errno == ENOENT ? 0 : -1;
  return nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -1;
}

static int stage_fail(char *msg, size_t len, const char *dir, const char *what) {
  snprintf(msg, len, "%s: outputs.dir: %s: %s", dir, what, strerror(errno));
  return -1;
}

/* mkdir -p of DIR's parent, remembering the outermost directory it had to create. */
static int make_parents(outputs_stage *st) {
  char tmp[sizeof st->dir];
  memcpy(tmp, st->dir, sizeof tmp);
  char *last = strrchr(tmp, '/');
  for (char *p = tmp + 1; last && p <= last; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(tmp, 0777) == 0) {
      if (st->made[0] == '\0') memcpy(st->made, tmp, sizeof st->made);
    } else if (errno != EEXIST) {
      return -1;
    }
    *p = '/';
  }
  return 0;
}

/* Stages left beside DIR by runs that died without removing them (SIGKILL, a crash): entries
** "BASE.partial-PID" whose process is gone (kill(PID, 0) fails with ESRCH). A live PID's stage is
** another run's, in progress, and stays; so does any "BASE.old-PID", which may be the only copy of
** an earlier DIR. A PID is this host's: a stage on a shared file system written by another host's
** process of that number is kept while the number lives here. */
static void remove_dead_stages(const outputs_stage *st) {
  char parent[sizeof st->dir], path[sizeof st->dir + 300];
  memcpy(parent, st->dir, sizeof parent);
  char *slash = strrchr(parent, '/');
  const char *base = slash ? st->dir + (slash - parent) + 1 : st->dir;
  if (slash == parent) parent[1] = '\0';
  else if (slash) *slash = '\0';
  else strcpy(parent, ".");
  DIR *d = opendir(parent);
  if (d == NULL) return;
  size_t blen = strlen(base);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strncmp(e->d_name, base, blen) != 0 || strncmp(e->d_name + blen, ".partial-", 9) != 0) continue;
    const char *digits = e->d_name + blen + 9;
    char *end;
    long pid = strtol(digits, &end, 10);
    if (*digits < '1' || *digits > '9' || *end != '\0' || pid > INT_MAX) continue;
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
    snprintf(path, sizeof path, "%s/%s", parent, e->d_name);
    outputs_remove_tree(path);
  }
  closedir(d);
}

int outputs_stage_open(outputs_stage *st, const char *dir, double need_bytes, char *msg, size_t len) {
  memset(st, 0, sizeof *st);
  size_t n = strlen(dir);
  while (n > 1 && dir[n - 1] == '/') n--;
  if (n == 0 || n >= sizeof st->dir) {
    errno = n == 0 ? ENOENT : ENAMETOOLONG;
    return stage_fail(msg, len, dir, "cannot use this path");
  }
  memcpy(st->dir, dir, n);
  const char *base = strrchr(st->dir, '/');
  base = base ? base + 1 : st->dir;
  if (strcmp(base, ".") == 0 || strcmp(base, "..") == 0 || strcmp(st->dir, "/") == 0) {
    errno = EINVAL;  /* the run replaces DIR as a whole: it must be a directory of its own */
    return stage_fail(msg, len, st->dir, "cannot replace this directory (name one inside it)");
  }
  struct stat sb;
  if (stat(st->dir, &sb) == 0 && !S_ISDIR(sb.st_mode)) {
    errno = ENOTDIR;
    return stage_fail(msg, len, st->dir, "exists and is not a directory");
  }
  snprintf(st->path, sizeof st->path, "%s.partial-%ld", st->dir, (long)getpid());
  if (make_parents(st) != 0) {
    int e = errno;
    outputs_stage_discard(st);
    errno = e;
    return stage_fail(msg, len, st->dir, "cannot create its parent directory");
  }
  outputs_remove_tree(st->path);  /* left by a crashed process that had this pid */
  remove_dead_stages(st);
  if (mkdir(st->path, 0777) != 0) {
    int e = errno;
    outputs_stage_discard(st);
    errno = e;
    return stage_fail(msg, len, st->dir, "cannot create the directory");
  }
  struct statvfs fs;
  if (statvfs(st->path, &fs) != 0) return 0;  /* nothing known of the space: the writes will tell */
  if (fs.f_bavail == 0) {
    outputs_stage_discard(st);
    errno = ENOSPC;
    return stage_fail(msg, len, st->dir, "cannot write the outputs");
  }
  double free_bytes = (double)fs.f_bavail * (double)fs.f_frsize;
  if (need_bytes > free_bytes) {  /* found now rather than when the disk fills hours into the run */
    char need[32], have[32], what[256];
    snprintf(what, sizeof what, "cannot hold the outputs (the run writes at least %s, the file system has %s "
             "free; use fewer steps or another directory)", outputs_bytes(need, sizeof need, need_bytes),
             outputs_bytes(have, sizeof have, free_bytes));
    outputs_stage_discard(st);
    errno = ENOSPC;
    return stage_fail(msg, len, st->dir, what);
  }
  return 0;
}

int outputs_stage_commit(outputs_stage *st, char *msg, size_t len) {
  char old[sizeof st->path];
  struct stat sb;
  int replacing = lstat(st->dir, &sb) == 0;
  snprintf(old, sizeof old, "%s.old-%ld", st->dir, (long)getpid());
  if (replacing && rename(st->dir, old) != 0) {
    int e = errno;
    outputs_stage_discard(st);
    errno = e;
    return stage_fail(msg, len, st->dir, "cannot move the earlier directory aside");
  }
  if (rename(st->path, st->dir) != 0) {
    int e = errno;
    if (replacing) rename(old, st->dir);
    outputs_stage_discard(st);
    errno = e;
    return stage_fail(msg, len, st->dir, "cannot rename the finished outputs onto it");
  }
  if (replacing && outputs_remove_tree(old) != 0) {
    stage_fail(msg, len, old, "the new outputs are in place, the earlier ones left here");
    return 1;
  }
  return 0;
}

void outputs_stage_discard(outputs_stage *st) {
  if (st->path[0]) outputs_remove_tree(st->path);
  if (st->made[0] == '\0') return;
  /* The parents opening created, innermost first; one that holds something else stays. */
  char tmp[sizeof st->dir];
  memcpy(tmp, st->dir, sizeof tmp);
  for (char *slash = strrchr(tmp, '/'); slash && strlen(tmp) > strlen(st->made); slash = strrchr(tmp, '/')) {
    *slash = '\0';
    if (rmdir(tmp) != 0) break;
  }
}

/* ---- sets of device names ---------------------------------------------------------------- */

/* A device name's numbers: TF's have three (replica, task, device index). A digit run that starts
** with 0 and goes on, or is longer than 9 digits, is text of the template, not a number. */
#define NAME_FIELDS 8

typedef struct name_fields {
  int n;                          /* numbers found */
  long value[NAME_FIELDS];        /* each number */
  size_t start[NAME_FIELDS];      /* where its digits begin in the name */
  size_t end[NAME_FIELDS];        /* one past its last digit */
} name_fields;

/* 0, or -1 when the name has more numbers than NAME_FIELDS. */
static int parse_fields(const char *name, name_fields *f) {
  memset(f, 0, sizeof *f);
  for (size_t i = 0; name[i];) {
    size_t j = i;
    while (name[j] >= '0' && name[j] <= '9') j++;
    int number = j > i && j - i <= 9 && (name[i] != '0' || j - i == 1);
    if (number && f->n == NAME_FIELDS) return -1;
    if (number) {
      f->start[f->n] = i;
      f->end[f->n] = j;
      f->value[f->n++] = strtol(name + i, NULL, 10);
    }
    i = j > i ? j : i + 1;
  }
  return 0;
}

/* a and b have the same text around their numbers. */
static int same_template(const char *a, const name_fields *fa, const char *b, const name_fields *fb) {
  if (fa->n != fb->n) return 0;
  size_t ia = 0, ib = 0;
  for (int k = 0; k <= fa->n; k++) {
    size_t ea = k < fa->n ? fa->start[k] : strlen(a), eb = k < fb->n ? fb->start[k] : strlen(b);
    if (ea - ia != eb - ib || memcmp(a + ia, b + ib, ea - ia) != 0) return 0;
    if (k < fa->n) { ia = fa->end[k]; ib = fb->end[k]; }
  }
  return 1;
}

typedef struct name_tuple { long v[NAME_FIELDS]; } name_tuple;

static int cmp_tuple(const void *pa, const void *pb) {
  const name_tuple *a = pa, *b = pb;
  for (int k = 0; k < NAME_FIELDS; k++)
    if (a->v[k] != b->v[k]) return a->v[k] < b->v[k] ? -1 : 1;
  return 0;
}

static int cmp_long(const void *pa, const void *pb) {
  long a = *(const long *)pa, b = *(const long *)pb;
  return (a > b) - (a < b);
}

/* The n names as one template with [ranges] for the numbers that vary (outputs_device_set), or
** -1 when they are not every combination of their numbers, each once. */
static int put_product(FILE *out, const char *const *names, size_t n) {
  name_fields first, f;
  if (parse_fields(names[0], &first) != 0) return -1;
  name_tuple *t = base_xcalloc(n, sizeof *t);
  int ok = 1;
  for (size_t i = 0; ok && i < n; i++) {
    ok = parse_fields(names[i], &f) == 0 && same_template(names[0], &first, names[i], &f);
    memcpy(t[i].v, f.value, sizeof f.value);
  }
  qsort(t, n, sizeof *t, cmp_tuple);
  for (size_t i = 1; ok && i < n; i++) ok = cmp_tuple(&t[i - 1], &t[i]) != 0;
  long *col = base_xcalloc(n, sizeof *col);
  size_t distinct[NAME_FIELDS], combos = 1;
  for (int k = 0; ok && k < first.n; k++) {
    for (size_t i = 0; i < n; i++) col[i] = t[i].v[k];
    qsort(col, n, sizeof *col, cmp_long);
    distinct[k] = 1;
    for (size_t i = 1; i < n; i++) distinct[k] += col[i] != col[i - 1];
    combos = combos > n ? combos : combos * distinct[k];  /* past n it is no product: stop growing */
  }
  ok = ok && combos == n;
  for (int k = 0; ok && k <= first.n; k++) {
    size_t from = k ? first.end[k - 1] : 0, to = k < first.n ? first.start[k] : strlen(names[0]);
    fwrite(names[0] + from, 1, to - from, out);
    if (k == first.n) break;
    if (distinct[k] == 1) { fprintf(out, "%ld", first.value[k]); continue; }
    for (size_t i = 0; i < n; i++) col[i] = t[i].v[k];
    qsort(col, n, sizeof *col, cmp_long);
    fputc('[', out);
    for (size_t i = 0, runs = 0; i < n;) {
      size_t j = i;
      while (j + 1 < n && (col[j + 1] == col[j] || col[j + 1] == col[j] + 1)) j++;
      fprintf(out, col[j] > col[i] ? "%s%ld-%ld" : "%s%ld", runs++ ? ";" : "", col[i], col[j]);
      i = j + 1;
    }
    fputc(']', out);
  }
  free(col);
  free(t);
  return ok ? 0 : -1;
}

/* A memory stream's text once closed (base_out_of_memory when the stream could not be had). */
static FILE *text_open(char **text, size_t *len) {
  FILE *out = open_memstream(text, len);
  if (out == NULL) base_out_of_memory(4096);
  return out;
}

static char *text_close(FILE *out, char **text) {
  if (fclose(out) != 0) base_out_of_memory(4096);
  return *text;
}

char *outputs_device_set(const char *const *devices, size_t n) {
  char *text = NULL;
  size_t len = 0;
  FILE *out = text_open(&text, &len);
  if (n == 0 || put_product(out, devices, n) == 0) return text_close(out, &text);
  free(text_close(out, &text));  /* not one product: the list in its place */
  out = text_open(&text, &len);
  for (size_t i = 0; i < n; i++) fprintf(out, "%s%s", i ? " " : "", devices[i]);
  return text_close(out, &text);
}

const char *outputs_seconds(char *buf, size_t len, int64_t ps) {
  const int64_t per_s = INT64_C(1000000000000);
  const char *sign = ps < 0 ? "-" : "";
  uint64_t mag = ps < 0 ? (uint64_t)0 - (uint64_t)ps : (uint64_t)ps;
  int n = snprintf(buf, len, "%s%llu.%012llu", sign, (unsigned long long)(mag / (uint64_t)per_s),
                   (unsigned long long)(mag % (uint64_t)per_s));
  if (n <= 0 || (size_t)n >= len) return buf;
  char *end = buf + n - 1;
  while (*end == '0') *end-- = '\0';
  if (*end == '.') *end = '\0';
  return buf;
}

/* A float as metrics.csv writes it: "nan" whatever the NaN's sign bit. */
static const char *number(char *buf, size_t len, double x) {
  if (isnan(x)) snprintf(buf, len, "nan");
  else snprintf(buf, len, "%.9g", x);
  return buf;
}

double outputs_examples_per_s(const step_record *r) {
  return r->step_ps > 0 ? r->examples / (1e-12 * (double)r->step_ps) : 0.0;
}

int outputs_write_metrics(const char *path, const step_record *rows, long n, const outputs_columns *cols) {
  FILE *f = fopen(path, "w");
  if (f == NULL) return -1;
  fputs("step,sim_time_s,step_time_s,loss,examples_per_s", f);
  fputs(cols->sync ? ",compute_s,comm_s,idle_s,hbm_bytes,input_s,compile_s,host_s" : "", f);
  fputs(cols->restart ? ",restarts" : "", f);
  fputs(cols->ps ? ",worker,staleness" : "", f);
  fputs(cols->learning_rate ? ",learning_rate" : "", f);
  for (int k = 0; k < cols->nmetrics; k++) fprintf(f, ",%s", cols->metric_names[k]);
  fputc('\n', f);
  char t[7][32];
  for (long i = 0; i < n; i++) {
    const step_record *r = &rows[i];
    double eps = outputs_examples_per_s(r);
    char loss[32];
    fprintf(f, "%ld,%s,%s,%s,%.9g", r->step, outputs_seconds(t[0], sizeof t[0], r->end_ps),
            outputs_seconds(t[1], sizeof t[1], r->step_ps), number(loss, sizeof loss, r->loss), eps);
    if (cols->sync)
      fprintf(f, ",%s,%s,%s,%llu,%s,%s,%s", outputs_seconds(t[1], sizeof t[1], r->compute_ps),
              outputs_seconds(t[2], sizeof t[2], r->comm_ps), outputs_seconds(t[3], sizeof t[3], r->idle_ps),
              (unsigned long long)r->memory_bytes, outputs_seconds(t[4], sizeof t[4], r->input_ps),
              outputs_seconds(t[5], sizeof t[5], r->compile_ps), outputs_seconds(t[6], sizeof t[6], r->host_ps));
    if (cols->restart) fprintf(f, ",%d", r->restarts);
    if (cols->ps) fprintf(f, ",%d,%ld", r->worker, r->staleness);
    if (cols->learning_rate) fprintf(f, ",%.9g", r->learning_rate);
    for (int k = 0; k < cols->nmetrics; k++) fprintf(f, ",%s", number(loss, sizeof loss, r->metrics[k]));
    fputc('\n', f);
  }
  return base_fclose(f);
}

static json_t *error_object(const run_error *e) {
  json_t *o = json_object();
  json_object_set_new(o, "kind", json_string(e->kind));
  json_object_set_new(o, "device", json_string(e->device));
  json_object_set_new(o, "message", json_string(e->message));
  if (e->capacity_bytes > 0) {
    json_object_set_new(o, "needed_bytes", json_integer((json_int_t)e->needed_bytes));
    json_object_set_new(o, "capacity_bytes", json_integer((json_int_t)e->capacity_bytes));
  }
  return o;
}

/* The kind of a TF device name: "TPU" of ".../device:TPU:3" (len bytes at *kind). */
static const char *device_kind(const char *name, size_t *len) {
  const char *at = strstr(name, "device:");
  at = at ? at + strlen("device:") : name;
  *len = strcspn(at, ":");
  return at;
}

static int same_group(const run_device *a, const run_device *b) {
  size_t la, lb;
  const char *ka = device_kind(a->name, &la), *kb = device_kind(b->name, &lb);
  return a->peak_bytes == b->peak_bytes && a->capacity_bytes == b->capacity_bytes && la == lb &&
         memcmp(ka, kb, la) == 0;
}

/* summary.json's devices: a group per kind and figures alike, in the order of each group's first
** device, with its devices as one set (outputs_device_set) and their count: a pod's 4096 chips
** that peak alike are one entry. */
static json_t *device_groups(const run_device *dev, int n) {
  json_t *groups = json_array();
  int *group = base_xcalloc((size_t)n + 1, sizeof *group);     /* each device's group's first */
  const char **names = base_xcalloc((size_t)n + 1, sizeof *names);
  int *firsts = base_xcalloc((size_t)n + 1, sizeof *firsts);   /* each group's first device */
  int ngroups = 0;
  for (int i = 0; i < n; i++) {
    int g = 0;
    while (g < ngroups && !same_group(&dev[firsts[g]], &dev[i])) g++;
    if (g == ngroups) firsts[ngroups++] = i;
    group[i] = g;
  }
  for (int g = 0; g < ngroups; g++) {
    size_t count = 0;
    for (int i = firsts[g]; i < n; i++)
      if (group[i] == g) names[count++] = dev[i].name;
    char *set = outputs_device_set(names, count);
    json_t *o = json_object();
    json_object_set_new(o, "devices", json_string(set));
    json_object_set_new(o, "count", json_integer((json_int_t)count));
    json_object_set_new(o, "hbm_peak_bytes", json_integer((json_int_t)dev[firsts[g]].peak_bytes));
    json_object_set_new(o, "hbm_capacity_bytes", json_integer((json_int_t)dev[firsts[g]].capacity_bytes));
    json_array_append_new(groups, o);
    free(set);
  }
  free(firsts);
  free(names);
  free(group);
  return groups;
}

int outputs_write_summary(const char *path, const run_summary *s) {
  char hash[17];
  snprintf(hash, sizeof hash, "%016llx", (unsigned long long)s->run_hash);
  json_t *o = json_object();
  json_object_set_new(o, "scenario", json_string(s->scenario));
  json_object_set_new(o, "seed", json_integer((json_int_t)s->seed));
  json_object_set_new(o, "numerics", json_string(s->numerics));
  json_object_set_new(o, "strategy", json_string(s->strategy));
  json_object_set_new(o, "num_replicas_in_sync", json_integer(s->replicas));
  json_object_set_new(o, "all_reduce", json_string(s->all_reduce));
  if (s->slices > 1) json_object_set_new(o, "slices", json_integer(s->slices));
  if (s->compute_model[0]) json_object_set_new(o, "compute_model", json_string(s->compute_model));
  if (s->sharding) {
    json_object_set_new(o, "sharding", json_string(s->sharding));
    json_object_set_new(o, "mesh", json_string(s->mesh));
  }
  if (s->pipeline_stages > 1) {
    json_object_set_new(o, "pipeline_stages", json_integer(s->pipeline_stages));
    json_object_set_new(o, "pipeline_microbatches", json_integer(s->pipeline_microbatches));
    json_object_set_new(o, "pipeline_schedule", json_string(s->pipeline_schedule));
    json_object_set_new(o, "pipeline_bubble_fraction", json_real(s->pipeline_bubble_fraction));
    json_object_set_new(o, "pipeline_p2p_bytes_per_step", json_real(s->pipeline_p2p_bytes));
  }
  if (s->all_reduce_packs > 0) {
    json_object_set_new(o, "all_reduce_packs", json_integer(s->all_reduce_packs));
    json_object_set_new(o, "comm_hidden_s", json_real(s->means.comm_hidden_s));
  }
  /* The host round trip each step waited (TPU strategies), apart from idle: a planner reads it
  ** against steps_per_run / host_round_trip. */
  if (s->means.host_s > 0) json_object_set_new(o, "host_s", json_real(s->means.host_s));
  json_object_set_new(o, "sim_time_s", json_real(s->sim_time_s));
  json_object_set_new(o, "steps_completed", json_integer(s->steps_completed));
  /* null when there is no step or the loss is not a number (a diverged run): jansson has no NaN. */
  int has_loss = s->steps_completed > 0 && isfinite(s->final_loss);
  json_object_set_new(o, "final_loss", has_loss ? json_real(s->final_loss) : json_null());
  json_object_set_new(o, "examples_per_s", json_real(s->examples_per_s));
  if (s->has_tokens) {
    json_object_set_new(o, "tokens_per_s", json_real(s->tokens_per_s));
    json_object_set_new(o, "mfu", json_real(s->mfu));
  }
  json_object_set_new(o, "compile_s", json_real(s->compile_s));
  json_object_set_new(o, "steady_examples_per_s", json_real(s->steady_examples_per_s));
  /* CPU workers have no HBM: the figures are the replica device's memory (host RAM). */
  json_object_set_new(o, "hbm_peak_bytes", json_integer((json_int_t)s->memory_peak_bytes));
  json_object_set_new(o, "hbm_capacity_bytes", json_integer((json_int_t)s->memory_capacity_bytes));
  json_object_set_new(o, "preemptions", json_integer(s->preemptions));
  json_object_set_new(o, "failures", json_integer(s->failures));
  json_object_set_new(o, "restarts", json_integer(s->restarts));
  json_object_set_new(o, "lost_steps", json_integer(s->lost_steps));
  json_object_set_new(o, "checkpoints", json_integer(s->checkpoints));
  json_object_set_new(o, "checkpoint_time_s", json_real(s->checkpoint_time_s));
  json_object_set_new(o, "downtime_s", json_real(s->downtime_s));
  json_object_set_new(o, "goodput", json_real(s->goodput));
  if (s->stopped_by) {
    json_object_set_new(o, "stopped_by", json_string(s->stopped_by));
    json_object_set_new(o, "stopped_epoch", json_integer(s->stopped_epoch));
  }
  if (s->restored_best) json_object_set_new(o, "best_epoch", json_integer(s->best_epoch));
  json_object_set_new(o, "retried_closures", json_integer(s->retried_closures));
  json_object_set_new(o, "lost_updates", json_integer(s->lost_updates));
  json_object_set_new(o, "duplicated_updates", json_integer(s->duplicated_updates));
  if (s->nevaluate > 0) {
    json_t *ev = json_object();
    for (int k = 0; k < s->nevaluate; k++)
      json_object_set_new(ev, s->evaluate_names[k], isfinite(s->evaluate_values[k]) ? json_real(s->evaluate_values[k])
                                                                                   : json_null());
    json_object_set_new(ev, "examples", json_integer(s->evaluate_examples));
    json_object_set_new(o, "evaluate", ev);
  }
  if (s->has_evaluator) {
    json_object_set_new(o, "evaluations", json_integer(s->evaluations));
    json_object_set_new(o, "failed_restores", json_integer(s->failed_restores));
    json_object_set_new(o, "final_eval_loss", isfinite(s->final_eval_loss) ? json_real(s->final_eval_loss) : json_null());
    if (s->eval_failed) json_object_set_new(o, "evaluator_error", error_object(&s->eval_error));
  }
  if (strcmp(s->strategy, "parameter_server") == 0)
    json_object_set_new(o, "worker_utilization", json_real(s->worker_utilization));
  json_object_set_new(o, "chip_hours", json_real(s->chip_hours));
  json_object_set_new(o, "cost_usd", isfinite(s->cost_usd) ? json_real(s->cost_usd) : json_null());
  json_object_set_new(o, "price_model", json_string(s->price_model));
  if (!isfinite(s->cost_usd)) json_object_set_new(o, "cost_missing", json_string(s->price_missing));
  json_object_set_new(o, "events", json_integer((json_int_t)s->events));
  json_object_set_new(o, "devices", device_groups(s->devices, s->ndevices));
  json_object_set_new(o, "run_hash", json_string(hash));
  json_object_set_new(o, "wall_s", json_real(s->wall_s));
  if (s->failed) json_object_set_new(o, "error", error_object(&s->error));
  json_t *warnings = json_array();
  for (int i = 0; i < s->nwarnings; i++) json_array_append_new(warnings, json_string(s->warnings[i]));
  json_object_set_new(o, "warnings", warnings);
  int rc = json_dump_file(o, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
  json_decref(o);
  return rc;
}

/* ---- reading metrics.csv back ---------------------------------------------------------- */

typedef struct column_reader {
  const char *const *names; /* the wanted columns */
  int ncols;                /* entries in names */
  int *column;              /* field index of each wanted column (-1: absent) */
  int field;                /* field index within the current record */
  long record;              /* records seen (0: the header) */
  double *rows;             /* ncols values per record */
  long n, cap;              /* records read, and room */
} column_reader;

static void column_field(void *text, size_t len, void *arg) {
  column_reader *r = arg;
  char buf[64];
  snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf ? len : sizeof buf - 1), (const char *)text);
  for (int c = 0; c < r->ncols; c++) {
    if (r->record == 0 && !strcmp(buf, r->names[c])) r->column[c] = r->field;
    if (r->record > 0 && r->column[c] == r->field) r->rows[r->n * r->ncols + c] = strtod(buf, NULL);
  }
  r->field++;
}

/* Ends a record and makes room for the next, every value NaN until its field is read. */
static void column_record(int term, void *arg) {
  column_reader *r = arg;
  (void)term;
  if (r->record++ > 0) r->n++;
  r->field = 0;
  if (r->n + 1 >= r->cap) {
    r->cap = 2 * r->cap + 16;
    r->rows = base_xrealloc(r->rows, (size_t)r->cap * (size_t)r->ncols * sizeof *r->rows);
  }
  for (int c = 0; c < r->ncols; c++) r->rows[r->n * r->ncols + c] = NAN;
}

long outputs_read_columns(const char *path, const char *const *names, int ncols, double **rows) {
  FILE *f = base_fopen_regular(path);
  struct csv_parser csv;
  *rows = NULL;
  if (f == NULL || csv_init(&csv, 0) != 0) {
    if (f) fclose(f);
    return -1;
  }
  column_reader r = { .names = names, .ncols = ncols, .column = base_xcalloc((size_t)ncols, sizeof(int)) };
  for (int c = 0; c < ncols; c++) r.column[c] = -1;
  column_record(0, &r);
  r.record = 0;
  char buf[8192];
  size_t got;
  while ((got = fread(buf, 1, sizeof buf, f)) > 0) csv_parse(&csv, buf, got, column_field, column_record, &r);
  csv_fini(&csv, column_field, column_record, &r);
  csv_free(&csv);
  fclose(f);
  free(r.column);
  *rows = r.rows;
  return r.n;
}
