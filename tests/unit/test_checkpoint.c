/*
** test_checkpoint.c - `save` and `load`, and the value codec behind them
** and behind shipping values to workers: a trained model round-trips bit
** for bit (the same bytes, the same logits, the same next training step),
** models with quantisers and activation pruners round-trip too, tables,
** data sets and plain values round-trip, and a truncated, altered or
** foreign file is refused with a message saying what is wrong.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "graph/model.h"
#include "slcommand.h"

static char tmpdir[256];

static slM_Graph *model_var(sl_State *S, const char *name) {
  return sl_object_as(sl_state_get(S, name), &slM_model_class);
}

static char *encoded(sl_Value v, size_t *n) {
  slU_Text t = {0};
  char err[256];
  CHECK(sl_encode(v, &t, err, sizeof err) == 0);
  *n = t.n;
  return t.s;
}

static void test_trained_model_round_trip_bit_exact(void) {
  sl_State *S = sl_new();
  char code[2048];
  snprintf(code, sizeof code,
           "data = dataset synthetic train=256 test=64 features=16 classes=3 seed=4\n"
           "m = model mlp data=data hidden=[32, 16] dropout=0.1 seed=7\n"
           "h = train m data epochs=1 batch=32 optimizer=adamw lr=0.01\n"
           "save m \"%s/m.slm\"\n"
           "m2 = load \"%s/m.slm\"\n",
           tmpdir, tmpdir);
  const char *e = check_fails(S, code);
  CHECK_MSG(e == NULL, "%s", e);
  slM_Graph *a = model_var(S, "m"), *b = model_var(S, "m2");
  CHECK(a && b);
  if (!a || !b) return sl_free(S);
  size_t na, nb;
  char *ea = encoded(sl_state_get(S, "m"), &na), *eb = encoded(sl_state_get(S, "m2"), &nb);
  CHECK(na == nb && memcmp(ea, eb, na) == 0);
  free(ea), free(eb);
  CHECK_EQ_INT(a->n, b->n);
  /* same logits, bit for bit, and the same metadata */
  slM_Dataset *d = sl_object_as(sl_state_get(S, "data"), &slM_dataset_class);
  slM_Tensor *la = slM_tensor_copy(slM_forward(a, d->test_x, NULL, 64, 0));
  slM_Tensor *lb = slM_forward(b, d->test_x, NULL, 64, 0);
  CHECK(la->size == lb->size && memcmp(la->data, lb->data, la->size * sizeof(float)) == 0);
  for (int i = 0; i < a->n && i < b->n; i++) CHECK(a->nodes[i].flops == b->nodes[i].flops);
  slM_tensor_free(la);
  /* training both once more (Adam state and dropout stream travelled) keeps them equal */
  e = check_fails(S, "h1 = train m data epochs=1 batch=32 optimizer=adamw lr=0.01\n"
                     "h2 = train m2 data epochs=1 batch=32 optimizer=adamw lr=0.01\n");
  CHECK_MSG(e == NULL, "%s", e);
  ea = encoded(sl_state_get(S, "m"), &na), eb = encoded(sl_state_get(S, "m2"), &nb);
  CHECK(na == nb && memcmp(ea, eb, na) == 0);
  free(ea), free(eb);
  sl_free(S);
}

static void test_transformer_lora_and_pruned_round_trip(void) {
  sl_State *S = sl_new();
  char code[2048];
  snprintf(code, sizeof code,
           "data = dataset synthetic train=64 test=16 features=16 classes=3\n"
           "t = model transformer data=data patch=2 depth=1 width=16 heads=2\n"
           "t = lora t rank=2\n"
           "p = prune t sparsity=0.5\n"
           "save p \"%s/t.slm\"\n"
           "p2 = load \"%s/t.slm\"\n",
           tmpdir, tmpdir);
  const char *e = check_fails(S, code);
  CHECK_MSG(e == NULL, "%s", e);
  if (e) return sl_free(S);
  size_t na, nb;
  char *ea = encoded(sl_state_get(S, "p"), &na), *eb = encoded(sl_state_get(S, "p2"), &nb);
  CHECK(na == nb && memcmp(ea, eb, na) == 0);
  free(ea), free(eb);
  slM_Graph *b = model_var(S, "p2");
  int masks = 0, frozen = 0;
  for (int i = 0; b && i < b->n; i++) {
    masks += b->nodes[i].comp.weight_mask != NULL;
    for (int k = 0; k < b->nodes[i].nparams; k++) frozen += b->nodes[i].params[k]->frozen;
  }
  CHECK(masks > 0);
  CHECK(frozen > 0);
  sl_free(S);
}

/* quantisers and activation pruners travel with the model: same bytes,
** same logits, and the same logits again on the next forward (the random
** pruner's stream went along) */
static void test_compressed_models_round_trip(void) {
  sl_State *S = sl_new();
  char code[2048];
  snprintf(code, sizeof code,
           "data = dataset synthetic train=64 test=32 features=16 classes=3 seed=2\n"
           "m = model mlp data=data hidden=[32] seed=5\n"
           "q = quantize_model m format=integer width=8 frac=4\n"
           "x = quantize_model m format=mxint8\n"
           "p = prune q sparsity=0.5 method=random seed=3 activation_sparsity=0.25\n"
           "save q \"%s/q.slm\"\nsave x \"%s/x.slm\"\nsave p \"%s/p.slm\"\n"
           "q2 = load \"%s/q.slm\"\nx2 = load \"%s/x.slm\"\np2 = load \"%s/p.slm\"\n",
           tmpdir, tmpdir, tmpdir, tmpdir, tmpdir, tmpdir);
  const char *e = check_fails(S, code);
  CHECK_MSG(e == NULL, "%s", e);
  if (e) return sl_free(S);
  slM_Dataset *d = sl_object_as(sl_state_get(S, "data"), &slM_dataset_class);
  const char *pairs[][2] = {{"q", "q2"}, {"x", "x2"}, {"p", "p2"}};
  for (int i = 0; i < 3; i++) {
    size_t na, nb;
    char *ea = encoded(sl_state_get(S, pairs[i][0]), &na), *eb = encoded(sl_state_get(S, pairs[i][1]), &nb);
    CHECK_MSG(na == nb && memcmp(ea, eb, na) == 0, "%s: the loaded model encodes differently", pairs[i][0]);
    free(ea), free(eb);
    slM_Graph *a = model_var(S, pairs[i][0]), *b = model_var(S, pairs[i][1]);
    for (int round = 0; round < 2; round++) {
      slM_Tensor *la = slM_tensor_copy(slM_forward(a, d->test_x, NULL, 32, 0));
      slM_Tensor *lb = slM_forward(b, d->test_x, NULL, 32, 0);
      CHECK_MSG(memcmp(la->data, lb->data, la->size * sizeof(float)) == 0, "%s: logits differ on forward %d",
                pairs[i][0], round + 1);
      slM_tensor_free(la);
    }
  }
  /* and they are really compressed: the loaded quantiser changes the logits */
  slM_Tensor *lm = slM_tensor_copy(slM_forward(model_var(S, "m"), d->test_x, NULL, 32, 0));
  slM_Tensor *lq = slM_forward(model_var(S, "q2"), d->test_x, NULL, 32, 0);
  CHECK(memcmp(lm->data, lq->data, lm->size * sizeof(float)) != 0);
  slM_tensor_free(lm);
  sl_free(S);
}

static void write_bytes(const char *path, const char *data, size_t n) {
  FILE *f = fopen(path, "wb");
  fwrite(data, 1, n, f);
  fclose(f);
}

static char *read_bytes(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  fseek(f, 0, SEEK_END);
  *n = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc(*n);
  CHECK(fread(s, 1, *n, f) == *n);
  fclose(f);
  return s;
}

static void test_bad_files_refused(void) {
  sl_State *S = sl_new();
  char code[1024], path[512], bad[512];
  snprintf(path, sizeof path, "%s/small.slm", tmpdir);
  snprintf(bad, sizeof bad, "%s/bad.slm", tmpdir);
  snprintf(code, sizeof code, "m = model mlp inputs=8 classes=2 hidden=[4]\nsave m \"%s\"", path);
  CHECK(check_fails(S, code) == NULL);
  size_t n;
  char *bytes = read_bytes(path, &n);
  /* truncated: every cut is refused, never crashes */
  for (size_t cut = 0; cut < n; cut += cut < 64 ? 1 : 97) {
    write_bytes(bad, bytes, cut);
    snprintf(code, sizeof code, "x = load \"%s\"", bad);
    const char *e = check_fails(S, code);
    CHECK_MSG(e != NULL, "a file cut at %zu of %zu bytes was accepted", cut, n);
  }
  write_bytes(bad, bytes, n - 10);
  snprintf(code, sizeof code, "x = load \"%s\"", bad);
  CHECK_CONTAINS(check_fails(S, code), "is truncated: the header promises");
  /* one flipped bit in the weights */
  bytes[n - 3] ^= 4;
  write_bytes(bad, bytes, n);
  CHECK_CONTAINS(check_fails(S, code), "is damaged: its checksum does not match");
  /* a foreign file */
  static const char foreign[] = "PK\003\004 not ours at all";
  write_bytes(bad, foreign, sizeof foreign - 1);
  CHECK_CONTAINS(check_fails(S, code), "is not a syslab file");
  snprintf(code, sizeof code, "x = load \"%s/missing.slm\"", tmpdir);
  CHECK_CONTAINS(check_fails(S, code), "cannot open");
  free(bytes);
  sl_free(S);
}

static void test_values_tables_datasets_round_trip(void) {
  sl_State *S = sl_new();
  char code[2048];
  snprintf(code, sizeof code,
           "t = table a=[1, 2.5, 3] b=[\"x\", \"y\", \"z\"]\n"
           "v = [0.1, \"text\", [1, [2, true], nil], t, (version)]\n"
           "data = dataset synthetic train=50 test=10 features=4 classes=2 seed=9 spread=0.3\n"
           "save v \"%s/v.slm\"\nsave data \"%s/d.slm\"\n"
           "v2 = load \"%s/v.slm\"\nd2 = load \"%s/d.slm\"\n",
           tmpdir, tmpdir, tmpdir, tmpdir);
  const char *e = check_fails(S, code);
  CHECK_MSG(e == NULL, "%s", e);
  if (e) return sl_free(S);
  size_t na, nb;
  char *ea = encoded(sl_state_get(S, "v"), &na), *eb = encoded(sl_state_get(S, "v2"), &nb);
  CHECK(na == nb && memcmp(ea, eb, na) == 0);
  free(ea), free(eb);
  slM_Dataset *a = sl_object_as(sl_state_get(S, "data"), &slM_dataset_class);
  slM_Dataset *b = sl_object_as(sl_state_get(S, "d2"), &slM_dataset_class);
  CHECK(a && b);
  if (a && b) {
    CHECK(a->ntrain == b->ntrain && a->features == b->features);
    CHECK(memcmp(a->train_x, b->train_x, a->ntrain * (size_t)a->features * sizeof(float)) == 0);
    CHECK(memcmp(a->test_y, b->test_y, a->ntest) == 0);
  }
  /* a decoder fed garbage or a cut value says so */
  sl_Value out;
  char err[256];
  CHECK(sl_decode("\x07", 1, &out, err, sizeof err) == -1);
  CHECK_CONTAINS(err, "unknown tag");
  CHECK(sl_decode("l\x05\0\0\0\0\0\0\0", 9, &out, err, sizeof err) == -1);
  CHECK_CONTAINS(err, "truncated");
  sl_free(S);
}

int main(void) {
  if (!check_tmpdir(tmpdir, sizeof tmpdir, "checkpoint")) return 1;
  RUN(test_trained_model_round_trip_bit_exact);
  RUN(test_transformer_lora_and_pruned_round_trip);
  RUN(test_compressed_models_round_trip);
  RUN(test_bad_files_refused);
  RUN(test_values_tables_datasets_round_trip);
  if (check_tmpdir_remove(tmpdir) != 0) return 1;
  return check_summary();
}
