/*
** ps_strategy.c: ParameterServerStrategy V2 and the parameter-server side of async training
** (ds_ps_), after parameter_server_strategy_v2.py and multi_worker_util.py.
**
** Design notes
** ------------
** The strategy object is a ds_strategy table of one worker's replicas (kind DS_PARAMETER_SERVER);
** it owns a ps_state (ds__strategy_own) with the tasks, the fabric, the partitioner, the
** optimizer and the registry of components: what the ps tasks hold, one entry per plain variable
** or shard (and the optimizer's iterations), each with its ps, version and optimizer slots.
** A component's value is its variable's copy: reads and pushes work on the variables the
** program holds, so ds_variable_read in cross-replica context sees the ps's current value.
**
** Timed operations start every transfer of a read or push at once and wait for them with
** sim_wait_all; each transfer's on_done notification runs at its own completion time and does
** the numerics there (copy the value, or apply the update: md_optimizer_update for a dense
** gradient, md_optimizer_update_sparse for IndexedSlices, cut per shard by the div rule before
** the transfers start). A kill of the worker withdraws the wait, so no notification of a killed
** operation ever runs.
**
** A read operation is what a closure's tf.function reads (ds_ps_read_many): the runtime runs an
** op once its inputs are ready, and a ReadVariableOp or a ResourceGather on a ps has none from
** the others, so every variable's transfers and every lookup's requests start together
** ("a worker executes the tf.function by reading the variables from parameter servers",
** parameter_server_strategy_v2.py; embedding_lookup "performs parallel lookups on the variable
** components"). optimizer.iterations travels with them: Keras' Adam._prepare_local computes
** local_step = cast(self.iterations + 1) with no input from the gradients, while
** OptimizerV2._distributed_apply bumps it only "with ops.control_dependencies(update_ops)":
** iterations.assign_add(1), after the push (optimizer_v2.py). A lookup's responses are the one
** dependency inside the operation: its last request's notification starts them
** (sim_wait_extend), so they join the same wait.
**
** Invariants:
**  1. comps[] lists the components in creation order; a variable's components are contiguous
**     and leave together when it is freed (ds__ps_forget_variable).
**  2. A component's version counts the updates applied to it: +1 per push that arrived at a live
**     ps, never otherwise.
**  3. A worker has at most one operation in flight, ops[worker + 1] (ops[0]: the coordinator).
**     Its memory is reclaimed by that worker's next operation, ds_ps_worker_release or the
**     strategy's free, never by a notification.
**  4. counter is the number of round-robin slots taken: every plain variable, every shard, the
**     optimizer's iterations; never a colocated variable.
**  5. A component's slots and value are reserved on its ps's RAM pool for as long as it exists.
**  6. An operation's transfers are in one sim_wait_all, acts[0..nacts): its n transfers, then
**     the responses its lookups' notifications added; so a kill withdraws all of them and a
**     read returns only once every value was copied.
*/
#include "strategies/ps/psInt.h"

#include <string.h>

/* ---- building ---------------------------------------------------------------------------- */

static void make_task(sim_engine *e, ps_task *t, const char *job, int index, int host, const ds_machine *m) {
  char name[DS_DEVICE_NAME_MAX + 8];
  snprintf(t->device, sizeof t->device, "/job:%s/replica:0/task:%d/device:CPU:0", job, index);
  snprintf(name, sizeof name, "%s%d.cpu", job, index);
  t->cpu = sim_cpu_new(e, name, m->flops_per_s);
  snprintf(name, sizeof name, "%s%d.ram", job, index);
  t->ram = sim_mempool_new(e, name, (uint64_t)m->ram_bytes);
  t->roofline = (sim_roofline){ m->flops_per_s, m->mem_bytes_per_s, {0} };
  t->host = host;
}

void ds__ps_op_free(ps_op *op) {
  if (op == NULL) return;
  for (int i = 0; i < op->nreads; i++) md_tensor_free(op->reads[i].out);
  free(op->reads);
  for (int i = 0; i < op->npieces; i++) md_tensor_free(op->pieces[i]);
  free(op->pieces);
  free(op->xfers);
  free(op->acts);
  free(op);
}

static void state_free(void *arg) {
  ps_state *ps = arg;
  ds__disconnect_process(ps);
  if (ps->coordinator) ds_coordinator_free(ps->coordinator);  /* its actors run on the tasks' cpus */
  ds_variable_free(ps->iterations);
  for (int i = 0; i < ps->ncomps; i++)
    for (int k = 0; k < ps->comps[i].nslots; k++) free(ps->comps[i].slots[k]);
  for (int w = 0; w <= ps->nworkers; w++) ds__ps_op_free(ps->ops[w]);
  free(ps->ops);
  free(ps->comps);
  if (ps->fabric) sim_fabric_free(ps->fabric);
  free(ps->gpu_links);
  free(ps->tasks);
  free(ps);
}

/* A route between two of worker 0's accelerators: [up of one, down of the other]. */
static size_t gpu_route(void *ctx, int from, int to, sim_link **out, size_t max) {
  ps_state *ps = ctx;
  sim_link *r[2] = { ps->gpu_links[2 * from], ps->gpu_links[2 * to + 1] };
  for (size_t i = 0; i < 2 && i < max; i++) out[i] = r[i];
  return 2;
}

/* The strategy's replicas: worker 0's accelerators (each a compute unit, HBM, and links to the
** VM), or its CPU. */
/* What a ParameterServerStrategy does where the Strategy base's rules are not its rules: its
** variables live on the ps tasks (ps_registry.c). */
static const ds__kind_ops PS_OPS = { .create_variable = ds__ps_create_variable,
                                     .forget_variable = ds__ps_forget_variable };

static ds_strategy *make_replicas(sim_engine *e, ps_state *ps, const ds_machine *m) {
  const ds_accelerators *a = &m->accel;
  ps_task *w0 = task(ps, DS_PS_WORKER, 0);
  int n = a->count > 0 ? a->count : 1;
  ds_device *devs = base_xcalloc((size_t)n, sizeof *devs);
  char (*names)[DS_DEVICE_NAME_MAX] = base_xcalloc((size_t)n, sizeof *names);
  ps->ngpus = a->count;
  ps->gpu_links = base_xcalloc(2 * (size_t)n, sizeof *ps->gpu_links);
  for (int k = 0; k < n; k++) {
    ds_device *d = &devs[k];
    d->worker = 0;
    d->host = w0->cpu;
    if (a->count == 0) {
      d->name = w0->device;
      d->cpu = w0->cpu;
      d->memory = w0->ram;
      d->roofline = w0->roofline;
      continue;
    }
    char name[64];
    snprintf(names[k], sizeof names[k], "/job:worker/replica:0/task:0/device:GPU:%d", k);
    d->name = names[k];
    snprintf(name, sizeof name, "worker0.gpu%d", k);
    d->cpu = sim_cpu_new(e, name, ds_accelerator_rate(a));
    snprintf(name, sizeof name, "worker0.gpu%d.hbm", k);
    d->memory = sim_mempool_new(e, name, (uint64_t)a->hbm_bytes);
    d->roofline = ds_accelerator_roofline(a);
    d->workspace = a->workspace_bytes;
    snprintf(name, sizeof name, "worker0.gpu%d.up", k);
    ps->gpu_links[2 * k] = sim_link_new(e, name, a->link_bytes_per_s, a->link_latency);
    snprintf(name, sizeof name, "worker0.gpu%d.down", k);
    ps->gpu_links[2 * k + 1] = d->infeed = sim_link_new(e, name, a->link_bytes_per_s, a->link_latency);
  }
  ds_strategy *s = ds_strategy_new_table(e, DS_PARAMETER_SERVER, n, 1, devs, n > 1 ? gpu_route : NULL,
                                         ps, SIM_ALGO_RING);
  free(devs);
  free(names);
  return s;
}

ds_strategy *ds_ps_strategy_new(sim_engine *e, const ds_ps_cluster_spec *spec, const ds_ps_cluster *m,
                                const ds_partitioner *variable_partitioner, ds_status *st) {
  ds_status_clear(st);
  if (ds__ps_check_spec(spec, st) != 0) return NULL;
  ps_state *ps = base_xcalloc(1, sizeof *ps);
  ps->engine = e;
  ps->nworkers = spec->workers;
  ps->nps = spec->ps;
  ps->nevaluators = spec->evaluators;
  /* The evaluator's host comes last, so a cluster without one keeps every host and link. */
  int coordinator = ps->nworkers + ps->nps, hosts = coordinator + 1 + ps->nevaluators;
  ps->tasks = base_xcalloc((size_t)hosts, sizeof *ps->tasks);
  double *nics = base_xcalloc((size_t)hosts, sizeof *nics);
  for (int h = 0; h < hosts; h++) {
    int w = h < ps->nworkers, p = !w && h < coordinator, ev = h > coordinator;
    const ds_machine *mach = w ? &m->worker : p ? &m->ps : ev ? &m->evaluator : &m->coordinator;
    const char *job = w ? "worker" : p ? "ps" : ev ? "evaluator" : spec->task_type[0] ? spec->task_type : "chief";
    int index = w ? h : p ? h - ps->nworkers : !ev && spec->task_type[0] ? spec->task_index : 0;
    make_task(e, &ps->tasks[h], job, index, h, mach);
    nics[h] = mach->nic_bytes_per_s;
  }
  ps->fabric = sim_fabric_new(e, m->fabric, hosts, "fabric.t", m->link_bytes_per_s, nics, m->latency);
  free(nics);
  ps->has_partitioner = variable_partitioner != NULL;
  if (variable_partitioner) ps->partitioner = *variable_partitioner;
  ps->ops = base_xcalloc((size_t)ps->nworkers + 1, sizeof *ps->ops);
  ds_strategy *s = make_replicas(e, ps, &m->worker);
  ds__strategy_own(s, state_free, ps);
  ds__strategy_set_kind(s, &PS_OPS, NULL);
  ds__strategy_set_host(s, task(ps, DS_PS_COORDINATOR, 0)->device);
  ds__connect_process(ps, task(ps, DS_PS_COORDINATOR, 0)->device);
  return s;
}

/* ---- tasks ------------------------------------------------------------------------------- */

int ds_ps_num_tasks(const ds_strategy *s, ds_ps_job job) {
  ps_state *ps = state_of(s);
  return job == DS_PS_WORKER ? ps->nworkers : job == DS_PS_PS ? ps->nps : job == DS_PS_COORDINATOR ? 1
       : ps->nevaluators;
}
const char *ds_ps_task_device(const ds_strategy *s, ds_ps_job job, int index) {
  return task(state_of(s), job, index)->device;
}
sim_cpu *ds_ps_task_cpu(const ds_strategy *s, ds_ps_job job, int index) {
  return task(state_of(s), job, index)->cpu;
}
sim_mempool *ds_ps_task_memory(const ds_strategy *s, ds_ps_job job, int index) {
  return task(state_of(s), job, index)->ram;
}
sim_roofline ds_ps_task_roofline(const ds_strategy *s, ds_ps_job job, int index) {
  return task(state_of(s), job, index)->roofline;
}

size_t ds__ps_host_route(ps_state *ps, int from, int to, sim_link **out, size_t max) {
  return from == to ? 0 : sim_fabric_route(ps->fabric, from, to, out, max);
}

size_t ds_ps_route(const ds_strategy *s, ds_ps_job from_job, int from, ds_ps_job to_job, int to,
                   sim_link **out, size_t max) {
  ps_state *ps = state_of(s);
  return ds__ps_host_route(ps, task(ps, from_job, from)->host, task(ps, to_job, to)->host, out, max);
}

void ds_ps_set_failed(ds_strategy *s, int ps, int failed) { task(state_of(s), DS_PS_PS, ps)->failed = failed != 0; }
int ds_ps_failed(const ds_strategy *s, int ps) { return task(state_of(s), DS_PS_PS, ps)->failed; }

/* ---- the coordinator ------------------------------------------------------------------- */

ds_coordinator *ds_cluster_coordinator_new(ds_strategy *s, ds_status *st) {
  ps_state *ps = s ? state_of(s) : NULL;
  if (ps == NULL) {
    ds_status_set(st, DS_VALUE_ERROR, "Only `tf.distribute.experimental.ParameterServerStrategy` is supported "
                  "to work with `tf.distribute.experimental.coordinator.ClusterCoordinator` currently.");
    return NULL;
  }
  if (ps->coordinator) return ps->coordinator;
  const char **names = base_xcalloc((size_t)ps->nworkers, sizeof *names);
  sim_cpu **cpus = base_xcalloc((size_t)ps->nworkers, sizeof *cpus);
  char (*devices)[DS_DEVICE_NAME_MAX] = base_xcalloc((size_t)ps->nworkers, sizeof *devices);
  for (int w = 0; w < ps->nworkers; w++) {
    /* The coordinator names a worker by its job and task ("/job:worker/replica:0/task:W"), as
    ** the errors of TF's RPC layer do: the device name without its device part. */
    snprintf(devices[w], sizeof devices[w], "%s", task(ps, DS_PS_WORKER, w)->device);
    char *dev = strstr(devices[w], "/device:");
    if (dev) *dev = '\0';
    names[w] = devices[w];
    cpus[w] = task(ps, DS_PS_WORKER, w)->cpu;
  }
  ps->coordinator = ds_coordinator_new(ps->engine, ps->nworkers, names, cpus, ps->nps, st);
  free(devices);
  free(cpus);
  free(names);
  return ps->coordinator;
}
