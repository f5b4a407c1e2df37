#include "aiter_compat/probe/render.hpp"

#include <algorithm>
#include <sstream>

namespace aiter_compat {
namespace {

using nlohmann::json;

json errors_json(const std::vector<ProbeError>& errors) {
  json out = json::array();
  for (const auto& e : errors) out.push_back({{"where", e.where}, {"error", e.error}});
  return out;
}

json null_if_empty(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

json op_json(const OpReport& op) {
  json params = nullptr;
  if (op.params) {
    params = json::array();
    for (const auto& p : *op.params) params.push_back(p.name);
  }
  json j = {{"present", op.present},
            {"module", null_if_empty(op.module)},
            {"params", params},
            {"sinks", std::string(to_string(op.sinks))},
            {"sinks_reason", op.sinks_reason},
            {"q_scales", std::string(to_string(op.q_scales))},
            {"window_arity", op.window_arity ? json(*op.window_arity) : json(nullptr)},
            {"exported", op.exported},
            {"located_by", null_if_empty(op.located_by)},
            {"import_paths", op.import_paths},
            {"read_by", op.read_by},
            {"notes", op.notes},
            {"errors", errors_json(op.errors)},
            {"import_error", op.import_error ? json{{"where", op.import_error->where}, {"error", op.import_error->error}}
                                             : json(nullptr)}};
  return j;
}

}  // namespace

json to_json(const ProbeReport& r) {
  json j;
  j["schema_version"] = kReportSchemaVersion;
  j["aiter_compat_version"] = AITER_COMPAT_VERSION;  // CMake's project version (-D from CMakeLists.txt)
  const auto& a = r.aiter;
  j["aiter"] = {{"found", a.found},
                {"reason", null_if_empty(a.reason)},
                {"distribution", null_if_empty(a.distribution)},
                {"version", null_if_empty(a.version)},
                {"version_source", a.version_source},
                {"version_trusted", a.version_trusted},
                {"version_note", null_if_empty(a.version_note)},
                {"path", null_if_empty(a.path)},
                {"layout", null_if_empty(a.layout)},
                {"copies", a.copies},
                {"foreign", a.foreign},
                {"matrix_entry", null_if_empty(a.matrix_entry)},
                {"matrix_note", null_if_empty(a.matrix_note)},
                {"errors", errors_json(a.errors)}};
  j["ops"] = json::object();
  for (const auto& op : r.ops) j["ops"][op.name] = op_json(op);
  json modules = json::array();
  for (const auto& m : r.native.modules)
    modules.push_back({{"name", m.name},
                       {"path", m.path},
                       {"elf_ok", m.elf_ok},
                       {"elf_error", null_if_empty(m.elf_error)},
                       {"machine", null_if_empty(m.machine)},
                       {"export_count", m.export_count},
                       {"exports", m.exports},
                       {"loads", m.loads ? json(*m.loads) : json(nullptr)},
                       {"dlerror", null_if_empty(m.dlerror)}});
  j["native"] = {{"searched", r.native.searched}, {"modules", modules}};
  json attempts = json::array();
  for (const auto& t : r.device.attempts) attempts.push_back({{"library", t.library}, {"how", t.how}, {"result", t.result}});
  const auto& d = r.device;
  j["device"] = {{"present", d.present},         {"vendor", null_if_empty(d.vendor)},
                 {"arch", d.present ? json(d.arch) : json("none")},
                 {"name", null_if_empty(d.name)}, {"count", d.count}, {"archs", d.archs},
                 {"multiprocessors", d.multiprocessors},
                 {"runtime", null_if_empty(d.runtime)}, {"how_found", null_if_empty(d.how_found)},
                 {"reason", null_if_empty(d.reason)},   {"attempts", attempts}};
  j["quirks"] = json::array();
  for (const auto& q : r.quirks)
    j["quirks"].push_back({{"id", q.id}, {"status", q.status}, {"ops", q.ops}, {"effect", q.effect},
                           {"summary", q.summary}, {"why", q.why}});
  j["fallback_kernels"] = json::array();
  for (const auto& k : r.fallback_kernels)
    j["fallback_kernels"].push_back(
        {{"name", k.name}, {"archs", k.archs}, {"matches_device", k.matches_device}, {"head_dims", k.head_dims}});
  j["channels"] = json::object();
  for (const auto& [name, c] : r.channels)
    j["channels"][name] = {{"ran", c.ran},
                           {"failure", null_if_empty(c.failure)},
                           {"python", null_if_empty(c.python_version)},
                           {"import_error", c.import_error ? json(c.import_error->error) : json(nullptr)}};
  j["unknown_sink_functions"] = json::array();
  for (const auto& f : r.unknown_sink_functions)
    j["unknown_sink_functions"].push_back({{"module", f.module}, {"function", f.function}, {"param", f.param}});
  j["disagreements"] = json::array();
  for (const auto& x : r.disagreements)
    j["disagreements"].push_back({{"what", x.what}, {"static", x.static_value}, {"live", x.live_value}});
  j["matrix"] = {{"source", r.matrix.source}, {"warning", null_if_empty(r.matrix.warning)}};
  return j;
}

std::string to_text(const ProbeReport& r) {
  std::vector<std::pair<std::string, std::string>> rows;
  auto row = [&](std::string name, std::string value) { rows.emplace_back(std::move(name), std::move(value)); };
  const auto& a = r.aiter;
  if (!a.found) {
    row("aiter", "not found (" + a.reason + ")");
  } else {
    row("aiter", a.foreign ? "found, but not AMD's AITer: " + a.reason : "found");
    row("aiter.distribution", a.distribution.empty() ? "unknown (no distribution metadata)" : a.distribution);
    std::string version = a.version.empty() ? std::string("unknown")
                                            : a.version + " (from " + a.version_source +
                                                  (a.version_trusted ? ")" : ", not trusted)");
    row("aiter.version", version);
    if (!a.version_note.empty()) row("aiter.version_note", a.version_note);
    row("aiter.path", a.path + (a.layout.empty() ? "" : " [" + a.layout + "]"));
    if (!a.matrix_entry.empty() || !a.matrix_note.empty())
      row("aiter.matrix_entry", (a.matrix_entry.empty() ? "none" : a.matrix_entry) +
                                    (a.matrix_note.empty() ? "" : " (" + a.matrix_note + ")"));
  }
  for (const auto& e : a.errors) row("aiter.error", e.where + ": " + e.error);
  for (const auto& op : r.ops) {
    if (!a.found || a.foreign) break;
    std::string v;
    if (!op.present) {
      v = "not found";
      if (!op.errors.empty()) v += " (" + op.errors.front().where + ": " + op.errors.front().error + ")";
    } else {
      v = op.module + ": sinks " + std::string(to_string(op.sinks)) + " (" + op.sinks_reason + ")";
      if (op.window_arity) v += ", window arity " + std::to_string(*op.window_arity);
      if (op.q_scales == Support::supported) v += ", q_scales";
      v += op.params ? ", " + std::to_string(op.params->size()) + " params" : ", params unreadable";
    }
    row("op." + op.name, v);
    for (const auto& [module, state] : op.import_paths)
      if (state.rfind("alias", 0) == 0) row("op." + op.name + ".alias", module + " (" + state + ")");
  }
  if (r.native.modules.empty()) {
    std::string dirs;
    for (const auto& d : r.native.searched) dirs += (dirs.empty() ? "" : ", ") + d;
    row("native", "no module_*.so found (searched " + dirs + ")");
  }
  for (const auto& m : r.native.modules) {
    std::string v = m.elf_ok ? std::to_string(m.export_count) + " exports" : "unusable: " + m.elf_error;
    if (!m.exports.empty()) {
      v += " (";
      for (size_t i = 0; i < m.exports.size(); ++i) v += (i ? ", " : "") + m.exports[i];
      v += ")";
    }
    if (m.loads) v += *m.loads ? ", loads" : ", does not load: " + m.dlerror;
    else if (!m.dlerror.empty()) v += ", load unknown: " + m.dlerror;
    row("native." + m.name, v);
  }
  const auto& d = r.device;
  row("device", d.present ? d.arch + " (" + d.name + ", " + std::to_string(d.count) + " device(s), " + d.runtime + ")"
                          : "none (" + d.reason + ")");
  if (!d.present)
    for (const auto& t : d.attempts) row("device.tried", t.library + " [" + t.how + "]: " + t.result);
  for (const auto& q : r.quirks) row("quirk." + q.id, q.status + ": " + q.summary + " [" + q.why + "]");
  if (r.fallback_kernels.empty() || r.fallback_kernels.front().archs.empty()) row("fallback_kernels", "no GPU code objects built");
  for (const auto& k : r.fallback_kernels) {
    if (k.archs.empty()) continue;
    // An arch built at fewer head dims than the family's others says which.
    size_t widest = 0;
    for (const auto& [a, dims] : k.head_dims) widest = std::max(widest, dims.size());
    std::string archs;
    for (const auto& a : k.archs) {
      archs += (archs.empty() ? "" : ", ") + a;
      auto dims = k.head_dims.find(a);
      if (dims != k.head_dims.end() && dims->second.size() < widest) {
        std::string list;
        for (int d : dims->second) list += (list.empty() ? "" : "/") + std::to_string(d);
        archs += " (head dim " + list + ")";
      }
    }
    row("fallback_kernels." + k.name, archs + (k.matches_device ? " (matches this GPU)" : r.device.present ? " (none for " + r.device.arch + ")" : ""));
  }
  for (const auto& [name, c] : r.channels) {
    std::string v = c.ran ? "ran" : "did not run: " + c.failure;
    if (!c.python_version.empty()) v += " (python " + c.python_version + ")";
    if (c.import_error) v += "; " + c.import_error->error;
    row("channel." + name, v);
  }
  for (const auto& x : r.disagreements)
    row("disagreement." + x.what, "static " + x.static_value + " vs live " + x.live_value);
  if (!r.unknown_sink_functions.empty()) {
    // One row: which functions take a sink but are not in compat_matrix.yaml (not probed per
    // release, not routed).
    std::string v = std::to_string(r.unknown_sink_functions.size()) + " not in compat_matrix.yaml: ";
    for (size_t i = 0; i < r.unknown_sink_functions.size(); ++i) {
      const auto& f = r.unknown_sink_functions[i];
      v += (i ? ", " : "") + f.module + "." + f.function + "(" + f.param + "=)";
    }
    row("sink_functions", v);
  }
  row("matrix", r.matrix.source + (r.matrix.warning.empty() ? "" : " (" + r.matrix.warning + ")"));

  size_t width = 0;
  for (const auto& [name, _] : rows) width = std::max(width, name.size());
  std::ostringstream out;
  for (const auto& [name, value] : rows) out << name << ':' << std::string(width - name.size() + 1, ' ') << value << '\n';
  return out.str();
}

}  // namespace aiter_compat
