/*
** liveness.c: the step's peak device memory under a memory policy (cg__liveness), as XLA's buffer
** assignment accounts it: the persistent bytes (variables and optimizer slots) plus the largest
** sum, over the schedule's positions, of the tensors held there. A tensor is written first at
** some position (a model input: at the step's start) and held until its last reader, or the
** step's end, as the policy (mem_*.c) says; one read only inside its fusion never reaches memory.
** Adding a policy: a mem_NAME.c defining a cg_memory_policy, its line in POLICIES, and its test.
*/
#include <string.h>

#include "base/base.h"
#include "compile/compileInt.h"

static const cg_memory_policy *const POLICIES[] = {&cg_memory_liveness, &cg_memory_keep_all};

static const cg_memory_policy *policy(const char *name) {
  for (size_t i = 0; i < sizeof POLICIES / sizeof *POLICIES; i++)
    if (strcmp(POLICIES[i]->name, name ? name : "liveness") == 0) return POLICIES[i];
  return NULL;
}

int cg_memory_known(const char *name) { return policy(name) != NULL; }

/* Whether every op touching tensor t is in one fusion: then it is never materialised. */
static int fused_away(const cg_graph *g, const cg_tensor *t) {
  if (t->producer < 0 || g->ops[t->producer].fusion < 0) return 0;
  for (int k = 0; k < t->nconsumers; k++)
    if (g->ops[t->consumers[k]].fusion != g->ops[t->producer].fusion) return 0;
  return t->nconsumers > 0;
}

void cg__liveness(cg_graph *g, const cg_options *o) {
  const cg_memory_policy *p = policy(o->memory);
  if (p == NULL) p = &cg_memory_liveness;
  g->memory = p->name;
  size_t n = g->nops;
  double *delta = base_xcalloc(n + 2, sizeof *delta);
  double *delta_grads = base_xcalloc(n + 2, sizeof *delta_grads);
  int *first = base_xcalloc(g->ntensors + 1, sizeof *first);
  for (size_t t = 0; t < g->ntensors; t++) first[t] = -1;
  for (size_t i = 0; i < n; i++) {
    const cg_op *op = &g->ops[g->schedule[i]];
    for (int k = 0; k < op->nout; k++)
      if (first[op->out[k]] < 0) first[op->out[k]] = (int)i;
  }
  for (size_t t = 0; t < g->ntensors; t++) {
    const cg_tensor *x = &g->tensors[t];
    if (x->kind == CG_TENSOR_WEIGHT || fused_away(g, x)) continue;
    int from = x->kind == CG_TENSOR_INPUT ? 0 : first[t];
    if (from < 0) continue;  /* never written in this step */
    int to = p->frees_after_last_use(g, x) ? from : (int)n - 1;
    for (int k = 0; k < x->nconsumers; k++)
      if (g->ops[x->consumers[k]].order > to) to = g->ops[x->consumers[k]].order;
    delta[from] += x->bytes;
    delta[to + 1] -= x->bytes;
    if (x->kind != CG_TENSOR_WEIGHT_GRAD) continue;
    delta_grads[from] += x->bytes;
    delta_grads[to + 1] -= x->bytes;
  }
  free(g->live);
  free(g->live_grads);
  g->live = base_xcalloc(n + 1, sizeof *g->live);
  g->live_grads = base_xcalloc(n + 1, sizeof *g->live_grads);
  g->nlive = n + 1;
  double live = 0, live_grads = 0;
  for (size_t i = 0; i <= n; i++) {
    g->live[i] = live += delta[i];
    g->live_grads[i] = live_grads += delta_grads[i];
  }
  g->peak = g->persistent + cg_graph_transient_peak(g, 1.0, 1.0, &g->peak_grads);
  free(delta);
  free(delta_grads);
  free(first);
}

double cg_graph_transient_peak(const cg_graph *g, double grad_share, double rest_share, double *grads) {
  double peak = 0, at_peak = 0;
  for (size_t i = 0; i < g->nlive; i++) {
    double held = grad_share * g->live_grads[i] + rest_share * (g->live[i] - g->live_grads[i]);
    if (held <= peak) continue;
    peak = held;
    at_peak = grad_share * g->live_grads[i];
  }
  if (grads != NULL) *grads = at_peak;
  return peak;
}
