/*
** optimizer.c: Keras optimizers (md_optimizer_) with the formulas of optimizer.h, elementwise in
** float32 as Keras runs them on float32 variables. Slots are listed as Keras creates them: one
** loop over the trainable variables per slot name (all "VAR/m" before all "VAR/v"); a
** non-trainable variable (batch_normalization's moving statistics) has none and is not updated.
*/
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/modelsInt.h"
#include "models/optimizer.h"

struct md_optimizer {
  md_optimizer_spec spec; /* formula and hyper-parameters */
  int nvars;              /* variables of the model it was made for */
  int ntrainable;         /* of those, the trainable ones */
  int *ordinal;           /* ordinal[i]: variable i's rank among the trainable ones, -1 if not */
  int nslots;             /* entries in slots: 0 or 1 (sgd, adagrad) or 2 (adam) per trainable one */
  md_var *slots;          /* slot k of trainable variable t is slots[k*ntrainable + t] */
  int64_t iterations;     /* applies so far (Keras' optimizer.iterations; adam's t) */
};

void md_optimizer_spec_defaults(md_optimizer_spec *s, md_optimizer_kind kind) {
  memset(s, 0, sizeof *s);
  s->kind = kind;
  s->learning_rate = kind == MD_OPT_SGD || kind == MD_OPT_LARS ? 0.01f : 0.001f;
  s->momentum = 0.0f;
  s->nesterov = 0;
  s->beta_1 = 0.9f;
  s->beta_2 = 0.999f;
  s->epsilon = 1e-7f;
  s->initial_accumulator_value = 0.1f;
  s->weight_decay = kind == MD_OPT_ADAMW ? 0.004f : 0.0f;
  if (kind != MD_OPT_LARS) return;
  /* LARSOptimizer's own defaults (lars_optimizer.py's __init__) */
  s->momentum = 0.9f;
  s->weight_decay = 0.0001f;
  s->eeta = 0.001f;
  s->epsilon = 0.0f;
}

int md_optimizer_slots_per_var(const md_optimizer_spec *spec) {
  switch (spec->kind) {
    case MD_OPT_SGD: return spec->momentum > 0.0f; /* Keras makes the slot only when it is used */
    case MD_OPT_ADAM:
    case MD_OPT_ADAMW:
    case MD_OPT_LAMB: return 2;
    case MD_OPT_ADAGRAD:
    case MD_OPT_LARS: return 1;
  }
  return 0;
}

const char *md_optimizer_slot_suffix(const md_optimizer_spec *spec, int k) {
  assert(k >= 0 && k < md_optimizer_slots_per_var(spec));
  switch (spec->kind) {
    case MD_OPT_SGD:
    case MD_OPT_LARS: return "momentum";
    case MD_OPT_ADAM: return k == 0 ? "m" : "v";
    case MD_OPT_ADAGRAD: return "accumulator";
    case MD_OPT_ADAMW:
    case MD_OPT_LAMB: return k == 0 ? "momentum" : "velocity";
  }
  return "?";
}

float md_optimizer_slot_initial(const md_optimizer_spec *spec) {
  return spec->kind == MD_OPT_ADAGRAD ? spec->initial_accumulator_value : 0.0f;
}

md_optimizer *md_optimizer_new(const md_optimizer_spec *spec, const md_model *m) {
  int per_var = md_optimizer_slots_per_var(spec);
  float start = md_optimizer_slot_initial(spec);
  md_optimizer *o = base_xrealloc(NULL, sizeof *o);
  o->spec = *spec;
  o->nvars = md_model_num_vars(m);
  o->ordinal = base_xrealloc(NULL, sizeof(int) * (o->nvars ? o->nvars : 1));
  o->ntrainable = 0;
  for (int i = 0; i < o->nvars; i++)
    o->ordinal[i] = md_model_var_const(m, i)->trainable ? o->ntrainable++ : -1;
  o->nslots = per_var * o->ntrainable;
  o->slots = base_xrealloc(NULL, sizeof(md_var) * o->nslots);
  o->iterations = 0;
  for (int k = 0; k < per_var; k++)
    for (int i = 0; i < o->nvars; i++) {
      const md_var *v = md_model_var_const(m, i);
      if (o->ordinal[i] < 0) continue;
      md_var *s = &o->slots[k * o->ntrainable + o->ordinal[i]];
      *s = *v;
      /* Variable names are at most "embedding_NNNNNNNNNN/embeddings" long: the bound never cuts. */
      snprintf(s->name, sizeof s->name, "%.40s/%s", v->name, md_optimizer_slot_suffix(spec, k));
      if (v->data == NULL) continue;  /* a shapes-only model: its slots have shapes only */
      s->data = base_xrealloc(NULL, sizeof(float) * v->size);
      for (size_t j = 0; j < v->size; j++) s->data[j] = start;
    }
  return o;
}

void md_optimizer_free(md_optimizer *o) {
  if (o == NULL) return;
  for (int i = 0; i < o->nslots; i++) free(o->slots[i].data);
  free(o->slots);
  free(o->ordinal);
  free(o);
}

/* flops and arrays (4-byte elements read or written) per element, over n elements. */
static void charge(md_cost *cost, double flops, double arrays, double n) {
  md_cost c = {.flops = flops * n, .bytes_moved = 4.0 * arrays * n, .bytes_resident = 0};
  md_cost_add(cost, &c);
}

static void sgd(const md_optimizer_spec *s, float *w, const float *g, float *v, size_t n) {
  float lr = s->learning_rate, mu = s->momentum;
  if (v == NULL) {
    for (size_t j = 0; j < n; j++) w[j] -= lr * g[j];
    return;
  }
  for (size_t j = 0; j < n; j++) {
    v[j] = mu * v[j] - lr * g[j];
    w[j] += s->nesterov ? mu * v[j] - lr * g[j] : v[j];
  }
}

static void adam(const md_optimizer_spec *s, int64_t t, float *w, const float *g, float *m,
                 float *v, size_t n) {
  /* Keras folds both bias corrections into the step size: lr_t = lr sqrt(1-b2^t) / (1-b1^t). */
  float b1 = s->beta_1, b2 = s->beta_2;
  float b1t = powf(b1, (float)t), b2t = powf(b2, (float)t);
  float lr_t = s->learning_rate * sqrtf(1.0f - b2t) / (1.0f - b1t);
  for (size_t j = 0; j < n; j++) {
    m[j] = b1 * m[j] + (1.0f - b1) * g[j];
    v[j] = b2 * v[j] + (1.0f - b2) * g[j] * g[j];
    w[j] -= lr_t * m[j] / (sqrtf(v[j]) + s->epsilon);
  }
}

/* 1 - b as Keras computes it: b is a Python float (the decimal the user wrote), 1 - b is taken in
** double and rounded to float32 where it meets a tensor. The spec holds b in float32: the shortest
** decimal that rounds back to it stands for what was written (0.9 gives 1 - 0.9 = 0.1f, where
** float32 arithmetic would give 0.100000024f). */
static float keras_one_minus(float b) {
  char text[32];
  for (int digits = 1; digits <= 9; digits++) {
    snprintf(text, sizeof text, "%.*g", digits, (double)b);
    if (strtof(text, NULL) == b) break;
  }
  return (float)(1.0 - strtod(text, NULL));
}

/* Keras 3's decoupled weight decay, w - (w*wd)*lr, before the update step; none at wd 0. */
static void weight_decay(const md_optimizer_spec *s, float *w, size_t n) {
  float wd = s->weight_decay, lr = s->learning_rate;
  if (wd == 0.0f) return;
  for (size_t j = 0; j < n; j++) w[j] = w[j] - w[j] * wd * lr;
}

/* Keras 3's Adam moments: m += (g - m)*(1-b1); v += (g*g - v)*(1-b2). */
static void moments(const md_optimizer_spec *s, const float *g, float *m, float *v, size_t n) {
  float c1 = keras_one_minus(s->beta_1), c2 = keras_one_minus(s->beta_2);
  for (size_t j = 0; j < n; j++) {
    m[j] += (g[j] - m[j]) * c1;
    v[j] += (g[j] * g[j] - v[j]) * c2;
  }
}

static void adamw(const md_optimizer_spec *s, int64_t t, float *w, const float *g, float *m, float *v,
                  size_t n) {
  float b1t = powf(s->beta_1, (float)t), b2t = powf(s->beta_2, (float)t);
  float alpha = s->learning_rate * sqrtf(1.0f - b2t) / (1.0f - b1t);
  weight_decay(s, w, n);
  moments(s, g, m, v, n);
  for (size_t j = 0; j < n; j++) w[j] -= (m[j] * alpha) / (sqrtf(v[j]) + s->epsilon);
}

/* Lamb's update direction at element j (computed once for the norm, again for the step). */
static float lamb_update(const md_optimizer_spec *s, float d1, float d2, float m, float v) {
  return (m / d1) / (sqrtf(v / d2) + s->epsilon);
}

static void lamb(const md_optimizer_spec *s, int64_t t, float *w, const float *g, float *m, float *v,
                 size_t n) {
  float d1 = 1.0f - powf(s->beta_1, (float)t), d2 = 1.0f - powf(s->beta_2, (float)t);
  weight_decay(s, w, n);
  moments(s, g, m, v, n);
  /* The norms: float32 squares summed in index order in double, rounded once, as tfjs sums. */
  double ww = 0, uu = 0;
  for (size_t j = 0; j < n; j++) {
    float u = lamb_update(s, d1, d2, m[j], v[j]);
    ww += w[j] * w[j];
    uu += u * u;
  }
  float wn = sqrtf((float)ww), un = sqrtf((float)uu);
  float ratio = wn > 0.0f && un > 0.0f ? wn / un : 1.0f;
  float step = ratio * s->learning_rate;
  for (size_t j = 0; j < n; j++) w[j] -= step * lamb_update(s, d1, d2, m[j], v[j]);
}

static void adagrad(const md_optimizer_spec *s, float *w, const float *g, float *a, size_t n) {
  for (size_t j = 0; j < n; j++) {
    a[j] += g[j] * g[j];
    w[j] -= s->learning_rate * g[j] / (sqrtf(a[j]) + s->epsilon);
  }
}

/* LARSOptimizer's compute_lr and ApplyMomentum at rate 1 (optimizer.h); adapt 0: a variable its
** skip_list names, neither decayed nor scaled. The norms sum float32 squares in index order in
** double, as lamb's do. */
static void lars(const md_optimizer_spec *s, float *w, const float *g, float *m, size_t n, int adapt) {
  float lr = s->learning_rate, wd = adapt ? s->weight_decay : 0.0f;
  if (adapt) {
    double ww = 0, gg = 0;
    for (size_t j = 0; j < n; j++) {
      ww += w[j] * w[j];
      gg += g[j] * g[j];
    }
    float wn = sqrtf((float)ww), gn = sqrtf((float)gg);
    if (wn > 0.0f && gn > 0.0f) lr *= s->eeta * wn / (gn + wd * wn + s->epsilon);
  }
  for (size_t j = 0; j < n; j++) {
    m[j] = m[j] * s->momentum + (g[j] + wd * w[j]) * lr;
    w[j] -= m[j];
  }
}

float md_optimizer_learning_rate(const md_optimizer_spec *spec, int64_t t) {
  if (spec->schedule.kind == MD_SCHEDULE_CONSTANT) return spec->learning_rate;
  int64_t micro = spec->accumulation_steps > 1 ? spec->accumulation_steps : 1;
  return md_schedule_rate(&spec->schedule, t * micro - 1);
}

/* The spec the formulas below read at iteration t: spec itself under a constant rate, else a
** copy in *now with iteration t's rate as a plain learning_rate. Only a schedule pays the copy
** (a spec holds a piecewise schedule's tables): a pod's 4096 replicas' updates of every one of
** ResNet-50's variables copied it for each, 7% of a numerics-off run's time. */
static const md_optimizer_spec *at_iteration(const md_optimizer_spec *spec, int64_t t, md_optimizer_spec *now) {
  if (spec->schedule.kind == MD_SCHEDULE_CONSTANT) return spec;
  *now = *spec;
  now->learning_rate = md_optimizer_learning_rate(spec, t);
  now->schedule.kind = MD_SCHEDULE_CONSTANT;
  return now;
}

/* md_optimizer_update of one variable, adapt 0 for a variable lars skips (apply's rule). */
static void update(const md_optimizer_spec *scheduled, int64_t t, float *w, const float *g, float *const *slots,
                   size_t n, int adapt, md_cost *cost) {
  md_optimizer_spec now;
  const md_optimizer_spec *spec = at_iteration(scheduled, t, &now);
  size_t math = w != NULL ? n : 0;  /* shapes only: no math, the cost below */
  int momentum = md_optimizer_slots_per_var(spec) > 0;
  /* FLOPs per element of each formula, and the arrays each reads and writes. */
  double flops = 0, arrays = 0;
  switch (spec->kind) {
    case MD_OPT_SGD:
      sgd(spec, w, g, momentum ? slots[0] : NULL, math);
      flops = momentum ? 4 : 2;
      arrays = momentum ? 5 : 3;
      break;
    case MD_OPT_ADAM:
      adam(spec, t, w, g, slots[0], slots[1], math);
      flops = 12;
      arrays = 7;
      break;
    case MD_OPT_ADAGRAD:
      adagrad(spec, w, g, slots[0], math);
      flops = 7;
      arrays = 5;
      break;
    case MD_OPT_ADAMW:  /* decay 2, moments 6, step 5; w, g, m, v read, w, m, v written */
      adamw(spec, t, w, g, slots[0], slots[1], math);
      flops = 13;
      arrays = 7;
      break;
    case MD_OPT_LAMB:  /* decay 2, moments 6, u 5 twice, norms 4, step 2; the norms' pass reads
                       ** w, m, v and the step's reads them and writes w again */
      lamb(spec, t, w, g, slots[0], slots[1], math);
      flops = 24;
      arrays = 11;
      break;
    case MD_OPT_LARS:  /* adapted: norms 4 (reading w and g, a pass of its own: the ratio needs
                       ** both sums), decay 2, scale 1, momentum 2, step 1; skipped: the last 4 */
      lars(spec, w, g, slots[0], math, adapt);
      flops = adapt ? 10 : 4;
      arrays = adapt ? 7 : 5;
      break;
  }
  /* One fused elementwise update: it writes the variable (and its slots) in place. */
  md_cost c = {.flops = flops * (double)n, .bytes_moved = 4.0 * arrays * (double)n, .bytes_resident = 0,
               .elementwise = 1, .out_bytes = 4.0 * (double)n};
  md_cost_add(cost, &c);
}

void md_optimizer_update(const md_optimizer_spec *spec, int64_t t, float *w, const float *g, float *const *slots,
                         size_t n, md_cost *cost) {
  update(spec, t, w, g, slots, n, 1, cost);
}

/* ---- sparse updates (optimizer.h: md_optimizer_update_sparse) ---- */

typedef struct slice_key {
  int64_t index;          /* a row of the variable */
  size_t pos;             /* where it occurs in the slices */
} slice_key;

typedef struct slice_group {
  size_t first;           /* the position of its first occurrence */
  size_t from, to;        /* its occurrences: keys[from..to) */
} slice_group;

static int by_index_then_pos(const void *a, const void *b) {
  const slice_key *x = a, *y = b;
  if (x->index != y->index) return x->index < y->index ? -1 : 1;
  return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static int by_first(const void *a, const void *b) {
  const slice_group *x = a, *y = b;
  return x->first < y->first ? -1 : x->first > y->first;
}

/* array_ops.unique: the distinct indices into unique[] in order of first appearance, and
** seg[j] = the place of indices[j] there; returns how many. Sorting (index, position) pairs keeps
** it O(n log n) whatever the variable's row count. */
static size_t unique_indices(const int64_t *indices, size_t n, int64_t *unique, size_t *seg) {
  slice_key *keys = base_xrealloc(NULL, sizeof *keys * (n ? n : 1));
  slice_group *groups = base_xrealloc(NULL, sizeof *groups * (n ? n : 1));
  for (size_t j = 0; j < n; j++) keys[j] = (slice_key){ indices[j], j };
  qsort(keys, n, sizeof *keys, by_index_then_pos);
  size_t u = 0;
  for (size_t j = 0; j < n; j++) {
    if (j > 0 && keys[j].index == keys[j - 1].index) continue;
    size_t end = j + 1;
    while (end < n && keys[end].index == keys[j].index) end++;
    groups[u++] = (slice_group){ keys[j].pos, j, end };
  }
  qsort(groups, u, sizeof *groups, by_first);
  for (size_t r = 0; r < u; r++) {
    unique[r] = keys[groups[r].from].index;
    for (size_t k = groups[r].from; k < groups[r].to; k++) seg[keys[k].pos] = r;
  }
  free(groups);
  free(keys);
  return u;
}

/* adam.py _resource_apply_sparse in its own float32 order. Against the dense adam() above:
** m gets the same bits (m*b1 + g*(1-b1) is b1*m + (1-b1)*g, products commute); v does not on the
** indexed rows ((g*g)*(1-b2) rounds otherwise than ((1-b2)*g)*g), nor w on any row (lr_t is
** lr*(sqrt(1-b2^t)/(1-b1^t)), not (lr*sqrt(1-b2^t))/(1-b1^t)); rows outside the batch decay m
** and v and move exactly as the dense update with a zero gradient would, up to lr_t. */
static void adam_sparse(const md_optimizer_spec *s, int64_t t, float *w, size_t rows, size_t row,
                        const int64_t *unique, const float *g, size_t u, float *m, float *v) {
  float b1 = s->beta_1, b2 = s->beta_2;
  float b1t = powf(b1, (float)t), b2t = powf(b2, (float)t);
  float lr_t = s->learning_rate * (sqrtf(1.0f - b2t) / (1.0f - b1t));
  float one_minus_b1 = 1.0f - b1, one_minus_b2 = 1.0f - b2;
  size_t n = rows * row;
  for (size_t j = 0; j < n; j++) m[j] = m[j] * b1;
  for (size_t r = 0; r < u; r++)
    for (size_t c = 0; c < row; c++) m[(size_t)unique[r] * row + c] += g[r * row + c] * one_minus_b1;
  for (size_t j = 0; j < n; j++) v[j] = v[j] * b2;
  for (size_t r = 0; r < u; r++)
    for (size_t c = 0; c < row; c++) {
      float gc = g[r * row + c];
      v[(size_t)unique[r] * row + c] += (gc * gc) * one_minus_b2;
    }
  for (size_t j = 0; j < n; j++) w[j] -= lr_t * m[j] / (sqrtf(v[j]) + s->epsilon);
}

/* The summed slices g (u rows at unique[]) as a dense gradient of every row, zeros elsewhere, then
** the dense update: Keras 3's optimizers densify an IndexedSlices gradient. */
static void dense_from_slices(const md_optimizer_spec *spec, int64_t t, float *w, size_t rows, size_t row,
                              const int64_t *unique, const float *g, size_t u, float *const *slots,
                              md_cost *cost) {
  size_t n = rows * row;
  float *dense = g != NULL ? base_xcalloc(n + 1, sizeof *dense) : NULL;
  for (size_t r = 0; dense != NULL && r < u; r++)
    memcpy(dense + (size_t)unique[r] * row, g + r * row, sizeof(float) * row);
  charge(cost, 0, 2, (double)n);  /* the zeros and the scatter into them */
  md_optimizer_update(spec, t, dense != NULL ? w : NULL, dense, slots, n, cost);
  free(dense);
}

void md_optimizer_update_sparse(const md_optimizer_spec *scheduled, int64_t t, float *w, size_t rows,
                                size_t row, const int64_t *indices, const float *values, size_t nidx,
                                float *const *slots, md_cost *cost) {
  md_optimizer_spec now;
  const md_optimizer_spec *spec = at_iteration(scheduled, t, &now);
  int math = w != NULL && values != NULL;
  int momentum = md_optimizer_slots_per_var(spec) > 0;
  if (spec->kind == MD_OPT_SGD && !momentum) {
    /* ResourceScatterAdd(w, indices, -g*lr): w + (-g*lr) is w - lr*g bit for bit, so the dense
    ** kernel runs on each occurrence in turn. */
    for (size_t j = 0; math && j < nidx; j++)
      sgd(spec, w + (size_t)indices[j] * row, values + j * row, NULL, row);
    charge(cost, 2, 3, (double)nidx * (double)row);
    return;
  }
  int64_t *unique = base_xrealloc(NULL, sizeof *unique * (nidx ? nidx : 1));
  size_t *seg = base_xrealloc(NULL, sizeof *seg * (nidx ? nidx : 1));
  size_t u = unique_indices(indices, nidx, unique, seg);
  float *g = math ? base_xrealloc(NULL, sizeof *g * (u * row + 1)) : NULL;
  /* unsorted_segment_sum: zeros, then each value row added to its segment in index order. */
  for (size_t j = 0; math && j < u * row; j++) g[j] = 0.0f;
  for (size_t j = 0; math && j < nidx; j++)
    for (size_t c = 0; c < row; c++) g[seg[j] * row + c] += values[j * row + c];
  charge(cost, 1, 3, (double)nidx * (double)row);
  double touched = (double)u * (double)row;
  switch (spec->kind) {
    case MD_OPT_SGD:  /* the momentum kernel's per-row formula is the dense one's */
      for (size_t r = 0; math && r < u; r++)
        sgd(spec, w + (size_t)unique[r] * row, g + r * row, slots[0] + (size_t)unique[r] * row, row);
      charge(cost, 4, 5, touched);
      break;
    case MD_OPT_ADAM:
      if (math) adam_sparse(spec, t, w, rows, row, unique, g, u, slots[0], slots[1]);
      charge(cost, 4, 5, touched);                       /* the scatter-adds into m and v */
      charge(cost, 7, 6, (double)rows * (double)row);    /* the decays and the update of every row */
      break;
    case MD_OPT_ADAGRAD:  /* SparseApplyAdagradV2's per-row formula is the dense one's */
      for (size_t r = 0; math && r < u; r++)
        adagrad(spec, w + (size_t)unique[r] * row, g + r * row, slots[0] + (size_t)unique[r] * row, row);
      charge(cost, 7, 5, touched);
      break;
    case MD_OPT_ADAMW:
    case MD_OPT_LAMB:
      dense_from_slices(spec, t, w, rows, row, unique, g, u, slots, cost);
      break;
    case MD_OPT_LARS:  /* ResourceSparseApplyMomentum: accumulate the gradient, step by lr */
      for (size_t r = 0; math && r < u; r++)
        for (size_t c = 0; c < row; c++) {
          size_t at = (size_t)unique[r] * row + c;
          slots[0][at] = slots[0][at] * spec->momentum + g[r * row + c];
          w[at] -= spec->learning_rate * slots[0][at];
        }
      charge(cost, 4, 5, touched);
      break;
  }
  free(g);
  free(seg);
  free(unique);
}

/* One apply over the trainable variables but those skip marks (skip may be NULL); n > 0: the
** tables' gradients are the slices of n examples alone (md_optimizer_apply_slices), else every
** gradient is dense. */
static void apply(md_optimizer *o, md_model *m, const md_grads *g, int n, const unsigned char *skip, md_cost *cost) {
  assert(g->nvars == o->nvars && md_model_num_vars(m) == o->nvars && g->slices_only == (n > 0));
  o->iterations++;
  int per_var = o->ntrainable ? o->nslots / o->ntrainable : 0;
  for (int i = 0; i < o->nvars; i++) {
    md_var *v = md_model_var(m, i);
    if (o->ordinal[i] < 0 || (skip && skip[i])) continue;
    float *slots[2] = { NULL, NULL };
    for (int k = 0; k < per_var; k++) slots[k] = o->slots[k * o->ntrainable + o->ordinal[i]].data;
    md_op_log_at(cost, MD_PHASE_OPTIMIZER, -1, i);
    if (!md_grads_sparse(g, i)) {
      /* lars skips the 1-D variables, as MLPerf's skip_list ['batch_normalization', 'bias'] does */
      update(&o->spec, o->iterations, v->data, g->g[i], slots, v->size, v->rank >= 2, cost);
      continue;
    }
    /* The step's ids, all distinct as far as the table's rows go: the most rows it can touch. */
    size_t nidx = (size_t)n * (size_t)md_model_table_ids_per_example(m, i), rows = (size_t)v->shape[0];
    int64_t *ids = base_xcalloc(nidx ? nidx : 1, sizeof *ids);
    for (size_t j = 0; j < nidx; j++) ids[j] = (int64_t)(j % rows);
    md_optimizer_update_sparse(&o->spec, o->iterations, NULL, rows, (size_t)v->shape[1], ids, NULL, nidx, slots, cost);
    free(ids);
  }
}

void md_optimizer_apply(md_optimizer *o, md_model *m, const md_grads *g, md_cost *cost) {
  apply(o, m, g, 0, NULL, cost);
}

void md_optimizer_apply_except(md_optimizer *o, md_model *m, const md_grads *g, const unsigned char *skip,
                               md_cost *cost) {
  apply(o, m, g, 0, skip, cost);
}

void md_optimizer_apply_slices(md_optimizer *o, md_model *m, const md_grads *g, int n, md_cost *cost) {
  assert(m->shapes_only && n > 0);
  apply(o, m, g, n, NULL, cost);
}

int md_optimizer_num_slots(const md_optimizer *o) { return o->nslots; }

const md_var *md_optimizer_slot(const md_optimizer *o, int i) {
  assert(i >= 0 && i < o->nslots);
  return &o->slots[i];
}

int64_t md_optimizer_iterations(const md_optimizer *o) { return o->iterations; }

void md_optimizer_copy_state(md_optimizer *dst, const md_optimizer *src) {
  assert(dst->spec.kind == src->spec.kind && dst->nslots == src->nslots);
  for (int i = 0; i < src->nslots; i++) {
    assert(dst->slots[i].size == src->slots[i].size);
    if (src->slots[i].data != NULL) memcpy(dst->slots[i].data, src->slots[i].data, src->slots[i].size * sizeof(float));
  }
  dst->iterations = src->iterations;
}
