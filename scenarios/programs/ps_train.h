/*
** ps_train.h: the training program of a parameter_server scenario (ps_train_): TF's async
** training with ParameterServerStrategy and ClusterCoordinator on the scenario's CPU VMs, with
** worker, ps and coordinator failures. train_run hands such scenarios here.
*/
#ifndef PODSIM_PS_TRAIN_H
#define PODSIM_PS_TRAIN_H

#include "scenarios/programs/train.h"

/* As train_run_cli: TR_EXIT_OK, TR_EXIT_JOB_FAILED (outputs written, summary->error set) or
** TR_EXIT_INPUT (err filled, nothing written). */
int ps_train_run(const scenario *s, const char *out_dir, int progress, run_summary *sum, scn_error *err);

#endif
