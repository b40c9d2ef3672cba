/*
** input_plan.h: which examples each replica of a sync program reads at each step (inp_).
**
** The scenario's dataset keys stand for a tf.data program (docs/scenario-format.md, "How a
** training run is simulated"); the plan writes that program against the strategies library:
** a dataset of row indices (range, or one reader per file of dataset.files), shuffled, repeated
** and batched as the keys say, then distributed by the strategy (experimental_distribute_dataset
** with the auto-shard policy, or distribute_datasets_from_function with an InputContext per
** input worker). Every element order, rebatch and shard is the library's.
**
** A run with numerics off on synthetic data has no rows to read, only batch sizes, and a pod's
** global batch is too large to iterate element by element at every step: there the plan
** computes each replica's count with the same rules in closed form (input_plan.c), and
** tests/scenarios/test_input_plan.c proves both ways agree.
*/
#ifndef PODSIM_INPUT_PLAN_H
#define PODSIM_INPUT_PLAN_H

#include <stdint.h>

#include "scenarios/programs/trainInt.h"
#include "strategies/input/dataset.h"
#include "strategies/core/strategy.h"

typedef struct inp_plan inp_plan;

/* The input program of in->s on strategy s. rows: the run reads example values (numerics on),
** so the plan iterates the library; without rows it counts (files are always iterated, their
** sizes decide the shards). With training.epochs or dataset.repeat false, in->steps becomes
** the steps the distributed dataset yields. NULL with err (dataset.*: the error TensorFlow
** raises) when the strategy refuses the program. */
inp_plan *inp_plan_new(train_input *in, const ds_strategy *s, int rows, scn_error *err);
void      inp_plan_free(inp_plan *p);

/* Replica r's examples at `step` (0: an empty batch, as get_next_as_optional hands out). */
int inp_plan_count(inp_plan *p, long step, int replica);
/* Replica r's row indices into in->data at `step` and their count; NULL without rows. Valid
** until a replica asks for step + 2 (replicas are never more than a step apart). */
const int64_t *inp_plan_rows(inp_plan *p, long step, int replica, int *count);
/* The examples of every replica at `step`. */
long inp_plan_step_examples(inp_plan *p, long step);
/* The last step s <= to such that every step from `from` to s gives every replica the count it
** gets at `from` (fast-forward: train.c); `from` when that cannot be known without iterating.
** Closed-form plans that are not endless are checked step by step, at most
** INP_SAME_COUNTS_BUDGET counts per call. */
#define INP_SAME_COUNTS_BUDGET (1L << 22)
long inp_plan_same_counts(inp_plan *p, long from, long to);
/* The largest count any replica can get (buffers). */
int  inp_plan_max_count(const inp_plan *p);
/* A restart from the checkpoint at `step`: the iterator as the checkpoint saved it, so the run
** goes on with exactly the elements an uninterrupted run reads (replayed from the start). */
void inp_plan_restore(inp_plan *p, long step);
/* Examples a checkpoint of the iterator holds besides its position: the shuffle buffer, which
** tf.train.Checkpoint(iterator=...) saves so a restored run continues bit for bit. */
long inp_plan_checkpoint_examples(const inp_plan *p);

/* One worker's copy of the program, unsharded: what a parameter-server worker iterates, as
** create_per_worker_dataset(dataset_fn) builds it with TF's InputContext(1, 0, 1) for that
** strategy. Elements are int64 vectors of row indices (a batch of dataset.global_batch). */
ds_dataset *inp_worker_dataset(const train_input *in, ds_status *st);
/* Whether every batch inp_worker_dataset gives has global_batch rows, however many are taken:
** it repeats before it batches (no epoch ends a batch short, none ends the data). */
int inp_worker_batches_full(const scenario *s);

#endif
