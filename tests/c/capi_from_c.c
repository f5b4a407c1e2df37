/* The header compiles as C, and the library links and answers from a C program. */
#include <stdio.h>
#include <string.h>

#include "aiter_compat.h"

int main(void) {
  aiter_compat_varlen_args args;
  memset(&args, 0, sizeof args);
  if (aiter_compat_abi_version() != AITER_COMPAT_ABI_VERSION) return 1;
  if (aiter_compat_varlen_attention(&args, NULL) != AITER_COMPAT_INVALID_ARGUMENT) return 2;
  if (strcmp(aiter_compat_last_error(), "q: found NULL, needed a tensor") != 0) return 3;
  puts("C API reachable from C: ok");
  return 0;
}
