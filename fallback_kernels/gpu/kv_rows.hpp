// Where each key of a sequence is, for every kernel on both vendors: the element offsets of its K
// and V rows (KV head 0, channel 0), and whether they may be read. One implementation per cache
// layout the project takes:
//   contiguous   varlen and batch keys: token j at (k_start + j) k_tok (vLLM's packed K/V views
//                too: their token and head strides are free);
//   pages        NHD pages [blocks, block_size, Hk, D] of any block size (the 3-D token pool is
//                size 1): block-table entry j / block_size, slot j % block_size;
//   split_pages  AITer's 5-D caches and pa_decode_gluon's value cache: the same pages, the slot
//                dimension split in x-wide chunks (kernel_params.h, ac_split).
// A sequence's page table is a row of block_table or its CSR run of kv_page_indices: entries from
// table_row, bt_col apart (paged_keys reads where they start and how many keys there are). A
// loader that fetches a tile ahead reads the tile's pages first (page()) and places its rows when
// they are needed (at()). An entry outside the cache is not ok: nothing is read for its keys,
// which the kernels mask. Model: FlashAttention's hopper/paged_kv.h.
// Also built for the host model (AC_HOST_MODEL: tests/cpp/kernel_blocks_test.cpp).
#pragma once

#include "kernel_params.h"
#include "portability.hpp"

namespace {

// a * b for 32-bit unsigned a and b, exactly: one wide multiply(-add) on both vendors.
AC_INLINE AC_DEVICE uint64_t ac_wide(uint32_t a, uint32_t b) { return static_cast<uint64_t>(a) * b; }
// An index over a dimension split in two (kernel_params.h: the 5-D caches' x-wide chunks).
AC_INLINE AC_DEVICE int64_t ac_split(int64_t i, int32_t x, int64_t outer, int64_t inner) { return i / x * outer + i % x * inner; }

AC_DEVICE int32_t clamp_i32(int64_t v, int64_t lo, int64_t hi) { return static_cast<int32_t>(v < lo ? lo : v > hi ? hi : v); }

// The one reading of a paged sequence's page table, for every kernel: where its entries start
// and how many keys it has, clamped so that every page of its keys is an entry of the table.
struct PagedKeys {
  int64_t table_row;
  int32_t k_len;
};
AC_DEVICE PagedKeys paged_keys(const ac_attention_params& p, int32_t b) {
  if (!p.kv_indptr)
    return {static_cast<int64_t>(b) * p.bt_row,
            clamp_i32(p.seqused_k[b], 0, static_cast<int64_t>(p.max_blocks) * p.block_size)};
  const int32_t start = clamp_i32(p.kv_indptr[b], 0, p.num_page_indices);
  const int32_t pages = clamp_i32(p.kv_indptr[b + 1], start, p.num_page_indices) - start;
  int64_t keys = static_cast<int64_t>(pages) * p.block_size;
  if (p.seqused_k)  // pa_decode_bf16_asm's context_lens: keys in all, within the pages
    keys = clamp_i32(p.seqused_k[b], 0, keys);
  else if (p.kv_last_page_lens && pages > 0)
    keys -= p.block_size - clamp_i32(p.kv_last_page_lens[b], 0, p.block_size);
  // kv_page_indices' entries are bt_col apart: the run starts at entry `start`, not at element
  // `start` (a strided kv_page_indices read the wrong entries before; the CPU reference and the
  // host checks always scaled it).
  return {static_cast<int64_t>(start) * p.bt_col, static_cast<int32_t>(keys)};
}

enum class KvLayout : uint8_t { contiguous, pages, split_pages };

struct KvBytes {
  uint64_t k, v;  // byte offsets of the K and V rows (KvRows::bytes32)
};

struct KvRow {
  int64_t k, v;  // element offsets of the K and V rows; 0 where not ok
  bool ok;
};

// log2 of the block size when it is a power of two (the page of key j is then j >> shift), else -1.
AC_INLINE AC_DEVICE int32_t page_shift_of(const ac_attention_params& p) {
  return p.block_size > 0 && (p.block_size & (p.block_size - 1)) == 0 ? ac_ffs(p.block_size) - 1 : -1;
}

template <KvLayout L>
struct KvRows {
  const ac_attention_params& p;
  int64_t table_row;   // pages: the sequence's first page-table entry
  int32_t k_start;     // contiguous: the sequence's first key token
  int32_t page_shift;  // page_shift_of(p)

  // The page-table entry holding key j (read ahead of the rows by the loaders that prefetch).
  AC_INLINE AC_MEMBER int32_t page(int32_t j) const {
    if constexpr (L == KvLayout::contiguous) return 0;
    else return p.block_table[table_row + (page_shift >= 0 ? j >> page_shift : j / p.block_size) * p.bt_col];
  }
  // Whether a page-table entry is inside the cache (its keys may be read).
  AC_INLINE AC_MEMBER bool valid(int32_t block) const {
    if constexpr (L == KvLayout::contiguous) return true;
    else return block >= 0 && block < p.num_blocks;
  }
  // Key j's K and V rows, on page `block` (its entry, already read), for callers that check
  // valid() themselves and zero the offsets of keys they skip (the AMD loaders: see decode_block).
  AC_INLINE AC_MEMBER int64_t k_row(int32_t j, int32_t block) const {
    if constexpr (L == KvLayout::contiguous) return static_cast<int64_t>(k_start + j) * p.k_tok;
    else if constexpr (L == KvLayout::split_pages) return block * p.k_tok + ac_split(slot(j), p.k_slot_x, p.k_slot, p.k_slot_in);
    else return static_cast<int64_t>(block) * p.k_tok + slot(j) * p.k_slot;
  }
  AC_INLINE AC_MEMBER int64_t v_row(int32_t j, int32_t block) const {
    if constexpr (L == KvLayout::contiguous) return static_cast<int64_t>(k_start + j) * p.v_tok;
    else if constexpr (L == KvLayout::split_pages) return block * p.v_tok + ac_split(slot(j), p.v_slot_x, p.v_slot, p.v_slot_in);
    else return static_cast<int64_t>(block) * p.v_tok + slot(j) * p.v_slot;
  }
  // Both, and whether they may be read.
  AC_INLINE AC_MEMBER KvRow at(int32_t j, int32_t block) const {
    const bool ok = valid(block);
    return {ok ? k_row(j, block) : 0, ok ? v_row(j, block) : 0, ok};
  }
  AC_INLINE AC_MEMBER KvRow at(int32_t j) const { return at(j, page(j)); }

  // The tiled kernels' forms of page() and of the row offsets, these in bytes (kElem bytes an
  // element): the launcher gives those kernels only calls whose strides in bytes fit 32 bits
  // (kernel_table.cpp, strides_fit_32_bits), so that an entry or a row is one 32 x 32 -> 64-bit
  // multiply-add from a base. The forms above take 64-bit products, their sign extensions and a
  // shift to bytes, recomputed on every tile (the decode loop's warp instructions per tile: 411
  // to 331 in bf16, 480 to 422 in fp8 on an H100; kernel-notes.md, version 17). Only a valid()
  // entry's rows are asked for (entries are then non-negative).
  AC_INLINE AC_MEMBER int32_t page32(int32_t j) const {
    if constexpr (L == KvLayout::contiguous) return 0;
    else {
      const int32_t n = page_shift >= 0 ? j >> page_shift : j / p.block_size;
      const char* table = reinterpret_cast<const char*>(p.block_table + table_row);
      return *reinterpret_cast<const int32_t*>(table + ac_wide(static_cast<uint32_t>(n), static_cast<uint32_t>(p.bt_col) * 4u));
    }
  }
  // Key j's K and V row offsets in bytes on page `block` (a valid() entry: non-negative).
  template <int kElem> AC_INLINE AC_MEMBER KvBytes bytes32(int32_t j, int32_t block) const {
    static_assert(L != KvLayout::split_pages, "the split pages take the element forms (the generic kernel)");
    const uint32_t k_tok = static_cast<uint32_t>(p.k_tok) * kElem, v_tok = static_cast<uint32_t>(p.v_tok) * kElem;
    if constexpr (L == KvLayout::contiguous) {
      const uint32_t t = static_cast<uint32_t>(k_start + j);
      return {ac_wide(t, k_tok), ac_wide(t, v_tok)};
    } else {
      const uint32_t b = static_cast<uint32_t>(block), s = static_cast<uint32_t>(slot(j));
      return {ac_wide(b, k_tok) + s * (static_cast<uint32_t>(p.k_slot) * kElem), ac_wide(b, v_tok) + s * (static_cast<uint32_t>(p.v_slot) * kElem)};
    }
  }

  AC_INLINE AC_MEMBER int32_t slot(int32_t j) const { return page_shift >= 0 ? j & (p.block_size - 1) : j % p.block_size; }
};

}  // namespace
