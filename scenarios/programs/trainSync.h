/*
** trainSync.h: what the sync program (train.c) shares with its memory model (memory.c): the
** trainer and its replicas, and the calls memory.c makes to build a strategy and that train.c
** makes to reserve each replica's memory (train__). Only those two files include it, and
** mesh_symmetric.c, whose admission reads the trainer.
*/
#ifndef PODSIM_TRAIN_SYNC_H
#define PODSIM_TRAIN_SYNC_H

#include "compile/compile.h"
#include "models/model.h"
#include "models/optimizer.h"
#include "scenarios/programs/callbacks.h"
#include "scenarios/programs/embed.h"
#include "scenarios/programs/faults.h"
#include "scenarios/programs/input_plan.h"
#include "scenarios/programs/mesh.h"
#include "scenarios/programs/overlap.h"
#include "scenarios/programs/pipeline.h"
#include "scenarios/programs/recovery.h"
#include "scenarios/programs/slice.h"
#include "scenarios/programs/train.h"
#include "scenarios/programs/trainInt.h"
#include "scenarios/report/report.h"
#include "strategies/input/pipeline.h"
#include "strategies/tpu/tpu_v1.h"

typedef struct trainer trainer;

/* The clock at each boundary of one replica's step, in order (the step ends at the current time). */
typedef struct step_marks {
  sim_time start;         /* the step began: the previous one ended */
  sim_time launched;      /* the host launched the device program (the start, within a loop) */
  sim_time compiled;      /* its program was compiled (the start, after the first step) */
  sim_time fed;           /* its batch was on the device */
  sim_time computed;      /* forward and backward were done */
  sim_time reduced;       /* the gradient all-reduce was done */
  sim_time split_comm;    /* of computed..reduced, the split variables' collectives (spmd.c) */
  sim_time sync_comm;     /* of fed..computed, synchronized batch normalisations' all-reduces */
  sim_time updated;       /* the optimizer was done (then, ending a tpu_v1 loop, its outputs
                          ** travel back to the host before the step ends) */
  float learning_rate;    /* the rate the update used, or would have (LossScaleOptimizer's skip) */
} step_marks;

/* Where a replica's step is, for fast-forward (train.c, invariant 4): waiting for its launch,
** its batch, or the exec of its forward and backward or of its optimizer (state the snapshot
** sees: the exec is the engine's), or anywhere else (WORKING: a collective may hold state). */
typedef enum { REP_LAUNCH, REP_INPUT, REP_COMPUTE, REP_APPLY, REP_WORKING } replica_phase;

typedef struct replica {
  trainer *t;             /* the run this replica belongs to */
  int index;              /* replica id in sync group */
  md_model *model;        /* this replica's mirrored copy of the variables */
  md_optimizer *opt;      /* its optimizer slots (identical on every replica) */
  md_workspace *ws;       /* activations kept for backward */
  gsl_rng *dropout;       /* its dropout masks' stream, restarted each step; NULL without dropout */
  md_grads *grads;        /* per-variable gradients */
  float *flat;            /* all gradients back to back: the all-reduce buffer */
  float *x;               /* batch features (float input) */
  int32_t *ids;           /* batch ids (id input) */
  int32_t *labels;        /* batch labels */
  float *targets;         /* batch targets (losses other than sparse_categorical_crossentropy) */
  double loss_sum[2];     /* per-example loss sum of this replica's slice, by step parity */
  float *metric_state;    /* training.metrics' state variables on this replica's slices, each
                          ** metric's md_metric_state_size floats back to back (TF's SyncOnRead
                          ** SUM variables: each replica's own); NULL with numerics off */
  float *metric_kept[2];  /* the state after the last step of each parity, for replica 0's row (a
                          ** replica may be one step ahead) */
  long metric_epoch;      /* the epoch the state counts (Keras resets it at each epoch's start) */
  int metric_attempt;     /* the job's restarts when the state started (a restart resets it) */
  float *on_read[2];      /* its non-trainable variables back to back after the forward of the
                          ** last step of each parity (a checkpoint reads their mean); NULL with
                          ** numerics off or none in the model */
  ls_state loss_scale;    /* mixed_float16: its LossScaleOptimizer's dynamic scale (mirrored: every
                          ** replica takes the same decisions from the same reduced gradients) */
  const cg_program *program; /* the compiled step of this step's batch size (compile/) */
  sim_time sync_ps;       /* this step's synchronized batch normalisation all-reduces (train.c) */
  int stopped;            /* one of them returned the actor's stop (a fault killed it) */
  long step;              /* the step it is at (its loop's counter, here so fast-forward moves it) */
  step_marks marks;       /* that step's clock so far (here for the same reason) */
  replica_phase phase;    /* where in the step */
  int pack_at;            /* with packs: the pack boundary its pass is charging up to (fast-forward
                          ** sees it: two snapshots in the same exec of different passes differ) */
} replica;

struct trainer {
  train_input in;         /* scenario, data and step count (trainInt.h) */
  sim_engine *engine;     /* the simulation */
  ds_strategy *strategy;  /* replicas, devices, all-reduce */
  ds_pipeline *input;        /* the input pipeline's actors and prefetch buffers */
  slice_run *tpu;         /* the TPU slice and TPU system behind the strategy, NULL off TPUs */
  sim_time round_trip_ps; /* host -> device -> host per program launch (TF2 TPU), 0 elsewhere */
  struct ds_tpu_v1 *v1;   /* tpu_v1: TF1's TPUStrategy, whose loop launch and fetch the steps pay */
  int launch_every;       /* steps per program launch: steps_per_run on tpu_v1, else steps_per_execution */
  int scaled;             /* mixed_float16: the optimizer is a LossScaleOptimizer (lossscale.h) */
  int cores;              /* logical devices per replica */
  int spmd;               /* SPMD partitioning: every op split over the cores */
  int split_devices;      /* devices each split variable divides over (1: none split; spmd.c) */
  md_tensor_parallel split; /* what a device holds of the variables and the collectives splitting
                          ** adds, per example (spmd.c) */
  sim_time compile_ps;    /* XLA compile time, waited before the first step (0: no XLA) */
  cg_cache *programs;     /* the step compiled per batch size: what the replicas' cpus run */
  ovl_run *ovl;           /* the gradient all-reduce in packs overlapped with the backward pass
                          ** (strategy.communication.bytes_per_pack; overlap.h), NULL: one
                          ** all-reduce after it */
  mesh_run *mesh;         /* strategy.distribution's recipe other than data parallelism: the mesh's
                          ** collectives at their compiled places (mesh.h); NULL: the strategy's
                          ** gradient all-reduce */
  emb_run *emb;           /* the embedding tables' rows moved apart from the all-reduce (embed.h),
                          ** NULL: every variable all-reduced dense */
  pipe_run *pipe;         /* strategy.distribution's pipeline stages (pipeline.h); NULL: none */
  pipe_layout pipe_layout;/* the stages memory.c sizes the devices by (remade per batch size) */
  int npacks;             /* with ovl: its packs */
  int *pack_layer;        /* with ovl: per pack, the layer whose backward completes it */
  int nreplicas;          /* num_replicas_in_sync */
  replica *replicas;      /* nreplicas entries */
  sim_actor **actors;     /* the running attempt's replica actors */
  long first_step;        /* the step the running attempt started at (a checkpoint's) */
  sim_time restore_ps;    /* what its replicas wait first: reading the checkpoint */
  faults *faults;         /* the scenario's faults, NULL without */
  rec_job *rec;           /* checkpoints and restarts */
  size_t nparams;         /* floats in the flattened gradient */
  int cross_replica;      /* the model's train step reduces across replicas (md_model_cross_replica) */
  size_t on_read_floats;  /* floats of the non-trainable variables, back to back */
  md_metric_kind metric_kinds[MD_METRIC_KIND_COUNT]; /* training.metrics resolved for the model */
  size_t metric_floats;   /* floats of every compiled metric's state, back to back */
  struct val_run *val;    /* fit's validation (validate.h), NULL without */
  train_rows rows;        /* metrics.csv's rows, one per completed step (redone ones included), and
                          ** the progress bar */
  int horizon_hit;        /* stopped: simulated time passed SIM_TIME_HORIZON */
  int *track;             /* trace track of each replica */
  inp_plan *plan;         /* which rows each replica reads at each step */
  int traced;             /* the trace is written or drawn (outputs.trace, a chart that reads it) */
  int kernel_track;       /* with outputs.ops, the trace track replica 0's first pass's kernels go
                          ** on; -1: none, or drawn already */
  int ff;                 /* fast-forward may skip steps (train.c, "fast-forward") */
  sim_snapshot *snap[2];  /* the last two quiet points' snapshots, [1] the latest */
  long snap_step[2];      /* replica 0's step at each (-1: none) */
  long snap_rows[2];      /* rows recorded by then */
  long skipped;           /* steps fast-forward skipped */
  int symmetric;          /* replica 0 alone is simulated, for every replica (mesh_symmetric.h) */
  long per_epoch;         /* steps per epoch (the run's steps with training.steps: one epoch) */
  cb_fit *cb;             /* training.callbacks (callbacks.h), NULL without */
  long cb_step;           /* the last step handed to it by the running attempt (-1: none) */
  md_model *best;         /* EarlyStopping's best weights (restore_best_weights), NULL without */
  cg_work_memo work_memo; /* the replicas' kernel work, asked once per roofline (kernel_work) */
  long applied_step;      /* numerics on: the last step whose update the shared variables got
                          ** (apply_once; -1 none), in attempt applied_attempt */
  int applied_attempt;    /* the restarts when it was applied: a restart redoes steps */
  float step_rate;        /* the learning rate of the last update (metrics' learning_rate) */
  int own_models;         /* numerics on with TPUEmbedding: each replica its model and optimizer
                          ** (the chips' tables differ), else one storage of the mirrored ones */
};

/* The scenario's strategy: on its TPU slice, over the first worker's listed devices, or over
** the cluster's workers (train.c). */
void train__build_strategy(trainer *t);
/* t->emb for model m's tables where the step moves them apart from the all-reduce (embed.h),
** each replica reading at most max_slice examples a step; else it stays NULL (train.c). */
void train__make_embed(trainer *t, const md_model *m, int max_slice);
/* Kernels [from, to) of the compiled step as work on the replica's device (train.c). */
double train__kernel_work(trainer *t, const replica *rep, const cg_kernel *k, size_t from, size_t to);
/* The epoch (0-based) of `step`: 0 without training.epochs (train.c). */
long train__epoch_of(const trainer *t, long step);
/* Frees everything t holds, the strategy and engine last (train.c). */
void train__free(trainer *t);
/* Reserves what every replica holds before its first step on each of its devices, for a
** per-replica batch of `slice` examples: 0, or -1 with sum's error (when sum is not NULL) the
** ResourceExhaustedError TF raises, nothing left reserved (memory.c). */
int  train__reserve_memory(trainer *t, int slice, run_summary *sum);
/* The scenario's step compiled per batch size (t->programs): its kernels and its memory. */
cg_cache *train__programs_new(const trainer *t);
/* Variables a layer adds to the model, in the model's order: a kernel (or embeddings), and a
** bias for a dense layer that uses one (memory.c). */
/* Gives back the first `taken` reservations of train__reserve_memory's order (memory.c). */
void train__release_memory(trainer *t, int slice, long taken);
/* Splits m's variables over each replica's logical devices as the scenario asks (none: every
** device holds them whole) into t->split (spmd.c). */
void train__split_plan(trainer *t, const md_model *m);
/* The time the split variables' collectives add to a step of a per-replica batch of `examples`
** (spmd.c); 0 when nothing is split. */
sim_time train__split_comm_ps(const trainer *t, int examples);

#endif
