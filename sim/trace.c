/*
** trace.c: the span recorder and its Chrome trace event JSON writer (sim_trace_).
**
** Events are kept in recording order, which is simulation order, and written in fixed key
** order; ts/dur are exact decimal microseconds of the picosecond clock, so the same run writes
** the same bytes.
*/
#include <jansson.h>
#include <stdio.h>
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

/* Exact decimal microseconds of a picosecond time, trailing zeros trimmed (261832217 ps ->
** "261.832217"): readable, and the same bytes on every build. */
static void put_us(FILE *f, sim_time ps) {
  char buf[40];
  const char *sign = ps < 0 ? "-" : "";
  uint64_t mag = ps < 0 ? (uint64_t)0 - (uint64_t)ps : (uint64_t)ps;
  int n = snprintf(buf, sizeof buf, "%s%llu.%06llu", sign, (unsigned long long)(mag / 1000000u),
                   (unsigned long long)(mag % 1000000u));
  while (n > 0 && buf[n - 1] == '0') buf[--n] = '\0';
  if (n > 0 && buf[n - 1] == '.') buf[--n] = '\0';
  fputs(buf, f);
}

/* A JSON string literal, escaped by jansson. */
static void put_string(FILE *f, const char *s) {
  json_t *j = json_string(s);
  char *text = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
  fputs(text ? text : "\"\"", f);
  free(text);
  json_decref(j);
}

/* Streams the events with fprintf: a jansson tree of a long run's events would need many times
** the memory of the compact records it is made from. */
int sim_trace_write_json(const sim_engine *e, const char *path) {
  const sim_trace *t = &e->trace;
  FILE *f = fopen(path, "w");
  if (f == NULL) return -1;
  fputs("{\"traceEvents\":[", f);
  for (size_t i = 0; i < t->n_tracks; i++) {
    fprintf(f, "%s{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%zu,\"args\":{\"name\":",
            i ? "," : "", i);
    put_string(f, t->tracks[i]);
    fputs("}}", f);
  }
  for (size_t i = 0; i < t->n_events; i++) {
    const sim_trace_event *ev = &t->events[i];
    fputs(i || t->n_tracks ? ",{\"name\":" : "{\"name\":", f);
    put_string(f, ev->name);
    fputs(",\"cat\":", f);
    put_string(f, ev->category);
    fprintf(f, ",\"ph\":\"%s\",\"ts\":", ev->instant ? "i" : "X");
    put_us(f, ev->start);
    if (ev->instant) {
      fputs(",\"s\":\"t\"", f);
    } else {
      fputs(",\"dur\":", f);
      put_us(f, ev->end - ev->start);
    }
    fprintf(f, ",\"pid\":1,\"tid\":%d}", ev->track);
  }
  fputs("],\"displayTimeUnit\":\"ns\"}", f);
  int bad = ferror(f);
  return (fclose(f) == 0 && !bad) ? 0 : -1;
}
