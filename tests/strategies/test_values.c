/*
** test_values.c: DistributedValues and the exception kinds of the C API.
*/
#include "tests/testutil.h"

#include "strategies/core/status.h"
#include "strategies/core/values.h"

/* A PerReplica of two scalars 1 and 2 on two GPUs: experimental_local_results gives both, in
** replica order, each with its device; a copy is deep. */
static void per_replica_components(void **state) {
  (void)state;
  md_tensor *c[2] = { md_tensor_scalar_f32(1), md_tensor_scalar_f32(2) };
  const char *dev[2] = { "/job:localhost/replica:0/task:0/device:GPU:0",
                         "/job:localhost/replica:0/task:0/device:GPU:1" };
  ds_value *v = ds_value_new(DS_VALUE_PER_REPLICA, 2, c, dev);
  assert_true(ds_value_is_distributed(v));
  assert_string_equal(ds_value_kind_name(ds_value_kind_of(v)), "PerReplica");
  assert_int_equal(ds_value_num_components(v), 2);
  assert_true(md_tensor_get(ds_value_component(v, 1), 0) == 2);
  assert_string_equal(ds_value_device(v, 1), dev[1]);
  ds_value *w = ds_value_copy(v);
  md_tensor_f32(ds_value_component(w, 0))[0] = 5;
  assert_true(md_tensor_get(ds_value_component(v, 0), 0) == 1);
  assert_string_equal(ds_value_device(w, 0), dev[0]);
  ds_value_free(w);
  ds_value_free(v);
}

static void regular_value_has_one_component(void **state) {
  (void)state;
  ds_value *v = ds_value_regular(md_tensor_scalar_f32(3));
  assert_false(ds_value_is_distributed(v));
  assert_int_equal(ds_value_num_components(v), 1);
  assert_string_equal(ds_value_device(v, 0), "");
  ds_value_free(v);
}

static void status_names_the_exception(void **state) {
  (void)state;
  ds_status st;
  ds_status_clear(&st);
  assert_true(ds_status_ok(&st));
  assert_int_equal(ds_status_set(&st, DS_VALUE_ERROR, "axis %d out of range", 3), -1);
  assert_false(ds_status_ok(&st));
  assert_string_equal(ds_error_kind_name(st.kind), "ValueError");
  assert_string_equal(st.message, "axis 3 out of range");
  assert_string_equal(ds_error_kind_name(DS_NOT_IMPLEMENTED_ERROR), "NotImplementedError");
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(per_replica_components),
    cmocka_unit_test(regular_value_has_one_component),
    cmocka_unit_test(status_names_the_exception),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
