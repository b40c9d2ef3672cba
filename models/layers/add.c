/*
** add.c: Keras's Add (md_add_ops): the elementwise sum of 2..MD_LAYER_MAX_INPUTS inputs of one
** shape, the residual connection of a ResNet or a transformer block.
**
** Invariants:
**   1. z = ((x0 + x1) + x2) + ... in float, input order, as Keras's and tfjs's Add fold them.
**   2. Every input's gradient is dz, bit for bit: the backward copies it, and issues no op (TF
**      passes the one gradient tensor to every input of an add).
*/
#include <string.h>

#include "models/modelsInt.h"

int md_merge_shape(md_layer *l, md_error *err, const char *what) {
  const md_shape *a = &l->in_shapes[0];
  for (int k = 1; k < l->ninputs; k++) {
    const md_shape *b = &l->in_shapes[k];
    int same = a->rank == b->rank;
    for (int i = 0; same && i < a->rank; i++) same = a->dim[i] == b->dim[i];
    char sa[64], sb[64];
    if (!same)
      return md_error_set(err, 0, 0, "%s inputs of one shape: input %d is %s, input 0 %s", what, k,
                          md_shape_str(b, sb, sizeof sb), md_shape_str(a, sa, sizeof sa));
  }
  l->out_shape = *a;
  return 0;
}

static int add_shape(md_layer *l, md_error *err) { return md_merge_shape(l, err, "add sums"); }

static void add_forward(const md_layer *l, const md_layer_run *r) {
  size_t count = (size_t)r->n * l->out;
  memcpy(r->z, r->xs[0], sizeof(float) * count);
  for (int k = 1; k < l->ninputs; k++)
    for (size_t i = 0; i < count; i++) r->z[i] += r->xs[k][i];
}

static void add_backward(const md_layer *l, const md_layer_run *r) {
  for (int k = 0; k < l->ninputs; k++)
    if (r->dxs[k] != NULL) memcpy(r->dxs[k], r->dz, sizeof(float) * (size_t)r->n * l->out);
}

/* Forward one op reading every input; the backward none (invariant 2). */
static void add_cost(const md_layer *l, const md_layer_run *r, md_pass pass, md_cost *cost) {
  if (pass == MD_PASS_FORWARD) md_cost_elementwise(cost, r->act_bytes, (double)r->n * l->out, l->ninputs - 1, l->ninputs);
}

const md_layer_ops md_add_ops = {
  .keras_name = "add", .reads_ids = 0, .has_activation = 0, .multi_input = 1, .shape = add_shape,
  .variables = md_no_variables, .init = md_no_init, .forward = add_forward, .backward = add_backward,
  .cost = add_cost,
};
