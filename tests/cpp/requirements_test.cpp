#include <gtest/gtest.h>

#include "aiter_compat/probe/probe.hpp"
#include "aiter_compat/probe/requirements.hpp"
#include "test_readings.hpp"

using namespace aiter_compat;
using namespace aiter_compat::testing_support;

namespace {
ProbeReport report_for(const char* version) { return report_for_release(version); }
}  // namespace

TEST(RequireSinks, MetWhenAnyEntryPointTakesThem) {
  EXPECT_TRUE(unmet_requirement(report_for("0.1.10"), "sinks").empty());
  EXPECT_TRUE(unmet_requirement(report_for("0.1.6.post2"), "sinks").empty());  // unified_attention
}

TEST(RequireSinks, UnmetListsEveryReason) {
  auto reasons = unmet_requirement(report_for("0.1.5"), "sinks");
  ASSERT_GE(reasons.size(), 7u);  // six entry points and the fallback kernels
  EXPECT_NE(reasons[0].find("flash_attn_varlen_func: unsupported (no sink_ptr"), std::string::npos) << reasons[0];
  EXPECT_NE(reasons.back().find("fallback kernels"), std::string::npos);
}

TEST(RequireSinks, AbsentAiterSaysSo) {
  FakePythonReader py;
  py.static_reading.ran = true;
  ProbeOptions o;
  o.native = o.device = false;
  auto reasons = unmet_requirement(run_probe(o, py), "sinks");
  ASSERT_FALSE(reasons.empty());
  EXPECT_NE(reasons[0].find("no aiter package"), std::string::npos);
}
