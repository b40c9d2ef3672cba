/* test_load.c: scenario_load on good scenarios (values and units converted exactly), --set
** overrides, and a catalogue of broken scenarios whose errors must name file:line:col: key. */
#include "tests/testutil.h"
#include "base/base.h"

#include "scenarios/report/report.h"

#include <string.h>

#include "scenarios/config/machines.h"
#include "scenarios/config/scenario.h"
#include "scenarios/config/units.h"

static scenario S;   /* large: keep it off the stack */
static scn_error E;

static void load_ok(const char *rel, const char *const *ov, int nov) {
  int rc = scenario_load(tu_src(rel), ov, nov, &S, &E);
  if (rc) fail_msg("%s: %s", rel, E.msg);
}

static void test_units_exact(void **state) {
  (void)state;
  char why[256];
  double v;
  struct { unit_kind k; const char *text; double want; } ok[] = {
    {UNIT_DURATION, "250ns", 250e-9}, {UNIT_DURATION, "1.5us", 1.5e-6}, {UNIT_DURATION, "20ms", 20e-3},
    {UNIT_DURATION, "12.5s", 12.5}, {UNIT_DURATION, "5min", 300}, {UNIT_DURATION, "2h", 7200},
    {UNIT_DURATION, "0.1us", 1e-7}, {UNIT_DURATION, "30d", 2592000}, /* 30 x 86400 */
    {UNIT_SIZE, "512B", 512}, {UNIT_SIZE, "100KB", 1e5}, {UNIT_SIZE, "100MB", 1e8},
    {UNIT_SIZE, "16GiB", 17179869184.0}, {UNIT_SIZE, "1.5KiB", 1536},
    {UNIT_BANDWIDTH, "100GB/s", 1e11}, {UNIT_BANDWIDTH, "25Gbps", 3.125e9},
    {UNIT_BANDWIDTH, "400Mbps", 5e7}, {UNIT_BANDWIDTH, "1.5TB/s", 1.5e12},
    {UNIT_FLOPS, "1TFLOP/s", 1e12}, {UNIT_FLOPS, "275TFLOP/s", 275e12}, {UNIT_FLOPS, "50GFLOP/s", 50e9},
    {UNIT_RATE, "0.5/h", 0.5 / 3600}, {UNIT_RATE, "2/min", 2.0 / 60},
  };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    if (units_parse(ok[i].k, ok[i].text, &v, why, sizeof why)) fail_msg("%s: %s", ok[i].text, why);
    if (v != ok[i].want) fail_msg("%s: got %.17g want %.17g", ok[i].text, v, ok[i].want);
  }
  assert_int_equal(units_parse(UNIT_DURATION, "5", &v, why, sizeof why), -1);
  assert_string_equal(why, "expected a duration with a unit such as 5us, 20ms or 12.5s, found 5");
  assert_int_equal(units_parse(UNIT_SIZE, "-1GiB", &v, why, sizeof why), -1);
  assert_non_null(strstr(why, "non-negative"));
  assert_int_equal(units_parse(UNIT_SIZE, "1GiBs", &v, why, sizeof why), -1);
  assert_int_equal(units_parse(UNIT_BANDWIDTH, "10GB", &v, why, sizeof why), -1);
}

static void test_machines(void **state) {
  (void)state;
  scn_machine m;
  assert_int_equal(machines_lookup("n1-standard-8", &m), 0);
  assert_int_equal(m.cpus, 8);
  assert_true(m.nic_bytes_per_s == 16e9 / 8);
  assert_true(m.ram_bytes == 8 * 3.75 * 1073741824.0);
  assert_true(m.flops == 8 * MACHINE_N1_FLOPS_PER_VCPU);
  assert_int_equal(machines_lookup("n1-standard-1", &m), 0);
  assert_true(m.nic_bytes_per_s == 2e9 / 8);
  assert_int_equal(machines_lookup("n2-standard-128", &m), 0);
  assert_true(m.nic_bytes_per_s == 32e9 / 8);
  assert_true(m.ram_bytes == 128 * 4 * 1073741824.0);
  assert_int_equal(machines_lookup("n2-standard-3", &m), -1);
  assert_int_equal(machines_lookup("n1-standard-128", &m), -1);
  assert_int_equal(machines_lookup("n1-standard-08", &m), -1);
}

static void test_good_dense(void **state) {
  (void)state;
  load_ok("tests/data/scenarios/good/dense.yaml", NULL, 0);
  assert_string_equal(S.name, "seed-dense");
  assert_int_equal(S.seed, 42);
  assert_int_equal(S.numerics_full, 1);
  assert_int_equal(S.workers, 4);
  assert_string_equal(S.worker_machine.type, "n1-standard-8");
  assert_true(S.worker_machine.nic_bytes_per_s == 2e9);
  assert_int_equal(S.fabric, SCN_FABRIC_RING);
  assert_true(S.fabric_bytes_per_s == 3.125e9);
  assert_true(S.fabric_latency_s == 1.5e-6);
  assert_int_equal(S.strategy, SCN_STRATEGY_MULTI_WORKER_MIRRORED);
  assert_int_equal(S.all_reduce, SCN_ALLREDUCE_RING);
  assert_int_equal(S.input_features, 5);
  assert_int_equal(S.nlayers, 2);
  assert_int_equal(S.layers[0].kind, MD_LAYER_DENSE);
  assert_int_equal(S.layers[0].units, 16);
  assert_int_equal(S.layers[0].activation, MD_ACT_RELU);
  assert_int_equal(S.layers[0].use_bias, 1);
  assert_int_equal(S.layers[1].activation, MD_ACT_SOFTMAX);
  assert_int_equal(S.layers[1].use_bias, 0);
  assert_int_equal(S.from_logits, 0);
  assert_string_equal(S.init_file, tu_src("tests/data/scenarios/good/init.csv"));
  assert_int_equal(S.optimizer.kind, MD_OPT_SGD);
  assert_true(S.optimizer.learning_rate == 0.1f);
  assert_true(S.optimizer.momentum == 0.9f);
  assert_int_equal(S.optimizer.nesterov, 1);
  assert_string_equal(S.csv, tu_src("tests/data/scenarios/good/data.csv"));
  assert_string_equal(S.label, "label");
  assert_int_equal(S.global_batch, 8);
  assert_int_equal(S.repeat, 0);
  assert_int_equal(S.steps, 100);
  assert_int_equal(S.epochs, 0);
  assert_int_equal(S.loss_reduction, SCN_LOSS_PER_REPLICA_MEAN);
  assert_string_equal(S.out_dir, "results/dense");
  assert_int_equal(!!(S.plots & REPORT_CHART_BIT(report_chart_index("loss"))), 0);
  assert_int_equal(!!(S.plots & REPORT_CHART_BIT(report_chart_index("step_time"))), 1);
  assert_int_equal(S.format, SCN_FORMAT_PNG);
  assert_int_equal(S.trace, 0);
}

/* Every layer kind's keys land in its md_layer_spec (tests/data/scenarios/good/layers.yaml): a
** window given as one int fills both dimensions, a list gives [height, width]; a field left out
** stays 0, Keras's default (docs/layers.md); input.shape gives input_features = 8 x 8 x 3 = 192. */
static void test_layer_keys(void **state) {
  (void)state;
  load_ok("tests/data/scenarios/good/layers.yaml", NULL, 0);
  assert_int_equal(S.input_shape.rank, 3);
  assert_int_equal(S.input_shape.dim[2], 3);
  assert_int_equal(S.input_features, 192);
  assert_int_equal(S.nlayers, 13);
  static const md_layer_kind KINDS[] = {
    MD_LAYER_CONV2D, MD_LAYER_DEPTHWISE_CONV2D, MD_LAYER_BATCH_NORMALIZATION, MD_LAYER_ACTIVATION,
    MD_LAYER_MAX_POOLING2D, MD_LAYER_AVERAGE_POOLING2D, MD_LAYER_RESHAPE, MD_LAYER_MULTI_HEAD_ATTENTION,
    MD_LAYER_LAYER_NORMALIZATION, MD_LAYER_SOFTMAX, MD_LAYER_FLATTEN, MD_LAYER_DROPOUT, MD_LAYER_DENSE};
  for (int i = 0; i < 13; i++) assert_int_equal(S.layers[i].kind, KINDS[i]);
  const md_layer_spec *conv = &S.layers[0], *dw = &S.layers[1], *bn = &S.layers[2];
  assert_int_equal(conv->filters, 4);
  assert_int_equal(conv->kernel_size[0], 3);
  assert_int_equal(conv->kernel_size[1], 3);
  assert_int_equal(conv->strides[1], 1);
  assert_int_equal(conv->dilation_rate[0], 1);
  assert_int_equal(conv->padding, MD_PADDING_SAME);
  assert_int_equal(conv->activation, MD_ACT_SWISH);
  assert_int_equal(conv->use_bias, 0);
  assert_int_equal(dw->kernel_size[0], 3);
  assert_int_equal(dw->kernel_size[1], 1);
  assert_int_equal(dw->depth_multiplier, 2);
  assert_int_equal(dw->padding, MD_PADDING_VALID);
  assert_int_equal(dw->strides[0], 0);  /* Keras's default, 1 */
  assert_true(bn->momentum == 0.9f && bn->epsilon == 0.001f);
  assert_int_equal(S.layers[3].activation, MD_ACT_GELU_TANH);
  assert_int_equal(S.layers[4].pool_size[1], 2);
  assert_int_equal(S.layers[4].strides[0], 0);  /* Keras's default, pool_size */
  assert_int_equal(S.layers[5].pool_size[0], 1);
  assert_int_equal(S.layers[5].pool_size[1], 2);
  assert_int_equal(S.layers[5].strides[1], 1);
  assert_int_equal(S.layers[6].target_shape.rank, 2);
  assert_int_equal(S.layers[6].target_shape.dim[1], -1);
  const md_layer_spec *mha = &S.layers[7];
  assert_int_equal(mha->num_heads, 2);
  assert_int_equal(mha->key_dim, 4);
  assert_int_equal(mha->value_dim, 3);
  assert_int_equal(mha->use_causal_mask, 1);
  assert_int_equal(mha->use_bias, 1);
  assert_true(S.layers[8].epsilon == 1e-5f);
  assert_int_equal(S.layers[9].axis, -1);
  assert_true(S.layers[11].rate == 0.25f);
  assert_int_equal(S.layers[11].seeded, 0);  /* no seed: the run's own stream */
  assert_int_equal(S.layers[12].activation, MD_ACT_GELU);
  /* global_average_pooling2d takes no keys: [8, 8, 3] -> [3] */
  const char *gap[] = {"model.layers=[{global_average_pooling2d: {}}, {dense: {units: 5}}]",
                       "dataset.synthetic.features=192"};
  load_ok("tests/data/scenarios/good/layers.yaml", gap, 2);
  assert_int_equal(S.layers[0].kind, MD_LAYER_GLOBAL_AVERAGE_POOLING2D);
}

/* dropout.seed makes the layer draw Keras's masks (seeded), a seed beyond int32 kept whole (Keras's
** SeedGenerator holds int64; the layer reduces it as Keras does), seed_draws its state[1]. */
static void test_dropout_seed_keys(void **state) {
  (void)state;
  const char *sets[] = {"model.layers=[{flatten: {}}, {dropout: {rate: 0.5, seed: 12345678901, seed_draws: 4}}, "
                        "{dense: {units: 5}}]", "dataset.synthetic.features=192"};
  load_ok("tests/data/scenarios/good/layers.yaml", sets, 2);
  assert_int_equal(S.layers[1].seeded, 1);
  assert_int_equal(S.layers[1].seed, 12345678901LL);
  assert_int_equal(S.layers[1].seed_draws, 4);
}

/* model.zoo: a preset by name, or {preset, ...sizes}: the zoo's layers fill the scenario as if
** listed (gpt_125m: embeddings, 12 blocks of 7 layers, layer norm and head = 87 layers), its input
** the preset's (1024 ids, as overridden). */
static void test_zoo_keys(void **state) {
  (void)state;
  const char *sets[] = {"model={zoo: {preset: gpt_125m, seq_len: 1024}, loss: {from_logits: true}}",
                        "numerics=off", "dataset.synthetic.features=1024"};
  load_ok("tests/data/scenarios/good/layers.yaml", sets, 3);
  assert_int_equal(S.has_zoo, 1);
  assert_int_equal(S.zoo.seq_len, 1024);
  assert_int_equal(S.zoo.d_model, 768);
  assert_int_equal(S.nlayers, 87);
  assert_int_equal(S.input_ids, 1024);
  assert_int_equal(S.input_vocab, 50257);
  assert_int_equal(S.layers[0].kind, MD_LAYER_TOKEN_AND_POSITION_EMBEDDING);
  assert_string_equal(S.layers[86].name, "lm_head");
}

static void test_good_custom_machine_and_ids(void **state) {
  (void)state;
  load_ok("tests/data/scenarios/good/custom.yaml", NULL, 0);
  assert_string_equal(S.worker_machine.type, "custom");
  assert_int_equal(S.worker_machine.cpus, 16);
  assert_true(S.worker_machine.flops == 1e12);
  assert_true(S.worker_machine.ram_bytes == 17179869184.0);
  assert_true(S.worker_machine.nic_bytes_per_s == 1e5);
  assert_int_equal(S.worker_machine.accelerators, 4);
  assert_true(S.worker_machine.accel_peak_flops == 312e12);
  assert_true(S.worker_machine.accel_hbm_bytes == 80 * 1073741824.0);
  assert_true(S.worker_machine.accel_hbm_bytes_per_s == 2e12);
  assert_true(S.worker_machine.accel_link_bytes_per_s == 300e9);
  assert_int_equal(S.input_ids, 3);
  assert_int_equal(S.input_vocab, 13);
  assert_int_equal(S.layers[0].kind, MD_LAYER_EMBEDDING);
  assert_int_equal(S.layers[0].combiner, MD_COMBINER_SUM);
  assert_int_equal(S.layers[1].activation, MD_ACT_NONE);
  assert_int_equal(S.optimizer.kind, MD_OPT_ADAM);
  assert_true(S.optimizer.learning_rate == 0.001f);
  assert_true(S.optimizer.beta_1 == 0.8f);
  assert_true(S.optimizer.beta_2 == 0.999f);
  assert_true(S.optimizer.epsilon == 1e-7f);
  assert_int_equal(S.steps, -1);
  assert_int_equal(S.epochs, 3);
}

static void test_defaults(void **state) {
  (void)state;
  load_ok("tests/data/scenarios/good/minimal.yaml", NULL, 0);
  assert_int_equal(S.seed, 1);
  assert_int_equal(S.numerics_full, 1);
  assert_int_equal(S.workers, 1);
  assert_string_equal(S.worker_machine.type, "n2-standard-8");
  assert_int_equal(S.fabric, SCN_FABRIC_STAR);
  assert_true(S.fabric_bytes_per_s == 100e9);
  assert_true(S.fabric_latency_s == 5e-6);
  assert_int_equal(S.strategy, SCN_STRATEGY_DEFAULT);
  assert_int_equal(S.all_reduce, SCN_ALLREDUCE_AUTO);
  assert_int_equal(S.from_logits, 0);
  assert_string_equal(S.init_file, "");
  assert_string_equal(S.csv, "");
  assert_int_equal(S.synthetic_rows, 1000);
  assert_int_equal(S.synthetic_features, 8);
  assert_int_equal(S.synthetic_classes, 3);
  assert_int_equal(S.repeat, 1);
  assert_int_equal(S.loss_reduction, SCN_LOSS_GLOBAL_BATCH);
  assert_string_equal(S.out_dir, "out/minimal");
  assert_int_equal(!!(S.plots & REPORT_CHART_BIT(report_chart_index("loss"))), 1);
  assert_int_equal(!!(S.plots & REPORT_CHART_BIT(report_chart_index("step_time"))), 1);
  assert_int_equal(S.format, SCN_FORMAT_PNG);
  assert_int_equal(S.trace, 1);
  assert_int_equal(S.optimizer.kind, MD_OPT_ADAGRAD);
  assert_true(S.optimizer.learning_rate == 0.001f);
  assert_true(S.optimizer.initial_accumulator_value == 0.1f);
}

/* CommunicationOptions: bytes_per_pack as given (default 0, TF's), implementation ring or nccl as
** the all-reduce's algorithm, nccl only where there are accelerators (TF falls back to RING on
** CPUs); strategy.xla_combine_threshold absent is -1 (no packs). */
static void test_communication_options(void **state) {
  (void)state;
  load_ok("tests/data/train/overlap.yaml", NULL, 0);
  assert_true(S.comm_bytes_per_pack == 0 && S.comm_implementation == 0 && S.xla_combine_bytes == -1);
  const char *cpu_nccl[] = {"strategy.all_reduce=auto", "strategy.communication={bytes_per_pack: 25MiB, implementation: nccl}"};
  load_ok("tests/data/train/overlap.yaml", cpu_nccl, 2);
  assert_true(S.comm_bytes_per_pack == 25.0 * 1024 * 1024);
  assert_int_equal(S.all_reduce, SCN_ALLREDUCE_RING);
  const char *gpu_nccl[] = {"strategy.all_reduce=auto", "strategy.communication.implementation=nccl"};
  load_ok("scenarios/examples/mirrored_gpus.yaml", gpu_nccl, 2);
  assert_int_equal(S.all_reduce, SCN_ALLREDUCE_NCCL);
  const char *tpu[] = {"strategy.xla_combine_threshold=0B"};
  load_ok("scenarios/examples/cnn_tpu.yaml", tpu, 1);
  assert_true(S.xla_combine_bytes == 0);
}

static void test_overrides(void **state) {
  (void)state;
  const char *existing[] = {"training.steps=5", "cluster.workers.count=3", "model.layers.0.dense.units=7",
                            "outputs.plots=[loss]", "seed=9"};
  load_ok("tests/data/scenarios/good/minimal.yaml", existing, 5);
  assert_int_equal(S.steps, 5);
  assert_int_equal(S.workers, 3);
  assert_int_equal(S.layers[0].units, 7);
  assert_int_equal(!!(S.plots & REPORT_CHART_BIT(report_chart_index("step_time"))), 0);
  assert_int_equal(S.seed, 9);

  /* a key absent from the file is created */
  const char *created[] = {"cluster.fabric.latency=20ms"};
  load_ok("tests/data/scenarios/good/minimal.yaml", created, 1);
  assert_true(S.fabric_latency_s == 20e-3);

  /* a bad value: validation names --set, the override's index and the value's column */
  const char *bad[] = {"seed=2", "dataset.global_batch=0"};
  assert_int_equal(scenario_load(tu_src("tests/data/scenarios/good/minimal.yaml"), bad, 2, &S, &E), -1);
  assert_string_equal(E.msg, "--set:2:22: dataset.global_batch: expected an integer >= 1, found 0");

  /* a value that is not YAML */
  const char *syntax[] = {"outputs.plots=[loss"};
  assert_int_equal(scenario_load(tu_src("tests/data/scenarios/good/minimal.yaml"), syntax, 1, &S, &E), -1);
  assert_string_equal(E.file, "--set");
  assert_int_equal(E.line, 1);
  assert_non_null(strstr(E.msg, "YAML syntax error"));

  /* a path through a scalar, an index out of range, no '=' */
  const char *through[] = {"name.x=1"};
  assert_int_equal(scenario_load(tu_src("tests/data/scenarios/good/minimal.yaml"), through, 1, &S, &E), -1);
  assert_non_null(strstr(E.msg, "--set:1:6: name.x: expected a mapping or sequence"));
  const char *index[] = {"model.layers.4.dense.units=1"};
  assert_int_equal(scenario_load(tu_src("tests/data/scenarios/good/minimal.yaml"), index, 1, &S, &E), -1);
  assert_non_null(strstr(E.msg, "--set:1:14: model.layers[4]: expected an index"));
  const char *noeq[] = {"training.steps"};
  assert_int_equal(scenario_load(tu_src("tests/data/scenarios/good/minimal.yaml"), noeq, 1, &S, &E), -1);
  assert_non_null(strstr(E.msg, "expected key.path=value"));

  /* a new unknown key is validated like any other */
  const char *unknown[] = {"training.stepz=5"};
  assert_int_equal(scenario_load(tu_src("tests/data/scenarios/good/minimal.yaml"), unknown, 1, &S, &E), -1);
  assert_non_null(strstr(E.msg, "--set:1:10: training.stepz: unknown key \"stepz\""));
}

/* TF_CONFIG from a JSON file: the seed page's cluster (1 chief, 3 workers, 2 ps). Under
** multi_worker_mirrored the chief is worker 0, so 4 workers and no ps; an error inside the JSON
** names the JSON file's line and column. */
static void test_tf_config_file(void **state) {
  (void)state;
  assert_int_equal(scenario_load(tu_src("tests/data/scenarios/tf_config/mwm.yaml"), NULL, 0, &S, &E), 0);
  assert_int_equal(S.tf_config, 1);
  assert_int_equal(S.workers, 4);
  assert_int_equal(S.ps, 0);
  assert_int_equal(scenario_load(tu_src("tests/data/scenarios/tf_config/bad_job.yaml"), NULL, 0, &S, &E), -1);
  assert_non_null(strstr(E.msg, "tests/data/scenarios/tf_config/bad_job.json:5:5: cluster.tf_config.cluster.trainer: "
                                "unknown job \"trainer\""));
}

static void test_missing_file(void **state) {
  (void)state;
  assert_int_equal(scenario_load("no/such/scenario.yaml", NULL, 0, &S, &E), -1);
  assert_non_null(strstr(E.msg, "no/such/scenario.yaml: cannot open"));
}

/* The broken scenarios of tests/data/scenarios/bad/: each error's position, key and a phrase. */
static const struct bad_case {
  const char *name;       /* tests/data/scenarios/bad/NAME.yaml */
  int line, col;
  const char *key;
  const char *phrase;
} BAD[] = {
  {"alias", 3, 10, "model.input", "anchors and aliases"},
  {"allreduce_torus_needs_torus", 11, 53, "strategy.all_reduce", "torus needs a torus to run on"},
  {"bad_optimizer_kind", 6, 19, "optimizer.kind", "expected one of sgd | adam | adagrad | adamw | lamb | lars"},
  {"bool_wrong", 10, 11, "dataset.repeat", "expected true or false"},
  {"checkpoint_bare_bandwidth", 12, 43, "training.checkpoint.bandwidth", "expected a bandwidth with a unit"},
  {"communication_algorithm_twice", 11, 91, "strategy.communication.implementation", "the algorithm is given twice"},
  {"communication_fraction", 11, 60, "strategy.communication.bytes_per_pack", "expected a whole number of bytes"},
  {"communication_one_device", 11, 30, "strategy.communication", "goes with strategy kind mirrored or multi_worker_mirrored"},
  {"communication_timeout", 11, 66, "strategy.communication.timeout_seconds", "unknown key \"timeout_seconds\""},
  {"communication_unknown_implementation", 11, 82, "strategy.communication.implementation", "expected one of auto | ring | nccl"},
  {"communication_with_faults", 11, 73, "strategy.communication.bytes_per_pack", "not modelled with faults"},
  {"compile_per_op_bare_number", 13, 31, "training.compile.per_op", "expected a duration with a unit"},
  {"compile_time_and_base", 13, 24, "training.compile.base", "give either time"},
  {"compile_without_jit", 12, 3, "training.compile", "nothing is compiled"},
  {"csv_and_synthetic", 10, 3, "dataset.csv", "not both"},
  {"duplicate_key", 10, 3, "dataset.global_batch", "duplicate key"},
  {"embedding_not_first", 6, 7, "model.layers[1]", "must be the first layer"},
  {"empty_layers", 4, 11, "model.layers", "found an empty sequence"},
  {"expect_bad_comparator", 12, 26, "expect[0].approx", "unknown comparator \"approx\""},
  {"expect_unknown_metric", 12, 14, "expect[0].metric", "found \"accuracy\""},
  {"fault_bad_target", 12, 29, "faults[0].target", "found \"worker3\""},
  /* 3000 h is 1.08e19 ps, past 2^63: it wrapped to a 60 s outage, and an `at` there tripped an assert. */
  {"fault_at_past_horizon", 12, 42, "faults[0].at", "at most 4.61169e+06 s (53.4 days)"},
  {"fault_down_for_past_horizon", 12, 59, "faults[0].down_for", "at most 4.61169e+06 s (53.4 days)"},
  {"fault_two_triggers", 12, 5, "faults[0]", "exactly one of at"},
  {"fault_typo_beats_tpu", 14, 62, "faults[0].durration", "unknown key \"durration\""},
  {"features_and_ids", 3, 24, "model.input.ids", "not both"},
  {"ids_without_embedding", 5, 7, "model.layers[0]", "needs an embedding"},
  {"jit_compile_not_bool", 12, 16, "training.jit_compile", "expected true or false"},
  {"logical_device_without_assignment", 5, 41, "model.layers[0].dense.logical_device", "need strategy kind tpu with a device_assignment"},
  {"mha_dropout_with_flash", 6, 7, "model.layers[0]", "dropout is not supported with flash_attention"},
  {"missing_csv_file", 8, 8, "dataset.csv", "file not found"},
  {"missing_layers", 3, 3, "model.layers", "missing required key \"layers\""},
  {"missing_name", 1, 1, "name", "missing required key \"name\""},
  /* "a\u0000b/../../x" ran as "a": the NUL ended the text before the name's checks saw the rest. */
  {"name_nul", 1, 7, "name", "without a NUL character"},
  {"missing_optimizer_kind", 6, 12, "optimizer.kind", "missing required key \"kind\""},
  {"missing_training", 1, 1, "training", "missing required key \"training\""},
  {"missing_unit", 12, 21, "cluster.fabric.latency", "expected a duration with a unit such as 5us, 20ms or 12.5s, found 5"},
  {"negative_size", 13, 46, "cluster.workers.machine.ram", "non-negative size"},
  {"neither_csv_nor_synthetic", 8, 3, "dataset.csv", "missing required key \"csv\""},
  {"not_a_mapping", 1, 1, "(top level)", "expected a mapping"},
  {"optimizer_key_of_other_kind", 6, 44, "optimizer.beta_1", "unknown key \"beta_1\""},
  {"loss_kind_unknown", 6, 16, "model.loss.kind", "expected one of sparse_categorical_crossentropy | "
   "categorical_crossentropy | binary_crossentropy | mean_squared_error"},
  {"labels_with_sparse_loss", 10, 11, "dataset.labels", "sparse_categorical_crossentropy reads one integer class per row"},
  {"labels_count_mismatch", 10, 11, "dataset.labels", "expected 3 label columns, one per output of the last layer, found 2"},
  {"label_for_several_outputs", 10, 10, "dataset.label", "one label column gives one target but the last layer has 2 outputs"},
  {"mse_from_logits", 6, 49, "model.loss.from_logits", "mean_squared_error reads the outputs as they are"},
  {"label_and_labels", 11, 3, "dataset.labels", "give label (one column) or labels (several), not both"},
  {"labels_repeated", 10, 16, "dataset.labels[1]", "column \"f2\" is listed twice"},
  {"adamw_negative_weight_decay", 6, 40, "optimizer.weight_decay", "expected a number >= 0, found -0.1"},
  {"lamb_beta_2_one", 6, 33, "optimizer.beta_2", "expected a number in [0, 1), found 1"},
  {"sgd_weight_decay", 6, 24, "optimizer.weight_decay", "unknown key \"weight_decay\""},
  {"pipeline_bare_number", 10, 27, "dataset.pipeline.per_example", "expected a duration with a unit"},
  {"pipeline_too_long", 10, 25, "dataset.pipeline.per_batch", "expected at most 3600 s"},
  {"plot_bad_format", 11, 19, "outputs.format", "expected one of png | svg | pdf, found \"jpeg\""},
  {"plot_unknown", 11, 25, "outputs.plots[1]", "found \"accuracy\""},
  {"prefetch_negative", 10, 13, "dataset.prefetch", "expected an integer >= 0, found -1"},
  {"ps_without_ps_strategy", 12, 3, "cluster.ps", "goes with strategy kind parameter_server"},
  {"ps_no_ps_tasks", 11, 18, "cluster.ps", "ValueError: ParameterServerStrategy needs at least one ps task"},
  {"ps_tf_config_worker_task", 13, 3, "cluster.tf_config", "ValueError: TF_CONFIG's task is a worker"},
  {"ps_on_tpu", 13, 3, "cluster.tpu", "needs strategy.kind tpu, tpu_v1 or gnn_runner_tpu, found parameter_server"},
  {"eval_steps_zero", 12, 46, "cluster.evaluator.steps", "expected an integer >= 1, found 0"},
  {"eval_poll_zero", 12, 54, "cluster.evaluator.poll_interval", "greater than zero, found 0s"},
  {"eval_without_checkpoint", 12, 27, "cluster.evaluator", "training.checkpoint is not set"},
  {"partitioner_not_ps", 11, 28, "strategy.variable_partitioner", "goes with strategy kind parameter_server"},
  {"tf_config_task_index", 13, 92, "cluster.tf_config.task.index", "below the 1 worker task(s)"},
  {"tf_config_and_count", 13, 20, "cluster.workers.count", "contradicts cluster.tf_config"},
  {"tf_config_empty", 13, 26, "cluster.tf_config.cluster", "ValueError: the cluster spec is empty"},
  {"quoted_number", 9, 17, "dataset.global_batch", "expected an integer"},
  {"shuffle_buffer_zero", 10, 21, "dataset.shuffle.buffer", "expected an integer >= 1, found 0"},
  {"files_no_match", 8, 10, "dataset.files", "no file matches"},
  {"files_empty", 8, 10, "dataset.files", "expected a list of CSV files or a glob pattern"},
  {"csv_and_files", 9, 3, "dataset.files", "not both csv and files"},
  {"graph_and_features", 5, 24, "model.input.graph", "the only key of model.input"},
  {"graph_dataset_without_graph_input", 9, 18, "dataset.graph", "give model.input.graph"},
  {"graph_input_reads_csv", 11, 10, "dataset.graph", "reads its subgraphs from dataset.graph"},
  {"graph_bfloat16_too_many_nodes", 10, 17, "model.dtype_policy", "at most 256 nodes per subgraph"},
  {"shard_file_without_files", 10, 22, "dataset.auto_shard_policy", "give the files as dataset.files"},
  {"scalar_too_long", 4, 21, "model.input.features", "expected a scalar of at most 65536 bytes (64 KiB), found one of 65537 bytes"},
  {"collective_size_not_float32", 4, 38, "workload.collective.size", "expected a whole number of float32 elements (a multiple of 4 bytes), found 10B (10 bytes)"},
  {"cluster_too_large_for_host", 7, 12, "cluster.workers.count", "expected a run this host can hold ("},
  {"nesting_too_deep", 2, 67, "x[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]", "expected at most 64 levels of nested sequences and mappings"},
  {"ps_mixed_float16", 6, 17, "model.dtype_policy", "LossScaleOptimizer, which podsim runs under the sync strategies only"},
  {"ps_auto_shard", 10, 22, "dataset.auto_shard_policy", "ParameterServerStrategy never auto-shards"},
  {"function_with_shard_policy", 11, 22, "dataset.auto_shard_policy", "distribute: function never auto-shards"},
  {"shuffle_true", 10, 12, "dataset.shuffle", "expected false or {buffer: N}"},
  {"steps_and_epochs", 10, 23, "training.epochs", "not both"},
  {"mirrored_missing_gpu", 11, 38, "strategy.devices[0]", "the worker has no accelerators"},
  {"steps_per_run_on_tpu", 13, 23, "strategy.steps_per_run", "goes with strategy kind tpu_v1, not tpu"},
  {"steps_per_execution_on_tpu_v1", 10, 44, "training.steps_per_execution", "loops by strategy.steps_per_run"},
  {"sweep_bad_path", 11, 9, "sweep.dataset.global_bach", "expected the path of a key"},
  {"sweep_empty_list", 11, 31, "sweep.dataset.global_batch", "expected a non-empty sequence of values"},
  {"sweep_nested", 11, 36, "sweep.optimizer.learning_rate", "sweeps a key inside another swept key (optimizer)"},
  {"synthetic_features_mismatch", 8, 36, "dataset.synthetic.features", "expected model.input.features"},
  {"tpu_bad_slice", 12, 15, "cluster.tpu.type", "unknown slice \"v4-33\" (v4 slices count TensorCores: 8, 16, "
   "32, 64, or twice the chips of an AxBxC of multiples of 4 up to the 4096-chip pod, such as 128 (4x4x4) or 6144 (12x16x16))"},
  {"tpu_topology_mismatch", 12, 32, "cluster.tpu.topology", "has 8 chips but v4-32 has 16"},
  {"tpu_needs_tpu_strategy", 12, 3, "cluster.tpu", "needs strategy.kind tpu, tpu_v1 or gnn_runner_tpu"},
  {"tpu_strategy_without_slice", 11, 18, "strategy.kind", "tpu runs on a TPU slice: add cluster.tpu"},
  {"device_assignment_too_many_replicas", 15, 22, "strategy.device_assignment", "ValueError: requested 5 replicas but only 4"},
  {"zoo_unknown_preset", 4, 8, "model.zoo", "found \"gpt_2\""},
  {"accumulation_not_dividing_batch", 10, 52, "training.gradient_accumulation_steps", "expected a divisor of dataset.global_batch (30)"},
  {"accumulation_parameter_server", 11, 52, "training.gradient_accumulation_steps", "parameter_server workers push every step's gradients"},
  {"pp_axis_first", 10, 11, "strategy.distribution.mesh", "the pipeline axis goes last"},
  {"pp_microbatches_not_dividing", 11, 30, "strategy.distribution.pipeline.microbatches", "expected a divisor of a pipeline's batch (dataset.global_batch 16 over 2 data-parallel pipelines: 8), found 3"},
  {"pp_split_count", 11, 34, "strategy.distribution.pipeline.layers_per_stage", "expected one entry per stage (2), found 1"},
  {"pp_unknown_schedule", 11, 26, "strategy.distribution.pipeline.schedule", "expected one of gpipe | 1f1b"},
  {"pp_with_accumulation", 21, 51, "training.gradient_accumulation_steps", "a pipeline accumulates its microbatches' gradients itself"},
  {"pp_with_fsdp", 10, 13, "strategy.distribution.preset", "pipeline stages run beside data parallelism only"},
  {"pp_without_axis", 11, 15, "strategy.distribution.pipeline", "needs an axis named pipeline in strategy.distribution.mesh"},
  {"mesh3_pipeline_not_middle", 11, 11, "strategy.distribution.mesh", "expected the middle axis named pipeline (the stages), found model"},
  {"mesh3_middle_not_pipeline", 11, 11, "strategy.distribution.mesh", "expected the middle axis named pipeline (the stages), found expert"},
  {"mesh3_with_fsdp", 10, 13, "strategy.distribution.preset", "run tensor_parallel or sequence_parallel over the model axis"},
  {"mesh3_layout_on_pipeline", 12, 22, "strategy.distribution.layout_map.dense/kernel[0]", "holds pipeline stages, not shards"},
  {"mesh3_four_axes", 11, 11, "strategy.distribution.mesh", "expected 1 to 3 axes"},
  {"hybrid_with_accumulation", 22, 51, "training.gradient_accumulation_steps", "hybrid_fsdp with gradient accumulation is not modelled"},
  {"hybrid_sp_data_not_slices", 9, 11, "strategy.distribution.mesh", "hybrid_fsdp_sp's data axis is the slice index"},
  {"hybrid_sp_middle_not_fsdp", 9, 11, "strategy.distribution.mesh", "expected the middle axis named fsdp, found pipeline"},
  {"hybrid_sp_one_fsdp", 9, 11, "strategy.distribution.mesh", "expected 2 devices or more there, found 1"},
  {"mesh3_fsdp_without_preset", 9, 11, "strategy.distribution.mesh", "({data, fsdp, model} goes with preset hybrid_fsdp_sp)"},
  {"pp_interleaved_microbatches", 11, 53, "strategy.distribution.pipeline.microbatches", "expected a multiple of 2, found 1"},
  {"pp_virtual_stages_without_interleaved", 11, 32, "strategy.distribution.pipeline.virtual_stages", "goes with schedule interleaved, not 1f1b"},
  {"zoo_and_layers", 5, 3, "model.layers", "give either zoo (a named architecture) or layers"},
  {"zoo_gpt_without_labels", 3, 8, "model.zoo", "reads a class at each of its 16 positions, 16 label columns in dataset.labels (found 0)"},
  {"zoo_heads_not_dividing", 4, 8, "model.zoo", "d_model 768 is not a multiple of heads 7"},
  {"unknown_activation", 5, 37, "model.layers[0].dense.activation", "found \"mish\""},
  {"layer_after_flatten", 6, 7, "model.layers[1]", "conv2d reads [height, width, channels] (got rank 1)"},
  {"last_layer_not_vector", 6, 7, "model.layers[1]", "the last layer gives [6, 6, 3] per example: sparse_categorical_crossentropy then reads a class at each of its 36 positions"},
  {"kernel_size_three_dims", 5, 41, "model.layers[0].conv2d.kernel_size", "expected an integer or [height, width]"},
  {"pool_larger_than_input", 5, 7, "model.layers[0]", "valid padding needs an input of at least 8 along axis 1 (got 6)"},
  {"shape_and_features", 3, 25, "model.input.shape", "give one of features (a row of floats), shape"},
  {"unknown_layer_kind", 5, 7, "model.layers[0].conv3d", "unknown key \"conv3d\""},
  {"reshape_two_inferred", 5, 39, "model.layers[0].reshape.target_shape", "expected -1 (an inferred size) at most once"},
  {"softmax_axis_batch", 7, 23, "model.layers[2].softmax.axis", "axis 0 is the batch"},
  {"dropout_rate_one", 6, 23, "model.layers[1].dropout.rate", "expected a number in [0, 1), found 1"},
  {"dropout_seed_draws_without_seed", 6, 28, "model.layers[1].dropout.seed_draws", "give seed too"},
  {"input_unknown_name", 6, 30, "model.layers[1].add.inputs", "no layer is named conv2d_7"},
  {"input_forward_reference", 6, 30, "model.layers[1].add.inputs", "skip is layer 2, after this one: a layer reads only the layers before it"},
  {"add_shapes_differ", 7, 7, "model.layers[2]", "add sums inputs of one shape: input 1 is [6, 6, 2], input 0 [6, 6, 4]"},
  {"concatenate_shapes_differ", 6, 7, "model.layers[1]", "joins inputs equal but on axis 3: input 1 is [4, 4, 4], input 0 [6, 6, 2]"},
  {"duplicate_layer_name", 7, 7, "model.layers[2].dense", "two layers are named dense (layers 1 and 2)"},
  {"add_one_input", 6, 7, "model.layers[1]", "layer 1 (add): expected 2 to 32 inputs, found 1"},
  {"inputs_ids_without_vocab", 5, 7, "model.inputs[1].vocab", "missing required key \"vocab\" (ids need their vocabulary size)"},
  {"inputs_duplicate_name", 5, 14, "model.inputs[1].name", "two model inputs are named numeric"},
  {"inputs_vocab_above_table", 8, 7, "model.layers[1]", "layer 1: its input c0 has ids below 9, more than its vocab 5"},
  {"inputs_dense_reads_ids", 7, 7, "model.layers[0]", "layer 0: a dense reads float features, but input c0 holds ids"},
  {"inputs_layer_named_as_input", 7, 50, "model.layers[0].dense", "layer 0 is named c0, as a model input is"},
  {"dataset_inputs_wrong_count", 14, 35, "dataset.inputs.c0", "expected 1 columns (its ids), found 2"},
  {"dataset_inputs_unknown_input", 14, 31, "dataset.inputs.c1", "no model input is named c1"},
  {"keras_unknown_layer", 3, 10, "model.keras", "../../keras/conv3d.json:129:4: layer 3 max_pooling2d (class_name Conv3D): unknown layer kind"},
  {"keras_and_layers", 4, 3, "model.layers", "give either keras (a Keras model config) or input and layers, not both"},
  {"input_shape_rank5", 3, 18, "model.input.shape", "expected one example's shape as a list of 1 to 4 sizes"},
  {"unknown_machine", 12, 32, "cluster.workers.machine", "unknown machine type \"n1-standard-3\""},
  {"machine_gpus_too_many", 12, 55, "cluster.workers.machine.gpus", "expected an integer from 1 to 8 (the GPUs of a dgx-a100), found 9"},
  {"machine_type_extra_key", 12, 49, "cluster.workers.machine.cpus", "a catalogue machine takes type and, on a GPU system, gpus, nics, transport, nic_bandwidth and efficiency"},
  {"machine_nic_bandwidth_no_unit", 12, 64, "cluster.workers.machine.nic_bandwidth", "expected a bandwidth with a unit such as 100GB/s or 25Gbps, found 100"},
  {"machine_nics_not_dividing", 12, 55, "cluster.workers.machine.nics", "expected a divisor of 8 (the GPUs of a dgx-a100), found 3"},
  {"unknown_nested_key", 10, 23, "training.stpes", "unknown key \"stpes\""},
  {"unknown_strategy", 11, 18, "strategy.kind", "found \"horovod\""},
  {"unknown_top_key", 11, 1, "colour", "unknown key \"colour\""},
  {"unknown_unit", 12, 28, "cluster.fabric.link_bandwidth", "found \"100GB/sec\""},
  {"wrong_type_map", 11, 10, "cluster", "found a sequence"},
  {"wrong_type_steps", 10, 19, "training.steps", "found \"ten\""},
  {"yaml_syntax", 11, 1, "training", "YAML syntax error"},
  {"zero_global_batch", 9, 17, "dataset.global_batch", "expected an integer >= 1, found 0"},
  {"zero_learning_rate", 6, 39, "optimizer.learning_rate", "expected a number > 0, found 0"},
  {"callbacks_monitor_needs_validation", 14, 33, "training.callbacks[0].early_stopping.monitor", "val_loss needs validation"},
  {"callbacks_unknown_monitor", 13, 57, "training.callbacks[0].model_checkpoint.monitor", "expected a value of the epoch's logs (loss), found accuracy"},
  {"callbacks_backup_and_checkpoint", 12, 3, "training.checkpoint", "or the backup_and_restore callback (fit's), not both"},
  {"callbacks_unknown_name", 13, 7, "training.callbacks[0]", "found csv_logger"},
  {"callbacks_early_stopping_numerics_off", 13, 14, "training.callbacks", "give numerics: full"},
  {"ps_fit_no_steps_per_epoch", 13, 12, "training.steps_per_epoch", "Model.fit under ParameterServerStrategy needs steps_per_epoch"},
  {"steps_per_epoch_sync", 12, 40, "training.steps_per_epoch", "goes with strategy kind parameter_server"},
  {"ps_fit_validation", 13, 61, "training.validation_split", "ValueError: validation_split is only supported for Tensors"},
  {"ps_fit_no_shards", 13, 60, "training.pss_evaluation_shards", "validates by Keras 2's exact evaluation here"},
  {"ps_fit_callbacks", 13, 54, "training.callbacks", "terminate_on_nan is not modelled there yet"},
};

static void test_bad_catalogue(void **state) {
  (void)state;
  int failures = 0;
  for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
    char rel[256], prefix[4200];
    snprintf(rel, sizeof rel, "tests/data/scenarios/bad/%s.yaml", BAD[i].name);
    const char *path = tu_src(rel);
    if (scenario_load(path, NULL, 0, &S, &E) != -1) {
      print_error("%s: loaded, expected an error\n", BAD[i].name);
      failures++;
      continue;
    }
    snprintf(prefix, sizeof prefix, "%s:%d:%d: %s: ", path, BAD[i].line, BAD[i].col, BAD[i].key);
    if (strncmp(E.msg, prefix, strlen(prefix)) || !strstr(E.msg, BAD[i].phrase) ||
        strcmp(E.file, path) || E.line != BAD[i].line || E.col != BAD[i].col || strcmp(E.key, BAD[i].key)) {
      print_error("%s:\n  got  %s\n  want %s... %s\n", BAD[i].name, E.msg, prefix, BAD[i].phrase);
      failures++;
    }
  }
  assert_true(sizeof BAD / sizeof BAD[0] >= 30);
  assert_int_equal(failures, 0);
}

/* Every key docs/scenario-format.md lists under "## Keys" is a key of the loader's tables: each
** "### SECTION" table's first column (`a`, `b` or `c`, `d`), as SECTION.key ("top level" keys at
** the root). The optimizer's rows name its kinds (the optimizer mapping's variants) and the model's layer
** rows (`dense.units`, `*.logical_device`) keys of model.layers' entries, so for those the
** table key they live under is what is checked. */
static void test_documented_keys_exist(void **state) {
  (void)state;
  FILE *f = fopen(tu_src("docs/scenario-format.md"), "r");
  assert_non_null(f);
  char line[2048], section[64] = "", path[256];
  int in_keys = 0, checked = 0;
  while (fgets(line, sizeof line, f)) {
    if (!strncmp(line, "## ", 3)) in_keys = !strncmp(line, "## Keys", 7);
    if (!in_keys) continue;
    if (!strncmp(line, "### ", 4)) {
      sscanf(line + 4, "%63s", section);
      if (!strcmp(section, "top")) section[0] = 0;
      continue;
    }
    /* the callbacks' table lists the names of training.callbacks' entries */
    if (!strncmp(line, "#### Callbacks", 14)) snprintf(section, sizeof section, "training.callbacks");
    if (strncmp(line, "| `", 3) != 0) continue;
    char *cell = line + 1, *end = strchr(cell, '|');
    *end = 0;
    for (char *tick = strchr(cell, '`'); tick; tick = strchr(tick, '`')) {
      char *close = strchr(tick + 1, '`');
      *close = 0;
      const char *key = tick + 1;
      tick = close + 1;
      if (!strcmp(section, "optimizer")) key = NULL;
      char layer_key[128];
      if (!strcmp(section, "model") && !strncmp(key, "*.", 2))  /* a key of every kind: dense's */
        key = base_format(layer_key, sizeof layer_key, "layers.dense.%s", key + 2);
      else if (!strcmp(section, "model") && strchr(key, '.') && strncmp(key, "loss.", 5))
        key = base_format(layer_key, sizeof layer_key, "layers.%s", key);
      else if (!strcmp(section, "model") && md_layer_kind_from_name(key) >= 0)  /* a kind without keys */
        key = base_format(layer_key, sizeof layer_key, "layers.%s", key);
      if (key == NULL) snprintf(path, sizeof path, "%s", section);  /* a kind of the mapping */
      else if (section[0]) snprintf(path, sizeof path, "%s.%s", section, key);
      else snprintf(path, sizeof path, "%s", key);
      if (!scenario_key_path_known(path)) fail_msg("docs/scenario-format.md lists %s, which the loader does not know", path);
      checked++;
    }
  }
  fclose(f);
  assert_true(checked > 60);
  assert_false(scenario_key_path_known("dataset.global_bach"));
  assert_false(scenario_key_path_known("model.layers.conv2d.filter"));
  /* the loader's layer kinds are the model registry's, name for name */
  for (int k = 0; k < MD_LAYER_KIND_COUNT; k++) {
    snprintf(path, sizeof path, "model.layers.%s", md_layer_kind_name((md_layer_kind)k));
    if (!scenario_key_path_known(path)) fail_msg("the loader has no keys for layer kind %s", path);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_units_exact),
    cmocka_unit_test(test_machines),
    cmocka_unit_test(test_good_dense),
    cmocka_unit_test(test_layer_keys),
    cmocka_unit_test(test_dropout_seed_keys),
    cmocka_unit_test(test_zoo_keys),
    cmocka_unit_test(test_good_custom_machine_and_ids),
    cmocka_unit_test(test_defaults),
    cmocka_unit_test(test_communication_options), cmocka_unit_test(test_overrides),
    cmocka_unit_test(test_missing_file),
    cmocka_unit_test(test_tf_config_file),
    cmocka_unit_test(test_bad_catalogue),
    cmocka_unit_test(test_documented_keys_exist),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
