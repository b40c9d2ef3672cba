/*
** graph_sage.c: one GraphSAGE update of a homogeneous graph's node states (md_graph_sage_ops), as
** TF-GNN's graph_sage.GraphSAGEGraphUpdate(use_pooling=False) builds it
** (tensorflow_gnn/models/graph_sage/layers.py): a NodeSetUpdate whose GraphSAGEAggregatorConv
** broadcasts each edge's source state, pools it at the edge's target (reduce_type mean or sum:
** spec.combiner) and transforms it by a Dense without bias ("neighbor/kernel" [D, units]), and
** whose GraphSAGENextState transforms the node's own state the same way ("self/kernel" [D,
** units]), combines the two (combine_type sum, or concat: own first), adds its bias ([units] or
** [2 units], zeros) and applies the activation. GraphSAGENextState's l2_normalize is the
** unit_normalization layer after it; its dropout is left out (rate 0, TF-GNN's default).
**
** Inputs: 0 the node states [nodes, D], 1 the model's packed graph input (layers/graph.c) for the
** edges. Output [nodes, units] or [nodes, 2 units]. Saves the batch's pooled states [n nodes, D]
** (one block, so each transform is one GEMM over the merged graph), then each node's count of
** real incoming edges [n nodes].
**
** Invariants:
**   1. Pooling adds source rows at their targets in edge order from zero (tf.math.
**      unsorted_segment_sum's order); mean then divides by max(count, 1), as
**      unsorted_segment_mean, so a node without neighbours pools zeros.
**   2. Padding edges (a negative end, or one outside [0, nodes)) are skipped: a padded node never
**      reaches a real one, and the edges of example e only join nodes of example e.
**   3. The input gradient is dz_self W_self^T, then each real edge adds its target's pooled
**      gradient (divided by the count under mean) at its source, in edge order.
*/
#include <stdlib.h>
#include <string.h>

#include "models/gemm.h"
#include "models/modelsInt.h"

/* The sizes one pass works with. */
typedef struct sage {
  int nodes;              /* per example */
  int d;                  /* input state width */
  int units;              /* each transform's outputs */
  int c;                  /* output width: units (sum) or 2 units (concat) */
  int edges;              /* per example */
  int width;              /* floats of a packed example */
} sage;

static sage sage_of(const md_layer *l) {
  return (sage){.nodes = l->in_shape.dim[0], .d = l->in_shape.dim[1], .units = l->spec.units,
                .c = l->out_shape.dim[1], .edges = l->spec.graph_edges, .width = (int)md_shape_size(&l->in_shapes[1])};
}

static int sage_shape(md_layer *l, md_error *err) {
  char s[64];
  if (l->spec.units <= 0) return md_error_set(err, 0, 0, "graph_sage needs units > 0 (got %d)", l->spec.units);
  if (l->spec.combiner == MD_COMBINER_NONE)
    return md_error_set(err, 0, 0, "graph_sage pools its neighbours by mean or sum, not none");
  if (l->ninputs != 2 || l->input[1] != MD_INPUT_MODEL || l->in_shape.rank != 2)
    return md_error_set(err, 0, 0, "graph_sage reads two inputs: node states [nodes, features] (found %s) and "
                        "the model's packed graph input (inputs: [LAYER, input])", md_shape_str(&l->in_shape, s, sizeof s));
  int width = (int)md_shape_size(&l->in_shapes[1]), edges = l->spec.graph_edges;
  if (edges < 0 || width < 2 * edges + l->in_shape.dim[0])
    return md_error_set(err, 0, 0, "graph_sage: %d edges do not fit a packed graph input of %d floats", edges, width);
  int c = l->spec.combine_type == MD_COMBINE_CONCAT ? 2 * l->spec.units : l->spec.units;
  l->out_shape = (md_shape){.rank = 2, .dim = {l->in_shape.dim[0], c}};
  l->saved = l->in_shape.dim[0] * (l->in_shape.dim[1] + 1);
  return 0;
}

/* TF-GNN's variable order: the convolution's (built first by NodeSetUpdate), then the next
** state's. */
static void sage_variables(md_layer *l, md_model *m) {
  int64_t kernel[2] = {l->in_shape.dim[1], l->spec.units}, bias[1] = {l->out_shape.dim[1]};
  l->var[l->nvars++] = md_model_add_var(m, l->name, "neighbor/kernel", 2, kernel);
  l->var[l->nvars++] = md_model_add_var(m, l->name, "self/kernel", 2, kernel);
  if (l->spec.use_bias) l->var[l->nvars++] = md_model_add_var(m, l->name, "bias", 1, bias);
}

static void sage_init(const md_layer *l, md_var *vars, gsl_rng *rng) {
  for (int v = 0; v < 2; v++) md_fill_glorot(&vars[l->var[v]], l->in_shape.dim[1], l->spec.units, rng);
}

/* Example e's rows of the pooled states and of the counts (saved's two blocks). */
static float *pooled_of(const sage *g, const md_layer_run *r, int e) { return r->saved + (size_t)e * g->nodes * g->d; }
static float *count_of(const sage *g, const md_layer_run *r, int e) {
  return r->saved + (size_t)r->n * g->nodes * g->d + (size_t)e * g->nodes;
}

/* Example e's pooled rows and counts (invariants 1 and 2). */
static void pool(const sage *g, const md_layer_run *r, int e, int mean) {
  float *pooled = pooled_of(g, r, e), *count = count_of(g, r, e);
  const float *h = r->xs[0] + (size_t)e * g->nodes * g->d, *p = r->xs[1] + (size_t)e * g->width;
  memset(pooled, 0, sizeof(float) * (size_t)g->nodes * g->d);
  memset(count, 0, sizeof(float) * (size_t)g->nodes);
  for (int j = 0, s, t; j < g->edges; j++) {
    if (!md_graph_edge(p, g->width, g->edges, j, &s, &t) || s >= g->nodes || t >= g->nodes) continue;
    for (int k = 0; k < g->d; k++) pooled[(size_t)t * g->d + k] += h[(size_t)s * g->d + k];
    count[t] += 1.0f;
  }
  if (!mean) return;
  for (int t = 0; t < g->nodes; t++) {
    float div = count[t] > 1.0f ? count[t] : 1.0f;
    for (int k = 0; k < g->d; k++) pooled[(size_t)t * g->d + k] /= div;
  }
}

static void sage_forward(const md_layer *l, const md_layer_run *r) {
  sage g = sage_of(l);
  int rows = r->n * g.nodes, concat = g.c != g.units;
  for (int e = 0; e < r->n; e++) pool(&g, r, e, l->spec.combiner == MD_COMBINER_MEAN);
  md_gemm(0, 0, rows, g.units, g.d, 1.0f, r->xs[0], g.d, r->vars[l->var[1]].data, g.units, 0.0f, r->z, g.c);
  md_gemm(0, 0, rows, g.units, g.d, 1.0f, r->saved, g.d, r->vars[l->var[0]].data, g.units, concat ? 0.0f : 1.0f,
          r->z + (concat ? g.units : 0), g.c);
  if (MD_LAYER_BIAS(l) < 0) return;
  const float *b = r->vars[l->var[2]].data;
  for (int i = 0; i < rows; i++)
    for (int k = 0; k < g.c; k++) r->z[(size_t)i * g.c + k] += b[k];
}

static void sage_backward(const md_layer *l, const md_layer_run *r) {
  sage g = sage_of(l);
  int rows = r->n * g.nodes, off = g.c != g.units ? g.units : 0;
  const float *dzn = r->dz + off;
  md_gemm(1, 0, g.d, g.units, rows, 1.0f, r->xs[0], g.d, r->dz, g.c, 0.0f, r->grads->g[l->var[1]], g.units);
  md_gemm(1, 0, g.d, g.units, rows, 1.0f, r->saved, g.d, dzn, g.c, 0.0f, r->grads->g[l->var[0]], g.units);
  for (int k = 0; MD_LAYER_BIAS(l) >= 0 && k < g.c; k++) {
    double s = 0;
    for (int i = 0; i < rows; i++) s += r->dz[(size_t)i * g.c + k];
    r->grads->g[l->var[2]][k] = (float)s;
  }
  if (!r->has_dx) return;
  md_gemm(0, 1, rows, g.d, g.units, 1.0f, r->dz, g.c, r->vars[l->var[1]].data, g.units, 0.0f, r->dx, g.d);
  /* The pooled states' gradient over the whole batch, one GEMM. */
  float *dp = base_xrealloc(NULL, sizeof(float) * ((size_t)rows * g.d + 1));
  md_gemm(0, 1, rows, g.d, g.units, 1.0f, dzn, g.c, r->vars[l->var[0]].data, g.units, 0.0f, dp, g.d);
  for (int e = 0; e < r->n; e++) {
    const float *count = count_of(&g, r, e), *p = r->xs[1] + (size_t)e * g.width;
    float *dx = r->dx + (size_t)e * g.nodes * g.d, *dpe = dp + (size_t)e * g.nodes * g.d;
    for (int t = 0; l->spec.combiner == MD_COMBINER_MEAN && t < g.nodes; t++)
      for (int k = 0; k < g.d; k++) dpe[(size_t)t * g.d + k] /= count[t] > 1.0f ? count[t] : 1.0f;
    for (int j = 0, s, t; j < g.edges; j++) {
      if (!md_graph_edge(p, g.width, g.edges, j, &s, &t) || s >= g.nodes || t >= g.nodes) continue;
      for (int k = 0; k < g.d; k++) dx[(size_t)s * g.d + k] += dpe[(size_t)t * g.d + k];
    }
  }
  free(dp);
}

/* Every padded node and edge counts (the TPU's fixed sizes). Forward: the gather-and-add of the
** edges' source rows, mean's division, the two transforms, the combine with the bias. Backward:
** dW of each transform, db, and with dx each transform's dx, mean's division and the scatter-add
** at the sources. */
static void sage_cost(const md_layer *l, const md_layer_run *r, md_pass pass, md_cost *cost) {
  sage g = sage_of(l);
  double rows = (double)r->n * g.nodes, edge_rows = (double)r->n * g.edges * g.d, mean = l->spec.combiner == MD_COMBINER_MEAN;
  int bias = MD_LAYER_BIAS(l) >= 0;
  if (pass == MD_PASS_FORWARD) {
    md_cost_elementwise(cost, r->act_bytes, edge_rows, 1, 1);
    if (mean) md_cost_elementwise(cost, r->act_bytes, rows * g.d, 1, 1);
    md_cost_gemm(cost, r->act_bytes, rows, g.d, g.units, 1);
    md_cost_gemm(cost, r->act_bytes, rows, g.d, g.units, 1);
    if (bias || g.c == g.units) md_cost_elementwise(cost, r->act_bytes, rows * g.c, 1, 1 + (g.c == g.units));
    return;
  }
  md_cost_gemm(cost, r->act_bytes, g.d, rows, g.units, 0);
  md_cost_gemm(cost, r->act_bytes, g.d, rows, g.units, 0);
  if (bias) md_cost_elementwise(cost, r->act_bytes, rows * g.c, 1, 0);
  if (!r->has_dx) return;
  md_cost_gemm(cost, r->act_bytes, rows, g.units, g.d, 1);
  md_cost_gemm(cost, r->act_bytes, rows, g.units, g.d, 1);
  if (mean) md_cost_elementwise(cost, r->act_bytes, rows * g.d, 1, 1);
  md_cost_elementwise(cost, r->act_bytes, edge_rows, 1, 2);
}

const md_layer_ops md_graph_sage_ops = {
  .keras_name = "graph_sage", .reads_ids = 0, .has_activation = 1, .multi_input = 1, .shape = sage_shape,
  .variables = sage_variables, .init = sage_init, .forward = sage_forward, .backward = sage_backward,
  .cost = sage_cost,
};
