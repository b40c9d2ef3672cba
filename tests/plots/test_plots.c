/* test_plots.c: the charts as files: formats, size, where ink falls, determinism, edge cases
** and errors. Pixels are read back but never compared exactly: the font rasteriser may change. */
#include "tests/testutil.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cairo.h>

#include "plots/plot.h"

static char tmpdir[64];

static int setup(void **state) {
  (void)state;
  strcpy(tmpdir, "/tmp/podsim-plots-XXXXXX");
  return mkdtemp(tmpdir) == NULL ? -1 : 0;
}

static int teardown(void **state) {
  (void)state;
  DIR *d = opendir(tmpdir);
  if (d == NULL) return -1;
  struct dirent *e;
  char p[512];
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    snprintf(p, sizeof p, "%s/%s", tmpdir, e->d_name);
    remove(p);
  }
  closedir(d);
  return rmdir(tmpdir);
}

static const char *tmp(const char *name) {
  static char buf[4][512];
  static int next;
  char *b = buf[next++ % 4];
  snprintf(b, sizeof buf[0], "%s/%s", tmpdir, name);
  return b;
}

/* The whole file; *len its size. NULL when missing. */
static unsigned char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc((size_t)n + 1);
  *len = fread(b, 1, (size_t)n, f);
  b[*len] = 0;
  fclose(f);
  return b;
}

static int same_bytes(const char *a, const char *b) {
  size_t la, lb;
  unsigned char *x = slurp(a, &la), *y = slurp(b, &lb);
  int same = x != NULL && y != NULL && la == lb && memcmp(x, y, la) == 0;
  free(x);
  free(y);
  return same;
}

static cairo_surface_t *load_png(const char *path) {
  cairo_surface_t *s = cairo_image_surface_create_from_png(path);
  assert_int_equal(cairo_surface_status(s), CAIRO_STATUS_SUCCESS);
  assert_int_equal(cairo_image_surface_get_width(s), PL_WIDTH);
  assert_int_equal(cairo_image_surface_get_height(s), PL_HEIGHT);
  return s;
}

static int is_white(cairo_surface_t *s, int x, int y) {
  const unsigned char *row = cairo_image_surface_get_data(s) + y * cairo_image_surface_get_stride(s);
  return (((const uint32_t *)row)[x] & 0xffffff) == 0xffffff;
}

/* Non-white pixels in [x0, x1) x [y0, y1). */
static int ink(cairo_surface_t *s, int x0, int y0, int x1, int y1) {
  int n = 0;
  cairo_surface_flush(s);
  for (int y = y0; y < y1; y++)
    for (int x = x0; x < x1; x++) n += !is_white(s, x, y);
  return n;
}

/* Ink in the middle of the canvas (inside the plot area whatever the margins) and none in a
** 6-pixel border all round. */
static void assert_chart_png(const char *path) {
  cairo_surface_t *s = load_png(path);
  assert_true(ink(s, 250, 200, 950, 550) > 500);
  assert_int_equal(ink(s, 0, 0, PL_WIDTH, 6), 0);
  assert_int_equal(ink(s, 0, PL_HEIGHT - 6, PL_WIDTH, PL_HEIGHT), 0);
  assert_int_equal(ink(s, 0, 0, 6, PL_HEIGHT), 0);
  assert_int_equal(ink(s, PL_WIDTH - 6, 0, PL_WIDTH, PL_HEIGHT), 0);
  cairo_surface_destroy(s);
}

/* A loss curve: 50 points from 1.8 down to 0.3. */
static double lx[50], ly[50], ly2[50];
static void loss_data(void) {
  for (int i = 0; i < 50; i++) {
    lx[i] = i + 1;
    ly[i] = 0.3 + 1.5 * exp(-i / 10.0);
    ly2[i] = 0.4 + 1.4 * exp(-i / 15.0);
  }
}

static void test_line_png(void **state) {
  (void)state;
  char err[256] = "";
  loss_data();
  pl_series s = {"loss", lx, ly, 50, PL_MARK_NONE};
  assert_int_equal(pl_line_chart(tmp("loss.png"), PL_PNG, "loss — quickstart", "step", "loss",
                                 &s, 1, err, sizeof err), 0);
  assert_chart_png(tmp("loss.png"));
}

static void test_two_series(void **state) {
  (void)state;
  char err[256] = "";
  loss_data();
  pl_series s[2] = {{"data parallel", lx, ly, 50, PL_MARK_NONE}, {"parameter server", lx, ly2, 50, PL_MARK_NONE}};
  assert_int_equal(pl_line_chart(tmp("two.png"), PL_PNG, "loss — compare", "step", "loss", s, 2,
                                 err, sizeof err), 0);
  assert_chart_png(tmp("two.png"));
  /* The legend sits between the title and the plot: the band under the title has ink. */
  cairo_surface_t *img = load_png(tmp("two.png"));
  assert_true(ink(img, 300, 45, 900, 75) > 100);
  cairo_surface_destroy(img);
}

static void test_svg_pdf(void **state) {
  (void)state;
  char err[256] = "";
  loss_data();
  pl_series s = {"loss", lx, ly, 50, PL_MARK_NONE};
  assert_int_equal(pl_line_chart(tmp("loss.svg"), PL_SVG, "loss — quickstart", "step", "loss",
                                 &s, 1, err, sizeof err), 0);
  assert_int_equal(pl_line_chart(tmp("loss.pdf"), PL_PDF, "loss — quickstart", "step", "loss",
                                 &s, 1, err, sizeof err), 0);
  size_t n;
  unsigned char *svg = slurp(tmp("loss.svg"), &n);
  assert_non_null(svg);
  assert_non_null(strstr((char *)svg, "<svg"));
  assert_non_null(strstr((char *)svg, "width=\"1200pt\" height=\"700pt\""));
  free(svg);
  unsigned char *pdf = slurp(tmp("loss.pdf"), &n);
  assert_non_null(pdf);
  assert_memory_equal(pdf, "%PDF-", 5);
  /* No timestamp, so the same chart is the same file. */
  int dated = 0;
  for (size_t i = 0; i + 13 <= n; i++) dated |= memcmp(pdf + i, "/CreationDate", 13) == 0;
  assert_false(dated);
  free(pdf);
}

static void test_deterministic(void **state) {
  (void)state;
  static const pl_format fmts[] = {PL_PNG, PL_SVG, PL_PDF};
  static const char *names[][2] = {{"d1.png", "d2.png"}, {"d1.svg", "d2.svg"}, {"d1.pdf", "d2.pdf"}};
  char err[256] = "";
  loss_data();
  pl_stack st[2] = {{"compute", ly}, {"comm", ly2}};
  for (int f = 0; f < 3; f++) {
    for (int k = 0; k < 2; k++)
      assert_int_equal(pl_stacked_bars(tmp(names[f][k]), fmts[f], "step time", "step", "time (s)",
                                       lx, 50, st, 2, err, sizeof err), 0);
    assert_true(same_bytes(tmp(names[f][0]), tmp(names[f][1])));
  }
}

static void test_stacked_bars(void **state) {
  (void)state;
  char err[256] = "";
  double x[50], c[50], m[50], idle[50];
  for (int i = 0; i < 50; i++) {
    x[i] = i + 1;
    c[i] = 0.012;
    m[i] = 0.004 + 0.001 * (i % 3);
    idle[i] = 0.002;
  }
  pl_stack st[3] = {{"compute", c}, {"comm", m}, {"idle", idle}};
  assert_int_equal(pl_stacked_bars(tmp("bars.png"), PL_PNG, "step time — quickstart", "step",
                                   "time (s)", x, 50, st, 3, err, sizeof err), 0);
  assert_chart_png(tmp("bars.png"));
  /* 50 bars are separate: a row through them has white gaps between the first and last. */
  cairo_surface_t *s = load_png(tmp("bars.png"));
  int y = 500, first = -1, last = -1, gaps = 0;
  for (int px = 100; px < PL_WIDTH; px++)
    if (!is_white(s, px, y)) { if (first < 0) first = px; last = px; }
  for (int px = first; px <= last; px++) gaps += is_white(s, px, y);
  assert_true(gaps > 49);
  cairo_surface_destroy(s);
}

/* 1000 bars in about 1050 pixels: too thin for gaps, so they must touch. */
static void test_many_bars(void **state) {
  (void)state;
  char err[256] = "";
  enum { N = 1000 };
  static double x[N], c[N], m[N];
  for (int i = 0; i < N; i++) {
    x[i] = i + 1;
    c[i] = 1 + 0.5 * sin(i / 20.0);
    m[i] = 0.5;
  }
  pl_stack st[2] = {{"compute", c}, {"comm", m}};
  assert_int_equal(pl_stacked_bars(tmp("many.png"), PL_PNG, "step time — 1000 steps", "step",
                                   "time (s)", x, N, st, 2, err, sizeof err), 0);
  cairo_surface_t *s = load_png(tmp("many.png"));
  int y = 560, first = -1, last = -1, gaps = 0;
  for (int px = 100; px < PL_WIDTH; px++)
    if (!is_white(s, px, y)) { if (first < 0) first = px; last = px; }
  for (int px = first; px <= last; px++) gaps += is_white(s, px, y);
  assert_true(last - first > 900);
  assert_int_equal(gaps, 0);
  cairo_surface_destroy(s);
}

/* No data at all: empty axes and a note, not an error, in every chart kind and format. */
static void test_empty(void **state) {
  (void)state;
  char err[256] = "";
  pl_series none = {"loss", NULL, NULL, 0, PL_MARK_NONE};
  assert_int_equal(pl_line_chart(tmp("e1.png"), PL_PNG, "loss", "step", "loss", &none, 1, err,
                                 sizeof err), 0);
  assert_int_equal(pl_line_chart(tmp("e2.png"), PL_PNG, "loss", "step", "loss", NULL, 0, err,
                                 sizeof err), 0);
  assert_int_equal(pl_stacked_bars(tmp("e3.png"), PL_PNG, "t", "step", "s", NULL, 0, NULL, 0, err,
                                   sizeof err), 0);
  assert_int_equal(pl_stacked_bars(tmp("e4.svg"), PL_SVG, "t", "step", "s", NULL, 0, NULL, 0, err,
                                   sizeof err), 0);
  assert_int_equal(pl_line_chart(tmp("e5.pdf"), PL_PDF, NULL, NULL, NULL, NULL, 0, err,
                                 sizeof err), 0);
  for (int i = 1; i <= 3; i++) {
    char name[32];
    snprintf(name, sizeof name, "e%d.png", i);
    cairo_surface_t *s = load_png(tmp(name));
    assert_true(ink(s, 250, 200, 950, 550) > 0);  /* grid and the "no data" note */
    cairo_surface_destroy(s);
  }
  assert_int_equal(access(tmp("e4.svg"), F_OK), 0);
  assert_int_equal(access(tmp("e5.pdf"), F_OK), 0);
}

static void test_nan_single_constant(void **state) {
  (void)state;
  char err[256] = "";
  double x[5] = {1, 2, 3, 4, 5}, y[5] = {1, NAN, 3, INFINITY, 5}, all_nan[2] = {NAN, NAN};
  double flat[5] = {7, 7, 7, 7, 7};
  pl_series s[3] = {{"gappy", x, y, 5, PL_MARK_NONE}, {"nan", x, all_nan, 2, PL_MARK_NONE}, {"flat", x, flat, 5, PL_MARK_NONE}};
  assert_int_equal(pl_line_chart(tmp("nan.png"), PL_PNG, "nan", "x", "y", s, 3, err, sizeof err), 0);
  assert_chart_png(tmp("nan.png"));
  assert_int_equal(pl_line_chart(tmp("allnan.png"), PL_PNG, "nan", "x", "y", &s[1], 1, err,
                                 sizeof err), 0);
  pl_series one = {"one", x, flat, 1, PL_MARK_NONE};
  assert_int_equal(pl_line_chart(tmp("one.png"), PL_PNG, "one", "x", "y", &one, 1, err,
                                 sizeof err), 0);
  /* The lone point is centred on both (padded) axes and drawn as a dot. */
  cairo_surface_t *img = load_png(tmp("one.png"));
  assert_true(ink(img, 550, 300, 700, 400) > 20);
  cairo_surface_destroy(img);
  assert_int_equal(pl_line_chart(tmp("flat.png"), PL_PNG, "flat", "x", "y", &s[2], 1, err,
                                 sizeof err), 0);
  assert_chart_png(tmp("flat.png"));
  pl_stack st = {"v", y};
  assert_int_equal(pl_stacked_bars(tmp("nanbars.png"), PL_PNG, "t", "x", "y", x, 5, &st, 1, err,
                                   sizeof err), 0);
  assert_chart_png(tmp("nanbars.png"));
}

/* Negative values stack downwards from zero, below the positive ones. */
static void test_negative_bars(void **state) {
  (void)state;
  char err[256] = "";
  double x[4] = {10, 20, 30, 40}, up[4] = {1, 2, 3, 4}, down[4] = {-1, -2, -1, -2};
  pl_stack st[2] = {{"gain", up}, {"loss", down}};
  assert_int_equal(pl_stacked_bars(tmp("neg.png"), PL_PNG, "t", "x", "y", x, 4, st, 2, err,
                                   sizeof err), 0);
  assert_chart_png(tmp("neg.png"));
}

static void test_bad_path(void **state) {
  (void)state;
  static const pl_format fmts[] = {PL_PNG, PL_SVG, PL_PDF};
  const char *bad = "/nonexistent-podsim-dir/chart.png";
  char err[256];
  loss_data();
  pl_series s = {"loss", lx, ly, 50, PL_MARK_NONE};
  for (int f = 0; f < 3; f++) {
    err[0] = 0;
    assert_int_equal(pl_line_chart(bad, fmts[f], "t", "x", "y", &s, 1, err, sizeof err), -1);
    assert_non_null(strstr(err, bad));
    err[0] = 0;
    pl_stack st = {"v", ly};
    assert_int_equal(pl_stacked_bars(bad, fmts[f], "t", "x", "y", lx, 50, &st, 1, err,
                                     sizeof err), -1);
    assert_non_null(strstr(err, bad));
  }
  /* No message buffer is allowed; a truncated one is still a terminated string. */
  assert_int_equal(pl_line_chart(bad, PL_PNG, "t", "x", "y", &s, 1, NULL, 0), -1);
  char tiny[8];
  assert_int_equal(pl_line_chart(bad, PL_PNG, "t", "x", "y", &s, 1, tiny, sizeof tiny), -1);
  assert_int_equal(strlen(tiny), sizeof tiny - 1);
}

static void test_bad_arguments(void **state) {
  (void)state;
  char err[256];
  pl_series s = {"loss", NULL, NULL, 3, PL_MARK_NONE};
  assert_int_equal(pl_line_chart(tmp("bad.png"), PL_PNG, "t", "x", "y", &s, 1, err, sizeof err), -1);
  assert_non_null(strstr(err, "bad.png"));
  assert_int_equal(access(tmp("bad.png"), F_OK), -1);  /* nothing written */
  assert_int_equal(pl_line_chart(tmp("fmt.png"), (pl_format)7, "t", "x", "y", NULL, 0, err,
                                 sizeof err), -1);
  assert_non_null(strstr(err, "format"));
  assert_int_equal(pl_line_chart(NULL, PL_PNG, "t", "x", "y", NULL, 0, err, sizeof err), -1);
  double x[2] = {1, 2};
  pl_stack st = {"v", NULL};
  assert_int_equal(pl_stacked_bars(tmp("bad2.png"), PL_PNG, "t", "x", "y", x, 2, &st, 1, err,
                                   sizeof err), -1);
  assert_non_null(strstr(err, "stack 0"));
}

/* ---- timeline, heatmap, capacity bars ---------------------------------------------------- */

static const char *const trows[3] = {"task:0/CPU:0", "worker0.cpu", "fabric.w0.up"};
static const char *const tcats[3] = {"step", "compute", "communication"};

/* Three steps of 191 us: a step bar on row 0, two execs on row 1, six transfers on row 2. */
static size_t timeline_data(pl_span *sp) {
  size_t n = 0;
  for (int s = 0; s < 3; s++) {
    double t0 = s * 191.0;
    sp[n++] = (pl_span){0, t0, t0 + 191, 0};
    sp[n++] = (pl_span){1, t0, t0 + 18.5, 1};
    sp[n++] = (pl_span){1, t0 + 18.5, t0 + 68, 1};
    for (int k = 0; k < 6; k++) sp[n++] = (pl_span){2, t0 + 68 + k * 22.75, t0 + 88 + k * 22.75, 2};
  }
  return n;
}

static int magic(const char *path, pl_format fmt) {
  size_t n;
  unsigned char *b = slurp(path, &n);
  int ok = b != NULL &&
           (fmt == PL_PNG ? n > 8 && memcmp(b, "\x89PNG\r\n\x1a\n", 8) == 0
            : fmt == PL_PDF ? n > 5 && memcmp(b, "%PDF-", 5) == 0
                            : strstr((char *)b, "<svg") != NULL);
  free(b);
  return ok;
}

/* Every new chart in every format: the format's magic bytes, and the same bytes twice. */
static void test_new_charts_formats(void **state) {
  (void)state;
  static const pl_format fmts[] = {PL_PNG, PL_SVG, PL_PDF};
  static const char *ext[] = {"png", "svg", "pdf"};
  char err[256] = "", a[64], b[64];
  pl_span sp[64];
  size_t n = timeline_data(sp);
  double v[3 * 4] = {0, 0.25, 0.5, 1, 1, 1, 0, 0, 0.1, 0.2, 0.3, 0.4};
  double used[2] = {12.5, 30}, cap[2] = {32, 32};
  const char *labels[2] = {"TPU:0", "TPU:1"}, *notes[2] = {"12.5 GiB (39%)", NULL};
  for (int f = 0; f < 3; f++) {
    for (int k = 0; k < 2; k++) {
      snprintf(a, sizeof a, "tl%d.%s", k, ext[f]);
      assert_int_equal(pl_timeline(tmp(a), fmts[f], "timeline", "time (us)", NAN, NAN, trows, 3, tcats, 3, sp, n,
                                   NULL, err, sizeof err), 0);
      snprintf(a, sizeof a, "hm%d.%s", k, ext[f]);
      assert_int_equal(pl_heatmap(tmp(a), fmts[f], "heatmap", "time (ms)", trows, 3, 0, 2, 4, v, 0, 1,
                                  "utilisation", err, sizeof err), 0);
      snprintf(a, sizeof a, "cb%d.%s", k, ext[f]);
      assert_int_equal(pl_capacity_bars(tmp(a), fmts[f], "memory", "GiB", labels, used, cap, notes, 2,
                                        err, sizeof err), 0);
    }
    static const char *kinds[] = {"tl", "hm", "cb"};
    for (int c = 0; c < 3; c++) {
      snprintf(a, sizeof a, "%s0.%s", kinds[c], ext[f]);
      snprintf(b, sizeof b, "%s1.%s", kinds[c], ext[f]);
      assert_true(magic(tmp(a), fmts[f]));
      assert_true(same_bytes(tmp(a), tmp(b)));
    }
  }
  assert_chart_png(tmp("tl0.png"));
  assert_chart_png(tmp("hm0.png"));
  assert_chart_png(tmp("cb0.png"));
}

/* The timeline puts row 0 at the top: the step bar (palette 0, navy) fills the top third's
** middle band from x = 0 to the end, and the bottom third holds the light-blue transfers. */
static void test_timeline_rows(void **state) {
  (void)state;
  char err[256] = "";
  pl_span sp[64];
  size_t n = timeline_data(sp);
  assert_int_equal(pl_timeline(tmp("rows.png"), PL_PNG, "t", "time (us)", NAN, NAN, trows, 3, tcats, 3, sp, n,
                               NULL, err, sizeof err), 0);
  cairo_surface_t *s = load_png(tmp("rows.png"));
  cairo_surface_flush(s);
  const unsigned char *data = cairo_image_surface_get_data(s);
  int stride = cairo_image_surface_get_stride(s), navy_top = 0, navy_bottom = 0;
  for (int y = 100; y < 650; y++) {
    uint32_t px = ((const uint32_t *)(data + y * stride))[700] & 0xffffff;
    if (px == 0x08306b) *(y < 300 ? &navy_top : &navy_bottom) += 1;
  }
  assert_true(navy_top > 50);
  assert_int_equal(navy_bottom, 0);
  cairo_surface_destroy(s);
}

/* Bad spans (row or category out of range, NaN ends, end before start) are skipped; all bad is
** an empty chart with its note; none at all too. */
static void test_timeline_bad_spans(void **state) {
  (void)state;
  char err[256] = "";
  pl_span bad[4] = {{7, 0, 1, 0}, {0, NAN, 1, 0}, {0, 2, 1, 0}, {0, 0, 1, 9}};
  assert_int_equal(pl_timeline(tmp("bad.png"), PL_PNG, "t", "x", NAN, NAN, trows, 3, tcats, 3, bad, 4,
                               "no faults", err, sizeof err), 0);
  assert_int_equal(pl_timeline(tmp("none.png"), PL_PNG, "t", "x", NAN, NAN, NULL, 0, tcats, 3, NULL, 0,
                               "no faults", err, sizeof err), 0);
  cairo_surface_t *s = load_png(tmp("none.png"));
  assert_true(ink(s, 500, 330, 700, 380) > 0);  /* the note, mid-plot */
  cairo_surface_destroy(s);
  assert_int_equal(pl_timeline(tmp("x.png"), PL_PNG, "t", "x", NAN, NAN, trows, 3, tcats, 3, NULL, 2, NULL, err,
                               sizeof err), -1);
  assert_non_null(strstr(err, "spans missing"));
}

/* Heatmap: a NaN cell stays white, a 1.0 cell is the darkest colour, a 0 cell the lightest;
** bad ranges are errors that write nothing. */
static void test_heatmap_cells(void **state) {
  (void)state;
  char err[256] = "";
  const char *rows[1] = {"link"};
  double v[3] = {0, NAN, 1};
  assert_int_equal(pl_heatmap(tmp("cells.png"), PL_PNG, "h", "x", rows, 1, 0, 3, 3, v, 0, 1, "u", err,
                              sizeof err), 0);
  cairo_surface_t *s = load_png(tmp("cells.png"));
  cairo_surface_flush(s);
  const unsigned char *data = cairo_image_surface_get_data(s);
  int stride = cairo_image_surface_get_stride(s), y = 350;
  /* The plot spans about x = 120..1040 (the scale takes the right): sample each third's middle
  ** away from the grid lines. */
  uint32_t c0 = ((const uint32_t *)(data + y * stride))[300] & 0xffffff;
  uint32_t c1 = ((const uint32_t *)(data + y * stride))[590] & 0xffffff;
  uint32_t c2 = ((const uint32_t *)(data + y * stride))[900] & 0xffffff;
  assert_int_equal(c0, 0xe8f1fa);
  assert_true(c1 == 0xffffff || c1 == 0xe5e5e5);  /* blank, or the light grid */
  assert_int_equal(c2, 0x082a5e);
  cairo_surface_destroy(s);
  assert_int_equal(pl_heatmap(tmp("r.png"), PL_PNG, "h", "x", rows, 1, 0, 3, 3, v, 1, 1, "u", err,
                              sizeof err), -1);
  assert_non_null(strstr(err, "bad heatmap ranges"));
  assert_int_equal(access(tmp("r.png"), F_OK), -1);
  assert_int_equal(pl_heatmap(tmp("r.png"), PL_PNG, "h", "x", rows, 1, NAN, 3, 3, v, 0, 1, "u", err,
                              sizeof err), -1);
}

/* Capacity bars: NaN use draws only the capacity; nothing finite is the empty chart. */
static void test_capacity_nan(void **state) {
  (void)state;
  char err[256] = "";
  const char *labels[2] = {"a", "b"};
  double used[2] = {NAN, 40}, cap[2] = {32, INFINITY}, nan2[2] = {NAN, NAN};
  assert_int_equal(pl_capacity_bars(tmp("cn.png"), PL_PNG, "m", "GiB", labels, used, cap, NULL, 2, err,
                                    sizeof err), 0);
  assert_chart_png(tmp("cn.png"));
  assert_int_equal(pl_capacity_bars(tmp("cn2.png"), PL_PNG, "m", "GiB", labels, nan2, nan2, NULL, 2,
                                    err, sizeof err), 0);
  assert_int_equal(pl_capacity_bars(tmp("cn3.png"), PL_PNG, "m", "GiB", NULL, NULL, NULL, NULL, 2,
                                    err, sizeof err), -1);
}

/* Red-dominant pixels: the crosses' colour (0.70, 0.08, 0.12), which no palette line of the
** first two series has. */
static int red_ink(cairo_surface_t *s) {
  int n = 0;
  cairo_surface_flush(s);
  for (int y = 0; y < PL_HEIGHT; y++) {
    const uint32_t *row = (const uint32_t *)(cairo_image_surface_get_data(s) + y * cairo_image_surface_get_stride(s));
    for (int x = 0; x < PL_WIDTH; x++) {
      uint32_t c = row[x];
      n += ((c >> 16) & 0xff) > 150 && ((c >> 8) & 0xff) < 60 && (c & 0xff) < 70;
    }
  }
  return n;
}

/* A plan's throughput chart: two measured lines with dots and the points that did not fit as
** crosses on the floor; the crosses (and their legend sample) are the only red on the chart. */
static void test_cross_marks(void **state) {
  (void)state;
  char err[256] = "";
  double x[2] = {16, 64}, y1[2] = {1065, 3382}, y2[2] = {1459, 4317}, ox[1] = {4}, oy[1] = {0};
  pl_series s[3] = {{"float32", x, y1, 2, PL_MARK_DOTS}, {"mixed_bfloat16", x, y2, 2, PL_MARK_DOTS},
                    {"does not fit in device memory", ox, oy, 1, PL_MARK_CROSSES}};
  assert_int_equal(pl_line_chart(tmp("cross.png"), PL_PNG, "t", "chips", "examples/s", s, 3, err, sizeof err), 0);
  assert_int_equal(pl_line_chart(tmp("nocross.png"), PL_PNG, "t", "chips", "examples/s", s, 2, err, sizeof err), 0);
  cairo_surface_t *with = load_png(tmp("cross.png")), *without = load_png(tmp("nocross.png"));
  int r = red_ink(with);
  assert_true(r > 40);  /* two 12-px crosses 3 px wide: the plot's and the legend's */
  assert_int_equal(red_ink(without), 0);
  /* The cross sits at x = 4 chips, left of the first measured point at 16: all red pixels but the
  ** legend's (under the title, y < 80) lie in the plot's left fifth and above its floor. */
  cairo_surface_flush(with);
  int left = 0, plot = 0;
  for (int yy = 80; yy < PL_HEIGHT; yy++) {
    const uint32_t *row = (const uint32_t *)(cairo_image_surface_get_data(with) + yy * cairo_image_surface_get_stride(with));
    for (int xx = 0; xx < PL_WIDTH; xx++) {
      uint32_t c = row[xx];
      if (!(((c >> 16) & 0xff) > 150 && ((c >> 8) & 0xff) < 60 && (c & 0xff) < 70)) continue;
      plot++;
      left += xx < PL_WIDTH / 5;
    }
  }
  assert_true(plot > 20);
  assert_int_equal(left, plot);
  cairo_surface_destroy(with);
  cairo_surface_destroy(without);
}

/* Bars named by their configuration: an empty bar carries its note ("does not fit") just above
** the floor, and each slot has its label under the plot. */
static void test_labelled_bars(void **state) {
  (void)state;
  char err[256] = "";
  const char *labels[3] = {"v4-8, float32", "v4-32, float32", "v4-128, float32"};
  const char *notes[3] = {"does not fit", NULL, NULL};
  double compute[3] = {0, 205, 62}, comm[3] = {0, 35, 13};
  pl_stack st[2] = {{"compute", compute}, {"communication", comm}};
  assert_int_equal(pl_labelled_bars(tmp("lb.png"), PL_PNG, "step", "cluster.tpu.type", "ms", labels, notes, 3,
                                    st, 2, err, sizeof err), 0);
  assert_int_equal(pl_labelled_bars(tmp("lb0.png"), PL_PNG, "step", "cluster.tpu.type", "ms", labels, NULL, 3,
                                    st, 2, err, sizeof err), 0);
  assert_chart_png(tmp("lb.png"));
  cairo_surface_t *a = load_png(tmp("lb.png")), *b = load_png(tmp("lb0.png"));
  /* The first slot spans about x = 75..430; its band just above the floor (y ~ 600..625) has the
  ** note's ink only when notes are given; under the floor both have the slot's label. */
  assert_true(ink(a, 120, 595, 380, 628) > ink(b, 120, 595, 380, 628) + 50);
  assert_true(ink(b, 100, 638, 400, 655) > 50);
  cairo_surface_destroy(a);
  cairo_surface_destroy(b);
  assert_int_equal(pl_labelled_bars(tmp("lb1.png"), PL_PNG, "s", "x", "y", NULL, NULL, 3, st, 2, err, sizeof err), -1);
  assert_non_null(strstr(err, "no labels"));
  assert_int_equal(access(tmp("lb1.png"), F_OK), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_line_png),      cmocka_unit_test(test_two_series),
    cmocka_unit_test(test_svg_pdf),       cmocka_unit_test(test_deterministic),
    cmocka_unit_test(test_stacked_bars),  cmocka_unit_test(test_many_bars),
    cmocka_unit_test(test_empty),         cmocka_unit_test(test_nan_single_constant),
    cmocka_unit_test(test_negative_bars), cmocka_unit_test(test_bad_path),
    cmocka_unit_test(test_bad_arguments), cmocka_unit_test(test_new_charts_formats),
    cmocka_unit_test(test_timeline_rows), cmocka_unit_test(test_timeline_bad_spans),
    cmocka_unit_test(test_heatmap_cells), cmocka_unit_test(test_capacity_nan),
    cmocka_unit_test(test_cross_marks),   cmocka_unit_test(test_labelled_bars),
  };
  return cmocka_run_group_tests_name("plots", tests, setup, teardown);
}
