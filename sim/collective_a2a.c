/*
** collective_a2a.c: the torus all-to-all (sim__coll_a2a_*), as a TPU's ICI runs it: every pair's
** data in flight at once over the torus's dimension-ordered routes, every axis's links busy.
**
** A TPU's all-to-all is the DMA engines of every chip sending each peer its block at once,
** routed along x, then y, then z; its cost is the torus's bisection (How to Scale Your Model,
** "collectives": on a bidirectional ring of n, B bytes a chip cost B n / (8 W)), not the 63
** rounds of MPICH's pairwise exchange (the ring's plan) that serialise a v4-128's. The executor
** runs a few transfers a rank per round (COLL_MAX_XFERS), so the same link traffic is planned
** as the dimension-wise all-to-all: one stage per axis longer than 1, in which a rank sends each
** member of its line along the axis the blocks bound for that member's coordinate, directly
** (the routes stay on the axis). A block travels the hops its dimension-ordered route would, one
** axis per stage, so every link carries the bytes the direct all-to-all puts on it. As the torus
** all-reduce, D axes make D lanes, each with its share of every block, lane l taking the axes
** in the order rotated by l: at every stage the lanes are on D different axes, and all the
** torus's links carry data at once (collectiveInt.h: a rank's lanes start each stage together).
**
** Inside a stage on an axis of m members the peers go out in order of distance, +1, -1, +2, -2,
** ..., COLL_MAX_XFERS a round: a ring (the axis wraps, m > 2) has m - 1 of them (the member m/2
** away of an even ring in two relayed halves, below), a line 2(m - 1) (a member skips those past
** its ends). The transfers of a round share the axis's links as the fabric shares them.
**
** Where the data sits (rank r, block position j; A the axes done so far): position j holds what
** source s sends destination d, where s agrees with r off A and with j on A, d with r on A and
** with j off A. At the start (A empty) that is r's own block j; at the end (A all) the block j
** sent to r, the op's result. A stage on axis a moves, from member x to member t, the positions
** whose coordinate a is t, into the receiver's positions whose coordinate a is x (its positions
** with its own coordinate stay). The receiver copies them from the collective's originals by
** that rule (COLL_COPY_ROUTED), so no rank overwrites what another still has to send, and the
** bits are the op's whatever the order of arrival.
*/
#include <assert.h>
#include <string.h>

#include "sim/collectiveInt.h"

/* A ring (the axis wraps, m > 2) of even m has no shorter way to the member m/2 away: the route
** fn's tie sends it all +, and the + links would carry 3/2 of the - links' bytes on m = 4. Half
** of that block goes each way instead, relayed by the neighbour on that side (a first hop, then
** m/2 - 1 more in a round of its own), so both directions carry the same bytes as the bisection
** bound has them. */
static int relayed(const sim_collective *c, int a) {
  return c->wraps[a] && c->dims[a] > 2 && c->dims[a] % 2 == 0;
}

/* Transfers a member of axis a starts in the stage's first part, in the order above (past the
** ends of a line included; a relayed ring's last two are the halves' first hops). */
static int peers(const sim_collective *c, int a) {
  int m = c->dims[a];
  return c->wraps[a] && m > 2 ? (relayed(c, a) ? m : m - 1) : 2 * (m - 1);
}

/* Rounds of a stage on axis a: the peers COLL_MAX_XFERS at a time, then the relays' second hops. */
static int stage_rounds(const sim_collective *c, int a) {
  return (peers(c, a) + COLL_MAX_XFERS - 1) / COLL_MAX_XFERS + relayed(c, a);
}

/* The i-th offset of that order: +1, -1, +2, -2, ... */
static int offset(int i) { return i % 2 == 0 ? i / 2 + 1 : -(i / 2 + 1); }

int sim__coll_a2a_prepare(sim_collective *c) {
  int axes[COLL_MAX_DIMS], below[COLL_MAX_DIMS], n = 0, rounds = 0;
  for (int a = 0, b = 1; a < c->ndims; b *= c->dims[a], a++) {
    below[a] = b;
    if (c->dims[a] > 1) axes[n++] = a;
  }
  c->lanes = n > 0 ? n : 1;
  c->nstages = n;
  for (int l = 0; l < n; l++) {
    unsigned fixed = 0;
    rounds = 0;
    for (int s = 0; s < n; s++) {
      int a = axes[(l + s) % n];
      c->stages[l][s] = (coll_stage){.first = rounds, .axis = a, .below = below[a], .fixed = fixed};
      fixed |= 1u << a;
      rounds += stage_rounds(c, a);
    }
  }
  return rounds;
}

/* Lane `lane`'s share (half `half` of it) of the blocks whose number has coordinate t on the
** axis of `below` and m members: `below` consecutive blocks, every below x m blocks. */
static coll_seg positions(const sim_collective *c, int below, int m, int t, int lane, int half) {
  return (coll_seg){t * below, 1, below, below * m, c->p / (below * m), (uint8_t)lane, (uint8_t)half};
}

static void add(coll_xfer *list, int *n, coll_xfer x) {
  assert(*n < COLL_MAX_XFERS);
  list[(*n)++] = x;
}

void sim__coll_a2a_plan(const sim_collective *c, int v, int round, coll_plan *pl) {
  int lane = v / c->p, r = v - lane * c->p, s = 0;
  const coll_stage *st = c->stages[lane];
  while (s + 1 < c->nstages && round >= st[s + 1].first) s++;
  st += s;
  int a = st->axis, m = c->dims[a], below = st->below, x = r / below % m, base = v - x * below;
  int ring = c->wraps[a] && m > 2, n = peers(c, a), k = round - st->first, h = m / 2;
  if (relayed(c, a) && k == stage_rounds(c, a) - 1) {
    /* The relays' second hops: what member x - 1 (+ side, half 1) or x + 1 (- side, half 2)
    ** took in for the member m/2 past it goes on m/2 - 1 further. */
    for (int dir = +1, half = 1; half <= 2; dir = -1, half++) {
      int to = (x + dir * (h - 1) + m) % m, from = (x - dir * (h - 1) + m) % m;
      add(pl->send, &pl->nsend, (coll_xfer){base + to * below, half - 1, COLL_COPY, positions(c, below, m, (x - dir + m) % m, lane, half)});
      add(pl->recv, &pl->nrecv, (coll_xfer){base + from * below, half - 1, COLL_COPY_ROUTED, positions(c, below, m, (x + h) % m, lane, half)});
    }
    return;
  }
  for (int i = k * COLL_MAX_XFERS; i < n && i < (k + 1) * COLL_MAX_XFERS; i++) {
    int relay = relayed(c, a) && i >= m - 2, off = relay ? (i == m - 2 ? 1 : -1) : offset(i);
    int to = x + off, from = x - off, tag = i % COLL_MAX_XFERS, half = relay ? i - (m - 3) : 0;
    coll_mode mode = relay ? COLL_RELAY : COLL_COPY_ROUTED;
    if (ring) {
      to = (to + m) % m;
      from = (from + m) % m;
    }
    /* A relay carries the blocks of the member m/2 away on its side. */
    int dest = relay ? (x + h) % m : to, src = relay ? (from + h) % m : from;
    if (to >= 0 && to < m)
      add(pl->send, &pl->nsend, (coll_xfer){base + to * below, tag, COLL_COPY, positions(c, below, m, dest, lane, half)});
    if (from >= 0 && from < m)
      add(pl->recv, &pl->nrecv, (coll_xfer){base + from * below, tag, mode, positions(c, below, m, src, lane, half)});
  }
}

void sim__coll_a2a_apply(const sim_collective *c, int to, const coll_xfer *x, float *dst) {
  int p = c->p, r = to % p, lane = x->seg.lane, s = 0;
  while (c->stages[lane][s].below != x->seg.n) s++; /* the stage of the axis the seg names */
  unsigned done = c->stages[lane][s].fixed | 1u << c->stages[lane][s].axis;
  size_t blk = c->count / (size_t)p, lanes = (size_t)c->lanes, share = blk / lanes;
  size_t off = (size_t)lane * share + ((size_t)lane < blk % lanes ? (size_t)lane : blk % lanes);
  size_t len = share + ((size_t)lane < blk % lanes ? 1 : 0);
  if (x->seg.half == 2) off += (len + 1) / 2;
  if (x->seg.half != 0) len = x->seg.half == 1 ? (len + 1) / 2 : len / 2;
  for (int row = 0; row < x->seg.n2; row++)
    for (int i = 0; i < x->seg.n; i++) {
      int j = x->seg.first + row * x->seg.stride2 + i * x->seg.stride, src = 0, dest = 0;
      for (int a = 0, b = 1; a < c->ndims; b *= c->dims[a], a++) {
        int cj = j / b % c->dims[a], cr = r / b % c->dims[a];
        src += (done >> a & 1u ? cj : cr) * b;
        dest += (done >> a & 1u ? cr : cj) * b;
      }
      memcpy(dst + (size_t)j * blk + off, c->originals + (size_t)src * c->count + (size_t)dest * blk + off,
             len * sizeof *dst);
    }
}
