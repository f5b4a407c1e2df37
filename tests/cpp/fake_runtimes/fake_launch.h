/* What the stand-in runtimes record of each kernel launch (C, shared with the C++ tests). */
#ifndef AITER_COMPAT_FAKE_LAUNCH_H
#define AITER_COMPAT_FAKE_LAUNCH_H

typedef struct {
  char name[64];
  unsigned grid[3], block[3];
  int device;
} fake_launch;

#endif
