/*
** inputs.c: several model inputs (md_inputs_), as Keras's functional API builds a model of
** several Input layers: DLRM's dense features and one id column per embedding table. A batch
** holds every input's columns of an example side by side, in the inputs' order (the dataset's
** columns, mapped by the scenario's dataset.inputs); an id input's ids are float values there,
** as a float tensor fed to Keras's Embedding is cast to int32 (exact below 2^24, which
** md_inputs_check_ids checks with the rest). Each pass first splits the batch into one
** contiguous buffer per input (md_inputs_split), so every layer reads its input as it reads the
** one input of a single-input model.
**
** Invariants:
**   1. An id is an integer value in [0, vocab): md_inputs_check_ids refuses the data otherwise,
**      so md_inputs_split's conversion to int32 is exact.
**   2. Under a mixed policy a float input is rounded to the compute dtype, ids never (Keras casts
**      only floating inputs to the compute dtype).
*/
#include <assert.h>
#include <math.h>
#include <string.h>

#include "models/modelsInt.h"

/* Ids above this lose exactness as float32 values. */
#define MD_INPUTS_EXACT_ID 16777216.0

int md_inputs_width(const md_model_input *in, int n) {
  int width = 0;
  for (int k = 0; k < n; k++) width += in[k].features + in[k].ids;
  return width;
}

md_shape md_inputs_shape(const md_model_input *in) {
  return (md_shape){.rank = 1, .dim = {in->features > 0 ? in->features : in->ids}};
}

int md_inputs_find(const md_model_input *in, int n, const char *name) {
  for (int k = 0; k < n; k++)
    if (strcmp(in[k].name, name) == 0) return k;
  return -1;
}

int md_inputs_check(const md_model_spec *spec, md_error *err) {
  if (spec->ninputs < 0 || spec->ninputs > MD_MAX_MODEL_INPUTS || (spec->ninputs > 0 && spec->inputs == NULL))
    return md_error_set(err, 0, 0, "expected 1 to %d model inputs, found %d", MD_MAX_MODEL_INPUTS, spec->ninputs);
  if (spec->ninputs > 0 && (spec->input_features || spec->input_ids || spec->input_shape.rank))
    return md_error_set(err, 0, 0, "give the model's inputs either as inputs or as input_features, input_shape "
                        "or input_ids, not both");
  for (int k = 0; k < spec->ninputs; k++) {
    const md_model_input *in = &spec->inputs[k];
    if (in->name[0] == '\0' || md_inputs_find(spec->inputs, k, in->name) >= 0)
      return md_error_set(err, 0, 0, "model input %d needs a name no earlier input has (found \"%s\")", k, in->name);
    if ((in->features > 0) == (in->ids > 0) || in->features < 0 || in->ids < 0)
      return md_error_set(err, 0, 0, "model input %s: give features or ids (one of them > 0), found %d and %d",
                          in->name, in->features, in->ids);
    if (in->ids > 0 && in->vocab <= 0)
      return md_error_set(err, 0, 0, "model input %s: ids need vocab > 0, found %d", in->name, in->vocab);
  }
  return 0;
}

int md_inputs_check_ids(const md_model_input *in, int n, const float *x, size_t rows, md_inputs_bad *bad) {
  int width = md_inputs_width(in, n);
  for (size_t r = 0; r < rows; r++)
    for (int k = 0, col = 0; k < n; col += in[k].features + in[k].ids, k++)
      for (int j = 0; j < in[k].ids; j++) {
        double v = x[r * (size_t)width + (size_t)(col + j)];
        if (v == floor(v) && v >= 0 && v < in[k].vocab && v < MD_INPUTS_EXACT_ID) continue;
        *bad = (md_inputs_bad){.row = r, .column = col + j, .input = k, .value = v};
        return -1;
      }
  return 0;
}

void md_inputs_split(const md_model *m, md_workspace *w, const md_batch *b) {
  int width = md_inputs_width(m->inputs, m->ninputs);
  for (int k = 0, col = 0; k < m->ninputs; col += m->inputs[k].features + m->inputs[k].ids, k++) {
    const md_model_input *in = &m->inputs[k];
    for (int i = 0; i < b->n; i++) {
      const float *row = b->x + (size_t)i * width + col;
      if (in->features > 0) {
        memcpy(w->in_x[k] + (size_t)i * in->features, row, sizeof(float) * (size_t)in->features);
        continue;
      }
      for (int j = 0; j < in->ids; j++) {
        assert(row[j] >= 0 && row[j] < in->vocab);
        w->in_ids[k][(size_t)i * in->ids + j] = (int32_t)row[j];
      }
    }
    if (in->features > 0 && m->policy != MD_POLICY_FLOAT32)
      md_round_to_policy(m->policy, w->in_x[k], (size_t)b->n * in->features);
  }
}

void md_inputs_reserve(const md_model *m, md_workspace *w, int n) {
  for (int k = 0; k < m->ninputs; k++) {
    size_t count = (size_t)n * (size_t)(m->inputs[k].features + m->inputs[k].ids);
    if (m->inputs[k].features > 0) w->in_x[k] = base_xrealloc(w->in_x[k], sizeof(float) * count);
    else w->in_ids[k] = base_xrealloc(w->in_ids[k], sizeof(int32_t) * count);
  }
}
