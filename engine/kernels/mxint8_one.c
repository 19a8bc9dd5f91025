/*
** mxint8_one.c - one MXINT8 element (numerics §5.3-5.4) decoded at a time:
** v0, the reference every MXINT8 decode of this folder is checked against.
**
** Build: part of the engine. tests/unit/test_kernels.c compares the
** vectorised decodes (simd.c, through mxint8.c) with these for every
** mantissa and scale byte, and these with the exact value m/64 x 2^(E-127)
** and with compress/'s slQ_mxint8_to_bf16.
**
**   slK_mxint8_bf16_one  the ADLS Lab 4 MXINT8 kernel's bit assembly (sign | E << 7 |
**                        (|m| & 63) << 1, minus the implicit 1 when bit 6
**                        of |m| is clear)
**   slK_mxint8_f32_one   m * 2^(E-133) by ldexpf
**
** A file of its own, below both of its users: simd.c's portable loops and
** the AVX-512 loops' tails decode through it, and mxint8.c, which runs the
** reference over arrays and calls simd.c's loops, sits above simd.c.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

float slK_bf16_to_f32(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

uint16_t slK_mxint8_bf16_one(int8_t m, uint8_t e) {
  if (e == 0) return 0x0000;    /* syslab: E = 0 groups are all zero */
  if (e == 0xFF) return 0x7FC0; /* syslab: a NaN scale makes the group NaN */
  uint16_t sign = (uint16_t)(((uint8_t)m & 0x80) << 8), exp = (uint16_t)(e << 7);
  int a = abs((int)m);
  uint16_t frac = (uint16_t)((a & 0x3F) << 1);
  float out = slK_bf16_to_f32((uint16_t)(sign | exp | frac));
  float bias = slK_bf16_to_f32((uint16_t)(sign | exp));
  float y = (a & 0x40) ? out : out - bias;
  uint32_t u;
  memcpy(&u, &y, sizeof u);
  return (uint16_t)(u >> 16);
}

float slK_mxint8_f32_one(int8_t m, uint8_t e) { return e == 0 ? 0.0f : e == 0xFF ? NAN : ldexpf((float)m, e - 133); }
