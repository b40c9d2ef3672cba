/*
** ps_ff.h: the period finder of a parameter-server fast-forward (psff_): the last snapshots of
** a run, each with the counters that grow as it runs, and the nearest earlier one the newest
** repeats (scenarios/programs/ps_train.c, "Fast-forward", holds the proof and the skip).
*/
#ifndef PODSIM_PS_FF_H
#define PODSIM_PS_FF_H

#include <stdint.h>

#include "sim/sim.h"

typedef struct psff psff;

/* Keeps the last `depth` snapshots, each with `ncounters` counters. */
psff *psff_new(int depth, int ncounters);
void  psff_free(psff *f);
/* Forgets every snapshot: their absolute times are behind (after a skip). */
void  psff_reset(psff *f);
/* A new newest snapshot, the oldest's room reused: the caller fills it (sim_snapshot_take and
** its words) and its counters (*counters, ncounters of them). */
sim_snapshot *psff_push(psff *f, int64_t **counters);
/* How many periods may be skipped from the newest snapshot b when the period from an earlier one
** moved the counters by delta (b's minus its): the program's bound, 0 for none. */
typedef long (*psff_bound_fn)(void *ctx, const int64_t *delta);
/* The nearest earlier snapshot a whose period the newest repeats, at least one period skippable
** (bound, then sim_snapshot_periods): k > 0 with *a and *delta (b's counters minus a's, valid
** until the next push), else 0. */
long  psff_find(psff *f, psff_bound_fn bound, void *ctx, const sim_snapshot **a, const int64_t **delta);
/* The newest snapshot. */
const sim_snapshot *psff_newest(const psff *f);

#endif
