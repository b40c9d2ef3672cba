/*
** test_fuzz_replay.c: every input of tests/fuzz/corpus/NAME/ (the seeds, and every input that
** once crashed a reader: crash_*) through its harness, under `make test`'s sanitizers: a reader
** that crashes, leaks or trips UBSan on one of them fails here without libFuzzer.
*/
#include "tests/testutil.h"

#include <dirent.h>

#include "tests/fuzz/fuzz_csv.c"
#include "tests/fuzz/fuzz_diff.c"
#include "tests/fuzz/fuzz_keras.c"
#include "tests/fuzz/fuzz_overrides.c"
#include "tests/fuzz/fuzz_scenario.c"
#include "tests/fuzz/fuzz_tf_config.c"

/* Runs each file of tests/fuzz/corpus/dir through harness, in name order; returns how many. */
static int replay(const char *dir, int (*harness)(const uint8_t *, size_t)) {
  char path[1024];
  snprintf(path, sizeof path, "%s", tu_src("tests/fuzz/corpus"));
  snprintf(path + strlen(path), sizeof path - strlen(path), "/%s", dir);
  struct dirent **names;
  int n = scandir(path, &names, NULL, alphasort);
  assert_true(n > 2);
  int ran = 0;
  for (int i = 0; i < n; i++) {
    char file[1400];
    snprintf(file, sizeof file, "%s/%s", path, names[i]->d_name);
    FILE *f = names[i]->d_name[0] == '.' ? NULL : fopen(file, "rb");
    if (f) {
      static uint8_t buf[1 << 20];
      size_t size = fread(buf, 1, sizeof buf, f);
      fclose(f);
      assert_int_equal(harness(buf, size), 0);
      ran++;
    }
    free(names[i]);
  }
  free(names);
  return ran;
}

static void corpus_replays(void **state) {
  (void)state;
  assert_true(replay("scenario", fuzz_scenario) > 50);
  assert_true(replay("tf_config", fuzz_tf_config) >= 4);
  assert_true(replay("csv", fuzz_csv) > 10);
  assert_true(replay("keras", fuzz_keras) >= 8);
  assert_true(replay("diff", fuzz_diff) >= 4);
  assert_true(replay("overrides", fuzz_overrides) >= 17);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(corpus_replays),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
