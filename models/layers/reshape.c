/*
** reshape.c: Keras's Reshape (md_reshape_ops): one example's elements under target_shape, at
** most one dimension -1 inferred from the others as Keras does. The data pass through
** (flatten.c).
*/
#include "models/modelsInt.h"

static int reshape_shape(md_layer *l, md_error *err) {
  md_shape t = l->spec.target_shape;
  if (t.rank < 1 || t.rank > MD_MAX_SHAPE_RANK)
    return md_error_set(err, 0, 0, "target_shape needs rank 1..%d (got %d)", MD_MAX_SHAPE_RANK, t.rank);
  int64_t known = 1, in = md_shape_size(&l->in_shape);
  int unknown = -1;
  for (int i = 0; i < t.rank; i++) {
    if (t.dim[i] == -1 && unknown < 0) unknown = i;
    else if (t.dim[i] > 0) known = known > in ? known : known * t.dim[i];  /* past `in` it stops growing: no overflow */
    else return md_error_set(err, 0, 0, "target_shape dimension %d is %d: expected > 0 or one -1", i, t.dim[i]);
  }
  if (unknown >= 0 && in % known == 0) t.dim[unknown] = (int)(in / known);
  if (known > in || md_shape_size(&t) != in || (unknown >= 0 && in % known != 0))
    return md_error_set(err, 0, 0, "cannot reshape %lld elements per example into target_shape",
                        (long long)in);
  l->out_shape = t;
  return 0;
}

const md_layer_ops md_reshape_ops = {
  .keras_name = "reshape", .reads_ids = 0, .has_activation = 0, .shape = reshape_shape,
  .variables = md_no_variables, .init = md_no_init, .forward = md_pass_through_forward,
  .backward = md_pass_through_backward, .cost = md_pass_through_cost,
};
