#include "aiter_compat/probe/matrix.hpp"

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>

#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include "embedded_text.hpp"

namespace aiter_compat {
namespace {

[[noreturn]] void fail(const std::string& origin, const YAML::Node& node, const std::string& what) {
  std::string where = origin;
  if (node && node.Mark().line >= 0) where += ":" + std::to_string(node.Mark().line + 1);
  throw MatrixError(where + ": " + what);
}

std::string scalar(const std::string& origin, const YAML::Node& parent, const char* key, bool required = true) {
  YAML::Node n = parent[key];
  if (!n) {
    if (required) fail(origin, parent, std::string("missing '") + key + "'");
    return {};
  }
  if (!n.IsScalar()) fail(origin, n, std::string("'") + key + "' must be a single value");
  return n.as<std::string>();
}

std::vector<std::string> list(const std::string& origin, const YAML::Node& parent, const char* key) {
  std::vector<std::string> out;
  YAML::Node n = parent[key];
  if (!n) return out;
  if (!n.IsSequence()) fail(origin, n, std::string("'") + key + "' must be a list");
  for (const auto& e : n) {
    if (!e.IsScalar()) fail(origin, e, std::string("'") + key + "' entries must be single values");
    out.push_back(e.as<std::string>());
  }
  return out;
}

// Numbers and booleans are read from the scalar text here rather than with Node::as<int>, which
// goes through a std::istream and its locale: in a process where torch is loaded that path
// crashed (seen on an H200 machine, torch 2.11, yaml-cpp 0.8).
int integer(const std::string& origin, const YAML::Node& parent, const char* key, int fallback) {
  YAML::Node n = parent[key];
  if (!n) return fallback;
  const std::string text = n.IsScalar() ? n.Scalar() : std::string();
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size())
    fail(origin, n, std::string("'") + key + "' must be an integer, found '" + text + "'");
  return value;
}

bool boolean(const std::string& origin, const YAML::Node& parent, const char* key) {
  YAML::Node n = parent[key];
  if (!n) return false;
  const std::string text = n.IsScalar() ? n.Scalar() : std::string();
  if (text == "true" || text == "True") return true;
  if (text == "false" || text == "False") return false;
  fail(origin, n, std::string("'") + key + "' must be true or false, found '" + text + "'");
}

MatrixOp parse_op(const std::string& origin, const YAML::Node& n) {
  if (!n.IsMap()) fail(origin, n, "an op entry must be a mapping");
  MatrixOp op;
  op.present = boolean(origin, n, "present");
  if (!op.present) return op;
  op.module = scalar(origin, n, "module");
  op.aliases = list(origin, n, "aliases");
  op.sinks = scalar(origin, n, "sinks");
  if (op.sinks != "supported" && op.sinks != "unsupported") fail(origin, n["sinks"], "sinks must be supported or unsupported");
  if (n["window_arity"]) op.window_arity = integer(origin, n, "window_arity", 0);
  op.required = integer(origin, n, "required", 0);
  op.params = list(origin, n, "params");
  if (op.required < 0 || op.required > static_cast<int>(op.params.size()))
    fail(origin, n, "required must be between 0 and the number of params");
  return op;
}

}  // namespace

CompatMatrix CompatMatrix::from_yaml(const std::string& text, const std::string& origin) {
  CompatMatrix m;
  m.origin_ = origin;
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw MatrixError(origin + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg);
  }
  if (!root.IsMap()) throw MatrixError(origin + ": the top level must be a mapping");
  try {
    if (scalar(origin, root, "schema_version") != "1") fail(origin, root["schema_version"], "only schema_version 1 is understood");
    YAML::Node releases = root["releases"];
    if (!releases || !releases.IsSequence()) fail(origin, root, "'releases' must be a list");
    for (const auto& r : releases) {
      MatrixRelease rel;
      std::string text_version = scalar(origin, r, "version");
      auto v = Version::parse(text_version);
      if (!v) fail(origin, r["version"], "'" + text_version + "' is not a version");
      rel.version = *v;
      rel.tag = scalar(origin, r, "tag", false);
      rel.distribution = scalar(origin, r, "distribution");
      YAML::Node ops = r["ops"];
      if (!ops || !ops.IsMap()) fail(origin, r, "'ops' must be a mapping");
      for (const auto& kv : ops) rel.ops[kv.first.as<std::string>()] = parse_op(origin, kv.second);
      if (!m.releases_.empty() && !(m.releases_.back().version < rel.version))
        fail(origin, r["version"], "releases must be in ascending order (" + text_version + " after " +
                                       m.releases_.back().version.text + ")");
      m.releases_.push_back(std::move(rel));
    }
    YAML::Node quirks = root["quirks"];
    if (quirks && !quirks.IsSequence()) fail(origin, quirks, "'quirks' must be a list");
    for (const auto& q : quirks) {
      MatrixQuirk quirk;
      quirk.id = scalar(origin, q, "id");
      std::string error;
      auto spec = VersionSpec::parse(scalar(origin, q, "versions"), &error);
      if (!spec) fail(origin, q["versions"], error);
      quirk.versions = *spec;
      quirk.archs = list(origin, q, "archs");
      quirk.ops = list(origin, q, "ops");
      quirk.requires_param = scalar(origin, q, "requires_param", false);
      if (YAML::Node when = q["when"]) {
        if (!when.IsMap()) fail(origin, when, "'when' must be a mapping");
        for (const auto& kv : when) {
          auto& values = quirk.when[kv.first.as<std::string>()];
          if (kv.second.IsSequence()) {
            for (const auto& v : kv.second) values.push_back(v.as<std::string>());
          } else if (kv.second.IsScalar()) {
            values.push_back(kv.second.as<std::string>());
          } else {
            fail(origin, kv.second, "'when' values must be single values or lists");
          }
        }
      }
      quirk.effect = scalar(origin, q, "effect");
      quirk.summary = scalar(origin, q, "summary");
      m.quirks_.push_back(std::move(quirk));
    }
  } catch (const YAML::Exception& e) {
    throw MatrixError(origin + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  return m;
}

const CompatMatrix& CompatMatrix::builtin() {
  static const CompatMatrix m = from_yaml(std::string(embedded::compat_matrix_yaml), "built-in compat_matrix.yaml");
  return m;
}

const MatrixRelease* CompatMatrix::find_exact(const std::string& version_text) const {
  auto v = Version::parse(version_text);
  if (!v) return nullptr;
  for (const auto& r : releases_)
    if (r.version == *v) return &r;
  return nullptr;
}

const MatrixRelease* CompatMatrix::find_line(const Version& v) const {
  const MatrixRelease* best = nullptr;
  const MatrixRelease* newest_tag = nullptr;
  const MatrixRelease* main = nullptr;
  for (const auto& r : releases_) {
    if (r.version.is_main) {
      main = &r;
      continue;
    }
    newest_tag = &r;
    if (r.version <= v || r.version.same_release(v)) best = &r;
  }
  if (v.is_main) return main ? main : newest_tag;
  // Newer than every tagged release (a build of main): main describes it best.
  if (main && best == newest_tag && best && !best->version.same_release(v) && v > best->version) return main;
  return best;
}

const CompatMatrix& load_matrix(const std::string& override_path, std::string* source, std::string* warning) {
  std::string path = override_path;
  if (path.empty())
    if (const char* env = std::getenv("AITER_COMPAT_MATRIX")) path = env;
  if (path.empty()) {
    *source = "built-in";
    return CompatMatrix::builtin();
  }
  // One override at a time is kept; a probe run loads it once.
  static std::mutex mutex;
  static std::unique_ptr<CompatMatrix> loaded;
  static std::string loaded_path;
  std::lock_guard lock(mutex);
  if (loaded && loaded_path == path) {
    *source = path;
    return *loaded;
  }
  std::ifstream in(path);
  if (!in) {
    *warning = "cannot read matrix " + path + "; using the built-in matrix";
    spdlog::warn("{}", *warning);
    *source = "built-in";
    return CompatMatrix::builtin();
  }
  std::stringstream text;
  text << in.rdbuf();
  try {
    loaded = std::make_unique<CompatMatrix>(CompatMatrix::from_yaml(text.str(), path));
    loaded_path = path;
    *source = path;
    return *loaded;
  } catch (const MatrixError& e) {
    *warning = std::string(e.what()) + "; using the built-in matrix";
    spdlog::warn("{}", *warning);
    *source = "built-in";
    return CompatMatrix::builtin();
  }
}

}  // namespace aiter_compat
