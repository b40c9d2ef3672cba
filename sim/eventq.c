/*
** eventq.c: the pending-event queue (sim__eventq_).
**
** Simulated time never goes back, so the queue is a radix heap (a monotone priority queue)
** rather than a comparison heap. Times are compared with `last`, the time of the latest pop:
** an event at `last` waits in `now`; any later one in bucket [L][d], L the highest digit (4
** bits, simInt.h) in which its time differs from `last` and d its own value of that digit.
** Buckets in (level, digit) order hold disjoint, ascending ranges of time, and stay valid when
** `last` moves forward to the earliest pending time. A pop takes `now` in sequence order; when it is empty,
** the first non-empty bucket (found through the occupancy bits) is emptied around its minimum,
** which becomes the new `last`: its entries land in `now` or in lower levels. A level-0 bucket
** holds a single time, so it becomes `now` by swapping arrays. An event is moved at most once
** per level it descends: on the hold model with 1e5 pending events (bench/bench_engine.c)
** about 5 moves per event, against 10 for the one-digit-per-bit radix heap this replaced
** (17-18 M events/s; this one 22-23 M; the 4-ary heap of {time, seq, slot} before that 8 M,
** stalling on a dependent load and a mispredicted compare per level).
**
** Order among equal times is insertion order: `now` is sorted by seq whenever events are moved
** into it, and events scheduled at `last` afterwards carry larger seqs and are appended.
** Entries carry their callback (32 bytes: time, seq and slot packed in one word, fn, arg), so
** firing reads only the array being popped. A slot only backs handles: it holds a tag derived
** from its event's seq (the handle's generation), written when the event is scheduled and
** cleared when it fires or is cancelled, so a handle kept after that matches nothing, and the
** hot path only ever stores to it (with callbacks in a slot array, the hold model spent a third
** of its time on one cache miss per event at a random slot). Slots are recycled through a stack
** of free ones, so steady-state scheduling allocates nothing. A cancelled entry is dropped when
** it reaches `now`; only while some cancelled entry is pending does popping read a slot at all.
*/
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

#include "sim/simInt.h"

#define SLOT_MASK ((UINT64_C(1) << SIM_SLOT_BITS) - 1)
#define SEQ_LIMIT (UINT64_C(1) << (64 - SIM_SLOT_BITS))
#define WORDS ((SIM_EVENT_RADIX + 63) / 64)
/* Below this, insertion sort (`now` is usually 1 entry or already in order). */
#define SMALL_SORT 16

void sim__eventq_init(sim_eventq *q) { *q = (sim_eventq){0}; }

void sim__eventq_free(sim_eventq *q) {
  free(q->now.items);
  if (q->levels != NULL)
    for (int l = 0; l < SIM_EVENT_LEVELS; l++)
      for (int d = 0; d < SIM_EVENT_RADIX; d++) free(q->levels[l][d].items);
  free(q->levels);
  free(q->slots);
  free(q->free);
  *q = (sim_eventq){0};
}

static _Noreturn void exhausted(const char *what) {
  fprintf(stderr, "podsim: event queue: more than %s\n", what);
  abort();
}

static uint32_t slot_of(sim_queued_event ev) { return (uint32_t)(ev.order & SLOT_MASK); }

/* The handle generation of the event with sequence number seq: never 0 (SIM_EVENT_NONE's), and
** two events share it only 2^32-1 schedules apart. Derived, not read: taking a slot writes it
** without loading the slot's line first. */
static uint32_t tag_of(uint64_t seq) { return (uint32_t)(seq % UINT32_MAX) + 1; }

static uint32_t tag_of_entry(sim_queued_event ev) { return tag_of(ev.order >> SIM_SLOT_BITS); }

/* sim__grow for an array whose capacity is kept as a uint32_t. */
static void grow_u32(void *arr, uint32_t *cap, uint32_t need, size_t elem) {
  size_t c = *cap;
  sim__grow(arr, &c, need, elem);
  *cap = (uint32_t)c;
}

static inline void append(sim_event_bucket *b, sim_queued_event ev) {
  if (b->n == b->cap) grow_u32(&b->items, &b->cap, b->n + 1, sizeof *b->items);
  b->items[b->n++] = ev;
}

/* The bucket of an event at `at`: `now` at `last`, else [L][d], L the highest digit in which
** `at` differs from `last` and d its value there. */
static inline sim_event_bucket *bucket_of(sim_eventq *q, sim_time at, int *level, int *digit) {
  if (at == q->last) return &q->now;
  uint64_t diff = (uint64_t)at ^ (uint64_t)q->last;
  *level = (63 - __builtin_clzll(diff)) / SIM_EVENT_RADIX_BITS;
  *digit = (int)((uint64_t)at >> (*level * SIM_EVENT_RADIX_BITS)) & (SIM_EVENT_RADIX - 1);
  return &q->levels[*level][*digit];
}

/* Files ev, later than `last`, in its bucket. */
static inline void file(sim_eventq *q, sim_queued_event ev) {
  int level = 0, digit = 0;
  append(bucket_of(q, ev.time, &level, &digit), ev);
  q->occupied[level][digit / 64] |= UINT64_C(1) << (digit % 64);
}

/* The first non-empty bucket in time order as level * RADIX + digit, or -1 if none is. */
static int first_bucket(const sim_eventq *q) {
  for (int l = 0; l < SIM_EVENT_LEVELS; l++)
    for (int w = 0; w < WORDS; w++)
      if (q->occupied[l][w] != 0)
        return l * SIM_EVENT_RADIX + w * 64 + __builtin_ctzll(q->occupied[l][w]);
  return -1;
}

/* The free stack has room for every slot ever handed out (push_after_growing sees to it). */
static void free_slot(sim_eventq *q, uint32_t slot) {
  assert(q->n_free < q->cap_free);
  q->free[q->n_free++] = slot;
}

sim_event_handle sim__eventq_push(sim_eventq *q, sim_time at, sim_event_fn fn, void *arg);

/* Makes room for one more event at `at` (a free slot, space in its bucket), then pushes it.
** Out of line, so that the push without growth calls nothing and saves no registers. */
static __attribute__((noinline)) sim_event_handle push_after_growing(sim_eventq *q, sim_time at,
                                                                    sim_event_fn fn, void *arg) {
  if (q->n_free == 0) { /* a slot never used before */
    if (q->n_slots > SLOT_MASK) exhausted("2^24 pending events");
    grow_u32(&q->slots, &q->cap_slots, q->n_slots + 1, sizeof *q->slots);
    grow_u32(&q->free, &q->cap_free, q->n_slots + 1, sizeof *q->free);
    if (q->levels == NULL) q->levels = base_xcalloc(SIM_EVENT_LEVELS, sizeof *q->levels);
    q->free[q->n_free++] = q->n_slots++;
  }
  int level = 0, digit = 0;
  sim_event_bucket *b = bucket_of(q, at, &level, &digit);
  grow_u32(&b->items, &b->cap, b->n + 1, sizeof *b->items);
  return sim__eventq_push(q, at, fn, arg);
}

sim_event_handle sim__eventq_push(sim_eventq *q, sim_time at, sim_event_fn fn, void *arg) {
  assert(fn != NULL && at >= q->last);
  if (q->n_free == 0) return push_after_growing(q, at, fn, arg); /* before the first one */
  int level = 0, digit = 0;
  sim_event_bucket *b = bucket_of(q, at, &level, &digit);
  if (b->n == b->cap) return push_after_growing(q, at, fn, arg);
  if (q->next_seq == SEQ_LIMIT) exhausted("2^40 scheduled events");
  uint32_t slot = q->free[--q->n_free];
  uint64_t seq = q->next_seq++;
  uint32_t tag = tag_of(seq);
  q->slots[slot] = tag;
  b->items[b->n++] = (sim_queued_event){at, seq << SIM_SLOT_BITS | slot, fn, arg};
  if (b != &q->now) q->occupied[level][digit / 64] |= UINT64_C(1) << (digit % 64);
  q->live++;
  return (sim_event_handle){slot, tag};
}

int sim__eventq_cancel(sim_eventq *q, sim_event_handle h) {
  if (h.slot >= q->n_slots || h.generation == 0 || q->slots[h.slot] != h.generation) return 0;
  q->slots[h.slot] = 0; /* the slot stays taken until its entry is dropped */
  q->cancelled++;
  q->live--;
  return 1;
}

/* Whether a pending entry was cancelled (no slot is read while nothing is). */
static int is_cancelled(const sim_eventq *q, sim_queued_event ev) {
  return q->cancelled > 0 && q->slots[slot_of(ev)] != tag_of_entry(ev);
}

static int by_seq(const void *x, const void *y) {
  uint64_t a = ((const sim_queued_event *)x)->order, b = ((const sim_queued_event *)y)->order;
  return (a > b) - (a < b);
}

static void sort_by_seq(sim_queued_event *ev, size_t n) {
  if (n > SMALL_SORT) {
    /* Usually already in order: the events of one time were scheduled together and moved
    ** down in order (every sort of a ring or torus collective at 1024-4096 ranks). */
    size_t i = 1;
    while (i < n && ev[i - 1].order < ev[i].order) i++;
    if (i < n) qsort(ev, n, sizeof *ev, by_seq);
    return;
  }
  for (size_t i = 1; i < n; i++) {
    sim_queued_event x = ev[i];
    size_t j = i;
    for (; j > 0 && ev[j - 1].order > x.order; j--) ev[j] = ev[j - 1];
    ev[j] = x;
  }
}

/* Makes `now` hold the earliest live events (sorted by seq); returns 0 if none is left. */
static __attribute__((noinline)) int refill(sim_eventq *q) {
  sim_event_bucket *now = &q->now;
  for (;;) {
    while (q->head < now->n && is_cancelled(q, now->items[q->head])) {
      q->cancelled--;
      free_slot(q, slot_of(now->items[q->head++]));
    }
    if (q->head < now->n) return 1;
    now->n = q->head = 0;
    int b = first_bucket(q);
    if (b < 0) return 0;
    int level = b / SIM_EVENT_RADIX, digit = b % SIM_EVENT_RADIX;
    sim_event_bucket *src = &q->levels[level][digit];
    q->occupied[level][digit / 64] &= ~(UINT64_C(1) << (digit % 64));
    if (level == 0) { /* one time: the bucket becomes `now` */
      sim_event_bucket t = *now;
      *now = *src;
      *src = t;
      q->last = now->items[0].time;
    } else {
      /* Cancelled entries move like live ones: telling them apart would mean a cache miss
      ** into the slot array per entry, and they are dropped cheaply once they reach now. */
      sim_time min = src->items[0].time;
      for (uint32_t i = 1; i < src->n; i++)
        if (src->items[i].time < min) min = src->items[i].time;
      uint32_t n = src->n;
      src->n = 0;
      q->last = min;
      /* Every entry shares the bytes above `level` with min, so each lands below it. */
      for (uint32_t i = 0; i < n; i++) {
        if (src->items[i].time == min) append(now, src->items[i]);
        else file(q, src->items[i]);
      }
    }
    sort_by_seq(now->items, now->n);
  }
}

sim_time sim__eventq_peek(sim_eventq *q) {
  /* Looks without redistributing: moving `last` forward here would forbid scheduling at
  ** times between now and the next event. Buckets hold ascending ranges, so the first one
  ** with a live entry holds the earliest. */
  for (uint32_t i = q->head; i < q->now.n; i++)
    if (!is_cancelled(q, q->now.items[i])) return q->last;
  for (int l = 0; q->levels != NULL && l < SIM_EVENT_LEVELS; l++)
    for (int d = 0; d < SIM_EVENT_RADIX; d++) {
      sim_time min = SIM_TIME_NEVER;
      const sim_event_bucket *b = &q->levels[l][d];
      for (uint32_t i = 0; i < b->n; i++)
        if (b->items[i].time < min && !is_cancelled(q, b->items[i])) min = b->items[i].time;
      if (min != SIM_TIME_NEVER) return min;
    }
  return SIM_TIME_NEVER;
}

int sim__eventq_pop(sim_eventq *q, sim_time *at, sim_event_fn *fn, void **arg) {
  /* The common case, another live event at `last`, without refill's loop. */
  if ((q->head == q->now.n || q->cancelled > 0) && !refill(q)) return 0;
  sim_queued_event ev = q->now.items[q->head++];
  *at = ev.time;
  *fn = ev.fn;
  *arg = ev.arg;
  q->slots[slot_of(ev)] = 0;
  free_slot(q, slot_of(ev));
  q->live--;
  return 1;
}

size_t sim__eventq_live_events(const sim_eventq *q, sim_queued_event **out, size_t *cap) {
  size_t n = 0;
  sim__grow(out, cap, q->live + 1, sizeof **out);
  for (uint32_t i = q->head; i < q->now.n; i++)
    if (!is_cancelled(q, q->now.items[i])) (*out)[n++] = q->now.items[i];
  for (int l = 0; q->levels != NULL && l < SIM_EVENT_LEVELS; l++)
    for (int d = 0; d < SIM_EVENT_RADIX; d++)
      for (uint32_t i = 0; i < q->levels[l][d].n; i++)
        if (!is_cancelled(q, q->levels[l][d].items[i])) (*out)[n++] = q->levels[l][d].items[i];
  assert(n == q->live);
  return n;
}

void sim__eventq_shift(sim_eventq *q, uint64_t from_seq, sim_time dt, sim_time last) {
  assert(last >= q->last);
  if (q->levels == NULL) {
    q->last = last;
    return;
  }
  size_t n = 0, cap = 0;
  sim_queued_event *all = NULL;
  sim__grow(&all, &cap, q->live + q->cancelled + 1, sizeof *all);
  for (uint32_t i = q->head; i < q->now.n; i++) all[n++] = q->now.items[i];
  q->now.n = q->head = 0;
  for (int l = 0; l < SIM_EVENT_LEVELS; l++) {
    for (int d = 0; d < SIM_EVENT_RADIX; d++) {
      sim_event_bucket *b = &q->levels[l][d];
      sim__grow(&all, &cap, n + b->n, sizeof *all);
      for (uint32_t i = 0; i < b->n; i++) all[n++] = b->items[i];
      b->n = 0;
    }
    for (int w = 0; w < WORDS; w++) q->occupied[l][w] = 0;
  }
  q->last = last;
  for (size_t i = 0; i < n; i++) {
    sim_queued_event ev = all[i];
    if (is_cancelled(q, ev)) { /* dropped now: its time may be before the new `last` */
      q->cancelled--;
      free_slot(q, slot_of(ev));
      continue;
    }
    if ((ev.order >> SIM_SLOT_BITS) >= from_seq) ev.time += dt;
    assert(ev.time >= last);
    if (ev.time == last) append(&q->now, ev);
    else file(q, ev);
  }
  sort_by_seq(q->now.items, q->now.n);
  free(all);
}
