/*
** collectiveInt.h: the collective engine's structs, shared by collective.c (the executor: rounds,
** rendezvous, transfers, numerics) and collective_plan.c (what each algorithm moves per round).
** Nothing outside sim/collective*.c includes it.
**
** An algorithm is a sequence of rounds. In round k a rank sends and receives a few segments
** (coll_plan); it enters round k+1 once all of them are done, and a transfer starts once both
** its ends are in its round. Plans are computed from (rank, round) when needed, never stored,
** so a group costs a few dozen bytes per rank whatever the algorithm.
*/
#ifndef PODSIM_COLLECTIVEINT_H
#define PODSIM_COLLECTIVEINT_H

#include <stdint.h>

#include "sim/collective.h"

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
} coll_mode;

/* Floats of the run's chunk split: chunks first, first + stride, ... (n of them), each whole or
** one half of it (a chunk of len floats splits (len+1)/2 then len/2). */
typedef struct coll_seg {
  int first;                 /* first chunk */
  int stride;                /* distance between chunks */
  int n;                     /* chunks */
  int half;                  /* 0 whole, 1 first half, 2 second half */
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

/* A stage of a torus run: m - 1 rounds of one ring or line along an axis of length m > 1. */
typedef struct coll_stage {
  int first;                 /* its first round */
  int axis;                  /* the axis */
  int reduce;                /* 1 reduce-scatter, 0 all-gather */
  int below;                 /* product of the lengths of axes 0..axis-1 */
  int chunks;                /* chunks per part: p / (below * m) */
} coll_stage;

/* One rank's progress through the current collective. */
typedef struct coll_rank {
  sim_collective *coll;      /* owner (activity callbacks get the rank alone) */
  sim_actor *actor;          /* the blocked caller, NULL when started engine-side or not yet */
  float *buf;                /* its buffer, NULL when running on shapes alone */
  sim_activity *send[COLL_MAX_XFERS]; /* its transfers in flight, by tag */
  sim_activity *reduce[COLL_MAX_XFERS]; /* reductions being charged on its cpu, by recv index */
  int32_t to[COLL_MAX_XFERS]; /* receiver of each transfer in flight, by tag (kept after) */
  sim_link *hop[COLL_ROUTE_TAGS]; /* by tag: the route to to[tag] when it is one link, else
                                NULL; forgotten when the collective ends (collective.c) */
  int32_t round;             /* current round; -1 before the start, rounds when through */
  uint8_t pending;           /* this round's transfers (both ways) not done yet */
  uint8_t started;           /* bit per tag: this round's send has started */
  uint8_t at_end;            /* this round has COLL_REDUCE_AT_END receives */
} coll_rank;

struct sim_collective {
  sim_engine *engine;        /* owner */
  char *name;                /* for diagnostics */
  int p;                     /* ranks */
  sim_route_fn route;        /* rank -> rank links */
  void *route_ctx;           /* its context */
  sim_link **hops;           /* scratch for one route, grown to the longest seen */
  size_t cap_hops;           /* its allocated entries */
  sim_cpu **cpus;            /* per-rank reduction cpus, NULL when reductions are free */
  coll_rank *ranks;          /* per-rank state */
  int ndims;                 /* torus axes, 0 until sim_collective_set_torus */
  int dims[COLL_MAX_DIMS];   /* torus axis lengths, axis 0 fastest in the rank number */
  int wraps[COLL_MAX_DIMS];  /* per axis: 1 if it wraps around */
  /* The collective under way (or being gathered by blocking callers). */
  sim_coll_op op;            /* what it does */
  sim_algo algo;             /* how */
  int root;                  /* broadcast source */
  size_t count;              /* floats per buffer */
  int nchunks;               /* the split of the buffer the plans name chunks of */
  size_t chunk_base;         /* count / nchunks: every chunk has at least this many floats */
  size_t chunk_extra;        /* count % nchunks: the first chunk_extra have one more */
  int rounds;                /* rounds of the algorithm */
  coll_stage stages[2 * COLL_MAX_DIMS]; /* torus: reduce-scatter stages (axis 0 up), then
                                all-gather ones (axis n-1 down), worked out once per run */
  int nstages;               /* entries in stages */
  int arrived;               /* blocking callers present */
  int finished;              /* ranks through the last round */
  int running;               /* all arrived or started engine-side, rounds in progress */
  float *originals;          /* all_to_all with numerics: each rank's buffer at the start */
  size_t cap_originals;      /* its allocated floats */
  sim_collective_done_fn done; /* engine-side completion callback, or NULL */
  void *done_arg;            /* its argument */
  sim_time started;          /* when the collective began */
  sim_time last_duration;    /* of the last completed collective */
};

/* collective_plan.c */
/* SIM_OK, or why `op` by `algo` cannot run on c (root and count included). */
int  sim__coll_check(const sim_collective *c, sim_coll_op op, sim_algo algo, int root,
                     size_t count);
/* Fixes c->nchunks and c->rounds for c->op, c->algo (already checked). */
void sim__coll_prepare(sim_collective *c);
/* What `rank` moves in `round` of the run c is set up for. */
void sim__coll_plan(const sim_collective *c, int rank, int round, coll_plan *out);

#endif
