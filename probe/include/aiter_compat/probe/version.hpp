#pragma once
// The subset of PEP 440 that AITer's versions use: release numbers, .postN, .devN, rcN, and a
// +local label (e.g. 0.1.12+rocm7.2.manylinux_2_28), plus "main" for an unreleased checkout,
// which orders after every release. Specifier sets such as ">=0.1.10,<0.1.18" select ranges.
#include <compare>
#include <optional>
#include <string>
#include <vector>

namespace aiter_compat {

struct Version {
  bool is_main = false;
  std::vector<int> release;  // 0.1.12 -> {0, 1, 12}
  int pre = -1;              // rcN (-1: none)
  int post = -1;             // .postN (-1: none)
  int dev = -1;              // .devN (-1: none)
  std::string local;         // text after '+'
  std::string text;          // as given

  static std::optional<Version> parse(std::string_view text);
  std::strong_ordering operator<=>(const Version& other) const;
  bool operator==(const Version& other) const { return (*this <=> other) == 0; }
  // The same release but for the local label: "0.1.12+rocm7.2" is the 0.1.12 release, while
  // "0.1.7.post2.dev18" (18 commits after 0.1.7.post1) is not the 0.1.7.post2 release.
  bool same_release(const Version& other) const;
};

// A comma-separated list of clauses (>=, >, <=, <, ==, !=); empty matches everything.
class VersionSpec {
 public:
  static std::optional<VersionSpec> parse(std::string_view text, std::string* error = nullptr);
  bool contains(const Version& v) const;
  const std::string& text() const { return text_; }

 private:
  struct Clause {
    std::string op;
    Version version;
  };
  std::vector<Clause> clauses_;
  std::string text_;
};

}  // namespace aiter_compat
