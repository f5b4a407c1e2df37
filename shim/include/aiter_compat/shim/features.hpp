#pragma once
// What a call looks like to the router: the few facts that decide where it can run. Equal
// features mean an equal route, so the router decides once per distinct value and looks it up.
// One function reads them from a call, for both fronts.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "aiter_compat/shim/call_args.hpp"
#include "aiter_compat/shim/signatures.hpp"
#include "aiter_compat/shim/tensor.hpp"

namespace aiter_compat {

struct CallFeatures {
  OpId op = OpId::flash_attn_varlen_func;
  DType dtype = DType::unsupported;      // q's
  DType kv_dtype = DType::unsupported;   // k's and v's (q's, or an fp8 cache under 16-bit queries)
  DType out_dtype = DType::unsupported;  // out's when the call gives one (unsupported: none given)
  DeviceKind device = DeviceKind::cpu;
  int16_t device_id = 0;
  int32_t head_dim_qk = 0, head_dim_v = 0;
  int32_t q_heads = 0, kv_heads = 0;
  int32_t block_size = 0;      // paged KV only
  int32_t query_length = 1;    // queries per sequence where the op takes it as a count (pa_decode_gluon)
  int8_t window_arity = 0;     // length of the window_size the caller gave (0: not given)
  bool causal = false;
  bool window_left = false, window_right = false;  // a bound is set (causal's implicit right=0 aside)
  bool window_sink_size = false;                   // StreamingLLM sink_size > 0
  bool sinks = false;
  bool dropout = false, bias = false, alibi = false, softcap = false;
  bool return_lse = false, return_attn_probs = false;
  bool descale = false;        // q/k/v descale or q_scales given (fp8 paths)
  bool batch_contiguous = true;  // flash_attn_func: each sequence one token stride after the last
  uint32_t nondefault = 0;     // bit i: parameter i of the op's signature has a non-default value
  uint32_t kernel_features = 0;  // gpu::KernelFeature bits the call's non-default values ask for

  bool operator==(const CallFeatures&) const = default;
  std::vector<std::pair<std::string, std::string>> describe() const;  // rows for error tables
};

struct CallFeaturesHash {
  size_t operator()(const CallFeatures& f) const;
};

// The kernel family type (AC_DTYPE_* or AC_KTYPE_*_KV8; -1 for none) of a call with these dtypes:
// an fp8 KV cache is read into tiles of q's 16-bit type, or (fp8 queries) of out's, else bf16.
int family_type(DType q, DType kv, DType out);
int family_type(const CallFeatures& f);

// The features of a call. Throws ArgumentError when a tensor's metadata is unusable (not a
// tensor, too few dimensions, mismatched dtypes or devices, a bad head grouping or window).
CallFeatures features_of(const CallArgs& call);

}  // namespace aiter_compat
