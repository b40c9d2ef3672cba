/*
** fuzz.h: the readers' fuzz harnesses (tests/fuzz/fuzz_*.c), each a function of the bytes of one
** input. `make fuzz` builds each with libFuzzer (clang, ASan+UBSan) around LLVMFuzzerTestOneInput;
** `make test` replays every input of tests/fuzz/corpus/NAME/ through them (test_fuzz_replay.c),
** so a crash found once stays a regression test.
*/
#ifndef PODSIM_FUZZ_H
#define PODSIM_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* A scenario file (and, after a line "--set", one override per line), loaded and validated. */
int fuzz_scenario(const uint8_t *data, size_t size);
/* TF_CONFIG JSON text, read by ParameterServerStrategy's cluster resolver and the strategy built. */
int fuzz_tf_config(const uint8_t *data, size_t size);
/* A dataset CSV (labels in the last column, 3 classes) and the same bytes as a weights file. */
int fuzz_csv(const uint8_t *data, size_t size);
/* A Keras model config (JSON), read into layer specs and the model built on shapes. */
int fuzz_keras(const uint8_t *data, size_t size);
/* A run directory for `podsim diff`: summary.json, a line "---", metrics.csv; compared with itself. */
int fuzz_diff(const uint8_t *data, size_t size);
/* A real example (the first byte picks it) with the rest's lines applied as --set overrides, loaded. */
int fuzz_overrides(const uint8_t *data, size_t size);

#endif
