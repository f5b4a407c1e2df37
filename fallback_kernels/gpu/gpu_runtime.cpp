#include "gpu_runtime.hpp"

#include <dlfcn.h>

#include "aiter_compat/probe/gpu_probe.hpp"

namespace aiter_compat::gpu {
namespace {

// Opens the first library that answers: one already in the process, then by name.
void* open_runtime(const std::vector<const char*>& names, std::string* path, std::string* tried) {
  for (int flags : {RTLD_NOW | RTLD_NOLOAD, RTLD_NOW})
    for (const char* name : names) {
      void* h = dlopen(name, flags | RTLD_LOCAL);
      if (!h) {
        if (!(flags & RTLD_NOLOAD)) {
          const char* err = dlerror();
          *tried += std::string(tried->empty() ? "" : "; ") + (err ? err : name);
        }
        continue;
      }
      *path = library_path(h, name);
      return h;
    }
  return nullptr;
}

template <typename Api>
void bind(Api& api, void* handle, const char* name, void** slot) {
  *slot = dlsym(handle, name);
  if (!*slot && api.error.empty()) api.error = "symbol " + std::string(name) + " missing from " + api.library;
}

}  // namespace

const CudaApi& cuda() {
  static const CudaApi api = [] {
    CudaApi a;
    std::string tried;
    void* h = open_runtime(cuda_library_names(), &a.library, &tried);
    if (!h) {
      a.error = "no CUDA driver library: " + tried;
      return a;
    }
#define AC_BIND(name, ret, args) bind(a, h, #name, reinterpret_cast<void**>(&a.name));
    AC_CUDA_SYMBOLS(AC_BIND)
#undef AC_BIND
    if (a.error.empty() && a.cuInit(0) != 0) a.error = "cuInit failed in " + a.library;
    return a;
  }();
  return api;
}

const HipApi& hip() {
  static const HipApi api = [] {
    HipApi a;
    std::string tried;
    void* h = open_runtime(hip_library_names(), &a.library, &tried);
    if (!h) {
      a.error = "no HIP runtime library: " + tried;
      return a;
    }
    // ROCm 5 has only the older name of the properties call (the arch is found by content).
    a.hipGetDevicePropertiesR0600 = reinterpret_cast<decltype(a.hipGetDevicePropertiesR0600)>(
        dlsym(h, "hipGetDevicePropertiesR0600") ? dlsym(h, "hipGetDevicePropertiesR0600")
                                                : dlsym(h, "hipGetDeviceProperties"));
#define AC_BIND(name, ret, args) if (!a.name) bind(a, h, #name, reinterpret_cast<void**>(&a.name));
    AC_HIP_SYMBOLS(AC_BIND)
#undef AC_BIND
    return a;
  }();
  return api;
}

}  // namespace aiter_compat::gpu
