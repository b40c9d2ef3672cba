/*
** keys_training.c: the training section: steps or epochs, loss reduction, compile, checkpoints, restart.
*/
#include "scenarios/config/configInt.h"

#include <string.h>

static const char *const REDUCTIONS[] = {"sum", "per_replica_mean", "global_batch", NULL};

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
   .doc = "XLA's fusion of the compiled step: elementwise ops join their producer's kernel and pass their tensors without writing them (docs/machine.md, Compile layer)"},
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

const key_spec CFG_TRAINING_KEYS[] = {
  {.key = "steps", .type = V_INT, .st = S_LONG, OFF(scenario, steps), .lo = 1, .hi = 1e7},
  {.key = "epochs", .type = V_INT, .st = S_LONG, OFF(scenario, epochs), .lo = 1, .hi = 1e6},
  {.key = "loss_reduction", .type = V_ENUM, .names = REDUCTIONS, .st = S_INT, OFF(scenario, loss_reduction)},
  {.key = "jit_compile", .type = V_BOOL, .st = S_INT, OFF(scenario, jit_compile)},
  {.key = "steps_per_execution", .type = V_INT, .st = S_INT, OFF(scenario, steps_per_execution), .lo = 1, .hi = 1e9,
   .doc = "Keras compile's steps_per_execution: steps run by one tf.function launch (one host round trip on a TPU)"},
  {.key = "metrics", .type = V_FN, .fn = metrics_fn,
   .schema = "{\"type\":\"array\",\"items\":{\"enum\":[\"accuracy\",\"sparse_categorical_accuracy\",\"categorical_accuracy\",\"binary_accuracy\",\"top_k_categorical_accuracy\",\"sparse_top_k_categorical_accuracy\"]},\"description\":\"Keras compiled metrics, each a metrics.csv column (docs/scenario-format.md)\"}"},
  {.key = "rematerialize", .doc = "keep only each layer's output for the backward, recomputing the rest (tf.recompute_grad)", .type = V_BOOL, .st = S_INT, OFF(scenario, rematerialize)},
  {.key = "rematerialize_blocks", .doc = "keep only each block's output (a layer no later layer reads past) and recompute the block before its backward (tf.recompute_grad around each transformer block; MaxText's remat_policy full)", .type = V_BOOL, .st = S_INT, OFF(scenario, remat_blocks)},
  {.key = "gradient_accumulation_steps", .type = V_INT, .st = S_INT, OFF(scenario, grad_accum), .lo = 1, .hi = 65536,
   .doc = "micro-batches per step (Keras 3's optimizer gradient_accumulation_steps): each replica runs its share of the global batch as this many forward and backward passes, sums their gradients, all-reduces once and applies once"},
  {.key = "fast_forward", .doc = "skip steps proven to repeat the last one exactly (same outputs, less wall time)", .type = V_BOOL, .st = S_INT, OFF(scenario, fast_forward)},
  {.key = "compile", .type = V_MAP, .sub = COMPILE_KEYS, .post = compile_post},
  {.key = "checkpoint", .type = V_MAP, .sub = CHECKPOINT_KEYS},
  {.key = "restart", .type = V_MAP, .sub = RESTART_KEYS},
  {.key = "callbacks", .type = V_FN, .fn = cfg_callbacks_fn, .sub = CFG_CALLBACKS,
   .schema = "{\"type\":\"array\",\"items\":{\"anyOf\":[\"$one\",{\"enum\":[\"backup_and_restore\",\"model_checkpoint\","
             "\"early_stopping\",\"terminate_on_nan\",\"tensorboard\"]}]},\"description\":\"Keras callbacks, each "
             "{NAME: {ARGS}} or NAME (docs/scenario-format.md, Callbacks)\"}"},
  END};

int cfg_training_post(cfg_ctx *c, const yt_node *map, const char *path, void *base) {
  char sub[256];
  (void)base;
  c->s->has_restart = yt_get(map, "restart") != NULL;
  if (yt_get(map, "steps") && yt_get(map, "epochs")) {
    const yt_node *k = cfg_later_key(map, "steps", "epochs");
    cfg_join(sub, sizeof sub, path, k->text);
    return cfg_fail(c, k, sub, "give either steps or epochs, not both");
  }
  if (!yt_get(map, "steps") && !yt_get(map, "epochs")) {
    cfg_join(sub, sizeof sub, path, "steps");
    return cfg_fail(c, map, sub, "missing required key \"steps\" (or \"epochs\")");
  }
  return 0;
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
