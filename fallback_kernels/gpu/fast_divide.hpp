// Division by the call's runtime divisors (query heads per KV head, splits) as a multiply and a
// shift, with the pairs the launcher computed (kernel_params.h, ac_set_divisors): a 32-bit
// division by a runtime value costs ~20 dependent instructions, and a decode block with a short
// key range (a sliding window) spends its time on the path before its first load. Also built
// for the host model (AC_HOST_MODEL: tests/cpp/kernel_blocks_test.cpp checks it).
#pragma once

#include "kernel_params.h"
#include "portability.hpp"

namespace {

// n / d for 0 <= n < 2^31, given d's (mul, shift) from ac_divisor_of.
AC_INLINE AC_DEVICE int32_t ac_fast_div(int32_t n, uint32_t mul, int32_t shift) {
  const uint32_t u = static_cast<uint32_t>(n);
  const uint32_t hi = static_cast<uint32_t>((static_cast<uint64_t>(u) * mul) >> 32);
  return static_cast<int32_t>((hi + u) >> shift);
}

// Query row `flat` of a KV head's group: its token (flat / group) and head in the group. kPlain:
// by a plain division instead, for the kernels whose shape asks for it (ac_tiled_shape::
// plain_row_divide: there the multiply-shift's register pair tipped the kernel into spilling).
template <bool kPlain = false>
AC_INLINE AC_DEVICE int32_t ac_row_token(const ac_attention_params& p, int32_t flat) {
  if constexpr (kPlain) return flat / p.group;
  else return ac_fast_div(flat, p.group_mul, p.group_shift);
}
struct RowOfGroup {
  int32_t token, head;  // within the sequence's queries, within the KV head's group
};
template <bool kPlain = false>
AC_INLINE AC_DEVICE RowOfGroup ac_row_of(const ac_attention_params& p, int32_t flat) {
  const int32_t t = ac_row_token<kPlain>(p, flat);
  return {t, flat - t * p.group};
}
template <bool kPlain = false>
AC_INLINE AC_DEVICE int32_t ac_row_head(const ac_attention_params& p, int32_t flat) { return ac_row_of<kPlain>(p, flat).head; }
// Grid z = sequence x splits + split: the sequence.
AC_INLINE AC_DEVICE int32_t ac_split_sequence(const ac_attention_params& p, int32_t z) {
  return ac_fast_div(z, p.splits_mul, p.splits_shift);
}

}  // namespace
