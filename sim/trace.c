/*
** trace.c: the span recorder and its Chrome trace event JSON writer (sim_trace_).
**
** Events are kept in recording order, which is simulation order, and written with jansson in
** fixed key order; ts/dur are microseconds as doubles (picoseconds / 1e6), printed by jansson
** with 17 significant digits, so the same run writes the same bytes.
*/
#include <jansson.h>
#include <stdlib.h>

#include "sim/simInt.h"

void sim__trace_free(sim_trace *t) {
  for (size_t i = 0; i < t->n_tracks; i++) free(t->tracks[i]);
  free(t->tracks);
  for (size_t i = 0; i < t->n_events; i++) {
    if (!t->events[i].owns_strings) continue;
    free((char *)t->events[i].name);
    free((char *)t->events[i].category);
  }
  free(t->events);
  *t = (sim_trace){0};
}

void sim_trace_enable(sim_engine *e, int on) { e->trace.enabled = on != 0; }

int sim_trace_track(sim_engine *e, const char *track_name) {
  sim_trace *t = &e->trace;
  sim__grow(&t->tracks, &t->cap_tracks, t->n_tracks + 1, sizeof *t->tracks);
  t->tracks[t->n_tracks] = sim__strdup(track_name);
  return (int)t->n_tracks++;
}

static void record(sim_trace *t, sim_trace_event ev) {
  sim__grow(&t->events, &t->cap_events, t->n_events + 1, sizeof *t->events);
  t->events[t->n_events++] = ev;
}

void sim__trace_resource_span(sim_engine *e, sim_resource *r, const char *name, sim_time start,
                              sim_time end) {
  if (r->trace_track < 0) r->trace_track = sim_trace_track(e, r->name);
  record(&e->trace, (sim_trace_event){.track = r->trace_track, .name = name, .category = "sim",
                                      .start = start, .end = end});
}

static void record_user(sim_engine *e, int track, const char *name, const char *category,
                        sim_time start, sim_time end, int instant) {
  if (track < 0 || (size_t)track >= e->trace.n_tracks) return;
  record(&e->trace, (sim_trace_event){.track = track, .name = sim__strdup(name),
                                      .category = sim__strdup(category), .start = start,
                                      .end = end, .instant = instant, .owns_strings = 1});
}

void sim_trace_span(sim_engine *e, int track, const char *name, const char *category,
                    sim_time start, sim_time end) {
  record_user(e, track, name, category, start, end > start ? end : start, 0);
}

void sim_trace_instant(sim_engine *e, int track, const char *name, const char *category,
                       sim_time at) {
  record_user(e, track, name, category, at, at, 1);
}

static double us(sim_time t) { return (double)t / 1e6; }

int sim_trace_write_json(const sim_engine *e, const char *path) {
  const sim_trace *t = &e->trace;
  json_t *events = json_array();
  for (size_t i = 0; i < t->n_tracks; i++) {
    json_t *m = json_object();
    json_object_set_new(m, "name", json_string("thread_name"));
    json_object_set_new(m, "ph", json_string("M"));
    json_object_set_new(m, "pid", json_integer(1));
    json_object_set_new(m, "tid", json_integer((json_int_t)i));
    json_object_set_new(m, "args", json_pack("{s:s}", "name", t->tracks[i]));
    json_array_append_new(events, m);
  }
  for (size_t i = 0; i < t->n_events; i++) {
    const sim_trace_event *ev = &t->events[i];
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(ev->name));
    json_object_set_new(o, "cat", json_string(ev->category));
    json_object_set_new(o, "ph", json_string(ev->instant ? "i" : "X"));
    json_object_set_new(o, "ts", json_real(us(ev->start)));
    if (ev->instant) json_object_set_new(o, "s", json_string("t"));
    else json_object_set_new(o, "dur", json_real(us(ev->end - ev->start)));
    json_object_set_new(o, "pid", json_integer(1));
    json_object_set_new(o, "tid", json_integer(ev->track));
    json_array_append_new(events, o);
  }
  json_t *root = json_object();
  json_object_set_new(root, "traceEvents", events);
  json_object_set_new(root, "displayTimeUnit", json_string("ns"));
  int rc = json_dump_file(root, path, JSON_COMPACT | JSON_PRESERVE_ORDER) == 0 ? 0 : -1;
  json_decref(root);
  return rc;
}
