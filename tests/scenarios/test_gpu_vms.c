/*
** test_gpu_vms.c: Compute Engine's GPU VMs in the machine catalogue (scenarios/config/machines.c,
** docs/machine.md "GPU VMs"): their GPUs, how those share NICs, and that a VM plan has a price.
*/
#include "tests/testutil.h"

#include <math.h>
#include <string.h>

#include "scenarios/config/machines.h"
#include "scenarios/config/scenario.h"
#include "scenarios/programs/train.h"
#include "scenarios/programs/workload.h"

#define GIB 1073741824.0

/* A2 (A100) VMs leave the VM through one virtual NIC shared by all their GPUs; A3 High shares
** each of 4 TCPX NICs between two GPUs; A3 Mega and Ultra give each GPU its own NIC. */
static void gpu_vms_have_their_gpus_and_nics(void **state) {
  (void)state;
  scn_machine m;
  assert_int_equal(machines_lookup("a2-highgpu-1g", &m), 0);
  assert_int_equal(m.accelerators, 1);
  assert_int_equal(m.cpus, 12);
  assert_true(m.accel_hbm_bytes == 40 * GIB);
  assert_true(m.accel_nic_bytes_per_s == 3e9); /* 24 Gb/s */
  assert_int_equal(machines_lookup("a2-highgpu-4g", &m), 0);
  assert_int_equal(m.accelerators, 4);
  assert_int_equal(m.accel_gpus_per_nic, 4);
  assert_int_equal(machines_lookup("a2-ultragpu-8g", &m), 0);
  assert_int_equal(m.accelerators, 8);
  assert_int_equal(m.accel_gpus_per_nic, 8);
  assert_true(m.accel_hbm_bytes == 80 * GIB);
  assert_true(m.accel_hbm_bytes_per_s == 2039e9);
  assert_true(m.accel_nic_bytes_per_s == 12.5e9); /* 100 Gb/s */
  assert_true(m.accel_peak_flops == 312e12);
  assert_int_equal(machines_lookup("a3-highgpu-8g", &m), 0);
  assert_int_equal(m.accel_gpus_per_nic, 2);
  assert_true(m.accel_nic_bytes_per_s == 25e9); /* 200 Gb/s a NIC */
  assert_true(m.accel_nvls_bytes_per_s == 330e9);
  assert_int_equal(machines_lookup("a3-megagpu-8g", &m), 0);
  assert_int_equal(m.accel_gpus_per_nic, 1);
  assert_int_equal(machines_lookup("a3-ultragpu-8g", &m), 0);
  assert_true(m.accel_hbm_bytes == 141e9);
  assert_true(m.accel_hbm_bytes_per_s == 4800e9);
  assert_true(m.accel_nic_bytes_per_s == 50e9); /* 400 Gb/s */
  /* every GPU VM carries the per-op model, not the scalar roofline: its SMs are set */
  assert_int_equal(m.accel_op.units, 132);
  assert_int_equal(machines_lookup("a2-highgpu-3g", &m), -1);
  assert_int_equal(machines_lookup("a3-highgpu-4g", &m), -1);
}

/* A scenario on a3-highgpu-8g keeps the catalogue's NIC sharing; nics: 8 overrides it, and a
** 2-GPU part of an a2-highgpu-8g still shares the VM's one NIC (8 GPUs a NIC). The A2 run is
** billed its two whole VMs, 2 x $29.38708 an hour (prices.csv); A3 has no price row (NaN). */
static void gpu_vm_nics_key(void **state) {
  (void)state;
  static scenario s;
  scn_error err;
  static const char *const FILES[] = {"tests/data/gpu_vms/a3_high.yaml", "tests/data/gpu_vms/a3_high_8nics.yaml",
                                      "tests/data/gpu_vms/a2_high_2of8.yaml"};
  static const int PER_NIC[] = {2, 1, 8};
  for (int i = 0; i < 3; i++) {
    if (scenario_load(tu_src(FILES[i]), NULL, 0, &s, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(s.worker_machine.accel_gpus_per_nic, PER_NIC[i]);
    if (i < 2) assert_true(isnan(s.price_per_hour));
    else assert_true(fabs(s.price_per_hour - 2 * 29.38708) < 1e-9);
  }
}

/* The busbw of the 1 GiB all-reduce a scenario of tests/data/gpu_vms/ runs, after checking the
** NIC rate it loaded. */
static double nic_scenario_busbw(const char *file, double nic) {
  static scenario s;
  scn_error err;
  if (scenario_load(tu_src(file), NULL, 0, &s, &err) != 0) fail_msg("%s", err.msg);
  assert_true(s.worker_machine.accel_nic_bytes_per_s == nic);
  char *out = tu_temp_dir("podsim-gpu-vms"), path[512];
  workload_summary w;
  if (workload_run(&s, out, &w, &err) != TR_EXIT_OK) fail_msg("%s", err.msg);
  double busbw[2];
  snprintf(path, sizeof path, "%s/collective.csv", out);
  assert_true(tu_read_column(path, 6, busbw, 2, NULL) >= 1);
  tu_remove_dir(out);
  return busbw[0];
}

/* nic_bandwidth sets each GPU NIC's rate: 100 Gb/s = 12.5 GB/s, and NCCL's ring across two DGX A100
** then moves at the 8 NICs' 8 x 12.5 = 100 GB/s busbw less its latency: 1 GiB at 98.83 GB/s (at the
** catalogue's 200 Gb/s it is 187.7, the NICs' PCIe links binding: below). */
static void gpu_nic_bandwidth_key(void **state) {
  (void)state;
  double busbw = nic_scenario_busbw("tests/data/gpu_vms/dgx_a100_100g.yaml", 12.5e9);
  if (!(busbw > 97.0 && busbw < 100.0)) fail_msg("busbw %.3f GB/s, want 98.8 (below the NICs' 100)", busbw);
}

/* A NIC faster than its PCIe link moves what the link carries: a 400 Gb/s NIC (50 GB/s) on a DGX
** A100's Gen4 x16 (32 GB/s raw, 24 as NCCL's topology rates it) gives 8 x 24 = 192 GB/s of
** busbw, less the ring's latency: 187.7 GB/s for 1 GiB, as at the catalogue's 200 Gb/s (25 GB/s,
** also above 24). Without the link's bound the ring would run at NVLink's 235 (8 x 50 = 400 of
** NICs): above 200. The scenario keeps the rate it was given. */
static void gpu_nic_above_its_pcie_link(void **state) {
  (void)state;
  double busbw = nic_scenario_busbw("tests/data/gpu_vms/dgx_a100_400g.yaml", 50e9);
  if (!(busbw > 185.0 && busbw < 192.0)) fail_msg("busbw %.3f GB/s, want 187.7 (below 8 x 24)", busbw);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(gpu_vms_have_their_gpus_and_nics),
    cmocka_unit_test(gpu_vm_nics_key),
    cmocka_unit_test(gpu_nic_bandwidth_key),
    cmocka_unit_test(gpu_nic_above_its_pcie_link),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
