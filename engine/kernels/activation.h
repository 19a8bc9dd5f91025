/*
** activation.h - GELU and its slope on arrays (activation.c), the one
** definition every GELU of the graph computes with.
*/
#ifndef SYSLAB_ACTIVATION_H
#define SYSLAB_ACTIVATION_H

#include <stddef.h>

/* the exact (erf) GELU and its slope, one value */
float slK_gelu(float x);
float slK_gelu_grad(float x);
/* the same over items [i0, i1), eight at a time where the CPU has AVX2,
** with the same numbers: y = gelu(x); dx += dy * gelu'(x) (dx = when
** !accumulate) */
void slK_gelu_items(const float *x, float *y, size_t i0, size_t i1);
void slK_gelu_grad_items(const float *x, const float *dy, float *dx, size_t i0, size_t i1, int accumulate);

#endif
