#pragma once
// CUlaunchAttribute and CUlaunchConfig as cuda.h (CUDA 12.0 on) lays them out, for
// cuLaunchKernelEx: the driver is bound by dlopen, without CUDA's headers.
// CudaLaunchConfig.MatchesCudaHeader (tests/cpp/launcher_test.cpp) compares them with cuda.h's where
// it is installed.

namespace aiter_compat::gpu {

struct CudaLaunchAttribute {
  int id = 0;  // CUlaunchAttributeID
  char pad[4] = {};
  union {
    char bytes[64];
    int value;  // the int-valued attributes' value
  } value = {};
};

struct CudaLaunchConfig {
  unsigned grid[3] = {}, block[3] = {}, shared_bytes = 0;
  void* stream = nullptr;
  CudaLaunchAttribute* attrs = nullptr;
  unsigned num_attrs = 0;
};

static_assert(sizeof(CudaLaunchAttribute) == 72 && sizeof(CudaLaunchConfig) == 56,
              "CUlaunchAttribute / CUlaunchConfig layout (64-bit)");

constexpr int kCudaLaunchAttributeProgrammaticStreamSerialization = 6;  // CU_LAUNCH_ATTRIBUTE_...

}  // namespace aiter_compat::gpu
