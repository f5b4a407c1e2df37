#include "aiter_compat/shim/features.hpp"

#include <algorithm>

#include "aiter_compat/gpu_runtime/kernel_table.hpp"
#include "aiter_compat/shim/errors.hpp"

namespace aiter_compat {
namespace {

[[noreturn]] void bad(const std::string& arg, const std::string& found, const std::string& needed) {
  throw ArgumentError(arg, found, needed);
}

// Bits of the parameters holding non-default values, and the kernel features they ask for.
void mark_nondefault(const CallArgs& call, CallFeatures& f) {
  const OpSignature& sig = call.signature();
  for (size_t i = 0; i < sig.params.size(); ++i)
    if (!call.neutral(static_cast<int>(i))) {
      f.nondefault |= 1u << i;
      f.kernel_features |= sig.params[i].kernel_features;
    }
  if (f.window_sink_size) f.kernel_features |= gpu::kStreamingSink;
}

// Sinks are one logit per head in float32 or the model's 16-bit dtype, on every route (AITer
// converts them to float32 itself); an integer or fp8 tensor is a caller's mistake.
void read_sinks(const CallArgs& call, CallFeatures& f) {
  const int i = call.signature().index_of(Role::sinks);
  f.sinks = i >= 0 && call.given(i);
  if (!f.sinks) return;
  const DType t = call.dtype(i);
  if (!is_float16_or_32(t)) bad("sinks", "dtype " + to_string(t), "float32, bfloat16 or float16");
}

// merge_attn_states: the features are the partial outputs' dtype, device and shape.
CallFeatures merge_features(const CallArgs& call) {
  const OpSignature& sig = call.signature();
  CallFeatures f;
  f.op = OpId::merge_attn_states;
  TensorMeta prefix = call.meta(sig.index_of(Role::prefix_output));
  if (prefix.ndim != 3) bad("prefix_output", std::to_string(prefix.ndim) + " dimensions", "3 ([tokens, heads, head_dim])");
  for (Role r : {Role::output, Role::suffix_output}) {
    TensorMeta m = call.meta(sig.index_of(r));
    if (m.dtype != prefix.dtype || m.device != prefix.device || m.device_id != prefix.device_id)
      bad(sig.name_of(r), to_string(m.dtype) + " on " + to_string(m.device), "prefix_output's dtype and device");
  }
  f.dtype = prefix.dtype;
  f.device = prefix.device;
  f.device_id = static_cast<int16_t>(prefix.device_id);
  f.head_dim_qk = f.head_dim_v = static_cast<int32_t>(prefix.shape[2]);
  f.q_heads = f.kv_heads = static_cast<int32_t>(prefix.shape[1]);
  read_sinks(call, f);
  f.return_lse = call.given(sig.index_of(Role::output_lse));
  mark_nondefault(call, f);
  return f;
}

}  // namespace

CallFeatures features_of(const CallArgs& call) {
  const OpSignature& sig = call.signature();
  if (sig.kind == OpKind::merge) return merge_features(call);
  CallFeatures f;
  f.op = sig.id;
  const bool gluon = sig.kind == OpKind::vectorized_decode;
  const bool paged = sig.kind == OpKind::paged || sig.kind == OpKind::decode || sig.kind == OpKind::batch_prefill || gluon;
  const bool batch = sig.kind == OpKind::batch;
  const int qi = sig.index_of(Role::q), ki = sig.index_of(Role::k), vi = sig.index_of(Role::v);
  const std::string &kname = sig.params[ki].name, &vname = sig.params[vi].name;
  TensorMeta q = call.meta(qi, batch), k = call.meta(ki, batch), v = call.meta(vi, batch);
  f.dtype = q.dtype;
  f.device = q.device;
  f.device_id = static_cast<int16_t>(q.device_id);
  if (is_integer(q.dtype))
    bad("q", "dtype " + to_string(q.dtype), "a floating-point dtype (float16, bfloat16, float32)");
  if (q.ndim < 3 || k.ndim < 3 || v.ndim < 3)
    bad(q.ndim < 3 ? "q" : k.ndim < 3 ? kname : vname, std::to_string(std::min({q.ndim, k.ndim, v.ndim})) + " dimensions",
        "at least 3 ([..., heads, head_dim])");
  f.head_dim_qk = static_cast<int32_t>(q.shape[q.ndim - 1]);
  f.head_dim_v = static_cast<int32_t>(v.shape[v.ndim - 1]);
  f.q_heads = static_cast<int32_t>(q.shape[q.ndim - 2]);
  f.kv_heads = static_cast<int32_t>(k.shape[k.ndim - 2]);
  // pa_decode_bf16_asm's Q [batch, mtp + 1, kv_heads, gqa, head_dim]: its query heads are
  // kv_heads x gqa, its queries per sequence mtp + 1.
  const bool asm_decode = sig.id == OpId::pa_decode_bf16_asm;
  if (asm_decode) {
    if (q.ndim != 5) bad("Q", std::to_string(q.ndim) + " dimensions", "5 ([batch, mtp + 1, kv_heads, gqa, head_dim])");
    f.q_heads = static_cast<int32_t>(std::clamp<int64_t>(q.shape[2] * q.shape[3], 0, INT32_MAX));
    f.query_length = static_cast<int32_t>(std::clamp<int64_t>(q.shape[1], 0, INT32_MAX));
    // AITer reads Q's layout from gqa and mtp, not from its shape: a mismatch is a wrong result
    // on its route, so it is the caller's mistake on every route.
    const int64_t gqa = call.integer(sig.index_of(Role::gqa), 8), mtp = call.integer(sig.index_of(Role::mtp), 0);
    if (gqa != q.shape[3])
      bad("gqa", std::to_string(gqa), "Q's query heads per KV head, Q.shape[3] = " + std::to_string(q.shape[3]));
    if (mtp != q.shape[1] - 1)
      bad("mtp", std::to_string(mtp), "Q's queries per sequence - 1, Q.shape[1] - 1 = " + std::to_string(q.shape[1] - 1));
    if (k.ndim == 5 && k.shape[1] != q.shape[2])
      bad(kname, "kv_heads " + std::to_string(k.shape[1]), "Q's kv_heads, Q.shape[2] = " + std::to_string(q.shape[2]));
  }
  // 5-D "vectorized" caches: k [pages, Hk, D / x, page_size, x], v [pages, Hk, page_size / x,
  // Dv, x] (x = 16 bytes of elements): mha_batch_prefill_func's, unified_attention's with
  // shuffled_kv_cache=True (vLLM on gfx1250, ATOM) and pa_decode_gluon's (whose v may also be
  // [pages, Hk, Dv, page_size]). AITer's layouts; the generic GPU kernel and the CPU reference
  // read them (cache_layout.cpp), the tiled and decode kernels do not.
  const int shuffled_i = sig.index_of(Role::shuffled_cache);
  const bool shuffled = shuffled_i >= 0 && call.flag(shuffled_i);
  const bool vectorized = ((sig.kind == OpKind::batch_prefill || shuffled) && k.ndim == 5 && v.ndim == 5) ||
                          (gluon && k.ndim == 5 && (v.ndim == 5 || (v.ndim == 4 && !asm_decode)));
  if (shuffled && !vectorized)
    bad(k.ndim != 5 ? kname : vname, std::to_string(k.ndim != 5 ? k.ndim : v.ndim) + " dimensions with shuffled_kv_cache=True",
        "5 (k [num_blocks, kv_heads, head_dim / x, block_size, x], v [num_blocks, kv_heads, block_size / x, head_dim, x])");
  if (gluon && !vectorized)
    bad(k.ndim != 5 ? kname : vname, std::to_string(k.ndim != 5 ? k.ndim : v.ndim) + " dimensions",
        k.ndim != 5   ? "5 ([num_blocks, kv_heads, head_dim / x, block_size, x])"
        : asm_decode ? "5 ([num_blocks, kv_heads, block_size / x, head_dim, x])"
                      : "5 ([num_blocks, kv_heads, block_size / x, head_dim, x]) or 4 ([num_blocks, kv_heads, head_dim, block_size])");
  if (vectorized) {
    f.head_dim_v = static_cast<int32_t>(v.ndim == 5 ? v.shape[3] : v.shape[2]);
    f.kv_heads = static_cast<int32_t>(k.shape[1]);
    f.kernel_features |= gpu::kVectorizedCache;
  }
  if (f.kv_heads <= 0 || f.q_heads % f.kv_heads != 0)
    bad(kname, std::to_string(f.kv_heads) + " heads for q's " + std::to_string(f.q_heads),
        "a divisor of q's head count (grouped-query attention)");
  // k and v alike; q's dtype, or (the paged ops) an fp8 e4m3 cache under 16-bit queries.
  const bool fp8_cache = paged && is_e4m3(k.dtype) && is_16bit_float(q.dtype);
  if (k.dtype != q.dtype && !fp8_cache)
    bad(kname, "dtype " + to_string(k.dtype),
        "q's dtype " + to_string(q.dtype) +
            (paged ? ", or float8_e4m3fn / float8_e4m3fnuz under float16 or bfloat16 queries" : ""));
  if (v.dtype != k.dtype) bad(vname, "dtype " + to_string(v.dtype), kname + "'s dtype " + to_string(k.dtype));
  f.kv_dtype = k.dtype;
  if (int oi = sig.index_of(Role::out); oi >= 0 && call.given(oi)) f.out_dtype = call.meta(oi, batch).dtype;
  if (k.device != q.device || v.device != q.device || k.device_id != q.device_id || v.device_id != q.device_id)
    bad(k.device != q.device || k.device_id != q.device_id ? kname : vname, "another device",
        "q's device " + to_string(q.device) + ":" + std::to_string(q.device_id));
  if (vectorized) f.block_size = static_cast<int32_t>(k.shape[3]);
  else if (sig.kind == OpKind::batch_prefill && k.ndim == 3) f.block_size = 1;  // [slots, Hk, D]: pages of one
  else if (paged) f.block_size = static_cast<int32_t>(k.shape[1]);
  if (batch) {
    f.batch_contiguous = q.batch_contiguous && k.batch_contiguous && v.batch_contiguous;
    if (int oi = sig.index_of(Role::out); oi >= 0 && call.given(oi)) f.batch_contiguous &= call.meta(oi, true).batch_contiguous;
  }

  WindowValue w = call.window(sig.index_of(Role::window));
  f.window_arity = static_cast<int8_t>(w.arity);
  const int ci = sig.index_of(Role::causal);
  f.causal = sig.kind == OpKind::decode || gluon ? true : ci >= 0 && call.flag(ci);
  f.window_left = w.left >= 0;
  if (int i = sig.index_of(Role::sliding_window); i >= 0) f.window_left = call.integer(i, 0) > 0;
  if (int i = sig.index_of(Role::query_length); i >= 0)
    f.query_length = static_cast<int32_t>(std::clamp<int64_t>(call.integer(i, 1), INT32_MIN, INT32_MAX));
  f.window_right = w.right >= 0 && !(f.causal && w.right == 0);
  f.window_sink_size = w.sink_size > 0;
  if (int i = sig.index_of(Role::sink_size); i >= 0) f.window_sink_size = call.integer(i, 0) > 0;
  read_sinks(call, f);
  if (int i = sig.index_of(Role::dropout); i >= 0) f.dropout = call.number(i) != 0.0;
  f.bias = !call.neutral(sig.index_of(Role::bias));
  if (int i = sig.index_of(Role::alibi); i >= 0) f.alibi = call.given(i);
  if (int i = sig.index_of(Role::softcap); i >= 0) f.softcap = call.number(i) != 0.0;
  f.return_lse = call.wants_lse();
  if (int i = sig.index_of(Role::return_attn_probs); i >= 0) f.return_attn_probs = call.flag(i);
  for (Role d : {Role::q_descale, Role::k_descale, Role::v_descale, Role::descale})
    if (int i = sig.index_of(d); i >= 0) f.descale = f.descale || call.given(i);
  // pa_decode_gluon's fp8 scales per token (more than one element: key_scale [blocks, Hk,
  // block_size, 1], query_scale [tokens, Hq, 1]); its per-tensor ones are the descales above.
  if (gluon)
    for (Role d : {Role::q_descale, Role::k_descale, Role::v_descale})
      if (int i = sig.index_of(d); i >= 0 && call.given(i)) {
        const TensorMeta m = call.meta(i);
        int64_t n = 1;
        for (int j = 0; j < m.ndim; ++j) n *= m.shape[j];
        if (n != 1) f.kernel_features |= gpu::kTokenScales;
      }
  mark_nondefault(call, f);
  return f;
}

int family_type(DType q, DType kv, DType out) {
  if (is_e4m3(kv)) {
    const DType tile = is_16bit_float(q) ? q : is_16bit_float(out) ? out : DType::bf16;
    return tile == DType::f16 ? AC_KTYPE_F16_KV8 : AC_KTYPE_BF16_KV8;
  }
  if (kv != q) return -1;
  return q == DType::f32 ? AC_DTYPE_F32 : q == DType::f16 ? AC_DTYPE_F16 : q == DType::bf16 ? AC_DTYPE_BF16 : -1;
}

int family_type(const CallFeatures& f) {
  const DType kv = f.kv_dtype == DType::unsupported ? f.dtype : f.kv_dtype;
  // fp8 caches are the paged ops' (unified_attention's and the paged decode's) alone.
  const OpKind kind = signature(f.op).kind;
  if (is_e4m3(kv) && kind != OpKind::paged && kind != OpKind::decode && kind != OpKind::batch_prefill &&
      kind != OpKind::vectorized_decode)
    return -1;
  return family_type(f.dtype, kv, f.out_dtype);
}

std::vector<std::pair<std::string, std::string>> CallFeatures::describe() const {
  auto yes = [](bool b) { return std::string(b ? "yes" : "no"); };
  std::string window = !window_left && !window_right ? "none"
                       : std::string("left ") + (window_left ? "set" : "unbounded") + ", right " +
                             (window_right ? "set" : "unbounded");
  if (window_sink_size) window += ", sink_size > 0";
  std::vector<std::pair<std::string, std::string>> rows = {
      {"op", to_string(op)},
      {"dtype", to_string(dtype) + (kv_dtype != DType::unsupported && kv_dtype != dtype ? " (KV cache " + to_string(kv_dtype) + ")" : "") +
                    (out_dtype != DType::unsupported && out_dtype != dtype ? " (out " + to_string(out_dtype) + ")" : "")},
      {"device", to_string(device) + (device == DeviceKind::cpu ? "" : ":" + std::to_string(device_id))},
      {"head_dim (q/k, v)", std::to_string(head_dim_qk) + ", " + std::to_string(head_dim_v)},
      {"heads (q, kv)", std::to_string(q_heads) + ", " + std::to_string(kv_heads)},
      {"causal", yes(causal)},
      {"window", window},
      {"sinks", yes(sinks)},
      {"dropout", yes(dropout)},
      {"bias / alibi", yes(bias) + " / " + yes(alibi)},
      {"softcap", yes(softcap)},
      {"return_lse", yes(return_lse)},
  };
  if (block_size) rows.push_back({"block_size", std::to_string(block_size)});
  if (query_length != 1) rows.push_back({"query_length", std::to_string(query_length)});
  if (return_attn_probs) rows.push_back({"return_attn_probs", "yes"});
  if (descale) rows.push_back({"descale / q_scales", "given"});
  if (!batch_contiguous) rows.push_back({"batch layout", "sequences not one token stride apart"});
  std::string given;
  const auto& sig = signature(op);
  for (size_t i = 0; i < sig.params.size() && i < 32; ++i)
    if ((nondefault >> i) & 1u && sig.params[i].default_kind != DefaultKind::value)
      given += (given.empty() ? "" : ", ") + sig.params[i].name;
  rows.push_back({"optional arguments given", given.empty() ? "none" : given});
  return rows;
}

size_t CallFeaturesHash::operator()(const CallFeatures& f) const {
  // FNV-1a over the fields; CallFeatures is small and hashed once per call.
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t v) {
    h ^= v;
    h *= 1099511628211ull;
  };
  mix(static_cast<uint64_t>(f.kv_dtype) | static_cast<uint64_t>(f.out_dtype) << 8);
  mix(static_cast<uint64_t>(f.op) | static_cast<uint64_t>(f.dtype) << 8 | static_cast<uint64_t>(f.device) << 16 |
      static_cast<uint64_t>(static_cast<uint8_t>(f.window_arity)) << 24 |
      static_cast<uint64_t>(static_cast<uint16_t>(f.device_id)) << 32);
  mix(static_cast<uint64_t>(static_cast<uint32_t>(f.head_dim_qk)) | static_cast<uint64_t>(static_cast<uint32_t>(f.head_dim_v)) << 32);
  mix(static_cast<uint64_t>(static_cast<uint32_t>(f.q_heads)) | static_cast<uint64_t>(static_cast<uint32_t>(f.kv_heads)) << 32);
  uint64_t bits = 0;
  for (bool b : {f.causal, f.window_left, f.window_right, f.window_sink_size, f.sinks, f.dropout, f.bias, f.alibi,
                 f.softcap, f.return_lse, f.return_attn_probs, f.descale, f.batch_contiguous})
    bits = bits << 1 | static_cast<uint64_t>(b);
  mix(bits | static_cast<uint64_t>(static_cast<uint32_t>(f.block_size)) << 16);
  mix(static_cast<uint64_t>(static_cast<uint32_t>(f.query_length)));
  mix(f.nondefault | static_cast<uint64_t>(f.kernel_features) << 32);
  return static_cast<size_t>(h);
}

}  // namespace aiter_compat
