/*
** dump.c: the compiled step for people and tools (cg_dump_). The text reads like XLA's HLO dumps
** (--xla_dump_to): one instruction a line in schedule order,
**   %name = opcode(%operand, ...), flops=F, bytes=B [, fusion=%root (kind[, multi-output])] [, phase]
** where a name is the layer's name and the op's place in its pass; ops.csv has a row per op with
** the figures a planner sorts by (FLOPs, bytes, seconds, bound by compute or memory).
*/
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

#include "compile/compileInt.h"

static const char *const PHASES[MD_PHASE_COUNT] = {"forward", "loss", "remat", "backward", "optimizer"};
static const char *const OPCODES[] = {"custom-call", "dot", "elementwise", "all-reduce", "all-gather", "reduce-scatter"};

/* Each fusion's kind as XLA names its fusion instructions, by root op (0: not a root): "output"
** when it holds a product (the product's epilogue, or on a TPU the product with its operand's
** ops), "input" when it holds a row reduction (a norm, a softmax), else "loop". */
static const char *const KINDS[] = {"", "loop", "input", "output"};
static unsigned char *fusion_kinds(const cg_graph *g) {
  unsigned char *kind = base_xcalloc(g->nops + 1, 1);
  for (size_t i = 0; i < g->nops; i++) {
    const cg_op *op = &g->ops[i];
    if (op->fusion < 0) continue;
    unsigned char k = op->code == CG_OP_MATMUL ? 3 : op->reduce == MD_REDUCE_ROWS ? 2 : 1;
    if (k > kind[op->fusion]) kind[op->fusion] = k;
  }
  return kind;
}

/* "layer.phase.i" for op i: the op's name in dumps. */
static const char *op_name(const cg_graph *g, int i, char *buf, size_t len) {
  const cg_op *op = &g->ops[i];
  const char *owner = op->var >= 0 ? g->var_names[op->var] : op->layer >= 0 ? g->layer_names[op->layer] : "step";
  snprintf(buf, len, "%s.%s.%d", owner, PHASES[op->phase], i);
  return buf;
}

static const char *tensor_name(const cg_graph *g, int t, char *buf, size_t len) {
  const cg_tensor *x = &g->tensors[t];
  if (x->producer >= 0) return op_name(g, x->producer, buf, len);
  if (x->kind == CG_TENSOR_WEIGHT) snprintf(buf, len, "%s", g->var_names[x->var]);
  else snprintf(buf, len, "input.%d", t);
  return buf;
}

int cg_dump_text(const cg_graph *g, FILE *out) {
  char a[128], b[128];
  fprintf(out, "HloModule train_step, ops=%zu, traced=%zu, flops=%.17g, bytes=%.17g, peak_bytes=%.17g (%s)"
          "\n\nENTRY %%train_step {\n", g->nops, g->traced, cg_graph_flops(g), cg_graph_bytes(g), g->peak,
          g->memory ? g->memory : "none");
  for (size_t k = 0; k < g->nops; k++) {
    int i = g->schedule[k];
    const cg_op *op = &g->ops[i];
    fprintf(out, "  %%%s = %s(", op_name(g, i, a, sizeof a), OPCODES[op->code]);
    for (int j = 0; j < op->nin; j++) fprintf(out, "%s%%%s", j ? ", " : "", tensor_name(g, op->in[j], b, sizeof b));
    fprintf(out, "), flops=%.17g, bytes=%.17g", op->flops, op->bytes);
    if (op->matmul.batch > 0)
      fprintf(out, ", dot=%gx%gx%g", op->matmul.m, op->matmul.n, op->matmul.k);
    if (op->fusion >= 0 && op->fusion != i)
      fprintf(out, ", fusion=%%%s (%s%s)", op_name(g, op->fusion, b, sizeof b), op->fused_by,
              op->multi_output ? ", multi-output" : "");
    if (!cg__is_compute(op)) fprintf(out, ", async");
    if (!cg__is_compute(op) && (op->axis == CG_AXIS_MODEL || op->code != CG_OP_ALL_REDUCE))
      fprintf(out, ", mesh_axis=%s, group=%d", op->axis == CG_AXIS_MODEL ? "model" : "data", op->group);
    fputc('\n', out);
  }
  fputs("}\n", out);
  return ferror(out) ? -1 : 0;
}

/* A fusion's name, KIND_fusion.N, for root op `root`. */
static const char *fusion_name(const unsigned char *kind, int root, char *buf, size_t len) {
  snprintf(buf, len, "%s_fusion.%d", KINDS[kind[root]], root);
  return buf;
}

void cg_dump_kernel_names(const cg_graph *g, const cg_kernel *k, size_t n, char (*names)[CG_KERNEL_NAME_MAX]) {
  unsigned char *kind = fusion_kinds(g);
  for (size_t i = 0; i < n; i++)
    if (g->ops[k[i].op].fusion >= 0) fusion_name(kind, k[i].op, names[i], CG_KERNEL_NAME_MAX);
    else op_name(g, k[i].op, names[i], CG_KERNEL_NAME_MAX);
  free(kind);
}

int cg_dump_csv(const cg_graph *g, const sim_roofline *r, double time_scale, FILE *out) {
  char a[128], b[128];
  unsigned char *kind = fusion_kinds(g);
  fputs(r ? "op,opcode,fusion,layer,phase,flops,bytes,seconds,bound\n" : "op,opcode,fusion,layer,phase,flops,bytes\n", out);
  for (size_t k = 0; k < g->nops; k++) {
    int i = g->schedule[k];
    const cg_op *op = &g->ops[i];
    /* its kernel's name as XLA's profiles show a fusion: KIND_fusion.N, N its root's place */
    const char *fusion = op->fusion >= 0 ? fusion_name(kind, op->fusion, b, sizeof b) : "";
    fprintf(out, "%s,%s,%s,%s,%s,%.17g,%.17g", op_name(g, i, a, sizeof a), OPCODES[op->code], fusion,
            op->layer >= 0 ? g->layer_names[op->layer] : "", PHASES[op->phase], op->flops, op->bytes - op->saved_bytes);
    if (r) {
      if (!cg__is_compute(op)) {
        fputs(",,collective\n", out);
        continue;
      }
      double work = sim_roofline_work(r, op->flops, op->bytes - op->saved_bytes, op->matmul.batch > 0 ? &op->matmul : NULL);
      double compute = sim_roofline_work(r, op->flops, 0, op->matmul.batch > 0 ? &op->matmul : NULL);
      fprintf(out, ",%.9g,%s", work / r->rate * time_scale, work > compute ? "memory" : "compute");
    }
    fputc('\n', out);
  }
  free(kind);
  return ferror(out) ? -1 : 0;
}
