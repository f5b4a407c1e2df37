#include "aiter_compat/probe/version.hpp"

#include <cctype>
#include <charconv>

namespace aiter_compat {
namespace {

bool read_int(std::string_view& s, int& out) {
  size_t n = 0;
  while (n < s.size() && std::isdigit(static_cast<unsigned char>(s[n]))) ++n;
  if (n == 0 || n > 9) return false;
  std::from_chars(s.data(), s.data() + n, out);
  s.remove_prefix(n);
  return true;
}

bool eat(std::string_view& s, std::string_view word) {
  if (s.substr(0, word.size()) != word) return false;
  s.remove_prefix(word.size());
  return true;
}

// Missing parts order before present ones for pre (a release without rc is newer), after for
// post and dev as PEP 440 says: 1.0.dev1 < 1.0rc1 < 1.0 < 1.0.post1.
int pre_key(int pre) { return pre < 0 ? 1 << 30 : pre; }
int dev_key(int dev) { return dev < 0 ? 1 << 30 : dev; }

}  // namespace

std::optional<Version> Version::parse(std::string_view text) {
  Version v;
  v.text = std::string(text);
  std::string_view s = text;
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  if (s == "main") {
    v.is_main = true;
    return v;
  }
  if (!s.empty() && (s.front() == 'v' || s.front() == 'V')) s.remove_prefix(1);
  int part = 0;
  if (!read_int(s, part)) return std::nullopt;
  v.release.push_back(part);
  while (s.size() > 1 && s[0] == '.' && std::isdigit(static_cast<unsigned char>(s[1]))) {
    s.remove_prefix(1);
    if (!read_int(s, part)) return std::nullopt;
    v.release.push_back(part);
  }
  if (eat(s, "rc") || eat(s, "-rc") || eat(s, ".rc")) {
    if (!read_int(s, v.pre)) return std::nullopt;
  }
  if (eat(s, ".post") || eat(s, "post")) {
    if (!read_int(s, v.post)) return std::nullopt;
  }
  if (eat(s, ".dev") || eat(s, "dev")) {
    if (!read_int(s, v.dev)) return std::nullopt;
  }
  if (!s.empty() && s.front() == '+') {
    v.local = std::string(s.substr(1));
    s = {};
  }
  if (!s.empty()) return std::nullopt;
  return v;
}

std::strong_ordering Version::operator<=>(const Version& o) const {
  if (is_main || o.is_main) return int(is_main) <=> int(o.is_main);
  size_t n = std::max(release.size(), o.release.size());
  for (size_t i = 0; i < n; ++i) {
    int a = i < release.size() ? release[i] : 0;
    int b = i < o.release.size() ? o.release[i] : 0;
    if (a != b) return a <=> b;
  }
  // A dev release of a plain version sorts before its pre-releases.
  bool only_dev = pre < 0 && post < 0 && dev >= 0, o_only_dev = o.pre < 0 && o.post < 0 && o.dev >= 0;
  if (only_dev != o_only_dev) return only_dev ? std::strong_ordering::less : std::strong_ordering::greater;
  if (auto c = pre_key(pre) <=> pre_key(o.pre); c != 0) return c;
  if (auto c = post <=> o.post; c != 0) return c;
  return dev_key(dev) <=> dev_key(o.dev);
}

bool Version::same_release(const Version& o) const {
  return (*this <=> o) == 0;  // local labels never order, so they are ignored here
}

std::optional<VersionSpec> VersionSpec::parse(std::string_view text, std::string* error) {
  VersionSpec spec;
  spec.text_ = std::string(text);
  std::string_view s = text;
  while (!s.empty()) {
    size_t comma = s.find(',');
    std::string_view clause = s.substr(0, comma);
    s = comma == std::string_view::npos ? std::string_view{} : s.substr(comma + 1);
    while (!clause.empty() && std::isspace(static_cast<unsigned char>(clause.front()))) clause.remove_prefix(1);
    if (clause.empty()) continue;
    std::string op;
    for (std::string_view cand : {">=", "<=", "==", "!=", ">", "<"}) {
      if (clause.substr(0, cand.size()) == cand) {
        op = std::string(cand);
        break;
      }
    }
    if (op.empty()) {
      if (error) *error = "clause '" + std::string(clause) + "' has no operator (>=, >, <=, <, ==, !=)";
      return std::nullopt;
    }
    auto v = Version::parse(clause.substr(op.size()));
    if (!v) {
      if (error) *error = "clause '" + std::string(clause) + "' has no valid version";
      return std::nullopt;
    }
    spec.clauses_.push_back({op, *v});
  }
  return spec;
}

bool VersionSpec::contains(const Version& v) const {
  for (const auto& c : clauses_) {
    auto cmp = v <=> c.version;
    bool ok = c.op == ">=" ? cmp >= 0 : c.op == ">" ? cmp > 0 : c.op == "<=" ? cmp <= 0
            : c.op == "<" ? cmp < 0 : c.op == "==" ? cmp == 0 : cmp != 0;
    if (!ok) return false;
  }
  return true;
}

}  // namespace aiter_compat
