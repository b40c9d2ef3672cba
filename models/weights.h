/*
** weights.h: weights CSV `variable,flat_index,value`, printed with 9 significant digits so
** that strtof reads back the same float32 bits.
*/
#ifndef PODSIM_WEIGHTS_H
#define PODSIM_WEIGHTS_H

#include <stdio.h>
#include "models/model.h"

/* Writes every variable of m (header included; a shapes-only model has no values, so only the
** header). Returns 0 or -1 on an I/O error. */
int md_weights_write(const md_model *m, FILE *out);
/* Reads a weights CSV into m: every element of every variable must be given exactly once;
** unknown variables, indices out of range, missing elements and bad numbers are errors
** with the line and column in err. Returns 0 or -1. */
int md_weights_read(md_model *m, const char *path, md_error *err);
/* Formats one float so that strtof gives the same bits back ("%.9g"). */
void md_format_float(char *buf, size_t len, float v);

#endif
