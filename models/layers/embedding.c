/*
** embedding.c: Keras's Embedding over a fixed number of ids per example (md_embedding_ops):
** combined into one row, the sum or mean of the ids' rows, as tf.nn.embedding_lookup_sparse
** does, or (combiner none) a row per id, [ids, dim], as Keras's Embedding layer gives a sequence.
** It reads the integer id input, so it is the first layer, and has no activation.
**
** Invariants:
**   1. Rows are added in id order; the mean is a division by the id count, as
**      tf.nn.embedding_lookup_sparse's mean does, not a multiply by 1/k.
**   2. The gradient is TF's gather gradient, IndexedSlices: one row per id (segment_mean's grad:
**      dz / k) into its slices (md_grads_slices); unless slices_only, the table's dense gradient too, zero
**      except the rows used: each id's row added from zero in batch order, unsorted_segment_sum's
**      order over the same rows.
*/
#include <assert.h>
#include <string.h>

#include "models/modelsInt.h"

static int embedding_shape(md_layer *l, md_error *err) {
  const md_layer_spec *s = &l->spec;
  if (s->vocab <= 0 || s->dim <= 0)
    return md_error_set(err, 0, 0, "embedding needs vocab > 0 and dim > 0 (got %d, %d)", s->vocab, s->dim);
  if (s->combiner != MD_COMBINER_MEAN && s->combiner != MD_COMBINER_SUM && s->combiner != MD_COMBINER_NONE)
    return md_error_set(err, 0, 0, "unknown combiner %d", (int)s->combiner);
  if (s->combiner == MD_COMBINER_NONE) l->out_shape = (md_shape){.rank = 2, .dim = {l->in_shape.dim[0], s->dim}};
  else l->out_shape = (md_shape){.rank = 1, .dim = {s->dim}};
  return 0;
}

static void embedding_variables(md_layer *l, md_model *m) {
  int64_t shape[2] = {l->spec.vocab, l->spec.dim};
  l->var[l->nvars++] = md_model_add_var(m, l->name, "embeddings", 2, shape);
}

/* Keras's Embedding initializer: uniform(-0.05, 0.05). */
static void embedding_init(const md_layer *l, md_var *vars, gsl_rng *rng) {
  md_fill_uniform(&vars[MD_LAYER_KERNEL(l)], 0.05, rng);
}

void md_embedding_gather(const md_var *table, const int32_t *ids, size_t count, float *out) {
  size_t dim = (size_t)table->shape[1];
  for (size_t i = 0; i < count; i++) {
    assert(ids[i] >= 0 && ids[i] < table->shape[0]);
    memcpy(out + i * dim, table->data + (size_t)ids[i] * dim, sizeof(float) * dim);
  }
}

void md_embedding_rows_grad(const md_layer_run *r, int var, const float *dz, size_t count) {
  const md_var *e = &r->vars[var];
  size_t dim = (size_t)e->shape[1];
  float *g = r->grads->g[var];
  float *slices = md_grads_slices(r->grads, var);
  if (g != NULL) memset(g, 0, sizeof(float) * e->size);
  for (size_t i = 0; i < count; i++) {
    if (slices) memcpy(slices + i * dim, dz + i * dim, sizeof(float) * dim);
    if (g == NULL) continue;
    float *row = g + (size_t)r->ids[i] * dim;
    for (size_t c = 0; c < dim; c++) row[c] += dz[i * dim + c];
  }
}

static void embedding_forward(const md_layer *l, const md_layer_run *r) {
  const md_var *e = &r->vars[MD_LAYER_KERNEL(l)];
  int dim = l->spec.dim, k = l->in;
  if (l->spec.combiner == MD_COMBINER_NONE) {
    md_embedding_gather(e, r->ids, (size_t)r->n * k, r->z);
    return;
  }
  for (int i = 0; i < r->n; i++) {
    float *zi = r->z + (size_t)i * dim;
    memset(zi, 0, sizeof(float) * dim);
    for (int j = 0; j < k; j++) {
      int32_t id = r->ids[(size_t)i * k + j];
      assert(id >= 0 && id < e->shape[0]);
      const float *row = e->data + (size_t)id * dim;
      for (int c = 0; c < dim; c++) zi[c] += row[c];
    }
    if (l->spec.combiner == MD_COMBINER_MEAN)
      for (int c = 0; c < dim; c++) zi[c] /= (float)k;
  }
}

static void embedding_backward(const md_layer *l, const md_layer_run *r) {
  const md_var *e = &r->vars[MD_LAYER_KERNEL(l)];
  int dim = l->spec.dim, k = l->in;
  if (l->spec.combiner == MD_COMBINER_NONE) {
    md_embedding_rows_grad(r, MD_LAYER_KERNEL(l), r->dz, (size_t)r->n * k);
    return;
  }
  float *g = r->grads->g[MD_LAYER_KERNEL(l)];
  float *slices = md_grads_slices(r->grads, MD_LAYER_KERNEL(l));
  if (g != NULL) memset(g, 0, sizeof(float) * e->size);
  for (int i = 0; (g != NULL || slices != NULL) && i < r->n; i++) {
    const float *di = r->dz + (size_t)i * dim;
    for (int j = 0; j < k; j++) {
      float *row = g ? g + (size_t)r->ids[(size_t)i * k + j] * dim : NULL;
      float *slice = slices ? slices + ((size_t)i * k + j) * dim : NULL;
      for (int c = 0; c < dim; c++) {
        float v = l->spec.combiner == MD_COMBINER_MEAN ? di[c] / (float)k : di[c];
        if (slice) slice[c] = v;
        if (row) row[c] += v;
      }
    }
  }
}

/* Forward: n*k rows of dim read, n rows written, the ids read. Backward: reading dz and writing
** each id's row (2 per id-row float), plus, dense, zeroing the whole table and the row's
** read-modify-write in place of the write (4 * (size + 3 n k dim), the figure sync programs have
** always been charged); slices only, nothing of the table's size is touched. */
static void embedding_cost(const md_layer *l, const md_layer_run *r, md_pass pass, md_cost *cost) {
  double rows = (double)r->n * l->in * l->spec.dim, size = (double)l->spec.vocab * l->spec.dim;
  md_cost c = {.flops = rows,
               .bytes_moved = 4.0 * (rows + (double)r->n * l->in) + r->act_bytes * (double)r->n * l->out};
  if (pass == MD_PASS_BACKWARD) {
    int dense = !md_grads_sparse(r->grads, MD_LAYER_KERNEL(l));
    c.bytes_moved = dense ? 4.0 * (size + 3.0 * rows) : 4.0 * 2.0 * rows;
  }
  md_cost_add(cost, &c);
}

unsigned md_embedding_table_split(const md_layer *l, md_split_way way) {
  (void)l;
  return way == MD_SPLIT_ROWS ? 1u : 0u;
}

const md_layer_ops md_embedding_ops = {
  .keras_name = "embedding", .reads_ids = 1, .has_activation = 0, .shape = embedding_shape,
  .variables = embedding_variables, .init = embedding_init, .forward = embedding_forward,
  .backward = embedding_backward, .cost = embedding_cost, .split = md_embedding_table_split,
};
