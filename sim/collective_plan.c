/*
** collective_plan.c: what each algorithm moves in each round (sim__coll_check, _prepare, _plan).
** Pure functions of (group, op, algo, rank, round); the executor in collective.c does the rest.
**
** Rings run on an "axis": m members (the whole group, or the ranks of a torus line that differ
** in one coordinate) and m parts of the data (single chunks, or for a torus lane's stage on axis
** a the chunks whose number agrees with the rank's on the axes the lane has already been along,
** has coordinate j on axis a, and any on the rest: see coll_stage). Member x of a
** ring running in direction dir with ownership offset o ends a reduce-scatter owning part x + o:
**   reduce-scatter step k: send part x + dir(o-k-1) to member x+dir, which adds it;
**   all-gather step k:     send part x + dir(o-k) to member x+dir, which copies it.
** The ring all-reduce uses o = 1 (the order it has always reduced in); everything else o = 0.
**
** A line (torus axis without wraparound) cannot close a ring without sending the closing chunk
** back over every link, so it runs bidirectionally: in reduce-scatter step k, member x sends to
** x+1 the partial sum of part m-1-k+x (it has added members 0..x of it), and the mirror image
** to x-1; the owner adds the two partial sums at the end of the last step, left one first. The
** all-gather sends each part outwards both ways. m-1 steps of a whole part each.
*/
#include <assert.h>

#include "sim/collectiveInt.h"

static int mod(int a, int m) { return ((a % m) + m) % m; }

/* a mod m for a in [-2m, 3m): the ring steps' indices, without a division on the hot path. */
static int wrap(int a, int m) {
  if (a < 0) a += m;
  if (a < 0) a += m;
  if (a >= m) a -= m;
  if (a >= m) a -= m;
  return a;
}

static int floor_log2(int p) {
  int l = 0;
  while ((2 << l) <= p) l++;
  return l;
}

static inline void add(coll_xfer *list, int *n, int peer, int tag, coll_mode mode, coll_seg seg) {
  assert(*n < COLL_MAX_XFERS);
  list[(*n)++] = (coll_xfer){peer, tag, mode, seg};
}

static void add_send(coll_plan *pl, int peer, int tag, coll_seg seg) {
  add(pl->send, &pl->nsend, peer, tag, COLL_COPY, seg);
}

static void add_recv(coll_plan *pl, int peer, int tag, coll_mode mode, coll_seg seg) {
  add(pl->recv, &pl->nrecv, peer, tag, mode, seg);
}

/* n chunks first, first + stride, ... of lane 0 (the only lane but the torus's). */
static coll_seg chunks(int first, int stride, int n, int half) {
  return (coll_seg){first, stride, n, 0, 1, 0, (uint8_t)half};
}

/* ---- rings and lines on an axis ---------------------------------------------------------- */

typedef struct axis {
  int m;                     /* members */
  int x;                     /* this rank's member index */
  int rank0;                 /* rank of member 0 */
  int rstep;                 /* rank distance between consecutive members */
  int lo;                    /* first chunk of part 0 */
  int pstride;               /* chunk distance between part j and part j+1 */
  int cstride;               /* chunk distance inside a row of a part */
  int n;                     /* chunks per row */
  int cstride2;              /* chunk distance between rows */
  int n2;                    /* rows per part */
  int lane;                  /* whose share of the chunks */
} axis;

static int member(const axis *ax, int y) { return ax->rank0 + wrap(y, ax->m) * ax->rstep; }

static inline coll_seg part(const axis *ax, int j, int half) {
  return (coll_seg){ax->lo + wrap(j, ax->m) * ax->pstride, ax->cstride, ax->n, ax->cstride2, ax->n2,
                    (uint8_t)ax->lane, (uint8_t)half};
}

/* One step of a ring (reduce-scatter when `reduce`, else all-gather); tag and half name the
** direction's slot and share of every chunk. */
static inline void ring_step(coll_plan *pl, const axis *ax, int reduce, int k, int dir, int o, int tag,
                      int half) {
  int shift = reduce ? o - k - 1 : o - k;
  coll_mode mode = reduce ? COLL_REDUCE : COLL_COPY;
  add_send(pl, member(ax, ax->x + dir), tag, part(ax, ax->x + dir * shift, half));
  add_recv(pl, member(ax, ax->x - dir), tag, mode, part(ax, ax->x - dir + dir * shift, half));
}

static void bidi_step(coll_plan *pl, const axis *ax, int reduce, int k) {
  ring_step(pl, ax, reduce, k, +1, 0, 0, 1);
  ring_step(pl, ax, reduce, k, -1, 0, 1, 2);
}

/* One step of the bidirectional line (see the top of the file); y is the mirrored index. */
static void line_step(coll_plan *pl, const axis *ax, int reduce, int k) {
  int m = ax->m, x = ax->x, y = m - 1 - x;
  if (reduce) {
    if (x <= k && x < m - 1) add_send(pl, member(ax, x + 1), 0, part(ax, m - 1 - k + x, 0));
    if (y <= k && x > 0) add_send(pl, member(ax, x - 1), 1, part(ax, x + k - m + 1, 0));
    coll_mode last = k == m - 2 ? COLL_REDUCE_AT_END : COLL_REDUCE;
    if (x >= 1 && x - 1 <= k) add_recv(pl, member(ax, x - 1), 0, last, part(ax, m - 2 - k + x, 0));
    if (y >= 1 && y - 1 <= k) add_recv(pl, member(ax, x + 1), 1, last, part(ax, x + k - m + 2, 0));
  } else {
    if (x < m - 1 && k <= x) add_send(pl, member(ax, x + 1), 0, part(ax, x - k, 0));
    if (x > 0 && k <= y) add_send(pl, member(ax, x - 1), 1, part(ax, x + k, 0));
    if (x >= 1 && k <= x - 1) add_recv(pl, member(ax, x - 1), 0, COLL_COPY, part(ax, x - 1 - k, 0));
    if (y >= 1 && k <= y - 1) add_recv(pl, member(ax, x + 1), 1, COLL_COPY, part(ax, x + 1 + k, 0));
  }
}

/* All p ranks of virtual rank v's lane, in order. */
static axis whole_group(const sim_collective *c, int v) {
  int lane = v / c->p;
  return (axis){c->p, v - lane * c->p, lane * c->p, 1, 0, 1, c->p, 1, c->p, 1, lane};
}

/* ---- torus: one lane per axis, each over every axis in its own order ------------------------
**
** With D axes longer than 1 taken in a canonical order o[0..D-1] (below), lane l reduce-scatters
** along o[l], o[l+1], ..., o[l+D-1] (indices mod D), then all-gathers in the reverse order, on its
** share of every chunk. At a stage index the D lanes are on D different axes, so all the axes'
** links carry data at once. Chunk r is rank r's (axis 0 fastest in both), so reduce_scatter
** leaves chunk r on rank r as the ring's.
**
** A rank's lanes start each stage together (collective.c), so a stage lasts as long as its
** slowest lane: the latency term is D x the longest axis's m - 1 hops per pass instead of the
** sum of the axes' m - 1. Where that costs more than the lanes save in bandwidth (small messages
** on unequal axes) the run takes one lane, all the data through the axes one at a time in the
** canonical order: the alpha-beta estimate of both decides, from each axis's latency and
** bandwidth (alpha, beta), as XLA picks its collective's algorithm by size.
**
** The canonical order: longest axis first (a one-lane reduce-scatter divides the data most,
** earliest), then rings before lines, then faster links; equal axes keep their index order,
** and swapping them changes nothing. So relabelling the axes changes neither the choice nor the
** time. With more than 3 axes the order is the axes' own (the free axes of a stage must stay
** two runs of axes, coll_stage). */

typedef struct torus_shape {
  int n;                     /* axes longer than 1 */
  int o[COLL_MAX_DIMS];      /* their canonical order */
  int below[COLL_MAX_DIMS];  /* per axis: product of the lengths of the axes before it */
} torus_shape;

/* a goes before b in the canonical order. */
static int before(const sim_collective *c, int a, int b) {
  int ra = c->wraps[a] && c->dims[a] > 2, rb = c->wraps[b] && c->dims[b] > 2;
  if (c->dims[a] != c->dims[b]) return c->dims[a] > c->dims[b];
  if (ra != rb) return ra;
  if (c->alpha[a] != c->alpha[b]) return c->alpha[a] < c->alpha[b];
  if (c->beta[a] != c->beta[b]) return c->beta[a] > c->beta[b];
  return a < b;
}

static torus_shape shape_of(const sim_collective *c) {
  torus_shape t = {0};
  for (int a = 0, b = 1; a < c->ndims; b *= c->dims[a], a++) {
    t.below[a] = b;
    if (c->dims[a] > 1) t.o[t.n++] = a;
  }
  for (int i = 1; t.n <= 3 && i < t.n; i++) /* insertion sort, at most 3 */
    for (int j = i; j > 0 && before(c, t.o[j], t.o[j - 1]); j--) {
      int x = t.o[j];
      t.o[j] = t.o[j - 1];
      t.o[j - 1] = x;
    }
  return t;
}

/* The stage's axis as seen by virtual rank v. */
static axis torus_axis(const sim_collective *c, int v, const coll_stage *st) {
  int lane = v / c->p, r = v - lane * c->p;
  int m = c->dims[st->axis], below = st->below, x = r / below % m, lo = 0;
  for (int a = 0, b = 1; a < c->ndims; b *= c->dims[a], a++)
    if (st->fixed >> a & 1u) lo += r / b % c->dims[a] * b;
  return (axis){m, x, v - x * below, below, lo, below, st->stride, st->n, st->stride2, st->n2, lane};
}

/* Alpha-beta seconds of one stage on axis a moving parts of `bytes`: m - 1 steps, a ring
** sending half each way, a line the whole part. */
static double stage_time(const sim_collective *c, int a, double bytes) {
  int m = c->dims[a], ring = c->wraps[a] && m > 2;
  return (m - 1) * (c->alpha[a] + (ring ? bytes / 2 : bytes) / c->beta[a]);
}

/* Alpha-beta seconds of one pass (reduce-scatter or all-gather) with `lanes` lanes (1 or n). */
static double pass_time(const sim_collective *c, const torus_shape *t, int lanes) {
  double total = 0, share = 4.0 * (double)c->count / lanes;
  for (int s = 0; s < t->n; s++) {
    double slowest = 0;
    for (int l = 0; l < lanes; l++) {
      double bytes = share;
      for (int i = 0; i <= s; i++) bytes /= c->dims[t->o[(l + i) % t->n]];
      double st = stage_time(c, t->o[(l + s) % t->n], bytes);
      if (st > slowest) slowest = st;
    }
    total += slowest;
  }
  return total;
}

/* Sets st's free-axes progressions from `free`, a bit per axis: the lane's axes after the
** stage's. Runs of consecutive axes longer than 1 (axes of length 1 between them change nothing)
** make a progression each; the canonical order keeps them to two. Chunk order inside a part
** does not matter. */
static void free_runs(const sim_collective *c, const torus_shape *t, unsigned free, coll_stage *st) {
  int runs = 0, open = 0, *stride[2] = {&st->stride, &st->stride2}, *n[2] = {&st->n, &st->n2};
  st->stride = st->stride2 = st->n = st->n2 = 1;
  for (int a = 0; a < c->ndims; a++) {
    if (c->dims[a] == 1) continue;
    int in = free >> a & 1u;
    if (in && !open) *stride[runs++] = t->below[a];
    assert(runs <= 2);
    if (in) *n[runs - 1] *= c->dims[a];
    open = in;
  }
}

/* Chooses the lanes and lists every lane's stages (see above); returns the rounds each lane
** takes (all the same). */
static int torus_stages(sim_collective *c) {
  torus_shape t = shape_of(c);
  int has_rs = c->op != SIM_COLL_ALL_GATHER, has_ag = c->op != SIM_COLL_REDUCE_SCATTER, rounds = 0;
  c->lanes = t.n > 1 && pass_time(c, &t, t.n) <= pass_time(c, &t, 1) ? t.n : 1;
  c->nstages = 0;
  for (int l = 0; l < c->lanes && t.n > 0; l++) {
    int k = 0;
    rounds = 0;
    for (int pass = 0; pass < 2; pass++) {
      int reduce = pass == 0;
      if (reduce ? !has_rs : !has_ag) continue;
      for (int i = 0; i < t.n; i++) {
        int s = reduce ? i : t.n - 1 - i, a = t.o[(l + s) % t.n];
        unsigned fixed = 0, free = 0;
        for (int u = 0; u < t.n; u++) {
          int au = t.o[(l + u) % t.n];
          if (u < s) fixed |= 1u << au;
          if (u > s) free |= 1u << au;
        }
        coll_stage *st = &c->stages[l][k++];
        *st = (coll_stage){.first = rounds, .axis = a, .reduce = reduce, .below = t.below[a],
                           .fixed = fixed};
        free_runs(c, &t, free, st);
        rounds += c->dims[a] - 1;
      }
    }
    c->nstages = k;
  }
  return rounds;
}

/* Rounds go through the lane's stages in order, so the search from the first is short. */
static void torus_plan(const sim_collective *c, int v, int round, coll_plan *pl) {
  const coll_stage *st = c->stages[v / c->p];
  int s = 0;
  while (s + 1 < c->nstages && round >= st[s + 1].first) s++;
  st += s;
  axis ax = torus_axis(c, v, st);
  if (c->wraps[st->axis] && ax.m > 2)
    bidi_step(pl, &ax, st->reduce, round - st->first);
  else
    line_step(pl, &ax, st->reduce, round - st->first);
}

/* Part j of a ring is its member j's own part (the parts agree on the fixed axes, which the
** ring's members share), so a table of every rank's own part gives every send of the stage. */
void sim__coll_stage_parts(const sim_collective *c, int l, int s, int half, size_t *out) {
  const coll_stage *st = &c->stages[l][s];
  for (int r = 0; r < c->p; r++) {
    axis ax = torus_axis(c, l * c->p + r, st);
    out[r] = coll_seg_floats(c, part(&ax, ax.x, half));
  }
}

/* A ring stage (bidi_step) sends, over its m - 1 rounds, every part of the ring's but one under
** each tag: reduce-scatter all but the rank's own part x (both directions), all-gather all but
** x + 1 (tag 0, going +1) or x - 1 (tag 1). So a rank's sum is its ring's total less one part,
** and a stage costs a part's size per rank instead of a plan per rank and round. A line (an axis
** of 2, or one that does not wrap) sums its rounds' plans. */
void sim__coll_stage_sends(const sim_collective *c, int l, int s, int send, size_t *scratch, size_t *out) {
  const coll_stage *st = &c->stages[l][s];
  int p = c->p, m = c->dims[st->axis], below = st->below;
  int hi = s + 1 < c->nstages ? st[1].first : c->rounds;
  coll_plan pl;
  if (!(c->wraps[st->axis] && m > 2)) {
    for (int r = 0; r < p; r++) {
      out[r] = 0;
      for (int k = st->first; k < hi; k++) {
        sim__coll_plan(c, l * p + r, k, &pl);
        if (send < pl.nsend) out[r] += coll_seg_floats(c, pl.send[send].seg);
      }
    }
    return;
  }
  assert(send < 2 && hi - st->first == m - 1);
  int skip = st->reduce ? 0 : send == 0 ? 1 : m - 1; /* the part left out, from x */
  sim__coll_stage_parts(c, l, s, send + 1, scratch);
  for (int r = 0; r < p; r++) {
    if (r / below % m != 0) continue; /* each ring from its member 0 */
    size_t total = 0;
    for (int j = 0; j < m; j++) total += scratch[r + j * below];
    for (int j = 0; j < m; j++) out[r + j * below] = total - scratch[r + (j + skip) % m * below];
  }
}

/* ---- binary trees in heap order --------------------------------------------------------- */

/* Tree `t` (0 or 1) of the group: virtual node v is rank to_rank(v); the data is `seg`.
** Reduce rounds 0..H-1 (a node at depth d sends to its parent in round H-d), then broadcast
** rounds from `bcast0` (a node at depth d receives in bcast0+d-1); H = depth of node p-1. */
typedef struct tree {
  int t;                     /* tree index: tags 2t (up, and first child) and 2t+1 */
  int root;                  /* rank of virtual node 0 */
  int mirror;                /* 1: virtual v is rank p-1-v (the second double-tree tree) */
  coll_seg seg;              /* the share of the buffer it carries */
} tree;

static int tree_rank(const sim_collective *c, const tree *tr, int v) {
  return tr->mirror ? c->p - 1 - v : (v + tr->root) % c->p;
}

static void tree_step(const sim_collective *c, const tree *tr, int rank, int round, int reduce,
                      coll_plan *pl) {
  int p = c->p, H = floor_log2(p);
  int v = tr->mirror ? p - 1 - rank : mod(rank - tr->root, p), d = floor_log2(v + 1);
  int bcast0 = reduce ? H : 0;
  if (reduce && round < H) {
    if (d >= 1 && round == H - d) add_send(pl, tree_rank(c, tr, (v - 1) / 2), 2 * tr->t, tr->seg);
    if (round == H - d - 1)
      for (int ch = 2 * v + 1; ch <= 2 * v + 2 && ch < p; ch++)
        add_recv(pl, tree_rank(c, tr, ch), 2 * tr->t, COLL_REDUCE_AT_END, tr->seg);
    return;
  }
  int b = round - bcast0;
  if (d >= 1 && b == d - 1)
    add_recv(pl, tree_rank(c, tr, (v - 1) / 2), 2 * tr->t + (v % 2 == 0), COLL_COPY, tr->seg);
  if (b == d)
    for (int ch = 2 * v + 1; ch <= 2 * v + 2 && ch < p; ch++)
      add_send(pl, tree_rank(c, tr, ch), 2 * tr->t + (ch % 2 == 0), tr->seg);
}

/* ---- NCCL's pipelined double binary tree ------------------------------------------------
**
** The buffer is K chunks (c->nchunks); tree t (0, or 1 the mirror image v -> p-1-v, as the
** double tree above) carries half t of each. Chunks stream through the heap: a node at depth d
** (the root 0, the deepest H) sends chunk k to its parent in round k + H - d, having added its
** children's partial sums of it at the end of the round before (both arrive in one round:
** COLL_REDUCE_AT_END, in plan order); the root sends chunk k down in round k + H and a node at
** depth d passes it on in round k + H + d, so chunk K-1 reaches the deepest nodes in round
** K + 2H - 2. In one round a node moves different chunks up and down (they differ by 2d - 1),
** and each chunk it sends up was reduced the round before. Tags: up t, down 2 + (the child is a
** right child): a rank is an inner node of one tree at most, so it uses at most 4. */
static void pipelined_tree_step(const sim_collective *c, int t, int rank, int round, coll_plan *pl) {
  int p = c->p, H = floor_log2(p), K = c->nchunks;
  int v = t ? p - 1 - rank : rank, d = floor_log2(v + 1);
  tree tr = {t, 0, t, chunks(0, 1, 1, 1 + t)};
  int up = round - (H - d), from_children = up + 1, down = round - H - d;
  if (d >= 1 && up >= 0 && up < K)
    add_send(pl, tree_rank(c, &tr, (v - 1) / 2), t, chunks(up, 1, 1, 1 + t));
  if (from_children >= 0 && from_children < K)
    for (int ch = 2 * v + 1; ch <= 2 * v + 2 && ch < p; ch++)
      add_recv(pl, tree_rank(c, &tr, ch), t, COLL_REDUCE_AT_END, chunks(from_children, 1, 1, 1 + t));
  if (d >= 1 && down + 1 >= 0 && down + 1 < K)
    add_recv(pl, tree_rank(c, &tr, (v - 1) / 2), 2 + (v % 2 == 0), COLL_COPY, chunks(down + 1, 1, 1, 1 + t));
  if (down >= 0 && down < K)
    for (int ch = 2 * v + 1; ch <= 2 * v + 2 && ch < p; ch++)
      add_send(pl, tree_rank(c, &tr, ch), 2 + (ch % 2 == 0), chunks(down, 1, 1, 1 + t));
}

/* Chunks of the pipelined tree: at least 64 KiB each, at most 256, never more than floats. */
#define NCCL_TREE_CHUNK_BYTES 65536.0
#define NCCL_TREE_MAX_CHUNKS 256

/* NCCL's choice for the run (sim/nccl.h) and what it charges on top of the links: the wire
** bytes of its protocol, its latency before the first round (the tree's whole, the ring's base)
** and the ring's hardware latency spread over its rounds (the remainder, a few ps, goes before
** the first round so the total is the model's to the picosecond).
** An all_reduce ring across nodes runs as NCCL's channels: one lane per GPU of a node, each
** with its share of every chunk, lane l's ring with each node's ranks turned by l (rank_of in
** collective.c), so it leaves a node from its rank l - 1 and enters the next at its rank l: the
** lanes cross the network on different GPUs' NICs, as NCCL's rings each use a NIC of their own.
** One ring would put the whole buffer through one NIC of each node. The runs that stay one
** lane across nodes (the tree, the other ops' rings: NCCL spreads them over its channels too)
** cross each node through one NIC, so their protocol's share is taken against one NIC's part
** of the network (net_busbw / ranks_per_node): on those links they move at the model's busbw.
** NVLS tree (the switches reduce in each node, trees join the nodes) and NVLS run the ring's
** plan with the same share: the ring's Simple busbw (its bound on the machine: the GPUs' copy
** links, the NICs) over the chosen pair's, so the run delivers the model's busBw. */
static void nccl_prepare(sim_collective *c, int phases) {
  int p = c->p, ppn = c->nccl_system.ranks_per_node;
  double bytes = 4.0 * (double)c->count;
  sim_nccl_choice simple;
  sim_nccl_choose(&c->nccl_system, c->op, p, bytes, &c->nccl);
  sim_nccl_model(&c->nccl_system, c->op, p, bytes, SIM_NCCL_RING, SIM_NCCL_SIMPLE, &simple);
  c->pipelined = c->nccl.algo == SIM_NCCL_TREE;
  if (!c->pipelined && c->op == SIM_COLL_ALL_REDUCE) c->lanes = sim__coll_lanes(c, SIM_ALGO_NCCL);
  double one_nic = c->nccl_system.net_busbw / ppn;
  int one_lane_across = c->lanes == 1 && ppn < p;
  c->wire = (one_lane_across && one_nic < simple.busbw ? one_nic : simple.busbw) / c->nccl.busbw;
  sim_time latency = sim_time_from_s(c->nccl.latency_s);
  if (c->pipelined) {
    double k = bytes / NCCL_TREE_CHUNK_BYTES;
    c->nchunks = k < 1 ? 1 : k > NCCL_TREE_MAX_CHUNKS ? NCCL_TREE_MAX_CHUNKS : (int)k;
    if ((size_t)c->nchunks > c->count) c->nchunks = c->count > 0 ? (int)c->count : 1;
    c->rounds = c->nchunks + 2 * floor_log2(p) - 1;
    c->start_delay += latency;
    return;
  }
  c->rounds = c->op == SIM_COLL_BROADCAST ? 2 * p - 2 : phases * (p - 1);
  sim_time base = sim_time_from_s(c->nccl.base_s);
  c->round_delay = (latency - base) / c->rounds;
  c->start_delay += latency - c->round_delay * c->rounds;
}

/* ---- halving-doubling -------------------------------------------------------------------- */

/* Rabenseifner over the p' = 2^floor(lg p) "core" ranks; see collective.h for the fold. */
static void hd_plan(const sim_collective *c, int rank, int round, coll_plan *pl) {
  int L = floor_log2(c->p), pp = 1 << L, rem = c->p - pp;
  coll_seg all = chunks(0, 1, pp, 0);
  if (rem > 0) {
    if (round == 0 || round == c->rounds - 1) {
      int fold = round == 0;       /* even ranks hand in their buffer, and get the sum back */
      if (rank < 2 * rem && rank % 2 == (fold ? 0 : 1))
        add_send(pl, fold ? rank + 1 : rank - 1, 0, all);
      if (rank < 2 * rem && rank % 2 == (fold ? 1 : 0))
        add_recv(pl, fold ? rank - 1 : rank + 1, 0, fold ? COLL_REDUCE : COLL_COPY, all);
      return;
    }
    round--;
    if (rank < 2 * rem && rank % 2 == 0) return;
  }
  int q = rank < 2 * rem ? rank / 2 : rank - rem;
  int has_rs = c->op != SIM_COLL_ALL_GATHER;
  int reduce = has_rs && round < L;
  int j = has_rs && !reduce ? round - L : round;
  int dist = reduce ? pp >> (j + 1) : 1 << j, partner = q ^ dist;
  int prank = partner < rem ? 2 * partner + 1 : partner + rem;
  if (reduce) {
    int lo = q & ~(2 * dist - 1), upper = (q & dist) != 0;
    add_send(pl, prank, 0, chunks(upper ? lo : lo + dist, 1, dist, 0));
    add_recv(pl, prank, 0, COLL_REDUCE, chunks(upper ? lo + dist : lo, 1, dist, 0));
  } else {
    add_send(pl, prank, 0, chunks(q & ~(dist - 1), 1, dist, 0));
    add_recv(pl, prank, 0, COLL_COPY, chunks(partner & ~(dist - 1), 1, dist, 0));
  }
}

/* ---- the table ----------------------------------------------------------------------------- */

static int is_pow2(int p) { return (p & (p - 1)) == 0; }

int sim__coll_check(const sim_collective *c, sim_coll_op op, sim_algo algo, int root,
                    size_t count) {
  if ((unsigned)op >= SIM_COLL_OP_COUNT || (unsigned)algo >= SIM_ALGO_COUNT) return SIM_COLL_EINVAL;
  if (root < 0 || root >= c->p) return SIM_COLL_EINVAL;
  int scatter_gather = op == SIM_COLL_REDUCE_SCATTER || op == SIM_COLL_ALL_GATHER;
  if (op == SIM_COLL_PPERMUTE) return SIM_OK;  /* direct transfers, whatever the algorithm */
  int ok = 0;
  switch (algo) {
  case SIM_ALGO_RING:
  case SIM_ALGO_NCCL: ok = 1; break;
  case SIM_ALGO_BIDI_RING: ok = op == SIM_COLL_ALL_REDUCE || scatter_gather; break;
  case SIM_ALGO_TORUS: ok = op == SIM_COLL_ALL_REDUCE || scatter_gather || op == SIM_COLL_ALL_TO_ALL; break;
  case SIM_ALGO_TREE: ok = op == SIM_COLL_ALL_REDUCE || op == SIM_COLL_BROADCAST; break;
  case SIM_ALGO_DOUBLE_TREE: ok = op == SIM_COLL_ALL_REDUCE; break;
  case SIM_ALGO_HALVING_DOUBLING:
    ok = op == SIM_COLL_ALL_REDUCE || (scatter_gather && is_pow2(c->p));
    break;
  }
  if (!ok) return SIM_COLL_EUNSUPPORTED;
  if (op == SIM_COLL_ALL_TO_ALL && count % (size_t)c->p != 0) return SIM_COLL_EINVAL;
  if (algo == SIM_ALGO_TORUS) {
    int prod = 1;
    for (int a = 0; a < c->ndims; a++) prod *= c->dims[a];
    if (c->ndims == 0 || prod != c->p) return SIM_COLL_ETORUS;
  }
  return SIM_OK;
}

int sim__coll_lanes(const sim_collective *c, sim_algo algo) {
  int ppn = c->nccl_system.ranks_per_node;
  if (algo == SIM_ALGO_NCCL) return c->has_nccl_system && ppn > 1 && ppn < c->p && c->p % ppn == 0 ? ppn : 1;
  int lanes = 0;
  for (int a = 0; algo == SIM_ALGO_TORUS && a < c->ndims; a++) lanes += c->dims[a] > 1;
  return lanes > 0 ? lanes : 1;
}

void sim__coll_prepare(sim_collective *c) {
  int p = c->p, L = floor_log2(p);
  int phases = c->op == SIM_COLL_ALL_REDUCE ? 2 : 1;
  c->nchunks = p;
  c->lanes = 1;
  c->wire = 1;
  c->pipelined = 0;
  c->start_delay = c->fixed_cost;
  c->round_delay = 0;
  if (c->op == SIM_COLL_PPERMUTE) {
    c->nchunks = 1;
    c->rounds = p > 1;
    return;
  }
  switch (c->algo) {
  case SIM_ALGO_RING:
    c->rounds = c->op == SIM_COLL_BROADCAST ? 2 * p - 2 : phases * (p - 1);
    break;
  case SIM_ALGO_BIDI_RING: c->rounds = phases * (p - 1); break;
  case SIM_ALGO_TORUS: c->rounds = c->op == SIM_COLL_ALL_TO_ALL ? sim__coll_a2a_prepare(c) : torus_stages(c); break;
  case SIM_ALGO_TREE:
  case SIM_ALGO_DOUBLE_TREE:
    c->nchunks = 1;
    c->rounds = phases * L;
    break;
  case SIM_ALGO_HALVING_DOUBLING:
    c->nchunks = 1 << L;
    c->rounds = phases * L + (p > c->nchunks ? 2 : 0);
    break;
  case SIM_ALGO_NCCL:
    if (p > 1) nccl_prepare(c, phases);
    break;
  }
  if (p == 1) c->rounds = 0;
}

/* ppermute: one round, the whole buffer to the rank `root` ahead, from the rank `root` behind. */
static void ppermute_plan(const sim_collective *c, int rank, coll_plan *pl) {
  if (c->root == 0) return;
  add_send(pl, mod(rank + c->root, c->p), 0, chunks(0, 1, 1, 0));
  add_recv(pl, mod(rank - c->root, c->p), 0, COLL_COPY_ORIGINAL, chunks(0, 1, 1, 0));
}

void sim__coll_plan(const sim_collective *c, int rank, int round, coll_plan *pl) {
  pl->nsend = pl->nrecv = 0;
  int p = c->p, ar = c->op == SIM_COLL_ALL_REDUCE;
  if (c->op == SIM_COLL_PPERMUTE) {
    ppermute_plan(c, rank, pl);
    return;
  }
  if (c->pipelined) {
    for (int t = 0; t < 2; t++) pipelined_tree_step(c, t, rank, round, pl);
    return;
  }
  switch (c->algo) {
  case SIM_ALGO_RING:
  case SIM_ALGO_NCCL: {
    axis ax = whole_group(c, rank);
    if (c->op == SIM_COLL_BROADCAST) {
      int v = mod(rank - c->root, p), t = round;
      if (v >= 1 && t - v + 1 >= 0 && t - v + 1 < p)
        add_recv(pl, mod(rank - 1, p), 0, COLL_COPY, chunks(t - v + 1, 1, 1, 0));
      if (v <= p - 2 && t - v >= 0 && t - v < p)
        add_send(pl, mod(rank + 1, p), 0, chunks(t - v, 1, 1, 0));
    } else if (c->op == SIM_COLL_ALL_TO_ALL) {
      int s = round + 1;
      add_send(pl, mod(rank + s, p), 0, chunks(mod(rank + s, p), 1, 1, 0));
      add_recv(pl, mod(rank - s, p), 0, COLL_COPY_BLOCK, chunks(mod(rank - s, p), 1, 1, 0));
    } else {
      int reduce = c->op == SIM_COLL_REDUCE_SCATTER || (ar && round < p - 1);
      int k = ar && !reduce ? round - (p - 1) : round;
      ring_step(pl, &ax, reduce, k, +1, ar, 0, 0);
    }
    break;
  }
  case SIM_ALGO_BIDI_RING: {
    axis ax = whole_group(c, rank);
    int reduce = c->op == SIM_COLL_REDUCE_SCATTER || (ar && round < p - 1);
    bidi_step(pl, &ax, reduce, ar && !reduce ? round - (p - 1) : round);
    break;
  }
  case SIM_ALGO_TORUS:
    if (c->op == SIM_COLL_ALL_TO_ALL) sim__coll_a2a_plan(c, rank, round, pl);
    else torus_plan(c, rank, round, pl);
    break;
  case SIM_ALGO_TREE: {
    tree tr = {0, c->root, 0, chunks(0, 1, 1, 0)};
    tree_step(c, &tr, rank, round, ar, pl);
    break;
  }
  case SIM_ALGO_DOUBLE_TREE:
    for (int t = 0; t < 2; t++) {
      tree tr = {t, 0, t, chunks(0, 1, 1, 1 + t)};
      tree_step(c, &tr, rank, round, 1, pl);
    }
    break;
  case SIM_ALGO_HALVING_DOUBLING: hd_plan(c, rank, round, pl); break;
  }
}
