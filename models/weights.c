/*
** weights.c: the weights CSV `variable,flat_index,value` (md_weights_). Nine significant digits
** identify every float32 (FLT_DECIMAL_DIG), so a write then a read gives back the same bits.
** A read fills scratch copies and touches the model only once the whole file checked out.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/modelsInt.h"
#include "models/weights.h"

static const char *const columns[3] = {"variable", "flat_index", "value"};

/* A NaN prints as "nan" whatever its sign bit and payload, which depend on the BLAS and the
** compiler; every other float as the 9 significant digits that read back to its bits. */
void md_format_float(char *buf, size_t len, float v) {
  if (isnan(v)) snprintf(buf, len, "nan");
  else snprintf(buf, len, "%.9g", (double)v);
}

int md_weights_write(const md_model *m, FILE *out) {
  if (fprintf(out, "%s,%s,%s\n", columns[0], columns[1], columns[2]) < 0) return -1;
  for (int i = 0; i < md_model_num_vars(m); i++) {
    const md_var *v = md_model_var_const(m, i);
    for (size_t j = 0; v->data != NULL && j < v->size; j++) {  /* shapes only: no values */
      char num[32];
      md_format_float(num, sizeof num, v->data[j]);
      if (fprintf(out, "%s,%zu,%s\n", v->name, j, num) < 0) return -1;
    }
  }
  return ferror(out) ? -1 : 0;
}

typedef struct wreader {
  const md_model *m;      /* gives the variables' names and sizes */
  int header_seen;        /* the first record was the header */
  float **vals;           /* vals[i]: values read for variable i */
  unsigned char **seen;   /* seen[i][j]: element j of variable i was given */
} wreader;

static int check_header(int line, int nfields, char **fields, md_error *err) {
  for (int i = 0; i < 3; i++)
    if (i >= nfields || strcmp(fields[i], columns[i]) != 0)
      return md_error_set(err, line, i + 1, "the header must be variable,flat_index,value; "
                          "column %d is \"%s\"", i + 1, i < nfields ? fields[i] : "");
  if (nfields > 3)
    return md_error_set(err, line, 4, "the header must have 3 columns, found %d", nfields);
  return 0;
}

/* The variable a weights file names: its name, or Keras 3's for one Keras 2 and TF.js name
** otherwise (DepthwiseConv2D's LAYER/kernel is LAYER/depthwise_kernel), so files written by
** either version read. -1 when there is none. */
static int find_var(const md_model *m, const char *name) {
  int vi = md_model_find_var(m, name);
  size_t n = strlen(name);
  char keras2[sizeof ((md_var *)0)->name];
  if (vi >= 0 || n < 7 || strcmp(name + n - 7, "/kernel") != 0 || n + 10 > sizeof keras2 - 1) return vi;
  snprintf(keras2, sizeof keras2, "%.*s/depthwise_kernel", (int)(n - 7), name);
  return md_model_find_var(m, keras2);
}

static int record(void *ctx, int line, int nfields, char **fields, md_error *err) {
  wreader *r = ctx;
  if (!r->header_seen) {
    r->header_seen = 1;
    return check_header(line, nfields, fields, err);
  }
  if (nfields != 3)
    return md_error_set(err, line, nfields < 3 ? nfields + 1 : 4, "expected 3 fields, found %d", nfields);
  int vi = find_var(r->m, fields[0]);
  if (vi < 0) return md_error_set(err, line, 1, "unknown variable \"%s\"", fields[0]);
  const md_var *v = md_model_var_const(r->m, vi);
  char *end;
  long long idx = strtoll(fields[1], &end, 10);
  if (end == fields[1] || *end != '\0')
    return md_error_set(err, line, 2, "flat_index \"%s\" is not an integer", fields[1]);
  if (idx < 0 || (unsigned long long)idx >= v->size)
    return md_error_set(err, line, 2, "flat_index %lld is out of range for %s (%zu elements)", idx, v->name, v->size);
  if (r->seen[vi][idx])
    return md_error_set(err, line, 2, "%s element %lld given twice", v->name, idx);
  if (md_csvfile_float(fields[2], &r->vals[vi][idx]) != 0)
    return md_error_set(err, line, 3, "value \"%s\" is not a number", fields[2]);
  r->seen[vi][idx] = 1;
  return 0;
}

/* Names the first element no line gave; the error points just past the last line. */
static int check_complete(const wreader *r, int lines, md_error *err) {
  for (int i = 0; i < md_model_num_vars(r->m); i++) {
    const md_var *v = md_model_var_const(r->m, i);
    for (size_t j = 0; j < v->size; j++)
      if (!r->seen[i][j])
        return md_error_set(err, lines + 1, 0, "%s element %zu is missing", v->name, j);
  }
  return 0;
}

int md_weights_read(md_model *m, const char *path, md_error *err) {
  int nvars = md_model_num_vars(m);
  wreader r = {m, 0, base_xrealloc(NULL, sizeof(float *) * nvars),
               base_xrealloc(NULL, sizeof(unsigned char *) * nvars)};
  for (int i = 0; i < nvars; i++) {
    size_t n = md_model_var(m, i)->size;
    r.vals[i] = base_xrealloc(NULL, sizeof(float) * n);
    r.seen[i] = base_xrealloc(NULL, n);
    memset(r.seen[i], 0, n);
  }
  int lines = 0;
  int rc = md_csvfile_each(path, record, &r, &lines, err);
  if (rc == 0 && !r.header_seen)
    rc = md_error_set(err, 1, 0, "empty file, expected the header variable,flat_index,value");
  if (rc == 0) rc = check_complete(&r, lines, err);
  for (int i = 0; i < nvars; i++) {
    md_var *v = md_model_var(m, i);
    if (rc == 0) memcpy(v->data, r.vals[i], sizeof(float) * v->size);
    free(r.vals[i]);
    free(r.seen[i]);
  }
  free(r.vals);
  free(r.seen);
  return rc;
}
