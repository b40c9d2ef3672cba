/*
** optimizer.h: Keras optimizers with their slot variables.
**   sgd:      momentum 0: w -= lr*g.  momentum m: v = m*v - lr*g; w += v   (nesterov: w += m*v - lr*g)
**   adam:     t += 1; m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g*g;
**             w -= lr*sqrt(1-b2^t)/(1-b1^t) * m / (sqrt(v) + eps)
**   adagrad:  a += g*g; w -= lr*g / (sqrt(a) + eps), a starts at initial_accumulator_value
** and Keras 3's (keras/src/optimizers/adamw.py, lamb.py), whose decoupled weight decay
** (BaseOptimizer._apply_weight_decay) runs before the update, every element of every variable:
**   w = w - w*wd*lr   (skipped when wd is 0)
**   then both:  t += 1; m += (g - m)*(1-b1); v += (g*g - v)*(1-b2), with 1-b1 and 1-b2 taken in
**               double from the betas as written (Python floats) and rounded to float32
**   adamw:    w -= (m * lr*sqrt(1-b2^t)/(1-b1^t)) / (sqrt(v) + eps)
**   lamb:     u = (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps);
**             r = ||w|| / ||u|| (1 when either is 0; the sums of squares in double, rounded once);
**             w -= (r*lr) * u. The norms are of the variable given (a parameter server's shard is
**             a variable of its own to Keras's optimizer, so its norms are the shard's).
** and TF 1's tf.contrib.opt.LARSOptimizer (tensorflow/contrib/opt/python/training/
** lars_optimizer.py, r1.15), which MLPerf's TPU ResNet-50 submissions trained with
** (training_results_v0.6, Google/benchmarks/resnet/implementations/tpu-v3-N-resnet/resnet/lars_util.py:
** skip_list=['batch_normalization', 'bias']):
**   lars:     a variable it adapts: r = eeta*||w|| / (||g|| + wd*||w|| + eps) (1 when either norm is
**             0; the sums of squares in double, rounded once), g' = g + wd*w, lr' = lr*r;
**             one it skips: g' = g, lr' = lr. Then ApplyMomentum at rate 1:
**             m = m*momentum + g'*lr'; w -= m. md_optimizer_apply skips the 1-D variables (the
**             norms' gamma and beta and the biases: what that skip_list names in a ResNet) and
**             adapts the rest; md_optimizer_update adapts whatever it is given.
*/
#ifndef PODSIM_OPTIMIZER_H
#define PODSIM_OPTIMIZER_H

#include "models/model.h"
#include "models/schedule.h"

typedef enum { MD_OPT_SGD = 0, MD_OPT_ADAM, MD_OPT_ADAGRAD, MD_OPT_ADAMW, MD_OPT_LAMB, MD_OPT_LARS } md_optimizer_kind;

typedef struct md_optimizer_spec {
  md_optimizer_kind kind; /* which formula */
  float learning_rate;    /* all kinds: the rate when schedule is CONSTANT */
  md_schedule schedule;   /* all kinds: learning_rate as a Keras LearningRateSchedule */
  float momentum;         /* sgd (Keras default 0), lars (0.9) */
  int nesterov;           /* sgd */
  float beta_1;           /* adam, adamw, lamb (0.9) */
  float beta_2;           /* adam, adamw, lamb (0.999) */
  float epsilon;          /* adam, adagrad, adamw, lamb (1e-7) */
  float initial_accumulator_value; /* adagrad (0.1) */
  float weight_decay;     /* adamw (0.004), lamb (0: Keras's None, no decay), lars (0.0001) */
  float eeta;             /* lars: the trust coefficient (0.001) */
  int accumulation_steps; /* Keras's gradient_accumulation_steps: micro-steps per apply (0 or 1:
                          ** none). Only the schedule sees them (below): Keras 3 evaluates it at
                          ** the micro-step count, while adam's t counts applies */
} md_optimizer_spec;

/* Fills the Keras defaults for `kind`. */
void md_optimizer_spec_defaults(md_optimizer_spec *s, md_optimizer_kind kind);

/* The slots one variable gets under spec: 0 or 1 (sgd: a momentum slot when momentum > 0), 2
** (adam, adamw, lamb) or 1 (adagrad, lars); slot k's name suffix ("momentum"; "m", "v"; "accumulator";
** Keras 3's "momentum", "velocity" for adamw and lamb) and the value
** every slot starts at (adagrad's initial_accumulator_value, else 0). */
int         md_optimizer_slots_per_var(const md_optimizer_spec *spec);
const char *md_optimizer_slot_suffix(const md_optimizer_spec *spec, int k);
float       md_optimizer_slot_initial(const md_optimizer_spec *spec);
/* One update of n elements in place: w the variable (or a piece of it, a parameter server's
** shard), g its gradient, slots[k] the same elements of its slot k, t the 1-based iteration
** (adam's bias correction, and the step spec's schedule is evaluated at). w NULL (shapes only): no math, only the cost of n elements, added to
** *cost. The one place the header's formulas are written; md_optimizer_apply runs it on every
** variable of a model. */
void        md_optimizer_update(const md_optimizer_spec *spec, int64_t t, float *w, const float *g,
                                float *const *slots, size_t n, md_cost *cost);

/* optimizer.apply_gradients of a tf.IndexedSlices on one variable of `rows` rows of `row`
** elements (a parameter server's shard: indices are its own rows): indices[0..nidx), duplicates
** allowed, in [0, rows); values nidx rows, one per index. What Keras' OptimizerV2 runs on the
** variable's device (optimizer_v2.py _resource_apply_sparse_duplicate_indices):
**   sgd, momentum 0 (gradient_descent.py): no dedup, ResourceScatterAdd(w, indices, -g*lr), one
**             occurrence after the other;
**   otherwise _deduplicate_indexed_slices first: array_ops.unique (order of first appearance)
**             and unsorted_segment_sum of the values (from zero, in index order), then
**   sgd:      ResourceSparseApplyKerasMomentum: on the unique rows only, a = a*m - g*lr;
**             w += a (nesterov: w += a*m - g*lr); other rows keep w and their momentum;
**   adam:     adam.py _resource_apply_sparse: m = m*b1 and v = v*b2 on EVERY row, then
**             m[i] += g*(1-b1), v[i] += (g*g)*(1-b2) on the unique rows, then on every row
**             w -= (lr_t*m) / (sqrt(v) + eps) with lr_t = lr * (sqrt(1-b2^t) / (1-b1^t));
**   adagrad:  ResourceSparseApplyAdagradV2: on the unique rows only, a += g*g;
**             w -= lr*g / (sqrt(a) + eps);
**   adamw, lamb: Keras 3's update_step has no sparse form: the summed slices become a dense
**             gradient (zeros elsewhere) and the dense update runs on every row;
**   lars:     LARSOptimizer's fallback, ResourceSparseApplyMomentum at the plain rate, on the
**             unique rows only: m = m*momentum + g; w -= lr*m.
** w or values NULL (shapes only): no math, only the cost of the rows touched (adam: all of
** them), added to *cost. */
void        md_optimizer_update_sparse(const md_optimizer_spec *spec, int64_t t, float *w, size_t rows,
                                       size_t row, const int64_t *indices, const float *values, size_t nidx,
                                       float *const *slots, md_cost *cost);

typedef struct md_optimizer md_optimizer;
md_optimizer *md_optimizer_new(const md_optimizer_spec *spec, const md_model *m);
void          md_optimizer_free(md_optimizer *o);
/* Applies one update to every variable of m from dense gradients (md_grads_new's: slices-only
** gradients go through md_optimizer_update_sparse); adds its cost. */
void          md_optimizer_apply(md_optimizer *o, md_model *m, const md_grads *g, md_cost *cost);
/* The same but for the variables whose skip[i] is 1 (their values, slots and cost untouched):
** another optimizer trains them (TPUEmbedding's tables, scenarios/programs/embed.h). The
** iteration counts as one apply all the same. */
void          md_optimizer_apply_except(md_optimizer *o, md_model *m, const md_grads *g,
                                        const unsigned char *skip, md_cost *cost);
/* The same on a shapes-only model (its cost alone) whose tables' gradients are a step of n > 0
** examples' slices alone (md_grads_new_slices): each table's update is
** md_optimizer_update_sparse's on the step's ids taken distinct (the most rows it can touch:
** under adam still every row), the other variables' the dense one's. What a compiled step
** charges where the strategy moves the tables' IndexedSlices (scenarios/programs/embed.h). */
void          md_optimizer_apply_slices(md_optimizer *o, md_model *m, const md_grads *g, int n, md_cost *cost);
/* The rate the update at 1-based iteration t uses: the schedule at step t - 1 (Keras evaluates it
** on `iterations` before adding the update), else learning_rate. With accumulation_steps N the
** schedule is at micro-step t N - 1, the count of micro-steps before the one that applies
** (keras/src/optimizers/base_optimizer.py: learning rate schedules read the "real" iterations,
** _iterations, which counts micro-steps; `iterations`, adam's t, is _iterations // N). */
float         md_optimizer_learning_rate(const md_optimizer_spec *spec, int64_t t);
/* Slot variables, for variables.csv and memory accounting: name "VAR/momentum", "VAR/m", ... */
int           md_optimizer_num_slots(const md_optimizer *o);
const md_var *md_optimizer_slot(const md_optimizer *o, int i);
int64_t       md_optimizer_iterations(const md_optimizer *o);
/* Makes dst's state (slot values, iterations) src's: a checkpoint saved or restored. Both must
** have the same spec and be made for models of the same shapes. */
void          md_optimizer_copy_state(md_optimizer *dst, const md_optimizer *src);

#endif
