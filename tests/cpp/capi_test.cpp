// The C API over host tensors: routes, results, and errors through status codes and the
// thread-local message.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "aiter_compat.h"
#include "host_tensor.hpp"
#include "reference_attention.hpp"

using namespace aiter_compat;
using namespace aiter_compat::testing_support;

namespace {


struct VarlenCase {
  HostTensor q{DType::f32, {7, 8, 16}}, k{DType::f32, {9, 2, 16}}, v{DType::f32, {9, 2, 16}},
      out{DType::f32, {7, 8, 16}}, lse{DType::f32, {8, 7}}, sinks{DType::f32, {8}};
  HostTensor cu_q = i32_tensor({0, 3, 7}), cu_k = i32_tensor({0, 4, 9});
  Dl dq{q}, dk{k}, dv{v}, dout{out}, dlse{lse}, dsinks{sinks}, dcu_q{cu_q}, dcu_k{cu_k};
  aiter_compat_varlen_args args{};
  VarlenCase() {
    std::mt19937 rng(std::random_device{}());
    q.fill_random(rng), k.fill_random(rng), v.fill_random(rng), sinks.fill_random(rng);
    out.fill(NAN);
    args = {&dq.t, &dk.t, &dv.t, &dcu_q.t, &dcu_k.t, &dsinks.t, &dout.t, &dlse.t, 4, 5, 0.0, 1, 127, 0};
  }
};

}  // namespace

TEST(CApi, VarlenOnCpuMatchesTheReferenceKernel) {
  VarlenCase c;
  ASSERT_EQ(aiter_compat_varlen_attention(&c.args, nullptr), AITER_COMPAT_OK) << aiter_compat_last_error();
  HostTensor want(DType::f32, {7, 8, 16}), want_lse(DType::f32, {8, 7});
  VarlenArgs a;
  a.q = c.q.view, a.k = c.k.view, a.v = c.v.view, a.cu_seqlens_q = c.cu_q.view, a.cu_seqlens_k = c.cu_k.view;
  a.sinks = c.sinks.view, a.out = want.view, a.lse = want_lse.view, a.max_seqlen_q = 4, a.max_seqlen_k = 5;
  a.causal = true, a.window = {127, 0, 0};
  cpu::varlen_attention(a);
  EXPECT_EQ(c.out.bytes, want.bytes);
  EXPECT_EQ(c.lse.bytes, want_lse.bytes);
  EXPECT_EQ(aiter_compat_abi_version(), AITER_COMPAT_ABI_VERSION);
}

TEST(CApi, BadArgumentsNameTheArgument) {
  EXPECT_EQ(aiter_compat_varlen_attention(nullptr, nullptr), AITER_COMPAT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(aiter_compat_last_error()).find("args"), std::string::npos);
  VarlenCase c;
  c.args.q = nullptr;
  EXPECT_EQ(aiter_compat_varlen_attention(&c.args, nullptr), AITER_COMPAT_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(aiter_compat_last_error()), "q: found NULL, needed a tensor");
  VarlenCase nan_sinks;
  nan_sinks.sinks.set(2, NAN);
  EXPECT_EQ(aiter_compat_varlen_attention(&nan_sinks.args, nullptr), AITER_COMPAT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(aiter_compat_last_error()).find("sinks: found NaN at head 2"), std::string::npos);
  VarlenCase i64;
  i64.dcu_q.t.dtype = {kDLInt, 64, 1};
  EXPECT_EQ(aiter_compat_varlen_attention(&i64.args, nullptr), AITER_COMPAT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(aiter_compat_last_error()).find("cu_seqlens_q: found dtype int64"), std::string::npos);
  VarlenCase dims;
  dims.dq.t.ndim = 9;
  EXPECT_EQ(aiter_compat_varlen_attention(&dims.args, nullptr), AITER_COMPAT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(aiter_compat_last_error()).find("9 dimensions"), std::string::npos);
}

TEST(CApi, GpuTensorsWithoutKernelsAreRefusedWithEveryReason) {
  VarlenCase c;
  for (Dl* d : {&c.dq, &c.dk, &c.dv, &c.dout, &c.dlse, &c.dsinks, &c.dcu_q, &c.dcu_k}) d->t.device = {kDLCUDA, 0};
  ASSERT_EQ(aiter_compat_varlen_attention(&c.args, nullptr), AITER_COMPAT_NO_ROUTE);
  std::string msg = aiter_compat_last_error();
  EXPECT_NE(msg.find("AITer is not installed"), std::string::npos) << msg;
  EXPECT_NE(msg.find("runs on CPU tensors; these are on cuda"), std::string::npos) << msg;
  // No GPU here: refused because none was found, or none of the kernels were built.
  EXPECT_TRUE(msg.find("no GPU was found at start-up") != std::string::npos ||
              msg.find("no GPU fallback kernels are built") != std::string::npos)
      << msg;
}

TEST(CApi, ExplainAndPolicy) {
  VarlenCase c;
  char buf[4096];
  ASSERT_EQ(aiter_compat_explain_varlen(&c.args, buf, sizeof buf), AITER_COMPAT_OK);
  EXPECT_NE(std::string(buf).find("route: fallback (cpu)"), std::string::npos) << buf;
  EXPECT_EQ(aiter_compat_set_policy("fastest"), AITER_COMPAT_INVALID_ARGUMENT);
  ASSERT_EQ(aiter_compat_set_policy("aiter-only"), AITER_COMPAT_OK);
  EXPECT_EQ(aiter_compat_varlen_attention(&c.args, nullptr), AITER_COMPAT_NO_ROUTE);
  EXPECT_NE(std::string(aiter_compat_last_error()).find("policy aiter-only"), std::string::npos);
  ASSERT_EQ(aiter_compat_set_policy(nullptr), AITER_COMPAT_OK);
  EXPECT_EQ(aiter_compat_varlen_attention(&c.args, nullptr), AITER_COMPAT_OK) << aiter_compat_last_error();
}

TEST(CApi, PagedDecodeOnCpu) {
  HostTensor q(DType::f32, {2, 4, 16}), kc(DType::f32, {4, 16, 2, 16}), vc(DType::f32, {4, 16, 2, 16}),
      out(DType::f32, {2, 4, 16}), want(DType::f32, {2, 4, 16}), sinks(DType::f32, {4});
  std::mt19937 rng(std::random_device{}());
  q.fill_random(rng), kc.fill_random(rng), vc.fill_random(rng), sinks.fill_random(rng);
  HostTensor cu = i32_tensor({0, 1, 2}), used = i32_tensor({20, 5}), bt = i32_tensor({3, 1, 0, 2}, {2, 2});
  Dl dq(q), dk(kc), dv(vc), dout(out), ds(sinks), dcu(cu), du(used), dbt(bt);
  aiter_compat_paged_args a{&dq.t, &dk.t, &dv.t, &dcu.t, &du.t, &dbt.t, &ds.t, &dout.t, nullptr, 1, 20, 0.0, 1, -1, -1};
  ASSERT_EQ(aiter_compat_paged_attention(&a, nullptr), AITER_COMPAT_OK) << aiter_compat_last_error();
  PagedArgs p;
  p.q = q.view, p.k_cache = kc.view, p.v_cache = vc.view, p.cu_seqlens_q = cu.view, p.seqused_k = used.view;
  p.block_table = bt.view, p.sinks = sinks.view, p.out = want.view, p.max_seqlen_q = 1, p.max_seqlen_k = 20;
  cpu::paged_attention(p);
  EXPECT_EQ(out.bytes, want.bytes);
  bt.set(1, 9);
  EXPECT_EQ(aiter_compat_paged_attention(&a, nullptr), AITER_COMPAT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(aiter_compat_last_error()).find("block_table[0, 1]: found 9"), std::string::npos);
}

TEST(CApi, FirstUseFromManyThreadsProbesOnceAndAgrees) {
  ASSERT_EQ(aiter_compat_set_policy(nullptr), AITER_COMPAT_OK);  // forget the router: the next call probes
  constexpr int kThreads = 16;
  std::vector<VarlenCase> cases(kThreads);
  std::vector<aiter_compat_status> status(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] { status[t] = aiter_compat_varlen_attention(&cases[t].args, nullptr); });
  for (auto& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(status[t], AITER_COMPAT_OK);
    // Each thread's result is the reference kernel's on its own inputs.
    HostTensor want(DType::f32, {7, 8, 16});
    VarlenArgs a;
    VarlenCase& c = cases[t];
    a.q = c.q.view, a.k = c.k.view, a.v = c.v.view, a.cu_seqlens_q = c.cu_q.view, a.cu_seqlens_k = c.cu_k.view;
    a.sinks = c.sinks.view, a.out = want.view, a.max_seqlen_q = 4, a.max_seqlen_k = 5, a.causal = true;
    a.window = {127, 0, 0};
    cpu::varlen_attention(a);
    EXPECT_EQ(c.out.bytes, want.bytes) << "thread " << t;
  }
}

namespace {

uint64_t cpu_varlen_calls() {
  char buffer[4096];
  EXPECT_EQ(aiter_compat_stats(buffer, sizeof buffer), AITER_COMPAT_OK) << aiter_compat_last_error();
  auto j = nlohmann::json::parse(buffer);
  auto op = j.find("flash_attn_varlen_func");
  if (op == j.end()) return 0;
  auto target = op->find("fallback varlen_fwd (cpu reference)");
  return target == op->end() ? 0 : target->get<uint64_t>();
}

}  // namespace

TEST(CApi, StatsCountEveryCallOfARoute) {
  const uint64_t before = cpu_varlen_calls();
  VarlenCase c;
  for (int i = 0; i < 3; ++i) ASSERT_EQ(aiter_compat_varlen_attention(&c.args, nullptr), AITER_COMPAT_OK);
  std::thread other([&] { ASSERT_EQ(aiter_compat_varlen_attention(&c.args, nullptr), AITER_COMPAT_OK); });
  other.join();
  EXPECT_EQ(cpu_varlen_calls(), before + 4);
  // explain decides without running: not a call.
  char text[8192];
  ASSERT_EQ(aiter_compat_explain_varlen(&c.args, text, sizeof text), AITER_COMPAT_OK);
  EXPECT_EQ(cpu_varlen_calls(), before + 4);

  char small[4];
  EXPECT_EQ(aiter_compat_stats(small, sizeof small), AITER_COMPAT_INVALID_ARGUMENT);
  const std::string msg = aiter_compat_last_error();
  EXPECT_EQ(msg.rfind("buffer: found 4 bytes, needed at least ", 0), 0u) << msg;
  EXPECT_EQ(aiter_compat_stats(nullptr, 100), AITER_COMPAT_INVALID_ARGUMENT);
}
