/*
** tpu.c: the TPU catalogue, slice names and topologies, and slices as engine resources
** (sim_tpu_). Figures from ../shared/reference/hardware.md; docs/machine.md says where each
** comes from and which defaults fill its gaps.
**
** A slice keeps resource pointers and each device's chip (routes need both ends' chips for
** every transfer, and working one out takes a dozen divisions): hosts, chip coordinates and
** ordinals are arithmetic on the grid (see tpu.h), and routes are walked on demand, never
** tabulated, so a 4096-chip pod costs its resources and a few words per chip.
*/
#include "sim/tpu.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/fabric.h"
#include "sim/simInt.h"

#define GB   1e9
#define GIB  (UINT64_C(1) << 30)
#define US   ((sim_time)1000000)

/* A valid slice size and its default topology, as Cloud TPU lists them. */
typedef struct slice_shape {
  int count;                 /* N of "<prefix>-N": TensorCores or chips, as the name counts */
  int dims[3];               /* default chips per axis */
} slice_shape;

struct sim_tpu_generation {
  sim_tpu_figures fig;       /* the public figures */
  int host_block[3];         /* chips one host holds along each axis */
  int cube;                  /* v4/v5p: axes wrap when the slice is whole cube^3 blocks; else 0 */
  int wrap_len;              /* 2D generations: an axis this long (the pod's) wraps */
  const slice_shape *shapes; /* valid sizes ascending, ended by count 0 (v4/v5p: those under a cube) */
};

static const slice_shape V2_SHAPES[] = {
  {8, {2, 2, 1}}, {32, {4, 4, 1}}, {128, {8, 8, 1}}, {256, {8, 16, 1}}, {512, {16, 16, 1}}, {0, {0}}};
static const slice_shape V3_SHAPES[] = {
  {8, {2, 2, 1}}, {32, {4, 4, 1}}, {64, {4, 8, 1}}, {128, {8, 8, 1}}, {256, {8, 16, 1}},
  {512, {16, 16, 1}}, {1024, {16, 32, 1}}, {2048, {32, 32, 1}}, {0, {0}}};
/* v4 and v5p: the slices smaller than a 4x4x4 cube, listed; from one cube up any AxBxC of
** multiples of 4 whose chips the pod holds (Cloud TPU's "TPU types and topologies": A, B and C
** all <= 4 or all multiples of 4; v4's pod 4096 chips, v5p's 8960), so a size such as v4-6144
** (3072 chips, PaLM's 12x16x16) is valid and cube_default works out its default shape. */
static const slice_shape CUBE_SHAPES[] = {
  {8, {2, 2, 1}}, {16, {2, 2, 2}}, {32, {2, 2, 4}}, {64, {2, 4, 4}}, {0, {0}}};
static const slice_shape LITE_SHAPES[] = {
  {1, {1, 1, 1}}, {4, {2, 2, 1}}, {8, {2, 4, 1}}, {16, {4, 4, 1}}, {32, {4, 8, 1}},
  {64, {8, 8, 1}}, {128, {8, 16, 1}}, {256, {16, 16, 1}}, {0, {0}}};

/* ICI as collectives achieve it, fitted on the one published per-collective TPU profile (How to
** Scale Your Model, https://jax-ml.github.io/scaling-book/sharding/, Pop Quiz 2: AllGather_Y on
** a v5e {X: 8, Y: 4}, 3 hops along y, 680 us for an 8,388,608-byte shard, "closer to 8us" for a
** 32,768-byte one): c + 3 x S / (e x 50 GB/s) through both points gives e = 0.746 of the links'
** spec and c = 5.36 us, a fixed cost per collective (XLA's set-up of the DMAs and the
** synchronisation that starts and ends a collective), charged once by the collective engine
** (sim_collective_set_fixed_cost). The two sizes cross the same 3 hops, so they cannot tell c
** from a cost per hop h (c + 3h = 5.36 us); a hop costs nothing beyond its bytes here because
** v6e's psum over a v6e-256 (about 20 us for 2.4 MB, docs/fidelity.md) leaves no room for one:
** podsim's torus all-reduce there runs 60 ring steps a lane, and its bytes alone take 15.8 us, so
** 60h <= 4.2 us - c. Issue 25 charged 1.79 us a hop (c = 0), 107 us of hops on that psum. v5e's
** profile is the fit; v2, v3 and v4 take it (NF: no profile of theirs was found). */
#define ICI_EFFICIENCY 0.746
/* v5p's and v6e's links as measured on them: marin-community/marin issue 6736
** (https://github.com/marin-community/marin/issues/6736, comment of 2026-06-28) sweeps a barriered
** jax.lax.ppermute from 1 KiB to 64 MiB a device on a v5p-8 and a v6e-8, timed on the device by
** the repeat count's slope, and fits time = 2.3-4.6 us + bytes / 86.3-86.8 GB/s on both: one
** link one way (a shift by one sends each device's buffer to one neighbour), 0.865 of the links'
** 100 GB/s spec, where v5e's links carry 0.746 of their 50. A sweep's slope separates the rate
** from the fixed cost (v5e's profile has two sizes); the fixed cost stays v5e's 5.36 us, inside
** the sweep's small-payload floor of 4.5-5.9 us. v6e's one multi-step collective, the psum
** (docs/fidelity.md), sits between the two rates: 0.805 at 5.36 us a collective. */
#define ICI_EFFICIENCY_V5P_V6E 0.865
#define ICI_HOP ((sim_time)0)
#define COLLECTIVE_COST ((sim_time)5360000)

/* name, prefix, cores, devices, chips/host, rank, ICI links, pod chips, HBM, HBM B/s, peak,
** ICI B/s one way, hop latency, ICI efficiency, cost per collective, PCIe B/s, PCIe latency, DCN B/s per host, DCN
** latency. Sources per value in docs/machine.md: ICI one way per link is the Cloud TPU page's
** bidirectional per-chip figure / (2 x ports): v5e 400 / 8 = 50, v5p 1200 / 12 = 100, v6e
** 800 / 8 = 100 GB/s; v6e DCN 4 x 200 Gbps NICs per host = 100 GB/s. */
static const sim_tpu_generation GENERATIONS[] = {
  {{"v2", "v2", 2, 2, 4, 2, 4, 256, 16 * GIB, 700 * GB, 45e12, 62 * GB, ICI_HOP, ICI_EFFICIENCY, COLLECTIVE_COST, 16 * GB, US, 25 * GB, 10 * US},
   {2, 2, 1}, 0, 16, V2_SHAPES},
  {{"v3", "v3", 2, 2, 4, 2, 4, 1024, 32 * GIB, 900 * GB, 123e12, 100 * GB, ICI_HOP, ICI_EFFICIENCY, COLLECTIVE_COST, 16 * GB, US, 25 * GB, 10 * US},
   {2, 2, 1}, 0, 32, V3_SHAPES},
  {{"v4", "v4", 2, 1, 4, 3, 6, 4096, 32 * GIB, 1200 * GB, 275e12, 45 * GB, ICI_HOP, ICI_EFFICIENCY, COLLECTIVE_COST, 16 * GB, US, 25 * GB, 10 * US},
   {2, 2, 1}, 4, 0, CUBE_SHAPES},
  {{"v5e", "v5litepod", 1, 1, 8, 2, 4, 256, 16000000000u, 819 * GB, 197e12, 50 * GB, ICI_HOP, ICI_EFFICIENCY, COLLECTIVE_COST, 15 * GB, US, 25 * GB,
    10 * US},
   {2, 4, 1}, 0, 16, LITE_SHAPES},
  {{"v5p", "v5p", 2, 1, 4, 3, 6, 8960, 95 * GIB, 2765 * GB, 459e12, 100 * GB, ICI_HOP, ICI_EFFICIENCY_V5P_V6E, COLLECTIVE_COST, 15 * GB, US, 25 * GB, 10 * US},
   {2, 2, 1}, 4, 0, CUBE_SHAPES},
  {{"v6e", "v6e", 1, 1, 8, 2, 4, 256, 32000000000u, 1638 * GB, 918e12, 100 * GB, ICI_HOP, ICI_EFFICIENCY_V5P_V6E, COLLECTIVE_COST, 32 * GB, US, 100 * GB,
    10 * US},
   {2, 4, 1}, 0, 16, LITE_SHAPES},
};
#define N_GENERATIONS ((int)(sizeof GENERATIONS / sizeof GENERATIONS[0]))

int sim_tpu_generation_count(void) { return N_GENERATIONS; }

const sim_tpu_generation *sim_tpu_generation_at(int index) {
  assert(index >= 0 && index < N_GENERATIONS);
  return &GENERATIONS[index];
}

const sim_tpu_generation *sim_tpu_generation_find(const char *name) {
  for (int i = 0; i < N_GENERATIONS; i++)
    if (!strcmp(name, GENERATIONS[i].fig.name) || !strcmp(name, GENERATIONS[i].fig.slice_prefix))
      return &GENERATIONS[i];
  return NULL;
}

const sim_tpu_figures *sim_tpu_generation_figures(const sim_tpu_generation *g) { return &g->fig; }

double sim_tpu_ici_rate(const sim_tpu_figures *f, double override) {
  return override > 0 ? override : f->ici_bytes_per_s * f->ici_efficiency;
}


/* The default shape of a v4/v5p slice of `chips` (at least one cube): the AxBxC of multiples
** of the cube edge, A <= B <= C, nearest a cube (Cloud TPU's default): the shortest longest axis
** C, then the longest shortest axis A (1024 chips: 8x8x16, not 4x16x16; 3072: 12x16x16; 6144:
** 16x16x24). Returns 1 with dims set, or 0 when no such shape has these chips or the pod
** holds fewer. */
static int cube_default(const sim_tpu_generation *g, int chips, int dims[3]) {
  int e = g->cube, found = 0;
  if (chips > g->fig.max_pod_chips) return 0;
  for (int a = e; a * a * a <= chips; a += e)
    for (int b = a; a * b * b <= chips; b += e) {
      if (chips % (a * b) || chips / (a * b) % e) continue;
      int c = chips / (a * b);
      if (!found || c < dims[2] || (c == dims[2] && a > dims[0])) {
        dims[0] = a, dims[1] = b, dims[2] = c;
        found = 1;
      }
    }
  return found;
}

int sim_tpu_slice_parse(const char *type, const sim_tpu_generation **g, int *chips, int dims[3],
                        char *err, size_t errlen) {
  *g = NULL;
  const char *num = NULL;
  for (int i = 0; i < N_GENERATIONS && *g == NULL; i++) {
    size_t pl = strlen(GENERATIONS[i].fig.slice_prefix);
    if (!strncmp(type, GENERATIONS[i].fig.slice_prefix, pl) && type[pl] == '-') {
      *g = &GENERATIONS[i];
      num = type + pl + 1;
    }
  }
  if (*g == NULL)
    return base_fail(err, errlen, "unknown TPU type \"%s\" (expected v2-N, v3-N, v4-N, v5p-N, v5litepod-N or v6e-N)", type);
  const sim_tpu_generation *gen = *g;
  size_t digits = strspn(num, "0123456789");
  if (digits > 0 && digits <= 6 && num[digits] == '\0' && num[0] != '0') {
    int n = atoi(num);
    for (const slice_shape *s = gen->shapes; s->count; s++)
      if (s->count == n) {
        *chips = n / gen->fig.cores_per_chip;
        memcpy(dims, s->dims, sizeof s->dims);
        return 0;
      }
    if (gen->cube && n % gen->fig.cores_per_chip == 0 && cube_default(gen, n / gen->fig.cores_per_chip, dims)) {
      *chips = n / gen->fig.cores_per_chip;
      return 0;
    }
  }
  if (gen->cube)
    return base_fail(err, errlen, "unknown slice \"%s\" (%s slices count TensorCores: 8, 16, 32, 64, or twice the "
                     "chips of an AxBxC of multiples of %d up to the %d-chip pod, such as 128 (4x4x4) or 6144 "
                     "(12x16x16))", type, gen->fig.slice_prefix, gen->cube, gen->fig.max_pod_chips);
  char sizes[256];
  size_t used = 0;
  for (const slice_shape *s = gen->shapes; s->count && used < sizeof sizes; s++) {
    int w = snprintf(sizes + used, sizeof sizes - used, "%s%d", s == gen->shapes ? "" : ", ", s->count);
    if (w < 0) break;
    used += (size_t)w;
  }
  return base_fail(err, errlen, "unknown slice \"%s\" (%s slices count %s: %s)", type, gen->fig.slice_prefix,
               gen->fig.cores_per_chip == 2 ? "TensorCores" : "chips", sizes);
}

/* The chips a host holds along each axis in a slice of these dims. */
static void host_block(const sim_tpu_generation *g, const int dims[3], int block[3]) {
  int chips = dims[0] * dims[1] * dims[2];
  for (int a = 0; a < 3; a++) block[a] = chips <= g->fig.chips_per_host ? dims[a] : g->host_block[a];
}

int sim_tpu_topology_parse(const sim_tpu_generation *g, int chips, const char *topology, int dims[3],
                           char *err, size_t errlen) {
  char slice[64];
  snprintf(slice, sizeof slice, "%s-%d", g->fig.slice_prefix, chips * g->fig.cores_per_chip);
  int axes = 0, longest = 0;
  long product = 1;
  const char *p = topology;
  dims[0] = dims[1] = dims[2] = 1;
  while (axes < 3 && *p >= '1' && *p <= '9') {
    char *end;
    long x = strtol(p, &end, 10);
    if (x > 100000) break;
    dims[axes++] = (int)x;
    product *= x;
    p = end;
    if (*p != 'x' || !p[1]) break;
    p++;
  }
  if (*p || axes != g->fig.rank)
    return base_fail(err, errlen, "expected %s chips per axis for %s, found \"%s\"",
                 g->fig.rank == 3 ? "AxBxC" : "AxB", slice, topology);
  if (product != chips)
    return base_fail(err, errlen, "%s has %ld chips but %s has %d", topology, product, slice, chips);
  for (const slice_shape *s = g->shapes; s->count; s++)
    for (int a = 0; a < 3; a++)
      if (s->dims[a] > longest) longest = s->dims[a];
  int block[3];
  host_block(g, dims, block);
  int small = 1, multiples = 1;
  for (int a = 0; a < 3; a++) {
    small &= dims[a] <= g->cube;
    multiples &= dims[a] % (g->cube ? g->cube : 1) == 0;
  }
  if (g->cube && !small && !multiples)
    return base_fail(err, errlen, "%s mixes axes: %s axes are all at most %d or all multiples of %d", topology,
                     g->fig.name, g->cube, g->cube);
  for (int a = 0; a < 3; a++) {
    if (!g->cube && dims[a] > longest)
      return base_fail(err, errlen, "%s has an axis of %d chips; %s slices have at most %d", topology, dims[a],
                   g->fig.name, longest);
    if (dims[a] % block[a])
      return base_fail(err, errlen, "%s does not split into whole %s hosts of %dx%d%s chips", topology, g->fig.name,
                   block[0], block[1], g->fig.rank == 3 ? "x1" : "");
  }
  return 0;
}

int sim_tpu_wraps(const sim_tpu_generation *g, const int dims[3], int axis) {
  assert(axis >= 0 && axis < 3);
  if (axis >= g->fig.rank) return 0;
  if (!g->cube) return dims[axis] == g->wrap_len;
  for (int a = 0; a < 3; a++)
    if (dims[a] % g->cube) return 0;
  return dims[0] * dims[1] * dims[2] >= g->cube * g->cube * g->cube;
}

/* ---- slices --------------------------------------------------------------------------- */

struct sim_tpu_slice {
  const sim_tpu_generation *gen; /* the catalogue entry */
  int dims[3];               /* chips per axis (dims[2] == 1 on 2D generations) */
  int block[3];              /* chips per host along each axis */
  unsigned wrap;             /* bit a: axis a has wraparound links */
  int chips;                 /* dims[0] * dims[1] * dims[2] */
  int hosts;                 /* chips / (block[0] * block[1] * block[2]) */
  int devices;               /* chips * devices per chip */
  sim_cpu **cpu;             /* per device: its compute, named as the device */
  sim_mempool **hbm;         /* per device: its share of the chip's HBM, named as the device */
  sim_link **ici;            /* per chip, 2 * rank: towards +x, -x, +y, -y, +z, -z; NULL where
                                the chip has no neighbour that way */
  sim_link **onchip;         /* per chip on v2/v3: core 0 -> 1, core 1 -> 0; NULL elsewhere */
  sim_link **pcie;           /* per chip: host -> chip, chip -> host */
  sim_link **dcn;            /* per host: out, in */
  sim_engine *engine;        /* where host CPUs are made on demand */
  int first_task;            /* task of host 0: index * hosts in a multislice, else 0 */
  sim_cpu **host_cpu;        /* per host: its VM's CPU, NULL until sim_tpu_host_cpu asks */
  double host_flops;         /* their rate, set by the first such call */
  int *chip_of;              /* per device: its chip, worked out once (routes ask twice per
                                transfer, and the arithmetic is a dozen divisions) */
};

/* Chip coordinates <-> chip index. */
static int chip_index(const int dims[3], const int c[3]) { return c[0] + dims[0] * (c[1] + dims[1] * c[2]); }
static void chip_coords(const int dims[3], int chip, int c[3]) {
  for (int a = 0; a < 3; a++) {
    c[a] = chip % dims[a];
    chip /= dims[a];
  }
}

static int block_devices(const sim_tpu_generation *g, const int block[3]) {
  return block[0] * block[1] * block[2] * g->fig.devices_per_chip;
}

static int devices_per_host(const sim_tpu_slice *s) { return block_devices(s->gen, s->block); }

/* The coordinates of device d's chip: its host's block origin plus its place in the block. */
static void layout_chip(const sim_tpu_generation *g, const int dims[3], const int block[3], int d, int c[3]) {
  int per_host = block_devices(g, block);
  int host = d / per_host, local = d % per_host / g->fig.devices_per_chip;
  int grid[3], h[3], l[3];
  for (int a = 0; a < 3; a++) grid[a] = dims[a] / block[a];
  chip_coords(grid, host, h);
  chip_coords(block, local, l);
  for (int a = 0; a < 3; a++) c[a] = h[a] * block[a] + l[a];
}

/* The chip of device d, worked out once when the slice is built (routes ask for it often). */
static int device_chip_of(const sim_tpu_slice *s, int d) {
  int c[3];
  layout_chip(s->gen, s->dims, s->block, d, c);
  return chip_index(s->dims, c);
}

static int device_chip(const sim_tpu_slice *s, int d) {
  assert(d >= 0 && d < s->devices);
  return s->chip_of[d];
}

int sim_tpu_layout_hosts(const sim_tpu_generation *g, const int dims[3]) {
  int block[3];
  host_block(g, dims, block);
  return dims[0] * dims[1] * dims[2] / (block[0] * block[1] * block[2]);
}

int sim_tpu_layout_devices_per_host(const sim_tpu_generation *g, const int dims[3]) {
  int block[3];
  host_block(g, dims, block);
  return block_devices(g, block);
}

void sim_tpu_layout_device_coords(const sim_tpu_generation *g, const int dims[3], int d, int coords[3]) {
  int block[3];
  host_block(g, dims, block);
  assert(d >= 0 && d < dims[0] * dims[1] * dims[2] * g->fig.devices_per_chip);
  layout_chip(g, dims, block, d, coords);
}

/* prefix + fmt(index, what): a multislice's slice j > 0 prefixes "s<j>." (prefix may be ""). */
static sim_link *named_link(sim_engine *e, const char *prefix, double bw, sim_time latency, const char *fmt,
                            int index, const char *what) {
  char name[80];
  size_t at = (size_t)snprintf(name, sizeof name, "%s", prefix);
  snprintf(name + at, sizeof name - at, fmt, index, what);
  return sim_link_new(e, name, bw, latency);
}

sim_tpu_slice *sim_tpu_slice_new(sim_engine *e, const sim_tpu_generation *g, const int dims[3],
                                 const sim_tpu_overrides *ov) {
  return sim_tpu_slice_new_indexed(e, g, dims, ov, 0);
}

sim_tpu_slice *sim_tpu_slice_new_indexed(sim_engine *e, const sim_tpu_generation *g, const int dims[3],
                                         const sim_tpu_overrides *ov, int index) {
  assert(index >= 0);
  const sim_tpu_figures *f = &g->fig;
  char prefix[16] = "";
  if (index > 0) snprintf(prefix, sizeof prefix, "s%d.", index);
  sim_tpu_slice *s = base_xcalloc(1, sizeof *s);
  s->gen = g;
  s->engine = e;
  memcpy(s->dims, dims, sizeof s->dims);
  host_block(g, dims, s->block);
  s->chips = dims[0] * dims[1] * dims[2];
  s->hosts = s->chips / (s->block[0] * s->block[1] * s->block[2]);
  s->devices = s->chips * f->devices_per_chip;
  s->first_task = index * s->hosts;
  s->host_cpu = base_xcalloc((size_t)s->hosts, sizeof *s->host_cpu);
  assert(s->chips > 0 && s->hosts * s->block[0] * s->block[1] * s->block[2] == s->chips);
  for (int a = 0; a < 3; a++)
    if (sim_tpu_wraps(g, dims, a)) s->wrap |= 1u << a;

  uint64_t hbm = ov && ov->hbm_bytes ? ov->hbm_bytes : f->hbm_bytes;
  double peak = ov && ov->peak_flops ? ov->peak_flops : f->peak_flops;
  double ici_bw = sim_tpu_ici_rate(f, ov ? ov->ici_bytes_per_s : 0);
  int per_chip = f->devices_per_chip, per_host = devices_per_host(s);
  s->cpu = base_xcalloc((size_t)s->devices, sizeof *s->cpu);
  s->hbm = base_xcalloc((size_t)s->devices, sizeof *s->hbm);
  s->chip_of = base_xcalloc((size_t)s->devices, sizeof *s->chip_of);
  for (int d = 0; d < s->devices; d++) {
    s->chip_of[d] = device_chip_of(s, d);
    char name[96];
    snprintf(name, sizeof name, "/job:worker/replica:0/task:%d/device:TPU:%d", s->first_task + d / per_host,
             d % per_host);
    s->cpu[d] = sim_cpu_new(e, name, peak / per_chip);
    s->hbm[d] = sim_mempool_new(e, name, hbm / (uint64_t)per_chip);
  }

  static const char *const dir[6] = {"x+", "x-", "y+", "y-", "z+", "z-"};
  int stride = 2 * f->rank;
  s->ici = base_xcalloc((size_t)s->chips * (size_t)stride, sizeof *s->ici);
  for (int chip = 0; chip < s->chips; chip++) {
    int c[3];
    chip_coords(dims, chip, c);
    for (int k = 0; k < stride; k++) {
      int a = k / 2, wraps = s->wrap >> a & 1u;
      int has = k % 2 == 0 ? c[a] + 1 < dims[a] || wraps : c[a] > 0 || wraps;
      if (has && dims[a] > 1)
        s->ici[(size_t)chip * (size_t)stride + (size_t)k] = named_link(e, prefix, ici_bw, f->ici_latency, "ici.%d.%s", chip, dir[k]);
    }
  }
  if (per_chip == 2) {
    /* The two cores of a chip exchange through its HBM: a copy reads and writes each byte. */
    s->onchip = base_xcalloc(2 * (size_t)s->chips, sizeof *s->onchip);
    for (int chip = 0; chip < s->chips; chip++) {
      s->onchip[2 * chip] = named_link(e, prefix, f->hbm_bytes_per_s / 2, 0, "chip.%d.%s", chip, "c0>c1");
      s->onchip[2 * chip + 1] = named_link(e, prefix, f->hbm_bytes_per_s / 2, 0, "chip.%d.%s", chip, "c1>c0");
    }
  }
  s->pcie = base_xcalloc(2 * (size_t)s->chips, sizeof *s->pcie);
  for (int chip = 0; chip < s->chips; chip++) {
    s->pcie[2 * chip] = named_link(e, prefix, f->pcie_bytes_per_s, f->pcie_latency, "pcie.%d.%s", chip, "down");
    s->pcie[2 * chip + 1] = named_link(e, prefix, f->pcie_bytes_per_s, f->pcie_latency, "pcie.%d.%s", chip, "up");
  }
  s->dcn = base_xcalloc(2 * (size_t)s->hosts, sizeof *s->dcn);
  for (int h = 0; h < s->hosts; h++) {
    s->dcn[2 * h] = named_link(e, prefix, f->dcn_bytes_per_s, f->dcn_latency, "dcn.%d.%s", h, "up");
    s->dcn[2 * h + 1] = named_link(e, prefix, f->dcn_bytes_per_s, f->dcn_latency, "dcn.%d.%s", h, "down");
  }
  return s;
}

void sim_tpu_slice_free(sim_tpu_slice *s) {
  if (s == NULL) return;
  free(s->cpu);
  free(s->hbm);
  free(s->ici);
  free(s->onchip);
  free(s->pcie);
  free(s->dcn);
  free(s->host_cpu);
  free(s->chip_of);
  free(s);
}

const sim_tpu_generation *sim_tpu_slice_generation(const sim_tpu_slice *s) { return s->gen; }
int  sim_tpu_slice_devices(const sim_tpu_slice *s) { return s->devices; }
int  sim_tpu_slice_chips(const sim_tpu_slice *s) { return s->chips; }
int  sim_tpu_slice_hosts(const sim_tpu_slice *s) { return s->hosts; }
void sim_tpu_slice_dims(const sim_tpu_slice *s, int dims[3]) { memcpy(dims, s->dims, sizeof s->dims); }
int  sim_tpu_slice_wraps(const sim_tpu_slice *s, int axis) {
  assert(axis >= 0 && axis < 3);
  return (int)(s->wrap >> axis & 1u);
}

const char *sim_tpu_device_name(const sim_tpu_slice *s, int d) { return sim_cpu_name(sim_tpu_device_cpu(s, d)); }
sim_cpu *sim_tpu_device_cpu(const sim_tpu_slice *s, int d) {
  assert(d >= 0 && d < s->devices);
  return s->cpu[d];
}
sim_mempool *sim_tpu_device_hbm(const sim_tpu_slice *s, int d) {
  assert(d >= 0 && d < s->devices);
  return s->hbm[d];
}
int sim_tpu_device_chip(const sim_tpu_slice *s, int d) { return device_chip(s, d); }
int sim_tpu_device_core(const sim_tpu_slice *s, int d) {
  assert(d >= 0 && d < s->devices);
  return d % s->gen->fig.devices_per_chip;
}
int sim_tpu_device_host(const sim_tpu_slice *s, int d) {
  assert(d >= 0 && d < s->devices);
  return d / devices_per_host(s);
}
int sim_tpu_device_ordinal(const sim_tpu_slice *s, int d) {
  assert(d >= 0 && d < s->devices);
  return d % devices_per_host(s);
}
void sim_tpu_device_coords(const sim_tpu_slice *s, int d, int coords[3]) {
  chip_coords(s->dims, device_chip(s, d), coords);
}

sim_link *sim_tpu_chip_pcie(const sim_tpu_slice *s, int chip, int to_chip) {
  assert(chip >= 0 && chip < s->chips);
  return s->pcie[2 * chip + (to_chip ? 0 : 1)];
}
sim_cpu *sim_tpu_host_cpu(sim_tpu_slice *s, int host, double flops_per_s) {
  assert(host >= 0 && host < s->hosts);
  if (s->host_cpu[host] == NULL) {
    char name[48];
    snprintf(name, sizeof name, "tpu_host%d.cpu", s->first_task + host);
    s->host_cpu[host] = sim_cpu_new(s->engine, name, flops_per_s);
    s->host_flops = flops_per_s;
  }
  assert(s->host_flops == flops_per_s);  /* one VM type per slice */
  return s->host_cpu[host];
}

sim_link *sim_tpu_host_dcn(const sim_tpu_slice *s, int host, int up) {
  assert(host >= 0 && host < s->hosts);
  return s->dcn[2 * host + (up ? 0 : 1)];
}

/* Appends the non-NULL entries of links[0..n) to out (bounded by max) and counts them in *k. */
static void list_links(sim_link *const *links, size_t n, sim_link **out, size_t max, size_t *k) {
  for (size_t i = 0; links != NULL && i < n; i++) {
    if (links[i] == NULL) continue;
    if (*k < max) out[*k] = links[i];
    (*k)++;
  }
}

size_t sim_tpu_slice_links(const sim_tpu_slice *s, sim_link **out, size_t max) {
  size_t k = 0, chips = (size_t)s->chips;
  list_links(s->ici, chips * 2 * (size_t)s->gen->fig.rank, out, max, &k);
  list_links(s->onchip, 2 * chips, out, max, &k);
  list_links(s->pcie, 2 * chips, out, max, &k);
  list_links(s->dcn, 2 * (size_t)s->hosts, out, max, &k);
  return k;
}

size_t sim_tpu_route(void *slice, int from, int to, sim_link **out, size_t max) {
  const sim_tpu_slice *s = slice;
  if (from == to) return 0;
  int cf = device_chip(s, from), ct = device_chip(s, to);
  if (cf == ct) {
    if (max > 0) out[0] = s->onchip[2 * cf + sim_tpu_device_core(s, from)];
    return 1;
  }
  return sim_torus_route(s->dims, s->wrap, s->ici, 2 * s->gen->fig.rank, cf, ct, out, max);
}

int sim_tpu_device_grid_rank(const sim_tpu_slice *s, int d) {
  int per_chip = s->gen->fig.devices_per_chip;
  return sim_tpu_device_core(s, d) + per_chip * device_chip(s, d);
}

int sim_tpu_slice_torus(const sim_tpu_slice *s, int axes[4], int wraps[4]) {
  int n = 0;
  int per_chip = s->gen->fig.devices_per_chip;
  if (per_chip > 1) axes[n] = per_chip, wraps[n++] = 0;
  for (int a = 0; a < 3; a++)
    if (s->dims[a] > 1) axes[n] = s->dims[a], wraps[n++] = sim_tpu_slice_wraps(s, a);
  if (n == 0) axes[n] = 1, wraps[n++] = 0;
  return n;
}

void sim_tpu_set_torus(sim_collective *group, const sim_tpu_slice *s) {
  int axes[4], wraps[4];
  int n = sim_tpu_slice_torus(s, axes, wraps);
  sim_collective_set_torus(group, n, axes, wraps);
  sim_tpu_set_collective_cost(group, s);
}

void sim_tpu_set_collective_cost(sim_collective *group, const sim_tpu_slice *s) {
  sim_collective_set_fixed_cost(group, s->gen->fig.collective_cost);
}
