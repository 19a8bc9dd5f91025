/*
** mt19937.c - MT19937 as in Matsumoto and Nishimura's mt19937ar.c, with
** the derived draws numpy's legacy RandomState makes from it (numerics
** §6.1). tests/unit/test_search.c checks the reference outputs of
** mt19937ar and numpy's values for known seeds.
*/
#include "mt19937.h"

#define N 624
#define M 397

void slM_mt_seed(slM_Mt *m, uint32_t seed) {
  m->mt[0] = seed;
  for (int i = 1; i < N; i++) m->mt[i] = 1812433253u * (m->mt[i - 1] ^ (m->mt[i - 1] >> 30)) + (uint32_t)i;
  m->index = N;
  m->draws = 0;
}

static void regenerate(slM_Mt *m) {
  uint32_t *mt = m->mt;
  for (int i = 0; i < N; i++) {
    uint32_t y = (mt[i] & 0x80000000u) | (mt[(i + 1) % N] & 0x7FFFFFFFu);
    mt[i] = mt[(i + M) % N] ^ (y >> 1) ^ ((y & 1u) ? 0x9908B0DFu : 0u);
  }
  m->index = 0;
}

uint32_t slM_mt_next(slM_Mt *m) {
  if (m->index >= N) regenerate(m);
  uint32_t y = m->mt[m->index++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9D2C5680u;
  y ^= (y << 15) & 0xEFC60000u;
  y ^= y >> 18;
  m->draws++;
  return y;
}

void slM_mt_skip(slM_Mt *m, uint64_t n) {
  while (n > 0) {
    if (m->index >= N) regenerate(m);
    uint64_t take = (uint64_t)(N - m->index);
    if (take > n) take = n;
    m->index += (int)take;
    m->draws += take;
    n -= take;
  }
}

uint32_t slM_mt_interval(slM_Mt *m, uint32_t max) {
  if (max == 0) return 0;
  uint32_t mask = max;
  mask |= mask >> 1;
  mask |= mask >> 2;
  mask |= mask >> 4;
  mask |= mask >> 8;
  mask |= mask >> 16;
  uint32_t v;
  while ((v = slM_mt_next(m) & mask) > max) {
  }
  return v;
}

double slM_mt_double(slM_Mt *m) {
  uint32_t a = slM_mt_next(m) >> 5, b = slM_mt_next(m) >> 6;
  return ((double)a * 67108864.0 + (double)b) / 9007199254740992.0;
}

void slM_mt_shuffle(slM_Mt *m, size_t *x, size_t n) {
  for (size_t i = n; i-- > 1;) {
    size_t j = slM_mt_interval(m, (uint32_t)i), t = x[i];
    x[i] = x[j];
    x[j] = t;
  }
}
