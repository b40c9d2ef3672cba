/*
** pipeline.h: pipeline parallelism at run time (pipe_), what the sync program (train.c) runs
** when strategy.distribution's mesh has a `pipeline` axis (docs/strategies.md, "Pipeline
** parallelism").
**
** The mesh is {data: D, pipeline: P}: replica r is stage r % P of pipeline r / P, so a pipeline
** is P consecutive replicas (one GPU VM's NVLink domain, neighbouring chips of a torus) and a
** stage's data-parallel group strides over the pipelines. The model's layers are cut into P
** contiguous stages (compile/pipeline.c: balanced by the compiled step's forward and backward
** work, or strategy.distribution.pipeline.layers_per_stage); a pipeline's batch (its P replicas'
** examples) into m microbatches, the step compiled on one microbatch. Each step a stage runs its
** schedule's forward and backward passes (cg_pipeline_order) on its device, each microbatch's
** forward waiting for the activation the stage before sends and its backward for the gradient
** the stage after sends back; both are point-to-point transfers of the cut's bytes over the
** strategy's routes (ICI, NVLink, the NICs), each direction of each cut one after another. A
** stage's last backward issues the all-reduce of its layers' gradients over its data group
** (while other stages still work); the step ends at a barrier of every replica (the loss is a
** mean over the global batch), then each stage applies its layers' update. Nothing is said
** about idle time: the bubble is what the devices' timelines show, measured from them.
**
** A mesh of three axes, {data: D, pipeline: P, model: T}, is Megatron-LM's TP x PP x DP: replica
** r is rank r % T of stage (r / T) % P of pipeline r / (T P), so a stage's T devices are
** neighbours (one GPU VM's NVLink domain, a torus line) and run its layers tensor (or sequence)
** parallel: each pass runs the stage's kernels of the step compiled for that split
** (mesh_compile_options), issuing and awaiting their collectives over the model axis on the
** stage's model line (mesh.h's lines) where the schedule placed them; rank t of a stage sends to
** and receives from rank t of the next, and the stage's data group is its rank's replicas of
** every pipeline.
**
** Numerics: as on a mesh (mesh.h), each replica computes its own examples through the whole
** model and the gradients are summed over every replica at the step's end in the strategy's
** all-reduce order, the data-parallel sum: a pipeline moves where the math runs, so a pipelined
** run's values are the one-device run's within float reassociation.
*/
#ifndef PODSIM_PIPE_RUN_H
#define PODSIM_PIPE_RUN_H

#include "compile/compile.h"
#include "scenarios/config/scenario.h"
#include "scenarios/programs/trainInt.h"
#include "sim/sim.h"
#include "strategies/core/strategy.h"

/* The stages of the scenario's model for a per-replica batch: where each starts, and the
** per-layer costs of the step compiled on one microbatch. */
typedef struct pipe_layout {
  int stages;             /* P, the stages of a pipeline */
  int model;              /* T, the devices of a stage (its model axis; 1: none) */
  int chunks;             /* model chunks a device runs (interleaved: virtual_stages; else 1): the
                          ** model's stages are stages x chunks, stage k + c x stages on device k */
  int schedule;           /* the scenario's pipeline.schedule (cg_pipe_schedule) */
  int micro;              /* microbatches per step, m */
  int micro_examples;     /* examples of one: a pipeline's batch (P x the per-replica one) / m */
  int slice;              /* the per-replica batch it was made for */
  int layers;             /* the model's */
  int *first;             /* per model stage (and [stages x chunks] = layers): its first layer */
  cg_layer_cost *cost;    /* per layer, on one microbatch at replica 0's roofline */
  double *saved;          /* per model stage: what it keeps of a microbatch's forward for its backward */
  cg_pipe_op *order;      /* per device k: its 2 x micro x chunks passes, from [k x 2 micro chunks] */
  cg_pipe_step **steps;   /* with T > 1, per model stage s and direction: [2 s + backward] its pass
                          ** (cg_pipeline_pass_steps); NULL with T = 1 (a pass is one exec) */
  size_t *nsteps;         /* their lengths */
  cg_transfer *transfers; /* with T > 1: the step's collectives the steps name (a copy) */
  size_t ntransfers;      /* how many */
} pipe_layout;

/* Whether the scenario runs a pipeline (a pipeline axis longer than 1). */
int  pipe_active(const scenario *s);
/* The pipeline against the model: at least one layer a stage, layers_per_stage summing to the
** model's layers. TR_EXIT_OK, or TR_EXIT_INPUT with err at the offending key (train.h). */
int  pipe_check(const scenario *s, const md_model *m, scn_error *err);
/* l (zeroed, or made before) for a per-replica batch of `slice`: remade when slice changed. */
void pipe_layout_update(pipe_layout *l, const scenario *s, cg_cache *programs, const sim_roofline *r, int slice);
void pipe_layout_free(pipe_layout *l);
/* What device `stage` of a pipeline holds: its chunks' layers' variables, slots and gradients,
** and the activations its order keeps at its fullest (cg_pipeline_peak_held of what each chunk's
** backward reads of its forward, cg_pipeline_saved) plus the buffers in transit at its chunks'
** cuts (the activation and the gradient it receives or sends at each). */
typedef struct pipe_memory {
  double weights, slots, grads, acts; /* bytes of each */
} pipe_memory;
pipe_memory pipe_stage_memory(const pipe_layout *l, int stage);
/* The stage replica r runs. */
int pipe_stage_of(const pipe_layout *l, int r);

typedef struct pipe_run pipe_run;

/* The pipelines over the strategy's nreplicas (a multiple of the stages), laid out for a
** per-replica batch of `slice` (the run's largest: every step is charged its microbatches, a
** short last batch as a whole one, so the stages never change under a step); bufs (nreplicas
** gradient buffers of nparams floats) or NULL with numerics off; tracks (each replica's trace
** track, for a span per pass) or NULL. */
pipe_run *pipe_new(sim_engine *e, ds_strategy *st, const scenario *s, int nreplicas, cg_cache *programs, int slice,
                   float *const *bufs, size_t nparams, const int *tracks);
void      pipe_free(pipe_run *p);
/* Forgets every channel's progress: a new attempt starts its steps again (recovery). */
void      pipe_reset(pipe_run *p);
/* Replica r's forward and backward passes of a step, in its stage's schedule, then its stage's
** gradient all-reduce. SIM_OK or SIM_FAILED (stopped). */
int       pipe_pass(pipe_run *p, sim_actor *self, int r, sim_cpu *cpu);
/* The step's end on replica r: every replica's gradients summed into bufs (when given). */
int       pipe_sync(pipe_run *p, sim_actor *self, int r);
/* Replica r's update of its stage's variables (apply 0: the loss scale skipped it). */
int       pipe_apply(pipe_run *p, sim_actor *self, int r, sim_cpu *cpu, int apply);
/* Simulated time replica r waited in its last step (for activations, gradients, its stage's
** all-reduce). */
sim_time  pipe_waited(const pipe_run *p, int r);
/* Measured over the steps so far: 1 - the stages' busy time / (stages x each pipeline's span
** from its first forward to its last backward); and the point-to-point bytes a pipeline sent per
** step. */
double    pipe_bubble_fraction(const pipe_run *p);
double    pipe_p2p_bytes_per_step(const pipe_run *p);
/* The layout the run uses. */
const pipe_layout *pipe_run_layout(const pipe_run *p);

#endif
