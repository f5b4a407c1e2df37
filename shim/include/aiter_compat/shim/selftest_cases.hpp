#pragma once
// The self-test's fixed cases: small, seeded, and shaped to reach every kernel family the way
// real calls do (sinks, grouped heads, a sliding window, ragged lengths with empty splits, paged
// and contiguous keys, one query per sequence and many). Each case lives in host memory, is
// staged into one device buffer, and gives the same arguments on either side, so the CPU
// reference and a GPU kernel see identical inputs.
#include <cstdint>
#include <string>
#include <vector>

#include "aiter_compat/shim/attention_args.hpp"

namespace aiter_compat::selftest {

struct Buffer {
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  std::vector<unsigned char> host;  // contiguous, row-major
  size_t offset = 0;                // in the device staging buffer (256-byte aligned)
  int64_t numel() const;
};

enum class CaseKind { prefill_varlen, decode_varlen, extend_paged, decode_paged, merge };
std::string to_string(CaseKind k);
// The attention cases of a family type: all four, or the paged two for an fp8 KV cache.
std::vector<CaseKind> case_kinds(int dtype);

struct Case {
  CaseKind kind = CaseKind::prefill_varlen;
  int dtype = 0, head_dim = 0;  // AC_DTYPE_* or AC_KTYPE_*_KV8
  // q, k, v (or the paged caches), cu_seqlens_q, cu_seqlens_k or seqused_k, block_table, sinks,
  // out, lse (and, for the fp8 extend, q_descale, k_descale, v_descale, output_scale); for the
// merge: prefix, suffix, their LSEs, sinks, output, output_lse.
  std::vector<Buffer> buffers;
  int64_t max_q = 0, max_k = 0;
  size_t staging_bytes = 0;
  // Indices into buffers of what the GPU writes and the reference fills (the LSE may be -1).
  int out = -1, lse = -1;
};

// The case, filled from a fixed seed (the same inputs in every process).
Case make_case(CaseKind kind, int dtype, int head_dim);
// Fills the case's outputs with NaN again (a copy of a case whose reference ran, for the GPU).
void poison_outputs(Case& c);

// The arguments over the case's buffers: host memory (base == nullptr) or the device staging
// buffer at `base` on (device, id).
VarlenArgs varlen_args(const Case& c, const unsigned char* base, DeviceKind device, int id);
PagedArgs paged_args(const Case& c, const unsigned char* base, DeviceKind device, int id);
MergeArgs merge_args(const Case& c, const unsigned char* base, DeviceKind device, int id);

// The worst error of `got` against `want` in the GPU suite's units (|got - want| / max(1,
// |want|)); NaN where the reference is finite counts as infinite: an unwritten output is
// poisoned with NaN.
double max_error(const Buffer& got, const Buffer& want);
// The same for an LSE: finite where the reference is finite, -inf where it is, relative error.
double lse_error(const Buffer& got, const Buffer& want);
// What each dtype is allowed (tests/gpu/test_gpu_kernels.py's bounds): 1e-2 bf16, 2e-3 fp16,
// 1e-4 fp32; the LSE 1e-4.
double bound_for(int dtype);
constexpr double kLseBound = 1e-4;

}  // namespace aiter_compat::selftest
