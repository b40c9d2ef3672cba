/*
** schedule.c: Keras 3's learning-rate schedules in float32 (schedule.h has the formulas).
*/
#include "models/schedule.h"

#include <assert.h>
#include <math.h>
#include <string.h>

void md_schedule_defaults(md_schedule *s, md_schedule_kind kind) {
  memset(s, 0, sizeof *s);
  s->kind = kind;
  s->end_learning_rate = 0.0001;
  s->power = 1.0;
}

/* Keras's CosineDecay._decay_function: from * ((1 - alpha) * cosine + alpha), the 1 - alpha
** taken on the Python float before it meets the float32 tensor. */
static float cosine(const md_schedule *s, float step, float decay_steps, float from) {
  float fraction = step / decay_steps;
  float cosine_decayed = 0.5f * (1.0f + cosf((float)M_PI * fraction));
  float decayed = (float)(1.0 - s->alpha) * cosine_decayed + (float)s->alpha;
  return from * decayed;
}

static float piecewise(const md_schedule *s, int64_t step) {
  for (int i = 0; i < s->nboundaries; i++)
    if (step <= s->boundaries[i]) return (float)s->values[i];
  return (float)s->values[s->nboundaries];
}

float md_schedule_rate(const md_schedule *s, int64_t step) {
  float lr0 = (float)s->initial_learning_rate, d = (float)s->decay_steps, x = (float)step;
  switch (s->kind) {
    case MD_SCHEDULE_EXPONENTIAL:
    case MD_SCHEDULE_INVERSE_TIME: {
      float p = x / d;
      if (s->staircase) p = floorf(p);
      if (s->kind == MD_SCHEDULE_EXPONENTIAL) return lr0 * powf((float)s->decay_rate, p);
      return lr0 / (1.0f + (float)s->decay_rate * p);
    }
    case MD_SCHEDULE_POLYNOMIAL: {
      float end = (float)s->end_learning_rate;
      if (s->cycle) d = d * (x == 0.0f ? 1.0f : ceilf(x / d));
      else x = fminf(x, d);
      return (lr0 - end) * powf(1.0f - x / d, (float)s->power) + end;
    }
    case MD_SCHEDULE_PIECEWISE:
      return piecewise(s, step);
    case MD_SCHEDULE_COSINE: {
      if (!s->warmup) return cosine(s, fminf(x, d), d, lr0);
      float w = (float)s->warmup_steps, target = (float)s->warmup_target;
      x = fminf(x, d + w);
      if (x < w) return (target - lr0) * (x / w) + lr0;
      return cosine(s, x - w, d, target);
    }
    case MD_SCHEDULE_CONSTANT:
      break;
  }
  assert(0 && "a constant rate is the optimizer's own");
  return lr0;
}
