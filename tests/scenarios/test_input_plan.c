/*
** test_input_plan.c: the rows each replica of a sync run reads (scenarios/programs/input_plan.h).
** Hand-worked element orders for every dataset key of the contract, and the agreement of the
** closed form (numerics off) with the library's iterator over a grid of layouts and programs.
*/
#include "tests/testutil.h"

#include "scenarios/programs/input_plan.h"
#include "scenarios/programs/slice.h"
#include "scenarios/programs/train.h"
#include "sim/sim.h"

/* A run's input: the scenario fields the plan reads and rows without values. */
typedef struct fixture {
  scenario s;             /* dataset and training keys */
  md_dataset data;        /* rows only */
  size_t file_rows[4];    /* dataset.files' rows */
  train_input in;         /* what the plan is given */
  sim_engine *e;          /* the strategy's engine */
  ds_strategy *st;        /* multi_worker_mirrored over the fixture's workers */
} fixture;

static scenario base_scenario(size_t rows, int global_batch, long steps) {
  scenario s;
  memset(&s, 0, sizeof s);
  snprintf(s.path, sizeof s.path, "plan.yaml");
  s.seed = 1;
  s.global_batch = global_batch;
  s.steps = steps;
  s.repeat = 1;
  s.synthetic_rows = rows;
  return s;
}

/* multi_worker_mirrored over `workers` VMs of `gpus` GPUs each (1 gpu: CPU-free replicas). */
static void fixture_init(fixture *f, int workers, int gpus, const scenario *s) {
  memset(f, 0, sizeof *f);
  f->s = *s;
  f->data.rows = s->synthetic_rows;
  f->in = (train_input){ .s = &f->s, .data = &f->data, .steps = s->steps };
  ds_cluster c = { .workers = workers, .machine = { .flops_per_s = 1e11, .mem_bytes_per_s = 2e10,
                   .ram_bytes = 32e9, .nic_bytes_per_s = 25e9, .accel = { .count = gpus,
                   .peak_flops = 1e14, .efficiency = 0.5, .hbm_bytes = 16e9, .hbm_bytes_per_s = 1e12,
                   .link_bytes_per_s = 1e10, .link_latency = 1000000 } },
                   .fabric = SIM_FABRIC_STAR, .link_bytes_per_s = 1e10, .latency = 5000000 };
  f->e = sim_engine_new();
  f->st = ds_strategy_new(f->e, workers * gpus > 1 ? DS_MULTI_WORKER_MIRRORED : DS_ONE_DEVICE, &c,
                          SIM_ALGO_RING);
}

static void fixture_free(fixture *f) {
  ds_strategy_free(f->st);
  sim_engine_free(f->e);
}

/* Replica r's rows at step s equal want[0..n). */
static void expect_rows(inp_plan *p, long step, int r, int n, const int64_t *want) {
  int count;
  const int64_t *rows = inp_plan_rows(p, step, r, &count);
  assert_int_equal(count, n);
  for (int i = 0; i < n; i++) assert_int_equal(rows[i], want[i]);
}

#define ROWS(...) (sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__}

/* One replica, no shuffle: range(10).repeat().batch(4) reads 0..3, 4..7, 8 9 0 1 (the rows
** wrap), as docs/scenario-format.md's batching rule says. */
static void one_replica_reads_the_rows_in_order(void **state) {
  (void)state;
  fixture f;
  scenario s = base_scenario(10, 4, 3);
  fixture_init(&f, 1, 1, &s);
  scn_error err;
  inp_plan *p = inp_plan_new(&f.in, f.st, 1, &err);
  assert_non_null(p);
  expect_rows(p, 0, 0, ROWS(0, 1, 2, 3));
  expect_rows(p, 1, 0, ROWS(4, 5, 6, 7));
  expect_rows(p, 2, 0, ROWS(8, 9, 0, 1));
  inp_plan_free(p);
  fixture_free(&f);
}

/* 2 workers x 2 GPUs, range(16).repeat().batch(8), auto_shard_policy data (AUTO on a range
** falls back to DATA): TF's legacy rebatch cuts each global batch into 4 slices of 2 and worker
** w keeps slices w and w + 2, so worker 0's replicas read slices 0 and 2, worker 1's 1 and 3. */
static void data_sharding_interleaves_the_workers(void **state) {
  (void)state;
  for (int policy = SCN_SHARD_AUTO; policy <= SCN_SHARD_DATA; policy += SCN_SHARD_DATA) {
    fixture f;
    scenario s = base_scenario(16, 8, 2);
    s.auto_shard = (scn_auto_shard)policy;
    fixture_init(&f, 2, 2, &s);
    scn_error err;
    inp_plan *p = inp_plan_new(&f.in, f.st, 1, &err);
    assert_non_null(p);
    expect_rows(p, 0, 0, ROWS(0, 1));
    expect_rows(p, 0, 1, ROWS(4, 5));
    expect_rows(p, 0, 2, ROWS(2, 3));
    expect_rows(p, 0, 3, ROWS(6, 7));
    expect_rows(p, 1, 0, ROWS(8, 9));
    expect_rows(p, 1, 3, ROWS(14, 15));
    inp_plan_free(p);
    fixture_free(&f);
  }
}

/* auto_shard_policy off, 2 workers x 1 replica, range(8).repeat().batch(4): every worker reads the
** whole dataset (TF: "each worker will process the whole dataset"), rebatched into its replica's
** 2 rows, so both replicas read rows 0 1 at step 0 and 2 3 at step 1. */
static void no_sharding_gives_every_worker_everything(void **state) {
  (void)state;
  fixture f;
  scenario s = base_scenario(8, 4, 2);
  s.auto_shard = SCN_SHARD_OFF;
  fixture_init(&f, 2, 1, &s);
  scn_error err;
  inp_plan *p = inp_plan_new(&f.in, f.st, 1, &err);
  assert_non_null(p);
  for (int r = 0; r < 2; r++) {
    expect_rows(p, 0, r, ROWS(0, 1));
    expect_rows(p, 1, r, ROWS(2, 3));
  }
  inp_plan_free(p);
  fixture_free(&f);
}

/* distribute: function, 2 workers x 1 replica, G = 4: dataset_fn(ctx) shards range(8) by input
** pipeline (worker 0: 0 2 4 6, worker 1: 1 3 5 7) and batches by
** ctx.get_per_replica_batch_size(4) = 2. */
static void dataset_function_shards_by_input_pipeline(void **state) {
  (void)state;
  fixture f;
  scenario s = base_scenario(8, 4, 2);
  s.distribute = SCN_DISTRIBUTE_FUNCTION;
  fixture_init(&f, 2, 1, &s);
  scn_error err;
  inp_plan *p = inp_plan_new(&f.in, f.st, 1, &err);
  assert_non_null(p);
  expect_rows(p, 0, 0, ROWS(0, 2));
  expect_rows(p, 0, 1, ROWS(1, 3));
  expect_rows(p, 1, 0, ROWS(4, 6));
  expect_rows(p, 1, 1, ROWS(5, 7));
  inp_plan_free(p);
  fixture_free(&f);
}

/* get_per_replica_batch_size(6) over 4 replicas is TF's ValueError: the run is refused at
** dataset.distribute, before anything runs. */
static void dataset_function_needs_a_divisible_batch(void **state) {
  (void)state;
  fixture f;
  scenario s = base_scenario(8, 6, 2);
  s.distribute = SCN_DISTRIBUTE_FUNCTION;
  fixture_init(&f, 2, 2, &s);
  scn_error err;
  assert_null(inp_plan_new(&f.in, f.st, 0, &err));
  assert_string_equal(err.key, "dataset.distribute");
  assert_non_null(strstr(err.msg, "ValueError"));
  fixture_free(&f);
}

/* auto_shard_policy file over files of 3, 2 and 3 rows (rows 0-2, 3-4, 5-7), 2 workers x 1
** replica, G = 4, one pass: worker 0 reads files 0 and 2 (0 1 2 5 6 7) in batches of its 4 rows
** rebatched to 2, worker 1 file 1 (3 4). MultiWorkerMirrored hands a replica with no data left
** an empty batch while the other still has some: 3 steps. */
static void file_sharding_hands_out_whole_files(void **state) {
  (void)state;
  fixture f;
  scenario s = base_scenario(8, 4, 100);
  s.repeat = 0;
  s.auto_shard = SCN_SHARD_FILE;
  s.nfiles = 3;
  memcpy(s.files, "a.csv\0b.csv\0c.csv", 18);
  fixture_init(&f, 2, 1, &s);
  f.file_rows[0] = 3, f.file_rows[1] = 2, f.file_rows[2] = 3;
  f.in.nfiles = 3;
  f.in.file_rows = f.file_rows;
  scn_error err;
  inp_plan *p = inp_plan_new(&f.in, f.st, 1, &err);
  assert_non_null(p);
  assert_int_equal(f.in.steps, 3);
  expect_rows(p, 0, 0, ROWS(0, 1));
  expect_rows(p, 0, 1, ROWS(3, 4));
  expect_rows(p, 1, 0, ROWS(2, 5));
  expect_rows(p, 1, 1, 0, NULL);
  expect_rows(p, 2, 0, ROWS(6, 7));
  expect_rows(p, 2, 1, 0, NULL);
  assert_int_equal(inp_plan_step_examples(p, 2), 2);
  inp_plan_free(p);
  fixture_free(&f);
}

/* shuffle {buffer: 10} on range(10), 2 epochs of batch(5): each epoch reads every row once, the
** two epochs in different orders (reshuffle_each_iteration), the same ones on a second plan. */
static void shuffle_reads_each_row_once_per_epoch(void **state) {
  (void)state;
  fixture f;
  scenario s = base_scenario(10, 5, 0);
  s.epochs = 2;
  s.shuffle_buffer = 10;
  fixture_init(&f, 1, 1, &s);
  scn_error err;
  inp_plan *p = inp_plan_new(&f.in, f.st, 1, &err), *q = inp_plan_new(&f.in, f.st, 1, &err);
  assert_int_equal(f.in.steps, 4);
  int64_t order[2][10];
  for (int epoch = 0; epoch < 2; epoch++) {
    int seen[10] = {0};
    for (int half = 0; half < 2; half++) {
      int n;
      const int64_t *rows = inp_plan_rows(p, epoch * 2 + half, 0, &n);
      assert_int_equal(n, 5);
      memcpy(order[epoch] + half * 5, rows, 5 * sizeof *rows);
      expect_rows(q, epoch * 2 + half, 0, 5, rows);
    }
    for (int i = 0; i < 10; i++) seen[order[epoch][i]]++;
    for (int v = 0; v < 10; v++) assert_int_equal(seen[v], 1);
  }
  assert_memory_not_equal(order[0], order[1], sizeof order[0]);
  inp_plan_free(p);
  inp_plan_free(q);
  fixture_free(&f);
}

/* A restore to step k reads from step k what the uninterrupted plan read. */
static void restore_replays_the_iterator(void **state) {
  (void)state;
  fixture f;
  scenario s = base_scenario(13, 4, 12);
  s.shuffle_buffer = 5;
  fixture_init(&f, 2, 1, &s);
  scn_error err;
  inp_plan *p = inp_plan_new(&f.in, f.st, 1, &err), *q = inp_plan_new(&f.in, f.st, 1, &err);
  for (long step = 0; step < 9; step++) inp_plan_count(q, step, 0);
  inp_plan_restore(q, 4);
  for (long step = 0; step < 12; step++)
    for (int r = 0; r < 2; r++) {
      int n;
      const int64_t *rows = inp_plan_rows(p, step, r, &n);
      if (step >= 4) expect_rows(q, step, r, n, rows);
    }
  inp_plan_free(p);
  inp_plan_free(q);
  fixture_free(&f);
}

/* Every replica's count at every step, and the steps, agree between the two plans of one
** program (the first counted, the second iterated); returns whether the strategy accepted it. */
static int plans_agree(train_input *a, train_input *b, const ds_strategy *st, const char *what) {
  scn_error err;
  inp_plan *counted = inp_plan_new(a, st, 0, &err), *iterated = inp_plan_new(b, st, 1, &err);
  assert_int_equal(counted == NULL, iterated == NULL);
  if (counted == NULL) return 0;
  if (a->steps != b->steps)
    fail_msg("%s: %ld steps counted, %ld iterated", what, a->steps, b->steps);
  int n = ds_num_replicas_in_sync(st);
  for (long step = 0; step < a->steps; step++)
    for (int r = 0; r < n; r++) {
      int x = inp_plan_count(counted, step, r), y = inp_plan_count(iterated, step, r);
      if (x != y) fail_msg("%s: step %ld replica %d counted %d, iterated %d", what, step, r, x, y);
      assert_true(x <= inp_plan_max_count(counted));
    }
  inp_plan_free(counted);
  inp_plan_free(iterated);
  return 1;
}

/* The grid's program number k (0..59): rows, G, steps / epochs / one pass, policy or function. */
static scenario grid_scenario(int k, char *what, size_t len) {
  static const size_t ROWS_[] = {7, 16, 30};
  static const int G[] = {1, 4, 5, 8, 12};
  static const char *const HOW[] = {"auto", "data", "off", "function"};
  size_t rows = ROWS_[k % 3];
  int g = G[k / 3 % 5], mode = k / 15 % 3, how = k / 45 % 4;
  scenario s = base_scenario(rows, g, mode == 2 ? 100 : 9);
  if (mode == 1) s.epochs = 3;
  if (mode == 2) s.repeat = 0;
  if (how == 3) s.distribute = SCN_DISTRIBUTE_FUNCTION;
  else s.auto_shard = how == 0 ? SCN_SHARD_AUTO : how == 1 ? SCN_SHARD_DATA : SCN_SHARD_OFF;
  snprintf(what, len, "rows %zu, G %d, %s, %s", rows, g,
           mode == 0 ? "steps" : mode == 1 ? "3 epochs" : "one pass", HOW[how]);
  return s;
}
enum { GRID = 180 };

/* Numerics off counts in closed form; with rows the plan iterates the library: both give every
** replica the same count at every step and the same number of steps, over layouts (1-3 workers
** of 1-2 GPUs: MultiWorkerMirrored hands out empty batches at the end), sizes (rows not a
** multiple of G, G not a multiple of the replicas, G below them), steps with repeat, epochs and
** one pass, every auto-shard policy and both ways of distributing. Refusals (G not divisible
** under distribute: function) agree too. */
static void closed_form_agrees_with_the_library(void **state) {
  (void)state;
  int cases = 0;
  char what[160];
  for (int workers = 1; workers <= 3; workers++)
    for (int gpus = 1; gpus <= 2; gpus++)
      for (int k = 0; k < GRID; k++) {
        char label[200];
        scenario s = grid_scenario(k, what, sizeof what);
        snprintf(label, sizeof label, "%d workers x %d, %s", workers, gpus, what);
        fixture a, b;
        fixture_init(&a, workers, gpus, &s);
        fixture_init(&b, workers, gpus, &s);
        cases += plans_agree(&a.in, &b.in, a.st, label);
        fixture_free(&a);
        fixture_free(&b);
      }
  assert_true(cases > 800);
}

/* training.epochs is Keras's fit: each epoch a new iterator over the distributed dataset
** (keras/src/trainers/epoch_iterator.py), so an epoch's last batch is short and the next epoch's
** first is whole. 384 rows in batches of 100 over 4 replicas of one worker (AUTO on a range: the
** legacy rebatch, ceil(b / 4) a replica): an epoch is 100, 100, 100, 84 (21 each), 12 steps for 3
** epochs, and step 4 starts at row 0 again. TF 2.21's fit(x, y, batch_size=100, epochs=3) under
** MirroredStrategy over 4 logical CPUs gives the replicas 25 x 12, 21 x 4 in each epoch. A
** repeat(3) before the rebatch gave 11 x 100 + 52, its pieces running across the epochs. Counted
** and iterated alike, and a restore at step 5 replays the second epoch's iterator. */
static void each_epoch_is_a_new_iterator(void **state) {
  (void)state;
  static const int EPOCH[4] = {100, 100, 100, 84}, LAST[4] = {21, 21, 21, 21};
  scenario s = base_scenario(384, 100, 0);
  s.epochs = 3;
  fixture a, b;
  fixture_init(&a, 1, 4, &s);
  fixture_init(&b, 1, 4, &s);
  assert_true(plans_agree(&a.in, &b.in, a.st, "3 epochs of 384 rows"));
  assert_int_equal(a.in.steps, 12);
  scn_error err;
  inp_plan *p = inp_plan_new(&b.in, b.st, 1, &err), *q = inp_plan_new(&b.in, b.st, 1, &err);
  for (long step = 0; step < 12; step++) {
    assert_int_equal(inp_plan_step_examples(p, step), EPOCH[step % 4]);
    if (step % 4 == 3)
      for (int r = 0; r < 4; r++) assert_int_equal(inp_plan_count(p, step, r), LAST[r]);
  }
  inp_plan_restore(p, 4);
  int n;
  const int64_t *rows = inp_plan_rows(p, 4, 0, &n);
  assert_int_equal(n, 25);
  for (int i = 0; i < 25; i++) assert_int_equal(rows[i], i);  /* the legacy rebatch's first slice */
  inp_plan_restore(q, 5);
  for (long step = 5; step < 12; step++)
    for (int r = 0; r < 4; r++) {
      const int64_t *want = inp_plan_rows(p, step, r, &n);
      expect_rows(q, step, r, n, want);
    }
  inp_plan_free(p);
  inp_plan_free(q);
  fixture_free(&a);
  fixture_free(&b);
}

/* The same on TPUStrategy over a v4-16 slice (8 replicas on 2 hosts), which does not hand out
** partial batches: the input ends at the first step some replica has no element for. */
static void closed_form_agrees_on_a_tpu_slice(void **state) {
  (void)state;
  static scenario tpu;
  scn_error err;
  if (scenario_load(tu_src("tests/data/faults/tpu.yaml"), NULL, 0, &tpu, &err) != 0)
    fail_msg("%s", err.msg);
  sim_engine *e = sim_engine_new();
  slice_run *slice = slice_run_new(&tpu, e, SIM_ALGO_RING);
  int cases = 0;
  char what[160];
  for (int k = 0; k < GRID; k++) {
    scenario s = grid_scenario(k, what, sizeof what);
    md_dataset data = { .rows = s.synthetic_rows };
    train_input a = { .s = &s, .data = &data, .steps = s.steps }, b = a;
    cases += plans_agree(&a, &b, slice_run_strategy(slice), what);
  }
  assert_true(cases > 100);
  slice_run_free(slice);
  sim_engine_free(e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(one_replica_reads_the_rows_in_order),
    cmocka_unit_test(data_sharding_interleaves_the_workers),
    cmocka_unit_test(no_sharding_gives_every_worker_everything),
    cmocka_unit_test(dataset_function_shards_by_input_pipeline),
    cmocka_unit_test(dataset_function_needs_a_divisible_batch),
    cmocka_unit_test(file_sharding_hands_out_whole_files),
    cmocka_unit_test(shuffle_reads_each_row_once_per_epoch),
    cmocka_unit_test(restore_replays_the_iterator),
    cmocka_unit_test(closed_form_agrees_with_the_library),
    cmocka_unit_test(closed_form_agrees_on_a_tpu_slice),
    cmocka_unit_test(each_epoch_is_a_new_iterator),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
