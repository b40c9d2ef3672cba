/* cost.c: adding op costs and the op log (md_cost_, md_op_log_). */
#include "models/cost.h"

#include <stdlib.h>

#include "models/modelsInt.h"

/* A NULL `into` discards the cost, so callers that do not account can pass NULL throughout. */
void md_cost_add(md_cost *into, const md_cost *c) {
  if (into == NULL) return;
  into->flops += c->flops;
  into->bytes_moved += c->bytes_moved;
  into->bytes_resident += c->bytes_resident;
  md_op_log *log = into->ops;
  if (log == NULL || (c->flops == 0 && c->bytes_moved == 0)) return;
  if (log->n == log->cap) {
    log->cap = log->cap ? 2 * log->cap : 32;
    log->flops = base_xrealloc(log->flops, log->cap * sizeof *log->flops);
    log->bytes = base_xrealloc(log->bytes, log->cap * sizeof *log->bytes);
    log->matmul = base_xrealloc(log->matmul, log->cap * sizeof *log->matmul);
    log->info = base_xrealloc(log->info, log->cap * sizeof *log->info);
  }
  md_op_info info = log->at;
  info.elementwise = c->elementwise;
  info.out_bytes = c->out_bytes;
  info.custom_call = c->custom_call;
  info.reduce = c->reduce;
  info.row_passes = c->row_passes;
  info.convolution = c->convolution;
  info.in_place = c->in_place;
  log->info[log->n] = info;
  log->flops[log->n] = c->flops;
  log->bytes[log->n] = c->bytes_moved;
  log->matmul[log->n] = c->matmul;
  log->n++;
}

void md_op_log_clear(md_op_log *log) { log->n = 0; }

void md_op_log_at(md_cost *cost, md_phase phase, int layer, int var) {
  if (cost == NULL || cost->ops == NULL) return;
  cost->ops->at = (md_op_info){.phase = phase, .layer = layer, .var = var};
}

void md_op_log_free(md_op_log *log) {
  free(log->flops);
  free(log->bytes);
  free(log->matmul);
  free(log->info);
  *log = (md_op_log){0};
}

void md_cost_gemm(md_cost *cost, double elem_bytes, double n, double k, double m, int b_is_variable) {
  double b_bytes = b_is_variable ? 4.0 : elem_bytes;
  md_cost c = {.flops = 2.0 * n * k * m, .bytes_moved = elem_bytes * (n * k + n * m) + b_bytes * k * m,
               .bytes_resident = 0, .matmul = {1, n, m, k, elem_bytes}, .out_bytes = elem_bytes * n * m};
  md_cost_add(cost, &c);
}

void md_cost_elementwise(md_cost *cost, double elem_bytes, double count, double flops, int reads) {
  md_cost_normalize(cost, elem_bytes, count, flops, reads, MD_REDUCE_NONE);
}

static void normalize(md_cost *cost, double elem_bytes, double count, double flops, int reads, md_reduce reduce,
                      int passes) {
  md_cost c = {.flops = count * flops, .bytes_moved = elem_bytes * count * (reads + 1), .bytes_resident = 0,
               .elementwise = reads > 0, .out_bytes = elem_bytes * count, .reduce = reduce, .row_passes = passes};
  md_cost_add(cost, &c);
}

void md_cost_normalize(md_cost *cost, double elem_bytes, double count, double flops, int reads, md_reduce reduce) {
  normalize(cost, elem_bytes, count, flops, reads, reduce, reduce == MD_REDUCE_ROWS);
}

void md_cost_row_stats(md_cost *cost, double elem_bytes, double count, double flops, int reads, int passes) {
  normalize(cost, elem_bytes, count, flops, reads, MD_REDUCE_ROWS, passes);
}

void md_cost_dropout(md_cost *cost, double elem_bytes, double count, md_pass pass) {
  if (pass == MD_PASS_FORWARD) {
    md_cost c = {.flops = 4.0 * count, .bytes_moved = elem_bytes * 3.0 * count, .elementwise = 1,
                 .out_bytes = elem_bytes * count};
    md_cost_add(cost, &c);
  } else {
    md_cost_elementwise(cost, elem_bytes, count, 2, 2);
  }
}
