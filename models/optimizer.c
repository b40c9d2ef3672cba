/*
** optimizer.c: Keras optimizers (md_optimizer_) with the formulas of optimizer.h, elementwise in
** float32 as Keras runs them on float32 variables. Slots are listed as Keras creates them: one
** loop over the variables per slot name (all "VAR/m" before all "VAR/v").
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
  int nslots;             /* entries in slots: 0 or 1 (sgd, adagrad) or 2 (adam) per variable */
  md_var *slots;          /* slot k of variable i is slots[k*nvars + i] */
  int64_t iterations;     /* applies so far (Keras' optimizer.iterations; adam's t) */
};

void md_optimizer_spec_defaults(md_optimizer_spec *s, md_optimizer_kind kind) {
  memset(s, 0, sizeof *s);
  s->kind = kind;
  s->learning_rate = kind == MD_OPT_SGD ? 0.01f : 0.001f;
  s->momentum = 0.0f;
  s->nesterov = 0;
  s->beta_1 = 0.9f;
  s->beta_2 = 0.999f;
  s->epsilon = 1e-7f;
  s->initial_accumulator_value = 0.1f;
}

int md_optimizer_slots_per_var(const md_optimizer_spec *spec) {
  switch (spec->kind) {
    case MD_OPT_SGD: return spec->momentum > 0.0f; /* Keras makes the slot only when it is used */
    case MD_OPT_ADAM: return 2;
    case MD_OPT_ADAGRAD: return 1;
  }
  return 0;
}

const char *md_optimizer_slot_suffix(const md_optimizer_spec *spec, int k) {
  assert(k >= 0 && k < md_optimizer_slots_per_var(spec));
  switch (spec->kind) {
    case MD_OPT_SGD: return "momentum";
    case MD_OPT_ADAM: return k == 0 ? "m" : "v";
    case MD_OPT_ADAGRAD: return "accumulator";
  }
  return "?";
}

float md_optimizer_slot_initial(const md_optimizer_spec *spec) {
  return spec->kind == MD_OPT_ADAGRAD ? spec->initial_accumulator_value : 0.0f;
}

md_optimizer *md_optimizer_new(const md_optimizer_spec *spec, const md_model *m) {
  int per_var = md_optimizer_slots_per_var(spec);
  float start = md_optimizer_slot_initial(spec);
  md_optimizer *o = md_xrealloc(NULL, sizeof *o);
  o->spec = *spec;
  o->nvars = md_model_num_vars(m);
  o->nslots = per_var * o->nvars;
  o->slots = md_xrealloc(NULL, sizeof(md_var) * o->nslots);
  o->iterations = 0;
  for (int k = 0; k < per_var; k++)
    for (int i = 0; i < o->nvars; i++) {
      const md_var *v = md_model_var_const(m, i);
      md_var *s = &o->slots[k * o->nvars + i];
      *s = *v;
      /* Variable names are at most "embedding_NNNNNNNNNN/embeddings" long: the bound never cuts. */
      snprintf(s->name, sizeof s->name, "%.40s/%s", v->name, md_optimizer_slot_suffix(spec, k));
      if (v->data == NULL) continue;  /* a shapes-only model: its slots have shapes only */
      s->data = md_xrealloc(NULL, sizeof(float) * v->size);
      for (size_t j = 0; j < v->size; j++) s->data[j] = start;
    }
  return o;
}

void md_optimizer_free(md_optimizer *o) {
  if (o == NULL) return;
  for (int i = 0; i < o->nslots; i++) free(o->slots[i].data);
  free(o->slots);
  free(o);
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

static void adagrad(const md_optimizer_spec *s, float *w, const float *g, float *a, size_t n) {
  for (size_t j = 0; j < n; j++) {
    a[j] += g[j] * g[j];
    w[j] -= s->learning_rate * g[j] / (sqrtf(a[j]) + s->epsilon);
  }
}

void md_optimizer_update(const md_optimizer_spec *spec, int64_t t, float *w, const float *g,
                         float *const *slots, size_t n, md_cost *cost) {
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
  }
  md_cost c = {.flops = flops * (double)n, .bytes_moved = 4.0 * arrays * (double)n, .bytes_resident = 0};
  md_cost_add(cost, &c);
}

void md_optimizer_apply(md_optimizer *o, md_model *m, const md_grads *g, md_cost *cost) {
  assert(g->nvars == o->nvars && md_model_num_vars(m) == o->nvars);
  o->iterations++;
  int per_var = o->nvars ? o->nslots / o->nvars : 0;
  for (int i = 0; i < o->nvars; i++) {
    md_var *v = md_model_var(m, i);
    float *slots[2] = { NULL, NULL };
    for (int k = 0; k < per_var; k++) slots[k] = o->slots[k * o->nvars + i].data;
    md_optimizer_update(&o->spec, o->iterations, v->data, g->g[i], slots, v->size, cost);
  }
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
