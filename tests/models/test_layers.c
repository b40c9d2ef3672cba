/*
** test_layers.c: the layer kinds beyond dense and embedding: forward values worked by hand or
** taken from the Keras documentation examples they mirror, shapes as Keras computes them, and
** finite-difference gradient checks through whole models (every layer's dx is checked by the
** variables of the layers below it).
*/
#include "tests/testutil.h"

#include <math.h>
#include <string.h>

#include "models/model.h"
#include "models/optimizer.h"
#include "sim/rng.h"
#include "tests/models/fd.h"

static void set_var(md_model *m, const char *name, const float *v) {
  int i = md_model_find_var(m, name);
  assert_true(i >= 0);
  memcpy(md_model_var(m, i)->data, v, sizeof(float) * md_model_var(m, i)->size);
}

/* The first layer's output for one example x, compared with want (n floats, exactly). */
static void assert_forward(const md_layer_spec *l, md_shape in, const float *x, const float *want,
                           int n) {
  md_model *m = fd_model(l, 1, in);
  md_shape out = md_model_layer_output_shape(m, 0);
  int size = 1;
  for (int i = 0; i < out.rank; i++) size *= out.dim[i];
  assert_int_equal(size, n);
  md_workspace *w = md_workspace_new(m);
  const int32_t y = 0;
  md_batch b = {1, x, NULL, &y, NULL};
  const float *got = md_model_forward(m, w, &b, NULL);
  for (int i = 0; i < n; i++)
    if (got[i] != want[i]) fail_msg("output %d: got %.9g, want %.9g", i, got[i], want[i]);
  md_workspace_free(w);
  md_model_free(m);
}

static const float nine[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};  /* [[1,2,3],[4,5,6],[7,8,9]] */

/* x = nine as [3, 3, 1], kernel [2, 2, 1, 1] = [[1, 0], [0, 1]] (a diagonal), no bias:
**   valid, stride 1:  out 2x2, x[o,p] + x[o+1,p+1] = [1+5, 2+6, 4+8, 5+9] = [6, 8, 12, 14]
**   same, stride 2:   out ceil(3/2) = 2, pad_total (2-1)*2 + 2 - 3 = 1, all after:
**                     (0,0) 1+5 = 6; (0,1) 3 + pad = 3; (1,0) 7 + pad = 7; (1,1) 9
**   valid, dilation 2, kernel of ones: effective 3x3, one output 1+3+7+9 = 20 */
static void test_conv2d_forward(void **state) {
  (void)state;
  md_layer_spec l = {.kind = MD_LAYER_CONV2D, .filters = 1, .kernel_size = {2, 2}};
  const float diag[4] = {1, 0, 0, 1}, ones[4] = {1, 1, 1, 1};
  struct { md_padding pad; int stride, dilation; const float *k; float want[4]; int n; } cases[] = {
      {MD_PADDING_VALID, 1, 1, diag, {6, 8, 12, 14}, 4},
      {MD_PADDING_SAME, 2, 1, diag, {6, 3, 7, 9}, 4},
      {MD_PADDING_VALID, 1, 2, ones, {20}, 1},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    l.padding = cases[c].pad;
    l.strides[0] = l.strides[1] = cases[c].stride;
    l.dilation_rate[0] = l.dilation_rate[1] = cases[c].dilation;
    md_model *m = fd_model(&l, 1, fd_hwc(3, 3, 1));
    assert_int_equal(md_model_num_vars(m), 0 + 1);  /* use_bias 0: the kernel only */
    assert_string_equal(md_model_var(m, 0)->name, "conv2d/kernel");
    assert_int_equal(md_model_var(m, 0)->rank, 4);
    md_model_free(m);
    md_model *probe = fd_model(&l, 1, fd_hwc(3, 3, 1));
    set_var(probe, "conv2d/kernel", cases[c].k);
    md_workspace *w = md_workspace_new(probe);
    const int32_t y = 0;
    md_batch b = {1, nine, NULL, &y, NULL};
    const float *got = md_model_forward(probe, w, &b, NULL);
    for (int i = 0; i < cases[c].n; i++) assert_true(got[i] == cases[c].want[i]);
    md_workspace_free(w);
    md_model_free(probe);
  }
}

/* Channels and filters, with a bias: x [1, 1, 2] = [1, 2], kernel [1, 1, 2, 3] rows
** c0 = [1, 2, 3], c1 = [4, 5, 6], bias [0.5, 0, -1]: z = [1+8+0.5, 2+10, 3+12-1] = [9.5, 12, 14]. */
/* The convolution as the direct loop computes it: each output's filters start at the bias and
** add x W over the taps inside the input in (i, j, c) order. */
static void direct_conv(const md_layer_spec *l, md_shape in, md_shape out, int n, const float *x,
                        const float *k, const float *b, float *z) {
  int h = in.dim[0], w = in.dim[1], c = in.dim[2], oh = out.dim[0], ow = out.dim[1], f = out.dim[2];
  int kh = l->kernel_size[0], kw = l->kernel_size[1];
  int sh = l->strides[0] ? l->strides[0] : 1, sw = l->strides[1] ? l->strides[1] : 1;
  int dh = l->dilation_rate[0] ? l->dilation_rate[0] : 1, dw = l->dilation_rate[1] ? l->dilation_rate[1] : 1;
  int ph = 0, pw = 0;
  if (l->padding == MD_PADDING_SAME) {
    int th = (oh - 1) * sh + (kh - 1) * dh + 1 - h, tw = (ow - 1) * sw + (kw - 1) * dw + 1 - w;
    ph = th > 0 ? th / 2 : 0;
    pw = tw > 0 ? tw / 2 : 0;
  }
  for (int e = 0; e < n; e++)
    for (int o = 0; o < oh; o++)
      for (int p = 0; p < ow; p++) {
        float *zo = z + (((size_t)e * oh + o) * ow + p) * f;
        for (int q = 0; q < f; q++) zo[q] = b[q];
        for (int i = 0; i < kh; i++)
          for (int j = 0; j < kw; j++) {
            int ih = o * sh - ph + i * dh, iw = p * sw - pw + j * dw;
            if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
            for (int ch = 0; ch < c; ch++) {
              float xv = x[(((size_t)e * h + ih) * w + iw) * c + ch];
              for (int q = 0; q < f; q++) zo[q] += xv * k[(((size_t)i * kw + j) * c + ch) * f + q];
            }
          }
      }
}

/* Conv2D's im2col products give the direct loop's bits, on random values with a fifth of the
** inputs zero, for same and valid padding, strides, dilation, an odd kernel, and a batch of 16
** [48, 48, 8] images: an example's patches are 2304 rows of 72 taps (165888 floats), so the
** 2^21-float chunk takes 12 examples and a chunk boundary falls inside the batch. */
static void test_conv2d_gemm_matches_direct_loops(void **state) {
  (void)state;
  struct { md_shape in; md_layer_spec l; int n; } cases[] = {
    {fd_hwc(7, 6, 3), {.kind = MD_LAYER_CONV2D, .filters = 5, .kernel_size = {3, 2}, .padding = MD_PADDING_SAME, .use_bias = 1}, 3},
    {fd_hwc(9, 9, 2), {.kind = MD_LAYER_CONV2D, .filters = 4, .kernel_size = {3, 3}, .strides = {2, 2}, .padding = MD_PADDING_SAME, .use_bias = 1}, 2},
    {fd_hwc(9, 8, 2), {.kind = MD_LAYER_CONV2D, .filters = 3, .kernel_size = {2, 3}, .dilation_rate = {2, 2}, .use_bias = 1}, 2},
    {fd_hwc(48, 48, 8), {.kind = MD_LAYER_CONV2D, .filters = 16, .kernel_size = {3, 3}, .padding = MD_PADDING_SAME, .use_bias = 1}, 16},
  };
  gsl_rng *rng = sim_rng_stream(7, "test.conv2d.gemm");
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    md_model *m = fd_model(&cases[c].l, 1, cases[c].in);
    md_var *k = md_model_var(m, 0), *b = md_model_var(m, 1);
    for (size_t i = 0; i < k->size; i++) k->data[i] = (float)(gsl_rng_uniform(rng) - 0.5);
    for (size_t i = 0; i < b->size; i++) b->data[i] = (float)(gsl_rng_uniform(rng) - 0.5);
    int n = cases[c].n;
    md_shape out = md_model_layer_output_shape(m, 0);
    size_t in = (size_t)md_shape_size(&cases[c].in), outs = (size_t)md_shape_size(&out);
    float *x = test_malloc(sizeof(float) * in * n), *want = test_malloc(sizeof(float) * outs * n);
    for (size_t i = 0; i < in * n; i++) x[i] = gsl_rng_uniform(rng) < 0.2 ? 0.0f : (float)(gsl_rng_uniform(rng) - 0.5);
    direct_conv(&cases[c].l, cases[c].in, out, n, x, k->data, b->data, want);
    md_workspace *w = md_workspace_new(m);
    int32_t *y = test_calloc((size_t)n, sizeof *y);
    md_batch batch = {n, x, NULL, y, NULL};
    const float *got = md_model_forward(m, w, &batch, NULL);
    if (memcmp(got, want, sizeof(float) * outs * n) != 0) fail_msg("case %zu: im2col differs from the direct loop", c);
    md_workspace_free(w);
    md_model_free(m);
    test_free(x);
    test_free(want);
    test_free(y);
  }
  gsl_rng_free(rng);
}

static void test_conv2d_channels(void **state) {
  (void)state;
  md_layer_spec l = {.kind = MD_LAYER_CONV2D, .filters = 3, .kernel_size = {1, 1}, .use_bias = 1};
  md_model *m = fd_model(&l, 1, fd_hwc(1, 1, 2));
  set_var(m, "conv2d/kernel", (const float[]){1, 2, 3, 4, 5, 6});
  set_var(m, "conv2d/bias", (const float[]){0.5f, 0, -1});
  md_workspace *w = md_workspace_new(m);
  const float x[2] = {1, 2};
  const int32_t y = 0;
  md_batch b = {1, x, NULL, &y, NULL};
  const float *got = md_model_forward(m, w, &b, NULL);
  assert_true(got[0] == 9.5f && got[1] == 12.0f && got[2] == 14.0f);
  md_workspace_free(w);
  md_model_free(m);
}

/* Keras's Conv2D documentation: input (4, 28, 28, 3), Conv2D(2, 3) -> (4, 26, 26, 2); with
** dilation_rate=2 -> (4, 24, 24, 2); with padding="same" -> (4, 28, 28, 2). Kernel [3, 3, 3, 2]. */
static void test_conv2d_keras_doc_shapes(void **state) {
  (void)state;
  struct { int dilation; md_padding pad; int out; } cases[] = {
      {1, MD_PADDING_VALID, 26}, {2, MD_PADDING_VALID, 24}, {1, MD_PADDING_SAME, 28}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    md_layer_spec l = {.kind = MD_LAYER_CONV2D, .filters = 2, .kernel_size = {3, 3}, .use_bias = 1,
                       .padding = cases[c].pad, .dilation_rate = {cases[c].dilation, cases[c].dilation}};
    md_model_spec spec = {.input_shape = fd_hwc(28, 28, 3), .nlayers = 1, .layers = &l, .shapes_only = 1};
    md_error err = {0};
    md_model *m = md_model_new(&spec, &err);
    assert_non_null(m);
    md_shape out = md_model_layer_output_shape(m, 0);
    assert_int_equal(out.rank, 3);
    assert_int_equal(out.dim[0], cases[c].out);
    assert_int_equal(out.dim[1], cases[c].out);
    assert_int_equal(out.dim[2], 2);
    const md_var *k = md_model_var_const(m, 0);
    assert_true(k->shape[0] == 3 && k->shape[1] == 3 && k->shape[2] == 3 && k->shape[3] == 2);
    char buf[32];
    assert_string_equal(md_var_shape_str(k, buf, sizeof buf), "3x3x3x2");
    assert_string_equal(md_var_shape_str(md_model_var_const(m, 1), buf, sizeof buf), "2");
    assert_int_equal(md_model_num_params(m), 3 * 3 * 3 * 2 + 2);
    md_model_free(m);
  }
}

/* Keras's MaxPooling2D documentation, x = [[1,2,3],[4,5,6],[7,8,9]]:
**   pool (2,2), strides (1,1), valid -> [[5,6],[8,9]]
**   pool (2,2), strides (1,1), same  -> [[5,6,6],[8,9,9],[8,9,9]]
** and x = [[1,2,3,4],[5,6,7,8],[9,10,11,12]], pool (2,2), strides (2,2), valid -> [[6,8]]. */
static void test_max_pooling2d_keras_doc(void **state) {
  (void)state;
  md_layer_spec l = {.kind = MD_LAYER_MAX_POOLING2D, .pool_size = {2, 2}, .strides = {1, 1}};
  assert_forward(&l, fd_hwc(3, 3, 1), nine, (const float[]){5, 6, 8, 9}, 4);
  l.padding = MD_PADDING_SAME;
  assert_forward(&l, fd_hwc(3, 3, 1), nine, (const float[]){5, 6, 6, 8, 9, 9, 8, 9, 9}, 9);
  const float twelve[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  md_layer_spec d = {.kind = MD_LAYER_MAX_POOLING2D};  /* Keras defaults: pool 2, strides 2 */
  assert_forward(&d, fd_hwc(3, 4, 1), twelve, (const float[]){6, 8}, 2);
}

/* Keras's AveragePooling2D documentation, x = [[1,2,3],[4,5,6],[7,8,9]], strides (1,1):
**   valid -> [[3,4],[6,7]]
**   same  -> [[3,4,4.5],[6,7,7.5],[7.5,8.5,9]]: the edge windows average only the taps inside
**            (e.g. (0,2): (3+6)/2 = 4.5), TF's avg_pool excluding the padding. */
static void test_average_pooling2d_keras_doc(void **state) {
  (void)state;
  md_layer_spec l = {.kind = MD_LAYER_AVERAGE_POOLING2D, .pool_size = {2, 2}, .strides = {1, 1}};
  assert_forward(&l, fd_hwc(3, 3, 1), nine, (const float[]){3, 4, 6, 7}, 4);
  l.padding = MD_PADDING_SAME;
  assert_forward(&l, fd_hwc(3, 3, 1), nine, (const float[]){3, 4, 4.5f, 6, 7, 7.5f, 7.5f, 8.5f, 9}, 9);
}

/* x [2, 2, 2] with channel 0 = [1, 2, 3, 4] and channel 1 = [10, 20, 30, 40] (interleaved, NHWC):
** the means 2.5 and 25. */
static void test_global_average_pooling2d(void **state) {
  (void)state;
  md_layer_spec l = {.kind = MD_LAYER_GLOBAL_AVERAGE_POOLING2D};
  assert_forward(&l, fd_hwc(2, 2, 2), (const float[]){1, 10, 2, 20, 3, 30, 4, 40}, (const float[]){2.5f, 25}, 2);
}

/* Keras's Flatten documentation: (None, 10, 64) -> (None, 640); Reshape's: (12,) into (3, 4),
** and (-1, 2, 2) inferring 3; both keep the values in order. A shape that does not divide fails. */
static void test_flatten_reshape_keras_doc(void **state) {
  (void)state;
  md_layer_spec flat = {.kind = MD_LAYER_FLATTEN};
  md_model_spec spec = {.input_shape = {.rank = 2, .dim = {10, 64}}, .nlayers = 1, .layers = &flat, .shapes_only = 1};
  md_error err = {0};
  md_model *m = md_model_new(&spec, &err);
  assert_non_null(m);
  assert_int_equal(md_model_layer_output_shape(m, 0).rank, 1);
  assert_int_equal(md_model_layer_output_shape(m, 0).dim[0], 640);
  md_model_free(m);
  float x[12];
  for (int i = 0; i < 12; i++) x[i] = (float)i - 5.5f;
  md_layer_spec r = {.kind = MD_LAYER_RESHAPE, .target_shape = {.rank = 2, .dim = {3, 4}}};
  assert_forward(&r, (md_shape){.rank = 1, .dim = {12}}, x, x, 12);
  r.target_shape = (md_shape){.rank = 3, .dim = {-1, 2, 2}};
  md_model *inferred = fd_model(&r, 1, (md_shape){.rank = 2, .dim = {3, 4}});
  md_shape out = md_model_layer_output_shape(inferred, 0);
  assert_true(out.rank == 3 && out.dim[0] == 3 && out.dim[1] == 2 && out.dim[2] == 2);
  md_model_free(inferred);
  r.target_shape = (md_shape){.rank = 2, .dim = {-1, 5}};
  md_model_spec bad = {.input_shape = {.rank = 1, .dim = {12}}, .nlayers = 1, .layers = &r};
  assert_null(md_model_new(&bad, &err));
  assert_non_null(strstr(err.msg, "layer 0 (reshape): cannot reshape 12 elements"));
}

/* Keras's Dropout documentation: Dropout(.2) on np.arange(10).reshape(5, 2), training=True:
** every output is 0 or x * 1.25 (1 / (1 - 0.2) rounded to float), and exactly where the stream's
** uniform draw is below 0.2 it is 0; training=False (evaluation) gives x back. */
static void test_dropout_keras_doc(void **state) {
  (void)state;
  md_layer_spec l[2] = {{.kind = MD_LAYER_DROPOUT, .rate = 0.2f},
                        {.kind = MD_LAYER_DENSE, .units = 2, .use_bias = 1}};
  md_model *m = fd_model(l, 2, (md_shape){.rank = 1, .dim = {2}});
  md_workspace *w = md_workspace_new(m);
  md_grads *g = md_grads_new(m);
  float x[10];
  for (int i = 0; i < 10; i++) x[i] = (float)i;
  const int32_t y[5] = {0, 1, 0, 1, 0};
  md_batch b = {5, x, NULL, y, NULL};
  /* The kernel is the identity and the bias zero, so the logits are the dropout's output: the
  ** step must give the loss and gradients of a plain dense model fed the masked, scaled x. */
  set_var(m, "dense/kernel", (const float[]){1, 0, 0, 1});
  gsl_rng *rng = sim_rng_stream(7, "dropout"), *same = sim_rng_stream(7, "dropout");
  md_workspace_set_rng(w, rng);
  double loss;
  md_model_train_step(m, w, &b, 1.0f, g, &loss, NULL);
  /* The same draws replayed: out = x * 1.25 where u >= 0.2, else 0; then the loss of those logits. */
  float out[10];
  int dropped = 0;
  for (int i = 0; i < 10; i++) {
    int keep = gsl_rng_uniform(same) >= 0.2;
    out[i] = keep ? x[i] * 1.25f : 0.0f;
    dropped += !keep;
  }
  print_message("  dropped %d of 10\n", dropped);
  assert_true(dropped > 0 && dropped < 10);
  md_layer_spec plain = {.kind = MD_LAYER_DENSE, .units = 2, .use_bias = 1};
  md_model *ref = fd_model(&plain, 1, (md_shape){.rank = 1, .dim = {2}});
  set_var(ref, "dense/kernel", (const float[]){1, 0, 0, 1});
  md_batch rb = {5, out, NULL, y, NULL};
  md_workspace *rw = md_workspace_new(ref);
  md_grads *rg = md_grads_new(ref);
  double rloss;
  md_model_train_step(ref, rw, &rb, 1.0f, rg, &rloss, NULL);
  assert_true(rloss == loss);
  for (int j = 0; j < 6; j++) assert_true(rg->g[j < 4 ? 0 : 1][j % 4] == g->g[j < 4 ? 0 : 1][j % 4]);
  /* Evaluation: the identity. */
  md_batch eb = {5, x, NULL, y, NULL};
  const float *ev = md_model_forward(m, w, &eb, NULL);
  for (int i = 0; i < 10; i++) assert_true(ev[i] == x[i]);
  md_grads_free(rg);
  md_workspace_free(rw);
  md_model_free(ref);
  gsl_rng_free(rng);
  gsl_rng_free(same);
  md_grads_free(g);
  md_workspace_free(w);
  md_model_free(m);
}

/* A seeded Dropout(0.5, seed=7) draws Keras 3's masks: on ones of [4, 4] its train steps' outputs
** are TF's, printed by tests/python's venv with
**   tf.nn.experimental.stateless_dropout(tf.ones((4, 4)), 0.5, seed=tf.constant([7, c], tf.int32))
** for c = 0 (a first training call) and c = 1 (the second): 2 kept (1 / 0.5), 0 dropped. The
** workspace's draw moves on by one a train step, and a draw set by hand (a resumed run, or
** seed_draws) starts there; replicas at the same draw draw the same mask. Unseeded, the layer
** never reads the draw. */
static void test_dropout_seeded_draws_tf_masks(void **state) {
  (void)state;
  static const float tf_mask[2][16] = {{2, 2, 0, 2, 0, 2, 0, 2, 2, 2, 2, 0, 2, 2, 0, 0},
                                       {0, 2, 0, 2, 2, 2, 2, 0, 0, 2, 2, 0, 0, 2, 2, 2}};
  md_layer_spec l[2] = {{.kind = MD_LAYER_DROPOUT, .rate = 0.5f, .seeded = 1, .seed = 7},
                        {.kind = MD_LAYER_DENSE, .units = 4}};
  md_model *m = fd_model(l, 2, (md_shape){.rank = 1, .dim = {4}});
  set_var(m, "dense/kernel", (const float[]){1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1});
  md_workspace *w = md_workspace_new(m);
  md_grads *g = md_grads_new(m);
  float x[16];
  for (int i = 0; i < 16; i++) x[i] = 1.0f;
  const int32_t y[4] = {0, 1, 2, 3};
  md_batch b = {4, x, NULL, y, NULL};
  double loss;
  for (int step = 0; step < 2; step++) {  /* the draw starts at 0 and moves on by one a step */
    md_model_train_step(m, w, &b, 1.0f, g, &loss, NULL);
    const float *out = md_model_last_output(m, w);
    for (int i = 0; i < 16; i++) assert_true(out[i] == tf_mask[step][i]);
  }
  md_workspace_set_dropout_draw(w, 0);  /* the first step again */
  md_model_train_step(m, w, &b, 1.0f, g, &loss, NULL);
  for (int i = 0; i < 16; i++) assert_true(md_model_last_output(m, w)[i] == tf_mask[0][i]);
  md_grads_free(g);
  md_workspace_free(w);
  md_model_free(m);
  /* seed_draws 1 with the draw at 0 is the second call's mask */
  l[0].seed_draws = 1;
  m = fd_model(l, 2, (md_shape){.rank = 1, .dim = {4}});
  set_var(m, "dense/kernel", (const float[]){1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1});
  w = md_workspace_new(m);
  g = md_grads_new(m);
  md_model_train_step(m, w, &b, 1.0f, g, &loss, NULL);
  for (int i = 0; i < 16; i++) assert_true(md_model_last_output(m, w)[i] == tf_mask[1][i]);
  md_grads_free(g);
  md_workspace_free(w);
  md_model_free(m);
}

/* Keras's LayerNormalization documentation: data [[0,10],[20,30],[40,50],[60,70],[80,90]],
** LayerNormalization(axis=1) -> [[-1, 1], ...] printed rounded: each row's mean is its middle,
** the deviations +-5, var 25, so +-5 / sqrt(25 + 1e-3) = +-0.99998000060 (gamma 1, beta 0). */
static void test_layer_normalization_keras_doc(void **state) {
  (void)state;
  md_layer_spec l = {.kind = MD_LAYER_LAYER_NORMALIZATION};
  md_model *m = fd_model(&l, 1, (md_shape){.rank = 1, .dim = {2}});
  assert_string_equal(md_model_var(m, 0)->name, "layer_normalization/gamma");
  assert_string_equal(md_model_var(m, 1)->name, "layer_normalization/beta");
  gsl_rng *rng = sim_rng_stream(1, "init");
  md_model_init_default(m, rng);
  gsl_rng_free(rng);
  md_workspace *w = md_workspace_new(m);
  const float x[10] = {0, 10, 20, 30, 40, 50, 60, 70, 80, 90};
  const int32_t y[5] = {0};
  md_batch b = {5, x, NULL, y, NULL};
  const float *got = md_model_forward(m, w, &b, NULL);
  for (int i = 0; i < 5; i++) {
    assert_close(got[2 * i], -0.99998000060, 1e-7);
    assert_close(got[2 * i + 1], 0.99998000060, 1e-7);
  }
  md_workspace_free(w);
  md_model_free(m);
}

/* Keras's activation documentation, x = [-3, -1, 0, 1, 3]:
**   gelu (approximate=False) [-0.00404951, -0.15865529, 0., 0.8413447, 2.9959507]
**   gelu (approximate=True)  [-0.00363752, -0.15880796, 0., 0.841192, 2.9963627]
** and swish (silu) on [-20, -1, 0, 1, 20]: [-4.1223075e-08, -2.6894143e-01, 0, 7.3105860e-01, 2.0e+01].
** Through an Activation layer. */
static void test_activations_keras_doc(void **state) {
  (void)state;
  const float x[5] = {-3, -1, 0, 1, 3}, xs[5] = {-20, -1, 0, 1, 20};
  struct { md_activation act; const float *x; double want[5]; } cases[] = {
      {MD_ACT_GELU, x, {-0.00404951, -0.15865529, 0, 0.8413447, 2.9959507}},
      {MD_ACT_GELU_TANH, x, {-0.00363752, -0.15880796, 0, 0.841192, 2.9963627}},
      {MD_ACT_SWISH, xs, {-4.1223075e-08, -2.6894143e-01, 0, 7.3105860e-01, 20}},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    md_layer_spec l = {.kind = MD_LAYER_ACTIVATION, .activation = cases[c].act};
    md_model *m = fd_model(&l, 1, (md_shape){.rank = 1, .dim = {5}});
    assert_string_equal(md_model_layer_name(m, 0), "activation");
    md_workspace *w = md_workspace_new(m);
    const int32_t y = 0;
    md_batch b = {1, cases[c].x, NULL, &y, NULL};
    const float *got = md_model_forward(m, w, &b, NULL);
    for (int i = 0; i < 5; i++) assert_close(got[i], cases[c].want[i], 1e-6 * fmax(1, fabs(cases[c].want[i])));
    md_workspace_free(w);
    md_model_free(m);
  }
}

/* Softmax on the last axis of a [2, 3] example: each row of 3 sums to 1 on its own; row
** [0, 0, 0] gives thirds and row [-1, 0, 2] the values of test_model's softmax case. */
static void test_softmax_last_axis(void **state) {
  (void)state;
  md_layer_spec l = {.kind = MD_LAYER_ACTIVATION, .activation = MD_ACT_SOFTMAX};
  md_model *m = fd_model(&l, 1, (md_shape){.rank = 2, .dim = {2, 3}});
  md_workspace *w = md_workspace_new(m);
  const float x[6] = {0, 0, 0, -1, 0, 2};
  const int32_t y = 0;
  md_batch b = {1, x, NULL, &y, NULL};
  const float *got = md_model_forward(m, w, &b, NULL);
  const double want[6] = {1 / 3.0, 1 / 3.0, 1 / 3.0, 0.0420100661, 0.114195199, 0.843794734};
  for (int i = 0; i < 6; i++) assert_close(got[i], want[i], 1e-7);
  md_workspace_free(w);
  md_model_free(m);
}

/* Keras's Softmax documentation: Softmax()(np.asarray([1., 2., 1.])) -> [0.21194157, 0.5761169,
** 0.21194157]. On a [2, 3] example along axis 1 (the first of an example's, Keras counting the
** batch as 0) each column of 2 sums to 1: column [0, ln 3] gives [0.25, 0.75]; axis -1 is the
** rows, as the Activation layer's softmax. An axis beyond the rank fails. */
static void test_softmax_axis_keras_doc(void **state) {
  (void)state;
  md_layer_spec l = {.kind = MD_LAYER_SOFTMAX};
  md_model *m = fd_model(&l, 1, (md_shape){.rank = 1, .dim = {3}});
  md_workspace *w = md_workspace_new(m);
  const int32_t y = 0;
  md_batch b = {1, (const float[]){1, 2, 1}, NULL, &y, NULL};
  const float *got = md_model_forward(m, w, &b, NULL);
  assert_close(got[0], 0.21194157, 1e-7);
  assert_close(got[1], 0.5761169, 1e-7);
  assert_close(got[2], 0.21194157, 1e-7);
  md_workspace_free(w);
  md_model_free(m);
  l.axis = 1;
  md_model *cols = fd_model(&l, 1, (md_shape){.rank = 2, .dim = {2, 3}});
  md_workspace *cw = md_workspace_new(cols);
  const float x[6] = {0, 5, -1, (float)log(3.0), 5, 2};
  md_batch cb = {1, x, NULL, &y, NULL};
  got = md_model_forward(cols, cw, &cb, NULL);
  const double want[6] = {0.25, 0.5, 0.0474258732, 0.75, 0.5, 0.952574127};
  for (int i = 0; i < 6; i++) assert_close(got[i], want[i], 1e-7);
  md_workspace_free(cw);
  md_model_free(cols);
  l.axis = 3;
  md_error err = {0};
  md_model_spec bad = {.input_shape = {.rank = 2, .dim = {2, 3}}, .nlayers = 1, .layers = &l};
  assert_null(md_model_new(&bad, &err));
  assert_non_null(strstr(err.msg, "softmax axis 3 is not an axis"));
}

/* Conv2D same with stride 2 (5x5 -> 3x3, tanh), then dilation 2 valid (3x3 -> 1x1), flatten,
** dense: both convs' kernels and biases, and the first conv's dx through the second. */
static void test_grad_conv2d(void **state) {
  (void)state;
  md_layer_spec l[4] = {
      {.kind = MD_LAYER_CONV2D, .filters = 3, .kernel_size = {3, 3}, .strides = {2, 2},
       .padding = MD_PADDING_SAME, .activation = MD_ACT_TANH, .use_bias = 1},
      {.kind = MD_LAYER_CONV2D, .filters = 2, .kernel_size = {2, 2}, .dilation_rate = {2, 2}, .use_bias = 1},
      {.kind = MD_LAYER_FLATTEN},
      {.kind = MD_LAYER_DENSE, .units = 3, .use_bias = 1}};
  md_model *m = fd_model(l, 4, fd_hwc(5, 5, 2));
  assert_string_equal(md_model_layer_name(m, 1), "conv2d_1");
  md_batch b = fd_image_batch();
  fd_check(m, &b, 400, 0);
  md_model_free(m);
}

/* Conv2D valid (5x5 -> 4x4, swish), MaxPooling2D same stride 1, a 1x1 Conv2D (gelu),
** LayerNormalization, AveragePooling2D same (4x4 -> 2x2), GlobalAveragePooling2D, dense: every
** pooling's and the normalisation's dx, through the first conv's kernel. */
static void test_grad_pooling_normalization(void **state) {
  (void)state;
  md_layer_spec l[7] = {
      {.kind = MD_LAYER_CONV2D, .filters = 3, .kernel_size = {2, 2}, .activation = MD_ACT_SWISH, .use_bias = 1},
      {.kind = MD_LAYER_MAX_POOLING2D, .pool_size = {2, 2}, .strides = {1, 1}, .padding = MD_PADDING_SAME},
      {.kind = MD_LAYER_CONV2D, .filters = 3, .kernel_size = {1, 1}, .activation = MD_ACT_GELU, .use_bias = 1},
      {.kind = MD_LAYER_LAYER_NORMALIZATION},
      {.kind = MD_LAYER_AVERAGE_POOLING2D, .padding = MD_PADDING_SAME, .pool_size = {3, 3}, .strides = {2, 2}},
      {.kind = MD_LAYER_GLOBAL_AVERAGE_POOLING2D},
      {.kind = MD_LAYER_DENSE, .units = 3, .use_bias = 1}};
  md_model *m = fd_model(l, 7, fd_hwc(5, 5, 2));
  md_batch b = fd_image_batch();
  fd_check(m, &b, 500, 0);
  md_model_free(m);
}

/* Dense over a flat input, reshaped to [2, 2, 3] for a Conv2D (gelu_tanh), layer norm over its
** filters, softmax on the last axis through an Activation layer, flatten, dense. */
static void test_grad_reshape_softmax(void **state) {
  (void)state;
  md_layer_spec l[8] = {
      {.kind = MD_LAYER_FLATTEN},
      {.kind = MD_LAYER_DENSE, .units = 12, .activation = MD_ACT_GELU_TANH, .use_bias = 1},
      {.kind = MD_LAYER_RESHAPE, .target_shape = {.rank = 3, .dim = {2, 2, -1}}},
      {.kind = MD_LAYER_CONV2D, .filters = 4, .kernel_size = {2, 2}, .padding = MD_PADDING_SAME, .use_bias = 1},
      {.kind = MD_LAYER_LAYER_NORMALIZATION, .epsilon = 1e-2f},
      {.kind = MD_LAYER_ACTIVATION, .activation = MD_ACT_SOFTMAX},
      {.kind = MD_LAYER_FLATTEN},  /* one class vector per example: the batch has a label each */
      {.kind = MD_LAYER_DENSE, .units = 3, .use_bias = 1}};
  md_model *m = fd_model(l, 8, fd_hwc(5, 5, 2));
  md_batch b = fd_image_batch();
  fd_check(m, &b, 600, 0);
  md_model_free(m);
}

/* RMSNormalization (Llama's) between two dense layers: its dx (through the first kernel) and its
** scale's gradient against finite differences. */
static void test_grad_rms_normalization(void **state) {
  (void)state;
  md_layer_spec l[3] = {{.kind = MD_LAYER_DENSE, .units = 8, .activation = MD_ACT_GELU, .use_bias = 1},
                        {.kind = MD_LAYER_RMS_NORMALIZATION, .epsilon = 1e-2f},
                        {.kind = MD_LAYER_DENSE, .units = 3, .use_bias = 1}};
  md_model *m = fd_model(l, 3, (md_shape){.rank = 1, .dim = {FD_IMAGE_SIZE}});
  md_batch b = fd_image_batch();
  fd_check(m, &b, 710, 0);
  md_model_free(m);
}

/* Llama's SwiGLU feed-forward as Keras layers: down(silu(gate(x)) * up(x)), gate and up both
** reading the input, their Multiply, a dense head: the product's dx to both branches, through
** both kernels, against finite differences. */
static void test_grad_swiglu_multiply(void **state) {
  (void)state;
  md_layer_spec l[4] = {{.kind = MD_LAYER_DENSE, .units = 8, .activation = MD_ACT_SWISH},
                        {.kind = MD_LAYER_DENSE, .units = 8, .ninputs = 1, .inputs = {MD_INPUT_MODEL}},
                        {.kind = MD_LAYER_MULTIPLY, .ninputs = 2, .inputs = {0, 1}},
                        {.kind = MD_LAYER_DENSE, .units = 3, .use_bias = 1}};
  md_model *m = fd_model(l, 4, (md_shape){.rank = 1, .dim = {FD_IMAGE_SIZE}});
  md_batch b = fd_image_batch();
  fd_check(m, &b, 720, 0);
  md_model_free(m);
}

/* RMSNormalization by hand: the row [3, 4] has mean square (9 + 16) / 2 = 12.5, so with Keras's
** epsilon 1e-6 it becomes [3, 4] / sqrt(12.5 + 1e-6) = [0.848528104, 1.131370805] (scale ones). */
static void test_rms_normalization_by_hand(void **state) {
  (void)state;
  md_layer_spec l = {.kind = MD_LAYER_RMS_NORMALIZATION};
  md_model *m = fd_model(&l, 1, (md_shape){.rank = 1, .dim = {2}});
  assert_string_equal(md_model_var(m, 0)->name, "rms_normalization/scale");
  gsl_rng *rng = sim_rng_stream(1, "init");
  md_model_init_default(m, rng);
  gsl_rng_free(rng);
  md_workspace *w = md_workspace_new(m);
  const float x[2] = {3, 4};
  const int32_t y[1] = {0};
  md_batch b = {1, x, NULL, y, NULL};
  const float *got = md_model_forward(m, w, &b, NULL);
  assert_close(got[0], 3 / sqrt(12.5 + 1e-6), 1e-7);
  assert_close(got[1], 4 / sqrt(12.5 + 1e-6), 1e-7);
  md_workspace_free(w);
  md_model_free(m);
}

/* Dropout between two dense layers, trained: the loss with one fixed mask (the stream re-seeded
** for every evaluation) is differentiated through the mask and the 1 / (1 - rate) scale. */
static void test_grad_dropout(void **state) {
  (void)state;
  md_layer_spec l[3] = {{.kind = MD_LAYER_DENSE, .units = 8, .activation = MD_ACT_TANH, .use_bias = 1},
                        {.kind = MD_LAYER_DROPOUT, .rate = 0.4f},
                        {.kind = MD_LAYER_DENSE, .units = 3, .use_bias = 1}};
  md_model *m = fd_model(l, 3, (md_shape){.rank = 1, .dim = {FD_IMAGE_SIZE}});
  md_batch b = fd_image_batch();
  fd_check(m, &b, 700, 11);
  md_model_free(m);
}

/* Embedding with combiner none, Keras's Embedding on a sequence: ids [3, 0, 3] of a table whose
** row r is [2r, 2r + 1] give [[6, 7], [0, 1], [6, 7]] (a row per id, nothing combined); through
** multi-head attention (a transformer's first layers) the finite differences check the table's
** gradient, id 3's row getting both of its positions' gradients. */
static void test_embedding_sequence(void **state) {
  (void)state;
  md_layer_spec seq = {.kind = MD_LAYER_EMBEDDING, .vocab = 5, .dim = 2, .combiner = MD_COMBINER_NONE};
  md_model_spec spec = {.input_ids = 3, .input_vocab = 5, .nlayers = 1, .layers = &seq, .from_logits = 1};
  md_error err = {0};
  md_model *m = md_model_new(&spec, &err);
  if (m == NULL) fail_msg("%s", err.msg);
  md_shape out = md_model_layer_output_shape(m, 0);
  assert_int_equal(out.rank, 2);
  assert_int_equal(out.dim[0], 3);
  assert_int_equal(out.dim[1], 2);
  for (int i = 0; i < 10; i++) md_model_var(m, 0)->data[i] = (float)i;
  md_workspace *w = md_workspace_new(m);
  const int32_t ids[3] = {3, 0, 3}, y = 1;
  md_batch b = {1, NULL, ids, &y, NULL};
  const float *got = md_model_forward(m, w, &b, NULL);
  const float want[6] = {6, 7, 0, 1, 6, 7};
  for (int i = 0; i < 6; i++) assert_true(got[i] == want[i]);
  md_workspace_free(w);
  md_model_free(m);
  md_layer_spec att[4] = {{.kind = MD_LAYER_EMBEDDING, .vocab = 7, .dim = 4, .combiner = MD_COMBINER_NONE},
                          {.kind = MD_LAYER_MULTI_HEAD_ATTENTION, .num_heads = 2, .key_dim = 2, .use_bias = 1,
                           .use_causal_mask = 1},
                          {.kind = MD_LAYER_FLATTEN},
                          {.kind = MD_LAYER_DENSE, .units = 3, .use_bias = 1}};
  md_model_spec aspec = {.input_ids = 3, .input_vocab = 7, .nlayers = 4, .layers = att, .from_logits = 1};
  m = md_model_new(&aspec, &err);
  if (m == NULL) fail_msg("%s", err.msg);
  const int32_t aids[6] = {3, 5, 3, 0, 6, 1}, ay[2] = {2, 0};
  md_batch ab = {2, NULL, aids, ay, NULL};
  fd_check(m, &ab, 900, 0);
  md_model_free(m);
}

/* KerasHub's TokenAndPositionEmbedding: token row r = [r, 10 r], position row p = [100 p, 0.5];
** ids [2, 0, 2] at positions 0, 1, 2 give [2 + 0, 20 + 0.5], [0 + 100, 0 + 0.5],
** [2 + 200, 20 + 0.5]. Its variables are KerasHub's, the position table sequence_length rows
** (8 here, more than the 3 ids used). Finite differences through causal attention check both
** tables' gradients (a position row gets the sum over the examples). */
static void test_token_and_position_embedding(void **state) {
  (void)state;
  md_layer_spec tpe = {.kind = MD_LAYER_TOKEN_AND_POSITION_EMBEDDING, .vocab = 4, .dim = 2, .sequence_length = 8};
  md_model_spec spec = {.input_ids = 3, .input_vocab = 4, .nlayers = 1, .layers = &tpe, .from_logits = 1};
  md_error err = {0};
  md_model *m = md_model_new(&spec, &err);
  if (m == NULL) fail_msg("%s", err.msg);
  assert_string_equal(md_model_var(m, 0)->name, "token_and_position_embedding/token_embedding/embeddings");
  assert_string_equal(md_model_var(m, 1)->name, "token_and_position_embedding/position_embedding/embeddings");
  assert_int_equal(md_model_var(m, 1)->shape[0], 8);
  for (int r = 0; r < 4; r++) {
    md_model_var(m, 0)->data[2 * r] = (float)r;
    md_model_var(m, 0)->data[2 * r + 1] = 10.0f * (float)r;
  }
  for (int p = 0; p < 8; p++) {
    md_model_var(m, 1)->data[2 * p] = 100.0f * (float)p;
    md_model_var(m, 1)->data[2 * p + 1] = 0.5f;
  }
  md_workspace *w = md_workspace_new(m);
  const int32_t ids[3] = {2, 0, 2}, y = 0;
  md_batch b = {1, NULL, ids, &y, NULL};
  const float *got = md_model_forward(m, w, &b, NULL);
  const float want[6] = {2, 20.5f, 100, 0.5f, 202, 20.5f};
  for (int i = 0; i < 6; i++) assert_true(got[i] == want[i]);
  md_workspace_free(w);
  md_model_free(m);
  /* an input longer than the position table is refused */
  tpe.sequence_length = 2;
  assert_null(md_model_new(&spec, &err));
  assert_non_null(strstr(err.msg, "sequence_length 2 is shorter than the input's 3 ids"));
  md_layer_spec gpt[4] = {{.kind = MD_LAYER_TOKEN_AND_POSITION_EMBEDDING, .vocab = 7, .dim = 4},
                          {.kind = MD_LAYER_MULTI_HEAD_ATTENTION, .num_heads = 2, .key_dim = 2, .use_bias = 1,
                           .use_causal_mask = 1},
                          {.kind = MD_LAYER_FLATTEN},
                          {.kind = MD_LAYER_DENSE, .units = 3, .use_bias = 1}};
  md_model_spec gspec = {.input_ids = 3, .input_vocab = 7, .nlayers = 4, .layers = gpt, .from_logits = 1};
  m = md_model_new(&gspec, &err);
  if (m == NULL) fail_msg("%s", err.msg);
  const int32_t gids[6] = {3, 5, 3, 0, 6, 1}, gy[2] = {2, 0};
  md_batch gb = {2, NULL, gids, gy, NULL};
  fd_check(m, &gb, 901, 0);
  md_model_free(m);
}

/* sparse_categorical_crossentropy on a sequence output [3, 5]: a label per position, the
** example's loss the mean over its positions. With a zero dense layer every position's logits are
** 0, so each position costs ln 5 and a batch of 2 sums to 2 ln 5; position p's logit gradient is
** (1/5 - [c = y_p]) scale / 3, so the bias gradient (their sum over 2 examples x 3 positions,
** scale 1) of class c is (6/5 - count of labels equal to c) / 3. Labels [0 1 1 | 4 1 0]: class 0
** twice, 1 three times, 2 and 3 never, 4 once: (1.2 - 2) / 3, (1.2 - 3) / 3, 0.4, 0.4,
** (1.2 - 1) / 3. Finite differences then check the sequence loss's gradient end to end. */
static void test_sequence_labels(void **state) {
  (void)state;
  md_layer_spec l[2] = {{.kind = MD_LAYER_EMBEDDING, .vocab = 5, .dim = 2, .combiner = MD_COMBINER_NONE},
                        {.kind = MD_LAYER_DENSE, .units = 5, .use_bias = 1}};
  md_model_spec spec = {.input_ids = 3, .input_vocab = 5, .nlayers = 2, .layers = l, .from_logits = 1};
  md_error err = {0};
  md_model *m = md_model_new(&spec, &err);
  if (m == NULL) fail_msg("%s", err.msg);
  assert_int_equal(md_model_label_positions(m), 3);
  assert_int_equal(md_model_num_classes(m), 15);
  const int32_t ids[6] = {1, 2, 3, 4, 0, 2}, labels[6] = {0, 1, 1, 4, 1, 0};
  md_batch b = {2, NULL, ids, labels, NULL};
  md_workspace *w = md_workspace_new(m);
  md_grads *g = md_grads_new(m);
  double loss;
  md_model_train_step(m, w, &b, 1.0f, g, &loss, NULL);
  assert_true(fabs(loss - 2 * log(5.0)) < 1e-6);
  const float *db = g->g[md_model_find_var(m, "dense/bias")];
  const double want[5] = {(1.2 - 2) / 3, (1.2 - 3) / 3, 0.4, 0.4, (1.2 - 1) / 3};
  for (int c = 0; c < 5; c++) assert_true(fabs(db[c] - want[c]) < 1e-6);
  md_grads_free(g);
  md_workspace_free(w);
  fd_check(m, &b, 905, 0);
  md_model_free(m);
}

/* Softmax along the first of three example axes, between a reshape and a dense layer. */
static void test_grad_softmax_axis(void **state) {
  (void)state;
  md_layer_spec l[5] = {
      {.kind = MD_LAYER_DENSE, .units = 12, .activation = MD_ACT_TANH, .use_bias = 1},
      {.kind = MD_LAYER_RESHAPE, .target_shape = {.rank = 3, .dim = {3, 2, 2}}},
      {.kind = MD_LAYER_SOFTMAX, .axis = 1},
      {.kind = MD_LAYER_FLATTEN},
      {.kind = MD_LAYER_DENSE, .units = 3, .use_bias = 1}};
  md_model *m = fd_model(l, 5, (md_shape){.rank = 1, .dim = {FD_IMAGE_SIZE}});
  md_batch b = fd_image_batch();
  fd_check(m, &b, 1100, 0);
  md_model_free(m);
}

/* Self-attention by hand: S = 2 positions of D = 2 features, one head, key_dim = value_dim = 1
** (so the query scale 1/sqrt(1) is 1), no biases. x = [[1, 0], [0, 1]], Wq = Wk = [1, 0]^T,
** Wv = [0, 1]^T, Wo = [[1, 2]]:
**   q = k = [1, 0], v = [0, 1]
**   row 0: scores [1, 0] -> p = [e/(e+1), 1/(e+1)] = [0.731058579, 0.268941421], c0 = 0.268941421
**   row 1: scores [0, 0] -> p = [0.5, 0.5], c1 = 0.5
**   z = c Wo = [[0.268941421, 0.537882842], [0.5, 1]]
** With use_causal_mask row 0 attends to itself only: p = [1], c0 = v0 = 0, z0 = [0, 0]. */
static void test_multi_head_attention_forward(void **state) {
  (void)state;
  for (int causal = 0; causal <= 1; causal++) {
    md_layer_spec l = {.kind = MD_LAYER_MULTI_HEAD_ATTENTION, .num_heads = 1, .key_dim = 1,
                       .use_causal_mask = causal};
    md_model *m = fd_model(&l, 1, (md_shape){.rank = 2, .dim = {2, 2}});
    assert_int_equal(md_model_num_vars(m), 4);
    set_var(m, "multi_head_attention/query/kernel", (const float[]){1, 0});
    set_var(m, "multi_head_attention/key/kernel", (const float[]){1, 0});
    set_var(m, "multi_head_attention/value/kernel", (const float[]){0, 1});
    set_var(m, "multi_head_attention/attention_output/kernel", (const float[]){1, 2});
    md_workspace *w = md_workspace_new(m);
    const float x[4] = {1, 0, 0, 1};
    const int32_t y = 0;
    md_batch b = {1, x, NULL, &y, NULL};
    const float *got = md_model_forward(m, w, &b, NULL);
    const double want[2][4] = {{0.268941421, 0.537882842, 0.5, 1}, {0, 0, 0.5, 1}};
    for (int i = 0; i < 4; i++) assert_close(got[i], want[causal][i], 1e-7);
    md_workspace_free(w);
    md_model_free(m);
  }
}

/* Keras's MultiHeadAttention documentation: MultiHeadAttention(num_heads=2, key_dim=2) on
** [8, 16] gives [8, 16]; its variables are query/key/value kernels [16, 2, 2] with biases [2, 2]
** and attention_output [2, 2, 16] with bias [16]: 3 (64 + 4) + 64 + 16 = 284 parameters. */
static void test_multi_head_attention_keras_doc(void **state) {
  (void)state;
  md_layer_spec l = {.kind = MD_LAYER_MULTI_HEAD_ATTENTION, .num_heads = 2, .key_dim = 2, .use_bias = 1};
  md_model_spec spec = {.input_shape = {.rank = 2, .dim = {8, 16}}, .nlayers = 1, .layers = &l, .shapes_only = 1};
  md_error err = {0};
  md_model *m = md_model_new(&spec, &err);
  assert_non_null(m);
  md_shape out = md_model_layer_output_shape(m, 0);
  assert_true(out.rank == 2 && out.dim[0] == 8 && out.dim[1] == 16);
  assert_int_equal(md_model_num_params(m), 284);
  assert_int_equal(md_model_num_vars(m), 8);
  assert_string_equal(md_model_var_const(m, 0)->name, "multi_head_attention/query/kernel");
  assert_string_equal(md_model_var_const(m, 7)->name, "multi_head_attention/attention_output/bias");
  const md_var *k = md_model_var_const(m, 0);
  assert_true(k->rank == 3 && k->shape[0] == 16 && k->shape[1] == 2 && k->shape[2] == 2);
  md_model_free(m);
}

/* A dense layer feeds a [3, 4] sequence to attention (2 heads, key_dim 3, value_dim 2, biases),
** then layer norm, flatten, dense: every projection's gradient and attention's dx through the
** first dense, with and without the causal mask. */
static void test_grad_multi_head_attention(void **state) {
  (void)state;
  for (int causal = 0; causal <= 1; causal++) {
    md_layer_spec l[7] = {
        {.kind = MD_LAYER_FLATTEN},
        {.kind = MD_LAYER_DENSE, .units = 12, .activation = MD_ACT_TANH, .use_bias = 1},
        {.kind = MD_LAYER_RESHAPE, .target_shape = {.rank = 2, .dim = {3, 4}}},
        {.kind = MD_LAYER_MULTI_HEAD_ATTENTION, .num_heads = 2, .key_dim = 3, .value_dim = 2,
         .use_bias = 1, .use_causal_mask = causal},
        {.kind = MD_LAYER_LAYER_NORMALIZATION},
        {.kind = MD_LAYER_FLATTEN},
        {.kind = MD_LAYER_DENSE, .units = 3, .use_bias = 1}};
    md_model *m = fd_model(l, 7, fd_hwc(5, 5, 2));
    md_batch b = fd_image_batch();
    fd_check(m, &b, 800 + causal, 0);
    md_model_free(m);
  }
}

/* Keras's BatchNormalization documentation: in training each channel is normalised by its batch
** mean and variance, (batch - mean(batch)) / sqrt(var(batch) + epsilon) * gamma + beta, and
** moving_mean = moving_mean * momentum + mean(batch) * (1 - momentum) (the same for the variance);
** in inference (batch - moving_mean) / sqrt(moving_var + epsilon) * gamma + beta.
** Four examples of two channels: channel 0 = [1, 2, 3, 4] (mean 2.5, biased variance 1.25),
** channel 1 = [10, 10, 10, 10] (mean 10, variance 0). epsilon 1e-3, gamma 1, beta 0:
**   training:  channel 0 (x - 2.5) / sqrt(1.251) = [-1.34110476, -0.447034921, 0.447034921, 1.34110476];
**              channel 1 all 0;
**   moving:    mean [0.01 * 2.5, 0.01 * 10] = [0.025, 0.1]; variance [1 - 0.01 (1 - 1.25),
**              1 - 0.01 (1 - 0)] = [1.0025, 0.99];
**   inference of x = [1, 10]: (1 - 0.025) / sqrt(1.0035) = 0.973299, (10 - 0.1) / sqrt(0.991) = 9.94475.
** The optimizer (SGD with momentum) keeps no slot for, and never changes, the moving statistics. */
static void test_batch_normalization_keras_doc(void **state) {
  (void)state;
  md_layer_spec l[2] = {{.kind = MD_LAYER_BATCH_NORMALIZATION}, {.kind = MD_LAYER_DENSE, .units = 2}};
  md_model *m = fd_model(l, 2, (md_shape){.rank = 1, .dim = {2}});
  assert_string_equal(md_model_var(m, 2)->name, "batch_normalization/moving_mean");
  assert_true(md_model_var(m, 0)->trainable && !md_model_var(m, 2)->trainable && !md_model_var(m, 3)->trainable);
  gsl_rng *rng = sim_rng_stream(5, "init");
  md_model_init_default(m, rng);
  gsl_rng_free(rng);
  set_var(m, "dense/kernel", (const float[]){1, 0, 0, 1});
  md_workspace *w = md_workspace_new(m);
  md_grads *g = md_grads_new(m);
  md_optimizer_spec os;
  md_optimizer_spec_defaults(&os, MD_OPT_SGD);
  os.momentum = 0.9f;
  md_optimizer *opt = md_optimizer_new(&os, m);
  assert_int_equal(md_optimizer_num_slots(opt), 3);  /* gamma, beta, dense/kernel */
  assert_string_equal(md_optimizer_slot(opt, 2)->name, "dense/kernel/momentum");
  const float x[8] = {1, 10, 2, 10, 3, 10, 4, 10};
  const int32_t y[4] = {0, 1, 0, 1};
  md_batch b = {4, x, NULL, y, NULL};
  double loss;
  md_model_train_step(m, w, &b, 0.25f, g, &loss, NULL);
  /* The logits are the normalised batch: their loss, recomputed from the values above. */
  const double z0[4] = {-1.34110476, -0.447034921, 0.447034921, 1.34110476};
  double want = 0;
  for (int i = 0; i < 4; i++) {
    double a = z0[i], lse = log(exp(a) + exp(0.0));
    want += lse - (y[i] == 0 ? a : 0.0);
  }
  assert_close(loss, want, 1e-6);
  assert_true(g->g[2][0] == 0.0f && g->g[3][1] == 0.0f);
  const float *mm = md_model_var(m, 2)->data, *mv = md_model_var(m, 3)->data;
  assert_close(mm[0], 0.025, 1e-7);  /* in float: 2.5 * (float)0.01 */
  assert_close(mm[1], 0.1, 1e-7);
  assert_close(mv[0], 1.0025, 1e-7);
  assert_close(mv[1], 0.99, 1e-7);
  float keep[4] = {mm[0], mm[1], mv[0], mv[1]};
  md_optimizer_apply(opt, m, g, NULL);
  assert_true(mm[0] == keep[0] && mm[1] == keep[1] && mv[0] == keep[2] && mv[1] == keep[3]);
  set_var(m, "batch_normalization/gamma", (const float[]){1, 1});
  set_var(m, "batch_normalization/beta", (const float[]){0, 0});
  set_var(m, "dense/kernel", (const float[]){1, 0, 0, 1});
  md_batch one = {1, x, NULL, y, NULL};
  const float *out = md_model_forward(m, w, &one, NULL);
  assert_close(out[0], 0.975 / sqrt(1.0035), 1e-6);
  assert_close(out[1], 9.9 / sqrt(0.991), 1e-5);
  md_optimizer_free(opt);
  md_grads_free(g);
  md_workspace_free(w);
  md_model_free(m);
}

/* Batch normalisation in training mode after a conv (per channel over examples and positions)
** and after a dense layer, differentiated through the batch statistics: the train step's loss
** (the fd_check stream seed only selects that loss). */
static void test_grad_batch_normalization(void **state) {
  (void)state;
  md_layer_spec l[5] = {
      {.kind = MD_LAYER_CONV2D, .filters = 3, .kernel_size = {2, 2}, .strides = {2, 2}, .use_bias = 1},
      {.kind = MD_LAYER_BATCH_NORMALIZATION},
      {.kind = MD_LAYER_GLOBAL_AVERAGE_POOLING2D},
      {.kind = MD_LAYER_DENSE, .units = 4, .activation = MD_ACT_TANH, .use_bias = 1},
      {.kind = MD_LAYER_BATCH_NORMALIZATION, .momentum = 0.9f, .epsilon = 1e-2f}};
  md_layer_spec all[6];
  memcpy(all, l, sizeof l);
  all[5] = (md_layer_spec){.kind = MD_LAYER_DENSE, .units = 3, .use_bias = 1};
  md_model *m = fd_model(all, 6, fd_hwc(5, 5, 2));
  assert_string_equal(md_model_layer_name(m, 4), "batch_normalization_1");
  md_batch b = fd_image_batch();
  fd_check(m, &b, 900, 13);
  md_model_free(m);
}

/* test_grad_batch_normalization's model with both normalisations synchronized (Keras's
** BatchNormalization(synchronized=True)), on one replica: no all-reduce, so the sums are the
** replica's own and mean = sum / M, var = sum_sq / M - mean^2 as TF's _calculate_mean_and_var
** computes them under a replica context; differentiated through those sums. */
static const md_layer_spec sync_bn_layers[6] = {
    {.kind = MD_LAYER_CONV2D, .filters = 3, .kernel_size = {2, 2}, .strides = {2, 2}, .use_bias = 1},
    {.kind = MD_LAYER_BATCH_NORMALIZATION, .synchronized = 1},
    {.kind = MD_LAYER_GLOBAL_AVERAGE_POOLING2D},
    {.kind = MD_LAYER_DENSE, .units = 4, .activation = MD_ACT_TANH, .use_bias = 1},
    {.kind = MD_LAYER_BATCH_NORMALIZATION, .momentum = 0.9f, .epsilon = 1e-2f, .synchronized = 1},
    {.kind = MD_LAYER_DENSE, .units = 3, .use_bias = 1}};

static void test_grad_sync_batch_normalization(void **state) {
  (void)state;
  md_model *m = fd_model(sync_bn_layers, 6, fd_hwc(5, 5, 2));
  md_batch b = fd_image_batch();
  fd_check(m, &b, 900, 13);
  md_model_free(m);
}

/* Keras 3's moments(synchronized=True) takes max(sum_sq / M - mean^2, 0): four values 5.4e-3 apart
** near 4842.73 have a true variance of 7e-6, but in float32 sum_sq / M (5.9e6, an ulp of 0.5) minus
** mean^2 rounds to -4. Clamped, the variance is 0: the outputs are finite ((x - mean) /
** sqrt(eps)), the moving variance moves from 1 toward 0 (0.99, where tf.keras 2's unclamped -4
** would give 0.95 and NaN outputs) and no gradient flows through the clamped variance. */
static void test_sync_batch_normalization_clamps_the_variance(void **state) {
  (void)state;
  md_layer_spec l[2] = {{.kind = MD_LAYER_BATCH_NORMALIZATION, .synchronized = 1}, {.kind = MD_LAYER_DENSE, .units = 2}};
  md_model *m = fd_model(l, 2, (md_shape){.rank = 1, .dim = {1}});
  gsl_rng *rng = sim_rng_stream(5, "init");
  md_model_init_default(m, rng);
  gsl_rng_free(rng);
  md_workspace *w = md_workspace_new(m);
  md_grads *g = md_grads_new(m);
  const float x[4] = {4842.73486328125f, 4842.7294921875f, 4842.73486328125f, 4842.7294921875f};
  const int32_t y[4] = {0, 1, 0, 1};
  double loss;
  md_model_train_step(m, w, &(md_batch){4, x, NULL, y, NULL}, 0.25f, g, &loss, NULL);
  assert_true(isfinite(loss));
  assert_true(md_model_var(m, 3)->data[0] == 0.99f);
  for (int i = 0; i < md_model_num_vars(m); i++)
    for (size_t j = 0; j < md_model_var(m, i)->size; j++) assert_true(isfinite(g->g[i][j]));
  md_grads_free(g);
  md_workspace_free(w);
  md_model_free(m);
}

/* The all-reduces a replica issues, by size, and whether it passed values. */
typedef struct call_log {
  int n;                  /* calls so far */
  size_t size[16];        /* floats each call reduced */
  int timed_only[16];     /* 1: its buffer was NULL (shapes only) */
} call_log;

static void log_call(call_log *log, const float *buf, size_t n) {
  assert_true(log->n < 16);
  log->size[log->n] = n;
  log->timed_only[log->n++] = buf == NULL;
}

/* The all-reduce of a replica whose twin holds the same batch: every sum doubles. */
static void twin_all_reduce(void *ctx, float *buf, size_t n) {
  log_call(ctx, buf, n);
  for (size_t i = 0; buf != NULL && i < n; i++) buf[i] *= 2;
}

/* The all-reduce of a replica whose partner adds 1 to every sum (has examples, whatever they are). */
static void partner_all_reduce(void *ctx, float *buf, size_t n) {
  log_call(ctx, buf, n);
  for (size_t i = 0; buf != NULL && i < n; i++) buf[i] += 1;
}

/* One train step of sync_bn_layers on b with scale 0.5 (all_reduce logging into log unless log is
** NULL); the model (initialised from seed 900) and its gradients returned. */
static md_model *sync_bn_step(const md_batch *b, int shapes_only, md_all_reduce_fn all_reduce, call_log *log,
                              md_grads **g, double *loss) {
  md_model_spec spec = {.input_shape = fd_hwc(5, 5, 2), .nlayers = 6, .layers = sync_bn_layers,
                        .from_logits = 1, .shapes_only = shapes_only};
  md_error err = {0};
  md_model *m = md_model_new(&spec, &err);
  assert_non_null(m);
  gsl_rng *rng = sim_rng_stream(900, "init");
  md_model_init_default(m, rng);
  gsl_rng_free(rng);
  md_workspace *w = md_workspace_new(m);
  if (log != NULL) md_workspace_set_all_reduce(w, all_reduce, log);
  *g = md_grads_new(m);
  md_model_train_step(m, w, b, 0.5f, *g, loss, NULL);
  md_workspace_free(w);
  return m;
}

/* SyncBatchNormalization over two replicas holding the same 4 examples, as the replica sees it:
** its all-reduces double every sum (twin_all_reduce). The global batch is the 4 examples twice,
** whose statistics are theirs, and the global loss is L_A + L_B = 2 L_A, so the gradients the
** replica computes (its share of what the gradient all-reduce sums), the input gradients through
** the all-reduced d sum and d sum_sq included, are half those of one replica holding the 8
** examples, to float rounding; its moving statistics are that replica's. The all-reduces, as TF
** issues them (three, not batched): forward the sum, sum of squares and count of each
** normalisation's channels (3, then 4); backward, in reverse, the two sums' gradients. A
** replica with no examples (its partner has some), and a shapes-only model, issue the same ones
** (model.c invariant 10);
** a normalisation reading the model's input has no input gradient: no backward all-reduce. */
static void test_sync_batch_normalization_twin_replicas(void **state) {
  (void)state;
  md_batch b = fd_image_batch();
  static float x8[2 * FD_IMAGES * FD_IMAGE_SIZE];
  int32_t y8[2 * FD_IMAGES];
  for (int k = 0; k < 2; k++) {
    memcpy(x8 + k * FD_IMAGES * FD_IMAGE_SIZE, b.x, sizeof(float) * FD_IMAGES * FD_IMAGE_SIZE);
    memcpy(y8 + k * FD_IMAGES, fd_labels, sizeof fd_labels);
  }
  md_batch twice = {2 * FD_IMAGES, x8, NULL, y8, NULL};
  call_log log = {0};
  md_grads *ga, *gb;
  double la, lb;
  md_model *a = sync_bn_step(&b, 0, twin_all_reduce, &log, &ga, &la);
  md_model *one = sync_bn_step(&twice, 0, NULL, NULL, &gb, &lb);
  assert_close(2 * la, lb, 1e-6 * lb);
  double worst = 0;
  for (int i = 0; i < md_model_num_vars(a); i++) {
    const md_var *va = md_model_var(a, i), *vb = md_model_var(one, i);
    for (size_t j = 0; j < va->size; j++) {
      double want = 0.5 * gb->g[i][j], err = fabs(ga->g[i][j] - want);
      if (err > 1e-6 + 1e-5 * fabs(want)) fail_msg("%s[%zu]: grad %.9g, want %.9g", va->name, j, ga->g[i][j], want);
      worst = fmax(worst, err);
      assert_close(va->data[j], vb->data[j], 1e-6 + 1e-6 * fabs(vb->data[j]));
    }
  }
  print_message("  twin replicas vs one on the batch twice: max |gradient error| %.3g\n", worst);
  const size_t want[10] = {3, 3, 3, 4, 4, 4, 4, 4, 3, 3};
  assert_int_equal(log.n, 10);
  for (int k = 0; k < 10; k++) assert_true(log.size[k] == want[k] && !log.timed_only[k]);
  md_batch empty = {0, NULL, NULL, NULL, NULL};
  for (int shapes_only = 0; shapes_only <= 1; shapes_only++) {
    call_log again = {0};
    md_grads *g;
    double loss;
    md_model *m = sync_bn_step(shapes_only ? &(md_batch){FD_IMAGES, NULL, NULL, NULL, NULL} : &empty,
                               shapes_only, partner_all_reduce, &again, &g, &loss);
    assert_int_equal(again.n, 10);
    for (int k = 0; k < 10; k++) assert_true(again.size[k] == want[k] && again.timed_only[k] == shapes_only);
    md_grads_free(g);
    md_model_free(m);
  }
  md_layer_spec first[2] = {{.kind = MD_LAYER_BATCH_NORMALIZATION, .synchronized = 1},
                            {.kind = MD_LAYER_DENSE, .units = 3}};
  md_model *m = fd_model(first, 2, (md_shape){.rank = 1, .dim = {2}});
  md_workspace *w = md_workspace_new(m);
  call_log input_only = {0};
  md_workspace_set_all_reduce(w, twin_all_reduce, &input_only);
  md_grads *g = md_grads_new(m);
  const float x[4] = {1, 10, 3, 20};
  double loss;
  md_model_train_step(m, w, &(md_batch){2, x, NULL, fd_labels, NULL}, 0.5f, g, &loss, NULL);
  assert_int_equal(input_only.n, 3);
  md_grads_free(g);
  md_workspace_free(w);
  md_model_free(m);
  md_grads_free(ga);
  md_grads_free(gb);
  md_model_free(a);
  md_model_free(one);
}

/* DepthwiseConv2D by hand: x [2, 2, 2] with channel 0 = [1, 2, 3, 4] and channel 1 = [10, 20,
** 30, 40], kernel [2, 2, 2, 2] (depth_multiplier 2), valid: one position, output channel c 2 + m
** = sum over taps of x[., ., c] K[i, j, c, m]. K = 1 for (c 0, m 0), tap index + 1 for (c 0, m 1),
** 0.5 for (c 1, m 0), 0 for (c 1, m 1):
**   [1+2+3+4, 1*1+2*2+3*3+4*4, 0.5*(10+20+30+40), 0] = [10, 30, 50, 0] (+ bias [0, 1, 0, -1]).
** Shapes as Keras computes them: [10, 10, 3] with kernel 3, multiplier 2, valid gives [8, 8, 6],
** depthwise_kernel [3, 3, 3, 2] and bias [6]. */
static void test_depthwise_conv2d(void **state) {
  (void)state;
  md_layer_spec l = {.kind = MD_LAYER_DEPTHWISE_CONV2D, .kernel_size = {2, 2}, .depth_multiplier = 2, .use_bias = 1};
  md_model *m = fd_model(&l, 1, fd_hwc(2, 2, 2));
  assert_string_equal(md_model_var(m, 0)->name, "depthwise_conv2d/depthwise_kernel");
  float k[16];
  for (int t = 0; t < 4; t++) {
    k[t * 4 + 0] = 1, k[t * 4 + 1] = (float)(t + 1), k[t * 4 + 2] = 0.5f, k[t * 4 + 3] = 0;
  }
  set_var(m, "depthwise_conv2d/depthwise_kernel", k);
  set_var(m, "depthwise_conv2d/bias", (const float[]){0, 1, 0, -1});
  md_workspace *w = md_workspace_new(m);
  const float x[8] = {1, 10, 2, 20, 3, 30, 4, 40};
  const int32_t y = 0;
  md_batch b = {1, x, NULL, &y, NULL};
  const float *got = md_model_forward(m, w, &b, NULL);
  assert_true(got[0] == 10 && got[1] == 31 && got[2] == 50 && got[3] == -1);
  md_workspace_free(w);
  md_model_free(m);
  l = (md_layer_spec){.kind = MD_LAYER_DEPTHWISE_CONV2D, .kernel_size = {3, 3}, .depth_multiplier = 2, .use_bias = 1};
  md_model_spec spec = {.input_shape = fd_hwc(10, 10, 3), .nlayers = 1, .layers = &l, .shapes_only = 1};
  md_error err = {0};
  md_model *shape = md_model_new(&spec, &err);
  assert_non_null(shape);
  md_shape out = md_model_layer_output_shape(shape, 0);
  assert_true(out.dim[0] == 8 && out.dim[1] == 8 && out.dim[2] == 6);
  assert_int_equal(md_model_num_params(shape), 3 * 3 * 3 * 2 + 6);
  md_model_free(shape);
}

/* DepthwiseConv2D (multiplier 2, same, stride 2, relu) after a Conv2D, then a dilated one,
** flatten, dense: its kernel, bias and dx by finite differences. */
static void test_grad_depthwise_conv2d(void **state) {
  (void)state;
  md_layer_spec l[5] = {
      {.kind = MD_LAYER_CONV2D, .filters = 2, .kernel_size = {1, 1}, .use_bias = 1},
      {.kind = MD_LAYER_DEPTHWISE_CONV2D, .kernel_size = {3, 3}, .depth_multiplier = 2, .strides = {2, 2},
       .padding = MD_PADDING_SAME, .activation = MD_ACT_TANH, .use_bias = 1},
      {.kind = MD_LAYER_DEPTHWISE_CONV2D, .kernel_size = {2, 2}, .dilation_rate = {2, 2}, .use_bias = 1},
      {.kind = MD_LAYER_FLATTEN},
      {.kind = MD_LAYER_DENSE, .units = 3, .use_bias = 1}};
  md_model *m = fd_model(l, 5, fd_hwc(5, 5, 2));
  md_batch b = fd_image_batch();
  fd_check(m, &b, 1000, 0);
  md_model_free(m);
}

/* Errors name the layer and what it needs. */
static void test_layer_spec_errors(void **state) {
  (void)state;
  md_error err = {0};
  md_layer_spec conv = {.kind = MD_LAYER_CONV2D, .filters = 2, .kernel_size = {3, 3}};
  md_model_spec flat = {.input_features = 9, .nlayers = 1, .layers = &conv};
  assert_null(md_model_new(&flat, &err));
  assert_non_null(strstr(err.msg, "layer 0 (conv2d): conv2d reads [height, width, channels]"));
  md_model_spec small = {.input_shape = fd_hwc(2, 2, 1), .nlayers = 1, .layers = &conv};
  assert_null(md_model_new(&small, &err));
  assert_non_null(strstr(err.msg, "valid padding needs an input of at least 3"));
  md_model_spec both = {.input_features = 9, .input_shape = fd_hwc(2, 2, 2), .nlayers = 1, .layers = &conv};
  assert_null(md_model_new(&both, &err));
  assert_non_null(strstr(err.msg, "input_features 9 is not the 8 elements of input_shape"));
  md_layer_spec drop = {.kind = MD_LAYER_DROPOUT, .rate = 1.0f};
  md_model_spec d = {.input_features = 3, .nlayers = 1, .layers = &drop};
  assert_null(md_model_new(&d, &err));
  assert_non_null(strstr(err.msg, "rate in [0, 1)"));
  assert_int_equal(md_layer_kind_from_name("max_pooling2d"), MD_LAYER_MAX_POOLING2D);
  assert_string_equal(md_layer_kind_name(MD_LAYER_LAYER_NORMALIZATION), "layer_normalization");
  assert_int_equal(md_layer_kind_from_name("conv3d"), -1);
}

/* numerics off counts what numerics on counts, for every new kind, in a train step. */
static void test_shapes_only_costs_new_kinds(void **state) {
  (void)state;
  md_layer_spec l[8] = {
      {.kind = MD_LAYER_CONV2D, .filters = 3, .kernel_size = {2, 2}, .activation = MD_ACT_RELU, .use_bias = 1},
      {.kind = MD_LAYER_MAX_POOLING2D, .padding = MD_PADDING_SAME},
      {.kind = MD_LAYER_BATCH_NORMALIZATION},
      {.kind = MD_LAYER_AVERAGE_POOLING2D, .pool_size = {1, 1}},
      {.kind = MD_LAYER_GLOBAL_AVERAGE_POOLING2D},
      {.kind = MD_LAYER_DROPOUT, .rate = 0.5f},
      {.kind = MD_LAYER_RESHAPE, .target_shape = {.rank = 2, .dim = {1, 3}}},
      {.kind = MD_LAYER_MULTI_HEAD_ATTENTION, .num_heads = 2, .key_dim = 2, .use_bias = 1}};
  md_layer_spec tail[2] = {{.kind = MD_LAYER_FLATTEN}, {.kind = MD_LAYER_DENSE, .units = 3}};
  md_layer_spec all[10];
  memcpy(all, l, sizeof l);
  memcpy(all + 8, tail, sizeof tail);
  fd_assert_costs_mode_independent(all, 10);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_conv2d_forward),
      cmocka_unit_test(test_conv2d_gemm_matches_direct_loops),
      cmocka_unit_test(test_conv2d_channels),
      cmocka_unit_test(test_conv2d_keras_doc_shapes),
      cmocka_unit_test(test_max_pooling2d_keras_doc),
      cmocka_unit_test(test_average_pooling2d_keras_doc),
      cmocka_unit_test(test_global_average_pooling2d),
      cmocka_unit_test(test_flatten_reshape_keras_doc),
      cmocka_unit_test(test_dropout_keras_doc),
      cmocka_unit_test(test_dropout_seeded_draws_tf_masks),
      cmocka_unit_test(test_layer_normalization_keras_doc),
      cmocka_unit_test(test_activations_keras_doc),
      cmocka_unit_test(test_softmax_last_axis),
      cmocka_unit_test(test_softmax_axis_keras_doc),
      cmocka_unit_test(test_grad_softmax_axis),
      cmocka_unit_test(test_grad_conv2d),
      cmocka_unit_test(test_grad_pooling_normalization),
      cmocka_unit_test(test_grad_reshape_softmax),
      cmocka_unit_test(test_grad_dropout),
    cmocka_unit_test(test_grad_rms_normalization),
    cmocka_unit_test(test_grad_swiglu_multiply),
    cmocka_unit_test(test_rms_normalization_by_hand),
      cmocka_unit_test(test_embedding_sequence),
      cmocka_unit_test(test_token_and_position_embedding),
      cmocka_unit_test(test_sequence_labels),
      cmocka_unit_test(test_multi_head_attention_forward),
      cmocka_unit_test(test_multi_head_attention_keras_doc),
      cmocka_unit_test(test_grad_multi_head_attention),
      cmocka_unit_test(test_depthwise_conv2d),
      cmocka_unit_test(test_grad_depthwise_conv2d),
      cmocka_unit_test(test_batch_normalization_keras_doc),
      cmocka_unit_test(test_grad_batch_normalization),
      cmocka_unit_test(test_grad_sync_batch_normalization),
      cmocka_unit_test(test_sync_batch_normalization_twin_replicas),
      cmocka_unit_test(test_sync_batch_normalization_clamps_the_variance),
      cmocka_unit_test(test_layer_spec_errors),
      cmocka_unit_test(test_shapes_only_costs_new_kinds),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
