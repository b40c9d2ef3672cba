/*
** nccl.c: NCCL's tuning model (sim_nccl_). The tables are NCCL's (src/graph/tuning.cc at
** 01afd20a), in microseconds as NCCL writes them, indexed [algorithm][protocol] in NCCL's order
** (tree, ring; LL, LL128, Simple), with the tree's and LL's figures that every NCCL from 2.10 to
** 2.20 carries (tuning.cc at 7e515921 = v2.10.3-1 and 48bb7fec = v2.20.5-1, the same in both: the
** versions the published runs of docs/fidelity.md used, the launch calibration's 2021 run
** included): the tree's NVLink LL128 hop 1.25 us and network Simple hop 28 us (2.7.5: 1.2 and
** 50), its busBw x .92 (2.7.5: .9), LL128 across nodes x 120/128 (2.7.5: .915), and LL's cap,
** llMaxBws. The ring's latencies stay 2.7.5's, which 2.10-2.17 kept (2.12 alone charged 28 us
** for the network Simple hop): 2.18 raised baseLat and the network Simple hop and lowered the
** plateau factor, and the 5.6 us launch calibration (NCCL issue 583, 2021) was measured with
** the older ones. NVLS came later: its figures are from
** tuning.cc at b6475625 (Simple only, all_reduce on one node: latency hwLat[NVLINK][NVLS] = 23 us
** and no base, algbw = 5/6 of its busBw).
**
** Invariants:
**   1. sim_nccl_choose returns the pair of least predicted time, ties to the first in NCCL's
**      order, so its time is the minimum of increasing functions of the size: it never falls
**      as the message grows (tests/sim/test_nccl.c).
**   2. A larger busbw, net_busbw or nvls_busbw never gives a longer predicted time (every
**      bandwidth term is nondecreasing in them and the latencies do not depend on them; a
**      positive nvls_busbw only adds a candidate).
*/
#include "sim/nccl.h"

#include <assert.h>

#define US 1e-6
#define GBPS 1e9

/* baseLat: per collective, whatever the steps. */
static const double BASE_LAT[2][SIM_NCCL_PROTO_COUNT] = {{4.4, 4.4, 0}, {3.6, 10.0, 8.4}};
/* hwLat per step, NVLink and network ("Tree/Simple is the latency of a 256kB chunk"). */
static const double NVLINK_LAT[2][SIM_NCCL_PROTO_COUNT] = {{.52, 1.25, 28}, {.47, 1.9, 3.4}};
static const double NET_LAT[2][SIM_NCCL_PROTO_COUNT] = {{5.0, 8.5, 28}, {2.7, 4.0, 9.6}};
/* The tree's share of the system's busBw, and LL128's of the tree's across nodes (7/9 on one). */
#define TREE_SHARE .92
#define TREE_LL128_NODES (120.0 / 128.0)
/* LL's busBw cap, GB/s (llMaxBws): on one node by the GPU's generation ([arch]: Volta 39,
** Ampere 87.7, Hopper 87.7 from 2.15 to 2.20, 141 from 2.21), across nodes by the host's CPU
** vendor ([amd_host][2 nodes, more]: Intel and others 39 and 20.4, AMD 22.5 and 19). */
static const double LL_MAX_ONE_NODE[] = {0, 39.0, 87.7, 87.7};
static const double LL_MAX_NODES[2][2] = {{39.0, 20.4}, {22.5, 19.0}};
/* Trees fall short of the model for medium sizes: NCCL's static correction of their bandwidth,
** by log2(bytes / 64) for 64 B to 256 MiB (2.10-2.20's table: 2.7.5's ended at 128 MiB). */
#define TREE_CORRECTION_SIZES 23
static const double TREE_CORRECTION[SIM_NCCL_PROTO_COUNT][TREE_CORRECTION_SIZES] = {
  {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
  {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
  {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};

/* NVLS: its one latency, and its algbw per unit of the system's nvls_busbw. */
#define NVLS_LAT 23.0
#define NVLS_RATIO (5.0 / 6.0)
/* NVLS tree (tuning.cc at 5067397c): hwLat[NVLINK][NVLS_TREE][Simple], hwLat[NET][NVLS_TREE]
** [Simple], and its cap per channel, perChMaxNVLSTreeBws[Hopper][N2 or N4], GB/s. tuning.cc
** multiplies it by the NVLS graph's nChannels, which search.cc caps at the node's GPUs
** (maxChannels = min(NCCL_MAX_NVLS_ARITY, GPUs)) and fills with one head per NIC: 8 on a DGX
** H100 (NCCL issue 1041: "only found 8 channels on graph.xml" with 8 NICs; the 16 NVLS channels
** it runs are execution channels, "completely decorrelated"), 4 heads with 4 NICs (issue 1357's
** log: "NVLS Head 0..3"). */
#define NVLS_TREE_LAT 25.0
#define NVLS_TREE_NET_LAT 20.9
#define NVLS_TREE_CH_CAP_2_NODES 57.7
#define NVLS_TREE_CH_CAP 45.5

static int log2i(double x) {
  int l = 0;
  for (double v = x; v >= 2; v /= 2) l++;
  return l;
}

/* LL's cap for this system on `nodes` nodes, bytes/s; 0: none (a system of no known arch). */
static double ll_cap(const sim_nccl_system *s, int nodes) {
  if (s->arch == SIM_NCCL_ARCH_NONE || (unsigned)s->arch > SIM_NCCL_HOPPER) return 0;
  if (nodes == 1) return LL_MAX_ONE_NODE[s->arch] * GBPS;
  return LL_MAX_NODES[s->amd_host != 0][nodes > 2] * GBPS;
}

const char *sim_nccl_proto_name(sim_nccl_proto proto) {
  static const char *const NAMES[] = {"LL", "LL128", "Simple"};
  return (unsigned)proto < SIM_NCCL_PROTO_COUNT ? NAMES[proto] : "unknown";
}

const char *sim_nccl_algo_name(sim_nccl_algo algo) {
  static const char *const NAMES[] = {"tree", "ring", "nvls", "nvls_tree"};
  return (unsigned)algo <= SIM_NCCL_NVLS_TREE ? NAMES[algo] : "unknown";
}

int sim_nccl_model(const sim_nccl_system *s, sim_coll_op op, int p, double bytes,
                   sim_nccl_algo algo, sim_nccl_proto proto, sim_nccl_choice *out) {
  int ar = op == SIM_COLL_ALL_REDUCE, ring = algo == SIM_NCCL_RING;
  if (p < 2 || (!ring && !ar) || (proto == SIM_NCCL_LL128 && !s->ll128)) return -1;
  int ppn = s->ranks_per_node < p ? s->ranks_per_node : p, nodes = (p + ppn - 1) / ppn;
  assert(ppn >= 1);
  if (algo == SIM_NCCL_NVLS) {
    if (nodes > 1 || proto != SIM_NCCL_SIMPLE || !(s->nvls_busbw > 0)) return -1;
    *out = (sim_nccl_choice){algo, proto, s->launch_s + NVLS_LAT * US, s->launch_s, 0, s->nvls_busbw * NVLS_RATIO, 0};
    out->busbw = out->algbw * 2 * (p - 1) / p;
    out->time_s = out->latency_s + bytes / out->algbw;
    return 0;
  }
  if (algo == SIM_NCCL_NVLS_TREE) {
    if (nodes < 2 || !ar || proto != SIM_NCCL_SIMPLE || !(s->nvls_busbw > 0)) return -1;
    double intra = s->nvls_busbw * NVLS_RATIO * 2 * (ppn - 1) / ppn;
    int heads = s->nvls_heads > 0 && s->nvls_heads < ppn ? s->nvls_heads : ppn;
    double inter = s->net_busbw * (nodes <= 2 ? 2 : 1);
    double cap = heads * (nodes <= 2 ? NVLS_TREE_CH_CAP_2_NODES : NVLS_TREE_CH_CAP) * GBPS;
    double bw = intra < inter ? intra : inter;
    bw = bw < cap ? bw : cap;
    double net = NVLS_TREE_NET_LAT * US + 2 * s->net_latency_s;
    double lat = s->launch_s + NVLS_TREE_LAT * US + 2 * log2i(nodes) * net;
    *out = (sim_nccl_choice){algo, proto, lat, s->launch_s, bw, bw * p / (2.0 * (p - 1)), 0};
    out->time_s = out->latency_s + bytes / out->algbw;
    return 0;
  }
  int scatter = op == SIM_COLL_REDUCE_SCATTER || op == SIM_COLL_ALL_GATHER;
  int steps = ar ? 2 * (p - 1) : scatter ? p - 1 : p;
  int inter = ar ? 2 * (nodes - 1) : scatter ? nodes - 1 : nodes;
  double bw = nodes == 1 || s->net_busbw > s->busbw ? s->busbw : s->net_busbw;
  if (ring && proto == SIM_NCCL_LL) bw *= nodes > 1 || ar ? 1.0 / 4.0 : 1.0 / 3.0;
  if (ring && proto == SIM_NCCL_LL128) bw *= ppn < 2 ? 0.7 : 0.92;
  if (!ring) {
    /* 2.7.5's caps on the whole tree: from 2.10 NCCL caps it per channel (perChMaxTreeBws x
    ** the tree's channels), and podsim has no channels (nccl.h). */
    double max_tree = (nodes > 2 ? (s->ll128 && proto == SIM_NCCL_LL128 ? 105.0 : 80.0)
                                 : (s->ll128 && proto == SIM_NCCL_LL128 ? 130.0 : 110.0)) * GBPS;
    bw = bw * TREE_SHARE < max_tree ? bw * TREE_SHARE : max_tree;
    if (proto == SIM_NCCL_LL) bw *= 1.0 / 3.8;
    if (proto == SIM_NCCL_LL128) bw *= nodes == 1 ? 7.0 / 9.0 : TREE_LL128_NODES;
  }
  double ll_max = ll_cap(s, nodes);
  if (proto == SIM_NCCL_LL && ll_max > 0 && bw > ll_max) bw = ll_max;
  if (!ring) {
    int log_size = log2i(bytes / 64);
    if (log_size < TREE_CORRECTION_SIZES) bw *= TREE_CORRECTION[proto][log_size];
  }
  /* A network hop of the ring or the tree also waits the transport's own latency, twice for
  ** Simple (its flush): tuning.cc at 5067397c, interLat = hwLat[NET] + latencyInter, and
  ** latencyInter again for Simple. */
  double intra = NVLINK_LAT[algo][proto] * US;
  double net = NET_LAT[algo][proto] * US + s->net_latency_s * (proto == SIM_NCCL_SIMPLE ? 2 : 1);
  if (nodes > 1 && proto == SIM_NCCL_LL) intra *= 1.8;
  double base = BASE_LAT[algo][proto] * US, steps_lat;
  if (ring && (op == SIM_COLL_BROADCAST || op == SIM_COLL_ALL_TO_ALL)) {
    /* One pipeline through the ranks; Simple adds a chunk's latency (tree's) per step. */
    int a = proto == SIM_NCCL_SIMPLE ? SIM_NCCL_TREE : SIM_NCCL_RING;
    steps_lat = steps * (nodes == 1 ? NVLINK_LAT[a][proto] : NET_LAT[a][proto]) * US;
  } else if (ring) {
    steps_lat = (steps - inter) * intra + inter * net;
    if (proto == SIM_NCCL_SIMPLE && nodes > 1 && ar && bytes >= p / 16.0 * 65536) {
      base *= 1.9;
      steps_lat *= 1.9;
    }
  } else {
    steps_lat = 2 * ((ppn - 1) * intra + log2i(nodes) * net);
  }
  base += s->launch_s;
  double lat = base + steps_lat;
  out->algo = algo;
  out->proto = proto;
  out->latency_s = lat;
  out->base_s = base;
  out->busbw = bw;
  out->algbw = bw * (ring ? (double)p / steps : 0.5);
  out->time_s = lat + bytes / out->algbw;
  return 0;
}

void sim_nccl_choose(const sim_nccl_system *s, sim_coll_op op, int p, double bytes,
                     sim_nccl_choice *out) {
  int found = 0;
  for (int a = SIM_NCCL_TREE; a <= SIM_NCCL_NVLS_TREE; a++)
    for (int pr = 0; pr < SIM_NCCL_PROTO_COUNT; pr++) {
      sim_nccl_choice c;
      if (sim_nccl_model(s, op, p, bytes, (sim_nccl_algo)a, (sim_nccl_proto)pr, &c) != 0) continue;
      if (!found || c.time_s < out->time_s) *out = c;
      found = 1;
    }
  assert(found); /* ring Simple always runs */
}
