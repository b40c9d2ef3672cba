/* test_multislice.c: sub-groups and torus-axis groups, ppermute, and TPU slices joined by DCN
** with their hierarchical all-reduce (sim/collective_group.c, sim/multislice.c). */
#include "tests/testutil.h"

#include <math.h>

#include "sim/collective.h"
#include "sim/multislice.h"
#include "sim/tpu.h"

#define US ((sim_time)1000000) /* one microsecond in picoseconds */

static void count_done(sim_engine *e, sim_collective *c, void *arg) {
  (void)e; (void)c;
  ++*(int *)arg;
}

static const sim_tpu_generation *gen(const char *type, int dims[3]) {
  const sim_tpu_generation *g;
  int chips;
  assert_int_equal(sim_tpu_slice_parse(type, &g, &chips, dims, NULL, 0), 0);
  return g;
}

/* One slice of `type` (its default topology unless topo) as a multislice of one, and a group
** over its devices in grid order with the slice's torus. */
typedef struct one_slice {
  sim_engine *e;
  sim_multislice *m;
  sim_collective *grid;
} one_slice;

static one_slice one_slice_new(const char *type, const char *topo) {
  one_slice o;
  int dims[3], chips;
  const sim_tpu_generation *g;
  assert_int_equal(sim_tpu_slice_parse(type, &g, &chips, dims, NULL, 0), 0);
  if (topo) assert_int_equal(sim_tpu_topology_parse(g, chips, topo, dims, NULL, 0), 0);
  o.e = sim_engine_new();
  o.m = sim_multislice_new(o.e, g, dims, 1, NULL);
  o.grid = sim_collective_new(o.e, "grid", sim_multislice_ranks(o.m), sim_multislice_route, o.m, NULL);
  sim_tpu_set_torus(o.grid, sim_multislice_slice(o.m, 0));
  return o;
}

static void one_slice_free(one_slice *o) {
  sim_collective_free(o->grid);
  sim_multislice_free(o->m);
  sim_engine_free(o->e);
}

/* Bytes the slice's ICI links towards +/- of axis letter ('x', 'y') carried. */
static double ici_bytes(const sim_tpu_slice *s, char axis) {
  sim_link *links[4096];
  size_t n = sim_tpu_slice_links(s, links, 4096);
  double bytes = 0;
  for (size_t i = 0; i < n; i++) {
    const char *name = sim_link_name(links[i]);
    if (strncmp(name, "ici.", 4) == 0 && strchr(name + 4, axis) != NULL) bytes += sim_link_bytes(links[i]);
  }
  return bytes;
}

/* All-reduces `count` floats on every group along `axis` of o's grid at once, member i of group g
** holding g * m + i + 1 everywhere; checks each group's sum (exact: small integers) and returns
** the longest group's time. */
static sim_time axis_all_reduce(one_slice *o, int axis, size_t count) {
  sim_collective *groups[64];
  int n = sim_collective_axis_groups(o->grid, axis, groups, 64);
  int p = sim_multislice_ranks(o->m), m = p / n, done = 0;
  float *bufs = malloc((size_t)p * count * sizeof *bufs);
  float *of[64][16];
  assert_true(m <= 16 && n <= 64);
  sim_time longest = 0;
  for (int g = 0; g < n; g++)
    for (int i = 0; i < m; i++) {
      of[g][i] = bufs + ((size_t)g * (size_t)m + (size_t)i) * count;
      for (size_t k = 0; k < count; k++) of[g][i][k] = (float)(g * m + i + 1);
    }
  for (int g = 0; g < n; g++)
    assert_int_equal(sim_collective_start(groups[g], SIM_COLL_ALL_REDUCE, SIM_ALGO_TORUS, 0, of[g], count,
                                          count_done, &done), SIM_OK);
  assert_int_equal(sim_run(o->e), 0);
  assert_int_equal(done, n);
  for (int g = 0; g < n; g++) {
    float want = (float)(m * (g * m + 1) + m * (m - 1) / 2);
    for (int i = 0; i < m; i++)
      for (size_t k = 0; k < count; k++) assert_true(of[g][i][k] == want);
    if (sim_collective_last_duration(groups[g]) > longest) longest = sim_collective_last_duration(groups[g]);
    sim_collective_free(groups[g]);
  }
  free(bufs);
  return longest;
}

/* A v5litepod-16 (4x4, no wraparound): the all-reduces along x move bytes over x links only,
** those along y over y links only; 4 groups of 4 either way. */
static void test_axis_groups_use_their_axis_only(void **state) {
  (void)state;
  for (int axis = 0; axis < 2; axis++) {
    one_slice o = one_slice_new("v5litepod-16", NULL);
    sim_collective *g[8];
    assert_int_equal(sim_collective_axis_groups(o.grid, axis, g, 0), 4);  /* counts without building */
    assert_true(axis_all_reduce(&o, axis, 1000) > 0);
    const sim_tpu_slice *s = sim_multislice_slice(o.m, 0);
    assert_true(ici_bytes(s, axis == 0 ? 'x' : 'y') > 0);
    assert_true(ici_bytes(s, axis == 0 ? 'y' : 'x') == 0);
    one_slice_free(&o);
  }
}

/* Axis relabelling changes nothing: the 4-long axis of a 4x8 (x) and of an 8x4 (y) take the same
** time to the picosecond; the 8-long ones too. */
static void test_axis_relabelling_changes_nothing(void **state) {
  (void)state;
  one_slice a = one_slice_new("v5litepod-32", "4x8"), b = one_slice_new("v5litepod-32", "8x4");
  assert_int_equal(axis_all_reduce(&a, 0, 4096), axis_all_reduce(&b, 1, 4096));
  one_slice_free(&a);
  one_slice_free(&b);
  a = one_slice_new("v5litepod-32", "4x8"), b = one_slice_new("v5litepod-32", "8x4");
  assert_int_equal(axis_all_reduce(&a, 1, 4096), axis_all_reduce(&b, 0, 4096));
  one_slice_free(&a);
  one_slice_free(&b);
}

/* Time rises with size, on an axis group and on the whole slice. */
static void test_time_rises_with_size(void **state) {
  (void)state;
  sim_time last = 0;
  for (size_t count = 1; count <= 1u << 20; count *= 16) {
    one_slice o = one_slice_new("v5litepod-16", NULL);
    sim_time t = axis_all_reduce(&o, 0, count);
    assert_true(t > last);
    last = t;
    one_slice_free(&o);
  }
}

/* More links never slower: the x axis of a v5litepod-256 (16x16) wraps around, so its first
** group runs a bidirectional ring; the same 16 ranks given a shape without the wraparound link
** run a line, on one link fewer, and take at least as long. */
static void test_more_links_never_slower(void **state) {
  (void)state;
  one_slice o = one_slice_new("v5litepod-256", NULL);
  sim_collective *g[16], *line;
  assert_int_equal(sim_collective_axis_groups(o.grid, 0, g, 16), 16);
  int dims = 16, nowrap = 0;
  int members[16];
  for (int i = 0; i < 16; i++) members[i] = i;
  line = sim_collective_new_subgroup(o.grid, "line", 16, members);
  sim_collective_set_torus(line, 1, &dims, &nowrap);
  int done = 0;
  assert_int_equal(sim_collective_start(g[0], SIM_COLL_ALL_REDUCE, SIM_ALGO_TORUS, 0, NULL, 1 << 20, count_done, &done), SIM_OK);
  assert_int_equal(sim_run(o.e), 0);
  assert_int_equal(sim_collective_start(line, SIM_COLL_ALL_REDUCE, SIM_ALGO_TORUS, 0, NULL, 1 << 20, count_done, &done), SIM_OK);
  assert_int_equal(sim_run(o.e), 0);
  assert_int_equal(done, 2);
  assert_true(sim_collective_last_duration(g[0]) <= sim_collective_last_duration(line));
  for (int i = 0; i < 16; i++) sim_collective_free(g[i]);
  sim_collective_free(line);
  one_slice_free(&o);
}

/* ppermute by +1 along x of a v5litepod-16: every transfer is one ICI hop, all at once, so the
** a transfer takes its hops' latency plus the bytes at the rate a link achieves, 0.746 of its
** 50 GB/s (sim/tpu.c's ICI fit): 4 MB / 37.3e9 = 107.238606 us (to the picosecond). With no
** wraparound, the shift from the last member to the first crosses 3 hops the other way (sharing no
** link with the one-hop transfers; a hop costs nothing beyond its bytes), after the collective's
** fixed 5.36 us (sim/tpu.c): 5.36 + 107.238606 = 112.598606 us for the group. Member i ends with
** member i-1's buffer; x links carry 4 groups x (3 one-hop + one 3-hop) x 4 MB, y links none. */
static void test_ppermute_along_an_axis(void **state) {
  (void)state;
  one_slice o = one_slice_new("v5litepod-16", NULL);
  sim_collective *g[4];
  assert_int_equal(sim_collective_axis_groups(o.grid, 0, g, 4), 4);
  enum { N = 1000000 };
  float *bufs[4][4];
  int done = 0;
  for (int k = 0; k < 4; k++) {
    for (int i = 0; i < 4; i++) {
      bufs[k][i] = malloc(N * sizeof(float));
      for (size_t j = 0; j < N; j++) bufs[k][i][j] = (float)(10 * k + i);
    }
    assert_int_equal(sim_collective_start(g[k], SIM_COLL_PPERMUTE, SIM_ALGO_TORUS, 1, bufs[k], N, count_done, &done), SIM_OK);
  }
  assert_int_equal(sim_run(o.e), 0);
  assert_int_equal(done, 4);
  for (int k = 0; k < 4; k++) {
    for (int i = 0; i < 4; i++) {
      assert_true(bufs[k][i][0] == (float)(10 * k + (i + 3) % 4) && bufs[k][i][N - 1] == bufs[k][i][0]);
      free(bufs[k][i]);
    }
    assert_int_equal(sim_collective_last_duration(g[k]), INT64_C(112598606));
    sim_collective_free(g[k]);
  }
  const sim_tpu_slice *s = sim_multislice_slice(o.m, 0);
  assert_true(ici_bytes(s, 'y') == 0);
  assert_true(ici_bytes(s, 'x') == 4.0 * (3 * 4e6 + 3 * 4e6));  /* 3 one-hop + the 3-hop return */
  one_slice_free(&o);
}

/* ---- multislice ------------------------------------------------------------------------------ */

static void ms_done(sim_engine *e, sim_multislice *m, void *arg) {
  (void)e; (void)m;
  ++*(int *)arg;
}

/* Two or four v5litepod-8 slices (2x4, one host of 8 chips each), rank r holding r + 1 in every
** float: every device ends with the exact sum, the same bits everywhere. */
static void test_multislice_all_reduce_numerics(void **state) {
  (void)state;
  int dims[3];
  const sim_tpu_generation *g = gen("v5litepod-8", dims);
  static const size_t counts[] = {0, 3, 8, 37, 1000};
  for (int slices = 1; slices <= 4; slices *= 2)
    for (size_t c = 0; c < sizeof counts / sizeof *counts; c++) {
      size_t count = counts[c];
      sim_engine *e = sim_engine_new();
      sim_multislice *m = sim_multislice_new(e, g, dims, slices, NULL);
      int p = sim_multislice_ranks(m), done = 0;
      assert_int_equal(p, 8 * slices);
      float **bufs = calloc((size_t)p, sizeof *bufs);
      for (int r = 0; r < p; r++) {
        bufs[r] = malloc((count + 1) * sizeof(float));
        for (size_t i = 0; i < count; i++) bufs[r][i] = (float)(r + 1 + (int)i);
      }
      assert_int_equal(sim_multislice_all_reduce_start(m, bufs, count, ms_done, &done), SIM_OK);
      assert_int_equal(sim_multislice_all_reduce_start(m, bufs, count, ms_done, &done), SIM_COLL_EBUSY);
      assert_int_equal(sim_run(e), 0);
      assert_int_equal(done, 1);
      for (int r = 0; r < p; r++)
        for (size_t i = 0; i < count; i++) assert_true(bufs[r][i] == (float)(p * (p + 1) / 2 + p * (int)i));
      for (int r = 0; r < p; r++) free(bufs[r]);
      free(bufs);
      sim_multislice_free(m);
      sim_engine_free(e);
    }
}

/* The DCN phase of two v5litepod-8 slices in closed form: 8 chunk groups of 2 ranks, each a ring
** all-reduce of 2 rounds moving half its chunk; the 8 chips of a host share its 25 GB/s DCN link
** each way (3.125 GB/s a chip; PCIe's 15 GB/s is not the bottleneck). count = 8Mi floats: a chunk
** is 1Mi floats, a round's half 2 MiB = 2,097,152 B at 3.125e9 B/s = 671.08864 us, after the
** route's latency pcie 1 + dcn 10 + dcn 10 + pcie 1 = 22 us: 2 x 693.08864 = 1386.17728 us, and
** the reduce-scatter round's addition of 524,288 floats on the chip's 197e12 FLOP/s, 0.00266 us:
** 1386.17994 us. Four slices: 6 rounds of a quarter chunk, 1 MiB each: 6 x (22 + 335.54432)
** = 2145.26592 us, and 3 additions of 262,144 floats (0.00133 us each): 2145.26991 us. */
static void test_multislice_dcn_closed_form(void **state) {
  (void)state;
  int dims[3];
  const sim_tpu_generation *g = gen("v5litepod-8", dims);
  static const struct { int slices; double us; } want[] = {{2, 1386.17728 + 524288 / 197e6}, {4, 2145.26592 + 3 * 262144 / 197e6}};
  for (size_t w = 0; w < 2; w++) {
    sim_engine *e = sim_engine_new();
    sim_multislice *m = sim_multislice_new(e, g, dims, want[w].slices, NULL);
    int done = 0;
    assert_int_equal(sim_multislice_all_reduce_start(m, NULL, 8u << 20, ms_done, &done), SIM_OK);
    assert_int_equal(sim_run(e), 0);
    double got = sim_time_to_s(sim_multislice_last_dcn_duration(m)) * 1e6;
    if (fabs(got - want[w].us) > 1e-6 * want[w].us) fail_msg("%d slices: %.6f us, want %.6f", want[w].slices, got, want[w].us);
    assert_true(sim_multislice_last_duration(m) > sim_multislice_last_dcn_duration(m));
    sim_multislice_free(m);
    sim_engine_free(e);
  }
}

/* Slice j > 0 is named apart: its links "s<j>.", its devices' tasks and host CPUs after slice 0's
** hosts. */
static void test_multislice_names(void **state) {
  (void)state;
  int dims[3];
  const sim_tpu_generation *g = gen("v5litepod-16", dims);  /* 2 hosts of 8 chips */
  sim_engine *e = sim_engine_new();
  sim_multislice *m = sim_multislice_new(e, g, dims, 3, NULL);
  assert_string_equal(sim_link_name(sim_tpu_host_dcn(sim_multislice_slice(m, 0), 1, 1)), "dcn.1.up");
  assert_string_equal(sim_link_name(sim_tpu_host_dcn(sim_multislice_slice(m, 2), 1, 1)), "s2.dcn.1.up");
  assert_string_equal(sim_tpu_device_name(sim_multislice_slice(m, 0), 9), "/job:worker/replica:0/task:1/device:TPU:1");
  assert_string_equal(sim_tpu_device_name(sim_multislice_slice(m, 2), 9), "/job:worker/replica:0/task:5/device:TPU:1");
  sim_cpu *host = sim_tpu_host_cpu(sim_multislice_slice(m, 2), 1, 1e12);
  assert_string_equal(sim_cpu_name(host), "tpu_host5.cpu");
  assert_ptr_equal(sim_tpu_host_cpu(sim_multislice_slice(m, 2), 1, 1e12), host);  /* made once */
  sim_multislice_free(m);
  sim_engine_free(e);
}

/* The blocking form from one actor per rank ends with the engine-side form's bits and time, and
** counts its duration from the last rank's call. */
typedef struct { sim_multislice *m; int rank; float *buf; size_t count; int rc; sim_time late; } rank_arg;

static void rank_main(sim_actor *self, void *arg) {
  rank_arg *a = arg;
  if (a->late > 0) sim_sleep(self, a->late);
  a->rc = sim_multislice_all_reduce(self, a->m, a->rank, a->buf, a->count);
}

static void test_multislice_blocking_matches_start(void **state) {
  (void)state;
  int dims[3];
  const sim_tpu_generation *g = gen("v5litepod-8", dims);
  enum { S = 2, P = 16, N = 77 };
  float a[P][N], b[P][N], *bp[P];
  for (int r = 0; r < P; r++)
    for (int i = 0; i < N; i++) a[r][i] = b[r][i] = (float)sin(0.3 * r + 0.01 * i);
  sim_engine *e = sim_engine_new();
  sim_multislice *m = sim_multislice_new(e, g, dims, S, NULL);
  for (int r = 0; r < P; r++) bp[r] = b[r];
  int done = 0;
  assert_int_equal(sim_multislice_all_reduce_start(m, bp, N, ms_done, &done), SIM_OK);
  assert_int_equal(sim_run(e), 0);
  sim_time engine_side = sim_now(e);
  sim_multislice_free(m);
  sim_engine_free(e);
  e = sim_engine_new();
  m = sim_multislice_new(e, g, dims, S, NULL);
  rank_arg args[P];
  for (int r = 0; r < P; r++) {
    args[r] = (rank_arg){m, r, a[r], N, -99, 0};
    sim_actor_spawn(e, "rank", rank_main, &args[r]);
  }
  assert_int_equal(sim_run(e), 0);
  for (int r = 0; r < P; r++) assert_int_equal(args[r].rc, SIM_OK);
  assert_memory_equal(a, b, sizeof a);
  assert_int_equal(sim_now(e), engine_side);
  assert_int_equal(sim_multislice_last_duration(m), engine_side);
  sim_multislice_free(m);
  sim_engine_free(e);
  /* Every rank but 0 calls 5 us late: the all-reduce counts from the last call, as a collective
  ** does from its last arrival, so it takes the same time and ends 5 us later. */
  e = sim_engine_new();
  m = sim_multislice_new(e, g, dims, S, NULL);
  for (int r = 0; r < P; r++) {
    args[r] = (rank_arg){m, r, a[r], N, -99, r == 0 ? 0 : 5 * US};
    sim_actor_spawn(e, "rank", rank_main, &args[r]);
  }
  assert_int_equal(sim_run(e), 0);
  assert_int_equal(sim_now(e), engine_side + 5 * US);
  assert_int_equal(sim_multislice_last_duration(m), engine_side);
  sim_multislice_free(m);
  sim_engine_free(e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_axis_groups_use_their_axis_only),
    cmocka_unit_test(test_axis_relabelling_changes_nothing),
    cmocka_unit_test(test_time_rises_with_size),
    cmocka_unit_test(test_more_links_never_slower),
    cmocka_unit_test(test_ppermute_along_an_axis),
    cmocka_unit_test(test_multislice_all_reduce_numerics),
    cmocka_unit_test(test_multislice_dcn_closed_form),
    cmocka_unit_test(test_multislice_names),
    cmocka_unit_test(test_multislice_blocking_matches_start),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
