/*
** test_compiled_step.c: every shipped example's compiled step (compile/) against the op log its
** model writes, before any pass changes work: the same ops, FLOPs, bytes and matmul shapes, in
** the same order (compile.h invariant 1), so moving the charging of compute onto the compiled
** program changed no run. And with fusion, the same FLOPs in fewer kernels moving fewer bytes.
*/
#include "tests/testutil.h"
#include "tests/compile/oplog.h"

#include <dirent.h>

#include "compile/compile.h"
#include "scenarios/config/scenario.h"

enum { BATCH = 5 };

static void check_example(const char file[256]) {
  static scenario s;
  scn_error err;
  char rel[300];
  snprintf(rel, sizeof rel, "scenarios/examples/%.255s", file);
  if (scenario_load(tu_src(rel), NULL, 0, &s, &err) != 0) fail_msg("%s: %s", file, err.msg);
  if (s.has_workload) return;  /* a collective or matmul benchmark: no model */
  md_model_spec spec = scenario_model_spec(&s, 1);
  md_op_log log = {0};
  log_step(&spec, &s.optimizer, BATCH, &log, NULL);
  for (int fusion = 0; fusion <= 1; fusion++) {
    cg_cache *c = cg_cache_new(&spec, &s.optimizer, &(cg_options){.replicas = 2, .fusion = fusion});
    const cg_program *p = cg_cache_get(c, BATCH);
    size_t ns, na;
    const cg_kernel *step = cg_program_step(p, &ns), *apply = cg_program_apply(p, &na);
    double flops = 0, bytes = 0, kflops = 0, kbytes = 0;
    for (size_t i = 0; i < log.n; i++) {
      flops += log.flops[i];
      bytes += log.bytes[i];
    }
    for (size_t i = 0; i < ns + na; i++) {
      const cg_kernel *k = i < ns ? &step[i] : &apply[i - ns];
      kflops += k->flops;
      kbytes += k->bytes;
      if (fusion) continue;
      if (k->flops != log.flops[i] || k->bytes != log.bytes[i] || k->matmul.batch != log.matmul[i].batch ||
          k->matmul.m != log.matmul[i].m || k->matmul.n != log.matmul[i].n || k->matmul.k != log.matmul[i].k)
        fail_msg("%s: kernel %zu differs from the op log", file, i);
    }
    assert_int_equal(cg_graph_num_traced(cg_program_graph(p)), log.n);
    if (!fusion) {
      assert_int_equal(ns + na, log.n);
    } else {
      assert_true(ns + na <= log.n);
      assert_true(kbytes <= bytes);
      /* the same FLOPs, summed in another grouping: equal to a part in 1e12 */
      assert_true(kflops <= flops * (1 + 1e-12) && kflops >= flops * (1 - 1e-12));
    }
    cg_cache_free(c);
  }
  md_op_log_free(&log);
}

static void test_every_example(void **state) {
  (void)state;
  DIR *d = opendir(tu_src("scenarios/examples"));
  assert_non_null(d);
  char names[64][256];
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL && n < 64;) {
    size_t len = strlen(e->d_name);
    if (len > 5 && !strcmp(e->d_name + len - 5, ".yaml")) snprintf(names[n++], sizeof names[0], "%s", e->d_name);
  }
  closedir(d);
  assert_true(n >= 15);
  qsort(names, (size_t)n, sizeof names[0], (int (*)(const void *, const void *))strcmp);
  for (int i = 0; i < n; i++) check_example(names[i]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_every_example),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
