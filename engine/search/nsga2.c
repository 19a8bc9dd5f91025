#include "search.h"
double slS_nsga2_sample(slS_Study *st, slS_Trial *t, int p) { return slS_random_draw(&st->rng2, &st->space[p].dist); }
