#pragma once
// Runs checked arguments (validate_* without reading contents: they live on the GPU) on the GPU
// fallback kernels, on the caller's stream: the arguments become the kernels' parameter struct
// and the launcher picks the kernel. Returns the kernel row that ran. Throws gpu::GpuError when
// the runtime fails.
#include <optional>

#include "aiter_compat/gpu_runtime/kernel_table.hpp"
#include "aiter_compat/gpu_runtime/runtime.hpp"
#include "aiter_compat/shim/attention_args.hpp"

namespace aiter_compat {

// Calls leave the options unset: the families the call could run on are then checked first
// (selftest.hpp), once per process and device. The self-test itself names the row to run and
// the split count, and skips that check; with plan_only nothing is launched (the row that
// would run is returned; gpu::RowDoesNotFit when the named row cannot take the call).
struct GpuOptions {
  std::optional<gpu::KernelId> only_row;
  int force_splits = 0;
  bool plan_only = false;
  std::optional<bool> producer_twin;  // the warpgroup row's producer twin or default kernel (gpu::AttentionLaunch)
};
gpu::KernelId run_gpu(const VarlenArgs& args, void* stream, const GpuOptions& options = {});
gpu::KernelId run_gpu(const PagedArgs& args, void* stream, const GpuOptions& options = {});
gpu::KernelId run_gpu(const MergeArgs& args, void* stream, const GpuOptions& options = {});

// The kernels' element type code for a dtype (AC_DTYPE_*; -1 for others).
int kernel_dtype(DType t);
// The GPU vendor of a device kind (cuda -> nvidia, rocm -> amd).
gpu::Vendor vendor_of(DeviceKind d);

}  // namespace aiter_compat
