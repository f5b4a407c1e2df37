#pragma once
// Helpers of the launcher tests that run against stand-in GPU runtimes.
#include <cstdlib>
#include <string>

#include "aiter_compat/gpu_runtime/code_objects.hpp"
#include "fake_runtimes/fake_launch.h"

namespace aiter_compat::testing_support {

#ifdef STAND_IN_RUNTIME
// The stand-in runtime on LD_LIBRARY_PATH is bound whatever GPU driver this machine has (without
// this, a machine with no /dev/kfd or /dev/nvidiactl loads no runtime at all), before any test runs.
inline const int kStandInRuntime = setenv("AITER_COMPAT_GPU_RUNTIME", STAND_IN_RUNTIME, 1);
#endif

inline bool built_for(const char* arch) {
  for (const auto& o : code_objects())
    if (std::string(o.arch) == arch) return true;
  return false;
}

}  // namespace aiter_compat::testing_support
