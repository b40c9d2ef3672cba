/*
** trainInt.h: what the sync program (train.c) shares with the parameter-server program
** (ps_train.c): the inputs every training run reads the same way, the batching rule and the loss
** scale, metrics.csv's rows, the job-failure record and the weights file (train_).
*/
#ifndef PODSIM_TRAIN_INT_H
#define PODSIM_TRAIN_INT_H

#include <stddef.h>

#include "models/dataset.h"
#include "models/model.h"
#include "scenarios/report/report.h"
#include "scenarios/programs/train.h"

/* The checked inputs of a run: the scenario, its examples and how many steps it runs. */
typedef struct train_input {
  const scenario *s;      /* the validated scenario */
  md_dataset *data;       /* training examples (dataset.files: every file's rows, in order) */
  int nfiles;             /* dataset.files: the files (0: one csv or synthetic) */
  size_t *file_rows;      /* rows of each file */
  long steps;             /* steps to run */
} train_input;

/* The model with its initial values: model.init.file, else seeded glorot ("model.init"). */
int   train_build_model(const scenario *s, md_model **out, scn_error *err);
/* The stream a train step's dropout layers draw from (md_workspace_set_rng), set to ws; NULL when
** the model has no dropout or numerics are off. Free with gsl_rng_free. */
gsl_rng *train_dropout_rng(const scenario *s, md_workspace *ws);
/* Restarts rng for one step's masks: a stream per (owner, step), "dropout/replica 1/step 17",
** so a resumed run and a re-run closure draw what an uninterrupted run drew; and sets ws's
** SeedGenerator draw for seeded dropout to the training calls Keras made before the step (one
** per micro-batch: step * accum_steps), the same on every replica. NULL rng does nothing. */
void  train_dropout_step(const scenario *s, md_workspace *ws, gsl_rng *rng, const char *owner, long step);
/* The dataset: the CSV, or synthetic rows ("dataset.synthetic"); its width checked against m. */
int   train_load_data(train_input *in, const md_model *m, scn_error *err);
/* in->steps from training.steps, or epochs and dataset.repeat by docs/scenario-format.md's
** batching rule (a sync run's input plan recounts them through its strategy). */
int   train_count_steps(train_input *in, scn_error *err);
/* The factor training.loss_reduction puts on the loss of a slice of `slice` examples. */
float train_loss_scale(const scenario *s, int slice);
/* metrics.csv's rows as a program adds them, one per step it ends (a restart's redone steps and a
** parameter-server job's duplicated updates included, so a run can have more rows than steps):
** grown by doubling, each new row counted on the terminal's progress bar. */
typedef struct train_rows {
  step_record *at;          /* the rows, in the order they ended */
  unsigned char *kept;      /* per row, whether its update stays (ps_train.c's invariant 5); NULL
                            ** when the program does not keep it */
  long n, cap;              /* rows filled, allocated */
  report_progress progress; /* the terminal's progress bar (inert when quiet or not a tty) */
} train_rows;
/* Room for steps + 1 rows (a run without restarts), with the kept flags when keep. */
void         train_rows_init(train_rows *r, long steps, int keep);
void         train_rows_free(train_rows *r);
/* A new zeroed row at the end (a kept flag of 0 with it), counted on the progress bar. */
step_record *train_rows_next(train_rows *r);
/* train_rows_next with what both programs fill alike: the step, its end (now) and time since
** start, its examples and their mean loss from loss_sum (NaN when numerics are off, 0 without
** examples). */
step_record *train_rows_add(train_rows *r, const scenario *s, long step, sim_time start, sim_time now,
                            double loss_sum, int examples);
/* The summary's error: the job failed with TF exception `kind` on `device`. */
void  train_job_failed(run_summary *sum, const char *kind, const char *device, const char *msg);
/* TF's ResourceExhaustedError for an allocation of `needed` bytes that `pool` (on `device`)
** refused: kind, device, message (what the bytes are made of: `parts`), needed and capacity. */
void  train_out_of_memory(run_error *e, const char *device, const sim_mempool *pool, uint64_t needed,
                          const char *parts);
/* final_weights.csv of model m; 0 or -1 (errno). */
int   train_write_weights(const md_model *m, const char *path);
/* A scenario machine as the strategies see it, and the fabric's topology. */
ds_machine      train_machine(const scn_machine *m);
/* How machine m's accelerators time ops, for summary.json's compute_model: "per-op model (H100
** SXM5 80 GB)" or "scalar roofline at 0.5 of peak"; "" without accelerators. */
void            train_compute_model(const scn_machine *m, char *buf, size_t len);
sim_fabric_kind train_fabric_kind(scn_fabric_topology t);

/* A copy of a variable on its device: a row of variables.csv's per_replica listing. run_hash
** covers that listing whichever one the file has (outputs.variables), so the listing is a
** choice of layout, never of what was simulated. */
typedef void (*train_copy_fn)(void *sink, const char *name, const char *kind, const char *shape,
                              const char *device);
/* A variable with its placement: its copies' devices (outputs_device_set) and how many there are. */
typedef void (*train_variable_fn)(void *sink, const char *name, const char *kind, const char *shape,
                                  const char *devices, long count);

/* A run's output directory, the same for both programs: metrics.csv, final_weights.csv,
** variables.csv, trace.json (outputs.trace) and the program's extra file (evaluations.csv)
** through the program's writers, run_hash over them and the simulated figures, then the charts. */
typedef struct train_outputs {
  sim_engine *engine;         /* the clock and the trace */
  const step_record *records; /* metrics.csv's rows */
  long nrecords;              /* their count */
  int sync_columns;           /* metrics.csv has compute_s, comm_s, idle_s (sync runs) */
  int ps_columns;             /* metrics.csv has worker, staleness (parameter-server runs) */
  int (*write_weights)(const void *prog, const char *path);   /* final_weights.csv: 0 or -1 */
  void (*each_copy)(const void *prog, train_copy_fn fn, void *sink); /* every copy, per_replica order */
  void (*each_variable)(const void *prog, train_variable_fn fn, void *sink); /* every variable
                                 (NULL: each copy is one, of count 1) */
  const void *prog;           /* their argument */
  const char *figures;        /* more simulated figures run_hash covers ("": none) */
  const report_fault *events; /* the faults chart's events (may be NULL) */
  size_t nevents;             /* their count */
  const char *extra_file;     /* one more file, hashed after trace.json (NULL: none) */
  int (*write_extra)(const void *ctx, const char *path); /* writes it: 0 or -1 */
  const void *extra;          /* its argument */
  const char *more_file;      /* a second file, hashed after it (fit's history.csv; NULL: none) */
  int (*write_more)(const void *ctx, const char *path); /* writes it: 0 or -1 */
  const void *more;           /* its argument */
  const double *val_x, *val_y; /* the loss chart's val_loss points (report_run's) */
  size_t nval;                /* their count (0: none) */
} train_outputs;
/* Writes them into dir; sets sum->run_hash. TR_EXIT_OK, or TR_EXIT_INPUT with err filled. */
int train_write_outputs(const scenario *s, const train_outputs *o, const char *dir, run_summary *sum,
                        scn_error *err);

/* The host's monotonic clock in seconds, for summary.json's wall_s (never simulated). */
double train_wall_s(void);
/* The end of a run: wall_s from w0, summary.json written when rc is TR_EXIT_OK, the devices freed
** (the caller prints only the totals). The exit code: rc, or TR_EXIT_JOB_FAILED for a failed job. */
int train_finish(const scenario *s, const char *out_dir, double w0, int rc, run_summary *sum, scn_error *err);

#endif
