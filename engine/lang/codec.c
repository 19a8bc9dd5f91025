/*
** codec.c - values as bytes: the encoding that ships values to worker
** processes and that `save` / `load` keep in files.
**
** One tag byte per value, then its data, little endian whatever the host:
**
**   'n' nil    'b' u8    'd' f64    's' u64 length + UTF-8
**   'l' u64 count + values          'r' u64 count + (u32 key, value)...
**   'o' u32 class name + u64 length + the class's own bytes
**
** The language core knows no class above it, so an object is written by
** its class's encode and read back by the decode of the class with the same
** name, found through the domains' class lists (the registry already knows
** every domain). A class without encode cannot leave its process, and the
** error says which it is and what can.
**
** Files add a header so that a foreign or damaged file is refused before
** anything is decoded: magic "SYSLAB\0V", u32 format version, u64 length
** of the body, u32 CRC-32 of the body (zlib's, already linked).
*/
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "slcommand.h"

#define FILE_MAGIC "SYSLAB\0V"
#define FILE_VERSION 1
#define HEADER_SIZE (8 + 4 + 8 + 4)
#define MAX_DEPTH 64

/* ---------------------------------------------------------- fixed widths */

void slU_put_u8(slU_Text *t, unsigned v) {
  char c = (char)(v & 0xff);
  slU_add_len(t, &c, 1);
}

void slU_put_u32(slU_Text *t, uint32_t v) {
  char b[4];
  for (int i = 0; i < 4; i++) b[i] = (char)(v >> (8 * i) & 0xff);
  slU_add_len(t, b, 4);
}

void slU_put_u64(slU_Text *t, uint64_t v) {
  char b[8];
  for (int i = 0; i < 8; i++) b[i] = (char)(v >> (8 * i) & 0xff);
  slU_add_len(t, b, 8);
}

void slU_put_f32(slU_Text *t, float v) {
  uint32_t u;
  memcpy(&u, &v, 4);
  slU_put_u32(t, u);
}

void slU_put_f64(slU_Text *t, double v) {
  uint64_t u;
  memcpy(&u, &v, 8);
  slU_put_u64(t, u);
}

void slU_put_str(slU_Text *t, const char *s) {
  size_t n = s ? strlen(s) : 0;
  slU_put_u32(t, (uint32_t)n);
  slU_add_len(t, s ? s : "", n);
}

void slU_put_bytes(slU_Text *t, const void *p, size_t n) {
  slU_put_u64(t, n);
  slU_add_len(t, p, n);
}

void slU_put_f32s(slU_Text *t, const float *v, size_t n) {
  for (size_t i = 0; i < n; i++) slU_put_f32(t, v[i]);
}

static const unsigned char *take(slU_Reader *r, size_t n) {
  if (r->bad || n > r->n - r->at) {
    r->bad = 1;
    return NULL;
  }
  const unsigned char *p = (const unsigned char *)r->p + r->at;
  r->at += n;
  return p;
}

unsigned slU_get_u8(slU_Reader *r) {
  const unsigned char *p = take(r, 1);
  return p ? p[0] : 0;
}

uint32_t slU_get_u32(slU_Reader *r) {
  const unsigned char *p = take(r, 4);
  uint32_t v = 0;
  for (int i = 0; p && i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
  return v;
}

uint64_t slU_get_u64(slU_Reader *r) {
  const unsigned char *p = take(r, 8);
  uint64_t v = 0;
  for (int i = 0; p && i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

float slU_get_f32(slU_Reader *r) {
  uint32_t u = slU_get_u32(r);
  float v;
  memcpy(&v, &u, 4);
  return v;
}

double slU_get_f64(slU_Reader *r) {
  uint64_t u = slU_get_u64(r);
  double v;
  memcpy(&v, &u, 8);
  return v;
}

int slU_get_str(slU_Reader *r, char *out, size_t size) {
  uint32_t n = slU_get_u32(r);
  const unsigned char *p = take(r, n);
  if (!p) {
    if (size) out[0] = '\0';
    return -1;
  }
  snprintf(out, size, "%.*s", (int)n, (const char *)p);
  return 0;
}

const char *slU_get_bytes(slU_Reader *r, size_t *n) {
  uint64_t len = slU_get_u64(r);
  const unsigned char *p = r->bad || len > r->n - r->at ? (r->bad = 1, NULL) : take(r, (size_t)len);
  *n = p ? (size_t)len : 0;
  return (const char *)p;
}

void slU_get_f32s(slU_Reader *r, float *out, size_t n) {
  if (r->bad || n > (r->n - r->at) / 4) {
    r->bad = 1;
    memset(out, 0, n * sizeof *out);
    return;
  }
  for (size_t i = 0; i < n; i++) out[i] = slU_get_f32(r);
}

/* --------------------------------------------------------------- values */

/* the class of that name among the domains' classes, or NULL */
static const sl_Class *class_find(const char *name) {
  const sl_Domain *d;
  for (size_t i = 0; (d = sl_domain_at(i)); i++)
    for (size_t k = 0; d->classes && d->classes[k]; k++)
      if (strcmp(d->classes[k]->name, name) == 0) return d->classes[k];
  return NULL;
}

/* "tables, datasets and models": the classes that can be shipped */
static void shippable_classes(char *out, size_t size) {
  slU_Text t = {0};
  const sl_Domain *d;
  for (size_t i = 0; (d = sl_domain_at(i)); i++)
    for (size_t k = 0; d->classes && d->classes[k]; k++)
      if (d->classes[k]->encode) slU_add(&t, "%s%ss", t.n ? ", " : "", d->classes[k]->name);
  snprintf(out, size, "%s", t.s ? t.s : "none");
  free(t.s);
}

static int encode(sl_Value v, slU_Text *out, int depth, char *err, size_t errlen) {
  if (depth > MAX_DEPTH) return snprintf(err, errlen, "values nested deeper than %d levels", MAX_DEPTH), -1;
  switch (v.type) {
    case SL_NIL: slU_put_u8(out, 'n'); return 0;
    case SL_BOOL:
      slU_put_u8(out, 'b');
      slU_put_u8(out, v.u.b != 0);
      return 0;
    case SL_NUMBER:
      slU_put_u8(out, 'd');
      slU_put_f64(out, v.u.n);
      return 0;
    case SL_STRING:
      slU_put_u8(out, 's');
      slU_put_bytes(out, sl_str(v), sl_strlen(v));
      return 0;
    case SL_LIST:
      slU_put_u8(out, 'l');
      slU_put_u64(out, sl_list_len(v));
      for (size_t i = 0; i < sl_list_len(v); i++)
        if (encode(sl_list_get(v, i), out, depth + 1, err, errlen) != 0) return -1;
      return 0;
    case SL_RECORD:
      slU_put_u8(out, 'r');
      slU_put_u64(out, sl_record_len(v));
      for (size_t i = 0; i < sl_record_len(v); i++) {
        slU_put_str(out, sl_record_key(v, i));
        if (encode(sl_record_value(v, i), out, depth + 1, err, errlen) != 0) return -1;
      }
      return 0;
    case SL_OBJECT: {
      const sl_Class *cls = sl_object_class(v);
      if (!cls->encode) {
        char can[256];
        shippable_classes(can, sizeof can);
        snprintf(err, errlen, "a %s cannot leave this process (numbers, strings, lists, records, %s can)", cls->name,
                 can);
        return -1;
      }
      slU_put_u8(out, 'o');
      slU_put_str(out, cls->name);
      size_t at = out->n;
      slU_put_u64(out, 0); /* length, filled in below */
      size_t start = out->n;
      if (cls->encode(sl_object_data(v), out, err, errlen) != 0) return -1;
      uint64_t len = out->n - start;
      for (int i = 0; i < 8; i++) out->s[at + i] = (char)(len >> (8 * i) & 0xff);
      return 0;
    }
  }
  return snprintf(err, errlen, "unknown value type %d", (int)v.type), -1;
}

int sl_encode(sl_Value v, slU_Text *out, char *err, size_t errlen) { return encode(v, out, 0, err, errlen); }

static int decode(slU_Reader *r, sl_Value *out, int depth, char *err, size_t errlen) {
  *out = sl_nil();
  if (depth > MAX_DEPTH) return snprintf(err, errlen, "values nested deeper than %d levels", MAX_DEPTH), -1;
  unsigned tag = slU_get_u8(r);
  if (r->bad) goto truncated;
  switch (tag) {
    case 'n': return 0;
    case 'b': *out = sl_bool((int)slU_get_u8(r)); break;
    case 'd': *out = sl_number(slU_get_f64(r)); break;
    case 's': {
      size_t n;
      const char *p = slU_get_bytes(r, &n);
      if (p) *out = sl_string_len(p, n);
      break;
    }
    case 'l': {
      uint64_t n = slU_get_u64(r);
      if (n > r->n - r->at) goto truncated; /* each item takes at least a byte */
      *out = sl_list_new();
      for (uint64_t i = 0; i < n; i++) {
        sl_Value item;
        if (decode(r, &item, depth + 1, err, errlen) != 0) return sl_release(*out), *out = sl_nil(), -1;
        sl_list_push(*out, item);
      }
      return 0;
    }
    case 'r': {
      uint64_t n = slU_get_u64(r);
      if (n > r->n - r->at) goto truncated;
      *out = sl_record_new();
      for (uint64_t i = 0; i < n; i++) {
        char key[256];
        sl_Value item;
        if (slU_get_str(r, key, sizeof key) != 0)
          return sl_release(*out), *out = sl_nil(), snprintf(err, errlen, "the data is truncated"), -1;
        if (decode(r, &item, depth + 1, err, errlen) != 0) return sl_release(*out), *out = sl_nil(), -1;
        sl_record_set(*out, key, item);
      }
      return 0;
    }
    case 'o': {
      char name[64];
      size_t n;
      slU_get_str(r, name, sizeof name);
      const char *p = slU_get_bytes(r, &n);
      if (!p) goto truncated;
      const sl_Class *cls = class_find(name);
      if (!cls || !cls->decode)
        return snprintf(err, errlen, "the data holds a '%s', which this program cannot rebuild", name), -1;
      void *data = cls->decode(p, n, err, errlen);
      if (!data) return -1;
      *out = sl_object_new(cls, data);
      return 0;
    }
    default:
      return snprintf(err, errlen, "the data is not an encoded value (unknown tag 0x%02x at byte %zu)", tag, r->at - 1),
             -1;
  }
  if (r->bad) goto truncated;
  return 0;
truncated:
  sl_release(*out);
  *out = sl_nil();
  snprintf(err, errlen, "the data is truncated");
  return -1;
}

int sl_decode(const char *bytes, size_t n, sl_Value *out, char *err, size_t errlen) {
  slU_Reader r = {bytes, n, 0, 0};
  if (decode(&r, out, 0, err, errlen) != 0) return -1;
  if (r.at != n) {
    sl_release(*out);
    *out = sl_nil();
    snprintf(err, errlen, "the data has %zu unexpected bytes after the value", n - r.at);
    return -1;
  }
  return 0;
}

/* ----------------------------------------------------------------- files */

int sl_save_file(sl_Value v, const char *path, char *err, size_t errlen) {
  slU_Text body = {0}, head = {0};
  if (sl_encode(v, &body, err, errlen) != 0) return free(body.s), -1;
  slU_add_len(&head, FILE_MAGIC, 8);
  slU_put_u32(&head, FILE_VERSION);
  slU_put_u64(&head, body.n);
  slU_put_u32(&head, (uint32_t)crc32_z(crc32(0, NULL, 0), (const Bytef *)body.s, body.n));
  char tmp[4096], why[512] = "";
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  int fd = slF_open(tmp, O_WRONLY | O_CREAT | O_TRUNC, "a syslab file", NULL, why, sizeof why);
  FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
  if (fd >= 0 && !f) close(fd);
  int ok = f && fwrite(head.s, 1, head.n, f) == head.n && fwrite(body.s, 1, body.n, f) == body.n;
  int saved_errno = errno;
  if (f && fclose(f) != 0) ok = 0;
  free(head.s);
  free(body.s);
  if (!ok || rename(tmp, path) != 0) {
    if (why[0]) snprintf(err, errlen, "cannot write '%s': %s", path, why);
    else snprintf(err, errlen, "cannot write '%s': %s", path, strerror(ok ? errno : saved_errno));
    if (fd >= 0) unlink(tmp);
    return -1;
  }
  return 0;
}

int sl_load_file(const char *path, sl_Value *out, char *err, size_t errlen) {
  *out = sl_nil();
  size_t n;
  char *bytes = slF_read_file(path, "a CSV file or a syslab file", 0, &n, err, errlen);
  if (!bytes) return -1;
  slU_Text all = {bytes, n, n + 1};
  int rc = -1;
  slU_Reader r = {all.s, all.n, 0, 0};
  if (all.n < 8 || memcmp(all.s, FILE_MAGIC, 8) != 0) {
    snprintf(err, errlen, "'%s' is not a syslab file (it does not start with the syslab magic bytes)", path);
  } else if (all.n < HEADER_SIZE) {
    snprintf(err, errlen, "'%s' is truncated: its header is incomplete", path);
  } else {
    r.at = 8;
    uint32_t version = slU_get_u32(&r);
    uint64_t len = slU_get_u64(&r);
    uint32_t crc = slU_get_u32(&r);
    if (version != FILE_VERSION)
      snprintf(err, errlen, "'%s' is format version %u; this syslab reads version %d", path, version, FILE_VERSION);
    else if (len != all.n - HEADER_SIZE)
      snprintf(err, errlen, "'%s' is %s: the header promises %llu bytes, the file has %zu", path,
               len > all.n - HEADER_SIZE ? "truncated" : "too long", (unsigned long long)len, all.n - HEADER_SIZE);
    else if (crc != (uint32_t)crc32_z(crc32(0, NULL, 0), (const Bytef *)all.s + HEADER_SIZE, (size_t)len))
      snprintf(err, errlen, "'%s' is damaged: its checksum does not match its contents", path);
    else {
      char why[512];
      rc = sl_decode(all.s + HEADER_SIZE, (size_t)len, out, why, sizeof why);
      if (rc != 0) snprintf(err, errlen, "cannot read '%s': %s", path, why);
    }
  }
  free(all.s);
  return rc;
}
