/*
** embed.h: the embedding tables of a sync step (emb_): what the sync program (train.c) moves
** for the tables an id-reading layer looks up, in place of all-reducing them dense.
**
** The ways TensorFlow runs them (docs/strategies.md, "Embeddings under sync strategies"). Without
** TPUEmbedding a table's gradient is a tf.IndexedSlices (values, and an int64 index a row) and
** the cross-device ops reduce it as such, never as the [vocab, dim] table, so the step's traffic
** grows with the batch, not the vocabulary; every replica applies the result to its copy:
**   gather_broadcast  MirroredStrategy (AllReduceCrossDeviceOps._do_batch_all_reduce_sparse:
**           "Efficient allreduce is not supported for IndexedSlices"): ReductionToOneDevice,
**           every replica's slices gathered onto one device, their concatenation broadcast
**           back: an all-gather's traffic into the root, then a broadcast of all of it;
**   all_gather  MultiWorkerMirroredStrategy (CollectiveAllReduce): the slices all-gathered.
** TPUStrategy without TPUEmbedding has none: inside the XLA program cross_replica_sum makes
** the IndexedSlices dense, and the table is all-reduced whole (train.c keeps that path).
**   tpu     (model.tpu_embedding) TPUEmbedding: table rows sharded over the chips (row r on chip
**           r mod N). Forward: the batch's ids all-to-all to their owners (int32), the owners
**           gather the rows from HBM, the vectors all-to-all back; backward: the vectors'
**           gradients all-to-all to the owners, which apply the optimizer to the touched rows
**           (weights and slots read and written in HBM). No dense all-reduce of a table.
** The dense variables' gradients are all-reduced as before; train.c flattens only them.
**
** Numerics: the tables' summed gradient is what both ways give every owner of a row: each
** replica's slices, taken in replica order and within a replica in batch order, added from
** zero into the row (the one-device run's unsorted_segment_sum over the global batch, which
** is the replicas' slices back to back). The collectives run on shapes (their time); the
** values come from a board each replica posts its ids and slices to, by step parity (replicas
** are never more than one step apart: train.c invariant 2), read once the exchange's
** collective has joined every replica, so the board holds every replica's step.
*/
#ifndef PODSIM_EMBED_H
#define PODSIM_EMBED_H

#include "models/model.h"
#include "models/optimizer.h"
#include "strategies/core/strategy.h"

typedef struct emb_run emb_run;

typedef enum { EMB_GATHER_BROADCAST, EMB_ALL_GATHER, EMB_TPU } emb_mode;

/* The tables' exchange for model m's replicas under strategy s (nreplicas of them, each
** reading at most max_slice examples a step) the way `mode` says; opt the tables' optimizer
** (its slots are updated with each row); numerics: the board holds values; max_tables: the
** largest that many tables by rows are emb_'s (ties in variable order), the others the dense
** path's, 0 all of them (model.tpu_embedding.tables). NULL when m has no table or there is one
** replica (then the dense path is the same thing). */
emb_run *emb_new(ds_strategy *s, const md_model *m, const md_optimizer_spec *opt, emb_mode mode, int numerics,
                 int nreplicas, int max_slice, int max_tables);
void     emb_free(emb_run *e);
/* 1 when variable v is a table whose gradient emb_ moves (train.c leaves it out of the
** all-reduce buffer). */
int      emb_is_table(const emb_run *e, int v);
/* Floats of the variables that are no table: the dense all-reduce's count. */
size_t   emb_dense_floats(const emb_run *e);
/* TPUEmbedding's forward, before the replica's dense pass: the ids all-to-all, the owners'
** gather, the vectors all-to-all, for a step whose replicas read at most n_max examples. The
** gather way has none (each replica looks up its mirrored copy). SIM_OK or the actor's stop. */
int      emb_forward(emb_run *e, sim_actor *self, int r, int n_max);
/* The tables' backward after the dense pass: replica r posts its ids (from batch b, n examples)
** and slices (grads), runs the exchange (gather: the all-gather; tpu: the gradients'
** all-to-all and the owners' update; the others: the gather and the broadcast, or the all-gather), then, with numerics, writes every table's summed
** gradient into grads' dense g (the optimizer then applies it as the one-device run does;
** TPUEmbedding applies the tables' own optimizer to their touched rows here, emb_own_update).
** SIM_OK or the actor's stop. */
int      emb_backward(emb_run *e, sim_actor *self, int r, long step, int n_max, md_model *m,
                      const md_batch *b, md_grads *grads, int64_t iteration);
/* TPUEmbedding: per model variable, 1 for the tables emb_backward itself updated (with
** numerics, on the rows the step touched, by the tables' optimizer at `iteration`, the apply's
** 1-based count): what the model's optimizer must skip (md_optimizer_apply_except). NULL for
** the gather ways, whose tables the model's optimizer trains. */
const unsigned char *emb_own_update(const emb_run *e);
/* Bytes of the tables, of their optimizer slots, and of one step's slices a replica (a chip)
** holds: TPUEmbedding divides tables and slots by the chips (ceil(vocab / N) rows each); the
** gather way holds them whole. */
double   emb_table_bytes(const emb_run *e);
double   emb_held_table_bytes(const emb_run *e);

#endif
