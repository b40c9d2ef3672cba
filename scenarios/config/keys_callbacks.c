/*
** keys_callbacks.c: training.callbacks, Keras callbacks by name with keras.callbacks' arguments
** (cfg_callbacks_fn), and their checks against the rest of the scenario once every key is read
** (cfg_callbacks_checks): a monitor must name a value of the epoch's logs.
*/
#include "scenarios/config/configInt.h"

#include <stdlib.h>
#include <string.h>

static const char *const MODES[] = {"auto", "min", "max", NULL};

/* A frequency: "epoch" (0), `batch` (1) where Keras takes it, or a count of batches. */
static int frequency(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base, int batch) {
  char fb[80];
  long *out = (long *)((char *)base + k->off);
  if (v->kind == YT_SCALAR && !strcmp(v->text, "epoch")) return *out = 0, 0;
  if (v->kind == YT_SCALAR && batch && !strcmp(v->text, "batch")) return *out = 1, 0;
  if (v->kind == YT_SCALAR && cfg_is_int_text(v->text)) {
    long long n = strtoll(v->text, NULL, 10);
    if (n >= 1 && n <= 1000000000LL) return *out = (long)n, 0;
  }
  return cfg_fail(c, v, path, "expected epoch%s or a number of batches from 1 to 1e9, found %s",
                  batch ? ", batch" : "", cfg_found(v, fb, sizeof fb));
}

/* save_freq: epoch or N batches. */
static int save_freq_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  return frequency(c, k, v, path, base, 0);
}

/* TensorBoard's update_freq: epoch, batch or N. */
static int update_freq_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  return frequency(c, k, v, path, base, 1);
}

/* monitor: a name; cfg_callbacks_checks resolves it. */
static int monitor_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  scn_monitor *m = (scn_monitor *)((char *)base + k->off);
  const char *name;
  if (cfg_get_str(c, v, path, &name)) return -1;
  if (strlen(name) >= sizeof m->name)
    return cfg_fail(c, v, path, "expected a name of at most %zu characters", sizeof m->name - 1);
  snprintf(m->name, sizeof m->name, "%s", name);
  return 0;
}

#define FREQ_SCHEMA(what) "{\"oneOf\":[{\"const\":\"epoch\"},{\"type\":\"integer\",\"minimum\":1}],\"description\":\"" what "\"}"
#define MONITOR(field) {.key = "monitor", .type = V_FN, .fn = monitor_fn, OFF(scenario, field), \
   .schema = "{\"type\":\"string\",\"description\":\"a key of the epoch's logs: loss or a compiled metric\"}"}, \
  {.key = "mode", .type = V_ENUM, .names = MODES, .st = S_INT, .off = (long)offsetof(scenario, field) + \
   (long)offsetof(scn_monitor, mode)}

static const key_spec BACKUP_KEYS[] = {
  {.key = "save_freq", .type = V_FN, .fn = save_freq_fn, OFF(scenario, cb.backup_every),
   .schema = FREQ_SCHEMA("back up at each epoch's end, or every N batches (counted at each execution's end)")},
  {.key = "delete_checkpoint", .type = V_BOOL, .st = S_INT, OFF(scenario, cb.backup_delete)},
  {.key = "double_checkpoint", .type = V_BOOL, .st = S_INT, OFF(scenario, cb.backup_double),
   .doc = "copy the previous backup before writing the new one (its bytes read and written again)"},
  END};
static const key_spec CHECKPOINT_KEYS[] = {
  {.key = "save_freq", .type = V_FN, .fn = save_freq_fn, OFF(scenario, cb.checkpoint_every),
   .schema = FREQ_SCHEMA("save at each epoch's end, or every N batches (counted at each execution's end)")},
  {.key = "save_best_only", .type = V_BOOL, .st = S_INT, OFF(scenario, cb.checkpoint_best_only)},
  MONITOR(cb.checkpoint_monitor),
  END};
static const key_spec EARLY_KEYS[] = {
  MONITOR(cb.early_monitor),
  {.key = "min_delta", .type = V_NUM, .st = S_DOUBLE, OFF(scenario, cb.early_min_delta), .lo = -1e300},
  {.key = "patience", .type = V_INT, .st = S_LONG, OFF(scenario, cb.early_patience), .lo = 0, .hi = 1e9},
  {.key = "baseline", .type = V_NUM, .st = S_DOUBLE, OFF(scenario, cb.early_baseline), .lo = -1e300},
  {.key = "start_from_epoch", .type = V_INT, .st = S_LONG, OFF(scenario, cb.early_start_from_epoch), .lo = 0, .hi = 1e9},
  {.key = "restore_best_weights", .type = V_BOOL, .st = S_INT, OFF(scenario, cb.early_restore_best)},
  END};
static const key_spec NAN_KEYS[] = {
  {.key = "raise_error", .type = V_BOOL, .st = S_INT, OFF(scenario, cb.nan_raise),
   .doc = "raise RuntimeError at the NaN: the job fails (exit 3) without ending the epoch or the fit"},
  END};
static const key_spec TENSORBOARD_KEYS[] = {
  {.key = "update_freq", .type = V_FN, .fn = update_freq_fn, OFF(scenario, cb.tb_update_freq),
   .schema = "{\"oneOf\":[{\"enum\":[\"epoch\",\"batch\"]},{\"type\":\"integer\",\"minimum\":1}],\"description\":"
             "\"epoch scalars only, or batch_* scalars every N executions too (batch: every one)\"}"},
  END};

/* The callbacks by Keras's names in snake case; `flag` is the field set when one is given. */
const key_spec CFG_CALLBACKS[] = {
  {.key = "backup_and_restore", .type = V_MAP, .sub = BACKUP_KEYS, OFF(scenario, cb.backup),
   .doc = "keras.callbacks.BackupAndRestore: a restarted job resumes from the last backup"},
  {.key = "model_checkpoint", .type = V_MAP, .sub = CHECKPOINT_KEYS, OFF(scenario, cb.checkpoint),
   .doc = "keras.callbacks.ModelCheckpoint: saves listed in checkpoints.csv"},
  {.key = "early_stopping", .type = V_MAP, .sub = EARLY_KEYS, OFF(scenario, cb.early),
   .doc = "keras.callbacks.EarlyStopping"},
  {.key = "terminate_on_nan", .type = V_MAP, .sub = NAN_KEYS, OFF(scenario, cb.terminate_on_nan),
   .doc = "keras.callbacks.TerminateOnNaN: stops at the first NaN or infinite loss"},
  {.key = "tensorboard", .type = V_MAP, .sub = TENSORBOARD_KEYS, OFF(scenario, cb.tensorboard),
   .doc = "keras.callbacks.TensorBoard: event files under logs/train/"},
  END};

/* Keras's defaults for a callback's arguments that are not zero. */
static void defaults(scenario *s, const char *name) {
  if (!strcmp(name, "backup_and_restore")) s->cb.backup_delete = 1;
  if (!strcmp(name, "model_checkpoint")) snprintf(s->cb.checkpoint_monitor.name, sizeof s->cb.checkpoint_monitor.name, "val_loss");
  if (!strcmp(name, "early_stopping")) snprintf(s->cb.early_monitor.name, sizeof s->cb.early_monitor.name, "val_loss");
}

int cfg_callbacks_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  char sub[256], fb[80];
  scenario *s = c->s;
  (void)k; (void)base;
  if (cfg_get_seq(c, v, path, "a list of Keras callbacks such as [{backup_and_restore: {save_freq: epoch}}]")) return -1;
  for (int i = 0; i < v->n; i++) {
    const yt_node *item = v->items[i];
    base_format(sub, sizeof sub, "%s[%d]", path, i);
    /* A bare name is the callback with Keras's defaults. */
    const char *name = item->kind == YT_SCALAR ? item->text : item->kind == YT_MAP && item->n == 1 ? item->keys[0]->text : NULL;
    const key_spec *cb = CFG_CALLBACKS;
    while (name && cb->key && strcmp(cb->key, name)) cb++;
    if (name == NULL || cb->key == NULL)
      return cfg_fail(c, item, sub, "expected one callback as {NAME: {...}} or NAME, NAME one of backup_and_restore, "
                      "model_checkpoint, early_stopping, terminate_on_nan, tensorboard, found %s",
                      name ? name : item->kind == YT_MAP ? "a mapping with several keys" : cfg_found(item, fb, sizeof fb));
    int *given = (int *)((char *)s + cb->off);
    if (*given) return cfg_fail(c, item, sub, "%s is listed twice", name);
    *given = 1;
    defaults(s, name);
    if (item->kind == YT_MAP) {
      char args[300];
      cfg_join(args, sizeof args, sub, name);
      if (cfg_get_map(c, item->items[0], args, "a mapping of the callback's arguments ({} for none)") ||
          cfg_walk_map(c, item->items[0], args, cb->sub, s))
        return -1;
    }
    if (item->kind == YT_MAP && yt_get(item->items[0], "baseline")) s->cb.early_has_baseline = 1;
  }
  return 0;
}

/* Where `callback`'s monitor is written, or the callback itself when it takes Keras's default;
** its path into path. */
static const yt_node *monitor_node(const cfg_ctx *c, const char *callback, char *path, size_t len) {
  const yt_node *list = yt_path(c->root, "training.callbacks"), *at = list;
  for (int i = 0; i < list->n; i++) {
    const yt_node *item = list->items[i];
    int named = item->kind == YT_SCALAR ? !strcmp(item->text, callback) : !strcmp(item->keys[0]->text, callback);
    if (!named) continue;
    base_format(path, len, "training.callbacks[%d].%s.monitor", i, callback);
    const yt_node *given = item->kind == YT_MAP ? yt_get(item->items[0], "monitor") : NULL;
    at = given ? given : item;
  }
  return at;
}

/* A monitor against the epoch's logs: loss, a compiled metric, or with validation their val_
** forms (Keras's auto mode: down for a loss, up for every accuracy and AUC, val_ or not). */
static int resolve_monitor(cfg_ctx *c, scn_monitor *m, const char *callback) {
  scenario *s = c->s;
  char path[128];
  const yt_node *at = monitor_node(c, callback, path, sizeof path);
  int validates = s->validation_split > 0 || s->validation_csv[0] != '\0';
  const char *name = !strncmp(m->name, "val_", 4) ? m->name + 4 : m->name;
  char names[600] = "loss";
  m->metric = -2;
  if (!strcmp(name, "loss")) m->metric = -1;
  for (int k = 0; k < s->nmetrics; k++) {
    base_format(names + strlen(names), sizeof names - strlen(names), ", %s", md_metric_name(s->metrics[k]));
    if (!strcmp(name, md_metric_name(s->metrics[k]))) m->metric = k;
  }
  if (validates) {
    base_format(names + strlen(names), sizeof names - strlen(names), ", val_loss");
    for (int k = 0; k < s->nmetrics; k++)
      base_format(names + strlen(names), sizeof names - strlen(names), ", val_%s", md_metric_name(s->metrics[k]));
  }
  if (m->metric != -2 && name != m->name && !validates)
    return cfg_fail(c, at, path, "%s needs validation (validation_data or validation_split), which this fit "
                    "does not run: monitor one of %s", m->name, names);
  if (m->metric == -2)
    return cfg_fail(c, at, path, "expected a value of the epoch's logs (%s), found %s", names, m->name);
  return 0;
}

/* Model.fit under ParameterServerStrategy (scenarios/programs/ps_fit.h): BackupAndRestore backs
** up at the epochs' joins, as the TF tutorial's fit does; a batch count would back up while
** closures are in flight, and the other callbacks are not modelled there yet. */
static int ps_callbacks_checks(cfg_ctx *c, const yt_node *list) {
  const scenario *s = c->s;
  if (s->epochs == 0)
    return cfg_fail(c, list, "training.callbacks", "parameter_server runs callbacks in its fit only: give "
                    "training.epochs and steps_per_epoch");
  if (s->cb.checkpoint || s->cb.early || s->cb.terminate_on_nan || s->cb.tensorboard)
    return cfg_fail(c, list, "training.callbacks", "under parameter_server only backup_and_restore runs (at the "
                    "fit's epoch joins): %s is not modelled there yet", s->cb.checkpoint ? "model_checkpoint"
                    : s->cb.early ? "early_stopping" : s->cb.terminate_on_nan ? "terminate_on_nan" : "tensorboard");
  if (s->cb.backup_every > 0 || s->cb.backup_double)
    return cfg_fail(c, list, "training.callbacks", "under parameter_server backup_and_restore backs up at the "
                    "epochs' joins only: save_freq epoch, double_checkpoint false (a batch count would back up "
                    "while closures are in flight)");
  return 0;
}

int cfg_callbacks_checks(cfg_ctx *c) {
  scenario *s = c->s;
  const yt_node *list = yt_path(c->root, "training.callbacks");
  if (list == NULL) return 0;
  if (s->cb.backup && yt_path(c->root, "training.checkpoint"))
    return cfg_fail(c, yt_get_key(yt_get(c->root, "training"), "checkpoint"), "training.checkpoint",
                    "give either training.checkpoint (a custom loop's tf.train.Checkpoint) or the "
                    "backup_and_restore callback (fit's), not both: a restart reads one of them");
  if (s->strategy == SCN_STRATEGY_PARAMETER_SERVER && ps_callbacks_checks(c, list) != 0) return -1;
  if ((s->cb.early || s->cb.terminate_on_nan || (s->cb.checkpoint && s->cb.checkpoint_best_only)) && !s->numerics_full)
    return cfg_fail(c, list, "training.callbacks", "%s reads the loss or the metrics: give numerics: full",
                    s->cb.early ? "early_stopping" : s->cb.terminate_on_nan ? "terminate_on_nan"
                    : "model_checkpoint with save_best_only");
  if (s->cb.early && resolve_monitor(c, &s->cb.early_monitor, "early_stopping")) return -1;
  if (s->cb.checkpoint && s->cb.checkpoint_best_only &&
      resolve_monitor(c, &s->cb.checkpoint_monitor, "model_checkpoint"))
    return -1;
  return 0;
}
