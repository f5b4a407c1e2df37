#include <gtest/gtest.h>

#include <algorithm>

#include "aiter_compat/probe/probe.hpp"
#include "test_readings.hpp"

using namespace aiter_compat;
using namespace aiter_compat::testing_support;

namespace {

ProbeReport report_for(const char* version, const char* arch) { return report_for_release(version, arch); }

const QuirkHit* hit(const ProbeReport& r, const std::string& id) {
  auto it = std::find_if(r.quirks.begin(), r.quirks.end(), [&](const QuirkHit& q) { return q.id == id; });
  return it == r.quirks.end() ? nullptr : &*it;
}

}  // namespace

TEST(Quirks, V3AsmSinkDropMatchesVersionAndGpu) {
  EXPECT_EQ(hit(report_for("0.1.12", "gfx942"), "v3-asm-drops-sinks")->status, "applies");
  EXPECT_EQ(hit(report_for("0.1.20.post1", "gfx950"), "v3-asm-drops-sinks")->status, "applies");
  EXPECT_EQ(hit(report_for("0.1.12", nullptr), "v3-asm-drops-sinks")->status, "possible");
  EXPECT_EQ(hit(report_for("0.1.12", "gfx90a"), "v3-asm-drops-sinks"), nullptr);
  EXPECT_EQ(hit(report_for("0.1.12", "sm_90"), "v3-asm-drops-sinks"), nullptr);
  EXPECT_EQ(hit(report_for("0.1.9", "gfx942"), "v3-asm-drops-sinks"), nullptr);  // no sink_ptr yet
}

TEST(Quirks, VersionRangesAreHonoured) {
  EXPECT_NE(hit(report_for("0.1.9", nullptr), "sink-ptr-typeerror"), nullptr);
  EXPECT_EQ(hit(report_for("0.1.10", nullptr), "sink-ptr-typeerror"), nullptr);
  EXPECT_NE(hit(report_for("0.1.17", nullptr), "ck-sink-only-via-mask"), nullptr);
  EXPECT_EQ(hit(report_for("0.1.18", nullptr), "ck-sink-only-via-mask"), nullptr);
  EXPECT_EQ(hit(report_for("0.1.6.post1", nullptr), "unified-attention-causal-only"), nullptr);  // not present yet
  EXPECT_NE(hit(report_for("0.1.6.post2", nullptr), "unified-attention-causal-only"), nullptr);
}

TEST(Quirks, WeakVersionMatchesByParameters) {
  FakePythonReader py;
  py.static_reading = reading_from_matrix(*CompatMatrix::builtin().find_exact("0.1.14"));
  py.static_reading.install.metadata_version = "0.1.0";
  ProbeOptions o;
  o.native = o.device = false;
  ProbeReport r = run_probe(o, py);
  r.device.present = true;
  r.device.arch = "gfx942";
  r.quirks = match_quirks(CompatMatrix::builtin(), r);
  const QuirkHit* q = hit(r, "v3-asm-drops-sinks");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->status, "applies");
  EXPECT_NE(q->why.find("version unknown"), std::string::npos);
}
