/*
** keys_training.c: the training section: steps or epochs, loss reduction, compile, checkpoints, restart.
*/
#include "scenarios/config/configInt.h"

#include <string.h>

static const char *const REDUCTIONS[] = {"sum", "per_replica_mean", "global_batch", NULL};
const char *const CFG_MODES[] = {"fit", "evaluate", "predict", NULL};

static const key_spec CHECKPOINT_KEYS[] = {
  {.key = "every_steps", .type = V_INT, .st = S_LONG, OFF(scenario, ckpt_every), .lo = 1, .hi = 1e12, .required = 1},
  {.key = "max_to_keep", .type = V_INT, .st = S_LONG, OFF(scenario, ckpt_max_to_keep), .lo = 1, .hi = 1e6},
  {.key = "bandwidth", .type = V_UNIT, .unit = UNIT_BANDWIDTH, .st = S_DOUBLE, OFF(scenario, ckpt_bytes_per_s), .lo_open = 1},
  {.key = "async", .type = V_BOOL, .st = S_INT, OFF(scenario, ckpt_async)},
  END};
static const key_spec RESTART_KEYS[] = {
  {.key = "delay", .type = V_UNIT, .unit = UNIT_DURATION, .st = S_DOUBLE, OFF(scenario, restart_delay_s), .hi = 86400},
  END};
static const key_spec COMPILE_KEYS[] = {
  {.key = "time", .type = V_UNIT, .unit = UNIT_DURATION, .hi = 86400, .st = S_DOUBLE, OFF(scenario, compile_time_s)},
  {.key = "base", .type = V_UNIT, .unit = UNIT_DURATION, .hi = 3600, .st = S_DOUBLE, OFF(scenario, compile_base_s)},
  {.key = "per_op", .type = V_UNIT, .unit = UNIT_DURATION, .hi = 3600, .st = S_DOUBLE, OFF(scenario, compile_per_op_s)},
  {.key = "fusion", .type = V_BOOL, .st = S_INT, OFF(scenario, xla_fusion),
   .doc = "XLA's fusion of the compiled step (output, input, loop and multi-output fusion; on TPUs products with their operands' ops): ops join their producer's kernel and pass their tensors without reading them back; default true wherever XLA compiles the step (a TPU, or jit_compile), false for the unfused step (docs/machine.md, Compile layer)"},
  END};
static int compile_post(cfg_ctx *c, const yt_node *map, const char *path, void *base) {
  char sub[256];
  (void)base;
  const char *model = yt_get(map, "base") ? "base" : "per_op";
  if (!yt_get(map, "time") || !yt_get(map, model)) return 0;
  const yt_node *k = cfg_later_key(map, "time", model);
  cfg_join(sub, sizeof sub, path, k->text);
  return cfg_fail(c, k, sub, "give either time (the whole compile) or base and per_op (the model), not both");
}
/* metrics: Keras names, each once; loss compatibility is checked with the model (scenario.c). */
static int metrics_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  char sub[256], names[400] = "", fb[80];
  scenario *s = c->s;
  (void)k; (void)base;
  for (int i = 0; i < MD_METRIC_KIND_COUNT; i++)
    base_format(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? " | " : "", md_metric_name((md_metric_kind)i));
  if (cfg_get_seq(c, v, path, "a list of Keras metric names such as [accuracy]")) return -1;
  for (int i = 0; i < v->n; i++) {
    const yt_node *item = v->items[i];
    int kind = -1;
    base_format(sub, sizeof sub, "%s[%d]", path, i);
    for (int j = 0; item->kind == YT_SCALAR && j < MD_METRIC_KIND_COUNT; j++)
      if (!strcmp(item->text, md_metric_name((md_metric_kind)j))) kind = j;
    if (kind < 0) return cfg_fail(c, item, sub, "expected one of %s, found %s", names, cfg_found(item, fb, sizeof fb));
    for (int j = 0; j < s->nmetrics; j++)
      if ((int)s->metrics[j] == kind) return cfg_fail(c, item, sub, "%s is listed twice", item->text);
    s->metrics[s->nmetrics++] = (md_metric_kind)kind;
  }
  return 0;
}

/* validation_freq: an int (every N epochs) or a list of epochs, as Keras's _should_eval reads it. */
static int validation_freq_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  static const key_spec EPOCH = {.key = "validation_freq", .type = V_INT, .lo = 1, .hi = 1e6};
  char sub[256];
  long long n;
  scenario *s = c->s;
  (void)k; (void)base;
  if (v->kind == YT_SCALAR) {
    if (cfg_get_int(c, &EPOCH, v, path, &n)) return -1;
    s->validation_freq = (int)n;
    return 0;
  }
  if (cfg_get_seq(c, v, path, "an int (every N epochs) or a list of epochs such as [1, 5, 10]")) return -1;
  if (v->n == 0 || v->n > SCN_MAX_VALIDATION_AT)
    return cfg_fail(c, v, path, "expected 1 to %d epochs, found %d", SCN_MAX_VALIDATION_AT, v->n);
  for (int i = 0; i < v->n; i++) {
    base_format(sub, sizeof sub, "%s[%d]", path, i);
    if (cfg_get_int(c, &EPOCH, v->items[i], sub, &n)) return -1;
    s->validation_at[s->nvalidation_at++] = (long)n;
  }
  return 0;
}

/* pss_evaluation_shards: a count, or "auto" (-1: tf_keras's heuristic, 5 shards per worker). */
static int pss_shards_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  static const key_spec SHARDS = {.key = "pss_evaluation_shards", .type = V_INT, .lo = 1, .hi = 1e6};
  long long n;
  (void)k; (void)base;
  if (v->kind == YT_SCALAR && !strcmp(v->text, "auto")) {
    c->s->pss_shards = -1;
    return 0;
  }
  if (cfg_get_int(c, &SHARDS, v, path, &n)) return -1;
  c->s->pss_shards = (int)n;
  return 0;
}

/* validation_data: the held-out rows as a CSV with the dataset's columns, as Keras's
** validation_data=(x_val, y_val) arrays. */
static const key_spec VALIDATION_DATA_KEYS[] = {
  {.key = "csv", .type = V_PATH, .st = S_CHARS, OFF(scenario, validation_csv), .len = SCN_PATH_MAX, .required = 1,
   .doc = "a CSV of validation rows with the same columns as the dataset's"},
  END};

const key_spec CFG_TRAINING_KEYS[] = {
  {.key = "steps", .type = V_INT, .st = S_LONG, OFF(scenario, steps), .lo = 1, .hi = 1e7},
  {.key = "epochs", .type = V_INT, .st = S_LONG, OFF(scenario, epochs), .lo = 1, .hi = 1e6},
  {.key = "steps_per_epoch", .type = V_INT, .st = S_LONG, OFF(scenario, steps_per_epoch), .lo = 1, .hi = 1e7,
   .doc = "Keras fit's steps_per_epoch, with epochs under parameter_server (required there, as TF's fit requires it)"},
  {.key = "loss_reduction", .type = V_ENUM, .names = REDUCTIONS, .st = S_INT, OFF(scenario, loss_reduction)},
  {.key = "jit_compile", .type = V_BOOL, .st = S_INT, OFF(scenario, jit_compile)},
  {.key = "steps_per_execution", .type = V_INT, .st = S_INT, OFF(scenario, steps_per_execution), .lo = 1, .hi = 1e9,
   .doc = "Keras compile's steps_per_execution: steps run by one tf.function launch (one host round trip on a TPU)"},
  {.key = "metrics", .type = V_FN, .fn = metrics_fn,
   .schema = "{\"type\":\"array\",\"items\":{\"enum\":[\"accuracy\",\"sparse_categorical_accuracy\",\"categorical_accuracy\",\"binary_accuracy\",\"top_k_categorical_accuracy\",\"sparse_top_k_categorical_accuracy\",\"mean_squared_error\",\"mean_absolute_error\",\"binary_crossentropy\",\"categorical_crossentropy\",\"sparse_categorical_crossentropy\",\"auc\"]},\"description\":\"Keras compiled metrics, each a metrics.csv column (docs/scenario-format.md)\"}"},
  {.key = "validation_split", .type = V_NUM, .st = S_DOUBLE, OFF(scenario, validation_split), .lo = 0, .hi = 1,
   .lo_open = 1, .hi_open = 1,
   .doc = "Keras fit's validation_split: the last fraction of the dataset's rows (before any shuffle) is held out and evaluated after each epoch (validation_freq)"},
  {.key = "validation_data", .type = V_MAP, .sub = VALIDATION_DATA_KEYS,
   .doc = "Keras fit's validation_data: rows evaluated after each epoch (validation_freq)"},
  {.key = "validation_steps", .type = V_INT, .st = S_LONG, OFF(scenario, validation_steps), .lo = 1, .hi = 1e7,
   .doc = "batches per evaluation (default: one pass over the validation rows)"},
  {.key = "validation_batch_size", .type = V_INT, .st = S_INT, OFF(scenario, validation_batch_size), .lo = 1, .hi = 1e9,
   .doc = "global batch of the evaluation (default dataset.global_batch)"},
  {.key = "validation_freq", .type = V_FN, .fn = validation_freq_fn,
   .schema = "{\"oneOf\":[{\"type\":\"integer\",\"minimum\":1},{\"type\":\"array\",\"items\":{\"type\":\"integer\",\"minimum\":1}}],\"description\":\"evaluate every N epochs, or after the listed (1-based) epochs, as Keras fit's validation_freq\"}"},
  {.key = "rematerialize", .doc = "keep only each layer's output for the backward, recomputing the rest (tf.recompute_grad)", .type = V_BOOL, .st = S_INT, OFF(scenario, rematerialize)},
  {.key = "rematerialize_blocks", .doc = "keep only each block's output (a layer no later layer reads past) and recompute the block before its backward (tf.recompute_grad around each transformer block; MaxText's remat_policy full)", .type = V_BOOL, .st = S_INT, OFF(scenario, remat_blocks)},
  {.key = "gradient_accumulation_steps", .type = V_INT, .st = S_INT, OFF(scenario, grad_accum), .lo = 1, .hi = 65536,
   .doc = "micro-batches per step (Keras 3's optimizer gradient_accumulation_steps): each replica runs its share of the global batch as this many forward and backward passes, sums their gradients, all-reduces once and applies once"},
  {.key = "fast_forward", .doc = "skip steps (parameter_server: closures) proven to repeat an earlier period exactly (same outputs, less wall time)", .type = V_BOOL, .st = S_INT, OFF(scenario, fast_forward)},
  {.key = "compile", .type = V_MAP, .sub = COMPILE_KEYS, .post = compile_post},
  {.key = "checkpoint", .type = V_MAP, .sub = CHECKPOINT_KEYS},
  {.key = "restart", .type = V_MAP, .sub = RESTART_KEYS},
  {.key = "pss_evaluation_shards", .type = V_FN, .fn = pss_shards_fn,
   .schema = "{\"oneOf\":[{\"type\":\"integer\",\"minimum\":1},{\"enum\":[\"auto\"]}],\"description\":\"parameter_server fit: Keras 2 compile's pss_evaluation_shards, the shards of its exact evaluation (auto: 5 per worker)\"}"},
  {.key = "callbacks", .type = V_FN, .fn = cfg_callbacks_fn, .sub = CFG_CALLBACKS,
   .schema = "{\"type\":\"array\",\"items\":{\"anyOf\":[\"$one\",{\"enum\":[\"backup_and_restore\",\"model_checkpoint\","
             "\"early_stopping\",\"terminate_on_nan\",\"tensorboard\"]}]},\"description\":\"Keras callbacks, each "
             "{NAME: {ARGS}} or NAME (docs/scenario-format.md, Callbacks)\"}"},
  END};

/* Validation runs at epochs' ends: it needs epochs and one source of rows; the rest needs it. */
static int validation_post(cfg_ctx *c, const yt_node *map, const char *path) {
  static const char *const NEEDING[] = {"validation_steps", "validation_batch_size", "validation_freq"};
  char sub[256];
  const yt_node *split = yt_get(map, "validation_split"), *data = yt_get(map, "validation_data");
  if (split && data) {
    const yt_node *k = cfg_later_key(map, "validation_split", "validation_data");
    cfg_join(sub, sizeof sub, path, k->text);
    return cfg_fail(c, k, sub, "give either validation_split or validation_data, not both");
  }
  const yt_node *source = split ? split : data;
  if (source && !yt_get(map, "epochs")) {
    cfg_join(sub, sizeof sub, path, split ? "validation_split" : "validation_data");
    return cfg_fail(c, source, sub, "validation runs after each epoch: give training.epochs, not steps");
  }
  for (size_t i = 0; !source && i < sizeof NEEDING / sizeof *NEEDING; i++) {
    const yt_node *k = yt_get(map, NEEDING[i]);
    cfg_join(sub, sizeof sub, path, NEEDING[i]);
    if (k) return cfg_fail(c, k, sub, "has no effect without validation_split or validation_data");
  }
  return 0;
}

/* mode evaluate or predict: one pass over the dataset, or `steps` batches; no epochs, no
** validation (there is no fit to validate). */
static int evaluate_post(cfg_ctx *c, const yt_node *map, const char *path, const char *mode) {
  static const char *const FIT_ONLY[] = {"epochs", "steps_per_epoch", "validation_split", "validation_data", "validation_steps",
                                         "validation_batch_size", "validation_freq", "callbacks"};
  char sub[256];
  for (size_t i = 0; i < sizeof FIT_ONLY / sizeof *FIT_ONLY; i++) {
    const yt_node *k = yt_get_key(map, FIT_ONLY[i]);
    cfg_join(sub, sizeof sub, path, FIT_ONLY[i]);
    if (k) return cfg_fail(c, k, sub, "goes with mode fit; mode %s runs one pass over the dataset (or steps batches)", mode);
  }
  return 0;
}

int cfg_training_post(cfg_ctx *c, const yt_node *map, const char *path, void *base) {
  char sub[256];
  (void)base;
  c->s->has_restart = yt_get(map, "restart") != NULL;
  const yt_node *mode = yt_get(c->root, "mode");
  if (mode && mode->kind == YT_SCALAR && strcmp(mode->text, "fit") != 0) return evaluate_post(c, map, path, mode->text);
  if (yt_get(map, "steps") && yt_get(map, "epochs")) {
    const yt_node *k = cfg_later_key(map, "steps", "epochs");
    cfg_join(sub, sizeof sub, path, k->text);
    return cfg_fail(c, k, sub, "give either steps or epochs, not both");
  }
  if (!yt_get(map, "steps") && !yt_get(map, "epochs")) {
    cfg_join(sub, sizeof sub, path, "steps");
    return cfg_fail(c, map, sub, "missing required key \"steps\" (or \"epochs\")");
  }
  return validation_post(c, map, path);
}

int cfg_accumulation_checks(cfg_ctx *c) {
  scenario *s = c->s;
  const yt_node *key = yt_path(c->root, "training.gradient_accumulation_steps");
  if (!key || s->grad_accum <= 1) return 0;
  if (s->strategy == SCN_STRATEGY_PARAMETER_SERVER)
    return cfg_fail(c, key, "training.gradient_accumulation_steps", "accumulates gradients before a sync "
                    "strategy's all-reduce: parameter_server workers push every step's gradients");
  if (s->global_batch % s->grad_accum != 0)
    return cfg_fail(c, key, "training.gradient_accumulation_steps", "expected a divisor of dataset.global_batch "
                    "(%d), so every micro-batch is global_batch / N examples, found %d", s->global_batch,
                    s->grad_accum);
  s->optimizer.accumulation_steps = s->grad_accum;
  return 0;
}

int cfg_validation_checks(cfg_ctx *c) {
  const scenario *s = c->s;
  const yt_node *split = yt_path(c->root, "training.validation_split"),
                *data = yt_path(c->root, "training.validation_data");
  const yt_node *key = split ? split : data;
  const char *path = split ? "training.validation_split" : "training.validation_data";
  if (s->mode != SCN_RUN_FIT) {
    key = yt_get(c->root, "mode");
    path = "mode";
    if (s->strategy == SCN_STRATEGY_PARAMETER_SERVER || s->dist || s->nfaults > 0)
      return cfg_fail(c, key, path, "%s runs data-parallel replicas of a sync strategy without faults: not with %s",
                      CFG_MODES[s->mode], s->nfaults > 0 ? "faults" : s->dist ? "strategy.distribution" : "parameter_server");
    return 0;
  }
  if (!key) return 0;
  if (s->dist)
    return cfg_fail(c, key, path, "validation runs data-parallel replicas' forward passes: not with "
                    "strategy.distribution's sharded layouts");
  if (split && (s->nfiles > 0 || s->graph_nodes_csv[0] != '\0'))
    return cfg_fail(c, key, path, "splits one table's rows (dataset.csv or dataset.synthetic): give "
                    "validation_data for dataset.%s", s->nfiles > 0 ? "files" : "graph");
  return 0;
}

/* Keras 2's fit under ParameterServerStrategy (scenarios/programs/ps_fit.h) reads its dataset
** through a DatasetCreator, whose adapter cannot count an epoch: "steps_per_epoch ... must be
** provided" (data_adapter.py's DatasetCreatorAdapter), and the tutorial calls it required. The
** sync strategies' epoch is one pass over the dataset (docs/scenario-format.md's batching rule),
** so nothing else takes it. Its validation is exact evaluation, over pss_evaluation_shards. */
int cfg_ps_fit_checks(cfg_ctx *c) {
  const scenario *s = c->s;
  const yt_node *spe = yt_path(c->root, "training.steps_per_epoch");
  const yt_node *shards = yt_path(c->root, "training.pss_evaluation_shards");
  const yt_node *steps = yt_path(c->root, "training.validation_steps");
  int ps = s->strategy == SCN_STRATEGY_PARAMETER_SERVER;
  int validates = s->validation_split > 0 || s->validation_csv[0] != '\0';
  if (shards && !ps)
    return cfg_fail(c, shards, "training.pss_evaluation_shards", "goes with strategy kind parameter_server, not %s",
                    CFG_STRATEGIES[s->strategy]);
  if (shards && !validates)
    return cfg_fail(c, shards, "training.pss_evaluation_shards", "has no effect without validation_split or "
                    "validation_data");
  /* tf_keras's fit: "`validation_split` is only supported for Tensors or NumPy arrays", and
  ** ParameterServerStrategy's fit takes a dataset (or DatasetCreator) only. */
  if (ps && s->epochs > 0 && s->validation_split > 0)
    return cfg_fail(c, yt_path(c->root, "training.validation_split"), "training.validation_split",
                    "ValueError: validation_split is only supported for Tensors or NumPy arrays, and "
                    "Model.fit under ParameterServerStrategy reads a dataset: give validation_data");
  /* Without shards TF's fit evaluates validation_steps batches from each worker's own copy of
  ** the data, with no visitation guarantee: not modelled. */
  if (ps && validates && !shards)
    return cfg_fail(c, yt_path(c->root, "training.validation_data"), "training.pss_evaluation_shards", "missing: parameter_server's fit validates by Keras 2's exact "
                    "evaluation here: give pss_evaluation_shards (a count, or auto)");
  if (ps && shards && steps)
    return cfg_fail(c, steps, "training.validation_steps", "has no effect with pss_evaluation_shards: each shard is "
                    "read to its end, every validation batch once (Keras's exact evaluation)");
  if (spe && !ps)
    return cfg_fail(c, spe, "training.steps_per_epoch", "goes with strategy kind parameter_server (its fit "
                    "cannot count an epoch of a per-worker dataset); a %s epoch is one pass over the dataset",
                    CFG_STRATEGIES[s->strategy]);
  if (spe && s->epochs == 0)
    return cfg_fail(c, spe, "training.steps_per_epoch", "goes with training.epochs; training.steps is one "
                    "epoch of that many steps already");
  if (ps && s->epochs > 0 && !spe)
    return cfg_fail(c, yt_get_key(yt_get(c->root, "training"), "epochs"), "training.steps_per_epoch",
                    "missing: Model.fit under ParameterServerStrategy needs steps_per_epoch with epochs "
                    "(its per-worker dataset, repeated, has no end to count an epoch by)");
  return 0;
}
