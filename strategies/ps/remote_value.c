/*
** remote_value.c: RemoteValue's state machine and fetch (ds_remote_value_ in remote_value.h).
**
** Invariants:
**  1. READY holds a value, a resource or an error (or nothing, for a function without output);
**     NOT_READY and ABORTED hold none of them.
**  2. A function's value points to its closure while the closure is pending and the closure
**     points back; freeing either side first clears the other's pointer (TF's weakref).
**  3. A resource value always owns its closure, which is re-run to rebuild it.
*/
#include "strategies/ps/remote_value.h"

#include <stdlib.h>

#include "strategies/ps/coordinatorInt.h"
#include "strategies/core/strategiesInt.h"

ds_remote_value *ds__remote_value_new(ds_coordinator *c, ds__closure_kind kind) {
  ds_remote_value *rv = base_xcalloc(1, sizeof *rv);
  rv->coord = c;
  rv->kind = kind;
  return rv;
}

/* Drops what the value holds (invariant 1) before a state change. */
static void clear(ds_remote_value *rv) {
  ds_value_free(rv->value);
  rv->value = NULL;
  if (rv->resource != NULL) {
    if (rv->kind == DS__CLOSURE_DATASET) ds_dataset_free(rv->resource);
    else ds_dataset_iterator_free(rv->resource);
  }
  rv->resource = NULL;
  ds_status_clear(&rv->error);
}

static void set_state(ds_remote_value *rv, ds_remote_value_state s) {
  rv->state = s;
  ds__coordinator_changed(rv->coord);
}

void ds__remote_value_set_value(ds_remote_value *rv, ds_value *v) {
  clear(rv);
  rv->value = v;
  set_state(rv, DS_REMOTE_READY);
}

void ds__remote_value_set_resource(ds_remote_value *rv, void *resource) {
  clear(rv);
  rv->resource = resource;
  set_state(rv, DS_REMOTE_READY);
}

void ds__remote_value_set_error(ds_remote_value *rv, const ds_status *err) {
  clear(rv);
  rv->error = *err;
  set_state(rv, DS_REMOTE_READY);
}

void ds__remote_value_set_aborted(ds_remote_value *rv) {
  clear(rv);
  set_state(rv, DS_REMOTE_ABORTED);
}

ds_remote_value_state ds_remote_value_state_of(const ds_remote_value *rv) { return rv->state; }

const char *ds_remote_value_state_name(ds_remote_value_state s) {
  switch (s) {
    case DS_REMOTE_NOT_READY: return "NOT_READY";
    case DS_REMOTE_ABORTED: return "ABORTED";
    case DS_REMOTE_READY: return "READY";
  }
  return "?";
}

static int not_ready(void *arg) { return ((ds_remote_value *)arg)->state == DS_REMOTE_NOT_READY; }

int ds_remote_value_fetch(ds_remote_value *rv, const ds_value **value, ds_status *st) {
  *value = NULL;
  if (ds__coordinator_wait(rv->coord, not_ready, rv, "RemoteValue.fetch", st) != 0) return -1;
  if (rv->state == DS_REMOTE_ABORTED)
    return ds_status_set(st, DS_CANCELLED_ERROR, "The corresponding function is aborted. Please "
                         "reschedule the function.");
  if (rv->error.kind != DS_OK) {
    if (st != NULL) *st = rv->error;
    return -1;
  }
  *value = rv->value;
  return 0;
}

void ds_remote_value_free(ds_remote_value *rv) {
  if (rv == NULL || rv->kind != DS__CLOSURE_FUNCTION) return;
  if (rv->closure != NULL) rv->closure->out = NULL; /* invariant 2 */
  clear(rv);
  free(rv);
}

void ds__remote_value_free_resource(ds_remote_value *rv) {
  clear(rv);
  ds__closure_free(rv->closure);
  free(rv);
}
