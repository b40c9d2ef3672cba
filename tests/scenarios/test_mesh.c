/*
** test_mesh.c: strategy.distribution's runs (scenarios/programs/mesh.c): the mesh's collectives
** run beside the compute and only their waits show as communication, every collective of the
** compiled program runs on the mesh, and each recipe's memory decides what fits.
*/
#include "tests/testutil.h"

#include <jansson.h>
#include <math.h>

#include "scenarios/programs/train.h"

/* Runs tests/data/train/mesh_fsdp_wide.yaml (FSDP over 4 workers: 1024 -> 3 x dense 2048 -> 10,
** Adam, 128 examples a worker, 4 steps) with the overrides given, into a temporary directory:
** the collective spans on replica 0's host in trace.json (its collectives sit on lanes of their
** own beside the step's), the reduce-scatters among them, their busy time in microseconds, and
** metrics.csv's communication summed over the steps, in microseconds. */
static int fsdp_wide_collectives(const char **sets, int nsets, int *scatters, double *busy, double *exposed) {
  static scenario s;
  scn_error err;
  if (scenario_load(tu_src("tests/data/train/mesh_fsdp_wide.yaml"), sets, nsets, &s, &err) != 0) fail_msg("%s", err.msg);
  char *out = tu_temp_dir("podsim-mesh");
  run_summary sum;
  if (train_run(&s, out, &sum, &err) != TR_EXIT_OK) fail_msg("%s", err.msg);
  char path[512];
  snprintf(path, sizeof path, "%s/trace.json", out);
  json_error_t jerr;
  json_t *root = json_load_file(path, 0, &jerr);
  assert_non_null(root);
  json_t *events = json_object_get(root, "traceEvents");
  /* replica 0's host (one worker each here): the process of its first step span */
  json_int_t pid = -1;
  double last_end = 0;
  int spans = 0;
  *busy = 0;
  *scatters = 0;
  for (size_t i = 0; i < json_array_size(events); i++) {
    json_t *e = json_array_get(events, i);
    const char *cat = json_string_value(json_object_get(e, "cat"));
    if (cat == NULL) continue;
    if (pid < 0 && !strcmp(cat, "step")) pid = json_integer_value(json_object_get(e, "pid"));
  }
  for (size_t i = 0; i < json_array_size(events); i++) {
    json_t *e = json_array_get(events, i);
    const char *cat = json_string_value(json_object_get(e, "cat"));
    if (cat == NULL || strcmp(cat, "collective") || json_integer_value(json_object_get(e, "pid")) != pid)
      continue;
    double ts = json_number_value(json_object_get(e, "ts")), dur = json_number_value(json_object_get(e, "dur"));
    assert_true(ts >= last_end - 1e-9);  /* a line runs one collective at a time */
    last_end = ts + dur;
    *busy += dur;
    spans++;
    *scatters += !strncmp(json_string_value(json_object_get(e, "name")), "reduce-scatter", 14);
  }
  json_decref(root);
  static double comm[16];
  snprintf(path, sizeof path, "%s/metrics.csv", out);
  int n = tu_read_column(path, 6, comm, 16, NULL);
  assert_int_equal(n, 4);
  *exposed = 0;
  for (int i = 0; i < n; i++) *exposed += comm[i] * 1e6;  /* seconds to the trace's microseconds */
  tu_remove_dir(out);
  return spans;
}

/* FSDP over 4 workers: each step gathers the 8 variables twice and scatters their gradients
** once, 24 collectives a replica, one at a time, each of its own kind and bytes: 8
** reduce-scatters a step (a line once ran a position with the kind and bytes of the last
** collective any member had issued, and members run ahead of a busy line: the big kernels' ran as
** gathers of the bias, 78 ms busy); their busy time is at least each step's three passes of the
** weights over the ring: the 1024 x 2048 + 2 x 2048 x 2048 + 2048 x 10 kernels' 42,024,960 bytes,
** 3/4 of them sent by each worker a pass at the n2 NIC's 16 Gb/s (2 GB/s) = 15.76 ms, x 3 x 4
** steps = 189.1 ms, the biases and the hops' latency a little more (192.2 ms); the wait
** metrics.csv counts as communication is
** positive (the first layer's gathers have nothing to hide behind, the last scatters end after
** the backward) and well below the collectives' busy time: the next layer's gathers run while
** this one computes, the scatters while the backward goes on. */
static void fsdp_collectives_run_beside_compute(void **state) {
  (void)state;
  double busy, exposed;
  int scatters;
  assert_int_equal(fsdp_wide_collectives(NULL, 0, &scatters, &busy, &exposed), 4 * 24);
  assert_int_equal(scatters, 4 * 8);
  assert_true(busy >= 189112.3 && busy < 1.05 * 189112.3);
  print_message("fsdp: collectives busy %.3f us, exposed %.3f us over 4 steps\n", busy, exposed);
  assert_true(exposed > 0);
  assert_true(exposed < 0.75 * busy);
}

/* The same with training.gradient_accumulation_steps 2: each micro-batch's forward and backward
** gathers the 8 variables again (16 all-gathers a micro-batch, as each of Keras's micro-steps runs
** the sharded program), and the gradients are reduce-scattered once, after the last: 2 x 16 + 8
** = 40 collectives a step, 160 over the 4 steps (the micro-batch before the last ran none of its
** gathers before, 24 a step). */
static void fsdp_gathers_every_micro_batch(void **state) {
  (void)state;
  const char *sets[] = {"training.gradient_accumulation_steps=2"};
  double busy, exposed;
  int scatters;
  assert_int_equal(fsdp_wide_collectives(sets, 1, &scatters, &busy, &exposed), 4 * (2 * 16 + 8));
  assert_int_equal(scatters, 4 * 8);
  assert_true(exposed > 0);
}

/* scenarios/examples/plan_recipes.yaml (GPT-3 XL, Adam, mixed_bfloat16, a v4-16's 8 chips of
** 32 GiB): replicated it needs 5.3 + 10.6 + 5.3 GB before activations, and the step's liveness
** peak with 2 examples a chip brings it to 31.5 GB: it fits 2, not 3 (the plan's largest batch);
** ZeRO-1 (slots / 8), FSDP (weights, slots and gradients / 8) and FSDP x TP fit 3; so do 2
** pipeline stages (each holds half the blocks' weights, slots and gradients: the plan's largest
** batch is 6, not 7). */
static void recipes_decide_what_fits(void **state) {
  (void)state;
  static const struct { const char *preset; int fits; } CASES[] = {
    {"data_parallel", 0}, {"zero1", 1}, {"fsdp", 1}, {"fsdp_tp", 1}, {"pipeline", 1}};
  for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++) {
    static scenario s;
    scn_error err;
    char set[80];
    snprintf(set, sizeof set, "strategy.distribution.preset=%s", CASES[i].preset);
    const char *sets[] = {set};
    if (scenario_load(tu_src("scenarios/examples/plan_recipes.yaml"), sets, 1, &s, &err) != 0) fail_msg("%s", err.msg);
    train_memory *m = train_memory_new(&s, &err);
    assert_non_null(m);
    assert_int_equal(train_memory_replicas(m), 8);
    assert_int_equal(train_memory_fits(m, 3), CASES[i].fits);
    assert_int_equal(train_memory_fits(m, 2), 1);
    if (!strcmp(CASES[i].preset, "pipeline")) {
      assert_int_equal(train_memory_fits(m, 6), 1);
      assert_int_equal(train_memory_fits(m, 7), 0);
    }
    train_memory_free(m);
  }
}

/* The communication a step of a scenario with one block (metrics.csv's column, the second step). */
static double one_block_comm(const char *path) {
  static scenario s;
  scn_error err;
  const char *sets[] = {"model.zoo.layers=1"};
  if (scenario_load(tu_src(path), sets, 1, &s, &err) != 0) fail_msg("%s", err.msg);
  char *out = tu_temp_dir("podsim-mesh"), csv[512];
  run_summary sum;
  if (train_run(&s, out, &sum, &err) != TR_EXIT_OK) fail_msg("%s", err.msg);
  static double comm[4];
  snprintf(csv, sizeof csv, "%s/metrics.csv", out);
  assert_int_equal(tu_read_column(csv, 6, comm, 4, NULL), 2);
  tu_remove_dir(out);
  return comm[1];
}

/* A mesh over a TPU slice follows the torus (jax's create_device_mesh): PaLM 540B's recipe on a
** v4-384 laid out 12x4x4 (tests/data/fidelity/palm_540b_v4_pod_8_blocks.yaml) with one block,
** fsdp_sp over {data: 16, model: 12}. A model group is then one x ring of 12 chips and a data
** line a 4x4 y-z plane, each a torus of its axes that runs its collectives both ways round on
** every axis: 0.130 s of exposed communication a step (0.150 s while FSDP's gathers and scatters
** moved float32, before they moved bfloat16 as XLA does: compile/shard_zero.c). With float32
** gathers, the same lines as rings over their members' routes took 0.51 s; laid over the replica
** ids (hosts' 2x2 blocks one after another) a model group was 3 hosts' 6x2 patch and a data line
** 16 chips strewn over the slice: 2.80 s. */
static void tpu_mesh_follows_the_torus(void **state) {
  (void)state;
  double comm = one_block_comm("tests/data/fidelity/palm_540b_v4_pod_8_blocks.yaml");
  print_message("palm 1 block on 12x4x4: %.3f s of communication a step\n", comm);
  assert_true(comm > 0.1 && comm < 0.16);
}

/* PaLM's layout over two slices (hybrid_fsdp_sp {data: 2, fsdp: 16, model: 12} on two 12x4x4
** v4-384s, tests/data/fidelity/palm_540b_v4_2_slices_32_blocks.yaml, one block) lays each slice's
** fsdp x model on its torus as one slice's fsdp_sp {data: 16, model: 12} is laid: the same
** gathers, scatters and sequence-parallel collectives on the same lines, so the same exposed
** communication within a slice, and the gradient shards' all-reduce over DCN adds little (each
** chip's W_M / 16 of one block and the head, mostly behind the backward): measured 0.132 s
** against one slice's 0.124 s (in the mesh's rank order instead, a model group 12 chips of the
** slice's grid order and an fsdp line 16 of them 12 apart, rings over their routes: 0.368 s). */
static void hybrid_mesh_follows_each_slice(void **state) {
  (void)state;
  double pod = one_block_comm("tests/data/fidelity/palm_540b_v4_pod_8_blocks.yaml");
  double two = one_block_comm("tests/data/fidelity/palm_540b_v4_2_slices_32_blocks.yaml");
  print_message("palm 1 block: one slice %.3f s, two slices over DCN %.3f s of communication a step\n", pod, two);
  assert_true(two >= pod && two < pod * 1.2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(fsdp_collectives_run_beside_compute),
    cmocka_unit_test(recipes_decide_what_fits),
    cmocka_unit_test(fsdp_gathers_every_micro_batch),
    cmocka_unit_test(tpu_mesh_follows_the_torus),
    cmocka_unit_test(hybrid_mesh_follows_each_slice),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
