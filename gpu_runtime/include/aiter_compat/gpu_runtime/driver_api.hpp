#pragma once
// The GPU vendors' runtime entry points, bound at run time from one table per vendor, in the
// style of PyTorch's c10 driver API: every symbol is listed once, REQUIRED or OPTIONAL. A missing
// required symbol makes the runtime unusable, with an error naming it and the library; a missing
// optional one is a null pointer, and every use of it is guarded. The library has no link-time
// dependency on either runtime. A runtime the process already loaded (torch's) is reused: each
// library name is tried with RTLD_NOLOAD before any is loaded. The GPU probe and the launcher
// both use these tables: what the probe found usable, the launcher can use.
#include <string>
#include <vector>

namespace aiter_compat::gpu {

enum class Vendor { nvidia, amd };
std::string to_string(Vendor v);

// X(field, return type, arguments, symbol names tried in order): the CUDA driver API.
#define AC_CUDA_REQUIRED(X)                                                                                  \
  X(cuInit, int, (unsigned), "cuInit")                                                                       \
  X(cuDriverGetVersion, int, (int*), "cuDriverGetVersion")                                                   \
  X(cuDeviceGetCount, int, (int*), "cuDeviceGetCount")                                                       \
  X(cuDeviceGet, int, (int*, int), "cuDeviceGet")                                                            \
  X(cuDeviceGetAttribute, int, (int*, int, int), "cuDeviceGetAttribute")                                     \
  X(cuDeviceGetName, int, (char*, int, int), "cuDeviceGetName")                                              \
  X(cuDevicePrimaryCtxRetain, int, (void**, int), "cuDevicePrimaryCtxRetain")                                \
  X(cuCtxGetCurrent, int, (void**), "cuCtxGetCurrent")                                                       \
  X(cuCtxSetCurrent, int, (void*), "cuCtxSetCurrent")                                                        \
  X(cuModuleLoadData, int, (void**, const void*), "cuModuleLoadData")                                        \
  X(cuModuleGetFunction, int, (void**, void*, const char*), "cuModuleGetFunction")                           \
  X(cuFuncSetAttribute, int, (void*, int, int), "cuFuncSetAttribute")                                        \
  X(cuLaunchKernel, int,                                                                                     \
    (void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**, void**),    \
    "cuLaunchKernel")                                                                                        \
  X(cuGetErrorString, int, (int, const char**), "cuGetErrorString")                                          \
  X(cuGetErrorName, int, (int, const char**), "cuGetErrorName")                                              \
  X(cuMemAlloc, int, (unsigned long long*, size_t), "cuMemAlloc_v2")                                         \
  X(cuMemFree, int, (unsigned long long), "cuMemFree_v2")                                                    \
  X(cuMemcpyHtoDAsync, int, (unsigned long long, const void*, size_t, void*), "cuMemcpyHtoDAsync_v2")        \
  X(cuMemcpyDtoHAsync, int, (void*, unsigned long long, size_t, void*), "cuMemcpyDtoHAsync_v2")              \
  X(cuStreamSynchronize, int, (void*), "cuStreamSynchronize")
// Optional: stream-ordered scratch for split-KV (CUDA 11.2; without it calls are not split),
// graph-capture detection (CUDA 10.0; without it every call takes the capture-safe path) and
// launches with attributes (CUDA 12.0: the split merge as a programmatic dependent, runtime.hpp).
#define AC_CUDA_OPTIONAL(X)                                                                                  \
  X(cuMemAllocAsync, int, (unsigned long long*, size_t, void*), "cuMemAllocAsync")                           \
  X(cuMemFreeAsync, int, (unsigned long long, void*), "cuMemFreeAsync")                                      \
  X(cuMemPoolCreate, int, (void**, const void*), "cuMemPoolCreate")                                          \
  X(cuMemPoolSetAttribute, int, (void*, int, void*), "cuMemPoolSetAttribute")                                \
  X(cuMemAllocFromPoolAsync, int, (unsigned long long*, size_t, void*, void*), "cuMemAllocFromPoolAsync")    \
  X(cuStreamIsCapturing, int, (void*, int*), "cuStreamIsCapturing")                                         \
  X(cuLaunchKernelEx, int, (const void*, void*, void**, void**), "cuLaunchKernelEx")

// Device memory, copies and stream synchronisation serve the self-test of the fallback kernels
// (selftest.hpp in the dispatch core): every CUDA and ROCm release has them.
// The HIP runtime's module API. The properties call has its ROCm 6 name first (ROCm 5 has only
// the plain one; the arch is found in either layout by content).
#define AC_HIP_REQUIRED(X)                                                                                   \
  X(hipGetDeviceCount, int, (int*), "hipGetDeviceCount")                                                     \
  X(hipGetDevice, int, (int*), "hipGetDevice")                                                               \
  X(hipSetDevice, int, (int), "hipSetDevice")                                                                \
  X(hipDeviceGetAttribute, int, (int*, int, int), "hipDeviceGetAttribute")                                   \
  X(hipGetDeviceProperties, int, (void*, int), "hipGetDevicePropertiesR0600", "hipGetDeviceProperties")      \
  X(hipRuntimeGetVersion, int, (int*), "hipRuntimeGetVersion")                                               \
  X(hipModuleLoadData, int, (void**, const void*), "hipModuleLoadData")                                      \
  X(hipModuleGetFunction, int, (void**, void*, const char*), "hipModuleGetFunction")                         \
  X(hipModuleLaunchKernel, int,                                                                              \
    (void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**, void**),    \
    "hipModuleLaunchKernel")                                                                                 \
  X(hipGetErrorString, const char*, (int), "hipGetErrorString")                                              \
  X(hipGetErrorName, const char*, (int), "hipGetErrorName")                                                  \
  X(hipMalloc, int, (void**, size_t), "hipMalloc")                                                           \
  X(hipFree, int, (void*), "hipFree")                                                                        \
  X(hipMemcpyAsync, int, (void*, const void*, size_t, int, void*), "hipMemcpyAsync")                         \
  X(hipStreamSynchronize, int, (void*), "hipStreamSynchronize")
// Optional: stream-ordered scratch (ROCm 5.3) and graph-capture detection, as for CUDA.
#define AC_HIP_OPTIONAL(X)                                                                                   \
  X(hipMallocAsync, int, (void**, size_t, void*), "hipMallocAsync")                                          \
  X(hipFreeAsync, int, (void*, void*), "hipFreeAsync")                                                       \
  X(hipStreamIsCapturing, int, (void*, int*), "hipStreamIsCapturing")

// One attempt at a runtime library: what was tried, how, and what it answered.
struct LibraryAttempt {
  std::string library, how, result;  // how: "already loaded", "dlopen"
};

#define AC_DECLARE(field, ret, args, ...) ret(*field) args = nullptr;
struct CudaApi {
  AC_CUDA_REQUIRED(AC_DECLARE)
  AC_CUDA_OPTIONAL(AC_DECLARE)
  std::string library;                  // path of the bound library
  std::string how_found;                // "already loaded in this process" or "dlopen by name"
  std::string error;                    // why it is unusable ("" when usable)
  std::vector<std::string> missing_optional;
  std::vector<LibraryAttempt> attempts;  // every library tried, in order
  bool usable() const { return error.empty(); }
};
struct HipApi {
  AC_HIP_REQUIRED(AC_DECLARE)
  AC_HIP_OPTIONAL(AC_DECLARE)
  std::string library, how_found, error;
  std::vector<std::string> missing_optional;
  std::vector<LibraryAttempt> attempts;
  bool usable() const { return error.empty(); }
};
#undef AC_DECLARE

// The process's runtime of each vendor, bound on first use (thread-safe) and kept: a library
// already loaded first, then each name by dlopen. cuInit runs once the table is complete.
const CudaApi& cuda();
const HipApi& hip();

// Whether the process already has this vendor's runtime loaded (dlopen with RTLD_NOLOAD only:
// loads nothing), so a probe can prefer the runtime of the GPU actually in use.
bool already_loaded(Vendor v);

// Why this vendor's runtime library is not to be loaded into a process that has none loaded yet,
// or "" when it may be: its kernel driver's device node must be there (AMD: /dev/kfd, NVIDIA:
// /dev/nvidiactl; WSL's /dev/dxg serves either), unless AITER_COMPAT_GPU_RUNTIME says otherwise
// (auto, the default; amd or nvidia: that vendor's library whatever the nodes say, the other's
// not at all; none: neither). A runtime of a GPU that is not there is never loaded: a HIP
// runtime loaded on an NVIDIA machine brings its own LLVM into the process for nothing.
std::string load_refusal(Vendor v);

// The sonames tried, most specific first.
const std::vector<const char*>& library_names(Vendor v);
// The path a dlopen handle was loaded from (`fallback` when the loader cannot say).
std::string library_path(void* handle, const char* fallback);
// The gfx arch ("gfx942") in a hipDeviceProp_t buffer filled by hipGetDeviceProperties: its
// offset differs between ROCm 5 and 6, and it is the only field holding a "gfx" string.
std::string gfx_arch_from_properties(const unsigned char* props, size_t size);

}  // namespace aiter_compat::gpu
