/* values.c: DistributedValues (ds_value_). */
#include "strategies/core/values.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strategies/core/strategiesInt.h"

struct ds_value {
  ds_value_kind kind;     /* regular, PerReplica or Mirrored */
  int n;                  /* components */
  md_tensor **components; /* n owned tensors, in replica order */
  char (*devices)[DS_DEVICE_NAME_MAX]; /* n device names ("" when unknown) */
};

ds_value *ds_value_new(ds_value_kind kind, int n, md_tensor *const *components,
                       const char *const *devices) {
  assert(n >= 1 && (kind != DS_VALUE_REGULAR || n == 1));
  ds_value *v = base_xcalloc(1, sizeof *v);
  v->kind = kind;
  v->n = n;
  v->components = base_xcalloc((size_t)n, sizeof *v->components);
  v->devices = base_xcalloc((size_t)n, sizeof *v->devices);
  for (int i = 0; i < n; i++) {
    v->components[i] = components[i];
    if (devices && devices[i]) snprintf(v->devices[i], sizeof v->devices[i], "%s", devices[i]);
  }
  return v;
}

ds_value *ds_value_regular(md_tensor *t) {
  return ds_value_new(DS_VALUE_REGULAR, 1, &t, NULL);
}

ds_value *ds_value_copy(const ds_value *v) {
  ds_value *c = ds_value_new(v->kind, v->n, v->components, NULL);
  for (int i = 0; i < v->n; i++) {
    c->components[i] = md_tensor_copy(v->components[i]);
    memcpy(c->devices[i], v->devices[i], sizeof c->devices[i]);
  }
  return c;
}

void ds_value_free(ds_value *v) {
  if (v == NULL) return;
  for (int i = 0; i < v->n; i++) md_tensor_free(v->components[i]);
  free(v->components);
  free(v->devices);
  free(v);
}

ds_value_kind ds_value_kind_of(const ds_value *v) { return v->kind; }

const char *ds_value_kind_name(ds_value_kind kind) {
  switch (kind) {
    case DS_VALUE_REGULAR: return "Tensor";
    case DS_VALUE_PER_REPLICA: return "PerReplica";
    case DS_VALUE_MIRRORED: return "Mirrored";
  }
  return "?";
}

int ds_value_is_distributed(const ds_value *v) { return v->kind != DS_VALUE_REGULAR; }
int ds_value_num_components(const ds_value *v) { return v->n; }

md_tensor *ds_value_component(const ds_value *v, int i) {
  assert(i >= 0 && i < v->n);
  return v->components[i];
}

const char *ds_value_device(const ds_value *v, int i) {
  assert(i >= 0 && i < v->n);
  return v->devices[i];
}
