#include "aiter_compat/gpu_runtime/driver_api.hpp"

#include <dlfcn.h>
#include <link.h>

#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <cstring>

namespace aiter_compat::gpu {
namespace {

// The first of `names` the library exports, or null.
void* find_symbol(void* handle, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (void* p = dlsym(handle, n)) return p;
  return nullptr;
}

// Opens the vendor's library: one the process already has, else the first name that loads.
// Every attempt is recorded; null with `attempts` saying why when none opens.
void* open_library(Vendor v, std::string* path, std::string* how, std::vector<LibraryAttempt>* attempts) {
  for (int flags : {RTLD_NOW | RTLD_NOLOAD, RTLD_NOW}) {
    const bool loaded = flags & RTLD_NOLOAD;
    for (const char* name : library_names(v)) {
      void* h = dlopen(name, flags | RTLD_LOCAL);
      if (!h) {
        if (!loaded) {
          const char* err = dlerror();
          attempts->push_back({name, "dlopen", err ? err : "not found"});
        }
        continue;
      }
      *path = library_path(h, name);
      *how = loaded ? "already loaded in this process" : "dlopen by name";
      attempts->push_back({*path, loaded ? "already loaded" : "dlopen", "opened"});
      return h;
    }
  }
  return nullptr;
}

template <typename Api>
void* open_into(Api& a, Vendor v) {
  void* h = open_library(v, &a.library, &a.how_found, &a.attempts);
  if (!h) a.error = std::string("no ") + (v == Vendor::nvidia ? "CUDA driver" : "HIP runtime") + " library could be opened";
  return h;
}

}  // namespace

std::string to_string(Vendor v) { return v == Vendor::nvidia ? "nvidia" : "amd"; }

std::string load_refusal(Vendor v) {
  const char* set = std::getenv("AITER_COMPAT_GPU_RUNTIME");
  const std::string choice = set && *set ? set : "auto";
  const std::string self = to_string(v), other = to_string(v == Vendor::amd ? Vendor::nvidia : Vendor::amd);
  if (choice == self) return "";
  if (choice == other || choice == "none") return "AITER_COMPAT_GPU_RUNTIME=" + choice + " leaves it unloaded";
  std::string note;
  if (choice != "auto") note = " (AITER_COMPAT_GPU_RUNTIME='" + choice + "' is not auto, amd, nvidia or none: read as auto)";
  const char* node = v == Vendor::amd ? "/dev/kfd" : "/dev/nvidiactl";
  if (access(node, F_OK) == 0 || access("/dev/dxg", F_OK) == 0) return "";
  return std::string("not loaded: ") + node + " is absent (no " + (v == Vendor::amd ? "AMD" : "NVIDIA") +
         " GPU driver here); AITER_COMPAT_GPU_RUNTIME=" + self + " loads it anyway" + note;
}

const std::vector<const char*>& library_names(Vendor v) {
  static const std::vector<const char*> hip_names = {"libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6",
                                                     "libamdhip64.so.5"};
  static const std::vector<const char*> cuda_names = {"libcuda.so.1", "libcuda.so"};
  return v == Vendor::nvidia ? cuda_names : hip_names;
}

bool already_loaded(Vendor v) {
  for (const char* name : library_names(v))
    if (void* h = dlopen(name, RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL)) {
      dlclose(h);  // drops only the reference taken here
      return true;
    }
  return false;
}

std::string library_path(void* handle, const char* fallback) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name) return map->l_name;
  return fallback;
}

std::string gfx_arch_from_properties(const unsigned char* buf, size_t size) {
  for (size_t i = 0; i + 4 < size; ++i) {
    if (std::memcmp(buf + i, "gfx", 3) != 0 || (i > 0 && buf[i - 1] != 0)) continue;
    size_t end = i + 3;
    while (end < size && (std::isalnum(buf[end]) != 0)) ++end;
    if (end > i + 3) return std::string(reinterpret_cast<const char*>(buf + i), end - i);
  }
  return {};
}

// Each table is bound once per process; the handle stays open (the runtime is in use from then on).
#define AC_BIND_REQUIRED(field, ret, args, ...)                                              \
  a.field = reinterpret_cast<decltype(a.field)>(find_symbol(h, {__VA_ARGS__}));             \
  if (!a.field && a.error.empty()) a.error = std::string("symbol ") + #field + " missing from " + a.library;
#define AC_BIND_OPTIONAL(field, ret, args, ...)                                              \
  a.field = reinterpret_cast<decltype(a.field)>(find_symbol(h, {__VA_ARGS__}));             \
  if (!a.field) a.missing_optional.push_back(#field);

const CudaApi& cuda() {
  static const CudaApi api = [] {
    CudaApi a;
    void* h = open_into(a, Vendor::nvidia);
    if (!h) return a;
    AC_CUDA_REQUIRED(AC_BIND_REQUIRED)
    AC_CUDA_OPTIONAL(AC_BIND_OPTIONAL)
    if (a.error.empty())
      if (int rc = a.cuInit(0); rc != 0) {
        const char* name = nullptr;
        a.cuGetErrorName(rc, &name);
        a.error = "cuInit failed (" + std::string(name ? name : "CUDA error " + std::to_string(rc)) + ")";
      }
    if (!a.error.empty()) a.attempts.back().result = a.error;
    return a;
  }();
  return api;
}

const HipApi& hip() {
  static const HipApi api = [] {
    HipApi a;
    void* h = open_into(a, Vendor::amd);
    if (!h) return a;
    AC_HIP_REQUIRED(AC_BIND_REQUIRED)
    AC_HIP_OPTIONAL(AC_BIND_OPTIONAL)
    if (!a.error.empty()) a.attempts.back().result = a.error;
    return a;
  }();
  return api;
}

#undef AC_BIND_REQUIRED
#undef AC_BIND_OPTIONAL

}  // namespace aiter_compat::gpu
