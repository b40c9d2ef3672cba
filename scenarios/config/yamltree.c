/* yamltree.c: libyaml events -> yt_node tree with positions (see yamltree.h). */
#include "scenarios/config/yamltree.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <yaml.h>

#include "base/base.h"

typedef struct builder {
  yaml_parser_t parser;   /* libyaml's event parser */
  const char *file;       /* the name positions use */
  int line_base, col_base;/* offsets of text parsed inside another file (inline TF_CONFIG) */
  yt_error *err;          /* where the first error goes */
  int depth;              /* sequences and mappings open around the node being built */
} builder;


static void set_err(yt_error *e, const char *file, int line, int col, const char *key,
                    const char *fmt, ...) {
  va_list ap;
  e->file = file;
  e->line = line;
  e->col = col;
  base_format(e->key, sizeof e->key, "%s", key ? key : "");
  va_start(ap, fmt);
  base_vformat(e->msg, sizeof e->msg, fmt, ap);
  va_end(ap);
}

static yt_node *node_new(yt_kind k, const char *file, int line, int col) {
  yt_node *n = base_xcalloc(1, sizeof *n);
  n->kind = k;
  n->file = file;
  n->line = line;
  n->col = col;
  return n;
}

static void node_push(yt_node *n, yt_node *key, yt_node *val) {
  if (n->n == n->cap) {
    int cap = n->cap ? 2 * n->cap : 4;
    yt_node **items = base_xcalloc((size_t)cap, sizeof *items);
    yt_node **keys = base_xcalloc((size_t)cap, sizeof *keys);
    if (n->n) {
      memcpy(items, n->items, (size_t)n->n * sizeof *items);
      memcpy(keys, n->keys, (size_t)n->n * sizeof *keys);
    }
    free(n->items);
    free(n->keys);
    n->items = items;
    n->keys = keys;
    n->cap = cap;
  }
  n->keys[n->n] = key;
  n->items[n->n] = val;
  n->n++;
}

void yt_node_free(yt_node *n) {
  if (!n) return;
  for (int i = 0; i < n->n; i++) {
    yt_node_free(n->items[i]);
    yt_node_free(n->keys[i]);
  }
  free(n->items);
  free(n->keys);
  free(n->text);
  free(n);
}

void yt_doc_free(yt_doc *d) {
  if (!d) return;
  yt_node_free(d->root);
  free(d->file);
  free(d);
}

static int line_of(const builder *b, yaml_mark_t m) { return b->line_base + (int)m.line + 1; }
static int col_of(const builder *b, yaml_mark_t m) {
  return (m.line == 0 ? b->col_base : 0) + (int)m.column + 1;
}

static int parse_error(builder *b, const char *path) {
  yaml_parser_t *p = &b->parser;
  const char *problem = p->problem ? p->problem : "malformed YAML";
  if (p->context)
    set_err(b->err, b->file, line_of(b, p->problem_mark), col_of(b, p->problem_mark), path,
            "YAML syntax error: %s (%s at line %d, column %d)", problem, p->context,
            line_of(b, p->context_mark), col_of(b, p->context_mark));
  else
    set_err(b->err, b->file, line_of(b, p->problem_mark), col_of(b, p->problem_mark), path,
            "YAML syntax error: %s", problem);
  return -1;
}

static int next_event(builder *b, yaml_event_t *ev, const char *path) {
  if (!yaml_parser_parse(&b->parser, ev)) return parse_error(b, path);
  return 0;
}

/* Anchors, aliases and tags other than !!str make a document harder to read than to write. */
static int check_decorations(builder *b, const yaml_event_t *ev, const char *path, int *is_str) {
  const yaml_char_t *anchor = NULL, *tag = NULL;
  int line = line_of(b, ev->start_mark), col = col_of(b, ev->start_mark);
  switch (ev->type) {
  case YAML_SCALAR_EVENT: anchor = ev->data.scalar.anchor; tag = ev->data.scalar.tag; break;
  case YAML_SEQUENCE_START_EVENT: anchor = ev->data.sequence_start.anchor; tag = ev->data.sequence_start.tag; break;
  case YAML_MAPPING_START_EVENT: anchor = ev->data.mapping_start.anchor; tag = ev->data.mapping_start.tag; break;
  default: break;
  }
  if (anchor) {
    set_err(b->err, b->file, line, col, path,
            "anchors and aliases are not supported, found anchor &%s (write the value out)",
            (const char *)anchor);
    return -1;
  }
  if (tag) {
    if (ev->type == YAML_SCALAR_EVENT && !strcmp((const char *)tag, "tag:yaml.org,2002:str")) {
      *is_str = 1;
      return 0;
    }
    set_err(b->err, b->file, line, col, path, "YAML tags are not supported, found tag %s",
            (const char *)tag);
    return -1;
  }
  return 0;
}

static void join_path(char *out, size_t len, const char *path, const char *seg) {
  if (path && path[0]) base_format(out, len, "%s.%s", path, seg);
  else base_format(out, len, "%s", seg);
}

/* Builds the node whose first event is EV (consumed by the caller: we delete it). */
static yt_node *build_collection(builder *b, yaml_event_t *ev, const char *path, int line, int col);

static yt_node *build_node(builder *b, yaml_event_t *ev, const char *path) {
  int is_str = 0;
  int line = line_of(b, ev->start_mark), col = col_of(b, ev->start_mark);
  yt_node *n = NULL;
  if (ev->type == YAML_ALIAS_EVENT) {
    set_err(b->err, b->file, line, col, path,
            "anchors and aliases are not supported, found alias *%s (write the value out)",
            (const char *)ev->data.alias.anchor);
    yaml_event_delete(ev);
    return NULL;
  }
  if (check_decorations(b, ev, path, &is_str)) { yaml_event_delete(ev); return NULL; }

  if (ev->type == YAML_SCALAR_EVENT && ev->data.scalar.length > YT_MAX_SCALAR) {
    set_err(b->err, b->file, line, col, path, "expected a scalar of at most %d bytes (64 KiB), found one "
            "of %zu bytes", YT_MAX_SCALAR, ev->data.scalar.length);
    yaml_event_delete(ev);
    return NULL;
  }
  /* A "\0" (or \u0000) escape in a double-quoted scalar: the text would end at the NUL, and a
  ** name such as "a\u0000b/../../x" would run as "a", past the checks the whole value fails. */
  if (ev->type == YAML_SCALAR_EVENT && memchr(ev->data.scalar.value, '\0', ev->data.scalar.length)) {
    set_err(b->err, b->file, line, col, path, "expected a scalar without a NUL character, found one with a \\0 escape");
    yaml_event_delete(ev);
    return NULL;
  }
  if (ev->type == YAML_SCALAR_EVENT) {
    n = node_new(YT_SCALAR, b->file, line, col);
    n->text = base_strdup((const char *)ev->data.scalar.value);
    n->quoted = is_str || ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
    yaml_event_delete(ev);
    return n;
  }
  return build_collection(b, ev, path, line, col);
}

/* A sequence or mapping, and its entries. Nesting is bounded (YT_MAX_DEPTH): the builder
** recurses, and a file of 100000 '[' must be an error, not a stack overflow. */
static yt_node *build_collection(builder *b, yaml_event_t *ev, const char *path, int line, int col) {
  yt_node *n = NULL;
  if ((ev->type == YAML_SEQUENCE_START_EVENT || ev->type == YAML_MAPPING_START_EVENT) &&
      b->depth >= YT_MAX_DEPTH) {
    set_err(b->err, b->file, line, col, path, "expected at most %d levels of nested sequences "
            "and mappings, found deeper nesting", YT_MAX_DEPTH);
    yaml_event_delete(ev);
    return NULL;
  }
  b->depth++;
  if (ev->type == YAML_SEQUENCE_START_EVENT) {
    yaml_event_delete(ev);
    n = node_new(YT_SEQ, b->file, line, col);
    for (;;) {
      yaml_event_t item;
      char sub[256];
      base_format(sub, sizeof sub, "%s[%d]", path, n->n);
      if (next_event(b, &item, sub)) goto fail;
      if (item.type == YAML_SEQUENCE_END_EVENT) { yaml_event_delete(&item); b->depth--; return n; }
      yt_node *v = build_node(b, &item, sub);
      if (!v) goto fail;
      node_push(n, NULL, v);
    }
  }
  if (ev->type == YAML_MAPPING_START_EVENT) {
    yaml_event_delete(ev);
    n = node_new(YT_MAP, b->file, line, col);
    for (;;) {
      yaml_event_t kev, vev;
      if (next_event(b, &kev, path)) goto fail;
      if (kev.type == YAML_MAPPING_END_EVENT) { yaml_event_delete(&kev); b->depth--; return n; }
      if (kev.type != YAML_SCALAR_EVENT) {
        set_err(b->err, b->file, line_of(b, kev.start_mark), col_of(b, kev.start_mark), path,
                "mapping keys must be plain words, found a %s",
                kev.type == YAML_MAPPING_START_EVENT ? "mapping" :
                kev.type == YAML_SEQUENCE_START_EVENT ? "sequence" : "alias");
        yaml_event_delete(&kev);
        goto fail;
      }
      yt_node *k = build_node(b, &kev, path);
      if (!k) goto fail;
      char sub[256];
      join_path(sub, sizeof sub, path, k->text);
      yt_node *first = yt_get_key(n, k->text);
      if (first) {
        set_err(b->err, b->file, k->line, k->col, sub,
                "duplicate key \"%s\" (first given at line %d, column %d)", k->text,
                first->line, first->col);
        yt_node_free(k);
        goto fail;
      }
      if (next_event(b, &vev, sub)) { yt_node_free(k); goto fail; }
      yt_node *v = build_node(b, &vev, sub);
      if (!v) { yt_node_free(k); goto fail; }
      node_push(n, k, v);
    }
  }
  b->depth--;
  set_err(b->err, b->file, line, col, path, "unexpected YAML event");
  yaml_event_delete(ev);
  return NULL;
fail:
  b->depth--;
  yt_node_free(n);
  return NULL;
}

/* Runs the parser over a stream with exactly zero or one document. */
static yt_doc *build_doc(builder *b) {
  yaml_event_t ev;
  yt_doc *d = base_xcalloc(1, sizeof *d);
  d->file = base_strdup(b->file);
  b->file = d->file;
  if (next_event(b, &ev, "")) goto fail;              /* STREAM-START */
  yaml_event_delete(&ev);
  if (next_event(b, &ev, "")) goto fail;
  if (ev.type == YAML_STREAM_END_EVENT) { yaml_event_delete(&ev); return d; }
  yaml_event_delete(&ev);                              /* DOCUMENT-START */
  if (next_event(b, &ev, "")) goto fail;
  d->root = build_node(b, &ev, "");
  if (!d->root) goto fail;
  if (next_event(b, &ev, "")) goto fail;               /* DOCUMENT-END */
  yaml_event_delete(&ev);
  if (next_event(b, &ev, "")) goto fail;
  if (ev.type != YAML_STREAM_END_EVENT) {
    set_err(b->err, b->file, line_of(b, ev.start_mark), col_of(b, ev.start_mark), "",
            "expected one YAML document, found a second one");
    yaml_event_delete(&ev);
    goto fail;
  }
  yaml_event_delete(&ev);
  return d;
fail:
  yt_doc_free(d);
  return NULL;
}

yt_doc *yt_parse_text(const char *text, const char *file, int line_base, int col_base, yt_error *err) {
  builder b;
  memset(&b, 0, sizeof b);
  if (!yaml_parser_initialize(&b.parser)) {
    set_err(err, file, 0, 0, "", "cannot initialise the YAML parser");
    return NULL;
  }
  yaml_parser_set_input_string(&b.parser, (const unsigned char *)text, strlen(text));
  b.file = file;
  b.line_base = line_base;
  b.col_base = col_base;
  b.err = err;
  yt_doc *d = build_doc(&b);
  if (!d) err->file = file;   /* the doc's copy of the name died with it */
  yaml_parser_delete(&b.parser);
  return d;
}

yt_doc *yt_parse_file(const char *file, yt_error *err) {
  FILE *f = base_fopen_regular(file);
  if (!f) {
    set_err(err, file, 0, 0, "", "cannot open the scenario file: %s", base_open_error(errno));
    return NULL;
  }
  builder b;
  memset(&b, 0, sizeof b);
  if (!yaml_parser_initialize(&b.parser)) {
    fclose(f);
    set_err(err, file, 0, 0, "", "cannot initialise the YAML parser");
    return NULL;
  }
  yaml_parser_set_input_file(&b.parser, f);
  b.file = file;
  b.err = err;
  yt_doc *d = build_doc(&b);
  if (!d) err->file = file;
  yaml_parser_delete(&b.parser);
  fclose(f);
  return d;
}

yt_node *yt_get_key(const yt_node *n, const char *key) {
  if (!n || n->kind != YT_MAP) return NULL;
  for (int i = 0; i < n->n; i++)
    if (!strcmp(n->keys[i]->text, key)) return n->keys[i];
  return NULL;
}

yt_node *yt_get(const yt_node *n, const char *key) {
  if (!n || n->kind != YT_MAP) return NULL;
  for (int i = 0; i < n->n; i++)
    if (!strcmp(n->keys[i]->text, key)) return n->items[i];
  return NULL;
}

yt_node *yt_path(const yt_node *n, const char *path) {
  char seg[128];
  const char *p = path;
  const yt_node *cur = n;
  while (cur && *p) {
    size_t len = strcspn(p, ".");
    if (len >= sizeof seg) return NULL;
    memcpy(seg, p, len);
    seg[len] = 0;
    cur = yt_get(cur, seg);
    p += len;
    if (*p == '.') p++;
  }
  return (yt_node *)cur;
}

int yt_is_null(const yt_node *n) {
  if (!n || n->kind != YT_SCALAR || n->quoted) return 0;
  return !n->text[0] || !strcmp(n->text, "~") || !strcmp(n->text, "null") ||
         !strcmp(n->text, "Null") || !strcmp(n->text, "NULL");
}

/* ---- overrides ---- */

static int all_digits(const char *s) {
  if (!*s) return 0;
  for (; *s; s++)
    if (*s < '0' || *s > '9') return 0;
  return 1;
}

/* Puts VAL (owned) at KEY in DOC: existing keys replaced, missing mapping keys created, numeric
** segments index sequences. Created nodes and errors are at FILE:LINE, column COL0 + the
** segment's offset in KEY. */
static int set_at_path(yt_doc *doc, const char *key, yt_node *val, const char *file, int line,
                       int col0, yt_error *err) {
  if (!doc->root) doc->root = node_new(YT_MAP, doc->file, 1, 1);
  yt_node *cur = doc->root;
  char path[256] = "";
  size_t pos = 0;
  for (;;) {
    size_t len = strcspn(key + pos, ".");
    char seg[128];
    int col = col0 + (int)pos;
    if (len == 0 || len >= sizeof seg) {
      set_err(err, file, line, col, key, "expected key.path=value with non-empty keys, found \"%s\"", key);
      yt_node_free(val);
      return -1;
    }
    memcpy(seg, key + pos, len);
    seg[len] = 0;
    int last = key[pos + len] == 0;
    char sub[256];
    if (cur->kind == YT_SEQ) base_format(sub, sizeof sub, "%s[%s]", path, seg);
    else join_path(sub, sizeof sub, path, seg);

    if (cur->kind == YT_SEQ) {
      long i = all_digits(seg) ? strtol(seg, NULL, 10) : -1;
      if (i < 0 || i >= cur->n) {
        set_err(err, file, line, col, sub,
                "expected an index 0..%d into the sequence %s, found \"%s\"", cur->n - 1,
                path, seg);
        yt_node_free(val);
        return -1;
      }
      if (last) { yt_node_free(cur->items[i]); cur->items[i] = val; return 0; }
      cur = cur->items[i];
    } else if (cur->kind == YT_MAP) {
      int i;
      for (i = 0; i < cur->n; i++)
        if (!strcmp(cur->keys[i]->text, seg)) break;
      if (i == cur->n) {
        yt_node *k = node_new(YT_SCALAR, file, line, col);
        k->text = base_strdup(seg);
        node_push(cur, k, last ? val : node_new(YT_MAP, file, line, col));
        if (last) return 0;
      } else if (last) {
        yt_node_free(cur->items[i]);
        cur->items[i] = val;
        return 0;
      }
      cur = cur->items[i];
    } else {
      set_err(err, file, line, col, sub,
              "expected a mapping or sequence at %s to set %s in, found the scalar \"%s\"",
              path, seg, cur->text);
      yt_node_free(val);
      return -1;
    }
    base_format(path, sizeof path, "%s", sub);
    pos += len + 1;
  }
}

/* A deep copy of N whose nodes from a file named like `to` name `to` itself, so the copy
** needs nothing of the document it came from. */
static yt_node *node_copy(const yt_node *n, const char *to) {
  yt_node *c = node_new(n->kind, strcmp(n->file, to) ? n->file : to, n->line, n->col);
  c->quoted = n->quoted;
  if (n->text) c->text = base_strdup(n->text);
  for (int i = 0; i < n->n; i++)
    node_push(c, n->keys[i] ? node_copy(n->keys[i], to) : NULL, node_copy(n->items[i], to));
  return c;
}

yt_doc *yt_doc_copy(const yt_doc *d) {
  yt_doc *c = base_xcalloc(1, sizeof *c);
  c->file = base_strdup(d->file);
  if (d->root) c->root = node_copy(d->root, c->file);
  return c;
}

int yt_set(yt_doc *doc, const char *key, const yt_node *val, const yt_node *at, yt_error *err) {
  const char *file = strcmp(at->file, doc->file) ? at->file : doc->file;
  return set_at_path(doc, key, node_copy(val, doc->file), file, at->line, at->col, err);
}

int yt_apply_override(yt_doc *doc, const char *ov, int index, yt_error *err) {
  static const char SET[] = "--set";
  const char *eq = strchr(ov, '=');
  if (!eq || eq == ov) {
    set_err(err, SET, index, 1, "", "expected key.path=value, found \"%s\"", ov);
    return -1;
  }
  size_t keylen = (size_t)(eq - ov);
  char key[256];
  if (keylen >= sizeof key) {
    set_err(err, SET, index, 1, "", "key path too long");
    return -1;
  }
  memcpy(key, ov, keylen);
  key[keylen] = 0;

  /* Parse the value first: a bad value is reported whatever the path. */
  yt_error verr;
  yt_doc *vd = yt_parse_text(eq + 1, SET, index - 1, (int)keylen + 1, &verr);
  if (!vd) {
    *err = verr;
    if (err->line != index) { /* libyaml marks the end of the text on a line after it */
      err->line = index;
      err->col = (int)strlen(ov) + 1;
    }
    base_format(err->key, sizeof err->key, "%s", key);
    err->file = SET;
    return -1;
  }
  yt_node *val = vd->root;
  vd->root = NULL;
  yt_doc_free(vd);
  if (!val) { /* empty value: a null scalar */
    val = node_new(YT_SCALAR, SET, index, (int)keylen + 2);
    val->text = base_strdup("");
  }
  /* The value's nodes must name "--set", not the freed temporary doc's name. */
  {
    yt_node *stack[256];
    int sp = 0;
    stack[sp++] = val;
    while (sp) {
      yt_node *n = stack[--sp];
      n->file = SET;
      for (int i = 0; i < n->n && sp < 254; i++) {
        stack[sp++] = n->items[i];
        if (n->keys[i]) stack[sp++] = n->keys[i];
      }
    }
  }

  return set_at_path(doc, key, val, SET, index, 1, err);
}
