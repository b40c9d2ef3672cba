/*
** report.h: what a run shows its user (report_): the charts of outputs.plots in outputs.format,
** the progress bar on stderr and the one-screen text summary. docs/reports.md describes every
** chart. The charts are drawn by plots/ from arrays this module collects from the run's step
** records, its devices and the engine's trace.
*/
#ifndef PODSIM_REPORT_H
#define PODSIM_REPORT_H

#include <stdio.h>

#include "scenarios/report/outputs.h"
#include "scenarios/config/scenario.h"
#include "sim/sim.h"

/* One fault or recovery on the faults chart: a span when end_ps > start_ps (a worker down, a
** restart replaying lost steps), an instant when equal (a preemption). Issue 6 fills these. */
typedef struct report_fault {
  const char *kind;       /* legend entry: "preempted", "down", "restarting", ... */
  const char *target;     /* its row: "worker:3", "tpu", "training" */
  int64_t start_ps;       /* when it began */
  int64_t end_ps;         /* when it ended (start_ps: an instant) */
} report_fault;

/* Everything the charts draw from. */
typedef struct report_run {
  const scenario *s;          /* names the charts and says which to draw, in which format */
  const sim_engine *engine;   /* its trace: spans per device and link */
  const step_record *steps;   /* one per completed step */
  long nsteps;                /* entries in steps */
  const run_device *devices;  /* each replica device's memory */
  int ndevices;               /* entries in devices */
  const report_fault *faults; /* faults and recoveries in time order (may be NULL) */
  size_t nfaults;             /* entries in faults */
  double goodput;             /* summary.json's goodput, for the faults chart's title */
  const double *val_x, *val_y; /* fit's validation: val_loss (y) at each evaluated epoch's last step (x) */
  size_t nval;                /* their points (0: none; the loss chart draws a second line with some) */
} report_run;

/* A chart of outputs.plots. Adding a chart is its draw function and its row in REPORT_CHARTS;
** the loader takes the names from there. */
typedef struct report_chart {
  const char *name;       /* outputs.plots name, and the file's base name */
  int needs_trace;        /* drawn from the engine's trace: the run must record its spans */
  int (*draw)(const report_run *run, const char *path, char *msg, size_t msglen); /* 0, or -1 */
} report_chart;
/* The charts, in the order docs/reports.md lists them, ended by a NULL name. */
extern const report_chart REPORT_CHARTS[];
/* scenario.plots has bit i set when outputs.plots lists REPORT_CHARTS[i]. */
#define REPORT_CHART_BIT(i) (1u << (i))
/* The index of a chart's name, -1 when there is none. */
int report_chart_index(const char *name);
/* Whether any chart of the set draws from the trace. */
int report_needs_trace(unsigned plots);

/* Writes each chart the scenario asks for into dir as NAME.png|svg|pdf. Returns 0, or -1 with
** the message in msg. */
int report_write_plots(const report_run *run, const char *dir, char *msg, size_t msglen);

/* The link tracks the heatmap draws: up to max of those with traffic in [t0, t1), the busiest by
** utilisation (bytes over the link's bandwidth, so a multi-VM run's NICs outrank its NVLinks),
** into tracks in track order; *kept of them. Returns how many links had traffic. */
size_t report_link_rows(const sim_engine *e, sim_time t0, sim_time t1, int *tracks, size_t max, size_t *kept);

/* A time unit for a span of `seconds` (us under 2 ms, ms under 2 s, else s): the factor from
** seconds, and its name in *name. */
double report_time_unit(double seconds, const char **name);

/* The one-screen summary `podsim run` prints at the end. */
void report_print_summary(FILE *f, const scenario *s, const char *dir, const run_summary *sum);

/* A progress bar on a terminal, redrawn as simulated steps complete, or (`--progress`) a line
** every REPORT_PROGRESS_LINE_S seconds of wall time on any stream, also while no step completes
** (a job that keeps restarting). It reads no simulated state but the step counts it is given and
** the engine's clock and event count, and writes only to its stream, so it changes no output file
** and no run_hash: the wall clock paces the display and nothing else. */
typedef struct report_progress {
  FILE *out;              /* the terminal (stderr), or NULL: no bar */
  int lines;              /* REPORT_PROGRESS_LINES: lines, not a bar */
  const sim_engine *engine; /* lines: the simulated time and events they show */
  long total;             /* steps the run will take */
  long done;              /* steps completed so far */
  long shown;             /* steps the bar showed last */
  double started;         /* wall clock at the start (monotonic seconds) */
  double drawn;           /* wall clock of the last redraw */
} report_progress;

/* The modes of report_progress_start: a bar on a terminal, nothing, lines on any stream. */
enum { REPORT_PROGRESS_BAR = 0, REPORT_PROGRESS_QUIET = 1, REPORT_PROGRESS_LINES = 2 };
#define REPORT_PROGRESS_LINE_S 5.0

/* A bar on `out` when it is a terminal and mode is REPORT_PROGRESS_BAR; lines about engine e
** when it is REPORT_PROGRESS_LINES; otherwise an inert one. */
void report_progress_start(report_progress *p, FILE *out, int mode, long total_steps, const sim_engine *e);
/* Called per completed step: redraws the bar at most ten times a second. */
void report_progress_step(report_progress *p, long done);
/* Called often whatever the steps do (every SIM_STOP_CHECK_EVENTS events): prints a line when
** REPORT_PROGRESS_LINE_S seconds of wall time passed since the last. */
void report_progress_tick(report_progress *p);
/* Erases the bar. */
void report_progress_end(report_progress *p);

#endif
