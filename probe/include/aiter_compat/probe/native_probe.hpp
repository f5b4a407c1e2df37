#pragma once
// Finds the JIT-built module_*.so files AITer would load and describes each: its exports (from
// the ELF file) and whether the dynamic loader accepts it (dlopen in a child process, so a
// crashing constructor or a hanging loader cannot take the probe down).
#include <string>
#include <vector>

#include "aiter_compat/probe/report.hpp"

namespace aiter_compat {

struct NativeProbeOptions {
  std::string aiter_path;   // the aiter package folder ("" if none)
  bool try_dlopen = true;
  int dlopen_timeout_ms = 10000;
};

// C symbols worth naming in a report: the ctypes ABI and known entry points.
const std::vector<std::string>& interesting_symbols();

std::vector<std::string> jit_module_dirs(const std::string& aiter_path);
NativeReport probe_native(const NativeProbeOptions& options);

}  // namespace aiter_compat
