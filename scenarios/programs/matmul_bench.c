/*
** matmul_bench.c: see matmul_bench.h (matmul_bench_).
**
** The product is one op of F = 2 m n k FLOPs moving (m k + k n + m n) elements, charged on the
** device's cpu as a training step charges each op (sim_roofline_work), so the time is what a
** layer of that shape would be charged, to the picosecond.
*/
#include "scenarios/programs/matmul_bench.h"

#include <errno.h>
#include <jansson.h>
#include <string.h>
#include <time.h>

#include "scenarios/programs/slice.h"
#include "scenarios/programs/train.h"
#include "scenarios/programs/trainInt.h"
#include "scenarios/report/outputs.h"

typedef struct run {
  sim_cpu *cpu;           /* the device */
  double work;            /* one product's FLOPs at the cpu's rate (sim/roofline.h) */
  long iterations;        /* products to run */
  sim_time *times;        /* each one's duration */
} run;

static void products(sim_actor *self, void *arg) {
  run *r = arg;
  sim_engine *e = sim_actor_engine(self);
  for (long i = 0; i < r->iterations; i++) {
    sim_time t0 = sim_now(e);
    if (sim_exec(self, r->cpu, r->work) != SIM_OK) return;
    r->times[i] = sim_now(e) - t0;
  }
}

/* The device the product runs on, as a training run would build it. */
static sim_roofline device_roofline(const scenario *s) {
  if (s->workload_group == SCN_GROUP_TPU) return slice_device_roofline(s);
  ds_machine m = train_machine(&s->worker_machine);
  if (m.accel.count > 0) return ds_accelerator_roofline(&m.accel);
  return (sim_roofline){ m.flops_per_s, m.mem_bytes_per_s, {0} };
}

static int write_csv(const char *path, const scenario *s, const run *r, double flops) {
  FILE *f = fopen(path, "w");
  if (f == NULL) return -1;
  fputs("m,n,k,dtype,time_s,tflops,iteration\n", f);
  char t[32];
  for (long i = 0; i < r->iterations; i++) {
    double secs = sim_time_to_s(r->times[i]);
    fprintf(f, "%d,%d,%d,%s,%s,%.9g,%ld\n", s->workload_mm_m, s->workload_mm_n, s->workload_mm_k,
            s->workload_mm_dtype ? "float32" : "bfloat16", outputs_seconds(t, sizeof t, r->times[i]),
            secs > 0 ? flops / secs / 1e12 : 0, i);
  }
  return base_fclose(f);
}

static int write_summary(const char *path, const scenario *s, const workload_summary *w) {
  json_t *o = workload_json_new(s);
  json_object_set_new(o, "workload", json_pack("{s:s, s:i, s:i, s:i, s:s, s:s, s:s, s:I}", "op", "matmul",
                                               "m", s->workload_mm_m, "n", s->workload_mm_n, "k", s->workload_mm_k,
                                               "dtype", s->workload_mm_dtype ? "float32" : "bfloat16",
                                               "group", w->group, "model", w->algorithm,
                                               "iterations", (json_int_t)s->workload_iterations));
  json_object_set_new(o, "sim_time_s", json_real(w->sim_time_s));
  json_object_set_new(o, "mean_time_s", json_real(w->mean_time_s));
  json_object_set_new(o, "tflops", json_real(w->tflops));
  return workload_json_write(o, path, w);
}

int matmul_bench_run(const scenario *s, const char *out_dir, workload_summary *w, scn_error *err) {
  struct timespec w0, w1;
  clock_gettime(CLOCK_MONOTONIC, &w0);
  memset(w, 0, sizeof *w);
  sim_roofline roof = device_roofline(s);
  w->op = "matmul";
  w->algorithm = roof.op.units > 0 ? "per_op" : "roofline";
  w->group = s->workload_group == SCN_GROUP_TPU ? "tpu" : "workers";
  w->ranks = 1;
  w->lines = w->slices = 1;
  if (out_dir == NULL) return 0;
  double m = s->workload_mm_m, n = s->workload_mm_n, k = s->workload_mm_k;
  double elem = s->workload_mm_dtype ? 4.0 : 2.0, flops = 2.0 * m * n * k;
  sim_matmul mm = { 1, m, n, k, elem };
  sim_engine *e = train_engine_new(s->trace);
  run r = { sim_cpu_new(e, "device", roof.rate), sim_roofline_work(&roof, flops, elem * (m * k + k * n + m * n), &mm),
            s->workload_iterations, base_xcalloc((size_t)s->workload_iterations, sizeof *r.times) };
  sim_actor_spawn(e, "matmul", products, &r);
  int rc = sim_run(e) == 1 ? TR_STOPPED : 0;  /* stopped on request: nothing is written */
  double total = 0;
  for (long i = 0; i < r.iterations; i++) total += sim_time_to_s(r.times[i]);
  w->mean_time_s = total / (double)r.iterations;
  w->tflops = w->mean_time_s > 0 ? flops / w->mean_time_s / 1e12 : 0;
  w->sim_time_s = sim_time_to_s(sim_now(e));
  w->events = sim_events_processed(e);
  char path[SCN_PATH_MAX + 32];
  run_hasher h;
  if (rc == 0 && (outputs_make_dir(out_dir) != 0 || run_hasher_init(&h) != 0))
    rc = train_error(err, out_dir, 0, 0, "outputs.dir", "cannot create the output directory");
  else if (rc == 0) {
    int bad = write_csv(outputs_path(path, sizeof path, out_dir, "matmul.csv"), s, &r, flops) != 0 ||
              run_hasher_add_file(&h, path) != 0;
    if (!bad && s->trace)
      bad = sim_trace_write_json(e, outputs_path(path, sizeof path, out_dir, "trace.json")) != 0 ||
            run_hasher_add_file(&h, path) != 0;
    char figures[64];
    int len = snprintf(figures, sizeof figures, "sim_time_ps=%lld", (long long)sim_now(e));
    run_hasher_add(&h, "summary", figures, (size_t)len);
    w->run_hash = run_hasher_finish(&h);
    if (bad) rc = train_error(err, out_dir, 0, 0, "outputs.dir", "cannot write %s: %s", path, strerror(errno));
  }
  clock_gettime(CLOCK_MONOTONIC, &w1);
  w->wall_s = (double)(w1.tv_sec - w0.tv_sec) + 1e-9 * (double)(w1.tv_nsec - w0.tv_nsec);
  if (rc == 0 && write_summary(outputs_path(path, sizeof path, out_dir, "summary.json"), s, w) != 0)
    rc = train_error(err, out_dir, 0, 0, "outputs.dir", "cannot write %s: %s", path, strerror(errno));
  free(r.times);
  sim_engine_free(e);
  return rc;
}
