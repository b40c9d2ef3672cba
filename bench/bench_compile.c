/*
** bench_compile.c: the compile layer's cost (compile/, issue 32): tracing a zoo model's train
** step into its op graph, the passes (sharding, fusion, scheduling, liveness) and its HLO-like
** dump, per model as the shipped plans size it: BERT-large on a v4-32 (16 replicas of 16
** examples of 512 tokens, mixed_bfloat16, LAMB: the goal, under a second), ResNet-50 (a
** v4 chip's 128 images, SGD with momentum) and GPT-3 175B (one replica's 1 sequence of 2048
** tokens, AdamW). Best of 5, thread CPU time; the graph's size and FLOPs beside.
*/
#include <stdio.h>
#include <time.h>

#include "compile/compile.h"
#include "models/zoo.h"

static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int bench(const char *preset, md_dtype_policy policy, md_optimizer_kind opt, int batch, int replicas) {
  md_zoo_spec z;
  static md_layer_spec layers[4096];
  md_model_input inputs[MD_LAYER_MAX_INPUTS];
  md_model_spec spec;
  md_error err = {0};
  if (md_zoo_preset(preset, &z) != 0 || md_zoo_build(&z, layers, 4096, inputs, &spec, &err) < 0) {
    fprintf(stderr, "bench_compile: %s: %s\n", preset, err.msg);
    return 1;
  }
  spec.from_logits = 1;
  spec.dtype_policy = policy;
  md_optimizer_spec os;
  md_optimizer_spec_defaults(&os, opt);
  FILE *sink = fopen("/dev/null", "w");
  if (sink == NULL) return 1;
  for (int fusion = 0; fusion <= 1; fusion++) {
    double best = 1e30;
    size_t ops = 0;
    double flops = 0, bytes = 0, peak = 0;
    for (int rep = 0; rep < 5; rep++) {
      double t0 = cpu_s();
      cg_graph *g = cg_trace_train_step(&spec, &os, batch);
      cg_compile(g, &(cg_options){.replicas = replicas, .fusion = fusion});
      cg_dump_text(g, sink);
      double t = cpu_s() - t0;
      if (t < best) best = t;
      ops = cg_graph_num_ops(g);
      flops = cg_graph_flops(g);
      bytes = cg_graph_bytes(g);
      peak = cg_graph_peak_bytes(g);
      cg_graph_free(g);
    }
    printf("%-10s batch %4d x %3d replicas, fusion %s: %5zu ops, %.4e FLOPs, %.4e bytes, peak %.3f GB: "
           "trace + passes + dump %.4f s CPU%s\n", preset, batch, replicas, fusion ? "on " : "off", ops, flops,
           bytes, peak / 1e9, best, preset[0] == 'b' ? " (goal < 1 s)" : "");
  }
  fclose(sink);
  return 0;
}

int main(void) {
  return bench("bert_large", MD_POLICY_MIXED_BFLOAT16, MD_OPT_LAMB, 16, 16) ||
         bench("resnet50", MD_POLICY_MIXED_BFLOAT16, MD_OPT_SGD, 128, 4096) ||
         bench("gpt_175b", MD_POLICY_MIXED_BFLOAT16, MD_OPT_ADAMW, 1, 1024);
}
