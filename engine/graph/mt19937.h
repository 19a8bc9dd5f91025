/*
** mt19937.h - the Mersenne Twister stream numpy's legacy RandomState uses,
** so that searches and random pruning draw exactly the numbers Optuna and
** MASE draw for the same seed (numerics §6.1, §4 decision 6).
**
** It lives in graph/ so that compress/ (random pruning) and search/ (the
** samplers) share one implementation. Nothing here allocates.
*/
#ifndef SYSLAB_GRAPH_MT19937_H
#define SYSLAB_GRAPH_MT19937_H

#include <stddef.h>
#include <stdint.h>

typedef struct slM_Mt {
  uint32_t mt[624];
  int index;      /* 624: the next draw regenerates the state */
  uint64_t draws; /* 32-bit outputs taken since seeding (a journal restores the stream by replaying them) */
} slM_Mt;

/* numpy RandomState(seed): init_genrand */
void slM_mt_seed(slM_Mt *m, uint32_t seed);
uint32_t slM_mt_next(slM_Mt *m);
/* skip n outputs: the stream a journal recorded after `draws` outputs */
void slM_mt_skip(slM_Mt *m, uint64_t n);
/* uniform on [0, max] by masked rejection (numpy random_interval); max = 0 takes no draw */
uint32_t slM_mt_interval(slM_Mt *m, uint32_t max);
/* uniform double on [0, 1) from two draws, 53 bits (numpy random_sample) */
double slM_mt_double(slM_Mt *m);
/* legacy RandomState.shuffle of x[0..n): Fisher-Yates from the end */
void slM_mt_shuffle(slM_Mt *m, size_t *x, size_t n);

#endif
