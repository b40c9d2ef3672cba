/* error.h: errors from models/ that point at a place in an input file. */
#ifndef PODSIM_MODELS_ERROR_H
#define PODSIM_MODELS_ERROR_H

typedef struct md_error {
  int  line;              /* 1-based line in the file the error is about, 0 if none */
  int  col;               /* 1-based column, 0 if none */
  char msg[512];          /* what was expected and what was found */
} md_error;

#endif
