/*
** test_inputs.c: input files that the scenario points at (CSV data, init weights) are read and
** checked before anything is written: each broken one is an exit-2 error naming the data
** file's line and column; a job that does not fit in memory fails as TensorFlow would (exit 3,
** outputs written, summary.json `error`).
*/
#include "tests/testutil.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scenarios/programs/train.h"

typedef struct input_case {
  const char *scenario;   /* under tests/data/inputs/ */
  const char *where;      /* "FILE:LINE:COL: KEY:" the error must contain */
  const char *phrase;     /* and a phrase of what it says */
} input_case;

static const input_case cases[] = {
  /* "-1.0,x2.0,1": the bad field starts at column 6 of line 3 */
  { "bad_number.yaml", "bad_number.csv:3:6: dataset.csv:", "x2.0" },
  /* line 3 has 2 fields where the header has 3 */
  { "short_row.yaml", "short_row.csv:3:", "fields" },
  /* label: label, but the header is f0,f1,target */
  { "no_label.yaml", "no_label.csv:1:1: dataset.csv:", "label" },
  /* 5 is not a class of a 2-unit last layer: line 4, the label field starts at column 11 */
  { "label_range.yaml", "label_range.csv:4:11: dataset.csv:", "label 5 is out of range [0, 2)" },
  /* 3 feature columns for model.input.features 2 */
  { "three_features.yaml", "three_features.csv:1:1: dataset:", "3 feature columns" },
  { "empty.yaml", "empty.csv:", "empty" },
  /* dense/kernel is [2, 2]: flat index 4 (line 6) does not exist */
  { "init_wrong_shape.yaml", "init_wrong_shape.csv:6:", "4" },
  { "init_unknown_var.yaml", "init_unknown_var.csv:6:1: model.init.file:", "dense_7/bias" },
  /* dense/kernel index 3 never given */
  { "init_missing.yaml", "init_missing.csv:", "dense/kernel" },
  /* "1,0,2": graph 1 has nodes 0 and 1 only; the target field starts at column 5 of line 5 */
  { "graph_bad_edge.yaml", "graph_edges_bad.csv:5:5: dataset.graph.edges:", "target node \"2\"" },
  /* "0,3,...": a fourth node of a subgraph padded to 3; its node field starts at column 3 */
  { "graph_too_many_nodes.yaml", "graph_too_many_nodes.csv:5:3: dataset.graph.nodes:", "more than model.input.graph.nodes (3)" },
};

static void load(const char *name, scenario *s) {
  char rel[256];
  scn_error err;
  snprintf(rel, sizeof rel, "tests/data/inputs/%s", name);
  if (scenario_load(tu_src(rel), NULL, 0, s, &err) != 0) fail_msg("%s", err.msg);
}

static void broken_inputs_are_located_and_nothing_is_written(void **state) {
  (void)state;
  static scenario s;
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const input_case *c = &cases[i];
    load(c->scenario, &s);
    scn_error err = {0};
    assert_int_equal(train_check(&s, &err), TR_EXIT_INPUT);
    if (strstr(err.msg, c->where) == NULL || strstr(err.msg, c->phrase) == NULL)
      fail_msg("%s: got \"%s\", want \"%s\" ... \"%s\"", c->scenario, err.msg, c->where, c->phrase);
    /* train_run gives the same error and creates no output directory. */
    char out[] = "/tmp/podsim-inputs-XXXXXX";
    assert_non_null(mkdtemp(out));
    char dir[64];
    snprintf(dir, sizeof dir, "%s/run", out);
    run_summary sum;
    scn_error err2 = {0};
    assert_int_equal(train_run(&s, dir, &sum, &err2), TR_EXIT_INPUT);
    assert_string_equal(err.msg, err2.msg);
    struct stat st;
    assert_int_not_equal(stat(dir, &st), 0);
    rmdir(out);
  }
}

static void good_inputs_pass(void **state) {
  (void)state;
  static scenario s;
  scn_error err = {0};
  load("good.yaml", &s);
  assert_int_equal(train_check(&s, &err), TR_EXIT_OK);
  load("init_good.yaml", &s);
  assert_int_equal(train_check(&s, &err), TR_EXIT_OK);
}

/* 1 KB of RAM cannot hold a 2-64-2 model (258 + 130 floats, Adam's two slots each): the job
** fails as ResourceExhaustedError, exit 3, with summary.json saying where and how much. */
static void out_of_memory_fails_the_job(void **state) {
  (void)state;
  static scenario s;
  load("oom.yaml", &s);
  char out[] = "/tmp/podsim-oom-XXXXXX";
  assert_non_null(mkdtemp(out));
  run_summary sum;
  scn_error err = {0};
  assert_int_equal(train_run(&s, out, &sum, &err), TR_EXIT_JOB_FAILED);
  char path[128];
  snprintf(path, sizeof path, "%s/summary.json", out);
  json_error_t jerr;
  json_t *j = json_load_file(path, 0, &jerr);
  assert_non_null(j);
  json_t *e = json_object_get(j, "error");
  assert_non_null(e);
  assert_string_equal(json_string_value(json_object_get(e, "kind")), "ResourceExhaustedError");
  assert_string_equal(json_string_value(json_object_get(e, "device")), "/job:worker/replica:0/task:0/device:CPU:0");
  assert_int_equal(json_integer_value(json_object_get(e, "capacity_bytes")), 1000);
  /* variables (2*64 + 64 + 64*2 + 2) * 4 = 1288 bytes alone exceed 1000 */
  assert_true(json_integer_value(json_object_get(e, "needed_bytes")) > 1288);
  assert_int_equal(json_integer_value(json_object_get(j, "steps_completed")), 0);
  json_decref(j);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", out);
  assert_int_equal(system(cmd), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(broken_inputs_are_located_and_nothing_is_written),
    cmocka_unit_test(good_inputs_pass),
    cmocka_unit_test(out_of_memory_fails_the_job),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
