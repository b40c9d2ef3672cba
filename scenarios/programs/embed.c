/*
** embed.c: the embedding tables of a sync step (embed.h has the model and its numerics).
*/
#include "scenarios/programs/embed.h"

#include <math.h>
#include <string.h>

#include "base/base.h"
#include "sim/collective.h"

/* One table an id-reading layer looks up. */
typedef struct emb_table {
  int var;                /* its variable in the model */
  int64_t rows;           /* vocabulary */
  int64_t dim;            /* width of a row */
  int ids;                /* ids per example it looks up */
} emb_table;

struct emb_run {
  ds_strategy *strategy;  /* the replicas' collective group and rooflines */
  emb_mode mode;          /* TPUEmbedding, or how the IndexedSlices are gathered (embed.h) */
  int nreplicas;          /* replicas (TPUEmbedding: chips the tables are sharded over) */
  md_optimizer_spec opt;  /* the tables' optimizer (TPUEmbedding's own; the gather ways: the model's) */
  int slots;              /* its slots per variable: each touched row's slots are updated too */
  int ntables;            /* tables */
  emb_table *tables;      /* in variable order */
  unsigned char *is_table; /* per model variable: 1 for a table */
  size_t dense_floats;    /* floats of every other variable */
  size_t ids_per_example; /* sum of the tables' ids per example */
  size_t floats_per_example; /* sum of ids x dim: one example's slices */
  int max_slice;          /* the most examples a replica reads in a step */
  int64_t *ids[2];        /* numerics: the board's ids [parity][replica][max_slice x ids_per_example] */
  float *vals[2];         /* numerics: its slices [parity][replica][max_slice x floats_per_example] */
  int *count[2];          /* numerics: examples each replica posted [parity][replica] */
  float **table_slots;    /* numerics, TPUEmbedding: [replica x ntables + table] its optimizer's
                          ** slots, slots x rows x dim floats each (the replica's mirrored copy) */
  unsigned char *touched; /* numerics, TPUEmbedding: per row of the widest table, scratch */
};

/* Marks in `chosen` (nvars entries) the tables emb_ takes: all, or the max_tables largest by rows,
** ties in variable order (Google's MLPerf DLRM sorts its tables by vocabulary and puts the first
** num_tables_in_ec in TPUEmbedding). Returns how many. */
static int choose_tables(const md_model *m, int max_tables, unsigned char *chosen) {
  int nvars = md_model_num_vars(m), n = 0;
  for (int v = 0; v < nvars; v++) {
    if (md_model_table_ids_per_example(m, v) == 0) continue;
    int64_t rows = md_model_var_const(m, v)->shape[0];
    int larger = 0; /* tables that go before v */
    for (int u = 0; u < nvars; u++) {
      if (u == v || md_model_table_ids_per_example(m, u) == 0) continue;
      int64_t r = md_model_var_const(m, u)->shape[0];
      larger += r > rows || (r == rows && u < v);
    }
    chosen[v] = max_tables == 0 || larger < max_tables;
    n += chosen[v];
  }
  return n;
}

emb_run *emb_new(ds_strategy *s, const md_model *m, const md_optimizer_spec *opt, emb_mode mode, int numerics,
                 int nreplicas, int max_slice, int max_tables) {
  int nvars = md_model_num_vars(m);
  unsigned char *chosen = base_xcalloc((size_t)nvars + 1, 1);
  int ntables = choose_tables(m, max_tables, chosen);
  if (ntables == 0 || nreplicas < 2 || ds_collective(s) == NULL) {
    free(chosen);
    return NULL;
  }
  emb_run *e = base_xcalloc(1, sizeof *e);
  e->strategy = s;
  e->mode = mode;
  e->nreplicas = nreplicas;
  e->opt = *opt;
  e->slots = md_optimizer_slots_per_var(opt);
  e->max_slice = max_slice;
  e->tables = base_xcalloc((size_t)ntables, sizeof *e->tables);
  e->is_table = chosen;
  for (int v = 0; v < nvars; v++) {
    const md_var *var = md_model_var_const(m, v);
    int k = md_model_table_ids_per_example(m, v);
    if (!chosen[v]) {
      e->dense_floats += var->size;
      continue;
    }
    e->tables[e->ntables++] = (emb_table){ v, var->shape[0], var->shape[1], k };
    e->ids_per_example += (size_t)k;
    e->floats_per_example += (size_t)k * (size_t)var->shape[1];
  }
  int64_t widest = 0;
  for (int i = 0; i < e->ntables; i++) widest = e->tables[i].rows > widest ? e->tables[i].rows : widest;
  if (numerics && mode == EMB_TPU) {
    e->touched = base_xcalloc((size_t)widest, 1);
    e->table_slots = base_xcalloc((size_t)nreplicas * (size_t)e->ntables, sizeof *e->table_slots);
    for (int k = 0; k < nreplicas * e->ntables; k++) {
      const emb_table *t = &e->tables[k % e->ntables];
      size_t n = (size_t)e->slots * (size_t)(t->rows * t->dim);
      e->table_slots[k] = base_xcalloc(n ? n : 1, sizeof(float));
      for (size_t j = 0; j < n; j++) e->table_slots[k][j] = md_optimizer_slot_initial(opt);
    }
  }
  for (int p = 0; p < 2 && numerics; p++) {
    size_t slots = (size_t)nreplicas * (size_t)(max_slice > 0 ? max_slice : 1);
    e->ids[p] = base_xcalloc(slots * e->ids_per_example, sizeof *e->ids[p]);
    e->vals[p] = base_xcalloc(slots * e->floats_per_example, sizeof *e->vals[p]);
    e->count[p] = base_xcalloc((size_t)nreplicas, sizeof *e->count[p]);
  }
  return e;
}

void emb_free(emb_run *e) {
  if (e == NULL) return;
  for (int p = 0; p < 2; p++) {
    free(e->ids[p]);
    free(e->vals[p]);
    free(e->count[p]);
  }
  for (int k = 0; e->table_slots && k < e->nreplicas * e->ntables; k++) free(e->table_slots[k]);
  free(e->table_slots);
  free(e->touched);
  free(e->tables);
  free(e->is_table);
  free(e);
}

int emb_is_table(const emb_run *e, int v) { return e != NULL && e->is_table[v]; }

size_t emb_dense_floats(const emb_run *e) { return e->dense_floats; }

/* ---- time --------------------------------------------------------------------------------- */

/* count rounded up to a multiple of p: an all-to-all sends every rank the same block, the
** largest one (a rank with fewer ids for an owner pads). */
static size_t blocks_of(size_t count, int p) { return (count + (size_t)p - 1) / (size_t)p * (size_t)p; }

/* One collective over the replicas on shapes alone (the values travel by the board), by the
** strategy's algorithm where it has the op (the TPU's torus runs the all-to-all over every
** axis at once; NCCL's on GPUs), else by the ring. */
static int collective(emb_run *e, sim_actor *self, int r, sim_coll_op op, size_t count) {
  sim_collective *c = ds_collective(e->strategy);
  sim_algo algo = ds_all_reduce_algorithm(e->strategy);
  if (sim_collective_check(c, op, algo, 0, count) != SIM_OK) algo = SIM_ALGO_RING;
  int rc = sim_collective_run(self, c, ds_replica_rank(e->strategy, r), op, algo, 0, NULL, count);
  return rc == SIM_OK ? SIM_OK : SIM_FAILED;
}

/* The owner's HBM traffic for `per_row` floats moved per touched row of each table: a chip owns
** 1/N of the rows and receives, from the N chips, n_max x ids rows of each table on average
** (mod sharding spreads ids evenly), at the chip's memory bandwidth. */
static int owner_work(emb_run *e, sim_actor *self, int r, int n_max, double per_row) {
  double bw = ds_replica_roofline(e->strategy, r)->mem_bw, bytes = 0.0;
  for (int i = 0; i < e->ntables; i++)
    bytes += (double)n_max * e->tables[i].ids * (double)e->tables[i].dim * per_row * 4.0;
  if (bw <= 0.0 || bytes <= 0.0) return SIM_OK;
  return sim_sleep(self, sim_time_from_s(bytes / bw));
}

/* Floats of the vectors one chip sends back per step: each example's looked-up rows (a row of
** a sample's feature whose ids lie on several owners comes back once per owner: at most
** min(ids, N) partial sums under the feature's combiner). */
static size_t vector_floats(const emb_run *e, int n_max) {
  size_t f = 0;
  for (int i = 0; i < e->ntables; i++) {
    int k = e->tables[i].ids < e->nreplicas ? e->tables[i].ids : e->nreplicas;
    f += (size_t)n_max * (size_t)k * (size_t)e->tables[i].dim;
  }
  return f;
}

int emb_forward(emb_run *e, sim_actor *self, int r, int n_max) {
  if (e->mode != EMB_TPU || n_max == 0) return SIM_OK;
  /* ids are int32 on the TPU: a word each; each owner reads a row and writes it out. */
  if (collective(e, self, r, SIM_COLL_ALL_TO_ALL, blocks_of((size_t)n_max * e->ids_per_example, e->nreplicas)) != SIM_OK ||
      owner_work(e, self, r, n_max, 2.0) != SIM_OK)
    return SIM_FAILED;
  return collective(e, self, r, SIM_COLL_ALL_TO_ALL, blocks_of(vector_floats(e, n_max), e->nreplicas));
}

/* ---- numerics ------------------------------------------------------------------------------ */

/* Replica r's ids and slices of this step onto the board. */
static void post(emb_run *e, int r, long step, const md_model *m, const md_batch *b, const md_grads *g) {
  int p = (int)(step & 1);
  size_t at_ids = (size_t)r * (size_t)e->max_slice * e->ids_per_example;
  size_t at_vals = (size_t)r * (size_t)e->max_slice * e->floats_per_example;
  e->count[p][r] = b->n;
  for (int i = 0; i < e->ntables; i++) {
    const emb_table *t = &e->tables[i];
    size_t n = md_model_table_ids(m, t->var, b, e->ids[p] + at_ids);
    memcpy(e->vals[p] + at_vals, md_grads_slices(g, t->var), n * (size_t)t->dim * sizeof(float));
    at_ids += n;
    at_vals += n * (size_t)t->dim;
  }
}

/* Every table's summed gradient from the board into g: from zero, replica by replica, each
** replica's slices in batch order (embed.h). */
static void sum_board(const emb_run *e, long step, md_grads *g) {
  int p = (int)(step & 1);
  for (int i = 0; i < e->ntables; i++) memset(g->g[e->tables[i].var], 0, sizeof(float) * (size_t)(e->tables[i].rows * e->tables[i].dim));
  for (int q = 0; q < e->nreplicas; q++) {
    const int64_t *ids = e->ids[p] + (size_t)q * (size_t)e->max_slice * e->ids_per_example;
    const float *vals = e->vals[p] + (size_t)q * (size_t)e->max_slice * e->floats_per_example;
    for (int i = 0; i < e->ntables; i++) {
      const emb_table *t = &e->tables[i];
      float *dst = g->g[t->var];
      size_t n = (size_t)e->count[p][q] * (size_t)t->ids;
      for (size_t j = 0; j < n; j++, vals += t->dim) {
        float *row = dst + ids[j] * t->dim;
        for (int64_t d = 0; d < t->dim; d++) row[d] += vals[d];
      }
      ids += n;
    }
  }
}

/* TPUEmbedding's update on replica r's copy: each table's rows the step touched (any replica's
** ids), their summed gradient (g, sum_board's) through the tables' optimizer, row by row, as
** the owners apply it; the other rows keep their weights and slots. */
static void update_tables(emb_run *e, int r, long step, int64_t iteration, md_model *m, const md_grads *g) {
  int p = (int)(step & 1);
  for (int i = 0; i < e->ntables; i++) {
    const emb_table *t = &e->tables[i];
    memset(e->touched, 0, (size_t)t->rows);
    size_t before = 0;  /* ids per example of the tables posted before this one */
    for (int j = 0; j < i; j++) before += (size_t)e->tables[j].ids;
    for (int q = 0; q < e->nreplicas; q++) {
      const int64_t *ids = e->ids[p] + (size_t)q * (size_t)e->max_slice * e->ids_per_example +
                           (size_t)e->count[p][q] * before;
      for (size_t j = 0; j < (size_t)e->count[p][q] * (size_t)t->ids; j++) e->touched[ids[j]] = 1;
    }
    float *w = md_model_var(m, t->var)->data, *slots[2] = {NULL, NULL};
    for (int64_t row = 0; row < t->rows; row++) {
      if (!e->touched[row]) continue;
      size_t at = (size_t)(row * t->dim);
      for (int k = 0; k < e->slots; k++)
        slots[k] = e->table_slots[r * e->ntables + i] + (size_t)k * (size_t)(t->rows * t->dim) + at;
      md_optimizer_update(&e->opt, iteration, w + at, g->g[t->var] + at, slots, (size_t)t->dim, NULL);
    }
  }
}

int emb_backward(emb_run *e, sim_actor *self, int r, long step, int n_max, md_model *m, const md_batch *b,
                 md_grads *grads, int64_t iteration) {
  if (e->vals[0] != NULL) post(e, r, step, m, b, grads);
  int rc = SIM_OK;
  if (e->mode == EMB_TPU) {
    /* The vectors' gradients to their owners, then the update: each touched row's weights and
    ** slots read and written. */
    rc = collective(e, self, r, SIM_COLL_ALL_TO_ALL, blocks_of(vector_floats(e, n_max), e->nreplicas));
    if (rc == SIM_OK) rc = owner_work(e, self, r, n_max, 2.0 * (1.0 + e->slots));
  } else if (n_max > 0) {
    /* Every replica's values and int64 indices (two words each), its chunk of the same size;
    ** ReductionToOneDevice receives them all on one device (an all-gather's traffic into it)
    ** and broadcasts the whole from there. */
    size_t all = (size_t)n_max * (e->floats_per_example + 2 * e->ids_per_example) * (size_t)e->nreplicas;
    rc = collective(e, self, r, SIM_COLL_ALL_GATHER, all);
    if (rc == SIM_OK && e->mode == EMB_GATHER_BROADCAST) rc = collective(e, self, r, SIM_COLL_BROADCAST, all);
  }
  if (rc == SIM_OK && e->vals[0] != NULL) sum_board(e, step, grads);
  if (rc == SIM_OK && e->table_slots != NULL) update_tables(e, r, step, iteration, m, grads);
  return rc;
}

const unsigned char *emb_own_update(const emb_run *e) {
  return e != NULL && e->mode == EMB_TPU ? e->is_table : NULL;
}

/* ---- memory -------------------------------------------------------------------------------- */

double emb_table_bytes(const emb_run *e) {
  double bytes = 0.0;
  for (int i = 0; e && i < e->ntables; i++) bytes += 4.0 * (double)e->tables[i].rows * (double)e->tables[i].dim;
  return bytes;
}

double emb_held_table_bytes(const emb_run *e) {
  if (e == NULL || e->mode != EMB_TPU) return emb_table_bytes(e);
  double bytes = 0.0;
  for (int i = 0; i < e->ntables; i++) {
    int64_t rows = (e->tables[i].rows + e->nreplicas - 1) / e->nreplicas;
    bytes += 4.0 * (double)rows * (double)e->tables[i].dim;
  }
  return bytes;
}
