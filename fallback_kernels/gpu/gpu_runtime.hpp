#pragma once
// The GPU runtimes the launcher uses, bound at run time from one table of symbols: the library
// has no link-time dependency on either. A runtime the process already loaded (torch's) is
// reused (dlopen with RTLD_NOLOAD first). Every symbol is required; a missing one is an error
// naming it and the library.
#include <string>
#include <vector>

namespace aiter_compat::gpu {

// X(name, return, arguments): the CUDA driver API entry points.
#define AC_CUDA_SYMBOLS(X)                                                                       \
  X(cuInit, int, (unsigned))                                                                     \
  X(cuDeviceGet, int, (int*, int))                                                               \
  X(cuDeviceGetAttribute, int, (int*, int, int))                                                 \
  X(cuDevicePrimaryCtxRetain, int, (void**, int))                                                \
  X(cuCtxGetCurrent, int, (void**))                                                              \
  X(cuCtxSetCurrent, int, (void*))                                                               \
  X(cuModuleLoadData, int, (void**, const void*))                                                \
  X(cuModuleGetFunction, int, (void**, void*, const char*))                                      \
  X(cuFuncSetAttribute, int, (void*, int, int))                                                  \
  X(cuLaunchKernel, int, (void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, \
                          void*, void**, void**))                                                \
  X(cuMemAllocAsync, int, (unsigned long long*, size_t, void*))                                  \
  X(cuMemFreeAsync, int, (unsigned long long, void*))                                            \
  X(cuMemPoolCreate, int, (void**, const void*))                                                 \
  X(cuMemPoolSetAttribute, int, (void*, int, void*))                                             \
  X(cuMemAllocFromPoolAsync, int, (unsigned long long*, size_t, void*, void*))                   \
  X(cuStreamIsCapturing, int, (void*, int*))                                                     \
  X(cuGetErrorString, int, (int, const char**))

// The HIP runtime's module API.
#define AC_HIP_SYMBOLS(X)                                                                        \
  X(hipGetDevice, int, (int*))                                                                   \
  X(hipSetDevice, int, (int))                                                                    \
  X(hipGetDevicePropertiesR0600, int, (void*, int))                                              \
  X(hipModuleLoadData, int, (void**, const void*))                                               \
  X(hipModuleGetFunction, int, (void**, void*, const char*))                                     \
  X(hipModuleLaunchKernel, int, (void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, \
                                 unsigned, void*, void**, void**))                               \
  X(hipMallocAsync, int, (void**, size_t, void*))                                                \
  X(hipFreeAsync, int, (void*, void*))                                                           \
  X(hipGetErrorString, const char*, (int))

#define AC_DECLARE(name, ret, args) ret(*name) args = nullptr;
struct CudaApi {
  AC_CUDA_SYMBOLS(AC_DECLARE)
  std::string library;  // path of the bound libcuda
  std::string error;    // why it could not be bound ("" when usable)
};
struct HipApi {
  AC_HIP_SYMBOLS(AC_DECLARE)
  std::string library;
  std::string error;
};
#undef AC_DECLARE

// Bound once per process (thread-safe); check .error before use.
const CudaApi& cuda();
const HipApi& hip();

}  // namespace aiter_compat::gpu
