/*
** shard_tensor_parallel.c: Megatron-LM's tensor parallelism over the mesh's model axis, on TPUs
** and GPUs alike, alone or with the data axis's ZeRO-3 (keras.distribution.ModelParallel with a
** LayoutMap sharding kernels over `model`, and MaxText's fsdp x tensor meshes):
**   tensor_parallel    the layers models/ splits (md_model_tensor_parallel_layers: an MLP's first
**                      kernel on its columns and the second on its rows, attention by its heads,
**                      embeddings by their rows) hold 1/m of those variables, their slots and
**                      gradients, and do 1/m of their passes' work; their activation collectives
**                      (an all-reduce of a partial output, an all-gather of a split one, and the
**                      backward's of the input gradient) run over the model axis. The gradients
**                      are then all-reduced over the data axis, each its per-device part.
**   sequence_parallel  Megatron's sequence parallelism on top: each activation all-reduce becomes
**                      a reduce-scatter and an all-gather (the same bytes on a ring), and the
**                      layers between (normalisations, dropout, residual adds) work on 1/m of the
**                      sequence, their activations 1/m. The all-gather follows the reduce-scatter
**                      at once here, where Megatron issues it before the next split layer: the
**                      bytes are the same, the overlap a little less.
**   fsdp_tp            tensor_parallel over the model axis, ZeRO-3 over the data axis on each
**                      model shard (shard_zero.c), in place of the gradients' all-reduce.
**   fsdp_sp            fsdp_tp with sequence parallelism: the residual stream's activations
**                      1/m on each device of the model axis too, as large decoders are trained
**                      (PaLM's 2-D layout shards them over its model axis; Megatron-LM's
**                      --sequence-parallel with ZeRO-3).
**   hybrid_fsdp_sp     fsdp_sp on a mesh {data, fsdp, model}: ZeRO-3 over the fsdp axis (within a
**                      slice), each gradient shard then all-reduced over the data axis (across
**                      slices, over DCN), as hybrid_fsdp does (shard_zero.c): PaLM's two pods,
**                      each 12-way model parallel x 256-way FSDP, data parallel over DCN
**                      (arXiv 2204.02311 section 4); MaxText's ici_tensor x ici_fsdp under
**                      dcn_data. On D x F x M devices, W the trainable weights' bytes: the model
**                      axis moves what fsdp_sp's does; the fsdp axis all-gathers 2 W / M and
**                      reduce-scatters W / M (each a 1/M model shard's); the data axis all-reduces
**                      W / (M F), a device's shard of its shard (docs/strategies.md).
** The trace is the model group's batch (cg_options.model_axis), so a replicated op's work is the
** examples each device of the group really runs.
*/
#include "compile/compileInt.h"

/* Divides op i's work by m: its FLOPs, bytes (a row reduction's reads too) and its matmul's output
** columns. */
static void split_op(cg_op *op, int m) {
  op->flops /= m;
  op->bytes /= m;
  op->row_reads /= m;
  if (op->matmul.batch > 0) op->matmul.n /= m;
}

static int in_pass(const cg_op *op) {
  return op->phase == MD_PHASE_FORWARD || op->phase == MD_PHASE_REMAT || op->phase == MD_PHASE_BACKWARD;
}

/* The layer's activation (pass 0) or the gradient its backward gives its first input (pass 1). */
static int pass_tensor(const cg_graph *g, int l, int pass) {
  for (size_t i = 0; i < g->ntensors; i++) {
    const cg_tensor *t = &g->tensors[i];
    if (t->producer < 0 || t->producer >= (int)g->traced) continue;
    const cg_op *p = &g->ops[t->producer];
    if (pass == 0 && t->kind == CG_TENSOR_ACTIVATION && t->layer == l && p->layer == l) return (int)i;
    if (pass == 1 && t->kind == CG_TENSOR_GRADIENT && t->layer != l && p->layer == l && p->phase == MD_PHASE_BACKWARD)
      return (int)i;
  }
  return -1;
}

/* A collective of `elements` per example that is not the whole tensor t (a softmax's per-row
** statistics): a side buffer its producer writes, of t's bytes scaled to those elements. */
static int side_buffer(cg_graph *g, int t, double elements, double whole) {
  int s = cg__tensor_new(g, CG_TENSOR_TEMP, g->tensors[t].bytes * elements / whole, g->tensors[t].layer, -1);
  cg__op_write(g, g->tensors[t].producer, s);
  return s;
}

/* Layer l split over m devices: its variables, its work, and its activation collectives. */
static void split_layer(cg_graph *g, int l, int m, int sequence) {
  const md_tp_layer *tp = &g->tp[l];
  for (int k = 0; k < 32; k++) {
    if (!(tp->split >> k & 1u)) continue;
    int v = g->first_var[l] + k, gr = cg__grad_of(g, v);
    cg__shard_slots(g, v, m);
    cg__shard_weight(g, v, m);
    if (gr >= 0) g->tensors[gr].bytes /= m;
  }
  int forward_colls = 0;
  for (int k = 0; k < tp->ncoll; k++) forward_colls += tp->coll[k].pass == 0;
  for (size_t i = 0; i < g->traced; i++)
    if (g->ops[i].layer == l && in_pass(&g->ops[i])) split_op(&g->ops[i], m);
  for (size_t i = 0; i < g->ntensors; i++) {
    cg_tensor *t = &g->tensors[i];
    /* its intermediates are split; with no forward collective its output is too (a column split
    ** whose reader splits on its rows), and so the gradient of that output */
    int output = (t->kind == CG_TENSOR_ACTIVATION || t->kind == CG_TENSOR_GRADIENT) && forward_colls == 0;
    if (t->layer == l && (t->kind == CG_TENSOR_TEMP || output)) t->bytes /= m;
  }
  for (int k = 0; k < tp->ncoll; k++) {
    const md_tp_collective *c = &tp->coll[k];
    int t = pass_tensor(g, l, c->pass);
    if (t < 0) continue;
    double whole = c->pass == 0 ? tp->out : tp->in;
    md_phase phase = c->pass == 0 ? MD_PHASE_FORWARD : MD_PHASE_BACKWARD;
    if (c->elements != whole) t = side_buffer(g, t, c->elements, whole);
    if (c->gather) {  /* the split part in, the whole out */
      g->tensors[t].bytes /= m;
      cg__collective(g, CG_OP_ALL_GATHER, t, CG_AXIS_MODEL, m, phase, NULL);
    } else if (sequence) {
      int shard = cg__collective(g, CG_OP_REDUCE_SCATTER, t, CG_AXIS_MODEL, m, phase, NULL);
      cg__collective(g, CG_OP_ALL_GATHER, shard, CG_AXIS_MODEL, m, phase, NULL);
    } else {
      cg__collective(g, CG_OP_ALL_REDUCE, t, CG_AXIS_MODEL, m, phase, NULL);
    }
  }
}

/* Whether a collective reads tensor t (a partial whole: it stays whole). */
static int feeds_collective(const cg_graph *g, const cg_tensor *t) {
  for (int k = 0; k < t->nconsumers; k++)
    if (!cg__is_compute(&g->ops[t->consumers[k]])) return 1;
  return 0;
}

/* Sequence parallelism: a layer that does not split works on 1/m of the sequence, its traced
** tensors (the first `traced` of the graph's) 1/m but for a partial whole a collective reads. */
static void sequence_layer(cg_graph *g, int l, int m, size_t traced) {
  for (size_t i = 0; i < g->traced; i++)
    if (g->ops[i].layer == l && in_pass(&g->ops[i])) split_op(&g->ops[i], m);
  for (size_t i = 0; i < traced; i++) {
    cg_tensor *t = &g->tensors[i];
    if (t->layer == l && t->var < 0 && t->kind != CG_TENSOR_INPUT && !feeds_collective(g, t)) t->bytes /= m;
  }
}

/* Tensor (and sequence) parallelism over the model axis; 0 when the axis has one device. */
static int split_model(cg_graph *g, const cg_options *o, int sequence) {
  int m = cg__model_axis(o);
  if (o->replicas < 2) return 0;
  cg__batch_layout(g);
  if (m < 2) return 0;
  size_t traced = g->ntensors;  /* the collectives' whole sizes come from the tensors as traced */
  for (int l = 0; l < g->nlayers; l++)
    if (g->tp[l].split) split_layer(g, l, m, sequence);
  for (int l = 0; l < g->nlayers && sequence; l++)
    if (!g->tp[l].split) sequence_layer(g, l, m, traced);
  return 1;
}

static void tensor_recipe(cg_graph *g, const cg_options *o, int sequence) {
  if (o->replicas < 2) return;
  split_model(g, o, sequence);
  int d = cg__data_axis(o);
  if (d < 2) return;
  size_t n = g->ntensors;
  for (size_t i = 0; i < n; i++)
    if (g->tensors[i].kind == CG_TENSOR_WEIGHT_GRAD && g->tensors[i].shard == CG_SHARD_PARTIAL &&
        g->tensors[i].producer >= 0 && g->tensors[i].producer < (int)g->traced)
      cg__collective(g, CG_OP_ALL_REDUCE, (int)i, CG_AXIS_DATA, d, MD_PHASE_BACKWARD, NULL);
}

static void tensor_parallel(cg_graph *g, const cg_options *o) { tensor_recipe(g, o, 0); }
static void sequence_parallel(cg_graph *g, const cg_options *o) { tensor_recipe(g, o, 1); }

/* ZeRO-3 over `axis` (d devices) on each model shard, after tensor (sequence: and sequence)
** parallelism; outer > 1: each gradient shard then all-reduced over the data axis's outer. */
static void fsdp_model(cg_graph *g, const cg_options *o, int sequence, cg_axis axis, int d, int outer) {
  if (o->replicas < 2) return;
  split_model(g, o, sequence);
  cg__zero(g, 3, axis, d, outer);
}

static void fsdp_tp(cg_graph *g, const cg_options *o) { fsdp_model(g, o, 0, CG_AXIS_DATA, cg__data_axis(o), 1); }
static void fsdp_sp(cg_graph *g, const cg_options *o) { fsdp_model(g, o, 1, CG_AXIS_DATA, cg__data_axis(o), 1); }
/* the fsdp axis within a slice, the data axis across */
static void hybrid_fsdp_sp(cg_graph *g, const cg_options *o) {
  fsdp_model(g, o, 1, CG_AXIS_FSDP, cg__fsdp_axis(o), cg__data_axis(o));
}

const cg_sharding_recipe cg_shard_tensor_parallel = {"tensor_parallel", tensor_parallel, 1u << CG_AXIS_DATA};
const cg_sharding_recipe cg_shard_sequence_parallel = {"sequence_parallel", sequence_parallel, 1u << CG_AXIS_DATA};
const cg_sharding_recipe cg_shard_fsdp_tp = {"fsdp_tp", fsdp_tp, 1u << CG_AXIS_DATA};
const cg_sharding_recipe cg_shard_fsdp_sp = {"fsdp_sp", fsdp_sp, 1u << CG_AXIS_DATA};
const cg_sharding_recipe cg_shard_hybrid_fsdp_sp = {"hybrid_fsdp_sp", hybrid_fsdp_sp,
                                                   1u << CG_AXIS_DATA | 1u << CG_AXIS_FSDP};
