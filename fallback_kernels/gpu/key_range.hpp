// The keys each query row may see, and a block's share of them, for every kernel (generic,
// decode, tiled; both vendors). Query token t of a sequence is at position t + k_len - q_len (the
// queries are the sequence's last tokens) and sees keys [lo(t), hi(t)): up to itself when causal,
// window_left keys before it and window_right after it when those are set. A block of rows with
// tokens t_first..t_last loads [lo(t_first), hi(t_last)), in num_splits parts of whole tiles, and
// inside [lo(t_last), hi(t_first)) no row of it masks any key. Model: flash_attn/cute/block_info.py.
#pragma once

#include "kernel_params.h"
#include "portability.hpp"

namespace {

struct KeyRange {
  const ac_attention_params& p;
  int32_t q_len, k_len;

  AC_INLINE AC_MEMBER int32_t lo(int32_t t) const {
    const int32_t pos = t + k_len - q_len;
    return p.window_left >= 0 && pos - p.window_left > 0 ? pos - p.window_left : 0;
  }
  AC_INLINE AC_MEMBER int32_t hi(int32_t t) const {
    const int32_t pos = t + k_len - q_len;
    int32_t hi = k_len;
    if (p.causal && pos + 1 < hi) hi = pos + 1;
    if (p.window_right >= 0 && pos + p.window_right + 1 < hi) hi = pos + p.window_right + 1;
    return hi;
  }
};

struct KeySpan {
  int32_t begin, end;  // empty when end <= begin
};

// The keys of rows t_first..t_last, part `split` of `splits` cut at whole tiles of `tile` keys
// (1 for the kernels that take keys one at a time).
AC_INLINE AC_DEVICE KeySpan block_keys(const KeyRange& r, int32_t t_first, int32_t t_last, int32_t split, int32_t splits,
                             int32_t tile) {
  const int32_t lo = r.lo(t_first), hi = r.hi(t_last) > lo ? r.hi(t_last) : lo;
  const int32_t tiles = (hi - lo + tile - 1) / tile;
  const int32_t per_split = (tiles + splits - 1) / splits;
  const int32_t begin = lo + split * per_split * tile;
  return {begin, hi < begin + per_split * tile ? hi : begin + per_split * tile};
}

// Within the block's keys (ending at `end`), those no row of t_first..t_last masks: tiles inside
// need no mask.
AC_INLINE AC_DEVICE KeySpan unmasked_keys(const KeyRange& r, int32_t t_first, int32_t t_last, int32_t end) {
  return {r.lo(t_last), r.hi(t_first) < end ? r.hi(t_first) : end};
}

}  // namespace
