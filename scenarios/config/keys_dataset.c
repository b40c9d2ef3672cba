/*
** keys_dataset.c: the dataset section: the examples, batching, shuffling, distribution, input pipeline.
*/
#include "scenarios/config/configInt.h"

#include <glob.h>
#include <string.h>

static const char *const DISTRIBUTE[] = {"dataset", "function", NULL};
static const char *const SHARD[] = {"auto", "file", "data", "off", NULL};

/* dataset.shuffle: false, or {buffer: N}. */
static const key_spec SHUFFLE_KEYS[] = {
  {.key = "buffer", .type = V_INT, .st = S_LONG, OFF(scenario, shuffle_buffer), .lo = 1, .hi = 1e9,
   .required = 1},
  END};
static int shuffle_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  char fb[80];
  (void)k;
  if (v->kind == YT_MAP) return cfg_walk_map(c, v, path, SHUFFLE_KEYS, base);
  if (v->kind == YT_SCALAR && !v->quoted && !strcmp(v->text, "false")) return 0;
  return cfg_fail(c, v, path, "expected false or {buffer: N}, found %s", cfg_found(v, fb, sizeof fb));
}

/* Appends one resolved file to s->files. */
static int add_file(cfg_ctx *c, const yt_node *at, const char *path, const char *resolved) {
  scenario *s = c->s;
  size_t used = 0;
  for (int i = 0; i < s->nfiles; i++) used += strlen(s->files + used) + 1;
  size_t n = strlen(resolved) + 1;
  if (s->nfiles == SCN_MAX_FILES || used + n > sizeof s->files)
    return cfg_fail(c, at, path, "expected at most %d files (%d KiB of paths), found more",
                    SCN_MAX_FILES, (int)(sizeof s->files / 1024));
  memcpy(s->files + used, resolved, n);
  s->nfiles++;
  return 0;
}

/* dataset.files: a list of CSV files, or one glob pattern ("shards/part-*.csv") expanded in
** sorted order, as Dataset.list_files(pattern, shuffle=False) lists them. Each file has the
** same header; they are read one after another, and FILE auto-sharding hands them out whole. */
static int files_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  char item[300], resolved[SCN_PATH_MAX];
  const char *text;
  (void)k; (void)base;
  if (v->kind == YT_SCALAR && !yt_is_null(v)) {
    int w = (v->text[0] == '/' || !strcmp(c->s->dir, "."))
                ? snprintf(resolved, sizeof resolved, "%s", v->text)
                : snprintf(resolved, sizeof resolved, "%s/%s", c->s->dir, v->text);
    if (w < 0 || (size_t)w >= sizeof resolved)
      return cfg_fail(c, v, path, "expected a shorter pattern, found %.60s...", v->text);
    glob_t g;
    int rc = glob(resolved, 0, NULL, &g);
    if (rc != 0) {
      if (rc != GLOB_NOMATCH) globfree(&g);
      return cfg_fail(c, v, path, "no file matches %s (patterns are relative to the scenario's "
                      "directory)", resolved);
    }
    rc = 0;
    for (size_t i = 0; i < g.gl_pathc && rc == 0; i++) rc = add_file(c, v, path, g.gl_pathv[i]);
    globfree(&g);
    return rc;
  }
  if (cfg_get_seq(c, v, path, "a list of CSV files or a glob pattern")) return -1;
  for (int i = 0; i < v->n; i++) {
    snprintf(item, sizeof item, "%s[%d]", path, i);
    if (cfg_get_str(c, v->items[i], item, &text) ||
        cfg_resolve_file(c, v->items[i], item, text, resolved, sizeof resolved) ||
        add_file(c, v->items[i], item, resolved))
      return -1;
  }
  return 0;
}

/* dataset.labels: the target columns of a loss that reads several floats per example (one-hot or
** soft labels, multi-label binary targets, regression targets), in the model's output order, as
** a Keras user's y has them. */
static int labels_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  char item[300];
  const char *text;
  scenario *s = base;
  (void)k;
  if (cfg_get_seq(c, v, path, "a list of label column names")) return -1;
  if (v->n < 1 || v->n > SCN_MAX_LABELS)
    return cfg_fail(c, v, path, "expected 1 to %d label columns, found %d", SCN_MAX_LABELS, v->n);
  for (int i = 0; i < v->n; i++) {
    snprintf(item, sizeof item, "%s[%d]", path, i);
    if (cfg_get_str(c, v->items[i], item, &text)) return -1;
    if (strlen(text) >= sizeof s->labels[i])
      return cfg_fail(c, v->items[i], item, "expected a column name under %d characters", (int)sizeof s->labels[i]);
    for (int j = 0; j < i; j++)
      if (!strcmp(s->labels[j], text)) return cfg_fail(c, v->items[i], item, "column \"%s\" is listed twice", text);
    snprintf(s->labels[i], sizeof s->labels[i], "%s", text);
  }
  s->nlabels = v->n;
  return 0;
}

/* dataset.synthetic.shape: one example's shape, as model.input.shape gives it ([224, 224, 3]). */
static int synthetic_shape_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  return cfg_example_shape(c, k, v, path, &((scenario *)base)->synthetic_shape, &((scenario *)base)->synthetic_features);
}

/* features or shape, one of them (scenario.c checks). */
static const key_spec SYNTHETIC_KEYS[] = {
  {.key = "rows", .type = V_INT, .st = S_SIZE, OFF(scenario, synthetic_rows), .lo = 1, .hi = 1e8, .required = 1},
  {.key = "features", .type = V_INT, .st = S_INT, OFF(scenario, synthetic_features), .lo = 1, .hi = 1e8},
  {.key = "shape", .type = V_FN, .fn = synthetic_shape_fn, .lo = 1, .hi = 1e8,
   .schema = "{\"type\":\"array\",\"minItems\":1,\"maxItems\":4,\"items\":{\"type\":\"integer\",\"minimum\":1},\"description\":\"one example's shape instead of features, such as [224, 224, 3]: model.input.shape's\"}"},
  {.key = "classes", .type = V_INT, .st = S_INT, OFF(scenario, synthetic_classes), .lo = 2, .hi = 1e8, .required = 1},
  END};

/* An hour of host time per example or batch, or of compilation, is far past any real figure. */
static const key_spec PIPELINE_KEYS[] = {
  {.key = "per_example", .type = V_UNIT, .unit = UNIT_DURATION, .hi = 3600, .st = S_DOUBLE,
   OFF(scenario, pipeline_per_example_s)},
  {.key = "per_batch", .type = V_UNIT, .unit = UNIT_DURATION, .hi = 3600, .st = S_DOUBLE,
   OFF(scenario, pipeline_per_batch_s)},
  END};
/* dataset.graph: sampled subgraphs, one per example, in two CSV files (models/graphdata.h). */
static const key_spec GRAPH_KEYS[] = {
  {.key = "nodes", .doc = "CSV of graph,node,LABEL,features...: each example's nodes, its seed node 0 first", .type = V_PATH, .st = S_CHARS, OFF(scenario, graph_nodes_csv), .len = SCN_PATH_MAX, .required = 1},
  {.key = "edges", .doc = "CSV of graph,source,target: each example's edges, by node numbers within it", .type = V_PATH, .st = S_CHARS, OFF(scenario, graph_edges_csv), .len = SCN_PATH_MAX, .required = 1},
  END};

const key_spec CFG_DATASET_KEYS[] = {
  {.key = "graph", .type = V_MAP, .sub = GRAPH_KEYS},
  {.key = "csv", .type = V_PATH, .st = S_CHARS, OFF(scenario, csv), .len = SCN_PATH_MAX},
  {.key = "files", .type = V_FN, .fn = files_fn,
   .schema = "{\"anyOf\":[{\"type\":\"string\",\"minLength\":1},{\"type\":\"array\",\"minItems\":1,\"items\":{\"type\":\"string\",\"minLength\":1}}],\"description\":\"CSV files with the same header, read one after another: a list, or one glob pattern relative to the scenario file\"}"},
  {.key = "label", .type = V_STR, .st = S_CHARS, OFF(scenario, label), .len = 128},
  {.key = "labels", .type = V_FN, .fn = labels_fn,
   .schema = "{\"type\":\"array\",\"minItems\":1,\"items\":{\"type\":\"string\"},\"description\":\"the float target columns, one per output of the last layer, for every loss but sparse_categorical_crossentropy\"}"},
  {.key = "inputs", .type = V_FN, .fn = cfg_dataset_inputs_fn,
   .schema = "{\"type\":\"object\",\"additionalProperties\":{\"type\":\"array\",\"minItems\":1,\"items\":{\"type\":\"string\"}},\"description\":\"each of model.inputs' names mapped to its CSV columns, in order (default: the feature columns in header order)\"}"},
  {.key = "synthetic", .type = V_MAP, .sub = SYNTHETIC_KEYS},
  {.key = "global_batch", .type = V_INT, .st = S_INT, OFF(scenario, global_batch), .lo = 1, .hi = 1e7, .required = 1},
  {.key = "shuffle", .type = V_FN, .fn = shuffle_fn, .map = SHUFFLE_KEYS,
   .schema = "{\"anyOf\":[{\"const\":false},\"$map\"],\"description\":\"false, or {buffer: N}: Dataset.shuffle's buffer\"}"},
  {.key = "repeat", .type = V_BOOL, .st = S_INT, OFF(scenario, repeat)},
  {.key = "distribute", .type = V_ENUM, .st = S_INT, OFF(scenario, distribute), .names = DISTRIBUTE},
  {.key = "auto_shard_policy", .type = V_ENUM, .st = S_INT, OFF(scenario, auto_shard), .names = SHARD},
  {.key = "prefetch", .type = V_INT, .st = S_INT, OFF(scenario, prefetch), .lo = 0, .hi = 1e6},
  {.key = "pipeline", .type = V_MAP, .sub = PIPELINE_KEYS},
  END};

int cfg_dataset_post(cfg_ctx *c, const yt_node *map, const char *path, void *base) {
  static const char *const SOURCES[] = {"csv", "files", "synthetic", "graph"};
  char sub[256];
  const scenario *s = base;
  int given = 0;
  for (int i = 0; i < 4; i++) {
    if (!yt_get(map, SOURCES[i])) continue;
    for (int j = 0; j < i; j++) {
      if (!yt_get(map, SOURCES[j])) continue;
      const yt_node *k = cfg_later_key(map, SOURCES[j], SOURCES[i]);
      cfg_join(sub, sizeof sub, path, k->text);
      return cfg_fail(c, k, sub, "give one of csv, files, synthetic and graph, not both %s and %s",
                      SOURCES[j], SOURCES[i]);
    }
    given++;
  }
  if (given == 0) {
    cfg_join(sub, sizeof sub, path, "csv");
    return cfg_fail(c, map, sub, "missing required key \"csv\" (or \"files\", \"synthetic\" or \"graph\")");
  }
  for (int i = 0; i < 2; i++) {
    const char *key = i ? "labels" : "label";
    if (!yt_get(map, key) || !yt_get(map, "synthetic")) continue;
    cfg_join(sub, sizeof sub, path, key);
    return cfg_fail(c, yt_get_key(map, key), sub, "%s names csv columns; synthetic data has none", key);
  }
  if (yt_get(map, "label") && yt_get(map, "labels")) {
    const yt_node *k = cfg_later_key(map, "label", "labels");
    cfg_join(sub, sizeof sub, path, k->text);
    return cfg_fail(c, k, sub, "give label (one column) or labels (several), not both");
  }
  if (s->auto_shard == SCN_SHARD_FILE && !yt_get(map, "files")) {
    cfg_join(sub, sizeof sub, path, "auto_shard_policy");
    return cfg_fail(c, yt_get(map, "auto_shard_policy"), sub, "file shards the input by file: "
                    "give the files as dataset.files (a list or a glob pattern), or use data");
  }
  if (s->distribute == SCN_DISTRIBUTE_FUNCTION && yt_get(map, "auto_shard_policy") &&
      s->auto_shard != SCN_SHARD_AUTO) {
    cfg_join(sub, sizeof sub, path, "auto_shard_policy");
    return cfg_fail(c, yt_get(map, "auto_shard_policy"), sub, "distribute: function never "
                    "auto-shards (each input pipeline reads its own shard through its "
                    "InputContext); remove auto_shard_policy or use distribute: dataset");
  }
  return 0;
}
