/*
** frame.c: everything around the data, shared by every chart kind (pl_frame_): title,
** legend, axes with 1-2-5 ticks and their labels, grid, and the styles data is drawn with.
** Layout goes top-down (title, legend), then the y axis (its labels set the left margin),
** then the x axis (its labels decide how sparse its ticks must be).
*/
#include "plots/plotInt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PL_FONT       "sans-serif"
#define PL_TITLE_PX   22.0
#define PL_LABEL_PX   16.0
#define PL_TICK_PX    13.0
#define PL_LEGEND_PX  15.0
#define PL_PAD        14.0   /* blank border around everything */
#define PL_TICK_LEN   5.0    /* tick marks point outwards, away from the data */
#define PL_SWATCH     30.0   /* width of a legend sample */
#define PL_MAX_TICKS  1000   /* bound on tick enumeration, whatever the range */

/* Lightness rises through the first three (the usual compute/comm/idle stack) and then
** alternates, so neighbouring layers differ in grey. Grey levels (sRGB luma, 0-255): 44, 146,
** 201, 58, 194, 121 (the two close ones, 3rd and 5th, never touch). */
static const double pl_palette[][3] = {
  {0x08 / 255.0, 0x30 / 255.0, 0x6b / 255.0},  /* navy */
  {0xd9 / 255.0, 0x8c / 255.0, 0x00 / 255.0},  /* orange */
  {0xa6 / 255.0, 0xd0 / 255.0, 0xec / 255.0},  /* light blue */
  {0xb2 / 255.0, 0x18 / 255.0, 0x2b / 255.0},  /* crimson */
  {0xf0 / 255.0, 0xc0 / 255.0, 0x4a / 255.0},  /* yellow */
  {0x00 / 255.0, 0x9e / 255.0, 0x73 / 255.0},  /* green */
};
#define PL_NPALETTE (sizeof pl_palette / sizeof pl_palette[0])

/* Dash patterns (with round caps, hence the near-zero "dots"): lines stay apart in grey.
** The sparse dotted one falls on a dark colour (crimson) where it stays visible. */
static const double pl_dashes[][4] = {
  {0, 0, 0, 0}, {10, 7, 0, 0}, {14, 6, 0.01, 6}, {0.01, 6, 0, 0}, {24, 8, 0, 0}, {4, 6, 0, 0},
};
static const int pl_ndash[] = {0, 2, 4, 2, 2, 2};
#define PL_NDASHES (sizeof pl_ndash / sizeof pl_ndash[0])

void pl_style_fill(cairo_t *cr, int style) {
  const double *c = pl_palette[(size_t)style % PL_NPALETTE];
  cairo_set_source_rgb(cr, c[0], c[1], c[2]);
}

void pl_style_line(cairo_t *cr, int style) {
  /* Past the sixth series the dash shifts against the colour, so no two of 36 lines match. */
  size_t d = ((size_t)style + (size_t)style / PL_NPALETTE) % PL_NDASHES;
  pl_style_fill(cr, style);
  cairo_set_line_width(cr, 2.5);
  cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND);
  cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
  cairo_set_dash(cr, pl_dashes[d], pl_ndash[d], 0);
}

/* The sequential scale of heatmaps, light to dark: its lightness falls at every stop, so a
** value reads the same in grey (luma 239, 198, 139, 84, 45). */
static const double pl_scale[][3] = {
  {0xe8 / 255.0, 0xf1 / 255.0, 0xfa / 255.0},
  {0xb3 / 255.0, 0xd1 / 255.0, 0xe8 / 255.0},
  {0x5b / 255.0, 0x9b / 255.0, 0xd0 / 255.0},
  {0x1f / 255.0, 0x5f / 255.0, 0xa8 / 255.0},
  {0x08 / 255.0, 0x2a / 255.0, 0x5e / 255.0},
};
#define PL_NSCALE (sizeof pl_scale / sizeof pl_scale[0])

void pl_style_scale(cairo_t *cr, double t) {
  t = !(t > 0) ? 0 : t > 1 ? 1 : t;
  double at = t * (PL_NSCALE - 1);
  size_t k = at >= PL_NSCALE - 1 ? PL_NSCALE - 2 : (size_t)at;
  double f = at - (double)k;
  cairo_set_source_rgb(cr, pl_scale[k][0] + f * (pl_scale[k + 1][0] - pl_scale[k][0]),
                       pl_scale[k][1] + f * (pl_scale[k + 1][1] - pl_scale[k][1]),
                       pl_scale[k][2] + f * (pl_scale[k + 1][2] - pl_scale[k][2]));
}

/* ---- text ------------------------------------------------------------------------------ */

void pl_font(cairo_t *cr, double px, int bold) {
  cairo_select_font_face(cr, PL_FONT, CAIRO_FONT_SLANT_NORMAL,
                         bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, px);
}

double pl_text_width(cairo_t *cr, const char *s) {
  cairo_text_extents_t te;
  cairo_text_extents(cr, s, &te);
  return te.x_advance;
}

/* Height of a capital/digit: the box text is anchored by, so digits centre on their tick. */
static double pl_cap_height(cairo_t *cr) {
  cairo_text_extents_t te;
  cairo_text_extents(cr, "0", &te);
  return -te.y_bearing;
}

/* Shrinks the current font until s fits in maxw, so a long title or label is never clipped. */
void pl_fit(cairo_t *cr, const char *s, double maxw) {
  double w = pl_text_width(cr, s);
  if (w <= maxw) return;
  cairo_matrix_t m;
  cairo_get_font_matrix(cr, &m);
  cairo_set_font_size(cr, m.xx * maxw / w);
}

/* Draws s anchored at (x, y): ax 0/0.5/1 = left/centre/right, ay 0/0.5/1 = cap top/middle/baseline. */
void pl_text(cairo_t *cr, const char *s, double x, double y, double ax, double ay) {
  cairo_move_to(cr, x - ax * pl_text_width(cr, s), y + (1 - ay) * pl_cap_height(cr));
  cairo_show_text(cr, s);
}

/* ---- ticks ----------------------------------------------------------------------------- */

/* The smallest 1-2-5 step >= v. */
static double pl_nice_ceil(double v) {
  double mag = pow(10, floor(log10(v)));
  double f = v / mag;
  return (f <= 1 + 1e-9 ? 1 : f <= 2 + 1e-9 ? 2 : f <= 5 + 1e-9 ? 5 : 10) * mag;
}

/* The 1-2-5 step after step. */
static double pl_nice_next(double step) {
  return pl_nice_ceil(step * 1.5);
}

/* Ticks are the multiples of step within [lo, hi]; they are counted from an integer index so
** a range far from zero can neither loop for ever nor accumulate rounding. */
static double pl_tick_first(const pl_axis *a) {
  return ceil(a->lo / a->step - 1e-9);
}

static int pl_tick_count(const pl_axis *a) {
  if (a->cats != NULL) return a->ncats > PL_MAX_TICKS ? PL_MAX_TICKS : (int)a->ncats;
  double n = floor(a->hi / a->step + 1e-9) - pl_tick_first(a) + 1;
  return n < 0 ? 0 : n > PL_MAX_TICKS ? PL_MAX_TICKS : (int)n;
}

static double pl_tick(const pl_axis *a, int k) {
  if (a->cats != NULL) return k + 0.5;
  double v = (pl_tick_first(a) + k) * a->step;
  return fabs(v) < a->step * 1e-6 ? 0 : v;  /* no "-0" */
}

/* Chooses how labels print, once per axis so all its labels agree: plain up to 10^4, then
** SI suffixes (12000 -> "12k", 1.5e6 -> "1.5M"), and 1e-3-style exponents below 0.01;
** digits after the point are exactly those the step needs. */
static void pl_axis_format(pl_axis *a) {
  static const char si[] = "kMGTP";
  double m = fmax(fabs(a->lo), fabs(a->hi));
  int e_step = (int)floor(log10(a->step) + 1e-9);
  a->suffix = 0;
  a->exp10 = 0;
  if (m >= 1e4 && m < 1e18) {
    a->exp10 = 3 * (int)floor(log10(m) / 3 + 1e-9);
    a->suffix = si[a->exp10 / 3 - 1];
  } else if (m >= 1e18 || m < 1e-2) {
    a->exp10 = (int)floor(log10(m) + 1e-9);
    a->suffix = 'e';
  }
  a->decimals = a->exp10 - e_step < 0 ? 0 : a->exp10 - e_step > 12 ? 12 : a->exp10 - e_step;
}

static void pl_tick_label(const pl_axis *a, double v, char *buf, size_t len) {
  if (a->cats != NULL) {
    const char *c = a->cats[(size_t)v];
    snprintf(buf, len, "%s", c != NULL ? c : "");
    return;
  }
  double m = v / pow(10, a->exp10);
  if (a->suffix == 0 || v == 0)
    snprintf(buf, len, "%.*f", a->decimals, m);
  else if (a->suffix == 'e')
    snprintf(buf, len, "%.*fe%d", a->decimals, m, a->exp10);
  else
    snprintf(buf, len, "%.*f%c", a->decimals, m, a->suffix);
}

static double pl_widest_label(cairo_t *cr, const pl_axis *a) {
  double w = 0;
  char buf[128];
  for (int k = 0; k < pl_tick_count(a); k++) {
    pl_tick_label(a, pl_tick(a, k), buf, sizeof buf);
    w = fmax(w, pl_text_width(cr, buf));
  }
  return w;
}

/* Fits an axis of len device units to data in [lo, hi]: starts near one tick per `spacing`
** units and widens the step until labels no longer crowd (the tick font must be current). */
static void pl_axis_fit(cairo_t *cr, pl_axis *a, double lo, double hi, double len, int snap,
                        double min_step, int horizontal) {
  if (a->cats != NULL) {
    a->lo = 0;
    a->hi = a->ncats > 0 ? (double)a->ncats : 1;
    a->step = 1;
    return;
  }
  if (!isfinite(lo) || !isfinite(hi)) lo = 0, hi = 1;  /* no data: an empty unit axis */
  if (!(lo < hi)) {  /* one value: pad around it so it sits mid-axis */
    double d = lo == 0 ? 1 : fabs(lo) * 0.1;
    lo -= d;
    hi += d;
  }
  double step = pl_nice_ceil((hi - lo) / (len / (horizontal ? 110 : 60)));
  while (step < min_step * (1 - 1e-9)) step = pl_nice_next(step);
  /* Bounded: once step exceeds the range there are at most two ticks, len apart. */
  for (int tries = 0; tries < 64; tries++, step = pl_nice_next(step)) {
    a->step = step;
    a->lo = snap ? floor(lo / step + 1e-9) * step : lo;
    a->hi = snap ? ceil(hi / step - 1e-9) * step : hi;
    pl_axis_format(a);
    double need = horizontal ? pl_widest_label(cr, a) + 24 : PL_TICK_PX * 2;
    if (len * step / (a->hi - a->lo) >= need) break;
  }
}

double pl_map(const pl_axis *a, double v) {
  return a->px_lo + (v - a->lo) / (a->hi - a->lo) * (a->px_hi - a->px_lo);
}

void pl_mark_at(cairo_t *cr, pl_mark mark, double x, double y) {
  cairo_save(cr);
  cairo_set_dash(cr, NULL, 0, 0);
  if (mark == PL_MARK_CROSSES) {  /* a dark red x, 12 px across: reads as "no value here" */
    cairo_set_source_rgb(cr, 0.70, 0.08, 0.12);
    cairo_set_line_width(cr, 3);
    cairo_move_to(cr, x - 6, y - 6);
    cairo_line_to(cr, x + 6, y + 6);
    cairo_move_to(cr, x - 6, y + 6);
    cairo_line_to(cr, x + 6, y - 6);
    cairo_stroke(cr);
  } else {
    cairo_new_sub_path(cr);
    cairo_arc(cr, x, y, 4.5, 0, 2 * M_PI);
    cairo_fill(cr);
  }
  cairo_restore(cr);
}

void pl_note_above(cairo_t *cr, const char *note, double cx, double top, double slot) {
  cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
  pl_font(cr, 13, 0);
  pl_fit(cr, note, slot - 6);
  pl_text(cr, note, cx, top - 6, 0.5, 1);
}

/* ---- legend ---------------------------------------------------------------------------- */

static double pl_key_width(cairo_t *cr, const pl_key *k) {
  return PL_SWATCH + 8 + pl_text_width(cr, k->label);
}

static void pl_key_draw(cairo_t *cr, const pl_key *k, double x, double yc) {
  if (k->filled) {
    cairo_rectangle(cr, x, yc - 7, PL_SWATCH, 14);
    pl_style_fill(cr, k->style);
    cairo_fill_preserve(cr);
    cairo_set_source_rgb(cr, 0.3, 0.3, 0.3);  /* outline: the light swatches meet white */
    cairo_set_line_width(cr, 1);
    cairo_stroke(cr);
  } else {
    cairo_save(cr);  /* the dash and caps must not leak into the axes drawn next */
    pl_style_line(cr, k->style);
    if (k->mark != PL_MARK_CROSSES) {
      cairo_move_to(cr, x + 2, yc);
      cairo_line_to(cr, x + PL_SWATCH - 2, yc);
      cairo_stroke(cr);
    }
    if (k->mark != PL_MARK_NONE) pl_mark_at(cr, k->mark, x + PL_SWATCH / 2, yc);
    cairo_restore(cr);
  }
  cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
  pl_text(cr, k->label, x + PL_SWATCH + 8, yc, 0, 0.5);
}

/* Lays the keys out in centred rows under the title (outside the plot, so never over data)
** and draws them when draw is set; returns the number of rows, which the layout needs first. */
static int pl_legend(cairo_t *cr, const pl_key *keys, size_t n, double top, int draw) {
  const double gap = 28, row_h = 24, maxw = PL_WIDTH - 4 * PL_PAD;
  int rows = 0;
  pl_font(cr, PL_LEGEND_PX, 0);
  for (size_t first = 0; first < n; rows++) {
    size_t end = first + 1;
    double w = pl_key_width(cr, &keys[first]);
    while (end < n && w + gap + pl_key_width(cr, &keys[end]) <= maxw)
      w += gap + pl_key_width(cr, &keys[end++]);
    double x = (PL_WIDTH - w) / 2;
    for (; draw && first < end; first++) {
      pl_key_draw(cr, &keys[first], x, top + rows * row_h + row_h / 2);
      x += pl_key_width(cr, &keys[first]) + gap;
    }
    first = end;
  }
  return rows;
}

int pl_category_keys(const char *const *labels, size_t n, pl_key **keys, size_t *nkeys) {
  *nkeys = 0;
  *keys = n > 0 ? malloc(n * sizeof **keys) : NULL;
  if (n > 0 && *keys == NULL) return -1;
  for (size_t k = 0; k < n; k++)
    if (labels[k] != NULL && labels[k][0] != '\0') (*keys)[(*nkeys)++] = (pl_key){labels[k], (int)k, 1, PL_MARK_NONE};
  return 0;
}

/* ---- the frame ------------------------------------------------------------------------- */

static int pl_has_text(const char *s) {
  return s != NULL && s[0] != '\0';
}

/* Light lines at every tick across the plot area, at pixel centres so they stay one pixel; a
** categorical axis gets them between its slots instead, to separate rows or bars. */
static void pl_grid(cairo_t *cr, const pl_frame *fr) {
  cairo_set_source_rgb(cr, 0.9, 0.9, 0.9);
  cairo_set_line_width(cr, 1);
  int nx = fr->x.cats != NULL ? (int)fr->x.ncats + 1 : pl_tick_count(&fr->x);
  int ny = fr->y.cats != NULL ? (int)fr->y.ncats + 1 : pl_tick_count(&fr->y);
  for (int k = 0; k < nx; k++) {
    double v = fr->x.cats != NULL ? k : pl_tick(&fr->x, k), px = floor(pl_map(&fr->x, v)) + 0.5;
    cairo_move_to(cr, px, fr->top);
    cairo_line_to(cr, px, fr->bottom);
  }
  for (int k = 0; k < ny; k++) {
    double v = fr->y.cats != NULL ? k : pl_tick(&fr->y, k), py = floor(pl_map(&fr->y, v)) + 0.5;
    cairo_move_to(cr, fr->left, py);
    cairo_line_to(cr, fr->right, py);
  }
  cairo_stroke(cr);
}

/* A tick label that must fit in maxw (a category's slot): the font shrinks for it alone. */
static void pl_tick_text(cairo_t *cr, const char *s, double maxw, double x, double y, double ax,
                         double ay) {
  cairo_save(cr);
  pl_fit(cr, s, maxw);
  pl_text(cr, s, x, y, ax, ay);
  cairo_restore(cr);
}

static void pl_axes(cairo_t *cr, const pl_frame *fr) {
  char buf[128];
  double slot = (fr->right - fr->left) / (fr->x.hi - fr->x.lo);
  double xmax = fr->x.cats != NULL ? slot - 6 : PL_WIDTH;
  double ymax = fr->left - PL_PAD - PL_TICK_LEN - 4;
  cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
  cairo_set_line_width(cr, 1);
  cairo_move_to(cr, fr->left - 0.5, fr->top);
  cairo_line_to(cr, fr->left - 0.5, fr->bottom + 0.5);
  cairo_line_to(cr, fr->right, fr->bottom + 0.5);
  pl_font(cr, PL_TICK_PX, 0);
  for (int k = 0; k < pl_tick_count(&fr->x); k++) {
    double v = pl_tick(&fr->x, k), px = floor(pl_map(&fr->x, v)) + 0.5;
    cairo_move_to(cr, px, fr->bottom);
    cairo_line_to(cr, px, fr->bottom + PL_TICK_LEN);
    pl_tick_label(&fr->x, v, buf, sizeof buf);
    pl_tick_text(cr, buf, xmax, px, fr->bottom + PL_TICK_LEN + 5, 0.5, 0);
  }
  for (int k = 0; k < pl_tick_count(&fr->y); k++) {
    double v = pl_tick(&fr->y, k), py = floor(pl_map(&fr->y, v)) + 0.5;
    cairo_move_to(cr, fr->left, py);
    cairo_line_to(cr, fr->left - PL_TICK_LEN, py);
    pl_tick_label(&fr->y, v, buf, sizeof buf);
    pl_tick_text(cr, buf, ymax, fr->left - PL_TICK_LEN - 4, py, 1, 0.5);
  }
  /* show_text leaves the path alone, so all tick marks go out in one stroke. */
  cairo_stroke(cr);
}

static void pl_frame_draw(cairo_t *cr, pl_frame *fr, const pl_frame_spec *spec) {
  double y = PL_PAD;
  cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
  if (pl_has_text(spec->title)) {
    pl_font(cr, PL_TITLE_PX, 1);
    pl_fit(cr, spec->title, PL_WIDTH - 2 * PL_PAD);
    pl_text(cr, spec->title, PL_WIDTH / 2.0, y + 2, 0.5, 0);
    y += PL_TITLE_PX * 1.4;
  }
  if (spec->nkeys > 1) {
    y += 4 + 24 * pl_legend(cr, spec->keys, spec->nkeys, y + 4, 1);
  }
  fr->top = floor(y + 14);
  /* Below the plot: tick, tick labels, then the x label with room for its descenders. */
  fr->bottom = PL_HEIGHT - PL_PAD - (pl_has_text(spec->xlabel) ? PL_LABEL_PX * 1.3 + 10 : 0) -
               PL_TICK_LEN - 5 - PL_TICK_PX;
  fr->bottom = floor(fr->bottom);
  fr->right = PL_WIDTH - 3 * PL_PAD - spec->right_margin;

  pl_font(cr, PL_TICK_PX, 0);
  fr->x.cats = spec->xcats;
  fr->x.ncats = spec->nxcats;
  fr->y.cats = spec->ycats;
  fr->y.ncats = spec->nycats;
  fr->y.px_lo = fr->bottom;
  fr->y.px_hi = fr->top;
  pl_axis_fit(cr, &fr->y, spec->ylo, spec->yhi, fr->bottom - fr->top, 1, 0, 0);
  /* Row names may be long: they get at most a third of the width (pl_axes shrinks the rest). */
  double ylabels = fmin(pl_widest_label(cr, &fr->y), PL_WIDTH / 3.0);
  fr->left = ceil(PL_PAD + (pl_has_text(spec->ylabel) ? PL_LABEL_PX * 1.3 + 8 : 0) + ylabels + 4 +
                  PL_TICK_LEN);
  fr->x.px_lo = fr->left;
  fr->x.px_hi = fr->right;
  pl_axis_fit(cr, &fr->x, spec->xlo, spec->xhi, fr->right - fr->left, spec->xsnap,
              spec->xmin_step, 1);

  pl_grid(cr, fr);
  pl_axes(cr, fr);
  cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
  pl_font(cr, PL_LABEL_PX, 0);
  if (pl_has_text(spec->xlabel)) {
    pl_fit(cr, spec->xlabel, fr->right - fr->left);
    pl_text(cr, spec->xlabel, (fr->left + fr->right) / 2,
            PL_HEIGHT - PL_PAD - PL_LABEL_PX * 0.3, 0.5, 1);
  }
  if (pl_has_text(spec->ylabel)) {
    /* Rotated a quarter turn anticlockwise: the text's top faces the left edge. */
    pl_font(cr, PL_LABEL_PX, 0);
    pl_fit(cr, spec->ylabel, fr->bottom - fr->top);
    cairo_save(cr);
    cairo_translate(cr, PL_PAD, (fr->top + fr->bottom) / 2);
    cairo_rotate(cr, -M_PI / 2);
    pl_text(cr, spec->ylabel, 0, 0, 0.5, 0);
    cairo_restore(cr);
  }
}

void pl_colour_scale(cairo_t *cr, const pl_frame *fr, double vmin, double vmax, const char *label) {
  const double w = 18, x = fr->right + 2 * PL_PAD;
  cairo_save(cr);
  cairo_reset_clip(cr);
  cairo_pattern_t *g = cairo_pattern_create_linear(0, fr->bottom, 0, fr->top);
  for (size_t k = 0; k < PL_NSCALE; k++)
    cairo_pattern_add_color_stop_rgb(g, (double)k / (PL_NSCALE - 1), pl_scale[k][0], pl_scale[k][1],
                                     pl_scale[k][2]);
  cairo_rectangle(cr, x, fr->top, w, fr->bottom - fr->top);
  cairo_set_source(cr, g);
  cairo_fill_preserve(cr);
  cairo_pattern_destroy(g);
  cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
  cairo_set_line_width(cr, 1);
  cairo_stroke(cr);
  pl_axis a = {.px_lo = fr->bottom, .px_hi = fr->top};
  pl_font(cr, PL_TICK_PX, 0);
  pl_axis_fit(cr, &a, vmin, vmax, fr->bottom - fr->top, 0, 0, 0);
  char buf[64];
  for (int k = 0; k < pl_tick_count(&a); k++) {
    double v = pl_tick(&a, k), py = floor(pl_map(&a, v)) + 0.5;
    cairo_move_to(cr, x + w, py);
    cairo_line_to(cr, x + w + PL_TICK_LEN, py);
    pl_tick_label(&a, v, buf, sizeof buf);
    pl_text(cr, buf, x + w + PL_TICK_LEN + 3, py, 0, 0.5);
  }
  cairo_stroke(cr);
  if (pl_has_text(label)) {
    pl_font(cr, PL_TICK_PX, 0);
    pl_fit(cr, label, fr->bottom - fr->top);
    cairo_translate(cr, PL_WIDTH - PL_PAD, (fr->top + fr->bottom) / 2);
    cairo_rotate(cr, -M_PI / 2);
    pl_text(cr, label, 0, 0, 0.5, 1);
  }
  cairo_restore(cr);
}

int pl_frame_open(pl_canvas *cv, pl_frame *fr, const char *path, pl_format fmt,
                  const pl_frame_spec *spec, char *err, size_t errlen) {
  if (pl_canvas_open(cv, path, fmt, err, errlen) != 0) return -1;
  cairo_t *cr = cv->cr;
  pl_frame_draw(cr, fr, spec);
  if (spec->empty) {
    cairo_set_source_rgb(cr, 0.45, 0.45, 0.45);
    pl_font(cr, PL_LABEL_PX, 0);
    pl_text(cr, spec->empty_note != NULL ? spec->empty_note : "no data", (fr->left + fr->right) / 2,
            (fr->top + fr->bottom) / 2, 0.5, 0.5);
  }
  cairo_rectangle(cr, fr->left, fr->top, fr->right - fr->left, fr->bottom - fr->top);
  cairo_clip(cr);
  return 0;
}
