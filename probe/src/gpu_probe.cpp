#include "aiter_compat/probe/gpu_probe.hpp"

#include <dlfcn.h>
#include <link.h>

#include <climits>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace aiter_compat {
namespace {

// The few runtime entry points the probe needs, bound by name at run time so the library has no
// link-time dependency on either vendor's runtime. Both APIs return 0 on success.
using GetCountFn = int (*)(int*);
using CuInitFn = int (*)(unsigned);
using CuDeviceGetFn = int (*)(int*, int);
using CuAttrFn = int (*)(int*, int, int);
using CuNameFn = int (*)(char*, int, int);
using HipPropsFn = int (*)(void*, int);
using ErrNameFn = const char* (*)(int);
using CuErrNameFn = int (*)(int, const char**);

struct RuntimeLibrary {
  const char* vendor;
  std::vector<const char*> names;  // sonames, most specific first
};

const std::vector<RuntimeLibrary>& runtime_libraries() {
  static const std::vector<RuntimeLibrary> libs = {
      {"amd", hip_library_names()},
      {"nvidia", cuda_library_names()},
  };
  return libs;
}


bool query_amd(void* h, DeviceReport& dev, std::string& result) {
  auto count_fn = reinterpret_cast<GetCountFn>(dlsym(h, "hipGetDeviceCount"));
  auto err_name = reinterpret_cast<ErrNameFn>(dlsym(h, "hipGetErrorName"));
  if (!count_fn) {
    result = "no hipGetDeviceCount symbol";
    return false;
  }
  int count = 0;
  if (int rc = count_fn(&count); rc != 0 || count <= 0) {
    result = "no device (" + std::string(rc && err_name ? err_name(rc) : "0 devices") + ")";
    return false;
  }
  dev.vendor = "amd";
  dev.count = count;
  auto props = reinterpret_cast<HipPropsFn>(dlsym(h, "hipGetDevicePropertiesR0600"));
  if (!props) props = reinterpret_cast<HipPropsFn>(dlsym(h, "hipGetDeviceProperties"));
  alignas(16) static thread_local unsigned char buf[16384];
  std::memset(buf, 0, sizeof buf);
  if (props && props(buf, 0) == 0) {
    dev.name = std::string(reinterpret_cast<const char*>(buf), strnlen(reinterpret_cast<const char*>(buf), 256));
    dev.arch = gfx_arch_from_properties(buf, sizeof buf);
  }
  result = std::to_string(count) + " device(s)";
  return true;
}

bool query_nvidia(void* h, DeviceReport& dev, std::string& result) {
  auto init = reinterpret_cast<CuInitFn>(dlsym(h, "cuInit"));
  auto count_fn = reinterpret_cast<GetCountFn>(dlsym(h, "cuDeviceGetCount"));
  auto get = reinterpret_cast<CuDeviceGetFn>(dlsym(h, "cuDeviceGet"));
  auto attr = reinterpret_cast<CuAttrFn>(dlsym(h, "cuDeviceGetAttribute"));
  auto name = reinterpret_cast<CuNameFn>(dlsym(h, "cuDeviceGetName"));
  auto err_name = reinterpret_cast<CuErrNameFn>(dlsym(h, "cuGetErrorName"));
  if (!init || !count_fn || !get || !attr || !name) {
    result = "missing driver API symbols";
    return false;
  }
  auto describe = [&](int rc) {
    const char* text = nullptr;
    if (err_name) err_name(rc, &text);
    return std::string(text ? text : "CUDA error " + std::to_string(rc));
  };
  if (int rc = init(0); rc != 0) {
    result = "cuInit failed (" + describe(rc) + ")";
    return false;
  }
  int count = 0;
  if (int rc = count_fn(&count); rc != 0 || count <= 0) {
    result = "no device (" + (rc ? describe(rc) : std::string("0 devices")) + ")";
    return false;
  }
  int d = 0, major = 0, minor = 0;
  get(&d, 0);
  attr(&major, 75, d);  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
  attr(&minor, 76, d);  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
  char buf[256] = {};
  name(buf, sizeof buf - 1, d);
  dev.vendor = "nvidia";
  dev.count = count;
  dev.name = buf;
  dev.arch = "sm_" + std::to_string(major * 10 + minor);
  result = std::to_string(count) + " device(s)";
  return true;
}

bool query(const RuntimeLibrary& lib, void* h, DeviceReport& dev, std::string& result) {
  return std::strcmp(lib.vendor, "amd") == 0 ? query_amd(h, dev, result) : query_nvidia(h, dev, result);
}

}  // namespace

const std::vector<const char*>& hip_library_names() {
  static const std::vector<const char*> names = {"libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6",
                                                 "libamdhip64.so.5"};
  return names;
}

const std::vector<const char*>& cuda_library_names() {
  static const std::vector<const char*> names = {"libcuda.so.1", "libcuda.so"};
  return names;
}

std::string library_path(void* handle, const char* fallback) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name) return map->l_name;
  return fallback;
}

// gcnArchName sits at different offsets in the R0000 and R0600 layouts of hipDeviceProp_t; it is
// the only field that holds a "gfx" string, so it is found by content in a generous buffer.
std::string gfx_arch_from_properties(const unsigned char* buf, size_t size) {
  for (size_t i = 0; i + 4 < size; ++i) {
    if (std::memcmp(buf + i, "gfx", 3) != 0 || (i > 0 && buf[i - 1] != 0)) continue;
    size_t end = i + 3;
    while (end < size && (std::isalnum(buf[end]) != 0)) ++end;
    if (end > i + 3) return std::string(reinterpret_cast<const char*>(buf + i), end - i);
  }
  return {};
}

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
  // First a runtime the process already has (torch's, say), then each library by name.
  std::set<std::string> answered;  // vendors whose runtime already said "no device"
  bool opened_any = false;
  for (int pass = 0; pass < 2 && !dev.present; ++pass) {
    for (const auto& lib : runtime_libraries()) {
      if (answered.count(lib.vendor)) continue;
      for (const char* soname : lib.names) {
        void* h = dlopen(soname, RTLD_NOW | RTLD_LOCAL | (pass == 0 ? RTLD_NOLOAD : 0));
        if (!h) {
          if (pass == 1) {
            const char* err = dlerror();
            dev.attempts.push_back({soname, "dlopen", err ? err : "not found"});
          }
          continue;
        }
        opened_any = true;
        std::string result;
        bool ok = query(lib, h, dev, result);
        dev.attempts.push_back({library_path(h, soname), pass == 0 ? "already loaded" : "dlopen", result});
        if (ok) {
          dev.present = true;
          dev.runtime = library_path(h, soname);
          dev.how_found = pass == 0 ? "already loaded in this process" : "dlopen by name";
          break;  // the handle stays open: the runtime is in use from here on
        }
        dlclose(h);
        answered.insert(lib.vendor);
        break;  // one soname per vendor answered; the others are the same library
      }
      if (dev.present) break;
    }
  }
  report_other_copies(dev);
  if (!dev.present) {
    dev.vendor.clear();
    // A library that loaded and found no device is another answer than no library at all.
    dev.reason = opened_any ? "no GPU runtime reported a device" : "no GPU runtime library found";
  }
  return dev;
}

}  // namespace aiter_compat
