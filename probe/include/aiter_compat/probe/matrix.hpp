#pragma once
// compat_matrix.yaml in memory: what each AITer release offers and the known quirks.
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "aiter_compat/probe/version.hpp"

namespace aiter_compat {

struct MatrixOp {
  bool present = false;
  std::string module;
  std::vector<std::string> aliases;  // other import paths that keep working
  std::string sinks;                 // "supported" / "unsupported"
  std::optional<int> window_arity;
  int required = 0;                  // leading parameters without defaults
  std::vector<std::string> params;
};

struct MatrixRelease {
  Version version;
  std::string tag, distribution;
  std::map<std::string, MatrixOp> ops;
};

struct MatrixQuirk {
  std::string id;
  VersionSpec versions;
  std::vector<std::string> archs;  // empty: any GPU
  std::vector<std::string> archs_not;  // every GPU but these (an entry point built for some archs only)
  std::vector<std::string> ops;
  std::string requires_param;      // applies only where the op has this parameter
  std::map<std::string, std::vector<std::string>> when;  // call conditions: key -> accepted values
  std::string effect, summary;
};

class CompatMatrix {
 public:
  // Parses and checks the whole text; throws MatrixError with the file, line and what is wrong.
  static CompatMatrix from_yaml(const std::string& text, const std::string& origin);
  // Reads only where each release and the quirks sit (the built-in's block layout: one
  // `  - version: X` line per release, `quirks:` at the top level) and parses each part on
  // first use: a probe needs the quirks and one release, not all sixty. Text in another layout
  // is parsed whole, as from_yaml does.
  static CompatMatrix indexed_yaml(std::string text, const std::string& origin);
  // The copy compiled in, indexed; tests check that it parses whole and equals the source file.
  static const CompatMatrix& builtin();

  const std::vector<MatrixRelease>& releases() const;  // every release (parses the rest)
  const std::vector<MatrixQuirk>& quirks() const;
  const std::string& origin() const { return origin_; }
  bool fully_parsed() const;  // false while parts of an indexed text are still unread

  // The releases that record op at module (as its module or an alias), in order. Parses no
  // release of an indexed text that does not contain the module's name at all.
  std::vector<std::string> releases_locating(const std::string& op, const std::string& module) const;

  const MatrixRelease* find_exact(const std::string& version_text) const;
  // The newest release not newer than v ("main" when v is newer than every release).
  const MatrixRelease* find_line(const Version& v) const;

 private:
  struct Unparsed;  // an indexed text and which of its parts are still unread
  const MatrixRelease& release_at(size_t i) const;

  std::vector<Version> versions_;                // ascending, main last; known without parsing
  mutable std::vector<MatrixRelease> releases_;  // one slot per release, filled on first use
  mutable std::vector<MatrixQuirk> quirks_;
  std::shared_ptr<Unparsed> unparsed_;           // null when everything was parsed at load
  std::string origin_;
};

struct MatrixError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The matrix to use: an override (--matrix or AITER_COMPAT_MATRIX) if it loads, else the
// built-in one; *warning says why an override was not used.
const CompatMatrix& load_matrix(const std::string& override_path, std::string* source,
                                std::string* warning);

}  // namespace aiter_compat
