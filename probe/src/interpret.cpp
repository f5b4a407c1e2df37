// Turns raw readings into capabilities: what an entry point accepts, and what an install is.
#include <algorithm>

#include "aiter_compat/probe/op_table.hpp"
#include "aiter_compat/probe/probe.hpp"
#include "aiter_compat/probe/version.hpp"

namespace aiter_compat {
namespace {

const Param* find_param(const std::vector<Param>& params, const std::string& name) {
  for (const auto& p : params)
    if (p.name == name) return &p;
  return nullptr;
}

bool has_var_keyword(const std::vector<Param>& params) {
  return std::any_of(params.begin(), params.end(), [](const Param& p) { return p.kind == "VAR_KEYWORD"; });
}

// Arity of a tuple literal's repr such as "(-1, -1, 0)"; nullopt when it is no tuple.
std::optional<int> tuple_arity(const std::string& repr) {
  if (repr.size() < 2 || repr.front() != '(' || repr.back() != ')') return std::nullopt;
  std::string inner = repr.substr(1, repr.size() - 2);
  if (inner.find_first_not_of(" ") == std::string::npos) return 0;
  int commas = static_cast<int>(std::count(inner.begin(), inner.end(), ','));
  bool trailing = inner.find_last_not_of(' ') != std::string::npos && inner[inner.find_last_not_of(' ')] == ',';
  return trailing ? commas : commas + 1;
}

}  // namespace

OpReport interpret_op(const std::string& name, const OpReading& reading, Channel channel) {
  OpReport op;
  op.name = name;
  op.present = reading.present;
  op.module = reading.module;
  op.params = reading.params;
  op.import_paths = reading.import_paths;
  op.exported = reading.exported;
  op.located_by = reading.located_by;
  op.read_by = to_string(channel);
  op.notes = reading.notes;
  op.errors = reading.errors;
  op.import_error = reading.import_error;
  const OpSpec* spec = find_op(name);

  if (!reading.present) {
    op.sinks = op.q_scales = reading.errors.empty() ? Support::unsupported : Support::unknown;
    op.sinks_reason = reading.errors.empty() ? "entry point not found"
                                             : "entry point could not be read: " + reading.errors.front().error;
    return op;
  }
  if (!reading.params) {
    op.sinks = op.q_scales = Support::unknown;
    op.sinks_reason = "parameters could not be read";
    return op;
  }
  const auto& params = *reading.params;
  bool var_kw = has_var_keyword(params);
  if (!spec || spec->sink_param.empty()) {
    op.sinks = Support::unsupported;
    op.sinks_reason = spec ? spec->no_sink_reason : "not an attention entry point known to take sinks";
    if (spec && var_kw) op.sinks_reason += " (its **kwargs does not change that)";
  } else if (find_param(params, spec->sink_param)) {
    op.sinks = Support::supported;
    op.sinks_reason = "takes " + spec->sink_param;
  } else if (var_kw) {
    op.sinks = Support::unknown;
    op.sinks_reason = "no " + spec->sink_param + " parameter, but **kwargs may accept it";
  } else {
    op.sinks = Support::unsupported;
    op.sinks_reason = "no " + spec->sink_param + " parameter and no **kwargs: passing it raises TypeError";
  }
  op.q_scales = find_param(params, "q_scales") ? Support::supported
                : var_kw                       ? Support::unknown
                                               : Support::unsupported;
  if (const Param* w = find_param(params, "window_size"); w && w->default_repr)
    op.window_arity = tuple_arity(*w->default_repr);
  bool compile_ops = std::find(reading.decorators.begin(), reading.decorators.end(), "compile_ops") !=
                     reading.decorators.end();
  if (compile_ops && channel == Channel::static_ast)
    op.notes.push_back("@compile_ops may rewrite the signature from the built module on first call; "
                       "--live reads what is really bound");
  // Defined, but its import fails first: nothing it takes can be relied on.
  if (op.import_error) {
    op.sinks = op.q_scales = Support::unknown;
    op.sinks_reason = "cannot be imported: " + op.import_error->where + ": " + op.import_error->error;
  }
  return op;
}

InstallReport interpret_install(const InstallReading& r) {
  InstallReport in;
  in.found = r.found;
  in.path = r.path;
  in.layout = r.layout;
  in.copies = r.copies;
  in.foreign = r.foreign;
  in.errors = r.errors;
  in.distribution = r.distribution;
  if (!r.found) {
    in.reason = "no aiter package on the search path";
    in.version_source = "unknown";
    return in;
  }
  if (r.foreign) in.reason = "a package named aiter is installed, but it is not AMD's AITer (no aiter/ops)";
  if (!r.metadata_version.empty()) {
    in.version = r.metadata_version;
    in.version_source = "distribution metadata";
  } else if (!r.file_version.empty()) {
    in.version = r.file_version;
    in.version_source = "aiter/_version.py";
  } else {
    in.version_source = "unknown";
    in.version_note = "no distribution metadata and no aiter/_version.py";
  }
  if (!r.metadata_version.empty() && !r.file_version.empty() && r.metadata_version != r.file_version)
    in.version_note = "distribution metadata says " + r.metadata_version + " but aiter/_version.py says " +
                      r.file_version + " (a package rebuilt in place?)";
  if (!in.version.empty()) {
    auto v = Version::parse(in.version);
    if (!v) {
      in.version_note = "version '" + in.version + "' is not a PEP 440 version";
    } else if (v->release == std::vector<int>{0, 1, 0} || v->release < std::vector<int>{0, 1, 1}) {
      in.version_note = "version " + in.version +
                        " is setuptools_scm's fallback for a build without git metadata: weak evidence";
    } else if (in.version_note.empty()) {
      in.version_trusted = true;
    }
  }
  if (r.copies.size() > 1) {
    std::string list;
    for (const auto& c : r.copies) list += (list.empty() ? "" : ", ") + c;
    in.errors.push_back({"search path", "several aiter packages: " + list + "; the first one is imported"});
  }
  return in;
}

}  // namespace aiter_compat
