/*
** fuzz_overrides.c: `--set` overrides on the real examples (every .yaml of scenarios/examples). The first
** byte picks the example (in name order, modulo their count), the rest are override lines, each
** applied as the CLI applies --set; the tree is then loaded and validated as `podsim check` does.
** Where fuzz_scenario mutates whole documents, most of them invalid early, this keeps every key
** of a valid scenario in place and explores values and paths one override at a time: the
** surface the audit of issue 29 broke (`--set` on real examples).
*/
#include "tests/fuzz/fuzz.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scenarios/config/scenario.h"
#include "scenarios/config/yamltree.h"
#include "tests/fuzz/overrides.h"

#ifndef PODSIM_SOURCE_DIR
#define PODSIM_SOURCE_DIR "."
#endif

#define FUZZ_MAX_EXAMPLES 64

/* The examples' paths in name order, read once. */
static char example_paths[FUZZ_MAX_EXAMPLES][512];
static int n_examples = -1;

static int is_yaml(const struct dirent *d) {
  size_t n = strlen(d->d_name);
  return n > 5 && !strcmp(d->d_name + n - 5, ".yaml");
}

static void find_examples(void) {
  struct dirent **names;
  int n = scandir(PODSIM_SOURCE_DIR "/scenarios/examples", &names, is_yaml, alphasort);
  n_examples = 0;
  for (int i = 0; i < n; i++) {
    if (n_examples < FUZZ_MAX_EXAMPLES)
      snprintf(example_paths[n_examples++], sizeof example_paths[0], "%s/scenarios/examples/%s",
               PODSIM_SOURCE_DIR, names[i]->d_name);
    free(names[i]);
  }
  if (n > 0) free(names);
}

int fuzz_overrides(const uint8_t *data, size_t size) {
  if (n_examples < 0) find_examples();
  if (n_examples == 0 || size == 0) return 0;
  const char *path = example_paths[data[0] % n_examples];
  char *text = malloc(size);
  if (text == NULL) return 0;
  memcpy(text, data + 1, size - 1);
  text[size - 1] = 0;
  yt_error ye;
  /* A NUL ends the lines as it ends a command-line argument. */
  fuzz_load_overridden(yt_parse_file(path, &ye), text, path);
  free(text);
  return 0;
}

#ifdef PODSIM_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fuzz_overrides(data, size); }
#endif
