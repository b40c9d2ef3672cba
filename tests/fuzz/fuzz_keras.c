/*
** fuzz_keras.c: a Keras model config (model.to_json(), tfjs's model.toJSON()) as model: {keras:
** FILE} reads it, and the model built on shapes from every config it accepts.
*/
#include "tests/fuzz/fuzz.h"

#include "models/keras.h"
#include "models/model.h"

int fuzz_keras(const uint8_t *data, size_t size) {
  md_keras_model k;
  md_error err;
  if (md_keras_parse((const char *)data, size, &k, &err) != 0) return 0;
  md_model_spec spec = md_keras_model_spec(&k);
  spec.shapes_only = 1;
  md_model_free(md_model_new(&spec, &err));
  md_keras_free(&k);
  return 0;
}

#ifdef PODSIM_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fuzz_keras(data, size); }
#endif
