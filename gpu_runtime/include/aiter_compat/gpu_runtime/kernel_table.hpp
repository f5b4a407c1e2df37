#pragma once
// The fallback kernels as data: one row per family (each tiled shape, the direct-load decode,
// the generic kernel, the split merge, merge_attn_states, and the CPU reference), filled from
// the constants the kernels compile with (kernel_params.h). Two questions are asked of a row,
// in the manner of CUTLASS's can_implement:
//   - route_reasons(query): what a call's features show (dtype, head dims, grouping, block
//     size, arch, features such as softcap) — every reason the row cannot take it;
//   - launch_fits(params): the call's actual tensors (alignment, strides, lengths), for the
//     launcher's choice among the rows that routing accepted.
// The generic GPU row fits every launch of a call that any GPU row routes: the launcher never
// refuses what routing accepted.
#include <cstdint>
#include <string>
#include <vector>

#include "kernel_params.h"

namespace aiter_compat::gpu {

// What a kernel may be asked for beyond plain attention, as bits; a row lists those it takes.
enum KernelFeature : uint32_t {
  kSoftcap = 1u << 0,
  kDropout = 1u << 1,
  kBias = 1u << 2,
  kAlibi = 1u << 3,
  kDescale = 1u << 4,          // q_scales, output_scale (the q/k/v descales are taken on 16-bit caches)
  kAttnProbs = 1u << 5,        // return_attn_probs
  kPaddedSeqlens = 1u << 6,    // cu_seqlens_*_padded
  kPagedVarlen = 1u << 7,      // flash_attn_varlen_func with a block_table
  kStreamingSink = 1u << 8,    // window_size's sink_size > 0 (StreamingLLM)
  kBatchVarlen = 1u << 9,      // flash_attn_func with cu_seqlens
  kShuffledCache = 1u << 10,   // unified_attention's skip_reduce
  kVectorizedCache = 1u << 11, // K/V caches not in rows (AITer's 5-D "vectorized" ones, gluon's value cache)
  kTokenScales = 1u << 12,     // fp8 scales per token (pa_decode_gluon's per-token key/value/query scales)
  kLastKernelFeature = kTokenScales,
};
std::string feature_name(KernelFeature f);

enum class KernelOp : uint8_t { attention, split_merge, merge_states };
enum class KernelDevice : uint8_t { gpu, cpu };
enum class KernelId : uint8_t {
  tiled_keys, tiled_wgmma, tiled_rows, decode, generic, split_merge, merge_states, cpu_reference
};

// What routing knows of a call: its features, the kernel's way.
struct KernelQuery {
  KernelOp op = KernelOp::attention;
  int dtype = -1;            // AC_DTYPE_*, -1 for any other
  int head_dim = 0, head_dim_v = 0;
  int q_heads = 0, kv_heads = 0;
  int block_size = 0;        // paged KV only; 0: contiguous
  uint32_t features = 0;     // KernelFeature bits the call asks for
  bool batch_contiguous = true;  // batch layout: every sequence one token stride after the last
  std::string arch;          // of the device the tensors are on ("" for the CPU)
};

struct KernelRow {
  KernelId id;
  std::string name;        // what the probe and explain() report: "tiled_keys", "decode", ...
  std::string summary;
  KernelDevice device;
  KernelOp op;
  std::vector<int> dtypes;       // AC_DTYPE_*
  std::vector<int> head_dims;    // the head dims it is built for; empty: any up to max_head_dim
  int max_head_dim = 0;          // 0: no limit
  bool equal_head_dims = false;  // D == Dv only
  int max_group = 0;             // query heads per KV head; 0: no limit
  uint32_t features = 0;         // KernelFeature bits it takes
  std::vector<std::string> arch_prefixes;  // the archs it is built for start with one of these (none: every arch)
  std::vector<std::string> functions;  // its entry points in each code object built for those archs
  int max_group_elems = 0;       // query heads per KV head x the larger head dim; 0: no limit
  bool built_for(const std::string& arch) const;
  // head_dims and functions on one arch: the RDNA WMMA tiles are built at fewer head dims
  // (tiled_dims_on says why); every other row's are the same on every arch it is built for.
  std::vector<int> head_dims_on(const std::string& arch) const;
  std::vector<std::string> functions_on(const std::string& arch) const;
  std::vector<std::string> route_reasons(const KernelQuery& q) const;
};

// Every row, in the launcher's order of preference within an op (fastest first).
const std::vector<KernelRow>& kernel_rows();
const KernelRow& kernel_row(KernelId id);

// The tiled kernels' shapes on an arch: rows (prefill, extend), keys (decode), wgmma (rows on
// Hopper's warpgroup MMA, sm_90 only); CDNA archs take the MFMA shapes (64-lane waves), RDNA3,
// RDNA4 and gfx1250 their WMMA ones (32-lane waves), others the mma.sync ones. The one spelling of their names, the same on every arch:
// ac_tiled_{rows,keys,wgmma}[_paged]_{bf16,f16}_d{64,128}, and over fp8 caches
// ac_tiled_{rows,keys,wgmma}_paged_{bf16,f16}_kv8_d{64,128}.
bool is_amd_arch(const std::string& arch);
// RDNA3 (gfx11) and RDNA4 (gfx1200, gfx1201): the 16 x 16 x 16 WMMA tiles on 32-lane waves, built
// at fewer head dims (tiled_dims_on; not gfx1250, whose 16 x 16 x 32 tiles take every dim).
bool is_rdna_wmma_arch(const std::string& arch);
// Why a row is off on an arch by the user's choice, or "": AITER_COMPAT_AMD_DIRECT=1 keeps AMD
// GPUs on the direct-load kernels (decode, generic). The MFMA tiled kernels were checked by
// reading their code objects and by a host model of their layouts, but this project has not
// run them on AMD hardware; the switch lets a user step around them. Read on every call (the
// router asks once per call shape, the launcher once per module load).
std::string switched_off(KernelId id, const std::string& arch);
ac_tiled_shape tiled_shape(KernelId id, int head_dim, const std::string& arch);
// twin: the kernel's opt-in twin, built beside it: for "keys", the kernel with the split merge
// folded in (ac_tiled_keys_fold_*, NVIDIA and CDNA: kernels of their own, so that every other
// decode runs without the fold's code); for "wgmma", the producer warpgroup's kernel
// (ac_tiled_wgmma_producer_*, sm_90: kernel_params.h, ac_tiled_wgmma_producer_shape).
std::string tiled_kernel_name(KernelId id, bool paged, int dtype, int head_dim, bool twin = false);
bool builds_folded_keys(const std::string& arch);  // NVIDIA and CDNA (the WMMA tiles keep the merge kernel)
const char* dtype_suffix(int dtype);  // "f32", "f16", "bf16", "f16_kv8", "bf16_kv8"
bool kv8_type(int ktype);             // a family type over an fp8 KV cache (AC_KTYPE_*_KV8)

// Whether a row can launch these parameters (element type `dtype`); tiled and decode rows need
// 16-byte rows and a grid that fits; the generic row takes any call routing accepted.
// `rows`: the largest number of query rows (tokens x heads of a group) of one sequence.
bool launch_fits(KernelId id, const ac_attention_params& p, int dtype, int64_t rows);

}  // namespace aiter_compat::gpu
