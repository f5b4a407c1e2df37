#pragma once
// Checks of the attention arguments. Metadata (dtypes, shapes, strides, devices, overlaps) is
// always checked; contents (cu_seqlens monotonic, block-table entries in range, sinks finite)
// only when read_contents is true and the tensors are host-readable, which the fallback routes
// require before they touch memory. Each failure throws ArgumentError naming the argument.
#include "aiter_compat/shim/attention_args.hpp"

namespace aiter_compat {

void validate_varlen(const VarlenArgs& a, bool read_contents);
void validate_paged(const PagedArgs& a, bool read_contents);
void validate_merge(const MergeArgs& a, bool read_contents);
// pa_decode_bf16_asm's schedule and split buffers, once out and lse are known (host contents:
// every work_info row in range).
void validate_split_rows(const PagedArgs& a, bool read_contents);

}  // namespace aiter_compat
