/*
** ps_ff.c: the period finder of a parameter-server fast-forward (psff_).
**
** A parameter-server run is periodic over several closures, not one: its workers interleave, so
** the state after one closure is rarely the state after the one before, shifted. The finder keeps
** a ring of the last snapshots (one at each applied closure's first quiet point) and compares the
** newest with each earlier one, nearest first: the first that sim_snapshot_periods proves equal
** up to its shift, with a skip the program's bound allows, is the period. Nothing is assumed
** about its length but that it fits the ring.
*/
#include "scenarios/programs/ps_ff.h"

#include <stdlib.h>

#include "base/base.h"

struct psff {
  int depth;               /* snapshots kept */
  int ncounters;           /* counters per snapshot */
  sim_snapshot **snaps;    /* the ring, depth of them */
  int64_t *counters;       /* depth rows of ncounters, the ring's */
  int64_t *delta;          /* the found period's counter moves */
  int newest;              /* index of the newest in the ring */
  int count;               /* snapshots held (at most depth) */
};

psff *psff_new(int depth, int ncounters) {
  psff *f = base_xcalloc(1, sizeof *f);
  f->depth = depth;
  f->ncounters = ncounters;
  f->snaps = base_xcalloc((size_t)depth, sizeof *f->snaps);
  for (int i = 0; i < depth; i++) f->snaps[i] = sim_snapshot_new();
  f->counters = base_xcalloc((size_t)depth * (size_t)ncounters, sizeof *f->counters);
  f->delta = base_xcalloc((size_t)ncounters, sizeof *f->delta);
  f->newest = depth - 1;
  return f;
}

void psff_free(psff *f) {
  if (f == NULL) return;
  for (int i = 0; i < f->depth; i++) sim_snapshot_free(f->snaps[i]);
  free(f->snaps);
  free(f->counters);
  free(f->delta);
  free(f);
}

void psff_reset(psff *f) { f->count = 0; }

sim_snapshot *psff_push(psff *f, int64_t **counters) {
  f->newest = (f->newest + 1) % f->depth;
  if (f->count < f->depth) f->count++;
  *counters = f->counters + (size_t)f->newest * (size_t)f->ncounters;
  return f->snaps[f->newest];
}

const sim_snapshot *psff_newest(const psff *f) { return f->snaps[f->newest]; }

long psff_find(psff *f, psff_bound_fn bound, void *ctx, const sim_snapshot **a, const int64_t **delta) {
  const int64_t *cb = f->counters + (size_t)f->newest * (size_t)f->ncounters;
  for (int back = 1; back < f->count; back++) {
    int i = (f->newest - back + f->depth) % f->depth;
    const int64_t *ca = f->counters + (size_t)i * (size_t)f->ncounters;
    for (int c = 0; c < f->ncounters; c++) f->delta[c] = cb[c] - ca[c];
    long k = bound(ctx, f->delta);
    if (k > 0) k = sim_snapshot_periods(f->snaps[i], f->snaps[f->newest], k);
    if (k <= 0) continue;
    *a = f->snaps[i];
    *delta = f->delta;
    return k;
  }
  return 0;
}
