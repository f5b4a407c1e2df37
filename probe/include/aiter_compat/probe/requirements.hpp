#pragma once
// Checks a probe report against what a caller needs (--require) and against the matrix entry of
// the detected release (--check-matrix).
#include <string>
#include <vector>

#include "aiter_compat/probe/matrix.hpp"
#include "aiter_compat/probe/report.hpp"

namespace aiter_compat {

// How one family of calls is served here, or why not. A family is what an engine calls for one
// phase of a model (prefill, decode), or one entry point for `sinks:OP`.
struct FamilyVerdict {
  std::string family;
  std::string served_by;             // "aiter unified_attention (takes sinks)", "fallback ..."; "" = not served
  std::vector<std::string> notes;    // how the serving is split (a quirk keeps some calls from AITer)
  std::vector<std::string> reasons;  // why each candidate that does not serve cannot
};

struct RequirementCheck {
  std::string feature;                  // as asked: "sinks", "sinks:unified_attention"
  std::vector<FamilyVerdict> families;
  std::vector<std::string> unmet;       // "family: reason" for each family not served; empty = met
  bool met() const { return unmet.empty(); }
};

// `sinks`: can a model with learned sinks run here, prefill and decode? Each family is served by
// an AITer entry point that takes sinks and that no sink-dropping quirk affects here, or by a
// fallback kernel built for the GPU present. `sinks:OP`: the same for one AITer entry point
// (its fallback: the aiter_compat call of the same name). Unknown features: unmet, saying so.
RequirementCheck check_requirement(const ProbeReport& report, const std::string& feature);

// The features --require takes: "sinks" and "sinks:<entry point>" for each attention entry point.
std::vector<std::string> known_requirements();

std::vector<std::string> matrix_differences(const ProbeReport& report, const CompatMatrix& matrix);

}  // namespace aiter_compat
