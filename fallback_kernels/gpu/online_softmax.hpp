// The online softmax's per-tile step of a row, for every tiled kernel on both vendors: how its
// reference max moves. Also built for the host model (AC_HOST_MODEL: kernel_blocks_test.cpp
// checks it against the softmax in double, mfma_model_test.cpp runs it in the MFMA model).
//
// A row keeps a reference max m (log2 units) and accumulates exp2(s - m) for its scores s. With
// the slack (kSlack, NVIDIA's tiles: their kSkipsRescale) the reference moves to a tile's max only
// when that max passes it by more than kRescaleSlack: the probabilities are then at most
// 2^kRescaleSlack, and the row's output and sum keep their scale, so the rescale of the output (a
// multiply per accumulator) runs only in the tiles where some row of the warp moved, mostly the
// first. Every use of m after the loop (the combination across warps and splits, the sink) takes
// it as the reference it is, not as the true max, so the result is the same but for rounding.
// (FlashAttention 4's conditional rescaling; its threshold is 8 too.) Without the slack (AMD's
// tiles, tiles_amd.hpp says why) m is the running max and every tile rescales.
#pragma once

#include "portability.hpp"

namespace {

// Probabilities up to 2^8 fit every tile type the products read (f16's largest is 65504), and
// sums of them fit fp32 for any number of keys a call can have.
constexpr float kRescaleSlack = 8.f;

struct MaxStep {
  float m;     // the row's reference max after the tile
  float corr;  // what the row's output and sum are multiplied by: 1 unless it moved
  bool moved;
};
// A row with reference m_run meets a tile whose max (log2 units, -inf when every key of the row
// is masked, NaN when a score is) is m_tile. A row with nothing valid yet (m_run -inf) moves to
// the first finite max with corr 0 (its output and sum are 0 anyway); NaN never moves it (a NaN
// score still reaches the output through its probability).
template <bool kSlack = true>
AC_INLINE AC_DEVICE MaxStep reference_max_step(float m_run, float m_tile) {
  if constexpr (!kSlack) {  // the running max itself, and a rescale in every tile
    const float m = fmaxf(m_run, m_tile);
    return {m, ac_exp2(m_run - (m == -AC_INFINITY ? 0.f : m)), true};
  }
  const bool move = m_tile > m_run + kRescaleSlack;
  return {move ? m_tile : m_run, move ? ac_exp2(m_run - m_tile) : 1.f, move};
}

// What the row's scores are taken from before exp2: its reference max, 0 while it has none (its
// scores are all -inf then, and -inf - (-inf) would be NaN).
AC_INLINE AC_DEVICE float exp_base(float m_run) { return m_run == -AC_INFINITY ? 0.f : m_run; }

}  // namespace
