/*
** graph.c: the op graph (cg_graph_) and its trace from a model's train step (cg_trace_).
**
** The trace runs the model's train step and the optimizer's update on a shapes-only copy with an
** op log (models/cost.h) whose every op carries its phase and layer. Ops become graph ops in log
** order; their tensors come from the model's structure:
**   - a layer's forward ops form a chain: the first reads the layer's inputs (earlier layers'
**     outputs or a model input) and its variables, each next one the one before's output, and
**     the last writes the layer's activation;
**   - the loss reads the last activation and writes its gradient;
**   - by blocks, a block's layers' forwards again write their activations afresh, which the
**     backward reads in place of the forward's;
**   - a layer's backward (and, with rematerialisation, its forward again first) reads the
**     gradient of its output, its inputs' and its own activations and its variables, chains
**     likewise, and writes its inputs' gradients and its variables' gradients;
**   - the optimizer's update of a variable reads the variable and its gradient and writes it.
** An op whose output size the model did not say (out_bytes 0: several outputs, or in-place) still
** writes a tensor: of the layer's activation size when it ends the chain, else of size 0.
*/
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "compile/compileInt.h"

int cg__tensor_new(cg_graph *g, cg_tensor_kind kind, double bytes, int layer, int var) {
  if (g->ntensors == g->cap_tensors) {
    g->cap_tensors = g->cap_tensors ? 2 * g->cap_tensors : 64;
    g->tensors = base_xrealloc(g->tensors, g->cap_tensors * sizeof *g->tensors);
  }
  g->tensors[g->ntensors] = (cg_tensor){.kind = kind, .bytes = bytes, .producer = -1, .layer = layer, .var = var};
  return (int)g->ntensors++;
}

int cg__op_new(cg_graph *g, const cg_op *proto) {
  if (g->nops == g->cap_ops) {
    g->cap_ops = g->cap_ops ? 2 * g->cap_ops : 64;
    g->ops = base_xrealloc(g->ops, g->cap_ops * sizeof *g->ops);
  }
  cg_op *op = &g->ops[g->nops];
  *op = *proto;
  op->in = op->out = NULL;
  op->nin = op->nout = 0;
  op->fusion = -1;
  op->fused_by = NULL;
  op->order = (int)g->nops;
  return (int)g->nops++;
}

static void push(int **a, int *n, int v) {
  *a = base_xrealloc(*a, (size_t)(*n + 1) * sizeof **a);
  (*a)[(*n)++] = v;
}

void cg__op_read(cg_graph *g, int op, int tensor) {
  cg_op *o = &g->ops[op];
  for (int i = 0; i < o->nin; i++)
    if (o->in[i] == tensor) return;
  push(&o->in, &o->nin, tensor);
  cg_tensor *t = &g->tensors[tensor];
  if (t->nconsumers == t->cap) {
    t->cap = t->cap ? 2 * t->cap : 4;
    t->consumers = base_xrealloc(t->consumers, (size_t)t->cap * sizeof *t->consumers);
  }
  t->consumers[t->nconsumers++] = op;
}

void cg__op_write(cg_graph *g, int op, int tensor) {
  push(&g->ops[op].out, &g->ops[op].nout, tensor);
  g->tensors[tensor].producer = op;
}

int cg__is_compute(const cg_op *op) { return op->code < CG_OP_ALL_REDUCE; }

/* ---- the trace ---------------------------------------------------------------------------- */

/* What the trace knows while it walks the log. */
typedef struct tracer {
  cg_graph *g;            /* the graph being built */
  const md_model *m;      /* the shapes-only model traced */
  int n;                  /* the batch */
  int *activation;        /* per layer: its output tensor; -1 before its forward */
  int *gradient;          /* per layer: the gradient of its output; -1 until a reader's backward */
  int *weight;            /* per variable: its tensor */
  int *weight_grad;       /* per variable: its gradient's tensor; -1 before its layer's backward */
  int sparse;             /* the tables' gradients are their IndexedSlices (trace's sparse) */
  int *saved;             /* per layer: what its forward keeps for its backward beyond its inputs
                          ** and output (md_model_layer_saved_bytes); -1: nothing, or remat */
  int remat;              /* 1: the model recomputes each layer's forward before its backward;
                          ** MD_REMAT_BLOCKS: each block's before the backward of its last */
  int inputs[MD_LAYER_MAX_INPUTS]; /* the model inputs' tensors (MD_MODEL_INPUT(k) is inputs[k]) */
  int group_phase;        /* the (phase, layer) of the chain being built; -1: none */
  int group_layer;        /* its layer */
  int last;               /* its last op so far: it writes the chain's outputs (close_group) */
  int current;            /* the op whose output the chain's next op reads; -1: the chain's inputs */
  int current_out;        /* that output's tensor, made when first read; -1: not yet */
} tracer;

static double activation_bytes(const tracer *tr, int l) {
  md_shape s = md_model_layer_output_shape(tr->m, l);
  return (double)tr->n * (double)md_shape_size(&s) * md_model_act_bytes(tr->m);
}

/* The layer whose tensors stand for layer l's output: l, or for a layer whose forward logged no
** op (a Flatten or Reshape is a view of its one input) what its input's stand for, so a view's
** readers read its input's tensor and its readers' backwards write its input's gradient. A
** reader's forward comes after its inputs', so an input without an activation logged none. */
static int view_source(const tracer *tr, int l) {
  int inputs[MD_LAYER_MAX_INPUTS];
  while (l >= 0 && tr->activation[l] < 0 && md_model_layer_inputs(tr->m, l, inputs) == 1) l = inputs[0];
  return l;
}

static int input_tensor(tracer *tr, int input) {
  input = view_source(tr, input);
  return input < 0 ? tr->inputs[MD_MODEL_INPUT(input)] : tr->activation[input];
}

/* The tensors the chain's last op writes, and what the chain's end means for the
** layer: its activation (forward, remat), the output gradient (loss), or its inputs' and
** variables' gradients (backward). */
static void close_group(tracer *tr) {
  if (tr->group_phase < 0) return;
  cg_graph *g = tr->g;
  int l = tr->group_layer, op = tr->last;
  int inputs[MD_LAYER_MAX_INPUTS];
  switch ((md_phase)tr->group_phase) {
  case MD_PHASE_FORWARD: {
    int t = cg__tensor_new(g, CG_TENSOR_ACTIVATION, activation_bytes(tr, l), l, -1);
    cg__op_write(g, op, t);
    tr->activation[l] = t;
    /* Without rematerialisation the forward keeps its intermediates (a pre-activation, a dropout
    ** mask) live until its backward reads them; with it the remat chain makes them afresh. */
    int kept = !tr->remat && (md_model_layer_backward_reads(tr->m, l) & MD_BACKWARD_READS_SAVED);
    double saved = kept ? md_model_layer_saved_bytes(tr->m, l, tr->n) : 0;
    if (saved <= 0) break;
    tr->saved[l] = cg__tensor_new(g, CG_TENSOR_TEMP, saved, l, -1);
    cg__op_write(g, op, tr->saved[l]);
    break;
  }
  case MD_PHASE_REMAT: {
    /* By blocks a layer inside one is made afresh for its backward and its readers': the
    ** forward's copy dies with the forward (only the cutting layers' outputs are kept). */
    int inside = tr->remat == MD_REMAT_BLOCKS && !md_model_layer_cuts(tr->m, l);
    int t = cg__tensor_new(g, inside ? CG_TENSOR_ACTIVATION : CG_TENSOR_TEMP, activation_bytes(tr, l), l, -1);
    cg__op_write(g, op, t);
    if (inside) tr->activation[l] = t;
    break;
  }
  case MD_PHASE_LOSS: {
    int out = view_source(tr, l);
    int t = cg__tensor_new(g, CG_TENSOR_GRADIENT, activation_bytes(tr, out), out, -1);
    cg__op_write(g, op, t);
    tr->gradient[out] = t;
    break;
  }
  case MD_PHASE_BACKWARD: {
    int k = md_model_layer_inputs(tr->m, l, inputs);
    for (int i = 0; i < k; i++) {
      int in = view_source(tr, inputs[i]);
      if (in < 0) continue;  /* no gradient flows into a model input */
      int t = tr->gradient[in];
      if (t < 0) {  /* the first reader's backward writes it; a later one's adds into it */
        t = cg__tensor_new(g, CG_TENSOR_GRADIENT, activation_bytes(tr, in), in, -1);
        tr->gradient[in] = t;
      }
      cg__op_write(g, op, t);
    }
    int first = md_model_layer_first_var(tr->m, l), nv = md_model_layer_num_vars(tr->m, l);
    for (int v = first; v < first + nv; v++) {
      const md_var *var = md_model_var_const(tr->m, v);
      if (!var->trainable) continue;
      /* A table's IndexedSlices, with sparse: a row per id of the batch, never the table. */
      int ids = tr->sparse ? md_model_table_ids_per_example(tr->m, v) : 0;
      double floats = ids > 0 ? (double)tr->n * ids * (double)var->shape[1] : (double)var->size;
      int t = cg__tensor_new(g, CG_TENSOR_WEIGHT_GRAD, 4.0 * floats, l, v);
      cg__op_write(g, op, t);
      tr->weight_grad[v] = t;
    }
    break;
  }
  case MD_PHASE_OPTIMIZER:
  case MD_PHASE_COUNT:
    break;
  }
  tr->group_phase = -1;
}

/* The tensors the first op of a (phase, layer) chain reads. */
static void open_group(tracer *tr, int op, md_phase phase, int l) {
  cg_graph *g = tr->g;
  int inputs[MD_LAYER_MAX_INPUTS];
  int k = l >= 0 ? md_model_layer_inputs(tr->m, l, inputs) : 0;
  int first = l >= 0 ? md_model_layer_first_var(tr->m, l) : 0, nv = l >= 0 ? md_model_layer_num_vars(tr->m, l) : 0;
  if (phase == MD_PHASE_LOSS) {
    cg__op_read(g, op, tr->activation[view_source(tr, l)]);
    return;
  }
  /* A backward reads of its forward what the layer's gradient needs (its inputs, its output, what
  ** it saved): what it does not read may be freed before it (buffer liveness). */
  int reads = phase == MD_PHASE_BACKWARD ? md_model_layer_backward_reads(tr->m, l) : MD_BACKWARD_READS_INPUTS;
  for (int i = 0; i < k && (reads & MD_BACKWARD_READS_INPUTS); i++) {
    int t = input_tensor(tr, inputs[i]);
    if (t >= 0) cg__op_read(g, op, t);
  }
  for (int v = first; v < first + nv; v++) cg__op_read(g, op, tr->weight[v]);
  if (phase == MD_PHASE_BACKWARD) {
    if (tr->gradient[l] >= 0) cg__op_read(g, op, tr->gradient[l]);
    if (tr->activation[l] >= 0 && (reads & MD_BACKWARD_READS_OUTPUT)) cg__op_read(g, op, tr->activation[l]);
    if (tr->saved[l] >= 0 && (reads & MD_BACKWARD_READS_SAVED)) cg__op_read(g, op, tr->saved[l]);
  }
}

static void add_logged(tracer *tr, const md_op_log *log, size_t i) {
  cg_graph *g = tr->g;
  const md_op_info *info = &log->info[i];
  cg_op proto = {.code = info->custom_call ? CG_OP_OTHER : log->matmul[i].batch > 0 ? CG_OP_MATMUL
                         : info->elementwise ? CG_OP_ELEMENTWISE : CG_OP_OTHER,
                 .phase = info->phase, .layer = info->layer, .var = info->var, .flops = log->flops[i],
                 .bytes = log->bytes[i], .matmul = log->matmul[i], .reduce = info->reduce,
                 .row_passes = info->row_passes,
                 .row_reads = info->row_passes > 0 ? log->bytes[i] - info->out_bytes : 0,
                 .convolution = info->convolution};
  int op = cg__op_new(g, &proto);
  if (info->phase == MD_PHASE_OPTIMIZER) {
    close_group(tr);
    int v = info->var;
    cg__op_read(g, op, tr->weight[v]);
    if (tr->weight_grad[v] >= 0) cg__op_read(g, op, tr->weight_grad[v]);
    return;
  }
  if (tr->group_phase != (int)info->phase || tr->group_layer != info->layer) {
    close_group(tr);
    tr->group_phase = (int)info->phase;
    tr->group_layer = info->layer;
    tr->current = -1;
  }
  /* A variables' update beside the chain (batch norm's moving statistics) neither reads the
  ** chain's tensors nor carries them on: the layer's activation stays its last op's. */
  if (info->in_place && tr->current >= 0) return;
  if (tr->current < 0) {
    open_group(tr, op, info->phase, info->layer);
  } else {  /* the chain goes on: this op reads the current op's output */
    if (tr->current_out < 0) {
      tr->current_out = cg__tensor_new(g, CG_TENSOR_TEMP, log->info[tr->current].out_bytes, info->layer, -1);
      cg__op_write(g, tr->current, tr->current_out);
    }
    cg__op_read(g, op, tr->current_out);
  }
  /* A backward pass's products and reductions (a variable's gradient, the input's) each read
  ** the gradient the chain has reached and give one of the pass's outputs; its elementwise ops
  ** (an activation's derivative) carry the chain on. */
  if (info->phase != MD_PHASE_BACKWARD || proto.code == CG_OP_ELEMENTWISE) {
    tr->current = op;
    tr->current_out = -1;
  }
  tr->last = op;
}

static cg_graph *trace(const md_model_spec *spec, const md_optimizer_spec *opt_spec, int n, int sparse);

cg_graph *cg_trace_train_step(const md_model_spec *spec, const md_optimizer_spec *opt_spec, int n) {
  return trace(spec, opt_spec, n, 0);
}

cg_graph *cg_trace_train_step_sparse(const md_model_spec *spec, const md_optimizer_spec *opt_spec, int n) {
  return trace(spec, opt_spec, n, 1);
}

static cg_graph *trace(const md_model_spec *spec, const md_optimizer_spec *opt_spec, int n, int sparse) {
  md_model_spec shapes = *spec;
  shapes.shapes_only = 1;
  md_error err = {0};
  md_model *m = md_model_new(&shapes, &err);
  assert(m != NULL);  /* the caller built a model from the same spec */
  md_optimizer *opt = md_optimizer_new(opt_spec, m);
  md_workspace *ws = md_workspace_new(m);
  size_t *marks = base_xcalloc((size_t)md_model_num_layers(m) + 1, sizeof *marks);
  md_workspace_set_marks(ws, marks);
  sparse = sparse && n > 0;  /* a step on no examples has no slices */
  md_grads *grads = sparse ? md_grads_new_slices(m) : md_grads_new(m);
  md_op_log log = {0};
  md_cost cost = {.ops = &log};
  md_batch b = {n, NULL, NULL, NULL, NULL};
  double loss = 0;
  md_model_train_step(m, ws, &b, 1.0f, grads, &loss, &cost);
  if (sparse) md_optimizer_apply_slices(opt, m, grads, n, &cost);
  else md_optimizer_apply(opt, m, grads, &cost);

  cg_graph *g = base_xcalloc(1, sizeof *g);
  int nl = md_model_num_layers(m), nv = md_model_num_vars(m);
  g->nlayers = nl;
  g->marks = marks;
  g->nvars = nv;
  g->layer_names = base_xcalloc((size_t)nl + 1, sizeof *g->layer_names);
  g->var_names = base_xcalloc((size_t)nv + 1, sizeof *g->var_names);
  tracer tr = {.g = g, .m = m, .n = n, .group_phase = -1, .remat = spec->rematerialize, .sparse = sparse};
  tr.activation = base_xcalloc((size_t)nl, sizeof *tr.activation);
  tr.gradient = base_xcalloc((size_t)nl, sizeof *tr.gradient);
  tr.weight = base_xcalloc((size_t)nv + 1, sizeof *tr.weight);
  tr.weight_grad = base_xcalloc((size_t)nv + 1, sizeof *tr.weight_grad);
  tr.saved = base_xcalloc((size_t)nl, sizeof *tr.saved);
  for (int l = 0; l < nl; l++) {
    tr.activation[l] = tr.gradient[l] = tr.saved[l] = -1;
    snprintf(g->layer_names[l], sizeof g->layer_names[l], "%s", md_model_layer_name(m, l));
  }
  int ninputs = spec->ninputs > 0 ? spec->ninputs : 1;
  for (int k = 0; k < ninputs && k < MD_LAYER_MAX_INPUTS; k++) {
    const md_model_input *in = spec->ninputs > 0 ? &spec->inputs[k] : NULL;
    double width = in ? (double)(in->features + in->ids)
                      : spec->input_ids > 0 ? (double)spec->input_ids
                      : spec->input_shape.rank > 0 ? (double)md_shape_size(&spec->input_shape)
                      : (double)spec->input_features;
    tr.inputs[k] = cg__tensor_new(g, CG_TENSOR_INPUT, 4.0 * (double)n * width, -1, -1);
  }
  int slots = md_optimizer_slots_per_var(opt_spec);
  g->slots = slots;
  g->compute_bytes = md_model_act_bytes(m);
  g->cast = base_xcalloc((size_t)nv + 1, sizeof *g->cast);
  g->trainable = base_xcalloc((size_t)nv + 1, sizeof *g->trainable);
  g->tp = base_xcalloc((size_t)nl + 1, sizeof *g->tp);
  md_model_tensor_parallel_layers(m, 2, g->tp);  /* the way a layer splits is the same over any 2 or more */
  g->first_var = base_xcalloc((size_t)nl + 1, sizeof *g->first_var);
  for (int l = 0; l < nl; l++) g->first_var[l] = md_model_layer_first_var(m, l);
  for (int v = 0; v < nv; v++) {
    const md_var *var = md_model_var_const(m, v);
    snprintf(g->var_names[v], sizeof g->var_names[v], "%s", var->name);
    tr.weight[v] = cg__tensor_new(g, CG_TENSOR_WEIGHT, 4.0 * (double)var->size, -1, v);
    tr.weight_grad[v] = -1;
    g->trainable[v] = (unsigned char)(var->trainable != 0);
    g->cast[v] = (unsigned char)md_model_var_cast(m, v);
    g->persistent += 4.0 * (double)var->size * (1 + (var->trainable ? slots : 0));
  }
  for (size_t i = 0; i < log.n; i++) add_logged(&tr, &log, i);
  close_group(&tr);
  g->traced = g->nops;
  g->schedule = base_xcalloc(g->nops + 1, sizeof *g->schedule);
  for (size_t i = 0; i < g->nops; i++) g->schedule[i] = (int)i;

  free(tr.activation);
  free(tr.gradient);
  free(tr.weight);
  free(tr.weight_grad);
  free(tr.saved);
  md_op_log_free(&log);
  md_grads_free(grads);
  md_workspace_free(ws);
  md_optimizer_free(opt);
  md_model_free(m);
  return g;
}

void cg_graph_free(cg_graph *g) {
  if (g == NULL) return;
  for (size_t i = 0; i < g->nops; i++) {
    free(g->ops[i].in);
    free(g->ops[i].out);
  }
  for (size_t i = 0; i < g->ntensors; i++) free(g->tensors[i].consumers);
  free(g->ops);
  free(g->tensors);
  free(g->schedule);
  free(g->marks);
  free(g->layer_names);
  free(g->var_names);
  free(g->trainable);
  free(g->cast);
  free(g->tp);
  free(g->first_var);
  free(g->live);
  free(g->live_grads);
  free(g);
}

size_t cg_graph_num_ops(const cg_graph *g) { return g->nops; }
size_t cg_graph_num_traced(const cg_graph *g) { return g->traced; }

double cg_graph_flops(const cg_graph *g) {
  double f = 0;
  for (size_t i = 0; i < g->nops; i++)
    if (cg__is_compute(&g->ops[i])) f += g->ops[i].flops;
  return f;
}

double cg_graph_bytes(const cg_graph *g) {
  double b = 0;
  for (size_t i = 0; i < g->nops; i++)
    if (cg__is_compute(&g->ops[i])) b += g->ops[i].bytes - g->ops[i].saved_bytes;
  return b;
}

double cg_graph_peak_bytes(const cg_graph *g) { return g->peak; }
double cg_graph_peak_gradient_bytes(const cg_graph *g) { return g->peak_grads; }
double cg_graph_persistent_bytes(const cg_graph *g) { return g->persistent; }

double cg_graph_weight_bytes(const cg_graph *g) {
  double b = 0;
  for (size_t i = 0; i < g->ntensors; i++)
    if (g->tensors[i].kind == CG_TENSOR_WEIGHT && g->tensors[i].producer < 0) b += g->tensors[i].bytes;
  return b;
}

double cg_graph_collective_bytes(const cg_graph *g, cg_coll kind, cg_axis axis, int *count) {
  double b = 0;
  int n = 0;
  for (size_t i = g->traced; i < g->nops; i++) {
    const cg_op *op = &g->ops[i];
    if (op->code != CG_OP_ALL_REDUCE + (cg_opcode)kind || op->axis != axis) continue;
    b += op->bytes;
    n++;
  }
  if (count != NULL) *count = n;
  return b;
}
