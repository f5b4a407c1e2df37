// fp8 e4m3 codes to and from the kernels' types, one definition for the GPU kernels (both
// vendors) and the host (the CPU reference, and the test that checks every code of both
// formats: tests/cpp/fp8_convert_test.cpp): integer and float operations only.
//
// The two e4m3 formats the frameworks have:
//   e4m3fn   (OCP; NVIDIA, gfx950; torch.float8_e4m3fn):   bias 7, S.1111.111 is NaN, largest 448;
//   e4m3fnuz (gfx942; torch.float8_e4m3fnuz): bias 8, 1.0000.000 is the only NaN, largest 240.
// Both have subnormals (exponent field 0): m 2^(1 - bias) / 8.
//
// Decoding goes through f16, which holds every e4m3 value exactly: a code's sign and 7
// exponent-mantissa bits placed in an f16 (bias 15) are its value times 2^-8 (fn) or 2^-7 (fnuz),
// subnormals included (an fp8 subnormal lands on an f16 subnormal); one multiply by 2^8 or 2^7
// (exact: a power of two, the product representable) gives the value. NaN codes are made f16
// NaN with a mask, not a branch.
#pragma once

#include <stdint.h>

#if defined(__CUDACC__)
#define AC_FP8 __host__ __device__ inline
#elif defined(__HIP__)
#define AC_FP8 __attribute__((host)) __attribute__((device)) inline
#else
#define AC_FP8 inline
#endif

namespace ac_fp8 {

// Two codes (bits 0..7 and 8..15 of `two`) into the high byte of each 16-bit lane.
AC_FP8 uint32_t spread(uint32_t two) { return ((two & 0xffu) << 8) | ((two & 0xff00u) << 16); }

// The f16 pair whose values are the two spread codes' values times 2^-8 (fn) or 2^-7 (fnuz),
// exactly; NaN codes give f16 NaN (fn: exponent-mantissa all ones; fnuz: the code 0x80).
AC_FP8 uint32_t scaled_f16x2(uint32_t t, bool fnuz) {
  const uint32_t placed = (t & 0x80008000u) | ((t >> 1) & 0x3f803f80u);
  // Lanes whose code is a NaN, as bit 15 of the lane: fn, exponent-mantissa 0x7f (adding one
  // carries into bit 15 for that value alone); fnuz, the lane is 0x8000 (zero after the flip).
  const uint32_t all_ones = ((t & 0x7f007f00u) + 0x01000100u) & 0x80008000u;
  const uint32_t z = t ^ 0x80008000u;
  const uint32_t zero = ~(((z & 0x7fff7fffu) + 0x7fff7fffu) | z) & 0x80008000u;
  const uint32_t nan = fnuz ? zero : all_ones;
  return placed | (nan >> 15) * 0x7e00u;  // exponent all ones, mantissa non-zero: NaN
}

// What the scaled f16 values are multiplied by to become the codes' values.
AC_FP8 float unscale(bool fnuz) { return fnuz ? 128.f : 256.f; }
AC_FP8 uint32_t unscale_f16x2(bool fnuz) { return fnuz ? 0x58005800u : 0x5c005c00u; }  // (128, 128), (256, 256)

// One code's value as a float, exactly (the host's reference path and the generic kernel's):
// sign, exponent and mantissa read directly.
AC_FP8 float to_float(uint32_t code, bool fnuz) {
  const uint32_t c = code & 0xffu, e = (c >> 3) & 0xfu, m = c & 7u;
  const int bias = fnuz ? 8 : 7;
  if (fnuz ? c == 0x80u : (c & 0x7fu) == 0x7fu) return __builtin_nanf("");
  float mag = e == 0 ? static_cast<float>(m) / 8.f : 1.f + static_cast<float>(m) / 8.f;
  int shift = (e == 0 ? 1 : static_cast<int>(e)) - bias;  // -7..8
  for (; shift > 0; --shift) mag *= 2.f;
  for (; shift < 0; ++shift) mag *= 0.5f;
  return (c & 0x80u) ? -mag : mag;
}

// A float to the nearest code (ties to even), saturating at the largest finite value (as AITer
// clamps before it converts); NaN to the format's NaN.
AC_FP8 uint32_t from_float(float f, bool fnuz) {
  union {
    float f;
    uint32_t u;
  } v{f};
  const uint32_t sign = (v.u >> 24) & 0x80u, a = v.u & 0x7fffffffu;
  if (a > 0x7f800000u) return fnuz ? 0x80u : 0x7fu;
  const int bias = fnuz ? 8 : 7;
  const uint32_t largest = fnuz ? 0x7fu : 0x7eu;
  const int e = static_cast<int>(a >> 23) - 127;
  uint32_t code;
  if (e < 1 - bias) {
    // Subnormal codes: |f| 2^(bias + 2) rounded to an integer (8 is the smallest normal, 0x08).
    const uint32_t mant = a >= 0x00800000u ? (a & 0x7fffffu) | 0x800000u : a & 0x7fffffu;
    const int shift = (a >= 0x00800000u ? 21 - bias - e : 21 - bias + 126);
    if (shift > 31) {
      code = 0;
    } else {
      const uint32_t q = mant >> shift, rest = mant & ((1u << shift) - 1u), half = 1u << (shift - 1);
      code = q + ((rest > half || (rest == half && (q & 1u))) ? 1u : 0u);
    }
  } else {
    const uint32_t r = a + 0x7ffffu + ((a >> 20) & 1u);  // the 20 dropped mantissa bits, to even
    const int exponent = static_cast<int>(r >> 23) - 127 + bias;
    code = exponent > 15 ? largest : (static_cast<uint32_t>(exponent) << 3) | ((r >> 20) & 7u);
    if (code > largest) code = largest;
  }
  if (code == 0) return fnuz ? 0u : sign;  // fnuz has no negative zero (0x80 is its NaN)
  return sign | code;
}

}  // namespace ac_fp8
