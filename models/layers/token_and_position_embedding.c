/*
** token_and_position_embedding.c: KerasHub's TokenAndPositionEmbedding
** (md_token_and_position_embedding_ops), the first layer of GPT- and BERT-style models: the
** token table's row of each id plus the position table's row of its position, [ids, dim].
** Variables as KerasHub names them: token_embedding/embeddings [vocab, dim] and
** position_embedding/embeddings [sequence_length, dim], both uniform(-0.05, 0.05) (its
** embeddings_initializer "uniform", cloned for the positions). sequence_length 0 means the
** input's length; a shorter input uses the first positions.
**
** Invariants:
**   1. z = token row + position row, one float addition per element.
**   2. The token table's gradient is embedding.c's per-id one (IndexedSlices, dense rows added
**      in batch order); the position table's row p is the sum of dz at position p over the
**      examples, in example order, from zero.
*/
#include <string.h>

#include "models/modelsInt.h"

static int tpe_shape(md_layer *l, md_error *err) {
  md_layer_spec *s = &l->spec;
  if (s->vocab <= 0 || s->dim <= 0)
    return md_error_set(err, 0, 0, "token_and_position_embedding needs vocab > 0 and dim > 0 (got %d, %d)",
                        s->vocab, s->dim);
  int ids = l->in_shape.dim[0];
  if (s->sequence_length == 0) s->sequence_length = ids;
  if (s->sequence_length < ids)
    return md_error_set(err, 0, 0, "token_and_position_embedding: sequence_length %d is shorter than the "
                        "input's %d ids", s->sequence_length, ids);
  l->out_shape = (md_shape){.rank = 2, .dim = {ids, s->dim}};
  return 0;
}

static void tpe_variables(md_layer *l, md_model *m) {
  int64_t tokens[2] = {l->spec.vocab, l->spec.dim}, positions[2] = {l->spec.sequence_length, l->spec.dim};
  l->var[l->nvars++] = md_model_add_var(m, l->name, "token_embedding/embeddings", 2, tokens);
  l->var[l->nvars++] = md_model_add_var(m, l->name, "position_embedding/embeddings", 2, positions);
}

static void tpe_init(const md_layer *l, md_var *vars, gsl_rng *rng) {
  md_fill_uniform(&vars[l->var[0]], 0.05, rng);
  md_fill_uniform(&vars[l->var[1]], 0.05, rng);
}

static void tpe_forward(const md_layer *l, const md_layer_run *r) {
  int ids = l->in, dim = l->spec.dim;
  const float *pos = r->vars[l->var[1]].data;
  md_embedding_gather(&r->vars[l->var[0]], r->ids, (size_t)r->n * ids, r->z);
  for (int e = 0; e < r->n; e++) {
    float *z = r->z + (size_t)e * ids * dim;
    for (size_t k = 0; k < (size_t)ids * dim; k++) z[k] += pos[k];
  }
}

static void tpe_backward(const md_layer *l, const md_layer_run *r) {
  int ids = l->in, dim = l->spec.dim;
  md_embedding_rows_grad(r, l->var[0], r->dz, (size_t)r->n * ids);
  float *dpos = r->grads->g[l->var[1]];
  memset(dpos, 0, sizeof(float) * r->vars[l->var[1]].size);
  for (int e = 0; e < r->n; e++) {
    const float *dz = r->dz + (size_t)e * ids * dim;
    for (size_t k = 0; k < (size_t)ids * dim; k++) dpos[k] += dz[k];
  }
}

/* Forward: the token rows read, the position rows read once per example and added, the output
** written. Backward: the token table's gradient as a per-id embedding's (every row of dz read
** and written once, plus zeroing the dense table), the positions' sum (dz read again). */
static void tpe_cost(const md_layer *l, const md_layer_run *r, md_pass pass, md_cost *cost) {
  double rows = (double)r->n * l->in * l->spec.dim, table = (double)l->spec.vocab * l->spec.dim;
  md_cost c = {.flops = rows, .bytes_moved = 4.0 * (2.0 * rows + (double)r->n * l->in) + r->act_bytes * rows};
  if (pass == MD_PASS_BACKWARD) {
    int dense = !md_grads_sparse(r->grads, l->var[0]);
    c.bytes_moved = 4.0 * ((dense ? table + 3.0 * rows : 2.0 * rows) + 2.0 * rows);
  }
  md_cost_add(cost, &c);
}

const md_layer_ops md_token_and_position_embedding_ops = {
  .keras_name = "token_and_position_embedding", .reads_ids = 1, .has_activation = 0,
  .shape = tpe_shape, .variables = tpe_variables, .init = tpe_init, .forward = tpe_forward,
  .backward = tpe_backward, .cost = tpe_cost, .split = md_embedding_table_split,
};
