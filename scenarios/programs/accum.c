/*
** accum.c: gradient accumulation's micro-batches and sums (accum_); accum.h says the semantics.
*/
#include "scenarios/programs/accum.h"

int accum_steps(const scenario *s) { return s->grad_accum > 1 ? s->grad_accum : 1; }

static int first_row(int n, int k, int micro) { return (int)((int64_t)n * k / micro); }

int accum_count(int n, int k, int micro) { return first_row(n, k + 1, micro) - first_row(n, k, micro); }

int accum_slice(const scenario *s, int slice) {
  int micro = accum_steps(s);
  return (slice + micro - 1) / micro;
}

md_batch accum_micro_batch(const md_batch *b, const md_dataset *data, int k, int micro) {
  size_t row = (size_t)first_row(b->n, k, micro);
  size_t labels = (size_t)md_dataset_labels_per_row(data), width = (size_t)data->width;
  return (md_batch){ accum_count(b->n, k, micro), b->x ? b->x + row * width : NULL,
                     b->ids ? b->ids + row * width : NULL, b->labels ? b->labels + row * labels : NULL,
                     b->targets ? b->targets + row * (size_t)data->targets_width : NULL };
}

void accum_add(float *flat, const md_grads *g, const md_model *m) {
  for (int i = 0; i < g->nvars; i++) {
    size_t n = md_model_var_const(m, i)->size;
    for (size_t j = 0; j < n; j++) flat[j] += g->g[i][j];
    flat += n;
  }
}
