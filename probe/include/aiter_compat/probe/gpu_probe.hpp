#pragma once
// Which GPU is present, through the vendor runtime bound at run time: a runtime the process has
// already loaded (torch's libamdhip64 or libcuda) is reused; otherwise each known library name
// is tried. Every attempt is recorded so "none" comes with the reasons.
#include <cstddef>
#include <string>
#include <vector>

#include "aiter_compat/probe/report.hpp"

namespace aiter_compat {

DeviceReport probe_device();

// The vendor runtimes' sonames, most specific first: the one list both the probe and the
// launcher (fallback_kernels/gpu/gpu_runtime.cpp) open.
const std::vector<const char*>& hip_library_names();
const std::vector<const char*>& cuda_library_names();
// The path a dlopen handle was loaded from (`fallback` when the loader cannot say).
std::string library_path(void* handle, const char* fallback);

// The gfx arch ("gfx942") in a hipDeviceProp_t buffer filled by hipGetDeviceProperties(R0600).
std::string gfx_arch_from_properties(const unsigned char* props, size_t size);

}  // namespace aiter_compat
