/*
** ps_eval.h: the side-car evaluator of parameter-server training (ps_eval_): TF's evaluator task,
** which polls the checkpoint directory, restores the newest checkpoint into its own model and
** evaluates it, beside training and never in its way. ps_train.c drives it through the hooks
** below; docs/strategies.md ("The side-car evaluator") has the timing.
*/
#ifndef PODSIM_PS_EVAL_H
#define PODSIM_PS_EVAL_H

#include "scenarios/programs/trainInt.h"
#include "sim/fault.h"
#include "strategies/ps/ps_strategy.h"

typedef struct ps_eval ps_eval;

/* The evaluator of in->s on the strategy's evaluator task, its actor started now; its model is
** shaped like init and restores the variables vars[0..nvars) (the model's, in order). NULL when
** the scenario has no evaluator: every hook below accepts NULL and does nothing. */
ps_eval *ps_eval_new(const train_input *in, sim_engine *e, ds_strategy *s, int nvars, ds_variable *const *vars,
                     const md_model *init);
void     ps_eval_free(ps_eval *ev);

/* The chief's write of the checkpoint of training step `step` completed now: it is in the
** directory. Its values are copied out of snap (which the chief frees with the next one). */
void ps_eval_saved(ps_eval *ev, long step, const ds_ps_snapshot *snap);
/* A preempt or fail struck the evaluator: what it was doing is lost; back after f->duration. */
void ps_eval_down(ps_eval *ev, const sim_fault *f);
/* After training finished: runs the simulation on until the evaluator has evaluated the final
** checkpoint, or cannot (down for good). */
void ps_eval_drain(ps_eval *ev);

/* summary.json's evaluator figures and its device (appended to sum->devices). */
void ps_eval_summarise(const ps_eval *ev, run_summary *sum);
/* Adds evaluations.csv to the run's outputs (and so to its run_hash). */
void ps_eval_attach_outputs(const ps_eval *ev, train_outputs *o);

/* Fast-forward (ps_train.c): the evaluator's state as snapshot words (nothing without one):
** its checkpoints seen and taken, its process and phase, its phase's start relative to now. Its
** polls are events, the engine's to compare. */
void ps_eval_snapshot(const ps_eval *ev, sim_snapshot *snap);

#endif
