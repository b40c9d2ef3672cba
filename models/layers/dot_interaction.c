/*
** dot_interaction.c: DLRM's dot interaction (md_dot_interaction_ops): F inputs of one width d
** (the bottom MLP's output, then one embedding per table), the dot products of every pair of
** them, lower triangle without the diagonal, after the first input: out = [x0, p(1,0), p(2,0),
** p(2,1), p(3,0), ...] of d + F(F-1)/2 floats. That is MLPerf's reference DLRM interact_features
** ("dot": R = cat([x] + [Z[:, li, lj]]), li, lj the strict lower triangle row by row), and
** TF Recommenders' / Keras-RS's DotInteraction (self_interaction False: tf.boolean_mask of the
** strict lower triangle, row-major, the same order) with the bottom MLP's output concatenated in
** front, as their DLRM models do. TorchRec's InteractionArch takes the upper triangle row by row,
** (0,1), (0,2), ...: the same products in another order.
**
** Invariants:
**   1. p(i,j) = sum over c of x_i[c] x_j[c], float32 adds in c order from 0.
**   2. The backward writes dx_0 = dz's first d floats, every other dx zero, then adds, pair by pair
**      in output order, dp(i,j) x_j into dx_i and dp(i,j) x_i into dx_j (float32, fixed order).
*/
#include <string.h>

#include "models/modelsInt.h"

static int dot_interaction_shape(md_layer *l, md_error *err) {
  int d = l->in_shapes[0].dim[0], f = l->ninputs;
  for (int k = 0; k < f; k++) {
    char sk[64];
    if (l->in_shapes[k].rank != 1 || l->in_shapes[k].dim[0] != d)
      return md_error_set(err, 0, 0, "dot_interaction reads vectors of one width (input 0 is [%d]): input %d is %s",
                          d, k, md_shape_str(&l->in_shapes[k], sk, sizeof sk));
  }
  l->out_shape = (md_shape){.rank = 1, .dim = {d + f * (f - 1) / 2}};
  return 0;
}

static void dot_interaction_forward(const md_layer *l, const md_layer_run *r) {
  int d = l->in_shapes[0].dim[0], f = l->ninputs;
  for (int e = 0; e < r->n; e++) {
    float *z = r->z + (size_t)e * l->out;
    memcpy(z, r->xs[0] + (size_t)e * d, sizeof(float) * (size_t)d);
    float *p = z + d;
    for (int i = 1; i < f; i++)
      for (int j = 0; j < i; j++) {
        const float *xi = r->xs[i] + (size_t)e * d, *xj = r->xs[j] + (size_t)e * d;
        float s = 0;
        for (int c = 0; c < d; c++) s += xi[c] * xj[c];
        *p++ = s;
      }
  }
}

static void dot_interaction_backward(const md_layer *l, const md_layer_run *r) {
  int d = l->in_shapes[0].dim[0], f = l->ninputs;
  for (int e = 0; e < r->n; e++) {
    const float *dz = r->dz + (size_t)e * l->out, *dp = dz + d;
    float *dx[MD_LAYER_MAX_INPUTS] = {0};
    for (int k = 0; k < f; k++) {
      dx[k] = r->dxs[k] != NULL ? r->dxs[k] + (size_t)e * d : NULL;
      if (dx[k] != NULL) memset(dx[k], 0, sizeof(float) * (size_t)d);
    }
    if (dx[0] != NULL) memcpy(dx[0], dz, sizeof(float) * (size_t)d);
    for (int i = 1; i < f; i++)
      for (int j = 0; j < i; j++, dp++) {
        const float *xi = r->xs[i] + (size_t)e * d, *xj = r->xs[j] + (size_t)e * d;
        for (int c = 0; dx[i] != NULL && c < d; c++) dx[i][c] += *dp * xj[c];
        for (int c = 0; dx[j] != NULL && c < d; c++) dx[j][c] += *dp * xi[c];
      }
  }
}

/* As XLA runs TF's DotInteraction: one batched matmul of the stacked [F, d] inputs by their
** transpose (2 F^2 d FLOPs an example, the whole square though half is kept), reading the stack
** twice and writing the kept floats with the first input's copy. Backward: the symmetrised
** gradient of the square (F^2 adds) times the stack, 2 F^2 d, reading dz and the stack, writing
** every input's gradient. */
static void dot_interaction_cost(const md_layer *l, const md_layer_run *r, md_pass pass, md_cost *cost) {
  double n = r->n, f = l->ninputs, d = l->in_shapes[0].dim[0];
  md_cost c = {.flops = n * 2.0 * f * f * d, .bytes_moved = r->act_bytes * n * (2.0 * f * d + l->out),
               .matmul = {n, f, f, d, r->act_bytes}};  /* n products [F x d] [d x F] */
  if (pass == MD_PASS_BACKWARD) {
    c.flops += n * f * f;
    c.bytes_moved = r->act_bytes * n * (l->out + 2.0 * f * d);
  }
  md_cost_add(cost, &c);
}

const md_layer_ops md_dot_interaction_ops = {
  .keras_name = "dot_interaction", .reads_ids = 0, .has_activation = 0, .multi_input = 1,
  .shape = dot_interaction_shape, .variables = md_no_variables, .init = md_no_init,
  .forward = dot_interaction_forward, .backward = dot_interaction_backward, .cost = dot_interaction_cost,
};
