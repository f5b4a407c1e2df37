#include <gtest/gtest.h>

#include "aiter_compat/probe/probe.hpp"
#include "aiter_compat/probe/render.hpp"
#include "test_readings.hpp"

using namespace aiter_compat;
using namespace aiter_compat::testing_support;

TEST(Render, JsonCarriesTheDocumentedKeys) {
  FakePythonReader py;
  py.static_reading = reading_from_matrix(*CompatMatrix::builtin().find_exact("0.1.10"));
  ProbeOptions o;
  o.native = o.device = false;
  auto j = to_json(run_probe(o, py));
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["aiter"]["found"], true);
  EXPECT_EQ(j["aiter"]["distribution"], "amd-aiter");
  EXPECT_EQ(j["aiter"]["version"], "0.1.10");
  EXPECT_EQ(j["aiter"]["version_source"], "distribution metadata");
  EXPECT_EQ(j["ops"]["flash_attn_varlen_func"]["sinks"], "supported");
  EXPECT_EQ(j["ops"]["flash_attn_varlen_func"]["params"].back(), "sink_ptr");
  EXPECT_EQ(j["ops"]["pa_fwd_asm"]["sinks"], "unsupported");
  EXPECT_TRUE(j["quirks"].is_array());
  EXPECT_EQ(j["device"]["arch"], "none");
}

TEST(Render, TextRowsAreAligned) {
  FakePythonReader py;
  py.static_reading = reading_from_matrix(*CompatMatrix::builtin().find_exact("0.1.3"));
  ProbeOptions o;
  o.native = o.device = false;
  std::string text = to_text(run_probe(o, py));
  size_t colon = std::string::npos;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    std::string line = text.substr(pos, end - pos);
    size_t c = line.find(':');
    size_t value = line.find_first_not_of(' ', c + 1);
    if (colon == std::string::npos) colon = value;
    EXPECT_EQ(value, colon) << line;  // every value starts in the same column
    pos = end + 1;
  }
  EXPECT_NE(text.find("op.unified_attention:"), std::string::npos);
  EXPECT_NE(text.find("not found"), std::string::npos);
}

// A family built at fewer head dims on some archs (the RDNA WMMA tiles) says so in both forms;
// the others are listed plainly.
TEST(Render, FallbackKernelsNameTheHeadDimsOfAnArchBuiltAtFewer) {
  FakePythonReader py;
  py.static_reading = reading_from_matrix(*CompatMatrix::builtin().find_exact("0.1.10"));
  ProbeOptions o;
  o.native = o.device = false;
  ProbeReport r = run_probe(o, py);
  r.fallback_kernels = {{"tiled_rows", {"gfx942", "gfx1100", "gfx1201"}, false,
                         {{"gfx942", {64, 128, 256}}, {"gfx1100", {64}}, {"gfx1201", {64, 128}}}},
                        {"generic", {"gfx942", "gfx1100"}, false, {}}};
  const auto j = to_json(r);
  EXPECT_EQ(j["fallback_kernels"][0]["head_dims"]["gfx1100"], nlohmann::json::array({64}));
  EXPECT_EQ(j["fallback_kernels"][0]["head_dims"]["gfx942"].size(), 3u);
  EXPECT_TRUE(j["fallback_kernels"][1]["head_dims"].empty());
  const std::string text = to_text(r);
  EXPECT_NE(text.find("gfx942, gfx1100 (head dim 64), gfx1201 (head dim 64/128)"), std::string::npos) << text;
  EXPECT_NE(text.find("fallback_kernels.generic:"), std::string::npos);
  EXPECT_EQ(text.find("gfx1100 (head dim", text.find("fallback_kernels.generic")), std::string::npos) << text;
}
