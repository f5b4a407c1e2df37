#pragma once
// The report as JSON (schema in docs/probe-json.md) and as aligned `name: value` rows.
#include <string>

#include <nlohmann/json.hpp>

#include "aiter_compat/probe/report.hpp"

namespace aiter_compat {

inline constexpr int kReportSchemaVersion = 1;

nlohmann::json to_json(const ProbeReport& report);
std::string to_text(const ProbeReport& report);

}  // namespace aiter_compat
