/*
** collective.c: the collective executor (sim_collective_, sim_allreduce). The algorithms'
** schedules are in collective_plan.c; this file runs them.
**
** Every rank walks through the rounds of the algorithm. In round k it has a few transfers to
** send and to receive (sim__coll_plan); a transfer starts when sender and receiver are both in
** round k (the rendezvous of a put and a get), and a rank enters round k+1 once all its round-k
** transfers, and the reductions they charge on its cpu, are done. A rank with nothing to do in a
** round passes straight through. All of it runs engine-side from completion callbacks; blocking
** callers only wait to be woken when every rank is through.
**
** Numerics happen at the simulated time a transfer completes: the receiver copies or adds the
** sender's segment as it is then. The plans guarantee that a sender does not touch what it is
** sending until the send is done, so that is what it held when the send started. Where two
** partial sums reach one segment in the same round (tree, torus line) they are added at the end
** of the receiver's round in plan order, so the bits never depend on which arrived first.
**
** Lanes (collectiveInt.h): the torus runs one lane per axis (or a single one where that is
** faster, collective_plan.c) as virtual ranks l * p + r, each with its own rounds; buffers,
** cpus, callers and routes belong to the real rank r (NCCL's channels across nodes: r with its
** node's ranks turned by l, rank_of).
**
** Routes: a rank sends to the same peer under the same tag for many rounds in a row (m - 1 on a
** torus axis), so a one-link route is kept per (rank, tag) and asked for again only when the
** peer changes, or the collective ends: a route fn may answer differently between collectives,
** never within one. Asking the route fn took 12% of the instructions of a pod step.
*/
#include "sim/collective.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/collectiveInt.h"
#include "sim/simInt.h"

/* ---- names ------------------------------------------------------------------------------- */

static const char *const algo_names[SIM_ALGO_COUNT] = {
    "ring", "bidirectional_ring", "torus", "tree", "double_binary_tree", "halving_doubling", "nccl"};
static const char *const op_names[SIM_COLL_OP_COUNT] = {
    "all_reduce", "reduce_scatter", "all_gather", "broadcast", "all_to_all", "ppermute"};

const char *sim_algo_name(sim_algo a) {
  return (unsigned)a < SIM_ALGO_COUNT ? algo_names[a] : "unknown";
}

const char *sim_coll_op_name(sim_coll_op op) {
  return (unsigned)op < SIM_COLL_OP_COUNT ? op_names[op] : "unknown";
}

static int parse(const char *name, const char *const *names, int n) {
  for (int i = 0; i < n; i++)
    if (name != NULL && strcmp(name, names[i]) == 0) return i;
  return -1;
}

int sim_algo_parse(const char *name, sim_algo *out) {
  int i = parse(name, algo_names, SIM_ALGO_COUNT);
  if (i >= 0) *out = (sim_algo)i;
  return i < 0 ? -1 : 0;
}

int sim_coll_op_parse(const char *name, sim_coll_op *out) {
  int i = parse(name, op_names, SIM_COLL_OP_COUNT);
  if (i >= 0) *out = (sim_coll_op)i;
  return i < 0 ? -1 : 0;
}

const char *sim_coll_strerror(int code) {
  switch (code) {
  case SIM_OK: return "ok";
  case SIM_FAILED: return "a rank of the group was killed";
  case SIM_COLL_EUNSUPPORTED: return "the algorithm does not implement this op for this group";
  case SIM_COLL_ETORUS: return "torus algorithm without a torus shape of the group's size";
  case SIM_COLL_EINVAL: return "bad root or count, or ranks disagree on the arguments";
  case SIM_COLL_EBUSY: return "another collective is under way on the group";
  default: return "unknown error";
  }
}

/* ---- the group ----------------------------------------------------------------------------- */

/* Makes room for `lanes` lanes of virtual ranks (idle ones: round -1). Only while idle: a blocked
** caller holds a pointer into ranks. */
static void grow_lanes(sim_collective *c, int lanes) {
  if (lanes <= c->cap_lanes) return;
  size_t old = (size_t)c->p * (size_t)c->cap_lanes, n = (size_t)c->p * (size_t)lanes;
  c->ranks = base_xrealloc(c->ranks, n * sizeof *c->ranks);
  memset(c->ranks + old, 0, (n - old) * sizeof *c->ranks);
  for (size_t v = old; v < n; v++) {
    c->ranks[v].coll = c;
    c->ranks[v].round = -1;
  }
  if (c->cpus != NULL) {
    c->reduces = base_xrealloc(c->reduces, n * COLL_MAX_XFERS * sizeof *c->reduces);
    memset(c->reduces + old * COLL_MAX_XFERS, 0, (n - old) * COLL_MAX_XFERS * sizeof *c->reduces);
  }
  c->cap_lanes = lanes;
  free(c->waits); /* sized by the lanes; idle, so none is pending */
  c->waits = NULL;
}

/* The real rank of virtual rank v. NCCL's channels across nodes (collective_plan.c) turn each
** node's ranks by the lane, so lane l's ring enters every node at its rank l. */
static int rank_of(const sim_collective *c, int v) {
  int r = v % c->p;
  if (c->lanes == 1 || c->algo != SIM_ALGO_NCCL) return r;
  int ppn = c->nccl_system.ranks_per_node, local = r % ppn;
  return r - local + (local + v / c->p) % ppn;
}

sim_collective *sim_collective_new(sim_engine *e, const char *name, int ranks,
                                   sim_route_fn route, void *route_ctx, sim_cpu *const *rank_cpus) {
  assert(ranks > 0 && route != NULL);
  sim_collective *c = base_xcalloc(1, sizeof *c);
  c->engine = e;
  c->name = base_strdup(name);
  c->p = ranks;
  c->route = route;
  c->route_ctx = route_ctx;
  c->cap_hops = 16;
  c->hops = base_xcalloc(c->cap_hops, sizeof *c->hops);
  c->actors = base_xcalloc((size_t)ranks, sizeof *c->actors);
  c->bufs = base_xcalloc((size_t)ranks, sizeof *c->bufs);
  if (rank_cpus != NULL) {
    c->cpus = base_xcalloc((size_t)ranks, sizeof *c->cpus);
    memcpy(c->cpus, rank_cpus, (size_t)ranks * sizeof *c->cpus);
  }
  grow_lanes(c, 1);
  return c;
}

void sim_collective_set_torus(sim_collective *c, int ndims, const int *dims, const int *wraps) {
  assert(ndims >= 1 && ndims <= COLL_MAX_DIMS && !c->running && c->arrived == 0);
  c->ndims = ndims;
  for (int a = 0; a < ndims; a++) {
    assert(dims[a] >= 1);
    c->dims[a] = dims[a];
    c->wraps[a] = wraps != NULL && wraps[a];
  }
  grow_lanes(c, sim__coll_lanes(c, SIM_ALGO_TORUS));
}

int sim_collective_torus(const sim_collective *c, int *dims, int *wraps) {
  for (int a = 0; a < c->ndims; a++) dims[a] = c->dims[a], wraps[a] = c->wraps[a];
  return c->ndims;
}

void sim_collective_set_fixed_cost(sim_collective *c, sim_time cost) {
  assert(!c->running && c->arrived == 0 && cost >= 0);
  c->fixed_cost = cost;
}

void sim_collective_set_nccl(sim_collective *c, const sim_nccl_system *system) {
  assert(!c->running && c->arrived == 0 && system->ranks_per_node >= 1);
  c->nccl_system = *system;
  c->has_nccl_system = 1;
  grow_lanes(c, sim__coll_lanes(c, SIM_ALGO_NCCL));
}

static void fast_fall_back(sim_engine *e, sim_activity *hold, void *arg);

/* Withdraws what is in flight and forgets the callers: the group is idle again. A run in closed
** form is first made the transfers in flight now, withdrawn like any. */
static void reset(sim_collective *c) {
  if (c->hold != NULL) fast_fall_back(c->engine, c->hold, c);
  sim_cancel(c->engine, c->start_wait);
  c->start_wait = (sim_event_handle){0, 0};
  for (int v = 0; c->waits != NULL && v < c->p * c->cap_lanes; v++) {
    sim_cancel(c->engine, c->waits[v]);
    c->waits[v] = (sim_event_handle){0, 0};
  }
  for (int v = 0; v < c->p * c->cap_lanes; v++) {
    coll_rank *rk = &c->ranks[v];
    for (int i = 0; i < COLL_MAX_XFERS; i++) {
      if (rk->send[i] != NULL) sim__activity_withdraw(rk->send[i]);
      rk->send[i] = NULL;
      sim_activity **red = c->reduces != NULL ? &c->reduces[v * COLL_MAX_XFERS + i] : NULL;
      if (red != NULL && *red != NULL) sim__activity_withdraw(*red);
      if (red != NULL) *red = NULL;
    }
    for (int i = 0; i < COLL_ROUTE_TAGS; i++) rk->hop[i] = NULL;
    rk->round = -1;
    rk->flags = 0;
    rk->stage = 0;
  }
  for (int r = 0; r < c->p; r++) {
    c->actors[r] = NULL;
    c->bufs[r] = NULL;
  }
  c->arrived = c->finished = c->running = 0;
  c->done = NULL;
  c->done_arg = NULL;
}

void sim_collective_free(sim_collective *c) {
  if (c == NULL) return;
  reset(c);
  free(c->ranks);
  free(c->reduces);
  free(c->actors);
  free(c->bufs);
  free(c->cpus);
  free(c->hops);
  free(c->originals);
  free(c->owned_ctx);
  free(c->waits);
  free(c->held);
  free(c->held_done);
  free(c->held_until);
  free(c->fast_at);
  free(c->fast_routes);
  free(c->fast_sent);
  free(c->fast_recv);
  free(c->fast_nrecv);
  free(c->fast_cpu_slot);
  free(c->stage_floats);
  free(c->ring_links);
  free(c->ring_parts);
  free(c->name);
  free(c);
}

sim_time sim_collective_last_duration(const sim_collective *c) { return c->last_duration; }

int sim_collective_check(const sim_collective *c, sim_coll_op op, sim_algo algo, int root,
                         size_t count) {
  return sim__coll_check(c, op, algo, root, count);
}

/* ---- segments ------------------------------------------------------------------------------ */

/* Where chunk `t` of the segment lies in a buffer: the chunk, then the lane's share, then half. */
static void seg_range(const sim_collective *c, coll_seg s, int t, size_t *off, size_t *len) {
  int row = t / s.n;
  size_t k = (size_t)s.first + (size_t)(t - row * s.n) * (size_t)s.stride + (size_t)row * (size_t)s.stride2;
  *off = k * c->chunk_base + (k < c->chunk_extra ? k : c->chunk_extra);
  *len = c->chunk_base + (k < c->chunk_extra ? 1 : 0);
  size_t lanes = (size_t)c->lanes, l = s.lane, share = *len / lanes, extra = *len % lanes;
  *off += l * share + (l < extra ? l : extra);
  *len = share + (l < extra ? 1 : 0);
  if (s.half == 2) *off += (*len + 1) / 2;
  if (s.half != 0) *len = s.half == 1 ? (*len + 1) / 2 : *len / 2;
}

/* Applies what `from` sent in x (the receiver's plan entry) to `to`'s buffer. */
static void apply(sim_collective *c, int from, int to, const coll_xfer *x) {
  float *dst = c->bufs[rank_of(c, to)], *src = c->bufs[rank_of(c, from)];
  if (dst == NULL || c->count == 0) return; /* nothing to move (and no originals) */
  if (x->mode == COLL_COPY_ROUTED || x->mode == COLL_RELAY) {
    if (x->mode == COLL_COPY_ROUTED) sim__coll_a2a_apply(c, to, x, dst);
    return;
  }
  if (x->mode == COLL_COPY_BLOCK) { /* all_to_all: block `to` of the sender's original */
    size_t n = c->count / (size_t)c->p;
    memcpy(dst + (size_t)from * n, c->originals + (size_t)from * c->count + (size_t)to * n,
           n * sizeof *dst);
    return;
  }
  if (x->mode == COLL_COPY_ORIGINAL) src = c->originals + (size_t)rank_of(c, from) * c->count;
  for (int t = 0; t < x->seg.n * x->seg.n2; t++) {
    size_t off, len;
    seg_range(c, x->seg, t, &off, &len);
    if (x->mode == COLL_COPY || x->mode == COLL_COPY_ORIGINAL)
      memcpy(dst + off, src + off, len * sizeof *dst);
    else
      for (size_t i = 0; i < len; i++) dst[off + i] = dst[off + i] + src[off + i];
  }
}

/* ---- rounds -------------------------------------------------------------------------------- */

static void send_done(sim_engine *e, sim_activity *act, void *arg);

/* Asks the route fn for from -> to into c->hops; returns the hop count. */
static size_t find_route(sim_collective *c, int from, int to) {
  size_t hops = c->route(c->route_ctx, from, to, c->hops, c->cap_hops);
  if (hops > c->cap_hops) { /* the route fn reports the full length when out is too short */
    sim__grow(&c->hops, &c->cap_hops, hops, sizeof *c->hops);
    size_t got = c->route(c->route_ctx, from, to, c->hops, c->cap_hops);
    assert(got == hops);
    (void)got;
  }
  return hops;
}

/* The route in c->hops[0..hops): its latency (the sum of its links') and its slowest capacity. */
static double route_rate(const sim_collective *c, size_t hops, sim_time *latency) {
  double rate = INFINITY;
  *latency = 0;
  for (size_t h = 0; h < hops; h++) {
    *latency += sim_link_latency(c->hops[h]);
    if (sim_link_bandwidth(c->hops[h]) < rate) rate = sim_link_bandwidth(c->hops[h]);
  }
  return rate;
}

static void start_send(sim_collective *c, int from, int to, int tag, coll_seg seg) {
  coll_rank *s = &c->ranks[from];
  int cached = tag < COLL_ROUTE_TAGS && s->hop[tag] != NULL && s->to[tag] == to;
  size_t hops = cached ? 1 : find_route(c, rank_of(c, from), rank_of(c, to));
  sim_link **route = cached ? &s->hop[tag] : c->hops;
  if (!cached && tag < COLL_ROUTE_TAGS) s->hop[tag] = hops == 1 ? c->hops[0] : NULL;
  double bytes = (double)(coll_seg_floats(c, seg) * sizeof(float)) * c->wire;
  sim_activity *a = sim__comm_start_solo(c->engine, route, hops, bytes);
  s->send[tag] = a;
  s->to[tag] = to;
  s->started |= (uint8_t)(1u << tag);
  sim_activity_on_done(a, send_done, s);
}

static void finish(sim_collective *c) {
  c->last_duration = c->engine->now - c->started;
  sim_collective_done_fn done = c->done;
  void *done_arg = c->done_arg;
  for (int r = 0; r < c->p; r++)
    if (c->actors[r] != NULL) sim__actor_wake(c->actors[r], SIM_OK);
  reset(c);
  if (done != NULL) done(c->engine, c, done_arg);
}

static void enter_round(coll_rank *rk);

/* Torus lanes keep in step stage by stage on each rank: a lane whose next stage begins at its
** round waits (parked) until its rank's other lanes get to theirs, so at any time a rank's lanes
** are on different axes and no two lanes share a link. Unbarriered, a lane through a short axis
** early moved on to an axis another lane was still using and halved its bandwidth there, and the
** rounds' rendezvous made that cost more than it saved: with wraparound on one axis of a 4x4,
** the all-reduce came out slower than with none. Returns 1 when rk may go on into its round. */
static int stage_barrier(coll_rank *rk) {
  sim_collective *c = rk->coll;
  int v = (int)(rk - c->ranks), lane = v / c->p, r = v - lane * c->p, t = rk->stage + 1;
  if (c->lanes == 1 || t >= c->nstages || rk->round != c->stages[lane][t].first) return 1;
  /* Every sibling is in stage t-1 (none passes stage t's start before rk reaches it): ready
  ** once parked there. */
  for (int l = 0; l < c->lanes; l++)
    if (l != lane && !(c->ranks[l * c->p + r].flags & COLL_PARKED)) {
      rk->flags |= COLL_PARKED;
      return 0;
    }
  for (int l = 0; l < c->lanes; l++) c->ranks[l * c->p + r].stage = (uint8_t)t;
  for (int l = 0; l < c->lanes; l++) {
    coll_rank *sib = &c->ranks[l * c->p + r];
    if (l == lane) continue;
    sib->flags &= (uint8_t)~COLL_PARKED;
    enter_round(sib);
  }
  return 1;
}

/* Is rk in `round`, with its transfers of it startable? */
static int in_round(const coll_rank *rk, int32_t round) {
  return rk->round == round && !(rk->flags & COLL_PARKED);
}

/* Enters rk's current round, passing through empty ones, and starts the transfers whose other
** end is already there. */
static void enter_round(coll_rank *rk) {
  sim_collective *c = rk->coll;
  int r = (int)(rk - c->ranks);
  coll_plan pl;
  for (;;) {
    if (rk->round == c->rounds) {
      if (++c->finished == c->p * c->lanes) finish(c);
      return;
    }
    if (!stage_barrier(rk)) return;
    sim__coll_plan(c, r, rk->round, &pl);
    if (pl.nsend + pl.nrecv > 0) break;
    rk->round++;
  }
  rk->pending = (uint8_t)(pl.nsend + pl.nrecv);
  rk->started = 0;
  rk->flags = 0;
  for (int i = 0; i < pl.nrecv; i++)
    if (pl.recv[i].mode == COLL_REDUCE_AT_END) rk->flags |= COLL_AT_END;
  for (int i = 0; i < pl.nsend; i++) {
    const coll_xfer *x = &pl.send[i];
    if (in_round(&c->ranks[x->peer], rk->round)) start_send(c, r, x->peer, x->tag, x->seg);
  }
  for (int i = 0; i < pl.nrecv; i++) {
    const coll_xfer *x = &pl.recv[i];
    coll_rank *from = &c->ranks[x->peer];
    if (in_round(from, rk->round) && !(from->started & (1u << x->tag)))
      start_send(c, x->peer, r, x->tag, x->seg);
  }
}

/* An NCCL ring rank's wait before its round is over: it enters the round. */
static void round_wait_done(sim_engine *e, void *arg) {
  (void)e;
  coll_rank *rk = arg;
  sim_collective *c = rk->coll;
  c->waits[rk - c->ranks] = (sim_event_handle){0, 0};
  rk->flags &= (uint8_t)~COLL_PARKED;
  enter_round(rk);
}

/* One of rk's transfers or reductions of this round is done; the last one moves it on. */
static inline void step_done(coll_rank *rk) {
  assert(rk->pending > 0);
  if (--rk->pending > 0) return;
  if (rk->flags & COLL_AT_END) {
    sim_collective *c = rk->coll;
    int r = (int)(rk - c->ranks);
    coll_plan pl;
    sim__coll_plan(c, r, rk->round, &pl);
    for (int i = 0; i < pl.nrecv; i++)
      if (pl.recv[i].mode == COLL_REDUCE_AT_END) apply(c, pl.recv[i].peer, r, &pl.recv[i]);
  }
  rk->round++;
  sim_collective *c = rk->coll;
  if (c->round_delay > 0 && rk->round < c->rounds) { /* parked: no peer starts with it meanwhile */
    rk->flags |= COLL_PARKED;
    c->waits[rk - c->ranks] = sim_schedule(c->engine, c->engine->now + c->round_delay, round_wait_done, rk);
    return;
  }
  enter_round(rk);
}

static void reduce_done(sim_engine *e, sim_activity *act, void *arg) {
  (void)e;
  coll_rank *rk = arg;
  sim_activity **reduce = &rk->coll->reduces[(rk - rk->coll->ranks) * COLL_MAX_XFERS];
  int i = 0;
  while (reduce[i] != act) i++;
  reduce[i] = NULL;
  step_done(rk);
}

/* Does x's receiver v charge a reduction on its cpu? */
static int charges_cpu(const sim_collective *c, int v, const coll_xfer *x) {
  return c->cpus != NULL && c->cpus[rank_of(c, v)] != NULL &&
         (x->mode == COLL_REDUCE || x->mode == COLL_REDUCE_AT_END);
}

static void send_done(sim_engine *e, sim_activity *act, void *arg) {
  coll_rank *s = arg;
  sim_collective *c = s->coll;
  int tag = 0;
  while (s->send[tag] != act) tag++;
  s->send[tag] = NULL;
  int from = (int)(s - c->ranks), to = s->to[tag];
  coll_rank *rk = &c->ranks[to];
  assert(rk->round == s->round); /* the receiver cannot move on without this transfer */
  /* Both ends may move on below; the sender first, as the transfer is its own. */
  int rto = rank_of(c, to);
  if (c->bufs[rto] == NULL && (c->cpus == NULL || c->cpus[rto] == NULL)) { /* timing alone */
    step_done(s);
    step_done(rk);
    return;
  }
  coll_plan pl;
  sim__coll_plan(c, to, rk->round, &pl);
  int i = 0;
  while (pl.recv[i].peer != from || pl.recv[i].tag != tag) i++;
  const coll_xfer *x = &pl.recv[i];
  if (x->mode != COLL_REDUCE_AT_END) apply(c, from, to, x);
  step_done(s);
  if (charges_cpu(c, to, x)) {
    sim_activity **reduce = &c->reduces[to * COLL_MAX_XFERS + i];
    *reduce = sim_exec_start(e, c->cpus[rto], (double)coll_seg_floats(c, x->seg));
    sim_activity_on_done(*reduce, reduce_done, rk);
  } else {
    step_done(rk);
  }
}

/* A torus run's alpha and beta per axis longer than 1: the route from rank 0 to its + neighbour
** on the axis (the sum of its latencies, its slowest link), which the choice of lanes needs. */
static void measure_axes(sim_collective *c) {
  for (int a = 0, below = 1; a < c->ndims; below *= c->dims[a], a++) {
    if (c->dims[a] == 1) continue;
    sim_time latency;
    c->beta[a] = route_rate(c, find_route(c, 0, below), &latency);
    c->alpha[a] = sim_time_to_s(latency);
  }
}

/* NCCL without a machine: one node, the bandwidth of the route from rank 0 to rank 1. */
static void measure_nccl_node(sim_collective *c) {
  sim_time latency;
  double bw = route_rate(c, find_route(c, 0, 1), &latency);
  c->nccl_system = (sim_nccl_system){c->p, bw, bw, 1, 0, 0, 0, 0, SIM_NCCL_ARCH_NONE, 0};
}

/* Every rank enters round 0 in turn (after the start delay, for NCCL: the ranks not yet in are
** parked, so, as without a delay, a transfer starts once both its ends have entered). */
static void enter_first_rounds(sim_collective *c) {
  for (int v = 0; v < c->p * c->lanes; v++) {
    c->ranks[v].round = 0;
    c->ranks[v].flags = 0;
    enter_round(&c->ranks[v]);
  }
}

static int fast_begin(sim_collective *c);

/* The ranks enter round 0 now: in closed form if the run can go so, else transfer by transfer. */
static void enter(sim_collective *c) {
  c->entered = c->engine->now;
  if (!fast_begin(c)) enter_first_rounds(c);
}

static void start_wait_done(sim_engine *e, void *arg) {
  (void)e;
  sim_collective *c = arg;
  c->start_wait = (sim_event_handle){0, 0};
  for (int v = 0; v < c->p * c->lanes; v++) { /* unparked: as a run without a wait begins */
    c->ranks[v].round = -1;
    c->ranks[v].flags = 0;
  }
  enter(c);
}

/* The run's plan and its chunk split for c->op, c->algo and c->count (all ranks' buffers in
** c->bufs), and the originals all_to_all and ppermute read. */
static void setup(sim_collective *c) {
  if (c->algo == SIM_ALGO_TORUS) measure_axes(c);
  if (c->algo == SIM_ALGO_NCCL && !c->has_nccl_system) measure_nccl_node(c);
  sim__coll_prepare(c);
  assert(c->lanes <= c->cap_lanes); /* set_torus made room */
  c->chunk_base = c->count / (size_t)c->nchunks;
  c->chunk_extra = c->count % (size_t)c->nchunks;
  int numerics = c->bufs[0] != NULL;
  for (int r = 0; r < c->p; r++)
    assert((c->bufs[r] == NULL) == !numerics); /* all numeric or all shapes */
  if (numerics && (c->op == SIM_COLL_ALL_TO_ALL || c->op == SIM_COLL_PPERMUTE) && c->count > 0) {
    size_t need = (size_t)c->p * c->count;
    sim__grow(&c->originals, &c->cap_originals, need, sizeof *c->originals);
    for (int r = 0; r < c->p; r++)
      memcpy(c->originals + (size_t)r * c->count, c->bufs[r], c->count * sizeof(float));
  }
}

void sim__coll_setup_shapes(sim_collective *c, sim_coll_op op, sim_algo algo, size_t count) {
  assert(!c->running && c->arrived == 0);
  c->op = op;
  c->algo = algo;
  c->root = 0;
  c->count = count;
  for (int r = 0; r < c->p; r++) c->bufs[r] = NULL;
  setup(c);
}

size_t sim__coll_route(sim_collective *c, int v, int w, sim_time *latency, double *rate) {
  size_t hops = find_route(c, rank_of(c, v), rank_of(c, w));
  *rate = route_rate(c, hops, latency);
  return hops;
}

/* All ranks are in: sets up the run and, after its start delay, enters round 0 everywhere (or
** runs it in closed form: a start delay alone keeps it, the closed form starting when it ends). */
static void begin(sim_collective *c) {
  c->running = 1;
  c->started = c->engine->now;
  setup(c);
  if (c->round_delay > 0 && c->waits == NULL)
    c->waits = base_xcalloc((size_t)c->p * (size_t)c->cap_lanes, sizeof *c->waits);
  sim_time wait = c->start_delay + c->round_delay;
  if (wait == 0) {
    enter(c);
    return;
  }
  for (int v = 0; v < c->p * c->lanes; v++) { /* parked: none starts a transfer before the others */
    c->ranks[v].round = 0;
    c->ranks[v].flags = COLL_PARKED;
  }
  c->start_wait = sim_schedule(c->engine, c->engine->now + wait, start_wait_done, c);
}

/* ---- closed form ------------------------------------------------------------------------------ */

/* A run on shapes alone with no round delays, whose every transfer would be solo (engine.c
** invariant 7: links idle, no two transfers on a link at once), is worked out whole when its
** ranks enter round 0 (c->entered: after its start delay, which holds nothing, the fixed cost of
** a TPU's collectives among it, so that cost keeps the closed form),
** without an activity or event per transfer: a rank enters round k+1 at the latest end of its
** round-k transfers and reductions, a transfer starts when both its ends are in its round and
** ends at start + route latency + sim__duration_ps(bytes, slowest link) (the solo numbers), and a
** torus lane enters its next stage when its rank's last lane arrives there. The run holds its
** links and rank cpus (engine.c invariant 11) and finishes by one event at the latest end.
** Anything that touches a held resource turns the run back into what the transfer-by-transfer
** run would be at that moment (fast_fall_back): the same pass again, cut at now, sets every
** rank's round and starts its transfers and reductions in flight from their own start times. Of
** events at the cut's picosecond, only the rounds' entry counts as happened: a transfer or
** reduction due now is still in flight, as its batch or event would be if the touching event
** came first.
**
** Reductions charged on rank cpus (a training program's gradients): the receive's exec starts
** on the receiver's cpu when its transfer ends. The pass takes every lane's round j together,
** then each cpu's reductions of that round in time order, and shares the cpu among those in
** flight exactly as maxmin.c shares a lone cpu (fast_share): each of n gets capacity / n; at every
** picosecond where one starts or ends, the others are advanced by sim__action_moved and given
** now + sim__duration_ps(remaining, new share). Which of several events at one picosecond comes
** first changes no time: advancing by zero time moves nothing, and every event there changes n,
** so the last one reschedules all from the same remaining. A cpu's reductions of one round must
** all end before its next round's first starts (checked; else no closed form), which keeps the
** round-by-round order the time order on every cpu.
**
** A torus whose ranks all keep one timeline (no rank cpus) is planned per (lane, round) instead
** (fast_plan_uniform), to the general pass's bits; the restore is always the general pass, and
** finds each held resource's slot through its plan's stamp in res_slot (held_slot), so a plan
** may list them in any order. */

#define FAST_MAX_HOPS 4
#define FAST_PREFETCH 16 /* links read ahead by the uniform shortcut */

/* A virtual rank's route under one tag, kept while the peer stays the same. */
typedef struct coll_route {
  int32_t peer;              /* the receiver, -1 before the first */
  uint32_t hops;             /* links on the route */
  sim_time latency;          /* their latency */
  double rate;               /* their slowest capacity */
  double bytes;              /* the last transfer's bytes */
  sim_time d;                /* their duration at rate */
  sim_link *hop[FAST_MAX_HOPS]; /* the links */
  uint32_t slot[FAST_MAX_HOPS]; /* their slots in c->held */
} coll_route;

/* A send of the round, noted for the reduction its receiver may charge on its cpu. */
typedef struct coll_sent {
  sim_time end;              /* when it ends */
  double floats;             /* its segment's floats: the reduction's work */
} coll_sent;

/* A reducing receive of the round, noted for its receiver's cpu. */
typedef struct coll_recv {
  int32_t from;              /* the sending virtual rank */
  uint8_t tag;               /* the sender's tag */
  uint8_t index;             /* its place in the receiver's plan (c->reduces) */
} coll_recv;

/* One reduction on a cpu, as maxmin.c would carry it. */
typedef struct coll_reduction {
  sim_time start;            /* its transfer's end */
  sim_time last;             /* when remaining was last brought up to date */
  sim_time finish;           /* its completion as now scheduled */
  double flops;              /* its work */
  double remaining;          /* work left as of last */
  double rate;               /* its share of the cpu */
  int32_t v;                 /* the receiver */
  uint8_t index;             /* its place in the receiver's plan */
} coll_reduction;

/* Could this run go in closed form at all? (Its links and cpus are checked by the pass.) */
static int fast_eligible(const sim_collective *c) {
  const sim_engine *e = c->engine;
  return !e->solo_off && !e->trace.enabled && c->bufs[0] == NULL && c->round_delay == 0 && c->count > 0;
}

/* A new planning pass: res_slot entries stamped with it are this run's held resources. */
static void fast_plan_start(sim_collective *c) {
  sim_engine *e = c->engine;
  size_t ids = e->solver.next_resource_id;
  if (ids > e->cap_res_slot) {
    size_t old = e->cap_res_slot;
    sim__grow(&e->res_slot, &e->cap_res_slot, ids, sizeof *e->res_slot);
    memset(e->res_slot + old, 0, (e->cap_res_slot - old) * sizeof *e->res_slot);
  }
  c->plan_pass = ++e->slot_pass;
  c->n_held = 0;
}

/* Room for n held resources. */
static void held_reserve(sim_collective *c, size_t n) {
  if (n <= c->cap_held) return;
  size_t cap = c->cap_held;
  sim__grow(&c->held, &cap, n, sizeof *c->held);
  c->held_done = base_xrealloc(c->held_done, cap * sizeof *c->held_done);
  c->held_until = base_xrealloc(c->held_until, cap * sizeof *c->held_until);
  c->cap_held = cap;
}

/* The slot of resource r (a link, or a rank cpu) in c->held: a planning pass gives the next free
** one at its first use (-1 when it finds r busy or without capacity); a restore finds the one its
** plan gave, through the plan's stamp in res_slot, whatever order it meets them in (the uniform
** shortcut's plan orders links by axis). No other pass overwrites those entries while the run
** holds them: a planning pass stamps a resource only once it has found it idle, and a held one
** is not. */
static long held_slot(sim_collective *c, sim_resource *r, int plan) {
  sim_engine *e = c->engine;
  uint64_t *m = &e->res_slot[r->id];
  if (!plan) {
    assert((uint32_t)(*m >> 32) == c->plan_pass && c->held[(uint32_t)*m] == r);
    return (long)(uint32_t)*m;
  }
  if ((uint32_t)(*m >> 32) == c->plan_pass) return (long)(uint32_t)*m;
  size_t slot = c->n_held;
  if (r->n_uses > 0 || r->solo != NULL || !(r->capacity > 0)) return -1;
  held_reserve(c, slot + 1);
  c->held[slot] = r;
  c->n_held = slot + 1;
  c->held_done[slot] = r->done;
  c->held_until[slot] = -1;
  *m = ((uint64_t)c->plan_pass << 32) | slot;
  return (long)slot;
}

/* The route of v's send under `tag` to w, refreshed (its links given slots) when the peer
** changes; NULL when it cannot go in closed form (too long, a link busy or without capacity). */
static coll_route *fast_route(sim_collective *c, int v, int w, int tag, int plan) {
  coll_route *fr = &c->fast_routes[(size_t)v * COLL_MAX_XFERS + (size_t)tag];
  if (fr->peer == w) return fr;
  size_t hops = find_route(c, rank_of(c, v), rank_of(c, w));
  if (hops == 0 || hops > FAST_MAX_HOPS) return NULL;
  fr->peer = w;
  fr->hops = (uint32_t)hops;
  fr->rate = route_rate(c, hops, &fr->latency);
  fr->bytes = -1;
  for (size_t h = 0; h < hops; h++) {
    long slot = held_slot(c, &c->hops[h]->res, plan);
    if (slot < 0) return NULL;
    fr->slot[h] = (uint32_t)slot;
    fr->hop[h] = c->hops[h];
  }
  return fr->rate > 0 ? fr : NULL;
}

/* Has what happens at `at` happened by now, in a restore? (Of now, only the rounds' entry.) */
static int happened(const sim_collective *c, sim_time at) {
  return at < c->engine->now || at == c->entered;
}

/* One transfer v -> x->peer of a round both enter at cur[], due at `end`: plans it (0, or -1
** when a link is busy then) or, in a restore, counts it in the pending of each end in the round
** and starts it if in flight. */
static int fast_transfer(sim_collective *c, int v, const coll_xfer *x, coll_route *fr, double bytes,
                         const sim_time *cur, sim_time end, int plan) {
  sim_time start = cur[v] > cur[x->peer] ? cur[v] : cur[x->peer];
  int done = plan || happened(c, end);
  /* An empty segment (more ranks than floats) is its route's latency alone: nothing flows. */
  for (uint32_t h = 0; bytes > 0 && h < fr->hops; h++) {
    uint32_t slot = fr->slot[h];
    /* Bytes of an earlier transfer still flowing when this one's start: they would share the
    ** link. (Flows that only meet at a picosecond share nothing: no time passes between.) */
    if (plan && c->held_until[slot] > start + fr->latency) return -1;
    c->held_until[slot] = end;
    if (done) c->held_done[slot] += bytes;
  }
  if (plan || done) return 0;
  coll_rank *s = &c->ranks[v], *rk = &c->ranks[x->peer];
  if (happened(c, cur[v])) s->pending++;
  if (happened(c, cur[x->peer])) rk->pending++;
  if (!happened(c, start)) return 0;
  sim_activity *a = sim__comm_resume(c->engine, fr->hop, fr->hops, bytes, start);
  s->send[x->tag] = a;
  s->to[x->tag] = x->peer;
  s->started |= (uint8_t)(1u << x->tag);
  sim_activity_on_done(a, send_done, s);
  return 0;
}

/* A restore's rank v at the start of round k (entered by now): its round, nothing pending yet. */
static void fast_enter(sim_collective *c, int v, int k, int stage) {
  coll_rank *rk = &c->ranks[v];
  rk->round = k;
  rk->pending = 0;
  rk->started = 0;
  rk->flags = 0;
  rk->stage = (uint8_t)stage;
}

/* When a transfer of `floats` starting at `start` ends, over a route of `latency` and `rate`
** (*bytes its bytes; *last and *d the route's last bytes and their duration, kept: consecutive
** rounds mostly move the same). -1 when it cannot be planned. */
static int fast_end(const sim_collective *c, size_t floats, sim_time start, sim_time latency, double rate,
                    double *last, sim_time *d, double *bytes, sim_time *end) {
  *bytes = (double)(floats * sizeof(float)) * c->wire;
  if (!(*bytes >= 0)) return -1;
  if (*bytes != *last) {
    *d = sim__duration_ps(*bytes, rate);
    *last = *bytes;
  }
  if (*d == SIM_TIME_NEVER || *d > SIM_TIME_NEVER - start - latency) return -1;
  *end = start + latency + *d;
  return 0;
}

/* Round k of lane l from entries cur[] into nxt[]: its transfers (and with cpus, each send's end
** in c->fast_sent and each reducing receive in c->fast_recv). -1 when it cannot be planned. */
static int fast_round(sim_collective *c, int l, int k, int stage, const sim_time *cur, sim_time *nxt, int plan) {
  int p = c->p;
  coll_plan pl;
  for (int v = l * p; v < (l + 1) * p; v++) {
    nxt[v] = cur[v];
    if (!plan && happened(c, cur[v])) fast_enter(c, v, k, stage);
  }
  for (int v = l * p; v < (l + 1) * p; v++) {
    sim__coll_plan(c, v, k, &pl);
    for (int i = 0; i < pl.nsend; i++) {
      const coll_xfer *x = &pl.send[i];
      int w = x->peer;
      coll_route *fr = fast_route(c, v, w, x->tag, plan);
      if (fr == NULL) return -1;
      size_t floats = coll_seg_floats(c, x->seg);
      sim_time start = cur[v] > cur[w] ? cur[v] : cur[w], end;
      double bytes;
      if (fast_end(c, floats, start, fr->latency, fr->rate, &fr->bytes, &fr->d, &bytes, &end) != 0) return -1;
      if (fast_transfer(c, v, x, fr, bytes, cur, end, plan) != 0) return -1;
      if (end > nxt[v]) nxt[v] = end;
      if (end > nxt[w]) nxt[w] = end;
      if (c->cpus != NULL) c->fast_sent[(size_t)v * COLL_MAX_XFERS + (size_t)x->tag] = (coll_sent){end, (double)floats};
    }
    if (c->cpus == NULL) continue;
    int n = 0;
    for (int i = 0; i < pl.nrecv; i++) {
      const coll_xfer *x = &pl.recv[i];
      if (!charges_cpu(c, v, x)) continue;
      c->fast_recv[(size_t)v * COLL_MAX_XFERS + (size_t)n++] = (coll_recv){x->peer, (uint8_t)x->tag, (uint8_t)i};
    }
    c->fast_nrecv[v] = (uint8_t)n;
  }
  return 0;
}

/* A link of a ring round: the one-link route from a rank to its neighbour on an axis. */
typedef struct coll_link {
  sim_time latency;          /* its latency */
  double rate;               /* its capacity */
  double bytes;              /* the last transfer's bytes */
  sim_time d;                /* their duration at rate */
  uint32_t slot;             /* its slot in c->held */
} coll_link;

/* a mod m for a in [-m, 2m): a ring's member and part indices. */
static int ring_wrap(int a, int m) { return a < 0 ? a + m : a >= m ? a - m : a; }

/* The ring rounds' links, when every axis longer than 1 wraps and is longer than 2 (a torus
** lane's every stage a ring, bidi_step) and every neighbour is one link away: 1; 0 when the
** rounds need the plans (fast_round); -1 when a link is busy or without capacity (the general
** pass, which meets every one of them in the rounds, declines then too). */
static int ring_links(sim_collective *c) {
  int p = c->p;
  if (c->algo != SIM_ALGO_TORUS || c->op == SIM_COLL_PPERMUTE || c->op == SIM_COLL_ALL_TO_ALL || c->uniform_off) return 0;
  for (int a = 0; a < c->ndims; a++)
    if (c->dims[a] > 1 && !(c->wraps[a] && c->dims[a] > 2)) return 0;
  size_t need = (size_t)c->ndims * 2 * (size_t)p;
  if (need > c->cap_ring_links) sim__grow(&c->ring_links, &c->cap_ring_links, need, sizeof *c->ring_links);
  need = (size_t)c->lanes * 2 * (size_t)p;
  if (need > c->cap_ring_parts) sim__grow(&c->ring_parts, &c->cap_ring_parts, need, sizeof *c->ring_parts);
  for (int l = 0; l < c->lanes; l++) c->ring_stage[l] = -1;
  for (int a = 0, below = 1; a < c->ndims; below *= c->dims[a], a++) {
    int m = c->dims[a];
    for (int r = 0; m > 1 && r < p; r++) {
      int x = r / below % m;
      for (int tag = 0; tag < 2; tag++) {
        int w = r + (ring_wrap(x + (tag ? -1 : 1), m) - x) * below;
        if (find_route(c, r, w) != 1) return 0;
        long slot = held_slot(c, &c->hops[0]->res, 1);
        coll_link *k = &c->ring_links[((size_t)a * 2 + (size_t)tag) * (size_t)p + (size_t)r];
        *k = (coll_link){.rate = sim_link_bandwidth(c->hops[0]), .bytes = -1, .slot = (uint32_t)slot};
        k->latency = sim_link_latency(c->hops[0]);
        if (slot < 0 || !(k->rate > 0)) return -1;
      }
    }
  }
  return 1;
}

/* Round k of lane l in a planning pass whose stages are all rings (ring_links): what fast_round
** plans, to the bit, from the stage's table of parts (sim__coll_stage_parts) and the links'
** table instead of a plan and a route per rank: the same transfers in the same order, each with
** the same arithmetic, the same held links' checks and sums, and with cpus the same sends and
** reducing receives noted for fast_reductions (a ring step's two receives reduce, from member
** x - 1 under tag 0 and x + 1 under tag 1, in that plan order). A v4 pod's all-reduce with its
** reductions on the chips (ResNet-50's gradients: uneven chunks, so every rank keeps its own
** timeline and the uniform shortcut declines) spent two thirds of its pass in those plans. */
static int fast_ring_round(sim_collective *c, int l, int k, const sim_time *cur, sim_time *nxt) {
  int p = c->p, lp = l * p, s = c->ring_stage[l] < 0 ? 0 : c->ring_stage[l];
  const coll_stage *st = c->stages[l];
  while (s + 1 < c->nstages && k >= st[s + 1].first) s++;
  size_t *parts = c->ring_parts + (size_t)lp * 2;
  if (s != c->ring_stage[l]) {
    sim__coll_stage_parts(c, l, s, 1, parts);
    sim__coll_stage_parts(c, l, s, 2, parts + p);
    c->ring_stage[l] = s;
  }
  st += s;
  int m = c->dims[st->axis], below = st->below, shift = st->reduce ? k - st->first + 1 : k - st->first;
  coll_link *links = c->ring_links + (size_t)st->axis * 2 * (size_t)p;
  for (int v = lp; v < lp + p; v++) nxt[v] = cur[v];
  for (int r = 0, x = 0, q = 0; r < p; r++) {
    int v = lp + r, ring = r - x * below; /* rank of member 0 */
    for (int tag = 0; tag < 2; tag++) {
      int dir = tag ? -1 : 1, w = lp + ring + ring_wrap(x + dir, m) * below;
      size_t floats = parts[(size_t)tag * (size_t)p + (size_t)(ring + ring_wrap(x - dir * shift, m) * below)];
      coll_link *lk = &links[(size_t)tag * (size_t)p + (size_t)r];
      sim_time start = cur[v] > cur[w] ? cur[v] : cur[w], end;
      double bytes;
      if (fast_end(c, floats, start, lk->latency, lk->rate, &lk->bytes, &lk->d, &bytes, &end) != 0) return -1;
      /* fast_transfer's sum. Not its check that the link's last transfer is through: a link
      ** carries its rank's sends one way along one axis, one a round, and the rank starts
      ** none before its last round's (and, past a stage, its every lane's) have ended. */
      if (bytes > 0) c->held_done[lk->slot] += bytes;
      if (end > nxt[v]) nxt[v] = end;
      if (end > nxt[w]) nxt[w] = end;
      if (c->cpus != NULL) c->fast_sent[(size_t)v * COLL_MAX_XFERS + (size_t)tag] = (coll_sent){end, (double)floats};
    }
    if (c->cpus != NULL) {
      coll_recv *in = &c->fast_recv[(size_t)v * COLL_MAX_XFERS];
      in[0] = (coll_recv){lp + ring + ring_wrap(x - 1, m) * below, 0, 0};
      in[1] = (coll_recv){lp + ring + ring_wrap(x + 1, m) * below, 1, 1};
      c->fast_nrecv[v] = st->reduce && c->cpus[r] != NULL ? 2 : 0;
    }
    if (++q == below) { /* the next rank's member index */
      q = 0;
      x = x + 1 == m ? 0 : x + 1;
    }
  }
  return 0;
}

/* A restore's reduction in flight at the cut: the exec the event-by-event run has now. */
static void fast_resume_reduction(sim_collective *c, sim_cpu *cpu, const coll_reduction *r) {
  sim_activity *a = sim__exec_resume(c->engine, cpu, r->flops, r->start, r->remaining, r->last, r->rate,
                                     r->finish);
  c->reduces[(size_t)r->v * COLL_MAX_XFERS + r->index] = a;
  c->ranks[r->v].pending++;
  sim_activity_on_done(a, reduce_done, &c->ranks[r->v]);
}

/* The n reductions of one round on `cpu` (held slot `slot`, sorted by start), shared as maxmin.c
** shares a lone cpu; each one's end is its r[i].finish. In a restore, those in flight at the cut
** are handed back. -1 when the first starts before the cpu's previous round is through. */
static int fast_share(sim_collective *c, sim_cpu *cpu, long slot, coll_reduction *r, int n, int plan) {
  if (plan && r[0].start < c->held_until[slot]) return -1;
  double capacity = cpu->res.capacity;
  coll_reduction *live[COLL_MAX_DIMS * COLL_MAX_XFERS]; /* in flight, in start order */
  int nlive = 0, next = 0, cut = plan;
  sim_time t = r[0].start;
  while (next < n || nlive > 0) {
    t = next < n ? r[next].start : SIM_TIME_NEVER;
    for (int i = 0; i < nlive; i++) t = live[i]->finish < t ? live[i]->finish : t;
    int counts = plan || happened(c, t);
    if (!cut && !counts) { /* the cut: these are in flight now */
      for (int i = 0; i < nlive; i++) fast_resume_reduction(c, cpu, live[i]);
      cut = 1;
    }
    int kept = 0;
    for (int i = 0; i < nlive; i++) { /* advanced to t; those due at t complete */
      coll_reduction *x = live[i];
      double moved = sim__action_moved(x->rate, x->remaining, x->last, t);
      x->remaining -= moved;
      x->last = t;
      if (counts) c->held_done[slot] += moved;
      if (x->finish == t) {
        if (counts) c->held_done[slot] += x->remaining;
        x->remaining = 0;
      } else {
        live[kept++] = x;
      }
    }
    nlive = kept;
    for (; next < n && r[next].start == t; next++) {
      r[next].remaining = r[next].flops;
      r[next].last = t;
      live[nlive++] = &r[next];
    }
    /* Every event at t changed n: all in flight are rescheduled from here. */
    double share = capacity / (double)nlive;
    for (int i = 0; i < nlive; i++) {
      coll_reduction *x = live[i];
      x->rate = share;
      sim_time d = sim__duration_ps(x->remaining, share);
      if (d == SIM_TIME_NEVER || d > SIM_TIME_NEVER - t) return -1;
      x->finish = t + d;
    }
  }
  c->held_until[slot] = t;
  return 0;
}

/* The virtual rank of lane l whose real rank is `rank` (the inverse of rank_of). */
static int virtual_of(const sim_collective *c, int rank, int l) {
  if (c->lanes == 1 || c->algo != SIM_ALGO_NCCL) return l * c->p + rank;
  int ppn = c->nccl_system.ranks_per_node, local = rank % ppn;
  return l * c->p + rank - local + ((local - l) % ppn + ppn) % ppn;
}

/* The reductions of the active lanes' current round (noted by fast_round), cpu by cpu: each
** receiver's next entry in nxt[] waits for its reductions' ends too. -1 when they cannot be
** planned. */
static int fast_reductions(sim_collective *c, const int *active, sim_time *nxt, int plan) {
  coll_reduction r[COLL_MAX_DIMS * COLL_MAX_XFERS];
  for (int rank = 0; rank < c->p; rank++) {
    sim_cpu *cpu = c->cpus[rank];
    /* A pod's cpus are out of the cache, and fast_share reads each one's capacity: fetched
    ** ahead, as fast_plan_uniform fetches its links. */
    if (rank + FAST_PREFETCH < c->p && c->cpus[rank + FAST_PREFETCH] != NULL)
      __builtin_prefetch(&c->cpus[rank + FAST_PREFETCH]->res.capacity);
    if (cpu == NULL) continue;
    int n = 0;
    for (int l = 0; l < c->lanes; l++) {
      if (!active[l]) continue;
      int v = virtual_of(c, rank, l);
      const coll_recv *in = &c->fast_recv[(size_t)v * COLL_MAX_XFERS];
      for (int i = 0; i < c->fast_nrecv[v]; i++) {
        const coll_sent *sent = &c->fast_sent[(size_t)in[i].from * COLL_MAX_XFERS + in[i].tag];
        int at = n++;
        /* By start, then by receiver and place: the order the execs would start in. */
        while (at > 0 && r[at - 1].start > sent->end) {
          r[at] = r[at - 1];
          at--;
        }
        r[at] = (coll_reduction){.start = sent->end, .flops = sent->floats, .v = v, .index = in[i].index};
      }
    }
    if (n == 0) continue;
    long slot = c->fast_cpu_slot[rank];
    if (slot < 0) slot = c->fast_cpu_slot[rank] = held_slot(c, &cpu->res, plan);
    if (slot < 0 || fast_share(c, cpu, slot, r, n, plan) != 0) return -1;
    for (int i = 0; i < n; i++)
      if (r[i].finish > nxt[r[i].v]) nxt[r[i].v] = r[i].finish;
  }
  return 0;
}

/* The whole run from c->entered: plans it (returns its end, or -1 when it cannot go in closed
** form) or, with plan 0, restores it as of now (engine.c invariant 11). */
static sim_time fast_pass(sim_collective *c, int plan) {
  int p = c->p, vs = p * c->lanes;
  if ((size_t)vs > c->cap_fast) {
    c->fast_at = base_xrealloc(c->fast_at, 2 * (size_t)vs * sizeof *c->fast_at);
    c->fast_routes = base_xrealloc(c->fast_routes, (size_t)vs * COLL_MAX_XFERS * sizeof *c->fast_routes);
    if (c->cpus != NULL) {
      c->fast_sent = base_xrealloc(c->fast_sent, (size_t)vs * COLL_MAX_XFERS * sizeof *c->fast_sent);
      c->fast_recv = base_xrealloc(c->fast_recv, (size_t)vs * COLL_MAX_XFERS * sizeof *c->fast_recv);
      c->fast_nrecv = base_xrealloc(c->fast_nrecv, (size_t)vs * sizeof *c->fast_nrecv);
      c->fast_cpu_slot = base_xrealloc(c->fast_cpu_slot, (size_t)p * sizeof *c->fast_cpu_slot);
    }
    c->cap_fast = (size_t)vs;
  }
  if (plan) fast_plan_start(c);
  for (size_t i = 0; !plan && i < c->n_held; i++) { /* the resources as the plan found them */
    c->held_done[i] = c->held[i]->done;
    c->held_until[i] = -1;
  }
  sim_time *cur = c->fast_at, *nxt = c->fast_at + vs;
  for (int v = 0; v < vs; v++) cur[v] = c->entered;
  for (size_t i = 0; i < (size_t)vs * COLL_MAX_XFERS; i++) c->fast_routes[i].peer = -1;
  for (int r = 0; c->cpus != NULL && r < p; r++) c->fast_cpu_slot[r] = -1;
  int torus = c->algo == SIM_ALGO_TORUS && c->lanes > 1, segs = torus ? c->nstages : 1;
  int rings = plan ? ring_links(c) : 0;
  if (rings < 0) return -1;
  if (plan) c->ring_rounds = 0;
  for (int t = 0; t < segs; t++) {
    for (int r = 0; t > 0 && r < p; r++) { /* stage_barrier: the lanes go on with the last */
      sim_time m = cur[r];
      for (int l = 1; l < c->lanes; l++) m = cur[l * p + r] > m ? cur[l * p + r] : m;
      for (int l = 0; l < c->lanes; l++) {
        int v = l * p + r;
        if (!plan && happened(c, cur[v]) && !happened(c, m)) { /* parked at stage t's start */
          fast_enter(c, v, c->stages[l][t].first, t - 1);
          c->ranks[v].flags = COLL_PARKED;
        }
        cur[v] = m;
      }
    }
    /* The lanes' rounds of the stage side by side: round j of each, then their reductions. */
    int lo[COLL_MAX_DIMS], hi[COLL_MAX_DIMS], active[COLL_MAX_DIMS], longest = 0;
    for (int l = 0; l < c->lanes; l++) {
      lo[l] = torus ? c->stages[l][t].first : 0;
      hi[l] = torus && t + 1 < segs ? c->stages[l][t + 1].first : c->rounds;
      if (hi[l] - lo[l] > longest) longest = hi[l] - lo[l];
    }
    for (int j = 0; j < longest; j++) {
      for (int l = 0; l < c->lanes; l++) {
        active[l] = lo[l] + j < hi[l];
        if (!active[l]) continue;
        c->ring_rounds += rings;
        if ((rings ? fast_ring_round(c, l, lo[l] + j, cur, nxt) : fast_round(c, l, lo[l] + j, torus ? t : 0, cur, nxt, plan)) != 0)
          return -1;
      }
      if (c->cpus != NULL && fast_reductions(c, active, nxt, plan) != 0) return -1;
      for (int l = 0; l < c->lanes; l++)
        if (active[l]) memcpy(cur + l * p, nxt + l * p, (size_t)p * sizeof *cur);
    }
  }
  sim_time end = c->entered;
  for (int v = 0; v < vs; v++) {
    if (cur[v] > end) end = cur[v];
    if (!plan && happened(c, cur[v])) {
      c->ranks[v].round = c->rounds;
      c->finished++;
    }
  }
  return end;
}

/* The uniform torus (issue 16: one 4096-chip pod step in under 10 ms; the general pass plans a
** v4-8192 all-reduce's 1.1 M transfers one by one). On a torus whose active axes all wrap, every
** rank of a lane sends the same kinds of segment (one per direction) to the same neighbours (two,
** one on an axis of length 2) in every round of every stage on an axis, whichever the lane and
** stage. If every such route is one idle link, no link on two routes, all of one latency and
** capacity, and every rank's round ends at one time, then every virtual rank of a lane keeps one
** timeline: the rounds' entries are worked out once per (lane, round), the stage barriers once
** per stage. The round's end: its segments have chunks of chunk_base or chunk_base + 1 floats,
** so each kind's bytes lie between two bounds, and sim__duration_ps is monotone; every rank has
** one transfer of each kind, so if one kind's bounds both give the longest duration of all, every
** rank's round ends then (uneven counts: when the rounding agrees, or when the kind whose bytes
** differ is the shorter, as a share's second half is); else the shortcut declines.
** A link's held_done is its done plus its transfers' bytes in time order; those are whole
** numbers, so the sum is exact in any order while below 2^53 (checked, as is that done is whole):
** every link of one (axis, kind) is charged a round's bytes at once when they are the same for
** all, else each its rank's sum over the stage (sim__coll_stage_sends: a ring stage sends all its
** ring's parts but one). The plan is then the general pass's to the bit (end, held links,
** held_done); only the slots' order differs, which the restore looks up (held_slot). Returns the
** end, or -1: declined, the general pass plans. */
static sim_time fast_plan_uniform(sim_collective *c) {
  int p = c->p, lanes = c->lanes, nstages = c->nstages;
  if (c->algo != SIM_ALGO_TORUS || c->op == SIM_COLL_ALL_TO_ALL || c->cpus != NULL || c->wire != 1 ||
      c->uniform_off)
    return -1; /* the all-to-all's stages are not rings (collective_a2a.c) */
  for (int a = 0; a < c->ndims; a++)
    if (c->dims[a] > 1 && !c->wraps[a]) return -1;
  fast_plan_start(c);
  /* The links: axis a's in slots base[a] + r * sends[a] + i, rank r's send i. */
  size_t base[COLL_MAX_DIMS] = {0};
  int sends[COLL_MAX_DIMS] = {0};
  sim_time latency = 0;
  double rate = 0;
  coll_plan pl;
  for (int t = 0; t < nstages; t++)
    for (int l = 0; l < lanes; l++) {
      const coll_stage *st = &c->stages[l][t];
      int a = st->axis;
      if (sends[a] > 0) continue;
      base[a] = c->n_held;
      for (int r = 0; r < p; r++) { /* the routes first: the route fn gives links unread */
        sim__coll_plan(c, l * p + r, st->first, &pl);
        if (r == 0) sends[a] = pl.nsend;
        if (pl.nsend == 0 || pl.nsend != sends[a]) return -1;
        size_t at = base[a] + (size_t)r * (size_t)sends[a];
        held_reserve(c, at + (size_t)sends[a]);
        for (int i = 0; i < pl.nsend; i++) {
          if (find_route(c, rank_of(c, l * p + r), rank_of(c, pl.send[i].peer)) != 1) return -1;
          c->held[at + (size_t)i] = &c->hops[0]->res;
        }
      }
      /* Then the links, each fetched well before it is read: a pod's 24576 links are out of
      ** the cache, and read as the route fn named them the loop took 5.7 ms of a pod step;
      ** so, 3.7 ms, 2.2 of them the plans and routes above (one measurement, host shared). */
      size_t end = base[a] + (size_t)p * (size_t)sends[a];
      for (size_t j = base[a]; j < end; j++) {
        if (j + FAST_PREFETCH < end) __builtin_prefetch(c->held[j + FAST_PREFETCH]);
        sim_link *k = (sim_link *)c->held[j]; /* res is its first member */
        double done = k->res.done;
        if (j == 0) latency = k->latency, rate = k->res.capacity;
        if (held_slot(c, &k->res, 1) != (long)j || k->latency != latency || k->res.capacity != rate ||
            !(done >= 0 && done < 0x1p53 && (double)(int64_t)done == done))
          return -1;
      }
    }
  /* The timeline, lane by lane; bytes[a][i]: what each link of axis a's send i carries. */
  sim_time cur[COLL_MAX_DIMS];
  double bytes[COLL_MAX_DIMS][COLL_MAX_XFERS] = {{0}};
  for (int l = 0; l < lanes; l++) cur[l] = c->entered;
  for (int t = 0; t < nstages; t++) {
    sim_time m = cur[0];
    for (int l = 1; l < lanes; l++) m = cur[l] > m ? cur[l] : m;
    for (int l = 0; l < lanes; l++) cur[l] = m; /* stage_barrier */
    for (int l = 0; l < lanes; l++) {
      const coll_stage *st = &c->stages[l][t];
      int a = st->axis, hi = t + 1 < nstages ? st[1].first : c->rounds;
      double even[COLL_MAX_XFERS] = {0}; /* per send: the stage's bytes, where every rank's agree */
      unsigned uneven = 0;               /* sends whose bytes differ between ranks in some round */
      for (int k = st->first; k < hi; k++) {
        sim__coll_plan(c, l * p, k, &pl); /* rank 0's segments: the round's every rank's shape */
        if (pl.nsend != sends[a]) return -1;
        sim_time d = 0, sure = -1; /* the longest duration; the longest that every rank has */
        for (int i = 0; i < pl.nsend; i++) {
          coll_seg s = pl.send[i].seg;
          size_t n = (size_t)s.n * (size_t)s.n2, lo = n * coll_share_floats(c, s, c->chunk_base);
          size_t hi_floats = c->chunk_extra > 0 ? n * coll_share_floats(c, s, c->chunk_base + 1) : lo;
          double least = (double)(lo * sizeof(float)), most = (double)(hi_floats * sizeof(float));
          if (!(least > 0)) return -1;
          sim_time shortest = sim__duration_ps(least, rate), longest = sim__duration_ps(most, rate);
          if (longest == SIM_TIME_NEVER) return -1;
          d = longest > d ? longest : d;
          if (shortest == longest && longest > sure) sure = longest;
          if (least == most) even[i] += least;
          else uneven |= 1u << i;
        }
        if (sure != d) return -1; /* some rank's round may end sooner than another's */
        if (d > SIM_TIME_NEVER - cur[l] - latency) return -1;
        cur[l] += latency + d;
      }
      for (int i = 0; i < sends[a]; i++) {
        if (!(uneven >> i & 1u)) {
          bytes[a][i] += even[i];
          continue;
        }
        /* The links of a send whose bytes differ: each its rank's sum over the stage. */
        if ((size_t)p > c->cap_stage_floats) {
          c->stage_floats = base_xrealloc(c->stage_floats, 2 * (size_t)p * sizeof *c->stage_floats);
          c->cap_stage_floats = (size_t)p;
        }
        size_t *sums = c->stage_floats + p;
        sim__coll_stage_sends(c, l, t, i, c->stage_floats, sums);
        for (int r = 0; r < p; r++)
          c->held_done[base[a] + (size_t)r * (size_t)sends[a] + (size_t)i] += (double)(sums[r] * sizeof(float));
      }
    }
  }
  sim_time end = c->entered;
  for (int l = 0; l < lanes; l++) end = cur[l] > end ? cur[l] : end;
  for (int a = 0; a < c->ndims; a++)
    for (int r = 0; sends[a] > 0 && r < p; r++)
      for (int i = 0; i < sends[a]; i++) {
        double *done = &c->held_done[base[a] + (size_t)r * (size_t)sends[a] + (size_t)i];
        *done += bytes[a][i];
        if (!(*done < 0x1p53)) return -1; /* past exact sums */
      }
  return end;
}

/* Lets go of the held links and cpus and of the finish event. */
static void fast_unhold(sim_collective *c) {
  for (size_t i = 0; i < c->n_held; i++) c->held[i]->solo = NULL;
  sim__hold_free(c->hold);
  c->hold = NULL;
  sim_cancel(c->engine, c->fast_done);
  c->fast_done = (sim_event_handle){0, 0};
}

/* What the last pass delivered: on each link its bytes, in the order its transfers ended; on each
** cpu its flops. */
static void fast_deliver(sim_collective *c) {
  for (size_t i = 0; i < c->n_held; i++) c->held[i]->done = c->held_done[i];
}

/* Something touches a held link or cpu: the run goes on transfer by transfer from where it is now. */
static void fast_fall_back(sim_engine *e, sim_activity *hold, void *arg) {
  (void)e, (void)hold;
  sim_collective *c = arg;
  fast_unhold(c);
  fast_pass(c, 0);
  fast_deliver(c);
}

static void fast_finish(sim_engine *e, void *arg) {
  (void)e;
  sim_collective *c = arg;
  fast_unhold(c);
  fast_deliver(c);
  finish(c);
}

/* Begins the run in closed form if it can go so; returns 1 if it did. */
static int fast_begin(sim_collective *c) {
  if (!fast_eligible(c)) return 0;
  sim_time end = fast_plan_uniform(c);
  c->planned_uniform = end >= 0;
  if (end < 0) end = fast_pass(c, 1);
  /* No transfer at all (a ppermute's early outs): the rounds finish within begin, as they do. */
  if (end < 0 || c->n_held == 0) return 0;
  c->hold = sim__hold_new(c->engine, fast_fall_back, c);
  for (size_t i = 0; i < c->n_held; i++) c->held[i]->solo = c->hold;
  c->fast_done = sim_schedule(c->engine, end, fast_finish, c);
  return 1;
}

/* ---- blocking callers ------------------------------------------------------------------------ */

/* A rank's actor was killed while in the collective: the others fail rather than hang. */
static void withdraw_rank(sim_actor *victim, void *ctx) {
  coll_rank *rk = ctx;
  sim_collective *c = rk->coll;
  int rank = (int)(rk - c->ranks);
  /* Killed after the collective finished but before its wake-up ran: nothing left to undo. */
  if (c->actors[rank] != victim) return;
  if (!c->running) {
    c->actors[rank] = NULL;
    c->bufs[rank] = NULL;
    c->arrived--;
    return;
  }
  for (int r = 0; r < c->p; r++) {
    sim_actor *a = c->actors[r];
    if (a != NULL && a != victim) sim__actor_wake(a, SIM_FAILED);
  }
  reset(c);
}

int sim_collective_run(sim_actor *self, sim_collective *c, int rank, sim_coll_op op,
                       sim_algo algo, int root, float *buf, size_t count) {
  assert(rank >= 0 && rank < c->p);
  int rc = sim__coll_check(c, op, algo, root, count);
  if (rc != SIM_OK) return rc;
  if (c->running) return SIM_COLL_EBUSY;
  if (c->arrived > 0 && (op != c->op || algo != c->algo || root != c->root || count != c->count))
    return SIM_COLL_EINVAL;
  if (c->p == 1) {
    c->last_duration = 0;
    return SIM_OK;
  }
  coll_rank *rk = &c->ranks[rank];
  assert(c->actors[rank] == NULL);
  c->actors[rank] = self;
  c->bufs[rank] = buf;
  c->op = op;
  c->algo = algo;
  c->root = root;
  c->count = count;
  if (++c->arrived == c->p) begin(c);
  return sim__actor_block(self, withdraw_rank, rk);
}

int sim_allreduce(sim_actor *self, sim_collective *c, int rank, float *buf, size_t count,
                  sim_algo algo) {
  return sim_collective_run(self, c, rank, SIM_COLL_ALL_REDUCE, algo, 0, buf, count);
}

/* ---- engine-side start ------------------------------------------------------------------------ */

/* p == 1: nothing moves, but done still fires from an event, as documented. */
static void finish_event(sim_engine *e, void *arg) {
  (void)e;
  finish(arg);
}

int sim_collective_start(sim_collective *c, sim_coll_op op, sim_algo algo, int root,
                         float *const *bufs, size_t count, sim_collective_done_fn done, void *arg) {
  int rc = sim__coll_check(c, op, algo, root, count);
  if (rc != SIM_OK) return rc;
  if (c->running || c->arrived > 0) return SIM_COLL_EBUSY;
  c->op = op;
  c->algo = algo;
  c->root = root;
  c->count = count;
  c->done = done;
  c->done_arg = arg;
  for (int r = 0; r < c->p; r++) c->bufs[r] = bufs != NULL ? bufs[r] : NULL;
  if (c->p == 1) {
    c->running = 1;
    c->started = c->engine->now;
    sim_schedule(c->engine, c->engine->now, finish_event, c);
    return SIM_OK;
  }
  begin(c);
  return SIM_OK;
}

/* ---- values without time ---------------------------------------------------------------------- */

/* The run's rounds one after another, every virtual rank's receives of a round applied as the
** executor applies them: on arrival in plan order, then the COLL_REDUCE_AT_END ones at the round's
** end. The executor's result cannot depend on when within a round a transfer lands (a sender's
** segment is not written in the round it is read: the plans keep it so, collective.h), so this
** order gives its bits. */
int sim_collective_compute(sim_collective *c, sim_coll_op op, sim_algo algo, int root,
                           float *const *bufs, size_t count) {
  int rc = sim__coll_check(c, op, algo, root, count);
  if (rc != SIM_OK) return rc;
  if (c->running || c->arrived > 0) return SIM_COLL_EBUSY;
  if (c->p == 1) return SIM_OK;
  c->op = op;
  c->algo = algo;
  c->root = root;
  c->count = count;
  for (int r = 0; r < c->p; r++) c->bufs[r] = bufs[r];
  setup(c);
  coll_plan pl;
  for (int round = 0; round < c->rounds; round++)
    for (int at_end = 0; at_end < 2; at_end++)
      for (int v = 0; v < c->p * c->lanes; v++) {
        sim__coll_plan(c, v, round, &pl);
        for (int i = 0; i < pl.nrecv; i++)
          if ((pl.recv[i].mode == COLL_REDUCE_AT_END) == at_end) apply(c, pl.recv[i].peer, v, &pl.recv[i]);
      }
  for (int r = 0; r < c->p; r++) c->bufs[r] = NULL;
  return SIM_OK;
}
