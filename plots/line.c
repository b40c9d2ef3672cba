/*
** line.c: line charts (pl_line_chart). Each series is a polyline through its finite points;
** a non-finite point breaks the line rather than being bridged, so a gap in the data shows.
*/
#include "plots/plotInt.h"

#include <math.h>
#include <stdlib.h>

static int pl_point_ok(const pl_series *s, size_t i) {
  return i < s->n && isfinite(s->x[i]) && isfinite(s->y[i]);
}

static void pl_draw_series(cairo_t *cr, const pl_frame *fr, const pl_series *s, int style) {
  cairo_save(cr);
  pl_style_line(cr, style);
  if (s->mark != PL_MARK_NONE) {
    /* A cross on the floor is lifted clear of the axis line, which would hide half of it. */
    double lift = s->mark == PL_MARK_CROSSES ? 9 : 0;
    for (size_t i = 0; i < s->n; i++)
      if (pl_point_ok(s, i))
        pl_mark_at(cr, s->mark, pl_map(&fr->x, s->x[i]), fmin(pl_map(&fr->y, s->y[i]), fr->bottom - lift));
    if (s->mark == PL_MARK_CROSSES) {
      cairo_restore(cr);
      return;
    }
  }
  for (size_t i = 0; i < s->n; i++) {
    if (!pl_point_ok(s, i)) continue;
    double px = pl_map(&fr->x, s->x[i]), py = pl_map(&fr->y, s->y[i]);
    if (i > 0 && pl_point_ok(s, i - 1))
      cairo_line_to(cr, px, py);
    else
      cairo_move_to(cr, px, py);
  }
  cairo_stroke(cr);
  /* A point with no finite neighbour has no segment to show it: it gets a dot. */
  for (size_t i = 0; i < s->n; i++) {
    if (!pl_point_ok(s, i) || (i > 0 && pl_point_ok(s, i - 1)) || pl_point_ok(s, i + 1)) continue;
    cairo_new_sub_path(cr);
    cairo_arc(cr, pl_map(&fr->x, s->x[i]), pl_map(&fr->y, s->y[i]), 4, 0, 2 * M_PI);
  }
  cairo_fill(cr);
  cairo_restore(cr);
}

int pl_line_chart(const char *path, pl_format fmt, const char *title, const char *xlabel,
                  const char *ylabel, const pl_series *series, size_t nseries, char *err,
                  size_t errlen) {
  if (path == NULL) return base_fail(err, errlen, "plot: no output path");
  if (nseries > 0 && series == NULL)
    return base_fail(err, errlen, "plot %s: %zu series but no array", path, nseries);
  pl_frame_spec spec = {.title = title, .xlabel = xlabel, .ylabel = ylabel, .xlo = INFINITY,
                        .xhi = -INFINITY, .ylo = INFINITY, .yhi = -INFINITY, .xsnap = 1};
  size_t points = 0;
  for (size_t k = 0; k < nseries; k++) {
    const pl_series *s = &series[k];
    if (s->n > 0 && (s->x == NULL || s->y == NULL))
      return base_fail(err, errlen, "plot %s: series %zu has %zu points but no x or y", path, k,
                     s->n);
    for (size_t i = 0; i < s->n; i++) {
      if (!pl_point_ok(s, i)) continue;
      spec.xlo = fmin(spec.xlo, s->x[i]);
      spec.xhi = fmax(spec.xhi, s->x[i]);
      spec.ylo = fmin(spec.ylo, s->y[i]);
      spec.yhi = fmax(spec.yhi, s->y[i]);
      points++;
    }
  }
  /* A little air above and below, so an extreme value does not run along the frame; never
  ** across zero, which would give a quantity that cannot be negative a negative axis. */
  double pad = (spec.yhi - spec.ylo) * 0.03;
  if (points > 0) {
    spec.ylo = spec.ylo >= 0 ? fmax(0, spec.ylo - pad) : spec.ylo - pad;
    spec.yhi = spec.yhi <= 0 ? fmin(0, spec.yhi + pad) : spec.yhi + pad;
  }

  pl_key *keys = nseries > 0 ? malloc(nseries * sizeof *keys) : NULL;
  if (nseries > 0 && keys == NULL) return base_fail(err, errlen, "plot %s: out of memory", path);
  for (size_t k = 0; k < nseries; k++)
    if (series[k].label != NULL && series[k].label[0] != '\0')
      keys[spec.nkeys++] = (pl_key){series[k].label, (int)k, 0, series[k].mark};
  spec.keys = keys;

  spec.empty = points == 0;

  pl_canvas cv;
  pl_frame fr;
  int rc = pl_frame_open(&cv, &fr, path, fmt, &spec, err, errlen);
  free(keys);
  if (rc != 0) return -1;
  for (size_t k = 0; k < nseries && points > 0; k++) pl_draw_series(cv.cr, &fr, &series[k], (int)k);
  return pl_canvas_close(&cv);
}
