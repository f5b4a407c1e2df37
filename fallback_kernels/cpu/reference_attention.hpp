#pragma once
// CPU reference kernels for every fallback operation: the oracle the GPU kernels are checked
// against, so they are written to be obviously right rather than fast. Scores, the softmax and
// the weighted sum are computed in double; the only rounding beyond double's is the final store
// to the output dtype, so |out - exact| <= half an ulp of the output type plus ~1e-12 relative.
// The arguments must have passed validate_varlen / validate_paged with read_contents.
#include "aiter_compat/shim/attention_args.hpp"

namespace aiter_compat::cpu {

void varlen_attention(const VarlenArgs& args);  // also flash_attn_func's batch layout
void paged_attention(const PagedArgs& args);
// pa_decode_bf16_asm's split rows from paged_attention's out and lse (kernel_params.h,
// ac_split_rows_params): a sequence's first piece as (out, lse), its others as (0, -inf).
void split_rows(const PagedArgs& args);
void merge_states(const MergeArgs& args);

}  // namespace aiter_compat::cpu
