/* test_language.c - lexer, parser and evaluator of the command language. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "lang/lex.h"
#include "lang/parse.h"
#include "syslab.h"

static void test_lexer_tokens_and_positions(void) {
  const char *src = "x = 3.5e2 # note\n  print \"a\\tb\" [1..4]\n";
  slX_Lexer L;
  slX_init(&L, src, strlen(src));
  int want[] = {TK_NAME,   '=',       TK_NUMBER, TK_NEWLINE, TK_NAME,    TK_STRING, '[',
                TK_NUMBER, TK_DOTDOT, TK_NUMBER, ']',        TK_NEWLINE, TK_EOF};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    slX_Token t = slX_next(&L);
    CHECK_MSG(t.type == want[i], "token %zu: got %d want %d", i, t.type, want[i]);
    if (i == 2) CHECK_NEAR(t.number, 350, 0);
    if (i == 4) CHECK(t.line == 2 && t.col == 3);
    if (i == 5) CHECK_STREQ(t.string, "a\tb");
    slX_token_free(&t);
  }
}

static void test_lexer_errors(void) {
  slX_Lexer L;
  slX_init(&L, "\"open", 5);
  slX_Token t = slX_next(&L);
  CHECK(t.type == TK_ERROR && L.eof_in_string);
  slX_init(&L, "2.7B", 4); /* a word that starts with a digit: a choice such as lm's preset */
  t = slX_next(&L);
  CHECK(t.type == TK_NAME && t.len == 4);
  slX_token_free(&t);
  slX_init(&L, "\"\\q\"", 4);
  t = slX_next(&L);
  CHECK(t.type == TK_ERROR);
  CHECK_CONTAINS(L.error, "invalid escape");
}

static void test_parser_syntax_errors_carry_position(void) {
  slY_Error e;
  CHECK(slY_parse("x = (1 + 2", 10, &e) == NULL);
  CHECK(e.at_eof);
  const char *bad = "print 1\nprint )";
  CHECK(slY_parse(bad, strlen(bad), &e) == NULL);
  CHECK_EQ_INT(e.line, 2);
  CHECK_EQ_INT(e.col, 7);
  CHECK(!e.at_eof);
}

static void test_arithmetic_and_precedence(void) {
  sl_State *S = sl_new();
  CHECK_STREQ(check_eval(S, "1 + 2 * 3"), "7");
  CHECK_STREQ(check_eval(S, "(1 + 2) * 3"), "9");
  CHECK_STREQ(check_eval(S, "2 ** 3 ** 2"), "512");
  CHECK_STREQ(check_eval(S, "-2 ** 2"), "-4");
  CHECK_STREQ(check_eval(S, "7 % 3"), "1");
  CHECK_STREQ(check_eval(S, "-7 % 3"), "2");
  CHECK_STREQ(check_eval(S, "1 / 3"), "0.333333333");
  CHECK_STREQ(check_eval(S, "1 < 2 and 2 < 3"), "true");
  CHECK_STREQ(check_eval(S, "not 1 == 2"), "true");
  CHECK_STREQ(check_eval(S, "\"a\" + 1"), "\"a1\"");
  CHECK_STREQ(check_eval(S, "[1] + [2, 3]"), "[1, 2, 3]");
  CHECK_STREQ(check_eval(S, "1 / 0"), "ZeroDivisionError: division by zero");
  CHECK_STREQ(check_eval(S, "0.1..0.5 step 0.1"), "[0.1, 0.2, 0.3, 0.4, 0.5]");
  CHECK_STREQ(check_eval(S, "4..1 step -1"), "[4, 3, 2, 1]");
  CHECK_CONTAINS(check_eval(S, "1..4 step -1"), "never reaches its end");
  sl_free(S);
}

static void test_variables_lists_and_control_flow(void) {
  sl_State *S = sl_new();
  CHECK_STREQ(check_eval(S, "xs = [10, 20, 30]\nxs[1] + xs[-1]"), "50");
  CHECK_STREQ(check_eval(S, "total = 0\nfor x in xs { total = total + x }\ntotal"), "60");
  CHECK_STREQ(
      check_eval(S, "if total > 100 { r = \"big\" } else if total > 50 { r = \"mid\" } else { r = \"small\" }\nr"),
      "\"mid\"");
  CHECK_STREQ(check_eval(S, "v = version\nv.syslab"), "\"" SYSLAB_VERSION "\"");
  CHECK_CONTAINS(check_eval(S, "v.nope"), "AttributeError: a record has no field 'nope'");
  CHECK_CONTAINS(check_eval(S, "xs[3]"), "IndexError");
  CHECK_STREQ(check_eval(S, "print \"a\" xs (len xs)"), "nil");
  CHECK_STREQ(check_cap.out.s, "a [10, 20, 30] 3\n");
  CHECK_STREQ(check_eval(S, "round(3.14159, 2)"), "3.14");
  sl_free(S);
}

static void test_errors_suggest_and_keep_the_session(void) {
  sl_State *S = sl_new();
  check_eval(S, "width = 8");
  CHECK_STREQ(check_eval(S, "wdith + 1"), "NameError: name 'wdith' is not defined; did you mean 'width'?");
  CHECK_STREQ(check_eval(S, "sleeep 1"), "SyntaxError: 'sleeep' is not a command; did you mean 'sleep'?");
  CHECK_CONTAINS(check_eval(S, "countdown 3 dealy=0"), "did you mean 'delay'?");
  CHECK_CONTAINS(check_eval(S, "sleep \"x\""), "TypeError: sleep: seconds must be a number, got a string");
  CHECK_CONTAINS(check_eval(S, "countdown 2.5"), "must be a whole number");
  CHECK_CONTAINS(check_eval(S, "sleep"), "sleep needs seconds");
  CHECK_CONTAINS(check_eval(S, "sleep = 3"), "is a command and cannot be assigned");
  CHECK_STREQ(check_eval(S, "width"), "8"); /* the session survived every error */
  sl_Value v;
  sl_Error e;
  CHECK(sl_execute(S, "x = 1\ny = x + nope", &check_host, &v, &e) != 0);
  CHECK_EQ_INT(e.line, 2);
  CHECK_EQ_INT(e.col, 9);
  CHECK_CONTAINS(e.traceback, "    y = x + nope\n            ^\n");
  sl_error_free(&e);
  sl_free(S);
}

/* A block run protected (sl_run_protected: a search's trials) hands its
** error to the command, and the cell goes on with none left over; an error
** the command raises again (sl_raise: a suggestion that contradicts the
** study) is the cell's, with the name, message and place it had. */
static void test_protected_blocks_catch_and_raise_again(void) {
  sl_State *S = sl_new();
  sl_Value v;
  sl_Error e;
  CHECK(sl_execute(S, "s = search trials=2 seed=1 {\n  x = suggest \"x\" int 0 9\n  print nosuch\n}\ns.failed",
                   &check_host, &v, &e) == 0);
  CHECK_EQ_INT(v.type, SL_NUMBER);
  CHECK_EQ_INT(v.u.n, 2);
  sl_release(v);
  CHECK_CONTAINS(check_eval(S, "s.trials.message[0]"), "NameError: name 'nosuch' is not defined (line 3)");
  CHECK(sl_execute(S,
                   "t = search trials=2 seed=1 {\n  x = suggest \"x\" int 0 9\n  y = suggest \"x\" float 0 1\n"
                   "  objective x\n}",
                   &check_host, &v, &e) != 0);
  CHECK_STREQ(e.ename, "RuntimeError");
  CHECK_EQ_INT(e.line, 3);
  CHECK_EQ_INT(e.col, 7);
  CHECK_CONTAINS(e.evalue, "suggest: ");
  sl_error_free(&e);
  CHECK_STREQ(check_eval(S, "1 + 1"), "2");
  sl_free(S);
}

static void test_displays_input_and_help(void) {
  sl_State *S = sl_new();
  check_eval(S, "html \"<b>x</b>\"");
  CHECK_STREQ(check_cap.last_mime, "text/html");
  check_eval(S, "markdown \"# t\"");
  CHECK_STREQ(check_cap.last_mime, "text/markdown");
  CHECK_CONTAINS(check_eval(S, "image \"/nonexistent.png\""), "cannot open");
  check_eval(S, "clear wait=true");
  CHECK_EQ_INT(check_cap.clears, 1);
  CHECK_STREQ(check_eval(S, "input \"q? \""), "\"forty-two\"");
  check_eval(S, "sleep?");
  CHECK_CONTAINS(check_cap.page, "sleep seconds");
  CHECK_CONTAINS(check_cap.page, "Example:");
  check_eval(S, "help countdown");
  CHECK_EQ_INT(check_cap.displays, 1); /* each run starts a fresh capture */
  CHECK_CONTAINS(check_eval(S, "help nosuch"), "no command named 'nosuch'");
  check_eval(S, "countdown 3 delay=0");
  CHECK(check_cap.updates >= 1);
  sl_free(S);
}

static void *interrupt_soon(void *arg) {
  struct timespec ts = {0, 200 * 1000 * 1000};
  nanosleep(&ts, NULL);
  sl_interrupt();
  return NULL;
}

static void test_interrupt_stops_sleep_and_loops(void) {
  sl_State *S = sl_new();
  pthread_t t;
  pthread_create(&t, NULL, interrupt_soon, NULL);
  time_t start = time(NULL);
  CHECK_CONTAINS(check_eval(S, "sleep 20"), "Interrupt");
  pthread_join(t, NULL);
  CHECK(time(NULL) - start < 5);
  pthread_create(&t, NULL, interrupt_soon, NULL);
  CHECK_CONTAINS(check_eval(S, "n = 0\nfor i in 1..5000000 { n = n + 1 }"), "Interrupt: interrupted by the user");
  pthread_join(t, NULL);
  CHECK_STREQ(check_eval(S, "1 + 1"), "2"); /* the flag is cleared for the next cell */
  sl_free(S);
}

static void test_is_complete(void) {
  char indent[16];
  CHECK(sl_is_complete("print 1", indent, sizeof indent) == SL_COMPLETE);
  CHECK(sl_is_complete("for i in [1] {", indent, sizeof indent) == SL_INCOMPLETE);
  CHECK_STREQ(indent, "  ");
  CHECK(sl_is_complete("x = [1,", indent, sizeof indent) == SL_INCOMPLETE);
  CHECK(sl_is_complete("print (1 +\n  2", indent, sizeof indent) == SL_INCOMPLETE);
  CHECK(sl_is_complete("print 1 \\", indent, sizeof indent) == SL_INCOMPLETE);
  CHECK(sl_is_complete("print )", indent, sizeof indent) == SL_INVALID);
  CHECK(sl_is_complete("1 +* 2", indent, sizeof indent) == SL_INVALID);
  /* a newline ends a statement outside brackets, and a string cannot span
  ** lines: no further line completes these */
  CHECK(sl_is_complete("x = ", indent, sizeof indent) == SL_INVALID);
  CHECK(sl_is_complete("1 +", indent, sizeof indent) == SL_INVALID);
  CHECK(sl_is_complete("print \"abc", indent, sizeof indent) == SL_INVALID);
  CHECK(sl_is_complete("print \"abc \\", indent, sizeof indent) == SL_INVALID);
  CHECK(sl_is_complete("for i in [1] {\n  y = ", indent, sizeof indent) == SL_INVALID);
  CHECK(sl_is_complete("print 1 # a comment \\", indent, sizeof indent) == SL_COMPLETE);
}

static void test_evaluate_takes_one_expression_without_output(void) {
  sl_State *S = sl_new();
  check_eval(S, "a = 20");
  sl_Value v;
  sl_Error err;
  CHECK(sl_evaluate(S, "a * 2", &v, &err) == 0 && v.type == SL_NUMBER && v.u.n == 40);
  CHECK(sl_evaluate(S, "(len [1, 2]) + a", &v, &err) == 0 && v.u.n == 22);
  static const char *const refused[][2] = {
      {"b = 1", "SyntaxError: this is an assignment"},
      {"for i in [1] { a = i }", "SyntaxError: this is a for loop"},
      {"1\n2", "SyntaxError: this is 2 statements"},
      {"sweep x=[1] { row y=x }", "SyntaxError: this command runs a block"},
      {"print a", "ValueError: this expression prints text"},
      {"show [1]", "ValueError: this expression displays output"},
      {"", "SyntaxError: the expression is empty"},
  };
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
    CHECK_MSG(sl_evaluate(S, refused[i][0], &v, &err) == -1 && v.type == SL_NIL, "%s was evaluated", refused[i][0]);
    CHECK_CONTAINS(err.traceback, refused[i][1]);
    CHECK_CONTAINS(err.evalue, "a user expression must only compute a value");
    sl_error_free(&err);
  }
  CHECK(sl_state_get(S, "b").type == SL_NIL && sl_state_get(S, "i").type == SL_NIL); /* nothing was assigned */
  CHECK_STREQ(check_eval(S, "a"), "20");
  sl_free(S);
}

static int has(const sl_Completion *c, const char *m) {
  for (size_t i = 0; i < c->n; i++)
    if (strcmp(c->matches[i], m) == 0) return 1;
  return 0;
}

static void test_completion(void) {
  sl_State *S = sl_new();
  check_eval(S, "results = version\nresolution = 3");
  sl_Completion c;
  sl_complete(S, "cou", 3, &c);
  CHECK(has(&c, "countdown") && c.start == 0 && c.end == 3);
  sl_completion_free(&c);
  sl_complete(S, "countdown 3 de", 14, &c);
  CHECK(c.n == 1 && has(&c, "delay="));
  sl_completion_free(&c);
  sl_complete(S, "x = res", 7, &c);
  CHECK(has(&c, "results") && has(&c, "resolution") && c.start == 4);
  sl_completion_free(&c);
  sl_complete(S, "print results.sys", 17, &c);
  CHECK(c.n == 1 && has(&c, "syslab"));
  sl_completion_free(&c);
  sl_complete(S, "input \"a\" password=t", 20, &c);
  CHECK(c.n == 1 && has(&c, "true"));
  sl_completion_free(&c);
  sl_complete(S, "help sle", 8, &c);
  CHECK(has(&c, "sleep"));
  sl_completion_free(&c);
  sl_free(S);
}

static void test_inspection(void) {
  sl_State *S = sl_new();
  sl_Bundle b;
  CHECK(sl_inspect(S, "countdown 3", 4, 0, &b) == 1);
  CHECK_CONTAINS(sl_bundle_get(&b, "text/plain")->data, "countdown [steps]");
  CHECK_CONTAINS(sl_bundle_get(&b, "text/markdown")->data, "| `delay` |");
  sl_bundle_free(&b);
  CHECK(sl_inspect(S, "countdown 3 delay=1", 14, 0, &b) == 1);
  CHECK_CONTAINS(sl_bundle_get(&b, "text/plain")->data, "seconds per step");
  sl_bundle_free(&b);
  check_eval(S, "widths = [4, 8]");
  CHECK(sl_inspect(S, "widths", 6, 0, &b) == 1);
  CHECK_CONTAINS(sl_bundle_get(&b, "text/plain")->data, "widths: list\n[4, 8]");
  sl_bundle_free(&b);
  CHECK(sl_inspect(S, "nothing_here", 3, 0, &b) == 0);
  sl_bundle_free(&b);
  sl_free(S);
}

/* decimal steps give the numbers as written, whole numbers stay exact past
** 12 digits (they were printed to 12 digits and parsed back), and a long
** list is displayed as head and tail while print gives every item */
static void test_ranges_and_long_lists(void) {
  sl_State *S = sl_new();
  CHECK_STREQ(check_eval(S, "-0.3..0.3 step 0.1"), "[-0.3, -0.2, -0.1, 0, 0.1, 0.2, 0.3]");
  CHECK_STREQ(check_eval(S, "(0..1 step 0.1)[3] == 0.3"), "true");
  CHECK_STREQ(check_eval(S, "(0.08..10)[9] == 9.08"), "true");
  CHECK_STREQ(check_eval(S, "10000000000001..10000000000003"), "[10000000000001, 10000000000002, 10000000000003]");
  CHECK_STREQ(check_eval(S, "0..1 step 0.3333333333333333"), "[0, 0.333333333, 0.666666667, 1]");
  const char *shown = check_show(S, "1..2000", "text/plain");
  CHECK_CONTAINS(shown, "[1, 2, 3,");
  CHECK_CONTAINS(shown, "19, 20, ... 1960 more ..., 1981, 1982,");
  CHECK_CONTAINS(shown, "1999, 2000]");
  CHECK_MSG(strlen(shown) < 400, "the display of 2000 items is %zu bytes", strlen(shown));
  CHECK(!strstr(check_show(S, "1..1000", "text/plain"), "more"));
  CHECK_CONTAINS(check_show(S, "[[1..1001]]", "text/plain"), "... 961 more ...");
  CHECK_CONTAINS(check_show(S, "print (1..2000)", "text/plain"), "999, 1000, 1001, 1002");
  sl_free(S);
}

/* Among a command's arguments a sign after a space and before a number,
** '.' or name starts the next argument; elsewhere it is an operator. */
static void test_signs_start_arguments(void) {
  sl_State *S = sl_new();
  check_eval(S, "a = 5");
  check_eval(S, "print a -1");
  CHECK_STREQ(check_cap.out.s, "5 -1\n");
  check_eval(S, "print a - 1, a-1, (a -1), [a -1], a -.5");
  CHECK_STREQ(check_cap.out.s, "4 4 4 [4] 5 -0.5\n");
  check_eval(S, "print a +a");
  CHECK_STREQ(check_cap.out.s, "5 5\n");
  CHECK_STREQ(check_eval(S, "x = a -1\nx"), "4"); /* an assignment's expression is no argument list */
  CHECK_STREQ(check_eval(S, "max(a, -1)"), "5");  /* function style: commas separate */
  check_eval(S, "sweep n=[1] {\n  print n -1\n  y = n -1\n  print y\n}");
  CHECK_STREQ(check_cap.out.s, "1 -1\n0\n");
  /* a search over a range that starts below zero */
  CHECK_STREQ(check_eval(S, "s = search trials=3 sampler=random seed=2 {\n  v = suggest \"v\" float -5 5\n"
                            "  k = suggest \"k\" int -9 -1\n  objective v + k\n}\ns.best_value < 0"),
              "true");
  /* the choice word caught in a difference: no misleading "did you mean" */
  const char *e = check_fails(S, "suggest \"x\" float - 5 5");
  CHECK_CONTAINS(e, "'float' is a choice of suggest's kind");
  CHECK(!strstr(e, "did you mean"));
  /* preset names that start with a digit, unquoted */
  CHECK_STREQ(check_eval(S, "m = lm 2.7B d_model=8 d_ff=8 layers=1 heads=2 vocab=16 context=4\nm.family"), "\"lm\"");
  CHECK_CONTAINS(check_fails(S, "y = 3x"), "'3x' is not a number");
  sl_free(S);
}

int main(void) {
  RUN(test_signs_start_arguments);
  RUN(test_lexer_tokens_and_positions);
  RUN(test_lexer_errors);
  RUN(test_parser_syntax_errors_carry_position);
  RUN(test_arithmetic_and_precedence);
  RUN(test_ranges_and_long_lists);
  RUN(test_variables_lists_and_control_flow);
  RUN(test_errors_suggest_and_keep_the_session);
  RUN(test_protected_blocks_catch_and_raise_again);
  RUN(test_displays_input_and_help);
  RUN(test_interrupt_stops_sleep_and_loops);
  RUN(test_is_complete);
  RUN(test_evaluate_takes_one_expression_without_output);
  RUN(test_completion);
  RUN(test_inspection);
  return check_summary();
}
