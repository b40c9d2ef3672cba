/* test_nccl.c: NCCL's tuning model (sim/nccl.c) worked by hand, and the "nccl" collective
** (sim/collective.c) against it on GPU-like networks: a node's GPUs on a switch (an up and a
** down link each, no latency: NVSwitch), nodes joined by a NIC per GPU. The model's figures are
** NCCL's tuning.cc (01afd20a) in microseconds and GB/s. */
#include "tests/testutil.h"

#include <math.h>

#include "sim/collective.h"
#include "sim/nccl.h"

#define GIB 1073741824.0
#define MIB 1048576.0

/* DGX A100 as NCCL's model sees it: 235 GB/s inside a node (its sm80 cap), between nodes its
** channels over the node's 8 NICs of 25 GB/s. */
static const sim_nccl_system A100 = {8, 235e9, 200e9, 1, 0, 0, 0, 0, SIM_NCCL_ARCH_NONE, 0};

static void assert_rel(double got, double want, double tol) {
  if (fabs(got - want) > tol * fabs(want)) fail_msg("got %.12g, want %.12g", got, want);
}

/* 8 ranks on one node, all_reduce: steps 2(p-1) = 14, ring algbw = busBw x 8/14.
**   1 GiB, ring Simple: 8.4 + 14 x 3.4 = 56 us + 2^30 / (235e9 x 8/14) = 7.995950 ms -> 8.051950 ms
**   1 MiB, ring LL:     3.6 + 14 x 0.47 = 10.18 us + 2^20 / (235e9 / 4 x 8/14) = 31.2342 us
**                        -> 41.4142 us; LL128 36.6 + 2^20 / (216.2e9 x 8/14) = 45.0875 us;
**                        Simple 56 + 7.8085 = 63.81 us; tree LL 11.68 us + 2^20 / (110e9 / 3.8
**                        x 0.5 (correction at 2^14) x 0.5) = 156.6 us
**   32 B, ring LL:      10.18 us + 0.95 ns (tree LL: 4.4 + 2 x 7 x 0.52 = 11.68 us) */
static void test_model_dgx_a100_one_node(void **state) {
  (void)state;
  sim_nccl_choice c;
  sim_nccl_choose(&A100, SIM_COLL_ALL_REDUCE, 8, GIB, &c);
  assert_int_equal(c.algo, SIM_NCCL_RING);
  assert_int_equal(c.proto, SIM_NCCL_SIMPLE);
  assert_rel(c.latency_s, 56e-6, 1e-12);
  assert_rel(c.time_s, 56e-6 + GIB * 14 / (8 * 235e9), 1e-12);
  sim_nccl_choose(&A100, SIM_COLL_ALL_REDUCE, 8, MIB, &c);
  assert_int_equal(c.proto, SIM_NCCL_LL);
  assert_rel(c.time_s, 10.18e-6 + MIB * 14 / (8 * 235e9 / 4), 1e-12);
  assert_rel(c.time_s, 41.4142e-6, 1e-5);
  sim_nccl_choice ll128, tree;
  assert_int_equal(sim_nccl_model(&A100, SIM_COLL_ALL_REDUCE, 8, MIB, SIM_NCCL_RING, SIM_NCCL_LL128, &ll128), 0);
  assert_rel(ll128.time_s, 36.6e-6 + MIB * 14 / (8 * 235e9 * 0.92), 1e-12);
  assert_int_equal(sim_nccl_model(&A100, SIM_COLL_ALL_REDUCE, 8, MIB, SIM_NCCL_TREE, SIM_NCCL_LL, &tree), 0);
  assert_rel(tree.time_s, 11.68e-6 + MIB / (110e9 / 3.8 * 0.5 * 0.5), 1e-9);
  sim_nccl_choose(&A100, SIM_COLL_ALL_REDUCE, 8, 32, &c);
  assert_int_equal(c.algo, SIM_NCCL_RING);
  assert_int_equal(c.proto, SIM_NCCL_LL);
  assert_rel(c.latency_s, 10.18e-6, 1e-12);
  /* Tree only for all_reduce; LL128 only where enabled. */
  assert_int_equal(sim_nccl_model(&A100, SIM_COLL_ALL_GATHER, 8, MIB, SIM_NCCL_TREE, SIM_NCCL_LL, &c), -1);
  sim_nccl_system no128 = A100;
  no128.ll128 = 0;
  assert_int_equal(sim_nccl_model(&no128, SIM_COLL_ALL_REDUCE, 8, MIB, SIM_NCCL_RING, SIM_NCCL_LL128, &c), -1);
  assert_string_equal(sim_nccl_proto_name(SIM_NCCL_LL128), "LL128");
  assert_string_equal(sim_nccl_algo_name(SIM_NCCL_TREE), "tree");
}

/* 16 ranks on 2 nodes, 32 B: ring LL 3.6 + 28 x 0.47 x 1.8 + 2 x 2.7 = 32.688 us; tree LL
** 4.4 + 2 x (7 x 0.936 + 1 x 5.0) = 27.504 us: NCCL takes the tree for small messages across
** nodes. At 1 GiB the ring (Simple, NIC-bound 200 GB/s x 16/30, latency x 1.9 for its plateau)
** wins: (8.4 + 28 x 3.4 + 2 x 9.6) x 1.9 = 233.32 us + 2^30 x 30 / (16 x 200e9) = 10.300 ms
** (the tree: min(0.92 x 200, 110) x 1/2 = 55 GB/s of algbw against the ring's 106.7). */
static void test_model_two_nodes(void **state) {
  (void)state;
  sim_nccl_choice c;
  sim_nccl_choose(&A100, SIM_COLL_ALL_REDUCE, 16, 32, &c);
  assert_int_equal(c.algo, SIM_NCCL_TREE);
  assert_int_equal(c.proto, SIM_NCCL_LL);
  assert_rel(c.latency_s, 27.504e-6, 1e-12);
  sim_nccl_choice ring;
  sim_nccl_model(&A100, SIM_COLL_ALL_REDUCE, 16, 32, SIM_NCCL_RING, SIM_NCCL_LL, &ring);
  assert_rel(ring.latency_s, 32.688e-6, 1e-12);
  sim_nccl_choose(&A100, SIM_COLL_ALL_REDUCE, 16, GIB, &c);
  assert_int_equal(c.algo, SIM_NCCL_RING);
  assert_int_equal(c.proto, SIM_NCCL_SIMPLE);
  assert_rel(c.latency_s, 233.32e-6, 1e-12);
  assert_rel(c.time_s, 233.32e-6 + GIB * 30 / (16 * 200e9), 1e-12);
}

/* A transport with a latency of its own (AWS's EFA plugin reports 75 us) adds it to every network
** hop of the ring and the tree, twice for Simple (tuning.cc's interLat + latencyInter, and its
** flush). 16 ranks on 2 nodes:
**   32 B, tree LL: 4.4 + 2 x (7 x 0.936 + 1 x (5.0 + 75)) = 177.504 us; ring LL: 3.6 + 28 x 0.846
**     + 2 x (2.7 + 75) = 182.688 us: still the tree
**   1 GiB, ring Simple: (8.4 + 28 x 3.4 + 2 x (9.6 + 150)) x 1.9 = 803.32 us of latency
**   one node: no network hop, no change (8 ranks, 1 GiB: 56 us) */
static void test_transport_latency(void **state) {
  (void)state;
  sim_nccl_system efa = A100;
  efa.net_latency_s = 75e-6;
  sim_nccl_choice c, ring;
  sim_nccl_choose(&efa, SIM_COLL_ALL_REDUCE, 16, 32, &c);
  assert_int_equal(c.algo, SIM_NCCL_TREE);
  assert_int_equal(c.proto, SIM_NCCL_LL);
  assert_rel(c.latency_s, 177.504e-6, 1e-12);
  sim_nccl_model(&efa, SIM_COLL_ALL_REDUCE, 16, 32, SIM_NCCL_RING, SIM_NCCL_LL, &ring);
  assert_rel(ring.latency_s, 182.688e-6, 1e-12);
  sim_nccl_model(&efa, SIM_COLL_ALL_REDUCE, 16, GIB, SIM_NCCL_RING, SIM_NCCL_SIMPLE, &ring);
  assert_rel(ring.latency_s, 803.32e-6, 1e-12);
  sim_nccl_choose(&efa, SIM_COLL_ALL_REDUCE, 8, GIB, &c);
  assert_rel(c.latency_s, 56e-6, 1e-12);
}

/* Invariants 1 and 2 of nccl.c over sizes 1 B .. 4 GiB, 2 to 64 ranks, 1 to 8 a node. */
static void test_model_monotone(void **state) {
  (void)state;
  static const int ps[] = {2, 8, 16, 64}, ppns[] = {1, 8};
  for (int op = 0; op < SIM_COLL_OP_COUNT; op++)
    for (size_t i = 0; i < 4; i++)
      for (size_t j = 0; j < 4; j++) {
        sim_nccl_system s = A100, fast = A100;
        s.ranks_per_node = ppns[j % 2];
        fast.ranks_per_node = ppns[j % 2];
        /* the second pair with LL's caps (an AMD host's across nodes) */
        s.arch = fast.arch = j < 2 ? SIM_NCCL_ARCH_NONE : SIM_NCCL_AMPERE;
        s.amd_host = fast.amd_host = j >= 2;
        s.nvls_busbw = fast.nvls_busbw = 330e9;
        fast.busbw *= 2;
        fast.net_busbw *= 2;
        fast.nvls_busbw *= 2;
        double last = 0;
        for (double n = 1; n <= 4 * GIB; n *= 2) {
          sim_nccl_choice c, f;
          sim_nccl_choose(&s, (sim_coll_op)op, ps[i], n, &c);
          sim_nccl_choose(&fast, (sim_coll_op)op, ps[i], n, &f);
          assert_true(c.time_s >= last);
          assert_true(f.time_s <= c.time_s);
          last = c.time_s;
        }
      }
}

/* ---- the collective on GPU networks -------------------------------------------------------- */

/* p GPUs, ppn a node: inside a node [up_i, down_j] (NVSwitch), between nodes [out_i, in_j]
** (a NIC per GPU on one non-blocking rail switch), no latency: NCCL's model charges it. */
typedef struct gpus {
  int p, ppn;                /* ranks, ranks a node */
  sim_link **up, **down;     /* per rank, to and from the node's switch */
  sim_link **out, **in;      /* per rank, its NIC */
} gpus;

static gpus *gpus_new(sim_engine *e, int p, int ppn, double nvlink, double nic) {
  gpus *g = calloc(1, sizeof *g);
  g->p = p;
  g->ppn = ppn;
  sim_link ***sets[4] = {&g->up, &g->down, &g->out, &g->in};
  for (int s = 0; s < 4; s++) {
    *sets[s] = calloc((size_t)p, sizeof **sets[s]);
    for (int r = 0; r < p; r++) (*sets[s])[r] = sim_link_new(e, "g", s < 2 ? nvlink : nic, 0);
  }
  return g;
}

static void gpus_free(gpus *g) {
  free(g->up);
  free(g->down);
  free(g->out);
  free(g->in);
  free(g);
}

static size_t gpus_route(void *ctx, int from, int to, sim_link **out, size_t max) {
  gpus *g = ctx;
  int same = from / g->ppn == to / g->ppn;
  if (max >= 2) {
    out[0] = same ? g->up[from] : g->out[from];
    out[1] = same ? g->down[to] : g->in[to];
  }
  return 2;
}

static void count_done(sim_engine *e, sim_collective *c, void *arg) {
  (void)e;
  (void)c;
  (*(int *)arg)++;
}

/* Runs op by nccl on p GPUs (ppn a node, links nvlink and nic B/s, the system sys) over count
** floats, numerics when bufs is given; returns the simulated seconds. */
static double run_nccl(const sim_nccl_system *sys, int p, double nvlink, double nic, sim_coll_op op,
                       size_t count, float **bufs) {
  sim_engine *e = sim_engine_new();
  gpus *g = gpus_new(e, p, sys->ranks_per_node, nvlink, nic);
  sim_collective *c = sim_collective_new(e, "nccl", p, gpus_route, g, NULL);
  sim_collective_set_nccl(c, sys);
  int done = 0;
  assert_int_equal(sim_collective_start(c, op, SIM_ALGO_NCCL, 0, bufs, count, count_done, &done), SIM_OK);
  assert_int_equal(sim_run(e), 0);
  assert_int_equal(done, 1);
  double t = sim_time_to_s(sim_collective_last_duration(c));
  sim_collective_free(c);
  gpus_free(g);
  sim_engine_free(e);
  return t;
}

/* On one node whose links run at the model's busbw, the ring takes the model's time: its
** latency (base before round 0, the steps' spread over the rounds) and 14 rounds of n/8 bytes
** x the protocol's wire factor at 235 GB/s; each round's duration is rounded up to the
** picosecond, hence the 100 ps. */
static void test_ring_takes_the_model_time(void **state) {
  (void)state;
  static const double sizes[] = {32, 4096, MIB, 64 * MIB, GIB};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    sim_nccl_choice want;
    sim_nccl_choose(&A100, SIM_COLL_ALL_REDUCE, 8, sizes[i], &want);
    double got = run_nccl(&A100, 8, 235e9, 25e9, SIM_COLL_ALL_REDUCE, (size_t)(sizes[i] / 4), NULL);
    if (fabs(got - want.time_s) > 100e-12) fail_msg("%.0f B: %.12g s, model %.12g s", sizes[i], got, want.time_s);
  }
  /* A launch cost adds to every pair's latency, and the run waits it before its first round. */
  sim_nccl_system launched = A100;
  launched.launch_s = 5.6e-6;
  sim_nccl_choice with;
  sim_nccl_choose(&launched, SIM_COLL_ALL_REDUCE, 8, 32, &with);
  assert_rel(with.latency_s, 15.78e-6, 1e-12);
  assert_true(fabs(run_nccl(&launched, 8, 235e9, 25e9, SIM_COLL_ALL_REDUCE, 8, NULL) - with.time_s) < 100e-12);
  /* all_gather and reduce_scatter: 7 rounds, broadcast 14 (a chain pipelined in 8 chunks). */
  sim_nccl_choice want;
  sim_nccl_choose(&A100, SIM_COLL_ALL_GATHER, 8, MIB, &want);
  assert_true(fabs(run_nccl(&A100, 8, 235e9, 25e9, SIM_COLL_ALL_GATHER, MIB / 4, NULL) - want.time_s) < 100e-12);
}

/* The pipelined double tree (32 single-GPU nodes, 1 MiB: NCCL picks tree LL128, 16 chunks of
** 64 KiB) sums like a serial reference, every rank the same bits, and takes about the model's
** time: 89.4 us of latency and 2^20 / (25e9 x 0.92 x 120/128 x 0.6 x 0.5) = 162.1 us. Measured
** 281.9 us (+12%: the 2H - 1 = 9 rounds that fill and drain the pipeline, of 25), where whole
** halves step by step (the double tree's 2H = 10 steps of 2^19 bytes x the wire factor 2.02 at
** 25 GB/s) would take 89.4 + 424 = 514 us. */
static void test_pipelined_tree(void **state) {
  (void)state;
  enum { P = 32, COUNT = 262144 };
  sim_nccl_system nodes = {1, 235e9, 25e9, 1, 0, 0, 0, 0, SIM_NCCL_ARCH_NONE, 0};
  sim_nccl_choice want;
  sim_nccl_choose(&nodes, SIM_COLL_ALL_REDUCE, P, 4.0 * COUNT, &want);
  assert_int_equal(want.algo, SIM_NCCL_TREE);
  assert_int_equal(want.proto, SIM_NCCL_LL128);
  float **bufs = calloc(P, sizeof *bufs);
  for (int r = 0; r < P; r++) {
    bufs[r] = malloc(COUNT * sizeof(float));
    for (int i = 0; i < COUNT; i++) bufs[r][i] = (float)((r * 7 + i) % 13) * 0.25f + (float)r;
  }
  double got = run_nccl(&nodes, P, 235e9, 25e9, SIM_COLL_ALL_REDUCE, COUNT, bufs);
  for (int i = 0; i < COUNT; i++) {
    double sum = 0;
    for (int r = 0; r < P; r++) sum += (double)((r * 7 + i) % 13) * 0.25 + r;
    assert_true(fabs(bufs[0][i] - sum) <= 1e-5 * sum);
  }
  for (int r = 1; r < P; r++) assert_memory_equal(bufs[r], bufs[0], COUNT * sizeof(float));
  for (int r = 0; r < P; r++) free(bufs[r]);
  free(bufs);
  print_message("pipelined tree %.3f us, model %.3f us\n", got * 1e6, want.time_s * 1e6);
  assert_true(got > want.latency_s && got < 1.15 * want.time_s);
}

/* Small messages across nodes go by tree, numerics included (16 ranks on 2 nodes, 37 floats:
** one chunk, 2H - 1 + 1 = 8 rounds). */
static void test_tree_across_two_nodes(void **state) {
  (void)state;
  enum { P = 16, COUNT = 37 };
  float **bufs = calloc(P, sizeof *bufs);
  for (int r = 0; r < P; r++) {
    bufs[r] = malloc(COUNT * sizeof(float));
    for (int i = 0; i < COUNT; i++) bufs[r][i] = (float)(r + 1) * (float)(i + 1);
  }
  sim_nccl_choice want;
  sim_nccl_choose(&A100, SIM_COLL_ALL_REDUCE, P, 4.0 * COUNT, &want);
  assert_int_equal(want.algo, SIM_NCCL_TREE);
  double got = run_nccl(&A100, P, 300e9, 25e9, SIM_COLL_ALL_REDUCE, COUNT, bufs);
  for (int r = 0; r < P; r++)
    for (int i = 0; i < COUNT; i++) assert_true(bufs[r][i] == (float)(136 * (i + 1)));
  for (int r = 0; r < P; r++) free(bufs[r]);
  free(bufs);
  assert_true(got >= want.latency_s && got < want.latency_s + 1e-6);
}

/* Sanity (issue 15): time rises with size, and faster links (NVLink and NICs twice as fast, the
** system's bandwidths with them) never make it slower; 8 GPUs on a node and 4 nodes of 4. */
static void test_sizes_and_links(void **state) {
  (void)state;
  for (int ppn = 4; ppn <= 8; ppn += 4) {
    sim_nccl_system s = {ppn, 235e9, ppn * 25e9, 1, 5.6e-6, 0, 0, 0, SIM_NCCL_ARCH_NONE, 0}, fast = {ppn, 470e9, ppn * 50e9, 1, 5.6e-6, 0, 0, 0, SIM_NCCL_ARCH_NONE, 0};
    double last = 0;
    for (size_t count = 1; count <= (size_t)1 << 24; count *= 8) {
      double t = run_nccl(&s, 16, 300e9, 25e9, SIM_COLL_ALL_REDUCE, count, NULL);
      double f = run_nccl(&fast, 16, 600e9, 50e9, SIM_COLL_ALL_REDUCE, count, NULL);
      if (!(t > last)) fail_msg("%d a node, %zu floats: %.9g s, not above %.9g s", ppn, count, t, last);
      assert_true(f <= t);
      last = t;
    }
  }
}

/* NCCL's channels across nodes: 16 GPUs on 2 nodes of 8, 1 GiB all-reduce, ring Simple. Each
** of the 8 lanes crosses the network on its own NICs (25 GB/s each), 2^30 / 128 bytes a round
** on each: the rounds are NIC-bound at 8 x 25 = 200 GB/s, the model's net_busbw, so the run
** takes the model's 10.300 ms (one ring through one NIC a node would take 8x its bandwidth
** term: 80.8 ms). The GPUs' up links carry 7 lanes' 2^30 / 128 at 235 GB/s: 0.25 ms of
** 0.34 ms a round, under the NICs'. */
static void test_channels_across_nodes(void **state) {
  (void)state;
  sim_nccl_choice want;
  sim_nccl_choose(&A100, SIM_COLL_ALL_REDUCE, 16, GIB, &want);
  assert_int_equal(want.algo, SIM_NCCL_RING);
  double got = run_nccl(&A100, 16, 235e9, 25e9, SIM_COLL_ALL_REDUCE, (size_t)(GIB / 4), NULL);
  assert_rel(got, want.time_s, 1e-6);
  assert_rel(got, 10.300e-3, 1e-3);
}

/* The channels' rings (each node's ranks turned by the lane) sum like a serial reference and
** leave every rank the same bits: 8 ranks on 2 nodes of 4, 4 MiB, which NCCL runs by ring. */
static void test_channels_sum(void **state) {
  (void)state;
  enum { P = 8, COUNT = 1 << 20 };
  sim_nccl_system two = {4, 235e9, 100e9, 1, 0, 0, 0, 0, SIM_NCCL_ARCH_NONE, 0};
  sim_nccl_choice want;
  sim_nccl_choose(&two, SIM_COLL_ALL_REDUCE, P, 4.0 * COUNT, &want);
  assert_int_equal(want.algo, SIM_NCCL_RING);
  float **bufs = calloc(P, sizeof *bufs);
  for (int r = 0; r < P; r++) {
    bufs[r] = malloc(COUNT * sizeof(float));
    for (int i = 0; i < COUNT; i++) bufs[r][i] = (float)((r * 5 + i) % 11) * 0.5f + (float)r;
  }
  run_nccl(&two, P, 235e9, 25e9, SIM_COLL_ALL_REDUCE, COUNT, bufs);
  for (int i = 0; i < COUNT; i++) {
    double sum = 0;
    for (int r = 0; r < P; r++) sum += (double)((r * 5 + i) % 11) * 0.5 + r;
    if (bufs[0][i] != (float)sum) fail_msg("element %d: %g, want %g", i, (double)bufs[0][i], sum);
  }
  for (int r = 1; r < P; r++) assert_memory_equal(bufs[r], bufs[0], COUNT * sizeof(float));
  for (int r = 0; r < P; r++) free(bufs[r]);
  free(bufs);
}

/* NVLS on 8 H100 (ring ceiling 370 GB/s, NVLS busBw 330: algbw 275): 8 GiB by NVLS, 23 us +
** 2^33 / 275e9 = 31.259 ms, nccl-tests busbw 275 x 14/8 = 481 GB/s less the latency; 32 B by
** ring LL (10.18 us against NVLS's 23). NVLS runs the ring's plan at bytes x 370 / 481.25, so
** the run takes the model's time; not across nodes, not for all_gather. */
static void test_nvls(void **state) {
  (void)state;
  sim_nccl_system h100 = {8, 370e9, 400e9, 1, 0, 330e9, 0, 8, SIM_NCCL_ARCH_NONE, 0};
  sim_nccl_choice c;
  sim_nccl_choose(&h100, SIM_COLL_ALL_REDUCE, 8, 8 * GIB, &c);
  assert_int_equal(c.algo, SIM_NCCL_NVLS);
  assert_string_equal(sim_nccl_algo_name(c.algo), "nvls");
  assert_rel(c.algbw, 275e9, 1e-12);
  assert_rel(c.busbw, 481.25e9, 1e-12);
  assert_rel(c.time_s, 23e-6 + 8 * GIB / 275e9, 1e-12);
  double got = run_nccl(&h100, 8, 370e9, 50e9, SIM_COLL_ALL_REDUCE, (size_t)(8 * GIB / 4), NULL);
  assert_rel(got, c.time_s, 1e-9);
  sim_nccl_choose(&h100, SIM_COLL_ALL_REDUCE, 8, 32, &c);
  assert_int_equal(c.algo, SIM_NCCL_RING);
  assert_int_equal(sim_nccl_model(&h100, SIM_COLL_ALL_GATHER, 8, GIB, SIM_NCCL_NVLS, SIM_NCCL_SIMPLE, &c), -1);
  assert_int_equal(sim_nccl_model(&h100, SIM_COLL_ALL_REDUCE, 16, GIB, SIM_NCCL_NVLS, SIM_NCCL_SIMPLE, &c), -1);
  assert_int_equal(sim_nccl_model(&A100, SIM_COLL_ALL_REDUCE, 8, GIB, SIM_NCCL_NVLS, SIM_NCCL_SIMPLE, &c), -1);
}

/* NVLS tree (tuning.cc at 5067397c) across DGX H100s (8 NICs of 50 GB/s a node, 8 NVLS heads),
** all_reduce: busBw = min(the node's NVLS busBw 330 x 5/6 x 14/8 = 481.25, the NICs' 400 (x 2 on
** 2 nodes), its channels x perChMaxNVLSTreeBw: 8 x 45.5 = 364 (8 x 57.7 = 461.6 on 2 nodes)),
** algbw busBw x p / (2 (p - 1)), latency 25 us + 2 log2(nodes) x 20.9 us:
**   4 nodes, 8 GiB: 364 GB/s, algbw 364 x 32/62 = 187.87 GB/s, 25 + 4 x 20.9 = 108.6 us; the
**     ring Simple: min(370, 400) x 32/62 = 190.97 GB/s after (8.4 + 56 x 3.4 + 6 x 9.6) x 1.9 =
**     487.16 us: 8 GiB takes 45.47 ms by the ring, 45.83 by NVLS tree: NCCL takes the ring
**     (issue 1221: on 4 nodes NVLS on or off gave the same busbw)
**   4 nodes, 64 MiB: NVLS tree 108.6 us + 357.2 us = 465.8 us, the ring 487.16 + 351.4 =
**     838.6 us: NVLS tree
**   2 nodes: 461.6 GB/s (the channels' cap under NVLink SHARP's 481.25 and the doubled NICs'
**     800), 25 + 2 x 20.9 = 66.8 us
**   4 heads (a NIC for two GPUs, 200 GB/s): 4 nodes min(481.25, 200, 182) = 182 GB/s
**   a net transport of 5 us: 4 nodes' latency 25 + 4 x (20.9 + 2 x 5) = 148.6 us
**   32 B: the tree's LL, NVLS tree's 108.6 us being all latency
** Not on one node, not on A100 (no NVLS), not for all_gather, not with LL. The run takes the
** ring's plan over NCCL's 8 channels at bytes x 370 / 364 (the ring's Simple busBw over the
** pair's). Each GPU's up link carries 7 of the 8 channels' share (one leaves by its NIC), so
** at 370 x 7/8 GB/s the links bound the plan at 364, and the NICs at 8 x 50 x 364 / 370 = 393.5
** do not: the run is the model's time to within the latency's spread over the rounds (0.1%). */
static void test_nvls_tree(void **state) {
  (void)state;
  sim_nccl_system h100 = {8, 370e9, 400e9, 1, 0, 330e9, 0, 8, SIM_NCCL_ARCH_NONE, 0};
  sim_nccl_choice c, ring;
  sim_nccl_choose(&h100, SIM_COLL_ALL_REDUCE, 32, 8 * GIB, &c);
  assert_int_equal(c.algo, SIM_NCCL_RING);
  assert_int_equal(sim_nccl_model(&h100, SIM_COLL_ALL_REDUCE, 32, 8 * GIB, SIM_NCCL_NVLS_TREE, SIM_NCCL_SIMPLE, &c), 0);
  assert_string_equal(sim_nccl_algo_name(c.algo), "nvls_tree");
  assert_rel(c.busbw, 364e9, 1e-12);
  assert_rel(c.algbw, 364e9 * 32 / 62, 1e-12);
  assert_rel(c.latency_s, 108.6e-6, 1e-12);
  assert_rel(c.time_s, 108.6e-6 + 8 * GIB * 62 / (32 * 364e9), 1e-12);
  sim_nccl_model(&h100, SIM_COLL_ALL_REDUCE, 32, 8 * GIB, SIM_NCCL_RING, SIM_NCCL_SIMPLE, &ring);
  assert_rel(ring.latency_s, 487.16e-6, 1e-12);
  assert_true(ring.time_s < c.time_s);
  sim_nccl_choose(&h100, SIM_COLL_ALL_REDUCE, 32, 64 * MIB, &c);
  assert_int_equal(c.algo, SIM_NCCL_NVLS_TREE);
  assert_rel(c.time_s, 108.6e-6 + 64 * MIB * 62 / (32 * 364e9), 1e-12);
  assert_int_equal(sim_nccl_model(&h100, SIM_COLL_ALL_REDUCE, 16, 8 * GIB, SIM_NCCL_NVLS_TREE, SIM_NCCL_SIMPLE, &c), 0);
  assert_rel(c.busbw, 8 * 57.7e9, 1e-12);
  assert_rel(c.latency_s, 66.8e-6, 1e-12);
  sim_nccl_system hgx = h100;
  hgx.net_busbw = 200e9;
  hgx.nvls_heads = 4;
  assert_int_equal(sim_nccl_model(&hgx, SIM_COLL_ALL_REDUCE, 32, 8 * GIB, SIM_NCCL_NVLS_TREE, SIM_NCCL_SIMPLE, &c), 0);
  assert_rel(c.busbw, 182e9, 1e-12);
  sim_nccl_system tcp = h100;
  tcp.net_latency_s = 5e-6;
  assert_int_equal(sim_nccl_model(&tcp, SIM_COLL_ALL_REDUCE, 32, GIB, SIM_NCCL_NVLS_TREE, SIM_NCCL_SIMPLE, &c), 0);
  assert_rel(c.latency_s, 148.6e-6, 1e-12);
  sim_nccl_choose(&h100, SIM_COLL_ALL_REDUCE, 32, 32, &c);
  assert_int_equal(c.algo, SIM_NCCL_TREE);
  assert_int_equal(sim_nccl_model(&h100, SIM_COLL_ALL_REDUCE, 8, GIB, SIM_NCCL_NVLS_TREE, SIM_NCCL_SIMPLE, &c), -1);
  assert_int_equal(sim_nccl_model(&A100, SIM_COLL_ALL_REDUCE, 32, GIB, SIM_NCCL_NVLS_TREE, SIM_NCCL_SIMPLE, &c), -1);
  assert_int_equal(sim_nccl_model(&h100, SIM_COLL_ALL_GATHER, 32, GIB, SIM_NCCL_NVLS_TREE, SIM_NCCL_SIMPLE, &c), -1);
  assert_int_equal(sim_nccl_model(&h100, SIM_COLL_ALL_REDUCE, 32, GIB, SIM_NCCL_NVLS_TREE, SIM_NCCL_LL, &c), -1);
  sim_nccl_choose(&h100, SIM_COLL_ALL_REDUCE, 32, 64 * MIB, &c);
  double got = run_nccl(&h100, 32, 370e9 * 7 / 8, 50e9, SIM_COLL_ALL_REDUCE, (size_t)(64 * MIB / 4), NULL);
  assert_rel(got, c.time_s, 1e-3);
}

/* LL's cap (llMaxBws, tuning.cc at 7e515921 = v2.10.3-1 through 48bb7fec = v2.20.5-1), 1 MiB
** all-reduces worked by hand (GB/s; latencies as test_model_two_nodes has them):
**   2 DGX A100 (AMD hosts), 16 ranks, ring LL: min(192 / 4 = 48, 22.5) = 22.5 GB/s, algbw
**     22.5 x 16/30 = 12 GB/s: 32.688 us + 2^20 / 12e9 = 120.0693 us; Intel hosts' 39: 83.1003 us;
**     no cap (a system of no known arch): 48 x 16/30 = 25.6 GB/s, 73.648 us
**   the same, tree LL: min(0.92 x 192, 110) / 3.8 = 28.9 GB/s, capped at 22.5, x 0.5 (the
**     correction at 2^14) x 1/2 = 5.625 GB/s: 27.504 us + 186.4135 us = 213.9175 us
**   4 nodes, AMD: the cap is 19 GB/s (ring LL busbw); Intel 20.4
**   1 DGX H100 (Hopper), 8 ranks, ring LL: min(370 / 4 = 92.5, 87.7) = 87.7, algbw x 8/14:
**     10.18 us + 2^20 / 50.114e9 = 31.1037 us; one A100 node is under its 87.7 (235 / 4)
**   tree Simple across 2 nodes: latency 2 x (7 x 28 + 1 x 28) = 448 us (2.7.5's 50 us network
**     hop gave 492) */
static void test_ll_cap(void **state) {
  (void)state;
  sim_nccl_system amd = {8, 235e9, 192e9, 1, 0, 0, 0, 8, SIM_NCCL_AMPERE, 1}, intel = amd,
                  none = amd;
  intel.amd_host = 0;
  none.arch = SIM_NCCL_ARCH_NONE;
  sim_nccl_choice c;
  assert_int_equal(sim_nccl_model(&amd, SIM_COLL_ALL_REDUCE, 16, MIB, SIM_NCCL_RING, SIM_NCCL_LL, &c), 0);
  assert_rel(c.busbw, 22.5e9, 1e-12);
  assert_rel(c.time_s, 120.069333e-6, 1e-8);
  sim_nccl_model(&intel, SIM_COLL_ALL_REDUCE, 16, MIB, SIM_NCCL_RING, SIM_NCCL_LL, &c);
  assert_rel(c.time_s, 83.1003077e-6, 1e-8);
  sim_nccl_model(&none, SIM_COLL_ALL_REDUCE, 16, MIB, SIM_NCCL_RING, SIM_NCCL_LL, &c);
  assert_rel(c.time_s, 73.648e-6, 1e-9);
  sim_nccl_model(&amd, SIM_COLL_ALL_REDUCE, 16, MIB, SIM_NCCL_TREE, SIM_NCCL_LL, &c);
  assert_rel(c.time_s, 213.917511e-6, 1e-8);
  sim_nccl_model(&amd, SIM_COLL_ALL_REDUCE, 32, MIB, SIM_NCCL_RING, SIM_NCCL_LL, &c);
  assert_rel(c.busbw, 19e9, 1e-12);
  sim_nccl_model(&intel, SIM_COLL_ALL_REDUCE, 32, MIB, SIM_NCCL_RING, SIM_NCCL_LL, &c);
  assert_rel(c.busbw, 20.4e9, 1e-12);
  sim_nccl_system h100 = {8, 370e9, 384e9, 1, 0, 330e9, 0, 8, SIM_NCCL_HOPPER, 0};
  sim_nccl_model(&h100, SIM_COLL_ALL_REDUCE, 8, MIB, SIM_NCCL_RING, SIM_NCCL_LL, &c);
  assert_rel(c.time_s, 31.1036944e-6, 1e-8);
  sim_nccl_model(&amd, SIM_COLL_ALL_REDUCE, 8, MIB, SIM_NCCL_RING, SIM_NCCL_LL, &c);
  assert_rel(c.busbw, 235e9 / 4, 1e-12);
  sim_nccl_model(&amd, SIM_COLL_ALL_REDUCE, 16, MIB, SIM_NCCL_TREE, SIM_NCCL_SIMPLE, &c);
  assert_rel(c.latency_s, 448e-6, 1e-12);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_model_dgx_a100_one_node),
    cmocka_unit_test(test_model_two_nodes),
    cmocka_unit_test(test_transport_latency),
    cmocka_unit_test(test_model_monotone),
    cmocka_unit_test(test_ring_takes_the_model_time),
    cmocka_unit_test(test_pipelined_tree),
    cmocka_unit_test(test_tree_across_two_nodes),
    cmocka_unit_test(test_sizes_and_links),
    cmocka_unit_test(test_channels_across_nodes),
    cmocka_unit_test(test_channels_sum),
    cmocka_unit_test(test_nvls),
    cmocka_unit_test(test_nvls_tree),
    cmocka_unit_test(test_ll_cap),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
