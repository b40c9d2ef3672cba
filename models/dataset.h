/*
** dataset.h: training data held in memory: from a CSV (libcsv; header row, label column) or
** synthetic (seeded). Rows keep file order; batching is the caller's rule.
*/
#ifndef PODSIM_DATASET_H
#define PODSIM_DATASET_H

#include <stddef.h>
#include <stdint.h>
#include <gsl/gsl_rng.h>
#include "models/error.h"

typedef struct md_dataset {
  size_t rows;            /* examples */
  int width;              /* features per row (float mode) or ids per row (id mode) */
  int is_ids;             /* 1: integer ids in ids[], 0: floats in x[] */
  float *x;               /* rows*width floats (float mode) */
  int32_t *ids;           /* rows*width ids (id mode) */
  int32_t *labels;        /* rows*labels_width labels (NULL when the rows have targets) */
  int labels_width;       /* class labels per row: 1, or one per position of a sequence output */
  int targets_width;      /* 0: one class index per row in labels; > 0: float targets per row */
  float *targets;         /* rows*targets_width floats (the dense losses), else NULL */
  int classes;            /* 1 + the largest label */
  char **columns;         /* width feature column names (CSV header order) */
  int *vocab;             /* shapes-only data (md_dataset_shapes: no row held, x, ids, labels and
                          ** targets NULL): per column, the vocab its ids are drawn from, 0 for a
                          ** float column; NULL when the rows are held */
  uint64_t draw_seed;     /* shapes-only data: the seed its ids are drawn from */
} md_dataset;

/* label_column NULL: the last column. ids_vocab > 0 reads features as integer ids in
** [0, ids_vocab); classes > 0 requires labels in [0, classes) (the model's output width).
** Errors name the CSV's line and the column where the bad field starts. */
md_dataset *md_dataset_load_csv(const char *path, const char *label_column, int ids_vocab,
                                int classes, md_error *err);
/* The float targets of the losses other than sparse_categorical_crossentropy: `width` target
** columns per row, named columns[0..width) in the model's output order, or the last `width`
** columns when columns is NULL; every other column is a feature. Errors as md_dataset_load_csv's. */
md_dataset *md_dataset_load_csv_targets(const char *path, const char *const *columns, int width,
                                        int ids_vocab, md_error *err);
/* Class labels per row: labels_width, 1 when it is not set. */
size_t md_dataset_labels_per_row(const md_dataset *d);
/* Turns d's float targets (targets_width per row, from md_dataset_load_csv_targets) into class
** labels, one per position of a sequence model's output: each must be an integer in
** [0, classes). 0, or -1 with err (the first bad value's row and position). */
int  md_dataset_targets_to_labels(md_dataset *d, int classes, md_error *err);
/* Replaces d's class labels by their one-hot rows of `width` floats (labels must be below it):
** synthetic data for a loss that reads targets. Width 1 (one logit, binary cross-entropy) takes
** classes 0 and 1 as the target itself. */
void md_dataset_one_hot(md_dataset *d, int width);
/* rows x features normal(0,1) draws; label = argmax_c sum_j x_j*M[j][c] with M drawn first. */
md_dataset *md_dataset_synthetic(size_t rows, int features, int classes, gsl_rng *rng);
/* rows rows of width columns, none held (numerics off: a run counts them). A gather still hands
** out a row: its id columns (vocab[c] > 0; vocab holds width entries, copied) an id uniform in
** [0, vocab[c]) that is a function of (seed, row, column) alone, as a synthetic tf.data input
** (tf.random.uniform(maxval=vocab, dtype=int64)) gives them, the ps's shard routing needs them;
** every other value, the labels and targets 0. is_ids: the ids go to the gather's ids buffer. */
md_dataset *md_dataset_shapes(size_t rows, int width, int classes, int targets_width, int is_ids,
                              const int *vocab, uint64_t seed);
void md_dataset_free(md_dataset *d);

/* Appends the rows of `more` (a CSV read the same way) after d's: the several files of one
** dataset. Both must have the same columns in the same order: -1 with err (line 1, the first
** column that differs) otherwise. The classes become the larger of the two. */
int  md_dataset_append(md_dataset *d, const md_dataset *more, md_error *err);

/* Keeps the float feature columns named names[0..n), in that order (several model inputs' columns,
** dataset.inputs): 0, or -1 with err naming a column the data does not have. */
int  md_dataset_select_columns(md_dataset *d, const char (*names)[64], int n, md_error *err);

/* Copies rows start, start+1, ... (wrapping at the end) into caller buffers of n rows (labels:
** n*labels_width; targets: n*targets_width floats, untouched when the rows have none; any buffer
** may be NULL). */
void md_dataset_gather(const md_dataset *d, size_t start, int n, float *x, int32_t *ids,
                       int32_t *labels, float *targets);
/* Copies rows rows[0..n) into caller buffers of n rows. Each row must be held in d's arrays:
** below d->rows, or past it where a validation_split cut d->rows short and left the held-out
** rows behind the training ones (scenarios/programs/validate.c). */
void md_dataset_gather_rows(const md_dataset *d, const int64_t *rows, int n, float *x, int32_t *ids,
                            int32_t *labels, float *targets);

#endif
