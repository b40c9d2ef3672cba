/*
** nccl.h: NCCL's choice of algorithm and protocol for a collective and what that choice costs,
** as NCCL's tuning model has them (src/graph/tuning.cc of NVIDIA/nccl, read at commit 01afd20a:
** ncclTopoTuneModel and ncclTopoGetAlgoTime; docs/machine.md, "GPU collectives as NCCL runs
** them"). The collective engine (collective.h, algorithm "nccl") runs the chosen algorithm over
** the links and charges the model's latency and protocol efficiency on top; this module is pure
** arithmetic on doubles, the same bits everywhere (no fma, no fast-math).
**
** The model, for p ranks on N = p / ranks_per_node nodes and n bytes, per (algorithm, protocol):
**   time = latency + n / algbw
**   latency = launch + baseLat + ring: (steps - interSteps) x hwLat(intra) + interSteps x interLat
**                       tree: 2 x ((ppn - 1) x hwLat(intra) + log2(N) x interLat)
**   interLat = hwLat(NET) + net_latency_s, twice for Simple (NCCL's flush), as tuning.cc adds the
**   net plugin's latencyInter
**   algbw = busBw x (ring: p / steps, tree: 1/2), busBw = the system's Simple bus bandwidth
**   (inside a node with N == 1, else the smaller of that and the network's) times the
**   protocol's share: ring LL 1/4 (1/3 for one-node all_gather, reduce_scatter, broadcast),
**   LL128 0.92 (0.7 with one rank a node); tree min(0.92 busBw, maxTreeBw) and then LL 1/3.8,
**   LL128 7/9 on one node or 120/128; LL's busBw, ring's and tree's, at most llMaxBw (on one
**   node by the GPUs' generation: Volta 39 GB/s, Ampere and Hopper 87.7; across 2 nodes 39 with
**   Intel hosts, 22.5 with AMD's; beyond 20.4 and 19); tree bandwidth times NCCL's size
**   correction for medium messages (64 B to 256 MiB); the ring's Simple latency x 1.9 across nodes for all_reduce from p/16 x 64 KiB
**   up (its "plateau"). Tree only for all_reduce. NVLS (NCCL 2.17+, tuning.cc at b6475625:
**   all_reduce, Simple, one node, where the system has nvls_busbw): time = launch + 23 us +
**   n / (5/6 nvls_busbw). NVLS tree (tuning.cc at 5067397c: all_reduce, Simple, across nodes, where
**   the system has nvls_busbw: the switches reduce inside each node, trees join the nodes):
**   busBw = min(the node's NVLS busBw as nccl-tests counts it, 5/6 nvls_busbw x 2 (ppn-1)/ppn,
**   because NCCL gives NVLS and NVLS tree the same intraBw; net_busbw, doubled on 2 nodes, where
**   NCCL pipelines the two trees' halves over both directions; NVLS tree's channels x Hopper's
**   perChMaxNVLSTreeBw, 57.7 GB/s on 2 nodes, 45.5 on more, where its channels are the NVLS
**   search's, one per head, a GPU of the node with a NIC: nvls_heads), algbw = busBw x p / (2 (p-1)),
**   latency = launch + 25 us (hwLat NVLINK) + 2 log2(N) x (20.9 us (hwLat NET) + 2 x net_latency_s,
**   the net plugin's own latency, counted again for Simple's flush). The fastest pair wins; ties
**   go to the first in NCCL's order (tree, ring, NVLS, NVLS tree; LL, LL128, Simple).
** The tree's, LL's and the correction's figures are those of NCCL 2.10 to 2.20 (tuning.cc at
** 7e515921 and 48bb7fec), the ring's latencies 2.7.5's (nccl.c says why).
** Left out: NCCL's per-channel caps (ll128MaxBwPerCh and perChMaxTreeBws x nChannels: podsim has
** no channels, the system's busbw is nChannels x speed already; the tree keeps 2.7.5's caps on
** the whole tree), CollNet (in-network SHARP reductions: no system
** of the catalogue has its switches).
*/
#ifndef PODSIM_NCCL_H
#define PODSIM_NCCL_H

#include "sim/collective.h"

typedef enum { SIM_NCCL_TREE = 0, SIM_NCCL_RING, SIM_NCCL_NVLS, SIM_NCCL_NVLS_TREE } sim_nccl_algo; /* NCCL's order */
typedef enum { SIM_NCCL_LL = 0, SIM_NCCL_LL128, SIM_NCCL_SIMPLE } sim_nccl_proto; /* likewise */
#define SIM_NCCL_PROTO_COUNT 3
/* The GPU generation, as tuning.cc indexes its per-architecture tables (compute capability 7.x,
** 8.x, 9.0 and later); NONE: a system NCCL's tables do not describe (no LL cap). */
typedef enum { SIM_NCCL_ARCH_NONE = 0, SIM_NCCL_VOLTA, SIM_NCCL_AMPERE, SIM_NCCL_HOPPER } sim_nccl_arch;

/* What NCCL's model knows of the machine. */
typedef struct sim_nccl_system {
  int ranks_per_node;     /* GPUs of one node in the group (every node the same); >= p: one node */
  double busbw;           /* Simple ring bus bandwidth inside a node, bytes/s: NCCL's nChannels x
                             speedIntra with its architecture cap (A100: 235 GB/s) */
  double net_busbw;       /* the same between nodes: NCCL's nChannels x bwInter, the NICs a
                             node's channels use (DGX: a NIC per GPU, 8 x 25 GB/s on A100) */
  int ll128;              /* LL128 enabled (NCCL: NVLink on Volta, Ampere, Hopper) */
  double launch_s;        /* what a collective costs beyond the model, whatever its size: the
                             kernel's launch and completion as nccl-tests times them (a
                             calibration, docs/machine.md); part of every pair's latency */
  double nvls_busbw;      /* NVLink SHARP (H100's NVSwitches reduce): NCCL's NVLS busBw, whose
                             5/6 is its algbw; 0: none */
  double net_latency_s;   /* the network transport's own latency (NCCL's net plugin property,
                             graph latencyInter), added to every network hop of the ring, the
                             tree and NVLS tree (twice for Simple); 0 on
                             InfiniBand and RoCE (NCCL's IB transport reports none) */
  int nvls_heads;         /* NVLS tree's channels: the node's GPUs with a NIC of their own, NCCL's
                             NVLS heads (search.cc: at most a channel per GPU, a head per NIC);
                             0: ranks_per_node */
  sim_nccl_arch arch;     /* the GPUs' generation: LL's bandwidth cap on one node (llMaxBws) */
  int amd_host;           /* the nodes' CPUs are AMD's: LL's cap across nodes is AMD's row of
                             llMaxBws (NCCL picks it by the CPU vendor, the proxy's host) */
} sim_nccl_system;

typedef struct sim_nccl_choice {
  sim_nccl_algo algo;     /* tree, ring, NVLS or NVLS tree */
  sim_nccl_proto proto;   /* LL, LL128 or Simple */
  double latency_s;       /* base latency plus the steps' hardware latency, seconds */
  double base_s;          /* of it, what does not depend on the steps (baseLat, with the ring's
                             plateau factor) */
  double busbw;           /* the pair's bus bandwidth, bytes/s (after protocol and correction;
                             NVLS: its algbw x 2(p-1)/p, as nccl-tests counts it) */
  double algbw;           /* busbw x the algorithm's ratio: bytes of the message per second */
  double time_s;          /* latency_s + bytes / algbw: NCCL's predicted time */
} sim_nccl_choice;

/* The model of one (algo, proto) pair; returns 0, or -1 when NCCL would not run it (tree for
** an op other than all_reduce, LL128 disabled, p < 2). */
int  sim_nccl_model(const sim_nccl_system *s, sim_coll_op op, int p, double bytes,
                    sim_nccl_algo algo, sim_nccl_proto proto, sim_nccl_choice *out);
/* The pair NCCL picks: the least predicted time (see above). p >= 2. */
void sim_nccl_choose(const sim_nccl_system *s, sim_coll_op op, int p, double bytes,
                     sim_nccl_choice *out);
/* "LL", "LL128", "Simple"; "tree", "ring", "nvls", "nvls_tree". */
const char *sim_nccl_proto_name(sim_nccl_proto proto);
const char *sim_nccl_algo_name(sim_nccl_algo algo);

#endif
