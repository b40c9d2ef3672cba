/*
** test_faults.c: the failure-injection suite for sync training (scenarios/programs/recovery.h,
** scenarios/programs/faults.h). Every run starts from tests/data/faults/tpu.yaml (TPUStrategy on a v4-16
** slice: 8 replicas on 2 hosts, Adam, a checkpoint every 10 steps taking 2.34 ms, steps of
** 267.371009 us of which the all-reduce is 155.36 us (ICI at the 0.746 of spec collectives
** achieve and 5.36 us a collective, sim/tpu.c; 276.753398 and 160.74 with 1.79 us a hop and no
** fusion), the host round trip 100 us (host_s) and the compute 12.011 us: the step's 12 kernels
** at the per-op model's 1 us each plus 11 ns of their own (XLA's fusion, on by default on a TPU,
** makes 12 of the 16 ops: each dense layer's bias and ReLU in its product's epilogue, the ReLU's
** gradient with the kernel gradient's product that reads it; 271.373398 us unfused)) or the CPU base of test_training.c, and
** checks what TensorFlow's recovery would do: the job restarts from the last complete checkpoint,
** no step is lost or applied twice (every step's last row is kept, in order, and the rows are the
** steps plus lost_steps), and the final weights are those of the uninterrupted run to the bit.
*/
#include "tests/testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scenarios/programs/train.h"

enum { MAX_ROWS = 1024 };

typedef struct run {
  int rc;                 /* train_run's exit status */
  run_summary sum;        /* what it reported */
  scn_error err;          /* its input error */
  int n;                  /* rows of metrics.csv */
  double step[MAX_ROWS];  /* step */
  double end[MAX_ROWS];   /* sim_time_s */
  double time[MAX_ROWS];  /* step_time_s */
  double compute[MAX_ROWS]; /* compute_s */
  double comm[MAX_ROWS];  /* comm_s */
  double idle[MAX_ROWS];  /* idle_s */
  char weights[1 << 16];  /* final_weights.csv */
  int trace_has_restart;  /* trace.json marks a restart on the faults track */
  int trace_has_preempt;  /* and a preemption of tpu_host:1 */
} run;

static void slurp(const char *path, char *buf, size_t len) {
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  size_t n = fread(buf, 1, len - 1, f);
  buf[n] = 0;
  fclose(f);
}

static void run_file(run *r, const char *file, const char *const *sets, int nsets) {
  static scenario s;
  static char trace[1 << 22];
  memset(r, 0, sizeof *r);
  if (scenario_load(tu_src(file), sets, nsets, &s, &r->err) != 0) fail_msg("%s", r->err.msg);
  char dir[] = "/tmp/podsim-faults-XXXXXX", path[128];
  assert_non_null(mkdtemp(dir));
  r->rc = train_run(&s, dir, &r->sum, &r->err);
  if (r->rc != TR_EXIT_INPUT) {
    snprintf(path, sizeof path, "%s/metrics.csv", dir);
    r->n = tu_read_column(path, 0, r->step, MAX_ROWS, NULL);
    tu_read_column(path, 1, r->end, MAX_ROWS, NULL);
    tu_read_column(path, 2, r->time, MAX_ROWS, NULL);
    tu_read_column(path, 5, r->compute, MAX_ROWS, NULL);
    tu_read_column(path, 6, r->comm, MAX_ROWS, NULL);
    tu_read_column(path, 7, r->idle, MAX_ROWS, NULL);
    snprintf(path, sizeof path, "%s/final_weights.csv", dir);
    slurp(path, r->weights, sizeof r->weights);
    snprintf(path, sizeof path, "%s/trace.json", dir);
    if (access(path, R_OK) == 0) {
      slurp(path, trace, sizeof trace);
      r->trace_has_restart = strstr(trace, "\"restart from step") != NULL;
      r->trace_has_preempt = strstr(trace, "\"preempt tpu_host:1\"") != NULL;
    }
  }
  snprintf(path, sizeof path, "rm -rf '%s'", dir);
  assert_int_equal(system(path), 0);
}

static void tpu(run *r, const char *const *sets, int n) { run_file(r, "tests/data/faults/tpu.yaml", sets, n); }

/* The uninterrupted TPU run, made once. */
static const run *baseline(void) {
  static run base;
  static int done;
  if (!done) tpu(&base, NULL, 0);
  done = 1;
  assert_int_equal(base.rc, TR_EXIT_OK);
  assert_int_equal(base.n, 40);
  return &base;
}

/* TF's recovery: the job ends with every step applied once, the rows of redone steps before
** their redo; the weights are the uninterrupted run's. */
static void assert_recovered(const run *r, const run *base, long lost) {
  assert_int_equal(r->rc, TR_EXIT_OK);
  assert_int_equal(r->sum.steps_completed, base->sum.steps_completed);
  assert_int_equal(r->sum.lost_steps, lost);
  assert_int_equal(r->n, base->n + lost);
  long next = base->n;  /* scanning back, each kept row is the step just before the last kept */
  for (int i = r->n - 1; i >= 0; i--)
    if ((long)r->step[i] == next - 1) next--;
    else assert_true((long)r->step[i] >= next);  /* a rolled-back row redone later */
  assert_int_equal(next, 0);
  assert_string_equal(r->weights, base->weights);
}

static long ps(double s) { return (long)llround(s * 1e12); }

/* at_step 25 preempts the whole slice at the start of step 25: steps 20..24 ran after the
** checkpoint of step 20 and are lost (5). The job is down 60 s (restart delay), reads the
** checkpoint (2340 B at 1 MB/s: 2.34 ms), recompiles (1 s) and redoes steps 20..39. Against
** the uninterrupted run ending at T, it ends at T + (end of step 24 - end of the step-20
** checkpoint) + 60 s + 2.34 ms + 1 s, the checkpoint ending 2.34 ms after step 19. */
static void slice_preempted_between_checkpoints(void **state) {
  (void)state;
  const run *base = baseline();
  static run r;
  const char *sets[] = {"training.restart.delay=60s", "faults=[{kind: preempt, target: tpu, at_step: 25}]"};
  tpu(&r, sets, 2);
  assert_recovered(&r, base, 5);
  assert_int_equal(r.sum.preemptions, 1);
  assert_int_equal(r.sum.restarts, 1);
  assert_true(r.sum.downtime_s == 60.00234);
  long lost = ps(base->end[24]) - (ps(base->end[19]) + ps(0.00234));
  assert_int_equal(ps(r.sum.sim_time_s), ps(base->sum.sim_time_s) + lost + ps(60) + ps(0.00234) + ps(1));
  assert_true(r.trace_has_restart);
}

/* Host 1 preempted halfway through step 14, inside its all-reduce (the all-reduce is 156 us of
** the 272 us step, after the 100 us round trip and the forward and backward ops, before the
** optimizer's few 1 us updates): the collective fails on every
** rank, the job restarts from the step-10 checkpoint, steps 10..13 are lost (4). */
static void host_preempted_mid_all_reduce(void **state) {
  (void)state;
  const run *base = baseline();
  assert_true(base->comm[14] > 0.5 * base->time[14] + base->compute[14]);
  static run r;
  char fault[160];
  snprintf(fault, sizeof fault, "faults=[{kind: preempt, target: tpu_host:1, at: %.12fs}]",
           base->end[14] - base->time[14] / 2);
  const char *sets[] = {"training.restart.delay=60s", fault};
  tpu(&r, sets, 2);
  assert_recovered(&r, base, 4);
  assert_int_equal(r.sum.restarts, 1);
  assert_int_equal(r.sum.checkpoints, base->sum.checkpoints);
}

/* Host 0 preempted 1.17 ms into the 2.34 ms write of the step-20 checkpoint: that checkpoint is
** lost with the job, which restarts from step 10 and loses 10 steps; it writes checkpoints 20,
** 30 and 40 again, so 4 complete in all, as without the fault. */
static void host_preempted_mid_checkpoint(void **state) {
  (void)state;
  const run *base = baseline();
  static run r;
  char fault[160];
  snprintf(fault, sizeof fault, "faults=[{kind: fail, target: tpu_host:0, at: %.12fs}]", base->end[19] + 0.00117);
  const char *sets[] = {"training.restart.delay=60s", fault};
  tpu(&r, sets, 2);
  assert_recovered(&r, base, 10);
  assert_int_equal(r.sum.failures, 1);
  assert_int_equal(r.sum.preemptions, 0);
  assert_int_equal(r.sum.checkpoints, 4);
}

/* Async checkpoints: the steps never wait (checkpoint_time_s 0), the run ends when the last
** write does: 1 s of compile + 40 x 267.371009 us + 2.34 ms. The price: host 1 preempted at the
** start of step 25, 5 steps (1.28 ms) into checkpoint 20's 2.34 ms write, finds that write lost
** and goes back to checkpoint 10: 15 steps lost where the blocking run lost 5. */
static void async_checkpoints_overlap(void **state) {
  (void)state;
  const run *base = baseline();
  static run r, cut;
  const char *sets[] = {"training.checkpoint.async=true"};
  tpu(&r, sets, 1);
  assert_true(r.sum.checkpoint_time_s == 0);
  assert_int_equal(r.sum.checkpoints, 4);
  assert_int_equal(ps(r.sum.sim_time_s), ps(1) + 40 * ps(267.371009e-6) + ps(0.00234));
  const char *faulted[] = {"training.checkpoint.async=true", "training.restart.delay=60s",
                           "faults=[{kind: preempt, target: tpu_host:1, at_step: 25}]"};
  tpu(&cut, faulted, 3);
  assert_recovered(&cut, base, 15);
}

/* Without training.restart nothing brings the job back: TF's UnavailableError, exit 3, outputs
** written with the rows done so far (steps 0..24). */
static void no_restart_fails_the_job(void **state) {
  (void)state;
  static run r;
  const char *sets[] = {"faults=[{kind: preempt, target: tpu_host:1, at_step: 25}]"};
  tpu(&r, sets, 1);
  assert_int_equal(r.rc, TR_EXIT_JOB_FAILED);
  assert_string_equal(r.sum.error.kind, "UnavailableError");
  assert_string_equal(r.sum.error.device, "/job:worker/replica:0/task:1");
  assert_non_null(strstr(r.sum.error.message, "training.restart is not set"));
  assert_int_equal(r.n, 25);
}

/* Every ICI link down for 2 s from halfway through step 14's all-reduce: TF's collectives have
** no timeout by default, so the step waits for the links and goes on; nothing restarts. Step 14
** takes 2 s longer (to within the one all-reduce round whose latency phase the outage may
** overlap), the others as before, and the weights are the same. */
static void link_down_stalls_the_all_reduce(void **state) {
  (void)state;
  const run *base = baseline();
  static run r;
  char fault[160];
  snprintf(fault, sizeof fault, "faults=[{kind: link_down, target: \"ici:*\", at: %.12fs, duration: 2s}]",
           base->end[14] - base->time[14] / 2);
  const char *sets[] = {fault};
  tpu(&r, sets, 1);
  assert_recovered(&r, base, 0);
  assert_int_equal(r.sum.restarts, 0);
  double extra = r.time[14] - base->time[14];
  assert_true(fabs(extra - 2.0) < 20e-6);
  assert_true(fabs(r.comm[14] - base->comm[14] - 2.0) < 20e-6);
  assert_true(r.time[15] == base->time[15]);
}

/* ICI at half bandwidth for the whole run: the all-reduce's byte time doubles and its latency
** L (hops of 1 us, and the reduction adds) stays. L is the all-reduce time at 1 PB/s, where the
** bytes take nothing, so comm' = 2 comm - L (to a few ps of rounding per transfer). */
static void link_degrade_doubles_the_byte_time(void **state) {
  (void)state;
  const run *base = baseline();
  static run slow, fast;
  const char *half[] = {"faults=[{kind: link_degrade, target: \"ici:*\", factor: 0.5, at: 0s}]"};
  const char *quick[] = {"cluster.tpu.overrides.ici_bandwidth=1PB/s"};
  tpu(&slow, half, 1);
  tpu(&fast, quick, 1);
  long latency = ps(fast.comm[5]);
  assert_true(latency > 0 && latency < ps(base->comm[5]) / 10);
  long want = 2 * ps(base->comm[5]) - latency;
  assert_true(labs(ps(slow.comm[5]) - want) <= 100);
  assert_string_equal(slow.weights, base->weights);
}

/* Host 1's chips 3x slower for the whole run: its replicas' forward, backward and optimizer (c)
** take 3c, so replica 0 waits 2c more at each all-reduce (its idle), and its compute is as
** before. In a steady step (5), idle' = idle + 2 compute. */
static void straggler_host_makes_others_wait(void **state) {
  (void)state;
  const run *base = baseline();
  static run r;
  const char *sets[] = {"faults=[{kind: straggler, target: tpu_host:1, slowdown: 3, at: 0s}]"};
  tpu(&r, sets, 1);
  assert_true(r.compute[5] == base->compute[5]);
  assert_true(labs(ps(r.idle[5]) - (ps(base->idle[5]) + 2 * ps(base->compute[5]))) <= 4);
  assert_string_equal(r.weights, base->weights);
}

/* A preemption storm: each host preempted at random, mean time between preemptions 1.5 s, down
** 2 s, restarts after 1 s; each attempt needs 1 s of compile (seed 3 draws 9 preemptions and 6
** restarts, most during a compile, 3 steps lost). However many restarts the draws
** cause, the job ends with every step once and the uninterrupted weights; the schedule comes from
** the streams "faults[0].tpu_host:N" of seed 3, so a second run gives the same run_hash. */
static void preemption_storm(void **state) {
  (void)state;
  const run *base = baseline();
  static run r, again, other;
  const char *sets[] = {"training.restart.delay=1s",
                        "faults=[{kind: preempt, target: \"tpu_host:*\", mtbf: 1.5s, down_for: 2s}]"};
  tpu(&r, sets, 2);
  assert_true(r.sum.restarts >= 2);
  assert_true(r.sum.preemptions >= r.sum.restarts);
  assert_recovered(&r, base, r.sum.lost_steps);
  tpu(&again, sets, 2);
  assert_true(again.sum.run_hash == r.sum.run_hash);
  assert_int_equal(again.sum.restarts, r.sum.restarts);
  const char *seeded[] = {sets[0], sets[1], "seed=4"};
  tpu(&other, seeded, 3);
  assert_true(other.sum.run_hash != r.sum.run_hash);
}

/* spot.csv: ICI at half bandwidth throughout, host 1 preempted at 1.005 s, in the write of the
** step-10 checkpoint (steps of ~406 us at half bandwidth end step 9 near 1.00406 s, the write
** ends at 1.0064 s): the job
** restarts from the initial state and the 10 steps are lost; the trace marks both. */
static void faults_from_a_trace_file(void **state) {
  (void)state;
  const run *base = baseline();
  static run r;
  run_file(&r, "tests/data/faults/trace.yaml", NULL, 0);
  assert_recovered(&r, base, 10);
  assert_int_equal(r.sum.preemptions, 1);
  assert_true(r.trace_has_preempt && r.trace_has_restart);
}

/* A multi_worker_mirrored worker lost at the start of step 7 on the CPU base (4 workers,
** checkpoints every 5 steps): steps 5 and 6 are redone, the weights are the uninterrupted run's. */
static void worker_lost_in_multi_worker_mirrored(void **state) {
  (void)state;
  static run base, r;
  const char *mwm[] = {"strategy.kind=multi_worker_mirrored", "cluster.workers.count=4",
                       "training.checkpoint.every_steps=5", "training.restart.delay=30s",
                       "faults=[{kind: preempt, target: worker:2, at_step: 7, down_for: 90s}]"};
  run_file(&base, "tests/data/train/base.yaml", mwm, 4);
  run_file(&r, "tests/data/train/base.yaml", mwm, 5);
  assert_recovered(&r, &base, 2);
  /* down_for beats the restart delay: the job waits for the worker to be back */
  assert_true(fabs(r.sum.downtime_s - 90.0) < 1e-3);
}

/* On GPU systems the fabric is the GPUs' NICs: fabric:1 at a tenth of its rate from the start
** slows 2 DGX A100's gradient all-reduces (their ring crosses worker 1's NICs) and leaves the
** weights as they were; fabric:* at full rate (factor 1) changes nothing; fabric:1 down for good
** stalls the job (exit 3), its 20 blocked actors (4 input, 16 replicas) named 8 and "12 more"
** (the names were read past their array of 8 before). */
static void link_degrade_reaches_gpu_nics(void **state) {
  (void)state;
  static run base, slow, same, down;
  const char *dgx[] = {"strategy.kind=multi_worker_mirrored", "cluster.workers.count=2",
                       "cluster.workers.machine={type: dgx-a100}", "dataset.global_batch=32",
                       "faults=[{kind: link_degrade, target: \"fabric:1\", factor: 0.1, at: 0s}]",
                       "faults=[{kind: link_degrade, target: \"fabric:*\", factor: 1, at: 0s}]",
                       "faults=[{kind: link_down, target: \"fabric:1\", at: 0.1ms}]"};
  run_file(&base, "tests/data/train/base.yaml", dgx, 4);
  run_file(&slow, "tests/data/train/base.yaml", (const char *const[]){dgx[0], dgx[1], dgx[2], dgx[3], dgx[4]}, 5);
  run_file(&same, "tests/data/train/base.yaml", (const char *const[]){dgx[0], dgx[1], dgx[2], dgx[3], dgx[5]}, 5);
  assert_int_equal(slow.rc, TR_EXIT_OK);
  assert_true(slow.comm[5] > base.comm[5]);
  assert_true(same.comm[5] == base.comm[5]);
  assert_string_equal(slow.weights, base.weights);
  run_file(&down, "tests/data/train/base.yaml", (const char *const[]){dgx[0], dgx[1], dgx[2], dgx[3], dgx[6]}, 5);
  assert_int_equal(down.rc, TR_EXIT_JOB_FAILED);
  assert_string_equal(down.sum.error.kind, "SimulationStalled");
  assert_non_null(strstr(down.sum.error.message, " and 12 more blocked"));
}

/* Targets the run does not have are scenario errors at the target's position. */
static void missing_targets_are_input_errors(void **state) {
  (void)state;
  static const struct { const char *fault, *phrase; } cases[] = {
    {"faults=[{kind: fail, target: ps:0, at: 1s}]", "this run has no ps task"},
    {"faults=[{kind: fail, target: tpu_host:2, at: 1s}]", "the run has 2 TPU hosts, numbered 0 to 1"},
    {"faults=[{kind: fail, target: worker:0, at: 1s}]", "a TPU run has no CPU workers"},
    {"faults=[{kind: link_down, target: fabric:*, at: 1s}]", "a TPU run has no CPU workers or fabric"},
    {"faults=[{kind: link_down, target: ici:8, at: 1s}]", "the run has 8 chips"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    static run r;
    const char *sets[] = {cases[i].fault};
    tpu(&r, sets, 1);
    assert_int_equal(r.rc, TR_EXIT_INPUT);
    assert_string_equal(r.err.key, "faults[0].target");
    assert_string_equal(r.err.file, "--set");
    if (!strstr(r.err.msg, cases[i].phrase)) fail_msg("%s: %s", cases[i].fault, r.err.msg);
  }
}

/* dataset.shuffle: {buffer: 100}: every checkpoint also saves each of the 2 hosts' shuffle
** buffers, as tf.train.Checkpoint(iterator=...) does: 2 x 100 examples of 8 float32 features and
** an int32 label, 7200 B beside the 2340 B of state, so a checkpoint (and the restore's read)
** takes 9.54 ms at 1 MB/s. Preempted at step 25 and restored from step 20, the job reads the
** elements the uninterrupted shuffled run reads, in its order: the final weights are that run's
** to the bit, and not the unshuffled run's (the shuffle changes what each step reads). */
static void shuffled_run_resumes_bit_identical(void **state) {
  (void)state;
  const run *plain = baseline();
  static run base, r;
  const char *sets[] = {"dataset.shuffle={buffer: 100}", "training.restart.delay=60s",
                        "faults=[{kind: preempt, target: tpu, at_step: 25}]"};
  tpu(&base, sets, 1);
  assert_int_equal(base.rc, TR_EXIT_OK);
  assert_int_equal(base.n, 40);
  assert_string_not_equal(base.weights, plain->weights);
  tpu(&r, sets, 3);
  assert_recovered(&r, &base, 5);
  assert_true(r.sum.downtime_s == 60.00954);
}

/* The run with `sets` (its last entry the fault) against the same run without the fault: TF's
** recovery (assert_recovered, `lost` steps redone), and the settings before the fault matter:
** the uninterrupted run's weights are not the plain baseline's. */
static void assert_resumes_bit_identical(const char *const *sets, int nsets, long lost) {
  const run *plain = baseline();
  static run base, r;
  tpu(&base, sets, nsets - 1);
  assert_int_equal(base.rc, TR_EXIT_OK);
  assert_int_equal(base.n, 40);
  assert_string_not_equal(base.weights, plain->weights);
  tpu(&r, sets, nsets);
  assert_recovered(&r, &base, lost);
}

/* A model with dropout resumes bit-identical: replica r's masks for step N come from a stream of
** their own ("dropout/replica r/step N"), so the 5 steps redone after the restore from step 20
** draw the masks the uninterrupted run drew at steps 20..24. The masks matter: rate 0.5 gives
** other weights than the model without dropout. */
static void dropout_run_resumes_bit_identical(void **state) {
  (void)state;
  const char *sets[] = {"model.layers=[{dense: {units: 16, activation: relu}}, {dropout: {rate: 0.5}}, "
                        "{dense: {units: 3}}]",
                        "training.restart.delay=60s", "faults=[{kind: preempt, target: tpu, at_step: 25}]"};
  assert_resumes_bit_identical(sets, 3, 5);
}

/* mixed_float16 resumes bit-identical (its LossScaleOptimizer's scale and growth count are saved
** and restored with the optimizer's variables, as Keras checkpoints them; here no gradient
** overflows, so the scale stays 2^15 throughout), and the policy matters: rounding to float16
** gives other weights than float32. */
static void mixed_float16_run_resumes_bit_identical(void **state) {
  (void)state;
  const char *sets[] = {"model.dtype_policy=mixed_float16", "training.restart.delay=60s",
                        "faults=[{kind: preempt, target: tpu, at_step: 25}]"};
  assert_resumes_bit_identical(sets, 3, 5);
}

/* Faults the run never reaches are warnings, one per entry, and change nothing: a preemption whose
** notice comes at 0.5 s but whose machine would stop an hour later, a straggler at 1 h, a fail at
** step 500 of 40, and a preemption of each host with an mtbf of a year (no draw within the ~1 s run).
** The straggler at 0 s struck (no warning) and slowed nothing that ran (it ended before the 1 s compile),
** so the run ends as the baseline, to the bit. */
static void faults_that_never_strike_warn(void **state) {
  (void)state;
  const run *base = baseline();
  static run r;
  const char *sets[] = {"faults=[{kind: preempt, target: tpu, at: 0.5s, notice: 1h}, "
                        "{kind: straggler, target: \"tpu_host:1\", slowdown: 2, at: 0s, duration: 1ms}, "
                        "{kind: straggler, target: \"tpu_host:0\", slowdown: 2, at: 1h}, "
                        "{kind: fail, target: tpu, at_step: 500}, {kind: preempt, target: \"tpu_host:*\", mtbf: 8760h}]"};
  tpu(&r, sets, 1);
  assert_int_equal(r.rc, TR_EXIT_OK);
  assert_true(r.sum.sim_time_s == base->sum.sim_time_s);
  assert_int_equal(r.sum.preemptions + r.sum.failures, 0);
  static const char *const want[] = {
    "faults[0] (preempt tpu, at 0.5 s, notice 3600 s): never struck: the run ended at ",
    "faults[2] (straggler tpu_host:0, at 3600 s): never struck: the run ended at ",
    "faults[3] (fail tpu, at_step 500): never struck: the run ended at ",
    "faults[4] (preempt tpu_host:*, mtbf 31536000 s): never struck: the run ended at ",
  };
  assert_int_equal(r.sum.nwarnings, 4);
  char end[64];
  snprintf(end, sizeof end, "%.12g s", base->sum.sim_time_s);
  for (int i = 0; i < 4; i++) {
    if (strncmp(r.sum.warnings[i], want[i], strlen(want[i])) != 0) fail_msg("got \"%s\"", r.sum.warnings[i]);
    const char *at = r.sum.warnings[i] + strlen(want[i]);
    if (strtod(at, NULL) != base->sum.sim_time_s) fail_msg("%s: the run ended at %s", r.sum.warnings[i], end);
  }
  /* Without faults there is nothing to warn of; `faults: []` is no faults. */
  assert_int_equal(base->sum.nwarnings, 0);
  const char *none[] = {"faults=[]"};
  tpu(&r, none, 1);
  assert_int_equal(r.rc, TR_EXIT_OK);
  assert_int_equal(r.sum.nwarnings, 0);
  assert_true(r.sum.sim_time_s == base->sum.sim_time_s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(slice_preempted_between_checkpoints),
    cmocka_unit_test(faults_that_never_strike_warn),
    cmocka_unit_test(shuffled_run_resumes_bit_identical),
    cmocka_unit_test(dropout_run_resumes_bit_identical),
    cmocka_unit_test(mixed_float16_run_resumes_bit_identical),
    cmocka_unit_test(host_preempted_mid_all_reduce),
    cmocka_unit_test(host_preempted_mid_checkpoint),
    cmocka_unit_test(async_checkpoints_overlap),
    cmocka_unit_test(no_restart_fails_the_job),
    cmocka_unit_test(link_down_stalls_the_all_reduce),
    cmocka_unit_test(link_degrade_doubles_the_byte_time),
    cmocka_unit_test(link_degrade_reaches_gpu_nics),
    cmocka_unit_test(straggler_host_makes_others_wait),
    cmocka_unit_test(preemption_storm),
    cmocka_unit_test(faults_from_a_trace_file),
    cmocka_unit_test(worker_lost_in_multi_worker_mirrored),
    cmocka_unit_test(missing_targets_are_input_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
