/*
** train.h: the training program: runs a validated scenario's model on its strategy and cluster,
** and writes the output directory of the contract (docs/scenario-format.md).
*/
#ifndef PODSIM_TRAIN_H
#define PODSIM_TRAIN_H

#include "scenarios/scenario.h"
#include "scenarios/outputs.h"

/* Exit statuses of the contract. */
enum { TR_EXIT_OK = 0, TR_EXIT_EXPECT = 1, TR_EXIT_INPUT = 2, TR_EXIT_JOB_FAILED = 3 };

/* Runs the scenario into out_dir. Returns TR_EXIT_OK, TR_EXIT_JOB_FAILED (outputs written,
** summary->error set) or TR_EXIT_INPUT (err filled, nothing written). */
/* Reads and checks every input file (CSV, init weights) without running: `podsim check`. */
int train_check(const scenario *s, scn_error *err);
int train_run(const scenario *s, const char *out_dir, run_summary *summary, scn_error *err);

#endif
