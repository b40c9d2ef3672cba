/*
** dataset.c: in-memory training data (md_dataset_), from a CSV or synthetic. Every CSV error
** names the line and the 1-based column (field) it is about, column 0 meaning the whole line.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_randist.h>
#include <xxhash.h>

#include "models/dataset.h"
#include "models/modelsInt.h"

typedef struct loader {
  const char *label_name; /* label column's name, NULL for the last column */
  const char *const *target_names; /* the target columns' names, NULL for the last ones */
  int *target_col;        /* target_col[k]: 0-based field of target k (targets_width of them) */
  int ids_vocab;          /* > 0: features are ids in [0, ids_vocab) */
  int classes;            /* > 0: labels are in [0, classes) */
  md_dataset *d;          /* being filled */
  int ncols;              /* fields per record, from the header; 0 before it */
  int label_col;          /* 0-based index of the label field */
  size_t cap;             /* rows allocated in d's arrays */
} loader;

static char *copy_string(const char *s) {
  size_t n = strlen(s) + 1;
  return memcpy(base_xrealloc(NULL, n), s, n);
}

typedef enum { INDEX_OK = 0, INDEX_NOT_NUMBER, INDEX_NEGATIVE, INDEX_FRACTION, INDEX_TOO_BIG } index_status;

/* A whole field as an integer in [0, limit): labels and ids. Integral floats such as "2.0" are
** accepted since label columns are often written that way. */
static index_status parse_index(const char *s, int64_t limit, int32_t *v) {
  char *end;
  double x = strtod(s, &end);
  if (end == s) return INDEX_NOT_NUMBER;
  while (*end == ' ' || *end == '\t') end++;
  if (*end != '\0' || !isfinite(x)) return INDEX_NOT_NUMBER;
  if (x < 0) return INDEX_NEGATIVE;
  if (x != floor(x)) return INDEX_FRACTION;
  if (x >= (double)limit) return INDEX_TOO_BIG;
  *v = (int32_t)x;
  return INDEX_OK;
}

/* Parses field `col` of `line` as a label or id, reporting why it is not one. */
static int read_index(int line, int col, const char *what, const char *s,
                      int64_t limit, int32_t *v, md_error *err) {
  switch (parse_index(s, limit, v)) {
    case INDEX_OK: return 0;
    case INDEX_NOT_NUMBER: return md_error_set(err, line, col, "%s \"%s\" is not a number", what, s);
    case INDEX_NEGATIVE: return md_error_set(err, line, col, "%s %s is negative", what, s);
    case INDEX_FRACTION: return md_error_set(err, line, col, "%s %s is not an integer", what, s);
    case INDEX_TOO_BIG: break;
  }
  return md_error_set(err, line, col, "%s %s is out of range [0, %lld)", what, s,
                      (long long)limit);
}

/* Field i's target number, -1 when it is not a target column. */
static int target_of(const loader *ld, int i) {
  for (int k = 0; k < ld->d->targets_width; k++)
    if (ld->target_col[k] == i) return k;
  return -1;
}

/* The targets' fields, from their names or the last targets_width ones. */
static int target_header(loader *ld, int line, int nfields, char **fields, md_error *err) {
  md_dataset *d = ld->d;
  if (nfields < d->targets_width + 1)
    return md_error_set(err, line, 0, "the header has %d columns: %d targets and at least one feature expected",
                        nfields, d->targets_width);
  for (int k = 0; k < d->targets_width; k++) {
    ld->target_col[k] = nfields - d->targets_width + k;
    if (ld->target_names == NULL) continue;
    ld->target_col[k] = -1;
    for (int i = 0; i < nfields; i++)
      if (strcmp(fields[i], ld->target_names[k]) == 0) ld->target_col[k] = i;
    if (ld->target_col[k] < 0)
      return md_error_set(err, line, 0, "no label column \"%s\" in the header", ld->target_names[k]);
    for (int j = 0; j < k; j++)
      if (ld->target_col[j] == ld->target_col[k])
        return md_error_set(err, line, ld->target_col[k] + 1, "label column \"%s\" is listed twice", ld->target_names[k]);
  }
  d->width = nfields - d->targets_width;
  d->columns = base_xrealloc(NULL, sizeof(char *) * d->width);
  for (int i = 0, k = 0; i < nfields; i++)
    if (target_of(ld, i) < 0) d->columns[k++] = copy_string(fields[i]);
  return 0;
}

static int header(loader *ld, int line, int nfields, char **fields, md_error *err) {
  md_dataset *d = ld->d;
  ld->ncols = nfields;
  if (d->targets_width > 0) return target_header(ld, line, nfields, fields, err);
  ld->label_col = nfields - 1;
  if (ld->label_name != NULL) {
    ld->label_col = -1;
    for (int i = 0; i < nfields; i++)
      if (strcmp(fields[i], ld->label_name) == 0) ld->label_col = i;
    if (ld->label_col < 0)
      return md_error_set(err, line, 0, "no label column \"%s\" in the header", ld->label_name);
  }
  if (nfields < 2)
    return md_error_set(err, line, 0, "the header has no feature column besides the label");
  d->width = nfields - 1;
  d->columns = base_xrealloc(NULL, sizeof(char *) * d->width);
  for (int i = 0, k = 0; i < nfields; i++)
    if (i != ld->label_col) d->columns[k++] = copy_string(fields[i]);
  return 0;
}

static int record(void *ctx, int line, int nfields, char **fields, md_error *err) {
  loader *ld = ctx;
  md_dataset *d = ld->d;
  if (ld->ncols == 0) return header(ld, line, nfields, fields, err);
  if (nfields != ld->ncols)
    return md_error_set(err, line, nfields < ld->ncols ? nfields + 1 : ld->ncols + 1,
                        "expected %d fields as in the header, found %d", ld->ncols,
                        nfields);
  if (d->rows == ld->cap) {
    ld->cap = ld->cap ? 2 * ld->cap : 256;
    if (d->targets_width > 0) d->targets = base_xrealloc(d->targets, sizeof(float) * ld->cap * d->targets_width);
    else d->labels = base_xrealloc(d->labels, sizeof(int32_t) * ld->cap);
    if (d->is_ids) d->ids = base_xrealloc(d->ids, sizeof(int32_t) * ld->cap * d->width);
    else d->x = base_xrealloc(d->x, sizeof(float) * ld->cap * d->width);
  }
  size_t base = d->rows * (size_t)d->width;
  for (int i = 0, k = 0; i < nfields; i++) {
    const char *f = fields[i];
    int col = i + 1, t = target_of(ld, i);
    if (t >= 0) {
      float *tv = &d->targets[d->rows * (size_t)d->targets_width + t];
      if (md_csvfile_float(f, tv) != 0 || !isfinite(*tv))
        return md_error_set(err, line, col, "label \"%s\" is not a finite number", f);
    } else if (d->targets_width == 0 && i == ld->label_col) {
      if (read_index(line, col, "label", f, ld->classes > 0 ? ld->classes : INT32_MAX, &d->labels[d->rows], err) != 0) return -1;
      if (d->labels[d->rows] + 1 > d->classes) d->classes = d->labels[d->rows] + 1;
    } else if (d->is_ids) {
      if (read_index(line, col, "id", f, ld->ids_vocab, &d->ids[base + k++], err) != 0) return -1;
    } else {
      float *xv = &d->x[base + k++];
      if (md_csvfile_float(f, xv) != 0 || !isfinite(*xv))
        return md_error_set(err, line, col, "\"%s\" is not a finite number", f);
    }
  }
  d->rows++;
  return 0;
}

/* Reads the CSV into ld's dataset (its is_ids and targets_width set), NULL with err. */
static md_dataset *load(const char *path, loader *ld, md_error *err) {
  md_dataset *d = ld->d;
  int lines = 0;
  int rc = md_csvfile_each(path, record, ld, &lines, err);
  if (rc == 0 && ld->ncols == 0) rc = md_error_set(err, 1, 0, "empty file, expected a header row");
  if (rc == 0 && d->rows == 0) rc = md_error_set(err, lines + 1, 0, "no data rows after the header");
  free(ld->target_col);
  if (rc != 0) {
    md_dataset_free(d);
    return NULL;
  }
  return d;
}

static md_dataset *new_dataset(int ids_vocab, int targets_width) {
  md_dataset *d = base_xrealloc(NULL, sizeof *d);
  memset(d, 0, sizeof *d);
  d->is_ids = ids_vocab > 0;
  d->targets_width = targets_width;
  return d;
}

md_dataset *md_dataset_load_csv(const char *path, const char *label_column, int ids_vocab,
                                int classes, md_error *err) {
  loader ld = {label_column, NULL, NULL, ids_vocab, classes, new_dataset(ids_vocab, 0), 0, 0, 0};
  return load(path, &ld, err);
}

md_dataset *md_dataset_load_csv_targets(const char *path, const char *const *columns, int width,
                                        int ids_vocab, md_error *err) {
  loader ld = {NULL, columns, base_xrealloc(NULL, sizeof(int) * width), ids_vocab, 0,
               new_dataset(ids_vocab, width), 0, 0, 0};
  return load(path, &ld, err);
}

size_t md_dataset_labels_per_row(const md_dataset *d) { return d->labels_width > 0 ? (size_t)d->labels_width : 1; }

int md_dataset_targets_to_labels(md_dataset *d, int classes, md_error *err) {
  size_t width = (size_t)d->targets_width;
  int32_t *labels = base_xrealloc(NULL, sizeof(int32_t) * (d->rows * width > 0 ? d->rows * width : 1));
  for (size_t i = 0; i < d->rows * width; i++) {
    float t = d->targets[i];
    if (!(t >= 0 && t < (float)classes && t == (float)(int32_t)t)) {
      free(labels);
      return md_error_set(err, (int)(i / width) + 2, 1, "position %zu's label %g is not a class of the "
                          "model's output (an integer in [0, %d))", i % width, (double)t, classes);
    }
    labels[i] = (int32_t)t;
    if (labels[i] + 1 > d->classes) d->classes = labels[i] + 1;
  }
  free(d->targets);
  d->targets = NULL;
  free(d->labels);
  d->labels = labels;
  d->labels_width = (int)width;
  d->targets_width = 0;
  return 0;
}

void md_dataset_one_hot(md_dataset *d, int width) {
  d->targets = base_xrealloc(NULL, sizeof(float) * d->rows * width);
  for (size_t i = 0; i < d->rows; i++)
    for (int k = 0; k < width; k++)
      d->targets[i * width + k] = width == 1 ? (float)d->labels[i] : d->labels[i] == k ? 1.0f : 0.0f;
  free(d->labels);
  d->labels = NULL;
  d->targets_width = width;
}

md_dataset *md_dataset_synthetic(size_t rows, int features, int classes, gsl_rng *rng) {
  md_dataset *d = base_xrealloc(NULL, sizeof *d);
  memset(d, 0, sizeof *d);
  d->rows = rows;
  d->width = features;
  d->x = base_xrealloc(NULL, sizeof(float) * rows * features);
  d->labels = base_xrealloc(NULL, sizeof(int32_t) * rows);
  d->columns = base_xrealloc(NULL, sizeof(char *) * features);
  for (int j = 0; j < features; j++) {
    char name[32];
    snprintf(name, sizeof name, "f%d", j);
    d->columns[j] = copy_string(name);
  }
  /* The map M [features, classes] comes first in the stream, then each row's features. */
  double *map = base_xrealloc(NULL, sizeof(double) * features * classes);
  for (int k = 0; k < features * classes; k++) map[k] = gsl_ran_gaussian(rng, 1.0);
  for (size_t i = 0; i < rows; i++) {
    float *xi = d->x + i * features;
    for (int j = 0; j < features; j++) xi[j] = (float)gsl_ran_gaussian(rng, 1.0);
    /* The label is computed from the stored (float) features, in double; ties go to the first. */
    int best = 0;
    double best_score = -INFINITY;
    for (int c = 0; c < classes; c++) {
      double s = 0;
      for (int j = 0; j < features; j++) s += (double)xi[j] * map[j * classes + c];
      if (s > best_score) {
        best_score = s;
        best = c;
      }
    }
    d->labels[i] = best;
    if (best + 1 > d->classes) d->classes = best + 1;
  }
  free(map);
  return d;
}

md_dataset *md_dataset_shapes(size_t rows, int width, int classes, int targets_width, int is_ids,
                              const int *vocab, uint64_t seed) {
  md_dataset *d = base_xcalloc(1, sizeof *d);
  *d = (md_dataset){ .rows = rows, .width = width, .classes = classes, .targets_width = targets_width,
                     .is_ids = is_ids, .draw_seed = seed };
  d->vocab = base_xcalloc((size_t)(width > 0 ? width : 1), sizeof *d->vocab);
  if (width > 0) memcpy(d->vocab, vocab, sizeof *d->vocab * (size_t)width);
  return d;
}

void md_dataset_free(md_dataset *d) {
  if (d == NULL) return;
  free(d->vocab);
  if (d->columns != NULL)
    for (int j = 0; j < d->width; j++) free(d->columns[j]);
  free(d->columns);
  free(d->x);
  free(d->ids);
  free(d->labels);
  free(d->targets);
  free(d);
}

/* Row r of shapes-only data (md_dataset_shapes) into slot i of the caller's buffers. */
static void draw_row(const md_dataset *d, size_t r, int i, float *x, int32_t *ids, int32_t *labels,
                     float *targets) {
  size_t w = (size_t)d->width, tw = (size_t)d->targets_width, lw = md_dataset_labels_per_row(d);
  for (size_t c = 0; c < w; c++) {
    uint64_t key[2] = { (uint64_t)r, (uint64_t)c };
    int32_t id = d->vocab[c] > 0 ? (int32_t)(XXH64(key, sizeof key, d->draw_seed) % (uint64_t)d->vocab[c]) : 0;
    if (x != NULL && !d->is_ids) x[i * w + c] = (float)id;
    if (ids != NULL && d->is_ids) ids[i * w + c] = id;
  }
  if (labels != NULL && tw == 0) memset(labels + i * lw, 0, sizeof(int32_t) * lw);
  if (targets != NULL && tw > 0) memset(targets + i * tw, 0, sizeof(float) * tw);
}

/* Row r of d into slot i of the caller's buffers. */
static void copy_row(const md_dataset *d, size_t r, int i, float *x, int32_t *ids, int32_t *labels,
                     float *targets) {
  size_t w = (size_t)d->width, tw = (size_t)d->targets_width;
  if (d->vocab != NULL) {
    draw_row(d, r, i, x, ids, labels, targets);
    return;
  }
  if (x != NULL && !d->is_ids) memcpy(x + i * w, d->x + r * w, sizeof(float) * w);
  if (ids != NULL && d->is_ids) memcpy(ids + i * w, d->ids + r * w, sizeof(int32_t) * w);
  size_t lw = md_dataset_labels_per_row(d);
  if (labels != NULL && tw == 0) memcpy(labels + i * lw, d->labels + r * lw, sizeof(int32_t) * lw);
  if (targets != NULL && tw > 0) memcpy(targets + i * tw, d->targets + r * tw, sizeof(float) * tw);
}

void md_dataset_gather(const md_dataset *d, size_t start, int n, float *x, int32_t *ids,
                       int32_t *labels, float *targets) {
  for (int i = 0; i < n; i++) copy_row(d, (start + (size_t)i) % d->rows, i, x, ids, labels, targets);
}

void md_dataset_gather_rows(const md_dataset *d, const int64_t *rows, int n, float *x, int32_t *ids,
                            int32_t *labels, float *targets) {
  for (int i = 0; i < n; i++) copy_row(d, (size_t)rows[i], i, x, ids, labels, targets);
}

int md_dataset_append(md_dataset *d, const md_dataset *more, md_error *err) {
  for (int c = 0; c < d->width && c < more->width; c++)
    if (strcmp(d->columns[c], more->columns[c]) != 0)
      return md_error_set(err, 1, c + 1, "column %d is \"%s\" where the first file has \"%s\"",
                          c + 1, more->columns[c], d->columns[c]);
  if (more->width != d->width || more->is_ids != d->is_ids)
    return md_error_set(err, 1, 0, "%d feature columns where the first file has %d",
                        more->width, d->width);
  size_t w = (size_t)d->width, rows = d->rows + more->rows;
  if (d->is_ids) {
    d->ids = base_xrealloc(d->ids, sizeof(int32_t) * rows * w);
    memcpy(d->ids + d->rows * w, more->ids, sizeof(int32_t) * more->rows * w);
  } else {
    d->x = base_xrealloc(d->x, sizeof(float) * rows * w);
    memcpy(d->x + d->rows * w, more->x, sizeof(float) * more->rows * w);
  }
  size_t tw = (size_t)d->targets_width;
  if (tw > 0) {  /* the same loader read both: the same targets_width */
    d->targets = base_xrealloc(d->targets, sizeof(float) * rows * tw);
    memcpy(d->targets + d->rows * tw, more->targets, sizeof(float) * more->rows * tw);
  } else {
    d->labels = base_xrealloc(d->labels, sizeof(int32_t) * rows);
    memcpy(d->labels + d->rows, more->labels, sizeof(int32_t) * more->rows);
  }
  d->rows = rows;
  if (more->classes > d->classes) d->classes = more->classes;
  return 0;
}

int md_dataset_select_columns(md_dataset *d, const char (*names)[64], int n, md_error *err) {
  if (d->is_ids) return md_error_set(err, 1, 1, "columns are chosen from float features, not from an id dataset");
  int *from = base_xcalloc((size_t)n, sizeof *from);
  for (int j = 0; j < n; j++) {
    from[j] = -1;
    for (int i = 0; i < d->width && d->columns != NULL; i++)
      if (strcmp(d->columns[i], names[j]) == 0) from[j] = i;
    if (from[j] < 0) {
      free(from);
      return md_error_set(err, 1, 1, "no feature column is named %s", names[j]);
    }
  }
  float *x = base_xcalloc(d->rows * (size_t)n + 1, sizeof *x);
  for (size_t r = 0; r < d->rows; r++)
    for (int j = 0; j < n; j++) x[r * (size_t)n + (size_t)j] = d->x[r * (size_t)d->width + (size_t)from[j]];
  char **columns = base_xcalloc((size_t)n, sizeof *columns);
  for (int j = 0; j < n; j++) columns[j] = base_strdup(names[j]);
  for (int i = 0; i < d->width; i++) free(d->columns[i]);
  free(d->columns);
  free(d->x);
  free(from);
  d->x = x;
  d->columns = columns;
  d->width = n;
  return 0;
}
