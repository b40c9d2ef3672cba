/*
** main.c: the podsim command line. Exit statuses: 0 done, 1 an `expect` failed, 2 bad
** scenario or usage, or outputs that cannot be written (nothing written), 3 the simulated job
** failed (outputs written), 130 / 143 stopped by SIGINT / SIGTERM (nothing written).
**
** Outputs are whole or absent: a run or plan writes into a staging directory beside DIR
** (outputs_stage) that is renamed onto DIR only once everything is written; a refusal, an I/O
** error or a stop removes it.
*/
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scenarios/report/diff.h"
#include "scenarios/report/expect.h"
#include "scenarios/programs/plan.h"
#include "scenarios/report/report.h"
#include "scenarios/programs/train.h"
#include "scenarios/programs/workload.h"
#include "scenarios/report/outputs.h"

#define PODSIM_VERSION "0.1.0"

static const char usage[] =
  "podsim " PODSIM_VERSION ": a deterministic simulator of distributed TensorFlow training\n"
  "\n"
  "usage:\n"
  "  podsim run FILE [-o DIR] [--set KEY=VALUE]... [--quiet]\n"
  "      run the scenario; outputs go to DIR (default: outputs.dir, else out/<name>)\n"
  "  podsim check FILE [--set KEY=VALUE]...\n"
  "      validate the scenario and its input files; write nothing\n"
  "  podsim plan FILE [-o DIR] [-j N] [--set KEY=VALUE]... [--quiet]\n"
  "      run every point of the file's sweep (N at a time, default: the CPUs) into DIR/points/,\n"
  "      then write sweep.csv, report.md and report.pdf into DIR and print the recommendation\n"
  "  podsim diff A B [-o DIR]\n"
  "      compare two run directories: summary figures with their ratio B/A, the step time\n"
  "      breakdown, memory, faults, run_hash; overlay charts of step time and loss into DIR\n"
  "      (default: out/diff)\n"
  "  podsim schema\n"
  "      print the JSON Schema (draft 2020-12) of scenario files, for editors\n"
  "  podsim --help | --version\n"
  "\n"
  "--set overrides any scalar of the file, the value in YAML syntax: --set training.steps=20\n"
  "\n"
  "exit status: 0 done; 1 an expect assertion failed; 2 bad scenario or usage, or outputs that\n"
  "             cannot be written (nothing written); 3 the simulated job failed as TensorFlow\n"
  "             would (outputs written, see summary.json); 130 / 143 stopped by SIGINT / SIGTERM\n"
  "             (nothing written: DIR appears only once complete)\n"
  "\n"
  "the scenario format and every output file: docs/scenario-format.md\n";

typedef struct cli {
  const char *command;    /* run | check | plan */
  const char *file;       /* the scenario */
  const char *out_dir;    /* -o, or NULL */
  const char **sets;      /* --set KEY=VALUE texts */
  int nsets;              /* entries in sets */
  int quiet;              /* --quiet */
  int jobs;               /* plan -j: points run at once (0: the online CPUs) */
} cli;

static int usage_error(const char *what, const char *arg) {
  fprintf(stderr, "podsim: %s%s%s\nrun `podsim --help` for usage\n", what, arg ? ": " : "", arg ? arg : "");
  return TR_EXIT_INPUT;
}

static int parse_args(int argc, char **argv, cli *c) {
  c->command = argv[1];
  c->sets = calloc((size_t)argc, sizeof *c->sets);
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "-o") == 0 || strcmp(a, "--set") == 0) {
      if (i + 1 >= argc) return usage_error("missing the value after", a);
      if (a[1] == 'o') c->out_dir = argv[++i];
      else c->sets[c->nsets++] = argv[++i];
    } else if (strcmp(a, "-j") == 0 && strcmp(c->command, "plan") == 0) {
      char *end;
      long j = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : 0;
      if (i + 1 >= argc || *end != '\0' || j < 1 || j > 1024)
        return usage_error("-j takes a number of processes from 1 to 1024", i + 1 < argc ? argv[i + 1] : NULL);
      c->jobs = (int)j;
      i++;
    } else if (strncmp(a, "--set=", 6) == 0) {
      c->sets[c->nsets++] = a + 6;
    } else if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0) {
      c->quiet = 1;
    } else if (a[0] == '-') {
      return usage_error("unknown option", a);
    } else if (c->file == NULL) {
      c->file = a;
    } else {
      return usage_error("more than one scenario file given", a);
    }
  }
  if (c->file == NULL) return usage_error("no scenario file given", NULL);
  if (c->out_dir && strcmp(c->command, "check") == 0) return usage_error("check writes nothing; -o does not apply", NULL);
  return TR_EXIT_OK;
}

/* The signal that asked podsim to stop (0: none yet). */
static volatile sig_atomic_t stop_signal;
/* The stage a run writes into, and the process that opened it: a plan's point processes share
** the pointer but must never remove their parent's stage. */
static outputs_stage *live_stage;
static pid_t stage_owner;

static void on_stop_signal(int sig) {
  stop_signal = sig;
  train_stop_request = 1;
}

/* SIGINT and SIGTERM ask the run to stop at its engine's next check (within a few hundred
** events), so the staging directory is removed and the exit says so; the handler is reset
** after the first, so a second Ctrl-C ends podsim at once (a crashed run's stage keeps its
** .partial name). No SA_RESTART: a plan waiting for its points wakes up to stop them. */
static void catch_stop_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop_signal;
  sa.sa_flags = SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}

/* Ends a run that wrote nothing it keeps: removes the stage and says what became of DIR. */
static void nothing_kept(outputs_stage *st) {
  outputs_stage_discard(st);
  fprintf(stderr, "podsim: nothing kept: %s was not written%s\n", st->dir,
          access(st->dir, F_OK) == 0 ? " (the earlier one is unchanged)" : "");
}

/* A stop request ended the run (steps < 0: not a training run). Exit 128 + the signal. */
static int stopped(outputs_stage *st, long steps) {
  int sig = stop_signal ? stop_signal : SIGINT;
  const char *name = sig == SIGTERM ? "SIGTERM" : "SIGINT";
  if (steps >= 0) fprintf(stderr, "podsim: stopped by %s after %ld simulated steps\n", name, steps);
  else fprintf(stderr, "podsim: stopped by %s\n", name);
  nothing_kept(st);
  return 128 + sig;
}

/* Puts the finished stage in DIR's place. TR_EXIT_OK, or TR_EXIT_INPUT when it could not be. */
static int commit(outputs_stage *st) {
  char msg[8400];
  int rc = outputs_stage_commit(st, msg, sizeof msg);
  if (rc != 0) fprintf(stderr, "%s\n", msg);
  if (rc < 0) fprintf(stderr, "podsim: nothing kept: %s was not written\n", st->dir);
  return rc < 0 ? TR_EXIT_INPUT : TR_EXIT_OK;
}

/* A run's status when it did not finish: its error, or the stop. */
static int unfinished(outputs_stage *st, int rc, const scn_error *err, long steps) {
  if (rc == TR_STOPPED || stop_signal) return stopped(st, steps);
  fprintf(stderr, "%s\n", err->msg);
  if (strncmp(err->key, "outputs", 7) == 0) nothing_kept(st);  /* an I/O error: say what is left */
  else outputs_stage_discard(st);
  return TR_EXIT_INPUT;
}

static int run_workload(const cli *c, const scenario *s, outputs_stage *st) {
  static scn_error err;
  workload_summary w;
  const char *dir = st->dir;
  int rc = workload_run(s, st->path, &w, &err);
  if (rc != 0 || stop_signal) return unfinished(st, rc, &err, -1);
  if (commit(st) != TR_EXIT_OK) return TR_EXIT_INPUT;
  if (!c->quiet) {
    printf("podsim: %s\n", s->name);
    if (s->workload_mm_m > 0) {
      printf("  workload      matmul %d x %d x %d (m n k) %s on one %s device, %s model, %ld iterations\n",
             s->workload_mm_m, s->workload_mm_n, s->workload_mm_k, s->workload_mm_dtype ? "float32" : "bfloat16",
             w.group, w.algorithm, s->workload_iterations);
      printf("  time          %.6g s per matmul (%.4g TFLOP/s)\n", w.mean_time_s, w.tflops);
    } else {
      printf("  workload      %s by %s on %d %s ranks, %.0f bytes, %ld iterations\n", w.op, w.algorithm,
             w.ranks, w.group, s->workload_size_bytes, s->workload_iterations);
      printf("  time          %.6g s per collective (bus bandwidth %.4g GB/s)\n", w.mean_time_s, w.busbw_GBps);
    }
    printf("  outputs       %s/ (%s, summary.json%s)\n", dir, s->workload_mm_m > 0 ? "matmul.csv" : "collective.csv",
           s->trace ? ", trace.json" : "");
    printf("  events        %llu in %.3f s wall\n", (unsigned long long)w.events, w.wall_s);
  }
  printf("run_hash %016llx\n", (unsigned long long)w.run_hash);
  return TR_EXIT_OK;
}

/* The stage for DIR, before anything runs: a DIR that cannot be written is refused (exit 2),
** and so is a stop asked for while the scenario loaded. */
static int open_stage(const char *dir, outputs_stage *st) {
  char msg[8400];
  if (stop_signal) {
    memset(st, 0, sizeof *st);
    snprintf(st->dir, sizeof st->dir, "%s", dir);
    return stopped(st, -1);
  }
  if (outputs_stage_open(st, dir, msg, sizeof msg) == 0) {
    live_stage = st;
    stage_owner = getpid();
    return TR_EXIT_OK;
  }
  fprintf(stderr, "%s\n", msg);
  return TR_EXIT_INPUT;
}

/* Every point validated before any runs; a point that fails is a row of the report, so the
** plan itself exits 0 once its files are written, unless no point ran at all (each crashed or
** failed before its run): then 3, the files written all the same. Each point that did not run is
** named on stderr with its exit status. */
static int plan_crashes(const plan *p) {
  int ran = 0;
  for (int i = 0; i < plan_num_points(p); i++) {
    const plan_measure *m = &plan_point(p, i)->m;
    if (plan_point_ran(p, i)) ran++;
    else fprintf(stderr, "podsim plan: point %d did not run (%s, exit status %d): %s\n", i, m->error,
                 plan_point_exit(p, i), m->message);
  }
  return ran > 0 ? TR_EXIT_OK : TR_EXIT_JOB_FAILED;
}

static int plan_command(const cli *c) {
  static scn_error err;
  plan *p = plan_load(c->file, c->sets, c->nsets, &err);
  if (p == NULL) {
    fprintf(stderr, "%s\n", err.msg);
    return TR_EXIT_INPUT;
  }
  static outputs_stage st;  /* static: live_stage points at it */
  const char *dir = c->out_dir ? c->out_dir : plan_scenario(p)->out_dir;
  int rc;
  if (plan_mpi_ranks() > 1) {
    /* Ranks of one sweep write its points side by side: into the directory itself. */
    rc = plan_run(p, dir, c->jobs, &err);
    if (rc != 0) fprintf(stderr, "%s\n", err.msg);
    else if (!c->quiet && plan_is_root()) plan_print(p, dir, stdout);
  } else if ((rc = open_stage(dir, &st)) == TR_EXIT_OK) {
    rc = plan_run(p, st.path, c->jobs, &err);
    if (rc != 0 || stop_signal) rc = unfinished(&st, rc, &err, -1);
    else if ((rc = commit(&st)) == TR_EXIT_OK && !c->quiet) plan_print(p, st.dir, stdout);
  }
  if (rc == TR_EXIT_OK && plan_is_root()) rc = plan_crashes(p);
  plan_free(p);
  return rc;
}

static int run_command(const cli *c) {
  static scenario s;
  static scn_error err;
  if (strcmp(c->command, "plan") == 0) return plan_command(c);
  if (scenario_load(c->file, c->sets, c->nsets, &s, &err) != 0) {
    fprintf(stderr, "%s\n", err.msg);
    return TR_EXIT_INPUT;
  }
  if (strcmp(c->command, "check") == 0) {
    if ((s.has_workload ? workload_check(&s, &err) : train_check(&s, &err)) != TR_EXIT_OK) {
      fprintf(stderr, "%s\n", err.msg);
      return TR_EXIT_INPUT;
    }
    printf("%s: ok\n", c->file);
    return TR_EXIT_OK;
  }
  static outputs_stage st;  /* static: live_stage points at it */
  int rc = open_stage(c->out_dir ? c->out_dir : s.out_dir, &st);
  if (rc != TR_EXIT_OK) return rc;
  if (s.has_workload) return run_workload(c, &s, &st);
  run_summary sum = {0};  /* steps_completed is read when a stop came before the run */
  rc = train_run_cli(&s, st.path, c->quiet, &sum, &err);
  if (rc == TR_EXIT_INPUT || rc == TR_STOPPED || stop_signal) return unfinished(&st, rc, &err, sum.steps_completed);
  if (commit(&st) != TR_EXIT_OK) return TR_EXIT_INPUT;
  for (int i = 0; i < sum.nwarnings; i++) fprintf(stderr, "podsim: warning: %s\n", sum.warnings[i]);
  if (!c->quiet) report_print_summary(stdout, &s, st.dir, &sum);
  else printf("run_hash %016llx\n", (unsigned long long)sum.run_hash);
  if (expect_check(&s, &sum, stderr) > 0 && rc == TR_EXIT_OK) rc = TR_EXIT_EXPECT;
  return rc;
}

/* podsim diff A B [-o DIR]: exit 0, or 2 for usage or a directory that is not a run. */
static int diff_command(int argc, char **argv) {
  const char *dirs[2] = { NULL, NULL }, *out = "out/diff";
  int ndirs = 0;
  char msg[1024];
  for (int i = 2; i < argc; i++) {
    if (strcmp(argv[i], "-o") == 0) {
      if (i + 1 >= argc) return usage_error("missing the value after", argv[i]);
      out = argv[++i];
    } else if (argv[i][0] == '-') {
      return usage_error("unknown option", argv[i]);
    } else if (ndirs == 2) {
      return usage_error("diff takes two run directories; one more given", argv[i]);
    } else {
      dirs[ndirs++] = argv[i];
    }
  }
  if (ndirs < 2) return usage_error("diff takes two run directories (podsim diff A B)", NULL);
  if (diff_runs(dirs[0], dirs[1], out, stdout, msg, sizeof msg) != 0) {
    fprintf(stderr, "%s\n", msg);
    return TR_EXIT_INPUT;
  }
  return TR_EXIT_OK;
}

/* podsim schema: the scenario format's JSON Schema on stdout. */
static int schema_command(int argc) {
  if (argc > 2) return usage_error("schema takes no arguments", NULL);
  char *text = scenario_json_schema();
  puts(text);
  free(text);
  return TR_EXIT_OK;
}

/* The host ran out of memory for a run it could not hold: the run is refused like bad input,
** and what it had written goes with it. */
static void out_of_host_memory(size_t bytes) {
  fprintf(stderr, "podsim: out of host memory (%zu bytes): the run is too large for this host\n", bytes);
  if (live_stage && stage_owner == getpid() && access(live_stage->path, F_OK) == 0) nothing_kept(live_stage);
  exit(TR_EXIT_INPUT);
}

int main(int argc, char **argv) {
  base_set_oom_handler(out_of_host_memory);
  catch_stop_signals();
  if (argc < 2) return usage_error("no command given", NULL);
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
    fputs(usage, stdout);
    return TR_EXIT_OK;
  }
  if (strcmp(argv[1], "--version") == 0) {
    printf("podsim %s\n", PODSIM_VERSION);
    return TR_EXIT_OK;
  }
  if (strcmp(argv[1], "diff") == 0) return diff_command(argc, argv);
  if (strcmp(argv[1], "schema") == 0) return schema_command(argc);
  if (strcmp(argv[1], "run") != 0 && strcmp(argv[1], "check") != 0 && strcmp(argv[1], "plan") != 0)
    return usage_error("unknown command", argv[1]);
  cli c = {0};
  int rc = parse_args(argc, argv, &c);
  if (rc == TR_EXIT_OK) rc = run_command(&c);
  free(c.sets);
  /* The summary and run_hash are outputs too: a full disk behind stdout is not a success. */
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "podsim: cannot write the standard output: %s\n", strerror(errno));
    if (rc == TR_EXIT_OK) rc = TR_EXIT_INPUT;
  }
  return rc;
}
