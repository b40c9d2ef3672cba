/*
** ps_checkpoint.c: snapshots of what the ps tasks hold, for checkpoints and restores
** (ds_ps_snapshot_).
*/
#include "strategies/ps/psInt.h"

#include <string.h>

/* ---- checkpoints --------------------------------------------------------------------------- */

/* Every component's value and slots, back to back in registry order (the iterations among them:
** its int64 bytes), as tf.train.Checkpoint saves them. Versions are not saved: they count updates
** applied, which a restore does not undo (invariant 2). A component of shapes alone (numerics
** off) counts its bytes in the checkpoint's size but has none in data. */
struct ds_ps_snapshot {
  int ncomps;             /* components saved: the registry's size then */
  size_t nbytes;          /* the checkpoint's bytes, as TF writes them */
  unsigned char *data;    /* the values and slots held (those of shapes alone left out) */
};

/* One part (a value or a slot, NULL when of shapes alone) between the registry and buf at *at. */
static void copy_part(unsigned char *buf, size_t *at, void *part, size_t bytes, int save) {
  if (part == NULL) return;
  if (buf && save) memcpy(buf + *at, part, bytes);
  else if (buf) memcpy(part, buf + *at, bytes);
  *at += bytes;
}

/* Copies every component's value and slots between the registry and buf (save: to buf);
** returns the checkpoint's bytes and *held those buf holds. NULL buf only counts them. */
static size_t snapshot_copy(ps_state *ps, unsigned char *buf, int save, size_t *held) {
  size_t at = 0, total = 0;
  for (int i = 0; i < ps->ncomps; i++) {
    ps_component *c = &ps->comps[i];
    md_tensor *t = ds_variable_copy(c->holder, c->shard);
    size_t bytes = t->size * md_dtype_size(t->dtype), slot_bytes = t->size * sizeof(float);
    copy_part(buf, &at, t->data, bytes, save);
    for (int k = 0; k < c->nslots; k++) copy_part(buf, &at, c->slots[k], slot_bytes, save);
    total += bytes + (size_t)c->nslots * slot_bytes;
  }
  *held = at;
  return total;
}

ds_ps_snapshot *ds_ps_snapshot_take(ds_strategy *s) {
  ps_state *ps = state_of(s);
  ds_ps_snapshot *snap = base_xcalloc(1, sizeof *snap);
  size_t held;
  snap->ncomps = ps->ncomps;
  snap->nbytes = snapshot_copy(ps, NULL, 1, &held);
  snap->data = base_xcalloc(held + 1, 1);
  snapshot_copy(ps, snap->data, 1, &held);
  return snap;
}

uint64_t ds_ps_snapshot_bytes(const ds_ps_snapshot *snap) { return snap->nbytes; }

int ds_ps_snapshot_restore(ds_strategy *s, const ds_ps_snapshot *snap, ds_status *st) {
  ps_state *ps = state_of(s);
  size_t held;
  if (ps->ncomps != snap->ncomps || snapshot_copy(ps, NULL, 0, &held) != snap->nbytes)
    return ds_status_set(st, DS_INVALID_ARGUMENT_ERROR, "the checkpoint holds %d components of %zu bytes; "
                         "the strategy has %d", snap->ncomps, snap->nbytes, ps->ncomps);
  snapshot_copy(ps, snap->data, 0, &held);
  return 0;
}

md_tensor *ds_ps_snapshot_value(const ds_strategy *s, const ds_ps_snapshot *snap, const ds_variable *v) {
  ps_state *ps = state_of(s);
  int first = ds__ps_first_comp(ps, v), n = ds__ps_num_comps(ps, v);
  if (first < 0 || ps->ncomps != snap->ncomps) return NULL;
  md_tensor **parts = base_xcalloc((size_t)n, sizeof *parts);
  size_t at = 0;
  for (int i = 0; i < first + n; i++) {  /* the layout of snapshot_copy: value, then slots */
    const ps_component *c = &ps->comps[i];
    const md_tensor *t = ds__ps_comp_value(c);
    if (i >= first) parts[i - first] = md_tensor_from(t->dtype, t->rank, t->shape, t->data ? snap->data + at : NULL);
    if (t->data) at += ds__ps_value_bytes(t) + (size_t)c->nslots * t->size * sizeof(float);
  }
  md_tensor *whole = md_tensor_concat(parts, n, 0);
  for (int k = 0; k < n; k++) md_tensor_free(parts[k]);
  free(parts);
  return whole;
}

void ds_ps_snapshot_free(ds_ps_snapshot *snap) {
  if (snap == NULL) return;
  free(snap->data);
  free(snap);
}
