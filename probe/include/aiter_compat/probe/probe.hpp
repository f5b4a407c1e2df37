#pragma once
// One call that runs every channel and merges them into a ProbeReport.
#include <string>

#include "aiter_compat/probe/matrix.hpp"
#include "aiter_compat/probe/readings.hpp"
#include "aiter_compat/probe/report.hpp"

namespace aiter_compat {

struct ProbeOptions {
  std::string aiter_root;     // "" = the aiter the interpreter would import
  bool live = false;          // also import aiter and read inspect.signature
  bool native = true;
  bool dlopen = true;
  bool device = true;
  std::string matrix_path;    // "" = AITER_COMPAT_MATRIX or the built-in matrix
  std::string matrix_entry;   // force the release entry to compare against
};

ProbeReport run_probe(const ProbeOptions& options, PythonReader& python);

// Pieces of run_probe, public for tests.
OpReport interpret_op(const std::string& name, const OpReading& reading, Channel channel);
InstallReport interpret_install(const InstallReading& reading);
std::vector<QuirkHit> match_quirks(const CompatMatrix& matrix, const ProbeReport& report);

}  // namespace aiter_compat
