/*
** test_keras.c: Keras model configs (models/keras.c) as TensorFlow.js 4.22.0's model.toJSON()
** writes them (tests/golden/keras_json/gen.js, tests/golden/residual/model.json): podsim builds
** the variables tfjs-layers made (every name and size of the init file, which lists them in
** Keras's order) and, from those values, predicts what tfjs-layers predicts, within
** TU_GOLDEN_CLOSE; the residual golden's config gives its first loss. Hand-written Keras 2 and
** Keras 3 configs cover what tfjs cannot write (MultiHeadAttention, keras_history), and the
** errors point at the layer's object in the file.
*/
#include "tests/testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/dataset.h"
#include "models/keras.h"
#include "models/model.h"
#include "models/weights.h"

enum { MAX_VALUES = 512 };

/* Every number of a CSV without a header, row-major; returns how many. */
static int read_numbers(const char *rel, double *v) {
  FILE *f = fopen(tu_src(rel), "r");
  assert_non_null(f);
  int n = 0;
  while (n < MAX_VALUES && fscanf(f, "%lf", &v[n]) == 1) {
    n++;
    if (fgetc(f) == EOF) break;
  }
  fclose(f);
  return n;
}

static md_model *build(const md_keras_model *k) {
  md_model_spec spec = md_keras_model_spec(k);
  spec.from_logits = 1;
  md_error err = {0};
  md_model *m = md_model_new(&spec, &err);
  if (m == NULL) fail_msg("%s", err.msg);
  return m;
}

/* NAME.json built, NAME_init.csv read (so the variables are tfjs's, name and size), NAME_x.csv
** predicted and compared with NAME_predict.csv. */
static void check_predictions(const char *name, int nlayers, int nvars) {
  char rel[128];
  md_keras_model k;
  md_error err = {0};
  snprintf(rel, sizeof rel, "tests/golden/keras_json/%s.json", name);
  if (md_keras_read(tu_src(rel), &k, &err)) fail_msg("%s:%d:%d: %s", rel, err.line, err.col, err.msg);
  assert_int_equal(k.nlayers, nlayers);
  md_model *m = build(&k);
  assert_int_equal(md_model_num_vars(m), nvars);
  snprintf(rel, sizeof rel, "tests/golden/keras_json/%s_init.csv", name);
  if (md_weights_read(m, tu_src(rel), &err)) fail_msg("%s:%d:%d: %s", rel, err.line, err.col, err.msg);
  static double x[MAX_VALUES], want[MAX_VALUES];
  static float xf[MAX_VALUES];
  static int32_t ids[MAX_VALUES];
  snprintf(rel, sizeof rel, "tests/golden/keras_json/%s_x.csv", name);
  int nx = read_numbers(rel, x);
  snprintf(rel, sizeof rel, "tests/golden/keras_json/%s_predict.csv", name);
  int ny = read_numbers(rel, want), classes = md_model_num_classes(m), n = ny / classes;
  for (int i = 0; i < nx; i++) xf[i] = (float)x[i], ids[i] = (int32_t)x[i];
  int32_t labels[MAX_VALUES] = {0};
  md_batch b = {n, k.input_ids ? NULL : xf, k.input_ids ? ids : NULL, labels, NULL};
  md_workspace *w = md_workspace_new(m);
  const float *got = md_model_forward(m, w, &b, NULL);
  double worst = 0;
  for (int i = 0; i < ny; i++) {
    if (!TU_GOLDEN_CLOSE(got[i], want[i])) fail_msg("%s output %d: %.9g, tfjs %.9g", name, i, got[i], want[i]);
    worst = fmax(worst, fabs(got[i] - want[i]));
  }
  print_message("%s: %d predictions, max |podsim - tfjs| %.3g\n", name, ny, worst);
  md_workspace_free(w);
  md_model_free(m);
  md_keras_free(&k);
}

/* Two Input layers (tfjs lists c0's InputLayer first, config.input_layers numeric first: the
** batch's columns follow input_layers, Keras's model.inputs): numeric [3] a float input, c0 an id
** input of vocab 6 (its Embedding's input_dim); tfjs-layers' predictions of [numeric, c0] rows. */
static void test_multi_input(void **state) {
  (void)state;
  check_predictions("multi_input", 5, 5);
  md_keras_model k;
  md_error err = {0};
  if (md_keras_read(tu_src("tests/golden/keras_json/multi_input.json"), &k, &err)) fail_msg("%s", err.msg);
  assert_int_equal(k.ninputs, 2);
  assert_string_equal(k.inputs[0].name, "numeric");
  assert_int_equal(k.inputs[0].features, 3);
  assert_string_equal(k.inputs[1].name, "c0");
  assert_int_equal(k.inputs[1].ids, 1);
  assert_int_equal(k.inputs[1].vocab, 6);
  assert_int_equal(k.layers[0].inputs[0], MD_MODEL_INPUT(1));
  md_keras_free(&k);
}

static void test_sequential(void **state) {
  (void)state;
  check_predictions("sequential", 12, 12);
}

static void test_functional(void **state) {
  (void)state;
  check_predictions("functional", 8, 8);
}

static void test_embedding(void **state) {
  (void)state;
  check_predictions("embedding", 3, 3);
}

/* The residual golden's config: the graph of its scenario (add reads conv2d_1 then conv2d, the
** average pooling the activation, ...), and with its init the first step's mean loss. */
static void test_residual_config(void **state) {
  (void)state;
  md_keras_model k;
  md_error err = {0};
  if (md_keras_read(tu_src("tests/golden/residual/model.json"), &k, &err)) fail_msg("%d:%d: %s", err.line, err.col, err.msg);
  assert_int_equal(k.nlayers, 9);
  assert_string_equal(k.layers[2].name, "add");
  assert_int_equal(k.layers[2].ninputs, 2);
  assert_int_equal(k.layers[2].inputs[0], 1);
  assert_int_equal(k.layers[2].inputs[1], 0);
  assert_int_equal(k.layers[5].inputs[0], 3);
  assert_int_equal(k.layers[0].inputs[0], MD_INPUT_MODEL);
  md_model *m = build(&k);
  if (md_weights_read(m, tu_src("tests/golden/residual/init.csv"), &err)) fail_msg("%s", err.msg);
  md_dataset *d = md_dataset_load_csv(tu_src("tests/golden/residual/data.csv"), "label", 0, 3, &err);
  assert_non_null(d);
  static float x[16 * 72];
  int32_t labels[16];
  md_dataset_gather(d, 0, 16, x, NULL, labels, NULL);
  md_batch b = {16, x, NULL, labels, NULL};
  md_workspace *w = md_workspace_new(m);
  double loss = md_model_loss(m, w, &b, NULL) / 16;
  assert_true(TU_GOLDEN_CLOSE(loss, 1.0699147));  /* tests/golden/residual/r1/expected_loss.csv, step 0 */
  md_workspace_free(w);
  md_dataset_free(d);
  md_model_free(m);
  md_keras_free(&k);
}

/* Keras 2's functional self-attention (value as a call keyword, use_causal_mask too) and
** Keras 3's inbound nodes (args of keras tensors, keras_history). */
static const char KERAS2_ATTENTION[] =
    "{\"class_name\": \"Functional\", \"config\": {\"name\": \"m\", \"layers\": [\n"
    " {\"class_name\": \"InputLayer\", \"name\": \"x\", \"config\": {\"batch_input_shape\": [null, 4, 6], \"dtype\": \"float32\", \"name\": \"x\"}, \"inbound_nodes\": []},\n"
    " {\"class_name\": \"MultiHeadAttention\", \"name\": \"mha\", \"config\": {\"name\": \"mha\", \"trainable\": true, \"dtype\": \"float32\", \"num_heads\": 2, \"key_dim\": 3, \"value_dim\": 3, \"dropout\": 0.0, \"use_bias\": true, \"output_shape\": null, \"attention_axes\": null, \"kernel_initializer\": {\"class_name\": \"GlorotUniform\"}, \"kernel_regularizer\": null, \"query_shape\": [null, 4, 6]},\n"
    "  \"inbound_nodes\": [[[\"x\", 0, 0, {\"value\": [\"x\", 0, 0], \"use_causal_mask\": true}]]]},\n"
    " {\"class_name\": \"Flatten\", \"name\": \"flatten\", \"config\": {\"name\": \"flatten\", \"data_format\": \"channels_last\"}, \"inbound_nodes\": [[[\"mha\", 0, 0, {}]]]},\n"
    " {\"class_name\": \"Dense\", \"name\": \"dense\", \"config\": {\"name\": \"dense\", \"units\": 3, \"activation\": \"gelu\", \"use_bias\": false}, \"inbound_nodes\": [[[\"flatten\", 0, 0, {}]]]}],\n"
    " \"input_layers\": [[\"x\", 0, 0]], \"output_layers\": [[\"dense\", 0, 0]]}, \"keras_version\": \"2.15.0\", \"backend\": \"tensorflow\"}\n";
static const char KERAS3_ADD[] =
    "{\"module\": \"keras\", \"class_name\": \"Functional\", \"config\": {\"name\": \"f\", \"layers\": [\n"
    " {\"module\": \"keras.layers\", \"class_name\": \"InputLayer\", \"name\": \"in\", \"config\": {\"batch_shape\": [null, 3], \"dtype\": \"float32\", \"sparse\": false, \"name\": \"in\"}, \"inbound_nodes\": []},\n"
    " {\"class_name\": \"Dense\", \"name\": \"d\", \"config\": {\"name\": \"d\", \"units\": 3, \"activation\": \"linear\", \"use_bias\": true, \"dtype\": {\"module\": \"keras\", \"class_name\": \"DTypePolicy\", \"config\": {\"name\": \"float32\"}}},\n"
    "  \"build_config\": {\"input_shape\": [null, 3]}, \"inbound_nodes\": [{\"args\": [{\"class_name\": \"__keras_tensor__\", \"config\": {\"shape\": [null, 3], \"dtype\": \"float32\", \"keras_history\": [\"in\", 0, 0]}}], \"kwargs\": {}}]},\n"
    " {\"class_name\": \"Add\", \"name\": \"a\", \"config\": {\"name\": \"a\", \"trainable\": true}, \"inbound_nodes\": [{\"args\": [[{\"class_name\": \"__keras_tensor__\", \"config\": {\"keras_history\": [\"d\", 0, 0]}}, {\"class_name\": \"__keras_tensor__\", \"config\": {\"keras_history\": [\"in\", 0, 0]}}]], \"kwargs\": {}}]}],\n"
    " \"input_layers\": [[\"in\", 0, 0]], \"output_layers\": [[\"a\", 0, 0]]}}\n";

static void test_keras2_and_keras3_forms(void **state) {
  (void)state;
  md_keras_model k;
  md_error err = {0};
  if (md_keras_parse(KERAS2_ATTENTION, strlen(KERAS2_ATTENTION), &k, &err)) fail_msg("%d:%d: %s", err.line, err.col, err.msg);
  assert_int_equal(k.nlayers, 3);
  assert_int_equal(k.input_shape.rank, 2);
  assert_int_equal(k.layers[0].kind, MD_LAYER_MULTI_HEAD_ATTENTION);
  assert_int_equal(k.layers[0].ninputs, 1);
  assert_int_equal(k.layers[0].use_causal_mask, 1);
  assert_int_equal(k.layers[2].activation, MD_ACT_GELU);
  assert_int_equal(k.layers[2].use_bias, 0);
  md_model *m = build(&k);
  assert_int_equal(md_model_find_var(m, "mha/query/kernel"), 0);
  md_model_free(m);
  md_keras_free(&k);
  if (md_keras_parse(KERAS3_ADD, strlen(KERAS3_ADD), &k, &err)) fail_msg("%d:%d: %s", err.line, err.col, err.msg);
  assert_int_equal(k.nlayers, 2);
  assert_int_equal(k.layers[1].ninputs, 2);
  assert_int_equal(k.layers[1].inputs[0], 0);
  assert_int_equal(k.layers[1].inputs[1], MD_INPUT_MODEL);
  md_keras_free(&k);
}

/* Keras's BatchNormalization(synchronized=True) writes "synchronized": true into its config
** (Keras 3 and tf.keras 2.12+): the layer normalises by the replicas' global statistics. */
static const char KERAS3_SYNC_BN[] =
    "{\"class_name\": \"Sequential\", \"config\": {\"name\": \"s\", \"layers\": [\n"
    " {\"class_name\": \"InputLayer\", \"config\": {\"batch_shape\": [null, 4], \"dtype\": \"float32\", \"name\": \"in\"}},\n"
    " {\"class_name\": \"BatchNormalization\", \"config\": {\"name\": \"bn\", \"axis\": -1, \"momentum\": 0.9, \"epsilon\": 0.001, \"center\": true, \"scale\": true, \"synchronized\": true}},\n"
    " {\"class_name\": \"BatchNormalization\", \"config\": {\"name\": \"bn2\", \"axis\": -1, \"synchronized\": false}}]}}\n";

static void test_batch_normalization_synchronized(void **state) {
  (void)state;
  md_keras_model k;
  md_error err = {0};
  if (md_keras_parse(KERAS3_SYNC_BN, strlen(KERAS3_SYNC_BN), &k, &err)) fail_msg("%d:%d: %s", err.line, err.col, err.msg);
  assert_int_equal(k.nlayers, 2);
  assert_int_equal(k.layers[0].kind, MD_LAYER_BATCH_NORMALIZATION);
  assert_int_equal(k.layers[0].synchronized, 1);
  assert_int_equal(k.layers[1].synchronized, 0);
  md_keras_free(&k);
}

/* BASE with FROM replaced by TO is refused at LINE:COL with a message holding MSG (case LABEL). */
static void expect_refused(const char *base, const char *from, const char *to, int line, int col, const char *msg,
                           size_t label) {
  static char text[16384];
  const char *at = strstr(base, from);
  assert_non_null(at);
  snprintf(text, sizeof text, "%.*s%s%s", (int)(at - base), base, to, at + strlen(from));
  md_keras_model k;
  md_error err = {0};
  assert_int_equal(md_keras_parse(text, strlen(text), &k, &err), -1);
  if (err.line != line || err.col != col || !strstr(err.msg, msg))
    fail_msg("case %zu: %d:%d: %s", label, err.line, err.col, err.msg);
  assert_int_equal(k.nlayers, 0);
}

/* Errors name the layer (its index in config.layers, name and class_name) at its object's
** line:col, or the JSON error's position. */
static void test_errors(void **state) {
  (void)state;
  static const struct {
    const char *from, *to;  /* KERAS2_ATTENTION with from replaced by to */
    int line, col;
    const char *msg;
  } cases[] = {
      {"\"Flatten\"", "\"Conv3D\"", 5, 2, "layer 2 flatten (class_name Conv3D): unknown layer kind"},
      {"\"kernel_regularizer\": null", "\"kernel_regularizer\": {\"l2\": 0.01}", 3, 2,
       "layer 1 mha (class_name MultiHeadAttention): unsupported option kernel_regularizer: {\"l2\":0.01}"},
      {"\"dropout\": 0.0", "\"dropout\": 0.1", 3, 2, "unsupported option dropout: 0.1"},
      {"\"units\": 3,", "\"units\": 3, \"unknown_thing\": 1, \"another\": 2,", 6, 2, "unsupported option another: 2"},
      {"{\"value\": [\"x\", 0, 0]", "{\"value\": [\"flatten\", 0, 0]", 3, 2, "reads flatten, no earlier layer"},
      {"[[[\"flatten\", 0, 0, {}]]]", "[[[\"flatten\", 0, 0, {}], [\"x\", 0, 0, {}]]]", 6, 2,
       "layer dense (the model's layer 2 without its InputLayer): layer 2 (dense): expected one input, found 2"},
      {"\"output_layers\": [[\"dense\"", "\"output_layers\": [[\"flatten\"", 6, 2, "expected one output, the last layer's (dense)"},
      {"\"units\": 3", "\"units\": 3 3", 6, 82, "'}' expected near '3'"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    expect_refused(KERAS2_ATTENTION, cases[i].from, cases[i].to, cases[i].line, cases[i].col, cases[i].msg, i);
}

/* Keras 3.15.1's model.to_json() (tests/data/keras/gen_keras315.py), one layer object a line:
** config.layers[i] starts at line i + 2, column 1. It writes keys older releases did not
** (InputLayer optional, quantization_config, renorm_clipping and renorm_momentum, use_gate,
** sliding_window, the built attention_axes [1]), a DTypePolicy object per layer, and a model of
** one input or output as that one reference (input_layers: ["in", 0, 0]). */
static char *read_text(const char *rel) {
  FILE *f = fopen(tu_src(rel), "rb");
  assert_non_null(f);
  static char text[16384];
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  return text;
}

/* Dropout's seed: null (Keras drew one the config does not hold) leaves the layer on podsim's
** stream; an integer makes it seeded, drawing Keras's masks from SeedGenerator(seed) (a seed
** beyond int32 kept whole); anything else is refused at the layer's object (line 163, column 4:
** the Dropout object of sequential.json). */
#define DROPOUT_SEED "\"noise_shape\": null,\n     \"seed\": null"
static void test_dropout_seed(void **state) {
  (void)state;
  const char *base = read_text("tests/golden/keras_json/sequential.json");
  static const struct {
    const char *seed;     /* the config's "seed" value */
    int seeded;           /* the layer's spec.seeded */
    int64_t value;        /* and its seed */
  } cases[] = {{"null", 0, 0}, {"42", 1, 42}, {"12345678901", 1, 12345678901LL}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    static char text[16384];
    const char *at = strstr(base, DROPOUT_SEED);  /* an initializer's seed comes first */
    assert_non_null(at);
    snprintf(text, sizeof text, "%.*s\"noise_shape\": null, \"seed\": %s%s", (int)(at - base), base, cases[c].seed,
             at + strlen(DROPOUT_SEED));
    md_keras_model k;
    md_error err = {0};
    if (md_keras_parse(text, strlen(text), &k, &err)) fail_msg("%d:%d: %s", err.line, err.col, err.msg);
    int found = 0;
    for (int l = 0; l < k.nlayers; l++) {
      if (k.layers[l].kind != MD_LAYER_DROPOUT) continue;
      found++;
      assert_int_equal(k.layers[l].seeded, cases[c].seeded);
      assert_int_equal(k.layers[l].seed, cases[c].value);
    }
    assert_int_equal(found, 1);
    md_keras_free(&k);
  }
  expect_refused(base, DROPOUT_SEED, "\"noise_shape\": null, \"seed\": 1.5", 163, 4, "unsupported option seed: 1.5", 0);
}

static void test_keras315_exports(void **state) {
  (void)state;
  md_keras_model k;
  md_error err = {0};
  if (md_keras_read(tu_src("tests/data/keras/keras315_mlp_bf16.json"), &k, &err)) fail_msg("%d:%d: %s", err.line, err.col, err.msg);
  assert_int_equal(k.nlayers, 3);  /* d1, bn, d2: the InputLayer gives the input [4] */
  assert_int_equal(k.input_shape.rank, 1);
  assert_int_equal(k.input_shape.dim[0], 4);
  assert_int_equal(k.layers[1].kind, MD_LAYER_BATCH_NORMALIZATION);
  assert_int_equal(k.dtype_policy, MD_POLICY_MIXED_BFLOAT16);  /* every layer's DTypePolicy */
  md_model *m = build(&k);
  /* d1 4x8 + 8, bn gamma beta mean variance 4 x 8, d2 8x3 + 3: 40 + 32 + 27 = 99 */
  assert_int_equal(md_model_num_params(m), 99);
  md_model_free(m);
  md_keras_free(&k);
  if (md_keras_read(tu_src("tests/data/keras/keras315_attention.json"), &k, &err)) fail_msg("%d:%d: %s", err.line, err.col, err.msg);
  assert_int_equal(k.nlayers, 4);  /* mha, ln, flat, out */
  assert_int_equal(k.input_shape.rank, 2);
  assert_int_equal(k.layers[0].kind, MD_LAYER_MULTI_HEAD_ATTENTION);
  assert_int_equal(k.layers[0].ninputs, 1);
  assert_int_equal(k.dtype_policy, MD_POLICY_FLOAT32);
  md_keras_free(&k);
}

/* The new keys at another value than their default, and policies podsim cannot run, are refused
** at the layer's line (i + 2 for config.layers[i]). */
static void test_keras315_refusals(void **state) {
  (void)state;
  static const struct {
    const char *file, *from, *to;
    int line;
    const char *msg;
  } cases[] = {
      {"mlp_bf16", "\"optional\": false", "\"optional\": true", 2,
       "layer 0 in (class_name InputLayer): unsupported option optional: true"},
      {"mlp_bf16", "\"quantization_config\": null", "\"quantization_config\": {\"mode\": \"int8\"}", 3,
       "layer 1 d1 (class_name Dense): unsupported option quantization_config"},
      {"mlp_bf16", "\"renorm\": false", "\"renorm\": true", 4, "unsupported option renorm: true"},
      {"mlp_bf16", "\"name\": \"d2\", \"trainable\": true, \"dtype\": {\"module\": \"keras\", \"class_name\": \"DTypePolicy\", \"config\": {\"name\": \"mixed_bfloat16\"}",
       "\"name\": \"d2\", \"trainable\": true, \"dtype\": {\"module\": \"keras\", \"class_name\": \"DTypePolicy\", \"config\": {\"name\": \"float32\"}", 5,
       "layer 3 d2 (class_name Dense): dtype policy float32 where the layers before have mixed_bfloat16"},
      {"mlp_bf16", "\"name\": \"d1\", \"trainable\": true, \"dtype\": {\"module\": \"keras\", \"class_name\": \"DTypePolicy\", \"config\": {\"name\": \"mixed_bfloat16\"}",
       "\"name\": \"d1\", \"trainable\": true, \"dtype\": {\"module\": \"keras\", \"class_name\": \"DTypePolicy\", \"config\": {\"name\": \"bfloat16\"}", 3,
       "unsupported option dtype"},
      {"attention", "\"use_gate\": false", "\"use_gate\": true", 3,
       "layer 1 mha (class_name MultiHeadAttention): unsupported option use_gate: true"},
      {"attention", "\"sliding_window\": null", "\"sliding_window\": 4", 3, "unsupported option sliding_window: 4"},
      {"attention", "\"attention_axes\": [1]", "\"attention_axes\": [2]", 3, "unsupported option attention_axes: [2]"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char rel[128];
    snprintf(rel, sizeof rel, "tests/data/keras/keras315_%s.json", cases[i].file);
    expect_refused(read_text(rel), cases[i].from, cases[i].to, cases[i].line, 1, cases[i].msg, i);
  }
}

/* A Sequential config of an InputLayer ([8]) and n layers, one object per line: line 1 opens it,
** the InputLayer is line 2, layer j line 3 + j, column 1; layer `bad` (-1: none) is a Reshape to
** [3], which 8 elements cannot take. */
static char *deep_config(int n, int bad) {
  size_t cap = 200 + (size_t)n * 80, len = 0;
  char *t = malloc(cap);
  assert_non_null(t);
  len += (size_t)snprintf(t + len, cap - len, "{\"class_name\": \"Sequential\", \"config\": {\"layers\": [\n"
                          "{\"class_name\": \"InputLayer\", \"config\": {\"batch_input_shape\": [null, 8], \"name\": \"in\"}}");
  for (int j = 0; j < n; j++)
    len += (size_t)snprintf(t + len, cap - len, j == bad
                            ? ",\n{\"class_name\": \"Reshape\", \"config\": {\"name\": \"r%d\", \"target_shape\": [3]}}"
                            : ",\n{\"class_name\": \"Dense\", \"config\": {\"name\": \"d%d\", \"units\": 8}}", j);
  snprintf(t + len, cap - len, "]}}\n");
  return t;
}

/* Issue 29: 2000 layers took 9.5 s (each layer's position found from the file's start, every
** prefix of the model built); now one pass and one build, bisected only on an error. The bound
** (MD_KERAS_MAX_LAYERS, InputLayer included) is checked first, at the first layer's object
** (line 2). A bad layer deep in a model is still named at its own line: 703 for layer 700. */
static void test_many_layers(void **state) {
  (void)state;
  md_keras_model k;
  md_error err = {0};
  char *t = deep_config(MD_KERAS_MAX_LAYERS - 1, -1);
  assert_int_equal(md_keras_parse(t, strlen(t), &k, &err), 0);
  assert_int_equal(k.nlayers, MD_KERAS_MAX_LAYERS - 1);
  assert_int_equal(k.line[MD_KERAS_MAX_LAYERS - 2], MD_KERAS_MAX_LAYERS + 1);
  md_keras_free(&k);
  free(t);
  t = deep_config(MD_KERAS_MAX_LAYERS, -1);
  assert_int_equal(md_keras_parse(t, strlen(t), &k, &err), -1);
  assert_true(err.line == 2 && err.col == 1);
  assert_string_equal(err.msg, "expected at most 1024 layers (InputLayers included), found 1025");
  free(t);
  t = deep_config(1000, 700);
  assert_int_equal(md_keras_parse(t, strlen(t), &k, &err), -1);
  assert_true(err.line == 703 && err.col == 1);
  assert_non_null(strstr(err.msg, "layer r700 (the model's layer 700 without its InputLayer)"));
  free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sequential),
      cmocka_unit_test(test_dropout_seed),
      cmocka_unit_test(test_functional),
      cmocka_unit_test(test_embedding),
      cmocka_unit_test(test_multi_input),
      cmocka_unit_test(test_residual_config),
      cmocka_unit_test(test_keras2_and_keras3_forms),
      cmocka_unit_test(test_batch_normalization_synchronized),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_keras315_exports),
      cmocka_unit_test(test_keras315_refusals),
      cmocka_unit_test(test_many_layers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
