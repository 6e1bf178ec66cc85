// cuda_fp16.h for mirage's CPU emulator: IEEE binary16 storage (__half,
// __half2) and the conversions that mirage_runtime.cuh and the tests' driver
// use, in plain C++17. The emulator takes it in place of the CUDA toolkit's
// header (its directory comes first on the include path), so that emulating
// emitted code needs nothing but a host C++ compiler. Conversions round to
// nearest, ties to even, as the device's __float2half_rn does; a NaN becomes
// the device's canonical NaN, 0x7fff.
#ifndef MIRAGE_EMU_CUDA_FP16_H
#define MIRAGE_EMU_CUDA_FP16_H

#include <cstdint>
#include <cstring>

struct __half_raw {
  unsigned short x;
};

struct __half {
  unsigned short x;  // the binary16 bits
  __half() = default;
  __half(__half_raw r) : x(r.x) {}
  operator __half_raw() const { return __half_raw{x}; }
};

struct alignas(4) __half2 {
  __half x, y;
};

namespace mirage_emu {

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// shift_rne shifts v right by s (1 <= s <= 31) bits, rounding to nearest,
// ties to even.
inline uint32_t shift_rne(uint32_t v, int s) {
  uint32_t q = v >> s, rem = v & ((1u << s) - 1), half = 1u << (s - 1);
  return q + (rem > half || (rem == half && (q & 1)));
}

inline uint16_t float_to_half_bits(float f) {
  const uint32_t u = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
  const int exp = static_cast<int>((u >> 23) & 0xff);
  const uint32_t mant = u & 0x7fffff;
  if (exp == 0xff) return mant ? 0x7fff : static_cast<uint16_t>(sign | 0x7c00);
  const int e = exp - 127 + 15;  // the binary16 exponent field
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00);
  if (e >= 1) {
    // Normal: drop 13 mantissa bits. A carry out of the mantissa bumps the
    // exponent, up to infinity, which is what rounding asks for.
    return static_cast<uint16_t>(sign | shift_rne((static_cast<uint32_t>(e) << 23) | mant, 13));
  }
  // Subnormal (or zero): the value in units of 2^-24 is full / 2^s.
  const int s = 126 - exp;
  if (s > 24) return sign;  // below half of 2^-24 (float subnormals too): zero
  return static_cast<uint16_t>(sign | shift_rne(mant | 0x800000, s));
}

inline float half_bits_to_float32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 0x1f) return bits_float(sign | 0x7f800000 | (mant << 13));
  if (exp != 0) return bits_float(sign | ((exp - 15 + 127) << 23) | (mant << 13));
  // Zero or subnormal: mant * 2^-24, exact in float.
  const float v = static_cast<float>(mant) * (1.0f / 16777216.0f);
  return sign ? -v : v;
}

}  // namespace mirage_emu

inline float __half2float(__half h) { return mirage_emu::half_bits_to_float32(h.x); }
inline __half __float2half_rn(float f) { return __half(__half_raw{mirage_emu::float_to_half_bits(f)}); }
inline __half __float2half(float f) { return __float2half_rn(f); }
inline __half2 __floats2half2_rn(float a, float b) { return __half2{__float2half_rn(a), __float2half_rn(b)}; }

#endif  // MIRAGE_EMU_CUDA_FP16_H
