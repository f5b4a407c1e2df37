#pragma once
// The GPU code objects built into this library (one per arch) and the kernels each must hold.
#include <cstddef>
#include <string>
#include <vector>

namespace aiter_compat {

struct CodeObject {
  const char* arch;  // gfx942, sm_90, ...
  const unsigned char* data;
  std::size_t size;
};

const std::vector<CodeObject>& code_objects();

struct KernelFamily {
  std::string name;                    // what the probe reports: varlen_fwd, paged_fwd, split_merge
  std::vector<std::string> functions;  // entry points in each code object it is built for
  std::string arch_prefix;             // built only for archs starting with this ("" = every arch)
  bool built_for(const std::string& arch) const { return arch.rfind(arch_prefix, 0) == 0; }
};
const std::vector<KernelFamily>& kernel_families();

// The tiled kernels' shapes (kernel_params.h): rows (prefill, extend), keys (decode), wgmma (rows
// on Hopper's warpgroup MMA, sm_90 only).
enum class TiledShape { rows = 0, keys = 1, wgmma = 2 };
// ac_tiled_{rows,keys,wgmma}[_paged]_{type}_d{head_dim}: the one spelling of their names.
std::string tiled_kernel_name(TiledShape shape, bool paged, const char* type, int head_dim);

}  // namespace aiter_compat
