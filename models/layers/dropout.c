/*
** dropout.c: Keras's Dropout (md_dropout_ops). Training: each element is kept when a uniform
** draw u in [0, 1) of the workspace's stream is >= rate, and kept elements are scaled up by
** 1 / (1 - rate) (inverted dropout, tf.nn.dropout's x * scale * keep_mask); the mask is saved
** for the backward. Evaluation, or rate 0: the identity, and no draws.
**
** A seeded layer (spec.seeded, Keras's Dropout(seed=...)) draws instead as Keras 3's TensorFlow
** backend does, so that TF's masks are podsim's bit for bit: its SeedGenerator's state
** [seed, seed_draws + draw] (draw: the workspace's, one a training call), each word taken modulo
** 2^31 - 2 (keras/src/backend/tensorflow/random.py _cast_seed, int64 to int32), is the seed of
** tf.nn.experimental.stateless_dropout: stateless_random_uniform over the input's shape on
** Philox (base/philox.h, AUTO_SELECT's choice on CPU), kept when u >= rate in float32 (TF
** compares with the rate converted to the input's dtype). Replicas drawing at the same draw get
** the same mask over their own batches, as MirroredStrategy's replicas do (one seed state).
**
** Invariants:
**   1. One draw per element, examples then elements in row-major order, and none outside
**      training: a step's masks depend only on the stream's state when it starts.
**   2. The scale is 1 / (1 - rate) computed in double and rounded to float, as TF converts
**      Python's scale to the input's dtype; z = (x scale) keep and dx = (dz keep) scale.
*/
#include <assert.h>

#include "base/philox.h"
#include "models/modelsInt.h"

static int dropout_shape(md_layer *l, md_error *err) {
  if (!(l->spec.rate >= 0.0f && l->spec.rate < 1.0f))
    return md_error_set(err, 0, 0, "dropout needs rate in [0, 1) (got %g)", (double)l->spec.rate);
  l->out_shape = l->in_shape;
  l->saved = l->spec.rate > 0.0f ? (int)md_shape_size(&l->in_shape) : 0;
  return 0;
}

static int dropping(const md_layer *l, const md_layer_run *r) { return r->training && l->spec.rate > 0.0f; }

static float dropout_scale(const md_layer *l) { return (float)(1.0 / (1.0 - (double)l->spec.rate)); }

/* Keras's int64 seed word as the int32 its stateless ops take: floormod by 2^31 - 2. */
static int64_t keras_seed_word(int64_t v) {
  const int64_t m = 2147483646;
  return ((v % m) + m) % m;
}

/* The mask of a seeded layer into saved: 1 where TF's uniform u >= rate, else 0. */
static void keras_mask(const md_layer *l, const md_layer_run *r, size_t count) {
  philox_state s;
  philox_tf_stream(&s, keras_seed_word(l->spec.seed), keras_seed_word(l->spec.seed_draws + r->draw));
  philox_tf_uniform(&s, r->saved, count);
  for (size_t i = 0; i < count; i++) r->saved[i] = r->saved[i] >= l->spec.rate ? 1.0f : 0.0f;
}

static void dropout_forward(const md_layer *l, const md_layer_run *r) {
  if (!dropping(l, r)) {
    md_pass_through_forward(l, r);
    return;
  }
  size_t count = (size_t)r->n * l->in;
  if (l->spec.seeded) {
    keras_mask(l, r, count);
  } else {
    assert(r->rng != NULL);  /* md_workspace_set_rng: a model with dropout trains from a stream */
    for (size_t i = 0; i < count; i++) r->saved[i] = gsl_rng_uniform(r->rng) >= (double)l->spec.rate ? 1.0f : 0.0f;
  }
  float scale = dropout_scale(l);
  for (size_t i = 0; i < count; i++) r->z[i] = r->x[i] * scale * r->saved[i];
}

static void dropout_backward(const md_layer *l, const md_layer_run *r) {
  if (!dropping(l, r)) {
    md_pass_through_backward(l, r);
    return;
  }
  if (!r->has_dx) return;
  float scale = dropout_scale(l);
  for (size_t i = 0; i < (size_t)r->n * l->in; i++) r->dx[i] = r->dz[i] * r->saved[i] * scale;
}

/* md_cost_dropout's ops on the layer's tensor; the identity issues none. */
static void dropout_cost(const md_layer *l, const md_layer_run *r, md_pass pass, md_cost *cost) {
  if (!dropping(l, r) || (pass != MD_PASS_FORWARD && !r->has_dx)) return;
  md_cost_dropout(cost, r->act_bytes, (double)r->n * l->in, pass);
}

const md_layer_ops md_dropout_ops = {
  .keras_name = "dropout", .reads_ids = 0, .has_activation = 0, .shape = dropout_shape,
  .variables = md_no_variables, .init = md_no_init, .forward = dropout_forward,
  .backward = dropout_backward, .cost = dropout_cost,
};
