/*
** collective_group.c: sub-groups of a collective group and the groups along one torus axis
** (sim_collective_new_subgroup, sim_collective_axis_groups), and groups whose reductions are free
** (sim_collective_free_reductions): what jax.lax collectives with
** axis_name, or XLA's replica_groups, run over.
**
** Invariants:
**   1. A sub-group's rank i moves its data over the parent's route between members[i] and
**      members[j], so a collective on it contends with everything on those links as the same
**      transfers on the parent would; nothing is tabulated but the member list.
**   2. An axis group's torus is the parent's axis alone (length and wraparound): the torus
**      algorithm on it runs one lane along the axis, and its routes between neighbours on the
**      axis are the parent's one-hop routes along it, never another axis's links.
*/
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/base.h"

#include "sim/collectiveInt.h"

/* What a sub-group routes by: the parent's route fn over parent ranks. */
typedef struct member_route {
  sim_route_fn route;        /* the parent's */
  void *ctx;                 /* its context */
  int member[];              /* parent rank of each sub-group rank */
} member_route;

static size_t route_members(void *ctx, int from, int to, sim_link **out, size_t max) {
  const member_route *mr = ctx;
  return mr->route(mr->ctx, mr->member[from], mr->member[to], out, max);
}

sim_collective *sim_collective_new_subgroup(sim_collective *parent, const char *name, int ranks,
                                            const int *members) {
  assert(ranks > 0 && ranks <= parent->p);
  member_route *mr = base_xcalloc(1, sizeof *mr + (size_t)ranks * sizeof mr->member[0]);
  mr->route = parent->route;
  mr->ctx = parent->route_ctx;
  sim_cpu **cpus = parent->cpus ? base_xcalloc((size_t)ranks, sizeof *cpus) : NULL;
  for (int i = 0; i < ranks; i++) {
    assert(members[i] >= 0 && members[i] < parent->p);
    mr->member[i] = members[i];
    if (cpus) cpus[i] = parent->cpus[members[i]];
  }
  sim_collective *c = sim_collective_new(parent->engine, name, ranks, route_members, mr, cpus);
  c->owned_ctx = mr;
  c->fixed_cost = parent->fixed_cost;
  free(cpus);
  return c;
}

void sim_collective_free_reductions(sim_collective *c) {
  assert(!c->running && c->arrived == 0);
  free(c->cpus);
  free(c->reduces);
  c->cpus = NULL;
  c->reduces = NULL;
}

int sim_collective_axis_groups(sim_collective *parent, int axis, sim_collective **out, int max) {
  assert(axis >= 0 && axis < parent->ndims);
  int m = parent->dims[axis], below = 1, n = 0;
  for (int a = 0; a < axis; a++) below *= parent->dims[a];
  int *members = base_xcalloc((size_t)m, sizeof *members);
  for (int r = 0; r < parent->p; r++) {
    if (r / below % m != 0) continue;  /* not the first rank of its line */
    if (n < max) {
      char name[96];
      snprintf(name, sizeof name, "%s/axis%d.%d", parent->name, axis, n);
      for (int i = 0; i < m; i++) members[i] = r + i * below;
      out[n] = sim_collective_new_subgroup(parent, name, m, members);
      sim_collective_set_torus(out[n], 1, &m, &parent->wraps[axis]);
    }
    n++;
  }
  free(members);
  return n;
}
