/*
** graphdata.c: sampled subgraphs from CSV into packed graph examples (md_graph_; format in
** graphdata.h). The nodes file is read first (it fixes the subgraphs and their node counts), then
** the edges file into each subgraph's row.
**
** Invariants:
**   1. Example g is subgraph g: its real nodes' features in node order, zeros after them; its real
**      edges in file order, then -1 up to the padded count (layers/graph.c skips those).
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/graphdata.h"
#include "models/modelsInt.h"

typedef struct graph_loader {
  const char *label_name; /* the label column's name */
  int nodes, edges, features; /* the padded sizes */
  int classes;            /* > 0: labels are below it */
  int col[3];             /* nodes file: graph, node, label fields; edges file: graph, source, target */
  int ncols;              /* fields per record, from the header; 0 before it */
  md_dataset *d;          /* being filled: rows grow with the nodes file */
  size_t cap;             /* rows allocated */
  int *real_nodes;        /* per subgraph: nodes read */
  int *real_edges;        /* per subgraph: edges read */
} graph_loader;

/* A whole field as an integer in [0, limit) into *v: 0, or -1 with err at (line, field col + 1). */
static int read_int(const char *s, int64_t limit, const char *what, int line, int col, int *v, md_error *err) {
  float f;
  if (md_csvfile_float(s, &f) != 0 || f != floorf(f) || f < 0 || f >= (float)limit)
    return md_error_set(err, line, col + 1, "%s \"%s\" is not an integer in [0, %lld)", what, s, (long long)limit);
  *v = (int)f;
  return 0;
}

/* The header's fields named names[0..3) into ld->col: 0, or -1 naming the one missing. */
static int find_columns(graph_loader *ld, const char *const names[3], int line, int nfields, char **fields,
                        md_error *err) {
  for (int k = 0; k < 3; k++) {
    ld->col[k] = -1;
    for (int i = 0; i < nfields; i++)
      if (strcmp(fields[i], names[k]) == 0) ld->col[k] = i;
    if (ld->col[k] < 0) return md_error_set(err, line, 0, "the header has no column \"%s\"", names[k]);
  }
  ld->ncols = nfields;
  return 0;
}

static int node_row(void *ctx, int line, int nfields, char **fields, md_error *err) {
  graph_loader *ld = ctx;
  md_dataset *d = ld->d;
  if (ld->ncols == 0) {
    const char *const names[3] = {"graph", "node", ld->label_name};
    if (find_columns(ld, names, line, nfields, fields, err) != 0) return -1;
    if (nfields - 3 != ld->features)
      return md_error_set(err, line, 0, "%d feature columns, expected model.input.graph.features (%d)", nfields - 3,
                          ld->features);
    return 0;
  }
  if (nfields != ld->ncols) return md_error_set(err, line, 0, "%d fields, expected %d as in the header", nfields, ld->ncols);
  int g, node;
  if (read_int(fields[ld->col[0]], (int64_t)d->rows + 1, "graph", line, ld->col[0], &g, err) != 0) return -1;
  if (g == (int)d->rows) {  /* a new subgraph: its node 0 first */
    if (d->rows == ld->cap) {
      ld->cap = ld->cap ? 2 * ld->cap : 64;
      d->x = base_xrealloc(d->x, sizeof(float) * ld->cap * d->width);
      d->labels = base_xrealloc(d->labels, sizeof(int32_t) * ld->cap);
      ld->real_nodes = base_xrealloc(ld->real_nodes, sizeof(int) * ld->cap);
      ld->real_edges = base_xrealloc(ld->real_edges, sizeof(int) * ld->cap);
    }
    float *x = d->x + d->rows * d->width;
    memset(x, 0, sizeof(float) * (size_t)ld->nodes * ld->features);
    for (int j = ld->nodes * ld->features; j < d->width; j++) x[j] = -1.0f;
    ld->real_nodes[d->rows] = ld->real_edges[d->rows] = 0;
    d->rows++;
  } else if (g != (int)d->rows - 1) {
    return md_error_set(err, line, ld->col[0] + 1, "graph %d after graph %d: a subgraph's nodes are one run of rows, "
                        "the subgraphs numbered 0, 1, ... in order", g, (int)d->rows - 1);
  }
  int *n = &ld->real_nodes[g];
  if (read_int(fields[ld->col[1]], (int64_t)*n + 1, "node", line, ld->col[1], &node, err) != 0 || node != *n)
    return md_error_set(err, line, ld->col[1] + 1, "node %s of graph %d: expected node %d (nodes numbered 0, 1, ... "
                        "in order)", fields[ld->col[1]], g, *n);
  if (node >= ld->nodes)
    return md_error_set(err, line, ld->col[1] + 1, "graph %d has more than model.input.graph.nodes (%d) nodes", g,
                        ld->nodes);
  if (node == 0) {
    int label;
    if (read_int(fields[ld->col[2]], ld->classes > 0 ? ld->classes : INT32_MAX, "label", line, ld->col[2], &label, err))
      return -1;
    d->labels[g] = label;
    if (label + 1 > d->classes) d->classes = label + 1;
  }
  float *x = d->x + (size_t)g * d->width + (size_t)node * ld->features;
  for (int i = 0, f = 0; i < nfields; i++) {
    if (i == ld->col[0] || i == ld->col[1] || i == ld->col[2]) continue;
    if (md_csvfile_float(fields[i], &x[f++]) != 0)
      return md_error_set(err, line, i + 1, "feature \"%s\" is not a number", fields[i]);
  }
  (*n)++;
  return 0;
}

static int edge_row(void *ctx, int line, int nfields, char **fields, md_error *err) {
  graph_loader *ld = ctx;
  md_dataset *d = ld->d;
  if (ld->ncols == 0) {
    static const char *const names[3] = {"graph", "source", "target"};
    if (find_columns(ld, names, line, nfields, fields, err) != 0) return -1;
    if (nfields != 3) return md_error_set(err, line, 0, "%d columns, expected graph, source and target", nfields);
    return 0;
  }
  if (nfields != 3) return md_error_set(err, line, 0, "%d fields, expected 3 as in the header", nfields);
  int g, s, t;
  if (read_int(fields[ld->col[0]], (int64_t)d->rows, "graph", line, ld->col[0], &g, err) != 0) return -1;
  int real = ld->real_nodes[g];
  if (read_int(fields[ld->col[1]], real, "source node", line, ld->col[1], &s, err) != 0 ||
      read_int(fields[ld->col[2]], real, "target node", line, ld->col[2], &t, err) != 0)
    return -1;
  int *e = &ld->real_edges[g];
  if (*e == ld->edges)
    return md_error_set(err, line, 0, "graph %d has more than model.input.graph.edges (%d) edges", g, ld->edges);
  float *p = d->x + (size_t)g * d->width + (size_t)ld->nodes * ld->features;
  p[*e] = (float)s;
  p[ld->edges + *e] = (float)t;
  (*e)++;
  return 0;
}

md_dataset *md_graph_dataset_load(const char *nodes_path, const char *edges_path, const char *label_column,
                                  int nodes, int edges, int features, int classes, md_error *err, int *bad_file) {
  md_dataset *d = base_xrealloc(NULL, sizeof *d);
  memset(d, 0, sizeof *d);
  d->width = nodes * features + 2 * edges;
  graph_loader ld = {.label_name = label_column ? label_column : "label", .nodes = nodes, .edges = edges,
                     .features = features, .classes = classes, .d = d};
  *bad_file = 0;
  int rc = md_csvfile_each(nodes_path, node_row, &ld, NULL, err);
  if (rc == 0 && d->rows == 0) rc = md_error_set(err, 1, 0, "no subgraphs: the file has a header only");
  if (rc == 0) {
    *bad_file = 1;
    ld.ncols = 0;
    rc = md_csvfile_each(edges_path, edge_row, &ld, NULL, err);
  }
  free(ld.real_nodes);
  free(ld.real_edges);
  if (rc == 0) return d;
  md_dataset_free(d);
  return NULL;
}
