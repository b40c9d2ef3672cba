/*
** collective.h: collectives on a group of ranks that move real float32 buffers over simulated
** links. The reduction happens in the algorithm's order as the chunks arrive, so the result's
** bits depend on the algorithm, as on hardware; the timing is the sum of the link transfers.
*/
#ifndef PODSIM_COLLECTIVE_H
#define PODSIM_COLLECTIVE_H

#include "sim/sim.h"

typedef enum {
  SIM_ALGO_RING = 0,          /* reduce-scatter then all-gather around the rank ring */
} sim_algo;

const char *sim_algo_name(sim_algo a);

/* Fills out[0..max) with the links from rank `from` to rank `to`; returns the hop count. */
typedef size_t (*sim_route_fn)(void *ctx, int from, int to, sim_link **out, size_t max);

typedef struct sim_collective sim_collective;

/* A group of `ranks` members; rank i's buffer travels over route(i, j). Optional per-rank cpus
** charge the reduction arithmetic (one FLOP per element added); NULL makes it free. */
sim_collective *sim_collective_new(sim_engine *e, const char *name, int ranks,
                                   sim_route_fn route, void *route_ctx, sim_cpu *const *rank_cpus);
void sim_collective_free(sim_collective *c);

/* Called by each rank's actor with its own buffer of `count` floats (the same count on every
** rank). Blocks until the whole all-reduce (SUM) is done; every buffer then holds the same
** bits. Returns SIM_OK, or SIM_FAILED if the actor was killed. A killed rank's own call never
** returns (sim_actor_kill); it is the surviving ranks' calls that return SIM_FAILED.
** buf may be NULL on every rank (numerics off): the transfers are timed, nothing is computed. */
int sim_allreduce(sim_actor *self, sim_collective *c, int rank, float *buf, size_t count,
                  sim_algo algo);

/* Simulated time of the last completed collective on this group (start to end), for metrics. */
sim_time sim_collective_last_duration(const sim_collective *c);

#endif
