// What every part of a tiled-attention block knows: the call, its sequence and the block's place
// in it. Shared by the mainloop (tiled_attention.hpp) and each arch's tiles.
#pragma once

#include "kernel_common.hpp"
#include "fast_divide.hpp"
#include "kv_rows.hpp"

namespace {

struct TileContext {
  const ac_attention_params& p;
  Sequence seq;
  int32_t kh, group, rows_total, row0, k_begin, k_end;
  int32_t page_shift;  // page_shift_of(p)

  // The sequence's keys in the block's cache layout (kv_rows.hpp).
  template <KvLayout L>
  AC_MEMBER KvRows<L> rows() const { return {p, seq.table_row, seq.k_start, page_shift}; }
};

}  // namespace
