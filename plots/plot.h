/*
** plot.h: charts of the numbers a run produced (pl_). plots/ draws the data it is given and
** knows nothing of the simulator: it includes no sim/, models/, strategies/ or scenarios/
** header, so a chart can be drawn from any array.
**
** Every chart is 1200x700 (pixels for PNG, points for SVG/PDF) on a white background, with
** 1-2-5 ticks, the title at the top and a legend under it when there is more than one
** series or stack. Colours differ in lightness and lines in dash pattern, so a greyscale
** print stays readable. Output is deterministic: the same input gives the same bytes (the
** PDF carries no creation date).
**
** Non-finite values (NaN, inf) are skipped; no data at all draws empty axes with a
** "no data" note. Functions return 0, or -1 with a message in err (when err != NULL).
*/
#ifndef PODSIM_PLOT_H
#define PODSIM_PLOT_H

#include <stddef.h>

typedef enum { PL_PNG = 0, PL_SVG, PL_PDF } pl_format;

#define PL_WIDTH  1200
#define PL_HEIGHT 700

/* How a series' points are drawn (its legend sample shows the same). */
typedef enum {
  PL_MARK_NONE = 0,  /* a line; only a point with no finite neighbour gets a dot */
  PL_MARK_DOTS,      /* a line with a dot at every point: few points, each a measurement */
  PL_MARK_CROSSES    /* a cross at every point and no line: points that are not values (a
                     ** configuration that did not fit, drawn where the chart's floor is) */
} pl_mark;

/* One line: the points (x[i], y[i]) for i < n, joined in order; a non-finite value breaks it. */
typedef struct pl_series {
  const char *label;   /* legend text; NULL or "" leaves the series out of the legend */
  const double *x;     /* n values (may be NULL when n == 0) */
  const double *y;     /* n values (may be NULL when n == 0) */
  size_t n;            /* number of points */
  pl_mark mark;        /* how its points show (PL_MARK_NONE when left out of an initialiser) */
} pl_series;

/* A line chart; returns 0 or -1 with a message in err. */
int pl_line_chart(const char *path, pl_format fmt, const char *title, const char *xlabel,
                  const char *ylabel, const pl_series *series, size_t nseries, char *err,
                  size_t errlen);

/* One layer of stacked bars. */
typedef struct pl_stack {
  const char *label;     /* legend text; NULL or "" leaves the layer out of the legend */
  const double *values;  /* one value per bar; positive values stack up from 0, negative down */
} pl_stack;

/* Stacked bars at positions x[0..n) (e.g. step number), one layer per stack (bottom first).
** Bars are 80% of the smallest spacing between positions; when the gaps would be under a
** pixel the bars are drawn contiguous, so 1000 bars read as an area rather than a moire. */
int pl_stacked_bars(const char *path, pl_format fmt, const char *title, const char *xlabel,
                    const char *ylabel, const double *x, size_t n, const pl_stack *stacks,
                    size_t nstacks, char *err, size_t errlen);

/* Stacked bars as pl_stacked_bars draws them, one per category: bar i in slot i, labels[i]
** under it, notes[i] (NULL: none; notes itself may be NULL) written above it, e.g. why a bar is
** empty. For a few bars that each stand for a configuration rather than a position on a scale. */
int pl_labelled_bars(const char *path, pl_format fmt, const char *title, const char *xlabel,
                     const char *ylabel, const char *const *labels, const char *const *notes, size_t n,
                     const pl_stack *stacks, size_t nstacks, char *err, size_t errlen);

/* One bar of a timeline (Gantt) row, or an instant when end == start (a marker at the top of
** its row: a fault, a restart). */
typedef struct pl_span {
  size_t row;      /* index into the rows, 0 at the top */
  double start;    /* x where it begins */
  double end;      /* x where it ends (>= start; equal: an instant) */
  int category;    /* index into the categories: its colour and legend entry */
} pl_span;

/* Rows of spans against x (time) over [xlo, xhi] (non-finite: the spans' extent), rows named on
** the left top to bottom, a legend of the labelled categories. Spans with a bad row or
** category, or non-finite ends, are skipped. With no span the chart says empty_note (NULL:
** "no data"). */
int pl_timeline(const char *path, pl_format fmt, const char *title, const char *xlabel,
                double xlo, double xhi, const char *const *rows, size_t nrows, const char *const *categories,
                size_t ncategories, const pl_span *spans, size_t nspans, const char *empty_note,
                char *err, size_t errlen);

/* A grid of values: row r (named rows[r], top to bottom) and column c (x from x0 + c*w to
** x0 + (c+1)*w, w = (x1 - x0) / ncols) coloured by values[r * ncols + c] on a sequential scale
** from vmin (light) to vmax (dark), drawn right of the plot with its label; values outside are
** clamped, non-finite cells left blank. */
int pl_heatmap(const char *path, pl_format fmt, const char *title, const char *xlabel,
               const char *const *rows, size_t nrows, double x0, double x1, size_t ncols,
               const double *values, double vmin, double vmax, const char *scale_label,
               char *err, size_t errlen);

/* One bar per item (labels under them): `used` filled over its `capacity` (a lighter bar behind
** it, its top marked by a dark line), notes[i] (may be NULL) written above each. A used value over capacity shows as a bar
** taller than its capacity. Non-finite values draw nothing for that part. */
int pl_capacity_bars(const char *path, pl_format fmt, const char *title, const char *ylabel,
                     const char *const *labels, const double *used, const double *capacity,
                     const char *const *notes, size_t n, char *err, size_t errlen);

/* A multi-page PDF report (plots/doc.c): pages of PL_WIDTH x PL_HEIGHT points, no creation
** date (the same pages give the same bytes). Text is drawn as given, in UTF-8. */
typedef struct pl_doc pl_doc;
/* Opens PATH for writing; NULL with a message in err. */
pl_doc *pl_doc_open(const char *path, char *err, size_t errlen);
/* A page with a title and lines of text, each wrapped at spaces to the page's width (more pages
** with the same title if they overflow); a line starting with '#' is a bold heading. */
void    pl_doc_text(pl_doc *d, const char *title, const char *const *lines, size_t n);
/* A table: the header row and nrows rows of ncols cells (row-major), each column as wide as
** its widest cell, scaled down to the page width when wider, on as many pages as it takes
** (the header repeated on each). Returns 0 or -1 (message in the open's err). */
int     pl_doc_table(pl_doc *d, const char *title, const char *const *header, size_t ncols,
                     const char *const *cells, size_t nrows);
/* A page showing the PNG at png_path (a chart written by the functions above) scaled to fit.
** Returns 0 or -1 (message in the open's err). */
int     pl_doc_image(pl_doc *d, const char *png_path);
/* Pages so far (the one being drawn included). */
int     pl_doc_pages(const pl_doc *d);
/* Finishes and closes the file, freeing d; on failure removes the file. Returns 0 or -1. */
int     pl_doc_close(pl_doc *d);

#endif
