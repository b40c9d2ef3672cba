/* cost.c: adding op costs (md_cost_). */
#include "models/cost.h"

#include <stddef.h>

/* A NULL `into` discards the cost, so callers that do not account can pass NULL throughout. */
void md_cost_add(md_cost *into, const md_cost *c) {
  if (into == NULL) return;
  into->flops += c->flops;
  into->bytes_moved += c->bytes_moved;
  into->bytes_resident += c->bytes_resident;
}
