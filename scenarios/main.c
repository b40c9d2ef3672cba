/*
** main.c: the podsim command line. Exit statuses: 0 done, 1 an `expect` failed, 2 bad
** scenario or usage, or outputs that cannot be written (nothing written), 3 the simulated job
** failed (outputs written), 4 done but the standard output could not be written, 130 / 143
** stopped by SIGINT / SIGTERM (nothing written).
** run, check and plan are podsim_command's (scenarios/api.c), which the Python package calls too.
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "scenarios/api.h"
#include "scenarios/programs/train.h"
#include "scenarios/report/diff.h"

#define PODSIM_VERSION "0.1.0"
/* The exit status of a command that did its work but could not write its standard output (the
** contract's table, docs/scenario-format.md); train.h's TR_STOPPED, also 4, is never an exit. */
enum { EXIT_STDOUT = 4 };

/* A command as --help shows it: `podsim --help` lists every synopsis and summary, `podsim CMD
** --help` one command's with its options. */
typedef struct command_doc {
  const char *name;       /* the command word */
  const char *synopsis;   /* its arguments */
  const char *summary;    /* what it does, lines indented by 6 */
  const char *options;    /* its options, a line each, indented by 2 */
} command_doc;

#define OPT_OUT      "  -o DIR             "
#define OPT_SET      "  --set KEY=VALUE    override a scalar of the file, the value in YAML syntax\n" \
                     "                     (--set training.steps=20); repeatable\n"
#define OPT_QUIET    "  --quiet, -q        print only the run_hash line (errors still go to stderr)\n"
#define OPT_HELP     "  -h, --help         this help\n"

static const command_doc COMMANDS[] = {
  {"run", "FILE [-o DIR] [--set KEY=VALUE]... [--quiet] [--progress]",
   "      run the scenario; outputs go to DIR (default: outputs.dir, else out/<name>);\n"
   "      --progress prints a progress line on stderr every 5 s of wall time, terminal or not\n",
   OPT_OUT "the output directory (default: outputs.dir, else out/<name>); written\n"
   "                     whole or not at all\n" OPT_SET OPT_QUIET
   "  --progress         a progress line on stderr every 5 s of wall time, terminal or not\n" OPT_HELP},
  {"check", "FILE [--set KEY=VALUE]...",
   "      validate the scenario and its input files; write nothing\n",
   OPT_SET OPT_HELP},
  {"plan", "FILE [-o DIR] [-j N] [--set KEY=VALUE]... [--quiet]",
   "      run every point of the file's sweep (N at a time, default: the CPUs) into DIR/points/,\n"
   "      then write sweep.csv, report.md and report.pdf into DIR and print the recommendation\n",
   OPT_OUT "the plan's directory (default: outputs.dir, else out/<name>)\n"
   "  -j N               points run at once, 1 to 1024 (default: the online CPUs)\n" OPT_SET OPT_QUIET OPT_HELP},
  {"diff", "A B [-o DIR]",
   "      compare two run directories: summary figures with their ratio B/A, the step time\n"
   "      breakdown, memory, faults, run_hash; overlay charts of step time and loss into DIR\n"
   "      (default: out/diff)\n",
   OPT_OUT "where the overlay charts go (default: out/diff)\n" OPT_HELP},
  {"schema", "",
   "      print the JSON Schema (draft 2020-12) of scenario files, for editors\n",
   OPT_HELP},
};
#define NCOMMANDS (int)(sizeof COMMANDS / sizeof *COMMANDS)

static const char exit_statuses[] =
  "exit status: 0 done; 1 an expect assertion failed; 2 bad scenario or usage, or outputs that\n"
  "             cannot be written (nothing written); 3 the simulated job failed as TensorFlow\n"
  "             would (outputs written, see summary.json); 130 / 143 stopped by SIGINT / SIGTERM\n"
  "             (nothing written: DIR appears only once complete); 4 done, DIR written, but the\n"
  "             standard output could not be (a full disk or closed pipe behind it)\n"
  "\n"
  "the scenario format and every output file: docs/scenario-format.md\n";

static void put_synopsis(const command_doc *d) {
  printf("podsim %s%s%s\n", d->name, d->synopsis[0] ? " " : "", d->synopsis);
}

/* podsim --help: every command. */
static void put_usage(void) {
  fputs("podsim " PODSIM_VERSION ": a deterministic simulator of distributed TensorFlow training\n\nusage:\n", stdout);
  for (int i = 0; i < NCOMMANDS; i++) {
    fputs("  ", stdout);
    put_synopsis(&COMMANDS[i]);
    fputs(COMMANDS[i].summary, stdout);
  }
  fputs("  podsim --help | --version | COMMAND --help\n\n"
        "--set overrides any scalar of the file, the value in YAML syntax: --set training.steps=20\n\n", stdout);
  fputs(exit_statuses, stdout);
}

/* podsim CMD --help: its synopsis, what it does and its options. */
static void put_command_help(const command_doc *d) {
  fputs("usage: ", stdout);
  put_synopsis(d);
  fputs(d->summary, stdout);
  printf("\noptions:\n%s\n", d->options);
  fputs(exit_statuses, stdout);
}

/* The command named name, or NULL. */
static const command_doc *find_command(const char *name) {
  for (int i = 0; i < NCOMMANDS; i++)
    if (strcmp(COMMANDS[i].name, name) == 0) return &COMMANDS[i];
  return NULL;
}

/* Whether argv[2..] asks for help (-h or --help anywhere: it wins over everything else given). */
static int asks_help(int argc, char **argv) {
  for (int i = 2; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return 1;
  return 0;
}

typedef struct cli {
  const char *command;    /* run | check | plan */
  const char *file;       /* the scenario */
  const char *out_dir;    /* -o, or NULL */
  const char **sets;      /* --set KEY=VALUE texts */
  int nsets;              /* entries in sets */
  int quiet;              /* --quiet */
  int progress;           /* --progress: progress lines on stderr, terminal or not */
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
    } else if (strcmp(a, "--progress") == 0 && strcmp(c->command, "run") == 0) {
      c->progress = 1;
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

/* The command given, as podsim_command runs it: what the CLI prints goes to stdout and stderr. */
static int run_command(const cli *c) {
  podsim_request rq = { c->command, c->file, c->sets, c->nsets, c->out_dir, c->quiet, c->jobs, c->progress };
  return podsim_command(&rq, stdout, stderr, NULL);
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

/* The summary, run_hash and schema are outputs too: a full disk behind stdout is not a success.
** A run's DIR is committed by then and stays (exit 2 would say nothing was written), so the
** exit has its own status, EXIT_STDOUT, for every command; a failure already reported keeps its own. */
static int stdout_written(int rc) {
  if (fflush(stdout) == 0 && !ferror(stdout)) return rc;
  fprintf(stderr, "podsim: cannot write the standard output: %s%s\n", strerror(errno),
          rc == TR_EXIT_OK ? "" : " (after the error above)");
  return rc == TR_EXIT_OK ? EXIT_STDOUT : rc;
}

int main(int argc, char **argv) {
  base_set_oom_handler(podsim_out_of_memory);
  podsim_catch_stop_signals();
  if (argc < 2) return usage_error("no command given", NULL);
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
    /* `podsim help run` as `podsim run --help` */
    const command_doc *d = argc > 2 && argv[1][0] == 'h' ? find_command(argv[2]) : NULL;
    if (argc > 2 && argv[1][0] == 'h' && d == NULL) return usage_error("unknown command", argv[2]);
    if (d) put_command_help(d);
    else put_usage();
    return stdout_written(TR_EXIT_OK);
  }
  if (find_command(argv[1]) && asks_help(argc, argv)) {
    put_command_help(find_command(argv[1]));
    return stdout_written(TR_EXIT_OK);
  }
  if (strcmp(argv[1], "--version") == 0) {
    printf("podsim %s\n", PODSIM_VERSION);
    return stdout_written(TR_EXIT_OK);
  }
  int rc;
  if (strcmp(argv[1], "diff") == 0) rc = diff_command(argc, argv);
  else if (strcmp(argv[1], "schema") == 0) rc = schema_command(argc);
  else if (strcmp(argv[1], "run") != 0 && strcmp(argv[1], "check") != 0 && strcmp(argv[1], "plan") != 0)
    return usage_error("unknown command", argv[1]);
  else {
    cli c = {0};
    char why[512];
    if (scenario_host_memory_check(why, sizeof why) != 0) {
      fprintf(stderr, "podsim: %s\n", why);
      return TR_EXIT_INPUT;
    }
    rc = parse_args(argc, argv, &c);
    if (rc == TR_EXIT_OK) rc = run_command(&c);
    free(c.sets);
  }
  return stdout_written(rc);
}
