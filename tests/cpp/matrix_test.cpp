#include <gtest/gtest.h>

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

void expect_same_release(const MatrixRelease& a, const MatrixRelease& b) {
  EXPECT_EQ(a.version.text, b.version.text);
  EXPECT_EQ(a.tag, b.tag);
  EXPECT_EQ(a.distribution, b.distribution);
  ASSERT_EQ(a.ops.size(), b.ops.size()) << a.version.text;
  for (const auto& [name, op] : a.ops) {
    const MatrixOp& other = b.ops.at(name);
    EXPECT_EQ(op.present, other.present) << a.version.text << " " << name;
    EXPECT_EQ(op.module, other.module) << a.version.text << " " << name;
    EXPECT_EQ(op.aliases, other.aliases) << a.version.text << " " << name;
    EXPECT_EQ(op.sinks, other.sinks) << a.version.text << " " << name;
    EXPECT_EQ(op.window_arity, other.window_arity) << a.version.text << " " << name;
    EXPECT_EQ(op.required, other.required) << a.version.text << " " << name;
    EXPECT_EQ(op.params, other.params) << a.version.text << " " << name;
  }
}

}  // namespace

TEST(Matrix, BuiltinEqualsTheSourceFile) {
  CompatMatrix file = CompatMatrix::from_yaml(source_matrix_text(), SOURCE_MATRIX);
  const CompatMatrix& builtin = CompatMatrix::builtin();
  ASSERT_EQ(file.releases().size(), builtin.releases().size());
  for (size_t i = 0; i < file.releases().size(); ++i) expect_same_release(file.releases()[i], builtin.releases()[i]);
  ASSERT_EQ(file.quirks().size(), builtin.quirks().size());
  for (size_t i = 0; i < file.quirks().size(); ++i) {
    const MatrixQuirk &a = file.quirks()[i], &b = builtin.quirks()[i];
    EXPECT_EQ(a.id, b.id);
    EXPECT_EQ(a.versions.text(), b.versions.text());
    EXPECT_EQ(a.archs, b.archs);
    EXPECT_EQ(a.ops, b.ops);
    EXPECT_EQ(a.requires_param, b.requires_param);
    EXPECT_EQ(a.when, b.when);
    EXPECT_EQ(a.effect, b.effect);
    EXPECT_EQ(a.summary, b.summary);
  }
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
  const auto& ua = op("0.1.15.post1", "unified_attention").params;
  EXPECT_EQ(*std::find(ua.begin(), ua.end(), "q_scales"), "q_scales");
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
