#include "code_objects.hpp"

namespace aiter_compat {

std::string tiled_kernel_name(bool keys_shape, bool paged, const char* type, int head_dim) {
  return std::string("ac_tiled_") + (keys_shape ? "keys" : "rows") + (paged ? "_paged_" : "_") + type + "_d" +
         std::to_string(head_dim);
}

static std::vector<std::string> tiled_kernel_names() {
  std::vector<std::string> names;
  for (bool keys : {false, true})
    for (bool paged : {false, true})
      for (const char* type : {"bf16", "f16"})
        for (int dim : {64, 128}) names.push_back(tiled_kernel_name(keys, paged, type, dim));
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
