/*
** coro.c: the context switch behind sim/coro.h.
**
** Two backends with one shape: on x86-64 a hand-written switch that saves the six callee-saved
** registers and swaps stack pointers (a few ns); elsewhere ucontext, whose swapcontext also
** saves the signal mask with a system call (~10x slower). SIM_CORO_UCONTEXT forces the latter.
** The x86-64 switch does not save MXCSR or the x87 control word: nothing in podsim changes
** rounding modes inside an actor.
**
** Stacks are mmap'd with a PROT_NONE guard page below them, so an actor overflowing its stack
** faults at once instead of corrupting a neighbour. A guarded stack is two of the kernel's
** vm.max_map_count mappings (65530 by default): a 6-slice v4-8192 run has some 50,000 actors.
** So only the first quarter of that limit's worth of live stacks are guarded; the ones beyond
** are plain mappings (adjacent ones merge into one) that start with a canary, checked each time
** the coroutine hands control back: an overflow stops the run with a message, as a fault would. Under AddressSanitizer every switch is
** announced with __sanitizer_start/finish_switch_fiber, otherwise ASan takes the foreign stack
** for a buffer overflow.
*/
#include "sim/coro.h"

#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__x86_64__) && !defined(SIM_CORO_UCONTEXT)
#define CORO_X86_64 1
#else
#include <ucontext.h>
#endif

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
#ifdef CORO_X86_64
  void *sp;                  /* the coroutine's stack pointer while suspended */
  void *resumer_sp;          /* the resumer's stack pointer while the coroutine runs */
#else
  ucontext_t self;           /* the coroutine's saved registers while suspended */
  ucontext_t resumer;        /* where sim_coro_yield returns to (the engine's context) */
#endif
  void *mapping;             /* mmap'd region: the guard page (if guarded) then the stack */
  size_t mapping_bytes;      /* length of `mapping` */
  int guarded;               /* its first page is PROT_NONE; else the stack starts with CANARY */
  sim_coro_fn fn;            /* body, run once */
  void *arg;                 /* its argument */
  int finished;              /* fn has returned; never resumed again */
#ifdef CORO_ASAN
  void *fake_stack;          /* ASan's fake-stack handle of the side being switched away from */
  const void *resumer_bottom; /* the resumer's stack, reported by ASan on entry */
  size_t resumer_size;       /* its size */
#endif
};

#ifdef CORO_X86_64
void sim__coro_switch(void **save_sp, void *to_sp);  /* assembly, below */
void sim__coro_start(void);                          /* assembly, below */
void sim__coro_main(sim_coro *c);                    /* called from sim__coro_start */
#endif

static void *stack_base(const sim_coro *c, size_t *size) {
  size_t guard = c->guarded ? (size_t)sysconf(_SC_PAGESIZE) : 0;
  *size = c->mapping_bytes - guard;
  return (char *)c->mapping + guard;
}

/* What the lowest bytes of an unguarded stack hold until something overflows onto them. */
static const uint64_t CANARY[8] = { 0x706f6473696d2121u, 0x5354414b2d454e44u, 0x706f6473696d2121u,
                                    0x5354414b2d454e44u, 0x706f6473696d2121u, 0x5354414b2d454e44u,
                                    0x706f6473696d2121u, 0x5354414b2d454e44u };

static long live_guarded;     /* guarded stacks mapped now (coroutines live on one thread) */
static long guard_budget = -1; /* how many may be: a quarter of vm.max_map_count; -1: not read yet */

long sim__coro_max_map_count(void) {
  long limit = -1;
  FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
  if (f != NULL) {
    if (fscanf(f, "%ld", &limit) != 1 || limit < 0) limit = -1;
    fclose(f);
  }
  return limit;
}

static long guarded_stacks_allowed(void) {
  if (guard_budget >= 0) return guard_budget;
  long limit = sim__coro_max_map_count();
  guard_budget = (limit >= 0 ? limit : 65530) / 4;  /* the kernel's default when /proc cannot say */
  return guard_budget;
}

void sim__coro_set_guard_budget(long stacks) { guard_budget = stacks; }
int sim__coro_guarded(const sim_coro *c) { return c->guarded; }

/* The unguarded stack's canary is intact; if not, an actor ran past its stack's end. */
static void check_canary(const sim_coro *c) {
  if (c->guarded) return;
  size_t size;
  const void *base = stack_base(c, &size);
#ifdef CORO_ASAN
  ASAN_UNPOISON_MEMORY_REGION(base, sizeof CANARY);
#endif
  if (memcmp(base, CANARY, sizeof CANARY) == 0) return;
  fprintf(stderr, "podsim: an actor overflowed its %zu KiB stack (internal error)\n", size / 1024);
  abort();
}

/* Runs the body, then leaves for good. */
static void coro_main(sim_coro *c) {
#ifdef CORO_ASAN
  __sanitizer_finish_switch_fiber(NULL, &c->resumer_bottom, &c->resumer_size);
#endif
  c->fn(c->arg);
  c->finished = 1;
#ifdef CORO_ASAN
  /* NULL fake-stack handle: this fiber's frames are gone for good. */
  __sanitizer_start_switch_fiber(NULL, c->resumer_bottom, c->resumer_size);
#endif
#ifdef CORO_X86_64
  void *abandoned_sp;
  sim__coro_switch(&abandoned_sp, c->resumer_sp);
#else
  setcontext(&c->resumer);
#endif
  abort(); /* a finished coroutine is never resumed */
}

#ifdef CORO_X86_64
/* sim__coro_switch(save_sp, to_sp): pushes the callee-saved registers, stores the stack
** pointer in *save_sp, loads to_sp and pops the registers saved there. A new coroutine's stack
** is laid out as if it had been switched away from just before sim__coro_start, which moves
** the coroutine (left in rbx) into the first argument and calls coro_main. */
__asm__(".text\n"
        ".globl sim__coro_switch\n"
        ".type sim__coro_switch,@function\n"
        "sim__coro_switch:\n"
        "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
        "  ret\n"
        ".size sim__coro_switch, .-sim__coro_switch\n"
        ".type sim__coro_start,@function\n"
        "sim__coro_start:\n"
        "  movq %rbx, %rdi\n"
        "  call sim__coro_main\n"
        "  ud2\n"
        ".size sim__coro_start, .-sim__coro_start\n");
/* An external name for the assembly to call (coro_main is static). */
void sim__coro_main(sim_coro *c) { coro_main(c); }

static void prepare(sim_coro *c) {
  size_t size;
  char *base = stack_base(c, &size);
  uintptr_t top = ((uintptr_t)base + size) & ~(uintptr_t)15;
  /* Six saved registers then the return address; after `ret` the stack pointer is top - 16,
  ** 16-byte aligned as the ABI wants before sim__coro_start's call. */
  void **sp = (void **)(top - 72);
  for (int i = 0; i < 6; i++) sp[i] = NULL;
  sp[4] = c;                          /* popped into rbx */
  sp[6] = (void *)sim__coro_start;    /* where the first switch "returns" */
  c->sp = sp;
}

static void switch_in(sim_coro *c) { sim__coro_switch(&c->resumer_sp, c->sp); }
static void switch_out(sim_coro *c) { sim__coro_switch(&c->sp, c->resumer_sp); }
#else
/* makecontext passes only ints: the pointer travels as two 32-bit halves. */
static void ucontext_entry(unsigned hi, unsigned lo) {
  coro_main((sim_coro *)(uintptr_t)(((uint64_t)hi << 32) | (uint64_t)lo));
}

/* getcontext only fills a template that makecontext then redirects; calling it from a leaf
** keeps the compiler's setjmp-style clobber analysis away from the caller's locals. */
static void capture_template(ucontext_t *u) { getcontext(u); }

static void prepare(sim_coro *c) {
  capture_template(&c->self);
  size_t size;
  c->self.uc_stack.ss_sp = stack_base(c, &size);
  c->self.uc_stack.ss_size = size;
  c->self.uc_link = NULL;
  uint64_t bits = (uint64_t)(uintptr_t)c;
  makecontext(&c->self, (void (*)(void))ucontext_entry, 2, (unsigned)(bits >> 32),
              (unsigned)bits);
}

static void switch_in(sim_coro *c) { swapcontext(&c->resumer, &c->self); }
static void switch_out(sim_coro *c) { swapcontext(&c->self, &c->resumer); }
#endif

sim_coro *sim_coro_new(size_t stack_bytes, sim_coro_fn fn, void *arg) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t stack = (stack_bytes + page - 1) / page * page;
  sim_coro *c = calloc(1, sizeof *c);
  if (c == NULL) return NULL;
  c->guarded = live_guarded < guarded_stacks_allowed();
  c->mapping_bytes = stack + (c->guarded ? page : 0);
  c->mapping = mmap(NULL, c->mapping_bytes, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (c->mapping == MAP_FAILED || (c->guarded && mprotect(c->mapping, page, PROT_NONE) != 0)) {
    if (c->mapping != MAP_FAILED) munmap(c->mapping, c->mapping_bytes);
    free(c);
    return NULL;
  }
  if (c->guarded)
    live_guarded++;
  else
    memcpy(c->mapping, CANARY, sizeof CANARY);
  c->fn = fn;
  c->arg = arg;
  prepare(c);
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
  check_canary(c);
  munmap(c->mapping, c->mapping_bytes);
  if (c->guarded) live_guarded--;
  free(c);
}

void sim_coro_resume(sim_coro *c) {
  assert(!c->finished);
#ifdef CORO_ASAN
  size_t size;
  void *base = stack_base(c, &size);
  void *fake = NULL;
  __sanitizer_start_switch_fiber(&fake, base, size);
  switch_in(c);
  __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#else
  switch_in(c);
#endif
  check_canary(c);
}

void sim_coro_yield(sim_coro *c) {
#ifdef CORO_ASAN
  __sanitizer_start_switch_fiber(&c->fake_stack, c->resumer_bottom, c->resumer_size);
  switch_out(c);
  __sanitizer_finish_switch_fiber(c->fake_stack, &c->resumer_bottom, &c->resumer_size);
#else
  switch_out(c);
#endif
}

int sim_coro_finished(const sim_coro *c) { return c->finished; }
