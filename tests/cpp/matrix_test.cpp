#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "aiter_compat/probe/matrix.hpp"
#include "aiter_compat/probe/op_table.hpp"

using namespace aiter_compat;

namespace {

std::string source_matrix_text() {
  std::ifstream in(SOURCE_MATRIX);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every field of two matrices that differs, named; empty when they are the same.
std::vector<std::string> differences(const CompatMatrix& x, const CompatMatrix& y) {
  std::vector<std::string> out;
  auto check = [&](bool same, const std::string& what) {
    if (!same) out.push_back(what);
  };
  check(x.releases().size() == y.releases().size(), "number of releases");
  for (size_t i = 0; i < std::min(x.releases().size(), y.releases().size()); ++i) {
    const MatrixRelease &a = x.releases()[i], &b = y.releases()[i];
    const std::string at = "release " + a.version.text;
    check(a.version.text == b.version.text && a.version == b.version, at + " version");
    check(a.tag == b.tag, at + " tag");
    check(a.distribution == b.distribution, at + " distribution");
    check(a.ops.size() == b.ops.size(), at + " number of ops");
    for (const auto& [name, op] : a.ops) {
      auto it = b.ops.find(name);
      if (it == b.ops.end()) {
        out.push_back(at + " " + name + " missing");
        continue;
      }
      const MatrixOp& other = it->second;
      check(op.present == other.present, at + " " + name + " present");
      check(op.module == other.module, at + " " + name + " module");
      check(op.aliases == other.aliases, at + " " + name + " aliases");
      check(op.sinks == other.sinks, at + " " + name + " sinks");
      check(op.window_arity == other.window_arity, at + " " + name + " window_arity");
      check(op.required == other.required, at + " " + name + " required");
      check(op.params == other.params, at + " " + name + " params");
    }
  }
  check(x.quirks().size() == y.quirks().size(), "number of quirks");
  for (size_t i = 0; i < std::min(x.quirks().size(), y.quirks().size()); ++i) {
    const MatrixQuirk &a = x.quirks()[i], &b = y.quirks()[i];
    const std::string at = "quirk " + a.id;
    check(a.id == b.id, at + " id");
    check(a.versions.text() == b.versions.text(), at + " versions");
    check(a.archs == b.archs, at + " archs");
    check(a.ops == b.ops, at + " ops");
    check(a.requires_param == b.requires_param, at + " requires_param");
    check(a.when == b.when, at + " when");
    check(a.effect == b.effect, at + " effect");
    check(a.summary == b.summary, at + " summary");
  }
  return out;
}

std::string replaced_once(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

}  // namespace

TEST(Matrix, BuiltinEqualsTheSourceFile) {
  CompatMatrix file = CompatMatrix::from_yaml(source_matrix_text(), SOURCE_MATRIX);
  const CompatMatrix& builtin = CompatMatrix::builtin();
  EXPECT_EQ(differences(file, builtin), std::vector<std::string>{});
}

// The comparison itself sees a change of one value anywhere: one parameter of one release, one
// quirk's condition, one release's distribution.
TEST(Matrix, ComparisonSeesOneChangedValue) {
  const std::string text = source_matrix_text();
  CompatMatrix file = CompatMatrix::from_yaml(text, "m.yaml");
  auto changed = [&](const std::string& from, const std::string& to) {
    return differences(file, CompatMatrix::from_yaml(replaced_once(text, from, to), "changed.yaml"));
  };
  EXPECT_EQ(changed("return_lse, return_attn_probs, block_table]", "return_attn_probs, return_lse, block_table]"),
            std::vector<std::string>{"release 0.1.1 flash_attn_varlen_func params"});
  EXPECT_EQ(changed("head_dim_qk: [128, 192]", "head_dim_qk: [128]"),
            std::vector<std::string>{"quirk v3-asm-drops-sinks when"});
  EXPECT_EQ(changed("    distribution: amd-aiter\n", "    distribution: aiter\n"),
            std::vector<std::string>{"release 0.1.7.post2.dev18 distribution"});
}

TEST(Matrix, IndexedTextParsesOnlyWhatIsAskedFor) {
  CompatMatrix m = CompatMatrix::indexed_yaml(source_matrix_text(), "m.yaml");
  EXPECT_FALSE(m.fully_parsed());
  const MatrixRelease* r = m.find_exact("0.1.10");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->ops.at("flash_attn_varlen_func").params.back(), "sink_ptr");
  EXPECT_EQ(m.find_line(*Version::parse("0.1.21.dev4")), m.find_exact("main"));
  EXPECT_FALSE(m.quirks().empty());
  EXPECT_FALSE(m.fully_parsed());  // two releases and the quirks read so far
  EXPECT_EQ(&m.releases()[0], m.find_exact("0.1.1"));  // slots do not move once read
  EXPECT_TRUE(m.fully_parsed());
}

TEST(Matrix, IndexedTextInAnotherLayoutIsParsedWhole) {
  std::string flow =
      "schema_version: 1\nreleases:\n"
      "  - {version: '0.1.2', distribution: aiter, ops: {}}\n";
  CompatMatrix m = CompatMatrix::indexed_yaml(flow, "flow.yaml");
  EXPECT_TRUE(m.fully_parsed());
  ASSERT_NE(m.find_exact("0.1.2"), nullptr);
  EXPECT_EQ(m.find_exact("0.1.2")->distribution, "aiter");
}

TEST(Matrix, IndexedTextReportsTheFileLineOfABadRelease) {
  std::string text =
      "schema_version: 1\nreleases:\n"
      "  - version: \"0.1.1\"\n    distribution: aiter\n    ops: {}\n"
      "  - version: \"0.1.2\"\n    distribution: aiter\n    ops:\n      f: {present: maybe}\n";
  CompatMatrix m = CompatMatrix::indexed_yaml(text, "m.yaml");
  EXPECT_EQ(m.find_exact("0.1.1")->distribution, "aiter");
  try {
    m.find_exact("0.1.2");
    FAIL() << "no error for present: maybe";
  } catch (const MatrixError& e) {
    EXPECT_NE(std::string(e.what()).find("m.yaml:9: 'present' must be true or false, found 'maybe'"), std::string::npos)
        << e.what();
  }
}

TEST(Matrix, CoversEveryReleaseLineAndEveryOp) {
  const CompatMatrix& m = CompatMatrix::builtin();
  std::set<std::string> versions;
  for (const auto& r : m.releases()) {
    versions.insert(r.version.text);
    for (const auto& op : attention_ops()) EXPECT_TRUE(r.ops.count(op.name)) << r.version.text << " " << op.name;
  }
  for (int line = 1; line <= 20; ++line) EXPECT_TRUE(versions.count("0.1." + std::to_string(line))) << line;
  EXPECT_TRUE(versions.count("0.1.20.post1"));
  EXPECT_TRUE(versions.count("main"));
  EXPECT_TRUE(m.releases().back().version.is_main);
}

TEST(Matrix, FactsOfTheApiHistory) {
  const CompatMatrix& m = CompatMatrix::builtin();
  auto op = [&](const char* version, const char* name) { return m.find_exact(version)->ops.at(name); };
  EXPECT_EQ(op("0.1.9.post1", "flash_attn_varlen_func").sinks, "unsupported");
  EXPECT_EQ(op("0.1.10", "flash_attn_varlen_func").sinks, "supported");
  EXPECT_EQ(op("0.1.10", "flash_attn_varlen_func").params.back(), "sink_ptr");
  EXPECT_EQ(op("0.1.7", "flash_attn_varlen_func").window_arity, 2);
  EXPECT_EQ(op("0.1.8", "flash_attn_varlen_func").window_arity, 3);
  EXPECT_EQ(m.find_exact("0.1.7.post5")->distribution, "aiter");
  EXPECT_EQ(m.find_exact("0.1.8")->distribution, "amd-aiter");
  EXPECT_FALSE(op("0.1.6.post1", "unified_attention").present);
  EXPECT_EQ(op("0.1.6.post2", "unified_attention").module, "aiter.ops.triton.unified_attention");
  EXPECT_EQ(op("0.1.10", "unified_attention").module, "aiter.ops.triton.attention.unified_attention");
  EXPECT_EQ(op("0.1.10", "unified_attention").aliases, std::vector<std::string>{"aiter.ops.triton.unified_attention"});
  // q_scales was inserted right before alibi_slopes (the positional shift of that release).
  const auto& ua = op("0.1.15.post1", "unified_attention").params;
  auto q_scales = std::find(ua.begin(), ua.end(), "q_scales");
  ASSERT_NE(q_scales, ua.end());
  ASSERT_NE(q_scales + 1, ua.end());
  EXPECT_EQ(*(q_scales + 1), "alibi_slopes");
  const auto& before = op("0.1.15", "unified_attention").params;
  EXPECT_EQ(std::find(before.begin(), before.end(), "q_scales"), before.end());
  EXPECT_EQ(op("0.1.20.post1", "pa_fwd_asm").sinks, "unsupported");
  // v0.1.1 and v0.1.2: only aiter/paged_attn.py's wrapper, with parameters of its own.
  EXPECT_EQ(op("0.1.1", "paged_attention_v1").module, "aiter.paged_attn");
  EXPECT_EQ(op("0.1.2", "paged_attention_v1").params.size(), 19u);
  EXPECT_EQ(op("0.1.2", "paged_attention_v1").required, 14);
  EXPECT_EQ(op("0.1.3", "paged_attention_v1").module, "aiter.ops.attention");
}

// The op table's known modules are exactly where the matrix records each entry point (its
// module or an alias, in some release): the probe looks where the matrix says AITer has put
// them, and calls anything else a new location without parsing the matrix.
TEST(Matrix, RecordsEntryPointsExactlyAtTheKnownModules) {
  for (const auto& spec : attention_ops()) {
    std::set<std::string> recorded;
    for (const auto& r : CompatMatrix::builtin().releases()) {
      auto it = r.ops.find(spec.name);
      if (it == r.ops.end() || !it->second.present) continue;
      recorded.insert(it->second.module);
      recorded.insert(it->second.aliases.begin(), it->second.aliases.end());
    }
    EXPECT_EQ(recorded, std::set<std::string>(spec.modules.begin(), spec.modules.end())) << spec.name;
  }
}

TEST(Matrix, FindsTheReleaseLineOfAVersion) {
  const CompatMatrix& m = CompatMatrix::builtin();
  auto line = [&](const char* v) { return m.find_line(*Version::parse(v))->version.text; };
  EXPECT_EQ(line("0.1.12+rocm7.2.manylinux_2_28"), "0.1.12");
  EXPECT_EQ(line("0.1.7.post2.dev18"), "0.1.7.post2.dev18");  // the published wheel has its own entry
  EXPECT_EQ(line("0.1.7.post2.dev5"), "0.1.7.post1");         // 5 commits after 0.1.7.post1
  EXPECT_EQ(line("0.1.20.post1"), "0.1.20.post1");
  EXPECT_EQ(line("0.1.21.dev4"), "main");
  EXPECT_EQ(m.find_line(*Version::parse("0.0.9")), nullptr);
}

TEST(Matrix, RejectsMalformedInputWithItsLine) {
  auto error_of = [](const std::string& text) {
    try {
      CompatMatrix::from_yaml(text, "m.yaml");
    } catch (const MatrixError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("schema_version: 2\nreleases: []\n").find("schema_version"), std::string::npos);
  EXPECT_NE(error_of("releases: [\n").find("m.yaml:"), std::string::npos);
  EXPECT_NE(error_of("- a\n- b\n").find("top level"), std::string::npos);
  std::string unordered =
      "schema_version: 1\nreleases:\n"
      "  - {version: '0.1.2', distribution: aiter, ops: {}}\n"
      "  - {version: '0.1.1', distribution: aiter, ops: {}}\n";
  EXPECT_NE(error_of(unordered).find("m.yaml:4: releases must be in ascending order"), std::string::npos);
  std::string bad_sinks =
      "schema_version: 1\nreleases:\n"
      "  - {version: '0.1.2', distribution: aiter, ops: {f: {present: true, module: m, sinks: maybe, params: []}}}\n";
  EXPECT_NE(error_of(bad_sinks).find("sinks must be"), std::string::npos);
  std::string bad_quirk = "schema_version: 1\nreleases: []\nquirks:\n  - {id: x, versions: '0.1', effect: e, summary: s}\n";
  EXPECT_NE(error_of(bad_quirk).find("no operator"), std::string::npos);
}

TEST(Matrix, BrokenOverrideFallsBackToBuiltinWithAWarning) {
  std::string path = testing::TempDir() + "/broken_matrix.yaml";
  std::ofstream(path) << "schema_version: 1\nreleases: {oops\n";
  std::string source, warning;
  const CompatMatrix& m = load_matrix(path, &source, &warning);
  EXPECT_EQ(&m, &CompatMatrix::builtin());
  EXPECT_EQ(source, "built-in");
  EXPECT_NE(warning.find("broken_matrix.yaml"), std::string::npos);
  load_matrix(testing::TempDir() + "/no_such_matrix.yaml", &source, &warning);
  EXPECT_NE(warning.find("cannot read"), std::string::npos);
}
