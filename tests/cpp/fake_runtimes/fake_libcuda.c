/* A stand-in libcuda.so.1 for testing the runtime binding, the GPU probe and the launcher on a
 * machine without a GPU. Device 0 reports compute capability 9.0, device 1 reports 8.0. Module
 * loads and kernel launches are recorded, not run; memory is host memory. */
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

#include "fake_launch.h"

static fake_launch launches[256];
static int launch_count, module_loads[4], allocations, pool_allocations, frees, current_device = -1;
static int capturing, pools_made, pool_threshold_set, device_allocations, syncs, driver_version = 13000;
static fake_kernel_hook kernel_hook;
static int contexts[4] = {0, 1, 2, 3};

EXPORT int fake_cuda_launch_count(void) { return launch_count; }
EXPORT const fake_launch* fake_cuda_launch(int i) { return &launches[i]; }
EXPORT int fake_cuda_module_loads(int device) { return module_loads[device]; }
EXPORT int fake_cuda_allocations(void) { return allocations; }
EXPORT int fake_cuda_frees(void) { return frees; }
EXPORT int fake_cuda_pool_allocations(void) { return pool_allocations; }
EXPORT int fake_cuda_pools(void) { return pools_made; }
EXPORT int fake_cuda_pool_keeps_memory(void) { return pool_threshold_set; }
EXPORT void fake_cuda_set_capturing(int on) { capturing = on; }
EXPORT void fake_cuda_reset(void) {
  launch_count = allocations = pool_allocations = frees = 0;
  driver_version = 13000;
}
EXPORT void fake_cuda_set_kernel_hook(fake_kernel_hook hook) { kernel_hook = hook; }
EXPORT int fake_cuda_device_allocations(void) { return device_allocations; }
EXPORT int fake_cuda_syncs(void) { return syncs; }

EXPORT int cuInit(unsigned flags) { (void)flags; return 0; }
EXPORT void fake_cuda_set_driver_version(int v) { driver_version = v; }
EXPORT int cuDriverGetVersion(int* v) { *v = driver_version; return 0; }
EXPORT int cuDeviceGetCount(int* n) { *n = 2; return 0; }
EXPORT int cuDeviceGet(int* dev, int ordinal) {
  if (ordinal < 0 || ordinal > 1) return 101; /* CUDA_ERROR_INVALID_DEVICE */
  *dev = ordinal;
  return 0;
}
EXPORT int cuDeviceGetName(char* name, int len, int dev) {
  strncpy(name, dev == 0 ? "Fake H200" : "Fake A100", (size_t)len);
  return 0;
}
EXPORT int cuDeviceGetAttribute(int* v, int attr, int dev) {
  if (attr == 75) *v = dev == 0 ? 9 : 8;
  else if (attr == 76) *v = 0;
  else if (attr == 16) *v = 132;
  else *v = 0;
  return 0;
}
EXPORT int cuDevicePrimaryCtxRetain(void** ctx, int dev) { *ctx = &contexts[dev]; return 0; }
EXPORT int cuCtxGetCurrent(void** ctx) { *ctx = current_device < 0 ? NULL : &contexts[current_device]; return 0; }
EXPORT int cuCtxSetCurrent(void* ctx) { current_device = ctx ? *(int*)ctx : -1; return 0; }
EXPORT int cuModuleLoadData(void** module, const void* image) {
  (void)image;
  if (current_device < 0) return 201; /* CUDA_ERROR_INVALID_CONTEXT */
  module_loads[current_device]++;
  *module = &contexts[current_device];
  return 0;
}
EXPORT int cuModuleGetFunction(void** fn, void* module, const char* name) {
  (void)module;
  *fn = strdup(name);
  return 0;
}
EXPORT int cuFuncSetAttribute(void* fn, int attr, int value) {
  (void)fn;
  return attr == 8 && value > 227 * 1024 ? 1 : 0; /* dynamic shared memory past the H200's limit */
}
EXPORT int cuLaunchKernel(void* fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                          unsigned shmem, void* stream, void** params, void** extra) {
  (void)shmem, (void)stream, (void)extra;
  fake_record_launch(launches, &launch_count, 256, fn, gx, gy, gz, bx, by, bz, current_device);
  if (kernel_hook) kernel_hook((const char*)fn, params[0]);
  return 0;
}
/* CUlaunchConfig and CUlaunchAttribute as cuda.h lays them out (64-bit). */
typedef struct {
  int id;
  char pad[4];
  union {
    char bytes[64];
    int value;
  } value;
} fake_launch_attribute;
typedef struct {
  unsigned grid[3], block[3], shared_bytes;
  void* stream;
  fake_launch_attribute* attrs;
  unsigned num_attrs;
} fake_launch_config;
EXPORT int cuLaunchKernelEx(const fake_launch_config* c, void* fn, void** params, void** extra) {
  int programmatic = 0;
  for (unsigned i = 0; i < c->num_attrs; ++i)
    if (c->attrs[i].id == 6) programmatic = c->attrs[i].value.value != 0;
  const int before = launch_count;
  int rc = cuLaunchKernel(fn, c->grid[0], c->grid[1], c->grid[2], c->block[0], c->block[1], c->block[2],
                          c->shared_bytes, c->stream, params, extra);
  if (rc == 0 && launch_count > before) launches[before].programmatic = programmatic;
  return rc;
}
EXPORT int cuMemAlloc_v2(unsigned long long* ptr, size_t bytes) {
  if (current_device < 0) return 201; /* CUDA_ERROR_INVALID_CONTEXT */
  *ptr = (unsigned long long)malloc(bytes);
  device_allocations++;
  return 0;
}
EXPORT int cuMemFree_v2(unsigned long long ptr) { free((void*)ptr); return 0; }
EXPORT int cuMemcpyHtoDAsync_v2(unsigned long long dst, const void* src, size_t bytes, void* stream) {
  (void)stream;
  memcpy((void*)dst, src, bytes);
  return 0;
}
EXPORT int cuMemcpyDtoHAsync_v2(void* dst, unsigned long long src, size_t bytes, void* stream) {
  (void)stream;
  memcpy(dst, (const void*)src, bytes);
  return 0;
}
EXPORT int cuStreamSynchronize(void* stream) { (void)stream; syncs++; return 0; }
EXPORT int cuMemAllocAsync(unsigned long long* ptr, size_t bytes, void* stream) {
  (void)stream;
  *ptr = (unsigned long long)malloc(bytes);
  allocations++;
  return 0;
}
EXPORT int cuMemFreeAsync(unsigned long long ptr, void* stream) {
  (void)stream;
  free((void*)ptr);
  frees++;
  return 0;
}
EXPORT int cuMemPoolCreate(void** pool, const void* props) {
  /* CUmemPoolProps: pinned (1), no handles (0), on a device (1) */
  const int* p = (const int*)props;
  if (p[0] != 1 || p[1] != 0 || p[2] != 1 || p[3] < 0 || p[3] > 1) return 1;
  *pool = &contexts[p[3]];
  pools_made++;
  return 0;
}
EXPORT int cuMemPoolSetAttribute(void* pool, int attr, void* value) {
  (void)pool;
  if (attr == 4 && *(unsigned long long*)value == ~0ull) pool_threshold_set = 1;
  return 0;
}
EXPORT int cuMemAllocFromPoolAsync(unsigned long long* ptr, size_t bytes, void* pool, void* stream) {
  (void)pool, (void)stream;
  *ptr = (unsigned long long)malloc(bytes);
  pool_allocations++;
  return 0;
}
EXPORT int cuStreamIsCapturing(void* stream, int* status) {
  (void)stream;
  *status = capturing;
  return 0;
}
EXPORT int cuGetErrorString(int rc, const char** text) { *text = rc ? "fake CUDA error" : "no error"; return 0; }
EXPORT int cuGetErrorName(int rc, const char** text) { *text = rc ? "CUDA_ERROR_FAKE" : "CUDA_SUCCESS"; return 0; }
