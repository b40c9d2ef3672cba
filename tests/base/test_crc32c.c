/*
** test_crc32c.c: CRC-32C check values (base/crc32c.h).
*/
#include "tests/testutil.h"

#include "base/crc32c.h"

/* RFC 3720 (iSCSI) B.4's vectors: 32 zero bytes 0x8A9136AA, 32 0xFF bytes 0x62A8AB43, bytes
** 0..31 ascending 0x46DD794E; and the catalogue's check value for "123456789", 0xE3069283. */
static void rfc3720_vectors(void **state) {
  (void)state;
  unsigned char b[32];
  memset(b, 0, sizeof b);
  assert_int_equal(crc32c_extend(0, b, sizeof b), 0x8A9136AAu);
  memset(b, 0xff, sizeof b);
  assert_int_equal(crc32c_extend(0, b, sizeof b), 0x62A8AB43u);
  for (int i = 0; i < 32; i++) b[i] = (unsigned char)i;
  assert_int_equal(crc32c_extend(0, b, sizeof b), 0x46DD794Eu);
  assert_int_equal(crc32c_extend(0, "123456789", 9), 0xE3069283u);
  assert_int_equal(crc32c_extend(0, "", 0), 0u);
}

/* Extending in pieces gives the CRC of the whole: "1234" then "56789". */
static void extending_continues_the_crc(void **state) {
  (void)state;
  assert_int_equal(crc32c_extend(crc32c_extend(0, "1234", 4), "56789", 5), 0xE3069283u);
}

/* The mask of 0xE3069283: rotated right 15 is (0xE3069283 >> 15) | (0xE3069283 << 17 mod 2^32)
** = 0x0001C60D | 0x25060000 = 0x2507C60D; plus 0xA282EAD8 = 0xC78AB0E5. */
static void the_mask_rotates_and_offsets(void **state) {
  (void)state;
  assert_int_equal(crc32c_mask(0xE3069283u), 0xC78AB0E5u);
  assert_int_equal(crc32c_mask(0), 0xA282EAD8u);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(rfc3720_vectors),
    cmocka_unit_test(extending_continues_the_crc),
    cmocka_unit_test(the_mask_rotates_and_offsets),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
