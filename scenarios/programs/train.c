/*
** train.c: the sync training program of a scenario (train_): every strategy but
** parameter_server (ps_train.c). What both programs share is toolkit.c's; the memory each
** replica reserves is memory.c's.
**
** Each replica is an actor on its worker's compute unit. A step is:
**   0. (first step, with XLA) wait out the program's compile time (sim/compile.h); then wait
**      until the input pipeline (strategies/input/pipeline.h) has put the step's batch on the device;
**   1. take the replica's batch from the input plan (scenarios/programs/input_plan.h: the
**      scenario's tf.data program distributed by the strategy) and run the real float32
**      forward and backward pass (models/), scaled by the loss reduction;
**   2. charge the pass's FLOPs on the replica's cpu (sim_exec);
**   3. SUM the gradients over replicas through the simulated all-reduce, which reduces the
**      actual buffers in the algorithm's order (embedding tables, where a step moves only their
**      rows, apart: embed.h, their IndexedSlices gathered or TPUEmbedding's all-to-alls; with packs, strategy.communication.bytes_per_pack
**      or strategy.xla_combine_threshold, steps 2 and 3 overlap: the pass is charged as one exec
**      per pack boundary and each pack's all-reduce starts once every replica has passed it;
**      overlap.h);
**   4. apply the optimizer to the replica's own mirrored copy and charge its FLOPs.
** Replica 0 then records the step's metrics; a due checkpoint is taken (scenarios/programs/recovery.h).
** Faults that stop the job kill every replica actor and the input pipeline (attempt_stop); a
** restart spawns them again at the checkpoint's step (attempt_start).
**
** Invariants:
**   (1) every replica applies the same summed gradient with the same optimizer state, so the
**       mirrored copies stay bitwise identical (checked at the end);
**   (2) replicas are never more than one step apart (the all-reduce joins them), so per-step
**       loss sums and the non-trainable variables a checkpoint of a step reads need only two
**       slots, indexed by step parity;
**   (3) nothing is written before every input (CSV, init file) has been read and checked.
**
** Fast-forward (issue 16; sim/snapshot.c holds the engine's half and its proof). With numerics
** off a step is a function of the simulated state alone, so when the state at replica 0's start
** of step s + 1 is the state at its start of step s shifted by their distance P, every step after
** repeats step s, shifted, until something the period did not contain happens. Replica 0 arms
** sim_engine_on_quiet as it starts a step; at the step's first quiet point (no transfer in
** flight) where invariant 4 holds, quiet_point takes a snapshot: the engine's words and pending
** events, and the program's (program_state: each replica's step relative to replica 0's and its
** phase; the input pipeline's counters and channels). Two snapshots one step and one metrics row apart then
** skip k steps at once (sim_engine_skip), the rows replayed as copies of the last one a period
** apart, every counter moved k on. It skips only what provably repeats:
**   (4) no replica is WORKING at a snapshot (a collective or its own code may hold state no
**       snapshot shows): each waits for its launch (a host round trip), its batch, or the exec
**       of its forward and backward or of its optimizer, whose state is the engine's (the
**       exec's) and the step's counts (invariant 5), and reads its step again after each wait
**       (a skip moves it); the snapshot is the step's first quiet point where that holds;
**   (5) every skipped step, and every step an actor is at while the period runs, gives each
**       replica the count of the step the period ran (inp_plan_same_counts: with numerics off
**       the model sees no values, so a step's work is a function of its counts), ends with no
**       checkpoint and starts with no at_step fault (rec_steady_until), is not the first of an
**       attempt (its compile) nor the run's last (it ends the loop): steps_to_skip;
**   (6) every event older than the period (a random fault, a fault's end, an async checkpoint
**       write, a restart) is due after the landing, and every resource, actor and pool is as it
**       was: sim_snapshot_periods, or no skip;
**   (7) runs that compute values (numerics full) or loop on the device (tpu_v1, steps_per_run
**       > 1) never skip (with packs, their counters and each replica's place in its packed pass
**       are in the snapshot: ovl_snapshot); a traced run skips only once its trace is full (before, each step
**       stores spans and the words differ; after, spans are only counted, and the count moves
**       k periods on with the skip); training.fast_forward:
**       false turns it off, and both ways write the same bytes (tests/scenarios/
**       test_fastforward.c).
*/
#include "scenarios/programs/trainSync.h"

#include <assert.h>
#include <math.h>
#include <string.h>

#include "sim/compile.h"
#include "scenarios/programs/accum.h"
#include "scenarios/programs/embed.h"
#include "scenarios/programs/mesh_symmetric.h"
#include "scenarios/programs/mfu.h"
#include "scenarios/programs/ps_train.h"
#include "scenarios/programs/validate.h"

static ds_pipeline_spec input_spec(const trainer *t);
static void checkpoint_on_read(void *ctx, long step, md_model *snapshot);

/* ---- the input ---------------------------------------------------------------------------- */

static int batch_size_of_step(void *ctx, long step, int replica) {
  return inp_plan_count(((trainer *)ctx)->plan, step, replica);
}

/* ---- a replica's life -------------------------------------------------------------------- */

/* The most examples any replica reads at `step`: the size every rank's share of the tables'
** collectives takes (a collective moves the same count on every rank). */
static int step_max_count(const trainer *t, long step) {
  int most = 0;
  for (int q = 0; q < t->nreplicas; q++) {
    int n = inp_plan_count(t->plan, step, q);
    if (n > most) most = n;
  }
  return most;
}

/* The gradients back to back, but the tables emb_ moves (none without it). */
static void flatten(const md_grads *g, const md_model *m, const emb_run *emb, float *flat) {
  size_t at = 0;
  for (int i = 0; i < g->nvars; i++) {
    if (emb_is_table(emb, i)) continue;
    size_t n = md_model_var_const(m, i)->size;
    memcpy(flat + at, g->g[i], n * sizeof *flat);
    at += n;
  }
}

/* The non-trainable variables of m back to back into out. */
static void keep_on_read(const md_model *m, float *out) {
  for (int i = 0; i < md_model_num_vars(m); i++) {
    const md_var *v = md_model_var_const(m, i);
    if (v->trainable) continue;
    memcpy(out, v->data, v->size * sizeof *out);
    out += v->size;
  }
}

static void unflatten(const float *flat, const md_model *m, const emb_run *emb, md_grads *g) {
  size_t at = 0;
  for (int i = 0; i < g->nvars; i++) {
    if (emb_is_table(emb, i)) continue;
    size_t n = md_model_var_const(m, i)->size;
    memcpy(g->g[i], flat + at, n * sizeof *flat);
    at += n;
  }
}

/* A synchronized batch normalisation's sum over the replicas (md_workspace_set_all_reduce): the
** strategy's all-reduce from the replica's actor, its time the step's sync_ps. Once a fault has
** stopped the actor nothing more is reduced; the step returns after the model's pass. */
static void replica_all_reduce(void *ctx, float *buf, size_t n) {
  replica *rep = ctx;
  trainer *t = rep->t;
  sim_time before = sim_now(t->engine);
  if (!rep->stopped && ds_all_reduce_sum(t->strategy, t->actors[rep->index], rep->index, buf, n) != SIM_OK)
    rep->stopped = 1;
  rep->sync_ps += sim_now(t->engine) - before;
}

/* The compiled metrics after `step`, SyncOnRead SUM read: every replica's state variables summed,
** then the metric's result (a mean's total / count, 0 when nothing was counted: Keras's
** divide_no_nan); NaN with numerics off. */
static void metric_values(const trainer *t, long step, float *out) {
  const float *kept = t->replicas[0].metric_kept[step & 1];  /* NULL with numerics off */
  for (int k = 0, at = 0; k < t->in.s->nmetrics; at += (int)md_metric_state_size(t->metric_kinds[k]), k++) {
    float state[MD_METRIC_STATE_MAX];
    for (size_t i = 0; kept && i < md_metric_state_size(t->metric_kinds[k]); i++) {
      state[i] = 0.0f;
      for (int r = 0; r < t->nreplicas; r++) state[i] += t->replicas[r].metric_kept[step & 1][at + (int)i];
    }
    out[k] = kept == NULL ? NAN : md_metric_result(t->metric_kinds[k], state);
  }
}

static void record_step(trainer *t, long step, const step_marks *m, int examples) {
  double loss = 0.0;
  for (int r = 0; r < t->nreplicas; r++) loss += t->replicas[r].loss_sum[step & 1];
  /* With packs the communication a step shows is what the backward did not hide: the wait after it. */
  sim_time now = sim_now(t->engine),
           comm = (t->ovl ? m->reduced - m->computed - m->split_comm : ds_last_all_reduce_time(t->strategy)) +
                  m->split_comm;
  /* A mesh's collectives show as the waits they cost inside the passes; the wait at the step's
  ** end is the slowest replica's, idle. */
  sim_time exposed = t->mesh ? mesh_waited(t->mesh, 0) : t->pipe ? pipe_waited(t->pipe, 0) : 0;
  if (t->mesh || t->pipe) comm = 0;
  step_record *rec = train_rows_add(&t->rows, t->in.s, step, m->start, now, loss, examples);
  rec->compile_ps = m->compiled - m->launched;
  rec->input_ps = m->fed - m->compiled;
  rec->compute_ps = (m->computed - m->fed - m->sync_comm) + (m->updated - m->reduced) - exposed;
  rec->comm_ps = comm + m->sync_comm + exposed;
  rec->host_ps = m->launched - m->start;
  rec->idle_ps = (m->reduced - m->computed) - comm + (now - m->updated);
  rec->hidden_ps = t->ovl ? ovl_hidden(t->ovl, m->computed) : 0;
  rec->memory_bytes = sim_mempool_used(ds_replica_memory(t->strategy, 0));
  rec->restarts = rec_restarts(t->rec);
  rec->learning_rate = m->learning_rate;
  metric_values(t, step, rec->metrics);
}

/* The epoch (0-based) `step` belongs to; 0 without training.epochs. */
long train__epoch_of(const trainer *t, long step) {
  return t->per_epoch > 0 ? step / t->per_epoch : 0;
}

/* training.metrics' update_state on the replica's step: the predictions of its forward (before
** the update) against its batch's labels. The state starts again from zero at each epoch, as
** Keras's fit resets the metrics there, and after a restart, as a new process's Keras metrics do
** (BackupAndRestore keeps no metric state). */
static void update_metrics(trainer *t, replica *rep, long step, const md_batch *b) {
  const scenario *s = t->in.s;
  long epoch = train__epoch_of(t, step);
  if (rec_restarts(t->rec) != rep->metric_attempt || epoch != rep->metric_epoch) {
    memset(rep->metric_state, 0, t->metric_floats * sizeof *rep->metric_state);
    rep->metric_attempt = rec_restarts(t->rec);
    rep->metric_epoch = epoch;
  }
  int outputs = md_model_num_classes(rep->model);
  for (int k = 0, at = 0; k < s->nmetrics; at += (int)md_metric_state_size(t->metric_kinds[k]), k++)
    if (b->n > 0)
      md_metric_update(t->metric_kinds[k], md_model_last_output(rep->model, rep->ws), outputs, b, rep->metric_state + at);
  memcpy(rep->metric_kept[step & 1], rep->metric_state, t->metric_floats * sizeof *rep->metric_state);
}

/* Kernels [from, to) of the compiled step as work on the replica's device: each bound by its
** FLOPs or its bytes (compile/). SPMD splits every kernel over the replica's logical devices,
** which run it at once: core 0 is charged its share. Without SPMD the kernels run one after
** another on the core of their layer, so the time is the whole work's (model parallelism without
** pipelining saves memory, not time). */
double train__kernel_work(trainer *t, const replica *rep, const cg_kernel *k, size_t from, size_t to) {
  double work = cg_work_memo_get(&t->work_memo, ds_replica_roofline(t->strategy, rep->index), k, from, to);
  return t->spmd ? work / t->cores : work;
}

/* mesh_pass's work: the replica's kernels (train__kernel_work), or none for an update the loss scale
** skips. */
static double mesh_kernels(void *ctx, const cg_kernel *k, size_t from, size_t to) {
  const replica *rep = ctx;
  return train__kernel_work(rep->t, rep, k, from, to);
}

static double mesh_skipped(void *ctx, const cg_kernel *k, size_t from, size_t to) {
  (void)ctx;
  (void)k;
  (void)from;
  (void)to;
  return 0;
}

/* The compiled forward and backward as work with packs (overlap.h): an exec up to the backward
** layer that completes each pack, whose gradients are then ready, and one for the rest. */
static int packed_pass(trainer *t, replica *rep, sim_actor *self, sim_cpu *cpu) {
  size_t from = 0, n;
  const cg_kernel *k = cg_program_step(rep->program, &n);
  for (int j = 0; j <= t->npacks; j++) {
    size_t to = j < t->npacks ? cg_program_mark(rep->program, t->pack_layer[j]) : n;
    rep->pack_at = j;
    if (to > from && sim_exec(self, cpu, train__kernel_work(t, rep, k, from, to)) != SIM_OK) return SIM_FAILED;
    if (to > from) from = to;
    if (j < t->npacks) ovl_ready(t->ovl, j);
  }
  return SIM_OK;
}

/* With outputs.ops, replica 0's first compiled pass (forward, loss, backward) on its own trace
** track, a span a kernel named as XLA's profiles name it (a fusion KIND_fusion.N), laid end to end
** from the pass's start at ops.csv's times: the pass's exec, seen kernel by kernel. Once. */
static void trace_kernels(trainer *t, const replica *rep, sim_time at) {
  size_t n;
  const cg_kernel *k = cg_program_step(rep->program, &n);
  const sim_roofline *rf = ds_replica_roofline(t->strategy, rep->index);
  char (*names)[CG_KERNEL_NAME_MAX] = base_xcalloc(n + 1, sizeof *names);
  cg_dump_kernel_names(cg_program_graph(rep->program), k, n, names);
  for (size_t i = 0; i < n; i++) {
    double seconds = cg_kernels_work(rf, k, i, i + 1) / rf->rate / (t->spmd ? t->cores : 1);
    sim_time end = at + (sim_time)llround(seconds * 1e12);
    sim_trace_span(t->engine, t->kernel_track, names[i], "kernel", at, end);
    at = end;
  }
  free(names);
  t->kernel_track = -1;
}

/* The whole compiled step (forward, loss and backward) as one exec. */
static int whole_pass(trainer *t, replica *rep, sim_actor *self, sim_cpu *cpu) {
  size_t n;
  const cg_kernel *k = cg_program_step(rep->program, &n);
  return sim_exec(self, cpu, train__kernel_work(t, rep, k, 0, n));
}

/* The step's update of the mirrored variables (invariant 1), by the first replica past the
** all-reduce: the others' reduced gradients are the same floats, so theirs would write the same
** values into the storage they share (numerics off there are no values, and the optimizer the
** replicas share counts one update a step, as a replica's own would). The rate is the one the
** update used. Replicas that own their models (TPUEmbedding with numerics) each apply theirs. */
static void apply_once(trainer *t, replica *rep, long step, int apply) {
  if (!t->own_models && t->applied_step == step && t->applied_attempt == rec_restarts(t->rec)) return;
  t->step_rate = md_optimizer_learning_rate(&t->in.s->optimizer, md_optimizer_iterations(rep->opt) + 1);
  if (apply) md_optimizer_apply_except(rep->opt, rep->model, rep->grads, emb_own_update(t->emb), NULL);
  t->applied_step = step;
  t->applied_attempt = rec_restarts(t->rec);
}

/* ---- fast-forward ------------------------------------------------------------------------ */

/* Whether a replica is where a collective or its own code could hold state no snapshot shows
** (invariant 4). */
static int any_working(const trainer *t) {
  for (int r = 0; r < t->nreplicas; r++)
    if (t->replicas[r].phase == REP_WORKING) return 1;
  return 0;
}

/* The words of the program's state at a quiet point while replica 0 is at `step`: where each
** replica is, relative to it, and what the input pipeline holds. */
static void program_state(const trainer *t, long step, sim_snapshot *snap) {
  for (int r = 0; r < t->nreplicas; r++) {
    const replica *rep = &t->replicas[r];
    sim_snapshot_word(snap, (uint64_t)(rep->step - step));
    sim_snapshot_word(snap, rep->phase);
    sim_snapshot_word(snap, (uint64_t)rep->pack_at);
  }
  if (t->ovl) ovl_snapshot(t->ovl, snap);
  ds_pipeline_snapshot(t->input, step, snap);
}

/* How many periods may be skipped (invariant 5) when the period ran steps from `lo` on, the
** replicas' furthest step is rep_hi and the input's in_hi: every step a replica ends or begins
** in the skipped time (to rep_hi + k) neither checkpoints nor meets an at_step fault, every step
** the input makes (to in_hi + k) has the period's counts, and neither reaches the run's last step
** (it ends their loops). */
static long steps_to_skip(trainer *t, long lo, long rep_hi, long in_hi) {
  long rec_last = rec_steady_until(t->rec, lo, t->in.steps - 2);
  if (rec_last <= rep_hi) return 0;
  long to = rec_last - rep_hi + in_hi;
  long in_last = inp_plan_same_counts(t->plan, lo, to < t->in.steps - 2 ? to : t->in.steps - 2);
  long k = in_last - in_hi < rec_last - rep_hi ? in_last - in_hi : rec_last - rep_hi;
  return k > 0 ? k : 0;
}

/* Adds k copies of the last row, each a period later: what the k skipped steps record. */
static void replay_rows(trainer *t, long k, sim_time period) {
  step_record last = t->rows.at[t->rows.n - 1];
  for (long i = 1; i <= k; i++) {
    step_record *rec = train_rows_next(&t->rows);
    *rec = last;
    rec->step = last.step + i;
    rec->end_ps = last.end_ps + i * period;
  }
}

/* sim_engine_on_quiet's callback, armed by replica 0 as it starts a step: see the design notes
** ("Fast-forward", invariants 4 to 7). */
static void quiet_point(sim_engine *e, void *arg) {
  trainer *t = arg;
  long step = t->replicas[0].step;
  if (t->snap_step[1] == step || t->input == NULL) return;  /* one per step; none while down */
  if (any_working(t)) {  /* the step's next quiet point may do */
    sim_engine_on_quiet(e, quiet_point, t);
    return;
  }
  sim_snapshot *prev = t->snap[0];
  t->snap[0] = t->snap[1];
  t->snap[1] = prev;
  t->snap_step[0] = t->snap_step[1];
  t->snap_rows[0] = t->snap_rows[1];
  t->snap_step[1] = -1;
  sim_snapshot *a = t->snap[0], *b = t->snap[1];
  sim_snapshot_take(e, b);
  program_state(t, step, b);
  t->snap_step[1] = step;
  t->snap_rows[1] = t->rows.n;
  /* One step apart, one row recorded between, and nothing step-dependent in it. */
  if (t->snap_step[0] != step - 1 || t->snap_rows[0] + 1 != t->rows.n || t->rows.n < 1) return;
  long lo = step, rep_hi = step;
  for (int r = 0; r < t->nreplicas; r++) {
    if (t->replicas[r].step < lo) lo = t->replicas[r].step;
    if (t->replicas[r].step > rep_hi) rep_hi = t->replicas[r].step;
  }
  lo -= 1;  /* in the period a..b each replica ended the step before the one it is at */
  if (lo <= t->first_step) return;
  long in_hi = step + ds_pipeline_ahead(t->input, step);
  long k = steps_to_skip(t, lo, rep_hi, in_hi > rep_hi ? in_hi : rep_hi);
  if (k > 0) k = sim_snapshot_periods(a, b, k);
  if (k <= 0) return;
  sim_time period = sim_snapshot_time(b) - sim_snapshot_time(a);
  sim_engine_skip(e, a, b, k);
  replay_rows(t, k, period);
  for (int r = 0; r < t->nreplicas; r++) {
    replica *rep = &t->replicas[r];
    rep->step += k;
    step_marks *m = &rep->marks;
    /* The clock's marks move; split_comm and sync_comm are durations and stay. */
    sim_time *fields[] = {&m->start, &m->launched, &m->compiled, &m->fed, &m->computed, &m->reduced, &m->updated};
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) *fields[i] += k * period;
  }
  ds_pipeline_skip(t->input, k);
  rec_skip(t->rec, k);
  t->skipped += k;
  t->snap_step[0] = t->snap_step[1] = -1;  /* their absolute times are behind: start again */
}

/* Whether `step` starts a program launch: every launch_every steps from the attempt's first step
** and, under Keras (not tpu_v1's TF1 loop), from each epoch's first, as Keras 3's EpochIterator
** starts a new steps_per_execution chunk at every epoch (keras/src/trainers/epoch_iterator.py). */
static int launch_at(const trainer *t, long step) {
  long from = t->first_step;
  if (t->v1 == NULL && step - step % t->per_epoch > from) from = step - step % t->per_epoch;
  return (step - from) % t->launch_every == 0;
}

/* The step's results to the callbacks, once: by the first replica past its all-reduce, when
** every replica's loss and metric counts of the step are in (the all-reduce joined them). */
static void callbacks_step(trainer *t, const replica *rep, long step) {
  const scenario *s = t->in.s;
  if (t->cb == NULL || t->cb_step == step) return;
  t->cb_step = step;
  double loss = 0.0;
  for (int r = 0; r < t->nreplicas; r++) loss += t->replicas[r].loss_sum[step & 1];
  float metrics[MD_METRIC_KIND_COUNT];
  metric_values(t, step, metrics);
  /* optimizer.learning_rate once this step's update is applied: the rate of the next one. */
  double lr = s->numerics_full ? md_optimizer_learning_rate(&s->optimizer, md_optimizer_iterations(rep->opt) + 2) : NAN;
  cb_batch b = { step, s->numerics_full ? loss : NAN, (int)inp_plan_step_examples(t->plan, step), metrics, lr,
                 launch_at(t, step + 1) || step + 1 == t->in.steps, sim_now(t->engine) };
  cb_batch_end(t->cb, &b);
}

/* EarlyStopping's best weights: replica 0's after `step` (get_weights: the sync-on-read ones the
** replicas' mean, as a checkpoint reads them). */
static void keep_best(trainer *t, long step) {
  const md_model *m = t->replicas[0].model;
  if (t->best == NULL) t->best = md_model_clone(m);
  for (int i = 0; i < md_model_num_vars(m); i++) {
    const md_var *from = md_model_var_const(m, i);
    if (from->data != NULL) memcpy(md_model_var(t->best, i)->data, from->data, from->size * sizeof(float));
  }
  checkpoint_on_read(t, step, t->best);
}

/* fit's end of the epoch `step` ends, before the next epoch's first step, as Keras runs it: the
** evaluation when validation_freq asks for one (validate.h), then on_epoch_end with its val_ logs
** (once, by the first replica past the evaluation's all-reduce, which gave every replica the same
** sums) and the saves it asks for. SIM_OK or the actor's stop. */
static int epoch_end(trainer *t, replica *rep, sim_actor *self, long step) {
  int evaluated = val_due(t->val, t, step);
  if (evaluated && val_evaluate(t->val, t, rep, self, step) != SIM_OK) return SIM_FAILED;
  if (!cb_epoch_due(t->cb, step)) return SIM_OK;
  cb_logs val = { 0 };
  if (evaluated) val_logs(t->val, t, step, &val);
  cb_epoch_end(t->cb, step, &val, step + 1, sim_now(t->engine));
  return rec_epoch_end(t->rec, self, rep->index, step, rep->model, rep->opt, &rep->loss_scale);
}

static void replica_main(sim_actor *self, void *arg) {
  replica *rep = arg;
  trainer *t = rep->t;
  const scenario *s = t->in.s;
  int r = rep->index;
  sim_cpu *cpu = ds_replica_cpu(t->strategy, r);
  char span[48];
  if (t->restore_ps > 0 && sim_sleep(self, t->restore_ps) != SIM_OK) return;
  step_marks *marks = &rep->marks;
  for (rep->step = t->first_step; rep->step < t->in.steps; rep->step++) {
    long step = rep->step;
    if (r == 0) rec_step_begin(t->rec, step);
    *marks = (step_marks){ .start = sim_now(t->engine) };
    rep->phase = REP_LAUNCH;
    if (r == 0 && t->ff) sim_engine_on_quiet(t->engine, quiet_point, t);
    if (launch_at(t, step)) {
      /* A program launch: TF1's loop (the tpu_v1 strategy's own cost model), or a TF2 step's. */
      if (t->v1 ? ds_tpu_v1_launch(t->v1, self, r) != SIM_OK
                : t->round_trip_ps > 0 && sim_sleep(self, t->round_trip_ps) != SIM_OK)
        return;
    }
    step = rep->step;  /* a fast-forward while the replica waited moved it */
    marks->launched = sim_now(t->engine);
    rep->phase = REP_WORKING;
    /* Every attempt compiles its program again (a restarted job is a new process). */
    if (step == t->first_step && t->compile_ps > 0 && sim_sleep(self, t->compile_ps) != SIM_OK) return;
    marks->compiled = sim_now(t->engine);
    rep->phase = REP_INPUT;
    if ((t->symmetric ? ds_pipeline_next_vm : ds_pipeline_next)(t->input, self, r) != SIM_OK) return;
    rep->phase = REP_WORKING;
    step = rep->step;  /* a fast-forward while the replica waited moved it */
    marks->fed = sim_now(t->engine);
    int n;
    const int64_t *rows = inp_plan_rows(t->plan, step, r, &n);
    md_batch b = { n, NULL, NULL, NULL, NULL };
    if (s->numerics_full) {
      md_dataset_gather_rows(t->in.data, rows, n, rep->x, rep->ids, rep->labels, rep->targets);
      b = (md_batch){ n, t->in.data->is_ids ? NULL : rep->x, t->in.data->is_ids ? rep->ids : NULL, rep->labels,
                      rep->targets };
    }
    char owner[32];
    train_dropout_step(s, rep->ws, rep->dropout, base_format(owner, sizeof owner, "replica %d", r), step);
    /* mixed_float16: the loss multiplied by the LossScaleOptimizer's scale (scale_loss). */
    float loss_scale = t->scaled ? rep->loss_scale.scale : 1.0f;
    rep->sync_ps = 0;
    /* The batch's passes, one per micro-batch (accum.h; one without accumulation), their
    ** gradients summed into the all-reduce buffer. Numerics off, a pass computes nothing and the
    ** step's cost is the compiled program's: it is walked only for the simulated time its
    ** cross-replica layers take (a pod's 4096 replicas walking ResNet-50's layers on shapes were a
    ** fifth of the run; issue 31), its loss 0. */
    int micro = accum_steps(s);
    double loss = 0.0;
    for (int k = 0; k < micro; k++) {
      md_batch mb = accum_micro_batch(&b, t->in.data, k, micro);
      double part = 0.0;
      if (s->numerics_full || t->cross_replica)
        md_model_train_step(rep->model, rep->ws, &mb, train_loss_scale(s, n) * loss_scale, rep->grads, &part, NULL);
      if (rep->stopped) return;
      loss += part;
      if (s->numerics_full) update_metrics(t, rep, step, &mb);
      if (rep->flat && k == 0) flatten(rep->grads, rep->model, t->emb, rep->flat);
      else if (rep->flat) accum_add(rep->flat, rep->grads, rep->model);
    }
    rep->loss_sum[step & 1] = loss;
    marks->sync_comm = rep->sync_ps;
    if (rep->on_read[0]) keep_on_read(rep->model, rep->on_read[step & 1]);
    /* TPUEmbedding's lookups reach the replica before its dense pass can start. */
    int n_max = t->emb ? step_max_count(t, step) : 0;
    sim_time looked_up = sim_now(t->engine);
    if (t->emb && emb_forward(t->emb, self, r, n_max) != SIM_OK) return;
    marks->sync_comm += sim_now(t->engine) - looked_up;
    rep->phase = REP_COMPUTE;
    for (int k = 0; k + 1 < micro; k++) {
      rep->program = cg_cache_get(t->programs, accum_count(n, k, micro));
      size_t nsums;
      const cg_kernel *sums = cg_program_accumulate(rep->program, &nsums);
      if ((t->mesh ? mesh_micro_pass(t->mesh, self, r, rep->program, cpu, mesh_kernels, rep)
                   : whole_pass(t, rep, self, cpu)) != SIM_OK ||
          sim_exec(self, cpu, train__kernel_work(t, rep, sums, 0, nsums)) != SIM_OK)
        return;
    }
    rep->program = cg_cache_get(t->programs, accum_count(n, micro - 1, micro));
    sim_time pass_at = sim_now(t->engine);
    if ((t->pipe ? pipe_pass(t->pipe, self, r, cpu)
         : t->mesh ? mesh_pass(t->mesh, self, r, rep->program, 0, cpu, mesh_kernels, rep)
         : t->ovl ? packed_pass(t, rep, self, cpu) : whole_pass(t, rep, self, cpu)) != SIM_OK)
      return;
    if (r == 0 && t->kernel_track >= 0 && !t->pipe && !t->mesh) trace_kernels(t, rep, pass_at);
    rep->phase = REP_WORKING;
    step = rep->step;  /* a fast-forward while the replica computed moved it */
    marks->computed = sim_now(t->engine);
    marks->split_comm = train__split_comm_ps(t, n);
    if (marks->split_comm > 0 && sim_sleep(self, marks->split_comm) != SIM_OK) return;

    if (t->pipe ? pipe_sync(t->pipe, self, r) != SIM_OK
        : t->mesh ? mesh_sync(t->mesh, self, r) != SIM_OK
        : t->ovl ? ovl_wait(t->ovl, self, r) != SIM_OK
                 : ds_all_reduce_sum(t->strategy, self, r, rep->flat, t->emb ? emb_dense_floats(t->emb) : t->nparams) != SIM_OK)
      return;
    if (t->emb && emb_backward(t->emb, self, r, step, n_max, rep->model, &b, rep->grads,
                               md_optimizer_iterations(rep->opt) + 1) != SIM_OK)
      return;
    marks->reduced = sim_now(t->engine);
    callbacks_step(t, rep, step);
    /* Not finite under the scale: LossScaleOptimizer applies nothing this step (numerics off has
    ** no values to check: every step applies). */
    int apply = !(t->scaled && rep->flat) || ls_unscale(&rep->loss_scale, rep->flat, t->nparams);
    if (rep->flat) unflatten(rep->flat, rep->model, t->emb, rep->grads);
    int last = marks->reduced > SIM_TIME_HORIZON;

    size_t napply = 0;
    const cg_kernel *update = cg_program_apply(rep->program, &napply);
    apply_once(t, rep, step, apply);
    marks->learning_rate = t->step_rate;
    rep->phase = REP_APPLY;
    if ((t->pipe ? pipe_apply(t->pipe, self, r, cpu, apply)
         : t->mesh ? mesh_pass(t->mesh, self, r, rep->program, 1, cpu, apply ? mesh_kernels : mesh_skipped, rep)
                 : sim_exec(self, cpu, train__kernel_work(t, rep, update, 0, apply ? napply : 0))) != SIM_OK)
      return;
    rep->phase = REP_WORKING;
    step = rep->step;  /* likewise */
    marks->updated = sim_now(t->engine);
    /* The loop's last step: its output, the loss (a float32), back over the tower's PCIe. */
    if (t->v1 && (launch_at(t, step + 1) || step + 1 == t->in.steps) &&
        ds_tpu_v1_fetch(t->v1, self, r, 4.0) != SIM_OK)
      return;
    sim_time end = sim_now(t->engine);

    if (t->traced) {  /* nothing reads a trace that is neither written nor drawn */
      snprintf(span, sizeof span, "step %ld", step);
      sim_trace_span(t->engine, t->track[r], span, "step", marks->start, end);
    }
    if (r == 0) record_step(t, step, marks, (int)inp_plan_step_examples(t->plan, step));
    if (last) {
      if (r != 0) return;
      t->horizon_hit = 1;
      ds_pipeline_stop(t->input);  /* its producers would wait for requests that never come */
      rec_finished(t->rec);
      return;
    }
    if (rec_step_end(t->rec, self, r, step, rep->model, rep->opt, &rep->loss_scale) != SIM_OK) return;
    char raised[200];
    if (cb_raised(t->cb, step, raised, sizeof raised)) {  /* fit ends in the exception: no epoch end */
      if (r != 0) return;
      rec_fail(t->rec, "RuntimeError", ds_replica_device(t->strategy, 0), raised);
      ds_pipeline_stop(t->input);
      return;
    }
    if (epoch_end(t, rep, self, step) != SIM_OK) return;
    if (r == 0 && cb_keep_best(t->cb, step)) keep_best(t, step);
    if (cb_stop(t->cb, step)) {  /* fit's loop ends: the input's producers would wait for good */
      if (r == 0) ds_pipeline_stop(t->input);
      break;
    }
  }
  /* Modes evaluate and predict: no step; the test (or predict) function, compiled first, over the
  ** dataset (validate.h). */
  if (s->mode != SCN_RUN_FIT &&
      ((t->compile_ps > 0 && sim_sleep(self, t->compile_ps) != SIM_OK) || val_evaluate(t->val, t, rep, self, 0) != SIM_OK))
    return;
  if (r == 0) rec_finished(t->rec);
}

/* ---- attempts (recovery.h's stop and start) --------------------------------------------- */

/* The replicas an attempt runs: replica 0 alone for a symmetric mesh (mesh_symmetric.h). */
static int spawned(const trainer *t) { return t->symmetric ? 1 : t->nreplicas; }

/* Spawns the input pipeline and the replicas of an attempt that starts at `first`. */
static void spawn_attempt(trainer *t, long first, sim_time restore) {
  ds_pipeline_spec input = input_spec(t);
  input.first_step = first;
  input.first_vm_only = t->symmetric;  /* replica 0 alone asks (mesh_symmetric.c, invariant 3) */
  t->first_step = first;
  t->restore_ps = restore;
  t->input = ds_pipeline_new(t->engine, t->strategy, &input, batch_size_of_step, t);
  if (t->mesh) mesh_reset(t->mesh);
  if (t->pipe) pipe_reset(t->pipe);
  char name[48];
  /* A stop asked during set-up is honoured here too: 100,000 workers' stacks take seconds. */
  for (int r = 0; r < spawned(t) && !train_stop_request; r++) {
    t->replicas[r].stopped = 0;
    snprintf(name, sizeof name, "replica%d", r);
    t->actors[r] = sim_actor_spawn(t->engine, name, replica_main, &t->replicas[r]);
  }
}

static void attempt_stop(void *ctx) {
  trainer *t = ctx;
  sim_engine_on_quiet(t->engine, NULL, NULL);
  t->snap_step[0] = t->snap_step[1] = -1;
  for (int r = 0; r < spawned(t); r++) sim_actor_kill(t->actors[r]);
  ds_pipeline_free(t->input);  /* after the replicas, which may wait on its channels */
  t->input = NULL;
}

static void attempt_start(void *ctx, long step, sim_time restore) {
  trainer *t = ctx;
  for (int r = 0; r < t->nreplicas; r++)
    rec_restore(t->rec, t->replicas[r].model, t->replicas[r].opt, &t->replicas[r].loss_scale);
  inp_plan_restore(t->plan, step);
  cb_attempt(t->cb);
  t->cb_step = -1;
  spawn_attempt(t, step, restore);
}

static int callback_saves(void *ctx, long step, int epoch_end, long *resume) {
  const trainer *t = ctx;
  return cb_saves(t->cb, step, epoch_end, resume);
}

static const rec_program ATTEMPTS = { attempt_stop, attempt_start, checkpoint_on_read, NULL };
/* With callbacks: their saves in place of training.checkpoint's (the loader allows one of them). */
static const rec_program CALLBACK_ATTEMPTS = { attempt_stop, attempt_start, checkpoint_on_read, callback_saves };

/* ---- set-up ---------------------------------------------------------------------------- */

/* The ops of the program XLA compiles: one training step (forward, backward, optimizer) traced
** once on shapes alone, as tf.function traces it, with replica 0's slice of a full batch: its
** instructions before fusion (compile/). */
static size_t program_ops(const trainer *t) {
  return cg_graph_num_traced(cg_program_graph(cg_cache_get(t->programs, inp_plan_max_count(t->plan))));
}

/* XLA compiles the step on a TPU, and elsewhere when the scenario jit-compiles it: `time` as
** given, else the model of sim/compile.h on the traced program over the replica's logical
** devices, SPMD or one program per device. */
static sim_time compile_time(const trainer *t) {
  const scenario *s = t->in.s;
  if (!s->jit_compile && t->tpu == NULL) return 0;
  if (s->compile_time_s >= 0) return sim_time_from_s(s->compile_time_s);
  sim_compile_model xla = { s->compile_base_s, s->compile_per_op_s };
  return sim_compile_time(&xla, program_ops(t), t->cores, t->spmd);
}

/* Host costs per one vCPU's second become work at the VM's per-vCPU rate; an example crosses a
** host-to-device link as its float features (or int32 ids) and its int32 label. */
static ds_pipeline_spec input_spec(const trainer *t) {
  const scenario *s = t->in.s;
  const scn_machine *m = &s->worker_machine;
  int width = s->input_ids > 0 ? s->input_ids : s->input_features;
  return (ds_pipeline_spec){ .prefetch = s->prefetch, .per_example_s = s->pipeline_per_example_s,
                          .per_batch_s = s->pipeline_per_batch_s, .vcpu_flops = m->flops / m->cpus,
                          .example_bytes = 4.0 * width + 4.0, .steps = t->in.steps };
}

/* The layer that holds variable v (a layer's variables are consecutive, in layer order). */
static int layer_of_var(const md_model *m, int v) {
  int l = 0;
  for (int first = 0; v >= first + md_model_layer_num_vars(m, l); l++) first += md_model_layer_num_vars(m, l);
  return l;
}

/* strategy.communication.bytes_per_pack above 0, or on a TPU strategy.xla_combine_threshold, on
** two replicas or more: the packs (overlap.h), each completed by the backward of its lowest
** variable's layer. */
static void make_packs(trainer *t) {
  const scenario *s = t->in.s;
  const md_model *m = t->replicas[0].model;
  int nvars = md_model_num_vars(m), xla = s->xla_combine_bytes >= 0;
  double bytes = xla ? s->xla_combine_bytes : s->comm_bytes_per_pack;
  if ((!xla && bytes <= 0) || t->nreplicas < 2 || nvars == 0) return;
  size_t *floats = base_xcalloc((size_t)nvars, sizeof *floats);
  for (int v = 0; v < nvars; v++) floats[v] = md_model_var_const(m, v)->size;
  ovl_pack *packs = base_xcalloc((size_t)nvars, sizeof *packs);
  t->npacks = ovl_group(floats, nvars, bytes, xla ? OVL_XLA_COMBINER : OVL_GROUP_BY_SIZE, packs);
  t->pack_layer = base_xcalloc((size_t)t->npacks, sizeof *t->pack_layer);
  for (int j = 0; j < t->npacks; j++) t->pack_layer[j] = layer_of_var(m, packs[j].first_var);
  float **bufs = base_xcalloc((size_t)t->nreplicas, sizeof *bufs);
  for (int r = 0; r < t->nreplicas; r++) bufs[r] = t->replicas[r].flat;
  t->ovl = ovl_new(t->engine, t->strategy, packs, t->npacks, t->nreplicas, t->in.s->numerics_full ? bufs : NULL,
                   t->nparams, t->traced ? t->track : NULL);
  free(bufs);
  free(packs);
  free(floats);
}

/* The tables' exchange (embed.h): TPUEmbedding, or the IndexedSlices the mirrored strategies
** gather (TPUStrategy's XLA program all-reduces them dense). Only where the step all-reduces one
** flat buffer after the pass: not with packs (make_packs' condition), a mesh, micro-batches, a
** loss scale, split variables or several slices, whose paths move every variable dense (an
** upper bound); the loader refuses TPUEmbedding there. */
void train__make_embed(trainer *t, const md_model *m, int max_slice) {
  const scenario *s = t->in.s;
  int packs = s->xla_combine_bytes >= 0 || s->comm_bytes_per_pack > 0;
  if (packs || mesh_active(s, t->nreplicas) || accum_steps(s) > 1 || t->scaled || t->split_devices > 1 ||
      s->tpu_slices > 1)
    return;
  emb_mode mode = s->tpu_embedding ? EMB_TPU : s->strategy == SCN_STRATEGY_MIRRORED ? EMB_GATHER_BROADCAST
                                                                                      : EMB_ALL_GATHER;
  if (mode == EMB_ALL_GATHER && s->strategy != SCN_STRATEGY_MULTI_WORKER_MIRRORED) return;
  t->emb = emb_new(t->strategy, m, s->tpu_embedding ? &s->tpu_embedding_optimizer : &s->optimizer, mode,
                   s->numerics_full, t->nreplicas, max_slice, s->tpu_embedding ? s->tpu_embedding_tables : 0);
}

/* strategy.distribution's recipe other than data parallelism runs the mesh's collectives, a
** pipeline axis the pipeline's stages. */
static void make_mesh(trainer *t) {
  int pipe = pipe_active(t->in.s);
  if (!pipe && !mesh_active(t->in.s, t->nreplicas)) return;
  float **bufs = base_xcalloc((size_t)t->nreplicas, sizeof *bufs);
  for (int r = 0; r < t->nreplicas; r++) bufs[r] = t->replicas[r].flat;
  float *const *values = t->in.s->numerics_full ? bufs : NULL;
  if (pipe)
    t->pipe = pipe_new(t->engine, t->strategy, t->in.s, t->nreplicas, t->programs, inp_plan_max_count(t->plan),
                       values, t->nparams, t->traced ? t->track : NULL);
  else
    t->mesh = mesh_new_axes(t->engine, t->strategy, t->nreplicas, scenario_fsdp_axis(t->in.s),
                            scenario_model_axis(t->in.s), values, t->nparams, t->traced ? t->track : NULL);
  free(bufs);
}

static void make_replicas(trainer *t, md_model *first) {
  const scenario *s = t->in.s;
  int max_slice = inp_plan_max_count(t->plan);
  int width = t->in.data->width;
  t->replicas = base_xcalloc((size_t)t->nreplicas, sizeof *t->replicas);
  t->track = base_xcalloc((size_t)t->nreplicas, sizeof *t->track);
  t->nparams = md_model_num_params(first);
  t->cross_replica = md_model_cross_replica(first);
  train__split_plan(t, first);
  for (int i = 0; i < md_model_num_vars(first); i++)
    if (!md_model_var_const(first, i)->trainable) t->on_read_floats += md_model_var_const(first, i)->size;
  int sparse = s->loss == MD_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
  for (int k = 0; k < s->nmetrics; k++) {
    t->metric_kinds[k] = md_metric_resolve(s->metrics[k], md_model_num_classes(first), sparse);
    t->metric_floats += md_metric_state_size(t->metric_kinds[k]);
  }
  t->own_models = s->numerics_full && s->tpu_embedding;
  for (int r = 0; r < t->nreplicas; r++) {
    replica *rep = &t->replicas[r];
    rep->t = t;
    rep->index = r;
    /* Numerics off: a model is shapes alone, which no step writes (md_model_train_step and the
    ** optimizer change values only), so the replicas share replica 0's: a pod's 4096 copies of
    ** ResNet-50's layers were 1.26 GB of its 1.56 GB (issue 31). Its optimizer and gradients too
    ** (their shapes, 112 MB more). */
    int shared = r > 0 && !s->numerics_full;
    /* Numerics on, the trainable variables are mirrored: every replica applies the same reduced
    ** gradients with the same optimizer state to the same values, so one storage and one optimizer
    ** serve them all, updated once a step (apply_once); a replica owns its non-trainable ones
    ** (ON_READ), its gradients, activations and input. A 4096-replica model was 4096 copies.
    ** TPUEmbedding's tables are not: each chip's owner rows are updated apart (embed.c), so those
    ** runs keep a model a replica. */
    rep->model = r == 0 || shared ? first : t->own_models ? md_model_clone(first) : md_model_clone_mirrored(first);
    rep->opt = r > 0 && !t->own_models ? t->replicas[0].opt : md_optimizer_new(&s->optimizer, rep->model);
    rep->ws = md_workspace_new(rep->model);
    rep->dropout = train_dropout_rng(s, rep->ws);
    if (t->nreplicas > 1) md_workspace_set_all_reduce(rep->ws, replica_all_reduce, rep);
    ls_init(&rep->loss_scale);
    rep->grads = shared ? t->replicas[0].grads : md_grads_new(rep->model);  /* shapes: nothing to own */
    for (int k = 0; k < 2 && s->numerics_full && t->on_read_floats > 0; k++)
      rep->on_read[k] = base_xcalloc(t->on_read_floats, sizeof *rep->on_read[k]);
    t->track[r] = sim_trace_track(t->engine, ds_replica_device(t->strategy, r));
    char host[SCN_PATH_MAX];  /* the replica's steps sit in its host's process, by its cpu */
    sim_trace_track_group(t->engine, t->track[r], sim_trace_default_group(
        sim_cpu_name(ds_replica_cpu(t->strategy, r)), host, sizeof host));
    if (r == 0 && t->traced && s->outputs_ops) {
      char name[SCN_PATH_MAX + 16];
      snprintf(name, sizeof name, "%s kernels", ds_replica_device(t->strategy, 0));
      t->kernel_track = sim_trace_track(t->engine, name);
      sim_trace_track_group(t->engine, t->kernel_track, host);
    }
    if (!s->numerics_full) continue;  /* shapes only: no buffers; the all-reduce only takes time */
    rep->flat = base_xcalloc(t->nparams ? t->nparams : 1, sizeof *rep->flat);
    rep->x = base_xcalloc((size_t)max_slice * (size_t)width, sizeof *rep->x);
    rep->ids = base_xcalloc((size_t)max_slice * (size_t)width, sizeof *rep->ids);
    rep->labels = base_xcalloc((size_t)max_slice * md_dataset_labels_per_row(t->in.data), sizeof *rep->labels);
    rep->targets = base_xcalloc((size_t)max_slice * (size_t)t->in.data->targets_width + 1, sizeof *rep->targets);
    rep->metric_state = base_xcalloc(t->metric_floats + 1, sizeof *rep->metric_state);
    for (int k = 0; k < 2; k++) rep->metric_kept[k] = base_xcalloc(t->metric_floats + 1, sizeof *rep->metric_kept[k]);
  }
}

void train__free(trainer *t) {
  for (int r = 0; t->replicas && r < t->nreplicas; r++) {
    replica *rep = &t->replicas[r];
    if (r == 0 || rep->model != t->replicas[0].model) md_model_free(rep->model);  /* else replica 0's (numerics off) */
    if (r == 0 || rep->opt != t->replicas[0].opt) md_optimizer_free(rep->opt);  /* else replica 0's */
    md_workspace_free(rep->ws);
    if (rep->dropout) gsl_rng_free(rep->dropout);
    if (r == 0 || rep->grads != t->replicas[0].grads) md_grads_free(rep->grads);
    free(rep->flat);
    free(rep->on_read[0]);
    free(rep->on_read[1]);
    free(rep->x);
    free(rep->ids);
    free(rep->labels);
    free(rep->targets);
    free(rep->metric_state);
    free(rep->metric_kept[0]);
    free(rep->metric_kept[1]);
  }
  free(t->replicas);
  cg_cache_free(t->programs);
  ovl_free(t->ovl);
  emb_free(t->emb);  /* its waiters are the replica actors, gone with the engine's run */
  mesh_free(t->mesh);
  pipe_free(t->pipe);
  pipe_layout_free(&t->pipe_layout);
  free(t->pack_layer);
  free(t->track);
  sim_snapshot_free(t->snap[0]);
  sim_snapshot_free(t->snap[1]);
  inp_plan_free(t->plan);
  val_free(t->val);
  train_rows_free(&t->rows);
  free(t->actors);
  cb_free(t->cb);
  if (t->best) md_model_free(t->best);
  ds_pipeline_free(t->input);  /* kills its actors: before the strategy and engine they use */
  rec_free(t->rec);            /* its plan's events and faulted resources: before the engine */
  faults_free(t->faults);
  if (t->tpu) slice_run_free(t->tpu);  /* the strategy is the slice run's */
  else ds_strategy_free(t->strategy);
  if (t->engine) sim_engine_free(t->engine);
  if (t->in.data) md_dataset_free(t->in.data);
  free(t->in.file_rows);
}

static void past_horizon(const trainer *t, run_summary *sum) {
  char msg[256];
  snprintf(msg, sizeof msg, "stopped after step %ld: simulated time passed podsim's horizon of "
           "2^62 ps (53.4 days)", t->rows.n - 1);
  train_job_failed(sum, "SimulationHorizonExceeded", ds_replica_device(t->strategy, 0), msg);
}

/* Actors still blocked with no event left: an activity that would end past the horizon (so it
** was never scheduled), or a podsim bug. Either way the run is reported, not aborted. */
static void stalled(const trainer *t, run_summary *sum) {
  const char *names[8];
  size_t n = sim_deadlocked_actors(t->engine, names, 8); /* all of them: names holds the first 8 */
  char msg[512];
  int at = snprintf(msg, sizeof msg, "the simulation stalled after step %ld with", t->rows.n - 1);
  for (size_t i = 0; i < n && i < 8 && at > 0 && (size_t)at < sizeof msg; i++)
    at += snprintf(msg + at, sizeof msg - (size_t)at, " %s", names[i]);
  if (n > 8 && at > 0 && (size_t)at < sizeof msg)
    at += snprintf(msg + at, sizeof msg - (size_t)at, " and %zu more", n - 8);
  if (at > 0 && (size_t)at < sizeof msg)
    snprintf(msg + at, sizeof msg - (size_t)at, " blocked: %s", t->faults != NULL
             ? "a link_down or a straggler without duration stopped them for good (TF's collectives have "
               "no timeout by default: the job would hang), or an activity would end past the horizon"
             : "an activity would end past the 53.4-day horizon (a machine or link far too slow), or podsim has a bug");
  train_job_failed(sum, "SimulationStalled", ds_replica_device(t->strategy, 0), msg);
}

/* ---- outputs --------------------------------------------------------------------------- */

/* The logical core that holds variable v of the model: its layer's logical_device (a layer's
** variables are consecutive, in layer order). */
static int core_of_var(const trainer *t, int v) {
  return t->in.s->logical_device[layer_of_var(t->replicas[0].model, v)];
}

/* What every replica's copies share: the variables and slots are replica 0's by name and shape
** (every replica builds the same model), each variable's core, and copies of each variable. */
typedef struct var_layout {
  int nvars, nslots;      /* the model's variables, the optimizer's slots */
  int copies;             /* of a variable: replicas, times the cores with SPMD */
  const char *kind;       /* "mirrored", or "variable" for one copy */
  int *core;              /* each variable's logical core */
  char (*shape)[96];      /* each variable's shape, then each slot's */
} var_layout;

static void layout_of(const trainer *t, var_layout *l) {
  const replica *r0 = &t->replicas[0];
  l->nvars = md_model_num_vars(r0->model);
  l->nslots = md_optimizer_num_slots(r0->opt);
  l->copies = t->nreplicas * (t->spmd ? t->cores : 1);
  l->kind = l->copies > 1 ? "mirrored" : "variable";
  l->core = base_xcalloc((size_t)l->nvars + 1, sizeof *l->core);
  l->shape = base_xcalloc((size_t)(l->nvars + l->nslots) + 1, sizeof *l->shape);
  for (int i = 0; i < l->nvars; i++) {
    l->core[i] = core_of_var(t, i);
    md_var_shape_str(md_model_var_const(r0->model, i), l->shape[i], sizeof l->shape[i]);
  }
  for (int i = 0; i < l->nslots; i++)
    md_var_shape_str(md_optimizer_slot(r0->opt, i), l->shape[l->nvars + i], sizeof l->shape[0]);
}

static void layout_free(var_layout *l) {
  free(l->core);
  free(l->shape);
}

/* A row per copy: one per replica, on the logical core of its layer; with SPMD one per logical
** core of every replica (TPUStrategy copies each variable onto all of them). Optimizer slots are
** listed on each replica's first core. */
static void each_copy(const void *prog, train_copy_fn fn, void *sink) {
  const trainer *t = prog;
  const replica *r0 = &t->replicas[0];
  var_layout l;
  layout_of(t, &l);
  for (int r = 0; r < t->nreplicas; r++) {
    for (int i = 0; i < l.nvars; i++)
      for (int c = 0; c < (t->spmd ? t->cores : 1); c++)
        fn(sink, md_model_var_const(r0->model, i)->name, l.kind, l.shape[i],
           ds_replica_core_device(t->strategy, r, t->spmd ? c : l.core[i]));
    for (int i = 0; i < l.nslots; i++)
      fn(sink, md_optimizer_slot(r0->opt, i)->name, "slot", l.shape[l.nvars + i], ds_replica_device(t->strategy, r));
  }
  layout_free(&l);
}

/* The devices of a variable on core `core` of every replica (t->cores: on every core, SPMD), as
** outputs_device_set writes them. */
static char *devices_on_core(const trainer *t, int core) {
  int per = core == t->cores ? t->cores : 1;
  const char **dev = base_xcalloc((size_t)t->nreplicas * (size_t)per, sizeof *dev);
  for (int r = 0; r < t->nreplicas; r++)
    for (int c = 0; c < per; c++) dev[r * per + c] = ds_replica_core_device(t->strategy, r, per > 1 ? c : core);
  char *set = outputs_device_set(dev, (size_t)t->nreplicas * (size_t)per);
  free(dev);
  return set;
}

/* A row per variable, then per slot, with the devices of its copies: as each_copy's rows of
** replica 0, with every replica's devices. The sets are made once per core: a pod's 4096
** replicas make each one long to work out. */
static void each_variable(const void *prog, train_variable_fn fn, void *sink) {
  const trainer *t = prog;
  const replica *r0 = &t->replicas[0];
  var_layout l;
  layout_of(t, &l);
  char **set = base_xcalloc((size_t)t->cores + 1, sizeof *set);  /* by core; [cores]: SPMD's all */
  for (int i = 0; i < l.nvars + l.nslots; i++) {
    int slot = i >= l.nvars, at = slot ? 0 : t->spmd ? t->cores : l.core[i];
    if (set[at] == NULL) set[at] = devices_on_core(t, at);
    const md_var *v = slot ? md_optimizer_slot(r0->opt, i - l.nvars) : md_model_var_const(r0->model, i);
    fn(sink, v->name, slot ? "slot" : l.kind, l.shape[i], set[at], slot ? t->nreplicas : l.copies);
  }
  for (int c = 0; c <= t->cores; c++) free(set[c]);
  free(set);
  layout_free(&l);
}

/* Trainable variables are mirrored: every replica applied the same reduced gradients. The
** non-trainable ones (batch_normalization's moving statistics) are each replica's own, as Keras
** makes them (synchronization ON_READ, aggregation MEAN). */
static void mirrored_copies_agree(const trainer *t) {
  const md_model *first = t->replicas[0].model;
  for (int r = 1; r < t->nreplicas; r++)
    for (int i = 0; i < md_model_num_vars(first); i++) {
      const md_var *a = md_model_var_const(first, i), *b = md_model_var_const(t->replicas[r].model, i);
      (void)a, (void)b;
      assert(!a->trainable || memcmp(a->data, b->data, a->size * sizeof(float)) == 0);
    }
}

/* dst's `size` floats become a sync-on-read value's MEAN over the replicas (float32 sum in replica
** order, then / replicas, as the strategy's reduce does), which Keras's get_weights and a
** checkpoint's save read: replica r's part at from(t, r, arg). */
static void replica_mean(const trainer *t, float *dst, size_t size,
                         const float *(*from)(const trainer *t, int r, const void *arg), const void *arg) {
  memcpy(dst, from(t, 0, arg), size * sizeof *dst);
  for (int r = 1; r < t->nreplicas; r++) {
    const float *other = from(t, r, arg);
    for (size_t k = 0; k < size; k++) dst[k] += other[k];
  }
  for (size_t k = 0; k < size; k++) dst[k] /= (float)t->nreplicas;
}

static const float *var_of_replica(const trainer *t, int r, const void *var) {
  return md_model_var_const(t->replicas[r].model, *(const int *)var)->data;
}

/* A checkpoint of `step` (recovery.h's read_on_read): each non-trainable variable the mean of
** what the replicas kept after that step's forward (invariant 2). */
typedef struct on_read_at { int parity; size_t at; } on_read_at;

static const float *on_read_of_replica(const trainer *t, int r, const void *arg) {
  const on_read_at *a = arg;
  return t->replicas[r].on_read[a->parity] + a->at;
}

static void checkpoint_on_read(void *ctx, long step, md_model *snapshot) {
  const trainer *t = ctx;
  if (t->replicas[0].on_read[0] == NULL) return;
  on_read_at a = { (int)(step & 1), 0 };
  for (int i = 0; i < md_model_num_vars(snapshot); i++) {
    md_var *v = md_model_var(snapshot, i);
    if (v->trainable) continue;
    replica_mean(t, v->data, v->size, on_read_of_replica, &a);
    a.at += v->size;
  }
}

/* The weights as the program reads them after training: a mirrored variable's value, and a
** sync-on-read one's MEAN over the replicas, which Keras's get_weights and save give. */
static int final_weights(const void *prog, const char *path) {
  const trainer *t = prog;
  if (cb_restores_best(t->cb)) return train_write_weights(t->best, path);  /* on_train_end's set_weights */
  md_model *view = md_model_clone(t->replicas[0].model);
  for (int i = 0; i < md_model_num_vars(view) && t->in.s->numerics_full; i++) {
    md_var *v = md_model_var(view, i);
    if (!v->trainable) replica_mean(t, v->data, v->size, var_of_replica, &i);
  }
  int rc = train_write_weights(view, path);
  md_model_free(view);
  return rc;
}

/* outputs.ops: the compiled step of a full batch (replica 0's), as ops.csv with each op's time on
** replica 0's device and as HLO-like text. Derived from the scenario alone, like the charts they
** are not part of run_hash. */
static int write_ops(trainer *t, const char *dir, scn_error *err) {
  const cg_graph *g = cg_program_graph(cg_cache_get(t->programs, inp_plan_max_count(t->plan)));
  const char *names[] = { "ops.csv", "step.hlo.txt" };
  char path[SCN_PATH_MAX + 32];
  for (int i = 0; i < 2; i++) {
    outputs_path(path, sizeof path, dir, names[i]);
    FILE *f = fopen(path, "w");
    int bad = f == NULL;
    if (!bad) bad = i == 0 ? cg_dump_csv(g, ds_replica_roofline(t->strategy, 0), t->spmd ? 1.0 / t->cores : 1.0, f)
                           : cg_dump_text(g, f);
    if (f != NULL && fclose(f) != 0) bad = 1;
    if (bad) return train_error(err, dir, 0, 0, "outputs.ops", "cannot write %s: %s", path, strerror(errno));
  }
  return TR_EXIT_OK;
}

/* history.csv and predictions.csv (validate.h). */
static int write_history(const void *prog, const char *path) {
  const trainer *t = prog;
  return val_write_history(t->val, t, path);
}

static int write_predictions(const void *prog, const char *path) {
  return val_write_predictions(((const trainer *)prog)->val, path);
}

static int write_outputs(trainer *t, const char *dir, run_summary *sum, scn_error *err) {
  size_t nevents = 0;
  const report_fault *events = t->rec ? rec_events(t->rec, sim_now(t->engine), &nevents) : NULL;
  int saves = t->in.s->cb.checkpoint;  /* checkpoints.csv: ModelCheckpoint's saves */
  char figures[1024];
  val_summarise(t->val, t, sum, figures, sizeof figures);
  /* history.csv: in run_hash with validation, whose val_ columns only it holds; without, its
  ** columns are metrics.csv's, and it stays outside (the hashes of runs before it unchanged). Mode
  ** predict: predictions.csv in its place; evaluate: neither (its figures are hashed). */
  int predict = t->in.s->mode == SCN_RUN_PREDICT, history = t->val && t->in.s->mode == SCN_RUN_FIT;
  train_outputs o = { t->engine, t->rows.at, t->rows.n, 1, 0, final_weights, each_copy, each_variable, t, figures,
                      events, nevents, saves ? "checkpoints.csv" : NULL, saves ? cb_write_checkpoints : NULL,
                      t->cb, predict ? "predictions.csv" : history ? "history.csv" : NULL,
                      predict ? write_predictions : write_history, t, NULL, NULL, 0 };
  double val_x[1024], val_y[1024];  /* the chart's val_loss points: at most its first 1024 epochs' */
  o.nval = val_points(t->val, t, val_x, val_y, 1024);
  o.val_x = val_x;
  o.val_y = val_y;
  int rc = train_write_outputs(t->in.s, &o, dir, sum, err);
  char msg[512];
  if (rc == TR_EXIT_OK && cb_write_tensorboard(t->cb, dir, msg, sizeof msg) != 0)
    return train_error(err, dir, 0, 0, "training.callbacks", "%s", msg);
  if (rc == TR_EXIT_OK && t->val == NULL && t->in.s->epochs > 0) {
    char path[SCN_PATH_MAX + 32];
    outputs_path(path, sizeof path, dir, "history.csv");
    if (write_history(t, path) != 0)
      return train_error(err, dir, 0, 0, "outputs.dir", "cannot write %s: %s", path, strerror(errno));
  }
  return rc == TR_EXIT_OK && t->in.s->outputs_ops ? write_ops(t, dir, err) : rc;
}

static ds_kind strategy_kind(const scenario *s) {
  switch (s->strategy) {
    case SCN_STRATEGY_MULTI_WORKER_MIRRORED: return DS_MULTI_WORKER_MIRRORED;
    case SCN_STRATEGY_ONE_DEVICE: return DS_ONE_DEVICE;
    case SCN_STRATEGY_MIRRORED: return DS_MIRRORED;
    default: return DS_DEFAULT;  /* the TPU kinds are slice_run's; parameter_server is issue 5 */
  }
}

/* The scenario's strategy: on its TPU slice, over the first worker's listed devices, or over
** the cluster's workers. */
void train__build_strategy(trainer *t) {
  const scenario *s = t->in.s;
  ds_cluster cluster = train_cluster(s);
  t->launch_every = s->steps_per_execution;  /* Keras's multi-step tf.function (tpu_v1: its steps_per_run) */
  t->scaled = s->dtype_policy == MD_POLICY_MIXED_FLOAT16;
  if (s->tpu_type[0] != '\0') {
    t->tpu = slice_run_new(s, t->engine, train_algorithm(s->all_reduce, 1));
    t->strategy = slice_run_strategy(t->tpu);
    t->v1 = slice_run_tpu_v1(t->tpu);
    if (t->v1) t->launch_every = ds_tpu_v1_steps_per_run(t->v1);
    else t->round_trip_ps = sim_time_from_s(s->host_round_trip_s);
  } else if (s->ndevices > 0) {
    const char *devices[SCN_MAX_DEVICES];
    for (int i = 0; i < s->ndevices; i++) devices[i] = s->devices[i];
    t->strategy = ds_mirrored_new(t->engine, &cluster, devices, s->ndevices,
                                  train_workers_algorithm(s, s->all_reduce), NULL);
    assert(t->strategy != NULL);  /* the loader checked the devices against the machine */
  } else {
    t->strategy = ds_strategy_new(t->engine, strategy_kind(s), &cluster, train_workers_algorithm(s, s->all_reduce));
  }
  t->cores = ds_cores_per_replica(t->strategy);
  t->spmd = s->spmd && t->cores > 1;
}

static void summarise(trainer *t, run_summary *sum) {
  const scenario *s = t->in.s;
  snprintf(sum->scenario, sizeof sum->scenario, "%s", s->name);
  sum->seed = s->seed;
  sum->numerics = s->numerics_full ? "full" : "off";
  sum->strategy = scenario_strategy_name(s->strategy);
  sum->replicas = t->nreplicas;
  sum->all_reduce = t->nreplicas > 1 ? sim_algo_name(ds_all_reduce_algorithm(t->strategy)) : "none";
  sum->slices = s->tpu_slices;
  sum->all_reduce_packs = t->ovl ? t->npacks : 0;
  train_compute_model(&s->worker_machine, sum->compute_model, sizeof sum->compute_model);
  sum->sharding = scenario_sharding_recipe(s);
  if (t->pipe) {
    sum->pipeline_stages = scenario_pipeline_stages(s);
    sum->pipeline_microbatches = scenario_pipeline_microbatches(s);
    sum->pipeline_schedule = scenario_pipeline_schedule(s);
    sum->pipeline_bubble_fraction = pipe_bubble_fraction(t->pipe);
    sum->pipeline_p2p_bytes = pipe_p2p_bytes_per_step(t->pipe);
  }
  if (s->dist && s->mesh_axes == 0) base_format(sum->mesh, sizeof sum->mesh, "batch=%d", t->nreplicas);
  for (int a = 0; s->dist && a < s->mesh_axes; a++)
    base_format(sum->mesh + strlen(sum->mesh), sizeof sum->mesh - strlen(sum->mesh), "%s%s=%d", a ? "," : "",
                s->mesh_names[a], s->mesh_shape[a]);
  sum->sim_time_s = sim_time_to_s(sim_now(t->engine));
  sum->final_loss = t->rows.n > 0 ? t->rows.at[t->rows.n - 1].loss : 0.0;
  sum->compile_s = sim_time_to_s(t->compile_ps);
  /* Steps redone after a restart count once: the rows a later row did not roll back. */
  unsigned char *kept = base_xcalloc((size_t)t->rows.n + 1, 1);
  rec_kept_rows(t->rows.at, t->rows.n, kept);
  double examples = 0;
  run_step_means *m = &sum->means;
  sum->steps_completed = 0;
  for (long i = 0; i < t->rows.n; i++) {
    if (!kept[i]) continue;
    examples += t->rows.at[i].examples;
    sum->steps_completed++;
  }
  double stepped = 0, stepping_s = 0;  /* every row's examples and time without compile */
  for (long i = 0; i < t->rows.n; i++) {  /* every row, redone steps too: time as it was spent */
    const step_record *r = &t->rows.at[i];
    stepped += r->examples;
    stepping_s += sim_time_to_s(r->step_ps - r->compile_ps);
    m->step_s += sim_time_to_s(r->step_ps - r->compile_ps) / (double)t->rows.n;
    m->input_s += sim_time_to_s(r->input_ps) / (double)t->rows.n;
    m->compute_s += sim_time_to_s(r->compute_ps) / (double)t->rows.n;
    m->comm_s += sim_time_to_s(r->comm_ps) / (double)t->rows.n;
    m->idle_s += sim_time_to_s(r->idle_ps) / (double)t->rows.n;
    m->host_s += sim_time_to_s(r->host_ps) / (double)t->rows.n;
    m->comm_hidden_s += sim_time_to_s(r->hidden_ps) / (double)t->rows.n;
  }
  free(kept);
  if (t->rec) rec_summarise(t->rec, t->rows.at, t->rows.n, sim_now(t->engine), sum);
  sum->examples_per_s = sum->sim_time_s > 0 ? examples / sum->sim_time_s : 0.0;
  sum->steady_examples_per_s = stepping_s > 0 ? stepped / stepping_s : 0.0;
  mfu_summarise(s, t->replicas[0].model, sum);
  sum->devices = base_xcalloc((size_t)t->nreplicas, sizeof *sum->devices);
  sum->ndevices = t->nreplicas;
  for (int r = 0; r < t->nreplicas; r++) {
    sim_mempool *pool = ds_replica_memory(t->strategy, r);
    run_device *d = &sum->devices[r];
    snprintf(d->name, sizeof d->name, "%s", ds_replica_device(t->strategy, r));
    d->peak_bytes = sim_mempool_peak(pool);
    d->capacity_bytes = sim_mempool_capacity(pool);
    if (d->peak_bytes < sum->memory_peak_bytes) continue;
    sum->memory_peak_bytes = d->peak_bytes;
    sum->memory_capacity_bytes = d->capacity_bytes;
  }
  sum->events = sim_events_processed(t->engine);
  sum->fast_forwarded = t->skipped;
  sum->simulated_replicas = t->symmetric ? spawned(t) : 0;
  sum->stopped_by = cb_stopped_by(t->cb, &sum->stopped_epoch);
  sum->restored_best = cb_restores_best(t->cb);
  sum->best_epoch = cb_best_epoch(t->cb);
}

/* Reads and checks every input (invariant 3); on success *first is the initialised model. */
static int prepare(trainer *t, md_model **first, scn_error *err) {
  int rc = train_build_model(t->in.s, first, err);
  if (rc == TR_EXIT_OK) rc = train_load_data(&t->in, *first, err);
  if (rc == TR_EXIT_OK) rc = val_load(&t->in, *first, &t->val, err);
  if (rc == TR_EXIT_OK) rc = train_count_steps(&t->in, err);
  if (rc == TR_EXIT_OK) rc = faults_load(t->in.s, &t->faults, err);
  return rc;
}

int train_check(const scenario *s, scn_error *err) {
  trainer t = { .in.s = s };
  md_model *first = NULL;
  int rc = prepare(&t, &first, err);
  if (rc == TR_EXIT_OK && s->dist) {  /* the mesh against the strategy's replicas, as a run checks it */
    train_memory *probe = train_memory_new(s, err);
    rc = probe ? mesh_check(s, train_memory_replicas(probe), first, err) : TR_EXIT_INPUT;
    train_memory_free(probe);
  }
  if (first) md_model_free(first);
  train__free(&t);
  return rc;
}

int train_run(const scenario *s, const char *out_dir, run_summary *sum, scn_error *err) {
  return train_run_cli(s, out_dir, REPORT_PROGRESS_QUIET, sum, err);
}

int train_run_cli(const scenario *s, const char *out_dir, int progress, run_summary *sum, scn_error *err) {
  if (s->strategy == SCN_STRATEGY_PARAMETER_SERVER) return ps_train_run(s, out_dir, progress, sum, err);
  double w0 = train_wall_s();
  trainer t = { .in.s = s };
  md_model *first = NULL;
  int rc = prepare(&t, &first, err);
  if (rc != TR_EXIT_OK) {
    if (first) md_model_free(first);
    train__free(&t);
    return rc;
  }
  t.traced = s->trace || report_needs_trace(s->plots);
  t.kernel_track = -1;  /* the replicas' setup makes it with outputs.ops */
  t.engine = train_engine_new(t.traced);
  train__build_strategy(&t);
  t.nreplicas = ds_num_replicas_in_sync(t.strategy);
  if (mesh_check(s, t.nreplicas, first, err) != TR_EXIT_OK) {
    md_model_free(first);
    train__free(&t);
    return TR_EXIT_INPUT;
  }
  t.plan = inp_plan_new(&t.in, t.strategy, s->numerics_full, err);
  if (t.plan == NULL) {
    md_model_free(first);
    train__free(&t);
    return TR_EXIT_INPUT;
  }
  if (s->mode != SCN_RUN_FIT) t.in.steps = 0;  /* the plan sized the programs and memory; no step runs */
  train_rows_init(&t.rows, t.in.steps, 0);
  t.per_epoch = s->epochs > 0 ? t.in.steps / s->epochs : t.in.steps;
  t.cb = cb_new(s, t.in.steps, t.per_epoch);
  t.cb_step = -1;
  make_replicas(&t, first);
  make_packs(&t);
  train__make_embed(&t, first, inp_plan_max_count(t.plan));  /* before the step's program: its tables'
                                                               ** gradients are slices with emb_ */
  t.programs = train__programs_new(&t);
  if (t.val && val_plan(t.val, &t, err) != TR_EXIT_OK) {
    train__free(&t);
    return TR_EXIT_INPUT;
  }
  make_mesh(&t);  /* after the program: a pipeline's stages are split by its kernels' costs */
  t.actors = base_xcalloc((size_t)t.nreplicas, sizeof *t.actors);

  memset(sum, 0, sizeof *sum);
  if (train__reserve_memory(&t, inp_plan_max_count(t.plan), sum) == 0) {
    t.compile_ps = compile_time(&t);
    t.rec = rec_new(s, t.engine, first, t.replicas[0].opt, t.faults, t.strategy,
                    t.tpu ? slice_run_slice(t.tpu) : NULL, t.cb ? &CALLBACK_ATTEMPTS : &ATTEMPTS, &t);
    rec_add_checkpoint_bytes(t.rec, (double)inp_plan_checkpoint_examples(t.plan) * input_spec(&t).example_bytes);
    /* Fast-forward needs steps that repeat: no values (numerics off), no loop of several
    ** steps (tpu_v1), and no callbacks (their counters and epochs make steps differ). */
    t.ff = s->fast_forward && !s->numerics_full && t.v1 == NULL && t.launch_every == 1 && t.mesh == NULL &&
           t.pipe == NULL && accum_steps(s) == 1 && t.cb == NULL && t.val == NULL;
    t.snap[0] = sim_snapshot_new();
    t.snap[1] = sim_snapshot_new();
    t.snap_step[0] = t.snap_step[1] = -1;
    t.applied_step = -1;
    msym_admit(&t);
    spawn_attempt(&t, 0, 0);
    report_progress_start(&t.rows.progress, stderr, progress, t.in.steps, t.engine);
    train_engine_progress(t.engine, &t.rows.progress);
    int ran = train_stop_request ? 1 : sim_run(t.engine);  /* asked while it was set up: stop */
    report_progress_end(&t.rows.progress);
    if (ran == 1) {  /* stopped on request: the steps so far say where, nothing is written */
      sum->steps_completed = t.rows.n;
      train__free(&t);
      return TR_STOPPED;
    }
    int stuck = ran != 0;
    if (rec_failed(t.rec, &sum->error)) sum->failed = 1;
    else if (stuck) stalled(&t, sum);
    else if (t.horizon_hit) past_horizon(&t, sum);
    else if (s->numerics_full) mirrored_copies_agree(&t);
  }
  summarise(&t, sum);
  rc = write_outputs(&t, out_dir, sum, err);
  rc = train_finish(s, out_dir, w0, rc, sum, err);
  train__free(&t);
  return rc;
}
