/*
** mfu.h: tokens per second and model FLOPs utilisation as the PaLM paper defines them (mfu_).
**
** PaLM (Chowdhery et al. 2022, Appendix B): a decoder of N parameters, L attention layers of H
** heads of width Q over sequences of T tokens needs 6N + 12 L H Q T FLOPs per token to train
** (forward and backward of every weight, plus the attention's score and value products; no
** rematerialisation counted, whatever the run recomputes), and MFU is the tokens per second the
** run achieves times that, over the peak FLOP/s of every chip the run occupies. PaLM 540B on
** 6144 v4 chips: 238.3k tokens/s x (6 x 540.35e9 + 12 x 118 x 48 x 256 x 2048) /
** (6144 x 275e12) = 46.2%, the paper's figure.
**
** Only a model that reads token ids (model.input ids, a zoo transformer) has tokens: a model of
** features or images has neither figure, and summary.json leaves both out.
*/
#ifndef PODSIM_MFU_H
#define PODSIM_MFU_H

#include "models/model.h"
#include "scenarios/config/scenario.h"
#include "scenarios/report/outputs.h"

/* The figures one run's throughput turns into tokens/s and MFU. */
typedef struct mfu_model {
  double tokens_per_example;  /* ids per example (the sequence length); 0: the model reads no tokens */
  double flops_per_token;     /* 6N + 12 L H Q T, summed over the attention layers' own H, Q, T */
  double peak_flops;          /* the cluster's: chips (or workers' accelerators, or workers) x peak */
} mfu_model;

/* The scenario's figures for model m (built from s; its parameters are N). */
mfu_model mfu_of(const scenario *s, const md_model *m);
/* mfu_of for the scenario's model built on shapes alone (what a plan point knows after its run);
** no tokens and the peak alone when the model cannot be built. */
mfu_model mfu_of_scenario(const scenario *s);
/* Tokens per second at examples_per_s, and its MFU (0 when the model reads no tokens). */
double mfu_tokens_per_s(const mfu_model *f, double examples_per_s);
double mfu_utilisation(const mfu_model *f, double examples_per_s);
/* The summary's tokens_per_s and mfu at its steady rate: dataset.global_batch per mean step
** (means.step_s, set before; XLA's compile is not a step's), as PaLM measures a run. */
void   mfu_summarise(const scenario *s, const md_model *m, run_summary *sum);

#endif
