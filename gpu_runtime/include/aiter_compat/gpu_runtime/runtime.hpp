#pragma once
// The operations the launcher and the GPU probe need, the same for both vendors, over the bound
// driver tables (driver_api.hpp). Failures throw GpuError with the runtime's own message.
#include <optional>
#include <stdexcept>
#include <string>

#include "aiter_compat/gpu_runtime/driver_api.hpp"

namespace aiter_compat::gpu {

struct GpuError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws GpuError when the vendor's runtime is not usable (with why).
void require_runtime(Vendor v);
// "CUDA_ERROR_INVALID_VALUE: invalid argument" for a return code.
std::string error_text(Vendor v, int rc);

int device_count(Vendor v);  // 0 when the runtime answers none; throws when it fails

struct DeviceInfo {
  std::string arch;   // "sm_90", "gfx942"
  std::string name;   // "NVIDIA H200", "AMD Instinct MI300X"
  int multiprocessors = 0;  // SMs or CUs
};
DeviceInfo device_info(Vendor v, int device);

// The driver's (CUDA) or runtime's (HIP) version, e.g. "cuda driver 13000", for cache keys.
std::string runtime_version(Vendor v);

// Makes `device` current for the scope (the primary context on CUDA) and restores the caller's.
class DeviceScope {
 public:
  DeviceScope(Vendor v, int device);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  Vendor vendor_;
  bool changed_ = false;
  void* saved_ctx_ = nullptr;
  int saved_device_ = 0;
};

// On the current device:
void* load_module(Vendor v, const void* image);
void* module_function(Vendor v, void* module, const char* name);
// Lets `fn` use `bytes` of dynamic shared memory. CUDA needs the opt-in past 48 KB; HIP lets a
// kernel use the device's whole LDS without one (its attribute call takes host stubs only).
void allow_dynamic_shared(Vendor v, void* fn, int bytes);
void launch(Vendor v, void* fn, unsigned gx, unsigned gy, unsigned gz, unsigned threads, unsigned smem, void* stream,
            void** args);
// Launches `fn` as a programmatic dependent of the kernel before it on `stream` (CUDA's
// programmatic stream serialization): it may start once every block of that kernel has called
// ac_allow_dependents() (portability.hpp), and its ac_wait_for_primary() holds it until that
// kernel has finished and its writes are visible. NVIDIA only, on drivers from CUDA 12.3 (which
// also keep the dependency in captured graphs); returns false, having launched nothing, where
// the driver lacks it. The caller decides for which kernels and GPUs (sm_90 on) it applies.
bool launch_dependent(Vendor v, void* fn, unsigned gx, unsigned gy, unsigned gz, unsigned threads, unsigned smem,
                      void* stream, void** args);
// Whether `stream` is being captured into a graph; nullopt when the runtime cannot say.
std::optional<bool> stream_capturing(Vendor v, void* stream);

// Device memory the self-test owns (on the current device), and copies ordered on `stream`:
// the self-test stages its small fixed case with these and waits for the stream.
void* device_alloc(Vendor v, size_t bytes);
void device_free(Vendor v, void* ptr);
void copy_to_device(Vendor v, void* dst, const void* src, size_t bytes, void* stream);
void copy_to_host(Vendor v, void* dst, const void* src, size_t bytes, void* stream);
void stream_sync(Vendor v, void* stream);

// Stream-ordered scratch memory (split-KV partial results). Eager CUDA calls take it from a
// per-device pool that keeps its memory; captured calls from the default pool (graph nodes).
bool has_scratch(Vendor v);  // false: the runtime lacks stream-ordered allocation
void* scratch_alloc(Vendor v, int device, size_t bytes, void* stream);
void scratch_free(Vendor v, void* ptr, void* stream);

}  // namespace aiter_compat::gpu
