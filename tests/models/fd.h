/*
** fd.h: the finite-difference gradient check the models tests share: central differences in
** double over every parameter, (L(w+h) - L(w-h)) / (w+h - (w-h)) with the float-rounded step,
** against scale * sum of losses differentiated by md_model_train_step; and the small image
** models and batch the layer and graph tests check it on.
*/
#ifndef PODSIM_TESTS_MODELS_FD_H
#define PODSIM_TESTS_MODELS_FD_H

#include <math.h>
#include <string.h>

#include "models/model.h"
#include "sim/rng.h"

/* FD_IMAGES examples of a [5, 5, 2] image, values spread over [-1, 1]. */
enum { FD_IMAGES = 4, FD_IMAGE_SIZE = 5 * 5 * 2 };
static float fd_images[FD_IMAGES * FD_IMAGE_SIZE];
static const int32_t fd_labels[FD_IMAGES] = {0, 2, 1, 1};

static inline md_batch fd_image_batch(void) {
  for (int i = 0; i < FD_IMAGES * FD_IMAGE_SIZE; i++) fd_images[i] = (float)sin(0.7 * i + 0.3);
  return (md_batch){FD_IMAGES, fd_images, NULL, fd_labels, NULL};
}

static inline md_shape fd_hwc(int h, int w, int c) { return (md_shape){.rank = 3, .dim = {h, w, c}}; }

/* A model on one example shape in, logits out (a failure names md_model_new's reason). */
static inline md_model *fd_model(const md_layer_spec *layers, int nlayers, md_shape in) {
  md_model_spec spec = {.input_shape = in, .nlayers = nlayers, .layers = layers, .from_logits = 1};
  md_error err = {0};
  md_model *m = md_model_new(&spec, &err);
  if (m == NULL) fail_msg("md_model_new: %s", err.msg);
  return m;
}

/* A train step on batch b (its x and labels left out without numerics) counts the same FLOPs and
** bytes with numerics off as on, for the model spec gives (dropout drawing from a seeded stream). */
static inline void fd_assert_spec_costs_mode_independent(md_model_spec spec, md_batch b) {
  md_cost cost[2];
  memset(cost, 0, sizeof cost);
  for (int shapes_only = 0; shapes_only <= 1; shapes_only++) {
    spec.shapes_only = shapes_only;
    md_error err = {0};
    md_model *m = md_model_new(&spec, &err);
    assert_non_null(m);
    gsl_rng *init = sim_rng_stream(3, "init"), *drop = sim_rng_stream(3, "dropout");
    md_model_init_default(m, init);
    md_workspace *w = md_workspace_new(m);
    md_workspace_set_rng(w, drop);
    md_grads *g = md_grads_new(m);
    md_batch run = b;
    if (shapes_only) run.x = NULL, run.labels = NULL;
    double loss;
    md_model_train_step(m, w, &run, 1.0f, g, &loss, &cost[shapes_only]);
    md_grads_free(g);
    md_workspace_free(w);
    gsl_rng_free(init);
    gsl_rng_free(drop);
    md_model_free(m);
  }
  assert_true(cost[0].flops > 0);
  assert_true(cost[0].flops == cost[1].flops);
  assert_true(cost[0].bytes_moved == cost[1].bytes_moved);
  assert_true(cost[0].bytes_resident == cost[1].bytes_resident);
}

/* The same for the [5, 5, 2] model of layers on fd_image_batch. */
static inline void fd_assert_costs_mode_independent(const md_layer_spec *layers, int nlayers) {
  md_model_spec spec = {.input_shape = fd_hwc(5, 5, 2), .nlayers = nlayers, .layers = layers, .from_logits = 1};
  fd_assert_spec_costs_mode_independent(spec, fd_image_batch());
}

static void assert_close(double got, double want, double tol) {
  if (fabs(got - want) > tol) fail_msg("got %.9g, want %.9g (tol %g)", got, want, tol);
}

/* The loss L is the evaluation loss (md_model_loss) when dropout_seed is 0; otherwise the train
** step's, its dropout stream re-seeded from dropout_seed before every step so each evaluation
** drops the same elements (L is then a smooth function of the parameters). */
static double fd_loss(md_model *m, md_workspace *w, const md_batch *b, uint64_t dropout_seed,
                      md_grads *g, float scale) {
  if (dropout_seed == 0) return md_model_loss(m, w, b, NULL);
  gsl_rng *rng = sim_rng_stream(dropout_seed, "dropout");
  md_workspace_set_rng(w, rng);
  double loss;
  md_model_train_step(m, w, b, scale, g, &loss, NULL);
  md_workspace_set_rng(w, NULL);
  gsl_rng_free(rng);
  return loss;
}

static void fd_check(md_model *m, const md_batch *b, uint64_t seed, uint64_t dropout_seed) {
  gsl_rng *rng = sim_rng_stream(seed, "init");
  md_model_init_default(m, rng);
  gsl_rng_free(rng);
  /* Non-zero biases so their gradients are exercised away from the initial point too. */
  for (int i = 0; i < md_model_num_vars(m); i++) {
    md_var *v = md_model_var(m, i);
    if (v->rank == 1)
      for (size_t j = 0; j < v->size; j++) v->data[j] += 0.1f * (float)((int)j % 3 - 1);
  }
  const float scale = 0.5f, h = 3e-3f;
  md_workspace *w = md_workspace_new(m);
  md_grads *g = md_grads_new(m), *scratch = md_grads_new(m);
  double loss;
  if (dropout_seed == 0) md_model_train_step(m, w, b, scale, g, &loss, NULL);
  else loss = fd_loss(m, w, b, dropout_seed, g, scale);
  double worst = 0;
  for (int i = 0; i < md_model_num_vars(m); i++) {
    md_var *v = md_model_var(m, i);
    for (size_t j = 0; j < v->size; j++) {
      float keep = v->data[j], up = keep + h, down = keep - h;
      v->data[j] = up;
      double lu = fd_loss(m, w, b, dropout_seed, scratch, scale);
      v->data[j] = down;
      double ld = fd_loss(m, w, b, dropout_seed, scratch, scale);
      v->data[j] = keep;
      double fd = scale * (lu - ld) / ((double)up - (double)down);
      double got = g->g[i][j], err = fabs(got - fd);
      double tol = 1e-2 * fmax(fabs(got), fabs(fd)) + 1e-4;
      if (err > tol) fail_msg("%s[%zu]: grad %.7g, finite difference %.7g", v->name, j, got, fd);
      worst = fmax(worst, err / fmax(fmax(fabs(got), fabs(fd)), 1e-2));
    }
  }
  assert_close(fd_loss(m, w, b, dropout_seed, scratch, scale), loss, 1e-12);
  print_message("  worst relative gradient error %.2g\n", worst);
  md_grads_free(scratch);
  md_grads_free(g);
  md_workspace_free(w);
}

#endif
