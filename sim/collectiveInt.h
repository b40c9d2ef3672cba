/*
** collectiveInt.h: the collective engine's structs, shared by collective.c (the executor: rounds,
** rendezvous, transfers, numerics) and collective_plan.c (what each algorithm moves per round).
** Nothing outside sim/collective*.c includes it.
**
** An algorithm is a sequence of rounds. In round k a rank sends and receives a few segments
** (coll_plan); it enters round k+1 once all of them are done, and a transfer starts once both
** its ends are in its round. Plans are computed from (rank, round) when needed, never stored,
** so a group costs a few dozen bytes per rank whatever the algorithm.
**
** Lanes: the torus runs one independent algorithm per axis longer than 1, each on its own share
** of every chunk (collective.h), unless one lane is faster (collective_plan.c). Lane l of rank r is the virtual rank v = l * p + r: it has its
** own round and transfers, and talks only to virtual ranks of its lane, so a lane on a short
** axis does not wait for one on a long axis. Every other algorithm has one lane, v = r.
*/
#ifndef PODSIM_COLLECTIVEINT_H
#define PODSIM_COLLECTIVEINT_H

#include <stdint.h>

#include "sim/collective.h"
#include "sim/nccl.h"

/* Transfers a rank starts, or receives, in one round at most (a double-tree node: two trees,
** two children each). */
#define COLL_MAX_XFERS 4
#define COLL_MAX_DIMS 8
/* Tags whose one-link routes a rank remembers: the two directions of the rings, the only
** transfers that go to the same peer round after round (trees and halving-doubling change
** peers every round); the rest fit coll_rank in 128 bytes. */
#define COLL_ROUTE_TAGS 2

typedef enum {
  COLL_COPY,                 /* the receiver's segment becomes the sender's */
  COLL_REDUCE,               /* the receiver adds the sender's segment into its own on arrival */
  COLL_REDUCE_AT_END,        /* ... at the receiver's round end, in plan order: two partial sums
                                reach the same segment in one round (tree, line), and the
                                sender's copy stays unchanged until then */
  COLL_COPY_BLOCK,           /* all_to_all: the sender's original block `receiver` lands in
                                the receiver's block `sender` */
  COLL_COPY_ORIGINAL,        /* ppermute: the sender's original segment lands in the receiver's
                                (the receiver's own send may still read what it overwrites) */
  COLL_COPY_ROUTED,          /* torus all_to_all: the receiver's segment gets, from the
                                originals, what its positions hold after the stage
                                (collective_a2a.c) */
  COLL_RELAY,                /* torus all_to_all: in transit, passed on in a later round; nothing
                                lands in the receiver's buffer */
} coll_mode;

/* Floats of the run's chunk split: chunks first + i stride + j stride2 (i < n, j < n2), and
** of each chunk the share of lane `lane` (of the run's lanes, a chunk of len floats splits into
** len / lanes floats each, the first len % lanes lanes one more), whole or one half of that
** share (a share of len floats splits (len+1)/2 then len/2). Two progressions because a torus
** lane's parts are the chunks free on a run of axes that can wrap past the last axis. */
typedef struct coll_seg {
  int first;                 /* first chunk */
  int stride;                /* distance between chunks of a row */
  int n;                     /* chunks per row */
  int stride2;               /* distance between rows */
  int n2;                    /* rows */
  uint8_t lane;              /* whose share of each chunk */
  uint8_t half;              /* 0 whole, 1 first half, 2 second half */
} coll_seg;

typedef struct coll_xfer {
  int peer;                  /* the rank at the other end */
  int tag;                   /* the sender's slot, 0..COLL_MAX_XFERS-1: tells apart two
                                transfers between the same pair in one round */
  coll_mode mode;            /* what the receiver does with it (receives only) */
  coll_seg seg;              /* what moves (at the receiver for COLL_COPY_BLOCK) */
} coll_xfer;

typedef struct coll_plan {
  int nsend;                 /* entries in send */
  int nrecv;                 /* entries in recv */
  coll_xfer send[COLL_MAX_XFERS]; /* this rank's outgoing transfers this round */
  coll_xfer recv[COLL_MAX_XFERS]; /* its incoming ones, in the order reductions apply */
} coll_plan;

/* A stage of a torus lane: m - 1 rounds of one ring or line along an axis of length m > 1. Its
** parts are the chunks that agree with the rank on the axes the lane has reduced over (`fixed`),
** have coordinate j on `axis` (part j), and take every value on the others: the free axes, a
** run of axes that may wrap past the last, so two progressions (coll_seg). */
typedef struct coll_stage {
  int first;                 /* its first round */
  int axis;                  /* the axis */
  int reduce;                /* 1 reduce-scatter, 0 all-gather */
  int below;                 /* product of the lengths of axes 0..axis-1: the rank and chunk
                                distance along the axis */
  unsigned fixed;            /* bit a: the parts share the rank's coordinate on axis a */
  int stride, n;             /* the free axes from the first active axis on: stride, chunks */
  int stride2, n2;           /* the free axes that wrapped past the last: stride, chunks */
} coll_stage;

/* One virtual rank's progress through the current collective (see lanes above). */
typedef struct coll_rank {
  sim_collective *coll;      /* owner (activity callbacks get the rank alone) */
  sim_activity *send[COLL_MAX_XFERS]; /* its transfers in flight, by tag */
  int32_t to[COLL_MAX_XFERS]; /* receiver (virtual) of each transfer in flight, by tag (kept after) */
  sim_link *hop[COLL_ROUTE_TAGS]; /* by tag: the route to to[tag] when it is one link, else
                                NULL; forgotten when the collective ends (collective.c) */
  int32_t round;             /* current round; -1 before the start, rounds when through */
  uint8_t pending;           /* this round's transfers (both ways) not done yet */
  uint8_t started;           /* bit per tag: this round's send has started */
  uint8_t flags;             /* COLL_AT_END, COLL_PARKED */
  uint8_t stage;             /* torus: the lane's current stage (index into its stages) */
} coll_rank;

enum {
  COLL_AT_END = 1,           /* this round has COLL_REDUCE_AT_END receives */
  COLL_PARKED = 2,           /* a torus lane waiting at its next stage's first round for its
                                rank's other lanes (collective.c); its round is not entered */
};

struct sim_collective {
  sim_engine *engine;        /* owner */
  char *name;                /* for diagnostics */
  int p;                     /* ranks */
  sim_route_fn route;        /* rank -> rank links */
  void *route_ctx;           /* its context */
  void *owned_ctx;           /* a sub-group's route context (collective_group.c), freed with
                                the group; NULL for the others */
  sim_link **hops;           /* scratch for one route, grown to the longest seen */
  size_t cap_hops;           /* its allocated entries */
  sim_cpu **cpus;            /* per-rank reduction cpus, NULL when reductions are free */
  coll_rank *ranks;          /* per virtual rank state, p * cap_lanes entries */
  sim_activity **reduces;    /* with cpus: per virtual rank, COLL_MAX_XFERS reductions being
                                charged on its cpu, by recv index; NULL without cpus */
  int cap_lanes;             /* lanes ranks (and reduces) have room for */
  sim_actor **actors;        /* per rank: the blocked caller, NULL when started engine-side */
  float **bufs;              /* per rank: its buffer, NULL when running on shapes alone */
  int ndims;                 /* torus axes, 0 until sim_collective_set_torus */
  int dims[COLL_MAX_DIMS];   /* torus axis lengths, axis 0 fastest in the rank number */
  int wraps[COLL_MAX_DIMS];  /* per axis: 1 if it wraps around */
  double alpha[COLL_MAX_DIMS]; /* torus run: seconds of latency from rank 0 to its + neighbour */
  double beta[COLL_MAX_DIMS]; /* ... and that route's bandwidth, bytes/s (both for the choice of
                                lanes, collective_plan.c) */
  /* The collective under way (or being gathered by blocking callers). */
  sim_coll_op op;            /* what it does */
  sim_algo algo;             /* how */
  int root;                  /* broadcast source */
  size_t count;              /* floats per buffer */
  int nchunks;               /* the split of the buffer the plans name chunks of */
  size_t chunk_base;         /* count / nchunks: every chunk has at least this many floats */
  size_t chunk_extra;        /* count % nchunks: the first chunk_extra have one more */
  int rounds;                /* rounds of the algorithm, the same for every lane */
  int lanes;                 /* lanes of the run: 1, or on a torus the axes longer than 1 when
                                that is faster (collective_plan.c) */
  coll_stage stages[COLL_MAX_DIMS][2 * COLL_MAX_DIMS]; /* torus, per lane: reduce-scatter
                                stages, then all-gather ones in reverse, worked out once per run */
  int nstages;               /* entries per lane in stages */
  int arrived;               /* blocking callers present */
  int finished;              /* ranks through the last round */
  int running;               /* all arrived or started engine-side, rounds in progress */
  float *originals;          /* all_to_all with numerics: each rank's buffer at the start */
  size_t cap_originals;      /* its allocated floats */
  sim_collective_done_fn done; /* engine-side completion callback, or NULL */
  void *done_arg;            /* its argument */
  sim_time started;          /* when the collective began */
  sim_time entered;          /* when its ranks enter round 0: started + start_delay + round_delay
                                (the closed form's origin) */
  sim_time fixed_cost;       /* every collective's own cost on this group, whatever its size
                                (sim_collective_set_fixed_cost): part of start_delay */
  sim_time last_duration;    /* of the last completed collective */
  /* SIM_ALGO_NCCL (sim/nccl.h); the other algorithms leave wire 1 and both delays 0. */
  sim_nccl_system nccl_system; /* the machine NCCL's model sees (sim_collective_set_nccl) */
  int has_nccl_system;       /* 0: begin() measures one node off the route 0 -> 1 */
  sim_nccl_choice nccl;      /* the run's choice of algorithm and protocol */
  int pipelined;             /* the run is NCCL's pipelined double tree (else a ring plan) */
  double wire;               /* bytes on the wire per byte of data (the protocol's share) */
  sim_time start_delay;      /* waited before round 0 (besides round_delay) */
  sim_time round_delay;      /* waited by each rank before each round it enters */
  sim_event_handle *waits;   /* per virtual rank: its pending round delay (cancelled by reset);
                                allocated on the first run with round delays */
  sim_event_handle start_wait; /* the pending start delay */
  /* A run in closed form (collective.c, "Closed form"). */
  sim_activity *hold;        /* holds every link the run uses while it is in closed form, NULL
                                when the run goes transfer by transfer */
  sim_event_handle fast_done; /* the closed-form run's finish event */
  struct sim_resource **held; /* the links and rank cpus it holds, in its plan's order */
  double *held_done;         /* per held resource: its bytes (a cpu: flops) once the run (or its
                                part before now) is done */
  sim_time *held_until;      /* pass scratch per held resource: when its last transfer (a cpu:
                                reduction) ends */
  size_t n_held, cap_held;   /* held resources, allocated entries of the three arrays */
  uint32_t plan_pass;        /* the engine's slot_pass stamp of the run's planning pass: the
                                res_slot entries with it give the held resources' slots */
  int uniform_off;           /* 1: plans skip fast_plan_uniform and the ring rounds (tests
                                compare them with the general pass) */
  int planned_uniform;       /* the run's plan came from fast_plan_uniform (tests look) */
  sim_time *fast_at;         /* pass scratch: per virtual rank its round's entry, then the next's */
  struct coll_route *fast_routes; /* pass scratch: per (virtual rank, tag) its last route */
  struct coll_sent *fast_sent; /* pass scratch with cpus: per (virtual rank, tag) its send of the
                                round: when it ends, its floats */
  struct coll_recv *fast_recv; /* pass scratch with cpus: per virtual rank, its receives of the
                                round that charge its cpu (COLL_MAX_XFERS entries each) */
  uint8_t *fast_nrecv;       /* pass scratch with cpus: per virtual rank, its entries in fast_recv */
  size_t *stage_floats;      /* uniform torus plan scratch: 2 x p floats (sim__coll_stage_sends) */
  size_t cap_stage_floats;   /* ranks it has room for */
  long *fast_cpu_slot;       /* pass scratch with cpus: per rank its cpu's slot in held, -1 before
                                its first reduction */
  size_t cap_fast;           /* virtual ranks the pass scratch arrays have room for */
  /* A planning pass's ring rounds (collective.c, fast_ring_round). */
  struct coll_link *ring_links; /* per (axis, direction, rank): its link to the next rank of the
                                axis that way (direction 0 +1, 1 -1) */
  size_t cap_ring_links;     /* its allocated entries */
  size_t *ring_parts;        /* per lane, 2 x p: every rank's own part, each half (the lane's
                                stage ring_stage[lane]: sim__coll_stage_parts) */
  size_t cap_ring_parts;     /* its allocated entries */
  int ring_stage[COLL_MAX_DIMS]; /* per lane: the stage its ring_parts are of, -1 none yet */
  int ring_rounds;           /* rounds the last planning pass took from tables (tests look) */
};

/* Segment sizes (collective.c moves them, collective_plan.c sums a stage's). */
/* Floats of the segment's share of one chunk of len floats. */
static inline size_t coll_share_floats(const sim_collective *c, coll_seg s, size_t len) {
  size_t lanes = (size_t)c->lanes, share = len / lanes + (s.lane < len % lanes ? 1 : 0);
  return s.half == 0 ? share : s.half == 1 ? (share + 1) / 2 : share / 2;
}

/* Floats in a segment, without walking its chunks: they are `base` or `base`+1 long, the long
** ones a prefix of the chunk numbers, so each row's count of them is a division. */
static inline size_t coll_seg_floats(const sim_collective *c, coll_seg s) {
  size_t extra = c->chunk_extra, n = (size_t)s.n, longs = 0;
  for (int row = 0; row < s.n2; row++) {
    size_t first = (size_t)s.first + (size_t)row * (size_t)s.stride2, l = 0;
    /* One chunk per row (every ring step) needs no division: 5% of a closed-form ring. */
    if (first < extra) l = s.n == 1 ? 1 : (extra - 1 - first) / (size_t)s.stride + 1;
    longs += l < n ? l : n;
  }
  size_t all = n * (size_t)s.n2;
  return longs * coll_share_floats(c, s, c->chunk_base + 1) + (all - longs) * coll_share_floats(c, s, c->chunk_base);
}

/* collective_plan.c */
/* SIM_OK, or why `op` by `algo` cannot run on c (root and count included). */
int  sim__coll_check(const sim_collective *c, sim_coll_op op, sim_algo algo, int root,
                     size_t count);
/* The most lanes `algo` runs on c: the torus's axes longer than 1 (at least 1); NCCL's channels
** across nodes (ranks_per_node of them when the group is whole nodes, more than one), else 1. */
int  sim__coll_lanes(const sim_collective *c, sim_algo algo);
/* Fixes c->nchunks, c->lanes and c->rounds for c->op, c->algo (already checked; a torus run's
** alpha and beta set), and for SIM_ALGO_NCCL the choice, wire and delays (nccl_system set). */
void sim__coll_prepare(sim_collective *c);
/* What virtual rank v (lane v / p of rank v % p) moves in `round` of the run c is set up for. */
void sim__coll_plan(const sim_collective *c, int v, int round, coll_plan *out);
/* Torus: per rank r, the floats of lane l's send number `send` (its place in the plan's sends)
** summed over the rounds of the lane's stage s, into out[r]; scratch holds p entries. */
void sim__coll_stage_sends(const sim_collective *c, int l, int s, int send, size_t *scratch, size_t *out);
/* Torus ring stage s of lane l (an axis that wraps, longer than 2): per rank r, the floats of
** its own part's `half` (1 the first, going +1, 2 the second), into out[r]. Part j of a rank's
** ring is its member j's own part: in step k a reduce-scatter sends part x - k - 1 (half 1) and
** x + k + 1 (half 2), an all-gather x - k and x + k, x the sender's member index. */
void sim__coll_stage_parts(const sim_collective *c, int l, int s, int half, size_t *out);

/* collective.c, for collective_congruent.c: c set up for `op` by `algo` over `count` floats on
** shapes alone (root 0), as a run's begin sets it up (plan, lanes, rounds, delays), nothing
** started; only while c is idle. And the route of virtual rank v's sends to virtual rank w in
** c->hops[0..hops): its hops returned, its latency (their sum) and rate (the slowest link's). */
void   sim__coll_setup_shapes(sim_collective *c, sim_coll_op op, sim_algo algo, size_t count);
size_t sim__coll_route(sim_collective *c, int v, int w, sim_time *latency, double *rate);

/* collective_a2a.c: the torus all_to_all. */
/* Lanes and stages of the run (c->op all_to_all, c->algo torus); returns its rounds. */
int  sim__coll_a2a_prepare(sim_collective *c);
/* What virtual rank v moves in `round` of it. */
void sim__coll_a2a_plan(const sim_collective *c, int v, int round, coll_plan *pl);
/* Applies x (a COLL_COPY_ROUTED receive of virtual rank to) to to's buffer dst. */
void sim__coll_a2a_apply(const sim_collective *c, int to, const coll_xfer *x, float *dst);

#endif
