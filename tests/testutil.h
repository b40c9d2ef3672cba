/* testutil.h: shared by the cmocka tests. */
#ifndef PODSIM_TESTUTIL_H
#define PODSIM_TESTUTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
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

/* Golden numerics tolerance from ../shared/golden/README.md. */
#define TU_GOLDEN_CLOSE(got, want) \
  (((got) - (want) <= 1e-5 + 1e-5 * ((want) < 0 ? -(want) : (want))) && \
   ((want) - (got) <= 1e-5 + 1e-5 * ((want) < 0 ? -(want) : (want))))

#endif
