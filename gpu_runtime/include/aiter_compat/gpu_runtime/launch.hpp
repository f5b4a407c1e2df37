#pragma once
// Launches the fallback kernels on the caller's stream: loads the code object of the device's
// arch once per device, looks its kernels up once into tables, picks the first row of the
// kernel table (fastest first) that fits the call's tensors, sizes split-KV to one wave of the
// device, and runs the merge that enters the sink once. It refuses nothing routing accepted:
// the generic row fits every call; what can still fail is the runtime itself (a module the
// driver will not load, a launch error), reported with the runtime's message.
#include <cstdint>
#include <string>

#include "aiter_compat/gpu_runtime/kernel_table.hpp"
#include "aiter_compat/gpu_runtime/runtime.hpp"

namespace aiter_compat::gpu {

struct AttentionLaunch {
  ac_attention_params params{};  // everything but the split fields, which the launcher sets
  int dtype = AC_DTYPE_BF16;     // AC_DTYPE_* of q, k, v and out
  Vendor vendor = Vendor::nvidia;
  int device = 0;
  void* stream = nullptr;
  int64_t max_keys = 0;  // keys one query attends to at most (window or sequence)
  int64_t max_rows = 0;  // query rows (tokens x heads of a group) of one sequence at most
};

// Returns the row that ran (the split merge, when there was one, ran after it).
KernelId launch_attention(const AttentionLaunch& call);
void launch_merge_states(const ac_merge_params& params, int dtype, Vendor vendor, int device, void* stream);

// The arch of a device, read once per device; throws GpuError when the runtime is unusable.
std::string device_arch(Vendor v, int device);

}  // namespace aiter_compat::gpu
