#pragma once
// The AITer attention entry points the probe describes, as data: where each may live and which
// of its parameters carry the features callers care about.
#include <string>
#include <vector>

namespace aiter_compat {

struct OpSpec {
  std::string name;
  std::vector<std::string> modules;  // candidate defining modules, newest location first
  std::string sink_param;            // "sink_ptr", "sinks", or "" for ops that never took sinks
  std::string no_sink_reason;        // why an op without sink_param cannot take sinks
};

const std::vector<OpSpec>& attention_ops();
const OpSpec* find_op(const std::string& name);

}  // namespace aiter_compat
