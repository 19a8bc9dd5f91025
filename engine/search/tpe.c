#include "search.h"
double slS_tpe_sample(slS_Study *st, const slS_Trial *t, int p) { return slS_random_draw(&st->rng2, &st->space[p].dist); }
