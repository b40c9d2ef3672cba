/*
** model.c: a model (md_model_), its workspace (md_workspace_) and gradient buffers (md_grads_).
** A model is a graph whose layer order is topological: each layer reads the outputs of earlier
** layers (its spec's inputs; by default the previous one's, a Sequential model). The forward
** pass runs the layers in order and keeps every layer's z and a (and what a layer saves for its
** backward) in the workspace, so any later reader finds them; the backward pass walks the layers
** in reverse, each writing its inputs' gradients into their layers' g buffers. Every layer is run
** through its kind's md_layer_ops (layers/registry.c). A model of several inputs (Keras's Input
** layers) splits each batch into one buffer per input first (inputs.c); a layer reading model
** input k names MD_MODEL_INPUT(k), and no gradient flows into a model input.
**
** Invariants:
**   1. No code here depends on a layer's kind: what differs lives in the kind's ops table.
**   2. A pass of a layer issues its ops' costs in the same order with and without numerics (the
**      math runs only with them), then its activation's: op logs and costs are mode-independent.
**   3. Only a train step's forward is training (dropout drops, batch normalisation uses and moves
**      its statistics); md_model_forward and md_model_loss evaluate.
**   4. The gradient of an output several layers read is summed in one fixed order: the last
**      reader writes it, then each earlier reader adds its own (float adds), a reader through
**      several inputs adding them in input order. A Sequential model has one reader per output,
**      writes every gradient straight into place and adds nothing, as it always did.
**   5. Costs count an activation element at the policy's act_bytes and a variable's at 4: the
**      float32 policy's costs are the ones before policies existed, to the bit.
**   6. Variables, their gradients as the optimizer and the all-reduce see them, and optimizer
**      slots are float32 under every policy (Keras's mixed policies keep float32 variables).
**   7. Under a mixed policy (numerics on) values are rounded to the compute dtype, ties to even,
**      where Keras casts them, at layer boundaries: the input batch; every variable a layer
**      reads (an AutoCastVariable), except a normalisation layer's, which computes in float32;
**      each layer's z and a; the gradient entering a layer's op and the gradients it gives (its
**      input's, its variables' before the cast back to float32). Inside a layer the math is
**      float32 (TF's CPU kernels accumulate 16-bit products in float32 too), and the loss is
**      float32 of the rounded output, as with Keras's advised float32 final activation.
**   8. Rematerialisation changes costs and memory only: a train step charges each layer's
**      forward a second time, just before its backward, and holds its outputs through the step
**      (md_model_activation_bytes); the values computed are the first pass's. By blocks
**      (MD_REMAT_BLOCKS) it charges a block's layers' forwards again, in order, just before the
**      backward of its last (the layer that cuts the model) and holds the cutting layers'
**      outputs and one block's.
**   9. Tensor parallelism (md_model_tensor_parallel) changes memory and costs only: values are
**      computed once per replica, unsplit, as the partitioned program computes them (the same
**      products summed in another order is not claimed: the replica's numerics are the unsplit
**      model's, bit for bit). Layers split in order as Megatron-LM's transformer does: a kind
**      that splits by heads does (attention); else one that splits by columns does, paired with
**      its one reader when that reader reads it alone and splits by rows (the feed-forward pair:
**      the split activation passes between them with no collective); else by rows (embeddings).
**      Collectives: rows all-reduce their output's partial sums (forward) and, unpaired, gather
**      their input's split gradient (backward); columns, unpaired, gather their split output
**      (forward; the model's output instead all-reduces the loss's three reductions over its
**      split class axis, one after another as Megatron-LM's vocab-parallel cross entropy: max,
**      the label's logit, sum of exponentials) and all-reduce their
**      input's gradient (backward, each device holding a partial sum); heads all-reduce their
**      output (forward) and their input's gradient (backward). The model's input has no gradient.
**  10. Every replica of a train step issues the same all-reduces over the replicas (a
**      cross_replica layer's, through md_workspace_set_all_reduce), in the same order, whatever
**      its batch (an empty one too) and with numerics or without (shapes only: timed, no values).
*/
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/modelsInt.h"

/* Layer i's inputs into in[] (the spec's, or the previous layer's output: layer 0 reads the
** model's input); returns how many. */
static int inputs_of(const md_layer_spec *ls, int i, int *in) {
  if (ls->ninputs == 0) {
    in[0] = i - 1;
    return 1;
  }
  memcpy(in, ls->inputs, sizeof(int) * (size_t)ls->ninputs);
  return ls->ninputs;
}

/* check_input for a model of several inputs: an id-reading layer reads one id input alone (any
** layer may), every other kind reads float inputs only. */
static int check_model_inputs(const md_model_spec *spec, int i, const int *in, int n, md_error *err) {
  const md_layer_spec *ls = &spec->layers[i];
  const md_layer_ops *ops = md_layer_ops_of(ls->kind);
  if (ops->reads_ids) {
    const md_model_input *mi = in[0] < 0 ? &spec->inputs[MD_MODEL_INPUT(in[0])] : NULL;
    if (n != 1 || mi == NULL || mi->ids == 0)
      return md_error_set(err, 0, 0, "layer %d: an %s reads one id input of the model alone", i, ops->keras_name);
    if (mi->vocab > ls->vocab)
      return md_error_set(err, 0, 0, "layer %d: its input %s has ids below %d, more than its vocab %d", i,
                          mi->name, mi->vocab, ls->vocab);
    return 0;
  }
  for (int k = 0; k < n; k++)
    if (in[k] < 0 && spec->inputs[MD_MODEL_INPUT(in[k])].ids > 0)
      return md_error_set(err, 0, 0, "layer %d: a %s reads float features, but input %s holds ids", i,
                          ops->keras_name, spec->inputs[MD_MODEL_INPUT(in[k])].name);
  return 0;
}

/* Checks what feeds layer i against its kind: as many inputs as it reads, each an earlier layer
** or a model input; with one model input, an id input only into the first layer that reads ids, a
** float input into any other (several: check_model_inputs). Fills err and returns -1 when it
** cannot follow. */
static int check_input(const md_model_spec *spec, int i, md_error *err) {
  const md_layer_spec *ls = &spec->layers[i];
  if (ls->kind < 0 || ls->kind >= MD_LAYER_KIND_COUNT)
    return md_error_set(err, 0, 0, "layer %d: unknown kind %d", i, (int)ls->kind);
  const md_layer_ops *ops = md_layer_ops_of(ls->kind);
  if (ops->has_activation && (ls->activation < MD_ACT_NONE || ls->activation >= MD_ACT_COUNT))
    return md_error_set(err, 0, 0, "layer %d: unknown activation %d", i, (int)ls->activation);
  if (ls->ninputs < 0 || ls->ninputs > MD_LAYER_MAX_INPUTS || (ops->multi_input && ls->ninputs < 2) ||
      (!ops->multi_input && ls->ninputs > 1))
    return ops->multi_input ? md_error_set(err, 0, 0, "layer %d (%s): expected 2 to %d inputs, found %d", i,
                                           ops->keras_name, MD_LAYER_MAX_INPUTS, ls->ninputs)
                            : md_error_set(err, 0, 0, "layer %d (%s): expected one input, found %d", i,
                                           ops->keras_name, ls->ninputs);
  int in[MD_LAYER_MAX_INPUTS], n = inputs_of(ls, i, in), reads_model = 0;
  int last_input = MD_MODEL_INPUT(spec->ninputs > 0 ? spec->ninputs - 1 : 0);
  for (int k = 0; k < n; k++) {
    if (in[k] < last_input || in[k] >= i)
      return spec->ninputs > 0
                 ? md_error_set(err, 0, 0, "layer %d: input %d is layer %d: a layer reads a model input "
                                "(%d..%d) or an earlier layer's output", i, k, in[k], MD_INPUT_MODEL, last_input)
                 : md_error_set(err, 0, 0, "layer %d: input %d is layer %d: a layer reads the model's input "
                                "(%d) or an earlier layer's output", i, k, in[k], MD_INPUT_MODEL);
    reads_model |= in[k] < 0;
  }
  if (spec->ninputs > 0) return check_model_inputs(spec, i, in, n, err);
  int float_input = spec->input_features > 0 || spec->input_shape.rank > 0;
  if (ops->reads_ids) {
    if (i != 0)
      return md_error_set(err, 0, 0, "layer %d: an %s must be the first layer", i, ops->keras_name);
    if (spec->input_ids <= 0 || float_input)
      return md_error_set(err, 0, 0, "layer 0: an %s reads ids (input_ids > 0, "
                          "input_features 0; got %d, %d)", ops->keras_name, spec->input_ids, spec->input_features);
    if (spec->input_vocab <= 0 || spec->input_vocab > ls->vocab)
      return md_error_set(err, 0, 0, "layer 0: input_vocab %d must be in [1, vocab %d]",
                          spec->input_vocab, ls->vocab);
    if (n != 1 || !reads_model)
      return md_error_set(err, 0, 0, "layer 0: an %s reads the model's input alone", ops->keras_name);
    return 0;
  }
  if (reads_model && (!float_input || spec->input_ids != 0))
    return md_error_set(err, 0, 0, "layer %d: a %s reading the model's input reads float features "
                        "(input_features > 0 or an input_shape, input_ids 0; got %d, %d)",
                        i, ops->keras_name, spec->input_features, spec->input_ids);
  return 0;
}

/* One example's input: input_shape, else [input_features], else [input_ids]; rank 0 when the
** given shape is not one (a dimension below 1, or a rank above MD_MAX_SHAPE_RANK). */
static md_shape input_shape_of(const md_model_spec *spec) {
  md_shape s = spec->input_shape;
  if (s.rank == 0) s = (md_shape){.rank = 1, .dim = {spec->input_features > 0 ? spec->input_features : spec->input_ids}};
  int ok = s.rank >= 1 && s.rank <= MD_MAX_SHAPE_RANK;
  for (int i = 0; ok && i < s.rank; i++) ok = s.dim[i] > 0;
  if (!ok) s.rank = 0;
  return s;
}

int md_model_add_var(md_model *m, const char *layer, const char *what, int rank, const int64_t *shape) {
  assert(rank >= 1 && rank <= MD_MAX_SHAPE_RANK);
  if (m->nvars == m->vars_cap) {
    m->vars_cap = m->vars_cap ? 2 * m->vars_cap : 8;
    m->vars = base_xrealloc(m->vars, sizeof(md_var) * m->vars_cap);
  }
  md_var *v = &m->vars[m->nvars];
  memset(v, 0, sizeof *v);
  snprintf(v->name, sizeof v->name, "%s/%s", layer, what);
  v->trainable = 1;
  v->rank = rank;
  v->size = 1;
  for (int i = 0; i < rank; i++) {
    v->shape[i] = shape[i];
    v->size *= (size_t)shape[i];
  }
  if (!m->shapes_only) {
    v->data = base_xrealloc(NULL, sizeof(float) * v->size);
    memset(v->data, 0, sizeof(float) * v->size);
  }
  return m->nvars++;
}

/* Builds layer i of m (the layers before it built, in the model's input shape) with the given
** name: inputs and their shapes, defaults, output shape, variables. */
static int build_layer(md_model *m, const md_model_spec *spec, int i, const md_shape *input, const char *name,
                       md_error *err) {
  md_layer *l = &m->layers[i];
  memset(l, 0, sizeof *l);
  l->spec = spec->layers[i];
  l->ops = md_layer_ops_of(l->spec.kind);
  if (!l->ops->has_activation) l->spec.activation = MD_ACT_NONE;
  snprintf(l->name, sizeof l->name, "%s", name);
  for (int j = 0; j < i; j++)
    if (strcmp(m->layers[j].name, l->name) == 0)
      return md_error_set(err, 0, 0, "layer %d: the name %s is layer %d's already", i, l->name, j);
  l->ninputs = inputs_of(&l->spec, i, l->input);
  for (int k = 0; k < l->ninputs; k++) {
    l->in_shapes[k] = l->input[k] < 0 ? input[MD_MODEL_INPUT(l->input[k])] : m->layers[l->input[k]].out_shape;
    int elements = (int)md_shape_size(&l->in_shapes[k]);
    if (elements > m->widest) m->widest = elements;
  }
  l->in_shape = l->in_shapes[0];
  if (l->ops->shape(l, err) != 0) {
    char why[sizeof err->msg];
    snprintf(why, sizeof why, "%s", err->msg);
    return md_error_set(err, 0, 0, "layer %d (%s): %s", i, l->ops->keras_name, why);
  }
  l->in = (int)md_shape_size(&l->in_shape);
  l->out = (int)md_shape_size(&l->out_shape);
  l->ops->variables(l, m);
  if (l->out > m->widest) m->widest = l->out;
  return 0;
}

/* Marks the layers whose output reaches the last layer's (live) and, walking the live readers
** from the last, which of their inputs' gradients are added to an earlier-written one (invariant
** 4); nscratch is the most such inputs one layer has. */
static void plan_backward(md_model *m) {
  m->layers[m->nlayers - 1].live = 1;
  for (int l = m->nlayers - 1; l >= 0; l--) {
    md_layer *ly = &m->layers[l];
    if (!ly->live) continue;
    int adds = 0;
    for (int k = 0; k < ly->ninputs; k++) {
      int src = ly->input[k];
      if (src < 0) continue;
      m->layers[src].live = 1;
      ly->dx_adds[k] = m->layers[src].readers > 0;
      adds += ly->dx_adds[k];
      m->layers[src].readers++;
    }
    if (adds > m->nscratch) m->nscratch = adds;
  }
  /* layer l cuts when the earliest thing any later layer reads is l or after it */
  int earliest = m->nlayers;
  for (int l = m->nlayers - 1; l >= 0; l--) {
    m->layers[l].cuts = earliest >= l;
    for (int k = 0; k < m->layers[l].ninputs; k++)
      if (m->layers[l].input[k] < earliest) earliest = m->layers[l].input[k] < 0 ? -1 : m->layers[l].input[k];
  }
}

int md_model_layer_cuts(const md_model *m, int l) { return m->layers[l].cuts; }


md_model *md_model_new(const md_model_spec *spec, md_error *err) {
  if (spec->nlayers <= 0 || spec->layers == NULL) {
    md_error_set(err, 0, 0, "a model needs at least one layer");
    return NULL;
  }
  if (md_inputs_check(spec, err) != 0) return NULL;
  for (int i = 0; i < spec->nlayers; i++)
    if (check_input(spec, i, err) != 0) return NULL;
  md_shape in = spec->ninputs > 0 ? md_inputs_shape(&spec->inputs[0]) : input_shape_of(spec);
  if (in.rank == 0) {
    md_error_set(err, 0, 0, "input_shape needs rank 1..%d and every dimension > 0", MD_MAX_SHAPE_RANK);
    return NULL;
  }
  if (spec->input_shape.rank > 0 && spec->input_features > 0 && md_shape_size(&in) != spec->input_features) {
    md_error_set(err, 0, 0, "input_features %d is not the %lld elements of input_shape", spec->input_features,
                 (long long)md_shape_size(&in));
    return NULL;
  }

  md_model *m = base_xrealloc(NULL, sizeof *m);
  memset(m, 0, sizeof *m);
  m->input_shape = in;
  m->input_features = spec->input_ids > 0 ? 0 : (int)md_shape_size(&in);
  md_shape inputs[MD_MAX_MODEL_INPUTS] = {in};
  m->ninputs = spec->ninputs;
  for (int k = 0; k < spec->ninputs; k++) {
    m->inputs[k] = spec->inputs[k];
    inputs[k] = md_inputs_shape(&spec->inputs[k]);
  }
  if (spec->ninputs > 0) m->input_features = md_inputs_width(spec->inputs, spec->ninputs);
  m->input_ids = spec->input_ids;
  m->input_vocab = spec->input_vocab;
  m->loss = spec->loss;
  m->from_logits = spec->from_logits;
  m->shapes_only = spec->shapes_only;
  m->act_bytes = spec->dtype_policy == MD_POLICY_FLOAT32 ? 4.0 : 2.0;
  m->policy = spec->dtype_policy;
  m->rematerialize = spec->rematerialize;
  m->nlayers = spec->nlayers;
  m->layers = base_xrealloc(NULL, sizeof(md_layer) * spec->nlayers);
  char (*names)[MD_LAYER_NAME_MAX] = base_xrealloc(NULL, sizeof *names * (size_t)spec->nlayers);
  md_layer_names(spec->layers, spec->nlayers, names);
  for (int i = 0; i < spec->nlayers; i++) {
    if (build_layer(m, spec, i, inputs, names[i], err) != 0) {
      free(names);
      m->nlayers = i;
      md_model_free(m);
      return NULL;
    }
  }
  free(names);
  plan_backward(m);
  md_activation out_act = m->layers[m->nlayers - 1].spec.activation;
  m->act_logits = !m->from_logits && out_act != MD_ACT_NONE && out_act == md_loss_logits_activation(m->loss);
  return m;
}

/* A copy of src; with `mirrors`, its trainable variables keep pointing at src's storage. */
static md_model *clone_model(const md_model *src, const md_model *mirrors) {
  md_model *m = base_xrealloc(NULL, sizeof *m);
  *m = *src;
  m->mirrors = mirrors;
  m->layers = base_xrealloc(NULL, sizeof(md_layer) * src->nlayers);
  memcpy(m->layers, src->layers, sizeof(md_layer) * src->nlayers);
  m->vars = base_xrealloc(NULL, sizeof(md_var) * src->vars_cap);
  for (int i = 0; i < src->nvars; i++) {
    m->vars[i] = src->vars[i];
    if (src->shapes_only || (mirrors && src->vars[i].trainable)) continue;
    m->vars[i].data = base_xrealloc(NULL, sizeof(float) * src->vars[i].size);
    memcpy(m->vars[i].data, src->vars[i].data, sizeof(float) * src->vars[i].size);
  }
  return m;
}

md_model *md_model_clone(const md_model *src) { return clone_model(src, NULL); }

md_model *md_model_clone_mirrored(const md_model *src) { return clone_model(src, src); }

void md_model_free(md_model *m) {
  if (m == NULL) return;
  for (int i = 0; i < m->nvars; i++)
    if (!(m->mirrors && m->vars[i].trainable)) free(m->vars[i].data);
  free(m->vars);
  free(m->layers);
  free(m);
}

const char *md_var_shape_str(const md_var *v, char *buf, size_t len) {
  size_t n = 0;
  buf[0] = 0;
  for (int i = 0; i < v->rank && n < len; i++)
    n += (size_t)snprintf(buf + n, len - n, i ? "x%lld" : "%lld", (long long)v->shape[i]);
  return buf;
}

int md_model_num_vars(const md_model *m) { return m->nvars; }

md_var *md_model_var(md_model *m, int i) {
  assert(i >= 0 && i < m->nvars);
  return &m->vars[i];
}

const md_var *md_model_var_const(const md_model *m, int i) {
  assert(i >= 0 && i < m->nvars);
  return &m->vars[i];
}

int md_model_find_var(const md_model *m, const char *name) {
  for (int i = 0; i < m->nvars; i++)
    if (strcmp(m->vars[i].name, name) == 0) return i;
  return -1;
}

size_t md_model_num_params(const md_model *m) {
  size_t n = 0;
  for (int i = 0; i < m->nvars; i++) n += m->vars[i].size;
  return n;
}

int md_model_num_classes(const md_model *m) { return m->layers[m->nlayers - 1].out; }

int md_model_label_positions(const md_model *m) {
  const md_layer *last = &m->layers[m->nlayers - 1];
  return last->out / last->out_shape.dim[last->out_shape.rank - 1];
}

int md_model_num_layers(const md_model *m) { return m->nlayers; }

const char *md_model_layer_name(const md_model *m, int l) {
  assert(l >= 0 && l < m->nlayers);
  return m->layers[l].name;
}

int md_model_layer_num_vars(const md_model *m, int l) {
  assert(l >= 0 && l < m->nlayers);
  return m->layers[l].nvars;
}

/* The index the layer's first variable has, or would have: the variables before it. */
int md_model_layer_first_var(const md_model *m, int l) {
  assert(l >= 0 && l < m->nlayers);
  int v = 0;
  for (int i = 0; i < l; i++) v += m->layers[i].nvars;
  return v;
}

md_shape md_model_layer_output_shape(const md_model *m, int l) {
  assert(l >= 0 && l < m->nlayers);
  return m->layers[l].out_shape;
}

int md_model_layer_inputs(const md_model *m, int l, int *inputs) {
  assert(l >= 0 && l < m->nlayers);
  memcpy(inputs, m->layers[l].input, (size_t)m->layers[l].ninputs * sizeof *inputs);
  return m->layers[l].ninputs;
}

const char *md_model_layer_kind(const md_model *m, int l) {
  assert(l >= 0 && l < m->nlayers);
  return md_layer_kind_name(m->layers[l].spec.kind);
}

double md_model_act_bytes(const md_model *m) { return m->act_bytes; }

void md_fill_uniform(md_var *v, double limit, gsl_rng *rng) {
  for (size_t i = 0; i < v->size; i++) v->data[i] = (float)(-limit + 2.0 * limit * gsl_rng_uniform(rng));
}

void md_fill_glorot(md_var *v, double fan_in, double fan_out, gsl_rng *rng) {
  md_fill_uniform(v, sqrt(6.0 / (fan_in + fan_out)), rng);
}

/* Each layer's initializer in layer order; variables it leaves alone keep their zeros (biases)
** once reset here, so a re-initialised model is the same as a new one. */
void md_model_init_default(md_model *m, gsl_rng *rng) {
  if (m->shapes_only) return;
  for (int i = 0; i < m->nvars; i++) memset(m->vars[i].data, 0, sizeof(float) * m->vars[i].size);
  for (int i = 0; i < m->nlayers; i++) m->layers[i].ops->init(&m->layers[i], m->vars, rng);
}

md_workspace *md_workspace_new(const md_model *m) {
  md_workspace *w = base_xrealloc(NULL, sizeof *w);
  memset(w, 0, sizeof *w);
  w->nlayers = m->nlayers;
  w->z = base_xrealloc(NULL, sizeof(float *) * m->nlayers);
  w->a = base_xrealloc(NULL, sizeof(float *) * m->nlayers);
  w->saved = base_xrealloc(NULL, sizeof(float *) * m->nlayers);
  w->kept = base_xcalloc((size_t)m->nlayers + 1, sizeof(float *));
  w->g = base_xrealloc(NULL, sizeof(float *) * m->nlayers);
  memset(w->z, 0, sizeof(float *) * m->nlayers);
  memset(w->a, 0, sizeof(float *) * m->nlayers);
  memset(w->saved, 0, sizeof(float *) * m->nlayers);
  memset(w->g, 0, sizeof(float *) * m->nlayers);
  for (int l = 0; l < m->nlayers && !m->shapes_only; l++)
    if (m->layers[l].kept > 0) w->kept[l] = base_xcalloc((size_t)m->layers[l].kept, sizeof(float));
  return w;
}

void md_workspace_set_rng(md_workspace *w, gsl_rng *rng) { w->rng = rng; }

void md_workspace_set_dropout_draw(md_workspace *w, int64_t draw) { w->draw = draw; }

void md_workspace_set_all_reduce(md_workspace *w, md_all_reduce_fn fn, void *ctx) {
  w->all_reduce = fn;
  w->all_reduce_ctx = ctx;
}

void md_workspace_set_marks(md_workspace *w, size_t *marks) { w->marks = marks; }

/* Marks entry `at` with the op log's length (md_workspace_set_marks). */
static void mark(md_workspace *w, const md_cost *cost, int at) {
  if (w->marks != NULL && cost != NULL && cost->ops != NULL) w->marks[at] = cost->ops->n;
}

void md_workspace_free(md_workspace *w) {
  if (w == NULL) return;
  for (int l = 0; l < w->nlayers; l++) {
    if (w->a[l] != w->z[l]) free(w->a[l]);
    free(w->z[l]);
    free(w->saved[l]);
    free(w->kept[l]);
    free(w->g[l]);
  }
  free(w->z);
  free(w->saved);
  free(w->kept);
  free(w->a);
  free(w->g);
  for (int i = 0; i < MD_LAYER_MAX_INPUTS; i++) free(w->scratch[i]);
  for (int k = 0; k < MD_MAX_MODEL_INPUTS; k++) {
    free(w->in_x[k]);
    free(w->in_ids[k]);
  }
  free(w->x16);
  for (int i = 0; w->vars16 && i < w->nvars16; i++) free(w->vars16[i].data);
  free(w->vars16);
  free(w);
}

/* Grows the buffers to hold n examples (they never shrink: batches repeat their size). */
static void workspace_reserve(md_workspace *w, const md_model *m, int n) {
  assert(w->nlayers == m->nlayers);
  if (n <= w->cap || m->shapes_only) return;
  for (int l = 0; l < m->nlayers; l++) {
    size_t bytes = sizeof(float) * (size_t)n * m->layers[l].out;
    int separate = m->layers[l].spec.activation != MD_ACT_NONE;
    if (w->a[l] != w->z[l]) free(w->a[l]);
    w->z[l] = base_xrealloc(w->z[l], bytes);
    w->g[l] = base_xrealloc(w->g[l], bytes);
    w->a[l] = separate ? base_xrealloc(NULL, bytes) : w->z[l];
    if (m->layers[l].saved > 0)
      w->saved[l] = base_xrealloc(w->saved[l], sizeof(float) * (size_t)n * m->layers[l].saved);
  }
  for (int i = 0; i < m->nscratch; i++)
    w->scratch[i] = base_xrealloc(w->scratch[i], sizeof(float) * (size_t)n * m->widest);
  md_inputs_reserve(m, w, n);
  if (m->policy != MD_POLICY_FLOAT32) w->x16 = base_xrealloc(w->x16, sizeof(float) * (size_t)n * (m->input_features + 1));
  w->cap = n;
}

/* Mixed policies, numerics on: the values a pass computes with, as Keras casts them. */
static int rounds(const md_model *m) { return m->policy != MD_POLICY_FLOAT32 && !m->shapes_only; }

/* The variables as AutoCastVariables read them in the compute dtype (invariant 7). */
static void refresh_vars16(md_workspace *w, const md_model *m) {
  if (w->vars16 == NULL) {
    w->vars16 = base_xcalloc((size_t)m->nvars, sizeof *w->vars16);
    w->nvars16 = m->nvars;
    for (int i = 0; i < m->nvars; i++) {
      w->vars16[i] = m->vars[i];
      w->vars16[i].data = base_xcalloc(m->vars[i].size, sizeof(float));
    }
  }
  for (int i = 0; i < m->nvars; i++) {
    memcpy(w->vars16[i].data, m->vars[i].data, sizeof(float) * m->vars[i].size);
    md_round_to_policy(m->policy, w->vars16[i].data, m->vars[i].size);
  }
}

/* Rows of the last axis in n examples of layer ly's output: an activation's softmax rows. */
static int activation_rows(const md_layer *ly, int n) {
  return n * (ly->out / ly->out_shape.dim[ly->out_shape.rank - 1]);
}

/* What layer ly's input k reads of the model's inputs (several of them: md_inputs_split's buffers;
** one: x0 or the batch's ids). */
static const float *model_input_x(const md_model *m, const md_workspace *w, const md_layer *ly, int k,
                                  const float *x0) {
  return m->ninputs > 0 && !m->shapes_only ? w->in_x[MD_MODEL_INPUT(ly->input[k])] : x0;
}

/* Layer l's run over batch b: each input is the batch or an earlier layer's a. */
static md_layer_run layer_run(md_model *m, md_workspace *w, const md_batch *b, int l, int training) {
  const md_layer *ly = &m->layers[l];
  int autocast = rounds(m) && !ly->ops->float32_variables;
  const float *x0 = rounds(m) && b->x != NULL ? w->x16 : b->x;
  md_layer_run r = {.n = b->n, .vars = autocast ? w->vars16 : m->vars, .state = training ? m->vars : NULL,
                    .ids = b->ids, .z = w->z[l], .saved = w->saved[l], .training = training, .rng = w->rng, .draw = w->draw,
                    .has_dx = ly->input[0] >= 0, .act_bytes = m->act_bytes, .kept = w->kept[l],
                    .shapes_only = m->shapes_only,
                    .all_reduce = training ? w->all_reduce : NULL, .all_reduce_ctx = w->all_reduce_ctx};
  for (int k = 0; k < ly->ninputs; k++) r.xs[k] = ly->input[k] < 0 ? model_input_x(m, w, ly, k, x0) : w->a[ly->input[k]];
  r.x = r.xs[0];
  if (m->ninputs > 0 && ly->ops->reads_ids && !m->shapes_only) r.ids = w->in_ids[MD_MODEL_INPUT(ly->input[0])];
  return r;
}

static void forward(md_model *m, md_workspace *w, const md_batch *b, int training, md_cost *cost) {
  workspace_reserve(w, m, b->n);
  if (m->ninputs > 0 && !m->shapes_only) md_inputs_split(m, w, b);
  if (rounds(m)) {
    refresh_vars16(w, m);
    if (b->x != NULL && m->ninputs == 0) {
      size_t inputs = (size_t)b->n * m->input_features;
      memcpy(w->x16, b->x, sizeof(float) * inputs);
      md_round_to_policy(m->policy, w->x16, inputs);
    }
  }
  for (int l = 0; l < m->nlayers; l++) {
    const md_layer *ly = &m->layers[l];
    md_layer_run r = layer_run(m, w, b, l, training);
    size_t outputs = (size_t)b->n * ly->out;
    if (!m->shapes_only) ly->ops->forward(ly, &r);
    if (rounds(m)) md_round_to_policy(m->policy, w->z[l], outputs);
    md_op_log_at(cost, MD_PHASE_FORWARD, l, -1);
    ly->ops->cost(ly, &r, MD_PASS_FORWARD, cost);
    md_activation_forward(ly->spec.activation, activation_rows(ly, b->n),
                          ly->out_shape.dim[ly->out_shape.rank - 1], w->z[l], w->a[l], m->act_bytes, cost);
    if (rounds(m) && w->a[l] != w->z[l]) md_round_to_policy(m->policy, w->a[l], outputs);
  }
}

/* Sum of the per-example losses (double); with grad also d = scale * dloss/d(output read),
** where the output read is the last layer's z under act_logits and its a otherwise (d is
** NULL in a shapes-only model, which still counts the gradient's cost). */
static double losses(const md_model *m, md_workspace *w, const md_batch *b, float scale, int grad,
                     float *d, md_cost *cost) {
  int last = m->nlayers - 1, c = m->layers[last].out;
  const float *out = m->act_logits ? w->z[last] : w->a[last];
  int logits = m->from_logits || m->act_logits;
  int sparse = m->loss == MD_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
  /* A sequence output [positions, classes] with a label per position: the example's loss is the
  ** mean over its positions, so the batch's is the mean over every token, as Keras's
  ** SUM_OVER_BATCH_SIZE gives for labels [batch, positions]. */
  int positions = sparse ? md_model_label_positions(m) : 1, classes = c / positions;
  float position_scale = scale / (float)positions;
  double sum = 0;
  for (int i = 0; out != NULL && i < b->n; i++) {
    const float *oi = out + (size_t)i * c;
    float *di = d != NULL ? d + (size_t)i * c : NULL;
    if (!sparse) {
      sum += md_loss_dense(m->loss, logits, oi, b->targets + (size_t)i * c, c, scale, di);
      continue;
    }
    double example = 0;
    for (int p = 0; p < positions; p++) {
      int y = b->labels[(size_t)i * positions + p];
      assert(y >= 0 && y < classes);
      const float *op = oi + (size_t)p * classes;
      float *dp = di != NULL ? di + (size_t)p * classes : NULL;
      example += logits ? md_loss_logits(op, classes, y, position_scale, dp)
                        : md_loss_probs(op, classes, y, position_scale, dp);
    }
    sum += positions == 1 ? example : example / positions;
  }
  md_op_log_at(cost, MD_PHASE_LOSS, last, -1);
  md_loss_cost(m->loss, b->n, c, grad, cost);
  return sum;
}

const float *md_model_forward(md_model *m, md_workspace *w, const md_batch *b, md_cost *cost) {
  if (b->n == 0) return NULL;
  forward(m, w, b, 0, cost);
  return md_model_last_output(m, w);
}

const float *md_model_last_output(const md_model *m, const md_workspace *w) { return w->a[m->nlayers - 1]; }

/* The slices buffer of the id-reading layer ly's table grown for n examples (no values when
** shapes only): a row of the table's width per id. */
static void grow_slices(const md_model *m, md_grads *g, int n, const md_layer *ly) {
  int v = MD_LAYER_KERNEL(ly);
  size_t need = (size_t)n * (size_t)ly->in * (size_t)m->vars[v].shape[1];
  if (m->shapes_only || need <= g->slices_cap[v]) return;
  g->slices[v] = base_xrealloc(g->slices[v], sizeof(float) * need);
  g->slices_cap[v] = need;
}

/* Mixed policies: the gradient reaching layer l's op is in the compute dtype (invariant 7); an
** output several layers read gets its sum rounded here too. */
static void round_gradients_in(const md_model *m, md_workspace *w, int n, int l) {
  md_round_to_policy(m->policy, w->g[l], (size_t)n * m->layers[l].out);
}

/* ... and so are the gradients it gives: each input's, and its variables' before Keras casts them
** to float32 (a normalisation layer's are float32 already). */
static void round_gradients_out(const md_model *m, const md_layer_run *r, const md_grads *grads, int l) {
  const md_layer *ly = &m->layers[l];
  for (int k = 0; k < ly->ninputs; k++)
    if (r->dxs[k] != NULL) md_round_to_policy(m->policy, r->dxs[k], (size_t)r->n * (size_t)md_shape_size(&ly->in_shapes[k]));
  for (int k = 0; !ly->ops->float32_variables && k < ly->nvars; k++) {
    int v = ly->var[k];
    if (grads->g[v] != NULL) md_round_to_policy(m->policy, grads->g[v], m->vars[v].size);
    if (md_grads_slices(grads, v) != NULL)
      md_round_to_policy(m->policy, grads->slices[v], (size_t)r->n * ly->in * (size_t)m->vars[v].shape[1]);
  }
}

/* Adds the scratch-written gradients of ly's inputs (dx_adds) into their layers' g, in input
** order: one elementwise add each (invariant 4). */
static void add_gradients(const md_model *m, md_workspace *w, const md_layer *ly, const md_layer_run *r,
                          md_cost *cost) {
  for (int k = 0; k < ly->ninputs; k++) {
    if (!ly->dx_adds[k]) continue;
    size_t count = (size_t)r->n * (size_t)md_shape_size(&ly->in_shapes[k]);
    if (!m->shapes_only) {
      float *g = w->g[ly->input[k]];
      for (size_t i = 0; i < count; i++) g[i] += r->dxs[k][i];
    }
    md_cost_elementwise(cost, m->act_bytes, (double)count, 1, 2);
  }
}

/* A replica with no examples this step (Mirrored's short last batch) still issues its layers'
** all-reduces over the replicas, in a train step's order, adding nothing to them (invariant 10):
** each cross-replica layer's forward in layer order, then the live ones' backward in reverse, on
** its 0 examples, after the gradients were zeroed. */
static void empty_replica_step(md_model *m, md_workspace *w, const md_batch *b, md_grads *grads, md_cost *cost) {
  for (int pass = MD_PASS_FORWARD; pass <= MD_PASS_BACKWARD && w->all_reduce != NULL; pass++)
    for (int k = 0; k < m->nlayers; k++) {
      int l = pass == MD_PASS_FORWARD ? k : m->nlayers - 1 - k;
      const md_layer *ly = &m->layers[l];
      if (!ly->cross_replica || (pass == MD_PASS_BACKWARD && !ly->live)) continue;
      md_layer_run r = layer_run(m, w, b, l, 1);
      r.grads = grads;
      if (!m->shapes_only) (pass == MD_PASS_FORWARD ? ly->ops->forward : ly->ops->backward)(ly, &r);
      md_op_log_at(cost, pass == MD_PASS_FORWARD ? MD_PHASE_FORWARD : MD_PHASE_BACKWARD, l, -1);
      ly->ops->cost(ly, &r, (md_pass)pass, cost);
    }
}

int md_model_cross_replica(const md_model *m) {
  for (int l = 0; l < m->nlayers; l++)
    if (m->layers[l].cross_replica) return 1;
  return 0;
}

/* The forward of layer l again, for its backward (invariant 8): the same values as the first
** pass, so only its ops are charged (no collective: the first pass's statistics are reused). */
static void remat_layer(md_model *m, md_workspace *w, const md_batch *b, int l, md_cost *cost) {
  const md_layer *ly = &m->layers[l];
  md_layer_run again = layer_run(m, w, b, l, 1);
  again.all_reduce = NULL;
  md_op_log_at(cost, MD_PHASE_REMAT, l, -1);
  ly->ops->cost(ly, &again, MD_PASS_FORWARD, cost);
  md_activation_forward(ly->spec.activation, activation_rows(ly, b->n), ly->out_shape.dim[ly->out_shape.rank - 1],
                        NULL, NULL, m->act_bytes, cost);
}

void md_model_train_step(md_model *m, md_workspace *w, const md_batch *b, float scale,
                         md_grads *grads, double *loss_sum, md_cost *cost) {
  assert(grads->nvars == m->nvars);
  if (b->n == 0) {
    for (int i = 0; i < m->nvars; i++)
      if (grads->g[i] != NULL) memset(grads->g[i], 0, sizeof(float) * m->vars[i].size);
    if (loss_sum != NULL) *loss_sum = 0;
    empty_replica_step(m, w, b, grads, cost);
    for (int l = 0; l <= m->nlayers; l++) mark(w, cost, l);
    w->draw++;  /* Keras draws a seed for an empty batch too */
    return;
  }
  forward(m, w, b, 1, cost);
  double sum = losses(m, w, b, scale, 1, w->g[m->nlayers - 1], cost);
  mark(w, cost, m->nlayers);
  for (int l = m->nlayers - 1; l >= 0; l--) {
    const md_layer *ly = &m->layers[l];
    if (!ly->live) {
      for (int k = 0; k < ly->nvars; k++)
        if (grads->g[ly->var[k]] != NULL) memset(grads->g[ly->var[k]], 0, sizeof(float) * m->vars[ly->var[k]].size);
      mark(w, cost, l);
      continue;
    }
    md_layer_run r = layer_run(m, w, b, l, 1);
    if (m->rematerialize == MD_REMAT_BLOCKS && ly->cuts) {  /* the block ending here, from its input */
      int first = l;
      while (first > 0 && !m->layers[first - 1].cuts) first--;
      for (int j = first; j <= l; j++)
        if (m->layers[j].live) remat_layer(m, w, b, j, cost);
    } else if (m->rematerialize == 1) {
      remat_layer(m, w, b, l, cost);
    }
    md_op_log_at(cost, MD_PHASE_BACKWARD, l, -1);
    /* Under act_logits the loss already differentiated with respect to z. */
    if (!(l == m->nlayers - 1 && m->act_logits))
      md_activation_backward(ly->spec.activation, activation_rows(ly, b->n),
                             ly->out_shape.dim[ly->out_shape.rank - 1], w->z[l], w->a[l], w->g[l],
                             m->act_bytes, cost);
    if (ly->nvars > 0 && grads->table[MD_LAYER_KERNEL(ly)]) grow_slices(m, grads, b->n, ly);
    r.dz = w->g[l];
    for (int k = 0, s = 0; k < ly->ninputs; k++)
      if (ly->input[k] >= 0) r.dxs[k] = ly->dx_adds[k] ? w->scratch[s++] : w->g[ly->input[k]];
    r.dx = r.dxs[0];
    r.grads = grads;
    if (rounds(m)) round_gradients_in(m, w, b->n, l);
    if (!m->shapes_only) ly->ops->backward(ly, &r);
    if (rounds(m)) round_gradients_out(m, &r, grads, l);
    ly->ops->cost(ly, &r, MD_PASS_BACKWARD, cost);
    add_gradients(m, w, ly, &r, cost);
    mark(w, cost, l);
  }
  if (loss_sum != NULL) *loss_sum = sum;
  md_cost kept = {.flops = 0, .bytes_moved = 0, .bytes_resident = md_model_activation_bytes(m, b->n)};
  md_cost_add(cost, &kept);
  w->draw++;
}

double md_model_loss(md_model *m, md_workspace *w, const md_batch *b, md_cost *cost) {
  if (b->n == 0) return 0;
  forward(m, w, b, 0, cost);
  return losses(m, w, b, 1.0f, 0, NULL, cost);
}

/* The one layer reading layer l's output, reading nothing else; -1 when there is none. */
static int sole_reader(const md_model *m, int l) {
  if (m->layers[l].readers != 1) return -1;
  for (int j = l + 1; j < m->nlayers; j++) {
    const md_layer *r = &m->layers[j];
    for (int k = 0; k < r->ninputs; k++)
      if (r->input[k] == l) return r->ninputs == 1 && r->live ? j : -1;
  }
  return -1;
}

static unsigned split_vars(const md_layer *l, md_split_way way) {
  return l->ops->split ? l->ops->split(l, way) : 0u;
}

/* Adds a collective of `elements` per example to a layer's list. */
static void collective(md_tp_layer *t, int pass, int gather, double elements) {
  t->coll[t->ncoll++] = (md_tp_collective){pass, gather, elements};
}

void md_model_tensor_parallel_layers(const md_model *m, int devices, md_tp_layer *out) {
  assert(devices >= 1);
  int *way = base_xcalloc((size_t)m->nlayers + 1, sizeof *way), *paired = base_xcalloc((size_t)m->nlayers + 1, sizeof *paired);
  for (int l = 0; l < m->nlayers; l++) way[l] = devices > 1 ? -1 : MD_SPLIT_WAYS;  /* -1: not chosen */
  for (int l = 0; l < m->nlayers; l++) {
    const md_layer *ly = &m->layers[l];
    md_tp_layer *t = &out[l];
    memset(t, 0, sizeof *t);
    if (way[l] < 0) {
      int reader = sole_reader(m, l);
      way[l] = split_vars(ly, MD_SPLIT_HEADS) ? MD_SPLIT_HEADS
               : split_vars(ly, MD_SPLIT_COLUMNS) ? MD_SPLIT_COLUMNS
               : split_vars(ly, MD_SPLIT_ROWS) ? MD_SPLIT_ROWS : MD_SPLIT_WAYS;
      if (way[l] == MD_SPLIT_COLUMNS && reader >= 0 && split_vars(&m->layers[reader], MD_SPLIT_ROWS)) {
        way[reader] = MD_SPLIT_ROWS;
        paired[l] = paired[reader] = 1;
      }
    }
    t->split = way[l] < MD_SPLIT_WAYS ? split_vars(ly, (md_split_way)way[l]) : 0u;
    t->in = ly->in;
    t->out = ly->out;
    if (t->split == 0) continue;
    int has_dx = ly->input[0] >= 0, last = l == m->nlayers - 1;
    double in = ly->in, out_el = ly->out;
    if (way[l] == MD_SPLIT_HEADS || way[l] == MD_SPLIT_ROWS) collective(t, 0, 0, out_el);
    for (int k = 0; k < 3 && way[l] == MD_SPLIT_COLUMNS && !paired[l] && last; k++)
      collective(t, 0, 0, out_el / ly->out_shape.dim[ly->out_shape.rank - 1]);
    if (way[l] == MD_SPLIT_COLUMNS && !paired[l] && !last) collective(t, 0, 1, out_el);
    if (!has_dx) continue;
    if (way[l] == MD_SPLIT_HEADS || way[l] == MD_SPLIT_COLUMNS) collective(t, 1, 0, in);
    if (way[l] == MD_SPLIT_ROWS && !paired[l]) collective(t, 1, 1, in);
  }
  free(way);
  free(paired);
}

void md_model_tensor_parallel(const md_model *m, int devices, md_tensor_parallel *tp) {
  memset(tp, 0, sizeof *tp);
  md_tp_layer *layers = base_xcalloc((size_t)m->nlayers + 1, sizeof *layers);
  md_model_tensor_parallel_layers(m, devices, layers);
  for (int l = 0; l < m->nlayers; l++) {
    const md_layer *ly = &m->layers[l];
    const md_tp_layer *t = &layers[l];
    for (int k = 0; k < ly->nvars; k++) {
      double size = (double)m->vars[ly->var[k]].size;
      tp->floats_per_device += (t->split >> k & 1u) ? size / devices : size;
    }
    if (t->split == 0) continue;
    tp->split_layers++;
    for (int k = 0; k < t->ncoll; k++) {
      const md_tp_collective *c = &t->coll[k];
      int *count = c->gather ? tp->all_gathers : tp->all_reduces;
      double *bytes = c->gather ? tp->all_gather_bytes : tp->all_reduce_bytes;
      count[c->pass]++;
      bytes[c->pass] += c->elements * m->act_bytes;
    }
  }
  free(layers);
}

/* The input batch (float32 features or int32 ids, as the dataset gives them) plus every layer's
** z, its a when an activation makes it a second array, what it saves for its backward (dropout's
** mask) and, for an output several layers read, its gradient, summed over the backward from its
** last reader to its first (a Sequential model holds none: each gradient is consumed by the
** layer before as soon as it is written); all but the input in the policy's compute dtype.
** Rematerialised, a layer keeps its output (a) alone through the step: its z, saved
** intermediates and summed gradient exist for one layer at a time, the largest counted. */
double md_model_layer_saved_bytes(const md_model *m, int l, int n) {
  const md_layer *ly = &m->layers[l];
  double separate = ly->spec.activation != MD_ACT_NONE;
  return m->act_bytes * (double)n * ((double)ly->out * separate + (double)ly->saved);
}

/* An activation function whose derivative is a function of its output (relu's mask, sigmoid's
** y(1 - y), tanh's 1 - y^2, softmax's Jacobian); gelu and swish need their input. */
static int derivative_of_output(md_activation a) {
  return a == MD_ACT_RELU || a == MD_ACT_SIGMOID || a == MD_ACT_TANH || a == MD_ACT_SOFTMAX;
}

int md_model_layer_backward_reads(const md_model *m, int l) {
  const md_layer_spec *ly = &m->layers[l].spec;
  switch (ly->kind) {
  case MD_LAYER_ACTIVATION:  /* its z is its input: nothing saved beside */
    return derivative_of_output(ly->activation) ? MD_BACKWARD_READS_OUTPUT : MD_BACKWARD_READS_INPUTS;
  case MD_LAYER_SOFTMAX: return MD_BACKWARD_READS_OUTPUT;
  case MD_LAYER_BATCH_NORMALIZATION:
  case MD_LAYER_LAYER_NORMALIZATION:  /* the input and its statistics, not the output */
    return MD_BACKWARD_READS_INPUTS | MD_BACKWARD_READS_SAVED;
  case MD_LAYER_ADD:
  case MD_LAYER_CONCATENATE:
  case MD_LAYER_FLATTEN:
  case MD_LAYER_RESHAPE:
  case MD_LAYER_AVERAGE_POOLING2D:
  case MD_LAYER_GLOBAL_AVERAGE_POOLING2D:  /* linear in their input, shapes alone */
    return 0;
  case MD_LAYER_DROPOUT: return MD_BACKWARD_READS_SAVED;  /* the mask */
  case MD_LAYER_DENSE:
  case MD_LAYER_CONV2D:
  case MD_LAYER_DEPTHWISE_CONV2D:  /* the input for the kernel's gradient; z or a for the activation's */
    if (ly->activation == MD_ACT_NONE) return MD_BACKWARD_READS_INPUTS | MD_BACKWARD_READS_SAVED;
    return MD_BACKWARD_READS_INPUTS | (derivative_of_output(ly->activation) ? MD_BACKWARD_READS_OUTPUT
                                                                             : MD_BACKWARD_READS_SAVED);
  default:
    return MD_BACKWARD_READS_INPUTS | MD_BACKWARD_READS_OUTPUT | MD_BACKWARD_READS_SAVED;
  }
}

double md_model_activation_bytes(const md_model *m, int n) {
  double inputs = (double)n * (m->input_features + m->input_ids), elements = 0, transient = 0, block = 0;
  for (int l = 0; l < m->nlayers; l++) {
    const md_layer *ly = &m->layers[l];
    double out = (double)n * ly->out;
    double intermediates = md_model_layer_saved_bytes(m, l, n) / m->act_bytes + out * (ly->readers > 1);
    if (!m->rematerialize) {
      elements += out + intermediates;
      continue;
    }
    if (m->rematerialize == MD_REMAT_BLOCKS) {  /* a block's outputs and intermediates at once */
      block += out + intermediates;
      if (block > transient) transient = block;
      if (!ly->cuts) continue;
      block = 0;
      elements += out;
      continue;
    }
    elements += out;
    if (intermediates > transient) transient = intermediates;
  }
  return 4.0 * inputs + m->act_bytes * (elements + transient);
}

/* Layer l's table, when it looks the batch's ids up: its first variable; -1 otherwise. */
static int table_of(const md_model *m, int l) {
  const md_layer *ly = &m->layers[l];
  return ly->ops->reads_ids && ly->nvars > 0 ? MD_LAYER_KERNEL(ly) : -1;
}

static md_grads *grads_new(const md_model *m, int slices_only) {
  md_grads *g = base_xrealloc(NULL, sizeof *g);
  g->nvars = m->nvars;
  g->g = base_xcalloc((size_t)m->nvars + 1, sizeof *g->g);
  g->table = base_xcalloc((size_t)m->nvars + 1, sizeof *g->table);
  g->slices = base_xcalloc((size_t)m->nvars + 1, sizeof *g->slices);
  g->slices_cap = base_xcalloc((size_t)m->nvars + 1, sizeof *g->slices_cap);
  g->ntables = 0;
  for (int l = 0; l < m->nlayers; l++)
    if (table_of(m, l) >= 0 && !g->table[table_of(m, l)]) {
      g->table[table_of(m, l)] = 1;
      g->ntables++;
    }
  g->slices_only = slices_only && g->ntables > 0;
  for (int i = 0; i < m->nvars; i++) {
    if (m->shapes_only || (g->slices_only && g->table[i])) continue;
    g->g[i] = base_xrealloc(NULL, sizeof(float) * m->vars[i].size);
    memset(g->g[i], 0, sizeof(float) * m->vars[i].size);
  }
  return g;
}

md_grads *md_grads_new(const md_model *m) { return grads_new(m, 0); }

md_grads *md_grads_new_slices(const md_model *m) { return grads_new(m, 1); }

void md_grads_free(md_grads *g) {
  if (g == NULL) return;
  for (int i = 0; i < g->nvars; i++) {
    free(g->g[i]);
    free(g->slices[i]);
  }
  free(g->g);
  free(g->table);
  free(g->slices);
  free(g->slices_cap);
  free(g);
}

float *md_grads_slices(const md_grads *g, int v) { return g->table[v] ? g->slices[v] : NULL; }
int md_grads_sparse(const md_grads *g, int v) { return g->slices_only && g->table[v]; }

/* The layer whose table variable v is, -1 when none. */
static int layer_of_table(const md_model *m, int v) {
  for (int l = 0; l < m->nlayers; l++)
    if (table_of(m, l) == v) return l;
  return -1;
}

int md_model_table_ids_per_example(const md_model *m, int v) {
  int l = layer_of_table(m, v);
  return l < 0 ? 0 : m->layers[l].in;
}

int md_model_var_cast(const md_model *m, int v) {
  if (layer_of_table(m, v) >= 0) return 0;
  for (int l = 0; l < m->nlayers; l++) {
    int first = md_model_layer_first_var(m, l);
    if (v >= first && v < first + m->layers[l].nvars) return !m->layers[l].ops->float32_variables;
  }
  return 1;
}

size_t md_model_table_ids(const md_model *m, int v, const md_batch *b, int64_t *out) {
  int l = layer_of_table(m, v);
  if (l < 0) return 0;
  size_t per = (size_t)m->layers[l].in, count = (size_t)b->n * per;
  if (m->ninputs == 0) { /* the one id input, the first layer's */
    for (size_t j = 0; j < count; j++) out[j] = b->ids != NULL ? b->ids[j] : 0;
    return count;
  }
  /* Input k's columns of each example's row of x, the ids as floats (models/inputs.c). */
  int k = MD_MODEL_INPUT(m->layers[l].input[0]), col = 0, width = md_inputs_width(m->inputs, m->ninputs);
  for (int j = 0; j < k; j++) col += m->inputs[j].features + m->inputs[j].ids;
  for (int i = 0; i < b->n; i++)
    for (size_t j = 0; j < per; j++)
      out[(size_t)i * per + j] = b->x != NULL ? (int64_t)b->x[(size_t)i * width + col + j] : 0;
  return count;
}
