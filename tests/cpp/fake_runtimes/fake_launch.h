/* What the stand-in runtimes record of each kernel launch (C, shared with the C++ tests). */
#ifndef AITER_COMPAT_FAKE_LAUNCH_H
#define AITER_COMPAT_FAKE_LAUNCH_H

typedef struct {
  char name[64];
  unsigned grid[3], block[3];
  int device;
  int programmatic; /* launched as a programmatic dependent (cuLaunchKernelEx's attribute 6) */
} fake_launch;

#include <string.h>

/* A test may run each launched kernel on the host (tests/cpp/kernel_emulator.hpp): the hook gets
 * the kernel's name and its one argument (the parameter struct; memory is host memory). */
typedef void (*fake_kernel_hook)(const char* name, const void* params);

/* Appends one launch to a fixed log (drops past its end). */
static inline void fake_record_launch(fake_launch* log, int* count, int capacity, const void* fn, unsigned gx,
                                      unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, int device) {
  if (*count >= capacity) return;
  fake_launch* l = &log[(*count)++];
  strncpy(l->name, (const char*)fn, sizeof l->name - 1);
  l->grid[0] = gx, l->grid[1] = gy, l->grid[2] = gz;
  l->block[0] = bx, l->block[1] = by, l->block[2] = bz;
  l->device = device;
  l->programmatic = 0;
}

#endif
