#pragma once
// Checks a probe report against what a caller needs (--require) and against the matrix entry of
// the detected release (--check-matrix). Each returns the reasons it fails; empty means it holds.
#include <string>
#include <vector>

#include "aiter_compat/probe/matrix.hpp"
#include "aiter_compat/probe/report.hpp"

namespace aiter_compat {

std::vector<std::string> unmet_requirement(const ProbeReport& report, const std::string& feature);
std::vector<std::string> matrix_differences(const ProbeReport& report, const CompatMatrix& matrix);

}  // namespace aiter_compat
