/*
** pipeline.c: pipeline parallelism's side of the compile layer (cg_pipeline_): what each layer
** of a step compiled on one microbatch costs a stage (its kernels' work, its variables, what its
** forward keeps for the backward, what crosses a cut after it), the stages balanced by that cost,
** and the order a stage runs its microbatches' passes in under GPipe and 1F1B. The programs
** (scenarios/programs/pipeline.c) run the order on the stages' devices; the bubble is not
** computed here but emerges from the run.
*/
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "compile/compileInt.h"

int cg_program_layers(const cg_program *p) { return cg_program_graph(p)->nlayers; }

/* The stage pass kernel k belongs to: 0 forward, 1 backward (a recomputed forward with it), 2
** the update; *layer its layer, the loss and any kernel of no layer the output (last) layer's,
** whose forward ends with them. */
static int kernel_pass(const cg_kernel *k, int layers, int *layer) {
  *layer = k->layer >= 0 && k->layer < layers ? k->layer : layers - 1;
  return k->phase == MD_PHASE_OPTIMIZER ? 2 : k->phase == MD_PHASE_BACKWARD || k->phase == MD_PHASE_REMAT ? 1 : 0;
}

/* The work of kernels of one list into the layer they belong to, by pass. */
static void add_work(const sim_roofline *r, const cg_kernel *k, size_t n, int layers, cg_layer_cost *out) {
  for (size_t i = 0; i < n && r != NULL; i++) {
    double w = cg_kernels_work(r, k, i, i + 1);
    int l, pass = kernel_pass(&k[i], layers, &l);
    if (pass == 2) out[l].update += w;
    else if (pass == 1) out[l].backward += w;
    else out[l].forward += w;
  }
}

void cg_pipeline_layer_costs(const cg_program *p, const sim_roofline *r, cg_layer_cost *out) {
  const cg_graph *g = cg_program_graph(p);
  int layers = g->nlayers;
  memset(out, 0, (size_t)layers * sizeof *out);
  size_t n;
  const cg_kernel *k = cg_program_step(p, &n);
  add_work(r, k, n, layers, out);
  k = cg_program_apply(p, &n);
  add_work(r, k, n, layers, out);
  for (int l = 0; l < layers; l++) {
    int end = l + 1 < layers ? g->first_var[l + 1] : g->nvars;
    for (int v = g->first_var[l]; v < end; v++) {
      int w = cg__weight_of(g, v);
      double bytes = w >= 0 ? g->tensors[w].bytes : 0;
      out[l].weights += bytes;
      if (!g->trainable[v]) continue;
      out[l].slots += g->slots * bytes;
      out[l].grads += bytes;
    }
  }
  for (size_t i = 0; i < g->ntensors; i++) {
    const cg_tensor *t = &g->tensors[i];
    if (t->producer < 0 || g->ops[t->producer].phase != MD_PHASE_FORWARD || t->layer < 0) continue;
    int last = t->layer;
    for (int c = 0; c < t->nconsumers; c++) {
      const cg_op *op = &g->ops[t->consumers[c]];
      if (op->phase == MD_PHASE_FORWARD && op->layer > last) last = op->layer;
    }
    /* an activation read by a later layer's forward crosses every cut between the two */
    for (int l = t->layer; t->kind == CG_TENSOR_ACTIVATION && l < last; l++) {
      out[l].cut += t->bytes;
      if (l > t->layer) out[l].splits_block = 1;
    }
  }
}

double cg_pipeline_saved(const cg_program *p, int first, int end) {
  const cg_graph *g = cg_program_graph(p);
  double bytes = 0;
  for (size_t i = 0; i < g->ntensors; i++) {
    const cg_tensor *t = &g->tensors[i];
    if (t->producer < 0 || g->ops[t->producer].phase != MD_PHASE_FORWARD) continue;
    int read = 0;
    for (int c = 0; c < t->nconsumers && !read; c++) {
      const cg_op *op = &g->ops[t->consumers[c]];
      read = op->phase == MD_PHASE_BACKWARD && op->layer >= first && op->layer < end;
    }
    if (read) bytes += t->bytes;
  }
  return bytes;
}

void cg_pipeline_balance(const cg_layer_cost *c, int layers, int stages, int *first) {
  assert(stages >= 1 && layers >= stages);
  double *sum = base_xcalloc((size_t)layers + 1, sizeof *sum);
  for (int l = 0; l < layers; l++) sum[l + 1] = sum[l] + c[l].forward + c[l].backward;
  /* may[j]: a stage may start at layer j (after a layer that splits no block, when there are enough) */
  char *may = base_xcalloc((size_t)layers + 1, 1);
  int whole = 0;
  for (int j = 1; j < layers; j++) whole += may[j] = (char)!c[j - 1].splits_block;
  for (int j = 1; j < layers && whole < stages - 1; j++) may[j] = 1;
  /* best[s x (layers + 1) + i]: the costliest stage's work when the first i layers form s + 1
  ** stages; cut[...]: where the last of them starts */
  size_t w = (size_t)layers + 1;
  double *best = base_xcalloc((size_t)stages * w, sizeof *best);
  int *cut = base_xcalloc((size_t)stages * w, sizeof *cut);
  for (int i = 1; i <= layers; i++) best[i] = sum[i];
  for (int s = 1; s < stages; s++)
    for (int i = s + 1; i <= layers; i++) {
      double b = INFINITY;  /* no stage may start where the layers allow it */
      for (int j = s; j < i; j++) {
        double prev = best[(size_t)(s - 1) * w + (size_t)j], last = sum[i] - sum[j];
        double cost = prev > last ? prev : last;
        if (may[j] && cost < b) b = cost, cut[(size_t)s * w + (size_t)i] = j;
      }
      best[(size_t)s * w + (size_t)i] = b;
    }
  first[stages] = layers;
  for (int s = stages - 1, i = layers; s >= 0; s--) {
    first[s] = s == 0 ? 0 : cut[(size_t)s * w + (size_t)i];
    i = first[s];
  }
  free(sum);
  free(may);
  free(best);
  free(cut);
}

/* Megatron-LM's interleaved schedule: pass k of the forwards (or the backwards) runs microbatch
** (k / (stages x chunks)) x stages + k % stages of chunk (k / stages) % chunks (the backwards'
** chunks reversed). */
static cg_pipe_op interleaved(int k, int stages, int chunks, int backward) {
  int chunk = (k / stages) % chunks;
  return (cg_pipe_op){backward, k / (stages * chunks) * stages + k % stages, backward ? chunks - 1 - chunk : chunk};
}

void cg_pipeline_order(cg_pipe_schedule s, int stages, int stage, int micro, int chunks, cg_pipe_op *out) {
  int n = 0;
  if (s == CG_PIPE_GPIPE) {
    for (int j = 0; j < micro; j++) out[n++] = (cg_pipe_op){0, j, 0};
    for (int j = micro; j-- > 0;) out[n++] = (cg_pipe_op){1, j, 0};
    return;
  }
  int total = s == CG_PIPE_INTERLEAVED ? micro * chunks : micro;
  int warm = s == CG_PIPE_INTERLEAVED ? 2 * (stages - stage - 1) + (chunks - 1) * stages : stages - stage - 1;
  if (warm > total) warm = total;
  int f = 0, b = 0;
  for (; f < warm; f++) out[n++] = s == CG_PIPE_INTERLEAVED ? interleaved(f, stages, chunks, 0) : (cg_pipe_op){0, f, 0};
  for (; f < total; f++, b++) {
    out[n++] = s == CG_PIPE_INTERLEAVED ? interleaved(f, stages, chunks, 0) : (cg_pipe_op){0, f, 0};
    out[n++] = s == CG_PIPE_INTERLEAVED ? interleaved(b, stages, chunks, 1) : (cg_pipe_op){1, b, 0};
  }
  for (; b < total; b++) out[n++] = s == CG_PIPE_INTERLEAVED ? interleaved(b, stages, chunks, 1) : (cg_pipe_op){1, b, 0};
}

double cg_pipeline_peak_held(const cg_pipe_op *order, int n, int chunks, const double *saved) {
  int *live = base_xcalloc((size_t)chunks, sizeof *live);
  double peak = 0;
  for (int i = 0; i < n; i++) {
    live[order[i].chunk] += order[i].backward ? -1 : 1;
    double held = 0;
    for (int c = 0; c < chunks; c++) held += live[c] * saved[c];
    if (held > peak) peak = held;
  }
  free(live);
  return peak;
}

cg_pipe_step *cg_pipeline_pass_steps(const cg_program *p, const sim_roofline *r, int first, int end, int backward,
                                     size_t *n) {
  size_t nk, nx;
  const cg_kernel *k = cg_program_step(p, &nk);
  const cg_transfer *x = cg_program_collectives(p, &nx);
  int layers = cg_program_layers(p);
  char *mine = base_xcalloc(nk + 1, 1);
  for (size_t i = 0; i < nk; i++) {
    int l, pass = kernel_pass(&k[i], layers, &l);
    mine[i] = (char)(pass == backward && l >= first && l < end);
  }
  /* the pass's collectives: over the model axis, issued after one of its kernels (the one that
  ** finished the operand); per place, those issued and those awaited there, in program order */
  long *issued = base_xcalloc(nk + 1, sizeof *issued), *awaited = base_xcalloc(nk + 1, sizeof *awaited);
  long *next_issued = base_xcalloc(nx + 1, sizeof *next_issued), *next_awaited = base_xcalloc(nx + 1, sizeof *next_awaited);
  for (size_t at = 0; at <= nk; at++) issued[at] = awaited[at] = -1;
  size_t taken = 0;
  for (size_t i = nx; i-- > 0;) {
    if (x[i].apply || x[i].axis != CG_AXIS_MODEL || !mine[x[i].issue > 0 ? x[i].issue - 1 : 0]) continue;
    next_issued[i] = issued[x[i].issue];
    issued[x[i].issue] = (long)i;
    next_awaited[i] = awaited[x[i].need];
    awaited[x[i].need] = (long)i;
    taken++;
  }
  cg_pipe_step *out = base_xcalloc(2 * taken + 1, sizeof *out);
  size_t m = 0;
  double work = 0;
  for (size_t at = 0; at <= nk; at++) {
    for (long i = issued[at]; i >= 0; i = next_issued[i]) {
      out[m++] = (cg_pipe_step){work, (int)i, 0};
      work = 0;
    }
    for (long i = awaited[at]; i >= 0; i = next_awaited[i]) {
      out[m++] = (cg_pipe_step){work, (int)i, 1};
      work = 0;
    }
    if (at < nk && mine[at] && r != NULL) work += cg_kernels_work(r, k, at, at + 1);
  }
  out[m++] = (cg_pipe_step){work, -1, 0};
  free(mine);
  free(issued);
  free(awaited);
  free(next_issued);
  free(next_awaited);
  *n = m;
  return out;
}
