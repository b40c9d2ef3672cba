/*
** test_graph.c: models that are graphs (md_layer_spec.inputs): Add and Concatenate on
** hand-worked values, finite-difference gradients through skip connections and outputs read by
** several layers, the fixed order their gradients are summed in, layers off the path to the
** output, the activations a graph keeps, costs without numerics, and the spec's errors.
*/
#include "tests/testutil.h"

#include <math.h>
#include <string.h>

#include "models/model.h"
#include "sim/rng.h"
#include "tests/models/fd.h"

/* x = [1, 2, 3, 4]; dense: kernel 2 I, bias 1 gives 2x + 1 = [3, 5, 7, 9]; add(dense, input,
** input) = ((2x + 1) + x) + x = [5, 9, 13, 17]; concatenate(input, add) = [1, 2, 3, 4, 5, 9, 13,
** 17], as Keras's Concatenate(axis=-1)([x, y]). */
static void test_add_concatenate_forward(void **state) {
  (void)state;
  md_layer_spec l[3] = {
      {.kind = MD_LAYER_DENSE, .units = 4, .use_bias = 1},
      {.kind = MD_LAYER_ADD, .ninputs = 3, .inputs = {0, MD_INPUT_MODEL, MD_INPUT_MODEL}},
      {.kind = MD_LAYER_CONCATENATE, .ninputs = 2, .inputs = {MD_INPUT_MODEL, 1}}};
  md_model *m = fd_model(l, 3, (md_shape){.rank = 1, .dim = {4}});
  assert_string_equal(md_model_layer_name(m, 1), "add");
  assert_string_equal(md_model_layer_name(m, 2), "concatenate");
  assert_int_equal(md_model_layer_output_shape(m, 2).dim[0], 8);
  md_var *k = md_model_var(m, md_model_find_var(m, "dense/kernel")), *b = md_model_var(m, 1);
  for (int i = 0; i < 4; i++) k->data[i * 4 + i] = 2, b->data[i] = 1;
  md_workspace *w = md_workspace_new(m);
  const float x[4] = {1, 2, 3, 4}, want[8] = {1, 2, 3, 4, 5, 9, 13, 17};
  const int32_t y = 0;
  md_batch batch = {1, x, NULL, &y, NULL};
  const float *got = md_model_forward(m, w, &batch, NULL);
  for (int i = 0; i < 8; i++) assert_true(got[i] == want[i]);
  md_workspace_free(w);
  md_model_free(m);
}

/* Keras's Concatenate(axis=1) of [2, 2] examples with themselves: rows x0, x1, x0, x1 ([4, 2]);
** axis 2 (the last) interleaves them per row: [x00, x01, x00, x01, x10, x11, x10, x11]. */
static void test_concatenate_axis(void **state) {
  (void)state;
  const float x[4] = {1, 2, 3, 4};
  const float want[2][8] = {{1, 2, 3, 4, 1, 2, 3, 4}, {1, 2, 1, 2, 3, 4, 3, 4}};
  for (int axis = 1; axis <= 2; axis++) {
    md_layer_spec l = {.kind = MD_LAYER_CONCATENATE, .axis = axis, .ninputs = 2,
                       .inputs = {MD_INPUT_MODEL, MD_INPUT_MODEL}};
    md_model *m = fd_model(&l, 1, (md_shape){.rank = 2, .dim = {2, 2}});
    md_shape out = md_model_layer_output_shape(m, 0);
    assert_int_equal(out.dim[0], axis == 1 ? 4 : 2);
    assert_int_equal(out.dim[1], axis == 1 ? 2 : 4);
    md_workspace *w = md_workspace_new(m);
    const int32_t y = 0;
    md_batch batch = {1, x, NULL, &y, NULL};
    const float *got = md_model_forward(m, w, &batch, NULL);
    for (int i = 0; i < 8; i++) assert_true(got[i] == want[axis - 1][i]);
    md_workspace_free(w);
    md_model_free(m);
  }
}

/* A ResNet-style block (conv2d read by conv2d_1 and the add), two poolings of one activation
** concatenated on the channels, then an add of three inputs, two of them the same layer
** (global_average_pooling2d read three times: its gradient sums three contributions), a
** concatenation of that sum with global_average_pooling2d's output again, dense. */
static const md_layer_spec block[12] = {
    {.kind = MD_LAYER_CONV2D, .filters = 3, .kernel_size = {3, 3}, .padding = MD_PADDING_SAME,
     .activation = MD_ACT_TANH, .use_bias = 1},
    {.kind = MD_LAYER_CONV2D, .filters = 3, .kernel_size = {2, 2}, .padding = MD_PADDING_SAME, .use_bias = 1},
    {.kind = MD_LAYER_ADD, .ninputs = 2, .inputs = {1, 0}},
    {.kind = MD_LAYER_ACTIVATION, .activation = MD_ACT_SWISH},
    {.kind = MD_LAYER_MAX_POOLING2D, .padding = MD_PADDING_SAME},
    {.kind = MD_LAYER_AVERAGE_POOLING2D, .padding = MD_PADDING_SAME, .ninputs = 1, .inputs = {3}},
    {.kind = MD_LAYER_CONCATENATE, .ninputs = 2, .inputs = {4, 5}},
    {.kind = MD_LAYER_GLOBAL_AVERAGE_POOLING2D},
    {.kind = MD_LAYER_DENSE, .units = 6, .activation = MD_ACT_TANH, .use_bias = 1},
    {.kind = MD_LAYER_ADD, .ninputs = 3, .inputs = {7, 8, 7}},
    {.kind = MD_LAYER_CONCATENATE, .ninputs = 2, .inputs = {9, 7}},
    {.kind = MD_LAYER_DENSE, .units = 3, .use_bias = 1}};

static void test_grad_graph(void **state) {
  (void)state;
  md_model *m = fd_model(block, 12, fd_hwc(5, 5, 2));
  assert_string_equal(md_model_layer_name(m, 9), "add_1");
  assert_int_equal(md_model_layer_output_shape(m, 6).dim[2], 6);
  md_batch b = fd_image_batch();
  fd_check(m, &b, 1200, 0);
  md_model_free(m);
}

/* Layer 7's output is read by layer 10 (input 1) and layer 9 (inputs 0 and 2): its gradient is
** layer 10's slice, + layer 9's dz, + layer 9's dz again, in float, an order fixed by the graph
** alone. A second step in the same workspace (its buffers holding the last step's values) and a
** step of a fresh clone give the same loss and gradients, bit for bit. */
static void test_gradient_sum_is_deterministic(void **state) {
  (void)state;
  md_model *m = fd_model(block, 12, fd_hwc(5, 5, 2));
  gsl_rng *rng = sim_rng_stream(5, "init");
  md_model_init_default(m, rng);
  gsl_rng_free(rng);
  md_model *c = md_model_clone(m);
  md_batch b = fd_image_batch();
  md_workspace *w1 = md_workspace_new(m), *w2 = md_workspace_new(c);
  md_grads *g1 = md_grads_new(m), *g2 = md_grads_new(c);
  double l1, l2;
  md_model_train_step(m, w1, &b, 0.25f, g1, &l1, NULL);
  md_model_train_step(m, w1, &b, 0.25f, g1, &l1, NULL);
  md_model_train_step(c, w2, &b, 0.25f, g2, &l2, NULL);
  assert_true(l1 == l2);
  for (int i = 0; i < md_model_num_vars(m); i++)
    assert_memory_equal(g1->g[i], g2->g[i], sizeof(float) * md_model_var(m, i)->size);
  md_grads_free(g1);
  md_grads_free(g2);
  md_workspace_free(w1);
  md_workspace_free(w2);
  md_model_free(c);
  md_model_free(m);
}

/* A dense layer nothing reads (dense_1, not the last) still runs forward but gets zero
** gradients, as Keras's layers off the path to the output; the model's other gradients are
** those of the model without it. */
static void test_unread_layer_gets_zero_gradients(void **state) {
  (void)state;
  md_layer_spec with[3] = {{.kind = MD_LAYER_DENSE, .units = 4, .use_bias = 1},
                           {.kind = MD_LAYER_DENSE, .units = 5, .use_bias = 1},
                           {.kind = MD_LAYER_DENSE, .units = 3, .use_bias = 1, .ninputs = 1, .inputs = {0}}};
  md_layer_spec without[2] = {with[0], {.kind = MD_LAYER_DENSE, .units = 3, .use_bias = 1}};
  md_shape in = {.rank = 1, .dim = {6}};
  md_model *a = fd_model(with, 3, in), *b = fd_model(without, 2, in);
  gsl_rng *rng = sim_rng_stream(6, "init");
  md_model_init_default(a, rng);
  gsl_rng_free(rng);
  const int va[4] = {0, 1, 4, 5};
  for (int i = 0; i < 4; i++)
    memcpy(md_model_var(b, i)->data, md_model_var(a, va[i])->data, sizeof(float) * md_model_var(b, i)->size);
  const float x[12] = {0.5f, -1, 0.25f, 2, -0.5f, 1, 1, 0.75f, -2, 0.5f, 0, -1};
  const int32_t y[2] = {2, 0};
  md_batch batch = {2, x, NULL, y, NULL};
  md_workspace *wa = md_workspace_new(a), *wb = md_workspace_new(b);
  md_grads *ga = md_grads_new(a), *gb = md_grads_new(b);
  double la, lb;
  md_model_train_step(a, wa, &batch, 0.5f, ga, &la, NULL);
  md_model_train_step(b, wb, &batch, 0.5f, gb, &lb, NULL);
  assert_true(la == lb);
  for (int i = 0; i < 4; i++)
    assert_memory_equal(ga->g[va[i]], gb->g[i], sizeof(float) * md_model_var(b, i)->size);
  for (int i = 2; i < 4; i++)
    for (size_t j = 0; j < md_model_var(a, i)->size; j++) assert_true(ga->g[i][j] == 0);
  md_grads_free(ga);
  md_grads_free(gb);
  md_workspace_free(wa);
  md_workspace_free(wb);
  md_model_free(a);
  md_model_free(b);
}

/* The activations kept: the input, every layer's z (and a when activated), and the summed
** gradient of each output read twice or more. x [6]; dense (4, relu: z and a), dense_1 (4),
** add(dense, dense_1): dense is read twice. Per example 6 + 4*2 + 4 + 4 + 4 (dense's gradient)
** = 26 floats; 3 examples: 312 bytes. */
static void test_activation_bytes_count_summed_gradients(void **state) {
  (void)state;
  md_layer_spec l[3] = {{.kind = MD_LAYER_DENSE, .units = 4, .activation = MD_ACT_RELU, .use_bias = 1},
                        {.kind = MD_LAYER_DENSE, .units = 4, .use_bias = 1},
                        {.kind = MD_LAYER_ADD, .ninputs = 2, .inputs = {0, 1}}};
  md_model *m = fd_model(l, 3, (md_shape){.rank = 1, .dim = {6}});
  assert_true(md_model_activation_bytes(m, 3) == 312.0);
  md_model_free(m);
}

/* numerics off counts what numerics on counts for the graph: the adds of summed gradients too. */
static void test_shapes_only_costs_graph(void **state) {
  (void)state;
  fd_assert_costs_mode_independent(block, 12);
}

/* Errors name the layer, what it reads and what it needs. */
static void test_graph_errors(void **state) {
  (void)state;
  md_shape in = {.rank = 1, .dim = {4}};
  struct {
    md_layer_spec l[2];
    const char *msg;
  } cases[] = {
      {{{.kind = MD_LAYER_DENSE, .units = 2}, {.kind = MD_LAYER_DENSE, .units = 2, .ninputs = 1, .inputs = {1}}},
       "layer 1: input 0 is layer 1: a layer reads the model's input (-1) or an earlier layer's output"},
      {{{.kind = MD_LAYER_DENSE, .units = 2}, {.kind = MD_LAYER_ADD, .ninputs = 1, .inputs = {0}}},
       "layer 1 (add): expected 2 to 32 inputs, found 1"},
      {{{.kind = MD_LAYER_DENSE, .units = 2}, {.kind = MD_LAYER_DENSE, .units = 2, .ninputs = 2, .inputs = {0, 0}}},
       "layer 1 (dense): expected one input, found 2"},
      {{{.kind = MD_LAYER_DENSE, .units = 2}, {.kind = MD_LAYER_ADD, .ninputs = 2, .inputs = {0, -1}}},
       "add sums inputs of one shape: input 1 is [4], input 0 [2]"},
      {{{.kind = MD_LAYER_DENSE, .units = 2, .name = "x"}, {.kind = MD_LAYER_DENSE, .units = 2, .name = "x"}},
       "layer 1: the name x is layer 0's already"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    md_model_spec spec = {.input_shape = in, .nlayers = 2, .layers = cases[i].l};
    md_error err = {0};
    assert_null(md_model_new(&spec, &err));
    if (strstr(err.msg, cases[i].msg) == NULL) fail_msg("case %zu: %s", i, err.msg);
  }
  /* An explicit name takes no number from Keras's count: dense, then mine, then dense_1. */
  md_layer_spec named[3] = {{.kind = MD_LAYER_DENSE}, {.kind = MD_LAYER_DENSE, .name = "mine"}, {.kind = MD_LAYER_DENSE}};
  char names[3][MD_LAYER_NAME_MAX];
  md_layer_names(named, 3, names);
  assert_string_equal(names[0], "dense");
  assert_string_equal(names[1], "mine");
  assert_string_equal(names[2], "dense_1");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_add_concatenate_forward),
      cmocka_unit_test(test_concatenate_axis),
      cmocka_unit_test(test_grad_graph),
      cmocka_unit_test(test_gradient_sum_is_deterministic),
      cmocka_unit_test(test_unread_layer_gets_zero_gradients),
      cmocka_unit_test(test_activation_bytes_count_summed_gradients),
      cmocka_unit_test(test_shapes_only_costs_graph),
      cmocka_unit_test(test_graph_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
