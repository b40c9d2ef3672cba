/*
** configInt.h: what the scenario loader's files share (cfg_): the key_spec engine's types and
** calls (keyspec.c), each section's tables and handlers (keys_*.c) and the enum name tables the
** checks across sections read (scenario.c). Only scenarios/config/ includes it.
*/
#ifndef PODSIM_CONFIG_INT_H
#define PODSIM_CONFIG_INT_H

#include <stdarg.h>
#include <stddef.h>

#include "base/base.h"
#include "scenarios/config/scenario.h"
#include "scenarios/config/units.h"
#include "scenarios/config/yamltree.h"

typedef struct cfg_ctx {
  scenario *s;
  scn_error *err;
  const yt_node *root;
} cfg_ctx;

typedef enum { V_INT, V_NUM, V_BOOL, V_STR, V_PATH, V_ENUM, V_UNIT, V_MAP, V_FN } vtype;
typedef enum { S_NONE = 0, S_INT, S_LONG, S_SIZE, S_U64, S_DOUBLE, S_FLOAT, S_CHARS } stype;

typedef struct key_spec key_spec;
typedef struct variant variant;
typedef int (*key_fn)(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base);
typedef int (*post_fn)(cfg_ctx *c, const yt_node *map, const char *path, void *base);

struct key_spec {
  const char *key;
  vtype type;
  stype st;               /* how the value is stored at base + off */
  long off;               /* offset into the base struct (st != S_NONE) */
  size_t len;             /* S_CHARS: buffer size */
  double lo, hi;          /* numeric range; hi == 0 means no upper bound */
  int lo_open, hi_open;   /* exclusive bounds */
  const char *const *names; /* V_ENUM names, NULL-terminated, index = stored value */
  unit_kind unit;         /* V_UNIT */
  const key_spec *sub;    /* V_MAP: the table of the nested mapping */
  post_fn post;           /* V_MAP: checks across the nested mapping's keys, after it */
  key_fn fn;              /* V_FN: custom value handler */
  int required;
  /* For `podsim schema` (schema.c), which writes the JSON Schema of the format from these tables. */
  const char *doc;        /* what the key is, in a sentence: its description (else one made from the type) */
  const char *schema;     /* V_FN: the value's schema as JSON text, in which the string "$map" stands for
                             the mapping of map's keys, "$one" for a mapping of exactly one of sub's
                             keys (model.layers' entries), "$variants" for one of variants and
                             "$charts" for the names of report.h's charts */
  const key_spec *map;    /* V_FN: the table the handler walks a mapping value with */
  const variant *variants;/* V_FN: the mappings a value may be, selected by its kind (optimizer, faults) */
};

#define OFF(T, f) .off = (long)offsetof(T, f)
#define END {.key = NULL}

/* A mapping whose "kind" selects its table; arrays of them end with a NULL kind. */
struct variant {
  const char *kind;
  const key_spec *keys;
};
/* keyspec.c */
int cfg_fail(cfg_ctx *c, const yt_node *at, const char *path, const char *fmt, ...);
/* How a node reads in "found ...". */
const char *cfg_found(const yt_node *n, char *buf, size_t len);
void cfg_join(char *out, size_t len, const char *path, const char *key);
void cfg_list_names(const char *const *names, char *buf, size_t len);
int cfg_is_int_text(const char *t);
int cfg_get_int(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, long long *out);
int cfg_get_str(cfg_ctx *c, const yt_node *v, const char *path, const char **out);
int cfg_get_map(cfg_ctx *c, const yt_node *v, const char *path, const char *expected);
int cfg_get_seq(cfg_ctx *c, const yt_node *v, const char *path, const char *expected);
/* Resolves REL against the scenario's directory and checks the file is there. */
int cfg_resolve_file(cfg_ctx *c, const yt_node *v, const char *path, const char *rel, char *out, size_t len);
/* Checks (and stores) one value against its key_spec. */
int cfg_handle_value(cfg_ctx *c, const key_spec *k, const yt_node *v,
                        const char *path, void *base);
int cfg_walk_map(cfg_ctx *c, const yt_node *n, const char *path, const key_spec *keys, void *base);
int cfg_walk_variant(cfg_ctx *c, const yt_node *v, const char *path, const variant *vs, void *base,
                        int *which);
/* Walks a dotted key path through the tables from CFG_ROOT_KEYS: the last key matched (NULL when
** the first segment is none), and in *rest what is left (a key inside a value that is not a
** mapping of the tables: a list's entries, a custom value; or an unknown key). */
const key_spec *cfg_find_path(const char *path, const char **rest);
/* The later of two keys of MAP (for contradictions: report where the second one is). */
const yt_node *cfg_later_key(const yt_node *map, const char *a, const char *b);
/* keys_model.c: one example's shape, [h, w, c] (1 to 4 sizes in k's range, at most k->hi
** elements), into *shape and its element count into *elements. */
int cfg_example_shape(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, md_shape *shape,
                      int *elements);
/* scenario.c */
extern const key_spec CFG_ROOT_KEYS[];
/* keys_model.c: the optimizer's kinds; keys_faults.c: the faults' */
extern const variant CFG_OPTIMIZERS[];
extern const variant CFG_FAULT_KINDS[];
/* keys_cluster.c */
extern const char *const CFG_TF_JOBS[];
/* Records the task's job (scenario.tf_config_task); ps_checks refuses a worker or ps coordinator. */
int cfg_tf_config_task(cfg_ctx *c, const yt_node *task, const char *path, const int counts[4]);
extern const key_spec CFG_CLUSTER_KEYS[];
/* keys_strategy.c */
extern const char *const CFG_STRATEGIES[];
extern const char *const CFG_ALGORITHMS[];
extern const char *const CFG_IMPLEMENTATIONS[];
extern const key_spec CFG_STRATEGY_KEYS[];
/* keys_model.c */
extern const key_spec CFG_MODEL_KEYS[];
/* The model mapping: either keras (a Keras model config) or input with layers. */
int cfg_model_post(cfg_ctx *c, const yt_node *map, const char *path, void *base);
/* The Keras defaults (models/optimizer.c has md_optimizer_spec_defaults with the same figures;
** the loader keeps its own so it does not depend on the numerics layer being linked). */
void cfg_optimizer_defaults(md_optimizer_spec *o, md_optimizer_kind kind);
int cfg_optimizer_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base);
/* keys_dataset.c */
/* keys_inputs.c: model.inputs (its handler and its entries' keys), the index MD_MODEL_INPUT(k) of the model input a
** layer's `inputs` entry names (0 when none is named so), dataset.inputs' form, and its columns
** matched to model.inputs into s->input_columns (after both sections are read). */
extern const key_spec CFG_MODEL_INPUT_ENTRY_KEYS[];
int cfg_model_inputs_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base);
int cfg_model_input_index(const cfg_ctx *c, const char *name);
int cfg_dataset_inputs_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base);
int cfg_dataset_inputs_check(cfg_ctx *c);

extern const key_spec CFG_DATASET_KEYS[];
int cfg_dataset_post(cfg_ctx *c, const yt_node *map, const char *path, void *base);
/* keys_training.c */
extern const key_spec CFG_TRAINING_KEYS[];
int cfg_training_post(cfg_ctx *c, const yt_node *map, const char *path, void *base);
/* training.gradient_accumulation_steps against the rest, once every key is read: the batch
** splits into whole micro-batches, a sync strategy runs them; sets optimizer.accumulation_steps. */
int cfg_accumulation_checks(cfg_ctx *c);
/* keys_callbacks.c: training.callbacks' names (each a V_MAP of its arguments, whose off is the
** flag set when it is given), their handler, and the checks once every key is read. */
extern const key_spec CFG_CALLBACKS[];
int cfg_callbacks_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base);
int cfg_callbacks_checks(cfg_ctx *c);
/* training.validation_* and mode evaluate or predict: refused with parameter_server and
** strategy.distribution (and the modes with faults; a split with files or a graph) (keys_training.c). */
int cfg_validation_checks(cfg_ctx *c);
/* training.steps_per_epoch and pss_evaluation_shards: parameter_server's fit needs the first with
** epochs, as TF's does, and the second with validation_data; nothing else takes them
** (keys_training.c). */
int cfg_ps_fit_checks(cfg_ctx *c);
/* mode's names, scn_run_mode order (keys_training.c). */
extern const char *const CFG_MODES[];
/* keys_workload.c */
extern const key_spec CFG_WORKLOAD_KEYS[];
/* prices.c: sets scenario.price_per_hour from the price table, once the cluster is known. */
int cfg_prices(cfg_ctx *c);
/* keys_outputs.c */
extern const key_spec CFG_OUTPUTS_KEYS[];
/* keys_faults.c */
int cfg_faults_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base);
/* keys_expect.c */
extern const key_spec CFG_EXPECT_KEYS[];
int cfg_expect_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base);
/* keys_sweep.c */
/* sweep: {key.path: [values]}; every path must name a key of the format (paths under a list
** such as model.layers.0.dense.units are checked when each point validates), no path may hold
** another, and the grid is bounded. The values stay in the tree: `podsim plan` sets each
** point's values there, so their errors name their own line and column. */
/* keys_distribution.c: strategy.distribution's table and its checks against the strategy. */
extern const key_spec CFG_DISTRIBUTION_KEYS[];
int cfg_distribution_checks(cfg_ctx *c);
/* keys_pipeline.c: strategy.distribution.pipeline's keys, and the checks of a pipeline axis
** against the rest of the distribution (called by cfg_distribution_checks). */
extern const key_spec CFG_PIPELINE_KEYS[];
int cfg_pipeline_checks(cfg_ctx *c, const yt_node *dist);
/* keys_distribution.c: strategy.distribution.preset is pipeline (the mesh's second axis the stages). */
int scenario_pipeline_preset(const scenario *s);
/* keys_model.c: a list of 1..max ints in k's range into out[] (*n of them). */
int cfg_int_list(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, int max, int *out,
                 int *n, const char *expected);

int cfg_sweep_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base);

#endif
