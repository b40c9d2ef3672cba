/*
** coro.c: ucontext backend of sim/coro.h.
**
** Stacks are mmap'd with a PROT_NONE guard page below them, so an actor overflowing its stack
** faults at once instead of corrupting a neighbour. Under AddressSanitizer every switch is
** announced with __sanitizer_start/finish_switch_fiber, otherwise ASan takes the foreign stack
** for a buffer overflow.
*/
#include "sim/coro.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define CORO_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CORO_ASAN 1
#endif
#endif

#ifdef CORO_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

struct sim_coro {
  ucontext_t self;           /* the coroutine's saved registers while suspended */
  ucontext_t resumer;        /* where sim_coro_yield returns to (the engine's context) */
  void *mapping;             /* mmap'd region: guard page + stack */
  size_t mapping_bytes;      /* length of `mapping` */
  sim_coro_fn fn;            /* body, run once */
  void *arg;                 /* its argument */
  int finished;              /* fn has returned; never resumed again */
#ifdef CORO_ASAN
  void *fake_stack;          /* ASan's fake-stack handle of the side being switched away from */
  const void *resumer_bottom; /* the resumer's stack, reported by ASan on entry */
  size_t resumer_size;       /* its size */
#endif
};

static void *stack_base(const sim_coro *c, size_t *size) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  *size = c->mapping_bytes - page;
  return (char *)c->mapping + page;
}

/* makecontext passes only ints: the pointer travels as two 32-bit halves. */
static void coro_entry(unsigned hi, unsigned lo) {
  sim_coro *c = (sim_coro *)(uintptr_t)(((uint64_t)hi << 32) | (uint64_t)lo);
#ifdef CORO_ASAN
  __sanitizer_finish_switch_fiber(NULL, &c->resumer_bottom, &c->resumer_size);
#endif
  c->fn(c->arg);
  c->finished = 1;
#ifdef CORO_ASAN
  /* NULL fake-stack handle: this fiber's frames are gone for good. */
  __sanitizer_start_switch_fiber(NULL, c->resumer_bottom, c->resumer_size);
#endif
  setcontext(&c->resumer);
}

/* getcontext only fills a template that makecontext then redirects; calling it from a leaf
** keeps the compiler's setjmp-style clobber analysis away from sim_coro_new's locals. */
static void capture_template(ucontext_t *u) { getcontext(u); }

sim_coro *sim_coro_new(size_t stack_bytes, sim_coro_fn fn, void *arg) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t stack = (stack_bytes + page - 1) / page * page;
  sim_coro *c = calloc(1, sizeof *c);
  if (c == NULL) return NULL;
  c->mapping_bytes = stack + page;
  c->mapping = mmap(NULL, c->mapping_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                    -1, 0);
  if (c->mapping == MAP_FAILED || mprotect(c->mapping, page, PROT_NONE) != 0) {
    if (c->mapping != MAP_FAILED) munmap(c->mapping, c->mapping_bytes);
    free(c);
    return NULL;
  }
  c->fn = fn;
  c->arg = arg;
  capture_template(&c->self);
  size_t size;
  c->self.uc_stack.ss_sp = stack_base(c, &size);
  c->self.uc_stack.ss_size = size;
  c->self.uc_link = NULL;
  uint64_t bits = (uint64_t)(uintptr_t)c;
  makecontext(&c->self, (void (*)(void))coro_entry, 2, (unsigned)(bits >> 32), (unsigned)bits);
  return c;
}

void sim_coro_free(sim_coro *c) {
  if (c == NULL) return;
#ifdef CORO_ASAN
  /* A coroutine abandoned mid-function leaves poisoned frames in the shadow memory; clear them
  ** so a later mapping at the same address does not inherit them. */
  size_t size;
  void *base = stack_base(c, &size);
  ASAN_UNPOISON_MEMORY_REGION(base, size);
#endif
  munmap(c->mapping, c->mapping_bytes);
  free(c);
}

void sim_coro_resume(sim_coro *c) {
  assert(!c->finished);
#ifdef CORO_ASAN
  size_t size;
  void *base = stack_base(c, &size);
  void *fake = NULL;
  __sanitizer_start_switch_fiber(&fake, base, size);
  swapcontext(&c->resumer, &c->self);
  __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#else
  swapcontext(&c->resumer, &c->self);
#endif
}

void sim_coro_yield(sim_coro *c) {
#ifdef CORO_ASAN
  __sanitizer_start_switch_fiber(&c->fake_stack, c->resumer_bottom, c->resumer_size);
  swapcontext(&c->self, &c->resumer);
  __sanitizer_finish_switch_fiber(c->fake_stack, &c->resumer_bottom, &c->resumer_size);
#else
  swapcontext(&c->self, &c->resumer);
#endif
}

int sim_coro_finished(const sim_coro *c) { return c->finished; }
