/*
** run.c - one trial of a search: the search block run once, and the
** trial's outcome recorded (complete, pruned or failed).
**
** The trial being run is a static stack (searches may nest), because the
** commands inside the block (suggest, intermediate, objective in
** commands.c) are ordinary commands that only find their trial through
** it. A trial whose block raises an error is recorded as failed with the
** message and the search goes on: the block runs protected
** (sl_run_protected), so its error is the trial's and the cell does not
** fail. Two errors are not the trial's but the search's and stop it (they
** are raised again as the cell's): an interrupt, and a suggestion that
** contradicts the study's space.
**
** A file of its own, below both of its callers: the serial loop of
** commands.c, and the workers of remote.c, which commands.c calls.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "search.h"

static slS_Active *active;

slS_Active *slS_active(void) { return active; }

static char *message_of(const sl_Error *e) {
  char buf[2048];
  if (e->line > 0) snprintf(buf, sizeof buf, "%s: %s (line %d)", e->ename, e->evalue ? e->evalue : "", e->line);
  else snprintf(buf, sizeof buf, "%s: %s", e->ename, e->evalue ? e->evalue : "");
  return strdup(buf);
}

/* Runs the block once as trial t (the last trial of st) and records its
** outcome: complete, pruned (with Optuna's last value) or failed (with the
** message). Returns -1 when the error is the search's, not the trial's (an
** interrupt, a contradicting suggestion): the trial is then dropped. A
** worker process runs its trials through this same function. */
int slS_run_trial(sl_Call *call, slS_Study *st, slS_Trial *t) {
  sl_setvar(call, "trial", sl_number(t->number));
  slS_Active a = {st, t, 0, 0, 0, active};
  active = &a;
  double t0 = slU_now();
  sl_Error caught;
  int body = sl_run_protected(call, "body", &caught);
  active = a.outer;
  t = &st->trials[st->ntrials - 1]; /* the array may have moved (a nested search cannot, but be safe) */
  t->seconds = slU_now() - t0;
  if (body != 0 && (a.fatal || sl_interrupted() || strcmp(caught.ename, "Interrupt") == 0)) {
    slS_trial_drop_last(st);
    sl_raise(call, &caught);
    sl_error_free(&caught);
    return -1;
  }
  if (body != 0 && a.pruned) {
    t->state = SLS_PRUNED;
    t->nvalues = 0;
    if (t->ninter > 0 && !isnan(t->inter[t->ninter - 1])) { /* Optuna keeps the last step's value */
      int last = 0;
      for (int i = 1; i < t->ninter; i++)
        if (t->steps[i] > t->steps[last]) last = i;
      t->values[0] = t->inter[last];
      t->nvalues = 1;
    }
  } else if (body != 0) {
    t->message = message_of(&caught);
    t->state = SLS_FAILED;
    t->nvalues = 0;
  } else if (!a.has_objective) {
    t->message = strdup("the block ended without `objective VALUE`");
    t->state = SLS_FAILED;
  } else {
    t->state = SLS_COMPLETE;
  }
  sl_error_free(&caught);
  return 0;
}
