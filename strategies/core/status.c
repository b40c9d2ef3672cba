/* status.c: TensorFlow's exceptions (ds_status_). */
#include "strategies/core/status.h"

#include "base/base.h"

#include <stdarg.h>
#include <stdio.h>

const char *ds_error_kind_name(ds_error_kind kind) {
  switch (kind) {
    case DS_OK: return "OK";
    case DS_VALUE_ERROR: return "ValueError";
    case DS_TYPE_ERROR: return "TypeError";
    case DS_RUNTIME_ERROR: return "RuntimeError";
    case DS_NOT_IMPLEMENTED_ERROR: return "NotImplementedError";
    case DS_INVALID_ARGUMENT_ERROR: return "InvalidArgumentError";
    case DS_OUT_OF_RANGE_ERROR: return "OutOfRangeError";
    case DS_CANCELLED_ERROR: return "CancelledError";
    case DS_UNAVAILABLE_ERROR: return "UnavailableError";
    case DS_ABORTED_ERROR: return "AbortedError";
    case DS_RESOURCE_EXHAUSTED_ERROR: return "ResourceExhaustedError";
    case DS_NOT_FOUND_ERROR: return "NotFoundError";
    case DS_DEADLINE_EXCEEDED_ERROR: return "DeadlineExceededError";
  }
  return "?";
}

int ds_status_vset(ds_status *st, ds_error_kind kind, const char *fmt, va_list ap) {
  if (st == NULL) return -1;
  st->kind = kind;
  base_vformat(st->message, sizeof st->message, fmt, ap);
  return -1;
}

int ds_status_set(ds_status *st, ds_error_kind kind, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ds_status_vset(st, kind, fmt, ap);
  va_end(ap);
  return -1;
}
