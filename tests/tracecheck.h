/* tracecheck.h: a structural check of a Chrome trace event JSON file as Perfetto and
** chrome://tracing read it, shared by the sim and scenario tests. */
#ifndef PODSIM_TRACECHECK_H
#define PODSIM_TRACECHECK_H

#include <jansson.h>
#include <string.h>

#include "tests/testutil.h"

/* What a valid trace held. */
typedef struct tc_counts {
  size_t complete;   /* "X" events */
  size_t instants;   /* "i" events */
  size_t processes;  /* process_name records */
  size_t threads;    /* thread_name records */
} tc_counts;

#define TC_MAX_THREADS 4096

/* Fails the test unless: the root has traceEvents and displayTimeUnit; every event has ph, name,
** integer pid and tid, and (but metadata) a numeric ts >= 0; metadata is one of process_name,
** process_sort_index, thread_name, thread_sort_index with its args; every thread an event uses
** is named, under the same pid, and its process is named; "X" events have dur >= 0 and, per
** thread, come in ts order without overlapping (Perfetto drops slices that partly overlap). */
static inline tc_counts tc_check_trace(const char *path) {
  json_error_t jerr;
  json_t *root = json_load_file(path, 0, &jerr);
  if (root == NULL) fail_msg("%s:%d: %s", path, jerr.line, jerr.text);
  assert_true(json_is_string(json_object_get(root, "displayTimeUnit")));
  json_t *events = json_object_get(root, "traceEvents");
  assert_true(json_is_array(events));
  tc_counts c = {0};
  static int thread_pid[TC_MAX_THREADS], process_named[TC_MAX_THREADS];
  static double thread_end[TC_MAX_THREADS];
  memset(thread_pid, 0, sizeof thread_pid);
  memset(process_named, 0, sizeof process_named);
  for (int pass = 0; pass < 2; pass++) {  /* metadata may come anywhere: names first */
    for (size_t i = 0; i < json_array_size(events); i++) {
      json_t *ev = json_array_get(events, i);
      const char *ph = json_string_value(json_object_get(ev, "ph"));
      const char *name = json_string_value(json_object_get(ev, "name"));
      json_t *pid = json_object_get(ev, "pid"), *tid = json_object_get(ev, "tid");
      if (ph == NULL || name == NULL || !json_is_integer(pid) || !json_is_integer(tid))
        fail_msg("event %zu lacks ph, name, pid or tid", i);
      json_int_t p = json_integer_value(pid), t = json_integer_value(tid);
      assert_true(p > 0 && p < TC_MAX_THREADS && t >= 0 && t < TC_MAX_THREADS);
      json_t *args = json_object_get(ev, "args");
      if (strcmp(ph, "M") == 0) {
        if (pass == 1) continue;
        if (strcmp(name, "process_name") == 0 || strcmp(name, "thread_name") == 0) {
          assert_true(json_is_string(json_object_get(args, "name")));
          if (name[0] == 'p') {
            process_named[p] = 1;
            c.processes++;
          } else {
            if (thread_pid[t] != 0) fail_msg("tid %d named twice", (int)t);
            thread_pid[t] = (int)p;
            thread_end[t] = 0;
            c.threads++;
          }
        } else if (strcmp(name, "process_sort_index") == 0 || strcmp(name, "thread_sort_index") == 0) {
          assert_true(json_is_integer(json_object_get(args, "sort_index")));
        } else {
          fail_msg("unknown metadata %s", name);
        }
        continue;
      }
      if (pass == 0) continue;
      json_t *ts = json_object_get(ev, "ts");
      assert_true(json_is_number(ts) && json_number_value(ts) >= 0);
      if (!process_named[p]) fail_msg("event %zu: pid %d has no process_name", i, (int)p);
      if (strcmp(ph, "i") == 0) {
        const char *s = json_string_value(json_object_get(ev, "s"));
        assert_true(s != NULL && strchr("gpt", s[0]) != NULL);
        if (s[0] == 't' && thread_pid[t] != p) fail_msg("instant %zu on unnamed thread %d", i, (int)t);
        c.instants++;
        continue;
      }
      if (strcmp(ph, "X") != 0) fail_msg("event %zu: unexpected ph %s", i, ph);
      json_t *dur = json_object_get(ev, "dur");
      assert_true(json_is_number(dur) && json_number_value(dur) >= 0);
      if (thread_pid[t] != p) fail_msg("event %zu: tid %d is not named under pid %d", i, (int)t, (int)p);
      double start = json_number_value(ts);
      if (start < thread_end[t] - 1e-9 * (1 + start))  /* the sum's last-bit rounding */
        fail_msg("event %zu (%s at %.6f us) overlaps the previous slice of tid %d (to %.6f us)", i,
                 name, start, (int)t, thread_end[t]);
      thread_end[t] = start + json_number_value(dur);
      c.complete++;
    }
  }
  json_decref(root);
  return c;
}

#endif
