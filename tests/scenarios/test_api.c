/*
** test_api.c: scenarios/api.c's calls, what libpodsim.so gives the Python package. Each runs the
** command line's code in a forked child: the quickstart at 3 steps gives the run_hash
** `podsim run scenarios/examples/quickstart.yaml --set training.steps=3 --quiet` prints
** (baaa91b5ba3a0143), twice in one process; a refusal comes back with its place; podsim_command
** in this process gives the same hash, so the CLI and the api share one code path.
*/
#include "tests/testutil.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scenarios/api.h"

/* The CLI's run_hash of the quickstart at training.steps=3 (tests/cli.sh runs the same command). */
#define QUICKSTART_3_HASH "baaa91b5ba3a0143"

static const char *const THREE_STEPS[] = {"training.steps=3", "outputs.plots=[]", NULL};

static void test_run_twice(void **state) {
  (void)state;
  char *dir = tu_temp_dir("podsim-api");
  char out[4200];
  static podsim_api_result res;  /* static: two 4 KiB paths and two 16 KiB texts */
  for (int i = 0; i < 2; i++) {
    snprintf(out, sizeof out, "%s/run%d", dir, i);
    assert_int_equal(podsim_api_run(tu_src("scenarios/examples/quickstart.yaml"), THREE_STEPS, out, &res), 0);
    assert_int_equal(res.status, 0);
    assert_string_equal(res.run_hash, QUICKSTART_3_HASH);
    assert_string_equal(res.out_dir, out);
    assert_string_equal(res.output, "run_hash " QUICKSTART_3_HASH "\n");  /* --quiet's one line */
    assert_string_equal(res.messages, "");
    assert_int_equal(res.line, 0);
    snprintf(out, sizeof out, "%s/run%d/summary.json", dir, i);
    assert_int_equal(access(out, F_OK), 0);
  }
  tu_remove_dir(dir);
}

/* training.steps: -4 at line 3, its value at column 10: exit 2, the place, nothing written. */
static void test_refusal_has_its_place(void **state) {
  (void)state;
  char *dir = tu_temp_dir("podsim-api");
  char path[4200], out[4200];
  snprintf(path, sizeof path, "%s/bad.yaml", dir);
  snprintf(out, sizeof out, "%s/never", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs("name: bad\ntraining:\n  steps: -4\n", f);
  fclose(f);
  static podsim_api_result res;
  assert_int_equal(podsim_api_check(path, NULL, &res), 2);
  assert_int_equal(res.line, 3);
  assert_int_equal(res.col, 10);
  assert_string_equal(res.file, path);
  assert_string_equal(res.key, "training.steps");
  assert_non_null(strstr(res.messages, ":3:10: training.steps: expected an integer >= 1"));
  assert_int_equal(podsim_api_run(path, NULL, out, &res), 2);
  assert_int_equal(access(out, F_OK), -1);
  assert_string_equal(res.run_hash, "");
  assert_string_equal(res.out_dir, "");
  tu_remove_dir(dir);
}

/* The CLI's path, in this process: its stdout share holds the same hash as the forked call's. */
static void test_command_in_process(void **state) {
  (void)state;
  char *dir = tu_temp_dir("podsim-api");
  char out[4200];
  snprintf(out, sizeof out, "%s/cli", dir);
  podsim_request rq = {"run", tu_src("scenarios/examples/quickstart.yaml"), THREE_STEPS, 2, out, 1, 0, 0};
  char text[256] = "";
  FILE *o = fmemopen(text, sizeof text - 1, "w");
  assert_non_null(o);
  static podsim_outcome oc;
  assert_int_equal(podsim_command(&rq, o, stderr, &oc), 0);
  fclose(o);
  assert_string_equal(text, "run_hash " QUICKSTART_3_HASH "\n");
  assert_string_equal(oc.out_dir, out);
  assert_true(oc.run_hash == 0xbaaa91b5ba3a0143ULL);
  tu_remove_dir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_run_twice),
      cmocka_unit_test(test_refusal_has_its_place),
      cmocka_unit_test(test_command_in_process),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
