/*
** keys_inputs.c: several model inputs, as Keras's functional API has several Input layers (DLRM's
** dense features and one id column per table): model.inputs, the names layers' `inputs` read
** them by, and dataset.inputs, which CSV columns each input takes.
**
** model.inputs is a list of {name, features} or {name, ids, vocab}; a batch row holds every
** input's columns in that order (models/inputs.c), so the scenario's input_features is their
** total and the dataset is read as float columns (ids as float values, as Keras's Embedding casts
** a float input). dataset.inputs maps each input's name to its columns; without it the CSV's
** feature columns are taken in header order.
*/
#include "scenarios/config/configInt.h"

#include <string.h>

#include "models/model.h"

/* One model.inputs entry: its name and its kind's sizes, into an md_model_input. */
const key_spec CFG_MODEL_INPUT_ENTRY_KEYS[] = {
  {.key = "name", .type = V_STR, .st = S_CHARS, OFF(md_model_input, name), .len = MD_LAYER_NAME_MAX, .required = 1},
  {.key = "features", .type = V_INT, .st = S_INT, OFF(md_model_input, features), .lo = 1, .hi = 1e8},
  {.key = "ids", .type = V_INT, .st = S_INT, OFF(md_model_input, ids), .lo = 1, .hi = 1e6},
  {.key = "vocab", .type = V_INT, .st = S_INT, OFF(md_model_input, vocab), .lo = 1, .hi = 2e9},
  END};

int cfg_model_inputs_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  scenario *s = c->s;
  char sub[256], key[300];
  (void)k; (void)base;
  if (cfg_get_seq(c, v, path, "a list of model inputs such as [{name: dense, features: 13}, {name: c0, ids: 1, vocab: 100}]"))
    return -1;
  if (v->n < 1 || v->n > MD_MAX_MODEL_INPUTS)
    return cfg_fail(c, v, path, "expected 1 to %d model inputs, found %d", MD_MAX_MODEL_INPUTS, v->n);
  long long width = 0;
  for (int i = 0; i < v->n; i++) {
    md_model_input *in = &s->inputs[i];
    memset(in, 0, sizeof *in);
    base_format(sub, sizeof sub, "%s[%d]", path, i);
    if (cfg_get_map(c, v->items[i], sub, "{name: NAME, features: N} or {name: NAME, ids: N, vocab: V}") ||
        cfg_walk_map(c, v->items[i], sub, CFG_MODEL_INPUT_ENTRY_KEYS, in))
      return -1;
    const yt_node *item = v->items[i];
    if ((in->features > 0) == (in->ids > 0)) {
      cfg_join(key, sizeof key, sub, in->ids ? "ids" : "features");
      return cfg_fail(c, item, key, "give features (float columns) or ids with vocab (integer ids), one of them");
    }
    if ((in->ids > 0) != (in->vocab > 0)) {
      cfg_join(key, sizeof key, sub, "vocab");
      return cfg_fail(c, item, key, in->ids ? "missing required key \"vocab\" (ids need their vocabulary size)"
                                           : "vocab goes with ids, not with features");
    }
    if (md_inputs_find(s->inputs, i, in->name) >= 0) {
      cfg_join(key, sizeof key, sub, "name");
      return cfg_fail(c, yt_get(item, "name"), key, "two model inputs are named %s", in->name);
    }
    width += in->features + in->ids;
  }
  if (width > 1e8) return cfg_fail(c, v, path, "expected at most 1e8 columns per example, found %lld", width);
  s->ninputs = v->n;
  s->input_features = (int)width;
  return 0;
}

int cfg_model_input_index(const cfg_ctx *c, const char *name) {
  const yt_node *v = yt_path(c->root, "model.inputs");
  for (int i = 0; v != NULL && v->kind == YT_SEQ && i < v->n; i++) {
    const yt_node *n = v->items[i]->kind == YT_MAP ? yt_get(v->items[i], "name") : NULL;
    if (n != NULL && n->kind == YT_SCALAR && !strcmp(n->text, name)) return MD_MODEL_INPUT(i);
  }
  return 0;
}

/* dataset.inputs: the form only, {NAME: [column, ...], ...}; cfg_dataset_inputs_check matches it
** to model.inputs once both are read. */
int cfg_dataset_inputs_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  char sub[256], fb[80];
  (void)k; (void)base;
  if (cfg_get_map(c, v, path, "a mapping of model input names to their columns, such as {dense: [f0, f1], c0: [c0]}"))
    return -1;
  for (int i = 0; i < v->n; i++) {
    cfg_join(sub, sizeof sub, path, v->keys[i]->text);
    const yt_node *cols = v->items[i];
    if (cols->kind != YT_SEQ || cols->n < 1)
      return cfg_fail(c, cols, sub, "expected a list of column names, found %s", cfg_found(cols, fb, sizeof fb));
    for (int j = 0; j < cols->n; j++)
      if (cols->items[j]->kind != YT_SCALAR || !cols->items[j]->text[0] ||
          strlen(cols->items[j]->text) >= sizeof c->s->input_columns[0])
        return cfg_fail(c, cols->items[j], sub, "expected a column name under %d characters, found %s",
                        (int)sizeof c->s->input_columns[0], cfg_found(cols->items[j], fb, sizeof fb));
  }
  return 0;
}

int cfg_dataset_inputs_check(cfg_ctx *c) {
  scenario *s = c->s;
  const yt_node *map = yt_path(c->root, "dataset.inputs");
  char sub[256];
  if (map == NULL) return 0;
  if (s->ninputs == 0)
    return cfg_fail(c, map, "dataset.inputs", "dataset.inputs maps columns to model.inputs, which the model does not have");
  for (int i = 0; i < map->n; i++)
    if (md_inputs_find(s->inputs, s->ninputs, map->keys[i]->text) < 0) {
      cfg_join(sub, sizeof sub, "dataset.inputs", map->keys[i]->text);
      return cfg_fail(c, map->keys[i], sub, "no model input is named %s", map->keys[i]->text);
    }
  int n = 0;
  for (int k = 0; k < s->ninputs; k++) {
    const md_model_input *in = &s->inputs[k];
    const yt_node *cols = yt_get(map, in->name);
    cfg_join(sub, sizeof sub, "dataset.inputs", in->name);
    if (cols == NULL) return cfg_fail(c, map, sub, "missing model input %s: list its columns", in->name);
    if (cols->n != in->features + in->ids)
      return cfg_fail(c, cols, sub, "expected %d columns (its %s), found %d", in->features + in->ids,
                      in->ids ? "ids" : "features", cols->n);
    if (n + cols->n > SCN_MAX_INPUT_COLUMNS)
      return cfg_fail(c, cols, sub, "expected at most %d columns over every input", SCN_MAX_INPUT_COLUMNS);
    for (int j = 0; j < cols->n; j++) {
      for (int i = 0; i < n; i++)
        if (!strcmp(s->input_columns[i], cols->items[j]->text))
          return cfg_fail(c, cols->items[j], sub, "column %s is listed twice", cols->items[j]->text);
      snprintf(s->input_columns[n++], sizeof s->input_columns[0], "%s", cols->items[j]->text);
    }
  }
  s->ninput_columns = n;
  return 0;
}
