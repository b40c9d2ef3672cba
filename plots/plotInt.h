/*
** plotInt.h: what the chart kinds share (plots/ internal). canvas.c owns the output file and
** the cairo surface; frame.c lays out and draws everything around the data (title, legend,
** axes, ticks, grid, labels); line.c and bars.c only map their data into the frame.
*/
#ifndef PODSIM_PLOTINT_H
#define PODSIM_PLOTINT_H

#include <stdio.h>
#include <cairo.h>

#include "base/base.h"
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
  const char *const *cats; /* categorical axis: a label per unit slot [k, k+1), ticks at the
                              slot centres; NULL for a numeric axis */
  size_t ncats;      /* slots of a categorical axis (lo = 0, hi = ncats) */
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
  pl_mark mark;      /* lines: the series' point marks, drawn on the sample too */
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
  int empty;             /* 1: nothing to draw; the frame says empty_note in the plot area */
  const char *empty_note;/* what an empty chart says (NULL: "no data") */
  const char *const *xcats; /* categorical x axis (bars per device), NULL: numeric */
  size_t nxcats;         /* ... */
  const char *const *ycats; /* categorical y axis, bottom slot first (rows), NULL: numeric */
  size_t nycats;         /* ... */
  double right_margin;   /* extra room right of the plot (a colour scale), device units */
} pl_frame_spec;

/* canvas.c */
int  pl_canvas_open(pl_canvas *cv, const char *path, pl_format fmt, char *err, size_t errlen);
int  pl_canvas_close(pl_canvas *cv);

/* frame.c: opens the canvas and draws the frame; the chart then draws its data, which is
** clipped to the plot area, and closes the canvas. Returns 0 or -1 (message in err). */
int    pl_frame_open(pl_canvas *cv, pl_frame *fr, const char *path, pl_format fmt,
                     const pl_frame_spec *spec, char *err, size_t errlen);
double pl_map(const pl_axis *a, double v);
/* Text for charts that label their own data: font of px (bold or not), anchored at (x, y) as
** pl_text does (ax 0/0.5/1 = left/centre/right, ay 0/0.5/1 = cap top/middle/baseline). */
void   pl_font(cairo_t *cr, double px, int bold);
void   pl_text(cairo_t *cr, const char *s, double x, double y, double ax, double ay);
void   pl_fit(cairo_t *cr, const char *s, double maxw);
double pl_text_width(cairo_t *cr, const char *s);
/* The fill legend entries for labelled categories (NULL or "" left out); *keys is malloc'ed
** (NULL when n == 0). Returns 0 or -1 when out of memory. */
int    pl_category_keys(const char *const *labels, size_t n, pl_key **keys, size_t *nkeys);
void   pl_style_line(cairo_t *cr, int style);
/* A point mark of the current source colour centred at (x, y): a filled dot or a cross. */
void   pl_mark_at(cairo_t *cr, pl_mark mark, double x, double y);
/* notes[i] over slot i's bar, whose top is at device y top, shrunk to the slot's width. */
void   pl_note_above(cairo_t *cr, const char *note, double cx, double top, double slot);
void   pl_style_fill(cairo_t *cr, int style);
/* The heatmap scale's colour at t in [0, 1] (clamped), light to dark. */
void   pl_style_scale(cairo_t *cr, double t);
/* The scale drawn as a bar right of the plot (in spec.right_margin), ticked from vmin to vmax,
** with its label rotated along the right edge. */
void   pl_colour_scale(cairo_t *cr, const pl_frame *fr, double vmin, double vmax, const char *label);

#endif
