#include "aiter_compat/gpu_runtime/kernel_table.hpp"

#include <algorithm>
#include <cstdlib>

namespace aiter_compat::gpu {
namespace {

bool contains(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

std::string list(const std::vector<int>& v, const char* sep = "/") {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : sep) + std::to_string(x);
  return s;
}

std::string dtype_names(const std::vector<int>& v) {
  static const char* const names[] = {"float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e4m3fnuz",
                                      "float16 over an fp8 KV cache", "bfloat16 over an fp8 KV cache"};
  std::string s;
  for (int t : v) s += (s.empty() ? "" : ", ") + std::string(names[t]);
  return s;
}

// The tiled and decode kernels' types: 16-bit throughout, or 16-bit tiles over an fp8 KV cache
// (paged only: unified_attention's and the paged decode's caches).
constexpr int kHalf[] = {AC_DTYPE_BF16, AC_DTYPE_F16, AC_KTYPE_BF16_KV8, AC_KTYPE_F16_KV8};
constexpr int kDims[] = {64, 128};
// The row tiles also take head dim 256 (Gemma's): the keys shape's K/V tile and its four-warp
// epilogue do not fit gfx90a's and gfx942's 64 KiB of LDS there, and warpgroup_ops.hpp's MMAs
// are 64 or 128 wide. Calls of up to 16 rows at 256 take the row tiles (launch_fits).
constexpr int kRowDims[] = {64, 128, 256};

bool keys_shape_built(int head_dim) { return std::find(std::begin(kDims), std::end(kDims), head_dim) != std::end(kDims); }

std::vector<int> tiled_dims(KernelId id) {
  if (id == KernelId::tiled_rows) return {std::begin(kRowDims), std::end(kRowDims)};
  return {std::begin(kDims), std::end(kDims)};
}

// The WMMA tiles hold twice an MFMA lane's operands (32-lane waves) in 256 VGPRs and no AGPRs;
// RDNA3 also holds each B operand twice (both halves of the wave). Built only where the code
// objects show no scratch (tests/cpp/amd_code_objects_test.cpp): RDNA3 at head dim 64, RDNA4 at
// 64 and 128. At 256 the output alone is half of the registers. The other dims take the
// direct-load kernels there.
std::vector<int> tiled_dims_on(KernelId id, const std::string& arch) {
  if (!is_rdna_wmma_arch(arch)) return tiled_dims(id);
  if (arch.rfind("gfx11", 0) == 0) return {64};
  return {64, 128};
}

// The tiled kernels' names at the given head dims (every dim the family has, by default); fold:
// the "keys" kernels' folded twins.
std::vector<std::string> tiled_names(KernelId id, const std::vector<int>& dims, bool fold = false) {
  std::vector<std::string> names;
  for (bool paged : {false, true})
    for (int t : kHalf)
      for (int d : dims)
        if (paged || !kv8_type(t)) names.push_back(tiled_kernel_name(id, paged, t, d, fold));
  return names;
}
std::vector<std::string> tiled_names(KernelId id) { return tiled_names(id, tiled_dims(id)); }

// The "keys" kernels, and where they are built their twins with the split merge folded in.
std::vector<std::string> keys_names() {
  std::vector<std::string> names = tiled_names(KernelId::tiled_keys);
  for (auto& name : tiled_names(KernelId::tiled_keys, tiled_dims(KernelId::tiled_keys), true)) names.push_back(name);
  return names;
}

std::vector<std::string> per_type(const char* prefix, std::vector<int> types, const std::string& suffix = "") {
  std::vector<std::string> names;
  for (int t : types) names.push_back(std::string(prefix) + dtype_suffix(t) + suffix);
  return names;
}

// The generic kernel per type, over row caches and over split layouts (kernel_params.h): two
// kernels, so that the rows' registers are not the split addressing's.
std::vector<std::string> generic_names(const std::vector<int>& types) {
  std::vector<std::string> names = per_type("ac_attention_", types), split = per_type("ac_attention_split_", types);
  names.insert(names.end(), split.begin(), split.end());
  return names;
}

std::vector<std::string> decode_names() {
  std::vector<std::string> names;
  for (int t : kHalf)  // (the decode kernel is paged: its fp8-KV variants too)
    for (int d : kDims) names.push_back(std::string("ac_decode_") + dtype_suffix(t) + "_d" + std::to_string(d));
  return names;
}

// Every requirement of the paged-attention and merge kernels the host can see at launch: 16-byte
// rows of q, k and v (16-bit elements, 8-element strides, aligned pointers).
bool aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }
// (An fp8 row's 8-element chunks are 8 bytes: the same element strides keep them aligned.)
bool rows_load_16_bytes(const ac_attention_params& p, int dtype) {
  const bool strides = p.q_tok % 8 == 0 && p.q_head % 8 == 0 && p.k_tok % 8 == 0 && p.k_slot % 8 == 0 &&
                       p.k_head % 8 == 0 && p.v_tok % 8 == 0 && p.v_slot % 8 == 0 && p.v_head % 8 == 0;
  const bool typed = dtype == AC_DTYPE_BF16 || dtype == AC_DTYPE_F16 || (kv8_type(dtype) && p.paged);
  return typed && (p.head_dim == 64 || p.head_dim == 128 || p.head_dim == 256) && p.head_dim_v == p.head_dim && aligned16(p.q) &&
         aligned16(p.k) && aligned16(p.v) && strides;
}

// The tiled kernels address K, V and the block table with 32-bit strides in bytes (kv_rows.hpp:
// page32, bytes32, one wide multiply-add per row where 64-bit element offsets took many more
// instructions): each stride, times the largest step it is taken at, must fit 32 bits. Any real
// cache does (a page would be 4 GiB); a call that does not goes to the decode or generic kernel.
bool strides_fit_32_bits(const ac_attention_params& p, int dtype) {
  const int64_t elem = kv8_type(dtype) ? 1 : 2;
  const auto fits = [](int64_t stride, int64_t times) { return stride >= 0 && stride <= int64_t{0xffffffff} / times; };
  if (!fits(p.k_tok, elem) || !fits(p.v_tok, elem)) return false;
  if (!p.paged) return true;
  const int64_t slots = std::max<int64_t>(p.block_size, 1);
  return fits(p.k_slot, elem * slots) && fits(p.v_slot, elem * slots) && fits(p.bt_col, 4);
}

}  // namespace

std::string feature_name(KernelFeature f) {
  switch (f) {
    case kSoftcap: return "softcap";
    case kDropout: return "dropout";
    case kBias: return "an attention bias";
    case kAlibi: return "ALiBi slopes";
    case kDescale: return "q_scales (micro-scaled fp4 queries)";
    case kAttnProbs: return "returned attention probabilities";
    case kPaddedSeqlens: return "padded cu_seqlens";
    case kPagedVarlen: return "a block table (paged KV) in flash_attn_varlen_func";
    case kStreamingSink: return "StreamingLLM's sink_size (window_size[2] > 0)";
    case kBatchVarlen: return "cu_seqlens in flash_attn_func";
    case kShuffledCache: return "skip_reduce (partial outputs left unreduced)";
    case kTokenScales: return "fp8 scales per token (more than one element in key_scale, value_scale or query_scale)";
    case kVectorizedCache: return "K/V caches other than [pages, page_size, kv_heads, head_dim] (AITer's 5-D vectorized ones)";
  }
  return "?";
}

bool kv8_type(int ktype) { return ktype == AC_KTYPE_F16_KV8 || ktype == AC_KTYPE_BF16_KV8; }

const char* dtype_suffix(int dtype) {
  switch (dtype) {
    case AC_DTYPE_F32: return "f32";
    case AC_DTYPE_F16: return "f16";
    case AC_KTYPE_F16_KV8: return "f16_kv8";
    case AC_KTYPE_BF16_KV8: return "bf16_kv8";
    default: return "bf16";
  }
}

bool is_amd_arch(const std::string& arch) { return arch.rfind("gfx", 0) == 0; }
static bool is_gfx1250(const std::string& arch) { return arch.rfind("gfx125", 0) == 0; }
// RDNA3 (gfx11) and RDNA4 (gfx12, not gfx1250): WMMA tiles on 32-lane waves.
bool is_rdna_wmma_arch(const std::string& arch) {
  return arch.rfind("gfx11", 0) == 0 || (arch.rfind("gfx12", 0) == 0 && !is_gfx1250(arch));
}

ac_tiled_shape tiled_shape(KernelId id, int head_dim, const std::string& arch) {
  if (is_gfx1250(arch))
    return id == KernelId::tiled_keys ? ac_tiled_keys_shape_gfx1250(head_dim) : ac_tiled_rows_shape_gfx1250(head_dim);
  if (is_rdna_wmma_arch(arch))
    return id == KernelId::tiled_keys ? ac_tiled_keys_shape_rdna(head_dim) : ac_tiled_rows_shape_rdna(head_dim);
  if (is_amd_arch(arch)) {
    if (id != KernelId::tiled_keys) return ac_tiled_rows_shape_amd(head_dim);
    return arch.rfind("gfx950", 0) == 0 ? ac_tiled_keys_shape_gfx950(head_dim) : ac_tiled_keys_shape_amd(head_dim);
  }
  return id == KernelId::tiled_keys ? ac_tiled_keys_shape(head_dim)
         : id == KernelId::tiled_wgmma ? ac_tiled_wgmma_shape(head_dim)
                                       : ac_tiled_rows_shape(head_dim);
}

// Where the "keys" tiles have room for the fold's buffers (kernel_params.h: NVIDIA and CDNA; the
// WMMA tiles keep the merge kernel), their folded twins are built too (tiled_attention.hpp).
bool builds_folded_keys(const std::string& arch) {
  return tiled_shape(KernelId::tiled_keys, 64, arch).folds_split_merge() && tiled_shape(KernelId::tiled_keys, 128, arch).folds_split_merge();
}

bool is_tiled(KernelId id) { return id == KernelId::tiled_keys || id == KernelId::tiled_rows || id == KernelId::tiled_wgmma; }

std::string switched_off(KernelId id, const std::string& arch) {
  const char* v = std::getenv("AITER_COMPAT_AMD_DIRECT");
  if (is_tiled(id) && is_amd_arch(arch) && v && *v && std::string(v) != "0")
    return "AITER_COMPAT_AMD_DIRECT=" + std::string(v) + " keeps AMD GPUs on the direct-load kernels";
  return "";
}

std::vector<int> KernelRow::head_dims_on(const std::string& arch) const {
  return is_tiled(id) && is_rdna_wmma_arch(arch) ? tiled_dims_on(id, arch) : head_dims;
}

std::vector<std::string> KernelRow::functions_on(const std::string& arch) const {
  if (is_tiled(id) && is_rdna_wmma_arch(arch)) return tiled_names(id, tiled_dims_on(id, arch));
  if (id == KernelId::tiled_keys && !builds_folded_keys(arch)) return tiled_names(id);  // no folded twins (gfx1250)
  return functions;
}

bool KernelRow::built_for(const std::string& arch) const {
  if (device != KernelDevice::gpu) return false;
  if (arch_prefixes.empty()) return true;
  return std::any_of(arch_prefixes.begin(), arch_prefixes.end(), [&](const std::string& a) { return arch.rfind(a, 0) == 0; });
}

std::string tiled_kernel_name(KernelId id, bool paged, int dtype, int head_dim, bool twin) {
  const char* shape = id == KernelId::tiled_keys    ? (twin ? "keys_fold" : "keys")
                      : id == KernelId::tiled_wgmma ? (twin ? "wgmma_producer" : "wgmma")
                                                    : "rows";
  return std::string("ac_tiled_") + shape + (paged ? "_paged_" : "_") + dtype_suffix(dtype) + "_d" +
         std::to_string(head_dim);
}

const std::vector<KernelRow>& kernel_rows() {
  using K = KernelId;
  static const std::vector<KernelRow> rows = [] {
    const std::vector<int> half(std::begin(kHalf), std::end(kHalf)), dims(std::begin(kDims), std::end(kDims));
    const std::vector<int> all = {AC_DTYPE_F32, AC_DTYPE_F16, AC_DTYPE_BF16, AC_KTYPE_BF16_KV8, AC_KTYPE_F16_KV8};
    const std::vector<int> plain = {AC_DTYPE_F32, AC_DTYPE_F16, AC_DTYPE_BF16};  // merge_attn_states' types
    std::vector<KernelRow> r;
    // mma.sync, MFMA (CDNA), WMMA (RDNA3, RDNA4: 16 x 16 x 16; gfx1250: 16 x 16 x 32).
    const std::vector<std::string> matrix_archs = {"sm_", "gfx90a", "gfx942", "gfx950", "gfx11", "gfx1200", "gfx1201", "gfx1250"};
    r.push_back({K::tiled_keys, "tiled_keys", "matrix-instruction tiles (mma.sync, MFMA, WMMA), all warps on one 16-row tile (decode)",
                 KernelDevice::gpu, KernelOp::attention, half, dims, 0, true, 0, kSoftcap, matrix_archs, keys_names()});
    r.push_back({K::tiled_wgmma, "tiled_wgmma", "row tiles on Hopper's warpgroup MMA (prefill, extend)",
                 KernelDevice::gpu, KernelOp::attention, half, dims, 0, true, 0, kSoftcap, {"sm_90"}, tiled_names(K::tiled_wgmma)});
    r.push_back({K::tiled_rows, "tiled_rows", "row tiles on mma.sync, MFMA or WMMA (prefill, extend)", KernelDevice::gpu,
                 KernelOp::attention, half, tiled_dims(K::tiled_rows), 0, true, 0, kSoftcap, matrix_archs, tiled_names(K::tiled_rows)});
    r.push_back({K::decode, "decode", "direct loads, one query per sequence over a paged cache", KernelDevice::gpu,
                 KernelOp::attention, half, dims, 0, true, AC_DECODE_MAX_GROUP, kSoftcap, {}, decode_names()});
    r.push_back({K::generic, "generic", "direct loads, any call a GPU route takes", KernelDevice::gpu,
                 KernelOp::attention, all, {}, AC_MAX_HEAD_DIM, false, AC_MAX_GROUP, kSoftcap | kVectorizedCache, {},
                 generic_names(all)});
    r.back().max_group_elems = AC_MAX_GROUP_ELEMS;  // a block holds its group's queries and outputs
    r.push_back({K::split_merge, "split_merge", "combines split-KV partial results, the sink entered once",
                 KernelDevice::gpu, KernelOp::split_merge, all, {}, 0, false, 0, 0, {}, per_type("ac_merge_", all)});
    r.back().functions.push_back("ac_zero_counts");  // the merge folded into the "keys" split kernels
    r.push_back({K::merge_states, "merge_states", "merge_attn_states with the sink entered once", KernelDevice::gpu,
                 KernelOp::merge_states, plain, {}, 0, false, 0, 0, {}, per_type("ac_merge_states_", plain)});
    // (pa_decode_bf16_asm's split rows: a copy out of whole rows for AITer's reduce, no family of its own)
    r.back().functions.push_back("ac_split_rows");
    r.push_back({K::cpu_reference, "cpu_reference", "CPU reference kernels, double accumulation", KernelDevice::cpu,
                 KernelOp::attention, all, {}, 0, false, 0, kSoftcap | kVectorizedCache, {}, {}});
    return r;
  }();
  return rows;
}

const KernelRow& kernel_row(KernelId id) { return kernel_rows()[static_cast<size_t>(id)]; }

std::vector<std::string> KernelRow::route_reasons(const KernelQuery& q) const {
  std::vector<std::string> why;
  const bool cpu_merge = device == KernelDevice::cpu && q.op == KernelOp::merge_states;  // the CPU row does both
  if (q.op != op && !cpu_merge) {
    why.push_back(op == KernelOp::merge_states ? "merges attention states only" : "computes attention, not a merge");
    return why;
  }
  if (device == KernelDevice::gpu && !built_for(q.arch)) {
    std::string only;
    for (const auto& a : arch_prefixes) only += (only.empty() ? "" : ", ") + a + "*";
    why.push_back("not built for " + (q.arch.empty() ? std::string("this device") : q.arch) + " (only " + only + ")");
  }
  if (device == KernelDevice::gpu) {
    std::string off = switched_off(id, q.arch);
    if (!off.empty()) why.push_back(std::move(off));
  }
  if (!contains(dtypes, q.dtype)) why.push_back("takes " + dtype_names(dtypes));
  if (q.op == KernelOp::attention) {
    const std::vector<int> dims = head_dims_on(q.arch);
    const bool dims_ok = dims.empty() ? max_head_dim == 0 || (q.head_dim <= max_head_dim && q.head_dim_v <= max_head_dim)
                                      : contains(dims, q.head_dim) && contains(dims, q.head_dim_v);
    if (!dims_ok || (equal_head_dims && q.head_dim != q.head_dim_v))
      why.push_back("head dims " + std::to_string(q.head_dim) + "/" + std::to_string(q.head_dim_v) + ": takes " +
                    (dims.empty() ? "up to " + std::to_string(max_head_dim) : list(dims, " and ")) +
                    (dims != head_dims ? " on " + q.arch + " (WMMA tiles: registers)" : "") +
                    (equal_head_dims ? " (q/k and v equal)" : ""));
    if (max_group && q.kv_heads > 0 && q.q_heads / q.kv_heads > max_group)
      why.push_back(std::to_string(q.q_heads / q.kv_heads) + " query heads per KV head: at most " +
                    std::to_string(max_group));
    const int widest = q.head_dim > q.head_dim_v ? q.head_dim : q.head_dim_v;
    if (max_group_elems && q.kv_heads > 0 && q.q_heads / q.kv_heads * widest > max_group_elems)
      why.push_back(std::to_string(q.q_heads / q.kv_heads) + " query heads per KV head x head dim " +
                    std::to_string(widest) + " = " + std::to_string(q.q_heads / q.kv_heads * widest) + ": at most " +
                    std::to_string(max_group_elems));
    if (device == KernelDevice::gpu && !q.batch_contiguous)
      why.push_back("batch layout with sequences not one token stride apart (q/k/v/out strides)");
  }
  for (uint32_t bit = 1; bit <= kLastKernelFeature; bit <<= 1)
    if ((q.features & bit) && !(features & bit)) why.push_back("takes no " + feature_name(static_cast<KernelFeature>(bit)));
  return why;
}

bool launch_fits(KernelId id, const ac_attention_params& p, int dtype, int64_t rows) {
  // The tiled and decode kernels apply output_scale over fp8 caches only (their 16-bit versions
  // keep the registers they had without it); the generic kernel takes it everywhere.
  if (p.out_scale && !kv8_type(dtype) && id != KernelId::generic) return false;
  // Caches in other layouts than rows (the 5-D ones, gluon's value cache): the generic kernel.
  if (p.kv_layout != AC_LAYOUT_ROWS && id != KernelId::generic) return false;
  switch (id) {
    case KernelId::tiled_keys:
    case KernelId::tiled_wgmma:
    case KernelId::tiled_rows:
      // "keys" holds up to 16 rows in one tile; the row shapes take the rest. The tiled kernels
      // also store 16 bytes of the output at a time; grid z holds the sequences.
      // (At a head dim with no keys shape built, 256, the row shapes take every call.)
      return ((id == KernelId::tiled_keys) == (rows <= 16) || (id == KernelId::tiled_rows && !keys_shape_built(p.head_dim))) &&
             rows_load_16_bytes(p, dtype) && strides_fit_32_bits(p, dtype) && aligned16(p.out) &&
             p.out_tok % 8 == 0 && p.out_head % 8 == 0 && p.batch <= 65535;
    case KernelId::decode:
      return p.paged && p.uniform_q == 1 && p.hq / p.hk <= AC_DECODE_MAX_GROUP && rows_load_16_bytes(p, dtype);
    case KernelId::generic: {
      // Its block holds the group's queries and outputs (kernel_params.h). The router gives the
      // GPU only calls this row takes (router.cpp: gpu_candidate); a direct launch that skipped
      // it (run_gpu) must still not reach a generic block too small for its group.
      const int64_t group = p.hk > 0 ? p.hq / p.hk : 0;
      const int64_t widest = std::max(p.head_dim, p.head_dim_v);
      return group <= AC_MAX_GROUP && group * widest <= AC_MAX_GROUP_ELEMS && widest <= AC_MAX_HEAD_DIM;
    }
    default: return false;
  }
}

}  // namespace aiter_compat::gpu
