/*
** csvfile.c: reads a CSV file record by record through libcsv (md_csvfile_). The file is fed
** to the parser one physical line at a time, so when a record ends the current line number is
** the line it ended on: that is what error messages point at. Record functions name the
** offending field by its 1-based number in err->col; the reader turns that into the character
** column where the field starts on the physical line, so CSV errors point like YAML errors do.
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <csv.h>

#include "models/modelsInt.h"

typedef struct reader {
  md_csvfile_fn fn;       /* the caller's per-record function */
  void *ctx;              /* its context */
  md_error *err;          /* where fn and the reader report */
  int line;               /* physical line being parsed (1-based) */
  const char *text;       /* that line's bytes, for turning field numbers into columns */
  size_t textlen;         /* bytes in text */
  int failed;             /* set once fn or the parser failed: later callbacks are ignored */
  char **fields;          /* the current record's fields, NUL-terminated copies */
  int nfields;            /* fields in the current record so far */
  int cap;                /* entries allocated in fields */
} reader;

static void on_field(void *data, size_t len, void *arg) {
  reader *r = arg;
  if (r->failed) return;
  if (r->nfields == r->cap) {
    r->cap = r->cap ? 2 * r->cap : 16;
    r->fields = base_xrealloc(r->fields, sizeof(char *) * r->cap);
  }
  char *f = base_xrealloc(NULL, len + 1);
  memcpy(f, data, len);
  f[len] = '\0';
  r->fields[r->nfields++] = f;
}

static void drop_fields(reader *r) {
  for (int i = 0; i < r->nfields; i++) free(r->fields[i]);
  r->nfields = 0;
}

/* The 1-based column where field `field` (1-based) starts on the line: after field-1 commas
** outside quotes; a field past the last one points just after the line's end. */
static int field_column(const char *text, size_t len, int field) {
  int commas = 0, quoted = 0;
  size_t i = 0;
  while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r')) len--;
  for (; i < len && commas < field - 1; i++) {
    if (text[i] == '"') quoted = !quoted;
    else if (text[i] == ',' && !quoted) commas++;
  }
  return (int)i + 1;
}

static void on_record(int term, void *arg) {
  (void)term;
  reader *r = arg;
  if (!r->failed && r->fn(r->ctx, r->line, r->nfields, r->fields, r->err) != 0) {
    r->failed = 1;
    if (r->err->col > 0) r->err->col = field_column(r->text, r->textlen, r->err->col);
  }
  drop_fields(r);
}

int md_csvfile_each(const char *path, md_csvfile_fn fn, void *ctx, int *lines, md_error *err) {
  FILE *f = base_fopen_regular(path);
  if (f == NULL) return md_error_set(err, 0, 0, "%s", base_open_error(errno));
  int rc = md_csvfile_each_stream(f, fn, ctx, lines, err);
  fclose(f);
  return rc;
}

int md_csvfile_each_stream(FILE *f, md_csvfile_fn fn, void *ctx, int *lines, md_error *err) {
  struct csv_parser p;
  /* Strict: a stray quote is an error rather than a silently different field. */
  if (csv_init(&p, CSV_STRICT) != 0) return md_error_set(err, 0, 0, "cannot start the CSV parser");
  reader r = {fn, ctx, err, 0, "", 0, 0, NULL, 0, 0};
  char *buf = NULL;
  size_t bufcap = 0;
  ssize_t len;
  while (!r.failed && (len = getline(&buf, &bufcap, f)) >= 0) {
    r.line++;
    r.text = buf;
    r.textlen = (size_t)len;
    if (csv_parse(&p, buf, (size_t)len, on_field, on_record, &r) != (size_t)len && !r.failed) {
      md_error_set(err, r.line, 0, "%s", csv_strerror(csv_error(&p)));
      r.failed = 1;
    }
  }
  int io_error = ferror(f);
  if (!r.failed && csv_fini(&p, on_field, on_record, &r) != 0 && !r.failed) {
    md_error_set(err, r.line, 0, "%s", csv_strerror(csv_error(&p)));
    r.failed = 1;
  }
  if (!r.failed && io_error) {
    md_error_set(err, r.line, 0, "read error");
    r.failed = 1;
  }
  drop_fields(&r);
  free(r.fields);
  free(buf);
  csv_free(&p);
  if (lines != NULL) *lines = r.line;
  return r.failed ? -1 : 0;
}

int md_csvfile_float(const char *field, float *v) {
  char *end;
  *v = strtof(field, &end);
  if (end == field) return -1;
  while (*end == ' ' || *end == '\t') end++;
  return *end == '\0' ? 0 : -1;
}
