/*
** eventq.c: the pending-event queue (sim__eventq_).
**
** A 4-ary min-heap of compact {time, seq, slot} entries ordered by (time, seq): seq is the
** insertion count, so equal times pop first-in-first-out and the order never depends on
** addresses. Callbacks live in a slot array recycled through a free list, so steady-state
** scheduling allocates nothing. Cancelling only clears the slot's callback; the heap entry is
** dropped when it reaches the top (cheaper than tracking heap positions on every sift). A slot's
** generation is bumped whenever it is freed, so a handle kept after its event fired or was
** cancelled matches nothing.
*/
#include <assert.h>
#include <stdlib.h>

#include "sim/simInt.h"

#define NO_SLOT UINT32_MAX
#define ARITY 4

void sim__eventq_init(sim_eventq *q) {
  *q = (sim_eventq){.free_head = NO_SLOT};
}

void sim__eventq_free(sim_eventq *q) {
  free(q->heap);
  free(q->slots);
  *q = (sim_eventq){.free_head = NO_SLOT};
}

static int before(const sim_heap_entry *a, const sim_heap_entry *b) {
  return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

static void sift_up(sim_heap_entry *h, size_t i, sim_heap_entry x) {
  while (i > 0) {
    size_t parent = (i - 1) / ARITY;
    if (!before(&x, &h[parent])) break;
    h[i] = h[parent];
    i = parent;
  }
  h[i] = x;
}

static void sift_down(sim_heap_entry *h, size_t n, size_t i, sim_heap_entry x) {
  for (;;) {
    size_t first = i * ARITY + 1;
    if (first >= n) break;
    size_t best = first;
    size_t end = first + ARITY < n ? first + ARITY : n;
    for (size_t c = first + 1; c < end; c++)
      if (before(&h[c], &h[best])) best = c;
    if (!before(&h[best], &x)) break;
    h[i] = h[best];
    i = best;
  }
  h[i] = x;
}

static void free_slot(sim_eventq *q, uint32_t slot) {
  sim_event_slot *s = &q->slots[slot];
  s->fn = NULL;
  s->generation++;
  if (s->generation == 0) s->generation = 1; /* 0 is SIM_EVENT_NONE's */
  s->next_free = q->free_head;
  q->free_head = slot;
}

sim_event_handle sim__eventq_push(sim_eventq *q, sim_time at, sim_event_fn fn, void *arg) {
  assert(fn != NULL);
  uint32_t slot = q->free_head;
  if (slot != NO_SLOT) {
    q->free_head = q->slots[slot].next_free;
  } else {
    size_t cap = q->cap_slots;
    sim__grow(&q->slots, &cap, (size_t)q->n_slots + 1, sizeof *q->slots);
    assert(cap < NO_SLOT);
    q->cap_slots = (uint32_t)cap;
    slot = q->n_slots++;
    q->slots[slot].generation = 1;
  }
  sim_event_slot *s = &q->slots[slot];
  s->fn = fn;
  s->arg = arg;
  if (q->size == q->cap) sim__grow(&q->heap, &q->cap, q->size + 1, sizeof *q->heap);
  sift_up(q->heap, q->size++, (sim_heap_entry){at, q->next_seq++, slot});
  q->live++;
  return (sim_event_handle){slot, s->generation};
}

int sim__eventq_cancel(sim_eventq *q, sim_event_handle h) {
  if (h.slot >= q->n_slots) return 0;
  sim_event_slot *s = &q->slots[h.slot];
  if (s->generation != h.generation || s->fn == NULL) return 0;
  s->fn = NULL;
  q->live--;
  return 1;
}

static void remove_top(sim_eventq *q) {
  sim_heap_entry last = q->heap[--q->size];
  if (q->size > 0) sift_down(q->heap, q->size, 0, last);
}

sim_time sim__eventq_peek(sim_eventq *q) {
  while (q->size > 0) {
    uint32_t slot = q->heap[0].slot;
    if (q->slots[slot].fn != NULL) return q->heap[0].time;
    remove_top(q);
    free_slot(q, slot);
  }
  return SIM_TIME_NEVER;
}

int sim__eventq_pop(sim_eventq *q, sim_time *at, sim_event_fn *fn, void **arg) {
  while (q->size > 0) {
    sim_heap_entry top = q->heap[0];
    sim_event_slot *s = &q->slots[top.slot];
    sim_event_fn f = s->fn;
    void *a = s->arg;
    remove_top(q);
    free_slot(q, top.slot);
    if (f == NULL) continue; /* cancelled */
    q->live--;
    *at = top.time;
    *fn = f;
    *arg = a;
    return 1;
  }
  return 0;
}
