/*
** test_ps_train.c: parameter_server scenarios run end to end (scenarios/programs/ps_train.c) with the data
** in tests/data/ps/: one worker is sequential training (golden r1), four workers converge with
** stale updates, placement is round-robin, worker preemptions keep exactly-once accounting, and
** a lost ps or chief restarts from the checkpoint or fails the job; an embedding reads its rows
** and pushes IndexedSlices.
*/
#include "tests/testutil.h"

#include <math.h>
#include <string.h>

#include <jansson.h>

#include "models/optimizer.h"
#include "scenarios/programs/input_plan.h"
#include "scenarios/programs/train.h"
#include "scenarios/programs/trainInt.h"

static int run(const char *name, const char *out, run_summary *sum) {
  char rel[256];
  static scenario s;
  scn_error err;
  snprintf(rel, sizeof rel, "tests/data/ps/%s.yaml", name);
  if (scenario_load(tu_src(rel), NULL, 0, &s, &err) != 0) fail_msg("%s", err.msg);
  int rc = train_run(&s, out, sum, &err);
  if (rc == TR_EXIT_INPUT) fail_msg("%s", err.msg);
  return rc;
}

/* One worker, one ps: every closure reads what the previous one pushed, so the run is the golden
** single-device r1 within |got - expected| <= 1e-5 + 1e-5*|expected| (loss at every step and
** all 195 weights); staleness is 0 everywhere. */
static void one_worker_is_golden_r1(void **state) {
  (void)state;
  char *out = tu_temp_dir("podsim-ps");
  run_summary sum;
  assert_int_equal(run("r1_one_worker", out, &sum), TR_EXIT_OK);
  assert_int_equal(sum.steps_completed, 50);
  static double got[256], want[256], stale[256];
  char path[512];
  snprintf(path, sizeof path, "%s/metrics.csv", out);
  assert_int_equal(tu_read_column(path, 3, got, 256, NULL), 50);
  assert_int_equal(tu_read_column(path, 6, stale, 256, NULL), 50);
  assert_int_equal(tu_read_column(tu_src("tests/golden/mlp_momentum/r1/expected_loss.csv"), 1, want, 256, NULL), 50);
  for (int i = 0; i < 50; i++) {
    if (!TU_GOLDEN_CLOSE(got[i], want[i])) fail_msg("step %d loss %.9g, expected %.9g", i, got[i], want[i]);
    assert_true(stale[i] == 0);
  }
  snprintf(path, sizeof path, "%s/final_weights.csv", out);
  assert_int_equal(tu_read_column(path, 2, got, 256, NULL), 195);
  assert_int_equal(tu_read_column(tu_src("tests/golden/mlp_momentum/r1/expected_final.csv"), 2, want, 256, NULL), 195);
  for (int i = 0; i < 195; i++)
    if (!TU_GOLDEN_CLOSE(got[i], want[i])) fail_msg("weight %d %.9g, expected %.9g", i, got[i], want[i]);
  tu_remove_dir(out);
}

/* Four workers on two ps tasks, 200 steps: every worker runs 50 closures; the loss falls from
** 1.750 (step 0 reads the initial values: r1's first loss) below 0.15; some updates are stale
** (up to the other 3 workers' updates between a read and its push); the seed page's round robin
** puts dense/kernel (and its slot) on ps 0, dense/bias on ps 1, dense_1/kernel on ps 0,
** dense_1/bias on ps 1 and iterations on ps 0: 5 components on ps 0, 4 on ps 1. */
static void four_workers_converge_with_staleness(void **state) {
  (void)state;
  char *out = tu_temp_dir("podsim-ps");
  run_summary sum;
  assert_int_equal(run("four_workers", out, &sum), TR_EXIT_OK);
  assert_int_equal(sum.steps_completed, 200);
  static double loss[256], worker[256], stale[256];
  char path[512];
  snprintf(path, sizeof path, "%s/metrics.csv", out);
  assert_int_equal(tu_read_column(path, 3, loss, 256, NULL), 200);
  assert_int_equal(tu_read_column(path, 5, worker, 256, NULL), 200);
  assert_int_equal(tu_read_column(path, 6, stale, 256, NULL), 200);
  int per_worker[4] = {0}, max_stale = 0;
  for (int i = 0; i < 200; i++) {
    per_worker[(int)worker[i]]++;
    if (stale[i] > max_stale) max_stale = (int)stale[i];
  }
  for (int w = 0; w < 4; w++) assert_int_equal(per_worker[w], 50);
  assert_true(max_stale > 0 && max_stale <= 3);
  assert_true(fabs(loss[0] - 1.75016615) < 1e-6);
  assert_true(sum.final_loss < 0.15);
  static char names[16][64];
  double dummy[16];
  snprintf(path, sizeof path, "%s/variables.csv", out);
  assert_int_equal(tu_read_column(path, 1, dummy, 16, names), 9);
  FILE *f = fopen(path, "r");
  char line[256];
  int on_ps0 = 0, on_ps1 = 0;
  while (fgets(line, sizeof line, f)) {
    on_ps0 += strstr(line, "/job:ps/replica:0/task:0/device:CPU:0") != NULL;
    on_ps1 += strstr(line, "/job:ps/replica:0/task:1/device:CPU:0") != NULL;
    if (!strncmp(line, "dense/bias:0,", 13) || !strncmp(line, "dense_1/bias:0,", 15))
      assert_non_null(strstr(line, "task:1"));
  }
  fclose(f);
  assert_int_equal(on_ps0, 5);
  assert_int_equal(on_ps1, 4);
  tu_remove_dir(out);
}

/* Worker 0 preempted (down 1 ms) in step 0, whose phases are (trace): the four variables and
** iterations read together 0-10.394 us, compute 10.394-11.436 us, then the push 11.436 us on,
** its four gradients sharing the links and arriving 21.46 (dense_1/bias, 12 bytes), 21.538
** (dense/bias), 21.666 (dense_1/kernel) and 21.826 us (dense/kernel). At 5 us (reading) and 11 us
** (computing) nothing reached a ps: retried 1, duplicated 0, and the run ends as the undisturbed
** one (the worker's iterator restarts at batch 0, as the closure did); at 21.6 us the two biases
** had arrived, so the retry applies them again: duplicated 1. Every step is applied once: 50
** rows. */
static void preempted_worker_exactly_once(void **state) {
  (void)state;
  static const char *const NAMES[] = {"preempt_reads", "preempt_compute", "preempt_push"};
  static const long DUP[] = {0, 0, 1};
  for (int i = 0; i < 3; i++) {
    char *out = tu_temp_dir("podsim-ps");
    run_summary sum;
    assert_int_equal(run(NAMES[i], out, &sum), TR_EXIT_OK);
    assert_int_equal(sum.preemptions, 1);
    assert_int_equal(sum.retried_closures, 1);
    assert_int_equal(sum.duplicated_updates, DUP[i]);
    assert_int_equal(sum.steps_completed, 50);
    if (DUP[i] == 0) assert_true(fabs(sum.final_loss - 0.136793193122791) < 1e-12);
    tu_remove_dir(out);
  }
}

/* A fault with at_step N strikes as a worker starts the closure of step N (docs/faults.md):
** preempt_reads' worker preempted as step 0's or step 30's closure starts has done nothing, so
** the closure runs again once (retried 1, duplicated 0) from the queue's tail, and the run ends
** exactly 1 ms (down_for) after the undisturbed one (r1_one_worker). Back from the failure the
** worker's iterator starts again at batch 0, as TF's does: preempted at step 0 that is the batch
** it was reading, so the run ends with the undisturbed loss; at step 30 it is not. */
static void at_step_strikes_as_the_closure_starts(void **state) {
  (void)state;
  static const char *const FAULTS[] = {"faults=[{kind: preempt, target: worker:0, at_step: 0, down_for: 1ms}]",
                                       "faults=[{kind: preempt, target: worker:0, at_step: 30, down_for: 1ms}]"};
  static scenario s;
  scn_error err;
  run_summary undisturbed;  /* r1_one_worker is preempt_reads without its fault */
  char *out = tu_temp_dir("podsim-ps");
  assert_int_equal(run("r1_one_worker", out, &undisturbed), TR_EXIT_OK);
  for (int i = 0; i < 2; i++) {
    run_summary sum;
    assert_int_equal(scenario_load(tu_src("tests/data/ps/preempt_reads.yaml"), FAULTS + i, 1, &s, &err), 0);
    assert_int_equal(train_run(&s, out, &sum, &err), TR_EXIT_OK);
    assert_int_equal(sum.preemptions, 1);
    assert_int_equal(sum.retried_closures, 1);
    assert_int_equal(sum.duplicated_updates, 0);
    assert_int_equal(sum.steps_completed, 50);
    if (i == 0) assert_true(sum.final_loss == undisturbed.final_loss);
    assert_int_equal(llround(sum.sim_time_s * 1e12), llround(undisturbed.sim_time_s * 1e12) + 1000000000);
  }
  tu_remove_dir(out);
}

/* ps 0 fails at 0.45 ms (2 workers, two steps of 32.86175 us at a time): without
** training.restart the job fails, exit 3, UnavailableError on the ps's device, after 26 applied
** steps (13 pairs end at 0.4272 ms). With a checkpoint every 10 steps and restart.delay 1 ms: the
** last checkpoint is step 20 (written by 0.4125335 ms), steps 20-21 had been applied since
** (0.44539525 ms: lost_steps 2), the chief restarts at 2.45 ms (down_for 2 ms > delay) and redoes
** them: 52 rows, 50 steps kept, 4 checkpoints. The chief lost the same way at 0.45 ms (20-21
** end 0.44539525, 22-23 run 0.44539525-0.478257 ms) takes its queue with it: 24-29 never run;
** 22 and 23 finish at 0.478257 ms and push, and the restore at 2.45 ms rolls them back with
** 20-21: 4 lost, 54 rows, the restarted process redoing 20-49. */
static void lost_ps_or_chief(void **state) {
  (void)state;
  char *out = tu_temp_dir("podsim-ps");
  run_summary sum;
  assert_int_equal(run("ps_lost", out, &sum), TR_EXIT_JOB_FAILED);
  assert_true(sum.failed);
  assert_string_equal(sum.error.kind, "UnavailableError");
  assert_string_equal(sum.error.device, "/job:ps/replica:0/task:0/device:CPU:0");
  assert_int_equal(sum.steps_completed, 26);
  assert_int_equal(run("ps_lost_restart", out, &sum), TR_EXIT_OK);
  assert_int_equal(sum.steps_completed, 50);
  assert_int_equal(sum.lost_steps, 2);
  assert_int_equal(sum.lost_updates, 2);
  assert_int_equal(sum.restarts, 1);
  assert_int_equal(sum.checkpoints, 4);
  uint64_t first = sum.run_hash;
  assert_int_equal(run("ps_lost_restart", out, &sum), TR_EXIT_OK);
  assert_true(sum.run_hash == first);
  assert_int_equal(run("chief_lost_restart", out, &sum), TR_EXIT_OK);
  assert_int_equal(sum.steps_completed, 50);
  assert_int_equal(sum.lost_steps, 4);
  assert_int_equal(sum.lost_updates, 4);
  assert_int_equal(sum.restarts, 1);
  static double step[64], end[64], attempt[64];
  char path[512];
  snprintf(path, sizeof path, "%s/metrics.csv", out);
  assert_int_equal(tu_read_column(path, 0, step, 64, NULL), 54);
  assert_int_equal(tu_read_column(path, 1, end, 64, NULL), 54);
  assert_int_equal(tu_read_column(path, 5, attempt, 64, NULL), 54);
  for (int i = 0; i < 24; i++) assert_true(step[i] == i && attempt[i] == 0);
  assert_true(fabs(end[22] - 0.000478257) < 1e-15 && fabs(end[23] - 0.000478257) < 1e-15);
  for (int i = 24; i < 54; i++) assert_true(step[i] == i - 4 && attempt[i] == 1);
  tu_remove_dir(out);
}

/* Worker RAM. r1's worker holds while a closure runs: the 195 parameters it read (780 B), the
** activations of a batch of 32 (input 8 + dense 16 twice, z and relu + dense_1 3: 43 floats an
** example, 4 x 32 x 43 = 5504 B), the 195 gradients it pushes (780 B) and 32 labels (128 B):
** 7192 B, the worker's peak (the ps holds 1568 B: 195 values, 195 momentum slots, iterations), so
** the summary's peak is the worker's. A batch of 4096 on 512 KiB: 780 + 4 x 4096 x 43 (704512) +
** 780 + 16384 = 722456 B do not fit: ResourceExhaustedError on the worker, exit 3, no row. */
static void worker_ram(void **state) {
  (void)state;
  char *out = tu_temp_dir("podsim-ps");
  run_summary sum;
  assert_int_equal(run("r1_one_worker", out, &sum), TR_EXIT_OK);
  assert_int_equal(sum.memory_peak_bytes, 7192);
  assert_int_equal(sum.memory_capacity_bytes, (uint64_t)32 << 30);
  assert_int_equal(run("worker_oom", out, &sum), TR_EXIT_JOB_FAILED);
  assert_string_equal(sum.error.kind, "ResourceExhaustedError");
  assert_string_equal(sum.error.device, "/job:worker/replica:0/task:0/device:CPU:0");
  assert_int_equal(sum.error.needed_bytes, 722456);
  assert_int_equal(sum.error.capacity_bytes, 512 << 10);
  assert_int_equal(sum.steps_completed, 0);
  tu_remove_dir(out);
}

/* Goodput by hand. r1 with one worker: every closure takes T = 31.951875 us (trace: the reads of
** its 4 variables and iterations together, 10 us + 788 bytes at the 2 GB/s NIC = 10.394 us;
** compute 1.042; the push, 10 us + 780 bytes = 10.39; the ps applying it 0.121875; iterations +=
** 1, 10.004), 50 of them back to back end at 1597.59375 us: goodput 1. preempt_compute preempts
** the worker at 11 us inside closure 0 (its compute) for 1 ms: the 11 us attempt is lost, the
** worker is down 11-1011 us, closure 0 runs again from 1011 us and the 50 closures end at 1011 +
** 50 T = 2608.59375 us. Kept closure time 50 T = 1597.59375 us; goodput = 50 T / (1 worker x
** 2608.59375) = 0.612434860..., worker_utilization = 50 T / (2608.59375 - 1000 up) = 0.993161729... */
static void goodput_by_hand(void **state) {
  (void)state;
  char *out = tu_temp_dir("podsim-ps");
  run_summary sum;
  assert_int_equal(run("r1_one_worker", out, &sum), TR_EXIT_OK);
  assert_true(sum.goodput == 1.0 && sum.worker_utilization == 1.0);
  assert_int_equal(run("preempt_compute", out, &sum), TR_EXIT_OK);
  assert_true(fabs(sum.sim_time_s - 2608.59375e-6) < 1e-15);
  assert_true(fabs(sum.goodput - 1597593750.0 / 2608593750.0) < 1e-15);
  assert_true(fabs(sum.worker_utilization - 1597593750.0 / 1608593750.0) < 1e-15);
  tu_remove_dir(out);
}

/* Sequential training of the scenario's model, step k on batch k: each variable updated with
** the dense kernel, the embedding with the sparse one on its IndexedSlices (the batch's ids,
** md_grads.slices) when sparse is 1; by_dataset: batch k is the k-th element of the worker's
** dataset program (input_plan.h's inp_worker_dataset) rather than the unshuffled rule. The
** weights, flattened in variable order, into out. */
static size_t reference_reading(const scenario *s, int sparse, int by_dataset, float *out) {
  scn_error err;
  train_input in = { .s = s };
  md_model *m = NULL;
  assert_int_equal(train_build_model(s, &m, &err), TR_EXIT_OK);
  assert_int_equal(train_load_data(&in, m, &err), TR_EXIT_OK);
  assert_int_equal(train_count_steps(&in, &err), TR_EXIT_OK);
  md_workspace *ws = md_workspace_new(m);
  md_grads *g = md_grads_new(m);
  int nv = md_model_num_vars(m), width = in.data->width;
  ds_dataset *program = by_dataset ? inp_worker_dataset(&in, NULL) : NULL;
  ds_dataset_iterator *it = program ? ds_dataset_make_iterator(program) : NULL;
  float *slots[8][2] = {{NULL}};
  for (int i = 0; i < nv; i++) slots[i][0] = calloc(md_model_var(m, i)->size, sizeof(float));
  int32_t ids[64 * 3], labels[64];
  int64_t ids64[64 * 3];
  for (long k = 0; k < in.steps; k++) {
    /* Steps with repeat: batch k is the G rows from (k * G) mod rows on, wrapping, unless the
    ** rows come from the worker's dataset program. */
    int n = s->global_batch;
    if (it) {
      md_tensor *rows[1];
      assert_int_equal(ds_dataset_get_next(it, rows, NULL), 0);
      n = (int)rows[0]->size;
      md_dataset_gather_rows(in.data, md_tensor_i64(rows[0]), n, NULL, ids, labels, NULL);
      md_tensor_free(rows[0]);
    } else {
      md_dataset_gather(in.data, (size_t)k * (size_t)n % in.data->rows, n, NULL, ids, labels, NULL);
    }
    md_batch b = { n, NULL, ids, labels, NULL };
    md_model_train_step(m, ws, &b, train_loss_scale(s, n), g, NULL, NULL);
    for (int i = 0; i < nv; i++) {
      md_var *v = md_model_var(m, i);
      if (sparse && md_grads_slices(g, i) != NULL) {
        for (int j = 0; j < n * width; j++) ids64[j] = ids[j];
        md_optimizer_update_sparse(&s->optimizer, k + 1, v->data, (size_t)v->shape[0], (size_t)v->shape[1], ids64,
                                   md_grads_slices(g, i), (size_t)n * width, slots[i], NULL);
      } else {
        md_optimizer_update(&s->optimizer, k + 1, v->data, g->g[i], slots[i], v->size, NULL);
      }
    }
  }
  size_t total = 0;
  for (int i = 0; i < nv; i++) {
    memcpy(out + total, md_model_var(m, i)->data, md_model_var(m, i)->size * sizeof(float));
    total += md_model_var(m, i)->size;
    free(slots[i][0]);
  }
  ds_dataset_iterator_free(it);
  ds_dataset_free(program);
  md_grads_free(g);
  md_workspace_free(ws);
  md_model_free(m);
  md_dataset_free(in.data);
  return total;
}

static size_t reference(const scenario *s, int sparse, float *out) {
  return reference_reading(s, sparse, 0, out);
}

/* The first transfer in trace.json that starts at ts (us) on the fabric link named `track` (or
** one of its overlap rows, "track [2]"...): its bytes and duration. */
static void comm_at(const char *trace, const char *track, double ts, double *bytes, double *dur) {
  json_error_t e;
  json_t *root = json_load_file(trace, 0, &e), *ev = json_object_get(root, "traceEvents"), *x;
  size_t i, len = strlen(track);
  json_int_t tids[16];
  int ntids = 0;
  *bytes = *dur = -1;
  json_array_foreach(ev, i, x) {
    const char *name = json_string_value(json_object_get(json_object_get(x, "args"), "name"));
    if (name && strncmp(name, track, len) == 0 && (name[len] == '\0' || name[len] == ' ') && ntids < 16)
      tids[ntids++] = json_integer_value(json_object_get(x, "tid"));
    int on = 0;
    for (int k = 0; k < ntids; k++) on |= json_integer_value(json_object_get(x, "tid")) == tids[k];
    if (*bytes < 0 && on && strcmp(json_string_value(json_object_get(x, "name")), "comm") == 0 &&
        fabs(json_number_value(json_object_get(x, "ts")) - ts) < 1e-9) {
      *bytes = json_number_value(json_object_get(json_object_get(x, "args"), "bytes"));
      *dur = json_number_value(json_object_get(x, "dur"));
    }
  }
  json_decref(root);
}

/* An Embedding(20, 4) split by MinSizePartitioner over 2 ps (rows 0-9, 10-19), one worker, SGD
** momentum 0.9, 30 steps of 2 examples x 3 ids. The final weights equal, bit for bit, sequential
** training that applies the embedding's IndexedSlices with the sparse momentum kernel, and not
** the dense kernel's (rows outside a batch keep their momentum and do not move).
** Step 0 looks up ids [9 4 11 | 5 12 11] while it reads dense/kernel (48 bytes, ps 0), dense/bias
** (12, ps 1) and iterations (8, ps 0), all from 0: first each shard receives its 3 int64 ids, 24
** bytes on each ps's down link (fabric.t1.down: ps 0, t2.down: ps 1), both sharing the worker's
** up link at 0.5 GB/s (the reads come the other way): 10 us + 48 ns = 10.048 us; then 3 rows come
** back from each shard, 3 x 16 = 48 bytes on each ps's up link (a whole shard would be 160),
** starting at 10.048 us, sharing the worker's down link once their latency is over (the reads
** were done at 10.068 us): 10 us + 96 ns = 10.096 us (the whole table: 10.320). The step's reads
** end at 20.144 us: the lookup's two trips, not four variables' latencies one after another. */
static void embedding_pushes_indexed_slices(void **state) {
  (void)state;
  char *out = tu_temp_dir("podsim-ps");
  run_summary sum;
  assert_int_equal(run("embedding_one_worker", out, &sum), TR_EXIT_OK);
  assert_int_equal(sum.steps_completed, 30);
  static scenario s;
  scn_error err;
  assert_int_equal(scenario_load(tu_src("tests/data/ps/embedding_one_worker.yaml"), NULL, 0, &s, &err), 0);
  static float sparse[128], dense[128];
  static double got[128];
  assert_int_equal(reference(&s, 1, sparse), 95);
  assert_int_equal(reference(&s, 0, dense), 95);
  char path[512];
  snprintf(path, sizeof path, "%s/final_weights.csv", out);
  assert_int_equal(tu_read_column(path, 2, got, 128, NULL), 95);
  int differ = 0;
  for (int i = 0; i < 95; i++) {
    if ((float)got[i] != sparse[i]) fail_msg("weight %d %.9g, the sparse reference %.9g", i, got[i], sparse[i]);
    differ += sparse[i] != dense[i];
  }
  assert_true(differ > 0);
  double bytes, dur;
  snprintf(path, sizeof path, "%s/trace.json", out);
  for (int ps = 1; ps <= 2; ps++) {
    char track[32];
    snprintf(track, sizeof track, "fabric.t%d.down", ps);
    comm_at(path, track, 0, &bytes, &dur);
    assert_true(bytes == 24);
    assert_true(fabs(dur - 10.048) < 1e-9);
    snprintf(track, sizeof track, "fabric.t%d.up", ps);
    comm_at(path, track, 10.048, &bytes, &dur);
    assert_true(bytes == 48);
    assert_true(fabs(dur - 10.096) < 1e-9);
  }
  tu_remove_dir(out);
}

/* dataset.shuffle {buffer: 16} on the embedding run: the worker reads its copy of the shuffled
** dataset in order, so the weights equal, bit for bit, sequential training on the batches that
** program yields, and differ from the unshuffled run's. */
static void worker_reads_its_shuffled_copy(void **state) {
  (void)state;
  static scenario s;
  scn_error err;
  const char *sets[] = {"dataset.shuffle={buffer: 16}"};
  assert_int_equal(scenario_load(tu_src("tests/data/ps/embedding_one_worker.yaml"), sets, 1, &s, &err), 0);
  char *out = tu_temp_dir("podsim-ps");
  run_summary sum;
  assert_int_equal(train_run(&s, out, &sum, &err), TR_EXIT_OK);
  static float shuffled[128], plain[128];
  static double got[128];
  assert_int_equal(reference_reading(&s, 1, 1, shuffled), 95);
  assert_int_equal(reference(&s, 1, plain), 95);
  char path[512];
  snprintf(path, sizeof path, "%s/final_weights.csv", out);
  assert_int_equal(tu_read_column(path, 2, got, 128, NULL), 95);
  int differ = 0;
  for (int i = 0; i < 95; i++) {
    if ((float)got[i] != shuffled[i]) fail_msg("weight %d %.9g, the shuffled reference %.9g", i, got[i], shuffled[i]);
    differ += shuffled[i] != plain[i];
  }
  assert_true(differ > 0);
  tu_remove_dir(out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(one_worker_is_golden_r1),
    cmocka_unit_test(four_workers_converge_with_staleness),
    cmocka_unit_test(preempted_worker_exactly_once),
    cmocka_unit_test(at_step_strikes_as_the_closure_starts),
    cmocka_unit_test(lost_ps_or_chief),
    cmocka_unit_test(embedding_pushes_indexed_slices),
    cmocka_unit_test(worker_reads_its_shuffled_copy),
    cmocka_unit_test(worker_ram),
    cmocka_unit_test(goodput_by_hand),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
