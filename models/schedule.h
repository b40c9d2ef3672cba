/*
** schedule.h: Keras 3's learning-rate schedules (keras/src/optimizers/schedules/
** learning_rate_schedule.py), evaluated as Keras evaluates them: on the optimizer's `iterations`
** before the update that uses the rate (BaseOptimizer._get_current_learning_rate), in float32,
** each Python number of the config rounded to float32 where Keras converts it to a tensor.
** With f(x) = float32(x) and s = f(step):
**   exponential_decay:   p = s / f(decay_steps) (floor when staircase); f(lr0) * pow(f(rate), p)
**   inverse_time_decay:  p as above; f(lr0) / (1 + f(rate) * p)
**   polynomial_decay:    cycle: d = f(decay_steps) * (s == 0 ? 1 : ceil(s / f(decay_steps)));
**                        else d = f(decay_steps), s = min(s, d);
**                        (f(lr0) - f(end)) * pow(1 - s/d, f(power)) + f(end)
**   piecewise_constant:  values[i] for the first boundary b_i with step <= b_i (integers), the
**                        last value past the last boundary
**   cosine_decay:        decay(s, d, from) = from * (f(1 - alpha) * (0.5 * (1 + cos(f(pi) * s/d)))
**                        + f(alpha)); without warmup_target: decay(min(s, d), d, f(lr0));
**                        with it: s = min(s, d + w), w = f(warmup_steps); s < w: (f(target) -
**                        f(lr0)) * (s / w) + f(lr0); else decay(s - w, d, f(target))
** The Python floats of the config are kept as written (double) for the `1 - alpha` Keras takes
** in Python before the tensor sees it.
*/
#ifndef PODSIM_SCHEDULE_H
#define PODSIM_SCHEDULE_H

#include <stdint.h>

typedef enum {
  MD_SCHEDULE_CONSTANT = 0, MD_SCHEDULE_EXPONENTIAL, MD_SCHEDULE_PIECEWISE, MD_SCHEDULE_POLYNOMIAL,
  MD_SCHEDULE_COSINE, MD_SCHEDULE_INVERSE_TIME
} md_schedule_kind;

/* Boundaries a piecewise_constant schedule may have (values: one more). */
#define MD_SCHEDULE_MAX_PIECES 16

typedef struct md_schedule {
  md_schedule_kind kind;        /* CONSTANT: the optimizer's plain learning_rate */
  double initial_learning_rate; /* all but piecewise */
  double decay_steps;           /* all but piecewise (> 0) */
  double decay_rate;            /* exponential, inverse_time */
  int staircase;                /* exponential, inverse_time: floor(step / decay_steps) */
  double end_learning_rate;     /* polynomial (Keras default 0.0001) */
  double power;                 /* polynomial (1.0) */
  int cycle;                    /* polynomial: restart past decay_steps */
  double alpha;                 /* cosine: the floor, a fraction of the rate decayed from (0) */
  int warmup;                   /* cosine: warmup_target given (Keras's not None) */
  double warmup_target;         /* cosine: the rate the warmup reaches */
  double warmup_steps;          /* cosine: the warmup's length (0) */
  int nboundaries;              /* piecewise: boundaries given; values has one more */
  int64_t boundaries[MD_SCHEDULE_MAX_PIECES];      /* piecewise: increasing steps */
  double values[MD_SCHEDULE_MAX_PIECES + 1];       /* piecewise: the rate up to each boundary and after */
} md_schedule;

/* The Keras defaults of kind's optional arguments (and 0 for the required ones). */
void  md_schedule_defaults(md_schedule *s, md_schedule_kind kind);
/* The rate at `step` (the optimizer's iterations before the update); s CONSTANT is not asked. */
float md_schedule_rate(const md_schedule *s, int64_t step);

#endif
