/*
** mesh.c: a device mesh's collectives at run time (mesh.h).
**
** A line is a sub-group of the strategy's collective group: for the model axis the replicas
** d x model .. d x model + model - 1, for the data axis the replicas m, m + model, ...; on a
** mesh {data, fsdp, model} (hybrid_fsdp_sp) mesh position (d x fsdp + f) x model + m, its model
** line varying m, its fsdp line f, its data line d (one device a slice: DCN). A
** compiled program's collectives over an axis are, in program order, that axis's list; a line
** runs its list again every step, its position counting from the attempt's start (step x the
** list's length + the index in it). Each member counts how many of the line's collectives it has
** issued; the line starts its next one when every member has issued it and its last one is
** through, and notifies the waiting replicas when it ends.
**
** Invariants:
**   1. The same program structure serves every batch size (the recipes add the same collectives
**      whatever the examples), so positions agree between replicas of uneven batches; a
**      collective's bytes are those of the member that issued it last at its position. A member
**      may run ahead of a busy line by several collectives: each position keeps its own kind and
**      bytes until it starts (mesh_line's queue).
**   2. A line runs one collective at a time, in program order; the axes' lines run at once.
*/
#include "scenarios/programs/mesh.h"

#include <assert.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "scenarios/programs/accum.h"
#include "scenarios/programs/pipeline.h"
#include "scenarios/programs/trainInt.h"
#include "sim/cond.h"
#include "sim/multislice.h"
#include "sim/torus_mesh.h"

typedef struct line_entry {
  double floats;          /* its buffer, from its last issuer */
  cg_coll kind;           /* its kind */
} line_entry;

typedef struct mesh_line {
  sim_collective *group;  /* its sub-group of the strategy's group, or that group itself when the
                          ** line holds every replica (then not owned) */
  int owned;              /* 1: group is the line's own sub-group */
  sim_algo algo;          /* what it runs its collectives with */
  cg_axis axis;           /* the mesh axis it runs along */
  int n;                  /* its members */
  int *members;           /* their replicas */
  long *issued;           /* per member (by index in members): collectives issued */
  long done;              /* collectives through */
  int ready;              /* members that have issued the next one (issued > done) */
  int running;            /* 1 while one runs */
  line_entry *queue;      /* the collectives issued and not yet through, position p at
                          ** [p & (cap - 1)]: positions done .. done + cap - 1 */
  long cap;               /* queue's entries, a power of two */
  cg_coll kind;           /* the running one's kind */
  sim_time began;         /* when the running one started */
  long attempt;           /* the attempt that started the running one */
  struct mesh_run *run;   /* the run it belongs to */
} mesh_line;

struct mesh_run {
  sim_engine *engine;     /* the run's engine */
  ds_strategy *strategy;  /* the replicas and their group */
  int nreplicas;          /* the mesh's devices */
  int model;              /* along the model axis */
  int fsdp;               /* along the fsdp axis (1: a mesh of data and model) */
  mesh_line *lines;       /* the data lines (model x fsdp of them), the model lines (nreplicas /
                          ** model), then with an fsdp axis its lines (nreplicas / fsdp) */
  int nlines;             /* how many */
  int *line_of;           /* per replica and axis: [CG_AXES r + axis] its line; -1: none (no fsdp axis) */
  int *slot_of;           /* per replica and axis: its index among that line's members */
  long *issued;           /* per replica and axis: [CG_AXES r + axis] collectives it has taken a place for in its line */
  char *fresh;            /* per replica: its next step-list pass begins a step (its waits counted anew) */
  sim_time *waited;       /* per replica: time waiting for collectives this step */
  sim_cond *cv;           /* every line's ends */
  sim_barrier *end;       /* the step's end */
  float **bufs;           /* the gradients, per replica (a copy of the array), or NULL */
  size_t nparams;         /* their floats */
  int *tracks;            /* per replica: its trace track; NULL: no spans */
  long attempt;           /* attempts begun (mesh_reset): a collective an earlier one started
                          ** ends without counting */
  sim_torus_mesh place;   /* the mesh on the group's torus, when placed; with an fsdp axis,
                          ** fsdp x model on one slice's torus (its data part the fsdp axis) */
  int placed;             /* 1: the strategy's group (with an fsdp axis: each slice) is a torus
                          ** and place holds the mesh on it */
  const sim_tpu_slice *slice; /* with an fsdp axis placed: slice 0, whose collective cost each
                          ** slice's lines take (the strategy's group, over every slice, has none) */
  int solo;               /* 1: replica 0 alone runs, for every replica (mesh_solo) */
};

/* On a torus (a TPU slice's group) the mesh is placed as create_device_mesh places it
** (sim/torus_mesh.h): each line a torus of its axes' parts, its members one link apart along
** them (PaLM's 12 x 256 on 12x16x16: an x ring, a 16x16 y-z plane; 8 x 512 on 16x16x16: lines
** of 8 neighbours along x and 2x16x16 data tori), so its collectives run as XLA runs them there,
** on every axis at once both ways round. Its reductions are free: on a TPU a collective's adds
** run in its own fusion beside the compute XLA overlaps it with (docs/machine.md, "Mesh lines on
** a torus"), where charging them on the device's cpu would share it with those kernels and keep
** every overlapped reduce-scatter out of closed form. Elsewhere a line keeps no shape (a ring
** over its members' routes) and reduces on its members' cpus. */
static void line_torus(mesh_line *l, const mesh_run *m) {
  int dims[SIM_TORUS_MESH_MAX_DIMS], wraps[SIM_TORUS_MESH_MAX_DIMS];
  if (m->fsdp > 1 && l->axis == CG_AXIS_DATA) return;  /* one device a slice: over DCN, as laid */
  int n = sim_torus_mesh_line(&m->place, l->axis == CG_AXIS_MODEL, dims, wraps);
  sim_collective_set_torus(l->group, n, dims, wraps);
  sim_collective_free_reductions(l->group);
  if (m->slice != NULL) sim_tpu_set_collective_cost(l->group, m->slice);
}

static const char *const AXIS_NAMES[CG_AXES] = {"data", "model", "fsdp"};
static const char *const MESH_GROUP_NAMES[CG_AXES] = {"mesh data", "mesh model", "mesh fsdp"};

/* The line of mesh positions first, first + stride, ... (n of them); at[p]: the replica at
** position p. */
static void line_init(mesh_run *m, mesh_line *l, cg_axis axis, int first, int stride, int n, const int *at) {
  l->run = m;
  l->axis = axis;
  l->n = n;
  l->members = base_xcalloc((size_t)n, sizeof *l->members);
  l->issued = base_xcalloc((size_t)n, sizeof *l->issued);
  l->cap = 8;
  l->queue = base_xcalloc((size_t)l->cap, sizeof *l->queue);
  int *ranks = base_xcalloc((size_t)n, sizeof *ranks);
  for (int i = 0; i < n; i++) {
    int r = at[first + i * stride];
    l->members[i] = r;
    ranks[i] = ds_replica_rank(m->strategy, r);
    m->line_of[CG_AXES * r + axis] = (int)(l - m->lines);
    m->slot_of[CG_AXES * r + axis] = i;
  }
  /* a line of every replica is the strategy's group, torus shape and all (its collectives then
  ** run as the strategy's all-reduce does, in closed form where they can) */
  l->owned = n > 1 && n < m->nreplicas;
  l->group = n == m->nreplicas ? ds_collective(m->strategy)
             : l->owned ? sim_collective_new_subgroup(ds_collective(m->strategy), MESH_GROUP_NAMES[axis], n, ranks)
                        : NULL;
  if (l->owned && m->placed) line_torus(l, m);
  /* the strategy's algorithm where the line can run it (a torus needs its shape, which a
  ** sub-group has not): else a ring over the line's routes, which follow the links */
  l->algo = ds_all_reduce_algorithm(m->strategy);
  for (int op = SIM_COLL_ALL_REDUCE; op <= SIM_COLL_ALL_GATHER && l->group; op++)
    if (sim_collective_check(l->group, (sim_coll_op)op, l->algo, 0, (size_t)n * 64) != SIM_OK) l->algo = SIM_ALGO_RING;
  free(ranks);
}

/* The torus the mesh is laid on (dims, wraps; returns its axes, 0: none): the strategy's group's,
** or with an fsdp axis one slice's when the data axis is the slices (m->slice). */
static int mesh_torus(mesh_run *m, int data, int *dims, int *wraps) {
  if (m->fsdp == 1) return sim_collective_torus(ds_collective(m->strategy), dims, wraps);
  sim_multislice *ms = ds_strategy_multislice(m->strategy);
  if (ms == NULL) return data == 1 ? sim_collective_torus(ds_collective(m->strategy), dims, wraps) : 0;
  if (sim_multislice_slices(ms) != data) return 0;
  m->slice = sim_multislice_slice(ms, 0);
  return sim_tpu_slice_torus(m->slice, dims, wraps);
}

mesh_run *mesh_new(sim_engine *e, ds_strategy *s, int nreplicas, int model, float *const *bufs, size_t nparams,
                   const int *tracks) {
  return mesh_new_axes(e, s, nreplicas, 1, model, bufs, nparams, tracks);
}

mesh_run *mesh_new_axes(sim_engine *e, ds_strategy *s, int nreplicas, int fsdp, int model, float *const *bufs,
                        size_t nparams, const int *tracks) {
  assert(nreplicas >= 2 && model >= 1 && fsdp >= 1 && nreplicas % (model * fsdp) == 0);
  mesh_run *m = base_xcalloc(1, sizeof *m);
  m->engine = e;
  m->strategy = s;
  m->nreplicas = nreplicas;
  m->model = model;
  m->fsdp = fsdp;
  if (tracks != NULL) {
    m->tracks = base_xcalloc((size_t)nreplicas, sizeof *m->tracks);
    for (int r = 0; r < nreplicas; r++) m->tracks[r] = tracks[r];
  }
  if (bufs != NULL) {
    m->bufs = base_xcalloc((size_t)nreplicas, sizeof *m->bufs);
    for (int r = 0; r < nreplicas; r++) m->bufs[r] = bufs[r];
  }
  m->nparams = nparams;
  int data = nreplicas / (model * fsdp), within = fsdp * model;  /* a slice's devices, with an fsdp axis */
  m->nlines = model * fsdp + nreplicas / model + (fsdp > 1 ? nreplicas / fsdp : 0);
  m->lines = base_xcalloc((size_t)m->nlines, sizeof *m->lines);
  m->line_of = base_xcalloc(CG_AXES * (size_t)nreplicas, sizeof *m->line_of);
  m->slot_of = base_xcalloc(CG_AXES * (size_t)nreplicas, sizeof *m->slot_of);
  for (int i = 0; i < CG_AXES * nreplicas; i++) m->line_of[i] = -1;
  /* The mesh over the replicas: on a torus as create_device_mesh lays a mesh over a TPU slice
  ** (line_torus), mesh position d x model + m at the rank sim_torus_mesh_rank gives, where
  ** replica ids run host by host (2x2 blocks of chips), so a line is a line of the torus, not
  ** blocks of hosts strewn over the slice; with an fsdp axis so within each slice (its data
  ** part the fsdp axis), slice d the data index, as create_hybrid_device_mesh lays each
  ** granule; elsewhere (GPUs, several slices) in the group's rank order, which on GPUs is the
  ** replicas'. */
  int *at = base_xcalloc((size_t)nreplicas, sizeof *at), *replica = base_xcalloc((size_t)nreplicas, sizeof *replica);
  for (int r = 0; r < nreplicas; r++) replica[ds_replica_rank(s, r)] = r;
  int dims[SIM_TORUS_MESH_MAX_DIMS], wraps[SIM_TORUS_MESH_MAX_DIMS];
  int ndims = mesh_torus(m, data, dims, wraps), rows = fsdp > 1 ? fsdp : data;
  m->placed = ndims > 0 && sim_torus_mesh_place(&m->place, ndims, dims, wraps, model) == 0;
  for (int q = 0; q < nreplicas; q++) {
    int slice = fsdp > 1 ? q / within : 0, w = q - slice * rows * model;
    at[q] = replica[slice * rows * model + (m->placed ? sim_torus_mesh_rank(&m->place, w / model, w % model) : w)];
  }
  free(replica);
  for (int k = 0; k < model * fsdp; k++) line_init(m, &m->lines[k], CG_AXIS_DATA, k, within, data, at);
  for (int g = 0; g < nreplicas / model; g++)
    line_init(m, &m->lines[model * fsdp + g], CG_AXIS_MODEL, g * model, 1, model, at);
  for (int g = 0; fsdp > 1 && g < nreplicas / fsdp; g++)  /* (d, m): d x within + m, every model-th on */
    line_init(m, &m->lines[model * fsdp + nreplicas / model + g], CG_AXIS_FSDP, g / model * within + g % model,
              model, fsdp, at);
  free(at);
  m->issued = base_xcalloc(CG_AXES * (size_t)nreplicas, sizeof *m->issued);
  m->fresh = base_xcalloc((size_t)nreplicas, 1);
  memset(m->fresh, 1, (size_t)nreplicas);
  m->waited = base_xcalloc((size_t)nreplicas, sizeof *m->waited);
  m->cv = sim_cond_new();
  m->end = sim_barrier_new(e, nreplicas);
  return m;
}

void mesh_free(mesh_run *m) {
  if (m == NULL) return;
  for (int i = 0; i < m->nlines; i++) {
    if (m->lines[i].owned) sim_collective_free(m->lines[i].group);
    free(m->lines[i].members);
    free(m->lines[i].issued);
    free(m->lines[i].queue);
  }
  free(m->lines);
  free(m->line_of);
  free(m->slot_of);
  free(m->issued);
  free(m->fresh);
  free(m->waited);
  sim_cond_free(m->cv);
  sim_barrier_free(m->end);
  free(m->bufs);
  free(m->tracks);
  free(m);
}

void mesh_reset(mesh_run *m) {
  for (int i = 0; i < m->nlines; i++) {
    mesh_line *l = &m->lines[i];
    for (int k = 0; k < l->n; k++) l->issued[k] = 0;
    l->done = 0;  /* one still running ends uncounted (line_done) */
    l->ready = 0;
  }
  m->attempt++;
  memset(m->issued, 0, CG_AXES * (size_t)m->nreplicas * sizeof *m->issued);
  memset(m->fresh, 1, (size_t)m->nreplicas);
}

static const sim_coll_op OPS[] = {SIM_COLL_ALL_REDUCE, SIM_COLL_ALL_GATHER, SIM_COLL_REDUCE_SCATTER};

static void try_start(mesh_run *m, mesh_line *l);

static const char *const NAMES[] = {"all-reduce", "all-gather", "reduce-scatter"};

static void line_done(sim_engine *e, sim_collective *c, void *arg) {
  (void)c;
  mesh_line *l = arg;
  l->running = 0;
  if (l->attempt != l->run->attempt) {  /* a restarted job's lines count from zero */
    try_start(l->run, l);
    return;
  }
  if (l->run->tracks != NULL) {  /* the collective on each member's timeline, beside its kernels */
    char name[48];
    snprintf(name, sizeof name, "%s (%s axis)", NAMES[l->kind], AXIS_NAMES[l->axis]);
    for (int k = 0; k < l->n; k++) sim_trace_span(e, l->run->tracks[l->members[k]], name, "collective", l->began, sim_now(e));
  }
  l->done++;
  l->ready = 0;  /* counted once per collective, not per issue: a line of a whole pod stays linear */
  for (int k = 0; k < l->n; k++) l->ready += l->issued[k] > l->done;
  sim_cond_notify_all(l->run->cv);
  try_start(l->run, l);
}

/* The floats a line's collective of `floats` runs over: at least one. */
static size_t line_count(double floats) { return floats > 0 ? (size_t)floats : 1; }

/* Starts the line's next collective once every member has issued it. */
static void try_start(mesh_run *m, mesh_line *l) {
  if (l->running || l->ready < (m->solo ? 1 : l->n)) return;
  l->running = 1;
  l->began = sim_now(m->engine);
  l->attempt = m->attempt;
  const line_entry *next = &l->queue[l->done & (l->cap - 1)];
  l->kind = next->kind;
  size_t count = line_count(next->floats);
  int rc = sim_collective_start(l->group, OPS[l->kind], l->algo, 0, NULL, count, line_done, l);
  assert(rc == SIM_OK);  /* the line ran nothing else, and line_init checked the algorithm */
  (void)rc;
}

/* Makes room in l's queue for positions done .. done + need - 1, keeping those held. */
static void grow_queue(mesh_line *l, long need) {
  long cap = l->cap;
  while (cap < need) cap *= 2;
  line_entry *q = base_xcalloc((size_t)cap, sizeof *q);
  for (long p = l->done; p < l->done + l->cap; p++) q[p & (cap - 1)] = l->queue[p & (l->cap - 1)];
  free(l->queue);
  l->queue = q;
  l->cap = cap;
}

/* Replica r's line over `axis`, or NULL where nothing moves (one device along the axis). */
static mesh_line *line_of(mesh_run *m, int r, cg_axis axis) {
  int i = m->line_of[CG_AXES * r + axis];
  return i >= 0 && m->lines[i].group != NULL ? &m->lines[i] : NULL;
}

/* Replica r issues collective x on its line over x's axis. */
static void issue(mesh_run *m, int r, const cg_transfer *x) {
  mesh_line *l = line_of(m, r, x->axis);
  if (l == NULL) return;
  long at = l->issued[m->slot_of[CG_AXES * r + x->axis]]++;  /* its position in the line */
  if (at == l->done) l->ready++;
  if (at - l->done >= l->cap) grow_queue(l, at - l->done + 1);
  l->queue[at & (l->cap - 1)] = (line_entry){ x->bytes / 4.0, x->kind };
  try_start(m, l);
}

/* Replica r waits until its line over `axis` has run `at` + 1 collectives. */
static int await(mesh_run *m, sim_actor *self, int r, cg_axis axis, long at) {
  mesh_line *l = line_of(m, r, axis);
  if (l == NULL) return SIM_OK;
  sim_time before = sim_now(m->engine);
  while (l->done <= at)
    if (sim_cond_wait(self, m->cv) != SIM_OK) return SIM_FAILED;
  m->waited[r] += sim_now(m->engine) - before;
  return SIM_OK;
}

long mesh_issue(mesh_run *m, int r, const cg_transfer *x) {
  long at = m->issued[CG_AXES * r + x->axis]++;
  issue(m, r, x);
  return at;
}

int mesh_await(mesh_run *m, sim_actor *self, int r, int axis, long at) {
  return await(m, self, r, (cg_axis)axis, at);
}

/* Whether collective x runs in a pass: every one in a step's last (or only) pass; in an earlier
** micro-batch's pass (gradient accumulation) those that move activations or gather weights, not
** the gradients' reductions over the data (or fsdp) axis, which run once, on the accumulated
** gradients. */
static int runs(const cg_transfer *x, int apply, int reduce) {
  return x->apply == apply && (reduce || x->axis == CG_AXIS_MODEL || x->kind == CG_COLL_ALL_GATHER);
}

static int run_pass(mesh_run *m, sim_actor *self, int r, const cg_program *p, int apply, int reduce, sim_cpu *cpu,
                    mesh_work_fn work, void *ctx) {
  size_t nk, nx;
  const cg_kernel *k = apply ? cg_program_apply(p, &nk) : cg_program_step(p, &nk);
  const cg_transfer *x = cg_program_collectives(p, &nx);
  if (!apply && m->fresh[r]) m->waited[r] = 0;
  m->fresh[r] = (char)apply;
  /* each collective's position in its line: the lines run their members' collectives in the
  ** order issued, and every member of a line runs the same passes */
  long *pos = base_xcalloc(nx + 1, sizeof *pos);
  for (size_t i = 0; i < nx; i++)
    if (runs(&x[i], apply, reduce)) pos[i] = m->issued[CG_AXES * r + x[i].axis]++;
  /* per kernel place: whether something happens there, and the collectives awaited there (a
  ** list through next), so a pass is linear in its kernels and collectives */
  char *stop = base_xcalloc(nk + 1, 1);
  long *awaited = base_xcalloc(nk + 1, sizeof *awaited), *next = base_xcalloc(nx + 1, sizeof *next);
  for (size_t at = 0; at <= nk; at++) awaited[at] = -1;
  for (size_t i = nx; i-- > 0;)  /* backwards, so each place's list is in program order */
    if (runs(&x[i], apply, reduce)) {
      next[i] = awaited[x[i].need];
      awaited[x[i].need] = (long)i;
      stop[x[i].issue] = stop[x[i].need] = 1;
    }
  size_t from = 0, issued = 0;
  int rc = SIM_OK;
  /* kernels in runs between places where a collective is issued or awaited */
  for (size_t at = 0; at <= nk && rc == SIM_OK; at++) {
    if (!stop[at] && at < nk) continue;
    if (at > from && sim_exec(self, cpu, work(ctx, k, from, at)) != SIM_OK) rc = SIM_FAILED;
    from = at;
    /* issued first: one awaited at the place it is issued (an activation's all-reduce that the
    ** next kernel reads) must have started */
    for (; issued < nx && rc == SIM_OK; issued++) {
      if (!runs(&x[issued], apply, reduce)) continue;
      if (x[issued].issue > at) break;
      issue(m, r, &x[issued]);
    }
    for (long i = awaited[at]; i >= 0 && rc == SIM_OK; i = next[i]) rc = await(m, self, r, x[i].axis, pos[i]);
  }
  free(stop);
  free(awaited);
  free(next);
  free(pos);
  return rc;
}

int mesh_pass(mesh_run *m, sim_actor *self, int r, const cg_program *p, int apply, sim_cpu *cpu, mesh_work_fn work,
              void *ctx) {
  return run_pass(m, self, r, p, apply, 1, cpu, work, ctx);
}

int mesh_micro_pass(mesh_run *m, sim_actor *self, int r, const cg_program *p, sim_cpu *cpu, mesh_work_fn work,
                    void *ctx) {
  return run_pass(m, self, r, p, 0, 0, cpu, work, ctx);
}

int mesh_sync(mesh_run *m, sim_actor *self, int r) {
  if (sim_barrier_wait(self, m->end) != SIM_OK) return SIM_FAILED;
  if (r == 0 && m->bufs != NULL) {
    int rc = ds_all_reduce_values(m->strategy, m->bufs, m->nparams);
    assert(rc == SIM_OK);  /* the strategy's group runs nothing: the lines are sub-groups */
    (void)rc;
  }
  return sim_barrier_wait(self, m->end);
}

sim_time mesh_waited(const mesh_run *m, int r) { return m->waited[r]; }

/* ---- the scenario's mesh ------------------------------------------------------------------ */

int mesh_active(const scenario *s, int nreplicas) {
  const char *recipe = scenario_sharding_recipe(s);
  return recipe != NULL && strcmp(recipe, "data_parallel") != 0 && nreplicas >= 2;
}

/* keras.distribution splits the batch over the data axis alone: a model group's devices hold its
** shard of each micro-batch, however the per-replica counts round. Beside pipeline stages (a
** mesh of three axes) the step is one stage's: its mesh is the data and model axes (the stages
** apart), its batch a pipeline's microbatch. */
cg_options mesh_compile_options(const scenario *s, int nreplicas) {
  int model = scenario_model_axis(s) > 1 ? scenario_model_axis(s) : 1, stages = scenario_pipeline_stages(s);
  int replicas = model > 1 && nreplicas % stages == 0 ? nreplicas / stages : nreplicas;
  long micro = s->global_batch / (model > 1 ? accum_steps(s) * scenario_pipeline_microbatches(s) : accum_steps(s));
  cg_options o = {.replicas = replicas, .fusion = s->xla_fusion > 0, .operand_fusion = s->tpu_type[0] != '\0',
                  .gpu_backend = s->tpu_type[0] == '\0' && s->worker_machine.accel_gpu[0] != '\0',
                  .sharding = scenario_sharding_recipe(s), .model_axis = model, .fsdp_axis = scenario_fsdp_axis(s)};
  /* the devices holding different examples (a recipe's batch axes: a model group's share its data
  ** shard's, hybrid sharding's each its own) */
  long group = cg_sharding_batch_devices(&o);
  o.group_examples = model > 1 ? (int)((micro + group - 1) / group) : 0;
  return o;
}

/* ---- the layout against the cluster and the model --------------------------------------- */

/* keras.distribution's checks: the mesh holds every replica, and the layout_map entry of each
** variable (LayoutMap.__getitem__: the key equal to its path, else the one regular expression
** its path matches whole, re.fullmatch; two is a ValueError) has the variable's rank and axes
** that divide the dimensions they shard. */
int mesh_check(const scenario *s, int nreplicas, const md_model *m, scn_error *err) {
  if (!s->dist) return TR_EXIT_OK;
  long long devices = s->mesh_axes == 0 ? nreplicas : 1;
  for (int a = 0; a < s->mesh_axes; a++) devices *= s->mesh_shape[a];
  if (devices != nreplicas)
    return train_error(err, s->path, s->mesh_line, s->mesh_col, "strategy.distribution.mesh",
                       "a mesh of %lld devices on a cluster of %d replicas: DeviceMesh's shape must hold every device "
                       "the strategy runs on", devices, nreplicas);
  regex_t re[SCN_MAX_LAYOUTS];
  int compiled = 0, rc = TR_EXIT_OK;
  char key[200];
  for (; compiled < s->nlayouts; compiled++) {
    const scn_layout *l = &s->layouts[compiled];
    char anchored[160];
    base_format(anchored, sizeof anchored, "^(%s)$", l->pattern);
    if (regcomp(&re[compiled], anchored, REG_EXTENDED | REG_NOSUB) != 0) {
      base_format(key, sizeof key, "strategy.distribution.layout_map.%s", l->pattern);
      rc = train_error(err, s->path, l->line, l->col, key, "not a regular expression");
      break;
    }
  }
  for (int v = 0; v < md_model_num_vars(m) && rc == TR_EXIT_OK; v++) {
    const md_var *var = md_model_var_const(m, v);
    int hit = -1, exact = 0;
    for (int i = 0; i < s->nlayouts && !exact; i++)
      if (!strcmp(s->layouts[i].pattern, var->name)) hit = i, exact = 1;
    for (int i = 0; i < s->nlayouts && !exact && rc == TR_EXIT_OK; i++) {
      if (regexec(&re[i], var->name, 0, NULL, 0) != 0) continue;
      if (hit >= 0) {
        base_format(key, sizeof key, "strategy.distribution.layout_map.%s", s->layouts[i].pattern);
        rc = train_error(err, s->path, s->layouts[i].line, s->layouts[i].col, key, "%s matches %s too: a variable "
                         "matches at most one layout_map key", var->name, s->layouts[hit].pattern);
      }
      hit = i;
    }
    if (hit < 0 || rc != TR_EXIT_OK) continue;
    const scn_layout *l = &s->layouts[hit];
    char shape[64];
    md_var_shape_str(var, shape, sizeof shape);
    base_format(key, sizeof key, "strategy.distribution.layout_map.%s", l->pattern);
    if (l->rank != var->rank)
      rc = train_error(err, s->path, l->line, l->col, key, "a layout of %d dimensions for %s, of shape %s (%d)",
                       l->rank, var->name, shape, var->rank);
    for (int d = 0; d < l->rank && rc == TR_EXIT_OK; d++) {
      int a = l->axis[d];
      if (a >= 0 && var->shape[d] % s->mesh_shape[a] != 0)
        rc = train_error(err, s->path, l->axis_line[d], l->axis_col[d], key, "mesh axis %s (%d devices) does not "
                         "divide dimension %d of %s, of shape %s", s->mesh_names[a], s->mesh_shape[a], d, var->name,
                         shape);
    }
  }
  for (int i = 0; i < compiled; i++) regfree(&re[i]);
  return rc == TR_EXIT_OK ? pipe_check(s, m, err) : rc;
}

/* ---- one replica for every replica (mesh_symmetric.c) ---------------------------------------- */

/* The floats x's line runs it over (issue and try_start). */
static size_t line_floats(const cg_transfer *x) { return line_count(x->bytes / 4.0); }

/* Orders collectives by axis, kind and floats, so equal ones sit together. */
static int by_shape(const void *a, const void *b) {
  const cg_transfer *x = a, *y = b;
  size_t fx = line_floats(x), fy = line_floats(y);
  if (x->axis != y->axis) return (int)x->axis - (int)y->axis;
  if (x->kind != y->kind) return (int)x->kind - (int)y->kind;
  return fx < fy ? -1 : fx > fy;
}

int mesh_congruent(mesh_run *m, const cg_program *p, sim_claims *claims) {
  size_t nx;
  const cg_transfer *all = cg_program_collectives(p, &nx);
  cg_transfer *x = base_xcalloc(nx + 1, sizeof *x);
  memcpy(x, all, nx * sizeof *x);
  qsort(x, nx, sizeof *x, by_shape);
  int ok = 1;
  for (int i = 0; i < m->nlines && ok; i++) {
    const mesh_line *l = &m->lines[i], *ref = &m->lines[m->line_of[CG_AXES * 0 + l->axis]];  /* replica 0's */
    ok = l->n == ref->n && l->algo == ref->algo && (l->group == NULL) == (ref->group == NULL);
    for (size_t j = 0; j < nx && ok && l->group != NULL; j++)
      if (x[j].axis == l->axis && (j == 0 || by_shape(&x[j - 1], &x[j]) != 0))
        ok = sim_collective_congruent(ref->group, l->group, OPS[x[j].kind], l->algo, line_floats(&x[j]), claims, i);
  }
  free(x);
  return ok;
}

int mesh_lines(const mesh_run *m) { return m->nlines; }

void mesh_solo(mesh_run *m) {
  m->solo = 1;
  sim_barrier_free(m->end);
  m->end = sim_barrier_new(m->engine, 1);
}
