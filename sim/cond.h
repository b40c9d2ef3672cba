/*
** cond.h: condition variables for actors (sim_cond_).
**
** An actor that must wait for a state some other code changes (a queue becoming non-empty, a
** count reaching zero) loops `while (!ready) sim_cond_wait(self, c);` and whoever changes that
** state calls sim_cond_notify_all. Waiters resume in the order they began waiting, each through
** an event at the notify's time (sim.h invariant 3), and check their condition again: a notify
** says "look again", not "it is yours", unlike a channel handing over an item.
**
** Notifying is allowed from an actor or from an event callback; it takes no simulated time.
*/
#ifndef PODSIM_COND_H
#define PODSIM_COND_H

#include <stddef.h>

#include "sim/sim.h"

typedef struct sim_cond sim_cond;

/* A condition nobody waits on yet; it may serve actors of any engine. Free it once no actor
** blocked on it will run or be killed again. A killed waiter leaves the waiting list. */
sim_cond *sim_cond_new(void);
void      sim_cond_free(sim_cond *c);
/* Blocks the calling actor until the next sim_cond_notify_all; returns SIM_OK. */
int       sim_cond_wait(sim_actor *self, sim_cond *c);
/* Wakes every actor waiting now, in the order they began waiting. */
void      sim_cond_notify_all(sim_cond *c);
/* Actors waiting now. */
size_t    sim_cond_waiters(const sim_cond *c);

#endif
