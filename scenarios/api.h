/*
** api.h: podsim's run, check and plan as calls, for the command line (scenarios/main.c) and for
** programs that load libpodsim.so (the Python package, python/podsim, through ctypes).
**
** podsim_command is the command line's own code: it writes what the CLI prints to the streams
** it is given and leaves the process's signal handlers and OOM handler to its caller.
** podsim_api_run, _check and _plan run podsim_command in a forked child and hand its outcome
** back in a podsim_api_result: the library keeps process state a host program must not share
** (train_stop_request, which it never clears; the OOM handler, which exits; SIGINT and SIGTERM
** handlers), so each call gets a process of its own, and a crash or an out-of-memory exit ends
** the child, not the host.
*/
#ifndef PODSIM_API_H
#define PODSIM_API_H

#include <stddef.h>
#include <stdio.h>

#include "scenarios/config/scenario.h"

/* One command of the CLI: what `podsim COMMAND FILE [-o DIR] [--set ...] [-j N] [--quiet]` asks. */
typedef struct podsim_request {
  const char *command;       /* "run" | "check" | "plan" */
  const char *file;          /* the scenario */
  const char *const *sets;   /* --set KEY=VALUE texts */
  int nsets;                 /* entries in sets */
  const char *out_dir;       /* -o, or NULL: outputs.dir, else out/<name> */
  int quiet;                 /* --quiet: the run_hash line only */
  int jobs;                  /* plan -j: points run at once (0: the online CPUs) */
  int progress;              /* run --progress: progress lines on stderr, terminal or not */
} podsim_request;

/* What a command did besides its exit status: the refusal's place, the directory written. */
typedef struct podsim_outcome {
  scn_error error;           /* the scenario's refusal (error.line 0: none, or not in a file) */
  char out_dir[4096];        /* the directory the outputs went to ("" when none were written) */
  unsigned long long run_hash; /* run and its workload form: the run's hash (0: none) */
} podsim_outcome;

/* Runs RQ: what the CLI prints goes to OUT (stdout) and ERRS (stderr); *OC (may be NULL) is
** filled. Returns the CLI's exit status (0, 1 expect, 2 input, 3 job failed, 128 + signal). */
int  podsim_command(const podsim_request *rq, FILE *out, FILE *errs, podsim_outcome *oc);
/* Asks the command under way to stop (a signal handler's work: async-signal-safe). */
void podsim_stop(int sig);
/* SIGINT and SIGTERM call podsim_stop; the handler is reset after the first, so a second
** one ends the process at once. */
void podsim_catch_stop_signals(void);
/* base's OOM handler for a process running podsim_command: discards the stage it opened,
** says so on stderr and exits 2. */
void podsim_out_of_memory(size_t bytes);

/* The outcome of a podsim_api_* call, laid out for ctypes (python/podsim/_lib.py mirrors it). */
enum { PODSIM_API_PATH = 4096, PODSIM_API_TEXT = 16384 };
typedef struct podsim_api_result {
  int  status;                      /* the CLI's exit status for the same command */
  int  line;                        /* the refusal's line, 1-based (0: none) */
  int  col;                         /* its column, 1-based */
  char file[PODSIM_API_PATH];       /* the file it is in */
  char key[256];                    /* the key path it names ("training.steps") */
  char out_dir[PODSIM_API_PATH];    /* the directory written ("": none) */
  char run_hash[24];                /* 16 hex digits ("": none) */
  char output[PODSIM_API_TEXT];     /* what the CLI prints on stdout (--quiet), cut at the size */
  char messages[PODSIM_API_TEXT];   /* what it prints on stderr */
} podsim_api_result;

/* podsim run / check / plan SCENARIO [-o OUT_DIR] [--set OVERRIDES[i]]...: OVERRIDES is a
** NULL-terminated list (NULL: none), OUT_DIR NULL for the scenario's own (check ignores it),
** JOBS plan's -j (0: the CPUs). Each returns the exit status, also in res->status. */
int  podsim_api_run(const char *scenario, const char *const *overrides, const char *out_dir,
                    podsim_api_result *res);
int  podsim_api_check(const char *scenario, const char *const *overrides, podsim_api_result *res);
int  podsim_api_plan(const char *scenario, const char *const *overrides, const char *out_dir,
                     int jobs, podsim_api_result *res);

#endif
