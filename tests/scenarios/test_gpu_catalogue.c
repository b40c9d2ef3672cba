/*
** test_gpu_catalogue.c: the GPUs, systems, cloud VMs and transports of the machine catalogue
** (scenarios/config/machines.c; docs/machine.md, "GPU catalogue" and "Transports"): each type
** carries its datasheet's rates into the per-op model, and machine.transport sets the NICs'
** line rate and the latency NCCL's model adds on every network hop.
*/
#include "tests/testutil.h"

#include <math.h>
#include <string.h>

#include "scenarios/config/machines.h"
#include "scenarios/config/scenario.h"
#include "scenarios/programs/train.h"
#include "scenarios/programs/workload.h"
#include "sim/nccl.h"

#define GIB 1073741824.0

/* The per-op model's float32 matmul and vector rates are each GPU's datasheet ratios: TF32 is half
** the 16-bit tensor rate on A100 (156 / 312) and H100 (494.5 / 989), exactly, so those systems
** keep the 0.5 they had; V100 has no TF32 and runs float32 matmuls on its FP32 cores (15.7 / 125
** = 0.1256); L4's TF32 is 60 of 121. */
static void gpus_carry_their_datasheet_rates(void **state) {
  (void)state;
  scn_machine m;
  assert_int_equal(machines_lookup("dgx-a100", &m), 0);
  assert_true(m.accel_op.f32_rate == 0.5);
  assert_true(m.accel_op.vector_rate == 19.5e12 / 312e12);
  assert_int_equal(machines_lookup("dgx-h100", &m), 0);
  assert_true(m.accel_op.f32_rate == 0.5);
  assert_string_equal(m.accel_transport, "infiniband-ndr");
  assert_int_equal(machines_lookup("dgx-1", &m), 0);
  assert_string_equal(m.accel_gpu, "V100 SXM2 16 GB");
  assert_int_equal(m.accelerators, 8);
  assert_int_equal(m.accel_op.units, 80);
  assert_true(m.accel_peak_flops == 125e12);
  assert_true(fabs(m.accel_op.f32_rate - 0.1256) < 1e-12);
  assert_true(m.accel_hbm_bytes == 16 * GIB);
  assert_int_equal(m.accel_gpus_per_nic, 2); /* 4 x 100 Gb/s EDR for 8 GPUs */
  assert_true(m.accel_nic_bytes_per_s == 12.5e9);
  assert_int_equal(machines_lookup("dgx-2", &m), 0);
  assert_int_equal(m.accelerators, 16);
  assert_true(m.accel_hbm_bytes == 32 * GIB);
  assert_int_equal(m.accel_gpus_per_nic, 2); /* 8 x 100 Gb/s EDR for 16 GPUs */
  assert_int_equal(machines_lookup("g2-standard-96", &m), 0);
  assert_string_equal(m.accel_gpu, "L4 24 GB");
  assert_int_equal(m.accelerators, 8);
  assert_int_equal(m.accel_gpus_per_nic, 8); /* the VM's one gVNIC */
  assert_int_equal(m.accel_pcie_only, 1);
  assert_true(fabs(m.accel_op.f32_rate - 60.0 / 121.0) < 1e-12);
  assert_int_equal(machines_lookup("g2-standard-24", &m), 0);
  assert_int_equal(m.accelerators, 2);
  assert_int_equal(machines_lookup("a4-highgpu-8g", &m), 0);
  assert_int_equal(m.accel_op.units, 148);
  assert_true(m.accel_peak_flops == 2250e12);
  assert_true(m.accel_hbm_bytes == 180e9);
  assert_true(m.accel_op.f32_rate == 0.5);
  assert_int_equal(machines_lookup("p5e.48xlarge", &m), 0);
  assert_true(m.accel_hbm_bytes == 141e9);
  assert_string_equal(m.accel_transport, "efa");
  assert_true(m.accel_net_latency_s == 75e-6);
  assert_int_equal(machines_lookup("p4d.24xlarge", &m), 0);
  assert_int_equal(m.accel_gpus_per_nic, 2); /* 4 x 100 Gb/s EFA for 8 GPUs */
  assert_int_equal(machines_lookup("Standard_ND96isr_H100_v5", &m), 0);
  assert_true(m.accel_nic_bytes_per_s == 50e9);
  assert_true(m.accel_net_latency_s == 0);
  assert_int_equal(machines_lookup("g2-standard-64", &m), -1);
  assert_int_equal(machines_lookup("p5.24xlarge", &m), -1);
}

/* Seconds of the one all_reduce of a workload scenario under tests/data/gpu_catalogue. */
static double all_reduce_seconds(const char *name) {
  static scenario s;
  scn_error err;
  char rel[256], path[512];
  snprintf(rel, sizeof rel, "tests/data/gpu_catalogue/%s.yaml", name);
  if (scenario_load(tu_src(rel), NULL, 0, &s, &err) != 0) fail_msg("%s", err.msg);
  char *out = tu_temp_dir("podsim-gpu-catalogue");
  workload_summary w;
  if (workload_run(&s, out, &w, &err) != TR_EXIT_OK) fail_msg("%s", err.msg);
  double t[2];
  snprintf(path, sizeof path, "%s/collective.csv", out);
  assert_true(tu_read_column(path, 4, t, 2, NULL) >= 1);
  tu_remove_dir(out);
  return t[0];
}

/* Two p5.48xlarge reduce 1 GiB by NVLS tree either way; on EFA each of the tree's network hops
** pays the plugin's 75 us twice (NCCL counts it again for Simple's flush, sim/nccl.h): 2 log2(2)
** x 2 x 75 us = 300 us more than on InfiniBand NDR at the same 400 Gb/s a GPU (4.4341 ms: the 8
** heads' 461.6 GB/s bind). */
static void efa_latency_reaches_nccl(void **state) {
  (void)state;
  double efa = all_reduce_seconds("p5_2x_efa"), ib = all_reduce_seconds("p5_2x_infiniband-ndr");
  if (fabs(efa - ib - 300e-6) > 1e-9) fail_msg("EFA %.9f s, InfiniBand %.9f s: want 300 us apart", efa, ib);
}

/* An unknown transport, and a transport on a machine with no GPUs, are errors at the key. */
static void transport_key_errors(void **state) {
  (void)state;
  static scenario s;
  scn_error err;
  assert_int_not_equal(scenario_load(tu_src("tests/data/gpu_catalogue/bad_transport.yaml"), NULL, 0, &s, &err), 0);
  assert_non_null(strstr(err.msg, "bad_transport.yaml:5:"));
  assert_non_null(strstr(err.msg, "cluster.workers.machine.transport: expected a transport (infiniband-edr"));
  assert_non_null(strstr(err.msg, "found \"omnipath\""));
  assert_int_not_equal(scenario_load(tu_src("tests/data/gpu_catalogue/transport_cpu.yaml"), NULL, 0, &s, &err), 0);
  assert_non_null(strstr(err.msg, "n2-standard-8 has no GPUs; transport is for a GPU system"));
}

/* Seconds of the one GEMM of the loaded workload scenario s. */
static double gemm_seconds(const scenario *s) {
  scn_error err;
  char *out = tu_temp_dir("podsim-gpu-catalogue"), path[512];
  workload_summary w;
  if (workload_run(s, out, &w, &err) != TR_EXIT_OK) fail_msg("%s", err.msg);
  double t[2];
  snprintf(path, sizeof path, "%s/matmul.csv", out);
  assert_true(tu_read_column(path, 4, t, 2, NULL) >= 1);
  tu_remove_dir(out);
  return t[0];
}

/* A custom accelerator names the catalogue GPU whose per-op model it takes: H100's 132 SMs, tiles
** and efficiencies at its own peak, 494.5 TFLOP/s. A 4096^3 bf16 GEMM then takes the 256x128
** tile: 16 x 32 = 512 tiles, ceil(512 / 132) = 4 waves of 2 x 256 x 128 x 4096 FLOPs at
** 494.5e12 x 0.91 / 132 a SM (78.74 us) and 0.55 of the tile's 65,536-byte write at 0.7 x 3350
** GB/s / 132 (2.03 us), plus the 5.25 us launch: 328.3 us (its bytes, 3 x 4096^2 x 2, take
** 42.9 us at 0.7 x 3350 GB/s). With efficiency as well it is two models: an error. */
static void custom_accelerator_names_its_per_op_model(void **state) {
  (void)state;
  static scenario s;
  scn_error err;
  if (scenario_load(tu_src("tests/data/gpu_catalogue/custom_h100_like.yaml"), NULL, 0, &s, &err) != 0)
    fail_msg("%s", err.msg);
  scn_machine h;
  assert_int_equal(machines_lookup("dgx-h100", &h), 0);
  const sim_opmodel *op = &s.worker_machine.accel_op;
  assert_int_equal(op->units, 132);
  assert_true(op->peak == 494.5e12);
  assert_true(op->efficiency == h.accel_op.efficiency && op->launch_s == h.accel_op.launch_s &&
              op->writeback == h.accel_op.writeback);
  assert_true(op->f32_rate == 0.5 && op->vector_rate == h.accel_op.vector_rate);
  assert_string_equal(s.worker_machine.accel_gpu, "H100 SXM5 80 GB");
  double t = gemm_seconds(&s);
  double want = 5.25e-6 + 4 * (2.0 * 256 * 128 * 4096 / (494.5e12 * 0.91 / 132) + 0.55 * 65536.0 / (3350e9 * 0.7 / 132));
  if (fabs(t - want) > 1e-12) fail_msg("GEMM %.12f s, want %.12f", t, want);
  assert_int_not_equal(scenario_load(tu_src("tests/data/gpu_catalogue/custom_two_models.yaml"), NULL, 0, &s, &err), 0);
  assert_non_null(strstr(err.msg, "custom_two_models.yaml:11:"));
  assert_non_null(strstr(err.msg, "accelerators.efficiency: efficiency is the scalar roofline's"));
}

/* The A100 PCIe 40 GB (product brief PB-10137) is the SXM4's GA100 at the same 1410 MHz boost:
** 108 SMs, 312 TFLOP/s bf16, TF32 at half, 1555 GB/s, but no NVLink switch: its GPUs are PCIe-only
** (NCCL's 24 GB/s Gen4 x16 ring) and its 250 W limit is not modelled. The fidelity rows' custom
** machine that names it (tests/data/fidelity/gemm_a100_4096x4096x4096.yaml) times a 4096^3 bf16
** GEMM as one dgx-a100 GPU does: the 256x128 tile, 16 x 32 = 512 tiles in ceil(512 / 108) = 5
** waves of 2 x 256 x 128 x 4096 FLOPs at 312e12 x 0.91 / 108 a SM (102.11 us) and 0.55 of the
** 65,536-byte tile write at 0.7 x 1555 GB/s / 108 (3.58 us), plus the 5.25 us launch: 533.7 us,
** 257.5 TFLOP/s (the 128x128 tile's 10 waves take 555.3 us; the bytes 92.5 us). */
static void a100_pcie_is_the_sxm4_silicon_on_pcie(void **state) {
  (void)state;
  scn_machine m;
  assert_int_equal(machines_lookup("dgx-a100", &m), 0);
  static scenario s;
  scn_error err;
  if (scenario_load(tu_src("tests/data/fidelity/gemm_a100_4096x4096x4096.yaml"), NULL, 0, &s, &err) != 0)
    fail_msg("%s", err.msg);
  assert_string_equal(s.worker_machine.accel_gpu, "A100 PCIe 40 GB");
  const sim_opmodel *op = &s.worker_machine.accel_op;
  assert_int_equal(op->units, 108);
  assert_true(op->peak == 312e12 && op->f32_rate == 0.5 && op->vector_rate == 19.5e12 / 312e12);
  assert_true(op->efficiency == m.accel_op.efficiency && op->writeback == m.accel_op.writeback);
  double t = gemm_seconds(&s);
  double want = 5.25e-6 + 5 * (2.0 * 256 * 128 * 4096 / (312e12 * 0.91 / 108) + 0.55 * 65536.0 / (1555e9 * 0.7 / 108));
  if (fabs(t - want) > 1e-12) fail_msg("GEMM %.12f s, want %.12f", t, want);
  if (fabs(2.0 * 4096 * 4096 * 4096 / t / 1e12 - 257.5) > 0.05) fail_msg("%.2f TFLOP/s, want 257.5", 2.0 * 4096 * 4096 * 4096 / t / 1e12);
}

/* The H100 PCIe (datasheet, PCIe column) is a smaller Hopper than the SXM5: a custom machine that
** names it takes 114 SMs, TF32 at 378 of 756 TFLOP/s dense (0.5) and its FP32 cores' 51 over 756,
** not the SXM5's 132 SMs and 67 of 989; the names list ends with it. */
static void h100_pcie_per_op_model(void **state) {
  (void)state;
  int g = 0;
  while (MACHINES_GPU_MODELS[g] && strcmp(MACHINES_GPU_MODELS[g], "h100-pcie")) g++;
  assert_non_null(MACHINES_GPU_MODELS[g]);
  assert_null(MACHINES_GPU_MODELS[g + 1]);
  scn_machine m;
  memset(&m, 0, sizeof m);
  m.cpus = 16;
  m.accel_per_op_gpu = g;
  m.accel_peak_flops = 756e12;
  machines_fill_defaults(&m);
  assert_string_equal(m.accel_gpu, "H100 PCIe 80 GB");
  assert_int_equal(m.accel_op.units, 114);
  assert_true(m.accel_op.peak == 756e12 && m.accel_op.f32_rate == 0.5);
  assert_true(m.accel_op.vector_rate == 51e12 / 756e12);
}

/* What NCCL's tuning tables know of each system (sim/nccl.h): its GPUs' generation, by compute
** capability as tuning.cc indexes it (L4's 8.9 takes Ampere's row, B200 Hopper's: NCCL 2.20's
** tables end there), and whether its hosts are AMD's, which picks LL's cap across nodes. */
static void systems_carry_nccl_generation_and_host(void **state) {
  (void)state;
  static const struct { const char *name; int arch, amd; } WANT[] = {
    {"dgx-a100", SIM_NCCL_AMPERE, 1}, {"dgx-h100", SIM_NCCL_HOPPER, 0},
    {"dgx-1", SIM_NCCL_VOLTA, 0}, {"g2-standard-8", SIM_NCCL_AMPERE, 0},
    {"dgx-b200", SIM_NCCL_HOPPER, 0}, {"p5.48xlarge", SIM_NCCL_HOPPER, 1},
    {"p4d.24xlarge", SIM_NCCL_AMPERE, 0}, {"Standard_ND96amsr_A100_v4", SIM_NCCL_AMPERE, 1},
    {"a3-megagpu-8g", SIM_NCCL_HOPPER, 0}, {"n2-standard-8", SIM_NCCL_ARCH_NONE, 0}};
  for (size_t i = 0; i < sizeof WANT / sizeof WANT[0]; i++) {
    scn_machine m;
    assert_int_equal(machines_lookup(WANT[i].name, &m), 0);
    if (m.accel_nccl_arch != WANT[i].arch || m.accel_host_amd != WANT[i].amd)
      fail_msg("%s: arch %d, AMD host %d", WANT[i].name, m.accel_nccl_arch, m.accel_host_amd);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(gpus_carry_their_datasheet_rates),
    cmocka_unit_test(efa_latency_reaches_nccl),
    cmocka_unit_test(transport_key_errors),
    cmocka_unit_test(custom_accelerator_names_its_per_op_model),
    cmocka_unit_test(systems_carry_nccl_generation_and_host),
    cmocka_unit_test(a100_pcie_is_the_sxm4_silicon_on_pcie),
    cmocka_unit_test(h100_pcie_per_op_model),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
