/*
** multislice.c: TPU slices joined by DCN and their hierarchical all-reduce (sim_multislice_).
**
** Invariants:
**   1. The groups are sub-groups of one group over every rank (collective_group.c): slice j's
**      ranks j * n .. j * n + n - 1 with the slice's torus, and chunk k's ranks k, n + k, ...,
**      so phases reach each device's cpu and links exactly as one group would.
**   2. Phase 2's group k works on chunk k of the buffer as the slice's torus reduce-scatter
**      cut it (count / n floats, the first count % n one more): the chunk its rank holds summed.
**      A chunk of no floats has nothing to reduce and its group does not run.
**   3. Engine-side, a phase starts when the one before is done on every slice (the slices are
**      alike, so they finish together but for contention); blocking callers move on rank by
**      rank, each as soon as its own groups are through.
**   4. A blocking all-reduce of count >= 1 floats ends on rank 0 only after every rank has
**      called it (chunk 0 is summed over every device of every slice), so its duration is taken
**      from the last call, as a collective's is from its last arrival, and no rank can call the
**      next one before rank 0 has finished this one.
*/
#include "sim/multislice.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/base.h"

struct sim_multislice {
  sim_engine *engine;        /* owner of the slices' resources */
  int slices;                /* S */
  int n;                     /* devices per slice */
  sim_tpu_slice **slice;     /* S slices */
  int *device;               /* per rank within a slice: the device at that grid position */
  sim_collective *all;       /* every rank: the parent the groups below are cut from */
  sim_collective **in_slice; /* S groups of n: ICI, the slice's torus */
  sim_collective **across;   /* n groups of S: DCN, one per chunk */
  /* The engine-side all-reduce under way. */
  int phase;                 /* 0 idle, 1 reduce-scatter, 2 across slices, 3 all-gather */
  int pending;               /* groups of the phase not done */
  float *const *bufs;        /* per rank, or NULL */
  float **chunk_bufs;        /* phase 2 scratch: per group, S pointers into bufs */
  size_t count;              /* floats per rank */
  sim_multislice_done_fn done; /* its completion */
  void *done_arg;            /* and argument */
  sim_time started;          /* when it began */
  sim_time dcn_started;      /* when phase 2 began */
  sim_time last;             /* the last one's duration */
  sim_time last_dcn;         /* its phase 2's */
  /* Blocking callers of the all-reduce under way (invariant 4). */
  int arrived;               /* ranks that have called it, reset when every one has */
  sim_time latest;           /* the latest of their calls so far */
  sim_time all_arrived;      /* the last call of the latest all-reduce every rank joined */
};

/* Chunk k of n of count floats, as the collectives cut buffers (collective.h). */
static void chunk_of(size_t count, int n, int k, size_t *off, size_t *len) {
  size_t base = count / (size_t)n, extra = count % (size_t)n, kk = (size_t)k;
  *off = kk * base + (kk < extra ? kk : extra);
  *len = base + (kk < extra ? 1 : 0);
}

size_t sim_multislice_route(void *multislice, int from, int to, sim_link **out, size_t max) {
  const sim_multislice *m = multislice;
  int sf = from / m->n, st = to / m->n;
  int df = m->device[from % m->n], dt = m->device[to % m->n];
  if (sf == st) return sim_tpu_route(m->slice[sf], df, dt, out, max);
  const sim_tpu_slice *a = m->slice[sf], *b = m->slice[st];
  sim_link *hops[4] = {
    sim_tpu_chip_pcie(a, sim_tpu_device_chip(a, df), 0), sim_tpu_host_dcn(a, sim_tpu_device_host(a, df), 1),
    sim_tpu_host_dcn(b, sim_tpu_device_host(b, dt), 0), sim_tpu_chip_pcie(b, sim_tpu_device_chip(b, dt), 1)};
  for (size_t h = 0; h < 4 && h < max; h++) out[h] = hops[h];
  return 4;
}

sim_multislice *sim_multislice_new(sim_engine *e, const sim_tpu_generation *g, const int dims[3], int slices,
                                   const sim_tpu_overrides *ov) {
  assert(slices >= 1);
  sim_multislice *m = base_xcalloc(1, sizeof *m);
  m->engine = e;
  m->slices = slices;
  m->slice = base_xcalloc((size_t)slices, sizeof *m->slice);
  for (int j = 0; j < slices; j++) m->slice[j] = sim_tpu_slice_new_indexed(e, g, dims, ov, j);
  int n = m->n = sim_tpu_slice_devices(m->slice[0]), p = n * slices;
  m->device = base_xcalloc((size_t)n, sizeof *m->device);
  for (int d = 0; d < n; d++) m->device[sim_tpu_device_grid_rank(m->slice[0], d)] = d;
  sim_cpu **cpus = base_xcalloc((size_t)p, sizeof *cpus);
  for (int r = 0; r < p; r++) cpus[r] = sim_tpu_device_cpu(m->slice[r / n], m->device[r % n]);
  m->all = sim_collective_new(e, "multislice", p, sim_multislice_route, m, cpus);
  free(cpus);
  int *members = base_xcalloc((size_t)(n > slices ? n : slices), sizeof *members);
  char name[48];
  m->in_slice = base_xcalloc((size_t)slices, sizeof *m->in_slice);
  for (int j = 0; j < slices; j++) {
    for (int k = 0; k < n; k++) members[k] = j * n + k;
    snprintf(name, sizeof name, "slice%d", j);
    m->in_slice[j] = sim_collective_new_subgroup(m->all, name, n, members);
    sim_tpu_set_torus(m->in_slice[j], m->slice[j]);
  }
  m->across = base_xcalloc((size_t)n, sizeof *m->across);
  for (int k = 0; k < n; k++) {
    for (int j = 0; j < slices; j++) members[j] = j * n + k;
    snprintf(name, sizeof name, "dcn%d", k);
    m->across[k] = sim_collective_new_subgroup(m->all, name, slices, members);
  }
  free(members);
  m->chunk_bufs = base_xcalloc((size_t)n * (size_t)slices, sizeof *m->chunk_bufs);
  return m;
}

void sim_multislice_free(sim_multislice *m) {
  if (m == NULL) return;
  for (int j = 0; j < m->slices; j++) sim_collective_free(m->in_slice[j]);
  for (int k = 0; k < m->n; k++) sim_collective_free(m->across[k]);
  sim_collective_free(m->all);
  for (int j = 0; j < m->slices; j++) sim_tpu_slice_free(m->slice[j]);
  free(m->in_slice);
  free(m->across);
  free(m->slice);
  free(m->device);
  free(m->chunk_bufs);
  free(m);
}

int sim_multislice_slices(const sim_multislice *m) { return m->slices; }
int sim_multislice_ranks(const sim_multislice *m) { return m->slices * m->n; }
sim_tpu_slice *sim_multislice_slice(const sim_multislice *m, int j) {
  assert(j >= 0 && j < m->slices);
  return m->slice[j];
}
sim_collective *sim_multislice_group(const sim_multislice *m) { return m->all; }
sim_time sim_multislice_last_duration(const sim_multislice *m) { return m->last; }
sim_time sim_multislice_last_dcn_duration(const sim_multislice *m) { return m->last_dcn; }

/* ---- engine-side ---------------------------------------------------------------------------- */

static void group_done(sim_engine *e, sim_collective *c, void *arg);

/* Starts phase `phase` (1..3) on every group it has; the last group's completion moves on. */
static void start_phase(sim_multislice *m, int phase) {
  m->phase = phase;
  m->pending = 0;
  if (phase == 2) {
    m->dcn_started = sim_now(m->engine);
    for (int k = 0; k < m->n; k++) {
      size_t off, len;
      chunk_of(m->count, m->n, k, &off, &len);
      if (len == 0) continue;  /* invariant 2 */
      float **at = m->bufs ? m->chunk_bufs + (size_t)k * (size_t)m->slices : NULL;
      for (int j = 0; at && j < m->slices; j++) at[j] = m->bufs[j * m->n + k] + off;
      m->pending++;
      int rc = sim_collective_start(m->across[k], SIM_COLL_ALL_REDUCE, SIM_ALGO_RING, 0, at, len, group_done, m);
      assert(rc == SIM_OK);
      (void)rc;
    }
    if (m->pending == 0) {  /* no chunk has a float: across slices is nothing */
      m->last_dcn = 0;
      start_phase(m, 3);
    }
    return;
  }
  sim_coll_op op = phase == 1 ? SIM_COLL_REDUCE_SCATTER : SIM_COLL_ALL_GATHER;
  for (int j = 0; j < m->slices; j++) {
    m->pending++;
    int rc = sim_collective_start(m->in_slice[j], op, SIM_ALGO_TORUS, 0, m->bufs ? m->bufs + j * m->n : NULL,
                                  m->count, group_done, m);
    assert(rc == SIM_OK);
    (void)rc;
  }
}

static void group_done(sim_engine *e, sim_collective *c, void *arg) {
  (void)c;
  sim_multislice *m = arg;
  if (--m->pending > 0) return;
  if (m->phase == 2) m->last_dcn = sim_now(e) - m->dcn_started;
  if (m->phase < 3) {
    start_phase(m, m->phase + 1);
    return;
  }
  m->phase = 0;
  m->last = sim_now(e) - m->started;
  m->done(e, m, m->done_arg);
}

int sim_multislice_all_reduce_start(sim_multislice *m, float *const *bufs, size_t count,
                                    sim_multislice_done_fn done, void *arg) {
  if (m->phase != 0) return SIM_COLL_EBUSY;
  m->bufs = bufs;
  m->count = count;
  m->done = done;
  m->done_arg = arg;
  m->started = sim_now(m->engine);
  start_phase(m, 1);
  return SIM_OK;
}

/* ---- blocking ------------------------------------------------------------------------------- */

int sim_multislice_all_reduce(sim_actor *self, sim_multislice *m, int rank, float *buf, size_t count) {
  assert(rank >= 0 && rank < m->slices * m->n);
  int j = rank / m->n, k = rank % m->n;
  size_t off, len;
  chunk_of(count, m->n, k, &off, &len);
  sim_time t0 = sim_now(m->engine), dcn = 0;
  if (m->arrived == 0 || t0 > m->latest) m->latest = t0;
  if (++m->arrived == m->slices * m->n) {
    m->arrived = 0;
    m->all_arrived = m->latest;
  }
  int rc = sim_collective_run(self, m->in_slice[j], k, SIM_COLL_REDUCE_SCATTER, SIM_ALGO_TORUS, 0, buf, count);
  if (rc == SIM_OK && len > 0) {
    sim_time t1 = sim_now(m->engine);
    rc = sim_collective_run(self, m->across[k], j, SIM_COLL_ALL_REDUCE, SIM_ALGO_RING, 0, buf ? buf + off : NULL, len);
    dcn = sim_now(m->engine) - t1;
  }
  if (rc == SIM_OK)
    rc = sim_collective_run(self, m->in_slice[j], k, SIM_COLL_ALL_GATHER, SIM_ALGO_TORUS, 0, buf, count);
  if (rc == SIM_OK && rank == 0) {  /* invariant 4: from the last call to rank 0's end */
    m->last = count > 0 ? sim_now(m->engine) - m->all_arrived : 0;
    m->last_dcn = dcn;
  }
  return rc;
}
