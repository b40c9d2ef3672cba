/*
** overlap.h: the gradient all-reduce in packs overlapped with the backward pass (ovl_), as
** CollectiveAllReduce runs it when CommunicationOptions.bytes_per_pack is set
** (strategy.communication, docs/strategies.md "Overlapping the gradient all-reduce").
**
** Packing is TF's cross_device_utils.group_by_size over the gradients in reverse variable order
** (cross_device_ops.py reverses them "so that there's better chance that values follows the
** order in which they are calculated"): a pack takes variables until its bytes exceed
** bytes_per_pack, the one that crosses it included; 0 makes one pack of everything. A pack's
** all-reduce starts once every replica's backward has produced its gradients and the pack before
** it is reduced (TF 2 orders a group's collective launches), and runs while the backward goes on.
** On a TPU XLA does the same with its own packing: the combiner merges the gradients' all-reduces
** in the backward's order up to a threshold, and the latency-hiding scheduler runs each combined
** all-reduce asynchronously beside the rest of the backward (strategy.xla_combine_threshold).
**
** Numerics: packs are timed on shapes alone; after the last, the whole buffer's values come from
** the strategy's all-reduce computed at once (ds_all_reduce_values), so each element is summed in
** the order the unpacked all-reduce sums it and the weights are the same bits with or without
** packs. (TF's packs would move chunk boundaries and so the last bits of a ring's sums on three
** replicas or more; podsim keeps packing a question of time.)
*/
#ifndef PODSIM_OVERLAP_H
#define PODSIM_OVERLAP_H

#include <stddef.h>

#include "sim/sim.h"
#include "strategies/core/strategy.h"

/* One pack: consecutive variables, so one range of the flat gradient buffer (variables back to
** back in model order). */
typedef struct ovl_pack {
  size_t off;             /* its first float in the flat buffer */
  size_t count;           /* its floats */
  int first_var;          /* its lowest variable index: the last whose gradient the backward makes */
  int last_var;           /* its highest */
} ovl_pack;

/* How consecutive gradients join a pack. */
typedef enum {
  OVL_GROUP_BY_SIZE,      /* TF's group_by_size (cross_device_utils.py): a pack closes once its
                          ** bytes exceed the size, the gradient that crosses it included; size 0:
                          ** one pack of everything */
  OVL_XLA_COMBINER,       /* XLA's AllReduceCombiner (collective_combiner_utils.h): a gradient
                          ** joins the open pack while their bytes stay within the threshold, else
                          ** starts the next (one bigger than the threshold stays alone) */
} ovl_rule;

/* Groups variables of floats[0..nvars) floats (4 bytes each) into packs by `rule` with `bytes`,
** reduce order first (the last variables first: the backward's order): out needs nvars entries.
** Returns the packs' count (0 when nvars is 0). */
int ovl_group(const size_t *floats, int nvars, double bytes, ovl_rule rule, ovl_pack *out);

typedef struct ovl_run ovl_run;

/* The packs' all-reduces over s's replicas, one step after another. bufs[r] is replica r's flat
** buffer of nparams floats (NULL: numerics off). tracks[r] is replica r's trace track for the
** packs' spans (NULL: untraced). Everything is copied but s and the buffers. */
ovl_run *ovl_new(sim_engine *e, ds_strategy *s, const ovl_pack *packs, int npacks, int nreplicas,
                 float *const *bufs, size_t nparams, const int *tracks);
void     ovl_free(ovl_run *o);
/* One more replica's backward has produced the gradients of pack j (each in pack order). */
void     ovl_ready(ovl_run *o, int pack);
/* Blocks replica r's actor until its step's last pack is reduced; the buffers then hold the sums.
** SIM_OK (a killed actor never returns). */
int      ovl_wait(ovl_run *o, sim_actor *self, int replica);
/* The words of its state a fast-forward snapshot needs (scenarios/programs/train.c, invariant 4):
** which packs each step has ready, the next one and whether it runs, each replica's waits
** relative to the completed steps. Absolute times (the spans) are left out: a skip lands in the
** step the snapshot was in, where each pack done before it ended before the backward did. */
void     ovl_snapshot(const ovl_run *o, sim_snapshot *snap);
/* Of the last step whose packs are all reduced, the packs' all-reduce time before `until` (each
** pack's span cut at it, summed): with until the end of a replica's backward, what it hid. */
sim_time ovl_hidden(const ovl_run *o, sim_time until);

#endif
