/*
** collective.h: collectives on a group of ranks that move real float32 buffers over simulated
** links. The reduction happens in the algorithm's order as the chunks arrive, so the result's
** bits depend on the algorithm, as on hardware; the timing is the sum of the link transfers.
** Bytes on the wire: 4 per float.
**
** Chunks: an op that cuts `count` floats into k chunks (k = p for most, see below) makes them
** as even as possible, the first count % k one float longer than the rest.
**
** Ops (SUM is the only reduction):
**   all_reduce      every rank ends with the sum of all buffers, the same bits on every rank.
**   reduce_scatter  rank r ends with the sum of chunk r (of p) in place; its other chunks hold
**                   partial sums (scratch).
**   all_gather      rank r contributes chunk r (of p) in place; every rank ends with all of them.
**   broadcast       every rank ends with the root's buffer.
**   all_to_all      the buffer is p blocks of count / p floats (count % p must be 0); block j of
**                   rank i ends as block i of rank j.
**   ppermute        collective permute by a cyclic shift of `root` (0..p-1): rank r sends its
**                   whole buffer to rank (r + root) mod p, so rank r ends with what rank
**                   (r - root) mod p held (jax.lax.ppermute with perm [(i, (i + root) mod p)];
**                   shift 0 moves nothing). One round of direct transfers whatever the
**                   algorithm: every algorithm runs it the same way.
**
** Algorithms, and the ops each supports (the others return SIM_COLL_EUNSUPPORTED):
**   ring                 all_reduce, reduce_scatter, all_gather: p-1 (or 2(p-1)) steps, rank r
**                        sends one chunk to r+1 per step. broadcast: a chain root, root+1, ...
**                        pipelined in p chunks, 2p-2 steps. all_to_all: pairwise exchange, step s
**                        = 1..p-1 sends block r+s to rank r+s (MPICH's long-message order).
**   bidirectional_ring   all_reduce, reduce_scatter, all_gather: two rings at once, the first
**                        half of every chunk clockwise, the second half counter-clockwise.
**   torus                all_reduce, reduce_scatter, all_gather over the shape given by
**                        sim_collective_set_torus: rank r has mixed-radix coordinates (axis 0
**                        fastest). Every axis at once, as the TPU's ICI runs it: with D axes
**                        longer than 1, in a canonical order (longest first, rings before lines,
**                        faster links first, then by index), each chunk is split into D lane
**                        shares (of len floats, len / D each, the first len % D one more) and
**                        lane l runs on its share of every chunk: reduce-scatter along the axes
**                        in the order rotated by l, then all-gather in reverse. At a stage index
**                        the lanes are on D different axes; a rank's lanes start a stage
**                        together, so no two lanes ever share a link. Where the alpha-beta
**                        estimate (each axis's route latency and bandwidth) says one lane through
**                        the axes in turn is faster (small messages on unequal axes, where a
**                        stage waits for its slowest lane), the run takes one lane. An axis with
**                        wraparound and length > 2 runs as a bidirectional ring (half of the
**                        share each way); one without runs as a bidirectional line (partial sums
**                        flow in from both ends), which doubles the bandwidth term. Chunk r ends
**                        on rank r, as with the ring. Summation order of an element of lane l:
**                        along the lane's first axis (in its ring's or line's order), then its
**                        second, ... Relabelling the axes changes neither the choice nor the
**                        time (to the picosecond when count is a multiple of p x 2D; otherwise
**                        the longer chunks may sit on other ranks). all_to_all (collective_a2a.c):
**                        every pair's data at once, as the TPU's ICI moves it: the same D lanes,
**                        each a stage per axis in the rotated order; in a stage a rank sends every
**                        member of its line along the axis, directly, the blocks bound for that
**                        member's coordinate (peers by distance, 4 a round; on a ring of even m
**                        the block m/2 away goes half each way, relayed by the neighbour on that
**                        side). Each link carries the bytes of the direct all-to-all's
**                        dimension-ordered routes: B m / (8 W) a stage on a ring of m.
**   tree                 all_reduce (binary tree reduce to rank 0, then broadcast), broadcast from
**                        any root. Heap order (children of v: 2v+1, 2v+2, relative to the root);
**                        whole buffers per step, not pipelined.
**   double_binary_tree   all_reduce: two binary trees each carrying half of the buffer, the second
**                        the mirror image of the first (v -> p-1-v), so a rank is an inner node
**                        of at most one of them (NCCL's idea; NCCL orders its trees in-order).
**   halving_doubling     all_reduce for any p (Rabenseifner: recursive-halving reduce-scatter,
**                        recursive-doubling all-gather over p' = 2^floor(lg p) ranks; for
**                        p > p', ranks 2i and 2i+1 (2i < 2(p-p')) first fold into 2i+1 and get
**                        the result back at the end); reduce_scatter and all_gather for power-of-two
**                        p only (chunks of p').
**   nccl                 every op, as NCCL runs it on GPUs (sim/nccl.h): NCCL's tuning model
**                        picks ring or tree and the protocol (LL, LL128, Simple) by size; the ring
**                        runs the ring's plan, the tree NCCL's pipelined double binary tree
**                        (all_reduce: the buffer in K chunks, tree t carrying half t of each, the
**                        chunks streaming up to the root and back down, K + 2H - 1 rounds for a
**                        heap of depth H; a rank is inner in at most one tree). On top of the
**                        links: the model's latency (ring: base before the first round and its
**                        hardware latency spread evenly over the rounds; tree: all of it before
**                        the first round, the depth the chunks stream through) and the
**                        protocol's efficiency (each transfer carries bytes x the Simple ring's
**                        bus bandwidth / the chosen pair's: 4x for ring LL). The machine comes
**                        from sim_collective_set_nccl, else one node whose bandwidth is the
**                        route from rank 0 to rank 1's slowest link. NVLS (the switches
**                        reduce) runs the ring's plan with its share. An all_reduce ring over
**                        whole nodes runs NCCL's channels: ranks_per_node rings, each with a
**                        share of the data, ring l entering every node at its rank l (so each
**                        crosses the network through other GPUs' NICs).
** p == 1 is a no-op for every supported pair.
*/
#ifndef PODSIM_COLLECTIVE_H
#define PODSIM_COLLECTIVE_H

#include "sim/sim.h"

typedef enum {
  SIM_ALGO_RING = 0,          /* see the list above */
  SIM_ALGO_BIDI_RING,         /* "bidirectional_ring" */
  SIM_ALGO_TORUS,             /* "torus" */
  SIM_ALGO_TREE,              /* "tree" */
  SIM_ALGO_DOUBLE_TREE,       /* "double_binary_tree" */
  SIM_ALGO_HALVING_DOUBLING,  /* "halving_doubling" */
  SIM_ALGO_NCCL,              /* "nccl" */
} sim_algo;
#define SIM_ALGO_COUNT 7

typedef enum {
  SIM_COLL_ALL_REDUCE = 0,    /* "all_reduce" */
  SIM_COLL_REDUCE_SCATTER,    /* "reduce_scatter" */
  SIM_COLL_ALL_GATHER,        /* "all_gather" */
  SIM_COLL_BROADCAST,         /* "broadcast" */
  SIM_COLL_ALL_TO_ALL,        /* "all_to_all" */
  SIM_COLL_PPERMUTE,          /* "ppermute" */
} sim_coll_op;
#define SIM_COLL_OP_COUNT 6

/* Errors of the collective calls (SIM_OK = 0 and SIM_FAILED = -1 come from sim.h). */
enum {
  SIM_COLL_EUNSUPPORTED = -2, /* the algorithm does not implement the op (for this p) */
  SIM_COLL_ETORUS = -3,       /* torus without a shape, or a shape whose product is not p */
  SIM_COLL_EINVAL = -4,       /* root out of range, all_to_all count not a multiple of p, or a
                                 rank's arguments differ from the first caller's */
  SIM_COLL_EBUSY = -5,        /* sim_collective_start while another collective is under way */
};

/* Names as the scenario files spell them; "unknown" for a value outside the enum. */
const char *sim_algo_name(sim_algo a);
const char *sim_coll_op_name(sim_coll_op op);
/* Parse those names; 0, or -1 (out untouched) for a name that is none of them. */
int sim_algo_parse(const char *name, sim_algo *out);
int sim_coll_op_parse(const char *name, sim_coll_op *out);
/* A message for an error code above. */
const char *sim_coll_strerror(int code);

/* Fills out[0..max) with the links from rank `from` to rank `to`; returns the hop count. A
** collective keeps one-link routes until it ends, so the answer may change between collectives
** on a group but not during one. */
typedef size_t (*sim_route_fn)(void *ctx, int from, int to, sim_link **out, size_t max);

typedef struct sim_collective sim_collective;

/* A group of `ranks` members; rank i's data travels over route(i, j). Optional per-rank cpus
** charge the reduction arithmetic (one FLOP per element added); NULL makes it free. */
sim_collective *sim_collective_new(sim_engine *e, const char *name, int ranks,
                                   sim_route_fn route, void *route_ctx, sim_cpu *const *rank_cpus);
void sim_collective_free(sim_collective *c);

/* A sub-group of `ranks` members of parent (collective_group.c): its rank i is the parent's
** rank members[i] (distinct, in 0..p-1), reached over the parent's routes, reducing on the
** parent's cpus. It has its own rendezvous, so collectives on disjoint sub-groups run at once,
** sharing links only where their routes do. No torus shape until set_torus. The parent must
** outlive it; freed with sim_collective_free. */
sim_collective *sim_collective_new_subgroup(sim_collective *parent, const char *name, int ranks,
                                            const int *members);
/* Makes c's reductions free: it charges no cpu for its adds from now on (sim_collective_new's
** rank_cpus as if NULL), so a run on shapes alone whose routes are idle goes in closed form even
** while its ranks' cpus compute. Only while c is idle. */
void sim_collective_free_reductions(sim_collective *c);
/* The sub-groups along `axis` of parent's torus shape (sim_collective_set_torus): one per line
** of ranks that differ only in their coordinate on the axis, ordered by their first rank; rank i
** of a line has coordinate i on the axis. Each is a torus of that one axis, its length and
** wraparound, so the torus algorithm on it uses the axis's links alone. Fills out[0..n) (n <=
** max) and returns n, the parent's size over the axis's length. */
int sim_collective_axis_groups(sim_collective *parent, int axis, sim_collective **out, int max);

/* The torus shape for SIM_ALGO_TORUS: ndims (1..8) axis lengths whose product is the group size,
** and per axis whether it wraps around (wraps NULL = none does). The routes should follow it. */
void sim_collective_set_torus(sim_collective *c, int ndims, const int *dims, const int *wraps);
/* c's torus shape: its axes (0 when none was set), their lengths into dims and whether each wraps
** into wraps (each of COLL_MAX_DIMS = 8 entries at most). */
int sim_collective_torus(const sim_collective *c, int *dims, int *wraps);

/* What every collective on the group costs once, whatever its size and algorithm, before its
** first round (default 0): on a TPU, XLA's set-up and synchronisation of a collective's DMAs
** (sim/tpu.c, docs/machine.md). A sub-group made after this call inherits it. It holds no link:
** other traffic runs meanwhile, and the closed form (collective.c) still applies. */
void sim_collective_set_fixed_cost(sim_collective *c, sim_time cost);

/* The machine NCCL's model sees for SIM_ALGO_NCCL (sim/nccl.h; copied). */
struct sim_nccl_system;
void sim_collective_set_nccl(sim_collective *c, const struct sim_nccl_system *system);

/* SIM_OK if `op` by `algo` can run on this group with this root and count, else the error code
** sim_collective_run or _start would return (for scenario validation). */
int sim_collective_check(const sim_collective *c, sim_coll_op op, sim_algo algo, int root,
                         size_t count);

/* Called by each rank's actor with its own buffer of `count` floats (the same op, algo, root and
** count on every rank). Blocks until the whole collective is done. Returns SIM_OK, SIM_FAILED if
** a rank was killed (the killed rank's own call never returns; the survivors get SIM_FAILED), or
** an error code above without blocking. buf may be NULL on every rank (numerics off): the
** transfers are timed, nothing is computed. */
int sim_collective_run(sim_actor *self, sim_collective *c, int rank, sim_coll_op op,
                       sim_algo algo, int root, float *buf, size_t count);

/* All-reduce (SUM) through sim_collective_run with root 0. */
int sim_allreduce(sim_actor *self, sim_collective *c, int rank, float *buf, size_t count,
                  sim_algo algo);

/* Fired from the engine when a started collective completes. */
typedef void (*sim_collective_done_fn)(sim_engine *e, sim_collective *c, void *arg);

/* Starts the collective for all ranks at once from the engine side, no actors needed; bufs holds
** p buffers of `count` floats or is NULL (numerics off). done(e, c, arg) fires when every rank is
** through (from an event, also when p == 1); it may start the next collective on the group.
** Returns SIM_OK or an error code (then nothing starts). */
int sim_collective_start(sim_collective *c, sim_coll_op op, sim_algo algo, int root,
                         float *const *bufs, size_t count, sim_collective_done_fn done, void *arg);

/* The values sim_collective_start would leave in bufs (p buffers of `count` floats), to the bit,
** computed at once: no time passes, no event fires, nothing is charged, last_duration stays.
** The gradient all-reduce overlapped with the backward pass (scenarios/programs/overlap.c)
** times its packs on shapes alone and takes the whole buffer's values from here, so packing
** never changes a sum's order. Returns SIM_OK or an error code (SIM_COLL_EBUSY while a
** collective is under way). */
int sim_collective_compute(sim_collective *c, sim_coll_op op, sim_algo algo, int root,
                           float *const *bufs, size_t count);

/* Simulated time of the last completed collective on this group (start to end), for metrics. */
sim_time sim_collective_last_duration(const sim_collective *c);

/* ---- congruence (collective_congruent.c) ----------------------------------------------------- */

/* Which cpus and links a set of owners (0, 1, ...) uses: a resource claimed by two owners fails
** the claim. By resource id, so the verdict never depends on addresses. */
typedef struct sim_claims sim_claims;
sim_claims *sim_claims_new(void);
void        sim_claims_free(sim_claims *c);
/* 0 when the resource is free or already owner's (it is then owner's), -1 when another's. */
int         sim_claims_cpu(sim_claims *c, const sim_cpu *cpu, int owner);
int         sim_claims_link(sim_claims *c, const sim_link *link, int owner);
/* A cpu's FLOP/s now. */
double      sim_cpu_rate(const sim_cpu *cpu);
/* 1 if `op` by `algo` over `count` floats on shapes alone takes on b exactly the time it takes on
** a whenever nothing else uses their links: both idle groups of the same shape with free
** reductions, the same set-up, plans and routes, link for link (collective_congruent.c,
** invariant 1); b's links are then claimed for owner (a == b claims a's). 0 when that is not
** proven (NCCL is never compared), with what was claimed so far kept. Leaves both groups set up
** for the run, nothing started. */
int sim_collective_congruent(sim_collective *a, sim_collective *b, sim_coll_op op, sim_algo algo, size_t count,
                             sim_claims *claims, int owner);

#endif
