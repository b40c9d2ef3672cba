/*
** philox.h: Philox4x32-10 (Salmon et al., "Parallel Random Numbers: As Easy as 1, 2, 3", SC11),
** the counter-based generator TensorFlow's stateless random ops run on CPU, with TensorFlow's
** derivation of a key and counter from a stateless op's [2] seed and its float conversion, so
** podsim draws the numbers tf.random.stateless_uniform draws (Keras 3's dropout masks). GSL has
** no counter-based generator, and the numbers must be TensorFlow's bit for bit.
*/
#ifndef PODSIM_PHILOX_H
#define PODSIM_PHILOX_H

#include <stddef.h>
#include <stdint.h>

/* A 128-bit counter and a 64-bit key, as 32-bit words, low word first (Random123's order). */
typedef struct philox_state {
  uint32_t ctr[4];        /* the counter: block i of a stream is the cipher of ctr + i */
  uint32_t key[2];        /* the key, fixed for a stream */
} philox_state;

/* The 10-round cipher of ctr under key into out[4] (Random123's philox4x32(ctr, key)). */
void philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);
/* The stream of a stateless op's seed (seed0, seed1) as TensorFlow's StatelessRandomGetKeyCounter
** (tensorflow/core/kernels/stateless_random_ops.cc GenerateKey) derives it: the seed as the
** counter under the fixed key 0x02461e29'3ec8f720, whose cipher's words 0-1 become the key and
** 2-3 the counter's high half (low half 0), so that no half of the seed needs to be strong. The
** seed words are int64 values as the op reads them (Keras's seeds are non-negative int32). */
void philox_tf_stream(philox_state *s, int64_t seed0, int64_t seed1);
/* n floats in [0, 1) of tf.random.stateless_uniform(shape of n elements, dtype float32) on the
** stream (the AUTO_SELECT algorithm is Philox on CPU): block i = the cipher of ctr + i gives
** floats 4i .. 4i+3, each word's low 23 bits as the mantissa of a float in [1, 2) minus 1
** (random_distributions.h Uint32ToFloat). The state's counter is left past the blocks used. */
void philox_tf_uniform(philox_state *s, float *out, size_t n);

#endif
