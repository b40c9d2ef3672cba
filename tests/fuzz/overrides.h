/*
** overrides.h: what fuzz_scenario and fuzz_overrides do once they have a parsed tree: apply the
** `--set` lines (one per line of `lines`, NULL or "" for none, the CLI's override syntax) in order,
** then load and validate the scenario as `podsim check` does. Frees doc.
*/
#ifndef PODSIM_FUZZ_OVERRIDES_H
#define PODSIM_FUZZ_OVERRIDES_H

#include <string.h>

#include "scenarios/config/scenario.h"
#include "scenarios/config/yamltree.h"

static inline void fuzz_load_overridden(yt_doc *doc, char *lines, const char *path) {
  yt_error ye;
  for (char *line = lines; doc && line && *line;) {
    char *end = strchr(line, '\n');
    if (end) *end = 0;
    if (yt_apply_override(doc, line, 0, &ye) != 0) {
      yt_doc_free(doc);
      doc = NULL;
    }
    line = end ? end + 1 : NULL;
  }
  if (doc == NULL) return;
  static scenario s;
  scn_error err;
  scenario_from_tree(doc, path, &s, &err);
  yt_doc_free(doc);
}

#endif
