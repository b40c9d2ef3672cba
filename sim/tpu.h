/*
** tpu.h: the Cloud TPU catalogue (generations v2, v3, v4, v5e, v5p, v6e), slice names and
** topologies, and slices built as engine resources: a compute unit and an HBM pool per device,
** full-duplex ICI links between neighbouring chips, PCIe links to the hosts and a DCN link per
** host. docs/machine.md lists every figure and where it comes from.
**
** Chips sit on a grid of dims[0] x dims[1] x dims[2] (dims[2] == 1 on the 2D generations),
** chip index x + dims[0] * (y + dims[1] * z). Hosts own blocks of chips (2x2x1 on v2..v4 and
** v5p, 2x4x1 on v5e and v6e, the whole slice when it is smaller), numbered like chips over the
** grid of blocks. Devices are numbered host by host; on its host a device's ordinal K runs over
** the host's chips in index order and, on v2 and v3, over the chip's two cores:
** "/job:worker/replica:0/task:<host>/device:TPU:<K>".
*/
#ifndef PODSIM_TPU_H
#define PODSIM_TPU_H

#include <stddef.h>
#include <stdint.h>

#include "sim/collective.h"
#include "sim/sim.h"

typedef struct sim_tpu_generation sim_tpu_generation;
typedef struct sim_tpu_slice sim_tpu_slice;

/* A generation's figures, per chip unless said otherwise. */
typedef struct sim_tpu_figures {
  const char *name;          /* "v2", "v3", "v4", "v5e", "v5p", "v6e" */
  const char *slice_prefix;  /* slice names are <prefix>-<N>: "v4", "v5litepod", ... */
  int cores_per_chip;        /* TensorCores; slice names count them when 2 (v2..v4, v5p) */
  int devices_per_chip;      /* TF devices: a core each on v2/v3, the chip elsewhere (megacore) */
  int chips_per_host;        /* chips a TPU VM host holds in a full-size slice */
  int rank;                  /* torus dimensions: 2 or 3 */
  int ici_links;             /* ICI ports per chip (2 * rank) */
  int max_pod_chips;         /* chips in a pod */
  uint64_t hbm_bytes;        /* HBM capacity */
  double hbm_bytes_per_s;    /* HBM bandwidth */
  double peak_flops;         /* peak bf16 FLOP/s */
  double ici_bytes_per_s;    /* one ICI link, one direction */
  sim_time ici_latency;      /* per ICI hop a transfer crosses, its synchronisation included */
  double ici_efficiency;     /* share of ici_bytes_per_s a collective's transfers achieve */
  sim_time collective_cost;  /* what every collective costs once, whatever its size: XLA's set-up
                                and synchronisation of its DMAs (sim_collective_set_fixed_cost) */
  double pcie_bytes_per_s;   /* host <-> chip, each direction */
  sim_time pcie_latency;     /* per PCIe transfer */
  double dcn_bytes_per_s;    /* data-centre network per host, each direction */
  sim_time dcn_latency;      /* per DCN link crossed */
} sim_tpu_figures;

/* Generations in catalogue order: index 0..sim_tpu_generation_count()-1. */
int sim_tpu_generation_count(void);
const sim_tpu_generation *sim_tpu_generation_at(int index);
/* By name ("v4") or by slice prefix ("v5litepod"); NULL when unknown. */
const sim_tpu_generation *sim_tpu_generation_find(const char *name);
const sim_tpu_figures *sim_tpu_generation_figures(const sim_tpu_generation *g);

/* Parses a slice name such as "v4-32" or "v5litepod-16": sets *g, the chip count and the
** default topology (dims[2] == 1 on 2D generations). Returns 0, or -1 with a message in err
** listing the valid names or sizes; *g is still set when only the size was wrong. */
int sim_tpu_slice_parse(const char *type, const sim_tpu_generation **g, int *chips, int dims[3],
                        char *err, size_t errlen);
/* Parses an explicit topology "AxB" / "AxBxC" (chips per axis) for a slice of `chips` chips:
** the generation's rank, product == chips, no axis longer than the generation's longest, and
** whole hosts. Returns 0, or -1 with a message in err. */
int sim_tpu_topology_parse(const sim_tpu_generation *g, int chips, const char *topology, int dims[3],
                           char *err, size_t errlen);
/* Whether the slice of these dims has wraparound links on `axis`: v4 and v5p on every axis when
** the slice is made of whole 4x4x4 cubes; v2, v3, v5e and v6e on an axis as long as the pod's. */
int sim_tpu_wraps(const sim_tpu_generation *g, const int dims[3], int axis);

/* A slice's layout from its dims alone, without building its resources (the TPU system a
** program initializes is this arithmetic; the built slice below answers the same): its hosts,
** the TF devices each host holds, and the coordinates of device d's chip. */
int  sim_tpu_layout_hosts(const sim_tpu_generation *g, const int dims[3]);
int  sim_tpu_layout_devices_per_host(const sim_tpu_generation *g, const int dims[3]);
void sim_tpu_layout_device_coords(const sim_tpu_generation *g, const int dims[3], int d, int coords[3]);

/* Catalogue figures the scenario may replace; 0 keeps the catalogue's. Per chip. */
typedef struct sim_tpu_overrides {
  uint64_t hbm_bytes;        /* HBM per chip, split evenly between its devices */
  double ici_bytes_per_s;    /* one ICI link, one direction, as transfers achieve it */
  double peak_flops;         /* peak FLOP/s per chip, split evenly between its devices */
} sim_tpu_overrides;

/* The rate an ICI link carries a transfer at: `override` (bytes/s, one way) when > 0, as given,
** else the spec sheet's figure x the generation's ici_efficiency. */
double sim_tpu_ici_rate(const sim_tpu_figures *f, double override);

/* Builds the slice's resources in `e` (they are freed with the engine; the slice holds
** pointers and each device's chip, and is freed with sim_tpu_slice_free). dims must have
** passed the checks above; ov may be NULL. Resource names: the device name for its cpu and HBM pool; links
** "ici.<chip>.x+" (towards +x; also x-, y+, ...), "chip.<chip>.c0>c1" / "c1>c0" (the two cores
** of a v2/v3 chip), "pcie.<chip>.down" (host to chip) / ".up", "dcn.<host>.up" / ".down". */
sim_tpu_slice *sim_tpu_slice_new(sim_engine *e, const sim_tpu_generation *g, const int dims[3],
                                 const sim_tpu_overrides *ov);
/* Slice `index` of a multislice (sim/multislice.h): as above, its resource names prefixed
** "s<index>." and its hosts' tasks numbered after the index * hosts of the slices before it.
** Index 0 is sim_tpu_slice_new, names and all. */
sim_tpu_slice *sim_tpu_slice_new_indexed(sim_engine *e, const sim_tpu_generation *g, const int dims[3],
                                         const sim_tpu_overrides *ov, int index);
void sim_tpu_slice_free(sim_tpu_slice *s);

const sim_tpu_generation *sim_tpu_slice_generation(const sim_tpu_slice *s);
int  sim_tpu_slice_devices(const sim_tpu_slice *s);
int  sim_tpu_slice_chips(const sim_tpu_slice *s);
int  sim_tpu_slice_hosts(const sim_tpu_slice *s);
void sim_tpu_slice_dims(const sim_tpu_slice *s, int dims[3]);
int  sim_tpu_slice_wraps(const sim_tpu_slice *s, int axis);

/* Device d (0 .. devices-1) of the slice. */
const char  *sim_tpu_device_name(const sim_tpu_slice *s, int d);
sim_cpu     *sim_tpu_device_cpu(const sim_tpu_slice *s, int d);
sim_mempool *sim_tpu_device_hbm(const sim_tpu_slice *s, int d);
int  sim_tpu_device_chip(const sim_tpu_slice *s, int d);
int  sim_tpu_device_core(const sim_tpu_slice *s, int d);    /* core on its chip: 0, or 1 */
int  sim_tpu_device_host(const sim_tpu_slice *s, int d);    /* T of its name */
int  sim_tpu_device_ordinal(const sim_tpu_slice *s, int d); /* K of its name */
void sim_tpu_device_coords(const sim_tpu_slice *s, int d, int coords[3]); /* its chip's */

/* The chip's PCIe link from its host (to_chip = 1) or to it; the host's DCN link out (up = 1)
** or in. */
sim_link *sim_tpu_chip_pcie(const sim_tpu_slice *s, int chip, int to_chip);
sim_link *sim_tpu_host_dcn(const sim_tpu_slice *s, int host, int up);
/* The host VM's CPU (its input pipeline, infeed), named "tpu_host<T>.cpu" with T the task of
** its devices' names: made at the first call at flops_per_s, the same one at every later call,
** so every strategy on the slice shares its hosts (all at one rate). The engine owns it. */
sim_cpu *sim_tpu_host_cpu(sim_tpu_slice *s, int host, double flops_per_s);
/* Every link of the slice (ICI, on-chip, PCIe, DCN) in creation order; returns the count and
** fills out[0..max). */
size_t sim_tpu_slice_links(const sim_tpu_slice *s, sim_link **out, size_t max);

/* Device d's rank in the slice's grid order, as a torus collective ranks devices: its core on the
** chip fastest, then its chip's index (x fastest, then y, z). */
int  sim_tpu_device_grid_rank(const sim_tpu_slice *s, int d);
/* Gives group (whose rank k is the device of grid rank k) the slice's torus: the chip's cores as a
** line when there are two, then the x, y, z axes longer than 1, wrapping where the slice wraps;
** and the generation's cost per collective (sim_tpu_set_collective_cost). */
void sim_tpu_set_torus(sim_collective *group, const sim_tpu_slice *s);
/* That torus's axes (returned, 1 to 4) and their wraparound: what sim_tpu_set_torus gives. */
int  sim_tpu_slice_torus(const sim_tpu_slice *s, int axes[4], int wraps[4]);
/* Gives a group of the slice's devices the generation's cost per collective (collective_cost),
** whatever algorithm it runs. */
void sim_tpu_set_collective_cost(sim_collective *group, const sim_tpu_slice *s);

/* A sim_route_fn over devices (ctx = the slice): the two cores of one chip over their on-chip
** link; otherwise the ICI links of sim_torus_route between the chips (fabric.h): dimension
** order x, y, z, the shorter way round where the axis wraps, the positive direction on ties.
** Returns the hop count; fills out[0..max). */
size_t sim_tpu_route(void *slice, int from, int to, sim_link **out, size_t max);

#endif
