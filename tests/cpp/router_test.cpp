#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "aiter_compat/probe/probe.hpp"
#include "aiter_compat/shim/router.hpp"
#include "test_readings.hpp"

using namespace aiter_compat;
using namespace aiter_compat::testing_support;

namespace {

// Routing logic apart from what this build compiled: the GPU kernels are taken as built.
Capabilities caps_for(const char* version, const char* arch = nullptr) {
  Capabilities c = Capabilities::from_report(report_for_release(version, arch), CompatMatrix::builtin());
  c.gpu_fallback_archs = {"gfx90a", "gfx942", "sm_90"};
  return c;
}

uint32_t bit(OpId op, const char* param) { return 1u << signature(op).index_of(param); }

// vLLM's prefill call: bf16, GPT-OSS shape, causal, on a ROCm GPU.
CallFeatures vllm_prefill(bool sinks, int head_dim = 64) {
  CallFeatures f;
  f.op = OpId::flash_attn_varlen_func;
  f.dtype = DType::bf16;
  f.device = DeviceKind::rocm;
  f.head_dim_qk = f.head_dim_v = head_dim;
  f.q_heads = 64, f.kv_heads = 8;
  f.causal = true;
  f.window_arity = 2;
  f.sinks = sinks;
  f.nondefault = bit(f.op, "min_seqlen_q") | bit(f.op, "softmax_scale") | bit(f.op, "causal") | bit(f.op, "out");
  if (sinks) f.nondefault |= bit(f.op, "sink_ptr");
  return f;
}

bool any_reason(const Route& r, const std::string& text) {
  for (const auto& c : r.candidates)
    for (const auto& reason : c.reasons)
      if (reason.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST(Router, OldAiterWithoutSinksIsRefusedWithItsReason) {
  Router router(caps_for("0.1.9.post1", "gfx942"), Policy::automatic);
  const Route& r = router.route(vllm_prefill(true));
  EXPECT_EQ(r.kind, RouteKind::fallback_gpu);  // the sink-capable kernel built for gfx942
  EXPECT_TRUE(any_reason(r, "flash_attn_varlen_func takes no sink_ptr (first in 0.1.10)")) << r.candidates[0].reasons[0];
  EXPECT_TRUE(r.rerouted);
  Router no_gpu(caps_for("0.1.9.post1"), Policy::automatic);
  const Route& refused = no_gpu.route(vllm_prefill(true));
  EXPECT_EQ(refused.kind, RouteKind::refused);
  EXPECT_TRUE(any_reason(refused, "no GPU was found at start-up"));
}

// An entry point whose import fails (a package above its module does not compile) is no route,
// with where it fails as the reason; the others are unaffected.
TEST(Router, AnEntryPointThatCannotBeImportedIsNoRoute) {
  ProbeReport report = report_for_release("0.1.20.post1", "gfx942");
  for (auto& op : report.ops)
    if (op.name == "flash_attn_varlen_func")
      op.import_error = ProbeError{"/site/aiter/__init__.py", "SyntaxError: invalid syntax (line 9)"};
  Capabilities c = Capabilities::from_report(report, CompatMatrix::builtin());
  c.gpu_fallback_archs = {"gfx942"};
  Router router(c, Policy::automatic);
  const Route r = router.route(vllm_prefill(true));
  EXPECT_NE(r.kind, RouteKind::aiter);
  EXPECT_TRUE(any_reason(r, "flash_attn_varlen_func cannot be imported: /site/aiter/__init__.py: SyntaxError"))
      << format_route_error("varlen", {}, r.candidates);
  CallFeatures batch = vllm_prefill(true);
  batch.op = OpId::flash_attn_func;
  batch.nondefault = bit(batch.op, "causal") | bit(batch.op, "sink_ptr");
  EXPECT_EQ(router.route(batch).kind, RouteKind::aiter);
}

TEST(Router, OldAiterServesCallsWithoutSinksDroppingTheDefaultKeyword) {
  Router router(caps_for("0.1.9.post1", "gfx942"), Policy::automatic);
  const Route& r = router.route(vllm_prefill(false));
  ASSERT_EQ(r.kind, RouteKind::aiter) << r.candidates[0].reasons.size();
  EXPECT_EQ(r.target, "aiter.ops.mha.flash_attn_varlen_func");
  const auto& sig = signature(OpId::flash_attn_varlen_func);
  for (int i : r.aiter_params) EXPECT_NE(sig.params[i].name, "sink_ptr");
  EXPECT_FALSE(r.aiter_params.empty());
  EXPECT_EQ(r.window_arity, 3);
}

TEST(Router, V3QuirkKeepsSinksOffTheAsmPath) {
  Router gfx942(caps_for("0.1.12", "gfx942"), Policy::automatic);
  const Route& hd128 = gfx942.route(vllm_prefill(true, 128));
  EXPECT_NE(hd128.kind, RouteKind::aiter);
  EXPECT_TRUE(any_reason(hd128, "quirk v3-asm-drops-sinks"));
  EXPECT_EQ(gfx942.route(vllm_prefill(true, 64)).kind, RouteKind::aiter);   // CK honours the sink
  EXPECT_EQ(gfx942.route(vllm_prefill(false, 128)).kind, RouteKind::aiter); // no sink to drop
  Router gfx90a(caps_for("0.1.12", "gfx90a"), Policy::automatic);
  EXPECT_EQ(gfx90a.route(vllm_prefill(true, 128)).kind, RouteKind::aiter);  // no v3 kernel there
  Router unknown(caps_for("0.1.12"), Policy::automatic);
  const Route& u = unknown.route(vllm_prefill(true, 128));
  EXPECT_NE(u.kind, RouteKind::aiter);
  EXPECT_TRUE(any_reason(u, "assumed"));
}

TEST(Router, CpuTensorsGoToTheReferenceKernels) {
  Router router(caps_for("0.1.20.post1", "gfx942"), Policy::automatic);
  CallFeatures f = vllm_prefill(true);
  f.device = DeviceKind::cpu;
  const Route& r = router.route(f);
  EXPECT_EQ(r.kind, RouteKind::fallback_cpu);
  EXPECT_TRUE(any_reason(r, "AITer runs on AMD GPUs (ROCm); the tensors are on cpu"));
  f.dropout = true;
  f.nondefault |= bit(f.op, "dropout_p");
  const Route& d = router.route(f);
  EXPECT_EQ(d.kind, RouteKind::refused);
  EXPECT_TRUE(any_reason(d, "dropout_p is not supported"));
}

TEST(Router, PoliciesChangeTheChoice) {
  CallFeatures f = vllm_prefill(false);
  f.device = DeviceKind::rocm;
  Router only(caps_for("0.1.9.post1", "gfx942"), Policy::aiter_only);
  CallFeatures cpu = f;
  cpu.device = DeviceKind::cpu;
  cpu.dtype = DType::f32;
  const Route& r = only.route(cpu);
  EXPECT_EQ(r.kind, RouteKind::refused);
  EXPECT_TRUE(any_reason(r, "policy aiter-only"));
  Router prefer(caps_for("0.1.9.post1", "gfx942"), Policy::prefer_fallback);
  EXPECT_EQ(prefer.route(f).kind, RouteKind::fallback_gpu);
  Router prefer_no_gpu(caps_for("0.1.9.post1"), Policy::prefer_fallback);
  EXPECT_EQ(prefer_no_gpu.route(f).kind, RouteKind::aiter);  // no usable GPU fallback: AITer still serves
  EXPECT_EQ(prefer.route(cpu).kind, RouteKind::fallback_cpu);
  EXPECT_EQ(parse_policy("prefer-fallback"), Policy::prefer_fallback);
  EXPECT_FALSE(parse_policy("fastest"));
}

TEST(Router, UnifiedAttentionNonCausalIsNotSentToAiter) {
  Router router(caps_for("0.1.15.post1", "gfx942"), Policy::automatic);
  CallFeatures f;
  f.op = OpId::unified_attention;
  f.dtype = DType::bf16;
  f.device = DeviceKind::rocm;
  f.head_dim_qk = f.head_dim_v = 64;
  f.causal = false;
  const Route& r = router.route(f);
  EXPECT_NE(r.kind, RouteKind::aiter);
  EXPECT_TRUE(any_reason(r, "quirk unified-attention-causal-only"));
  f.causal = true;
  EXPECT_EQ(router.route(f).kind, RouteKind::aiter);
}

TEST(Router, DecidesOncePerFeatureSetAcrossThreads) {
  Router router(caps_for("0.1.12", "gfx942"), Policy::automatic);
  std::vector<const Route*> seen(16);
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t) threads.emplace_back([&, t] { seen[t] = &router.route(vllm_prefill(true)); });
  for (auto& t : threads) t.join();
  for (const Route* r : seen) EXPECT_EQ(r, seen[0]);
  EXPECT_EQ(router.decided().size(), 1u);
}

// The trace writes one line per decision: exactly one of the threads deciding the same features
// at once is told it made the decision.
TEST(Router, ExactlyOneCallerIsToldItDecided) {
  Router router(caps_for("0.1.12", "gfx942"), Policy::automatic);
  std::atomic<int> fresh_count{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t)
    threads.emplace_back([&] {
      bool fresh = false;
      const Route& r = router.route(vllm_prefill(true), &fresh);
      r.calls.add();
      if (fresh) ++fresh_count;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(fresh_count.load(), 1);
  bool fresh = true;
  const Route& r = router.route(vllm_prefill(true), &fresh);
  EXPECT_FALSE(fresh);
  EXPECT_EQ(r.calls.value(), 16u);
  EXPECT_EQ(router.decided().front().second.calls.value(), 16u);  // copies carry the count
}

// A soft cap is taken by every GPU attention kernel; dropout by none.
TEST(Router, SoftcapRunsOnTheGpuKernelsDropoutDoesNot) {
  Router router(caps_for("0.1.9.post1", "gfx942"), Policy::prefer_fallback);
  CallFeatures f = vllm_prefill(true);
  f.softcap = true;
  f.nondefault |= bit(f.op, "logits_soft_cap");
  const Route& r = router.route(f);
  ASSERT_EQ(r.kind, RouteKind::fallback_gpu);
  ASSERT_FALSE(r.kernels.empty());
  for (const auto& k : r.kernels)
    if (k.name != "tiled_wgmma") {
      EXPECT_TRUE(k.accepted) << k.name << ": " << ::testing::PrintToString(k.reasons);
    }
  f = vllm_prefill(true);
  f.dropout = true;
  f.nondefault |= bit(f.op, "dropout_p");
  const Route& d = router.route(f);
  EXPECT_NE(d.kind, RouteKind::fallback_gpu);
  for (const auto& k : d.kernels) EXPECT_FALSE(k.accepted) << k.name;
  std::string all;
  for (const auto& c : d.candidates)
    for (const auto& why : c.reasons) all += c.name + ": " + why + "; ";
  EXPECT_TRUE(any_reason(d, "dropout_p is not supported")) << all;
}

TEST(Router, GpuKernelLimitsAreReasons) {
  Router router(caps_for("0.1.9.post1", "gfx942"), Policy::automatic);
  CallFeatures f = vllm_prefill(true);
  f.head_dim_qk = f.head_dim_v = 512;
  EXPECT_TRUE(any_reason(router.route(f), "head dims 512/512: takes up to 256"));
  // Head dim 256: the row tiles and the generic kernel (while the group's queries fit a block);
  // the keys shape and the decode kernel say why not (gfx942 has no warpgroup row).
  f.head_dim_qk = f.head_dim_v = 256;
  const Route& r256 = router.route(f);
  EXPECT_EQ(r256.kind, RouteKind::fallback_gpu);
  for (const auto& k : r256.kernels) {
    if (k.name == "tiled_rows" || k.name == "generic") {
      EXPECT_TRUE(k.accepted) << k.name << ": " << ::testing::PrintToString(k.reasons);
    } else if (k.name == "tiled_keys" || k.name == "decode") {
      EXPECT_FALSE(k.accepted) << k.name;
      EXPECT_NE(::testing::PrintToString(k.reasons).find("head dims 256/256: takes 64 and 128"), std::string::npos)
          << k.name << ": " << ::testing::PrintToString(k.reasons);
    }
  }
  f.q_heads = 16 * f.kv_heads;
  EXPECT_TRUE(any_reason(router.route(f), "16 query heads per KV head x head dim 256 = 4096: at most 2048"));
  f = vllm_prefill(true);
  f.head_dim_qk = 128, f.head_dim_v = 512;  // the value head dim alone over the limit
  EXPECT_TRUE(any_reason(router.route(f), "head dims 128/512: takes up to 256"));
  EXPECT_EQ(router.route(f).kind, RouteKind::refused);
  f = vllm_prefill(true);
  // Head dim 96: the generic kernel takes it, the tiled and decode ones pass it over, saying why.
  f.head_dim_qk = f.head_dim_v = 96;
  const Route& r96 = router.route(f);
  ASSERT_EQ(r96.kind, RouteKind::fallback_gpu);
  std::vector<std::string> taken;
  auto has = [](const Candidate& k, const std::string& text) {
    for (const auto& r : k.reasons)
      if (r.find(text) != std::string::npos) return true;
    return false;
  };
  for (const auto& k : r96.kernels) {
    if (k.accepted) taken.push_back(k.name);
    else EXPECT_TRUE(has(k, "head dims 96/96: takes 64 and 128")) << k.name;
    // The MFMA tiles are built for gfx*; the warpgroup ones for sm_90 only.
    EXPECT_EQ(has(k, "not built for gfx942"), k.name == "tiled_wgmma") << k.name;
  }
  EXPECT_EQ(taken, std::vector<std::string>{"generic"});
  f = vllm_prefill(true);
  f.q_heads = 64, f.kv_heads = 2;
  EXPECT_TRUE(any_reason(router.route(f), "32 query heads per KV head: at most 16"));
  f = vllm_prefill(true);
  f.device = DeviceKind::cuda;
  EXPECT_TRUE(any_reason(router.route(f), "the tensors are on cuda but the GPU found is gfx942"));
  Router sm80(caps_for("0.1.9.post1", "sm_80"), Policy::automatic);
  f = vllm_prefill(true);
  f.device = DeviceKind::cuda;
  EXPECT_TRUE(any_reason(sm80.route(f), "no kernel built for sm_80 (built: "));
}
