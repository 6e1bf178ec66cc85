// cuda_bf16.h for mirage's CPU emulator: bfloat16 storage (__nv_bfloat16,
// __nv_bfloat162) and the conversions that mirage_runtime.cuh and the tests'
// driver use, in plain C++17, in place of the CUDA toolkit's header (see
// cuda_fp16.h beside it). bfloat16 is the top half of a float: conversion
// rounds the low half away, to nearest, ties to even; a NaN becomes the
// device's canonical NaN, 0x7fff.
#ifndef MIRAGE_EMU_CUDA_BF16_H
#define MIRAGE_EMU_CUDA_BF16_H

#include "cuda_fp16.h"

struct __nv_bfloat16_raw {
  unsigned short x;
};

struct __nv_bfloat16 {
  unsigned short x;  // the bfloat16 bits
  __nv_bfloat16() = default;
  __nv_bfloat16(__nv_bfloat16_raw r) : x(r.x) {}
  operator __nv_bfloat16_raw() const { return __nv_bfloat16_raw{x}; }
};

struct alignas(4) __nv_bfloat162 {
  __nv_bfloat16 x, y;
};

namespace mirage_emu {

inline uint16_t float_to_bf16_bits(float f) {
  const uint32_t u = float_bits(f);
  if ((u & 0x7fffffff) > 0x7f800000) return 0x7fff;
  // Infinities stay infinite; a carry out of the mantissa rounds up to the
  // next binade, or to infinity.
  return static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

}  // namespace mirage_emu

inline float __bfloat162float(__nv_bfloat16 h) { return mirage_emu::bits_float(static_cast<uint32_t>(h.x) << 16); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(__nv_bfloat16_raw{mirage_emu::float_to_bf16_bits(f)}); }
inline __nv_bfloat16 __float2bfloat16(float f) { return __float2bfloat16_rn(f); }
inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) {
  return __nv_bfloat162{__float2bfloat16_rn(a), __float2bfloat16_rn(b)};
}

#endif  // MIRAGE_EMU_CUDA_BF16_H
