#include "aiter_compat/probe/gpu_probe.hpp"

#include "aiter_compat/gpu_runtime/runtime.hpp"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <climits>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace aiter_compat {

using gpu::Vendor;

namespace {

// Real paths of the loaded objects whose file name starts with `prefix` ("libamdhip64.so").
std::set<std::string> loaded_copies(const char* prefix) {
  struct Search {
    const char* prefix;
    std::set<std::string> paths;
  } search{prefix, {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        if (!info->dlpi_name || !*info->dlpi_name) return 0;
        const char* base = std::strrchr(info->dlpi_name, '/');
        base = base ? base + 1 : info->dlpi_name;
        if (std::strncmp(base, s->prefix, std::strlen(s->prefix)) != 0) return 0;
        char real[PATH_MAX];
        s->paths.insert(realpath(info->dlpi_name, real) ? real : info->dlpi_name);
        return 0;
      },
      &search);
  return search.paths;
}

// A second copy of a runtime in the process (two ROCm installs, say) is reported: kernels
// and memory of one are not valid in the other, and only the bound one is used.
void report_other_copies(DeviceReport& dev) {
  char real[PATH_MAX];
  const std::string bound = dev.runtime.empty() ? "" : realpath(dev.runtime.c_str(), real) ? real : dev.runtime;
  for (auto [prefix, what] : {std::pair{"libamdhip64.so", "HIP runtime"}, std::pair{"libcuda.so", "CUDA driver"}}) {
    const std::set<std::string> copies = loaded_copies(prefix);
    if (copies.size() < 2) continue;
    for (const auto& path : copies)
      if (path != bound)
        dev.attempts.push_back({path, "also loaded",
                                std::string("another ") + what + " in this process; not used" +
                                    (bound.empty() ? "" : " (bound: " + dev.runtime + ")")});
  }
}

}  // namespace

DeviceReport probe_device() {
  DeviceReport dev;
  // The runtime the process already has first (torch's), then each by name: binding loads the
  // library, and a runtime of the other vendor would be loaded for nothing.
  std::vector<Vendor> order = {Vendor::amd, Vendor::nvidia};
  bool opened_any = false;
  if (gpu::already_loaded(Vendor::nvidia) && !gpu::already_loaded(Vendor::amd)) std::swap(order[0], order[1]);
  for (Vendor v : order) {
    const bool nvidia = v == Vendor::nvidia;
    // A library the process has not loaded is loaded only for a GPU whose driver is here.
    if (!gpu::already_loaded(v)) {
      if (std::string why = gpu::load_refusal(v); !why.empty()) {
        dev.attempts.push_back({gpu::library_names(v).front(), "skipped", why});
        continue;
      }
    }
    const auto& attempts = nvidia ? gpu::cuda().attempts : gpu::hip().attempts;  // binds the table once
    const std::string& error = nvidia ? gpu::cuda().error : gpu::hip().error;
    const std::string& library = nvidia ? gpu::cuda().library : gpu::hip().library;
    for (const auto& a : attempts) dev.attempts.push_back({a.library, a.how, a.result});
    opened_any = opened_any || !library.empty();
    if (!error.empty() || library.empty()) continue;
    RuntimeAttempt& bound = dev.attempts.back();
    try {
      const int count = gpu::device_count(v);
      if (count <= 0) {
        bound.result = "no device (0 devices)";
        continue;
      }
      const gpu::DeviceInfo first = gpu::device_info(v, 0);
      dev.archs.push_back(first.arch);
      for (int d = 1; d < count; ++d) dev.archs.push_back(gpu::device_info(v, d).arch);
      dev.present = true;
      dev.vendor = gpu::to_string(v);
      dev.count = count;
      dev.name = first.name;
      dev.arch = first.arch;
      dev.multiprocessors = first.multiprocessors;
      dev.runtime = library;
      dev.how_found = nvidia ? gpu::cuda().how_found : gpu::hip().how_found;
      bound.result = std::to_string(count) + " device(s)";
      break;
    } catch (const gpu::GpuError& e) {
      bound.result = e.what();
      dev.archs.clear();
    }
  }
  report_other_copies(dev);
  if (!dev.present) {
    dev.vendor.clear();
    // A library that loaded and found no device is another answer than no library at all.
    const bool tried = std::any_of(dev.attempts.begin(), dev.attempts.end(), [](const RuntimeAttempt& a) { return a.how != "skipped"; });
    dev.reason = opened_any ? "no GPU runtime reported a device"
                 : tried    ? "no GPU runtime library found"
                            : "no GPU driver found (no runtime library loaded; see the attempts)";
  }
  return dev;
}

}  // namespace aiter_compat
