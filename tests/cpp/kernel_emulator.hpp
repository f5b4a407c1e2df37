#pragma once
// Runs the fallback kernels' launches on the host for the stand-in runtimes (whose "device"
// memory is host memory): each launch's parameter struct becomes the CPU reference's arguments.
// A faithful device, so the self-test passes where the launcher and the kernels' parameters are
// right, and fails where the parameters are perturbed (AITER_COMPAT_SELFTEST_FAULT). Split-KV
// launches are taken whole by their merge kernel, or by the split kernel that folds the merge in
// (the partial results are the kernels' own business).
#include <cstring>
#include <string>
#include <vector>

#include "aiter_compat/shim/attention_args.hpp"
#include "kernel_params.h"
#include "reference_attention.hpp"

namespace aiter_compat::testing_support {

inline DType emulated_dtype(const std::string& name) {
  if (name.find("_bf16") != std::string::npos) return DType::bf16;
  if (name.find("_f16") != std::string::npos) return DType::f16;
  return DType::f32;
}

inline DType code_dtype(int t) {
  switch (t) {
    case AC_DTYPE_F32: return DType::f32;
    case AC_DTYPE_F16: return DType::f16;
    case AC_DTYPE_E4M3FN: return DType::f8_e4m3fn;
    case AC_DTYPE_E4M3FNUZ: return DType::f8_e4m3fnuz;
    default: return DType::bf16;
  }
}

inline TensorView emulated_view(const void* data, DType t, std::vector<int64_t> shape, std::vector<int64_t> strides) {
  TensorView v;
  v.data = const_cast<void*>(data);
  v.dtype = t;
  v.raw_dtype = to_dlpack(t);
  v.device = DeviceKind::cpu;
  v.ndim = static_cast<int>(shape.size());
  for (int i = 0; i < v.ndim; ++i) v.shape[i] = shape[static_cast<size_t>(i)], v.strides[i] = strides[static_cast<size_t>(i)];
  return v;
}

// The launch's storage types are its parameters' (q_type, kv_type, out_type), as the kernels read them.
inline void emulate_attention(const ac_attention_params& p) {
  const DType qt = code_dtype(p.q_type), t = code_dtype(p.kv_type), ot = code_dtype(p.out_type);
  const TensorView sinks = p.sinks ? emulated_view(p.sinks, code_dtype(p.sink_type), {p.hq}, {p.sink_stride}) : TensorView{};
  const TensorView out = emulated_view(p.out, ot, {p.total_q, p.hq, p.head_dim_v}, {p.out_tok, p.out_head, 1});
  const TensorView lse = p.lse ? emulated_view(p.lse, DType::f32, {p.hq, p.total_q}, {p.lse_head, p.lse_tok}) : TensorView{};
  const TensorView q = emulated_view(p.q, qt, {p.total_q, p.hq, p.head_dim}, {p.q_tok, p.q_head, 1});
  Window w{p.window_left, p.window_right, 0};
  if (!p.paged) {
    VarlenArgs a;
    a.q = q, a.out = out, a.lse = lse, a.sinks = sinks;
    a.k = emulated_view(p.k, t, {p.total_k, p.hk, p.head_dim}, {p.k_tok, p.k_head, 1});
    a.v = emulated_view(p.v, t, {p.total_k, p.hk, p.head_dim_v}, {p.v_tok, p.v_head, 1});
    a.cu_seqlens_q = emulated_view(p.cu_seqlens_q, DType::i32, {p.batch + 1}, {1});
    a.cu_seqlens_k = emulated_view(p.cu_seqlens_k, DType::i32, {p.batch + 1}, {1});
    a.softmax_scale = p.scale, a.causal = p.causal, a.window = w;
    cpu::varlen_attention(a);
    return;
  }
  static thread_local std::vector<int32_t> arange;
  PagedArgs a;
  a.q = q, a.out = out, a.lse = lse, a.sinks = sinks;
  a.k_cache = emulated_view(p.k, t, {p.num_blocks, p.block_size, p.hk, p.head_dim}, {p.k_tok, p.k_slot, p.k_head, 1});
  a.v_cache = emulated_view(p.v, t, {p.num_blocks, p.block_size, p.hk, p.head_dim_v}, {p.v_tok, p.v_slot, p.v_head, 1});
  if (p.kv_indptr) {
    a.kv_indptr = emulated_view(p.kv_indptr, DType::i32, {p.batch + 1}, {1});
    if (p.kv_last_page_lens) a.kv_last_page_lens = emulated_view(p.kv_last_page_lens, DType::i32, {p.batch}, {1});
    a.block_table = emulated_view(p.block_table, DType::i32, {p.num_page_indices}, {p.bt_col});
  } else {
    a.seqused_k = emulated_view(p.seqused_k, DType::i32, {p.batch}, {1});
    a.block_table = emulated_view(p.block_table, DType::i32, {p.batch, p.max_blocks}, {p.bt_row, p.bt_col});
  }
  if (p.cu_seqlens_q) {
    a.cu_seqlens_q = emulated_view(p.cu_seqlens_q, DType::i32, {p.batch + 1}, {1});
  } else {
    arange.resize(static_cast<size_t>(p.batch + 1));
    for (int32_t i = 0; i <= p.batch; ++i) arange[static_cast<size_t>(i)] = i;
    a.cu_seqlens_q = emulated_view(arange.data(), DType::i32, {p.batch + 1}, {1});
    a.uniform_queries = true;
  }
  a.softmax_scale = p.scale, a.causal = p.causal, a.window = w;
  if (p.q_descale) a.q_descale = emulated_view(p.q_descale, DType::f32, {1}, {1});
  if (p.k_descale) a.k_descale = emulated_view(p.k_descale, DType::f32, {p.batch, p.hk}, {p.kd_seq, p.kd_head});
  if (p.v_descale) a.v_descale = emulated_view(p.v_descale, DType::f32, {p.batch, p.hk}, {p.vd_seq, p.vd_head});
  if (p.out_scale) a.output_scale = emulated_view(p.out_scale, DType::f32, {1}, {1});
  cpu::paged_attention(a);
}

inline void emulate_merge_states(const ac_merge_params& p, DType t) {
  MergeArgs a;
  a.output = emulated_view(p.out, t, {p.tokens, p.heads, p.dim}, {p.out_tok, p.out_head, 1});
  a.prefix_output = emulated_view(p.prefix, t, {p.tokens, p.heads, p.dim}, {p.prefix_tok, p.prefix_head, 1});
  a.suffix_output = emulated_view(p.suffix, t, {p.tokens, p.heads, p.dim}, {p.suffix_tok, p.suffix_head, 1});
  a.prefix_lse = emulated_view(p.prefix_lse, DType::f32, {p.heads, p.tokens}, {p.plse_head, p.plse_tok});
  a.suffix_lse = emulated_view(p.suffix_lse, DType::f32, {p.heads, p.tokens}, {p.slse_head, p.slse_tok});
  if (p.out_lse) a.output_lse = emulated_view(p.out_lse, DType::f32, {p.heads, p.tokens}, {p.olse_head, p.olse_tok});
  if (p.sinks) a.sinks = emulated_view(p.sinks, code_dtype(p.sink_type), {p.heads}, {p.sink_stride});
  cpu::merge_states(a);
}

// The stand-in runtimes' kernel hook (fake_launch.h).
inline void emulate_kernel(const char* fn, const void* params) {
  const std::string name = fn;
  if (name == "ac_zero_counts") return;  // the folded merge's counters: the call is taken whole below
  const DType t = emulated_dtype(name);
  if (name.rfind("ac_merge_states_", 0) == 0) return emulate_merge_states(*static_cast<const ac_merge_params*>(params), t);
  const auto& p = *static_cast<const ac_attention_params*>(params);
  if (name.rfind("ac_merge_", 0) == 0) return emulate_attention(p);  // the split merge: the whole call
  if (p.num_splits > 1 && !p.split_counts) return;                    // its merge kernel follows
  emulate_attention(p);
}

}  // namespace aiter_compat::testing_support
