#include "aiter_compat/gpu_runtime/runtime.hpp"

#include "aiter_compat/gpu_runtime/cuda_launch_config.hpp"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>

namespace aiter_compat::gpu {
namespace {

constexpr int kCuAttrMultiprocessors = 16, kCuAttrMajor = 75, kCuAttrMinor = 76;
constexpr int kCuFuncMaxDynamicShared = 8;       // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
constexpr int kHipAttrMultiprocessors = 63;      // hipDeviceAttributeMultiprocessorCount (ROCm 5 and 6)

void check(Vendor v, int rc, const char* what) {
  if (rc != 0) throw GpuError(std::string(what) + " failed: " + error_text(v, rc));
}

// CUmemPoolProps (88 bytes in every CUDA 11.2+ header): pinned device memory, no export handles.
struct CudaPoolProps {
  int alloc_type = 1;      // CU_MEM_ALLOCATION_TYPE_PINNED
  int handle_types = 0;    // CU_MEM_HANDLE_TYPE_NONE
  int location_type = 1;   // CU_MEM_LOCATION_TYPE_DEVICE
  int location_id = 0;
  void* win32_security_attributes = nullptr;
  unsigned char reserved[64] = {};
};
static_assert(sizeof(CudaPoolProps) == 88, "CUmemPoolProps layout");

// A memory pool of our own for the split-KV scratch of eager calls. The device's default pool
// hands its memory back to the driver at every synchronisation (release threshold 0), so each
// call after one paid ~100 us to map it again; this pool keeps what it has (at most the largest
// scratch in flight at once, a few MB). Null where the driver cannot make one: calls then use
// the default pool, as under graph capture, where allocations become the graph's own nodes.
void* scratch_pool(int device) {
  static std::mutex mutex;
  static std::map<int, void*> pools;  // device -> pool (null: none could be made)
  std::lock_guard lock(mutex);
  auto it = pools.find(device);
  if (it != pools.end()) return it->second;
  const CudaApi& c = cuda();
  void* pool = nullptr;
  int dev = 0;
  if (c.cuMemPoolCreate && c.cuMemPoolSetAttribute && c.cuMemAllocFromPoolAsync && c.cuDeviceGet(&dev, device) == 0) {
    CudaPoolProps props;
    props.location_id = dev;
    if (c.cuMemPoolCreate(&pool, &props) == 0) {
      unsigned long long keep = ~0ull;
      c.cuMemPoolSetAttribute(pool, 4 /* CU_MEMPOOL_ATTR_RELEASE_THRESHOLD */, &keep);
    } else {
      pool = nullptr;
    }
  }
  return pools.emplace(device, pool).first->second;
}

}  // namespace

void require_runtime(Vendor v) {
  const std::string& error = v == Vendor::nvidia ? cuda().error : hip().error;
  if (!error.empty()) throw GpuError(error);
}

std::string error_text(Vendor v, int rc) {
  const char *name = nullptr, *text = nullptr;
  if (v == Vendor::nvidia) {
    if (cuda().cuGetErrorName) cuda().cuGetErrorName(rc, &name);
    if (cuda().cuGetErrorString) cuda().cuGetErrorString(rc, &text);
  } else {
    if (hip().hipGetErrorName) name = hip().hipGetErrorName(rc);
    if (hip().hipGetErrorString) text = hip().hipGetErrorString(rc);
  }
  std::string s = name ? name : (v == Vendor::nvidia ? "CUDA error " : "HIP error ") + std::to_string(rc);
  return text ? s + ": " + text : s;
}

int device_count(Vendor v) {
  require_runtime(v);
  int n = 0;
  int rc = v == Vendor::nvidia ? cuda().cuDeviceGetCount(&n) : hip().hipGetDeviceCount(&n);
  // "no device" is an answer, not a failure (CUDA_ERROR_NO_DEVICE 100, hipErrorNoDevice 100).
  if (rc == 100) return 0;
  check(v, rc, v == Vendor::nvidia ? "cuDeviceGetCount" : "hipGetDeviceCount");
  return n;
}

DeviceInfo device_info(Vendor v, int device) {
  require_runtime(v);
  DeviceInfo info;
  if (v == Vendor::nvidia) {
    const CudaApi& c = cuda();
    int dev = 0, major = 0, minor = 0;
    check(v, c.cuDeviceGet(&dev, device), "cuDeviceGet");
    check(v, c.cuDeviceGetAttribute(&major, kCuAttrMajor, dev), "cuDeviceGetAttribute");
    check(v, c.cuDeviceGetAttribute(&minor, kCuAttrMinor, dev), "cuDeviceGetAttribute");
    check(v, c.cuDeviceGetAttribute(&info.multiprocessors, kCuAttrMultiprocessors, dev), "cuDeviceGetAttribute");
    char name[256] = {};
    check(v, c.cuDeviceGetName(name, sizeof name - 1, dev), "cuDeviceGetName");
    info.arch = "sm_" + std::to_string(major * 10 + minor);
    info.name = name;
    return info;
  }
  const HipApi& h = hip();
  alignas(16) static thread_local unsigned char props[16384];  // either layout, with room to spare
  std::fill(std::begin(props), std::end(props), 0);
  check(v, h.hipGetDeviceProperties(props, device), "hipGetDeviceProperties");
  check(v, h.hipDeviceGetAttribute(&info.multiprocessors, kHipAttrMultiprocessors, device), "hipDeviceGetAttribute");
  info.arch = gfx_arch_from_properties(props, sizeof props);
  info.name = std::string(reinterpret_cast<const char*>(props), strnlen(reinterpret_cast<const char*>(props), 256));
  if (info.arch.empty()) throw GpuError("hipGetDeviceProperties gave no gfx arch for device " + std::to_string(device));
  return info;
}

std::string runtime_version(Vendor v) {
  require_runtime(v);
  int version = 0;
  if (v == Vendor::nvidia) check(v, cuda().cuDriverGetVersion(&version), "cuDriverGetVersion");
  else check(v, hip().hipRuntimeGetVersion(&version), "hipRuntimeGetVersion");
  return (v == Vendor::nvidia ? "cuda driver " : "hip runtime ") + std::to_string(version);
}

DeviceScope::DeviceScope(Vendor v, int device) : vendor_(v) {
  require_runtime(v);
  if (v == Vendor::nvidia) {
    const CudaApi& c = cuda();
    check(v, c.cuCtxGetCurrent(&saved_ctx_), "cuCtxGetCurrent");
    static std::mutex mutex;
    static std::map<int, void*> retained;  // primary contexts stay retained for the process
    void* primary = nullptr;
    {
      std::lock_guard lock(mutex);
      auto it = retained.find(device);
      if (it == retained.end()) {
        int dev = 0;
        check(v, c.cuDeviceGet(&dev, device), "cuDeviceGet");
        check(v, c.cuDevicePrimaryCtxRetain(&primary, dev), "cuDevicePrimaryCtxRetain");
        it = retained.emplace(device, primary).first;
      }
      primary = it->second;
    }
    changed_ = primary != saved_ctx_;
    if (changed_) check(v, c.cuCtxSetCurrent(primary), "cuCtxSetCurrent");
  } else {
    check(v, hip().hipGetDevice(&saved_device_), "hipGetDevice");
    changed_ = saved_device_ != device;
    if (changed_) check(v, hip().hipSetDevice(device), "hipSetDevice");
  }
}

DeviceScope::~DeviceScope() {
  if (!changed_) return;
  if (vendor_ == Vendor::nvidia) cuda().cuCtxSetCurrent(saved_ctx_);
  else hip().hipSetDevice(saved_device_);
}

void* load_module(Vendor v, const void* image) {
  void* module = nullptr;
  if (v == Vendor::nvidia) check(v, cuda().cuModuleLoadData(&module, image), "cuModuleLoadData");
  else check(v, hip().hipModuleLoadData(&module, image), "hipModuleLoadData");
  return module;
}

void* module_function(Vendor v, void* module, const char* name) {
  void* fn = nullptr;
  int rc = v == Vendor::nvidia ? cuda().cuModuleGetFunction(&fn, module, name)
                               : hip().hipModuleGetFunction(&fn, module, name);
  check(v, rc, name);
  return fn;
}

void allow_dynamic_shared(Vendor v, void* fn, int bytes) {
  if (v == Vendor::nvidia) check(v, cuda().cuFuncSetAttribute(fn, kCuFuncMaxDynamicShared, bytes), "cuFuncSetAttribute");
}

void launch(Vendor v, void* fn, unsigned gx, unsigned gy, unsigned gz, unsigned threads, unsigned smem, void* stream,
            void** args) {
  int rc = v == Vendor::nvidia ? cuda().cuLaunchKernel(fn, gx, gy, gz, threads, 1, 1, smem, stream, args, nullptr)
                               : hip().hipModuleLaunchKernel(fn, gx, gy, gz, threads, 1, 1, smem, stream, args, nullptr);
  check(v, rc, "kernel launch");
}

constexpr int kCudaDriverWithGraphPdl = 12030;  // programmatic edges in captured graphs

bool launch_dependent(Vendor v, void* fn, unsigned gx, unsigned gy, unsigned gz, unsigned threads, unsigned smem,
                      void* stream, void** args) {
  if (v != Vendor::nvidia || !cuda().cuLaunchKernelEx) return false;
  int version = 0;
  if (cuda().cuDriverGetVersion(&version) != 0 || version < kCudaDriverWithGraphPdl) return false;
  CudaLaunchAttribute attr;
  attr.id = kCudaLaunchAttributeProgrammaticStreamSerialization;
  attr.value.value = 1;
  CudaLaunchConfig config;
  config.grid[0] = gx, config.grid[1] = gy, config.grid[2] = gz;
  config.block[0] = threads, config.block[1] = 1, config.block[2] = 1;
  config.shared_bytes = smem, config.stream = stream, config.attrs = &attr, config.num_attrs = 1;
  check(v, cuda().cuLaunchKernelEx(&config, fn, args, nullptr), "kernel launch (programmatic dependent)");
  return true;
}

std::optional<bool> stream_capturing(Vendor v, void* stream) {
  int status = 0;  // CU_STREAM_CAPTURE_STATUS_NONE / hipStreamCaptureStatusNone
  if (v == Vendor::nvidia) {
    if (!cuda().cuStreamIsCapturing || cuda().cuStreamIsCapturing(stream, &status) != 0) return std::nullopt;
  } else {
    if (!hip().hipStreamIsCapturing || hip().hipStreamIsCapturing(stream, &status) != 0) return std::nullopt;
  }
  return status != 0;
}

void* device_alloc(Vendor v, size_t bytes) {
  if (v == Vendor::amd) {
    void* p = nullptr;
    check(v, hip().hipMalloc(&p, bytes), "hipMalloc");
    return p;
  }
  unsigned long long ptr = 0;
  check(v, cuda().cuMemAlloc(&ptr, bytes), "cuMemAlloc");
  return reinterpret_cast<void*>(ptr);
}

void device_free(Vendor v, void* ptr) {
  if (!ptr) return;
  if (v == Vendor::amd) check(v, hip().hipFree(ptr), "hipFree");
  else check(v, cuda().cuMemFree(reinterpret_cast<unsigned long long>(ptr)), "cuMemFree");
}

void copy_to_device(Vendor v, void* dst, const void* src, size_t bytes, void* stream) {
  if (v == Vendor::amd) check(v, hip().hipMemcpyAsync(dst, src, bytes, 1 /* hipMemcpyHostToDevice */, stream), "hipMemcpyAsync");
  else check(v, cuda().cuMemcpyHtoDAsync(reinterpret_cast<unsigned long long>(dst), src, bytes, stream), "cuMemcpyHtoDAsync");
}

void copy_to_host(Vendor v, void* dst, const void* src, size_t bytes, void* stream) {
  if (v == Vendor::amd) check(v, hip().hipMemcpyAsync(dst, src, bytes, 2 /* hipMemcpyDeviceToHost */, stream), "hipMemcpyAsync");
  else check(v, cuda().cuMemcpyDtoHAsync(dst, reinterpret_cast<unsigned long long>(src), bytes, stream), "cuMemcpyDtoHAsync");
}

void stream_sync(Vendor v, void* stream) {
  if (v == Vendor::amd) check(v, hip().hipStreamSynchronize(stream), "hipStreamSynchronize");
  else check(v, cuda().cuStreamSynchronize(stream), "cuStreamSynchronize");
}

bool has_scratch(Vendor v) {
  return v == Vendor::nvidia ? cuda().cuMemAllocAsync && cuda().cuMemFreeAsync
                             : hip().hipMallocAsync && hip().hipFreeAsync;
}

void* scratch_alloc(Vendor v, int device, size_t bytes, void* stream) {
  if (v == Vendor::amd) {
    void* p = nullptr;
    check(v, hip().hipMallocAsync(&p, bytes, stream), "hipMallocAsync");
    return p;
  }
  unsigned long long ptr = 0;
  // The pool is made and used outside capture only (a capture may forbid calls that are not
  // stream work); a runtime that cannot say takes the capture-safe path.
  void* pool = stream_capturing(v, stream).value_or(true) ? nullptr : scratch_pool(device);
  if (pool) check(v, cuda().cuMemAllocFromPoolAsync(&ptr, bytes, pool, stream), "cuMemAllocFromPoolAsync");
  else check(v, cuda().cuMemAllocAsync(&ptr, bytes, stream), "cuMemAllocAsync");
  return reinterpret_cast<void*>(ptr);
}

void scratch_free(Vendor v, void* ptr, void* stream) {
  if (v == Vendor::amd) check(v, hip().hipFreeAsync(ptr, stream), "hipFreeAsync");
  else check(v, cuda().cuMemFreeAsync(reinterpret_cast<unsigned long long>(ptr), stream), "cuMemFreeAsync");
}

}  // namespace aiter_compat::gpu
