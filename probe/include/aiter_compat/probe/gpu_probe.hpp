#pragma once
// Which GPU is present, through the vendor runtime bound at run time (the driver tables in
// gpu_runtime/, which the launcher uses too): a runtime the process has already loaded (torch's
// libamdhip64 or libcuda) is preferred; otherwise each known library name is tried. Every
// attempt is recorded so "none" comes with the reasons.
#include "aiter_compat/probe/report.hpp"

namespace aiter_compat {

DeviceReport probe_device();

}  // namespace aiter_compat
