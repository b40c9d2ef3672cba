/*
** tfevents.h: TensorBoard event files (tfev_), written without TensorFlow. A file is a
** sequence of TFRecords (little-endian u64 length, masked CRC-32C of those 8 bytes, the data,
** masked CRC-32C of the data) each holding an Event protobuf (tensorflow/core/util/event.proto):
** first one whose file_version is "brain.Event:2", then one per step with a Summary of scalar
** values (tensorflow/core/framework/summary.proto, simple_value). TensorBoard reads such a file
** as it reads tf.summary's: one directory per run (train/, validation/ as Keras' TensorBoard
** callback writes them), a file in each.
**
** Nothing here reads the host clock: the caller gives every wall time (podsim: simulated
** seconds), so the bytes depend on the run alone.
*/
#ifndef PODSIM_TFEVENTS_H
#define PODSIM_TFEVENTS_H

#include <stddef.h>
#include <stdint.h>

typedef struct tfev_writer tfev_writer;

/* One scalar of a step: a tag TensorBoard charts and its value. */
typedef struct tfev_scalar {
  const char *tag;        /* the chart's name, e.g. "loss" or Keras' "epoch_loss" */
  double value;           /* written as the float simple_value, as tf.summary.scalar's v1 form */
} tfev_scalar;

/* Creates DIR (and its parents) and DIR/events.out.tfevents.<wall_time as %010lld>.<host>, and
** writes the file_version event at wall_time. NULL with msg ("PATH: why") when it cannot. */
tfev_writer *tfev_open(const char *dir, double wall_time, const char *host, char *msg, size_t len);
/* One Event at step and wall_time holding the n scalars, in order. 0, or -1 (errno). */
int tfev_write_scalars(tfev_writer *w, int64_t step, double wall_time, const tfev_scalar *v, int n);
/* Closes the file and frees w. 0, or -1 (errno) when a write failed on the way. NULL is a no-op. */
int tfev_close(tfev_writer *w);

#endif
