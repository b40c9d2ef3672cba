/* gnn_runner.c: TF-GNN's runner.TPUStrategy (ds_gnn_runner_). */
#include "strategies/tpu/gnn_runner.h"

#include "strategies/tpu/tpuInt.h"

ds_strategy *ds_gnn_runner_tpu_strategy_new(sim_engine *e, const char *tpu, const char *slice,
                                            const char *topology, const ds_tpu_machine *m,
                                            sim_algo algo, ds_tpu_resolver **resolver_out,
                                            ds_status *st) {
  ds_status_clear(st);
  /* connect() is the resolver, the cluster connection and initialize_tpu_system in one. */
  ds_tpu_resolver *r = ds_tpu_resolver_connect(tpu, slice, topology, st);
  if (r == NULL) return NULL;
  ds_strategy *s = ds__tpu_strategy_on_resolver(e, DS_GNN_RUNNER_TPU, r, 0, NULL, m, algo, NULL, NULL);
  if (resolver_out) *resolver_out = r;
  else ds_tpu_resolver_free(r);
  return s;
}
