/*
** test_tf_config.c: TF_CONFIG is checked twice, on purpose: the loader walks it as YAML so its
** errors name file:line:col (scenarios/config/keys_cluster.c, scenario.c's ps_checks), and
** ParameterServerStrategy checks the cluster spec as TF's constructor does for API users
** (strategies/ps/ps_cluster.c). This agreement test proves the two accept and refuse the same
** TF_CONFIGs for a parameter_server run.
*/
#include "tests/testutil.h"

#include "base/base.h"
#include "scenarios/config/scenario.h"
#include "sim/sim.h"
#include "strategies/ps/ps_strategy.h"

/* What the loader says of cluster.tf_config = text (JSON is YAML): 1 accepted, 0 refused. */
static int loader_accepts(const char *text, char *why, size_t len) {
  static scenario s;
  char set[1024];
  snprintf(set, sizeof set, "cluster.tf_config=%s", text);
  const char *sets[1] = { set };
  scn_error err;
  int ok = scenario_load(tu_src("tests/data/ps/tf_config_base.yaml"), sets, 1, &s, &err) == 0;
  base_format(why, len, "%s", ok ? "" : err.msg);
  return ok;
}

/* What ParameterServerStrategy(TFConfigClusterResolver()) says of the same TF_CONFIG. */
static int library_accepts(const char *text, char *why, size_t len) {
  ds_ps_cluster_spec spec;
  ds_status st;
  ds_status_clear(&st);
  int ok = ds_ps_cluster_spec_from_tf_config(text, &spec, &st) == 0;
  if (ok) {
    ds_machine m = { .flops_per_s = 1e11, .mem_bytes_per_s = 2e10, .ram_bytes = 32e9, .nic_bytes_per_s = 1e9 };
    ds_ps_cluster c = { .worker = m, .ps = m, .coordinator = m, .evaluator = m,
                        .fabric = SIM_FABRIC_STAR, .link_bytes_per_s = 1e9, .latency = 5000000 };
    sim_engine *e = sim_engine_new();
    ds_strategy *s = ds_ps_strategy_new(e, &spec, &c, NULL, &st);
    ok = s != NULL;
    ds_strategy_free(s);
    sim_engine_free(e);
  }
  base_format(why, len, "%s", ok ? "" : st.message);
  return ok;
}

/* Valid specs (one with an evaluator), then one case per rule: no ps, no worker, a worker or ps
** task as the coordinator, a task index past its job, a job TF does not know, two chiefs, two
** evaluators, an empty cluster. */
static void loader_and_library_agree(void **state) {
  (void)state;
  static const struct { const char *tf_config; int valid; } CASES[] = {
    {"{\"cluster\": {\"chief\": [\"c:1\"], \"worker\": [\"w:1\", \"w:2\"], \"ps\": [\"p:1\"]}, "
     "\"task\": {\"type\": \"chief\", \"index\": 0}}", 1},
    {"{\"cluster\": {\"chief\": [\"c:1\"], \"worker\": [\"w:1\"], \"ps\": [\"p:1\", \"p:2\"], "
     "\"evaluator\": [\"e:1\"]}, \"task\": {\"type\": \"chief\", \"index\": 0}}", 1},
    {"{\"cluster\": {\"chief\": [\"c:1\"], \"worker\": [\"w:1\"]}, \"task\": {\"type\": \"chief\"}}", 0},
    {"{\"cluster\": {\"chief\": [\"c:1\"], \"ps\": [\"p:1\"]}, \"task\": {\"type\": \"chief\"}}", 0},
    {"{\"cluster\": {\"worker\": [\"w:1\"], \"ps\": [\"p:1\"]}, \"task\": {\"type\": \"worker\", \"index\": 0}}", 0},
    {"{\"cluster\": {\"worker\": [\"w:1\"], \"ps\": [\"p:1\"]}, \"task\": {\"type\": \"ps\", \"index\": 0}}", 0},
    {"{\"cluster\": {\"chief\": [\"c:1\"], \"worker\": [\"w:1\"], \"ps\": [\"p:1\"]}, "
     "\"task\": {\"type\": \"chief\", \"index\": 1}}", 0},
    {"{\"cluster\": {\"master\": [\"m:1\"], \"worker\": [\"w:1\"], \"ps\": [\"p:1\"]}}", 0},
    {"{\"cluster\": {\"chief\": [\"c:1\", \"c:2\"], \"worker\": [\"w:1\"], \"ps\": [\"p:1\"]}}", 0},
    {"{\"cluster\": {\"chief\": [\"c:1\"], \"worker\": [\"w:1\"], \"ps\": [\"p:1\"], "
     "\"evaluator\": [\"e:1\", \"e:2\"]}}", 0},
    {"{\"cluster\": {}}", 0},
  };
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
    char a[768], b[768];
    int loader = loader_accepts(CASES[i].tf_config, a, sizeof a);
    int library = library_accepts(CASES[i].tf_config, b, sizeof b);
    if (loader != CASES[i].valid || library != CASES[i].valid)
      fail_msg("case %zu (%s): loader %s (%s), library %s (%s), expected %s", i, CASES[i].tf_config,
               loader ? "accepts" : "refuses", a, library ? "accepts" : "refuses", b,
               CASES[i].valid ? "valid" : "invalid");
  }
}

/* Issue 17's report: a --set TF_CONFIG of 300 identical plain worker names read "expected a
** string, found nothing (null)" at worker[254]. All 300 load (as 300 workers), identical or
** distinct, quoted or not, in YAML flow syntax through --set. */
static void three_hundred_workers_through_set(void **state) {
  (void)state;
  enum { N = 300 };
  static char set[N * 16 + 256];
  for (int quoted = 0; quoted < 2; quoted++)
    for (int distinct = 0; distinct < 2; distinct++) {
      size_t at = (size_t)snprintf(set, sizeof set, "cluster.tf_config={cluster: {chief: [c:1], ps: [p:1], worker: [");
      for (int i = 0; i < N; i++)
        at += (size_t)snprintf(set + at, sizeof set - at, "%s%sw%d:1%s", i ? ", " : "", quoted ? "\"" : "",
                               distinct ? i : 0, quoted ? "\"" : "");
      snprintf(set + at, sizeof set - at, "]}, task: {type: chief, index: 0}}");
      const char *sets[] = {set};
      static scenario s;
      scn_error err;
      if (scenario_load(tu_src("tests/data/ps/tf_config_base.yaml"), sets, 1, &s, &err) != 0)
        fail_msg("quoted %d distinct %d: %s", quoted, distinct, err.msg);
      assert_int_equal(s.workers, N);
    }
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(loader_and_library_agree),
    cmocka_unit_test(three_hundred_workers_through_set),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
