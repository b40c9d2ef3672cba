/*
** test_base.c: host memory that is never NULL and bounded formatting (base/base.h).
*/
#include "tests/testutil.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"

/* calloc overflowing size_t must come back NULL, not end the test binary, under ASan too. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }

static jmp_buf escape;
static size_t refused;

static void catch_out_of_memory(size_t bytes) {
  refused = bytes;
  longjmp(escape, 1);
}

/* Zeroed memory, a distinct block for n == 0, a copy for strdup (NULL copies as ""). */
static void allocations_are_zeroed_and_never_null(void **state) {
  (void)state;
  int *v = base_xcalloc(4, sizeof *v);
  for (int i = 0; i < 4; i++) assert_int_equal(v[i], 0);
  void *none = base_xcalloc(0, 8), *other = base_xcalloc(0, 8);
  assert_non_null(none);
  assert_ptr_not_equal(none, other);
  v = base_xrealloc(v, 8 * sizeof *v);
  assert_int_equal(v[3], 0);  /* kept across the growth */
  char *s = base_strdup("ab"), *empty = base_strdup(NULL);
  assert_string_equal(s, "ab");
  assert_string_equal(empty, "");
  free(v);
  free(none);
  free(other);
  free(s);
  free(empty);
}

/* A request the host cannot meet goes to the handler with its size (SIZE_MAX / 2 elements of 4
** bytes: 2^65 - 4 bytes, which wraps to SIZE_MAX - 3 in size_t arithmetic). */
static void exhaustion_calls_the_handler(void **state) {
  (void)state;
  base_set_oom_handler(catch_out_of_memory);
  refused = 0;
  if (setjmp(escape) == 0) {
    base_xcalloc(SIZE_MAX / 2, 4);
    fail_msg("base_xcalloc returned");
  }
  assert_true(refused == (SIZE_MAX / 2) * 4);
  base_set_oom_handler(NULL);
}

/* Aligned blocks start on their boundary (gemm's panels need 64 bytes), for any size including
** 0 and one that is not a multiple of the alignment; a size that would wrap when rounded up
** (SIZE_MAX - 10 to a multiple of 64) goes to the handler instead of returning a small block. */
static void aligned_blocks_are_aligned(void **state) {
  (void)state;
  size_t sizes[] = {0, 1, 63, 64, 65, 4096 + 4};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    unsigned char *p = base_xaligned(64, sizes[i]);
    assert_int_equal((uintptr_t)p % 64, 0);
    memset(p, 0xab, sizes[i]);  /* ASan checks the block holds the size asked */
    free(p);
  }
  base_set_oom_handler(catch_out_of_memory);
  refused = 0;
  if (setjmp(escape) == 0) {
    base_xaligned(64, SIZE_MAX - 10);
    fail_msg("base_xaligned returned");
  }
  assert_true(refused == SIZE_MAX - 10);
  base_set_oom_handler(NULL);
}

/* Messages truncate to their buffer; base_fail returns -1 with or without a buffer. */
static void formatting_truncates_silently(void **state) {
  (void)state;
  char small[6];
  assert_ptr_equal(base_format(small, sizeof small, "%s-%d", "abcd", 42), small);
  assert_string_equal(small, "abcd-");
  char err[32];
  assert_int_equal(base_fail(err, sizeof err, "bad %s", "key"), -1);
  assert_string_equal(err, "bad key");
  assert_int_equal(base_fail(NULL, 0, "ignored %d", 1), -1);
}

/* /dev/full fails every write with ENOSPC: whether the failure is still in the buffer (a short
** text) or was met while writing (more than a buffer), closing reports it; a good file closes. */
static void a_full_disk_fails_the_close(void **state) {
  (void)state;
  for (size_t bytes = 10; bytes <= 1000000; bytes *= 100) {
    FILE *f = fopen("/dev/full", "w");
    if (f == NULL) skip();
    for (size_t i = 0; i < bytes; i++) fputc('x', f);
    errno = 0;
    assert_int_equal(base_fclose(f), -1);
    assert_int_equal(errno, ENOSPC);
  }
  FILE *f = tmpfile();
  assert_non_null(f);
  fputs("fine\n", f);
  assert_int_equal(base_fclose(f), 0);
}

/* Whole-file readers open only regular files: /dev/zero (metrics.csv symlinked to it grew podsim
** diff until the OOM killer), a FIFO (which blocked the open with no writer) and a directory are
** EINVAL; a missing file keeps its own errno; a symlink to a regular file is followed. */
static void only_regular_files_open_for_reading(void **state) {
  (void)state;
  char dir[] = "/tmp/podsim_base_XXXXXX", path[64], link[64];
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/fifo", dir);
  assert_int_equal(mkfifo(path, 0600), 0);
  const char *refused[] = {"/dev/zero", path, dir};
  for (int i = 0; i < 3; i++) {
    errno = 0;
    assert_null(base_fopen_regular(refused[i]));
    assert_int_equal(errno, EINVAL);
  }
  assert_string_equal(base_open_error(EINVAL), "not a regular file");
  unlink(path);
  assert_null(base_fopen_regular(path));
  assert_int_equal(errno, ENOENT);
  FILE *w = fopen(path, "w");
  assert_non_null(w);
  fputs("abc", w);
  fclose(w);
  snprintf(link, sizeof link, "%s/link", dir);
  assert_int_equal(symlink(path, link), 0);
  FILE *f = base_fopen_regular(link);
  assert_non_null(f);
  char buf[8] = "";
  assert_non_null(fgets(buf, sizeof buf, f));
  assert_string_equal(buf, "abc");
  fclose(f);
  unlink(link);
  unlink(path);
  rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(allocations_are_zeroed_and_never_null),
    cmocka_unit_test(exhaustion_calls_the_handler),
    cmocka_unit_test(aligned_blocks_are_aligned),
    cmocka_unit_test(formatting_truncates_silently),
    cmocka_unit_test(a_full_disk_fails_the_close),
    cmocka_unit_test(only_regular_files_open_for_reading),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
