/*
** graphdata.h: sampled subgraphs read from two CSV files into a dataset of packed graph examples
** (md_graph_), one example per subgraph, as models/layers/graph.c lays them out: node features
** [nodes, F] (padding nodes zeros), the edges' sources, then their targets (padding edges -1).
**
** The nodes file has a header naming `graph`, `node`, the label column and F feature columns (any
** order; every other column is a feature, in file order). Its rows list subgraph 0's nodes, then
** subgraph 1's, ...: graph counts up from 0 by one at a time, node from 0 by one within its graph;
** node 0 is the seed node whose class the example's label is (read from that row; the label field
** of the other rows is not read). The edges file has a header naming `graph`, `source` and
** `target` (any order, no other column); a row is an edge of that subgraph from node source to
** node target, both nodes of it; a subgraph's edges keep file order, whatever rows lie between.
** A subgraph with more nodes or edges than the padded sizes is an error.
*/
#ifndef PODSIM_GRAPHDATA_H
#define PODSIM_GRAPHDATA_H

#include "models/dataset.h"
#include "models/error.h"

/* The subgraphs of nodes_path and edges_path padded to `nodes` nodes and `edges` edges of
** `features` floats per node; label_column NULL means "label"; classes > 0 requires labels in
** [0, classes). NULL with err (line and column of the file) and *bad_file (0: the nodes file, 1:
** the edges file) on bad input. */
md_dataset *md_graph_dataset_load(const char *nodes_path, const char *edges_path, const char *label_column,
                                  int nodes, int edges, int features, int classes, md_error *err, int *bad_file);

#endif
