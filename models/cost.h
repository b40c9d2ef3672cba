/*
** cost.h: what an op costs, for sim/ to turn into time on a device. models/ knows nothing of
** time or devices: it only counts.
*/
#ifndef PODSIM_COST_H
#define PODSIM_COST_H

typedef struct md_cost {
  double flops;           /* floating-point operations (an FMA counts 2) */
  double bytes_moved;     /* bytes read + written from memory by the op */
  double bytes_resident;  /* bytes the op keeps alive (activations saved for backward) */
} md_cost;

void md_cost_add(md_cost *into, const md_cost *c);

#endif
