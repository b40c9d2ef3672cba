/*
** mfu.c: PaLM's model FLOPs per token and the cluster's peak (mfu_); mfu.h says the definition.
*/
#include "scenarios/programs/mfu.h"

#include "scenarios/programs/slice.h"

/* The cluster's peak FLOP/s: a TPU run's chips (every slice's) at their peak; a GPU or
** accelerator VM's accelerators; else each worker's CPUs (machine flops). */
static double cluster_peak(const scenario *s) {
  if (s->tpu_type[0]) return scenario_chips(s) * slice_chip_peak_flops(s);
  const scn_machine *w = &s->worker_machine;
  if (w->accelerators > 0) return (double)s->workers * w->accelerators * w->accel_peak_flops;
  return (double)s->workers * w->flops;
}

mfu_model mfu_of(const scenario *s, const md_model *m) {
  mfu_model f = { 0, 0, cluster_peak(s) };
  if (s->input_ids <= 0) return f;
  f.tokens_per_example = s->input_ids;
  double attention = 0;  /* sum over attention layers of H Q T */
  for (int l = 0; l < s->nlayers && l < md_model_num_layers(m); l++) {
    const md_layer_spec *spec = &s->layers[l];
    if (spec->kind != MD_LAYER_MULTI_HEAD_ATTENTION) continue;
    md_shape out = md_model_layer_output_shape(m, l);  /* [T, d]: the sequence it attends over */
    attention += (double)spec->num_heads * spec->key_dim * (out.rank >= 2 ? out.dim[0] : 1);
  }
  f.flops_per_token = 6.0 * (double)md_model_num_params(m) + 12.0 * attention;
  return f;
}

mfu_model mfu_of_scenario(const scenario *s) {
  md_model_spec spec = scenario_model_spec(s, 1);
  md_error err = {0};
  md_model *m = md_model_new(&spec, &err);
  mfu_model f = { 0, 0, cluster_peak(s) };
  if (m) f = mfu_of(s, m);
  md_model_free(m);
  return f;
}

double mfu_tokens_per_s(const mfu_model *f, double examples_per_s) { return examples_per_s * f->tokens_per_example; }

double mfu_utilisation(const mfu_model *f, double examples_per_s) {
  return f->peak_flops > 0 ? mfu_tokens_per_s(f, examples_per_s) * f->flops_per_token / f->peak_flops : 0.0;
}

void mfu_summarise(const scenario *s, const md_model *m, run_summary *sum) {
  mfu_model f = mfu_of(s, m);
  /* The steady rate, as PaLM measures it: a global batch per mean step, compile left out. */
  double steady = sum->means.step_s > 0 ? s->global_batch / sum->means.step_s : 0.0;
  sum->has_tokens = f.tokens_per_example > 0;
  sum->tokens_per_s = mfu_tokens_per_s(&f, steady);
  sum->mfu = mfu_utilisation(&f, steady);
}
