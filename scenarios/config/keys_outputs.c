/*
** keys_outputs.c: the outputs section: directory, charts, format, trace, the variables listing,
** plan points kept, prices, TensorBoard event files.
*/
#include "scenarios/config/configInt.h"

#include <string.h>

#include "scenarios/report/report.h"

static const char *const FORMATS[] = {"png", "svg", "pdf", NULL};
static const char *const PRICE_MODELS[] = {"on_demand", "spot", NULL};
static const char *const RECOMMEND[] = {"chip_hours", "cost", NULL};
static const char *const VARIABLES[] = {"per_variable", "per_replica", NULL};

/* outputs.plots: a list of chart names (report.h's REPORT_CHARTS), each once. */
static int plots_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  char sub[256], fb[80];
  (void)k; (void)base;
  if (v->kind != YT_SEQ)
    return cfg_fail(c, v, path, "expected a sequence of plots such as [loss, step_time], found %s", cfg_found(v, fb, sizeof fb));
  unsigned seen = 0;
  for (int i = 0; i < v->n; i++) {
    base_format(sub, sizeof sub, "%s[%d]", path, i);
    const yt_node *item = v->items[i];
    int which = item->kind == YT_SCALAR ? report_chart_index(item->text) : -1;
    if (which < 0) {
      char names[256] = "";
      for (int j = 0; REPORT_CHARTS[j].name; j++)
        base_format(names + strlen(names), sizeof names - strlen(names), "%s%s", j ? " | " : "", REPORT_CHARTS[j].name);
      return cfg_fail(c, item, sub, "expected one of %s, found %s", names, cfg_found(item, fb, sizeof fb));
    }
    if (seen & REPORT_CHART_BIT(which)) return cfg_fail(c, item, sub, "plot \"%s\" listed twice", item->text);
    seen |= REPORT_CHART_BIT(which);
  }
  c->s->plots = seen;
  return 0;
}

const key_spec CFG_OUTPUTS_KEYS[] = {
  {.key = "dir", .doc = "the output directory, relative to the current directory (default out/<name>)", .type = V_STR, .st = S_CHARS, OFF(scenario, out_dir), .len = SCN_PATH_MAX},
  {.key = "plots", .type = V_FN, .fn = plots_fn,
   .schema = "{\"type\":\"array\",\"uniqueItems\":true,\"items\":\"$charts\",\"description\":\"the charts to draw, each once (docs/reports.md)\"}"},
  {.key = "format", .type = V_ENUM, .names = FORMATS, .st = S_INT,
   OFF(scenario, format)},
  {.key = "trace", .type = V_BOOL, .st = S_INT, OFF(scenario, trace)},
  {.key = "ops", .type = V_BOOL, .st = S_INT, OFF(scenario, outputs_ops),
   .doc = "write the compiled step: ops.csv (an op a row: FLOPs, bytes, time, bound) and step.hlo.txt (docs/reports.md)"},
  {.key = "variables", .type = V_ENUM, .names = VARIABLES, .st = S_INT, OFF(scenario, variables_per_replica),
   .doc = "variables.csv: a row per variable with its placement, or a row per copy on each replica"},
  {.key = "keep_points", .type = V_BOOL, .st = S_INT, OFF(scenario, keep_points),
   .doc = "podsim plan: keep each point's output directory under points/ (default: only what the plan reads, then removed)"},
  {.key = "prices", .type = V_PATH, .st = S_CHARS, OFF(scenario, prices_file), .len = SCN_PATH_MAX,
   .doc = "a price table CSV replacing the built-in one (docs/scenario-format.md, Prices)"},
  {.key = "price_model", .type = V_ENUM, .names = PRICE_MODELS, .st = S_INT, OFF(scenario, price_spot),
   .doc = "which column of the price table a run's cost uses"},
  {.key = "recommend", .type = V_ENUM, .names = RECOMMEND, .st = S_INT, OFF(scenario, recommend_cost),
   .doc = "podsim plan: recommend the point with the fewest chip-hours or the lowest cost"},
  {.key = "tensorboard", .type = V_BOOL, .st = S_INT, OFF(scenario, tensorboard),
   .doc = "write train/events.out.tfevents.* with metrics.csv's columns and goodput per step, for TensorBoard (docs/reports.md)"},
  END};
