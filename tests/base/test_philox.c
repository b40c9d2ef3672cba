/*
** test_philox.c: Philox4x32-10 against Random123's known answers and TensorFlow's stateless
** uniforms (base/philox.h).
*/
#include "tests/testutil.h"

#include "base/philox.h"

static void expect_block(const uint32_t ctr[4], const uint32_t key[2], const uint32_t want[4]) {
  uint32_t out[4];
  philox4x32_10(ctr, key, out);
  for (int i = 0; i < 4; i++) assert_int_equal(out[i], want[i]);
}

/* Random123's kat_vectors, "philox4x32 10": counter and key all zeros, all ones, and pi's digits. */
static void random123_known_answers(void **state) {
  (void)state;
  expect_block((uint32_t[]){0, 0, 0, 0}, (uint32_t[]){0, 0},
               (uint32_t[]){0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u});
  expect_block((uint32_t[]){~0u, ~0u, ~0u, ~0u}, (uint32_t[]){~0u, ~0u},
               (uint32_t[]){0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu});
  expect_block((uint32_t[]){0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, (uint32_t[]){0xa4093822u, 0x299f31d0u},
               (uint32_t[]){0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u});
}

/* TensorFlow 2.21's key, counter and first 7 uniforms for three seeds, printed by
**   python -c 'import tensorflow as tf; s = tf.constant(SEED, tf.int32);
**     k, c = tf.raw_ops.StatelessRandomGetKeyCounter(seed=s);
**     print(k.numpy(), c.numpy(), [float.hex(float(v)) for v in tf.random.stateless_uniform([7], seed=s)])'
** (the venv's python): 7 floats take two blocks, the second one's last float unused. */
static void tensorflow_stateless_uniform(void **state) {
  (void)state;
  static const struct {
    int64_t seed[2];      /* the op's seed */
    uint64_t key, ctr_hi; /* TF's key and counter[1] (counter[0] is 0) */
    float u[7];           /* tf.random.stateless_uniform([7], seed) */
  } cases[] = {
    {{1, 0}, 0x45b1837289544a39u, 0xa278da504014df35u,
     {0x1.c1c934p-1f, 0x1.d7051p-2f, 0x1.33596p-1f, 0x1.92052p-2f, 0x1.034518p-2f, 0x1.c6f66p-2f, 0x1.5f24bp-2f}},
    {{7, 3}, 0xe47509d420d089cbu, 0x9ec90a014c5bde13u,
     {0x1.f6ae9p-1f, 0x1.953948p-2f, 0x1.71dc24p-1f, 0x1.8ae23cp-1f, 0x1.5c856p-1f, 0x1.9adf2p-3f, 0x1.130ee4p-1f}},
    {{123456789, 2}, 0x0d3cd7182d759ffcu, 0xc761af43c0431542u,
     {0x1.391d5p-1f, 0x1.205314p-1f, 0x1.ae9654p-1f, 0x1.12d59cp-1f, 0x1.ab4064p-1f, 0x1.39cca4p-1f, 0x1.999e9p-2f}},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    philox_state s;
    philox_tf_stream(&s, cases[c].seed[0], cases[c].seed[1]);
    assert_int_equal(((uint64_t)s.key[1] << 32) | s.key[0], cases[c].key);
    assert_int_equal(s.ctr[0], 0);
    assert_int_equal(s.ctr[1], 0);
    assert_int_equal(((uint64_t)s.ctr[3] << 32) | s.ctr[2], cases[c].ctr_hi);
    float u[7];
    philox_tf_uniform(&s, u, 7);
    for (int i = 0; i < 7; i++) assert_true(u[i] == cases[c].u[i]);
    assert_int_equal(s.ctr[0], 2);  /* two blocks used */
  }
}

/* The counter carries between its words (SkipOne): from 0xffffffff in word 0 one block moves it
** to 0 with word 1 at 1; the block drawn is the cipher of the counter before the move. */
static void the_counter_carries(void **state) {
  (void)state;
  philox_state s = {.ctr = {~0u, 0, 5, 6}, .key = {1, 2}};
  uint32_t block[4];
  philox4x32_10(s.ctr, s.key, block);
  float u[4];
  philox_tf_uniform(&s, u, 4);
  assert_int_equal(s.ctr[0], 0);
  assert_int_equal(s.ctr[1], 1);
  assert_int_equal(s.ctr[2], 5);
  /* word 0's low 23 bits over 2^23 */
  assert_true(u[0] == (float)(block[0] & 0x7fffffu) / 8388608.0f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(random123_known_answers),
    cmocka_unit_test(tensorflow_stateless_uniform),
    cmocka_unit_test(the_counter_carries),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
