#pragma once
// Arguments of the attention operations, after the fronts (Python module, C API) have turned
// their inputs into views. One struct per operation; optional tensors are undefined views.
#include <cstdint>

#include "aiter_compat/shim/tensor.hpp"

namespace aiter_compat {

struct Window {
  int64_t left = -1;   // -1: unbounded
  int64_t right = -1;  // -1: unbounded
  int64_t sink_size = 0;  // StreamingLLM's always-kept first tokens (AITer's third value)
};

// flash_attn_varlen_func: q [total_q, Hq, D], k [total_k, Hk, D], v [total_k, Hk, Dv],
// cu_seqlens_* int32 [B+1]; out [total_q, Hq, Dv]; lse fp32 [Hq, total_q].
// flash_attn_func uses the same struct with batch_layout: q [B, Sq, Hq, D], k/v [B, Sk, Hk, D],
// out [B, Sq, Hq, Dv], lse [B, Hq, Sq], and no cu_seqlens.
struct VarlenArgs {
  TensorView q, k, v, cu_seqlens_q, cu_seqlens_k, sinks, out, lse;
  bool batch_layout = false;
  int64_t max_seqlen_q = 0, max_seqlen_k = 0;
  double softmax_scale = 0;  // 0: 1/sqrt(D)
  bool causal = false;
  Window window;
  double dropout_p = 0, softcap = 0;
  bool has_bias = false, has_alibi = false;
};

// Paged attention over vLLM's NHD cache (unified_attention and the paged decode entry point):
// q [total_q, Hq, D], k_cache [num_blocks, block_size, Hk, D], v_cache [.., Hk, Dv],
// in one float dtype, or an fp8 e4m3 cache (fn or fnuz) under float16/bfloat16 or the same fp8
// queries, out then in the 16-bit type (q's when q has one) or the cache's fp8;
// cu_seqlens_q int32 [B+1], seqused_k int32 [B] (context length including the new tokens),
// block_table int32 [B, max_blocks]; out [total_q, Hq, Dv]; lse fp32 [Hq, total_q].
// Element strides of a descale over (sequence, kv head), 0 where it broadcasts (validated shapes:
// [], [1], [kv_heads], [batch or 1, kv_heads or 1]).
inline void descale_strides(const TensorView& t, int64_t* seq, int64_t* head) {
  *seq = t.ndim == 2 && t.shape[0] != 1 ? t.strides[0] : 0;
  *head = t.ndim == 2 ? (t.shape[1] != 1 ? t.strides[1] : 0) : t.ndim == 1 && t.shape[0] != 1 ? t.strides[0] : 0;
}
inline double descale_at(const TensorView& t, int64_t b, int64_t kh) {
  if (!t.defined()) return 1.0;
  int64_t s, h;
  descale_strides(t, &s, &h);
  return static_cast<const float*>(t.data)[b * s + kh * h];
}

// How a paged cache's elements are laid out: the rows every kernel reads, or AITer's others
// (read by the generic GPU kernel and the CPU reference alone).
enum class CacheLayout : uint8_t {
  rows,          // [blocks, block_size, kv_heads, head_dim] (vLLM's NHD)
  vectorized_k,  // [blocks, kv_heads, head_dim / x, block_size, x] (AITer's 5-D key cache)
  vectorized_v,  // [blocks, kv_heads, block_size / x, head_dim, x] (AITer's 5-D value cache)
  dim_major_v,   // [blocks, kv_heads, head_dim, block_size] (pa_decode_gluon's 4-D value cache)
};
const char* layout_text(CacheLayout l);  // the shape as the errors name it

// Element (block, slot, head, channel) of a cache in one of those layouts, in elements: the
// slot and channel dimensions may each be split in two, index i at (i / x) outer + (i % x)
// inner (x = kUnsplit: i inner). The GPU kernels take the same fields (kernel_params.h).
constexpr int32_t kUnsplit = 1 << 30;
struct CacheAddress {
  int64_t blocks = 0, block_size = 0, heads = 0, head_dim = 0;  // the cache's extents
  int64_t block = 0, head = 0;
  int64_t slot = 0, slot_in = 0, dim = 0, dim_in = 0;
  int32_t slot_x = kUnsplit, dim_x = kUnsplit;
  int64_t slot_offset(int64_t s) const { return s / slot_x * slot + s % slot_x * slot_in; }
  int64_t channel_offset(int64_t c) const { return c / dim_x * dim + c % dim_x * dim_in; }
};
// t's addressing as layout l (t has l's number of dimensions; [slots, kv_heads, head_dim] rows
// are pages of one slot).
CacheAddress cache_address(const TensorView& t, CacheLayout l);

struct PagedArgs {
  TensorView q, k_cache, v_cache, cu_seqlens_q, seqused_k, block_table, sinks, out, lse;
  int64_t max_seqlen_q = 0, max_seqlen_k = 0;
  double softmax_scale = 0;
  bool causal = true;
  Window window;
  double softcap = 0;
  // unified_attention's descales (fp32; null for 1): scores times q_descale k_descale[b, kh],
  // outputs times v_descale[b, kh]; q_descale one element, k/v [batch, Hk] or broadcast to it.
  TensorView q_descale, k_descale, v_descale;
  // AITer's output_scale (fp32, one element): outputs divided by it (an fp8 out then saturated).
  TensorView output_scale;
  bool has_alibi = false, has_q_descale = false;
  // Without cu_seqlens_q: sequence b's queries are tokens [b n, (b + 1) n), n =
  // queries_per_sequence (decode: 1; pa_decode_gluon: its query_length). cu_seqlens_q then holds
  // a host arange for the CPU kernel; the GPU kernels ignore it.
  bool uniform_queries = false;
  int64_t queries_per_sequence = 1;
  CacheLayout k_layout = CacheLayout::rows, v_layout = CacheLayout::rows;
  // mha_batch_prefill_func's page table as CSR, when kv_indptr is given (int32 [batch + 1]):
  // sequence b's pages are block_table[kv_indptr[b] .. kv_indptr[b + 1]) (block_table is then the
  // 1-D kv_page_indices), its keys (pages - 1) x block_size + kv_last_page_lens[b] (int32
  // [batch]; every page whole without it, as for block size 1), or seqused_k[b] when given
  // (pa_decode_bf16_asm's context_lens: at most the pages' keys).
  TensorView kv_indptr, kv_last_page_lens;
  // pa_decode_bf16_asm's persistent schedule and split rows (kernel_params.h,
  // ac_split_rows_params): written from out and lse after the attention when work_info is given.
  TensorView work_indptr, work_info, split_o, split_lse;
  // Contexts may hold fewer keys than the sequence has queries (pa_decode_bf16_asm: a CUDA
  // graph's padded sequences have none): rows that see no key get out 0 and the sink's LSE.
  bool short_contexts = false;
  // The caller's names of the cache parameters, for errors.
  const char* k_name = "k_cache";
  const char* v_name = "v_cache";
  const char* table_name = "block_table";
  const char* seqused_name = "seqused_k";
  const char* out_name = "out";
};

// merge_attn_states: two partial states of the same queries over disjoint keys (outputs
// [tokens, Hq, D] normalised within their part, LSE fp32 [Hq, tokens], computed without sinks)
// into output and, optionally, output_lse; the sink, when given, enters once here.
struct MergeArgs {
  TensorView output, prefix_output, prefix_lse, suffix_output, suffix_lse, output_lse, sinks;
};

}  // namespace aiter_compat
