#pragma once
// Helpers of the launcher tests that run against stand-in GPU runtimes.
#include <string>

#include "aiter_compat/gpu_runtime/code_objects.hpp"
#include "fake_runtimes/fake_launch.h"

namespace aiter_compat::testing_support {

inline bool built_for(const char* arch) {
  for (const auto& o : code_objects())
    if (std::string(o.arch) == arch) return true;
  return false;
}

}  // namespace aiter_compat::testing_support
