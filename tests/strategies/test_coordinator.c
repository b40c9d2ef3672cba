/* test_coordinator.c: ClusterCoordinator drivers, each proving one rule of the reference sheet's
** section 3 on a whole engine. Workers are sim_cpus of a given rate; a closure's cost is FLOPs on
** its worker's cpu, so the expected times and placements below follow from the rates. */
#include "tests/testutil.h"

#include "sim/sim.h"
#include "strategies/ps/coordinator.h"
#include "strategies/core/variable.h"

#define S(x) ((sim_time)((x) * 1e12))  /* seconds -> picoseconds (exact for the values used) */
#define MAXC 64

/* What every run of every closure leaves behind. */
typedef struct runlog {
  int completions[MAXC];     /* per closure id: runs that returned */
  int worker[MAXC];          /* the worker of the run that returned */
  int attempt[MAXC];         /* its attempt number */
  sim_time ended[MAXC];      /* when it returned */
  int started;               /* runs started, every attempt */
  int cleanups;              /* on-kill cleanups run */
} runlog;

/* A step: optional read (sleep), compute `flops`, optional push (sleep); fails when asked. */
typedef struct step_cfg {
  runlog *log;               /* shared log */
  double flops;              /* compute on the worker's cpu */
  double read_s, push_s;     /* sleeps before and after */
  int fail_id;               /* this id fails at once (-1: none) */
  ds_error_kind fail_kind;   /* with this kind */
  sim_mempool *pool;         /* reserved 1 byte for the run, released on return or kill */
} step_cfg;

static void release_byte(void *arg) {
  step_cfg *cfg = arg;
  sim_mempool_release(cfg->pool, 1);
  cfg->log->cleanups++;
}

static int step_fn(ds_closure *ctx, void *user, ds_value **result) {
  step_cfg *cfg = user;
  int64_t id = ds_closure_id(ctx);
  cfg->log->started++;
  if (id == cfg->fail_id)
    return ds_closure_fail(ctx, cfg->fail_kind, "step %lld: bad input", (long long)id);
  if (cfg->pool != NULL) {
    assert_int_equal(sim_mempool_alloc(cfg->pool, 1), 0);
    ds_closure_on_kill(ctx, release_byte, cfg);
  }
  sim_actor *self = ds_closure_actor(ctx);
  if (cfg->read_s > 0) sim_sleep(self, S(cfg->read_s));
  sim_exec(self, ds_closure_cpu(ctx), cfg->flops);
  if (cfg->push_s > 0) sim_sleep(self, S(cfg->push_s));
  if (cfg->pool != NULL) {
    ds_closure_on_kill(ctx, NULL, NULL);
    sim_mempool_release(cfg->pool, 1);
  }
  runlog *l = cfg->log;
  l->completions[id]++;
  l->worker[id] = ds_closure_worker(ctx);
  l->attempt[id] = ds_closure_attempt(ctx);
  l->ended[id] = sim_now(sim_actor_engine(self));
  *result = ds_value_regular(md_tensor_scalar_f32((float)id));
  return 0;
}

/* An engine, n workers of the given FLOP/s and a coordinator over them (nps parameter servers). */
typedef struct fixture {
  sim_engine *e;             /* the engine */
  ds_coordinator *c;         /* the coordinator */
  runlog log;                /* closures' log */
  step_cfg cfg;              /* the step every test schedules */
} fixture;

static fixture *fixture_new(int n, const double *rates, int nps) {
  fixture *f = calloc(1, sizeof *f);
  f->e = sim_engine_new();
  const char *names[32];
  sim_cpu *cpus[32];
  static char buf[32][48];
  for (int w = 0; w < n; w++) {
    snprintf(buf[w], sizeof buf[w], "/job:worker/replica:0/task:%d", w);
    names[w] = buf[w];
    cpus[w] = sim_cpu_new(f->e, buf[w], rates[w]);
  }
  ds_status st;
  f->c = ds_coordinator_new(f->e, n, names, cpus, nps, &st);
  assert_non_null(f->c);
  f->cfg = (step_cfg){ .log = &f->log, .flops = 1e9, .fail_id = -1 };
  return f;
}

static void fixture_free(fixture *f) {
  ds_coordinator_free(f->c);
  sim_engine_free(f->e);
  free(f);
}

static const double EQUAL[32] = { 1e9, 1e9, 1e9, 1e9, 1e9, 1e9, 1e9, 1e9, 1e9, 1e9, 1e9, 1e9,
                                  1e9, 1e9, 1e9, 1e9, 1e9, 1e9, 1e9, 1e9 };

static void schedule_n(fixture *f, int n, ds_remote_value **rv) {
  ds_function fn = { step_fn, &f->cfg, 1 };
  ds_status st;
  for (int i = 0; i < n; i++)
    assert_int_equal(ds_coordinator_schedule(f->c, &fn, 0, NULL, rv ? &rv[i] : NULL, &st), 0);
}

static void free_values(ds_remote_value **rv, int n) {
  for (int i = 0; i < n; i++) ds_remote_value_free(rv[i]);
}

/* FIFO pull with workers of 1, 2 and 4 GFLOP/s and 7 closures of 4 GFLOP (4 s, 2 s, 1 s each).
** t=0: w0 takes 0, w1 takes 1, w2 takes 2. t=1: w2 ends 2, takes 3. t=2: w1 ends 1 (its completion
** event was queued at t=0, before w2's of t=1) and takes 4; then w2 ends 3, takes 5. t=3: w2 ends 5,
** takes 6. t=4: w0 ends 0, w1 ends 4, w2 ends 6; join returns at 4 s.
** Placement 0:w0 1:w1 2:w2 3:w2 4:w1 5:w2 6:w2; closures run w0 1, w1 2, w2 4. */
static void test_fifo_pull_order(void **state) {
  (void)state;
  const double rates[3] = { 1e9, 2e9, 4e9 };
  fixture *f = fixture_new(3, rates, 0);
  f->cfg.flops = 4e9;
  schedule_n(f, 7, NULL);
  assert_int_equal(ds_coordinator_queued(f->c), 7);
  ds_status st;
  assert_int_equal(ds_coordinator_join(f->c, &st), 0);
  assert_int_equal(sim_now(f->e), S(4));
  const int where[7] = { 0, 1, 2, 2, 1, 2, 2 };
  const double end[7] = { 4, 2, 1, 2, 4, 3, 4 };
  for (int i = 0; i < 7; i++) {
    assert_int_equal(f->log.worker[i], where[i]);
    assert_int_equal(f->log.ended[i], S(end[i]));
    assert_int_equal(f->log.attempt[i], 1);
  }
  assert_int_equal(ds_coordinator_worker_closures_run(f->c, 0), 1);
  assert_int_equal(ds_coordinator_worker_closures_run(f->c, 1), 2);
  assert_int_equal(ds_coordinator_worker_closures_run(f->c, 2), 4);
  ds_coordinator_stats s = ds_coordinator_get_stats(f->c);
  assert_int_equal(s.scheduled, 7);
  assert_int_equal(s.completed, 7);
  assert_int_equal(ds_coordinator_done(f->c, &st), 1);
  fixture_free(f);
}

/* RemoteValue: NOT_READY after schedule; fetch drives the engine to 1 s (1 GFLOP at 1 GFLOP/s) and
** gives READY with the closure's output (its id, 0.0); a failed closure's value is READY with its
** error. schedule refuses a plain function (TypeError) and a RemoteValue argument (ValueError);
** ClusterCoordinator.fetch passes a plain value through. */
static void test_remote_value_states(void **state) {
  (void)state;
  fixture *f = fixture_new(1, EQUAL, 0);
  ds_remote_value *rv;
  schedule_n(f, 1, &rv);
  assert_int_equal(ds_remote_value_state_of(rv), DS_REMOTE_NOT_READY);
  const ds_value *v;
  ds_status st;
  assert_int_equal(ds_remote_value_fetch(rv, &v, &st), 0);
  assert_int_equal(sim_now(f->e), S(1));
  assert_int_equal(ds_remote_value_state_of(rv), DS_REMOTE_READY);
  assert_string_equal(ds_remote_value_state_name(DS_REMOTE_READY), "READY");
  assert_float_equal(md_tensor_get(ds_value_component(v, 0), 0), 0.0f, 0);

  ds_function plain = { step_fn, &f->cfg, 0 };
  assert_int_equal(ds_coordinator_schedule(f->c, &plain, 0, NULL, NULL, &st), -1);
  assert_int_equal(st.kind, DS_TYPE_ERROR);
  ds_function fn = { step_fn, &f->cfg, 1 };
  ds_closure_arg remote = ds_closure_arg_remote(rv);
  assert_int_equal(ds_coordinator_schedule(f->c, &fn, 1, &remote, NULL, &st), -1);
  assert_int_equal(st.kind, DS_VALUE_ERROR);

  ds_value *plain_value = ds_value_regular(md_tensor_scalar_f32(2.5f));
  ds_closure_arg items[2] = { ds_closure_arg_remote(rv), ds_closure_arg_value(plain_value) };
  const ds_value *out[2];
  assert_int_equal(ds_coordinator_fetch(f->c, 2, items, out, &st), 0);
  assert_ptr_equal(out[0], v);
  assert_ptr_equal(out[1], plain_value);
  ds_value_free(plain_value);

  f->cfg.fail_id = 1;
  f->cfg.fail_kind = DS_INVALID_ARGUMENT_ERROR;
  ds_remote_value *bad;
  schedule_n(f, 1, &bad);
  assert_int_equal(ds_remote_value_fetch(bad, &v, &st), -1);
  assert_int_equal(st.kind, DS_INVALID_ARGUMENT_ERROR);
  assert_int_equal(ds_coordinator_join(f->c, &st), -1); /* the error is raised once, here */
  assert_int_equal(ds_coordinator_join(f->c, &st), 0);
  ds_remote_value_free(rv);
  ds_remote_value_free(bad);
  fixture_free(f);
}

/* TF's RemoteValue example: v1 = 0.0, v2 = 1.0 on the parameter servers; worker_fn does
** v1 += 0.1, v2 -= 0.2 and returns v1 / v2 = 0.1f / 0.8f = 0.124999999860 in doubles, which rounds
** to 0.125f exactly, as TF's `assert result.fetch() == 0.125`. Then 10 more schedules and join:
** 11 runs in all. (The variables are plain floats here; ParameterServerStrategy places them.) */
typedef struct vars { float v1, v2; } vars;

static int worker_fn(ds_closure *ctx, void *user, ds_value **result) {
  vars *v = user;
  sim_exec(ds_closure_actor(ctx), ds_closure_cpu(ctx), 1e6);
  v->v1 += 0.1f;
  v->v2 -= 0.2f;
  *result = ds_value_regular(md_tensor_scalar_f32(v->v1 / v->v2));
  return 0;
}

static void test_seed_remote_value_example(void **state) {
  (void)state;
  fixture *f = fixture_new(2, EQUAL, 2);
  vars v = { 0.0f, 1.0f };
  ds_function fn = { worker_fn, &v, 1 };
  ds_remote_value *result;
  ds_status st;
  assert_int_equal(ds_coordinator_schedule(f->c, &fn, 0, NULL, &result, &st), 0);
  const ds_value *got;
  assert_int_equal(ds_remote_value_fetch(result, &got, &st), 0);
  assert_true(md_tensor_get(ds_value_component(got, 0), 0) == 0.125);
  ds_remote_value_free(result);
  for (int i = 0; i < 10; i++)
    assert_int_equal(ds_coordinator_schedule(f->c, &fn, 0, NULL, &result, &st), 0),
      ds_remote_value_free(result);
  assert_int_equal(ds_coordinator_join(f->c, &st), 0);
  assert_int_equal(ds_coordinator_get_stats(f->c).completed, 11);
  fixture_free(f);
}

/* create_per_worker_dataset's example: dataset_fn gives from_tensor_slices([3, 3, 3]); worker_fn
** returns next(iterator); fetch gives 3. And fetch's example: [1, 1, 1], v = 0, v.assign_add(x) then
** read: 1. A dataset_fn creating a variable: ValueError when traced, before any closure. */
static ds_dataset *slices_fn(void *user, ds_status *st) {
  int64_t *fill = user;
  md_tensor *t = md_tensor_vector_i64(3, (int64_t[]){ *fill, *fill, *fill });
  ds_dataset *d = ds_dataset_from_tensor_slices(1, &t, st);
  md_tensor_free(t);
  return d;
}

static ds_dataset *variable_fn(void *user, ds_status *st) {
  (void)user;
  md_tensor *init = md_tensor_scalar_f32(0.0f);
  ds_variable *v = ds_variable_new(init, NULL, st);
  md_tensor_free(init);
  ds_variable_free(v);
  return v == NULL ? NULL : ds_dataset_range(0, 1, 1, st);
}

typedef struct acc { int64_t v; } acc;

static int next_fn(ds_closure *ctx, void *user, ds_value **result) {
  md_tensor *x;
  if (ds_closure_get_next(ctx, 0, &x) != 0) return -1;
  acc *a = user;
  if (a != NULL) { /* replica_fn: v.assign_add(x); return v.read_value() */
    a->v += md_tensor_i64(x)[0];
    md_tensor_i64(x)[0] = a->v;
  }
  *result = ds_value_regular(x);
  return 0;
}

static int64_t fetch_i64(ds_remote_value *rv) {
  const ds_value *v;
  ds_status st;
  assert_int_equal(ds_remote_value_fetch(rv, &v, &st), 0);
  return md_tensor_get(ds_value_component(v, 0), 0);
}

static void test_seed_per_worker_dataset(void **state) {
  (void)state;
  fixture *f = fixture_new(2, EQUAL, 1);
  ds_status st;
  assert_null(ds_coordinator_create_per_worker_dataset(f->c, variable_fn, NULL, &st));
  assert_int_equal(st.kind, DS_VALUE_ERROR);
  assert_string_equal(st.message, "Creating variables in `dataset_fn` is not allowed.");

  int64_t three = 3, one = 1;
  ds_per_worker *ds3 = ds_coordinator_create_per_worker_dataset(f->c, slices_fn, &three, &st);
  ds_per_worker *it3 = ds_coordinator_per_worker_iter(f->c, ds3, &st);
  ds_function fn = { next_fn, NULL, 1 };
  ds_closure_arg arg = ds_closure_arg_per_worker(it3);
  ds_remote_value *rv;
  assert_int_equal(ds_coordinator_schedule(f->c, &fn, 1, &arg, &rv, &st), 0);
  assert_int_equal(fetch_i64(rv), 3);
  ds_remote_value_free(rv);

  acc a = { 0 };
  ds_per_worker *ds1 = ds_coordinator_create_per_worker_dataset(f->c, slices_fn, &one, &st);
  ds_per_worker *it1 = ds_coordinator_per_worker_iter(f->c, ds1, &st);
  ds_function replica = { next_fn, &a, 1 };
  arg = ds_closure_arg_per_worker(it1);
  assert_int_equal(ds_coordinator_schedule(f->c, &replica, 1, &arg, &rv, &st), 0);
  ds_closure_arg item = ds_closure_arg_remote(rv);
  const ds_value *out;
  assert_int_equal(ds_coordinator_fetch(f->c, 1, &item, &out, &st), 0);
  assert_int_equal(md_tensor_get(ds_value_component(out, 0), 0), 1);
  ds_remote_value_free(rv);
  assert_int_equal(ds_remote_value_state_of(ds_coordinator_per_worker_value(it1, 1)), DS_REMOTE_READY);
  fixture_free(f);
}

/* Errors. Two workers of 1 GFLOP/s, 1 s closures, closure 1 fails at once with
** InvalidArgumentError; 6 scheduled. At t=0 w0 takes 0, w1 takes 1 (fails: the error is stored) and
** goes on with 2; join sees the error before the next event: in-flight 0 and 2 are cancelled (their
** actors killed), queued 3, 4, 5 too, and join raises at t=0 with 5 cancelled, 1 failed, 0
** completed. The next join and done raise nothing; scheduling works again (2 more complete at 1 s).
** Then a failing closure makes the next schedule raise, its own closure cancelled with it; and done()
** raises one, exactly once. */
static void test_error_raised_once_and_cancels(void **state) {
  (void)state;
  fixture *f = fixture_new(2, EQUAL, 0);
  f->cfg.fail_id = 1;
  f->cfg.fail_kind = DS_INVALID_ARGUMENT_ERROR;
  ds_remote_value *rv[6];
  schedule_n(f, 6, rv);
  ds_status st;
  assert_int_equal(ds_coordinator_join(f->c, &st), -1);
  assert_int_equal(st.kind, DS_INVALID_ARGUMENT_ERROR);
  assert_int_equal(sim_now(f->e), 0);
  ds_coordinator_stats s = ds_coordinator_get_stats(f->c);
  assert_int_equal(s.failed, 1);
  assert_int_equal(s.cancelled, 5);
  assert_int_equal(s.completed, 0);
  for (int i = 0; i < 6; i++) {
    const ds_value *v;
    assert_int_equal(ds_remote_value_fetch(rv[i], &v, &st), -1);
    assert_int_equal(st.kind, i == 1 ? DS_INVALID_ARGUMENT_ERROR : DS_CANCELLED_ERROR);
  }
  free_values(rv, 6);
  assert_int_equal(ds_coordinator_join(f->c, &st), 0);
  assert_int_equal(ds_coordinator_done(f->c, &st), 1);
  schedule_n(f, 2, NULL); /* ids 6, 7 */
  assert_int_equal(ds_coordinator_join(f->c, &st), 0);
  assert_int_equal(sim_now(f->e), S(1));
  assert_int_equal(ds_coordinator_get_stats(f->c).completed, 2);

  f->cfg.fail_id = 8;
  schedule_n(f, 1, NULL);
  sim_run_until(f->e, S(1)); /* 8 fails at once */
  ds_function fn = { step_fn, &f->cfg, 1 };
  ds_remote_value *mine = (ds_remote_value *)&st;
  assert_int_equal(ds_coordinator_schedule(f->c, &fn, 0, NULL, &mine, &st), -1);
  assert_int_equal(st.kind, DS_INVALID_ARGUMENT_ERROR);
  assert_null(mine);
  s = ds_coordinator_get_stats(f->c);
  assert_int_equal(s.scheduled, 10);
  assert_int_equal(s.cancelled, 6); /* its own closure, id 9 */
  assert_int_equal(ds_coordinator_done(f->c, &st), 1);

  f->cfg.fail_id = 10;
  schedule_n(f, 1, NULL);
  sim_run_until(f->e, S(1));
  assert_int_equal(ds_coordinator_done(f->c, &st), -1);
  assert_int_equal(ds_coordinator_done(f->c, &st), 1);
  fixture_free(f);
}

typedef struct fault { ds_coordinator *c; int w; } fault;

static void kill_worker(sim_engine *e, void *arg) {
  (void)e;
  fault *ft = arg;
  assert_int_equal(ds_coordinator_worker_failed(ft->c, ft->w, NULL), 0);
}

static void revive_worker(sim_engine *e, void *arg) {
  (void)e;
  fault *ft = arg;
  assert_int_equal(ds_coordinator_worker_recovered(ft->c, ft->w, NULL), 0);
}

/* Worker failure. 4 workers of 1 GFLOP/s; a closure reads 0.5 s, computes 1 s, pushes 0.5 s (2 s)
** and holds 1 byte of a pool while it runs. 4 closures, one per worker at t=0. w0 dies at 0.25
** (before the compute), w1 at 1.0 (during), w2 at 1.75 (after, while pushing): closures 0, 1, 2 go
** to the FIFO's tail in that order, their bytes released by the on-kill cleanup. w0 recovers at 3.0
** and takes 1 (attempt 2, ends 5.0); w3 ends 3 at 2.0, takes 0 (attempt 2, ends 4.0), then 2
** (attempt 2, ends 6.0). Every closure completes exactly once; 7 runs started; 3 retries. */
static void test_worker_failure_reruns_elsewhere(void **state) {
  (void)state;
  fixture *f = fixture_new(4, EQUAL, 0);
  f->cfg.read_s = 0.5;
  f->cfg.push_s = 0.5;
  f->cfg.pool = sim_mempool_new(f->e, "held", 16);
  fault kills[3] = { { f->c, 0 }, { f->c, 1 }, { f->c, 2 } };
  sim_schedule(f->e, S(0.25), kill_worker, &kills[0]);
  sim_schedule(f->e, S(1.0), kill_worker, &kills[1]);
  sim_schedule(f->e, S(1.75), kill_worker, &kills[2]);
  sim_schedule(f->e, S(3.0), revive_worker, &kills[0]);
  schedule_n(f, 4, NULL);
  ds_status st;
  assert_int_equal(ds_coordinator_join(f->c, &st), 0);
  assert_int_equal(sim_now(f->e), S(6));
  const int where[4] = { 3, 0, 3, 3 }, attempt[4] = { 2, 2, 2, 1 };
  const double end[4] = { 4, 5, 6, 2 };
  for (int i = 0; i < 4; i++) {
    assert_int_equal(f->log.completions[i], 1);
    assert_int_equal(f->log.worker[i], where[i]);
    assert_int_equal(f->log.attempt[i], attempt[i]);
    assert_int_equal(f->log.ended[i], S(end[i]));
  }
  assert_int_equal(f->log.started, 7);
  assert_int_equal(f->log.cleanups, 3);
  assert_int_equal(sim_mempool_used(f->cfg.pool), 0);
  ds_coordinator_stats s = ds_coordinator_get_stats(f->c);
  assert_int_equal(s.retried, 3);
  assert_int_equal(s.worker_failures, 3);
  assert_int_equal(s.completed, 4);
  assert_int_equal(ds_coordinator_worker_state(f->c, 0), DS_WORKER_ALIVE);
  assert_int_equal(ds_coordinator_worker_state(f->c, 1), DS_WORKER_DEAD);
  fixture_free(f);
}

/* On-kill order. A closure holds a transfer of 1e9 B over a 1 GB/s link (1 s) in a sim_wait_all
** on an array it owns; its cleanup frees what the wait points to (as ds_ps_worker_release frees a
** read's transfers). Closure 0 is killed at 0.5 s by worker 0's failure, runs again on worker 1
** from 0.5 s, and is killed at 0.75 s by the cancellation the error of closure 1 (failing at once
** on worker 2) raises in join: both times the cleanup must find its actor dead. It records the actor's state
** and clears the array: a cleanup run before the kill would see the actor alive, and the kill's
** withdraw would then read a NULL activity and crash. */
typedef struct held_xfer {
  sim_link *link;            /* the route */
  sim_activity *acts[2][1];  /* per closure id: the wait's array */
  sim_actor *actor[2];       /* the actor running it */
  int alive_at_cleanup[2];   /* sim_actor_is_alive in its cleanup; -1 before */
} held_xfer;

typedef struct held_run { held_xfer *h; int id; } held_run;

static void release_xfer(void *arg) {
  held_run *r = arg;
  r->h->alive_at_cleanup[r->id] = sim_actor_is_alive(r->h->actor[r->id]);
  r->h->acts[r->id][0] = NULL;
}

static int hold_fn(ds_closure *ctx, void *user, ds_value **result) {
  static held_run runs[2];
  held_xfer *h = user;
  int id = (int)ds_closure_id(ctx);
  if (id == 1) return ds_closure_fail(ctx, DS_INVALID_ARGUMENT_ERROR, "bad input");
  sim_actor *self = ds_closure_actor(ctx);
  runs[id] = (held_run){ h, id };
  h->actor[id] = self;
  ds_closure_on_kill(ctx, release_xfer, &runs[id]);
  h->acts[id][0] = sim_comm_start(sim_actor_engine(self), &h->link, 1, 1e9);
  sim_wait_all(self, h->acts[id], 1);
  *result = NULL;
  return 0;
}

static void test_cleanup_runs_after_kill(void **state) {
  (void)state;
  fixture *f = fixture_new(3, EQUAL, 0);
  held_xfer h = { .link = sim_link_new(f->e, "nic", 1e9, 0), .alive_at_cleanup = { -1, -1 } };
  ds_function fn = { hold_fn, &h, 1 };
  ds_status st;
  assert_int_equal(ds_coordinator_schedule(f->c, &fn, 0, NULL, NULL, &st), 0);
  fault kill = { f->c, 0 };
  sim_schedule(f->e, S(0.5), kill_worker, &kill);
  sim_run_until(f->e, S(0.5));
  assert_int_equal(h.alive_at_cleanup[0], 0);
  h.alive_at_cleanup[0] = -1;
  sim_run_until(f->e, S(0.75)); /* closure 0 runs again on worker 1 from 0.5 s */
  assert_int_equal(ds_coordinator_schedule(f->c, &fn, 0, NULL, NULL, &st), 0); /* 1: worker 2 fails it */
  assert_int_equal(ds_coordinator_join(f->c, &st), -1);
  assert_int_equal(st.kind, DS_INVALID_ARGUMENT_ERROR);
  assert_int_equal(sim_now(f->e), S(0.75));
  assert_int_equal(h.alive_at_cleanup[0], 0); /* the cancelled rerun of 0, on worker 1 */
  assert_int_equal(ds_coordinator_get_stats(f->c).cancelled, 1);
  fixture_free(f);
}

/* A lost chief. Two workers of 1 GFLOP/s, seven 1 s closures; the coordinator is abandoned at
** 0.5 s: closures 0 and 1 run on, end at 1 s (both workers count a run) and their values read
** CancelledError; 2..6 never start (started stays 2). A join right after returns at 0.5 s: nothing
** of the new process is in flight. Two closures scheduled then (7, 8) wait for the busy workers and
** run 1..2 s: join returns at 2 s; completed counts only them. */
static void test_abandon_drops_queue_keeps_running(void **state) {
  (void)state;
  fixture *f = fixture_new(2, EQUAL, 0);
  ds_remote_value *rv[7];
  schedule_n(f, 7, rv);
  sim_run_until(f->e, S(0.5));
  ds_coordinator_abandon(f->c);
  assert_int_equal(ds_coordinator_queued(f->c), 0);
  assert_int_equal(ds_coordinator_in_flight(f->c), 0);
  ds_status st;
  assert_int_equal(ds_coordinator_join(f->c, &st), 0);
  assert_int_equal(sim_now(f->e), S(0.5));
  schedule_n(f, 2, NULL);
  assert_int_equal(ds_coordinator_join(f->c, &st), 0);
  assert_int_equal(sim_now(f->e), S(2));
  assert_int_equal(f->log.started, 4);
  for (int i = 0; i < 9; i++) assert_int_equal(f->log.completions[i], i < 2 || i >= 7);
  assert_int_equal(f->log.ended[0], S(1));
  assert_int_equal(f->log.ended[1], S(1));
  for (int i = 0; i < 7; i++) {
    const ds_value *v;
    assert_int_equal(ds_remote_value_fetch(rv[i], &v, &st), -1);
    assert_int_equal(st.kind, DS_CANCELLED_ERROR);
  }
  free_values(rv, 7);
  ds_coordinator_stats s = ds_coordinator_get_stats(f->c);
  assert_int_equal(s.abandoned, 5);
  assert_int_equal(s.orphaned, 2);
  assert_int_equal(s.completed, 2);
  assert_int_equal(ds_coordinator_worker_closures_run(f->c, 0), 2);
  assert_int_equal(ds_coordinator_worker_closures_run(f->c, 1), 2);
  fixture_free(f);
}

/* A closure reporting its own worker's failure (UnavailableError naming /job:worker) is treated
** the same way without a kill: back to the tail, worker dead; the other worker runs it (attempt 2). */
static int flaky_fn(ds_closure *ctx, void *user, ds_value **result) {
  (void)user;
  if (ds_closure_worker(ctx) == 0)
    return ds_closure_fail(ctx, DS_UNAVAILABLE_ERROR, "Socket closed: %s", ds_closure_device(ctx));
  sim_exec(ds_closure_actor(ctx), ds_closure_cpu(ctx), 1e9);
  *result = ds_value_regular(md_tensor_scalar_f32((float)ds_closure_attempt(ctx)));
  return 0;
}

static void test_reported_worker_failure(void **state) {
  (void)state;
  fixture *f = fixture_new(2, EQUAL, 0);
  ds_function fn = { flaky_fn, NULL, 1 };
  ds_remote_value *rv;
  ds_status st;
  assert_int_equal(ds_coordinator_schedule(f->c, &fn, 0, NULL, &rv, &st), 0);
  const ds_value *v;
  assert_int_equal(ds_remote_value_fetch(rv, &v, &st), 0);
  assert_float_equal(md_tensor_get(ds_value_component(v, 0), 0), 2.0f, 0);
  assert_int_equal(ds_coordinator_worker_state(f->c, 0), DS_WORKER_DEAD);
  assert_int_equal(ds_coordinator_get_stats(f->c).retried, 1);
  ds_remote_value_free(rv);
  fixture_free(f);
}

/* Resources. 2 workers, per-worker range(0, 10) and its iterators; a closure takes next() then
** computes 1 s. t=0: w0 runs 0 (element 0 of w0), w1 runs 1 (element 0 of w1). w1 dies at 0.5:
** its dataset and iterator values turn ABORTED (fetch: CancelledError) and 1 goes behind 2, 3. t=1:
** w0 runs 2 (element 1). w1 recovers at 1.5: dataset then iterator rebuilt (READY again) before it
** takes 3, whose next() gives element 0 again: the iterator restarted. t=2: w0 runs 1 (element 2). */
static ds_dataset *range_fn(void *user, ds_status *st) {
  (void)user;
  return ds_dataset_range(0, 10, 1, st);
}

static void free_element(void *arg) { md_tensor_free(arg); }

static int next_then_work(ds_closure *ctx, void *user, ds_value **result) {
  int *seen = user;
  md_tensor *x;
  if (ds_closure_get_next(ctx, 0, &x) != 0) return -1;
  ds_closure_on_kill(ctx, free_element, x); /* a kill mid-compute must not leak the element */
  sim_exec(ds_closure_actor(ctx), ds_closure_cpu(ctx), 1e9);
  ds_closure_on_kill(ctx, NULL, NULL);
  seen[ds_closure_id(ctx)] = (int)md_tensor_i64(x)[0] + 100 * ds_closure_worker(ctx);
  *result = ds_value_regular(x);
  return 0;
}

static void test_resources_aborted_then_rebuilt(void **state) {
  (void)state;
  fixture *f = fixture_new(2, EQUAL, 0);
  ds_status st;
  ds_per_worker *ds = ds_coordinator_create_per_worker_dataset(f->c, range_fn, NULL, &st);
  ds_per_worker *it = ds_coordinator_per_worker_iter(f->c, ds, &st);
  int seen[4] = { -1, -1, -1, -1 };
  ds_function fn = { next_then_work, seen, 1 };
  ds_closure_arg arg = ds_closure_arg_per_worker(it);
  for (int i = 0; i < 4; i++) assert_int_equal(ds_coordinator_schedule(f->c, &fn, 1, &arg, NULL, &st), 0);
  fault ft = { f->c, 1 };
  sim_schedule(f->e, S(0.5), kill_worker, &ft);
  sim_schedule(f->e, S(1.5), revive_worker, &ft);
  sim_run_until(f->e, S(1.0));
  ds_remote_value *w1_it = ds_coordinator_per_worker_value(it, 1);
  assert_int_equal(ds_remote_value_state_of(w1_it), DS_REMOTE_ABORTED);
  assert_int_equal(ds_remote_value_state_of(ds_coordinator_per_worker_value(ds, 1)), DS_REMOTE_ABORTED);
  assert_int_equal(ds_remote_value_state_of(ds_coordinator_per_worker_value(it, 0)), DS_REMOTE_READY);
  const ds_value *v;
  assert_int_equal(ds_remote_value_fetch(w1_it, &v, &st), -1);
  assert_int_equal(st.kind, DS_CANCELLED_ERROR);
  assert_int_equal(ds_coordinator_join(f->c, &st), 0);
  assert_int_equal(ds_remote_value_state_of(w1_it), DS_REMOTE_READY);
  const int want[4] = { 0, 2, 1, 100 }; /* element + 100 * worker */
  for (int i = 0; i < 4; i++) assert_int_equal(seen[i], want[i]);
  assert_int_equal(sim_now(f->e), S(3));
  fixture_free(f);
}

/* A worker that never comes back: after 3600 s it is given up; with it the only worker, join from
** the main program finds no event left and raises RuntimeError instead of waiting forever.
** Recovery is still accepted afterwards and the closure completes (attempt 2). */
static void test_given_up_after_recovery_wait(void **state) {
  (void)state;
  fixture *f = fixture_new(1, EQUAL, 0);
  fault ft = { f->c, 0 };
  sim_schedule(f->e, S(0.5), kill_worker, &ft);
  schedule_n(f, 1, NULL);
  ds_status st;
  assert_int_equal(ds_coordinator_join(f->c, &st), -1);
  assert_int_equal(st.kind, DS_RUNTIME_ERROR);
  assert_int_equal(sim_now(f->e), S(3600.5));
  assert_int_equal(ds_coordinator_worker_state(f->c, 0), DS_WORKER_GIVEN_UP);
  assert_int_equal(ds_coordinator_get_stats(f->c).workers_given_up, 1);
  assert_int_equal(ds_coordinator_worker_recovered(f->c, 0, &st), 0);
  assert_int_equal(ds_coordinator_join(f->c, &st), 0);
  assert_int_equal(f->log.attempt[0], 2);
  fixture_free(f);
}

/* A parameter server lost at 0.5 s: UnavailableError naming /job:ps/replica:0/task:0 surfaces from
** join at 0.5 s; the 2 closures in flight and the 2 queued are cancelled. */
static void fail_ps(sim_engine *e, void *arg) {
  (void)e;
  assert_int_equal(ds_coordinator_ps_failed(arg, 0, NULL), 0);
}

static void test_ps_failure_surfaces(void **state) {
  (void)state;
  fixture *f = fixture_new(2, EQUAL, 1);
  sim_schedule(f->e, S(0.5), fail_ps, f->c);
  schedule_n(f, 4, NULL);
  ds_status st;
  assert_int_equal(ds_coordinator_join(f->c, &st), -1);
  assert_int_equal(st.kind, DS_UNAVAILABLE_ERROR);
  assert_non_null(strstr(st.message, "/job:ps/replica:0/task:0"));
  assert_int_equal(sim_now(f->e), S(0.5));
  assert_int_equal(ds_coordinator_get_stats(f->c).cancelled, 4);
  assert_int_equal(ds_coordinator_in_flight(f->c), 0);
  fixture_free(f);
}

/* Transient errors. A closure that always reports ps 0 unreachable: runs 1 and 2 are ignored
** (reports 1, 2 < 3: back to the tail, the same idle worker takes it again), run 3 brings the
** counter to 3 and propagates. The counter is never reset: a new such closure propagates at its
** first run (report 4), while ps 1's counter starts from 0. DeadlineExceeded with 20 workers
** (threshold 20 // 10 = 2): the first is ignored (count 1), the second propagates; with 3 workers
** (threshold 0) the first propagates. */
typedef struct transient { int ps; ds_error_kind kind; int attempts; } transient;

static int transient_fn(ds_closure *ctx, void *user, ds_value **result) {
  (void)result;
  transient *t = user;
  t->attempts = ds_closure_attempt(ctx);
  if (t->kind == DS_UNAVAILABLE_ERROR) return ds_closure_fail_ps(ctx, t->ps);
  return ds_closure_fail(ctx, t->kind, "Deadline exceeded on %s", ds_closure_device(ctx));
}

static int run_one(fixture *f, transient *t) {
  ds_function fn = { transient_fn, t, 1 };
  ds_status st;
  assert_int_equal(ds_coordinator_schedule(f->c, &fn, 0, NULL, NULL, &st), 0);
  assert_int_equal(ds_coordinator_join(f->c, &st), -1);
  assert_int_equal(st.kind, t->kind);
  return t->attempts;
}

static void test_transient_counters(void **state) {
  (void)state;
  fixture *f = fixture_new(1, EQUAL, 2);
  transient ps0 = { 0, DS_UNAVAILABLE_ERROR, 0 }, ps1 = { 1, DS_UNAVAILABLE_ERROR, 0 };
  assert_int_equal(run_one(f, &ps0), 3);
  assert_int_equal(ds_coordinator_get_stats(f->c).transient_retries, 2);
  assert_int_equal(run_one(f, &ps0), 1);
  assert_int_equal(run_one(f, &ps1), 3);
  assert_int_equal(ds_coordinator_get_stats(f->c).failed, 3);
  fixture_free(f);

  transient late = { 0, DS_DEADLINE_EXCEEDED_ERROR, 0 };
  f = fixture_new(20, EQUAL, 0);
  assert_int_equal(run_one(f, &late), 2);
  assert_int_equal(run_one(f, &late), 1);
  fixture_free(f);
  f = fixture_new(3, EQUAL, 0);
  assert_int_equal(run_one(f, &late), 1);
  fixture_free(f);
}

/* The FIFO's bound, as a coordinator actor sees it (capacity 2 here; TF's 262144 by default). One
** worker, 1 s closures, 5 scheduled: 0 and 1 fill the queue at t=0; 2 waits until the worker takes
** 0 (still t=0); 3 until it takes 1 at 1 s; 4 until it takes 2 at 2 s. join (as the actor) returns
** at 5 s. */
typedef struct chief { fixture *f; sim_time returned[5]; sim_time joined; } chief;

static void chief_main(sim_actor *self, void *arg) {
  chief *ch = arg;
  ds_status st;
  for (int i = 0; i < 5; i++) {
    schedule_n(ch->f, 1, NULL);
    ch->returned[i] = sim_now(sim_actor_engine(self));
  }
  assert_int_equal(ds_coordinator_join(ch->f->c, &st), 0);
  ch->joined = sim_now(sim_actor_engine(self));
}

static void test_queue_bound_blocks_schedule(void **state) {
  (void)state;
  assert_int_equal(DS_COORDINATOR_QUEUE_MAX, 262144);
  fixture *f = fixture_new(1, EQUAL, 0);
  ds_coordinator_set_queue_capacity(f->c, 2);
  chief ch = { .f = f };
  sim_actor_spawn(f->e, "chief", chief_main, &ch);
  sim_run_until(f->e, S(10));
  const double want[5] = { 0, 0, 0, 1, 2 };
  for (int i = 0; i < 5; i++) assert_int_equal(ch.returned[i], S(want[i]));
  assert_int_equal(ch.joined, S(5));
  fixture_free(f);
}

/* Fast-forward's two calls (scenarios/programs/ps_train.c). Two 1 GFLOP/s workers, six closures
** of 1 GFLOP (1 s each). At 0.5 s closures 0 and 1 run and 2..5 were never attempted: the fresh
** head is 4. Skipping 2 completes 2 and 3 unrun, one per worker: the head is 2, completed 2. At
** 1 s the workers end 0 and 1 and take 4 and 5, which end at 2 s, when join returns: 2 and 3
** never ran, completed is 6, each worker has 1 skipped + 2 run = 3. A re-queued closure ends the
** fresh head: of three more at 2 s, the workers take two and one waits; worker 0 killed at 2.5 s
** puts its closure behind the waiting one, so the head is 1 (fresh) then an attempted one. */
static void test_fresh_head_and_skip(void **state) {
  (void)state;
  fixture *f = fixture_new(2, EQUAL, 0);
  schedule_n(f, 6, NULL);
  sim_run_until(f->e, S(0.5));
  assert_int_equal(ds_coordinator_fresh_head(f->c), 4);
  const uint64_t done[2] = { 1, 1 };
  ds_coordinator_skip(f->c, 2, done);
  assert_int_equal(ds_coordinator_fresh_head(f->c), 2);
  assert_int_equal(ds_coordinator_get_stats(f->c).completed, 2);
  ds_status st;
  assert_int_equal(ds_coordinator_join(f->c, &st), 0);
  assert_int_equal(sim_now(f->e), S(2));
  const int runs[6] = { 1, 1, 0, 0, 1, 1 };
  for (int i = 0; i < 6; i++) assert_int_equal(f->log.completions[i], runs[i]);
  assert_int_equal(ds_coordinator_get_stats(f->c).completed, 6);
  assert_int_equal(ds_coordinator_worker_closures_run(f->c, 0), 3);
  assert_int_equal(ds_coordinator_worker_closures_run(f->c, 1), 3);
  fault kill = { f->c, 0 };
  schedule_n(f, 3, NULL);
  sim_schedule(f->e, S(2.5), kill_worker, &kill);
  sim_run_until(f->e, S(2.75));
  assert_int_equal(ds_coordinator_fresh_head(f->c), 1);
  fixture_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_fifo_pull_order),
    cmocka_unit_test(test_remote_value_states),
    cmocka_unit_test(test_seed_remote_value_example),
    cmocka_unit_test(test_seed_per_worker_dataset),
    cmocka_unit_test(test_error_raised_once_and_cancels),
    cmocka_unit_test(test_worker_failure_reruns_elsewhere),
    cmocka_unit_test(test_cleanup_runs_after_kill),
    cmocka_unit_test(test_abandon_drops_queue_keeps_running),
    cmocka_unit_test(test_reported_worker_failure),
    cmocka_unit_test(test_resources_aborted_then_rebuilt),
    cmocka_unit_test(test_given_up_after_recovery_wait),
    cmocka_unit_test(test_ps_failure_surfaces),
    cmocka_unit_test(test_transient_counters),
    cmocka_unit_test(test_queue_bound_blocks_schedule),
    cmocka_unit_test(test_fresh_head_and_skip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
