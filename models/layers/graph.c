/*
** graph.c: the packed graph input (md_graph_) and its node features layer
** (md_graph_node_features_ops). TF-GNN feeds a model a GraphTensor; for a batch of sampled
** subgraphs its runner merges the batch into one graph whose components are the examples
** (GraphTensor.merge_batch_to_components) and, under TPUStrategy, pads that graph to fixed sizes
** (tfgnn.SizeConstraints, runner's padding) so XLA compiles one program. podsim keeps an
** example's subgraph padded to graph_nodes nodes and graph_edges edges in one float row (layout
** in modelsInt.h): a batch of n such rows is the merged graph of n components, node e*nodes + i
** its example e's node i, its edges never crossing components, as merge_batch_to_components
** leaves them; padding nodes have zero features and no edges, padding edges connect nothing, so
** they take time and memory in every op (the costs count every padded node and edge) but never
** reach a real node's state or the loss.
**
** graph_node_features reads a packed example and outputs its node features [nodes, F]
** (F = (width - 2 edges) / nodes), as a GraphTensor's node_sets[...].features feed the first
** GraphUpdate; the graph layers after it read the packed input again for the edges.
**
** Invariants:
**   1. The features pass through bit for bit; the layer has no input gradient (it reads the
**      model's input, which has none).
*/
#include <string.h>

#include "models/modelsInt.h"

int md_graph_edge(const float *p, int width, int edges, int j, int *source, int *target) {
  float s = p[width - 2 * edges + j], t = p[width - edges + j];
  if (s < 0 || t < 0) return 0;
  *source = (int)s;
  *target = (int)t;
  return 1;
}

static int node_features_shape(md_layer *l, md_error *err) {
  int nodes = l->spec.graph_nodes, edges = l->spec.graph_edges, width = (int)md_shape_size(&l->in_shape);
  if (l->input[0] != MD_INPUT_MODEL || l->in_shape.rank != 1)
    return md_error_set(err, 0, 0, "graph_node_features reads the model's packed graph input (model.input.graph)");
  if (nodes <= 0 || edges < 0 || width <= 2 * edges || (width - 2 * edges) % nodes != 0)
    return md_error_set(err, 0, 0, "graph_node_features: %d nodes and %d edges do not pack into an input of %d "
                        "floats (nodes * features + 2 edges)", nodes, edges, width);
  l->out_shape = (md_shape){.rank = 2, .dim = {nodes, (width - 2 * edges) / nodes}};
  return 0;
}

static void node_features_forward(const md_layer *l, const md_layer_run *r) {
  for (int e = 0; e < r->n; e++)
    memcpy(r->z + (size_t)e * l->out, r->x + (size_t)e * l->in, sizeof(float) * (size_t)l->out);
}

/* Nothing to do: its only input is the model's (invariant 1). */
static void node_features_backward(const md_layer *l, const md_layer_run *r) {
  (void)l;
  (void)r;
}

/* A slice of the input batch: one copy forward (XLA's slice), none backward. */
static void node_features_cost(const md_layer *l, const md_layer_run *r, md_pass pass, md_cost *cost) {
  if (pass == MD_PASS_FORWARD) md_cost_elementwise(cost, r->act_bytes, (double)r->n * l->out, 0, 1);
}

const md_layer_ops md_graph_node_features_ops = {
  .keras_name = "graph_node_features", .reads_ids = 0, .has_activation = 0, .shape = node_features_shape,
  .variables = md_no_variables, .init = md_no_init, .forward = node_features_forward,
  .backward = node_features_backward, .cost = node_features_cost,
};
