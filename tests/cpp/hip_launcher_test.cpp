// The HIP side of the GPU probe and the launcher against a stand-in libamdhip64
// (tests/cpp/fake_runtimes), in a process of its own: arch by content of the properties,
// the gfx942 code object, the decode kernel with its splits and merge.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>
#include <thread>

#include <dlfcn.h>

#include "aiter_compat/probe/gpu_probe.hpp"
#include "gpu_test_support.hpp"
#include "host_tensor.hpp"
#include "aiter_compat/gpu_runtime/code_objects.hpp"
#include "aiter_compat/gpu_runtime/kernel_table.hpp"
#include "aiter_compat/gpu_runtime/launch.hpp"
#include "aiter_compat/shim/gpu_runner.hpp"
#define AC_HOST_MODEL 1
#include "fast_divide.hpp"

using namespace aiter_compat;
using namespace aiter_compat::testing_support;

namespace {

using FakeLaunch = fake_launch;

// The parameters of the first attention kernel launched while the hook is on (the kernels' one
// argument; not the kernel that zeroes a folded merge's counters, whose argument is a pointer).
ac_attention_params g_first_params{};
int g_hooked = 0;
void record_params(const char* name, const void* params) {
  if (std::string(name) != "ac_zero_counts" && g_hooked++ == 0) g_first_params = *static_cast<const ac_attention_params*>(params);
}

// One decode of 1 x 32k keys over a paged bf16 cache (64 query heads, 8 KV heads, head dim 64) on
// the stand-in AMD device: split across blocks, then merged. The stand-in runs no kernel.
template <int64_t D = 64>
struct SplitDecodeAt {
  static constexpr int64_t kCtx = 32768, kBlocks = kCtx / 16;
  HostTensor q{DType::bf16, {1, 64, D}}, kc{DType::bf16, {kBlocks, 16, 8, D}}, vc{DType::bf16, {kBlocks, 16, 8, D}},
      out{DType::bf16, {1, 64, D}}, table{DType::i32, {1, kBlocks}}, used{DType::i32, {1}}, cu{DType::i32, {2}};
  PagedArgs args() {
    PagedArgs a;
    for (auto* t : {&q, &kc, &vc, &out, &table, &used, &cu}) t->view.device = DeviceKind::rocm;
    a.q = q.view, a.k_cache = kc.view, a.v_cache = vc.view, a.out = out.view, a.block_table = table.view;
    a.seqused_k = used.view, a.cu_seqlens_q = cu.view, a.uniform_queries = true, a.max_seqlen_k = kCtx;
    return a;
  }
};
using SplitDecode = SplitDecodeAt<64>;

// The stand-in runtime's record of launches (the library the launcher binds).
struct FakeHip {
  void* lib = dlopen("libamdhip64.so", RTLD_NOW);
  template <typename F> F fn(const char* name) { return reinterpret_cast<F>(dlsym(lib, name)); }
  void reset() { fn<void (*)()>("fake_hip_reset")(); }
  int count() { return fn<int (*)()>("fake_hip_launch_count")(); }
  const FakeLaunch* launch(int i) { return fn<const FakeLaunch* (*)(int)>("fake_hip_launch")(i); }
};

}  // namespace

TEST(HipLauncher, ProbeFindsTheArchByContent) {
  DeviceReport d = probe_device();
  ASSERT_TRUE(d.present) << d.reason;
  EXPECT_EQ(d.vendor, "amd");
  EXPECT_EQ(d.arch, "gfx942");
  EXPECT_EQ(d.name, "AMD Instinct MI300X");
  EXPECT_EQ(gpu::device_arch(gpu::Vendor::amd, 0), "gfx942");
}

// The device properties are read into a buffer per thread: two threads reading them at once (the
// stand-in's calls overlap, each writing a name of its own) each get their own call's name.
TEST(HipLauncher, DevicePropertiesArePerThread) {
  void* lib = dlopen("libamdhip64.so", RTLD_NOW);
  ASSERT_NE(lib, nullptr) << dlerror();
  auto rendezvous = reinterpret_cast<void (*)(int)>(dlsym(lib, "fake_hip_set_properties_rendezvous"));
  ASSERT_NE(rendezvous, nullptr) << "the stand-in runtime lacks fake_hip_set_properties_rendezvous";
  gpu::device_info(gpu::Vendor::amd, 0);  // the runtime bound before the threads start
  rendezvous(2);
  std::string names[2];
  std::thread a([&] { names[0] = gpu::device_info(gpu::Vendor::amd, 0).name; });
  std::thread b([&] { names[1] = gpu::device_info(gpu::Vendor::amd, 0).name; });
  a.join();
  b.join();
  rendezvous(0);
  EXPECT_EQ(std::set<std::string>(names, names + 2),
            (std::set<std::string>{"AMD Instinct MI300X (call 1)", "AMD Instinct MI300X (call 2)"}))
      << names[0] << " / " << names[1];
  EXPECT_EQ(gpu::device_info(gpu::Vendor::amd, 0).name, "AMD Instinct MI300X");
}

TEST(HipLauncher, SecondRuntimeInTheProcessIsReported) {
  void* first = dlopen("libamdhip64.so", RTLD_NOW);  // the one on LD_LIBRARY_PATH, bound first
  ASSERT_NE(first, nullptr) << dlerror();
  void* second = dlopen(SECOND_HIP_RUNTIME, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(second, nullptr) << dlerror();
  DeviceReport d = probe_device();
  ASSERT_TRUE(d.present) << d.reason;
  EXPECT_EQ(d.runtime.find("fake_hip_second"), std::string::npos) << d.runtime;  // the first one is bound
  bool reported = false;
  for (const auto& a : d.attempts)
    if (a.how == "also loaded" && a.library.find("fake_hip_second") != std::string::npos) {
      reported = true;
      EXPECT_NE(a.result.find("another HIP runtime in this process; not used (bound: "), std::string::npos) << a.result;
    }
  EXPECT_TRUE(reported) << "the second copy is not in the report";
}

TEST(HipLauncher, DecodeOnGfx942) {
  if (!built_for("gfx942")) GTEST_SKIP() << "no gfx942 code object in this build (no clang with AMDGPU support)";
  SplitDecode call;
  const PagedArgs a = call.args();
  void* lib = dlopen("libamdhip64.so", RTLD_NOW);
  ASSERT_NE(lib, nullptr);
  auto set_hook = reinterpret_cast<void (*)(fake_kernel_hook)>(dlsym(lib, "fake_hip_set_kernel_hook"));
  ASSERT_NE(set_hook, nullptr);
  set_hook(record_params);
  setenv("AITER_COMPAT_SPLIT_MERGE", "fold", 1);  // (the default is the merge kernel, kept below too)
  run_gpu(a, nullptr);
  unsetenv("AITER_COMPAT_SPLIT_MERGE");
  set_hook(nullptr);
  auto count = reinterpret_cast<int (*)()>(dlsym(lib, "fake_hip_launch_count"));
  auto launch = reinterpret_cast<const FakeLaunch* (*)(int)>(dlsym(lib, "fake_hip_launch"));
  ASSERT_EQ(count(), 2);
  // MFMA tiles by default: the 8 query heads of the group in one 16-row tile, four waves over the
  // keys, the merge folded into the split kernel after the kernel that zeroes its counters;
  // AITER_COMPAT_AMD_DIRECT=1 (the ctest entry ".amd_direct") keeps the direct-load kernel, and
  // its merge kernel.
  const char* direct = std::getenv("AITER_COMPAT_AMD_DIRECT");
  const bool tiles = !(direct && std::string(direct) == "1");
  const FakeLaunch* split = launch(tiles ? 1 : 0);
  if (!tiles) {
    EXPECT_STREQ(split->name, "ac_decode_bf16_d64");
    EXPECT_EQ(split->block[0], 256u);
    EXPECT_STREQ(launch(1)->name, "ac_merge_bf16");
  } else {
    EXPECT_STREQ(launch(0)->name, "ac_zero_counts");
    EXPECT_STREQ(split->name, "ac_tiled_keys_fold_paged_bf16_d64");
    EXPECT_EQ(split->block[0], static_cast<unsigned>(ac_tiled_keys_shape_amd(64).threads()));
    EXPECT_EQ(split->grid[1], 8u);  // KV heads
  }
  EXPECT_GT(split->grid[2], 1u);  // one sequence of 32k keys is split
  // The kernels divide by the group and the split count through the launcher's multiply-shift
  // pairs (fast_divide.hpp): the split kernel's parameters carry this call's.
  const ac_attention_params& p = g_first_params;
  EXPECT_EQ(p.group, 8);
  EXPECT_EQ(p.num_splits, static_cast<int32_t>(split->grid[2]));
  // The folded merge's counters: per KV head, the one m-tile of the one query's rows, plus one
  // per sequence (kernel_params.h).
  EXPECT_EQ(p.split_counts != nullptr, tiles);
  if (tiles) {
    EXPECT_EQ(p.counts_per_head, 2);
  }
  for (int32_t n : {0, 7, 8, 9, 100, 511}) {
    EXPECT_EQ(ac_fast_div(n, p.group_mul, p.group_shift), n / 8) << n;
    EXPECT_EQ(ac_fast_div(n, p.splits_mul, p.splits_shift), n / p.num_splits) << n;
  }
  EXPECT_EQ(reinterpret_cast<int (*)()>(dlsym(lib, "fake_hip_allocations"))(), 1);
  EXPECT_EQ(reinterpret_cast<int (*)()>(dlsym(lib, "fake_hip_frees"))(), 1);
  EXPECT_EQ(reinterpret_cast<int (*)()>(dlsym(lib, "fake_hip_module_loads"))(), 1);
}

// A split decode on a stand-in device of `arch` (the arch is read once per process: one arch per
// test): RDNA3, RDNA4 and gfx1250 run it on the WMMA "keys" tiles (four 32-lane waves over the
// keys of one 16-row tile) unless AITER_COMPAT_AMD_DIRECT=1, when it goes to the direct-load
// kernel; the split merge kernel after it (the WMMA tiles do not fold it in); the module loaded
// is the arch's own code object.
static void expect_split_decode_on(const char* arch, bool wmma) {
  if (!built_for(arch)) GTEST_SKIP() << "no " << arch << " code object in this build (no clang with AMDGPU support)";
  void* lib = dlopen("libamdhip64.so", RTLD_NOW);
  ASSERT_NE(lib, nullptr);
  reinterpret_cast<void (*)(const char*)>(dlsym(lib, "fake_hip_set_arch"))(arch);
  ASSERT_EQ(gpu::device_arch(gpu::Vendor::amd, 0), arch);
  EXPECT_EQ(gpu::kernel_row(gpu::KernelId::tiled_keys).built_for(arch), wmma);
  EXPECT_EQ(gpu::kernel_row(gpu::KernelId::tiled_rows).built_for(arch), wmma);
  EXPECT_FALSE(gpu::kernel_row(gpu::KernelId::tiled_wgmma).built_for(arch));
  EXPECT_TRUE(gpu::kernel_row(gpu::KernelId::decode).built_for(arch));
  SplitDecode call;
  const PagedArgs a = call.args();
  run_gpu(a, nullptr);
  auto count = reinterpret_cast<int (*)()>(dlsym(lib, "fake_hip_launch_count"));
  auto launch = reinterpret_cast<const FakeLaunch* (*)(int)>(dlsym(lib, "fake_hip_launch"));
  ASSERT_EQ(count(), 2);
  const char* direct = std::getenv("AITER_COMPAT_AMD_DIRECT");
  const bool tiles = wmma && !(direct && std::string(direct) == "1");
  const FakeLaunch* split = launch(0);  // the WMMA tiles leave the merge to its kernel (kernel_params.h)
  EXPECT_STREQ(launch(1)->name, "ac_merge_bf16");
  if (tiles) {
    EXPECT_STREQ(split->name, "ac_tiled_keys_paged_bf16_d64");
    EXPECT_EQ(split->block[0], static_cast<unsigned>(gpu::tiled_shape(gpu::KernelId::tiled_keys, 64, arch).threads()));
    EXPECT_EQ(split->block[0], 128u);
    EXPECT_EQ(split->grid[1], 8u);  // KV heads
  } else {
    EXPECT_STREQ(split->name, "ac_decode_bf16_d64");
    EXPECT_EQ(split->block[0], static_cast<unsigned>(AC_DECODE_THREADS));
  }
  EXPECT_GT(split->grid[2], 1u);  // one sequence of 32k keys is split
  const void* image = reinterpret_cast<const void* (*)()>(dlsym(lib, "fake_hip_last_image"))();
  const void* want = nullptr;
  for (const auto& o : code_objects())
    if (std::string(o.arch) == arch) want = o.data;
  EXPECT_EQ(image, want) << "the module loaded is not " << arch << "'s code object";
  // Head dim 128: RDNA4's and gfx1250's WMMA tiles take it, RDNA3's are not built there
  // (kernel_table.cpp, tiled_dims_on): the direct-load decode.
  SplitDecodeAt<128> wide;
  run_gpu(wide.args(), nullptr);
  ASSERT_EQ(count(), 4);
  const bool tiles_128 = wmma && std::string(arch).rfind("gfx12", 0) == 0 && !(direct && std::string(direct) == "1");
  EXPECT_STREQ(launch(2)->name, tiles_128 ? "ac_tiled_keys_paged_bf16_d128" : "ac_decode_bf16_d128");
  EXPECT_STREQ(launch(3)->name, "ac_merge_bf16");
}
TEST(HipLauncher, DecodeOnRdna4TakesTheWmmaTiles) { expect_split_decode_on("gfx1201", true); }
TEST(HipLauncher, DecodeOnRdna3TakesTheWmmaTiles) { expect_split_decode_on("gfx1100", true); }
TEST(HipLauncher, DecodeOnGfx1250TakesTheWmmaTiles) { expect_split_decode_on("gfx1250", true); }

// The tiled kernels address rows with 32-bit strides in bytes (kernel_table.cpp,
// strides_fit_32_bits): a V page stride of 2^31 bf16 elements (4 GiB) sends the split decode to
// the direct-load kernel on gfx942; 2^31 - 8 (one 16-byte row short of it) stays on the tiles;
// likewise a K slot stride whose 16 slots span 4 GiB.
// Nothing is read: the stand-in runs no kernel.
TEST(HipLauncher, TiledKernelsTakeStridesThatFitThirtyTwoBits) {
  if (!built_for("gfx942")) GTEST_SKIP() << "no gfx942 code object in this build (no clang with AMDGPU support)";
  if (const char* d = std::getenv("AITER_COMPAT_AMD_DIRECT"); d && std::string(d) == "1")
    GTEST_SKIP() << "AITER_COMPAT_AMD_DIRECT=1 keeps the direct-load kernels";
  FakeHip fake;
  ASSERT_NE(fake.lib, nullptr);
  // (V's page stride, K's slot stride: 0 keeps the cache's own), whether the tiles take the call.
  // The slots' stride is taken up to block_size - 1 times: 2^26 bf16 elements x 16 slots is 2 GiB,
  // 2^27 x 16 is 4 GiB.
  struct Case {
    int64_t v_page, k_slot;
    bool tiles;
  };
  for (const Case c : {Case{(int64_t{1} << 31) - 8, 0, true}, Case{int64_t{1} << 31, 0, false},
                       Case{0, int64_t{1} << 26, true}, Case{0, int64_t{1} << 27, false}}) {
    fake.reset();
    SplitDecode call;
    if (c.v_page) call.vc.view.strides[0] = c.v_page;
    if (c.k_slot) call.kc.view.strides[1] = c.k_slot;
    run_gpu(call.args(), nullptr);
    ASSERT_EQ(fake.count(), 2) << "V page stride " << c.v_page << ", K slot stride " << c.k_slot;
    EXPECT_STREQ(fake.launch(0)->name, c.tiles ? "ac_tiled_keys_paged_bf16_d64" : "ac_decode_bf16_d64")
        << "V page stride " << c.v_page << ", K slot stride " << c.k_slot;
    EXPECT_STREQ(fake.launch(1)->name, "ac_merge_bf16");
  }
}

// Head dim 256 on gfx942: the MFMA row tiles take decode rows too (no keys shape or direct
// decode kernel is built for 256), at the shape's 256 threads; a call they cannot launch (an
// output_scale over a 16-bit cache) whose group the generic block cannot hold is an error, not
// a launch.
TEST(HipLauncher, HeadDim256OnGfx942) {
  if (!built_for("gfx942")) GTEST_SKIP() << "no gfx942 code object in this build (no clang with AMDGPU support)";
  if (const char* d = std::getenv("AITER_COMPAT_AMD_DIRECT"); d && std::string(d) == "1")
    GTEST_SKIP() << "AITER_COMPAT_AMD_DIRECT=1 keeps the direct-load kernels";
  FakeHip fake;
  ASSERT_NE(fake.lib, nullptr);
  auto decode = [](int64_t kv_heads, int64_t d, HostTensor* scale) {
    const int64_t ctx = 512, blocks = ctx / 16;
    HostTensor q(DType::bf16, {2, 64, d}), kc(DType::bf16, {2 * blocks, 16, kv_heads, d}),
        vc(DType::bf16, {2 * blocks, 16, kv_heads, d}), out(DType::bf16, {2, 64, d}), table(DType::i32, {2, blocks}),
        used(DType::i32, {2}), cu(DType::i32, {3});
    PagedArgs a;
    for (auto* t : {&q, &kc, &vc, &out, &table, &used, &cu}) t->view.device = DeviceKind::rocm;
    a.q = q.view, a.k_cache = kc.view, a.v_cache = vc.view, a.out = out.view, a.block_table = table.view;
    a.seqused_k = used.view, a.cu_seqlens_q = cu.view, a.uniform_queries = true, a.max_seqlen_k = ctx;
    if (scale) a.output_scale = scale->view;
    run_gpu(a, nullptr);
  };
  fake.reset();
  decode(8, 256, nullptr);
  ASSERT_GE(fake.count(), 1);
  EXPECT_STREQ(fake.launch(0)->name, "ac_tiled_rows_paged_bf16_d256");
  EXPECT_EQ(fake.launch(0)->block[0], static_cast<unsigned>(ac_tiled_rows_shape_amd(256).threads()));
  EXPECT_EQ(fake.launch(0)->grid[1], 8u);  // KV heads

  fake.reset();
  HostTensor scale(DType::f32, {1});
  scale.view.device = DeviceKind::rocm;
  try {
    decode(2, 128, &scale);  // 32 query heads per KV head x 128 = 4096: twice a generic block
    FAIL() << "the generic kernel was given a group its block cannot hold";
  } catch (const gpu::GpuError& e) {
    EXPECT_NE(std::string(e.what()).find("(this call: 32 x 128)"), std::string::npos) << e.what();
  }
  EXPECT_EQ(fake.count(), 0);
}
