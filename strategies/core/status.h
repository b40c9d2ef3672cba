/*
** status.h: TensorFlow's exceptions as the C API returns them (ds_status_).
**
** Every API call that TensorFlow can raise from takes a ds_status *; on failure it fills the
** kind (the Python exception class TF raises) and a message, and returns the failure value its
** header names (NULL or -1). Nothing in strategies/ aborts on a user's mistake.
*/
#ifndef PODSIM_STATUS_H
#define PODSIM_STATUS_H

#include <stdarg.h>

typedef enum {
  DS_OK = 0,
  DS_VALUE_ERROR,          /* ValueError */
  DS_TYPE_ERROR,           /* TypeError */
  DS_RUNTIME_ERROR,        /* RuntimeError */
  DS_NOT_IMPLEMENTED_ERROR,/* NotImplementedError */
  DS_INVALID_ARGUMENT_ERROR,/* tf.errors.InvalidArgumentError */
  DS_OUT_OF_RANGE_ERROR,   /* tf.errors.OutOfRangeError (end of input) */
  DS_CANCELLED_ERROR,      /* tf.errors.CancelledError */
  DS_UNAVAILABLE_ERROR,    /* tf.errors.UnavailableError */
  DS_ABORTED_ERROR,        /* tf.errors.AbortedError */
  DS_RESOURCE_EXHAUSTED_ERROR,/* tf.errors.ResourceExhaustedError */
  DS_NOT_FOUND_ERROR,      /* tf.errors.NotFoundError (FILE auto-shard without a reader) */
  DS_DEADLINE_EXCEEDED_ERROR /* tf.errors.DeadlineExceededError (a closure timing out) */
} ds_error_kind;

typedef struct ds_status {
  ds_error_kind kind;     /* DS_OK, or the exception TensorFlow raises */
  char message[512];      /* what was wrong, in TensorFlow's terms */
} ds_status;

/* "ValueError", "RuntimeError", ... ("OK" for DS_OK). */
const char *ds_error_kind_name(ds_error_kind kind);
/* Fills st (which may be NULL) and returns -1, so callers can `return ds_status_set(...)`. */
int         ds_status_set(ds_status *st, ds_error_kind kind, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
/* ds_status_set with a va_list, for calls that report into their own status. */
int         ds_status_vset(ds_status *st, ds_error_kind kind, const char *fmt, va_list ap);
static inline void ds_status_clear(ds_status *st) { if (st) { st->kind = DS_OK; st->message[0] = 0; } }
static inline int  ds_status_ok(const ds_status *st) { return st == 0 || st->kind == DS_OK; }

#endif
