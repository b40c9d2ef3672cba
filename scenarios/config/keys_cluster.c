/*
** keys_cluster.c: the cluster section: TPU slice, CPU VMs (workers, ps, chief, evaluator), fabric, TF_CONFIG.
*/
#include "scenarios/config/configInt.h"

#include <stdlib.h>
#include <string.h>

#include "scenarios/config/machines.h"
#include "strategies/tpu/device_assignment.h"

static const char *const TOPOLOGIES[] = {"star", "ring", "torus2d", "torus3d", "fat_tree", NULL};

static const key_spec ACCEL_KEYS[] = {
  {.key = "count", .type = V_INT, .st = S_INT, OFF(scn_machine, accelerators), .lo = 1, .required = 1},
  {.key = "peak", .type = V_UNIT, .unit = UNIT_FLOPS, .st = S_DOUBLE, OFF(scn_machine, accel_peak_flops), .lo_open = 1, .required = 1},
  {.key = "hbm", .type = V_UNIT, .unit = UNIT_SIZE, .st = S_DOUBLE, OFF(scn_machine, accel_hbm_bytes), .lo_open = 1, .required = 1},
  {.key = "hbm_bandwidth", .type = V_UNIT, .unit = UNIT_BANDWIDTH, .st = S_DOUBLE, OFF(scn_machine, accel_hbm_bytes_per_s), .lo_open = 1, .required = 1},
  {.key = "link", .type = V_UNIT, .unit = UNIT_BANDWIDTH, .st = S_DOUBLE, OFF(scn_machine, accel_link_bytes_per_s), .lo_open = 1, .required = 1},
  {.key = "link_latency", .type = V_UNIT, .unit = UNIT_DURATION, .st = S_DOUBLE, OFF(scn_machine, accel_link_latency_s), .hi = 1},
  {.key = "efficiency", .type = V_NUM, .st = S_DOUBLE, OFF(scn_machine, accel_efficiency), .lo = 0, .lo_open = 1, .hi = 1},
  {.key = "workspace", .type = V_UNIT, .unit = UNIT_SIZE, .st = S_DOUBLE, OFF(scn_machine, accel_workspace_bytes)},
  {.key = "per_op_model", .type = V_ENUM, .names = MACHINES_GPU_MODELS, .st = S_INT, OFF(scn_machine, accel_per_op_gpu),
   .doc = "time ops by that catalogue GPU's per-op model at this accelerator's peak (docs/machine.md, \"Compute\"); none (default): the scalar roofline at efficiency"},
  END};
static const key_spec MACHINE_KEYS[] = {
  {.key = "cpus", .type = V_INT, .st = S_INT, OFF(scn_machine, cpus), .lo = 1, .hi = 4096, .required = 1},
  {.key = "flops", .type = V_UNIT, .unit = UNIT_FLOPS, .st = S_DOUBLE, OFF(scn_machine, flops), .lo = 1e6, .required = 1},
  {.key = "ram", .type = V_UNIT, .unit = UNIT_SIZE, .st = S_DOUBLE, OFF(scn_machine, ram_bytes), .lo_open = 1},
  {.key = "nic", .type = V_UNIT, .unit = UNIT_BANDWIDTH, .st = S_DOUBLE, OFF(scn_machine, nic_bytes_per_s), .lo_open = 1},
  {.key = "memory_bandwidth", .type = V_UNIT, .unit = UNIT_BANDWIDTH, .st = S_DOUBLE, OFF(scn_machine, mem_bytes_per_s), .lo_open = 1},
  {.key = "accelerators", .type = V_MAP, .sub = ACCEL_KEYS},
  END};

/* A GPU system's count key (gpus, nics) as an integer from 1 to hi that divides `divides` (0: any);
** 0 with *out set, or -1 with the error reported. */
static int gpu_count(cfg_ctx *c, const yt_node *v, const char *path, const scn_machine *m, const char *key,
                     int hi, int divides, int *out) {
  char sub[256], fb[80];
  cfg_join(sub, sizeof sub, path, key);
  char *end = NULL;
  long n = v->kind == YT_SCALAR ? strtol(v->text, &end, 10) : 0;
  if (!(m->accel_nvlink_bytes_per_s > 0))
    return cfg_fail(c, v, sub, "%s has no GPUs; %s is for a GPU system (dgx-a100, dgx-h100)", m->type, key);
  if (end == NULL || end == v->text || *end != 0 || n < 1 || n > hi || (divides > 0 && divides % n != 0))
    return cfg_fail(c, v, sub, divides > 0 ? "expected a divisor of %d (the GPUs of a %s), found %s"
                                           : "expected an integer from 1 to %d (the GPUs of a %s), found %s",
                    hi, m->type, cfg_found(v, fb, sizeof fb));
  *out = (int)n;
  return 0;
}

/* A GPU system's efficiency: a number in (0, 1] that replaces its GPUs' per-op model with the
** scalar roofline at that fraction of peak; 0, or -1 with the error reported. */
static int gpu_efficiency(cfg_ctx *c, const yt_node *v, const char *path, scn_machine *m) {
  char sub[256], fb[80];
  cfg_join(sub, sizeof sub, path, "efficiency");
  char *end = NULL;
  double x = v->kind == YT_SCALAR ? strtod(v->text, &end) : 0;
  if (!(m->accel_nvlink_bytes_per_s > 0))
    return cfg_fail(c, v, sub, "%s has no GPUs; efficiency is for a GPU system (dgx-a100, dgx-h100)", m->type);
  if (end == NULL || end == v->text || *end != 0 || !(x > 0 && x <= 1))
    return cfg_fail(c, v, sub, "expected a number in (0, 1], found %s", cfg_found(v, fb, sizeof fb));
  m->accel_efficiency = x;
  m->accel_op = (sim_opmodel){0};
  return 0;
}

/* A GPU system's nic_bandwidth: the rate of each of its GPU NICs, one way (a bandwidth such as
** 100Gb/s: a slower or faster NIC than the catalogue's, e.g. RoCE at 100 Gb/s); 0, or -1 with the
** error reported. */
static int gpu_nic_rate(cfg_ctx *c, const yt_node *v, const char *path, scn_machine *m) {
  char sub[256], why[200];
  cfg_join(sub, sizeof sub, path, "nic_bandwidth");
  if (!(m->accel_nvlink_bytes_per_s > 0))
    return cfg_fail(c, v, sub, "%s has no GPUs; nic_bandwidth is for a GPU system (dgx-a100, dgx-h100)", m->type);
  double x = 0;
  if (v->kind != YT_SCALAR || units_parse(UNIT_BANDWIDTH, v->text, &x, why, sizeof why))
    return cfg_fail(c, v, sub, "%s", v->kind != YT_SCALAR ? "expected a bandwidth such as 100Gb/s" : why);
  if (!(x > 0)) return cfg_fail(c, v, sub, "expected a bandwidth above 0, found %s", v->text);
  m->accel_nic_bytes_per_s = x;
  return 0;
}

/* A GPU system's transport: how its GPU NICs reach other VMs, a name of the catalogue's
** (machines.c): its latency and, for InfiniBand and TCPX, its line rate; 0, or -1 with the error
** reported. */
static int gpu_transport(cfg_ctx *c, const yt_node *v, const char *path, scn_machine *m) {
  char sub[256], fb[80], list[256];
  cfg_join(sub, sizeof sub, path, "transport");
  if (!(m->accel_nvlink_bytes_per_s > 0))
    return cfg_fail(c, v, sub, "%s has no GPUs; transport is for a GPU system (dgx-a100, dgx-h100)", m->type);
  machines_list_transports(list, sizeof list);
  if (v->kind != YT_SCALAR || yt_is_null(v) || machines_set_transport(m, v->text))
    return cfg_fail(c, v, sub, "expected a transport (%s), found %s", list, cfg_found(v, fb, sizeof fb));
  return 0;
}

/* machine: {type: NAME} or, for a GPU system, {type: NAME, gpus: N, nics: M, efficiency: E}: the
** first N of its GPUs (CUDA_VISIBLE_DEVICES, as a benchmark on part of a node runs), M NICs where
** it has one per GPU (an HGX board with fewer: GPU k on NIC k / (8 / M)), and E, when given, the
** scalar roofline's fraction of peak instead of the per-op model (docs/machine.md, "Compute"). */
static int machine_type(cfg_ctx *c, const yt_node *v, const char *path, scn_machine *m) {
  const yt_node *t = yt_get(v, "type"), *g = yt_get(v, "gpus"), *n = yt_get(v, "nics"), *e = yt_get(v, "efficiency"),
                *r = yt_get(v, "nic_bandwidth"), *tr = yt_get(v, "transport");
  char sub[256], fb[80];
  cfg_join(sub, sizeof sub, path, "type");
  if (t->kind != YT_SCALAR || yt_is_null(t))
    return cfg_fail(c, t, sub, "expected a catalogue machine type such as dgx-a100, found %s", cfg_found(t, fb, sizeof fb));
  for (int i = 0; i < v->n; i++)
    if (strcmp(v->keys[i]->text, "type") && strcmp(v->keys[i]->text, "gpus") && strcmp(v->keys[i]->text, "nics") &&
        strcmp(v->keys[i]->text, "efficiency") && strcmp(v->keys[i]->text, "nic_bandwidth") &&
        strcmp(v->keys[i]->text, "transport")) {
      cfg_join(sub, sizeof sub, path, v->keys[i]->text);
      return cfg_fail(c, v->keys[i], sub, "a catalogue machine takes type and, on a GPU system, gpus, nics, transport, nic_bandwidth and efficiency; found %s",
                      v->keys[i]->text);
    }
  if (machines_lookup(t->text, m)) {
    char list[1024];
    machines_list(list, sizeof list);
    return cfg_fail(c, t, sub, "unknown machine type \"%s\" (known: %s)", t->text, list);
  }
  int all = m->accelerators, nics = m->accel_gpus_per_nic > 0 ? all / m->accel_gpus_per_nic : 0;
  if (g != NULL && gpu_count(c, g, path, m, "gpus", all, 0, &m->accelerators)) return -1;
  if (n != NULL && gpu_count(c, n, path, m, "nics", all, all, &nics)) return -1;
  m->accel_gpus_per_nic = nics > 0 ? all / nics : 1; /* a CPU machine has no GPUs to share a NIC */
  if (tr != NULL && gpu_transport(c, tr, path, m)) return -1; /* before the rate: nic_bandwidth wins */
  if (r != NULL && gpu_nic_rate(c, r, path, m)) return -1;
  return e != NULL ? gpu_efficiency(c, e, path, m) : 0;
}

/* machine: a catalogue name, {type: NAME}, or {cpus, flops, ram, nic, accelerators}. */
static int machine_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  scn_machine m;
  char fb[80];
  memset(&m, 0, sizeof m);
  if (v->kind == YT_MAP && yt_get(v, "type") != NULL) {
    if (machine_type(c, v, path, &m)) return -1;
  } else if (v->kind == YT_MAP) {
    m.ram_bytes = m.nic_bytes_per_s = m.mem_bytes_per_s = -1;
    m.accel_efficiency = m.accel_link_latency_s = m.accel_workspace_bytes = -1;
    if (cfg_walk_map(c, v, path, MACHINE_KEYS, &m)) return -1;
    const yt_node *a = yt_get(v, "accelerators");
    if (m.accel_per_op_gpu > 0 && m.accel_efficiency >= 0) {
      char sub[256];
      cfg_join(sub, sizeof sub, path, "accelerators.efficiency");
      return cfg_fail(c, yt_get(a, "efficiency"), sub,
                      "efficiency is the scalar roofline's and per_op_model names a per-op model: give one of the two");
    }
    base_format(m.type, sizeof m.type, "custom");
    machines_fill_defaults(&m);
  } else if (v->kind == YT_SCALAR && !yt_is_null(v)) {
    if (machines_lookup(v->text, &m)) {
      char list[1024];
      machines_list(list, sizeof list);
      return cfg_fail(c, v, path, "unknown machine type \"%s\" (known: %s; or a mapping {cpus, flops, ram, nic, accelerators})",
                  v->text, list);
    }
  } else {
    return cfg_fail(c, v, path, "expected a machine type such as n2-standard-8 or a mapping {cpus, flops, ...}, found %s",
                cfg_found(v, fb, sizeof fb));
  }
  if (k->st != S_NONE) memcpy((char *)base + k->off, &m, sizeof m);
  return 0;
}

/* cluster.tpu.type: a slice name of the sim/tpu.h catalogue (its message lists valid sizes). */
static int tpu_type_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  const sim_tpu_generation *g;
  const char *t;
  int chips, dims[3];
  char why[512];
  (void)k;
  if (cfg_get_str(c, v, path, &t)) return -1;
  if (sim_tpu_slice_parse(t, &g, &chips, dims, why, sizeof why)) return cfg_fail(c, v, path, "%s", why);
  scenario *s = base;
  base_format(s->tpu_type, sizeof s->tpu_type, "%s", t);
  memcpy(s->tpu_dims, dims, sizeof s->tpu_dims);
  return 0;
}

static const key_spec TPU_OVERRIDE_KEYS[] = {
  {.key = "hbm", .type = V_UNIT, .unit = UNIT_SIZE, .lo_open = 1, .st = S_DOUBLE, OFF(scenario, tpu_hbm_bytes)},
  {.key = "ici_bandwidth", .type = V_UNIT, .unit = UNIT_BANDWIDTH, .lo_open = 1, .st = S_DOUBLE,
   OFF(scenario, tpu_ici_bytes_per_s)},
  {.key = "peak_bf16", .type = V_UNIT, .unit = UNIT_FLOPS, .lo = 1e6, .st = S_DOUBLE, OFF(scenario, tpu_peak_flops)},
  {.key = "efficiency", .type = V_NUM, .lo = 0, .lo_open = 1, .hi = 1, .st = S_DOUBLE, OFF(scenario, tpu_efficiency),
   .doc = "when given, every op runs at this fraction of peak (the scalar roofline) instead of the generation's per-op model"},
  END};
static const key_spec TPU_KEYS[] = {
  {.key = "type", .type = V_FN, .fn = tpu_type_fn, .required = 1,
   .schema = "{\"type\":\"string\",\"pattern\":\"^(v2|v3|v4|v5p|v5litepod|v6e)-[0-9]+$\",\"description\":\"a Cloud TPU slice: v2-N v3-N v4-N v5p-N (N TensorCores), v5litepod-N v6e-N (N chips), the sizes Cloud TPU lists; on v4/v5p any whole-cube size within the pod (v4-6144: 3072 chips, 12x16x16)\"}"},
  {.key = "topology", .type = V_STR, .doc = "chips per axis, AxB (v2, v3, v5e, v6e) or AxBxC (v4, v5p: all at most 4 or all multiples of 4), their product the chips of the type"},
  {.key = "overrides", .type = V_MAP, .sub = TPU_OVERRIDE_KEYS},
  {.key = "slices", .type = V_INT, .lo = 1, .hi = 64, .st = S_INT, OFF(scenario, tpu_slices),
   .doc = "slices of the type joined by the data-centre network (Cloud TPU Multislice)"},
  END};

/* The topology AxB or AxBxC must fit the type (sim_tpu_topology_parse says how). */
static int tpu_post(cfg_ctx *c, const yt_node *map, const char *path, void *base) {
  const yt_node *topo = yt_get(map, "topology"), *type = yt_get(map, "type");
  const sim_tpu_generation *g;
  int chips, dims[3];
  char sub[256], why[512];
  if (!topo || sim_tpu_slice_parse(type->text, &g, &chips, dims, NULL, 0)) return 0;
  cfg_join(sub, sizeof sub, path, "topology");
  if (sim_tpu_topology_parse(g, chips, topo->text, dims, why, sizeof why)) return cfg_fail(c, topo, sub, "%s", why);
  memcpy(((scenario *)base)->tpu_dims, dims, sizeof dims);
  return 0;
}

/* tf_config: TF_CONFIG as TensorFlow reads it from the environment: {"cluster": {"chief": [...],
** "worker": [...], "ps": [...], "evaluator": [...]}, "task": {"type": ..., "index": ...}}, as a file
** name, inline JSON text or an inline mapping (JSON is YAML, so positions inside a JSON file are
** reported as that file's line:col). Only the number of tasks of each job matters to the
** simulation; the addresses are checked to be strings. */
const char *const CFG_TF_JOBS[] = {"chief", "worker", "ps", "evaluator", NULL};

static int tf_config_cluster(cfg_ctx *c, const yt_node *cl, const char *path, int counts[4]) {
  char sub[256], item[280];
  if (cfg_get_map(c, cl, path, "a mapping of jobs (chief, worker, ps, evaluator) to lists of addresses")) return -1;
  if (cl->n == 0) return cfg_fail(c, cl, path, "ValueError: the cluster spec is empty");
  for (int i = 0; i < cl->n; i++) {
    int job = -1;
    for (int j = 0; CFG_TF_JOBS[j]; j++)
      if (!strcmp(CFG_TF_JOBS[j], cl->keys[i]->text)) job = j;
    cfg_join(sub, sizeof sub, path, cl->keys[i]->text);
    if (job < 0) return cfg_fail(c, cl->keys[i], sub, "unknown job \"%s\" (jobs: chief, worker, ps, evaluator)", cl->keys[i]->text);
    const yt_node *tasks = cl->items[i];
    if (cfg_get_seq(c, tasks, sub, "a non-empty list of task addresses such as [\"host:2222\"]")) return -1;
    if ((job == 0 || job == 3) && tasks->n > 1)
      return cfg_fail(c, tasks, sub, "expected one %s task, found %d", CFG_TF_JOBS[job], tasks->n);
    for (int t = 0; t < tasks->n; t++) {
      const char *addr;
      base_format(item, sizeof item, "%s[%d]", sub, t);
      if (cfg_get_str(c, tasks->items[t], item, &addr)) return -1;
    }
    counts[job] = tasks->n;
  }
  return 0;
}

/* Records the task's job (scenario.tf_config_task); ps_checks refuses a worker or ps coordinator. */
int cfg_tf_config_task(cfg_ctx *c, const yt_node *task, const char *path, const int counts[4]) {
  static const key_spec one = {.key = "index", .type = V_INT, .lo = 0, .hi = 100000};
  char sub[256];
  const char *type = "chief";
  long long index = 0;
  if (cfg_get_map(c, task, path, "a mapping {type: chief, index: 0}")) return -1;
  for (int i = 0; i < task->n; i++) {
    const char *k = task->keys[i]->text;
    cfg_join(sub, sizeof sub, path, k);
    if (!strcmp(k, "type")) { if (cfg_get_str(c, task->items[i], sub, &type)) return -1; }
    else if (!strcmp(k, "index")) { if (cfg_get_int(c, &one, task->items[i], sub, &index)) return -1; }
    else return cfg_fail(c, task->keys[i], sub, "unknown key \"%s\" (task keys: type, index)", k);
  }
  int job = -1;
  for (int j = 0; CFG_TF_JOBS[j]; j++)
    if (!strcmp(CFG_TF_JOBS[j], type)) job = j;
  cfg_join(sub, sizeof sub, path, "type");
  const yt_node *at = yt_get(task, "type") ? yt_get(task, "type") : task;
  if (job < 0) return cfg_fail(c, at, sub, "unknown job \"%s\" (jobs: chief, worker, ps, evaluator)", type);
  c->s->tf_config_task = job;
  cfg_join(sub, sizeof sub, path, "index");
  if (index >= counts[job])
    return cfg_fail(c, yt_get(task, "index") ? yt_get(task, "index") : task, sub,
                "expected a task index below the %d %s task(s) of the cluster, found %lld", counts[job], type, index);
  return 0;
}

static int tf_config_walk(cfg_ctx *c, const yt_node *v, const char *path) {
  char sub[256];
  int counts[4] = {0, 0, 0, 0};
  const yt_node *cl = yt_get(v, "cluster");
  if (cfg_get_map(c, v, path, "TF_CONFIG: a mapping {cluster: {...}, task: {type, index}}")) return -1;
  for (int i = 0; i < v->n; i++) {
    const char *k = v->keys[i]->text;
    if (!strcmp(k, "cluster") || !strcmp(k, "task") || !strcmp(k, "environment") || !strcmp(k, "rpc_layer")) continue;
    cfg_join(sub, sizeof sub, path, k);
    return cfg_fail(c, v->keys[i], sub, "unknown key \"%s\" (TF_CONFIG keys: cluster, task, environment, rpc_layer)", k);
  }
  cfg_join(sub, sizeof sub, path, "cluster");
  if (!cl) return cfg_fail(c, v, sub, "missing required key \"cluster\"");
  if (tf_config_cluster(c, cl, sub, counts)) return -1;
  cfg_join(sub, sizeof sub, path, "task");
  if (yt_get(v, "task") && cfg_tf_config_task(c, yt_get(v, "task"), sub, counts)) return -1;
  scenario *s = c->s;
  s->tf_config = 1;
  s->has_chief = counts[0];
  s->workers = counts[1];
  s->ps = counts[2];
  s->has_evaluator = counts[3];
  return 0;
}

static int tf_config_fn(cfg_ctx *c, const key_spec *k, const yt_node *v, const char *path, void *base) {
  char resolved[SCN_PATH_MAX];
  const char *t;
  yt_error ye;
  (void)k; (void)base;
  if (v->kind == YT_MAP) return tf_config_walk(c, v, path);
  if (cfg_get_str(c, v, path, &t)) return -1;
  yt_doc *d;
  if (t[0] == '{') {
    d = yt_parse_text(t, v->file, v->line - 1, v->col - 1, &ye);
  } else {
    if (cfg_resolve_file(c, v, path, t, resolved, sizeof resolved)) return -1;
    d = yt_parse_file(resolved, &ye);
  }
  if (!d) return cfg_fail(c, v, path, "cannot read TF_CONFIG: %s:%d:%d: %s", ye.file, ye.line, ye.col, ye.msg);
  int rc = d->root ? tf_config_walk(c, d->root, path) : cfg_fail(c, v, path, "TF_CONFIG is empty");
  yt_doc_free(d);
  return rc;
}

#define MACHINE_SCHEMA "{\"anyOf\":[{\"type\":\"string\",\"pattern\":\"^(n[12]-standard-[0-9]+|dgx-a100|dgx-h100|dgx-1|dgx-2|dgx-b200|a2-(high|ultra)gpu-[1248]g|a3-(high|mega|ultra)gpu-8g|a4-highgpu-8g|g2-standard-(4|8|12|16|24|32|48|96)|p4de?[.]24xlarge|p5e?[.]48xlarge|Standard_ND96(asr_v4|amsr_A100_v4|isr_H100_v5))$\",\"description\":\"a catalogue machine type (docs/scenario-format.md, Machine catalogue)\"},{\"type\":\"object\",\"properties\":{\"type\":{\"type\":\"string\",\"pattern\":\"^(n[12]-standard-[0-9]+|dgx-a100|dgx-h100|dgx-1|dgx-2|dgx-b200|a2-(high|ultra)gpu-[1248]g|a3-(high|mega|ultra)gpu-8g|a4-highgpu-8g|g2-standard-(4|8|12|16|24|32|48|96)|p4de?[.]24xlarge|p5e?[.]48xlarge|Standard_ND96(asr_v4|amsr_A100_v4|isr_H100_v5))$\"},\"gpus\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":16,\"description\":\"a GPU system's first N GPUs\"},\"nics\":{\"enum\":[1,2,4,8],\"description\":\"the NICs its GPUs share (default one per GPU)\"},\"transport\":{\"enum\":[\"infiniband-edr\",\"infiniband-hdr\",\"infiniband-ndr\",\"roce\",\"efa\",\"gpudirect-tcpx\",\"gpudirect-tcpxo\",\"gvnic\"],\"description\":\"how its GPU NICs reach other VMs: the transport's latency and, for InfiniBand and TCPX, its line rate (default the catalogue's)\"},\"nic_bandwidth\":{\"type\":\"string\",\"description\":\"each GPU NIC's rate, one way, e.g. 100Gb/s (default the catalogue's)\"},\"efficiency\":{\"type\":\"number\",\"exclusiveMinimum\":0,\"maximum\":1,\"description\":\"a GPU system's fraction of peak for every op (the scalar roofline) instead of its per-op model\"}},\"required\":[\"type\"],\"additionalProperties\":false,\"description\":\"a catalogue machine by name, e.g. {type: dgx-h100}, or part of a GPU system {type: dgx-a100, gpus: 2}\"},\"$map\"],\"description\":\"a Compute Engine machine type such as n2-standard-8 or a GPU system or GPU VM (dgx-a100, dgx-h100, a3-highgpu-8g, p5.48xlarge, ...), or a custom machine {cpus, flops, ram, nic, memory_bandwidth, accelerators}\"}"
static const key_spec WORKER_KEYS[] = {
  {.key = "count", .type = V_INT, .st = S_INT, OFF(scenario, workers), .lo = 1, .hi = 100000},
  {.key = "machine", .type = V_FN, .fn = machine_fn, .map = MACHINE_KEYS, .schema = MACHINE_SCHEMA, .st = S_CHARS, OFF(scenario, worker_machine)},
  END};
static const key_spec PS_KEYS[] = {
  {.key = "count", .type = V_INT, .st = S_INT, OFF(scenario, ps), .lo = 1, .hi = 100000},
  {.key = "machine", .type = V_FN, .fn = machine_fn, .map = MACHINE_KEYS, .schema = MACHINE_SCHEMA, .st = S_CHARS, OFF(scenario, ps_machine)},
  END};
static const key_spec CHIEF_KEYS[] = {
  {.key = "machine", .type = V_FN, .fn = machine_fn, .map = MACHINE_KEYS, .schema = MACHINE_SCHEMA, .st = S_CHARS, OFF(scenario, chief_machine)},
  END};
static const key_spec EVALUATOR_KEYS[] = {
  {.key = "machine", .type = V_FN, .fn = machine_fn, .map = MACHINE_KEYS, .schema = MACHINE_SCHEMA, .st = S_CHARS, OFF(scenario, evaluator_machine)},
  {.key = "steps", .type = V_INT, .st = S_LONG, OFF(scenario, eval_steps), .lo = 1, .hi = 1e7},
  {.key = "poll_interval", .type = V_UNIT, .unit = UNIT_DURATION, .lo_open = 1, .st = S_DOUBLE,
   OFF(scenario, eval_poll_s), .hi = 86400},
  END};
static const key_spec FABRIC_KEYS[] = {
  {.key = "topology", .type = V_ENUM, .names = TOPOLOGIES, .st = S_INT,
   OFF(scenario, fabric)},
  {.key = "link_bandwidth", .type = V_UNIT, .unit = UNIT_BANDWIDTH, .lo_open = 1, .st = S_DOUBLE,
   OFF(scenario, fabric_bytes_per_s)},
  {.key = "latency", .type = V_UNIT, .unit = UNIT_DURATION, .st = S_DOUBLE, OFF(scenario, fabric_latency_s), .hi = 1},
  END};
const key_spec CFG_CLUSTER_KEYS[] = {
  {.key = "tpu", .type = V_MAP, .sub = TPU_KEYS, .post = tpu_post},
  {.key = "workers", .type = V_MAP, .sub = WORKER_KEYS},
  {.key = "ps", .type = V_MAP, .sub = PS_KEYS},
  {.key = "chief", .type = V_MAP, .sub = CHIEF_KEYS},
  {.key = "evaluator", .type = V_MAP, .sub = EVALUATOR_KEYS},
  {.key = "fabric", .type = V_MAP, .sub = FABRIC_KEYS},
  {.key = "tf_config", .type = V_FN, .fn = tf_config_fn,
   .schema = "{\"anyOf\":[{\"type\":\"string\",\"minLength\":1},{\"type\":\"object\",\"properties\":{\"cluster\":{\"type\":\"object\",\"properties\":{\"chief\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},\"worker\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},\"ps\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},\"evaluator\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}},\"additionalProperties\":false},\"task\":{\"type\":\"object\",\"properties\":{\"type\":{\"enum\":[\"chief\",\"worker\",\"ps\",\"evaluator\"]},\"index\":{\"type\":\"integer\",\"minimum\":0}},\"additionalProperties\":false}},\"additionalProperties\":false}],\"description\":\"TF_CONFIG: a JSON file's name, inline JSON text, or {cluster: {chief, worker, ps, evaluator: [addresses]}, task: {type, index}}; it gives the task counts\"}"},
  END};
