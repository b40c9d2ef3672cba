/*
** psInt.h: what the files of ParameterServerStrategy share (ps_strategy.c: the strategy, its
** tasks and the coordinator; ps_cluster.c: TF_CONFIG and the cluster spec; ps_registry.c: what the
** ps tasks hold; ps_ops.c: timed reads and pushes; ps_checkpoint.c: snapshots). The design notes
** and invariants are at the top of ps_strategy.c. Only those files include it.
*/
#ifndef PODSIM_PS_INT_H
#define PODSIM_PS_INT_H

#include "strategies/ps/coordinator.h"
#include "strategies/ps/ps_strategy.h"
#include "strategies/core/strategiesInt.h"

#define MAX_SLOTS 2
#define ROUTE_MAX 64

typedef struct ps_task {
  char device[DS_DEVICE_NAME_MAX]; /* TF device name */
  sim_cpu *cpu;           /* its compute */
  sim_mempool *ram;       /* its host memory */
  sim_roofline roofline;  /* how its updates turn into time */
  int host;               /* its index on the fabric */
  int failed;             /* ps tasks: marked failed by fault injection */
} ps_task;

typedef struct ps_component {
  ds_variable *holder;    /* the variable the program holds: plain, or the ShardedVariable */
  int shard;              /* its copy in holder: the shard, 0 for a plain variable */
  int ps;                 /* the ps task holding it */
  const char *kind;       /* "variable", "shard" or "iterations" */
  int64_t version;        /* updates applied (invariant 2) */
  int nslots;             /* optimizer slots it has */
  float *slots[MAX_SLOTS];/* their values, as many elements as the component; NULL for a
                          ** component of shapes alone (numerics off) */
  char slot_names[MAX_SLOTS][DS_DEVICE_NAME_MAX]; /* "<component>/<suffix>" */
  uint64_t bytes;         /* reserved on its ps's RAM: value and slots (invariant 5) */
} ps_component;

struct ps_op;
typedef struct ps_xfer {
  struct ps_op *op;       /* the operation it belongs to */
  int comp;               /* the component it moves, -1 for a variable of the coordinator */
  int index;              /* its place in the operation's versions / applied_at, -1: none */
  int read;               /* read: its variable's entry in the op's reads */
  int shard;              /* read: the component's copy in that variable (0 for a plain one) */
  double ask;             /* lookup: the bytes of the ids its ps receives first */
  int answer;             /* lookup: the slot of its response in the op's acts */
  const md_tensor *grad;  /* push: this component's gradient (IndexedSlices: its values), NULL to
                          ** add 1 to iterations */
  const md_tensor *indices; /* push of IndexedSlices: the component's own rows (int64), else NULL */
  double wire;            /* bytes it moves: a push's values and indices (at their dtype's size), a
                          ** read's or lookup's rows */
  double flops, bytes;    /* push: the update's cost on the ps, once applied */
  int applied;            /* push: it arrived at a live ps and was applied */
} ps_xfer;

/* One variable of a read operation: read whole, or looked up. */
typedef struct ps_read {
  ds_variable *v;         /* the variable */
  const md_tensor *ids;   /* lookup: the caller's ids (alive while it waits); NULL: read whole */
  md_tensor *out;         /* the result being filled; the caller's once returned */
  int first;              /* its first transfer in the op's xfers (one per component) */
  int asking;             /* lookup: requests that have not arrived yet */
} ps_read;

typedef struct ps_op {
  struct ps_state *ps;    /* the strategy's state */
  int host;               /* the fabric host of the worker (or coordinator) running it */
  int nreads;             /* read: variables read, the iterations last when asked for */
  ps_read *reads;         /* nreads of them */
  int n;                  /* transfers */
  ps_xfer *xfers;         /* n of them */
  int nacts;              /* slots of acts in use: the n transfers, then lookups' responses */
  sim_activity **acts;    /* 2n slots, handed to sim_wait_all (responses join it: invariant 6) */
  md_tensor **pieces;     /* push: gradient rows cut for shards and slices' indices, owned */
  int npieces;            /* entries in pieces */
  int64_t *versions;      /* the caller's array of versions or applied_at, or NULL */
  int64_t t;              /* push: the iteration its updates use */
  int failed_ps;          /* the first failed ps met, or -1 */
  int failed_at;          /* the transfer that met it */
} ps_op;

typedef struct ps_state {
  sim_engine *engine;     /* where the tasks live */
  int nworkers, nps;      /* worker and ps tasks */
  int nevaluators;        /* evaluator tasks (0 or 1) */
  ps_task *tasks;         /* workers, then ps tasks, the coordinator, then the evaluator */
  sim_fabric *fabric;     /* between every task */
  int has_partitioner;    /* a variable_partitioner was given */
  ds_partitioner partitioner; /* it */
  int64_t counter;        /* round-robin slots taken (invariant 4) */
  int ncomps, cap;        /* components, and room */
  ps_component *comps;    /* the registry (invariant 1) */
  int has_optimizer;      /* ds_ps_set_optimizer was called */
  md_optimizer_spec opt;  /* its spec */
  ds_variable *iterations;/* optimizer.iterations (int64 scalar), owned */
  ps_op **ops;            /* nworkers + 1 slots (invariant 3) */
  int ngpus;              /* accelerators of worker 0 built as the strategy's replicas */
  sim_link **gpu_links;   /* their up and down links, [2 * k] up, [2 * k + 1] down */
  ds_coordinator *coordinator; /* ds_cluster_coordinator_new's, owned: one per strategy */
} ps_state;

static inline ps_state *state_of(const ds_strategy *s) {
  return ds_strategy_kind(s) == DS_PARAMETER_SERVER ? ds__strategy_owned(s) : NULL;
}

static inline ps_task *task(ps_state *ps, ds_ps_job job, int index) {
  int base = job == DS_PS_WORKER ? 0 : job == DS_PS_PS ? ps->nworkers
           : job == DS_PS_COORDINATOR ? ps->nworkers + ps->nps : ps->nworkers + ps->nps + 1;
  return &ps->tasks[base + index];
}

/* _verify_args_and_config, _validate_cluster_spec and _connect_to_cluster's checks, in order. */
int ds__ps_check_spec(const ds_ps_cluster_spec *c, ds_status *st);
/* Frees an operation and what it owns (invariant 3: its worker's next operation or the end). */
void ds__ps_op_free(ps_op *op);
/* The fabric links from host `from` to host `to` into out[0..max); returns how many there are. */
size_t ds__ps_host_route(ps_state *ps, int from, int to, sim_link **out, size_t max);
/* A component's value: its variable's copy (the shard, or the whole plain variable). */
const md_tensor *ds__ps_comp_value(const ps_component *c);
/* Bytes of t's values at its dtype's size. */
size_t ds__ps_value_bytes(const md_tensor *t);
/* The first component of v, or -1. */
int ds__ps_first_comp(const ps_state *ps, const ds_variable *v);
/* The components of v (its shards; 1 for a plain variable), -1 when the ps tasks hold none. */
int ds__ps_num_comps(const ps_state *ps, const ds_variable *v);

/* ps_registry.c: the strategy's ds__kind_ops (strategiesInt.h): ds_variable_new inside its scope
** (colocate_with: the innermost colocate_vars_with target, or NULL), and ds_variable_free of one
** of its variables. */
ds_variable *ds__ps_create_variable(ds_strategy *s, const md_tensor *initial, const ds_variable_options *o,
                                    const ds_variable *colocate_with, ds_status *st);
void         ds__ps_forget_variable(ds_strategy *s, const ds_variable *v);

#endif
