/*
** test_dlrm.c: several model inputs (models/inputs.c) and the dot interaction
** (layers/dot_interaction.c): hand-worked values, finite-difference gradients through embedding
** tables and an interaction that reads one table twice, costs without numerics, the spec's and
** the data's errors.
*/
#include "tests/testutil.h"

#include <math.h>
#include <string.h>

#include "models/model.h"
#include "sim/rng.h"
#include "tests/models/fd.h"

static md_model *new_model(const md_model_input *in, int nin, const md_layer_spec *l, int nl, int shapes_only,
                           md_error *err) {
  md_model_spec spec = {.ninputs = nin, .inputs = in, .nlayers = nl, .layers = l, .from_logits = 1,
                        .shapes_only = shapes_only};
  return md_model_new(&spec, err);
}

/* Three float inputs x0 = [1, 2], x1 = [3, 4], x2 = [5, 6] read by one dot_interaction: out =
** [x0, x1.x0, x2.x0, x2.x1] = [1, 2, 3 + 8, 5 + 12, 15 + 24] = [1, 2, 11, 17, 39]. */
static void test_dot_interaction_forward(void **state) {
  (void)state;
  const md_model_input in[3] = {{"a", 2, 0, 0}, {"b", 2, 0, 0}, {"c", 2, 0, 0}};
  const md_layer_spec l = {.kind = MD_LAYER_DOT_INTERACTION, .ninputs = 3,
                           .inputs = {MD_MODEL_INPUT(0), MD_MODEL_INPUT(1), MD_MODEL_INPUT(2)}};
  md_error err = {0};
  md_model *m = new_model(in, 3, &l, 1, 0, &err);
  if (m == NULL) fail_msg("%s", err.msg);
  assert_string_equal(md_model_layer_name(m, 0), "dot_interaction");
  assert_int_equal(md_model_layer_output_shape(m, 0).dim[0], 5);
  const float x[6] = {1, 2, 3, 4, 5, 6};
  md_workspace *w = md_workspace_new(m);
  md_batch b = {1, x, NULL, NULL, NULL};
  const float *out = md_model_forward(m, w, &b, NULL);
  const float want[5] = {1, 2, 11, 17, 39};
  for (int i = 0; i < 5; i++) assert_true(out[i] == want[i]);
  md_workspace_free(w);
  md_model_free(m);
}

/* A DLRM at toy size: a dense input of 3 through Dense(4, tanh) (the bottom MLP), an id input of
** one id (table of 4 rows) and one of two ids summed (a multi-hot feature, table of 3 rows),
** their dot interaction reading table 0 twice (so its gradient is a sum), Dense(3) logits. */
static const md_model_input toy_inputs[3] = {{"dense", 3, 0, 0}, {"c0", 0, 1, 4}, {"c1", 0, 2, 3}};
static const md_layer_spec toy_layers[5] = {
  {.kind = MD_LAYER_DENSE, .units = 4, .activation = MD_ACT_TANH, .use_bias = 1, .ninputs = 1,
   .inputs = {MD_MODEL_INPUT(0)}},
  {.kind = MD_LAYER_EMBEDDING, .vocab = 4, .dim = 4, .combiner = MD_COMBINER_SUM, .ninputs = 1,
   .inputs = {MD_MODEL_INPUT(1)}},
  {.kind = MD_LAYER_EMBEDDING, .vocab = 3, .dim = 4, .combiner = MD_COMBINER_SUM, .ninputs = 1,
   .inputs = {MD_MODEL_INPUT(2)}},
  {.kind = MD_LAYER_DOT_INTERACTION, .ninputs = 4, .inputs = {0, 1, 2, 1}},
  {.kind = MD_LAYER_DENSE, .units = 3, .use_bias = 1},
};
/* Rows [f0, f1, f2, c0, c1, c1']. */
static const float toy_x[4 * 6] = {0.5f, -1, 0.25f, 0, 1, 2, -0.75f, 0.5f, 1, 3, 0, 0,
                                   0.1f, 0.9f, -0.4f, 2, 2, 1, 1, -0.2f, 0.6f, 1, 1, 0};
static const int32_t toy_labels[4] = {0, 2, 1, 1};

static void test_grad_dlrm(void **state) {
  (void)state;
  md_error err = {0};
  md_model *m = new_model(toy_inputs, 3, toy_layers, 5, 0, &err);
  if (m == NULL) fail_msg("%s", err.msg);
  /* 4 + 6 pairs of the four vectors. */
  assert_int_equal(md_model_layer_output_shape(m, 3).dim[0], 10);
  assert_int_equal(md_model_num_vars(m), 6);
  assert_string_equal(md_model_var(m, 3)->name, "embedding_1/embeddings");
  md_batch b = {4, toy_x, NULL, toy_labels, NULL};
  fd_check(m, &b, 1400, 0);
  md_model_free(m);
}

/* Numerics off counts what numerics on counts; the forward's interaction is 2 F^2 d = 2*16*4 =
** 128 FLOPs an example, its backward 2 F^2 d + F^2 = 144. */
static void test_dlrm_costs_mode_independent(void **state) {
  (void)state;
  md_model_spec spec = {.ninputs = 3, .inputs = toy_inputs, .nlayers = 5, .layers = toy_layers, .from_logits = 1};
  fd_assert_spec_costs_mode_independent(spec, (md_batch){4, toy_x, NULL, toy_labels, NULL});

  md_cost one = {0};
  md_error err = {0};
  const md_layer_spec alone = {.kind = MD_LAYER_DOT_INTERACTION, .ninputs = 4,
                               .inputs = {MD_MODEL_INPUT(0), MD_MODEL_INPUT(1), MD_MODEL_INPUT(2), MD_MODEL_INPUT(3)}};
  const md_model_input four[4] = {{"a", 4, 0, 0}, {"b", 4, 0, 0}, {"c", 4, 0, 0}, {"d", 4, 0, 0}};
  md_model *m = new_model(four, 4, &alone, 1, 1, &err);
  assert_non_null(m);
  md_workspace *w = md_workspace_new(m);
  md_batch b = {1, NULL, NULL, NULL, NULL};
  md_model_forward(m, w, &b, &one);
  assert_true(one.flops == 128);
  md_workspace_free(w);
  md_model_free(m);
}

/* The spec's errors, each naming what it expected. */
static void test_model_input_errors(void **state) {
  (void)state;
  const struct {
    md_model_input in[2];
    md_layer_spec l;
    const char *msg;
  } cases[] = {
    {{{"x", 2, 0, 0}, {"x", 0, 1, 3}}, {.kind = MD_LAYER_DENSE, .units = 1},
     "model input 1 needs a name no earlier input has (found \"x\")"},
    {{{"x", 2, 1, 3}, {"y", 0, 1, 3}}, {.kind = MD_LAYER_DENSE, .units = 1},
     "model input x: give features or ids (one of them > 0), found 2 and 1"},
    {{{"x", 2, 0, 0}, {"y", 0, 1, 0}}, {.kind = MD_LAYER_DENSE, .units = 1},
     "model input y: ids need vocab > 0, found 0"},
    {{{"x", 2, 0, 0}, {"y", 0, 1, 3}}, {.kind = MD_LAYER_DENSE, .units = 1, .ninputs = 1, .inputs = {MD_MODEL_INPUT(1)}},
     "layer 0: a dense reads float features, but input y holds ids"},
    {{{"x", 2, 0, 0}, {"y", 0, 1, 3}}, {.kind = MD_LAYER_EMBEDDING, .vocab = 3, .dim = 2, .ninputs = 1,
                                         .inputs = {MD_MODEL_INPUT(0)}},
     "layer 0: an embedding reads one id input of the model alone"},
    {{{"x", 2, 0, 0}, {"y", 0, 1, 5}}, {.kind = MD_LAYER_EMBEDDING, .vocab = 3, .dim = 2, .ninputs = 1,
                                         .inputs = {MD_MODEL_INPUT(1)}},
     "layer 0: its input y has ids below 5, more than its vocab 3"},
    {{{"x", 2, 0, 0}, {"y", 0, 1, 3}}, {.kind = MD_LAYER_DENSE, .units = 1, .ninputs = 1, .inputs = {MD_MODEL_INPUT(2)}},
     "layer 0: input 0 is layer -3: a layer reads a model input (-1..-2) or an earlier layer's output"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    md_error err = {0};
    assert_null(new_model(cases[i].in, 2, &cases[i].l, 1, 0, &err));
    assert_string_equal(err.msg, cases[i].msg);
  }
  md_error err = {0};
  const md_layer_spec two[2] = {{.kind = MD_LAYER_DENSE, .units = 3, .ninputs = 1, .inputs = {MD_MODEL_INPUT(0)}},
                                {.kind = MD_LAYER_DOT_INTERACTION, .ninputs = 2, .inputs = {MD_MODEL_INPUT(0), 0}}};
  const md_model_input one[1] = {{"x", 2, 0, 0}};
  assert_null(new_model(one, 1, two, 2, 0, &err));
  assert_string_equal(err.msg, "layer 1 (dot_interaction): dot_interaction reads vectors of one width (input 0 is [2]): input 1 is [3]");
}

/* md_inputs_check_ids: ids are integers in [0, vocab); row 1's c1' (column 5) is 3, past c1's 3 rows. */
static void test_check_ids(void **state) {
  (void)state;
  md_inputs_bad bad;
  assert_int_equal(md_inputs_check_ids(toy_inputs, 3, toy_x, 4, &bad), 0);
  float x[4 * 6];
  memcpy(x, toy_x, sizeof x);
  x[6 + 5] = 3;
  assert_int_equal(md_inputs_check_ids(toy_inputs, 3, x, 4, &bad), -1);
  assert_int_equal(bad.row, 1);
  assert_int_equal(bad.column, 5);
  assert_int_equal(bad.input, 2);
  x[6 + 5] = 0.5f;
  x[3] = -1;
  assert_int_equal(md_inputs_check_ids(toy_inputs, 3, x, 4, &bad), -1);
  assert_int_equal(bad.row, 0);
  assert_int_equal(bad.column, 3);
  assert_int_equal(md_inputs_width(toy_inputs, 3), 6);
  assert_int_equal(md_inputs_find(toy_inputs, 3, "c1"), 2);
  assert_int_equal(md_inputs_find(toy_inputs, 3, "c2"), -1);
}

/* Under mixed_bfloat16 an id input is not rounded (invariant 2 of inputs.c): id 257, which
** bfloat16 would make 256, reads row 257 = [2, 2], not row 256 = [1, 1]: with x = [1, 3],
** out = [1, 3, 1*2 + 3*2] = [1, 3, 8] (row 256 would give 4). */
static void test_mixed_policy_keeps_ids_exact(void **state) {
  (void)state;
  const md_model_input in[2] = {{"x", 2, 0, 0}, {"c", 0, 1, 300}};
  const md_layer_spec l[2] = {
    {.kind = MD_LAYER_EMBEDDING, .vocab = 300, .dim = 2, .combiner = MD_COMBINER_SUM, .ninputs = 1,
     .inputs = {MD_MODEL_INPUT(1)}},
    {.kind = MD_LAYER_DOT_INTERACTION, .ninputs = 2, .inputs = {MD_MODEL_INPUT(0), 0}},
  };
  md_model_spec spec = {.ninputs = 2, .inputs = in, .nlayers = 2, .layers = l, .from_logits = 1,
                        .dtype_policy = MD_POLICY_MIXED_BFLOAT16};
  md_error err = {0};
  md_model *m = md_model_new(&spec, &err);
  if (m == NULL) fail_msg("%s", err.msg);
  md_var *table = md_model_var(m, 0);
  table->data[256 * 2] = table->data[256 * 2 + 1] = 1;
  table->data[257 * 2] = table->data[257 * 2 + 1] = 2;
  const float x[3] = {1, 3, 257};
  md_workspace *w = md_workspace_new(m);
  md_batch b = {1, x, NULL, NULL, NULL};
  const float *out = md_model_forward(m, w, &b, NULL);
  assert_true(out[0] == 1 && out[1] == 3 && out[2] == 8);
  md_workspace_free(w);
  md_model_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dot_interaction_forward),
      cmocka_unit_test(test_grad_dlrm),
      cmocka_unit_test(test_dlrm_costs_mode_independent),
      cmocka_unit_test(test_model_input_errors),
      cmocka_unit_test(test_check_ids),
      cmocka_unit_test(test_mixed_policy_keeps_ids_exact),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
