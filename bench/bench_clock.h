/*
** bench_clock.h: the clocks the benches that run podsim in a child read: the monotonic wall
** clock, and a child's CPU time from wait4's rusage (getrusage is tick-sampled at ms scale,
** which is fine for whole runs).
*/
#ifndef PODSIM_BENCH_CLOCK_H
#define PODSIM_BENCH_CLOCK_H

#include <sys/time.h>
#include <time.h>

static inline double bench_now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static inline double bench_tv_s(struct timeval t) { return (double)t.tv_sec + 1e-6 * (double)t.tv_usec; }

#endif
