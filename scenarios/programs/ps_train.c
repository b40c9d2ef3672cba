/*
** ps_train.c: the parameter-server training program (ps_train_).
**
** What TF's custom training loop with ParameterServerStrategy and ClusterCoordinator does (the
** TF 2.4 tutorial's shape), on the scenario's CPU VMs:
**
**   with strategy.scope(): model and optimizer   -> variables round-robin on the ps tasks
**   per_worker_iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))
**   for step in range(steps):
**     coordinator.schedule(train_step, args=(per_worker_iterator,))
**     if a checkpoint is due: coordinator.join(); manager.save()
**   coordinator.join()
**
** The chief is an actor on its VM running that loop. A scheduled train_step runs on whichever
** worker is idle (strategies/ps/coordinator.h): its worker's next batch, every variable read from
** its ps, all at once with optimizer.iterations as TF's function issues them (the value as it is
** when the bytes arrive; an embedding only the batch's rows, gathered on the ps as TF's colocated
** ResourceGather does), the real forward and backward pass on the
** worker's own copy, the FLOPs charged on the worker's CPU, the gradients pushed (an embedding's
** as IndexedSlices); each ps applies them with the optimizer state it holds, in arrival order
** (strategies/ps/ps_strategy.h). Nothing
** waits for the other workers: this is async training.
**
** dataset_fn is the scenario's tf.data program over row indices (input_plan.h's
** inp_worker_dataset: shuffled, repeated and batched by dataset.global_batch). It gets
** InputContext(1, 0, 1), as TF's ParameterServerStrategy gives it, so every worker iterates the
** whole dataset from its first batch (in the same order: the shuffle's seed is the scenario's),
** and a worker back from a failure starts again from the first batch, as in TF.
**
** Keras 2's Model.fit (ps_fit.h) is the same loop in executions: a closure runs
** steps_per_execution steps one after another, an epoch ends in a join (then its exact
** evaluation's shard closures, and its BackupAndRestore backup), and the compiled metrics are
** counted as each step's push is applied. With steps and steps_per_execution 1, the custom loop.
**
** Failures (docs/faults.md): a worker down is ds_coordinator_worker_failed (its closure goes back
** to the queue; the closure's on-kill, release_closure, frees what its read or push held); back
** after down_for. A ps down, or
** the chief, stops the job: the chief's next schedule/join raises UnavailableError; with
** training.checkpoint and training.restart the chief comes back after restart.delay (and after
** the lost task), restores the last checkpoint into the ps tasks and resumes at its step; else
** the job fails (exit 3).
**
** Invariants:
**   (1) a step's record is written once per attempt that applies it, when its push has been
**       applied: metrics.csv has one row per applied step, in completion order (an execution
**       run again applies its earlier steps again, each a row);
**   (2) a closure's progress (which components its update reached, in any attempt) lives in the
**       closure table, not on the worker's stack, so a killed attempt leaves its trace: a closure
**       that runs again after part of its update arrived is counted duplicated, once;
**   (3) staleness of a step = the most updates any of its components received between the step's
**       read of it and the arrival of its own update (applied_at - read_version);
**   (4) with one worker and no faults the run is sequential training: step k reads the values
**       step k-1 left, so the weights equal single-device training's;
**   (5) a record is kept unless a restore rolled its update back (it came after the restored
**       checkpoint) or it is a stray: a closure of an abandoned chief attempt applied after the
**       restart, whose step the new attempt schedules again. Goodput counts kept records only.
**
** Fast-forward (issue 27; sim/snapshot.c holds the engine's half and its proof, train.c the sync
** program's). With numerics off a closure is a function of the simulated state alone, so once the
** whole state equals an earlier one shifted by their distance P, the run repeats that period
** until something it did not contain happens. Workers interleave, so the period is found, not
** assumed: each applied closure arms sim_engine_on_quiet, its first quiet point snapshots the
** state into a ring (ps_ff.h), and the newest is compared with each earlier one, nearest first.
**   (6) only runs whose closures can repeat try: numerics off, every batch of global_batch rows
**       (inp_worker_batches_full: repeat before batch), and no table whose ids come from the
**       data (an id CSV routes each lookup to its shards by value); a traced run skips only once
**       its trace is full (before, each closure stores a span);
**   (7) the words (ff_words) hold what must not change, absolute: the chief waiting in a join,
**       the job's counts (duplicated, lost, checkpoints, closures scheduled, retries), the
**       lifecycle's and the evaluator's state, each worker's coordinator state, RAM held and
**       time down; and what moves, relative: each running closure's step to the latest begun,
**       its attempts, its read and applied versions to the components' versions, its start,
**       compute start and iteration to now and to optimizer.iterations. The counters (records,
**       the latest step begun, each worker's completions, every version and iterations) must
**       move by the same amounts each period: the period's own deltas are what k periods add;
**   (8) k periods may be skipped (ff_bound) while the chief joins (its queue only shrinks),
**       each period begins as many closures as it records (M), the queue's head holds k M
**       never-attempted closures (ds_coordinator_fresh_head: a re-queued closure sits behind
**       them), none of their steps meets an at_step fault, and sim_snapshot_periods proves the
**       engine's half: every event older than the period (a fault, a recovery, an async write,
**       a poll) is due after the landing;
**   (9) the skip (ff_skip) moves the engine (sim_engine_skip), appends the period's M rows k
**       times (steps + jM, ends + jP), completes the k M closures at the queue's head
**       (ds_coordinator_skip), gives each running closure step + kM and its versions + the
**       updates of the skipped time, moves the versions and iterations (ds_ps_skip_counters),
**       the workers' marks and the lifecycle's idle mark. Per-worker iterators have nothing to
**       move: under (6) a batch's rows are never read, only counted (every batch is full), so
**       no closure takes an element from them, with or without fast-forward.
**   Outputs and run_hash are the step-by-step run's bytes (training.fast_forward: false;
**   tests/scenarios/test_fastforward.c). A chief blocked in schedule (more than 256Ki closures
**   left in its segment: DS_COORDINATOR_QUEUE_MAX) does not skip: its queue refills.
*/
#include "scenarios/programs/ps_train.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scenarios/programs/faultlog.h"
#include "scenarios/programs/faults.h"
#include "scenarios/programs/input_plan.h"
#include "scenarios/programs/lifecycle.h"
#include "scenarios/programs/ps_eval.h"
#include "scenarios/programs/ps_fit.h"
#include "scenarios/programs/ps_ff.h"
#include "scenarios/report/report.h"
#include "scenarios/programs/trainInt.h"
#include "sim/fault.h"
#include "strategies/core/context.h"
#include "strategies/ps/coordinator.h"
#include "strategies/ps/ps_strategy.h"
#include "strategies/core/variable.h"

typedef struct ps_trainer ps_trainer;

/* One worker's copy of the model and its buffers: its closures run one at a time. */
typedef struct ps_worker {
  ps_trainer *t;          /* the run */
  int index;              /* worker task */
  md_model *model;        /* the values this worker last read */
  md_workspace *ws;       /* activations kept for backward */
  gsl_rng *dropout;       /* its dropout masks' stream, restarted per closure; NULL without dropout */
  md_grads *grads;        /* the gradients of its last pass */
  md_tensor **grad;       /* the same, as the tensors it pushes: one per variable */
  float *x;               /* batch features */
  int32_t *ids;           /* batch ids */
  int32_t *labels;        /* batch labels */
  float *targets;         /* batch targets (losses other than sparse_categorical_crossentropy) */
  md_op_log ops;          /* the pass's ops, for the roofline */
  int track;              /* its trace track */
  sim_event_handle back;  /* its pending recovery */
  md_tensor **lookup_ids; /* per variable: a table's batch ids, int64 [n * ids], its lookup's and
                          ** the indices of its gradient's IndexedSlices; NULL for the others */
  md_tensor **slices;     /* per variable: that gradient's values [n * ids, dim] (zeros with
                          ** numerics off) */
  ds_ps_grad *push;       /* per variable, what apply_gradients pushes */
  const md_tensor **read_ids; /* per variable read, the ids its read looks up (NULL: read whole) */
  md_tensor **values;     /* per variable read, what the read returned (a kill leaves them to the op) */
  ds_variable **reading;  /* the variables a read takes (read_variables' which) */
  int *reading_at;        /* each one's index among the model's */
  uint64_t held;          /* RAM its running closure reserved (worker_ram), 0 between closures */
  sim_time down_since;    /* its VM went down at this time; -1 while up */
  sim_time down_ps;       /* its time down, summed over the spans that ended */
  struct ps_closure *cl;  /* the closure it runs while its RAM is reserved, else NULL */
  sim_time start;         /* that closure's start (here, not on its stack: a fast-forward moves it) */
  sim_time computing;     /* its compute's start (idem), -1 before */
  int64_t iteration;      /* optimizer.iterations + 1 as its read returned it (idem), -1 before */
} ps_worker;

/* One scheduled closure (an execution: steps_per_execution training steps), across its
** attempts (invariant 2). */
typedef struct ps_closure {
  long step;              /* the first training step it runs */
  int nsteps;             /* the steps it runs (ps_fit.h: fewer at an epoch's end) */
  int attempt_applied;    /* its steps whose update its current attempt has applied */
  int64_t *read_version;  /* per component: the version its last read saw */
  int64_t *applied_at;    /* per component: the version it had when this update arrived; -1 before */
  int runs;               /* attempts started */
  int duplicated;         /* updates an earlier attempt applied (in part or whole) that it applies
                          ** again: 0 or 1 for one step, up to nsteps */
  int done;               /* its update was applied and recorded */
  int job_attempt;        /* the chief attempt (lc_restarts(t->life)) that scheduled it */
} ps_closure;

struct ps_trainer {
  train_input in;         /* scenario, data, step count (trainInt.h) */
  sim_engine *engine;     /* the simulation */
  ds_strategy *strategy;  /* ParameterServerStrategy */
  ds_coordinator *coord;  /* its ClusterCoordinator */
  ds_per_worker *iterators; /* per-worker iterators over batch numbers */
  int nvars;              /* model variables */
  ds_variable **vars;     /* them, on the ps tasks */
  int ncomps;             /* their components (a shard counts one), vars' in order: a closure's tables */
  int nworkers;           /* worker tasks */
  ps_worker *workers;     /* one per worker task */
  ps_closure **closures;  /* one per schedule call, in order (pointers: stable as it grows) */
  long nclosures, cap_closures; /* entries, allocated */
  train_rows rows;        /* metrics.csv's rows, one per applied closure (invariant 1), each kept
                          ** while its update stays (invariant 5); the progress bar */
  long duplicated;        /* closures counted duplicated */
  long lost_updates;      /* applied updates a restore rolled back */
  sim_actor *chief;       /* the coordinator's program */
  int chief_track;        /* its trace track */
  long next_step;         /* where the chief's (next) attempt starts */
  int finished;           /* the chief's loop ended: every step applied */
  run_error error;        /* a worker's ResourceExhaustedError, for its closure and the job */
  ds_ps_snapshot *ckpt;   /* the last checkpoint, NULL before the first */
  long ckpt_step;         /* the step it resumes at */
  long ckpt_updates;      /* records applied when it was taken */
  long checkpoints;       /* checkpoints written */
  sim_time ckpt_time;     /* the chief's time spent writing them */
  lc_job *life;           /* when the job stops, restarts or fails (lifecycle.h) */
  faults *faults;         /* the scenario's faults, NULL without */
  sim_fault_plan *plan;   /* their plan */
  ps_eval *eval;          /* the side-car evaluator, NULL without (scenarios/programs/ps_eval.h) */
  sim_time ended;         /* the chief's last join or save returned: summary.json's sim_time_s */
  int rows_counted;       /* a batch's rows are never read, only counted, and every batch is full
                          ** (invariant 6): closures take no element from their iterators */
  int traced;             /* a trace is written or drawn: the closures' spans are stored */
  int joining;            /* the chief waits in a join: everything of its segment is scheduled */
  long taken_max;         /* the step of the closure whose first attempt began last */
  psff *ff;               /* fast-forward's snapshots, NULL when the run cannot skip */
  size_t fresh;           /* at a snapshot: never-attempted closures at the queue's head */
  long skipped;           /* closures fast-forward skipped */
  psfit *fit;             /* fit's metrics, loss tracker and History (ps_fit.h) */
};

static void ff_quiet(sim_engine *e, void *arg);

/* ---- the training step ------------------------------------------------------------------ */

/* 1 when variable v is a table the batch's ids look up (every embedding's: layer 0's, or one per
** id input of model.inputs), read by rows and pushed as IndexedSlices. */
static int is_table(const ps_worker *w, int v) { return w->grads->table[v]; }

/* Each table's batch ids into w->lookup_ids as int64, the dtype they travel in (a tf.data
** integer CSV column), duplicates and order kept: what its gather receives (b: the batch's
** values). Numerics off too: the per-shard bytes depend on the ids, which an id dataset still
** gives; several inputs' ids are then unknown (zeros), only their count and the rows' bytes. */
static void batch_ids(ps_trainer *t, ps_worker *w, const md_dataset *data, const int64_t *rows, const md_batch *b) {
  md_batch with_ids = *b;
  int32_t *ids = NULL;
  if (b->x == NULL && b->ids == NULL && data->is_ids) {
    ids = base_xcalloc((size_t)b->n * (size_t)data->width + 1, sizeof *ids);
    md_dataset_gather_rows(data, rows, b->n, NULL, ids, NULL, NULL);
    with_ids.ids = ids;
  }
  for (int v = 0; v < t->nvars; v++) {
    if (!is_table(w, v)) continue;
    int64_t shape[2] = { (int64_t)b->n * md_model_table_ids_per_example(w->model, v),
                         md_model_var_const(w->model, v)->shape[1] };
    md_tensor_free(w->lookup_ids[v]);
    md_tensor_free(w->slices[v]);
    w->lookup_ids[v] = md_tensor_new(MD_INT64, 1, shape);
    w->slices[v] = md_tensor_new(MD_FLOAT32, 2, shape);
    md_model_table_ids(w->model, v, &with_ids, md_tensor_i64(w->lookup_ids[v]));
  }
  free(ids);
}

/* Which variables read_variables takes: every one (a training step's), or for an evaluation
** the dense ones, whole, or the tables' batch rows. */
enum { READ_EVERY, READ_DENSE, READ_TABLES };

/* Reads variables into the worker's model, the versions seen into `versions` (the closure's
** table, or NULL) and optimizer.iterations + 1 into *step (or NULL): all in one operation, as the
** closure's tf.function issues them (ds_ps_read_many: one latency, not one per variable). A
** table is not read whole: TF's gather runs on the ps (ResourceGather is colocated with its
** variable; a ShardedVariable gathers per shard), so only the batch's rows (w->lookup_ids)
** travel and are written into the worker's copy; the other rows stay stale there, and nothing
** reads them. */
static int read_variables(ps_trainer *t, ps_worker *w, sim_actor *self, int which, int64_t *versions,
                          int64_t *step, ds_status *st) {
  if (w->read_ids == NULL) {
    w->read_ids = base_xcalloc((size_t)t->nvars, sizeof *w->read_ids);
    w->values = base_xcalloc((size_t)t->nvars, sizeof *w->values);
    w->reading = base_xcalloc((size_t)t->nvars, sizeof *w->reading);
    w->reading_at = base_xcalloc((size_t)t->nvars, sizeof *w->reading_at);
  }
  int n = 0;
  for (int i = 0; i < t->nvars; i++) {
    if ((which == READ_DENSE && is_table(w, i)) || (which == READ_TABLES && !is_table(w, i))) continue;
    w->reading[n] = t->vars[i];
    w->reading_at[n] = i;
    w->read_ids[n++] = w->lookup_ids[i];  /* NULL but for a table */
  }
  if (n == 0) return 0;
  int rc = ds_ps_read_many(t->strategy, self, w->index, n, w->reading, w->read_ids, w->values, versions, step, st);
  for (int k = 0; rc == 0 && k < n; k++) {
    int i = w->reading_at[k], emb = is_table(w, i);
    md_tensor *value = w->values[k];
    md_var *dst = md_model_var(w->model, i);
    size_t row = emb ? (size_t)dst->shape[1] : value->size;
    for (size_t j = 0; dst->data && j < value->size / (row ? row : 1); j++) {
      size_t to = emb ? (size_t)md_tensor_i64(w->lookup_ids[i])[j] * row : 0;
      memcpy(dst->data + to, md_tensor_f32(value) + j * row, row * sizeof(float));
    }
    md_tensor_free(value);
  }
  return rc;
}

static long staleness_of(const ps_trainer *t, const ps_closure *cl) {
  long most = 0;
  for (int k = 0; k < t->ncomps; k++) {
    long s = (long)(cl->applied_at[k] - cl->read_version[k]);
    if (s > most) most = s;
  }
  return most;
}

/* The failed ps an UnavailableError of ds_ps_read or ds_ps_apply_gradients names. */
static int failed_ps(const ps_trainer *t) {
  for (int k = 0; k < ds_ps_num_tasks(t->strategy, DS_PS_PS); k++)
    if (ds_ps_failed(t->strategy, k)) return k;
  return 0;
}

/* Step k's row: its closure's time from taking the batch to its push applied, of which `compute` on
** the worker's CPU; the rest is communication (reads, the push and the ps applying it). */
static void record(ps_trainer *t, const ps_closure *cl, long step, int worker, sim_time start, sim_time compute,
                   double loss, int n) {
  step_record *rec = train_rows_add(&t->rows, t->in.s, step, start, sim_now(t->engine), loss, n);
  t->rows.kept[t->rows.n - 1] = cl->job_attempt == lc_restarts(t->life);
  t->duplicated += cl->job_attempt != lc_restarts(t->life) && !cl->duplicated;  /* a stray applies its step twice */
  rec->compute_ps = compute;
  rec->comm_ps = rec->step_ps - compute;
  rec->restarts = cl->job_attempt;
  rec->worker = worker;
  rec->staleness = staleness_of(t, cl);
  psfit_applied(t->fit, worker, rec->step, cl->job_attempt, rec);
  lc_progress(t->life);
  if (t->ff) sim_engine_on_quiet(t->engine, ff_quiet, t);
}

static void job_failed(ps_trainer *t, const char *kind, const char *device, const char *msg);
/* ---- worker RAM ------------------------------------------------------------------------------ */

/* Bytes of variable i one closure reads from the ps and pushes back, float32: the whole variable
** both ways, except a table, which receives the looked-up rows (one per id, duplicates
** included, as the gather returns them) and pushes IndexedSlices (those rows and an int64 index
** each). The one place that says what a closure holds of a variable; batch_ids came first. */
static uint64_t bytes_read(const ps_worker *w, int i) {
  if (!is_table(w, i)) return (uint64_t)md_model_var_const(w->model, i)->size * sizeof(float);
  return (uint64_t)w->slices[i]->size * sizeof(float);
}

static uint64_t bytes_pushed(const ps_worker *w, int i) {
  if (!is_table(w, i)) return bytes_read(w, i);
  return bytes_read(w, i) + (uint64_t)w->lookup_ids[i]->size * sizeof(int64_t);
}

/* What TF's worker holds while a closure of batch n runs: the values it read, the activations kept
** for backward (md_model_activation_bytes: the batch's features or ids, the first layer's input,
** are among them, one buffer), the gradients it pushes and the batch's labels (int32, or its
** float32 targets for a loss that reads them). Reserved
** on the worker's RAM for the closure's life; -1 when it does not fit: the job fails with
** ResourceExhaustedError (train_out_of_memory), naming the worker's device. */
static int reserve_ram(ps_trainer *t, ps_worker *w, int n) {
  double read = 0, grads = 0;
  for (int i = 0; i < t->nvars; i++) {
    read += (double)bytes_read(w, i);
    grads += (double)bytes_pushed(w, i);
  }
  double acts = md_model_activation_bytes(w->model, n);
  int tw = t->in.data->targets_width;
  double labels = (double)n * (tw > 0 ? (double)tw * sizeof(float) : sizeof(int32_t));
  uint64_t need = (uint64_t)(read + acts + grads + labels);
  sim_mempool *pool = ds_ps_task_memory(t->strategy, DS_PS_WORKER, w->index);
  if (sim_mempool_alloc(pool, need) == 0) {
    w->held = need;
    return 0;
  }
  char parts[256];
  snprintf(parts, sizeof parts, "variables read %.0f, activations for a batch of %d %.0f, gradients %.0f, "
           "labels %.0f", read, n, acts, grads, labels);
  train_out_of_memory(&t->error, ds_ps_task_device(t->strategy, DS_PS_WORKER, w->index), pool, need, parts);
  job_failed(t, NULL, NULL, NULL);
  return -1;
}

static void release_ram(ps_worker *w) {
  sim_mempool_release(ds_ps_task_memory(w->t->strategy, DS_PS_WORKER, w->index), w->held);
  w->held = 0;
  w->cl = NULL;
}

/* A closure's on-kill: its RAM, and what its worker's cut-short read or push held. */
static void release_closure(void *arg) {
  ps_worker *w = arg;
  release_ram(w);
  ds_ps_worker_release(w->t->strategy, w->index);
}

/* A step's start on its worker: its row's start, and at its first attempt the at_step faults
** it meets. A fault with at_step N strikes as a worker starts step N: the chief enqueues every
** closure at once, so its schedule call would say nothing about when step N runs. */
static void step_begins(ps_trainer *t, ps_worker *w, const ps_closure *cl, long step) {
  w->start = sim_now(t->engine);
  w->computing = w->iteration = -1;  /* not yet: the snapshot words tell */
  if (cl->runs == 1 && t->plan) sim_fault_plan_step(t->plan, step);
  if (cl->runs == 1) t->taken_max = step;  /* the FIFO's order: a restart starts lower */
}

/* Step nth of closure cl on its worker, begun (step_begins): its batch from the worker's
** iterator, the variables read, the forward and backward pass, the push, the record. The step is
** read as cl->step + nth where it is used: a fast-forward moves cl->step while the step waits. 0,
** or -1 when the closure ends here (killed, or failed through ctx). */
static int run_step(ps_trainer *t, ps_worker *w, ds_closure *ctx, ps_closure *cl, int nth) {
  const scenario *s = t->in.s;
  sim_actor *self = ds_closure_actor(ctx);
  ds_status st = {0};
  md_tensor *next[1] = {NULL};
  /* The element is the batch's row indices: its rows are copied out at once (host work, no
  ** simulated time), so nothing of it is held when the closure is killed. When nothing reads
  ** them (rows_counted) the batch is its size alone, and the iterator is not pulled. */
  if (!t->rows_counted && ds_closure_get_next(ctx, 0, next) != 0) return -1;
  const int64_t *rows = next[0] ? md_tensor_i64(next[0]) : NULL;
  int n = next[0] ? (int)next[0]->size : s->global_batch;
  md_batch b = { n, NULL, NULL, NULL, NULL };
  if (s->numerics_full) {
    md_dataset_gather_rows(t->in.data, rows, n, w->x, w->ids, w->labels, w->targets);
    b = (md_batch){ n, t->in.data->is_ids ? NULL : w->x, t->in.data->is_ids ? w->ids : NULL, w->labels, w->targets };
  }
  if (w->grads->ntables > 0) batch_ids(t, w, t->in.data, rows, &b);
  md_tensor_free(next[0]);
  if (reserve_ram(t, w, n) != 0)
    return ds_closure_fail(ctx, DS_RESOURCE_EXHAUSTED_ERROR, "%s", t->error.message);
  w->cl = cl;

  if (read_variables(t, w, self, READ_EVERY, cl->read_version, &w->iteration, &st) != 0) {
    release_ram(w);
    return ds_closure_fail_ps(ctx, failed_ps(t));
  }
  double loss = 0.0;
  md_cost cost = {.ops = &w->ops};
  md_op_log_clear(&w->ops);
  /* Step N draws the same masks on whichever worker runs it, however often. */
  train_dropout_step(s, w->ws, w->dropout, "closure", cl->step + nth);
  md_model_train_step(w->model, w->ws, &b, train_loss_scale(s, n), w->grads, &loss, &cost);
  if (s->numerics_full && s->nmetrics > 0)  /* update_state on the predictions before the update */
    psfit_update(t->fit, w->index, md_model_last_output(w->model, w->ws), md_model_num_classes(w->model), &b);
  double work = sim_roofline_work_ops(ds_replica_roofline(t->strategy, 0), w->ops.flops, w->ops.bytes, w->ops.matmul,
                                   w->ops.n);
  w->computing = sim_now(t->engine);
  if (sim_exec(self, ds_closure_cpu(ctx), work) != SIM_OK) return -1;
  sim_time compute = sim_now(t->engine) - w->computing;

  /* A table pushes its IndexedSlices (the batch's ids, one gradient row per id), the ps
  ** deduplicating them as Keras does; every other variable its dense gradient. */
  if (w->push == NULL) w->push = base_xcalloc((size_t)t->nvars, sizeof *w->push);
  for (int i = 0; i < t->nvars; i++) {
    if (is_table(w, i)) {
      const float *slices = md_grads_slices(w->grads, i);
      if (slices && n > 0) memcpy(w->slices[i]->data, slices, w->slices[i]->size * sizeof(float));
      w->push[i] = (ds_ps_grad){ .indices = w->lookup_ids[i], .values = w->slices[i] };
      continue;
    }
    if (w->grads->g[i]) memcpy(md_tensor_f32(w->grad[i]), w->grads->g[i], w->grad[i]->size * sizeof(float));
    w->push[i] = (ds_ps_grad){ .dense = w->grad[i] };
  }
  int rc = ds_ps_apply_gradients(t->strategy, self, w->index, t->nvars, t->vars, w->push, w->iteration, cl->applied_at, &st);
  release_ram(w);
  if (rc != 0) return ds_closure_fail_ps(ctx, failed_ps(t));
  cl->attempt_applied++;
  record(t, cl, cl->step + nth, w->index, w->start, compute, loss, n);
  if (t->traced) {  /* nothing reads a trace that is neither written nor drawn */
    char span[48];
    snprintf(span, sizeof span, "step %ld", cl->step + nth);
    sim_trace_span(t->engine, w->track, span, "step", w->start, sim_now(t->engine));
  }
  return 0;
}

/* The scheduled function, Keras's train_function: cl->nsteps steps in one closure. Argument 0 is
** the worker's iterator, argument 1 the closure's index. The coordinator's dispatch of it
** (strategy.host_round_trip) is charged once, before its first step. */
static int train_step(ds_closure *ctx, void *user, ds_value **result) {
  ps_trainer *t = user;
  ps_worker *w = &t->workers[ds_closure_worker(ctx)];
  ps_closure *cl = t->closures[(long)md_tensor_get(ds_value_component(ds_closure_value(ctx, 1), 0), 0)];
  *result = NULL;
  if (cl->runs++ > 0) {  /* what an earlier attempt applied is applied again */
    int partial = 0;
    for (int k = 0; k < t->ncomps; k++) partial |= cl->applied_at[k] >= 0;
    if (cl->attempt_applied + partial > cl->duplicated) cl->duplicated = cl->attempt_applied + partial;
    cl->attempt_applied = 0;
  }
  step_begins(t, w, cl, cl->step);  /* the first step's row holds the dispatch */
  ds_closure_on_kill(ctx, release_closure, w);
  if (t->in.s->host_round_trip_s > 0 &&
      sim_sleep(ds_closure_actor(ctx), sim_time_from_s(t->in.s->host_round_trip_s)) != SIM_OK)
    return -1;
  for (int i = 0; i < cl->nsteps; i++) {
    if (i > 0) step_begins(t, w, cl, cl->step + i);
    if (run_step(t, w, ctx, cl, i) != 0) return -1;
    /* the next step's staleness is its own: what this one applied no longer marks it */
    for (int k = 0; i + 1 < cl->nsteps && k < t->ncomps; k++) cl->applied_at[k] = -1;
  }
  cl->done = 1;
  t->duplicated += cl->duplicated;
  return 0;
}

/* A shard of fit's exact evaluation (ps_fit.h), tf_keras's shard_test_function: argument 0 is
** the shard. Under cache_variable_reads the dense variables are read once (CachingVariable's
** cached value); an embedding's lookups are sparse_read, which the cache passes through, so each
** batch gathers its rows. Each batch's forward pass is charged on the worker's CPU; the shard's
** state is its own and starts again with each attempt. */
static int eval_shard(ds_closure *ctx, void *user, ds_value **result) {
  ps_trainer *t = user;
  ps_worker *w = &t->workers[ds_closure_worker(ctx)];
  sim_actor *self = ds_closure_actor(ctx);
  int shard = (int)md_tensor_get(ds_value_component(ds_closure_value(ctx, 0), 0), 0);
  ds_status st = {0};
  sim_time start = sim_now(t->engine);
  *result = NULL;
  ds_closure_on_kill(ctx, release_closure, w);
  if (t->in.s->host_round_trip_s > 0 && sim_sleep(self, sim_time_from_s(t->in.s->host_round_trip_s)) != SIM_OK)
    return -1;
  if (read_variables(t, w, self, READ_DENSE, NULL, NULL, &st) != 0) return ds_closure_fail_ps(ctx, failed_ps(t));
  psfit_val_begin(t->fit, shard);
  md_batch b;
  const int64_t *rows;
  for (long k = 0; psfit_val_batch(t->fit, w->index, shard, k, &b, &rows); k++) {
    if (w->grads->ntables > 0) {
      batch_ids(t, w, psfit_val_data(t->fit), rows, &b);
      if (read_variables(t, w, self, READ_TABLES, NULL, NULL, &st) != 0) return ds_closure_fail_ps(ctx, failed_ps(t));
    }
    md_cost cost = {.ops = &w->ops};
    md_op_log_clear(&w->ops);
    psfit_val_forward(t->fit, shard, w->model, w->ws, &b, &cost);
    double work = sim_roofline_work_ops(ds_replica_roofline(t->strategy, 0), w->ops.flops, w->ops.bytes,
                                        w->ops.matmul, w->ops.n);
    if (sim_exec(self, ds_closure_cpu(ctx), work) != SIM_OK) return -1;
  }
  if (t->traced) {
    char span[48];
    snprintf(span, sizeof span, "evaluate shard %d", shard);
    sim_trace_span(t->engine, w->track, span, "evaluation", start, sim_now(t->engine));
  }
  return 0;
}

/* ---- the chief ------------------------------------------------------------------------------ */

static ds_dataset *dataset_fn(void *user, ds_status *st) {
  const ps_trainer *t = user;
  return inp_worker_dataset(&t->in, st);
}

static int schedule_step(ps_trainer *t, long step, int nsteps, ds_status *st) {
  if (t->nclosures == t->cap_closures) {
    t->cap_closures = t->cap_closures ? 2 * t->cap_closures : 64;
    ps_closure **grown = base_xcalloc((size_t)t->cap_closures, sizeof *grown);
    if (t->closures) memcpy(grown, t->closures, (size_t)t->nclosures * sizeof *grown);
    free(t->closures);
    t->closures = grown;
  }
  ps_closure *cl = base_xcalloc(1, sizeof *cl);
  cl->step = step;
  cl->nsteps = nsteps;
  cl->job_attempt = lc_restarts(t->life);
  cl->read_version = base_xcalloc((size_t)t->ncomps, sizeof *cl->read_version);
  cl->applied_at = base_xcalloc((size_t)t->ncomps, sizeof *cl->applied_at);
  for (int k = 0; k < t->ncomps; k++) cl->applied_at[k] = -1;
  int64_t index = t->nclosures;
  t->closures[t->nclosures++] = cl;
  ds_value *arg = ds_value_regular(md_tensor_from(MD_INT64, 0, NULL, &index));
  ds_closure_arg args[2] = { ds_closure_arg_per_worker(t->iterators), ds_closure_arg_value(arg) };
  ds_function fn = { train_step, t, 1 };
  int rc = ds_coordinator_schedule(t->coord, &fn, 2, args, NULL, st);
  ds_value_free(arg);
  return rc;
}

/* manager.save() after a join: every component's bytes move ps -> chief over the fabric (all
** at once, as the chief's reads), then are written at training.checkpoint.bandwidth; the chief
** waits for both. max_to_keep only bounds the files kept: the last one is all a restore reads. */
static int save_checkpoint(ps_trainer *t, sim_actor *self, long step, ds_status *st) {
  sim_time start = sim_now(t->engine);
  for (int i = 0; i < t->nvars; i++) {
    md_tensor *v = ds_ps_read(t->strategy, self, DS_PS_FROM_COORDINATOR, t->vars[i], NULL, st);
    if (v == NULL) return -1;
    md_tensor_free(v);
  }
  ds_ps_snapshot *snap = ds_ps_snapshot_take(t->strategy);
  if (sim_sleep(self, sim_time_from_s((double)ds_ps_snapshot_bytes(snap) / t->in.s->ckpt_bytes_per_s)) != SIM_OK) {
    ds_ps_snapshot_free(snap);
    return -1;
  }
  ds_ps_snapshot_free(t->ckpt);
  t->ckpt = snap;
  t->ckpt_step = step;
  t->ckpt_updates = t->rows.n;
  t->checkpoints++;
  t->ckpt_time += sim_now(t->engine) - start;
  flog_checkpoint(lc_log(t->life));
  ps_eval_saved(t->eval, step, snap);
  sim_trace_span(t->engine, t->chief_track, "checkpoint", "checkpoint", start, sim_now(t->engine));
  return 0;
}

static void finish(ps_trainer *t) {
  if (t->plan) sim_fault_plan_stop(t->plan);
  for (int w = 0; w < t->nworkers; w++) sim_cancel(t->engine, t->workers[w].back);
}

static int job_failed_for_good(const ps_trainer *t) { return lc_state_of(t->life) == LC_FAILED; }

/* The job fails with TF exception `kind` on `device`; kind NULL: t->error is filled already. */
static void job_failed(ps_trainer *t, const char *kind, const char *device, const char *msg) {
  if (kind != NULL) lc_fail(t->life, kind, device, "%s", msg);
  else lc_fail_error(t->life, &t->error);
  finish(t);
}

static void stop_job(ps_trainer *t, int lost_ps, sim_time back_at);

/* The chief's schedule or join raised: a lost ps stops the job (stop_job decides whether it
** restarts); any other error is the job's. */
static void chief_raised(ps_trainer *t, const ds_status *st) {
  if (job_failed_for_good(t) || (st->kind == DS_UNAVAILABLE_ERROR && lc_state_of(t->life) == LC_DOWN))
    return;  /* stop_job handled it */
  job_failed(t, ds_error_kind_name(st->kind), ds_ps_task_device(t->strategy, DS_PS_COORDINATOR, 0), st->message);
}

/* coordinator.join(), marked while it waits: the chief's segment is all scheduled, so its queue
** only shrinks, what a fast-forward needs. A kill of the chief clears the mark (stop_chief). */
static int join(ps_trainer *t, ds_status *st) {
  t->joining = 1;
  int rc = ds_coordinator_join(t->coord, st);
  t->joining = 0;
  return rc;
}

/* fit's evaluate() after epoch `epoch`'s join, when validation_freq names it: one closure per
** shard, a join, the shards' states summed (ps_fit.h). */
static int evaluate_epoch(ps_trainer *t, long epoch, ds_status *st) {
  int shards = psfit_val_shards(t->fit, epoch), rc = 0;
  for (int i = 0; rc == 0 && i < shards; i++) {
    int64_t index = i;
    ds_value *arg = ds_value_regular(md_tensor_from(MD_INT64, 0, NULL, &index));
    ds_closure_arg args[1] = { ds_closure_arg_value(arg) };
    ds_function fn = { eval_shard, t, 1 };
    rc = ds_coordinator_schedule(t->coord, &fn, 1, args, NULL, st);
    ds_value_free(arg);
  }
  if (rc == 0 && shards > 0) rc = join(t, st);
  if (rc == 0 && shards > 0) psfit_val_done(t->fit, epoch);
  return rc;
}

static void chief_main(sim_actor *self, void *arg) {
  ps_trainer *t = arg;
  const scenario *s = t->in.s;
  ds_status st = {0};
  int rc = 0;
  /* An execution a closure (ps_fit.h); a checkpoint due within one is taken after it. A fit's
  ** epoch ends in a join (data_handler.sync) and the fetch of its logs. */
  for (long step = t->next_step, end; rc == 0 && step < t->in.steps; step = end) {
    end = psfit_execution_end(s, step, t->in.steps);
    rc = schedule_step(t, step, (int)(end - step), &st);
    int save = s->ckpt_every > 0 && end / s->ckpt_every > step / s->ckpt_every && end < t->in.steps;
    int epoch_ends = psfit_epoch_ends(s, end);
    if (rc == 0 && (save || epoch_ends)) rc = join(t, &st);
    if (rc == 0 && epoch_ends) psfit_epoch_done(t->fit, end / s->steps_per_epoch - 1, t->rows.n);
    if (rc == 0 && epoch_ends) rc = evaluate_epoch(t, end / s->steps_per_epoch - 1, &st);
    /* BackupAndRestore.on_epoch_end: the backup a restarted chief resumes from, at the next epoch */
    if (rc == 0 && epoch_ends && s->cb.backup) rc = save_checkpoint(t, self, end, &st);
    if (rc == 0 && save) rc = save_checkpoint(t, self, end, &st);
  }
  if (rc == 0) rc = join(t, &st);
  /* The evaluator ends with the final model: the chief saves it for the evaluator's sake. */
  if (rc == 0 && t->eval) rc = save_checkpoint(t, self, t->in.steps, &st);
  if (rc != 0) {
    chief_raised(t, &st);
    return;
  }
  t->finished = 1;
  finish(t);
}

/* coordinator.create_per_worker_dataset(dataset_fn), then iter(): NULL with st on error. */
static ds_per_worker *make_iterators(ps_trainer *t, ds_status *st) {
  ds_per_worker *datasets = ds_coordinator_create_per_worker_dataset(t->coord, dataset_fn, t, st);
  return datasets ? ds_coordinator_per_worker_iter(t->coord, datasets, st) : NULL;
}

static int job_going(void *arg) {
  const ps_trainer *t = arg;
  return !t->finished && !job_failed_for_good(t);
}

static void spawn_chief(ps_trainer *t) {
  t->chief = sim_actor_spawn(t->engine, "chief", chief_main, t);
}

/* lifecycle.h's start, the chief's restart: a new coordinator process (the same ds_coordinator,
** abandoned by the last one) restores the last checkpoint into the ps tasks, makes new per-worker
** iterators (each worker's input starts again at batch 0, as a new TF process's does) and
** schedules again from the checkpoint's step (optimizer.iterations restored). Updates applied
** after it are lost. */
static void restart_job(void *arg) {
  ps_trainer *t = arg;
  ds_status st = {0};
  /* The restart waits for every lost task's return (lifecycle.h): every ps is back. */
  for (int p = 0; p < ds_ps_num_tasks(t->strategy, DS_PS_PS); p++) ds_ps_set_failed(t->strategy, p, 0);
  if (t->ckpt) ds_ps_snapshot_restore(t->strategy, t->ckpt, &st);
  for (long i = t->ckpt_updates; i < t->rows.n; i++) {
    t->lost_updates += t->rows.kept[i];
    t->rows.kept[i] = 0;
  }
  t->ckpt_updates = t->rows.n;
  t->next_step = t->ckpt ? t->ckpt_step : 0;
  t->iterators = make_iterators(t, &st);
  assert(t->iterators != NULL);  /* dataset_fn made them at the start: it cannot fail now */
  sim_trace_instant(t->engine, sim_fault_plan_track(t->plan), "restart", "fault", sim_now(t->engine));
  spawn_chief(t);
}

/* lifecycle.h's stop: the coordinator process is gone. */
static void stop_chief(void *arg) {
  ps_trainer *t = arg;
  t->joining = 0;
  sim_actor_kill(t->chief);
}

/* The chief's attempts: a restarted chief runs at once (its ps tasks take the checkpoint back as
** it starts, nothing to read first). */
static const lc_program CHIEF = { stop_chief, restart_job, 0 };

/* A ps (lost_ps >= 0) or the chief (-1) is lost until back_at: the job stops (lifecycle.h), and
** restarts after training.restart.delay and the task's return. Without training.restart (or
** without a checkpoint to go back to) the job fails as TF's would: UnavailableError. */
static void stop_job(ps_trainer *t, int lost_ps, sim_time back_at) {
  const scenario *s = t->in.s;
  const char *device = lost_ps >= 0 ? ds_ps_task_device(t->strategy, DS_PS_PS, lost_ps)
                                    : ds_ps_task_device(t->strategy, DS_PS_COORDINATOR, 0);
  if (lc_task_lost(t->life, back_at) == LC_DOWN && !lc_stalled(t->life)) return;  /* already stopped: the restart may move */
  if (lc_stalled(t->life)) {
    finish(t);  /* the error is the lifecycle's (invariant 4) */
    return;
  }
  if (job_failed_for_good(t)) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s was lost at %.6f s and %s", device, sim_time_to_s(sim_now(t->engine)),
             s->has_restart ? "there is no checkpoint to restart from (training.checkpoint)"
                            : "nothing restarts the coordinator (training.restart)");
    job_failed(t, "UnavailableError", device, msg);
    return;
  }
  ds_status st = {0};
  /* A lost ps: the chief's next call would raise its error, cancelling what is queued and in
  ** flight; done() does that now (it never blocks). Either way the coordinator process is gone:
  ** its queue dies with it, closures running on workers finish and push (docs/faults.md). */
  if (lost_ps >= 0) ds_coordinator_done(t->coord, &st);
  ds_coordinator_abandon(t->coord);
}

/* ---- faults ---------------------------------------------------------------------------------- */

static void worker_recovered(sim_engine *e, void *arg) {
  (void)e;
  ps_worker *w = arg;
  ds_status st = {0};
  w->back = (sim_event_handle){0, 0};
  w->down_ps += sim_now(w->t->engine) - w->down_since;
  w->down_since = -1;
  ds_coordinator_worker_recovered(w->t->coord, w->index, &st);
}

static void task_down(void *ctx, const sim_fault *f, int in_job) {
  (void)in_job;
  ps_trainer *t = ctx;
  if (t->finished || job_failed_for_good(t)) return;
  int index;
  faults_task kind = faults_target_task(t->faults, f->target, &index);
  sim_time back_at = sim_now(t->engine) + f->duration;
  ds_status st = {0};
  flog_fault(lc_log(t->life), f, faults_target_name(t->faults, f->target));
  if (kind == FAULTS_WORKER) {
    ps_worker *w = &t->workers[index];
    if (w->down_since < 0) w->down_since = sim_now(t->engine);
    ds_coordinator_worker_failed(t->coord, index, &st);  /* the closure's on-kill releases */
    sim_cancel(t->engine, w->back);
    w->back = sim_schedule(t->engine, back_at, worker_recovered, w);
  } else if (kind == FAULTS_PS) {
    ds_ps_set_failed(t->strategy, index, 1);
    ds_coordinator_ps_failed(t->coord, index, &st);
    stop_job(t, index, back_at);
  } else if (kind == FAULTS_CHIEF) {
    stop_job(t, -1, back_at);
  } else if (kind == FAULTS_EVALUATOR) {
    ps_eval_down(t->eval, f);  /* its loss never stops training */
  }
}

/* ---- fast-forward --------------------------------------------------------------------------- */

/* The counters a period moves (ps_ff.h): records, the latest step begun, each worker's closures
** completed, then the ps tasks' versions and iterations (ds_ps_counters). */
enum { FF_ROWS, FF_TAKEN, FF_WORKERS };

static void ff_counters(const ps_trainer *t, int64_t *c) {
  c[FF_ROWS] = t->rows.n;
  c[FF_TAKEN] = t->taken_max;
  for (int w = 0; w < t->nworkers; w++) c[FF_WORKERS + w] = (int64_t)ds_coordinator_worker_closures_run(t->coord, w);
  ds_ps_counters(t->strategy, c + FF_WORKERS + t->nworkers);
}

/* Adds sign times each component's version to out, a closure's components in order (the vars'
** components, shards in order). */
static void ff_versions(const ps_trainer *t, int64_t *out, int sign) {
  for (int v = 0, k = 0; v < t->nvars; v++)
    for (int c = 0; c < ds_ps_num_components(t->strategy, t->vars[v]); c++, k++)
      out[k] += sign * ds_ps_component_version(t->strategy, t->vars[v], c);
}

/* The words of the program's state (invariant 7): what must not change in a period, absolute;
** what moves with time or with the counters, relative to now and to them. */
static void ff_words(const ps_trainer *t, sim_snapshot *snap) {
  sim_time now = sim_now(t->engine);
  ds_coordinator_stats cs = ds_coordinator_get_stats(t->coord);
  uint64_t job[] = { (uint64_t)t->joining, (uint64_t)t->finished, (uint64_t)t->duplicated,
                     (uint64_t)t->lost_updates, (uint64_t)t->checkpoints, (uint64_t)t->nclosures,
                     (uint64_t)t->ckpt_updates, cs.retried, cs.transient_retries,
                     (uint64_t)ds_coordinator_in_flight(t->coord) };
  for (size_t i = 0; i < sizeof job / sizeof *job; i++) sim_snapshot_word(snap, job[i]);
  lc_snapshot(t->life, snap);
  ps_eval_snapshot(t->eval, snap);
  int64_t iterations = ds_ps_optimizer_iterations(t->strategy);
  int64_t *versions = base_xcalloc((size_t)t->ncomps, sizeof *versions);
  ff_versions(t, versions, 1);
  for (int i = 0; i < t->nworkers; i++) {
    const ps_worker *w = &t->workers[i];
    uint64_t words[] = { ds_coordinator_worker_state(t->coord, i), w->held, (uint64_t)w->down_since,
                         (uint64_t)w->down_ps, w->cl != NULL };
    for (size_t j = 0; j < sizeof words / sizeof *words; j++) sim_snapshot_word(snap, words[j]);
    const ps_closure *cl = w->cl;
    if (cl == NULL) continue;  /* its marks are the last closure's, overwritten before read */
    sim_snapshot_word(snap, (uint64_t)(w->start - now));
    sim_snapshot_word(snap, w->computing < 0 ? UINT64_MAX : (uint64_t)(w->computing - now));
    sim_snapshot_word(snap, w->iteration < 0 ? UINT64_MAX : (uint64_t)(w->iteration - iterations));
    sim_snapshot_word(snap, (uint64_t)(cl->step - t->taken_max));
    sim_snapshot_word(snap, (uint64_t)cl->runs);
    sim_snapshot_word(snap, (uint64_t)cl->duplicated);
    sim_snapshot_word(snap, (uint64_t)cl->job_attempt);
    for (int k = 0; k < t->ncomps; k++) {
      sim_snapshot_word(snap, (uint64_t)(cl->read_version[k] - versions[k]));
      sim_snapshot_word(snap, cl->applied_at[k] < 0 ? UINT64_MAX : (uint64_t)(cl->applied_at[k] - versions[k]));
    }
  }
  free(versions);
}

/* psff_bound_fn: how many periods may be skipped (invariant 8) when a period recorded M rows and
** began M closures: the chief joins, every closure begun in the skipped time is a fresh one of
** the queue's head, and none of their steps meets an at_step fault. */
static long ff_bound(void *ctx, const int64_t *delta) {
  const ps_trainer *t = ctx;
  int64_t m = delta[FF_ROWS];
  if (!t->joining || m <= 0 || delta[FF_TAKEN] != m) return 0;
  long k = (long)(t->fresh / (size_t)m);
  if (t->plan) {
    long next = sim_fault_plan_next_step(t->plan, t->taken_max + 1);
    if ((next - (t->taken_max + 1)) / m < k) k = (long)((next - (t->taken_max + 1)) / m);
  }
  return k;
}

/* Moves the program k periods on from the snapshot just taken (invariant 8): the period's rows
** again, a period apart; the closures begun in the skipped time leave the queue completed and
** the ones running take the steps their workers run after it; every counter and mark moves
** (invariant 9). */
static void ff_skip(ps_trainer *t, const sim_snapshot *a, const int64_t *delta, long k) {
  sim_time period = sim_snapshot_time(psff_newest(t->ff)) - sim_snapshot_time(a);
  long m = (long)delta[FF_ROWS];
  sim_engine_skip(t->engine, a, psff_newest(t->ff), k);
  long base = t->rows.n - m;
  for (long j = 1; j <= k; j++)
    for (long i = 0; i < m; i++) {
      step_record *rec = train_rows_next(&t->rows);
      *rec = t->rows.at[base + i];
      rec->step += j * m;
      rec->end_ps += j * period;
      t->rows.kept[t->rows.n - 1] = t->rows.kept[base + i];
    }
  uint64_t *done = base_xcalloc((size_t)t->nworkers, sizeof *done);
  for (int i = 0; i < t->nworkers; i++) {
    ps_worker *w = &t->workers[i];
    done[i] = (uint64_t)(k * delta[FF_WORKERS + i]);
    if (w->cl == NULL) continue;
    w->cl->step += k * m;
    w->start += k * period;
    if (w->computing >= 0) w->computing += k * period;
    if (w->iteration >= 0) w->iteration += k * delta[FF_WORKERS + t->nworkers + ds_ps_counters(t->strategy, NULL) - 1];
  }
  ds_coordinator_skip(t->coord, (size_t)(k * m), done);
  free(done);
  /* The running closures read (and had applied) the versions their steps' closures see: as many
  ** updates later as the components received in the skipped time. */
  int64_t *moved = base_xcalloc((size_t)t->ncomps, sizeof *moved);
  ff_versions(t, moved, -1);
  ds_ps_skip_counters(t->strategy, delta + FF_WORKERS + t->nworkers, k);
  ff_versions(t, moved, 1);
  for (int i = 0; i < t->nworkers; i++)
    for (int c = 0; t->workers[i].cl && c < t->ncomps; c++) {
      ps_closure *cl = t->workers[i].cl;
      cl->read_version[c] += moved[c];
      if (cl->applied_at[c] >= 0) cl->applied_at[c] += moved[c];
    }
  free(moved);
  lc_skip(t->life, k * period);
  t->taken_max += k * m;
  t->skipped += k * m;
  psff_reset(t->ff);
}

/* Whether nothing reads a batch's rows (invariant 6): numerics off, every batch of global_batch
** rows, and no table whose rows' ids route its lookups (an id dataset's). Then the closures'
** work is a function of the simulated state alone and may repeat exactly. */
static int rows_counted(const ps_trainer *t) {
  const scenario *s = t->in.s;
  return !s->numerics_full && inp_worker_batches_full(s) && !(t->workers[0].grads->ntables > 0 && t->in.data->is_ids);
}

/* sim_engine_on_quiet's callback, armed by each record: a snapshot while the chief joins, and a
** skip when it repeats an earlier one. */
static void ff_quiet(sim_engine *e, void *arg) {
  ps_trainer *t = arg;
  if (!t->joining || !job_going(t)) return;
  int64_t *counters;
  sim_snapshot *b = psff_push(t->ff, &counters);
  sim_snapshot_take(e, b);
  ff_words(t, b);
  ff_counters(t, counters);
  t->fresh = ds_coordinator_fresh_head(t->coord);
  const sim_snapshot *a;
  const int64_t *delta;
  long k = psff_find(t->ff, ff_bound, t, &a, &delta);
  if (k > 0) ff_skip(t, a, delta, k);
}

/* ---- set-up ------------------------------------------------------------------------------- */

static ds_strategy *build_strategy(const scenario *s, sim_engine *e) {
  ds_ps_cluster_spec spec = { .chief = 1, .workers = s->workers, .ps = s->ps,
                              .evaluators = s->has_evaluator, .task_type = "chief" };
  ds_ps_cluster m = { .worker = train_machine(&s->worker_machine), .ps = train_machine(&s->ps_machine),
                      .coordinator = train_machine(&s->chief_machine),
                      .evaluator = train_machine(&s->evaluator_machine),
                      .fabric = train_fabric_kind(s->fabric), .link_bytes_per_s = s->fabric_bytes_per_s,
                      .latency = sim_time_from_s(s->fabric_latency_s) };
  ds_partitioner p = {0};
  ds_status st = {0};
  int has = s->partitioner != SCN_PARTITIONER_NONE, rc = 0;
  switch (s->partitioner) {
    case SCN_PARTITIONER_NONE: break;
    case SCN_PARTITIONER_FIXED_SHARDS: p = ds_fixed_shards_partitioner(s->partitioner_shards); break;
    case SCN_PARTITIONER_MIN_SIZE:
      rc = ds_min_size_partitioner((int64_t)s->partitioner_bytes, s->partitioner_shards, 16, &p, &st); break;
    case SCN_PARTITIONER_MAX_SIZE:
      rc = ds_max_size_partitioner((int64_t)s->partitioner_bytes, s->partitioner_shards, 16, &p, &st); break;
  }
  assert(rc == 0);  /* the loader checked the partitioner's arguments */
  (void)rc;
  ds_strategy *strategy = ds_ps_strategy_new(e, &spec, &m, has ? &p : NULL, &st);
  assert(strategy != NULL);  /* the loader checked the cluster: ps and worker tasks */
  return strategy;
}

/* with strategy.scope(): the model's variables, from its initial values, and the optimizer. */
static int create_variables(ps_trainer *t, const md_model *init, ds_status *st) {
  t->nvars = md_model_num_vars(init);
  t->vars = base_xcalloc((size_t)t->nvars, sizeof *t->vars);
  if (ds_scope_enter(t->strategy, st) != 0) return -1;
  for (int i = 0; i < t->nvars; i++) {
    const md_var *v = md_model_var_const(init, i);
    /* numerics off: the variable is its shape alone, on the ps as here (no value is held) */
    md_tensor *value = md_tensor_from(MD_FLOAT32, v->rank, v->shape, v->data);
    ds_variable_options o = { .name = v->name, .trainable = 1 };
    t->vars[i] = ds_variable_new(value, &o, st);
    md_tensor_free(value);
    if (t->vars[i] == NULL) return -1;
    t->ncomps += ds_ps_num_components(t->strategy, t->vars[i]);
  }
  int rc = ds_ps_set_optimizer(t->strategy, &t->in.s->optimizer, st);
  return ds_scope_exit(t->strategy, st) != 0 ? -1 : rc;
}

static void make_workers(ps_trainer *t, const md_model *init) {
  const scenario *s = t->in.s;
  int width = t->in.data->width;
  t->nworkers = ds_ps_num_tasks(t->strategy, DS_PS_WORKER);
  t->workers = base_xcalloc((size_t)t->nworkers, sizeof *t->workers);
  for (int i = 0; i < t->nworkers; i++) {
    ps_worker *w = &t->workers[i];
    w->t = t;
    w->index = i;
    w->down_since = -1;
    w->model = md_model_clone(init);
    w->ws = md_workspace_new(w->model);
    w->dropout = train_dropout_rng(s, w->ws);
    /* A table's gradient is pushed as IndexedSlices: nothing of the table's size is computed,
    ** held or copied on a worker (no dense g, no dense tensor to push). */
    w->grads = md_grads_new_slices(w->model);
    w->grad = base_xcalloc((size_t)t->nvars, sizeof *w->grad);
    w->lookup_ids = base_xcalloc((size_t)t->nvars, sizeof *w->lookup_ids);
    w->slices = base_xcalloc((size_t)t->nvars, sizeof *w->slices);
    for (int v = 0; v < t->nvars; v++) {
      const md_var *var = md_model_var_const(init, v);
      if (!is_table(w, v))  /* numerics off: the gradient's shape alone, pushed for its bytes */
        w->grad[v] = s->numerics_full ? md_tensor_new(MD_FLOAT32, var->rank, var->shape)
                                      : md_tensor_shape(MD_FLOAT32, var->rank, var->shape);
    }
    w->track = sim_trace_track(t->engine, ds_ps_task_device(t->strategy, DS_PS_WORKER, i));
    if (!s->numerics_full) continue;
    w->x = base_xcalloc((size_t)s->global_batch * (size_t)width, sizeof *w->x);
    w->ids = base_xcalloc((size_t)s->global_batch * (size_t)width, sizeof *w->ids);
    w->labels = base_xcalloc((size_t)s->global_batch * md_dataset_labels_per_row(t->in.data), sizeof *w->labels);
    w->targets = base_xcalloc((size_t)s->global_batch * (size_t)t->in.data->targets_width + 1, sizeof *w->targets);
  }
}

static void free_workers(ps_trainer *t) {
  for (int i = 0; t->workers && i < t->nworkers; i++) {
    ps_worker *w = &t->workers[i];
    md_model_free(w->model);
    md_workspace_free(w->ws);
    if (w->dropout) gsl_rng_free(w->dropout);
    md_grads_free(w->grads);
    for (int v = 0; v < t->nvars; v++) {
      md_tensor_free(w->grad[v]);
      md_tensor_free(w->lookup_ids ? w->lookup_ids[v] : NULL);
      md_tensor_free(w->slices ? w->slices[v] : NULL);
    }
    free(w->grad);
    md_op_log_free(&w->ops);
    free(w->lookup_ids);
    free(w->slices);
    free(w->push);
    free(w->read_ids);
    free(w->values);
    free(w->reading);
    free(w->reading_at);
    free(w->x);
    free(w->ids);
    free(w->labels);
    free(w->targets);
  }
  free(t->workers);
}

static void free_trainer(ps_trainer *t) {
  for (long i = 0; i < t->nclosures; i++) {
    free(t->closures[i]->read_version);
    free(t->closures[i]->applied_at);
    free(t->closures[i]);
  }
  free(t->closures);
  train_rows_free(&t->rows);
  ds_ps_snapshot_free(t->ckpt);
  ps_eval_free(t->eval);
  psfit_free(t->fit);
  psff_free(t->ff);
  if (t->plan) sim_fault_plan_free(t->plan);
  faults_free(t->faults);
  lc_free(t->life);
  if (t->strategy) {
    for (int i = 0; t->vars && i < t->nvars; i++) ds_variable_free(t->vars[i]);
    ds_strategy_free(t->strategy);
  }
  free_workers(t);  /* after the coordinator: a closure it cancels releases through its worker */
  free(t->vars);
  if (t->engine) sim_engine_free(t->engine);
  if (t->in.data) md_dataset_free(t->in.data);
  free(t->in.file_rows);
}

/* ---- outputs ------------------------------------------------------------------------------ */

/* variables.csv from the ps registry: each component on its ps task, a copy of its own. */
static void each_copy(const void *prog, train_copy_fn fn, void *sink) {
  const ps_trainer *t = prog;
  int n = ds_ps_components(t->strategy, NULL, 0);
  ds_ps_component *c = base_xcalloc((size_t)n, sizeof *c);
  ds_ps_components(t->strategy, c, n);
  for (int i = 0; i < n; i++) {
    char shape[256] = "scalar";
    for (int d = 0, at = 0; d < c[i].rank && at < (int)sizeof shape; d++)
      at += snprintf(shape + at, sizeof shape - (size_t)at, d ? "x%lld" : "%lld", (long long)c[i].shape[d]);
    fn(sink, c[i].name, c[i].kind, shape, c[i].device);
  }
  free(c);
}

/* final_weights.csv: every variable's components as the ps tasks hold them at the end, shards
** put back together under the logical variable's name. */
static int write_weights(const void *prog, const char *path) {
  const ps_trainer *t = prog;
  md_model *m = md_model_clone(t->workers[0].model);
  for (int i = 0; i < t->nvars; i++) {
    int n = ds_variable_num_copies(t->vars[i]);
    md_tensor **parts = base_xcalloc((size_t)n, sizeof *parts);
    for (int k = 0; k < n; k++) parts[k] = ds_variable_copy(t->vars[i], k);
    md_tensor *whole = md_tensor_concat(parts, n, 0);
    float *dst = md_model_var(m, i)->data;
    if (dst) memcpy(dst, whole->data, whole->size * sizeof(float));
    md_tensor_free(whole);
    free(parts);
  }
  int rc = train_write_weights(m, path);
  md_model_free(m);
  return rc;
}

static void summarise(ps_trainer *t, run_summary *sum) {
  const scenario *s = t->in.s;
  snprintf(sum->scenario, sizeof sum->scenario, "%s", s->name);
  sum->seed = s->seed;
  sum->numerics = s->numerics_full ? "full" : "off";
  sum->strategy = scenario_strategy_name(s->strategy);
  sum->replicas = ds_num_replicas_in_sync(t->strategy);
  sum->all_reduce = "none";
  sum->sim_time_s = sim_time_to_s(t->ended);
  sum->steps_completed = t->rows.n - t->lost_updates;
  sum->final_loss = t->rows.n > 0 ? t->rows.at[t->rows.n - 1].loss : 0.0;
  double examples = 0;
  sim_time useful = 0, up = 0, end = t->ended;  /* the evaluator's drain after it is not training */
  for (long i = 0; i < t->rows.n; i++) {
    const step_record *r = &t->rows.at[i];
    examples += r->examples;
    sum->means.step_s += sim_time_to_s(r->step_ps) / (double)t->rows.n;
    sum->means.compute_s += sim_time_to_s(r->compute_ps) / (double)t->rows.n;
    sum->means.comm_s += sim_time_to_s(r->comm_ps) / (double)t->rows.n;
    if (t->rows.kept[i]) useful += r->step_ps;
  }
  for (int w = 0; w < t->nworkers; w++) {
    const ps_worker *wk = &t->workers[w];
    up += end - wk->down_ps - (wk->down_since >= 0 ? end - wk->down_since : 0);
  }
  sum->examples_per_s = sum->sim_time_s > 0 ? examples / sum->sim_time_s : 0.0;
  sum->steady_examples_per_s = sum->examples_per_s;  /* nothing compiles: the workers' steps overlap */
  sum->preemptions = t->plan ? sim_fault_plan_count(t->plan, SIM_FAULT_PREEMPT) : 0;
  sum->failures = t->plan ? sim_fault_plan_count(t->plan, SIM_FAULT_FAIL) : 0;
  if (t->plan) faults_unstruck(t->faults, t->plan, end, sum);
  sum->restarts = lc_restarts(t->life);
  sum->lost_steps = t->lost_updates;
  sum->lost_updates = t->lost_updates;
  sum->retried_closures = (long)ds_coordinator_get_stats(t->coord).retried;
  sum->duplicated_updates = t->duplicated;
  sum->checkpoints = t->checkpoints;
  sum->checkpoint_time_s = sim_time_to_s(t->ckpt_time);
  sum->downtime_s = sim_time_to_s(lc_downtime(t->life, t->ended));
  /* docs/faults.md: kept closure time over the fleet's provisioned time (goodput) and over its
  ** up time (worker_utilization). */
  sum->goodput = end > 0 ? (double)useful / ((double)end * t->nworkers) : 0.0;
  sum->worker_utilization = up > 0 ? (double)useful / (double)up : 0.0;
  /* The ps tasks' RAM holds the variables and slots; then each worker's. */
  int nps = ds_ps_num_tasks(t->strategy, DS_PS_PS);
  sum->ndevices = nps + t->nworkers;
  sum->devices = base_xcalloc((size_t)sum->ndevices, sizeof *sum->devices);
  for (int k = 0; k < sum->ndevices; k++) {
    ds_ps_job job = k < nps ? DS_PS_PS : DS_PS_WORKER;
    int index = k < nps ? k : k - nps;
    sim_mempool *pool = ds_ps_task_memory(t->strategy, job, index);
    run_device *d = &sum->devices[k];
    snprintf(d->name, sizeof d->name, "%s", ds_ps_task_device(t->strategy, job, index));
    d->peak_bytes = sim_mempool_peak(pool);
    d->capacity_bytes = sim_mempool_capacity(pool);
    if (d->peak_bytes < sum->memory_peak_bytes) continue;
    sum->memory_peak_bytes = d->peak_bytes;
    sum->memory_capacity_bytes = d->capacity_bytes;
  }
  sum->events = sim_events_processed(t->engine);
  sum->fast_forwarded = t->skipped;
  if (lc_failed(t->life, &sum->error)) {
    sum->failed = 1;
  }
}

static int write_outputs(ps_trainer *t, const char *dir, run_summary *sum, scn_error *err) {
  char figures[128];
  snprintf(figures, sizeof figures, "dup=%ld retried=%ld lost=%ld", sum->duplicated_updates,
           sum->retried_closures, sum->lost_updates);
  size_t nevents = 0;
  const report_fault *events = flog_events(lc_log(t->life), t->ended, &nevents);
  train_outputs o = { t->engine, t->rows.at, t->rows.n, 0, 1, write_weights, each_copy, NULL, t, figures,
                      events, nevents, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0 };
  ps_eval_attach_outputs(t->eval, &o);
  if (t->in.s->epochs > 0) {  /* a fit: keras.callbacks.History's epochs */
    o.more_file = "history.csv";
    o.write_more = psfit_write_history;
    o.more = t->fit;
  }
  double val_x[1024], val_y[1024];  /* the chart's val_loss points: at most its first 1024 epochs' */
  o.nval = psfit_val_points(t->fit, val_x, val_y, 1024);
  o.val_x = val_x;
  o.val_y = val_y;
  return train_write_outputs(t->in.s, &o, dir, sum, err);
}

/* ---- the run -------------------------------------------------------------------------------- */

static int prepare(ps_trainer *t, md_model **init, scn_error *err) {
  int rc = train_build_model(t->in.s, init, err);
  if (rc == TR_EXIT_OK) rc = train_load_data(&t->in, *init, err);
  if (rc == TR_EXIT_OK) rc = psfit_new(&t->in, *init, &t->fit, err);  /* validation_split's rows leave */
  if (rc == TR_EXIT_OK) rc = train_count_steps(&t->in, err);
  if (rc == TR_EXIT_OK) rc = faults_load(t->in.s, &t->faults, err);
  return rc;
}

/* Builds the strategy, its variables, the coordinator and the per-worker iterators. A TF error
** here (a partitioner refusing a shape) is the job's. */
static int build(ps_trainer *t, const md_model *init, run_summary *sum) {
  ds_status st = {0};
  t->strategy = build_strategy(t->in.s, t->engine);
  t->coord = create_variables(t, init, &st) == 0 ? ds_cluster_coordinator_new(t->strategy, &st) : NULL;
  if (t->coord) t->iterators = make_iterators(t, &st);
  if (t->iterators != NULL) return 0;
  train_job_failed(sum, ds_error_kind_name(st.kind), ds_ps_task_device(t->strategy, DS_PS_COORDINATOR, 0), st.message);
  return -1;
}

int ps_train_run(const scenario *s, const char *out_dir, int progress, run_summary *sum, scn_error *err) {
  double w0 = train_wall_s();
  ps_trainer t = { .in.s = s };
  md_model *init = NULL;
  memset(sum, 0, sizeof *sum);
  int rc = prepare(&t, &init, err);
  if (rc != TR_EXIT_OK) {
    md_model_free(init);
    free_trainer(&t);
    return rc;
  }
  t.traced = s->trace || report_needs_trace(s->plots);
  t.engine = train_engine_new(t.traced);
  t.life = lc_new(s, t.engine, s->has_restart && (s->ckpt_every > 0 || s->cb.backup), &CHIEF, &t);
  train_rows_init(&t.rows, t.in.steps, 1);
  if (build(&t, init, sum) == 0) {
    make_workers(&t, init);
    t.rows_counted = rows_counted(&t);
    psfit_start(t.fit, t.nworkers);
    /* a period of one-step closures in a custom loop (ff_bound counts closures as steps; a fit's
    ** epochs fetch their logs at joins it does not replay) */
    if (s->fast_forward && t.rows_counted && s->steps_per_execution <= 1 && s->epochs == 0)
      t.ff = psff_new(4 * t.nworkers + 8, FF_WORKERS + t.nworkers + ds_ps_counters(t.strategy, NULL));
    t.chief_track = sim_trace_track(t.engine, ds_ps_task_device(t.strategy, DS_PS_COORDINATOR, 0));
    if (t.faults) t.plan = faults_plan(t.faults, t.engine, t.strategy, NULL, task_down, &t);
    spawn_chief(&t);
    t.eval = ps_eval_new(&t.in, t.engine, t.strategy, t.nvars, t.vars, init);
    report_progress_start(&t.rows.progress, stderr, progress, t.in.steps, t.engine);
    train_engine_progress(t.engine, &t.rows.progress);
    /* The job ends when the chief's last join returns (or it fails): a worker's 3600 s recovery
    ** wait or a fault still to come must not run the clock on. */
    if (sim_run_while(t.engine, job_going, &t) == 1) {  /* stopped on request: nothing is written */
      report_progress_end(&t.rows.progress);
      sum->steps_completed = t.rows.n;
      md_model_free(init);
      free_trainer(&t);
      return TR_STOPPED;
    }
    t.ended = sim_now(t.engine);
    if (t.finished) ps_eval_drain(t.eval);
    report_progress_end(&t.rows.progress);
    if (!t.finished && !job_failed_for_good(&t))
      job_failed(&t, "SimulationStalled", ds_ps_task_device(t.strategy, DS_PS_COORDINATOR, 0),
                 "the chief stopped before every step was applied: every worker was lost for good");
    summarise(&t, sum);
    ps_eval_summarise(t.eval, sum);
    rc = write_outputs(&t, out_dir, sum, err);
  } else if (outputs_make_dir(out_dir) != 0) {
    rc = train_error(err, out_dir, 0, 0, "outputs.dir", "cannot create the directory: %s", strerror(errno));
  }
  md_model_free(init);
  rc = train_finish(s, out_dir, w0, rc, sum, err);
  free_trainer(&t);
  return rc;
}
