/*
** ps_skip.c: the update counters a fast-forward of a parameter-server run moves (ds_ps_counters,
** ds_ps_skip_counters; the proof that it may is scenarios/programs/ps_train.c's).
**
** With numerics off a component holds its shape alone, so what k periods of updates change on
** the ps tasks is counted, not computed: each component's version (the staleness every later
** read and push measures against it) and optimizer.iterations' value (the step every later read
** returns, and the push under way uses). Both grow by the same amount in each period of a periodic run, so k periods add k
** times that amount.
*/
#include "strategies/ps/psInt.h"

int ds_ps_counters(const ds_strategy *s, int64_t *out) {
  const ps_state *ps = state_of(s);
  for (int i = 0; out != NULL && i < ps->ncomps; i++) out[i] = ps->comps[i].version;
  if (out != NULL) out[ps->ncomps] = ds_ps_optimizer_iterations(s);
  return ps->ncomps + 1;
}

void ds_ps_skip_counters(ds_strategy *s, const int64_t *delta, int64_t k) {
  ps_state *ps = state_of(s);
  for (int i = 0; i < ps->ncomps; i++) ps->comps[i].version += k * delta[i];
  if (ps->iterations != NULL) md_tensor_i64(ds_variable_copy(ps->iterations, 0))[0] += k * delta[ps->ncomps];
  /* A push under way took its iteration from the closure's read: it moves with the others. */
  for (int w = 0; w <= ps->nworkers; w++)
    if (ps->ops[w] != NULL) ps->ops[w]->t += k * delta[ps->ncomps];
}
