#pragma once
// Launches the fallback kernels on the caller's stream: picks the code object of the tensors'
// GPU, loads it once per device, caches its functions, sizes split-KV to the GPU, and runs the
// merge that adds the sink once. Errors name what is missing: the runtime (paths tried), a code
// object for this arch (the archs built), or the runtime's message for a failed launch.
#include <stdexcept>
#include <string>

#include "aiter_compat/shim/attention_args.hpp"

namespace aiter_compat::gpu {

struct GpuError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The arch of one device ("sm_90", "gfx942"); throws GpuError when the runtime is unusable.
std::string device_arch(DeviceKind kind, int device);

// Arguments already checked (validate_* without reading contents: they live on the GPU).
void varlen_attention(const VarlenArgs& args, void* stream);
void paged_attention(const PagedArgs& args, void* stream);
void merge_states(const MergeArgs& args, void* stream);

}  // namespace aiter_compat::gpu
