/* strategy_input.c: tf.distribute.Strategy's input methods (ds_, strategy_input.h). */
#include "strategies/input/strategy_input.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strategies/core/strategiesInt.h"
#include "strategies/input/inputInt.h"


/* A strategy's ds_input_layout, in one block with the names it points at (free() frees it). */
typedef struct strategy_layout {
  ds_input_layout l;      /* what input.h is given; first, so the block is freed through it */
  const char *devices[];  /* N device names, worker-major (l.devices); with fetch_to_device off,
                             followed by the N host CPU names they point at */
} strategy_layout;

/* TF's get_host_for_device: the device's job, replica and task, on device CPU:0. */
static void host_of(const char *device, char *out, size_t len) {
  const char *d = strstr(device, "/device:");
  int prefix = d ? (int)(d - device) : (int)strlen(device);
  snprintf(out, len, "%.*s/device:CPU:0", prefix, device);
}

ds_input_layout *ds_strategy_input_layout(const ds_strategy *s, const ds_input_options *options,
                                          int *replica_of, ds_status *st) {
  /* Workers in the order their first replica appears, and each one's replicas in replica order:
  ** a counting sort by worker index, linear in the replicas (a search of the workers seen so far
  ** per replica was quadratic: 40,000 CPU workers spent 15 s here). */
  int n = ds_num_replicas_in_sync(s), nw = 0, uneven = 0;
  int *rank = base_xcalloc((size_t)ds_strategy_num_workers(s), sizeof *rank); /* worker -> 1 + its place; 0: unseen */
  int *count = base_xcalloc((size_t)n + 1, sizeof *count);   /* per place; then where its run starts */
  for (int r = 0; r < n; r++) {
    int w = ds_replica_worker(s, r);
    assert(w >= 0 && w < ds_strategy_num_workers(s));
    if (rank[w] == 0) rank[w] = ++nw;
    count[rank[w]]++;
  }
  for (int w = 2; w <= nw; w++) uneven |= count[w] != count[1];
  if (uneven) {
    free(rank);
    free(count);
    ds_status_set(st, DS_NOT_IMPLEMENTED_ERROR, "the replicas are spread unevenly over their %d "
                  "input workers; podsim's input distribution needs as many on each", nw);
    return NULL;
  }
  for (int w = 1, start = 0; w <= nw; w++) {
    int c = count[w];
    count[w] = start;
    start += c;
  }
  int *order = base_xcalloc((size_t)n, sizeof *order);       /* replicas, worker-major */
  for (int r = 0; r < n; r++) order[count[rank[ds_replica_worker(s, r)]]++] = r;
  free(rank);
  free(count);
  int to_device = options == NULL || options->fetch_to_device;
  size_t names = to_device ? 0 : (size_t)n * DS_DEVICE_NAME_MAX;
  strategy_layout *sl = base_xcalloc(1, sizeof *sl + (size_t)n * sizeof sl->devices[0] + names);
  char (*hosts)[DS_DEVICE_NAME_MAX] = (void *)(sl->devices + n);
  for (int i = 0; i < n; i++) {
    int r = order[i];
    if (!to_device) host_of(ds_replica_device(s, r), hosts[i], sizeof hosts[i]);
    sl->devices[i] = to_device ? ds_replica_device(s, r) : hosts[i];
    if (replica_of) replica_of[i] = r;
  }
  free(order);
  sl->l = (ds_input_layout){ .num_workers = nw, .num_replicas_in_sync = n, .worker_index = -1,
                             .devices = sl->devices, .tpu = ds__traits(s)->tpu,
                             .partial_batch_handling = ds__traits(s)->partial_batches };
  return &sl->l;
}

ds_input_dataset *ds_experimental_distribute_dataset(const ds_strategy *s, ds_dataset *dataset,
                                                     const ds_input_options *options, ds_status *st) {
  ds_input_layout *l = ds_strategy_input_layout(s, options, NULL, st);
  ds_input_dataset *dd = l ? ds_input_distribute_dataset(l, dataset, options, st) : NULL;
  free(l);
  /* ParameterServerStrategy builds its workers' datasets only inside
  ** create_per_worker_dataset: the object it returns here cannot be iterated. */
  if (dd && ds__traits(s)->coordinator_input) ds__input_dataset_set_unbuilt(dd);
  return dd;
}

ds_input_dataset *ds_distribute_datasets_from_function(const ds_strategy *s, ds_input_dataset_fn fn,
                                                       void *user, const ds_input_options *options,
                                                       ds_status *st) {
  ds_input_layout *l = ds_strategy_input_layout(s, options, NULL, st);
  ds_input_dataset *dd = l ? ds_input_distribute_datasets_from_function(l, fn, user, options, st) : NULL;
  free(l);
  if (dd && ds__traits(s)->coordinator_input) ds__input_dataset_set_unbuilt(dd);
  return dd;
}

ds_value *ds_experimental_distribute_values_from_function(const ds_strategy *s, ds_input_value_fn fn,
                                                          void *user, ds_status *st) {
  ds_input_layout *l = ds_strategy_input_layout(s, NULL, NULL, st);
  ds_value *v = l ? ds_input_distribute_values_from_function(l, fn, user, st) : NULL;
  free(l);
  ds_kind kind = ds_strategy_kind(s);
  if (v == NULL || (kind != DS_DEFAULT && kind != DS_ONE_DEVICE)) return v;
  ds_value *one = ds_value_regular(md_tensor_copy(ds_value_component(v, 0)));
  ds_value_free(v);
  return one;
}

ds_input_iterator *ds_make_dataset_iterator(const ds_strategy *s, ds_dataset *dataset, ds_status *st) {
  ds_input_layout *l = ds_strategy_input_layout(s, NULL, NULL, st);
  ds_input_iterator *it = l ? ds_input_make_dataset_iterator(l, dataset, st) : NULL;
  free(l);
  return it;
}

ds_input_iterator *ds_make_input_fn_iterator(const ds_strategy *s, ds_input_dataset_fn input_fn,
                                             void *user, ds_input_replication_mode mode,
                                             ds_status *st) {
  ds_input_layout *l = ds_strategy_input_layout(s, NULL, NULL, st);
  ds_input_iterator *it = l ? ds_input_make_input_fn_iterator(l, input_fn, user, mode, st) : NULL;
  free(l);
  return it;
}
