/*
** test_input.c: input distribution, with the examples of TensorFlow's API pages and the rules
** of tf-distribute-semantics.md section 5, the expected values worked out beside each test.
*/
#include "tests/testutil.h"

#include "strategies/input/input.h"
#include "strategies/core/strategy.h"

static const char *const two_gpus[] = { "/job:localhost/replica:0/task:0/device:GPU:0",
                                        "/job:localhost/replica:0/task:0/device:GPU:1" };
static const char *const four_gpus[] = { "/job:worker/replica:0/task:0/device:GPU:0",
                                         "/job:worker/replica:0/task:0/device:GPU:1",
                                         "/job:worker/replica:0/task:1/device:GPU:0",
                                         "/job:worker/replica:0/task:1/device:GPU:1" };

/* MirroredStrategy(["GPU:0", "GPU:1"]). */
static ds_input_layout mirrored_two(void) {
  return (ds_input_layout){ .num_workers = 1, .num_replicas_in_sync = 2, .worker_index = -1,
                            .devices = two_gpus, .partial_batch_handling = 1 };
}

/* MultiWorkerMirroredStrategy on 2 workers of 2 GPUs. */
static ds_input_layout two_by_two(void) {
  return (ds_input_layout){ .num_workers = 2, .num_replicas_in_sync = 4, .worker_index = -1,
                            .devices = four_gpus, .partial_batch_handling = 1 };
}

/* Component r of v holds exactly the n values want. */
static void expect_replica(const ds_value *v, int r, size_t n, const double *want) {
  const md_tensor *t = ds_value_component(v, r);
  assert_int_equal(t->size, n);
  if (t->rank > 0) assert_int_equal(t->shape[0], (int64_t)n);
  for (size_t i = 0; i < n; i++) assert_true(md_tensor_get(t, i) == want[i]);
}

/* The next step of a one-component iterator: a PerReplica whose replica r holds rows[r]
** (sizes n[r]). */
static void expect_step(ds_input_iterator *it, int replicas, const size_t *n,
                        const double *const *rows) {
  ds_value *v[1];
  ds_status st;
  ds_status_clear(&st);
  assert_int_equal(ds_input_get_next(it, v, &st), 0);
  assert_int_equal(ds_value_kind_of(v[0]), DS_VALUE_PER_REPLICA);
  assert_int_equal(ds_value_num_components(v[0]), replicas);
  for (int r = 0; r < replicas; r++) expect_replica(v[0], r, n[r], rows[r]);
  ds_value_free(v[0]);
}

static void expect_end(ds_input_iterator *it) {
  ds_value *v[1];
  ds_status st;
  ds_status_clear(&st);
  assert_int_equal(ds_input_get_next(it, v, &st), -1);
  assert_int_equal(st.kind, DS_OUT_OF_RANGE_ERROR);
}

static ds_dataset *range_batch(int64_t n, int64_t batch, int drop) {
  ds_dataset *r = ds_dataset_range(0, n, 1, NULL), *b = ds_dataset_batch(r, batch, drop, NULL);
  ds_dataset_free(r);
  return b;
}

/* experimental_distribute_dataset(range(n).batch(batch, drop)) over l. */
static ds_input_dataset *distributed_range(const ds_input_layout *l, int64_t n, int64_t batch,
                                           int drop) {
  ds_dataset *d = range_batch(n, batch, drop);
  ds_input_dataset *dd = ds_input_distribute_dataset(l, d, NULL, NULL);
  ds_dataset_free(d);
  return dd;
}

/* tf.distribute.Strategy.experimental_distribute_dataset's example: range(4).batch(2) over
** GPU:0 and GPU:1, replica_fn x * 2. Global batch 2 over 2 replicas: sizes [1, 1], so the steps
** are ([0], [1]) and ([2], [3]); doubled: ([0], [2]) then ([4], [6]). */
static void distribute_dataset_documented_example(void **state) {
  (void)state;
  ds_input_layout l = mirrored_two();
  ds_input_dataset *dd = distributed_range(&l, 4, 2, 0);
  assert_non_null(dd);
  ds_input_iterator *it = ds_input_iterator_new(dd);
  double want[2][2] = { { 0, 2 }, { 4, 6 } };
  for (int step = 0; step < 2; step++) {
    ds_value *v[1];
    assert_int_equal(ds_input_get_next(it, v, NULL), 0);
    for (int r = 0; r < 2; r++) {
      md_tensor *x = ds_value_component(v[0], r);
      for (size_t i = 0; i < x->size; i++) md_tensor_i64(x)[i] *= 2;  /* replica_fn */
      expect_replica(v[0], r, 1, &want[step][r]);
      assert_string_equal(ds_value_device(v[0], r), two_gpus[r]);
    }
    ds_value_free(v[0]);
  }
  expect_end(it);
  ds_input_iterator_free(it);
  ds_input_dataset_free(dd);
}

/* batch_sizes_for_worker's documented G = 7, W = 2, R = 2: f = 7 // 4 = 1, 7 - 4 = 3 sub-batches
** of 2: worker 0 [2, 2, 2, 1], worker 1 rotated left by 2: [2, 1, 2, 2]. */
static void batch_sizes_for_workers(void **state) {
  (void)state;
  int64_t s0[4], s1[4];
  ds_input_batch_sizes_for_worker(7, 2, 2, 0, s0);
  ds_input_batch_sizes_for_worker(7, 2, 2, 1, s1);
  int64_t want0[4] = { 2, 2, 2, 1 }, want1[4] = { 2, 1, 2, 2 };
  assert_memory_equal(s0, want0, sizeof s0);
  assert_memory_equal(s1, want1, sizeof s1);
}

/* The files of batch_sizes_for_worker's docstring: file_a holds A0..A6 (0..6), file_b B0..B6
** (100..106); batch(7); 2 workers of 2 replicas. FILE sharding gives worker 0 file_a, worker 1
** file_b; worker 0 splits [2, 2, 2, 1] and worker 1 [2, 1, 2, 2]. Documented steps:
**   step 1: [A0 A1] [A2 A3] [B0 B1] [B2]        (2 + 2 + 2 + 1 = 7)
**   step 2: [A4 A5] [A6]    [B3 B4] [B5 B6]     (7)
** then the end. AUTO finds the reader and does the same. */
static ds_dataset *two_files(void) {
  int64_t a[7], b[7];
  for (int i = 0; i < 7; i++) {
    a[i] = i;
    b[i] = 100 + i;
  }
  md_tensor *ta = md_tensor_vector_i64(7, a), *tb = md_tensor_vector_i64(7, b);
  ds_dataset *f = ds_dataset_from_files(2, (const char *[]){ "file_a", "file_b" }, 1,
                                        (md_tensor *[]){ ta, tb }, NULL);
  md_tensor_free(ta);
  md_tensor_free(tb);
  ds_dataset *batched = ds_dataset_batch(f, 7, 0, NULL);
  ds_dataset_free(f);
  return batched;
}

static void file_sharding_documented_example(void **state) {
  (void)state;
  ds_input_layout l = two_by_two();
  for (int policy = DS_AUTO_SHARD_AUTO; policy <= DS_AUTO_SHARD_FILE; policy++) {
    ds_dataset *b = two_files(), *d = ds_dataset_with_auto_shard_policy(b, policy);
    ds_input_dataset *dd = ds_input_distribute_dataset(&l, d, NULL, NULL);
    ds_dataset_free(b);
    ds_dataset_free(d);
    assert_non_null(dd);
    char buf[256];
    assert_string_equal(ds_dataset_describe(ds_input_dataset_pipeline(dd, 1), buf, sizeof buf),
                        policy == DS_AUTO_SHARD_AUTO
                          ? "files(file_b) -> batch(7) -> options(auto_shard=0) -> "
                            "rebatch([2, 1, 2, 2]) -> prefetch(2)"
                          : "files(file_b) -> batch(7) -> options(auto_shard=1) -> "
                            "rebatch([2, 1, 2, 2]) -> prefetch(2)");
    ds_input_iterator *it = ds_input_iterator_new(dd);
    expect_step(it, 4, (size_t[]){ 2, 2, 2, 1 },
                (const double *[]){ (double[]){ 0, 1 }, (double[]){ 2, 3 },
                                    (double[]){ 100, 101 }, (double[]){ 102 } });
    expect_step(it, 4, (size_t[]){ 2, 1, 2, 2 },
                (const double *[]){ (double[]){ 4, 5 }, (double[]){ 6 },
                                    (double[]){ 103, 104 }, (double[]){ 105, 106 } });
    expect_end(it);
    ds_input_iterator_free(it);
    ds_input_dataset_free(dd);
  }
}

/* DATA sharding (AUTO on range, which has no reader): each worker cuts every batch of 7 into
** N = 4 legacy slices of ceil(7/4) = 2 rows and keeps every W-th = 2nd slice:
**   batch [0..6] -> [0 1] [2 3] [4 5] [6]: worker 0 keeps [0 1] [4 5], worker 1 [2 3] [6]
**   batch [7..13] -> [7 8] [9 10] [11 12] [13]
** so step 1 is [0 1] [4 5] | [2 3] [6] and step 2 [7 8] [11 12] | [9 10] [13]: each step is one
** whole global batch. The sized rebatch is not used: its per-worker rotation would lose rows. */
static void data_sharding_keeps_every_wth_slice(void **state) {
  (void)state;
  ds_input_layout l = two_by_two();
  ds_input_dataset *dd = distributed_range(&l, 14, 7, 0);
  char buf[256];
  assert_string_equal(ds_dataset_describe(ds_input_dataset_pipeline(dd, 0), buf, sizeof buf),
                      "range(0, 14, 1) -> batch(7) -> legacy_rebatch(4) -> shard(2, 0) -> "
                      "prefetch(2)");
  ds_input_iterator *it = ds_input_iterator_new(dd);
  expect_step(it, 4, (size_t[]){ 2, 2, 2, 1 },
              (const double *[]){ (double[]){ 0, 1 }, (double[]){ 4, 5 }, (double[]){ 2, 3 },
                                  (double[]){ 6 } });
  expect_step(it, 4, (size_t[]){ 2, 2, 2, 1 },
              (const double *[]){ (double[]){ 7, 8 }, (double[]){ 11, 12 }, (double[]){ 9, 10 },
                                  (double[]){ 13 } });
  expect_end(it);
  ds_input_iterator_free(it);
  ds_input_dataset_free(dd);
}

/* DATA sharding of a stream that replays is read once and dealt out (issue 31): the same
** elements as every worker reading its own. 4 workers x 2 replicas, range(40).batch(10): each
** batch is cut into N = 8 legacy slices of ceil(10/8) = 2 rows, [0 1] [2 3] [4 5] [6 7] [8 9]
** and three empty ones; worker w keeps slices w and w + 4, its replica i the i-th: replica
** 2w + i gets slice w + 4i, so step 1 is [0 1] [8 9] | [2 3] [] | [4 5] [] | [6 7] []. The
** reference is the same program with shuffle(1) before the batch (an identity: a buffer of one
** hands out what it took), which does not replay (each iterator draws a new seed stream), so
** each worker's pipeline reads the stream itself. Four steps, then the end for both. */
static void shared_data_stream_matches_per_worker_pipelines(void **state) {
  (void)state;
  ds_input_layout l = { .num_workers = 4, .num_replicas_in_sync = 8, .worker_index = -1 };
  ds_dataset *r = ds_dataset_range(0, 40, 1, NULL), *one = ds_dataset_shuffle(r, 1, 7, 1, NULL);
  ds_dataset *shared = ds_dataset_batch(r, 10, 0, NULL), *own = ds_dataset_batch(one, 10, 0, NULL);
  ds_input_dataset *a = ds_input_distribute_dataset(&l, shared, NULL, NULL);
  ds_input_dataset *b = ds_input_distribute_dataset(&l, own, NULL, NULL);
  ds_input_iterator *ia = ds_input_iterator_new(a), *ib = ds_input_iterator_new(b);
  expect_step(ia, 8, (size_t[]){ 2, 2, 2, 0, 2, 0, 2, 0 },
              (const double *[]){ (double[]){ 0, 1 }, (double[]){ 8, 9 }, (double[]){ 2, 3 }, NULL,
                                  (double[]){ 4, 5 }, NULL, (double[]){ 6, 7 }, NULL });
  ds_input_iterator_free(ia);
  ia = ds_input_iterator_new(a);  /* a new iterator starts the stream again */
  for (int step = 0; step < 4; step++) {
    ds_value *va[1], *vb[1];
    assert_int_equal(ds_input_get_next(ia, va, NULL), 0);
    assert_int_equal(ds_input_get_next(ib, vb, NULL), 0);
    for (int k = 0; k < 8; k++) {
      const md_tensor *x = ds_value_component(va[0], k), *y = ds_value_component(vb[0], k);
      assert_int_equal(x->size, y->size);
      for (size_t i = 0; i < x->size; i++) assert_true(md_tensor_get(x, i) == md_tensor_get(y, i));
      if (step == 3 && k == 0) assert_true(md_tensor_get(x, 0) == 30);  /* the fourth batch's first row */
    }
    ds_value_free(va[0]);
    ds_value_free(vb[0]);
  }
  expect_end(ia);
  expect_end(ib);
  ds_input_iterator_free(ia);
  ds_input_iterator_free(ib);
  ds_input_dataset_free(a);
  ds_input_dataset_free(b);
  ds_dataset_free(shared);
  ds_dataset_free(own);
  ds_dataset_free(one);
  ds_dataset_free(r);
}

/* OFF: every worker reads everything, rebatched by its own rotation: range(4).batch(4) over
** 2x2 gives worker 0 sizes [1 1 1 1] = [0] [1], worker 1 [0] [1] too (rotation of equal sizes). */
static void off_policy_reads_everything_everywhere(void **state) {
  (void)state;
  ds_input_layout l = two_by_two();
  ds_dataset *b = range_batch(4, 4, 0);
  ds_dataset *d = ds_dataset_with_auto_shard_policy(b, DS_AUTO_SHARD_OFF);
  ds_input_dataset *dd = ds_input_distribute_dataset(&l, d, NULL, NULL);
  ds_input_iterator *it = ds_input_iterator_new(dd);
  expect_step(it, 4, (size_t[]){ 1, 1, 1, 1 },
              (const double *[]){ (double[]){ 0 }, (double[]){ 1 }, (double[]){ 0 },
                                  (double[]){ 1 } });
  ds_input_iterator_free(it);
  ds_input_dataset_free(dd);
  ds_dataset_free(b);
  ds_dataset_free(d);
}

/* The last partial batch with get_next_as_optional: range(5).batch(4) over 2 replicas of one
** worker. Under policy OFF the rebatch has sizes [2, 2] and runs across input batches: [0 1]
** [2 3] [4], so step 2 gives replica 0 [4] and replica 1 an empty batch (shape [0]); step 3 has
** no data anywhere: the end. Without the partial-batch handling (TPUStrategy's default) step 2
** is already the end. Under AUTO on a range, TF's auto-shard rewrite makes it the legacy rebatch
** even on one worker: each batch cut into 2 slices of ceil(b / 2), so [4] is cut into [4] and []
** and step 2 is ([4], []) with or without the handling (TF 2.21, MirroredStrategy over 2
** devices: range(33).batch(7) gives 4,3 per batch and 3,2 last). */
static void last_partial_batch(void **state) {
  (void)state;
  for (int legacy = 0; legacy <= 1; legacy++)
    for (int handling = 1; handling >= 0; handling--) {
      ds_input_layout l = mirrored_two();
      l.partial_batch_handling = handling;
      ds_dataset *b = range_batch(5, 4, 0);
      ds_dataset *d = ds_dataset_with_auto_shard_policy(b, legacy ? DS_AUTO_SHARD_AUTO : DS_AUTO_SHARD_OFF);
      ds_input_dataset *dd = ds_input_distribute_dataset(&l, d, NULL, NULL);
      assert_int_equal(ds_input_dataset_get_next_as_optional(dd), handling);
      ds_input_iterator *it = ds_input_iterator_new(dd);
      expect_step(it, 2, (size_t[]){ 2, 2 },
                  (const double *[]){ (double[]){ 0, 1 }, (double[]){ 2, 3 } });
      if (handling || legacy) expect_step(it, 2, (size_t[]){ 1, 0 }, (const double *[]){ (double[]){ 4 }, NULL });
      if (handling) {
        ds_value *v[1];
        int has = 1;
        assert_int_equal(ds_input_get_next_as_optional(it, v, &has, NULL), 0);
        assert_false(has);
      }
      expect_end(it);
      ds_input_iterator_free(it);
      ds_input_dataset_free(dd);
      ds_dataset_free(d);
      ds_dataset_free(b);
    }
}

/* A short final batch fills early replicas first: range(6).batch(4) over 4 replicas, sizes
** [1 1 1 1]: step 1 [0] [1] [2] [3]; step 2 [4] [5] [] []. */
static void short_batch_fills_early_replicas(void **state) {
  (void)state;
  ds_input_layout l = { .num_workers = 1, .num_replicas_in_sync = 4, .worker_index = -1,
                        .partial_batch_handling = 1 };
  ds_input_dataset *dd = distributed_range(&l, 6, 4, 0);
  ds_input_iterator *it = ds_input_iterator_new(dd);
  expect_step(it, 4, (size_t[]){ 1, 1, 1, 1 },
              (const double *[]){ (double[]){ 0 }, (double[]){ 1 }, (double[]){ 2 },
                                  (double[]){ 3 } });
  expect_step(it, 4, (size_t[]){ 1, 1, 0, 0 },
              (const double *[]){ (double[]){ 4 }, (double[]){ 5 }, NULL, NULL });
  expect_end(it);
  ds_input_iterator_free(it);
  ds_input_dataset_free(dd);
}

/* No partial-batch handling where there can be no partial batch: batch(4, drop_remainder) over
** 2 replicas is statically shaped [2]; repeat() forever has no last batch. */
static void optional_only_when_needed(void **state) {
  (void)state;
  ds_input_layout l = mirrored_two();
  ds_input_dataset *dd = distributed_range(&l, 8, 4, 1);
  assert_false(ds_input_dataset_get_next_as_optional(dd));
  assert_int_equal(ds_dataset_element_spec(ds_input_dataset_pipeline(dd, 0), 0)->dims[0], 2);
  ds_input_dataset_free(dd);
  ds_dataset *b = range_batch(8, 3, 0), *forever = ds_dataset_repeat(b, -1);
  dd = ds_input_distribute_dataset(&l, forever, NULL, NULL);
  assert_false(ds_input_dataset_get_next_as_optional(dd));
  ds_input_dataset_free(dd);
  ds_dataset_free(b);
  ds_dataset_free(forever);
}

/* worker_index = 1 of 2x2: the PerReplica holds that worker's two replicas, on its devices.
** range(8).batch(4) under DATA: legacy slices of ceil(4/4) = 1 row, [0] [1] [2] [3] [4] ...;
** worker 1 keeps the odd ones, so its replicas get [1] and [3] on step 1. */
static void worker_view_holds_local_replicas(void **state) {
  (void)state;
  ds_input_layout l = two_by_two();
  l.worker_index = 1;
  ds_input_dataset *dd = distributed_range(&l, 8, 4, 0);
  ds_input_iterator *it = ds_input_iterator_new(dd);
  ds_value *v[1];
  assert_int_equal(ds_input_get_next(it, v, NULL), 0);
  assert_int_equal(ds_value_num_components(v[0]), 2);
  expect_replica(v[0], 0, 1, (double[]){ 1 });
  expect_replica(v[0], 1, 1, (double[]){ 3 });
  assert_string_equal(ds_value_device(v[0], 1), four_gpus[3]);
  ds_value_free(v[0]);
  ds_input_iterator_free(it);
  ds_input_dataset_free(dd);
}

/* Every refusal of experimental_distribute_dataset, with TF's exception kind. */
static void distribute_dataset_errors(void **state) {
  (void)state;
  ds_status st;
  ds_dataset *batched = range_batch(8, 4, 0), *scalars = ds_dataset_range(0, 8, 1, NULL);
  ds_input_layout l = { .num_workers = 2, .num_replicas_in_sync = 3, .worker_index = -1 };
  ds_status_clear(&st);  /* 3 replicas do not split over 2 workers */
  TU_EXPECT_REFUSED(ds_input_distribute_dataset(&l, batched, NULL, &st), &st, DS_VALUE_ERROR);
  l = mirrored_two();
  ds_status_clear(&st);  /* nothing to rebatch in a scalar */
  TU_EXPECT_REFUSED(ds_input_distribute_dataset(&l, scalars, NULL, &st), &st, DS_VALUE_ERROR);
  ds_input_options o = ds_input_options_default();
  o.replication_mode = DS_INPUT_PER_REPLICA;
  ds_status_clear(&st);
  TU_EXPECT_REFUSED(ds_input_distribute_dataset(&l, batched, &o, &st), &st,
                 DS_NOT_IMPLEMENTED_ERROR);
  o = ds_input_options_default();
  o.place_dataset_on_device = 1;  /* needs PER_REPLICA */
  ds_status_clear(&st);
  TU_EXPECT_REFUSED(ds_input_distribute_dataset(&l, batched, &o, &st), &st, DS_VALUE_ERROR);
  ds_dataset *hint = ds_dataset_with_auto_shard_policy(batched, DS_AUTO_SHARD_HINT);
  ds_status_clear(&st);
  TU_EXPECT_REFUSED(ds_input_distribute_dataset(&l, hint, NULL, &st), &st,
                 DS_NOT_IMPLEMENTED_ERROR);
  l = two_by_two();
  ds_dataset *file = ds_dataset_with_auto_shard_policy(batched, DS_AUTO_SHARD_FILE);
  ds_status_clear(&st);  /* FILE on a range: no reader to shard */
  TU_EXPECT_REFUSED(ds_input_distribute_dataset(&l, file, NULL, &st), &st, DS_NOT_FOUND_ERROR);
  md_tensor *rows = md_tensor_vector_i64(2, (int64_t[]){ 1, 2 });
  ds_dataset *one = ds_dataset_from_files(1, (const char *[]){ "only" }, 1, &rows, NULL);
  ds_dataset *one_b = ds_dataset_batch(one, 2, 0, NULL);
  /* 1 file for 2 workers, under AUTO too: TF's shard keeps require_non_empty, so distributing
  ** works and the first element fails with InvalidArgumentError, as ShardDatasetOpTest's
  ** NoElemForEachShard; the second worker's shard is empty. */
  ds_status_clear(&st);
  ds_input_dataset *dd = ds_input_distribute_dataset(&l, one_b, NULL, &st);
  assert_non_null(dd);
  ds_input_iterator *it = ds_input_iterator_new(dd);
  ds_value *x = NULL;
  assert_int_equal(ds_input_get_next(it, &x, &st), -1);
  assert_int_equal(st.kind, DS_INVALID_ARGUMENT_ERROR);
  assert_non_null(strstr(st.message, "only has 1 file(s), which is not enough for the required 2"));
  ds_dataset_iterator *second = ds_dataset_make_iterator((ds_dataset *)ds_input_dataset_pipeline(dd, 1));
  md_tensor *none[1];
  ds_status_clear(&st);
  while (ds_dataset_get_next(second, none, &st) == 0) {  /* the rebatch's size-0 slots, then the end */
    assert_int_equal(none[0]->size, 0);
    md_tensor_free(none[0]);
  }
  assert_int_equal(st.kind, DS_OUT_OF_RANGE_ERROR);
  ds_dataset_iterator_free(second);
  ds_input_iterator_free(it);
  ds_input_dataset_free(dd);
  md_tensor_free(rows);
  ds_dataset_free(one);
  ds_dataset_free(one_b);
  ds_dataset_free(file);
  ds_dataset_free(hint);
  ds_dataset_free(batched);
  ds_dataset_free(scalars);
}

/* InputContext(): (1, 0, 1). get_per_replica_batch_size(8) with 2 replicas is 4; 7 is a
** ValueError. */
static void input_context(void **state) {
  (void)state;
  ds_input_context c = ds_input_context_default();
  assert_int_equal(c.num_input_pipelines, 1);
  assert_int_equal(c.input_pipeline_id, 0);
  assert_int_equal(c.num_replicas_in_sync, 1);
  c.num_replicas_in_sync = 2;
  assert_int_equal(ds_input_context_per_replica_batch_size(&c, 8, NULL), 4);
  ds_status st;
  ds_status_clear(&st);
  assert_int_equal(ds_input_context_per_replica_batch_size(&c, 7, &st), -1);
  assert_int_equal(st.kind, DS_VALUE_ERROR);
  ds_input_options o = ds_input_options_default();
  assert_true(o.fetch_to_device);
  assert_int_equal(o.replication_mode, DS_INPUT_PER_WORKER);
  assert_false(o.place_dataset_on_device);
  assert_int_equal(o.per_replica_buffer_size, 1);
}

/* What a dataset_fn was called with. */
typedef struct seen {
  ds_input_context ctx[8]; /* the contexts, in call order */
  int calls;               /* how many calls */
} seen;

/* The Strategy page's dataset_fn: per-replica batch of global 8,
** from_tensors([[1.]]).repeat().batch(b).shard(num_input_pipelines, input_pipeline_id). */
static ds_dataset *ones_fn(const ds_input_context *ctx, void *user, ds_status *st) {
  seen *s = user;
  s->ctx[s->calls++] = *ctx;
  int64_t b = ds_input_context_per_replica_batch_size(ctx, 8, st);
  if (b < 0) return NULL;
  md_tensor *one = md_tensor_from(MD_FLOAT32, 2, (int64_t[]){ 1, 1 }, (float[]){ 1 });
  ds_dataset *t = ds_dataset_from_tensors(1, &one, st);
  md_tensor_free(one);
  ds_dataset *r = ds_dataset_repeat(t, -1), *bt = ds_dataset_batch(r, b, 0, st);
  ds_dataset *sh = ds_dataset_shard(bt, ctx->num_input_pipelines, ctx->input_pipeline_id, st);
  ds_dataset_free(t);
  ds_dataset_free(r);
  ds_dataset_free(bt);
  return sh;
}

/* With GPU:0 and GPU:1, dataset_fn runs once with InputContext(1, 0, 2), batches 8 / 2 = 4, and
** each replica dequeues its own batch of shape [4, 1, 1], all ones. */
static void datasets_from_function_documented_example(void **state) {
  (void)state;
  ds_input_layout l = mirrored_two();
  seen s = { .calls = 0 };
  ds_input_dataset *dd = ds_input_distribute_datasets_from_function(&l, ones_fn, &s, NULL, NULL);
  assert_non_null(dd);
  assert_int_equal(s.calls, 1);
  assert_int_equal(s.ctx[0].num_input_pipelines, 1);
  assert_int_equal(s.ctx[0].num_replicas_in_sync, 2);
  ds_input_iterator *it = ds_input_iterator_new(dd);
  ds_value *v[1];
  assert_int_equal(ds_input_get_next(it, v, NULL), 0);
  for (int r = 0; r < 2; r++) {
    const md_tensor *t = ds_value_component(v[0], r);
    assert_int_equal(t->rank, 3);
    assert_int_equal(t->shape[0], 4);
    expect_replica(v[0], r, 4, (double[]){ 1, 1, 1, 1 });
  }
  ds_value_free(v[0]);
  ds_input_iterator_free(it);
  ds_input_dataset_free(dd);
}

static ds_dataset *range_fn(const ds_input_context *ctx, void *user, ds_status *st) {
  seen *s = user;
  s->ctx[s->calls++] = *ctx;
  int64_t b = ds_input_context_per_replica_batch_size(ctx, 2, st);
  if (b < 0) return NULL;
  ds_dataset *r = ds_dataset_range(10 * ctx->input_pipeline_id, 10 * ctx->input_pipeline_id + 4,
                                   1, st);
  ds_dataset *d = ds_dataset_batch(r, b, 0, st);
  ds_dataset_free(r);
  return d;
}

/* PER_WORKER on one worker: range(4).batch(2 / 2 = 1) once; its replicas take turns: ([0], [1])
** then ([2], [3]). PER_REPLICA: the function runs per replica with InputContext(2, r, 2), replica
** r reads range(10r, 10r + 4).batch(1): ([0], [10]). TPUStrategy refuses PER_REPLICA. */
static void datasets_from_function_modes(void **state) {
  (void)state;
  ds_input_layout l = mirrored_two();
  seen s = { .calls = 0 };
  ds_input_dataset *dd = ds_input_distribute_datasets_from_function(&l, range_fn, &s, NULL, NULL);
  ds_input_iterator *it = ds_input_iterator_new(dd);
  expect_step(it, 2, (size_t[]){ 1, 1 }, (const double *[]){ (double[]){ 0 }, (double[]){ 1 } });
  expect_step(it, 2, (size_t[]){ 1, 1 }, (const double *[]){ (double[]){ 2 }, (double[]){ 3 } });
  expect_end(it);
  ds_input_iterator_free(it);
  ds_input_dataset_free(dd);
  ds_input_options o = ds_input_options_default();
  o.replication_mode = DS_INPUT_PER_REPLICA;
  s.calls = 0;
  dd = ds_input_distribute_datasets_from_function(&l, range_fn, &s, &o, NULL);
  assert_int_equal(s.calls, 2);
  assert_int_equal(s.ctx[1].num_input_pipelines, 2);
  assert_int_equal(s.ctx[1].input_pipeline_id, 1);
  it = ds_input_iterator_new(dd);
  expect_step(it, 2, (size_t[]){ 1, 1 }, (const double *[]){ (double[]){ 0 }, (double[]){ 10 } });
  ds_input_iterator_free(it);
  ds_input_dataset_free(dd);
  l.tpu = 1;
  ds_status st;
  ds_status_clear(&st);
  TU_EXPECT_REFUSED(ds_input_distribute_datasets_from_function(&l, range_fn, &s, &o, &st), &st,
                 DS_NOT_IMPLEMENTED_ERROR);
  o.fetch_to_device = 1;
  o.place_dataset_on_device = 1;
  l.tpu = 0;
  ds_status_clear(&st);
  TU_EXPECT_REFUSED(ds_input_distribute_datasets_from_function(&l, range_fn, &s, &o, &st), &st,
                 DS_VALUE_ERROR);
  l = two_by_two();  /* PER_WORKER on 2 workers: InputContext(2, w, 4) */
  s.calls = 0;
  ds_input_options per_worker = ds_input_options_default();
  ds_status_clear(&st);
  dd = ds_input_distribute_datasets_from_function(&l, range_fn, &s, &per_worker, &st);
  assert_null(dd);  /* 2 % 4: get_per_replica_batch_size's ValueError comes through */
  assert_int_equal(st.kind, DS_VALUE_ERROR);
  assert_int_equal(s.ctx[0].num_input_pipelines, 2);
  assert_int_equal(s.ctx[0].num_replicas_in_sync, 4);
}

static md_tensor *constant_one(const ds_input_value_context *ctx, void *user, ds_status *st) {
  (void)ctx; (void)user; (void)st;
  return md_tensor_scalar_f32(1);
}

static md_tensor *from_array(const ds_input_value_context *ctx, void *user, ds_status *st) {
  (void)st;
  return md_tensor_scalar_f32(((const float *)user)[ctx->replica_id_in_sync_group]);
}

static md_tensor *num_replicas(const ds_input_value_context *ctx, void *user, ds_status *st) {
  (void)user; (void)st;
  int32_t n = ctx->num_replicas_in_sync;
  return md_tensor_from(MD_INT32, 0, NULL, &n);
}

static md_tensor *share(const ds_input_value_context *ctx, void *user, ds_status *st) {
  (void)user; (void)st;
  return md_tensor_scalar_f32((float)ctx->replica_id_in_sync_group /
                              (float)ctx->num_replicas_in_sync);
}

/* experimental_distribute_values_from_function's examples on GPU:0, GPU:1:
**   1. tf.constant(1.)            -> local results (1.0, 1.0)
**   2. array [3., 2., 1.][replica] -> (3.0, 2.0)
**   3. ctx.num_replicas_in_sync   -> (2, 2)
** and ValueContext's: built directly with replica 2 of 4, replica / num_replicas = 0.5. */
static void values_from_function_documented_examples(void **state) {
  (void)state;
  ds_input_layout l = mirrored_two();
  float array[3] = { 3, 2, 1 };
  ds_input_value_fn fns[3] = { constant_one, from_array, num_replicas };
  double want[3][2] = { { 1, 1 }, { 3, 2 }, { 2, 2 } };
  for (int e = 0; e < 3; e++) {
    ds_value *v = ds_input_distribute_values_from_function(&l, fns[e], array, NULL);
    assert_int_equal(ds_value_kind_of(v), DS_VALUE_PER_REPLICA);
    assert_int_equal(ds_value_num_components(v), 2);
    for (int r = 0; r < 2; r++) {
      assert_true(md_tensor_get(ds_value_component(v, r), 0) == want[e][r]);
      assert_string_equal(ds_value_device(v, r), two_gpus[r]);
    }
    assert_int_equal(ds_value_component(v, 0)->dtype, e == 2 ? MD_INT32 : MD_FLOAT32);
    ds_value_free(v);
  }
  ds_input_value_context direct = { .replica_id_in_sync_group = 2, .num_replicas_in_sync = 4 };
  md_tensor *half = share(&direct, NULL, NULL);
  assert_true(md_tensor_get(half, 0) == 0.5);
  md_tensor_free(half);
  l = two_by_two();  /* worker 1's replicas are 2 and 3 of 4: 0.5 and 0.75 */
  l.worker_index = 1;
  ds_value *v = ds_input_distribute_values_from_function(&l, share, NULL, NULL);
  assert_int_equal(ds_value_num_components(v), 2);
  assert_true(md_tensor_get(ds_value_component(v, 0), 0) == 0.5);
  assert_true(md_tensor_get(ds_value_component(v, 1), 0) == 0.75);
  ds_value_free(v);
}

/* TF1: make_dataset_iterator gives experimental_distribute_dataset's steps, and initialize()
** starts over; make_input_fn_iterator runs input_fn per worker and refuses PER_REPLICA. */
static void tf1_iterators(void **state) {
  (void)state;
  ds_input_layout l = mirrored_two();
  ds_dataset *d = range_batch(4, 2, 0);
  ds_input_iterator *it = ds_input_make_dataset_iterator(&l, d, NULL);
  ds_dataset_free(d);
  expect_step(it, 2, (size_t[]){ 1, 1 }, (const double *[]){ (double[]){ 0 }, (double[]){ 1 } });
  ds_input_iterator_initialize(it);
  expect_step(it, 2, (size_t[]){ 1, 1 }, (const double *[]){ (double[]){ 0 }, (double[]){ 1 } });
  expect_step(it, 2, (size_t[]){ 1, 1 }, (const double *[]){ (double[]){ 2 }, (double[]){ 3 } });
  expect_end(it);
  ds_input_iterator_free(it);
  seen s = { .calls = 0 };
  it = ds_input_make_input_fn_iterator(&l, range_fn, &s, DS_INPUT_PER_WORKER, NULL);
  assert_int_equal(s.calls, 1);
  expect_step(it, 2, (size_t[]){ 1, 1 }, (const double *[]){ (double[]){ 0 }, (double[]){ 1 } });
  ds_input_iterator_free(it);
  ds_status st;
  ds_status_clear(&st);
  assert_null(ds_input_make_input_fn_iterator(&l, range_fn, &s, DS_INPUT_PER_REPLICA, &st));
  assert_int_equal(st.kind, DS_VALUE_ERROR);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(distribute_dataset_documented_example),
    cmocka_unit_test(batch_sizes_for_workers),
    cmocka_unit_test(file_sharding_documented_example),
    cmocka_unit_test(data_sharding_keeps_every_wth_slice),
    cmocka_unit_test(shared_data_stream_matches_per_worker_pipelines),
    cmocka_unit_test(off_policy_reads_everything_everywhere),
    cmocka_unit_test(last_partial_batch),
    cmocka_unit_test(short_batch_fills_early_replicas),
    cmocka_unit_test(optional_only_when_needed),
    cmocka_unit_test(worker_view_holds_local_replicas),
    cmocka_unit_test(distribute_dataset_errors),
    cmocka_unit_test(input_context),
    cmocka_unit_test(datasets_from_function_documented_example),
    cmocka_unit_test(datasets_from_function_modes),
    cmocka_unit_test(values_from_function_documented_examples),
    cmocka_unit_test(tf1_iterators),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
