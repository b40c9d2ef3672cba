/*
** pipeline.c: pipeline parallelism at run time (pipeline.h).
**
** A channel carries one direction of one cut of one pipeline: the activations model stage s
** (on device s % P) sends to s + 1 (on the next device, device 0 after P - 1 when interleaved), or
** the gradients s + 1 sends back to s. It is a sub-group of the strategy's collective group of
** the two replicas, the sender its rank 0, and each send a broadcast from it by the tree (one
** transfer of the whole buffer over the route between them: what NCCL's send/recv and XLA's
** collective-permute move). Sends start from the engine in the order issued, one at a time; the
** receiver's k-th receive waits for the channel's k-th delivery. The schedules run each model
** stage's microbatches in one order on both ends of a cut (forwards 0..m-1; backwards m-1..0
** under GPipe, 0..m-1 otherwise), so the k-th delivered is the k-th awaited.
**
** A stage line is a stage's data-parallel group (replicas s, s + P, ...): its all-reduce starts
** when every member has issued it, as mesh.c's lines do.
**
** Invariants:
**   1. Every transfer and all-reduce is counted in the attempt that started it: one a restarted
**      job's earlier attempt started ends uncounted (pipe_reset).
**   2. Passes run in the schedule's order on the stage's device; a wait never reorders them.
*/
#include "scenarios/programs/pipeline.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "scenarios/programs/mesh.h"
#include "sim/collective.h"
#include "sim/cond.h"

/* ---- the layout ------------------------------------------------------------------------- */

int pipe_active(const scenario *s) { return s->dist && scenario_pipeline_stages(s) > 1; }

int pipe_check(const scenario *s, const md_model *m, scn_error *err) {
  if (!pipe_active(s)) return TR_EXIT_OK;
  int layers = md_model_num_layers(m), stages = scenario_pipeline_stages(s) * scenario_pipeline_chunks(s);
  if (stages > layers)
    return train_error(err, s->path, s->mesh_line, s->mesh_col, "strategy.distribution.mesh", "a pipeline of %d "
                       "stages over a model of %d layers: each stage needs at least one layer", stages, layers);
  int sum = 0;
  for (int i = 0; i < s->pipe_nsplit; i++) sum += s->pipe_split[i];
  if (s->pipe_nsplit > 0 && sum != layers)
    return train_error(err, s->path, s->pipe_split_line, s->pipe_split_col,
                       "strategy.distribution.pipeline.layers_per_stage", "the stages' layers add up to %d, the "
                       "model has %d", sum, layers);
  return TR_EXIT_OK;
}

void pipe_layout_update(pipe_layout *l, const scenario *s, cg_cache *programs, const sim_roofline *r, int slice) {
  if (l->first != NULL && l->slice == slice) return;
  pipe_layout_free(l);
  l->stages = scenario_pipeline_stages(s);
  l->model = scenario_model_axis(s);
  l->chunks = scenario_pipeline_chunks(s);
  l->schedule = s->pipe_schedule;
  l->micro = scenario_pipeline_microbatches(s);
  int n = l->stages * l->chunks, passes = 2 * l->micro * l->chunks;
  l->slice = slice;
  /* a pipeline's batch is its stages' examples; a batch the microbatches do not divide (a plan's
  ** search) has its largest microbatch's cost */
  int batch = slice * l->stages * l->model;
  l->micro_examples = (batch + l->micro - 1) / l->micro;
  if (l->micro_examples < 1) l->micro_examples = 1;
  const cg_program *p = cg_cache_get(programs, l->micro_examples);
  l->layers = cg_program_layers(p);
  l->cost = base_xcalloc((size_t)l->layers, sizeof *l->cost);
  cg_pipeline_layer_costs(p, r, l->cost);
  l->first = base_xcalloc((size_t)n + 1, sizeof *l->first);
  if (s->pipe_nsplit == n) {
    for (int i = 0; i < n; i++) l->first[i + 1] = l->first[i] + s->pipe_split[i];
  } else {
    cg_pipeline_balance(l->cost, l->layers, n, l->first);
  }
  l->saved = base_xcalloc((size_t)n, sizeof *l->saved);
  for (int k = 0; k < n; k++) l->saved[k] = cg_pipeline_saved(p, l->first[k], l->first[k + 1]);
  l->order = base_xcalloc((size_t)l->stages * (size_t)passes, sizeof *l->order);
  for (int k = 0; k < l->stages; k++)
    cg_pipeline_order((cg_pipe_schedule)l->schedule, l->stages, k, l->micro, l->chunks, &l->order[(size_t)k * (size_t)passes]);
  if (l->model < 2) return;
  size_t nx;
  const cg_transfer *x = cg_program_collectives(p, &nx);
  l->transfers = base_xcalloc(nx + 1, sizeof *l->transfers);
  memcpy(l->transfers, x, nx * sizeof *x);
  l->ntransfers = nx;
  l->steps = base_xcalloc(2 * (size_t)n, sizeof *l->steps);
  l->nsteps = base_xcalloc(2 * (size_t)n, sizeof *l->nsteps);
  for (int k = 0; k < 2 * n; k++)
    l->steps[k] = cg_pipeline_pass_steps(p, r, l->first[k / 2], l->first[k / 2 + 1], k % 2, &l->nsteps[k]);
}

void pipe_layout_free(pipe_layout *l) {
  for (int k = 0; l->steps != NULL && k < 2 * l->stages * l->chunks; k++) free(l->steps[k]);
  free(l->steps);
  free(l->nsteps);
  free(l->transfers);
  l->steps = NULL;
  l->nsteps = NULL;
  l->transfers = NULL;
  free(l->first);
  free(l->cost);
  free(l->saved);
  free(l->order);
  l->first = NULL;
  l->cost = NULL;
  l->saved = NULL;
  l->order = NULL;
}

/* The model stage's layers' costs summed (its cut: the last layer's, the bytes it sends on). */
static cg_layer_cost stage_cost(const pipe_layout *l, int stage) {
  cg_layer_cost c = {0};
  for (int k = l->first[stage]; k < l->first[stage + 1]; k++) {
    const cg_layer_cost *x = &l->cost[k];
    c.forward += x->forward;
    c.backward += x->backward;
    c.update += x->update;
    c.weights += x->weights;
    c.slots += x->slots;
    c.grads += x->grads;
    c.cut = x->cut;
  }
  return c;
}

/* The bytes crossing the cut before the model stage's first layer (0 for the first stage), and
** after its last (0 for the last). */
static double cut_in(const pipe_layout *l, int stage) { return stage > 0 ? l->cost[l->first[stage] - 1].cut : 0; }
static double cut_out(const pipe_layout *l, int stage) {
  return stage + 1 < l->stages * l->chunks ? l->cost[l->first[stage + 1] - 1].cut : 0;
}

/* Device k's passes. */
static const cg_pipe_op *device_order(const pipe_layout *l, int k, int *n) {
  *n = 2 * l->micro * l->chunks;
  return &l->order[(size_t)k * (size_t)*n];
}

int pipe_stage_of(const pipe_layout *l, int r) { return r / l->model % l->stages; }

pipe_memory pipe_stage_memory(const pipe_layout *l, int stage) {
  pipe_memory m = {0, 0, 0, 0};
  double saved[1024];
  assert(l->chunks <= 1024);  /* the key's bound */
  for (int c = 0; c < l->chunks; c++) {
    int s = stage + c * l->stages;
    cg_layer_cost x = stage_cost(l, s);
    m.weights += x.weights;
    m.slots += x.slots;
    m.grads += x.grads;
    m.acts += 2 * (cut_in(l, s) + cut_out(l, s));
    saved[c] = l->saved[s];
  }
  int n;
  const cg_pipe_op *order = device_order(l, stage, &n);
  m.acts += cg_pipeline_peak_held(order, n, l->chunks, saved);
  return m;
}

/* ---- the run ------------------------------------------------------------------------------ */

/* Collectives on one group, started from the engine one at a time in the order issued, each
** counted when it ends in the attempt that started it (invariant 1). */
typedef struct pipe_queue {
  sim_collective *group;  /* its members' sub-group of the strategy's group; NULL: one member */
  sim_coll_op op;         /* what each runs */
  sim_algo algo;          /* with what */
  long issued;            /* collectives issued */
  long started;           /* of them started */
  long done;              /* of them through */
  int running;            /* 1 while one runs */
  double floats;          /* the next one's buffer */
  long attempt;           /* the attempt that started the running one */
  struct pipe_run *run;   /* the run */
} pipe_queue;

/* A stage's data-parallel group (replicas k, k + P, ...): its gradient all-reduces. */
typedef struct pipe_line {
  pipe_queue q;           /* the all-reduces */
  int n;                  /* its members */
  int ready;              /* members that issued the next one */
} pipe_line;

/* One direction of one cut of one pipeline: each send a broadcast from the sender, rank 0. */
typedef struct pipe_chan {
  pipe_queue q;           /* the sends */
  long received;          /* receives the receiver has taken */
  int counted;            /* 1: pipeline 0's, whose bytes are reported */
} pipe_chan;

struct pipe_run {
  sim_engine *engine;     /* the run's engine */
  ds_strategy *strategy;  /* the replicas and their group */
  pipe_layout layout;     /* the stages */
  int nreplicas;          /* D x P x T */
  int stages;             /* P, the stages of a pipeline */
  int model;              /* T, the devices of a stage */
  int cuts;               /* between the model's stages: P x chunks - 1 */
  pipe_chan *chans;       /* per chain (pipeline d's rank t: d T + t), cut c, direction (0 forward, 1
                          ** backward): [2 (chain cuts + c) + dir] */
  pipe_line *lines;       /* per device of a pipeline (stage k's rank t: k T + t): its data-parallel group */
  mesh_run *tp;           /* with T > 1: the stages' model lines, for their tensor-parallel collectives */
  long *tp_at;            /* per replica and step collective: its place in its model line */
  long *issued;           /* per replica: all-reduces issued */
  sim_time *waited;       /* per replica: time waiting this step */
  sim_time *began;        /* per replica: when its first pass began this step */
  sim_time *ended;        /* per replica: when its last pass ended */
  sim_time *busy;         /* per replica: time in its passes this step */
  double busy_total;      /* over the steps measured: the stages' busy time */
  double span_total;      /* and stages x each pipeline's span */
  double p2p_bytes;       /* pipeline 0's point-to-point bytes so far */
  long steps;             /* steps measured */
  sim_cond *cv;           /* every channel's and line's ends */
  sim_barrier *end;       /* the step's end */
  float **bufs;           /* the gradients per replica, or NULL */
  size_t nparams;         /* their floats */
  int *tracks;            /* per replica: its trace track; NULL: no spans */
  long attempt;           /* attempts begun */
};

/* q over the sub-group of `replicas`, running op by `want` where the sub-group can, else the ring. */
static void queue_init(pipe_run *p, pipe_queue *q, const char *name, int n, const int *replicas, sim_coll_op op,
                       sim_algo want) {
  int ranks[2];
  int *r = n <= 2 ? ranks : base_xcalloc((size_t)n, sizeof *r);
  for (int i = 0; i < n; i++) r[i] = ds_replica_rank(p->strategy, replicas[i]);
  q->run = p;
  q->op = op;
  q->group = sim_collective_new_subgroup(ds_collective(p->strategy), name, n, r);
  q->algo = sim_collective_check(q->group, op, want, 0, (size_t)n * 64) == SIM_OK ? want : SIM_ALGO_RING;
  if (r != ranks) free(r);
}

pipe_run *pipe_new(sim_engine *e, ds_strategy *st, const scenario *s, int nreplicas, cg_cache *programs, int slice,
                   float *const *bufs, size_t nparams, const int *tracks) {
  pipe_run *p = base_xcalloc(1, sizeof *p);
  p->engine = e;
  p->strategy = st;
  p->nreplicas = nreplicas;
  pipe_layout_update(&p->layout, s, programs, ds_replica_roofline(st, 0), slice);
  p->stages = scenario_pipeline_stages(s);
  p->model = p->layout.model;
  assert(p->stages > 1 && nreplicas % (p->stages * p->model) == 0);
  int T = p->model, chains = nreplicas / p->stages, data = chains / T;
  int cuts = p->stages * scenario_pipeline_chunks(s) - 1;
  p->cuts = cuts;
  p->chans = base_xcalloc((size_t)chains * (size_t)cuts * 2, sizeof *p->chans);
  for (int ch_ = 0; ch_ < chains; ch_++)
    for (int c = 0; c < cuts; c++)
      for (int dir = 0; dir < 2; dir++) {  /* model stage c on device c % P, c + 1 on the next */
        pipe_chan *ch = &p->chans[2 * (ch_ * cuts + c) + dir];
        int d = ch_ / T, t = ch_ % T;
        int from = (d * p->stages + c % p->stages) * T + t, to = (d * p->stages + (c + 1) % p->stages) * T + t;
        int pair[2] = {dir ? to : from, dir ? from : to};
        ch->counted = ch_ == 0;
        queue_init(p, &ch->q, dir ? "pipeline gradients" : "pipeline activations", 2, pair, SIM_COLL_BROADCAST,
                   SIM_ALGO_TREE);
      }
  p->lines = base_xcalloc((size_t)p->stages * (size_t)T, sizeof *p->lines);
  int *members = base_xcalloc((size_t)data, sizeof *members);
  for (int k = 0; k < p->stages * T; k++) {
    pipe_line *l = &p->lines[k];
    l->n = data;
    for (int d = 0; d < data; d++) members[d] = (d * p->stages + k / T) * T + k % T;
    if (data > 1) queue_init(p, &l->q, "pipeline stage", data, members, SIM_COLL_ALL_REDUCE, ds_all_reduce_algorithm(st));
  }
  free(members);
  if (T > 1) {
    p->tp = mesh_new(e, st, nreplicas, T, NULL, 0, tracks);
    p->tp_at = base_xcalloc((size_t)nreplicas * (p->layout.ntransfers + 1), sizeof *p->tp_at);
  }
  p->issued = base_xcalloc((size_t)nreplicas, sizeof *p->issued);
  p->waited = base_xcalloc((size_t)nreplicas, sizeof *p->waited);
  p->began = base_xcalloc((size_t)nreplicas, sizeof *p->began);
  p->ended = base_xcalloc((size_t)nreplicas, sizeof *p->ended);
  p->busy = base_xcalloc((size_t)nreplicas, sizeof *p->busy);
  p->cv = sim_cond_new();
  p->end = sim_barrier_new(e, nreplicas);
  if (bufs != NULL) {
    p->bufs = base_xcalloc((size_t)nreplicas, sizeof *p->bufs);
    for (int r = 0; r < nreplicas; r++) p->bufs[r] = bufs[r];
  }
  p->nparams = nparams;
  if (tracks != NULL) {
    p->tracks = base_xcalloc((size_t)nreplicas, sizeof *p->tracks);
    for (int r = 0; r < nreplicas; r++) p->tracks[r] = tracks[r];
  }
  return p;
}

void pipe_free(pipe_run *p) {
  if (p == NULL) return;
  int nchans = 2 * (p->nreplicas / p->stages) * p->cuts;
  for (int i = 0; i < nchans; i++) sim_collective_free(p->chans[i].q.group);
  for (int k = 0; k < p->stages * p->model; k++)
    if (p->lines[k].q.group) sim_collective_free(p->lines[k].q.group);
  mesh_free(p->tp);
  free(p->tp_at);
  free(p->chans);
  free(p->lines);
  free(p->issued);
  free(p->waited);
  free(p->began);
  free(p->ended);
  free(p->busy);
  sim_cond_free(p->cv);
  sim_barrier_free(p->end);
  free(p->bufs);
  free(p->tracks);
  pipe_layout_free(&p->layout);
  free(p);
}

void pipe_reset(pipe_run *p) {
  int nchans = 2 * (p->nreplicas / p->stages) * p->cuts;
  for (int i = 0; i < nchans; i++) {
    pipe_chan *ch = &p->chans[i];
    ch->q.issued = ch->q.started = ch->q.done = ch->received = 0;  /* a running one ends uncounted */
  }
  for (int k = 0; k < p->stages * p->model; k++) {
    pipe_line *l = &p->lines[k];
    l->q.issued = l->q.started = l->q.done = 0;
    l->ready = 0;
  }
  if (p->tp) mesh_reset(p->tp);
  for (int r = 0; r < p->nreplicas; r++) p->issued[r] = 0;
  p->attempt++;
}

static void queue_start(pipe_queue *q);

static void queue_done(sim_engine *e, sim_collective *c, void *arg) {
  (void)e;
  (void)c;
  pipe_queue *q = arg;
  q->running = 0;
  if (q->attempt == q->run->attempt) {
    q->done++;
    sim_cond_notify_all(q->run->cv);
  }
  queue_start(q);
}

static void queue_start(pipe_queue *q) {
  if (q->running || q->started >= q->issued) return;
  q->running = 1;
  q->started++;
  q->attempt = q->run->attempt;
  int rc = sim_collective_start(q->group, q->op, q->algo, 0, NULL, (size_t)q->floats, queue_done, q);
  assert(rc == SIM_OK);  /* the group runs nothing else, and queue_init checked the algorithm */
  (void)rc;
}

/* Issues a collective of `bytes` (the next ones' buffer until then: a queue's buffers are all
** alike, one cut's activations or one stage's gradients). */
static void queue_issue(pipe_queue *q, double bytes) {
  q->floats = bytes / 4.0 >= 1 ? bytes / 4.0 : 1;
  q->issued++;
  queue_start(q);
}

/* Waits until more than `n` of the queue's collectives are through. */
static int queue_wait(pipe_run *p, sim_actor *self, const pipe_queue *q, long n) {
  while (q->done <= n)
    if (sim_cond_wait(self, p->cv) != SIM_OK) return SIM_FAILED;
  return SIM_OK;
}

static void chan_send(pipe_run *p, pipe_chan *ch, double bytes) {
  queue_issue(&ch->q, bytes);
  if (ch->counted) p->p2p_bytes += 4.0 * (double)(size_t)ch->q.floats;
}

/* Waits for the channel's next delivery (and takes it). */
static int chan_receive(pipe_run *p, sim_actor *self, pipe_chan *ch) {
  return queue_wait(p, self, &ch->q, ch->received++);
}

/* Replica r (stage k) issues its stage's all-reduce of `bytes` and waits for it. */
static int stage_all_reduce(pipe_run *p, sim_actor *self, int r, int k, double bytes) {
  pipe_line *l = &p->lines[k];
  if (l->q.group == NULL) return SIM_OK;
  long mine = p->issued[r]++;
  if (++l->ready == l->n) {  /* the members issue in step order: the last one issues it */
    l->ready = 0;
    queue_issue(&l->q, bytes);
  }
  return queue_wait(p, self, &l->q, mine);
}

/* Model stage s's pass on a stage of T > 1 devices: its kernels between its collectives over the
** model axis, each issued on the stage's model line and awaited where the schedule placed it (the
** waits counted as communication). */
static int run_steps(pipe_run *p, sim_actor *self, int r, sim_cpu *cpu, int s, int backward) {
  const pipe_layout *l = &p->layout;
  const cg_pipe_step *st = l->steps[2 * s + backward];
  long *at = &p->tp_at[(size_t)r * (l->ntransfers + 1)];
  for (size_t i = 0; i < l->nsteps[2 * s + backward]; i++) {
    if (st[i].work > 0 && sim_exec(self, cpu, st[i].work) != SIM_OK) return SIM_FAILED;
    if (st[i].transfer < 0) break;
    if (!st[i].await) {
      at[st[i].transfer] = mesh_issue(p->tp, r, &l->transfers[st[i].transfer]);
      continue;
    }
    sim_time before = sim_now(p->engine);
    if (mesh_await(p->tp, self, r, 1, at[st[i].transfer]) != SIM_OK) return SIM_FAILED;
    p->waited[r] += sim_now(p->engine) - before;
  }
  return SIM_OK;
}

/* A pass's exec (or, tensor parallel, its steps) and its span on the replica's timeline. */
static int run_pass(pipe_run *p, sim_actor *self, int r, sim_cpu *cpu, const cg_pipe_op *op, int s, double work) {
  sim_time t0 = sim_now(p->engine);
  if (p->tp != NULL ? run_steps(p, self, r, cpu, s, op->backward) != SIM_OK
                    : work > 0 && sim_exec(self, cpu, work) != SIM_OK)
    return SIM_FAILED;
  sim_time t1 = sim_now(p->engine);
  p->busy[r] += t1 - t0;
  p->ended[r] = t1;
  if (p->tracks != NULL) {
    char name[32];
    if (p->layout.chunks > 1)
      snprintf(name, sizeof name, "%s %d.%d", op->backward ? "backward" : "forward", op->micro, op->chunk);
    else
      snprintf(name, sizeof name, "%s %d", op->backward ? "backward" : "forward", op->micro);
    sim_trace_span(p->engine, p->tracks[r], name, "pipeline", t0, t1);
  }
  return SIM_OK;
}

int pipe_pass(pipe_run *p, sim_actor *self, int r, sim_cpu *cpu) {
  const pipe_layout *l = &p->layout;
  int T = p->model, k = r / T % p->stages, chain = r / (T * p->stages) * T + r % T, n;
  const cg_pipe_op *order = device_order(l, k, &n);
  p->waited[r] = 0;
  p->busy[r] = 0;
  p->began[r] = p->ended[r] = sim_now(p->engine);
  double grads = 0;
  for (int c = 0; c < l->chunks; c++) grads += stage_cost(l, k + c * p->stages).grads;
  for (int i = 0; i < n; i++) {
    const cg_pipe_op *op = &order[i];
    int s = k + op->chunk * p->stages;  /* the model stage it runs */
    cg_layer_cost c = stage_cost(l, s);
    /* the cuts before and after model stage s: [0] forward, [1] backward */
    pipe_chan *in = s > 0 ? &p->chans[2 * (chain * p->cuts + s - 1)] : NULL;
    pipe_chan *out = s < p->cuts ? &p->chans[2 * (chain * p->cuts + s)] : NULL;
    pipe_chan *from = op->backward ? (out ? &out[1] : NULL) : in, *to = op->backward ? (in ? &in[1] : NULL) : out;
    sim_time before = sim_now(p->engine);
    if (from != NULL && chan_receive(p, self, from) != SIM_OK) return SIM_FAILED;
    p->waited[r] += sim_now(p->engine) - before;
    if (i == 0) p->began[r] = sim_now(p->engine);
    if (run_pass(p, self, r, cpu, op, s, op->backward ? c.backward : c.forward) != SIM_OK) return SIM_FAILED;
    if (to != NULL) chan_send(p, to, op->backward ? cut_in(l, s) : cut_out(l, s));
  }
  sim_time before = sim_now(p->engine);
  if (stage_all_reduce(p, self, r, k * T + r % T, grads) != SIM_OK) return SIM_FAILED;
  p->waited[r] += sim_now(p->engine) - before;
  return SIM_OK;
}

/* The step's bubble, from every replica's marks (all are at the step's end barrier). */
static void measure(pipe_run *p) {
  int w = p->stages * p->model;  /* a pipeline's devices */
  for (int d = 0; d < p->nreplicas / w; d++) {
    sim_time lo = p->began[d * w], hi = p->ended[d * w];
    for (int k = 0; k < w; k++) {
      int r = d * w + k;
      if (p->began[r] < lo) lo = p->began[r];
      if (p->ended[r] > hi) hi = p->ended[r];
      p->busy_total += (double)p->busy[r];
    }
    p->span_total += (double)w * (double)(hi - lo);
  }
  p->steps++;
}

int pipe_sync(pipe_run *p, sim_actor *self, int r) {
  if (sim_barrier_wait(self, p->end) != SIM_OK) return SIM_FAILED;
  if (r == 0) {
    measure(p);
    if (p->bufs != NULL) {
      int rc = ds_all_reduce_values(p->strategy, p->bufs, p->nparams);
      assert(rc == SIM_OK);  /* the strategy's group runs nothing: the lines are sub-groups */
      (void)rc;
    }
  }
  return sim_barrier_wait(self, p->end);
}

int pipe_apply(pipe_run *p, sim_actor *self, int r, sim_cpu *cpu, int apply) {
  double work = 0;
  int k = pipe_stage_of(&p->layout, r);
  for (int c = 0; c < p->layout.chunks && apply; c++) work += stage_cost(&p->layout, k + c * p->stages).update;
  return work > 0 ? sim_exec(self, cpu, work) : SIM_OK;
}

sim_time pipe_waited(const pipe_run *p, int r) { return p->waited[r]; }

double pipe_bubble_fraction(const pipe_run *p) {
  return p->span_total > 0 ? 1.0 - p->busy_total / p->span_total : 0;
}

double pipe_p2p_bytes_per_step(const pipe_run *p) { return p->steps > 0 ? p->p2p_bytes / (double)p->steps : 0; }

const pipe_layout *pipe_run_layout(const pipe_run *p) { return &p->layout; }
