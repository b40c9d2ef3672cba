/*
** report.c: the charts, the progress bar and the text summary of a run (report_).
**
** Charts take their time axis in the unit that suits their span (us, ms or s) and name it in
** the axis label. Where a cluster has more devices or links than a chart can show legibly, the
** chart keeps a fixed number, chosen by a rule that depends only on simulated data (busiest
** first, ties by track id), and says so in its title.
**
** Invariants:
**   (1) nothing here changes a simulated value: charts read the run after it ended, and the
**       progress bar only reads step counts and the wall clock and writes to a terminal;
**   (2) every chart is a function of the run's records and trace, so the same run draws the
**       same bytes (plots/ guarantees the rest).
*/
#include "scenarios/report/report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "plots/plot.h"
#include "scenarios/programs/train.h"

#define MAX_ROWS 24          /* rows of a timeline or heatmap */
#define MAX_BARS 16          /* bars of the memory chart */
#define HEATMAP_BINS 120     /* time bins of the heatmap */
#define TIMELINE_STEPS 3     /* steps the timeline shows */

/* ---- helpers --------------------------------------------------------------------------- */

double report_time_unit(double seconds, const char **name) {
  if (seconds < 2e-3) return *name = "us", 1e6;
  if (seconds < 2.0) return *name = "ms", 1e3;
  return *name = "s", 1.0;
}

/* "/job:worker/replica:0/task:1/device:TPU:3" -> "task:1/TPU:3"; other names unchanged. */
static const char *short_device(const char *name, char *buf, size_t len) {
  const char *task = strstr(name, "task:"), *dev = strstr(name, "device:");
  if (task == NULL || dev == NULL) return snprintf(buf, len, "%s", name), buf;
  snprintf(buf, len, "%.*s/%s", (int)strcspn(task, "/"), task, dev + 7);
  return buf;
}

static pl_format plot_format(scn_plot_format f) {
  return f == SCN_FORMAT_SVG ? PL_SVG : f == SCN_FORMAT_PDF ? PL_PDF : PL_PNG;
}

/* ---- loss and step time ------------------------------------------------------------------ */

/* What the loss and step-time charts draw: one point per completed step. Async steps complete
** out of order (metrics.csv lists them as their updates are applied): drawn against their step
** numbers the line would run back and forth, so the x axis counts updates applied, which is
** what optimizer.iterations reads at each one. */
typedef struct step_points {
  size_t n;               /* points */
  double *x, *y;          /* x: step (or updates applied), y: loss */
  double *parts;          /* 5 x (n + 1): input, compute, communication, idle, host, in `unit` */
  const char *unit;       /* the time unit of parts */
  const char *xlabel;     /* "step" or "updates applied" */
} step_points;

static step_points step_points_of(const report_run *run) {
  const scenario *s = run->s;
  step_points p = { .n = (size_t)run->nsteps };
  size_t n = p.n;
  p.x = base_xcalloc(n + 1, sizeof *p.x);
  p.y = base_xcalloc(n + 1, sizeof *p.y);
  p.parts = base_xcalloc(5 * (n + 1), sizeof *p.parts);
  double longest = 0;
  for (size_t i = 0; i < n; i++) longest = fmax(longest, sim_time_to_s(run->steps[i].step_ps - run->steps[i].compile_ps));
  double scale = report_time_unit(longest, &p.unit);
  int async = s->strategy == SCN_STRATEGY_PARAMETER_SERVER;
  p.xlabel = async ? "updates applied" : "step";
  for (size_t i = 0; i < n; i++) {
    const step_record *r = &run->steps[i];
    p.x[i] = async ? (double)(i + 1) : (double)r->step;
    p.y[i] = r->loss;
    int64_t ps[5] = { r->input_ps, r->compute_ps, r->comm_ps, r->idle_ps, r->host_ps };
    for (int k = 0; k < 5; k++) p.parts[(size_t)k * (n + 1) + i] = scale * sim_time_to_s(ps[k]);
  }
  return p;
}

static void step_points_free(step_points *p) {
  free(p->x);
  free(p->y);
  free(p->parts);
}

/* The points of a line with a break (a NaN point) wherever x goes back: a restart redoes steps
** from its checkpoint, and joining its first redone step to the last one lost would draw a
** segment across steps no attempt ran in that order. bx and by hold 2 n points. */
static size_t with_restart_breaks(const double *x, const double *y, size_t n, double *bx, double *by) {
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    if (i > 0 && x[i] <= x[i - 1]) bx[m] = by[m] = NAN, m++;
    bx[m] = x[i], by[m] = y[i], m++;
  }
  return m;
}

static int loss(const report_run *run, const char *path, char *msg, size_t msglen) {
  step_points p = step_points_of(run);
  double *bx = base_xcalloc(2 * p.n + 1, sizeof *bx), *by = base_xcalloc(2 * p.n + 1, sizeof *by);
  size_t m = with_restart_breaks(p.x, p.y, p.n, bx, by);
  pl_series lines[2] = { { "loss", bx, by, m, PL_MARK_NONE },
                         { "val_loss", run->val_x, run->val_y, run->nval, PL_MARK_NONE } };
  char title[256];
  snprintf(title, sizeof title, "Training loss \xe2\x80\x94 %s", run->s->name);
  int rc = pl_line_chart(path, plot_format(run->s->format), title, p.xlabel, "loss (mean per example)",
                         lines, run->nval > 0 ? 2 : 1, msg, msglen);
  step_points_free(&p);
  free(bx);
  free(by);
  return rc;
}

/* Compile time (the first step's, seconds against microsecond steps) would flatten every bar:
** it is in metrics.csv and summary.json. */
static int step_time(const report_run *run, const char *path, char *msg, size_t msglen) {
  step_points p = step_points_of(run);
  size_t n = p.n;
  pl_stack stacks[5] = { { "input", p.parts }, { "compute", p.parts + (n + 1) },
                         { "communication", p.parts + 2 * (n + 1) }, { "idle", p.parts + 3 * (n + 1) },
                         { "host", p.parts + 4 * (n + 1) } };
  char title[256], ylabel[64];
  snprintf(title, sizeof title, "Step time breakdown \xe2\x80\x94 %s", run->s->name);
  snprintf(ylabel, sizeof ylabel, "simulated time (%s)", p.unit);
  int rc = pl_stacked_bars(path, plot_format(run->s->format), title, p.xlabel, ylabel, p.x, n, stacks, 5,
                           msg, msglen);
  step_points_free(&p);
  return rc;
}

/* ---- rows from the trace ------------------------------------------------------------------ */

/* Tracks of a kind with their weight (busy time or utilisation) in a window; the heaviest
** MAX_ROWS kept, then put back in track order so rows stay in the cluster's order. */
typedef struct row_pick {
  int track;              /* trace track */
  double weight;          /* what ranks it */
} row_pick;

static int by_weight(const void *a, const void *b) {
  const row_pick *x = a, *y = b;
  if (x->weight != y->weight) return x->weight > y->weight ? -1 : 1;
  return (x->track > y->track) - (x->track < y->track);
}

static int by_track(const void *a, const void *b) {
  const row_pick *x = a, *y = b;
  return (x->track > y->track) - (x->track < y->track);
}

/* Fills picks with up to `max` tracks accepted by `want` that have weight in [t0, t1): weight
** is busy time, or with `utilisation` bytes over the track's bandwidth, so that a multi-VM run's
** NICs, which carry fewer bytes than NVLink but at a far lower rate, rank as the bottleneck
** they are. Returns how many there were before the cut. */
static size_t pick_rows(const sim_engine *e, int (*want)(sim_track_kind), int utilisation, sim_time t0,
                        sim_time t1, row_pick *picks, size_t max, size_t *kept) {
  size_t nt = sim_trace_num_tracks(e), n = 0;
  row_pick *all = base_xcalloc(nt + 1, sizeof *all);
  for (size_t i = 0; i < nt; i++) all[i] = (row_pick){ (int)i, -1 };
  for (size_t i = 0; i < sim_trace_num_events(e); i++) {
    sim_trace_record r = sim_trace_event_at(e, i);
    if (!want(sim_trace_track_kind(e, r.track)) || r.end < t0 || r.start >= t1) continue;
    double bw = sim_trace_track_capacity(e, r.track);
    double w = utilisation ? r.amount / (bw > 0 ? bw : 1)
                           : sim_time_to_s((r.end < t1 ? r.end : t1) - (r.start > t0 ? r.start : t0));
    all[r.track].weight = fmax(all[r.track].weight, 0) + w;
  }
  for (size_t i = 0; i < nt; i++)
    if (all[i].weight >= 0) all[n++] = all[i];
  qsort(all, n, sizeof *all, by_weight);
  *kept = n < max ? n : max;
  memcpy(picks, all, *kept * sizeof *picks);
  qsort(picks, *kept, sizeof *picks, by_track);
  free(all);
  return n;
}

static int is_device(sim_track_kind k) { return k == SIM_TRACK_CPU; }
static int is_link(sim_track_kind k) { return k == SIM_TRACK_LINK; }

/* Row label of a track: its device or link name, shortened. */
static void row_label(const sim_engine *e, int track, char *buf, size_t len) {
  short_device(sim_trace_track_name(e, track), buf, len);
}

/* ---- timeline ------------------------------------------------------------------------------ */

/* The first TIMELINE_STEPS steps, skipping a first step that compiled (its seconds of compile
** would squeeze the rest into a sliver): the busiest compute units (TPU cores, GPUs, host
** CPUs), then the busiest links. A replica's own "step N" spans are left out: they would
** cover its row; the steps' edges show in the work around them. */
static int timeline(const report_run *run, const char *path, char *msg, size_t msglen) {
  const scenario *s = run->s;
  const sim_engine *e = run->engine;
  long first = run->nsteps > 1 && run->steps[0].compile_ps > 0 ? 1 : 0;
  long last = first + TIMELINE_STEPS - 1 < run->nsteps ? first + TIMELINE_STEPS - 1 : run->nsteps - 1;
  sim_time t0 = run->nsteps > 0 ? run->steps[first].end_ps - run->steps[first].step_ps : 0;
  sim_time t1 = run->nsteps > 0 ? run->steps[last].end_ps : 0;
  row_pick devs[MAX_ROWS], links[MAX_ROWS];
  size_t ndev, nlink, all_links;
  pick_rows(e, is_device, 0, t0, t1, devs, MAX_ROWS / 2, &ndev);
  all_links = pick_rows(e, is_link, 0, t0, t1, links, MAX_ROWS - ndev, &nlink);
  size_t nrows = ndev + nlink;
  char (*labels)[64] = base_xcalloc(nrows + 1, sizeof *labels);
  const char **rows = base_xcalloc(nrows + 1, sizeof *rows);
  int *row_of = base_xcalloc(sim_trace_num_tracks(e) + 1, sizeof *row_of);
  for (size_t i = 0; i < sim_trace_num_tracks(e); i++) row_of[i] = -1;
  for (size_t i = 0; i < nrows; i++) {
    int track = i < ndev ? devs[i].track : links[i - ndev].track;
    row_of[track] = (int)i;
    row_label(e, track, labels[i], sizeof labels[i]);
    rows[i] = labels[i];
  }
  const char *unit;
  double scale = report_time_unit(sim_time_to_s(t1 - t0), &unit);
  static const char *const names[] = { "other", "compute", "communication", "event" };
  const char *cats[4] = { NULL, NULL, NULL, NULL };  /* a legend entry only for what is drawn */
  size_t cap = 1024, n = 0;
  pl_span *spans = base_xcalloc(cap, sizeof *spans);
  for (size_t i = 0; i < sim_trace_num_events(e) && t1 > t0; i++) {
    sim_trace_record r = sim_trace_event_at(e, i);
    /* Spans that only touch the window would draw as slivers at its edges. */
    int outside = r.instant ? r.start < t0 || r.start > t1 : r.end <= t0 || r.start >= t1;
    if (row_of[r.track] < 0 || outside) continue;
    if (n == cap) {
      pl_span *more = realloc(spans, 2 * cap * sizeof *spans);
      if (more == NULL) break;  /* the chart shows what fitted */
      spans = more;
      cap *= 2;
    }
    sim_track_kind k = sim_trace_track_kind(e, r.track);
    int cat = r.instant ? 3 : k == SIM_TRACK_CPU ? 1 : k == SIM_TRACK_LINK ? 2 : 0;
    cats[cat] = names[cat];
    sim_time a = r.start > t0 ? r.start : t0, b = r.end < t1 ? r.end : t1;
    spans[n++] = (pl_span){ (size_t)row_of[r.track], scale * sim_time_to_s(a - t0),
                            scale * sim_time_to_s(b - t0), cat };
  }
  char title[256], xlabel[96], note[64] = "";
  if (all_links > nlink) snprintf(note, sizeof note, ", busiest %zu of %zu links", nlink, all_links);
  snprintf(title, sizeof title, "Timeline of steps %ld-%ld \xe2\x80\x94 %s%s", first, last, s->name, note);
  snprintf(xlabel, sizeof xlabel, "simulated time from the start of step %ld (%s)", first, unit);
  int rc = pl_timeline(path, plot_format(s->format), title, xlabel, 0, scale * sim_time_to_s(t1 - t0),
                       rows, nrows, cats, 4, spans, n,
                       "no spans recorded", msg, msglen);
  free(spans);
  free(row_of);
  free(rows);
  free(labels);
  return rc;
}

/* ---- link utilisation heatmap -------------------------------------------------------------- */

size_t report_link_rows(const sim_engine *e, sim_time t0, sim_time t1, int *tracks, size_t max, size_t *kept) {
  row_pick *picks = base_xcalloc(max + 1, sizeof *picks);
  size_t all = pick_rows(e, is_link, 1, t0, t1, picks, max, kept);
  for (size_t i = 0; i < *kept; i++) tracks[i] = picks[i].track;
  free(picks);
  return all;
}

/* The smallest 1-2-5 value >= v (v > 0). */
static double nice_ceil(double v) {
  double mag = pow(10, floor(log10(v))), f = v / mag;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

/* Bytes a transfer moved, spread evenly over its span (latency included), in HEATMAP_BINS bins
** from the first transfer to the end of the run (or of the trace, when capped), over each link's
** bandwidth: percent of capacity per bin. The scale tops at the highest cell rounded up to 1, 2
** or 5, so a lightly loaded fabric still shows its pattern, and at 100 at most: spreading a
** transfer's bytes evenly over its span can put a few percent over 100 in a bin (a NIC of two
** a2-highgpu-8g VMs read 102%), which would have doubled the scale and drawn a saturated link
** in mid-blue; such cells take the darkest colour. Its label says what 100 means. */
static int heatmap(const report_run *run, const char *path, char *msg, size_t msglen) {
  const scenario *s = run->s;
  const sim_engine *e = run->engine;
  sim_time first_dropped, end = sim_now(e), t0 = end;
  if (sim_trace_dropped(e, &first_dropped) > 0 && first_dropped < end) end = first_dropped;
  for (size_t i = 0; i < sim_trace_num_events(e); i++) {
    sim_trace_record r = sim_trace_event_at(e, i);
    if (is_link(sim_trace_track_kind(e, r.track)) && r.start < t0) t0 = r.start;
  }
  /* A compile of seconds before microsecond steps would leave the steps a sliver at the end. */
  sim_time compiled = run->nsteps > 0 ? run->steps[0].end_ps - run->steps[0].step_ps + run->steps[0].compile_ps : 0;
  if (compiled > t0) t0 = compiled;
  if (t0 >= end) t0 = 0;
  if (end <= t0) end = t0 + 1;
  int links[MAX_ROWS];
  size_t nlink, all_links = report_link_rows(e, t0, end, links, MAX_ROWS, &nlink);
  int *row_of = base_xcalloc(sim_trace_num_tracks(e) + 1, sizeof *row_of);
  for (size_t i = 0; i < sim_trace_num_tracks(e); i++) row_of[i] = -1;
  char (*labels)[64] = base_xcalloc(nlink + 1, sizeof *labels);
  const char **rows = base_xcalloc(nlink + 1, sizeof *rows);
  for (size_t i = 0; i < nlink; i++) {
    row_of[links[i]] = (int)i;
    row_label(e, links[i], labels[i], sizeof labels[i]);
    rows[i] = labels[i];
  }
  double *v = base_xcalloc(nlink * HEATMAP_BINS + 1, sizeof *v);
  double bin = (double)(end - t0) / HEATMAP_BINS;  /* picoseconds */
  for (size_t i = 0; i < sim_trace_num_events(e); i++) {
    sim_trace_record r = sim_trace_event_at(e, i);
    if (row_of[r.track] < 0 || r.start >= end) continue;
    double *row = v + (size_t)row_of[r.track] * HEATMAP_BINS;
    double a = (double)(r.start - t0), b = fmin((double)(r.end - t0), (double)(end - t0));
    double len = (double)(r.end - r.start);
    if (len <= 0) {
      row[(size_t)fmin(a / bin, HEATMAP_BINS - 1)] += r.amount;
      continue;
    }
    for (size_t c = (size_t)(a / bin); c < HEATMAP_BINS && c * bin < b; c++) {
      double lo = fmax(a, c * bin), hi = fmin(b, (c + 1) * bin);
      if (hi > lo) row[c] += r.amount * (hi - lo) / len;
    }
  }
  double top = 0;
  for (size_t i = 0; i < nlink; i++) {
    double bw = sim_trace_track_capacity(e, links[i]);
    for (size_t c = 0; c < HEATMAP_BINS; c++) {
      double *cell = &v[i * HEATMAP_BINS + c];
      *cell = bw > 0 ? 100.0 * *cell / (bw * bin * 1e-12) : NAN;
      if (isfinite(*cell)) top = fmax(top, *cell);
    }
  }
  const char *unit;
  char first_s[32];
  double scale = report_time_unit(sim_time_to_s(end - t0), &unit);
  char title[256], xlabel[96], note[64] = "";
  if (all_links > nlink) snprintf(note, sizeof note, " (busiest %zu of %zu links)", nlink, all_links);
  snprintf(title, sizeof title, "Link utilisation \xe2\x80\x94 %s%s", s->name, note);
  if (t0 > 0) {  /* the start in a unit of its own size: "from 7 us", not "from 0.000007 s" */
    const char *t0_unit;
    double t0_scale = report_time_unit(sim_time_to_s(t0), &t0_unit);
    snprintf(first_s, sizeof first_s, "%.4g %s", t0_scale * sim_time_to_s(t0), t0_unit);
    snprintf(xlabel, sizeof xlabel, "simulated time from %s (%s)", first_s, unit);
  }
  else snprintf(xlabel, sizeof xlabel, "simulated time (%s)", unit);
  int rc = pl_heatmap(path, plot_format(s->format), title, xlabel, rows, nlink, 0,
                      scale * sim_time_to_s(end - t0), HEATMAP_BINS, v, 0, top > 0 ? fmin(nice_ceil(top), 100) : 100,
                      "bytes moved / link bandwidth (%)", msg, msglen);
  free(v);
  free(rows);
  free(labels);
  free(row_of);
  return rc;
}

/* ---- device memory ------------------------------------------------------------------------- */

/* A bar per distinct (peak, capacity), in device order: a data-parallel run's identical replicas
** make one bar "task:0/TPU:0 +63". */
static int hbm(const report_run *run, const char *path, char *msg, size_t msglen) {
  const scenario *s = run->s;
  double used[MAX_BARS], cap[MAX_BARS], top = 1;
  int count[MAX_BARS], first[MAX_BARS];
  size_t n = 0;
  for (int d = 0; d < run->ndevices; d++) {
    const run_device *dev = &run->devices[d];
    size_t k = 0;
    while (k < n && !(used[k] == (double)dev->peak_bytes && cap[k] == (double)dev->capacity_bytes)) k++;
    if (k == n) {
      if (n == MAX_BARS) continue;  /* past sixteen kinds: the title says how many were left out */
      used[n] = (double)dev->peak_bytes;
      cap[n] = (double)dev->capacity_bytes;
      count[n] = 0;
      first[n++] = d;
    }
    count[k]++;
  }
  for (size_t k = 0; k < n; k++) top = fmax(top, fmax(used[k], cap[k]));
  static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
  int u = 0;
  while (top >= 1024.0 * 2 && u < 4) top /= 1024.0, u++;
  double div = pow(1024.0, u);
  char labels[MAX_BARS][80], notes[MAX_BARS][80], a[32], b[32], name[64];
  const char *lp[MAX_BARS], *np[MAX_BARS];
  int shown = 0;
  for (size_t k = 0; k < n; k++) {
    short_device(run->devices[first[k]].name, name, sizeof name);
    if (count[k] > 1) snprintf(labels[k], sizeof labels[k], "%s +%d", name, count[k] - 1);
    else snprintf(labels[k], sizeof labels[k], "%s", name);
    snprintf(notes[k], sizeof notes[k], "%s of %s (%.1f%%)", outputs_bytes(a, sizeof a, used[k]),
             outputs_bytes(b, sizeof b, cap[k]), cap[k] > 0 ? 100.0 * used[k] / cap[k] : 0.0);
    used[k] /= div;
    cap[k] /= div;
    lp[k] = labels[k];
    np[k] = notes[k];
    shown += count[k];
  }
  char title[256], ylabel[64], note[64] = "";
  if (shown < run->ndevices) snprintf(note, sizeof note, " (%d of %d devices)", shown, run->ndevices);
  snprintf(title, sizeof title, "Peak device memory against capacity \xe2\x80\x94 %s%s", s->name, note);
  snprintf(ylabel, sizeof ylabel, "device memory (%s)", units[u]);
  return pl_capacity_bars(path, plot_format(s->format), title, ylabel, lp, used, cap, np, n, msg, msglen);
}

/* ---- faults and goodput ---------------------------------------------------------------------- */

/* Row order: "training" first, then by job name and task number ("worker:2" before "worker:10"),
** so a fleet's rows read in task order whatever struck first. */
static int row_cmp(const void *pa, const void *pb) {
  const char *a = *(const char *const *)pa, *b = *(const char *const *)pb;
  int ta = strcmp(a, "training") == 0, tb = strcmp(b, "training") == 0;
  if (ta || tb) return tb - ta;
  size_t la = strcspn(a, ":"), lb = strcspn(b, ":");
  int c = strncmp(a, b, la < lb ? la : lb);
  if (c != 0 || la != lb) return c != 0 ? c : (la < lb ? -1 : 1);
  long na = a[la] ? strtol(a + la + 1, NULL, 10) : -1, nb = b[lb] ? strtol(b + lb + 1, NULL, 10) : -1;
  return na != nb ? (na < nb ? -1 : 1) : strcmp(a, b);
}

/* A row per target (row_cmp's order) and a legend entry per kind in order of first appearance;
** the title gives summary.json's goodput (docs/faults.md). */
static int faults(const report_run *run, const char *path, char *msg, size_t msglen) {
  const scenario *s = run->s;
  size_t n = run->nfaults;
  const char **rows = base_xcalloc(n + 1, sizeof *rows), **cats = base_xcalloc(n + 1, sizeof *cats);
  pl_span *spans = base_xcalloc(n + 1, sizeof *spans);
  size_t nrows = 0, ncats = 0;
  double end_s = sim_time_to_s(sim_now(run->engine));
  const char *unit;
  double scale = report_time_unit(end_s, &unit);
  for (size_t i = 0; i < n; i++) {
    size_t r = 0;
    while (r < nrows && strcmp(rows[r], run->faults[i].target) != 0) r++;
    if (r == nrows) rows[nrows++] = run->faults[i].target;
  }
  qsort(rows, nrows, sizeof *rows, row_cmp);
  for (size_t i = 0; i < n; i++) {
    const report_fault *f = &run->faults[i];
    size_t r = 0, c = 0;
    while (strcmp(rows[r], f->target) != 0) r++;
    while (c < ncats && strcmp(cats[c], f->kind) != 0) c++;
    if (c == ncats) cats[ncats++] = f->kind;
    spans[i] = (pl_span){ r, scale * sim_time_to_s(f->start_ps), scale * sim_time_to_s(f->end_ps), (int)c };
  }
  char title[256], xlabel[64];
  snprintf(title, sizeof title, "Faults and restarts \xe2\x80\x94 %s (goodput %.3g%%)", s->name,
           100.0 * run->goodput);
  snprintf(xlabel, sizeof xlabel, "simulated time (%s)", unit);
  int rc = pl_timeline(path, plot_format(s->format), title, xlabel, 0, scale * end_s, rows, nrows,
                       cats, ncats, spans,
                       n, "no faults", msg, msglen);
  free(spans);
  free(cats);
  free(rows);
  return rc;
}

const report_chart REPORT_CHARTS[] = {
  { "loss", 0, loss },
  { "step_time", 0, step_time },
  { "timeline", 1, timeline },
  { "hbm", 0, hbm },
  { "heatmap", 1, heatmap },
  { "faults", 0, faults },
  { NULL, 0, NULL } };

int report_chart_index(const char *name) {
  for (int i = 0; REPORT_CHARTS[i].name; i++)
    if (strcmp(REPORT_CHARTS[i].name, name) == 0) return i;
  return -1;
}

int report_needs_trace(unsigned plots) {
  for (int i = 0; REPORT_CHARTS[i].name; i++)
    if ((plots & REPORT_CHART_BIT(i)) && REPORT_CHARTS[i].needs_trace) return 1;
  return 0;
}

int report_write_plots(const report_run *run, const char *dir, char *msg, size_t msglen) {
  static const char *const ext[] = { "png", "svg", "pdf" };
  char path[SCN_PATH_MAX + 32];
  for (int i = 0; REPORT_CHARTS[i].name; i++) {
    if (!(run->s->plots & REPORT_CHART_BIT(i))) continue;
    snprintf(path, sizeof path, "%s/%s.%s", dir, REPORT_CHARTS[i].name, ext[run->s->format]);
    if (REPORT_CHARTS[i].draw(run, path, msg, msglen) != 0) return -1;
  }
  return 0;
}

/* ---- the summary ----------------------------------------------------------------------------- */

/* A duration in the unit that suits it: "191.1 us", "57.3 ms", "12.5 s". */
static const char *human_time(char *buf, size_t len, double seconds) {
  const char *unit;
  double scale = report_time_unit(seconds, &unit);
  snprintf(buf, len, "%.4g %s", seconds * scale, unit);
  return buf;
}

/* A loss for the summary: with numerics off there is none (summary.json has null), and a loss
** that is not a number is a diverged run's, said in words rather than a bare "nan". */
static const char *loss_text(char *buf, size_t len, double loss, int numerics_full) {
  if (!numerics_full) snprintf(buf, len, "n/a (numerics: off)");
  else if (!isfinite(loss)) snprintf(buf, len, "%s (diverged)", isnan(loss) ? "nan" : "inf");
  else snprintf(buf, len, "%.6g", loss);
  return buf;
}

void report_print_summary(FILE *f, const scenario *s, const char *dir, const run_summary *sum) {
  char a[32], b[32], c[32], d[32], e[32];
  fprintf(f, "podsim: %s\n", sum->scenario);
  fprintf(f, "  strategy      %s, %d replica%s, gradient all-reduce %s\n", sum->strategy, sum->replicas,
          sum->replicas == 1 ? "" : "s", sum->all_reduce);
  if (s->tpu_type[0]) {
    char slices[96] = "";
    if (s->tpu_slices > 1)
      snprintf(slices, sizeof slices, " x %d slices joined by DCN (all-reduce: torus within each, ring across)",
               s->tpu_slices);
    fprintf(f, "  cluster       TPU %s, topology %dx%dx%d%s\n", s->tpu_type, s->tpu_dims[0], s->tpu_dims[1],
            s->tpu_dims[2], slices);
  } else if (s->strategy == SCN_STRATEGY_PARAMETER_SERVER)
    fprintf(f, "  cluster       %d x %s workers, %d x %s ps, chief %s%s%s\n", s->workers, s->worker_machine.type,
            s->ps, s->ps_machine.type, s->chief_machine.type, s->has_evaluator ? ", evaluator " : "",
            s->has_evaluator ? s->evaluator_machine.type : "");
  else
    fprintf(f, "  cluster       %d x %s\n", s->workers, s->worker_machine.type);
  /* The headline rate is the compiled step's, what a longer run converges to; the whole run's,
  ** compile included, beside it. */
  if (sum->compile_s > 0)
    fprintf(f, "  steps         %ld in %s simulated (%.6g examples/s steady state; %.6g with the %s XLA compile before the first step)\n",
            sum->steps_completed, human_time(a, sizeof a, sum->sim_time_s), sum->steady_examples_per_s,
            sum->examples_per_s, human_time(b, sizeof b, sum->compile_s));
  else
    fprintf(f, "  steps         %ld in %s simulated (%.6g examples/s)\n", sum->steps_completed,
            human_time(a, sizeof a, sum->sim_time_s), sum->examples_per_s);
  if (sum->steps_completed > 0) {
    const run_step_means *m = &sum->means;
    fprintf(f, "  step time     %s mean: input %s, compute %s, communication %s, idle %s",
            human_time(a, sizeof a, m->step_s), human_time(b, sizeof b, m->input_s),
            human_time(c, sizeof c, m->compute_s), human_time(d, sizeof d, m->comm_s),
            human_time(e, sizeof e, m->idle_s));
    if (m->host_s > 0) fprintf(f, ", host %s", human_time(a, sizeof a, m->host_s));
    fputc('\n', f);
    if (sum->all_reduce_packs > 0)
      fprintf(f, "  overlap       all-reduce in %d packs: %s a step hidden under the backward, %s exposed\n",
              sum->all_reduce_packs, human_time(a, sizeof a, m->comm_hidden_s), human_time(b, sizeof b, m->comm_s));
    if (sum->pipeline_stages > 1)
      fprintf(f, "  pipeline      %d stages, %d microbatches (%s): bubble %.1f%% of each stage's time, %s sent stage "
              "to stage a step\n", sum->pipeline_stages, sum->pipeline_microbatches, sum->pipeline_schedule,
              100 * sum->pipeline_bubble_fraction, outputs_bytes(a, sizeof a, sum->pipeline_p2p_bytes));
    if (sum->has_tokens)
      fprintf(f, "  tokens        %.6g tokens/s at the mean step, MFU %.1f%% (PaLM's model FLOPs over the peak)\n",
              sum->tokens_per_s, 100 * sum->mfu);
    fprintf(f, "  final loss    %s\n", loss_text(a, sizeof a, sum->final_loss, s->numerics_full));
  }
  fprintf(f, "  memory peak   %s of %s on the fullest device (%.1f%%)\n",
          outputs_bytes(a, sizeof a, (double)sum->memory_peak_bytes),
          outputs_bytes(b, sizeof b, (double)sum->memory_capacity_bytes),
          sum->memory_capacity_bytes > 0 ? 100.0 * (double)sum->memory_peak_bytes / (double)sum->memory_capacity_bytes : 0.0);
  if (s->nfaults > 0)
    fprintf(f, "  faults        %ld preempted, %ld failed, %d restarts, %ld steps redone, %.6g s down, goodput %.4g\n",
            sum->preemptions, sum->failures, sum->restarts, sum->lost_steps, sum->downtime_s, sum->goodput);
  if (sum->stopped_by)
    fprintf(f, "  stopped       by %s at epoch %ld (0-based)%s\n", sum->stopped_by, sum->stopped_epoch,
            sum->restored_best ? ", best weights restored" : "");
  if (s->strategy == SCN_STRATEGY_PARAMETER_SERVER)
    fprintf(f, "  async         %ld closures retried, %ld updates duplicated, %ld lost; worker utilization %.4g\n",
            sum->retried_closures, sum->duplicated_updates, sum->lost_updates, sum->worker_utilization);
  if (sum->has_evaluator)
    fprintf(f, "  evaluator     %ld evaluations (%ld restores failed), last loss %s\n", sum->evaluations,
            sum->failed_restores, sum->evaluations > 0 ? loss_text(a, sizeof a, sum->final_eval_loss, s->numerics_full)
                                                       : "n/a (no evaluation)");
  if (sum->nevaluate > 0) {  /* mode evaluate: Model.evaluate's figures */
    fprintf(f, "  evaluate      %ld examples:", sum->evaluate_examples);
    for (int k = 0; k < sum->nevaluate; k++)
      fprintf(f, "%s %s %s", k ? "," : "", sum->evaluate_names[k],
              loss_text(a, sizeof a, sum->evaluate_values[k], s->numerics_full));
    fputc('\n', f);
  }
  if (sum->eval_failed)
    fprintf(f, "  evaluator     %s on %s: %s\n", sum->eval_error.kind, sum->eval_error.device, sum->eval_error.message);
  if (sum->failed) fprintf(f, "  FAILED        %s on %s: %s\n", sum->error.kind, sum->error.device, sum->error.message);
  if (isfinite(sum->cost_usd))
    fprintf(f, "  cost          $%.4g for %.4g chip-hours (%s prices)\n", sum->cost_usd, sum->chip_hours, sum->price_model);
  else
    fprintf(f, "  cost          unknown (%.4g chip-hours): no %s price for %s\n", sum->chip_hours, sum->price_model, sum->price_missing);
  fprintf(f, "  outputs       %s/\n", dir);
  fprintf(f, "  events        %llu in %.3f s wall", (unsigned long long)sum->events, sum->wall_s);
  if (sum->fast_forwarded > 0) fprintf(f, ", %ld steps fast-forwarded", sum->fast_forwarded);
  if (sum->simulated_replicas > 0)
    fprintf(f, ", %d of %d replicas simulated (symmetric mesh)", sum->simulated_replicas, sum->replicas);
  fputc('\n', f);
  fprintf(f, "run_hash %016llx\n", (unsigned long long)sum->run_hash);
}

/* ---- the progress bar ------------------------------------------------------------------------ */

static double wall_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void report_progress_start(report_progress *p, FILE *out, int mode, long total_steps, const sim_engine *e) {
  *p = (report_progress){0};
  int lines = mode == REPORT_PROGRESS_LINES;
  if (mode == REPORT_PROGRESS_QUIET || out == NULL || (!lines && !isatty(fileno(out))) || total_steps <= 0) return;
  p->out = out;
  p->lines = lines;
  p->engine = e;
  p->total = total_steps;
  p->started = p->drawn = wall_now();
}

void report_progress_tick(report_progress *p) {
  if (!p->lines) return;
  double now = wall_now();
  if (now - p->drawn < REPORT_PROGRESS_LINE_S) return;
  p->drawn = now;
  fprintf(p->out, "podsim: progress: step %ld/%ld, simulated %.6g s, %llu events, %.0f s wall\n", p->done, p->total,
          sim_time_to_s(sim_now(p->engine)), (unsigned long long)sim_events_processed(p->engine), now - p->started);
  fflush(p->out);
}

/* Each step costs a counter compare; the clock is read once per 1% of the run at most. */
void report_progress_step(report_progress *p, long done) {
  p->done = done;
  if (p->out == NULL || p->lines || (done - p->shown) * 100 < p->total) return;
  double now = wall_now();
  if (now - p->drawn < 0.1 && done < p->total) return;
  p->shown = done;
  p->drawn = now;
  enum { WIDTH = 40 };
  char bar[WIDTH + 1];
  int fill = (int)(WIDTH * done / p->total);
  for (int i = 0; i < WIDTH; i++) bar[i] = i < fill ? '#' : '.';
  bar[WIDTH] = '\0';
  double rate = now > p->started ? (double)done / (now - p->started) : 0;
  fprintf(p->out, "\r  [%s] %3ld%%  step %ld/%ld  %.0f steps/s wall", bar, 100 * done / p->total,
          done, p->total, rate);
  fflush(p->out);
}

void report_progress_end(report_progress *p) {
  if (p->out == NULL || p->lines || p->shown == 0) return;
  fputs("\r\033[K", p->out);  /* back to the line's start and clear it */
  fflush(p->out);
}
