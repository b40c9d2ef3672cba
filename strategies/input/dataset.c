/*
** dataset.c: a tf.data subset (ds_dataset_).
**
** Each node is immutable and reference-counted; an iterator is a chain of per-node states that
** mirrors the pipeline. The iteration rules are those of TensorFlow's kernels:
** - batch emits a short final batch unless drop_remainder; batching elements of different
**   shapes is an InvalidArgumentError, as in BatchDataset.
** - rebatch (RebatchDatasetV2) fills each output batch from as many input batches as it needs,
**   cycling through its sizes; once the input ends every later call is the end, even for a
**   size-0 batch; a size-0 batch before that is an empty tensor.
** - the legacy rebatch cuts every input batch into num_replicas slices of ceil(b / n) rows.
** - repeat stops when a whole epoch produced nothing, so an empty dataset repeated forever ends.
** - shuffle (ShuffleDataset) keeps a buffer of buffer_size elements filled while its input
**   lasts and hands out a uniformly drawn one; the draws come from a named stream of the seed
**   (sim/rng.h), not TF's Philox, so orders are TF's in law, not element for element. With
**   reshuffle_each_iteration each new iterator takes the next stream: the one mutable field of
**   a node, as TF's seed generator is a resource the dataset holds.
** Once an iterator has returned the end it returns it again without touching its input.
*/
#include "strategies/input/dataset.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/rng.h"
#include "strategies/core/strategiesInt.h"
#include "strategies/input/inputInt.h"

#define DS_FILE_NAME_MAX 128

typedef enum {
  OP_RANGE, OP_SLICES, OP_TENSORS, OP_FILES,   /* sources */
  OP_BATCH, OP_UNBATCH, OP_REBATCH, OP_LEGACY_REBATCH, OP_REPEAT, OP_TAKE, OP_SHARD,
  OP_PREFETCH, OP_MAP, OP_OPTIONS, OP_SHUFFLE
} ds_op;

struct ds_dataset {
  int refs;               /* the caller's handle plus every node and iterator built on it */
  ds_op op;               /* what this node does */
  ds_dataset *input;      /* the node it transforms (a reference); NULL for a source */
  int ncomp;              /* components per element */
  ds_tensor_spec spec[DS_DATASET_MAX_COMPONENTS]; /* the element spec TF would infer */
  int64_t cardinality;    /* elements, DS_DATASET_INFINITE or DS_DATASET_UNKNOWN */
  int64_t start, stop, step; /* range's arguments */
  int64_t n;              /* batch size, count, num_shards, buffer size or num_replicas */
  int64_t index;          /* shard's index */
  int drop_remainder;     /* batch and rebatch */
  int64_t *sizes;         /* rebatch's batch sizes (owned) */
  int nsizes;             /* entries of sizes */
  md_tensor **tensors;    /* slices and tensors: ncomp owned; files: nfiles * ncomp, file-major */
  int nfiles;             /* files in a reader */
  char (*names)[DS_FILE_NAME_MAX]; /* the reader's file names */
  ds_dataset_map_fn fn;   /* map's function */
  void *user;             /* map's closure */
  ds_auto_shard_policy policy; /* options' auto_shard_policy */
  int64_t short_of;       /* a FILE shard over fewer files than shards: their count (0: not);
                          ** its first element is TF's InvalidArgumentError (require_non_empty) */
  int64_t num_shards;     /* the shards that FILE sharding asked for */
  int require_non_empty;  /* shard: TF's auto-shard rewrite sets this attr, so a shard's first
                          ** element is an InvalidArgumentError when the input ends before
                          ** num_shards elements (ShardDatasetOp's require_non_empty_) */
  uint64_t seed;          /* shuffle's seed */
  int reshuffle;          /* shuffle: reshuffle_each_iteration */
  int64_t iterations;     /* shuffle: iterators made so far, which picks each one's stream */
};

struct ds_dataset_iterator {
  ds_dataset *ds;         /* the node walked (a reference) */
  ds_dataset_iterator *input; /* the iterator of ds->input */
  int done;               /* the end was returned once, so it is returned again */
  int input_ended;        /* rebatch: its input ended, later calls are the end */
  int epoch_empty;        /* repeat: nothing came out of the current epoch yet */
  int64_t pos;            /* next value, row or input index; elements taken; epochs done */
  int file;               /* reader: the file being read */
  md_tensor *held[DS_DATASET_MAX_COMPONENTS]; /* unbatch, rebatch: the input batch being cut */
  int64_t offset;         /* next row of held; the legacy rebatch's slice number */
  int size_index;         /* rebatch: the next entry of sizes */
  md_tensor **buffer;     /* shuffle: n * ncomp elements waiting, slot-major */
  int64_t buffered;       /* shuffle: slots in use */
  gsl_rng *rng;           /* shuffle: this iteration's stream */
};

/* Internal steps return 0 with an element, 1 at the end, -1 on an error (st set). */
enum { STEP_OK = 0, STEP_END = 1, STEP_ERROR = -1 };

static ds_dataset *node_new(ds_op op, ds_dataset *input) {
  ds_dataset *d = base_xcalloc(1, sizeof *d);
  d->refs = 1;
  d->op = op;
  d->policy = DS_AUTO_SHARD_AUTO;
  if (input) {
    input->refs++;
    d->input = input;
    d->ncomp = input->ncomp;
    memcpy(d->spec, input->spec, sizeof d->spec);
    d->cardinality = input->cardinality;
  }
  return d;
}

static ds_tensor_spec spec_of_rows(const md_tensor *t) {
  ds_tensor_spec s = { .dtype = t->dtype, .rank = t->rank - 1 };
  for (int i = 1; i < t->rank; i++) s.dims[i - 1] = t->shape[i];
  return s;
}

static int spec_equal(const ds_tensor_spec *a, const ds_tensor_spec *b) {
  if (a->dtype != b->dtype || a->rank != b->rank) return 0;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return 0;
  return 1;
}

static int check_components(int n, ds_status *st) {
  if (n < 1 || n > DS_DATASET_MAX_COMPONENTS)
    return ds_status_set(st, DS_VALUE_ERROR, "an element has 1 to %d components, not %d",
                         DS_DATASET_MAX_COMPONENTS, n);
  return 0;
}

/* Row i of t as a tensor of rank t->rank - 1. */
static md_tensor *row_of(const md_tensor *t, int64_t i) {
  size_t row = t->shape[0] ? t->size / (size_t)t->shape[0] : 0;
  return md_tensor_from(t->dtype, t->rank - 1, t->shape + 1,
                        (const char *)t->data + (size_t)i * row * md_dtype_size(t->dtype));
}

/* ---- sources ---- */

ds_dataset *ds_dataset_range(int64_t start, int64_t stop, int64_t step, ds_status *st) {
  if (step == 0) {
    ds_status_set(st, DS_INVALID_ARGUMENT_ERROR, "range: step must be a non-zero integer");
    return NULL;
  }
  ds_dataset *d = node_new(OP_RANGE, NULL);
  d->start = start;
  d->stop = stop;
  d->step = step;
  d->ncomp = 1;
  d->spec[0] = (ds_tensor_spec){ .dtype = MD_INT64, .rank = 0 };
  int64_t span = step > 0 ? stop - start : start - stop, by = step > 0 ? step : -step;
  d->cardinality = span > 0 ? (span + by - 1) / by : 0;
  return d;
}

ds_dataset *ds_dataset_from_tensor_slices(int n, md_tensor *const *tensors, ds_status *st) {
  if (check_components(n, st)) return NULL;
  for (int c = 0; c < n; c++) {
    if (tensors[c]->rank == 0) {
      ds_status_set(st, DS_VALUE_ERROR, "from_tensor_slices: component %d is a scalar, it has "
                    "no dimension to slice", c);
      return NULL;
    }
    if (tensors[c]->shape[0] != tensors[0]->shape[0]) {
      ds_status_set(st, DS_VALUE_ERROR, "from_tensor_slices: dimensions %lld and %lld of "
                    "components 0 and %d are not compatible", (long long)tensors[0]->shape[0],
                    (long long)tensors[c]->shape[0], c);
      return NULL;
    }
  }
  ds_dataset *d = node_new(OP_SLICES, NULL);
  d->ncomp = n;
  d->tensors = base_xcalloc((size_t)n, sizeof *d->tensors);
  for (int c = 0; c < n; c++) {
    d->tensors[c] = md_tensor_copy(tensors[c]);
    d->spec[c] = spec_of_rows(tensors[c]);
  }
  d->cardinality = tensors[0]->shape[0];
  return d;
}

ds_dataset *ds_dataset_from_tensors(int n, md_tensor *const *tensors, ds_status *st) {
  if (check_components(n, st)) return NULL;
  ds_dataset *d = node_new(OP_TENSORS, NULL);
  d->ncomp = n;
  d->tensors = base_xcalloc((size_t)n, sizeof *d->tensors);
  for (int c = 0; c < n; c++) {
    d->tensors[c] = md_tensor_copy(tensors[c]);
    d->spec[c] = (ds_tensor_spec){ .dtype = tensors[c]->dtype, .rank = tensors[c]->rank };
    memcpy(d->spec[c].dims, tensors[c]->shape, sizeof d->spec[c].dims);
  }
  d->cardinality = 1;
  return d;
}

ds_dataset *ds_dataset_from_files(int nfiles, const char *const *names, int ncomp,
                                  md_tensor *const *rows, ds_status *st) {
  if (check_components(ncomp, st)) return NULL;
  if (nfiles < 1) {
    ds_status_set(st, DS_VALUE_ERROR, "a reader needs at least one file");
    return NULL;
  }
  for (int f = 0; f < nfiles; f++)
    for (int c = 0; c < ncomp; c++) {
      const md_tensor *t = rows[f * ncomp + c];
      ds_tensor_spec want = spec_of_rows(rows[c]), got;
      if (t->rank == 0) {
        ds_status_set(st, DS_VALUE_ERROR, "file %s: component %d has no rows", names[f], c);
        return NULL;
      }
      got = spec_of_rows(t);
      if (!spec_equal(&got, &want) || t->shape[0] != rows[f * ncomp]->shape[0]) {
        ds_status_set(st, DS_VALUE_ERROR, "file %s: component %d does not match the rows of "
                      "file %s", names[f], c, names[0]);
        return NULL;
      }
    }
  ds_dataset *d = node_new(OP_FILES, NULL);
  d->ncomp = ncomp;
  d->nfiles = nfiles;
  d->names = base_xcalloc((size_t)nfiles, sizeof *d->names);
  d->tensors = base_xcalloc((size_t)(nfiles * ncomp), sizeof *d->tensors);
  for (int f = 0; f < nfiles; f++) {
    snprintf(d->names[f], sizeof d->names[f], "%s", names[f]);
    for (int c = 0; c < ncomp; c++) d->tensors[f * ncomp + c] = md_tensor_copy(rows[f * ncomp + c]);
  }
  for (int c = 0; c < ncomp; c++) d->spec[c] = spec_of_rows(rows[c]);
  d->cardinality = DS_DATASET_UNKNOWN;  /* as for TF's readers: unknown until read */
  return d;
}

/* ---- transformations ---- */

static int is_finite(int64_t card) { return card >= 0; }

static int require_batched(const ds_dataset *in, const char *what, ds_status *st) {
  for (int c = 0; c < in->ncomp; c++)
    if (in->spec[c].rank == 0)
      return ds_status_set(st, DS_VALUE_ERROR, "%s: component %d is a scalar; batch the "
                           "dataset first", what, c);
  return 0;
}

ds_dataset *ds_dataset_batch(ds_dataset *in, int64_t batch_size, int drop_remainder,
                             ds_status *st) {
  if (batch_size < 1) {
    ds_status_set(st, DS_INVALID_ARGUMENT_ERROR, "batch_size must be greater than zero, not "
                  "%lld", (long long)batch_size);
    return NULL;
  }
  ds_dataset *d = node_new(OP_BATCH, in);
  d->n = batch_size;
  d->drop_remainder = drop_remainder;
  for (int c = 0; c < d->ncomp; c++) {
    ds_tensor_spec *s = &d->spec[c];
    memmove(s->dims + 1, s->dims, sizeof s->dims - sizeof s->dims[0]);
    s->dims[0] = drop_remainder ? batch_size : -1;
    s->rank++;
  }
  if (is_finite(in->cardinality))
    d->cardinality = drop_remainder ? in->cardinality / batch_size
                                    : (in->cardinality + batch_size - 1) / batch_size;
  return d;
}

/* The spec of one row of a batched spec. */
static void drop_batch_dim(ds_dataset *d) {
  for (int c = 0; c < d->ncomp; c++) {
    ds_tensor_spec *s = &d->spec[c];
    memmove(s->dims, s->dims + 1, sizeof s->dims - sizeof s->dims[0]);
    s->rank--;
  }
}

ds_dataset *ds_dataset_unbatch(ds_dataset *in, ds_status *st) {
  if (require_batched(in, "unbatch", st)) return NULL;
  ds_dataset *d = node_new(OP_UNBATCH, in);
  drop_batch_dim(d);
  if (is_finite(in->cardinality)) d->cardinality = DS_DATASET_UNKNOWN;
  return d;
}

ds_dataset *ds_dataset_rebatch(ds_dataset *in, int n, const int64_t *sizes, int drop_remainder,
                               ds_status *st) {
  if (require_batched(in, "rebatch", st)) return NULL;
  if (n < 1) {
    ds_status_set(st, DS_INVALID_ARGUMENT_ERROR, "rebatch: batch_sizes is empty");
    return NULL;
  }
  for (int i = 0; i < n; i++)
    if (sizes[i] < 0) {
      ds_status_set(st, DS_INVALID_ARGUMENT_ERROR, "rebatch: batch size %lld is negative",
                    (long long)sizes[i]);
      return NULL;
    }
  ds_dataset *d = node_new(OP_REBATCH, in);
  d->nsizes = n;
  d->sizes = base_xcalloc((size_t)n, sizeof *d->sizes);
  memcpy(d->sizes, sizes, (size_t)n * sizeof *sizes);
  d->drop_remainder = drop_remainder;
  /* Every output batch has sizes[0] rows only when all sizes agree and the input's batches
  ** cut evenly into them (or short ones are dropped). */
  int same = 1;
  for (int i = 1; i < n; i++) same &= sizes[i] == sizes[0];
  for (int c = 0; c < d->ncomp; c++) {
    int64_t b = in->spec[c].dims[0];
    int even = sizes[0] > 0 && b >= 0 && b % sizes[0] == 0;
    d->spec[c].dims[0] = same && (drop_remainder || even) ? sizes[0] : -1;
  }
  if (is_finite(in->cardinality)) d->cardinality = DS_DATASET_UNKNOWN;
  return d;
}

ds_dataset *ds_dataset_legacy_rebatch(ds_dataset *in, int64_t num_replicas, ds_status *st) {
  if (require_batched(in, "rebatch", st)) return NULL;
  if (num_replicas < 1) {
    ds_status_set(st, DS_INVALID_ARGUMENT_ERROR, "rebatch: num_replicas must be at least 1");
    return NULL;
  }
  ds_dataset *d = node_new(OP_LEGACY_REBATCH, in);
  d->n = num_replicas;
  for (int c = 0; c < d->ncomp; c++) {
    int64_t b = in->spec[c].dims[0];
    d->spec[c].dims[0] = b >= 0 && b % num_replicas == 0 ? b / num_replicas : -1;
  }
  if (is_finite(in->cardinality)) d->cardinality = in->cardinality * num_replicas;
  return d;
}

ds_dataset *ds_dataset_repeat(ds_dataset *in, int64_t count) {
  ds_dataset *d = node_new(OP_REPEAT, in);
  d->n = count < 0 ? -1 : count;
  if (count == 0) d->cardinality = 0;
  else if (is_finite(in->cardinality))
    d->cardinality = count < 0 ? (in->cardinality ? DS_DATASET_INFINITE : 0)
                               : in->cardinality * count;
  return d;
}

ds_dataset *ds_dataset_take(ds_dataset *in, int64_t count) {
  ds_dataset *d = node_new(OP_TAKE, in);
  d->n = count < 0 ? -1 : count;
  if (count >= 0 && (in->cardinality == DS_DATASET_INFINITE || count < in->cardinality))
    d->cardinality = count;
  return d;
}

ds_dataset *ds_dataset_shard(ds_dataset *in, int64_t num_shards, int64_t index, ds_status *st) {
  if (num_shards < 1 || index < 0 || index >= num_shards) {
    ds_status_set(st, DS_INVALID_ARGUMENT_ERROR, "shard: need num_shards >= 1 and 0 <= index < "
                  "num_shards, got num_shards %lld and index %lld", (long long)num_shards,
                  (long long)index);
    return NULL;
  }
  ds_dataset *d = node_new(OP_SHARD, in);
  d->n = num_shards;
  d->index = index;
  if (is_finite(in->cardinality))
    d->cardinality = in->cardinality / num_shards + (index < in->cardinality % num_shards);
  return d;
}

ds_dataset *ds_dataset_prefetch(ds_dataset *in, int64_t buffer_size, ds_status *st) {
  if (buffer_size < DS_DATASET_AUTOTUNE) {
    ds_status_set(st, DS_INVALID_ARGUMENT_ERROR, "prefetch: buffer_size must be >= 0 or "
                  "AUTOTUNE, not %lld", (long long)buffer_size);
    return NULL;
  }
  ds_dataset *d = node_new(OP_PREFETCH, in);
  d->n = buffer_size;
  return d;
}

ds_dataset *ds_dataset_map(ds_dataset *in, ds_dataset_map_fn fn, void *user, int n_out,
                           const ds_tensor_spec *out_spec, ds_status *st) {
  if (check_components(n_out, st)) return NULL;
  if (out_spec == NULL && n_out != in->ncomp) {
    ds_status_set(st, DS_VALUE_ERROR, "map: %d outputs need their spec (the input has %d "
                  "components)", n_out, in->ncomp);
    return NULL;
  }
  ds_dataset *d = node_new(OP_MAP, in);
  d->fn = fn;
  d->user = user;
  d->ncomp = n_out;
  if (out_spec) memcpy(d->spec, out_spec, (size_t)n_out * sizeof *out_spec);
  return d;
}

ds_dataset *ds_dataset_shuffle(ds_dataset *in, int64_t buffer_size, uint64_t seed,
                               int reshuffle_each_iteration, ds_status *st) {
  if (buffer_size < 1) {
    ds_status_set(st, DS_INVALID_ARGUMENT_ERROR, "shuffle: buffer_size must be greater than "
                  "zero, got %lld", (long long)buffer_size);
    return NULL;
  }
  ds_dataset *d = node_new(OP_SHUFFLE, in);
  d->n = buffer_size;
  d->seed = seed;
  d->reshuffle = reshuffle_each_iteration;
  return d;
}

ds_dataset *ds_dataset_with_auto_shard_policy(ds_dataset *in, ds_auto_shard_policy policy) {
  ds_dataset *d = node_new(OP_OPTIONS, in);
  d->policy = policy;
  return d;
}

void ds_dataset_free(ds_dataset *d) {
  while (d && --d->refs == 0) {
    ds_dataset *input = d->input;
    int owned = d->op == OP_FILES ? d->nfiles * d->ncomp : d->tensors ? d->ncomp : 0;
    for (int i = 0; i < owned; i++) md_tensor_free(d->tensors[i]);
    free(d->tensors);
    free(d->names);
    free(d->sizes);
    free(d);
    d = input;
  }
}

/* ---- what TF knows before iterating ---- */

int ds_dataset_num_components(const ds_dataset *d) { return d->ncomp; }

const ds_tensor_spec *ds_dataset_element_spec(const ds_dataset *d, int c) {
  assert(c >= 0 && c < d->ncomp);
  return &d->spec[c];
}

int ds_dataset_is_statically_shaped(const ds_dataset *d) {
  for (int c = 0; c < d->ncomp; c++)
    for (int i = 0; i < d->spec[c].rank; i++)
      if (d->spec[c].dims[i] < 0) return 0;
  return 1;
}

int64_t ds_dataset_cardinality(const ds_dataset *d) { return d->cardinality; }

ds_auto_shard_policy ds_dataset_auto_shard_policy(const ds_dataset *d) {
  for (; d; d = d->input)
    if (d->op == OP_OPTIONS) return d->policy;
  return DS_AUTO_SHARD_AUTO;
}

/* Nodes that leave the batch size as they found it (ComputeBatchSize's pass-through ops). */
static int keeps_batch_size(ds_op op) {
  return op == OP_PREFETCH || op == OP_OPTIONS || op == OP_REPEAT || op == OP_TAKE ||
         op == OP_SHARD || op == OP_SHUFFLE;
}

int64_t ds_dataset_compute_batch_size(const ds_dataset *d) {
  int known = 1;
  for (int c = 0; c < d->ncomp; c++) {
    if (d->spec[c].rank == 0) return -1;
    known &= d->spec[c].dims[0] >= 0;
  }
  if (known) {
    for (int c = 1; c < d->ncomp; c++)
      if (d->spec[c].dims[0] != d->spec[0].dims[0]) return -1;
    return d->spec[0].dims[0];
  }
  while (keeps_batch_size(d->op)) d = d->input;
  return d->op == OP_BATCH ? d->n : -1;
}

static size_t describe_node(const ds_dataset *d, char *buf, size_t len) {
  size_t n = 0;
  if (d->input) {
    n = describe_node(d->input, buf, len);
    if (n < len) n += (size_t)snprintf(buf + n, len - n, " -> ");
  }
  char *b = n < len ? buf + n : NULL;
  size_t room = n < len ? len - n : 0;
  switch (d->op) {
    case OP_RANGE: return n + (size_t)snprintf(b, room, "range(%lld, %lld, %lld)",
                                               (long long)d->start, (long long)d->stop,
                                               (long long)d->step);
    case OP_SLICES: return n + (size_t)snprintf(b, room, "from_tensor_slices(%lld)",
                                                (long long)d->cardinality);
    case OP_TENSORS: return n + (size_t)snprintf(b, room, "from_tensors()");
    case OP_FILES: {
      size_t k = (size_t)snprintf(b, room, "files(");
      for (int f = 0; f < d->nfiles; f++)
        k += (size_t)snprintf(k < room ? b + k : NULL, k < room ? room - k : 0, f ? ", %s" : "%s",
                              d->names[f]);
      return n + k + (size_t)snprintf(k < room ? b + k : NULL, k < room ? room - k : 0, ")");
    }
    case OP_BATCH: return n + (size_t)snprintf(b, room, d->drop_remainder ? "batch(%lld, drop)"
                                                                           : "batch(%lld)",
                                               (long long)d->n);
    case OP_UNBATCH: return n + (size_t)snprintf(b, room, "unbatch()");
    case OP_REBATCH: {
      size_t k = (size_t)snprintf(b, room, "rebatch([");
      for (int i = 0; i < d->nsizes; i++)
        k += (size_t)snprintf(k < room ? b + k : NULL, k < room ? room - k : 0,
                              i ? ", %lld" : "%lld", (long long)d->sizes[i]);
      return n + k + (size_t)snprintf(k < room ? b + k : NULL, k < room ? room - k : 0, "])");
    }
    case OP_LEGACY_REBATCH: return n + (size_t)snprintf(b, room, "legacy_rebatch(%lld)",
                                                        (long long)d->n);
    case OP_REPEAT: return n + (size_t)snprintf(b, room, "repeat(%lld)", (long long)d->n);
    case OP_TAKE: return n + (size_t)snprintf(b, room, "take(%lld)", (long long)d->n);
    case OP_SHARD: return n + (size_t)snprintf(b, room, "shard(%lld, %lld)", (long long)d->n,
                                               (long long)d->index);
    case OP_PREFETCH: return n + (size_t)snprintf(b, room, "prefetch(%lld)", (long long)d->n);
    case OP_MAP: return n + (size_t)snprintf(b, room, "map()");
    case OP_OPTIONS: return n + (size_t)snprintf(b, room, "options(auto_shard=%d)", d->policy);
    case OP_SHUFFLE: return n + (size_t)snprintf(b, room, "shuffle(%lld)", (long long)d->n);
  }
  return n;
}

const char *ds_dataset_describe(const ds_dataset *d, char *buf, size_t len) {
  if (len > 0) buf[0] = 0;
  describe_node(d, buf, len);
  return buf;
}

/* ---- the auto-shard rewrites ---- */

/* A copy of node d reading from new_input (whose reference it takes). */
static ds_dataset *clone_onto(const ds_dataset *d, ds_dataset *new_input) {
  ds_dataset *c = base_xcalloc(1, sizeof *c);
  *c = *d;
  c->refs = 1;
  c->input = new_input;
  if (d->sizes) {
    c->sizes = base_xcalloc((size_t)d->nsizes, sizeof *c->sizes);
    memcpy(c->sizes, d->sizes, (size_t)d->nsizes * sizeof *d->sizes);
  }
  return c;
}

ds_dataset *ds__dataset_shard_files(ds_dataset *d, int64_t num_shards, int64_t index,
                                    ds_status *st) {
  if (d->op == OP_FILES) {
    /* TF's rewrite shards the file list with require_non_empty: a worker past the last file
    ** reads nothing, and with fewer files than workers the others fail on their first element. */
    int keep = index < d->nfiles ? (int)((d->nfiles - index + num_shards - 1) / num_shards) : 0;
    ds_dataset *c = node_new(OP_FILES, NULL);
    c->ncomp = d->ncomp;
    memcpy(c->spec, d->spec, sizeof c->spec);
    c->cardinality = DS_DATASET_UNKNOWN;
    c->nfiles = keep;
    c->names = base_xcalloc((size_t)keep + 1, sizeof *c->names);
    c->tensors = base_xcalloc((size_t)(keep * d->ncomp) + 1, sizeof *c->tensors);
    for (int k = 0; k < keep; k++) {
      int f = (int)(index + k * num_shards);
      memcpy(c->names[k], d->names[f], sizeof c->names[k]);
      for (int j = 0; j < d->ncomp; j++)
        c->tensors[k * d->ncomp + j] = md_tensor_copy(d->tensors[f * d->ncomp + j]);
    }
    if (d->nfiles < num_shards) c->short_of = d->nfiles;
    c->num_shards = num_shards;
    (void)st;
    return c;
  }
  if (d->input == NULL) {
    char what[128];
    ds_status_set(st, DS_NOT_FOUND_ERROR, "found an unshardable source dataset: %s; use the "
                  "DATA auto-shard policy for it", ds_dataset_describe(d, what, sizeof what));
    return NULL;
  }
  ds_dataset *in = ds__dataset_shard_files(d->input, num_shards, index, st);
  return in ? clone_onto(d, in) : NULL;
}

ds_dataset *ds__dataset_shard_data(ds_dataset *d, int64_t num_shards, int64_t index) {
  if (d->op == OP_PREFETCH)
    return clone_onto(d, ds__dataset_shard_data(d->input, num_shards, index));
  ds_dataset *shard = ds_dataset_shard(d, num_shards, index, NULL);
  shard->require_non_empty = 1;
  return shard;
}

int ds__dataset_replays(const ds_dataset *d) {
  for (; d; d = d->input)
    if (d->op == OP_SHUFFLE || d->op == OP_MAP) return 0;
  return 1;
}

ds_dataset *ds__dataset_ref(ds_dataset *d) {
  d->refs++;
  return d;
}

/* ---- iteration ---- */

ds_dataset_iterator *ds_dataset_make_iterator(ds_dataset *d) {
  ds_dataset_iterator *it = base_xcalloc(1, sizeof *it);
  d->refs++;
  it->ds = d;
  it->epoch_empty = 1;
  if (d->input) it->input = ds_dataset_make_iterator(d->input);
  if (d->op == OP_SHUFFLE) {
    /* TF draws each iteration's seeds from a generator the dataset owns: with
    ** reshuffle_each_iteration every new iterator (each repeat epoch) gets the next stream. */
    char name[64];
    snprintf(name, sizeof name, "dataset.shuffle.%lld",
             (long long)(d->reshuffle ? d->iterations++ : 0));
    it->rng = sim_rng_stream(d->seed, name);
    it->buffer = base_xcalloc((size_t)(d->n * d->ncomp), sizeof *it->buffer);
  }
  return it;
}

static void release(md_tensor **t, int n) {
  for (int c = 0; c < n; c++) {
    md_tensor_free(t[c]);
    t[c] = NULL;
  }
}

void ds_dataset_iterator_free(ds_dataset_iterator *it) {
  if (it == NULL) return;
  release(it->held, DS_DATASET_MAX_COMPONENTS);
  if (it->buffer) release(it->buffer, (int)(it->buffered * it->ds->ncomp));
  free(it->buffer);
  if (it->rng) gsl_rng_free(it->rng);
  ds_dataset_iterator_free(it->input);
  ds_dataset_free(it->ds);
  free(it);
}

static int step(ds_dataset_iterator *it, md_tensor **out, ds_status *st);

/* TF's message (ShardDatasetOp) for an auto-sharded input with fewer elements than shards; it
** names files because TF's rewrite assumes FILE sharding, whichever policy inserted the shard. */
static int too_few_to_shard(ds_status *st, int64_t have, int64_t shards) {
  return ds_status_set(st, DS_INVALID_ARGUMENT_ERROR, "Could not apply FILE based sharding: "
                       "the dataset only has %lld file(s), which is not enough for the required "
                       "%lld shards/workers. If you are using datasets with distribution "
                       "strategy, consider setting the auto sharding policy to either DATA or OFF "
                       "using the `experimental_distribute.auto_shard_policy` option of "
                       "`tf.data.Options()`. Or, split your input files into a larger number of "
                       "small files such that number of files is greater than number of "
                       "shards/workers.", (long long)have, (long long)shards);
}

/* A require_non_empty shard that just took its first element: it skips the rest of the first
** round of num_shards elements, as TF does at once, and fails if the input ends in it (every
** shard must be able to get an element). The count named is the input's whole length. */
static int skip_first_round(ds_dataset_iterator *it, md_tensor **out, ds_status *st) {
  const ds_dataset *d = it->ds;
  md_tensor *skipped[DS_DATASET_MAX_COMPONENTS] = {0};
  int r = STEP_OK;
  while (it->pos < d->n && (r = step(it->input, skipped, st)) == STEP_OK) {
    release(skipped, d->ncomp);
    it->pos++;
  }
  if (r == STEP_OK) return STEP_OK;
  release(out, d->ncomp);
  return r == STEP_END ? too_few_to_shard(st, it->pos, d->n) : r;
}

/* Stacks n elements (rows[k * ncomp + c]) into one batch per component. */
static int stack(const ds_dataset *d, md_tensor **rows, int64_t n, md_tensor **out,
                 ds_status *st) {
  for (int c = 0; c < d->ncomp; c++)
    for (int64_t k = 1; k < n; k++)
      if (!md_tensor_same_shape(rows[c], rows[k * d->ncomp + c])) {
        char a[64], b[64];
        return ds_status_set(st, DS_INVALID_ARGUMENT_ERROR, "cannot batch tensors with "
                             "different shapes in component %d: the first element has shape "
                             "%s and element %lld has shape %s", c,
                             md_tensor_shape_str(rows[c], a, sizeof a), (long long)k,
                             md_tensor_shape_str(rows[k * d->ncomp + c], b, sizeof b));
      }
  for (int c = 0; c < d->ncomp; c++) {
    const md_tensor *r = rows[c];
    int64_t shape[MD_TENSOR_MAX_RANK];
    shape[0] = n;
    memcpy(shape + 1, r->shape, (size_t)r->rank * sizeof *shape);
    md_tensor *t = md_tensor_new(r->dtype, r->rank + 1, shape);
    size_t bytes = r->size * md_dtype_size(r->dtype);
    for (int64_t k = 0; k < n && bytes > 0; k++)
      memcpy((char *)t->data + (size_t)k * bytes, rows[k * d->ncomp + c]->data, bytes);
    out[c] = t;
  }
  return 0;
}

static int step_batch(ds_dataset_iterator *it, md_tensor **out, ds_status *st) {
  const ds_dataset *d = it->ds;
  md_tensor **rows = base_xcalloc((size_t)(d->n * d->ncomp), sizeof *rows);
  int64_t k = 0;
  int r = STEP_OK;
  while (k < d->n && (r = step(it->input, rows + k * d->ncomp, st)) == STEP_OK) k++;
  if (r == STEP_OK || (r == STEP_END && k > 0 && !(d->drop_remainder && k < d->n)))
    r = stack(d, rows, k, out, st) ? STEP_ERROR : STEP_OK;
  release(rows, (int)(k * d->ncomp));
  free(rows);
  return r;
}

/* Takes the next input batch into it->held; every component must have the same rows. */
static int hold_next(ds_dataset_iterator *it, ds_status *st) {
  const ds_dataset *d = it->ds;
  release(it->held, d->ncomp);
  int r = step(it->input, it->held, st);
  if (r != STEP_OK) return r;
  for (int c = 1; c < d->ncomp; c++)
    if (it->held[c]->shape[0] != it->held[0]->shape[0]) {
      release(it->held, d->ncomp);
      return ds_status_set(st, DS_INVALID_ARGUMENT_ERROR, "components 0 and %d of a batch have "
                           "%lld and %lld rows", c, (long long)it->held[0]->shape[0],
                           (long long)it->held[c]->shape[0]);
    }
  it->offset = 0;
  return STEP_OK;
}

static int step_unbatch(ds_dataset_iterator *it, md_tensor **out, ds_status *st) {
  while (it->held[0] == NULL || it->offset >= it->held[0]->shape[0]) {
    int r = hold_next(it, st);
    if (r != STEP_OK) return r;
  }
  for (int c = 0; c < it->ds->ncomp; c++) out[c] = row_of(it->held[c], it->offset);
  it->offset++;
  return STEP_OK;
}

md_tensor *ds__dataset_empty_batch(const ds_tensor_spec *s) {
  int64_t shape[MD_TENSOR_MAX_RANK];
  for (int i = 0; i < s->rank; i++) shape[i] = s->dims[i] < 0 ? 0 : s->dims[i];
  shape[0] = 0;
  return md_tensor_new(s->dtype, s->rank, shape);
}

static int step_rebatch(ds_dataset_iterator *it, md_tensor **out, ds_status *st) {
  const ds_dataset *d = it->ds;
  if (it->input_ended) return STEP_END;
  int64_t want = d->sizes[it->size_index], got = 0;
  int np = 0, r = STEP_OK;
  md_tensor **pieces = base_xcalloc((size_t)((want + 1) * d->ncomp), sizeof *pieces);
  while (got < want) {
    if (it->held[0] == NULL) {
      r = hold_next(it, st);
      if (r == STEP_END) it->input_ended = 1;
      if (r != STEP_OK) break;
    }
    int64_t rows = it->held[0]->shape[0], take = rows - it->offset;
    if (take > want - got) take = want - got;
    if (take > 0) {
      for (int c = 0; c < d->ncomp; c++)
        pieces[np * d->ncomp + c] = md_tensor_slice0(it->held[c], it->offset, it->offset + take);
      np++;
      got += take;
      it->offset += take;
    }
    if (it->offset == rows) release(it->held, d->ncomp);
  }
  it->size_index = (it->size_index + 1) % d->nsizes;
  if (r == STEP_ERROR || (got == 0 && want > 0) || (d->drop_remainder && got < want)) {
    release(pieces, np * d->ncomp);
    free(pieces);
    return r == STEP_ERROR ? STEP_ERROR : STEP_END;
  }
  for (int c = 0; c < d->ncomp; c++) {
    if (np == 0) {
      out[c] = ds__dataset_empty_batch(&d->spec[c]);
      continue;
    }
    md_tensor *parts[np];
    for (int p = 0; p < np; p++) parts[p] = pieces[p * d->ncomp + c];
    out[c] = np == 1 ? md_tensor_copy(parts[0]) : md_tensor_concat(parts, np, 0);
  }
  release(pieces, np * d->ncomp);
  free(pieces);
  return STEP_OK;
}

static int step_legacy_rebatch(ds_dataset_iterator *it, md_tensor **out, ds_status *st) {
  const ds_dataset *d = it->ds;
  if (it->pos % d->n == 0) {
    int r = hold_next(it, st);
    if (r != STEP_OK) return r;
  }
  int64_t slice = it->pos % d->n;
  for (int c = 0; c < d->ncomp; c++) {
    int64_t rows = it->held[c]->shape[0], interval = (rows + d->n - 1) / d->n;
    int64_t begin = interval * slice, end = begin + interval;
    if (end > rows) end = rows;
    if (begin > end) begin = end;
    out[c] = md_tensor_slice0(it->held[c], begin, end);
  }
  it->pos++;
  return STEP_OK;
}

static int step_repeat(ds_dataset_iterator *it, md_tensor **out, ds_status *st) {
  for (;;) {
    if (it->ds->n >= 0 && it->pos >= it->ds->n) return STEP_END;
    int r = step(it->input, out, st);
    if (r != STEP_END) {
      if (r == STEP_OK) it->epoch_empty = 0;
      return r;
    }
    it->pos++;
    if (it->epoch_empty) return STEP_END;  /* an empty input repeats into nothing */
    ds_dataset_iterator_free(it->input);
    it->input = ds_dataset_make_iterator(it->ds->input);
    it->epoch_empty = 1;
  }
}

/* tf.data's ShuffleDataset: keep the buffer full while the input lasts, hand out a slot drawn
** uniformly from the buffer and move the last slot into it. Drained once the input ends. */
static int step_shuffle(ds_dataset_iterator *it, md_tensor **out, ds_status *st) {
  const ds_dataset *d = it->ds;
  int nc = d->ncomp;
  while (!it->input_ended && it->buffered < d->n) {
    int r = step(it->input, it->buffer + it->buffered * nc, st);
    if (r == STEP_ERROR) return STEP_ERROR;
    if (r == STEP_END) it->input_ended = 1;
    else it->buffered++;
  }
  if (it->buffered == 0) return STEP_END;
  int64_t pick = (int64_t)gsl_rng_uniform_int(it->rng, (unsigned long)it->buffered);
  it->buffered--;
  memcpy(out, it->buffer + pick * nc, (size_t)nc * sizeof *out);
  memmove(it->buffer + pick * nc, it->buffer + it->buffered * nc, (size_t)nc * sizeof *out);
  memset(it->buffer + it->buffered * nc, 0, (size_t)nc * sizeof *out);
  return STEP_OK;
}

static int step_map(ds_dataset_iterator *it, md_tensor **out, ds_status *st) {
  const ds_dataset *d = it->ds;
  md_tensor *in[DS_DATASET_MAX_COMPONENTS] = { 0 };
  int nin = d->input->ncomp;
  int r = step(it->input, in, st);
  if (r != STEP_OK) return r;
  memset(out, 0, (size_t)d->ncomp * sizeof *out);
  r = d->fn(in, nin, out, d->ncomp, d->user, st) ? STEP_ERROR : STEP_OK;
  release(in, nin);
  for (int c = 0; c < d->ncomp && r == STEP_OK; c++) {
    const ds_tensor_spec *s = &d->spec[c];
    int fits = out[c] && out[c]->dtype == s->dtype && out[c]->rank == s->rank;
    for (int i = 0; fits && i < s->rank; i++) fits = s->dims[i] < 0 || s->dims[i] == out[c]->shape[i];
    if (!fits)
      r = ds_status_set(st, DS_INVALID_ARGUMENT_ERROR, "map: output %d does not match its "
                        "spec", c);
  }
  if (r != STEP_OK) release(out, d->ncomp);
  return r;
}

static int step(ds_dataset_iterator *it, md_tensor **out, ds_status *st) {
  const ds_dataset *d = it->ds;
  if (it->done) return STEP_END;
  int r = STEP_END;
  switch (d->op) {
    case OP_RANGE: {
      int64_t v = d->start + it->pos * d->step;
      if (d->step > 0 ? v < d->stop : v > d->stop) {
        out[0] = md_tensor_from(MD_INT64, 0, NULL, &v);
        it->pos++;
        r = STEP_OK;
      }
      break;
    }
    case OP_SLICES:
      if (it->pos < d->cardinality) {
        for (int c = 0; c < d->ncomp; c++) out[c] = row_of(d->tensors[c], it->pos);
        it->pos++;
        r = STEP_OK;
      }
      break;
    case OP_TENSORS:
      if (it->pos++ == 0) {
        for (int c = 0; c < d->ncomp; c++) out[c] = md_tensor_copy(d->tensors[c]);
        r = STEP_OK;
      }
      break;
    case OP_FILES:
      while (it->file < d->nfiles && it->pos >= d->tensors[it->file * d->ncomp]->shape[0]) {
        it->file++;
        it->pos = 0;
      }
      if (it->file < d->nfiles && d->short_of > 0) {
        r = too_few_to_shard(st, d->short_of, d->num_shards);
        break;
      }
      if (it->file < d->nfiles) {
        for (int c = 0; c < d->ncomp; c++)
          out[c] = row_of(d->tensors[it->file * d->ncomp + c], it->pos);
        it->pos++;
        r = STEP_OK;
      }
      break;
    case OP_BATCH: r = step_batch(it, out, st); break;
    case OP_UNBATCH: r = step_unbatch(it, out, st); break;
    case OP_REBATCH: r = step_rebatch(it, out, st); break;
    case OP_LEGACY_REBATCH: r = step_legacy_rebatch(it, out, st); break;
    case OP_REPEAT: r = step_repeat(it, out, st); break;
    case OP_TAKE:
      if (d->n < 0 || it->pos < d->n) {
        r = step(it->input, out, st);
        it->pos += r == STEP_OK;
      }
      break;
    case OP_SHARD:
      while ((r = step(it->input, out, st)) == STEP_OK && it->pos++ % d->n != d->index)
        release(out, d->ncomp);
      if (r == STEP_OK && d->require_non_empty && it->pos < d->n) r = skip_first_round(it, out, st);
      break;
    case OP_PREFETCH:
    case OP_OPTIONS: r = step(it->input, out, st); break;
    case OP_MAP: r = step_map(it, out, st); break;
    case OP_SHUFFLE: r = step_shuffle(it, out, st); break;
  }
  if (r == STEP_END) it->done = 1;
  return r;
}

int ds_dataset_get_next(ds_dataset_iterator *it, md_tensor **out, ds_status *st) {
  int r = step(it, out, st);
  if (r == STEP_END) return ds_status_set(st, DS_OUT_OF_RANGE_ERROR, "End of sequence");
  return r == STEP_OK ? 0 : -1;
}
