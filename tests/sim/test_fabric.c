/* test_fabric.c: the CPU tori and the fat tree of sim/fabric.h (star and ring: test_collective.c). */
#include "tests/testutil.h"

#include "sim/fabric.h"

#define US ((sim_time)1000000)  /* one microsecond in picoseconds */

static void assert_dims(const int got[3], int x, int y, int z) {
  assert_int_equal(got[0], x);
  assert_int_equal(got[1], y);
  assert_int_equal(got[2], z);
}

/* Most nearly square / cubic grids: 12 = 3x4 (3 is the largest divisor <= sqrt 12) and 2x2x3;
** 64 = 8x8 and 4x4x4; a prime is a line. */
static void test_torus_dims(void **state) {
  (void)state;
  int d[3];
  sim_fabric_torus_dims(12, 2, d); assert_dims(d, 3, 4, 1);
  sim_fabric_torus_dims(12, 3, d); assert_dims(d, 2, 2, 3);
  sim_fabric_torus_dims(64, 2, d); assert_dims(d, 8, 8, 1);
  sim_fabric_torus_dims(64, 3, d); assert_dims(d, 4, 4, 4);
  sim_fabric_torus_dims(7, 2, d);  assert_dims(d, 1, 7, 1);
  sim_fabric_torus_dims(33, 3, d); assert_dims(d, 1, 3, 11);
  sim_fabric_torus_dims(1, 3, d);  assert_dims(d, 1, 1, 1);
}

/* torus2d of 12 hosts on 3x4, host = x + 3y. 0 -> 11 = (2,3): x the short way back (1 hop -x),
** then from host 2 y the short way back (1 hop -y). 0 -> 6 = (0,2): y 2 hops either way, the
** positive way wins. Every host has 4 links: 48. */
static void test_torus2d_routes(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  sim_fabric *f = sim_fabric_new(e, SIM_FABRIC_TORUS2D, 12, "t", 1e9, NULL, US);
  int d[3];
  sim_fabric_dims(f, d);
  assert_dims(d, 3, 4, 1);
  sim_link *r[8];
  assert_int_equal(sim_fabric_route(f, 0, 11, r, 8), 2);
  assert_string_equal(sim_link_name(r[0]), "t0.x-");
  assert_string_equal(sim_link_name(r[1]), "t2.y-");
  assert_int_equal(sim_fabric_route(f, 0, 6, r, 8), 2);
  assert_string_equal(sim_link_name(r[0]), "t0.y+");
  assert_string_equal(sim_link_name(r[1]), "t3.y+");
  assert_int_equal(sim_fabric_route(f, 4, 4, r, 8), 0);
  assert_int_equal(sim_fabric_links(f, NULL, 0), 48);
  sim_fabric_free(f);
  sim_engine_free(e);
}

/* torus3d of 12 hosts on 2x2x3, host = x + 2y + 4z; 0 -> 11 = (1,1,2): x+ (host 0), y+ (host 1),
** then z: 2 forward or 1 back: back, from host 3. An axis of length 1 gets no links: 7 hosts as
** 1x1x7 have 2 each. NIC caps host links. */
static void test_torus3d_routes(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  sim_fabric *f = sim_fabric_new(e, SIM_FABRIC_TORUS3D, 12, "t", 1e9, NULL, US);
  sim_link *r[8];
  assert_int_equal(sim_fabric_route(f, 0, 11, r, 8), 3);
  assert_string_equal(sim_link_name(r[0]), "t0.x+");
  assert_string_equal(sim_link_name(r[1]), "t1.y+");
  assert_string_equal(sim_link_name(r[2]), "t3.z-");
  assert_int_equal(sim_fabric_links(f, NULL, 0), 72);
  sim_fabric_free(f);
  double nic[7] = {5e8, 1e9, 1e9, 1e9, 1e9, 1e9, 1e9};
  f = sim_fabric_new(e, SIM_FABRIC_TORUS3D, 7, "u", 1e9, nic, US);
  sim_link *all[14];
  assert_int_equal(sim_fabric_links(f, all, 14), 14);
  assert_string_equal(sim_link_name(all[0]), "u0.z+");
  assert_true(sim_link_bandwidth(all[0]) == 5e8);
  assert_true(sim_link_bandwidth(all[2]) == 1e9);
  assert_int_equal(sim_fabric_route(f, 0, 3, r, 8), 3);   /* 3 forward beats 4 back */
  assert_string_equal(sim_link_name(r[2]), "u2.z+");
  sim_fabric_free(f);
  sim_engine_free(e);
}

typedef struct {
  sim_fabric *f;             /* the network */
  int from, to;              /* hosts */
  double bytes;              /* to send */
  sim_time end;              /* when the transfer finished */
} flow_arg;

static void flow_main(sim_actor *self, void *arg) {
  flow_arg *a = arg;
  sim_link *r[8];
  size_t hops = sim_fabric_route(a->f, a->from, a->to, r, 8);
  assert_int_equal(sim_comm(self, r, hops, a->bytes), SIM_OK);
  a->end = sim_now(sim_actor_engine(self));
}

/* Runs flows i -> to[i] for i < n at once; returns each one's end in end[]. */
static void run_flows(sim_fabric *f, sim_engine *e, int n, const int *to, double bytes, sim_time *end) {
  flow_arg args[8];
  for (int i = 0; i < n; i++) {
    args[i] = (flow_arg){f, i, to[i], bytes, 0};
    sim_actor_spawn(e, "flow", flow_main, &args[i]);
  }
  assert_int_equal(sim_run(e), 0);
  for (int i = 0; i < n; i++) end[i] = args[i].end;
}

/* Fat tree, 8 hosts = 2 leaves of 4, 2 spines, B = 1 GB/s, L = 1 us. Links: 16 host + 2 leaves
** x 2 spines x 2 = 24. Within leaf 0 (0->1, 1->2, 2->3, 3->0) each flow has its own up and
** down link: 2L + 1 MB / B = 1.002 ms. Across leaves (i -> i+4) the 4 flows share leaf 0's two
** uplinks (destinations 4, 6 via spine 0, 5, 7 via spine 1): B/2 each, 4L + 1 MB / (B/2) =
** 2.004 ms: the bisection (2 uplinks for 4 hosts) halves what the hosts could send. */
static void test_fat_tree_bisection(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  sim_fabric *f = sim_fabric_new(e, SIM_FABRIC_FAT_TREE, 8, "f", 1e9, NULL, US);
  assert_int_equal(sim_fabric_links(f, NULL, 0), 24);
  sim_link *r[8];
  assert_int_equal(sim_fabric_route(f, 0, 5, r, 8), 4);
  assert_string_equal(sim_link_name(r[0]), "f0.up");
  assert_string_equal(sim_link_name(r[1]), "fleaf0.s1.up");
  assert_string_equal(sim_link_name(r[2]), "fleaf1.s1.down");
  assert_string_equal(sim_link_name(r[3]), "f5.down");
  assert_int_equal(sim_fabric_route(f, 2, 3, r, 8), 2);
  sim_time end[4];
  run_flows(f, e, 4, (const int[]){1, 2, 3, 0}, 1e6, end);
  for (int i = 0; i < 4; i++) assert_int_equal(end[i], 1002 * US);
  sim_time start = sim_now(e);
  run_flows(f, e, 4, (const int[]){4, 5, 6, 7}, 1e6, end);
  for (int i = 0; i < 4; i++) assert_int_equal(end[i] - start, 2004 * US);
  sim_fabric_free(f);
  /* 5 hosts: a second leaf with one host; 4 hosts: one leaf, no spine links. */
  f = sim_fabric_new(e, SIM_FABRIC_FAT_TREE, 5, "g", 1e9, NULL, US);
  assert_int_equal(sim_fabric_links(f, NULL, 0), 10 + 8);
  assert_int_equal(sim_fabric_route(f, 4, 0, r, 8), 4);
  assert_string_equal(sim_link_name(r[1]), "gleaf1.s0.up");
  sim_fabric_free(f);
  f = sim_fabric_new(e, SIM_FABRIC_FAT_TREE, 4, "h", 1e9, NULL, US);
  assert_int_equal(sim_fabric_links(f, NULL, 0), 8);
  sim_fabric_free(f);
  sim_engine_free(e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_torus_dims),     cmocka_unit_test(test_torus2d_routes),
      cmocka_unit_test(test_torus3d_routes), cmocka_unit_test(test_fat_tree_bisection),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
