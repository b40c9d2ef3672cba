/* test_collective.c: fabrics and the ring all-reduce (numerics and timing). */
#include "tests/testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/collective.h"
#include "sim/fabric.h"

#define US ((sim_time)1000000)  /* one microsecond in picoseconds */

static void test_star_routes(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  double nic[3] = {1e9, 5e8, 2e9};
  sim_fabric *f = sim_fabric_new(e, SIM_FABRIC_STAR, 3, "h", 1e9, nic, US);
  sim_link *r[4];
  assert_int_equal(sim_fabric_route(f, 0, 2, r, 4), 2);
  assert_string_equal(sim_link_name(r[0]), "h0.up");
  assert_string_equal(sim_link_name(r[1]), "h2.down");
  assert_int_equal(sim_fabric_route(f, 1, 1, r, 4), 0);
  sim_link *all[6];
  assert_int_equal(sim_fabric_links(f, all, 6), 6);
  assert_true(sim_link_bandwidth(all[2]) == 5e8);  /* h1.up capped by its NIC */
  assert_true(sim_link_bandwidth(all[4]) == 1e9);  /* h2: link_bw below the NIC */
  assert_int_equal(sim_link_latency(all[0]), US);
  assert_int_equal(sim_fabric_hosts(f), 3);
  sim_fabric_free(f);
  sim_engine_free(e);
}

static void test_ring_routes(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  sim_fabric *f = sim_fabric_new(e, SIM_FABRIC_RING, 6, "r", 1e9, NULL, US);
  sim_link *r[8];
  /* 1 -> 3: clockwise 2 hops r1.cw, r2.cw. 1 -> 5: counter-clockwise r1.ccw, r0.ccw.
  ** 0 -> 3: 3 hops both ways: clockwise wins. */
  assert_int_equal(sim_fabric_route(f, 1, 3, r, 8), 2);
  assert_string_equal(sim_link_name(r[0]), "r1.cw");
  assert_string_equal(sim_link_name(r[1]), "r2.cw");
  assert_int_equal(sim_fabric_route(f, 1, 5, r, 8), 2);
  assert_string_equal(sim_link_name(r[0]), "r1.ccw");
  assert_string_equal(sim_link_name(r[1]), "r0.ccw");
  assert_int_equal(sim_fabric_route(f, 0, 3, r, 8), 3);
  assert_string_equal(sim_link_name(r[2]), "r2.cw");
  assert_int_equal(sim_fabric_route(f, 0, 3, r, 1), 3); /* reports the length, fills 1 */
  sim_fabric_free(f);
  sim_engine_free(e);
}

typedef struct {
  sim_collective *c;         /* the group */
  int rank;                  /* this caller */
  float *buf;                /* its buffer */
  size_t count;              /* floats */
  int rc;                    /* what sim_allreduce returned */
  sim_time end;              /* when it returned */
} rank_arg;

static void rank_main(sim_actor *self, void *arg) {
  rank_arg *a = arg;
  a->rc = sim_allreduce(self, a->c, a->rank, a->buf, a->count, SIM_ALGO_RING);
  a->end = sim_now(sim_actor_engine(self));
}

/* Values whose float sums depend on the order, so the test sees a real reduction. */
static float value(int rank, size_t i) {
  return (float)sin(0.37 * (double)rank + 0.011 * (double)i) * (float)(1 + rank % 3);
}

/* Runs an all-reduce of `count` floats over p ranks, checks numerics, returns its duration. */
static sim_time run_allreduce(sim_engine *e, int p, size_t count, sim_route_fn route, void *ctx,
                              sim_cpu *const *cpus) {
  sim_collective *c = sim_collective_new(e, "ar", p, route, ctx, cpus);
  rank_arg *args = calloc((size_t)p, sizeof *args);
  double *serial = calloc(count ? count : 1, sizeof *serial);
  for (int r = 0; r < p; r++) {
    args[r] = (rank_arg){c, r, malloc((count ? count : 1) * sizeof(float)), count, -2, 0};
    for (size_t i = 0; i < count; i++) {
      args[r].buf[i] = value(r, i);
      serial[i] += value(r, i);
    }
    sim_actor_spawn(e, "rank", rank_main, &args[r]);
  }
  assert_int_equal(sim_run(e), 0);
  sim_time d = sim_collective_last_duration(c);
  for (int r = 0; r < p; r++) {
    assert_int_equal(args[r].rc, SIM_OK);
    assert_int_equal(args[r].end, d);
    /* Same bits on every rank; within float rounding of the serial double sum. */
    assert_memory_equal(args[r].buf, args[0].buf, count * sizeof(float));
    for (size_t i = 0; i < count; i++)
      assert_true(fabs((double)args[r].buf[i] - serial[i]) <= 1e-5 * (double)p);
  }
  for (int r = 0; r < p; r++) free(args[r].buf);
  free(args);
  free(serial);
  sim_collective_free(c);
  return d;
}

/* Star: each route is up_i + down_j, latency 2L, every flow alone on its links, so each of the
** 2(p-1) steps takes 2L + (S/p)/B. S = 4096 floats = 16384 B, B = 1e9 B/s, L = 1 us:
** p=2: 2*(2us + 8192 ns) = 20.384 us; p=4: 6*(2us + 4096 ns) = 36.576 us;
** p=8: 14*(2us + 2048 ns) = 56.672 us. */
static void test_ring_on_star_timing(void **state) {
  (void)state;
  const int ps[3] = {2, 4, 8};
  const sim_time want[3] = {20384000, 36576000, 56672000};
  for (int i = 0; i < 3; i++) {
    int p = ps[i];
    sim_engine *e = sim_engine_new();
    sim_fabric *f = sim_fabric_new(e, SIM_FABRIC_STAR, p, "h", 1e9, NULL, US);
    sim_time d = run_allreduce(e, p, 4096, sim_fabric_route, f, NULL);
    double S = 4096 * 4.0, L = 1e-6, B = 1e9;
    double formula = 2.0 * (p - 1) * (2 * L + S / (p * B));
    assert_true(fabs(sim_time_to_s(d) - formula) <= 1e-9 * formula);
    assert_int_equal(d, want[i]);
    sim_fabric_free(f);
    sim_engine_free(e);
  }
}

/* Uneven chunks: 1001 floats over 3 ranks are chunks of 334, 334, 333; on a ring fabric each
** step is one hop. Only the numerics and the equal bits are checked, plus a duration bound:
** every step is at most L + 334*4 B / B. */
static void test_ring_uneven(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  sim_fabric *f = sim_fabric_new(e, SIM_FABRIC_RING, 3, "r", 1e9, NULL, US);
  sim_time d = run_allreduce(e, 3, 1001, sim_fabric_route, f, NULL);
  assert_true(d <= 4 * (US + 1336000));
  assert_true(d >= 4 * (US + 1332000));
  sim_fabric_free(f);
  sim_engine_free(e);
}

/* One rank: nothing moves. */
static void test_single_rank(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  sim_fabric *f = sim_fabric_new(e, SIM_FABRIC_RING, 1, "r", 1e9, NULL, US);
  assert_int_equal(run_allreduce(e, 1, 10, sim_fabric_route, f, NULL), 0);
  sim_fabric_free(f);
  sim_engine_free(e);
}

/* Reduction charged on cpus: 1024 floats over 4 ranks on a ring at 1e9 B/s, L = 1 us. Chunk 256
** floats = 1024 B: a transfer takes 1 us + 1.024 us. Each reduce-scatter receive then costs 256
** FLOPs at 256e6 FLOP/s = 1 us. Total 6 * 2.024 us + 3 * 1 us = 15.144 us. */
static void test_reduction_cost(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  sim_fabric *f = sim_fabric_new(e, SIM_FABRIC_RING, 4, "r", 1e9, NULL, US);
  sim_cpu *cpus[4];
  for (int r = 0; r < 4; r++) cpus[r] = sim_cpu_new(e, "cpu", 256e6);
  assert_int_equal(run_allreduce(e, 4, 1024, sim_fabric_route, f, cpus), 15144000);
  sim_fabric_free(f);
  sim_engine_free(e);
}

/* Numerics off, and a killed rank: the survivors fail instead of hanging. */
static void kill_rank(sim_engine *e, void *arg) {
  (void)e;
  sim_actor_kill(arg);
}

static void test_kill_rank(void **state) {
  (void)state;
  sim_engine *e = sim_engine_new();
  sim_fabric *f = sim_fabric_new(e, SIM_FABRIC_STAR, 4, "h", 1e9, NULL, US);
  sim_collective *c = sim_collective_new(e, "ar", 4, sim_fabric_route, f, NULL);
  rank_arg args[4];
  sim_actor *actors[4];
  for (int r = 0; r < 4; r++) {
    args[r] = (rank_arg){c, r, NULL, 1 << 20, -2, 0};
    actors[r] = sim_actor_spawn(e, "rank", rank_main, &args[r]);
  }
  sim_schedule(e, 5 * US, kill_rank, actors[2]);
  assert_int_equal(sim_run(e), 0);
  assert_int_equal(args[0].rc, SIM_FAILED);
  assert_int_equal(args[0].end, 5 * US);
  assert_int_equal(args[2].rc, -2);
  assert_int_equal(sim_pending_events(e), 0);
  /* The group is usable again with four fresh callers. */
  for (int r = 0; r < 4; r++) {
    args[r].rc = -2;
    actors[r] = sim_actor_spawn(e, "rank", rank_main, &args[r]);
  }
  assert_int_equal(sim_run(e), 0);
  for (int r = 0; r < 4; r++) assert_int_equal(args[r].rc, SIM_OK);
  sim_collective_free(c);
  sim_fabric_free(f);
  sim_engine_free(e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_star_routes),        cmocka_unit_test(test_ring_routes),
      cmocka_unit_test(test_ring_on_star_timing), cmocka_unit_test(test_ring_uneven),
      cmocka_unit_test(test_single_rank),        cmocka_unit_test(test_reduction_cost),
      cmocka_unit_test(test_kill_rank),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
