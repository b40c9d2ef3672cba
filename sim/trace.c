/*
** trace.c: the span recorder, its read-back accessors and the Chrome trace event JSON writer
** (sim_trace_).
**
** Events are recorded when they end, which is simulation order. The writer lays them out for
** Perfetto and chrome://tracing: a process per group (a host, the fabric, the ICI), a thread per
** track, and complete events ("X") that never partially overlap on one thread (both viewers
** drop or misdraw slices that do). Where spans on a track overlap (two flows sharing a link,
** the model and the input pipeline sharing a cpu) the track gets extra threads, "lanes", named
** "NAME [2]", "NAME [3]", ...
**
** Invariants:
**   (1) the written file depends only on the recorded events and track names: events go out
**       sorted by (track, start, longer first, recording order) with integer-picosecond keys,
**       lanes are assigned greedily in that order, processes are numbered by first appearance
**       in track order; the same run writes the same bytes;
**   (2) at most `limit` events are stored; once reached, every later event is counted in
**       `dropped` (and the time of the first kept in `first_dropped`), never stored, so the
**       kept events are exactly those that ended before a point in simulated time;
**   (3) within one thread (track lane) complete events are disjoint and in ts order.
*/
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/simInt.h"

void sim__trace_init(sim_trace *t) {
  *t = (sim_trace){.limit = SIM_TRACE_DEFAULT_LIMIT, .first_dropped = SIM_TIME_NEVER};
}

void sim__trace_free(sim_trace *t) {
  for (size_t i = 0; i < t->n_tracks; i++) {
    free(t->tracks[i].name);
    free(t->tracks[i].group);
  }
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

void sim_trace_set_limit(sim_engine *e, size_t max_events) { e->trace.limit = max_events; }

static int new_track(sim_trace *t, const char *name, sim_track_kind kind, const sim_resource *res) {
  sim__grow(&t->tracks, &t->cap_tracks, t->n_tracks + 1, sizeof *t->tracks);
  t->tracks[t->n_tracks] = (sim_track){base_strdup(name), NULL, kind, res};
  return (int)t->n_tracks++;
}

int sim_trace_track(sim_engine *e, const char *track_name) {
  return new_track(&e->trace, track_name, SIM_TRACK_USER, NULL);
}

static int valid_track(const sim_trace *t, int track) {
  return track >= 0 && (size_t)track < t->n_tracks;
}

void sim_trace_track_group(sim_engine *e, int track, const char *group) {
  if (!valid_track(&e->trace, track)) return;
  free(e->trace.tracks[track].group);
  e->trace.tracks[track].group = base_strdup(group);
}

const char *sim_trace_default_group(const char *name, char *buf, size_t len) {
  size_t n = strlen(name);
  const char *cut = NULL;
  if (strncmp(name, "/job:", 5) == 0) cut = strstr(name, "/device:");
  else cut = strchr(name, '.');
  if (cut != NULL && cut > name) n = (size_t)(cut - name);
  snprintf(buf, len, "%.*s", (int)n, name);
  return buf;
}

/* Invariant 2. */
static void record(sim_trace *t, sim_trace_event ev, sim_time now) {
  if (t->n_events >= t->limit) {
    if (t->dropped++ == 0) t->first_dropped = now;
    if (ev.owns_strings) {
      free((char *)ev.name);
      free((char *)ev.category);
    }
    return;
  }
  sim__grow(&t->events, &t->cap_events, t->n_events + 1, sizeof *t->events);
  t->events[t->n_events++] = ev;
}

void sim__trace_resource_span(sim_engine *e, sim_resource *r, sim_track_kind kind,
                              sim_time start, sim_time end, double amount) {
  if (r->trace_track < 0) r->trace_track = new_track(&e->trace, r->name, kind, r);
  int cpu = kind == SIM_TRACK_CPU;
  record(&e->trace,
         (sim_trace_event){.track = r->trace_track, .name = cpu ? "exec" : "comm",
                           .category = cpu ? "compute" : "communication", .start = start,
                           .end = end, .amount = amount},
         e->now);
}

static void record_user(sim_engine *e, int track, const char *name, const char *category,
                        sim_time start, sim_time end, int instant) {
  if (!valid_track(&e->trace, track)) return;
  if (e->trace.n_events >= e->trace.limit) {  /* counted without copying the strings */
    record(&e->trace, (sim_trace_event){.track = track}, e->now);
    return;
  }
  record(&e->trace,
         (sim_trace_event){.track = track, .name = base_strdup(name),
                           .category = base_strdup(category), .start = start, .end = end,
                           .instant = instant, .owns_strings = 1},
         e->now);
}

void sim_trace_span(sim_engine *e, int track, const char *name, const char *category,
                    sim_time start, sim_time end) {
  record_user(e, track, name, category, start, end > start ? end : start, 0);
}

void sim_trace_instant(sim_engine *e, int track, const char *name, const char *category,
                       sim_time at) {
  record_user(e, track, name, category, at, at, 1);
}

/* ---- reading back ---------------------------------------------------------------------- */

size_t sim_trace_num_tracks(const sim_engine *e) { return e->trace.n_tracks; }

const char *sim_trace_track_name(const sim_engine *e, int track) {
  return valid_track(&e->trace, track) ? e->trace.tracks[track].name : NULL;
}

sim_track_kind sim_trace_track_kind(const sim_engine *e, int track) {
  return valid_track(&e->trace, track) ? e->trace.tracks[track].kind : SIM_TRACK_USER;
}

double sim_trace_track_capacity(const sim_engine *e, int track) {
  if (!valid_track(&e->trace, track) || e->trace.tracks[track].res == NULL) return 0.0;
  return e->trace.tracks[track].res->capacity;
}

size_t sim_trace_num_events(const sim_engine *e) { return e->trace.n_events; }

sim_trace_record sim_trace_event_at(const sim_engine *e, size_t i) {
  if (i >= e->trace.n_events) return (sim_trace_record){.track = -1};
  const sim_trace_event *ev = &e->trace.events[i];
  return (sim_trace_record){ev->track, ev->name, ev->category, ev->start, ev->end, ev->amount,
                            ev->instant};
}

size_t sim_trace_dropped(const sim_engine *e, sim_time *first) {
  if (first != NULL) *first = e->trace.first_dropped;
  return e->trace.dropped;
}

/* ---- the JSON writer ------------------------------------------------------------------- */

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

/* Invariant 1's sort key; the recording index breaks every remaining tie. */
typedef struct sort_key {
  sim_time start;          /* earlier first */
  sim_time end;            /* then longer first */
  size_t index;            /* then recording order */
  int track;               /* tracks in id order before all of that */
} sort_key;

static int by_track_then_start(const void *pa, const void *pb) {
  const sort_key *x = pa, *y = pb;
  if (x->track != y->track) return x->track < y->track ? -1 : 1;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  if (x->end != y->end) return x->end > y->end ? -1 : 1;
  return (x->index > y->index) - (x->index < y->index);
}

/* The writer's layout: events in output order, each one's lane, and per track its first
** thread id, lane count and process id. */
typedef struct layout {
  size_t *order;           /* event indices in invariant 1's order */
  int *lane;               /* lane of each event (by recording index) */
  int *first_tid;          /* per track: the tid of its lane 0 */
  int *lanes;              /* per track: how many lanes it needed (at least 1) */
  int *pid;                /* per track: its process (1-based) */
  char (*groups)[128];     /* process names by pid - 1 */
  int ngroups;             /* processes */
} layout;

static void layout_free(layout *l) {
  free(l->order);
  free(l->lane);
  free(l->first_tid);
  free(l->lanes);
  free(l->pid);
  free(l->groups);
}

/* Greedy interval partitioning over each track's events in start order: an event goes in the
** first lane whose last span has ended (invariant 3). */
static void assign_lanes(const sim_trace *t, layout *l) {
  sim_time *lane_end = NULL;
  size_t cap = 0;
  for (size_t k = 0; k < t->n_events;) {
    int track = t->events[l->order[k]].track, used = 1;
    sim__grow(&lane_end, &cap, 1, sizeof *lane_end);
    lane_end[0] = INT64_MIN;
    for (; k < t->n_events && t->events[l->order[k]].track == track; k++) {
      const sim_trace_event *ev = &t->events[l->order[k]];
      int lane = 0;
      if (!ev->instant) {
        while (lane < used && lane_end[lane] > ev->start) lane++;
        if (lane == used) {
          sim__grow(&lane_end, &cap, (size_t)used + 1, sizeof *lane_end);
          used++;
        }
        lane_end[lane] = ev->end;
      }
      l->lane[l->order[k]] = lane;
    }
    l->lanes[track] = used;
  }
  free(lane_end);
}

/* One track's process name, for assign_processes' sort. */
typedef struct named_track { const char *group; size_t track; } named_track;

static int by_group_then_track(const void *a, const void *b) {
  const named_track *x = a, *y = b;
  int c = strcmp(x->group, y->group);
  return c != 0 ? c : (x->track > y->track) - (x->track < y->track);
}

/* Processes are numbered in the order their groups first appear among the tracks. Tracks are
** sorted by group (then index), so each group's first track heads its run: linear after the
** sort, where a search of the groups seen so far per track was quadratic (a 6-slice v4-8192
** trace spent a sixth of its run in strcmp). */
static void assign_processes(const sim_trace *t, layout *l) {
  size_t n = t->n_tracks;
  char (*names)[sizeof l->groups[0]] = base_xcalloc(n ? n : 1, sizeof *names);
  named_track *by = base_xcalloc(n ? n : 1, sizeof *by);
  const char **group = base_xcalloc(n ? n : 1, sizeof *group); /* per track */
  for (size_t i = 0; i < n; i++) {
    group[i] = t->tracks[i].group;
    if (group[i] == NULL) group[i] = sim_trace_default_group(t->tracks[i].name, names[i], sizeof names[i]);
    by[i] = (named_track){ group[i], i };
  }
  qsort(by, n, sizeof *by, by_group_then_track);
  size_t *head = base_xcalloc(n ? n : 1, sizeof *head); /* per track: the first track of its group */
  for (size_t k = 0; k < n; k++)
    head[by[k].track] = k > 0 && strcmp(by[k].group, by[k - 1].group) == 0 ? head[by[k - 1].track] : by[k].track;
  for (size_t i = 0; i < n; i++) {
    if (head[i] == i) {
      snprintf(l->groups[l->ngroups], sizeof l->groups[0], "%s", group[i]);
      l->pid[i] = ++l->ngroups;
    } else {
      l->pid[i] = l->pid[head[i]];
    }
  }
  free(head);
  free(group);
  free(by);
  free(names);
}

static void make_layout(const sim_trace *t, layout *l) {
  size_t nt = t->n_tracks ? t->n_tracks : 1, ne = t->n_events ? t->n_events : 1;
  l->order = base_xcalloc(ne, sizeof *l->order);
  l->lane = base_xcalloc(ne, sizeof *l->lane);
  l->first_tid = base_xcalloc(nt, sizeof *l->first_tid);
  l->lanes = base_xcalloc(nt, sizeof *l->lanes);
  l->pid = base_xcalloc(nt, sizeof *l->pid);
  l->groups = base_xcalloc(nt, sizeof *l->groups);
  l->ngroups = 0;
  sort_key *keys = base_xcalloc(ne, sizeof *keys);
  for (size_t i = 0; i < t->n_events; i++)
    keys[i] = (sort_key){t->events[i].start, t->events[i].end, i, t->events[i].track};
  qsort(keys, t->n_events, sizeof *keys, by_track_then_start);
  for (size_t i = 0; i < t->n_events; i++) l->order[i] = keys[i].index;
  free(keys);
  for (size_t i = 0; i < t->n_tracks; i++) l->lanes[i] = 1;
  assign_lanes(t, l);
  for (size_t i = 0, tid = 1; i < t->n_tracks; tid += (size_t)l->lanes[i], i++)
    l->first_tid[i] = (int)tid;
  assign_processes(t, l);
}

static void put_meta(FILE *f, int *first, const char *what, int pid, int tid, const char *name,
                     int sort_index) {
  fprintf(f, "%s{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{", *first ? "" : ",",
          what, pid, tid);
  *first = 0;
  if (name != NULL) {
    fputs("\"name\":", f);
    put_string(f, name);
  } else {
    fprintf(f, "\"sort_index\":%d", sort_index);
  }
  fputs("}}", f);
}

static void put_metadata(FILE *f, const sim_trace *t, const layout *l, int *first) {
  for (int p = 0; p < l->ngroups; p++) {
    put_meta(f, first, "process_name", p + 1, 0, l->groups[p], 0);
    put_meta(f, first, "process_sort_index", p + 1, 0, NULL, p + 1);
  }
  char name[256];
  for (size_t i = 0; i < t->n_tracks; i++)
    for (int lane = 0; lane < l->lanes[i]; lane++) {
      int tid = l->first_tid[i] + lane;
      if (lane == 0) snprintf(name, sizeof name, "%s", t->tracks[i].name);
      else snprintf(name, sizeof name, "%s [%d]", t->tracks[i].name, lane + 1);
      put_meta(f, first, "thread_name", l->pid[i], tid, name, 0);
      put_meta(f, first, "thread_sort_index", l->pid[i], tid, NULL, tid);
    }
}

static void put_event(FILE *f, const sim_trace *t, const layout *l, size_t i, int *first) {
  const sim_trace_event *ev = &t->events[i];
  fputs(*first ? "{\"name\":" : ",{\"name\":", f);
  *first = 0;
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
  fprintf(f, ",\"pid\":%d,\"tid\":%d", l->pid[ev->track], l->first_tid[ev->track] + l->lane[i]);
  if (!ev->owns_strings)  /* an engine span: what it moved or computed, for the viewer's panel */
    fprintf(f, ",\"args\":{\"%s\":%.17g}", t->tracks[ev->track].kind == SIM_TRACK_CPU ? "flops" : "bytes",
            ev->amount);
  fputc('}', f);
}

/* The cap (invariant 2) as a global instant where the trace stops and a note in otherData. */
static void put_truncation(FILE *f, const sim_trace *t, int *first) {
  fputs(*first ? "" : ",", f);
  *first = 0;
  fputs("{\"name\":\"trace capped: later events not recorded\",\"cat\":\"podsim\",\"ph\":\"i\",\"ts\":", f);
  put_us(f, t->first_dropped);
  fputs(",\"s\":\"g\",\"pid\":1,\"tid\":0}", f);
}

/* Streams the events with fprintf: a jansson tree of a long run's events would need many times
** the memory of the compact records it is made from. */
int sim_trace_write_json(const sim_engine *e, const char *path) {
  const sim_trace *t = &e->trace;
  FILE *f = fopen(path, "w");
  if (f == NULL) return -1;
  layout l;
  make_layout(t, &l);
  int first = 1;
  fputs("{\"traceEvents\":[", f);
  put_metadata(f, t, &l, &first);
  for (size_t k = 0; k < t->n_events; k++) put_event(f, t, &l, l.order[k], &first);
  if (t->dropped > 0) put_truncation(f, t, &first);
  fputs("],\"displayTimeUnit\":\"ns\"", f);
  if (t->dropped > 0) {
    fprintf(f, ",\"otherData\":{\"podsim_trace_limit\":%zu,\"podsim_dropped_events\":%zu,"
               "\"podsim_note\":\"the trace keeps the first %zu events; the %zu that ended from ",
            t->limit, t->dropped, t->limit, t->dropped);
    put_us(f, t->first_dropped);
    fputs(" us on are not recorded (docs/reports.md)\"}", f);
  }
  fputs("}", f);
  layout_free(&l);
  return base_fclose(f);
}
