/*
** work_memo.c: cg_kernels_work remembered (cg_work_memo_). A pod's replicas run the same compiled
** kernels on devices of one roofline, so each step asked the same sum of thousands of ops'
** roofline times once per replica: 4096 times on a v4-8192, a tenth of the run (issue 31). The
** memo keeps the last CG_WORK_MEMO_SLOTS answers by (kernels, range, roofline by value): an
** answer is the pure function's, bit for bit, so a hit changes no simulated time.
*/
#include "compile/compile.h"

static int same_roofline(const sim_roofline *a, const sim_roofline *b) {
  const sim_opmodel *x = &a->op, *y = &b->op;
  return a->rate == b->rate && a->mem_bw == b->mem_bw && x->units == y->units && x->tile_m == y->tile_m &&
         x->tile_n == y->tile_n && x->tile_sizes == y->tile_sizes && x->peak == y->peak &&
         x->efficiency == y->efficiency && x->mem_efficiency == y->mem_efficiency &&
         x->launch_s == y->launch_s && x->f32_rate == y->f32_rate && x->vector_rate == y->vector_rate &&
         x->writeback == y->writeback;
}

double cg_work_memo_get(cg_work_memo *m, const sim_roofline *r, const cg_kernel *k, size_t from, size_t to) {
  for (int i = 0; i < m->used; i++) {
    const cg_work_memo_slot *s = &m->slot[i];
    if (s->kernels == k && s->from == from && s->to == to && same_roofline(&s->roofline, r)) return s->work;
  }
  cg_work_memo_slot *s = &m->slot[m->next];
  *s = (cg_work_memo_slot){ k, from, to, *r, cg_kernels_work(r, k, from, to) };
  m->next = (m->next + 1) % CG_WORK_MEMO_SLOTS;
  if (m->used < CG_WORK_MEMO_SLOTS) m->used++;
  return s->work;
}
