/*
** data.c - data sets: Fashion-MNIST from its gzipped IDX files, and
** Gaussian blobs for fast tests.
**
** IDX (the MNIST format): a magic number whose third byte is the element
** type (0x08, unsigned byte) and fourth the number of dimensions, then one
** big-endian 32-bit size per dimension, then the data. Images are scaled to
** [0, 1] and then normalised with the training split's mean and standard
** deviation, which the test split reuses.
*/
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "model.h"

#define PACKAGE_HINT "install the Debian package dataset-fashion-mnist"

static unsigned be32(const unsigned char *p) {
  return (unsigned)p[0] << 24 | (unsigned)p[1] << 16 | (unsigned)p[2] << 8 | p[3];
}

int slM_idx_parse(const unsigned char *data, size_t len, int want_dims, uint8_t **out, size_t *count, int *rows,
                  int *cols, char *err, size_t errlen) {
  if (len < 4 || data[0] != 0 || data[1] != 0) {
    snprintf(err, errlen, "not an IDX file (bad magic number)");
    return -1;
  }
  if (data[2] != 0x08) {
    snprintf(err, errlen, "IDX element type 0x%02x is not unsigned bytes (0x08)", data[2]);
    return -1;
  }
  int dims = data[3];
  if (dims != want_dims) {
    snprintf(err, errlen, "IDX file has %d dimensions, expected %d", dims, want_dims);
    return -1;
  }
  if (len < 4 + 4 * (size_t)dims) {
    snprintf(err, errlen, "IDX header is truncated");
    return -1;
  }
  size_t total = 1;
  unsigned sizes[3] = {1, 1, 1};
  for (int d = 0; d < dims; d++) {
    sizes[d] = be32(data + 4 + 4 * d);
    if (__builtin_mul_overflow(total, (size_t)sizes[d], &total) || sizes[d] > 0x7FFFFFFF) {
      snprintf(err, errlen, "IDX header promises sizes too large to be real"); /* a wrapped product could match */
      return -1;
    }
  }
  size_t header = 4 + 4 * (size_t)dims;
  if (len - header != total) {
    snprintf(err, errlen, "IDX data is %s: the header promises %zu bytes, the file has %zu",
             len - header < total ? "truncated" : "too long", total, len - header);
    return -1;
  }
  *out = malloc(total ? total : 1);
  memcpy(*out, data + header, total);
  *count = sizes[0];
  *rows = (int)sizes[1];
  *cols = (int)sizes[2];
  return 0;
}

/* The file through the one opener of user-named files (a FIFO named like
** an IDX file would block for ever), then inflated in memory: gzip, as the
** Debian package ships it, or the IDX bytes as they are (as gzread reads an
** uncompressed file). The inflated size is held to the memory budget. */
static unsigned char *read_gzip(const char *path, size_t *len, char *err, size_t errlen) {
  size_t n;
  char why[600];
  unsigned char *raw = (unsigned char *)slF_read_file(path, "a gzipped IDX file", 0, &n, why, sizeof why);
  if (!raw) {
    snprintf(err, errlen, "%s: %s", why, PACKAGE_HINT);
    return NULL;
  }
  if (n < 2 || raw[0] != 0x1f || raw[1] != 0x8b) {
    *len = n;
    return raw;
  }
  z_stream z;
  memset(&z, 0, sizeof z);
  size_t cap = 4 * n + (1 << 20), out = 0;
  unsigned char *buf = malloc(cap);
  int rc = buf ? inflateInit2(&z, 16 + MAX_WBITS) : Z_MEM_ERROR;
  z.next_in = raw;
  z.avail_in = (uInt)n; /* the budget check above keeps n far below 4 GiB */
  while (rc == Z_OK) {
    if (out == cap) {
      if (sl_memory_budget() < 2.0 * (double)cap) {
        rc = Z_MEM_ERROR;
        break;
      }
      unsigned char *more = realloc(buf, cap *= 2);
      if (!more) {
        rc = Z_MEM_ERROR;
        break;
      }
      buf = more;
    }
    if (sl_interrupted()) break; /* between pieces of 4 MiB */
    z.next_out = buf + out;
    z.avail_out = (uInt)(cap - out < (4u << 20) ? cap - out : (4u << 20));
    size_t before = z.avail_out;
    rc = inflate(&z, Z_NO_FLUSH);
    out += before - z.avail_out;
    if (rc == Z_STREAM_END && z.avail_in > 0) rc = inflateReset(&z); /* another gzip member follows */
    if (rc == Z_BUF_ERROR && z.avail_out > 0) break;                 /* the input ended mid-stream */
    if (rc == Z_BUF_ERROR) rc = Z_OK;
  }
  const char *what = rc == Z_MEM_ERROR  ? "it inflates past the memory budget"
                     : sl_interrupted() ? "interrupted while it was read"
                     : z.msg            ? z.msg
                                        : "the gzip stream is cut short";
  if (rc != Z_STREAM_END) snprintf(err, errlen, "%s is corrupt (%s): %s", path, what, PACKAGE_HINT);
  inflateEnd(&z);
  free(raw);
  if (rc != Z_STREAM_END) {
    free(buf);
    return NULL;
  }
  *len = out;
  return buf;
}

static int load_pair(const char *dir, const char *prefix, size_t limit, uint8_t **images, uint8_t **labels,
                     size_t *count, char *err, size_t errlen) {
  char path[4096], why[512];
  size_t len, n_images, n_labels;
  int rows, cols, r2, c2;
  snprintf(path, sizeof path, "%s/%s-images-idx3-ubyte.gz", dir, prefix);
  unsigned char *raw = read_gzip(path, &len, err, errlen);
  if (!raw) return -1;
  int rc = slM_idx_parse(raw, len, 3, images, &n_images, &rows, &cols, why, sizeof why);
  free(raw);
  if (rc != 0 || rows != 28 || cols != 28) {
    snprintf(err, errlen, "%s: %s: %s", path, rc ? why : "images are not 28x28", PACKAGE_HINT);
    if (rc == 0) free(*images);
    return -1;
  }
  snprintf(path, sizeof path, "%s/%s-labels-idx1-ubyte.gz", dir, prefix);
  raw = read_gzip(path, &len, err, errlen);
  if (!raw) {
    free(*images);
    return -1;
  }
  rc = slM_idx_parse(raw, len, 1, labels, &n_labels, &r2, &c2, why, sizeof why);
  free(raw);
  if (rc != 0 || n_labels != n_images) {
    snprintf(err, errlen, "%s: %s: %s", path, rc ? why : "the number of labels differs from the number of images",
             PACKAGE_HINT);
    free(*images);
    if (rc == 0) free(*labels);
    return -1;
  }
  for (size_t i = 0; i < n_labels; i++)
    if ((*labels)[i] > 9) {
      snprintf(err, errlen, "%s: label %u at item %zu is not a class 0..9", path, (*labels)[i], i);
      free(*images);
      free(*labels);
      return -1;
    }
  *count = limit && limit < n_images ? limit : n_images;
  return 0;
}

slM_Dataset *slM_fashion_mnist(const char *dir, size_t ntrain, size_t ntest, char *err, size_t errlen) {
  uint8_t *tri, *trl, *tei, *tel;
  size_t n1, n2;
  if (load_pair(dir, "train", ntrain, &tri, &trl, &n1, err, errlen) != 0) return NULL;
  if (load_pair(dir, "t10k", ntest, &tei, &tel, &n2, err, errlen) != 0) {
    free(tri), free(trl);
    return NULL;
  }
  slM_Dataset *d = calloc(1, sizeof *d);
  snprintf(d->name, sizeof d->name, "fashion_mnist");
  snprintf(d->path, sizeof d->path, "%s", dir);
  d->features = 784;
  d->classes = 10;
  d->height = d->width = 28;
  d->ntrain = n1;
  d->ntest = n2;
  d->train_x = malloc((n1 ? n1 : 1) * 784 * sizeof(float));
  d->test_x = malloc((n2 ? n2 : 1) * 784 * sizeof(float));
  d->train_y = malloc(n1 ? n1 : 1);
  d->test_y = malloc(n2 ? n2 : 1);
  if (!d->train_x || !d->test_x || !d->train_y || !d->test_y) {
    snprintf(err, errlen, "not enough memory for %zu training and %zu test images", n1, n2);
    free(tri), free(trl), free(tei), free(tel);
    slM_dataset_free(d);
    return NULL;
  }
  memcpy(d->train_y, trl, n1);
  memcpy(d->test_y, tel, n2);
  double sum = 0, sq = 0;
  for (size_t i = 0; i < n1 * 784; i++) {
    double v = tri[i] / 255.0;
    sum += v;
    sq += v * v;
  }
  d->mean = (float)(sum / (double)(n1 * 784));
  d->std = (float)sqrt(sq / (double)(n1 * 784) - (double)d->mean * d->mean);
  for (size_t i = 0; i < n1 * 784; i++) d->train_x[i] = (tri[i] / 255.0f - d->mean) / d->std;
  for (size_t i = 0; i < n2 * 784; i++) d->test_x[i] = (tei[i] / 255.0f - d->mean) / d->std;
  free(tri), free(trl), free(tei), free(tel);
  return d;
}

slM_Dataset *slM_synthetic(size_t ntrain, size_t ntest, int features, int classes, double spread, uint64_t seed) {
  slM_Dataset *d = calloc(1, sizeof *d);
  snprintf(d->name, sizeof d->name, "synthetic");
  d->spread = spread;
  d->seed = seed;
  d->features = features;
  d->classes = classes;
  d->ntrain = ntrain;
  d->ntest = ntest;
  d->mean = 0;
  d->std = 1;
  int side = (int)lround(sqrt((double)features));
  if (side * side == features) d->height = d->width = side;
  slM_Rng rng;
  slM_rng_seed(&rng, seed);
  float *centres = malloc((size_t)classes * (size_t)features * sizeof *centres);
  d->train_x = malloc(ntrain * (size_t)features * sizeof(float));
  d->test_x = malloc((ntest ? ntest : 1) * (size_t)features * sizeof(float));
  d->train_y = malloc(ntrain ? ntrain : 1);
  d->test_y = malloc(ntest ? ntest : 1);
  if (!centres || !d->train_x || !d->test_x || !d->train_y || !d->test_y) { /* the caller checked the budget; */
    free(centres);                                                          /* this is the last line of defence */
    slM_dataset_free(d);
    return NULL;
  }
  for (size_t i = 0; i < (size_t)classes * (size_t)features; i++) centres[i] = (float)slM_rng_normal(&rng);
  float *xs[2] = {d->train_x, d->test_x};
  uint8_t *ys[2] = {d->train_y, d->test_y};
  size_t ns[2] = {ntrain, ntest};
  for (int s = 0; s < 2; s++)
    for (size_t i = 0; i < ns[s]; i++) {
      if ((i & 1023) == 0 && sl_interrupted()) break; /* the caller sees it and frees the set */
      int c = (int)(slM_rng_next(&rng) % (uint64_t)classes);
      ys[s][i] = (uint8_t)c;
      for (int f = 0; f < features; f++)
        xs[s][i * (size_t)features + (size_t)f] =
            centres[(size_t)c * features + f] + (float)(spread * slM_rng_normal(&rng));
    }
  free(centres);
  return d;
}

void slM_dataset_free(slM_Dataset *d) {
  if (!d) return;
  free(d->train_x);
  free(d->test_x);
  free(d->train_y);
  free(d->test_y);
  free(d);
}

/* ---------------------------------------------------------------- as bytes */

/* A data set travels as its definition, not its numbers: the receiver
** loads the same set again (the files are on every node of a cluster). */

int slM_dataset_encode(const slM_Dataset *d, slU_Text *out, char *err, size_t errlen) {
  slU_put_str(out, d->name);
  slU_put_str(out, d->path);
  slU_put_u64(out, d->ntrain);
  slU_put_u64(out, d->ntest);
  slU_put_u32(out, (uint32_t)d->features);
  slU_put_u32(out, (uint32_t)d->classes);
  slU_put_f64(out, d->spread);
  slU_put_u64(out, d->seed);
  slU_put_f32(out, d->mean);
  slU_put_f32(out, d->std);
  return 0;
}

static slM_Dataset *dataset_bytes_decode(const char *bytes, size_t n, char *err, size_t errlen) {
  slU_Reader r = {bytes, n, 0, 0};
  char name[32], path[256];
  slU_get_str(&r, name, sizeof name);
  slU_get_str(&r, path, sizeof path);
  size_t ntrain = (size_t)slU_get_u64(&r), ntest = (size_t)slU_get_u64(&r);
  int features = (int)slU_get_u32(&r), classes = (int)slU_get_u32(&r);
  double spread = slU_get_f64(&r);
  uint64_t seed = slU_get_u64(&r);
  float mean = slU_get_f32(&r), std = slU_get_f32(&r);
  if (r.bad || r.at != n) return snprintf(err, errlen, "not a data set definition (truncated or too long)"), NULL;
  slM_Dataset *d;
  if (strcmp(name, "fashion_mnist") == 0) {
    d = slM_fashion_mnist(path, ntrain, ntest, err, errlen);
    if (!d) return NULL;
  } else if (strcmp(name, "synthetic") == 0) {
    if (features < 1 || features > 100000 || classes < 2 || classes > 255 || ntrain < 1)
      return snprintf(err, errlen, "not a data set definition (synthetic set out of range)"), NULL;
    d = slM_synthetic(ntrain, ntest, features, classes, spread, seed);
  } else {
    return snprintf(err, errlen, "unknown data set '%s' (fashion_mnist, synthetic)", name), NULL;
  }
  if (d->ntrain != ntrain || d->ntest != ntest || d->mean != mean || d->std != std) {
    snprintf(err, errlen,
             "the data set %s loaded here differs from the original (%zu/%zu items, mean %g, std %g here; "
             "%zu/%zu, %g, %g there): the files differ between machines",
             name, d->ntrain, d->ntest, d->mean, d->std, ntrain, ntest, mean, std);
    slM_dataset_free(d);
    return NULL;
  }
  return d;
}

static void dataset_free(void *data) { slM_dataset_free(data); }

static int dataset_show(void *data, sl_Bundle *out) {
  slM_Dataset *d = data;
  sl_bundle_addf(out, "text/plain", "<dataset %s: %zu training and %zu test items, %d features, %d classes>", d->name,
                 d->ntrain, d->ntest, d->features, d->classes);
  return 0;
}

static int dataset_field(void *data, const char *name, sl_Value *out) {
  slM_Dataset *d = data;
  if (strcmp(name, "ntrain") == 0) return *out = sl_number((double)d->ntrain), 0;
  if (strcmp(name, "ntest") == 0) return *out = sl_number((double)d->ntest), 0;
  if (strcmp(name, "features") == 0) return *out = sl_number(d->features), 0;
  if (strcmp(name, "classes") == 0) return *out = sl_number(d->classes), 0;
  if (strcmp(name, "name") == 0) return *out = sl_string(d->name), 0;
  if (strcmp(name, "mean") == 0) return *out = sl_number(d->mean), 0;
  if (strcmp(name, "std") == 0) return *out = sl_number(d->std), 0;
  return -1;
}

static const char *const dataset_fields[] = {"name", "ntrain", "ntest", "features", "classes", "mean", "std", NULL};

static int dataset_encode(void *data, slU_Text *out, char *err, size_t errlen) {
  return slM_dataset_encode(data, out, err, errlen);
}

static void *dataset_decode(const char *bytes, size_t n, char *err, size_t errlen) {
  return dataset_bytes_decode(bytes, n, err, errlen);
}

const sl_Class slM_dataset_class = {.name = "dataset",
                                    .free = dataset_free,
                                    .show = dataset_show,
                                    .field = dataset_field,
                                    .fields = dataset_fields,
                                    .encode = dataset_encode,
                                    .decode = dataset_decode};
