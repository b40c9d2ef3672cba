/*
** diff.c: `podsim diff A B` (diff.h). Each figure is read from summary.json when the run wrote it
** (a figure neither run has is left out; one run without it shows "-"), the step time breakdown
** is the mean over metrics.csv's rows with the compile left out, as the run's own summary
** prints it. The ratio is B/A ("-" when A is 0 or either is missing).
*/
#include "scenarios/report/diff.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/base.h"
#include "plots/plot.h"
#include "scenarios/report/outputs.h"
#include "scenarios/report/report.h"

/* The columns of metrics.csv the comparison reads; the step breakdown's parts in the order of
** the run summary's "step time" line. */
enum { C_STEP, C_STEP_TIME, C_LOSS, C_COMPILE, C_INPUT, C_COMPUTE, C_COMM, C_IDLE, C_HOST, C_COLUMNS };
static const char *const COLUMNS[C_COLUMNS] = { "step", "step_time_s", "loss", "compile_s", "input_s",
                                                "compute_s", "comm_s", "idle_s", "host_s" };
static const char *const PART_LABELS[] = { "input", "compute", "communication", "idle", "host" };
#define N_PARTS ((int)(sizeof PART_LABELS / sizeof PART_LABELS[0]))

typedef struct diff_run {
  const char *dir;        /* as given */
  json_t *summary;        /* summary.json */
  double *rows;           /* C_COLUMNS values per row of metrics.csv */
  long n;                 /* rows */
  double means[6];        /* mean step (compile left out), then its parts as PART_LABELS (host NaN
                             in a run written before metrics.csv had host_s) */
} diff_run;

/* K_TEXT: a string compared for equality; K_STEPS: the step time breakdown of metrics.csv. */
typedef enum { K_REAL, K_COUNT, K_BYTES, K_TEXT, K_STEPS } figure_kind;
typedef struct figure {
  const char *heading;    /* starts a section when not NULL */
  const char *key;        /* summary.json key */
  figure_kind kind;       /* how it prints */
} figure;

/* The figures compared, in sections. */
static const figure FIGURES[] = {
  { "run", "strategy", K_TEXT }, { NULL, "num_replicas_in_sync", K_COUNT }, { NULL, "steps_completed", K_COUNT },
  { NULL, "sim_time_s", K_REAL }, { NULL, "examples_per_s", K_REAL }, { NULL, "final_loss", K_REAL },
  { NULL, "compile_s", K_REAL }, { NULL, "events", K_COUNT }, { NULL, "chip_hours", K_REAL },
  { NULL, "cost_usd", K_REAL }, { NULL, "price_model", K_TEXT }, { NULL, "run_hash", K_TEXT },
  { "step time", NULL, K_STEPS },
  { "memory", "hbm_peak_bytes", K_BYTES }, { NULL, "hbm_capacity_bytes", K_BYTES },
  { "faults", "preemptions", K_COUNT }, { NULL, "failures", K_COUNT }, { NULL, "restarts", K_COUNT },
  { NULL, "lost_steps", K_COUNT }, { NULL, "checkpoints", K_COUNT }, { NULL, "downtime_s", K_REAL },
  { NULL, "goodput", K_REAL }, { NULL, "retried_closures", K_COUNT }, { NULL, "lost_updates", K_COUNT },
  { NULL, "duplicated_updates", K_COUNT },
};

static int not_a_run(const char *dir, const char *why, char *msg, size_t msglen) {
  base_format(msg, msglen, "podsim diff: %s: expected the output directory of a training run "
              "(`podsim run -o DIR`: summary.json and metrics.csv), found %s", dir, why);
  return -1;
}

static int load_run(diff_run *r, const char *dir, char *msg, size_t msglen) {
  char path[4096];
  json_error_t jerr;
  struct stat st;
  r->dir = dir;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) return not_a_run(dir, "no such directory", msg, msglen);
  FILE *f = base_fopen_regular(outputs_path(path, sizeof path, dir, "summary.json"));
  if (f == NULL) {
    char why[300];
    base_format(why, sizeof why, "no readable summary.json (%s)", base_open_error(errno));
    return not_a_run(dir, why, msg, msglen);
  }
  r->summary = json_loadf(f, 0, &jerr);
  fclose(f);
  if (r->summary == NULL) {
    char why[300];
    base_format(why, sizeof why, "no readable summary.json (%s)", jerr.text);
    return not_a_run(dir, why, msg, msglen);
  }
  if (!json_is_string(json_object_get(r->summary, "run_hash")))
    return not_a_run(dir, "a summary.json without run_hash", msg, msglen);
  r->n = outputs_read_columns(outputs_path(path, sizeof path, dir, "metrics.csv"), COLUMNS, C_COLUMNS, &r->rows);
  if (r->n < 0)
    return not_a_run(dir, errno == EINVAL ? "a metrics.csv that is not a regular file" : "no metrics.csv (a collective workload's directory?)",
                     msg, msglen);
  /* loss is "nan" in a numerics: off run (nothing computed it), so only step time must be there */
  if (r->n > 0 && isnan(r->rows[C_STEP_TIME]))
    return not_a_run(dir, "a metrics.csv without a step_time_s column", msg, msglen);
  for (long i = 0; i < r->n; i++) {
    const double *row = r->rows + i * C_COLUMNS;
    r->means[0] += row[C_STEP_TIME] - (isnan(row[C_COMPILE]) ? 0 : row[C_COMPILE]);
    for (int k = 0; k < N_PARTS; k++) r->means[1 + k] += row[C_INPUT + k];
  }
  for (int k = 0; k <= N_PARTS; k++) r->means[k] = r->n > 0 ? r->means[k] / (double)r->n : NAN;
  return 0;
}

static void free_run(diff_run *r) {
  json_decref(r->summary);
  free(r->rows);
}

/* A figure of summary.json as a number, NaN when the run did not write it. */
static double figure_of(const diff_run *r, const char *key) {
  json_t *v = json_object_get(r->summary, key);
  return json_is_number(v) ? json_number_value(v) : NAN;
}

static const char *figure_text(char *buf, size_t len, figure_kind kind, double v) {
  if (isnan(v)) return base_format(buf, len, "-");
  if (kind == K_BYTES) return outputs_bytes(buf, len, v);
  return base_format(buf, len, kind == K_COUNT ? "%.0f" : "%.6g", v);
}

static void print_row(FILE *out, const char *label, figure_kind kind, double a, double b, double scale) {
  char ta[40], tb[40], ratio[32] = "-";
  if (!isnan(a) && !isnan(b) && a != 0) base_format(ratio, sizeof ratio, "%.4g", b / a);
  fprintf(out, "  %-22s %21s %21s %10s\n", label, figure_text(ta, sizeof ta, kind, a * scale),
          figure_text(tb, sizeof tb, kind, b * scale), ratio);
}

static const char *json_text(const diff_run *r, const char *key) {
  const char *t = json_string_value(json_object_get(r->summary, key));
  return t ? t : "-";
}

/* The mean step and its parts, in the unit that suits the longer run's. */
static void print_steps(FILE *out, const diff_run *r) {
  const char *unit;
  char label[64];
  double scale = report_time_unit(fmax(r[0].means[0], r[1].means[0]), &unit);
  base_format(label, sizeof label, "mean step (%s)", unit);
  print_row(out, label, K_REAL, r[0].means[0], r[1].means[0], scale);
  for (int k = 0; k < N_PARTS; k++) {
    base_format(label, sizeof label, "  %s", PART_LABELS[k]);
    print_row(out, label, K_REAL, r[0].means[1 + k], r[1].means[1 + k], scale);
  }
}

static void print_figure(FILE *out, const diff_run *r, const figure *f) {
  if (f->heading) fprintf(out, "%s\n", f->heading);
  if (f->kind == K_STEPS) {
    print_steps(out, r);
  } else if (f->kind == K_TEXT) {
    const char *ta = json_text(&r[0], f->key), *tb = json_text(&r[1], f->key);
    fprintf(out, "  %-22s %21s %21s %10s\n", f->key, ta, tb, strcmp(ta, tb) ? "different" : "same");
  } else {
    double va = figure_of(&r[0], f->key), vb = figure_of(&r[1], f->key);
    if (!isnan(va) || !isnan(vb)) print_row(out, f->key, f->kind, va, vb, 1.0);
  }
}



/* Both runs' lines on one chart: column C against the step (against updates applied, the row,
** for parameter_server runs, whose steps complete out of order, as the run's own charts do). */
static int overlay(const diff_run *r, const char *path, const char *title, int column, const char *ylabel,
                   double scale, char *msg, size_t msglen) {
  double *xy[2][2];
  pl_series series[2];
  char labels[2][96];
  const char *xlabel = "step";
  for (int j = 0; j < 2; j++) {
    int async = !strcmp(json_text(&r[j], "strategy"), "parameter_server");
    if (async) xlabel = "step (updates applied for parameter_server)";
    size_t n = (size_t)r[j].n;
    xy[j][0] = base_xcalloc(n + 1, sizeof(double));
    xy[j][1] = base_xcalloc(n + 1, sizeof(double));
    for (size_t i = 0; i < n; i++) {
      const double *row = r[j].rows + i * C_COLUMNS;
      xy[j][0][i] = async ? (double)(i + 1) : row[C_STEP];
      xy[j][1][i] = scale * (row[column] - (column == C_STEP_TIME && !isnan(row[C_COMPILE]) ? row[C_COMPILE] : 0));
    }
    base_format(labels[j], sizeof labels[j], "%c: %.80s", 'A' + j, r[j].dir);
    series[j] = (pl_series){ labels[j], xy[j][0], xy[j][1], n, PL_MARK_NONE };
  }
  int rc = pl_line_chart(path, PL_PNG, title, xlabel, ylabel, series, 2, msg, msglen);
  for (int j = 0; j < 2; j++) free(xy[j][0]), free(xy[j][1]);
  return rc;
}

/* "quickstart, A vs B", or "quickstart vs tpu_v4" when the scenarios differ. */
static void names(const diff_run *r, char *buf, size_t len) {
  const char *a = json_text(&r[0], "scenario"), *b = json_text(&r[1], "scenario");
  if (strcmp(a, b)) base_format(buf, len, "%.120s vs %.120s", a, b);
  else base_format(buf, len, "%.120s, A vs B", a);
}

/* Whether a row of r has a loss (a numerics: off run writes "nan" in every row). */
static int has_loss(const diff_run *r) {
  for (long i = 0; i < r->n; i++)
    if (!isnan(r->rows[i * C_COLUMNS + C_LOSS])) return 1;
  return 0;
}

static int charts(const diff_run *r, const char *dir, FILE *out, char *msg, size_t msglen) {
  char path[4096], ylabel[64], title[320], what[280];
  const char *unit;
  double longest = 0;
  if (outputs_make_dir(dir) != 0) return base_format(msg, msglen, "podsim diff: cannot create %s", dir), -1;
  for (int j = 0; j < 2; j++)
    for (long i = 0; i < r[j].n; i++) {
      const double *row = r[j].rows + i * C_COLUMNS;
      longest = fmax(longest, row[C_STEP_TIME] - (isnan(row[C_COMPILE]) ? 0 : row[C_COMPILE]));
    }
  double scale = report_time_unit(longest, &unit);
  base_format(ylabel, sizeof ylabel, "simulated step time (%s)", unit);
  names(r, what, sizeof what);
  base_format(title, sizeof title, "Step time \xe2\x80\x94 %s", what);
  if (overlay(r, outputs_path(path, sizeof path, dir, "diff_step_time.png"), title, C_STEP_TIME, ylabel, scale, msg, msglen))
    return -1;
  if (!has_loss(&r[0]) && !has_loss(&r[1])) {
    fprintf(out, "  %-22s %s/diff_step_time.png (no loss chart: neither run computed a loss, numerics: off)\n",
            "charts", dir);
    return 0;
  }
  base_format(title, sizeof title, "Training loss \xe2\x80\x94 %s", what);
  if (overlay(r, outputs_path(path, sizeof path, dir, "diff_loss.png"), title, C_LOSS, "loss (mean per example)", 1.0, msg, msglen))
    return -1;
  fprintf(out, "  %-22s %s/diff_step_time.png, %s/diff_loss.png\n", "charts", dir, dir);
  return 0;
}

int diff_runs(const char *a, const char *b, const char *chart_dir, FILE *out, char *msg, size_t msglen) {
  diff_run r[2];
  memset(r, 0, sizeof r);
  int rc = load_run(&r[0], a, msg, msglen);
  if (rc == 0) rc = load_run(&r[1], b, msg, msglen);
  if (rc == 0) {
    fprintf(out, "podsim diff: A %s (%s), B %s (%s)\n", a, json_text(&r[0], "scenario"), b, json_text(&r[1], "scenario"));
    fprintf(out, "  %-22s %21s %21s %10s\n", "", "A", "B", "B/A");
    for (size_t i = 0; i < sizeof FIGURES / sizeof FIGURES[0]; i++) print_figure(out, r, &FIGURES[i]);
    rc = charts(r, chart_dir, out, msg, msglen);
  }
  free_run(&r[0]);
  free_run(&r[1]);
  return rc;
}
