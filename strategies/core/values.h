/*
** values.h: tf.distribute's DistributedValues (ds_value_).
**
** A ds_value is what strategy.run() takes and returns: a regular tensor (the same on every
** replica, not distributed), a PerReplica (one component per replica, each on its replica's
** device) or a Mirrored (one identical copy per replica). Structures of values (a tuple of
** features and labels) are arrays of ds_value; each ds_value holds one tensor per component.
** Components are in replica order, which is also experimental_local_results' order on a
** single worker. Variables, including SyncOnRead ones, are in variable.h.
*/
#ifndef PODSIM_VALUES_H
#define PODSIM_VALUES_H

#include "models/tensor.h"

typedef enum {
  DS_VALUE_REGULAR = 0,   /* a plain tensor: one component, on no particular replica */
  DS_VALUE_PER_REPLICA,   /* tf.distribute.DistributedValues of type PerReplica */
  DS_VALUE_MIRRORED       /* tf.distribute's Mirrored: every component holds the same value */
} ds_value_kind;

typedef struct ds_value ds_value;

/* A regular value; takes ownership of t. */
ds_value *ds_value_regular(md_tensor *t);
/* A PerReplica or Mirrored of n components; takes ownership of the n tensors (the array itself
** is copied). devices (may be NULL) names each component's device; the names are copied. */
ds_value *ds_value_new(ds_value_kind kind, int n, md_tensor *const *components,
                       const char *const *devices);
ds_value *ds_value_copy(const ds_value *v);
void      ds_value_free(ds_value *v);

ds_value_kind ds_value_kind_of(const ds_value *v);
const char   *ds_value_kind_name(ds_value_kind kind);   /* "Tensor", "PerReplica", "Mirrored" */
int           ds_value_is_distributed(const ds_value *v);  /* PerReplica or Mirrored */
/* Components (1 for a regular value): experimental_local_results. */
int           ds_value_num_components(const ds_value *v);
md_tensor    *ds_value_component(const ds_value *v, int i);
/* Device of component i ("" when the value was built without devices or is regular). */
const char   *ds_value_device(const ds_value *v, int i);

#endif
