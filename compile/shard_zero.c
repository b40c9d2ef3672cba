/*
** shard_zero.c: ZeRO's stages over the mesh's data axis (DeepSpeed's ZeRO-1, ZeRO-2 and ZeRO-3,
** which PyTorch calls FSDP and MaxText its `fsdp` axis). The batch splits over the data axis as
** with data parallelism; what each device of the axis holds of a trainable variable then is:
**   zero1  the whole weight and gradient, 1/d of the optimizer slots: after the backward the
**          gradients are reduce-scattered (each device its summed 1/d), each device updates its
**          shard, and the updated shards are all-gathered into every device's weight;
**   zero2  as zero1, but each gradient is reduce-scattered as soon as the backward produced it,
**          so the whole gradient lives only until then (ZeRO-2 partitions the gradients);
**   fsdp   1/d of the weight too (ZeRO-3): a layer's weight is all-gathered before its forward
**          and again before its backward (one layer ahead: schedule.c's prefetch), freed after
**          each, its gradient reduce-scattered and the shard updated in place.
** Per step on d devices, with W the trainable weights' bytes: zero1 and zero2 reduce-scatter W
** and all-gather W (a ring sends 2 (d - 1) / d W, data parallelism's all-reduce's bytes); fsdp
** all-gathers 2 W and reduce-scatters W (3 (d - 1) / d W). Variables that do not train (batch
** normalisation's moving statistics) stay replicated. One device along the axis: nothing splits.
**   hybrid_fsdp  ZeRO-3 over the mesh's model axis (within a slice, or a GPU VM's NVLink domain),
**          the data axis's replicas of it all-reducing each reduce-scattered gradient shard: PyTorch
**          FSDP's HYBRID_SHARD, MaxText's ici_fsdp_parallelism under dcn_data_parallelism. On a
**          mesh of D x F: all-gather 2 W and reduce-scatter W over the F devices of a line, and
**          all-reduce W / F over the D lines, so only the shards' all-reduce crosses DCN.
*/
#include "compile/compileInt.h"

static int forward_use(const cg_op *r) { return r->phase == MD_PHASE_FORWARD; }
static int backward_use(const cg_op *r) { return r->phase == MD_PHASE_REMAT || r->phase == MD_PHASE_BACKWARD; }

/* The last update op of variable v: it writes v's new value. */
static int update_of(const cg_graph *g, int v) {
  int last = -1;
  for (size_t i = 0; i < g->traced; i++)
    if (g->ops[i].phase == MD_PHASE_OPTIMIZER && g->ops[i].var == v) last = (int)i;
  return last;
}

/* Whether some reader of tensor t is one `uses` picks. */
static int read_by(const cg_graph *g, int t, int (*uses)(const cg_op *r)) {
  for (int k = 0; k < g->tensors[t].nconsumers; k++)
    if (uses(&g->ops[g->tensors[t].consumers[k]])) return 1;
  return 0;
}

/* Stage 1, 2 or 3 over `axis` (d devices; the batch layout is set); outer > 1: each gradient
** shard then all-reduced over the data axis's outer devices. */
void cg__zero(cg_graph *g, int stage, cg_axis axis, int d, int outer) {
  if (d < 2) return;
  for (int v = 0; v < g->nvars; v++) {
    int w = cg__weight_of(g, v), gr = cg__grad_of(g, v);
    if (w < 0 || gr < 0 || !g->trainable[v] || g->tensors[gr].shard != CG_SHARD_PARTIAL) continue;
    cg__shard_slots(g, v, d);
    if (stage == 3) {
      cg__shard_weight(g, v, d);
      if (read_by(g, w, forward_use)) cg__collective(g, CG_OP_ALL_GATHER, w, axis, d, MD_PHASE_FORWARD, forward_use);
      if (read_by(g, w, backward_use)) cg__collective(g, CG_OP_ALL_GATHER, w, axis, d, MD_PHASE_BACKWARD, backward_use);
    }
    md_phase phase = stage == 1 ? MD_PHASE_OPTIMIZER : MD_PHASE_BACKWARD;
    int shard = cg__collective(g, CG_OP_REDUCE_SCATTER, gr, axis, d, phase, NULL);
    if (outer > 1) cg__collective(g, CG_OP_ALL_REDUCE, shard, CG_AXIS_DATA, outer, phase, NULL);
    int up = update_of(g, v);
    if (stage == 3 || up < 0) continue;
    /* the updated shard, gathered in place into every device's weight (persistent already) */
    int updated = cg__tensor_new(g, CG_TENSOR_TEMP, g->tensors[w].bytes / d, g->tensors[w].layer, v);
    cg__op_write(g, up, updated);
    int whole = cg__collective(g, CG_OP_ALL_GATHER, updated, axis, d, MD_PHASE_OPTIMIZER, NULL);
    g->tensors[whole].kind = CG_TENSOR_WEIGHT;
  }
}

static void zero_recipe(cg_graph *g, const cg_options *o, int stage) {
  if (cg__data_axis(o) < 2) return;
  cg__batch_layout(g);
  cg__zero(g, stage, CG_AXIS_DATA, cg__data_axis(o), 1);
}

static void zero1(cg_graph *g, const cg_options *o) { zero_recipe(g, o, 1); }
static void zero2(cg_graph *g, const cg_options *o) { zero_recipe(g, o, 2); }
static void fsdp(cg_graph *g, const cg_options *o) { zero_recipe(g, o, 3); }

const cg_sharding_recipe cg_shard_zero1 = {"zero1", zero1};
const cg_sharding_recipe cg_shard_zero2 = {"zero2", zero2};
const cg_sharding_recipe cg_shard_fsdp = {"fsdp", fsdp};

/* ZeRO-3 within each line of the model axis (the loader wants 2 devices or more there), replicas
** over the data axis. */
static void hybrid_fsdp(cg_graph *g, const cg_options *o) {
  if (o->replicas < 2) return;
  cg__batch_layout(g);
  cg__zero(g, 3, CG_AXIS_MODEL, cg__model_axis(o), cg__data_axis(o));
}

const cg_sharding_recipe cg_shard_hybrid_fsdp = {"hybrid_fsdp", hybrid_fsdp};
