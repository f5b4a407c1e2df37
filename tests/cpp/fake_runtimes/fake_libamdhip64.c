/* A stand-in libamdhip64.so for testing the HIP side of the runtime binding, the GPU probe and
 * the launcher without an AMD GPU. One device, an MI300X (gfx942). Launches are recorded. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))

#include "fake_launch.h"

static fake_launch launches[256];
static int launch_count, module_loads, allocations, frees, current_device, capturing;
static fake_kernel_hook kernel_hook;

EXPORT int fake_hip_launch_count(void) { return launch_count; }
EXPORT const fake_launch* fake_hip_launch(int i) { return &launches[i]; }
EXPORT int fake_hip_module_loads(void) { return module_loads; }
EXPORT int fake_hip_allocations(void) { return allocations; }
EXPORT int fake_hip_frees(void) { return frees; }
EXPORT void fake_hip_reset(void) { launch_count = allocations = frees = 0; }
EXPORT void fake_hip_set_kernel_hook(fake_kernel_hook hook) { kernel_hook = hook; }
EXPORT void fake_hip_set_capturing(int on) { capturing = on; }
/* The device's arch (gcnArchName), gfx942 unless a test names another before the first query;
 * the code object image the last module load was given. */
static char arch_name[64] = "gfx942:sramecc+:xnack-";
static const void* last_image;
EXPORT void fake_hip_set_arch(const char* arch) { snprintf(arch_name, sizeof arch_name, "%s", arch); }
EXPORT const void* fake_hip_last_image(void) { return last_image; }

/* A test of the caller's per-thread state: with a rendezvous of n, each hipGetDeviceProperties
 * call writes a name of its own ("... (call k)"), then waits (up to 5 s) until n calls have
 * written theirs, so that calls of n threads overlap: a properties buffer shared by the threads
 * would hold the last call's name for all of them. */
static pthread_mutex_t rendezvous_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rendezvous_cond = PTHREAD_COND_INITIALIZER;
static int rendezvous_of, rendezvous_calls;
EXPORT void fake_hip_set_properties_rendezvous(int n) {
  pthread_mutex_lock(&rendezvous_mutex);
  rendezvous_of = n, rendezvous_calls = 0;
  pthread_mutex_unlock(&rendezvous_mutex);
}

EXPORT int hipGetDeviceCount(int* n) { *n = 1; return 0; }
EXPORT int hipGetDevice(int* d) { *d = current_device; return 0; }
EXPORT int hipSetDevice(int d) { if (d != 0) return 101; current_device = d; return 0; }
/* The R0600 layout: name first, gcnArchName far into the struct; the probe finds it by content. */
EXPORT int hipGetDevicePropertiesR0600(void* props, int d) {
  if (d != 0) return 101;
  strcpy((char*)props, "AMD Instinct MI300X");
  strcpy((char*)props + 1160, arch_name);
  pthread_mutex_lock(&rendezvous_mutex);
  if (rendezvous_of > 1) {
    snprintf((char*)props, 64, "AMD Instinct MI300X (call %d)", ++rendezvous_calls);
    pthread_cond_broadcast(&rendezvous_cond);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 5;
    while (rendezvous_calls < rendezvous_of)
      if (pthread_cond_timedwait(&rendezvous_cond, &rendezvous_mutex, &until) != 0) break;
  }
  pthread_mutex_unlock(&rendezvous_mutex);
  return 0;
}
EXPORT int hipRuntimeGetVersion(int* v) { *v = 60443484; return 0; }
EXPORT int hipDeviceGetAttribute(int* v, int attr, int d) {
  if (d != 0) return 101;
  *v = attr == 63 ? 304 : 0; /* hipDeviceAttributeMultiprocessorCount: MI300X's 304 CUs */
  return 0;
}
EXPORT const char* hipGetErrorName(int rc) { return rc ? "hipErrorFake" : "hipSuccess"; }
EXPORT const char* hipGetErrorString(int rc) { return rc ? "fake HIP error" : "no error"; }
EXPORT int hipModuleLoadData(void** module, const void* image) {
  last_image = image;
  module_loads++;
  *module = &module_loads;
  return 0;
}
EXPORT int hipModuleGetFunction(void** fn, void* module, const char* name) {
  (void)module;
  *fn = strdup(name);
  return 0;
}
EXPORT int hipModuleLaunchKernel(void* fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                 unsigned bz, unsigned shmem, void* stream, void** params, void** extra) {
  (void)shmem, (void)stream, (void)extra;
  fake_record_launch(launches, &launch_count, 256, fn, gx, gy, gz, bx, by, bz, current_device);
  if (kernel_hook) kernel_hook((const char*)fn, params[0]);
  return 0;
}
EXPORT int hipMalloc(void** ptr, size_t bytes) { *ptr = malloc(bytes); return 0; }
EXPORT int hipFree(void* ptr) { free(ptr); return 0; }
EXPORT int hipMemcpyAsync(void* dst, const void* src, size_t bytes, int kind, void* stream) {
  (void)stream;
  if (kind != 1 && kind != 2) return 1; /* the self-test copies host to device and back only */
  memcpy(dst, src, bytes);
  return 0;
}
EXPORT int hipStreamSynchronize(void* stream) { (void)stream; return 0; }
EXPORT int hipStreamIsCapturing(void* stream, int* status) {
  (void)stream;
  *status = capturing;
  return 0;
}
EXPORT int hipMallocAsync(void** ptr, size_t bytes, void* stream) {
  (void)stream;
  *ptr = malloc(bytes);
  allocations++;
  return 0;
}
EXPORT int hipFreeAsync(void* ptr, void* stream) {
  (void)stream;
  free(ptr);
  frees++;
  return 0;
}
