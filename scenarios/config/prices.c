/*
** prices.c: what a scenario's cluster costs per hour (scenario.price_per_hour), from a price
** table: podsim's built-in scenarios/config/prices.csv (compiled in as text) or the file
** outputs.prices names, in the same columns. Rows: kind (tpu: USD per chip-hour of a generation,
** its TPU VM hosts included, as Cloud TPU bills; vm: USD per hour of a machine type), name,
** on_demand_usd_per_hour, spot_usd_per_hour (empty: none published), date, source, note; lines
** starting with # are comments. outputs.price_model picks the column. A TPU run pays its chips;
** a CPU run every VM of the cluster (workers, and for parameter_server its ps tasks, chief and
** evaluator) for the simulated time. A machine with no price (a custom machine, a spot price
** the table leaves empty) leaves the cost unknown, never an error: the run is still simulated.
*/
#include "scenarios/config/configInt.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "models/csvfile.h"
#include "sim/tpu.h"

static const char BUILTIN[] =
#include "prices_csv.h"
    ;
static const char BUILTIN_NAME[] = "scenarios/config/prices.csv (built in)";
static const char *const HEADER[] = {"kind", "name", "on_demand_usd_per_hour", "spot_usd_per_hour", NULL};

/* What the cluster needs priced: up to four (kind, name, count) and what the table gives each. */
typedef struct price_need {
  const char *kind;       /* "tpu" or "vm" */
  const char *name;       /* generation or machine type */
  int count;              /* chips or VMs */
  double price;           /* USD per hour of one, NaN until a row gives it */
} price_need;

typedef struct price_reader {
  price_need need[4];
  int nneed;
  int spot;               /* the column read: 3 spot, else 2 on-demand */
  int header_seen;
} price_reader;

/* A price field: empty (none), else a finite number >= 0. */
static int read_price(const char *text, double *out) {
  char *end;
  if (!text[0]) return *out = NAN, 0;
  double v = strtod(text, &end);
  if (end == text || *end || !isfinite(v) || v < 0) return -1;
  *out = v;
  return 0;
}

static int price_row(void *ctx, int line, int nfields, char **fields, md_error *err) {
  price_reader *r = ctx;
  (void)line;
  if (nfields == 0 || fields[0][0] == '#' || (nfields == 1 && !fields[0][0])) return 0;
  if (!r->header_seen) {
    for (int i = 0; HEADER[i]; i++)
      if (i >= nfields || strcmp(fields[i], HEADER[i]))
        return md_error_set(err, line, i + 1, "expected the header kind,name,on_demand_usd_per_hour,spot_usd_per_hour,"
                            "date,source,note, found \"%s\"", i < nfields ? fields[i] : "");
    r->header_seen = 1;
    return 0;
  }
  if (nfields < 4) return md_error_set(err, line, nfields + 1, "expected at least 4 fields (kind,name,on_demand,spot), found %d", nfields);
  if (strcmp(fields[0], "tpu") && strcmp(fields[0], "vm"))
    return md_error_set(err, line, 1, "expected a kind tpu or vm, found \"%s\"", fields[0]);
  double v[2];
  for (int c = 0; c < 2; c++)
    if (read_price(fields[2 + c], &v[c]))
      return md_error_set(err, line, 3 + c, "expected a price in USD per hour >= 0 (or nothing), found \"%s\"", fields[2 + c]);
  for (int i = 0; i < r->nneed; i++)
    if (!strcmp(r->need[i].kind, fields[0]) && !strcmp(r->need[i].name, fields[1])) r->need[i].price = v[r->spot];
  return 0;
}

static void need(price_reader *r, const char *kind, const char *name, int count) {
  if (count > 0) r->need[r->nneed++] = (price_need){kind, name, count, NAN};
}

int cfg_prices(cfg_ctx *c) {
  scenario *s = c->s;
  price_reader r = {.spot = s->price_spot};
  const sim_tpu_generation *g;
  int chips, dims[3];
  char why[512];
  if (s->tpu_type[0] && sim_tpu_slice_parse(s->tpu_type, &g, &chips, dims, why, sizeof why) == 0) {
    need(&r, "tpu", sim_tpu_generation_figures(g)->name, chips * s->tpu_slices);  /* every slice's chips */
  } else {
    int ps_job = s->strategy == SCN_STRATEGY_PARAMETER_SERVER;
    need(&r, "vm", s->worker_machine.type, s->workers);
    need(&r, "vm", s->ps_machine.type, ps_job ? s->ps : 0);
    need(&r, "vm", s->chief_machine.type, ps_job && s->has_chief);
    need(&r, "vm", s->evaluator_machine.type, s->has_evaluator);
  }
  const char *file = s->prices_file[0] ? s->prices_file : BUILTIN_NAME;
  FILE *f = s->prices_file[0] ? base_fopen_regular(s->prices_file) : fmemopen((void *)BUILTIN, sizeof BUILTIN - 1, "r");
  md_error e = {0};
  int rc = f ? md_csvfile_each_stream(f, price_row, &r, NULL, &e) : md_error_set(&e, 0, 0, "cannot read the file");
  if (f) fclose(f);
  if (rc == 0 && !r.header_seen) rc = md_error_set(&e, 1, 1, "expected the header kind,name,on_demand_usd_per_hour,... found an empty table");
  if (rc != 0) {
    yt_node at = {.kind = YT_SCALAR, .file = file, .line = e.line, .col = e.col};
    return cfg_fail(c, &at, "outputs.prices", "%s", e.msg);
  }
  s->price_per_hour = 0;
  s->price_missing[0] = 0;
  for (int i = 0; i < r.nneed; i++) {
    if (isnan(r.need[i].price) && !s->price_missing[0])
      base_format(s->price_missing, sizeof s->price_missing, "%s %s%s", r.need[i].kind, r.need[i].name,
                  s->price_spot ? " (spot)" : "");
    s->price_per_hour += r.need[i].count * r.need[i].price;
  }
  return 0;
}
