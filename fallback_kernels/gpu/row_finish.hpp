// A row's end, for every kernel on both vendors: the sink entered once (the reason this project
// exists) and the split-KV partial results; row_store.hpp stores the finished row. Model:
// flash_attn/cute/softmax.py (Softmax.finalize with sink_val). Also built for the host model
// (AC_HOST_MODEL: tests/cpp/mfma_model_test.cpp runs it).
#pragma once

#include "kernel_params.h"
#include "portability.hpp"

namespace {

// The online softmax's running max m and sum l over a row's keys (in base 2 or natural-log
// units: kLog2), and the head's sink, one more logit with a zero value vector, never masked
// (natural-log units as given, or already times log2(e) with kLog2): the output is the
// accumulator times `scale` (which also carries `factor`, the descale and output_scale), its
// log-sum-exp `lse` (natural-log units). A row with no weight (no key, no sink) is 0 with LSE
// -inf; a NaN among its scores or values stays NaN (ac_weighted).
struct RowFinish {
  float scale, lse;
};
template <bool kLog2>
AC_INLINE AC_DEVICE RowFinish finish_row(float m, float l, float sink, float factor) {
  constexpr float kLn2 = 0.6931471805599453f;
  const float mf = fmaxf(m, sink);
  const float keep = mf == -AC_INFINITY ? 0.f : kLog2 ? ac_exp2(m - mf) : ac_exp(m - mf);
  const float lf = l * keep + (sink == -AC_INFINITY ? 0.f : kLog2 ? ac_exp2(sink - mf) : ac_exp(sink - mf));
  const bool weighted = ac_weighted(lf);
  return {weighted ? keep * factor / lf : 0.f,
          !weighted ? -AC_INFINITY : kLog2 ? (mf + ac_log2(lf)) * kLn2 : mf + ac_log(lf)};
}

// Split-KV partial results (kernel_params.h): the row of (split, token, head h) in partial_out
// (`width` floats: the head dim of v) and its (max, sum) in partial_ml, which the merge reads.
AC_INLINE AC_DEVICE float* partial_out_row(const ac_attention_params& p, int32_t split, int32_t token, int32_t h, int32_t width) {
  return p.partial_out + ((static_cast<int64_t>(split) * p.total_q + token) * p.hq + h) * width;
}
AC_INLINE AC_DEVICE float* partial_ml_row(const ac_attention_params& p, int32_t split, int32_t token, int32_t h) {
  return p.partial_ml + ((static_cast<int64_t>(split) * p.total_q + token) * p.hq + h) * 2;
}
// The (max, sum) of a split's row: the max in natural-log units (-inf kept).
template <bool kLog2>
AC_INLINE AC_DEVICE void store_partial_ml(const ac_attention_params& p, int32_t split, int32_t token, int32_t h, float m, float l) {
  constexpr float kLn2 = 0.6931471805599453f;
  float* ml = partial_ml_row(p, split, token, h);
  ml[0] = kLog2 && m != -AC_INFINITY ? m * kLn2 : m;
  ml[1] = l;
}

}  // namespace
