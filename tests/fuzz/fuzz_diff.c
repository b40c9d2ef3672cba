/*
** fuzz_diff.c: `podsim diff` (scenarios/report/diff.c) on a run directory made of arbitrary bytes:
** everything before the first line "---" is its summary.json, everything after its metrics.csv
** (no such line: all of it is summary.json, and metrics.csv is empty). The directory is compared
** with itself, charts drawn, both readers and the printer on the same hostile input.
*/
#include "tests/fuzz/fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scenarios/report/diff.h"
#include "scenarios/report/outputs.h"

static int write_part(const char *dir, const char *name, const uint8_t *data, size_t size) {
  char path[256];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (f == NULL) return -1;
  size_t put = fwrite(data, 1, size, f);
  return fclose(f) != 0 || put != size ? -1 : 0;
}

int fuzz_diff(const uint8_t *data, size_t size) {
  char dir[] = "/tmp/podsim-fuzz-diff-XXXXXX", charts[300];
  if (mkdtemp(dir) == NULL) return 0;
  const uint8_t *sep = NULL;
  for (size_t i = 0; i + 4 <= size && sep == NULL; i++)
    if ((i == 0 || data[i - 1] == '\n') && !memcmp(data + i, "---\n", 4)) sep = data + i;
  size_t head = sep ? (size_t)(sep - data) : size;
  const uint8_t *tail = sep ? sep + 4 : data + size;
  if (write_part(dir, "summary.json", data, head) == 0 &&
      write_part(dir, "metrics.csv", tail, (size_t)(data + size - tail)) == 0) {
    char msg[1024];
    FILE *out = fopen("/dev/null", "w");
    snprintf(charts, sizeof charts, "%s/charts", dir);
    if (out) {
      diff_runs(dir, dir, charts, out, msg, sizeof msg);
      fclose(out);
    }
  }
  outputs_remove_tree(dir);
  return 0;
}

#ifdef PODSIM_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fuzz_diff(data, size); }
#endif
