// The self-test against a stand-in runtime (tests/cpp/fake_runtimes) whose kernels run on the
// host (kernel_emulator.hpp): every family passes on a faithful device; a perturbed family
// (the fault variable's perturbation) fails, is passed over, and calls still get right results;
// a failed generic family refuses the GPU route with the reason; verdicts are cached per key;
// the modes; graph capture. Built twice: for CUDA (sm_90, every tiled row) and for HIP (gfx942).
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "aiter_compat.h"
#include "aiter_compat/gpu_runtime/family_verdicts.hpp"
#include "aiter_compat/gpu_runtime/launch.hpp"
#include "aiter_compat/shim/gpu_runner.hpp"
#include "aiter_compat/shim/router.hpp"
#include "aiter_compat/shim/selftest.hpp"
#include "aiter_compat/shim/selftest_cache.hpp"
#include "aiter_compat/shim/selftest_cases.hpp"
#include "aiter_compat/shim/selftest_report.hpp"
#include "gpu_test_support.hpp"
#include "host_tensor.hpp"
#include "kernel_emulator.hpp"

using namespace aiter_compat;
using namespace aiter_compat::testing_support;
using gpu::FamilyKey;
using gpu::KernelId;
using gpu::Verdict;

namespace {

#ifdef SELFTEST_HIP
constexpr gpu::Vendor kVendor = gpu::Vendor::amd;
constexpr DeviceKind kKind = DeviceKind::rocm;
constexpr DLDeviceType kDl = kDLROCM;
constexpr const char* kLib = "libamdhip64.so";
constexpr const char* kPrefix = "fake_hip_";
constexpr const char* kArch = "gfx942";
#else
constexpr gpu::Vendor kVendor = gpu::Vendor::nvidia;
constexpr DeviceKind kKind = DeviceKind::cuda;
constexpr DLDeviceType kDl = kDLCUDA;
constexpr const char* kLib = "libcuda.so.1";
constexpr const char* kPrefix = "fake_cuda_";
constexpr const char* kArch = "sm_90";
#endif

struct Fake {
  void* lib = dlopen(kLib, RTLD_NOW);
  template <typename F>
  F fn(const char* name) {
    return reinterpret_cast<F>(dlsym(lib, (std::string(kPrefix) + name).c_str()));
  }
  int launches() { return fn<int (*)()>("launch_count")(); }
  const fake_launch* launch(int i) { return fn<const fake_launch* (*)(int)>("launch")(i); }
  void reset() { fn<void (*)()>("reset")(); }
  void set_capturing(int on) { fn<void (*)(int)>("set_capturing")(on); }
  void emulate(bool on) { fn<void (*)(fake_kernel_hook)>("set_kernel_hook")(on ? emulate_kernel : nullptr); }
  std::set<std::string> launched() {
    std::set<std::string> names;
    for (int i = 0; i < launches(); ++i) names.insert(launch(i)->name);
    return names;
  }
};

// Each test starts from nothing known, a cache directory of its own, and a faithful device.
class Selftest : public ::testing::Test {
 protected:
  Fake fake;
  std::string cache_dir;
  void SetUp() override {
    if (!built_for(kArch)) GTEST_SKIP() << "no " << kArch << " code object in this build";
    cache_dir = (std::filesystem::temp_directory_path() /
                 ("aiter-compat-selftest-" + std::to_string(::getpid()) + "-" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name()))
                    .string();
    std::filesystem::remove_all(cache_dir);
    setenv("XDG_CACHE_HOME", cache_dir.c_str(), 1);
    gpu::set_selftest_fault({});
    selftest::set_mode(selftest::Mode::first_use);
    selftest::forget_all();
    fake.emulate(true);
    fake.set_capturing(0);
    fake.reset();
  }
  void TearDown() override {
    fake.emulate(false);
    gpu::set_selftest_fault({});
    std::filesystem::remove_all(cache_dir);
  }
  void fault(const std::string& spec) {
    gpu::FaultSpec f = gpu::parse_fault(spec);
    ASSERT_TRUE(f.set) << f.error;
    gpu::set_selftest_fault(f);
  }
};

// A prefill call as the fronts make it: the self-test's own case on the device (its inputs are
// seeded), with the CPU reference's output beside it.
struct Call {
  selftest::Case host, device;
  Call(selftest::CaseKind kind = selftest::CaseKind::prefill_varlen, int dtype = AC_DTYPE_BF16, int dim = 64)
      : host(selftest::make_case(kind, dtype, dim)), device(host) {
    VarlenArgs a = selftest::varlen_args(host, nullptr, DeviceKind::cpu, 0);
    cpu::varlen_attention(a);
  }
  // The stand-in's device memory is host memory: the staging buffer is one host allocation.
  std::vector<unsigned char> staging = std::vector<unsigned char>(device.staging_bytes + 256);
  unsigned char* base() { return reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(staging.data()) + 255) / 256 * 256); }
  VarlenArgs gpu_args() {
    for (const auto& b : device.buffers) std::memcpy(base() + b.offset, b.host.data(), b.host.size());
    return selftest::varlen_args(device, base(), kKind, 0);
  }
  double error() {
    const selftest::Buffer& out = device.buffers[static_cast<size_t>(device.out)];
    selftest::Buffer got = out;
    std::memcpy(got.host.data(), base() + out.offset, out.host.size());
    return selftest::max_error(got, host.buffers[static_cast<size_t>(host.out)]);
  }
};

TEST_F(Selftest, EveryFamilyPassesOnAFaithfulDevice) {
  const auto rows = selftest::warmup(kVendor, 0);
  std::set<std::string> families;
  for (const auto& r : rows) {
    families.insert(gpu::kernel_row(r.key.row).name);
    EXPECT_EQ(r.result.verdict, Verdict::passed) << gpu::family_label(r.key) << ": " << r.result.detail;
    EXPECT_LE(r.result.max_error, r.result.bound) << gpu::family_label(r.key);
    EXPECT_EQ(r.result.source, "measured");
    EXPECT_EQ(r.arch, kArch);
  }
  std::set<std::string> expected;  // every GPU row the kernel table builds for this arch
  for (const auto& row : gpu::kernel_rows())
    if (row.built_for(kArch)) expected.insert(row.name);
  EXPECT_TRUE(expected.count("generic") && expected.count("split_merge") && expected.count("merge_states"));
  EXPECT_EQ(families, expected);
  EXPECT_FALSE(selftest::any_failed(rows));
  EXPECT_EQ(selftest::known_verdicts().size(), rows.size());
}

TEST_F(Selftest, EachFamilyRunsItsOwnKernelsAndTheSplitPath) {
  fake.reset();
  const FamilyKey keys{kVendor, 0, kVendor == gpu::Vendor::nvidia ? KernelId::tiled_keys : KernelId::decode, AC_DTYPE_BF16, 64};
  ASSERT_EQ(selftest::ensure(keys, nullptr).verdict, Verdict::passed);
  const auto names = fake.launched();
  // The generic kernel first (the route's widest family), its split merge, then the row itself
  // on each case it takes, unsplit and split.
  EXPECT_TRUE(names.count("ac_attention_bf16"));
  EXPECT_TRUE(names.count("ac_merge_bf16"));
  if (kVendor == gpu::Vendor::nvidia) {
    EXPECT_TRUE(names.count("ac_tiled_keys_bf16_d64")) << "contiguous decode";
    EXPECT_TRUE(names.count("ac_tiled_keys_paged_bf16_d64")) << "paged decode";
  } else {
    EXPECT_TRUE(names.count("ac_decode_bf16_d64"));
  }
}

// The warpgroup row's verdict covers both of its kernels: the launcher takes the producer twin
// for some calls and the default kernel for others (launch.cpp, takes_producer_twin), so the
// self-test runs its cases on each, whatever AITER_COMPAT_WGMMA_PRODUCER says (a cached verdict
// is read in every mode).
TEST_F(Selftest, TheWarpgroupFamilyChecksBothOfItsKernels) {
  if (kVendor != gpu::Vendor::nvidia) GTEST_SKIP() << "the warpgroup kernels are sm_90's";
  fake.reset();
  const FamilyKey wgmma{kVendor, 0, KernelId::tiled_wgmma, AC_DTYPE_BF16, 64};
  const gpu::FamilyResult r = selftest::ensure(wgmma, nullptr);
  ASSERT_EQ(r.verdict, Verdict::passed) << r.detail;
  const auto names = fake.launched();
  EXPECT_TRUE(names.count("ac_tiled_wgmma_bf16_d64")) << "the default kernel";
  EXPECT_TRUE(names.count("ac_tiled_wgmma_producer_bf16_d64")) << "its producer twin";
}

TEST_F(Selftest, AFaultyFamilyIsPassedOverAndResultsStayRight) {
  // The row a prefill runs on here, perturbed: the call must run on another, and be right.
  Call call;
  const KernelId faulty = run_gpu(call.gpu_args(), nullptr, GpuOptions{std::nullopt, 0, true});
  if (faulty == KernelId::generic) GTEST_SKIP() << kArch << " runs prefill on the generic row only (no tiled rows for it)";
  selftest::forget_all();
  fault(gpu::kernel_row(faulty).name + ":bf16:64");
  fake.reset();
  const KernelId ran = run_gpu(call.gpu_args(), nullptr);
  EXPECT_NE(ran, faulty);  // the next row
  if (faulty == KernelId::tiled_wgmma) {
    EXPECT_EQ(ran, KernelId::tiled_rows);
  }
  EXPECT_LE(call.error(), 1e-2);
  const gpu::FamilyResult r = gpu::result_of({kVendor, 0, faulty, AC_DTYPE_BF16, 64});
  EXPECT_EQ(r.verdict, Verdict::failed);
  EXPECT_GT(r.max_error, r.bound);
  EXPECT_NE(r.detail.find("max error"), std::string::npos) << r.detail;
  // Other dtypes and head dims of the same row are their own families.
  EXPECT_EQ(selftest::ensure({kVendor, 0, faulty, AC_DTYPE_F16, 64}, nullptr).verdict, Verdict::passed);
  // The failure is never cached: a perturbed kernel says nothing about this build.
  EXPECT_FALSE(std::filesystem::exists(selftest::cache_path()));
}

TEST_F(Selftest, AFailedSplitMergeKeepsCallsUnsplit) {
  // One long decode (32768 keys, 64 query heads): a grid of a few blocks is split across the
  // device, and the split merge enters the sink, unless the split merge failed.
  HostTensor q(DType::bf16, {1, 64, 64}), kc(DType::bf16, {2048, 16, 8, 64}), vc(DType::bf16, {2048, 16, 8, 64}),
      out(DType::bf16, {1, 64, 64}), table(DType::i32, {1, 2048}), used = i32_tensor({32768}), cu = i32_tensor({0, 1});
  for (int64_t i = 0; i < 2048; ++i) table.set(i, static_cast<double>(i));
  std::mt19937 rng(7);
  q.fill_random(rng);
  for (auto* t : {&q, &kc, &vc, &out, &table, &used}) t->view.device = kKind;
  PagedArgs a;
  a.q = q.view, a.k_cache = kc.view, a.v_cache = vc.view, a.out = out.view, a.block_table = table.view;
  a.seqused_k = used.view, a.cu_seqlens_q = cu.view;
  a.uniform_queries = true;
  a.max_seqlen_q = 1, a.max_seqlen_k = 32768;
  auto merges = [&] {  // the merge kernel, or the kernel that zeroes a folded merge's counters
    int n = 0;
    for (int i = 0; i < fake.launches(); ++i) {
      const std::string name = fake.launch(i)->name;
      n += name.rfind("ac_merge_bf16", 0) == 0 || name == "ac_zero_counts";
    }
    return n;
  };
  selftest::warmup(kVendor, 0, {AC_DTYPE_BF16}, {64});
  fake.reset();
  run_gpu(a, nullptr);
  EXPECT_EQ(merges(), 1) << "split on a faithful device";
  selftest::forget_all();
  fault("split_merge:bf16:64");
  EXPECT_EQ(selftest::ensure({kVendor, 0, KernelId::split_merge, AC_DTYPE_BF16, 64}, nullptr).verdict, Verdict::failed);
  selftest::warmup(kVendor, 0, {AC_DTYPE_BF16}, {64});
  fake.reset();
  run_gpu(a, nullptr);
  EXPECT_EQ(merges(), 0) << "unsplit once the split merge failed";
}

TEST_F(Selftest, AFailedGenericFamilyRefusesTheGpuRouteWithTheReason) {
  fault("generic:bf16:64");
  Call call;
  try {
    run_gpu(call.gpu_args(), nullptr);
    FAIL() << "the generic family is perturbed: the call must not run on it";
  } catch (const selftest::FamilyFailed& e) {
    EXPECT_EQ(e.family.row, KernelId::generic);
    EXPECT_NE(std::string(e.what()).find("failed its self-test on " + std::string(kArch)), std::string::npos) << e.what();
  }
  // Routing now refuses the GPU route for these features, saying why.
  Capabilities caps;
  caps.device_archs = {kArch};
  caps.gpu_fallback_archs = {kArch};
  Router router(caps, Policy::automatic, gpu::verdict_generation());
  CallFeatures f;
  f.op = OpId::flash_attn_varlen_func;
  f.device = kKind;
  f.device_id = 0;
  f.dtype = DType::bf16;
  f.head_dim_qk = f.head_dim_v = 64;
  f.q_heads = 8, f.kv_heads = 2;
  const Route r = router.decide(f);
  EXPECT_EQ(r.kind, RouteKind::refused);
  bool said = false;
  for (const auto& reason : r.candidates[2].reasons) said |= reason.find("failed its self-test") != std::string::npos;
  EXPECT_TRUE(said) << format_route_error("varlen", {}, r.candidates);
  f.dtype = DType::f16;  // another dtype's generic family is fine
  EXPECT_EQ(router.decide(f).kind, RouteKind::fallback_gpu);
}

// Through the C API: the call is refused with the self-test's reason (no AITer here), and a
// faulty faster family leaves the call on the GPU with a right result.
// libaiter_compat has its own copy of the verdicts (the dispatch core is linked into it, hidden):
// its fault comes from the environment, read on its first use, which is this test's.
TEST_F(Selftest, TheCApiReroutesAfterAFailure) {
  setenv("AITER_COMPAT_SELFTEST_FAULT", "generic:bf16:64", 1);
  Call call;
  VarlenArgs v = call.gpu_args();
  auto dl = [&](const TensorView& t, std::vector<int64_t>& shape, std::vector<int64_t>& strides) {
    DLTensor d{};
    d.data = t.data;
    d.device = {kDl, 0};
    d.ndim = t.ndim;
    d.dtype = t.raw_dtype;
    shape.assign(t.shape, t.shape + t.ndim);
    strides.assign(t.strides, t.strides + t.ndim);
    d.shape = shape.data();
    d.strides = strides.data();
    return d;
  };
  std::vector<int64_t> sh[8], st[8];
  DLTensor q = dl(v.q, sh[0], st[0]), k = dl(v.k, sh[1], st[1]), vv = dl(v.v, sh[2], st[2]), cq = dl(v.cu_seqlens_q, sh[3], st[3]),
           ck = dl(v.cu_seqlens_k, sh[4], st[4]), s = dl(v.sinks, sh[5], st[5]), out = dl(v.out, sh[6], st[6]);
  aiter_compat_varlen_args a{&q, &k, &vv, &cq, &ck, &s, &out, nullptr, v.max_seqlen_q, v.max_seqlen_k, v.softmax_scale, 1, 31, 0, 0.0};
  ASSERT_EQ(aiter_compat_varlen_attention(&a, nullptr), AITER_COMPAT_NO_ROUTE);
  EXPECT_NE(std::string(aiter_compat_last_error()).find("failed its self-test"), std::string::npos) << aiter_compat_last_error();
  char buffer[1 << 16];
  ASSERT_EQ(aiter_compat_selftest_verdicts(buffer, sizeof buffer), AITER_COMPAT_OK);
  const auto verdicts = nlohmann::json::parse(buffer);
  bool failed = false;
  for (const auto& row : verdicts) failed |= row["family"] == "generic" && row["dtype"] == "bf16" && row["verdict"] == "fail";
  EXPECT_TRUE(failed) << verdicts.dump(1);
  EXPECT_EQ(aiter_compat_warmup(0), AITER_COMPAT_OK) << aiter_compat_last_error();
  EXPECT_EQ(aiter_compat_warmup(-2), AITER_COMPAT_INVALID_ARGUMENT);
  unsetenv("AITER_COMPAT_SELFTEST_FAULT");
}

// Every term of a family's verdict decides some verdict: a device that gets exactly one term
// wrong (the output alone, the LSE alone, only the split-KV runs, only the unsplit ones, only the
// paged cases) fails the family it spoils, and the faithful families beside it still pass. The
// stand-in's kernels run on the host (kernel_emulator.hpp); the spoiling is added after them.
namespace {

struct Spoil {
  std::string prefix;           // the spoiled row's kernels: names starting with this
  bool out = false, lse = false;  // what is spoiled
  bool unsplit = true, split = true;  // on which launches: unsplit ones, the merge of split ones
  bool paged_only = false;      // only launches over a paged cache
};
Spoil g_spoil;
bool g_spoiled_partials = false;  // the last split-KV partial launches were the spoiled row's

void add_to(void* data, int64_t i, int type, double delta) {
  if (type == AC_DTYPE_F32) {
    reinterpret_cast<float*>(data)[i] += static_cast<float>(delta);
  } else if (type == AC_DTYPE_F16) {
    uint16_t& x = reinterpret_cast<uint16_t*>(data)[i];
    x = cpu::float_to_f16(cpu::f16_to_float(x) + static_cast<float>(delta));
  } else {
    uint16_t& x = reinterpret_cast<uint16_t*>(data)[i];
    x = cpu::float_to_bf16(cpu::bf16_to_float(x) + static_cast<float>(delta));
  }
}

// 0.25 on the first output row (beyond every dtype's bound, relative to outputs of size ~1),
// 0.5 on every finite LSE (beyond 1e-4 relative to LSEs of a few units).
void spoil_attention(const ac_attention_params& p) {
  if (g_spoil.out)
    for (int64_t e = 0; e < p.head_dim_v; ++e) add_to(p.out, e, p.out_type, 0.25);
  if (g_spoil.lse && p.lse && p.lse_batch == 0)
    for (int64_t h = 0; h < p.hq; ++h)
      for (int64_t t = 0; t < p.total_q; ++t) {
        float& x = p.lse[h * p.lse_head + t * p.lse_tok];
        if (std::isfinite(x)) x += 0.5f;
      }
}

void spoiling_kernel(const char* fn, const void* params) {
  emulate_kernel(fn, params);
  const std::string name = fn;
  if (name == "ac_zero_counts") return;  // its argument is the counters, not a call's parameters
  if (name.rfind("ac_merge_states_", 0) == 0) {
    if (name.rfind(g_spoil.prefix, 0) != 0) return;
    const auto& m = *static_cast<const ac_merge_params*>(params);
    const int type = name.find("_bf16") != std::string::npos ? AC_DTYPE_BF16
                     : name.find("_f16") != std::string::npos ? AC_DTYPE_F16 : AC_DTYPE_F32;
    if (g_spoil.out)
      for (int64_t e = 0; e < m.dim; ++e) add_to(m.out, e, type, 0.25);
    if (g_spoil.lse && m.out_lse)
      for (int64_t h = 0; h < m.heads; ++h)
        for (int64_t t = 0; t < m.tokens; ++t) {
          float& x = m.out_lse[h * m.olse_head + t * m.olse_tok];
          if (std::isfinite(x)) x += 0.5f;
        }
    return;
  }
  const auto& p = *static_cast<const ac_attention_params*>(params);
  const bool eligible = !g_spoil.paged_only || p.paged;
  if (name.rfind("ac_merge_", 0) == 0) {  // a split merge: the whole call's outputs
    if (g_spoiled_partials && g_spoil.split && eligible) spoil_attention(p);
    g_spoiled_partials = false;
    return;
  }
  if (name.rfind(g_spoil.prefix, 0) != 0) return;
  if (p.num_splits > 1 && !p.split_counts) g_spoiled_partials = true;  // the merge kernel writes the outputs
  else if ((p.num_splits > 1 ? g_spoil.split : g_spoil.unsplit) && eligible) spoil_attention(p);  // this kernel does
}

// The error after "LSE error " in a verdict's detail (the worst case's), or -1.
double lse_error_in(const std::string& detail) {
  const auto at = detail.find("LSE error ");
  return at == std::string::npos ? -1 : std::stod(detail.substr(at + 10));
}

}  // namespace

TEST_F(Selftest, EveryTermOfTheVerdictDecidesOne) {
  // The row with unsplit and split runs on this vendor's stand-in (decode on gfx942, the tiled
  // decode on sm_90), the generic row and the merge of attention states.
  const bool nv = kVendor == gpu::Vendor::nvidia;
  const KernelId fast = nv ? KernelId::tiled_keys : KernelId::decode;
  const std::string fast_prefix = nv ? "ac_tiled_keys_" : "ac_decode_";
  struct Row {
    const char* what;
    Spoil spoil;
    KernelId family;  // the family that must fail
  };
  const std::vector<Row> rows = {
      {"the output alone", {fast_prefix, true, false}, fast},
      {"the LSE alone", {fast_prefix, false, true}, fast},
      {"the split runs alone", {fast_prefix, true, true, false, true}, fast},
      {"the unsplit runs alone", {fast_prefix, true, true, true, false}, fast},
      {"the generic row's LSE alone", {"ac_attention_", false, true}, KernelId::generic},
      {"the generic row's paged cases alone", {"ac_attention_", true, true, true, true, true}, KernelId::generic},
      {"the split merge after the generic row", {"ac_attention_", true, true, false, true}, KernelId::split_merge},
      {"merge_attn_states' output alone", {"ac_merge_states_", true, false}, KernelId::merge_states},
      {"merge_attn_states' LSE alone", {"ac_merge_states_", false, true}, KernelId::merge_states},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(std::string("spoiling ") + row.what);
    selftest::forget_all();
    std::filesystem::remove_all(cache_dir);  // verdicts measured under another row's spoiling
    g_spoil = row.spoil;
    g_spoiled_partials = false;
    fake.fn<void (*)(fake_kernel_hook)>("set_kernel_hook")(spoiling_kernel);
    const FamilyKey key{kVendor, 0, row.family, AC_DTYPE_BF16, 64};
    const gpu::FamilyResult r = selftest::ensure(key, nullptr);
    EXPECT_EQ(r.verdict, Verdict::failed) << gpu::family_label(key) << ": " << r.detail;
    // The spoiled term is the one that failed it: the other term of the worst case is in bounds.
    if (!row.spoil.out) {
      EXPECT_LE(r.max_error, r.bound) << "the output was not spoiled: " << r.detail;
    }
    if (!row.spoil.lse) {
      EXPECT_LE(lse_error_in(r.detail), selftest::kLseBound) << "the LSE was not spoiled: " << r.detail;
    }
    // The families the spoiling leaves alone still pass (the generic row under a faster one's).
    if (row.family != KernelId::generic && row.family != KernelId::merge_states && row.family != KernelId::split_merge) {
      EXPECT_EQ(selftest::ensure({kVendor, 0, KernelId::generic, AC_DTYPE_BF16, 64}, nullptr).verdict, Verdict::passed);
    }
  }
  g_spoil = {};
  fake.emulate(true);
}

TEST_F(Selftest, VerdictsAreCachedAndLaterProcessesSkipTheChecks) {
  selftest::warmup(kVendor, 0, {AC_DTYPE_BF16}, {64});
  const std::string key = selftest::cache_key(kVendor, 0);
  EXPECT_EQ(key.rfind(std::string(kArch) + "|", 0), 0u) << key;
  EXPECT_NE(key.find(std::string("|") + AITER_COMPAT_VERSION + "+"), std::string::npos) << key;
  const auto cached = selftest::load_cache(key);
  EXPECT_TRUE(cached.count("generic:bf16:64"));
  EXPECT_EQ(cached.at("generic:bf16:64").verdict, Verdict::passed);
  // A later process: nothing known, a device that would now fail every check; the cache answers.
  selftest::forget_all();
  fake.emulate(false);
  fake.reset();
  EXPECT_EQ(selftest::ensure({kVendor, 0, KernelId::generic, AC_DTYPE_BF16, 64}, nullptr).source, "cache");
  EXPECT_EQ(fake.launches(), 0);
}

TEST_F(Selftest, TheFoldedSplitMergeHasVerdictsOfItsOwn) {
  // The tiled decode's split cases run in the process's split-merge mode: verdicts measured with
  // the merge kernel say nothing of the fold (AITER_COMPAT_SPLIT_MERGE=fold), and back.
  const std::string plain = selftest::cache_key(kVendor, 0);
  setenv("AITER_COMPAT_SPLIT_MERGE", "fold", 1);
  const std::string folded = selftest::cache_key(kVendor, 0);
  setenv("AITER_COMPAT_SPLIT_MERGE", "kernel", 1);
  EXPECT_EQ(selftest::cache_key(kVendor, 0), plain);
  unsetenv("AITER_COMPAT_SPLIT_MERGE");
  EXPECT_NE(folded, plain);
  EXPECT_EQ(folded.rfind(plain, 0), 0u) << folded;  // the same key, the mode added
}

TEST_F(Selftest, AnotherKeyIsCheckedAgain) {
  // A verdict under another driver's key (and one of another build) counts for nothing here.
  std::string key = selftest::cache_key(kVendor, 0);
  const std::string other_driver = key.substr(0, key.find('|')) + "|another driver 1" + key.substr(key.find('|', key.find('|') + 1));
  gpu::FamilyResult pass;
  pass.verdict = Verdict::passed;
  ASSERT_TRUE(selftest::store_cache(other_driver, "generic:bf16:64", pass));
  ASSERT_TRUE(selftest::store_cache(key + "x", "generic:bf16:64", pass));
  fake.emulate(false);  // a check would fail now: a wrong device
  fake.reset();
  const gpu::FamilyResult r = selftest::ensure({kVendor, 0, KernelId::generic, AC_DTYPE_BF16, 64}, nullptr);
  EXPECT_EQ(r.source, "measured");
  EXPECT_EQ(r.verdict, Verdict::failed) << r.detail;
  EXPECT_GT(fake.launches(), 0);
  // Both keys are still in the file beside this one's (merged, not overwritten).
  EXPECT_EQ(selftest::load_cache(other_driver).size(), 1u);
  EXPECT_EQ(selftest::load_cache(key).at("generic:bf16:64").verdict, Verdict::failed);
}

TEST_F(Selftest, ACachedFailureIsReportedAsCached) {
  gpu::FamilyResult fail;
  fail.verdict = Verdict::failed;
  fail.detail = "prefill: max error 0.5";
  ASSERT_TRUE(selftest::store_cache(selftest::cache_key(kVendor, 0), "generic:f16:64", fail));
  const FamilyKey k{kVendor, 0, KernelId::generic, AC_DTYPE_F16, 64};
  const gpu::FamilyResult r = selftest::ensure(k, nullptr);
  EXPECT_EQ(r.verdict, Verdict::failed);
  EXPECT_NE(selftest::reason(k, r).find("as cached: prefill: max error 0.5"), std::string::npos) << selftest::reason(k, r);
}

TEST_F(Selftest, ModeAlwaysChecksDespiteTheCache) {
  gpu::FamilyResult pass;
  pass.verdict = Verdict::passed;
  ASSERT_TRUE(selftest::store_cache(selftest::cache_key(kVendor, 0), "generic:bf16:64", pass));
  selftest::set_mode(selftest::Mode::always);
  fake.reset();
  EXPECT_EQ(selftest::ensure({kVendor, 0, KernelId::generic, AC_DTYPE_BF16, 64}, nullptr).source, "measured");
  EXPECT_GT(fake.launches(), 0);
}

TEST_F(Selftest, ModeOffLaunchesUnchecked) {
  selftest::set_mode(selftest::Mode::off);
  Call call;
  fake.reset();
  run_gpu(call.gpu_args(), nullptr);
  EXPECT_EQ(fake.launches(), 1);  // the call's own kernel only
  EXPECT_TRUE(selftest::known_verdicts().empty());
}

TEST_F(Selftest, FirstUseChecksOnceThenLooksUp) {
  Call call;
  fake.reset();
  run_gpu(call.gpu_args(), nullptr);
  const int first = fake.launches();
  EXPECT_GT(first, 1);  // the checks, then the call
  fake.reset();
  run_gpu(call.gpu_args(), nullptr);
  EXPECT_EQ(fake.launches(), 1);
  EXPECT_LE(call.error(), 1e-2);
}

TEST_F(Selftest, NeverDuringCaptureUnlessKnown) {
  Call call;
  fake.set_capturing(1);
  fake.reset();
  try {
    run_gpu(call.gpu_args(), nullptr);
    FAIL() << "a check during capture must be refused";
  } catch (const gpu::GpuError& e) {
    EXPECT_NE(std::string(e.what()).find("aiter_compat.warmup()"), std::string::npos) << e.what();
  }
  EXPECT_EQ(fake.launches(), 0);  // nothing was enqueued into the capture
  fake.set_capturing(0);
  selftest::warmup(kVendor, 0, {AC_DTYPE_BF16}, {64});
  fake.set_capturing(1);
  fake.reset();
  run_gpu(call.gpu_args(), nullptr);  // known now: the capture takes the call alone
  fake.set_capturing(0);
  EXPECT_EQ(fake.launches(), 1);
}

TEST_F(Selftest, FaultSpecificationsAreParsedOrRefusedWithTheReason) {
  gpu::FaultSpec f = gpu::parse_fault("tiled_rows:f16:128");
  EXPECT_TRUE(f.set);
  EXPECT_EQ(f.row, KernelId::tiled_rows);
  EXPECT_TRUE(f.applies(KernelId::tiled_rows, AC_DTYPE_F16, 128));
  EXPECT_FALSE(f.applies(KernelId::tiled_rows, AC_DTYPE_BF16, 128));
  EXPECT_FALSE(f.applies(KernelId::tiled_rows, AC_DTYPE_F16, 64));
  EXPECT_TRUE(gpu::parse_fault("decode").applies(KernelId::decode, AC_DTYPE_BF16, 64));
  EXPECT_NE(gpu::parse_fault("fast").error.find("not a GPU row of the kernel table (tiled_keys"), std::string::npos);
  EXPECT_NE(gpu::parse_fault("generic:f8").error.find("dtype f8 is not one of f32, f16, bf16"), std::string::npos);
  EXPECT_NE(gpu::parse_fault("generic:bf16:x").error.find("head dim x"), std::string::npos);
  EXPECT_FALSE(gpu::parse_fault("cpu_reference").set);
}

TEST_F(Selftest, TheCasesAgreeWithThemselvesAndCatchPoison) {
  // The comparison fails where an output was never written (NaN) and passes on the reference.
  for (auto kind : {selftest::CaseKind::prefill_varlen, selftest::CaseKind::merge}) {
    selftest::Case c = selftest::make_case(kind, AC_DTYPE_BF16, 64);
    const selftest::Buffer poisoned = c.buffers[static_cast<size_t>(c.out)];
    if (kind == selftest::CaseKind::merge) cpu::merge_states(selftest::merge_args(c, nullptr, DeviceKind::cpu, 0));
    else cpu::varlen_attention(selftest::varlen_args(c, nullptr, DeviceKind::cpu, 0));
    const selftest::Buffer& out = c.buffers[static_cast<size_t>(c.out)];
    EXPECT_EQ(selftest::max_error(out, out), 0.0);
    EXPECT_TRUE(std::isinf(selftest::max_error(poisoned, out)));
    EXPECT_EQ(selftest::make_case(kind, AC_DTYPE_BF16, 64).buffers[0].host, c.buffers[0].host) << "seeded inputs";
  }
}

}  // namespace

namespace {

// AITER_COMPAT_SELFTEST as the process starts: run once per value by ctest (tests/CMakeLists.txt).
TEST(SelftestEnvironment, ModeIsReadFromTheEnvironment) {
  const char* v = std::getenv("AITER_COMPAT_SELFTEST");
  const std::string text = v ? v : "";
  const selftest::Mode want = text == "off" ? selftest::Mode::off : text == "always" ? selftest::Mode::always
                                                                                     : selftest::Mode::first_use;
  EXPECT_EQ(selftest::to_string(selftest::mode()), selftest::to_string(want)) << "AITER_COMPAT_SELFTEST=" << text;
}

}  // namespace
