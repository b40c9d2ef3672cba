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
**
** Under a mixed policy (compute_bytes 2) the variables stay float32 and so do their shards, the
** slots and the update, but what crosses the axis is 16-bit, as XLA's SPMD partitioner places
** it: the layers read the variable's cast, an elementwise convert, which runs on the float32
** shard before fsdp's all-gather (jax-ml/jax#25010, a TPU HLO dump: `convert(f32[1024,512])` to
** bf16, then `all-gather(bf16[1024,512])` into bf16[1024,1024]), so the gathered weight is 16-bit;
** a gradient is the weight-gradient product's 16-bit output, reduced where the partitioner puts
** the reduction, on that output, and cast to float32 after (jax-ml/jax#27496: "gradient
** reduction (inserted by partitioner) occurs in half precision; gradients then casted to full
** precision for optimizer step"), so the reduce-scatter moves W / 2 and leaves a float32 shard.
** zero1's and zero2's all-gather of the updated shards stays float32: it fills the replicated
** float32 variable, which is cast where it is read. So fsdp moves 2 W / 2 + W / 2 = 1.5 W with
** bfloat16 compute, zero1 and zero2 W / 2 + W, W the bytes of the variables read as casts. What
** Keras reads in float32 is gathered and reduced in float32: the normalisation layers'
** variables, and an Embedding's table (Keras 3 sets its autocast False and casts the rows it
** takes, so the table its gather reads and the gradient its backward scatters are float32).
**
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

/* The collective that wrote tensor `out` moves its elements in the compute dtype, and tensor
** `narrow` (a gathered whole, or the partial gradient a reduce-scatter reads; -1: none) holds
** them in it, when the variable's layer reads its cast; else (a norm's variable, an id table)
** float32. */
static void in_compute_dtype(cg_graph *g, int out, int narrow) {
  if (!g->cast[g->tensors[out].var]) return;
  double r = g->compute_bytes / 4.0;
  g->ops[g->tensors[out].producer].bytes *= r;
  if (narrow >= 0) g->tensors[narrow].bytes *= r;
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
      for (int pass = 0; pass < 2; pass++) {
        int (*uses)(const cg_op *r) = pass ? backward_use : forward_use;
        if (!read_by(g, w, uses)) continue;
        int whole = cg__collective(g, CG_OP_ALL_GATHER, w, axis, d, pass ? MD_PHASE_BACKWARD : MD_PHASE_FORWARD, uses);
        in_compute_dtype(g, whole, whole);
      }
    }
    md_phase phase = stage == 1 ? MD_PHASE_OPTIMIZER : MD_PHASE_BACKWARD;
    int scattered = cg__collective(g, CG_OP_REDUCE_SCATTER, gr, axis, d, phase, NULL);
    in_compute_dtype(g, scattered, gr);
    if (outer > 1)  /* hybrid: the shard is reduced across the lines in 16 bits too, then cast */
      in_compute_dtype(g, cg__collective(g, CG_OP_ALL_REDUCE, scattered, CG_AXIS_DATA, outer, phase, NULL), -1);
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

const cg_sharding_recipe cg_shard_zero1 = {"zero1", zero1, 1u << CG_AXIS_DATA};
const cg_sharding_recipe cg_shard_zero2 = {"zero2", zero2, 1u << CG_AXIS_DATA};
const cg_sharding_recipe cg_shard_fsdp = {"fsdp", fsdp, 1u << CG_AXIS_DATA};

/* ZeRO-3 within each line of the model axis (the loader wants 2 devices or more there), replicas
** over the data axis. */
static void hybrid_fsdp(cg_graph *g, const cg_options *o) {
  if (o->replicas < 2) return;
  cg__batch_layout(g);
  cg__zero(g, 3, CG_AXIS_MODEL, cg__model_axis(o), cg__data_axis(o));
}

const cg_sharding_recipe cg_shard_hybrid_fsdp = {"hybrid_fsdp", hybrid_fsdp,
                                                   1u << CG_AXIS_DATA | 1u << CG_AXIS_MODEL};
