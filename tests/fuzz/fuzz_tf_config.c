/*
** fuzz_tf_config.c: TF_CONFIG JSON as ParameterServerStrategy's cluster resolver reads it, and
** the strategy built from every spec it accepts.
*/
#include "tests/fuzz/fuzz.h"

#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "strategies/ps/ps_strategy.h"

int fuzz_tf_config(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (text == NULL) return 0;
  memcpy(text, data, size);
  text[size] = 0;
  ds_ps_cluster_spec spec;
  ds_status st;
  ds_status_clear(&st);
  /* A cluster of thousands of tasks is a valid spec; a fuzzer's is bounded to keep runs fast. */
  if (ds_ps_cluster_spec_from_tf_config(text, &spec, &st) == 0 &&
      spec.workers + spec.ps + spec.chief + spec.evaluators <= 64) {
    ds_machine m = { .flops_per_s = 1e11, .mem_bytes_per_s = 2e10, .ram_bytes = 32e9, .nic_bytes_per_s = 1e9 };
    ds_ps_cluster c = { .worker = m, .ps = m, .coordinator = m, .evaluator = m,
                        .fabric = SIM_FABRIC_STAR, .link_bytes_per_s = 1e9, .latency = 5000000 };
    sim_engine *e = sim_engine_new();
    ds_strategy *s = ds_ps_strategy_new(e, &spec, &c, NULL, &st);
    ds_strategy_free(s);
    sim_engine_free(e);
  }
  free(text);
  return 0;
}

#ifdef PODSIM_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fuzz_tf_config(data, size); }
#endif
