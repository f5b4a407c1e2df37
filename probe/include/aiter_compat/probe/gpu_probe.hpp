#pragma once
// Which GPU is present, through the vendor runtime bound at run time: a runtime the process has
// already loaded (torch's libamdhip64 or libcuda) is reused; otherwise each known library name
// is tried. Every attempt is recorded so "none" comes with the reasons.
#include <cstddef>
#include <string>

#include "aiter_compat/probe/report.hpp"

namespace aiter_compat {

DeviceReport probe_device();

// The gfx arch ("gfx942") in a hipDeviceProp_t buffer filled by hipGetDeviceProperties(R0600).
std::string gfx_arch_from_properties(const unsigned char* props, size_t size);

}  // namespace aiter_compat
