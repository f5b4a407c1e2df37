// The launcher and the GPU probe against a stand-in libcuda (tests/cpp/fake_runtimes): which
// kernel runs, how keys are split, scratch memory, one module per device, and the errors for a
// GPU with no code object. Runs in its own process with the stand-in on LD_LIBRARY_PATH.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <string>

#if defined(AITER_COMPAT_HAVE_CUDA_H)
#include <cuda.h>
#endif

#include "aiter_compat/probe/gpu_probe.hpp"
#include "gpu_test_support.hpp"
#include "host_tensor.hpp"
#include "aiter_compat/gpu_runtime/cuda_launch_config.hpp"
#include "aiter_compat/gpu_runtime/launch.hpp"
#include "aiter_compat/shim/gpu_runner.hpp"

using namespace aiter_compat;
using namespace aiter_compat::testing_support;

namespace {

using FakeLaunch = fake_launch;

struct Fake {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW);  // the same library the launcher binds
  template <typename F>
  F fn(const char* name) {
    return reinterpret_cast<F>(dlsym(lib, name));
  }
  int launches() { return fn<int (*)()>("fake_cuda_launch_count")(); }
  const FakeLaunch* launch(int i) { return fn<const FakeLaunch* (*)(int)>("fake_cuda_launch")(i); }
  int module_loads(int d) { return fn<int (*)(int)>("fake_cuda_module_loads")(d); }
  int allocations() { return fn<int (*)()>("fake_cuda_allocations")(); }
  int pool_allocations() { return fn<int (*)()>("fake_cuda_pool_allocations")(); }
  int pools() { return fn<int (*)()>("fake_cuda_pools")(); }
  bool pool_keeps_memory() { return fn<int (*)()>("fake_cuda_pool_keeps_memory")() != 0; }
  void set_capturing(int on) { fn<void (*)(int)>("fake_cuda_set_capturing")(on); }
  int frees() { return fn<int (*)()>("fake_cuda_frees")(); }
  void reset() { fn<void (*)()>("fake_cuda_reset")(); }
  void set_driver_version(int v) { fn<void (*)(int)>("fake_cuda_set_driver_version")(v); }
};

// Decode over a paged cache: batch sequences of `ctx` keys, GPT-OSS heads.
struct DecodeCase {
  HostTensor q, kc, vc, out, table, used, cu;
  PagedArgs args;
  DecodeCase(int64_t batch, int64_t ctx, DType dtype = DType::bf16, int64_t d = 64, int device = 0)
      : q(dtype, {batch, 64, d}), kc(dtype, {batch * ((ctx + 15) / 16), 16, 8, d}),
        vc(dtype, {batch * ((ctx + 15) / 16), 16, 8, d}), out(dtype, {batch, 64, d}),
        table(DType::i32, {batch, (ctx + 15) / 16}), used(DType::i32, {batch}), cu(DType::i32, {batch + 1}) {
    for (auto* t : {&q, &kc, &vc, &out, &table, &used, &cu}) {
      t->view.device = DeviceKind::cuda;
      t->view.device_id = device;
    }
    args.q = q.view, args.k_cache = kc.view, args.v_cache = vc.view, args.out = out.view;
    args.block_table = table.view, args.seqused_k = used.view, args.cu_seqlens_q = cu.view;
    args.uniform_queries = true;
    args.max_seqlen_q = 1;
    args.max_seqlen_k = ctx;
  }
};

}  // namespace

TEST(Launcher, GpuProbeBindsTheRuntime) {
  DeviceReport d = probe_device();
  ASSERT_TRUE(d.present) << d.reason;
  EXPECT_EQ(d.vendor, "nvidia");
  EXPECT_EQ(d.arch, "sm_90");
  EXPECT_EQ(d.name, "Fake H200");
  EXPECT_EQ(d.count, 2);
  EXPECT_EQ(gpu::device_arch(gpu::Vendor::nvidia, 1), "sm_80");
}

TEST(Launcher, DecodeKernelAndSplits) {
  if (!built_for("sm_90")) GTEST_SKIP() << "no sm_90 code object in this build (nvcc not found at configure time)";
  Fake fake;
  fake.reset();
  DecodeCase batch64(64, 4096);
  run_gpu(batch64.args, nullptr);
  // One token's 8 query heads of a KV group fill one 16-row tile: the "keys" shape. 512 blocks
  // fill most of one wave (4 per multiprocessor x 132): not split, no merge.
  ASSERT_EQ(fake.launches(), 1);
  EXPECT_STREQ(fake.launch(0)->name, "ac_tiled_keys_paged_bf16_d64");
  EXPECT_EQ(fake.launch(0)->grid[0], 1u);
  EXPECT_EQ(fake.launch(0)->grid[1], 8u);
  EXPECT_EQ(fake.launch(0)->grid[2], 64u);
  EXPECT_EQ(fake.launch(0)->block[0], 128u);
  EXPECT_EQ(fake.allocations(), 0);

  fake.reset();
  setenv("AITER_COMPAT_SPLIT_MERGE", "fold", 1);
  DecodeCase sixteen(16, 4096);  // 128 blocks: 4 splits of 1024 keys make one wave of 512
  run_gpu(sixteen.args, nullptr);
  // The "keys" split kernel folds the merge in (its last split block per KV head enters the
  // sink, once), after a kernel that zeroes its arrival counters: no merge kernel. 8 KV heads x
  // (8 m-tiles of 16 rows for 16 x 8 query rows, + 16 sequences): 192, two blocks of 128 threads.
  ASSERT_EQ(fake.launches(), 2);
  EXPECT_STREQ(fake.launch(0)->name, "ac_zero_counts");
  EXPECT_EQ(fake.launch(0)->grid[0], 2u);
  EXPECT_STREQ(fake.launch(1)->name, "ac_tiled_keys_fold_paged_bf16_d64");  // the twin with the fold's code
  EXPECT_EQ(fake.launch(1)->grid[2], 16u * 4);

  fake.reset();
  DecodeCase one(1, 32768);
  run_gpu(one.args, nullptr);
  ASSERT_EQ(fake.launches(), 2);
  EXPECT_STREQ(fake.launch(1)->name, "ac_tiled_keys_fold_paged_bf16_d64");
  EXPECT_EQ(fake.launch(1)->grid[2], 64u);  // 66 fit one wave: capped at 64 splits (512 keys each)
  unsetenv("AITER_COMPAT_SPLIT_MERGE");  // the default: the merge kernel
  fake.reset();
  run_gpu(one.args, nullptr);
  ASSERT_EQ(fake.launches(), 2);
  EXPECT_STREQ(fake.launch(0)->name, "ac_tiled_keys_paged_bf16_d64");
  EXPECT_STREQ(fake.launch(1)->name, "ac_merge_bf16");  // the sink enters here, once
  // Eager: the scratch comes from the launcher's own pool, which keeps its memory (release
  // threshold at its maximum), and goes back to it after the merge.
  EXPECT_EQ(fake.pool_allocations(), 1);
  EXPECT_EQ(fake.allocations(), 0);
  EXPECT_EQ(fake.frees(), 1);
  EXPECT_EQ(fake.pools(), 1);  // one pool for device 0
  EXPECT_TRUE(fake.pool_keeps_memory());  // release threshold at its maximum

  fake.reset();
  fake.set_capturing(1);  // under graph capture: the default pool (a graph allocation node)
  run_gpu(one.args, nullptr);
  fake.set_capturing(0);
  EXPECT_EQ(fake.pool_allocations(), 0);
  EXPECT_EQ(fake.allocations(), 1);
  EXPECT_EQ(fake.frees(), 1);

  fake.reset();
  DecodeCase window(4, 4096);
  window.args.window = {127, 0};
  run_gpu(window.args, nullptr);
  ASSERT_EQ(fake.launches(), 1);  // 128 keys: too few to split
  EXPECT_EQ(fake.launch(0)->grid[2], 4u);

  fake.reset();
  DecodeCase extend(4, 4096);  // 300 new tokens per sequence: 2400 rows of 128
  extend.args.uniform_queries = false;
  extend.args.max_seqlen_q = 300;
  run_gpu(extend.args, nullptr);
  // sm_90: the "rows" tiles on the warpgroup MMA, two warpgroups of 64 rows.
  EXPECT_STREQ(fake.launch(0)->name, "ac_tiled_wgmma_paged_bf16_d64");
  EXPECT_EQ(fake.launch(0)->grid[0], 19u);
  EXPECT_EQ(fake.launch(0)->grid[2], 4u);  // 608 blocks: more than a wave (2 per multiprocessor), not split
  EXPECT_EQ(fake.launch(0)->block[0], 256u);

  fake.reset();
  DecodeCase wide(1, 4096, DType::f32);  // the decode kernel takes f16/bf16: the generic one runs
  run_gpu(wide.args, nullptr);
  EXPECT_STREQ(fake.launch(0)->name, "ac_attention_f32");
  EXPECT_EQ(fake.launch(0)->block[0], 128u);
}

// An fp8 cache picks the fp8-KV kernels (their launches carry the storage types); output_scale
// over a 16-bit cache goes to the generic kernel, which applies it (the 16-bit tiles do not).
TEST(Launcher, Fp8CachesAndOutputScale) {
  if (!built_for("sm_90")) GTEST_SKIP() << "no sm_90 code object in this build (nvcc not found at configure time)";
  Fake fake;
  fake.reset();
  DecodeCase fp8(8, 256);
  HostTensor kc(DType::f8_e4m3fnuz, {8 * 16, 16, 8, 64}), vc(DType::f8_e4m3fnuz, {8 * 16, 16, 8, 64});
  for (auto* t : {&kc, &vc}) t->view.device = DeviceKind::cuda;
  fp8.args.k_cache = kc.view, fp8.args.v_cache = vc.view;
  run_gpu(fp8.args, nullptr);
  ASSERT_EQ(fake.launches(), 1);
  EXPECT_STREQ(fake.launch(0)->name, "ac_tiled_keys_paged_bf16_kv8_d64");

  fake.reset();
  HostTensor scale(DType::f32, {1});
  scale.view.device = DeviceKind::cuda;
  DecodeCase plain(8, 256);
  plain.args.output_scale = scale.view;
  run_gpu(plain.args, nullptr);
  EXPECT_STREQ(fake.launch(0)->name, "ac_attention_bf16");
  fake.reset();
  fp8.args.output_scale = scale.view;
  run_gpu(fp8.args, nullptr);
  EXPECT_STREQ(fake.launch(0)->name, "ac_tiled_keys_paged_bf16_kv8_d64");
}

// The tiled kernels take strides whose bytes fit 32 bits (kernel_table.cpp, strides_fit_32_bits):
// a page stride of 2^31 elements is 4 GiB in bf16, one byte too many, and goes to the decode
// kernel; the same stride over fp8 codes (2 GiB) stays on the tiled kernel; so does a stride of
// 2^31 - 8 bf16 elements. Nothing is read: the stand-in launches nothing.
TEST(Launcher, TiledKernelsTakeStridesThatFitThirtyTwoBits) {
  if (!built_for("sm_90")) GTEST_SKIP() << "no sm_90 code object in this build (nvcc not found at configure time)";
  Fake fake;
  const int64_t big = int64_t{1} << 31;
  fake.reset();
  DecodeCase wide(8, 256);
  wide.kc.view.strides[0] = big;
  wide.args.k_cache = wide.kc.view;
  run_gpu(wide.args, nullptr);
  ASSERT_EQ(fake.launches(), 1);
  EXPECT_STREQ(fake.launch(0)->name, "ac_decode_bf16_d64");

  fake.reset();
  wide.kc.view.strides[0] = big - 8;
  wide.args.k_cache = wide.kc.view;
  run_gpu(wide.args, nullptr);
  ASSERT_EQ(fake.launches(), 1);
  EXPECT_STREQ(fake.launch(0)->name, "ac_tiled_keys_paged_bf16_d64");

  fake.reset();
  DecodeCase fp8(8, 256);
  HostTensor kc(DType::f8_e4m3fnuz, {8 * 16, 16, 8, 64}), vc(DType::f8_e4m3fnuz, {8 * 16, 16, 8, 64});
  for (auto* t : {&kc, &vc}) t->view.device = DeviceKind::cuda;
  vc.view.strides[0] = big;
  fp8.args.k_cache = kc.view, fp8.args.v_cache = vc.view;
  run_gpu(fp8.args, nullptr);
  ASSERT_EQ(fake.launches(), 1);
  EXPECT_STREQ(fake.launch(0)->name, "ac_tiled_keys_paged_bf16_kv8_d64");

  fake.reset();
  DecodeCase table(8, 256);  // block-table entries 2^30 apart: 4 GiB of int32 per step
  table.table.view.strides[1] = int64_t{1} << 30;
  table.args.block_table = table.table.view;
  run_gpu(table.args, nullptr);
  ASSERT_EQ(fake.launches(), 1);
  EXPECT_STREQ(fake.launch(0)->name, "ac_decode_bf16_d64");
}

// Runs five times: as discovered (AITER_COMPAT_WGMMA_PRODUCER unset: the build's default, no
// twins), and as ctest entries of their own with AITER_COMPAT_NO_WGMMA=1 (the mma.sync "rows"
// kernels, 128 threads), AITER_COMPAT_WGMMA_PRODUCER=1 (the twins wherever the warpgroup row runs:
// at head dim 64 three computing warpgroups and the producer, 512 threads over 192-row tiles), =0
// (never the twins) and =auto (the launcher's choice).
using gpu::ProducerTwins;
ProducerTwins twin_mode() { return gpu::producer_twins(); }
bool no_wgmma() {
  const char* v = std::getenv("AITER_COMPAT_NO_WGMMA");
  return v && *v && std::string(v) != "0";
}

// The variable's spellings (read by producer_twins() each time it is asked; the launcher asks
// once per module load): auto, the switch's usual words in any case, and anything else the default.
TEST(Launcher, ProducerTwinsModeSpellings) {
  const char* was = std::getenv("AITER_COMPAT_WGMMA_PRODUCER");
  const std::string saved = was ? was : "";
  const ProducerTwins fallback = [] {
    unsetenv("AITER_COMPAT_WGMMA_PRODUCER");
    return gpu::producer_twins();
  }();
  EXPECT_EQ(fallback, ProducerTwins::never);  // kTwinsByDefault until =auto is measured
  for (const char* v : {"auto", "AUTO"}) {
    setenv("AITER_COMPAT_WGMMA_PRODUCER", v, 1);
    EXPECT_EQ(gpu::producer_twins(), ProducerTwins::automatic) << v;
  }
  for (const char* v : {"1", "on", "Always", "true"}) {
    setenv("AITER_COMPAT_WGMMA_PRODUCER", v, 1);
    EXPECT_EQ(gpu::producer_twins(), ProducerTwins::always) << v;
  }
  for (const char* v : {"0", "OFF", "never", "false"}) {
    setenv("AITER_COMPAT_WGMMA_PRODUCER", v, 1);
    EXPECT_EQ(gpu::producer_twins(), ProducerTwins::never) << v;
  }
  for (const char* v : {"", "2", "yes please"}) {
    setenv("AITER_COMPAT_WGMMA_PRODUCER", v, 1);
    EXPECT_EQ(gpu::producer_twins(), fallback) << "'" << v << "'";
  }
  if (was) setenv("AITER_COMPAT_WGMMA_PRODUCER", saved.c_str(), 1);
  else unsetenv("AITER_COMPAT_WGMMA_PRODUCER");
}

TEST(Launcher, PrefillKernelFollowsNoWgmma) {
  if (!built_for("sm_90")) GTEST_SKIP() << "no sm_90 code object in this build (nvcc not found at configure time)";
  // (The launcher's own choice keeps this call off the twins: ProducerTwinsWhereTheyWin.)
  const bool mma_sync = no_wgmma(), producer = !mma_sync && twin_mode() == ProducerTwins::always;
  Fake fake;
  fake.reset();
  DecodeCase extend(4, 4096, DType::f16);  // 300 new tokens per sequence over 4,096 keys
  extend.args.uniform_queries = false;
  extend.args.max_seqlen_q = 300;
  run_gpu(extend.args, nullptr);
  EXPECT_STREQ(fake.launch(0)->name, mma_sync   ? "ac_tiled_rows_paged_f16_d64"
                                     : producer ? "ac_tiled_wgmma_producer_paged_f16_d64"
                                                : "ac_tiled_wgmma_paged_f16_d64");
  EXPECT_EQ(fake.launch(0)->block[0], mma_sync ? 128u : producer ? 512u : 256u);
  EXPECT_EQ(fake.launch(0)->grid[0], producer ? 13u : 19u);  // 2,400 rows in 192-row tiles, or 128-row ones
}

// Where the launcher's own choice takes the producer twins (takes_producer_twin): head dim 64 over
// a 16-bit cache with many keys per query and a grid that keeps the SMs as busy as the default's;
// not a short window or key range, head dim 128, an fp8 cache, or a grid whose 192-row blocks
// leave some SM more rows than 128-row ones would (the stand-in has 132 SMs). =1 gives the twins
// all of them, =0 none.
TEST(Launcher, ProducerTwinsWhereTheyWin) {
  if (!built_for("sm_90")) GTEST_SKIP() << "no sm_90 code object in this build (nvcc not found at configure time)";
  if (no_wgmma()) GTEST_SKIP() << "AITER_COMPAT_NO_WGMMA=1: no warpgroup kernels to choose between";
  const ProducerTwins mode = twin_mode();
  Fake fake;
  auto extend = [](int64_t ctx, int64_t d = 64, int64_t new_tokens = 1536) {
    auto c = std::make_unique<DecodeCase>(4, ctx, DType::bf16, d);
    c->args.uniform_queries = false;
    c->args.max_seqlen_q = new_tokens;  // 12,288 rows a sequence: 3,072 a busiest SM either way
    return c;
  };
  auto expect = [&](PagedArgs& a, const std::string& base, bool twin_when_automatic, const char* what) {
    fake.reset();
    run_gpu(a, nullptr);
    ASSERT_GE(fake.launches(), 1) << what;
    const bool twin = mode == ProducerTwins::always || (mode == ProducerTwins::automatic && twin_when_automatic);
    const std::string want = "ac_tiled_wgmma_" + std::string(twin ? "producer_" : "") + base;
    EXPECT_EQ(fake.launch(0)->name, want) << what;
  };
  auto long_keys = extend(4096);
  expect(long_keys->args, "paged_bf16_d64", true, "head dim 64, 4,096 keys");
  auto windowed = extend(4096);
  windowed->args.window = {127, 0};
  expect(windowed->args, "paged_bf16_d64", false, "a window of 128 keys");
  auto short_keys = extend(512, 64, 512);
  expect(short_keys->args, "paged_bf16_d64", false, "512 keys");
  auto few_rows = extend(4096, 64, 300);  // 608 blocks of 128 rows (640 a busiest SM), 416 of 192 (768)
  expect(few_rows->args, "paged_bf16_d64", false, "300 new tokens a sequence");
  auto d128 = extend(4096, 128);
  expect(d128->args, "paged_bf16_d128", false, "head dim 128");
  auto fp8 = extend(4096);
  HostTensor kc(DType::f8_e4m3fn, {4 * 256, 16, 8, 64}), vc(DType::f8_e4m3fn, {4 * 256, 16, 8, 64});
  for (auto* t : {&kc, &vc}) t->view.device = DeviceKind::cuda;
  fp8->args.k_cache = kc.view, fp8->args.v_cache = vc.view;
  expect(fp8->args, "paged_bf16_kv8_d64", false, "an fp8 cache");
}

// Head dim 256 (Gemma's): the row tiles take prefill, extend and decode (no keys shape, no
// warpgroup or decode kernel is built for it), 64-row tiles of four warps.
TEST(Launcher, HeadDim256TakesTheRowTiles) {
  if (!built_for("sm_90")) GTEST_SKIP() << "no sm_90 code object in this build (nvcc not found at configure time)";
  Fake fake;
  fake.reset();
  DecodeCase extend(4, 4096, DType::bf16, 256);  // 300 new tokens per sequence: 2400 rows
  extend.args.uniform_queries = false;
  extend.args.max_seqlen_q = 300;
  run_gpu(extend.args, nullptr);
  ASSERT_GE(fake.launches(), 1);
  EXPECT_STREQ(fake.launch(0)->name, "ac_tiled_rows_paged_bf16_d256");
  EXPECT_EQ(fake.launch(0)->block[0], 128u);
  EXPECT_EQ(fake.launch(0)->grid[0], 38u);  // 2400 rows in tiles of 64

  fake.reset();
  DecodeCase decode(64, 4096, DType::f16, 256);  // 8 rows per KV head: the row tiles, not the generic kernel
  run_gpu(decode.args, nullptr);
  ASSERT_GE(fake.launches(), 1);
  EXPECT_STREQ(fake.launch(0)->name, "ac_tiled_rows_paged_f16_d256");
  EXPECT_EQ(fake.launch(0)->grid[0], 1u);

  fake.reset();
  DecodeCase odd(4, 4096, DType::bf16, 192);  // no tiled kernel at 192: the generic one
  run_gpu(odd.args, nullptr);
  ASSERT_GE(fake.launches(), 1);
  EXPECT_STREQ(fake.launch(0)->name, "ac_attention_bf16");
}

// A call the router gave to the tiled rows that they cannot launch (output_scale over a 16-bit
// cache) with a group too wide for the generic kernel's block: an error naming both, never a
// generic launch past its shared memory.
TEST(Launcher, NoGenericLaunchForAGroupItsBlockCannotHold) {
  if (!built_for("sm_90")) GTEST_SKIP() << "no sm_90 code object in this build (nvcc not found at configure time)";
  Fake fake;
  fake.reset();
  DecodeCase wide(4, 256, DType::bf16, 128);
  HostTensor kc(DType::bf16, {4 * 16, 16, 2, 128}), vc(DType::bf16, {4 * 16, 16, 2, 128});  // 32 query heads per KV head
  HostTensor scale(DType::f32, {1});
  for (auto* t : {&kc, &vc, &scale}) t->view.device = DeviceKind::cuda;
  wide.args.k_cache = kc.view, wide.args.v_cache = vc.view;
  wide.args.output_scale = scale.view;
  try {
    run_gpu(wide.args, nullptr);
    FAIL() << "a generic block holds 2048 of group x head dim; this call has 32 x 128";
  } catch (const gpu::GpuError& e) {
    EXPECT_NE(std::string(e.what()).find("(this call: 32 x 128)"), std::string::npos) << e.what();
  }
  EXPECT_EQ(fake.launches(), 0);
}

TEST(Launcher, OneModulePerDeviceAndNoneForAnotherArch) {
  if (!built_for("sm_90")) GTEST_SKIP() << "no sm_90 code object in this build (nvcc not found at configure time)";
  Fake fake;
  DecodeCase a(4, 100), b(4, 100);
  run_gpu(a.args, nullptr);
  run_gpu(b.args, nullptr);
  EXPECT_EQ(fake.module_loads(0), 1);  // loaded once, functions cached
  DecodeCase other(4, 100, DType::bf16, 64, /*device=*/1);
  try {
    run_gpu(other.args, nullptr);
    FAIL() << "device 1 (sm_80) has no code object";
  } catch (const gpu::GpuError& e) {
    EXPECT_NE(std::string(e.what()).find("no fallback code object for sm_80 (built for: "), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(fake.module_loads(1), 0);
}

// A split call's second kernel is the first's programmatic dependent on sm_90 with a driver from
// CUDA 12.3 (eager and captured alike): the "keys" split kernel after the kernel that zeroes its
// counters (AITER_COMPAT_SPLIT_MERGE=fold: it folds the merge in), or the merge kernel after the
// split kernel (=kernel, and the default). It starts while the first's blocks run and waits inside the GPU. An older
// driver, or AITER_COMPAT_NO_PDL=1, launches it plainly after the first.
TEST(Launcher, SplitCallsSecondKernelIsTheFirstsProgrammaticDependent) {
  if (!built_for("sm_90")) GTEST_SKIP() << "no sm_90 code object in this build (nvcc not found at configure time)";
  Fake fake;
  DecodeCase one(1, 32768);
  auto second_of_one_split_call = [&](const char* what, int driver_version = 13000, bool capturing = false) {
    const char* mode = std::getenv("AITER_COMPAT_SPLIT_MERGE");
    const bool merge_kernel = !mode || std::string(mode) != "fold";
    fake.reset();
    fake.set_driver_version(driver_version);
    fake.set_capturing(capturing ? 1 : 0);
    run_gpu(one.args, nullptr);
    fake.set_capturing(0);
    EXPECT_EQ(fake.launches(), 2) << what;
    EXPECT_STREQ(fake.launch(0)->name, merge_kernel ? "ac_tiled_keys_paged_bf16_d64" : "ac_zero_counts") << what;
    EXPECT_STREQ(fake.launch(1)->name, merge_kernel ? "ac_merge_bf16" : "ac_tiled_keys_fold_paged_bf16_d64") << what;
    EXPECT_FALSE(fake.launch(0)->programmatic) << what << ": the first kernel follows the caller's work";
    const bool programmatic = fake.launch(1)->programmatic != 0;
    fake.reset();
    return programmatic;
  };
  for (const char* mode : {"fold", "kernel", ""}) {
    if (*mode) setenv("AITER_COMPAT_SPLIT_MERGE", mode, 1);
    else unsetenv("AITER_COMPAT_SPLIT_MERGE");
    EXPECT_TRUE(second_of_one_split_call("eager, CUDA 13.0 driver"));
    EXPECT_TRUE(second_of_one_split_call("captured", 13000, true));
    EXPECT_TRUE(second_of_one_split_call("CUDA 12.3 driver", 12030));
    // 12.2: no programmatic edges in captured graphs, so none at all
    EXPECT_FALSE(second_of_one_split_call("CUDA 12.2 driver", 12020));
    setenv("AITER_COMPAT_NO_PDL", "1", 1);
    EXPECT_FALSE(second_of_one_split_call("AITER_COMPAT_NO_PDL=1"));
    setenv("AITER_COMPAT_NO_PDL", "0", 1);
    EXPECT_TRUE(second_of_one_split_call("AITER_COMPAT_NO_PDL=0"));
    unsetenv("AITER_COMPAT_NO_PDL");
  }
  unsetenv("AITER_COMPAT_SPLIT_MERGE");

  DecodeCase unsplit(64, 4096);
  fake.reset();
  run_gpu(unsplit.args, nullptr);
  ASSERT_EQ(fake.launches(), 1);
  EXPECT_FALSE(fake.launch(0)->programmatic);
}

// cuLaunchKernelEx's structs as the launcher lays them out (cuda_launch_config.hpp) against
// CUDA's own header, where one is installed.
TEST(CudaLaunchConfig, MatchesCudaHeader) {
#if defined(AITER_COMPAT_HAVE_CUDA_H)
  using gpu::CudaLaunchAttribute;
  using gpu::CudaLaunchConfig;
  EXPECT_EQ(sizeof(CudaLaunchAttribute), sizeof(CUlaunchAttribute));
  EXPECT_EQ(offsetof(CudaLaunchAttribute, value), offsetof(CUlaunchAttribute, value));
  EXPECT_EQ(sizeof(CudaLaunchConfig), sizeof(CUlaunchConfig));
  EXPECT_EQ(offsetof(CudaLaunchConfig, grid), offsetof(CUlaunchConfig, gridDimX));
  EXPECT_EQ(offsetof(CudaLaunchConfig, block), offsetof(CUlaunchConfig, blockDimX));
  EXPECT_EQ(offsetof(CudaLaunchConfig, shared_bytes), offsetof(CUlaunchConfig, sharedMemBytes));
  EXPECT_EQ(offsetof(CudaLaunchConfig, stream), offsetof(CUlaunchConfig, hStream));
  EXPECT_EQ(offsetof(CudaLaunchConfig, attrs), offsetof(CUlaunchConfig, attrs));
  EXPECT_EQ(offsetof(CudaLaunchConfig, num_attrs), offsetof(CUlaunchConfig, numAttrs));
  EXPECT_EQ(gpu::kCudaLaunchAttributeProgrammaticStreamSerialization,
            static_cast<int>(CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION));
#else
  GTEST_SKIP() << "cuda.h not found at configure time (the CUDA toolkit is not installed): the layout's "
                  "static_assert on its sizes still holds";
#endif
}
