/*
** collective_congruent.c: whether two groups run a collective in the same time, and which links a
** set of owners claims (sim_collective_congruent, sim_claims_): the proof a run needs before it
** simulates one line of a device mesh for all of them (scenarios/programs/mesh_symmetric.c).
**
** Invariants:
**   1. A collective on shapes alone whose group charges no cpu (free reductions) is a function of
**      its set-up, its plan and the links its transfers cross: a rank enters round k+1 when its
**      round-k transfers are through, a transfer starts when both its ends are in its round, and
**      how fast it flows depends on its links' capacities and latencies and on which other
**      transfers share them (collective.c; maxmin.c when not in closed form). So two groups
**      of the same shape (ranks, torus axes and wraps, fixed cost, no cpus) whose set-up for
**      the run agrees (lanes, rounds, chunks, wire, delays), whose plans agree transfer for
**      transfer (peer, tag, segment), and whose routes map onto each other link for link (the
**      same capacity and latency hop by hop, and a link of one group always the same link of the
**      other, both ways: the sharing between transfers is the same) run it in the same time, to
**      the picosecond, whenever nothing else uses their links.
**   2. "Nothing else" is what claims prove: each link of each route is claimed for one owner (a
**      mesh line), a cpu for one replica; a resource claimed by a second owner fails the proof.
**      The caller claims what else its run moves over (host-to-device links) the same way.
**   3. Claims and the link maps are arrays by resource id (creation order), never by address:
**      the proof's verdict is the same on every run.
*/
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

#include "sim/collectiveInt.h"
#include "sim/simInt.h"

struct sim_claims {
  uint32_t *owner;        /* per resource id: its owner + 1, 0 while unclaimed */
  uint64_t *a_of_b;       /* per resource id of group b: (pass << 32) | a's link id, this pass */
  uint64_t *b_of_a;       /* per resource id of group a: (pass << 32) | b's link id, this pass */
  size_t cap;             /* entries of the three */
  uint32_t pass;          /* sim_collective_congruent calls so far: the maps' stamp */
};

sim_claims *sim_claims_new(void) { return base_xcalloc(1, sizeof(sim_claims)); }

void sim_claims_free(sim_claims *c) {
  if (c == NULL) return;
  free(c->owner);
  free(c->a_of_b);
  free(c->b_of_a);
  free(c);
}

/* Room for resource id `id`, new entries zero (unclaimed, unmapped). */
static void claims_reserve(sim_claims *c, size_t id) {
  if (id < c->cap) return;
  size_t cap = c->cap ? c->cap : 256;
  while (cap <= id) cap *= 2;
  c->owner = base_xrealloc(c->owner, cap * sizeof *c->owner);
  c->a_of_b = base_xrealloc(c->a_of_b, cap * sizeof *c->a_of_b);
  c->b_of_a = base_xrealloc(c->b_of_a, cap * sizeof *c->b_of_a);
  memset(c->owner + c->cap, 0, (cap - c->cap) * sizeof *c->owner);
  memset(c->a_of_b + c->cap, 0, (cap - c->cap) * sizeof *c->a_of_b);
  memset(c->b_of_a + c->cap, 0, (cap - c->cap) * sizeof *c->b_of_a);
  c->cap = cap;
}

static int claim(sim_claims *c, const sim_resource *r, int owner) {
  claims_reserve(c, r->id);
  if (c->owner[r->id] == 0) c->owner[r->id] = (uint32_t)owner + 1;
  return c->owner[r->id] == (uint32_t)owner + 1 ? 0 : -1;
}

int sim_claims_cpu(sim_claims *c, const sim_cpu *cpu, int owner) { return claim(c, &cpu->res, owner); }

int sim_claims_link(sim_claims *c, const sim_link *link, int owner) { return claim(c, &link->res, owner); }

double sim_cpu_rate(const sim_cpu *cpu) { return cpu->res.capacity; }

/* Whether `map` sends `from` to `to` this pass (mapping it there when it was unmapped). */
static int maps_to(uint64_t *map, uint32_t pass, uint32_t from, uint32_t to) {
  uint64_t want = (uint64_t)pass << 32 | to;
  if ((uint32_t)(map[from] >> 32) != pass) map[from] = want;
  return map[from] == want;
}

/* The routes of virtual rank v to w on a and b, hop for hop the same capacity and latency, their
** links mapped one to one (invariant 1), b's claimed for owner. */
static int routes_agree(sim_collective *a, sim_collective *b, int v, int w, sim_claims *cl, int owner) {
  sim_time la, lb;
  double ra, rb;
  size_t ha = sim__coll_route(a, v, w, &la, &ra);
  sim_link **hops_a = base_xcalloc(ha + 1, sizeof *hops_a);
  memcpy(hops_a, a->hops, ha * sizeof *hops_a);  /* b's lookup may reuse a's scratch (a == b) */
  size_t hb = sim__coll_route(b, v, w, &lb, &rb);
  int ok = ha == hb;
  for (size_t h = 0; ok && h < hb; h++) {
    const sim_link *x = hops_a[h], *y = b->hops[h];
    claims_reserve(cl, x->res.id > y->res.id ? x->res.id : y->res.id);
    ok = sim_link_bandwidth(x) == sim_link_bandwidth(y) && x->latency == y->latency &&
         maps_to(cl->a_of_b, cl->pass, y->res.id, x->res.id) && maps_to(cl->b_of_a, cl->pass, x->res.id, y->res.id) &&
         claim(cl, &y->res, owner) == 0;
  }
  free(hops_a);
  return ok;
}

static int same_xfer(const coll_xfer *x, const coll_xfer *y) {
  return x->peer == y->peer && x->tag == y->tag && x->mode == y->mode && x->seg.first == y->seg.first &&
         x->seg.stride == y->seg.stride && x->seg.n == y->seg.n && x->seg.stride2 == y->seg.stride2 &&
         x->seg.n2 == y->seg.n2 && x->seg.lane == y->seg.lane && x->seg.half == y->seg.half;
}

/* Set-ups that agree (invariant 1): the shape, then what begin() fixes for the run. */
static int same_setup(sim_collective *a, sim_collective *b, sim_coll_op op, sim_algo algo, size_t count) {
  if (a->p != b->p || a->ndims != b->ndims || a->cpus != NULL || b->cpus != NULL || a->fixed_cost != b->fixed_cost ||
      algo == SIM_ALGO_NCCL)  /* NCCL's channels and protocols: not compared, so not proven */
    return 0;
  for (int d = 0; d < a->ndims; d++)
    if (a->dims[d] != b->dims[d] || a->wraps[d] != b->wraps[d]) return 0;
  if (sim__coll_check(a, op, algo, 0, count) != SIM_OK || sim__coll_check(b, op, algo, 0, count) != SIM_OK ||
      a->running || a->arrived > 0 || b->running || b->arrived > 0)
    return 0;
  sim__coll_setup_shapes(a, op, algo, count);
  sim__coll_setup_shapes(b, op, algo, count);
  return a->lanes == b->lanes && a->rounds == b->rounds && a->nchunks == b->nchunks && a->wire == b->wire &&
         a->start_delay == b->start_delay && a->round_delay == b->round_delay;
}

int sim_collective_congruent(sim_collective *a, sim_collective *b, sim_coll_op op, sim_algo algo, size_t count,
                             sim_claims *claims, int owner) {
  if (!same_setup(a, b, op, algo, count)) return 0;
  claims->pass++;
  int nv = a->p * a->lanes, ok = 1;
  /* per (virtual rank, tag): the peer whose route was last compared (rings keep theirs) */
  int *peer = base_xcalloc((size_t)nv * COLL_MAX_XFERS, sizeof *peer);
  for (int i = 0; i < nv * COLL_MAX_XFERS; i++) peer[i] = -1;
  coll_plan pa, pb;
  for (int k = 0; k < a->rounds && ok; k++)
    for (int v = 0; v < nv && ok; v++) {
      sim__coll_plan(a, v, k, &pa);
      sim__coll_plan(b, v, k, &pb);
      ok = pa.nsend == pb.nsend && pa.nrecv == pb.nrecv;
      for (int i = 0; i < pa.nrecv && ok; i++) ok = same_xfer(&pa.recv[i], &pb.recv[i]);
      for (int i = 0; i < pa.nsend && ok; i++) {
        const coll_xfer *x = &pa.send[i];
        ok = same_xfer(x, &pb.send[i]);
        int *last = &peer[(size_t)v * COLL_MAX_XFERS + (size_t)x->tag];
        if (!ok || *last == x->peer) continue;
        ok = routes_agree(a, b, v, x->peer, claims, owner);
        *last = x->peer;
      }
    }
  free(peer);
  return ok;
}
