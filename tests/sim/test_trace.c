/* test_trace.c: the trace recorder, its read-back accessors, the event cap and the Chrome trace
** event JSON (processes, threads, lanes, sort order). */
#include "tests/testutil.h"
#include "tests/tracecheck.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/sim.h"

/* A small run: a user track "steps" with a span and an instant; an exec of 1e9 FLOPs on "tpu0"
** (1 GFLOP/s: 0..1 s); a comm of 1e6 B over h0.up and h1.down (1 GB/s: 0..1 ms); then, on a
** second cpu "host0.cpu" at 1 GFLOP/s, two execs started together (0.5 and 1 GFLOP at 0.5 GFLOP/s
** each: the first ends at 1 s, the second has 0.5 GFLOP left) and a third started at 1.2 s
** (0.1 GFLOP; the second did 0.2 alone by then, and the two share: the third ends at 1.4 s, the
** second does 0.1 meanwhile and its last 0.2 alone, ending at 1.6 s). The second overlaps both
** others, so they go in a second lane. */
static void overlapping(sim_actor *self, void *arg) {
  sim_cpu *cpu = arg;
  sim_sleep(self, sim_time_from_s(1.2));
  sim_exec(self, cpu, 1e8);
}

static sim_engine *traced_engine(size_t limit) {
  sim_engine *e = sim_engine_new();
  sim_trace_enable(e, 1);
  sim_trace_set_limit(e, limit);
  int steps = sim_trace_track(e, "steps");
  sim_trace_span(e, steps, "step 0", "train", 0, sim_time_from_s(1.5));
  sim_trace_instant(e, steps, "checkpoint", "train", sim_time_from_s(0.25));
  sim_cpu *cpu = sim_cpu_new(e, "tpu0", 1e9);
  sim_link *route[2] = {sim_link_new(e, "h0.up", 1e9, 0), sim_link_new(e, "h1.down", 1e9, 0)};
  sim_exec_start(e, cpu, 1e9);
  sim_comm_start(e, route, 2, 1e6);
  sim_cpu *host = sim_cpu_new(e, "host0.cpu", 1e9);
  sim_exec_start(e, host, 0.5e9);
  sim_exec_start(e, host, 1e9);
  sim_actor_spawn(e, "late", overlapping, host);
  sim_run(e);
  return e;
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

static void tmp_path(char *path) {
  strcpy(path, "/tmp/podsim_trace_XXXXXX");
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
}

/* The JSON's metadata record `what` for (pid, tid): its args value (name or sort_index). */
static json_t *meta(json_t *ev, const char *what, int pid, int tid) {
  for (size_t i = 0; i < json_array_size(ev); i++) {
    json_t *x = json_array_get(ev, i);
    if (strcmp(json_string_value(json_object_get(x, "name")), what) != 0) continue;
    if (json_integer_value(json_object_get(x, "pid")) != pid || json_integer_value(json_object_get(x, "tid")) != tid)
      continue;
    json_t *args = json_object_get(x, "args");
    json_t *v = json_object_get(args, "name");
    return v ? v : json_object_get(args, "sort_index");
  }
  return NULL;
}

static void test_trace_json(void **state) {
  (void)state;
  char path[64];
  tmp_path(path);
  sim_engine *e = traced_engine(SIM_TRACE_DEFAULT_LIMIT);
  assert_int_equal(sim_trace_write_json(e, path), 0);
  sim_engine_free(e);
  tc_counts c = tc_check_trace(path);
  /* Tracks in creation order: steps, h0.up, h1.down (the comm ends first), tpu0, host0.cpu;
  ** host0.cpu needs two lanes, so six threads. Processes by first appearance of the group:
  ** steps, h0, h1, tpu0, host0. Events: step span, 2 comms, 3 host execs, 1 tpu exec = 7 X. */
  assert_int_equal(c.threads, 6);
  assert_int_equal(c.processes, 5);
  assert_int_equal(c.complete, 7);
  assert_int_equal(c.instants, 1);
  json_error_t err;
  json_t *root = json_load_file(path, 0, &err);
  json_t *ev = json_object_get(root, "traceEvents");
  assert_string_equal(json_string_value(meta(ev, "process_name", 5, 0)), "host0");
  assert_int_equal(json_integer_value(meta(ev, "process_sort_index", 5, 0)), 5);
  assert_string_equal(json_string_value(meta(ev, "thread_name", 1, 1)), "steps");
  assert_string_equal(json_string_value(meta(ev, "thread_name", 5, 5)), "host0.cpu");
  assert_string_equal(json_string_value(meta(ev, "thread_name", 5, 6)), "host0.cpu [2]");
  assert_int_equal(json_integer_value(meta(ev, "thread_sort_index", 5, 6)), 6);
  assert_null(json_object_get(root, "otherData"));
  /* host0.cpu's events in ts order, longer first on a tie: the 1 GFLOP exec (0..1.6 s, lane 0,
  ** tid 5), the 0.5 one (0..1 s, lane 1, tid 6), the late one (1.2..1.4 s, lane 1 again). */
  struct { int tid; double ts, dur, flops; } want[3] = {
      {5, 0, 1.6e6, 1e9}, {6, 0, 1e6, 0.5e9}, {6, 1.2e6, 0.2e6, 1e8}};
  int k = 0;
  for (size_t i = 0; i < json_array_size(ev); i++) {
    json_t *x = json_array_get(ev, i);
    if (json_integer_value(json_object_get(x, "pid")) != 5 || strcmp(json_string_value(json_object_get(x, "ph")), "X") != 0)
      continue;
    assert_true(k < 3);
    assert_string_equal(json_string_value(json_object_get(x, "cat")), "compute");
    assert_int_equal(json_integer_value(json_object_get(x, "tid")), want[k].tid);
    assert_true(json_number_value(json_object_get(x, "ts")) == want[k].ts);
    assert_true(json_number_value(json_object_get(x, "dur")) == want[k].dur);
    assert_true(json_number_value(json_object_get(json_object_get(x, "args"), "flops")) == want[k].flops);
    k++;
  }
  assert_int_equal(k, 3);
  json_decref(root);
  /* The same run writes the same bytes. */
  char *first = slurp(path);
  e = traced_engine(SIM_TRACE_DEFAULT_LIMIT);
  assert_int_equal(sim_trace_write_json(e, path), 0);
  sim_engine_free(e);
  char *second = slurp(path);
  assert_string_equal(first, second);
  free(first);
  free(second);
  unlink(path);
}

/* The accessors give back what was recorded, in recording (completion) order. */
static void test_trace_read_back(void **state) {
  (void)state;
  sim_engine *e = traced_engine(SIM_TRACE_DEFAULT_LIMIT);
  assert_int_equal(sim_trace_num_tracks(e), 5);
  assert_string_equal(sim_trace_track_name(e, 1), "h0.up");
  assert_int_equal(sim_trace_track_kind(e, 0), SIM_TRACK_USER);
  assert_int_equal(sim_trace_track_kind(e, 1), SIM_TRACK_LINK);
  assert_int_equal(sim_trace_track_kind(e, 3), SIM_TRACK_CPU);
  assert_true(sim_trace_track_capacity(e, 1) == 1e9);
  assert_true(sim_trace_track_capacity(e, 0) == 0);
  assert_null(sim_trace_track_name(e, 5));
  assert_int_equal(sim_trace_num_events(e), 8);
  sim_trace_record r = sim_trace_event_at(e, 2);  /* span, instant, then the comm on h0.up */
  assert_int_equal(r.track, 1);
  assert_string_equal(r.name, "comm");
  assert_string_equal(r.category, "communication");
  assert_int_equal(r.start, 0);
  assert_int_equal(r.end, sim_time_from_s(1e-3));
  assert_true(r.amount == 1e6);
  assert_int_equal(sim_trace_event_at(e, 8).track, -1);
  sim_time first;
  assert_int_equal(sim_trace_dropped(e, &first), 0);
  assert_int_equal(first, SIM_TIME_NEVER);
  sim_engine_free(e);
}

/* A limit of 4 keeps the span, the instant and both comm spans (done at 1 ms); the 4 execs
** (done at 1 s and later) are dropped, the first at 1 s. The JSON says so twice: a global
** instant at 1e6 us and otherData. */
static void test_trace_limit(void **state) {
  (void)state;
  sim_engine *e = traced_engine(4);
  assert_int_equal(sim_trace_num_events(e), 4);
  sim_time first;
  assert_int_equal(sim_trace_dropped(e, &first), 4);
  assert_int_equal(first, sim_time_from_s(1.0));
  char path[64];
  tmp_path(path);
  assert_int_equal(sim_trace_write_json(e, path), 0);
  sim_engine_free(e);
  tc_counts c = tc_check_trace(path);
  assert_int_equal(c.complete, 3);
  assert_int_equal(c.instants, 2);
  json_error_t err;
  json_t *root = json_load_file(path, 0, &err);
  json_t *other = json_object_get(root, "otherData");
  assert_int_equal(json_integer_value(json_object_get(other, "podsim_dropped_events")), 4);
  assert_int_equal(json_integer_value(json_object_get(other, "podsim_trace_limit")), 4);
  assert_non_null(strstr(json_string_value(json_object_get(other, "podsim_note")), "from 1000000 us on"));
  json_decref(root);
  unlink(path);
}

/* Groups: the default rule, and an override that moves a track into another process. */
static void test_trace_groups(void **state) {
  (void)state;
  char buf[64];
  assert_string_equal(sim_trace_default_group("/job:worker/replica:0/task:3/device:TPU:1", buf, sizeof buf),
                      "/job:worker/replica:0/task:3");
  assert_string_equal(sim_trace_default_group("worker0.gpu1.down", buf, sizeof buf), "worker0");
  assert_string_equal(sim_trace_default_group("steps", buf, sizeof buf), "steps");
  assert_string_equal(sim_trace_default_group(".odd", buf, sizeof buf), ".odd");
  sim_engine *e = sim_engine_new();
  int a = sim_trace_track(e, "/job:worker/replica:0/task:0/device:CPU:0");
  int b = sim_trace_track(e, "worker0.cpu");
  sim_trace_track_group(e, a, "worker0");
  sim_trace_span(e, a, "step 0", "step", 0, 10);
  sim_trace_span(e, b, "exec", "x", 0, 10);
  char path[64];
  tmp_path(path);
  assert_int_equal(sim_trace_write_json(e, path), 0);
  sim_engine_free(e);
  tc_counts c = tc_check_trace(path);
  assert_int_equal(c.processes, 1);
  assert_int_equal(c.threads, 2);
  unlink(path);
}

static void test_trace_disabled(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  sim_cpu *cpu = sim_cpu_new(e, "c", 1);
  sim_exec_start(e, cpu, 1);
  sim_run(e);
  char path[64];
  tmp_path(path);
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
      cmocka_unit_test(test_trace_read_back),
      cmocka_unit_test(test_trace_limit),
      cmocka_unit_test(test_trace_groups),
      cmocka_unit_test(test_trace_disabled),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
