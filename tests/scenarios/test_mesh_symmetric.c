/*
** test_mesh_symmetric.c: one timeline for a symmetric device mesh (scenarios/programs/
** mesh_symmetric.c). Every run here is made twice, as shipped and with PODSIM_MESH_FULL=1 (every
** replica an actor, every line run); the two must write the same bytes (metrics.csv, whose
** sim_time_s and step_time_s give each step's end and length to the picosecond, final_weights.csv,
** variables.csv, trace.json when written, summary.json but its host figures wall_s and events)
** and print the same run_hash. Where the shortcut applies, the shipped run must simulate replica
** 0 alone with fewer events (else the comparison proves nothing); where it does not (a pipeline's
** stages, lines that reduce on the devices: GPUs and DCN lines; a straggler, numerics, batches
** uneven between VMs, a trace), it must decline.
**
** tests/data/mesh_symmetric/mlp_v4_32.yaml: an MLP 128 -> 512 -> 512 -> 10 with fsdp_sp over
** {data: 4, model: 4} on a v4-32 (16 chips, 4 VMs of 4), 256 examples, 4 steps.
*/
#include "tests/testutil.h"

#include <stdlib.h>
#include <string.h>

#include "scenarios/programs/mesh_symmetric.h"
#include "scenarios/programs/train.h"

static const char *const FILES[] = {"metrics.csv", "summary.json", "final_weights.csv", "variables.csv",
                                    "trace.json"};
enum { NFILES = sizeof FILES / sizeof *FILES, MAX_SETS = 4 };
/* summary.json's figures of the host's work, not of what was simulated. */
static const char *const HOST_LINES[] = {"\"wall_s\"", "\"events\"", NULL};

static const char *const MLP = "tests/data/mesh_symmetric/mlp_v4_32.yaml";

typedef struct mrun {
  run_summary sum;        /* what it reported */
  char *text[NFILES];     /* each output file (NULL: not written), summary.json without HOST_LINES */
} mrun;

static void run_once(mrun *r, const char *file, const char *const *sets, int nsets, int full) {
  static scenario s;
  scn_error err;
  memset(r, 0, sizeof *r);
  if (scenario_load(tu_src(file), sets, nsets, &s, &err) != 0) fail_msg("%s", err.msg);
  if (full) setenv(MSYM_FULL_ENV, "1", 1);
  else unsetenv(MSYM_FULL_ENV);
  char *dir = tu_temp_dir("podsim-msym");
  int rc = train_run(&s, dir, &r->sum, &err);
  unsetenv(MSYM_FULL_ENV);
  if (rc != TR_EXIT_OK) fail_msg("%s: exit %d: %s", file, rc, err.msg);
  for (int i = 0; i < NFILES; i++) r->text[i] = tu_slurp(dir, FILES[i], HOST_LINES);
  tu_remove_dir(dir);
}

/* Runs the scenario both ways, asserts the same outputs and returns the replicas the shipped run
** simulated (0: it declined, and then it processed the full run's events). */
static int same_both_ways(const char *file, const char *const *sets, int nsets) {
  mrun fast, full;
  assert_true(nsets <= MAX_SETS);
  run_once(&fast, file, sets, nsets, 0);
  run_once(&full, file, sets, nsets, 1);
  assert_int_equal(full.sum.simulated_replicas, 0);
  assert_int_equal(fast.sum.run_hash, full.sum.run_hash);
  assert_true(fast.sum.sim_time_s == full.sum.sim_time_s);
  assert_true(full.text[0] != NULL);  /* metrics.csv, at least */
  tu_same_files(fast.text, full.text, NFILES, FILES, file, "with one replica for all");
  int simulated = fast.sum.simulated_replicas;
  if (simulated > 0) {
    assert_int_equal(simulated, 1);
    assert_true(fast.sum.events < full.sum.events);
  } else {
    assert_int_equal(fast.sum.events, full.sum.events);
  }
  for (int i = 0; i < NFILES; i++) free(fast.text[i]), free(full.text[i]);
  free(fast.sum.devices);
  free(full.sum.devices);
  return simulated;
}

/* fsdp_sp (weights gathered over the data axis, activations over the model axis) and Megatron's
** tensor parallelism on the v4-32's 2x2x4 torus, its lines sub-groups of the slice: model lines
** of 4 and data lines of 4, then 8 x 2 and 2 x 8, and a v4-64 with 8 x 4. */
static void collapses_on_a_torus(void **state) {
  (void)state;
  assert_int_equal(same_both_ways(MLP, NULL, 0), 1);
  const char *tp[] = {"strategy.distribution.preset=tensor_parallel"};
  assert_int_equal(same_both_ways(MLP, tp, 1), 1);
  const char *wide[] = {"strategy.distribution.mesh.data=8", "strategy.distribution.mesh.model=2"};
  assert_int_equal(same_both_ways(MLP, wide, 2), 1);
  const char *tall[] = {"strategy.distribution.mesh.data=2", "strategy.distribution.mesh.model=8"};
  assert_int_equal(same_both_ways(MLP, tall, 2), 1);
  const char *pod[] = {"cluster.tpu.type=v4-64", "strategy.distribution.mesh.data=8"};
  assert_int_equal(same_both_ways(MLP, pod, 2), 1);
}

/* A v5e's 4x4 torus (v5litepod-16), and a transformer: GPT-3 XL with fsdp_sp on a v4-16
** (scenarios/examples/plan_recipes.yaml's base point but for the recipe), its sequence-parallel
** all-gathers and reduce-scatters beside the attention and MLP kernels, 3 steps. */
static void collapses_on_a_v5e_and_a_transformer(void **state) {
  (void)state;
  const char *v5e[] = {"cluster.tpu.type=v5litepod-16"};
  assert_int_equal(same_both_ways(MLP, v5e, 1), 1);
  const char *gpt[] = {"strategy.distribution.preset=fsdp_sp", "training.steps=3"};
  assert_int_equal(same_both_ways("scenarios/examples/plan_recipes.yaml", gpt, 2), 1);
}

/* Declined: the lines of two v5e slices (data lines over DCN) and of a GPU mesh (two DGX A100s,
** model lines over NVLink, data lines over the NICs) reduce on the devices, which compute beside
** them, so a line's time depends on every member's kernels (admitted regardless, the slices' run
** differs from the full one: another run_hash); a pipeline's stages run different layers. Each
** still runs, whole. */
static void declines_gpus_slices_and_pipelines(void **state) {
  (void)state;
  const char *slices[] = {"cluster.tpu={type: v5litepod-16, slices: 2}",
                          "strategy.distribution={preset: hybrid_fsdp, mesh: {data: 2, fsdp: 16}}"};
  assert_int_equal(same_both_ways(MLP, slices, 2), 0);
  const char *gpu[] = {"cluster={workers: {count: 2, machine: {type: dgx-a100}}}",
                       "strategy={kind: multi_worker_mirrored, distribution: {preset: fsdp_sp, mesh: {data: 2, model: 8}}}"};
  assert_int_equal(same_both_ways(MLP, gpu, 2), 0);
  const char *stages[] = {"strategy.distribution={preset: tensor_parallel, mesh: {data: 2, pipeline: 2, model: 4}, "
                          "pipeline: {microbatches: 4, schedule: 1f1b}}"};
  assert_int_equal(same_both_ways(MLP, stages, 1), 0);
}

/* Declined: what makes one replica's timeline differ from another's, each on a scenario that
** collapses without it (collapses_on_a_torus): a straggler host for the first second
** (mlp_v4_32_straggler.yaml), numerics on (each replica's own values), 250 examples (replicas of 16
** and of 15 examples: VMs whose producers and copies differ) and a trace (each replica's track). */
static void declines_what_breaks_symmetry(void **state) {
  (void)state;
  assert_int_equal(same_both_ways("tests/data/mesh_symmetric/mlp_v4_32_straggler.yaml", NULL, 0), 0);
  const char *numerics[] = {"numerics=full", "training.steps=2"};
  assert_int_equal(same_both_ways(MLP, numerics, 2), 0);
  const char *uneven[] = {"dataset.global_batch=250"};
  assert_int_equal(same_both_ways(MLP, uneven, 1), 0);
  const char *trace[] = {"outputs.trace=true"};
  assert_int_equal(same_both_ways(MLP, trace, 1), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(collapses_on_a_torus),
    cmocka_unit_test(collapses_on_a_v5e_and_a_transformer),
    cmocka_unit_test(declines_gpus_slices_and_pipelines),
    cmocka_unit_test(declines_what_breaks_symmetry),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
