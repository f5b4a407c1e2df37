#pragma once
// The AITer attention entry points the probe describes, as data: where each may live and which
// of its parameters carry the features callers care about.
#include <string>
#include <vector>

namespace aiter_compat {

struct OpSpec {
  std::string name;                  // the key in reports, the matrix and --require sinks:NAME
  std::vector<std::string> modules;  // candidate defining modules, newest location first
  std::string sink_param;            // "sink_ptr", "sinks", "sink", or "" for ops that never took sinks
  std::string no_sink_reason;        // why an op without sink_param cannot take sinks
  // The Python function's name where it differs from the key: AITer has two functions called
  // flash_attn_varlen_func (CK's in aiter.ops.mha, Triton's in aiter.ops.triton.attention.mha).
  std::string function_name = {};
  // Where a search by name may look when the known modules miss (a module prefix; "" for the
  // whole package): Triton's mha must never be "found" as CK's function of the same name.
  std::string search_within = {};

  const std::string& function() const { return function_name.empty() ? name : function_name; }
};

const std::vector<OpSpec>& attention_ops();
const OpSpec* find_op(const std::string& name);

}  // namespace aiter_compat
