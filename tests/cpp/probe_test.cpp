#include <gtest/gtest.h>

#include "aiter_compat/probe/probe.hpp"
#include "aiter_compat/probe/requirements.hpp"
#include "test_readings.hpp"

using namespace aiter_compat;
using namespace aiter_compat::testing_support;

namespace {
ProbeOptions offline(bool live = false) {
  ProbeOptions o;
  o.live = live;
  o.native = false;
  o.device = false;
  return o;
}
}  // namespace

// Every matrix entry, fed through the probe as a reading, must come out equal to the entry.
TEST(Probe, EveryMatrixEntryRoundTrips) {
  for (const auto& rel : CompatMatrix::builtin().releases()) {
    FakePythonReader py;
    py.static_reading = reading_from_matrix(rel);
    ProbeReport r = run_probe(offline(), py);
    EXPECT_EQ(r.aiter.matrix_entry, rel.version.text);
    EXPECT_EQ(matrix_differences(r, CompatMatrix::builtin()), std::vector<std::string>{}) << rel.version.text;
    EXPECT_EQ(py.live_calls, 0);  // static is the default
  }
}

TEST(Probe, CheckMatrixNamesWhatChanged) {
  const MatrixRelease* rel = CompatMatrix::builtin().find_exact("0.1.10");
  FakePythonReader py;
  py.static_reading = reading_from_matrix(*rel);
  auto& params = *py.static_reading.ops["flash_attn_varlen_func"].params;
  params.pop_back();  // a stale wheel without sink_ptr
  ProbeReport r = run_probe(offline(), py);
  auto diffs = matrix_differences(r, CompatMatrix::builtin());
  ASSERT_EQ(diffs.size(), 2u);
  EXPECT_NE(diffs[0].find("ops.flash_attn_varlen_func.params: -sink_ptr"), std::string::npos) << diffs[0];
  EXPECT_NE(diffs[1].find("ops.flash_attn_varlen_func.sinks: matrix 0.1.10 expects supported, found unsupported"),
            std::string::npos)
      << diffs[1];
}

TEST(Probe, LiveWinsAndDisagreementsAreReported) {
  const MatrixRelease* rel = CompatMatrix::builtin().find_exact("0.1.12");
  FakePythonReader py;
  py.static_reading = reading_from_matrix(*rel);
  py.live_reading = reading_from_matrix(*rel, Channel::live_import);
  // @compile_ops rewrote the signature from a stale module: the live one lacks a parameter.
  py.live_reading.ops["pa_fwd_asm"].params->pop_back();
  ProbeReport r = run_probe(offline(true), py);
  EXPECT_EQ(py.live_calls, 1);
  ASSERT_EQ(r.disagreements.size(), 1u);
  EXPECT_EQ(r.disagreements[0].what, "ops.pa_fwd_asm.params");
  EXPECT_EQ(r.op("pa_fwd_asm")->read_by, "live");
  EXPECT_EQ(r.op("pa_fwd_asm")->params->size(), rel->ops.at("pa_fwd_asm").params.size() - 1);
}

TEST(Probe, FailedImportFallsBackToStaticWithTheError) {
  const MatrixRelease* rel = CompatMatrix::builtin().find_exact("0.1.12");
  FakePythonReader py;
  py.static_reading = reading_from_matrix(*rel);
  py.live_reading.ran = true;
  py.live_reading.import_error = ProbeError{"import aiter", "ImportError: libamdhip64.so: cannot open shared object file"};
  ProbeReport r = run_probe(offline(true), py);
  EXPECT_EQ(r.op("flash_attn_varlen_func")->read_by, "static");
  ASSERT_FALSE(r.aiter.errors.empty());
  EXPECT_NE(r.aiter.errors.back().error.find("libamdhip64"), std::string::npos);
  EXPECT_TRUE(r.channels.at("live").import_error.has_value());
}

TEST(Probe, NoPythonChannelIsAReportNotACrash) {
  FakePythonReader py;
  py.static_reading.failure = "no Python interpreter";
  ProbeReport r = run_probe(offline(), py);
  EXPECT_FALSE(r.aiter.found);
  EXPECT_EQ(r.aiter.reason, "no Python interpreter");
  EXPECT_FALSE(r.channels.at("static").ran);
}

TEST(Probe, WeakVersionNeedsAnExplicitEntry) {
  const MatrixRelease* rel = CompatMatrix::builtin().find_exact("0.1.14");
  FakePythonReader py;
  py.static_reading = reading_from_matrix(*rel);
  py.static_reading.install.metadata_version.clear();
  py.static_reading.install.file_version = "0.1.0";
  ProbeReport r = run_probe(offline(), py);
  EXPECT_TRUE(r.aiter.matrix_entry.empty());
  auto diffs = matrix_differences(r, CompatMatrix::builtin());
  ASSERT_EQ(diffs.size(), 1u);
  EXPECT_NE(diffs[0].find("--matrix-entry"), std::string::npos);
  ProbeOptions o = offline();
  o.matrix_entry = "0.1.14";
  ProbeReport forced = run_probe(o, py);
  EXPECT_EQ(matrix_differences(forced, CompatMatrix::builtin()), std::vector<std::string>{});
}

TEST(ParseChannelReading, MalformedJsonIsAFailedChannel) {
  auto r = parse_channel_reading(Channel::static_ast, "{not json");
  EXPECT_FALSE(r.ran);
  EXPECT_NE(r.failure.find("static"), std::string::npos);
  auto ok = parse_channel_reading(Channel::live_import,
                                  R"({"install": {"found": true, "path": "/p/aiter"}, "ops": {"f": {"present": true,
                                     "params": [{"name": "q", "kind": "POSITIONAL_OR_KEYWORD", "default": null}]}},
                                     "python": "3.12.3"})");
  EXPECT_TRUE(ok.ran);
  EXPECT_EQ(ok.python_version, "3.12.3");
  ASSERT_TRUE(ok.ops["f"].params);
  EXPECT_EQ(ok.ops["f"].params->at(0).name, "q");
}

// An entry point at a module no release of the matrix records for it is called a new location;
// one the matrix records is not, whichever channel found it.
TEST(Probe, NewLocationsAreNotedAgainstTheMatrix) {
  const MatrixRelease* rel = CompatMatrix::builtin().find_exact("0.1.20.post1");
  FakePythonReader py;
  py.static_reading = reading_from_matrix(*rel);
  OpReading& ua = py.static_reading.ops["unified_attention"];
  ua.module = "aiter.ops.triton.attention.unified.unified_attention";
  ua.located_by = "name search";
  OpReading& pa = py.static_reading.ops["paged_attention_v1"];
  pa.module = "aiter.paged_attn";  // where 0.1.1 and 0.1.2 have it
  ProbeReport r = run_probe(offline(), py);
  const auto& notes = r.op("unified_attention")->notes;
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0], "aiter.ops.triton.attention.unified.unified_attention is a new location: compat_matrix.yaml "
                      "records unified_attention there for no release");
  EXPECT_EQ(r.op("unified_attention")->located_by, "name search");
  EXPECT_TRUE(r.op("paged_attention_v1")->notes.empty());
  EXPECT_TRUE(r.op("flash_attn_varlen_func")->notes.empty());
  // An override matrix is checked release by release: one recording the new module knows it.
  CompatMatrix m = CompatMatrix::from_yaml(
      "schema_version: 1\nreleases:\n  - version: '0.1.21'\n    distribution: amd-aiter\n    ops:\n"
      "      unified_attention: {present: true, module: aiter.ops.triton.attention.unified.unified_attention,"
      " sinks: supported, params: [q]}\n",
      "m.yaml");
  EXPECT_EQ(m.releases_locating("unified_attention", "aiter.ops.triton.attention.unified.unified_attention"),
            std::vector<std::string>{"0.1.21"});
  EXPECT_TRUE(m.releases_locating("unified_attention", "aiter.ops.mha").empty());
}
