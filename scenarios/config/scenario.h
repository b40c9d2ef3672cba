/*
** scenario.h: a validated scenario file. scenario_load parses the YAML (libyaml), applies the
** --set overrides, checks every key of the v1 contract (docs/scenario-format.md) and fills this
** struct; anything wrong is one error naming file:line:col, the key path, what was expected and
** what was found. Every key of the contract does what it says: none is accepted and ignored.
*/
#ifndef PODSIM_SCENARIO_H
#define PODSIM_SCENARIO_H

#include <stddef.h>
#include <stdint.h>
#include "models/metric.h"
#include "models/model.h"
#include "models/optimizer.h"
#include "models/zoo.h"
#include "sim/fault.h"
#include "sim/roofline.h"

/* model.layers: enough for the zoo's largest (llama3_405b: 126 blocks of 9, 1137 layers). */
#define SCN_MAX_LAYERS 2048
#define SCN_MAX_DEVICES 64   /* strategy.devices entries */
#define SCN_MAX_LAYOUTS 32   /* strategy.distribution.layout_map entries */
#define SCN_MAX_STAGES 256   /* strategy.distribution.pipeline.layers_per_stage entries */
#define SCN_MAX_VALIDATION_AT 64 /* training.validation_freq list entries */

/* One strategy.distribution.layout_map entry: keras.distribution.LayoutMap's key (a regular
** expression a variable's path must match whole, re.fullmatch) and its TensorLayout's axes. */
typedef struct scn_layout {
  char pattern[128];      /* the key as written ("dense.*kernel") */
  int rank;               /* dimensions listed */
  int axis[4];            /* per dimension: the mesh axis sharding it, -1 for null (replicated) */
  int line, col;          /* where the key was written */
  int axis_line[4], axis_col[4]; /* where each dimension's entry was written */
} scn_layout;
#define SCN_PATH_MAX 4096
#define SCN_MAX_SWEEP 8            /* keys a sweep may vary */
#define SCN_MAX_SWEEP_POINTS 1024  /* points of a sweep's grid */
#define SCN_MAX_FAULTS 32     /* faults entries */
#define SCN_MAX_EXPECTS 32    /* expect entries */
#define SCN_MAX_FILES 256     /* dataset.files after glob expansion */
#define SCN_MAX_LABELS 64     /* dataset.labels entries */
#define SCN_MAX_INPUT_COLUMNS 256 /* dataset.inputs' columns over every model input */
#define SCN_FILES_CHARS 65536 /* their resolved paths, NUL-separated */

typedef struct scn_error {
  char file[SCN_PATH_MAX]; /* the file the error is in (as given on the command line) */
  int  line;              /* 1-based; 0 when the error has no position (usage) */
  int  col;               /* 1-based */
  char key[256];          /* key path such as "cluster.workers.count" */
  char msg[1024];         /* the whole one-line message: "file:line:col: key: expected ..., found ..." */
} scn_error;

typedef enum { SCN_STRATEGY_DEFAULT = 0, SCN_STRATEGY_ONE_DEVICE, SCN_STRATEGY_MIRRORED,
               SCN_STRATEGY_MULTI_WORKER_MIRRORED, SCN_STRATEGY_TPU, SCN_STRATEGY_TPU_V1,
               SCN_STRATEGY_PARAMETER_SERVER, SCN_STRATEGY_GNN_RUNNER_TPU } scn_strategy_kind;
/* mode: what a model scenario runs, as Keras's Model.fit, evaluate and predict. */
typedef enum { SCN_RUN_FIT = 0, SCN_RUN_EVALUATE, SCN_RUN_PREDICT } scn_run_mode;
typedef enum { SCN_LOSS_SUM = 0, SCN_LOSS_PER_REPLICA_MEAN, SCN_LOSS_GLOBAL_BATCH } scn_loss_reduction;
typedef enum { SCN_FABRIC_STAR = 0, SCN_FABRIC_RING, SCN_FABRIC_TORUS2D, SCN_FABRIC_TORUS3D,
               SCN_FABRIC_FAT_TREE } scn_fabric_topology;
typedef enum { SCN_ALLREDUCE_AUTO = 0, SCN_ALLREDUCE_RING, SCN_ALLREDUCE_BIDIRECTIONAL_RING,
               SCN_ALLREDUCE_TORUS, SCN_ALLREDUCE_TREE, SCN_ALLREDUCE_HALVING_DOUBLING,
               SCN_ALLREDUCE_DOUBLE_BINARY_TREE, SCN_ALLREDUCE_NCCL } scn_allreduce;
typedef enum { SCN_GROUP_WORKERS = 0, SCN_GROUP_TPU } scn_group;
typedef enum { SCN_FORMAT_PNG = 0, SCN_FORMAT_SVG, SCN_FORMAT_PDF } scn_plot_format;

typedef struct scn_machine {
  char   type[64];        /* "n2-standard-16", or "custom" for an inline spec */
  int    cpus;            /* vCPUs */
  double flops;           /* FLOP/s of the whole VM (float32, sustained) */
  double ram_bytes;       /* host RAM */
  double nic_bytes_per_s; /* egress */
  int    accelerators;    /* count of generic accelerators (0: none) */
  /* Per accelerator, for a custom machine with accelerators: {count, peak, hbm, hbm_bandwidth, link}. */
  double accel_peak_flops;       /* peak FLOP/s of one accelerator */
  double accel_hbm_bytes;        /* its memory */
  double accel_hbm_bytes_per_s;  /* its memory bandwidth */
  double accel_link_bytes_per_s; /* its link to the other accelerators of the VM */
  double accel_link_latency_s;   /* that link's latency (default 1 us) */
  double accel_efficiency;       /* fraction of peak its ops sustain (default 0.5) without accel_op */
  sim_opmodel accel_op;          /* catalogue GPUs' per-op model (machines.c); units 0: none */
  double accel_workspace_bytes;  /* scratch its runtime reserves in HBM (default 256 MiB) */
  double mem_bytes_per_s;        /* host memory bandwidth (default 4 GB/s per vCPU) */
  /* GPU systems of the catalogue (dgx-a100, dgx-h100); 0 on every other machine. */
  double accel_nvlink_bytes_per_s; /* a GPU's NVLink bandwidth one way, through the NVSwitches */
  double accel_nccl_bytes_per_s; /* what NCCL's Simple ring moves per GPU inside the node (its
                                    busbw ceiling, docs/machine.md) */
  double accel_nic_bytes_per_s;  /* the GPU's own NIC, one way (a rail per GPU index) */
  double accel_nccl_launch_s;    /* an NCCL collective's launch and completion (sim/nccl.h) */
  int    accel_gpus_per_nic;     /* consecutive GPUs sharing a NIC: 1 (the default), or 8 / M for
                                    {type: dgx-a100, nics: M} */
  double accel_nvls_bytes_per_s; /* NCCL's NVLS busBw on its NVSwitches (dgx-h100); 0: none */
  int    accel_pcie_only;        /* its GPUs reach each other over PCIe, no NVLink (L4): no LL128 */
  char   accel_gpu[24];          /* the catalogue GPU's name ("H100 SXM5 80 GB"); "": none */
  char   accel_transport[24];    /* how its GPU NICs reach other VMs ("infiniband-ndr", "efa") */
  double accel_net_latency_s;    /* that transport's own latency as its NCCL net plugin reports it */
  int    accel_per_op_gpu;       /* custom accelerators' per_op_model: 1 + the catalogue GPU whose
                                    per-op model they take at their own peak; 0: the scalar roofline */
  int    accel_nccl_arch;        /* its GPUs' generation as NCCL's tables index it (sim_nccl_arch);
                                    0: none of them (no LL cap) */
  int    accel_host_amd;         /* its host CPUs are AMD's (NCCL's LL cap across nodes) */
} scn_machine;

/* A callback's `monitor` (training.callbacks): a key of the epoch's logs and its direction. */
typedef enum { SCN_MODE_AUTO, SCN_MODE_MIN, SCN_MODE_MAX } scn_monitor_mode;
typedef struct scn_monitor {
  char name[64];          /* as written: "loss" or a compiled metric's name (val_* need validation) */
  scn_monitor_mode mode;  /* mode: (default auto: min for the loss, max for the accuracies) */
  int metric;             /* resolved by the loader: -1 the loss, else the index in training.metrics */
} scn_monitor;

/* training.callbacks: Keras callbacks that change a run (scenarios/programs/callbacks.h); each
** given at most once. A save_freq of 0 is "epoch". */
typedef struct scn_callbacks {
  int    backup;                /* backup_and_restore given */
  long   backup_every;          /* its save_freq in batches; 0: epoch */
  int    backup_delete;         /* its delete_checkpoint (default true) */
  int    backup_double;         /* its double_checkpoint (default false): the previous backup is copied first */
  int    checkpoint;            /* model_checkpoint given */
  long   checkpoint_every;      /* its save_freq in batches; 0: epoch */
  int    checkpoint_best_only;  /* its save_best_only (default false) */
  scn_monitor checkpoint_monitor; /* its monitor (default val_loss, read only with save_best_only) */
  int    early;                 /* early_stopping given */
  scn_monitor early_monitor;    /* its monitor (default val_loss) */
  double early_min_delta;       /* its min_delta (default 0; Keras keeps abs()) */
  long   early_patience;        /* its patience (default 0) */
  int    early_has_baseline;    /* its baseline given (Keras: not None) */
  double early_baseline;        /* that baseline */
  long   early_start_from_epoch;/* its start_from_epoch (default 0) */
  int    early_restore_best;    /* its restore_best_weights (default false) */
  int    terminate_on_nan;      /* terminate_on_nan given */
  int    nan_raise;             /* its raise_error: a RuntimeError fails the job */
  int    tensorboard;           /* tensorboard given: Keras's tags under logs/train/ */
  long   tb_update_freq;        /* its update_freq in batches (batch: 1); 0: epoch (the default) */
} scn_callbacks;

/* One faults entry as written; scenarios/programs/faults.h resolves its target against the run. */
typedef struct scn_fault {
  sim_fault_kind kind;    /* kind: (sim/fault.h's names), unless trace */
  int    trace;           /* kind: trace, a file of faults of every kind */
  char   target[32];      /* target: as written ("worker:*"), "" for a trace */
  char   src[SCN_PATH_MAX]; /* the file its target (a trace's file) is written in: the scenario, or --set */
  int    line, col;       /* where in it */
  double at_s;            /* at: (seconds), -1 when absent */
  long   at_step;         /* at_step:, -1 when absent */
  double mtbf_s;          /* mtbf:, or 1 / rate:; 0 when neither */
  double weibull_shape;   /* distribution: {weibull: {shape}}; 0 for exponential */
  double down_for_s;      /* down_for: (default 0: the machine is replaced at once) */
  double notice_s;        /* notice: before a preemption stops the machine (default 0) */
  double factor;          /* link_degrade factor:, straggler slowdown: */
  double duration_s;      /* duration: of a link fault or straggler; -1: to the end of the run */
  char   file[SCN_PATH_MAX]; /* trace file:, resolved */
} scn_fault;

/* expect[i]: metric CMP value. Comparators in the loader's order: lt le gt ge eq ne. */
typedef enum { SCN_CMP_LT = 0, SCN_CMP_LE, SCN_CMP_GT, SCN_CMP_GE, SCN_CMP_EQ, SCN_CMP_NE } scn_cmp;
typedef struct scn_expect {
  int    metric;          /* index in scenario_metric_name's list */
  scn_cmp cmp;            /* the comparator key */
  double value;           /* its number */
} scn_expect;

typedef enum {
  SCN_PARTITIONER_NONE = 0,     /* variables are not partitioned */
  SCN_PARTITIONER_FIXED_SHARDS, /* FixedShardsPartitioner(num_shards) */
  SCN_PARTITIONER_MIN_SIZE,     /* MinSizePartitioner(min_shard_bytes, max_shards) */
  SCN_PARTITIONER_MAX_SIZE      /* MaxSizePartitioner(max_shard_bytes, max_shards) */
} scn_partitioner_kind;


/* dataset.distribute: experimental_distribute_dataset or distribute_datasets_from_function. */
typedef enum { SCN_DISTRIBUTE_DATASET = 0, SCN_DISTRIBUTE_FUNCTION } scn_distribute;
/* dataset.auto_shard_policy, in the order the format lists them. */
typedef enum { SCN_SHARD_AUTO = 0, SCN_SHARD_FILE, SCN_SHARD_DATA, SCN_SHARD_OFF } scn_auto_shard;

typedef struct scenario {
  char   path[SCN_PATH_MAX];    /* the scenario file as given */
  char   dir[SCN_PATH_MAX];     /* its directory: relative paths resolve against it */
  char   name[128];             /* name: */
  uint64_t seed;                /* seed: (default 1) */
  int    numerics_full;         /* numerics: full (1) | off (0) */

  /* cluster.tpu: a TPU slice (workloads run on it; training on it is issue 4's tpu strategy) */
  char   tpu_type[32];          /* cluster.tpu.type, "" without a slice */
  int    tpu_dims[3];           /* chips per axis: cluster.tpu.topology, else the type's default */
  double tpu_hbm_bytes;         /* cluster.tpu.overrides.hbm per chip, 0: the catalogue's */
  double tpu_ici_bytes_per_s;   /* cluster.tpu.overrides.ici_bandwidth, 0: the catalogue's */
  double tpu_peak_flops;        /* cluster.tpu.overrides.peak_bf16 per chip, 0: the catalogue's */
  double tpu_efficiency;        /* cluster.tpu.overrides.efficiency: fraction of peak ops sustain; 0
                                ** (the default): the generation's per-op model instead */
  int    tpu_slices;            /* cluster.tpu.slices: slices of the type joined by DCN (default 1) */

  /* workload: a collective microbenchmark instead of a training run */
  int    has_workload;          /* the file has `workload` */
  int    workload_op;           /* workload.collective.op, a sim_coll_op (sim/collective.h) */
  double workload_size_bytes;   /* workload.collective.size */
  scn_allreduce workload_algorithm; /* workload.collective.algorithm (default auto) */
  scn_group workload_group;     /* workload.collective.group (default workers) */
  long   workload_iterations;   /* workload.collective.iterations (default 5) */
  int    workload_axis;         /* workload.collective.axis: index into SCN_AXES, -1 for none */
  int    workload_shift;        /* workload.collective.shift: ppermute's shift (default 1) */
  int    workload_mm_m;         /* workload.matmul.m; 0: the workload is a collective */
  int    workload_mm_n;         /* workload.matmul.n */
  int    workload_mm_k;         /* workload.matmul.k */
  int    workload_mm_dtype;     /* workload.matmul.dtype: 0 bfloat16, 1 float32 */

  /* cluster (CPU VMs) */
  int    workers;               /* cluster.workers.count (default 1) */
  scn_machine worker_machine;   /* cluster.workers.machine (default n2-standard-8) */
  scn_fabric_topology fabric;   /* cluster.fabric.topology (default star) */
  double fabric_bytes_per_s;    /* cluster.fabric.link_bandwidth (default 100GB/s) */
  double fabric_latency_s;      /* cluster.fabric.latency (default 5us) */
  int    ps;                    /* cluster.ps.count or TF_CONFIG's ps tasks (0: none) */
  scn_machine ps_machine;       /* cluster.ps.machine (default n2-standard-8) */
  int    has_chief;             /* a chief task (parameter_server: the coordinator; default present) */
  scn_machine chief_machine;    /* cluster.chief.machine (default n2-standard-8) */
  int    has_evaluator;         /* cluster.evaluator given, or an evaluator in TF_CONFIG */
  scn_machine evaluator_machine;/* cluster.evaluator.machine (default n2-standard-8) */
  long   eval_steps;            /* cluster.evaluator.steps: batches an evaluation reads (0: one pass) */
  double eval_poll_s;           /* cluster.evaluator.poll_interval: checkpoint polls (default 1 s) */
  int    tf_config;             /* the task counts came from cluster.tf_config */
  int    tf_config_task;        /* its task.type: 0 chief (default), 1 worker, 2 ps, 3 evaluator */

  /* strategy */
  scn_strategy_kind strategy;   /* strategy.kind (default: default) */
  scn_allreduce all_reduce;     /* strategy.all_reduce (default auto) */
  double comm_bytes_per_pack;   /* strategy.communication.bytes_per_pack: gradients all-reduced in
                                ** packs of about this many bytes, each as soon as the backward pass
                                ** has produced it (0, the default and TF's: one pack after it) */
  int    comm_implementation;   /* strategy.communication.implementation: 0 auto, 1 ring, 2 nccl */
  double xla_combine_bytes;     /* strategy.xla_combine_threshold (tpu): XLA's all-reduce combiner
                                ** threshold, each combined all-reduce overlapped with the rest of the
                                ** backward; -1 (absent, the default): one all-reduce after it */
  int    has_device_assignment; /* strategy.device_assignment given (tpu) */
  int    da_shape[4];           /* its computation_shape */
  int    da_stride[4];          /* its computation_stride (default all ones) */
  int    da_num_replicas;       /* its num_replicas (default 1, as DeviceAssignment.build) */
  int    spmd;                  /* strategy.spmd_xla_partitioning (default false) */
  /* strategy.distribution: keras.distribution's device mesh, layout map and sharding recipe */
  int    dist;                  /* strategy.distribution given */
  int    dist_preset;           /* its preset: index in scenario_dist_presets() (0 auto: from layout_map) */
  int    mesh_axes;             /* mesh axes written (1 to 3; 0: none, one axis of every replica) */
  char   mesh_names[3][32];     /* their names; the first is the batch's (ModelParallel's batch_dim_name),
                                ** the last the model's; a third is {data, pipeline, model}'s middle */
  int    mesh_shape[3];         /* their lengths */
  int    mesh_line, mesh_col;   /* where strategy.distribution.mesh was written */
  int    nlayouts;              /* layout_map entries */
  scn_layout layouts[SCN_MAX_LAYOUTS]; /* them, as written */
  /* strategy.distribution's pipeline parallelism (keys_pipeline.c): stages over the mesh's
  ** `pipeline` axis, its last */
  int    pipe_stages;           /* the pipeline axis's length (0: no pipeline) */
  int    pipe_micro;            /* pipeline.microbatches per step of a pipeline (default: stages) */
  int    pipe_schedule;         /* pipeline.schedule: 0 gpipe, 1 1f1b (default), 2 interleaved
                                ** (compile.h's cg_pipe_schedule) */
  int    pipe_chunks;           /* pipeline.virtual_stages: model chunks a device (interleaved; 0: 1) */
  int    pipe_nsplit;           /* pipeline.layers_per_stage entries (0: balanced by compiled cost) */
  int    pipe_split[SCN_MAX_STAGES]; /* them: each stage's layers, in order */
  int    pipe_line, pipe_col;   /* where strategy.distribution.pipeline was written (else the mesh) */
  int    pipe_split_line, pipe_split_col; /* where layers_per_stage was written */
  int    split_variables;       /* strategy.split_to_logical_devices: 1 megatron, 0 none (default) */
  int    steps_per_run;         /* strategy.steps_per_run (tpu_v1, default 1) */
  int    num_cores;             /* strategy.num_cores (tpu_v1; 0: every core of the slice) */
  double host_round_trip_s;     /* strategy.host_round_trip: per program launch on a TPU (100 us) */
  int    ndevices;              /* entries of strategy.devices (mirrored; 0: the default devices) */
  char   devices[SCN_MAX_DEVICES][16]; /* strategy.devices, as written ("GPU:1") */
  scn_partitioner_kind partitioner; /* strategy.variable_partitioner.kind (parameter_server; none) */
  int    partitioner_shards;    /* fixed_shards: num_shards; min_size/max_size: max_shards (0: none) */
  double partitioner_bytes;     /* min_size: min_shard_bytes (256 KiB); max_size: max_shard_bytes */

  /* model */
  int    input_features;        /* model.input.features, or the elements of model.input.shape */
  md_shape input_shape;         /* model.input.shape (rank 0: a row of input_features) */
  int    input_ids;             /* model.input.ids */
  int    input_vocab;           /* model.input.vocab */
  int    ninputs;               /* entries of model.inputs (0: model.input, one input) */
  md_model_input inputs[MD_MAX_MODEL_INPUTS]; /* model.inputs, in the batch's column order;
                                ** input_features is their columns' total */
  int    graph_nodes;           /* model.input.graph.nodes: a packed subgraph's nodes (0: no graph) */
  int    graph_edges;           /* model.input.graph.edges: its edges */
  int    graph_features;        /* model.input.graph.features: floats per node */
  int    nlayers;
  int    has_zoo;               /* model.zoo names the architecture (layers built from zoo) */
  md_zoo_spec zoo;              /* model.zoo: its preset with the sizes the file overrides */
  md_layer_spec layers[SCN_MAX_LAYERS];
  int    logical_device[SCN_MAX_LAYERS]; /* model.layers[i].*.logical_device (tpu; default 0) */
  md_loss_kind loss;            /* model.loss.kind (default sparse_categorical_crossentropy) */
  int    from_logits;           /* model.loss.from_logits (default false, as Keras) */
  md_dtype_policy dtype_policy; /* model.dtype_policy (default float32) */
  int    tpu_embedding;         /* model.tpu_embedding: tables sharded over the chips, looked up and
                                ** updated through all-to-alls (scenarios/programs/embed.h) */
  md_optimizer_spec tpu_embedding_optimizer; /* model.tpu_embedding.optimizer: the tables' own;
                                ** without it (true) a copy of optimizer (scenario.c) */
  int    tpu_embedding_optimizer_given; /* model.tpu_embedding.optimizer was given */
  int    tpu_embedding_tables;  /* model.tpu_embedding.tables: the largest this many tables go
                                ** through TPUEmbedding, the rest stay replicated; 0 = all */
  char   init_file[SCN_PATH_MAX]; /* model.init.file resolved against dir, "" for glorot_uniform */

  md_optimizer_spec optimizer;  /* optimizer: (kind required) */

  /* dataset */
  char   csv[SCN_PATH_MAX];     /* dataset.csv resolved, "" when synthetic or files */
  char   graph_nodes_csv[SCN_PATH_MAX]; /* dataset.graph.nodes resolved, "" without a graph */
  char   graph_edges_csv[SCN_PATH_MAX]; /* dataset.graph.edges resolved */
  int    nfiles;                /* dataset.files: CSV files, in order (0: csv or synthetic) */
  char   files[SCN_FILES_CHARS];/* their resolved paths, each NUL-terminated, back to back */
  char   label[128];            /* dataset.label, "" = last column */
  int    nlabels;               /* entries of dataset.labels (0: none given) */
  char   labels[SCN_MAX_LABELS][128]; /* dataset.labels: the target columns, in output order */
  int    ninput_columns;        /* dataset.inputs' columns (0: the feature columns in header order) */
  char   input_columns[SCN_MAX_INPUT_COLUMNS][64]; /* them, in model.inputs' order */
  size_t synthetic_rows;        /* dataset.synthetic.rows */
  int    synthetic_features;
  int    synthetic_classes;
  md_shape synthetic_shape;     /* dataset.synthetic.shape (rank 0: given as features) */
  int    global_batch;          /* dataset.global_batch (required) */
  int    repeat;                /* dataset.repeat (default true) */
  long   shuffle_buffer;        /* dataset.shuffle.buffer; 0: no shuffle (default) */
  scn_distribute distribute;    /* dataset.distribute (default dataset) */
  scn_auto_shard auto_shard;    /* dataset.auto_shard_policy (default auto) */
  int    prefetch;              /* dataset.prefetch: batches made ahead of the step (default 1) */
  double pipeline_per_example_s;/* dataset.pipeline.per_example: host time on one vCPU (default 1us) */
  double pipeline_per_batch_s;  /* dataset.pipeline.per_batch: per per-replica batch (default 20us) */

  /* training */
  long   steps;                 /* training.steps, or epochs converted by the loader: -1 if epochs */
  long   epochs;                /* training.epochs, 0 if steps given */
  long   steps_per_epoch;       /* training.steps_per_epoch: a parameter_server fit's epoch (0: none) */
  int    pss_shards;            /* training.pss_evaluation_shards: a parameter_server fit's exact
                                  evaluation's shards (0: none; -1 auto, 5 per worker) */
  scn_loss_reduction loss_reduction; /* training.loss_reduction (default global_batch) */
  int nmetrics;           /* training.metrics: compiled metrics, each a metrics.csv column */
  md_metric_kind metrics[MD_METRIC_KIND_COUNT]; /* as written (accuracy unresolved), no repeats */
  scn_run_mode mode;                /* mode (default fit) */
  double validation_split;      /* training.validation_split: the last fraction of the rows held out
                                  for validation, in (0, 1) (0: none) */
  char   validation_csv[SCN_PATH_MAX]; /* training.validation_data.csv: validation rows ("" none) */
  long   validation_steps;      /* training.validation_steps: batches per evaluation (0: one pass) */
  int    validation_batch_size; /* training.validation_batch_size (0: dataset.global_batch) */
  int    validation_freq;       /* training.validation_freq as an int: every N epochs (default 1) */
  int    nvalidation_at;        /* training.validation_freq as a list: its epochs (0: the int) */
  long   validation_at[SCN_MAX_VALIDATION_AT]; /* those epochs, 1-based as Keras counts them */
  int    jit_compile;           /* training.jit_compile (default false; a TPU always compiles) */
  int    steps_per_execution;   /* training.steps_per_execution: steps per tf.function launch (default 1) */
  int    fast_forward;          /* training.fast_forward (default true): skip proven-periodic steps */
  int    grad_accum;            /* training.gradient_accumulation_steps: micro-batches per step (0 or 1:
                                  none); also set as optimizer.accumulation_steps */
  int    rematerialize;         /* training.rematerialize (default false) */
  int    remat_blocks;          /* training.rematerialize_blocks (default false; over rematerialize) */
  double compile_time_s;        /* training.compile.time; -1: base and per_op below */
  double compile_base_s;        /* training.compile.base (default sim_compile_default's) */
  double compile_per_op_s;      /* training.compile.per_op (default sim_compile_default's) */
  int    xla_fusion;            /* training.compile.fusion (default: true where XLA compiles the step,
                                ** a TPU's or jit_compile's): compile/fusion.c's rules */
  long   ckpt_every;            /* training.checkpoint.every_steps; 0: no checkpoints */
  long   ckpt_max_to_keep;      /* training.checkpoint.max_to_keep (default 1) */
  double ckpt_bytes_per_s;      /* training.checkpoint.bandwidth (default 1GB/s) */
  int    ckpt_async;            /* training.checkpoint.async (default false: the step waits) */
  int    has_restart;           /* training.restart given: a stopped sync job restarts */
  double restart_delay_s;       /* training.restart.delay (default 60s) */
  scn_callbacks cb;             /* training.callbacks */

  /* faults, expect */
  int    nfaults;               /* entries of faults */
  scn_fault faults[SCN_MAX_FAULTS];
  int    nexpects;              /* entries of expect */
  scn_expect expects[SCN_MAX_EXPECTS];

  /* outputs */
  char   out_dir[SCN_PATH_MAX]; /* outputs.dir, resolved; -o overrides; default out/<name> */
  unsigned plots;               /* outputs.plots: bit i for report.h's REPORT_CHARTS[i] (default loss, step_time) */
  scn_plot_format format;       /* outputs.format (default png) */
  int    trace;                 /* outputs.trace (default true) */
  int    outputs_ops;           /* outputs.ops (default false): ops.csv and step.hlo.txt */
  int    variables_per_replica; /* outputs.variables: 1 per_replica (a row per copy), 0 per_variable (default) */
  int    keep_points;           /* outputs.keep_points: podsim plan keeps each point's files (default false) */
  char   prices_file[SCN_PATH_MAX]; /* outputs.prices, resolved; "" : the built-in table (prices.c) */
  int    price_spot;            /* outputs.price_model: 1 spot, 0 on_demand (default) */
  int    recommend_cost;        /* outputs.recommend: 1 cost, 0 chip_hours (default; podsim plan) */
  int    tensorboard;           /* outputs.tensorboard (default false): train/events.out.tfevents.* */
  double price_per_hour;        /* the cluster's USD per hour in that model (chips of a TPU slice, or
                                   every VM); NaN when a price is missing */
  char   price_missing[96];     /* the first machine without a price, when price_per_hour is NaN */

  /* sweep (podsim plan): the values themselves stay in the tree, where each point sets them */
  int    nsweep;                /* swept keys, in file order (0: no sweep) */
  char   sweep_paths[SCN_MAX_SWEEP][128]; /* each key's path, as --set writes it */
  int    sweep_values[SCN_MAX_SWEEP];     /* values listed for each */
  long   sweep_points;          /* the grid's points: the product of sweep_values (1 without a sweep) */

  double host_bytes;            /* the loader's estimate of the host memory a training run needs
                                ** (at most scenario_host_memory(), else the load failed) */
  double output_bytes;          /* the least a training run writes: metrics.csv's rows, the tfevents
                                ** scalars, final_weights.csv's values (the run refuses a DIR whose
                                ** file system has less free) */
} scenario;

/* The host memory runs may use: PODSIM_HOST_MEMORY (a size such as 8GiB) when set, else the
** host's physical RAM. */
double scenario_host_memory(void);
/* 0 when PODSIM_HOST_MEMORY is unset or a size above zero; else -1 with WHY ("PODSIM_HOST_MEMORY:
** expected ..., found ..."): the CLI refuses it (exit 2) rather than fall back to the RAM unsaid. */
int scenario_host_memory_check(char *why, size_t len);

/* Loads and validates FILE with the overrides ("key.path=value", YAML syntax for the value).
** Returns 0, or -1 with *err filled. */
/* workload.collective.axis names, index = scenario.workload_axis: a slice's chip axes, the
** two cores of a v2/v3 chip, and the slices of a multislice (SCN_AXIS_SLICE). */
extern const char *const SCN_AXES[];
enum { SCN_AXIS_SLICE = 4 };

/* strategy.distribution's sharding recipe (compile/'s name: "fsdp", ...), preset or derived
** from the layout map; NULL without strategy.distribution. */
const char *scenario_sharding_recipe(const scenario *s);
/* The mesh's model axis length (1 with one axis). */
int scenario_model_axis(const scenario *s);
/* hybrid_fsdp_sp's fsdp axis, the mesh's middle {data, fsdp, model} (1 under any other preset). */
int scenario_fsdp_axis(const scenario *s);
/* The pipeline's stages (the mesh's `pipeline` axis; 1 without one) and microbatches. */
int scenario_pipeline_stages(const scenario *s);
int scenario_pipeline_microbatches(const scenario *s);
/* Model chunks a device holds (pipeline.virtual_stages: 1 but interleaved): the model's stages
** are stages x chunks. */
int scenario_pipeline_chunks(const scenario *s);
const char *scenario_pipeline_schedule(const scenario *s);  /* "gpipe", "1f1b" or "interleaved" */
/* strategy.kind as the scenario writes it ("tpu_v1", ...). */
const char *scenario_strategy_name(scn_strategy_kind kind);
/* Whether a layer kind reads the integer ids of model.input (embedding,
** token_and_position_embedding): only a first layer may, and an ids input needs one. */
int scenario_layer_reads_ids(md_layer_kind kind);
/* The model the scenario describes, for md_model_new: values, or shapes alone (numerics off, and
** the loader's own check that every layer fits the one before it). */
md_model_spec scenario_model_spec(const scenario *s, int shapes_only);
/* expect's metric names (summary.json fields), by index; NULL past the last. */
const char *scenario_metric_name(int metric);
/* "lt", "le", ... */
const char *scenario_cmp_name(scn_cmp cmp);
int  scenario_load(const char *path, const char *const *overrides, int noverrides,
                   scenario *out, scn_error *err);

/* The chips a run occupies: the TPU slice's, else each worker's accelerators (one per worker
** without): summary.json's chip_hours and podsim plan's chips column. */
int  scenario_chips(const scenario *s);

/* Whether PATH ("dataset.shuffle", "cluster.tpu.type") names a key of the format, walked through
** the loader's own tables: the paths `sweep` accepts and docs/scenario-format.md lists. */
int  scenario_key_path_known(const char *path);

/* The JSON Schema (draft 2020-12) of the format, written from the loader's key tables
** (scenarios/config/schema.c): `podsim schema`, docs/scenario.schema.json. Free it with free(). */
char *scenario_json_schema(void);

/* The two halves of scenario_load, for later issues that need the parse tree (sweep, printing
** the effective config): scenario_load_tree reads FILE and applies the overrides, giving a tree
** (struct yt_doc, scenarios/config/yamltree.h) to free with yt_doc_free; scenario_from_tree validates a
** tree into *out (PATH names the file for relative paths). Both return 0, or -1 with *err. */
struct yt_doc;
int  scenario_load_tree(const char *path, const char *const *overrides, int noverrides,
                        struct yt_doc **tree, scn_error *err);
int  scenario_from_tree(const struct yt_doc *tree, const char *path, scenario *out, scn_error *err);

#endif
