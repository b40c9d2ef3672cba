/* machines.c: see machines.h. */
#include "scenarios/config/machines.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/nccl.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

static const int N1_SIZES[] = {1, 2, 4, 8, 16, 32, 64, 96, 0};
static const int N2_SIZES[] = {2, 4, 8, 16, 32, 48, 64, 80, 96, 128, 0};

static const struct family {
  const char *prefix;
  const int *sizes;
  double ram_per_vcpu;
  double flops_per_vcpu;
} FAMILIES[] = {
  {"n1-standard-", N1_SIZES, 3.75 * GIB, MACHINE_N1_FLOPS_PER_VCPU},
  {"n2-standard-", N2_SIZES, 4.0 * GIB, MACHINE_N2_FLOPS_PER_VCPU},
};

/* The GPUs of the catalogue, as their datasheets give them (docs/machine.md, "GPU catalogue", has
** each figure's source): the per-op model's inputs and what NCCL moves between them in a VM. */
static const struct gpu {
  const char *name;       /* datasheet name, docs/machine.md's */
  int sms;                /* streaming multiprocessors: the per-op model's units */
  double peak;            /* dense 16-bit tensor FLOP/s (bf16 and fp16; V100: fp16 only) */
  double f32_matmul;      /* dense FLOP/s of a matmul with float32 operands: TF32 tensor cores
                             (Ampere on), the FP32 cores on V100 (no TF32) */
  double fp32;            /* non-tensor FP32 FLOP/s: the per-op model's vector rate */
  double hbm, hbm_bw;     /* device memory, bytes and bytes/s */
  double pcie;            /* to the host, one way */
  double nvlink;          /* one way to the VM's other GPUs (NVLink; PCIe-only parts: PCIe) */
  double nccl;            /* NCCL's Simple ring ceiling inside the VM, per GPU */
  double nvls;            /* NCCL's NVLS busBw (NVLink SHARP in the NVSwitches), 0: none */
  int pcie_only;          /* no NVLink between the VM's GPUs: NCCL runs no LL128 */
} GPUS[] = {
#define GPU_A100_40 0
  {"A100 SXM4 40 GB", 108, 312e12, 156e12, 19.5e12, 40.0 * GIB, 1555e9, 32e9, 300e9, 235e9, 0, 0},
#define GPU_A100_80 1
  {"A100 SXM4 80 GB", 108, 312e12, 156e12, 19.5e12, 80.0 * GIB, 2039e9, 32e9, 300e9, 235e9, 0, 0},
#define GPU_H100 2
  {"H100 SXM5 80 GB", 132, 989e12, 494.5e12, 67e12, 80.0 * GIB, 3350e9, 64e9, 450e9, 370e9, 330e9, 0},
#define GPU_H200 3
  {"H200 SXM 141 GB", 132, 989e12, 494.5e12, 67e12, 141e9, 4800e9, 64e9, 450e9, 370e9, 330e9, 0},
#define GPU_B200 4
  {"B200 SXM 180 GB", 148, 2250e12, 1125e12, 75e12, 180e9, 8000e9, 64e9, 900e9, 740e9, 660e9, 0},
#define GPU_V100 5
  {"V100 SXM2 16 GB", 80, 125e12, 15.7e12, 15.7e12, 16.0 * GIB, 900e9, 16e9, 150e9, 130e9, 0, 0},
#define GPU_L4 6
  {"L4 24 GB", 58, 121e12, 60e12, 30.3e12, 24.0 * GIB, 300e9, 32e9, 32e9, 24e9, 0, 1},
#define GPU_V100_32 7
  {"V100 SXM3 32 GB", 80, 125e12, 15.7e12, 15.7e12, 32.0 * GIB, 900e9, 16e9, 150e9, 130e9, 0, 0},
  /* The PCIe A100s (NVIDIA's A100 PCIe product brief PB-10137, and the A100 80GB PCIe's): the
  ** SXM4's GA100 with its 108 SMs and 1410 MHz boost, so the same dense rates, at 250 W (40 GB)
  ** and 300 W (80 GB) against the SXM4's 400 W; 80 GB's HBM2e at 1935 GB/s. Their NVLink bridges
  ** join pairs only, which no VM of the catalogue states: GPUs reach each other over PCIe here, as
  ** L4's (NCCL's PCIe Gen4 x16 figure, 24 GB/s). Sustained clocks under those power limits are not
  ** modelled (docs/machine.md, "GPU catalogue": no measured clock under load was found). */
#define GPU_A100_PCIE_40 8
  {"A100 PCIe 40 GB", 108, 312e12, 156e12, 19.5e12, 40.0 * GIB, 1555e9, 32e9, 32e9, 24e9, 0, 1},
#define GPU_A100_PCIE_80 9
  {"A100 PCIe 80 GB", 108, 312e12, 156e12, 19.5e12, 80.0 * GIB, 1935e9, 32e9, 32e9, 24e9, 0, 1},
  /* The H100 PCIe (NVIDIA's H100 datasheet, PCIe column, and product brief PB-11133: 114 SMs, 1513
  ** TFLOP/s bf16 and 756 TF32 with sparsity, so 756 and 378 dense, 51 FP32, 80 GB HBM2e at 2000
  ** GB/s, PCIe Gen5 x16, 350 W); PCIe-only between cards as the A100 PCIe's, at NCCL's Gen5 x16
  ** figure (48 GB/s, docs/machine.md "NICs on PCIe"). */
#define GPU_H100_PCIE 10
  {"H100 PCIe 80 GB", 114, 756e12, 378e12, 51e12, 80.0 * GIB, 2000e9, 64e9, 64e9, 48e9, 0, 1},
};

/* Each GPU's generation as NCCL's tuning tables index it, by compute capability (tuning.cc at
** 48bb7fec = v2.20.5-1: >= 90 Hopper, >= 80 Ampere, else Volta): V100 7.0, A100 8.0, L4 8.9,
** H100 and H200 9.0, B200 10.0 (Hopper's row: 2.20's tables stop there). */
static const sim_nccl_arch GPU_NCCL_ARCH[] = {
  [GPU_A100_40] = SIM_NCCL_AMPERE, [GPU_A100_80] = SIM_NCCL_AMPERE, [GPU_H100] = SIM_NCCL_HOPPER,
  [GPU_H200] = SIM_NCCL_HOPPER, [GPU_B200] = SIM_NCCL_HOPPER, [GPU_V100] = SIM_NCCL_VOLTA,
  [GPU_L4] = SIM_NCCL_AMPERE, [GPU_V100_32] = SIM_NCCL_VOLTA, [GPU_A100_PCIE_40] = SIM_NCCL_AMPERE,
  [GPU_A100_PCIE_80] = SIM_NCCL_AMPERE, [GPU_H100_PCIE] = SIM_NCCL_HOPPER};
_Static_assert(sizeof GPU_NCCL_ARCH / sizeof GPU_NCCL_ARCH[0] == sizeof GPUS / sizeof GPUS[0],
               "NCCL's generation for every GPU of the catalogue");

/* The GPU systems whose hosts are AMD EPYCs, for NCCL's LL cap across nodes (it picks the row by
** the CPU vendor): DGX A100 (2 x EPYC 7742, docs/machine.md [DGXA]), p5 and p5e (EPYC 7R13) and
** Azure's ND A100 v4 (EPYC 7V12), NF for the last three (the vendors' pages as this session
** remembers them). Every other system of the catalogue has Intel Xeons. */
static const char *const AMD_HOSTS[] = {"dgx-a100", "p5.48xlarge", "p5e.48xlarge",
                                        "Standard_ND96asr_v4", "Standard_ND96amsr_A100_v4"};

static int amd_host(const char *system) {
  for (size_t i = 0; i < sizeof AMD_HOSTS / sizeof AMD_HOSTS[0]; i++)
    if (!strcmp(system, AMD_HOSTS[i])) return 1;
  return 0;
}

/* The GPUs' names in a custom accelerator's per_op_model (keys_cluster.c): GPUS[i] is
** MACHINES_GPU_MODELS[i + 1]; "none" is the scalar roofline. */
const char *const MACHINES_GPU_MODELS[] = {"none", "a100-40gb", "a100-80gb", "h100-sxm", "h200", "b200", "v100-16gb", "l4",
                                           "v100-32gb", "a100-pcie-40gb", "a100-pcie-80gb", "h100-pcie", NULL};
_Static_assert(sizeof GPUS / sizeof GPUS[0] + 2 == sizeof MACHINES_GPU_MODELS / sizeof MACHINES_GPU_MODELS[0],
               "a name for every GPU of the catalogue");

/* How a VM's GPUs reach other VMs: the NIC's line rate and the transport's own latency, as its
** NCCL net plugin reports it to NCCL's tuning model (graph latencyInter; docs/machine.md,
** "Transports"). 0 rate: the system's own (RoCE and EFA come at several rates). */
static const struct transport {
  const char *name;       /* the scenario's machine.transport */
  double nic;             /* line rate of one NIC, one way, bytes/s; 0: the system's */
  double latency_s;       /* the net plugin's latency: NCCL's IB transport 0, AWS's EFA plugin 75 us */
} TRANSPORTS[] = {
#define NET_IB_EDR 0
  {"infiniband-edr", 12.5e9, 0},
#define NET_IB_HDR 1
  {"infiniband-hdr", 25e9, 0},
#define NET_IB_NDR 2
  {"infiniband-ndr", 50e9, 0},
#define NET_ROCE 3
  {"roce", 0, 0},
#define NET_EFA 4
  {"efa", 0, 75e-6},
#define NET_TCPX 5
  {"gpudirect-tcpx", 25e9, 0},
#define NET_TCPXO 6
  {"gpudirect-tcpxo", 25e9, 0},
#define NET_GVNIC 7
  {"gvnic", 0, 0},
};

/* GPU systems and VMs: their GPU, the host's cores, memory and NICs (the host's own NIC for
** storage and management is the catalogue's default for its cores, not these). Sources in
** docs/machine.md. */
static const struct gpu_system {
  const char *name;       /* catalogue type */
  int gpu;                /* GPUS[] index */
  int gpus;               /* GPUs of the system or VM */
  int cpus;               /* host cores or vCPUs */
  double ram_bytes;       /* host memory */
  int transport;          /* TRANSPORTS[] index */
  double nic;             /* per GPU NIC, one way */
  int gpus_per_nic;       /* consecutive GPUs sharing one NIC of rate `nic` */
} GPU_SYSTEMS[] = {
  {"dgx-a100", GPU_A100_40, 8, 128, 1024.0 * GIB, NET_IB_HDR, 25e9, 1},
  {"dgx-h100", GPU_H100, 8, 112, 2048.0 * GIB, NET_IB_NDR, 50e9, 1},
  /* Compute Engine's GPU VMs (docs/machine.md, "GPU VMs"): A2 has no GPUDirect NICs, its GPUs
  ** leave the VM through its one virtual NIC (24/32/50/100 Gb/s for 1/2/4/8 GPUs); A3 High has
  ** 4 x 200 Gb/s GPUDirect-TCPX NICs for 8 GPUs, A3 Mega 8 x 200 Gb/s TCPXO, A3 Ultra 8 x 400 Gb/s
  ** RoCE (ConnectX-7), A4 8 x 400 Gb/s RoCE; G2 leaves through its gVNIC. */
  {"a2-highgpu-1g", GPU_A100_40, 1, 12, 85.0 * GIB, NET_GVNIC, 3e9, 1},
  {"a2-highgpu-2g", GPU_A100_40, 2, 24, 170.0 * GIB, NET_GVNIC, 4e9, 2},
  {"a2-highgpu-4g", GPU_A100_40, 4, 48, 340.0 * GIB, NET_GVNIC, 6.25e9, 4},
  {"a2-highgpu-8g", GPU_A100_40, 8, 96, 680.0 * GIB, NET_GVNIC, 12.5e9, 8},
  {"a2-ultragpu-1g", GPU_A100_80, 1, 12, 170.0 * GIB, NET_GVNIC, 3e9, 1},
  {"a2-ultragpu-2g", GPU_A100_80, 2, 24, 340.0 * GIB, NET_GVNIC, 4e9, 2},
  {"a2-ultragpu-4g", GPU_A100_80, 4, 48, 680.0 * GIB, NET_GVNIC, 6.25e9, 4},
  {"a2-ultragpu-8g", GPU_A100_80, 8, 96, 1360.0 * GIB, NET_GVNIC, 12.5e9, 8},
  {"a3-highgpu-8g", GPU_H100, 8, 208, 1872.0 * GIB, NET_TCPX, 25e9, 2},
  {"a3-megagpu-8g", GPU_H100, 8, 208, 1872.0 * GIB, NET_TCPXO, 25e9, 1},
  {"a3-ultragpu-8g", GPU_H200, 8, 224, 2952.0 * GIB, NET_ROCE, 50e9, 1},
  /* Appended by the GPU catalogue (issue 25 item 5); docs/machine.md, "GPU catalogue". */
  {"dgx-1", GPU_V100, 8, 40, 512.0 * GIB, NET_IB_EDR, 12.5e9, 2},
  {"dgx-2", GPU_V100_32, 16, 48, 1536.0 * GIB, NET_IB_EDR, 12.5e9, 2},
  {"dgx-b200", GPU_B200, 8, 112, 2048.0 * GIB, NET_IB_NDR, 50e9, 1},
  {"a4-highgpu-8g", GPU_B200, 8, 224, 3968.0 * GIB, NET_ROCE, 50e9, 1},
  {"g2-standard-4", GPU_L4, 1, 4, 16.0 * GIB, NET_GVNIC, 1.25e9, 1},
  {"g2-standard-8", GPU_L4, 1, 8, 32.0 * GIB, NET_GVNIC, 2e9, 1},
  {"g2-standard-12", GPU_L4, 1, 12, 48.0 * GIB, NET_GVNIC, 2e9, 1},
  {"g2-standard-16", GPU_L4, 1, 16, 64.0 * GIB, NET_GVNIC, 4e9, 1},
  {"g2-standard-24", GPU_L4, 2, 24, 96.0 * GIB, NET_GVNIC, 4e9, 2},
  {"g2-standard-32", GPU_L4, 1, 32, 128.0 * GIB, NET_GVNIC, 4e9, 1},
  {"g2-standard-48", GPU_L4, 4, 48, 192.0 * GIB, NET_GVNIC, 6.25e9, 4},
  {"g2-standard-96", GPU_L4, 8, 96, 384.0 * GIB, NET_GVNIC, 12.5e9, 8},
  /* AWS (p4d, p4de: 4 x 100 Gb/s EFA for 8 GPUs; p5, p5e: 32 x 100 Gb/s, four a GPU, one 400 Gb/s
  ** NIC here) and Azure (ND A100 v4: 8 x 200 Gb/s HDR; ND H100 v5: 8 x 400 Gb/s NDR). */
  {"p4d.24xlarge", GPU_A100_40, 8, 96, 1152.0 * GIB, NET_EFA, 12.5e9, 2},
  {"p4de.24xlarge", GPU_A100_80, 8, 96, 1152.0 * GIB, NET_EFA, 12.5e9, 2},
  {"p5.48xlarge", GPU_H100, 8, 192, 2048.0 * GIB, NET_EFA, 50e9, 1},
  {"p5e.48xlarge", GPU_H200, 8, 192, 2048.0 * GIB, NET_EFA, 50e9, 1},
  {"Standard_ND96asr_v4", GPU_A100_40, 8, 96, 900.0 * GIB, NET_IB_HDR, 25e9, 1},
  {"Standard_ND96amsr_A100_v4", GPU_A100_80, 8, 96, 1900.0 * GIB, NET_IB_HDR, 25e9, 1},
  {"Standard_ND96isr_H100_v5", GPU_H100, 8, 96, 1900.0 * GIB, NET_IB_NDR, 50e9, 1},
};

/* The per-op model's constants fitted by bench/fit_gemm.py on OpenXLA's measured H100 bf16
** GEMMs (docs/data/gemm_h100_xla.csv; docs/machine.md, "Compute"): cuBLAS's 256x128 tile at 0.91
** of an SM's peak, 55% of each wave's output write (every SM storing its tile at once, at its
** share of the bandwidth) not hidden behind the next wave, which is why the table's 4096 x 4096
** products fall from 783 TFLOP/s at k = 4096 to 392 at k = 256; 70% of the HBM bandwidth,
** 5.25 us a kernel. On another GPU or precision the same write costs what its own bandwidth,
** output bytes and rate make it (V100's FP32 cores barely notice it). Every other GPU takes the same
** constants (the same cuBLAS tile shapes; no GEMM table of A100, V100, L4 or B200 was found to fit
** them on: docs/machine.md says so per GPU). Float32 matmuls run at the GPU's own float32 rate
** over its 16-bit one (TF32: A100 156 of 312, H100 494.5 of 989; V100's FP32 cores 15.7 of 125),
** other ops at its FP32 cores' rate. */
#define GPU_TILE_M 256
#define GPU_TILE_N 128
#define GPU_TILE_SIZES 4
#define GPU_EFFICIENCY 0.91
#define GPU_MEM_EFFICIENCY 0.7
#define GPU_LAUNCH_S 5.25e-6
#define GPU_WRITEBACK 0.55
/* An NCCL collective's launch and completion beyond NCCL's model (calibrated on A100, NF elsewhere). */
#define GPU_NCCL_LAUNCH_S 5.6e-6

static sim_opmodel gpu_opmodel(const struct gpu *g) {
  return (sim_opmodel){ g->sms, GPU_TILE_M, GPU_TILE_N, GPU_TILE_SIZES, g->peak, GPU_EFFICIENCY,
                        GPU_MEM_EFFICIENCY, GPU_LAUNCH_S, g->f32_matmul / g->peak, g->fp32 / g->peak,
                        GPU_WRITEBACK };
}

/* Sets the transport of a GPU system's NICs (index into TRANSPORTS): its latency, and its line
** rate where the transport has one of its own. */
static void set_transport(scn_machine *m, int t) {
  snprintf(m->accel_transport, sizeof m->accel_transport, "%s", TRANSPORTS[t].name);
  m->accel_net_latency_s = TRANSPORTS[t].latency_s;
  if (TRANSPORTS[t].nic > 0) m->accel_nic_bytes_per_s = TRANSPORTS[t].nic;
}

int machines_set_transport(scn_machine *m, const char *name) {
  for (size_t t = 0; t < sizeof TRANSPORTS / sizeof TRANSPORTS[0]; t++)
    if (!strcmp(name, TRANSPORTS[t].name)) {
      set_transport(m, (int)t);
      return 0;
    }
  return -1;
}

void machines_list_transports(char *buf, size_t len) {
  size_t used = 0;
  buf[0] = 0;
  for (size_t t = 0; t < sizeof TRANSPORTS / sizeof TRANSPORTS[0]; t++) {
    int w = snprintf(buf + used, len - used, "%s%s", t ? ", " : "", TRANSPORTS[t].name);
    if (w < 0 || (size_t)w >= len - used) return;
    used += (size_t)w;
  }
}

static int gpu_system_lookup(const char *name, scn_machine *m) {
  for (size_t i = 0; i < sizeof GPU_SYSTEMS / sizeof GPU_SYSTEMS[0]; i++) {
    const struct gpu_system *s = &GPU_SYSTEMS[i];
    const struct gpu *g = &GPUS[s->gpu];
    if (strcmp(name, s->name)) continue;
    memset(m, 0, sizeof *m);
    snprintf(m->type, sizeof m->type, "%s", name);
    m->cpus = s->cpus;
    m->flops = MACHINE_N2_FLOPS_PER_VCPU * s->cpus;
    m->ram_bytes = s->ram_bytes;
    m->nic_bytes_per_s = machines_default_nic(s->cpus);
    m->mem_bytes_per_s = MACHINE_MEM_BYTES_PER_VCPU * s->cpus;
    m->accelerators = s->gpus;
    m->accel_peak_flops = g->peak;
    m->accel_hbm_bytes = g->hbm;
    m->accel_hbm_bytes_per_s = g->hbm_bw;
    m->accel_link_bytes_per_s = g->pcie;
    m->accel_link_latency_s = MACHINE_ACCEL_LINK_LATENCY_S;
    m->accel_efficiency = MACHINE_ACCEL_EFFICIENCY;
    m->accel_workspace_bytes = MACHINE_ACCEL_WORKSPACE_BYTES;
    m->accel_nvlink_bytes_per_s = g->nvlink;
    m->accel_nccl_bytes_per_s = g->nccl;
    m->accel_nccl_launch_s = GPU_NCCL_LAUNCH_S;
    m->accel_gpus_per_nic = s->gpus_per_nic;
    m->accel_nvls_bytes_per_s = g->nvls;
    m->accel_pcie_only = g->pcie_only;
    m->accel_nccl_arch = GPU_NCCL_ARCH[s->gpu];
    m->accel_host_amd = amd_host(name);
    m->accel_op = gpu_opmodel(g);
    snprintf(m->accel_gpu, sizeof m->accel_gpu, "%s", g->name);
    set_transport(m, s->transport);
    m->accel_nic_bytes_per_s = s->nic;
    return 0;
  }
  return -1;
}

double machines_default_nic(int cpus) {
  double gbps = 2.0 * cpus;
  if (gbps > 32.0) gbps = 32.0;
  return gbps * 1e9 / 8.0;
}

int machines_lookup(const char *name, scn_machine *m) {
  if (gpu_system_lookup(name, m) == 0) return 0;
  for (size_t f = 0; f < sizeof FAMILIES / sizeof FAMILIES[0]; f++) {
    const struct family *fa = &FAMILIES[f];
    size_t pl = strlen(fa->prefix);
    if (strncmp(name, fa->prefix, pl)) continue;
    const char *num = name + pl;
    if (!*num || strspn(num, "0123456789") != strlen(num) || num[0] == '0') return -1;
    int n = atoi(num);
    for (const int *s = fa->sizes; *s; s++) {
      if (*s != n) continue;
      memset(m, 0, sizeof *m);
      snprintf(m->type, sizeof m->type, "%s", name);
      m->cpus = n;
      m->flops = fa->flops_per_vcpu * n;
      m->ram_bytes = fa->ram_per_vcpu * n;
      m->nic_bytes_per_s = machines_default_nic(n);
      m->mem_bytes_per_s = MACHINE_MEM_BYTES_PER_VCPU * n;
      return 0;
    }
    return -1;
  }
  return -1;
}

/* A custom accelerator's per-op model from catalogue GPU g (GPUS[] index): that GPU's SMs, tiles,
** efficiencies and rate ratios at the accelerator's own peak, so each SM runs peak / SMs. */
static void custom_opmodel(scn_machine *m, int g) {
  m->accel_op = gpu_opmodel(&GPUS[g]);
  m->accel_op.peak = m->accel_peak_flops;
  snprintf(m->accel_gpu, sizeof m->accel_gpu, "%s", GPUS[g].name);
}

void machines_fill_defaults(scn_machine *m) {
  if (m->accel_per_op_gpu > 0) custom_opmodel(m, m->accel_per_op_gpu - 1);
  if (m->ram_bytes < 0) m->ram_bytes = 4.0 * GIB * m->cpus;
  if (m->nic_bytes_per_s < 0) m->nic_bytes_per_s = machines_default_nic(m->cpus);
  if (m->mem_bytes_per_s < 0) m->mem_bytes_per_s = MACHINE_MEM_BYTES_PER_VCPU * m->cpus;
  if (m->accel_efficiency < 0) m->accel_efficiency = MACHINE_ACCEL_EFFICIENCY;
  if (m->accel_link_latency_s < 0) m->accel_link_latency_s = MACHINE_ACCEL_LINK_LATENCY_S;
  if (m->accel_workspace_bytes < 0) m->accel_workspace_bytes = MACHINE_ACCEL_WORKSPACE_BYTES;
}

int machines_tpu_host_vcpus(const char *generation) {
  static const struct { const char *gen; int vcpus; } HOSTS[] = {
    {"v2", 96}, {"v3", 96}, {"v4", 240}, {"v5e", 224}, {"v5p", 208}, {"v6e", 180}};
  for (size_t i = 0; i < sizeof HOSTS / sizeof HOSTS[0]; i++)
    if (!strcmp(HOSTS[i].gen, generation)) return HOSTS[i].vcpus;
  return 96;  /* a generation added to sim/tpu without a host figure: the smallest TPU VM */
}

/* The TPU per-op model per generation: MXUs per TensorCore and their side (Cloud TPU's
** system-architecture pages; each generation's peak = MXUs x side^2 x 2 x clock: v4 8 x 128^2 x 2
** x 1.05 GHz = 275 TFLOP/s a chip), the share of the MXUs' peak a large bf16 GEMM sustains, the
** share of HBM bandwidth an op's traffic achieves, and an op's fixed cost. Fitted by
** bench/fit_tpu_gemm.py on measured bf16 GEMMs on one v6e chip (docs/data/gemm_v6e.csv, the 14
** rows with n = k; 15 held out, median |error| 5.5%): 0.89 of the MXUs' peak, 0.96 of HBM
** bandwidth (skinny products stream their weights at nearly the spec rate). No GEMM table of
** the older generations was found: they take v6e's figures (NF; MaxText's end-to-end 71% MFU
** on v5p and 67% on v5e, docs/fidelity.md, bound theirs from below). An op's fixed cost is 1 us
** (NF: XLA runs a step's ops back to back from one program, no host launch each; the GEMM
** measurements' dispatch is the host's, 123 us, not the device's); the VPU runs at 1/10 of the
** MXUs (the scaling book's "about 10x", NF); float32 matmuls at the bf16 rate (one bf16 pass,
** TF's default precision on TPU). */
#define TPU_V6E_EFFICIENCY 0.89
#define TPU_V6E_MEM_EFFICIENCY 0.96
#define TPU_LAUNCH_S 1e-6
#define TPU_VECTOR_RATE 0.1
#define TPU_ROWS 8
static const struct {
  const char *gen;        /* sim/tpu's generation name */
  int mxus_per_core;      /* matrix units per TensorCore */
  int side;               /* an MXU's systolic array is side x side */
  double efficiency;      /* share of the MXUs' peak a large bf16 GEMM sustains */
  double mem_efficiency;  /* share of HBM bandwidth an op's traffic achieves */
} TPU_GENERATIONS[] = {
  {"v2", 1, 128, TPU_V6E_EFFICIENCY, TPU_V6E_MEM_EFFICIENCY},
  {"v3", 2, 128, TPU_V6E_EFFICIENCY, TPU_V6E_MEM_EFFICIENCY},
  {"v4", 4, 128, TPU_V6E_EFFICIENCY, TPU_V6E_MEM_EFFICIENCY},
  {"v5e", 4, 128, TPU_V6E_EFFICIENCY, TPU_V6E_MEM_EFFICIENCY},
  {"v5p", 4, 128, TPU_V6E_EFFICIENCY, TPU_V6E_MEM_EFFICIENCY},
  {"v6e", 4, 256, TPU_V6E_EFFICIENCY, TPU_V6E_MEM_EFFICIENCY},
};

sim_opmodel machines_tpu_opmodel(const char *generation, int cores_per_device, double device_peak) {
  for (size_t i = 0; i < sizeof TPU_GENERATIONS / sizeof TPU_GENERATIONS[0]; i++)
    if (!strcmp(TPU_GENERATIONS[i].gen, generation))
      return (sim_opmodel){ TPU_GENERATIONS[i].mxus_per_core * cores_per_device, TPU_ROWS, TPU_GENERATIONS[i].side,
                            1, device_peak, TPU_GENERATIONS[i].efficiency, TPU_GENERATIONS[i].mem_efficiency,
                            TPU_LAUNCH_S, 1.0, TPU_VECTOR_RATE, 0 /* the v6e fit has no tile fill term */ };
  return (sim_opmodel){0};  /* a generation added to sim/tpu without MXU figures: the scalar roofline */
}

void machines_list(char *buf, size_t len) {
  size_t used = 0;
  buf[0] = 0;
  for (size_t f = 0; f < sizeof FAMILIES / sizeof FAMILIES[0]; f++) {
    const struct family *fa = &FAMILIES[f];
    int w = snprintf(buf + used, len - used, "%s%s{", f ? ", " : "", fa->prefix);
    if (w < 0 || (size_t)w >= len - used) return;
    used += (size_t)w;
    for (const int *s = fa->sizes; *s; s++) {
      w = snprintf(buf + used, len - used, "%s%d", s == fa->sizes ? "" : ",", *s);
      if (w < 0 || (size_t)w >= len - used) return;
      used += (size_t)w;
    }
    w = snprintf(buf + used, len - used, "}");
    if (w < 0 || (size_t)w >= len - used) return;
    used += (size_t)w;
  }
  for (size_t i = 0; i < sizeof GPU_SYSTEMS / sizeof GPU_SYSTEMS[0]; i++) {
    int w = snprintf(buf + used, len - used, ", %s", GPU_SYSTEMS[i].name);
    if (w < 0 || (size_t)w >= len - used) return;
    used += (size_t)w;
  }
}
