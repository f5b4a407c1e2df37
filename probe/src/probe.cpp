// Runs the channels and merges their readings into one report.
#include "aiter_compat/probe/probe.hpp"

#include <algorithm>

#include "aiter_compat/probe/gpu_probe.hpp"
#include "aiter_compat/gpu_runtime/code_objects.hpp"
#include "aiter_compat/gpu_runtime/kernel_table.hpp"
#include "aiter_compat/probe/native_probe.hpp"
#include "aiter_compat/probe/op_table.hpp"
#include "aiter_compat/probe/phase_timer.hpp"

namespace aiter_compat {
namespace {

std::string join_names(const std::optional<std::vector<Param>>& params) {
  if (!params) return "(unreadable)";
  std::string out;
  for (const auto& p : *params) out += (out.empty() ? "" : ", ") + p.name;
  return "[" + out + "]";
}

ChannelStatus status_of(const ChannelReading& r) {
  return {r.ran, r.failure, r.python_version, r.import_error};
}

// Where static reading and live import disagree, live is what a call will meet, so it wins;
// the difference is reported (a stale JIT module, a stub rewritten by @compile_ops, ...).
void compare(const OpReport& s, const OpReport& l, std::vector<Disagreement>& out) {
  const std::string base = "ops." + s.name + ".";
  if (s.present != l.present)
    out.push_back({base + "present", s.present ? "true" : "false", l.present ? "true" : "false"});
  if (s.present && l.present && s.module != l.module) out.push_back({base + "module", s.module, l.module});
  if (s.present && l.present && s.params && l.params && s.param_names() != l.param_names())
    out.push_back({base + "params", join_names(s.params), join_names(l.params)});
}

// An entry point at a module the matrix records for it in no release (found by name search, or
// through a compat map at a known path): say so. The op table's modules are the ones the
// built-in matrix records (a matrix test keeps the two equal), so only other modules are looked
// up, and an indexed matrix is parsed only when its text names the module at all.
void note_location(const CompatMatrix& matrix, OpReport& op) {
  if (!op.present || op.module.empty()) return;
  const OpSpec* spec = find_op(op.name);
  bool known = spec && std::find(spec->modules.begin(), spec->modules.end(), op.module) != spec->modules.end();
  if (known && !matrix.fully_parsed()) return;
  if (!matrix.releases_locating(op.name, op.module).empty()) return;
  op.notes.push_back(op.module + " is a new location: compat_matrix.yaml records " + op.name +
                     " there for no release");
}

void choose_matrix_entry(const CompatMatrix& matrix, const ProbeOptions& options, InstallReport& in) {
  if (!options.matrix_entry.empty()) {
    const MatrixRelease* r = matrix.find_exact(options.matrix_entry);
    in.matrix_entry = r ? r->version.text : "";
    in.matrix_note = r ? "chosen with --matrix-entry" : "no matrix entry " + options.matrix_entry;
    return;
  }
  if (!in.found || in.foreign) return;
  auto v = Version::parse(in.version);
  if (!v || !in.version_trusted) {
    in.matrix_note = "no trusted version to pick a matrix entry by; use --matrix-entry";
    return;
  }
  const MatrixRelease* r = matrix.find_line(*v);
  if (!r) {
    in.matrix_note = "older than every release in the matrix";
    return;
  }
  in.matrix_entry = r->version.text;
  if (!r->version.same_release(*v))
    in.matrix_note = r->version.is_main ? "newer than every tagged release: compared with main"
                                        : "between releases: compared with the nearest older one";
}

}  // namespace

std::vector<std::string> OpReport::param_names() const {
  std::vector<std::string> names;
  if (params)
    for (const auto& p : *params) names.push_back(p.name);
  return names;
}

const OpReport* ProbeReport::op(const std::string& name) const {
  for (const auto& o : ops)
    if (o.name == name) return &o;
  return nullptr;
}

ProbeReport run_probe(const ProbeOptions& options, PythonReader& python) {
  ProbeReport report;
  const CompatMatrix& matrix = [&]() -> const CompatMatrix& {
    PhaseTimer t("matrix load");
    return load_matrix(options.matrix_path, &report.matrix.source, &report.matrix.warning);
  }();

  ChannelReading stat = [&] {
    PhaseTimer t("static channel");
    return python.read(Channel::static_ast, options.aiter_root);
  }();
  report.channels["static"] = status_of(stat);
  report.unknown_sink_functions = stat.sink_functions;
  std::optional<ChannelReading> live;
  if (options.live) {
    PhaseTimer t("live channel");
    live = python.read(Channel::live_import, options.aiter_root);
    report.channels["live"] = status_of(*live);
  }
  bool live_usable = live && live->ran && !live->import_error;

  const InstallReading& identity = stat.ran ? stat.install : (live ? live->install : stat.install);
  report.aiter = interpret_install(identity);
  if (!stat.ran && !(live && live->ran)) report.aiter.reason = stat.failure;
  if (live && live->import_error) report.aiter.errors.push_back(*live->import_error);
  if (live_usable && !live->install.live_path.empty() && !stat.install.path.empty() &&
      live->install.live_path != stat.install.path)
    report.disagreements.push_back({"aiter.path", stat.install.path, live->install.live_path});

  for (const auto& spec : attention_ops()) {
    auto reading = [&](const ChannelReading& r) {
      auto it = r.ops.find(spec.name);
      return it == r.ops.end() ? OpReading{} : it->second;
    };
    OpReport s = interpret_op(spec.name, reading(stat), Channel::static_ast);
    if (live_usable) {
      OpReport l = interpret_op(spec.name, reading(*live), Channel::live_import);
      if (stat.ran) compare(s, l, report.disagreements);
      report.ops.push_back(std::move(l));
    } else {
      if (live && live->import_error) s.notes.push_back("live import failed; this is the static reading");
      report.ops.push_back(std::move(s));
    }
    note_location(matrix, report.ops.back());
  }

  if (options.native) {
    PhaseTimer t("native modules");
    report.native = probe_native({report.aiter.path, options.dlopen, 10000});
  }
  if (options.device) {
    PhaseTimer t("gpu runtime");
    report.device = probe_device();
  }
  for (const auto& family : gpu::kernel_rows()) {
    if (family.device != gpu::KernelDevice::gpu) continue;
    FallbackKernel k{family.name, {}, false};
    for (const auto& object : code_objects()) {
      if (!family.built_for(object.arch)) continue;
      k.archs.push_back(object.arch);
      if (auto dims = family.head_dims_on(object.arch); !dims.empty()) k.head_dims[object.arch] = std::move(dims);
      k.matches_device = k.matches_device || (report.device.present && report.device.arch == object.arch);
    }
    report.fallback_kernels.push_back(std::move(k));
  }
  PhaseTimer t("matrix entry and quirks");
  choose_matrix_entry(matrix, options, report.aiter);
  report.quirks = match_quirks(matrix, report);
  return report;
}

}  // namespace aiter_compat
