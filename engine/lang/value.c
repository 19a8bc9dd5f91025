/*
** value.c - values of the language: scalars, strings, lists, records, objects,
** and the MIME bundles that show them.
**
** Heap values share one header (sl_Heap) holding the reference count and
** the kind, so sl_retain/sl_release work on any of them. Lists and records
** own references to their items. Objects own their `data` and free it
** through their class when the count drops to zero.
*/
#include "slcommand.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sl_Heap {
  long refs;
  sl_Type type;
};

typedef struct {
  sl_Heap h;
  size_t len;
  char chars[];
} String;

/* Lists and records know how deeply they nest, so that the evaluator can
** refuse a list built a million levels deep (freeing, comparing and
** printing values recurse) without walking it. */
typedef struct {
  sl_Heap h;
  size_t n, cap, depth;
  sl_Value *items;
} List;

typedef struct {
  sl_Heap h;
  size_t n, cap, depth;
  char **keys;
  sl_Value *values;
} Record;

typedef struct {
  sl_Heap h;
  const sl_Class *cls;
  void *data;
} Object;

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) {
    fprintf(stderr, "syslab: out of memory (%zu bytes)\n", n);
    abort();
  }
  return p;
}

static void *xrealloc(void *p, size_t n) {
  p = realloc(p, n ? n : 1);
  if (!p) {
    fprintf(stderr, "syslab: out of memory (%zu bytes)\n", n);
    abort();
  }
  return p;
}

static char *xstrdup(const char *s) {
  size_t n = strlen(s) + 1;
  return memcpy(xmalloc(n), s, n);
}

static sl_Value heap_value(sl_Type t, sl_Heap *h) {
  sl_Value v;
  h->refs = 1;
  h->type = t;
  v.type = t;
  v.u.h = h;
  return v;
}

sl_Value sl_nil(void) {
  sl_Value v;
  v.type = SL_NIL;
  v.u.n = 0;
  return v;
}

sl_Value sl_bool(int b) {
  sl_Value v;
  v.type = SL_BOOL;
  v.u.b = b != 0;
  return v;
}

sl_Value sl_number(double n) {
  sl_Value v;
  v.type = SL_NUMBER;
  v.u.n = n;
  return v;
}

sl_Value sl_string_len(const char *s, size_t n) {
  String *str = xmalloc(sizeof *str + n + 1);
  memcpy(str->chars, s, n);
  str->chars[n] = '\0';
  str->len = n;
  return heap_value(SL_STRING, &str->h);
}

sl_Value sl_string(const char *s) { return sl_string_len(s, strlen(s)); }

sl_Value sl_list_new(void) {
  List *l = xmalloc(sizeof *l);
  l->n = l->cap = 0;
  l->depth = 1;
  l->items = NULL;
  return heap_value(SL_LIST, &l->h);
}

sl_Value sl_record_new(void) {
  Record *r = xmalloc(sizeof *r);
  r->n = r->cap = 0;
  r->depth = 1;
  r->keys = NULL;
  r->values = NULL;
  return heap_value(SL_RECORD, &r->h);
}

sl_Value sl_object_new(const sl_Class *cls, void *data) {
  Object *o = xmalloc(sizeof *o);
  o->cls = cls;
  o->data = data;
  return heap_value(SL_OBJECT, &o->h);
}

static int is_heap(sl_Value v) {
  return v.type == SL_STRING || v.type == SL_LIST || v.type == SL_RECORD || v.type == SL_OBJECT;
}

void sl_retain(sl_Value v) {
  if (is_heap(v)) v.u.h->refs++;
}

void sl_release(sl_Value v) {
  if (!is_heap(v) || --v.u.h->refs > 0) return;
  switch (v.type) {
    case SL_LIST: {
      List *l = (List *)v.u.h;
      for (size_t i = 0; i < l->n; i++) sl_release(l->items[i]);
      free(l->items);
      break;
    }
    case SL_RECORD: {
      Record *r = (Record *)v.u.h;
      for (size_t i = 0; i < r->n; i++) {
        free(r->keys[i]);
        sl_release(r->values[i]);
      }
      free(r->keys);
      free(r->values);
      break;
    }
    case SL_OBJECT: {
      Object *o = (Object *)v.u.h;
      if (o->cls && o->cls->free) o->cls->free(o->data);
      break;
    }
    default: break;
  }
  free(v.u.h);
}

const char *sl_typename(sl_Value v) {
  switch (v.type) {
    case SL_NIL: return "nil";
    case SL_BOOL: return "bool";
    case SL_NUMBER: return "number";
    case SL_STRING: return "string";
    case SL_LIST: return "list";
    case SL_RECORD: return "record";
    case SL_OBJECT: return ((Object *)v.u.h)->cls->name;
  }
  return "?";
}

int sl_truthy(sl_Value v) {
  switch (v.type) {
    case SL_NIL: return 0;
    case SL_BOOL: return v.u.b;
    case SL_NUMBER: return v.u.n != 0;
    case SL_STRING: return ((String *)v.u.h)->len > 0;
    case SL_LIST: return ((List *)v.u.h)->n > 0;
    default: return 1;
  }
}

int sl_equal(sl_Value a, sl_Value b) {
  if (a.type != b.type) return 0;
  switch (a.type) {
    case SL_NIL: return 1;
    case SL_BOOL: return a.u.b == b.u.b;
    case SL_NUMBER: return a.u.n == b.u.n;
    case SL_STRING: {
      String *x = (String *)a.u.h, *y = (String *)b.u.h;
      return x->len == y->len && memcmp(x->chars, y->chars, x->len) == 0;
    }
    case SL_LIST: {
      List *x = (List *)a.u.h, *y = (List *)b.u.h;
      if (x->n != y->n) return 0;
      for (size_t i = 0; i < x->n; i++)
        if (!sl_equal(x->items[i], y->items[i])) return 0;
      return 1;
    }
    case SL_RECORD: {
      Record *x = (Record *)a.u.h, *y = (Record *)b.u.h;
      if (x->n != y->n) return 0;
      for (size_t i = 0; i < x->n; i++)
        if (strcmp(x->keys[i], y->keys[i]) != 0 || !sl_equal(x->values[i], y->values[i])) return 0;
      return 1;
    }
    case SL_OBJECT: return a.u.h == b.u.h;
  }
  return 0;
}

const char *sl_str(sl_Value v) { return v.type == SL_STRING ? ((String *)v.u.h)->chars : NULL; }
size_t sl_strlen(sl_Value v) { return v.type == SL_STRING ? ((String *)v.u.h)->len : 0; }

size_t sl_list_len(sl_Value v) { return v.type == SL_LIST ? ((List *)v.u.h)->n : 0; }

sl_Value sl_list_get(sl_Value v, size_t i) {
  if (v.type != SL_LIST || i >= ((List *)v.u.h)->n) return sl_nil();
  return ((List *)v.u.h)->items[i];
}

void sl_list_push(sl_Value v, sl_Value item) {
  List *l = (List *)v.u.h;
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 8;
    l->items = xrealloc(l->items, l->cap * sizeof *l->items);
  }
  l->items[l->n++] = item;
  if (sl_value_depth(item) + 1 > l->depth) l->depth = sl_value_depth(item) + 1;
}

size_t sl_value_depth(sl_Value v) {
  if (v.type == SL_LIST) return ((List *)v.u.h)->depth;
  if (v.type == SL_RECORD) return ((Record *)v.u.h)->depth;
  return 0;
}

size_t sl_record_len(sl_Value v) { return v.type == SL_RECORD ? ((Record *)v.u.h)->n : 0; }
const char *sl_record_key(sl_Value v, size_t i) { return ((Record *)v.u.h)->keys[i]; }
sl_Value sl_record_value(sl_Value v, size_t i) { return ((Record *)v.u.h)->values[i]; }

sl_Value sl_record_get(sl_Value v, const char *key) {
  if (v.type != SL_RECORD) return sl_nil();
  Record *r = (Record *)v.u.h;
  for (size_t i = 0; i < r->n; i++)
    if (strcmp(r->keys[i], key) == 0) return r->values[i];
  return sl_nil();
}

void sl_record_set(sl_Value v, const char *key, sl_Value item) {
  Record *r = (Record *)v.u.h;
  for (size_t i = 0; i < r->n; i++)
    if (strcmp(r->keys[i], key) == 0) {
      sl_release(r->values[i]);
      r->values[i] = item;
      if (sl_value_depth(item) + 1 > r->depth) r->depth = sl_value_depth(item) + 1;
      return;
    }
  if (r->n == r->cap) {
    r->cap = r->cap ? 2 * r->cap : 8;
    r->keys = xrealloc(r->keys, r->cap * sizeof *r->keys);
    r->values = xrealloc(r->values, r->cap * sizeof *r->values);
  }
  r->keys[r->n] = xstrdup(key);
  r->values[r->n++] = item;
  if (sl_value_depth(item) + 1 > r->depth) r->depth = sl_value_depth(item) + 1;
}

void sl_record_remove(sl_Value v, const char *key) {
  Record *r = (Record *)v.u.h;
  for (size_t i = 0; i < r->n; i++)
    if (strcmp(r->keys[i], key) == 0) {
      free(r->keys[i]);
      sl_release(r->values[i]);
      memmove(r->keys + i, r->keys + i + 1, (r->n - i - 1) * sizeof *r->keys);
      memmove(r->values + i, r->values + i + 1, (r->n - i - 1) * sizeof *r->values);
      r->n--;
      return;
    }
}

const sl_Class *sl_object_class(sl_Value v) { return v.type == SL_OBJECT ? ((Object *)v.u.h)->cls : NULL; }
void *sl_object_data(sl_Value v) { return v.type == SL_OBJECT ? ((Object *)v.u.h)->data : NULL; }

void *sl_object_as(sl_Value v, const sl_Class *cls) {
  if (v.type != SL_OBJECT || ((Object *)v.u.h)->cls != cls) return NULL;
  return ((Object *)v.u.h)->data;
}

/* ------------------------------------------------------------ formatting */

/* %.9g keeps every float32 exact; doubles that are integers print without
** an exponent up to 2^53 so counts and sizes read naturally. */
void sl_format_number(double x, char *out, size_t size) {
  if (isnan(x)) snprintf(out, size, "nan");
  else if (isinf(x)) snprintf(out, size, x > 0 ? "inf" : "-inf");
  else if (x == floor(x) && fabs(x) < 9007199254740992.0) snprintf(out, size, "%.0f", x);
  else snprintf(out, size, "%.9g", x);
}

const char *sl_number_text(double x, char *buf, size_t size) {
  sl_format_number(x, buf, size);
  return buf;
}

/* A displayed list longer than this shows its first and last SHOW_EDGE
** items and a count, as tables show their head and tail: a cell that ends
** in a list of a million numbers should answer at once, not format ten
** megabytes that the output cap then drops. print and str give every item. */
#define SHOW_LIST_MAX 1000
#define SHOW_EDGE 20

static void format_value(slU_Text *b, sl_Value v, int quote_strings, int depth, int brief) {
  char num[64];
  if (depth > 32) {
    slU_add(b, "%s", "...");
    return;
  }
  switch (v.type) {
    case SL_NIL: slU_add(b, "%s", "nil"); break;
    case SL_BOOL: slU_add(b, "%s", v.u.b ? "true" : "false"); break;
    case SL_NUMBER:
      sl_format_number(v.u.n, num, sizeof num);
      slU_add(b, "%s", num);
      break;
    case SL_STRING:
      if (quote_strings) {
        slU_add(b, "%s", "\"");
        for (const char *p = sl_str(v); *p; p++) {
          if (*p == '"' || *p == '\\') slU_add_len(b, "\\", 1);
          if (*p == '\n') slU_add(b, "%s", "\\n");
          else slU_add_len(b, p, 1);
        }
        slU_add(b, "%s", "\"");
      } else {
        slU_add_len(b, sl_str(v), sl_strlen(v));
      }
      break;
    case SL_LIST: {
      slU_add(b, "%s", "[");
      size_t n = sl_list_len(v);
      int elide = brief && n > SHOW_LIST_MAX;
      for (size_t i = 0; i < n; i++) {
        if (elide && i == SHOW_EDGE) {
          slU_add(b, ", ... %zu more ...", n - 2 * SHOW_EDGE);
          i = n - SHOW_EDGE - 1;
          continue;
        }
        if (i) slU_add(b, "%s", ", ");
        format_value(b, sl_list_get(v, i), 1, depth + 1, brief);
      }
      slU_add(b, "%s", "]");
      break;
    }
    case SL_RECORD: {
      slU_add(b, "%s", "{");
      for (size_t i = 0; i < sl_record_len(v); i++) {
        if (i) slU_add(b, "%s", ", ");
        slU_add(b, "%s", sl_record_key(v, i));
        slU_add(b, "%s", ": ");
        format_value(b, sl_record_value(v, i), 1, depth + 1, brief);
      }
      slU_add(b, "%s", "}");
      break;
    }
    case SL_OBJECT: {
      sl_Bundle bundle;
      sl_bundle_init(&bundle);
      const sl_MimePart *text = NULL;
      if (sl_object_class(v)->show && sl_object_class(v)->show(sl_object_data(v), &bundle) == 0)
        text = sl_bundle_get(&bundle, "text/plain");
      if (text && depth == 0) {
        slU_add_len(b, text->data, text->len);
      } else {
        slU_add(b, "%s", "<");
        slU_add(b, "%s", sl_typename(v));
        slU_add(b, "%s", ">");
      }
      sl_bundle_free(&bundle);
      break;
    }
  }
}

char *sl_tostring(sl_Value v) {
  slU_Text b = {0};
  slU_add_len(&b, "", 0);
  format_value(&b, v, 0, 0, 0);
  return b.s;
}

char *sl_repr(sl_Value v) {
  slU_Text b = {0};
  slU_add_len(&b, "", 0);
  format_value(&b, v, 1, 0, 0);
  return b.s;
}

/* ------------------------------------------------------------ mime bundles */

void sl_bundle_init(sl_Bundle *b) { memset(b, 0, sizeof *b); }

void sl_bundle_add(sl_Bundle *b, const char *mime, const char *data, size_t len) {
  sl_MimePart *part = NULL;
  for (int i = 0; i < b->n; i++)
    if (strcmp(b->parts[i].mime, mime) == 0) {
      part = &b->parts[i];
      free(part->data);
      break;
    }
  if (!part) {
    if (b->n == SL_BUNDLE_MAX) return;
    part = &b->parts[b->n++];
    part->mime = xstrdup(mime);
  }
  part->data = xmalloc(len + 1);
  memcpy(part->data, data, len);
  part->data[len] = '\0';
  part->len = len;
}

void sl_bundle_addf(sl_Bundle *b, const char *mime, const char *fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *s = xmalloc((size_t)n + 1);
  vsnprintf(s, (size_t)n + 1, fmt, ap2);
  va_end(ap2);
  sl_bundle_add(b, mime, s, (size_t)n);
  free(s);
}

const sl_MimePart *sl_bundle_get(const sl_Bundle *b, const char *mime) {
  for (int i = 0; i < b->n; i++)
    if (strcmp(b->parts[i].mime, mime) == 0) return &b->parts[i];
  return NULL;
}

void sl_bundle_free(sl_Bundle *b) {
  for (int i = 0; i < b->n; i++) {
    free(b->parts[i].mime);
    free(b->parts[i].data);
  }
  b->n = 0;
}

int sl_show(sl_Value v, sl_Bundle *out) {
  sl_bundle_init(out);
  if (v.type == SL_OBJECT) {
    const sl_Class *cls = sl_object_class(v);
    if (cls->show && cls->show(sl_object_data(v), out) == 0) {
      if (!sl_bundle_get(out, "text/plain")) sl_bundle_addf(out, "text/plain", "<%s>", cls->name);
      return 0;
    }
    sl_bundle_free(out);
  }
  slU_Text s = {0};
  slU_add_len(&s, "", 0);
  format_value(&s, v, v.type == SL_STRING, 0, 1);
  sl_bundle_add(out, "text/plain", s.s, s.n);
  free(s.s);
  return 0;
}

void sl_error_free(sl_Error *e) {
  free(e->evalue);
  free(e->traceback);
  e->evalue = e->traceback = NULL;
}
