/*
** expect.c: `expect` checks (expect_ in expect.h). A NaN (a null final_loss) satisfies no
** comparator but ne, as in IEEE arithmetic.
*/
#include "scenarios/report/expect.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Indexed by the loader's metric list (scenario_metric_name). */
double expect_metric(const run_summary *sum, int metric) {
  const char *name = scenario_metric_name(metric);
  double v = NAN;
  if (!strcmp(name, "final_loss")) v = sum->steps_completed > 0 ? sum->final_loss : NAN;
  else if (!strcmp(name, "sim_time_s")) v = sum->sim_time_s;
  else if (!strcmp(name, "steps_completed")) v = (double)sum->steps_completed;
  else if (!strcmp(name, "examples_per_s")) v = sum->examples_per_s;
  else if (!strcmp(name, "hbm_peak_bytes")) v = (double)sum->memory_peak_bytes;
  else if (!strcmp(name, "hbm_capacity_bytes")) v = (double)sum->memory_capacity_bytes;
  else if (!strcmp(name, "preemptions")) v = (double)sum->preemptions;
  else if (!strcmp(name, "restarts")) v = sum->restarts;
  else if (!strcmp(name, "lost_steps")) v = (double)sum->lost_steps;
  else if (!strcmp(name, "events")) v = (double)sum->events;
  else if (!strcmp(name, "failures")) v = (double)sum->failures;
  else if (!strcmp(name, "checkpoint_time_s")) v = sum->checkpoint_time_s;
  else if (!strcmp(name, "downtime_s")) v = sum->downtime_s;
  else if (!strcmp(name, "goodput")) v = sum->goodput;
  else if (!strcmp(name, "retried_closures")) v = (double)sum->retried_closures;
  else if (!strcmp(name, "lost_updates")) v = (double)sum->lost_updates;
  else if (!strcmp(name, "duplicated_updates")) v = (double)sum->duplicated_updates;
  else if (!strcmp(name, "evaluations")) v = (double)sum->evaluations;
  else if (!strcmp(name, "worker_utilization")) v = sum->worker_utilization;
  else if (!strcmp(name, "cost_usd")) v = sum->cost_usd;  /* NaN (null) without a price */
  else if (!strcmp(name, "chip_hours")) v = sum->chip_hours;
  else if (!strcmp(name, "steady_examples_per_s")) v = sum->steady_examples_per_s;
  else v = sum->evaluations > 0 ? sum->final_eval_loss : NAN;
  if (!isfinite(v)) return v;
  char text[32];
  snprintf(text, sizeof text, "%.15g", v);
  return strtod(text, NULL);
}

static int holds(scn_cmp cmp, double got, double want) {
  switch (cmp) {
    case SCN_CMP_LT: return got < want;
    case SCN_CMP_LE: return got <= want;
    case SCN_CMP_GT: return got > want;
    case SCN_CMP_GE: return got >= want;
    case SCN_CMP_EQ: return got == want;
    case SCN_CMP_NE: return got != want;
  }
  return 0;
}

int expect_check(const scenario *s, const run_summary *sum, FILE *out) {
  int failed = 0;
  for (int i = 0; i < s->nexpects; i++) {
    const scn_expect *e = &s->expects[i];
    double got = expect_metric(sum, e->metric);
    if (holds(e->cmp, got, e->value)) continue;
    if (failed++ == 0) fprintf(out, "podsim: expect failed:\n  %-20s %-10s %-20s %s\n", "metric", "comparator", "expected", "got");
    char got_text[32] = "null";  /* a figure that does not exist is summary.json's null, not nan */
    if (!isnan(got)) snprintf(got_text, sizeof got_text, "%.15g", got);
    fprintf(out, "  %-20s %-10s %-20.15g %s\n", scenario_metric_name(e->metric), scenario_cmp_name(e->cmp),
            e->value, got_text);
  }
  return failed;
}
