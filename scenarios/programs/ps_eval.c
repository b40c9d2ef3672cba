/*
** ps_eval.c: the side-car evaluator of parameter-server training (ps_eval_).
**
** TF's evaluator task (the TF 2.4 tutorial "Parameter server training", "Side-car evaluation";
** checkpoint_utils.py's checkpoints_iterator and wait_for_new_checkpoint):
**
**   for latest in tf.train.checkpoints_iterator(checkpoint_dir):  # seconds_to_sleep = 1
**     try: checkpoint.restore(latest).expect_partial()
**     except OpError: continue                                   # max_to_keep deleted it
**     eval_model.evaluate(eval_data)
**     if latest is the final checkpoint: break
**
** An actor on the evaluator's VM runs that loop:
**   wait      wait_for_new_checkpoint looks at once, then after every poll_interval of simulated
**             time, until the newest checkpoint in the directory is not the one it last took (a
**             checkpoint is there once the chief's write of it has completed): only the newest
**             is taken, the ones written meanwhile are skipped;
**   restore   the model's variables (expect_partial: no optimizer slots) are read from storage
**             at training.checkpoint.bandwidth, model bytes / bandwidth. If, when the read
**             completes, max_to_keep newer checkpoints have been written, the file was deleted
**             under it: OpError, counted in failed_restores, and it waits again;
**   evaluate  the real forward pass (md_model_loss) over `steps` batches of the global batch
**             from batch 0, its FLOPs charged on the VM's CPU through its roofline; the loss is
**             the per-example losses summed over every batch / the examples (Keras's Mean
**             weighted by batch size); one row of evaluations.csv.
** It touches neither the ps tasks, the fabric nor the chief: training runs as it would without
** it. A fault on `evaluator` kills the actor (the restore or evaluation under way is lost, no
** row); after down_for a new process starts with a fresh wait, so it takes the newest.
**
** Invariants:
**   (1) a row is appended only when an evaluation completes, in completion order;
**   (2) newest is a copy owned here of the last checkpoint written; seq counts the chief's
**       writes, and the file of write n is deleted when write n + max_to_keep completes;
**   (3) the model copy is reserved on the VM's RAM while a process lives (start to kill or end);
**   (4) done is set once, by the evaluation of the final checkpoint (step == training steps).
*/
#include "scenarios/programs/ps_eval.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct eval_row {
  long step;              /* the checkpoint's training step */
  sim_time written;       /* the chief's write of it completed */
  sim_time restored;      /* the evaluator's read of it completed */
  sim_time done;          /* its evaluation completed */
  double loss;            /* mean per-example loss (NaN with numerics off) */
} eval_row;

struct ps_eval {
  const train_input *in;  /* scenario, data, training steps */
  sim_engine *engine;     /* the clock */
  ds_strategy *strategy;  /* whose snapshots it reads */
  int nvars;              /* model variables */
  ds_variable *const *vars; /* them, as the strategy holds them */
  md_model *model;        /* the evaluator's copy, as last restored */
  md_model *newest;       /* the last checkpoint written (invariant 2) */
  md_model *reading;      /* the checkpoint a restore is reading */
  md_workspace *ws;       /* forward activations */
  float *x;               /* batch features */
  int32_t *ids;           /* batch ids */
  int32_t *labels;        /* batch labels */
  float *targets;         /* batch targets (losses other than sparse_categorical_crossentropy) */
  md_op_log ops;          /* an evaluation's ops, for the roofline */
  long batches;           /* batches an evaluation reads */
  uint64_t model_bytes;   /* the variables' bytes: reserved on RAM, read by a restore */
  sim_time poll;          /* wait_for_new_checkpoint's sleep */
  sim_cpu *cpu;           /* the evaluator VM's CPU */
  sim_mempool *ram;       /* its RAM */
  sim_roofline roofline;  /* how its ops turn into time */
  int track;              /* its trace track */
  sim_actor *actor;       /* the running process, NULL while down or ended */
  int down;               /* struck by a fault, its return scheduled */
  sim_event_handle back;  /* that return */
  const char *phase;      /* what the process is doing, for the trace of a kill (NULL: waiting) */
  sim_time phase_start;   /* since when */
  long seq;               /* checkpoints written (invariant 2) */
  long newest_step;       /* the newest one's training step */
  sim_time newest_written;/* when its write completed */
  long taken;             /* seq of the checkpoint the process last took (0: none) */
  int done;               /* the final checkpoint is evaluated (invariant 4) */
  long failed_restores;   /* restores of a deleted file */
  int failed;             /* the process died at start: its model does not fit its RAM */
  run_error error;        /* why (ResourceExhaustedError), for summary.json's evaluator_error */
  eval_row *rows;         /* evaluations.csv (invariant 1) */
  long nrows, cap_rows;   /* entries, allocated */
};

static void copy_values(md_model *to, const md_model *from, int nvars) {
  for (int i = 0; i < nvars; i++) {
    md_var *dst = md_model_var(to, i);
    if (dst->data) memcpy(dst->data, md_model_var_const(from, i)->data, dst->size * sizeof(float));
  }
}

/* Batch k of an evaluation: eval_data is the dataset batched by the global batch without
** dropping the remainder, repeated: pass-relative batch k mod ceil(rows / G). */
static void eval_batch(const ps_eval *ev, long k, size_t *start, int *n) {
  size_t rows = ev->in->data->rows, g = (size_t)ev->in->s->global_batch;
  size_t per_pass = (rows + g - 1) / g;
  *start = (size_t)k % per_pass * g;
  *n = (int)(rows - *start < g ? rows - *start : g);
}

static void trace_phase(ps_eval *ev, const char *phase) {
  ev->phase = phase;
  ev->phase_start = sim_now(ev->engine);
}

/* checkpoint.restore(latest): 0, or -1 when the file was deleted before the read completed. */
static int restore(ps_eval *ev, sim_actor *self, eval_row *row) {
  long seq = ev->seq;
  ev->taken = seq;
  row->step = ev->newest_step;
  row->written = ev->newest_written;
  copy_values(ev->reading, ev->newest, ev->nvars);
  trace_phase(ev, "restore");
  if (sim_sleep(self, sim_time_from_s((double)ev->model_bytes / ev->in->s->ckpt_bytes_per_s)) != SIM_OK) return -1;
  char span[48];
  int deleted = ev->seq >= seq + ev->in->s->ckpt_max_to_keep;
  snprintf(span, sizeof span, deleted ? "restore %ld: deleted" : "restore %ld", row->step);
  sim_trace_span(ev->engine, ev->track, span, "checkpoint", ev->phase_start, sim_now(ev->engine));
  if (deleted) {
    ev->failed_restores++;
    return -1;
  }
  copy_values(ev->model, ev->reading, ev->nvars);
  row->restored = sim_now(ev->engine);
  return 0;
}

/* eval_model.evaluate(eval_data, steps): the loss of the restored model; -1 if interrupted. */
static int evaluate(ps_eval *ev, sim_actor *self, eval_row *row) {
  const scenario *s = ev->in->s;
  md_cost cost = {.ops = &ev->ops};
  md_op_log_clear(&ev->ops);
  double sum = 0.0;
  long examples = 0;
  trace_phase(ev, "evaluate");
  for (long k = 0; k < ev->batches; k++) {
    size_t start;
    int n;
    eval_batch(ev, k, &start, &n);
    md_batch b = { n, NULL, NULL, NULL, NULL };
    if (s->numerics_full) {
      md_dataset_gather(ev->in->data, start, n, ev->x, ev->ids, ev->labels, ev->targets);
      b = (md_batch){ n, ev->in->data->is_ids ? NULL : ev->x, ev->in->data->is_ids ? ev->ids : NULL, ev->labels,
                      ev->targets };
    }
    sum += md_model_loss(ev->model, ev->ws, &b, &cost);
    examples += n;
  }
  double work = sim_roofline_work_ops(&ev->roofline, ev->ops.flops, ev->ops.bytes, ev->ops.matmul, ev->ops.n);
  if (sim_exec(self, ev->cpu, work) != SIM_OK) return -1;
  row->loss = s->numerics_full ? sum / (double)examples : NAN;
  row->done = sim_now(ev->engine);
  char span[48];
  snprintf(span, sizeof span, "evaluate %ld", row->step);
  sim_trace_span(ev->engine, ev->track, span, "evaluation", ev->phase_start, row->done);
  return 0;
}

static void append(ps_eval *ev, const eval_row *row) {
  if (ev->nrows == ev->cap_rows) {
    ev->cap_rows = ev->cap_rows ? 2 * ev->cap_rows : 16;
    eval_row *grown = base_xcalloc((size_t)ev->cap_rows, sizeof *grown);
    if (ev->rows) memcpy(grown, ev->rows, (size_t)ev->nrows * sizeof *grown);
    free(ev->rows);
    ev->rows = grown;
  }
  ev->rows[ev->nrows++] = *row;
}

static void on_kill(sim_actor *self, void *arg) {
  (void)self;
  ps_eval *ev = arg;
  sim_mempool_release(ev->ram, ev->model_bytes);
  if (ev->phase) {
    char span[48];
    snprintf(span, sizeof span, "%s: lost", ev->phase);
    sim_trace_span(ev->engine, ev->track, span, "fault", ev->phase_start, sim_now(ev->engine));
  }
  ev->actor = NULL;
}

static void eval_main(sim_actor *self, void *arg) {
  ps_eval *ev = arg;
  /* A process that cannot hold its model dies at start, as TF's would: training goes on. */
  if (sim_mempool_alloc(ev->ram, ev->model_bytes) != 0) {
    ev->failed = 1;
    train_out_of_memory(&ev->error, ds_ps_task_device(ev->strategy, DS_PS_EVALUATOR, 0), ev->ram,
                        ev->model_bytes, "the model's variables restored from a checkpoint");
    ev->actor = NULL;
    return;
  }
  sim_actor_on_kill(self, on_kill, ev);
  for (;;) {
    ev->phase = NULL;  /* waiting: nothing to lose */
    while (ev->seq == ev->taken)
      if (sim_sleep(self, ev->poll) != SIM_OK) return;
    eval_row row = {0};
    if (restore(ev, self, &row) != 0) continue;
    if (evaluate(ev, self, &row) != 0) return;
    append(ev, &row);
    if (row.step == ev->in->steps) break;
  }
  ev->done = 1;
  sim_mempool_release(ev->ram, ev->model_bytes);
  ev->actor = NULL;
}

static void start(ps_eval *ev) {
  ev->taken = 0;  /* a new process: checkpoints_iterator starts with no last checkpoint */
  ev->actor = sim_actor_spawn(ev->engine, "evaluator", eval_main, ev);
}

static void come_back(sim_engine *e, void *arg) {
  (void)e;
  ps_eval *ev = arg;
  ev->down = 0;
  start(ev);
}

ps_eval *ps_eval_new(const train_input *in, sim_engine *e, ds_strategy *s, int nvars, ds_variable *const *vars,
                     const md_model *init) {
  const scenario *sc = in->s;
  if (!sc->has_evaluator) return NULL;
  ps_eval *ev = base_xcalloc(1, sizeof *ev);
  ev->in = in;
  ev->engine = e;
  ev->strategy = s;
  ev->nvars = nvars;
  ev->vars = vars;
  ev->model = md_model_clone(init);
  ev->newest = md_model_clone(init);
  ev->reading = md_model_clone(init);
  ev->ws = md_workspace_new(init);
  ev->model_bytes = (uint64_t)md_model_num_params(init) * sizeof(float);
  size_t g = (size_t)sc->global_batch;
  ev->batches = sc->eval_steps > 0 ? sc->eval_steps : (long)((in->data->rows + g - 1) / g);
  ev->poll = sim_time_from_s(sc->eval_poll_s);
  ev->cpu = ds_ps_task_cpu(s, DS_PS_EVALUATOR, 0);
  ev->ram = ds_ps_task_memory(s, DS_PS_EVALUATOR, 0);
  ev->roofline = ds_ps_task_roofline(s, DS_PS_EVALUATOR, 0);
  ev->track = sim_trace_track(e, ds_ps_task_device(s, DS_PS_EVALUATOR, 0));
  if (sc->numerics_full) {
    size_t width = (size_t)in->data->width;
    ev->x = base_xcalloc(g * width, sizeof *ev->x);
    ev->ids = base_xcalloc(g * width, sizeof *ev->ids);
    ev->labels = base_xcalloc(g * md_dataset_labels_per_row(in->data), sizeof *ev->labels);
    ev->targets = base_xcalloc(g * (size_t)in->data->targets_width + 1, sizeof *ev->targets);
  }
  start(ev);
  return ev;
}

void ps_eval_free(ps_eval *ev) {
  if (ev == NULL) return;
  md_model_free(ev->model);
  md_model_free(ev->newest);
  md_model_free(ev->reading);
  md_workspace_free(ev->ws);
  md_op_log_free(&ev->ops);
  free(ev->x);
  free(ev->ids);
  free(ev->labels);
  free(ev->targets);
  free(ev->rows);
  free(ev);
}

void ps_eval_saved(ps_eval *ev, long step, const ds_ps_snapshot *snap) {
  if (ev == NULL) return;
  for (int i = 0; i < ev->nvars; i++) {
    md_tensor *value = ds_ps_snapshot_value(ev->strategy, snap, ev->vars[i]);
    float *dst = md_model_var(ev->newest, i)->data;
    if (dst) memcpy(dst, value->data, value->size * sizeof(float));
    md_tensor_free(value);
  }
  ev->seq++;
  ev->newest_step = step;
  ev->newest_written = sim_now(ev->engine);
}

void ps_eval_down(ps_eval *ev, const sim_fault *f) {
  if (ev == NULL || ev->done) return;
  if (ev->actor) sim_actor_kill(ev->actor);
  sim_cancel(ev->engine, ev->back);
  ev->down = 1;
  ev->back = sim_schedule(ev->engine, sim_now(ev->engine) + f->duration, come_back, ev);
}

static int eval_going(void *arg) {
  const ps_eval *ev = arg;
  return !ev->done && (ev->actor != NULL || ev->down);
}

void ps_eval_drain(ps_eval *ev) {
  if (ev) sim_run_while(ev->engine, eval_going, ev);
}

void ps_eval_summarise(const ps_eval *ev, run_summary *sum) {
  if (ev == NULL) return;
  sum->has_evaluator = 1;
  sum->evaluations = ev->nrows;
  sum->failed_restores = ev->failed_restores;
  sum->final_eval_loss = ev->nrows > 0 ? ev->rows[ev->nrows - 1].loss : NAN;
  sum->eval_failed = ev->failed;
  sum->eval_error = ev->error;
  run_device *grown = base_xcalloc((size_t)sum->ndevices + 1, sizeof *grown);
  if (sum->ndevices > 0) memcpy(grown, sum->devices, (size_t)sum->ndevices * sizeof *grown);
  free(sum->devices);
  sum->devices = grown;
  run_device *d = &sum->devices[sum->ndevices++];
  snprintf(d->name, sizeof d->name, "%s", ds_ps_task_device(ev->strategy, DS_PS_EVALUATOR, 0));
  d->peak_bytes = sim_mempool_peak(ev->ram);
  d->capacity_bytes = sim_mempool_capacity(ev->ram);
}

/* evaluations.csv: checkpoint_step,sim_time_s,loss,written_s,restored_s; the loss printed so it
** reads back as the same double. */
static int write_rows(const void *arg, const char *path) {
  const ps_eval *ev = arg;
  FILE *f = fopen(path, "w");
  if (f == NULL) return -1;
  fputs("checkpoint_step,sim_time_s,loss,written_s,restored_s\n", f);
  char t[3][32];
  for (long i = 0; i < ev->nrows; i++) {
    const eval_row *r = &ev->rows[i];
    fprintf(f, "%ld,%s,", r->step, outputs_seconds(t[0], sizeof t[0], r->done));
    if (isnan(r->loss)) fputs("nan", f);
    else fprintf(f, "%.17g", r->loss);
    fprintf(f, ",%s,%s\n", outputs_seconds(t[1], sizeof t[1], r->written),
            outputs_seconds(t[2], sizeof t[2], r->restored));
  }
  return base_fclose(f);
}

void ps_eval_attach_outputs(const ps_eval *ev, train_outputs *o) {
  if (ev == NULL) return;
  o->extra_file = "evaluations.csv";
  o->write_extra = write_rows;
  o->extra = ev;
}

void ps_eval_snapshot(const ps_eval *ev, sim_snapshot *snap) {
  if (ev == NULL) return;
  sim_time now = sim_now(ev->engine);
  uint64_t words[] = { (uint64_t)ev->seq, (uint64_t)ev->taken, ev->actor != NULL, (uint64_t)ev->down,
                       (uint64_t)ev->done, ev->phase != NULL, ev->phase ? (uint64_t)(ev->phase_start - now) : 0,
                       (uint64_t)ev->nrows, (uint64_t)ev->failed_restores };
  for (size_t i = 0; i < sizeof words / sizeof *words; i++) sim_snapshot_word(snap, words[i]);
}
