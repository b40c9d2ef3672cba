/* roofline.c: compute- or memory-bound op times (sim_roofline_). */
#include "sim/roofline.h"

double sim_roofline_work(const sim_roofline *r, double flops, double bytes) {
  if (r->mem_bw <= 0) return flops;
  double memory_bound = bytes * (r->rate / r->mem_bw);
  return memory_bound > flops ? memory_bound : flops;
}

double sim_roofline_work_ops(const sim_roofline *r, const double *flops, const double *bytes, size_t n) {
  double work = 0;
  for (size_t i = 0; i < n; i++) work += sim_roofline_work(r, flops[i], bytes[i]);
  return work;
}
