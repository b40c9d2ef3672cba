/*
** input.c: input distribution (ds_input_).
**
** experimental_distribute_dataset builds, for each worker w, what TensorFlow's
** DistributedDataset builds on that worker (input_lib.py, then auto_shard.cc):
**   dataset [FILE: only files w, w+W, ...]
**     -> rebatch(batch_sizes_for_worker(G, W, R, w)) -> prefetch(R)   when N > 1
**     [DATA: -> shard(W, w), under that prefetch]
** With DATA sharding (or AUTO falling back to it) the rebatch is the legacy one, N slices of
** ceil(b / N) rows per batch, because the sized rebatch gives every worker a different rotation
** and sharding its output would lose and repeat rows; TF rewrites it the same way. The legacy
** rebatch is also the fallback when the batch size cannot be inferred. A single worker is never
** sharded, but TF still runs the auto-shard rewrite on its one pipeline (auto_shard_dataset(d, 1,
** 0, N)): under DATA, or AUTO on a source that is not files, its rebatch is the legacy one too.
** TF 2.21 on MirroredStrategy over 4 devices, range(33).batch(10): 3,3,3,1 per batch and 1,1,1,0
** last under AUTO and DATA; 3,3,2,2 and 3,0,0,0 under OFF and FILE, or AUTO over files. Each worker's replicas take its elements in turn (the multi-device iterator's round
** robin), so on one step replica r of worker w gets element t*R + r of that worker's stream.
*/
#include "strategies/input/input.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strategies/core/strategiesInt.h"
#include "strategies/input/inputInt.h"

struct ds_input_dataset {
  ds_input_layout layout;     /* the caller's layout; devices points into `devices` */
  char (*devices)[DS_DEVICE_NAME_MAX]; /* N replica device names ("" when none given) */
  int npipes;                 /* input pipelines: W, or N with PER_REPLICA */
  int per_pipe;               /* replicas each pipeline feeds, in turn */
  ds_dataset **pipes;         /* npipes owned pipelines, pipeline p feeds replicas p*per_pipe.. */
  int optional;               /* get_next_as_optional: partial steps give empty batches */
  int unbuilt;                /* made by ParameterServerStrategy outside a function: its
                              ** workers build it only through create_per_worker_dataset */
  ds_dataset *shared;         /* DATA sharding of a dataset that replays: the legacy-rebatched
                              ** stream every worker's pipeline shards, which the iterator reads
                              ** once for all (NULL: each pipeline reads its own) */
};

struct ds_input_iterator {
  ds_input_dataset *dd;       /* what it iterates */
  int owns_dataset;           /* TF1 iterators made their distributed dataset themselves */
  ds_dataset_iterator **its;  /* one per pipeline */
  ds_dataset_iterator *shared; /* with dd->shared: its iterator, in place of the pipelines' */
};

ds_input_options ds_input_options_default(void) {
  return (ds_input_options){ .fetch_to_device = 1, .replication_mode = DS_INPUT_PER_WORKER,
                             .place_dataset_on_device = 0, .per_replica_buffer_size = 1 };
}

ds_input_context ds_input_context_default(void) {
  return (ds_input_context){ .num_input_pipelines = 1, .input_pipeline_id = 0,
                             .num_replicas_in_sync = 1 };
}

int64_t ds_input_context_per_replica_batch_size(const ds_input_context *ctx,
                                                int64_t global_batch_size, ds_status *st) {
  if (global_batch_size % ctx->num_replicas_in_sync != 0)
    return ds_status_set(st, DS_VALUE_ERROR, "the global batch size (%lld) is not divisible by "
                         "num_replicas_in_sync (%d)", (long long)global_batch_size,
                         ctx->num_replicas_in_sync);
  return global_batch_size / ctx->num_replicas_in_sync;
}

int64_t ds_input_subbatch_size(int64_t global_batch_size, int num_workers,
                               int replicas_per_worker, int worker, int i) {
  int64_t n = (int64_t)num_workers * replicas_per_worker;
  int64_t floor = global_batch_size / n, num_ceil = global_batch_size - n * floor;
  int64_t j = ((int64_t)worker * replicas_per_worker + i) % n;  /* worker_0 rotated left */
  return floor + (j < num_ceil ? 1 : 0);
}

void ds_input_batch_sizes_for_worker(int64_t global_batch_size, int num_workers,
                                     int replicas_per_worker, int worker, int64_t *sizes) {
  for (int i = 0; i < num_workers * replicas_per_worker; i++)
    sizes[i] = ds_input_subbatch_size(global_batch_size, num_workers, replicas_per_worker,
                                      worker, i);
}

static int check_layout(const ds_input_layout *l, ds_status *st) {
  if (l->num_workers < 1 || l->num_replicas_in_sync < 1)
    return ds_status_set(st, DS_VALUE_ERROR, "a layout needs at least one worker and one "
                         "replica, not %d and %d", l->num_workers, l->num_replicas_in_sync);
  if (l->num_replicas_in_sync % l->num_workers != 0)
    return ds_status_set(st, DS_VALUE_ERROR, "num_replicas_in_sync (%d) is not a multiple of "
                         "the number of workers (%d): every worker needs as many replicas",
                         l->num_replicas_in_sync, l->num_workers);
  if (l->worker_index < -1 || l->worker_index >= l->num_workers)
    return ds_status_set(st, DS_VALUE_ERROR, "worker_index %d is not -1 or a worker below %d",
                         l->worker_index, l->num_workers);
  return 0;
}

static int check_options(const ds_input_options *o, ds_status *st) {
  if (o->place_dataset_on_device && o->replication_mode != DS_INPUT_PER_REPLICA)
    return ds_status_set(st, DS_VALUE_ERROR, "experimental_place_dataset_on_device needs the "
                         "PER_REPLICA replication mode");
  if (o->place_dataset_on_device && o->fetch_to_device)
    return ds_status_set(st, DS_VALUE_ERROR, "experimental_place_dataset_on_device cannot be "
                         "set with experimental_fetch_to_device");
  return 0;
}

/* The replicas whose values are handed out: all, or those of layout.worker_index. */
static void local_replicas(const ds_input_layout *l, int *lo, int *hi) {
  int n = l->num_replicas_in_sync, per_worker = n / l->num_workers;
  *lo = l->worker_index < 0 ? 0 : l->worker_index * per_worker;
  *hi = l->worker_index < 0 ? n : *lo + per_worker;
}

static ds_input_dataset *dataset_new(const ds_input_layout *l, int npipes) {
  ds_input_dataset *dd = base_xcalloc(1, sizeof *dd);
  int n = l->num_replicas_in_sync;
  dd->layout = *l;
  dd->devices = base_xcalloc((size_t)n, sizeof *dd->devices);
  for (int r = 0; l->devices && r < n; r++)
    snprintf(dd->devices[r], sizeof dd->devices[r], "%s", l->devices[r]);
  dd->layout.devices = NULL;
  dd->npipes = npipes;
  dd->per_pipe = n / npipes;
  dd->pipes = base_xcalloc((size_t)npipes, sizeof *dd->pipes);
  return dd;
}

void ds_input_dataset_free(ds_input_dataset *dd) {
  if (dd == NULL) return;
  for (int p = 0; p < dd->npipes; p++) ds_dataset_free(dd->pipes[p]);
  if (dd->shared) ds_dataset_free(dd->shared);
  free(dd->pipes);
  free(dd->devices);
  free(dd);
}

/* Every pipeline must give elements of one structure; then decide the partial-batch handling
** as input_lib's _enable_get_next_as_optional: not for an infinite dataset (there is no last
** batch) nor a statically shaped one (every batch is full). */
static ds_input_dataset *finish(ds_input_dataset *dd, ds_status *st) {
  const ds_dataset *first = dd->pipes[0];
  for (int p = 1; p < dd->npipes; p++)
    if (ds_dataset_num_components(dd->pipes[p]) != ds_dataset_num_components(first)) {
      ds_status_set(st, DS_VALUE_ERROR, "input pipelines %d and 0 give elements of %d and %d "
                    "components", p, ds_dataset_num_components(dd->pipes[p]),
                    ds_dataset_num_components(first));
      ds_input_dataset_free(dd);
      return NULL;
    }
  dd->optional = dd->layout.partial_batch_handling &&
                 ds_dataset_cardinality(first) != DS_DATASET_INFINITE &&
                 !ds_dataset_is_statically_shaped(first);
  return dd;
}

/* Replaces *p by next (a new pipeline built on it); fails when next is NULL. */
static int advance(ds_dataset **p, ds_dataset *next) {
  ds_dataset_free(*p);
  *p = next;
  return next ? 0 : -1;
}

/* Worker w's pipeline of experimental_distribute_dataset. */
static ds_dataset *worker_pipeline(const ds_input_layout *l, ds_dataset *dataset,
                                   ds_auto_shard_policy policy, int64_t batch, int w,
                                   ds_auto_shard_policy *used, ds_status *st) {
  int nw = l->num_workers, n = l->num_replicas_in_sync;
  ds_dataset *p = ds__dataset_ref(dataset);
  /* One worker has nothing to shard, but the rewrite still picks its rebatch (above); FILE over a
  ** source without files is no error there. */
  if (nw == 1 && policy == DS_AUTO_SHARD_FILE) policy = DS_AUTO_SHARD_OFF;
  if (policy == DS_AUTO_SHARD_AUTO || policy == DS_AUTO_SHARD_FILE) {
    ds_status tried;
    ds_status_clear(&tried);
    ds_dataset *files = ds__dataset_shard_files(p, nw, w, &tried);
    if (files) {
      policy = DS_AUTO_SHARD_FILE;
      if (nw > 1) advance(&p, files);
      else ds_dataset_free(files);
    } else if (policy == DS_AUTO_SHARD_AUTO && tried.kind == DS_NOT_FOUND_ERROR) {
      policy = DS_AUTO_SHARD_DATA;
    } else {
      if (st) *st = tried;
      ds_dataset_free(p);
      return NULL;
    }
  }
  if (n > 1) {
    if (batch > 0 && policy != DS_AUTO_SHARD_DATA) {
      int64_t *sizes = base_xcalloc((size_t)n, sizeof *sizes);
      ds_input_batch_sizes_for_worker(batch, nw, n / nw, w, sizes);
      int failed = advance(&p, ds_dataset_rebatch(p, n, sizes, 0, st));
      free(sizes);
      if (failed) return NULL;
    } else if (advance(&p, ds_dataset_legacy_rebatch(p, n, st))) {
      return NULL;
    }
    if (advance(&p, ds_dataset_prefetch(p, n / nw, st))) return NULL;
  }
  if (policy == DS_AUTO_SHARD_DATA && nw > 1) advance(&p, ds__dataset_shard_data(p, nw, w));
  *used = policy;
  return p;
}

ds_input_dataset *ds_input_distribute_dataset(const ds_input_layout *layout, ds_dataset *dataset,
                                              const ds_input_options *options, ds_status *st) {
  ds_input_options o = options ? *options : ds_input_options_default();
  if (check_layout(layout, st) || check_options(&o, st)) return NULL;
  if (o.replication_mode == DS_INPUT_PER_REPLICA) {
    ds_status_set(st, DS_NOT_IMPLEMENTED_ERROR, "InputReplicationMode.PER_REPLICA is only "
                  "supported in distribute_datasets_from_function");
    return NULL;
  }
  ds_auto_shard_policy policy = ds_dataset_auto_shard_policy(dataset);
  if (policy == DS_AUTO_SHARD_HINT) {
    ds_status_set(st, DS_NOT_IMPLEMENTED_ERROR, "the HINT auto-shard policy is not simulated; "
                  "shard in a dataset function instead");
    return NULL;
  }
  int64_t batch = ds_dataset_compute_batch_size(dataset);
  ds_input_dataset *dd = dataset_new(layout, layout->num_workers);
  ds_auto_shard_policy used = policy;
  for (int w = 0; w < dd->npipes; w++)
    if ((dd->pipes[w] = worker_pipeline(layout, dataset, policy, batch, w, &used, st)) == NULL) {
      ds_input_dataset_free(dd);
      return NULL;
    }
  /* DATA sharding has every worker read the whole stream and keep its slices: W x G elements a
  ** step, quadratic in a pod (1024 hosts of a v4-8192 made 34 million a step; issue 31). When
  ** the stream replays, the workers' streams are one, so it is read once and dealt out. */
  if (used == DS_AUTO_SHARD_DATA && dd->npipes > 1 && ds__dataset_replays(dataset))
    dd->shared = ds_dataset_legacy_rebatch(dataset, layout->num_replicas_in_sync, st);
  return finish(dd, st);
}

ds_input_dataset *ds_input_distribute_datasets_from_function(const ds_input_layout *layout,
                                                             ds_input_dataset_fn fn, void *user,
                                                             const ds_input_options *options,
                                                             ds_status *st) {
  ds_input_options o = options ? *options : ds_input_options_default();
  if (check_layout(layout, st)) return NULL;
  if (o.replication_mode == DS_INPUT_PER_REPLICA && layout->tpu) {
    ds_status_set(st, DS_NOT_IMPLEMENTED_ERROR, "InputReplicationMode.PER_REPLICA is not "
                  "supported by TPUStrategy; only MirroredStrategy has it");
    return NULL;
  }
  if (check_options(&o, st)) return NULL;
  int per_replica = o.replication_mode == DS_INPUT_PER_REPLICA;
  int n = layout->num_replicas_in_sync;
  ds_input_dataset *dd = dataset_new(layout, per_replica ? n : layout->num_workers);
  for (int p = 0; p < dd->npipes; p++) {
    ds_input_context ctx = { .num_input_pipelines = dd->npipes, .input_pipeline_id = p,
                             .num_replicas_in_sync = n };
    if ((dd->pipes[p] = fn(&ctx, user, st)) == NULL) {
      if (ds_status_ok(st))
        ds_status_set(st, DS_TYPE_ERROR, "dataset_fn returned no dataset for input pipeline %d",
                      p);
      ds_input_dataset_free(dd);
      return NULL;
    }
  }
  return finish(dd, st);
}

int ds_input_dataset_num_pipelines(const ds_input_dataset *dd) { return dd->npipes; }

const ds_dataset *ds_input_dataset_pipeline(const ds_input_dataset *dd, int p) {
  assert(p >= 0 && p < dd->npipes);
  return dd->pipes[p];
}

int ds_input_dataset_get_next_as_optional(const ds_input_dataset *dd) { return dd->optional; }

int ds_input_dataset_num_components(const ds_input_dataset *dd) {
  return ds_dataset_num_components(dd->pipes[0]);
}

/* ---- iterators ---- */

static void open_pipelines(ds_input_iterator *it) {
  if (it->dd->shared) it->shared = ds_dataset_make_iterator(it->dd->shared);
  for (int p = 0; p < it->dd->npipes && !it->dd->shared; p++) it->its[p] = ds_dataset_make_iterator(it->dd->pipes[p]);
}

static void close_pipelines(ds_input_iterator *it) {
  for (int p = 0; p < it->dd->npipes; p++) ds_dataset_iterator_free(it->its[p]);
  ds_dataset_iterator_free(it->shared);
  it->shared = NULL;
}

/* One element for each of the n replicas into elems (nc per replica), as their pipelines would
** hand them: with the shared stream, its k-th element of the step is element k / W of worker
** k % W's shard, which that worker's replica k / W takes (R = n / W replicas a worker: element
** t R + i of worker w's shard is element (t R + i) W + w of the stream). The stream is a legacy
** rebatch, N elements an input batch, so a step's elements are all there or none are. Returns
** how many replicas got one, or -1 on an error (st). */
static int pull_elements(ds_input_iterator *it, int n, int nc, md_tensor **elems, ds_status *st) {
  const ds_input_dataset *dd = it->dd;
  int have = 0;
  for (int k = 0; k < n; k++) {
    int r = dd->shared ? (k % dd->npipes) * dd->per_pipe + k / dd->npipes : k;
    ds_status one;
    ds_status_clear(&one);
    if (ds_dataset_get_next(dd->shared ? it->shared : it->its[r / dd->per_pipe], elems + r * nc, &one) == 0) {
      have++;
    } else if (one.kind != DS_OUT_OF_RANGE_ERROR) {
      if (st) *st = one;
      return -1;
    }
  }
  return have;
}

ds_input_iterator *ds_input_iterator_new(ds_input_dataset *dd) {
  ds_input_iterator *it = base_xcalloc(1, sizeof *it);
  it->dd = dd;
  it->its = base_xcalloc((size_t)dd->npipes, sizeof *it->its);
  open_pipelines(it);
  return it;
}

void ds_input_iterator_initialize(ds_input_iterator *it) {
  close_pipelines(it);
  open_pipelines(it);
}

void ds_input_iterator_free(ds_input_iterator *it) {
  if (it == NULL) return;
  close_pipelines(it);
  free(it->its);
  if (it->owns_dataset) ds_input_dataset_free(it->dd);
  free(it);
}


/* One step: every replica pulls its element. *has_value is 0 when no replica got data, or
** when some did not and partial steps are not allowed. Otherwise the data-less replicas get
** empty batches and out[] gets the PerReplica values. */
static int next_step(ds_input_iterator *it, int allow_partial, ds_value **out, int *has_value,
                     ds_status *st) {
  const ds_input_dataset *dd = it->dd;
  int n = dd->layout.num_replicas_in_sync, nc = ds_input_dataset_num_components(dd);
  md_tensor **elems = base_xcalloc((size_t)(n * nc), sizeof *elems);
  int have = pull_elements(it, n, nc, elems, st), rc = have < 0 ? -1 : 0;
  *has_value = rc == 0 && have > 0 && (have == n || allow_partial);
  for (int r = 0; r < n && *has_value; r++)
    for (int c = 0; c < nc && elems[r * nc] == NULL; c++) {
      const ds_tensor_spec *s = ds_dataset_element_spec(dd->pipes[r / dd->per_pipe], c);
      if (s->rank == 0) {
        rc = ds_status_set(st, DS_VALUE_ERROR, "replica %d has no data and component %d is a "
                           "scalar, which has no empty batch to stand in for it", r, c);
        *has_value = 0;
        break;
      }
    }
  if (*has_value) {
    int lo, hi;
    local_replicas(&dd->layout, &lo, &hi);
    for (int c = 0; c < nc; c++) {
      md_tensor *parts[hi - lo];
      const char *devs[hi - lo];
      for (int r = lo; r < hi; r++) {
        md_tensor **e = &elems[r * nc + c];
        parts[r - lo] = *e ? *e : ds__dataset_empty_batch(
                                      ds_dataset_element_spec(dd->pipes[r / dd->per_pipe], c));
        *e = NULL;
        devs[r - lo] = dd->devices[r];
      }
      out[c] = ds_value_new(DS_VALUE_PER_REPLICA, hi - lo, parts, (const char *const *)devs);
    }
  }
  for (int i = 0; i < n * nc; i++) md_tensor_free(elems[i]);
  free(elems);
  return rc;
}

void ds__input_dataset_set_unbuilt(ds_input_dataset *dd) { dd->unbuilt = 1; }

/* input_lib's DistributedDataset.__iter__ on a dataset ParameterServerStrategy did not build. */
static int refuse_unbuilt(const ds_input_iterator *it, ds_status *st) {
  if (!it->dd->unbuilt) return 0;
  return ds_status_set(st, DS_VALUE_ERROR, "To use this dataset, you need to pass this dataset "
                       "to ClusterCoordinator.create_per_worker_dataset.");
}

int ds_input_get_next(ds_input_iterator *it, ds_value **out, ds_status *st) {
  int has;
  if (refuse_unbuilt(it, st) || next_step(it, it->dd->optional, out, &has, st)) return -1;
  return has ? 0 : ds_status_set(st, DS_OUT_OF_RANGE_ERROR, "End of sequence");
}

int ds_input_get_next_as_optional(ds_input_iterator *it, ds_value **out, int *has_value,
                                  ds_status *st) {
  if (refuse_unbuilt(it, st)) return -1;
  return next_step(it, 1, out, has_value, st);
}

/* ---- TF1 ---- */

static ds_input_iterator *owning_iterator(ds_input_dataset *dd) {
  if (dd == NULL) return NULL;
  ds_input_iterator *it = ds_input_iterator_new(dd);
  it->owns_dataset = 1;
  return it;
}

ds_input_iterator *ds_input_make_dataset_iterator(const ds_input_layout *layout,
                                                  ds_dataset *dataset, ds_status *st) {
  return owning_iterator(ds_input_distribute_dataset(layout, dataset, NULL, st));
}

ds_input_iterator *ds_input_make_input_fn_iterator(const ds_input_layout *layout,
                                                   ds_input_dataset_fn input_fn, void *user,
                                                   ds_input_replication_mode mode,
                                                   ds_status *st) {
  if (mode != DS_INPUT_PER_WORKER) {
    ds_status_set(st, DS_VALUE_ERROR, "input replication mode %d is not supported by "
                  "make_input_fn_iterator: only PER_WORKER", (int)mode);
    return NULL;
  }
  return owning_iterator(ds_input_distribute_datasets_from_function(layout, input_fn, user, NULL,
                                                                    st));
}

/* ---- values ---- */

ds_value *ds_input_distribute_values_from_function(const ds_input_layout *layout,
                                                   ds_input_value_fn fn, void *user,
                                                   ds_status *st) {
  if (check_layout(layout, st)) return NULL;
  int n = layout->num_replicas_in_sync, lo, hi;
  local_replicas(layout, &lo, &hi);
  md_tensor *parts[hi - lo];
  const char *devs[hi - lo];
  for (int r = lo; r < hi; r++) {
    ds_input_value_context ctx = { .replica_id_in_sync_group = r, .num_replicas_in_sync = n };
    devs[r - lo] = layout->devices ? layout->devices[r] : NULL;
    if ((parts[r - lo] = fn(&ctx, user, st)) == NULL) {
      if (ds_status_ok(st))
        ds_status_set(st, DS_TYPE_ERROR, "value_fn returned no tensor for replica %d", r);
      for (int k = lo; k < r; k++) md_tensor_free(parts[k - lo]);
      return NULL;
    }
  }
  return ds_value_new(DS_VALUE_PER_REPLICA, hi - lo, parts, devs);
}
