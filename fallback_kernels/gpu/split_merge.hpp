// Split-KV partial results (row_finish.hpp: partial_out, partial_ml) combined into a row's output
// with the sink entered once: by the merge kernel (attention_kernels.hip, merge_block) and by the
// last split block of a tiled decode, which folds the merge in (tiled_attention.hpp). The scratch
// is read through ac_load_l2, since the fold reads what other blocks of its own grid wrote.
#pragma once

#include "row_finish.hpp"

namespace {

// Rows one split further in the scratch.
AC_INLINE AC_DEVICE int64_t split_stride_rows(const ac_attention_params& p) { return static_cast<int64_t>(p.total_q) * p.hq; }

// One row's split weights, by the lanes of one warp (lane i reads the (max, sum) of splits i,
// i + warp size, ...): weight[sp] = e^(m_sp - m) x the row's finish scale (the sink entered);
// returns the row's log-sum-exp, in every lane. `weight` is shared memory, read after a barrier.
AC_INLINE AC_DEVICE float split_weights(const ac_attention_params& p, int32_t token, int32_t h, int splits, float sink, int lane,
                                        float* weight) {
  constexpr int kPerLane = AC_MAX_SPLITS / AC_WARP_SIZE + 1;
  float ms[kPerLane], ls[kPerLane];
  float m = -AC_INFINITY;
  const ac_f32x2* ml = reinterpret_cast<const ac_f32x2*>(partial_ml_row(p, 0, token, h));
  const int64_t stride = split_stride_rows(p);
#pragma unroll
  for (int i = 0; i * AC_WARP_SIZE < AC_MAX_SPLITS; ++i) {
    const int sp = lane + i * AC_WARP_SIZE;
    const ac_f32x2 v = sp < splits ? ac_load_l2(ml + sp * stride) : ac_f32x2{-AC_INFINITY, 0.f};
    ms[i] = v.x, ls[i] = v.y;
    m = m > ms[i] ? m : ms[i];
  }
#pragma unroll
  for (int mask = AC_WARP_SIZE / 2; mask > 0; mask /= 2) {
    const float other = ac_shfl_xor(m, mask);
    m = m > other ? m : other;
  }
  float l = 0.f;
#pragma unroll
  for (int i = 0; i * AC_WARP_SIZE < AC_MAX_SPLITS; ++i) {
    ms[i] = ms[i] == -AC_INFINITY ? 0.f : ac_exp(ms[i] - m);  // now the split's weight
    l += ls[i] * ms[i];
  }
#pragma unroll
  for (int mask = AC_WARP_SIZE / 2; mask > 0; mask /= 2) l += ac_shfl_xor(l, mask);
  const RowFinish fin = finish_row<false>(m, l, sink, 1.f);
#pragma unroll
  for (int i = 0; i * AC_WARP_SIZE < AC_MAX_SPLITS; ++i) {
    const int sp = lane + i * AC_WARP_SIZE;
    if (sp < splits) weight[sp] = ms[i] * fin.scale;
  }
  return fin.lse;
}

}  // namespace
