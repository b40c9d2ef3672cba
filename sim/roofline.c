/* roofline.c: compute- or memory-bound op times, scalar or per op (sim_roofline_, sim_opmodel_). */
#include "sim/roofline.h"

#include <math.h>

/* The tiles a unit may run besides its largest: divisors of tile_m and tile_n and the fraction
** of the largest tile's efficiency each sustains (smaller tiles reuse each operand load over
** fewer FMAs). The first tile_sizes rows are tried. Fitted with the efficiency by
** bench/fit_gemm.py, as cuBLAS's 256x128, 128x128, 128x64 and 64x64 tiles on H100. */
static const struct { double div_m, div_n, efficiency; } TILES[] = {
  {1, 1, 1.0}, {2, 1, 0.95}, {2, 2, 0.85}, {4, 2, 0.70},
};
#define MAX_TILES ((int)(sizeof TILES / sizeof TILES[0]))

/* Seconds of the matrix units for mm: the best tile's whole waves, each its tiles' products and
** the exposed part of their outputs' write at a unit's share of mem_bw (0: no memory). */
static double matmul_seconds(const sim_opmodel *m, double mem_bw, const sim_matmul *mm) {
  double rate = m->peak * (mm->elem_bytes >= 4 ? m->f32_rate : 1.0) * m->efficiency / m->units;
  double write_share = mem_bw * m->mem_efficiency / m->units;
  int sizes = m->tile_sizes < 1 ? 1 : m->tile_sizes > MAX_TILES ? MAX_TILES : m->tile_sizes;
  double best = 0;
  for (int i = 0; i < sizes; i++) {
    double tm = m->tile_m / TILES[i].div_m, tn = m->tile_n / TILES[i].div_n;
    double tiles = mm->batch * ceil(mm->m / tm) * ceil(mm->n / tn);
    double waves = ceil(tiles / m->units);
    double write = mem_bw > 0 ? m->writeback * tm * tn * mm->elem_bytes / write_share : 0;
    double s = waves * (2.0 * tm * tn * mm->k / (rate * TILES[i].efficiency) + write);
    if (i == 0 || s < best) best = s;
  }
  return best;
}

double sim_opmodel_seconds(const sim_opmodel *m, double mem_bw, double flops, double bytes, const sim_matmul *mm) {
  double compute = mm != NULL && mm->batch > 0 ? matmul_seconds(m, mem_bw, mm) : flops / (m->peak * m->vector_rate);
  double memory = mem_bw > 0 ? bytes / (mem_bw * m->mem_efficiency) : 0;
  return m->launch_s + (memory > compute ? memory : compute);
}

double sim_roofline_work(const sim_roofline *r, double flops, double bytes, const sim_matmul *mm) {
  if (r->op.units > 0) return sim_opmodel_seconds(&r->op, r->mem_bw, flops, bytes, mm) * r->rate;
  if (r->mem_bw <= 0) return flops;
  double memory_bound = bytes * (r->rate / r->mem_bw);
  return memory_bound > flops ? memory_bound : flops;
}

double sim_roofline_work_ops(const sim_roofline *r, const double *flops, const double *bytes, const sim_matmul *mm,
                             size_t n) {
  double work = 0;
  for (size_t i = 0; i < n; i++) work += sim_roofline_work(r, flops[i], bytes[i], mm ? &mm[i] : NULL);
  return work;
}
