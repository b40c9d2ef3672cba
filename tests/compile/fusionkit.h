/* fusionkit.h: what the fusion tests read off a compiled step (test_fusion.c, test_fusion_gpu.c):
** its forward's kernels and how many ops a rule fused. */
#ifndef PODSIM_TEST_FUSIONKIT_H
#define PODSIM_TEST_FUSIONKIT_H

#include <string.h>

#include "compile/compileInt.h"

/* The forward's kernels (the step's kernels up to the loss's), their count in *n. */
static inline const cg_kernel *forward(const cg_program *p, size_t *n) {
  size_t all;
  const cg_kernel *k = cg_program_step(p, &all);
  for (*n = 0; *n < all && k[*n].phase == MD_PHASE_FORWARD; (*n)++) continue;
  return k;
}

/* How many ops a rule fused in the whole step. */
static inline int fused_by(const cg_program *p, const char *rule) {
  const cg_graph *g = cg_program_graph(p);
  int n = 0;
  for (size_t i = 0; i < g->nops; i++) n += g->ops[i].fused_by != NULL && !strcmp(g->ops[i].fused_by, rule);
  return n;
}

#endif
