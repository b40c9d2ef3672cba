/*
** program.c: the pass pipeline (cg_compile), lowering a graph to the kernels sim/ executes
** (cg_program_) and the programs of a scenario by batch size (cg_cache_).
**
** Lowering walks the schedule and emits a kernel per unfused compute op and per fusion (at its
** root's place: the fusion's FLOPs and bytes less what it saved, the root's matmul shape). The
** forward, loss and backward go to the step's kernels, the optimizer's updates to the apply's;
** collectives are sim/'s (the strategy's all-reduce). Without fusion the kernels are the model's
** logged ops one for one (compile.h invariant 1).
*/
#include <assert.h>
#include <stdlib.h>

#include "base/base.h"
#include "compile/compileInt.h"

struct cg_program {
  cg_graph *graph;        /* the compiled graph the kernels come from */
  int n;                  /* the batch it was traced on */
  cg_kernel *step;        /* forward, loss and backward kernels, in order */
  size_t nstep;           /* how many */
  cg_kernel *apply;       /* the optimizer's kernels */
  size_t napply;          /* how many */
  cg_kernel *accumulate;  /* gradient accumulation's sums, after a micro-batch (accumulate.c) */
  size_t naccumulate;     /* how many */
  size_t *marks;          /* per layer (and the loss at [nlayers]): step kernels before its
                          ** backward was done */
  cg_transfer *colls;     /* the collectives, in schedule order */
  size_t ncolls;          /* how many */
};

struct cg_cache {
  md_model_spec spec;     /* the scenario's model (its arrays are the scenario's) */
  md_optimizer_spec opt;  /* its optimizer */
  cg_options options;     /* what the passes do */
  cg_program **programs;  /* compiled so far, in the order first asked for */
  size_t n;               /* how many */
};

void cg_compile(cg_graph *g, const cg_options *o) {
  cg__shard(g, o);
  if (o->gpu_backend) cg__batch_stats(g);
  g->operand_fusion = o->operand_fusion;
  g->gpu_backend = o->gpu_backend;
  if (o->fusion && o->gpu_backend) cg__gpu_row_passes(g);
  if (o->fusion) cg__fuse(g);
  cg__schedule(g);
  cg__liveness(g, o);
}

/* Collective c's `need`: the first kernel of its list reading its result; a collective reading
** it is awaited at its own issue (the stream runs them in order), a reader in the update's list
** by a step collective at the step's end. */
static void need(cg_program *p, const cg_graph *g, const size_t *kernel_of, int c) {
  cg_transfer *x = &p->colls[kernel_of[c]];
  size_t end = x->apply ? p->napply : p->nstep;
  x->need = end;
  for (int o = 0; o < g->ops[c].nout; o++) {
    const cg_tensor *t = &g->tensors[g->ops[c].out[o]];
    for (int k = 0; k < t->nconsumers; k++) {
      const cg_op *r = &g->ops[t->consumers[k]];
      int root = r->fusion >= 0 ? r->fusion : t->consumers[k];
      size_t at = !cg__is_compute(r) ? p->colls[kernel_of[t->consumers[k]]].issue
                  : (r->phase == MD_PHASE_OPTIMIZER) != x->apply ? end : kernel_of[root];
      if (at < x->need) x->need = at;
    }
  }
}

/* The layer an op belongs to: its own, or for an optimizer's update its variable's (the layer
** whose variables run from its first_var to the next layer's). */
static int layer_of(const cg_graph *g, const cg_op *op) {
  if (op->layer >= 0 || op->var < 0) return op->layer;
  for (int l = 0; l < g->nlayers; l++) {
    int end = l + 1 < g->nlayers ? g->first_var[l + 1] : g->nvars;
    if (g->first_var[l] <= op->var && op->var < end) return l;
  }
  return -1;
}

static cg_program *lower(cg_graph *g, int n) {
  cg_program *p = base_xcalloc(1, sizeof *p);
  p->graph = g;
  p->n = n;
  p->step = base_xcalloc(g->nops + 1, sizeof *p->step);
  p->apply = base_xcalloc(g->nops + 1, sizeof *p->apply);
  p->marks = base_xcalloc((size_t)g->nlayers + 1, sizeof *p->marks);
  /* kernels by root op: a fusion's members add into their root's kernel */
  size_t *kernel_of = base_xcalloc(g->nops + 1, sizeof *kernel_of);
  p->colls = base_xcalloc(g->nops - g->traced + 1, sizeof *p->colls);
  for (size_t k = 0; k < g->nops; k++) {
    int i = g->schedule[k];
    const cg_op *op = &g->ops[i];
    int optimizer = op->phase == MD_PHASE_OPTIMIZER;
    if (!cg__is_compute(op)) {
      kernel_of[i] = p->ncolls;
      p->colls[p->ncolls++] = (cg_transfer){.kind = (cg_coll)(op->code - CG_OP_ALL_REDUCE), .group = op->group,
                                            .axis = op->axis, .bytes = op->bytes,
                                            .apply = optimizer, .issue = optimizer ? p->napply : p->nstep};
      continue;
    }
    cg_kernel *ks = optimizer ? p->apply : p->step;
    size_t *nk = optimizer ? &p->napply : &p->nstep;
    if (op->fusion >= 0 && op->fusion != i) {
      cg_kernel *kern = &ks[kernel_of[op->fusion]];
      kern->flops += op->flops;
      kern->bytes += op->bytes - op->saved_bytes;
      if (op->matmul.batch > 0) kern->matmul = op->matmul;  /* a product fused with its operand's ops */
      continue;
    }
    kernel_of[i] = *nk;
    ks[(*nk)++] = (cg_kernel){.flops = op->flops, .bytes = op->bytes - op->saved_bytes, .matmul = op->matmul, .layer = layer_of(g, op),
                              .phase = op->phase, .op = i};
  }
  /* A mark counts the step kernels whose root was traced before it (fusions stay inside a
  ** backward layer: fusion.c's condition 2). */
  size_t *before = base_xcalloc(g->traced + 1, sizeof *before);
  for (size_t i = 0; i < g->traced; i++) {
    const cg_op *op = &g->ops[i];
    before[i + 1] = before[i] + (op->phase != MD_PHASE_OPTIMIZER && (op->fusion < 0 || op->fusion == (int)i));
  }
  for (int l = 0; l <= g->nlayers; l++) p->marks[l] = before[g->marks[l] < g->traced ? g->marks[l] : g->traced];
  free(before);
  for (size_t i = g->traced; i < g->nops; i++) need(p, g, kernel_of, (int)i);
  free(kernel_of);
  p->accumulate = base_xcalloc(g->ntensors + 1, sizeof *p->accumulate);
  p->naccumulate = cg__accumulate_kernels(g, p->accumulate);
  return p;
}

static void program_free(cg_program *p) {
  cg_graph_free(p->graph);
  free(p->step);
  free(p->apply);
  free(p->accumulate);
  free(p->marks);
  free(p->colls);
  free(p);
}

const cg_kernel *cg_program_step(const cg_program *p, size_t *n) {
  *n = p->nstep;
  return p->step;
}

const cg_kernel *cg_program_apply(const cg_program *p, size_t *n) {
  *n = p->napply;
  return p->apply;
}

const cg_kernel *cg_program_accumulate(const cg_program *p, size_t *n) {
  *n = p->naccumulate;
  return p->accumulate;
}

size_t cg_program_mark(const cg_program *p, int l) {
  assert(l >= 0 && l <= p->graph->nlayers);
  return p->marks[l];
}

double cg_kernels_work(const sim_roofline *r, const cg_kernel *k, size_t from, size_t to) {
  double work = 0;
  for (size_t i = from; i < to; i++) work += sim_roofline_work(r, k[i].flops, k[i].bytes, &k[i].matmul);
  return work;
}

const cg_graph *cg_program_graph(const cg_program *p) { return p->graph; }

const cg_transfer *cg_program_collectives(const cg_program *p, size_t *n) {
  *n = p->ncolls;
  return p->colls;
}

cg_cache *cg_cache_new(const md_model_spec *spec, const md_optimizer_spec *opt, const cg_options *o) {
  cg_cache *c = base_xcalloc(1, sizeof *c);
  c->spec = *spec;
  c->opt = *opt;
  c->options = *o;
  return c;
}

const cg_program *cg_cache_get(cg_cache *c, int n) {
  for (size_t i = 0; i < c->n; i++)
    if (c->programs[i]->n == n) return c->programs[i];
  /* a model group's devices share their data shard's examples (cg_options.model_axis) */
  int examples = c->options.group_examples > 0 ? c->options.group_examples : n * cg__model_axis(&c->options);
  cg_graph *g = c->options.sparse_tables ? cg_trace_train_step_sparse(&c->spec, &c->opt, examples)
                                         : cg_trace_train_step(&c->spec, &c->opt, examples);
  cg_compile(g, &c->options);
  c->programs = base_xrealloc(c->programs, (c->n + 1) * sizeof *c->programs);
  c->programs[c->n] = lower(g, n);
  return c->programs[c->n++];
}

void cg_cache_free(cg_cache *c) {
  if (c == NULL) return;
  for (size_t i = 0; i < c->n; i++) program_free(c->programs[i]);
  free(c->programs);
  free(c);
}
