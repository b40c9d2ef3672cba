/*
** test_model.c: forward values worked by hand, the loss rules, finite-difference gradient checks
** of every layer/activation/loss mode, initialisation and costs.
*/
#include "tests/testutil.h"

#include <math.h>
#include <string.h>

#include "models/model.h"
#include "sim/rng.h"
#include "tests/models/fd.h"

static md_model *new_model(const md_layer_spec *layers, int nlayers, int features, int from_logits) {
  md_model_spec spec = {.input_features = features, .nlayers = nlayers, .layers = layers,
                        .from_logits = from_logits};
  md_error err = {0};
  md_model *m = md_model_new(&spec, &err);
  if (m == NULL) fail_msg("md_model_new: %s", err.msg);
  return m;
}

static void set_var(md_model *m, const char *name, const float *v) {
  int i = md_model_find_var(m, name);
  assert_true(i >= 0);
  memcpy(md_model_var(m, i)->data, v, sizeof(float) * md_model_var(m, i)->size);
}

/* One dense layer of `units` inputs and outputs with identity kernel and zero bias: its z is its
** input, so a test can feed chosen logits or probabilities straight to an activation or loss. */
static md_model *identity_model(int units, md_activation act, int from_logits) {
  md_layer_spec l = {.kind = MD_LAYER_DENSE, .units = units, .activation = act, .use_bias = 1};
  md_model *m = new_model(&l, 1, units, from_logits);
  float *k = md_model_var(m, 0)->data;
  for (int i = 0; i < units; i++) k[i * units + i] = 1.0f;
  return m;
}


/* md_model_clone_mirrored (issue 31): a dense layer then batch_normalization has 6 variables,
** dense/kernel, dense/bias, gamma, beta (trainable: mirrored, one storage) and moving_mean,
** moving_variance (ON_READ: the replica's own). A write into a shared one shows in the source; into
** its own does not; freeing the mirror leaves the source's values whole (ASan/valgrind see any
** double free), and a plain clone of the source owns everything again. */
static void test_clone_mirrored_shares_trainable_storage(void **state) {
  (void)state;
  md_layer_spec l[2] = {{.kind = MD_LAYER_DENSE, .units = 2, .use_bias = 1},
                        {.kind = MD_LAYER_BATCH_NORMALIZATION}};
  md_model *m = new_model(l, 2, 3, 1);
  md_model *r = md_model_clone_mirrored(m);
  assert_int_equal(md_model_num_vars(r), 6);
  int shared = 0, own = 0;
  for (int i = 0; i < md_model_num_vars(m); i++) {
    const md_var *a = md_model_var_const(m, i), *b = md_model_var_const(r, i);
    assert_true(a->trainable ? a->data == b->data : a->data != b->data);
    assert_memory_equal(a->data, b->data, a->size * sizeof(float));
    shared += a->trainable;
    own += !a->trainable;
  }
  assert_int_equal(shared, 4);
  assert_int_equal(own, 2);
  md_model_var(r, 0)->data[0] = 42.0f;
  assert_true(md_model_var(m, 0)->data[0] == 42.0f);
  int mean = md_model_find_var(m, "batch_normalization/moving_mean");
  assert_true(mean >= 0);
  md_model_var(r, mean)->data[0] = 7.0f;
  assert_true(md_model_var(m, mean)->data[0] == 0.0f);
  md_model_free(r);
  assert_true(md_model_var(m, 0)->data[0] == 42.0f);
  md_model *c = md_model_clone(m);
  assert_true(md_model_var(c, 0)->data != md_model_var(m, 0)->data);
  md_model_free(c);
  md_model_free(m);
}

/* x [2x3] = [[1,2,3],[4,5,6]], W [3x2] = [[1,0],[0,1],[1,-1]], b = [0.5,-0.5]:
**   row 0: x W = [1+3, 2-3] = [4, -1]   + b = [4.5, -1.5]
**   row 1: x W = [4+6, 5-6] = [10, -1]  + b = [10.5, -1.5]
** and with relu the negatives become 0. */
static void test_dense_forward(void **state) {
  (void)state;
  for (int relu = 0; relu <= 1; relu++) {
    md_layer_spec l = {.kind = MD_LAYER_DENSE, .units = 2,
                       .activation = relu ? MD_ACT_RELU : MD_ACT_NONE, .use_bias = 1};
    md_model *m = new_model(&l, 1, 3, 1);
    assert_string_equal(md_model_var(m, 0)->name, "dense/kernel");
    assert_string_equal(md_model_var(m, 1)->name, "dense/bias");
    assert_int_equal(md_model_num_params(m), 8);
    set_var(m, "dense/kernel", (const float[]){1, 0, 0, 1, 1, -1});
    set_var(m, "dense/bias", (const float[]){0.5f, -0.5f});
    md_workspace *w = md_workspace_new(m);
    const float x[6] = {1, 2, 3, 4, 5, 6};
    const int32_t y[2] = {0, 0};
    md_batch b = {2, x, NULL, y, NULL};
    const float *out = md_model_forward(m, w, &b, NULL);
    const float want[2][4] = {{4.5f, -1.5f, 10.5f, -1.5f}, {4.5f, 0, 10.5f, 0}};
    for (int i = 0; i < 4; i++) assert_true(out[i] == want[relu][i]);
    md_workspace_free(w);
    md_model_free(m);
  }
}

/* z = [-1, 0, 2] through each activation:
**   relu [0, 0, 2]; sigmoid 1/(1+e^-z) = [0.268941421, 0.5, 0.880797078];
**   tanh [-0.761594156, 0, 0.964027580];
**   softmax: e^z = [0.367879441, 1, 7.389056099], sum 8.756935540 -> [0.0420100661, 0.114195199, 0.843794734]. */
static void test_activations(void **state) {
  (void)state;
  const struct { md_activation act; double want[3]; } cases[] = {
      {MD_ACT_NONE, {-1, 0, 2}},
      {MD_ACT_RELU, {0, 0, 2}},
      {MD_ACT_SIGMOID, {0.268941421, 0.5, 0.880797078}},
      {MD_ACT_TANH, {-0.761594156, 0, 0.964027580}},
      {MD_ACT_SOFTMAX, {0.0420100661, 0.114195199, 0.843794734}},
  };
  const float x[3] = {-1, 0, 2};
  const int32_t y[1] = {0};
  md_batch b = {1, x, NULL, y, NULL};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    md_model *m = identity_model(3, cases[c].act, 1);
    md_workspace *w = md_workspace_new(m);
    const float *out = md_model_forward(m, w, &b, NULL);
    for (int j = 0; j < 3; j++) assert_close(out[j], cases[c].want[j], 1e-7);
    md_workspace_free(w);
    md_model_free(m);
  }
}

/* Loss and bias gradient (= dloss/dz, scale 1) of one example through an identity model. */
static double loss_and_grad(md_model *m, const float *x, int32_t y, float *db) {
  md_workspace *w = md_workspace_new(m);
  md_grads *g = md_grads_new(m);
  md_batch b = {1, x, NULL, &y, NULL};
  double loss;
  md_model_train_step(m, w, &b, 1.0f, g, &loss, NULL);
  assert_close(md_model_loss(m, w, &b, NULL), loss, 0);
  memcpy(db, g->g[1], sizeof(float) * md_model_num_classes(m));
  md_grads_free(g);
  md_workspace_free(w);
  return loss;
}

/* Logits z = [1,2,3], y = 2: logsumexp = 3 + log(e^-2 + e^-1 + 1) = 3 + log(1.503214724)
** = 3.407605964, loss 0.407605964; dloss/dz = softmax(z) - onehot
** = [0.0900305732, 0.244728471, 0.665240956 - 1]. */
static void test_loss_from_logits(void **state) {
  (void)state;
  md_model *m = identity_model(3, MD_ACT_NONE, 1);
  float db[3];
  assert_close(loss_and_grad(m, (const float[]){1, 2, 3}, 2, db), 0.407605964, 1e-7);
  assert_close(db[0], 0.0900305732, 1e-7);
  assert_close(db[1], 0.244728471, 1e-7);
  assert_close(db[2], -0.334759044, 1e-7);
  /* Large logits stay finite: z = [1000, 0, 0], y = 1 gives 1000 + log(1 + 2e^-1000) = 1000. */
  assert_close(loss_and_grad(m, (const float[]){1000, 0, 0}, 1, db), 1000, 1e-9);
  md_model_free(m);
}

/* from_logits = 0 on a non-softmax output: Keras clips p to [1e-7, 1-1e-7] then renormalises.
** p = [0, 1, 0], y = 0: loss = -log(1e-7 / (1e-7 + (1-1e-7) + 1e-7)) = -log(1e-7/1.0000001)
** = 16.1180957 (with the float32 bounds 1e-7f and 1-1e-7 -> 0.99999988); every p is clipped
** so no gradient passes.
** p = [0.2, 0.5, 0.3], y = 1: nothing clipped, s = 1, loss = -log(0.5) = 0.693147181;
** dloss/dp_j = 1/s - [j == y]/p_y = [1, 1 - 2, 1] = [1, -1, 1]. */
static void test_loss_clip_rule(void **state) {
  (void)state;
  md_model *m = identity_model(3, MD_ACT_NONE, 0);
  float db[3];
  double lo = 1e-7f, hi = (float)(1.0 - 1e-7);
  double want = -log(lo / (lo + hi + lo));
  assert_close(loss_and_grad(m, (const float[]){0, 1, 0}, 0, db), want, 1e-6);
  assert_close(want, 16.1180957, 1e-6);
  for (int j = 0; j < 3; j++) assert_true(db[j] == 0.0f);

  double s = (double)0.2f + (double)0.5f + (double)0.3f;
  assert_close(loss_and_grad(m, (const float[]){0.2f, 0.5f, 0.3f}, 1, db), -log(0.5 / s), 1e-7);
  assert_close(-log(0.5 / s), 0.693147181, 1e-7);
  assert_close(db[0], 1, 1e-6);
  assert_close(db[1], -1, 1e-6);
  assert_close(db[2], 1, 1e-6);
  md_model_free(m);
}

/* from_logits = 0 on a softmax output: Keras reads the logits under the softmax. z = [100, 0, 0],
** y = 1: loss = logsumexp(z) - 0 = 100 + log(1 + 2e^-100) = 100 (the clip rule would give
** -log(1e-7) = 16.1); dloss/dz = softmax(z) - onehot = [1, -1, 0]. */
static void test_loss_softmax_uses_logits(void **state) {
  (void)state;
  md_model *m = identity_model(3, MD_ACT_SOFTMAX, 0);
  float db[3];
  assert_close(loss_and_grad(m, (const float[]){100, 0, 0}, 1, db), 100, 1e-9);
  assert_close(db[0], 1, 1e-7);
  assert_close(db[1], -1, 1e-7);
  assert_close(db[2], 0, 1e-7);
  md_model_free(m);
}

enum { FD_N = 6, FD_IN = 4 };
static const float fd_x[FD_N * FD_IN] = {
    0.5f, -1.2f, 0.3f, 2.0f,  -0.7f, 0.9f, 1.1f, -0.4f, 1.5f,  0.2f, -0.8f, 0.6f,
    -1.3f, -0.5f, 0.7f, 0.1f, 0.4f,  1.8f, -1.6f, 0.9f, -0.2f, 0.3f, 0.5f,  -1.1f};
static const int32_t fd_y[FD_N] = {0, 2, 1, 1, 0, 2};

/* Dense(5, act) -> Dense(3) logits, for every activation in the hidden layer. */
static void test_grad_dense_activations(void **state) {
  (void)state;
  for (int act = MD_ACT_NONE; act < MD_ACT_COUNT; act++) {
    md_layer_spec l[2] = {{.kind = MD_LAYER_DENSE, .units = 5, .activation = act, .use_bias = 1},
                          {.kind = MD_LAYER_DENSE, .units = 3, .activation = MD_ACT_NONE, .use_bias = 1}};
    md_model *m = new_model(l, 2, FD_IN, 1);
    md_batch b = {FD_N, fd_x, NULL, fd_y, NULL};
    fd_check(m, &b, 100 + act, 0);
    md_model_free(m);
  }
}

/* Both from_logits = 0 paths: a sigmoid output (clip + renormalise, p not summing to 1) and a
** softmax output (its logits), plus from_logits = 1 reading a softmax output as logits. */
static void test_grad_loss_modes(void **state) {
  (void)state;
  const struct { md_activation act; int from_logits; } cases[] = {
      {MD_ACT_SIGMOID, 0}, {MD_ACT_SOFTMAX, 0}, {MD_ACT_SOFTMAX, 1}, {MD_ACT_TANH, 1}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    md_layer_spec l[2] = {{.kind = MD_LAYER_DENSE, .units = 5, .activation = MD_ACT_TANH, .use_bias = 1},
                          {.kind = MD_LAYER_DENSE, .units = 3, .activation = cases[c].act, .use_bias = 0}};
    md_model *m = new_model(l, 2, FD_IN, cases[c].from_logits);
    md_batch b = {FD_N, fd_x, NULL, fd_y, NULL};
    fd_check(m, &b, 200 + c, 0);
    md_model_free(m);
  }
}

/* Embedding(vocab 7, dim 4) -> Dense(3); ids repeat within and across examples so the scattered
** gradient must accumulate into shared rows. Both combiners. */
static void test_grad_embedding(void **state) {
  (void)state;
  const int32_t ids[FD_N * 3] = {0, 3, 3, 6, 1, 0, 2, 2, 2, 5, 4, 3, 1, 1, 6, 0, 5, 2};
  for (int comb = MD_COMBINER_MEAN; comb <= MD_COMBINER_SUM; comb++) {
    md_layer_spec l[2] = {{.kind = MD_LAYER_EMBEDDING, .vocab = 7, .dim = 4, .combiner = comb},
                          {.kind = MD_LAYER_DENSE, .units = 3, .activation = MD_ACT_NONE, .use_bias = 1}};
    md_model_spec spec = {.input_ids = 3, .input_vocab = 7, .nlayers = 2, .layers = l, .from_logits = 1};
    md_error err = {0};
    md_model *m = md_model_new(&spec, &err);
    assert_non_null(m);
    assert_string_equal(md_model_var(m, 0)->name, "embedding/embeddings");
    assert_string_equal(md_model_var(m, 1)->name, "dense/kernel");
    md_batch b = {FD_N, NULL, ids, fd_y, NULL};
    fd_check(m, &b, 300 + comb, 0);
    md_model_free(m);
  }
}

/* Embedding forward by hand: rows e_k = [k, -k]; ids [1, 2, 2]: sum [5, -5], mean [5/3, -5/3]. */
static void test_embedding_forward(void **state) {
  (void)state;
  for (int comb = MD_COMBINER_MEAN; comb <= MD_COMBINER_SUM; comb++) {
    md_layer_spec l = {.kind = MD_LAYER_EMBEDDING, .vocab = 3, .dim = 2, .combiner = comb};
    md_model_spec spec = {.input_ids = 3, .input_vocab = 3, .nlayers = 1, .layers = &l, .from_logits = 1};
    md_model *m = md_model_new(&spec, NULL);
    assert_non_null(m);
    set_var(m, "embedding/embeddings", (const float[]){0, 0, 1, -1, 2, -2});
    md_workspace *w = md_workspace_new(m);
    const int32_t ids[3] = {1, 2, 2}, y[1] = {0};
    md_batch b = {1, NULL, ids, y, NULL};
    const float *out = md_model_forward(m, w, &b, NULL);
    float want = comb == MD_COMBINER_SUM ? 5.0f : 5.0f / 3.0f;
    assert_true(out[0] == want && out[1] == -want);
    md_workspace_free(w);
    md_model_free(m);
  }
}

/* The embedding's gradient as TF's gather gives it (md_grads.slices): ids [1, 2, 2] of one
** example, combiner mean, so each id's row is dz/3 (the same three rows); the dense gradient is
** their unsorted_segment_sum from zero in batch order, bit for bit: row 1 = 0 + s0, row 2 =
** (0 + s1) + s2, row 0 = 0. The slices hold only the batch's 3 rows, not the table's. */
static void test_embedding_slices(void **state) {
  (void)state;
  md_layer_spec l = {.kind = MD_LAYER_EMBEDDING, .vocab = 3, .dim = 2, .combiner = MD_COMBINER_MEAN};
  md_model_spec spec = {.input_ids = 3, .input_vocab = 3, .nlayers = 1, .layers = &l, .from_logits = 1};
  md_model *m = md_model_new(&spec, NULL);
  set_var(m, "embedding/embeddings", (const float[]){0, 0, 1, -1, 2, -2});
  md_workspace *w = md_workspace_new(m);
  md_grads *g = md_grads_new(m);
  assert_int_equal(g->ntables, 1);
  assert_true(g->table[0]);
  const int32_t ids[3] = {1, 2, 2}, y[1] = {0};
  md_batch b = {1, NULL, ids, y, NULL};
  md_model_train_step(m, w, &b, 1.0f, g, NULL, NULL);
  const float *s = md_grads_slices(g, 0), *d = g->g[0];
  assert_true(g->slices_cap[0] >= 6);
  for (int c = 0; c < 2; c++) {
    assert_true(s[c] != 0 && s[c] == s[2 + c] && s[c] == s[4 + c]);
    assert_true(d[c] == 0.0f);
    assert_true(d[2 + c] == 0.0f + s[c]);
    assert_true(d[4 + c] == (0.0f + s[2 + c]) + s[4 + c]);
  }
  md_grads_free(g);
  md_workspace_free(w);
  md_model_free(m);
}

static void test_spec_errors(void **state) {
  (void)state;
  md_layer_spec dense = {.kind = MD_LAYER_DENSE, .units = 3, .use_bias = 1};
  md_layer_spec emb = {.kind = MD_LAYER_EMBEDDING, .vocab = 5, .dim = 2};
  md_layer_spec two[2] = {dense, emb};
  md_error err = {0};
  md_model_spec s = {.input_features = 4, .nlayers = 2, .layers = two};
  assert_null(md_model_new(&s, &err));
  assert_non_null(strstr(err.msg, "embedding must be the first layer"));
  md_model_spec s2 = {.input_features = 0, .nlayers = 1, .layers = &dense};
  assert_null(md_model_new(&s2, &err));
  md_model_spec s3 = {.input_ids = 2, .input_vocab = 9, .nlayers = 1, .layers = &emb};
  assert_null(md_model_new(&s3, &err));
  assert_non_null(strstr(err.msg, "input_vocab"));
  md_model_spec s4 = {.input_features = 4, .nlayers = 0, .layers = &dense};
  assert_null(md_model_new(&s4, &err));
}

/* Keras names and glorot limits: dense/kernel [8,16] limit sqrt(6/24) = 0.5, dense_1/kernel
** [16,3] limit sqrt(6/19) = 0.561951487, embeddings 0.05. The values are the documented draws of
** one stream, in variable order, row-major; biases become zero. */
static void test_init_default(void **state) {
  (void)state;
  md_layer_spec l[3] = {{.kind = MD_LAYER_DENSE, .units = 16, .activation = MD_ACT_RELU, .use_bias = 1},
                        {.kind = MD_LAYER_DENSE, .units = 3, .use_bias = 1},
                        {.kind = MD_LAYER_DENSE, .units = 2, .use_bias = 0}};
  md_model *m = new_model(l, 3, 8, 1);
  assert_int_equal(md_model_num_vars(m), 5);
  assert_string_equal(md_model_var(m, 2)->name, "dense_1/kernel");
  assert_string_equal(md_model_var(m, 4)->name, "dense_2/kernel");
  assert_int_equal(md_model_num_classes(m), 2);
  md_model_var(m, 1)->data[3] = 7.0f;
  gsl_rng *rng = sim_rng_stream(42, "init");
  md_model_init_default(m, rng);
  gsl_rng_free(rng);

  gsl_rng *ref = sim_rng_stream(42, "init");
  const double limits[5] = {0.5, 0, sqrt(6.0 / 19.0), 0, sqrt(6.0 / 5.0)};
  assert_close(limits[2], 0.561951487, 1e-9);
  for (int i = 0; i < 5; i++) {
    const md_var *v = md_model_var_const(m, i);
    for (size_t j = 0; j < v->size; j++) {
      if (v->rank == 1) {
        assert_true(v->data[j] == 0.0f);
        continue;
      }
      assert_true(fabs(v->data[j]) <= (float)limits[i]);
      float want = (float)(-limits[i] + 2.0 * limits[i] * gsl_rng_uniform(ref));
      assert_true(v->data[j] == want);
    }
  }
  gsl_rng_free(ref);

  /* Deterministic: the same stream gives the same bits, another seed different ones. */
  md_model *same = md_model_clone(m), *other = md_model_clone(m);
  rng = sim_rng_stream(42, "init");
  md_model_init_default(same, rng);
  gsl_rng_free(rng);
  rng = sim_rng_stream(43, "init");
  md_model_init_default(other, rng);
  gsl_rng_free(rng);
  assert_memory_equal(md_model_var(same, 0)->data, md_model_var(m, 0)->data, sizeof(float) * 128);
  assert_memory_not_equal(md_model_var(other, 0)->data, md_model_var(m, 0)->data, sizeof(float) * 128);
  md_model_free(same);
  md_model_free(other);
  md_model_free(m);

  md_layer_spec e = {.kind = MD_LAYER_EMBEDDING, .vocab = 50, .dim = 8, .combiner = MD_COMBINER_SUM};
  md_model_spec es = {.input_ids = 1, .input_vocab = 50, .nlayers = 1, .layers = &e, .from_logits = 1};
  md_model *em = md_model_new(&es, NULL);
  rng = sim_rng_stream(1, "init");
  md_model_init_default(em, rng);
  gsl_rng_free(rng);
  for (size_t j = 0; j < 400; j++) assert_true(fabsf(md_model_var(em, 0)->data[j]) <= 0.05f);
  md_model_free(em);
}

/* One Dense(2) on 3 inputs, batch 2, logits:
**   forward:  bias copy 2*2 = 4, GEMM 2*2*3*2 = 24, loss 6*2*2 = 24
**   backward: dW GEMM 2*3*2*2 = 24, db 4 (no dx for the first layer)          total 80 FLOPs.
** Resident: the input 2*3 floats and z 2*2 floats (no activation, so no separate a) = 40 bytes.
** An empty batch gives zero grads and zero loss. */
static void test_cost_and_empty_batch(void **state) {
  (void)state;
  md_layer_spec l = {.kind = MD_LAYER_DENSE, .units = 2, .use_bias = 1};
  md_model *m = new_model(&l, 1, 3, 1);
  set_var(m, "dense/kernel", (const float[]){1, 2, 3, 4, 5, 6});
  md_workspace *w = md_workspace_new(m);
  md_grads *g = md_grads_new(m);
  const float x[6] = {1, 2, 3, 4, 5, 6};
  const int32_t y[2] = {0, 1};
  md_batch b = {2, x, NULL, y, NULL};
  md_cost c = {0};
  double loss;
  md_model_train_step(m, w, &b, 1.0f, g, &loss, &c);
  assert_close(c.flops, 80, 0);
  assert_close(c.bytes_resident, 40, 0);
  assert_close(md_model_activation_bytes(m, 2), 40, 0);
  assert_true(c.bytes_moved > 0);
  assert_true(g->g[0][0] != 0.0f);
  md_batch empty = {0, NULL, NULL, NULL, NULL};
  md_model_train_step(m, w, &empty, 1.0f, g, &loss, &c);
  assert_close(loss, 0, 0);
  for (int j = 0; j < 6; j++) assert_true(g->g[0][j] == 0.0f);
  assert_close(c.flops, 80, 0);
  md_grads_free(g);
  md_workspace_free(w);
  md_model_free(m);
}

/* The same step with an op log attached: the five ops of the comment above (bias copy 4,
** GEMM 24, loss 24, dW GEMM 24, db 4), each with its own bytes, summing to the totals. */
static void test_op_log(void **state) {
  (void)state;
  md_layer_spec l = {.kind = MD_LAYER_DENSE, .units = 2, .use_bias = 1};
  md_model *m = new_model(&l, 1, 3, 1);
  md_workspace *w = md_workspace_new(m);
  md_grads *g = md_grads_new(m);
  const float x[6] = {1, 2, 3, 4, 5, 6};
  const int32_t y[2] = {0, 1};
  md_batch b = {2, x, NULL, y, NULL};
  md_op_log log = {0};
  md_cost c = {.ops = &log};
  double loss;
  md_model_train_step(m, w, &b, 1.0f, g, &loss, &c);
  assert_int_equal(log.n, 5);
  double flops = 0, bytes = 0, sorted[5];
  for (size_t i = 0; i < log.n; i++) {
    flops += log.flops[i];
    bytes += log.bytes[i];
    assert_true(log.bytes[i] > 0);
    sorted[i] = log.flops[i];
  }
  assert_close(flops, c.flops, 0);
  assert_close(bytes, c.bytes_moved, 0);
  int fours = 0, twentyfours = 0;
  for (int i = 0; i < 5; i++) fours += sorted[i] == 4, twentyfours += sorted[i] == 24;
  assert_int_equal(fours, 2);
  assert_int_equal(twentyfours, 3);
  md_op_log_clear(&log);
  assert_int_equal(log.n, 0);
  md_op_log_free(&log);
  md_grads_free(g);
  md_workspace_free(w);
  md_model_free(m);
}

/* numerics: off runs the same passes on a shapes-only model: no values, the same costs. Every
** activation is checked (softmax once read through its NULL output and crashed): a [2x3] batch
** into 2 units and then 3 units with the activation under test, full and shapes-only, must count
** the same FLOPs and bytes. */
static void test_shapes_only_costs(void **state) {
  (void)state;
  const md_activation acts[] = {MD_ACT_NONE, MD_ACT_RELU, MD_ACT_SIGMOID, MD_ACT_TANH, MD_ACT_SOFTMAX};
  for (size_t a = 0; a < sizeof acts / sizeof acts[0]; a++) {
    md_layer_spec l[2] = {{.kind = MD_LAYER_DENSE, .units = 2, .activation = MD_ACT_RELU, .use_bias = 1},
                          {.kind = MD_LAYER_DENSE, .units = 3, .activation = acts[a], .use_bias = 1}};
    md_cost cost[2];
    memset(cost, 0, sizeof cost);
    for (int shapes = 0; shapes < 2; shapes++) {
      md_model_spec spec = {.input_features = 3, .nlayers = 2, .layers = l,
                            .from_logits = acts[a] != MD_ACT_SOFTMAX, .shapes_only = shapes};
      md_error err = {0};
      md_model *m = md_model_new(&spec, &err);
      assert_non_null(m);
      md_workspace *w = md_workspace_new(m);
      md_grads *g = md_grads_new(m);
      const float x[6] = {1, 2, 3, 4, 5, 6};
      const int32_t y[2] = {0, 2};
      md_batch b = shapes ? (md_batch){2, NULL, NULL, NULL, NULL} : (md_batch){2, x, NULL, y, NULL};
      double loss;
      md_model_train_step(m, w, &b, 1.0f, g, &loss, &cost[shapes]);
      md_grads_free(g);
      md_workspace_free(w);
      md_model_free(m);
    }
    assert_true(cost[0].flops > 0);
    assert_close(cost[1].flops, cost[0].flops, 0);
    assert_close(cost[1].bytes_moved, cost[0].bytes_moved, 0);
  }
}

/* Slices-only gradients (md_grads_new_slices, a PS worker's): a [1000, 8] table, a batch of 4
** examples of 3 ids (n*k = 12 id rows of 8 floats = 96), combiner mean, the table as the logits.
** The op log holds three ops: the lookup (96 FLOPs, 4 * (96 + 32 + 12) = 560 bytes), the loss
** (6 * 4 * 8 = 192 FLOPs, 4 * 32 * 2 = 256 bytes) and the embedding's backward, 96 FLOPs in both
** modes; its bytes are, dense, 4 * (8000 + 3 * 96) = 33152 (the table zeroed, dz read, each id's
** row read and written) and, slices only, 4 * 2 * 96 = 768 (dz read, the slice written): the
** dense pass moves 4 * 8000 + 4 * 96 = 32384 bytes more. The slices are bit-equal in both modes,
** the slices-only g of the table is NULL, and numerics off counts the slices-only figure too. */
static void test_embedding_slices_only(void **state) {
  (void)state;
  md_layer_spec l = {.kind = MD_LAYER_EMBEDDING, .vocab = 1000, .dim = 8, .combiner = MD_COMBINER_MEAN};
  const int32_t ids[12] = {3, 999, 3, 0, 17, 512, 17, 17, 4, 250, 251, 999}, y[4] = {0, 7, 3, 5};
  const double backward[3] = {33152, 768, 768};  /* dense, slices only, slices only shapes only */
  float slices[2][96];
  for (int mode = 0; mode < 3; mode++) {
    md_model_spec spec = {.input_ids = 3, .input_vocab = 1000, .nlayers = 1, .layers = &l,
                          .from_logits = 1, .shapes_only = mode == 2};
    md_model *m = md_model_new(&spec, NULL);
    gsl_rng *rng = sim_rng_stream(1, "init");
    if (mode < 2) md_model_init_default(m, rng);
    gsl_rng_free(rng);
    md_workspace *w = md_workspace_new(m);
    md_grads *g = mode == 0 ? md_grads_new(m) : md_grads_new_slices(m);
    md_batch b = mode == 2 ? (md_batch){4, NULL, NULL, NULL, NULL} : (md_batch){4, NULL, ids, y, NULL};
    md_op_log log = {0};
    md_cost c = {.ops = &log};
    md_model_train_step(m, w, &b, 0.25f, g, NULL, &c);
    assert_int_equal(log.n, 3);
    assert_close(log.flops[0], 96, 0);
    assert_close(log.bytes[0], 560, 0);
    assert_close(log.flops[1], 192, 0);
    assert_close(log.bytes[1], 256, 0);
    assert_close(log.flops[2], 96, 0);
    assert_close(log.bytes[2], backward[mode], 0);
    assert_close(c.bytes_moved, 560 + 256 + backward[mode], 0);
    assert_int_equal(g->slices_only, mode > 0);
    if (mode < 2) memcpy(slices[mode], md_grads_slices(g, 0), sizeof slices[mode]);
    if (mode == 1) assert_null(g->g[0]);
    md_op_log_free(&log);
    md_grads_free(g);
    md_workspace_free(w);
    md_model_free(m);
  }
  assert_true(slices[0][0] != 0.0f);
  assert_memory_equal(slices[0], slices[1], sizeof slices[0]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dense_forward),
      cmocka_unit_test(test_activations),
      cmocka_unit_test(test_loss_from_logits),
      cmocka_unit_test(test_loss_clip_rule),
      cmocka_unit_test(test_loss_softmax_uses_logits),
      cmocka_unit_test(test_grad_dense_activations),
      cmocka_unit_test(test_grad_loss_modes),
      cmocka_unit_test(test_grad_embedding),
      cmocka_unit_test(test_embedding_forward),
      cmocka_unit_test(test_spec_errors),
      cmocka_unit_test(test_init_default),
      cmocka_unit_test(test_cost_and_empty_batch),
      cmocka_unit_test(test_op_log),
      cmocka_unit_test(test_shapes_only_costs),
      cmocka_unit_test(test_embedding_slices),
      cmocka_unit_test(test_embedding_slices_only),
      cmocka_unit_test(test_clone_mirrored_shares_trainable_storage),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
