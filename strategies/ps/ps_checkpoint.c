/*
** ps_checkpoint.c: snapshots of what the ps tasks hold, for checkpoints and restores
** (ds_ps_snapshot_).
*/
#include "strategies/ps/psInt.h"

#include <string.h>

/* ---- checkpoints --------------------------------------------------------------------------- */

/* Every component's value and slots, back to back in registry order (the iterations among them:
** its int64 bytes), as tf.train.Checkpoint saves them. Versions are not saved: they count updates
** applied, which a restore does not undo (invariant 2). */
struct ds_ps_snapshot {
  int ncomps;             /* components saved: the registry's size then */
  size_t nbytes;          /* bytes in data */
  unsigned char *data;    /* the values and slots */
};

/* Copies every component's value and slots between the registry and buf (save: to buf);
** returns the bytes. NULL buf only counts them. */
static size_t snapshot_copy(ps_state *ps, unsigned char *buf, int save) {
  size_t at = 0;
  for (int i = 0; i < ps->ncomps; i++) {
    ps_component *c = &ps->comps[i];
    md_tensor *t = ds_variable_copy(c->holder, c->shard);
    size_t bytes = t->size * md_dtype_size(t->dtype), slot_bytes = t->size * sizeof(float);
    if (buf && save) memcpy(buf + at, t->data, bytes);
    else if (buf) memcpy(t->data, buf + at, bytes);
    at += bytes;
    for (int k = 0; k < c->nslots; k++, at += slot_bytes) {
      if (buf && save) memcpy(buf + at, c->slots[k], slot_bytes);
      else if (buf) memcpy(c->slots[k], buf + at, slot_bytes);
    }
  }
  return at;
}

ds_ps_snapshot *ds_ps_snapshot_take(ds_strategy *s) {
  ps_state *ps = state_of(s);
  ds_ps_snapshot *snap = base_xcalloc(1, sizeof *snap);
  snap->ncomps = ps->ncomps;
  snap->nbytes = snapshot_copy(ps, NULL, 1);
  snap->data = base_xcalloc(snap->nbytes, 1);
  snapshot_copy(ps, snap->data, 1);
  return snap;
}

uint64_t ds_ps_snapshot_bytes(const ds_ps_snapshot *snap) { return snap->nbytes; }

int ds_ps_snapshot_restore(ds_strategy *s, const ds_ps_snapshot *snap, ds_status *st) {
  ps_state *ps = state_of(s);
  if (ps->ncomps != snap->ncomps || snapshot_copy(ps, NULL, 0) != snap->nbytes)
    return ds_status_set(st, DS_INVALID_ARGUMENT_ERROR, "the checkpoint holds %d components of %zu bytes; "
                         "the strategy has %d", snap->ncomps, snap->nbytes, ps->ncomps);
  snapshot_copy(ps, snap->data, 0);
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
    if (i >= first) {
      parts[i - first] = md_tensor_new(t->dtype, t->rank, t->shape);
      memcpy(parts[i - first]->data, snap->data + at, ds__ps_value_bytes(t));
    }
    at += ds__ps_value_bytes(t) + (size_t)c->nslots * t->size * sizeof(float);
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
