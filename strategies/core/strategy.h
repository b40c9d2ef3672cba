/*
** strategy.h: the sync strategies of issue 2 as the training program sees them: how many
** replicas are in sync, where each replica lives (a TF device name, a compute unit, a memory
** pool), how a global batch splits over them, and the cross-replica SUM of gradients through
** the simulated collective. Issue 4 grows this into the full tf.distribute API.
*/
#ifndef PODSIM_STRATEGY_H
#define PODSIM_STRATEGY_H

#include <stddef.h>
#include "sim/sim.h"
#include "sim/collective.h"
#include "sim/fabric.h"
#include "sim/multislice.h"
#include "sim/roofline.h"
#include "strategies/core/status.h"

typedef enum { DS_DEFAULT = 0, DS_ONE_DEVICE, DS_MULTI_WORKER_MIRRORED, DS_MIRRORED, DS_TPU,
               DS_GNN_RUNNER_TPU, DS_TPU_V1, DS_PARAMETER_SERVER } ds_kind;

/* Generic accelerators of a VM (GPUs as TensorFlow names them: device:GPU:K). */
typedef struct ds_accelerators {
  int count;              /* per VM; 0: the replicas run on the VM's CPU */
  double peak_flops;      /* peak FLOP/s of one accelerator */
  double efficiency;      /* fraction of peak its ops sustain (the roofline's compute roof) */
  double hbm_bytes;       /* its memory */
  double hbm_bytes_per_s; /* its memory bandwidth (the roofline's memory roof) */
  double link_bytes_per_s;/* its link to the VM, through which it reaches every other device */
  sim_time link_latency;  /* that link's latency */
  double workspace_bytes; /* scratch its runtime reserves (cuBLAS/XLA workspace) */
  /* A GPU system (nvlink_bytes_per_s > 0: dgx-a100, dgx-h100): the VM's GPUs share NVSwitches
  ** and each has a NIC of its own to the other VMs' GPUs of its index (rail-optimised), which
  ** the replicas' collectives use instead of `link` and the fabric (strategy.c). */
  double nvlink_bytes_per_s; /* a GPU's NVLink to the switches, one way; 0: generic */
  double copy_bytes_per_s;   /* what its kernels move over NVLink at most (NCCL's Simple ring
                             ceiling): the cap on everything it sends there */
  double nic_bytes_per_s;    /* its NIC, one way */
  double nccl_launch_s;      /* an NCCL collective's launch and completion (sim/nccl.h) */
  int gpus_per_nic;          /* consecutive GPUs sharing a NIC (1: a NIC each) */
  double nvls_bytes_per_s;   /* NCCL's NVLS busBw where the NVSwitches reduce (H100); 0: none */
  sim_opmodel op;            /* its per-op model (catalogue GPUs); units 0: peak x efficiency */
  double net_latency_s;      /* its NICs' transport latency, as the NCCL net plugin reports it */
  int pcie_only;             /* GPUs of a VM on PCIe, no NVLink: NCCL runs no LL128 */
  int nccl_arch;             /* the GPUs' generation for NCCL's tables (sim_nccl_arch) */
  int host_amd;              /* the VM's CPUs are AMD's (NCCL's LL cap across VMs) */
} ds_accelerators;

typedef struct ds_machine {
  double flops_per_s;     /* sustained float32 rate of one worker VM */
  double mem_bytes_per_s; /* its memory bandwidth (the roofline of CPU replicas) */
  double ram_bytes;       /* host memory of one worker VM */
  double nic_bytes_per_s; /* egress of one worker VM */
  ds_accelerators accel;  /* its accelerators, if any */
} ds_machine;

typedef struct ds_cluster {
  int workers;            /* CPU worker VMs */
  ds_machine machine;     /* every worker is this machine */
  sim_fabric_kind fabric; /* how the workers are joined */
  double link_bytes_per_s;/* fabric link bandwidth */
  sim_time latency;       /* fabric link latency */
} ds_cluster;

typedef struct ds_strategy ds_strategy;

/* Builds the workers (a cpu and a memory pool each, and their accelerators) and, for
** multi_worker_mirrored, the fabric and the collective group of the replicas. default and
** one_device run one replica, on worker 0's first accelerator or else its CPU;
** multi_worker_mirrored one per accelerator of every worker, or one per worker's CPU;
** mirrored one per accelerator of worker 0 (MirroredStrategy() with no devices), or its CPU. */
ds_strategy *ds_strategy_new(sim_engine *e, ds_kind kind, const ds_cluster *cluster, sim_algo algo);
/* MirroredStrategy(devices): one replica per named device of worker 0, in the order given.
** Names as TF accepts them: "GPU:1", "/gpu:1", "/device:GPU:1", "CPU:0" or the full
** "/job:localhost/replica:0/task:0/device:GPU:1" (case-insensitive). ValueError on an empty
** list, a device the machine does not have, or a device named twice. */
ds_strategy *ds_mirrored_new(sim_engine *e, const ds_cluster *cluster, const char *const *devices,
                             int ndevices, sim_algo algo, ds_status *st);

/* A device of an explicit replica table: what a strategy built elsewhere (TPU slices, for
** one) hands over. The strategy copies the name and borrows the rest. */
typedef struct ds_device {
  const char *name;       /* TF device name */
  int worker;             /* host task that feeds it */
  sim_cpu *cpu;           /* its compute */
  sim_mempool *memory;    /* its memory */
  sim_roofline roofline;  /* its compute and memory roofs */
  double workspace;       /* runtime scratch reserved on it */
  sim_cpu *host;          /* the CPU of its host task, where its input pipeline runs */
  sim_link *infeed;       /* host -> device link its batches cross (PCIe), NULL for none */
} ds_device;
/* A strategy over devices[replica * cores_per_replica + core] ("devices are
** [replica][logical_core]"). The replicas' collective group runs between each replica's core 0
** over route(ctx, from, to) (NULL for a single replica); its torus shape, if any, is the
** caller's (sim_collective_set_torus on ds_collective). Every API of this layer (run, reduce,
** gather, variables) works on such a strategy. */
ds_strategy *ds_strategy_new_table(sim_engine *e, ds_kind kind, int nreplicas, int cores_per_replica,
                                   const ds_device *devices, sim_route_fn route, void *route_ctx,
                                   sim_algo algo);
int          ds_cores_per_replica(const ds_strategy *s);
/* Logical core `core` of a replica: its TF device name (core 0 is ds_replica_device). */
const char  *ds_replica_core_device(const ds_strategy *s, int replica, int core);
/* Logical core `core` of a replica: its memory (core 0 is ds_replica_memory). */
sim_mempool *ds_replica_core_memory(const ds_strategy *s, int replica, int core);
/* TPUStrategy's all_gather in replica context (XLA's AllGather) demands components of exactly one
** shape; others only equal dims off the gather axis. Off by default. Strategy.gather in
** cross-replica context is a concat everywhere. */
void         ds_strategy_set_exact_gather_shapes(ds_strategy *s, int on);
int          ds_strategy_exact_gather_shapes(const ds_strategy *s);
sim_engine  *ds_strategy_engine(const ds_strategy *s);
/* Worker tasks that hold replicas (1 but for multi_worker_mirrored and tables over hosts). */
int          ds_strategy_num_workers(const ds_strategy *s);
ds_kind      ds_strategy_kind(const ds_strategy *s);
/* The "current device" reduce and gather copy their result to: the CPU of task 0 of the job. */
const char  *ds_host_device(const ds_strategy *s);
void         ds_strategy_free(ds_strategy *s);
const char  *ds_kind_name(ds_kind kind);
int          ds_num_replicas_in_sync(const ds_strategy *s);
const char  *ds_replica_device(const ds_strategy *s, int replica);  /* TF device name */
sim_cpu     *ds_replica_cpu(const ds_strategy *s, int replica);
/* Device memory: the accelerator's HBM, or the worker's RAM for a CPU replica. */
sim_mempool *ds_replica_memory(const ds_strategy *s, int replica);
/* Scratch the device's runtime keeps for itself (0 on a CPU). */
double       ds_replica_workspace(const ds_strategy *s, int replica);
/* How the replica's device turns an op's FLOPs and bytes into time. */
const sim_roofline *ds_replica_roofline(const ds_strategy *s, int replica);
/* The rate an accelerator's cpu runs at: its peak under a per-op model (a->op.units > 0), which
** charges each op's own efficiency, else peak x efficiency. */
double ds_accelerator_rate(const ds_accelerators *a);
/* An accelerator's roofline: that rate, its HBM bandwidth and per-op model. */
sim_roofline ds_accelerator_roofline(const ds_accelerators *a);
/* The CPU of each VM that holds replicas (ds_strategy_num_workers of them; where
** its input pipeline runs: a CPU replica's own compute unit, else one beside the accelerators),
** which VM a replica is on, and its host-to-device link (NULL for a CPU replica, which reads
** host memory). */
sim_cpu     *ds_worker_cpu(const ds_strategy *s, int worker);
int          ds_replica_worker(const ds_strategy *s, int replica);
sim_link    *ds_replica_infeed(const ds_strategy *s, int replica);
sim_algo     ds_all_reduce_algorithm(const ds_strategy *s);
/* Every link between replicas: the fabric's, then each accelerator's up and down link (a GPU
** system's: also its copy, NVLink and NIC links, a shared NIC once). Writes what fits in
** out[0..max) and returns the full count. */
size_t       ds_links(const ds_strategy *s, sim_link **out, size_t max);

/* The replicas' collective group (NULL for a single replica), for collective workloads. */
sim_collective *ds_collective(const ds_strategy *s);
/* Re-forms the collective group with rank k on replica replica_at_rank[k] (a permutation), routed
** by route(owned_ctx, rank, rank): a torus algorithm needs ranks in grid order, while replica ids
** follow TensorFlow's device order. owned_ctx is freed (free()) with the strategy. Call once,
** before any collective, on a strategy of two replicas or more. */
void ds_strategy_order_group(ds_strategy *s, const int *replica_at_rank, sim_route_fn route,
                             void *owned_ctx);
/* Replica `replica`'s rank in the collective group. */
int  ds_replica_rank(const ds_strategy *s, int replica);

/* Called by each replica's actor: SUM of buf over the replicas, in the all-reduce algorithm's
** order; buf holds the result on return. A single replica returns at once. */
int ds_all_reduce_sum(ds_strategy *s, sim_actor *self, int replica, float *buf, size_t count);
/* The gradient all-reduce in packs overlapped with the backward pass (CollectiveAllReduce with
** CommunicationOptions.bytes_per_pack; scenarios/programs/overlap.c). ds_all_reduce_pack starts
** one pack of `count` floats engine-side for every replica at once, timed on shapes alone (no
** values move); done(e, group, arg) fires when it is through, SIM_COLL_EBUSY while one runs. The
** packs' values come from ds_all_reduce_values: bufs[r] is replica r's whole buffer of `count`
** floats, summed at once, no time passing, to the bits ds_all_reduce_sum would give it, so
** packing never changes a sum's order. ds_all_reduce_pack does not run on several slices (the
** loader refuses it); there ds_all_reduce_values sums over every slice's replicas as one ring,
** the hierarchical all-reduce's sums in another order (a device mesh's gradients, mesh.h). */
int ds_all_reduce_pack(ds_strategy *s, size_t count, sim_collective_done_fn done, void *arg);
int ds_all_reduce_values(ds_strategy *s, float *const *bufs, size_t count);
/* Simulated duration of the last all-reduce, from the last replica's arrival to the end (on
** several slices, as replica rank 0 saw it: sim_multislice_last_duration). */
sim_time ds_last_all_reduce_time(const ds_strategy *s);
/* The replicas are every device of m's slices, ordered into m's ranks (ds_strategy_order_group):
** the gradient all-reduce (ds_all_reduce_sum) becomes m's hierarchical one. m is borrowed. */
void ds_strategy_set_multislice(ds_strategy *s, sim_multislice *m);
/* Its slices (a device mesh lays its within-slice axes on one slice's torus); NULL on one. */
sim_multislice *ds_strategy_multislice(const ds_strategy *s);

#endif
