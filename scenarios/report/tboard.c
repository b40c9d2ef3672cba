/*
** tboard.c: a run's step records as TensorBoard scalars (tboard_), through tfevents.h.
*/
#include "scenarios/report/tboard.h"

#include <errno.h>
#include <string.h>

#include "base/base.h"
#include "scenarios/report/tfevents.h"

/* Up to the fixed tags, a few optional ones and every compiled metric. */
#define TB_MAX_SCALARS (16 + MD_METRIC_KIND_COUNT)

/* The steps whose work still counts at a row: a rollback to a checkpoint replays steps from an
** earlier one, so a row of step k undoes every kept step >= k. Kept steps are increasing, hence
** a stack of (step, useful ps). */
typedef struct useful_stack {
  long *step;             /* kept steps, increasing */
  int64_t *ps;            /* each one's step time without compile */
  long n;                 /* entries */
  int64_t total;          /* sum of ps[0..n) */
} useful_stack;

static void useful_push(useful_stack *u, const step_record *r) {
  while (u->n > 0 && u->step[u->n - 1] >= r->step) u->total -= u->ps[--u->n];
  u->step[u->n] = r->step;
  u->ps[u->n] = r->step_ps - r->compile_ps;
  u->total += u->ps[u->n++];
}

static int row_scalars(const step_record *r, const outputs_columns *cols, const useful_stack *u,
                       tfev_scalar *v) {
  int n = 0;
  v[n++] = (tfev_scalar){"loss", r->loss};
  v[n++] = (tfev_scalar){"step_time_s", 1e-12 * (double)r->step_ps};
  v[n++] = (tfev_scalar){"examples_per_s", outputs_examples_per_s(r)};
  if (cols->sync) {
    v[n++] = (tfev_scalar){"compute_s", 1e-12 * (double)r->compute_ps};
    v[n++] = (tfev_scalar){"comm_s", 1e-12 * (double)r->comm_ps};
    v[n++] = (tfev_scalar){"idle_s", 1e-12 * (double)r->idle_ps};
    v[n++] = (tfev_scalar){"input_s", 1e-12 * (double)r->input_ps};
    v[n++] = (tfev_scalar){"compile_s", 1e-12 * (double)r->compile_ps};
    v[n++] = (tfev_scalar){"hbm_bytes", (double)r->memory_bytes};
  }
  if (cols->restart) v[n++] = (tfev_scalar){"restarts", r->restarts};
  if (cols->ps) v[n++] = (tfev_scalar){"staleness", (double)r->staleness};
  else if (r->end_ps > 0) v[n++] = (tfev_scalar){"goodput", (double)u->total / (double)r->end_ps};
  if (cols->learning_rate) v[n++] = (tfev_scalar){"learning_rate", r->learning_rate};
  for (int k = 0; k < cols->nmetrics; k++) v[n++] = (tfev_scalar){cols->metric_names[k], r->metrics[k]};
  return n;
}

int tboard_write_run(const char *dir, const step_record *rows, long n, const outputs_columns *cols,
                     char *msg, size_t len) {
  char sub[4096 + 16];
  tfev_writer *w = tfev_open(outputs_path(sub, sizeof sub, dir, "train"), 0.0, "podsim", msg, len);
  if (w == NULL) return -1;
  useful_stack u = { base_xcalloc((size_t)n + 1, sizeof *u.step), base_xcalloc((size_t)n + 1, sizeof *u.ps), 0, 0 };
  tfev_scalar v[TB_MAX_SCALARS];
  int bad = 0;
  for (long i = 0; !bad && i < n; i++) {
    useful_push(&u, &rows[i]);
    bad = tfev_write_scalars(w, rows[i].step, 1e-12 * (double)rows[i].end_ps, v,
                             row_scalars(&rows[i], cols, &u, v)) != 0;
  }
  free(u.step);
  free(u.ps);
  if (tfev_close(w) != 0) bad = 1;
  if (bad) base_format(msg, len, "%s: cannot write an event file: %s", sub, strerror(errno));
  return bad ? -1 : 0;
}
