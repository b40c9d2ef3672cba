/*
** test_attention.c: the attention layer's options for large decoders (layers/multi_head_attention.c):
** grouped-query and multi-query key-value heads, rotary position embeddings and the fused
** (flash) kernel, against TensorFlow's ops, finite differences and the unfused layer.
*/
#include "tests/testutil.h"

#include <math.h>

#include "tests/models/fd.h"

enum { N = 2, S = 5, D = 6, H = 4, G = 2, K = 4 };

/* The layer under test: H query heads over G key-value heads of K, causal, no biases, rotary
** embeddings of wavelength 10 (short, so 5 positions turn by whole radians). */
static md_layer_spec attention(int flash) {
  return (md_layer_spec){.kind = MD_LAYER_MULTI_HEAD_ATTENTION, .num_heads = H, .key_dim = K,
                         .num_key_value_heads = G, .use_causal_mask = 1, .rope_max_wavelength = 10.0f,
                         .flash_attention = flash};
}

/* Variable idx's value i is 0.5 sin(0.37 i + 0.11 idx), and input x_i = cos(0.53 i): what the
** TensorFlow reference below computes from. */
static void fill(md_model *m) {
  for (int v = 0; v < 4; v++) {
    md_var *w = md_model_var(m, v);
    for (size_t i = 0; i < w->size; i++) w->data[i] = (float)(0.5 * sin(0.37 * (double)i + 0.11 * v));
  }
}

/* TensorFlow 2.21 in float32, the layer written in its ops (keras_hub's RotaryEmbedding and
** Keras 3's GroupedQueryAttention, which this layer follows):
**   q = einsum('nsd,dhk->nshk', x, Wq); k, v likewise over G heads
**   inv = 1 / 10 ** (range(0, K, 2) / K); angle = einsum('i,j->ij', range(S), inv)
**   emb = concat([angle, angle], -1); rope(t) = t cos(emb) + concat([-t2, t1], -1) sin(emb)
**   q = rope(q) / sqrt(K); k = rope(k); k, v = repeat(k, H / G, axis=2), repeat(v, ...)
**   s = einsum('nshk,nthk->nhst', q, k), -1e9 above the diagonal; p = softmax(s)
**   z = einsum('nshv,hvd->nsd', einsum('nhst,nthv->nshv', p, v), Wo)
** printed with %.8g: N S D values. They agree to 1e-6 (float's sums in other orders and cos in
** double rounded once here, TF's float cos there). */
static const double TF_Z[N * S * D] = {
  0.09449359, 0.11403087, 0.11813454, 0.10624929, 0.079983681, 0.042892665, 0.046732567, 0.043653868, 0.034666806, 0.020987764, 0.0044681206, -0.012656257, -0.014758773, -0.0016239882, 0.011730604, 0.023497507, 0.032084137, 0.036328319, 0.029739875, 0.024240673, 0.015460599, 0.0045880079, -0.0069055483, -0.017464478, -0.0011714585, 0.006896887, 0.014031768, 0.019267531, 0.021895511, 0.021560032, -0.097066209, -0.11724393, -0.1215532, -0.10941082, -0.082460195, -0.04434897, -0.027018594, -0.032647066, -0.033856891, -0.03048436, -0.022985898, -0.012376409, -0.0045920461, -0.0098771788, -0.013825461, -0.015902553, -0.015827294, -0.013609884, -0.0175236, -0.016813753, -0.01382824, -0.0089711398, -0.0028998367, 0.003563948, -0.008224301, -0.01315663, -0.016308248, -0.017252633, -0.015861949, -0.012324432};

static md_model *model_of(int flash) {
  md_layer_spec l = attention(flash);
  return fd_model(&l, 1, (md_shape){.rank = 2, .dim = {S, D}});
}

/* The batch every test reads: x_i = cos(0.53 i) into x, N examples of [S, D], labels y. */
static md_batch input_batch(float *x, const int32_t *y) {
  for (int i = 0; i < N * S * D; i++) x[i] = (float)cos(0.53 * i);
  return (md_batch){N, x, NULL, y, NULL};
}

/* a's attention, flattened, under a 3-unit dense head: a model a train step can score. */
static void with_head(md_layer_spec a, md_layer_spec l[3]) {
  l[0] = a;
  l[1] = (md_layer_spec){.kind = MD_LAYER_FLATTEN};
  l[2] = (md_layer_spec){.kind = MD_LAYER_DENSE, .units = 3, .use_bias = 1};
}

static void gqa_rope_matches_tensorflow(void **state) {
  (void)state;
  float x[N * S * D];
  const int32_t y[N] = {0, 0};
  md_batch b = input_batch(x, y);
  float fused[N * S * D];
  for (int flash = 1; flash >= 0; flash--) {
    md_model *m = model_of(flash);
    assert_int_equal(md_model_num_vars(m), 4);
    assert_int_equal(md_model_var(m, 1)->shape[1], G);  /* key/kernel [D, G, K] */
    fill(m);
    md_workspace *w = md_workspace_new(m);
    const float *got = md_model_forward(m, w, &b, NULL);
    double worst = 0;
    for (int i = 0; i < N * S * D; i++) worst = fmax(worst, fabs(got[i] - TF_Z[i]));
    print_message("flash %d: worst |podsim - tensorflow| %.3g\n", flash, worst);
    assert_true(worst < 1e-6);
    /* the fused forward's softmax is the unfused one's: the same bits */
    if (flash) memcpy(fused, got, sizeof fused);
    else assert_memory_equal(fused, got, sizeof fused);
    md_workspace_free(w);
    md_model_free(m);
  }
}

/* Gradients through grouped heads (a key-value head's gradient sums its 2 query heads'), rope's
** inverse turn and, fused, the backward's p = exp(s - lse): finite differences, fused and not. */
static void attention_gradients_by_finite_differences(void **state) {
  (void)state;
  for (int flash = 0; flash <= 1; flash++) {
    md_layer_spec l[3];
    with_head(attention(flash), l);
    md_model *m = fd_model(l, 3, (md_shape){.rank = 2, .dim = {S, D}});
    float x[N * S * D];
    const int32_t y[N] = {2, 0};
    md_batch b = input_batch(x, y);
    fd_check(m, &b, 1300 + flash, 0);
    md_model_free(m);
  }
}

/* What the forward keeps per example, in float32 (4 bytes): q S H K = 80, k and v S G K = 40
** each, c S H V = 80, 240 floats; unfused p too, H S S = 100 (340 floats, 1360 bytes); fused
** the rows' log-sum-exp, H S = 20 (260 floats, 1040 bytes). The fused kernel is one op where
** the unfused are three (scores, softmax, context), forward; backward one for five: a
** custom-call in ops.csv and the HLO dump. */
static void flash_keeps_no_scores(void **state) {
  (void)state;
  double saved[2];
  size_t ops[2], custom[2] = {0, 0};
  for (int flash = 0; flash <= 1; flash++) {
    md_layer_spec l = attention(flash);
    md_model_spec spec = {.input_shape = {.rank = 2, .dim = {S, D}}, .nlayers = 1, .layers = &l, .from_logits = 1,
                          .shapes_only = 1};
    md_error err = {0};
    md_model *m = md_model_new(&spec, &err);
    assert_non_null(m);
    saved[flash] = md_model_layer_saved_bytes(m, 0, 1);
    md_workspace *w = md_workspace_new(m);
    md_grads *g = md_grads_new(m);
    md_op_log log = {0};
    md_cost cost = {.ops = &log};
    md_batch b = {1, NULL, NULL, NULL, NULL};
    double loss;
    md_model_train_step(m, w, &b, 1.0f, g, &loss, &cost);
    ops[flash] = log.n;
    for (size_t i = 0; i < log.n; i++) custom[flash] += (size_t)log.info[i].custom_call;
    md_op_log_free(&log);
    md_grads_free(g);
    md_workspace_free(w);
    md_model_free(m);
  }
  assert_true(saved[0] == 1360);
  assert_true(saved[1] == 1040);
  assert_int_equal(ops[0] - ops[1], 2 + 4);
  assert_int_equal(custom[0], 0);  /* the fused kernels are XLA's custom-calls, one a pass */
  assert_int_equal(custom[1], 2);
}

/* Dropout on the probabilities (Keras's MultiHeadAttention(dropout=0.4), BERT's 0.1): the
** gradients of a train step, its stream re-seeded so each loss drops the same scores, against
** finite differences. Causal and grouped as above, so masked (0) probabilities are drawn for too. */
static void attention_dropout_gradients_by_finite_differences(void **state) {
  (void)state;
  md_layer_spec l[3];
  with_head(attention(0), l);
  l[0].rate = 0.4f;
  md_model *m = fd_model(l, 3, (md_shape){.rank = 2, .dim = {S, D}});
  float x[N * S * D];
  const int32_t y[N] = {2, 0};
  md_batch b = input_batch(x, y);
  fd_check(m, &b, 1310, 77);
  md_model_free(m);
}

/* A train step draws one uniform a probability, N H S S = 2 x 4 x 5 x 5 = 200, and no more: the
** stream's next draw is a fresh stream's 201st. The logits (a dense layer on the attention's
** output) differ from the step without dropout (some of the 200 are dropped: at 0.4 all 200
** kept has probability 0.6^200) and evaluation drops none (the rate-0 step's, bit for bit). */
static void attention_dropout_draws_a_uniform_a_probability(void **state) {
  (void)state;
  float x[N * S * D];
  const int32_t y[N] = {2, 0};
  md_batch b = input_batch(x, y);
  float z[2][N * 3], eval[N * 3];
  for (int drop = 0; drop <= 1; drop++) {
    md_layer_spec l[3];
    with_head(attention(0), l);
    l[0].rate = drop ? 0.4f : 0.0f;
    md_model *m = fd_model(l, 3, (md_shape){.rank = 2, .dim = {S, D}});
    gsl_rng *init = sim_rng_stream(9, "init");
    md_model_init_default(m, init);
    gsl_rng_free(init);
    md_workspace *w = md_workspace_new(m);
    md_grads *g = md_grads_new(m);
    gsl_rng *rng = sim_rng_stream(5, "dropout"), *fresh = sim_rng_stream(5, "dropout");
    md_workspace_set_rng(w, rng);
    double loss;
    md_model_train_step(m, w, &b, 1.0f, g, &loss, NULL);
    memcpy(z[drop], md_model_last_output(m, w), sizeof z[drop]);
    for (int i = 0; i < (drop ? N * H * S * S : 0); i++) gsl_rng_uniform(fresh);
    assert_true(gsl_rng_uniform(rng) == gsl_rng_uniform(fresh));
    if (drop) memcpy(eval, md_model_forward(m, w, &b, NULL), sizeof eval);
    gsl_rng_free(fresh);
    gsl_rng_free(rng);
    md_grads_free(g);
    md_workspace_free(w);
    md_model_free(m);
  }
  assert_memory_not_equal(z[0], z[1], sizeof z[0]);
  assert_memory_equal(z[0], eval, sizeof eval);
}

/* With dropout the attention's forward keeps the mask too (a dense layer after it): 1360 bytes (flash_keeps_no_scores) + H S S = 100
** floats = 1760; a train step issues one more op a pass (the mask's draw and multiply forward,
** its multiply backward), each over the N H S S scores: 4 FLOPs and 3 arrays (x, z, mask) of 4
** bytes an element forward, 2 and 3 backward; the same with numerics off as on. */
static void attention_dropout_keeps_its_mask(void **state) {
  (void)state;
  size_t ops[2];
  double flops[2], bytes[2], saved = 0;
  for (int drop = 0; drop <= 1; drop++) {
    md_layer_spec l[3];
    with_head(attention(0), l);
    l[0].rate = drop ? 0.1f : 0.0f;
    md_model_spec spec = {.input_shape = {.rank = 2, .dim = {S, D}}, .nlayers = 3, .layers = l, .from_logits = 1,
                          .shapes_only = 1};
    md_error err = {0};
    md_model *m = md_model_new(&spec, &err);
    assert_non_null(m);
    if (drop) saved = md_model_layer_saved_bytes(m, 0, 1);
    md_workspace *w = md_workspace_new(m);
    md_grads *g = md_grads_new(m);
    md_op_log log = {0};
    md_cost cost = {.ops = &log};
    md_batch b = {N, NULL, NULL, NULL, NULL};
    double loss;
    md_model_train_step(m, w, &b, 1.0f, g, &loss, &cost);
    ops[drop] = log.n;
    flops[drop] = cost.flops;
    bytes[drop] = cost.bytes_moved;
    md_op_log_free(&log);
    md_grads_free(g);
    md_workspace_free(w);
    md_model_free(m);
    if (drop) {
      float x[N * S * D];
      const int32_t y[N] = {2, 0};
      fd_assert_spec_costs_mode_independent(spec, input_batch(x, y));
    }
  }
  const double scores = (double)N * H * S * S;
  assert_true(saved == 1760);
  assert_int_equal(ops[1] - ops[0], 2);
  assert_true(flops[1] - flops[0] == scores * (4 + 2));
  assert_true(bytes[1] - bytes[0] == 4.0 * scores * (3 + 3));
}

/* A key-value head count that does not divide the heads, an odd key_dim with rope, dropout with
** flash attention (Keras refuses it too): refused. */
static void attention_refuses_bad_groups(void **state) {
  (void)state;
  md_layer_spec l = attention(0);
  l.num_key_value_heads = 3;
  md_model_spec spec = {.input_shape = {.rank = 2, .dim = {S, D}}, .nlayers = 1, .layers = &l, .from_logits = 1};
  md_error err = {0};
  assert_null(md_model_new(&spec, &err));
  assert_non_null(strstr(err.msg, "num_key_value_heads 3 must divide num_heads 4"));
  l = attention(0);
  l.key_dim = 3;
  assert_null(md_model_new(&spec, &err));
  assert_non_null(strstr(err.msg, "key_dim 3 must be even"));
  l = attention(1);
  l.rate = 0.1f;
  assert_null(md_model_new(&spec, &err));
  assert_non_null(strstr(err.msg, "dropout is not supported with flash_attention"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(gqa_rope_matches_tensorflow),
    cmocka_unit_test(attention_gradients_by_finite_differences),
    cmocka_unit_test(flash_keeps_no_scores),
    cmocka_unit_test(attention_refuses_bad_groups),
    cmocka_unit_test(attention_dropout_gradients_by_finite_differences),
    cmocka_unit_test(attention_dropout_draws_a_uniform_a_probability),
    cmocka_unit_test(attention_dropout_keeps_its_mask),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
