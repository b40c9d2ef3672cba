/*
** test_pipeline.c: pipeline parallelism's runs (scenarios/programs/pipeline.c) on
** tests/data/train/pipeline_uniform.yaml: four equal stages, free links and HBM, 256 examples a
** step (one pipeline of 4 GPUs, so a microbatch is 256 / m examples). The bubble emerges from the
** devices' timelines as GPipe's formula says, the point-to-point bytes are the cuts' activations
** and gradients, and 1F1B holds fewer microbatches' activations than GPipe.
*/
#include "tests/testutil.h"

#include <jansson.h>
#include <math.h>

#include "scenarios/programs/train.h"

/* Runs the uniform scenario with the schedule and microbatches given. */
static void run_uniform(const char *schedule, int micro, run_summary *sum, char **out) {
  static scenario s;
  scn_error err;
  char a[80], b[80];
  snprintf(a, sizeof a, "strategy.distribution.pipeline.schedule=%s", schedule);
  snprintf(b, sizeof b, "strategy.distribution.pipeline.microbatches=%d", micro);
  const char *sets[] = {a, b};
  if (scenario_load(tu_src("tests/data/train/pipeline_uniform.yaml"), sets, 2, &s, &err) != 0) fail_msg("%s", err.msg);
  *out = tu_temp_dir("podsim-pipeline");
  if (train_run(&s, *out, sum, &err) != TR_EXIT_OK) fail_msg("%s", err.msg);
  assert_int_equal(sum->pipeline_stages, 4);
  assert_int_equal(sum->pipeline_microbatches, micro);
}

/* p = 4 equal stages, zero-cost communication: each stage is busy m (F + B) of a span of
** (m + p - 1)(F + B), so the bubble is (p - 1) / (m + p - 1): 3/11 = 0.272727 at m = 8, 3/7 =
** 0.428571 at m = 4, under GPipe and 1F1B alike. The stages are equal but for the loss on the last
** (a softmax over 1024 classes: about 5 FLOPs a logit, against the 2 x 1024 a logit of a dense
** layer's matmul) and stage 0's relu, about 0.2% of a stage's work, hence the 1e-3 band; a
** mistake in the schedule (a stage waiting one pass too many) moves it by over 0.02. */
static void bubble_is_gpipes_formula(void **state) {
  (void)state;
  static const struct { const char *schedule; int m; double want; } CASES[] = {
    {"gpipe", 8, 3.0 / 11.0}, {"1f1b", 8, 3.0 / 11.0}, {"gpipe", 4, 3.0 / 7.0}, {"1f1b", 4, 3.0 / 7.0}};
  for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++) {
    run_summary sum;
    char *out;
    run_uniform(CASES[i].schedule, CASES[i].m, &sum, &out);
    print_message("%s m=%d: bubble %.6f, formula %.6f\n", CASES[i].schedule, CASES[i].m,
                  sum.pipeline_bubble_fraction, CASES[i].want);
    assert_true(fabs(sum.pipeline_bubble_fraction - CASES[i].want) < 1e-3);
    tu_remove_dir(out);
  }
}

/* The bubble is in the timeline: trace.json has a span per pass (4 devices x 2m passes x 4
** steps), and on each device the last step's spans cover 1 - bubble of the pipeline's span of
** that step (from its first forward to its last backward on any stage), as measured. */
static void bubble_is_in_the_trace(void **state) {
  (void)state;
  run_summary sum;
  char *out, path[512];
  run_uniform("1f1b", 8, &sum, &out);
  snprintf(path, sizeof path, "%s/trace.json", out);
  json_error_t jerr;
  json_t *root = json_load_file(path, 0, &jerr);
  assert_non_null(root);
  json_t *events = json_object_get(root, "traceEvents");
  int spans = 0;
  double busy = 0, lo = INFINITY, hi = 0, last_begin = 0;
  for (size_t i = 0; i < json_array_size(events); i++) {  /* the last step starts after every span before it */
    json_t *e = json_array_get(events, i);
    const char *cat = json_string_value(json_object_get(e, "cat"));
    if (cat == NULL || strcmp(cat, "step")) continue;
    double ts = json_number_value(json_object_get(e, "ts"));
    if (ts > last_begin) last_begin = ts;
  }
  for (size_t i = 0; i < json_array_size(events); i++) {
    json_t *e = json_array_get(events, i);
    const char *cat = json_string_value(json_object_get(e, "cat"));
    if (cat == NULL || strcmp(cat, "pipeline")) continue;
    spans++;
    double ts = json_number_value(json_object_get(e, "ts")), dur = json_number_value(json_object_get(e, "dur"));
    if (ts < last_begin) continue;
    busy += dur;
    if (ts < lo) lo = ts;
    if (ts + dur > hi) hi = ts + dur;
  }
  json_decref(root);
  assert_int_equal(spans, 4 * 16 * 4);
  double idle = 1.0 - busy / (4.0 * (hi - lo));
  print_message("trace: last step idle %.6f, summary %.6f\n", idle, sum.pipeline_bubble_fraction);
  assert_true(fabs(idle - sum.pipeline_bubble_fraction) < 1e-4);  /* every step alike, the trace in us */
  tu_remove_dir(out);
}

/* Point-to-point bytes per step: 2 x (p - 1) x m x A, each cut carrying every microbatch's
** activation forward and its gradient back, A = 32 examples x 1024 floats x 4 B = 131072 at
** m = 8: 2 x 3 x 8 x 131072 = 6291456; at m = 4 (A = 262144) the same 6291456. */
static void p2p_bytes_are_the_cuts(void **state) {
  (void)state;
  for (int m = 4; m <= 8; m += 4) {
    run_summary sum;
    char *out;
    run_uniform("gpipe", m, &sum, &out);
    double a = 256.0 / m * 1024 * 4;
    assert_true(sum.pipeline_p2p_bytes == 2 * 3 * m * a);
    assert_true(sum.pipeline_p2p_bytes == 6291456.0);
    tu_remove_dir(out);
  }
}

/* Each group of summary.json's devices (name pattern, peak) in order; returns how many. */
static int device_peaks(const char *out, const char **names, double *peaks, int max) {
  char path[512];
  snprintf(path, sizeof path, "%s/summary.json", out);
  json_error_t jerr;
  json_t *root = json_load_file(path, 0, &jerr);
  assert_non_null(root);
  json_t *groups = json_object_get(root, "devices");
  int n = (int)json_array_size(groups);
  assert_true(n <= max);
  static char kept[8][80];
  for (int i = 0; i < n; i++) {
    json_t *g = json_array_get(groups, (size_t)i);
    const char *name = json_string_value(json_object_get(g, "devices"));
    snprintf(kept[i], sizeof kept[i], "%s", strrchr(name, '/') + 1);
    names[i] = kept[i];
    peaks[i] = json_number_value(json_object_get(g, "hbm_peak_bytes"));
  }
  json_decref(root);
  return n;
}

/* Memory per stage, m = 8 > p = 4 (A = 131072 B a microbatch's activation; the runtime's 256 MiB
** workspace; a 1024 x 1024 dense layer's kernel and bias 4198400 B, as many again of gradients;
** SGD keeps no slots): stage k holds its layers' weights and gradients, its in-flight
** microbatches' saved activations (stage 0: the relu's output its dense reads back; stages 1-3:
** the input each dense reads back, A each) and 2A per cut for the buffers in transit (the
** activation and the gradient). GPipe holds all 8 microbatches on every stage, 1F1B p - k:
**   GPipe  stages 0 and 3: 268435456 + 8396800 + 8A + 2A = 278142976 (the last sends nothing
**          on); stages 1-2: + 8A + 4A = 278405120
**   1F1B   stage 0: 4A + 2A -> 277618688; stage 1: 3A + 4A -> 277749760; stage 2: 2A + 4A ->
**          277618688; stage 3: 1A + 2A -> 277225472.
** summary.json groups the devices of one peak. */
static void one_f_one_b_holds_less(void **state) {
  (void)state;
  static const struct { const char *name; double peak; } GPIPE[] = {
    {"device:GPU:[0;3]", 278142976}, {"device:GPU:[1-2]", 278405120}};
  static const struct { const char *name; double peak; } ONE_F_ONE_B[] = {
    {"device:GPU:[0;2]", 277618688}, {"device:GPU:1", 277749760}, {"device:GPU:3", 277225472}};
  run_summary g, f;
  char *out_g, *out_f;
  const char *names[8];
  double peaks[8];
  run_uniform("gpipe", 8, &g, &out_g);
  run_uniform("1f1b", 8, &f, &out_f);
  assert_int_equal(device_peaks(out_g, names, peaks, 8), 2);
  for (int i = 0; i < 2; i++) {
    assert_string_equal(names[i], GPIPE[i].name);
    assert_true(peaks[i] == GPIPE[i].peak);
  }
  assert_int_equal(device_peaks(out_f, names, peaks, 8), 3);
  for (int i = 0; i < 3; i++) {
    assert_string_equal(names[i], ONE_F_ONE_B[i].name);
    assert_true(peaks[i] == ONE_F_ONE_B[i].peak);
  }
  assert_true(f.memory_peak_bytes < g.memory_peak_bytes);
  tu_remove_dir(out_g);
  tu_remove_dir(out_f);
}

/* Interleaved 1F1B (Megatron-LM's virtual pipeline) on 2 devices of 2 chunks each, the uniform
** model's [2, 1, 1, 1] stages (device 0 runs stages 0 and 2, device 1 stages 1 and 3), m = 8: a
** device's idle time shrinks by the chunks, (p - 1) / (v m + p - 1) = 1/17 = 0.0588, against
** 1F1B's (p - 1) / (m + p - 1) = 1/9 = 0.1111 on the same 2 devices of [3, 2]; the p2p bytes grow
** with the cuts, 2 x (p v - 1) x m x A = 2 x 3 x 8 x 131072 = 6291456 against 2 x 1 x 8 x 131072. */
static void interleaving_shrinks_the_bubble(void **state) {
  (void)state;
  static const struct { const char *dist; double bubble, bytes; } CASES[] = {
    {"strategy.distribution={mesh: {pipeline: 2}, pipeline: {microbatches: 8, schedule: interleaved, "
     "virtual_stages: 2, layers_per_stage: [2, 1, 1, 1]}}", 1.0 / 17.0, 6291456},
    {"strategy.distribution={mesh: {pipeline: 2}, pipeline: {microbatches: 8, layers_per_stage: [3, 2]}}",
     1.0 / 9.0, 2097152}};
  for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++) {
    static scenario s;
    scn_error err;
    const char *sets[] = {CASES[i].dist, "cluster.workers.machine.accelerators.count=2",
                          "strategy.devices=[GPU:0, GPU:1]"};
    if (scenario_load(tu_src("tests/data/train/pipeline_uniform.yaml"), sets, 3, &s, &err) != 0) fail_msg("%s", err.msg);
    assert_string_equal(scenario_pipeline_schedule(&s), i == 0 ? "interleaved" : "1f1b");  /* 1f1b the default */
    char *out = tu_temp_dir("podsim-pipeline");
    run_summary sum;
    if (train_run(&s, out, &sum, &err) != TR_EXIT_OK) fail_msg("%s", err.msg);
    print_message("%s: bubble %.6f, formula %.6f\n", scenario_pipeline_schedule(&s), sum.pipeline_bubble_fraction,
                  CASES[i].bubble);
    assert_true(fabs(sum.pipeline_bubble_fraction - CASES[i].bubble) < 1e-3);
    assert_true(sum.pipeline_p2p_bytes == CASES[i].bytes);
    tu_remove_dir(out);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(bubble_is_gpipes_formula),
    cmocka_unit_test(bubble_is_in_the_trace),
    cmocka_unit_test(p2p_bytes_are_the_cuts),
    cmocka_unit_test(one_f_one_b_holds_less),
    cmocka_unit_test(interleaving_shrinks_the_bubble),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
