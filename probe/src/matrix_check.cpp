// --check-matrix: the probe against the matrix entry of the detected release.
#include "aiter_compat/probe/requirements.hpp"

#include <set>

namespace aiter_compat {
namespace {

std::string bracket(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
  return "[" + out + "]";
}

// "+ added, - removed" between an expected and a detected parameter list, or the order change.
std::string param_diff(const std::vector<std::string>& want, const std::vector<std::string>& got) {
  std::set<std::string> w(want.begin(), want.end()), g(got.begin(), got.end());
  std::string out;
  for (const auto& p : got)
    if (!w.count(p)) out += " +" + p;
  for (const auto& p : want)
    if (!g.count(p)) out += " -" + p;
  return out.empty() ? " same names, different order" : out;
}

}  // namespace

std::vector<std::string> matrix_differences(const ProbeReport& report, const CompatMatrix& matrix) {
  std::vector<std::string> diffs;
  if (!report.aiter.found) return {"aiter: not found, nothing to compare"};
  if (report.aiter.matrix_entry.empty())
    return {"aiter " + (report.aiter.version.empty() ? std::string("(no version)") : report.aiter.version) +
            ": no matrix entry to compare with (" + report.aiter.matrix_note + ")"};
  const MatrixRelease* rel = matrix.find_exact(report.aiter.matrix_entry);
  if (!rel) return {"matrix entry " + report.aiter.matrix_entry + " vanished"};
  const std::string who = "matrix " + rel->version.text + " expects ";
  if (!report.aiter.distribution.empty() && report.aiter.distribution != rel->distribution)
    diffs.push_back("aiter.distribution: " + who + rel->distribution + ", found " + report.aiter.distribution);
  for (const auto& op : report.ops) {
    auto it = rel->ops.find(op.name);
    const std::string base = "ops." + op.name;
    if (it == rel->ops.end()) {
      if (op.present) diffs.push_back(base + ": present, but the matrix entry does not list it");
      continue;
    }
    const MatrixOp& want = it->second;
    if (want.present != op.present) {
      diffs.push_back(base + ".present: " + who + (want.present ? "true" : "false") + ", found " +
                      (op.present ? "true" : "false"));
      continue;
    }
    if (!op.present) continue;
    if (want.module != op.module) diffs.push_back(base + ".module: " + who + want.module + ", found " + op.module);
    if (!op.params) {
      diffs.push_back(base + ".params: unreadable, " + who + bracket(want.params));
    } else if (op.param_names() != want.params) {
      diffs.push_back(base + ".params:" + param_diff(want.params, op.param_names()) + " (" + who +
                      bracket(want.params) + ", found " + bracket(op.param_names()) + ")");
    }
    if (want.sinks != to_string(op.sinks))
      diffs.push_back(base + ".sinks: " + who + want.sinks + ", found " + std::string(to_string(op.sinks)));
    if (want.window_arity && op.window_arity != want.window_arity)
      diffs.push_back(base + ".window_arity: " + who + std::to_string(*want.window_arity) + ", found " +
                      (op.window_arity ? std::to_string(*op.window_arity) : std::string("none")));
    for (const auto& alias : want.aliases) {
      auto p = op.import_paths.find(alias);
      if (p == op.import_paths.end() || p->second.rfind("alias of", 0) != 0)
        diffs.push_back(base + ".import_paths." + alias + ": " + who + "an alias, found " +
                        (p == op.import_paths.end() ? std::string("nothing") : p->second));
    }
  }
  return diffs;
}

}  // namespace aiter_compat
