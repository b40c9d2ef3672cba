/* oplog.h: the op log of one train step and its update, as train.c logged it before compile/
** existed: what the compiled step is held against (test_graph.c, test_compiled_step.c). */
#ifndef PODSIM_TEST_OPLOG_H
#define PODSIM_TEST_OPLOG_H

#include "models/cost.h"
#include "models/model.h"
#include "models/optimizer.h"

/* marks: NULL, or room for the model's layers + 1 (md_workspace_set_marks). */
static inline void log_step(const md_model_spec *spec, const md_optimizer_spec *os, int n, md_op_log *log,
                            size_t *marks) {
  md_error err = {0};
  md_model *m = md_model_new(spec, &err);
  assert_non_null(m);
  md_optimizer *opt = md_optimizer_new(os, m);
  md_workspace *ws = md_workspace_new(m);
  md_workspace_set_marks(ws, marks);
  md_grads *g = md_grads_new(m);
  md_cost cost = {.ops = log};
  md_batch b = {n, NULL, NULL, NULL, NULL};
  double loss;
  md_model_train_step(m, ws, &b, 1.0f, g, &loss, &cost);
  md_optimizer_apply(opt, m, g, &cost);
  md_grads_free(g);
  md_workspace_free(ws);
  md_optimizer_free(opt);
  md_model_free(m);
}

#endif
