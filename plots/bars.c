/*
** bars.c: stacked bar charts (pl_stacked_bars). Positive values stack upwards from 0 and
** negative ones downwards, each layer in its own palette entry; a non-finite value is an
** empty segment and a non-finite position drops its bar.
*/
#include "plots/plotInt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int pl_cmp_double(const void *a, const void *b) {
  double u = *(const double *)a, v = *(const double *)b;
  return (u > v) - (u < v);
}

/* The smallest gap between distinct finite positions (1 when there is none), which sets the
** bar width; positions need not be sorted. Returns -1 when out of memory. */
static int pl_bar_spacing(const double *x, size_t n, double *spacing) {
  double *xs = malloc((n > 0 ? n : 1) * sizeof *xs);
  if (xs == NULL) return -1;
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (isfinite(x[i])) xs[m++] = x[i];
  qsort(xs, m, sizeof *xs, pl_cmp_double);
  *spacing = INFINITY;
  for (size_t i = 1; i < m; i++)
    if (xs[i] > xs[i - 1]) *spacing = fmin(*spacing, xs[i] - xs[i - 1]);
  if (!isfinite(*spacing)) *spacing = 1;
  free(xs);
  return 0;
}

/* Where layer k of bar i starts: the sum of the layers below it with the same sign. */
static double pl_base(const pl_stack *stacks, size_t k, size_t i, double v) {
  double base = 0;
  for (size_t j = 0; j < k; j++) {
    double u = stacks[j].values[i];
    if (isfinite(u) && (u > 0) == (v > 0)) base += u;
  }
  return base;
}

static void pl_draw_bars(cairo_t *cr, const pl_frame *fr, const double *x, size_t n,
                         const pl_stack *stacks, size_t nstacks, double spacing) {
  double pitch = spacing * (fr->x.px_hi - fr->x.px_lo) / (fr->x.hi - fr->x.lo);
  /* Gaps under a pixel would only antialias into a moire: the bars then touch, their edges
  ** rounded outwards so that rounding can never open a hairline between neighbours. */
  int contiguous = pitch * 0.2 < 1;
  double w = contiguous ? pitch : pitch * 0.8;
  for (size_t k = 0; k < nstacks; k++) {
    pl_style_fill(cr, (int)k);
    for (size_t i = 0; i < n; i++) {
      double v = stacks[k].values[i];
      if (!isfinite(x[i]) || !isfinite(v) || v == 0) continue;
      double base = pl_base(stacks, k, i, v), cx = pl_map(&fr->x, x[i]);
      /* Whole-pixel edges keep bars crisp and let stacked layers meet exactly; at least a
      ** pixel wide, so bars thinner than a pixel still show. */
      double x0 = contiguous ? floor(cx - w / 2) : round(cx - w / 2);
      double x1 = contiguous ? ceil(cx + w / 2) : round(cx + w / 2);
      if (x1 <= x0) x1 = x0 + 1;
      double y0 = round(pl_map(&fr->y, base)), y1 = round(pl_map(&fr->y, base + v));
      cairo_rectangle(cr, x0, fmin(y0, y1), x1 - x0, fabs(y1 - y0));
    }
    cairo_fill(cr);
  }
}

/* The bars at x[0..n) in the frame spec starts (its texts and, for labelled bars, its
** categorical axis), notes[i] over bar i when notes is not NULL. */
static int pl_bars(const char *path, pl_format fmt, pl_frame_spec spec, const double *x, size_t n,
                   const pl_stack *stacks, size_t nstacks, const char *const *notes, char *err,
                   size_t errlen) {
  if (path == NULL) return base_fail(err, errlen, "plot: no output path");
  if (n > 0 && x == NULL) return base_fail(err, errlen, "plot %s: %zu bars but no x", path, n);
  if (nstacks > 0 && stacks == NULL)
    return base_fail(err, errlen, "plot %s: %zu stacks but no array", path, nstacks);
  for (size_t k = 0; k < nstacks; k++)
    if (n > 0 && stacks[k].values == NULL)
      return base_fail(err, errlen, "plot %s: stack %zu has no values", path, k);

  double spacing;
  if (pl_bar_spacing(x, n, &spacing) != 0) return base_fail(err, errlen, "plot %s: out of memory", path);
  spec.xlo = INFINITY;
  spec.xhi = -INFINITY;
  spec.xmin_step = spacing;
  size_t values = 0;
  for (size_t i = 0; i < n; i++) {
    if (!isfinite(x[i])) continue;
    double up = 0, down = 0;
    for (size_t k = 0; k < nstacks; k++) {
      double v = stacks[k].values[i];
      if (!isfinite(v)) continue;
      if (v > 0) up += v; else down += v;
      values++;
    }
    spec.xlo = fmin(spec.xlo, x[i] - spacing / 2);
    spec.xhi = fmax(spec.xhi, x[i] + spacing / 2);
    spec.ylo = fmin(spec.ylo, down);
    spec.yhi = fmax(spec.yhi, up);
  }
  /* Air above the tallest bar (and below the deepest); a side with no bars stays at 0. Notes
  ** above the bars take more of it. */
  double pad = (spec.yhi - spec.ylo) * (notes != NULL ? 0.1 : 0.03);
  if (spec.yhi > 0) spec.yhi += pad;
  if (spec.ylo < 0) spec.ylo -= pad;

  pl_key *keys = nstacks > 0 ? malloc(nstacks * sizeof *keys) : NULL;
  if (nstacks > 0 && keys == NULL) return base_fail(err, errlen, "plot %s: out of memory", path);
  for (size_t k = 0; k < nstacks; k++)
    if (stacks[k].label != NULL && stacks[k].label[0] != '\0')
      keys[spec.nkeys++] = (pl_key){stacks[k].label, (int)k, 1, PL_MARK_NONE};
  spec.keys = keys;

  spec.empty = values == 0 && notes == NULL;

  pl_canvas cv;
  pl_frame fr;
  int rc = pl_frame_open(&cv, &fr, path, fmt, &spec, err, errlen);
  free(keys);
  if (rc != 0) return -1;
  if (values > 0) pl_draw_bars(cv.cr, &fr, x, n, stacks, nstacks, spacing);
  for (size_t i = 0; notes != NULL && i < n; i++) {
    if (notes[i] == NULL || !isfinite(x[i])) continue;
    double up = 0;
    for (size_t k = 0; k < nstacks; k++)
      if (isfinite(stacks[k].values[i]) && stacks[k].values[i] > 0) up += stacks[k].values[i];
    pl_note_above(cv.cr, notes[i], pl_map(&fr.x, x[i]), pl_map(&fr.y, up),
                  (fr.right - fr.left) / (double)n);
  }
  return pl_canvas_close(&cv);
}

int pl_stacked_bars(const char *path, pl_format fmt, const char *title, const char *xlabel,
                    const char *ylabel, const double *x, size_t n, const pl_stack *stacks,
                    size_t nstacks, char *err, size_t errlen) {
  pl_frame_spec spec = {.title = title, .xlabel = xlabel, .ylabel = ylabel};
  return pl_bars(path, fmt, spec, x, n, stacks, nstacks, NULL, err, errlen);
}

int pl_labelled_bars(const char *path, pl_format fmt, const char *title, const char *xlabel,
                     const char *ylabel, const char *const *labels, const char *const *notes, size_t n,
                     const pl_stack *stacks, size_t nstacks, char *err, size_t errlen) {
  if (n > 0 && labels == NULL) return base_fail(err, errlen, "plot %s: %zu bars but no labels", path, n);
  static const char *const none[1] = {""};
  pl_frame_spec spec = {.title = title, .xlabel = xlabel, .ylabel = ylabel,
                        .xcats = n > 0 ? labels : none, .nxcats = n > 0 ? n : 1};
  double *x = malloc((n > 0 ? n : 1) * sizeof *x);
  if (x == NULL) return base_fail(err, errlen, "plot %s: out of memory", path);
  for (size_t i = 0; i < n; i++) x[i] = (double)i + 0.5;  /* slot centres of the categorical axis */
  int rc = pl_bars(path, fmt, spec, x, n, stacks, nstacks, notes, err, errlen);
  free(x);
  return rc;
}

/* ---- bars against capacity --------------------------------------------------------------- */

static void pl_draw_capacity(cairo_t *cr, const pl_frame *fr, const double *used,
                             const double *capacity, const char *const *notes, size_t n) {
  double slot = (fr->right - fr->left) / (double)n, w = fmin(slot * 0.6, 160);
  for (size_t i = 0; i < n; i++) {
    double cx = pl_map(&fr->x, (double)i + 0.5), x0 = round(cx - w / 2), x1 = round(cx + w / 2);
    double y0 = round(pl_map(&fr->y, 0)), top = y0;
    const double *v[2] = {capacity, used};
    for (int k = 0; k < 2; k++) {  /* capacity behind, in the light style; use over it */
      if (!isfinite(v[k][i]) || v[k][i] <= 0) continue;
      double y = round(pl_map(&fr->y, v[k][i]));
      if (y >= y0) y = y0 - 1;  /* a sliver of use still shows */
      cairo_rectangle(cr, x0, y, x1 - x0, y0 - y);
      pl_style_fill(cr, k == 0 ? 2 : 0);
      cairo_fill_preserve(cr);
      cairo_set_source_rgb(cr, 0.25, 0.25, 0.25);
      cairo_set_line_width(cr, 1);
      cairo_stroke(cr);
      top = fmin(top, y);
    }
    if (isfinite(capacity[i]) && capacity[i] > 0) {  /* the limit, visible over any use */
      double y = round(pl_map(&fr->y, capacity[i])) + 0.5;
      cairo_move_to(cr, x0 - 6, y);
      cairo_line_to(cr, x1 + 6, y);
      cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
      cairo_set_line_width(cr, 2.5);
      cairo_stroke(cr);
    }
    if (notes != NULL && notes[i] != NULL) pl_note_above(cr, notes[i], cx, top, slot);
  }
}

int pl_capacity_bars(const char *path, pl_format fmt, const char *title, const char *ylabel,
                     const char *const *labels, const double *used, const double *capacity,
                     const char *const *notes, size_t n, char *err, size_t errlen) {
  if (path == NULL) return base_fail(err, errlen, "plot: no output path");
  if (n > 0 && (labels == NULL || used == NULL || capacity == NULL))
    return base_fail(err, errlen, "plot %s: %zu bars but no labels, used or capacity", path, n);
  static const char *const none[1] = {""};
  static const char *const legend[3] = {"peak in use", "", "capacity"};
  pl_frame_spec spec = {.title = title, .ylabel = ylabel, .ylo = 0, .yhi = 0,
                        .xcats = n > 0 ? labels : none, .nxcats = n > 0 ? n : 1};
  size_t values = 0;
  for (size_t i = 0; i < n; i++) {
    if (isfinite(used[i])) spec.yhi = fmax(spec.yhi, used[i]), values++;
    if (isfinite(capacity[i])) spec.yhi = fmax(spec.yhi, capacity[i]), values++;
  }
  spec.yhi *= 1.1;  /* room for the notes above the tallest bar */
  if (!(spec.yhi > 0)) spec.yhi = 1;
  spec.empty = values == 0;
  pl_key *keys;
  if (pl_category_keys(legend, 3, &keys, &spec.nkeys) != 0)
    return base_fail(err, errlen, "plot %s: out of memory", path);
  spec.keys = keys;
  pl_canvas cv;
  pl_frame fr;
  int rc = pl_frame_open(&cv, &fr, path, fmt, &spec, err, errlen);
  free(keys);
  if (rc != 0) return -1;
  if (values > 0) pl_draw_capacity(cv.cr, &fr, used, capacity, notes, n);
  return pl_canvas_close(&cv);
}
