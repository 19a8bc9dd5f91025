/*
** arith.c - the language's operators on values: arithmetic, strings and
** lists joined with +, comparisons, and the numbers of a range.
**
** The evaluator (eval.c) evaluates the operands and hands the values here;
** what an operator makes is refused before it is allocated when it would
** not fit the memory budget (x = x + x in a loop doubles until the machine
** says no: the session must survive that).
*/
#include "arith.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "lex.h"
#include "slcommand.h"

#define MAX_RANGE 10000000

/* 1 when `bytes` more fit the memory budget; else records a MemoryError
** naming what would need them and returns 0 (x = x + x in a loop doubles
** until the machine says no: the session must survive that) */
static int grows_within(sl_State *S, slY_Node *n, double bytes, const char *what) {
  char msg[512];
  if (!sl_memory_exceeds(bytes, what, msg, sizeof msg)) return 1;
  slV_error(S, "MemoryError", n->line, n->col, "%s", msg);
  return 0;
}

int slV_arith(sl_State *S, slY_Node *n, sl_Value a, sl_Value b, sl_Value *out) {
  char buf[16];
  const char *op = slX_describe(n->op, buf, sizeof buf);
  if (n->op == '+' && (a.type == SL_STRING || b.type == SL_STRING)) {
    char *x = sl_tostring(a), *y = sl_tostring(b);
    size_t lx = strlen(x), ly = strlen(y);
    /* the joined text and the string made of it: refused before allocating
    ** when over the budget, rather than ending the process in malloc */
    char *s =
        grows_within(S, n, 2.0 * ((double)lx + (double)ly + 1), "joining these strings") ? malloc(lx + ly + 1) : NULL;
    if (!s) {
      free(x), free(y);
      return S->failed ? -1
                       : slV_error(S, "MemoryError", n->line, n->col,
                                   "out of memory joining strings of %zu and %zu bytes", lx, ly);
    }
    memcpy(s, x, lx);
    memcpy(s + lx, y, ly + 1);
    *out = sl_string_len(s, lx + ly);
    free(x);
    free(y);
    free(s);
    return 0;
  }
  if (n->op == '+' && a.type == SL_LIST && b.type == SL_LIST) {
    double items = (double)sl_list_len(a) + (double)sl_list_len(b);
    if (!grows_within(S, n, 2.0 * items * sizeof(sl_Value), "joining these lists")) return -1;
    *out = sl_list_new();
    for (size_t i = 0; i < sl_list_len(a); i++) sl_retain(sl_list_get(a, i)), sl_list_push(*out, sl_list_get(a, i));
    for (size_t i = 0; i < sl_list_len(b); i++) sl_retain(sl_list_get(b, i)), sl_list_push(*out, sl_list_get(b, i));
    return 0;
  }
  if (a.type != SL_NUMBER || b.type != SL_NUMBER)
    return slV_error(S, "TypeError", n->line, n->col, "%s needs two numbers, got %s and %s", op, sl_typename(a),
                     sl_typename(b));
  double x = a.u.n, y = b.u.n, r = 0;
  switch (n->op) {
    case '+': r = x + y; break;
    case '-': r = x - y; break;
    case '*': r = x * y; break;
    case '/':
      if (y == 0) return slV_error(S, "ZeroDivisionError", n->line, n->col, "division by zero");
      r = x / y;
      break;
    case '%':
      if (y == 0) return slV_error(S, "ZeroDivisionError", n->line, n->col, "modulo by zero");
      r = fmod(x, y);
      if (r != 0 && (r < 0) != (y < 0)) r += y; /* sign of the divisor, as in Python */
      break;
    case TK_POW:
      /* as 1 / 0 is an error, so is 0 ** -1 (it divides by zero too) */
      if (x == 0 && y < 0)
        return slV_error(S, "ZeroDivisionError", n->line, n->col, "0 cannot be raised to a negative power");
      r = pow(x, y);
      break;
  }
  *out = sl_number(r);
  return 0;
}

int slV_compare(sl_State *S, slY_Node *n, sl_Value a, sl_Value b, sl_Value *out) {
  if (n->op == TK_EQ || n->op == TK_NE) {
    int eq = sl_equal(a, b);
    *out = sl_bool(n->op == TK_EQ ? eq : !eq);
    return 0;
  }
  int c;
  if (a.type == SL_NUMBER && b.type == SL_NUMBER) c = (a.u.n > b.u.n) - (a.u.n < b.u.n);
  else if (a.type == SL_STRING && b.type == SL_STRING) c = strcmp(sl_str(a), sl_str(b));
  else {
    char buf[16];
    return slV_error(S, "TypeError", n->line, n->col, "cannot compare %s with %s using %s", sl_typename(a),
                     sl_typename(b), slX_describe(n->op, buf, sizeof buf));
  }
  int r = n->op == '<' ? c < 0 : n->op == TK_LE ? c <= 0 : n->op == '>' ? c > 0 : c >= 0;
  *out = sl_bool(r);
  return 0;
}

/* Ranges with decimal steps give the numbers as written: 0.1..0.9 step 0.1
** holds 0.3, not 0.30000000000000004. When the start and the step are
** whole multiples of 10^-d (d up to 12) and every scaled value stays an
** exact integer in a double, each value is an integer divided by 10^d:
** one correctly rounded division, the same double as the decimal text.
** Otherwise (a step of 1/3, values past 2^53) it is from + i * step. */
static double range_scale(double from, double step, double count) {
  double scale = 1;
  for (int d = 0; d <= 12; d++, scale *= 10) {
    double f = from * scale, s = step * scale;
    if (fabs(f - nearbyint(f)) <= 8 * DBL_EPSILON * fmax(1, fabs(f)) &&
        fabs(s - nearbyint(s)) <= 8 * DBL_EPSILON * fmax(1, fabs(s))) {
      double last = fabs(nearbyint(f)) + fabs(nearbyint(s)) * count;
      return last < 9007199254740992.0 ? scale : 0;
    }
  }
  return 0;
}

static double range_value(double from, double step, double i, double scale) {
  if (scale <= 1) return from + i * step; /* whole numbers are exact as they are */
  return (nearbyint(from * scale) + i * nearbyint(step * scale)) / scale;
}

int slV_range(sl_State *S, slY_Node *n, double from, double to, double step, sl_Value *out) {
  if (!isfinite(from) || !isfinite(to) || !isfinite(step)) {
    char f[32], t[32], st[32];
    sl_format_number(from, f, sizeof f), sl_format_number(to, t, sizeof t), sl_format_number(step, st, sizeof st);
    return slV_error(S, "ValueError", n->line, n->col, "a range needs finite numbers, got %.24s..%.24s step %.24s", f,
                     t, st);
  }
  if (step == 0 || (to - from) / step < 0)
    return slV_error(
        S, "ValueError", n->line, n->col,
        "range %.9g..%.9g step %.9g never reaches its end: the step must move from the start towards the end", from, to,
        step);
  /* a + i*step, with a small tolerance so 0.1..0.9 step 0.1 includes 0.9 */
  double count = floor((to - from) / step + 1e-9) + 1;
  if (count > MAX_RANGE)
    return slV_error(S, "ValueError", n->line, n->col, "range has %.4g values; at most %d are allowed", count,
                     MAX_RANGE);
  double scale = range_scale(from, step, count);
  *out = sl_list_new();
  for (long i = 0; i < (long)count; i++) {
    if ((i & 65535) == 65535 && sl_interrupted()) {
      sl_release(*out);
      *out = sl_nil();
      return slV_error(S, "Interrupt", n->line, n->col, "interrupted by the user");
    }
    sl_list_push(*out, sl_number(range_value(from, step, (double)i, scale)));
  }
  return 0;
}
