/*
** collective.c: all-reduce over simulated links with real float buffers (sim_collective_,
** sim_allreduce).
**
** Ring (SIM_ALGO_RING), as the SimGrid peer's ring: the count floats are cut into p chunks,
** then 2(p-1) steps; in step k rank r sends one chunk to r+1 and receives one from r-1, and moves
** to step k+1 once both are done. A transfer starts when sender and receiver are both at its
** step (the rendezvous of a put and a get). The first p-1 steps reduce-scatter (the receiver
** adds the incoming partial sum into its own chunk), the last p-1 all-gather (the receiver
** copies the finished chunk). All of it runs engine-side from completion callbacks; rank actors
** only block on arrival and are woken when the whole ring is done.
**
** Numerics happen at the simulated time a transfer completes, on a copy of the chunk taken when
** it started, so what a rank receives is what its neighbour held at send time. After the
** all-gather every rank holds the bits of the reduce-scatter's owner for each chunk.
*/
#include "sim/collective.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "sim/simInt.h"

typedef struct ring_rank {
  sim_collective *coll;      /* owner */
  int rank;                  /* index in the group */
  sim_actor *actor;          /* the arrived caller, NULL before arrival */
  float *buf;                /* its buffer, NULL when running on shapes alone */
  int step;                  /* current step, 0 .. 2(p-1); 2(p-1) = finished, -1 = not begun */
  int send_started;          /* this step's transfer to the successor has started */
  int send_done;             /* ... and completed */
  int recv_done;             /* this step's chunk from the predecessor is in (and reduced) */
  float *snapshot;           /* the chunk in flight to the successor, copied at send start */
  sim_activity *send;        /* that transfer while in flight */
  sim_activity *reduce;      /* the exec charging this step's reduction, while running */
  sim_link **route;          /* links to the successor */
  size_t hops;               /* entries in route */
} ring_rank;

struct sim_collective {
  sim_engine *engine;        /* owner */
  char *name;                /* for diagnostics */
  int p;                     /* ranks */
  sim_route_fn route;        /* rank -> rank links */
  void *route_ctx;           /* its context */
  sim_cpu **cpus;            /* per-rank reduction cpus, NULL when reductions are free */
  ring_rank *ranks;          /* per-rank state */
  int arrived;               /* callers present for the current all-reduce */
  int finished;              /* ranks past their last step */
  int running;               /* all arrived, steps in progress */
  size_t count;              /* floats per buffer */
  size_t chunk_base;         /* count / p: every chunk has at least this many floats */
  size_t chunk_extra;        /* count % p: the first chunk_extra chunks have one more */
  sim_time started;          /* when the last rank arrived */
  sim_time last_duration;    /* of the last completed all-reduce */
};

/* Routes between neighbours are short; longer ones are fetched a second time at full size. */
#define ROUTE_GUESS 16

const char *sim_algo_name(sim_algo a) { return a == SIM_ALGO_RING ? "ring" : "unknown"; }

sim_collective *sim_collective_new(sim_engine *e, const char *name, int ranks,
                                   sim_route_fn route, void *route_ctx, sim_cpu *const *rank_cpus) {
  assert(ranks > 0 && route != NULL);
  sim_collective *c = sim__xcalloc(1, sizeof *c);
  c->engine = e;
  c->name = sim__strdup(name);
  c->p = ranks;
  c->route = route;
  c->route_ctx = route_ctx;
  c->ranks = sim__xcalloc((size_t)ranks, sizeof *c->ranks);
  if (rank_cpus != NULL) {
    c->cpus = sim__xcalloc((size_t)ranks, sizeof *c->cpus);
    memcpy(c->cpus, rank_cpus, (size_t)ranks * sizeof *c->cpus);
  }
  for (int r = 0; r < ranks; r++) {
    ring_rank *rk = &c->ranks[r];
    rk->coll = c;
    rk->rank = r;
    rk->step = -1;
    int next = (r + 1) % ranks;
    if (next == r) continue;
    sim_link *first[ROUTE_GUESS];
    rk->hops = route(route_ctx, r, next, first, ROUTE_GUESS);
    rk->route = sim__xcalloc(rk->hops, sizeof *rk->route);
    if (rk->hops <= ROUTE_GUESS) {
      memcpy(rk->route, first, rk->hops * sizeof *rk->route);
    } else { /* the route fn reports the full length when out is too short: ask again */
      size_t got = route(route_ctx, r, next, rk->route, rk->hops);
      assert(got == rk->hops);
      (void)got;
    }
  }
  return c;
}

/* Frees the per-run buffers; transfers still in flight are withdrawn. */
static void reset(sim_collective *c) {
  for (int r = 0; r < c->p; r++) {
    ring_rank *rk = &c->ranks[r];
    if (rk->send != NULL) sim__activity_withdraw(rk->send);
    if (rk->reduce != NULL) sim__activity_withdraw(rk->reduce);
    free(rk->snapshot);
    rk->snapshot = NULL;
    rk->send = rk->reduce = NULL;
    rk->actor = NULL;
    rk->buf = NULL;
    rk->step = -1;
  }
  c->arrived = c->finished = c->running = 0;
}

void sim_collective_free(sim_collective *c) {
  if (c == NULL) return;
  reset(c);
  for (int r = 0; r < c->p; r++) free(c->ranks[r].route);
  free(c->ranks);
  free(c->cpus);
  free(c->name);
  free(c);
}

sim_time sim_collective_last_duration(const sim_collective *c) { return c->last_duration; }

static int mod(int a, int p) { return ((a % p) + p) % p; }

static size_t chunk_offset(const sim_collective *c, int chunk) {
  size_t k = (size_t)chunk;
  return k * c->chunk_base + (k < c->chunk_extra ? k : c->chunk_extra);
}

static size_t chunk_len(const sim_collective *c, int chunk) {
  return c->chunk_base + ((size_t)chunk < c->chunk_extra ? 1 : 0);
}

/* The chunk rank r sends at `step` (its successor receives the same one). */
static int sent_chunk(const sim_collective *c, int r, int step) {
  int p = c->p;
  return step < p - 1 ? mod(r - step, p) : mod(r + 1 - (step - (p - 1)), p);
}

static void enter_step(ring_rank *rk);

static void try_advance(ring_rank *rk) {
  if (rk->send_done && rk->recv_done) enter_step(rk);
}

static void reduce_done(sim_engine *e, sim_activity *act, void *arg) {
  (void)e; (void)act;
  ring_rank *rk = arg;
  rk->reduce = NULL;
  rk->recv_done = 1;
  try_advance(rk);
}

static void transfer_done(sim_engine *e, sim_activity *act, void *arg) {
  (void)act;
  ring_rank *from = arg;
  sim_collective *c = from->coll;
  ring_rank *to = &c->ranks[(from->rank + 1) % c->p];
  int step = from->step;
  assert(to->step == step); /* the receiver cannot move on without this chunk */
  int chunk = sent_chunk(c, from->rank, step);
  size_t off = chunk_offset(c, chunk), len = chunk_len(c, chunk);
  int reducing = step < c->p - 1;
  from->send = NULL;
  from->send_done = 1;
  if (to->buf != NULL) {
    float *dst = to->buf + off;
    if (reducing)
      for (size_t i = 0; i < len; i++) dst[i] = dst[i] + from->snapshot[i];
    else
      memcpy(dst, from->snapshot, len * sizeof *dst);
  }
  if (reducing && c->cpus != NULL && c->cpus[to->rank] != NULL) {
    to->reduce = sim_exec_start(e, c->cpus[to->rank], (double)len);
    sim_activity_on_done(to->reduce, reduce_done, to);
  } else {
    to->recv_done = 1;
  }
  /* `from` cannot finish the whole ring here: `to` has not passed this step yet. */
  try_advance(from);
  try_advance(to);
}

/* Starts rank s's transfer of its current step once its successor has reached that step. */
static void try_send(ring_rank *s) {
  sim_collective *c = s->coll;
  ring_rank *to = &c->ranks[(s->rank + 1) % c->p];
  if (s->send_started || s->step < 0 || s->step >= 2 * (c->p - 1) || to->step != s->step) return;
  int chunk = sent_chunk(c, s->rank, s->step);
  size_t off = chunk_offset(c, chunk), len = chunk_len(c, chunk);
  if (s->buf != NULL) memcpy(s->snapshot, s->buf + off, len * sizeof *s->snapshot);
  s->send_started = 1;
  s->send = sim_comm_start(c->engine, s->route, s->hops, (double)(len * sizeof(float)));
  sim_activity_on_done(s->send, transfer_done, s);
}

static void finish(sim_collective *c) {
  c->last_duration = c->engine->now - c->started;
  for (int r = 0; r < c->p; r++) sim__actor_wake(c->ranks[r].actor, SIM_OK);
  reset(c);
}

static void enter_step(ring_rank *rk) {
  sim_collective *c = rk->coll;
  rk->step++;
  rk->send_started = rk->send_done = rk->recv_done = 0;
  if (rk->step == 2 * (c->p - 1)) {
    if (++c->finished == c->p) finish(c);
    return;
  }
  try_send(&c->ranks[mod(rk->rank - 1, c->p)]);
  try_send(rk);
}

static void begin(sim_collective *c) {
  c->running = 1;
  c->started = c->engine->now;
  c->chunk_base = c->count / (size_t)c->p;
  c->chunk_extra = c->count % (size_t)c->p;
  size_t biggest = c->chunk_base + (c->chunk_extra ? 1 : 0);
  for (int r = 0; r < c->p; r++) {
    ring_rank *rk = &c->ranks[r];
    assert((rk->buf == NULL) == (c->ranks[0].buf == NULL)); /* all numeric or all shapes */
    if (rk->buf != NULL) {
      rk->snapshot = sim__xcalloc(biggest, sizeof *rk->snapshot);
    }
  }
  for (int r = 0; r < c->p; r++) enter_step(&c->ranks[r]);
}

/* A rank's actor was killed while in the all-reduce: the others fail rather than hang. */
static void withdraw_rank(sim_actor *victim, void *ctx) {
  ring_rank *rk = ctx;
  sim_collective *c = rk->coll;
  /* Killed after the all-reduce finished but before its wake-up ran: nothing left to undo. */
  if (rk->actor != victim) return;
  if (!c->running) {
    rk->actor = NULL;
    rk->buf = NULL;
    c->arrived--;
    return;
  }
  for (int r = 0; r < c->p; r++) {
    sim_actor *a = c->ranks[r].actor;
    if (a != victim) sim__actor_wake(a, SIM_FAILED);
  }
  reset(c);
}

int sim_allreduce(sim_actor *self, sim_collective *c, int rank, float *buf, size_t count,
                  sim_algo algo) {
  assert(algo == SIM_ALGO_RING && rank >= 0 && rank < c->p);
  (void)algo;
  if (c->p == 1) {
    c->last_duration = 0;
    return SIM_OK;
  }
  ring_rank *rk = &c->ranks[rank];
  assert(rk->actor == NULL && !c->running);
  assert(c->arrived == 0 || count == c->count);
  rk->actor = self;
  rk->buf = buf;
  c->count = count;
  if (++c->arrived == c->p) begin(c);
  return sim__actor_block(self, withdraw_rank, rk);
}
