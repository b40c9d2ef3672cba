/* tensor.c: dense tensors (md_tensor_). */
#include "models/tensor.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/modelsInt.h"

const char *md_dtype_name(md_dtype dtype) {
  switch (dtype) {
    case MD_FLOAT32: return "float32";
    case MD_INT32: return "int32";
    case MD_INT64: return "int64";
  }
  return "?";
}

size_t md_dtype_size(md_dtype dtype) {
  return dtype == MD_INT64 ? 8 : 4;
}

int md_dtype_is_floating(md_dtype dtype) {
  return dtype == MD_FLOAT32;
}

md_tensor *md_tensor_shape(md_dtype dtype, int rank, const int64_t *shape) {
  assert(rank >= 0 && rank <= MD_TENSOR_MAX_RANK);
  md_tensor *t = base_xcalloc(1, sizeof *t);
  t->dtype = dtype;
  t->rank = rank;
  t->size = 1;
  for (int i = 0; i < rank; i++) {
    assert(shape[i] >= 0);
    t->shape[i] = shape[i];
    t->size *= (size_t)shape[i];
  }
  return t;
}

int md_tensor_has_values(const md_tensor *t) { return t->data != NULL || t->size == 0; }

md_tensor *md_tensor_new(md_dtype dtype, int rank, const int64_t *shape) {
  md_tensor *t = md_tensor_shape(dtype, rank, shape);
  if (t->size > 0) t->data = base_xcalloc(t->size, md_dtype_size(dtype));
  return t;
}

md_tensor *md_tensor_from(md_dtype dtype, int rank, const int64_t *shape, const void *values) {
  if (values == NULL) return md_tensor_shape(dtype, rank, shape);  /* shapes only stay so */
  md_tensor *t = md_tensor_new(dtype, rank, shape);
  if (t->size > 0) memcpy(t->data, values, t->size * md_dtype_size(dtype));
  return t;
}

md_tensor *md_tensor_scalar_f32(float v) {
  return md_tensor_from(MD_FLOAT32, 0, NULL, &v);
}

md_tensor *md_tensor_vector_f32(size_t n, const float *values) {
  int64_t shape[1] = { (int64_t)n };
  return md_tensor_from(MD_FLOAT32, 1, shape, values);
}

md_tensor *md_tensor_vector_i64(size_t n, const int64_t *values) {
  int64_t shape[1] = { (int64_t)n };
  return md_tensor_from(MD_INT64, 1, shape, values);
}

md_tensor *md_tensor_copy(const md_tensor *t) {
  return md_tensor_from(t->dtype, t->rank, t->shape, t->data);
}

void md_tensor_free(md_tensor *t) {
  if (t == NULL) return;
  free(t->data);
  free(t);
}

double md_tensor_get(const md_tensor *t, size_t i) {
  assert(i < t->size);
  switch (t->dtype) {
    case MD_FLOAT32: return ((const float *)t->data)[i];
    case MD_INT32: return ((const int32_t *)t->data)[i];
    case MD_INT64: return (double)((const int64_t *)t->data)[i];
  }
  return 0;
}

int md_tensor_same_shape(const md_tensor *a, const md_tensor *b) {
  if (a->rank != b->rank) return 0;
  for (int i = 0; i < a->rank; i++)
    if (a->shape[i] != b->shape[i]) return 0;
  return 1;
}

int md_tensor_equal(const md_tensor *a, const md_tensor *b) {
  return a->dtype == b->dtype && md_tensor_same_shape(a, b) &&
         (a->size == 0 || memcmp(a->data, b->data, a->size * md_dtype_size(a->dtype)) == 0);
}

const char *md_tensor_shape_str(const md_tensor *t, char *buf, size_t len) {
  size_t n = (size_t)snprintf(buf, len, "[");
  for (int i = 0; i < t->rank && n < len; i++)
    n += (size_t)snprintf(buf + n, len - n, i ? ", %lld" : "%lld", (long long)t->shape[i]);
  if (n < len) snprintf(buf + n, len - n, "]");
  return buf;
}

/* dst[i] += src[i] for n elements of dtype. */
static void add_elements(md_dtype dtype, void *dst, const void *src, size_t n) {
  switch (dtype) {
    case MD_FLOAT32: {
      float *d = dst;
      const float *s = src;
      for (size_t i = 0; i < n; i++) d[i] += s[i];
      break;
    }
    case MD_INT32: {
      int32_t *d = dst;
      const int32_t *s = src;
      for (size_t i = 0; i < n; i++) d[i] = (int32_t)((uint32_t)d[i] + (uint32_t)s[i]);
      break;
    }
    case MD_INT64: {
      int64_t *d = dst;
      const int64_t *s = src;
      for (size_t i = 0; i < n; i++) d[i] = (int64_t)((uint64_t)d[i] + (uint64_t)s[i]);
      break;
    }
  }
}

void md_tensor_add_into(md_tensor *acc, const md_tensor *t) {
  assert(acc->dtype == t->dtype && md_tensor_same_shape(acc, t));
  add_elements(acc->dtype, acc->data, t->data, acc->size);
}

void md_tensor_scale(md_tensor *t, double factor) {
  assert(md_dtype_is_floating(t->dtype));
  float f = (float)factor;
  float *d = t->data;
  for (size_t i = 0; i < t->size; i++) d[i] *= f;
}

/* The elements before, along and after `axis`: a tensor is [outer, dims[axis], inner]. */
static void split_at_axis(const md_tensor *t, int axis, size_t *outer, size_t *inner) {
  *outer = 1;
  *inner = 1;
  for (int i = 0; i < axis; i++) *outer *= (size_t)t->shape[i];
  for (int i = axis + 1; i < t->rank; i++) *inner *= (size_t)t->shape[i];
}

md_tensor *md_tensor_sum_axis(const md_tensor *t, int axis) {
  assert(axis >= 0 && axis < t->rank);
  int64_t shape[MD_TENSOR_MAX_RANK];
  for (int i = 0, j = 0; i < t->rank; i++)
    if (i != axis) shape[j++] = t->shape[i];
  md_tensor *r = md_tensor_new(t->dtype, t->rank - 1, shape);
  size_t outer, inner, along = (size_t)t->shape[axis], es = md_dtype_size(t->dtype);
  split_at_axis(t, axis, &outer, &inner);
  const char *src = t->data;
  char *dst = r->data;
  for (size_t o = 0; o < outer; o++)
    for (size_t a = 0; a < along; a++)
      add_elements(t->dtype, dst + o * inner * es, src + (o * along + a) * inner * es, inner);
  return r;
}

md_tensor *md_tensor_concat(md_tensor *const *parts, int n, int axis) {
  assert(n >= 1 && axis >= 0 && axis < parts[0]->rank);
  int64_t shape[MD_TENSOR_MAX_RANK];
  memcpy(shape, parts[0]->shape, sizeof shape);
  shape[axis] = 0;
  for (int k = 0; k < n; k++) {
    assert(parts[k]->dtype == parts[0]->dtype && parts[k]->rank == parts[0]->rank);
    shape[axis] += parts[k]->shape[axis];
  }
  if (!md_tensor_has_values(parts[0])) return md_tensor_shape(parts[0]->dtype, parts[0]->rank, shape);
  md_tensor *r = md_tensor_new(parts[0]->dtype, parts[0]->rank, shape);
  size_t outer, inner, es = md_dtype_size(r->dtype);
  split_at_axis(r, axis, &outer, &inner);
  char *dst = r->data;
  for (size_t o = 0; o < outer; o++)
    for (int k = 0; k < n; k++) {
      size_t chunk = (size_t)parts[k]->shape[axis] * inner * es;
      if (chunk == 0) continue;
      memcpy(dst, (const char *)parts[k]->data + o * chunk, chunk);
      dst += chunk;
    }
  return r;
}

md_tensor *md_tensor_slice0(const md_tensor *t, int64_t begin, int64_t end) {
  assert(t->rank >= 1 && 0 <= begin && begin <= end && end <= t->shape[0]);
  int64_t shape[MD_TENSOR_MAX_RANK];
  memcpy(shape, t->shape, sizeof shape);
  shape[0] = end - begin;
  size_t row = t->shape[0] ? t->size / (size_t)t->shape[0] : 0;
  if (!md_tensor_has_values(t)) return md_tensor_shape(t->dtype, t->rank, shape);
  return md_tensor_from(t->dtype, t->rank, shape,
                        (const char *)t->data + (size_t)begin * row * md_dtype_size(t->dtype));
}
