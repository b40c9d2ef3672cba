/*
** overlap.c: the gradient all-reduce in packs overlapped with the backward pass (overlap.h).
**
** State of a step: ready[j] counts the replicas whose backward has produced pack j; `next` is the
** pack to start (packs start in order, one at a time: TF 2 orders the launches of a group's
** collectives); `running` while its all-reduce runs. The last pack's end sums the values, resets
** the counts for the next step and wakes the replicas (a replica cannot be ready for a pack of
** the next step before that, since it waits for this one).
*/
#include "scenarios/programs/overlap.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "sim/cond.h"

struct ovl_run {
  sim_engine *engine;     /* the clock and the trace */
  ds_strategy *strategy;  /* the replicas' group */
  ovl_pack *packs;        /* reduce order */
  int npacks;             /* their count */
  int nreplicas;          /* replicas in sync */
  float **bufs;           /* per replica its flat gradient buffer, NULL with numerics off */
  size_t nparams;         /* floats in each */
  int *tracks;            /* per replica its trace track, NULL untraced */
  int *ready;             /* per pack: replicas that produced it this step */
  long *waited;           /* per replica: steps it has waited for (this one included) */
  int next;               /* the pack to start next */
  int running;            /* pack `next` is being all-reduced */
  sim_time *span;         /* per pack: [2j] its start, [2j + 1] its end, this step's (then, once
                          ** all are through, the last completed step's) */
  long completed;         /* steps whose packs are all reduced */
  sim_cond *cv;           /* replicas waiting for their step's last pack */
};

/* Whether a gradient of `bytes` starts a new pack after an open one of `open` bytes. */
static int starts_pack(ovl_rule rule, double limit, double open, double bytes) {
  if (rule == OVL_GROUP_BY_SIZE) return limit > 0 && open > limit;  /* it already passed */
  return open + bytes > limit;                                      /* it would pass */
}

int ovl_group(const size_t *floats, int nvars, double bytes, ovl_rule rule, ovl_pack *out) {
  int n = 0;
  double last_bytes = 0;
  for (int v = nvars - 1; v >= 0; v--) {
    if (n == 0 || starts_pack(rule, bytes, last_bytes, 4.0 * (double)floats[v])) {
      out[n++] = (ovl_pack){ .last_var = v };
      last_bytes = 0;
    }
    out[n - 1].first_var = v;
    last_bytes += 4.0 * (double)floats[v];
  }
  size_t off = 0;  /* the packs' ranges, from the buffer's end */
  for (int v = 0; v < nvars; v++) off += floats[v];
  for (int j = 0; j < n; j++) {
    size_t count = 0;
    for (int v = out[j].first_var; v <= out[j].last_var; v++) count += floats[v];
    off -= count;
    out[j].off = off;
    out[j].count = count;
  }
  return n;
}

ovl_run *ovl_new(sim_engine *e, ds_strategy *s, const ovl_pack *packs, int npacks, int nreplicas,
                 float *const *bufs, size_t nparams, const int *tracks) {
  ovl_run *o = base_xcalloc(1, sizeof *o);
  o->engine = e;
  o->strategy = s;
  o->npacks = npacks;
  o->packs = base_xcalloc((size_t)npacks, sizeof *o->packs);
  memcpy(o->packs, packs, (size_t)npacks * sizeof *packs);
  o->nreplicas = nreplicas;
  o->nparams = nparams;
  if (bufs != NULL) {
    o->bufs = base_xcalloc((size_t)nreplicas, sizeof *o->bufs);
    memcpy(o->bufs, bufs, (size_t)nreplicas * sizeof *bufs);
  }
  if (tracks != NULL) {
    o->tracks = base_xcalloc((size_t)nreplicas, sizeof *o->tracks);
    memcpy(o->tracks, tracks, (size_t)nreplicas * sizeof *tracks);
  }
  o->ready = base_xcalloc((size_t)npacks, sizeof *o->ready);
  o->span = base_xcalloc(2 * (size_t)npacks, sizeof *o->span);
  o->waited = base_xcalloc((size_t)nreplicas, sizeof *o->waited);
  o->cv = sim_cond_new();
  return o;
}

void ovl_free(ovl_run *o) {
  if (o == NULL) return;
  sim_cond_free(o->cv);
  free(o->packs);
  free(o->bufs);
  free(o->tracks);
  free(o->ready);
  free(o->span);
  free(o->waited);
  free(o);
}

static void try_start(ovl_run *o);

/* A pack's all-reduce is through: its span on every replica's track, then the next pack, or
** after the last the values and the waiting replicas. */
static void pack_done(sim_engine *e, sim_collective *c, void *arg) {
  (void)c;
  ovl_run *o = arg;
  sim_time now = sim_now(e);
  if (o->tracks != NULL) {
    char name[48];
    snprintf(name, sizeof name, "all-reduce pack %d/%d", o->next + 1, o->npacks);
    for (int r = 0; r < o->nreplicas; r++) sim_trace_span(e, o->tracks[r], name, "all_reduce", o->span[2 * o->next], now);
  }
  o->span[2 * o->next + 1] = now;
  o->running = 0;
  if (++o->next < o->npacks) {
    try_start(o);
    return;
  }
  if (o->bufs != NULL) {
    int rc = ds_all_reduce_values(o->strategy, o->bufs, o->nparams);
    assert(rc == SIM_OK);  /* the group is idle and the packs ran the same op and algorithm */
    (void)rc;
  }
  o->next = 0;
  memset(o->ready, 0, (size_t)o->npacks * sizeof *o->ready);
  o->completed++;
  sim_cond_notify_all(o->cv);
}

/* Starts pack `next` when the group is free and every replica has produced it. */
static void try_start(ovl_run *o) {
  if (o->running || o->next == o->npacks || o->ready[o->next] < o->nreplicas) return;
  o->running = 1;
  o->span[2 * o->next] = sim_now(o->engine);
  int rc = ds_all_reduce_pack(o->strategy, o->packs[o->next].count, pack_done, o);
  assert(rc == SIM_OK);  /* every replica is past its step's other collectives */
  (void)rc;
}

void ovl_ready(ovl_run *o, int pack) {
  assert(pack >= 0 && pack < o->npacks && o->ready[pack] < o->nreplicas);
  o->ready[pack]++;
  try_start(o);
}

int ovl_wait(ovl_run *o, sim_actor *self, int replica) {
  long step = ++o->waited[replica];
  while (o->completed < step) sim_cond_wait(self, o->cv);
  return SIM_OK;
}

void ovl_snapshot(const ovl_run *o, sim_snapshot *snap) {
  sim_snapshot_word(snap, (uint64_t)o->next);
  sim_snapshot_word(snap, (uint64_t)o->running);
  for (int j = 0; j < o->npacks; j++) sim_snapshot_word(snap, (uint64_t)o->ready[j]);
  for (int r = 0; r < o->nreplicas; r++) sim_snapshot_word(snap, (uint64_t)(o->waited[r] - o->completed));
}

sim_time ovl_hidden(const ovl_run *o, sim_time until) {
  sim_time hidden = 0;
  for (int j = 0; j < o->npacks; j++) {
    sim_time end = o->span[2 * j + 1] < until ? o->span[2 * j + 1] : until;
    if (end > o->span[2 * j]) hidden += end - o->span[2 * j];
  }
  return hidden;
}
