#include "aiter_compat/shim/selftest_cases.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "float_convert.hpp"
#include "aiter_compat/gpu_runtime/kernel_table.hpp"
#include "kernel_params.h"

namespace aiter_compat::selftest {
namespace {

// Grouped heads (4 query heads per KV head) and two KV heads: small, but every group boundary
// and head stride is exercised.
constexpr int64_t kHq = 8, kHk = 2, kBlock = 16;

// The 16-bit (or f32) type of a family: its q, out and tiles (the fp8-KV families' tile type).
DType dtype_of_code(int t) {
  return t == AC_DTYPE_F32 ? DType::f32 : t == AC_DTYPE_F16 || t == AC_KTYPE_F16_KV8 ? DType::f16 : DType::bf16;
}

void put(Buffer& b, int64_t i, double v) {
  const float f = static_cast<float>(v);
  switch (b.dtype) {
    case DType::f32: reinterpret_cast<float*>(b.host.data())[i] = f; break;
    case DType::f16: reinterpret_cast<uint16_t*>(b.host.data())[i] = cpu::float_to_f16(f); break;
    case DType::bf16: reinterpret_cast<uint16_t*>(b.host.data())[i] = cpu::float_to_bf16(f); break;
    case DType::i32: reinterpret_cast<int32_t*>(b.host.data())[i] = static_cast<int32_t>(v); break;
    case DType::f8_e4m3fn:
    case DType::f8_e4m3fnuz:
      b.host[static_cast<size_t>(i)] = static_cast<unsigned char>(ac_fp8::from_float(f, b.dtype == DType::f8_e4m3fnuz));
      break;
    default: break;
  }
}

double get(const Buffer& b, int64_t i) {
  switch (b.dtype) {
    case DType::f32: return reinterpret_cast<const float*>(b.host.data())[i];
    case DType::f16: return cpu::f16_to_float(reinterpret_cast<const uint16_t*>(b.host.data())[i]);
    case DType::bf16: return cpu::bf16_to_float(reinterpret_cast<const uint16_t*>(b.host.data())[i]);
    case DType::i32: return reinterpret_cast<const int32_t*>(b.host.data())[i];
    case DType::f8_e4m3fn:
    case DType::f8_e4m3fnuz: return ac_fp8::to_float(b.host[static_cast<size_t>(i)], b.dtype == DType::f8_e4m3fnuz);
    default: return std::numeric_limits<double>::quiet_NaN();
  }
}

Buffer buffer(DType t, std::vector<int64_t> shape) {
  Buffer b;
  b.dtype = t;
  b.shape = std::move(shape);
  b.host.assign(static_cast<size_t>(std::max<int64_t>(b.numel(), 1)) * element_size(t), 0);
  return b;
}

Buffer random(DType t, std::vector<int64_t> shape, std::mt19937& rng, double scale = 1.0) {
  Buffer b = buffer(t, std::move(shape));
  std::normal_distribution<double> dist(0.0, scale);
  for (int64_t i = 0; i < b.numel(); ++i) put(b, i, dist(rng));
  return b;
}

// Positive scales in [lo, hi): the descales and output_scale of the fp8 cases.
Buffer scales(std::vector<int64_t> shape, std::mt19937& rng, double lo, double hi) {
  Buffer b = buffer(DType::f32, std::move(shape));
  std::uniform_real_distribution<double> dist(lo, hi);
  for (int64_t i = 0; i < b.numel(); ++i) put(b, i, dist(rng));
  return b;
}

Buffer ints(const std::vector<int64_t>& values, std::vector<int64_t> shape = {}) {
  Buffer b = buffer(DType::i32, shape.empty() ? std::vector<int64_t>{static_cast<int64_t>(values.size())} : shape);
  for (size_t i = 0; i < values.size(); ++i) put(b, static_cast<int64_t>(i), static_cast<double>(values[i]));
  return b;
}

Buffer poisoned(DType t, std::vector<int64_t> shape) {
  Buffer b = buffer(t, std::move(shape));
  for (int64_t i = 0; i < b.numel(); ++i) put(b, i, std::numeric_limits<double>::quiet_NaN());
  return b;
}

std::vector<int64_t> prefix_sums(const std::vector<int64_t>& lens) {
  std::vector<int64_t> cu{0};
  for (int64_t n : lens) cu.push_back(cu.back() + n);
  return cu;
}

TensorView view(const Buffer& b, const unsigned char* base, DeviceKind device, int id) {
  TensorView v;
  v.data = const_cast<unsigned char*>(base ? base + b.offset : b.host.data());
  v.dtype = b.dtype;
  v.raw_dtype = to_dlpack(b.dtype);
  v.device = base ? device : DeviceKind::cpu;
  v.device_id = base ? id : 0;
  v.ndim = static_cast<int>(b.shape.size());
  int64_t n = 1;
  for (int i = v.ndim - 1; i >= 0; --i) {
    v.shape[i] = b.shape[static_cast<size_t>(i)];
    v.strides[i] = n;
    n *= v.shape[i];
  }
  return v;
}

void lay_out(Case& c) {
  size_t at = 0;
  for (auto& b : c.buffers) {
    b.offset = at;
    at = (at + b.host.size() + 255) / 256 * 256;  // 16-byte rows need aligned starts; 256 keeps them apart
  }
  c.staging_bytes = at;
}

}  // namespace

int64_t Buffer::numel() const {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

std::string to_string(CaseKind k) {
  switch (k) {
    case CaseKind::prefill_varlen: return "prefill (varlen, causal, window 31, ragged with cached prefixes)";
    case CaseKind::decode_varlen: return "decode (varlen, one query per sequence)";
    case CaseKind::extend_paged: return "extend (paged, causal, window 63)";
    case CaseKind::decode_paged: return "decode (paged, window 63, shuffled blocks)";
    case CaseKind::merge: return "merge_attn_states (one state empty in places)";
  }
  return "?";
}

std::vector<CaseKind> case_kinds(int dtype) {
  if (gpu::kv8_type(dtype)) return {CaseKind::extend_paged, CaseKind::decode_paged};  // fp8 caches are paged
  return {CaseKind::prefill_varlen, CaseKind::decode_varlen, CaseKind::extend_paged, CaseKind::decode_paged};
}

Case make_case(CaseKind kind, int dtype, int d) {
  Case c;
  c.kind = kind;
  c.dtype = dtype;
  c.head_dim = d;
  std::mt19937 rng(1234567u + static_cast<unsigned>(kind) * 7919u + static_cast<unsigned>(dtype) * 131u +
                   static_cast<unsigned>(d));
  const DType t = dtype_of_code(dtype);
  // The sinks in the model's dtype (GPT-OSS keeps them in bf16), spread around the logits.
  const DType sink_type = t;
  // An fp8 family's cases: the extend with fp8 e4m3fn queries and cache, per-sequence-and-head
  // k descales and an output_scale; the decode with 16-bit queries over an e4m3fnuz cache. (The
  // fp8 output's store is the host-checked encoder: the outputs here stay 16-bit, so that the
  // bound stays the tile type's.)
  const bool fp8 = gpu::kv8_type(dtype);
  const DType qt = fp8 && kind == CaseKind::extend_paged ? DType::f8_e4m3fn : t;
  const DType kvt = !fp8 ? t : kind == CaseKind::extend_paged ? DType::f8_e4m3fn : DType::f8_e4m3fnuz;
  if (kind == CaseKind::merge) {
    const int64_t tokens = 7;
    c.buffers.push_back(random(t, {tokens, kHq, d}, rng));            // 0 prefix
    c.buffers.push_back(random(t, {tokens, kHq, d}, rng));            // 1 suffix
    Buffer plse = random(DType::f32, {kHq, tokens}, rng, 2.0), slse = random(DType::f32, {kHq, tokens}, rng, 2.0);
    put(plse, 3, -std::numeric_limits<double>::infinity());           // a prefix with no keys
    put(slse, 5, -std::numeric_limits<double>::infinity());
    c.buffers.push_back(plse);                                        // 2
    c.buffers.push_back(slse);                                        // 3
    c.buffers.push_back(random(sink_type, {kHq}, rng));               // 4 sinks
    c.buffers.push_back(poisoned(t, {tokens, kHq, d}));               // 5 output
    c.buffers.push_back(poisoned(DType::f32, {kHq, tokens}));         // 6 output_lse
    c.out = 5, c.lse = 6;
    lay_out(c);
    return c;
  }
  const bool paged = kind == CaseKind::extend_paged || kind == CaseKind::decode_paged;
  const bool decode = kind == CaseKind::decode_varlen || kind == CaseKind::decode_paged;
  // Ragged: a long sequence, one of a single key, and one in between; with a forced split of
  // three the short ones leave splits without keys, as a long neighbour does in real batches.
  // Small enough that the CPU reference (double, obviously right, slow) costs a few ms; the
  // longest sequences still span several row tiles and key tiles.
  const std::vector<int64_t> k_lens = paged ? std::vector<int64_t>{100, 3, 257} : std::vector<int64_t>{29, 1, 140};
  const std::vector<int64_t> q_lens = decode ? std::vector<int64_t>{1, 1, 1}
                                      : paged ? std::vector<int64_t>{9, 3, 17} : std::vector<int64_t>{21, 1, 70};
  const int64_t total_q = prefix_sums(q_lens).back();
  c.max_q = *std::max_element(q_lens.begin(), q_lens.end());
  c.max_k = *std::max_element(k_lens.begin(), k_lens.end());
  c.buffers.push_back(random(qt, {total_q, kHq, d}, rng));  // 0 q
  if (paged) {
    int64_t blocks = 0;
    for (int64_t n : k_lens) blocks += (n + kBlock - 1) / kBlock;
    const int64_t max_blocks = (c.max_k + kBlock - 1) / kBlock;
    c.buffers.push_back(random(kvt, {blocks + 1, kBlock, kHk, d}, rng));  // 1 k_cache (one spare block)
    c.buffers.push_back(random(kvt, {blocks + 1, kBlock, kHk, d}, rng));  // 2 v_cache
    std::vector<int64_t> order(static_cast<size_t>(blocks));
    for (int64_t i = 0; i < blocks; ++i) order[static_cast<size_t>(i)] = i + 1;
    std::shuffle(order.begin(), order.end(), rng);  // blocks out of order, as a cache holds them
    std::vector<int64_t> table(static_cast<size_t>(3 * max_blocks), 0);
    size_t next = 0;
    for (size_t b = 0; b < 3; ++b)
      for (int64_t j = 0; j < (k_lens[b] + kBlock - 1) / kBlock; ++j)
        table[b * static_cast<size_t>(max_blocks) + static_cast<size_t>(j)] = order[next++];
    c.buffers.push_back(ints(prefix_sums(q_lens)));       // 3 cu_seqlens_q
    c.buffers.push_back(ints(k_lens));                    // 4 seqused_k
    c.buffers.push_back(ints(table, {3, max_blocks}));    // 5 block_table
  } else {
    const int64_t total_k = prefix_sums(k_lens).back();
    c.buffers.push_back(random(t, {total_k, kHk, d}, rng));  // 1 k
    c.buffers.push_back(random(t, {total_k, kHk, d}, rng));  // 2 v
    c.buffers.push_back(ints(prefix_sums(q_lens)));          // 3 cu_seqlens_q
    c.buffers.push_back(ints(prefix_sums(k_lens)));          // 4 cu_seqlens_k
    c.buffers.push_back(ints({0}));                          // 5 (unused)
  }
  c.buffers.push_back(random(sink_type, {kHq}, rng));        // 6 sinks
  c.buffers.push_back(poisoned(t, {total_q, kHq, d}));       // 7 out
  c.buffers.push_back(poisoned(DType::f32, {kHq, total_q})); // 8 lse
  c.out = 7, c.lse = 8;
  if (fp8 && kind == CaseKind::extend_paged) {
    c.buffers.push_back(scales({1}, rng, 0.5, 2.0));       // 9 q_descale
    c.buffers.push_back(scales({3, kHk}, rng, 0.5, 2.0));  // 10 k_descale [batch, kv_heads]
    c.buffers.push_back(scales({1}, rng, 0.5, 2.0));       // 11 v_descale
    c.buffers.push_back(scales({1}, rng, 0.5, 2.0));       // 12 output_scale
  }
  lay_out(c);
  return c;
}

void poison_outputs(Case& c) {
  for (int i : {c.out, c.lse})
    if (i >= 0) {
      Buffer& b = c.buffers[static_cast<size_t>(i)];
      for (int64_t j = 0; j < b.numel(); ++j) put(b, j, std::numeric_limits<double>::quiet_NaN());
    }
}

VarlenArgs varlen_args(const Case& c, const unsigned char* base, DeviceKind device, int id) {
  auto v = [&](int i) { return view(c.buffers[static_cast<size_t>(i)], base, device, id); };
  VarlenArgs a;
  a.q = v(0), a.k = v(1), a.v = v(2), a.cu_seqlens_q = v(3), a.cu_seqlens_k = v(4), a.sinks = v(6);
  a.out = v(7), a.lse = v(8);
  a.max_seqlen_q = c.max_q, a.max_seqlen_k = c.max_k;
  a.softmax_scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
  a.causal = true;
  if (c.kind == CaseKind::prefill_varlen) a.window = {31, 0, 0};
  return a;
}

PagedArgs paged_args(const Case& c, const unsigned char* base, DeviceKind device, int id) {
  auto v = [&](int i) { return view(c.buffers[static_cast<size_t>(i)], base, device, id); };
  PagedArgs a;
  a.q = v(0), a.k_cache = v(1), a.v_cache = v(2), a.cu_seqlens_q = v(3), a.seqused_k = v(4), a.block_table = v(5);
  a.sinks = v(6), a.out = v(7), a.lse = v(8);
  a.max_seqlen_q = c.max_q, a.max_seqlen_k = c.max_k;
  a.softmax_scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
  a.causal = true;
  a.window = {63, 0, 0};
  a.uniform_queries = c.kind == CaseKind::decode_paged;
  if (c.buffers.size() > 12) a.q_descale = v(9), a.k_descale = v(10), a.v_descale = v(11), a.output_scale = v(12);
  return a;
}

MergeArgs merge_args(const Case& c, const unsigned char* base, DeviceKind device, int id) {
  auto v = [&](int i) { return view(c.buffers[static_cast<size_t>(i)], base, device, id); };
  MergeArgs a;
  a.prefix_output = v(0), a.suffix_output = v(1), a.prefix_lse = v(2), a.suffix_lse = v(3), a.sinks = v(4);
  a.output = v(5), a.output_lse = v(6);
  return a;
}

double max_error(const Buffer& got, const Buffer& want) {
  double worst = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double w = get(want, i), g = get(got, i);
    const double e = std::isnan(g) && !std::isnan(w) ? std::numeric_limits<double>::infinity()
                                                     : std::abs(g - w) / std::max(1.0, std::abs(w));
    if (!(e <= worst)) worst = std::isnan(e) ? std::numeric_limits<double>::infinity() : std::max(worst, e);
  }
  return worst;
}

double lse_error(const Buffer& got, const Buffer& want) {
  double worst = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double w = get(want, i), g = get(got, i);
    if (std::isfinite(w) != std::isfinite(g) || (!std::isfinite(w) && w != g)) return std::numeric_limits<double>::infinity();
    if (std::isfinite(w)) worst = std::max(worst, std::abs(g - w) / std::max(1.0, std::abs(w)));
  }
  return worst;
}

double bound_for(int dtype) {
  return dtype == AC_DTYPE_F32 ? 1e-4 : dtype == AC_DTYPE_F16 || dtype == AC_KTYPE_F16_KV8 ? 2e-3 : 1e-2;
}

}  // namespace aiter_compat::selftest
