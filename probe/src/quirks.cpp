// Which of the matrix's known quirks apply to this install and GPU.
#include <algorithm>

#include "aiter_compat/probe/probe.hpp"

namespace aiter_compat {

std::vector<QuirkHit> match_quirks(const CompatMatrix& matrix, const ProbeReport& report) {
  std::vector<QuirkHit> hits;
  if (!report.aiter.found || report.aiter.foreign) return hits;
  auto version = Version::parse(report.aiter.version);
  bool trusted = version && report.aiter.version_trusted;
  for (const auto& q : matrix.quirks()) {
    QuirkHit hit{q.id, "applies", q.summary, "", q.effect, {}};
    for (const auto& name : q.ops) {
      const OpReport* op = report.op(name);
      if (!op || !op->present) continue;
      if (!q.requires_param.empty()) {
        auto names = op->param_names();
        if (std::find(names.begin(), names.end(), q.requires_param) == names.end()) continue;
      }
      hit.ops.push_back(name);
    }
    if (hit.ops.empty()) continue;
    if (trusted) {
      if (!q.versions.contains(*version)) continue;
      hit.why = "version " + report.aiter.version + " is in " + q.versions.text();
    } else if (!q.requires_param.empty()) {
      hit.why = "version unknown; the entry point takes " + q.requires_param + " as in " + q.versions.text();
    } else {
      hit.status = "possible";
      hit.why = "version unknown; the quirk affects " + q.versions.text();
    }
    if (!q.archs.empty()) {
      std::string archs;
      for (const auto& a : q.archs) archs += (archs.empty() ? "" : "/") + a;
      if (report.device.present) {
        if (std::find(q.archs.begin(), q.archs.end(), report.device.arch) == q.archs.end()) continue;
        hit.why += "; GPU " + report.device.arch;
      } else {
        hit.status = "possible";
        hit.why += "; only on " + archs + " and no GPU was found here";
      }
    }
    if (!q.archs_not.empty()) {
      std::string archs;
      for (const auto& a : q.archs_not) archs += (archs.empty() ? "" : "/") + a;
      if (report.device.present) {
        if (std::find(q.archs_not.begin(), q.archs_not.end(), report.device.arch) != q.archs_not.end()) continue;
        hit.why += "; GPU " + report.device.arch + " (not " + archs + ")";
      } else {
        hit.status = "possible";
        hit.why += "; on every GPU but " + archs + ", and no GPU was found here";
      }
    }
    hits.push_back(std::move(hit));
  }
  return hits;
}

}  // namespace aiter_compat
