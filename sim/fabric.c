/*
** fabric.c: star and ring networks of hosts (sim_fabric_). The fabric only names and routes
** links; the links themselves belong to the engine like every resource.
*/
#include "sim/fabric.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

struct sim_fabric {
  sim_fabric_kind kind;      /* star or ring */
  int hosts;                 /* host count */
  sim_link **links;          /* 2 per host: star [up_i, down_i], ring [cw_i, ccw_i] */
};

static sim_link *new_link(sim_engine *e, const char *prefix, int host, const char *dir,
                          double bw, sim_time latency) {
  char name[256];
  snprintf(name, sizeof name, "%s%d.%s", prefix, host, dir);
  return sim_link_new(e, name, bw, latency);
}

sim_fabric *sim_fabric_new(sim_engine *e, sim_fabric_kind kind, int hosts, const char *prefix,
                           double link_bw, const double *nic_bw, sim_time latency) {
  assert(hosts > 0 && (kind == SIM_FABRIC_STAR || kind == SIM_FABRIC_RING));
  sim_fabric *f = calloc(1, sizeof *f);
  if (f == NULL) return NULL;
  f->kind = kind;
  f->hosts = hosts;
  f->links = calloc(2 * (size_t)hosts, sizeof *f->links);
  if (f->links == NULL) {
    free(f);
    return NULL;
  }
  if (prefix == NULL) prefix = "";
  const char *dir[2] = {kind == SIM_FABRIC_STAR ? "up" : "cw",
                        kind == SIM_FABRIC_STAR ? "down" : "ccw"};
  for (int i = 0; i < hosts; i++) {
    double bw = nic_bw != NULL && nic_bw[i] < link_bw ? nic_bw[i] : link_bw;
    for (int d = 0; d < 2; d++)
      f->links[2 * i + d] = new_link(e, prefix, i, dir[d], bw, latency);
  }
  return f;
}

void sim_fabric_free(sim_fabric *f) {
  if (f == NULL) return;
  free(f->links);
  free(f);
}

int sim_fabric_hosts(const sim_fabric *f) { return f->hosts; }

size_t sim_fabric_links(const sim_fabric *f, sim_link **out, size_t max) {
  size_t n = 2 * (size_t)f->hosts;
  for (size_t i = 0; i < n && i < max; i++) out[i] = f->links[i];
  return n;
}

/* Writes the route into out[0..max) and returns its full length, like snprintf. */
size_t sim_fabric_route(void *fabric, int from, int to, sim_link **out, size_t max) {
  const sim_fabric *f = fabric;
  int n = f->hosts;
  assert(from >= 0 && from < n && to >= 0 && to < n);
  if (from == to) return 0;
  if (f->kind == SIM_FABRIC_STAR) {
    sim_link *route[2] = {f->links[2 * from], f->links[2 * to + 1]};
    for (size_t i = 0; i < 2 && i < max; i++) out[i] = route[i];
    return 2;
  }
  int cw = ((to - from) % n + n) % n;
  int clockwise = cw <= n - cw;
  size_t hops = (size_t)(clockwise ? cw : n - cw);
  for (size_t h = 0; h < hops && h < max; h++) {
    int at = clockwise ? (from + (int)h) % n : ((from - (int)h) % n + n) % n;
    out[h] = f->links[2 * at + (clockwise ? 0 : 1)];
  }
  return hops;
}
