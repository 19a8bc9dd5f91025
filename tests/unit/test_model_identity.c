/*
** test_model_identity.c - a model keeps everything it is: saved and loaded,
** shipped as a search ships it to its workers (the value codec), traced again
** and passed through every command that returns a model. A language model
** keeps its vocabulary, context and widths; every model keeps its precision
** mode, which its node table and metadata show. Checkpoints name operators,
** and a file written in format 1 (operators by number) still loads to the
** same models; every checkpoint seed of the fuzz corpus reads back or is
** refused with a reason.
*/
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "graph/model.h"
#include "graph/ops.h"
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

static int same_encoding(sl_Value a, sl_Value b) {
  size_t na, nb;
  char *ea = encoded(a, &na), *eb = encoded(b, &nb);
  int same = na == nb && memcmp(ea, eb, na) == 0;
  free(ea), free(eb);
  return same;
}

/* the model a worker receives: v through the value codec (the caller frees it with sl_release) */
static slM_Graph *shipped(sl_Value v, sl_Value *copy) {
  size_t n;
  char err[256], *bytes = encoded(v, &n);
  int rc = sl_decode(bytes, n, copy, err, sizeof err);
  CHECK_MSG(rc == 0, "%s", err);
  free(bytes);
  return rc == 0 ? sl_object_as(*copy, &slM_model_class) : NULL;
}

static char *read_text(const char *path) {
  FILE *f = fopen(path, "rb");
  CHECK_MSG(f != NULL, "cannot open %s", path);
  if (!f) return NULL;
  static char text[1 << 16];
  size_t n = fread(text, 1, sizeof text - 1, f);
  text[n] = '\0';
  fclose(f);
  return text;
}

/* ------------------------------------------------------ the language model */

static void test_language_model_keeps_its_sizes(void) {
  sl_State *S = sl_new();
  char code[1024];
  snprintf(code, sizeof code,
           "l = lm vocab=32 d_model=16 d_ff=24 layers=2 heads=2 context=12 seed=3\n"
           "save l \"%s/l.slm\"\n"
           "l2 = load \"%s/l.slm\"\n",
           tmpdir, tmpdir);
  const char *e = check_fails(S, code);
  CHECK_MSG(e == NULL, "%s", e);
  slM_Graph *a = model_var(S, "l"), *b = model_var(S, "l2");
  if (!a || !b) return sl_free(S);
  CHECK_EQ_INT(b->vocab, 32);
  CHECK_EQ_INT(b->context, 12);
  CHECK_EQ_INT(b->d_ff, 24);
  CHECK_EQ_INT(b->layers, 2);
  CHECK(same_encoding(sl_state_get(S, "l"), sl_state_get(S, "l2")));
  /* the loaded model trains, as the original does, to the same losses */
  e = check_fails(S, "h1 = lm_train l steps=3 every=1 batch=2\nh2 = lm_train l2 steps=3 every=1 batch=2\n");
  CHECK_MSG(e == NULL, "training the loaded language model: %s", e);
  CHECK_STREQ(check_eval(S, "h1.loss == h2.loss"), "true");
  /* and so does the copy a worker receives */
  sl_Value copy;
  slM_Graph *w = shipped(sl_state_get(S, "l"), &copy);
  CHECK(w && w->context == 12 && w->vocab == 32);
  sl_release(copy);
  sl_free(S);
}

/* --------------------------------------------------------- precision mode */

static void test_precision_survives_save_ship_capture(void) {
  sl_State *S = sl_new();
  char code[1024];
  snprintf(code, sizeof code,
           "data = dataset synthetic train=64 test=32 features=16 classes=3 seed=2\n"
           "m = model mlp data=data hidden=[32] seed=5 labels=true\n"
           "mb = precision m bf16\n"
           "save mb \"%s/mb.slm\"\n"
           "loaded = load \"%s/mb.slm\"\n"
           "traced = capture mb labels=true\n",
           tmpdir, tmpdir);
  const char *e = check_fails(S, code);
  CHECK_MSG(e == NULL, "%s", e);
  if (e) return sl_free(S);
  CHECK_STREQ(check_eval(S, "loaded.precision"), "\"bf16\"");
  CHECK_STREQ(check_eval(S, "traced.precision"), "\"bf16\"");
  CHECK_STREQ(check_eval(S, "m.precision"), "\"fp32\"");
  /* the mode is what computes: the loaded and traced models' losses are the bf16 model's, not float32's */
  CHECK_STREQ(check_eval(S, "(evaluate loaded data).loss == (evaluate mb data).loss"), "true");
  CHECK_STREQ(check_eval(S, "(evaluate traced data).loss == (evaluate mb data).loss"), "true");
  CHECK_STREQ(check_eval(S, "(evaluate mb data).loss == (evaluate m data).loss"), "false");
  /* shipped to a worker */
  sl_Value copy;
  slM_Graph *w = shipped(sl_state_get(S, "mb"), &copy);
  CHECK(w && w->precision == SLM_BF16);
  sl_release(copy);
  /* the node table, the metadata and the header say so */
  CHECK_CONTAINS(check_show(S, "mb", "text/plain"), "precision bf16");
  CHECK_CONTAINS(check_show(S, "mb", "text/plain"), "bfloat16");
  CHECK_STREQ(check_eval(S, "(meta mb \"fc1\").common.precision"), "\"bfloat16\"");
  CHECK_STREQ(check_eval(S, "(meta m \"fc1\").common.precision"), "\"float32\"");
  CHECK_STREQ(check_eval(S, "(meta m \"fc1\").software.kernel"), "\"cblas_sgemm\"");
  CHECK_STREQ(check_eval(S, "(meta mb \"fc1\").software.kernel == \"cblas_sgemm\""), "false");
  CHECK_STREQ(check_eval(S, "(meta mb \"relu_1\").common.precision"), "\"bfloat16\"");
  CHECK_STREQ(check_eval(S, "(meta mb \"loss\").common.precision"), "\"float32\"");
  CHECK_STREQ(check_eval(S, "(meta mb \"labels\").common.precision"), "\"int64\"");
  sl_free(S);
}

/* The first line of a command's example that calls it ("x = cmd ...",
** "cmd ..." or "(cmd ...)..."): the expression, and the lines before it. */
static int example_call(const sl_Command *c, char *before, size_t bsize, char *expr, size_t esize) {
  const char *text = c->example;
  size_t name_len = strlen(c->name);
  int found = 0;
  for (const char *line = text; *line;) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    const char *rhs = line, *eq = memchr(line, '=', len);
    if (eq && eq > line && eq[-1] == ' ' && eq[1] == ' ' && memchr(line, ' ', len) == eq - 1) rhs = eq + 2;
    const char *p = rhs;
    while (*p == '(') p++;
    if (!found && strncmp(p, c->name, name_len) == 0 && (p[name_len] == ' ' || p[name_len] == '\n' || !p[name_len])) {
      snprintf(before, bsize, "%.*s", (int)(line - text), text);
      snprintf(expr, esize, "%.*s", (int)(len - (size_t)(rhs - line)), rhs);
      found = 1;
    }
    line += len + (end != NULL);
  }
  return found;
}

static int declares(const sl_Command *c, const char *arg) {
  for (int a = 0; c->args[a].name; a++)
    if (strcmp(c->args[a].name, arg) == 0) return 1;
  return 0;
}

/* The call at its smallest, for the commands that declare these arguments:
** one step (of a batch of two), one repetition, no warm-up. A value given
** (a word, a string or a list) is replaced. */
static void shrink(const sl_Command *c, char *expr, size_t size) {
  static const char *const small[][2] = {{"steps", "1"}, {"reps", "1"}, {"warmup", "0"}, {"batch", "2"}};
  for (size_t i = 0; i < sizeof small / sizeof *small; i++) {
    const char *name = small[i][0];
    if (!declares(c, name) || (strcmp(name, "batch") == 0 && !declares(c, "steps"))) continue;
    char key[32];
    snprintf(key, sizeof key, " %s=", name);
    char *at = strstr(expr, key);
    if (at) {
      char *end = at + strlen(key);
      if (*end == '[') end = strchr(end, ']') + 1;
      else if (*end == '"') end = strchr(end + 1, '"') + 1;
      else end += strcspn(end, " \n");
      memmove(at, end, strlen(end) + 1);
    }
    size_t len = strlen(expr);
    snprintf(expr + len, size - len, "%s%s", key, small[i][1]);
  }
}

/* Every command of the registry that takes a model is run as its example
** calls it (shrink'd), with each model the call names put in bf16 first: a
** command whose result is a model must return one in bf16. A new command is
** walked as soon as it is registered. */
static void test_every_command_returning_a_model_keeps_the_mode(void) {
  char dir[512];
  snprintf(dir, sizeof dir, "%s/walk", tmpdir);
  CHECK(mkdir(dir, 0700) == 0 && chdir(dir) == 0); /* examples that save write here */
  int walked = 0, models = 0;
  for (size_t i = 0; sl_command_at(i); i++) {
    const sl_Command *c = sl_command_at(i);
    int takes_model = 0;
    for (int a = 0; c->args[a].name; a++)
      takes_model |= c->args[a].type == SL_ARG_OBJECT && strcmp(c->args[a].cls, "model") == 0;
    if (!takes_model) continue;
    char before[4096], expr[2048], code[8192];
    CHECK_MSG(example_call(c, before, sizeof before, expr, sizeof expr), "the example of %s does not call it", c->name);
    sl_State *S = sl_new();
    const char *e = check_fails(S, before);
    CHECK_MSG(e == NULL, "%s: the example's lines before its call fail: %s", c->name, e);
    /* the call's words that name a model of the session: each in bf16 */
    size_t used = 0;
    code[0] = '\0';
    for (const char *p = expr; *p;) {
      size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
      if (n == 0) {
        p++;
        continue;
      }
      char word[64];
      snprintf(word, sizeof word, "%.*s", (int)n, p);
      if (sl_object_as(sl_state_get(S, word), &slM_model_class))
        used += (size_t)snprintf(code + used, sizeof code - used, "%s = precision %s bf16\n", word, word);
      p += n;
    }
    shrink(c, expr, sizeof expr);
    snprintf(code + used, sizeof code - used, "walked = %s\n", expr);
    e = check_fails(S, code);
    CHECK_MSG(e == NULL, "%s on bf16 models fails: %s\n%s", c->name, e, code);
    walked++;
    slM_Graph *g = model_var(S, "walked");
    if (g && strcmp(c->name, "precision") != 0) { /* precision sets the mode it is given */
      models++;
      CHECK_MSG(g->precision == SLM_BF16, "%s returned a model in %s from bf16 ones:\n%s", c->name,
                g->precision == SLM_FP32 ? "fp32" : "fp16", code);
    }
    sl_free(S);
  }
  printf("  %d commands take a model; %d of them return one\n", walked, models);
  CHECK(walked >= 20);
  CHECK(models >= 12); /* to, capture, copy, remove_dropout, set_attention, identity, lora, pass, quantize_model, ... */
  CHECK(chdir(tmpdir) == 0);
}

/* --------------------------------------------------------------- formats */

/* A file written in checkpoint format 1 loads to the models its script
** builds today: the same graph, settings, weights and transforms, and what
** format 1 left out (the language model's sizes, fused nodes' activation
** and causal attention, buffer planning) recovered. */
static void test_format1_checkpoint_loads_to_the_same_models(void) {
  char script[512], fixture[512];
  snprintf(script, sizeof script, "%s/tests/fixtures/checkpoint_v1.syslab", SYSLAB_SOURCE_DIR);
  snprintf(fixture, sizeof fixture, "%s/tests/fixtures/checkpoint_v1.slm", SYSLAB_SOURCE_DIR);
  char *code = read_text(script);
  if (!code) return;
  CHECK(chdir(tmpdir) == 0); /* the script saves its own copy here */
  sl_State *S = sl_new();
  const char *e = check_fails(S, code);
  CHECK_MSG(e == NULL, "%s", e);
  char load[768];
  snprintf(load, sizeof load, "old = load \"%s\"", fixture);
  e = check_fails(S, load);
  CHECK_MSG(e == NULL, "%s", e);
  if (e) return sl_free(S);
  sl_Value old = sl_state_get(S, "old");
  const char *names[] = {"c", "r", "f", "lf", "ls"};
  CHECK_EQ_INT(sl_list_len(old), 5);
  for (size_t i = 0; i < 5 && i < sl_list_len(old); i++)
    CHECK_MSG(same_encoding(sl_list_get(old, i), sl_state_get(S, names[i])),
              "model %s of the format 1 file loads differently from the one its script builds", names[i]);
  /* they compute the same: the causal attention of the fused language model among them */
  CHECK_STREQ(check_eval(S, "a = lm_train lf steps=2 every=1 batch=2 seed=1\n"
                            "b = lm_train old[3] steps=2 every=1 batch=2 seed=1\na.loss == b.loss"),
              "true");
  sl_free(S);
}

/* every checkpoint seed of the fuzz corpus (format 1 files among them, and
** a damaged one) reads back and writes the same bytes twice, or is refused
** with a reason */
static void test_corpus_checkpoints(void) {
  char dir[512];
  snprintf(dir, sizeof dir, "%s/tests/fuzz/corpus/checkpoint", SYSLAB_SOURCE_DIR);
  DIR *d = opendir(dir);
  CHECK_MSG(d != NULL, "cannot open %s", dir);
  if (!d) return;
  int read_back = 0;
  for (struct dirent *ent; (ent = readdir(d));) {
    if (ent->d_name[0] == '.') continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
    FILE *f = fopen(path, "rb");
    static char bytes[1 << 20];
    size_t n = f ? fread(bytes, 1, sizeof bytes, f) : 0;
    if (f) fclose(f);
    char err[1024] = "";
    slM_Graph *g = slM_graph_decode(bytes, n, err, sizeof err);
    if (!g) {
      CHECK_MSG(err[0], "%s is refused without a reason", ent->d_name);
      continue;
    }
    slU_Text once = {0}, twice = {0};
    CHECK(slM_graph_encode(g, &once, err, sizeof err) == 0);
    slM_Graph *h = slM_graph_decode(once.s, once.n, err, sizeof err);
    CHECK_MSG(h != NULL, "%s: written again, it does not read back: %s", ent->d_name, err);
    if (h) CHECK(slM_graph_encode(h, &twice, err, sizeof err) == 0);
    CHECK_MSG(h && once.n == twice.n && memcmp(once.s, twice.s, once.n) == 0, "%s: not the same bytes twice",
              ent->d_name);
    read_back++;
    free(once.s), free(twice.s);
    slM_graph_free(g), slM_graph_free(h);
  }
  closedir(d);
  CHECK(read_back >= 6);
}

/* A node setting outside its operator's declared range is refused by
** verification, whoever made the graph: here a checkpoint altered by hand. */
static void test_node_settings_held_to_their_ranges(void) {
  CHECK_STREQ(slM_ops_check(), ""); /* unique names among them */
  CHECK(slM_op_by_name("token_cross_entropy") == OP_TOKEN_CE);
  CHECK(slM_op_by_name("cross_entropy") == OP_CROSS_ENTROPY);
  CHECK(slM_op_by_name("no_such_op") == -1);
  sl_State *S = sl_new();
  CHECK(check_fails(S, "t = model transformer inputs=16 classes=3 patch=2 depth=1 width=8 heads=2 dropout=0.25") ==
        NULL);
  slM_Graph *t = model_var(S, "t");
  char err[512];
  struct {
    const char *node, *what;
    int heads, patch;
    float p;
  } bad[] = {
      {"encoder_0_attention_scores", "heads = 0", 0, 0, 0},
      {"patches", "patch = 0", 0, 0, 0},
      {"encoder_0_attention_dropout", "p = 1", 0, 0, 1.0f},
      {"embeddings_layer_norm", "p = nan", 0, 0, NAN},
  };
  for (size_t i = 0; t && i < sizeof bad / sizeof *bad; i++) {
    slM_Graph *g = slM_graph_copy(t, 0);
    slM_Node *n = &g->nodes[slM_find_node(g, bad[i].node)];
    if (strstr(bad[i].what, "heads")) n->heads = bad[i].heads;
    else if (strstr(bad[i].what, "patch")) n->patch = bad[i].patch;
    else n->p = bad[i].p;
    slU_Text bytes = {0};
    CHECK(slM_graph_encode(g, &bytes, err, sizeof err) == 0);
    CHECK_MSG(slM_graph_decode(bytes.s, bytes.n, err, sizeof err) == NULL, "%s was accepted", bad[i].what);
    CHECK_CONTAINS(err, bad[i].what);
    CHECK_CONTAINS(err, bad[i].node);
    free(bytes.s);
    slM_graph_free(g);
  }
  sl_free(S);
}

int main(void) {
  if (!check_tmpdir(tmpdir, sizeof tmpdir, "identity")) return 1;
  RUN(test_language_model_keeps_its_sizes);
  RUN(test_precision_survives_save_ship_capture);
  RUN(test_format1_checkpoint_loads_to_the_same_models);
  RUN(test_corpus_checkpoints);
  RUN(test_node_settings_held_to_their_ranges);
  RUN(test_every_command_returning_a_model_keeps_the_mode);
  if (check_tmpdir_remove(tmpdir) != 0) return 1;
  return check_summary();
}
