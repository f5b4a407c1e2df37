#pragma once
// The public operations with AITer's newest signatures, as data: parameter names in order and
// what counts as each one's default. The fronts parse calls with this table, and the router
// decides per parameter whether an AITer release that lacks it can still be called.
#include <cstdint>
#include <string>
#include <vector>

namespace aiter_compat {

enum class OpId : uint8_t {
  flash_attn_varlen_func,
  flash_attn_func,
  unified_attention,
  paged_attention_decode,
  merge_attn_states,
};
constexpr int kOpCount = 5;

// The value that means "not used": for optional parameters their default; for the required
// parameters of unified_attention that callers pass as None or 0, that neutral value.
enum class DefaultKind : uint8_t {
  value,     // a required input with no neutral value (q, k, v, ...)
  none,      // None
  false_,    // False
  zero,      // 0 or 0.0
  window,    // (-1, -1) or (-1, -1, 0)
  other,     // some other value (how_v3_bf16_cvt=1, ...)
};

struct ParamSpec {
  std::string name;
  DefaultKind default_kind;
  bool required = false;  // positional with no default in AITer's signature
  // A hint changes speed, not results (min_seqlen_q, deterministic, how_v3_bf16_cvt): it may be
  // dropped for a release that lacks it whatever its value.
  bool hint = false;
};

struct OpSignature {
  OpId id;
  std::string name;
  std::string aiter_name;  // the AITer entry point of that name ("" if none)
  std::string no_aiter_reason;  // why AITer cannot serve it, when aiter_name is empty
  std::vector<ParamSpec> params;
  int index_of(const std::string& param) const;  // -1 if absent
};

const OpSignature& signature(OpId id);
const std::vector<OpSignature>& all_signatures();
std::string to_string(OpId id);

}  // namespace aiter_compat
