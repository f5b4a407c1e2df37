// A finished output row stored in every output type, for every kernel on both vendors: 16-bit
// values two per word, or fp8 codes four per word, several words in one store. Model: FlashAttention's
// hopper/epilogue_fwd.hpp.
#pragma once

#include "kernel_common.hpp"

namespace {

// Where out's element (token, head h, column c) is.
AC_INLINE AC_DEVICE int64_t out_index(const ac_attention_params& p, int32_t token, int32_t h, int32_t c) {
  return token * p.out_tok + h * p.out_head + c;
}

// N consecutive outputs (1, 4 or 8) of a row, each times `scale`, stored at once: in T (bf16 or f16,
// rounded to nearest even, two per word), or, for the fp8-cache kernels (kAnyOut), in the call's
// out type: a 16-bit one, or fp8 codes (to the nearest, saturated: four per word).
template <typename T, bool kAnyOut, int N>
AC_INLINE AC_DEVICE void store_out(const ac_attention_params& p, int64_t at, const float* x, float scale) {
  static_assert(N == 1 || N == 4 || N == 8, "1, 4 or 8 outputs at a time");
  if constexpr (N == 1) {  // one element (RDNA3's WMMA rows alternate between the wave's halves)
    if constexpr (kAnyOut) {
      if (p.out_type == AC_DTYPE_E4M3FN || p.out_type == AC_DTYPE_E4M3FNUZ) {
        static_cast<uint8_t*>(p.out)[at] = static_cast<uint8_t>(ac_f32x4_to_e4m3(x[0] * scale, 0.f, 0.f, 0.f, ac_is_fnuz(p.out_type)));
        return;
      }
    }
    const bool bf16 = kAnyOut ? p.out_type == AC_DTYPE_BF16 : ac_same<T, BF16>::value;
    const uint32_t w = bf16 ? ac_f32x2_to_bf16x2(x[0] * scale, 0.f) : ac_f32x2_to_f16x2(x[0] * scale, 0.f);
    static_cast<uint16_t*>(p.out)[at] = static_cast<uint16_t>(w);
    return;
  } else {
    using Words16 = typename ac_words<N / 2>::type;  // N 16-bit values
    if constexpr (kAnyOut) {
      if (p.out_type == AC_DTYPE_E4M3FN || p.out_type == AC_DTYPE_E4M3FNUZ) {
        const bool fnuz = ac_is_fnuz(p.out_type);
        typename ac_words<N / 4>::type codes;
        uint32_t* w = reinterpret_cast<uint32_t*>(&codes);
#pragma unroll
        for (int i = 0; i < N / 4; ++i)
          w[i] = ac_f32x4_to_e4m3(x[4 * i] * scale, x[4 * i + 1] * scale, x[4 * i + 2] * scale, x[4 * i + 3] * scale, fnuz);
        *reinterpret_cast<decltype(codes)*>(static_cast<uint8_t*>(p.out) + at) = codes;
        return;
      }
    }
    const bool bf16 = kAnyOut ? p.out_type == AC_DTYPE_BF16 : ac_same<T, BF16>::value;
    Words16 words;
    uint32_t* w = reinterpret_cast<uint32_t*>(&words);
#pragma unroll
    for (int i = 0; i < N / 2; ++i)
      w[i] = bf16 ? ac_f32x2_to_bf16x2(x[2 * i] * scale, x[2 * i + 1] * scale)
                  : ac_f32x2_to_f16x2(x[2 * i] * scale, x[2 * i + 1] * scale);
    *reinterpret_cast<Words16*>(static_cast<uint16_t*>(p.out) + at) = words;
  }
}

}  // namespace
