/*
** torus_mesh.c: a data x model mesh over a torus's axes (torus_mesh.h).
**
** Invariants:
**   1. For every axis, inner divides the length; the inner parts multiply to the model size and
**      the rest (length / inner) to the data size, so (d, m) -> rank is a bijection.
**   2. Two mesh positions that differ only in the model index differ only in inner digits: a
**      model line stays within one block of inner[a] consecutive chips on each axis; positions
**      that differ only in the data index keep every inner digit.
*/
#include "sim/torus_mesh.h"

#include <assert.h>
#include <stddef.h>

/* Whole axes: the first subset of k axes (in index order, as itertools.combinations lists
** them) whose lengths multiply to model; 1 with chosen[] set. */
static int whole_axes(const sim_torus_mesh *tm, int k, int from, int product, int model, int *chosen) {
  if (k == 0) return product == model;
  for (int a = from; a <= tm->ndims - k; a++) {
    if (model % (product * tm->dims[a]) != 0) continue;
    chosen[a] = 1;
    if (whole_axes(tm, k - 1, a + 1, product * tm->dims[a], model, chosen)) return 1;
    chosen[a] = 0;
  }
  return 0;
}

/* jax's _prefer_first_logical_axis_assignment for the first axis placed: more chips on whole
** axes, then more whole axes, then the larger split in lexicographic order. */
static int better(const sim_torus_mesh *tm, const int *x, const int *y) {
  long wx = 1, wy = 1;
  int nx = 0, ny = 0;
  for (int a = 0; a < tm->ndims; a++) {
    if (x[a] == tm->dims[a]) wx *= x[a], nx += x[a] > 1;
    if (y[a] == tm->dims[a]) wy *= y[a], ny += y[a] > 1;
  }
  if (wx != wy) return wx > wy;
  if (nx != ny) return nx > ny;
  for (int a = 0; a < tm->ndims; a++)
    if (x[a] != y[a]) return x[a] > y[a];
  return 0;
}

/* Every split of `left` over axes a.. (each part a divisor of its axis); the best into best. */
static void split_axes(sim_torus_mesh *tm, int a, int left, int *cur, int *best, int *found) {
  if (a == tm->ndims) {
    if (left != 1 || (*found && !better(tm, cur, best))) return;
    for (int b = 0; b < tm->ndims; b++) best[b] = cur[b];
    *found = 1;
    return;
  }
  for (int z = 1; z <= tm->dims[a]; z++) {
    if (tm->dims[a] % z != 0 || left % z != 0) continue;
    cur[a] = z;
    split_axes(tm, a + 1, left / z, cur, best, found);
  }
}

int sim_torus_mesh_place(sim_torus_mesh *tm, int ndims, const int *dims, const int *wraps, int model) {
  assert(ndims >= 1 && ndims <= SIM_TORUS_MESH_MAX_DIMS && model >= 1);
  int size = 1, chosen[SIM_TORUS_MESH_MAX_DIMS] = {0};
  tm->ndims = ndims;
  for (int a = 0; a < ndims; a++) {
    tm->dims[a] = dims[a];
    tm->wraps[a] = wraps != NULL && wraps[a];
    tm->inner[a] = 1;
    size *= dims[a];
  }
  if (size % model != 0) return -1;
  for (int k = ndims; k >= 1; k--)
    if (whole_axes(tm, k, 0, 1, model, chosen)) {
      for (int a = 0; a < ndims; a++) tm->inner[a] = chosen[a] ? dims[a] : 1;
      return 0;
    }
  /* No whole axes fit (or model is 1): split, as allow_split_physical_axes=True does. */
  int cur[SIM_TORUS_MESH_MAX_DIMS], found = 0;
  split_axes(tm, 0, model, cur, tm->inner, &found);
  assert(found); /* model divides the size, so some split of its factors fits */
  return 0;
}

int sim_torus_mesh_rank(const sim_torus_mesh *tm, int d, int m) {
  int rank = 0;
  for (int a = 0, below = 1; a < tm->ndims; below *= tm->dims[a], a++) {
    int in = tm->inner[a], out = tm->dims[a] / in;
    rank += (d % out * in + m % in) * below;
    d /= out;
    m /= in;
  }
  assert(d == 0 && m == 0);
  return rank;
}

int sim_torus_mesh_line(const sim_torus_mesh *tm, int model, int *dims, int *wraps) {
  int n = 0;
  for (int a = 0; a < tm->ndims; a++) {
    int in = tm->inner[a], len = model ? in : tm->dims[a] / in;
    if (len == 1) continue;
    dims[n] = len;
    wraps[n++] = tm->wraps[a] && (model ? in == tm->dims[a] : 1);
  }
  if (n == 0) dims[n] = 1, wraps[n++] = 0;
  return n;
}
