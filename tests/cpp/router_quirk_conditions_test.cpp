// Every call condition of every quirk the router acts on, from compat_matrix.yaml itself: a call
// meeting all of a quirk's conditions is kept from AITer with the quirk's reason, and the same
// call with any one condition unmet is not. A condition the router ignored (an fp16 or windowed
// head-dim-128 call taken from AITer for nothing) fails here.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "aiter_compat/gpu_runtime/kernel_table.hpp"
#include "aiter_compat/probe/probe.hpp"
#include "aiter_compat/shim/router.hpp"
#include "test_readings.hpp"

using namespace aiter_compat;
using namespace aiter_compat::testing_support;

namespace {

// The effects that take a route away from AITer (the others are reported, not routed on); see
// docs/compat-matrix.md.
const std::set<std::string> kRoutedEffects = {"sinks_ignored", "assertion_error", "wrong_result", "runtime_error"};

// An install with every entry point (the newest release's), on a GPU every quirk names, with
// only the quirk under test.
Router router_with(const MatrixQuirk& q) {
  Capabilities c = Capabilities::from_report(report_for_release("0.1.20.post1", "gfx942"), CompatMatrix::builtin());
  c.quirks = {{q, ""}};
  return Router(c, Policy::automatic);
}

OpId op_named(const std::string& name) {
  for (const OpSignature& sig : all_signatures())
    if (sig.aiter_name == name) return sig.id;
  ADD_FAILURE() << "no public op calls AITer's " << name;
  return OpId::flash_attn_varlen_func;
}

bool quirk_reason(const Route& r, const std::string& id) {
  for (const auto& c : r.candidates)
    for (const auto& reason : c.reasons)
      if (reason.rfind("quirk " + id + ":", 0) == 0) return true;
  return false;
}

// The dtypes a condition can name, as the router words them (q's dtype).
const std::vector<std::pair<DType, const char*>> kDtypeWords = {
    {DType::bf16, "bf16"}, {DType::f16, "fp16"}, {DType::f32, "fp32"},
    {DType::f8_e4m3fn, "float8_e4m3fn"}, {DType::f8_e4m3fnuz, "float8_e4m3fnuz"}};

DType dtype_of_word(const std::string& w) {
  for (const auto& [t, word] : kDtypeWords)
    if (w == word) return t;
  ADD_FAILURE() << "dtype '" << w << "': teach the test its DType";
  return DType::unsupported;
}

// The call sets (or leaves) parameter `name` of its op: its bit in the non-default mask. False
// when the op has no such parameter (no call of it can set one).
bool set_param(CallFeatures& f, const std::string& name, bool set) {
  const int i = signature(f.op).index_of(name);
  if (i < 0) return false;
  f.nondefault = set ? f.nondefault | (1u << i) : f.nondefault & ~(1u << i);
  return true;
}
constexpr int kHeadDims[] = {64, 96, 128, 192, 256};
constexpr int kGroups[] = {1, 2, 4, 8, 16};

bool listed(const std::vector<std::string>& values, const std::string& v) {
  return std::find(values.begin(), values.end(), v) != values.end();
}

// One way to set each condition key, met (the first listed value) or unmet (every way the test
// knows). Returns false for a key it does not know, so a new key fails until the test learns it.
struct Conditions {
  static bool meet(const std::string& key, const std::vector<std::string>& values, CallFeatures& f, size_t pick = 0) {
    const std::string& v = values.at(pick);
    if (key == "sinks") f.sinks = v == "true";
    else if (key == "causal") f.causal = v == "true";
    else if (key == "bias") f.bias = v == "true";
    else if (key == "alibi") f.alibi = v == "true";
    else if (key == "dropout") f.dropout = v == "true";
    else if (key == "softcap") f.softcap = v == "true";
    else if (key == "dtype") f.dtype = dtype_of_word(v);
    else if (key == "head_dim_qk") f.head_dim_qk = std::stoi(v);
    else if (key == "head_dim_v") f.head_dim_v = std::stoi(v);
    else if (key == "window") f.window_left = v == "set", f.window_right = false;
    else if (key == "sink_size") f.window_sink_size = v == "true";
    else if (key == "query_length_over") f.query_length = std::stoi(v) + 1;
    else if (key == "query_rows_over") f.query_length = 1, f.q_heads = (std::stoi(v) + 1) * f.kv_heads;
    // "none of these": met by the first value the test knows that is not listed, whatever pick.
    else if (key == "head_dim_qk_not") f.head_dim_qk = *std::find_if(std::begin(kHeadDims), std::end(kHeadDims),
                                                                     [&](int d) { return !listed(values, std::to_string(d)); });
    else if (key == "group_not") f.q_heads = f.kv_heads * *std::find_if(std::begin(kGroups), std::end(kGroups),
                                                                        [&](int g) { return !listed(values, std::to_string(g)); });
    else if (key == "params_set") {  // this one of the parameters, and none of the others
      for (const auto& name : values) set_param(f, name, name == v);
    } else return false;
    return true;
  }

  // Each variant of f in which the condition does not hold, with a name for the failure message.
  static std::vector<std::pair<std::string, CallFeatures>> break_(const std::string& key,
                                                                   const std::vector<std::string>& values,
                                                                   const CallFeatures& f) {
    std::vector<std::pair<std::string, CallFeatures>> out;
    auto flip = [&](bool CallFeatures::*field) {
      CallFeatures g = f;
      g.*field = !(values.at(0) == "true");
      out.emplace_back(key + " " + (g.*field ? "true" : "false"), g);
    };
    if (key == "sinks") flip(&CallFeatures::sinks);
    else if (key == "causal") flip(&CallFeatures::causal);
    else if (key == "bias") flip(&CallFeatures::bias);
    else if (key == "alibi") flip(&CallFeatures::alibi);
    else if (key == "dropout") flip(&CallFeatures::dropout);
    else if (key == "softcap") flip(&CallFeatures::softcap);
    else if (key == "sink_size") flip(&CallFeatures::window_sink_size);
    else if (key == "dtype") {
      for (const auto& [t, word] : kDtypeWords)
        if (!listed(values, word)) {
          CallFeatures g = f;
          g.dtype = t;
          out.emplace_back(std::string("dtype ") + word, g);
        }
    } else if (key == "params_set") {  // none of them set
      CallFeatures g = f;
      for (const auto& name : values) set_param(g, name, false);
      out.emplace_back("none of the parameters set", g);
    } else if (key == "head_dim_qk" || key == "head_dim_v") {
      for (int d : {64, 96, 128, 192, 256})
        if (!listed(values, std::to_string(d))) {
          CallFeatures g = f;
          (key == "head_dim_qk" ? g.head_dim_qk : g.head_dim_v) = d;
          out.emplace_back(key + " " + std::to_string(d), g);
        }
    } else if (key == "head_dim_qk_not" || key == "group_not") {
      for (const std::string& v : values) {  // each listed value leaves it unmet
        CallFeatures g = f;
        if (key == "head_dim_qk_not") g.head_dim_qk = std::stoi(v);
        else g.q_heads = g.kv_heads * std::stoi(v);
        out.emplace_back(key + " " + v, g);
      }
    } else if (key == "query_length_over") {
      for (int n : {1, std::stoi(values.at(0))}) {  // at the bound and under it
        CallFeatures g = f;
        g.query_length = n;
        out.emplace_back("query_length " + std::to_string(n), g);
      }
    } else if (key == "query_rows_over") {
      for (int rows : {1, std::stoi(values.at(0))}) {
        CallFeatures g = f;
        g.query_length = 1, g.q_heads = rows * g.kv_heads;
        out.emplace_back("query rows " + std::to_string(rows), g);
      }
    } else if (key == "window") {
      // Either bound set counts as a window: unmet by the left alone, the right alone, or none.
      for (auto [left, right] : {std::pair{true, false}, {false, true}, {true, true}, {false, false}}) {
        CallFeatures g = f;
        g.window_left = left, g.window_right = right;
        if ((left || right) == listed(values, "set")) continue;
        out.emplace_back("window left " + std::to_string(left) + " right " + std::to_string(right), g);
      }
    }
    return out;
  }
};

// A call AITer takes when no quirk is in the way: bf16 on the ROCm GPU, head dim 64, causal.
CallFeatures plain_call(OpId op) {
  CallFeatures f;
  f.op = op;
  f.dtype = DType::bf16;
  f.device = DeviceKind::rocm;
  f.head_dim_qk = f.head_dim_v = 64;
  f.q_heads = 8, f.kv_heads = 8;
  f.causal = true;
  return f;
}

}  // namespace

TEST(RouterQuirkConditions, EveryConditionOfEveryRoutedQuirkDecides) {
  int routed = 0;
  for (const MatrixQuirk& q : CompatMatrix::builtin().quirks()) {
    if (!kRoutedEffects.count(q.effect)) continue;
    ++routed;
    Router router = router_with(q);
    for (const std::string& op_name : q.ops) {
      SCOPED_TRACE(q.id + " on " + op_name);
      CallFeatures met = plain_call(op_named(op_name));
      for (const auto& [key, values] : q.when)
        ASSERT_TRUE(Conditions::meet(key, values, met)) << "condition '" << key << "': teach the test to meet it";
      ASSERT_TRUE(quirk_reason(router.route(met), q.id)) << "every condition met, yet the quirk is no reason";
      for (const auto& [key, values] : q.when) {
        // Every listed value meets the condition...
        for (size_t i = 0; i < values.size(); ++i) {
          CallFeatures g = met;
          Conditions::meet(key, values, g, i);
          EXPECT_TRUE(quirk_reason(router.route(g), q.id)) << key << " " << values[i] << " is listed";
        }
        // ...and every way of leaving it unmet lifts the quirk.
        auto unmet = Conditions::break_(key, values, met);
        EXPECT_FALSE(unmet.empty()) << "condition '" << key << "': teach the test to leave it unmet";
        for (const auto& [what, g] : unmet) EXPECT_FALSE(quirk_reason(router.route(g), q.id)) << what;
      }
    }
    // An op the quirk does not name is never kept from AITer by it.
    for (const OpSignature& sig : all_signatures()) {
      const OpId op = sig.id;
      if (sig.aiter_name.empty() || listed(q.ops, sig.aiter_name)) continue;
      CallFeatures f = plain_call(op);
      for (const auto& [key, values] : q.when) Conditions::meet(key, values, f);
      EXPECT_FALSE(quirk_reason(router.route(f), q.id)) << q.id << " on " << signature(op).aiter_name;
    }
  }
  EXPECT_GE(routed, 2);  // v3-asm-drops-sinks and unified-attention-causal-only at least
}

// Quirks whose effect is reported, not routed on (a TypeError vLLM's keywords would raise is
// avoided by planning the keywords; a positional shift by calling by keyword): never a reason.
TEST(RouterQuirkConditions, ReportedQuirksNeverRefuseARoute) {
  for (const MatrixQuirk& q : CompatMatrix::builtin().quirks()) {
    if (kRoutedEffects.count(q.effect)) continue;
    Router router = router_with(q);
    for (const std::string& op_name : q.ops) {
      if (op_name == "pa_fwd_asm" || op_name == "mha_batch_prefill_func") continue;  // no public op of ours
      CallFeatures f = plain_call(op_named(op_name));
      for (const auto& [key, values] : q.when) Conditions::meet(key, values, f);
      EXPECT_FALSE(quirk_reason(router.route(f), q.id)) << q.id << " on " << op_name;
    }
  }
}

// archs_not: pa_decode_gluon's arch assertion reaches the router on every GPU but gfx942 and
// gfx950, from the release that has the function; on those two AITer gets the call.
TEST(RouterQuirkConditions, ArchsNotKeepsGluonDecodeFromOtherArchs) {
  CallFeatures f = plain_call(OpId::pa_decode_gluon);
  f.sinks = true;
  f.kv_heads = 1;
  f.kernel_features = gpu::kVectorizedCache;
  auto route_on = [&](const char* version, const char* arch) {
    Capabilities c = Capabilities::from_report(report_for_release(version, arch), CompatMatrix::builtin());
    return Router(c, Policy::automatic).route(f);
  };
  for (const char* arch : {"gfx90a", "gfx1100", "gfx1250"}) {
    EXPECT_TRUE(quirk_reason(route_on("0.1.20.post1", arch), "pa-decode-gluon-cdna3-4-only")) << arch;
    EXPECT_TRUE(quirk_reason(route_on("0.1.13", arch), "pa-decode-gluon-cdna3-4-only")) << arch;
  }
  for (const char* arch : {"gfx942", "gfx950"}) {
    const Route r = route_on("0.1.20.post1", arch);
    EXPECT_FALSE(quirk_reason(r, "pa-decode-gluon-cdna3-4-only")) << arch;
    EXPECT_EQ(r.kind, RouteKind::aiter) << arch;
  }
  // v0.1.9.post1's pa_decode_gluon has the older signature (no max_context_partition_num).
  EXPECT_NE(route_on("0.1.9.post1", "gfx942").kind, RouteKind::aiter);
}

// pa_decode_bf16_asm: AITer's call on gfx1250 alone (fp8, head dim 64, 8 query heads per KV
// head, mtp 0 or 1), from the release that has it; the fallbacks everywhere else.
TEST(RouterQuirkConditions, AsmDecodeGoesToAiterOnGfx1250Alone) {
  CallFeatures f = plain_call(OpId::pa_decode_bf16_asm);
  f.dtype = f.kv_dtype = DType::f8_e4m3fn;
  f.out_dtype = DType::bf16;
  f.sinks = true;
  f.q_heads = 64, f.kv_heads = 8;
  f.query_length = 2;
  f.kernel_features = gpu::kVectorizedCache;
  auto route_on = [&](const char* version, const char* arch, const CallFeatures& call) {
    Capabilities c = Capabilities::from_report(report_for_release(version, arch), CompatMatrix::builtin());
    return Router(c, Policy::automatic).route(call);
  };
  EXPECT_EQ(route_on("0.1.20.post1", "gfx1250", f).kind, RouteKind::aiter);
  EXPECT_EQ(route_on("0.1.16", "gfx1250", f).kind, RouteKind::aiter);
  for (const char* arch : {"gfx942", "gfx950", "gfx90a"})
    EXPECT_TRUE(quirk_reason(route_on("0.1.20.post1", arch, f), "pa-decode-bf16-asm-gfx1250-only")) << arch;
  EXPECT_NE(route_on("0.1.13", "gfx1250", f).kind, RouteKind::aiter);  // not in that release
  CallFeatures g = f;
  g.query_length = 3;
  EXPECT_TRUE(quirk_reason(route_on("0.1.20.post1", "gfx1250", g), "pa-decode-bf16-asm-mtp-0-1"));
  g = f;
  g.head_dim_qk = g.head_dim_v = 128;
  EXPECT_TRUE(quirk_reason(route_on("0.1.20.post1", "gfx1250", g), "pa-decode-bf16-asm-head-dim-64"));
  g = f;
  g.q_heads = 32;
  EXPECT_TRUE(quirk_reason(route_on("0.1.20.post1", "gfx1250", g), "pa-decode-bf16-asm-gqa-8"));
  g = f;
  g.dtype = g.kv_dtype = DType::bf16;
  EXPECT_TRUE(quirk_reason(route_on("0.1.20.post1", "gfx1250", g), "pa-decode-bf16-asm-fp8-only"));
}

// The same through the probe's matching: a quirk outside its version range or on a GPU it does
// not name never reaches the router.
TEST(RouterQuirkConditions, VersionAndArchConditionsReachTheRouter) {
  CallFeatures f = plain_call(OpId::flash_attn_varlen_func);
  f.head_dim_qk = f.head_dim_v = 128;
  f.sinks = true;
  auto route_on = [&](const char* version, const char* arch) {
    Capabilities c = Capabilities::from_report(report_for_release(version, arch), CompatMatrix::builtin());
    return quirk_reason(Router(c, Policy::automatic).route(f), "v3-asm-drops-sinks");
  };
  EXPECT_TRUE(route_on("0.1.10", "gfx942"));
  EXPECT_TRUE(route_on("0.1.20.post1", "gfx950"));
  EXPECT_FALSE(route_on("0.1.20.post1", "gfx90a"));
  EXPECT_FALSE(route_on("0.1.9.post1", "gfx942"));
  CallFeatures u = plain_call(OpId::unified_attention);
  u.causal = false;
  auto unified_on = [&](const char* version) {
    Capabilities c = Capabilities::from_report(report_for_release(version, "gfx942"), CompatMatrix::builtin());
    return quirk_reason(Router(c, Policy::automatic).route(u), "unified-attention-causal-only");
  };
  EXPECT_TRUE(unified_on("0.1.6.post2"));
  EXPECT_FALSE(unified_on("0.1.6.post1"));  // no unified_attention yet: absent, not quirked
}

// unified_attention of 0.1.6.post2 to 0.1.11.post1: fp8 queries with k/v descales lose the
// descales, and q_descale fails the call's assertion; from 0.1.12 AITer applies all three.
TEST(RouterQuirkConditions, UnifiedAttentionDescalesBefore0112) {
  CallFeatures f = plain_call(OpId::unified_attention);
  f.dtype = f.kv_dtype = f.out_dtype = DType::f8_e4m3fn;
  f.descale = true;
  ASSERT_TRUE(set_param(f, "k_descale", true) && set_param(f, "v_descale", true));
  CallFeatures with_q = f;
  ASSERT_TRUE(set_param(with_q, "q_descale", true));
  CallFeatures bf16_q = f;  // 16-bit queries over an fp8 cache: those releases scale K and V
  bf16_q.dtype = bf16_q.out_dtype = DType::bf16;
  auto route_on = [&](const char* version, const CallFeatures& call) {
    Capabilities c = Capabilities::from_report(report_for_release(version, "gfx942"), CompatMatrix::builtin());
    return Router(c, Policy::automatic).route(call);
  };
  for (const char* version : {"0.1.6.post2", "0.1.10", "0.1.11.post1"}) {
    SCOPED_TRACE(version);
    const Route r = route_on(version, f);
    EXPECT_NE(r.kind, RouteKind::aiter);
    EXPECT_TRUE(quirk_reason(r, "unified-attention-fp8-q-ignores-kv-descales"));
    EXPECT_FALSE(quirk_reason(r, "unified-attention-q-descale-asserted"));
    EXPECT_TRUE(quirk_reason(route_on(version, with_q), "unified-attention-q-descale-asserted"));
    EXPECT_EQ(route_on(version, bf16_q).kind, RouteKind::aiter) << "16-bit queries: the descales are applied";
  }
  for (const char* version : {"0.1.12", "0.1.13", "0.1.20.post1"}) {
    SCOPED_TRACE(version);
    EXPECT_EQ(route_on(version, f).kind, RouteKind::aiter);
    EXPECT_EQ(route_on(version, with_q).kind, RouteKind::aiter);
  }
}
