/*
** plotInt.h: what the chart kinds share (plots/ internal). canvas.c owns the output file and
** the cairo surface; frame.c lays out and draws everything around the data (title, legend,
** axes, ticks, grid, labels); line.c and bars.c only map their data into the frame.
*/
#ifndef PODSIM_PLOTINT_H
#define PODSIM_PLOTINT_H

#include <stdio.h>
#include <cairo.h>

#include "plots/plot.h"

/* A growable byte buffer: SVG output is held here until pl_canvas_close rewrites its ids. */
typedef struct pl_buf {
  unsigned char *data;  /* malloc'ed bytes */
  size_t len;           /* bytes used */
  size_t cap;           /* bytes allocated */
} pl_buf;

/* An open chart: the destination file and the surface being drawn. */
typedef struct pl_canvas {
  cairo_surface_t *surface;  /* image (PNG, written at close) or a vector surface streaming to fp */
  cairo_t *cr;               /* the drawing context over surface */
  FILE *fp;                  /* the output file, opened before drawing so a bad path fails early */
  pl_buf svg;                /* SVG only: the document, written to fp at close */
  pl_format fmt;             /* which surface kind and which close path */
  const char *path;          /* for error messages and to remove a file left half-written */
  char *err;                 /* caller's message buffer (may be NULL) */
  size_t errlen;             /* its size */
} pl_canvas;

/* One axis: the data interval shown and its ticks. */
typedef struct pl_axis {
  double lo;         /* data value at the start of the axis (left or bottom) */
  double hi;         /* data value at the end (right or top); hi > lo */
  double step;       /* tick spacing: 1, 2 or 5 times a power of ten */
  double px_lo;      /* device coordinate of lo */
  double px_hi;      /* device coordinate of hi */
  int decimals;      /* digits after the point in tick labels, from step */
  int exp10;         /* labels show value / 10^exp10 (0: plain numbers) */
  char suffix;       /* 'k', 'M', ... for exp10 a multiple of 3 >= 3; 'e' for small values */
} pl_axis;

/* The plot area and its two axes, once laid out. */
typedef struct pl_frame {
  pl_axis x;         /* horizontal axis */
  pl_axis y;         /* vertical axis (px_lo is the bottom, below px_hi) */
  double left;       /* plot area edges in device units */
  double right;      /* ... */
  double top;        /* ... */
  double bottom;     /* ... */
} pl_frame;

/* A legend entry: a label drawn with the style of data kind `style`. */
typedef struct pl_key {
  const char *label; /* never NULL or empty: unlabelled data gets no entry */
  int style;         /* index into the palette (and dash list) */
  int filled;        /* 1: a filled swatch (bars); 0: a line sample (lines) */
} pl_key;

/* What a chart asks of the frame: texts, data extents and how to fit each axis. */
typedef struct pl_frame_spec {
  const char *title;     /* drawn at the top (NULL: none) */
  const char *xlabel;    /* under the x tick labels, with units as the caller gave them */
  const char *ylabel;    /* rotated, left of the y tick labels */
  double xlo, xhi;       /* data extent on x (non-finite: no data) */
  double ylo, yhi;       /* data extent on y */
  int xsnap;             /* 1: widen x to whole ticks; 0: keep the extent (bars fill the width) */
  double xmin_step;      /* smallest x tick step (bar spacing, so integer steps get integer ticks) */
  const pl_key *keys;    /* legend entries, drawn only when nkeys > 1 */
  size_t nkeys;          /* ... */
  int empty;             /* 1: nothing to draw; the frame says "no data" in the plot area */
} pl_frame_spec;

/* canvas.c */
int  pl_canvas_open(pl_canvas *cv, const char *path, pl_format fmt, char *err, size_t errlen);
int  pl_canvas_close(pl_canvas *cv);
int  pl_fail(char *err, size_t errlen, const char *fmt, ...)
#if defined(__GNUC__)
  __attribute__((format(printf, 3, 4)))
#endif
  ;

/* frame.c: opens the canvas and draws the frame; the chart then draws its data, which is
** clipped to the plot area, and closes the canvas. Returns 0 or -1 (message in err). */
int    pl_frame_open(pl_canvas *cv, pl_frame *fr, const char *path, pl_format fmt,
                     const pl_frame_spec *spec, char *err, size_t errlen);
double pl_map(const pl_axis *a, double v);
void   pl_style_line(cairo_t *cr, int style);
void   pl_style_fill(cairo_t *cr, int style);

#endif
