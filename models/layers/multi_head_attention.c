/*
** multi_head_attention.c: Keras's MultiHeadAttention as self-attention in a stack
** (md_multi_head_attention_ops): query, key and value are the layer's input x [S, D] (S
** positions of D features). With H = num_heads, K = key_dim, V = value_dim (default K):
**   q = x Wq + bq, k = x Wk + bk   [S, H, K];   v = x Wv + bv   [S, H, V]
**   q *= 1 / sqrt(K)               (Keras scales the query before the dot product)
**   p[h, i, :] = softmax_j(q[i, h, :] . k[j, h, :])   (use_causal_mask: j <= i only)
**   c[i, h, :] = sum_j p[h, i, j] v[j, h, :]
**   z = c Wo + bo                  (c as [S, H V], Wo [H, V, D]: z is [S, D])
** Variables as Keras names them: LAYER/query/kernel [D, H, K], LAYER/query/bias [H, K], the
** same for key and value, LAYER/attention_output/kernel [H, V, D] and its bias [D] (biases only
** with use_bias). No dropout on the scores (Keras's default dropout=0).
**
** Invariants:
**   1. The projections are md_affine_forward/backward (dense's sgemm path); the per-head products
**      are md_gemm calls on each head's strided rows (scores and dp as dots from 0 in feature
**      order, the rest summed over positions in order, a masked position's 0 skipped): the bits
**      of the loops they replaced. A masked score is left out of its softmax, which is what
**      Keras's -1e9 added before the softmax gives exactly (its exp is 0).
**   2. Forward saves q (scaled), k, v, p and c for the backward: 2 S H K + 2 S H V + H S S floats
**      per example, counted as resident activations.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/gemm.h"
#include "models/modelsInt.h"

/* The dimensions of l, read from its shapes and spec. */
typedef struct mha_dims {
  int s, d, h, k, v;      /* positions, features, heads, key_dim, value_dim */
} mha_dims;

static mha_dims dims_of(const md_layer *l) {
  int v = l->spec.value_dim > 0 ? l->spec.value_dim : l->spec.key_dim;
  return (mha_dims){l->in_shape.dim[0], l->in_shape.dim[1], l->spec.num_heads, l->spec.key_dim, v};
}

/* The five saved blocks of n examples, one after the other: q, k, v, p, c. */
typedef struct mha_saved {
  float *q, *k, *v, *p, *c;  /* [n S H K] twice, [n S H V], [n H S S], [n S H V] */
} mha_saved;

static mha_saved saved_of(const mha_dims *m, int n, float *base) {
  size_t sk = (size_t)n * m->s * m->h * m->k, sv = (size_t)n * m->s * m->h * m->v;
  mha_saved b = {.q = base};
  b.k = b.q + sk;
  b.v = b.k + sk;
  b.p = b.v + sv;
  b.c = b.p + (size_t)n * m->h * m->s * m->s;
  return b;
}

static int mha_shape(md_layer *l, md_error *err) {
  const md_layer_spec *s = &l->spec;
  if (l->in_shape.rank != 2)
    return md_error_set(err, 0, 0, "multi_head_attention reads [positions, features] (got rank %d)", l->in_shape.rank);
  if (s->num_heads <= 0 || s->key_dim <= 0 || s->value_dim < 0)
    return md_error_set(err, 0, 0, "multi_head_attention needs num_heads > 0 and key_dim > 0 (got %d, %d)",
                        s->num_heads, s->key_dim);
  l->out_shape = l->in_shape;
  mha_dims m = dims_of(l);
  l->saved = 2 * m.s * m.h * m.k + 2 * m.s * m.h * m.v + m.h * m.s * m.s;
  return 0;
}

static void mha_variables(md_layer *l, md_model *m) {
  mha_dims d = dims_of(l);
  static const char *const names[3] = {"query", "key", "value"};
  char what[32];
  for (int i = 0; i < 3; i++) {
    int width = i == 2 ? d.v : d.k;
    int64_t kernel[3] = {d.d, d.h, width}, bias[2] = {d.h, width};
    snprintf(what, sizeof what, "%s/kernel", names[i]);
    l->var[l->nvars++] = md_model_add_var(m, l->name, what, 3, kernel);
    snprintf(what, sizeof what, "%s/bias", names[i]);
    if (l->spec.use_bias) l->var[l->nvars++] = md_model_add_var(m, l->name, what, 2, bias);
  }
  int64_t kernel[3] = {d.h, d.v, d.d}, bias[1] = {d.d};
  l->var[l->nvars++] = md_model_add_var(m, l->name, "attention_output/kernel", 3, kernel);
  if (l->spec.use_bias) l->var[l->nvars++] = md_model_add_var(m, l->name, "attention_output/bias", 1, bias);
}

/* Projection i (query, key, value, output): its kernel and bias variable indices (bias -1). */
static void projection_vars(const md_layer *l, int i, int *kernel, int *bias) {
  int per = l->spec.use_bias ? 2 : 1;
  *kernel = l->var[i * per];
  *bias = l->spec.use_bias ? l->var[i * per + 1] : -1;
}

/* glorot_uniform with Keras's fans of a rank-3 kernel [a, b, c]: fan_in b a, fan_out c a. */
static void mha_init(const md_layer *l, md_var *vars, gsl_rng *rng) {
  for (int i = 0; i < 4; i++) {
    int kernel, bias;
    projection_vars(l, i, &kernel, &bias);
    md_var *w = &vars[kernel];
    md_fill_glorot(w, (double)w->shape[1] * w->shape[0], (double)w->shape[2] * w->shape[0], rng);
  }
}

static const float *bias_data(const md_layer_run *r, int bias) { return bias >= 0 ? r->vars[bias].data : NULL; }

/* 1 / sqrt(K) in double, rounded to float as Keras casts it to the query's dtype. */
static float query_scale(const mha_dims *m) { return (float)(1.0 / sqrt((double)m->k)); }

static void mha_forward(const md_layer *l, const md_layer_run *r) {
  mha_dims m = dims_of(l);
  mha_saved b = saved_of(&m, r->n, r->saved);
  int rows = r->n * m.s, kernel, bias;
  float *proj[3] = {b.q, b.k, b.v};
  for (int i = 0; i < 3; i++) {
    projection_vars(l, i, &kernel, &bias);
    md_affine_forward(rows, m.d, m.h * (i == 2 ? m.v : m.k), r->x, r->vars[kernel].data, bias_data(r, bias), proj[i]);
  }
  float scale = query_scale(&m);
  for (size_t i = 0; i < (size_t)rows * m.h * m.k; i++) b.q[i] *= scale;
  int hk = m.h * m.k, hv = m.h * m.v;
  for (int e = 0; e < r->n; e++)
    for (int h = 0; h < m.h; h++) {
      /* This head's q, k, v and c: every m.h-th row-block of the example's [S, H, *] arrays. */
      const float *q = b.q + (size_t)e * m.s * hk + (size_t)h * m.k, *k = b.k + (size_t)e * m.s * hk + (size_t)h * m.k;
      const float *v = b.v + (size_t)e * m.s * hv + (size_t)h * m.v;
      float *c = b.c + (size_t)e * m.s * hv + (size_t)h * m.v;
      float *p = b.p + ((size_t)e * m.h + h) * m.s * m.s;
      /* scores = q k^T, each a dot from 0 over the key's features, then row i's softmax over
      ** the positions it may attend to, the masked ones 0 */
      md_gemm(MD_NO_TRANS, MD_TRANS, m.s, m.s, m.k, 1.0f, q, hk, k, hk, 0.0f, p, m.s);
      for (int i = 0; i < m.s; i++) {
        int lim = l->spec.use_causal_mask ? i + 1 : m.s;
        md_softmax_forward(p + (size_t)i * m.s, p + (size_t)i * m.s, lim, 1);
        for (int j = lim; j < m.s; j++) p[(size_t)i * m.s + j] = 0.0f;
      }
      /* c = p v: each row adds its positions' values in order, masked (0) ones skipped */
      md_gemm(MD_NO_TRANS, MD_NO_TRANS, m.s, m.v, m.s, 1.0f, p, m.s, v, hv, 0.0f, c, hv);
    }
  projection_vars(l, 3, &kernel, &bias);
  md_affine_forward(rows, m.h * m.v, m.d, b.c, r->vars[kernel].data, bias_data(r, bias), r->z);
}

static void mha_backward(const md_layer *l, const md_layer_run *r) {
  mha_dims m = dims_of(l);
  mha_saved b = saved_of(&m, r->n, r->saved);
  int rows = r->n * m.s, kernel, bias;
  size_t sk = (size_t)rows * m.h * m.k, sv = (size_t)rows * m.h * m.v;
  float *dc = base_xrealloc(NULL, sizeof(float) * sv), *dq = base_xrealloc(NULL, sizeof(float) * sk);
  float *dk = base_xrealloc(NULL, sizeof(float) * sk), *dv = base_xrealloc(NULL, sizeof(float) * sv);
  float *dp = base_xrealloc(NULL, sizeof(float) * m.s * m.s);
  projection_vars(l, 3, &kernel, &bias);
  md_affine_backward(rows, m.h * m.v, m.d, b.c, r->vars[kernel].data, r->dz, r->grads->g[kernel],
                     bias >= 0 ? r->grads->g[bias] : NULL, dc, 0.0f);
  int hk = m.h * m.k, hv = m.h * m.v;
  for (int e = 0; e < r->n; e++)
    for (int h = 0; h < m.h; h++) {
      size_t ko = (size_t)e * m.s * hk + (size_t)h * m.k, vo = (size_t)e * m.s * hv + (size_t)h * m.v;
      const float *p = b.p + ((size_t)e * m.h + h) * m.s * m.s;
      /* dp = dc v^T; dv = p^T dc (each position's sum over the rows in order, masked 0s skipped) */
      md_gemm(MD_NO_TRANS, MD_TRANS, m.s, m.s, m.v, 1.0f, dc + vo, hv, b.v + vo, hv, 0.0f, dp, m.s);
      md_gemm(MD_TRANS, MD_NO_TRANS, m.s, m.v, m.s, 1.0f, p, m.s, dc + vo, hv, 0.0f, dv + vo, hv);
      /* the softmax's backward on the positions each row attends to; the masked get no gradient */
      for (int i = 0; i < m.s; i++) {
        int lim = l->spec.use_causal_mask ? i + 1 : m.s;
        md_softmax_backward(p + (size_t)i * m.s, dp + (size_t)i * m.s, lim, 1);
        for (int j = lim; j < m.s; j++) dp[(size_t)i * m.s + j] = 0.0f;
      }
      /* dq = ds k; dk = ds^T q */
      md_gemm(MD_NO_TRANS, MD_NO_TRANS, m.s, m.k, m.s, 1.0f, dp, m.s, b.k + ko, hk, 0.0f, dq + ko, hk);
      md_gemm(MD_TRANS, MD_NO_TRANS, m.s, m.k, m.s, 1.0f, dp, m.s, b.q + ko, hk, 0.0f, dk + ko, hk);
    }
  float scale = query_scale(&m);
  for (size_t i = 0; i < sk; i++) dq[i] *= scale;
  const float *dproj[3] = {dq, dk, dv};
  for (int i = 0; i < 3; i++) {
    projection_vars(l, i, &kernel, &bias);
    md_affine_backward(rows, m.d, m.h * (i == 2 ? m.v : m.k), r->x, r->vars[kernel].data, dproj[i],
                       r->grads->g[kernel], bias >= 0 ? r->grads->g[bias] : NULL,
                       r->has_dx ? r->dx : NULL, i == 0 ? 0.0f : 1.0f);
  }
  free(dp);
  free(dv);
  free(dk);
  free(dq);
  free(dc);
}

/* A batched matrix product of n H problems [S x a] [a x S] (or its transpose): FLOPs and the
** three operands' bytes. */
static void attention_product(md_cost *cost, double elem_bytes, double batches, double s, double a) {
  md_cost c = {.flops = 2.0 * batches * s * s * a, .bytes_moved = elem_bytes * batches * (2.0 * s * a + s * s),
               .matmul = {batches, s, s, a, elem_bytes}};
  md_cost_add(cost, &c);
}

/* Forward: three projections, the query's scaling, the scores, their softmax, the context and
** the output projection. Backward: the output projection's, dp and dv (two products), the
** softmax's, dq and dk (two products), dq's scaling and the three projections'. The causal mask
** saves nothing: the products are dense, as XLA runs them. */
static void mha_cost(const md_layer *l, const md_layer_run *r, md_pass pass, md_cost *cost) {
  mha_dims m = dims_of(l);
  double rows = (double)r->n * m.s, heads = (double)r->n * m.h, scores = heads * m.s * m.s;
  int bias = l->spec.use_bias;
  if (pass == MD_PASS_FORWARD) {
    for (int i = 0; i < 3; i++) md_affine_cost(cost, r->act_bytes, pass, rows, m.d, (double)m.h * (i == 2 ? m.v : m.k), bias, 0);
    md_cost_elementwise(cost, r->act_bytes, rows * m.h * m.k, 1, 1);
    attention_product(cost, r->act_bytes, heads, m.s, m.k);
    md_cost_elementwise(cost, r->act_bytes, scores, 5, 1);
    attention_product(cost, r->act_bytes, heads, m.s, m.v);
    md_affine_cost(cost, r->act_bytes, pass, rows, (double)m.h * m.v, m.d, bias, 0);
    return;
  }
  md_affine_cost(cost, r->act_bytes, pass, rows, (double)m.h * m.v, m.d, bias, 1);
  attention_product(cost, r->act_bytes, heads, m.s, m.v);
  attention_product(cost, r->act_bytes, heads, m.s, m.v);
  md_cost_elementwise(cost, r->act_bytes, scores, 4, 2);
  attention_product(cost, r->act_bytes, heads, m.s, m.k);
  attention_product(cost, r->act_bytes, heads, m.s, m.k);
  md_cost_elementwise(cost, r->act_bytes, rows * m.h * m.k, 1, 1);
  for (int i = 0; i < 3; i++)
    md_affine_cost(cost, r->act_bytes, pass, rows, m.d, (double)m.h * (i == 2 ? m.v : m.k), bias, r->has_dx);
}

/* Megatron's attention block: the query, key and value projections (kernels [d, heads, dim] and
** biases [heads, dim]) and the output kernel [heads, dim, d] split by heads, each device running
** whole heads; the output bias is added once to the reduced sum. */
static unsigned mha_split(const md_layer *l, md_split_way way) {
  if (way != MD_SPLIT_HEADS) return 0u;
  return l->spec.use_bias ? 0x7Fu : 0xFu;  /* all but attention_output/bias (the last with biases) */
}

const md_layer_ops md_multi_head_attention_ops = {
  .keras_name = "multi_head_attention", .reads_ids = 0, .has_activation = 0, .shape = mha_shape,
  .variables = mha_variables, .init = mha_init, .forward = mha_forward,
  .backward = mha_backward, .cost = mha_cost, .split = mha_split,
};
