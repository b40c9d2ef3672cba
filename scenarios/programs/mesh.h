/*
** mesh.h: a device mesh's collectives at run time (mesh_), what the sync program (train.c) runs
** when strategy.distribution names a sharding recipe other than data parallelism
** (docs/strategies.md, "Device meshes and sharding recipes").
**
** The strategy's replicas are the mesh's devices, in their order: replica r sits at data index
** r / model and model index r % model, so a model group is `model` consecutive replicas (one
** GPU VM's NVLink domain, or neighbouring chips of a TPU torus) and a data group strides over
** them (across VMs' NICs, or further along the torus). Each line of the mesh (the replicas that
** differ along one axis) is a sub-group of the strategy's collective group, and runs the
** compiled program's collectives over that axis (cg_transfer) one after another, each started
** from the engine once every replica of the line has issued it, on shapes alone. A replica
** issues a collective when its kernels reach the collective's place and waits for it before
** the kernel that reads it: XLA's asynchronous collectives beside the compute.
**
** Numerics: the sharding changes where the math runs, not what it is (compile.h invariant 2);
** each replica computes its own examples whole, and at the step's end the gradients are summed
** over every replica at once, in the strategy's all-reduce order (ds_all_reduce_values), as the
** data-parallel run sums them: the values are the one-device run's within float reassociation.
** That end is a barrier of every replica, as the step's loss (a mean over the global batch,
** an all-reduce over the whole mesh) makes it, with numerics on or off alike.
*/
#ifndef PODSIM_MESH_H
#define PODSIM_MESH_H

#include <stddef.h>

#include "compile/compile.h"
#include "models/model.h"
#include "scenarios/config/scenario.h"
#include "sim/sim.h"
#include "strategies/core/strategy.h"

typedef struct mesh_run mesh_run;

/* The work of kernels [from, to) of k on the calling replica (train.c's kernel_work). */
typedef double (*mesh_work_fn)(void *ctx, const cg_kernel *k, size_t from, size_t to);

/* The mesh of the strategy's nreplicas (>= 2) replicas, `model` along the model axis (it divides
** nreplicas); bufs (nreplicas gradient buffers of nparams floats) or NULL with numerics off;
** tracks (each replica's trace track, for a span per collective) or NULL. */
mesh_run *mesh_new(sim_engine *e, ds_strategy *s, int nreplicas, int model, float *const *bufs, size_t nparams,
                   const int *tracks);
/* The same on a mesh {data, fsdp, model} (hybrid_fsdp_sp): fsdp x model divides nreplicas; on
** several TPU slices, one slice a data index, fsdp x model laid on each slice's torus. */
mesh_run *mesh_new_axes(sim_engine *e, ds_strategy *s, int nreplicas, int fsdp, int model, float *const *bufs,
                        size_t nparams, const int *tracks);
void      mesh_free(mesh_run *m);
/* Forgets every line's progress: a new attempt starts its steps again (recovery). */
void      mesh_reset(mesh_run *m);
/* Replica r runs its program's step kernels (apply 0) or update kernels (apply 1) on cpu, each
** through work(ctx, ...), issuing and awaiting the program's collectives of that list at their
** places. SIM_OK, or SIM_FAILED when the replica was stopped. */
int mesh_pass(mesh_run *m, sim_actor *self, int r, const cg_program *p, int apply, sim_cpu *cpu,
              mesh_work_fn work, void *ctx);
/* Replica r's pass over one micro-batch before a step's last (training.gradient_accumulation_steps,
** accum.h): its step kernels with the collectives that move activations or gather weights, as
** each micro-batch's forward and backward needs them; the gradients' reductions over the data
** axis wait for the last micro-batch's mesh_pass, which reduces the accumulated sum once. */
int mesh_micro_pass(mesh_run *m, sim_actor *self, int r, const cg_program *p, sim_cpu *cpu, mesh_work_fn work,
                    void *ctx);
/* One collective at a time, for a program that runs a step's kernels in its own order (pipeline
** stages tensor parallel over the model axis, pipeline.c): replica r issues x on its line over
** x's axis, and gets its place in that line's order; mesh_await waits until the line has run the
** collective at that place. */
long mesh_issue(mesh_run *m, int r, const cg_transfer *x);
int  mesh_await(mesh_run *m, sim_actor *self, int r, int axis, long at);
/* The step's end on replica r: every replica's gradients summed into bufs (when given). */
int mesh_sync(mesh_run *m, sim_actor *self, int r);
/* Whether the scenario's run on nreplicas replicas uses a mesh (a recipe other than data
** parallelism), and the options its step is compiled with. */
int        mesh_active(const scenario *s, int nreplicas);
cg_options mesh_compile_options(const scenario *s, int nreplicas);
/* strategy.distribution against the run: the mesh's devices are the strategy's nreplicas, and
** each layout_map entry fits the variables of m it matches. TR_EXIT_OK, or TR_EXIT_INPUT with
** err naming the file, line and column of the offending entry (train.h). */
int mesh_check(const scenario *s, int nreplicas, const md_model *m, scn_error *err);
/* Simulated time replica r spent waiting for collectives in its last step (its exposed
** communication). */
sim_time mesh_waited(const mesh_run *m, int r);

/* One replica for every replica (mesh_symmetric.c). mesh_congruent: 1 if every line of each axis
** runs each collective p issues over that axis in exactly the time replica 0's line of the axis
** takes, every line over links no other line uses (sim_collective_congruent, each line claiming
** its links in claims under its index); 0 when that is not proven. mesh_solo: from now on a
** line starts its next collective once replica 0 has issued it (its other members, the same,
** issue it at the same picosecond) and the step's end waits for replica 0 alone. */
int  mesh_congruent(mesh_run *m, const cg_program *p, sim_claims *claims);
/* The mesh's lines: the claims' owners 0 .. mesh_lines - 1 are theirs. */
int  mesh_lines(const mesh_run *m);
void mesh_solo(mesh_run *m);

#endif
