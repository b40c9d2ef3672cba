/*
** base.h: what every layer needs, below sim/ (base_): host memory that is never NULL and
** bounded formatting into fixed buffers. It includes nothing of podsim.
**
** Host memory running out is the host's failure, not the simulation's: the allocator calls the
** out-of-memory handler, which by default prints "podsim: out of host memory (N bytes)" and
** aborts. The library never exits; the CLI installs a handler that exits with its input
** status (2), so a run too large for the host ends as its other refusals do.
*/
#ifndef PODSIM_BASE_H
#define PODSIM_BASE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* calloc(n, size), never NULL (n == 0 gives a distinct pointer). */
void *base_xcalloc(size_t n, size_t size);
/* realloc(p, bytes), never NULL. */
void *base_xrealloc(void *p, size_t bytes);
/* aligned_alloc(align, bytes rounded up to align), never NULL; freed with free(). align is a
** power of two, at least sizeof(void *). */
void *base_xaligned(size_t align, size_t bytes);
/* strdup(s), never NULL; NULL copies as "". */
char *base_strdup(const char *s);

/* Called with the request that failed; must not return (the default aborts). NULL restores the
** default. */
typedef void (*base_oom_handler)(size_t bytes);
void base_set_oom_handler(base_oom_handler fn);
/* For an allocation made by a library (gsl_rng_alloc, ...) that returned NULL: calls the handler. */
void base_out_of_memory(size_t bytes);

/* fclose for a file that was written: also fails (-1) when an earlier write did (ferror), so a
** full disk is never a silently short file. errno is the failing call's (EIO when it is lost). */
int base_fclose(FILE *f);

/* fopen(path, "rb") for a reader that takes in the whole file: NULL, with errno EINVAL, when path
** is not a regular file (a device such as /dev/zero, a FIFO, a directory, also through a symlink),
** which would feed the reader without end or block it; opened without waiting on a FIFO. */
FILE *base_fopen_regular(const char *path);
/* strerror(e), and for base_fopen_regular's EINVAL "not a regular file". */
const char *base_open_error(int e);

/* vsnprintf into buf that truncates silently: messages and paths are bounded on purpose.
** Returns buf. */
char *base_vformat(char *buf, size_t len, const char *fmt, va_list ap);
char *base_format(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Formats into err when there is one (errlen > 0) and returns -1, for `return base_fail(...)`
** from a call that reports its failures in a caller's buffer. */
int   base_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
