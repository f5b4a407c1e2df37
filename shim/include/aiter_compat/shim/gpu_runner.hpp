#pragma once
// Runs checked arguments (validate_* without reading contents: they live on the GPU) on the GPU
// fallback kernels, on the caller's stream: the arguments become the kernels' parameter struct
// and the launcher picks the kernel. Returns the kernel row that ran. Throws gpu::GpuError when
// the runtime fails.
#include "aiter_compat/gpu_runtime/kernel_table.hpp"
#include "aiter_compat/gpu_runtime/runtime.hpp"
#include "aiter_compat/shim/attention_args.hpp"

namespace aiter_compat {

gpu::KernelId run_gpu(const VarlenArgs& args, void* stream);
gpu::KernelId run_gpu(const PagedArgs& args, void* stream);
gpu::KernelId run_gpu(const MergeArgs& args, void* stream);

// The kernels' element type code for a dtype (AC_DTYPE_*; -1 for others).
int kernel_dtype(DType t);
// The GPU vendor of a device kind (cuda -> nvidia, rocm -> amd).
gpu::Vendor vendor_of(DeviceKind d);

}  // namespace aiter_compat
