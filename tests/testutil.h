/* testutil.h: shared by the cmocka tests. */
#ifndef PODSIM_TESTUTIL_H
#define PODSIM_TESTUTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#ifndef PODSIM_SOURCE_DIR
#define PODSIM_SOURCE_DIR "."
#endif

/* An absolute path to a file of the source tree (tests run from any directory). */
static inline const char *tu_src(const char *rel) {
  static char buf[8][4096];
  static int next;
  char *b = buf[next++ % 8];
  snprintf(b, sizeof buf[0], "%s/%s", PODSIM_SOURCE_DIR, rel);
  return b;
}

/* A fresh directory under /tmp named after prefix (malloc'ed; remove with tu_remove_dir). */
static inline char *tu_temp_dir(const char *prefix) {
  char buf[256];
  snprintf(buf, sizeof buf, "/tmp/%s-XXXXXX", prefix);
  char *d = strdup(buf);
  assert_non_null(mkdtemp(d));
  return d;
}

/* Removes dir and everything in it, and frees the name. */
static inline void tu_remove_dir(char *dir) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
  free(dir);
}

/* The bytes of dir/name (malloc'ed), NULL when it is missing; lines holding any of the strings
** of skip (NULL-terminated; NULL: none) are left out: summary.json's host figures, which two
** runs of one scenario need not share. */
static inline char *tu_slurp(const char *dir, const char *name, const char *const *skip) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "r");
  if (f == NULL) return NULL;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  char line[4096];
  while (fgets(line, sizeof line, f)) {
    int keep = 1;
    for (int i = 0; skip != NULL && skip[i] != NULL; i++) keep = keep && strstr(line, skip[i]) == NULL;
    if (!keep) continue;
    size_t len = strlen(line);
    while (n + len + 1 > cap) buf = realloc(buf, cap *= 2);
    memcpy(buf + n, line, len);
    n += len;
  }
  buf[n] = 0;
  fclose(f);
  return buf;
}

/* Two runs' files (tu_slurp's, n of each, named names) are the same bytes, written by both or
** by neither; `how` says what the first run did differently, for the failure message. */
static inline void tu_same_files(char *const *a, char *const *b, int n, const char *const *names, const char *file,
                                 const char *how) {
  for (int i = 0; i < n; i++) {
    assert_true((a[i] == NULL) == (b[i] == NULL));
    if (a[i] != NULL && strcmp(a[i], b[i]) != 0) fail_msg("%s: %s differs %s", file, names[i], how);
  }
}

/* Reads column `col` (0-based) of a CSV file with a header row into values[0..max); when names
** is given, column 0 of each row goes to names[row] too. Returns the row count. */
static inline int tu_read_column(const char *path, int col, double *values, int max,
                                 char (*names)[64]) {
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  char line[1024];
  int n = 0;
  assert_non_null(fgets(line, sizeof line, f));
  while (n < max && fgets(line, sizeof line, f)) {
    char *save = NULL, *field = strtok_r(line, ",\n", &save);
    if (names && field) snprintf(names[n], 64, "%s", field);
    for (int c = 0; field && c < col; c++) field = strtok_r(NULL, ",\n", &save);
    assert_non_null(field);
    values[n++] = strtod(field, NULL);
  }
  fclose(f);
  return n;
}

/* A strategies/ call that must fail: it returned NULL and filled st (a ds_status *) with the
** exception kind `want` and a message. */
#define TU_EXPECT_REFUSED(result, st, want) do { \
    assert_null(result); \
    assert_int_equal((st)->kind, (want)); \
    assert_true((st)->message[0] != 0); \
  } while (0)

/* Golden numerics tolerance from ../shared/golden/README.md. */
#define TU_GOLDEN_CLOSE(got, want) \
  (((got) - (want) <= 1e-5 + 1e-5 * ((want) < 0 ? -(want) : (want))) && \
   ((want) - (got) <= 1e-5 + 1e-5 * ((want) < 0 ? -(want) : (want))))

#endif
