// The AMD layer of the tiled attention kernels (gfx90a, gfx942, gfx950): the MFMA instructions
// on 16-bit operands with fp32 accumulators (v_mfma_f32_32x32x8 and _16x16x16, bf16 and f16),
// the packing of fp32 scores into 16-bit operands, and the few other operations the tiles need.
// Which lane holds what is in fragment_layouts.hpp; the tiles (tiles_amd.hpp) are written over
// that. Not run on an AMD GPU here: checked by reading the code objects
// (tests/cpp/amd_code_objects_test.cpp) and by the host model of the layouts (tests/cpp/mfma_model_test.cpp).
#pragma once

#include "fragment_layouts.hpp"
#include "kernel_params.h"
#include "portability.hpp"

#if defined(AC_AMD) && (defined(__gfx90a__) || defined(__gfx942__) || defined(__gfx950__))
#define AC_HAS_MATRIX_OPS 1
#define AC_HAS_MFMA 1

typedef short ac_i16x4 __attribute__((ext_vector_type(4)));
typedef _Float16 ac_h16x4 __attribute__((ext_vector_type(4)));
typedef float ac_f32x16v __attribute__((ext_vector_type(16)));
typedef float ac_f32x4v __attribute__((ext_vector_type(4)));

// Four 16-bit values (a row's K slice of an A operand, a column's of B) in two registers.
struct ac_frag16x4 {
  uint32_t lo, hi;  // elements 0, 1 in lo; 2, 3 in hi (element 0 in the low half)
};

// The accumulator of one MFMA: N x N fp32 over the wave, kRegs per lane (a plain array, so
// that elements can be named; bit-cast to the builtins' vector type around each instruction).
template <int kN> struct MfmaAcc { float v[ac_layout::Mfma<kN>::kRegs]; };

// mma<N>(d, a, b): d += a b, with the layouts of fragment_layouts.hpp's Mfma<N>. pack(): four
// floats to the type's 16-bit operand, rounded to nearest even.
template <typename T> struct MfmaOps;
template <> struct MfmaOps<BF16> {
  AC_DEVICE void mma(MfmaAcc<32>& d, ac_frag16x4 a, ac_frag16x4 b) {
    d = __builtin_bit_cast(MfmaAcc<32>, __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(
                                            __builtin_bit_cast(ac_i16x4, a), __builtin_bit_cast(ac_i16x4, b),
                                            __builtin_bit_cast(ac_f32x16v, d), 0, 0, 0));
  }
  AC_DEVICE void mma(MfmaAcc<16>& d, ac_frag16x4 a, ac_frag16x4 b) {
    d = __builtin_bit_cast(MfmaAcc<16>, __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(
                                            __builtin_bit_cast(ac_i16x4, a), __builtin_bit_cast(ac_i16x4, b),
                                            __builtin_bit_cast(ac_f32x4v, d), 0, 0, 0));
  }
  AC_DEVICE ac_frag16x4 pack(float x0, float x1, float x2, float x3) {
    return {static_cast<uint32_t>(ac_float_to_bf16(x0)) | static_cast<uint32_t>(ac_float_to_bf16(x1)) << 16,
            static_cast<uint32_t>(ac_float_to_bf16(x2)) | static_cast<uint32_t>(ac_float_to_bf16(x3)) << 16};
  }
  AC_DEVICE uint32_t pack2(float lo, float hi) {
    return static_cast<uint32_t>(ac_float_to_bf16(lo)) | static_cast<uint32_t>(ac_float_to_bf16(hi)) << 16;
  }
};
template <> struct MfmaOps<F16> {
  AC_DEVICE void mma(MfmaAcc<32>& d, ac_frag16x4 a, ac_frag16x4 b) {
    d = __builtin_bit_cast(MfmaAcc<32>, __builtin_amdgcn_mfma_f32_32x32x8f16(
                                            __builtin_bit_cast(ac_h16x4, a), __builtin_bit_cast(ac_h16x4, b),
                                            __builtin_bit_cast(ac_f32x16v, d), 0, 0, 0));
  }
  AC_DEVICE void mma(MfmaAcc<16>& d, ac_frag16x4 a, ac_frag16x4 b) {
    d = __builtin_bit_cast(MfmaAcc<16>, __builtin_amdgcn_mfma_f32_16x16x16f16(
                                            __builtin_bit_cast(ac_h16x4, a), __builtin_bit_cast(ac_h16x4, b),
                                            __builtin_bit_cast(ac_f32x4v, d), 0, 0, 0));
  }
  AC_DEVICE uint32_t pack2(float lo, float hi) {
    return static_cast<uint32_t>(__builtin_bit_cast(uint16_t, static_cast<_Float16>(lo))) |
           static_cast<uint32_t>(__builtin_bit_cast(uint16_t, static_cast<_Float16>(hi))) << 16;
  }
  AC_DEVICE ac_frag16x4 pack(float x0, float x1, float x2, float x3) { return {pack2(x0, x1), pack2(x2, x3)}; }
};

// A sink (element `index` of sinks, in its own dtype) where valid, else -inf.
AC_DEVICE float ac_load_sink_now(const void* sinks, int32_t type, int64_t index, bool valid) {
  if (!valid) return -AC_INFINITY;
  if (type == AC_DTYPE_F32) return static_cast<const float*>(sinks)[index];
  const uint16_t h = static_cast<const uint16_t*>(sinks)[index];
  return type == AC_DTYPE_F16 ? ac_half_to_float(h) : ac_bf16_to_float(h);
}

// The lane's index in its wave.
AC_DEVICE int ac_lane() { return __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u)); }

#elif defined(AC_AMD)
#define AC_HAS_MATRIX_OPS 0  // an AMD arch without MFMA
#endif
