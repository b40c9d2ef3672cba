/* machines.c: see machines.h. */
#include "scenarios/config/machines.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* GPU systems: per GPU but the host's cpus, ram and nic (the host's own NICs, storage and
** management, not the GPUs' compute fabric). Sources in docs/machine.md. */
static const struct gpu_system {
  const char *name;
  int cpus;               /* host cores */
  double ram_bytes;       /* host memory */
  double peak;            /* bf16 dense FLOP/s per GPU */
  double hbm, hbm_bw;     /* per GPU: bytes, bytes/s */
  double pcie;            /* per GPU to the host, one way */
  double nvlink;          /* per GPU one way */
  double nccl;            /* NCCL's Simple ring ceiling per GPU */
  double nic;             /* per GPU one way */
  double launch;          /* an NCCL collective's launch and completion, seconds */
  double nvls;            /* NCCL's NVLS busBw (NVLink SHARP), 0: none */
  int sms;                /* streaming multiprocessors: the per-op model's units */
  double fp32_cores;      /* non-tensor FP32 FLOP/s: the per-op model's vector rate */
  int gpus;               /* GPUs of the system or VM */
  int gpus_per_nic;       /* consecutive GPUs sharing one NIC of rate `nic` */
} GPU_SYSTEMS[] = {
  {"dgx-a100", 128, 1024.0 * GIB, 312e12, 40.0 * GIB, 1555e9, 32e9, 300e9, 235e9, 25e9, 5.6e-6, 0, 108, 19.5e12, 8, 1},
  {"dgx-h100", 112, 2048.0 * GIB, 989e12, 80.0 * GIB, 3350e9, 64e9, 450e9, 370e9, 50e9, 5.6e-6, 330e9, 132, 67e12, 8, 1},
  /* Compute Engine's GPU VMs (docs/machine.md, "GPU VMs"): A2 has no GPUDirect NICs, its GPUs
  ** leave the VM through its one virtual NIC (24/32/50/100 Gb/s for 1/2/4/8 GPUs); A3 High has
  ** 4 x 200 Gb/s GPUDirect-TCPX NICs for 8 GPUs, A3 Mega 8 x 200 Gb/s TCPXO, A3 Ultra 8 x 400 Gb/s
  ** RoCE (ConnectX-7). A100 80 GB: 2039 GB/s HBM2e; H200: 141 GB HBM3e at 4.8 TB/s, H100's SMs. */
  {"a2-highgpu-1g", 12, 85.0 * GIB, 312e12, 40.0 * GIB, 1555e9, 32e9, 300e9, 235e9, 3e9, 5.6e-6, 0, 108, 19.5e12, 1, 1},
  {"a2-highgpu-2g", 24, 170.0 * GIB, 312e12, 40.0 * GIB, 1555e9, 32e9, 300e9, 235e9, 4e9, 5.6e-6, 0, 108, 19.5e12, 2, 2},
  {"a2-highgpu-4g", 48, 340.0 * GIB, 312e12, 40.0 * GIB, 1555e9, 32e9, 300e9, 235e9, 6.25e9, 5.6e-6, 0, 108, 19.5e12, 4, 4},
  {"a2-highgpu-8g", 96, 680.0 * GIB, 312e12, 40.0 * GIB, 1555e9, 32e9, 300e9, 235e9, 12.5e9, 5.6e-6, 0, 108, 19.5e12, 8, 8},
  {"a2-ultragpu-1g", 12, 170.0 * GIB, 312e12, 80.0 * GIB, 2039e9, 32e9, 300e9, 235e9, 3e9, 5.6e-6, 0, 108, 19.5e12, 1, 1},
  {"a2-ultragpu-2g", 24, 340.0 * GIB, 312e12, 80.0 * GIB, 2039e9, 32e9, 300e9, 235e9, 4e9, 5.6e-6, 0, 108, 19.5e12, 2, 2},
  {"a2-ultragpu-4g", 48, 680.0 * GIB, 312e12, 80.0 * GIB, 2039e9, 32e9, 300e9, 235e9, 6.25e9, 5.6e-6, 0, 108, 19.5e12, 4, 4},
  {"a2-ultragpu-8g", 96, 1360.0 * GIB, 312e12, 80.0 * GIB, 2039e9, 32e9, 300e9, 235e9, 12.5e9, 5.6e-6, 0, 108, 19.5e12, 8, 8},
  {"a3-highgpu-8g", 208, 1872.0 * GIB, 989e12, 80.0 * GIB, 3350e9, 64e9, 450e9, 370e9, 25e9, 5.6e-6, 330e9, 132, 67e12, 8, 2},
  {"a3-megagpu-8g", 208, 1872.0 * GIB, 989e12, 80.0 * GIB, 3350e9, 64e9, 450e9, 370e9, 25e9, 5.6e-6, 330e9, 132, 67e12, 8, 1},
  {"a3-ultragpu-8g", 224, 2952.0 * GIB, 989e12, 141e9, 4800e9, 64e9, 450e9, 370e9, 50e9, 5.6e-6, 330e9, 132, 67e12, 8, 1},
};

/* The per-op model's constants fitted by bench/fit_gemm.py on OpenXLA's measured H100 bf16
** GEMMs (docs/data/gemm_h100_xla.csv; docs/machine.md, "Compute"): cuBLAS's 256x128 tile at 0.84
** of an SM's peak, 70% of the HBM bandwidth, 5.5 us a kernel. A100 takes the same constants
** (the same cuBLAS tiles; no A100 table was found to fit them on). TF32 runs float32 operands at
** half the bf16 rate on both. */
#define GPU_TILE_M 256
#define GPU_TILE_N 128
#define GPU_TILE_SIZES 4
#define GPU_EFFICIENCY 0.84
#define GPU_MEM_EFFICIENCY 0.7
#define GPU_LAUNCH_S 5.5e-6
#define GPU_F32_RATE 0.5

static sim_opmodel gpu_opmodel(const struct gpu_system *g) {
  return (sim_opmodel){ g->sms, GPU_TILE_M, GPU_TILE_N, GPU_TILE_SIZES, g->peak, GPU_EFFICIENCY,
                        GPU_MEM_EFFICIENCY, GPU_LAUNCH_S, GPU_F32_RATE, g->fp32_cores / g->peak };
}
static int gpu_system_lookup(const char *name, scn_machine *m) {
  for (size_t i = 0; i < sizeof GPU_SYSTEMS / sizeof GPU_SYSTEMS[0]; i++) {
    const struct gpu_system *g = &GPU_SYSTEMS[i];
    if (strcmp(name, g->name)) continue;
    memset(m, 0, sizeof *m);
    snprintf(m->type, sizeof m->type, "%s", name);
    m->cpus = g->cpus;
    m->flops = MACHINE_N2_FLOPS_PER_VCPU * g->cpus;
    m->ram_bytes = g->ram_bytes;
    m->nic_bytes_per_s = machines_default_nic(g->cpus);
    m->mem_bytes_per_s = MACHINE_MEM_BYTES_PER_VCPU * g->cpus;
    m->accelerators = g->gpus;
    m->accel_peak_flops = g->peak;
    m->accel_hbm_bytes = g->hbm;
    m->accel_hbm_bytes_per_s = g->hbm_bw;
    m->accel_link_bytes_per_s = g->pcie;
    m->accel_link_latency_s = MACHINE_ACCEL_LINK_LATENCY_S;
    m->accel_efficiency = MACHINE_ACCEL_EFFICIENCY;
    m->accel_workspace_bytes = MACHINE_ACCEL_WORKSPACE_BYTES;
    m->accel_nvlink_bytes_per_s = g->nvlink;
    m->accel_nccl_bytes_per_s = g->nccl;
    m->accel_nic_bytes_per_s = g->nic;
    m->accel_nccl_launch_s = g->launch;
    m->accel_gpus_per_nic = g->gpus_per_nic;
    m->accel_nvls_bytes_per_s = g->nvls;
    m->accel_op = gpu_opmodel(g);
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

void machines_fill_defaults(scn_machine *m) {
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
                            TPU_LAUNCH_S, 1.0, TPU_VECTOR_RATE };
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
