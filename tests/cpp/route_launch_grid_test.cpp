// Over the feature grid of the kernel table (ops, dtypes, head dims, query heads per KV head,
// block sizes, windows, sinks, aligned and misaligned tensors): every call the router sends to
// the GPU fallback is launched, never refused, and the kernel launched is one the route listed
// as taking it. Through the C API end to end (features, route, runner, launcher), against a
// stand-in GPU runtime (this process runs with one on LD_LIBRARY_PATH: GRID_DEVICE says which).
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstring>
#include <map>
#include <sstream>

#include "aiter_compat.h"
#include "gpu_test_support.hpp"
#include "host_tensor.hpp"

using namespace aiter_compat;
using namespace aiter_compat::testing_support;

namespace {

constexpr DLDeviceType kDevice = static_cast<DLDeviceType>(GRID_DEVICE);

// A DLTensor on the GPU over host storage (the stand-in runtime never reads it). `pad`: extra
// elements per head row, so head strides are no multiple of 8 (the tiled kernels pass it over).
struct GpuTensor {
  HostTensor host;
  DLTensor t{};
  std::vector<int64_t> shape, strides;
  GpuTensor(DType dtype, std::vector<int64_t> s, int pad = 0) : shape(s) {
    std::vector<int64_t> alloc = s;
    alloc.back() += pad;
    host = HostTensor(dtype, alloc);
    strides.assign(host.view.strides, host.view.strides + host.view.ndim);
    t.data = host.view.data;
    t.device = {kDevice, 0};
    t.ndim = static_cast<int>(s.size());
    t.dtype = to_dlpack(dtype);
    t.shape = shape.data();
    t.strides = strides.data();
  }
};

using FakeLaunch = fake_launch;
struct Fake {
  void* lib = dlopen(kDevice == kDLCUDA ? "libcuda.so.1" : "libamdhip64.so", RTLD_NOW);
  const char* prefix = kDevice == kDLCUDA ? "fake_cuda_" : "fake_hip_";
  template <typename F>
  F fn(const char* name) {
    return reinterpret_cast<F>(dlsym(lib, (std::string(prefix) + name).c_str()));
  }
  int launches() { return fn<int (*)()>("launch_count")(); }
  void reset() { fn<void (*)()>("reset")(); }
  const FakeLaunch* launch(int i) { return fn<const FakeLaunch* (*)(int)>("launch")(i); }
};

// The kernel row a launched function belongs to.
std::string row_of(const std::string& fn) {
  for (auto [prefix, row] : {std::pair{"ac_tiled_keys", "tiled_keys"}, {"ac_tiled_wgmma", "tiled_wgmma"},
                             {"ac_tiled_rows", "tiled_rows"}, {"ac_decode", "decode"}, {"ac_attention", "generic"},
                             {"ac_merge_states", "merge_states"}, {"ac_merge", "split_merge"}})
    if (fn.rfind(prefix, 0) == 0) return row;
  return "?";
}

// The route and the kernels that take the call, from explain's text.
struct Explained {
  bool gpu = false;
  std::vector<std::string> taking;
};
Explained parse(const std::string& text) {
  Explained e;
  e.gpu = text.rfind("route: fallback (gpu)", 0) == 0;
  std::istringstream in(text.substr(text.find("\nkernels:") == std::string::npos ? text.size() : text.find("\nkernels:")));
  for (std::string line; std::getline(in, line);) {
    const auto at = line.find(": takes the call");
    if (at != std::string::npos) e.taking.push_back(line.substr(2, at - 2));
  }
  return e;
}

struct Grid {
  int launched = 0, gpu_routes = 0, refused_routes = 0;
  std::map<std::string, int> rows;  // launches per kernel row
};

// Runs one call: explain, then (GPU routes) the call, which must succeed with an accepted row.
template <typename Explain, typename Run>
void check(Grid& g, Fake& fake, const std::string& what, Explain explain, Run run) {
  char buf[16384];
  ASSERT_EQ(explain(buf, sizeof buf), AITER_COMPAT_OK) << what << ": " << aiter_compat_last_error();
  Explained e = parse(buf);
  if (!e.gpu) {
    ++g.refused_routes;
    return;
  }
  ++g.gpu_routes;
  fake.reset();  // its log holds 256 launches
  const int before = fake.launches();
  ASSERT_EQ(run(), AITER_COMPAT_OK) << what << ": routed to the GPU, refused at launch: " << aiter_compat_last_error();
  ASSERT_GT(fake.launches(), before) << what;
  // The call's kernel: the first launched, past the one that zeroes a folded merge's counters.
  int first = before;
  while (first + 1 < fake.launches() && std::string(fake.launch(first)->name) == "ac_zero_counts") ++first;
  const std::string row = row_of(fake.launch(first)->name);
  EXPECT_NE(std::find(e.taking.begin(), e.taking.end(), row), e.taking.end())
      << what << ": launched " << fake.launch(first)->name << ", which the route did not list\n" << buf;
  ++g.launched;
  ++g.rows[row];
}

}  // namespace

TEST(RouteLaunchGrid, EveryGpuRouteLaunches) {
  const char* arch = kDevice == kDLCUDA ? "sm_90" : "gfx942";
  if (!built_for(arch)) GTEST_SKIP() << "no " << arch << " code object in this build (its compiler was not found)";
  Fake fake;
  ASSERT_NE(fake.lib, nullptr);
  Grid g;
  for (DType dtype : {DType::f32, DType::f16, DType::bf16})
    for (int d : {32, 64, 80, 128, 256})
      for (int group : {1, 8, 16, 32})
        for (int pad : {0, 1})
          for (int window : {-1, 7})
            for (bool sinks : {false, true}) {
              const int hk = 2, hq = hk * group;
              std::ostringstream w;
              w << to_string(dtype) << " d" << d << " group " << group << (pad ? " misaligned" : "")
                << (window >= 0 ? " window" : "") << (sinks ? " sinks" : "");
              GpuTensor sink_t(DType::bf16, {hq});
              const DLTensor* s = sinks ? &sink_t.t : nullptr;
              {  // varlen prefill
                GpuTensor q(dtype, {40, hq, d}, pad), k(dtype, {50, hk, d}), v(dtype, {50, hk, d}), out(dtype, {40, hq, d}),
                    cq(DType::i32, {3}), ck(DType::i32, {3});
                aiter_compat_varlen_args a{&q.t, &k.t, &v.t, &cq.t, &ck.t, s, &out.t, nullptr, 33, 40, 0.0, 1, window, 0, 0.0};
                check(g, fake, "varlen " + w.str(), [&](char* b, size_t n) { return aiter_compat_explain_varlen(&a, b, n); },
                      [&] { return aiter_compat_varlen_attention(&a, nullptr); });
              }
              {  // batch layout
                GpuTensor q(dtype, {2, 9, hq, d}, pad), k(dtype, {2, 11, hk, d}), v(dtype, {2, 11, hk, d}),
                    out(dtype, {2, 9, hq, d});
                aiter_compat_batch_args a{&q.t, &k.t, &v.t, s, &out.t, nullptr, 0.0, 1, window, 0};
                check(g, fake, "batch " + w.str(), [&](char* b, size_t n) { return aiter_compat_explain_batch(&a, b, n); },
                      [&] { return aiter_compat_batch_attention(&a, nullptr); });
              }
              for (int block : {1, 16, 64}) {  // paged extend and decode
                const int64_t blocks = 4096 / block;
                GpuTensor kc(dtype, {blocks, block, hk, d}), vc(dtype, {blocks, block, hk, d}),
                    table(DType::i32, {2, blocks / 2}), used(DType::i32, {2});
                GpuTensor q(dtype, {10, hq, d}, pad), out(dtype, {10, hq, d}), cq(DType::i32, {3});
                aiter_compat_paged_args p{&q.t, &kc.t, &vc.t, &cq.t, &used.t, &table.t, s, &out.t, nullptr, 9, 2048,
                                          0.0, 1, window, 0, 0.0};
                check(g, fake, "extend block " + std::to_string(block) + " " + w.str(),
                      [&](char* b, size_t n) { return aiter_compat_explain_paged(&p, b, n); },
                      [&] { return aiter_compat_paged_attention(&p, nullptr); });
                // Here the output is the misaligned one: the tiled kernels store 16 bytes at a time
                // and pass it over, the direct-load decode does not.
                GpuTensor dq(dtype, {2, hq, d}), dout(dtype, {2, hq, d}, pad);
                aiter_compat_decode_args dcall{&dq.t, &kc.t, &vc.t, &table.t, &used.t, nullptr, s, &dout.t, nullptr, 0.0,
                                               window, 0};
                check(g, fake, "decode block " + std::to_string(block) + " " + w.str(),
                      [&](char* b, size_t n) { return aiter_compat_explain_decode(&dcall, b, n); },
                      [&] { return aiter_compat_paged_decode(&dcall, nullptr); });
              }
              {  // merge
                GpuTensor o(dtype, {5, hq, d}), po(dtype, {5, hq, d}, pad), so(dtype, {5, hq, d}),
                    pl(DType::f32, {hq, 5}), sl(DType::f32, {hq, 5});
                aiter_compat_merge_args m{&o.t, &po.t, &pl.t, &so.t, &sl.t, nullptr, s};
                check(g, fake, "merge " + w.str(), [&](char* b, size_t n) { return aiter_compat_explain_merge(&m, b, n); },
                      [&] { return aiter_compat_merge_attn_states(&m, nullptr); });
              }
            }
  // The grid reaches every row that this arch builds, and some calls no GPU row takes.
  std::printf("[ grid     ] %d GPU routes launched, %d calls routed elsewhere or refused\n", g.launched, g.refused_routes);
  for (const auto& [row, n] : g.rows) std::printf("[ grid     ]   %s: %d launches\n", row.c_str(), n);
  EXPECT_GT(g.refused_routes, 0);
  for (const char* row : {"generic", "decode", "merge_states"}) EXPECT_GT(g.rows[row], 0) << row;
  if (kDevice == kDLCUDA)
    for (const char* row : {"tiled_keys", "tiled_rows", "tiled_wgmma"}) {
      const bool wgmma_off = std::getenv("AITER_COMPAT_NO_WGMMA") != nullptr;
      if (std::string(row) == "tiled_wgmma" && wgmma_off) continue;
      if (std::string(row) == "tiled_rows" && !wgmma_off) continue;  // wgmma takes the row tiles on sm_90
      EXPECT_GT(g.rows[row], 0) << row;
    }
}
