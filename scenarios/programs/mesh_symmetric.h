/*
** mesh_symmetric.h: one timeline for a symmetric device mesh (msym_): when every replica of a
** mesh run provably has the same timeline to the picosecond, the sync program (train.c) simulates
** replica 0 alone and reports the run as the full one (mesh_symmetric.c has the design and its
** invariants). Outputs and run_hash are the full run's bytes.
*/
#ifndef PODSIM_MESH_SYMMETRIC_H
#define PODSIM_MESH_SYMMETRIC_H

#include "scenarios/programs/trainSync.h"

/* The environment variable that forces the full run (any value but "0"): the equality tests run
** both ways, and a user can compare. */
#define MSYM_FULL_ENV "PODSIM_MESH_FULL"

/* Called once the trainer is set up (mesh, programs, memory, recovery), before the replicas are
** spawned: if the run is proven symmetric (mesh_symmetric.c, invariant 2), sets t->symmetric and
** turns the mesh to replica 0 alone (mesh_solo) and returns 1; else leaves everything as it was
** and returns 0 (the full run). */
int msym_admit(trainer *t);

#endif
