// The one runner of fallback routes, for both fronts: the call's values by role become the
// kernels' argument structs, outputs the call did not give are made by the front, every
// argument is checked, and the CPU reference or the GPU kernels run.
#include <algorithm>
#include <exception>
#include <string>
#include <vector>

#include "aiter_compat/gpu_runtime/kernel_table.hpp"
#include "aiter_compat/shim/dispatch.hpp"
#include "aiter_compat/shim/errors.hpp"
#include "aiter_compat/shim/gpu_runner.hpp"
#include "aiter_compat/shim/selftest.hpp"
#include "aiter_compat/shim/validate.hpp"
#include "reference_attention.hpp"

namespace aiter_compat {
namespace {

Window window_of(const CallArgs& c) {
  WindowValue w = c.window(c.signature().index_of(Role::window));
  return {w.left, w.right, w.sink_size};
}

double number_of(const CallArgs& c, Role r) {
  const int i = c.signature().index_of(r);
  return i < 0 ? 0.0 : c.number(i);
}

TensorView view_of(CallArgs& c, Role r) {
  const int i = c.signature().index_of(r);
  return i < 0 ? TensorView{} : c.view(i);
}

// out (the call's own, else made like q: in bfloat16 for fp8 queries, as AITer's fp8 attention
// returns) and, when asked for, the LSE.
void outputs(CallArgs& c, const CallFeatures& f, const std::vector<int64_t>& out_shape,
             const std::vector<int64_t>& lse_shape, TensorView& out, TensorView& lse) {
  const int qi = c.signature().index_of(Role::q), oi = c.signature().index_of(Role::out);
  out = c.given(oi) ? c.view(oi) : c.output(qi, out_shape, is_e4m3(f.dtype) ? DType::bf16 : DType::unsupported, Role::out);
  if (f.return_lse) lse = c.output(qi, lse_shape, DType::f32, Role::return_lse);
}

// Runs on the route's kernels; the GPU ones only enqueue on the caller's stream.
template <typename Args>
gpu::KernelId execute(const Route& route, CallArgs& call, Args& a, const TensorView& like, void (*cpu_kernel)(const Args&),
                      void (*check)(const Args&, bool)) {
  if (route.kind == RouteKind::fallback_gpu) {
    check(a, false);  // contents live on the GPU; the kernels clamp every index
    void* stream = call.stream(call.signature().index_of(Role::q) >= 0 ? call.signature().index_of(Role::q)
                                                                       : call.signature().index_of(Role::output),
                               like);
    std::string error;
    std::exception_ptr failed_family;  // rethrown once the front holds its lock again
    gpu::KernelId ran = gpu::KernelId::generic;
    call.run_unlocked([&] {
      try {
        ran = run_gpu(a, stream);
      } catch (const selftest::FamilyFailed&) {
        failed_family = std::current_exception();
      } catch (const gpu::GpuError& e) {
        error = e.what();
      }
    });
    if (failed_family) std::rethrow_exception(failed_family);
    if (!error.empty()) throw RouteError(route.target, {{"error", error}}, {{route.target, false, {error}}});
    return ran;
  }
  check(a, true);
  call.run_unlocked([&] { cpu_kernel(a); });
  return gpu::KernelId::cpu_reference;
}

FallbackRun varlen(const Route& route, CallArgs& c, const CallFeatures& f) {
  const OpSignature& sig = c.signature();
  VarlenArgs a;
  a.batch_layout = c.signature().kind == OpKind::batch;
  const int qi = sig.index_of(Role::q);
  a.q = c.view(qi);
  a.k = view_of(c, Role::k);
  a.v = view_of(c, Role::v);
  if (!a.batch_layout) {
    a.cu_seqlens_q = view_of(c, Role::cu_seqlens_q);
    a.cu_seqlens_k = view_of(c, Role::cu_seqlens_k);
    a.max_seqlen_q = c.integer(sig.index_of(Role::max_seqlen_q), 0);
    a.max_seqlen_k = c.integer(sig.index_of(Role::max_seqlen_k), 0);
  }
  a.sinks = view_of(c, Role::sinks);
  a.softmax_scale = number_of(c, Role::softmax_scale);
  a.causal = f.causal;
  a.window = window_of(c);
  a.dropout_p = number_of(c, Role::dropout);
  a.softcap = number_of(c, Role::softcap);
  const int nd = a.batch_layout ? 4 : 3;
  if (a.q.ndim != nd || a.v.ndim != nd) validate_varlen(a, false);  // names the bad shape
  std::vector<int64_t> out_shape(a.q.shape, a.q.shape + a.q.ndim);
  out_shape.back() = a.v.shape[a.v.ndim - 1];
  outputs(c, f, out_shape,
          a.batch_layout ? std::vector<int64_t>{a.q.shape[0], a.q.shape[2], a.q.shape[1]}
                         : std::vector<int64_t>{a.q.shape[1], a.q.shape[0]},
          a.out, a.lse);
  FallbackRun run;
  run.kernel = execute<VarlenArgs>(route, c, a, a.q, cpu::varlen_attention, validate_varlen);
  run.returns = f.return_lse ? Returns::out_and_lse : Returns::out;
  return run;
}

// [slots, kv_heads, head_dim] (mha_batch_prefill_func's pages of one slot) as the kernels'
// [pages, page_size, kv_heads, head_dim] with page_size 1; other views are left as they are.
TensorView as_pages(TensorView t) {
  if (t.ndim != 3) return t;
  t.ndim = 4;
  for (int i = 3; i >= 2; --i) t.shape[i] = t.shape[i - 1], t.strides[i] = t.strides[i - 1];
  t.shape[1] = 1, t.strides[1] = t.strides[0];
  return t;
}

// mha_batch_prefill_func's page table: a block_table with seqlen_k when given (AITer then reads
// that), else kv_indptr into kv_page_indices with kv_last_page_lens; and the caller's names.
void batch_prefill_table(CallArgs& c, PagedArgs& a) {
  a.k_name = "k", a.v_name = "v";
  a.k_cache = as_pages(a.k_cache), a.v_cache = as_pages(a.v_cache);
  if (a.block_table.defined()) {
    a.seqused_name = "seqlen_k";
    return;
  }
  a.table_name = "kv_page_indices";
  a.block_table = view_of(c, Role::kv_page_indices);
  a.kv_indptr = view_of(c, Role::kv_indptr);
  a.kv_last_page_lens = view_of(c, Role::kv_last_page_lens);
  a.seqused_k = TensorView{};
}

// The layouts of a call's caches: AITer's 5-D ones (mha_batch_prefill_func's and
// unified_attention's shuffled_kv_cache 5-D pair; pa_decode_gluon's key cache, its value cache
// 5-D or [blocks, kv_heads, dim, block_size]), else rows.
void cache_layouts(const CallArgs& c, const CallFeatures& f, PagedArgs& a) {
  if (!(f.kernel_features & gpu::kVectorizedCache)) return;
  a.k_layout = CacheLayout::vectorized_k;
  a.v_layout = a.v_cache.ndim == 4 && c.signature().kind == OpKind::vectorized_decode ? CacheLayout::dim_major_v
                                                                                       : CacheLayout::vectorized_v;
}

// pa_decode_gluon: query_length queries per sequence, the window as sliding_window keys (the
// query's own included), and the fp8 scales AITer applies: query_scale always, key_scale and
// value_scale over an fp8 cache only (it ignores them over a 16-bit one).
void gluon_decode(CallArgs& c, PagedArgs& a) {
  const OpSignature& sig = c.signature();
  a.k_name = "key_cache", a.v_name = "value_cache", a.table_name = "block_tables", a.seqused_name = "context_lengths";
  a.out_name = "output";
  const int64_t qlen = c.integer(sig.index_of(Role::query_length), 1);
  const int64_t tokens = a.q.ndim > 0 ? a.q.shape[0] : 0;
  if (qlen < 1 || tokens % qlen != 0)
    throw ArgumentError("query_length", std::to_string(qlen),
                        "a count >= 1 that divides query's " + std::to_string(tokens) + " tokens (sequences x query_length)");
  a.queries_per_sequence = qlen;
  const int64_t w = c.integer(sig.index_of(Role::sliding_window), 0);
  if (w < 0) throw ArgumentError("sliding_window", std::to_string(w), "0 (off) or a count of keys >= 1");
  a.window = w > 0 ? Window{w - 1, 0, 0} : Window{};
  if (!is_e4m3(a.k_cache.dtype)) a.k_descale = a.v_descale = TensorView{};
}

// t's dimensions d and d + 1 as one, when one stride steps over both (pa_decode_bf16_asm's
// batch and mtp dimensions are its tokens, its kv_heads and gqa its query heads).
TensorView merged(TensorView t, int d, const char* name, const char* what) {
  if (t.ndim <= d + 1) return t;
  const int64_t n0 = t.shape[d], n1 = t.shape[d + 1];
  if (n0 > 1 && n1 > 1 && t.strides[d] != n1 * t.strides[d + 1])
    throw ArgumentError(name,
                        "strides " + std::to_string(t.strides[d]) + ", " + std::to_string(t.strides[d + 1]) +
                            " in dimensions " + std::to_string(d) + ", " + std::to_string(d + 1) + " of shape " + t.shape_text(),
                        std::string(what) + " one stride apart (" + std::to_string(n1) + " x " +
                            std::to_string(t.strides[d + 1]) + "), as in a contiguous tensor");
  t.strides[d] = n1 == 1 ? t.strides[d] : t.strides[d + 1];
  t.shape[d] = n0 * n1;
  for (int i = d + 1; i + 1 < t.ndim; ++i) t.shape[i] = t.shape[i + 1], t.strides[i] = t.strides[i + 1];
  --t.ndim;
  return t;
}

// [batch, mtp + 1, kv_heads, gqa, dim] as the kernels' [tokens, heads, dim].
TensorView as_token_rows(const TensorView& t, const char* name) {
  if (t.ndim != 5) return t;  // validation names the shape
  return merged(merged(t, 2, name, "kv_heads and gqa"), 0, name, "batch and mtp");
}

// pa_decode_bf16_asm: Q's rows, the CSR page table with context_lens, mtp + 1 queries per
// sequence (a padded sequence may have no keys), out made in bfloat16 as AITer's, and the LSE
// its split rows are written from.
void asm_decode(CallArgs& c, const CallFeatures& f, PagedArgs& a) {
  const OpSignature& sig = c.signature();
  const int qi = sig.index_of(Role::q), oi = sig.index_of(Role::out);
  a.k_name = "K", a.v_name = "V", a.table_name = "kv_indices", a.seqused_name = "context_lens";
  const TensorView q5 = a.q;
  a.q = as_token_rows(q5, "Q");
  a.kv_indptr = view_of(c, Role::kv_indptr);
  a.block_table = view_of(c, Role::kv_page_indices);
  a.queries_per_sequence = f.query_length;
  a.short_contexts = true;
  a.work_indptr = view_of(c, Role::work_indptr);
  a.work_info = view_of(c, Role::work_info);
  a.split_o = view_of(c, Role::split_o);
  a.split_lse = view_of(c, Role::split_lse);
  if (q5.ndim != 5) return;
  const std::vector<int64_t> shape(q5.shape, q5.shape + 5);
  const TensorView out5 =
      c.given(oi) ? c.view(oi) : c.output(qi, shape, is_e4m3(f.dtype) ? DType::bf16 : DType::unsupported, Role::out);
  if (out5.ndim != 5 || !std::equal(shape.begin(), shape.end() - 1, out5.shape))
    throw ArgumentError("out", "shape " + out5.shape_text(), "Q's shape but the head dim " + q5.shape_text());
  a.out = as_token_rows(out5, "out");
  if (a.work_info.defined()) a.lse = c.output(qi, {a.q.shape[1], a.q.shape[0]}, DType::f32, Role::return_lse);
}

// The paged ops' kernels, with pa_decode_bf16_asm's split rows after the attention.
void paged_on_cpu(const PagedArgs& a) {
  cpu::paged_attention(a);
  if (a.work_info.defined()) cpu::split_rows(a);
}
void check_paged(const PagedArgs& a, bool read) {
  validate_paged(a, read);
  validate_split_rows(a, read);
}

FallbackRun paged(const Route& route, CallArgs& c, const CallFeatures& f) {
  const OpSignature& sig = c.signature();
  PagedArgs a;
  const bool gluon = sig.kind == OpKind::vectorized_decode;
  const bool decode = sig.kind == OpKind::decode || gluon;
  const bool batch_prefill = sig.kind == OpKind::batch_prefill;
  const int qi = sig.index_of(Role::q);
  a.q = c.view(qi);
  a.k_cache = view_of(c, Role::k);
  a.v_cache = view_of(c, Role::v);
  a.seqused_k = view_of(c, Role::seqused_k);
  a.block_table = view_of(c, Role::block_table);
  a.sinks = view_of(c, Role::sinks);
  a.softmax_scale = number_of(c, Role::softmax_scale);
  a.causal = f.causal;
  a.window = window_of(c);
  a.softcap = number_of(c, Role::softcap);
  a.q_descale = view_of(c, Role::q_descale);
  a.k_descale = view_of(c, Role::k_descale);
  a.v_descale = view_of(c, Role::v_descale);
  a.output_scale = view_of(c, Role::output_scale);
  if (batch_prefill) batch_prefill_table(c, a);
  cache_layouts(c, f, a);
  if (sig.id == OpId::pa_decode_gluon) gluon_decode(c, a);
  if (sig.id == OpId::pa_decode_bf16_asm) asm_decode(c, f, a);
  std::vector<int32_t> arange;  // decode without cu_seqlens_q: queries_per_sequence tokens each
  const int cu = sig.index_of(Role::cu_seqlens_q);
  if (cu >= 0 && c.given(cu)) {
    a.cu_seqlens_q = c.view(cu);
    a.max_seqlen_q = decode ? INT32_MAX : c.integer(sig.index_of(Role::max_seqlen_q), 0);
  } else {
    const int64_t n = a.queries_per_sequence, batch = a.q.ndim > 0 ? a.q.shape[0] / n : 0;
    arange.resize(static_cast<size_t>(batch + 1));
    for (int64_t i = 0; i <= batch; ++i) arange[static_cast<size_t>(i)] = static_cast<int32_t>(i * n);
    a.cu_seqlens_q.data = arange.data();
    a.cu_seqlens_q.dtype = DType::i32;
    a.cu_seqlens_q.raw_dtype = to_dlpack(DType::i32);
    a.cu_seqlens_q.device = a.q.device;
    a.cu_seqlens_q.device_id = a.q.device_id;
    a.cu_seqlens_q.ndim = 1;
    a.cu_seqlens_q.shape[0] = batch + 1;
    a.cu_seqlens_q.strides[0] = 1;
    a.max_seqlen_q = a.queries_per_sequence;
    a.uniform_queries = true;
  }
  a.max_seqlen_k = decode ? -1 : c.integer(sig.index_of(Role::max_seqlen_k), 0);
  const int v_ndim = a.v_layout == CacheLayout::vectorized_v ? 5 : 4;
  if (a.q.ndim != 3 || a.v_cache.ndim != v_ndim) validate_paged(a, false);
  if (!a.out.defined())
    outputs(c, f, {a.q.shape[0], a.q.shape[1], cache_address(a.v_cache, a.v_layout).head_dim}, {a.q.shape[1], a.q.shape[0]},
            a.out, a.lse);
  FallbackRun run;
  run.kernel = execute<PagedArgs>(route, c, a, a.q, paged_on_cpu, check_paged);
  // unified_attention and pa_decode_gluon write into their out and return nothing; the others
  // return out (and the LSE).
  run.returns = sig.id == OpId::pa_decode_gluon || (!decode && !batch_prefill) ? Returns::nothing
                : f.return_lse                       ? Returns::out_and_lse
                                                     : Returns::out;
  return run;
}

FallbackRun merge(const Route& route, CallArgs& c) {
  MergeArgs a;
  a.output = view_of(c, Role::output);
  a.prefix_output = view_of(c, Role::prefix_output);
  a.prefix_lse = view_of(c, Role::prefix_lse);
  a.suffix_output = view_of(c, Role::suffix_output);
  a.suffix_lse = view_of(c, Role::suffix_lse);
  a.output_lse = view_of(c, Role::output_lse);
  a.sinks = view_of(c, Role::sinks);
  FallbackRun run;
  run.kernel = execute<MergeArgs>(route, c, a, a.output, cpu::merge_states, validate_merge);
  return run;
}

}  // namespace

FallbackRun run_fallback(const Route& route, CallArgs& call, const CallFeatures& f) {
  switch (call.signature().kind) {
    case OpKind::varlen:
    case OpKind::batch: return varlen(route, call, f);
    case OpKind::paged:
    case OpKind::decode:
    case OpKind::batch_prefill:
    case OpKind::vectorized_decode: return paged(route, call, f);
    case OpKind::merge: return merge(route, call);
  }
  return {};
}

}  // namespace aiter_compat
