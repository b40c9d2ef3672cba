/*
** keys_training.c: the training section: steps or epochs, loss reduction, compile, checkpoints, restart.
*/
#include "scenarios/config/configInt.h"

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
const key_spec CFG_TRAINING_KEYS[] = {
  {.key = "steps", .type = V_INT, .st = S_LONG, OFF(scenario, steps), .lo = 1, .hi = 1e7},
  {.key = "epochs", .type = V_INT, .st = S_LONG, OFF(scenario, epochs), .lo = 1, .hi = 1e6},
  {.key = "loss_reduction", .type = V_ENUM, .names = REDUCTIONS, .st = S_INT, OFF(scenario, loss_reduction)},
  {.key = "jit_compile", .type = V_BOOL, .st = S_INT, OFF(scenario, jit_compile)},
  {.key = "rematerialize", .doc = "keep only each layer's output for the backward, recomputing the rest (tf.recompute_grad)", .type = V_BOOL, .st = S_INT, OFF(scenario, rematerialize)},
  {.key = "fast_forward", .doc = "skip steps proven to repeat the last one exactly (same outputs, less wall time)", .type = V_BOOL, .st = S_INT, OFF(scenario, fast_forward)},
  {.key = "compile", .type = V_MAP, .sub = COMPILE_KEYS, .post = compile_post},
  {.key = "checkpoint", .type = V_MAP, .sub = CHECKPOINT_KEYS},
  {.key = "restart", .type = V_MAP, .sub = RESTART_KEYS},
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
