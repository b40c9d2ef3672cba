/* test_collective_congruent.c: the proof that two groups run a collective in the same time on
** links of their own (sim/collective_congruent.c): the lines along one axis of a 2x2x4 torus
** fabric (16 hosts, every link 10 GB/s and 1 us) are congruent and run at once in the time one
** takes alone; a slower link, reductions on cpus or a link claimed by two lines break the proof. */
#include "tests/testutil.h"

#include "sim/collective.h"
#include "sim/fabric.h"

enum { HOSTS = 16, LINES = 4, COUNT = 1 << 20 };

static const sim_coll_op OPS[] = {SIM_COLL_ALL_REDUCE, SIM_COLL_ALL_GATHER, SIM_COLL_REDUCE_SCATTER};

/* The fabric's torus as one group, and its lines along z (axis 2, 4 long: ranks r, r + 4, ...,
** one line per (x, y)). */
typedef struct torus {
  sim_engine *e;
  sim_fabric *f;
  sim_collective *all;
  sim_collective *line[LINES];
} torus;

static void torus_new(torus *t) {
  t->e = sim_engine_new();
  t->f = sim_fabric_new(t->e, SIM_FABRIC_TORUS3D, HOSTS, "h", 10e9, NULL, 1000000);
  int dims[3], wraps[3] = {1, 1, 1};
  sim_fabric_dims(t->f, dims);
  assert_true(dims[0] == 2 && dims[1] == 2 && dims[2] == 4);
  t->all = sim_collective_new(t->e, "torus", HOSTS, sim_fabric_route, t->f, NULL);
  sim_collective_set_torus(t->all, 3, dims, wraps);
  assert_int_equal(sim_collective_axis_groups(t->all, 2, t->line, LINES), LINES);
}

static void torus_free(torus *t) {
  for (int i = 0; i < LINES; i++) sim_collective_free(t->line[i]);
  sim_collective_free(t->all);
  sim_fabric_free(t->f);
  sim_engine_free(t->e);
}

static void count_done(sim_engine *e, sim_collective *c, void *arg) {
  (void)e, (void)c;
  ++*(int *)arg;
}

/* Every line congruent to line 0 for each op (each claiming its own links), and then all four
** all-reduce at once in the time line 0 takes alone: the proof's claim, checked by running it. */
static void lines_of_an_axis_are_congruent(void **state) {
  (void)state;
  torus t;
  torus_new(&t);
  sim_claims *claims = sim_claims_new();
  for (size_t k = 0; k < sizeof OPS / sizeof *OPS; k++)
    for (int i = 0; i < LINES; i++)
      assert_int_equal(sim_collective_congruent(t.line[0], t.line[i], OPS[k], SIM_ALGO_TORUS, COUNT, claims, i), 1);
  sim_claims_free(claims);
  int done = 0;
  assert_int_equal(sim_collective_start(t.line[0], SIM_COLL_ALL_REDUCE, SIM_ALGO_TORUS, 0, NULL, COUNT, count_done,
                                        &done), SIM_OK);
  assert_int_equal(sim_run(t.e), 0);
  sim_time alone = sim_collective_last_duration(t.line[0]);
  assert_true(alone > 0);
  for (int i = 0; i < LINES; i++)
    assert_int_equal(sim_collective_start(t.line[i], SIM_COLL_ALL_REDUCE, SIM_ALGO_TORUS, 0, NULL, COUNT, count_done,
                                          &done), SIM_OK);
  assert_int_equal(sim_run(t.e), 0);
  assert_int_equal(done, 1 + LINES);
  for (int i = 0; i < LINES; i++) assert_int_equal(sim_collective_last_duration(t.line[i]), alone);
  torus_free(&t);
}

/* Line 3's first link (host 3 towards host 7, its z+ neighbour) at half speed: line 3 is no
** longer line 0's, though every other link agrees; and running both shows why. */
static void a_slower_link_is_not_congruent(void **state) {
  (void)state;
  torus t;
  torus_new(&t);
  sim_link *hop[4];
  assert_int_equal(sim_fabric_route(t.f, 3, 7, hop, 4), 1);
  sim_link_set_bandwidth(hop[0], 5e9);
  sim_claims *claims = sim_claims_new();
  assert_int_equal(sim_collective_congruent(t.line[0], t.line[2], SIM_COLL_ALL_REDUCE, SIM_ALGO_TORUS, COUNT, claims, 2), 1);
  assert_int_equal(sim_collective_congruent(t.line[0], t.line[3], SIM_COLL_ALL_REDUCE, SIM_ALGO_TORUS, COUNT, claims, 3), 0);
  sim_claims_free(claims);
  int done = 0;
  assert_int_equal(sim_collective_start(t.line[0], SIM_COLL_ALL_REDUCE, SIM_ALGO_TORUS, 0, NULL, COUNT, count_done,
                                        &done), SIM_OK);
  assert_int_equal(sim_collective_start(t.line[3], SIM_COLL_ALL_REDUCE, SIM_ALGO_TORUS, 0, NULL, COUNT, count_done,
                                        &done), SIM_OK);
  assert_int_equal(sim_run(t.e), 0);
  assert_true(sim_collective_last_duration(t.line[3]) > sim_collective_last_duration(t.line[0]));
  torus_free(&t);
}

/* Two owners may not claim one link: line 0 claimed as owner 0 (twice: the same owner may), then
** as owner 1, fails; the whole torus, over lines 0's and 1's links, as owner 5 fails too. A cpu
** the same. */
static void claims_are_exclusive(void **state) {
  (void)state;
  torus t;
  torus_new(&t);
  sim_claims *claims = sim_claims_new();
  assert_int_equal(sim_collective_congruent(t.line[0], t.line[0], SIM_COLL_ALL_GATHER, SIM_ALGO_TORUS, COUNT, claims, 0), 1);
  assert_int_equal(sim_collective_congruent(t.line[0], t.line[0], SIM_COLL_ALL_GATHER, SIM_ALGO_TORUS, COUNT, claims, 0), 1);
  assert_int_equal(sim_collective_congruent(t.line[0], t.line[0], SIM_COLL_ALL_GATHER, SIM_ALGO_TORUS, COUNT, claims, 1), 0);
  assert_int_equal(sim_collective_congruent(t.line[1], t.line[1], SIM_COLL_ALL_GATHER, SIM_ALGO_TORUS, COUNT, claims, 1), 1);
  assert_int_equal(sim_collective_congruent(t.all, t.all, SIM_COLL_ALL_GATHER, SIM_ALGO_TORUS, COUNT, claims, 5), 0);
  sim_cpu *cpu = sim_cpu_new(t.e, "cpu", 1e9);
  assert_int_equal(sim_claims_cpu(claims, cpu, 7), 0);
  assert_int_equal(sim_claims_cpu(claims, cpu, 7), 0);
  assert_int_equal(sim_claims_cpu(claims, cpu, 8), -1);
  assert_true(sim_cpu_rate(cpu) == 1e9);
  sim_claims_free(claims);
  torus_free(&t);
}

/* A group that reduces on its ranks' cpus (they may compute beside it: its time is theirs too) is
** never proven congruent, not even to itself; freeing its reductions makes it so. And NCCL's
** set-up is not compared: never proven. */
static void reductions_on_cpus_and_nccl_are_not_proven(void **state) {
  (void)state;
  torus t;
  torus_new(&t);
  sim_cpu *cpus[HOSTS];
  for (int i = 0; i < HOSTS; i++) cpus[i] = sim_cpu_new(t.e, "cpu", 1e12);
  sim_collective *g = sim_collective_new(t.e, "reducing", HOSTS, sim_fabric_route, t.f, cpus);
  sim_claims *claims = sim_claims_new();
  assert_int_equal(sim_collective_congruent(g, g, SIM_COLL_ALL_REDUCE, SIM_ALGO_RING, COUNT, claims, 0), 0);
  sim_collective_free_reductions(g);
  assert_int_equal(sim_collective_congruent(g, g, SIM_COLL_ALL_REDUCE, SIM_ALGO_RING, COUNT, claims, 0), 1);
  assert_int_equal(sim_collective_congruent(g, g, SIM_COLL_ALL_REDUCE, SIM_ALGO_NCCL, COUNT, claims, 0), 0);
  sim_claims_free(claims);
  sim_collective_free(g);
  torus_free(&t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(lines_of_an_axis_are_congruent),
    cmocka_unit_test(a_slower_link_is_not_congruent),
    cmocka_unit_test(claims_are_exclusive),
    cmocka_unit_test(reductions_on_cpus_and_nccl_are_not_proven),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
