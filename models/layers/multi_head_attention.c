/*
** multi_head_attention.c: Keras's MultiHeadAttention as self-attention in a stack
** (md_multi_head_attention_ops): query, key and value are the layer's input x [S, D] (S
** positions of D features). With H = num_heads, G = num_key_value_heads (default H), K =
** key_dim, V = value_dim (default K):
**   q = x Wq + bq  [S, H, K];   k = x Wk + bk  [S, G, K];   v = x Wv + bv  [S, G, V]
**   q, k = rope(q), rope(k)        (rope_max_wavelength > 0: rotary position embeddings)
**   q *= 1 / sqrt(K)               (Keras scales the query before the dot product)
**   p[h, i, :] = softmax_j(q[i, h, :] . k[j, g, :])   (g = h / (H / G); use_causal_mask: j <= i)
**   c[i, h, :] = sum_j p[h, i, j] v[j, g, :]
**   z = c Wo + bo                  (c as [S, H V], Wo [H, V, D]: z is [S, D])
** G < H is grouped-query attention (Keras 3's GroupedQueryAttention, Llama 2 70B's 8 key-value
** heads), G = 1 multi-query attention (PaLM): query heads h, h+1, .. share key-value head
** h / (H / G), as GroupedQueryAttention's ops.repeat of the key and value orders them.
** rope is KerasHub's RotaryEmbedding (Llama, PaLM): position i's feature pair (j, j + K/2) is
** turned by the angle i / wavelength^(2j / K), x' = x cos + rotate_half(x) sin with
** rotate_half(x) = (-x2, x1); its inverse turns the gradient back.
** Variables as Keras names them: LAYER/query/kernel [D, H, K], LAYER/query/bias [H, K], key and
** value likewise with G heads, LAYER/attention_output/kernel [H, V, D] and its bias [D] (biases
** only with use_bias). spec.rate (Keras's `dropout`, default 0) drops the probabilities in a
** train step as Keras's MHA does with its own Dropout layer, inverted: p' = p mask / (1 - rate),
** c = p' v, a uniform draw a score from the workspace's stream (examples, heads, rows, columns in
** order, the masked ones too), kept when >= rate as layers/dropout.c keeps them; the backward's dv
** reads p' and its dp the mask. Keras refuses dropout with flash_attention, and so does podsim.
**
** flash_attention (Keras 3's MultiHeadAttention(flash_attention=True), XLA's fused attention
** custom-call: cuDNN's flash attention on GPUs, a Pallas kernel on TPUs) runs scores, softmax and
** context as one kernel over tiles in on-chip memory: no S x S array reaches device memory. It
** keeps each row's log-sum-exp for the backward, which recomputes the scores and p = exp(s - lse)
** (FlashAttention-2's backward), so its traffic is q, k, v, o (and their gradients) only; with
** the causal mask it skips the tiles the mask hides, so its products are half as large.
**
** Invariants:
**   1. The projections are md_affine_forward/backward (dense's sgemm path); the per-head products
**      are md_gemm calls on each head's strided rows (scores and dp as dots from 0 in feature
**      order, the rest summed over positions in order, a masked position's 0 skipped): the bits
**      of the loops they replaced. A masked score is left out of its softmax, which is what
**      Keras's -1e9 added before the softmax gives exactly (its exp is 0). A key-value head's
**      gradient adds its query heads' in head order.
**   2. Forward saves q (turned and scaled), k (turned), v, c and p (H S S floats per example) or,
**      fused, each row's log-sum-exp (H S floats), counted as resident activations; with
**      dropout also the mask (H S S more: the backward needs p for the softmax and p' for dv).
*/
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/gemm.h"
#include "models/modelsInt.h"

/* The dimensions of l, read from its shapes and spec. */
typedef struct mha_dims {
  int s, d, h, g, k, v;   /* positions, features, query heads, key-value heads, key_dim, value_dim */
  int flash;              /* 1: the fused kernel (p is not kept; lse is) */
  int drop;               /* 1: dropout on the probabilities (rate > 0; never fused) */
} mha_dims;

static mha_dims dims_of(const md_layer *l) {
  int v = l->spec.value_dim > 0 ? l->spec.value_dim : l->spec.key_dim;
  int g = l->spec.num_key_value_heads > 0 ? l->spec.num_key_value_heads : l->spec.num_heads;
  return (mha_dims){l->in_shape.dim[0], l->in_shape.dim[1], l->spec.num_heads, g, l->spec.key_dim, v,
                    l->spec.flash_attention, l->spec.rate > 0.0f};
}

/* The saved blocks of n examples, one after the other: q, k, v, c, then p or lse, then the mask. */
typedef struct mha_saved {
  float *q, *k, *v, *c;   /* [n S H K], [n S G K], [n S G V], [n S H V] */
  float *p;               /* unfused: the probabilities [n H S S]; fused: NULL */
  float *lse;             /* fused: each row's log-sum-exp of its scores [n H S]; unfused: NULL */
  float *mask;            /* dropout: 1 where a probability is kept [n H S S]; else NULL */
} mha_saved;

/* Floats per example the forward keeps (invariant 2). */
static int64_t saved_floats(const mha_dims *m) {
  int64_t s = m->s, rows = m->flash ? s : s * s, masks = m->drop ? s * s : 0;
  return s * ((int64_t)m->h * m->k + (int64_t)m->g * m->k + (int64_t)m->g * m->v + (int64_t)m->h * m->v) +
         m->h * (rows + masks);
}

static mha_saved saved_of(const mha_dims *m, int n, float *base) {
  mha_saved b = {.q = base};
  b.k = b.q + (size_t)n * m->s * m->h * m->k;
  b.v = b.k + (size_t)n * m->s * m->g * m->k;
  b.c = b.v + (size_t)n * m->s * m->g * m->v;
  float *rest = b.c + (size_t)n * m->s * m->h * m->v;
  if (m->flash) b.lse = rest;
  else b.p = rest;
  if (m->drop) b.mask = b.p + (size_t)n * m->h * m->s * m->s;
  return b;
}

static int mha_shape(md_layer *l, md_error *err) {
  const md_layer_spec *s = &l->spec;
  if (l->in_shape.rank != 2)
    return md_error_set(err, 0, 0, "multi_head_attention reads [positions, features] (got rank %d)", l->in_shape.rank);
  if (s->num_heads <= 0 || s->key_dim <= 0 || s->value_dim < 0)
    return md_error_set(err, 0, 0, "multi_head_attention needs num_heads > 0 and key_dim > 0 (got %d, %d)",
                        s->num_heads, s->key_dim);
  if (s->num_key_value_heads < 0 || (s->num_key_value_heads > 0 && s->num_heads % s->num_key_value_heads != 0))
    return md_error_set(err, 0, 0, "multi_head_attention's num_key_value_heads %d must divide num_heads %d (each "
                        "key-value head serves a group of query heads)", s->num_key_value_heads, s->num_heads);
  if (s->rope_max_wavelength < 0 || (s->rope_max_wavelength > 0 && s->key_dim % 2 != 0))
    return md_error_set(err, 0, 0, "multi_head_attention's rotary embeddings turn pairs of features: key_dim %d "
                        "must be even and rope_max_wavelength %g > 0", s->key_dim, (double)s->rope_max_wavelength);
  if (!(s->rate >= 0.0f && s->rate < 1.0f))
    return md_error_set(err, 0, 0, "multi_head_attention needs dropout in [0, 1) (got %g)", (double)s->rate);
  if (s->rate > 0.0f && s->flash_attention)
    return md_error_set(err, 0, 0, "multi_head_attention: dropout is not supported with flash_attention (Keras "
                        "refuses it too): set dropout to 0 to use flash attention");
  l->out_shape = l->in_shape;
  mha_dims m = dims_of(l);
  l->saved = saved_floats(&m);
  return 0;
}

static void mha_variables(md_layer *l, md_model *m) {
  mha_dims d = dims_of(l);
  static const char *const names[3] = {"query", "key", "value"};
  char what[32];
  for (int i = 0; i < 3; i++) {
    int width = i == 2 ? d.v : d.k, heads = i == 0 ? d.h : d.g;
    int64_t kernel[3] = {d.d, heads, width}, bias[2] = {heads, width};
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

/* Projection i's outputs per position: H K, G K, G V. */
static int projection_width(const mha_dims *m, int i) { return i == 0 ? m->h * m->k : i == 1 ? m->g * m->k : m->g * m->v; }

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

/* Turns x [n S heads K] by the rotary angles (inverse: back, for a gradient). KerasHub's
** RotaryEmbedding in float32: inverse_freq_j = 1 / wavelength^(2j / K), angle = i inverse_freq_j,
** cos and sin of it; here the powers and the trigonometry in double, rounded to float once. */
static void rope(const md_layer *l, const mha_dims *m, int n, int heads, float *x, int inverse) {
  int half = m->k / 2;
  float *cs = base_xrealloc(NULL, sizeof(float) * 2 * (size_t)m->s * half);
  for (int j = 0; j < half; j++) {
    float inv = (float)(1.0 / pow((double)l->spec.rope_max_wavelength, (double)(2 * j) / m->k));
    for (int i = 0; i < m->s; i++) {
      float angle = (float)i * inv;
      cs[2 * ((size_t)i * half + j)] = (float)cos((double)angle);
      cs[2 * ((size_t)i * half + j) + 1] = (float)sin((double)angle) * (inverse ? -1.0f : 1.0f);
    }
  }
  for (int e = 0; e < n; e++)
    for (int i = 0; i < m->s; i++)
      for (int h = 0; h < heads; h++) {
        float *x1 = x + (((size_t)e * m->s + i) * heads + h) * m->k, *x2 = x1 + half;
        for (int j = 0; j < half; j++) {
          float c = cs[2 * ((size_t)i * half + j)], sn = cs[2 * ((size_t)i * half + j) + 1];
          float a = x1[j], b = x2[j];
          x1[j] = a * c + -b * sn;
          x2[j] = b * c + a * sn;
        }
      }
  free(cs);
}

/* One head's operands in example e: its q, k, v, c rows (strided by their arrays' widths). */
typedef struct mha_head {
  size_t q, k, v, c;      /* offsets of the head's first row in q (and dq), k, v, c */
  int accumulate;         /* 1: not its key-value head's first query head (gradients add) */
} mha_head;

static mha_head head_of(const mha_dims *m, int e, int h) {
  int per = m->h / m->g, g = h / per;
  return (mha_head){.q = (size_t)e * m->s * m->h * m->k + (size_t)h * m->k,
                    .k = (size_t)e * m->s * m->g * m->k + (size_t)g * m->k,
                    .v = (size_t)e * m->s * m->g * m->v + (size_t)g * m->v,
                    .c = (size_t)e * m->s * m->h * m->v + (size_t)h * m->v, .accumulate = h % per != 0};
}

/* The positions row i may attend to. */
static int attended(const md_layer *l, const mha_dims *m, int i) { return l->spec.use_causal_mask ? i + 1 : m->s; }

/* scores = q k^T for one head, each a dot from 0 over the key's features, into s [S, S]. */
static void head_scores(const mha_dims *m, const mha_saved *b, const mha_head *hd, float *s) {
  md_gemm(MD_NO_TRANS, MD_TRANS, m->s, m->s, m->k, 1.0f, b->q + hd->q, m->h * m->k, b->k + hd->k, m->g * m->k, 0.0f,
          s, m->s);
}

/* log sum_j exp(z_j) over a row's first `width`, from its largest, in double. */
static float log_sum_exp(const float *z, int width) {
  float mx = z[0];
  for (int j = 1; j < width; j++) mx = z[j] > mx ? z[j] : mx;
  double sum = 0;
  for (int j = 0; j < width; j++) sum += exp((double)z[j] - mx);
  return (float)(mx + log(sum));
}

/* 1 / (1 - rate) in double, rounded to float as TF converts the scale to the input's dtype. */
static float dropout_scale(const md_layer *l) { return (float)(1.0 / (1.0 - (double)l->spec.rate)); }

/* p' = p mask scale into out, one head's [S, S]. */
static void dropped(const md_layer *l, const mha_dims *m, const float *p, const float *mask, float *out) {
  float scale = dropout_scale(l);
  for (size_t i = 0; i < (size_t)m->s * m->s; i++) out[i] = p[i] * scale * mask[i];
}

static void mha_forward(const md_layer *l, const md_layer_run *r) {
  mha_dims m = dims_of(l);
  m.drop = m.drop && r->training;
  mha_saved b = saved_of(&m, r->n, r->saved);
  int rows = r->n * m.s, kernel, bias;
  float *proj[3] = {b.q, b.k, b.v};
  for (int i = 0; i < 3; i++) {
    projection_vars(l, i, &kernel, &bias);
    md_affine_forward(rows, m.d, projection_width(&m, i), r->x, r->vars[kernel].data, bias_data(r, bias), proj[i]);
  }
  if (l->spec.rope_max_wavelength > 0) {
    rope(l, &m, r->n, m.h, b.q, 0);
    rope(l, &m, r->n, m.g, b.k, 0);
  }
  float scale = query_scale(&m);
  for (size_t i = 0; i < (size_t)rows * m.h * m.k; i++) b.q[i] *= scale;
  /* the fused kernel's scores, or the dropped probabilities */
  float *tile = m.flash || m.drop ? base_xrealloc(NULL, sizeof(float) * m.s * m.s) : NULL;
  assert(!m.drop || r->rng != NULL);  /* md_workspace_set_rng: a model with dropout trains from a stream */
  for (int e = 0; e < r->n; e++)
    for (int h = 0; h < m.h; h++) {
      mha_head hd = head_of(&m, e, h);
      float *p = m.flash ? tile : b.p + ((size_t)e * m.h + h) * m.s * m.s;
      /* row i's softmax over the positions it may attend to, the masked ones 0 */
      head_scores(&m, &b, &hd, p);
      for (int i = 0; i < m.s; i++) {
        int lim = attended(l, &m, i);
        if (m.flash) b.lse[((size_t)e * m.h + h) * m.s + i] = log_sum_exp(p + (size_t)i * m.s, lim);
        md_softmax_forward(p + (size_t)i * m.s, p + (size_t)i * m.s, lim, 1);
        for (int j = lim; j < m.s; j++) p[(size_t)i * m.s + j] = 0.0f;
      }
      if (m.drop) {
        float *mask = b.mask + ((size_t)e * m.h + h) * m.s * m.s;
        for (size_t i = 0; i < (size_t)m.s * m.s; i++) mask[i] = gsl_rng_uniform(r->rng) >= (double)l->spec.rate ? 1.0f : 0.0f;
        dropped(l, &m, p, mask, tile);
        p = tile;
      }
      /* c = p v: each row adds its positions' values in order, masked (0) ones skipped */
      md_gemm(MD_NO_TRANS, MD_NO_TRANS, m.s, m.v, m.s, 1.0f, p, m.s, b.v + hd.v, m.g * m.v, 0.0f, b.c + hd.c, m.h * m.v);
    }
  free(tile);
  projection_vars(l, 3, &kernel, &bias);
  md_affine_forward(rows, m.h * m.v, m.d, b.c, r->vars[kernel].data, bias_data(r, bias), r->z);
}

/* The fused backward's p: the scores again and exp(s - lse) on the attended positions. */
static void recompute_p(const md_layer *l, const mha_dims *m, const mha_saved *b, const mha_head *hd, const float *lse,
                        float *p) {
  head_scores(m, b, hd, p);
  for (int i = 0; i < m->s; i++) {
    int lim = attended(l, m, i);
    for (int j = 0; j < m->s; j++)
      p[(size_t)i * m->s + j] = j < lim ? (float)exp((double)p[(size_t)i * m->s + j] - lse[i]) : 0.0f;
  }
}

static void mha_backward(const md_layer *l, const md_layer_run *r) {
  mha_dims m = dims_of(l);
  m.drop = m.drop && r->training;
  mha_saved b = saved_of(&m, r->n, r->saved);
  int rows = r->n * m.s, kernel, bias, hk = m.h * m.k, gk = m.g * m.k, hv = m.h * m.v, gv = m.g * m.v;
  float *dc = base_xrealloc(NULL, sizeof(float) * (size_t)rows * hv), *dq = base_xrealloc(NULL, sizeof(float) * (size_t)rows * hk);
  float *dk = base_xrealloc(NULL, sizeof(float) * (size_t)rows * gk), *dv = base_xrealloc(NULL, sizeof(float) * (size_t)rows * gv);
  float *dp = base_xrealloc(NULL, sizeof(float) * m.s * m.s);
  float *tile = m.flash || m.drop ? base_xrealloc(NULL, sizeof(float) * m.s * m.s) : NULL;
  projection_vars(l, 3, &kernel, &bias);
  md_affine_backward(rows, hv, m.d, b.c, r->vars[kernel].data, r->dz, r->grads->g[kernel],
                     bias >= 0 ? r->grads->g[bias] : NULL, dc, 0.0f);
  for (int e = 0; e < r->n; e++)
    for (int h = 0; h < m.h; h++) {
      mha_head hd = head_of(&m, e, h);
      const float *p = tile;
      if (m.flash) recompute_p(l, &m, &b, &hd, b.lse + ((size_t)e * m.h + h) * m.s, tile);
      else p = b.p + ((size_t)e * m.h + h) * m.s * m.s;
      float beta = hd.accumulate ? 1.0f : 0.0f;
      const float *mask = m.drop ? b.mask + ((size_t)e * m.h + h) * m.s * m.s : NULL;
      if (m.drop) dropped(l, &m, p, mask, tile);
      /* dp' = dc v^T; dv = p'^T dc (each position's sum over the rows in order, masked 0s skipped) */
      md_gemm(MD_NO_TRANS, MD_TRANS, m.s, m.s, m.v, 1.0f, dc + hd.c, hv, b.v + hd.v, gv, 0.0f, dp, m.s);
      md_gemm(MD_TRANS, MD_NO_TRANS, m.s, m.v, m.s, 1.0f, m.drop ? tile : p, m.s, dc + hd.c, hv, beta, dv + hd.v, gv);
      if (m.drop) {
        float scale = dropout_scale(l);  /* dp = (dp' mask) scale, as dropout's backward */
        for (size_t i = 0; i < (size_t)m.s * m.s; i++) dp[i] = dp[i] * mask[i] * scale;
      }
      /* the softmax's backward on the positions each row attends to; the masked get no gradient */
      for (int i = 0; i < m.s; i++) {
        int lim = attended(l, &m, i);
        md_softmax_backward(p + (size_t)i * m.s, dp + (size_t)i * m.s, lim, 1);
        for (int j = lim; j < m.s; j++) dp[(size_t)i * m.s + j] = 0.0f;
      }
      /* dq = ds k; dk = ds^T q */
      md_gemm(MD_NO_TRANS, MD_NO_TRANS, m.s, m.k, m.s, 1.0f, dp, m.s, b.k + hd.k, gk, 0.0f, dq + hd.q, hk);
      md_gemm(MD_TRANS, MD_NO_TRANS, m.s, m.k, m.s, 1.0f, dp, m.s, b.q + hd.q, hk, beta, dk + hd.k, gk);
    }
  float scale = query_scale(&m);
  for (size_t i = 0; i < (size_t)rows * hk; i++) dq[i] *= scale;
  if (l->spec.rope_max_wavelength > 0) {
    rope(l, &m, r->n, m.h, dq, 1);
    rope(l, &m, r->n, m.g, dk, 1);
  }
  const float *dproj[3] = {dq, dk, dv};
  for (int i = 0; i < 3; i++) {
    projection_vars(l, i, &kernel, &bias);
    md_affine_backward(rows, m.d, projection_width(&m, i), r->x, r->vars[kernel].data, dproj[i],
                       r->grads->g[kernel], bias >= 0 ? r->grads->g[bias] : NULL,
                       r->has_dx ? r->dx : NULL, i == 0 ? 0.0f : 1.0f);
  }
  free(tile);
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

/* The fused kernel of one pass: `products` [S x S x a] products summed into one matmul of depth
** `depth` per head (over the attended half of the columns with the causal mask), `per_score`
** FLOPs of softmax work on each attended score, and `bytes` of q, k, v, o (and gradients) and
** lse moved: the S x S scores stay in the kernel. */
static void fused_kernel(md_cost *cost, const md_layer *l, const mha_dims *m, double heads, double depth,
                         double per_score, double bytes, double elem_bytes) {
  double cols = l->spec.use_causal_mask ? (m->s + 1) / 2.0 : m->s;  /* the tiles left of the diagonal */
  md_cost c = {.flops = 2.0 * heads * m->s * cols * depth + per_score * heads * m->s * cols, .bytes_moved = bytes,
               .matmul = {heads, m->s, cols, depth, elem_bytes}, .custom_call = 1};
  md_cost_add(cost, &c);
}

/* Forward: three projections, rope's turns, the query's scaling, then the scores, their softmax
** and the context (three ops, or the fused kernel; with dropout its op on the probabilities
** between softmax and context), and the output projection. Backward: the output projection's, dp
** and dv, dropout's, the softmax's, dq and dk (or the fused kernel, which computes the scores
** again), dq's scaling, rope's turns back and the three projections'. Unfused, the
** causal mask saves nothing: the products are dense, as XLA runs them. */
static void mha_cost(const md_layer *l, const md_layer_run *r, md_pass pass, md_cost *cost) {
  mha_dims m = dims_of(l);
  double rows = (double)r->n * m.s, heads = (double)r->n * m.h, scores = heads * m.s * m.s, e = r->act_bytes;
  double turned = l->spec.rope_max_wavelength > 0 ? rows * (m.h + m.g) * m.k : 0;  /* q and k elements rope turns */
  double qkvo = e * rows * ((double)m.h * m.k + m.g * m.k + m.g * m.v + m.h * m.v), lse = 4.0 * heads * m.s;
  int bias = l->spec.use_bias, drop = m.drop && r->training;
  if (pass == MD_PASS_FORWARD) {
    for (int i = 0; i < 3; i++) md_affine_cost(cost, e, pass, rows, m.d, projection_width(&m, i), bias, 0);
    if (turned > 0) md_cost_elementwise(cost, e, turned, 3, 1);
    md_cost_elementwise(cost, e, rows * m.h * m.k, 1, 1);
    if (m.flash) {
      fused_kernel(cost, l, &m, heads, m.k + m.v, 5, qkvo + lse, e);
    } else {
      attention_product(cost, e, heads, m.s, m.k);
      md_cost_row_stats(cost, e, scores, 5, 1, 2);
      if (drop) md_cost_dropout(cost, e, scores, pass);
      attention_product(cost, e, heads, m.s, m.v);
    }
    md_affine_cost(cost, e, pass, rows, (double)m.h * m.v, m.d, bias, 0);
    return;
  }
  md_affine_cost(cost, e, pass, rows, (double)m.h * m.v, m.d, bias, 1);
  if (m.flash) {
    /* s again, dv, dp, dq, dk; reads q k v o do lse, writes dq dk dv: q k v o twice */
    fused_kernel(cost, l, &m, heads, 3.0 * m.k + 2.0 * m.v, 6, 2.0 * qkvo + lse, e);
  } else {
    attention_product(cost, e, heads, m.s, m.v);
    attention_product(cost, e, heads, m.s, m.v);
    if (drop) md_cost_dropout(cost, e, scores, pass);
    md_cost_normalize(cost, e, scores, 4, 2, MD_REDUCE_ROWS);
    attention_product(cost, e, heads, m.s, m.k);
    attention_product(cost, e, heads, m.s, m.k);
  }
  md_cost_elementwise(cost, e, rows * m.h * m.k, 1, 1);
  if (turned > 0) md_cost_elementwise(cost, e, turned, 3, 1);
  for (int i = 0; i < 3; i++) md_affine_cost(cost, e, pass, rows, m.d, projection_width(&m, i), bias, r->has_dx);
}

/* Megatron's attention block: the query, key and value projections (kernels [d, heads, dim] and
** biases [heads, dim]) and the output kernel [heads, dim, d] split by heads, each device running
** whole heads; the output bias is added once to the reduced sum. With fewer key-value heads than
** query heads (grouped or multi-query) the key and value projections stay whole on every device,
** as Megatron-LM replicates multi-query attention's one head (their work is still counted split:
** it is 2 G / H of the projections'). */
static unsigned mha_split(const md_layer *l, md_split_way way) {
  if (way != MD_SPLIT_HEADS) return 0u;
  int grouped = l->spec.num_key_value_heads > 0 && l->spec.num_key_value_heads != l->spec.num_heads;
  if (l->spec.use_bias) return grouped ? 0x43u : 0x7Fu;  /* all but attention_output/bias (the last) */
  return grouped ? 0x9u : 0xFu;
}

const md_layer_ops md_multi_head_attention_ops = {
  .keras_name = "multi_head_attention", .reads_ids = 0, .has_activation = 0, .shape = mha_shape,
  .variables = mha_variables, .init = mha_init, .forward = mha_forward,
  .backward = mha_backward, .cost = mha_cost, .split = mha_split,
};
