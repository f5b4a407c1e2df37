// What every part of a tiled-attention block knows: the call, its sequence and the block's place
// in it. Shared by the mainloop (tiled_attention.hpp) and each arch's tiles.
#pragma once

#include "kernel_common.hpp"

namespace {

struct TileContext {
  const ac_attention_params& p;
  Sequence seq;
  int32_t kh, group, rows_total, row0, k_begin, k_end;
  int32_t page_shift;  // log2 of the block size when it is a power of two, else -1
};

}  // namespace
