/*
** base.c: host memory and bounded formatting (base_).
*/
#include "base/base.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void abort_out_of_memory(size_t bytes) {
  fprintf(stderr, "podsim: out of host memory (%zu bytes)\n", bytes);
  abort();
}

static base_oom_handler out_of_memory = abort_out_of_memory;

void base_set_oom_handler(base_oom_handler fn) { out_of_memory = fn ? fn : abort_out_of_memory; }

void base_out_of_memory(size_t bytes) { out_of_memory(bytes); }

void *base_xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (p == NULL) out_of_memory(n * size);
  return p;
}

void *base_xrealloc(void *p, size_t bytes) {
  void *q = realloc(p, bytes ? bytes : 1);
  if (q == NULL) out_of_memory(bytes);
  return q;
}

void *base_xaligned(size_t align, size_t bytes) {
  void *p = NULL;
  /* aligned_alloc wants a multiple of align; a size within align of SIZE_MAX would wrap to a
  ** small block when rounded up, so it fails instead. */
  if (bytes <= SIZE_MAX - align) p = aligned_alloc(align, bytes ? (bytes + align - 1) / align * align : align);
  if (p == NULL) out_of_memory(bytes);
  return p;
}

char *base_strdup(const char *s) {
  if (s == NULL) s = "";
  size_t n = strlen(s) + 1;
  return memcpy(base_xcalloc(n, 1), s, n);
}

FILE *base_fopen_regular(const char *path) {
  /* O_NONBLOCK: opening a FIFO with no writer would wait for one; the flag is off again before
  ** any read, a regular file's reads being the same either way. */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  if (fd < 0) return NULL;
  int e = fstat(fd, &st) != 0 ? errno : !S_ISREG(st.st_mode) ? EINVAL : fcntl(fd, F_SETFL, 0) != 0 ? errno : 0;
  if (e != 0) {
    close(fd);
    errno = e;
    return NULL;
  }
  FILE *f = fdopen(fd, "rb");
  if (f == NULL) close(fd);
  return f;
}

const char *base_open_error(int e) { return e == EINVAL ? "not a regular file" : strerror(e); }

int base_fclose(FILE *f) {
  /* The flush reports a failure still in the buffer with its errno; a write that failed before
  ** left only ferror, and errno from that write (these writers make no other failing calls). */
  int bad = fflush(f) != 0 || ferror(f);
  int e = errno;
  if (fclose(f) != 0) return -1;
  if (!bad) return 0;
  errno = e ? e : EIO;
  return -1;
}

char *base_vformat(char *buf, size_t len, const char *fmt, va_list ap) {
  if (len > 0) vsnprintf(buf, len, fmt, ap);
  return buf;
}

int base_fail(char *err, size_t errlen, const char *fmt, ...) {
  if (err == NULL) return -1;
  va_list ap;
  va_start(ap, fmt);
  base_vformat(err, errlen, fmt, ap);
  va_end(ap);
  return -1;
}

char *base_format(char *buf, size_t len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  base_vformat(buf, len, fmt, ap);
  va_end(ap);
  return buf;
}
