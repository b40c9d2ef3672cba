/*
** test_pipeline_tp.c: Megatron-LM's three axes, {data, pipeline, model} (scenarios/programs/
** pipeline.c with mesh.c's model lines), on tests/data/train/pipeline_uniform.yaml's four equal
** stages (a relu, then four 1024 x 1024 dense layers, 2 + 1 + 1 + 1 layers a stage, free links and
** HBM, 256 examples a step) over 8 GPUs as {data: 1, pipeline: 4, model: 2}, 1F1B over 8
** microbatches of 32 examples. Tensor parallelism pairs the dense layers as Megatron does (dense
** and dense_2 split on their columns, dense_1 and dense_3 on their rows), so each stage runs one
** all-reduce over its model axis a microbatch: the forward's of a row-split layer's partial output
** (stages 1 and 3), or the backward's of a column-split layer's partial input gradient (stages 0
** and 2), A = 32 x 1024 x 4 = 131072 bytes each.
*/
#include "tests/testutil.h"

#include <jansson.h>
#include <math.h>

#include "compile/compile.h"
#include "scenarios/programs/mesh.h"
#include "scenarios/programs/train.h"

#define A 131072.0  /* a microbatch's 32 x 1024 activations, float32 */

static void load_3d(scenario *s) {
  scn_error err;
  const char *sets[] = {
    "strategy.distribution={preset: tensor_parallel, mesh: {data: 1, pipeline: 4, model: 2}, "
    "pipeline: {microbatches: 8, schedule: 1f1b, layers_per_stage: [2, 1, 1, 1]}}",
    "cluster.workers.machine.accelerators.count=8",
    "strategy.devices=[GPU:0, GPU:1, GPU:2, GPU:3, GPU:4, GPU:5, GPU:6, GPU:7]"};
  if (scenario_load(tu_src("tests/data/train/pipeline_uniform.yaml"), sets, 3, s, &err) != 0) fail_msg("%s", err.msg);
}

/* The step compiled for one stage's mesh (data 1 x model 2) on a microbatch: its model-axis
** collectives are four all-reduces of A (docs/strategies.md's tensor_parallel row: the split
** layers' activation all-reduces), and cg_pipeline_pass_steps gives each to the pass of the stage
** whose kernel produced its operand: stage 0's backward (dense's input gradient), stage 1's
** forward (dense_1's output), stage 2's backward, stage 3's forward, one each, issued before it
** is awaited; no other pass has one. */
static void each_stage_runs_its_layers_collectives(void **state) {
  (void)state;
  static scenario s;
  load_3d(&s);
  md_model_spec spec = scenario_model_spec(&s, 1);
  cg_options o = mesh_compile_options(&s, 8);
  assert_int_equal(o.replicas, 2);        /* a stage's mesh: the pipeline axis apart */
  assert_int_equal(o.model_axis, 2);
  assert_int_equal(o.group_examples, 32); /* 256 examples over 1 pipeline, 8 microbatches */
  cg_cache *c = cg_cache_new(&spec, &s.optimizer, &o);
  const cg_program *p = cg_cache_get(c, 16);
  int count;
  assert_true(cg_graph_collective_bytes(cg_program_graph(p), CG_COLL_ALL_REDUCE, 1, &count) == 4 * A);
  assert_int_equal(count, 4);
  size_t nx;
  const cg_transfer *x = cg_program_collectives(p, &nx);
  static const int FIRST[] = {0, 2, 3, 4, 5};
  for (int stage = 0; stage < 4; stage++)
    for (int backward = 0; backward < 2; backward++) {
      size_t n;
      cg_pipe_step *st = cg_pipeline_pass_steps(p, NULL, FIRST[stage], FIRST[stage + 1], backward, &n);
      int issued = 0, awaited = 0;
      double bytes = 0;
      for (size_t i = 0; i < n; i++) {
        if (st[i].transfer < 0) {
          assert_int_equal(i, n - 1);  /* the pass's end comes last */
          continue;
        }
        assert_true((size_t)st[i].transfer < nx && x[st[i].transfer].axis == CG_AXIS_MODEL);
        if (st[i].await) {
          awaited++;
          assert_int_equal(issued, awaited);
        } else {
          issued++;
          bytes += x[st[i].transfer].bytes;
        }
      }
      int want = backward == (stage % 2 == 0);
      assert_int_equal(issued, want);
      assert_int_equal(awaited, want);
      assert_true(bytes == want * A);
      free(st);
    }
  cg_cache_free(c);
}

/* Runs the 3-axis scenario into a temporary directory (*out, for tu_remove_dir) and reads its
** output `file`. */
static json_t *run_3d(run_summary *sum, char **out, const char *file) {
  static scenario s;
  load_3d(&s);
  *out = tu_temp_dir("podsim-pipeline-tp");
  scn_error err;
  if (train_run(&s, *out, sum, &err) != TR_EXIT_OK) fail_msg("%s", err.msg);
  char path[512];
  snprintf(path, sizeof path, "%s/%s", *out, file);
  json_error_t jerr;
  json_t *root = json_load_file(path, 0, &jerr);
  assert_non_null(root);
  return root;
}

/* The run: 4 steps x 8 microbatches, one model-axis all-reduce a microbatch on every stage, drawn
** on both devices of its line: 32 spans on each of the 8 devices' tracks. The bubble stays 1F1B's
** (p - 1) / (m + p - 1) = 3/11 (free links: the all-reduces cost picoseconds). A cut carries what a
** device holds there, so the point-to-point bytes are 2 m x the sum of the cuts' per-device bytes:
** a column-split output stays split (A / 2 after stages 0 and 2), a row-split one is all-reduced
** whole (A after stage 1): 2 x 8 x (A / 2 + A + A / 2) = 4194304 (on one device's chain; 2 x 3 x
** 8 x A = 6291456 without tensor parallelism). */
static void stages_run_over_the_model_axis(void **state) {
  (void)state;
  run_summary sum;
  char *out;
  json_t *root = run_3d(&sum, &out, "trace.json");
  print_message("bubble %.6f (3/11 = %.6f), p2p %.0f bytes\n", sum.pipeline_bubble_fraction, 3.0 / 11.0,
                sum.pipeline_p2p_bytes);
  assert_true(fabs(sum.pipeline_bubble_fraction - 3.0 / 11.0) < 1e-3);
  assert_true(sum.pipeline_p2p_bytes == 2 * 8 * (A / 2 + A + A / 2));
  json_t *events = json_object_get(root, "traceEvents");
  int spans[64] = {0}, tracks = 0;
  for (size_t i = 0; i < json_array_size(events); i++) {
    json_t *e = json_array_get(events, i);
    const char *name = json_string_value(json_object_get(e, "name"));
    if (name == NULL || strcmp(name, "all-reduce (model axis)")) continue;
    int tid = (int)json_integer_value(json_object_get(e, "tid"));
    assert_true(tid >= 0 && tid < 64);
    tracks += spans[tid]++ == 0;
  }
  json_decref(root);
  assert_int_equal(tracks, 8);
  for (int t = 0; t < 64; t++) assert_true(spans[t] == 0 || spans[t] == 32);
  tu_remove_dir(out);
}

/* Memory per device (1F1B, m = 8 > p = 4; the runtime's 256 MiB workspace, 268435456 B; SGD keeps
** no slots): a device holds its stage's share of the split layers' variables and gradients, the
** saved activations of the microbatches in flight on its stage (p - k) at what it holds of them,
** and the two buffers (activation and gradient) of each of its cuts at their per-device bytes:
**   stage 0 (GPUs 0-1): dense's kernel and bias on their columns, 2 x 2099200; in flight 4 x the
**     relu's output dense reads back (whole, A); its cut A / 2 x 2:  268435456 + 4198400 + 4A + A
**     = 273289216
**   stage 1 (GPUs 2-3): dense_1's kernel on its rows, its bias whole, 2 x (2097152 + 4096); 3 x its
**     split input (A / 2); cuts in A / 2 x 2 and out A x 2: 268435456 + 4202496 + 1.5A + 3A =
**     273227776
**   stage 2 (GPUs 4-5): as stage 0 with 2 in flight of a whole input and cuts A x 2 + A / 2 x 2:
**     268435456 + 4198400 + 2A + 3A = 273289216
**   stage 3 (GPUs 6-7): as stage 1 with 1 in flight and one cut in: 268435456 + 4202496 + 0.5A +
**     A = 272834560.
** Without the model axis stage 0 held 277618688 (test_pipeline.c, one_f_one_b_holds_less). */
static void stage_memory_is_the_model_shards(void **state) {
  (void)state;
  run_summary sum;
  char *out;
  json_t *root = run_3d(&sum, &out, "summary.json");
  json_t *groups = json_object_get(root, "devices");
  static const struct { const char *name; double peak; } WANT[] = {
    {"device:GPU:[0-1;4-5]", 268435456 + 4198400 + 5 * A}, {"device:GPU:[2-3]", 268435456 + 4202496 + 4.5 * A},
    {"device:GPU:[6-7]", 268435456 + 4202496 + 1.5 * A}};
  assert_int_equal(json_array_size(groups), 3);
  for (size_t i = 0; i < 3; i++) {
    json_t *g = json_array_get(groups, i);
    const char *name = json_string_value(json_object_get(g, "devices"));
    assert_string_equal(strrchr(name, '/') + 1, WANT[i].name);
    assert_true(json_number_value(json_object_get(g, "hbm_peak_bytes")) == WANT[i].peak);
  }
  json_decref(root);
  tu_remove_dir(out);
}

/* A plan's probe of a per-replica batch b reserves what a run of b x 8 examples would: b examples
** a microbatch, so stage 0 needs 268435456 + 4198400 + 5 x 4096 b = 272633856 + 20480 b bytes and
** stage 1 272637952 + 18432 b (less from b = 3 on; stages 2 and 3 less still). On GPUs of
** 272633856 + 20480 x 100 = 274681856 bytes the largest batch that fits is 100 a replica: 101
** needs 20480 bytes more on stage 0. */
static void plan_probe_reserves_the_stages(void **state) {
  (void)state;
  static scenario s;
  load_3d(&s);
  s.worker_machine.accel_hbm_bytes = 274681856.0;
  scn_error err;
  train_memory *m = train_memory_new(&s, &err);
  if (m == NULL) fail_msg("%s", err.msg);
  assert_int_equal(train_memory_replicas(m), 8);
  assert_int_equal(train_memory_fits(m, 100), 1);
  assert_int_equal(train_memory_fits(m, 101), 0);
  assert_int_equal(train_memory_fits(m, 32), 1);
  train_memory_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(each_stage_runs_its_layers_collectives),
    cmocka_unit_test(stages_run_over_the_model_axis),
    cmocka_unit_test(stage_memory_is_the_model_shards),
    cmocka_unit_test(plan_probe_reserves_the_stages),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
