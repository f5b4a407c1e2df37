// The paged caches' layouts as addressing: one reading of a cache's shape and strides for the
// validation, the CPU reference and the GPU kernels' arguments.
#include "aiter_compat/shim/attention_args.hpp"

namespace aiter_compat {

const char* layout_text(CacheLayout l) {
  switch (l) {
    case CacheLayout::rows: return "[num_blocks, block_size, kv_heads, head_dim]";
    case CacheLayout::vectorized_k: return "[num_blocks, kv_heads, head_dim / x, block_size, x]";
    case CacheLayout::vectorized_v: return "[num_blocks, kv_heads, block_size / x, head_dim, x]";
    case CacheLayout::dim_major_v: return "[num_blocks, kv_heads, head_dim, block_size]";
  }
  return "?";
}

CacheAddress cache_address(const TensorView& t, CacheLayout l) {
  CacheAddress a;
  const int64_t* n = t.shape;
  const int64_t* s = t.strides;
  a.blocks = n[0];
  a.block = s[0];
  switch (l) {
    case CacheLayout::rows:
      if (t.ndim == 3) {  // [slots, kv_heads, head_dim]: pages of one slot
        a.block_size = 1, a.heads = n[1], a.head_dim = n[2];
        a.head = s[1], a.dim_in = s[2];
      } else {
        a.block_size = n[1], a.heads = n[2], a.head_dim = n[3];
        a.slot_in = s[1], a.head = s[2], a.dim_in = s[3];
      }
      break;
    case CacheLayout::vectorized_k:  // channel c at [c / x, ..., c % x]
      a.heads = n[1], a.head_dim = n[2] * n[4], a.block_size = n[3];
      a.head = s[1], a.slot_in = s[3];
      a.dim_x = static_cast<int32_t>(n[4]), a.dim = s[2], a.dim_in = s[4];
      break;
    case CacheLayout::vectorized_v:  // slot i at [i / x, ..., i % x]
      a.heads = n[1], a.block_size = n[2] * n[4], a.head_dim = n[3];
      a.head = s[1], a.dim_in = s[3];
      a.slot_x = static_cast<int32_t>(n[4]), a.slot = s[2], a.slot_in = s[4];
      break;
    case CacheLayout::dim_major_v:
      a.heads = n[1], a.head_dim = n[2], a.block_size = n[3];
      a.head = s[1], a.dim_in = s[2], a.slot_in = s[3];
      break;
  }
  if (a.dim_x <= 0) a.dim_x = kUnsplit;  // an empty split dimension: shapes are refused before use
  if (a.slot_x <= 0) a.slot_x = kUnsplit;
  return a;
}

}  // namespace aiter_compat
