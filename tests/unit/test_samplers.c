/*
** test_samplers.c - each sampler's first trials, pinned: the same seed
** proposes the same parameters, values, states and stream positions, and
** the journal's header and trial lines keep their form, so that old
** journals resume.
**
** The pinned lines are what the samplers proposed for these searches
** before the samplers became one table of records; random and grid equal
** Optuna's trials for the same seed, TPE and NSGA-II follow Optuna in their
** order of draws (tests/python/test_search.py and test_search_nsga2.py
** compare them with Optuna itself). Each line is a trial of the journal
** with its time left out: number, state, parameters in suggestion order
** (name=internal value, 17 digits), values, grid point, the two streams'
** positions; a report line is a pruner's input. A journal holding the
** pinned header and first trial resumes to the same trials. SYSLAB_PIN_PRINT=1
** prints the lines a run gives, to compare by eye.
*/
#define _GNU_SOURCE
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "search/search.h"
#include "slcommand.h"

static char dir[64];

/* the journal at path, one summary line per trial or report, joined by newlines */
static char *summary(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return strdup("(no journal)");
  slU_Text out = {0};
  slU_add_len(&out, "", 0);
  char *line = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, f) > 0) {
    json_t *o = json_loads(line, 0, NULL);
    json_t *params = json_object_get(o, "params"), *values = json_object_get(o, "values");
    if (json_object_get(o, "report")) {
      slU_add(&out, "report %d step %d value %.17g\n", (int)json_integer_value(json_object_get(o, "report")),
              (int)json_integer_value(json_object_get(o, "step")), json_number_value(json_object_get(o, "value")));
    } else if (json_object_get(o, "trial")) {
      slU_add(&out, "%d %s", (int)json_integer_value(json_object_get(o, "trial")),
              json_string_value(json_object_get(o, "state")));
      for (size_t i = 0; i < json_array_size(params); i++) {
        json_t *p = json_array_get(params, i);
        slU_add(&out, " %s=%.17g", json_string_value(json_object_get(p, "name")),
                json_number_value(json_object_get(p, "internal")));
      }
      slU_add(&out, " |");
      for (size_t k = 0; k < json_array_size(values); k++) {
        json_t *v = json_array_get(values, k);
        if (json_is_string(v)) slU_add(&out, " %s", json_string_value(v));
        else slU_add(&out, " %.17g", json_number_value(v));
      }
      if (json_object_get(o, "grid_id"))
        slU_add(&out, " | grid %d", (int)json_integer_value(json_object_get(o, "grid_id")));
      json_t *d = json_object_get(o, "draws");
      slU_add(&out, " | draws %lld %lld\n", (long long)json_integer_value(json_array_get(d, 0)),
              (long long)json_integer_value(json_array_get(d, 1)));
    }
    json_decref(o);
  }
  free(line);
  fclose(f);
  return out.s;
}

/* the journal's first line with `key` ("syslab_study": the header, "trial": the
** first trial) as written, with a trial's seconds left out */
static char *journal_line(const char *path, const char *key) {
  FILE *f = fopen(path, "r");
  if (!f) return strdup("(no journal)");
  char *line = NULL, *got = NULL;
  size_t cap = 0;
  while (!got && getline(&line, &cap, f) > 0) {
    json_t *o = json_loads(line, 0, NULL);
    json_object_del(o, "seconds");
    if (json_object_get(o, key)) got = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(o);
  }
  free(line);
  fclose(f);
  return got ? got : strdup("(no such line)");
}

/* runs `search OPTIONS journal=... BODY` in a fresh session and checks its
** journal, then resumes the pinned first trial and checks the rest */
static void pinned(const char *name, const char *options, const char *body, const char *want, const char *header,
                   const char *first) {
  char path[128], code[4096];
  snprintf(path, sizeof path, "%s/%s.jsonl", dir, name);
  unlink(path);
  sl_State *S = sl_new();
  snprintf(code, sizeof code, "s = search %s journal=\"%s\" %s\ns.n", options, path, body);
  const char *r = check_eval(S, code);
  CHECK_MSG(strstr(r, "Error") == NULL, "%s: %s", name, r);
  char *got = summary(path), *h = journal_line(path, "syslab_study"), *t = journal_line(path, "trial");
  if (getenv("SYSLAB_PIN_PRINT")) printf("--- %s\n%s%s\n%s\n", name, got, h, t);
  CHECK_MSG(strcmp(got, want) == 0, "%s: the trials differ from the pinned ones:\n%s", name, got);
  CHECK_MSG(strcmp(h, header) == 0, "%s: the header differs:\n%s", name, h);
  CHECK_MSG(strcmp(t, first) == 0, "%s: the first trial line differs:\n%s", name, t);
  free(got), free(h), free(t);
  /* the pinned header and first trial, as an earlier syslab wrote them
  ** (with their time), resume to the same trials */
  snprintf(path, sizeof path, "%s/%s-resumed.jsonl", dir, name);
  FILE *f = fopen(path, "w");
  fprintf(f, "%s\n%.*s,\"seconds\":0.25}\n", header, (int)strlen(first) - 1, first);
  fclose(f);
  snprintf(code, sizeof code, "s = search %s journal=\"%s\" %s\ns.n", options, path, body);
  r = check_eval(S, code);
  CHECK_MSG(strstr(check_cap.out.s, "resuming") != NULL && strstr(r, "Error") == NULL, "%s resumed: %s", name, r);
  got = summary(path);
  slU_Text rest = {0}; /* the pinned trials without trial 0's reports, which the file above leaves out */
  slU_add_len(&rest, "", 0);
  for (const char *line = want; *line;) {
    const char *end = strchr(line, '\n') + 1;
    if (strncmp(line, "report 0 ", 9) != 0) slU_add_len(&rest, line, (size_t)(end - line));
    line = end;
  }
  CHECK_MSG(strcmp(got, rest.s) == 0, "%s: the resumed trials differ from the pinned ones:\n%s", name, got);
  free(got), free(rest.s);
  sl_free(S);
}

/* ------------------------------------------------------------ the pins */

static const char *const random_trials =
    "report 0 step 0 value 6.2170014929557302\n"
    "report 0 step 1 value 5.7170014929557302\n"
    "report 0 step 2 value 5.5503348262890633\n"
    "0 complete x=-1.6947668425041713 lr=0.021865347140571728 w=35 d=0.40000000000000002 act=0 k=1 | 5.2170014929557302 | draws 16 0\n"
    "report 1 step 0 value 3.434172174572701\n"
    "report 1 step 1 value 2.934172174572701\n"
    "report 1 step 2 value 2.7675055079060344\n"
    "1 complete x=-0.92624407959251531 lr=0.0031597120213268807 w=83 d=0.40000000000000002 act=0 k=9 | 2.434172174572701 | draws 32 0\n"
    "report 2 step 0 value 3.7108258743604989\n"
    "report 2 step 1 value 3.2108258743604989\n"
    "report 2 step 2 value 3.0441592076938324\n"
    "2 complete x=-1.146458585680338 lr=0.0022718093648132465 w=201 d=0 act=1 k=5 | 2.7108258743604989 | draws 48 0\n"
    "report 3 step 0 value 2.6916629346523986\n"
    "report 3 step 1 value 2.1916629346523986\n"
    "report 3 step 2 value 2.0249962679857321\n"
    "3 complete x=1.636513499546925 lr=0.00025090443458586733 w=48 d=0.40000000000000002 act=0 k=5 | 1.6916629346523986 | draws 64 0\n"
    "report 4 step 0 value 2.5210319225133304\n"
    "report 4 step 1 value 2.0210319225133304\n"
    "report 4 step 2 value 1.8543652558466635\n"
    "4 complete x=-0.5104612424597641 lr=0.0027052254503857724 w=27 d=0.5 act=0 k=3 | 1.5210319225133302 | draws 80 0\n"
    "report 5 step 0 value 1.6742088939875719\n"
    "report 5 step 1 value 1.1742088939875719\n"
    "report 5 step 2 value 1.0075422273209051\n"
    "5 complete x=-0.1886282698143984 lr=0.0011453417656186865 w=76 d=0.20000000000000001 act=1 k=9 | 0.67420889398757189 | draws 96 0\n"
    "report 6 step 0 value 4.3619722059122825\n"
    "6 pruned x=-1.2781935231892736 lr=0.016724633855483659 w=33 d=0.20000000000000001 act=0 k=1 | 4.3619722059122825 | draws 112 0\n"
    "report 7 step 0 value 5.9409505304432901\n"
    "7 pruned x=-1.6309506166129917 lr=0.013433314457593619 w=48 d=0.40000000000000002 act=0 k=3 | 5.9409505304432901 | draws 128 0\n";

static const char *const random_header =
    "{\"syslab_study\":1,\"sampler\":\"random\",\"seed\":7,\"directions\":[\"minimize\"],\"objectives\":[\"value\"],\"pruner\":\"median\","
    "\"pruner_settings\":{\"startup\":2,\"warmup\":0,\"interval\":1,\"min_trials\":1}}";

static const char *const random_first =
    "{\"trial\":0,\"state\":\"complete\",\"params\":[{\"name\":\"x\",\"distribution\":{\"kind\":\"float\",\"low\":-2.0,\"high\":2.0,"
    "\"step\":0.0,\"log\":false},\"internal\":-1.6947668425041713},{\"name\":\"lr\",\"distribution\":{\"kind\":\"float\","
    "\"low\":0.0001,\"high\":0.10000000000000001,\"step\":0.0,\"log\":true},\"internal\":0.021865347140571728},"
    "{\"name\":\"w\",\"distribution\":{\"kind\":\"int\",\"low\":8.0,\"high\":256.0,\"step\":1.0,\"log\":true},\"internal\":35.0},"
    "{\"name\":\"d\",\"distribution\":{\"kind\":\"float\",\"low\":0.0,\"high\":0.5,\"step\":0.10000000000000001,\"log\":false},"
    "\"internal\":0.40000000000000002},{\"name\":\"act\",\"distribution\":{\"kind\":\"categorical\",\"choices\":[\"relu\","
    "\"gelu\",\"tanh\"]},\"internal\":0.0},{\"name\":\"k\",\"distribution\":{\"kind\":\"int\",\"low\":1.0,\"high\":9.0,\"step\":2.0,"
    "\"log\":false},\"internal\":1.0}],\"values\":[5.2170014929557302],\"intermediate\":[[0,6.2170014929557302],"
    "[1,5.7170014929557302],[2,5.5503348262890633]],\"draws\":[16,0]}";

static const char *const grid_trials = "0 complete x=1 act=1 | 1 | grid 0 | draws 10 0\n"
                                       "1 complete x=1 act=0 | 1 | grid 1 | draws 10 0\n"
                                       "2 complete x=0 act=1 | 0 | grid 2 | draws 10 0\n"
                                       "3 complete x=0 act=0 | 0 | grid 3 | draws 10 0\n"
                                       "4 complete x=-1 act=0 | 1 | grid 4 | draws 10 0\n"
                                       "5 complete x=-1 act=1 | 1 | grid 5 | draws 10 0\n";

static const char *const grid_header =
    "{\"syslab_study\":1,\"sampler\":\"grid\",\"seed\":5,\"directions\":[\"minimize\"],\"objectives\":[\"value\"],\"pruner\":\"median\","
    "\"pruner_settings\":{\"startup\":5,\"warmup\":0,\"interval\":1,\"min_trials\":1},\"grid\":{\"act\":[\"relu\",\"gelu\"],"
    "\"x\":[-1.0,0.0,1.0]}}";

static const char *const grid_first =
    "{\"trial\":0,\"state\":\"complete\",\"params\":[{\"name\":\"x\",\"distribution\":{\"kind\":\"float\",\"low\":-1.0,\"high\":1.0,"
    "\"step\":0.0,\"log\":false},\"internal\":1.0},{\"name\":\"act\",\"distribution\":{\"kind\":\"categorical\",\"choices\":[\"relu\","
    "\"gelu\"]},\"internal\":1.0}],\"values\":[1.0],\"intermediate\":[],\"grid_id\":0,\"draws\":[10,0]}";

static const char *const tpe_trials =
    "0 complete x=-1.2789212444929232 lr=0.00011439992097685274 w=39 d=0.40000000000000002 act=1 k=5 | 4.2170022691971729 | draws 0 16\n"
    "1 complete x=1.7672266093734645 lr=0.035676748603659401 w=99 d=0 act=0 k=7 | 2.6932413249230227 | draws 0 32\n"
    "2 complete x=-1.9180655488350693 lr=0.00022398132339033523 w=23 d=0 act=1 k=3 | 6.2369803190042097 | draws 0 48\n"
    "3 complete x=-1.5533550720213585 lr=0.00017859094280138081 w=93 d=0.30000000000000004 act=1 k=9 | 5.7796447618717073 | draws 0 64\n"
    "4 complete x=0.152283742168692 lr=0.002231587940788776 w=14 d=0 act=2 k=1 | 0.27565444418613039 | draws 384 64\n"
    "5 complete x=-0.067726076290204107 lr=0.0016107028733038796 w=10 d=0.10000000000000001 act=1 k=1 | 0.56144577800615059 | draws 768 64\n"
    "6 complete x=-1.8968757140602426 lr=0.00053442116513317697 w=27 d=0.20000000000000001 act=0 k=3 | 6.3505715358344768 | draws 1152 64\n"
    "7 complete x=-0.31621570801963028 lr=0.02459852908420021 w=196 d=0.5 act=0 k=5 | 2.4320461990694087 | draws 1536 64\n"
    "8 complete x=1.5432331958683183 lr=0.00069981883469404657 w=35 d=0.20000000000000001 act=0 k=3 | 1.7251407443313325 | draws 1920 64\n"
    "9 complete x=-0.65891245410074073 lr=0.0080241202529837911 w=72 d=0.20000000000000001 act=2 k=3 | 2.124331980370576 | draws 2304 64\n"
    "10 complete x=0.78630841630092285 lr=0.00073331071983921161 w=19 d=0.30000000000000004 act=0 k=7 | 1.1562771307749575 | draws 2688 64\n"
    "11 complete x=-1.784905143576224 lr=0.00038194926132484861 w=23 d=0.10000000000000001 act=1 k=3 | 5.7107277720410963 | draws 3072 64\n";

static const char *const tpe_header =
    "{\"syslab_study\":1,\"sampler\":\"tpe\",\"seed\":11,\"directions\":[\"maximize\"],\"objectives\":[\"value\"],\"pruner\":\"median\","
    "\"pruner_settings\":{\"startup\":5,\"warmup\":0,\"interval\":1,\"min_trials\":1},\"tpe\":{\"startup\":4,\"candidates\":16}}";

static const char *const tpe_first =
    "{\"trial\":0,\"state\":\"complete\",\"params\":[{\"name\":\"x\",\"distribution\":{\"kind\":\"float\",\"low\":-2.0,\"high\":2.0,"
    "\"step\":0.0,\"log\":false},\"internal\":-1.2789212444929232},{\"name\":\"lr\",\"distribution\":{\"kind\":\"float\","
    "\"low\":0.0001,\"high\":0.10000000000000001,\"step\":0.0,\"log\":true},\"internal\":0.00011439992097685274},"
    "{\"name\":\"w\",\"distribution\":{\"kind\":\"int\",\"low\":8.0,\"high\":256.0,\"step\":1.0,\"log\":true},\"internal\":39.0},"
    "{\"name\":\"d\",\"distribution\":{\"kind\":\"float\",\"low\":0.0,\"high\":0.5,\"step\":0.10000000000000001,\"log\":false},"
    "\"internal\":0.40000000000000002},{\"name\":\"act\",\"distribution\":{\"kind\":\"categorical\",\"choices\":[\"relu\","
    "\"gelu\",\"tanh\"]},\"internal\":1.0},{\"name\":\"k\",\"distribution\":{\"kind\":\"int\",\"low\":1.0,\"high\":9.0,\"step\":2.0,"
    "\"log\":false},\"internal\":5.0}],\"values\":[4.2170022691971729],\"intermediate\":[],\"draws\":[0,16]}";

static const char *const nsga2_trials =
    "0 complete x=0.20319161029830202 lr=0.013318136687429968 w=21 d=0.30000000000000004 act=1 k=3 | 0.34128683049561709 0.93490360989901289 | draws 0 16\n"
    "1 complete x=-1.7941311867966805 lr=0.0021010168283379818 w=8 d=0.20000000000000001 act=2 k=5 | 3.4189067154364654 8.3071690890298271 | draws 0 32\n"
    "2 complete x=-1.9040724704913385 lr=0.0047485636531424498 w=19 d=0.20000000000000001 act=1 k=1 | 3.8254919728829893 8.5336369138656654 | draws 0 48\n"
    "3 complete x=0.17859607212737894 lr=0.021925236847600379 w=22 d=0.10000000000000001 act=2 k=7 | 0.13189655697932795 1.37470441272457 | draws 0 64\n"
    "4 complete x=0.17859607212737894 lr=0.021925236847600379 w=22 d=0.5 act=1 k=3 | 0.53189655697932792 0.97470441272457009 | draws 30 66\n"
    "5 complete x=1.3830034851727171 lr=0.0021010168283379818 w=22 d=0.20000000000000001 act=2 k=7 | 2.1126986399998819 0.84669166965444764 | draws 61 68\n"
    "6 complete x=0.20319161029830202 lr=0.0021010168283379818 w=8 d=0.30000000000000004 act=1 k=3 | 0.34128683049561709 0.93490360989901289 | draws 91 68\n"
    "7 complete x=-1.7941311867966805 lr=0.0021010168283379818 w=8 d=0.20000000000000001 act=2 k=7 | 3.4189067154364654 8.5071690890298264 | draws 124 68\n"
    "8 complete x=-0.48802383468444344 lr=0.021925236847600379 w=10 d=0.30000000000000004 act=1 k=3 | 0.53816726322010899 2.5142149325889958 | draws 154 72\n"
    "9 complete x=1.3830034851727171 lr=0.0021010168283379818 w=22 d=0.20000000000000001 act=1 k=3 | 2.1126986399998819 0.44669166965444773 | draws 184 72\n"
    "10 complete x=0.20319161029830202 lr=0.021925236847600379 w=22 d=0.30000000000000004 act=2 k=7 | 0.34128683049561709 1.3349036098990128 | draws 215 72\n"
    "11 complete x=0.17859607212737894 lr=0.021925236847600379 w=21 d=0.30000000000000004 act=0 k=3 | 0.33189655697932796 0.97470441272457009 | draws 245 78\n"
    "12 complete x=1.3830034851727171 lr=0.021925236847600379 w=21 d=0.30000000000000004 act=1 k=3 | 2.212698639999882 0.44669166965444773 | draws 276 78\n"
    "13 complete x=0.17859607212737894 lr=0.021925236847600379 w=22 d=0.10000000000000001 act=0 k=3 | 0.13189655697932795 0.97470441272457009 | draws 306 80\n";

static const char *const nsga2_header =
    "{\"syslab_study\":1,\"sampler\":\"nsga2\",\"seed\":3,\"directions\":[\"minimize\",\"minimize\"],\"objectives\":[\"value_0\","
    "\"value_1\"],\"pruner\":\"median\",\"pruner_settings\":{\"startup\":5,\"warmup\":0,\"interval\":1,\"min_trials\":1},"
    "\"nsga2\":{\"population\":4}}";

static const char *const nsga2_first =
    "{\"trial\":0,\"state\":\"complete\",\"params\":[{\"name\":\"x\",\"distribution\":{\"kind\":\"float\",\"low\":-2.0,\"high\":2.0,"
    "\"step\":0.0,\"log\":false},\"internal\":0.20319161029830202},{\"name\":\"lr\",\"distribution\":{\"kind\":\"float\","
    "\"low\":0.0001,\"high\":0.10000000000000001,\"step\":0.0,\"log\":true},\"internal\":0.013318136687429968},"
    "{\"name\":\"w\",\"distribution\":{\"kind\":\"int\",\"low\":8.0,\"high\":256.0,\"step\":1.0,\"log\":true},\"internal\":21.0},"
    "{\"name\":\"d\",\"distribution\":{\"kind\":\"float\",\"low\":0.0,\"high\":0.5,\"step\":0.10000000000000001,\"log\":false},"
    "\"internal\":0.30000000000000004},{\"name\":\"act\",\"distribution\":{\"kind\":\"categorical\",\"choices\":[\"relu\","
    "\"gelu\",\"tanh\"]},\"internal\":1.0},{\"name\":\"k\",\"distribution\":{\"kind\":\"int\",\"low\":1.0,\"high\":9.0,\"step\":2.0,"
    "\"log\":false},\"internal\":3.0}],\"values\":[0.34128683049561709,0.93490360989901289],\"intermediate\":[],"
    "\"draws\":[0,16]}";

/* ---------------------------------------------------------- the searches */

static const char *const space = "  x = suggest \"x\" float -2 2\n"
                                 "  lr = suggest \"lr\" float 1e-4 1e-1 log=true\n"
                                 "  w = suggest \"w\" int 8 256 log=true\n"
                                 "  d = suggest \"d\" float 0 0.5 by=0.1\n"
                                 "  act = suggest \"act\" categorical [\"relu\", \"gelu\", \"tanh\"]\n"
                                 "  k = suggest \"k\" int 1 9 by=2\n";

static void test_random_and_the_median_pruner(void) {
  char body[2048];
  snprintf(body, sizeof body,
           "{\n%s  for e in 0..2 {\n    intermediate (x - 0.5) ** 2 + d + 1 / (e + 1) at=e\n  }\n"
           "  objective (x - 0.5) ** 2 + d\n}",
           space);
  pinned("random", "trials=8 sampler=random seed=7 pruner=median prune_startup=2", body, random_trials, random_header,
         random_first);
}

static void test_grid(void) {
  pinned("grid", "trials=9 sampler=grid seed=5 x=[-1, 0, 1] act=[\"relu\", \"gelu\"]",
         "{\n  x = suggest \"x\" float -1 1\n  act = suggest \"act\" categorical [\"relu\", \"gelu\"]\n"
         "  objective x * x\n}",
         grid_trials, grid_header, grid_first);
}

static void test_tpe(void) {
  char body[2048];
  snprintf(body, sizeof body, "{\n%s  objective (x - 0.5) ** 2 + (lr - 0.01) ** 2 + w / 256 + d + k / 10\n}", space);
  pinned("tpe", "trials=12 sampler=tpe seed=11 startup=4 candidates=16 direction=maximize", body, tpe_trials,
         tpe_header, tpe_first);
}

static void test_nsga2(void) {
  char body[2048];
  snprintf(body, sizeof body, "{\n%s  objective [x * x + d, (x - 1) ** 2 + k / 10]\n}", space);
  pinned("nsga2", "trials=14 sampler=nsga2 seed=3 population=4 directions=[\"minimize\", \"minimize\"]", body,
         nsga2_trials, nsga2_header, nsga2_first);
}

/* auto: TPE for one objective, NSGA-II for several */
static void test_auto_names_the_sampler(void) {
  sl_State *S = sl_new();
  CHECK_STREQ(check_eval(S, "(search trials=1 { objective 1 }).sampler"), "\"tpe\"");
  CHECK_STREQ(check_eval(S, "(search trials=1 directions=[\"minimize\", \"maximize\"] { objective [1, 2] }).sampler"),
              "\"nsga2\"");
  CHECK_CONTAINS(
      check_eval(S, "search trials=1 sampler=tpe directions=[\"minimize\", \"maximize\"] { objective [1, 2] }"),
      "tpe here optimises one objective; several objectives use nsga2 (or random, grid)");
  CHECK_CONTAINS(check_eval(S, "search trials=1 sampler=random a=[1] { objective 1 }"),
                 "a=[...] names a grid, which only sampler=grid takes");
  sl_free(S);
}

/* search's choices, help and options are the table's (samplers.c) */
static void test_search_words_come_from_the_table(void) {
  const sl_Command *c = sl_command_find("search");
  const sl_Arg *a = sl_command_arg(c, "sampler");
  CHECK(a != NULL && a->choices != NULL);
  if (!a || !a->choices) return;
  CHECK_STREQ(a->choices[0], "auto");
  int n = 0;
  for (; slS_samplers[n]; n++) {
    const slS_Sampler *s = slS_samplers[n];
    CHECK_STREQ(a->choices[n + 1], s->name);
    CHECK_MSG(strstr(c->help, s->name) != NULL, "search's help does not name %s", s->name);
    CHECK_MSG(strcasestr(sl_command_domain(c)->intro, s->title) != NULL, "the search domain does not name %s",
              s->title);
    for (const slS_Option *o = s->options; o && o->name; o++) {
      const sl_Arg *oa = sl_command_arg(c, o->name);
      CHECK_MSG(
          oa && oa->type == SL_ARG_INT && strcmp(oa->defval, o->defval) == 0 && strstr(oa->help, s->name) == oa->help,
          "%s's option %s is no argument of search", s->name, o->name);
    }
  }
  CHECK(a->choices[n + 1] == NULL);
  CHECK(sl_command_arg(c, "journal") != NULL && sl_command_arg(c, "body") != NULL);
  /* the names the study gives, and the option setter's checks */
  slS_Study *st = slS_study_new();
  char err[256];
  slS_sampler_use(st, slS_sampler_find("tpe"));
  CHECK_EQ_INT(slS_sampler_option(st, "startup", 3, err, sizeof err), 0);
  CHECK_EQ_INT(slS_sampler_option(st, "candidates", 0, err, sizeof err), -1);
  CHECK_CONTAINS(err, "between 1 and 100000");
  CHECK_EQ_INT(slS_sampler_option(st, "population", 8, err, sizeof err), -1);
  CHECK_CONTAINS(err, "the tpe sampler has no option population");
  slS_study_free(st);
}

int main(void) {
  if (!check_tmpdir(dir, sizeof dir, "samplers")) return 1;
  RUN(test_random_and_the_median_pruner);
  RUN(test_grid);
  RUN(test_tpe);
  RUN(test_nsga2);
  RUN(test_auto_names_the_sampler);
  RUN(test_search_words_come_from_the_table);
  if (check_tmpdir_remove(dir) != 0) return 1;
  return check_summary();
}
