/*
** test_work_memo.c: cg_work_memo (compile/work_memo.c) answers as cg_kernels_work does, to the bit,
** and tells rooflines and ranges apart: a replica on a slower device must not get a faster one's
** work. Kernels: 1e9 FLOPs and 1e6 bytes, then 1e3 FLOPs and 1e9 bytes. On the scalar roofline of
** 1e12 FLOP/s and 1e11 B/s the first is compute-bound (1e9 FLOPs of work), the second memory-bound
** (1e9 B at 1e11 B/s is 0.01 s, 1e10 FLOPs of work at 1e12 FLOP/s): 1.1e10 for both.
*/
#include "tests/testutil.h"

#include <math.h>

#include "compile/compile.h"

static void memo_answers_as_the_function(void **state) {
  (void)state;
  cg_kernel k[2] = { { .flops = 1e9, .bytes = 1e6 }, { .flops = 1e3, .bytes = 1e9 } };
  sim_roofline fast = { .rate = 1e12, .mem_bw = 1e11 }, slow = { .rate = 1e12, .mem_bw = 1e10 };
  cg_work_memo m = { 0 };
  double whole = cg_work_memo_get(&m, &fast, k, 0, 2);
  assert_true(whole == cg_kernels_work(&fast, k, 0, 2));
  assert_true(fabs(whole - 1.1e10) <= 1e-6 * 1.1e10);
  assert_true(cg_work_memo_get(&m, &fast, k, 0, 2) == whole);  /* a hit */
  assert_int_equal(m.used, 1);
  /* Another roofline with equal fields (another replica's device) hits the same slot. */
  sim_roofline twin = fast;
  assert_true(cg_work_memo_get(&m, &twin, k, 0, 2) == whole);
  assert_int_equal(m.used, 1);
  /* A tenth of the bandwidth: the second kernel's work is ten times more, 1e9 + 1e11. */
  double slower = cg_work_memo_get(&m, &slow, k, 0, 2);
  assert_true(fabs(slower - 1.01e11) <= 1e-6 * 1.01e11);
  assert_int_equal(m.used, 2);
  assert_true(cg_work_memo_get(&m, &fast, k, 0, 1) == cg_kernels_work(&fast, k, 0, 1));
  assert_int_equal(m.used, 3);
  /* Past CG_WORK_MEMO_SLOTS answers the oldest goes; every answer is still the function's. */
  for (size_t to = 0; to <= 2; to++)
    for (int i = 0; i < 2 * CG_WORK_MEMO_SLOTS; i++) {
      sim_roofline r = { .rate = 1e12 + i, .mem_bw = 1e11 };
      assert_true(cg_work_memo_get(&m, &r, k, 0, to) == cg_kernels_work(&r, k, 0, to));
    }
  assert_int_equal(m.used, CG_WORK_MEMO_SLOTS);
}

int main(void) {
  const struct CMUnitTest tests[] = { cmocka_unit_test(memo_answers_as_the_function) };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
