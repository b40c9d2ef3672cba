/*
** test_sharding.c: TPUStrategy's logical devices, the sharding annotations and the SPMD and
** pure-eager rules of tpu_strategy.py, on the examples of tf.distribute.TPUStrategy's API page.
*/
#include "tests/strategies/tpu_testutil.h"

#include "strategies/tpu/sharding.h"

/* A TPUStrategy's devices: its topology, device assignment and layout, freed together. */
typedef struct layout {
  ds_tpu_topology *t;        /* the TPU system */
  ds_device_assignment *da;  /* build(t, shape, replicas) */
  ds_sharding_layout *l;     /* the strategy's [replica][logical device] table */
} layout;

/* Takes ownership of t. */
static layout layout_open(ds_tpu_topology *t, const int *shape, int replicas, int spmd) {
  layout f = {t, tu_tpu_build(t, shape, replicas), NULL};
  f.l = ds_sharding_layout_new(t, f.da, spmd, "worker");
  return f;
}

static void layout_close(layout *f) {
  ds_sharding_layout_free(f->l);
  ds_device_assignment_free(f->da);
  ds_tpu_topology_free(f->t);
}

/* The API page's "8 logical devices and 1 replica": computation_shape [1, 2, 2, 2]. */
static layout eight_logical_devices(int spmd) {
  static const int shape[4] = {1, 2, 2, 2};
  return layout_open(tu_tpu_two_core_mesh(), shape, 1, spmd);
}

/* An image batch (batch 2, width 4, height 8, channel 3) whose element (b, w, h, c) holds its
** own row-major index ((b * 4 + w) * 8 + h) * 3 + c. */
static md_tensor *image(void) {
  int64_t shape[4] = {2, 4, 8, 3};
  md_tensor *t = md_tensor_new(MD_FLOAT32, 4, shape);
  for (size_t i = 0; i < t->size; i++) md_tensor_f32(t)[i] = (float)i;
  return t;
}

/* The page's split example: 8 logical devices and 1 replica (computation_shape [1, 2, 2, 2]),
** SPMD on, split [1, 2, 4, 1]: width 2 ways, height 4 ways, 8 tiles of [2, 2, 2, 3]. Tile
** assignment arange(8).reshape([1, 2, 4, 1]): logical device 5 is at (0, 1, 1, 0), so its tile
** starts at (0, 2, 2, 0): its first element is ((0*4 + 2)*8 + 2)*3 = 54 and its last, (1, 3, 3,
** 2), is ((1*4 + 3)*8 + 3)*3 + 2 = 179. The 8 tiles cover each of the 192 elements once. */
static void split_eight_logical_devices(void **state) {
  (void)state;
  ds_status st;
  layout f = eight_logical_devices(1);
  ds_sharding_layout *l = f.l;
  assert_int_equal(ds_sharding_num_replicas_in_sync(l), 1);
  assert_int_equal(ds_sharding_num_logical_devices(l), 8);
  assert_true(ds_sharding_spmd(l));
  md_tensor *img = image();
  int dims[4] = {1, 2, 4, 1};
  ds_sharding s;
  assert_int_equal(ds_sharding_split_to_logical_devices(l, img, 4, dims, &s, &st), 0);
  assert_int_equal(s.kind, DS_SHARDING_TILED);
  assert_ptr_equal(s.tensor, img);   /* annotated, not copied */
  int64_t off[4], tshape[4], want_off[4] = {0, 2, 2, 0}, want_shape[4] = {2, 2, 2, 3};
  assert_int_equal(ds_sharding_tile(&s, 5, off, tshape), 1);
  assert_memory_equal(off, want_off, sizeof off);
  assert_memory_equal(tshape, want_shape, sizeof tshape);
  md_tensor *tile = ds_sharding_tile_copy(&s, 5);
  assert_int_equal(tile->size, 24);
  assert_true(md_tensor_f32(tile)[0] == 54.0f);
  assert_true(md_tensor_f32(tile)[23] == 179.0f);
  md_tensor_free(tile);
  int seen[192] = {0};
  for (int d = 0; d < 8; d++) {
    tile = ds_sharding_tile_copy(&s, d);
    for (size_t i = 0; i < tile->size; i++) seen[(int)md_tensor_f32(tile)[i]]++;
    md_tensor_free(tile);
  }
  for (int i = 0; i < 192; i++) assert_int_equal(seen[i], 1);
  assert_int_equal(ds_sharding_tile(&s, 8, off, tshape), 0);
  assert_null(ds_sharding_tile_copy(&s, -1));

  /* SPMD with 8 logical devices: every variable has a copy on each of them. */
  int rep[16], core[16];
  assert_int_equal(ds_sharding_variable_copies(l, 0, rep, core, 16, NULL), 8);
  for (int k = 0; k < 8; k++) assert_int_equal(rep[k] * 10 + core[k], k);
  /* ... and assigning a tensor to one logical device is refused. */
  tu_tpu_value_error(ds_sharding_assign_to_logical_device(l, img, 0, &s, &st) == -1, &st,
                     "Cannot assign a tensor to a logical device in SPMD mode. To disable SPMD, Please "
                      "construct the TPUStrategy with `experimental_spmd_xla_partitioning=False`");
  md_tensor_free(img);
  layout_close(&f);
}

/* split's three ValueErrors, in TF's order, with 8 logical devices: a dims list of the wrong
** length; width 4 split 8 ways; a product of 4. */
static void split_errors(void **state) {
  (void)state;
  ds_status st;
  layout f = eight_logical_devices(0);
  ds_sharding_layout *l = f.l;
  md_tensor *img = image();
  ds_sharding s;
  int three[3] = {2, 4, 1}, eight[4] = {1, 8, 1, 1}, four[4] = {1, 2, 2, 1}, zero[4] = {1, 0, 8, 1};
  tu_tpu_value_error(ds_sharding_split_to_logical_devices(l, img, 3, three, &s, &st) == -1, &st,
                     "Length of `partition_dimensions` must equal to the rank of `tensor.shape` (4). "
                      "Received len(partition_dimensions)=3.");
  tu_tpu_value_error(ds_sharding_split_to_logical_devices(l, img, 4, eight, &s, &st) == -1, &st,
                     "Tensor shape at `partition_dimensions[1]` must be divisible by corresponding "
                      "value specified by `partition_dimensions` (8). Received: 4.");
  tu_tpu_value_error(ds_sharding_split_to_logical_devices(l, img, 4, four, &s, &st) == -1, &st,
                     "The product of `partition_dimensions` should be the same as the number of logical "
                      "devices (=8). Received `partition_dimensions`=[1, 2, 2, 1],and their product is 4.");
  tu_tpu_value_error(ds_sharding_split_to_logical_devices(l, img, 4, zero, &s, &st) == -1, &st, NULL);
  md_tensor_free(img);
  layout_close(&f);
}

/* The page's "2 logical devices and 4 replicas" on a v3-8 (computation_shape [1, 1, 1, 2]):
** the replicas sit on chips (0,0), (1,0), (1,1), (0,1) (the ring of test_device_assignment), so
** replica 2's logical device 1 is TPU:7. assign_to_logical_device(output, 0) puts the whole
** tensor on logical device 0 and nothing on 1; ids 2 and -1 are ValueErrors. Without SPMD a
** variable has one copy per replica, on logical device 0 (or the one experimental_logical_device
** selects); with SPMD one on each of the 2 logical devices of each replica. */
static void assign_two_logical_devices(void **state) {
  (void)state;
  ds_status st;
  int shape[4] = {1, 1, 1, 2};
  layout f = layout_open(tu_tpu_init("v3-8"), shape, 4, 0);
  ds_sharding_layout *l = f.l;
  assert_int_equal(ds_sharding_num_replicas_in_sync(l), 4);
  assert_int_equal(ds_sharding_num_logical_devices(l), 2);
  assert_string_equal(ds_sharding_device(l, 2, 1), "/job:worker/replica:0/task:0/device:TPU:7");
  assert_string_equal(ds_sharding_device(l, 3, 0), "/job:worker/replica:0/task:0/device:TPU:4");
  assert_null(ds_sharding_device(l, 4, 0));
  assert_null(ds_sharding_device(l, 0, 2));
  assert_string_equal(ds_sharding_host_device(l), "/job:worker/replica:0/task:0/device:CPU:0");
  assert_int_equal(ds_sharding_num_hosts(l), 1);
  assert_int_equal(ds_sharding_num_replicas_per_host(l), 4);   /* min(4, 8 // 2) */

  float v[3] = {1, 2, 3};
  md_tensor *x = md_tensor_vector_f32(3, v);
  ds_sharding s;
  assert_int_equal(ds_sharding_assign_to_logical_device(l, x, 0, &s, &st), 0);
  int64_t off[1], len[1];
  assert_int_equal(ds_sharding_tile(&s, 0, off, len), 1);
  assert_int_equal(off[0] * 10 + len[0], 3);
  assert_int_equal(ds_sharding_tile(&s, 1, off, len), 0);
  tu_tpu_value_error(ds_sharding_assign_to_logical_device(l, x, 2, &s, &st) == -1, &st,
                     "`logical_core_id` to assign must be lower then total number of logical devices "
                      "per replica. Received logical device id 2 but there are only total of 2 logical devices in "
                      "replica.");
  tu_tpu_value_error(ds_sharding_assign_to_logical_device(l, x, -1, &s, &st) == -1, &st, NULL);

  /* replicate: no checks, every logical device holds the whole tensor. */
  ds_sharding_replicate_to_logical_devices(x, &s);
  md_tensor *copy = ds_sharding_tile_copy(&s, 1);
  assert_true(md_tensor_equal(copy, x));
  md_tensor_free(copy);

  int rep[8], core[8];
  assert_int_equal(ds_sharding_variable_copies(l, 0, rep, core, 8, NULL), 4);
  for (int k = 0; k < 4; k++) assert_int_equal(rep[k] * 10 + core[k], k * 10);
  assert_int_equal(ds_sharding_variable_copies(l, 1, rep, core, 8, NULL), 4);
  assert_int_equal(core[3], 1);
  tu_tpu_value_error(ds_sharding_variable_copies(l, 2, rep, core, 8, &st) == -1, &st,
                     "`logical_device_id` not in range (was 2, but there are only 2 logical devices per "
                      "replica).");
  assert_int_equal(ds_sharding_check_logical_device(l, 1, NULL), 0);
  layout_close(&f);

  f = layout_open(tu_tpu_init("v3-8"), shape, 4, 1);
  l = f.l;
  assert_int_equal(ds_sharding_variable_copies(l, 0, rep, core, 8, NULL), 8);
  for (int k = 0; k < 8; k++) assert_int_equal(rep[k] * 10 + core[k], k / 2 * 10 + k % 2);
  /* Replication does not need SPMD off. */
  ds_sharding_replicate_to_logical_devices(x, &s);
  assert_int_equal(s.kind, DS_SHARDING_REPLICATED);
  md_tensor_free(x);
  layout_close(&f);
}

/* TF-GNN's runner.TPUStrategy(tpu=""): connect, initialize, no device assignment, no SPMD. On a
** v4-32 every one of the 16 devices is a replica of one logical device, in listing order
** (replica 5 is task 1's TPU:1); 4 hosts of 4 replicas; a variable has 16 copies. The only
** split is all ones (prod must be 1 logical device). */
static void runner_no_device_assignment(void **state) {
  (void)state;
  ds_status st;
  ds_tpu_resolver *r = ds_tpu_resolver_connect("", "v4-32", NULL, NULL);
  ds_tpu_topology *t = ds_tpu_initialize_system(r);
  ds_sharding_layout *l = ds_sharding_layout_new(t, NULL, 0, ds_tpu_resolver_job_name(r));
  assert_int_equal(ds_sharding_num_replicas_in_sync(l), 16);
  assert_int_equal(ds_sharding_num_logical_devices(l), 1);
  assert_string_equal(ds_sharding_device(l, 5, 0), "/job:worker/replica:0/task:1/device:TPU:1");
  assert_int_equal(ds_sharding_num_hosts(l), 4);
  assert_int_equal(ds_sharding_num_replicas_per_host(l), 4);
  int rep[16], core[16];
  assert_int_equal(ds_sharding_variable_copies(l, 0, rep, core, 16, NULL), 16);
  float v[4] = {1, 2, 3, 4};
  md_tensor *x = md_tensor_vector_f32(4, v);
  ds_sharding s;
  int one[1] = {1}, two[1] = {2};
  assert_int_equal(ds_sharding_split_to_logical_devices(l, x, 1, one, &s, NULL), 0);
  tu_tpu_value_error(ds_sharding_split_to_logical_devices(l, x, 1, two, &s, &st) == -1, &st, NULL);
  md_tensor_free(x);
  ds_sharding_layout_free(l);
  ds_tpu_topology_free(t);
  ds_tpu_resolver_free(r);
}

/* A device assignment spanning hosts: v3-32's 16-replica ring of [1, 1, 1, 2] touches all 4
** hosts with logical device 0; each host fits min(16, 8 // 2) = 4 replicas. */
static void hosts_of_a_device_assignment(void **state) {
  (void)state;
  int shape[4] = {1, 1, 1, 2};
  layout f = layout_open(tu_tpu_init("v3-32"), shape, 16, 0);
  ds_sharding_layout *l = f.l;
  assert_int_equal(ds_sharding_num_hosts(l), 4);
  assert_int_equal(ds_sharding_num_replicas_per_host(l), 4);
  assert_string_equal(ds_sharding_device(l, 4, 1), "/job:worker/replica:0/task:1/device:TPU:7");
  layout_close(&f);
}

/* An explicit core_assignment may point at a missing device: TF names it task -1 and counts no
** host for it. */
static void layout_on_a_missing_device(void **state) {
  (void)state;
  int mesh[4] = {2, 1, 1, 1}, coords[1][4] = {{0, 0, 0, 0}}, gone[1][4] = {{1, 0, 0, 0}};
  ds_tpu_topology *t = ds_tpu_topology_new(4, mesh, 1, 1, 4, &coords[0][0], NULL);
  ds_device_assignment *da = ds_device_assignment_new(t, 1, 1, 4, &gone[0][0], NULL);
  ds_sharding_layout *l = ds_sharding_layout_new(t, da, 0, "worker");
  assert_string_equal(ds_sharding_device(l, 0, 0), "/job:worker/replica:0/task:-1/device:TPU:-1");
  assert_int_equal(ds_sharding_num_hosts(l), 0);
  ds_sharding_layout_free(l);
  ds_device_assignment_free(da);
  ds_tpu_topology_free(t);
}

/* run(fn) with fn not a tf.function while executing eagerly: NotImplementedError; a compiled fn,
** or any fn inside a tf.function, is fine. */
static void pure_eager_run(void **state) {
  (void)state;
  ds_status st;
  assert_int_equal(ds_sharding_validate_run(0, 1, &st), -1);
  assert_int_equal(st.kind, DS_NOT_IMPLEMENTED_ERROR);
  assert_non_null(strstr(st.message, "does not support pure eager execution"));
  assert_int_equal(ds_sharding_validate_run(1, 1, NULL), 0);
  assert_int_equal(ds_sharding_validate_run(0, 0, NULL), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(split_eight_logical_devices),
      cmocka_unit_test(split_errors),
      cmocka_unit_test(assign_two_logical_devices),
      cmocka_unit_test(runner_no_device_assignment),
      cmocka_unit_test(hosts_of_a_device_assignment),
      cmocka_unit_test(layout_on_a_missing_device),
      cmocka_unit_test(pure_eager_run),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
