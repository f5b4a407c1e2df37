#include "aiter_compat/probe/matrix.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "aiter_compat/probe/logging.hpp"
#include "embedded_text.hpp"

namespace aiter_compat {
namespace {

// Where a node came from: the file, and the line its text starts at when only part of the file
// was handed to the YAML parser (an indexed matrix parses one release at a time).
struct Source {
  const std::string& origin;
  int first_line = 0;
};

[[noreturn]] void fail(const Source& src, const YAML::Node& node, const std::string& what) {
  std::string where = src.origin;
  if (node && node.Mark().line >= 0) where += ":" + std::to_string(src.first_line + node.Mark().line + 1);
  throw MatrixError(where + ": " + what);
}

[[noreturn]] void fail_yaml(const Source& src, const YAML::Exception& e, const std::string& what) {
  throw MatrixError(src.origin + ":" + std::to_string(src.first_line + e.mark.line + 1) + ": " + what);
}

std::string scalar(const Source& src, const YAML::Node& parent, const char* key, bool required = true) {
  YAML::Node n = parent[key];
  if (!n) {
    if (required) fail(src, parent, std::string("missing '") + key + "'");
    return {};
  }
  if (!n.IsScalar()) fail(src, n, std::string("'") + key + "' must be a single value");
  return n.as<std::string>();
}

std::vector<std::string> list(const Source& src, const YAML::Node& parent, const char* key) {
  std::vector<std::string> out;
  YAML::Node n = parent[key];
  if (!n) return out;
  if (!n.IsSequence()) fail(src, n, std::string("'") + key + "' must be a list");
  for (const auto& e : n) {
    if (!e.IsScalar()) fail(src, e, std::string("'") + key + "' entries must be single values");
    out.push_back(e.as<std::string>());
  }
  return out;
}

// Numbers and booleans are read from the scalar text here rather than with Node::as<int>, which
// goes through a std::istream and its locale: in a process where torch is loaded that path
// crashed (seen on an H200 machine, torch 2.11, yaml-cpp 0.8).
int integer(const Source& src, const YAML::Node& parent, const char* key, int fallback) {
  YAML::Node n = parent[key];
  if (!n) return fallback;
  const std::string text = n.IsScalar() ? n.Scalar() : std::string();
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size())
    fail(src, n, std::string("'") + key + "' must be an integer, found '" + text + "'");
  return value;
}

bool boolean(const Source& src, const YAML::Node& parent, const char* key) {
  YAML::Node n = parent[key];
  if (!n) return false;
  const std::string text = n.IsScalar() ? n.Scalar() : std::string();
  if (text == "true" || text == "True") return true;
  if (text == "false" || text == "False") return false;
  fail(src, n, std::string("'") + key + "' must be true or false, found '" + text + "'");
}

MatrixOp parse_op(const Source& src, const YAML::Node& n) {
  if (!n.IsMap()) fail(src, n, "an op entry must be a mapping");
  MatrixOp op;
  op.present = boolean(src, n, "present");
  if (!op.present) return op;
  op.module = scalar(src, n, "module");
  op.aliases = list(src, n, "aliases");
  op.sinks = scalar(src, n, "sinks");
  if (op.sinks != "supported" && op.sinks != "unsupported") fail(src, n["sinks"], "sinks must be supported or unsupported");
  if (n["window_arity"]) op.window_arity = integer(src, n, "window_arity", 0);
  op.required = integer(src, n, "required", 0);
  op.params = list(src, n, "params");
  if (op.required < 0 || op.required > static_cast<int>(op.params.size()))
    fail(src, n, "required must be between 0 and the number of params");
  return op;
}

MatrixRelease parse_release(const Source& src, const YAML::Node& r) {
  MatrixRelease rel;
  std::string text_version = scalar(src, r, "version");
  auto v = Version::parse(text_version);
  if (!v) fail(src, r["version"], "'" + text_version + "' is not a version");
  rel.version = *v;
  rel.tag = scalar(src, r, "tag", false);
  rel.distribution = scalar(src, r, "distribution");
  YAML::Node ops = r["ops"];
  if (!ops || !ops.IsMap()) fail(src, r, "'ops' must be a mapping");
  for (const auto& kv : ops) rel.ops[kv.first.as<std::string>()] = parse_op(src, kv.second);
  return rel;
}

MatrixQuirk parse_quirk(const Source& src, const YAML::Node& q) {
  MatrixQuirk quirk;
  quirk.id = scalar(src, q, "id");
  std::string error;
  auto spec = VersionSpec::parse(scalar(src, q, "versions"), &error);
  if (!spec) fail(src, q["versions"], error);
  quirk.versions = *spec;
  quirk.archs = list(src, q, "archs");
  quirk.archs_not = list(src, q, "archs_not");
  if (!quirk.archs.empty() && !quirk.archs_not.empty()) fail(src, q["archs_not"], "'archs' and 'archs_not' exclude each other");
  quirk.ops = list(src, q, "ops");
  quirk.requires_param = scalar(src, q, "requires_param", false);
  if (YAML::Node when = q["when"]) {
    if (!when.IsMap()) fail(src, when, "'when' must be a mapping");
    for (const auto& kv : when) {
      auto& values = quirk.when[kv.first.as<std::string>()];
      if (kv.second.IsSequence()) {
        for (const auto& v : kv.second) values.push_back(v.as<std::string>());
      } else if (kv.second.IsScalar()) {
        values.push_back(kv.second.as<std::string>());
      } else {
        fail(src, kv.second, "'when' values must be single values or lists");
      }
    }
  }
  quirk.effect = scalar(src, q, "effect");
  quirk.summary = scalar(src, q, "summary");
  return quirk;
}

std::vector<MatrixQuirk> parse_quirks(const Source& src, const YAML::Node& quirks) {
  std::vector<MatrixQuirk> out;
  if (quirks && !quirks.IsSequence()) fail(src, quirks, "'quirks' must be a list");
  for (const auto& q : quirks) out.push_back(parse_quirk(src, q));
  return out;
}

YAML::Node load_yaml(const Source& src, const std::string& text) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    fail_yaml(src, e, "not valid YAML: " + e.msg);
  }
}

void check_ascending(const Source& src, const YAML::Node& at, const std::vector<Version>& versions) {
  size_t n = versions.size();
  if (n >= 2 && !(versions[n - 2] < versions[n - 1]))
    fail(src, at, "releases must be in ascending order (" + versions[n - 1].text + " after " + versions[n - 2].text + ")");
}

// The version of a `  - version: "0.1.10"` line (quotes optional), or nullopt for any other line.
// Read by hand: std::regex goes through the locale machinery, like the istream path above.
std::optional<Version> release_head_version(std::string_view line) {
  constexpr std::string_view head = "  - version: ";
  if (line.substr(0, head.size()) != head) return std::nullopt;
  std::string_view v = line.substr(head.size());
  while (!v.empty() && (v.back() == ' ' || v.back() == '\r')) v.remove_suffix(1);
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
  if (v.empty() || v.find_first_of("\" #:'{}[],") != std::string_view::npos) return std::nullopt;
  return Version::parse(v);
}

// One part of an indexed text: its bytes and the line it starts at.
struct Part {
  size_t begin = 0, end = 0;
  int first_line = 0;
};

}  // namespace

struct CompatMatrix::Unparsed {
  std::string text;
  std::vector<Part> releases;  // one per release, in file order
  Part quirks;                 // the `quirks:` key and its list; empty when there is none
  std::vector<char> release_done;
  bool quirks_done = false;
  std::mutex mutex;
};

CompatMatrix CompatMatrix::from_yaml(const std::string& text, const std::string& origin) {
  CompatMatrix m;
  m.origin_ = origin;
  const Source src{origin};
  YAML::Node root = load_yaml(src, text);
  if (!root.IsMap()) throw MatrixError(origin + ": the top level must be a mapping");
  try {
    if (scalar(src, root, "schema_version") != "1") fail(src, root["schema_version"], "only schema_version 1 is understood");
    YAML::Node releases = root["releases"];
    if (!releases || !releases.IsSequence()) fail(src, root, "'releases' must be a list");
    for (const auto& r : releases) {
      m.releases_.push_back(parse_release(src, r));
      m.versions_.push_back(m.releases_.back().version);
      check_ascending(src, r["version"], m.versions_);
    }
    m.quirks_ = parse_quirks(src, root["quirks"]);
  } catch (const YAML::Exception& e) {
    fail_yaml(src, e, e.msg);
  }
  return m;
}

CompatMatrix CompatMatrix::indexed_yaml(std::string text, const std::string& origin) {
  // Reads the layout `schema_version: 1`, `releases:`, `  - version: "X"` per release, `quirks:`;
  // anything else (flow style, other indentation, other keys) is parsed whole.
  auto state = std::make_shared<Unparsed>();
  std::vector<Version> versions;
  enum class Section { header, releases, quirks } section = Section::header;
  bool schema_ok = false;
  size_t pos = 0;
  int line = 0;
  auto close_release = [&](size_t at) {
    if (!state->releases.empty() && state->releases.back().end == 0) state->releases.back().end = at;
  };
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    std::string_view l(text.data() + pos, eol - pos);
    if (!l.empty() && l[0] != ' ' && l[0] != '#') {  // a top-level key
      close_release(pos);
      if (section == Section::quirks) state->quirks.end = pos;
      if (l == "schema_version: 1") {
        schema_ok = true;
      } else if (l == "releases:") {
        section = Section::releases;
      } else if (l == "quirks:") {
        section = Section::quirks;
        state->quirks = {pos, 0, line};
      } else {
        return from_yaml(text, origin);
      }
    } else if (section == Section::releases && l.rfind("  - ", 0) == 0) {
      auto v = release_head_version(l);
      if (!v) return from_yaml(text, origin);
      close_release(pos);
      state->releases.push_back({pos, 0, line});
      versions.push_back(*v);
      if (versions.size() >= 2 && !(versions[versions.size() - 2] < versions.back())) return from_yaml(text, origin);
    }
    pos = eol + 1;
    ++line;
  }
  close_release(text.size());
  if (section == Section::quirks && state->quirks.end == 0) state->quirks.end = text.size();
  if (!schema_ok || state->releases.empty()) return from_yaml(text, origin);
  CompatMatrix m;
  m.origin_ = origin;
  m.versions_ = std::move(versions);
  m.releases_.resize(m.versions_.size());
  state->release_done.assign(m.versions_.size(), 0);
  state->text = std::move(text);
  m.unparsed_ = std::move(state);
  return m;
}

const MatrixRelease& CompatMatrix::release_at(size_t i) const {
  if (!unparsed_) return releases_[i];
  std::lock_guard lock(unparsed_->mutex);
  if (!unparsed_->release_done[i]) {
    const Part& part = unparsed_->releases[i];
    const Source src{origin_, part.first_line};
    try {
      YAML::Node items = load_yaml(src, unparsed_->text.substr(part.begin, part.end - part.begin));
      if (!items.IsSequence() || items.size() != 1) fail(src, items, "a release must be one list entry");
      releases_[i] = parse_release(src, items[0]);
    } catch (const YAML::Exception& e) {
      fail_yaml(src, e, e.msg);
    }
    unparsed_->release_done[i] = 1;
  }
  return releases_[i];
}

const std::vector<MatrixRelease>& CompatMatrix::releases() const {
  for (size_t i = 0; i < releases_.size(); ++i) release_at(i);
  return releases_;
}

const std::vector<MatrixQuirk>& CompatMatrix::quirks() const {
  if (!unparsed_) return quirks_;
  std::lock_guard lock(unparsed_->mutex);
  if (!unparsed_->quirks_done && unparsed_->quirks.end > unparsed_->quirks.begin) {
    const Part& part = unparsed_->quirks;
    const Source src{origin_, part.first_line};
    try {
      YAML::Node doc = load_yaml(src, unparsed_->text.substr(part.begin, part.end - part.begin));
      quirks_ = parse_quirks(src, doc["quirks"]);
    } catch (const YAML::Exception& e) {
      fail_yaml(src, e, e.msg);
    }
  }
  unparsed_->quirks_done = true;
  return quirks_;
}

bool CompatMatrix::fully_parsed() const {
  if (!unparsed_) return true;
  std::lock_guard lock(unparsed_->mutex);
  return unparsed_->quirks_done &&
         std::all_of(unparsed_->release_done.begin(), unparsed_->release_done.end(), [](char d) { return d != 0; });
}

const CompatMatrix& CompatMatrix::builtin() {
  static const CompatMatrix m = indexed_yaml(std::string(embedded::compat_matrix_yaml), "built-in compat_matrix.yaml");
  return m;
}

std::vector<std::string> CompatMatrix::releases_locating(const std::string& op, const std::string& module) const {
  std::vector<std::string> out;
  if (unparsed_ && unparsed_->text.find(module) == std::string::npos) return out;
  for (const auto& r : releases()) {
    auto it = r.ops.find(op);
    if (it == r.ops.end() || !it->second.present) continue;
    const auto& a = it->second.aliases;
    if (it->second.module == module || std::find(a.begin(), a.end(), module) != a.end()) out.push_back(r.version.text);
  }
  return out;
}

const MatrixRelease* CompatMatrix::find_exact(const std::string& version_text) const {
  auto v = Version::parse(version_text);
  if (!v) return nullptr;
  for (size_t i = 0; i < versions_.size(); ++i)
    if (versions_[i] == *v) return &release_at(i);
  return nullptr;
}

const MatrixRelease* CompatMatrix::find_line(const Version& v) const {
  std::optional<size_t> best, newest_tag, main;
  for (size_t i = 0; i < versions_.size(); ++i) {
    const Version& r = versions_[i];
    if (r.is_main) {
      main = i;
      continue;
    }
    newest_tag = i;
    if (r <= v || r.same_release(v)) best = i;
  }
  auto at = [&](std::optional<size_t> i) { return i ? &release_at(*i) : nullptr; };
  if (v.is_main) return at(main ? main : newest_tag);
  // Newer than every tagged release (a build of main): main describes it best.
  if (main && best && best == newest_tag && !versions_[*best].same_release(v) && v > versions_[*best]) return at(main);
  return at(best);
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
    logging::process(logging::Level::warn, *warning);
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
    logging::process(logging::Level::warn, *warning);
    *source = "built-in";
    return CompatMatrix::builtin();
  }
}

}  // namespace aiter_compat
