#include "code_objects.hpp"

namespace aiter_compat {

std::string tiled_kernel_name(TiledShape shape, bool paged, const char* type, int head_dim) {
  static const char* const kShapes[] = {"rows", "keys", "wgmma"};
  return std::string("ac_tiled_") + kShapes[static_cast<int>(shape)] + (paged ? "_paged_" : "_") + type + "_d" +
         std::to_string(head_dim);
}

static std::vector<std::string> tiled_kernel_names(std::initializer_list<TiledShape> shapes) {
  std::vector<std::string> names;
  for (TiledShape shape : shapes)
    for (bool paged : {false, true})
      for (const char* type : {"bf16", "f16"})
        for (int dim : {64, 128}) names.push_back(tiled_kernel_name(shape, paged, type, dim));
  return names;
}

// varlen and paged attention share one kernel (the KV layout is a parameter). The tiled kernels
// need the matrix-instruction layer (matrix_ops.hpp), written for NVIDIA so far; the wgmma shape
// needs Hopper's warpgroup MMA (warpgroup_ops.hpp, built as sm_90a).
const std::vector<KernelFamily>& kernel_families() {
  static const std::vector<KernelFamily> families = {
      {"varlen_fwd", {"ac_attention_f32", "ac_attention_f16", "ac_attention_bf16"}},
      {"paged_fwd", {"ac_attention_f32", "ac_attention_f16", "ac_attention_bf16"}},
      {"paged_decode", {"ac_decode_bf16_d64", "ac_decode_bf16_d128", "ac_decode_f16_d64", "ac_decode_f16_d128"}},
      {"split_merge", {"ac_merge_f32", "ac_merge_f16", "ac_merge_bf16"}},
      {"merge_states", {"ac_merge_states_f32", "ac_merge_states_f16", "ac_merge_states_bf16"}},
      {"tiled_fwd", tiled_kernel_names({TiledShape::rows, TiledShape::keys}), "sm_"},
      {"tiled_fwd_wgmma", tiled_kernel_names({TiledShape::wgmma}), "sm_90"},
  };
  return families;
}

}  // namespace aiter_compat
