#include "aiter_compat/shim/gpu_runner.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "aiter_compat/gpu_runtime/launch.hpp"
#include "aiter_compat/shim/features.hpp"
#include "aiter_compat/shim/selftest.hpp"

namespace aiter_compat {
namespace {

ac_attention_params common(const TensorView& q, const TensorView& out, const TensorView& lse, const TensorView& sinks,
                           double scale, double softcap, bool causal, const Window& w, int64_t hk, int64_t dv) {
  ac_attention_params p{};
  p.q = q.data;
  p.out = out.data;
  p.lse = static_cast<float*>(lse.data);
  p.sinks = sinks.defined() ? sinks.data : nullptr;
  p.sink_stride = sinks.defined() ? sinks.strides[0] : 0;
  p.sink_type = sinks.defined() ? kernel_dtype(sinks.dtype) : AC_DTYPE_F32;
  p.hq = static_cast<int32_t>(q.shape[q.ndim - 2]);
  p.hk = static_cast<int32_t>(hk);
  p.head_dim = static_cast<int32_t>(q.shape[q.ndim - 1]);
  p.head_dim_v = static_cast<int32_t>(dv);
  p.scale = static_cast<float>(scale > 0 ? scale : 1.0 / std::sqrt(static_cast<double>(p.head_dim)));
  p.softcap = static_cast<float>(softcap);
  p.causal = causal;
  p.window_left = static_cast<int32_t>(std::min<int64_t>(w.left, INT32_MAX));
  p.window_right = static_cast<int32_t>(std::min<int64_t>(w.right, INT32_MAX));
  p.num_splits = 1;
  return p;
}

// Keys one query attends to at most: the window's span, else the longest sequence.
int64_t max_keys_of(int64_t longest, const Window& w) {
  return w.left >= 0 ? std::min<int64_t>(longest, w.left + 1 + std::max<int64_t>(w.right, 0)) : longest;
}

// The storage types of q, k and v, and out, and the kernel family they make.
gpu::AttentionLaunch launch_of(ac_attention_params p, const TensorView& q, const TensorView& k, const TensorView& out,
                               void* stream, const GpuOptions& o) {
  p.q_type = kernel_dtype(q.dtype);
  p.kv_type = kernel_dtype(k.dtype);
  p.out_type = kernel_dtype(out.dtype);
  gpu::AttentionLaunch l;
  l.only_row = o.only_row;
  l.force_splits = o.force_splits;
  l.producer_twin = o.producer_twin;
  l.params = p;
  l.dtype = family_type(q.dtype, k.dtype, out.dtype);
  l.vendor = vendor_of(q.device);
  l.device = q.device_id;
  l.stream = stream;
  return l;
}

// A call's launch: its families checked first (unless the self-test is the caller).
gpu::KernelId launch_checked(gpu::AttentionLaunch& l, const GpuOptions& o) {
  if (o.plan_only) return gpu::plan_attention(l).row;
  if (!o.only_row) selftest::check_before_launch(l);
  return gpu::launch_attention(l);
}

// pa_decode_bf16_asm's split rows (kernel_params.h) from the attention's out and lse.
void launch_split_rows(const PagedArgs& a, const ac_attention_params& attention, const gpu::AttentionLaunch& l,
                       void* stream) {
  ac_split_rows_params p{};
  p.out = a.out.data;
  p.lse = static_cast<const float*>(a.lse.data);
  p.split_o = static_cast<float*>(a.split_o.data);
  p.split_lse = static_cast<float*>(a.split_lse.data);
  p.work_indptr = a.work_indptr.defined() ? static_cast<const int32_t*>(a.work_indptr.data) : nullptr;
  p.work_info = static_cast<const int32_t*>(a.work_info.data);
  p.kv_indptr = static_cast<const int32_t*>(a.kv_indptr.data);
  p.out_tok = attention.out_tok, p.out_head = attention.out_head;
  p.lse_head = attention.lse_head, p.lse_tok = attention.lse_tok;
  p.so_row = a.split_o.strides[0], p.so_head = a.split_o.strides[2];
  p.sl_row = a.split_lse.strides[0], p.sl_head = a.split_lse.strides[2];
  p.wi_row = a.work_info.strides[0], p.wi_col = a.work_info.strides[1];
  p.slots = static_cast<int32_t>(a.work_info.shape[0]);
  p.groups = a.work_indptr.defined() ? static_cast<int32_t>(a.work_indptr.shape[0] - 1) : 0;
  p.batch = attention.batch;
  p.total_q = attention.total_q;
  p.hq = attention.hq;
  p.dv = attention.head_dim_v;
  p.rows = static_cast<int32_t>(a.split_o.shape[0]);
  p.out_type = l.params.out_type;  // (launch_of set the storage types)
  if (a.split_o.strides[3] != 1) throw std::logic_error("split_o with a strided head dim reached the GPU kernels");
  gpu::launch_split_rows(p, l.vendor, l.device, stream);
}

}  // namespace

int kernel_dtype(DType t) {
  switch (t) {
    case DType::f32: return AC_DTYPE_F32;
    case DType::f16: return AC_DTYPE_F16;
    case DType::bf16: return AC_DTYPE_BF16;
    case DType::f8_e4m3fn: return AC_DTYPE_E4M3FN;
    case DType::f8_e4m3fnuz: return AC_DTYPE_E4M3FNUZ;
    default: return -1;
  }
}

gpu::Vendor vendor_of(DeviceKind d) { return d == DeviceKind::rocm ? gpu::Vendor::amd : gpu::Vendor::nvidia; }

gpu::KernelId run_gpu(const VarlenArgs& a, void* stream, const GpuOptions& o) {
  const int hd = a.batch_layout ? 2 : 1;
  ac_attention_params p = common(a.q, a.out, a.lse, a.sinks, a.softmax_scale, a.softcap, a.causal, a.window, a.k.shape[hd],
                                 a.v.shape[a.v.ndim - 1]);
  p.k = a.k.data;
  p.v = a.v.data;
  // Tokens are addressed with one stride: routing sends a batch layout here only when its
  // sequences are back to back (CallFeatures::batch_contiguous).
  auto token_stride = [&](const TensorView& t, const char* name) {
    if (a.batch_layout && t.shape[0] > 1 && t.strides[0] != t.shape[1] * t.strides[1])
      throw std::logic_error(std::string(name) + ": a batch layout with uneven sequence strides reached the GPU kernels");
    return t.strides[hd - 1];
  };
  p.q_tok = token_stride(a.q, "q"), p.q_head = a.q.strides[hd];
  p.k_tok = token_stride(a.k, "k"), p.k_head = a.k.strides[hd];
  p.v_tok = token_stride(a.v, "v"), p.v_head = a.v.strides[hd];
  p.out_tok = token_stride(a.out, "out"), p.out_head = a.out.strides[hd];
  if (a.lse.defined()) {
    p.lse_batch = a.batch_layout ? a.lse.strides[0] : 0;
    p.lse_head = a.lse.strides[a.batch_layout ? 1 : 0];
    p.lse_tok = a.lse.strides[a.batch_layout ? 2 : 1];
  }
  if (a.batch_layout) {
    p.batch = static_cast<int32_t>(a.q.shape[0]);
    p.uniform_q = static_cast<int32_t>(a.q.shape[1]);
    p.uniform_k = static_cast<int32_t>(a.k.shape[1]);
    p.total_q = p.batch * p.uniform_q;
    p.total_k = p.batch * p.uniform_k;
  } else {
    p.cu_seqlens_q = static_cast<const int32_t*>(a.cu_seqlens_q.data);
    p.cu_seqlens_k = static_cast<const int32_t*>(a.cu_seqlens_k.data);
    p.batch = static_cast<int32_t>(a.cu_seqlens_q.shape[0] - 1);
    p.total_q = static_cast<int32_t>(a.q.shape[0]);
    p.total_k = static_cast<int32_t>(a.k.shape[0]);
  }
  gpu::AttentionLaunch l = launch_of(p, a.q, a.k, a.out, stream, o);
  l.max_keys = max_keys_of(a.batch_layout ? a.k.shape[1] : a.max_seqlen_k, a.window);
  // Queries per sequence: the batch layout's length, else max_seqlen_q (an underestimate costs
  // time, not results: the tiled kernels loop over a sequence's row tiles).
  const int64_t max_q = a.batch_layout ? a.q.shape[1] : a.max_seqlen_q > 0 ? a.max_seqlen_q : a.q.shape[0];
  l.max_rows = std::max<int64_t>(max_q, 1) * (p.hq / std::max(p.hk, 1));
  return launch_checked(l, o);
}

gpu::KernelId run_gpu(const PagedArgs& a, void* stream, const GpuOptions& o) {
  const CacheAddress ka = cache_address(a.k_cache, a.k_layout), va = cache_address(a.v_cache, a.v_layout);
  ac_attention_params p = common(a.q, a.out, a.lse, a.sinks, a.softmax_scale, a.softcap, a.causal, a.window,
                                 ka.heads, va.head_dim);
  p.paged = 1;
  p.k = a.k_cache.data;
  p.v = a.v_cache.data;
  p.q_tok = a.q.strides[0], p.q_head = a.q.strides[1];
  p.k_tok = ka.block, p.k_head = ka.head, p.v_tok = va.block, p.v_head = va.head;
  if (a.k_layout == CacheLayout::rows && a.v_layout == CacheLayout::rows) {
    p.k_slot = ka.slot_in, p.v_slot = va.slot_in;
  } else {  // the generic kernel's split addressing (kernel_params.h)
    static_assert(kUnsplit == AC_SPLIT_NONE, "one unsplit width for the host and the kernels");
    p.kv_layout = AC_LAYOUT_SPLIT;
    p.k_slot = ka.slot, p.k_slot_in = ka.slot_in, p.k_slot_x = ka.slot_x;
    p.k_dim = ka.dim, p.k_dim_in = ka.dim_in, p.k_dim_x = ka.dim_x;
    p.v_slot = va.slot, p.v_slot_in = va.slot_in, p.v_slot_x = va.slot_x;
    p.v_dim = va.dim, p.v_dim_in = va.dim_in, p.v_dim_x = va.dim_x;
  }
  p.out_tok = a.out.strides[0], p.out_head = a.out.strides[1];
  if (a.lse.defined()) p.lse_head = a.lse.strides[0], p.lse_tok = a.lse.strides[1];
  p.block_table = static_cast<const int32_t*>(a.block_table.data);
  p.num_blocks = static_cast<int32_t>(ka.blocks);
  p.block_size = static_cast<int32_t>(ka.block_size);
  if (a.kv_indptr.defined()) {  // CSR: block_table is the 1-D kv_page_indices
    p.kv_indptr = static_cast<const int32_t*>(a.kv_indptr.data);
    p.kv_last_page_lens = a.kv_last_page_lens.defined() ? static_cast<const int32_t*>(a.kv_last_page_lens.data) : nullptr;
    p.seqused_k = a.seqused_k.defined() ? static_cast<const int32_t*>(a.seqused_k.data) : nullptr;
    p.num_page_indices = static_cast<int32_t>(a.block_table.shape[0]);
    p.bt_col = a.block_table.strides[0];
    p.batch = static_cast<int32_t>(a.kv_indptr.shape[0] - 1);
    // Pages of the longest sequence (the launch plan's estimate; each sequence reads its own).
    p.max_blocks = static_cast<int32_t>(a.max_seqlen_k > 0 ? (a.max_seqlen_k + p.block_size - 1) / p.block_size
                                                           : a.block_table.shape[0]);
  } else {
    p.bt_row = a.block_table.strides[0], p.bt_col = a.block_table.strides[1];
    p.seqused_k = static_cast<const int32_t*>(a.seqused_k.data);
    p.max_blocks = static_cast<int32_t>(a.block_table.shape[1]);
    p.batch = static_cast<int32_t>(a.block_table.shape[0]);
  }
  p.q_descale = a.q_descale.defined() ? static_cast<const float*>(a.q_descale.data) : nullptr;
  p.k_descale = a.k_descale.defined() ? static_cast<const float*>(a.k_descale.data) : nullptr;
  p.v_descale = a.v_descale.defined() ? static_cast<const float*>(a.v_descale.data) : nullptr;
  if (p.k_descale) descale_strides(a.k_descale, &p.kd_seq, &p.kd_head);
  if (p.v_descale) descale_strides(a.v_descale, &p.vd_seq, &p.vd_head);
  p.out_scale = a.output_scale.defined() ? static_cast<const float*>(a.output_scale.data) : nullptr;
  p.total_q = static_cast<int32_t>(a.q.shape[0]);
  // One query per sequence (decode) needs no cu_seqlens_q: given, or implied by batch == tokens
  // with max_seqlen_q == 1.
  if (a.uniform_queries) p.uniform_q = static_cast<int32_t>(a.queries_per_sequence);
  else if (p.batch == p.total_q && a.max_seqlen_q == 1) p.uniform_q = 1;
  else p.cu_seqlens_q = static_cast<const int32_t*>(a.cu_seqlens_q.data);
  gpu::AttentionLaunch l = launch_of(p, a.q, a.k_cache, a.out, stream, o);
  l.max_keys = max_keys_of(a.max_seqlen_k > 0 ? a.max_seqlen_k : static_cast<int64_t>(p.max_blocks) * p.block_size,
                           a.window);
  const int64_t max_q = p.uniform_q > 0 ? p.uniform_q : a.max_seqlen_q > 0 ? a.max_seqlen_q : a.q.shape[0];
  l.max_rows = max_q * (p.hq / std::max(p.hk, 1));
  const gpu::KernelId ran = launch_checked(l, o);
  if (a.work_info.defined() && !o.plan_only) launch_split_rows(a, p, l, stream);
  return ran;
}

gpu::KernelId run_gpu(const MergeArgs& a, void* stream, const GpuOptions& o) {
  ac_merge_params p{};
  p.out = a.output.data;
  p.prefix = a.prefix_output.data;
  p.suffix = a.suffix_output.data;
  p.prefix_lse = static_cast<const float*>(a.prefix_lse.data);
  p.suffix_lse = static_cast<const float*>(a.suffix_lse.data);
  p.out_lse = static_cast<float*>(a.output_lse.data);
  p.sinks = a.sinks.defined() ? a.sinks.data : nullptr;
  p.sink_stride = a.sinks.defined() ? a.sinks.strides[0] : 0;
  p.sink_type = a.sinks.defined() ? kernel_dtype(a.sinks.dtype) : AC_DTYPE_F32;
  p.out_tok = a.output.strides[0], p.out_head = a.output.strides[1];
  p.prefix_tok = a.prefix_output.strides[0], p.prefix_head = a.prefix_output.strides[1];
  p.suffix_tok = a.suffix_output.strides[0], p.suffix_head = a.suffix_output.strides[1];
  p.plse_head = a.prefix_lse.strides[0], p.plse_tok = a.prefix_lse.strides[1];
  p.slse_head = a.suffix_lse.strides[0], p.slse_tok = a.suffix_lse.strides[1];
  if (a.output_lse.defined()) p.olse_head = a.output_lse.strides[0], p.olse_tok = a.output_lse.strides[1];
  p.tokens = static_cast<int32_t>(a.output.shape[0]);
  p.heads = static_cast<int32_t>(a.output.shape[1]);
  p.dim = static_cast<int32_t>(a.output.shape[2]);
  const gpu::Vendor vendor = vendor_of(a.output.device);
  if (o.plan_only) return gpu::KernelId::merge_states;
  if (!o.only_row) selftest::check_before_merge(vendor, a.output.device_id, kernel_dtype(a.output.dtype), p.dim, stream);
  gpu::launch_merge_states(p, kernel_dtype(a.output.dtype), vendor, a.output.device_id, stream);
  return gpu::KernelId::merge_states;
}

}  // namespace aiter_compat
