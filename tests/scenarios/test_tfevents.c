/*
** test_tfevents.c: TensorBoard event files byte for byte (scenarios/report/tfevents.h) and a
** run's goodput scalar across a rollback (scenarios/report/tboard.h).
*/
#include "tests/testutil.h"

#include "scenarios/report/tboard.h"
#include "scenarios/report/tfevents.h"

/* The whole file at path into buf (at most max bytes); returns its length. */
static size_t slurp(const char *path, unsigned char *buf, size_t max) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  size_t n = fread(buf, 1, max, f);
  fclose(f);
  return n;
}

/* The file_version record and one scalar record, worked out by hand from event.proto and
** summary.proto; the four CRCs by /usr/lib/python3/dist-packages/crcmod (crc-32c), an
** implementation independent of base/crc32c.c, then masked as TFRecord does.
**   file_version Event, 24 bytes: 09 <wall_time 0.0: 8 zero bytes> 1a 0d "brain.Event:2"
**   scalar Event, 23 bytes: 09 <0.5 = 0x3FE0000000000000 LE: 00 00 00 00 00 00 e0 3f>
**     10 01 (step 1)  2a 0a (summary, 10 bytes)  0a 08 (value, 8 bytes)  0a 01 61 (tag "a")
**     15 00 00 80 3f (simple_value 1.0f = 0x3F800000)
**   each framed as u64 length LE, masked crc32c(length), data, masked crc32c(data):
**   lengths 24 -> mask 0x224b7fa3, data -> 0xa328dfee; 23 -> 0x1ef8cee7, data -> 0xd4365127. */
static void records_are_framed_byte_for_byte(void **state) {
  (void)state;
  static const unsigned char want[] = {
    0x18, 0, 0, 0, 0, 0, 0, 0, 0xa3, 0x7f, 0x4b, 0x22,
    0x09, 0, 0, 0, 0, 0, 0, 0, 0, 0x1a, 0x0d, 'b', 'r', 'a', 'i', 'n', '.', 'E', 'v', 'e', 'n', 't', ':', '2',
    0xee, 0xdf, 0x28, 0xa3,
    0x17, 0, 0, 0, 0, 0, 0, 0, 0xe7, 0xce, 0xf8, 0x1e,
    0x09, 0, 0, 0, 0, 0, 0, 0xe0, 0x3f, 0x10, 0x01, 0x2a, 0x0a, 0x0a, 0x08, 0x0a, 0x01, 'a',
    0x15, 0x00, 0x00, 0x80, 0x3f,
    0x27, 0x51, 0x36, 0xd4,
  };
  char *dir = tu_temp_dir("tfev");
  char sub[512], path[1024], msg[256] = "";
  snprintf(sub, sizeof sub, "%s/train", dir);
  tfev_writer *w = tfev_open(sub, 0.0, "podsim", msg, sizeof msg);
  assert_non_null(w);
  tfev_scalar v = {"a", 1.0};
  assert_int_equal(tfev_write_scalars(w, 1, 0.5, &v, 1), 0);
  assert_int_equal(tfev_close(w), 0);
  snprintf(path, sizeof path, "%s/events.out.tfevents.0000000000.podsim", sub);
  unsigned char got[256];
  size_t n = slurp(path, got, sizeof got);
  assert_int_equal(n, sizeof want);
  assert_memory_equal(got, want, sizeof want);
  tu_remove_dir(dir);
}

/* A directory that cannot be made is an error with its path, not a crash. */
static void an_unwritable_directory_is_refused(void **state) {
  (void)state;
  char msg[256] = "";
  assert_null(tfev_open("/proc/podsim-no/train", 0.0, "podsim", msg, sizeof msg));
  assert_non_null(strstr(msg, "/proc/podsim-no"));
}

/* The last goodput value in the file: the 4 bytes after its last "goodput" tag and the
** simple_value key (15). */
static float last_goodput(const unsigned char *buf, size_t n) {
  static const unsigned char tag[] = {0x0a, 0x07, 'g', 'o', 'o', 'd', 'p', 'u', 't', 0x15};
  const unsigned char *at = NULL;
  for (size_t i = 0; i + sizeof tag + 4 <= n; i++)
    if (memcmp(buf + i, tag, sizeof tag) == 0) at = buf + i + sizeof tag;
  assert_non_null(at);
  float x;
  memcpy(&x, at, sizeof x);
  return x;
}

/* Goodput at a row counts the steps still kept then. Steps 0 (1 s, 0.5 s of it compile) and 1
** (1 s) end at 1 s and 2 s; a restart replays step 1, ending at 4 s. At the last row step 1's
** first run no longer counts: (0.5 + 1) / 4 = 0.375 (a plain sum would say 2.5 / 4 = 0.625).
** The second row's goodput, 1.5 / 2 = 0.75, is checked on a file of the first two rows. */
static void goodput_drops_rolled_back_steps(void **state) {
  (void)state;
  const int64_t S = 1000000000000LL;
  step_record rows[3] = {
    {.step = 0, .end_ps = S, .step_ps = S, .compile_ps = S / 2, .examples = 8, .loss = 1.0},
    {.step = 1, .end_ps = 2 * S, .step_ps = S, .examples = 8, .loss = 0.9},
    {.step = 1, .end_ps = 4 * S, .step_ps = S, .examples = 8, .loss = 0.9, .restarts = 1},
  };
  outputs_columns cols = {.restart = 1};
  char *dir = tu_temp_dir("tboard");
  char path[1024], msg[256] = "";
  snprintf(path, sizeof path, "%s/train/events.out.tfevents.0000000000.podsim", dir);
  unsigned char buf[4096];
  assert_int_equal(tboard_write_run(dir, rows, 2, &cols, msg, sizeof msg), 0);
  assert_float_equal(last_goodput(buf, slurp(path, buf, sizeof buf)), 0.75, 1e-7);
  assert_int_equal(tboard_write_run(dir, rows, 3, &cols, msg, sizeof msg), 0);
  assert_float_equal(last_goodput(buf, slurp(path, buf, sizeof buf)), 0.375, 1e-7);
  tu_remove_dir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(records_are_framed_byte_for_byte),
    cmocka_unit_test(an_unwritable_directory_is_refused),
    cmocka_unit_test(goodput_drops_rolled_back_steps),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
