#pragma once
// Builders of channel readings for tests, so each test states only what matters to it.
#include <string>
#include <vector>

#include "aiter_compat/probe/matrix.hpp"
#include "aiter_compat/probe/probe.hpp"
#include "aiter_compat/probe/readings.hpp"

namespace aiter_compat::testing_support {

inline std::vector<Param> params_of(const std::vector<std::string>& names,
                                    const std::string& window_default = "(-1, -1)") {
  std::vector<Param> out;
  for (const auto& n : names) {
    Param p{n, n.rfind("**", 0) == 0 ? "VAR_KEYWORD" : "POSITIONAL_OR_KEYWORD", std::nullopt};
    if (p.kind == "VAR_KEYWORD") p.name = n.substr(2);
    if (n == "window_size") p.default_repr = window_default;
    out.push_back(p);
  }
  return out;
}

inline OpReading present_op(const std::string& module, const std::vector<std::string>& names,
                            const std::string& window_default = "(-1, -1)") {
  OpReading op;
  op.present = true;
  op.module = module;
  op.params = params_of(names, window_default);
  op.import_paths[module] = "defined";
  return op;
}

// A reading equal to what the matrix says of a release: the probe must find no difference.
inline ChannelReading reading_from_matrix(const MatrixRelease& rel, Channel channel = Channel::static_ast) {
  ChannelReading r;
  r.channel = channel;
  r.ran = true;
  r.install.found = true;
  r.install.path = "/site/aiter";
  r.install.distribution = rel.distribution;
  r.install.metadata_version = rel.version.is_main ? "0.1.21.dev3" : rel.version.text;
  for (const auto& [name, op] : rel.ops) {
    if (!op.present) continue;
    std::string arity = op.window_arity == 3 ? "(-1, -1, 0)" : "(-1, -1)";
    OpReading o = present_op(op.module, op.params, arity);
    for (const auto& a : op.aliases) o.import_paths[a] = "alias of " + op.module;
    r.ops[name] = o;
  }
  return r;
}

class FakePythonReader : public PythonReader {
 public:
  ChannelReading static_reading, live_reading;
  int static_calls = 0, live_calls = 0;
  ChannelReading read(Channel channel, const std::string&) override {
    if (channel == Channel::live_import) {
      ++live_calls;
      return live_reading;
    }
    ++static_calls;
    return static_reading;
  }
};

// The report of an install equal to a matrix release, probed offline, on the GPU arch given.
inline ProbeReport report_for_release(const char* version, const char* arch = nullptr) {
  FakePythonReader py;
  py.static_reading = reading_from_matrix(*CompatMatrix::builtin().find_exact(version));
  ProbeOptions o;
  o.native = o.device = false;
  ProbeReport r = run_probe(o, py);
  if (arch) {
    r.device.present = true;
    r.device.arch = arch;
    r.device.archs = {arch};
    r.quirks = match_quirks(CompatMatrix::builtin(), r);
  }
  return r;
}

}  // namespace aiter_compat::testing_support
