/*
** fabric.h: the network joining CPU VMs. Each host's attachment is capped by its NIC.
*/
#ifndef PODSIM_FABRIC_H
#define PODSIM_FABRIC_H

#include "sim/sim.h"

typedef enum { SIM_FABRIC_STAR = 0, SIM_FABRIC_RING } sim_fabric_kind;

typedef struct sim_fabric sim_fabric;

/* star: host i has an up link and a down link to one switch, each of bandwidth
**   min(link_bw, nic_bw[i]) and latency `latency`; route i->j = [up_i, down_j].
** ring: host i has a clockwise and a counter-clockwise link to its neighbours, bandwidth
**   min(link_bw, nic_bw[i]); routes take the shorter way round (clockwise on ties).
** Link names: "<prefix><i>.up"/"<prefix><i>.down", or "<prefix><i>.cw"/"<prefix><i>.ccw". */
sim_fabric *sim_fabric_new(sim_engine *e, sim_fabric_kind kind, int hosts, const char *prefix,
                           double link_bw, const double *nic_bw, sim_time latency);
void   sim_fabric_free(sim_fabric *f);
int    sim_fabric_hosts(const sim_fabric *f);
size_t sim_fabric_links(const sim_fabric *f, sim_link **out, size_t max);
/* A sim_route_fn (ctx = the fabric). */
size_t sim_fabric_route(void *fabric, int from, int to, sim_link **out, size_t max);

#endif
