/*
** test_memory.c: the HBM a sync run reserves (scenarios/programs/memory.c) is the compiled step's
** buffer liveness peak (compile/liveness.c), as XLA and TensorFlow's allocator hold it, and a run
** that does not fit still fails as TensorFlow's ResourceExhaustedError (exit 3).
*/
#include "tests/testutil.h"

#include <stdlib.h>
#include <string.h>

#include "scenarios/programs/train.h"

static scn_error E;

/* ResNet-50 (Keras's, float32) on one 40 GB A100 (capacity 40 GiB = 42949672960 B), SGD with
** momentum. Persistent: 25.6M variables (102.5 MB) and the momentum slot (102.3 MB). The peak
** of buffer liveness is at the start of the backward: every tensor a backward still reads is held
** there. Per image, in floats: the convolutions' outputs (batch norms' inputs: FusedBatchNormGrad
** reads them) 10.59M (conv1 112x112x64 = 0.80M; the four stages' bottlenecks, projection
** included: 4.42M, 2.81M, 2.01M, 0.55M), the relus' outputs (ReluGrad and the next convolution's
** kernel gradient read them) 9.08M, the max pool's output 0.20M and the input 0.15M: 20.0M floats
** = 80 MB, 20.5 GB at 256; the batch norms' and adds' own outputs (10.59M + 5.52M floats a
** image, 16.5 GB at 256) are freed in the forward once read. With the last layer's gradients,
** 8 MB of weight gradients and the 256 MiB workspace the reservation is about 21.3 GB: it fits.
** NVIDIA/DeepLearningExamples, TensorFlow/Classification/ConvNets/resnet50v1.5/README.md: "Batch
** Size / GPU 256" in TF32 (float32 tensors) on DGX A100 (8x A100 40GB), and "suggested batch sizes
** ... 128 for single precision training per single V100 16 GB": 80 MB an image agrees with both
** (256 images: 20.5 GB, under 40 GB and over 16; 128: 10.2 GB, under 16). Summing every
** activation (the old reservation, md_model_activation_bytes: 52.1 GB at 256) refused it. At 1024
** images the live tensors alone are about 82 GB: TensorFlow fails that with an OOM, so must we. */
static void load(scenario *s, int batch) {
  char set[64];
  snprintf(set, sizeof set, "dataset.global_batch=%d", batch);
  const char *sets[] = {set};
  if (scenario_load(tu_src("tests/data/memory/resnet50_a100_256.yaml"), sets, 1, s, &E) != 0) fail_msg("%s", E.msg);
}

static void test_resnet50_a100_fits_256(void **state) {
  (void)state;
  static scenario s;
  load(&s, 256);
  train_memory *m = train_memory_new(&s, &E);
  assert_non_null(m);
  assert_int_equal(train_memory_fits(m, 256), 1);
  assert_int_equal(train_memory_fits(m, 1024), 0);
  train_memory_free(m);
  char out[] = "/tmp/podsim-mem-XXXXXX";
  assert_non_null(mkdtemp(out));
  run_summary sum;
  scn_error err = {0};
  assert_int_equal(train_run(&s, out, &sum, &err), TR_EXIT_OK);
  /* the device's peak is the reservation: 20.5 GB of activations and more, below 25 GB */
  assert_true(sum.memory_peak_bytes > 20.5e9 && sum.memory_peak_bytes < 25e9);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", out);
  assert_int_equal(system(cmd), 0);
}

static void test_resnet50_a100_1024_is_oom(void **state) {
  (void)state;
  static scenario s;
  load(&s, 1024);
  char out[] = "/tmp/podsim-mem-XXXXXX";
  assert_non_null(mkdtemp(out));
  run_summary sum;
  scn_error err = {0};
  assert_int_equal(train_run(&s, out, &sum, &err), TR_EXIT_JOB_FAILED);
  assert_string_equal(sum.error.kind, "ResourceExhaustedError");
  assert_non_null(strstr(sum.error.message, "OOM allocating "));
  assert_non_null(strstr(sum.error.message, "activations for a per-replica batch of 1024 "));
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", out);
  assert_int_equal(system(cmd), 0);
}

/* A run of plan_recipes' tensor_parallel recipe (gpt_1_3b, Adam, mixed_bfloat16, mesh {data: 4,
** model: 2} on a v4-16's 8 chips) at global batch G, one step, numerics off: its exit status. */
static int tensor_parallel_run(int global_batch) {
  static scenario s;
  char batch[64];
  snprintf(batch, sizeof batch, "dataset.global_batch=%d", global_batch);
  const char *sets[] = {"strategy.distribution.preset=tensor_parallel", batch, "training.steps=1"};
  if (scenario_load(tu_src("scenarios/examples/plan_recipes.yaml"), sets, 3, &s, &E) != 0) fail_msg("%s", E.msg);
  char out[] = "/tmp/podsim-mem-XXXXXX";
  assert_non_null(mkdtemp(out));
  run_summary sum;
  scn_error err = {0};
  int rc = train_run(&s, out, &sum, &err);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", out);
  assert_int_equal(system(cmd), 0);
  return rc;
}

/* The plan's batch search on a mesh probes what a run at that batch reserves. A model group of
** tensor parallelism compiles for the examples the global batch gives it (ceil(G / 4) for a
** data axis of 4), so a probe of b examples a replica is a run of 8 b: 3 a replica fit (a run of
** 24 completes its step), 4 do not (a run of 32 is TensorFlow's OOM). The probe used to compile
** at the scenario's batch of 16 whatever it probed, so every batch "fit" and `podsim plan`
** printed the search's limit, 268435455 (INT_MAX / 8), as the largest batch. */
static void test_mesh_probe_is_the_run(void **state) {
  (void)state;
  static scenario s;
  const char *sets[] = {"strategy.distribution.preset=tensor_parallel"};
  if (scenario_load(tu_src("scenarios/examples/plan_recipes.yaml"), sets, 1, &s, &E) != 0) fail_msg("%s", E.msg);
  train_memory *m = train_memory_new(&s, &E);
  assert_non_null(m);
  assert_int_equal(train_memory_fits(m, 3), 1);
  assert_int_equal(train_memory_fits(m, 4), 0);
  assert_int_equal(train_memory_fits(m, 1), 1);  /* the probe rebuilds its programs both ways */
  assert_int_equal(train_memory_fits(m, 64), 0);
  train_memory_free(m);
  assert_int_equal(tensor_parallel_run(24), TR_EXIT_OK);
  assert_int_equal(tensor_parallel_run(32), TR_EXIT_JOB_FAILED);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_resnet50_a100_fits_256),
    cmocka_unit_test(test_resnet50_a100_1024_is_oom),
    cmocka_unit_test(test_mesh_probe_is_the_run),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
