/*
** memory.c: what each replica of a sync run holds on its devices before the first step
** (docs/scenario-format.md, "Memory"), reserved for a run (train__reserve_memory) or probed on
** shapes alone for `podsim plan`'s batch search (train_memory_).
*/
#include <limits.h>

#include "scenarios/programs/accum.h"
#include "scenarios/programs/trainSync.h"

/* The share of the model a logical core holds without SPMD: the parameters (with their slots
** and gradients) of the layers placed on it, and the activations of those layers, weighted by
** the layers' outputs per example. SPMD (and a single core) holds every parameter on every core,
** but for the split ones' 1/cores part (spmd.c; a variable's slots have its shape, so they divide
** alike), and a 1/cores part of each activation. */
typedef struct core_share { double params, acts; } core_share;

static core_share share_of_core(const trainer *t, int core) {
  const scenario *s = t->in.s;
  if (t->cores == 1 || t->spmd)
    return (core_share){ t->nparams > 0 ? t->split.floats_per_device / (double)t->nparams : 1.0, 1.0 / t->cores };
  const md_model *m = t->replicas[0].model;
  double params = 0, all_params = 0, width = 0, all_width = 0;
  for (int l = 0; l < s->nlayers; l++) {
    md_shape out = md_model_layer_output_shape(m, l);
    double p = 0, w = (double)md_shape_size(&out);
    for (int k = 0, v = md_model_layer_first_var(m, l); k < md_model_layer_num_vars(m, l); k++)
      p += (double)md_model_var_const(m, v + k)->size;
    all_params += p;
    all_width += w;
    if (s->logical_device[l] != core) continue;
    params += p;
    width += w;
  }
  return (core_share){ all_params > 0 ? params / all_params : 0, all_width > 0 ? width / all_width : 0 };
}

/* What replica r needs on logical core c for a per-replica batch of `slice` examples:
** variables, optimizer slots, and what the compiled step holds at its peak as XLA's buffer
** liveness frees it (compile/liveness.c: each activation freed after the backward op that last
** reads it, gradients after their update, the all-reduced copies as they live; rematerialised
** layers keep their outputs alone), its gradients as share_of_core places the variables and the
** rest as it places the activations, and the runtime workspace. */
typedef struct core_need {
  double params;          /* variables */
  double slots;           /* optimizer slots */
  double grads;           /* gradients and, with several replicas, the all-reduce buffers, held at
                          ** the step's liveness peak */
  double acts;            /* activations, their gradients and intermediates held there */
  double workspace;       /* the device runtime's scratch */
  uint64_t total;         /* their sum, as allocated */
} core_need;

/* A mesh's recipe (mesh.h) sizes each device from its sharded graph (compile/liveness.c): its
** weights' and slots' shards, and the peak of what the step holds besides (gradients, gathered
** weights, activations) under the latency-hiding schedule, counted as activations. */
static core_need mesh_need(const trainer *t, int r, int slice) {
  const cg_graph *g = cg_program_graph(cg_cache_get(t->programs, slice));
  double weights = cg_graph_weight_bytes(g), persistent = cg_graph_persistent_bytes(g);
  core_need n = {weights, persistent - weights, 0, cg_graph_peak_bytes(g) - persistent,
                 ds_replica_workspace(t->strategy, r), 0};
  n.total = (uint64_t)(n.params + n.slots + n.grads + n.acts + n.workspace);
  return n;
}

/* A pipeline stage's device (pipeline.h): its layers' variables, slots and gradients, and the
** activations its schedule keeps in flight. The layout is the trainer's, remade when the batch
** size changes (a plan's search). */
static core_need pipe_need(trainer *t, int r, int slice) {
  pipe_layout *l = &t->pipe_layout;
  pipe_layout_update(l, t->in.s, t->programs, ds_replica_roofline(t->strategy, 0), slice);
  pipe_memory m = pipe_stage_memory(l, pipe_stage_of(l, r));
  core_need n = {m.weights, m.slots, m.grads, m.acts, ds_replica_workspace(t->strategy, r), 0};
  n.total = (uint64_t)(n.params + n.slots + n.grads + n.acts + n.workspace);
  return n;
}

static core_need need_on_core(trainer *t, int r, int c, int slice) {
  if (pipe_active(t->in.s)) return pipe_need(t, r, slice);
  if (mesh_active(t->in.s, t->nreplicas)) return mesh_need(t, r, slice);
  const md_optimizer *o = t->replicas[0].opt;
  double params = 4.0 * (double)t->nparams, slots = 0.0;
  for (int i = 0; i < md_optimizer_num_slots(o); i++) slots += 4.0 * (double)md_optimizer_slot(o, i)->size;
  core_share share = share_of_core(t, c);
  /* Gradient accumulation (accum.h) runs the step on one micro-batch at a time: its liveness
  ** peak, plus, alone on one replica, an accumulator the size of the gradients (several replicas
  ** sum into the all-reduce buffer). */
  int micro = accum_slice(t->in.s, slice);
  const cg_graph *g = cg_program_graph(cg_cache_get(t->programs, micro));
  double grads, held = cg_graph_transient_peak(g, share.params, share.acts, &grads);
  if (t->nreplicas == 1 && accum_steps(t->in.s) > 1) grads += params * share.params;
  core_need n = { params * share.params, slots * share.params, grads, held - grads,
                  ds_replica_workspace(t->strategy, r), 0 };
  /* TPUEmbedding: a chip holds its ceil(vocab / N) rows of each table and their slots of the
  ** tables' optimizer, not the model's (the compiled step holds the rows' gradients, not a
  ** table's: cg_options.sparse_tables). */
  if (t->emb && t->in.s->tpu_embedding) {
    double table = emb_table_bytes(t->emb), held = emb_held_table_bytes(t->emb);
    n.params -= table - held;
    n.slots += held * md_optimizer_slots_per_var(&t->in.s->tpu_embedding_optimizer) -
               table * md_optimizer_slots_per_var(&t->in.s->optimizer);
  }
  n.total = (uint64_t)(n.params + n.slots + n.grads + n.acts + n.workspace);
  return n;
}

cg_cache *train__programs_new(const trainer *t) {
  const scenario *s = t->in.s;
  md_model_spec spec = scenario_model_spec(s, 1);
  cg_options compiled = mesh_compile_options(s, t->nreplicas);  /* a mesh's recipe, else data parallel */
  compiled.sparse_tables = t->emb != NULL;
  return cg_cache_new(&spec, &s->optimizer, &compiled);
}

/* Gives back the first `taken` reservations of reserve_memory's order (core-major). */
void train__release_memory(trainer *t, int slice, long taken) {
  for (long k = 0; k < taken; k++) {
    int c = (int)(k / t->nreplicas), r = (int)(k % t->nreplicas);
    sim_mempool_release(ds_replica_core_memory(t->strategy, r, c), need_on_core(t, r, c, slice).total);
  }
}

/* Reserves each replica's memory on each of its logical cores for a per-replica batch of
** `slice`. Returns 0, or -1 having released what it took and, when sum is given, filled its
** error as TensorFlow's ResourceExhaustedError. */
int train__reserve_memory(trainer *t, int slice, run_summary *sum) {
  for (int c = 0; c < t->cores; c++) {
    for (int r = 0; r < t->nreplicas; r++) {
      sim_mempool *pool = ds_replica_core_memory(t->strategy, r, c);
      core_need n = need_on_core(t, r, c, slice);
      if (sim_mempool_alloc(pool, n.total) == 0) continue;
      train__release_memory(t, slice, (long)c * t->nreplicas + r);
      if (sum == NULL) return -1;
      char parts[320];
      snprintf(parts, sizeof parts,
               "variables %.0f, optimizer slots %.0f, gradients and all-reduce buffer %.0f, activations "
               "for a per-replica batch of %d %.0f, runtime workspace %.0f", n.params, n.slots, n.grads,
               slice, n.acts, n.workspace);
      sum->failed = 1;
      train_out_of_memory(&sum->error, ds_replica_core_device(t->strategy, r, c), pool, n.total, parts);
      return -1;
    }
  }
  return 0;
}

/* The probe holds what reserve_memory reads: the strategy on its own engine, and replica 0's
** model and optimizer on shapes alone (the other replicas' entries stay empty). */
struct train_memory {
  scenario s;             /* the scenario, numerics off */
  trainer t;              /* its strategy and replica 0 */
};

train_memory *train_memory_new(const scenario *s, scn_error *err) {
  train_memory *m = base_xcalloc(1, sizeof *m);
  m->s = *s;
  m->s.numerics_full = 0;
  m->s.trace = 0;
  m->t.in.s = &m->s;
  md_model_spec spec = scenario_model_spec(&m->s, 1);
  md_error me = {0};
  md_model *model = md_model_new(&spec, &me);
  if (model == NULL) {
    train_error(err, s->path, 1, 1, "model", "%s", me.msg);
    free(m);
    return NULL;
  }
  m->t.engine = sim_engine_new();
  train__build_strategy(&m->t);
  m->t.nreplicas = ds_num_replicas_in_sync(m->t.strategy);
  m->t.replicas = base_xcalloc((size_t)m->t.nreplicas, sizeof *m->t.replicas);
  m->t.replicas[0].model = model;
  m->t.replicas[0].opt = md_optimizer_new(&m->s.optimizer, model);
  m->t.nparams = md_model_num_params(model);
  train__split_plan(&m->t, model);
  train__make_embed(&m->t, model, 0);  /* numerics off: no board, so no slice count */
  m->t.programs = train__programs_new(&m->t);
  return m;
}

int train_memory_replicas(const train_memory *m) { return m->t.nreplicas; }

int train_memory_fits(train_memory *m, int batch) {
  /* A mesh's model group compiles for the examples the global batch gives it (mesh_compile_
  ** options), not for a replica's: the probe of `batch` is a run of batch x replicas, or a
  ** tensor-parallel step at every probed batch would hold the scenario's batch's activations. */
  long global = (long)batch * m->t.nreplicas;
  if (mesh_active(&m->s, m->t.nreplicas) && m->s.global_batch != global && global <= INT_MAX) {
    m->s.global_batch = (int)global;
    cg_cache_free(m->t.programs);
    m->t.programs = train__programs_new(&m->t);
  }
  if (train__reserve_memory(&m->t, batch, NULL) != 0) return 0;
  train__release_memory(&m->t, batch, (long)m->t.cores * m->t.nreplicas);
  return 1;
}

double train_memory_checkpoint_bytes(const train_memory *m) {
  const md_optimizer *o = m->t.replicas[0].opt;
  double floats = (double)m->t.nparams;
  for (int i = 0; i < md_optimizer_num_slots(o); i++) floats += (double)md_optimizer_slot(o, i)->size;
  return 4.0 * floats;
}

void train_memory_free(train_memory *m) {
  if (m == NULL) return;
  train__free(&m->t);
  free(m);
}
