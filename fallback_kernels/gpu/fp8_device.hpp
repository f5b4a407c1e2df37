// fp8 e4m3 in the GPU kernels: codes to exact f16, bf16 or f32 values four at a time, one code
// to a float, and floats to codes. The arithmetic is fp8_convert.hpp's (checked on the host for
// every code of both formats); NVIDIA's conversion instruction (sm_89 and later, e4m3fn only)
// stands in for it where it computes the same values.
#pragma once

#include "fp8_convert.hpp"
#include "kernel_params.h"
#include "portability.hpp"

namespace {

AC_DEVICE bool ac_is_fnuz(int32_t type) { return type == AC_DTYPE_E4M3FNUZ; }

// Two f16 times two f16, rounded (exact here: one factor is a power of two and the products are
// representable); f16 subnormal inputs are kept, as both vendors' f16 arithmetic does by default.
AC_DEVICE uint32_t ac_f16x2_mul(uint32_t a, uint32_t b) {
#if defined(AC_NVIDIA)
  uint32_t d;
  asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
#else
  typedef _Float16 h2 __attribute__((ext_vector_type(2)));
  return __builtin_bit_cast(uint32_t, __builtin_bit_cast(h2, a) * __builtin_bit_cast(h2, b));
#endif
}

// Codes 2i and 2i + 1 (bits 16i..16i+15 of x) as an exact f16 pair.
AC_DEVICE uint32_t ac_e4m3x2_to_f16x2(uint32_t two, bool fnuz) {
#if defined(AC_NVIDIA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  if (!fnuz) {
    uint32_t d;
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(d) : "h"(static_cast<uint16_t>(two & 0xffffu)));
    return d;
  }
#endif
  return ac_f16x2_mul(ac_fp8::scaled_f16x2(ac_fp8::spread(two), fnuz), ac_fp8::unscale_f16x2(fnuz));
}

// gfx942 (e4m3fnuz) and gfx950 (OCP's e4m3fn) decode their own format in hardware (AMD's CDNA3
// and CDNA4 ISA guides, v_cvt_pk_f32_fp8: the two codes of a word's low or high half to f32,
// exactly, a NaN code to NaN); the other format, and gfx90a, keep the portable decode. An f32
// pair becomes f16 (v_cvt_pkrtz_f16_f32: every e4m3 value is an f16 value, so the rounding never
// acts) or bf16 (the high halves: e4m3 values have at most four significant bits).
#if defined(__gfx942__)
#define AC_AMD_FP8_HW 1
#define AC_AMD_FP8_HW_FNUZ true
#elif defined(__gfx950__)
#define AC_AMD_FP8_HW 1
#define AC_AMD_FP8_HW_FNUZ false
#endif
#if defined(AC_AMD_FP8_HW)
typedef float ac_f32x2_t __attribute__((ext_vector_type(2)));
// Codes 2 high, 2 high + 1 of x (high: bytes 2, 3; else bytes 0, 1) as two exact floats.
template <bool kHigh> AC_DEVICE ac_f32x2_t ac_amd_e4m3x2_to_f32x2(uint32_t x) {
  return __builtin_amdgcn_cvt_pk_f32_fp8(static_cast<int>(x), kHigh);
}
AC_DEVICE uint32_t ac_amd_f32x2_to_f16x2(ac_f32x2_t f) {
  return __builtin_bit_cast(uint32_t, __builtin_amdgcn_cvt_pkrtz(f.x, f.y));
}
AC_DEVICE uint32_t ac_amd_f32x2_to_bf16x2(ac_f32x2_t f) {
  return (__builtin_bit_cast(uint32_t, f.x) >> 16) | (__builtin_bit_cast(uint32_t, f.y) & 0xffff0000u);
}
#endif

// An f16 pair as a bf16 pair: through f32 (exact), whose high halves are the bf16 values (exact
// for e4m3's values, which have at most four significant bits; NaN stays NaN).
AC_DEVICE uint32_t ac_f16x2_to_bf16x2(uint32_t h) {
  const uint32_t lo = ac_float_to_bits(ac_half_to_float(static_cast<uint16_t>(h & 0xffffu)));
  const uint32_t hi = ac_float_to_bits(ac_half_to_float(static_cast<uint16_t>(h >> 16)));
  return (lo >> 16) | (hi & 0xffff0000u);
}

// Four codes (the bytes of x, code 0 lowest) as four 16-bit values of the tile type T: codes 0, 1
// in the first word, 2, 3 in the second.
template <typename T> struct E4m3Tiles;
template <> struct E4m3Tiles<F16> {
  AC_DEVICE void convert(uint32_t x, bool fnuz, uint32_t& w0, uint32_t& w1) {
#if defined(AC_AMD_FP8_HW)
    if (fnuz == AC_AMD_FP8_HW_FNUZ) {
      w0 = ac_amd_f32x2_to_f16x2(ac_amd_e4m3x2_to_f32x2<false>(x));
      w1 = ac_amd_f32x2_to_f16x2(ac_amd_e4m3x2_to_f32x2<true>(x));
      return;
    }
#endif
    w0 = ac_e4m3x2_to_f16x2(x, fnuz);
    w1 = ac_e4m3x2_to_f16x2(x >> 16, fnuz);
  }
};
template <> struct E4m3Tiles<BF16> {
  AC_DEVICE void convert(uint32_t x, bool fnuz, uint32_t& w0, uint32_t& w1) {
#if defined(AC_AMD_FP8_HW)
    if (fnuz == AC_AMD_FP8_HW_FNUZ) {
      w0 = ac_amd_f32x2_to_bf16x2(ac_amd_e4m3x2_to_f32x2<false>(x));
      w1 = ac_amd_f32x2_to_bf16x2(ac_amd_e4m3x2_to_f32x2<true>(x));
      return;
    }
#endif
    w0 = ac_f16x2_to_bf16x2(ac_e4m3x2_to_f16x2(x, fnuz));
    w1 = ac_f16x2_to_bf16x2(ac_e4m3x2_to_f16x2(x >> 16, fnuz));
  }
};
template <typename T>
AC_DEVICE void ac_e4m3x4_to_16bit(uint32_t x, bool fnuz, uint32_t& w0, uint32_t& w1) {
  E4m3Tiles<T>{}.convert(x, fnuz, w0, w1);
}

// Two floats as an f16 pair, rounded to nearest even.
AC_DEVICE uint32_t ac_f32x2_to_f16x2(float lo, float hi) {
#if defined(AC_NVIDIA)
  uint32_t r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
#else
  return static_cast<uint32_t>(__builtin_bit_cast(uint16_t, static_cast<_Float16>(lo))) |
         static_cast<uint32_t>(__builtin_bit_cast(uint16_t, static_cast<_Float16>(hi))) << 16;
#endif
}

// Two floats as a bf16 pair, rounded to nearest even.
AC_DEVICE uint32_t ac_f32x2_to_bf16x2(float lo, float hi) {
#if defined(AC_NVIDIA)
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
#else
  return static_cast<uint32_t>(ac_float_to_bf16(lo)) | static_cast<uint32_t>(ac_float_to_bf16(hi)) << 16;
#endif
}

// Decode tiles over an fp8 cache are f16 whatever the queries' 16-bit type: the cache's codes
// become f16 in one instruction per pair (NVIDIA) where bf16 would take three more, and decode
// is bound by that arithmetic once the bytes are halved. bf16 queries become f16 once per block
// (exact for the values f16 holds, |q| from 2^-14 to 65504; below, an error under 2^-24), divided
// by a power of two where the block's largest would not fit: q_unscale() of the block's largest
// magnitude is that power (1 for any realistic query); the scores are multiplied back by it.
AC_DEVICE float ac_q_unscale(float max_abs) {
  const uint32_t bits = ac_float_to_bits(max_abs);
  const int e = static_cast<int>((bits >> 23) & 0xffu) - 127;  // floor(log2(max_abs)); 128: inf or NaN
  if (e < 15 || e >= 128) return 1.f;
  return ac_bits_to_float(static_cast<uint32_t>(e - 14 + 127) << 23);  // 2^(e - 14): the largest below 2^15
}
// A bf16 pair as an f16 pair, divided by `unscale` (a power of two).
AC_DEVICE uint32_t ac_bf16x2_to_f16x2(uint32_t w, float inv_unscale) {
  return ac_f32x2_to_f16x2(ac_bf16_to_float(static_cast<uint16_t>(w & 0xffffu)) * inv_unscale,
                           ac_bf16_to_float(static_cast<uint16_t>(w >> 16)) * inv_unscale);
}
// The largest magnitude of a bf16 pair (NaN-free: a NaN query gives NaN scores anyway).
AC_DEVICE float ac_bf16x2_max_abs(uint32_t w) {
  return fmaxf(ac_bits_to_float((w << 16) & 0x7fffffffu), ac_bits_to_float(w & 0x7fff0000u));
}

// Four codes as four floats, exactly.
AC_DEVICE void ac_e4m3x4_to_f32(uint32_t x, bool fnuz, float* out) {
  const uint32_t a = ac_e4m3x2_to_f16x2(x, fnuz), b = ac_e4m3x2_to_f16x2(x >> 16, fnuz);
  out[0] = ac_half_to_float(static_cast<uint16_t>(a & 0xffffu));
  out[1] = ac_half_to_float(static_cast<uint16_t>(a >> 16));
  out[2] = ac_half_to_float(static_cast<uint16_t>(b & 0xffffu));
  out[3] = ac_half_to_float(static_cast<uint16_t>(b >> 16));
}

// One code as a float, exactly.
AC_DEVICE float ac_e4m3_to_float(uint8_t code, bool fnuz) {
  return ac_half_to_float(static_cast<uint16_t>(ac_e4m3x2_to_f16x2(code, fnuz) & 0xffffu));
}

// Four floats to four codes in a word (code 0 lowest), to nearest, saturating.
AC_DEVICE uint32_t ac_f32x4_to_e4m3(float a, float b, float c, float d, bool fnuz) {
  return ac_fp8::from_float(a, fnuz) | ac_fp8::from_float(b, fnuz) << 8 | ac_fp8::from_float(c, fnuz) << 16 |
         ac_fp8::from_float(d, fnuz) << 24;
}

}  // namespace
