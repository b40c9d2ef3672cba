/* test_collective_ops.c: every op x algorithm: numerics against a serial reference, timing
** against the alpha-beta closed forms on networks where nothing contends, contention, errors.
** Units in the closed forms: alpha = 1 us per link, beta = 1 ns per byte (1e9 B/s), n bytes =
** 4 x count; no cpus are given, so the reduction term gamma is 0. */
#include "tests/testutil.h"

#include <math.h>

#include "sim/collective.h"
#include "sim/collectiveInt.h" /* sizeof the per-rank state */
#include "sim/simInt.h"        /* sim__comm_start_solo for the tie-break test */
#include "sim/torus_mesh.h"

#define US ((sim_time)1000000) /* one microsecond in picoseconds */
#define BW 1e9

/* ---- networks built here ------------------------------------------------------------------ */

/* A torus of p = prod dims nodes: per node and axis a link to the + and the - neighbour (on an
** axis without wraparound the end nodes lack the outward one). Routes are dimension-ordered,
** the shorter way round where the axis wraps (+ on ties), straight along it otherwise. */
typedef struct net {
  int p;                     /* nodes */
  int nd;                    /* axes; 0 = full mesh */
  int dims[COLL_MAX_DIMS];   /* axis lengths */
  int wraps[COLL_MAX_DIMS];  /* per axis: wraps around */
  sim_link **links;          /* torus: [node][axis][dir]; mesh: [from][to] */
} net;

static net *torus_new(sim_engine *e, int nd, const int *dims, const int *wraps) {
  net *t = calloc(1, sizeof *t);
  t->p = 1;
  t->nd = nd;
  for (int a = 0; a < nd; a++) {
    t->dims[a] = dims[a];
    t->wraps[a] = wraps[a];
    t->p *= dims[a];
  }
  t->links = calloc((size_t)t->p * (size_t)nd * 2, sizeof *t->links);
  for (size_t i = 0; i < (size_t)t->p * (size_t)nd * 2; i++)
    t->links[i] = sim_link_new(e, "t", BW, US);
  return t;
}

static net *mesh_new(sim_engine *e, int p) {
  net *t = calloc(1, sizeof *t);
  t->p = p;
  t->links = calloc((size_t)p * (size_t)p, sizeof *t->links);
  for (int i = 0; i < p * p; i++) t->links[i] = sim_link_new(e, "m", BW, US);
  return t;
}

static void net_free(net *t) {
  free(t->links);
  free(t);
}

static size_t net_route(void *ctx, int from, int to, sim_link **out, size_t max) {
  net *t = ctx;
  size_t n = 0;
  if (from == to) return 0;
  if (t->nd == 0) {
    if (max > 0) out[0] = t->links[from * t->p + to];
    return 1;
  }
  int at = from, below = 1;
  for (int a = 0; a < t->nd; below *= t->dims[a], a++) {
    int m = t->dims[a], x = (at / below) % m, y = (to / below) % m;
    int fwd = ((y - x) % m + m) % m, dir = t->wraps[a] ? fwd > m - fwd : y < x;
    int steps = t->wraps[a] ? (dir ? m - fwd : fwd) : abs(y - x);
    for (int s = 0; s < steps; s++) {
      if (n < max) out[n] = t->links[(at * t->nd + a) * 2 + dir];
      n++;
      x = dir ? (x + m - 1) % m : (x + 1) % m;
      at = at - ((at / below) % m) * below + x * below;
    }
  }
  return n;
}

/* ---- running a collective engine-side -------------------------------------------------------- */

static void count_done(sim_engine *e, sim_collective *c, void *arg) {
  (void)e; (void)c;
  ++*(int *)arg;
}

/* Runs op by algo over net t (torus shape from t when it has one) and returns its duration. */
static sim_time run_on(sim_engine *e, net *t, sim_coll_op op, sim_algo algo, int root,
                       float **bufs, size_t count) {
  sim_collective *c = sim_collective_new(e, "c", t->p, net_route, t, NULL);
  if (t->nd > 0) sim_collective_set_torus(c, t->nd, t->dims, t->wraps);
  int done = 0;
  assert_int_equal(sim_collective_start(c, op, algo, root, bufs, count, count_done, &done), SIM_OK);
  assert_int_equal(sim_run(e), 0);
  assert_int_equal(done, 1);
  sim_time d = sim_collective_last_duration(c);
  sim_collective_free(c);
  return d;
}

static sim_time timed(net *(*make)(sim_engine *, const void *), const void *shape,
                      sim_coll_op op, sim_algo algo, size_t count) {
  sim_engine *e = sim_engine_new();
  net *t = make(e, shape);
  sim_time d = run_on(e, t, op, algo, 0, NULL, count);
  net_free(t);
  sim_engine_free(e);
  return d;
}

typedef struct { int nd, dims[3], wraps[3]; } shape;

static net *make_torus(sim_engine *e, const void *s) {
  const shape *sh = s;
  return torus_new(e, sh->nd, sh->dims, sh->wraps);
}

static net *make_mesh(sim_engine *e, const void *p) { return mesh_new(e, *(const int *)p); }

static void assert_close(sim_time got, double want_us) {
  double g = sim_time_to_s(got), w = want_us * 1e-6;
  if (fabs(g - w) > 1e-9 * w) fail_msg("got %.12e s, closed form %.12e s", g, w);
}

/* ---- numerics ------------------------------------------------------------------------------ */

/* Values whose float sums depend on the order, so the test sees a real reduction. */
static float value(int rank, size_t i) {
  return (float)sin(0.37 * (double)rank + 0.011 * (double)i) * (float)(1 + rank % 3);
}

/* Chunk r of p as collective.h splits count floats. */
static void chunk(size_t count, int p, int r, size_t *off, size_t *len) {
  size_t base = count / (size_t)p, extra = count % (size_t)p, k = (size_t)r;
  *off = k * base + (k < extra ? k : extra);
  *len = base + (k < extra ? 1 : 0);
}

/* The torus shapes of the numerics runs: p = 4 as 2x2, 8 as 2x2x2 with mixed wraparound (one
** lane per axis), 12 as 3x4, a ring of 3 and a line of 4: at these counts latency dominates and
** the run takes one lane, the 4 axis first (collective_plan.c). */
static void numerics_torus(sim_collective *c, int p) {
  static const int dims4[2] = {2, 2}, dims8[3] = {2, 2, 2}, dims12[2] = {3, 4}, wr[3] = {1, 0, 1};
  if (p == 4) sim_collective_set_torus(c, 2, dims4, wr);
  else if (p == 8) sim_collective_set_torus(c, 3, dims8, wr);
  else if (p == 12) sim_collective_set_torus(c, 2, dims12, wr);
  else sim_collective_set_torus(c, 1, &p, wr);
}

/* Which pairs collective.h promises. */
static int supported(sim_coll_op op, sim_algo algo, int p) {
  int sg = op == SIM_COLL_REDUCE_SCATTER || op == SIM_COLL_ALL_GATHER, ar = op == SIM_COLL_ALL_REDUCE;
  if (op == SIM_COLL_PPERMUTE) return 1;
  switch (algo) {
  case SIM_ALGO_RING: case SIM_ALGO_NCCL: return 1;
  case SIM_ALGO_BIDI_RING: return ar || sg;
  case SIM_ALGO_TORUS: return ar || sg || op == SIM_COLL_ALL_TO_ALL;
  case SIM_ALGO_TREE: return ar || op == SIM_COLL_BROADCAST;
  case SIM_ALGO_DOUBLE_TREE: return ar;
  default: return ar || (sg && (p & (p - 1)) == 0);
  }
}

/* One op x algo x p x count: serial reference in double; every float result within rounding of
** it; equal bits on every rank where the op makes them equal; exact where it only copies; and
** sim_collective_compute, run first on copies, gives the run's bits on every rank (its replay
** of the rounds is the executor's order: with p = 3 and up the ring's sums differ by chunk, so
** a replay that summed in another order would differ in the last bits somewhere here). */
static void check_numerics(sim_coll_op op, sim_algo algo, int p, size_t count, int root) {
  sim_engine *e = sim_engine_new();
  net *t = mesh_new(e, p);
  sim_collective *c = sim_collective_new(e, "c", p, net_route, t, NULL);
  numerics_torus(c, p);
  float **bufs = calloc((size_t)p, sizeof *bufs), **orig = calloc((size_t)p, sizeof *orig);
  float **comp = calloc((size_t)p, sizeof *comp);
  double *sum = calloc(count + 1, sizeof *sum);
  for (int r = 0; r < p; r++) {
    bufs[r] = malloc((count + 1) * sizeof(float));
    orig[r] = malloc((count + 1) * sizeof(float));
    comp[r] = malloc((count + 1) * sizeof(float));
    for (size_t i = 0; i < count; i++) {
      bufs[r][i] = orig[r][i] = comp[r][i] = value(r, i);
      sum[i] += value(r, i);
    }
  }
  int done = 0;
  int crc = sim_collective_compute(c, op, algo, root, comp, count);
  assert_int_equal(sim_now(e), 0);
  int rc = sim_collective_start(c, op, algo, root, bufs, count, count_done, &done);
  assert_int_equal(crc, rc);
  if (!supported(op, algo, p)) {
    assert_int_equal(rc, SIM_COLL_EUNSUPPORTED);
  } else {
    assert_int_equal(rc, SIM_OK);
    assert_int_equal(sim_run(e), 0);
    assert_int_equal(done, 1);
    double tol = 1e-5 * p;
    for (int r = 0; r < p; r++) {
      size_t off, len;
      if (count > 0 && memcmp(bufs[r], comp[r], count * sizeof(float)) != 0)
        fail_msg("%s by %s, p %d, count %zu: sim_collective_compute differs on rank %d", sim_coll_op_name(op),
                 sim_algo_name(algo), p, count, r);
      switch (op) {
      case SIM_COLL_ALL_REDUCE:
        assert_memory_equal(bufs[r], bufs[0], count * sizeof(float));
        for (size_t i = 0; i < count; i++) assert_true(fabs(bufs[r][i] - sum[i]) <= tol);
        break;
      case SIM_COLL_REDUCE_SCATTER:
        chunk(count, p, r, &off, &len);
        for (size_t i = off; i < off + len; i++) assert_true(fabs(bufs[r][i] - sum[i]) <= tol);
        break;
      case SIM_COLL_ALL_GATHER:
        for (int q = 0; q < p; q++) {
          chunk(count, p, q, &off, &len);
          assert_memory_equal(bufs[r] + off, orig[q] + off, len * sizeof(float));
        }
        break;
      case SIM_COLL_BROADCAST:
        assert_memory_equal(bufs[r], orig[root], count * sizeof(float));
        break;
      case SIM_COLL_ALL_TO_ALL: {
        size_t b = count / (size_t)p;
        for (int q = 0; q < p; q++)
          assert_memory_equal(bufs[r] + (size_t)q * b, orig[q] + (size_t)r * b, b * sizeof(float));
        break;
      }
      case SIM_COLL_PPERMUTE:
        assert_memory_equal(bufs[r], orig[(r - root % p + p) % p], count * sizeof(float));
        break;
      }
    }
  }
  for (int r = 0; r < p; r++) {
    free(bufs[r]);
    free(orig[r]);
    free(comp[r]);
  }
  free(bufs);
  free(orig);
  free(comp);
  free(sum);
  sim_collective_free(c);
  net_free(t);
  sim_engine_free(e);
}

/* p in {1,2,3,4,5,8,12}; counts 0, 3 (< p for p >= 4), 13 and 37 (not multiples of most p);
** all_to_all needs a multiple of p: 3p. Broadcast from the last rank (root 0 for the rest). */
static void test_numerics_all_pairs(void **state) {
  (void)state;
  static const int ps[] = {1, 2, 3, 4, 5, 8, 12};
  static const size_t counts[] = {0, 3, 13, 37};
  for (int op = 0; op < SIM_COLL_OP_COUNT; op++)
    for (int algo = 0; algo < SIM_ALGO_COUNT; algo++)
      for (size_t i = 0; i < sizeof ps / sizeof *ps; i++)
        for (size_t j = 0; j < sizeof counts / sizeof *counts; j++) {
          int p = ps[i];
          size_t count = op == SIM_COLL_ALL_TO_ALL ? 3 * (size_t)p * j : counts[j];
          int root = op == SIM_COLL_BROADCAST ? p - 1 : op == SIM_COLL_PPERMUTE ? (int)j % p : 0;
          check_numerics((sim_coll_op)op, (sim_algo)algo, p, count, root);
        }
}

/* The blocking call from actors gives the same result as the engine-side start. */
typedef struct {
  sim_collective *c; int rank; float *buf; size_t count; int rc;
} rank_arg;

static void rank_main(sim_actor *self, void *arg) {
  rank_arg *a = arg;
  a->rc = sim_collective_run(self, a->c, a->rank, SIM_COLL_REDUCE_SCATTER,
                             SIM_ALGO_HALVING_DOUBLING, 0, a->buf, a->count);
}

static void test_blocking_matches_start(void **state) {
  (void)state;
  enum { P = 4, N = 10 };
  float a[P][N], b[P][N], *bp[P];
  for (int r = 0; r < P; r++)
    for (int i = 0; i < N; i++) a[r][i] = b[r][i] = value(r, (size_t)i);
  sim_engine *e = sim_engine_new();
  net *t = mesh_new(e, P);
  sim_collective *c = sim_collective_new(e, "c", P, net_route, t, NULL);
  rank_arg args[P];
  for (int r = 0; r < P; r++) {
    args[r] = (rank_arg){c, r, a[r], N, -9};
    sim_actor_spawn(e, "rank", rank_main, &args[r]);
    bp[r] = b[r];
  }
  assert_int_equal(sim_run(e), 0);
  sim_time blocking = sim_collective_last_duration(c);
  int done = 0;
  assert_int_equal(sim_collective_start(c, SIM_COLL_REDUCE_SCATTER, SIM_ALGO_HALVING_DOUBLING, 0,
                                        bp, N, count_done, &done), SIM_OK);
  assert_int_equal(sim_run(e), 0);
  for (int r = 0; r < P; r++) assert_int_equal(args[r].rc, SIM_OK);
  assert_memory_equal(a, b, sizeof a);
  assert_int_equal(sim_collective_last_duration(c), blocking);
  sim_collective_free(c);
  net_free(t);
  sim_engine_free(e);
}

/* ---- timing against closed forms --------------------------------------------------------------- */

/* One row of a closed-form table: op by algo on a torus shape, count floats, the time in us. */
typedef struct closed_form {
  shape sh;                  /* the network */
  sim_coll_op op;            /* what runs */
  sim_algo algo;             /* how */
  size_t count;              /* floats per rank */
  double us;                 /* the closed form */
} closed_form;

/* Ring on a 5-node ring (torus 5, wrapping), count 1000: n = 4000 B, n/p = 800 B = 0.8 us.
** all-reduce 2(p-1)(a + n/p b) = 8 x 1.8 = 14.4 us; reduce-scatter = all-gather =
** (p-1)(a + n/p b) = 7.2 us; pipelined broadcast (2p-2)(a + n/p b) = 14.4 us.
** Bidirectional ring: half of every chunk each way, n/2p = 0.4 us: all-reduce 8 x 1.4 = 11.2 us,
** reduce-scatter = all-gather 5.6 us (hardware.md's V/W_bidi bandwidth term times (p-1)/p; the
** latency term is (p-1)a, as both rings go all the way round).
** Torus: one lane per axis longer than 1, each on 1/D of the data (D lanes), lane l along axes
** l, l+1, ... (mod D). On a cube d^D every lane is on its own axis at every stage, so nothing
** contends: reduce-scatter stage t of a lane moves parts of n / (D d^(t+1)) bytes, halved both
** ways round a wrapped ring: (d-1)(a + n/(2 D d^(t+1)) b); a line (no wraparound) carries whole
** parts both ways: (d-1)(a + n/(D d^(t+1)) b). All-gather mirrors it, all-reduce is both.
** 5 wrapped (one lane: the bidirectional ring above), count 1000, n = 4000 B: 4(1 + 0.4) = 5.6 us.
** 4x4 wrapped, count 3200, n = 12800 B, 6400 B a lane: 3(1 + 0.8) + 3(1 + 0.2) = 9 us per pass,
** all-reduce 18 us (dimension-ordered, one axis at a time, it took 2(3(1 + 1.6) + 3(1 + 0.4)) =
** 24 us: each axis then had the whole n while the other's links idled).
** 3x3x3 wrapped, count 4050, n = 16200 B, 5400 B a lane: 2(1 + 0.9) + 2(1 + 0.3) + 2(1 + 0.1)
** = 8.6 us per pass, all-reduce 17.2 us.
** 4x4 without wraparound (lines): 3(1 + 1.6) + 3(1 + 0.4) = 12 us per pass, all-reduce 24 us:
** hardware.md's "no wraparound doubles the bandwidth term".
** Unequal axes: a rank's lanes start each stage together, so a stage lasts its slowest lane's
** time; where that loses to one lane through the axes in turn (longest first) the run takes one
** lane. 2x2x4 lines (v4-32), count 96, n = 384 B, latency-bound: one lane, axis 2 first, parts
** n/4, n/8, n/16: 3(1 + 0.096) + (1 + 0.048) + (1 + 0.024) = 5.36 us a pass, all-reduce 10.72
** us (three lanes: 3 + 3 + 3 rounds a pass, about 9.1 us). Count 96000, n = 384000 B, 128000 B a
** lane, lanes along [2,0,1], [0,1,2], [1,2,0]: stage 0 max(3(1 + 32), 1 + 64, 1 + 64) = 99,
** stage 1 max(1 + 16, 1 + 32, 3(1 + 16)) = 51, stage 2 max(1 + 8, 3(1 + 8), 1 + 8) = 27 us:
** 177 us a pass, all-reduce 354 us (one lane: 2(3(1 + 96) + (1 + 48) + (1 + 24)) = 730 us).
** Counts are multiples of p x 2D, so every lane and half has the same floats. */
static void test_ring_and_torus_closed_forms(void **state) {
  (void)state;
  const shape r5 = {1, {5}, {1}}, t44 = {2, {4, 4}, {1, 1}}, t333 = {3, {3, 3, 3}, {1, 1, 1}};
  const shape t44_open = {2, {4, 4}, {0, 0}}, t224 = {3, {2, 2, 4}, {0, 0, 0}};
  const closed_form rows[] = {
      {r5, SIM_COLL_ALL_REDUCE, SIM_ALGO_RING, 1000, 14.4},
      {r5, SIM_COLL_REDUCE_SCATTER, SIM_ALGO_RING, 1000, 7.2},
      {r5, SIM_COLL_ALL_GATHER, SIM_ALGO_RING, 1000, 7.2},
      {r5, SIM_COLL_BROADCAST, SIM_ALGO_RING, 1000, 14.4},
      {r5, SIM_COLL_ALL_REDUCE, SIM_ALGO_BIDI_RING, 1000, 11.2},
      {r5, SIM_COLL_REDUCE_SCATTER, SIM_ALGO_BIDI_RING, 1000, 5.6},
      {r5, SIM_COLL_ALL_GATHER, SIM_ALGO_BIDI_RING, 1000, 5.6},
      {r5, SIM_COLL_REDUCE_SCATTER, SIM_ALGO_TORUS, 1000, 5.6},
      {t44, SIM_COLL_REDUCE_SCATTER, SIM_ALGO_TORUS, 3200, 9.0},
      {t44, SIM_COLL_ALL_GATHER, SIM_ALGO_TORUS, 3200, 9.0},
      {t44, SIM_COLL_ALL_REDUCE, SIM_ALGO_TORUS, 3200, 18.0},
      {t333, SIM_COLL_ALL_REDUCE, SIM_ALGO_TORUS, 4050, 17.2},
      {t44_open, SIM_COLL_REDUCE_SCATTER, SIM_ALGO_TORUS, 3200, 12.0},
      {t44_open, SIM_COLL_ALL_REDUCE, SIM_ALGO_TORUS, 3200, 24.0},
      {t224, SIM_COLL_ALL_REDUCE, SIM_ALGO_TORUS, 96, 10.72},
      {t224, SIM_COLL_ALL_REDUCE, SIM_ALGO_TORUS, 96000, 354.0},
  };
  for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
    assert_close(timed(make_torus, &rows[i].sh, rows[i].op, rows[i].algo, rows[i].count), rows[i].us);
}

/* Relabelling the axes renumbers the lanes and nothing else: the same time to the picosecond,
** for every op the torus runs. 8x16 with only the 16 axis wrapping (v5litepod-128) against
** 16x8, and 4x4x8 against 8x4x4 and 4x8x4, wrapped and not. COUNT = 3 x 2^16 floats, a
** multiple of p x 2D (128 x 6), so every lane's share is the same size. */
static void test_torus_relabelling(void **state) {
  (void)state;
  enum { COUNT = 3 << 16 };
  const shape pairs[][3] = {
      {{2, {8, 16}, {0, 1}}, {2, {16, 8}, {1, 0}}, {2, {16, 8}, {1, 0}}},
      {{3, {4, 4, 8}, {1, 1, 1}}, {3, {8, 4, 4}, {1, 1, 1}}, {3, {4, 8, 4}, {1, 1, 1}}},
      {{3, {4, 4, 8}, {0, 1, 0}}, {3, {8, 4, 4}, {0, 0, 1}}, {3, {4, 8, 4}, {0, 0, 1}}},
  };
  for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++)
    for (int op = SIM_COLL_ALL_REDUCE; op <= SIM_COLL_ALL_GATHER; op++) {
      sim_time t0 = timed(make_torus, &pairs[i][0], (sim_coll_op)op, SIM_ALGO_TORUS, COUNT);
      for (int j = 1; j < 3; j++)
        assert_int_equal(timed(make_torus, &pairs[i][j], (sim_coll_op)op, SIM_ALGO_TORUS, COUNT), t0);
    }
}

/* More links are never slower: a shape with wraparound on every axis against the same shape
** with none, and against wraparound on one axis, from latency-bound to bandwidth-bound sizes;
** and the same time rises with the size. */
static void test_torus_links_and_sizes(void **state) {
  (void)state;
  const shape full[] = {{2, {4, 4}, {1, 1}}, {2, {8, 16}, {1, 1}}, {3, {4, 4, 8}, {1, 1, 1}}};
  const shape some[] = {{2, {4, 4}, {0, 1}}, {2, {8, 16}, {0, 1}}, {3, {4, 4, 8}, {1, 0, 1}}};
  const shape none[] = {{2, {4, 4}, {0, 0}}, {2, {8, 16}, {0, 0}}, {3, {4, 4, 8}, {0, 0, 0}}};
  for (size_t i = 0; i < sizeof full / sizeof *full; i++) {
    sim_time last = 0;
    for (size_t count = 1000; count <= 1000000; count *= 10) {
      sim_time f = timed(make_torus, &full[i], SIM_COLL_ALL_REDUCE, SIM_ALGO_TORUS, count);
      sim_time m = timed(make_torus, &some[i], SIM_COLL_ALL_REDUCE, SIM_ALGO_TORUS, count);
      sim_time n = timed(make_torus, &none[i], SIM_COLL_ALL_REDUCE, SIM_ALGO_TORUS, count);
      assert_true(f <= m && m <= n);
      assert_true(f > last);
      last = f;
    }
  }
}

/* Full mesh (a link per ordered pair), count 800, n = 3200 B.
** Rabenseifner p = 8: 2 lg p a + 2n(p-1)/p b = 6 + 5.6 = 11.6 us; reduce-scatter = all-gather =
** lg p a + n(p-1)/p b = 3 + 2.8 = 5.8 us. p = 6 (p' = 4): fold and unfold 2(a + n b) = 8.4 us
** plus 2 lg p' a + 2n(p'-1)/p' b = 4 + 4.8 us: 17.2 us.
** Tree p = 8 (depth H = 3, whole buffers): all-reduce 2H(a + n b) = 6 x 4.2 = 25.2 us,
** broadcast H(a + n b) = 12.6 us; double binary tree, half each: 2H(a + n/2 b) = 15.6 us.
** all_to_all p = 4, count 400: (p-1)(a + n/p b) = 3 x 1.4 = 4.2 us. */
static void test_mesh_closed_forms(void **state) {
  (void)state;
  int p8 = 8, p6 = 6, p4 = 4;
  assert_close(timed(make_mesh, &p8, SIM_COLL_ALL_REDUCE, SIM_ALGO_HALVING_DOUBLING, 800), 11.6);
  assert_close(timed(make_mesh, &p8, SIM_COLL_REDUCE_SCATTER, SIM_ALGO_HALVING_DOUBLING, 800), 5.8);
  assert_close(timed(make_mesh, &p8, SIM_COLL_ALL_GATHER, SIM_ALGO_HALVING_DOUBLING, 800), 5.8);
  assert_close(timed(make_mesh, &p6, SIM_COLL_ALL_REDUCE, SIM_ALGO_HALVING_DOUBLING, 800), 17.2);
  assert_close(timed(make_mesh, &p8, SIM_COLL_ALL_REDUCE, SIM_ALGO_TREE, 800), 25.2);
  assert_close(timed(make_mesh, &p8, SIM_COLL_BROADCAST, SIM_ALGO_TREE, 800), 12.6);
  assert_close(timed(make_mesh, &p8, SIM_COLL_ALL_REDUCE, SIM_ALGO_DOUBLE_TREE, 800), 15.6);
  assert_close(timed(make_mesh, &p4, SIM_COLL_ALL_TO_ALL, SIM_ALGO_RING, 400), 4.2);
}

/* ---- contention and sanity ------------------------------------------------------------------ */

/* Two ring all-reduces on one 4-node ring share every link: each takes longer than one alone
** (the bandwidth term doubles, the latency term does not). */
static void test_two_allreduces_share_links(void **state) {
  (void)state;
  shape ring4 = {1, {4}, {1}};
  sim_time alone = timed(make_torus, &ring4, SIM_COLL_ALL_REDUCE, SIM_ALGO_RING, 100000);
  sim_engine *e = sim_engine_new();
  net *t = make_torus(e, &ring4);
  sim_collective *c1 = sim_collective_new(e, "a", 4, net_route, t, NULL);
  sim_collective *c2 = sim_collective_new(e, "b", 4, net_route, t, NULL);
  int done = 0;
  sim_collective_start(c1, SIM_COLL_ALL_REDUCE, SIM_ALGO_RING, 0, NULL, 100000, count_done, &done);
  sim_collective_start(c2, SIM_COLL_ALL_REDUCE, SIM_ALGO_RING, 0, NULL, 100000, count_done, &done);
  assert_int_equal(sim_run(e), 0);
  assert_int_equal(done, 2);
  assert_true(sim_collective_last_duration(c1) > alone);
  assert_true(sim_collective_last_duration(c2) > alone);
  /* 6 steps of 1 us + 100 KB at half of 1e9 B/s: 6 + 6 x 200 us. */
  assert_close(sim_collective_last_duration(c1), 6 * (1 + 200.0));
  sim_collective_free(c1);
  sim_collective_free(c2);
  net_free(t);
  sim_engine_free(e);
}

/* Ring, torus, tree and halving-doubling all-reduce on the same 4x4 wrapped torus differ. */
static void test_algorithms_differ_on_a_torus(void **state) {
  (void)state;
  shape t44 = {2, {4, 4}, {1, 1}};
  sim_algo algos[5] = {SIM_ALGO_RING, SIM_ALGO_TORUS, SIM_ALGO_TREE, SIM_ALGO_DOUBLE_TREE,
                       SIM_ALGO_HALVING_DOUBLING};
  sim_time d[5];
  for (int i = 0; i < 5; i++) d[i] = timed(make_torus, &t44, SIM_COLL_ALL_REDUCE, algos[i], 1 << 16);
  for (int i = 0; i < 5; i++)
    for (int j = i + 1; j < 5; j++) assert_true(d[i] != d[j]);
  assert_true(d[1] < d[0]); /* the torus algorithm uses both axes and both directions */
}

/* Simulated time rises with the message size, for every algorithm. */
static void test_time_rises_with_size(void **state) {
  (void)state;
  int p8 = 8;
  for (int algo = 0; algo < SIM_ALGO_COUNT; algo++) {
    if (algo == SIM_ALGO_TORUS) continue;
    sim_time last = 0;
    for (size_t count = 1000; count <= 1000000; count *= 10) {
      sim_time d = timed(make_mesh, &p8, SIM_COLL_ALL_REDUCE, (sim_algo)algo, count);
      assert_true(d > last);
      last = d;
    }
  }
}

/* ---- errors, names, memory ------------------------------------------------------------------ */

static void test_errors(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  net *t = mesh_new(e, 6);
  sim_collective *c = sim_collective_new(e, "c", 6, net_route, t, NULL);
  assert_int_equal(sim_collective_check(c, SIM_COLL_ALL_REDUCE, SIM_ALGO_TORUS, 0, 10), SIM_COLL_ETORUS);
  int bad[2] = {2, 2}, good[2] = {3, 2};
  sim_collective_set_torus(c, 2, bad, NULL);
  assert_int_equal(sim_collective_check(c, SIM_COLL_ALL_REDUCE, SIM_ALGO_TORUS, 0, 10), SIM_COLL_ETORUS);
  sim_collective_set_torus(c, 2, good, NULL);
  assert_int_equal(sim_collective_check(c, SIM_COLL_ALL_REDUCE, SIM_ALGO_TORUS, 0, 10), SIM_OK);
  assert_int_equal(sim_collective_check(c, SIM_COLL_ALL_TO_ALL, SIM_ALGO_RING, 0, 10), SIM_COLL_EINVAL);
  assert_int_equal(sim_collective_check(c, SIM_COLL_BROADCAST, SIM_ALGO_TREE, 6, 10), SIM_COLL_EINVAL);
  assert_int_equal(sim_collective_check(c, SIM_COLL_REDUCE_SCATTER, SIM_ALGO_HALVING_DOUBLING, 0, 10),
                   SIM_COLL_EUNSUPPORTED); /* p = 6 is not a power of two */
  assert_int_equal(sim_collective_check(c, SIM_COLL_BROADCAST, SIM_ALGO_DOUBLE_TREE, 0, 10),
                   SIM_COLL_EUNSUPPORTED);
  int done = 0;
  assert_int_equal(sim_collective_start(c, SIM_COLL_ALL_REDUCE, SIM_ALGO_RING, 0, NULL, 10,
                                        count_done, &done), SIM_OK);
  assert_int_equal(sim_collective_start(c, SIM_COLL_ALL_REDUCE, SIM_ALGO_RING, 0, NULL, 10,
                                        count_done, &done), SIM_COLL_EBUSY);
  assert_int_equal(sim_run(e), 0);
  assert_int_equal(done, 1);
  assert_string_equal(sim_coll_strerror(SIM_COLL_EBUSY), "another collective is under way on the group");
  sim_collective_free(c);
  net_free(t);
  sim_engine_free(e);
}

static void test_names(void **state) {
  (void)state;
  for (int a = 0; a < SIM_ALGO_COUNT; a++) {
    sim_algo got = SIM_ALGO_COUNT;
    assert_int_equal(sim_algo_parse(sim_algo_name((sim_algo)a), &got), 0);
    assert_int_equal(got, a);
  }
  for (int o = 0; o < SIM_COLL_OP_COUNT; o++) {
    sim_coll_op got = SIM_COLL_OP_COUNT;
    assert_int_equal(sim_coll_op_parse(sim_coll_op_name((sim_coll_op)o), &got), 0);
    assert_int_equal(got, o);
  }
  assert_string_equal(sim_algo_name(SIM_ALGO_DOUBLE_TREE), "double_binary_tree");
  assert_string_equal(sim_algo_name((sim_algo)99), "unknown");
  sim_algo a = SIM_ALGO_RING;
  assert_int_equal(sim_algo_parse("binary_tree", &a), -1);
  assert_int_equal(a, SIM_ALGO_RING);
}

/* Routes over link set `set`: rank r's transfers cross links[set][r][0..hops), whoever the
** receiver; calls counts the questions. */
typedef struct counted_routes {
  sim_link *links[2][4][2];  /* [set][sender][hop] */
  int set;                   /* the set routes are drawn from now */
  size_t hops;               /* links per route */
  int calls;                 /* route questions so far */
} counted_routes;

static size_t counted_route(void *ctx, int from, int to, sim_link **out, size_t max) {
  (void)to;
  counted_routes *r = ctx;
  r->calls++;
  for (size_t h = 0; h < r->hops && h < max; h++) out[h] = r->links[r->set][from][h];
  return r->hops;
}

/* A ring all-reduce of 400 floats on 4 ranks: 6 steps, each rank sending a 100-float chunk
** (400 B) to rank + 1. A one-link route is asked once per rank and collective (4 questions, not
** 24), and asked again by the next collective, which then runs over the links the route fn names
** by then: each link of set 0 carries 6 x 400 = 2400 B in the first run, set 1's in the second.
** A two-link route is asked for every transfer (24) transfer by transfer; a run in closed form
** (shapes alone, collective.c) keeps routes of up to 4 links per rank and peer: 4 questions. */
static void test_routes_per_collective(void **state) {
  (void)state;
  for (int closed = 0; closed < 2; closed++)
  for (size_t hops = 1; hops <= 2; hops++) {
    sim_engine *e = sim_engine_new();
    sim_engine_set_closed_form(e, closed);
    counted_routes r = {.hops = hops};
    for (int set = 0; set < 2; set++)
      for (int k = 0; k < 4; k++)
        for (int h = 0; h < 2; h++) r.links[set][k][h] = sim_link_new(e, "l", BW, US);
    sim_collective *c = sim_collective_new(e, "c", 4, counted_route, &r, NULL);
    for (int set = 0; set < 2; set++) {
      r.set = set;
      r.calls = 0;
      assert_int_equal(sim_collective_start(c, SIM_COLL_ALL_REDUCE, SIM_ALGO_RING, 0, NULL, 400, NULL,
                                            NULL), SIM_OK);
      assert_int_equal(sim_run(e), 0);
      assert_int_equal(r.calls, hops == 1 || closed ? 4 : 24);
      for (int k = 0; k < 4; k++) assert_true(sim_link_bytes(r.links[set][k][0]) == 2400);
    }
    sim_collective_free(c);
    sim_engine_free(e);
  }
}

/* A 4096-rank group's state per rank, routes excluded: well under 1 KB. A torus rank has a
** coll_rank per lane (3 on a v4 pod: 240 bytes) and its caller and buffer pointers. */

/* ---- closed form against event by event (engine.c invariants 7 to 9) ------------------------ */

/* What disturbs the collective's links: nothing, a flow of 50 kB over the first link of rank 0's
** route to rank 1 started at `at`, that link down to a quarter of its bandwidth from `at` until
** `at` + 40 us, or (actors) rank 1's caller killed at `at`. With rank cpus, what disturbs rank
** 1's cpu: an exec of 300 flops started on it at `at`, or its speed down to a quarter from `at`
** until `at` + 40 us. */
typedef enum { QUIET, FLOW, DEGRADE, KILL, CPU_EXEC, CPU_SLOW } disturbance;

typedef struct run_result {
  sim_time done;             /* when the collective finished (or its survivors woke) */
  sim_time flow_done;        /* when the disturbing flow finished (or the disturbing exec) */
  double bytes[256];         /* every link's bytes at the end */
  float *bufs[16];           /* every rank's buffer at the end */
  int rcs[16];               /* actors: what each caller got */
  uint64_t events;           /* events the engine fired */
} run_result;

typedef struct disturb_ctx {
  sim_link *link;            /* the link disturbed */
  sim_cpu *cpu;              /* the cpu disturbed (CPU_EXEC, CPU_SLOW) */
  double speed;              /* its speed */
  run_result *out;           /* where the flow's end goes */
  sim_actor *victim;         /* KILL: the actor killed */
} disturb_ctx;

static void flow_done(sim_engine *e, sim_activity *act, void *arg) {
  (void)act;
  ((disturb_ctx *)arg)->out->flow_done = sim_now(e);
}

static void start_flow(sim_engine *e, void *arg) {
  disturb_ctx *d = arg;
  sim_activity_on_done(sim_comm_start(e, &d->link, 1, 50e3), flow_done, d);
}

static void start_exec(sim_engine *e, void *arg) {
  disturb_ctx *d = arg;
  sim_activity_on_done(sim_exec_start(e, d->cpu, 300), flow_done, d);
}

static void slow_cpu(sim_engine *e, void *arg) {
  (void)e;
  disturb_ctx *d = arg;
  sim_cpu_set_rate(d->cpu, d->speed / 4);
}

static void restore_cpu(sim_engine *e, void *arg) {
  (void)e;
  disturb_ctx *d = arg;
  sim_cpu_set_rate(d->cpu, d->speed);
}

static void degrade(sim_engine *e, void *arg) {
  (void)e;
  sim_link_set_bandwidth(((disturb_ctx *)arg)->link, BW / 4);
}

static void restore(sim_engine *e, void *arg) {
  (void)e;
  sim_link_set_bandwidth(((disturb_ctx *)arg)->link, BW);
}

static void kill_victim(sim_engine *e, void *arg) {
  (void)e;
  sim_actor_kill(((disturb_ctx *)arg)->victim);
}

typedef struct caller {
  sim_collective *c; int rank; sim_coll_op op; sim_algo algo; float *buf; size_t count;
  run_result *out;
} caller;

static void caller_main(sim_actor *self, void *arg) {
  caller *k = arg;
  k->out->rcs[k->rank] = sim_collective_run(self, k->c, k->rank, k->op, k->algo, 0, k->buf, k->count);
  if (k->out->done < sim_now(sim_actor_engine(self))) k->out->done = sim_now(sim_actor_engine(self));
}

static void mark_done(sim_engine *e, sim_collective *c, void *arg) {
  (void)c;
  ((run_result *)arg)->done = sim_now(e);
}

/* Runs op by algo on t (made by make from shape) with the closed form on or off, its reductions
** charged on a cpu per rank of cpu_speed flops/s (0: free). */
static void run_disturbed(net *(*make)(sim_engine *, const void *), const void *shape, sim_coll_op op,
                          sim_algo algo, size_t count, disturbance what, sim_time at, int closed,
                          int numerics, double cpu_speed, run_result *out) {
  memset(out, 0, sizeof *out);
  sim_engine *e = sim_engine_new();
  sim_engine_set_closed_form(e, closed);
  net *t = make(e, shape);
  assert_true(t->p <= 16);
  sim_cpu *cpus[16];
  for (int r = 0; r < t->p; r++) cpus[r] = cpu_speed > 0 ? sim_cpu_new(e, "cpu", cpu_speed) : NULL;
  sim_collective *c = sim_collective_new(e, "c", t->p, net_route, t, cpu_speed > 0 ? cpus : NULL);
  if (t->nd > 0) sim_collective_set_torus(c, t->nd, t->dims, t->wraps);
  sim_link *first = NULL;
  net_route(t, 0, 1, &first, 1);
  disturb_ctx d = {first, cpus[1], cpu_speed, out, NULL};
  for (int r = 0; r < t->p; r++) {
    out->bufs[r] = malloc((count + 1) * sizeof(float));
    for (size_t i = 0; i < count; i++) out->bufs[r][i] = value(r, i);
  }
  caller callers[16];
  if (what == KILL) {
    for (int r = 0; r < t->p; r++) {
      callers[r] = (caller){c, r, op, algo, numerics ? out->bufs[r] : NULL, count, out};
      sim_actor *a = sim_actor_spawn(e, "rank", caller_main, &callers[r]);
      if (r == 1) d.victim = a;
    }
    sim_schedule(e, at, kill_victim, &d);
  } else {
    assert_int_equal(sim_collective_start(c, op, algo, 0, numerics ? out->bufs : NULL, count, mark_done, out), SIM_OK);
    if (what == FLOW) sim_schedule(e, at, start_flow, &d);
    if (what == DEGRADE) {
      sim_schedule(e, at, degrade, &d);
      sim_schedule(e, at + 40 * US, restore, &d);
    }
    if (what == CPU_EXEC) sim_schedule(e, at, start_exec, &d);
    if (what == CPU_SLOW) {
      sim_schedule(e, at, slow_cpu, &d);
      sim_schedule(e, at + 40 * US, restore_cpu, &d);
    }
  }
  assert_int_equal(sim_run(e), 0);
  size_t n = t->nd > 0 ? (size_t)t->p * (size_t)t->nd * 2 : (size_t)t->p * (size_t)t->p;
  assert_true(n <= 256);
  for (size_t i = 0; i < n; i++) {
    out->bytes[i] = sim_link_bytes(t->links[i]);
    assert_null(t->links[i]->res.solo); /* every solo transfer let go of its links */
  }
  out->events = sim_events_processed(e);
  sim_collective_free(c);
  net_free(t);
  sim_engine_free(e);
}

/* Every link's bytes agree; to the bit when nothing fell back, else to 1e-12 (invariant 9 of
** engine.c: a transfer that falls back adds its bytes to its links' counters in another order
** against the other flows; no time depends on those counters). */
static int same_bytes(const run_result *a, const run_result *b) {
  for (size_t i = 0; i < sizeof a->bytes / sizeof *a->bytes; i++)
    if (fabs(a->bytes[i] - b->bytes[i]) > 1e-12 * fabs(b->bytes[i])) return 0;
  return 1;
}

/* Both ways of one case: the same times to the picosecond, the same bits, the same bytes. On
** shapes alone (numerics 0) a run whose transfers would all be solo is worked out whole
** (collective.c, "Closed form"): one event if nothing disturbs it, its links' bytes to the bit. */
static void check_closed_form_run(net *(*make)(sim_engine *, const void *), const void *shape, int p,
                                  sim_coll_op op, sim_algo algo, size_t count, disturbance what, sim_time at,
                                  int numerics, double cpu) {
  run_result fast, slow;
  run_disturbed(make, shape, op, algo, count, what, at, 1, numerics, cpu, &fast);
  run_disturbed(make, shape, op, algo, count, what, at, 0, numerics, cpu, &slow);
  if (fast.events == 1) assert_memory_equal(fast.bytes, slow.bytes, sizeof fast.bytes);
  if (fast.done != slow.done || fast.flow_done != slow.flow_done || !same_bytes(&fast, &slow))
    fail_msg("%s %s p=%d count=%zu disturbance %d at %lld: closed form %lld/%lld ps, events %lld/%lld ps",
             sim_coll_op_name(op), sim_algo_name(algo), p, count, (int)what, (long long)at,
             (long long)fast.done, (long long)fast.flow_done, (long long)slow.done, (long long)slow.flow_done);
  assert_memory_equal(fast.rcs, slow.rcs, sizeof fast.rcs);
  assert_true(fast.events <= slow.events);
  for (int r = 0; r < p; r++) {
    if (numerics) assert_memory_equal(fast.bufs[r], slow.bufs[r], count * sizeof(float));
    free(fast.bufs[r]);
    free(slow.bufs[r]);
  }
}

static void check_closed_form(net *(*make)(sim_engine *, const void *), const void *shape, int p,
                              sim_coll_op op, sim_algo algo, size_t count, disturbance what, sim_time at) {
  check_closed_form_run(make, shape, p, op, algo, count, what, at, 1, 0);
  check_closed_form_run(make, shape, p, op, algo, count, what, at, 0, 0);
}

/* Every supported op x algorithm on a mesh (one-link routes) and on tori (routes of several
** links, some shared between the transfers of a round: shared from the start, they never go
** solo), quiet and disturbed at times that fall in a transfer's latency, in its bytes and at
** the collective's start. */
static void test_closed_form_equals_events(void **state) {
  (void)state;
  static const int ps[] = {2, 5, 8};
  static const size_t counts[] = {37, 1000, 100003};
  static const shape tori[] = {{2, {4, 4}, {1, 1}}, {3, {2, 2, 2}, {1, 0, 1}}, {2, {4, 2}, {0, 1}}};
  static const sim_time ats[] = {0, US / 2, 3 * US + 7, 41 * US + 123};
  for (int op = 0; op < SIM_COLL_OP_COUNT; op++)
    for (int algo = 0; algo < SIM_ALGO_COUNT; algo++)
      for (size_t j = 0; j < sizeof counts / sizeof *counts; j++) {
        size_t count = counts[j];
        for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) {
          int p = ps[i];
          size_t n = op == SIM_COLL_ALL_TO_ALL ? count / (size_t)p * (size_t)p : count;
          if (algo == SIM_ALGO_TORUS || !supported((sim_coll_op)op, (sim_algo)algo, p)) continue;
          for (int what = QUIET; what <= DEGRADE; what++)
            for (size_t a = 0; a < (what == QUIET ? 1 : sizeof ats / sizeof *ats); a++)
              check_closed_form(make_mesh, &p, p, (sim_coll_op)op, (sim_algo)algo, n, (disturbance)what, ats[a]);
        }
        for (size_t i = 0; i < sizeof tori / sizeof *tori; i++) {
          int p = 1;
          for (int a = 0; a < tori[i].nd; a++) p *= tori[i].dims[a];
          size_t n = op == SIM_COLL_ALL_TO_ALL ? count / (size_t)p * (size_t)p : count;
          if (!supported((sim_coll_op)op, (sim_algo)algo, p)) continue;
          for (int what = QUIET; what <= DEGRADE; what++)
            for (size_t a = 0; a < (what == QUIET ? 1 : sizeof ats / sizeof *ats); a++)
              check_closed_form(make_torus, &tori[i], p, (sim_coll_op)op, (sim_algo)algo, n, (disturbance)what, ats[a]);
        }
      }
}

/* Reductions charged on rank cpus (a training program's gradients) go in closed form too: each
** cpu at 250e6 flops/s takes about as long to add a chunk as a link takes to carry it (1000
** floats on a 4x4 torus's two lanes: 31-32 floats each way, 0.125 us against 0.125 us of bytes after
** 1 us of latency), so the two lanes' reductions overlap on every rank's cpu and share it, and with
** 100003 floats the chunks are uneven (one float longer), so shares end at different picoseconds;
** with 37 floats some lanes' shares are empty (a transfer of its latency alone, a reduction of
** nothing). Quiet, a torus all-reduce is one event; disturbed on a link, or on rank 1's cpu (an exec of its
** own, a slowdown), at the start, in a latency, in the bytes and in a reduction, the run, the
** disturbing flow or exec and every link's bytes come out as event by event. */
static void test_closed_form_with_rank_cpus(void **state) {
  (void)state;
  static const shape tori[] = {{2, {4, 4}, {1, 1}}, {3, {2, 2, 2}, {1, 0, 1}}, {2, {4, 2}, {0, 1}}, {1, {8}, {1}}};
  static const size_t counts[] = {37, 1000, 100003};
  static const sim_time ats[] = {0, US / 2, 3 * US + 7, 14 * US + 1, 41 * US + 123};
  static const sim_coll_op ops[] = {SIM_COLL_ALL_REDUCE, SIM_COLL_REDUCE_SCATTER};
  const double cpu = 250e6;
  for (size_t j = 0; j < sizeof counts / sizeof *counts; j++) {
    run_result quiet;
    run_disturbed(make_torus, &tori[0], SIM_COLL_ALL_REDUCE, SIM_ALGO_TORUS, counts[j], QUIET, 0, 1, 0, cpu, &quiet);
    assert_int_equal(quiet.events, 1);
    for (int r = 0; r < 16; r++) free(quiet.bufs[r]);
    for (size_t o = 0; o < sizeof ops / sizeof *ops; o++)
      for (int algo = 0; algo < SIM_ALGO_COUNT; algo++) {
        for (size_t i = 0; i < sizeof tori / sizeof *tori; i++) {
          int p = 1;
          for (int a = 0; a < tori[i].nd; a++) p *= tori[i].dims[a];
          if (!supported(ops[o], (sim_algo)algo, p)) continue;
          for (int what = QUIET; what <= CPU_SLOW; what++) {
            if (what == KILL) continue;
            for (size_t a = 0; a < (what == QUIET ? 1 : sizeof ats / sizeof *ats); a++)
              check_closed_form_run(make_torus, &tori[i], p, ops[o], (sim_algo)algo, counts[j], (disturbance)what,
                                    ats[a], 0, cpu);
          }
        }
        int p = 5;
        if (algo != SIM_ALGO_TORUS && supported(ops[o], (sim_algo)algo, p))
          for (size_t a = 0; a < sizeof ats / sizeof *ats; a++)
            check_closed_form_run(make_mesh, &p, p, ops[o], (sim_algo)algo, counts[j], CPU_EXEC, ats[a], 0, cpu);
      }
  }
}

/* A rank's caller killed before, during a latency and during the bytes of a round: the others
** fail at the same picosecond both ways, and no solo transfer keeps a link. */
static void test_closed_form_kill(void **state) {
  (void)state;
  static const shape ring8 = {1, {8}, {1}}, t44 = {2, {4, 4}, {1, 1}};
  static const sim_time ats[] = {0, US / 2, 3 * US + 7, 41 * US + 123};
  for (size_t a = 0; a < sizeof ats / sizeof *ats; a++) {
    check_closed_form(make_torus, &ring8, 8, SIM_COLL_ALL_REDUCE, SIM_ALGO_RING, 100003, KILL, ats[a]);
    check_closed_form(make_torus, &t44, 16, SIM_COLL_ALL_REDUCE, SIM_ALGO_TORUS, 100003, KILL, ats[a]);
  }
}

/* The closed form needs fewer events: a quiet 8-rank ring all-reduce of equal chunks is one
** event per round (14) instead of two per transfer (224). */
static void test_closed_form_events(void **state) {
  (void)state;
  static const shape ring8 = {1, {8}, {1}};
  run_result fast, slow;
  run_disturbed(make_torus, &ring8, SIM_COLL_ALL_REDUCE, SIM_ALGO_RING, 8000, QUIET, 0, 1, 1, 0, &fast);
  run_disturbed(make_torus, &ring8, SIM_COLL_ALL_REDUCE, SIM_ALGO_RING, 8000, QUIET, 0, 0, 1, 0, &slow);
  assert_memory_equal(fast.bytes, slow.bytes, sizeof fast.bytes);
  assert_int_equal(fast.events, 14);
  assert_int_equal(slow.events, 14 * 8 * 2);
  assert_int_equal(fast.done, slow.done);
  for (int r = 0; r < 8; r++) {
    free(fast.bufs[r]);
    free(slow.bufs[r]);
  }
}

/* A whole run in closed form (collective.c, "Closed form"; shapes alone): quiet, an 8-rank ring
** all-reduce of 100003 floats (uneven chunks: 12501 and 12500 floats) and a 4x4 torus's are one
** event each, at the picosecond of the transfer-by-transfer run; a flow over rank 0's first link
** in the middle of a round's bytes (41 us + 123 ps: 1 us of latency, then 50 kB at 1 GB/s),
** contending with it, hands the run back to per-transfer simulation at that moment: more events,
** and both the run and the flow end at the same picoseconds as event by event. */
static void test_whole_run_closed_form(void **state) {
  (void)state;
  static const shape ring8 = {1, {8}, {1}}, t44 = {2, {4, 4}, {1, 1}};
  const shape *shapes[] = {&ring8, &t44};
  const sim_algo algos[] = {SIM_ALGO_RING, SIM_ALGO_TORUS};
  for (int i = 0; i < 2; i++)
    for (int what = QUIET; what <= FLOW; what++) {
      run_result fast, slow;
      run_disturbed(make_torus, shapes[i], SIM_COLL_ALL_REDUCE, algos[i], 100003, (disturbance)what, 41 * US + 123,
                    1, 0, 0, &fast);
      run_disturbed(make_torus, shapes[i], SIM_COLL_ALL_REDUCE, algos[i], 100003, (disturbance)what, 41 * US + 123,
                    0, 0, 0, &slow);
      assert_int_equal(fast.done, slow.done);
      assert_int_equal(fast.flow_done, slow.flow_done);
      assert_true(fast.done > 41 * US + 123); /* the flow starts inside the run */
      if (what == QUIET) {
        assert_int_equal(fast.events, 1);
        assert_memory_equal(fast.bytes, slow.bytes, sizeof fast.bytes);
      } else {
        assert_true(fast.events > 2 && fast.flow_done > 0);
        assert_true(same_bytes(&fast, &slow));
      }
      for (int r = 0; r < 16; r++) {
        free(fast.bufs[r]);
        free(slow.bufs[r]);
      }
    }
}

/* Handed back at 31 moments spread over a quiet run (a flow over rank 0's first link starting
** then), on tori whose lanes take stages of different lengths, so that some moments find a lane
** parked at its stage barrier, some a transfer in its latency: the run and the flow end at the
** picoseconds of the event-by-event run every time, every link's bytes within 1e-12. With
** reductions on rank cpus (as test_closed_form_with_rank_cpus), the moments also find reductions
** sharing a cpu, and an exec started on rank 1's cpu hands the run back the same way. (Those
** runs take tori whose lanes' stages are equally long: on a 4x2 at these speeds an axis-of-2
** lane's reduction, half its share, still runs on the cpu when the other lane's next round's
** begins, which the closed form declines; test_closed_form_with_rank_cpus checks that case.) */
static void test_whole_run_handed_back(void **state) {
  (void)state;
  static const shape t42 = {2, {4, 2}, {1, 1}}, t24 = {2, {2, 4}, {1, 0}}, t222 = {3, {2, 2, 2}, {1, 0, 1}},
                     t44 = {2, {4, 4}, {1, 1}}, ring8 = {1, {8}, {1}};
  const shape *free_reductions[] = {&t42, &t24, &t222}, *on_cpus[] = {&t44, &t222, &ring8};
  for (int w = 0; w < 3; w++) {
  double cpu = w == 0 ? 0 : 250e6;
  disturbance what = w == 2 ? CPU_EXEC : FLOW;
  const shape *const *shapes = w == 0 ? free_reductions : on_cpus;
  for (int i = 0; i < 3; i++) {
    run_result quiet, fast, slow;
    run_disturbed(make_torus, shapes[i], SIM_COLL_ALL_REDUCE, SIM_ALGO_TORUS, 10007, QUIET, 0, 1, 0, cpu, &quiet);
    assert_int_equal(quiet.events, 1);
    for (sim_time k = 1; k < 32; k++) {
      sim_time at = quiet.done * k / 32 + k; /* off the round boundaries' picoseconds */
      run_disturbed(make_torus, shapes[i], SIM_COLL_ALL_REDUCE, SIM_ALGO_TORUS, 10007, what, at, 1, 0, cpu, &fast);
      run_disturbed(make_torus, shapes[i], SIM_COLL_ALL_REDUCE, SIM_ALGO_TORUS, 10007, what, at, 0, 0, cpu, &slow);
      if (fast.done != slow.done || fast.flow_done != slow.flow_done || !same_bytes(&fast, &slow))
        fail_msg("cpus %g shape %d disturbance %d at %lld: closed form %lld/%lld ps, events %lld/%lld ps", cpu, i,
                 (int)what, (long long)at,
                 (long long)fast.done, (long long)fast.flow_done, (long long)slow.done, (long long)slow.flow_done);
      for (int r = 0; r < 16; r++) {
        free(fast.bufs[r]);
        free(slow.bufs[r]);
      }
    }
    for (int r = 0; r < 16; r++) free(quiet.bufs[r]);
  }
  }
}

/* Ties (invariant 9): solo transfers due at one picosecond complete in the order their own
** events would have had: by when their bytes started (A started first, with a longer latency,
** so its bytes start after B's and C's), then by start (B before C). */
typedef struct tie_log { char order[4]; int n; } tie_log;
typedef struct tie_arg { tie_log *log; char name; } tie_arg;

static void tie_done(sim_engine *e, sim_activity *act, void *arg) {
  (void)e, (void)act;
  tie_arg *t = arg;
  t->log->order[t->log->n++] = t->name;
}

/* Returns the order A, B, C completed in; all three end at 10 us: A's link has 3 us of latency
** and A sends 7000 B at 1e9 B/s, B and C have 1 us and send 9000 B. */
static void tie_case(int closed, char order[4]) {
  sim_engine *e = sim_engine_new();
  sim_engine_set_closed_form(e, closed);
  sim_link *la = sim_link_new(e, "a", BW, 3 * US), *lb = sim_link_new(e, "b", BW, US),
           *lc = sim_link_new(e, "c", BW, US);
  tie_log log = {{0}, 0};
  tie_arg args[3] = {{&log, 'A'}, {&log, 'B'}, {&log, 'C'}};
  sim_activity *acts[3] = {sim__comm_start_solo(e, &la, 1, 7000), sim__comm_start_solo(e, &lb, 1, 9000),
                           sim__comm_start_solo(e, &lc, 1, 9000)};
  for (int i = 0; i < 3; i++) sim_activity_on_done(acts[i], tie_done, &args[i]);
  assert_int_equal(sim_run(e), 0);
  assert_int_equal(log.n, 3);
  assert_int_equal(sim_now(e), 10 * US);
  assert_int_equal(sim_events_processed(e), closed ? 1 : 6);
  memcpy(order, log.order, 4);
  sim_engine_free(e);
}

static void test_closed_form_ties(void **state) {
  (void)state;
  char fast[4], slow[4];
  tie_case(1, fast);
  tie_case(0, slow);
  assert_string_equal(slow, "BCA");
  assert_string_equal(fast, slow);
}

/* ---- the uniform torus (collective.c, fast_plan_uniform) --------------------------------- */

typedef enum { EVENTS, GENERAL, UNIFORM } planner; /* event by event; closed form by the general
                                                      pass alone; closed form with the shortcut */

typedef struct uniform_run {
  sim_time done;             /* when the all-reduce finished */
  double *bytes;             /* every link's bytes at the end */
  size_t n;                  /* links */
  int p;                     /* ranks */
  uint64_t events;           /* events the engine fired */
  int planned;               /* the all-reduce's plan came from the shortcut */
  int lanes;                 /* its lanes */
  double *flops;             /* with rank cpus: every cpu's flops at the end, else NULL */
  int ring_rounds;           /* rounds its planning pass took from tables (fast_ring_round) */
} uniform_run;

static void note_done(sim_engine *e, sim_collective *c, void *arg) {
  (void)c;
  *(sim_time *)arg = sim_now(e);
}

/* The groups' fixed cost per collective in run_uniform (sim_collective_set_fixed_cost; 0 but in
** test_uniform_torus_fixed_cost). */
static sim_time uniform_fixed_cost;

/* run_uniform's rank cpus' speed, flops/s: 0 (reductions free) but in test_ring_rounds. */
static double uniform_cpu_speed;

/* A torus `op` of `count` floats on sh, every link of bandwidth bw and 1 us latency, planned
** `how`; before it a flow of `pre` bytes over rank 0's link to rank 1 (when pre > 0) and a
** reduce-scatter of `count` floats (when `scatter`), one after the other, so that the links
** start with bytes done; rank 0's link to rank 1 at a quarter of bw from `at` after the op's
** start until 40 us later (at < 0: never). */
static void run_uniform(const shape *sh, sim_coll_op op, double bw, size_t count, planner how, double pre,
                        int scatter, sim_time at, uniform_run *out) {
  sim_engine *e = sim_engine_new();
  sim_engine_set_closed_form(e, how != EVENTS);
  net *t = torus_new(e, sh->nd, sh->dims, sh->wraps);
  out->n = (size_t)t->p * (size_t)t->nd * 2;
  out->p = t->p;
  for (size_t i = 0; i < out->n; i++) sim_link_set_bandwidth(t->links[i], bw);
  sim_cpu **cpus = NULL;
  if (uniform_cpu_speed > 0) {
    cpus = malloc((size_t)t->p * sizeof *cpus);
    for (int r = 0; r < t->p; r++) cpus[r] = sim_cpu_new(e, "cpu", uniform_cpu_speed);
  }
  sim_collective *c = sim_collective_new(e, "c", t->p, net_route, t, cpus);
  sim_collective_set_torus(c, t->nd, t->dims, t->wraps);
  sim_collective_set_fixed_cost(c, uniform_fixed_cost);
  c->uniform_off = how == GENERAL;
  sim_link *first = NULL;
  net_route(t, 0, 1, &first, 1);
  if (pre > 0) sim_comm_start(e, &first, 1, pre);
  assert_int_equal(sim_run(e), 0);
  sim_time begun = 0;
  if (scatter)
    assert_int_equal(sim_collective_start(c, SIM_COLL_REDUCE_SCATTER, SIM_ALGO_TORUS, 0, NULL, count, note_done,
                                          &begun), SIM_OK);
  assert_int_equal(sim_run(e), 0);
  assert_int_equal(sim_collective_start(c, op, SIM_ALGO_TORUS, 0, NULL, count, note_done, &out->done), SIM_OK);
  out->lanes = c->lanes;
  disturb_ctx d = {first, NULL, 0, NULL, NULL};
  if (at >= 0) {
    sim_schedule(e, begun + at, degrade, &d);
    sim_schedule(e, begun + at + 40 * US, restore, &d);
  }
  assert_int_equal(sim_run(e), 0);
  out->planned = c->planned_uniform; /* planned when the rounds began: after a fixed cost's wait */
  out->ring_rounds = c->ring_rounds;
  out->flops = NULL;
  if (cpus != NULL) {
    out->flops = malloc((size_t)t->p * sizeof *out->flops);
    for (int r = 0; r < t->p; r++) out->flops[r] = cpus[r]->res.done;
    free(cpus);
  }
  out->done -= begun;
  out->bytes = malloc(out->n * sizeof *out->bytes);
  for (size_t i = 0; i < out->n; i++) {
    out->bytes[i] = sim_link_bytes(t->links[i]);
    assert_null(t->links[i]->res.solo);
  }
  out->events = sim_events_processed(e);
  sim_collective_free(c);
  net_free(t);
  sim_engine_free(e);
}

/* With rank cpus, every cpu's flops: the shortcuts' plan (u) the general pass's (g) to the bit,
** the event-by-event run's (ev) within 1e-12: the closed form adds a shared reduction's flops
** piece by piece at each picosecond the sharing changes, as maxmin.c moves them, but maxmin.c
** brings the pieces up to date at other moments too (a cpu of 4x4x4 ends 98437.999999999942
** against 98437.999999999956), and a reduction handed back adds them in another order. */
static void same_flops(const uniform_run *g, const uniform_run *u, const uniform_run *ev) {
  assert_true((g->flops == NULL) == (u->flops == NULL) && (ev->flops == NULL) == (u->flops == NULL));
  if (u->flops == NULL) return;
  assert_memory_equal(g->flops, u->flops, (size_t)u->p * sizeof(double));
  for (int r = 0; r < u->p; r++)
    if (fabs(ev->flops[r] - u->flops[r]) > 1e-12 * fabs(ev->flops[r]))
      fail_msg("cpu %d: %.17g flops, events %.17g", r, u->flops[r], ev->flops[r]);
}

/* The three planners on one case, quiet and with the link degraded at 7 moments spread over the
** run (off the rounds' picoseconds): the shortcut's run is the general pass's to the bit (times,
** every link's bytes, events) and the event-by-event run's to the picosecond (bytes to the bit
** when quiet, to 1e-12 once handed back: engine.c invariant 9). `shortcut`: whether the
** shortcut must plan it (else it must decline); `lanes` the lanes the run must take. */
static void check_uniform_op(const shape *sh, sim_coll_op op, double bw, size_t count, double pre, int scatter,
                             int shortcut, int lanes) {
  uniform_run quiet[3];
  for (int how = EVENTS; how <= UNIFORM; how++)
    run_uniform(sh, op, bw, count, (planner)how, pre, scatter, -1, &quiet[how]);
  if (quiet[UNIFORM].planned != shortcut || quiet[UNIFORM].lanes != lanes)
    fail_msg("%dx%dx%d count %zu bw %g: planned %d lanes %d, want %d and %d", sh->dims[0], sh->dims[1],
             sh->nd > 2 ? sh->dims[2] : 1, count, bw, quiet[UNIFORM].planned, quiet[UNIFORM].lanes, shortcut, lanes);
  assert_int_equal(quiet[GENERAL].planned, 0);
  assert_int_equal(quiet[GENERAL].ring_rounds, 0);
  int rings = 1; /* every axis longer than 1 a ring: the planning pass takes its rounds from tables */
  for (int a = 0; a < sh->nd; a++) rings &= sh->dims[a] == 1 || (sh->wraps[a] && sh->dims[a] > 2);
  if ((quiet[UNIFORM].ring_rounds > 0) != (rings && !shortcut))
    fail_msg("ring rounds %d, want them %s", quiet[UNIFORM].ring_rounds, rings && !shortcut ? "taken" : "not taken");
  for (int how = EVENTS; how <= GENERAL; how++) {
    assert_int_equal(quiet[how].done, quiet[UNIFORM].done);
    assert_memory_equal(quiet[how].bytes, quiet[UNIFORM].bytes, quiet[UNIFORM].n * sizeof(double));
  }
  same_flops(&quiet[GENERAL], &quiet[UNIFORM], &quiet[EVENTS]);
  assert_int_equal(quiet[UNIFORM].events, quiet[GENERAL].events);
  /* Quiet, the all-reduce is one event, as the reduce-scatter; the flow two (latency, bytes); a
  ** fixed cost one more a collective (its wait: the closed form begins after it). */
  int per_collective = uniform_fixed_cost > 0 ? 2 : 1;
  assert_int_equal(quiet[UNIFORM].events, per_collective * (1 + (scatter ? 1 : 0)) + (pre > 0 ? 2 : 0));
  for (sim_time k = 1; k < 8; k++) {
    uniform_run r[3];
    sim_time at = quiet[UNIFORM].done * k / 8 + k;
    for (int how = EVENTS; how <= UNIFORM; how++)
      run_uniform(sh, op, bw, count, (planner)how, pre, scatter, at, &r[how]);
    assert_int_equal(r[UNIFORM].done, r[GENERAL].done);
    assert_memory_equal(r[UNIFORM].bytes, r[GENERAL].bytes, r[UNIFORM].n * sizeof(double));
    assert_int_equal(r[UNIFORM].events, r[GENERAL].events);
    if (r[UNIFORM].done != r[EVENTS].done) fail_msg("degraded at %lld: %lld ps, events %lld ps", (long long)at,
                                                   (long long)r[UNIFORM].done, (long long)r[EVENTS].done);
    assert_true(r[UNIFORM].events > quiet[UNIFORM].events); /* handed back to transfer by transfer */
    same_flops(&r[GENERAL], &r[UNIFORM], &r[EVENTS]);
    for (size_t i = 0; i < r[UNIFORM].n; i++)
      if (fabs(r[UNIFORM].bytes[i] - r[EVENTS].bytes[i]) > 1e-12 * fabs(r[EVENTS].bytes[i]))
        fail_msg("degraded at %lld: link %zu %.17g bytes, events %.17g", (long long)at, i, r[UNIFORM].bytes[i],
                 r[EVENTS].bytes[i]);
    for (int how = EVENTS; how <= UNIFORM; how++) free(r[how].bytes), free(r[how].flops);
  }
  for (int how = EVENTS; how <= UNIFORM; how++) free(quiet[how].bytes), free(quiet[how].flops);
}

/* The tori test_uniform_torus and test_ring_rounds both take. */
static const shape t44 = {2, {4, 4}, {1, 1}}, t444 = {3, {4, 4, 4}, {1, 1, 1}}, t284 = {3, {2, 8, 4}, {1, 1, 1}},
                   line = {2, {4, 4}, {1, 0}};

static void check_uniform(const shape *sh, double bw, size_t count, double pre, int scatter, int shortcut,
                          int lanes) {
  check_uniform_op(sh, SIM_COLL_ALL_REDUCE, bw, count, pre, scatter, shortcut, lanes);
}

/* Tori whose axes all wrap: 4x4 (two lanes of rings), 4x4x4 (three), 2x8x4 (an axis of two: a
** line of one round, each rank one send) and 16x1x16 (an axis of length 1). Counts:
** - divisible by the ranks (64000 = 16 x 4000; 192000 = 64 x 3000; 102400 = 256 x 400): every
**   chunk alike, so every link of an (axis, direction) carries the same bytes;
** - uneven, the shorter direction's bytes differing: 100003 on 4x4 (chunks of 6250 floats, 3 of
**   6251: lane 0's share 3125 or 3126 floats, its first halves 1563 either way, its second 1562
**   or 1563) and on 16x1x16 (390 or 391: lane 0's 195 or 196, halves 98, then 97 or 98): every
**   rank's round ends with its first half, so the shortcut plans them and charges the second
**   halves' links rank by rank;
** - uneven, the longer direction's bytes differing at 1e9 B/s, where 4 bytes are 4000 ps: 100033
**   on 4x4 (6252 or 6253: lane 0's first halves 1563 or 1564), 100515 on 16x1x16 (392 or 393),
**   100003 on 4x4x4 (1562 or 1563: lane 2's 520 or 521): some ranks' rounds end sooner, and
**   the shortcut must decline;
** - the same at 1e14 B/s, where a float is 0.04 ps: 100033 on 4x4, 100225 on 4x4x4 (1566 or
**   1567), 100097 on 2x8x4 (1564 or 1565; latency-bound, so one lane), 100003 on 16x1x16: the
**   ceilings agree in every round (found by trying counts up from 100003), so the shortcut plans;
** - links that start with bytes done: after a reduce-scatter (whole bytes, different per link),
**   planned; after a flow of 1000.5 bytes over one of them (not whole: the sums would round in
**   another order), declined. */
static void test_uniform_torus(void **state) {
  (void)state;
  static const shape t16 = {3, {16, 1, 16}, {1, 1, 1}};
  check_uniform(&t44, BW, 64000, 0, 0, 1, 2);
  check_uniform(&t444, BW, 192000, 0, 0, 1, 3);
  check_uniform(&t284, BW, 192000, 0, 0, 1, 3);
  check_uniform(&t16, BW, 102400, 0, 0, 1, 2);
  check_uniform(&t44, BW, 100003, 0, 0, 1, 2);
  check_uniform(&t16, BW, 100003, 0, 0, 1, 2);
  check_uniform(&t44, BW, 100033, 0, 0, 0, 2);
  check_uniform(&t16, BW, 100515, 0, 0, 0, 2);
  check_uniform(&t444, BW, 100003, 0, 0, 0, 3);
  check_uniform(&t44, 1e14, 100033, 0, 0, 1, 2);
  check_uniform(&t444, 1e14, 100225, 0, 0, 1, 3);
  check_uniform(&t284, 1e14, 100097, 0, 0, 1, 1);
  check_uniform(&t16, 1e14, 100003, 0, 0, 1, 2);
  check_uniform(&t444, BW, 192000, 0, 1, 1, 3);
  check_uniform(&t444, BW, 192000, 1000.5, 0, 0, 3);
  check_uniform(&line, BW, 64000, 0, 0, 0, 2); /* an axis without wraparound: declined */
  /* The halves alone: reduce-scatter and all-gather stages only. */
  check_uniform_op(&t444, SIM_COLL_REDUCE_SCATTER, BW, 192000, 0, 0, 1, 3);
  check_uniform_op(&t444, SIM_COLL_ALL_GATHER, BW, 192000, 0, 0, 1, 3);
  check_uniform_op(&t16, SIM_COLL_ALL_GATHER, 1e14, 100003, 0, 0, 1, 2);
}

/* Reductions charged on rank cpus of 250e6 flops/s (as test_closed_form_with_rank_cpus: a
** chunk's reduction about as long as its bytes, so a rank's lanes share its cpu): the uniform
** shortcut declines, and where every axis longer than 1 is a ring the planning pass takes its
** rounds from tables (fast_ring_round). Its plan is the general pass's to the bit (times, every
** link's bytes, every cpu's flops) and the event-by-event run's to the picosecond (flops within
** 1e-12: same_flops), quiet and
** handed back at 7 moments (a link degraded), on uneven counts, where every rank keeps its own
** timeline: 100003 floats on 4x4 (chunks of 6250 or 6251) and on 4x4x4 (1562 or 1563), 100515
** on 8x1x8 (an axis of length 1; 1570 or 1571: on 16x1x16 a lane's reductions of one round
** still run when its next begins, which the closed form declines); an even one after a reduce-scatter (links and cpus start with work
** done); the halves alone. Without cpus, where the uniform shortcut declines (uneven chunks,
** some ranks' rounds ending sooner): 100033 on 4x4 takes the tables too, 100003 on 2x8x4 (an
** axis of 2: a line of one round) and on a 4x4 with an axis that does not wrap the plans. */
static void test_ring_rounds(void **state) {
  (void)state;
  static const shape t818 = {3, {8, 1, 8}, {1, 1, 1}};
  static const struct {
    const shape *sh; sim_coll_op op; size_t count; int scatter; double cpu; int lanes;
  } cases[] = {
      {&t44, SIM_COLL_ALL_REDUCE, 100033, 0, 0, 2},        {&t284, SIM_COLL_ALL_REDUCE, 100003, 0, 0, 3},
      {&line, SIM_COLL_ALL_REDUCE, 100003, 0, 0, 2},       {&t44, SIM_COLL_ALL_REDUCE, 100003, 0, 250e6, 2},
      {&t444, SIM_COLL_ALL_REDUCE, 100003, 0, 250e6, 3},   {&t818, SIM_COLL_ALL_REDUCE, 100515, 0, 250e6, 2},
      {&t444, SIM_COLL_ALL_REDUCE, 192000, 1, 250e6, 3},   {&t444, SIM_COLL_REDUCE_SCATTER, 100003, 0, 250e6, 3},
      {&t444, SIM_COLL_ALL_GATHER, 100003, 0, 250e6, 3},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    uniform_cpu_speed = cases[i].cpu;
    check_uniform_op(cases[i].sh, cases[i].op, BW, cases[i].count, 0, cases[i].scatter, 0, cases[i].lanes);
  }
  uniform_cpu_speed = 0;
}

/* A fixed cost per collective (a TPU's, sim/tpu.c) keeps the closed form: the three planners
** agree to the picosecond and the bit, quiet and disturbed (disturbances at 1/8..7/8 of the run
** fall in the wait, when nothing is held, and in the rounds), and quiet the all-reduce is two
** events, its wait and its finish. It is a delay before the rounds, not a cost of any link:
** 4x4 at 1 us a hop and BW, 64000 floats, ends exactly 5 us later than without it. */
static void test_uniform_torus_fixed_cost(void **state) {
  (void)state;
  static const shape t44 = {2, {4, 4}, {1, 1}}, t444 = {3, {4, 4, 4}, {1, 1, 1}};
  uniform_run bare, with;
  run_uniform(&t44, SIM_COLL_ALL_REDUCE, BW, 64000, UNIFORM, 0, 0, -1, &bare);
  uniform_fixed_cost = 5 * US;
  run_uniform(&t44, SIM_COLL_ALL_REDUCE, BW, 64000, UNIFORM, 0, 0, -1, &with);
  assert_int_equal(with.done, bare.done + 5 * US);
  assert_true(with.planned && bare.planned);
  assert_memory_equal(with.bytes, bare.bytes, bare.n * sizeof(double));
  free(bare.bytes);
  free(with.bytes);
  check_uniform(&t44, BW, 64000, 0, 0, 1, 2);
  check_uniform(&t444, BW, 192000, 0, 1, 1, 3);
  check_uniform(&t44, BW, 100033, 0, 0, 0, 2); /* the general pass's closed form */
  uniform_fixed_cost = 0;
}

/* Two all-reduces of 64000 floats on one 4x4 torus, the second started `at` into the first. */
typedef struct second_start { sim_collective *c; sim_time *done; int planned; } second_start;

static void start_second(sim_engine *e, void *arg) {
  (void)e;
  second_start *s = arg;
  assert_int_equal(sim_collective_start(s->c, SIM_COLL_ALL_REDUCE, SIM_ALGO_TORUS, 0, NULL, 64000, note_done, s->done),
                   SIM_OK);
  s->planned = s->c->planned_uniform;
}

static void two_on_one_torus(planner how, sim_time at, sim_time done[2], double bytes[64], int planned[2]) {
  static const shape t44 = {2, {4, 4}, {1, 1}};
  sim_engine *e = sim_engine_new();
  sim_engine_set_closed_form(e, how != EVENTS);
  net *t = make_torus(e, &t44);
  sim_collective *c[2];
  for (int k = 0; k < 2; k++) {
    c[k] = sim_collective_new(e, k ? "b" : "a", t->p, net_route, t, NULL);
    sim_collective_set_torus(c[k], t->nd, t->dims, t->wraps);
    c[k]->uniform_off = how == GENERAL;
  }
  assert_int_equal(sim_collective_start(c[0], SIM_COLL_ALL_REDUCE, SIM_ALGO_TORUS, 0, NULL, 64000, note_done, &done[0]),
                   SIM_OK);
  planned[0] = c[0]->planned_uniform;
  second_start s = {c[1], &done[1], -1};
  sim_schedule(e, at, start_second, &s);
  assert_int_equal(sim_run(e), 0);
  planned[1] = s.planned;
  for (int i = 0; i < 64; i++) bytes[i] = sim_link_bytes(t->links[i]);
  for (int k = 0; k < 2; k++) sim_collective_free(c[k]);
  net_free(t);
  sim_engine_free(e);
}

/* A run planned by the shortcut and handed back by another collective's transfers: the second
** all-reduce's plan finds the first's links held (so it stamps none of them, held_slot) and goes
** transfer by transfer; its first transfer hands the first run back, whose restore finds every
** link's slot by its own plan's stamp. Both end at the picoseconds of the general pass's run and
** of the event-by-event run, at 5 moments of the first's 132 us (4 stages of 3 rounds: 1 us and
** 16 kB, then 1 us and 4 kB, at 1e9 B/s: 2 x 3 x (17 + 5) us). */
static void test_uniform_torus_handed_back_by_another(void **state) {
  (void)state;
  for (sim_time k = 1; k < 6; k++) {
    sim_time done[3][2], at = k * 15 * US + k;
    double bytes[3][64];
    int planned[3][2];
    for (int how = EVENTS; how <= UNIFORM; how++)
      two_on_one_torus((planner)how, at, done[how], bytes[how], planned[how]);
    assert_int_equal(planned[UNIFORM][0], 1);
    assert_int_equal(planned[UNIFORM][1], 0); /* the links were held */
    for (int how = EVENTS; how <= GENERAL; how++) {
      assert_int_equal(done[how][0], done[UNIFORM][0]);
      assert_int_equal(done[how][1], done[UNIFORM][1]);
    }
    assert_true(done[UNIFORM][1] > done[UNIFORM][0]);
    assert_memory_equal(bytes[GENERAL], bytes[UNIFORM], sizeof bytes[UNIFORM]);
    for (int i = 0; i < 64; i++) assert_true(fabs(bytes[UNIFORM][i] - bytes[EVENTS][i]) <= 1e-12 * bytes[EVENTS][i]);
  }
}

static void test_memory_per_rank(void **state) {
  (void)state;
  assert_true(sizeof(coll_rank) <= 80);
}

/* ---- the torus all-to-all (collective_a2a.c) ------------------------------------------------- */

/* Runs an all_to_all by the torus algorithm on sh (count floats a rank, values when numerics) and
** returns its duration; bytes[i] gets link i's bytes (t->links' order: [node][axis][+, -]). */
static sim_time a2a_on(const shape *sh, size_t count, int numerics, double *bytes) {
  sim_engine *e = sim_engine_new();
  net *t = make_torus(e, sh);
  float **bufs = numerics ? calloc((size_t)t->p, sizeof *bufs) : NULL;
  for (int r = 0; numerics && r < t->p; r++) {
    bufs[r] = malloc(count * sizeof(float));
    for (size_t i = 0; i < count; i++) bufs[r][i] = value(r, i);
  }
  sim_time d = run_on(e, t, SIM_COLL_ALL_TO_ALL, SIM_ALGO_TORUS, 0, bufs, count);
  size_t b = count / (size_t)t->p;
  for (int r = 0; numerics && r < t->p; r++) {
    for (int q = 0; q < t->p; q++) /* block q of rank r: block r of rank q, exactly */
      for (size_t i = 0; i < b; i++) assert_true(bufs[r][(size_t)q * b + i] == value(q, (size_t)r * b + i));
    free(bufs[r]);
  }
  free(bufs);
  for (size_t i = 0; i < (size_t)t->p * (size_t)t->nd * 2; i++) bytes[i] = sim_link_bytes(t->links[i]);
  net_free(t);
  sim_engine_free(e);
  return d;
}

/* A 4x4 wrapped torus, count 64000 floats (n = 256,000 B a rank): two lanes, each a stage per
** axis; a stage on a ring of 4 sends, in round 0, n/8 B (4 blocks of the lane's half) to x+1 and
** to x-1 and n/16 B each way to the same neighbours for the member 2 away (the relays), then in
** round 1 the relays' n/16 B on one hop more. Round 0's link x -> x+1 carries 3n/16 B, two flows
** sharing it: 1 us + 48 us; round 1: 1 us + 16 us. Two stages: 4 us + n/2 ns = 132 us, the scaling
** book's B n / (8 W) for an axis of 4 (n/2 at 1 B/ns) plus a link's latency per round. Every link
** carries n/4 B a lane, n/2 = 128,000 B in all: the byte-hops of the direct all-to-all (each
** axis an average of 1 hop at distance 0, 1, 2, 1: 16 ranks x n x 1 over its 32 links). The
** same on the event path as in closed form, disturbed or not (test_closed_form_equals_events
** runs every op on tori). */
static void test_torus_all_to_all_time_and_bytes(void **state) {
  (void)state;
  const shape t44 = {2, {4, 4}, {1, 1}};
  double bytes[64];
  assert_close(a2a_on(&t44, 64000, 0, bytes), 4 + 128.0);
  for (int i = 0; i < 64; i++) assert_true(bytes[i] == 128000.0);
  /* The ring's pairwise exchange on the same torus: 15 rounds of one transfer a rank, routes of
  ** up to 4 hops sharing links: far slower. */
  assert_true(timed(make_torus, &t44, SIM_COLL_ALL_TO_ALL, SIM_ALGO_RING, 64000) > 2 * (4 + 128) * US);
}

/* An uneven split: count 112 on the 4x4 torus is blocks of 7 floats, lane shares of 4 and 3, the
** relayed halves 2 + 2 and 2 + 1. A + link carries per lane 4 blocks x (share + 2 x first half) x 4
** B: 16 x (8 + 7) = 240 B; a - link 16 x (8 + 5) = 208 B. The values land exactly (a2a_on checks
** every block), on a torus with lines too (4x3, the 3 not wrapping; and 2x2x2). */
static void test_torus_all_to_all_uneven(void **state) {
  (void)state;
  const shape t44 = {2, {4, 4}, {1, 1}}, t43 = {2, {4, 3}, {1, 0}}, t222 = {3, {2, 2, 2}, {1, 0, 1}};
  double bytes[64];
  a2a_on(&t44, 112, 1, bytes);
  for (int i = 0; i < 64; i++) assert_true(bytes[i] == (i % 2 == 0 ? 240.0 : 208.0));
  a2a_on(&t43, 12 * 5, 1, bytes);
  a2a_on(&t222, 8 * 9, 1, bytes);
}

/* ---- mesh lines placed on a torus (sim/torus_mesh.h) ----------------------------------------- */

/* create_device_mesh's choices: whole axes where some fit (the most axes, the first set in index
** order), else a split with the most chips on whole axes, then the lexicographically largest;
** the model axis on the inner chips of a split axis. */
static void test_torus_mesh_place(void **state) {
  (void)state;
  static const int cube[3] = {16, 16, 16}, palm[3] = {12, 16, 16}, flat[3] = {4, 4, 8}, all[3] = {1, 1, 1};
  sim_torus_mesh tm;
  int dims[SIM_TORUS_MESH_MAX_DIMS], wraps[SIM_TORUS_MESH_MAX_DIMS];
  /* 256 x 16 on 16x16x16: model the x axis, a ring; data the y-z plane of rings */
  assert_int_equal(sim_torus_mesh_place(&tm, 3, cube, all, 16), 0);
  assert_int_equal(tm.inner[0] * 100 + tm.inner[1] * 10 + tm.inner[2], 1600 + 10 + 1);
  assert_int_equal(sim_torus_mesh_rank(&tm, 17, 5), 5 + 16 * 17); /* x = 5, y = 1, z = 1 */
  assert_int_equal(sim_torus_mesh_line(&tm, 1, dims, wraps), 1);
  assert_true(dims[0] == 16 && wraps[0] == 1);
  assert_int_equal(sim_torus_mesh_line(&tm, 0, dims, wraps), 2);
  assert_true(dims[0] == 16 && dims[1] == 16 && wraps[0] == 1 && wraps[1] == 1);
  /* 512 x 8: no whole axes of 8, so x splits: model 8 neighbours along x, a line (no wrap);
  ** data the two halves of x (8 links apart, around the ring) and the y-z plane */
  assert_int_equal(sim_torus_mesh_place(&tm, 3, cube, all, 8), 0);
  assert_true(tm.inner[0] == 8 && tm.inner[1] == 1 && tm.inner[2] == 1);
  assert_int_equal(sim_torus_mesh_rank(&tm, 1, 3), 11);      /* x = 1 x 8 + 3 */
  assert_int_equal(sim_torus_mesh_rank(&tm, 2, 0), 16);      /* d = 2: x half 0, y = 1 */
  assert_int_equal(sim_torus_mesh_line(&tm, 1, dims, wraps), 1);
  assert_true(dims[0] == 8 && wraps[0] == 0);
  assert_int_equal(sim_torus_mesh_line(&tm, 0, dims, wraps), 3);
  assert_true(dims[0] == 2 && dims[1] == 16 && dims[2] == 16 && wraps[0] == 1);
  /* 128 x 32: [16,2,1], [16,1,2], [2,16,1], ... all put 16 chips on a whole axis; the largest
  ** in lexicographic order, x whole and two of y */
  assert_int_equal(sim_torus_mesh_place(&tm, 3, cube, all, 32), 0);
  assert_true(tm.inner[0] == 16 && tm.inner[1] == 2 && tm.inner[2] == 1);
  assert_int_equal(sim_torus_mesh_line(&tm, 1, dims, wraps), 2);
  assert_true(dims[0] == 16 && wraps[0] == 1 && dims[1] == 2 && wraps[1] == 0);
  /* PaLM's 12 x 256 on 12x16x16 the other way round: model 256 takes the y-z plane (the first
  ** pair of axes multiplying to 256: x,y and x,z give 192), data the x ring of 12 */
  assert_int_equal(sim_torus_mesh_place(&tm, 3, palm, all, 256), 0);
  assert_true(tm.inner[0] == 1 && tm.inner[1] == 16 && tm.inner[2] == 16);
  assert_int_equal(sim_torus_mesh_rank(&tm, 5, 17), 5 + 12 + 192); /* x = 5, y = 1, z = 1 */
  /* 4x4x8, model 32: two whole axes (x and z) before a split */
  assert_int_equal(sim_torus_mesh_place(&tm, 3, flat, all, 32), 0);
  assert_true(tm.inner[0] == 4 && tm.inner[1] == 1 && tm.inner[2] == 8);
  /* a mesh that does not divide the torus */
  assert_int_equal(sim_torus_mesh_place(&tm, 3, flat, all, 3), -1);
}

/* The groups of the mesh lines of sh's torus with model devices on the model axis, along `axis`
** (1 model, 0 data), on net t: each a sub-group of all, its torus from the placement and its
** reductions free; into out, their number returned. */
static int mesh_lines(sim_collective *all, net *t, int model, int axis, sim_collective **out) {
  sim_torus_mesh tm;
  assert_int_equal(sim_torus_mesh_place(&tm, t->nd, t->dims, t->wraps, model), 0);
  int n = axis ? model : t->p / model, lines = t->p / n, members[64], dims[8], wraps[8];
  int nd = sim_torus_mesh_line(&tm, axis, dims, wraps);
  for (int l = 0; l < lines; l++) {
    for (int i = 0; i < n; i++) members[i] = axis ? sim_torus_mesh_rank(&tm, l, i) : sim_torus_mesh_rank(&tm, i, l);
    out[l] = sim_collective_new_subgroup(all, "line", n, members);
    sim_collective_set_torus(out[l], nd, dims, wraps);
    sim_collective_free_reductions(out[l]);
  }
  return lines;
}

typedef struct lines_run {
  sim_time done[16];         /* each line's end */
  sim_time flow_done;        /* the disturbing flow's end, 0 without one */
  double bytes[256];         /* every link's bytes */
  uint64_t events;           /* events fired */
} lines_run;

/* `op` of count floats on lines 0..nrun-1 of the mesh's `axis` at once, on an 8x8 torus (both
** axes wrap, 1 us and 1e9 B/s a link) whose ranks' cpus (1e9 flops/s) each run an exec of 1e5
** flops from time 0, as a training step's kernels run beside its collectives; closed form on or
** off; a flow of 50 kB over the first link of line 0's member 0 -> 1 route at `at` (< 0: none). */
static void run_lines(int model, int axis, int nrun, sim_coll_op op, size_t count, int closed, sim_time at,
                      lines_run *out) {
  static const shape t88 = {2, {8, 8}, {1, 1}};
  memset(out, 0, sizeof *out);
  sim_engine *e = sim_engine_new();
  sim_engine_set_closed_form(e, closed);
  net *t = make_torus(e, &t88);
  sim_cpu *cpus[64];
  for (int r = 0; r < t->p; r++) {
    cpus[r] = sim_cpu_new(e, "cpu", 1e9);
    sim_exec_start(e, cpus[r], 1e5);
  }
  sim_collective *all = sim_collective_new(e, "all", t->p, net_route, t, cpus), *line[64];
  int lines = mesh_lines(all, t, model, axis, line);
  assert_true(nrun <= lines);
  for (int l = 0; l < nrun; l++)
    assert_int_equal(sim_collective_start(line[l], op, SIM_ALGO_TORUS, 0, NULL, count, note_done, &out->done[l]), SIM_OK);
  sim_link *first = NULL;
  net_route(t, 0, 1, &first, 1); /* line 0's members 0 and 1 are ranks 0 and 1 on either axis */
  run_result flow = {0};
  disturb_ctx d = {first, NULL, 0, &flow, NULL};
  if (at >= 0) sim_schedule(e, at, start_flow, &d);
  assert_int_equal(sim_run(e), 0);
  out->flow_done = flow.flow_done;
  for (int i = 0; i < t->p * t->nd * 2; i++) {
    out->bytes[i] = sim_link_bytes(t->links[i]);
    assert_null(t->links[i]->res.solo);
  }
  out->events = sim_events_processed(e);
  for (int l = 0; l < lines; l++) sim_collective_free(line[l]);
  sim_collective_free(all);
  net_free(t);
  sim_engine_free(e);
}

/* A model axis of 4 on an 8x8 torus splits x (no axis is 4 long): each model line is 4 neighbours along x, a line
** (its closing step would take 4 links or the wrap), run as the bidirectional line over one link
** a step. An all-gather of 4000 floats: 3 steps of 1 us + 1000 floats x 4 B / 1e9 B/s = 5 us,
** 15 us, with every rank's cpu busy (the reductions are free, so the run still goes in closed
** form); member x sends x + 1 parts to x + 1 (k <= x) and 4 - x to x - 1: node 0's + link
** 4000 B, node 1's 8000, node 2's 12000, node 3's (to the next line) none; the reduce-scatter's
** partial sums the other way round (member x sends in steps x..2: 12000, 8000, 4000, none). All sixteen lines at once share
** no link: each 15 us, one event each. The reduce-scatter the same; disturbed by a flow at times in
** a latency, in the bytes and at the start, the closed form's times and bytes are the events'. */
static void test_mesh_sub_lines_closed_form(void **state) {
  (void)state;
  lines_run fast, slow;
  for (int op = SIM_COLL_REDUCE_SCATTER; op <= SIM_COLL_ALL_GATHER; op++) {
    run_lines(4, 1, 1, (sim_coll_op)op, 4000, 1, -1, &fast);
    assert_int_equal(fast.done[0], 15 * US);
    for (int x = 0; x < 4; x++) { /* node x's + link along x */
      double parts = x == 3 ? 0 : op == SIM_COLL_ALL_GATHER ? x + 1 : 3 - x;
      assert_true(fast.bytes[(x * 2 + 0) * 2] == parts * 4000);
    }
    run_lines(4, 1, 16, (sim_coll_op)op, 4000, 1, -1, &fast);
    run_lines(4, 1, 16, (sim_coll_op)op, 4000, 0, -1, &slow);
    for (int l = 0; l < 16; l++) assert_int_equal(fast.done[l], 15 * US);
    assert_memory_equal(fast.done, slow.done, sizeof fast.done);
    assert_memory_equal(fast.bytes, slow.bytes, sizeof fast.bytes);
    assert_int_equal(fast.events, 16 + 64); /* a finish per line, an end per cpu's exec */
    assert_true(slow.events > 4 * fast.events); /* the events' run: 12 transfers a line */
    static const sim_time at[] = {0, US / 2, 3 * US, 7 * US + 1, 12 * US};
    for (size_t k = 0; k < sizeof at / sizeof *at; k++) {
      run_lines(4, 1, 16, (sim_coll_op)op, 4000, 1, at[k], &fast);
      run_lines(4, 1, 16, (sim_coll_op)op, 4000, 0, at[k], &slow);
      assert_memory_equal(fast.done, slow.done, sizeof fast.done);
      assert_int_equal(fast.flow_done, slow.flow_done);
      if (at[k] == 0) assert_true(fast.done[0] > 15 * US); /* the flow shares its first step's link */
      for (int l = 1; l < 16; l++) assert_int_equal(fast.done[l], 15 * US); /* no other line's */
      for (int i = 0; i < 256; i++) assert_true(fabs(fast.bytes[i] - slow.bytes[i]) <= 1e-12 * slow.bytes[i]);
    }
  }
}

/* The data lines of that mesh: a 2x8 torus each, the x halves 4 links apart. One alone in closed
** form equals its events; the four at once share x links (the placement cannot avoid it) and
** run as the events do, to the picosecond. */
static void test_mesh_data_lines(void **state) {
  (void)state;
  lines_run fast, slow;
  sim_time alone = 0;
  for (int nrun = 1; nrun <= 4; nrun += 3) {
    run_lines(4, 0, nrun, SIM_COLL_ALL_GATHER, 8000, 1, -1, &fast);
    run_lines(4, 0, nrun, SIM_COLL_ALL_GATHER, 8000, 0, -1, &slow);
    assert_memory_equal(fast.done, slow.done, sizeof fast.done);
    for (int i = 0; i < 256; i++) assert_true(fabs(fast.bytes[i] - slow.bytes[i]) <= 1e-12 * slow.bytes[i]);
    if (nrun == 1) alone = fast.done[0];
  }
  assert_true(fast.done[0] > alone); /* the four share the x links their 4-link steps cross */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_numerics_all_pairs),     cmocka_unit_test(test_blocking_matches_start),
      cmocka_unit_test(test_ring_and_torus_closed_forms),
      cmocka_unit_test(test_torus_relabelling),      cmocka_unit_test(test_torus_links_and_sizes),
      cmocka_unit_test(test_routes_per_collective),
      cmocka_unit_test(test_mesh_closed_forms),      cmocka_unit_test(test_two_allreduces_share_links),
      cmocka_unit_test(test_algorithms_differ_on_a_torus), cmocka_unit_test(test_time_rises_with_size),
      cmocka_unit_test(test_errors),                 cmocka_unit_test(test_names),
      cmocka_unit_test(test_memory_per_rank),
      cmocka_unit_test(test_closed_form_equals_events), cmocka_unit_test(test_closed_form_kill),
      cmocka_unit_test(test_closed_form_with_rank_cpus),
      cmocka_unit_test(test_closed_form_events),     cmocka_unit_test(test_closed_form_ties),
      cmocka_unit_test(test_whole_run_closed_form),  cmocka_unit_test(test_whole_run_handed_back),
      cmocka_unit_test(test_uniform_torus), cmocka_unit_test(test_uniform_torus_fixed_cost),         cmocka_unit_test(test_uniform_torus_handed_back_by_another),
      cmocka_unit_test(test_torus_all_to_all_time_and_bytes), cmocka_unit_test(test_torus_all_to_all_uneven),
      cmocka_unit_test(test_ring_rounds),
      cmocka_unit_test(test_torus_mesh_place),       cmocka_unit_test(test_mesh_sub_lines_closed_form),
      cmocka_unit_test(test_mesh_data_lines),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
