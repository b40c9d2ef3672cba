/*
** keys_expect.c: the expect section: metric, comparator, value.
*/
#include "scenarios/config/configInt.h"

#include <string.h>

static const char *const COMPARATORS[] = {"lt", "le", "gt", "ge", "eq", "ne", NULL};

/* summary.json fields an expect can test (host-independent ones). */
static const char *const METRICS[] = {"final_loss", "sim_time_s", "steps_completed", "examples_per_s",
                                      "hbm_peak_bytes", "hbm_capacity_bytes", "preemptions", "restarts",
                                      "lost_steps", "retried_closures", "lost_updates", "events", "failures",
                                      "checkpoint_time_s", "downtime_s", "goodput", "duplicated_updates",
                                      "evaluations", "final_eval_loss", "worker_utilization", "cost_usd",
                                      "chip_hours", "steady_examples_per_s", NULL};

/* expect: a list of {metric: NAME, <comparator>: NUMBER}. */
#define EXPECT_CMP(name) {.key = name, .type = V_NUM, .st = S_DOUBLE, OFF(scn_expect, value), .lo = -1e308}
const key_spec CFG_EXPECT_KEYS[] = {
  {.key = "metric", .type = V_ENUM, .names = METRICS, .st = S_INT, OFF(scn_expect, metric), .required = 1},
  EXPECT_CMP("lt"), EXPECT_CMP("le"), EXPECT_CMP("gt"), EXPECT_CMP("ge"), EXPECT_CMP("eq"), EXPECT_CMP("ne"),
  END};
int cfg_expect_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  char sub[256], sub2[256], cl[100];
  (void)k; (void)base;
  cfg_list_names(COMPARATORS, cl, sizeof cl);
  if (cfg_get_seq(c, v, path, "a sequence such as [{metric: final_loss, lt: 0.3}]")) return -1;
  if (v->n > SCN_MAX_EXPECTS)
    return cfg_fail(c, v->items[SCN_MAX_EXPECTS], path, "expected at most %d checks, found %d", SCN_MAX_EXPECTS, v->n);
  c->s->nexpects = v->n;
  for (int i = 0; i < v->n; i++) {
    const yt_node *e = v->items[i];
    scn_expect *se = &c->s->expects[i];
    int ncmp = 0;
    base_format(sub, sizeof sub, "%s[%d]", path, i);
    if (cfg_get_map(c, e, sub, "a mapping such as {metric: final_loss, lt: 0.3}")) return -1;
    for (int j = 0; j < e->n; j++) {
      int known = !strcmp(e->keys[j]->text, "metric");
      for (int m = 0; COMPARATORS[m]; m++)
        if (!strcmp(COMPARATORS[m], e->keys[j]->text)) { known = 1; ncmp++; se->cmp = (scn_cmp)m; }
      if (!known) {
        cfg_join(sub2, sizeof sub2, sub, e->keys[j]->text);
        return cfg_fail(c, e->keys[j], sub2, "unknown comparator \"%s\" (comparators: %s)", e->keys[j]->text, cl);
      }
    }
    if (cfg_walk_map(c, e, sub, CFG_EXPECT_KEYS, se)) return -1;
    if (ncmp != 1)
      return cfg_fail(c, e, sub, "expected exactly one comparator (%s), found %d", cl, ncmp);
  }
  return 0;
}
const char *scenario_metric_name(int metric) {
  return metric >= 0 && metric < (int)(sizeof METRICS / sizeof *METRICS) ? METRICS[metric] : NULL;
}
const char *scenario_cmp_name(scn_cmp cmp) { return COMPARATORS[cmp]; }
