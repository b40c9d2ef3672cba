/*
** readout_first_node.c: TF-GNN's tfgnn.keras.layers.ReadoutFirstNode (md_readout_first_node_ops):
** the state of the first node of each graph component, the seed node a sampled subgraph was grown
** from (tensorflow_gnn/keras/layers/graph_ops.py; the runner's node-classification task reads its
** logits there). In podsim a component is an example, so [nodes, D] -> [D], node 0's row.
**
** Invariants:
**   1. z is node 0's row bit for bit; the input gradient is dz at node 0 and zero at every other
**      node (padding ones included).
*/
#include <string.h>

#include "models/modelsInt.h"

static int readout_shape(md_layer *l, md_error *err) {
  char s[64];
  if (l->in_shape.rank != 2)
    return md_error_set(err, 0, 0, "readout_first_node reads node states [nodes, features], found %s",
                        md_shape_str(&l->in_shape, s, sizeof s));
  l->out_shape = (md_shape){.rank = 1, .dim = {l->in_shape.dim[1]}};
  return 0;
}

static void readout_forward(const md_layer *l, const md_layer_run *r) {
  for (int e = 0; e < r->n; e++)
    memcpy(r->z + (size_t)e * l->out, r->x + (size_t)e * l->in, sizeof(float) * (size_t)l->out);
}

static void readout_backward(const md_layer *l, const md_layer_run *r) {
  if (!r->has_dx) return;
  memset(r->dx, 0, sizeof(float) * (size_t)r->n * l->in);
  for (int e = 0; e < r->n; e++)
    memcpy(r->dx + (size_t)e * l->in, r->dz + (size_t)e * l->out, sizeof(float) * (size_t)l->out);
}

/* Forward XLA's gather of one row per component; backward its scatter into zeros (every node). */
static void readout_cost(const md_layer *l, const md_layer_run *r, md_pass pass, md_cost *cost) {
  if (pass == MD_PASS_FORWARD) md_cost_elementwise(cost, r->act_bytes, (double)r->n * l->out, 0, 1);
  else if (r->has_dx) md_cost_elementwise(cost, r->act_bytes, (double)r->n * l->in, 0, 1);
}

const md_layer_ops md_readout_first_node_ops = {
  .keras_name = "readout_first_node", .reads_ids = 0, .has_activation = 0, .shape = readout_shape,
  .variables = md_no_variables, .init = md_no_init, .forward = readout_forward,
  .backward = readout_backward, .cost = readout_cost,
};
