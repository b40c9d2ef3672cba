/* test_trace.c: the trace recorder and its Chrome trace event JSON. */
#include "tests/testutil.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/sim.h"

/* Writes a small run's trace to `path`: a user track, a comm over two links done at 1 ms,
** an exec done at 1 s. */
static void traced_run(const char *path) {
  sim_engine *e = sim_engine_new();
  sim_trace_enable(e, 1);
  int steps = sim_trace_track(e, "steps");
  sim_trace_span(e, steps, "step 0", "train", 0, sim_time_from_s(1.5));
  sim_trace_instant(e, steps, "checkpoint", "train", sim_time_from_s(0.25));
  sim_cpu *cpu = sim_cpu_new(e, "tpu0", 1e9);
  sim_link *route[2] = {sim_link_new(e, "h0.up", 1e9, 0), sim_link_new(e, "h1.down", 1e9, 0)};
  sim_exec_start(e, cpu, 1e9);
  sim_comm_start(e, route, 2, 1e6);
  sim_run(e);
  assert_int_equal(sim_trace_write_json(e, path), 0);
  sim_engine_free(e);
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = calloc(1, (size_t)n + 1);
  assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  return buf;
}

static void test_trace_json(void **state) {
  (void)state;
  char path[] = "/tmp/podsim_trace_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  traced_run(path);
  json_error_t err;
  json_t *root = json_load_file(path, 0, &err);
  assert_non_null(root);
  assert_string_equal(json_string_value(json_object_get(root, "displayTimeUnit")), "ns");
  json_t *ev = json_object_get(root, "traceEvents");
  /* 4 thread_name records (steps, h0.up, h1.down, tpu0: tracks made on first use, the comm
  ** finishing first), then span, instant, comm on both links, exec. */
  assert_int_equal(json_array_size(ev), 9);
  const char *tracks[4] = {"steps", "h0.up", "h1.down", "tpu0"};
  for (int i = 0; i < 4; i++) {
    json_t *m = json_array_get(ev, (size_t)i);
    assert_string_equal(json_string_value(json_object_get(m, "ph")), "M");
    assert_string_equal(json_string_value(json_object_get(m, "name")), "thread_name");
    assert_int_equal(json_integer_value(json_object_get(m, "tid")), i);
    assert_int_equal(json_integer_value(json_object_get(m, "pid")), 1);
    assert_string_equal(json_string_value(json_object_get(json_object_get(m, "args"), "name")),
                        tracks[i]);
  }
  struct { const char *name, *ph; int tid; double ts, dur; } want[5] = {
      {"step 0", "X", 0, 0, 1.5e6},      {"checkpoint", "i", 0, 0.25e6, -1},
      {"comm", "X", 1, 0, 1000},         {"comm", "X", 2, 0, 1000},
      {"exec", "X", 3, 0, 1e6}};
  for (int i = 0; i < 5; i++) {
    json_t *x = json_array_get(ev, (size_t)(4 + i));
    assert_string_equal(json_string_value(json_object_get(x, "name")), want[i].name);
    assert_string_equal(json_string_value(json_object_get(x, "ph")), want[i].ph);
    assert_int_equal(json_integer_value(json_object_get(x, "tid")), want[i].tid);
    assert_true(json_number_value(json_object_get(x, "ts")) == want[i].ts);
    if (want[i].dur >= 0) {
      assert_true(json_number_value(json_object_get(x, "dur")) == want[i].dur);
    } else {
      assert_string_equal(json_string_value(json_object_get(x, "s")), "t");
      assert_null(json_object_get(x, "dur"));
    }
  }
  json_decref(root);
  /* The same run writes the same bytes. */
  char *first = slurp(path);
  traced_run(path);
  char *second = slurp(path);
  assert_string_equal(first, second);
  free(first);
  free(second);
  unlink(path);
}

static void test_trace_disabled(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  sim_cpu *cpu = sim_cpu_new(e, "c", 1);
  sim_exec_start(e, cpu, 1);
  sim_run(e);
  char path[] = "/tmp/podsim_trace_XXXXXX";
  int fd = mkstemp(path);
  close(fd);
  assert_int_equal(sim_trace_write_json(e, path), 0);
  char *text = slurp(path);
  assert_string_equal(text, "{\"traceEvents\":[],\"displayTimeUnit\":\"ns\"}");
  free(text);
  unlink(path);
  assert_int_equal(sim_trace_write_json(e, "/nonexistent-dir/x.json"), -1);
  sim_engine_free(e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_trace_json),
      cmocka_unit_test(test_trace_disabled),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
