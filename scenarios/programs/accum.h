/*
** accum.h: gradient accumulation, Keras 3's optimizer gradient_accumulation_steps (accum_).
**
** With training.gradient_accumulation_steps N a replica runs its share of a step's global batch
** as N micro-batches, one forward and backward pass each (charged one after another), sums their
** gradients in the all-reduce buffer, and the step all-reduces and applies once. Each pass's loss
** carries the step's whole reduction (1 / global_batch under loss_reduction global_batch), so the
** sum is the gradient of the whole batch: Keras's mean of N micro-steps' mean gradients
** (base_optimizer.py: (g + accumulated) / N at every Nth micro-step) when the micro-batches are
** alike, which dataset.global_batch % N == 0 makes them. A step of podsim is Keras's N
** micro-steps (fit's batch_size is global_batch / N, its steps N times training.steps); the
** optimizer's schedule counts micro-steps as Keras's does (md_optimizer_learning_rate).
** A device keeps one micro-batch's activations and, besides its gradients, the accumulator (the
** all-reduce buffer, or one more copy on a single replica). XLA's loop over micro-batches keeps
** the step one program, so a run with accumulation is not fast-forwarded (a step's state has
** a micro-batch index no snapshot shows).
*/
#ifndef PODSIM_ACCUM_H
#define PODSIM_ACCUM_H

#include "models/dataset.h"
#include "models/model.h"
#include "scenarios/config/scenario.h"

/* Micro-batches per step: training.gradient_accumulation_steps, 1 without. */
int      accum_steps(const scenario *s);
/* The examples of micro-batch k of `micro` over a replica's n: rows [k n / micro, (k+1) n / micro). */
int      accum_count(int n, int k, int micro);
/* The most examples a micro-batch of a replica's `slice` holds (its activations' batch). */
int      accum_slice(const scenario *s, int slice);
/* Micro-batch k of `micro` of b, pointing into b's rows of data's layout. */
md_batch accum_micro_batch(const md_batch *b, const md_dataset *data, int k, int micro);
/* Adds m's gradients g, back to back in variable order, onto flat (the accumulator). */
void     accum_add(float *flat, const md_grads *g, const md_model *m);

#endif
