/*
** philox.c: Philox4x32-10 and TensorFlow's use of it (philox.h), after
** tensorflow/core/lib/random/philox_random.h (the round, the key schedule, SkipOne's carry)
** and random_distributions.h (Uint32ToFloat).
*/
#include "base/philox.h"

#include <string.h>

enum {
  PHILOX_M0 = 0xD2511F53u, /* the multipliers of the round's two 32x32->64 products */
  PHILOX_M1 = 0xCD9E8D57u,
  PHILOX_W0 = 0x9E3779B9u, /* the key's increments between rounds (golden ratio, sqrt(3) - 1) */
  PHILOX_W1 = 0xBB67AE85u,
  PHILOX_ROUNDS = 10       /* Random123's and TensorFlow's default, the one the KATs pin */
};

static void philox_round(uint32_t c[4], const uint32_t k[2]) {
  uint64_t p0 = (uint64_t)PHILOX_M0 * c[0], p1 = (uint64_t)PHILOX_M1 * c[2];
  uint32_t r[4] = {(uint32_t)(p1 >> 32) ^ c[1] ^ k[0], (uint32_t)p1, (uint32_t)(p0 >> 32) ^ c[3] ^ k[1],
                   (uint32_t)p0};
  memcpy(c, r, sizeof r);
}

void philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  uint32_t c[4] = {ctr[0], ctr[1], ctr[2], ctr[3]}, k[2] = {key[0], key[1]};
  for (int round = 0; round < PHILOX_ROUNDS; round++) {
    if (round > 0) {
      k[0] += PHILOX_W0;
      k[1] += PHILOX_W1;
    }
    philox_round(c, k);
  }
  memcpy(out, c, sizeof c);
}

/* The counter plus one, carrying through its four words (PhiloxRandom::SkipOne). */
static void philox_skip_one(uint32_t c[4]) {
  for (int i = 0; i < 4 && ++c[i] == 0; i++) continue;
}

void philox_tf_stream(philox_state *s, int64_t seed0, int64_t seed1) {
  uint64_t a = (uint64_t)seed0, b = (uint64_t)seed1;
  uint32_t ctr[4] = {(uint32_t)a, (uint32_t)(a >> 32), (uint32_t)b, (uint32_t)(b >> 32)};
  uint32_t key[2] = {0x3ec8f720u, 0x02461e29u}, mix[4];
  philox4x32_10(ctr, key, mix);
  s->key[0] = mix[0];
  s->key[1] = mix[1];
  s->ctr[0] = s->ctr[1] = 0;
  s->ctr[2] = mix[2];
  s->ctr[3] = mix[3];
}

/* The float in [1, 2) of the word's low 23 bits as mantissa, minus 1: exact, so in [0, 1) on a
** grid of 2^-23 (Uint32ToFloat). */
static float philox_word_float(uint32_t w) {
  uint32_t bits = (127u << 23) | (w & 0x7fffffu);
  float f;
  memcpy(&f, &bits, sizeof f);
  return f - 1.0f;
}

void philox_tf_uniform(philox_state *s, float *out, size_t n) {
  for (size_t i = 0; i < n; i += 4) {
    uint32_t block[4];
    philox4x32_10(s->ctr, s->key, block);
    philox_skip_one(s->ctr);
    for (size_t j = 0; j < 4 && i + j < n; j++) out[i + j] = philox_word_float(block[j]);
  }
}
