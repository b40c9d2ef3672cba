/*
** keys_pipeline.c: pipeline parallelism under strategy.distribution. The stages are the mesh's
** axis named `pipeline` (MaxText's and Megatron-LM's pipeline dimension: `mesh: {data: 2,
** pipeline: 4}`), its last, so a pipeline's stages are neighbouring devices (one GPU VM's NVLink
** domain, a line of the torus); or the middle of three, `{data: 1, pipeline: 12, model: 8}`,
** Megatron-LM's TP x PP x DP: each stage tensor parallel over the last axis (the NVLink domain),
** the stages next, the data-parallel pipelines strided over them;
** `pipeline: {microbatches, schedule, layers_per_stage}` says how
** a step runs over them (docs/strategies.md, "Pipeline parallelism"). The checks that need the
** model (stages against layers, the split's sum) are scenarios/programs/pipeline.c's.
*/
#include "scenarios/config/configInt.h"

#include <string.h>

/* Indexed by scenario.pipe_schedule: compile.h's cg_pipe_schedule. */
static const char *const SCHEDULES[] = {"gpipe", "1f1b", "interleaved", NULL};
enum { SCHED_GPIPE = 0, SCHED_1F1B, SCHED_INTERLEAVED };

static int split_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  static const key_spec count = {.key = "", .type = V_INT, .lo = 1, .hi = SCN_MAX_LAYERS};
  scenario *s = base;
  (void)k;
  s->pipe_split_line = v->line;
  s->pipe_split_col = v->col;
  return cfg_int_list(c, &count, v, path, SCN_MAX_STAGES, s->pipe_split, &s->pipe_nsplit,
                      "a list of each stage's layer count such as [3, 3, 2]");
}

const key_spec CFG_PIPELINE_KEYS[] = {
  {.key = "microbatches", .type = V_INT, .st = S_INT, OFF(scenario, pipe_micro), .lo = 1, .hi = 1048576,
   .doc = "microbatches a pipeline's batch (the global batch over the data axis) is split into each step; "
          "default: as many as stages"},
  {.key = "schedule", .type = V_ENUM, .names = SCHEDULES, .st = S_INT, OFF(scenario, pipe_schedule),
   .doc = "the order each stage runs its microbatches' passes: gpipe (every forward, then every backward), "
          "1f1b (Megatron-LM's one-forward-one-backward, the default) or interleaved (Megatron-LM's interleaved "
          "1F1B over virtual_stages model chunks a device)"},
  {.key = "virtual_stages", .type = V_INT, .st = S_INT, OFF(scenario, pipe_chunks), .lo = 1, .hi = 1024,
   .doc = "interleaved: model chunks each device holds (Megatron-LM's virtual pipeline size), the model cut "
          "into stages x virtual_stages stages, chunk c of device k being stage k + c x stages; default 2"},
  {.key = "layers_per_stage", .type = V_FN, .fn = split_fn,
   .schema = "{\"type\":\"array\",\"minItems\":1,\"items\":{\"type\":\"integer\",\"minimum\":1},\"description\":"
             "\"each stage's number of consecutive layers (torchgpipe's balance); default: balanced by the "
             "compiled step's forward and backward cost\"}"},
  END};

/* The stages' axis: the one named pipeline, or with preset pipeline the mesh's second. Where it
** belongs: the last of two axes, the middle of three. */
static int pipeline_axis(const scenario *s) {
  if (scenario_pipeline_preset(s)) return s->mesh_axes == 2 ? 1 : -1;
  for (int a = 0; a < s->mesh_axes; a++)
    if (!strcmp(s->mesh_names[a], "pipeline")) return a;
  return -1;
}

/* Whether the file sweeps strategy.distribution.preset: its pipeline mapping then waits for the
** points whose preset is pipeline. */
static int sweeps_preset(const scenario *s) {
  for (int i = 0; i < s->nsweep; i++)
    if (!strcmp(s->sweep_paths[i], "strategy.distribution.preset")) return 1;
  return 0;
}

int cfg_pipeline_checks(cfg_ctx *c, const yt_node *dist) {
  scenario *s = c->s;
  const yt_node *p = yt_get(dist, "pipeline"), *mesh = yt_get(dist, "mesh");
  int axis = pipeline_axis(s);
  if (axis < 0 && (p == NULL || sweeps_preset(s)) && !scenario_pipeline_preset(s)) return 0;
  if (axis < 0 && scenario_pipeline_preset(s))
    return cfg_fail(c, yt_get(dist, "preset"), "strategy.distribution.preset", "pipeline lays the stages over "
                    "the mesh's second axis: give strategy.distribution.mesh two axes such as {data: 2, stages: 4}");
  if (axis < 0)
    return cfg_fail(c, p, "strategy.distribution.pipeline", "needs an axis named pipeline in "
                    "strategy.distribution.mesh, its last, such as {data: 2, pipeline: 4} (or preset pipeline)");
  /* three axes: cfg_distribution_checks has the middle one named pipeline */
  if (s->mesh_axes < 3 && axis != s->mesh_axes - 1)
    return cfg_fail(c, mesh, "strategy.distribution.mesh", "the pipeline axis goes last (a pipeline's stages are "
                    "neighbouring devices), as in {data: 2, pipeline: 4}");
  const yt_node *at = p ? p : mesh;
  s->pipe_line = at->line;
  s->pipe_col = at->col;
  s->pipe_stages = s->mesh_shape[axis];
  /* Megatron-LM's split: the stages' layers tensor (and sequence) parallel over the model axis,
  ** each stage's gradients all-reduced over the data axis; ZeRO's and FSDP's per-microbatch
  ** gathers beside a pipeline are not modelled */
  const char *recipe = scenario_sharding_recipe(s);
  int tensor = !strcmp(recipe, "tensor_parallel") || !strcmp(recipe, "sequence_parallel");
  if (s->mesh_axes == 3 ? !tensor : strcmp(recipe, "data_parallel") != 0)
    return cfg_fail(c, yt_get(dist, "preset") ? yt_get(dist, "preset") : dist, "strategy.distribution.preset",
                    s->mesh_axes == 3 ? "pipeline stages on a mesh of three axes run tensor_parallel or "
                    "sequence_parallel over the model axis and data parallelism over the data axis, not %s"
                    : "pipeline stages run beside data parallelism only on a mesh of two axes (data and pipeline; "
                    "give a third, {data, pipeline, model}, for tensor parallelism), not %s", recipe);
  if (s->mesh_axes == 3 && scenario_model_axis(s) < 2)
    return cfg_fail(c, mesh, "strategy.distribution.mesh", "%s splits over the model axis: expected a model axis "
                    "of 2 devices or more, found %d", recipe, s->mesh_shape[2]);
  if (s->grad_accum > 1)
    return cfg_fail(c, yt_path(c->root, "training.gradient_accumulation_steps"), "training.gradient_accumulation_steps",
                    "a pipeline accumulates its microbatches' gradients itself: drop it and set "
                    "strategy.distribution.pipeline.microbatches");
  if (s->pipe_micro == 0) s->pipe_micro = s->pipe_stages;
  if (p == NULL || yt_get(p, "schedule") == NULL) s->pipe_schedule = SCHED_1F1B;  /* Megatron-LM's default */
  const yt_node *virt = p ? yt_get(p, "virtual_stages") : NULL;
  if (virt && s->pipe_schedule != SCHED_INTERLEAVED)
    return cfg_fail(c, virt, "strategy.distribution.pipeline.virtual_stages", "goes with schedule interleaved, not %s",
                    SCHEDULES[s->pipe_schedule]);
  if (s->pipe_schedule == SCHED_INTERLEAVED && s->pipe_chunks == 0) s->pipe_chunks = 2;
  if (s->pipe_schedule == SCHED_INTERLEAVED && s->pipe_micro % s->pipe_stages != 0) {
    const yt_node *m = yt_get(p, "microbatches") ? yt_get(p, "microbatches") : yt_get(p, "schedule");
    return cfg_fail(c, m, "strategy.distribution.pipeline.microbatches", "the interleaved schedule runs the "
                    "microbatches in groups of the stages: expected a multiple of %d, found %d", s->pipe_stages,
                    s->pipe_micro);
  }
  int data = s->mesh_axes >= 2 ? s->mesh_shape[0] : 1, model = s->mesh_axes == 3 ? s->mesh_shape[2] : 1;
  long long per_pipeline = s->global_batch / data;
  if (s->global_batch % ((long long)data * s->pipe_stages * model) != 0)
    return cfg_fail(c, at, "strategy.distribution.pipeline", "dataset.global_batch %d does not split evenly over the "
                    "mesh's %d x %d devices%s", s->global_batch, data, s->pipe_stages * model,
                    model > 1 ? " (data x pipeline stages x model)" : "");
  if (per_pipeline % s->pipe_micro != 0) {
    const yt_node *m = p && yt_get(p, "microbatches") ? yt_get(p, "microbatches") : at;
    return cfg_fail(c, m, "strategy.distribution.pipeline.microbatches", "expected a divisor of a pipeline's "
                    "batch (dataset.global_batch %d over %d data-parallel pipelines: %lld), found %d",
                    s->global_batch, data, per_pipeline, s->pipe_micro);
  }
  int model_stages = s->pipe_stages * scenario_pipeline_chunks(s);
  if (s->pipe_nsplit > 0 && s->pipe_nsplit != model_stages)
    return cfg_fail(c, yt_get(p, "layers_per_stage"), "strategy.distribution.pipeline.layers_per_stage",
                    "expected one entry per stage (%d%s), found %d", model_stages,
                    model_stages > s->pipe_stages ? ": stages x virtual_stages" : "", s->pipe_nsplit);
  return 0;
}

int scenario_pipeline_stages(const scenario *s) { return s->pipe_stages > 1 ? s->pipe_stages : 1; }

int scenario_pipeline_microbatches(const scenario *s) { return s->pipe_stages > 1 ? s->pipe_micro : 1; }

int scenario_pipeline_chunks(const scenario *s) { return s->pipe_stages > 1 && s->pipe_chunks > 1 ? s->pipe_chunks : 1; }

const char *scenario_pipeline_schedule(const scenario *s) { return SCHEDULES[s->pipe_schedule]; }
