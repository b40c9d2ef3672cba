/*
** fuzz_scenario.c: the scenario loader on arbitrary bytes: the YAML reader, the overrides
** (`--set` lines after a line "--set") and every key's checks. Any input must give a scenario or
** an error, never a crash, a leak or a hang.
*/
#include "tests/fuzz/fuzz.h"

#include <stdlib.h>
#include <string.h>

#include "scenarios/config/scenario.h"
#include "scenarios/config/yamltree.h"
#include "tests/fuzz/overrides.h"

int fuzz_scenario(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (text == NULL) return 0;
  memcpy(text, data, size);
  text[size] = 0;
  if (strlen(text) != size) {  /* libyaml reads C strings here: a NUL ends the document */
    free(text);
    return 0;
  }
  char *sets = strstr(text, "\n--set\n");
  if (sets) *sets = 0;
  yt_error ye;
  yt_doc *doc = yt_parse_text(text, "fuzz.yaml", 0, 0, &ye);
  fuzz_load_overridden(doc, sets ? sets + 7 : NULL, "/nonexistent/fuzz.yaml");
  free(text);
  return 0;
}

#ifdef PODSIM_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fuzz_scenario(data, size); }
#endif
