/*
** coro.h: the one context-switch interface the engine uses for actors (sim_coro_).
**
** A coroutine runs fn(arg) on its own stack. The engine resumes it; it runs until it yields or
** fn returns, and control comes back to the resumer. Keeping the mechanism behind these five
** calls lets a faster backend (hand-written register switch) replace ucontext without touching
** the engine.
*/
#ifndef PODSIM_CORO_H
#define PODSIM_CORO_H

#include <stddef.h>

typedef struct sim_coro sim_coro;
typedef void (*sim_coro_fn)(void *arg);

/* A suspended coroutine that will start fn(arg) at its first resume; NULL if out of memory. */
sim_coro *sim_coro_new(size_t stack_bytes, sim_coro_fn fn, void *arg);
/* Frees the stack; the coroutine must not be running (it may be suspended mid-function). */
void      sim_coro_free(sim_coro *c);
/* From outside any coroutine: runs c until it yields or its function returns. */
void      sim_coro_resume(sim_coro *c);
/* From inside c: returns control to the code that resumed it. */
void      sim_coro_yield(sim_coro *c);
/* 1 once the coroutine's function has returned. */
int       sim_coro_finished(const sim_coro *c);

#endif
