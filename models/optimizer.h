/*
** optimizer.h: Keras optimizers with their slot variables.
**   sgd:      momentum 0: w -= lr*g.  momentum m: v = m*v - lr*g; w += v   (nesterov: w += m*v - lr*g)
**   adam:     t += 1; m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g*g;
**             w -= lr*sqrt(1-b2^t)/(1-b1^t) * m / (sqrt(v) + eps)
**   adagrad:  a += g*g; w -= lr*g / (sqrt(a) + eps), a starts at initial_accumulator_value
*/
#ifndef PODSIM_OPTIMIZER_H
#define PODSIM_OPTIMIZER_H

#include "models/model.h"

typedef enum { MD_OPT_SGD = 0, MD_OPT_ADAM, MD_OPT_ADAGRAD } md_optimizer_kind;

typedef struct md_optimizer_spec {
  md_optimizer_kind kind; /* which formula */
  float learning_rate;    /* all kinds */
  float momentum;         /* sgd (Keras default 0) */
  int nesterov;           /* sgd */
  float beta_1;           /* adam (0.9) */
  float beta_2;           /* adam (0.999) */
  float epsilon;          /* adam, adagrad (1e-7) */
  float initial_accumulator_value; /* adagrad (0.1) */
} md_optimizer_spec;

/* Fills the Keras defaults for `kind`. */
void md_optimizer_spec_defaults(md_optimizer_spec *s, md_optimizer_kind kind);

/* The slots one variable gets under spec: 0 or 1 (sgd: a momentum slot when momentum > 0), 2
** (adam) or 1 (adagrad); slot k's name suffix ("momentum"; "m", "v"; "accumulator") and the value
** every slot starts at (adagrad's initial_accumulator_value, else 0). */
int         md_optimizer_slots_per_var(const md_optimizer_spec *spec);
const char *md_optimizer_slot_suffix(const md_optimizer_spec *spec, int k);
float       md_optimizer_slot_initial(const md_optimizer_spec *spec);
/* One update of n elements in place: w the variable (or a piece of it, a parameter server's
** shard), g its gradient, slots[k] the same elements of its slot k, t the 1-based iteration
** (adam's bias correction). w NULL (shapes only): no math, only the cost of n elements, added to
** *cost. The one place the header's formulas are written; md_optimizer_apply runs it on every
** variable of a model. */
void        md_optimizer_update(const md_optimizer_spec *spec, int64_t t, float *w, const float *g,
                                float *const *slots, size_t n, md_cost *cost);

typedef struct md_optimizer md_optimizer;
md_optimizer *md_optimizer_new(const md_optimizer_spec *spec, const md_model *m);
void          md_optimizer_free(md_optimizer *o);
/* Applies one update to every variable of m; adds its cost. */
void          md_optimizer_apply(md_optimizer *o, md_model *m, const md_grads *g, md_cost *cost);
/* Slot variables, for variables.csv and memory accounting: name "VAR/momentum", "VAR/m", ... */
int           md_optimizer_num_slots(const md_optimizer *o);
const md_var *md_optimizer_slot(const md_optimizer *o, int i);
int64_t       md_optimizer_iterations(const md_optimizer *o);
/* Makes dst's state (slot values, iterations) src's: a checkpoint saved or restored. Both must
** have the same spec and be made for models of the same shapes. */
void          md_optimizer_copy_state(md_optimizer *dst, const md_optimizer *src);

#endif
