/*
** test_outputs.c: outputs sized by the model, not by the replicas (issue 31): a device set in
** one pattern (outputs_device_set), variables.csv a row per variable with its placement and the
** per-copy listing behind outputs.variables, run_hash the same for both; summary.json's devices in
** groups of the same kind and figures.
*/
#include "tests/testutil.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "scenarios/programs/train.h"
#include "scenarios/report/outputs.h"

static void expect_set(const char *const *devices, size_t n, const char *want) {
  char *got = outputs_device_set(devices, n);
  assert_string_equal(got, want);
  free(got);
}

/* Every combination of the numbers that vary, in any order: one name with [ranges]; the
** numbers that do not vary (replica:0, CPU:0) stay as they are. */
static void device_set_products(void **state) {
  (void)state;
  const char *four[] = {"/job:worker/replica:0/task:1/device:TPU:1", "/job:worker/replica:0/task:0/device:TPU:0",
                        "/job:worker/replica:0/task:0/device:TPU:1", "/job:worker/replica:0/task:1/device:TPU:0"};
  expect_set(four, 4, "/job:worker/replica:0/task:[0-1]/device:TPU:[0-1]");
  const char *cpus[] = {"/job:worker/replica:0/task:0/device:CPU:0", "/job:worker/replica:0/task:1/device:CPU:0",
                        "/job:worker/replica:0/task:2/device:CPU:0"};
  expect_set(cpus, 3, "/job:worker/replica:0/task:[0-2]/device:CPU:0");
  /* MPMD: a layer on core 1 of four 2-core replicas, TPU:1 3 5 7; a gap makes two ranges. */
  const char *odd[] = {"/job:w/replica:0/task:0/device:TPU:1", "/job:w/replica:0/task:0/device:TPU:3",
                       "/job:w/replica:0/task:0/device:TPU:5", "/job:w/replica:0/task:0/device:TPU:6",
                       "/job:w/replica:0/task:0/device:TPU:7"};
  expect_set(odd, 5, "/job:w/replica:0/task:0/device:TPU:[1;3;5-7]");
  const char *one[] = {"/job:localhost/replica:0/task:0/device:GPU:0"};
  expect_set(one, 1, "/job:localhost/replica:0/task:0/device:GPU:0");
  expect_set(one, 0, "");
}

/* Not every combination (task:1/TPU:1 missing), a name twice, two templates, a number with a
** leading zero (text, so the templates differ): the names as given, separated by spaces. */
static void device_set_lists(void **state) {
  (void)state;
  const char *three[] = {"/job:w/task:0/device:TPU:0", "/job:w/task:0/device:TPU:1", "/job:w/task:1/device:TPU:0"};
  expect_set(three, 3, "/job:w/task:0/device:TPU:0 /job:w/task:0/device:TPU:1 /job:w/task:1/device:TPU:0");
  const char *twice[] = {"/job:w/task:0/device:CPU:0", "/job:w/task:0/device:CPU:0"};
  expect_set(twice, 2, "/job:w/task:0/device:CPU:0 /job:w/task:0/device:CPU:0");
  const char *kinds[] = {"/job:w/task:0/device:CPU:0", "/job:w/task:0/device:GPU:0"};
  expect_set(kinds, 2, "/job:w/task:0/device:CPU:0 /job:w/task:0/device:GPU:0");
  const char *zero[] = {"/job:w/task:01/device:CPU:0", "/job:w/task:2/device:CPU:0"};
  expect_set(zero, 2, "/job:w/task:01/device:CPU:0 /job:w/task:2/device:CPU:0");
}

/* The quickstart for 2 steps with outputs.variables=`listing` into a fresh directory: its
** run_hash, and variables.csv's lines (header included) in lines[0..max). */
static uint64_t run_listing(const char *listing, char (*lines)[160], int max, int *nlines) {
  static scenario s;
  scn_error err;
  char set[64];
  snprintf(set, sizeof set, "outputs.variables=%s", listing);
  const char *sets[] = {"training.steps=2", "outputs.trace=false", "outputs.plots=[]", set};
  if (scenario_load(tu_src("scenarios/examples/quickstart.yaml"), sets, 4, &s, &err) != 0) fail_msg("%s", err.msg);
  char *dir = tu_temp_dir("podsim-outputs");
  run_summary sum;
  int rc = train_run(&s, dir, &sum, &err);
  if (rc != TR_EXIT_OK) fail_msg("exit %d: %s", rc, err.msg);
  char path[512];
  snprintf(path, sizeof path, "%s/variables.csv", dir);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  *nlines = 0;
  while (*nlines < max && fgets(lines[*nlines], sizeof lines[0], f)) (*nlines)++;
  fclose(f);
  tu_remove_dir(dir);
  return sum.run_hash;
}

/* The quickstart: 4 workers, 3 dense layers (6 variables) and Adam (m and v of each: 12 slots).
** per_variable: 18 rows, each on task:[0-3] with count 4; per_replica: 4 x 18 = 72 rows, the
** first of replica 1 on task:1. run_hash covers the per-copy listing either way: the same. */
static void variables_listings(void **state) {
  (void)state;
  static char lines[80][160];
  int n = 0;
  uint64_t compact = run_listing("per_variable", lines, 80, &n);
  assert_int_equal(n, 1 + 18);
  assert_string_equal(lines[0], "name,kind,shape,devices,count\n");
  assert_string_equal(lines[1], "dense/kernel,mirrored,16x64,/job:worker/replica:0/task:[0-3]/device:CPU:0,4\n");
  assert_string_equal(lines[18], "dense_2/bias/v,slot,4,/job:worker/replica:0/task:[0-3]/device:CPU:0,4\n");
  uint64_t copies = run_listing("per_replica", lines, 80, &n);
  assert_int_equal(n, 1 + 72);
  assert_string_equal(lines[0], "name,kind,shape,device\n");
  assert_string_equal(lines[1], "dense/kernel,mirrored,16x64,/job:worker/replica:0/task:0/device:CPU:0\n");
  assert_string_equal(lines[19], "dense/kernel,mirrored,16x64,/job:worker/replica:0/task:1/device:CPU:0\n");
  assert_true(compact == copies);
}

static void expect_group(json_t *groups, size_t g, const char *devices, int count, int peak) {
  json_t *o = json_array_get(groups, g);
  assert_non_null(o);
  assert_string_equal(json_string_value(json_object_get(o, "devices")), devices);
  assert_int_equal(json_integer_value(json_object_get(o, "count")), count);
  assert_int_equal(json_integer_value(json_object_get(o, "hbm_peak_bytes")), peak);
  assert_int_equal(json_integer_value(json_object_get(o, "hbm_capacity_bytes")), 1000);
}

/* summary.json's devices: a group per kind and figures, in the order of its first device. Four
** TPUs peak at 100 but task:0/TPU:1 at 200, a CPU at 100 as well: three groups, the CPU's apart
** (another kind), the three TPUs alike listed (task:0/TPU:1 missing: no product). */
static void summary_device_groups(void **state) {
  (void)state;
  run_device dev[5] = {{"/job:w/replica:0/task:0/device:TPU:0", 100, 1000},
                       {"/job:w/replica:0/task:0/device:TPU:1", 200, 1000},
                       {"/job:w/replica:0/task:1/device:TPU:0", 100, 1000},
                       {"/job:w/replica:0/task:1/device:TPU:1", 100, 1000},
                       {"/job:w/replica:0/task:1/device:CPU:0", 100, 1000}};
  run_summary sum = { .scenario = "groups", .numerics = "off", .strategy = "tpu", .replicas = 4,
                      .all_reduce = "torus", .price_model = "on_demand", .devices = dev, .ndevices = 5 };
  char *dir = tu_temp_dir("podsim-outputs"), path[512];
  snprintf(path, sizeof path, "%s/summary.json", dir);
  assert_int_equal(outputs_write_summary(path, &sum), 0);
  json_error_t jerr;
  json_t *j = json_load_file(path, 0, &jerr);
  assert_non_null(j);
  json_t *groups = json_object_get(j, "devices");
  assert_int_equal(json_array_size(groups), 3);
  expect_group(groups, 0, "/job:w/replica:0/task:0/device:TPU:0 /job:w/replica:0/task:1/device:TPU:0 "
               "/job:w/replica:0/task:1/device:TPU:1", 3, 100);
  expect_group(groups, 1, "/job:w/replica:0/task:0/device:TPU:1", 1, 200);
  expect_group(groups, 2, "/job:w/replica:0/task:1/device:CPU:0", 1, 100);
  json_decref(j);
  dev[1].peak_bytes = 100;  /* all four TPUs alike: one product */
  assert_int_equal(outputs_write_summary(path, &sum), 0);
  j = json_load_file(path, 0, &jerr);
  groups = json_object_get(j, "devices");
  assert_int_equal(json_array_size(groups), 2);
  expect_group(groups, 0, "/job:w/replica:0/task:[0-1]/device:TPU:[0-1]", 4, 100);
  json_decref(j);
  tu_remove_dir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(device_set_products),
      cmocka_unit_test(device_set_lists),
      cmocka_unit_test(variables_listings),
      cmocka_unit_test(summary_device_groups),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
