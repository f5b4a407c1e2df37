#include "code_objects.hpp"

namespace aiter_compat {

// ac_tiled_{rows,keys}[_paged]_{bf16,f16}_d{64,128}
static std::vector<std::string> tiled_kernel_names() {
  std::vector<std::string> names;
  for (const char* shape : {"rows", "keys"})
    for (const char* layout : {"", "_paged"})
      for (const char* type : {"bf16", "f16"})
        for (const char* dim : {"64", "128"})
          names.push_back(std::string("ac_tiled_") + shape + layout + "_" + type + "_d" + dim);
  return names;
}

// varlen and paged attention share one kernel (the KV layout is a parameter). The tiled kernels
// need the matrix-instruction layer (matrix_ops.hpp), written for NVIDIA so far.
const std::vector<KernelFamily>& kernel_families() {
  static const std::vector<KernelFamily> families = {
      {"varlen_fwd", {"ac_attention_f32", "ac_attention_f16", "ac_attention_bf16"}},
      {"paged_fwd", {"ac_attention_f32", "ac_attention_f16", "ac_attention_bf16"}},
      {"paged_decode", {"ac_decode_bf16_d64", "ac_decode_bf16_d128", "ac_decode_f16_d64", "ac_decode_f16_d128"}},
      {"split_merge", {"ac_merge_f32", "ac_merge_f16", "ac_merge_bf16"}},
      {"merge_states", {"ac_merge_states_f32", "ac_merge_states_f16", "ac_merge_states_bf16"}},
      {"tiled_fwd", tiled_kernel_names(), "sm_"},
  };
  return families;
}

}  // namespace aiter_compat
