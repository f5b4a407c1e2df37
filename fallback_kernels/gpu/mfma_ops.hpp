// The AMD layer of the tiled attention kernels: the matrix instructions on 16-bit operands with
// fp32 accumulators, bf16 and f16 (gfx90a, gfx942, gfx950: v_mfma_f32_32x32x8 (gfx950: _32x32x16) and _16x16x16;
// RDNA3 gfx11 and RDNA4 gfx1200/gfx1201: v_wmma_f32_16x16x16 on 32-lane waves; gfx1250:
// v_wmma_f32_16x16x32 on 32-lane waves),
// the packing of fp32 scores into 16-bit operands, and the few other operations the tiles need.
// Which lane holds what is in fragment_layouts.hpp; the tiles (tiles_amd.hpp) are written over
// that. Not run on an AMD GPU here: checked by reading the code objects
// (tests/cpp/amd_code_objects_test.cpp) and by the host model of the layouts (tests/cpp/mfma_model_test.cpp).
#pragma once

#include "fragment_layouts.hpp"
#include "kernel_params.h"
#include "portability.hpp"

#if defined(AC_AMD) && (defined(__gfx90a__) || defined(__gfx942__) || defined(__gfx950__) || defined(__GFX11__) || \
                         defined(__gfx1200__) || defined(__gfx1201__) || defined(__gfx1250__))
#define AC_HAS_MATRIX_OPS 1
#if defined(__gfx1250__)
#define AC_HAS_WMMA 1
namespace { using AmdLayoutWmma = ac_layout::WmmaGfx1250; }
#elif defined(__GFX11__)
#define AC_HAS_WMMA 1
namespace { using AmdLayoutWmma = ac_layout::WmmaRdna3; }
#elif defined(__GFX12__)
#define AC_HAS_WMMA 1
namespace { using AmdLayoutWmma = ac_layout::WmmaRdna4; }
#else
#define AC_HAS_MFMA 1
#endif

typedef short ac_i16x4 __attribute__((ext_vector_type(4)));
typedef _Float16 ac_h16x4 __attribute__((ext_vector_type(4)));
typedef short ac_i16x8 __attribute__((ext_vector_type(8)));
typedef __bf16 ac_b16x8 __attribute__((ext_vector_type(8)));
typedef _Float16 ac_h16x8 __attribute__((ext_vector_type(8)));
typedef short ac_i16x16 __attribute__((ext_vector_type(16)));
typedef _Float16 ac_h16x16 __attribute__((ext_vector_type(16)));
typedef __bf16 ac_b16x16 __attribute__((ext_vector_type(16)));
typedef float ac_f32x16v __attribute__((ext_vector_type(16)));
typedef float ac_f32x8v __attribute__((ext_vector_type(8)));
typedef float ac_f32x4v __attribute__((ext_vector_type(4)));

// The layout of a tile of N query rows on this arch: MFMA N x N on CDNA (gfx950's 32 x 32 the
// double-K form: half the instructions per product), WMMA 16 x 16 on RDNA and gfx1250.
#if defined(__gfx950__)
template <int N> struct AmdLayoutOf { using type = ac_layout::Mfma<N>; };
template <> struct AmdLayoutOf<32> { using type = ac_layout::Mfma32K16; };
template <int N> using AmdLayout = typename AmdLayoutOf<N>::type;
#elif defined(AC_HAS_MFMA)
template <int N> using AmdLayout = ac_layout::Mfma<N>;
#else
template <int N> using AmdLayout = AmdLayoutWmma;
#endif

// kE 16-bit values (a row's K slice of an A operand, a column's of B), two per register, element
// 0 in the low half of w[0]. WMMA's 8 or 16 values are read as 16-byte vectors (the launcher
// requires 16-byte rows; LDS rows are padded by 16 bytes), gfx1250's as two (elem_run).
template <int kE> struct alignas(kE >= 8 ? 16 : 4) AmdFrag { uint32_t w[kE / 2]; };

// The accumulator of one matrix instruction: N x N fp32 over the wave, kRegs per lane (a plain
// array, so that elements can be named; bit-cast to the builtins' vector type around each one).
template <class L> struct AmdAcc { float v[L::kRegs]; };

// mma(d, a, b): d += a b with layout L's operands (fragment_layouts.hpp); pack2: two floats to
// the type's 16-bit operand, rounded to nearest even.
template <typename T> struct AmdPack;
template <> struct AmdPack<BF16> {
  AC_DEVICE uint32_t pack2(float lo, float hi) {
    return static_cast<uint32_t>(ac_float_to_bf16(lo)) | static_cast<uint32_t>(ac_float_to_bf16(hi)) << 16;
  }
};
template <> struct AmdPack<F16> {
  AC_DEVICE uint32_t pack2(float lo, float hi) {
    return static_cast<uint32_t>(__builtin_bit_cast(uint16_t, static_cast<_Float16>(lo))) |
           static_cast<uint32_t>(__builtin_bit_cast(uint16_t, static_cast<_Float16>(hi))) << 16;
  }
};
template <typename T, class L> struct AmdMatrixOps : AmdPack<T> {
  using Frag = AmdFrag<L::kElems>;
  AC_DEVICE void mma(AmdAcc<L>& d, const Frag& a, const Frag& b) {
    constexpr bool bf = ac_same<T, BF16>::value;
#if defined(AC_HAS_MFMA)
#if defined(__gfx950__)
    if constexpr (L::kElems == 8) {  // v_mfma_f32_32x32x16
      const ac_f32x16v c = __builtin_bit_cast(ac_f32x16v, d);
      if constexpr (bf)
        d = __builtin_bit_cast(AmdAcc<L>, __builtin_amdgcn_mfma_f32_32x32x16_bf16(__builtin_bit_cast(ac_b16x8, a),
                                                                                __builtin_bit_cast(ac_b16x8, b), c, 0, 0, 0));
      else
        d = __builtin_bit_cast(AmdAcc<L>, __builtin_amdgcn_mfma_f32_32x32x16_f16(__builtin_bit_cast(ac_h16x8, a),
                                                                               __builtin_bit_cast(ac_h16x8, b), c, 0, 0, 0));
    } else
#endif
    if constexpr (L::kN == 32) {
      const ac_f32x16v c = __builtin_bit_cast(ac_f32x16v, d);
      if constexpr (bf)
        d = __builtin_bit_cast(AmdAcc<L>, __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(__builtin_bit_cast(ac_i16x4, a),
                                                                                 __builtin_bit_cast(ac_i16x4, b), c, 0, 0, 0));
      else
        d = __builtin_bit_cast(AmdAcc<L>, __builtin_amdgcn_mfma_f32_32x32x8f16(__builtin_bit_cast(ac_h16x4, a),
                                                                             __builtin_bit_cast(ac_h16x4, b), c, 0, 0, 0));
    } else {
      const ac_f32x4v c = __builtin_bit_cast(ac_f32x4v, d);
      if constexpr (bf)
        d = __builtin_bit_cast(AmdAcc<L>, __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(__builtin_bit_cast(ac_i16x4, a),
                                                                                  __builtin_bit_cast(ac_i16x4, b), c, 0, 0, 0));
      else
        d = __builtin_bit_cast(AmdAcc<L>, __builtin_amdgcn_mfma_f32_16x16x16f16(__builtin_bit_cast(ac_h16x4, a),
                                                                              __builtin_bit_cast(ac_h16x4, b), c, 0, 0, 0));
    }
#elif defined(__gfx1250__)
    const ac_f32x8v c = __builtin_bit_cast(ac_f32x8v, d);  // (neg_a, A, neg_b, B, c_mod, C, reuse_a, reuse_b)
    if constexpr (bf)
      d = __builtin_bit_cast(AmdAcc<L>, __builtin_amdgcn_wmma_f32_16x16x32_bf16(false, __builtin_bit_cast(ac_b16x16, a), false,
                                                                              __builtin_bit_cast(ac_b16x16, b), 0, c, false, false));
    else
      d = __builtin_bit_cast(AmdAcc<L>, __builtin_amdgcn_wmma_f32_16x16x32_f16(false, __builtin_bit_cast(ac_h16x16, a), false,
                                                                             __builtin_bit_cast(ac_h16x16, b), 0, c, false, false));
#elif defined(__GFX11__)
    const ac_f32x8v c = __builtin_bit_cast(ac_f32x8v, d);
    if constexpr (bf)
      d = __builtin_bit_cast(AmdAcc<L>, __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32(__builtin_bit_cast(ac_i16x16, a),
                                                                                  __builtin_bit_cast(ac_i16x16, b), c));
    else
      d = __builtin_bit_cast(AmdAcc<L>, __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(__builtin_bit_cast(ac_h16x16, a),
                                                                                 __builtin_bit_cast(ac_h16x16, b), c));
#else
    const ac_f32x8v c = __builtin_bit_cast(ac_f32x8v, d);
    if constexpr (bf)
      d = __builtin_bit_cast(AmdAcc<L>, __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32_gfx12(__builtin_bit_cast(ac_i16x8, a),
                                                                                        __builtin_bit_cast(ac_i16x8, b), c));
    else
      d = __builtin_bit_cast(AmdAcc<L>, __builtin_amdgcn_wmma_f32_16x16x16_f16_w32_gfx12(__builtin_bit_cast(ac_h16x8, a),
                                                                                       __builtin_bit_cast(ac_h16x8, b), c));
#endif
  }
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
#define AC_HAS_MATRIX_OPS 0  // an AMD arch without matrix tiles here: the direct-load kernels only
#endif
