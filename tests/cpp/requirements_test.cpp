#include <gtest/gtest.h>

#include <algorithm>

#include "aiter_compat/gpu_runtime/kernel_table.hpp"
#include "aiter_compat/probe/probe.hpp"
#include "aiter_compat/probe/requirements.hpp"
#include "test_readings.hpp"

using namespace aiter_compat;
using namespace aiter_compat::testing_support;

namespace {

// The report of a release on a GPU (or none), with the fallback kernels built for `built`
// (the families the requirement looks at), whatever this build of aiter-compat holds.
ProbeReport report_for(const char* version, const char* arch = nullptr, std::vector<std::string> built = {}) {
  ProbeReport r = report_for_release(version, arch);
  if (!arch) r.device.reason = "no GPU runtime library found";
  r.fallback_kernels.clear();
  for (const auto& row : gpu::kernel_rows()) {
    if (row.device != gpu::KernelDevice::gpu) continue;
    FallbackKernel k{row.name, {}, false};
    for (const auto& a : built)
      if (row.built_for(a)) k.archs.push_back(a), k.matches_device = k.matches_device || (arch && a == arch);
    r.fallback_kernels.push_back(k);
  }
  return r;
}

const FamilyVerdict& family(const RequirementCheck& c, const std::string& name) {
  auto it = std::find_if(c.families.begin(), c.families.end(), [&](const FamilyVerdict& f) { return f.family == name; });
  if (it == c.families.end()) throw std::runtime_error("no family " + name + " in the check");
  return *it;
}

bool any_contains(const std::vector<std::string>& lines, const std::string& text) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(text) != std::string::npos; });
}

}  // namespace

TEST(RequireSinks, OneEntryPointTakingSinksIsNotEnough) {
  // v0.1.9.post1: unified_attention takes sinks, but every engine's prefill raises TypeError.
  RequirementCheck c = check_requirement(report_for("0.1.9.post1"), "sinks");
  EXPECT_FALSE(c.met());
  EXPECT_EQ(family(c, "decode").served_by, "aiter unified_attention (takes sinks)");
  EXPECT_EQ(family(c, "prefill").served_by, "");
  EXPECT_TRUE(any_contains(c.unmet, "prefill: aiter flash_attn_varlen_func: sinks unsupported (no sink_ptr parameter "
                                    "and no **kwargs: passing it raises TypeError)"))
      << ::testing::PrintToString(c.unmet);
  EXPECT_TRUE(any_contains(c.unmet, "prefill: fallback: no generic kernels built into this aiter-compat"));
  EXPECT_FALSE(any_contains(c.unmet, "decode"));  // only what is missing is listed
}

TEST(RequireSinks, AFallbackForThisGpuServesWhatAiterCannot) {
  RequirementCheck c = check_requirement(report_for("0.1.9.post1", "gfx942", {"gfx90a", "gfx942"}), "sinks");
  EXPECT_TRUE(c.met()) << ::testing::PrintToString(c.unmet);
  EXPECT_EQ(family(c, "prefill").served_by, "fallback tiled_rows (gfx942) via aiter_compat.flash_attn_varlen_func");
  EXPECT_EQ(family(c, "decode").served_by, "aiter unified_attention (takes sinks)");
  RequirementCheck other_gpu = check_requirement(report_for("0.1.9.post1", "gfx1100", {"gfx90a", "gfx942"}), "sinks");
  EXPECT_TRUE(any_contains(other_gpu.unmet,
                           "prefill: fallback: generic is built for gfx90a, gfx942, not for the GPU here (gfx1100)"))
      << ::testing::PrintToString(other_gpu.unmet);
}

TEST(RequireSinks, AQuirkThatDropsSinksKeepsAiterFromServing) {
  // v0.1.20.post1 takes sink_ptr, but on gfx942 bf16 head-dim-128 calls lose the sinks.
  RequirementCheck bare = check_requirement(report_for("0.1.20.post1", "gfx942"), "sinks");
  EXPECT_FALSE(bare.met());
  EXPECT_TRUE(any_contains(bare.unmet, "prefill: aiter flash_attn_varlen_func: takes sink_ptr, but quirk "
                                       "v3-asm-drops-sinks applies"))
      << ::testing::PrintToString(bare.unmet);
  RequirementCheck with_kernels = check_requirement(report_for("0.1.20.post1", "gfx942", {"gfx942"}), "sinks");
  EXPECT_TRUE(with_kernels.met());
  const FamilyVerdict& prefill = family(with_kernels, "prefill");
  EXPECT_EQ(prefill.served_by, "fallback tiled_rows (gfx942) via aiter_compat.flash_attn_varlen_func");
  EXPECT_TRUE(any_contains(prefill.notes, "v3-asm-drops-sinks")) << ::testing::PrintToString(prefill.notes);
  // The quirk is for gfx942/gfx950 only: on gfx90a AITer serves prefill itself.
  RequirementCheck mi200 = check_requirement(report_for("0.1.20.post1", "gfx90a"), "sinks");
  EXPECT_TRUE(mi200.met()) << ::testing::PrintToString(mi200.unmet);
  EXPECT_EQ(family(mi200, "prefill").served_by, "aiter flash_attn_varlen_func (takes sink_ptr)");
}

TEST(RequireSinks, WithoutAGpuAQuirkThatMayApplyCounts) {
  RequirementCheck c = check_requirement(report_for("0.1.20.post1"), "sinks");
  EXPECT_FALSE(c.met());
  EXPECT_TRUE(any_contains(c.unmet, "quirk v3-asm-drops-sinks may apply")) << ::testing::PrintToString(c.unmet);
  EXPECT_TRUE(any_contains(c.unmet, "prefill: fallback: no generic kernels built"));
  EXPECT_EQ(family(c, "decode").served_by, "aiter unified_attention (takes sinks)");
}

TEST(RequireSinks, AiterRunsOnAmdGpusOnly) {
  RequirementCheck c = check_requirement(report_for("0.1.20.post1", "sm_90", {"sm_90"}), "sinks");
  EXPECT_TRUE(c.met());
  EXPECT_EQ(family(c, "decode").served_by,
            "fallback tiled_keys (sm_90) via aiter_compat.unified_attention or aiter_compat.paged_attention_decode");
  EXPECT_TRUE(any_contains(family(c, "decode").reasons, "aiter: runs on AMD GPUs (gfx*), and the GPU here is sm_90"));
}

TEST(RequireSinks, AbsentAiterSaysSoOnceAndNamesTheFallbackThatIsMissing) {
  FakePythonReader py;
  py.static_reading.ran = true;
  ProbeOptions o;
  o.native = o.device = false;
  ProbeReport r = run_probe(o, py);
  r.device.reason = "no GPU runtime library found";
  RequirementCheck c = check_requirement(r, "sinks");
  ASSERT_FALSE(c.met());
  auto decode = std::count_if(c.unmet.begin(), c.unmet.end(),
                              [](const std::string& s) { return s.rfind("decode: aiter: not found", 0) == 0; });
  EXPECT_EQ(decode, 1) << ::testing::PrintToString(c.unmet);
  EXPECT_TRUE(any_contains(c.unmet, "no aiter package on the search path"));
  EXPECT_TRUE(any_contains(c.unmet, "decode: fallback:")) << ::testing::PrintToString(c.unmet);
}

TEST(RequireSinks, OneEntryPoint) {
  EXPECT_TRUE(check_requirement(report_for("0.1.10"), "sinks:unified_attention").met());
  RequirementCheck pa = check_requirement(report_for("0.1.20.post1", "gfx942", {"gfx942"}), "sinks:pa_fwd_asm");
  EXPECT_FALSE(pa.met());
  EXPECT_TRUE(any_contains(pa.unmet, "pa_fwd_asm: aiter pa_fwd_asm: sinks unsupported (this ASM paged decode has "
                                     "never taken sinks (pa_decode_gluon and pa_decode_bf16_asm"))
      << ::testing::PrintToString(pa.unmet);
  EXPECT_TRUE(any_contains(pa.unmet, "pa_fwd_asm: fallback: aiter_compat has no call named pa_fwd_asm"));
  RequirementCheck varlen = check_requirement(report_for("0.1.5", "gfx942", {"gfx942"}), "sinks:flash_attn_varlen_func");
  EXPECT_TRUE(varlen.met());
  ASSERT_EQ(varlen.families.size(), 1u);
  EXPECT_EQ(varlen.families[0].served_by, "fallback tiled_rows (gfx942) via aiter_compat.flash_attn_varlen_func");
}

// An install whose aiter/__init__.py does not compile: every entry point reads well, none can be
// imported, so none serves sinks, and the reason says where the import fails.
TEST(RequireSinks, AnEntryPointThatCannotBeImportedServesNothing) {
  FakePythonReader py;
  py.static_reading = reading_from_matrix(*CompatMatrix::builtin().find_exact("0.1.20.post1"));
  for (auto& [name, op] : py.static_reading.ops)
    op.import_error = ProbeError{"/site/aiter/__init__.py", "SyntaxError: invalid syntax (line 9)"};
  ProbeOptions o;
  o.native = o.device = false;
  const ProbeReport r = run_probe(o, py);
  for (const char* need : {"sinks:unified_attention", "sinks:flash_attn_varlen_func"}) {
    RequirementCheck c = check_requirement(r, need);
    EXPECT_FALSE(c.met()) << need;
    EXPECT_TRUE(any_contains(c.unmet, "cannot be imported: /site/aiter/__init__.py: SyntaxError")) << need << ": "
                                                                                                      << ::testing::PrintToString(c.unmet);
  }
  EXPECT_TRUE(check_requirement(report_for("0.1.20.post1"), "sinks:unified_attention").met());
}

// The entry points engines call beyond vLLM's: mha_batch_prefill_func is served by AITer where it
// takes sink_ptr and no quirk breaks it (0.1.13), by the paged fallback where a quirk does (its
// sink without sink_size fails from 0.1.14); Triton's names by the prefill fallback; the fp8
// per-tensor names only by AITer.
TEST(RequireSinks, EntryPointsOfSglangAndTriton) {
  RequirementCheck bp13 = check_requirement(report_for("0.1.13", "gfx942", {"gfx942"}), "sinks:mha_batch_prefill_func");
  ASSERT_TRUE(bp13.met()) << ::testing::PrintToString(bp13.unmet);
  EXPECT_EQ(bp13.families[0].served_by, "aiter mha_batch_prefill_func (takes sink_ptr)");
  RequirementCheck bp20 =
      check_requirement(report_for("0.1.20.post1", "gfx942", {"gfx942"}), "sinks:mha_batch_prefill_func");
  ASSERT_TRUE(bp20.met()) << ::testing::PrintToString(bp20.unmet);
  EXPECT_EQ(bp20.families[0].served_by, "fallback tiled_rows (gfx942) via aiter_compat.mha_batch_prefill_func");
  RequirementCheck bp20_no_gpu = check_requirement(report_for("0.1.20.post1", "gfx942"), "sinks:mha_batch_prefill_func");
  EXPECT_FALSE(bp20_no_gpu.met());
  EXPECT_TRUE(any_contains(bp20_no_gpu.unmet, "quirk batch-prefill-sink-needs-sink-size applies"))
      << ::testing::PrintToString(bp20_no_gpu.unmet);
  RequirementCheck triton = check_requirement(report_for("0.1.7.post5", "gfx942", {"gfx942"}), "sinks:triton_flash_attn_varlen_func");
  ASSERT_TRUE(triton.met()) << ::testing::PrintToString(triton.unmet);
  EXPECT_EQ(triton.families[0].served_by,
            "fallback tiled_rows (gfx942) via aiter_compat.triton_mha.flash_attn_varlen_func");
  RequirementCheck fp8 =
      check_requirement(report_for("0.1.20.post1", "gfx942", {"gfx942"}), "sinks:flash_attn_varlen_fp8_pertensor_func");
  EXPECT_FALSE(fp8.met());
  EXPECT_TRUE(any_contains(fp8.unmet, "quirk fp8-v3-asm-drops-sinks applies")) << ::testing::PrintToString(fp8.unmet);
}

TEST(RequireSinks, UnknownFeaturesNameWhatIsKnown) {
  RequirementCheck c = check_requirement(report_for("0.1.10"), "sinks:nope");
  ASSERT_EQ(c.unmet.size(), 1u);
  EXPECT_NE(c.unmet[0].find("unknown requirement 'sinks:nope' (known: sinks, sinks:flash_attn_varlen_func"),
            std::string::npos)
      << c.unmet[0];
  auto known = known_requirements();
  EXPECT_EQ(known.front(), "sinks");
  EXPECT_NE(std::find(known.begin(), known.end(), "sinks:paged_attention_v1"), known.end());
}
