/*
** remote_value.h: tf.distribute.experimental.coordinator.RemoteValue (ds_remote_value_).
**
** What ClusterCoordinator.schedule returns: the output of a closure that runs later on some
** worker. States and transitions (TF's RemoteValueStatus, cluster_coordinator.py):
**   NOT_READY -> READY    the closure ran (a value), or failed with an error that is not retried,
**                         or was cancelled (CancelledError);
**   NOT_READY -> ABORTED  its worker failed (resource values: datasets, iterators);
**   ABORTED   -> READY    rebuilt by re-running its closure after the worker recovered;
**   READY     -> ABORTED  resource values only, when their worker fails.
** A function closure whose worker fails goes back to the queue instead, so its value stays
** NOT_READY until some worker completes it.
**
** fetch blocks until the state is not NOT_READY (coordinator.h says how a wait passes simulated
** time: as the calling actor, or by driving the engine from the main program). ABORTED gives
** CancelledError ("reschedule the function"), an error gives that error, else the value.
*/
#ifndef PODSIM_REMOTE_VALUE_H
#define PODSIM_REMOTE_VALUE_H

#include "strategies/core/status.h"
#include "strategies/core/values.h"

typedef enum {
  DS_REMOTE_NOT_READY = 0, /* no value, no error, not aborted */
  DS_REMOTE_ABORTED,       /* its worker failed; it may be rebuilt */
  DS_REMOTE_READY          /* a value or a non-retryable error */
} ds_remote_value_state;

typedef struct ds_remote_value ds_remote_value;

ds_remote_value_state ds_remote_value_state_of(const ds_remote_value *rv);
const char           *ds_remote_value_state_name(ds_remote_value_state s); /* "NOT_READY", ... */
/* RemoteValue.fetch(): waits while NOT_READY, then 0 with *value the closure's output (borrowed,
** valid until the remote value is freed; NULL when the closure returned nothing or the value is a
** per-worker resource), or -1: CancelledError when ABORTED, the closure's own error otherwise.
** RuntimeError when called from a scheduled closure, or from the main program when the engine
** runs out of events before the value is ready (TF would wait forever). */
int  ds_remote_value_fetch(ds_remote_value *rv, const ds_value **value, ds_status *st);
/* Drops the caller's remote value (TF's last reference): a closure still pending runs anyway and
** its output is discarded. Per-worker resource values belong to their ds_per_worker: no-op. */
void ds_remote_value_free(ds_remote_value *rv);

#endif
