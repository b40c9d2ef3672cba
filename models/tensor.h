/*
** tensor.h: dense tensors as tf.distribute's API passes them around (md_tensor_).
**
** A tensor has a dtype, a rank (0 for a scalar) and a row-major buffer it owns. The
** arithmetic here is what the strategy layer needs to reduce, gather and batch values:
** element-wise sum and scale, a sum over one axis, concatenation and slicing along an axis.
** Sums run in a fixed order (element by element, operands in the order given) so the bits
** of a reduction depend only on that order, as on hardware.
**
** Functions that build a tensor never fail on valid arguments; shape and dtype mismatches are
** the caller's checks (the strategy layer turns them into TensorFlow's exceptions), so here
** they are asserted.
*/
#ifndef PODSIM_TENSOR_H
#define PODSIM_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#define MD_TENSOR_MAX_RANK 8

typedef enum { MD_FLOAT32 = 0, MD_INT32, MD_INT64 } md_dtype;

typedef struct md_tensor {
  md_dtype dtype;         /* element type */
  int rank;               /* 0 (scalar) .. MD_TENSOR_MAX_RANK */
  int64_t shape[MD_TENSOR_MAX_RANK]; /* shape[0..rank) >= 0 */
  size_t size;            /* number of elements: the product of the shape (1 for a scalar) */
  void *data;             /* size elements of dtype, row-major, owned; NULL when size is 0 or
                          ** the tensor is a shape alone (md_tensor_shape) */
} md_tensor;

const char *md_dtype_name(md_dtype dtype);           /* "float32", "int32", "int64" */
size_t      md_dtype_size(md_dtype dtype);           /* bytes per element */
int         md_dtype_is_floating(md_dtype dtype);

/* A zero-filled tensor. */
md_tensor *md_tensor_new(md_dtype dtype, int rank, const int64_t *shape);
/* A tensor of shape alone (numerics off): data NULL whatever its size, so it costs its bytes
** without holding them. Copies, slices and concatenations of it are shapes alone too; the
** arithmetic below needs values. */
md_tensor *md_tensor_shape(md_dtype dtype, int rank, const int64_t *shape);
/* Whether t holds its values (not md_tensor_shape's). */
int        md_tensor_has_values(const md_tensor *t);
/* A tensor holding a copy of values (size elements of dtype, row-major; NULL: shape alone). */
md_tensor *md_tensor_from(md_dtype dtype, int rank, const int64_t *shape, const void *values);
md_tensor *md_tensor_scalar_f32(float v);
md_tensor *md_tensor_vector_f32(size_t n, const float *values);
md_tensor *md_tensor_vector_i64(size_t n, const int64_t *values);
md_tensor *md_tensor_copy(const md_tensor *t);
void       md_tensor_free(md_tensor *t);

static inline float   *md_tensor_f32(md_tensor *t) { return (float *)t->data; }
static inline int32_t *md_tensor_i32(md_tensor *t) { return (int32_t *)t->data; }
static inline int64_t *md_tensor_i64(md_tensor *t) { return (int64_t *)t->data; }
/* Element i (row-major) as a double, whatever the dtype (for tests and printing). */
double     md_tensor_get(const md_tensor *t, size_t i);

int        md_tensor_same_shape(const md_tensor *a, const md_tensor *b);  /* rank and dims */
/* Same dtype, shape and bits (float compared as bit patterns: -0 != +0, NaN == same NaN). */
int        md_tensor_equal(const md_tensor *a, const md_tensor *b);
/* "[2, 3]" into buf; returns buf. */
const char *md_tensor_shape_str(const md_tensor *t, char *buf, size_t len);

/* acc += t element-wise (same dtype and shape). */
void       md_tensor_add_into(md_tensor *acc, const md_tensor *t);
/* t *= factor element-wise (floating dtypes only). */
void       md_tensor_scale(md_tensor *t, double factor);
/* Sum over `axis` (0 <= axis < rank): the result has rank-1 dims; elements along the axis are
** added in index order. */
md_tensor *md_tensor_sum_axis(const md_tensor *t, int axis);
/* Concatenation of n tensors along `axis`: same dtype, same rank, equal dims except on axis. */
md_tensor *md_tensor_concat(md_tensor *const *parts, int n, int axis);
/* Rows [begin, end) of axis 0 (rank >= 1). */
md_tensor *md_tensor_slice0(const md_tensor *t, int64_t begin, int64_t end);

#endif
