/*
** machines.h: the catalogue of Compute Engine CPU machine types a scenario can name
** (docs/scenario-format.md explains the figures).
**   n1-standard-N, N in 1 2 4 8 16 32 64 96:          RAM 3.75 GiB * N, 32 GFLOP/s per vCPU
**   n2-standard-N, N in 2 4 8 16 32 48 64 80 96 128:   RAM 4 GiB * N,    48 GFLOP/s per vCPU
** NIC egress min(2 Gbps * N, 32 Gbps) and memory bandwidth 4 GB/s per vCPU for both.
** Generic accelerators of a custom machine default to 50% of peak, a 1 us link to the VM and a
** 256 MiB runtime workspace in their HBM.
** GPU systems (docs/machine.md, "GPU systems", gives each figure's source), 8 GPUs a node on
** NVSwitches, a NIC per GPU:
**   dgx-a100: A100 SXM4 40 GB, 312 TFLOP/s bf16, 1555 GB/s HBM, NVLink 300 GB/s one way,
**             PCIe Gen4 x16 to the host, 8 x 200 Gb/s HDR; NCCL's ring at most 235 GB/s;
**             2 x EPYC 7742 (128 cores), 1 TiB
**   dgx-h100: H100 SXM5 80 GB, 989 TFLOP/s bf16, 3350 GB/s HBM, NVLink 450 GB/s one way,
**             PCIe Gen5 x16, 8 x 400 Gb/s NDR; NCCL's ring at most 370 GB/s, NVLS 330
**             (algbw 275, NCCL's developer's figure);
**             2 x Xeon 8480C (112 cores), 2 TiB
** Their GPUs (108 and 132 SMs) and every TPU device time ops by the per-op model (machines.c,
** sim/roofline.h; docs/machine.md, "Compute").
** The GPU catalogue (docs/machine.md, "GPU catalogue" and "Transports") adds Compute Engine's
** a2/a3/a4/g2 VMs, dgx-1 and dgx-2 (V100), dgx-b200, AWS p4d/p4de/p5/p5e and Azure's ND A100 v4 / ND H100
** v5, each a GPU of machines.c's GPUS[] (its datasheet rates) with a host and NICs on a transport
** (InfiniBand, RoCE, EFA, TCPX/TCPXO, gVNIC: a line rate and NCCL's net plugin latency).
*/
#ifndef PODSIM_MACHINES_H
#define PODSIM_MACHINES_H

#include <stddef.h>
#include "scenarios/config/scenario.h"

#define MACHINE_N1_FLOPS_PER_VCPU 32e9
#define MACHINE_N2_FLOPS_PER_VCPU 48e9
#define MACHINE_MEM_BYTES_PER_VCPU 4e9
#define MACHINE_ACCEL_EFFICIENCY 0.5
#define MACHINE_ACCEL_LINK_LATENCY_S 1e-6
#define MACHINE_ACCEL_WORKSPACE_BYTES (256.0 * 1024 * 1024)

/* A TPU VM host's vCPUs for a generation ("v2" .. "v6e"), as Cloud TPU lists its VMs: v2 and v3
** 96, v4 240, v5e 224, v5p 208, v6e 180; each vCPU at the n2 rate, where the input pipeline runs. */
int  machines_tpu_host_vcpus(const char *generation);
/* The per-op model of one TPU device of a generation ("v2" .. "v6e") of cores_per_device
** TensorCores (2 for v4/v5p megacore) and peak device_peak: its MXUs are the units, each output
** tile 8 rows by the MXU's side (the rows a pass streams, the columns it holds); units 0 for a
** generation it does not know. Constants in machines.c; docs/machine.md, "Compute". */
sim_opmodel machines_tpu_opmodel(const char *generation, int cores_per_device, double device_peak);
/* What TF pays to go from the host program to the device and back once: the dispatch of a
** compiled step (TF2: each call of the tf.function; TF1 contrib TPUStrategy: each loop of
** steps_per_run steps) and the fetch of its outputs. An estimate; strategy.host_round_trip. */
#define MACHINE_TPU_HOST_ROUND_TRIP_S 100e-6

/* Fills *m for a catalogue NAME (CPU VMs and GPU systems); -1 when NAME is not in it. */
int  machines_lookup(const char *name, scn_machine *m);
/* Writes "n1-standard-{1,2,...}, n2-standard-{...}, dgx-a100, dgx-h100, ..." into BUF. */
void machines_list(char *buf, size_t len);
/* Sets a GPU system's NIC transport by NAME (machine.transport): its latency and, where the
** transport has one (InfiniBand EDR/HDR/NDR, TCPX/TCPXO), its line rate; -1 when unknown. */
int  machines_set_transport(scn_machine *m, const char *name);
/* Writes the transports' names, comma-separated, into BUF. */
void machines_list_transports(char *buf, size_t len);
/* The names a custom accelerator's per_op_model takes, NULL-terminated: "none" (the scalar
** roofline), then the catalogue's GPUs ("a100-40gb", "h100-sxm", "v100", "l4", ...). */
extern const char *const MACHINES_GPU_MODELS[];
/* Fills the defaults of keys a custom machine's mapping left out (marked negative), and a custom
** accelerator's per-op model when it names one (accel_per_op_gpu). */
void machines_fill_defaults(scn_machine *m);
/* The NIC egress the catalogue gives a VM of CPUS vCPUs (bytes/s): min(2 Gbps * cpus, 32 Gbps). */
double machines_default_nic(int cpus);

#endif
