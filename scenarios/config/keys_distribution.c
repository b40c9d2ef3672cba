/*
** keys_distribution.c: strategy.distribution, Keras 3's keras.distribution on the sync
** strategies (mirrored, multi_worker_mirrored, tpu): a DeviceMesh of named axes over the
** strategy's replicas, a LayoutMap from variable paths to each dimension's mesh axis, and the
** sharding recipe (compile/shard_*.c) that lays the step out: a preset, or the one the layout
** map describes (docs/strategies.md, "Device meshes and sharding recipes").
*/
#include "scenarios/config/configInt.h"

#include <string.h>

/* Indexed by scenario.dist_preset; past the first, compile/'s recipe names. */
static const char *const PRESETS[] = {"layout_map", "data_parallel", "zero1", "zero2", "fsdp",
                                      "tensor_parallel", "sequence_parallel", "fsdp_tp", "fsdp_sp", "pipeline",
                                      "hybrid_fsdp", "hybrid_fsdp_sp", NULL};
enum { P_LAYOUT = 0, P_DATA, P_ZERO1, P_ZERO2, P_FSDP, P_TP, P_SP, P_FSDP_TP, P_FSDP_SP, P_PIPELINE, P_HYBRID,
       P_HYBRID_SP };

/* The presets that split layers over the mesh's last (model) axis, or (hybrid_fsdp) shard the
** weights over it; pipeline lays its stages there, which keys_pipeline.c checks itself. */
static int splits_model(int preset) {
  return preset == P_TP || preset == P_SP || preset == P_FSDP_TP || preset == P_FSDP_SP || preset == P_HYBRID ||
         preset == P_HYBRID_SP;
}

/* The model axis: a mesh's last of two or three (Keras's ModelParallel examples name it `model`;
** a third axis is in the middle: {data, pipeline, model}'s pipeline stages, or {data, fsdp,
** model}'s ZeRO-3 shards, hybrid_fsdp_sp's); -1 with one axis. */
static int model_index(const scenario *s) { return s->mesh_axes >= 2 ? s->mesh_axes - 1 : -1; }

/* mesh: {data: 16, model: 8}, {data: 2, pipeline: 4, model: 8} or {data: 2, fsdp: 256, model:
** 12}, DeviceMesh's axis_names and shape in order (the last axis's devices neighbours: one GPU
** VM's NVLink domain, a line of a TPU slice's torus). */
static int mesh_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  static const key_spec len = {.key = "", .type = V_INT, .lo = 1, .hi = 1048576};
  scenario *s = base;
  char sub[256];
  (void)k;
  if (cfg_get_map(c, v, path, "a mapping of axis names to lengths such as {data: 4, model: 2}")) return -1;
  if (v->n < 1 || v->n > 3)
    return cfg_fail(c, v, path, "expected 1 to 3 axes (the batch's first, the model's last, and between them "
                    "a pipeline axis of stages or an fsdp axis of shards), found %d", v->n);
  for (int i = 0; i < v->n; i++) {
    long long x;
    cfg_join(sub, sizeof sub, path, v->keys[i]->text);
    if (strlen(v->keys[i]->text) >= sizeof s->mesh_names[0])
      return cfg_fail(c, v->keys[i], sub, "an axis name of at most %zu characters", sizeof s->mesh_names[0] - 1);
    if (cfg_get_int(c, &len, v->items[i], sub, &x)) return -1;
    base_format(s->mesh_names[i], sizeof s->mesh_names[i], "%s", v->keys[i]->text);
    s->mesh_shape[i] = (int)x;
  }
  s->mesh_axes = v->n;
  s->mesh_line = v->line;
  s->mesh_col = v->col;
  return 0;
}

/* layout_map: {"dense.*kernel": [null, model]}: per dimension null or an axis name (checked
** against the mesh in cfg_distribution_checks, whatever the keys' order). */
static int layout_map_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  scenario *s = base;
  char sub[256], fb[80];
  (void)k;
  if (cfg_get_map(c, v, path, "a mapping of variable-path patterns to layouts such as {\"dense.*kernel\": [null, model]}"))
    return -1;
  if (v->n > SCN_MAX_LAYOUTS) return cfg_fail(c, v, path, "expected at most %d entries, found %d", SCN_MAX_LAYOUTS, v->n);
  for (int i = 0; i < v->n; i++) {
    const yt_node *key = v->keys[i], *axes = v->items[i];
    scn_layout *l = &s->layouts[i];
    cfg_join(sub, sizeof sub, path, key->text);
    if (strlen(key->text) >= sizeof l->pattern)
      return cfg_fail(c, key, sub, "a pattern of at most %zu characters", sizeof l->pattern - 1);
    if (axes->kind != YT_SEQ || axes->n < 1 || axes->n > 4)
      return cfg_fail(c, axes, sub, "expected a layout of 1 to 4 dimensions such as [null, model], found %s",
                      cfg_found(axes, fb, sizeof fb));
    base_format(l->pattern, sizeof l->pattern, "%s", key->text);
    l->rank = axes->n;
    l->line = key->line;
    l->col = key->col;
    for (int d = 0; d < axes->n; d++) {
      const yt_node *a = axes->items[d];
      if (a->kind != YT_SCALAR)
        return cfg_fail(c, a, sub, "expected null or a mesh axis name, found %s", cfg_found(a, fb, sizeof fb));
      l->axis[d] = -1;
      l->axis_line[d] = a->line;
      l->axis_col[d] = a->col;
    }
  }
  s->nlayouts = v->n;
  return 0;
}

const key_spec CFG_DISTRIBUTION_KEYS[] = {
  {.key = "preset", .type = V_ENUM, .names = PRESETS, .st = S_INT, OFF(scenario, dist_preset),
   .doc = "the sharding recipe: data_parallel, zero1, zero2, fsdp (ZeRO-3) over every device of the mesh (its "
          "axes flattened); tensor_parallel (Megatron), sequence_parallel, fsdp_tp, fsdp_sp (fsdp_tp with "
          "sequence parallelism) over its last (model) axis, the batch over its first, and on a mesh of three "
          "axes {data, pipeline, model} tensor_parallel and sequence_parallel with pipeline stages over the "
          "middle one (Megatron-LM's TP x PP x DP); pipeline: pipeline stages over its second axis (as an axis "
          "named pipeline lays them out), each stage data parallel over the first; hybrid_fsdp: FSDP (ZeRO-3) "
          "over the last axis, data parallelism over the first (PyTorch's HYBRID_SHARD, MaxText's ici_fsdp under "
          "dcn_data: on several slices the first axis crosses DCN); hybrid_fsdp_sp: on a mesh {data, fsdp, model} "
          "fsdp_sp within each slice (Megatron's split with sequence parallelism over model, ZeRO-3 over fsdp) "
          "and data parallelism over the first axis, one slice each (PaLM's two pods; MaxText's ici_tensor x "
          "ici_fsdp under dcn_data); layout_map (the default): the one the layout map describes"},
  {.key = "mesh", .type = V_FN, .fn = mesh_fn,
   .schema = "{\"type\":\"object\",\"minProperties\":1,\"maxProperties\":3,\"additionalProperties\":{\"type\":"
             "\"integer\",\"minimum\":1},\"description\":\"keras.distribution.DeviceMesh: axis names and lengths, "
             "the batch's first, the model's last, a pipeline axis of stages (or hybrid_fsdp_sp's fsdp axis) "
             "between; their product is the strategy's replicas\"}"},
  {.key = "layout_map", .type = V_FN, .fn = layout_map_fn,
   .schema = "{\"type\":\"object\",\"additionalProperties\":{\"type\":\"array\",\"minItems\":1,\"maxItems\":4,"
             "\"items\":{\"type\":[\"string\",\"null\"]}},\"description\":\"keras.distribution.LayoutMap: a "
             "variable-path regular expression (matched whole) to each dimension's mesh axis or null\"}"},
  {.key = "pipeline", .type = V_MAP, .sub = CFG_PIPELINE_KEYS,
   .doc = "pipeline parallelism over the mesh's axis named pipeline (the last of two, the middle of "
          "{data, pipeline, model}): microbatches, schedule and the layers of each stage"},
  END};

/* hybrid_fsdp_sp's mesh: {data, fsdp, model}, the fsdp axis 2 devices or more (one is fsdp_sp
** over {data, model}), and on TPUs the data axis one slice each: it is the slice index, the
** fsdp x model devices a slice's torus (a data axis within a slice would gather nothing over DCN
** and is fsdp_sp's). */
static int hybrid_sp_checks(cfg_ctx *c, const yt_node *d) {
  scenario *s = c->s;
  const yt_node *mesh = yt_get(d, "mesh"), *at = mesh ? mesh : d;
  if (s->mesh_axes != 3 || strcmp(s->mesh_names[1], "fsdp") != 0)
    return cfg_fail(c, at, "strategy.distribution.mesh", "hybrid_fsdp_sp lays out a mesh of three axes {data, fsdp, "
                    "model} such as {data: 2, fsdp: 256, model: 12}: expected the middle axis named fsdp, found %s",
                    s->mesh_axes == 3 ? s->mesh_names[1] : s->mesh_axes == 2 ? "two axes" : "fewer axes");
  if (s->mesh_shape[1] < 2)
    return cfg_fail(c, at, "strategy.distribution.mesh", "hybrid_fsdp_sp shards the weights over the fsdp axis: "
                    "expected 2 devices or more there, found %d (use fsdp_sp over {data, model})", s->mesh_shape[1]);
  int slices = s->tpu_slices > 1 ? s->tpu_slices : 1;
  if (s->tpu_type[0] != '\0' && s->mesh_shape[0] != slices)
    return cfg_fail(c, at, "strategy.distribution.mesh", "hybrid_fsdp_sp's data axis is the slice index (each "
                    "slice's chips its fsdp x model devices, the slices joined by DCN): expected data: %d for "
                    "cluster.tpu.slices %d, found %d", slices, slices, s->mesh_shape[0]);
  return 0;
}

static int axis_named(const scenario *s, const char *name) {
  for (int a = 0; a < s->mesh_axes; a++)
    if (!strcmp(s->mesh_names[a], name)) return a;
  return -1;
}

int cfg_distribution_checks(cfg_ctx *c) {
  scenario *s = c->s;
  const yt_node *d = yt_path(c->root, "strategy.distribution");
  s->dist = d != NULL;
  if (d == NULL) return 0;
  if (s->strategy != SCN_STRATEGY_MIRRORED && s->strategy != SCN_STRATEGY_MULTI_WORKER_MIRRORED &&
      s->strategy != SCN_STRATEGY_TPU)
    return cfg_fail(c, d, "strategy.distribution", "goes with strategy kind mirrored, multi_worker_mirrored or tpu, "
                    "not %s", CFG_STRATEGIES[s->strategy]);
  if (s->spmd)
    return cfg_fail(c, d, "strategy.distribution", "lays out the replicas itself: drop strategy.spmd_xla_partitioning");
  /* a third axis is the pipeline's stages, between the batch's and the model's, or hybrid_fsdp_sp's shards */
  int hybrid_sp = s->dist_preset == P_HYBRID_SP || (s->dist_preset == P_LAYOUT && s->mesh_axes == 3 &&
                                                     !strcmp(s->mesh_names[1], "fsdp"));
  if (hybrid_sp) {
    int rc = hybrid_sp_checks(c, d);
    if (rc) return rc;
    s->dist_preset = P_HYBRID_SP;
  } else if (s->mesh_axes == 3 && strcmp(s->mesh_names[1], "pipeline") != 0) {
    return cfg_fail(c, yt_get(d, "mesh"), "strategy.distribution.mesh", "a mesh of three axes is {data, pipeline, "
                    "model}: expected the middle axis named pipeline (the stages), found %s%s", s->mesh_names[1],
                    !strcmp(s->mesh_names[1], "fsdp") ? " ({data, fsdp, model} goes with preset hybrid_fsdp_sp)" : "");
  }
  /* layout entries: each dimension's axis a mesh axis */
  const yt_node *lm = yt_get(d, "layout_map");
  int uses[3] = {0, 0, 0};
  for (int i = 0; i < s->nlayouts; i++) {
    const yt_node *axes = lm->items[i];
    char sub[256], path[200];
    base_format(path, sizeof path, "strategy.distribution.layout_map.%s", s->layouts[i].pattern);
    for (int k = 0; k < axes->n; k++) {
      const yt_node *a = axes->items[k];
      if (!strcmp(a->text, "null") || !strcmp(a->text, "~") || (!a->quoted && a->text[0] == '\0')) continue;
      int axis = axis_named(s, a->text);
      base_format(sub, sizeof sub, "%s[%d]", path, k);
      if (axis < 0) {
        char names[80] = "";
        for (int j = 0; j < s->mesh_axes; j++)
          base_format(names + strlen(names), sizeof names - strlen(names), "%s%s", j ? ", " : "", s->mesh_names[j]);
        return cfg_fail(c, a, sub, "expected null or an axis of strategy.distribution.mesh (%s), found \"%s\"",
                        s->mesh_axes ? names : "none given", a->text);
      }
      if (s->mesh_axes == 3 && axis == 1 && !hybrid_sp)
        return cfg_fail(c, a, sub, "the mesh's middle axis, %s, holds pipeline stages, not shards: expected null, "
                        "%s or %s", a->text, s->mesh_names[0], s->mesh_names[2]);
      s->layouts[i].axis[k] = axis;
      uses[axis] = 1;
    }
  }
  int mi = model_index(s), model = mi > 0 ? s->mesh_shape[mi] : 1;
  if (s->dist_preset == P_LAYOUT)
    s->dist_preset = mi > 0 && uses[mi] && model > 1 ? (uses[0] ? P_FSDP_TP : P_TP) : uses[0] ? P_FSDP : P_DATA;
  const yt_node *preset = yt_get(d, "preset");
  int wants_model = splits_model(s->dist_preset);
  if (wants_model && model < 2)
    return cfg_fail(c, preset ? preset : d, "strategy.distribution.preset", "%s splits over the mesh's last "
                    "(model) axis: give strategy.distribution.mesh two axes such as {data: 2, model: 2}",
                    PRESETS[s->dist_preset]);
  /* an earlier micro-batch's pass runs the model axis's collectives (tensor parallelism's move
  ** activations); hybrid sharding's there reduce gradients, which would then run every micro-batch */
  if (s->dist_preset == P_HYBRID && s->grad_accum > 1)
    return cfg_fail(c, yt_path(c->root, "training.gradient_accumulation_steps"), "training.gradient_accumulation_steps",
                    "hybrid_fsdp with gradient accumulation is not modelled (its gradients' reduce-scatters would run "
                    "every micro-batch): drop it, or use fsdp");
  if (s->dist_preset != P_DATA && (s->comm_bytes_per_pack > 0 || s->xla_combine_bytes >= 0))
    return cfg_fail(c, d, "strategy.distribution", "%s schedules its own collectives beside the compute: drop "
                    "strategy.%s", PRESETS[s->dist_preset],
                    s->comm_bytes_per_pack > 0 ? "communication.bytes_per_pack" : "xla_combine_threshold");
  return cfg_pipeline_checks(c, d);
}

/* A pipeline's stages are each data parallel over the first axis: compile/'s recipe for them. */
const char *scenario_sharding_recipe(const scenario *s) {
  return !s->dist ? NULL : s->dist_preset == P_PIPELINE ? PRESETS[P_DATA] : PRESETS[s->dist_preset];
}

int scenario_pipeline_preset(const scenario *s) { return s->dist && s->dist_preset == P_PIPELINE; }

/* The batch-only presets (data_parallel, zero1, zero2, fsdp) run over every device of the mesh,
** its axes flattened, as keras.distribution.DataParallel's one-axis mesh does: so a plan can
** sweep the preset on one mesh. */
int scenario_model_axis(const scenario *s) {
  return s->dist && splits_model(s->dist_preset) && model_index(s) > 0 ? s->mesh_shape[model_index(s)] : 1;
}

int scenario_fsdp_axis(const scenario *s) { return s->dist && s->dist_preset == P_HYBRID_SP ? s->mesh_shape[1] : 1; }
