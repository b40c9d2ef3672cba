/*
** test_gnn.c: the graph layer kinds (layers/graph.c, graph_sage.c, unit_normalization.c,
** readout_first_node.c) on hand-worked values, their finite-difference gradients, padding that
** costs but never changes the loss, and the CSV subgraph reader (models/graphdata.c) with its
** errors.
*/
#include "tests/testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "models/graphdata.h"
#include "models/model.h"
#include "sim/rng.h"
#include "tests/models/fd.h"

/* A graph model: node features, graph_sage (reduce, combine, units 1 or more, activation), and
** readout of the seed node, in layers[0..3); more layers may follow. */
static void sage_layers(md_layer_spec *l, int nodes, int edges, md_combiner reduce, md_combine_type combine,
                        int units, md_activation act) {
  l[0] = (md_layer_spec){.kind = MD_LAYER_GRAPH_NODE_FEATURES, .graph_nodes = nodes, .graph_edges = edges};
  l[1] = (md_layer_spec){.kind = MD_LAYER_GRAPH_SAGE, .units = units, .combiner = reduce, .combine_type = combine,
                         .activation = act, .use_bias = 1, .graph_edges = edges, .ninputs = 2,
                         .inputs = {0, MD_INPUT_MODEL}};
  l[2] = (md_layer_spec){.kind = MD_LAYER_READOUT_FIRST_NODE};
}

/* One subgraph of 3 nodes with features x = [1, 2, 3] and edges 1->0, 2->0, 0->1 and a padding
** edge: sources [1, 2, 0, -1], targets [0, 0, 1, -1]. */
static const float one_graph[3 + 8] = {1, 2, 3, 1, 2, 0, -1, 0, 0, 1, -1};

/* Node 0 pools 2 + 3 = 5 (mean 2.5), node 1 pools 1 (mean 1), node 2 nothing (0). With the
** neighbor kernel 2, the self kernel 10 and bias 0.5, sum combine: 10 x + 2 pooled + 0.5:
** mean [10 + 5 + 0.5, 20 + 2 + 0.5, 30 + 0 + 0.5] = [15.5, 22.5, 30.5], sum [20.5, 22.5, 30.5];
** concat (bias [0.5, 0.25]): node 0 [10 + 0.5, 2 * 2.5 + 0.25] = [10.5, 5.25]. Readout: node 0. */
static void test_graph_sage_forward(void **state) {
  (void)state;
  const struct { md_combiner reduce; md_combine_type combine; float want[2]; int width; } cases[] = {
      {MD_COMBINER_MEAN, MD_COMBINE_SUM, {15.5f}, 1},
      {MD_COMBINER_SUM, MD_COMBINE_SUM, {20.5f}, 1},
      {MD_COMBINER_MEAN, MD_COMBINE_CONCAT, {10.5f, 5.25f}, 2}};
  for (int c = 0; c < 3; c++) {
    md_layer_spec l[3];
    sage_layers(l, 3, 4, cases[c].reduce, cases[c].combine, 1, MD_ACT_NONE);
    md_model *m = fd_model(l, 3, (md_shape){.rank = 1, .dim = {11}});
    assert_int_equal(md_model_num_params(m), 2 + cases[c].width);
    assert_string_equal(md_model_var(m, 0)->name, "graph_sage/neighbor/kernel");
    assert_string_equal(md_model_var(m, 1)->name, "graph_sage/self/kernel");
    md_model_var(m, 0)->data[0] = 2;
    md_model_var(m, 1)->data[0] = 10;
    md_model_var(m, 2)->data[0] = 0.5f;
    if (cases[c].width == 2) md_model_var(m, 2)->data[1] = 0.25f;
    md_workspace *w = md_workspace_new(m);
    md_batch b = {1, one_graph, NULL, NULL, NULL};
    const float *z = md_model_forward(m, w, &b, NULL);
    for (int k = 0; k < cases[c].width; k++) assert_true(z[k] == cases[c].want[k]);
    md_workspace_free(w);
    md_model_free(m);
  }
}

/* [3, 4] / 5 = [0.6, 0.8]; a zero row stays zero (the norm floored at sqrt(1e-12)). */
static void test_unit_normalization(void **state) {
  (void)state;
  md_layer_spec l[1] = {{.kind = MD_LAYER_UNIT_NORMALIZATION}};
  md_model *m = fd_model(l, 1, (md_shape){.rank = 2, .dim = {2, 2}});
  md_workspace *w = md_workspace_new(m);
  const float x[4] = {3, 4, 0, 0};
  md_batch b = {1, x, NULL, NULL, NULL};
  const float *z = md_model_forward(m, w, &b, NULL);
  assert_close(z[0], 0.6, 1e-7);
  assert_close(z[1], 0.8, 1e-7);
  assert_true(z[2] == 0 && z[3] == 0);
  md_workspace_free(w);
  md_model_free(m);
}

/* Three subgraphs of up to 4 nodes (2 features) and 6 edges, padded differently; node features
** spread over [-1, 1]. */
enum { FD_NODES = 4, FD_EDGES = 6, FD_F = 2, FD_WIDTH = FD_NODES * FD_F + 2 * FD_EDGES };
static float fd_graphs[3 * FD_WIDTH];
static const int32_t fd_graph_labels[3] = {0, 2, 1};
static md_batch fd_graph_batch(void) {
  static const int edges[3][2][FD_EDGES] = {
      {{1, 2, 3, 0, 2, -1}, {0, 0, 0, 1, 1, -1}},       /* 5 edges, all nodes real */
      {{1, 0, 2, 1, -1, -1}, {0, 1, 1, 2, -1, -1}},     /* node 3 a padding node */
      {{1, 2, 3, 3, 2, 1}, {0, 0, 1, 2, 3, 3}}};        /* no padding */
  for (int g = 0; g < 3; g++) {
    float *p = fd_graphs + g * FD_WIDTH;
    for (int i = 0; i < FD_NODES * FD_F; i++) p[i] = (g == 1 && i >= 3 * FD_F) ? 0 : (float)sin(0.9 * (g * 8 + i) + 0.4);
    for (int j = 0; j < FD_EDGES; j++) {
      p[FD_NODES * FD_F + j] = (float)edges[g][0][j];
      p[FD_NODES * FD_F + FD_EDGES + j] = (float)edges[g][1][j];
    }
  }
  return (md_batch){3, fd_graphs, NULL, fd_graph_labels, NULL};
}

/* Two GraphSAGE updates (the first concat with sum pooling and tanh, l2-normalised; the second
** sum-combined with mean pooling and swish), readout, dense: every kernel's and bias's gradient,
** the first layer's through the second's input gradient (its gather-scatter, mean's division),
** unit normalisation's and readout's. */
static void test_grad_graph_sage(void **state) {
  (void)state;
  md_layer_spec l[7];
  sage_layers(l, FD_NODES, FD_EDGES, MD_COMBINER_SUM, MD_COMBINE_CONCAT, 3, MD_ACT_TANH);
  l[2] = (md_layer_spec){.kind = MD_LAYER_UNIT_NORMALIZATION};
  l[3] = l[1];
  l[3].combiner = MD_COMBINER_MEAN;
  l[3].combine_type = MD_COMBINE_SUM;
  l[3].activation = MD_ACT_SWISH;
  l[3].inputs[0] = 2;
  l[4] = (md_layer_spec){.kind = MD_LAYER_READOUT_FIRST_NODE};
  l[5] = (md_layer_spec){.kind = MD_LAYER_DENSE, .units = 3, .use_bias = 1};
  md_model *m = fd_model(l, 6, (md_shape){.rank = 1, .dim = {FD_WIDTH}});
  assert_int_equal(md_model_layer_output_shape(m, 1).dim[1], 6);
  md_batch b = fd_graph_batch();
  fd_check(m, &b, 1400, 0);
  md_model_free(m);
}

/* The train step's cost with numerics off is the one with numerics on (bytes held included). */
static void test_graph_costs_mode_independent(void **state) {
  (void)state;
  md_layer_spec l[4];
  sage_layers(l, FD_NODES, FD_EDGES, MD_COMBINER_MEAN, MD_COMBINE_SUM, 5, MD_ACT_RELU);
  l[3] = (md_layer_spec){.kind = MD_LAYER_DENSE, .units = 3, .use_bias = 1};
  md_model_spec spec = {.input_shape = {.rank = 1, .dim = {FD_WIDTH}}, .nlayers = 4, .layers = l, .from_logits = 1};
  fd_assert_spec_costs_mode_independent(spec, fd_graph_batch());
}

/* one_graph padded from 3 nodes and 4 edges to 6 nodes and 9 edges (the TPU's fixed sizes):
** the padding nodes hold features (anything: no edge reaches a real node from them) and the
** loss is the same, while the step's FLOPs and the activations it holds grow. Packed: [x 6][sources
** 9][targets 9]. */
static void test_padding_costs_but_not_loss(void **state) {
  (void)state;
  float padded[6 + 18];
  const float xs[6] = {1, 2, 3, 7, -7, 9};
  memcpy(padded, xs, sizeof xs);
  for (int j = 0; j < 9; j++) padded[6 + j] = padded[15 + j] = -1;
  for (int j = 0; j < 3; j++) padded[6 + j] = one_graph[3 + j], padded[15 + j] = one_graph[7 + j];
  padded[6 + 5] = 4, padded[15 + 5] = 5;  /* an edge between two padding nodes */
  double loss[2], held[2];
  md_cost cost[2];
  memset(cost, 0, sizeof cost);
  const int32_t y = 1;
  for (int p = 0; p < 2; p++) {
    md_layer_spec l[4];
    sage_layers(l, p ? 6 : 3, p ? 9 : 4, MD_COMBINER_MEAN, MD_COMBINE_SUM, 4, MD_ACT_TANH);
    l[3] = (md_layer_spec){.kind = MD_LAYER_DENSE, .units = 3, .use_bias = 1};
    md_model *m = fd_model(l, 4, (md_shape){.rank = 1, .dim = {p ? 24 : 11}});
    gsl_rng *rng = sim_rng_stream(5, "init");
    md_model_init_default(m, rng);
    gsl_rng_free(rng);
    md_workspace *w = md_workspace_new(m);
    md_grads *g = md_grads_new(m);
    md_batch b = {1, p ? padded : one_graph, NULL, &y, NULL};
    md_model_train_step(m, w, &b, 1.0f, g, &loss[p], &cost[p]);
    held[p] = md_model_activation_bytes(m, 1);
    md_grads_free(g);
    md_workspace_free(w);
    md_model_free(m);
  }
  assert_close(loss[1], loss[0], 1e-6 * fabs(loss[0]));
  assert_true(cost[1].flops > cost[0].flops);
  assert_true(held[1] > held[0]);
}

/* graph_sage needs [node states, the model's input]; graph_node_features a layout that fits. */
static void test_graph_spec_errors(void **state) {
  (void)state;
  md_layer_spec l[3];
  sage_layers(l, 3, 4, MD_COMBINER_MEAN, MD_COMBINE_SUM, 2, MD_ACT_NONE);
  md_model_spec spec = {.input_shape = {.rank = 1, .dim = {11}}, .nlayers = 3, .layers = l};
  md_error err = {0};
  l[1].inputs[1] = 0;  /* the node features again, not the packed input */
  assert_null(md_model_new(&spec, &err));
  assert_non_null(strstr(err.msg, "graph_sage reads two inputs"));
  l[1].inputs[1] = MD_INPUT_MODEL;
  l[0].graph_edges = 5;  /* 11 - 10 = 1 float for 3 nodes */
  assert_null(md_model_new(&spec, &err));
  assert_non_null(strstr(err.msg, "do not pack"));
}

static char temp_path[2][64];
static const char *write_temp(int k, const char *text) {
  snprintf(temp_path[k], sizeof temp_path[k], "/tmp/podsim_gnn_XXXXXX");
  int fd = mkstemp(temp_path[k]);
  assert_true(fd >= 0);
  FILE *f = fdopen(fd, "w");
  fputs(text, f);
  fclose(f);
  return temp_path[k];
}

static md_dataset *load_graphs(const char *nodes, const char *edges, md_error *err, int *bad) {
  md_dataset *d = md_graph_dataset_load(write_temp(0, nodes), write_temp(1, edges), NULL, 3, 3, 2, 0, err, bad);
  unlink(temp_path[0]);
  unlink(temp_path[1]);
  return d;
}

/* Two subgraphs, the label column between the features, graph 1's edges before and after graph
** 0's: example 0 = features [1 2, 3 4, 0 0] (node 2 padding), sources [1, -1, -1], targets [0,
** -1, -1]; example 1 = [5 6, 7 8, 9 10], sources [2, 1, -1], targets [0, 0, -1]; labels 2 and 1. */
static void test_graph_dataset(void **state) {
  (void)state;
  md_error err = {0};
  int bad = -1;
  md_dataset *d = load_graphs("f0,graph,label,node,f1\n1,0,2,0,2\n3,0,,1,4\n5,1,1,0,6\n7,1,,1,8\n9,1,,2,10\n",
                              "graph,source,target\n1,2,0\n0,1,0\n1,1,0\n", &err, &bad);
  if (d == NULL) fail_msg("%d:%d: %s", err.line, err.col, err.msg);
  const float want[2][12] = {{1, 2, 3, 4, 0, 0, 1, -1, -1, 0, -1, -1}, {5, 6, 7, 8, 9, 10, 2, 1, -1, 0, 0, -1}};
  assert_int_equal(d->rows, 2);
  assert_int_equal(d->width, 12);
  for (int g = 0; g < 2; g++)
    for (int i = 0; i < 12; i++) assert_true(d->x[g * 12 + i] == want[g][i]);
  assert_int_equal(d->labels[0], 2);
  assert_int_equal(d->labels[1], 1);
  assert_int_equal(d->classes, 3);
  md_dataset_free(d);
}

/* Each error names its file, line and field. */
static void test_graph_dataset_errors(void **state) {
  (void)state;
  const struct { const char *nodes, *edges, *msg; int bad, line, col; } cases[] = {
      {"graph,node,label,a,b\n0,0,1,1,1\n0,1,,1,1\n0,2,,1,1\n0,3,,1,1\n", "graph,source,target\n",
       "more than model.input.graph.nodes (3)", 0, 5, 2},
      {"graph,node,label,a,b\n0,0,1,1,1\n2,0,1,1,1\n", "graph,source,target\n", "is not an integer in [0, 2)", 0, 3, 1},
      {"graph,node,label,a,b\n0,0,1,1,1\n0,2,,1,1\n", "graph,source,target\n", "expected node 1", 0, 3, 2},
      {"graph,node,label,a\n0,0,1,1\n", "graph,source,target\n", "1 feature columns, expected", 0, 1, 0},
      {"graph,node,label,a,b\n0,0,1,1,1\n0,1,,1,1\n", "graph,source,target\n0,1,2\n", "target node \"2\"", 1, 2, 3},
      {"graph,node,label,a,b\n0,0,1,1,1\n0,1,,1,1\n", "graph,source,target\n0,1,0\n0,1,0\n0,1,0\n0,0,1\n",
       "more than model.input.graph.edges (3)", 1, 5, 0},
      {"graph,node,label,a,b\n0,0,1,1,1\n", "graph,src,target\n", "no column \"source\"", 1, 1, 0}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    md_error err = {0};
    int bad = -1;
    assert_null(load_graphs(cases[c].nodes, cases[c].edges, &err, &bad));
    if (strstr(err.msg, cases[c].msg) == NULL) fail_msg("case %zu: %s", c, err.msg);
    assert_int_equal(bad, cases[c].bad);
    assert_int_equal(err.line, cases[c].line);
    if (cases[c].col) assert_true(err.col > 0);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_graph_sage_forward),
      cmocka_unit_test(test_unit_normalization),
      cmocka_unit_test(test_grad_graph_sage),
      cmocka_unit_test(test_graph_costs_mode_independent),
      cmocka_unit_test(test_padding_costs_but_not_loss),
      cmocka_unit_test(test_graph_spec_errors),
      cmocka_unit_test(test_graph_dataset),
      cmocka_unit_test(test_graph_dataset_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
