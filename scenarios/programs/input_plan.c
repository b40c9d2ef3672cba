/*
** input_plan.c: the scenario's input program on the strategies library, and its closed form.
**
** The program a scenario stands for (G = dataset.global_batch, E = epochs, 1 without repeat):
**
**   d = range(rows)                      # or a reader of dataset.files, one file after another
**   d = d.with_options(auto_shard_policy)                            # distribute: dataset
**   d = d.shard(ctx.num_input_pipelines, ctx.input_pipeline_id)      # distribute: function
**   d = d.shuffle(buffer, seed)          # dataset.shuffle; reshuffled every epoch
**   d = d.repeat().batch(B)              # steps with repeat: an endless stream of full batches
**   d = d.batch(B)                       # epochs, or repeat false: a pass ends in a short batch
**
** and with training.epochs (Keras's fit) E passes, each a new iterator over the distributed
** dataset, as Keras 3's EpochIterator makes one per epoch (keras/src/trainers/epoch_iterator.py,
** iter(self._distributed_dataset) once the last one ran out): an epoch's last step is short and
** the next epoch's first is whole, where a repeat(E) before the rebatch would run the pieces on
** across the epochs' boundary (11 x 100 + 52 for 3 epochs of 384 rows). The shuffle still takes
** the next stream at each pass (reshuffle_each_iteration).
**
** with B = G for experimental_distribute_dataset and B = ctx.get_per_replica_batch_size(G)
** for distribute_datasets_from_function, whose dataset_fn is the lines above for one input
** worker, as TF's documentation writes it. Elements are row indices into the loaded data.
**
** The closed form counts what the library's iterator would hand each replica (input.c's
** worker_pipeline and dataset.c's rebatch rules), by rule:
**   PASSTHROUGH  one replica: step s is input batch s.
**   REBATCH      policy OFF (the closed form has no files, so AUTO is DATA): worker w cuts the stream of its T = rows
**                elements (endless with repeat) into pieces of its sizes S_w (ds_input_batch_
**                sizes_for_worker, cycling), across batch boundaries; its replica i takes piece
**                s * R + i. A piece starting at T exists only if it is empty.
**   LEGACY       policy DATA (AUTO on a range), one worker too (input.c: TF's auto-shard rewrite
**                runs on a lone pipeline): input batch s of b rows is cut into N slices of
**                ceil(b / N) and worker w keeps slices w, w + W, ...
**   FUNCTION     pipeline w reads rows / W (+1 for w < rows % W) rows in batches of G / N; its
**                replica i takes batch s * R + i.
** A step exists while every replica has an element, or, with get_next_as_optional (Mirrored
** strategies on a finite dataset), while any has; the others get empty batches. The rules count
** one pass; step s of E passes is step s % P of the pass (P: the pass's steps).
**
** Invariants:
**   (1) the library path keeps the steps [held[0].step, next_step) contiguously;
**   (2) nothing asks for a step below held[0].step: replicas are at most one step apart, and a
**       step's rows are dropped only when a replica asks for the step two after it.
*/
#include "scenarios/programs/input_plan.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "sim/rng.h"
#include "strategies/core/distribute.h"
#include "strategies/input/strategy_input.h"

typedef enum { RULE_PASSTHROUGH, RULE_REBATCH, RULE_LEGACY, RULE_FUNCTION } count_rule;

typedef struct held_step {
  int64_t *rows;          /* every replica's row indices, replica after replica (NULL: no rows) */
  int *offset;            /* n + 1 offsets into rows: replica r has [offset[r], offset[r + 1]) */
} held_step;

struct inp_plan {
  train_input *in;        /* scenario, data, steps */
  const ds_strategy *strategy; /* whose replicas read */
  int n;                  /* replicas in sync */
  int nw;                 /* input workers */
  int per_worker;         /* replicas per input worker */
  int *position;          /* replica -> its component in a PerReplica input (worker-major) */
  int *replica_of;        /* component -> replica */
  int keep_rows;          /* the run reads example values */
  int library;            /* counts come from iterating the library */
  int wrap;               /* steps with repeat: an endless stream */
  long epochs;            /* passes of a finite stream, each a new iterator */
  long per_pass;          /* steps one pass yields (finite streams) */
  int optional;           /* get_next_as_optional: data-less replicas get empty batches */
  int max_count;          /* the largest per-replica batch */
  /* the library path */
  ds_input_dataset *dist; /* the distributed dataset */
  ds_input_iterator *it;  /* its iterator, which yields next_step next */
  long next_step;         /* the step the iterator yields next */
  held_step *held;        /* steps next_step - nheld .. next_step - 1 */
  int nheld;              /* steps held */
  int capheld;            /* slots allocated */
  /* the closed form */
  count_rule rule;        /* which of the rules above */
  int64_t *sizes;         /* REBATCH: nw rows of n piece sizes */
  int64_t *prefix;        /* REBATCH: nw rows of n + 1 prefix sums of sizes */
};

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* ---- the program on the library ------------------------------------------------------------ */

/* Replaces d by next (built on d); NULL when next is. */
static ds_dataset *then(ds_dataset *d, ds_dataset *next) {
  ds_dataset_free(d);
  return next;
}

/* Steps with repeat read an endless stream; epochs, or repeat false, finite passes. A
** parameter_server fit (steps_per_epoch) is steps: its per-worker iterators live across epochs
** (DatasetCreatorAdapter.should_recreate_iterator is False), so its epochs are no passes. */
static int endless(const scenario *s) { return (s->epochs == 0 || s->steps_per_epoch > 0) && s->repeat; }
static long passes(const scenario *s) { return s->epochs > 0 && s->steps_per_epoch == 0 ? s->epochs : 1; }

static ds_dataset *source(const train_input *in, ds_status *st) {
  if (in->nfiles == 0) return ds_dataset_range(0, (int64_t)in->data->rows, 1, st);
  const char *names[in->nfiles];
  md_tensor *rows[in->nfiles];
  const char *file = in->s->files;
  int64_t first = 0;
  for (int f = 0; f < in->nfiles; f++, file += strlen(file) + 1) {
    names[f] = file;
    int64_t count = (int64_t)in->file_rows[f];
    rows[f] = md_tensor_new(MD_INT64, 1, &count);
    for (int64_t k = 0; k < count; k++) ((int64_t *)rows[f]->data)[k] = first + k;
    first += count;
  }
  ds_dataset *d = ds_dataset_from_files(in->nfiles, names, 1, rows, st);
  for (int f = 0; f < in->nfiles; f++) md_tensor_free(rows[f]);
  return d;
}

/* Shuffle, repeat and batch by `batch` after d (whose reference it takes); a finite stream
** repeated `repeats` times. */
static ds_dataset *shuffle_repeat_batch(const scenario *s, ds_dataset *d, int64_t batch, long repeats,
                                        ds_status *st) {
  if (d && s->shuffle_buffer > 0)
    d = then(d, ds_dataset_shuffle(d, s->shuffle_buffer, sim_rng_derive_seed(s->seed, "dataset.shuffle"),
                                   1, st));
  if (d && endless(s)) {
    d = then(d, ds_dataset_repeat(d, -1));
    return then(d, ds_dataset_batch(d, batch, 0, st));
  }
  if (d) d = then(d, ds_dataset_batch(d, batch, 0, st));
  return d && repeats > 1 ? then(d, ds_dataset_repeat(d, repeats)) : d;
}

ds_dataset *inp_worker_dataset(const train_input *in, ds_status *st) {
  return shuffle_repeat_batch(in->s, source(in, st), in->s->global_batch, passes(in->s), st);
}

int inp_worker_batches_full(const scenario *s) { return endless(s); }

/* distribute_datasets_from_function's dataset_fn: one input worker's shard of the rows. */
static ds_dataset *dataset_fn(const ds_input_context *ctx, void *user, ds_status *st) {
  const inp_plan *p = user;
  int64_t batch = ds_input_context_per_replica_batch_size(ctx, p->in->s->global_batch, st);
  if (batch < 0) return NULL;
  ds_dataset *d = source(p->in, st);
  if (d) d = then(d, ds_dataset_shard(d, ctx->num_input_pipelines, ctx->input_pipeline_id, st));
  return shuffle_repeat_batch(p->in->s, d, batch, 1, st);
}

static const ds_auto_shard_policy POLICIES[] = {
  [SCN_SHARD_AUTO] = DS_AUTO_SHARD_AUTO, [SCN_SHARD_FILE] = DS_AUTO_SHARD_FILE,
  [SCN_SHARD_DATA] = DS_AUTO_SHARD_DATA, [SCN_SHARD_OFF] = DS_AUTO_SHARD_OFF };

/* The distributed dataset of the scenario's program, built afresh (so is its shuffle's seed
** generator: a rebuilt program reads the same elements in the same order). */
static ds_input_dataset *distribute(const inp_plan *p, ds_status *st) {
  const scenario *s = p->in->s;
  if (s->distribute == SCN_DISTRIBUTE_FUNCTION)
    return ds_distribute_datasets_from_function(p->strategy, dataset_fn, (void *)p, NULL, st);
  ds_dataset *d = source(p->in, st);
  if (d) d = then(d, ds_dataset_with_auto_shard_policy(d, POLICIES[s->auto_shard]));
  d = shuffle_repeat_batch(s, d, s->global_batch, 1, st);
  if (d == NULL) return NULL;
  ds_input_dataset *dist = ds_experimental_distribute_dataset(p->strategy, d, NULL, st);
  ds_dataset_free(d);
  return dist;
}

static void drop_held(inp_plan *p, int keep_from) {
  for (int h = 0; h < keep_from; h++) {
    free(p->held[h].rows);
    free(p->held[h].offset);
  }
  if (keep_from < p->nheld)
    memmove(p->held, p->held + keep_from, (size_t)(p->nheld - keep_from) * sizeof *p->held);
  p->nheld -= keep_from;
}

/* Reads step next_step from the iterator into the held steps: 0, or -1 at the end (st). The
** pass that ends before the last one is followed by a new iterator's. */
static int fetch(inp_plan *p, ds_status *st) {
  ds_value *v = NULL;
  if (p->per_pass > 0 && p->next_step > 0 && p->next_step % p->per_pass == 0 && p->next_step < p->epochs * p->per_pass) {
    ds_input_iterator_free(p->it);
    p->it = ds_input_iterator_new(p->dist);
  }
  if (ds_input_get_next(p->it, &v, st) != 0) return -1;
  assert(ds_value_num_components(v) == p->n);
  if (p->nheld == p->capheld) {
    p->capheld = p->capheld ? 2 * p->capheld : 4;
    held_step *grown = base_xcalloc((size_t)p->capheld, sizeof *grown);
    if (p->nheld) memcpy(grown, p->held, (size_t)p->nheld * sizeof *grown);
    free(p->held);
    p->held = grown;
  }
  held_step *h = &p->held[p->nheld++];
  h->offset = base_xcalloc((size_t)p->n + 1, sizeof *h->offset);
  for (int r = 0; r < p->n; r++)
    h->offset[r + 1] = h->offset[r] + (int)ds_value_component(v, p->position[r])->size;
  h->rows = p->keep_rows ? base_xcalloc((size_t)h->offset[p->n] + 1, sizeof *h->rows) : NULL;
  for (int r = 0; h->rows && r < p->n; r++) {
    const md_tensor *t = ds_value_component(v, p->position[r]);
    if (t->size > 0) memcpy(h->rows + h->offset[r], t->data, t->size * sizeof *h->rows);
  }
  ds_value_free(v);
  p->next_step++;
  return 0;
}

static void open_iterator(inp_plan *p) {
  ds_status st;
  ds_status_clear(&st);
  ds_input_iterator_free(p->it);
  ds_input_dataset_free(p->dist);
  drop_held(p, p->nheld);
  p->dist = distribute(p, &st);
  assert(p->dist != NULL);  /* inp_plan_new built the same program */
  p->it = ds_input_iterator_new(p->dist);
  p->next_step = 0;
}

/* The held step `step`, reading ahead as far as needed. */
static const held_step *held(inp_plan *p, long step) {
  assert(step >= p->next_step - p->nheld);  /* invariant (2) */
  while (p->next_step <= step) {
    ds_status st;
    ds_status_clear(&st);
    int rc = fetch(p, &st);
    assert(rc == 0);  /* inp_plan_new counted the steps there are */
    (void)rc;
  }
  return &p->held[step - (p->next_step - p->nheld)];
}

/* ---- the closed form ----------------------------------------------------------------------- */

/* Rows of input batch s of a pass of the dataset-mode program, -1 past its end. */
static int64_t input_batch(const inp_plan *p, long s) {
  int64_t g = p->in->s->global_batch, rows = (int64_t)p->in->data->rows;
  if (p->wrap) return g;
  if (s >= ceil_div(rows, g)) return -1;
  int64_t left = rows - s * g;
  return left < g ? left : g;
}

/* Replica r's count at step s of a pass (of the stream when endless) by the plan's rule, -1
** when it has no element. */
static int64_t pass_form(const inp_plan *p, long s, int r) {
  int j = p->position[r], w = j / p->per_worker, i = j % p->per_worker;
  int64_t rows = (int64_t)p->in->data->rows, g = p->in->s->global_batch;
  switch (p->rule) {
    case RULE_PASSTHROUGH: return input_batch(p, s);
    case RULE_LEGACY: {
      int64_t b = input_batch(p, s);
      if (b < 0) return -1;
      int64_t interval = ceil_div(b, p->n), left = b - (int64_t)(w + i * p->nw) * interval;
      return left < 0 ? 0 : left < interval ? left : interval;
    }
    case RULE_REBATCH: {
      int64_t k = (int64_t)s * p->per_worker + i, size = p->sizes[w * p->n + k % p->n];
      int64_t start = (k / p->n) * g + p->prefix[w * (p->n + 1) + k % p->n];
      if (p->wrap) return size;
      if (start > rows || (start == rows && size > 0)) return -1;
      return rows - start < size ? rows - start : size;
    }
    case RULE_FUNCTION: {
      int64_t b = g / p->n, mine = rows / p->nw + (w < rows % p->nw);
      int64_t k = (int64_t)s * p->per_worker + i;
      if (mine == 0) return -1;  /* repeating an empty shard yields nothing */
      if (p->wrap) return b;
      if (k >= ceil_div(mine, b)) return -1;
      int64_t left = mine - k * b;
      return left < b ? left : b;
    }
  }
  return -1;
}

/* Replica r's count at step s of the run: step s % P of a pass once the pass's P steps are
** counted (inp_plan_new), -1 past the last pass. */
static int64_t closed_form(const inp_plan *p, long s, int r) {
  if (p->wrap || p->per_pass == 0) return pass_form(p, s, r);
  return s < p->epochs * p->per_pass ? pass_form(p, s % p->per_pass, r) : -1;
}

/* Steps of a pass at which replica r has an element: exists(s) only gets false as s grows. A
** step takes at least one element from some replica's stream unless its pieces are empty, which
** the rebatch sizes allow at most n - 1 times in a row: the search stays below n * (rows + 1). */
static long steps_with_data(const inp_plan *p, int r) {
  long lo = 0, hi = (long)((int64_t)p->in->data->rows + 1) * p->n + 2;
  while (lo < hi) {
    long mid = lo + (hi - lo) / 2;
    if (pass_form(p, mid, r) >= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static void setup_closed_form(inp_plan *p, const ds_input_layout *layout) {
  const scenario *s = p->in->s;
  int64_t g = s->global_batch;
  p->rule = s->distribute == SCN_DISTRIBUTE_FUNCTION ? RULE_FUNCTION
          : p->n == 1 ? RULE_PASSTHROUGH
          : s->auto_shard == SCN_SHARD_AUTO || s->auto_shard == SCN_SHARD_DATA ? RULE_LEGACY : RULE_REBATCH;
  if (p->rule != RULE_REBATCH) return;
  p->sizes = base_xcalloc((size_t)(p->nw * p->n), sizeof *p->sizes);
  p->prefix = base_xcalloc((size_t)(p->nw * (p->n + 1)), sizeof *p->prefix);
  for (int w = 0; w < p->nw; w++) {
    ds_input_batch_sizes_for_worker(g, layout->num_workers, p->per_worker, w, p->sizes + w * p->n);
    for (int k = 0; k < p->n; k++)
      p->prefix[w * (p->n + 1) + k + 1] = p->prefix[w * (p->n + 1) + k] + p->sizes[w * p->n + k];
  }
}

/* ---- the plan ------------------------------------------------------------------------------ */

/* The steps one pass of a finite program yields: by iterating a throwaway copy, or from the
** closed form. */
static long count_steps(inp_plan *p) {
  if (p->library) {
    open_iterator(p);
    long steps = 0;
    ds_status st;
    ds_status_clear(&st);
    while (fetch(p, &st) == 0) {
      drop_held(p, p->nheld);
      steps++;
    }
    return steps;
  }
  long steps = p->optional ? 0 : -1;
  for (int r = 0; r < p->n; r++) {
    long c = steps_with_data(p, r);
    if (p->optional ? c > steps : (steps < 0 || c < steps)) steps = c;
  }
  return steps;
}

static inp_plan *fail(inp_plan *p, scn_error *err, const char *key, const ds_status *st) {
  train_error(err, p->in->s->path, 0, 0, key, "%s: %s", ds_error_kind_name(st->kind), st->message);
  inp_plan_free(p);
  return NULL;
}

inp_plan *inp_plan_new(train_input *in, const ds_strategy *s, int rows, scn_error *err) {
  const scenario *sc = in->s;
  inp_plan *p = base_xcalloc(1, sizeof *p);
  p->in = in;
  p->strategy = s;
  p->n = ds_num_replicas_in_sync(s);
  p->keep_rows = rows;
  p->library = rows || in->nfiles > 0;
  p->wrap = endless(sc);
  p->epochs = passes(sc);
  p->replica_of = base_xcalloc((size_t)p->n, sizeof *p->replica_of);
  p->position = base_xcalloc((size_t)p->n, sizeof *p->position);
  ds_status st;
  ds_status_clear(&st);
  ds_input_layout *layout = ds_strategy_input_layout(s, NULL, p->replica_of, &st);
  if (layout == NULL) return fail(p, err, "strategy", &st);
  for (int j = 0; j < p->n; j++) p->position[p->replica_of[j]] = j;
  p->nw = layout->num_workers;
  p->per_worker = p->n / p->nw;
  p->optional = layout->partial_batch_handling && !p->wrap;
  int64_t g = sc->global_batch;
  p->max_count = (int)(p->n == 1 ? g : ceil_div(g, p->n));
  if (!p->library) setup_closed_form(p, layout);
  free(layout);

  const char *key = sc->distribute == SCN_DISTRIBUTE_FUNCTION ? "dataset.distribute"
                                                               : "dataset.auto_shard_policy";
  ds_input_dataset *probe = distribute(p, &st);  /* the library's verdict on the program */
  if (probe == NULL) return fail(p, err, key, &st);
  ds_input_dataset_free(probe);
  if (!p->wrap) {
    p->per_pass = count_steps(p);
    long steps = p->epochs * p->per_pass;
    if (sc->epochs > 0 || steps < in->steps) in->steps = steps;
  } else if (!p->library) {
    for (int r = 0; r < p->n; r++)
      if (closed_form(p, 0, r) < 0 && !p->optional) {
        ds_status_set(&st, DS_OUT_OF_RANGE_ERROR, "input pipeline %d has no examples: %zu rows "
                      "over %d input workers", p->position[r] / p->per_worker, in->data->rows, p->nw);
        return fail(p, err, key, &st);
      }
  }
  if (p->library) {
    open_iterator(p);
    ds_status_clear(&st);
    if (in->steps > 0 && fetch(p, &st) != 0) return fail(p, err, key, &st);
  }
  return p;
}

void inp_plan_free(inp_plan *p) {
  if (p == NULL) return;
  drop_held(p, p->nheld);
  free(p->held);
  ds_input_iterator_free(p->it);
  ds_input_dataset_free(p->dist);
  free(p->replica_of);
  free(p->position);
  free(p->sizes);
  free(p->prefix);
  free(p);
}

int inp_plan_count(inp_plan *p, long step, int replica) {
  if (p->library) {
    const held_step *h = held(p, step);
    return h->offset[replica + 1] - h->offset[replica];
  }
  int64_t c = closed_form(p, step, replica);
  return c < 0 ? 0 : (int)c;
}

const int64_t *inp_plan_rows(inp_plan *p, long step, int replica, int *count) {
  if (!p->library) {
    *count = inp_plan_count(p, step, replica);
    return NULL;
  }
  long first = p->next_step - p->nheld, keep = step - 1 < p->next_step ? step - 1 : p->next_step;
  if (keep > first) drop_held(p, (int)(keep - first));
  const held_step *h = held(p, step);
  *count = h->offset[replica + 1] - h->offset[replica];
  return h->rows ? h->rows + h->offset[replica] : NULL;
}

long inp_plan_step_examples(inp_plan *p, long step) {
  if (p->library) return held(p, step)->offset[p->n];
  long total = 0;
  for (int r = 0; r < p->n; r++) total += inp_plan_count(p, step, r);
  return total;
}

/* Whether every step of an endless stream gives each replica the same count: then the closed
** form does not depend on the step (passthrough and legacy rebatch take the global batch, a
** function's dataset its per-replica batch, a rebatch the sizes of its rows when they agree). */
static int endless_and_uniform(const inp_plan *p) {
  if (p->library || !p->wrap) return 0;
  if (p->rule != RULE_REBATCH) return 1;
  for (int w = 0; w < p->nw; w++)
    for (int k = 1; k < p->n; k++)
      if (p->sizes[w * p->n + k] != p->sizes[w * p->n]) return 0;
  return 1;
}

long inp_plan_same_counts(inp_plan *p, long from, long to) {
  if (to <= from || endless_and_uniform(p)) return to;
  if (p->library) return from;  /* counting ahead would move the iterator */
  long budget = INP_SAME_COUNTS_BUDGET / (p->n > 0 ? p->n : 1);
  for (long s = from + 1; s <= to; s++) {
    if (s - from > budget) return s - 1;
    for (int r = 0; r < p->n; r++)
      if (closed_form(p, s, r) != closed_form(p, from, r)) return s - 1;
  }
  return to;
}

int inp_plan_max_count(const inp_plan *p) { return p->max_count; }

void inp_plan_restore(inp_plan *p, long step) {
  if (!p->library) return;
  open_iterator(p);
  while (p->next_step < step) {
    held(p, p->next_step);
    drop_held(p, p->nheld);
  }
}

long inp_plan_checkpoint_examples(const inp_plan *p) {
  long buffer = p->in->s->shuffle_buffer;
  long rows = (long)p->in->data->rows;
  return (buffer < rows ? buffer : rows) * p->nw;
}
