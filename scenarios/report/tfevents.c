/*
** tfevents.c: Event protobufs encoded by hand (the four fields a scalar needs) in TFRecord
** framing (tfev_). Field numbers, wire types: Event wall_time 1 double (fixed64), step 2 int64
** (varint), file_version 3 string, summary 5 message; Summary value 1 repeated message;
** Summary.Value tag 1 string, simple_value 2 float (fixed32).
*/
#include "scenarios/report/tfevents.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "base/crc32c.h"
#include "scenarios/report/outputs.h"

struct tfev_writer {
  FILE *f;                /* the event file */
  unsigned char *buf;     /* the Event being encoded */
  size_t len;             /* bytes of it so far */
  size_t cap;             /* bytes allocated */
};

/* Protobuf's key byte: field number and wire type (0 varint, 1 fixed64, 2 bytes, 5 fixed32). */
#define KEY(field, wire) ((unsigned char)((field) << 3 | (wire)))

static void put(tfev_writer *w, const void *p, size_t n) {
  if (w->len + n > w->cap) {
    w->cap = (w->len + n) * 2;
    w->buf = base_xrealloc(w->buf, w->cap);
  }
  memcpy(w->buf + w->len, p, n);
  w->len += n;
}

static void put_byte(tfev_writer *w, unsigned char b) { put(w, &b, 1); }

static void put_varint(tfev_writer *w, uint64_t v) {
  while (v >= 0x80) {
    put_byte(w, (unsigned char)(v | 0x80));
    v >>= 7;
  }
  put_byte(w, (unsigned char)v);
}

/* n bytes of v, least significant first (protobuf's fixed types and TFRecord's are little-endian
** whatever the host). */
static void put_le(unsigned char *out, uint64_t v, int n) {
  for (int i = 0; i < n; i++) out[i] = (unsigned char)(v >> (8 * i));
}

static void put_fixed(tfev_writer *w, uint64_t v, int n) {
  unsigned char b[8];
  put_le(b, v, n);
  put(w, b, (size_t)n);
}

static void put_string(tfev_writer *w, int field, const char *s) {
  size_t n = strlen(s);
  put_byte(w, KEY(field, 2));
  put_varint(w, n);
  put(w, s, n);
}

/* Bytes put_varint writes for v. */
static size_t varint_size(uint64_t v) {
  size_t n = 1;
  for (; v >= 0x80; v >>= 7) n++;
  return n;
}

/* The Event's header: wall_time, and step unless 0 (proto3 leaves a default out, as TF does). */
static void put_header(tfev_writer *w, int64_t step, double wall_time) {
  uint64_t bits;
  memcpy(&bits, &wall_time, sizeof bits);
  w->len = 0;
  put_byte(w, KEY(1, 1));
  put_fixed(w, bits, 8);
  if (step != 0) {
    put_byte(w, KEY(2, 0));
    put_varint(w, (uint64_t)step);
  }
}

/* w->buf as one TFRecord. */
static int put_record(tfev_writer *w) {
  unsigned char head[12], tail[4];
  put_le(head, w->len, 8);
  put_le(head + 8, crc32c_mask(crc32c_extend(0, head, 8)), 4);
  put_le(tail, crc32c_mask(crc32c_extend(0, w->buf, w->len)), 4);
  if (fwrite(head, 1, sizeof head, w->f) != sizeof head || fwrite(w->buf, 1, w->len, w->f) != w->len ||
      fwrite(tail, 1, sizeof tail, w->f) != sizeof tail)
    return -1;
  return 0;
}

tfev_writer *tfev_open(const char *dir, double wall_time, const char *host, char *msg, size_t len) {
  char name[512], path[4096 + 600];
  if (outputs_make_dir(dir) != 0) {
    base_format(msg, len, "%s: cannot create the directory: %s", dir, strerror(errno));
    return NULL;
  }
  base_format(name, sizeof name, "events.out.tfevents.%010lld.%s", (long long)wall_time, host);
  outputs_path(path, sizeof path, dir, name);
  tfev_writer *w = base_xcalloc(1, sizeof *w);
  w->f = fopen(path, "wb");
  if (w->f == NULL) {
    base_format(msg, len, "%s: %s", path, strerror(errno));
    free(w);
    return NULL;
  }
  put_header(w, 0, wall_time);
  put_string(w, 3, "brain.Event:2");
  if (put_record(w) != 0) {
    base_format(msg, len, "%s: %s", path, strerror(errno));
    tfev_close(w);
    return NULL;
  }
  return w;
}

int tfev_write_scalars(tfev_writer *w, int64_t step, double wall_time, const tfev_scalar *v, int n) {
  size_t summary = 0;  /* the Summary's bytes: each value's key, length and body */
  for (int i = 0; i < n; i++) {
    size_t tag = strlen(v[i].tag), value = 1 + varint_size(tag) + tag + 1 + 4;
    summary += 1 + varint_size(value) + value;
  }
  put_header(w, step, wall_time);
  put_byte(w, KEY(5, 2));
  put_varint(w, summary);
  for (int i = 0; i < n; i++) {
    size_t tag = strlen(v[i].tag);
    float x = (float)v[i].value;
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    put_byte(w, KEY(1, 2));
    put_varint(w, 1 + varint_size(tag) + tag + 1 + 4);
    put_string(w, 1, v[i].tag);
    put_byte(w, KEY(2, 5));
    put_fixed(w, bits, 4);
  }
  return put_record(w);
}

int tfev_close(tfev_writer *w) {
  if (w == NULL) return 0;
  int rc = base_fclose(w->f);
  free(w->buf);
  free(w);
  return rc;
}
